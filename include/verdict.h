/* SPDX-License-Identifier: GPL-2.0-or-later */
/* verdict.h: who reads the label, and who suffers from whom.
 *
 * A priority set with ionice, IOSchedulingClass= or nice is only a label: whether anyone
 * reads it depends on the I/O scheduler of the device the I/O lands on
 * (docs/verdicts.md gives every rule with its kernel source):
 *   none, kyber    read no priority at all               -> ioprio-ignored
 *   mq-deadline    reads the class, not the level        -> ioprio-level-ignored (be/N, N != 4)
 *   bfq            reads class and level
 * and a scheduler can only order what it holds: with the queue full, requests wait for a
 * tag in arrival order (ioprio-lottery). Priority matters only when requests queue
 * (ioprio-unsaturated), buffered writes are written back by flusher threads at be/4
 * (ioprio-writeback), and a process waiting much longer per I/O than the device's await
 * shows a queue the device statistics cannot see (hidden-queue; measured as the wait for a
 * tag when the BPF lens runs). With the lens, a class the scheduler holds back while a
 * higher one is served waits because its label is honoured (ioprio-held), which is not
 * saturation. With the lens's latency per priority (delta.h prio_latency), a warning
 * that compares priorities says what was measured (evidence), and a measurement that
 * contradicts the table while requests queue wins over it (ioprio-honoured, or
 * ioprio-ignored where the table says honoured).
 *
 * verdict_compute() is pure: it reads a result (and the snapshot it points to) and
 * writes only *out.
 */
#ifndef IOTRIAGE_VERDICT_H
#define IOTRIAGE_VERDICT_H

#include <stdbool.h>
#include <stddef.h>

#include "delta.h"
#include "source/cgroups.h"
#include "source/ioprio.h"

/* Every warning code, its stable name and its severity. The table is the one place
 * that knows them; the enum, names and docs follow it. */
#define WARNING_CODES(X)                                                   \
    X(W_IOPRIO_IGNORED,       "ioprio-ignored",       SEV_WARN)            \
    X(W_IOPRIO_LEVEL_IGNORED, "ioprio-level-ignored", SEV_WARN)            \
    X(W_IOPRIO_LOTTERY,       "ioprio-lottery",       SEV_CRIT)            \
    X(W_IOPRIO_WRITEBACK,     "ioprio-writeback",     SEV_WARN)            \
    X(W_HIDDEN_QUEUE,         "hidden-queue",         SEV_CRIT)            \
    X(W_IOPRIO_UNSATURATED,   "ioprio-unsaturated",   SEV_INFO)            \
    X(W_CG_WEIGHT_IGNORED,    "cgroup-weight-ignored", SEV_WARN)           \
    X(W_CG_AT_LIMIT,          "cgroup-at-limit",      SEV_CRIT)            \
    X(W_CG_PRIO_CLASS,        "cgroup-prio-class",    SEV_INFO)            \
    X(W_CG_WRITEBACK_ROOT,    "cgroup-writeback-root", SEV_WARN)           \
    X(W_CG_IOCOST_WAIT,       "cgroup-iocost-wait",   SEV_WARN)            \
    X(W_CG_IOLATENCY_THROTTLED, "cgroup-iolatency-throttled", SEV_WARN) \
    X(W_FS_FULL,              "fs-full",              SEV_WARN)            \
    X(W_FS_FILLING,           "fs-filling",           SEV_CRIT)            \
    X(W_FS_DELETED_OPEN,      "fs-deleted-open",      SEV_WARN) \
    X(W_IOPRIO_HELD,          "ioprio-held",          SEV_INFO)            \
    X(W_IOPRIO_HONOURED,      "ioprio-honoured",      SEV_WARN)            \
    X(W_IO_NOT_BLOCK,         "io-pressure-not-block", SEV_WARN)           \
    X(W_IO_SWAP,              "io-pressure-swap",     SEV_WARN)            \
    X(W_IOPRIO_DROPPED,       "ioprio-dropped",       SEV_WARN)

enum severity { SEV_INFO, SEV_WARN, SEV_CRIT };

