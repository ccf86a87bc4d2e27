/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Tests of latency per I/O priority (issue #14): delta.c's rows per (device, priority)
 * from two hand-built lens readings, and the verdicts' evidence from them, including a
 * measurement that contradicts the rule table. No BPF, no privileges.
 *
 * The readings are shaped like the lab disk's (tests/lab/lab.sh: 2 ms per request, 4 at
 * once): under mq-deadline an idle reader waits hundreds of ms while best-effort I/O is
 * served in a few.
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
#include "source/ioprio.h"
#include "source/lens.h"
#include "verdict.h"

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

#define BE0   ((2u << 13) | 0)
#define BE4   ((2u << 13) | 4)
#define BE7   ((2u << 13) | 7)
#define IDLE0 ((3u << 13) | 0)
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

static void stage_put(struct lens_stage_sum *s, uint64_t n, double ms)
{
    s->count += n;
    s->sum_ns += (uint64_t)((double)n * ms * 1e6);
    s->hist[bucket_of_us((uint64_t)(ms * 1000))] += n;
}

/* n requests of one priority through every stage: a tag at once, `sched` ms in the
 * scheduler, `dev` ms at the device. */
static void req_put(struct lens_devprio *p, uint64_t n, double sched, double dev)
{
    stage_put(&p->st[LENS_ST_TAG], n, 0.002);
    stage_put(&p->st[LENS_ST_SCHED], n, sched);
    stage_put(&p->st[LENS_ST_DEVICE], n, dev);
    stage_put(&p->st[LENS_ST_TOTAL], n, sched + dev);
}

/* Two snapshots of one whole disk (loop0, 7:0) with a lens reading each. */
struct pair {
    struct snapshot p, c;
    struct dev_sample pd, cd;
    struct lens_devprio pdp[8], cdp[8];
    struct lens_devstat pdev, cdev;
};

static void snap_init(struct snapshot *s, double mono, struct dev_sample *d,
                      struct lens_devprio *dp, struct lens_devstat *dev)
{
    memset(s, 0, sizeof(*s));
    s->mono = mono;
    s->clk_tck = 100;
    s->devs = d;
    s->ndevs = 1;
    s->delayacct = DA_OFF;
    s->delayacct_since_ticks = -1;
    for (int k = 0; k < PSI_NRES; k++)
        s->psi[k].err = -ENOENT;
    memset(d, 0, sizeof(*d));
    snprintf(d->ds.name, sizeof(d->ds.name), "loop0");
    d->ds.major = 7;
    d->ds.nfields = 17;
    snprintf(d->bd.scheduler, sizeof(d->bd.scheduler), "mq-deadline");
    d->bd.nr_requests = 64;
    s->lens_on = true;
    s->lens.mono = mono;
    s->lens.since = 1.0;
    s->lens.dp = dp;
    s->lens.devs = dev;
    s->lens.ndevs = 1;
    memset(dev, 0, sizeof(*dev));
    dev->major = 7;
}

static void pair_init(struct pair *x)
{
    memset(x, 0, sizeof(*x));
    snap_init(&x->p, 10.0, &x->pd, x->pdp, &x->pdev);
    snap_init(&x->c, 11.0, &x->cd, x->cdp, &x->cdev);
    /* one second of the device 60 % busy with 3 queued on average */
    x->cd.ds.f[DS_RD_IOS] = 400;
    x->cd.ds.f[DS_RD_SECT] = 400 * 8;
    x->cd.ds.f[DS_RD_TICKS] = 3000;
    x->cd.ds.f[DS_IO_TICKS] = 600;
    x->cd.ds.f[DS_QUEUE_TICKS] = 3000;
}

static struct lens_devprio *dp_of(struct snapshot *s, struct lens_devprio *arr, unsigned prio)
{
    for (size_t i = 0; i < s->lens.ndp; i++)
        if (arr[i].prio == prio)
            return &arr[i];
    struct lens_devprio *p = &arr[s->lens.ndp++];
    p->major = 7;
    p->prio = prio;
    return p;
}

