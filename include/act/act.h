/* SPDX-License-Identifier: GPL-2.0-or-later */
/* act/act.h: the only code that changes the machine.
 *
 * The actions, each called by the screen only after the operator confirmed it:
 *   - switch a device's I/O scheduler (and nr_requests, which every switch resets);
 *   - set a process's I/O priority on every one of its threads;
 *   - turn delay accounting (kernel.task_delayacct) on or off;
 *   - give back the space a deleted file still holds: signal its holder, or truncate it
 *     through the holder's descriptor (optionally copying it first).
 * Each one re-reads what it wrote and reports the kernel's real answer; a failed step
 * undoes the steps before it, so a failure leaves the machine as it was.
 *
 * In read-only mode (--read-only, or a build with READ_ONLY=1) every action returns
 * -EROFS before it opens anything for writing.
 */
#ifndef IOTRIAGE_ACT_ACT_H
#define IOTRIAGE_ACT_ACT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "source/blockdev.h"

/* ---- read-only mode ---- */

/* Built read-only: no flag can lift it. */
bool act_built_read_only(void);
void act_set_read_only(void);
bool act_read_only(void);

/* Write text to path below dirfd in one write(2), as sysfs and procfs want it.
 * Refused with -EROFS in read-only mode. Returns 0 or -errno. */
int act_write_at(int dirfd, const char *path, const char *text);

/* ---- the I/O scheduler of a device ---- */

struct sched_state {
    char sched[BD_SCHED_MAX];        /* active; "" when the device has no scheduler file */
    char list[BD_NSCHED][BD_SCHED_MAX];
    unsigned nsched;
    long nr_requests;                /* -1 unknown */
    long queue_depth;                /* tags of hardware queue 0 (mq/0/nr_tags); -1 unknown */
};

/* Read queue/scheduler, queue/nr_requests and mq/0/nr_tags of disk `disk` under sys_root
 * ("/sys" when NULL). Returns 0 or -errno. */
int sched_read(const char *sys_root, const char *disk, struct sched_state *out);

/* Pure: the nr_requests the kernel sets when `sched` becomes active on a queue
 * `queue_depth` deep: the depth under none, 2 x min(depth, 128) under any scheduler
 * (blk_mq_default_nr_requests in 6.18). -1 when the depth is unknown. */
long sched_default_nr_requests(const char *sched, long queue_depth);

/* Pure: may nr_requests be `nr` under `sched`? Under none at most the queue depth, under a
 * scheduler at most 2048 (block/blk-sysfs.c: queue_requests_store). */
bool sched_nr_requests_valid(const char *sched, long nr, long queue_depth);

/* What the switch did, as sysfs shows it afterwards. */
struct sched_outcome {
    struct sched_state before, after;
    int  err;                        /* 0, or -errno of the step that failed */
    bool rolled_back;                /* a later step failed: the earlier ones were undone */
    char msg[256];                   /* one line for the operator */
};

/* Switch disk to `to`; when keep_nr > 0, then write nr_requests = keep_nr (the switch
 * reset it). `expect` is what the operator saw when confirming: when the device has
 * changed since, nothing is written (-ESTALE). Returns out->err. */
int sched_apply(const char *sys_root, const char *disk, const struct sched_state *expect,
                const char *to, long keep_nr, struct sched_outcome *out);

/* Put disk back as b shows it, writing only what differs: the scheduler first (which
 * resets nr_requests), then nr_requests when b knows it. Blocks like sched_apply (run it
 * in a child, or where waiting is harmless: the trial's guardian). 0 or -errno. */
int sched_restore(const char *sys_root, const char *disk, const struct sched_state *b);

/* ---- work in a child process (act/child.c) ----
 * An action that may block on a stuck disk runs in a child that sends back one report (a
 * struct of at most PIPE_BUF bytes, one atomic write) through a pipe; the caller polls
 * the read end and never waits. The child ignores SIGINT, SIGQUIT, SIGHUP and SIGPIPE and
 * has its standard streams on /dev/null: a caller that quits leaves it to finish what
 * was confirmed. */
struct act_child {
    pid_t  pid;                      /* the child; 0 when none */
    int    fd;                       /* read end, non-blocking, close-on-exec; -1 when none */
    double started;                  /* CLOCK_MONOTONIC */
};
/* Runs in the child: fill report (zeroed, `size` bytes as given to act_child_start). */
typedef void (*act_child_fn)(void *ctx, void *report);
/* Fork the child that runs fn(ctx, report) and writes the report back. 0, or -errno
 * when no child could be started (then nothing was done). */
int  act_child_start(struct act_child *c, act_child_fn fn, void *ctx, size_t size);
/* Without blocking: 1 when the report was read (the child reaped, c over), 0 while the
 * child works, -errno when it ended without a report (how says how; report zeroed). */
