/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Unit tests of the verdict rules (src/verdict.c) on hand-built results: the rule table
 * scheduler x priority, the queue-state findings, and roles. */
#include <math.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>

#include <cmocka.h>

#include "verdict.h"

static struct ioprio_eff P(enum ioprio_class c, int level)
{
    struct ioprio_eff e = { c, level, IOS_EXPLICIT };
    return e;
}

static void test_rule_table(void **state)
{
    (void)state;
    /* none and kyber read nothing; a device without a scheduler neither */
    assert_int_equal(verdict_sched_reading("none", P(IOC_IDLE, 7)), SR_IGNORED);
    assert_int_equal(verdict_sched_reading("kyber", P(IOC_IDLE, 7)), SR_IGNORED);
    assert_int_equal(verdict_sched_reading("", P(IOC_BE, 7)), SR_IGNORED);
    assert_int_equal(verdict_sched_reading(NULL, P(IOC_RT, 0)), SR_IGNORED);
    /* mq-deadline: class yes, level no */
    assert_int_equal(verdict_sched_reading("mq-deadline", P(IOC_IDLE, 7)), SR_HONOURED);
    assert_int_equal(verdict_sched_reading("mq-deadline", P(IOC_RT, 4)), SR_HONOURED);
    assert_int_equal(verdict_sched_reading("mq-deadline", P(IOC_BE, 7)), SR_LEVEL_IGNORED);
    assert_int_equal(verdict_sched_reading("mq-deadline", P(IOC_BE, 0)), SR_LEVEL_IGNORED);
    /* bfq: both */
    assert_int_equal(verdict_sched_reading("bfq", P(IOC_BE, 7)), SR_HONOURED);
    assert_int_equal(verdict_sched_reading("bfq", P(IOC_IDLE, 7)), SR_HONOURED);
    /* be/4 is the default everywhere: nothing to say */
    assert_int_equal(verdict_sched_reading("none", P(IOC_BE, 4)), SR_DEFAULT);
    assert_int_equal(verdict_sched_reading("mq-deadline", P(IOC_BE, 4)), SR_DEFAULT);
    assert_int_equal(verdict_sched_reading("fancy-new", P(IOC_IDLE, 7)), SR_UNKNOWN_SCHED);
}

static void test_code_names_are_stable(void **state)
{
    (void)state;
    assert_string_equal(warn_code_name(W_IOPRIO_IGNORED), "ioprio-ignored");
    assert_string_equal(warn_code_name(W_IOPRIO_LEVEL_IGNORED), "ioprio-level-ignored");
    assert_string_equal(warn_code_name(W_IOPRIO_LOTTERY), "ioprio-lottery");
    assert_string_equal(warn_code_name(W_IOPRIO_UNSATURATED), "ioprio-unsaturated");
    assert_string_equal(warn_code_name(W_IOPRIO_WRITEBACK), "ioprio-writeback");
    assert_string_equal(warn_code_name(W_HIDDEN_QUEUE), "hidden-queue");
    assert_string_equal(warn_code_name(W_IOPRIO_HELD), "ioprio-held");
    assert_string_equal(warn_code_name(W_IO_NOT_BLOCK), "io-pressure-not-block");
    assert_string_equal(warn_code_name(W_IOPRIO_DROPPED), "ioprio-dropped");
    assert_int_equal(warn_code_severity(W_IOPRIO_HELD), SEV_INFO);
    assert_null(role_name(ROLE_NONE));
    assert_string_equal(role_name(ROLE_BOTH), "both");
}

/* A little world: up to 4 devices and 8 tasks, built by hand. */
struct world {
    struct snapshot snap;
    struct dev_sample dev[4];
    struct dev_rates dr[4];
    struct task_sample ts[16];
    struct task_devs td[16];
    struct task_rates tr[16];
    struct result res;
    struct verdicts v;
};

static void w_init(struct world *w)
{
    memset(w, 0, sizeof(*w));
    w->snap.devs = w->dev;
    w->snap.tasks = w->ts;
    w->snap.tdevs = w->td;
    w->snap.delayacct = DA_ON;
    w->res.cur = &w->snap;
    w->res.devs = w->dr;
    w->res.tasks = w->tr;
    w->res.interval_s = 1.0;
}

static int w_dev(struct world *w, const char *name, const char *sched, long nr, int saturated,
                 double aqu, double await, double kbs)
{
    int i = (int)w->snap.ndevs++;
    struct dev_sample *d = &w->dev[i];
    snprintf(d->ds.name, sizeof(d->ds.name), "%s", name);
    snprintf(d->bd.disk, sizeof(d->bd.disk), "%s", name);
    snprintf(d->bd.scheduler, sizeof(d->bd.scheduler), "%s", sched);
    const char *offered[] = { "none", "mq-deadline", "kyber", "bfq" };
    for (unsigned k = 0; k < 4; k++)
        snprintf(d->bd.schedulers[k], sizeof(d->bd.schedulers[k]), "%s", offered[k]);
    d->bd.nsched = 4;
    d->bd.nr_requests = nr;
    struct dev_rates *r = &w->dr[i];
    r->dev = d;
    r->valid = true;
    r->saturated = saturated;
    r->aqu_sz = aqu;
    r->await = await;
    r->rkb_s = kbs;
    r->wkb_s = 0;
    w->res.ndevs = w->snap.ndevs;
    return i;
}

static int w_task(struct world *w, pid_t pid, const char *comm, struct ioprio_eff prio,
                  double read_bps, double delay_pct, double avg_ms)
{
    int i = (int)w->snap.ntasks++;
    struct task_sample *t = &w->ts[i];
    t->id = t->tgid = pid;
    t->comm = comm;                     /* a literal: outlives the world */
    struct task_rates *r = &w->tr[i];
    r->task = t;
    r->prio = prio;
    r->io_valid = true;
    r->read_bps = read_bps;
    r->write_bps = 0;
    r->delay_valid = !isnan(delay_pct);
    r->io_delay_pct = delay_pct;
    r->blkio_avg_ms = avg_ms;
    w->td[i].known = true;
    w->res.ntasks = w->snap.ntasks;
    w->v.nroles = 0;
    return i;
}

static void w_touch(struct world *w, int task, int dev)
{
    w->td[task].idx[w->td[task].n++] = (uint16_t)dev;
}

static int count(const struct verdicts *v, enum warn_code c, int dev, int task)
{
    int n = 0;
    for (size_t i = 0; i < v->n; i++)
        if (v->w[i].code == c && v->w[i].dev == dev && v->w[i].task == task)
            n++;
    return n;
}

/* The same on any device. */
static int count_any(const struct verdicts *v, enum warn_code c, int task)
{
    int n = 0;
    for (size_t i = 0; i < v->n; i++)
        n += v->w[i].code == c && v->w[i].task == task;
    return n;
}

static void test_idle_on_none_is_ignored_and_on_bfq_not(void **state)
{
    (void)state;
    struct world w;
    w_init(&w);
    int vda = w_dev(&w, "vda", "none", 64, 1, 8, 4, 8000);
    int vdb = w_dev(&w, "vdb", "bfq", 256, 1, 8, 4, 8000);
    int t = w_task(&w, 100, "backup", P(IOC_IDLE, 7), 1000, 50, 4);
    w_touch(&w, t, vda);
    w_touch(&w, t, vdb);
    verdict_compute(&w.res, &w.v);
    assert_int_equal(count(&w.v, W_IOPRIO_IGNORED, vda, t), 1);
    assert_int_equal(count(&w.v, W_IOPRIO_IGNORED, vdb, t), 0);
    /* the text names the process, the label, the device and scheduler, and the way out */
    for (size_t i = 0; i < w.v.n; i++)
        if (w.v.w[i].code == W_IOPRIO_IGNORED) {
            assert_non_null(strstr(w.v.w[i].text, "backup[100]"));
            assert_non_null(strstr(w.v.w[i].text, "idle/7"));
            assert_non_null(strstr(w.v.w[i].text, "vda uses none"));
            assert_non_null(strstr(w.v.w[i].text, "bfq"));
            assert_non_null(strstr(w.v.w[i].text, "io.max"));
        }
    verdicts_free(&w.v);
}

/* A stack in the world: dev's slaves and holders (names), as the sampler reads them. */
static void w_stack(struct world *w, int dev, const char *slaves, const char *holders)
{
    struct blkstack *st = &w->dev[dev].stack;
    const char *lists[2] = { slaves, holders };
    struct blkstack_list *l[2] = { &st->slaves, &st->holders };
    for (int k = 0; k < 2; k++) {
        l[k]->known = true;
        char buf[128];
        snprintf(buf, sizeof(buf), "%s", lists[k]);
        for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save))
            snprintf(l[k]->name[l[k]->n++], BD_NAME_MAX, "%s", t);
    }
}

