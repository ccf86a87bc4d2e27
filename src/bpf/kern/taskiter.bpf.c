/* SPDX-License-Identifier: GPL-2.0-or-later */
/* taskiter.bpf.c: the task source (issue #19). A BPF task iterator: reading its file runs
 * the program once for every task of the machine, and each run writes one record
 * (include/bpf/taskiter.h) with what /proc/PID/stat, the owner of /proc/PID,
 * /proc/PID/io, ioprio_get and a taskstats reply would each have said. Built by
 * mk/bpf.mk into its own small object and skeleton (it verifies in milliseconds, apart
 * from the lens); loaded by src/source/taskiter.c.
 *
 * No vmlinux.h, as in lens.bpf.h: the few kernel structures read are declared below
 * with preserve_access_index, and libbpf relocates each field against the running
 * kernel's BTF (CO-RE). The iterator hands the program a trusted task pointer; its fields
 * are read with plain loads (a fault reads 0) through an untrusted copy of it where the
 * kernel has bpf_rdonly_cast (kern_types.h: UNTRUSTED, the verification's cost); pointers
 * that may be NULL (delays, io_context, signal->stats, a kernel thread's private data)
 * are tested first.
 *
 * Two programs, one body. tasks_dump, sleepable (iter.s: kernel 5.18 and later, with
 * bpf_copy_from_user_task), also sends a process's command line after its record the
 * first time this loaded object sees the process and again when the command line moved
 * (bpf/taskiter.h: Framing), so that user space reads no /proc/PID/cmdline for it. A
 * kernel without sleepable iterators or the helper refuses it; tasks_dump_plain (not
 * loaded unless the loader asks: "?") is the same records without command lines, as
 * before.
 */
#include "bpf/kern_types.h"

#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

#include "bpf/taskiter.h"

/* ---- The kernel structures read, only the fields used (CO-RE relocates them). ---- */
typedef struct {
    __u32 val;
} kuid_t;

struct cred {
    kuid_t euid;
} __attribute__((preserve_access_index));

struct sched_entity {
    __u64 sum_exec_runtime;
} __attribute__((preserve_access_index));

struct task_io_accounting {
    __u64 rchar, wchar, syscr, syscw, read_bytes, write_bytes, cancelled_write_bytes;
} __attribute__((preserve_access_index));

struct task_delay_info {
    __u64 blkio_delay;
    __u64 swapin_delay;
    __u32 blkio_count;
    __u32 swapin_count;
} __attribute__((preserve_access_index));

struct taskstats {
    __u64 blkio_count, blkio_delay_total;
    __u64 swapin_count, swapin_delay_total;
} __attribute__((preserve_access_index));

struct signal_struct {
    int nr_threads;
    struct task_io_accounting ioac;
    unsigned long long sum_sched_runtime;
    struct taskstats *stats;
} __attribute__((preserve_access_index));

struct io_context {
    unsigned short ioprio;
} __attribute__((preserve_access_index));

/* The argument and environment strings' range in the process's memory (the stack's top,
 * or wherever prctl PR_SET_MM moved them). */
struct mm_struct {
    unsigned long arg_start, arg_end, env_start, env_end;
} __attribute__((preserve_access_index));

struct task_struct {
    unsigned int __state;
    unsigned int flags;
    int static_prio;
    unsigned int policy;
    struct sched_entity se;
    int exit_state;
    int pid;
    int tgid;
    void *worker_private;
    __u64 start_boottime;
    const struct cred *real_cred;
    char comm[16];
    struct signal_struct *signal;
    struct io_context *io_context;
    struct task_io_accounting ioac;
    struct task_delay_info *delays;
    struct mm_struct *mm;
} __attribute__((preserve_access_index));

/* Before 5.14 the state was a volatile long named "state". */
struct task_struct___old {
    long state;
} __attribute__((preserve_access_index));

/* kernel/kthread.c: a kernel thread's private data (task->worker_private since 5.17) */
struct kthread {
    void *data;
    char *full_name;
} __attribute__((preserve_access_index));

struct worker_pool;
struct work_struct;

/* kernel/workqueue_internal.h */
struct worker {
    struct work_struct *current_work;
    struct worker_pool *pool;
    char desc[32];
} __attribute__((preserve_access_index));

/* The iterator's context, without CO-RE: its layout is the iterator's contract with its
 * programs (include/linux/bpf.h, kernel/bpf/task_iter.c: each pointer in 8 bytes,
 * unchanged since 5.8), and the verifier checks each access by offset. A relocated type
 * costs the load a search of the kernel's BTF, a scan of every type, whenever the
 * kernel's small cache of them (31 entries, keyed on the name's length and first two
 * letters) lost it; these two shared its slots with task_struct and task_io_accounting. */
