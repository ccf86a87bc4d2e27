/* SPDX-License-Identifier: GPL-2.0-or-later */
/* source/threadstate.h: the state and wait channel of threads, sampled, for an estimate of
 * their I/O wait where no measurement exists (no taskstats figure, no BPF lens).
 *
 * A thread in state D (uninterruptible sleep, /proc/PID/task/TID/stat field 3) whose wait
 * channel (/proc/PID/task/TID/wchan) is an I/O wait counts as waiting for I/O at that
 * moment; the share of samples that do is the estimate of its share of time waiting
 * (docs/verdicts.md "Where IODLY comes from"). It is a sample, not a measurement: a wait
 * shorter than the sampling period may be missed, and it is marked as an estimate
 * wherever it is shown.
 *
 * What the reader gets (Linux 6.18, kernel.kptr_restrict 0 or 1): root, or the owner of
 * the process, reads the wait channel's symbol name ("__blkdev_direct_IO_simple",
 * "folio_wait_bit_common"), or "0" while the thread runs; anyone else reads "0" for
 * every thread (the kernel shows it only to who may ptrace-read it). The kernel skips
 * scheduler functions (io_schedule, schedule) when it names the wait, so the name is the
 * caller that waits. /proc/PID/task/TID/stack names the same frame first and is root's
 * only: it is not read. A D sleep whose name cannot be had (hidden from us, or "0"
 * because the thread woke between the two reads) counts as I/O wait: the threads sampled
 * are those of processes doing I/O, and the figure is then an upper bound (docs).
 * The wait channel is read only for a thread found in D: a round costs one read per
 * thread, two for one in D, and now and then a directory listing per process.
 *
 * Contract
 * - The parsers and taskstate_classify are pure: no I/O, any bytes (no terminator
 *   needed), never crash; tests and fuzzers drive them.
 * - taskstate_sample() reads, for each process given, its threads' stat (and wchan when
 *   in D), at most TS_READS_MAX files in one round, starting at the process `start` so
 *   that a budget too small for all of them still reaches each in turn. It adds one
 *   round to *acc. A thread's files stay open between rounds (at most TS_FILES_MAX in
 *   all, and an eighth of the soft fd limit; the rest are opened and closed each time),
 *   and are closed when its process is no longer given or the thread exits. A process's
 *   task/ directory is listed in its first round and every TS_RELIST_ROUNDS after (a
 *   thread started in between is sampled from the next listing). It never blocks on
 *   anything but procfs reads; a process or thread that went away is skipped.
 * - struct ts_counts is owned by its user: zero it to start, ts_counts_free() to end.
 */
#ifndef IOTRIAGE_SOURCE_THREADSTATE_H
#define IOTRIAGE_SOURCE_THREADSTATE_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#define TS_TARGETS_MAX 64            /* processes sampled in a round */
#define TS_READS_MAX   256           /* files read in a round: two per thread */
#define TS_MIN_ROUNDS  3             /* fewer rounds of a process: its estimate is unknown */
#define TS_RELIST_ROUNDS 10          /* a process's threads are listed again this often */
#define TS_FILES_MAX   128           /* files kept open between rounds (two a thread) */

/* One sample of one thread. */
enum ts_class {
    TS_NOT_WAITING,                  /* running, or sleeping interruptibly */
    TS_IO_WAIT,                      /* D, in an I/O wait (or a wait whose name is hidden) */
    TS_OTHER_WAIT,                   /* D, in a wait that is not I/O (a mutex, a fault...) */
};

/* Pure: the state letter of a /proc/.../stat text (the field after the last ')'), or 0. */
char taskstate_parse_state(const char *buf, size_t len);

/* Pure: is this wait channel name (a wchan text; a trailing newline is ignored) one of
 * the kernel's waits for block I/O? The list is in threadstate.c. */
bool taskstate_wchan_is_io(const char *name, size_t len);

/* Pure: is this wait channel name io_uring's wait for completions, which the kernel
 * counts as iowait (PSI io) although the task sleeps interruptibly (S) and may wait on
 * a socket, not a disk? The list is in threadstate.c. */
bool taskstate_wchan_is_uring(const char *name, size_t len);
/* Pure: is it libaio's wait for completions (io_getevents), an interruptible sleep that
 * is not iowait: an asynchronous reader's wait that PSI and the delays never see? */
bool taskstate_wchan_is_aio(const char *name, size_t len);

/* Without the lens, the snapshot reads the wait channel of the tasks in S while the io
 * pressure's avg10 is at least this % (a gate: the rule itself judges the interval's
 * pressure), at most URING_READS_MAX of them a refresh. */
#define URING_READ_PSI_MIN 5.0
#define URING_READS_MAX    1024

/* Pure: one sample's class from the state letter and the wait channel's text (wchan
 * NULL: it could not be read). */
enum ts_class taskstate_classify(char state, const char *wchan, size_t wlen);

/* Counts over a period of rounds. */
struct ts_thread_count {
    pid_t    tid, tgid;
    unsigned io;                     /* samples in TS_IO_WAIT */
    unsigned dstate;                 /* samples in D, of any wait */
};
struct ts_proc_count {
    pid_t    tgid;
    unsigned rounds;                 /* rounds in which its threads were read */
};
struct ts_counts {
    struct ts_thread_count *t;       /* by tid, unordered */
    size_t nt, capt;
    struct ts_proc_count *p;
    size_t np, capp;
    unsigned rounds;                 /* rounds taken */
    unsigned long reads;             /* files read in them (cost) */
};
void ts_counts_free(struct ts_counts *c);
void ts_counts_clear(struct ts_counts *c);   /* keep the memory, drop the counts */
/* Pure: add one thread's sample / one process's round. */
void ts_counts_add(struct ts_counts *c, pid_t tid, pid_t tgid, enum ts_class cls);
void ts_counts_round(struct ts_counts *c, pid_t tgid);
/* Pure: add all of src into dst. */
void ts_counts_merge(struct ts_counts *dst, const struct ts_counts *src);

/* Pure: the estimate, in percent of the period: the thread tid's (tgid 0) or the whole
 * process tgid's (tid 0: the sum over its threads, as taskstats sums a process's
 * threads), over the rounds its process was read. NAN when it was read in fewer than
 * TS_MIN_ROUNDS rounds. */
double ts_counts_share(const struct ts_counts *c, pid_t tid, pid_t tgid);
/* Was a thread of tgid seen in D? */
bool ts_counts_saw_d(const struct ts_counts *c, pid_t tgid);

struct taskstate;
/* proc_root: NULL for /proc. Returns 0 or -errno. */
int  taskstate_open(struct taskstate **out, const char *proc_root);
void taskstate_close(struct taskstate *ts);
/* Files it holds open now. */
size_t taskstate_files(const struct taskstate *ts);
/* One round over the processes tgids[0..n) (see the contract). Returns the files read. */
unsigned taskstate_sample(struct taskstate *ts, const pid_t *tgids, size_t n, size_t start,
                          struct ts_counts *acc);

#endif
