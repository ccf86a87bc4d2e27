/* SPDX-License-Identifier: GPL-2.0-or-later */
/* taskiter.c: load, attach and read the task iterator (source/taskiter.h); the pure
 * conversions of its records into what /proc says. */
#include "source/taskiter.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "tasks.skel.h"
#include "tasks.lskel.h"
#include "files.skel.h"
#include "files.lskel.h"
#include "source/bpfload.h"

_Static_assert(sizeof(struct tasks_rec) == TASKS_REC_SIZE && TASKS_REC_SIZE % 8 == 0, "tasks_rec layout");
_Static_assert(sizeof(struct tasks_file_rec) == TASKS_FILE_REC_SIZE && TASKS_FILE_REC_SIZE % 8 == 0,
               "tasks_file_rec layout");

#define PF_KTHREAD      0x00200000
/* fs/proc's inode number of the initial pid namespace (PROC_PID_INIT_INO) */
#define PID_NS_INIT     "pid:[4026531836]"

/* ------------------------------------------------------------------------------------------ */
/* Pure conversions                                                                            */
/* ------------------------------------------------------------------------------------------ */

/* include/linux/sched.h, 6.x values */
#define TASK_REPORT       0x7fu
#define TASK_IDLE         0x402u      /* TASK_UNINTERRUPTIBLE | TASK_NOLOAD */
#define TASK_REPORT_IDLE  0x80u
#define TASK_UNINTERRUPTIBLE 0x2u
#define TASK_RTLOCK_WAIT  0x1000u
#define TASK_FROZEN       0x8000u

char taskiter_state_letter(uint32_t state, uint32_t exit_state)
{
    static const char letters[] = "RSDTtXZPI";
    unsigned s = (state | exit_state) & TASK_REPORT;
    if ((state & TASK_IDLE) == TASK_IDLE)
        s = TASK_REPORT_IDLE;
    /* an rt-mutex wait and a frozen task are shown as an uninterruptible sleep */
    if (state & (TASK_RTLOCK_WAIT | TASK_FROZEN))
        s = TASK_UNINTERRUPTIBLE;
    unsigned idx = 0;                /* fls(s) */
    while (s) {
        idx++;
        s >>= 1;
    }
    return letters[idx];
}

unsigned long long taskiter_ticks(uint64_t ns, long clk_tck)
{
    if (clk_tck <= 0)
        return 0;
    if (1000000000ull % (unsigned long long)clk_tck == 0)
        return ns / (1000000000ull / (unsigned long long)clk_tck);
    /* kernel/time/time.c: the rounding of a USER_HZ that does not divide a second */
    return ns * 9 / ((9000000000ull + (unsigned long long)clk_tck / 2) / (unsigned long long)clk_tck);
}

static void *grow(void *p, size_t *cap, size_t need, size_t sz)
{
    if (need <= *cap)
        return p;
    size_t c = *cap ? *cap : 64;
    while (c < need)
        c *= 2;
    void *q = realloc(p, c * sz);
    if (!q)
        abort();                     /* as xrealloc: out of memory is fatal */
    *cap = c;
    return q;
}

/* r's name, with its NUL, appended to a's text. */
static uint32_t comm_of(struct taskiter_acc *a, const struct tasks_rec *r)
{
    size_t n = strnlen(r->comm, sizeof(r->comm) - 1);
    a->text = grow(a->text, &a->text_cap, a->ntext + n + 1, 1);
    memcpy(a->text + a->ntext, r->comm, n);
    a->text[a->ntext + n] = '\0';
    uint32_t off = (uint32_t)a->ntext;
    a->ntext += n + 1;
    return off;
}

