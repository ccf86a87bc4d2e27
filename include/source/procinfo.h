/* SPDX-License-Identifier: GPL-2.0-or-later */
/* source/procinfo.h: one process in depth, for the process view: the process through
 * libproc2, its threads from their own stat and wchan files.
 *
 * The refresh reads every task's stat and io itself (source/procs.h: libproc2's parsing
 * was half of the refresh's cost, docs/performance.md). The process view wants more of
 * one process, once a refresh: where each thread sleeps (wchan: io_schedule, or
 * blk_mq_get_tag when it waits for a free request, the lottery), its state, its cgroup
 * (where io.weight and io.max would go), memory and major faults (reads that page faults
 * make). That is what libproc2 is for: many fields of a few tasks, read by name.
 */
#ifndef IOTRIAGE_SOURCE_PROCINFO_H
#define IOTRIAGE_SOURCE_PROCINFO_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "source/cgroupfs.h"

struct procinfo_thread {
    pid_t tid;
    char  comm[64];
    char  state;                     /* R S D ...; '?' unknown */
    char  wchan[48];                 /* kernel function it sleeps in; "" running or unknown */
    int   nice, policy;
};

struct procinfo {
    int    err;                      /* 0, or -errno (-ESRCH: the process is gone) */
    char   state;
    char   wchan[48];
    char   cgroup[CG_PATH_MAX + 8];    /* v2 path, or "blkio:" and the v1 one; "" unknown;
                                      * untrusted (names chosen by whoever made it) */
    long   rss_kb, swap_kb;          /* -1 unknown (a kernel thread has none) */
    long long maj_flt;               /* -1 unknown */
    double elapsed_s;                /* since it started; negative when unknown */
    struct procinfo_thread *threads; /* the leader first, then by tid */
    size_t nthreads;                 /* kept (at most max_threads) */
    size_t threads_total;            /* found */
};

struct procinfo_src;

int  procinfo_open(struct procinfo_src **out);
/* Read process pid and up to max_threads of its threads: every thread is counted
 * (threads_total, one readdir), and those kept are the leader, then the tids in first[]
 * (the caller's choice, in its order: e.g. those that waited on I/O; absent ones are
 * skipped), then the lowest tids. Only the kept ones are read, so a process of 5,000
 * threads costs a readdir plus max_threads reads. out->threads is malloc'd (free with
 * procinfo_free). Returns out->err. */
int  procinfo_read(struct procinfo_src *s, pid_t pid, size_t max_threads, const pid_t *first, size_t nfirst,
                   struct procinfo *out);
void procinfo_free(struct procinfo *p);
void procinfo_close(struct procinfo_src *s);

#endif
