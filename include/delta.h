/* SPDX-License-Identifier: GPL-2.0-or-later */
/* delta.h: two snapshots in, rates out.
 *
 * delta_compute() reads prev and cur and writes only *out and the device baselines in
 * *hist (the one piece of state that outlives a pair of snapshots: the quiet-time await a
 * device showed before, which the `saturated` verdict compares against). It never touches
 * the snapshots, so outputs can hold cur and the result side by side.
 *
 * Unknown is NAN (or -1 for tri-state verdicts), never 0: a rate with no previous sample,
 * a counter that went backwards (a reset), an unreadable source. Outputs print NAN as
 * null / "-".
 */
#ifndef IOTRIAGE_DELTA_H
#define IOTRIAGE_DELTA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "snapshot.h"
#include "source/cgroups.h"
#include "source/ioprio.h"
#include "source/lens.h"
#include "source/threadstate.h"

/* Where a task's io_delay_pct came from: taskstats first (the kernel's delay
 * accounting), else the BPF lens's iowait (source/lens.h), else the estimate from
 * sampled thread states (source/threadstate.h, delta_sampled), else unknown. */
enum delay_source { DELAY_SRC_UNKNOWN, DELAY_SRC_TASKSTATS, DELAY_SRC_BPF, DELAY_SRC_SAMPLED };
/* "taskstats" "bpf" "sampled", NULL unknown */
const char *delay_source_name(enum delay_source s);
struct result;
/* Which sources give this interval's io_delay_pct: bit (1 << DELAY_SRC_x) for each source
 * some task's figure comes from, and the lens's bit whenever the lens is on and taskstats
 * gives nothing (the lens then speaks for every task). For the outputs' headers. */
unsigned delay_sources(const struct result *r);

/* Which rule decided dev_rates.saturated. */
enum sat_source { SAT_SRC_NONE, SAT_SRC_BASELINE, SAT_SRC_LENS, SAT_SRC_DISKS };
/* "baseline" "lens" "disks" (a bio-based layer: the disks below it), NULL none */
const char *sat_source_name(enum sat_source s);

/* Device rates with sysstat's `iostat -x` formulas (rd_stats.c:compute_ext_disk_stats). */
/* Latency per I/O priority on one device over the interval (issue #14; docs/json.md
 * "latency_by_prio"), from the BPF lens's per-(device, priority) histograms: the
 * difference of two readings, one row per priority that completed at least one request
 * in the interval. Times in ms; NAN when no request finished that stage. */
struct prio_stage {
    double   count;                  /* requests that finished the stage in the interval */
    double   mean_ms, p50_ms, p90_ms, p99_ms;
    uint64_t hist[LENS_HIST];        /* the interval's log2 buckets of us (lens_maps.h) */
};
struct prio_latency {
    unsigned prio;                   /* class << 13 | level (source/lens.h) */
    char     name[8];                /* as iotriage prints it: "be/4", "idle" (lens_prio_name) */
    struct prio_stage st[LENS_NSTAGES];   /* LENS_ST_TAG, _SCHED, _DEVICE, _TOTAL */
};

struct dev_rates {
    const struct dev_sample *dev;    /* points into cur */
    bool   valid;                    /* previous sample existed, same registration, no reset */
    bool   reset;                    /* device re-registered: a counter went backwards, or
                                      * its sysfs identity changed (blockdev.h); rates NAN */
    bool   has_discard, has_flush;   /* the kernel gives those fields */
    double r_s, w_s, d_s, f_s;
    double rkb_s, wkb_s, dkb_s;
    double rrqm_s, wrqm_s, drqm_s;
    double rrqm_pct, wrqm_pct, drqm_pct;   /* NAN when no requests */
    double r_await, w_await, d_await, f_await;   /* ms; NAN when no requests of that kind */
    double rareq_sz, wareq_sz, dareq_sz;          /* kB; NAN when no requests */
    double aqu_sz, util;
    double await;                    /* reads and writes together, ms; NAN when idle */
    double quiet_await;              /* learned from quiet intervals; NAN until one is seen */
    int    saturated;                /* 1, 0, or -1 unknown (no baseline, no data) */
    enum sat_source sat_source;      /* the lens when it could judge, else the baseline */
    /* The BPF lens over the interval (lens.valid false: no lens, or a partition): where
     * requests waited (tag, scheduler, device) and whether the scheduler held a class. */
    struct lens_dev_interval lens;
    /* Per priority over the interval, sorted by prio; NULL and 0 without the lens (or for
     * a partition). Owned by the result: result_free frees it. */
    struct prio_latency *lat;
    size_t nlat;
    /* Bytes a second that kernel threads submitted to the device (a disk: with its
     * partitions), from the lens (issue 14): the flusher's writeback of pages that
     * processes dirtied, journal and filesystem threads. NAN without the lens. */
    double kernel_bps;
    /* Whom kernel_bps wrote for (issue 14): one row per (dirtier process, cgroup) over
     * the interval, the biggest first; the bytes whose dirtier is unknown are a row of
     * their own (pid 0, cgid 0). wb_valid false (wb NULL): no split known (no lens, no
     * page-dirtying tracepoint, no interval); true with nwb 0: nothing written. Owned by
     * the result. */
    bool   wb_valid;
    struct wb_share *wb;
    size_t nwb;
};