static void task_of(struct taskiter_acc *a, const struct tasks_rec *r, long clk_tck,
                    struct taskiter_task *t)
{
    memset(t, 0, sizeof(*t));
    t->id = (pid_t)r->tid;
    t->tgid = (pid_t)r->tgid;
    t->start_ticks = taskiter_ticks(r->start_boottime, clk_tck);
    t->comm_off = comm_of(a, r);
    t->kthread = (r->flags & PF_KTHREAD) != 0;
    /* fs/proc/base.c: task_dump_owner gives a kernel thread's directory to root, any
     * other task's to its effective uid (for the directory itself, dumpable or not) */
    t->uid = t->kthread ? 0 : (uid_t)r->euid;
    t->nice = (int)((int64_t)r->static_prio - 120);   /* no overflow from a damaged record */
    t->policy = (int)r->policy;
    t->nlwp = 1;
    t->ioprio_raw = (int)r->ioprio;
    t->state = taskiter_state_letter(r->state, r->exit_state);
    t->io_known = (r->rflags & TASKS_REC_IOAC) != 0;
    memcpy(t->io, r->ioac, sizeof(t->io));
    t->run_ns = r->run_ns;
    if (r->rflags & TASKS_REC_DELAYS) {
        t->delays_valid = true;
        t->blkio_count = r->blkio_count;
        t->blkio_delay_ns = r->blkio_delay_ns;
        t->swapin_count = r->swapin_count;
        t->swapin_delay_ns = r->swapin_delay_ns;
    }
}

/* A process's counters from its leader's record: the leader's own, the dead threads'
 * (signal struct), and, for the delays, only a live leader's (taskstats skips threads
 * with an exit state). */
static void group_of(struct taskiter_acc *a, const struct tasks_rec *r, long clk_tck,
                     struct taskiter_task *t)
{
    task_of(a, r, clk_tck, t);
    t->nlwp = r->nr_threads;
    for (int i = 0; i < TASKS_IO_N; i++)
        t->io[i] += r->sig_ioac[i];
    t->run_ns += r->sig_run_ns;
    if (r->exit_state) {
        t->delays_valid = false;
        t->blkio_count = t->blkio_delay_ns = t->swapin_count = t->swapin_delay_ns = 0;
    }
    if (r->rflags & TASKS_REC_SIG_STATS) {
        t->delays_valid = true;
        t->blkio_count += r->sig_blkio_count;
        t->blkio_delay_ns += r->sig_blkio_delay_ns;
        t->swapin_count += r->sig_swapin_count;
        t->swapin_delay_ns += r->sig_swapin_delay_ns;
    }
}

/* Whether t is a leader that has exited (a zombie, or being reaped): /proc/PID reads no
 * command line and no open files of it, and ioprio_get no priority. */
static bool leader_gone(const struct taskiter_task *t)
{
    return t->id == t->tgid && !t->kthread && (t->state == 'Z' || t->state == 'X');
}

/* Thread tid, alive, of leader t's group stands for t when it is the lowest seen
 * (taskiter_task.live_tid). Whether it became so. */
static bool stand_in(struct taskiter_task *t, pid_t tid)
{
    if (t->live_tid && t->live_tid < tid)
        return false;
    t->live_tid = tid;
    if (t->cmd == TASKITER_CMD_EMPTY)
        t->cmd = TASKITER_CMD_NONE;  /* the thread's /proc/TGID/task/TID/cmdline reads it */
    return true;
}

/* Another thread's counters into its process; a live thread of a leader that exited
 * gives the process its priority. */
static void group_add(struct taskiter_task *t, const struct tasks_rec *r)
{
    if (leader_gone(t) && !r->exit_state && stand_in(t, (pid_t)r->tid)) {
        t->ioprio_raw = (int)r->ioprio;
        t->nice = (int)((int64_t)r->static_prio - 120);
        t->policy = (int)r->policy;
    }
    for (int i = 0; i < TASKS_IO_N; i++)
        t->io[i] += r->ioac[i];
    t->run_ns += r->run_ns;
    if (!r->exit_state && (r->rflags & TASKS_REC_DELAYS)) {
        t->delays_valid = true;
        t->blkio_count += r->blkio_count;
        t->blkio_delay_ns += r->blkio_delay_ns;
        t->swapin_count += r->swapin_count;
        t->swapin_delay_ns += r->swapin_delay_ns;
    }
}

static int cmp_task(const void *a, const void *b)
{
    const struct taskiter_task *x = a, *y = b;
    return (x->id > y->id) - (x->id < y->id);
}

/* The task with this id among the first n (sorted), or NULL. */
static struct taskiter_task *find_task(struct taskiter_task *v, size_t n, pid_t id)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (v[mid].id < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < n && v[lo].id == id ? &v[lo] : NULL;
}

