/* SPDX-License-Identifier: GPL-2.0-or-later */
/* source/procs.h: processes or threads, their identity, scheduling and I/O counters.
 *
 * Read straight from procfs, the way libproc2 4.0 reads the same fields but without its
 * generic machinery (docs/performance.md: "libproc2, measured"): the task list from a
 * readdir of /proc (and of /proc/PID/task for threads), or from the last list and the
 * pids allocated since ("How tasks are listed" below); per task one read of
 * /proc/PID/stat (state, flags, nice, threads, start time, policy, and the raw name: the
 * bytes between the first '(' and the last ')' are what /proc/PID/comm holds), the owner
 * of the /proc/PID directory, which procfs gives as the task's effective uid even for a
 * non-dumpable task (fs/proc/base.c:task_dump_owner), and the user name for it from
 * getpwuid, cached per uid like libproc2's pwcache (a name of 33 bytes or more, or none,
 * is shown as the number). The I/O counters are read from /proc/PID/io (or
 * /proc/PID/task/TID/io for threads) by our own pure parser, because a failed read must be
 * told apart from zero: EACCES means "not permitted", ENOENT/ESRCH "exited", and both
 * leave the rates unknown. A task whose stat or directory cannot be read has exited
 * between the readdir and the read: it is left out, as libproc2 did.
 *
 * A task's identity is (id, start_ticks): a reused pid has another start time and so
 * never inherits the old task's counters.
 */
#ifndef IOTRIAGE_SOURCE_PROCS_H
#define IOTRIAGE_SOURCE_PROCS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "source/taskstats.h"

#define TASK_COMM_MAX 64
#define TASK_USER_MAX 33

struct proc_io {
    uint64_t rchar, wchar, syscr, syscw;
    uint64_t read_bytes, write_bytes, cancelled_write_bytes;
};

/* A task's I/O counters as kept: the three the rates need, and the other four of
 * /proc/PID/io (rchar, wchar, syscr, syscw), which nothing shows, only as a hash that
 * changes when one of them does (snapshot_taskdevs.c: did the process do I/O since its
 * open files were scanned). */
struct task_io {
    uint64_t read_bytes, write_bytes, cancelled_write_bytes;
    uint64_t other_sig;
};

/* The delay counters delta.h reads, from taskstats (source/taskstats.h: struct
 * delay_sample, of which the CPU delay, version and error are not kept). */
struct task_delay {
    uint64_t blkio_count, blkio_delay_ns;    /* synchronous block I/O waits */
    uint64_t swapin_count, swapin_delay_ns;
    /* when they were read (clock_mono seconds: a taskstats chunk's reply, the iterator's
     * pass); 0 unknown (a replay). Between two readings of a task, its waits are measured
     * against this interval, not the snapshots': a task read late in one refresh and
     * early in the next waited longer than the snapshots' interval in between. */
    double   at_s;
};

/* One task. The strings are never NULL. From procs_read they are shared, reference
 * counted, between the sampler's caches and every snapshot that lists the task (names
 * repeat: 10,000 forks of one program hold one "comm", one command line, one user), and
 * released by procs_release; elsewhere (replay) each is malloc'd, freed by procs_free.
 * They are read only. */
struct task_sample {
    pid_t    id;                 /* pid, or tid in threads mode */
    pid_t    tgid;
    unsigned long long start_ticks;
    const char *comm;            /* at most TASK_COMM_MAX - 1 bytes */
    const char *cmdline;         /* "" for kernel threads, and while cmdline_pending */
    const char *user;            /* at most TASK_USER_MAX - 1 bytes; "" when unknown (replay) */
    uid_t    uid;
    int      nlwp;               /* threads in the process (1 in threads mode) */
    int      ioprio_raw;         /* ioprio_get value, or -errno */
    int16_t  io_err;             /* 0, or -errno reading the io file (counters unknown) */
    int8_t   nice;
    int8_t   policy;             /* SCHED_* */
    char     state;
    bool     kthread;            /* a kernel thread (PF_KTHREAD): no files, no fd scan */
    bool     cmdline_pending;    /* not read yet: the next procs_read has it (a first
                                  * frame's, procs_defer_idle_cmdlines) */
    bool     delay_valid;        /* delay: a taskstats reply arrived and passed the checks */
    bool     uring_read;         /* its wchan was read, in S (snapshot.c: without the
                                  * lens under io pressure, or in a cgroup with io.max) */
    bool     uring_wait;         /* ... and it was asleep in io_uring's completion wait */
    bool     aio_wait;           /* ... or in libaio's (io_getevents), which is not iowait */
    pid_t    live_tid;           /* 0, or when the process's leader has exited (a zombie,
                                  * e.g. after pthread_exit in main) while other threads
                                  * live: the live thread of lowest tid. Its
                                  * /proc/TGID/task/TID stands for the leader's /proc/PID
                                  * (the zombie's reads no command line and no open
                                  * files): the command line, the open files (fdmap) and,
                                  * in process mode, the I/O priority, nice and policy
                                  * are that thread's. In threads mode the leader's row
                                  * carries it. */
    struct task_io io;
    struct task_delay delay;     /* filled by the snapshot from taskstats */
};

