/* SPDX-License-Identifier: GPL-2.0-or-later */
/* source/lens.h: the BPF lens (issue #13), iowait per task and the stages of each request
 * per device and priority, measured in the kernel (src/bpf/kern/waits.bpf.c,
 * requests.bpf.c, writeback.bpf.c).
 *
 * lens_open() loads and attaches the BPF program through BTF tracepoints (no tracefs
 * needed), through the light skeleton first, then libbpf's (source/bpfload.h,
 * IOTRIAGE_BPF_LOADER); what it reads does not depend on which loaded it. It fails with -errno and one line saying why the lens is off: no privilege
 * (root, or CAP_BPF with CAP_PERFMON), no kernel BTF (/sys/kernel/btf/vmlinux), or the
 * kernel refused the program. Nothing is pinned: the links and maps are held by file
 * descriptors of this process and go when it exits, is killed or crashes.
 *
 * lens_read() fills a reading with cumulative counters since lens_open (copies: the
 * reading owns its arrays and stays valid after the next read; free it with
 * lens_reading_free).
 *
 * Duty cycle (docs/devices.md "The lens on a fast machine"): while the machine's block
 * requests come faster than LENS_TIMED_RATE a second, a thread (lens_duty.c) attaches the
 * per-request programs (bio submission to completion) and the scheduler's (the task
 * waits: those that begin in a window, followed to their end or to the drain's) only
 * LENS_DUTY_WINDOW_NS of every LENS_DUTY_PERIOD_NS; the exit and writeback programs stay
 * attached. A
 * request issued inside a window is followed to its completion (the submission side goes
 * first, the completion side once the requests counted in flight have completed, or after
 * LENS_DUTY_DRAIN_NS), then every in-flight mark and request entry left is cleared, so
 * that nothing of one window reaches the next. The readings carry the time the programs
 * were detached (measured, CLOCK_MONOTONIC, around the attach and detach calls): the
 * interval's figures are then those of the windows, and lens_duty says which share of it
 * they cover. IOTRIAGE_LENS_DUTY=1 keeps them attached at any rate. Readers take differences of two readings; the helpers marked
 * "pure" below do that and never touch the kernel, so unit tests run without BPF.
 * Unknown is NAN, never 0.
 */
#ifndef IOTRIAGE_SOURCE_LENS_H
#define IOTRIAGE_SOURCE_LENS_H

#include <linux/types.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "bpf/lens_maps.h"

/* Time blocked in iowait of one thread (tids) or thread group (tgids). */
struct lens_wait_row {
    pid_t    id;
    pid_t    tgid;
    uint64_t wait_ns;                /* finished waits plus the one in progress, if any */
    uint64_t waits;                  /* finished waits */
    uint64_t intr_ns;                /* the part of wait_ns slept interruptibly (io_uring's
                                      * completion wait: lens_maps.h), the same way; the
                                      * rest is block waits in D */
};

struct lens_stage_sum {
    uint64_t count, sum_ns;
    uint64_t hist[LENS_HIST];        /* log2 buckets of us: see lens_maps.h */
};

/* One device (a whole disk) at one priority. */
struct lens_devprio {
    unsigned major, minor;
    unsigned prio;                   /* class << 13 | level */
    struct lens_stage_sum st[LENS_NSTAGES];
};

/* One device's depth figures (lens_maps.h: struct lens_dev_val). */
struct lens_devstat {
    unsigned major, minor;
    int64_t  inflight;               /* issued - done (+ issues the lens missed) */
    uint64_t issued, done;           /* requests issued, and of them left the device */
    uint64_t n, sd, sdd, sy, sdy;    /* depth/device-time moments, time in us */
    uint64_t untracked;
    uint64_t sched_in[4], sched_out[4];  /* by class: inserted, issued from the scheduler */
    uint64_t min_dev_ns;             /* fastest device time since the lens started; 0 none */
    uint64_t timed;                  /* completions timed (the sample; lens_maps.h) */
};