/* Who named a writeback row's cgroup (docs/json.md "writeback_by"). */
enum wb_from {
    WB_FROM_NONE,                    /* nobody: the dirtier is unknown */
    WB_FROM_LENS,                    /* the lens, at the dirtying (the dirtier's v2 cgroup) */
    WB_FROM_BLKCG,                   /* the kernel's own cgroup writeback (the bio's blkg) */
};

#define WB_CGROUP_MAX 256            /* a longer path is cut (the id stays whole) */

/* Bytes a second kernel threads wrote to a device for one dirtier. */
struct wb_share {
    double   bps;
    uint64_t cgid;                   /* its cgroup's id; 0 unknown */
    pid_t    pid;                    /* the process that dirtied the pages; 0 unknown */
    unsigned char from;              /* enum wb_from */
    char     comm[TASK_COMM_MAX];    /* "" when not in the task list (exited) */
    char     cgroup[WB_CGROUP_MAX];  /* the path; "" when no listed cgroup has the id */
};

struct cgroup_rates;

struct psi_rates {
    bool   some_valid, full_valid;
    double some_pct, full_pct;       /* share of the interval stalled, from `total` */
};

struct task_rates {                  /* fields ordered to leave no padding: one a task */
    const struct task_sample *task;  /* points into cur */
    double read_bps, write_bps, cancelled_write_bps;
    double io_delay_pct, swapin_delay_pct;
    double blkio_avg_ms;             /* mean wait per block I/O this interval; NAN when none */
    /* io_uring's completion wait, which the kernel counts as iowait (PSI io) though the
     * task sleeps interruptibly and may wait on a socket (source/threadstate.h): with the
     * lens (uring_source DELAY_SRC_BPF) the % of the interval its threads slept in iowait
     * interruptibly, taken out of io_delay_pct (IODLY stays the synchronous wait); sampled
     * (DELAY_SRC_SAMPLED, without the lens, under io pressure) 100 when the task was found
     * asleep there at the refresh, 0 when not; NAN unknown. */
    double uring_wait_pct;
    struct ioprio_eff prio;
    bool   is_new;                   /* not in prev (started, or pid reused) */
    bool   io_valid;
    bool   delay_valid;
    bool   delay_overcount;          /* the kernel counted more waiting than the wall clock
                                      * allows (nlwp x interval); the figures are capped */
    /* DELAY_SRC_BPF: io_delay_pct (and blkio_avg_ms) are the lens's iowait, delay_valid
     * is set, swapin_delay_pct stays unknown. DELAY_SRC_SAMPLED: io_delay_pct is an
     * estimate from sampled thread states, delay_valid is set, swapin_delay_pct and
     * blkio_avg_ms stay unknown. */
    unsigned char io_delay_source;   /* enum delay_source */
    unsigned char uring_source;      /* enum delay_source of uring_wait_pct */
};

/* A filesystem's space over time (issue #20; docs/json.md "filesystems").
 *
 * Two rates, because they answer different questions:
 *   write_bps  what its block device received: diskstats sectors written over the
 *              interval, of the device the filesystem is mounted from (its partition,
 *              dm or loop row, not the whole disk). Journal, metadata and overwrites
 *              count; NAN for tmpfs (no device) and the first sample.
 *   fill_bps   how fast it fills: the change of used bytes (statvfs) over the last
 *              interval. Overwrites, and writes that a delete frees again, do not fill
 *              it: this is the rate time to full needs. Negative when it empties.
 * full_in_s, the seconds until avail_bytes reaches 0, is given only when filling is
 * steady: used bytes grew in each of the last FS_STEADY_INTERVALS intervals (a burst, a
 * rotation, a flat interval all say "unknown", not "never" nor "soon"); then it is
 * avail / (growth over those intervals / their length). NAN otherwise. */
#define FS_STEADY_INTERVALS (FS_HIST - 1)
struct fs_rates {
    const struct fs_sample *fs;      /* points into cur */
    double used_pct;                 /* used / (used + avail) x 100, as df's Use%; NAN when
                                      * statvfs failed or the filesystem is empty of both */
    double write_bps, fill_bps, full_in_s;
};