/* task_sample's narrow fields from wider values: one out of their range (a damaged
 * record) stays out of the kernel's range, as "unknown" or an impossible nice, never
 * wrapped into a valid one. */
static inline int8_t task_policy8(long long policy)
{
    return policy >= 0 && policy <= INT8_MAX ? (int8_t)policy : -1;
}

static inline int8_t task_nice8(long long nice)
{
    return nice < INT8_MIN ? INT8_MIN : nice > INT8_MAX ? INT8_MAX : (int8_t)nice;
}

/* Whether t never moved a byte to or from a disk (its io counters known, read, written
 * and cancelled all 0): the processes a first frame leaves their open-file scans and
 * command lines to the second sample for. */
static inline bool task_disk_idle(const struct task_sample *t)
{
    return t->io_err == 0 && t->io.read_bytes == 0 && t->io.write_bytes == 0 &&
           t->io.cancelled_write_bytes == 0;
}

/* The fields of /proc/PID/stat we use. */
struct proc_stat {
    char     comm[TASK_COMM_MAX];    /* raw bytes, cut at TASK_COMM_MAX - 1 */
    char     state;
    unsigned long flags;             /* PF_* */
    int      nice;
    int      nlwp;                   /* num_threads */
    unsigned long long start_ticks;
    int      policy;                 /* SCHED_* */
};

/* Pure: parse the text of /proc/PID/stat (buf needs no NUL). The name may hold any byte
 * but NUL, ')' and spaces included: it ends at the last ')'. Returns 0, or -EINVAL when
 * a field is missing or not a number (a cut-off file is no data). */
int procstat_parse(const char *buf, size_t len, struct proc_stat *out);

/* Pure: parse the text of /proc/PID/io. Returns 0 when every field was present, else
 * -EINVAL (a truncated file is not half data). */
int procio_parse(const char *buf, size_t len, struct proc_io *out);

struct procs_src;

/* threads: one entry per thread instead of per process. Returns 0 or -errno, with a
 * reason in err. */
int  procs_open(struct procs_src **out, bool threads, char *err, size_t errlen);

/* Read every task (or those whose pid/tgid is in `only`, when nonly > 0) below proc_fd
 * (the /proc directory). *tasks is a malloc'd array sorted by id; release it with
 * procs_release. Returns 0 or -errno (the /proc directory itself cannot be read).
 *
 * Command lines change rarely (exec, a daemon rewriting its argv) and reading one walks
 * the target's memory: each is kept per (id, start time) and read again when the name
 * changes (an exec) or after PROCS_NAMES_REFRESH_S (with the task iterator, it sends
 * them again itself: bpf/taskiter.h TASKS_CMD_RESEND_NS); the string is shared by the cache
 * and every snapshot holding the task. Kernel threads have none and are not asked. */
#define PROCS_NAMES_REFRESH_S 10.0
/* stats (may be NULL) asks taskstats for a chunk of the listed tasks: out[i] for ids[i]
 * (a TGID reply for processes, a PID reply for threads; invalid entries when the kernel
 * would not say). Each task's delay counters come from it, and it is the gate: a task
 * whose run time (struct delay_sample.run_ns) is the one of its last full read has not
 * run since, so nothing that stat, io or its owner say can have changed, and it is
 * taken from the cache without opening a file; its nice, policy and I/O priority, which
 * others can change, are asked again with system calls. */
