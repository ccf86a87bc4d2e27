/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Tests for delta.c: two hand-built snapshots in, rates and verdicts out.
 *
 * No sampler, no fixtures: every snapshot is built here from numbers, and every expected
 * value is worked out by hand in the comment next to it, with the iostat formulas of
 * KERNEL-FACTS section 5 (sectors are 512 bytes, tick fields are ms and 32-bit).
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
#include <string.h>

#include "delta.h"

/* ------------------------------------------------------------------------------------------ */
/* Helpers                                                                                     */
/* ------------------------------------------------------------------------------------------ */

#define assert_double_eq(a, b)                                                                \
    do {                                                                                      \
        double a_ = (a), b_ = (b);                                                            \
        if (!(fabs(a_ - b_) <= 1e-9 * fmax(1.0, fabs(b_))))                                   \
            fail_msg("%s == %.12g, expected %.12g", #a, a_, b_);                             \
    } while (0)

#define assert_nan(a)                                                                         \
    do {                                                                                      \
        double a_ = (a);                                                                      \
        if (!isnan(a_))                                                                       \
            fail_msg("%s == %.12g, expected NAN (unknown)", #a, a_);                         \
    } while (0)

static void set_dev(struct dev_sample *d, const char *name, unsigned major, unsigned minor,
                    unsigned nfields)
{
    memset(d, 0, sizeof(*d));
    snprintf(d->ds.name, sizeof(d->ds.name), "%s", name);
    d->ds.major = major;
    d->ds.minor = minor;
    d->ds.nfields = nfields;
}

static void set_snap(struct snapshot *s, double mono, struct dev_sample *devs, size_t ndevs)
{
    memset(s, 0, sizeof(*s));
    s->mono = mono;
    s->clk_tck = 100;
    s->devs = devs;
    s->ndevs = ndevs;
    s->delayacct = DA_OFF;
    s->delayacct_since_ticks = -1;
    for (int k = 0; k < PSI_NRES; k++)
        s->psi[k].err = -ENOENT;
}

static void set_task(struct task_sample *t, pid_t id, unsigned long long start)
{
    memset(t, 0, sizeof(*t));
    t->id = id;
    t->tgid = id;
    t->start_ticks = start;
    t->comm = t->cmdline = t->user = "";
    t->policy = SCHED_OTHER;
}

/* delta_compute with a history that lives for this one call (PSI and task tests, which
 * have no devices). */
static void compute(const struct snapshot *prev, const struct snapshot *cur, struct result *res)
{
    struct baselines hist = { 0 };
    delta_compute(prev, cur, &hist, res);
    baselines_free(&hist);
}

/* Every rate of a device unknown. */
static void assert_dev_all_nan(const struct dev_rates *r)
{
    assert_nan(r->r_s);
    assert_nan(r->w_s);
    assert_nan(r->d_s);
    assert_nan(r->f_s);
    assert_nan(r->rkb_s);
    assert_nan(r->wkb_s);
    assert_nan(r->dkb_s);
    assert_nan(r->rrqm_s);
    assert_nan(r->wrqm_s);
    assert_nan(r->drqm_s);
    assert_nan(r->rrqm_pct);
    assert_nan(r->wrqm_pct);
    assert_nan(r->drqm_pct);
    assert_nan(r->r_await);
    assert_nan(r->w_await);
    assert_nan(r->d_await);
    assert_nan(r->f_await);
    assert_nan(r->rareq_sz);
    assert_nan(r->wareq_sz);
    assert_nan(r->dareq_sz);
    assert_nan(r->aqu_sz);
    assert_nan(r->util);
    assert_nan(r->await);
}

/* The reference pair of samples for the formula tests, 17 fields each. prev: */
static const uint64_t REF_PREV[DS_NFIELDS] = {
    [DS_RD_IOS] = 200,  [DS_RD_MERGES] = 10, [DS_RD_SECT] = 1600, [DS_RD_TICKS] = 300,
    [DS_WR_IOS] = 100,  [DS_WR_MERGES] = 0,  [DS_WR_SECT] = 800,  [DS_WR_TICKS] = 100,
    [DS_INFLIGHT] = 0,  [DS_IO_TICKS] = 1000, [DS_QUEUE_TICKS] = 2000,
    [DS_DC_IOS] = 5,    [DS_DC_MERGES] = 0,  [DS_DC_SECT] = 1000, [DS_DC_TICKS] = 10,
    [DS_FL_IOS] = 20,   [DS_FL_TICKS] = 4,
};
/* cur = prev + these deltas */
static const uint64_t REF_DELTA[DS_NFIELDS] = {
    [DS_RD_IOS] = 100,  [DS_RD_MERGES] = 25, [DS_RD_SECT] = 800,  [DS_RD_TICKS] = 250,
    [DS_WR_IOS] = 50,   [DS_WR_MERGES] = 50, [DS_WR_SECT] = 1600, [DS_WR_TICKS] = 500,
    [DS_INFLIGHT] = 2,  [DS_IO_TICKS] = 500, [DS_QUEUE_TICKS] = 1500,
    [DS_DC_IOS] = 10,   [DS_DC_MERGES] = 10, [DS_DC_SECT] = 2048, [DS_DC_TICKS] = 30,
    [DS_FL_IOS] = 50,   [DS_FL_TICKS] = 25,
};

static void ref_pair(struct dev_sample *p, struct dev_sample *c, unsigned nfields)
{
    set_dev(p, "vda", 254, 0, nfields);
    set_dev(c, "vda", 254, 0, nfields);
    for (unsigned i = 0; i < nfields; i++) {
        p->ds.f[i] = REF_PREV[i];
        c->ds.f[i] = REF_PREV[i] + REF_DELTA[i];
    }
}

/* ------------------------------------------------------------------------------------------ */
/* Devices: the iostat formulas                                                                */
/* ------------------------------------------------------------------------------------------ */

static void test_dev_iostat_formulas_over_one_second(void **state)
{
    (void)state;
    struct dev_sample pd, cd;
    ref_pair(&pd, &cd, 17);
    struct snapshot prev, cur;
    set_snap(&prev, 100.0, &pd, 1);
    set_snap(&cur, 101.0, &cd, 1);
    struct baselines hist = { 0 };
    struct result res;
    delta_compute(&prev, &cur, &hist, &res);

    assert_double_eq(res.interval_s, 1.0);
    assert_int_equal(res.ndevs, 1);
    const struct dev_rates *r = &res.devs[0];
    assert_ptr_equal(r->dev, &cur.devs[0]);
    assert_true(r->valid);
    assert_false(r->reset);
    assert_true(r->has_discard);
    assert_true(r->has_flush);
    assert_double_eq(r->r_s, 100.0);      /* 100 reads / 1 s */
    assert_double_eq(r->w_s, 50.0);       /* 50 writes / 1 s */
    assert_double_eq(r->rkb_s, 400.0);    /* 800 sectors * 512 B / 1024 / 1 s */
    assert_double_eq(r->wkb_s, 800.0);    /* 1600 / 2 */
    assert_double_eq(r->rrqm_s, 25.0);
    assert_double_eq(r->wrqm_s, 50.0);
    assert_double_eq(r->rrqm_pct, 20.0);  /* 25 / (25 + 100) * 100 */
    assert_double_eq(r->wrqm_pct, 50.0);  /* 50 / (50 + 50) * 100 */
    assert_double_eq(r->r_await, 2.5);    /* 250 ms / 100 reads */
    assert_double_eq(r->w_await, 10.0);   /* 500 ms / 50 writes */
    assert_double_eq(r->rareq_sz, 4.0);   /* 800 / 2 / 100 kB */
    assert_double_eq(r->wareq_sz, 16.0);  /* 1600 / 2 / 50 kB */
    assert_double_eq(r->aqu_sz, 1.5);     /* 1500 ms weighted / 1000 ms */
    assert_double_eq(r->util, 50.0);      /* 500 ms busy / 1000 ms * 100 */
    assert_double_eq(r->await, 5.0);      /* (250 + 500) ms / 150 requests */
    assert_double_eq(r->d_s, 10.0);
    assert_double_eq(r->dkb_s, 1024.0);   /* 2048 / 2 */
    assert_double_eq(r->drqm_s, 10.0);
    assert_double_eq(r->drqm_pct, 50.0);  /* 10 / (10 + 10) * 100 */
    assert_double_eq(r->d_await, 3.0);    /* 30 ms / 10 */
    assert_double_eq(r->dareq_sz, 102.4); /* 2048 / 2 / 10 kB */
    assert_double_eq(r->f_s, 50.0);
    assert_double_eq(r->f_await, 0.5);    /* 25 ms / 50 flushes */
    /* 150 requests on a device seen for the first time with 450 lifetime requests (too
     * few for a lifetime ceiling); 1.5 queued is not quiet (> SAT_QUIET_AQU), so it
     * teaches no quiet level, and with a queue and nothing to compare: unknown */
    assert_nan(r->quiet_await);
    assert_int_equal(r->saturated, -1);
    result_free(&res);
    baselines_free(&hist);
}

static void test_dev_rates_scale_with_a_half_second_interval(void **state)
{
    (void)state;
    struct dev_sample pd, cd;
    set_dev(&pd, "sda", 8, 0, 17);
    set_dev(&cd, "sda", 8, 0, 17);
    cd.ds.f[DS_RD_IOS] = 100;
    cd.ds.f[DS_RD_SECT] = 800;
    cd.ds.f[DS_RD_TICKS] = 250;
    cd.ds.f[DS_IO_TICKS] = 250;
    cd.ds.f[DS_QUEUE_TICKS] = 750;
    struct snapshot prev, cur;
    set_snap(&prev, 10.0, &pd, 1);
    set_snap(&cur, 10.5, &cd, 1);
    struct baselines hist = { 0 };
    struct result res;
    delta_compute(&prev, &cur, &hist, &res);
    assert_double_eq(res.interval_s, 0.5);
    const struct dev_rates *r = &res.devs[0];
    assert_true(r->valid);
    assert_double_eq(r->r_s, 200.0);    /* 100 / 0.5 s */
    assert_double_eq(r->rkb_s, 800.0);  /* 400 kB / 0.5 s */
    assert_double_eq(r->r_await, 2.5);  /* per request: the interval does not matter */
    assert_double_eq(r->rareq_sz, 4.0);
    assert_double_eq(r->util, 50.0);    /* 250 ms / 500 ms */
    assert_double_eq(r->aqu_sz, 1.5);   /* 750 ms / 500 ms */
    assert_double_eq(r->w_s, 0.0);
    assert_nan(r->w_await);
    result_free(&res);
    baselines_free(&hist);
}

static void test_dev_util_is_capped_at_100(void **state)
{
    (void)state;
    struct dev_sample pd, cd;
    set_dev(&pd, "sda", 8, 0, 17);
    set_dev(&cd, "sda", 8, 0, 17);
    cd.ds.f[DS_IO_TICKS] = 1200; /* 1200 ms busy in a 1000 ms interval: clocks read apart */
    struct snapshot prev, cur;
    set_snap(&prev, 1.0, &pd, 1);
    set_snap(&cur, 2.0, &cd, 1);
    struct baselines hist = { 0 };
    struct result res;
    delta_compute(&prev, &cur, &hist, &res);
    assert_double_eq(res.devs[0].util, 100.0);
    result_free(&res);
    baselines_free(&hist);
}

static void test_dev_idle_interval_has_zero_rates_and_unknown_waits(void **state)
{
    (void)state;
    struct dev_sample pd, cd;
    ref_pair(&pd, &cd, 17);
    cd = pd; /* nothing happened */
    struct snapshot prev, cur;
    set_snap(&prev, 1.0, &pd, 1);
    set_snap(&cur, 2.0, &cd, 1);
    struct baselines hist = { 0 };
    struct result res;
    delta_compute(&prev, &cur, &hist, &res);
    const struct dev_rates *r = &res.devs[0];
    assert_true(r->valid);
    assert_double_eq(r->r_s, 0.0);
    assert_double_eq(r->w_s, 0.0);
    assert_double_eq(r->rkb_s, 0.0);
    assert_double_eq(r->util, 0.0);
    assert_double_eq(r->aqu_sz, 0.0);
    assert_double_eq(r->f_s, 0.0);
    /* no requests: a wait, a size or a merge share would be a division by zero */
    assert_nan(r->r_await);
    assert_nan(r->w_await);
    assert_nan(r->d_await);
    assert_nan(r->f_await);
    assert_nan(r->rareq_sz);
    assert_nan(r->rrqm_pct);
    assert_nan(r->drqm_pct);
    assert_nan(r->await);
    assert_int_equal(r->saturated, 0); /* no queue: not saturated */
    result_free(&res);
    baselines_free(&hist);
}

/* A bio-based layer (dm-0 over nb0) takes its disk's saturation, not its own counters':
 * its await and aqu-sz are nb0's wait seen from above (issue #34). */
static void test_layer_saturated_as_its_disk(void **state)
{
    (void)state;
    struct dev_sample pd[2], cd[2];
    ref_pair(&pd[0], &cd[0], 17);       /* nb0: aqu-sz 1.5, no baseline: unknown */
    ref_pair(&pd[1], &cd[1], 17);
    cd[1] = pd[1];                      /* dm-0's own: idle, not saturated */
    for (int i = 0; i < 2; i++) {
        struct dev_sample *d[2] = { &pd[i], &cd[i] };
        for (int j = 0; j < 2; j++) {
            snprintf(d[j]->ds.name, sizeof(d[j]->ds.name), "%s", i ? "dm-0" : "nb0");
            d[j]->ds.major = i ? 253 : 43;
            d[j]->stack.slaves.known = d[j]->stack.holders.known = true;
            if (i) {
                d[j]->stack.slaves.n = 1;
                snprintf(d[j]->stack.slaves.name[0], BD_NAME_MAX, "nb0");
            } else {
                d[j]->bd.nsched = 1;
                d[j]->stack.holders.n = 1;
                snprintf(d[j]->stack.holders.name[0], BD_NAME_MAX, "dm-0");
            }
        }
    }
    struct snapshot prev, cur;
    set_snap(&prev, 1.0, pd, 2);
    set_snap(&cur, 2.0, cd, 2);
    struct baselines hist = { 0 };
    struct result res;
    delta_compute(&prev, &cur, &hist, &res);
    assert_int_equal(res.devs[0].saturated, -1);
    assert_int_equal(res.devs[1].saturated, -1);          /* its own would say 0 */
    assert_int_equal(res.devs[1].sat_source, SAT_SRC_NONE);
    result_free(&res);
    /* nb0 idle too: not saturated, from the disk */
    cd[0] = pd[0];
    delta_compute(&prev, &cur, &hist, &res);
    assert_int_equal(res.devs[1].saturated, 0);
    assert_int_equal(res.devs[1].sat_source, SAT_SRC_DISKS);
    assert_string_equal(sat_source_name(res.devs[1].sat_source), "disks");
    result_free(&res);
    /* dm-0 with no disk with a scheduler below it: judged on its own counters */
    pd[0].bd.nsched = cd[0].bd.nsched = 0;
    delta_compute(&prev, &cur, &hist, &res);
    assert_int_equal(res.devs[1].saturated, 0);
    assert_int_equal(res.devs[1].sat_source, SAT_SRC_BASELINE);
    result_free(&res);
    baselines_free(&hist);
}

static void test_dev_11_fields_give_unknown_discard_and_flush(void **state)
{
    (void)state;
    struct dev_sample pd, cd;
    ref_pair(&pd, &cd, 11);
    struct snapshot prev, cur;
    set_snap(&prev, 100.0, &pd, 1);
    set_snap(&cur, 101.0, &cd, 1);
    struct baselines hist = { 0 };
    struct result res;
    delta_compute(&prev, &cur, &hist, &res);
    const struct dev_rates *r = &res.devs[0];
    assert_true(r->valid);
    assert_false(r->has_discard);
    assert_false(r->has_flush);
    assert_double_eq(r->r_s, 100.0);
    assert_double_eq(r->aqu_sz, 1.5);
    assert_nan(r->d_s);
    assert_nan(r->dkb_s);
    assert_nan(r->drqm_s);
    assert_nan(r->drqm_pct);
    assert_nan(r->d_await);
    assert_nan(r->dareq_sz);
    assert_nan(r->f_s);
    assert_nan(r->f_await);
    result_free(&res);
    baselines_free(&hist);
}

static void test_dev_15_fields_give_discard_but_unknown_flush(void **state)
{
    (void)state;
    struct dev_sample pd, cd;
    ref_pair(&pd, &cd, 15);
    struct snapshot prev, cur;
    set_snap(&prev, 100.0, &pd, 1);
    set_snap(&cur, 101.0, &cd, 1);
    struct baselines hist = { 0 };
    struct result res;
    delta_compute(&prev, &cur, &hist, &res);
    const struct dev_rates *r = &res.devs[0];
    assert_true(r->has_discard);
    assert_false(r->has_flush);
    assert_double_eq(r->d_s, 10.0);
    assert_double_eq(r->d_await, 3.0);
    assert_nan(r->f_s);
    assert_nan(r->f_await);
    result_free(&res);
    baselines_free(&hist);
}

static void test_delta_u32_wraps_ms_counters(void **state)
{
    (void)state;
    /* 2^32 = 4294967296: 4294967000 -> 200 is 296 to the wrap plus 200 = 496 */
    assert_double_eq(delta_u32(4294967000ull, 200), 496.0);
    assert_double_eq(delta_u32(5, 5), 0.0);
    assert_double_eq(delta_u32(100, 350), 250.0);
    assert_double_eq(delta_u32(4294967295ull, 0), 1.0);
    assert_double_eq(delta_u32(0, 4294967295ull), 4294967295.0);
}

static void test_dev_tick_wrap_is_no_reset(void **state)
{
    (void)state;
    struct dev_sample pd, cd;
    set_dev(&pd, "sda", 8, 0, 17);
    set_dev(&cd, "sda", 8, 0, 17);
    pd.ds.f[DS_RD_IOS] = 1000;
    cd.ds.f[DS_RD_IOS] = 1124;
    pd.ds.f[DS_RD_TICKS] = 4294967000ull;
    cd.ds.f[DS_RD_TICKS] = 200;
    pd.ds.f[DS_IO_TICKS] = 4294967000ull;
    cd.ds.f[DS_IO_TICKS] = 200;
    struct snapshot prev, cur;
    set_snap(&prev, 1.0, &pd, 1);
    set_snap(&cur, 2.0, &cd, 1);
    struct baselines hist = { 0 };
    struct result res;
    delta_compute(&prev, &cur, &hist, &res);
    const struct dev_rates *r = &res.devs[0];
    assert_true(r->valid);
    assert_false(r->reset);
    assert_double_eq(r->r_await, 4.0); /* 496 ms / 124 reads */
    assert_double_eq(r->util, 49.6);   /* 496 ms / 1000 ms */
    result_free(&res);
    baselines_free(&hist);
}

static void test_dev_counter_going_down_is_a_reset_with_unknown_rates(void **state)
{
    (void)state;
    struct dev_sample pd, cd;
    ref_pair(&pd, &cd, 17);
    cd.ds.f[DS_RD_IOS] = 10; /* was 200: the device was registered again */
    struct snapshot prev, cur;
    set_snap(&prev, 1.0, &pd, 1);
    set_snap(&cur, 2.0, &cd, 1);
    struct baselines hist = { 0 };
    struct result res;
    delta_compute(&prev, &cur, &hist, &res);
    const struct dev_rates *r = &res.devs[0];
    assert_false(r->valid);
    assert_true(r->reset);
    assert_dev_all_nan(r);
    assert_int_equal(r->saturated, -1);
    result_free(&res);

    /* A 64-bit counter other than reads: write sectors */
    ref_pair(&pd, &cd, 17);
    cd.ds.f[DS_WR_SECT] = 0;
    delta_compute(&prev, &cur, &hist, &res);
    assert_true(res.devs[0].reset);
    assert_false(res.devs[0].valid);
    result_free(&res);
    baselines_free(&hist);
}

static void test_dev_vanished_is_not_in_result_and_new_one_is_unknown(void **state)
{
    (void)state;
    struct dev_sample pd[2], cd[3];
    ref_pair(&pd[0], &cd[0], 17);        /* vda in both */
    set_dev(&pd[1], "sdb", 8, 16, 17);   /* sdb only in prev: unplugged */
    pd[1].ds.f[DS_RD_IOS] = 5;
    set_dev(&cd[1], "sdc", 8, 32, 17);   /* sdc only in cur: plugged in */
    cd[1].ds.f[DS_RD_IOS] = 7;
    set_dev(&cd[2], "sdb", 8, 17, 17);   /* the name again, another minor: another device */
    cd[2].ds.f[DS_RD_IOS] = 9;
    struct snapshot prev, cur;
    set_snap(&prev, 1.0, pd, 2);
    set_snap(&cur, 2.0, cd, 3);
    struct baselines hist = { 0 };
    struct result res;
    delta_compute(&prev, &cur, &hist, &res);
    assert_int_equal(res.ndevs, 3);
    for (size_t i = 0; i < 3; i++)
        assert_ptr_equal(res.devs[i].dev, &cur.devs[i]);
    assert_true(res.devs[0].valid);
    assert_double_eq(res.devs[0].r_s, 100.0);
    for (size_t i = 1; i < 3; i++) {
        assert_false(res.devs[i].valid);
        assert_false(res.devs[i].reset);
        assert_dev_all_nan(&res.devs[i]);
        assert_int_equal(res.devs[i].saturated, -1);
    }
    result_free(&res);
    baselines_free(&hist);
}

static void test_no_prev_gives_unknown_everything(void **state)
{
    (void)state;
    struct dev_sample pd, cd;
    ref_pair(&pd, &cd, 17);
    struct task_sample t;
    set_task(&t, 42, 1000);
    t.nice = 19;
    struct snapshot cur;
    set_snap(&cur, 5.0, &cd, 1);
    cur.psi[PSI_IO].err = 0;
    cur.psi[PSI_IO].some.valid = true;
    cur.psi[PSI_IO].some.total_us = 1000;
    cur.tasks = &t;
    cur.ntasks = 1;
    struct baselines hist = { 0 };
    struct result res;
    delta_compute(NULL, &cur, &hist, &res);
    assert_ptr_equal(res.cur, &cur);
    assert_double_eq(res.interval_s, 0.0);
    assert_int_equal(res.ndevs, 1);
    assert_false(res.devs[0].valid);
    assert_false(res.devs[0].reset);
    assert_dev_all_nan(&res.devs[0]);
    assert_nan(res.devs[0].quiet_await);
    assert_int_equal(res.devs[0].saturated, -1);
    for (int k = 0; k < PSI_NRES; k++) {
        assert_false(res.psi[k].some_valid);
        assert_false(res.psi[k].full_valid);
        assert_nan(res.psi[k].some_pct);
        assert_nan(res.psi[k].full_pct);
    }
    assert_int_equal(res.ntasks, 1);
    assert_ptr_equal(res.tasks[0].task, &cur.tasks[0]);
    assert_true(res.tasks[0].is_new);
    assert_false(res.tasks[0].io_valid);
    assert_nan(res.tasks[0].read_bps);
    assert_false(res.tasks[0].delay_valid);
    assert_nan(res.tasks[0].io_delay_pct);
    /* identity and priority are known without a previous sample: be/7 from nice 19 */
    assert_int_equal(res.tasks[0].prio.cls, IOC_BE);
    assert_int_equal(res.tasks[0].prio.level, 7);
    assert_int_equal(res.tasks[0].prio.source, IOS_NICE);
    result_free(&res);
    baselines_free(&hist);
}

static void test_interval_not_positive_gives_unknown_rates(void **state)
{
    (void)state;
    struct dev_sample pd, cd;
    ref_pair(&pd, &cd, 17);
    struct snapshot prev, cur;
    set_snap(&prev, 7.0, &pd, 1);
    set_snap(&cur, 7.0, &cd, 1); /* same instant */
    struct baselines hist = { 0 };
    struct result res;
    delta_compute(&prev, &cur, &hist, &res);
    assert_double_eq(res.interval_s, 0.0);
    assert_false(res.devs[0].valid);
    assert_nan(res.devs[0].r_s);
    result_free(&res);

    set_snap(&cur, 6.0, &cd, 1); /* before prev: never a negative rate */
    delta_compute(&prev, &cur, &hist, &res);
    assert_double_eq(res.interval_s, 0.0);
    assert_false(res.devs[0].valid);
    assert_nan(res.devs[0].r_s);
    result_free(&res);
    baselines_free(&hist);
}

/* ------------------------------------------------------------------------------------------ */
/* Devices: the saturated verdict                                                              */
/* ------------------------------------------------------------------------------------------ */

static void test_delta_saturated_thresholds(void **state)
{
    (void)state;
    assert_int_equal(delta_saturated(4.0, (double)NAN, 50, 2.0, (double)NAN), -1);  /* no data */
    assert_int_equal(delta_saturated(100.0, 1.0, 50, 2.0, (double)NAN), 0); /* high wait, no queue */
    assert_int_equal(delta_saturated(100.0, 1.49, 50, 2.0, (double)NAN), 0);
    assert_int_equal(delta_saturated(100.0, 4.0, 0, 2.0, (double)NAN), 0);  /* queue but nothing done */
    assert_int_equal(delta_saturated(4.0, 4.0, 50, (double)NAN, (double)NAN), -1);  /* queued, no baseline yet */
    assert_int_equal(delta_saturated((double)NAN, 4.0, 50, 2.0, (double)NAN), -1);
    /* SAT_AWAIT_FACTOR 1.6 over a 2 ms baseline: 3.2 ms is the line */
    assert_int_equal(delta_saturated(3.2, 4.0, 50, 2.0, (double)NAN), 1);
    assert_int_equal(delta_saturated(3.19, 4.0, 50, 2.0, (double)NAN), 0);
    assert_int_equal(delta_saturated(4.0, 1.5, 50, 2.0, (double)NAN), 1);   /* SAT_MIN_AQU itself counts */
    assert_int_equal(delta_saturated(4.0, (double)NAN, 50, (double)NAN, (double)NAN), -1);
    /* no quiet level, only the lifetime mean (an upper bound of it): only a wait far
     * above it proves saturation; below it, nothing is known */
    assert_int_equal(delta_saturated(3.2, 4.0, 50, (double)NAN, 2.0), 1);
    assert_int_equal(delta_saturated(3.0, 4.0, 50, (double)NAN, 2.0), -1);
    assert_int_equal(delta_saturated(1.0, 4.0, 50, (double)NAN, 2.0), -1);
    /* a learned quiet level wins over the ceiling */
    assert_int_equal(delta_saturated(3.0, 4.0, 50, 2.0, 10.0), 0);
}

/* One interval of 1 s on "sda": reads and the read wait, the weighted queue time. */
static void step(struct dev_sample *d, struct snapshot *s, double mono, uint64_t rd_ios,
                 uint64_t rd_ticks, uint64_t queue_ticks)
{
    set_dev(d, "sda", 8, 0, 17);
    d->ds.f[DS_RD_IOS] = rd_ios;
    d->ds.f[DS_RD_SECT] = rd_ios * 8;
    d->ds.f[DS_RD_TICKS] = rd_ticks;
    d->ds.f[DS_QUEUE_TICKS] = queue_ticks;
    d->ds.f[DS_IO_TICKS] = (uint64_t)(mono * 900);
    set_snap(s, mono, d, 1);
}

static void test_saturated_verdict_against_learned_baseline(void **state)
{
    (void)state;
    /* Lifetime reads stay below 1000, so there is no lifetime ceiling: only quiet
     * intervals (>= SAT_MIN_IOS requests, aqu-sz <= SAT_QUIET_AQU) teach the level. */
    struct dev_sample d[6];
    struct snapshot s[6];
    step(&d[0], &s[0], 0.0, 0, 0, 0);
    step(&d[1], &s[1], 1.0, 100, 200, 1000);   /* await 2 ms, aqu 1: quiet */
    step(&d[2], &s[2], 2.0, 200, 600, 9000);   /* await 400/100 = 4 ms, aqu 8 */
    step(&d[3], &s[3], 3.0, 300, 1600, 10000); /* await 10 ms, aqu 1: quiet, but slower */
    step(&d[4], &s[4], 4.0, 400, 1750, 12000); /* await 1.5 ms, aqu 2: not quiet */
    step(&d[5], &s[5], 5.0, 500, 1850, 12900); /* await 1 ms, aqu 0.9: quiet and faster */
    struct baselines hist = { 0 };
    struct result res;

    /* 1: a quiet interval: the level becomes 2 ms; no queue: not saturated */
    delta_compute(&s[0], &s[1], &hist, &res);
    assert_double_eq(res.devs[0].await, 2.0);
    assert_double_eq(res.devs[0].aqu_sz, 1.0);
    assert_double_eq(res.devs[0].quiet_await, 2.0);
    assert_int_equal(res.devs[0].saturated, 0);
    result_free(&res);

    /* 2: the level drifts up by SAT_BASE_DRIFT per second: 2 * 1.002 = 2.004;
     * 4 >= 1.6 * 2.004 = 3.2064 with 8 queued: saturated */
    delta_compute(&s[1], &s[2], &hist, &res);
    assert_double_eq(res.devs[0].await, 4.0);
    assert_double_eq(res.devs[0].aqu_sz, 8.0);
    assert_double_eq(res.devs[0].quiet_await, 2.004);
    assert_int_equal(res.devs[0].saturated, 1);
    result_free(&res);

    /* 3: a 10 ms wait with one request at a time: slow, but not saturated, and no lower
     * than the level: 2.004 * 1.002 = 2.008008 */
    delta_compute(&s[2], &s[3], &hist, &res);
    assert_double_eq(res.devs[0].await, 10.0);
    assert_double_eq(res.devs[0].quiet_await, 2.008008);
    assert_int_equal(res.devs[0].saturated, 0);
    result_free(&res);

    /* 4: a faster but queued interval (aqu 2) teaches nothing: 2.008008 * 1.002 */
    delta_compute(&s[3], &s[4], &hist, &res);
    assert_double_eq(res.devs[0].await, 1.5);
    assert_double_eq(res.devs[0].quiet_await, 2.008008 * 1.002);
    assert_int_equal(res.devs[0].saturated, 0);
    result_free(&res);

    /* 5: a faster quiet interval lowers the level to 1 ms */
    delta_compute(&s[4], &s[5], &hist, &res);
    assert_double_eq(res.devs[0].await, 1.0);
    assert_double_eq(res.devs[0].quiet_await, 1.0);
    result_free(&res);

    assert_int_equal(hist.n, 1);
    assert_string_equal(hist.v[0].name, "sda");
    assert_double_eq(hist.v[0].quiet_await, 1.0);
    baselines_free(&hist);
}

static void test_saturated_unknown_without_baseline(void **state)
{
    (void)state;
    /* 10 reads (< SAT_MIN_IOS) waiting 5 ms each with 4 queued: too few requests to learn
     * from, lifetime too short to seed from: no baseline, so unknown. */
    struct dev_sample d[2];
    struct snapshot s[2];
    step(&d[0], &s[0], 0.0, 0, 0, 0);
    step(&d[1], &s[1], 1.0, 10, 50, 4000);
    struct baselines hist = { 0 };
    struct result res;
    delta_compute(&s[0], &s[1], &hist, &res);
    assert_true(res.devs[0].valid);
    assert_double_eq(res.devs[0].aqu_sz, 4.0);
    assert_nan(res.devs[0].quiet_await);
    assert_int_equal(res.devs[0].saturated, -1);
    result_free(&res);
    baselines_free(&hist);
}

static void test_saturated_from_lifetime_ceiling_only_when_far_above(void **state)
{
    (void)state;
    /* First sight of a device with 2000 lifetime reads that waited 3000 ms in all: the
     * lifetime mean, 1.5 ms, is at least the quiet level. This interval: 10 reads (too
     * few to learn from) waiting 5 ms each, aqu 3: 5 >= 1.6 * 1.5 = 2.4: saturated for
     * sure. The quiet level itself stays unknown. */
    struct dev_sample d[3];
    struct snapshot s[3];
    step(&d[0], &s[0], 0.0, 1990, 2950, 100000);
    step(&d[1], &s[1], 1.0, 2000, 3000, 103000);
    step(&d[2], &s[2], 2.0, 2010, 3020, 106000);  /* 2 ms each with aqu 3: below 2.4 */
    struct baselines hist = { 0 };
    struct result res;
    delta_compute(&s[0], &s[1], &hist, &res);
    assert_double_eq(res.devs[0].await, 5.0);
    assert_double_eq(res.devs[0].aqu_sz, 3.0);
    assert_nan(res.devs[0].quiet_await);
    assert_int_equal(res.devs[0].saturated, 1);
    result_free(&res);
    /* a wait below the ceiling proves nothing: the ceiling may itself be a busy level */
    delta_compute(&s[1], &s[2], &hist, &res);
    assert_double_eq(res.devs[0].await, 2.0);
    assert_int_equal(res.devs[0].saturated, -1);
    result_free(&res);
    baselines_free(&hist);
}

static void test_reset_forgets_the_baseline(void **state)
{
    (void)state;
    struct dev_sample d[4];
    struct snapshot s[4];
    step(&d[0], &s[0], 0.0, 0, 0, 0);
    step(&d[1], &s[1], 1.0, 100, 200, 1000);  /* quiet: learns 2 ms */
    step(&d[2], &s[2], 2.0, 5, 10, 10);       /* counters back to almost nothing: reset */
    step(&d[3], &s[3], 3.0, 15, 60, 4010);    /* 10 reads, 5 ms, aqu 4: nothing to compare */
    struct baselines hist = { 0 };
    struct result res;
    delta_compute(&s[0], &s[1], &hist, &res);
    assert_double_eq(res.devs[0].quiet_await, 2.0);
    result_free(&res);
    delta_compute(&s[1], &s[2], &hist, &res);
    assert_true(res.devs[0].reset);
    assert_nan(res.devs[0].quiet_await);
    assert_int_equal(res.devs[0].saturated, -1);
    result_free(&res);
    delta_compute(&s[2], &s[3], &hist, &res);
    assert_true(res.devs[0].valid);
    assert_nan(res.devs[0].quiet_await);
    assert_int_equal(res.devs[0].saturated, -1);
    result_free(&res);
    baselines_free(&hist);
}

/* ------------------------------------------------------------------------------------------ */
/* PSI                                                                                         */
/* ------------------------------------------------------------------------------------------ */

static void set_psi(struct psi_sample *p, bool some, uint64_t some_total, bool full,
                    uint64_t full_total)
{
    memset(p, 0, sizeof(*p));
    p->some.valid = some;
    p->some.total_us = some_total;
    p->full.valid = full;
    p->full.total_us = full_total;
}

static void test_psi_share_of_interval_from_total(void **state)
{
    (void)state;
    struct snapshot prev, cur;
    set_snap(&prev, 50.0, NULL, 0);
    set_snap(&cur, 51.0, NULL, 0);
    /* io: some +250000 us and full +100000 us in 1 s: 25 % and 10 % */
    set_psi(&prev.psi[PSI_IO], true, 1000000, true, 500000);
    set_psi(&cur.psi[PSI_IO], true, 1250000, true, 600000);
    /* memory: some +1500000 us in 1 s, more stall than wall time (the two clocks are read
     * at different moments): capped at 100 % */
    set_psi(&prev.psi[PSI_MEMORY], true, 0, true, 0);
    set_psi(&cur.psi[PSI_MEMORY], true, 1500000, true, 0);
    /* cpu: no "full" line (old kernel): some 0 %, full unknown */
    set_psi(&prev.psi[PSI_CPU], true, 777, false, 0);
    set_psi(&cur.psi[PSI_CPU], true, 777, false, 0);
    struct result res;
    compute(&prev, &cur, &res);
    assert_true(res.psi[PSI_IO].some_valid);
    assert_true(res.psi[PSI_IO].full_valid);
    assert_double_eq(res.psi[PSI_IO].some_pct, 25.0);
    assert_double_eq(res.psi[PSI_IO].full_pct, 10.0);
    assert_true(res.psi[PSI_MEMORY].some_valid);
    assert_double_eq(res.psi[PSI_MEMORY].some_pct, 100.0);
    assert_double_eq(res.psi[PSI_MEMORY].full_pct, 0.0);
    assert_true(res.psi[PSI_CPU].some_valid);
    assert_double_eq(res.psi[PSI_CPU].some_pct, 0.0);
    assert_false(res.psi[PSI_CPU].full_valid);
    assert_nan(res.psi[PSI_CPU].full_pct);
    result_free(&res);
}

static void test_psi_half_second_interval(void **state)
{
    (void)state;
    struct snapshot prev, cur;
    set_snap(&prev, 50.0, NULL, 0);
    set_snap(&cur, 50.5, NULL, 0);
    set_psi(&prev.psi[PSI_IO], true, 0, true, 0);
    set_psi(&cur.psi[PSI_IO], true, 250000, true, 50000); /* of 500000 us: 50 %, 10 % */
    struct result res;
    compute(&prev, &cur, &res);
    assert_double_eq(res.psi[PSI_IO].some_pct, 50.0);
    assert_double_eq(res.psi[PSI_IO].full_pct, 10.0);
    result_free(&res);
}

static void test_psi_unreadable_or_missing_or_backwards_is_unknown(void **state)
{
    (void)state;
    struct snapshot prev, cur;
    set_snap(&prev, 50.0, NULL, 0);
    set_snap(&cur, 51.0, NULL, 0);
    /* io: the file vanished in cur (err set) */
    set_psi(&prev.psi[PSI_IO], true, 0, true, 0);
    set_psi(&cur.psi[PSI_IO], true, 100, true, 100);
    cur.psi[PSI_IO].err = -ENOENT;
    /* cpu: "some" only in cur, "full" only in prev: neither line is in both samples */
    set_psi(&prev.psi[PSI_CPU], false, 0, true, 0);
    set_psi(&cur.psi[PSI_CPU], true, 100, false, 100);
    /* memory: totals went backwards */
    set_psi(&prev.psi[PSI_MEMORY], true, 5000, true, 5000);
    set_psi(&cur.psi[PSI_MEMORY], true, 4000, true, 4000);
    struct result res;
    compute(&prev, &cur, &res);
    for (int k = 0; k < PSI_NRES; k++) {
        if (res.psi[k].some_valid || res.psi[k].full_valid)
            fail_msg("psi %s valid", psi_resource_name[k]);
        assert_nan(res.psi[k].some_pct);
        assert_nan(res.psi[k].full_pct);
    }
    result_free(&res);
}

/* ------------------------------------------------------------------------------------------ */
/* Tasks                                                                                       */
/* ------------------------------------------------------------------------------------------ */

static void test_task_io_rates_by_identity(void **state)
{
    (void)state;
    struct task_sample pt[3], ct[4];
    set_task(&pt[0], 10, 100);
    set_task(&pt[1], 20, 200);
    set_task(&pt[2], 30, 300);
    set_task(&ct[0], 5, 900);   /* new */
    set_task(&ct[1], 20, 200);  /* same task */
    set_task(&ct[2], 25, 950);  /* new */
    set_task(&ct[3], 30, 300);  /* same task; 10 exited */
    pt[1].io.read_bytes = 1000;
    pt[1].io.write_bytes = 0;
    ct[1].io.read_bytes = 1000 + 25 * 4096; /* +102400 B in 1 s */
    ct[1].io.write_bytes = 8192;
    ct[1].io.cancelled_write_bytes = 4096;
    pt[2].io.write_bytes = 1 << 20;
    ct[3].io.write_bytes = 3 << 20;         /* +2 MiB in 1 s */
    struct snapshot prev, cur;
    set_snap(&prev, 1.0, NULL, 0);
    set_snap(&cur, 2.0, NULL, 0);
    prev.tasks = pt;
    prev.ntasks = 3;
    cur.tasks = ct;
    cur.ntasks = 4;
    struct result res;
    compute(&prev, &cur, &res);
    assert_int_equal(res.ntasks, 4);
    for (size_t i = 0; i < 4; i++)
        assert_ptr_equal(res.tasks[i].task, &ct[i]);
    assert_true(res.tasks[0].is_new);
    assert_true(res.tasks[2].is_new);
    assert_nan(res.tasks[0].read_bps);
    assert_nan(res.tasks[2].write_bps);

    assert_false(res.tasks[1].is_new);
    assert_true(res.tasks[1].io_valid);
    assert_double_eq(res.tasks[1].read_bps, 102400.0);
    assert_double_eq(res.tasks[1].write_bps, 8192.0);
    assert_double_eq(res.tasks[1].cancelled_write_bps, 4096.0);
    assert_false(res.tasks[3].is_new);
    assert_double_eq(res.tasks[3].read_bps, 0.0);
    assert_double_eq(res.tasks[3].write_bps, 2097152.0);
    result_free(&res);

    /* Over 0.5 s the same counters give twice the rate. */
    set_snap(&cur, 1.5, NULL, 0);
    cur.tasks = ct;
    cur.ntasks = 4;
    compute(&prev, &cur, &res);
    assert_double_eq(res.tasks[1].read_bps, 204800.0);
    result_free(&res);
}

/* A previous snapshot the sampler reduced to its history (snapshot.h: hist instead of
 * tasks) gives the same rates, identities and unknowns as the whole one. */
static void test_task_reduced_prev_same_as_whole(void **state)
{
    (void)state;
    struct task_sample pt[5], ct[5];
    struct task_hist ph[5];
    set_task(&pt[0], 10, 100);
    set_task(&pt[1], 20, 200);
    set_task(&pt[2], 30, 300);
    set_task(&pt[3], 40, 400);
    set_task(&pt[4], 50, 500);
    set_task(&ct[0], 5, 900);              /* new */
    set_task(&ct[1], 20, 200);             /* I/O and delays */
    set_task(&ct[2], 30, 300);             /* io unreadable before */
    set_task(&ct[3], 40, 450);             /* pid reused */
    set_task(&ct[4], 50, 500);             /* counter went down */
    pt[1].io.read_bytes = 1000;
    ct[1].io.read_bytes = 5096;
    ct[1].io.write_bytes = 8192;
    pt[1].delay_valid = ct[1].delay_valid = true;
    pt[1].delay.blkio_delay_ns = 100000000;
    ct[1].delay.blkio_delay_ns = 350000000;
    pt[1].delay.blkio_count = 10;
    ct[1].delay.blkio_count = 15;
    pt[2].io_err = -EACCES;
    ct[2].io.read_bytes = 1;
    pt[4].io.write_bytes = 1 << 20;
    for (size_t i = 0; i < 5; i++)
        ph[i] = (struct task_hist){
            .start_ticks = pt[i].start_ticks, .read_bytes = pt[i].io.read_bytes,
            .write_bytes = pt[i].io.write_bytes,
            .cancelled_write_bytes = pt[i].io.cancelled_write_bytes,
            .blkio_delay_ns = pt[i].delay.blkio_delay_ns,
            .swapin_delay_ns = pt[i].delay.swapin_delay_ns,
            .blkio_count = pt[i].delay.blkio_count, .id = pt[i].id,
            .io_ok = pt[i].io_err == 0, .delay_valid = pt[i].delay_valid,
        };
    struct snapshot whole, reduced, cur;
    set_snap(&whole, 1.0, NULL, 0);
    set_snap(&reduced, 1.0, NULL, 0);
    set_snap(&cur, 2.0, NULL, 0);
    cur.delayacct = DA_ON;
    cur.delayacct_since_ticks = 0;
    whole.tasks = pt;
    whole.ntasks = 5;
    reduced.hist = ph;
    reduced.nhist = 5;
    cur.tasks = ct;
    cur.ntasks = 5;
    struct result a, b;
    compute(&whole, &cur, &a);
    compute(&reduced, &cur, &b);
    assert_int_equal(a.ntasks, 5);
    assert_int_equal(b.ntasks, 5);
    assert_memory_equal(a.tasks, b.tasks, 5 * sizeof(*a.tasks));
    assert_true(b.tasks[0].is_new);
    assert_double_eq(b.tasks[1].read_bps, 4096.0);
    assert_double_eq(b.tasks[1].io_delay_pct, 25.0);
    assert_double_eq(b.tasks[1].blkio_avg_ms, 50.0);
    assert_nan(b.tasks[2].read_bps);
    assert_true(b.tasks[3].is_new);
    assert_nan(b.tasks[4].write_bps);
    result_free(&a);
    result_free(&b);
}

static void test_task_reused_pid_is_new(void **state)
{
    (void)state;
    struct task_sample pt, ct;
    set_task(&pt, 4242, 1000);
    set_task(&ct, 4242, 1500); /* same pid, started later: another task */
    pt.io.read_bytes = 1 << 30;
    ct.io.read_bytes = (1 << 30) + 4096;
    struct snapshot prev, cur;
    set_snap(&prev, 1.0, NULL, 0);
    set_snap(&cur, 2.0, NULL, 0);
    prev.tasks = &pt;
    prev.ntasks = 1;
    cur.tasks = &ct;
    cur.ntasks = 1;
    struct result res;
    compute(&prev, &cur, &res);
    assert_true(res.tasks[0].is_new);
    assert_false(res.tasks[0].io_valid);
    assert_nan(res.tasks[0].read_bps);
    assert_nan(res.tasks[0].write_bps);
    assert_nan(res.tasks[0].cancelled_write_bps);
    result_free(&res);
}

static void test_task_counter_going_down_is_unknown_not_huge(void **state)
{
    (void)state;
    struct task_sample pt[2], ct[2];
    set_task(&pt[0], 1, 10);
    set_task(&pt[1], 2, 20);
    set_task(&ct[0], 1, 10);
    set_task(&ct[1], 2, 20);
    pt[0].io.read_bytes = 10000;
    ct[0].io.read_bytes = 5000;
    pt[1].io.cancelled_write_bytes = 10000;
    ct[1].io.cancelled_write_bytes = 0;
    ct[1].io.read_bytes = 4096;
    struct snapshot prev, cur;
    set_snap(&prev, 1.0, NULL, 0);
    set_snap(&cur, 2.0, NULL, 0);
    prev.tasks = pt;
    prev.ntasks = 2;
    cur.tasks = ct;
    cur.ntasks = 2;
    struct result res;
    compute(&prev, &cur, &res);
    for (size_t i = 0; i < 2; i++) {
        assert_false(res.tasks[i].is_new);
        assert_false(res.tasks[i].io_valid);
        assert_nan(res.tasks[i].read_bps);
        assert_nan(res.tasks[i].write_bps);
        assert_nan(res.tasks[i].cancelled_write_bps);
    }
    result_free(&res);
}

static void test_task_io_error_in_either_sample_is_unknown(void **state)
{
    (void)state;
    struct task_sample pt[2], ct[2];
    set_task(&pt[0], 1, 10);
    set_task(&pt[1], 2, 20);
    set_task(&ct[0], 1, 10);
    set_task(&ct[1], 2, 20);
    pt[0].io_err = -EACCES;         /* not permitted then */
    ct[0].io.read_bytes = 4096;
    ct[1].io_err = -ESRCH;          /* exiting now */
    ct[1].io.read_bytes = 4096;
    struct snapshot prev, cur;
    set_snap(&prev, 1.0, NULL, 0);
    set_snap(&cur, 2.0, NULL, 0);
    prev.tasks = pt;
    prev.ntasks = 2;
    cur.tasks = ct;
    cur.ntasks = 2;
    struct result res;
    compute(&prev, &cur, &res);
    for (size_t i = 0; i < 2; i++) {
        assert_false(res.tasks[i].is_new);
        assert_false(res.tasks[i].io_valid);
        assert_nan(res.tasks[i].read_bps);
    }
    result_free(&res);
}

/* A pair of samples of task 7 (started at tick 500) with delay records in both. */
static void delay_pair(struct task_sample *p, struct task_sample *c, struct snapshot *prev,
                       struct snapshot *cur)
{
    set_task(p, 7, 500);
    set_task(c, 7, 500);
    p->delay_valid = c->delay_valid = true;
    set_snap(prev, 10.0, NULL, 0);
    set_snap(cur, 11.0, NULL, 0);
    prev->tasks = p;
    prev->ntasks = 1;
    cur->tasks = c;
    cur->ntasks = 1;
    prev->delayacct = cur->delayacct = DA_ON;
    prev->delayacct_since_ticks = cur->delayacct_since_ticks = -1;
}

static void test_task_delays_as_share_of_interval(void **state)
{
    (void)state;
    struct task_sample p, c;
    struct snapshot prev, cur;
    delay_pair(&p, &c, &prev, &cur);
    p.delay.blkio_count = 10;
    p.delay.blkio_delay_ns = 1000000000ull;
    c.delay.blkio_count = 60;
    c.delay.blkio_delay_ns = 1250000000ull; /* +250 ms of 1 s: 25 %; 250 ms / 50 = 5 ms */
    p.delay.swapin_count = 1;
    p.delay.swapin_delay_ns = 0;
    c.delay.swapin_count = 3;
    c.delay.swapin_delay_ns = 100000000ull; /* +100 ms: 10 % */
    struct result res;
    compute(&prev, &cur, &res);
    assert_true(res.tasks[0].delay_valid);
    assert_double_eq(res.tasks[0].io_delay_pct, 25.0);
    assert_double_eq(res.tasks[0].swapin_delay_pct, 10.0);
    assert_double_eq(res.tasks[0].blkio_avg_ms, 5.0);
    result_free(&res);

    /* Half a second: twice the share, the same mean wait. */
    cur.mono = 10.5;
    compute(&prev, &cur, &res);
    assert_double_eq(res.tasks[0].io_delay_pct, 50.0);
    assert_double_eq(res.tasks[0].swapin_delay_pct, 20.0);
    assert_double_eq(res.tasks[0].blkio_avg_ms, 5.0);
    result_free(&res);
}

/* More waiting than the clock allows (kernel over-count): capped at nlwp x 100 %, flagged. */
static void test_task_delay_overcount_is_capped_and_flagged(void **state)
{
    (void)state;
    struct task_sample p, c;
    struct snapshot prev, cur;
    delay_pair(&p, &c, &prev, &cur);
    c.nlwp = 1;
    p.delay.blkio_count = 1;
    c.delay.blkio_count = 500;
    c.delay.blkio_delay_ns = 1250000000ull;   /* 1.25 s of waiting in 1 s, one thread */
    struct result res;
    compute(&prev, &cur, &res);
    assert_true(res.tasks[0].delay_valid);
    assert_true(res.tasks[0].delay_overcount);
    assert_double_eq(res.tasks[0].io_delay_pct, 100.0);
    result_free(&res);

    /* The same figure from a process of two threads is possible: kept, not flagged. */
    c.nlwp = 2;
    compute(&prev, &cur, &res);
    assert_false(res.tasks[0].delay_overcount);
    assert_double_eq(res.tasks[0].io_delay_pct, 125.0);
    result_free(&res);

    /* Within the slack of the sampling moments (102 %): not an over-count. */
    c.nlwp = 1;
    c.delay.blkio_delay_ns = 1020000000ull;
    compute(&prev, &cur, &res);
    assert_false(res.tasks[0].delay_overcount);
    assert_double_eq(res.tasks[0].io_delay_pct, 100.0);
    result_free(&res);
}

/* A task read late in one refresh and early in the next: its counters span more than
 * the snapshots' interval, and its waits are measured against their own readings' times
 * (task_delay.at_s). 1.08 s of waiting in a 1 s interval is 108 %, past the slack; read
 * 1.1 s apart, it is 98 %: no over-count. Without the times (a replay), the interval. */
static void test_task_delay_over_its_readings(void **state)
{
    (void)state;
    struct task_sample p, c;
    struct snapshot prev, cur;
    delay_pair(&p, &c, &prev, &cur);
    c.nlwp = 1;
    p.delay.blkio_count = 1;
    c.delay.blkio_count = 100;
    c.delay.blkio_delay_ns = 1078000000ull;
    struct result res;
    compute(&prev, &cur, &res);
    assert_true(res.tasks[0].delay_overcount);      /* no reading times: 107.8 % */
    result_free(&res);

    p.delay.at_s = 10.05;                           /* read 50 ms into its refresh */
    c.delay.at_s = 11.15;                           /* and 150 ms into the next */
    compute(&prev, &cur, &res);
    assert_true(res.tasks[0].delay_valid);
    assert_false(res.tasks[0].delay_overcount);
    assert_double_eq(res.tasks[0].io_delay_pct, 98.0);
    result_free(&res);

    /* a reading time that does not move forward is not used */
    c.delay.at_s = 10.05;
    compute(&prev, &cur, &res);
    assert_true(res.tasks[0].delay_overcount);
    result_free(&res);
}

static void test_task_delays_unknown_when_delayacct_off(void **state)
{
    (void)state;
    struct task_sample p, c;
    struct snapshot prev, cur;
    delay_pair(&p, &c, &prev, &cur);
    p.delay.blkio_count = 10;
    c.delay.blkio_count = 20;
    c.delay.blkio_delay_ns = 5000000;
    prev.delayacct = cur.delayacct = DA_OFF;
    struct result res;
    compute(&prev, &cur, &res);
    assert_false(res.tasks[0].delay_valid);
    assert_nan(res.tasks[0].io_delay_pct);
    assert_nan(res.tasks[0].swapin_delay_pct);
    assert_nan(res.tasks[0].blkio_avg_ms);
    result_free(&res);

    cur.delayacct = DA_UNKNOWN;
    compute(&prev, &cur, &res);
    assert_false(res.tasks[0].delay_valid);
    result_free(&res);
}

static void test_task_zero_delays_unknown_when_start_of_accounting_unknown(void **state)
{
    (void)state;
    /* All-zero counters with delayacct on: the task may have been forked while it was off
     * (no delay record at all), so 0 would be a lie. */
    struct task_sample p, c;
    struct snapshot prev, cur;
    delay_pair(&p, &c, &prev, &cur);
    struct result res;
    compute(&prev, &cur, &res);
    assert_false(res.tasks[0].delay_valid);
    assert_nan(res.tasks[0].io_delay_pct);
    result_free(&res);

    /* Accounting on since tick 600, the task started at 500: still unknown. */
    prev.delayacct_since_ticks = cur.delayacct_since_ticks = 600;
    compute(&prev, &cur, &res);
    assert_false(res.tasks[0].delay_valid);
    result_free(&res);
}

static void test_task_zero_delays_known_when_started_after_accounting_began(void **state)
{
    (void)state;
    struct task_sample p, c;
    struct snapshot prev, cur;
    delay_pair(&p, &c, &prev, &cur);
    struct result res;
    /* on since boot (0), and since exactly the task's start (500): it has a record */
    static const long long since[] = { 0, 500 };
    for (size_t i = 0; i < 2; i++) {
        prev.delayacct_since_ticks = cur.delayacct_since_ticks = since[i];
        compute(&prev, &cur, &res);
        assert_true(res.tasks[0].delay_valid);
        assert_double_eq(res.tasks[0].io_delay_pct, 0.0);
        assert_double_eq(res.tasks[0].swapin_delay_pct, 0.0);
        assert_nan(res.tasks[0].blkio_avg_ms); /* no block I/O this interval */
        result_free(&res);
    }
}

static void test_task_delays_unknown_on_taskstats_error(void **state)
{
    (void)state;
    struct task_sample p, c;
    struct snapshot prev, cur;
    delay_pair(&p, &c, &prev, &cur);
    p.delay.blkio_count = 10;
    c.delay.blkio_count = 20;
    c.delay.blkio_delay_ns = 5000000;
    cur.taskstats_err = -EPERM;
    struct result res;
    compute(&prev, &cur, &res);
    assert_false(res.tasks[0].delay_valid);
    assert_nan(res.tasks[0].io_delay_pct);
    result_free(&res);

    /* No reply for the task in one of the samples: unknown as well. */
    cur.taskstats_err = 0;
    p.delay_valid = false;
    compute(&prev, &cur, &res);
    assert_false(res.tasks[0].delay_valid);
    result_free(&res);
    p.delay_valid = true;
    c.delay_valid = false;
    compute(&prev, &cur, &res);
    assert_false(res.tasks[0].delay_valid);
    result_free(&res);
}

static void test_task_prio_from_raw_nice_and_policy(void **state)
{
    (void)state;
    struct task_sample ct[4];
    set_task(&ct[0], 1, 1);
    ct[0].nice = 19;                    /* raw 0: be/7 from nice */
    set_task(&ct[1], 2, 1);
    ct[1].ioprio_raw = 0x6007;          /* ionice -c3: idle/7 explicit */
    set_task(&ct[2], 3, 1);
    ct[2].policy = SCHED_IDLE;          /* idle/4 from the policy */
    set_task(&ct[3], 4, 1);
    ct[3].ioprio_raw = -EPERM;          /* unreadable: falls back to nice -20 -> be/0 */
    ct[3].nice = -20;
    struct snapshot prev, cur;
    set_snap(&prev, 1.0, NULL, 0);
    set_snap(&cur, 2.0, NULL, 0);
    cur.tasks = ct;
    cur.ntasks = 4;
    struct result res;
    compute(&prev, &cur, &res);
    static const struct { enum ioprio_class cls; int level; enum ioprio_source src; } want[] = {
        { IOC_BE, 7, IOS_NICE }, { IOC_IDLE, 7, IOS_EXPLICIT },
        { IOC_IDLE, 4, IOS_POLICY }, { IOC_BE, 0, IOS_NICE },
    };
    for (size_t i = 0; i < 4; i++) {
        assert_int_equal(res.tasks[i].prio.cls, want[i].cls);
        assert_int_equal(res.tasks[i].prio.level, want[i].level);
        assert_int_equal(res.tasks[i].prio.source, want[i].src);
    }
    result_free(&res);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dev_iostat_formulas_over_one_second),
        cmocka_unit_test(test_dev_rates_scale_with_a_half_second_interval),
        cmocka_unit_test(test_dev_util_is_capped_at_100),
        cmocka_unit_test(test_dev_idle_interval_has_zero_rates_and_unknown_waits),
        cmocka_unit_test(test_layer_saturated_as_its_disk),
        cmocka_unit_test(test_dev_11_fields_give_unknown_discard_and_flush),
        cmocka_unit_test(test_dev_15_fields_give_discard_but_unknown_flush),
        cmocka_unit_test(test_delta_u32_wraps_ms_counters),
        cmocka_unit_test(test_dev_tick_wrap_is_no_reset),
        cmocka_unit_test(test_dev_counter_going_down_is_a_reset_with_unknown_rates),
        cmocka_unit_test(test_dev_vanished_is_not_in_result_and_new_one_is_unknown),
        cmocka_unit_test(test_no_prev_gives_unknown_everything),
        cmocka_unit_test(test_interval_not_positive_gives_unknown_rates),

        cmocka_unit_test(test_delta_saturated_thresholds),
        cmocka_unit_test(test_saturated_verdict_against_learned_baseline),
        cmocka_unit_test(test_saturated_unknown_without_baseline),
        cmocka_unit_test(test_saturated_from_lifetime_ceiling_only_when_far_above),
        cmocka_unit_test(test_reset_forgets_the_baseline),

        cmocka_unit_test(test_psi_share_of_interval_from_total),
        cmocka_unit_test(test_psi_half_second_interval),
        cmocka_unit_test(test_psi_unreadable_or_missing_or_backwards_is_unknown),

        cmocka_unit_test(test_task_io_rates_by_identity),
        cmocka_unit_test(test_task_reused_pid_is_new),
        cmocka_unit_test(test_task_reduced_prev_same_as_whole),
        cmocka_unit_test(test_task_counter_going_down_is_unknown_not_huge),
        cmocka_unit_test(test_task_io_error_in_either_sample_is_unknown),
        cmocka_unit_test(test_task_delays_as_share_of_interval),
        cmocka_unit_test(test_task_delay_overcount_is_capped_and_flagged),
        cmocka_unit_test(test_task_delay_over_its_readings),
        cmocka_unit_test(test_task_delays_unknown_when_delayacct_off),
        cmocka_unit_test(test_task_zero_delays_unknown_when_start_of_accounting_unknown),
        cmocka_unit_test(test_task_zero_delays_known_when_started_after_accounting_began),
        cmocka_unit_test(test_task_delays_unknown_on_taskstats_error),
        cmocka_unit_test(test_task_prio_from_raw_nice_and_policy),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