/* prev and cur rows of one priority: cur holds prev's counts plus the interval's. */
static struct lens_devprio *both(struct pair *x, unsigned prio, uint64_t before, uint64_t n,
                                 double sched, double dev)
{
    struct lens_devprio *a = dp_of(&x->p, x->pdp, prio), *z = dp_of(&x->c, x->cdp, prio);
    req_put(a, before, sched, dev);
    req_put(z, before, sched, dev);
    req_put(z, n, sched, dev);
    return z;
}

static const struct prio_latency *find_row(const struct dev_rates *d, const char *name)
{
    for (size_t i = 0; i < d->nlat; i++)
        if (strcmp(d->lat[i].name, name) == 0)
            return &d->lat[i];
    return NULL;
}

static const struct prio_latency *row(const struct dev_rates *d, const char *name)
{
    static const struct prio_latency none;
    const struct prio_latency *l = find_row(d, name);
    if (!l) {
        fail_msg("no row %s", name);
        return &none;
    }
    return l;
}

/* ---- delta.c ---- */

static void test_rows_per_priority_sorted(void **state)
{
    (void)state;
    struct pair x;
    pair_init(&x);
    both(&x, IDLE7, 50, 40, 300.0, 2.0);      /* held ~300 ms in the scheduler */
    both(&x, BE4, 1000, 300, 0.01, 2.0);
    both(&x, BE0, 0, 0, 0.01, 2.0);           /* row present, nothing this interval */
    struct baselines hist = { 0 };
    struct result r;
    delta_compute(&x.p, &x.c, &hist, &r);
    const struct dev_rates *d = &r.devs[0];
    assert_true(d->lens.valid);
    assert_int_equal(d->nlat, 2);              /* be/0 completed nothing: no row */
    assert_string_equal(d->lat[0].name, "be/4");   /* sorted by prio: be (2) before idle (3) */
    assert_int_equal(d->lat[0].prio, BE4);
    assert_string_equal(d->lat[1].name, "idle");
    const struct prio_stage *it = &row(d, "idle")->st[LENS_ST_TOTAL];
    const struct prio_stage *bt = &row(d, "be/4")->st[LENS_ST_TOTAL];
    assert_near(it->count, 40, 0);
    assert_near(bt->count, 300, 0);
    assert_near(it->mean_ms, 302.0, 1e-6);
    assert_near(bt->mean_ms, 2.01, 1e-6);
    /* 302 ms is bucket 19 ([262.144, 524.288) ms): all 40 there, the median halfway */
    assert_near(it->p50_ms, (262144 + 0.5 * 262144) / 1000.0, 1e-9);
    assert_true(it->p99_ms > it->p90_ms && it->p90_ms > it->p50_ms);
    assert_int_equal(it->hist[19], 40);
    uint64_t sum = 0;
    for (int k = 0; k < LENS_HIST; k++)
        sum += it->hist[k];
    assert_int_equal(sum, 40);                 /* the interval's buckets, not the lifetime's */
    /* each stage on its own */
    const struct prio_stage *is = &row(d, "idle")->st[LENS_ST_SCHED];
    assert_near(is->mean_ms, 300.0, 1e-6);
    assert_near(row(d, "idle")->st[LENS_ST_DEVICE].mean_ms, 2.0, 1e-6);
    assert_near(row(d, "be/4")->st[LENS_ST_TAG].count, 300, 0);
    result_free(&r);
    baselines_free(&hist);
}

static void test_idle_levels_are_one_row(void **state)
{
    (void)state;
    struct pair x;
    pair_init(&x);
    both(&x, IDLE7, 0, 30, 100.0, 2.0);
    both(&x, IDLE0, 0, 10, 100.0, 2.0);
    struct baselines hist = { 0 };
    struct result r;
    delta_compute(&x.p, &x.c, &hist, &r);
    const struct dev_rates *d = &r.devs[0];
    assert_int_equal(d->nlat, 1);              /* "idle" twice would be a duplicate key */
    assert_string_equal(d->lat[0].name, "idle");
    assert_int_equal(d->lat[0].prio, IDLE0);
    assert_near(d->lat[0].st[LENS_ST_TOTAL].count, 40, 0);
    result_free(&r);
    baselines_free(&hist);
}