/* A bio-based device: no scheduler, no queue of requests (dm, md). */
static int w_bio(struct world *w, const char *name)
{
    int i = w_dev(w, name, "", -1, -1, 0, 0, 0);
    w->dev[i].bd.nsched = 0;
    return i;
}

static const char *text_for(const struct verdicts *v, enum warn_code c, int dev, int task)
{
    for (size_t i = 0; i < v->n; i++)
        if (v->w[i].code == c && v->w[i].dev == dev && v->w[i].task == task)
            return v->w[i].text;
    return NULL;
}

/* An idle reader of dm-1 (dm-crypt) over dm-0 (dm-linear) over nb0: judged on nb0, the
 * text names the path; the layers get no verdict of their own. Through a partition
 * (dm-5 over sda1), the path ends at the disk. */
static void test_stacked_verdicts_name_the_path(void **state)
{
    (void)state;
    static const char *const scheds[] = { "none", "bfq" };
    for (int sc = 0; sc < 2; sc++) {
        struct world w;
        w_init(&w);
        int nb0 = w_dev(&w, "nb0", scheds[sc], 64, 0, 0.5, 0.2, 800);
        int dm0 = w_bio(&w, "dm-0"), dm1 = w_bio(&w, "dm-1");
        w_stack(&w, nb0, "", "dm-0");
        w_stack(&w, dm0, "nb0", "dm-1");
        w_stack(&w, dm1, "dm-0", "");
        int t = w_task(&w, 300, "fio", P(IOC_IDLE, 7), 800 * 1024, NAN, NAN);
        w_touch(&w, t, nb0);                 /* fdmap: the disk whose scheduler serves it */
        w.td[t].via_top = (uint16_t)(dm1 + 1);
        w.td[t].via = 1;
        verdict_compute(&w.res, &w.v);
        for (size_t i = 0; i < w.v.n; i++)
            if (w.v.w[i].dev == dm0 || w.v.w[i].dev == dm1)
                fail_msg("%s: a verdict on a layer: %s", scheds[sc], w.v.w[i].text);
        const char *txt = sc == 0 ? text_for(&w.v, W_IOPRIO_IGNORED, nb0, t)
                                  : text_for(&w.v, W_IOPRIO_UNSATURATED, nb0, t);
        assert_non_null(txt);
        assert_non_null(strstr(txt, sc == 0 ? "is ignored: dm-1 -> dm-0 -> nb0 uses none"
                                            : "dm-1 -> dm-0 -> nb0 is not saturated"));
        if (sc == 1)
            assert_int_equal(count(&w.v, W_IOPRIO_IGNORED, nb0, t), 0);
        verdicts_free(&w.v);
    }

    struct world w;
    w_init(&w);
    int sda = w_dev(&w, "sda", "none", 64, 1, 8, 4, 8000);
    int sda1 = w_dev(&w, "sda1", "", -1, -1, 0, 0, 0);
    w.dev[sda1].bd.partition = true;
    snprintf(w.dev[sda1].bd.disk, sizeof(w.dev[sda1].bd.disk), "sda");
    int dm5 = w_bio(&w, "dm-5");
    w_stack(&w, sda, "", "");
    w_stack(&w, sda1, "", "dm-5");
    w_stack(&w, dm5, "sda1", "");
    int t = w_task(&w, 301, "backup", P(IOC_IDLE, 7), 1000, 50, 4);
    w_touch(&w, t, sda);
    w.td[t].via_top = (uint16_t)(dm5 + 1);
    w.td[t].via = 1;
    verdict_compute(&w.res, &w.v);
    const char *txt = text_for(&w.v, W_IOPRIO_IGNORED, sda, t);
    assert_non_null(txt);
    assert_non_null(strstr(txt, "is ignored: dm-5 -> sda1 -> sda uses none"));
    verdicts_free(&w.v);

    /* a top whose stack does not lead to the disk (unknown lists: a replay): the disk */
    w_init(&w);
    sda = w_dev(&w, "sda", "none", 64, 1, 8, 4, 8000);
    dm5 = w_bio(&w, "dm-5");
    t = w_task(&w, 302, "backup", P(IOC_IDLE, 7), 1000, 50, 4);
    w_touch(&w, t, sda);
    w.td[t].via_top = (uint16_t)(dm5 + 1);
    w.td[t].via = 1;
    verdict_compute(&w.res, &w.v);
    txt = text_for(&w.v, W_IOPRIO_IGNORED, sda, t);
    assert_non_null(txt);
    assert_non_null(strstr(txt, "is ignored: sda uses none"));
    verdicts_free(&w.v);
}

/* The stack of the crypt writer (tests/vm/guest/test_stack.sh on 6.1): dm-1 (dm-crypt)
 * over dm-0 (dm-linear) over nb0, an idle-class process with the lens. */
static int w_crypt(struct world *w, const char *sched, int *nb0, int *dm1)
{
    w_init(w);
    *nb0 = w_dev(w, "nb0", sched, 64, 0, 0.5, 0.2, 800);
    int dm0 = w_bio(w, "dm-0");
    *dm1 = w_bio(w, "dm-1");
    snprintf(w->dev[*dm1].bd.layer, sizeof(w->dev[*dm1].bd.layer), "crypt, iotcrypt");
    w_stack(w, *nb0, "", "dm-0");
    w_stack(w, dm0, "nb0", "dm-1");
    w_stack(w, *dm1, "dm-0", "");
    int t = w_task(w, 300, "fio", P(IOC_IDLE, 7), 0, NAN, NAN);
    w_touch(w, t, *nb0);
    struct task_devs *td = &w->td[t];
    td->via_top = (uint16_t)(*dm1 + 1);
    td->via = td->from_lens = 1;
    td->lens = td->lens_prio = true;
    w->dr[*nb0].lens.valid = true;
    return t;
}

/* What the disk's requests carried over the interval (latency_by_prio): n requests each. */
static void w_lat(struct world *w, int dev, const unsigned *prio, size_t n)
{
    struct dev_rates *d = &w->dr[dev];
    d->lat = calloc(n, sizeof(*d->lat));
    d->nlat = n;
    for (size_t i = 0; i < n; i++) {
        d->lat[i].prio = prio[i];
        lens_prio_name(prio[i], d->lat[i].name, sizeof(d->lat[i].name));
        d->lat[i].st[LENS_ST_TOTAL].count = 200;
        d->lat[i].st[LENS_ST_TOTAL].p50_ms = 1;
    }
}

static void w_free(struct world *w)
{
    for (size_t i = 0; i < w->res.ndevs; i++)
        free(w->dr[i].lat);
    free(w->snap.lens_bps);
    free(w->snap.lens_async);
    free(w->snap.lens_prio);
}

/* The writer's bios carry its idle label at dm-1 only: dm-crypt encrypts and resubmits
 * them from its own threads, and the disk receives none (6.1). The verdict names the
 * layer that dropped it and what the disk received; the verdicts on its label are not
 * given for that disk (what it received is the default). The reader's bios carry the
 * label at every level: nothing dropped. */
/* md RAID 5 (md5 over nb5 bfq, nb6 none, nb7 mq-deadline): an idle reader's bios at md5
 * (kept at nb5, the first disk its stack reaches) and its share at each disk. The label
 * went on below md5, a third to each disk: nothing dropped, on any disk (comparing md5's
 * whole rate with nb5's third called 67 % of it dropped). The same reader with nothing of
 * its own at the disks (a RAID 5 write, sent by md's thread): dropped, md5 named. */
static void test_label_dropped_by_a_stripe(void **state)
{
    (void)state;
    const unsigned idle = (unsigned)IOPRIO_MAKE(IOC_IDLE, 0), none = 0;
    for (int own = 1; own >= 0; own--) {
        struct world w;
        w_init(&w);
        int d[3];
        const char *names[3] = { "nb5", "nb6", "nb7" }, *scheds[3] = { "bfq", "none", "mq-deadline" };
        for (int i = 0; i < 3; i++) {
            d[i] = w_dev(&w, names[i], scheds[i], 64, 0, 0.5, 0.2, 300);
            w_stack(&w, d[i], "", "md5");
        }
        int md = w_bio(&w, "md5");
        snprintf(w.dev[md].bd.layer, sizeof(w.dev[md].bd.layer), "raid5");
        w_stack(&w, md, "nb5,nb6,nb7", "");
        int t = w_task(&w, 400, "fio", P(IOC_IDLE, 0), 900e3, NAN, NAN);
        struct task_devs *td = &w.td[t];
        for (int i = 0; i < 3; i++)
            w_touch(&w, t, d[i]);
        td->via_top = (uint16_t)(md + 1);
        td->via = td->from_lens = 7;
        td->lens = td->lens_prio = true;
        task_lens_prio_add_at(&w.snap, td, 0, 1, idle, 900e3);          /* at md5 */
        for (unsigned k = 0; own && k < 3; k++)
            task_lens_prio_add_at(&w.snap, td, k, 0, idle, 300e3);      /* a third each */
        for (int i = 0; i < 3; i++) {
            w.dr[d[i]].lens.valid = true;
            w_lat(&w, d[i], own ? &idle : &none, 1);
        }
        verdict_compute(&w.res, &w.v);
        if (own) {
            assert_int_equal(count_any(&w.v, W_IOPRIO_DROPPED, t), 0);
            assert_int_equal(count(&w.v, W_IOPRIO_IGNORED, d[1], t), 1);
        } else {
            const char *txt = text_for(&w.v, W_IOPRIO_DROPPED, d[0], t);
            assert_non_null(txt);
            assert_non_null(strstr(txt, "md5 (raid5) dropped fio[400]'s idle/0 (set) label on md5 -> nb5: 100%"));
        }
        verdicts_free(&w.v);
        w_free(&w);
    }
}