/* Bytes submitted by one thread group to one device (partition or disk), counted when the
 * bio is submitted, in the submitter's context (issue 14). tgid LENS_SUBMIT_KERNEL (0):
 * submitted by a kernel thread (writeback by the flusher, a journal thread). */
struct lens_submit_row {
    pid_t    tgid;
    unsigned major, minor;
    unsigned prio;                   /* the bios' priority (class << 13 | level; 0 none) */
    uint64_t bytes, bios;
    /* Its timed requests' time from submission to completion, summed (ns), and their
     * number, both weighted as sampled (bpf/requests.h lens_submit_val): requests in
     * flight on average = wait_ns / the interval (Little's law), latency = wait_ns / rqs. */
    uint64_t wait_ns, rqs;
};

/* Bytes kernel threads submitted to one device (partition or disk) for one dirtier
 * (lens_maps.h: struct lens_wb_key): tgid and cgid 0 when no dirtier was remembered for
 * the pages (unknown); blkcg the non-root v2 cgroup the kernel charged, else 0. */
struct lens_wb_row {
    unsigned major, minor;
    pid_t    tgid;
    uint64_t cgid, blkcg;
    uint64_t bytes, bios;
    char     comm[LENS_COMM];        /* the dirtier's name when it dirtied; "" unknown */
};

/* The duty cycle (above): a window of 50 ms every 800 ms, 1/16 of the time (the choice:
 * docs/performance.md "The duty cycle"); the rate that starts it is LENS_TIMED_RATE a
 * second over a probe (LENS_DUTY_PROBE_NS), twice in a row; it stops when the windows'
 * rate falls under LENS_DUTY_LOW twice in a row (hysteresis: a rate near the threshold
 * does not flap). */
#define LENS_DUTY_PERIOD_NS 800000000ull
#define LENS_DUTY_WINDOW_NS 50000000ull
#define LENS_DUTY_DRAIN_NS  200000000ull
#define LENS_DUTY_LOW       (LENS_TIMED_RATE / 2)
#define LENS_DUTY_CHECKS    2
/* While not cycling, the rate is measured over probes this long: a monitor started on a
 * machine already at full rate (an incident) engages the cycle after two, 200 ms, where
 * probes of a period kept every request program watching the first 1.6-2.4 s. Stopping
 * still takes two windows (1.6 s) under LENS_DUTY_LOW: a burst costs at most that. */
#define LENS_DUTY_PROBE_NS  100000000ull

/* The duty cycle's controller (lens_duty.c's thread runs it; pure, so that its arithmetic is
 * unit-tested). */
struct lens_duty_ctl {
    bool cycling;                    /* windows every period; else always watching */
    int  hits;                       /* phases in a row past the threshold */
};
/* The length of the next phase: a probe of the rate while not cycling
 * (LENS_DUTY_PROBE_NS), a period (a window, then the pause) while cycling. */
uint64_t lens_duty_phase_ns(const struct lens_duty_ctl *c);
/* Fed the requests issued over the phase that just ended (span_ns of watching: the probe,
 * or the window), the controller moves on; true when c->cycling changed. Starts above
 * LENS_TIMED_RATE a second LENS_DUTY_CHECKS probes in a row, stops under LENS_DUTY_LOW
 * LENS_DUTY_CHECKS windows in a row. An empty span changes nothing. */
bool lens_duty_step(struct lens_duty_ctl *c, uint64_t span_ns, uint64_t requests);

struct lens_reading {
    double   mono;                   /* CLOCK_MONOTONIC seconds of the read */
    double   since;                  /* CLOCK_MONOTONIC seconds the lens was attached */
    /* Seconds since `since` that the per-request programs were detached (duty cycle,
     * above), up to `mono`; 0 when they never were. */
    double   detached_s;
    bool     cycling;                /* the duty cycle runs at the read */
    struct lens_wait_row *tids;      /* sorted by id */
    size_t   ntids;
    struct lens_wait_row *tgids;     /* sorted by id */
    size_t   ntgids;
    bool     tids_full, tgids_full;  /* a wait map was (nearly) full: an absent task may
                                      * have found no room (or, LRU, been evicted) */
    struct lens_devprio *dp;
    size_t   ndp;
    struct lens_devstat *devs;
    size_t   ndevs;
    struct lens_submit_row *subs;    /* sorted by lens_submit_cmp */
    size_t   nsubs;
    struct lens_wb_row *wbs;         /* sorted by lens_wb_cmp */
    size_t   nwbs;
    bool     dirty_on;               /* pages' dirtiers are traced: the wbs rows name them */
    uint64_t dropped;                /* events the bounded maps could not hold */
};