static void test_reset_and_new_rows(void **state)
{
    (void)state;
    struct pair x;
    pair_init(&x);
    both(&x, BE4, 100, 300, 0.01, 2.0);
    /* be/7's counters went backwards (the map's entry evicted and made again) */
    struct lens_devprio *a = dp_of(&x.p, x.pdp, BE7), *z = dp_of(&x.c, x.cdp, BE7);
    req_put(a, 500, 0.01, 2.0);
    req_put(z, 20, 0.01, 2.0);
    /* idle is new since the previous reading: all of it is this interval's */
    req_put(dp_of(&x.c, x.cdp, IDLE7), 12, 50.0, 2.0);
    struct baselines hist = { 0 };
    struct result r;
    delta_compute(&x.p, &x.c, &hist, &r);
    const struct dev_rates *d = &r.devs[0];
    assert_int_equal(d->nlat, 2);
    assert_null(find_row(d, "be/7"));               /* a reset says nothing, never a huge count */
    assert_near(row(d, "idle")->st[LENS_ST_TOTAL].count, 12, 0);
    assert_near(row(d, "be/4")->st[LENS_ST_TOTAL].count, 300, 0);
    result_free(&r);
    baselines_free(&hist);
}

static void test_no_rows_without_a_pair_of_readings(void **state)
{
    (void)state;
    struct pair x;
    pair_init(&x);
    both(&x, BE4, 100, 300, 0.01, 2.0);
    struct baselines hist = { 0 };
    struct result r;
    /* first sample */
    delta_compute(NULL, &x.c, &hist, &r);
    assert_null(r.devs[0].lat);
    assert_int_equal(r.devs[0].nlat, 0);
    result_free(&r);
    /* lens off in one of them */
    x.p.lens_on = false;
    delta_compute(&x.p, &x.c, &hist, &r);
    assert_null(r.devs[0].lat);
    result_free(&r);
    x.p.lens_on = true;
    /* readings of two lenses */
    x.c.lens.since = 5.0;
    delta_compute(&x.p, &x.c, &hist, &r);
    assert_null(r.devs[0].lat);
    result_free(&r);
    x.c.lens.since = 1.0;
    /* a partition */
    x.pd.bd.partition = x.cd.bd.partition = true;
    delta_compute(&x.p, &x.c, &hist, &r);
    assert_null(r.devs[0].lat);
    assert_int_equal(r.devs[0].nlat, 0);
    result_free(&r);
    x.pd.bd.partition = x.cd.bd.partition = false;
    /* the same pair gives the row: the cases above failed for their own reason */
    delta_compute(&x.p, &x.c, &hist, &r);
    assert_int_equal(r.devs[0].nlat, 1);
    result_free(&r);
    baselines_free(&hist);
}

/* ---- verdict.c: evidence ---- */

/* Tasks in the current snapshot, each doing I/O to loop0 at the given raw priority. */
struct people {
    struct task_sample t[4];
    struct task_devs td[4];
};

static void people_add(struct pair *x, struct people *pp, pid_t pid, const char *comm, int raw)
{
    size_t i = x->c.ntasks++;
    struct task_sample *t = &pp->t[i];
    memset(t, 0, sizeof(*t));
    t->id = t->tgid = pid;
    t->start_ticks = 5;
    t->comm = comm;
    t->cmdline = t->user = "";
    t->policy = SCHED_OTHER;
    t->nlwp = 1;
    t->ioprio_raw = raw;
    pp->td[i] = (struct task_devs){ .known = true, .n = 1 };
    x->c.tasks = pp->t;
    x->c.tdevs = pp->td;
}