int  act_child_collect(struct act_child *c, void *report, size_t size, char *how, size_t howlen);
/* Stop listening without waiting: the child goes on alone. */
void act_child_end(struct act_child *c);

/* ---- the switch in a child process ----
 *
 * Writing queue/scheduler (and nr_requests) freezes the queue: the writer sleeps in D
 * state (blk_mq_freeze_queue_wait) until every request in flight has completed, on a
 * hung disk forever, and no signal, not even SIGKILL, ends that sleep. Reading the
 * queue's files meanwhile does not wait (measured on 6.18). So the screen never writes
 * itself: sched_start forks a child that runs sched_apply and sends the outcome back
 * through a pipe. The caller polls job->fd and may quit without waiting: the child then
 * finishes the switch (and its undo on failure) alone, when the requests drain. */
struct sched_job {
    struct act_child child;          /* child.pid 0 when no job */
    char   disk[BD_NAME_MAX];
    char   to[BD_SCHED_MAX];
};

/* Fork the child that runs sched_apply(sys_root, disk, expect, to, keep_nr). Returns 0,
 * or -errno when no child could be started (then nothing was written). */
int sched_start(struct sched_job *job, const char *sys_root, const char *disk,
                const struct sched_state *expect, const char *to, long keep_nr);

/* Without blocking: 1 when the child reported (out is its outcome; the job is over and
 * the child reaped), 0 while it still waits, or -errno when it ended without a report
 * (out->msg says how; out->after re-read from sysfs). */
int sched_collect(struct sched_job *job, const char *sys_root, struct sched_outcome *out);

/* Stop listening without waiting: the child goes on alone. The job is over. */
void sched_abandon(struct sched_job *job);

/* Pure: how long the device has certainly made no progress. hist holds the device's last
 * n intervals, oldest first: completions (reads + writes) and busy time (%util) each.
 * When the newest intervals completed nothing while the device was busy, the requests in
 * flight at their start are still in flight: the oldest has waited at least their total
 * length. Returns that many seconds (0 when the last interval completed something or was
 * idle, NAN when unknown). */
struct sched_interval { double completions, util, secs; };
double sched_stalled_s(const struct sched_interval *hist, size_t n);

/* A udev rule that sets scheduler and nr_requests when the device appears, matched on
 * its kernel name (and on its wwid when the device has one). Ready to copy into a
 * file under /etc/udev/rules.d/; iotriage writes no file. */
void sched_udev_rule(char *buf, size_t n, const char *sys_root, const char *disk, const char *sched,
                     long nr_requests);

/* ---- the I/O priority of a process ---- */

#define PRIO_FAIL_MAX 8

struct prio_outcome {
    unsigned nthreads;               /* threads found */
    unsigned nset;                   /* set and read back equal */
    unsigned nfail;
    struct { pid_t tid; int err; } fail[PRIO_FAIL_MAX];   /* the first failures */
    int  err;                        /* 0, or -errno when nothing could be tried */
    char msg[256];
};

/* Set raw priority `raw` (IOPRIO_MAKE) on every thread of process `pid` (threads that
 * appear meanwhile included) and read each back with ioprio_get. `start_ticks` is the
 * process's start time as sampled: a different process under the same pid is refused
 * (-ESRCH). proc_root "/proc" when NULL. Returns out->err, or -EIO when some thread
 * failed. */
int prio_apply(const char *proc_root, pid_t pid, unsigned long long start_ticks, int raw,
               struct prio_outcome *out);

/* The start time (field 22 of /proc/PID/stat) of process pid: 0 or -errno. */
int prio_start_ticks(const char *proc_root, pid_t pid, unsigned long long *out);

/* ---- delay accounting ---- */

/* kernel.task_delayacct: 1, 0, or -errno. */
int delayacct_get(const char *proc_root);
/* Write it and read it back. Returns 0 or -errno. */
int delayacct_set(const char *proc_root, bool on);

/* ---- space held by a deleted-but-open file (issue #20) ---- */

/* The file as the operator saw it (struct fs_deleted_file and one of its holders): every
 * action checks first that /proc/PID/fd/FD is still a regular file (dev, ino) with no
 * name left, and refuses with -ESTALE otherwise (closed, reopened, the pid reused). */
struct fsfix_target {
    pid_t    pid;
    int      fd;
    dev_t    dev;
    ino_t    ino;
    unsigned long long start_ticks;  /* the holder's start time as sampled; 0: unchecked */
    const char *mount;               /* its filesystem's mount point, for statvfs */
};