struct lens;

/* Load and attach. 0, or -errno with the reason in err (e.g. "not root and no
 * CAP_BPF+CAP_PERFMON", "no kernel BTF at /sys/kernel/btf/vmlinux: ..."). */
int  lens_open(struct lens **out, char *err, size_t errlen);
/* Read every map into *out (zeroed first). 0, or -errno (out then holds nothing). */
int  lens_read(struct lens *l, struct lens_reading *out);
void lens_reading_free(struct lens_reading *r);
/* Deep copy (for a snapshot that must outlive the next read). 0 or -ENOMEM. */
int  lens_reading_copy(const struct lens_reading *src, struct lens_reading *dst);
/* CLOCK_MONOTONIC seconds the lens was attached (lens_reading.since of its readings). */
double lens_since(const struct lens *l);
/* Which loader loaded it: "light" or "libbpf" (source/bpfload.h). */
const char *lens_loader(const struct lens *l);
void lens_close(struct lens *l);

/* ---- Pure helpers (src/source/lens_calc.c) ---- */

/* The entries of a map keyed by task (or process): twice the tasks the machine has, as a
 * power of two within [lo, hi] (both powers of two); tasks 0 (unknown): hi. An LRU
 * map is preallocated at load, so its size is load time and locked memory; a hash map
 * allocated entry by entry still makes its buckets whole. */
uint32_t lens_entries_for(size_t tasks, uint32_t lo, uint32_t hi);

/* The sets of the request cache (lens_maps.h: struct lens_rq_set, 2 ways each) for disks
 * that hold `requests` at once in all (nr_requests times hardware queues, summed): a
 * power of two, twice that many sets (four ways a request: few evictions while every
 * request is in flight and timed), within [LENS_RQ_SETS_MIN, LENS_RQ_SETS]; requests 0
 * (unknown): LENS_RQ_SETS. */
uint32_t lens_rq_sets_for(size_t requests);

/* The q-quantile (0 < q < 1) of a log2 histogram, in milliseconds, interpolated within
 * the bucket; NAN when it is empty. */
double lens_hist_quantile(const uint64_t *hist, size_t nbuckets, double q);
/* cur - prev, field by field. -ERANGE when a counter went backwards (out zeroed). */
int    lens_stage_delta(const struct lens_stage_sum *prev, const struct lens_stage_sum *cur,
                        struct lens_stage_sum *out);
/* to += s, field by field (two priorities' or two intervals' requests together). */
void   lens_stage_add(struct lens_stage_sum *to, const struct lens_stage_sum *s);
/* Every count of a stage times f, each bucket rounded, the count their sum (so that the
 * buckets still add up to it): the duty cycle's windows scaled to the interval. */
void   lens_stage_scale(struct lens_stage_sum *s, double f);
/* Mean of a stage in ms; NAN when no request finished it. */
double lens_stage_mean_ms(const struct lens_stage_sum *s);
/* A priority as iotriage prints it: "be/4", "rt/0", "idle", "none". */
const char *lens_prio_name(unsigned prio, char *buf, size_t len);
/* Find rows (binary search on the sorted id); NULL when absent. */
const struct lens_wait_row *lens_wait_find(const struct lens_wait_row *rows, size_t n, pid_t id);
const struct lens_devstat *lens_devstat_find(const struct lens_reading *r, unsigned major, unsigned minor);