struct seq_file;

struct bpf_iter_meta {
    struct seq_file *seq;
};

struct bpf_iter__task {
    struct bpf_iter_meta *meta;
    struct task_struct *task;
};

char LICENSE[] SEC("license") = "GPL";

/* One task's output: the record and the command line after it, written in one go. */
struct tasks_out {
    struct tasks_rec rec;
    char cmd[TASKS_CMDLINE_MAX];
};

/* The output is built here, not on the 512-byte stack. A sleepable run may sleep in
 * bpf_copy_from_user_task but not migrate (bpf_iter_run_prog disables migration), and
 * only this process's one reader runs this object, so the CPU's slot is not shared. */
struct {
    __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
    __uint(max_entries, 1);
    __type(key, __u32);
    __type(value, struct tasks_out);
} scratch SEC(".maps");

/* What the last command line sent for a process came from (or was found unsendable),
 * and when (at: bpf_ktime_get_ns): while the task's mm and argument range are these and
 * no boundary of its TASKS_CMD_RESEND_NS periods passed, nothing is sent again. Task
 * local storage goes with the task, and the whole map with this object (the process that
 * loaded it). */
struct cmd_sent {
    __u64 mm, arg_start, arg_end, at;
};

struct {
    __uint(type, BPF_MAP_TYPE_TASK_STORAGE);
    __uint(map_flags, BPF_F_NO_PREALLOC);
    __type(key, int);
    __type(value, struct cmd_sent);
} cmd_sent SEC(".maps");

_Static_assert(sizeof(struct tasks_rec) == TASKS_REC_SIZE, "tasks_rec layout");

/* Set by user space for one run (taskiter_read's idle_cmd_later: the run of a first
 * frame): a leader whose task never moved a byte to or from a disk has its command line
 * left to the next run (TASKS_REC_CMD_LATER), which sends it as to a process not seen
 * before. Reading a command line from another process's memory is most of a first run. */
__u32 cmd_idle_later;

static __always_inline bool io_idle(const struct tasks_rec *r)
{
    return (r->ioac[TASKS_IO_READ] | r->ioac[TASKS_IO_WRITE] | r->ioac[TASKS_IO_CANCELLED] |
            r->sig_ioac[TASKS_IO_READ] | r->sig_ioac[TASKS_IO_WRITE] | r->sig_ioac[TASKS_IO_CANCELLED]) == 0;
}

static __always_inline void copy_ioac(__u64 *dst, const struct task_io_accounting *a)
{
    dst[TASKS_IO_RCHAR] = a->rchar;
    dst[TASKS_IO_WCHAR] = a->wchar;
    dst[TASKS_IO_SYSCR] = a->syscr;
    dst[TASKS_IO_SYSCW] = a->syscw;
    dst[TASKS_IO_READ] = a->read_bytes;
    dst[TASKS_IO_WRITE] = a->write_bytes;
    dst[TASKS_IO_CANCELLED] = a->cancelled_write_bytes;
}

/* The name /proc/PID/stat shows (fs/proc/array.c: proc_task_name): a kernel thread's
 * full name when it has one longer than comm, and for a workqueue worker with a pool,
 * "+desc" (working now) or "-desc" (its last work) after it; else comm. A desc that
 * would reach past 64 bytes (a full name of 32 or more) is left out. */
static __always_inline void task_name(struct tasks_rec *r, struct task_struct *t)
{
    long len = bpf_probe_read_kernel_str(r->comm, sizeof(t->comm), t->comm);
    if (!(r->flags & PF_KTHREAD) || !bpf_core_field_exists(t->worker_private))
        return;
    struct kthread *k = t->worker_private;
    if (!k)
        return;
    if (bpf_core_field_exists(k->full_name)) {
        char *full = BPF_CORE_READ(k, full_name);
        if (full)
            len = bpf_probe_read_kernel_str(r->comm, sizeof(r->comm), full);
    }
    if (!(r->flags & PF_WQ_WORKER))
        return;
    struct worker *w = BPF_CORE_READ(k, data);
    if (!w || !BPF_CORE_READ(w, pool))
        return;
    char first = 0;
    bpf_probe_read_kernel(&first, 1, &w->desc[0]);
    long off = len - 1;              /* the name's length */
    if (!first || off < 0 || off > 31)
        return;
    r->comm[off] = BPF_CORE_READ(w, current_work) ? '+' : '-';
    bpf_probe_read_kernel_str(&r->comm[off + 1], 31, w->desc);
}