static const struct warning *find_w(const struct verdicts *v, enum warn_code c, int task)
{
    for (size_t i = 0; i < v->n; i++)
        if (v->w[i].code == c && v->w[i].task == task)
            return &v->w[i];
    return NULL;
}

static const struct warning *get_w(const struct verdicts *v, enum warn_code c, int task)
{
    static const struct warning none;
    const struct warning *w = find_w(v, c, task);
    if (!w) {
        fail_msg("no %s for task %d", warn_code_name(c), task);
        return &none;
    }
    return w;
}

static void judge(struct pair *x, struct result *r, struct verdicts *v)
{
    struct baselines hist = { 0 };
    delta_compute(&x->p, &x->c, &hist, r);
    baselines_free(&hist);
    verdict_compute(r, v);
}

/* The table and the measurement agree: mq-deadline serves idle after best-effort (idle
 * waits 150 times longer) and be/0 like be/7 (the level is not read). */
static void test_measured_agrees_with_the_table(void **state)
{
    (void)state;
    struct pair x;
    struct people pp;
    pair_init(&x);
    both(&x, IDLE7, 0, 40, 300.0, 8.0);
    both(&x, BE0, 0, 150, 0.01, 8.0);
    both(&x, BE7, 0, 140, 0.01, 8.0);
    people_add(&x, &pp, 100, "backup", IOPRIO_MAKE(IOC_IDLE, 7));
    people_add(&x, &pp, 200, "db", IOPRIO_MAKE(IOC_BE, 0));
    people_add(&x, &pp, 300, "batch", IOPRIO_MAKE(IOC_BE, 7));
    struct result r;
    struct verdicts v;
    judge(&x, &r, &v);
    assert_null(find_w(&v, W_IOPRIO_IGNORED, 0));
    assert_null(find_w(&v, W_IOPRIO_HONOURED, 0));
    const struct warning *w = get_w(&v, W_IOPRIO_LEVEL_IGNORED, 1);
    assert_int_equal(w->evidence, EV_MEASURED);
    assert_false(w->contradicts);
    assert_string_equal(w->m.prio, "be/0");
    assert_string_equal(w->m.vs, "be/7");          /* the other level, not its own */
    assert_near(w->m.count, 150, 0);
    assert_near(w->m.vs_count, 140, 0);
    assert_near(w->m.p50_ms, w->m.vs_p50_ms, 1e-9);
    char buf[128];
    assert_string_equal(warn_evidence_text(w, buf, sizeof(buf)), "measured: be/0 p50 6.14 ms vs be/7 6.14 ms");
    assert_int_equal(get_w(&v, W_IOPRIO_LEVEL_IGNORED, 2)->evidence, EV_MEASURED);
    verdicts_free(&v);
    result_free(&r);

    /* too few requests of a priority: the table alone */
    pair_init(&x);
    both(&x, BE0, 0, LAT_MIN_REQS - 1, 0.01, 8.0);
    both(&x, BE7, 0, 140, 0.01, 8.0);
    x.c.ntasks = 0;
    people_add(&x, &pp, 200, "db", IOPRIO_MAKE(IOC_BE, 0));
    judge(&x, &r, &v);
    w = get_w(&v, W_IOPRIO_LEVEL_IGNORED, 0);
    assert_int_equal(w->evidence, EV_RULE);
    assert_string_equal(warn_evidence_text(w, buf, sizeof(buf)), "");
    verdicts_free(&v);
    result_free(&r);
}

