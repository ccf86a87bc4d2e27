/* source/procs.h: processes or threads, their identity, scheduling and I/O counters.
 *
 * The process list and the stat/status fields come from libproc2. The I/O counters are
 * read from /proc/PID/io (or /proc/PID/task/TID/io for threads) by our own pure parser,
 * because a failed read must be told apart from zero: EACCES means "not permitted",
 * ENOENT/ESRCH "exited", and both leave the rates unknown.
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

struct task_sample {
    pid_t    id;                 /* pid, or tid in threads mode */
    pid_t    tgid;
    unsigned long long start_ticks;
    char     comm[TASK_COMM_MAX];
    char    *cmdline;            /* malloc'd, "" for kernel threads; owned by the snapshot */
    uid_t    uid;
    char     user[TASK_USER_MAX];
    int      nice;
    int      policy;             /* SCHED_* */
    char     state;
    int      nlwp;               /* threads in the process (1 in threads mode) */
    bool     kthread;            /* a kernel thread (PF_KTHREAD): no files, no fd scan */
    int      io_err;             /* 0, or -errno reading the io file (counters unknown) */
    struct proc_io io;
    int      ioprio_raw;         /* ioprio_get value, or -errno */
    struct delay_sample delay;   /* filled by the snapshot from taskstats */
};

/* Pure: parse the text of /proc/PID/io. Returns 0 when every field was present, else
 * -EINVAL (a truncated file is not half data). */
int procio_parse(const char *buf, size_t len, struct proc_io *out);

struct procs_src;

/* Create the libproc2 context. threads: one entry per thread instead of per process.
 * Returns 0 or -errno, with a reason in err. */
int  procs_open(struct procs_src **out, bool threads, char *err, size_t errlen);

/* Read every task (or those whose pid/tgid is in `only`, when nonly > 0). *tasks is a
 * malloc'd array sorted by id; free with procs_free. proc_fd is the /proc directory used
 * for the io files. Returns 0 or -errno. */
int  procs_read(struct procs_src *src, int proc_fd, const pid_t *only, size_t nonly,
                struct task_sample **tasks, size_t *n);
void procs_free(struct task_sample *tasks, size_t n);
void procs_close(struct procs_src *src);

#endif