/* The depth at issue against the device time over an interval (lens_maps.h moments). */
struct lens_depth_fit {
    double n;                        /* requests in the fit */
    double depth;                    /* mean depth at issue (itself included) */
    double device_ms;                /* mean device time */
    double depth_sd;                 /* standard deviation of the depth */
    double slope_ms;                 /* extra device time per request ahead, ms */
    double elasticity;               /* d ln(time) / d ln(depth) at the mean; NAN: unknown */
};
/* From two readings of one device. -ERANGE on a reset, -ENODATA when nothing finished. */
int    lens_depth_fit(const struct lens_devstat *prev, const struct lens_devstat *cur,
                      struct lens_depth_fit *out);

/* One device over an interval, all priorities together, and what the lens concludes.
 * Means and quantiles in ms, NAN when unknown. */
struct lens_dev_interval {
    bool   valid;                    /* both readings had the device */
    double requests;                 /* completed in the interval: exact (lens_done), else
                                      * the timed ones weighted */
    double sampled;                  /* share of them timed (lens_sampled_share); below 1 the
                                      * stage figures are a sample's estimates; NAN unknown */
    double duty;                     /* share of the interval the request programs were
                                      * attached (lens_duty); below 1, requests, busy depth
                                      * and counts are the windows' figures scaled up */
    double tag_ms, sched_ms, device_ms, total_ms;         /* means per stage */
    double device_p05_ms, device_p50_ms, device_p99_ms;
    double total_p50_ms, total_p99_ms;
    double busy_depth;               /* requests at the device on average (Little) */
    struct lens_depth_fit fit;
    int    top_class;                /* highest class that completed LENS_SERVED_MIN; -1 none */
    double top_device_ms;            /* its mean device time */
    double top_busy_depth;           /* its requests at the device on average */
    double top_sched_ms;             /* its mean time in the scheduler; NAN: none timed */
    double service_ms;               /* the device's own service time, estimated: its fastest
                                      * request since the lens started, but not below a
                                      * quarter of this interval's p05 (one freak request) */
    double growth;                   /* top_device_ms / service_ms */
    double sched_queue;              /* requests in the scheduler on average: the device's
                                      * aqu-sz (counted from allocation) less busy_depth */
    bool   held_back;                /* the scheduler holds requests while the served class
                                      * alone leaves the device free slots (priority
                                      * honoured, or idling: not saturation) */
    int    held_class;               /* the class held, when the lens saw it; -1: not seen
                                      * (held since before the lens), any class below
                                      * top_class */
    double held_sched_ms;            /* its mean time in the scheduler; NAN: none finished */
    uint64_t held_now;               /* its requests in the scheduler at the reading;
                                      * LENS_HELD_UNKNOWN when the duty cycle ran (the lens
                                      * saw only the windows' inserts) */
    int    saturated;                /* 1, 0, -1 unknown (lens_judge_saturation) */
};

#define LENS_HELD_UNKNOWN UINT64_MAX

/* Thresholds of the lens's saturation verdict (docs/devices.md). */
#define LENS_SAT_MIN_REQS   20     /* requests completed before the lens may judge */
#define LENS_SAT_MIN_DEPTH  1.5    /* fewer at the device on average: free slots */
#define LENS_SAT_GROWTH     2.0    /* served class's device time / service time */
#define LENS_SERVED_MIN     10     /* completions that make a class "served" */
#define LENS_HELD_FACTOR    4.0    /* a lower class's scheduler time this many times ... */
#define LENS_HELD_MIN_MS    1.0    /* ... and at least this: held back */
#define LENS_HELD_QUEUE     1.5    /* requests in the scheduler on average: held back */
#define LENS_SAT_TAG        1.0    /* a wait for a tag (or, by the served class, in the
                                    * scheduler) this many service times: saturated */
#define LENS_FIT_MIN_SD     0.15   /* spread of the depth at issue (sd) below which the
                                    * depth fit says nothing */
#define LENS_SAT_ELASTIC    0.25   /* device time growing at least this fast with the
                                    * depth at issue (elasticity): saturated */