void taskiter_acc_begin(struct taskiter_acc *a, bool threads, long clk_tck)
{
    a->threads = threads;
    a->clk_tck = clk_tck;
    a->n = 0;
    a->nlate = 0;
    a->ntext = 0;
    a->sorted = true;
    a->gone_leader = false;
}

void taskiter_acc_reserve(struct taskiter_acc *a, size_t tasks, size_t text)
{
    a->tasks = grow(a->tasks, &a->cap, tasks, sizeof(a->tasks[0]));
    a->text = grow(a->text, &a->text_cap, text, 1);
}

/* What r and its trailing bytes (cmd[0, r->cmdline_len)) say of the command line, into t:
 * the bytes /proc/PID/cmdline would read, kept in a's text. */
static void cmd_of(struct taskiter_acc *a, const struct tasks_rec *r, const char *cmd,
                   struct taskiter_task *t)
{
    t->cmd = TASKITER_CMD_NONE;
    t->cmd_off = t->cmd_len = 0;
    if (r->tid != r->tgid)
        return;                      /* the kernel sends a leader's only */
    if (r->rflags & TASKS_REC_CMDLINE) {
        size_t n = r->cmdline_len;
        if (r->rflags & TASKS_REC_CMD_TITLE) {
            /* fs/proc/base.c get_mm_proctitle: the first string, with its NUL */
            const char *nul = memchr(cmd, '\0', n);
            if (nul)
                n = (size_t)(nul - cmd) + 1;
        }
        /* + 1: an empty command line sent still has an address */
        a->text = grow(a->text, &a->text_cap, a->ntext + n + 1, 1);
        if (n)
            memcpy(a->text + a->ntext, cmd, n);
        t->cmd = TASKITER_CMD_SENT;
        t->cmd_off = (uint32_t)a->ntext;
        t->cmd_len = (uint32_t)n;
        a->ntext += n;
    } else if (r->rflags & TASKS_REC_CMD_STALE) {
        t->cmd = TASKITER_CMD_STALE;
    } else if (r->rflags & TASKS_REC_NO_MM) {
        t->cmd = TASKITER_CMD_EMPTY;
    } else if (r->rflags & TASKS_REC_CMD_LATER) {
        t->cmd = TASKITER_CMD_LATER;
    } else if (r->rflags & TASKS_REC_CMD_KEPT) {
        t->cmd = TASKITER_CMD_KEPT;
    }
}

static void add_rec(struct taskiter_acc *a, const struct tasks_rec *r, const char *cmd)
{
    if (r->tid == 0)
        return;
    if (!a->threads && r->tid != r->tgid) {
        struct taskiter_task *t = a->sorted ? find_task(a->tasks, a->n, (pid_t)r->tgid) : NULL;
        if (t) {
            group_add(t, r);
        } else {
            a->late = grow(a->late, &a->late_cap, a->nlate + 1, sizeof(a->late[0]));
            a->late[a->nlate++] = *r;
        }
        return;
    }
    a->tasks = grow(a->tasks, &a->cap, a->n + 1, sizeof(a->tasks[0]));
    struct taskiter_task *t = &a->tasks[a->n];
    if (a->threads)
        task_of(a, r, a->clk_tck, t);
    else
        group_of(a, r, a->clk_tck, t);
    cmd_of(a, r, cmd, t);
    if (a->threads && r->nr_threads > 1 && leader_gone(t))
        a->gone_leader = true;
    if (a->n > 0 && t->id <= a->tasks[a->n - 1].id)
        a->sorted = false;
    a->n++;
}

long taskiter_acc_feed(struct taskiter_acc *a, const void *buf, size_t len)
{
    const char *p = buf;
    size_t used = 0;
    struct tasks_rec copy;
    while (len - used >= sizeof(struct tasks_rec)) {
        const struct tasks_rec *r = (const void *)(p + used);
        if ((uintptr_t)r % _Alignof(struct tasks_rec) != 0) {
            memcpy(&copy, r, sizeof copy);
            r = &copy;
        }
        size_t extra = 0;
        if (r->rflags & TASKS_REC_CMDLINE) {
            if (r->cmdline_len > TASKS_CMDLINE_MAX)
                return -EPROTO;
            extra = TASKS_REC_PAD(r->cmdline_len);
        } else if (r->cmdline_len != 0) {
            return -EPROTO;
        }
        if (len - used - sizeof(struct tasks_rec) < extra)
            break;                   /* cut by the read: the rest comes with the next */
        if (a->want_tgid > 0 && r->tid != 0 && (pid_t)r->tgid != a->want_tgid)
            return -ENOTSUP;
        add_rec(a, r, p + used + sizeof(struct tasks_rec));
        used += sizeof(struct tasks_rec) + extra;
    }
    return (long)used;
}