static void test_label_dropped_by_a_layer(void **state)
{
    (void)state;
    static const char *const scheds[] = { "bfq", "mq-deadline" };
    const unsigned none = 0, idle = (unsigned)IOPRIO_MAKE(IOC_IDLE, 0);
    for (int sc = 0; sc < 2; sc++) {
        struct world w;
        int nb0, dm1;
        int t = w_crypt(&w, scheds[sc], &nb0, &dm1);
        task_lens_prio_add_at(&w.snap, &w.td[t], 0, 2, idle, 800e3);    /* at dm-1 */
        w_lat(&w, nb0, &none, 1);
        verdict_compute(&w.res, &w.v);
        const char *txt = text_for(&w.v, W_IOPRIO_DROPPED, nb0, t);
        assert_non_null(txt);
        assert_non_null(strstr(txt, "dm-1 (crypt, iotcrypt) dropped fio[300]'s idle/7 (set) label "
                                    "on dm-1 -> dm-0 -> nb0: 100% of its bytes there"));
        assert_non_null(strstr(txt, sc == 0 ? "reach nb0 as none; bfq serves them at those threads' "
                                              "priority, not idle"
                                            : "reach nb0 as none, which mq-deadline serves as best-effort"));
        for (size_t i = 0; i < w.v.n; i++)
            if (w.v.w[i].task == t && w.v.w[i].code != W_IOPRIO_DROPPED)
                fail_msg("%s: beside ioprio-dropped: %s", scheds[sc], w.v.w[i].text);
        assert_int_equal(w.v.w[0].evidence, EV_MEASURED);
        verdicts_free(&w.v);
        /* without the lens's figures for it (--no-bpf, a replay): no such verdict */
        w.td[t].lens = false;
        verdict_compute(&w.res, &w.v);
        assert_int_equal(count(&w.v, W_IOPRIO_DROPPED, nb0, t), 0);
        verdicts_free(&w.v);
        w_free(&w);

        /* the reader: idle at dm-1, dm-0 and nb0, and at the disk */
        t = w_crypt(&w, scheds[sc], &nb0, &dm1);
        for (unsigned depth = 0; depth < 3; depth++)
            task_lens_prio_add_at(&w.snap, &w.td[t], 0, depth, idle, 800e3);
        /* requests_by_prio keeps the lowest level per disk (the same bytes passed all
         * three: not 3 x 800e3); the levels are apart */
        struct task_prio_bps e[4];
        assert_int_equal(task_lens_prios(&w.snap, &w.td[t], 0, e, 4), 1);
        assert_true(fabs(e[0].bps - 800e3) < 1e-6);
        assert_int_equal(task_lens_prios_at(&w.snap, &w.td[t], 0, 1, e, 4), 1);
        assert_int_equal(task_lens_prios_at(&w.snap, &w.td[t], 0, 3, e, 4), 0);
        /* a best-effort part seen at dm-0 only: not in the disk's figure, which has its own */
        task_lens_prio_add_at(&w.snap, &w.td[t], 0, 1, (unsigned)IOPRIO_MAKE(IOC_BE, 4), 100e3);
        assert_int_equal(task_lens_prios(&w.snap, &w.td[t], 0, e, 4), 1);
        assert_int_equal(task_lens_prios_at(&w.snap, &w.td[t], 0, 1, e, 4), 2);
        w_lat(&w, nb0, &idle, 1);
        verdict_compute(&w.res, &w.v);
        assert_int_equal(count(&w.v, W_IOPRIO_DROPPED, nb0, t), 0);
        assert_int_equal(count(&w.v, W_IOPRIO_UNSATURATED, nb0, t), 1);    /* judged as before */
        verdicts_free(&w.v);
        w_free(&w);
    }
    /* mq-deadline reads the request's class: idle requests reached the disk (another
     * reader's, or the writer's own on a kernel that keeps it), so it cannot be told */
    struct world w;
    int nb0, dm1;
    int t = w_crypt(&w, "mq-deadline", &nb0, &dm1);
    task_lens_prio_add_at(&w.snap, &w.td[t], 0, 2, (unsigned)IOPRIO_MAKE(IOC_IDLE, 0), 800e3);
    const unsigned both[] = { 0, (unsigned)IOPRIO_MAKE(IOC_IDLE, 0) };
    w_lat(&w, nb0, both, 2);
    verdict_compute(&w.res, &w.v);
    assert_int_equal(count(&w.v, W_IOPRIO_DROPPED, nb0, t), 0);
    verdicts_free(&w.v);
    /* bfq: the disk received idle requests, but from other threads (6.9 keeps the
     * priority in the bio; bfq reads the submitting thread's): still dropped, and the
     * text says what the disk's requests carried, none first */
    snprintf(w.dev[nb0].bd.scheduler, sizeof(w.dev[nb0].bd.scheduler), "bfq");
    verdict_compute(&w.res, &w.v);
    assert_non_null(text_for(&w.v, W_IOPRIO_DROPPED, nb0, t));
    assert_non_null(strstr(text_for(&w.v, W_IOPRIO_DROPPED, nb0, t), "reach nb0 as none;"));
    verdicts_free(&w.v);
    /* ... and with only idle requests there (6.9+: the clone keeps the class), still
     * dropped under bfq: they come from other threads */
    free(w.dr[nb0].lat);
    w_lat(&w, nb0, &both[1], 1);
    verdict_compute(&w.res, &w.v);
    assert_non_null(text_for(&w.v, W_IOPRIO_DROPPED, nb0, t));
    assert_non_null(strstr(text_for(&w.v, W_IOPRIO_DROPPED, nb0, t), "reach nb0 as idle;"));
    verdicts_free(&w.v);
    /* a scheduler the table does not know: what it reads is unknown, no claim */
    snprintf(w.dev[nb0].bd.scheduler, sizeof(w.dev[nb0].bd.scheduler), "ssg");
    verdict_compute(&w.res, &w.v);
    assert_int_equal(count(&w.v, W_IOPRIO_DROPPED, nb0, t), 0);
    verdicts_free(&w.v);
    /* under none nothing reads a label: ioprio-ignored, no drop to speak of */
    snprintf(w.dev[nb0].bd.scheduler, sizeof(w.dev[nb0].bd.scheduler), "none");
    w.dr[nb0].saturated = 1;
    verdict_compute(&w.res, &w.v);
    assert_int_equal(count(&w.v, W_IOPRIO_DROPPED, nb0, t), 0);
    assert_int_equal(count(&w.v, W_IOPRIO_IGNORED, nb0, t), 1);
    verdicts_free(&w.v);
    w_free(&w);
}

static void test_nice19_on_mq_deadline_level_ignored(void **state)
{
    (void)state;
    struct world w;
    w_init(&w);
    int vda = w_dev(&w, "vda", "mq-deadline", 256, 1, 3, 4, 8000);
    struct ioprio_eff nice19 = { IOC_BE, 7, IOS_NICE };
    int t = w_task(&w, 7, "du", nice19, 0, NAN, NAN);
    w_touch(&w, t, vda);
    int u = w_task(&w, 8, "idler", P(IOC_IDLE, 7), 0, NAN, NAN);
    w_touch(&w, u, vda);
    int d = w_task(&w, 9, "plain", P(IOC_BE, 4), 0, NAN, NAN);
    w_touch(&w, d, vda);
    verdict_compute(&w.res, &w.v);
    assert_int_equal(count(&w.v, W_IOPRIO_LEVEL_IGNORED, vda, t), 1);
    assert_int_equal(count(&w.v, W_IOPRIO_LEVEL_IGNORED, vda, u), 0);
    assert_int_equal(count(&w.v, W_IOPRIO_IGNORED, vda, u), 0);
    /* the default priority never draws a verdict */
    for (size_t i = 0; i < w.v.n; i++)
        assert_int_not_equal(w.v.w[i].task, d);
    verdicts_free(&w.v);
}

/* The way out names only schedulers this kernel has: offered by the device, or a module
 * it can load (then with its modprobe); never bfq on a kernel without it. */
