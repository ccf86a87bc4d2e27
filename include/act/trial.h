/* SPDX-License-Identifier: GPL-2.0-or-later */
/* act/trial.h: a scheduler trial (issue #39): measure a device under its scheduler, switch,
 * measure again, and keep or put back on a rule stated in advance.
 *
 * Pure parts (src/act/trial_calc.c): the figures of each second of a phase, the
 * comparison of two phases with the noise of the measurement, and the rule (its grammar,
 * parser and evaluation). The guardian (src/act/guard.c) puts the device back when the
 * process that runs the trial dies. The command itself is src/trial.c.
 *
 * Noise: each figure is computed from the seconds of a phase together (a percentile from
 * the summed histograms, a rate from the summed counts). Its interval comes from a
 * bootstrap over the seconds: TRIAL_BOOT times, the seconds of each phase are drawn
 * again with replacement and the figure's change recomputed; the 2.5th and 97.5th
 * percentiles of those changes are the interval, widened on both sides by the drift: how
 * far the figure moved between the first and the second half of a phase under one
 * scheduler (the larger of the two phases'), for the load and the machine change over
 * time, which draws within a phase cannot see. A change whose interval holds 0 is
 * "no difference", and so is a change smaller than TRIAL_MIN_CHANGE_PCT whatever its
 * interval: percentiles come from log2 buckets, interpolated within a bucket, and a few
 * percent is their resolution (and no reason to change a scheduler). The draws come
 * from a fixed seed: the same seconds give the same answer.
 */
#ifndef IOTRIAGE_ACT_TRIAL_H
#define IOTRIAGE_ACT_TRIAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "act/act.h"
#include <linux/types.h>

#include "bpf/lens_maps.h"

#define TRIAL_SECONDS_DEFAULT 10
#define TRIAL_SECONDS_MIN     3      /* fewer seconds give no interval worth the name */
#define TRIAL_SECONDS_MAX     600
#define TRIAL_SETTLE_S        2.0    /* after the switch, before the second phase */
#define TRIAL_SWITCH_WAIT_S   15.0   /* a switch not done by then: the disk is stuck */
#define TRIAL_BOOT            1000
#define TRIAL_MIN_CHANGE_PCT  5.0
#define TRIAL_RULE_MAX        512    /* characters of a rule */
#define TRIAL_RULE_NODES      32     /* conditions and operators of a rule */
#define TRIAL_RECORD_FILE     "trials.jsonl"   /* in the recorder's directory: one report a line */

/* Priority slots of a second: rt/0..7, be/0..7, idle, none. */
#define TRIAL_SLOTS      18
#define TRIAL_SLOT_IDLE  16
#define TRIAL_SLOT_NONE  17
/* The slot of a lens priority (class << 13 | level); -1 for a class iotriage does not know. */
int  trial_slot(unsigned prio);
/* "rt/0" ... "be/7", "idle", "none". */
const char *trial_slot_name(int slot);

/* Classes as the rule names them. `be` holds the requests that carried no priority
 * (`none`) too: mq-deadline serves them as best-effort (ioprio_class_to_prio). */
enum trial_class { TRIAL_RT, TRIAL_BE, TRIAL_IDLE, TRIAL_TOTAL, TRIAL_NCLASS };
const char *trial_class_name(enum trial_class c);   /* "rt" "be" "idle" "total" */

/* One second (one sample interval) of a phase, on one disk. */
struct trial_second {
    double   secs;                   /* the interval's length */
    double   ios;                    /* requests completed (diskstats: reads + writes) */
    double   bytes;                  /* bytes read and written (diskstats) */
    double   await_ms;               /* the device's await (reads and writes); NAN when idle */
    bool     lens;                   /* the lens measured this second */
    double   count[TRIAL_SLOTS];     /* lens: requests of each priority (total time) */
    uint64_t hist[TRIAL_SLOTS][LENS_HIST];   /* lens: their log2 buckets of us */
};

struct trial_phase {
    struct trial_second *s;
    size_t n, cap;
};
void trial_phase_add(struct trial_phase *p, const struct trial_second *s);
void trial_phase_free(struct trial_phase *p);
/* Every second of the phase had the lens. */
bool trial_phase_lens(const struct trial_phase *p);

enum trial_figure { TF_P50, TF_P99, TF_IOPS, TF_THROUGHPUT, TF_AWAIT, TF_N };
const char *trial_figure_name(enum trial_figure f);  /* "p50" "p99" "iops" "throughput" "await" */
/* Which figures a subject has: classes p50 p99 iops throughput; total iops throughput
 * await. */