typedef void (*procs_stats_fn)(void *ctx, const pid_t *ids, size_t n, struct delay_sample *out);
int  procs_read(struct procs_src *src, int proc_fd, const pid_t *only, size_t nonly,
                procs_stats_fn stats, void *ctx, struct task_sample **tasks, size_t *n);
/* How tasks are listed. A readdir of /proc costs about 1 us per process in the kernel
 * (a dcache lookup for each), a sixth of a refresh at 1,000 processes, to learn of the
 * few that are new. The kernel hands out pids upwards from the last one it gave
 * (kernel/pid.c: alloc_pid, idr_alloc_cyclic), and says which that was in the last field
 * of /proc/loadavg. So between two refreshes every new task has a pid in
 * (last then, last now], and /proc's readdir can start at any pid (its directory position
 * is the pid plus a constant, learnt from the positions readdir gives): the processes of
 * that range are read from there, and the rest of the list is the last one. A pid is
 * handed out a little before its task can be found (copy_process attaches it after
 * cgroup_can_fork), so each range reaches back over the refresh before it (and 32 pids
 * back after a whole listing): every pid is looked for twice. A task that exited is
 * dropped when it cannot be read; a pid of the range that the last list held was freed
 * before it was given again, so the range's listing stands for it.
 * In threads mode readdir of /proc shows no thread, so each id of the range is asked
 * for its thread group (/proc/ID/status, Tgid), when the range is at most 64 ids or a
 * sixteenth of the list. /proc is listed whole (and each /proc/PID/task in threads mode)
 * when the range is wider than that, when the pids wrapped (last now below last then),
 * when /proc/loadavg cannot be trusted (not our pid namespace's /proc, a fixture tree, or
 * a loadavg not served by procfs, as lxcfs's in a container), after a listing that failed,
 * and every PROCS_FULL_LIST_S seconds regardless: a task given a chosen pid
 * through clone3's set_tid (checkpoint/restore) is outside the range and shows by then. */
#define PROCS_FULL_LIST_S 10.0
/* The task source (source/taskiter.h, issue 19). With an iterator set, procs_read takes
 * the task list and every per-task figure from one run of it: no stat, io or status file,
 * no owner of a /proc directory, no nice, policy or ioprio system call and no taskstats
 * query per task (the `stats` callback is not called); the delays come from the records
 * (struct task_delay, valid when the task, or for a process one of its live threads or
 * its dead threads' stats, has a delay record). Command lines and user names keep their
 * caches as above. Processes /proc lists that the iterator does not show (a kernel may
 * keep some out of it) are found by a readdir of /proc every PROCS_FULL_LIST_S (made on a
 * thread of its own while the iterator runs; a first frame's run, procs_defer_idle_cmdlines,
 * looks for the init process alone, the one seen skipped, and leaves the readdir to the
 * next refresh) and read
 * from /proc and taskstats. A run that fails leaves that refresh to /proc and taskstats
 * as described above. The source owns the iterator from then on (procs_close closes it);
 * NULL closes the one set. */
struct taskiter;
void procs_set_taskiter(struct procs_src *src, struct taskiter *ti);
/* Whether the last procs_read took its tasks (and their delays) from the iterator. */
bool procs_from_taskiter(const struct procs_src *src);
/* The next procs_read, where the iterator runs outside threads mode, leaves the command
 * lines of processes that never moved a byte to or from a disk to the read after it
 * (cmdline "" and cmdline_pending; the iterator sends them then): for a first frame,
 * where reading each process's command line from its memory was half of the
 * iterator's run. */
void procs_defer_idle_cmdlines(struct procs_src *src);

/* Tasks from procs_read: drop their references to the shared strings. */
void procs_release(struct task_sample *tasks, size_t n);

/* The thread group of task id, from ID/status below proc_fd (a thread's directory opens
 * though /proc lists none); 0 when it has none (gone, never a task). */
pid_t procs_tgid_of(int proc_fd, pid_t id);

/* Tasks built elsewhere (replay) whose cmdline strings are plain malloc'd ones. */
void procs_free(struct task_sample *tasks, size_t n);
void procs_close(struct procs_src *src);

#endif