/* The fixed record of task t. */
static __always_inline void fill_rec(struct tasks_rec *r, struct task_struct *t)
{
    __builtin_memset(r, 0, sizeof(*r));
    r->tid = (__u32)t->pid;
    r->tgid = (__u32)t->tgid;
    r->start_boottime = t->start_boottime;
    const struct cred *cred = t->real_cred;
    r->euid = cred ? cred->euid.val : 0;
    r->static_prio = t->static_prio;
    r->policy = t->policy;
    if (bpf_core_field_exists(t->__state))
        r->state = t->__state;
    else
        r->state = (__u32)BPF_CORE_READ((struct task_struct___old *)t, state);
    r->exit_state = (__u32)t->exit_state;
    r->flags = t->flags;
    r->run_ns = t->se.sum_exec_runtime;
    task_name(r, t);
    /* block/ioprio.c: get_task_ioprio, the io_context's value, or IOPRIO_DEFAULT
     * (class none, data 0 since 5.19) for a task that never had one */
    struct io_context *ioc = t->io_context;
    r->ioprio = ioc ? ioc->ioprio : 0;
    if (bpf_core_field_exists(t->ioac)) {
        r->rflags |= TASKS_REC_IOAC;
        copy_ioac(r->ioac, &t->ioac);
    }
    /* CONFIG_TASK_DELAY_ACCT; each field tested, so that a kernel that renamed one
     * loads the rest (the missing figure reads 0 with the others) */
    if (bpf_core_field_exists(t->delays)) {
        struct task_delay_info *d = t->delays;
        if (d && bpf_core_field_exists(d->blkio_delay) && bpf_core_field_exists(d->blkio_count)) {
            r->rflags |= TASKS_REC_DELAYS;
            r->blkio_count = d->blkio_count;
            r->blkio_delay_ns = d->blkio_delay;
            if (bpf_core_field_exists(d->swapin_delay) && bpf_core_field_exists(d->swapin_count)) {
                r->swapin_count = d->swapin_count;
                r->swapin_delay_ns = d->swapin_delay;
            }
        }
    }
    struct signal_struct *sig = t->signal;
    if (sig) {
        r->nr_threads = sig->nr_threads;
        if (r->tid == r->tgid) {
            r->sig_run_ns = sig->sum_sched_runtime;
            if (bpf_core_field_exists(sig->ioac))
                copy_ioac(r->sig_ioac, &sig->ioac);
            if (bpf_core_field_exists(sig->stats)) {
                struct taskstats *st = sig->stats;
                if (st) {
                    r->rflags |= TASKS_REC_SIG_STATS;
                    r->sig_blkio_count = st->blkio_count;
                    r->sig_blkio_delay_ns = st->blkio_delay_total;
                    r->sig_swapin_count = st->swapin_count;
                    r->sig_swapin_delay_ns = st->swapin_delay_total;
                }
            }
        }
    }
    if (!t->mm)
        r->rflags |= TASKS_REC_NO_MM;
}

/* The bytes of t's command line into o->cmd, as fs/proc/base.c get_mm_cmdline reads
 * them (see bpf/taskiter.h): returns their number and sets TASKS_REC_CMDLINE (with
 * TASKS_REC_CMD_TITLE), or sets TASKS_REC_CMD_STALE and returns 0. Negative: not known
 * yet (an exec under way: env_end not set), nothing to say. */