#define X_ENUM(e, name, sev) e,
enum warn_code { WARNING_CODES(X_ENUM) W_NCODES };
#undef X_ENUM

const char *warn_code_name(enum warn_code c);
enum severity warn_code_severity(enum warn_code c);
const char *severity_name(enum severity s);            /* "info" "warning" "critical" */
/* The fs-* codes: about a filesystem (warning.fs), not a device's queue. */
bool warn_code_is_fs(enum warn_code c);
/* Codes that may name no device: the fs-* codes (tmpfs) and io-pressure-not-block (a
 * process's wait that is not on a block device). */
bool warn_code_may_lack_dev(enum warn_code c);

/* What a scheduler does with an effective priority (the rule table alone, no queue state). */
enum sched_reading {
    SR_DEFAULT,          /* be/4: nothing to honour or ignore */
    SR_HONOURED,         /* the scheduler reads everything the label says */
    SR_LEVEL_IGNORED,    /* class read, level not (mq-deadline with be/N, N != 4) */
    SR_IGNORED,          /* nothing read (none, kyber, no scheduler) */
    SR_UNKNOWN_SCHED,    /* a scheduler this table does not know */
};
/* sched: the active scheduler's name, or NULL/"" for a device without one. */
enum sched_reading verdict_sched_reading(const char *sched, struct ioprio_eff prio);
/* One line: which priorities a scheduler reads and which it ignores (for the operator
 * about to switch to it). */
const char *verdict_sched_reads(const char *sched);
/* A few words for a reading: "honoured", "class read, level ignored"... */
const char *sched_reading_name(enum sched_reading r);

#define WARN_TEXT_MAX 240

/* What backs a warning (docs/verdicts.md "Evidence"): the rule table alone, or the BPF
 * lens, which measured the priorities the warning compares on that device in the
 * interval. */
enum evidence { EV_RULE, EV_MEASURED, EV_SAMPLED };
/* "rule" "measured" "sampled" (EV_SAMPLED: from thread states read at the refresh,
 * io-pressure-not-block without the lens) */
const char *evidence_name(enum evidence e);

/* The comparison behind a measured warning: the total time (bio submitted -> completed)
 * of two priorities' requests on the device over the interval (delta.h prio_latency).
 * prio[0] == '\0' when the warning is measured but compares no priorities
 * (hidden-queue's tag wait). */
struct warn_measure {
    char   prio[8], vs[8];           /* the process's priority, the one it is compared with */
    double p50_ms, vs_p50_ms;
    double count, vs_count;          /* requests completed in the interval */
};

struct warning {
    enum warn_code code;
    enum severity  sev;
    int    dev;                      /* index into result.devs; -1 for a filesystem with no
                                      * block device (tmpfs) */
    int    task;                     /* index into result.tasks; -1 for a device finding */
    int    cgroup;                   /* index into result.cgroups; -1 when not about one */
    int    fs;                       /* index into result.fss for the fs-* codes, else -1
                                      * (check it against result.nfss: a zeroed warning has
                                      * 0) */
    char   text[WARN_TEXT_MAX];      /* one line: what is ignored, what would work */
    unsigned char evidence;          /* enum evidence */
    bool   contradicts;              /* the measurement overruled the rule table: this
                                      * warning replaces (or is) what the table does not say */
    struct warn_measure m;           /* with EV_MEASURED */
};

/* "measured: idle p50 912 ms vs be/4 1.1 ms" (and "; the rule table says otherwise"),
 * for outputs to show beside the text; "" for a warning without two priorities measured. */
const char *warn_evidence_text(const struct warning *w, char *buf, size_t n);

enum role { ROLE_NONE, ROLE_CAUSE, ROLE_SUFFER, ROLE_BOTH };
const char *role_name(enum role r);                    /* NULL for ROLE_NONE */

/* Thresholds (docs/verdicts.md). */
#define ROLE_CAUSE_SHARE    0.25  /* share of a saturated device's bytes/s */
#define ROLE_SUFFER_DELAY   20.0  /* % of the interval waiting on block I/O */
/* The same wait for asynchronous requests (issue #35, the lens): at least this many of
 * its requests in flight on the saturated device on average (0.2: one request in flight
 * 20 % of the interval), ... */