const char *taskiter_cmdline(const struct taskiter_acc *a, const struct taskiter_task *t, size_t *len)
{
    if (t->cmd != TASKITER_CMD_SENT || (size_t)t->cmd_off + t->cmd_len > a->ntext) {
        *len = 0;
        return NULL;
    }
    *len = t->cmd_len;
    return a->text + t->cmd_off;
}

const char *taskiter_comm(const struct taskiter_acc *a, const struct taskiter_task *t)
{
    return t->comm_off < a->ntext ? a->text + t->comm_off : "";
}

void taskiter_acc_end(struct taskiter_acc *a)
{
    if (!a->sorted)
        qsort(a->tasks, a->n, sizeof(a->tasks[0]), cmp_task);
    a->sorted = true;
    for (size_t i = 0; i < a->nlate; i++) {
        struct taskiter_task *t = find_task(a->tasks, a->n, (pid_t)a->late[i].tgid);
        if (t)
            group_add(t, &a->late[i]);
    }
    a->nlate = 0;
    /* threads mode: each leader that exited gets its live thread of lowest tid (rare:
     * only then is every thread looked at) */
    for (size_t i = 0; a->gone_leader && i < a->n; i++) {
        const struct taskiter_task *x = &a->tasks[i];
        if (x->id == x->tgid || x->state == 'Z' || x->state == 'X')
            continue;
        struct taskiter_task *l = find_task(a->tasks, a->n, x->tgid);
        if (l && leader_gone(l))
            stand_in(l, x->id);
    }
}

void taskiter_acc_free(struct taskiter_acc *a)
{
    free(a->tasks);
    free(a->late);
    free(a->text);
    memset(a, 0, sizeof(*a));
}

/* ------------------------------------------------------------------------------------------ */
/* The kernel side                                                                             */
/* ------------------------------------------------------------------------------------------ */

struct taskiter {
    struct tasks_lskel *lskel;       /* the light skeleton's, or NULL */
    struct tasks_bpf *skel;          /* the normal skeleton's, or NULL */
    int    prog_fd;                  /* the loaded program, from either */
    int    link_fd;                  /* the iterator's link over every task; -1 none */
    int    files_link_fd;            /* files_dump's link over every open file; -1 none */
    /* the open-files pass (taskiter_files.bpf.c), loaded at its first read by the same loader */
    struct files_lskel *files_lskel;
    struct files_bpf *files_skel;
    bool   files_tried;              /* its load was tried (once) */
    bool   cast;                     /* the light skeleton read through untrusted pointers */
    const char *loader;              /* BPFLOAD_NAME_* of the one that loaded */
    /* taskiter_only: one link per process, bound to it (BPF_TASK_ITER_TGID) */
    int   *only_fd;
    pid_t *only_pid;
    size_t nonly;
    char  *buf;                      /* ITER_BUF: one read's records */
    __u32 *idle_later;               /* the program's cmd_idle_later, in its mapped .bss */
};

/* The records carry the kernel's global ids: they are /proc's only in the initial pid
 * namespace, read through a /proc of that namespace. */
static int check_namespace(int proc_fd, char *err, size_t errlen)
{
    char link[64];
    ssize_t l = readlink("/proc/self/ns/pid", link, sizeof link - 1);
    if (l <= 0 || (size_t)l != strlen(PID_NS_INIT) || memcmp(link, PID_NS_INIT, (size_t)l) != 0) {
        snprintf(err, errlen, "not the initial pid namespace");
        return -EXDEV;
    }
    char self[32];
    l = readlinkat(proc_fd, "self", self, sizeof self - 1);
    if (l > 0)
        self[l] = '\0';
    if (l <= 0 || strtol(self, NULL, 10) != (long)getpid()) {
        snprintf(err, errlen, "the /proc read is not this pid namespace's");
        return -EXDEV;
    }
    return 0;
}