static const char *text_of(const struct verdicts *v, enum warn_code c)
{
    for (size_t i = 0; i < v->n; i++)
        if (v->w[i].code == c)
            return v->w[i].text;
    return "";
}

static void offer(struct world *w, int i, const char *const *names, unsigned n, unsigned loadable)
{
    for (unsigned k = 0; k < n; k++)
        snprintf(w->dev[i].bd.schedulers[k], sizeof(w->dev[i].bd.schedulers[k]), "%s", names[k]);
    w->dev[i].bd.nsched = n;
    w->dev[i].bd.sched_loadable = loadable;
}

static void test_advice_names_only_schedulers_the_kernel_has(void **state)
{
    (void)state;
    static const char *const no_bfq[] = { "none", "mq-deadline", "kyber" };
    static const char *const none_only[] = { "none" };
    struct { const char *const *names; unsigned n, loadable; const char *want, *not; } cases[] = {
        { no_bfq, 3, 0, "switch it to mq-deadline (reads the class)", "bfq" },
        { no_bfq, 3, BD_LOAD_BFQ, "after modprobe bfq, to bfq", NULL },
        { none_only, 1, BD_LOAD_BFQ, "modprobe bfq and switch it to bfq", "mq-deadline" },
        { none_only, 1, 0, "this kernel has no scheduler that reads priorities", "modprobe" },
    };
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        struct world w;
        w_init(&w);
        int vda = w_dev(&w, "vda", "none", 64, 1, 8, 4, 8000);
        offer(&w, vda, cases[c].names, cases[c].n, cases[c].loadable);
        int t = w_task(&w, 100, "backup", P(IOC_IDLE, 7), 1000, 50, 4);
        w_touch(&w, t, vda);
        verdict_compute(&w.res, &w.v);
        const char *txt = text_of(&w.v, W_IOPRIO_IGNORED);
        assert_non_null(strstr(txt, cases[c].want));
        if (cases[c].not)
            assert_null(strstr(txt, cases[c].not));
        verdicts_free(&w.v);
    }
    /* a best-effort level under mq-deadline: bfq only where the kernel has it */
    struct world w;
    w_init(&w);
    int vda = w_dev(&w, "vda", "mq-deadline", 256, 1, 3, 4, 8000);
    offer(&w, vda, no_bfq, 3, 0);
    int t = w_task(&w, 7, "du", P(IOC_BE, 7), 0, NAN, NAN);
    w_touch(&w, t, vda);
    verdict_compute(&w.res, &w.v);
    const char *txt = text_of(&w.v, W_IOPRIO_LEVEL_IGNORED);
    assert_non_null(strstr(txt, "ionice -c3"));
    assert_null(strstr(txt, "bfq"));
    verdicts_free(&w.v);
    w_init(&w);
    vda = w_dev(&w, "vda", "mq-deadline", 256, 1, 3, 4, 8000);
    offer(&w, vda, no_bfq, 3, BD_LOAD_BFQ);
    t = w_task(&w, 7, "du", P(IOC_BE, 7), 0, NAN, NAN);
    w_touch(&w, t, vda);
    verdict_compute(&w.res, &w.v);
    assert_non_null(strstr(text_of(&w.v, W_IOPRIO_LEVEL_IGNORED), "bfq (modprobe bfq)"));
    verdicts_free(&w.v);
}

static void test_full_queue_is_a_lottery(void **state)
{
    (void)state;
    struct world w;
    w_init(&w);
    /* aqu-sz 7.98 of nr_requests 8: the scheduler holds nothing to order */
    int dev = w_dev(&w, "loop0", "mq-deadline", 8, 1, 7.98, 10, 8000);
    int t = w_task(&w, 42, "fio", P(IOC_IDLE, 7), 1000, 90, 10);
    w_touch(&w, t, dev);
    verdict_compute(&w.res, &w.v);
    assert_int_equal(count(&w.v, W_IOPRIO_LOTTERY, dev, -1), 1);
    assert_int_equal(count(&w.v, W_IOPRIO_LOTTERY, dev, t), 1);
    for (size_t i = 0; i < w.v.n; i++)
        if (w.v.w[i].code == W_IOPRIO_LOTTERY && w.v.w[i].task < 0) {
            assert_non_null(strstr(w.v.w[i].text, "nr_requests 8"));
            assert_non_null(strstr(w.v.w[i].text, "raise nr_requests to 16"));
        }
    verdicts_free(&w.v);

    /* half full: no lottery */
    w.dr[dev].aqu_sz = 4;
    verdict_compute(&w.res, &w.v);
    assert_int_equal(count(&w.v, W_IOPRIO_LOTTERY, dev, -1), 0);
    assert_int_equal(count(&w.v, W_IOPRIO_LOTTERY, dev, t), 0);
    verdicts_free(&w.v);

    /* two hardware queues of 8 each (NVMe, virtio): 10 in flight need not fill either
     * (the lens's tag wait would say), 15 fill both on average */
    w.dev[dev].bd.hw_queues = 2;
    w.dr[dev].aqu_sz = 10;
    verdict_compute(&w.res, &w.v);
    assert_int_equal(count(&w.v, W_IOPRIO_LOTTERY, dev, -1), 0);
    assert_int_equal(count(&w.v, W_IOPRIO_LOTTERY, dev, t), 0);
    verdicts_free(&w.v);
    w.dr[dev].aqu_sz = 15;
    verdict_compute(&w.res, &w.v);
    assert_int_equal(count(&w.v, W_IOPRIO_LOTTERY, dev, -1), 1);
    assert_non_null(strstr(text_of(&w.v, W_IOPRIO_LOTTERY), "nr_requests 8 on each of 2 hardware queues"));
    verdicts_free(&w.v);
    /* one queue full, the other idle: aqu-sz 8, and the lens measured the wait for a tag */
    w.dr[dev].aqu_sz = 8;
    w.dr[dev].lens = (struct lens_dev_interval){ .valid = true, .requests = 500, .tag_ms = 6.0,
                                                 .saturated = -1, .top_class = -1, .held_class = -1 };
    verdict_compute(&w.res, &w.v);
    assert_int_equal(count(&w.v, W_IOPRIO_LOTTERY, dev, -1), 1);
    verdicts_free(&w.v);
    w.dr[dev].lens.tag_ms = 0.01;                   /* no tag wait: both have room */
    verdict_compute(&w.res, &w.v);
    assert_int_equal(count(&w.v, W_IOPRIO_LOTTERY, dev, -1), 0);
    verdicts_free(&w.v);
    memset(&w.dr[dev].lens, 0, sizeof(w.dr[dev].lens));
    w.dev[dev].bd.hw_queues = 1;

    /* under none a full queue is no lottery of priorities (none reads none anyway) */
    snprintf(w.dev[dev].bd.scheduler, sizeof(w.dev[dev].bd.scheduler), "none");
    w.dr[dev].aqu_sz = 7.98;
    verdict_compute(&w.res, &w.v);
    assert_int_equal(count(&w.v, W_IOPRIO_LOTTERY, dev, -1), 0);
    verdicts_free(&w.v);
}

static void test_unsaturated_device_is_informational(void **state)
{
    (void)state;
    struct world w;
    w_init(&w);
    int dev = w_dev(&w, "vda", "none", 64, 0, 0.2, 1, 100);
    int t = w_task(&w, 5, "scan", P(IOC_IDLE, 7), 0, 0, NAN);
    w_touch(&w, t, dev);
    verdict_compute(&w.res, &w.v);
    assert_int_equal(count(&w.v, W_IOPRIO_UNSATURATED, dev, t), 1);
    assert_int_equal(count(&w.v, W_IOPRIO_IGNORED, dev, t), 1);
    /* the most severe come first: the warning before the information */
    assert_int_equal(w.v.w[0].code, W_IOPRIO_IGNORED);
    assert_int_equal(w.v.w[w.v.n - 1].sev, SEV_INFO);
    verdicts_free(&w.v);
    /* unknown saturation: no claim either way */
    w.dr[dev].saturated = -1;
    verdict_compute(&w.res, &w.v);
    assert_int_equal(count(&w.v, W_IOPRIO_UNSATURATED, dev, t), 0);
    verdicts_free(&w.v);
}

