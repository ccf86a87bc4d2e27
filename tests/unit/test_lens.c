/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Unit tests of the BPF lens's user-space arithmetic (src/source/lens_calc.c) and of how
 * delta.c and verdict.c use it, on hand-built readings: no BPF, no privileges.
 *
 * The readings mimic what the lab disk gave (tests/lab/lab.sh, 2 ms per request, 4 at
 * once): under none, two readers keep 16 requests at the device and each waits ~10 ms
 * there; under mq-deadline, a synchronous best-effort reader is served while the
 * scheduler holds an idle reader's 16 requests.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <math.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <unistd.h>

#include "delta.h"
#include "store/replay.h"
#include "source/lens.h"
#include "verdict.h"
#include "devs_fixture.h"

#define assert_near(a, b, tol)                                                               \
    do {                                                                                     \
        double a_ = (a), b_ = (b);                                                           \
        if (!(fabs(a_ - b_) <= (tol)))                                                       \
            fail_msg("%s == %.9g, expected %.9g", #a, a_, b_);                              \
    } while (0)

#define assert_nan(a)                                                                        \
    do {                                                                                     \
        double a_ = (a);                                                                     \
        if (!isnan(a_))                                                                      \
            fail_msg("%s == %.9g, expected NAN (unknown)", #a, a_);                         \
    } while (0)

#define BE4   ((2u << 13) | 4)
#define IDLE7 ((3u << 13) | 7)

/* The log2 bucket of a time in us, as the BPF program computes it. */
static unsigned bucket_of_us(uint64_t us)
{
    unsigned b = 0;
    while (us) {
        b++;
        us >>= 1;
    }
    return b < LENS_HIST ? b : LENS_HIST - 1;
}

/* n requests of `ms` each into a stage. */
static void stage_put(struct lens_stage_sum *s, uint64_t n, double ms)
{
    s->count += n;
    s->sum_ns += (uint64_t)((double)n * ms * 1e6);
    s->hist[bucket_of_us((uint64_t)(ms * 1000))] += n;
}

/* Map sizes: twice the tasks, a power of two, within the bounds; unknown: the largest. */
static void test_entries_for(void **state)
{
    (void)state;
    assert_int_equal(lens_entries_for(0, 4096, 16384), 16384);
    assert_int_equal(lens_entries_for(1, 4096, 16384), 4096);
    assert_int_equal(lens_entries_for(2048, 4096, 16384), 4096);
    assert_int_equal(lens_entries_for(2049, 4096, 16384), 8192);
    assert_int_equal(lens_entries_for(1100, 2048, 8192), 4096);
    assert_int_equal(lens_entries_for(8191, 2048, 8192), 8192);
    assert_int_equal(lens_entries_for(10100, 4096, 16384), 16384);
    assert_int_equal(lens_entries_for((size_t)1 << 40, 4096, 16384), 16384);
    /* the request cache: twice the requests in sets, within its floor and LENS_RQ_SETS */
    assert_int_equal(lens_rq_sets_for(0), LENS_RQ_SETS);
    assert_int_equal(lens_rq_sets_for(1), LENS_RQ_SETS_MIN);
    assert_int_equal(lens_rq_sets_for(256), LENS_RQ_SETS_MIN);
    assert_int_equal(lens_rq_sets_for(512), LENS_RQ_SETS_MIN);
    assert_int_equal(lens_rq_sets_for(513), 2 * LENS_RQ_SETS_MIN);
    assert_int_equal(lens_rq_sets_for(3000), 8192);
    assert_int_equal(lens_rq_sets_for(LENS_RQ_SETS / 2), LENS_RQ_SETS);
    assert_int_equal(lens_rq_sets_for((size_t)1 << 40), LENS_RQ_SETS);
}

static void test_quantiles(void **state)
{
    (void)state;
    uint64_t h[LENS_HIST] = { 0 };
    assert_nan(lens_hist_quantile(h, LENS_HIST, 0.5));     /* empty: unknown, not 0 */
    h[12] = 100;                                           /* [2048, 4096) us */
    assert_near(lens_hist_quantile(h, LENS_HIST, 0.5), 3.072, 1e-9);
    assert_near(lens_hist_quantile(h, LENS_HIST, 0.99), 2.048 + 0.99 * 2.048, 1e-9);
    h[1] = 100;                                            /* [1, 2) us */
    assert_near(lens_hist_quantile(h, LENS_HIST, 0.25), 0.0015, 1e-12);
    assert_near(lens_hist_quantile(h, LENS_HIST, 0.75), 3.072, 1e-9);
    assert_nan(lens_hist_quantile(h, LENS_HIST, 0));       /* q outside (0, 1) */
    assert_nan(lens_hist_quantile(h, LENS_HIST, 1));
    assert_nan(lens_hist_quantile(h, LENS_HIST, NAN));
    /* bucket 0 holds [0, 1) us */
    uint64_t z[LENS_HIST] = { 7 };
    assert_near(lens_hist_quantile(z, LENS_HIST, 0.5), 0.0005, 1e-12);
}

static void test_stage_delta_and_mean(void **state)
{
    (void)state;
    struct lens_stage_sum a = { 0 }, b = { 0 }, d;
    stage_put(&a, 10, 2.0);
    b = a;
    stage_put(&b, 30, 4.0);
    assert_int_equal(lens_stage_delta(&a, &b, &d), 0);
    assert_int_equal(d.count, 30);
    assert_near(lens_stage_mean_ms(&d), 4.0, 1e-9);
    assert_int_equal(d.hist[bucket_of_us(4000)], 30);
    assert_int_equal(d.hist[bucket_of_us(2000)], 0);
    /* backwards: a reset, never a huge figure */
    assert_int_equal(lens_stage_delta(&b, &a, &d), -ERANGE);
    assert_int_equal(d.count, 0);
    struct lens_stage_sum e = { 0 };
    assert_nan(lens_stage_mean_ms(&e));
}

static void test_prio_names(void **state)
{
    (void)state;
    char buf[16];
    assert_string_equal(lens_prio_name(BE4, buf, sizeof buf), "be/4");
    assert_string_equal(lens_prio_name((1u << 13) | 0, buf, sizeof buf), "rt/0");
    assert_string_equal(lens_prio_name(IDLE7, buf, sizeof buf), "idle");
    assert_string_equal(lens_prio_name(0, buf, sizeof buf), "none");
}

static void test_wait_rows(void **state)
{
    (void)state;
    struct lens_wait_row rows[] = {
        { .id = 10, .wait_ns = 100 }, { .id = 20, .wait_ns = 500000000 }, { .id = 35 },
    };
    assert_ptr_equal(lens_wait_find(rows, 3, 20), &rows[1]);
    assert_null(lens_wait_find(rows, 3, 21));
    assert_null(lens_wait_find(rows, 0, 10));
    struct lens_wait_row later = { .id = 20, .wait_ns = 1400000000 };
    assert_near(lens_wait_pct(&rows[1], &later, 1.0), 90.0, 1e-9);
    assert_near(lens_wait_pct(NULL, &rows[1], 2.0), 25.0, 1e-9);  /* new row: all of it */
    assert_nan(lens_wait_pct(&later, &rows[1], 1.0));                /* id reused */
    assert_nan(lens_wait_pct(&rows[1], &later, 0));
    /* The interruptible part (io_uring's wait) of the same interval, apart from D. */
    struct lens_wait_row a = { .id = 30, .wait_ns = 1000000000, .intr_ns = 200000000 };
    struct lens_wait_row b = { .id = 30, .wait_ns = 1900000000, .intr_ns = 800000000 };
    assert_near(lens_wait_intr_pct(&a, &b, 1.0), 60.0, 1e-9);
    assert_near(lens_wait_intr_pct(NULL, &a, 1.0), 20.0, 1e-9);
    assert_nan(lens_wait_intr_pct(&b, &a, 1.0));                     /* id reused */
    struct lens_wait_row bad = { .id = 30, .wait_ns = 1100000000, .intr_ns = 700000000 };
    assert_nan(lens_wait_intr_pct(&a, &bad, 1.0));                   /* more than the wait */
}

static void test_depth_fit(void **state)
{
    (void)state;
    /* y = 500 us per request in flight, depths 1..4 once each: slope 0.5 ms, elasticity 1 */
    struct lens_devstat a = { 0 }, b = { 0 };
    for (uint64_t d = 1; d <= 4; d++) {
        b.n++;
        b.sd += d;
        b.sdd += d * d;
        b.sy += 500 * d;
        b.sdy += 500 * d * d;
    }
    struct lens_depth_fit f;
    assert_int_equal(lens_depth_fit(&a, &b, &f), 0);
    assert_near(f.depth, 2.5, 1e-9);
    assert_near(f.device_ms, 1.25, 1e-9);
    assert_near(f.slope_ms, 0.5, 1e-9);
    assert_near(f.elasticity, 1.0, 1e-9);
    /* constant depth: no slope can be seen */
    struct lens_devstat c = { .n = 10, .sd = 160, .sdd = 2560, .sy = 100000, .sdy = 1600000 };
    assert_int_equal(lens_depth_fit(NULL, &c, &f), 0);
    assert_nan(f.slope_ms);
    assert_nan(f.elasticity);
    assert_int_equal(lens_depth_fit(&b, &a, &f), -ERANGE);
    assert_int_equal(lens_depth_fit(&a, &a, &f), -ENODATA);
}

/* A reading with one device (7:0) and room for its priorities. */
struct rd {
    struct lens_reading r;
    struct lens_devprio dp[4];
    struct lens_devstat dev;
};

static void rd_init(struct rd *x, double mono)
{
    memset(x, 0, sizeof(*x));
    x->r.mono = mono;
    x->r.dp = x->dp;
    x->r.devs = &x->dev;
    x->r.ndevs = 1;
    x->dev.major = 7;
    x->dev.minor = 0;
}

static struct lens_devprio *rd_prio(struct rd *x, unsigned prio)
{
    for (size_t i = 0; i < x->r.ndp; i++)
        if (x->dp[i].prio == prio)
            return &x->dp[i];
    struct lens_devprio *p = &x->dp[x->r.ndp++];
    p->major = 7;
    p->minor = 0;
    p->prio = prio;
    return p;
}

/* The depth fit's sums of a device that saw depths lo..hi, 100 requests each, every
 * request taking us_per_depth x its depth + us_fixed microseconds. */
static void fit_put(struct lens_devstat *s, uint64_t lo, uint64_t hi, double us_per_depth,
                    double us_fixed)
{
    for (uint64_t d = lo; d <= hi; d++) {
        uint64_t y = (uint64_t)(us_per_depth * (double)d + us_fixed);
        s->n += 100;
        s->sd += 100 * d;
        s->sdd += 100 * d * d;
        s->sy += 100 * y;
        s->sdy += 100 * d * y;
    }
}

/* Under none on the lab disk: 16 at the device, every request ~10 ms there against a
 * service time of 2 ms. */
static void saturated_pair(struct rd *a, struct rd *b)
{
    rd_init(a, 100.0);
    rd_init(b, 101.0);
    a->dev.min_dev_ns = b->dev.min_dev_ns = 2500000;
    struct lens_devprio *be = rd_prio(b, BE4), *idle = rd_prio(b, IDLE7);
    stage_put(&be->st[LENS_ST_DEVICE], 100, 10.0);
    stage_put(&be->st[LENS_ST_TOTAL], 100, 10.0);
    stage_put(&be->st[LENS_ST_TAG], 100, 0.001);
    stage_put(&idle->st[LENS_ST_DEVICE], 1500, 10.0);
    stage_put(&idle->st[LENS_ST_TOTAL], 1500, 10.0);
}

static void test_saturated_from_the_first_interval(void **state)
{
    (void)state;
    struct rd a, b;
    saturated_pair(&a, &b);
    struct lens_dev_interval d;
    assert_int_equal(lens_dev_interval(&a.r, &b.r, 7, 0, 1.0, NAN, &d), 0);
    assert_true(d.valid);
    assert_near(d.requests, 1600, 0);
    assert_near(d.device_ms, 10.0, 1e-6);
    assert_near(d.busy_depth, 16.0, 1e-6);          /* 1600 x 10 ms in 1 s */
    assert_int_equal(d.top_class, IOC_BE);
    assert_near(d.service_ms, 2.5, 1e-9);
    assert_near(d.growth, 4.0, 1e-6);
    assert_false(d.held_back);
    assert_nan(d.sched_ms);                         /* none: no scheduler stage */
    assert_int_equal(d.saturated, 1);
    /* Without the fastest request known, no service time: unknown, not saturated. */
    b.dev.min_dev_ns = 0;
    assert_int_equal(lens_dev_interval(&a.r, &b.r, 7, 0, 1.0, NAN, &d), 0);
    assert_nan(d.growth);
    assert_int_equal(d.saturated, -1);
    /* Saturated in strict FIFO since before the lens: no request found the device free,
     * but each one's time grows with the depth it found at issue (0.6 ms a request
     * ahead, 3 served at once at 1.8 ms): saturated in this first interval. */
    fit_put(&b.dev, 15, 17, 600.0, 0.0);
    assert_int_equal(lens_dev_interval(&a.r, &b.r, 7, 0, 1.0, NAN, &d), 0);
    assert_near(d.fit.elasticity, 1.0, 1e-9);
    assert_nan(d.growth);
    assert_int_equal(d.saturated, 1);
    /* The same depths at a device with free slots: the time does not depend on them,
     * which proves nothing either way (a loaded machine's FIFO can read flat too):
     * unknown, also with a service time that makes the growth small */
    memset(&b.dev, 0, sizeof(b.dev));
    b.dev.major = 7;
    fit_put(&b.dev, 13, 19, 0.0, 10000.0);
    assert_int_equal(lens_dev_interval(&a.r, &b.r, 7, 0, 1.0, NAN, &d), 0);
    assert_near(d.fit.elasticity, 0.0, 1e-9);
    assert_int_equal(d.saturated, -1);
    b.dev.min_dev_ns = 8000000;
    assert_int_equal(lens_dev_interval(&a.r, &b.r, 7, 0, 1.0, NAN, &d), 0);
    assert_true(d.growth < LENS_SAT_GROWTH);
    assert_int_equal(d.saturated, -1);
    /* a time growing with the depth over a narrow spread of depths is not measured */
    memset(&b.dev, 0, sizeof(b.dev));
    b.dev.major = 7;
    for (int k = 0; k < 99; k++)                    /* 99 in 100 at 16, 1 at 17: sd 0.1 */
        fit_put(&b.dev, 16, 16, 600.0, 0.0);
    fit_put(&b.dev, 17, 17, 600.0, 0.0);
    assert_int_equal(lens_dev_interval(&a.r, &b.r, 7, 0, 1.0, NAN, &d), 0);
    assert_true(d.fit.depth_sd < LENS_FIT_MIN_SD);
    assert_int_equal(d.saturated, -1);
    /* A freak fast request cannot make a device saturated: the service time is never
     * taken below a quarter of the interval's p05. */
    b.dev.min_dev_ns = 1000;                        /* 1 us */
    assert_int_equal(lens_dev_interval(&a.r, &b.r, 7, 0, 1.0, NAN, &d), 0);
    assert_true(d.service_ms >= d.device_p05_ms / 4 - 1e-12);
    /* Not in either reading: nothing known. */
    assert_int_equal(lens_dev_interval(&a.r, &b.r, 8, 0, 1.0, NAN, &d), -ENODATA);
    assert_false(d.valid);
    assert_int_equal(d.saturated, -1);
}

/* Under mq-deadline: a synchronous be/4 reader served (one at a time, 3 ms at the device),
 * an idle reader's requests held in the scheduler (16 there now). */
static void held_pair(struct rd *a, struct rd *b, double be_ms)
{
    rd_init(a, 100.0);
    rd_init(b, 100.5);
    a->dev.min_dev_ns = b->dev.min_dev_ns = 2000000;
    a->dev.sched_in[3] = 100;
    a->dev.sched_out[3] = 100;
    b->dev.sched_in[3] = 166;
    b->dev.sched_out[3] = 150;
    b->dev.sched_in[2] = b->dev.sched_out[2] = 150;
    struct lens_devprio *be = rd_prio(b, BE4), *idle = rd_prio(b, IDLE7);
    stage_put(&be->st[LENS_ST_DEVICE], 150, be_ms);
    stage_put(&be->st[LENS_ST_SCHED], 150, 0.002);
    stage_put(&idle->st[LENS_ST_DEVICE], 50, 3.0);
    stage_put(&idle->st[LENS_ST_SCHED], 50, 300.0);
}

static void test_held_back_is_not_saturation(void **state)
{
    (void)state;
    struct rd a, b;
    held_pair(&a, &b, 3.0);
    struct lens_dev_interval d;
    assert_int_equal(lens_dev_interval(&a.r, &b.r, 7, 0, 0.5, NAN, &d), 0);
    assert_near(d.busy_depth, 1.2, 1e-6);           /* 200 x 3 ms in 0.5 s */
    assert_true(d.held_back);
    assert_int_equal(d.held_class, IOC_IDLE);
    assert_int_equal(d.held_now, 16);
    assert_near(d.held_sched_ms, 300.0, 1e-6);
    assert_int_equal(d.top_class, IOC_BE);
    assert_int_equal(d.saturated, 0);

    /* Bursts of the idle class let through make the served reader wait behind them at
     * the device (4.5 ms against 2): still its own I/O alone leaves free slots. */
    held_pair(&a, &b, 4.5);
    assert_int_equal(lens_dev_interval(&a.r, &b.r, 7, 0, 0.5, NAN, &d), 0);
    assert_true(d.busy_depth >= LENS_SAT_MIN_DEPTH);
    assert_true(d.growth >= LENS_SAT_GROWTH);
    assert_true(d.top_busy_depth < LENS_SAT_MIN_DEPTH);
    assert_int_equal(d.saturated, 0);

    /* The served class alone keeps the device full and its requests wait there: that
     * is saturation, held class or not. */
    held_pair(&a, &b, 10.0);
    assert_int_equal(lens_dev_interval(&a.r, &b.r, 7, 0, 0.5, NAN, &d), 0);
    assert_true(d.top_busy_depth >= LENS_SAT_MIN_DEPTH);
    assert_int_equal(d.saturated, 1);

    /* Held since before the lens started: none of it in the lens's counts, but aqu-sz
     * (counted from allocation) holds 16 more than the device does. */
    held_pair(&a, &b, 4.5);
    b.dev.sched_out[3] = b.dev.sched_in[3];
    struct lens_devprio *idl = rd_prio(&b, IDLE7);
    memset(&idl->st[LENS_ST_SCHED], 0, sizeof(idl->st[LENS_ST_SCHED]));
    assert_int_equal(lens_dev_interval(&a.r, &b.r, 7, 0, 0.5, NAN, &d), 0);
    assert_false(d.held_back);
    assert_int_equal(d.saturated, 1);               /* without aqu-sz: growth 2.25 */
    assert_int_equal(lens_dev_interval(&a.r, &b.r, 7, 0, 0.5, 17.65, &d), 0);
    assert_near(d.sched_queue, 16.0, 1e-6);
    assert_true(d.held_back);
    assert_int_equal(d.held_class, -1);             /* which class: not seen */
    assert_int_equal(d.saturated, 0);

    /* Nothing held in the scheduler now, and the idle class waited there no longer
     * than the served one: not held back. */
    held_pair(&a, &b, 3.0);
    b.dev.sched_out[3] = b.dev.sched_in[3];
    struct lens_devprio *idle = rd_prio(&b, IDLE7);
    memset(&idle->st[LENS_ST_SCHED], 0, sizeof(idle->st[LENS_ST_SCHED]));
    stage_put(&idle->st[LENS_ST_SCHED], 50, 0.002);
    assert_int_equal(lens_dev_interval(&a.r, &b.r, 7, 0, 0.5, NAN, &d), 0);
    assert_false(d.held_back);
    assert_int_equal(d.saturated, 0);               /* 1.2 at the device: free slots */
}

static void test_judge_edges(void **state)
{
    (void)state;
    struct lens_dev_interval d = { .valid = true, .requests = 19, .busy_depth = 16,
                                   .growth = 5, .top_busy_depth = 16 };
    assert_int_equal(lens_judge_saturation(&d), -1);   /* too few requests */
    d.requests = 20;
    assert_int_equal(lens_judge_saturation(&d), 1);
    d.busy_depth = 1.4;
    assert_int_equal(lens_judge_saturation(&d), 0);    /* free slots */
    /* the queue before the device: 16 readers, 4 tags (the lab disk under none) */
    d.busy_depth = 3.8;
    d.growth = 1.18;
    d.service_ms = 2.1;
    d.tag_ms = 7.5;
    assert_int_equal(lens_judge_saturation(&d), 1);
    d.tag_ms = 0.01;
    assert_int_equal(lens_judge_saturation(&d), -1);
    /* the queue in the scheduler: a 4-command SCSI disk under mq-deadline, 32 requests of
     * one class (the VM lane's test_saturation): the served class waits there itself */
    d.top_sched_ms = 32.8;
    d.busy_depth = d.top_busy_depth = 3.9;
    d.growth = 1.1;
    d.service_ms = 4.0;
    d.held_back = true;       /* (aqu-sz less the device's: the scheduler's queue) */
    assert_int_equal(lens_judge_saturation(&d), 1);
    /* a label honoured: the served class goes straight through, the held one waits */
    d.top_sched_ms = 0.1;
    assert_int_equal(lens_judge_saturation(&d), 0);
    d.held_back = false;
    d.top_sched_ms = NAN;
    assert_int_equal(lens_judge_saturation(&d), -1);
    d.busy_depth = NAN;
    d.growth = NAN;
    assert_int_equal(lens_judge_saturation(&d), -1);
    d.valid = false;
    assert_int_equal(lens_judge_saturation(&d), -1);
}

/* A counter that went backwards in one priority (the lens restarted under the same
 * reader is impossible, but a hash entry can be evicted and made again): that priority
 * says nothing this interval, the others still count. */
static void test_reset_priority_skipped(void **state)
{
    (void)state;
    struct rd a, b;
    saturated_pair(&a, &b);
    struct lens_devprio *old = rd_prio(&a, IDLE7);
    stage_put(&old->st[LENS_ST_DEVICE], 5000, 10.0);
    struct lens_dev_interval d;
    assert_int_equal(lens_dev_interval(&a.r, &b.r, 7, 0, 1.0, NAN, &d), 0);
    assert_near(d.requests, 100, 0);
}

/* ---- delta.c: io_delay_source ---- */

/* Sampled timing (lens_maps.h): on a fast device 1 in 2^shift requests is timed and each
 * adds 2^shift to the stage counts. The interval's request count comes from the exact
 * issue and depth counts, the share timed from the unweighted count; means, percentiles
 * and the verdict read the weighted stages as they would every request. */
static void test_sampled_interval(void **state)
{
    (void)state;
    struct rd a, b;
    saturated_pair(&a, &b);
    /* 1600 weighted = 200 timed at 1 in 8, out of 1605 completed (1610 issued, 5 in
     * flight at the end of the interval, none before). */
    b.dev.issued = 1610;
    b.dev.done = 1605;
    b.dev.inflight = 5;
    b.dev.timed = 200;
    struct lens_dev_interval d;
    assert_int_equal(lens_dev_interval(&a.r, &b.r, 7, 0, 1.0, NAN, &d), 0);
    assert_near(d.requests, 1605, 1e-9);
    assert_near(d.sampled, 200.0 / 1605, 1e-9);
    assert_near(d.device_ms, 10.0, 0.001);
    assert_int_equal(d.saturated, 1);

    /* Every request timed: the share is 1, and the weighted count is the exact one. */
    b.dev.timed = 1605;
    assert_int_equal(lens_dev_interval(&a.r, &b.r, 7, 0, 1.0, NAN, &d), 0);
    assert_near(d.sampled, 1.0, 1e-9);
    /* Requests issued before the interval and timed in it may push the ratio past 1. */
    b.dev.timed = 1700;
    assert_near(lens_sampled_share(&a.dev, &b.dev, 1600), 1.0, 1e-9);

    /* Nothing completed: the share is unknown, and so is a count that went backwards. */
    assert_nan(lens_sampled_share(&b.dev, &b.dev, 0));
    assert_near(lens_done(&b.dev, &b.dev), 0, 1e-9);
    a.dev.done = 2000;
    assert_near(lens_done(&a.dev, &b.dev), -1, 1e-9);
    assert_nan(lens_sampled_share(&a.dev, &b.dev, 1600));
    /* Then the weighted count stands in for the exact one. */
    assert_int_equal(lens_dev_interval(&a.r, &b.r, 7, 0, 1.0, NAN, &d), 0);
    assert_near(d.requests, 1600, 1e-9);
    assert_nan(d.sampled);

    /* A reading without the count of timed requests (timed 0, stages filled): unknown,
     * not "none timed". */
    a.dev.done = 0;
    b.dev.timed = 0;
    assert_nan(lens_sampled_share(&a.dev, &b.dev, 1600));
    /* Completions with nothing timed and no stage count: none of them was in the sample. */
    assert_near(lens_sampled_share(&a.dev, &b.dev, 0), 0, 1e-9);
    /* Without prev, since the lens started. */
    assert_near(lens_done(NULL, &b.dev), 1605, 1e-9);
}

/* The duty cycle (lens.h): the interval's figures are the windows'; divided by the
 * attached share they estimate the interval's, and what the lens cannot know for the
 * whole interval (the scheduler's count now) is unknown. */
static void test_duty_interval(void **state)
{
    (void)state;
    struct rd a, b;
    saturated_pair(&a, &b);
    b.dev.timed = 200;
    /* Always attached: duty 1, nothing scaled. */
    assert_near(lens_duty(&a.r, &b.r), 1.0, 1e-12);
    /* Detached 0.875 s of the second: 1/8 attached, its 1600 weighted requests stand for
     * 12,800, 16 at the device while watched. */
    a.r.detached_s = 5.0;
    b.r.detached_s = 5.875;
    assert_near(lens_duty(&a.r, &b.r), 0.125, 1e-9);
    struct lens_dev_interval d;
    b.dev.done = 1700;           /* completions also of requests issued between windows */
    assert_int_equal(lens_dev_interval(&a.r, &b.r, 7, 0, 1.0, NAN, &d), 0);
    assert_near(d.duty, 0.125, 1e-9);
    assert_near(d.requests, 12800, 1e-6);
    assert_near(d.sampled, 200.0 / 12800, 1e-9);
    assert_near(d.busy_depth, 16.0 * 8, 1e-6);
    assert_near(d.device_ms, 10.0, 1e-6);          /* means stay the sample's */
    assert_true(d.held_now == LENS_HELD_UNKNOWN);
    /* The per-priority rows scale alike, their buckets still adding up to the count. */
    struct lens_stage_sum st = { 0 };
    stage_put(&st, 3, 0.1);
    stage_put(&st, 5, 10.0);
    lens_stage_scale(&st, 8);
    assert_int_equal(st.count, 64);
    assert_int_equal(st.hist[bucket_of_us(100)], 24);
    assert_near(lens_stage_mean_ms(&st), (3 * 0.1 + 5 * 10.0) / 8, 1e-6);
    /* Since the lens started (no previous reading, or one without a read time). */
    b.r.since = 100.0;
    b.r.detached_s = 0.5;
    assert_near(lens_duty(NULL, &b.r), 0.5, 1e-9);
    struct lens_reading empty = { 0 };
    assert_near(lens_duty(&empty, &b.r), 0.5, 1e-9);
    /* An empty interval says nothing; a detached time past it is clamped. */
    assert_nan(lens_duty(&b.r, &b.r));
    b.r.detached_s = 9;
    assert_near(lens_duty(NULL, &b.r), 0, 1e-12);
    /* Never attached in the interval: no estimate (not 0 requests). */
    a.r.detached_s = 0;
    b.r.detached_s = 1;
    assert_int_equal(lens_dev_interval(&a.r, &b.r, 7, 0, 1.0, NAN, &d), 0);
    assert_nan(d.requests);
    assert_nan(d.busy_depth);
}

/* loop1's stages.sampled in each sample of a copy of rec-lens.jsonl whose
 * `"sampled":null,` is replaced by `with` (NULL: removed, a recording made before the
 * key). */
static void replay_sampled(const char *with, double *got, size_t max, size_t *n,
                           bool refused)
{
    const char *dir = getenv("IOTRIAGE_FIXTURES");
    char path[512], err[512];
    snprintf(path, sizeof(path), "%s/replay/rec-lens.jsonl", dir ? dir : "tests/fixtures");
    FILE *in = fopen(path, "r");
    char tmp[] = "/tmp/iotriage-lens-sampled.XXXXXX";
    int fd = mkstemp(tmp);
    FILE *out = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (!in || !out)
        fail_msg("cannot copy %s", path);
    static char line[1 << 20];
    static const char key[] = "\"sampled\":null,";
    while (fgets(line, sizeof(line), in)) {
        char *p = line, *at;
        while ((at = strstr(p, key))) {
            fwrite(p, 1, (size_t)(at - p), out);
            if (with)
                fputs(with, out);
            p = at + strlen(key);
        }
        fputs(p, out);
    }
    fclose(in);
    fclose(out);
    struct replay *rp;
    if (replay_open(&rp, tmp, err, sizeof(err)) != 0)
        fail_msg("%s", err);
    struct replay_frame f = { 0 };
    *n = 0;
    for (size_t i = 0; i < replay_count(rp) && *n < max; i++) {
        if (replay_load(rp, i, &f, err, sizeof(err)) != 0) {
            if (!refused)
                fail_msg("sample %zu: %s", i, err);
            assert_non_null(strstr(err, "sampled"));
            *n = SIZE_MAX;
            break;
        }
        for (size_t k = 0; k < f.res.ndevs; k++)
            if (strcmp(f.res.devs[k].dev->ds.name, "loop1") == 0 && f.res.devs[k].lens.valid)
                got[(*n)++] = f.res.devs[k].lens.sampled;
    }
    replay_frame_free(&f);
    replay_close(rp);
    unlink(tmp);
}

/* The share timed is recorded and replayed; a recording made before it replays with
 * the share unknown, everything else as it was. */
static void test_sampled_replay(void **state)
{
    (void)state;
    double got[8];
    size_t n;
    replay_sampled("\"sampled\":0.125,", got, 8, &n, false);
    assert_true(n >= 2);
    for (size_t i = 0; i < n; i++)
        assert_near(got[i], 0.125, 1e-12);
    replay_sampled(NULL, got, 8, &n, false);
    assert_true(n >= 2);
    for (size_t i = 0; i < n; i++)
        assert_nan(got[i]);
    replay_sampled("\"sampled\":\"x\",", got, 8, &n, true);    /* a string: refused */
    assert_true(n == SIZE_MAX);
}

static void set_snap(struct snapshot *s, double mono, struct task_sample *tasks, size_t n)
{
    memset(s, 0, sizeof(*s));
    s->mono = mono;
    s->clk_tck = 100;
    s->tasks = tasks;
    s->ntasks = n;
    s->delayacct = DA_OFF;
    s->delayacct_since_ticks = -1;
    for (int k = 0; k < PSI_NRES; k++)
        s->psi[k].err = -ENOENT;
}

static void set_task(struct task_sample *t, pid_t id, char state)
{
    memset(t, 0, sizeof(*t));
    t->id = t->tgid = id;
    t->start_ticks = 5;
    t->comm = t->cmdline = t->user = "";
    t->policy = SCHED_OTHER;
    t->nlwp = 1;
    t->state = state;
}

/* The duty cycle (lens.h): the waits that began in the windows, scaled by the share of
 * the interval the scheduler program watched (lens_duty). */
static void test_delay_from_the_lens_cycled(void **state)
{
    (void)state;
    struct task_sample pt[3], ct[3];
    set_task(&pt[0], 100, 'S');   /* waited in the windows */
    set_task(&pt[1], 200, 'S');   /* a row, no wait in the windows, running or asleep */
    set_task(&pt[2], 300, 'D');   /* a row, no wait in the windows, in D now */
    memcpy(ct, pt, sizeof(ct));
    struct snapshot p, c;
    set_snap(&p, 10.0, pt, 3);
    set_snap(&c, 12.0, ct, 3);
    struct lens_wait_row prow[3] = {
        { .id = 100, .tgid = 100, .wait_ns = 1000000000, .waits = 100, .intr_ns = 100000000 },
        { .id = 200, .tgid = 200, .wait_ns = 50000000, .waits = 5 },
        { .id = 300, .tgid = 300, .wait_ns = 70000000, .waits = 7 } };
    struct lens_wait_row crow[3] = {
        { .id = 100, .tgid = 100, .wait_ns = 1400000000, .waits = 140, .intr_ns = 150000000 },
        { .id = 200, .tgid = 200, .wait_ns = 50000000, .waits = 5 },
        { .id = 300, .tgid = 300, .wait_ns = 70000000, .waits = 7 } };
    p.lens_on = c.lens_on = true;
    p.lens.tgids = prow;
    p.lens.ntgids = 3;
    c.lens.tgids = crow;
    c.lens.ntgids = 3;
    /* 2 s between the readings, 1.5 of them detached: a duty of 0.25 */
    p.lens.since = c.lens.since = 1.0;
    p.lens.mono = 10.0;
    c.lens.mono = 12.0;
    p.lens.detached_s = 5.0;
    c.lens.detached_s = 6.5;
    struct baselines hist = { 0 };
    struct result r;
    delta_compute(&p, &c, &hist, &r);
    assert_int_equal(r.tasks[0].io_delay_source, DELAY_SRC_BPF);
    /* 0.4 s of waits in 0.5 s watched: 80 %, of which 0.05 s interruptible (io_uring:
     * 10 %, taken out of IODLY) */
    assert_near(r.tasks[0].uring_wait_pct, 10.0, 1e-9);
    assert_near(r.tasks[0].io_delay_pct, 70.0, 1e-9);
    assert_near(r.tasks[0].blkio_avg_ms, 10.0, 1e-9);           /* a wait's mean: unscaled */
    assert_int_equal(r.tasks[1].io_delay_source, DELAY_SRC_BPF);
    assert_near(r.tasks[1].io_delay_pct, 0.0, 0);
    /* In D now and no wait began in the windows: one may have begun before them. */
    assert_int_equal(r.tasks[2].io_delay_source, DELAY_SRC_UNKNOWN);
    assert_nan(r.tasks[2].io_delay_pct);
    result_free(&r);

    /* No window in the interval: nothing was watched, nothing is known. */
    c.lens.detached_s = 7.0;
    delta_compute(&p, &c, &hist, &r);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(r.tasks[i].io_delay_source, DELAY_SRC_UNKNOWN);
        assert_nan(r.tasks[i].io_delay_pct);
    }
    result_free(&r);

    /* Attached throughout (no detached time): as without the duty cycle. */
    c.lens.detached_s = 5.0;
    delta_compute(&p, &c, &hist, &r);
    assert_near(r.tasks[0].io_delay_pct, 17.5, 1e-9);           /* (0.4 - 0.05) s of 2 s */
    assert_int_equal(r.tasks[2].io_delay_source, DELAY_SRC_BPF);
    assert_near(r.tasks[2].io_delay_pct, 0.0, 0);
    result_free(&r);
}

static void test_delay_from_the_lens(void **state)
{
    (void)state;
    struct task_sample pt[3], ct[3];
    set_task(&pt[0], 100, 'D');   /* waits: row in both readings */
    set_task(&pt[1], 200, 'S');   /* never waited: no row */
    set_task(&pt[2], 300, 'D');   /* no row, but asleep in D now: a wait from before */
    memcpy(ct, pt, sizeof(ct));
    struct snapshot p, c;
    set_snap(&p, 10.0, pt, 3);
    set_snap(&c, 12.0, ct, 3);
    struct lens_wait_row prow = { .id = 100, .tgid = 100, .wait_ns = 1000000000, .waits = 100 };
    struct lens_wait_row crow = { .id = 100, .tgid = 100, .wait_ns = 2900000000, .waits = 300 };
    p.lens_on = c.lens_on = true;
    p.lens.tgids = &prow;
    p.lens.ntgids = 1;
    c.lens.tgids = &crow;
    c.lens.ntgids = 1;
    struct baselines hist = { 0 };
    struct result r;
    delta_compute(&p, &c, &hist, &r);
    assert_true(r.tasks[0].delay_valid);
    assert_int_equal(r.tasks[0].io_delay_source, DELAY_SRC_BPF);
    assert_near(r.tasks[0].io_delay_pct, 95.0, 1e-9);           /* 1.9 s of 2 s */
    assert_near(r.tasks[0].blkio_avg_ms, 9.5, 1e-9);            /* 1.9 s / 200 waits */
    assert_nan(r.tasks[0].swapin_delay_pct);
    assert_string_equal(delay_source_name(r.tasks[0].io_delay_source), "bpf");
    assert_int_equal(r.tasks[1].io_delay_source, DELAY_SRC_BPF);
    assert_near(r.tasks[1].io_delay_pct, 0.0, 0);
    assert_int_equal(r.tasks[2].io_delay_source, DELAY_SRC_UNKNOWN);
    assert_false(r.tasks[2].delay_valid);
    assert_nan(r.tasks[2].io_delay_pct);
    assert_null(delay_source_name(r.tasks[2].io_delay_source));
    result_free(&r);

    /* A full map may have evicted a task's row: absent means unknown then. */
    c.lens.tgids_full = true;
    delta_compute(&p, &c, &hist, &r);
    assert_int_equal(r.tasks[1].io_delay_source, DELAY_SRC_UNKNOWN);
    assert_nan(r.tasks[1].io_delay_pct);
    result_free(&r);

    /* Two readings of two lenses (the sampler opened again): nothing from them. */
    c.lens.since = 11.5;
    delta_compute(&p, &c, &hist, &r);
    assert_int_equal(r.tasks[0].io_delay_source, DELAY_SRC_UNKNOWN);
    assert_int_equal(r.tasks[1].io_delay_source, DELAY_SRC_UNKNOWN);
    result_free(&r);
    c.lens.since = 0;

    /* Without the lens in the previous snapshot, nothing comes from it. */
    p.lens_on = false;
    c.lens.tgids_full = false;
    delta_compute(&p, &c, &hist, &r);
    assert_int_equal(r.tasks[0].io_delay_source, DELAY_SRC_UNKNOWN);
    assert_nan(r.tasks[0].io_delay_pct);
    result_free(&r);

    /* taskstats first: when delay accounting has the task, the lens is not asked. */
    p.lens_on = true;
    p.delayacct = c.delayacct = DA_ON;
    p.delayacct_since_ticks = c.delayacct_since_ticks = 0;
    pt[0].delay_valid = ct[0].delay_valid = true;
    ct[0].delay.blkio_delay_ns = 400000000;        /* 0.4 s of 2 s: 20 % */
    ct[0].delay.blkio_count = 10;
    delta_compute(&p, &c, &hist, &r);
    assert_int_equal(r.tasks[0].io_delay_source, DELAY_SRC_TASKSTATS);
    assert_near(r.tasks[0].io_delay_pct, 20.0, 1e-9);
    result_free(&r);
    baselines_free(&hist);
}

/* The priority the requests carried (issue #35): a process's bytes to one device at two
 * priorities (an io_uring or libaio reader whose requests carry their own) are two rows,
 * kept apart over the interval, in the order of their priority. */
static void test_submit_interval_prio(void **state)
{
    (void)state;
    const unsigned be4 = (unsigned)IOPRIO_MAKE(IOC_BE, 4), idle = (unsigned)IOPRIO_MAKE(IOC_IDLE, 0);
    struct lens_submit_row pr[] = {
        { .tgid = 100, .major = 8, .minor = 0, .prio = be4, .bytes = 4096, .bios = 1 },
    };
    struct lens_submit_row cr[] = {
        { .tgid = 100, .major = 8, .minor = 0, .prio = be4,  .bytes = 12288, .bios = 3 },
        { .tgid = 100, .major = 8, .minor = 0, .prio = idle, .bytes = 65536, .bios = 16 },
    };
    struct lens_submit_row sh[2] = { cr[1], cr[0] };
    qsort(sh, 2, sizeof(*sh), lens_submit_cmp);
    assert_memory_equal(sh, cr, sizeof(cr));
    struct lens_reading p = { .subs = pr, .nsubs = 1 }, c = { .subs = cr, .nsubs = 2 };
    struct lens_submit_row out[4];
    assert_int_equal(lens_submit_interval(&p, &c, 100, out, 4), 2);
    assert_int_equal(out[0].prio, be4);
    assert_int_equal(out[0].bytes, 8192);         /* its own previous row subtracted */
    assert_int_equal(out[1].prio, idle);
    assert_int_equal(out[1].bytes, 65536);        /* new: all of it, not less be/4's */
}

/* Who submitted (issue 14): bytes per (process, device) over an interval. */
static void test_submit_interval(void **state)
{
    (void)state;
    struct lens_submit_row pr[] = {
        { .tgid = 0,   .major = 7, .minor = 1, .bytes = 1000, .bios = 1 },   /* kernel */
        { .tgid = 100, .major = 7, .minor = 1, .bytes = 4096, .bios = 1 },
        { .tgid = 100, .major = 8, .minor = 1, .bytes = 8192, .bios = 2 },
        { .tgid = 100, .major = 8, .minor = 2, .bytes = 500,  .bios = 5 },
        { .tgid = 200, .major = 7, .minor = 1, .bytes = 9999, .bios = 9 },
    };
    struct lens_submit_row cr[] = {
        { .tgid = 0,   .major = 7, .minor = 1, .bytes = 3000, .bios = 3 },
        { .tgid = 100, .major = 7, .minor = 1, .bytes = 4096, .bios = 1 },   /* idle */
        { .tgid = 100, .major = 8, .minor = 0, .bytes = 700,  .bios = 1 },   /* new */
        { .tgid = 100, .major = 8, .minor = 1, .bytes = 12288, .bios = 3 },  /* grew */
        { .tgid = 100, .major = 8, .minor = 2, .bytes = 300,  .bios = 2 },   /* evicted, again */
        { .tgid = 200, .major = 7, .minor = 1, .bytes = 20000, .bios = 19 },
    };
    struct lens_reading p = { .subs = pr, .nsubs = 5 }, c = { .subs = cr, .nsubs = 6 };
    /* the reader sorts the rows: a shuffled copy sorts back to the same order */
    struct lens_submit_row sh[6] = { cr[5], cr[2], cr[0], cr[4], cr[1], cr[3] };
    qsort(sh, 6, sizeof(*sh), lens_submit_cmp);
    assert_memory_equal(sh, cr, sizeof(cr));

    struct lens_submit_row out[8];
    size_t n = lens_submit_interval(&p, &c, 100, out, 8);
    assert_int_equal(n, 3);                       /* 7:1 moved nothing: not listed */
    assert_int_equal(out[0].minor, 0);
    assert_int_equal(out[0].bytes, 700);          /* absent before: all of it */
    assert_int_equal(out[1].minor, 1);
    assert_int_equal(out[1].bytes, 4096);
    assert_int_equal(out[1].bios, 1);
    assert_int_equal(out[2].minor, 2);
    assert_int_equal(out[2].bytes, 300);          /* smaller than before: a lower bound */
    assert_int_equal(out[2].bios, 2);
    n = lens_submit_interval(&p, &c, LENS_SUBMIT_KERNEL, out, 8);
    assert_int_equal(n, 1);
    assert_int_equal(out[0].bytes, 2000);
    n = lens_submit_interval(&p, &c, 200, out, 8);
    assert_int_equal(n, 1);
    assert_int_equal(out[0].bytes, 10001);
    assert_int_equal(lens_submit_interval(&p, &c, 300, out, 8), 0);    /* no rows */
    assert_int_equal(lens_submit_interval(NULL, &c, 100, out, 8), 0);  /* no interval */
    /* more rows than room: the count says so, only max written */
    memset(out, 0xee, sizeof(out));
    assert_int_equal(lens_submit_interval(&p, &c, 100, out, 1), 3);
    assert_int_equal(out[0].bytes, 700);
    assert_int_equal(out[1].tgid, (pid_t)0xeeeeeeee);
}

/* The asynchronous wait (issue #35): the completions' latency sums per submitter, over
 * the interval, with the bytes; a row whose requests completed in the interval but were
 * submitted before it is listed (its bytes did not move). */
static void test_submit_wait(void **state)
{
    (void)state;
    struct lens_submit_row pr[] = {
        { .tgid = 100, .major = 8, .minor = 0, .bytes = 4096, .bios = 1, .wait_ns = 5000000, .rqs = 1 },
        { .tgid = 100, .major = 8, .minor = 16, .bytes = 4096, .bios = 1, .wait_ns = 0, .rqs = 0 },
        { .tgid = 100, .major = 8, .minor = 32, .bytes = 4096, .bios = 1, .wait_ns = 900000000, .rqs = 90 },
    };
    struct lens_submit_row cr[] = {
        /* 16 more requests, 20 ms each: 320 ms of requests in flight */
        { .tgid = 100, .major = 8, .minor = 0, .bytes = 69632, .bios = 17, .wait_ns = 325000000, .rqs = 17 },
        /* nothing submitted, its one request completed: 2 ms */
        { .tgid = 100, .major = 8, .minor = 16, .bytes = 4096, .bios = 1, .wait_ns = 2000000, .rqs = 1 },
        /* smaller wait than before: evicted and made again, all of it the interval's */
        { .tgid = 100, .major = 8, .minor = 32, .bytes = 8192, .bios = 2, .wait_ns = 30000000, .rqs = 3 },
    };
    struct lens_reading p = { .subs = pr, .nsubs = 3 }, c = { .subs = cr, .nsubs = 3 };
    struct lens_submit_row out[4];
    assert_int_equal(lens_submit_interval(&p, &c, 100, out, 4), 3);
    assert_int_equal(out[0].bytes, 65536);
    assert_int_equal(out[0].wait_ns, 320000000);
    assert_int_equal(out[0].rqs, 16);
    assert_int_equal(out[1].minor, 16);           /* listed for its completion alone */
    assert_int_equal(out[1].bytes, 0);
    assert_int_equal(out[1].wait_ns, 2000000);
    assert_int_equal(out[1].rqs, 1);
    assert_int_equal(out[2].bytes, 8192);
    assert_int_equal(out[2].wait_ns, 30000000);
    assert_int_equal(out[2].rqs, 3);

    double inf, aw;
    lens_submit_wait((double)out[0].wait_ns, (double)out[0].rqs, 2.0, &inf, &aw);
    assert_float_equal(inf, 0.16, 1e-9);         /* 320 ms over 2 s */
    assert_float_equal(aw, 20.0, 1e-9);
    /* the duty cycle watched 1/16 of 2 s: the same sums stand for 16 times as much */
    lens_submit_wait((double)out[0].wait_ns, (double)out[0].rqs, 2.0 / 16, &inf, &aw);
    assert_float_equal(inf, 2.56, 1e-9);
    assert_float_equal(aw, 20.0, 1e-9);
    lens_submit_wait(0, 0, 2.0, &inf, &aw);       /* submitted, nothing completed */
    assert_float_equal(inf, 0.0, 0);
    assert_true(isnan(aw));
    lens_submit_wait(100, 1, 0, &inf, &aw);       /* no interval */
    assert_true(isnan(inf) && isnan(aw));
}

/* The device list's source, from the bits the sampler sets. */
static void test_devices_from(void **state)
{
    (void)state;
    struct task_devs td = { .known = true, .n = 2, .idx = { 0, 1 } };
    td.from_files = 3;
    assert_string_equal(task_devs_source(&td), "files");
    td.from_lens = 2;
    assert_string_equal(task_devs_source(&td), "both");
    td.from_files = 0;
    td.from_lens = 3;
    assert_string_equal(task_devs_source(&td), "lens");
    td.n = 0;
    assert_null(task_devs_source(&td));          /* no device: nothing to say */
    td.n = 2;
    td.err = -EACCES;
    assert_null(task_devs_source(&td));
    assert_null(task_devs_source(NULL));
}

/* writeback_bps: what kernel threads submitted to a disk and its partitions, NAN
 * without the lens. */
static void test_writeback_bps(void **state)
{
    (void)state;
    struct dev_sample dv[3];
    devs_fixture(dv);
    struct snapshot p, c;
    set_snap(&p, 10.0, NULL, 0);
    set_snap(&c, 12.0, NULL, 0);
    p.devs = c.devs = dv;
    p.ndevs = c.ndevs = 3;
    struct lens_submit_row pr[] = {
        { .tgid = 0, .major = 8, .minor = 16, .bytes = 100 },
        { .tgid = 0, .major = 8, .minor = 17, .bytes = 1000 },
        { .tgid = 42, .major = 8, .minor = 32, .bytes = 0 },
    };
    struct lens_submit_row cr[] = {
        { .tgid = 0, .major = 8, .minor = 16, .bytes = 2100 },     /* +2000 on the disk */
        { .tgid = 0, .major = 8, .minor = 17, .bytes = 5000 },     /* +4000 on sdb1 */
        { .tgid = 42, .major = 8, .minor = 32, .bytes = 8000 },    /* a process: not it */
    };
    p.lens.subs = pr, p.lens.nsubs = 3;
    c.lens.subs = cr, c.lens.nsubs = 3;
    p.lens_on = c.lens_on = true;
    struct baselines hist = { 0 };
    struct result r;
    delta_compute(&p, &c, &hist, &r);
    assert_near(r.devs[0].kernel_bps, 3000.0, 1e-9);   /* (2000 + 4000) / 2 s */
    assert_near(r.devs[1].kernel_bps, 2000.0, 1e-9);   /* the partition's own */
    assert_near(r.devs[2].kernel_bps, 0.0, 0);         /* the lens saw none: 0, known */
    result_free(&r);
    /* duty-cycled with no window in the interval (detached all 2 s): it saw nothing,
     * and nothing is known, not 0 */
    p.lens.mono = 10.0, c.lens.mono = 12.0;
    p.lens.detached_s = 5.0, c.lens.detached_s = 7.0;
    delta_compute(&p, &c, &hist, &r);
    assert_nan(r.devs[0].kernel_bps);
    assert_nan(r.devs[2].kernel_bps);
    result_free(&r);
    /* half the interval watched: the windows' bytes, doubled */
    c.lens.detached_s = 6.0;
    delta_compute(&p, &c, &hist, &r);
    assert_near(r.devs[0].kernel_bps, 6000.0, 1e-9);
    result_free(&r);
    p.lens.detached_s = c.lens.detached_s = 0;
    p.lens_on = false;
    delta_compute(&p, &c, &hist, &r);
    assert_nan(r.devs[0].kernel_bps);
    result_free(&r);
    delta_compute(NULL, &c, &hist, &r);
    assert_nan(r.devs[0].kernel_bps);
    result_free(&r);
    baselines_free(&hist);
}

/* The time a load of `rate` requests a second, steady from t = 0, takes to start the
 * duty cycle (the thread's probes, run on a synthetic clock); 0 when it never does
 * within 10 s. */
static uint64_t duty_engage_ns(double rate)
{
    struct lens_duty_ctl c = { 0 };
    uint64_t t = 0;
    while (t < 10000000000ull) {
        uint64_t span = lens_duty_phase_ns(&c);
        t += span;
        if (lens_duty_step(&c, span, (uint64_t)(rate * (double)span / 1e9)))
            return t;
    }
    return 0;
}

/* A monitor is started during an incident, on a machine already at full rate: the
 * cycle must engage within the first refresh, not after 1.6 s of every request program
 * running (issue #40: "request programs attached 30 % of the time" in 5 s runs). */
static void test_duty_engages_fast(void **state)
{
    (void)state;
    uint64_t t = duty_engage_ns(100000);
    assert_true(t > 0);
    assert_true(t <= 300000000ull);
    /* and just above the rate too, within two probes */
    t = duty_engage_ns(LENS_TIMED_RATE * 1.2);
    assert_true(t > 0 && t <= 300000000ull);
}

static void test_duty_controller(void **state)
{
    (void)state;
    /* Below the rate: never; at twice it: after LENS_DUTY_CHECKS probes. */
    assert_int_equal(duty_engage_ns(LENS_TIMED_RATE * 0.9), 0);
    assert_int_equal(duty_engage_ns(LENS_TIMED_RATE * 2.0),
                     LENS_DUTY_CHECKS * LENS_DUTY_PROBE_NS);
    /* One probe past it, one under: the count starts again. */
    struct lens_duty_ctl c = { 0 };
    uint64_t p = lens_duty_phase_ns(&c);
    assert_false(lens_duty_step(&c, p, (uint64_t)(LENS_TIMED_RATE * 2.0 * (double)p / 1e9)));
    assert_false(lens_duty_step(&c, p, 0));
    assert_false(lens_duty_step(&c, p, (uint64_t)(LENS_TIMED_RATE * 2.0 * (double)p / 1e9)));
    assert_true(lens_duty_step(&c, p, (uint64_t)(LENS_TIMED_RATE * 2.0 * (double)p / 1e9)));
    assert_true(c.cycling);
    assert_int_equal(lens_duty_phase_ns(&c), LENS_DUTY_PERIOD_NS);
    /* Cycling: windows between LENS_DUTY_LOW and the rate keep it (hysteresis); two
     * windows under LENS_DUTY_LOW in a row stop it. An empty span changes nothing. */
    uint64_t w = LENS_DUTY_WINDOW_NS;
    for (int i = 0; i < 5; i++)
        assert_false(lens_duty_step(&c, w, (uint64_t)(LENS_DUTY_LOW * 1.1 * (double)w / 1e9)));
    assert_false(lens_duty_step(&c, w, 0));
    assert_false(lens_duty_step(&c, 0, 0));
    assert_true(c.cycling);
    assert_true(lens_duty_step(&c, w, 0));
    assert_false(c.cycling);
    assert_int_equal(lens_duty_phase_ns(&c), LENS_DUTY_PROBE_NS);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_entries_for),
        cmocka_unit_test(test_quantiles),
        cmocka_unit_test(test_stage_delta_and_mean),
        cmocka_unit_test(test_prio_names),
        cmocka_unit_test(test_wait_rows),
        cmocka_unit_test(test_depth_fit),
        cmocka_unit_test(test_saturated_from_the_first_interval),
        cmocka_unit_test(test_held_back_is_not_saturation),
        cmocka_unit_test(test_judge_edges),
        cmocka_unit_test(test_reset_priority_skipped),
        cmocka_unit_test(test_sampled_interval),
        cmocka_unit_test(test_sampled_replay),
        cmocka_unit_test(test_duty_interval),
        cmocka_unit_test(test_duty_controller),
        cmocka_unit_test(test_duty_engages_fast),
        cmocka_unit_test(test_delay_from_the_lens),
        cmocka_unit_test(test_delay_from_the_lens_cycled),
        cmocka_unit_test(test_submit_interval),
        cmocka_unit_test(test_submit_interval_prio),
        cmocka_unit_test(test_submit_wait),
        cmocka_unit_test(test_devices_from),
        cmocka_unit_test(test_writeback_bps),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