/* The light skeleton: the kernel's loader program relocates and loads the program (no
 * BTF parsed here); the link is made here, as the skeleton's own attach skips iterators.
 * cast: its variant that reads the task through an untrusted pointer (bpfload.h), tried
 * first. */
static int open_light(struct taskiter *ti, bool cast)
{
    ti->lskel = cast ? bpfload_tasks_cast_open() : tasks_lskel__open();
    if (!ti->lskel)
        return -ENOMEM;
    int rc = cast ? bpfload_tasks_cast_load(ti->lskel) : tasks_lskel__load(ti->lskel);
    if (rc == 0) {
        rc = bpf_link_create(ti->lskel->progs.tasks_dump.prog_fd, 0, BPF_TRACE_ITER, NULL);
        if (rc >= 0) {
            ti->link_fd = rc;
            ti->prog_fd = ti->lskel->progs.tasks_dump.prog_fd;
            ti->idle_later = &ti->lskel->bss->cmd_idle_later;
            ti->cast = cast;
            ti->loader = BPFLOAD_NAME_LIGHT;
            return 0;
        }
    }
    tasks_lskel__destroy(ti->lskel);
    ti->lskel = NULL;
    return rc < 0 ? rc : -EINVAL;
}

/* libbpf's normal skeleton (kernels before in-kernel CO-RE); err says which step failed. */
static int open_libbpf(struct taskiter *ti, char *err, size_t errlen)
{
    libbpf_print_fn_t old = bpfload_begin();
    const char *step = "open";
    int rc = 0;
    /* The sleepable program (command lines: 5.18, task storage: 5.11) first; where the
     * kernel refuses it, the plain one, whose tasks' command lines come from /proc. */
    bool plain = false;
    for (int pass = 0; pass < 2; pass++) {
        plain = pass == 1;
        tasks_bpf__destroy(ti->skel);
        ti->skel = tasks_bpf__open();
        if (!ti->skel) {
            rc = errno ? -errno : -ENOMEM;
            break;
        }
        bpf_program__set_autoload(ti->skel->progs.tasks_dump, !plain);
        bpf_program__set_autoload(ti->skel->progs.tasks_dump_plain, plain);
        bpf_map__set_autocreate(ti->skel->maps.cmd_sent, !plain);
        step = "load";
        rc = tasks_bpf__load(ti->skel);
        if (rc == 0) {
            step = "attach";
            rc = tasks_bpf__attach(ti->skel);
            break;
        }
    }
    bpfload_end(old);
    if (rc != 0) {
        if (rc > 0)
            rc = -rc;
        snprintf(err, errlen, "BPF task iterator %s failed: %s%s%s", step, strerror(-rc),
                 bpfload_last()[0] ? ": " : "", bpfload_last());
        return rc;
    }
    ti->link_fd = bpf_link__fd(plain ? ti->skel->links.tasks_dump_plain : ti->skel->links.tasks_dump);
    ti->prog_fd = bpf_program__fd(plain ? ti->skel->progs.tasks_dump_plain : ti->skel->progs.tasks_dump);
    ti->idle_later = plain ? NULL : &ti->skel->bss->cmd_idle_later;
    ti->loader = BPFLOAD_NAME_LIBBPF;
    return 0;
}

int taskiter_open(struct taskiter **out, int proc_fd, char *err, size_t errlen)
{
    *out = NULL;
    int rc = bpfload_check(err, errlen);
    if (rc == 0)
        rc = check_namespace(proc_fd, err, errlen);
    if (rc < 0)
        return rc;
    struct taskiter *ti = calloc(1, sizeof *ti);
    if (!ti) {
        snprintf(err, errlen, "out of memory");
        return -ENOMEM;
    }
    ti->link_fd = ti->files_link_fd = -1;
    enum bpfload_loader how = bpfload_choice();
    rc = -ENOEXEC;
    if (how != BPFLOAD_LIBBPF) {
        rc = open_light(ti, true);
        if (rc < 0)
            rc = open_light(ti, false);
        if (rc < 0 && how == BPFLOAD_LIGHT)
            snprintf(err, errlen, "BPF task iterator light load failed: %s", strerror(-rc));
    }
    if (rc < 0 && how != BPFLOAD_LIGHT)
        rc = open_libbpf(ti, err, errlen);
    if (rc < 0) {
        taskiter_close(ti);
        return rc;
    }
    *out = ti;
    return 0;
}