bool trial_figure_valid(enum trial_class c, enum trial_figure f);

/* The figure of a phase for a selection of slots (a bit per slot; 0: the device as a
 * whole, from diskstats). p50/p99 in ms, iops per second, throughput bytes per second,
 * await ms. A selection's throughput is an estimate: the lens counts requests, not bytes,
 * so each second's requests of the selection count at that second's mean request size
 * on the device. NAN when unknown (no request). With idx (n entries), the seconds idx[i]
 * instead of all: one bootstrap draw. */
double trial_figure(const struct trial_phase *p, uint32_t slots, enum trial_figure f,
                    const size_t *idx, size_t n);

/* The slots of a class (TRIAL_TOTAL: 0). */
uint32_t trial_class_slots(enum trial_class c);
/* ... of a set of classes (bits 1 << class). */
uint32_t trial_classes_slots(unsigned classes);

/* Before and after, compared. */
struct trial_diff {
    double before, after;            /* NAN unknown */
    double change_pct;               /* (after / before - 1) x 100; NAN unknown; +-INFINITY
                                      * from or to 0 for counts and rates */
    double lo_pct, hi_pct;           /* the bootstrap interval of change_pct, widened by the
                                      * drift; NAN unknown */
    double drift_pct;                /* the drift (first half against second half, as a rise:
                                        a halving is +100 %); NAN */
    int    dir;                      /* -1 lower, 0 no difference (or absent both times,
                                      * or under TRIAL_MIN_CHANGE_PCT), +1 higher (beyond
                                      * the noise) */
    bool   absent;                   /* no request of the selection in either phase */
    bool   known;                    /* before and after both known (or absent) */
};
void trial_compare(const struct trial_phase *b, const struct trial_phase *a, uint32_t slots,
                   enum trial_figure f, struct trial_diff *out);

/* ---- the rule ----
 *
 *   rule  = any { "or" any }
 *   any   = all                      (an "and" binds tighter than "or")
 *   all   = unit { "and" unit }
 *   unit  = "(" rule ")" | cond
 *   cond  = subject "." figure op limit
 *   subject = class { "+" class } | "total"
 *   class = "rt" | "be" | "idle"
 *   figure= "p50" | "p99" | "iops" | "throughput"   (classes: their requests together)
 *         | "iops" | "throughput" | "await"         (total: the device, diskstats)
 *   op    = "<" | "<=" | ">" | ">="
 *   limit = "noise" | ["+" | "-"] NUMBER "%"
 *
 * A condition compares the figure's change from before to after. Against `noise`: `<`
 * it fell beyond the noise, `<=` it did not rise beyond it (fell, or no difference),
 * `>` rose beyond it, `>=` did not fall beyond it. Against a percentage: the change
 * itself (`total.throughput > -10%`: fell by less than 10 %). A class with no request in
 * either phase has not changed (0 %, no difference); one with requests in one phase
 * only cannot be judged (the condition fails: the trial puts the device back). Without
 * the lens, a class's figures are the device's: p50 and p99 its await, iops and
 * throughput its own. A class's throughput is an estimate (trial_figure). Spaces between tokens are free; keywords are lower case.
 */
#define TRIAL_RULE_DEFAULT \
    "(be.p50 < noise or be.p99 < noise or rt.p50 < noise or rt.p99 < noise) " \
    "and be.p99 <= noise and rt.p99 <= noise and rt+be.throughput > -10%"

enum trial_op { TOP_LT, TOP_LE, TOP_GT, TOP_GE };
enum trial_node_kind { TN_COND, TN_AND, TN_OR };
struct trial_node {
    enum trial_node_kind kind;
    int    left, right;              /* TN_AND, TN_OR: node indexes */
    unsigned classes;                /* TN_COND: 1 << TRIAL_RT ... (1 << TRIAL_TOTAL alone) */
    enum trial_figure fig;
    enum trial_op op;
    bool   noise;                    /* the limit is the noise, else pct */
    double pct;
};
struct trial_rule {
    struct trial_node n[TRIAL_RULE_NODES];
    int    nn, root;
};

/* Parse text (len bytes, no NUL needed) into r. 0, or -EINVAL with one line in err
 * saying where and what was expected. */
int  trial_rule_parse(const char *text, size_t len, struct trial_rule *r, char *err, size_t errlen);
/* The rule back as text, in the grammar (parenthesised where it must be). */
void trial_rule_text(const struct trial_rule *r, char *buf, size_t n);

/* One condition's outcome, for the reason. */
struct trial_cond_result {
    int    node;
    bool   holds;
    struct trial_diff d;
};
#define TRIAL_CONDS_MAX TRIAL_RULE_NODES