#define ROLE_SUFFER_INFLIGHT (ROLE_SUFFER_DELAY / 100.0)
/* ... and at most this share of the device's requests in flight (aqu-sz): the rest,
 * others' requests, are what it waits behind (a deep reader's own queue is not). */
#define ROLE_SUFFER_OWN_SHARE 0.5
#define LOTTERY_FULL        0.90  /* aqu-sz at this share of nr_requests: the queue is full */
#define HIDDEN_FACTOR       2.0   /* process wait per I/O this many times the device await */
#define HIDDEN_MIN_MS       1.0   /* ... and at least this much longer */
#define HIDDEN_TAGS_USED    0.5   /* ... while aqu-sz is at least this share of nr_requests */
/* Evidence from the lens (docs/verdicts.md "Evidence"): each of the two priorities
 * compared completed at least LAT_MIN_REQS requests in the interval; their total-time
 * p50s are alike within LAT_ALIKE, or the less favoured one's is at least LAT_DIFFER
 * times the other's. Either, against the table, overrules it only while requests queue
 * (aqu-sz >= LAT_BUSY_AQU): with nothing queued there is nothing to order, and a
 * difference is the workloads' own (sizes, reads against writes). */
#define LAT_MIN_REQS        20
#define LAT_ALIKE           1.5
#define LAT_DIFFER          3.0
#define LAT_BUSY_AQU        SAT_MIN_AQU
/* io-pressure-not-block (docs/verdicts.md): the machine's io pressure (PSI some over the
 * interval) at least this %, and a process waiting in io_uring's completion wait, not on
 * block I/O, for at least URING_WAIT_MIN % of the interval (the lens), or found asleep
 * there (sampled), with no block request of its own (no bytes submitted, none read or
 * written, not in D). */
#define PSI_NOT_BLOCK_MIN   20.0
#define URING_WAIT_MIN      50.0
/* ... or a process in iowait at least NETFS_WAIT_MIN % of the interval (the lens or
 * taskstats, measured; sampled thread states) with a file open on a filesystem with no
 * block device (nfs, cifs, fuse, 9p: snapshot.h netfs) and no block I/O of its own. */
#define NETFS_WAIT_MIN      50.0
/* io-pressure-swap: the same io pressure, and a process that waited on block I/O at
 * least ROLE_SUFFER_DELAY % of the interval whose bytes (the lens) went at least this
 * share to the devices swap lives on: its wait is swap-in, memory short. */
#define SWAP_SHARE_MIN      0.5
/* ioprio-dropped (docs/verdicts.md): with the lens, a layer of a stack (dm, md) whose bios
 * at least DROP_MIN_BPS carried the process's label in its own context, of which at least
 * DROP_SHARE did not go on to the level below with it. */
#define DROP_MIN_BPS        (64.0 * 1024)
#define DROP_SHARE          0.5
#define FS_FULL_PCT         90.0  /* fs-full: used / (used + avail), df's Use% */
#define FS_FILL_HORIZON_S   3600.0 /* fs-filling: steady time to full below this */
#define FS_DELETED_SHARE    0.10  /* fs-deleted-open: deleted-open bytes / used bytes */

/* The cgroup rules (docs/verdicts.md). */
#define CG_LIMIT_NEAR       0.90  /* a rate at this share of its io.max limit is at the limit */
#define CG_LIMIT_PRESSURE   10.0  /* ... and the cgroup's io.pressure some at least this % */
#define CG_COST_WAIT_PCT    10.0  /* io.cost held its I/O back this % of the interval */

/* The cgroup rules that need no rates, one function each, called by verdict_compute and
 * by `iotriage audit` (which judges every cgroup's settings without an interval): one
 * piece of logic for both. Pure. */