const char *taskiter_loader(const struct taskiter *ti)
{
    return ti->loader;
}

static void only_clear(struct taskiter *ti)
{
    for (size_t i = 0; i < ti->nonly; i++)
        close(ti->only_fd[i]);
    free(ti->only_fd);
    free(ti->only_pid);
    ti->only_fd = NULL;
    ti->only_pid = NULL;
    ti->nonly = 0;
}

int taskiter_only(struct taskiter *ti, const pid_t *pids, size_t n)
{
    only_clear(ti);
    if (n == 0)
        return 0;
    ti->only_fd = calloc(n, sizeof(ti->only_fd[0]));
    ti->only_pid = calloc(n, sizeof(ti->only_pid[0]));
    if (!ti->only_fd || !ti->only_pid) {
        only_clear(ti);
        return -ENOMEM;
    }
    for (size_t i = 0; i < n; i++) {
        bool dup = false;            /* a process named twice would be counted twice */
        for (size_t j = 0; j < ti->nonly && !dup; j++)
            dup = ti->only_pid[j] == pids[i];
        if (dup || pids[i] <= 0)
            continue;
        union bpf_iter_link_info info;
        memset(&info, 0, sizeof(info));
        info.task.pid = (__u32)pids[i];
        LIBBPF_OPTS(bpf_link_create_opts, o, .iter_info = &info, .iter_info_len = sizeof(info));
        int fd = bpf_link_create(ti->prog_fd, 0, BPF_TRACE_ITER, &o);
        if (fd < 0) {
            only_clear(ti);
            return fd;
        }
        ti->only_fd[ti->nonly] = fd;
        ti->only_pid[ti->nonly++] = pids[i];
    }
    return 0;
}

bool taskiter_bound(const struct taskiter *ti)
{
    return ti->nonly > 0;
}

/* What one read() of the iterator returns at most: the kernel's seq_file buffer for BPF
 * iterators is 8 pages, so a read this large takes whole records; a record a smaller read
 * cut would be kept and completed by the next (taskiter_acc_feed). */
#define ITER_BUF (64 * 1024)

/* One run of the iterator behind link_fd: its output read a seq_file buffer at a time
 * into ti->buf and handed to take(ctx, buf, len), which returns the bytes it used (whole
 * records: the rest waits for the next read) or -errno. Returns 0, -errno, or -EPROTO
 * when the output ends inside a record. */
typedef long (*drain_fn)(void *ctx, const char *buf, size_t len);

static int iter_drain(struct taskiter *ti, int link_fd, drain_fn take, void *ctx)
{
    if (!ti->buf) {
        ti->buf = malloc(ITER_BUF);
        if (!ti->buf)
            return -ENOMEM;
    }
    int fd = bpf_iter_create(link_fd);
    if (fd < 0)
        return fd;
    size_t len = 0;                  /* bytes in buf not yet handed on */
    int rc = 0;
    for (;;) {
        ssize_t r = read(fd, ti->buf + len, ITER_BUF - len);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            rc = -errno;
            break;
        }
        if (r == 0)
            break;
        len += (size_t)r;
        long used = take(ctx, ti->buf, len);
        if (used < 0) {
            rc = (int)used;
            break;
        }
        len -= (size_t)used;
        memmove(ti->buf, ti->buf + used, len);
    }
    close(fd);
    if (rc == 0 && len != 0)
        rc = -EPROTO;
    return rc;
}

/* The task records of one run into acc. tgid > 0: a link bound to that process, whose
 * records must all be its threads' (-ENOTSUP otherwise: a kernel that took the link but
 * not its filter). */
struct feed_ctx {
    struct taskiter_acc *acc;
    pid_t tgid;
};

static long feed(void *ctx, const char *buf, size_t len)
{
    struct feed_ctx *f = ctx;
    f->acc->want_tgid = f->tgid;
    long used = taskiter_acc_feed(f->acc, buf, len);
    f->acc->want_tgid = 0;
    return used;
}