static void test_buffered_writer_with_label_gets_writeback(void **state)
{
    (void)state;
    struct world w;
    w_init(&w);
    int dev = w_dev(&w, "vda", "bfq", 256, 1, 4, 4, 8000);
    int t = w_task(&w, 11, "logger", P(IOC_IDLE, 7), 0, 0, NAN);
    w_touch(&w, t, dev);
    w.td[t].buffered_writer = true;
    w.td[t].buffered = 1;                      /* idx[0], the only device */
    w.tr[t].write_bps = 4096;
    verdict_compute(&w.res, &w.v);
    assert_int_equal(count(&w.v, W_IOPRIO_WRITEBACK, dev, t), 1);
    verdicts_free(&w.v);
    /* buffered on one device, O_DIRECT on another: only the first is written back */
    int vdb = w_dev(&w, "vdb", "bfq", 256, 1, 4, 4, 8000);
    w_touch(&w, t, vdb);
    verdict_compute(&w.res, &w.v);
    assert_int_equal(count(&w.v, W_IOPRIO_WRITEBACK, dev, t), 1);
    assert_int_equal(count(&w.v, W_IOPRIO_WRITEBACK, vdb, t), 0);
    verdicts_free(&w.v);
    /* not writing this interval: nothing to say */
    w.tr[t].write_bps = 0;
    verdict_compute(&w.res, &w.v);
    assert_int_equal(count(&w.v, W_IOPRIO_WRITEBACK, dev, t), 0);
    verdicts_free(&w.v);
}

static void test_hidden_queue_when_processes_wait_longer_than_await(void **state)
{
    (void)state;
    struct world w;
    w_init(&w);
    /* 16 synchronous readers of 4 KiB sharing 1,900 reads/s: ~119 reads/s each, waiting
     * 99 % of the time: 8.3 ms per read, against an r_await of 2 ms. */
    int dev = w_dev(&w, "loop0", "none", 4, 0, 3.9, 2.0, 7600);
    w.dr[dev].r_await = 2.0;
    w.dr[dev].rareq_sz = 4.0;
    int other = w_dev(&w, "vda", "mq-deadline", 256, 0, 0, NAN, 0);
    w.dr[other].w_s = 30;             /* a few writes (logs): no reads to confuse */
    for (int i = 0; i < 16; i++) {
        int t = w_task(&w, 200 + i, "fio", P(IOC_BE, 4), 475.0 * 1024, 99, 4.1);
        w_touch(&w, t, dev);
        w_touch(&w, t, other);        /* its log is on an idle disk: still attributed */
    }
    verdict_compute(&w.res, &w.v);
    assert_int_equal(count(&w.v, W_HIDDEN_QUEUE, dev, -1), 1);
    assert_non_null(strstr(w.v.w[0].text, "8.3 ms per read"));
    verdicts_free(&w.v);
    /* the same waits with most tags free (aqu-sz 1.9 of 4: below half): nothing waits for
     * a tag; the readers wait on something else (O_DIRECT reads behind the writeback of a
     * buffered writer to the same range, seen on vda with nr_requests 256) */
    w.dr[dev].aqu_sz = 1.9;
    verdict_compute(&w.res, &w.v);
    assert_int_equal(count(&w.v, W_HIDDEN_QUEUE, dev, -1), 0);
    verdicts_free(&w.v);
    w.dr[dev].aqu_sz = NAN;          /* unknown: no claim */
    verdict_compute(&w.res, &w.v);
    assert_int_equal(count(&w.v, W_HIDDEN_QUEUE, dev, -1), 0);
    verdicts_free(&w.v);
    w.dr[dev].aqu_sz = 2.0;          /* half the tags in use: enough */
    verdict_compute(&w.res, &w.v);
    assert_int_equal(count(&w.v, W_HIDDEN_QUEUE, dev, -1), 1);
    verdicts_free(&w.v);
    w.dr[dev].aqu_sz = 3.9;
    /* the other disk reading as much: the waiting cannot be laid at loop0's door */
    w.dr[other].rkb_s = 2000;
    verdict_compute(&w.res, &w.v);
    assert_int_equal(count(&w.v, W_HIDDEN_QUEUE, dev, -1), 0);
    verdicts_free(&w.v);
    w.dr[other].rkb_s = 0;
    /* readers waiting only as long as the device says (4 readers, 475 reads/s each at
     * 99 %: 2.1 ms per read): nothing hidden */
    w.snap.ntasks = w.res.ntasks = 4;
    for (int i = 0; i < 4; i++)
        w.tr[i].read_bps = 475.0 * 4 * 1024;
    verdict_compute(&w.res, &w.v);
    assert_int_equal(count(&w.v, W_HIDDEN_QUEUE, dev, -1), 0);
    verdicts_free(&w.v);
}

/* The priority the requests carried (issue #35): a be/4 task whose libaio or io_uring
 * requests are all idle is judged on idle where the scheduler reads the request's
 * priority (mq-deadline, none); under bfq, which reads the task's, the requests' idle is
 * ignored, and said so. */
static void test_requests_prio_judged(void **state)
{
    (void)state;
    struct world w;
    w_init(&w);
    int dev = w_dev(&w, "loop0", "mq-deadline", 256, 0, 16.0, 30.0, 2000);
    struct lens_dev_interval *l = &w.dr[dev].lens;
    l->valid = true;
    l->requests = 450;
    l->tag_ms = 0.003;
    l->held_back = true;
    l->held_class = IOC_IDLE;
    l->held_sched_ms = 300;
    l->held_now = 16;
    l->sched_queue = 14.5;
    l->top_class = IOC_BE;
    int be = w_task(&w, 10, "db", P(IOC_BE, 4), 800e3, 95, 3.0);
    int aio = w_task(&w, 11, "fio", P(IOC_BE, 4), 800e3, 0, NAN);
    w_touch(&w, be, dev);
    w_touch(&w, aio, dev);
    w.td[be].lens = w.td[be].lens_prio = w.td[aio].lens = w.td[aio].lens_prio = true;
    w.td[be].from_lens = w.td[aio].from_lens = 1;
    task_lens_prio_add(&w.snap, &w.td[be], 0, (unsigned)IOPRIO_MAKE(IOC_BE, 4), 4e6);
    task_lens_prio_add(&w.snap, &w.td[aio], 0, (unsigned)IOPRIO_MAKE(IOC_IDLE, 0), 7e6);
    task_lens_prio_add(&w.snap, &w.td[aio], 0, 0, 1e5);      /* class none: the task's */
    struct ioprio_eff rp;
    assert_true(verdict_requests_prio(&w.res, (size_t)aio, (size_t)dev, &rp));
    assert_int_equal(rp.cls, IOC_IDLE);
    assert_false(verdict_requests_prio(&w.res, (size_t)be, (size_t)dev, &rp));   /* its own */
    verdict_compute(&w.res, &w.v);
    assert_int_equal(count(&w.v, W_IOPRIO_HELD, dev, aio), 1);
    assert_int_equal(count(&w.v, W_IOPRIO_HELD, dev, be), 0);
    assert_non_null(strstr(text_of(&w.v, W_IOPRIO_HELD), "fio[11] idle (its requests'; task be/4)"));
    verdicts_free(&w.v);
    /* under none: its idle requests are ignored */
    snprintf(w.dev[dev].bd.scheduler, sizeof(w.dev[dev].bd.scheduler), "none");
    l->held_back = false;
    verdict_compute(&w.res, &w.v);
    assert_int_equal(count(&w.v, W_IOPRIO_IGNORED, dev, aio), 1);
    assert_int_equal(count(&w.v, W_IOPRIO_IGNORED, dev, be), 0);
    verdicts_free(&w.v);
    /* bfq reads the task's priority, not the request's: the requests' idle is ignored,
     * served as the task's be/4 (the lane measures it on 6.1: not held back), and said so
     * once; the task's own be/4 has nothing more to say */
    snprintf(w.dev[dev].bd.scheduler, sizeof(w.dev[dev].bd.scheduler), "bfq");
    verdict_compute(&w.res, &w.v);
    size_t of_aio = 0;
    for (size_t i = 0; i < w.v.n; i++)
        of_aio += w.v.w[i].task == aio;
    assert_int_equal(of_aio, 1);
    assert_int_equal(count(&w.v, W_IOPRIO_IGNORED, dev, aio), 1);
    assert_int_equal(count(&w.v, W_IOPRIO_IGNORED, dev, be), 0);
    const char *t = text_of(&w.v, W_IOPRIO_IGNORED);
    assert_non_null(strstr(t, "fio[11]'s requests carry idle of their own, ignored"));
    assert_non_null(strstr(t, "bfq, which reads the task's priority"));
    assert_non_null(strstr(t, "ionice -c3 -p 11"));
    verdicts_free(&w.v);
    /* mixed (idle under REQ_PRIO_SHARE of its bytes): no one priority, the task's */
    snprintf(w.dev[dev].bd.scheduler, sizeof(w.dev[dev].bd.scheduler), "none");
    task_lens_prio_add(&w.snap, &w.td[aio], 0, (unsigned)IOPRIO_MAKE(IOC_BE, 4), 3e6);
    assert_false(verdict_requests_prio(&w.res, (size_t)aio, (size_t)dev, &rp));
    verdict_compute(&w.res, &w.v);
    assert_int_equal(count(&w.v, W_IOPRIO_IGNORED, dev, aio), 0);
    verdicts_free(&w.v);
    free(w.snap.lens_bps);
    free(w.snap.lens_async);
    free(w.snap.lens_prio);
}