enum cg_judgement {
    CGJ_NONE,            /* nothing to judge (a default weight) */
    CGJ_HONOURED,        /* something in the kernel reads it on that device */
    CGJ_IGNORED,         /* nothing does: text says why */
    CGJ_UNKNOWN,         /* cannot tell (io.cost.qos unreadable) */
};
/* cgroup-weight-ignored: io.weight of cgroup `path` on whole disk d, against the root's
 * io.cost.qos (q, or qerr when it could not be read). */
enum cg_judgement verdict_cg_weight(const char *path, const struct cgroup_settings *st,
                                    const struct cg_costqos *q, int qerr, const struct dev_sample *d,
                                    char *text, size_t n);
/* cgroup-weight-ignored for a layer (snapshot_dev_is_layer): io.weight of cgroup `path`
 * set for layer d itself (IODeviceWeight= on an LV), which nothing reads, neither there
 * nor at the disks below it (they read their own rows). True, with the text naming those
 * disks, when a row other than the default is set for d; a layer is never judged by
 * verdict_cg_weight. */
bool verdict_cg_layer_weight(const struct snapshot *s, const char *path, const struct cg_weight *w,
                             const struct dev_sample *d, char *text, size_t n);
/* cgroup-writeback-root: why writeback to device `dev` (a name in devs[0, ndevs), the
 * snapshot's devices) is charged to the root cgroup of set's hierarchy, or NULL when it
 * can be charged to the writer's cgroup (or that is not known). */
const char *verdict_cg_writeback_reason(const struct cgroup_set *set, const struct dev_sample *devs,
                                        size_t ndevs, const char *dev, char *buf, size_t n);
/* cgroup-iolatency-throttled: true (and text) when io.stat shows io.latency holding
 * cgroup `path` to `depth` requests in flight on dev (depth -1: "max", not held). */
bool verdict_cg_latency(const char *path, bool has_lat, long depth, const char *dev, char *text,
                        size_t n);
/* Does scheduler `sched` read the priority a request carries, which io.prio.class
 * rewrites? bfq does not: it reads the task's own. */
bool verdict_sched_reads_request_prio(const char *sched);

/* The priority task ti's requests to device di carried (issue #35: an io_uring or libaio
 * request may carry its own), when the lens saw one priority carry at least
 * REQ_PRIO_SHARE of its bytes there and it is not the task's own (class none counts as
 * the task's, which the kernel gives such a bio; idle at any level as idle): *out set,
 * source IOS_EXPLICIT, true. False when they are the task's, mixed, or unknown. */
#define REQ_PRIO_SHARE 0.9
bool verdict_requests_prio(const struct result *r, size_t ti, size_t di, struct ioprio_eff *out);
/* cgroup-prio-class: task comm[pid]'s own priority and what io.prio.class `policy` of the
 * cgroup at owner_path makes of it on device dev under scheduler sched. */
void verdict_cg_prio_text(char *buf, size_t n, const char *comm, int pid, struct ioprio_eff own,
                          struct ioprio_eff now, const char *dev, const char *sched,
                          enum cg_prio_policy policy, const char *owner_path);

struct verdicts {
    struct warning *w;               /* most severe first, then by device, then by pid */
    size_t n, cap;
    enum role *roles;                /* per result.tasks entry */
    size_t nroles;
};

void verdict_compute(const struct result *r, struct verdicts *out);
void verdicts_free(struct verdicts *v);

/* Warnings of one task, in the verdicts' order: index lists built once per sample so
 * outputs need not scan every warning for every task. first[t]..first[t+1] index into
 * order[]. Free with warn_index_free. */
struct warn_index {
    size_t *first;                   /* ntasks + 1 entries */
    size_t *order;                   /* indices into v->w, grouped by task */
};
void warn_index_build(struct warn_index *ix, const struct verdicts *v, size_t ntasks);
void warn_index_free(struct warn_index *ix);

/* The path from stacked device top down to disk through the snapshot's stacks (a
 * partition of disk on the way ends it, the disk added), as "dm-1 -> dm-0 -> nb0" in
 * buf: returns the devices named, 0 when disk is not below top (buf then unspecified). */
size_t verdict_dev_path(const struct snapshot *s, const char *top, const char *disk, char *buf,
                        size_t n);

#endif