static int read_link(struct taskiter *ti, int link_fd, pid_t tgid, struct taskiter_acc *acc)
{
    struct feed_ctx f = { .acc = acc, .tgid = tgid };
    return iter_drain(ti, link_fd, feed, &f);
}

int taskiter_read(struct taskiter *ti, bool threads, long clk_tck, bool idle_cmd_later,
                  struct taskiter_acc *acc)
{
    taskiter_acc_begin(acc, threads, clk_tck);
    if (ti->idle_later)
        *(volatile __u32 *)ti->idle_later = idle_cmd_later;
    int rc = 0;
    for (size_t i = 0; i < ti->nonly && rc == 0; i++)
        rc = read_link(ti, ti->only_fd[i], ti->only_pid[i], acc);
    if (rc == -ENOTSUP) {
        /* the kernel ignored the filter: every task from here on, as before 6.1 */
        only_clear(ti);
        taskiter_acc_begin(acc, threads, clk_tck);
    }
    if (ti->nonly == 0)
        rc = read_link(ti, ti->link_fd, 0, acc);
    if (ti->idle_later)
        *(volatile __u32 *)ti->idle_later = 0;
    taskiter_acc_end(acc);
    return rc;
}

/* The open-files pass, by the loader that loaded the task iterator: the light skeleton
 * (through untrusted pointers first where the task iterator's loaded so), else libbpf's
 * normal one. 0, or -errno. */
static int files_load(struct taskiter *ti)
{
    if (ti->lskel) {
        for (int cast = ti->cast; cast >= 0; cast--) {
            struct files_lskel *s = cast ? bpfload_files_cast_open() : files_lskel__open();
            if (!s)
                continue;
            int rc = cast ? bpfload_files_cast_load(s) : files_lskel__load(s);
            if (rc == 0) {
                rc = bpf_link_create(s->progs.files_dump.prog_fd, 0, BPF_TRACE_ITER, NULL);
                if (rc >= 0) {
                    ti->files_lskel = s;
                    ti->files_link_fd = rc;
                    return 0;
                }
            }
            files_lskel__destroy(s);
        }
        return -ENOTSUP;
    }
    libbpf_print_fn_t old = bpfload_begin();
    struct files_bpf *s = files_bpf__open_and_load();
    int rc = s ? files_bpf__attach(s) : -ENOTSUP;
    bpfload_end(old);
    if (!s || rc != 0) {
        files_bpf__destroy(s);
        return -ENOTSUP;
    }
    ti->files_skel = s;
    ti->files_link_fd = bpf_link__fd(s->links.files_dump);
    return 0;
}

bool taskiter_has_files(const struct taskiter *ti)
{
    return ti && (!ti->files_tried || ti->files_link_fd >= 0);
}

/* The open-files records of one run, whole ones to each. */
struct files_ctx {
    taskiter_files_fn each;
    void *ctx;
};

static long take_files(void *ctx, const char *buf, size_t len)
{
    struct files_ctx *f = ctx;
    size_t whole = len / sizeof(struct tasks_file_rec);
    f->each(f->ctx, (const struct tasks_file_rec *)(const void *)buf, whole);
    return (long)(whole * sizeof(struct tasks_file_rec));
}

int taskiter_files(struct taskiter *ti, taskiter_files_fn each, void *ctx)
{
    if (!taskiter_has_files(ti))
        return -ENOTSUP;
    if (!ti->files_tried) {
        ti->files_tried = true;
        if (files_load(ti) < 0)
            return -ENOTSUP;
    }
    struct files_ctx f = { .each = each, .ctx = ctx };
    return iter_drain(ti, ti->files_link_fd, take_files, &f);
}

void taskiter_close(struct taskiter *ti)
{
    if (!ti)
        return;
    only_clear(ti);
    if (ti->lskel && ti->link_fd >= 0)
        close(ti->link_fd);      /* the normal skeleton's link is its own */
    if (ti->files_lskel && ti->files_link_fd >= 0)
        close(ti->files_link_fd);    /* the normal skeleton's link is its own */
    files_lskel__destroy(ti->files_lskel);
    files_bpf__destroy(ti->files_skel);
    tasks_lskel__destroy(ti->lskel);
    tasks_bpf__destroy(ti->skel);
    free(ti->buf);
    free(ti);
}