/* The kernel does not behave as the table says: the measurement wins. */
static void test_measurement_contradicts_the_table(void **state)
{
    (void)state;
    struct pair x;
    struct people pp;
    char buf[128];
    struct result r;
    struct verdicts v;

    /* "none reads no priority", yet idle waits 300 ms against best-effort's 8 while
     * requests queue (aqu-sz 3): honoured, measured, against the table */
    pair_init(&x);
    snprintf(x.cd.bd.scheduler, sizeof(x.cd.bd.scheduler), "none");
    both(&x, IDLE7, 0, 40, 300.0, 8.0);
    both(&x, BE4, 0, 300, 0.01, 8.0);
    people_add(&x, &pp, 100, "backup", IOPRIO_MAKE(IOC_IDLE, 7));
    judge(&x, &r, &v);
    assert_null(find_w(&v, W_IOPRIO_IGNORED, 0));
    const struct warning *w = get_w(&v, W_IOPRIO_HONOURED, 0);
    assert_int_equal(w->evidence, EV_MEASURED);
    assert_true(w->contradicts);
    assert_string_equal(w->m.prio, "idle");
    assert_string_equal(w->m.vs, "be/4");
    assert_true(w->m.p50_ms >= LAT_DIFFER * w->m.vs_p50_ms);
    assert_non_null(strstr(w->text, "rule table says none reads no priority"));
    assert_non_null(strstr(warn_evidence_text(w, buf, sizeof(buf)), "; the rule table says otherwise"));
    assert_int_equal(strncmp(buf, "measured: idle p50 ", 19), 0);
    verdicts_free(&v);
    result_free(&r);

    /* the same with nothing queued: a difference is the workloads' own, the table stands */
    x.cd.ds.f[DS_QUEUE_TICKS] = 1000;             /* aqu-sz 1.0 */
    judge(&x, &r, &v);
    assert_null(find_w(&v, W_IOPRIO_HONOURED, 0));
    w = get_w(&v, W_IOPRIO_IGNORED, 0);
    assert_int_equal(w->evidence, EV_MEASURED);    /* both measured: the figures are given */
    assert_false(w->contradicts);
    verdicts_free(&v);
    result_free(&r);

    /* "bfq honours idle", yet idle and best-effort wait alike while requests queue:
     * ignored, measured, against the table */
    pair_init(&x);
    snprintf(x.cd.bd.scheduler, sizeof(x.cd.bd.scheduler), "bfq");
    both(&x, IDLE7, 0, 40, 0.01, 8.0);
    both(&x, BE4, 0, 300, 0.01, 8.0);
    x.c.ntasks = 0;
    people_add(&x, &pp, 100, "backup", IOPRIO_MAKE(IOC_IDLE, 7));
    /* aqu-sz 6 beyond the 2.7 at the device, no class seen waiting: under bfq a held
     * queue; under none and kyber not (the dispatch list of a busy CPU), so that a
     * saturated device under none is not called held back */
    x.cd.ds.f[DS_QUEUE_TICKS] = 6000;
    judge(&x, &r, &v);
    assert_true(r.devs[0].lens.held_back);
    verdicts_free(&v);
    result_free(&r);
    snprintf(x.cd.bd.scheduler, sizeof(x.cd.bd.scheduler), "none");
    judge(&x, &r, &v);
    assert_false(r.devs[0].lens.held_back);
    verdicts_free(&v);
    result_free(&r);
    snprintf(x.cd.bd.scheduler, sizeof(x.cd.bd.scheduler), "bfq");
    x.cd.ds.f[DS_QUEUE_TICKS] = 3000;
    judge(&x, &r, &v);
    assert_false(r.devs[0].lens.held_back);
    w = get_w(&v, W_IOPRIO_IGNORED, 0);
    assert_int_equal(w->evidence, EV_MEASURED);
    assert_true(w->contradicts);
    assert_non_null(strstr(w->text, "rule table says bfq honours it"));
    verdicts_free(&v);
    result_free(&r);

    /* and without a queue: nothing to order, no claim against the table */
    x.cd.ds.f[DS_QUEUE_TICKS] = 1000;
    judge(&x, &r, &v);
    assert_null(find_w(&v, W_IOPRIO_IGNORED, 0));
    verdicts_free(&v);
    result_free(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rows_per_priority_sorted),
        cmocka_unit_test(test_idle_levels_are_one_row),
        cmocka_unit_test(test_reset_and_new_rows),
        cmocka_unit_test(test_no_rows_without_a_pair_of_readings),
        cmocka_unit_test(test_measured_agrees_with_the_table),
        cmocka_unit_test(test_measurement_contradicts_the_table),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