static __always_inline long cmdline_of(struct tasks_out *o, struct task_struct *t, struct mm_struct *mm,
                                       __u64 as, __u64 ae)
{
    struct tasks_rec *r = &o->rec;
    __u64 es = mm->env_start, ee = mm->env_end;
    if (!ee)
        return -1;
    r->rflags |= TASKS_REC_CMDLINE;
    if (as >= ae)
        return 0;                    /* /proc reads nothing */
    /* Each copy walks the target's page tables (access_process_vm): one copy when the
     * range fits, argv's last byte then read from it; a second only for a title. */
    __u64 n = ae - as;
    char last = 0;
    if (n <= TASKS_CMDLINE_MAX) {
        barrier_var(n);
        if (n > TASKS_CMDLINE_MAX)
            goto stale;
        if (bpf_copy_from_user_task(o->cmd, n, (const void *)as, t, 0) != 0)
            goto stale;
        last = o->cmd[(n - 1) & (TASKS_CMDLINE_MAX - 1)];
    } else {
        bpf_copy_from_user_task(&last, 1, (const void *)(ae - 1), t, 0);   /* 0 on failure */
        if (!last)
            goto stale;              /* too long for a record: /proc reads it */
    }
    if (last) {
        /* argv's last byte overwritten: setproctitle's title, which may run on into the
         * environment when that follows at once; /proc reads at most a page of it */
        r->rflags |= TASKS_REC_CMD_TITLE;
        __u64 m = (es == ae && ee >= es) ? ee - as : ae - as;
        if (m > TASKS_CMDLINE_MAX)
            m = TASKS_CMDLINE_MAX;
        barrier_var(m);
        if (m > TASKS_CMDLINE_MAX)
            goto stale;
        if (m != n && bpf_copy_from_user_task(o->cmd, m, (const void *)as, t, 0) != 0)
            goto stale;
        n = m;
    }
    r->cmdline_len = (__u32)n;
    return (long)n;
stale:
    r->rflags &= ~(TASKS_REC_CMDLINE | TASKS_REC_CMD_TITLE);
    r->rflags |= TASKS_REC_CMD_STALE;
    return 0;
}

SEC("iter.s/task")
int tasks_dump(struct bpf_iter__task *ctx)
{
    struct seq_file *seq = ctx->meta->seq;
    struct task_struct *t = ctx->task;
    if (!t)
        return 0;
    __u32 zero = 0;
    struct tasks_out *o = bpf_map_lookup_elem(&scratch, &zero);
    if (!o)
        return 0;
    struct tasks_rec *r = &o->rec;
    struct task_struct *u = UNTRUSTED(struct task_struct, t);   /* reads: kern_types.h */
    fill_rec(r, u);
    struct mm_struct *mm = u->mm;
    struct cmd_sent *sent = NULL;
    __u64 as = 0, ae = 0, now = 0;
    long n = -1;
    /* a leader with memory: kernel threads have none (a kthread_use_mm borrower
     * excepted), and /proc reads an exited leader's as empty */
    if (mm && r->tid == r->tgid && !(r->flags & PF_KTHREAD) && cmd_idle_later && io_idle(r)) {
        r->rflags |= TASKS_REC_CMD_LATER;
    } else if (mm && r->tid == r->tgid && !(r->flags & PF_KTHREAD)) {
        as = mm->arg_start;
        ae = mm->arg_end;
        sent = bpf_task_storage_get(&cmd_sent, t, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
        /* sent again when a period boundary passed since, the periods shifted by a part
         * taken from the pid: a population seen at once is not sent again at once */
        __u64 off = ((__u64)r->tgid * 2654435761ull) % TASKS_CMD_RESEND_NS;
        now = bpf_ktime_get_ns();
        if (!sent || sent->mm != (__u64)mm || sent->arg_start != as || sent->arg_end != ae ||
            (now + off) / TASKS_CMD_RESEND_NS != (sent->at + off) / TASKS_CMD_RESEND_NS)
            n = cmdline_of(o, t, mm, as, ae);
        else
            r->rflags |= TASKS_REC_CMD_KEPT;
    }
    __u64 len = sizeof(*r);
    if (n > 0)
        len += TASKS_REC_PAD((__u64)n);
    if (len > sizeof(*o))
        len = sizeof(*o);
    /* Marked as sent only once written: a run whose output overflows the seq_file
     * buffer is dropped and run again for the same task at the next read. */
    if (bpf_seq_write(seq, o, len) == 0 && n >= 0 && sent) {
        sent->mm = (__u64)mm;
        sent->arg_start = as;
        sent->arg_end = ae;
        sent->at = now;
    }
    return 0;
}

/* The records only, for kernels without sleepable iterators or bpf_copy_from_user_task.
 * After tasks_dump on purpose: a light skeleton (bpftool gen skeleton -L, libbpf 1.1)
 * hands the first program's descriptor slot the first program it loaded, so a program
 * not loaded must come after the one that is. */
SEC("?iter/task")
int tasks_dump_plain(struct bpf_iter__task *ctx)
{
    struct seq_file *seq = ctx->meta->seq;
    struct task_struct *t = ctx->task;
    if (!t)
        return 0;
    __u32 zero = 0;
    struct tasks_out *o = bpf_map_lookup_elem(&scratch, &zero);
    if (!o)
        return 0;
    fill_rec(&o->rec, UNTRUSTED(struct task_struct, t));
    bpf_seq_write(seq, &o->rec, sizeof(o->rec));
    return 0;
}