struct fsfix_outcome {
    int      err;                    /* 0 or -errno */
    bool     space_known;            /* both statvfs worked */
    uint64_t avail_before, avail_after;   /* f_bavail x f_frsize of the mount */
    int64_t  freed;                  /* avail_after - avail_before (bytes; may be <= 0 while
                                      * other holders keep the file or writers go on) */
    uint64_t size_before;            /* st_size when checked */
    uint64_t blocks_before;          /* st_blocks x 512 when checked */
    uint64_t copied;                 /* bytes copied first (truncate with copy_to) */
    int      append;                 /* the holder's fd has O_APPEND: 1, 0, -1 unknown */
    int      writes;                 /* ... is open for writing: 1, 0 (reads only), -1 unknown */
    bool     released;               /* signal: the holder's fd no longer holds the file */
    bool     after_known;            /* the holder's fd still held the file afterwards: */
    uint64_t size_after, blocks_after;    /* its st_size and st_blocks x 512 then */
    char     msg[320];               /* one line for the operator */
};

/* Send signal sig (SIGHUP is what most daemons reopen their logs on) to the holder, then
 * watch its fd for up to wait_s seconds (polled every 50 ms) until it no longer holds the
 * file, and measure the space. Refused with -EROFS in read-only mode. Returns out->err. */
int fsfix_signal(const char *proc_root, const struct fsfix_target *t, int sig, double wait_s,
                 struct fsfix_outcome *out);

/* Truncate the file to 0 through the holder's descriptor (open /proc/PID/fd/FD for
 * writing, check that what was opened is the file, ftruncate). With copy_to (NULL: none),
 * first copy its contents there: created with O_EXCL (an existing path is refused with
 * -EEXIST, nothing truncated), read through the fd link; a failed copy is removed and
 * nothing is truncated. A writer without O_APPEND goes on at its old offset: the file
 * becomes sparse at its old size, the space comes back, the size does not (out->append
 * and the message say so). Refused with -EROFS in read-only mode. Returns out->err. */
int fsfix_truncate(const char *proc_root, const struct fsfix_target *t, const char *copy_to,
                   struct fsfix_outcome *out);

/* Pure: is st the target file, still without a name? */
struct stat;
bool fsfix_is_target(const struct stat *st, dev_t dev, ino_t ino);

/* ---- the space actions in a child process ----
 *
 * A copy of a large file to a slow disk, a truncate on a filesystem that stalls, and the
 * seconds fsfix_signal watches the holder's fd would all freeze the screen that waited
 * for them. So, as with the scheduler switch (sched_start), the screen never runs them
 * itself: fsfix_start forks a child that runs one and sends the outcome back through a
 * pipe; the caller polls job->fd. A caller that quits without waiting leaves the child
 * to finish what was confirmed (the copy, then the truncate) alone. */
enum fsfix_kind { FSFIX_SIGNAL, FSFIX_TRUNCATE };
struct fsfix_job {
    struct act_child child;          /* child.pid 0 when no job */
    enum fsfix_kind kind;
};

/* Fork the child that runs fsfix_signal(proc_root, t, sig, wait_s) or
 * fsfix_truncate(proc_root, t, copy_to). Returns 0, or -errno when no child could be
 * started (then nothing was done). */
int fsfix_start(struct fsfix_job *job, enum fsfix_kind kind, const char *proc_root,
                const struct fsfix_target *t, int sig, double wait_s, const char *copy_to);

/* Without blocking: 1 when the child reported (out is its outcome; the job is over, the
 * child reaped), 0 while it still works, or -errno when it ended without a report
 * (out->msg says how; what it did is unknown). */
int fsfix_collect(struct fsfix_job *job, struct fsfix_outcome *out);

/* Stop listening without waiting: the child goes on alone. The job is over. */
void fsfix_abandon(struct fsfix_job *job);

/* ---- what a signal will do to the holder ---- */

/* Pure: a signal by name ("HUP", "SIGhup", "RTMIN+2") or number; 0 when s names none. */
int fsfix_sig_parse(const char *s);

/* Pure: what the kernel does with sig when the process has no handler: "terminates it",
 * "terminates it (and dumps core)", "stops it", "ignores it", "continues it". */
const char *fsfix_sig_default(int sig);

/* How process pid handles sig, from the SigBlk, SigIgn and SigCgt lines of its status
 * (the main thread's mask for SigBlk). */
enum fsfix_disp { FSD_UNKNOWN, FSD_CAUGHT, FSD_IGNORED, FSD_DEFAULT };
enum fsfix_disp fsfix_sig_disposition(const char *proc_root, pid_t pid, int sig, bool *blocked);

/* Pure: the hexadecimal mask on the line starting with key ("SigCgt:") of a
 * /proc/PID/status text buf[0, len). Returns 0 or -EINVAL. */
int fsfix_status_mask(const char *buf, size_t len, const char *key, uint64_t *mask);

#endif
