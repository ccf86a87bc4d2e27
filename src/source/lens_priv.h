/* SPDX-License-Identifier: GPL-2.0-or-later */
/* lens_priv.h: what the parts of the BPF lens's reader share (src/source/: lens.c the
 * loader and the readings, lens_duty.c the duty cycle, lens_waits.c, lens_requests.c and
 * lens_writeback.c the reading of each concern's maps): the lens's state, and the
 * functions one part defines and others call. Not for use outside them (source/lens.h
 * is the interface).
 */
#ifndef IOTRIAGE_LENS_PRIV_H
#define IOTRIAGE_LENS_PRIV_H

#include <pthread.h>

#include "source/lens.h"

struct bpf_program;
struct bpf_link;
struct iotriage_lskel;
struct iotriage_bpf;

/* The request cache is cleared (duty_reset) this many sets a call: 32 KB of zeros kept,
 * not the whole cache's megabyte. */
#define LENS_RQ_CLEAR 256
_Static_assert(LENS_RQ_SETS_MIN % LENS_RQ_CLEAR == 0, "the cache clears in whole blocks");

struct lens_moments {
    __u32 dev;
    __u64 n, sd, sdd, sy, sdy, timed;
};

/* A map as the reader reads it, whichever loader made it: the kernel's own figures for
 * the map behind fd (BPF_OBJ_GET_INFO_BY_FD), so that reading never depends on libbpf's
 * struct bpf_map. */
struct lens_map {
    int   fd;
    __u32 type, key_size, value_size, max_entries;
};

/* The programs that run for every request, which the duty cycle attaches and detaches
 * (lens.h): the scheduler's (a synchronous read switches three times) and the completion
 * first in this table, attached first and detached last. Each attachment or detachment costs 1-4 ms here (the tracepoint's static key is
 * patched on every CPU), so the programs of rarer events stay attached: the merges and
 * the requeue act only on entries of the request cache and on requests counted in flight,
 * which there are none of between windows (duty_reset). */
#define LENS_RQ_PROGS(X) X(lens_switch) X(lens_rq_complete) X(lens_rq_issue) X(lens_rq_insert) X(lens_getrq) \
    X(lens_bio_queue)
enum { RQP_SWITCH, RQP_COMPLETE, RQP_ISSUE, RQP_SUBMIT_FIRST = RQP_ISSUE, RQP_N = 6 };

/* One of them, whichever skeleton loaded it: the light one's program fd and the slot of
 * its link fd (the skeleton's own, closed by its destroy), or libbpf's program and link. */
struct lens_rqprog {
    int prog_fd;
    int *link_fd;
    struct bpf_program *prog;
    struct bpf_link **link;
};

struct lens {
    struct iotriage_lskel *lskel;    /* the light skeleton's, or NULL */
    struct iotriage_bpf *skel;       /* the normal skeleton's, or NULL */
    const char *loader;              /* BPFLOAD_NAME_* of the one that loaded */
    struct lens_map waits_tid, waits_tgid, devprio, submits, wbs;
    const __u64 *dp_used;            /* .bss lens_dp_used[LENS_MAX_DEVPRIO / 64] */
    const struct lens_dev_val *devs; /* .bss lens_devs[LENS_MAX_DEVS] */
    const __u64 *dropped;            /* .bss lens_dropped */
    double since;
    bool dirty_on;               /* a page-dirtying tracepoint is attached */
    int ncpus;                   /* possible CPUs: the copies of a per-CPU map's value */
    /* Scratch for batch lookups, grown with the most entries a map held (dump_room). */
    void  *keys, *vals;
    size_t keys_sz, vals_sz;
    /* The depth moments of each (device, priority) pair of the last read, for summing
     * per device. */
    struct lens_moments *moments;
    size_t nmoments;
    /* The duty cycle (lens.h): its thread, and what it shares with the reader under mu. */
    struct lens_rqprog rqp[RQP_N];
    struct lens_dev_val *devs_rw;    /* the same table, written while detached */
    __u64 *marks, *t0;
    __u32 *issue_seen;
    __u64 *wait_from;                /* .bss lens_wait_from, lens_wait_shut (waits.bpf.c) */
    __u32 *wait_shut;
    int rqs_fd;
    __u32 rq_sets;                   /* the request cache's sets (lens_rq_sets_for) */
    void *rqs_zero;                  /* zeros for LENS_RQ_CLEAR sets of the request cache, */
    __u32 *rqs_keys;                 /* and their keys, for clearing it a block a call */
    pthread_t duty_thread;
    bool duty_started;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    /* The scratch of dump_map and the waits' open entries: held by lens_read and by the
     * duty cycle while it ends the waits its detachment left open (waits_finish). */
    pthread_mutex_t rd;
    bool stop;                       /* under mu: lens_close asks the thread to end */
    bool cycling;                    /* under mu */
    uint64_t detached_ns;            /* under mu: the request programs' detached time, */
    uint64_t detached_from;          /* and when the current detachment began (0: attached) */
};

/* lens.c */
uint64_t mono_ns(void);
size_t lens_percpu_size(size_t vsz, int ncpus);
long dump_map(struct lens *l, const struct lens_map *map);
void percpu_counts(const struct lens *l, long i, uint64_t *bytes, uint64_t *bios);

/* lens_duty.c */
void duty_start(struct lens *l);

/* lens_waits.c */
struct open_wait;
int read_waits(struct lens *l, const struct lens_map *map, uint64_t now,
               struct lens_wait_row **rows, size_t *nrows, bool *full,
               struct open_wait **opens, size_t *nopen);
int add_open_waits(struct lens_reading *out, const struct open_wait *o, size_t no);
void waits_finish(struct lens *l, uint64_t now);

/* lens_requests.c */
int read_devprio(struct lens *l, struct lens_reading *out);
int read_devs(struct lens *l, struct lens_reading *out);

/* lens_writeback.c */
int read_wbs(struct lens *l, struct lens_reading *out);

#endif