/* The BPF lens's measurements (delta.h: dev_rates.lens) take over where they exist. */
static void test_lens_held_back_and_measured_tag_wait(void **state)
{
    (void)state;
    struct world w;
    w_init(&w);
    /* mq-deadline holding an idle reader while a best-effort one is served (the lab):
     * the lens says not saturated, held back, class idle. */
    int dev = w_dev(&w, "loop0", "mq-deadline", 256, 0, 16.0, 30.0, 2000);
    struct lens_dev_interval *l = &w.dr[dev].lens;
    l->valid = true;
    l->requests = 450;
    l->tag_ms = 0.003;
    l->device_ms = 3.0;
    l->held_back = true;
    l->held_class = IOC_IDLE;
    l->held_sched_ms = 300;
    l->held_now = 16;
    l->sched_queue = 14.5;
    l->top_class = IOC_BE;
    int be = w_task(&w, 10, "db", P(IOC_BE, 4), 800e3, 95, 3.0);
    int idle = w_task(&w, 11, "backup", P(IOC_IDLE, 7), 800e3, 0, NAN);
    w_touch(&w, be, dev);
    w_touch(&w, idle, dev);
    verdict_compute(&w.res, &w.v);
    assert_int_equal(count(&w.v, W_IOPRIO_HELD, dev, idle), 1);
    assert_int_equal(count(&w.v, W_IOPRIO_UNSATURATED, dev, idle), 0);   /* replaced */
    assert_int_equal(count(&w.v, W_IOPRIO_HELD, dev, be), 0);
    assert_int_equal(count(&w.v, W_HIDDEN_QUEUE, dev, -1), 0);           /* measured: no tag wait */
    assert_int_equal(w.v.roles[be], ROLE_NONE);
    assert_int_equal(w.v.roles[idle], ROLE_NONE);
    for (size_t i = 0; i < w.v.n; i++)
        if (w.v.w[i].code == W_IOPRIO_HELD)
            assert_non_null(strstr(w.v.w[i].text, "honoured"));
    verdicts_free(&w.v);
    /* held since before the lens: which class is unknown; every class below the served
     * one is the held one */
    l->held_class = -1;
    verdict_compute(&w.res, &w.v);
    assert_int_equal(count(&w.v, W_IOPRIO_HELD, dev, idle), 1);
    assert_int_equal(count(&w.v, W_IOPRIO_HELD, dev, be), 0);
    verdicts_free(&w.v);

    /* A measured wait for a tag: hidden-queue from the measurement, whatever the
     * taskstats-based inference would say (here it has nothing: aqu-sz is low). */
    l->held_back = false;
    l->tag_ms = 6.2;
    w.dr[dev].aqu_sz = 1.0;
    verdict_compute(&w.res, &w.v);
    assert_int_equal(count(&w.v, W_HIDDEN_QUEUE, dev, -1), 1);
    int found = 0;
    for (size_t i = 0; i < w.v.n; i++)
        if (w.v.w[i].code == W_HIDDEN_QUEUE)
            found = strstr(w.v.w[i].text, "6.2 ms for a tag") && strstr(w.v.w[i].text, "measured");
    assert_true(found);
    verdicts_free(&w.v);
    /* too few requests for the lens to speak: back to the inference (nothing here) */
    l->requests = 5;
    verdict_compute(&w.res, &w.v);
    assert_int_equal(count(&w.v, W_HIDDEN_QUEUE, dev, -1), 0);
    verdicts_free(&w.v);
}

static void test_roles(void **state)
{
    (void)state;
    struct world w;
    w_init(&w);
    /* a saturated device moving 8000 kB/s */
    int dev = w_dev(&w, "loop0", "mq-deadline", 256, 1, 9, 4.5, 8000);
    int heavy = w_task(&w, 1, "heavy", P(IOC_BE, 4), 7000.0 * 1024, 95, 4.5); /* 87 % share */
    int light = w_task(&w, 2, "light", P(IOC_BE, 4), 1000.0 * 1024, 97, 4.5); /* 12 %, waits */
    int writer = w_task(&w, 3, "cp", P(IOC_BE, 4), 3000.0 * 1024, 5, 4.5);    /* 37 %, no wait */
    int idle = w_task(&w, 4, "sleepy", P(IOC_BE, 4), 0, 0, NAN);
    for (int t = 0; t < 4; t++)
        w_touch(&w, t, dev);
    verdict_compute(&w.res, &w.v);
    assert_int_equal(w.v.roles[heavy], ROLE_BOTH);
    assert_int_equal(w.v.roles[light], ROLE_SUFFER);
    assert_int_equal(w.v.roles[writer], ROLE_CAUSE);
    assert_int_equal(w.v.roles[idle], ROLE_NONE);
    verdicts_free(&w.v);
    /* the same figures on a device that is not saturated: nobody suffers from anybody */
    w.dr[dev].saturated = 0;
    verdict_compute(&w.res, &w.v);
    for (int t = 0; t < 4; t++)
        assert_int_equal(w.v.roles[t], ROLE_NONE);
    verdicts_free(&w.v);
    /* devices unknown (no permission): no role claimed */
    w.dr[dev].saturated = 1;
    w.td[light].err = -13;
    verdict_compute(&w.res, &w.v);
    assert_int_equal(w.v.roles[light], ROLE_NONE);
    verdicts_free(&w.v);
}

/* io-pressure-not-block: io_uring's completion wait counts as io pressure without block
 * I/O (verdict.h). Named: a process waiting there most of the interval with no block I/O
 * of its own, while PSI io is high; the process, no device, and the evidence. Not named:
 * a reader in D, a waiter that also reads, any of them under low pressure. A waiter found
 * there (sampled) whose taskstats delay counts the wait gets no suffer role. */
static void test_io_not_block(void **state)
{
    (void)state;
    struct world w;
    w_init(&w);
    int dev = w_dev(&w, "loop0", "mq-deadline", 256, 1, 9, 4.5, 8000);
    w.res.psi[PSI_IO] = (struct psi_rates){ .some_valid = true, .some_pct = 98 };
    int uw = w_task(&w, 10, "uringwait", P(IOC_BE, 4), 0, 0, NAN);
    w.tr[uw].uring_wait_pct = 100;
    w.tr[uw].uring_source = DELAY_SRC_BPF;
    w.td[uw].lens = true;                  /* the lens saw it submit nothing */
    w.ts[uw].state = 'S';
    int rd = w_task(&w, 11, "dd", P(IOC_BE, 4), 800.0 * 1024, 97, 5);
    w.tr[rd].uring_wait_pct = 0;
    w.tr[rd].uring_source = DELAY_SRC_BPF;
    w.ts[rd].state = 'D';
    w_touch(&w, rd, dev);
    int both = w_task(&w, 12, "ringreader", P(IOC_BE, 4), 100.0 * 1024, 0, NAN);
    w.tr[both].uring_wait_pct = 90;
    w.tr[both].uring_source = DELAY_SRC_BPF;
    w.ts[both].state = 'S';
    /* without the lens: found asleep there, its taskstats delay counting the wait */
    int sw = w_task(&w, 13, "svc", P(IOC_BE, 4), 0, 100, NAN);
    w.tr[sw].uring_wait_pct = 100;
    w.tr[sw].uring_source = DELAY_SRC_SAMPLED;
    w.tr[sw].io_delay_source = DELAY_SRC_TASKSTATS;
    w.ts[sw].state = 'S';
    w_touch(&w, sw, dev);                  /* it has a file open on the saturated disk */
    verdict_compute(&w.res, &w.v);
    assert_int_equal(count(&w.v, W_IO_NOT_BLOCK, -1, uw), 1);
    assert_int_equal(count(&w.v, W_IO_NOT_BLOCK, -1, rd), 0);
    assert_int_equal(count(&w.v, W_IO_NOT_BLOCK, -1, both), 0);
    /* its taskstats delay is the io_uring wait: not a block wait, so not named either */
    assert_int_equal(count(&w.v, W_IO_NOT_BLOCK, -1, sw), 0);
    assert_int_equal(w.v.roles[sw], ROLE_NONE);
    assert_int_equal(w.v.roles[rd], ROLE_SUFFER);
    for (size_t i = 0; i < w.v.n; i++)
        if (w.v.w[i].code == W_IO_NOT_BLOCK) {
            assert_int_equal(w.v.w[i].evidence, EV_MEASURED);
            assert_non_null(strstr(w.v.w[i].text, "uringwait[10]"));
        }
    verdicts_free(&w.v);
    /* sampled, no delay figure: named, evidence sampled */
    w.tr[sw].delay_valid = false;
    w.tr[sw].io_delay_pct = NAN;
    w.tr[sw].io_delay_source = DELAY_SRC_UNKNOWN;
    verdict_compute(&w.res, &w.v);
    assert_int_equal(count(&w.v, W_IO_NOT_BLOCK, -1, sw), 1);
    for (size_t i = 0; i < w.v.n; i++)
        if (w.v.w[i].code == W_IO_NOT_BLOCK && w.v.w[i].task == sw)
            assert_int_equal(w.v.w[i].evidence, EV_SAMPLED);
    verdicts_free(&w.v);
    /* low pressure: nothing to explain */
    w.res.psi[PSI_IO].some_pct = 5;
    verdict_compute(&w.res, &w.v);
    assert_int_equal(count(&w.v, W_IO_NOT_BLOCK, -1, uw), 0);
    verdicts_free(&w.v);
}