/* Pure: the share of the interval between two readings (prev NULL or without a read
 * time: since the lens started) that the per-request programs were attached, in [0, 1]:
 * 1 when they always were. Counts of requests over the interval are those of this share
 * of it; divided by it they estimate the whole interval's. NAN when the interval is
 * empty. */
double lens_duty(const struct lens_reading *prev, const struct lens_reading *cur);

/* Completions of the device's requests between two readings (prev NULL: since the lens
 * started), exact (lens_devstat.done: a requeued request counts once more). -1 when the
 * count went backwards. */
double lens_done(const struct lens_devstat *prev, const struct lens_devstat *cur);
/* The share of those completions that were timed (lens_maps.h: sampled timing), in
 * [0, 1]; NAN when none completed or the readings do not count timed requests. count:
 * the interval's device-stage count (weighted): with none timed and count > 0, the
 * readings predate the count of timed requests. */
double lens_sampled_share(const struct lens_devstat *prev, const struct lens_devstat *cur,
                          double count);

/* Pure: the interval of device major:minor between two readings (prev may be NULL: since
 * the lens started). Fills *out and judges it; returns 0, or -ENODATA when the device is
 * in neither reading (out->valid false, everything unknown). */
/* aqu_sz: the device's aqu-sz over the same interval (diskstats), NAN when unknown. */
int lens_dev_interval(const struct lens_reading *prev, const struct lens_reading *cur,
                      unsigned major, unsigned minor, double interval_s, double aqu_sz,
                      struct lens_dev_interval *out);
/* 1 saturated, 0 not, -1 unknown, from the interval's figures alone. */
int lens_judge_saturation(const struct lens_dev_interval *d);

/* Order of lens_reading.subs: tgid, then major, minor, prio. */
int    lens_submit_cmp(const void *a, const void *b);
/* The rows of thread group tgid over the interval between two readings, one per device
 * and priority it submitted to in the interval (bytes and bios: cur - prev; a row absent from prev, or
 * smaller there after an eviction, counts its cur figures). Writes at most max rows into
 * out, returns how many there are (0 without prev: no interval). */
size_t lens_submit_interval(const struct lens_reading *prev, const struct lens_reading *cur,
                            pid_t tgid, struct lens_submit_row *out, size_t max);

/* The asynchronous wait of one submitter on one device over an interval of itv_s
 * seconds watched (the duty cycle's share already applied, as for its bytes), from its
 * rows' summed wait_ns and rqs (lens_submit_interval; issue #35; doubles: a layer's rows
 * are shared among its disks, row_parts in snapshot_taskdevs.c): *in_flight its mean
 * number of requests in flight (Little's law: the summed latencies of the requests that
 * completed in the interval over its length), *await_ms their mean latency from
 * submission to completion; NAN both when the interval is empty, *await_ms also when no
 * timed request of it completed (then *in_flight is 0). */
void   lens_submit_wait(double wait_ns, double rqs, double itv_s, double *in_flight,
                        double *await_ms);

/* Order of lens_reading.wbs: major, minor, tgid, cgid, blkcg, comm. */
int    lens_wb_cmp(const void *a, const void *b);
/* Every wbs row over the interval between two readings (bytes and bios cur - prev, rows
 * that moved only; evicted rows as in lens_submit_interval). Writes at most max rows into
 * out, returns how many there are (0 without prev). */
size_t lens_wb_interval(const struct lens_reading *prev, const struct lens_reading *cur,
                        struct lens_wb_row *out, size_t max);

/* Percentage of the interval the task spent in iowait, from two readings of its row
 * (prev NULL: absent before). NAN when the row went backwards (another task got the id). */
double lens_wait_pct(const struct lens_wait_row *prev, const struct lens_wait_row *cur,
                     double interval_s);
/* The part of it slept interruptibly (lens_wait_row.intr_ns: io_uring's completion wait,
 * not a block wait), the same way; NAN also when it exceeds the whole wait. */
double lens_wait_intr_pct(const struct lens_wait_row *prev, const struct lens_wait_row *cur,
                          double interval_s);

#endif