struct result {
    const struct snapshot *cur;
    double interval_s;               /* 0 for the first sample (no previous) */
    struct dev_rates *devs;          /* same order as cur->devs */
    size_t ndevs;
    struct psi_rates psi[PSI_NRES];
    struct task_rates *tasks;        /* same order as cur->tasks */
    size_t ntasks;
    struct cgroup_rates *cgroups;    /* cgroups.h: same order as cur->cgroups->v */
    size_t ncgroups;
    struct fs_rates *fss;            /* same order as cur->fss */
    size_t nfss;
};

/* Per-device memory across samples for the saturation verdict. */
struct dev_baseline {
    char     name[DS_NAME_MAX];
    unsigned major, minor;
    double   quiet_await;            /* ms, a slowly rising minimum of quiet-interval await */
    double   ceiling;                /* ms, lifetime mean await at first sight: >= quiet */
    double   seen_mono;
};

struct baselines {
    struct dev_baseline *v;
    size_t n, cap;
};

/* Thresholds of the saturated verdict (docs/devices.md explains them). */
#define SAT_MIN_AQU        1.5   /* at least this many requests queued on average */
#define SAT_MIN_IOS        20.0  /* requests in an interval before its await may set the baseline */
#define SAT_QUIET_AQU      1.2   /* an interval this little queued is quiet: it may teach it */
#define SAT_AWAIT_FACTOR   1.6   /* await this far above the quiet-time level */
#define SAT_BASE_DRIFT     0.002 /* baseline rises by this fraction per second of no lower reading */

/* Delay shares above nlwp x 100 % times this are the kernel over-counting, not jitter. */
#define DELAY_SLACK        1.03

/* Bytes a second kernel threads wrote to device d for pages process tgid dirtied (its
 * writeback_by rows together); NAN when d's split is unknown (wb_valid false). */
double dev_writeback_of(const struct dev_rates *d, pid_t tgid);

/* prev may be NULL (first sample: rates unknown, ioprio and identities still filled). */
void delta_compute(const struct snapshot *prev, const struct snapshot *cur,
                   struct baselines *hist, struct result *out);
void result_free(struct result *r);
void baselines_free(struct baselines *b);
/* The baseline of a device (name and major:minor), added (levels NAN) when missing. */
struct dev_baseline *baselines_get(struct baselines *b, const char *name, unsigned major,
                                   unsigned minor);

/* The sampled estimate (source/threadstate.h) for the tasks whose delay is still unknown
 * after delta_compute: io_delay_pct from c, counted over the same interval, as
 * DELAY_SRC_SAMPLED. Tasks with a figure from taskstats or the lens are left alone, and
 * so are those sampled in too few rounds (they stay unknown). */
void delta_sampled(struct result *r, const struct ts_counts *c);

/* Pure pieces, exposed for the tests. */
/* Difference of a kernel counter that is 32-bit on the kernel side (ms fields): wraps. */
double delta_u32(uint64_t prev, uint64_t cur);
/* The verdict alone: await and aqu-sz of the interval against the quiet baseline. */
/* quiet_await: learned (NAN: none); ceiling: the lifetime mean await (NAN: none). */
/* A filesystem's rates from its own history and its device's rates (NULL: none). */
void   delta_fs(const struct fs_sample *fs, const struct dev_rates *dev, struct fs_rates *out);
int    delta_saturated(double await, double aqu_sz, double ios, double quiet_await, double ceiling);

/* One stage of one priority from its interval's sums (delta.h struct prio_stage): the
 * count, mean and quantiles from lens_calc.c, the buckets copied. */
void delta_prio_stage(const struct lens_stage_sum *s, struct prio_stage *out);

/* Is this task doing I/O this interval (reads, writes or block-I/O waits)? */
bool task_is_active(const struct task_rates *t);

/* The cgroup lens over an interval (source/cgroups.h). */
/* n rates and nrows device rows in one zeroed block, freed with free() (result_free);
 * the rows follow the rates: (struct cgroup_dev_rates *)(rates + n). */
struct cgroup_rates *cgroups_rates_alloc(size_t n, size_t nrows);

/* Fills r->cgroups / r->ncgroups (same order as cur's set) from r->tasks. prev may be
 * NULL (first sample). */
void cgroups_delta(const struct cgroup_set *prev, const struct cgroup_set *cur, struct result *r);

/* The index into r->cgroups of task ti's cgroup, or -1. */
int cgroup_of_task(const struct result *r, size_t ti);


#endif