/* io-pressure-not-block, a filesystem with no block device (docs/verdicts.md): a buffered
 * reader of a FUSE or NFS file waits in iowait (D) for the pages the filesystem's
 * readahead fills. Named, with the filesystem's type and mount point: in iowait most of
 * the interval, a file open on such a filesystem, no block I/O of its own (lens: measured;
 * sampled thread states: sampled). Not named: a reader with block bytes of its own, one
 * with no file there, a writer (its dirtied bytes), a short wait, low pressure. The waiter
 * never suffers on a saturated disk it also has a file on. */
static void test_io_not_block_netfs(void **state)
{
    (void)state;
    struct world w;
    w_init(&w);
    int dev = w_dev(&w, "loop0", "none", 128, 1, 9, 4.5, 8000);
    w.res.psi[PSI_IO] = (struct psi_rates){ .some_valid = true, .some_pct = 64 };
    char mnt[] = "/tmp/x", fst[] = "fuse.slowfs", root[] = "/", src[] = "slowfs";
    struct mount_entry nfs = { .dev = makedev(0, 51), .mount = mnt, .fstype = fst, .root = root,
                               .source = src };
    w.snap.netfs = &nfs;
    w.snap.nnetfs = 1;
    /* measured by the lens: no bytes submitted; a file on the saturated disk too */
    int cat = w_task(&w, 1234, "cat", P(IOC_BE, 4), 0, 97, NAN);
    w.tr[cat].io_delay_source = DELAY_SRC_BPF;
    w.td[cat].lens = true;
    w.td[cat].netfs = 1;
    w.ts[cat].state = 'D';
    w_touch(&w, cat, dev);
    /* a synchronous reader of the disk, also holding a file on the FUSE mount */
    int rd = w_task(&w, 11, "dd", P(IOC_BE, 4), 800.0 * 1024, 97, 5);
    w.tr[rd].io_delay_source = DELAY_SRC_TASKSTATS;
    w.td[rd].netfs = 1;
    w.ts[rd].state = 'D';
    w_touch(&w, rd, dev);
    /* without the lens: sampled thread states, nothing read or written */
    int ls = w_task(&w, 12, "ls", P(IOC_BE, 4), 0, 100, NAN);
    w.tr[ls].io_delay_source = DELAY_SRC_SAMPLED;
    w.td[ls].netfs = 1;
    /* in iowait with nothing read, but no file on such a filesystem (a page another
     * task reads) */
    int pw = w_task(&w, 13, "pagewait", P(IOC_BE, 4), 0, 90, NAN);
    w.tr[pw].io_delay_source = DELAY_SRC_TASKSTATS;
    /* a writer: its dirtied bytes count as written, without the lens */
    int wr = w_task(&w, 14, "writer", P(IOC_BE, 4), 0, 90, NAN);
    w.tr[wr].io_delay_source = DELAY_SRC_TASKSTATS;
    w.tr[wr].write_bps = 4096.0 * 1024;
    w.td[wr].netfs = 1;
    /* a short wait */
    int sh = w_task(&w, 15, "short", P(IOC_BE, 4), 0, 30, NAN);
    w.tr[sh].io_delay_source = DELAY_SRC_BPF;
    w.td[sh].lens = true;
    w.td[sh].netfs = 1;
    verdict_compute(&w.res, &w.v);
    assert_int_equal(count(&w.v, W_IO_NOT_BLOCK, -1, cat), 1);
    assert_int_equal(count(&w.v, W_IO_NOT_BLOCK, -1, ls), 1);
    assert_int_equal(count(&w.v, W_IO_NOT_BLOCK, -1, rd), 0);
    assert_int_equal(count(&w.v, W_IO_NOT_BLOCK, -1, pw), 0);
    assert_int_equal(count(&w.v, W_IO_NOT_BLOCK, -1, wr), 0);
    assert_int_equal(count(&w.v, W_IO_NOT_BLOCK, -1, sh), 0);
    for (size_t i = 0; i < w.v.n; i++) {
        const struct warning *x = &w.v.w[i];
        if (x->code != W_IO_NOT_BLOCK)
            continue;
        assert_int_equal(x->dev, -1);
        assert_non_null(strstr(x->text, "on fuse.slowfs at /tmp/x (a filesystem with no block device)"));
        if (x->task == cat) {
            assert_int_equal(x->evidence, EV_MEASURED);
            assert_non_null(strstr(x->text, "io pressure 64 % is not block I/O: cat[1234] waited 97 %"));
        } else {
            assert_int_equal(x->evidence, EV_SAMPLED);
            assert_non_null(strstr(x->text, "ls[12] waits on"));
        }
    }
    /* its wait is not the saturated disk's: no suffer; the disk's reader suffers */
    assert_int_equal(w.v.roles[cat], ROLE_NONE);
    assert_int_equal(w.v.roles[rd], ROLE_SUFFER);
    verdicts_free(&w.v);
    /* low pressure: no warning, and still no suffer role */
    w.res.psi[PSI_IO].some_pct = 5;
    verdict_compute(&w.res, &w.v);
    assert_int_equal(count(&w.v, W_IO_NOT_BLOCK, -1, cat), 0);
    assert_int_equal(w.v.roles[cat], ROLE_NONE);
    verdicts_free(&w.v);
    /* the lens saw it submit to the disk: block I/O of its own, a sufferer there */
    w.res.psi[PSI_IO].some_pct = 64;
    w.td[cat].from_lens = 1;
    task_lens_row(&w.snap, &w.td[cat])[0] = 64.0 * 1024;
    verdict_compute(&w.res, &w.v);
    assert_int_equal(count(&w.v, W_IO_NOT_BLOCK, -1, cat), 0);
    assert_int_equal(w.v.roles[cat], ROLE_SUFFER);
    verdicts_free(&w.v);
    free(w.snap.lens_bps);
    free(w.snap.lens_async);
}

/* With the lens, the cause share is what the process submitted to that device: a process
 * reading 7000 kB/s from two saturated devices, which the lens splits 6000 / 1000, causes
 * on the first only; without the lens both get the whole figure (an upper bound). */
static void test_cause_share_from_the_lens(void **state)
{
    (void)state;
    struct world w;
    w_init(&w);
    int a = w_dev(&w, "loop0", "mq-deadline", 256, 1, 9, 4.5, 8000);
    int b = w_dev(&w, "loop1", "mq-deadline", 256, 1, 9, 4.5, 8000);
    int t = w_task(&w, 1, "split", P(IOC_BE, 4), 7000.0 * 1024, 5, 4.5);
    w_touch(&w, t, a);
    w_touch(&w, t, b);
    w.dr[a].saturated = 0;              /* only loop1 saturated first */
    verdict_compute(&w.res, &w.v);
    assert_int_equal(w.v.roles[t], ROLE_CAUSE);        /* 7000 of 8000: the upper bound */
    verdicts_free(&w.v);
    w.td[t].lens = true;
    w.td[t].from_lens = 3;
    task_lens_row(&w.snap, &w.td[t])[0] = 6000.0 * 1024;
    task_lens_row(&w.snap, &w.td[t])[1] = 1000.0 * 1024;   /* 12 % of loop1 */
    verdict_compute(&w.res, &w.v);
    assert_int_equal(w.v.roles[t], ROLE_NONE);
    verdicts_free(&w.v);
    w.dr[a].saturated = 1;                            /* 75 % of loop0 */
    verdict_compute(&w.res, &w.v);
    assert_int_equal(w.v.roles[t], ROLE_CAUSE);
    verdicts_free(&w.v);
    free(w.snap.lens_bps);
    free(w.snap.lens_async);
}

/* Suffer from the requests' own wait (issue #35): an asynchronous reader (libaio,
 * io_uring) has no iowait, IODLY 0; with the lens its requests' time in flight on a
 * saturated device decides, when others' requests are most of what is in flight. */