/* Evaluate the rule on two phases. lens: the class figures come from the lens (else the
 * device's, as above). Fills res[] (one per condition, in order; *nres of them) and
 * returns whether the rule holds (keep). */
bool trial_rule_eval(const struct trial_rule *r, const struct trial_phase *b,
                     const struct trial_phase *a, bool lens,
                     struct trial_cond_result *res, size_t *nres);

/* One condition as text with what was measured: "be.p99 <= noise: 12.1 -> 3.4 ms
 * (-72 %, -80..-61 %): holds". */
void trial_cond_text(const struct trial_rule *r, const struct trial_cond_result *c, char *buf,
                     size_t n);

/* ---- the guardian (act/guard.c) ----
 *
 * A child in a session of its own (no SIGHUP from a lost terminal; SIGINT, SIGQUIT,
 * SIGTERM and SIGPIPE ignored), holding the read end of a pipe whose write end the trial
 * holds and every child it forks inherits (the switch's child among them). The trial
 * writes GUARD_KEEP when it keeps the new scheduler, GUARD_DONE when the device is as it
 * was; at end of file (the trial and its children gone: exited, killed, crashed) without
 * either, the guardian puts the device back as `orig` shows it (sched_restore), unless
 * the device shows neither the trial's scheduler nor the original one (someone else
 * changed it since) or is gone. It logs what it did to syslog (LOG_DAEMON) and exits. */
#define GUARD_KEEP 'K'
#define GUARD_DONE 'D'
struct guard {
    pid_t pid;
    int   fd;                        /* write end; -1 when none */
};
/* Fork the guardian. 0, or -errno (no guardian: the caller must not start the trial). */
int  guard_start(struct guard *g, const char *sys_root, const char *disk,
                 const struct sched_state *orig, const char *trial_sched);
/* Tell it (GUARD_KEEP or GUARD_DONE) and close the write end. */
void guard_tell(struct guard *g, char what);

/* Pure, for the guardian: should a device showing `now` be put back to `orig`, the trial
 * having set `trial_sched`? */
bool guard_should_restore(const struct sched_state *now, const struct sched_state *orig,
                          const char *trial_sched);

/* ---- a trial run by the screen (act/trial_run.c) ----
 *
 * The screen's `t` runs `iotriage trial DISK SCHED --yes --json --seconds N
 * --progress-fd 3` (a re-exec of /proc/self/exe): the checks, the guardian and the
 * signal handling stay in the command. The child has a process group of its own (no key
 * of the terminal reaches it) and SIGHUP when the screen dies (PR_SET_PDEATHSIG: the
 * trial puts the device back). Its progress (docs/trial.md, --progress-fd) arrives on
 * `fd`, its stderr (a refusal says why there) in a memory file; stdout is discarded. */
struct trial_run {
    pid_t  pid;                      /* 0 when none runs */
    int    fd;                       /* progress, read end; -1 none */
    int    err_fd;                   /* the child's stderr (a memfd); -1 none */
    char   disk[BD_NAME_MAX], to[BD_SCHED_MAX];
    long   seconds;
    double start_mono, phase_mono;   /* when it started, when the phase line came */
    char   phase[16];                /* "starting" "before" "switching" "settle" "after"
                                      * "putting-back" "done" */
    double remain, total;            /* of the phase, seconds (0 when it has none) */
    bool   stopping;                 /* SIGINT sent */
    bool   done;                     /* the "done" line came */
    int    status;                   /* the command's exit status: 0 kept, 3 put back, 1, 2 */
    char   decision[16];
    char   final_sched[BD_SCHED_MAX];
    long   final_nr;
    char   changes[8][96];           /* "be p99 -45 lower" */
    unsigned nchanges;
    char   reason[1700];
    char   err[400];                 /* the last line of stderr, when it ended without done */
    char   buf[4096];                /* a line not yet complete */
    size_t blen;
};
/* Start it. 0, or -errno (nothing started). */
int  trial_run_start(struct trial_run *t, const char *disk, const char *to, long seconds);
/* Without blocking: read the progress. 1 when the trial is over (the child reaped), 0
 * while it runs. */
int  trial_run_poll(struct trial_run *t);
/* SIGINT: the trial stops measuring and puts the device back. */
void trial_run_stop(struct trial_run *t);
/* SIGINT, then wait for the end (at most max_s; the guardian covers the rest). 1 over. */
int  trial_run_finish(struct trial_run *t, double max_s);
/* Pure: one line of progress into *t. */
void trial_progress_line(struct trial_run *t, const char *line);

#endif