static void test_async_wait_suffers(void **state)
{
    (void)state;
    struct world w;
    w_init(&w);
    /* saturated, 17 requests in flight on average */
    int dev = w_dev(&w, "loop0", "none", 256, 1, 17, 8.5, 8000);
    int deep = w_task(&w, 1, "deep", P(IOC_BE, 4), 7500.0 * 1024, 0, NAN);
    int light = w_task(&w, 2, "light", P(IOC_BE, 4), 500.0 * 1024, 0, NAN);
    for (int t = 0; t < 2; t++) {
        w_touch(&w, t, dev);
        w.td[t].lens = w.td[t].lens_wait = true;
        w.td[t].from_lens = 1;
    }
    task_lens_row(&w.snap, &w.td[deep])[0] = 7500.0 * 1024;
    task_lens_row(&w.snap, &w.td[light])[0] = 500.0 * 1024;
    *task_lens_async(&w.snap, &w.td[deep], 0) = (struct task_async){ 16.0, 8.5 };
    *task_lens_async(&w.snap, &w.td[light], 0) = (struct task_async){ 1.0, 8.5 };
    verdict_compute(&w.res, &w.v);
    assert_int_equal(w.v.roles[deep], ROLE_CAUSE);     /* its own queue: 94 % of it */
    assert_int_equal(w.v.roles[light], ROLE_SUFFER);   /* IODLY 0, waits behind the deep one */
    verdicts_free(&w.v);
    /* the device's 4 tags (aqu-sz 4), 16 of the deep reader's requests timed in flight
     * (their wait for a tag too), 3 of the light one's: it is not most of a queue of 4,
     * it waits behind 16 (the larger of aqu-sz and the lens's sum is the device's) */
    w.dr[dev].aqu_sz = 4;
    task_lens_async(&w.snap, &w.td[light], 0)->in_flight = 3.0;
    verdict_compute(&w.res, &w.v);
    assert_int_equal(w.v.roles[light], ROLE_SUFFER);
    /* and the deep one, 16 of the 19 in flight, waits behind its own queue */
    assert_int_equal(w.v.roles[deep], ROLE_CAUSE);
    verdicts_free(&w.v);
    w.dr[dev].aqu_sz = 17;
    /* in flight under a fifth of the time: no suffering */
    task_lens_async(&w.snap, &w.td[light], 0)->in_flight = 0.1;
    verdict_compute(&w.res, &w.v);
    assert_int_equal(w.v.roles[light], ROLE_NONE);
    verdicts_free(&w.v);
    /* none of its requests completed (latency unknown): no claim */
    *task_lens_async(&w.snap, &w.td[light], 0) = (struct task_async){ 1.0, NAN };
    verdict_compute(&w.res, &w.v);
    assert_int_equal(w.v.roles[light], ROLE_NONE);
    verdicts_free(&w.v);
    /* the same wait on a device that is not saturated: nobody suffers */
    *task_lens_async(&w.snap, &w.td[light], 0) = (struct task_async){ 1.0, 8.5 };
    w.dr[dev].saturated = 0;
    verdict_compute(&w.res, &w.v);
    assert_int_equal(w.v.roles[light], ROLE_NONE);
    assert_int_equal(w.v.roles[deep], ROLE_NONE);
    verdicts_free(&w.v);
    free(w.snap.lens_bps);
    free(w.snap.lens_async);
}

/* io pressure that is swap (issue #35): a process whose I/O the lens saw go to the disk
 * swap lives on, waiting on block I/O, is named with that disk; not when its bytes went
 * mostly elsewhere, when it hardly waited, without the lens, or without io pressure. */
static void test_io_pressure_swap(void **state)
{
    (void)state;
    struct world w;
    w_init(&w);
    int sw = w_dev(&w, "sda", "mq-deadline", 64, 1, 2, 0.9, 8000);
    int db = w_dev(&w, "sdb", "mq-deadline", 64, 1, 2, 0.9, 8000);
    w.dev[sw].ds.major = 8;
    w.dev[sw].ds.minor = 0;
    w.dev[db].ds.major = 8;
    w.dev[db].ds.minor = 16;
    w.snap.swaps[0] = (struct swap_area){ 8, 0, false };
    w.snap.nswaps = 1;
    w.res.psi[PSI_IO] = (struct psi_rates){ .some_valid = true, .some_pct = 58 };
    w.res.psi[PSI_MEMORY] = (struct psi_rates){ .some_valid = true, .some_pct = 14 };
    int t = w_task(&w, 201, "touch", P(IOC_BE, 4), 8e6, 64, 2.0);
    int r = w_task(&w, 202, "reader", P(IOC_BE, 4), 8e6, 90, 2.0);
    w_touch(&w, t, sw);
    w_touch(&w, r, db);
    w.td[t].lens = w.td[r].lens = true;
    w.td[t].from_lens = w.td[r].from_lens = 1;
    task_lens_row(&w.snap, &w.td[t])[0] = 8e6;
    task_lens_row(&w.snap, &w.td[r])[0] = 8e6;
    verdict_compute(&w.res, &w.v);
    assert_int_equal(count(&w.v, W_IO_SWAP, sw, t), 1);
    assert_int_equal(count_any(&w.v, W_IO_SWAP, r), 0);
    const char *x = text_of(&w.v, W_IO_SWAP);
    assert_non_null(strstr(x, "io pressure 58 % is swap: touch[201] waited 64 %"));
    assert_non_null(strstr(x, "to sda, where swap lives"));
    assert_non_null(strstr(x, "memory pressure 14 %"));
    verdicts_free(&w.v);
    /* swap on a partition of sdb: the reader's disk is where swap lives */
    w.snap.swaps[0] = (struct swap_area){ 8, 18, false };
    int part = w_dev(&w, "sdb2", "mq-deadline", 64, 1, 0, 0, 0);
    w.dev[part].bd.partition = true;
    snprintf(w.dev[part].bd.disk, sizeof(w.dev[part].bd.disk), "sdb");
    w.dev[part].ds.major = 8;
    w.dev[part].ds.minor = 18;
    verdict_compute(&w.res, &w.v);
    assert_int_equal(count(&w.v, W_IO_SWAP, db, r), 1);
    assert_int_equal(count_any(&w.v, W_IO_SWAP, t), 0);
    verdicts_free(&w.v);
    w.snap.swaps[0] = (struct swap_area){ 8, 0, false };
    /* most of its bytes elsewhere */
    w_touch(&w, t, db);
    task_lens_row(&w.snap, &w.td[t])[1] = 9e6;
    verdict_compute(&w.res, &w.v);
    assert_int_equal(count_any(&w.v, W_IO_SWAP, t), 0);
    verdicts_free(&w.v);
    task_lens_row(&w.snap, &w.td[t])[1] = 0;
    /* hardly waiting; no lens; no io pressure; no swap */
    w.tr[t].io_delay_pct = 5;
    verdict_compute(&w.res, &w.v);
    assert_int_equal(count_any(&w.v, W_IO_SWAP, t), 0);
    verdicts_free(&w.v);
    w.tr[t].io_delay_pct = 64;
    w.td[t].lens = false;
    verdict_compute(&w.res, &w.v);
    assert_int_equal(count_any(&w.v, W_IO_SWAP, t), 0);
    verdicts_free(&w.v);
    w.td[t].lens = true;
    w.res.psi[PSI_IO].some_pct = 5;
    verdict_compute(&w.res, &w.v);
    assert_int_equal(count_any(&w.v, W_IO_SWAP, t), 0);
    verdicts_free(&w.v);
    w.res.psi[PSI_IO].some_pct = 58;
    w.snap.nswaps = 0;
    verdict_compute(&w.res, &w.v);
    assert_int_equal(count_any(&w.v, W_IO_SWAP, t), 0);
    verdicts_free(&w.v);
    free(w.snap.lens_bps);
    free(w.snap.lens_async);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rule_table),
        cmocka_unit_test(test_code_names_are_stable),
        cmocka_unit_test(test_idle_on_none_is_ignored_and_on_bfq_not),
        cmocka_unit_test(test_stacked_verdicts_name_the_path),
        cmocka_unit_test(test_label_dropped_by_a_layer),
        cmocka_unit_test(test_label_dropped_by_a_stripe),
        cmocka_unit_test(test_nice19_on_mq_deadline_level_ignored),
        cmocka_unit_test(test_advice_names_only_schedulers_the_kernel_has),
        cmocka_unit_test(test_full_queue_is_a_lottery),
        cmocka_unit_test(test_unsaturated_device_is_informational),
        cmocka_unit_test(test_buffered_writer_with_label_gets_writeback),
        cmocka_unit_test(test_hidden_queue_when_processes_wait_longer_than_await),
        cmocka_unit_test(test_roles),
        cmocka_unit_test(test_io_not_block),
        cmocka_unit_test(test_io_not_block_netfs),
        cmocka_unit_test(test_async_wait_suffers),
        cmocka_unit_test(test_lens_held_back_and_measured_tag_wait),
        cmocka_unit_test(test_requests_prio_judged),
        cmocka_unit_test(test_cause_share_from_the_lens),
        cmocka_unit_test(test_io_pressure_swap),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
