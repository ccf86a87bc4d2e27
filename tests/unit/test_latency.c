/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Unit tests of the latency view's pure parts (src/tui/latency.c): bucket labels, the
 * shading, the rows a heat map takes, and the per-disk ring fed with hand-built frames of
 * dev_rates.lat: columns in order, priorities kept sorted and bounded, wrap-around, a
 * scheduler switch found where the frames changed it, and histograms merged over a
 * window for the before/after of a switch. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "delta.h"
#include "source/lens.h"
#include "tui/latency.h"
#include "util.h"

#define BE4   ((2u << 13) | 4)
#define BE0   ((2u << 13) | 0)
#define IDLE  ((3u << 13) | 0)

static void test_bucket_labels(void **state)
{
    (void)state;
    static const struct { unsigned k; const char *label; } want[] = {
        { 0, "<1us" }, { 1, "1us" }, { 2, "2us" }, { 10, "512us" }, { 11, "1.0ms" }, { 12, "2.0ms" },
        { 13, "4.1ms" }, { 15, "16ms" }, { 20, "524ms" }, { 21, "1.0s" }, { 22, "2.1s" }, { 26, "34s" },
        { 27, "1.1m" }, { 31, "18m" },
    };
    for (size_t i = 0; i < ARRAY_SIZE(want); i++) {
        char buf[16];
        lat_bucket_label(buf, sizeof(buf), want[i].k);
        assert_string_equal(buf, want[i].label);
    }
    for (unsigned k = 0; k < LENS_HIST; k++) {
        char buf[16];
        lat_bucket_label(buf, sizeof(buf), k);
        assert_true(strlen(buf) <= 6);
    }
    assert_true(lat_bucket_us(0) == 0);
    assert_true(lat_bucket_us(1) == 1);
    assert_true(lat_bucket_us(11) == 1024);
}

static void test_shading(void **state)
{
    (void)state;
    unsigned na = lat_shade_levels(false), nu = lat_shade_levels(true);
    assert_int_equal(na, 10);
    assert_int_equal(nu, 5);
    /* Blank exactly when nothing: one request in a busy map is still visible. */
    assert_int_equal(lat_shade_level(0, 1000, na), 0);
    assert_int_equal(lat_shade_level(1, 1000, na), 1);
    assert_int_equal(lat_shade_level(1000, 1000, na), na - 1);
    assert_int_equal(lat_shade_level(1, 1, nu), nu - 1);
    /* Monotonic in the count. */
    unsigned prev = 0;
    for (uint64_t c = 1; c <= 1000; c++) {
        unsigned lv = lat_shade_level(c, 1000, na);
        assert_true(lv >= prev && lv >= 1 && lv <= na - 1);
        prev = lv;
    }
    assert_string_equal(lat_shade_glyph(0, false), " ");
    assert_string_equal(lat_shade_glyph(na - 1, false), "@");
    assert_string_equal(lat_shade_glyph(1, true), "\u2591");
    assert_string_equal(lat_shade_glyph(nu - 1, true), "\u2588");
    assert_string_equal(lat_shade_glyph(99, true), "\u2588");       /* clamped */
    /* Every ASCII glyph is ASCII. */
    for (unsigned lv = 0; lv < na; lv++)
        assert_true((unsigned char)lat_shade_glyph(lv, false)[0] < 128);
}

static void test_axis_plan(void **state)
{
    (void)state;
    /* Fits: one bucket a row and an empty one either side. */
    struct lat_axis a = lat_axis_plan(11, 13, 16);
    assert_int_equal(a.f, 1);
    assert_int_equal(a.lo, 10);
    assert_int_equal(a.nrows, 5);
    /* Exactly fits: no padding. */
    a = lat_axis_plan(4, 19, 16);
    assert_int_equal(a.f, 1);
    assert_int_equal(a.lo, 4);
    assert_int_equal(a.nrows, 16);
    /* At the ends of the bucket range: no padding past them. */
    a = lat_axis_plan(0, 0, 8);
    assert_int_equal(a.lo, 0);
    assert_int_equal(a.nrows, 2);
    a = lat_axis_plan(LENS_HIST - 1, LENS_HIST - 1, 8);
    assert_int_equal(a.lo, LENS_HIST - 2);
    assert_int_equal(a.nrows, 2);
    /* Too many: two buckets a row, every bucket still on a row. */
    a = lat_axis_plan(0, 31, 16);
    assert_int_equal(a.f, 2);
    assert_int_equal(a.nrows, 16);
    a = lat_axis_plan(3, 25, 10);
    assert_int_equal(a.f, 3);
    assert_int_equal(a.nrows, 8);
    assert_true(a.lo + a.nrows * a.f > 25);
    a = lat_axis_plan(3, 25, 0);
    assert_int_equal(a.nrows, 0);
}

static void test_fmt_ms(void **state)
{
    (void)state;
    char b[16];
    lat_fmt_ms(b, sizeof(b), (double)NAN);
    assert_string_equal(b, "-");
    lat_fmt_ms(b, sizeof(b), 0.0123);
    assert_string_equal(b, "0.012");
    lat_fmt_ms(b, sizeof(b), 4.1);
    assert_string_equal(b, "4.10");
    lat_fmt_ms(b, sizeof(b), 812.4);
    assert_string_equal(b, "812");
    lat_fmt_ms(b, sizeof(b), 2100);
    assert_string_equal(b, "2100");
}

/* A frame of one disk: n priority rows, each with count requests in bucket k. */
struct frame_dev {
    struct dev_sample s;
    struct dev_rates d;
    struct prio_latency lat[LAT_PRIOS + 4];
};

static void frame_set(struct frame_dev *f, const char *disk, const char *sched)
{
    memset(f, 0, sizeof(*f));
    str_copy(f->s.ds.name, disk, sizeof(f->s.ds.name));
    str_copy(f->s.bd.disk, disk, sizeof(f->s.bd.disk));
    str_copy(f->s.bd.scheduler, sched, sizeof(f->s.bd.scheduler));
    f->d.dev = &f->s;
    f->d.valid = true;
    f->d.lat = f->lat;
}

static void frame_add(struct frame_dev *f, unsigned prio, unsigned k, uint64_t count)
{
    struct prio_latency *p = &f->lat[f->d.nlat++];
    lens_prio_name(prio, p->name, sizeof(p->name));
    p->prio = prio;
    p->st[LENS_ST_TOTAL].hist[k] = count;
    p->st[LENS_ST_TOTAL].count = (double)count;
}

static void test_ring(void **state)
{
    (void)state;
    struct lat_set set = { 0 };
    struct frame_dev f;

    /* No priority row yet: no ring (a disk the lens never saw costs nothing). */
    frame_set(&f, "sdb", "none");
    lat_push(&set, &f.d, 1.0, 1.0, true);
    assert_int_equal(set.n, 0);
    assert_null(lat_find(&set, "sdb"));

    /* idle first, be/4 later: kept sorted by priority value (be before idle). */
    frame_set(&f, "sdb", "none");
    frame_add(&f, IDLE, 20, 5);
    lat_push(&set, &f.d, 2.0, 1.0, true);
    frame_set(&f, "sdb", "none");
    frame_add(&f, BE4, 12, 300);
    frame_add(&f, IDLE, 21, 2);
    lat_push(&set, &f.d, 3.0, 1.0, true);
    const struct lat_ring *r = lat_find(&set, "sdb");
    assert_non_null(r);
    assert_int_equal(r->n, 2);
    assert_int_equal(r->nprio, 2);
    assert_string_equal(r->prio[0].name, "be/4");
    assert_string_equal(r->prio[1].name, "idle");
    assert_int_equal(lat_prio_index(r, IDLE), 1);
    assert_int_equal(lat_prio_index(r, BE0), -1);
    /* be/4 appeared in the second column: zero in the first. */
    assert_int_equal(r->prio[0].cnt[lat_col(r, 0)][12], 0);
    assert_int_equal(r->prio[0].cnt[lat_col(r, 1)][12], 300);
    assert_int_equal(r->prio[1].cnt[lat_col(r, 0)][20], 5);
    assert_int_equal(r->prio[1].cnt[lat_col(r, 1)][21], 2);
    unsigned lo = 0, hi = 0;
    assert_true(lat_range(r, LAT_COLS, &lo, &hi));
    assert_int_equal(lo, 12);
    assert_int_equal(hi, 21);
    /* Only the newest column: idle's 5 at bucket 20 is out of it. */
    assert_true(lat_range(r, 1, &lo, &hi));
    assert_int_equal(lo, 12);
    assert_int_equal(hi, 21);

    /* A frame where the lens did not cover the disk: a column, unknown, empty. */
    frame_set(&f, "sdb", "none");
    frame_add(&f, BE4, 12, 7);
    lat_push(&set, &f.d, 4.0, 1.0, false);
    r = lat_find(&set, "sdb");
    assert_int_equal(r->n, 3);
    assert_false(r->known[lat_col(r, 2)]);
    assert_int_equal(r->prio[0].cnt[lat_col(r, 2)][12], 0);

    /* Then a quiet frame (no rows): still a column, so time runs on. */
    frame_set(&f, "sdb", "none");
    lat_push(&set, &f.d, 5.0, 1.0, true);
    assert_int_equal(r->n, 4);
    assert_false(lat_range(r, 2, &lo, &hi));

    /* More priorities than kept: bounded, counted. */
    frame_set(&f, "sdb", "none");
    for (unsigned lv = 0; lv < 8; lv++)
        frame_add(&f, (1u << 13) | lv, 15, 1);     /* rt/0..7 */
    frame_add(&f, BE0, 15, 1);
    lat_push(&set, &f.d, 6.0, 1.0, true);
    r = lat_find(&set, "sdb");
    assert_int_equal(r->nprio, LAT_PRIOS);
    assert_true(r->dropped > 0);
    for (unsigned p = 1; p < r->nprio; p++)
        assert_true(r->prio[p - 1].prio < r->prio[p].prio);

    /* Wrap-around: after LAT_COLS more frames the ring holds LAT_COLS, the newest last. */
    for (unsigned i = 0; i < LAT_COLS + 10; i++) {
        frame_set(&f, "sdb", "none");
        frame_add(&f, BE4, 12, i + 1);
        lat_push(&set, &f.d, 10.0 + i, 1.0, true);
    }
    r = lat_find(&set, "sdb");
    assert_int_equal(r->n, LAT_COLS);
    int p4 = lat_prio_index(r, BE4);
    assert_true(p4 >= 0);
    assert_int_equal(r->prio[p4].cnt[lat_col(r, LAT_COLS - 1)][12], LAT_COLS + 10);
    assert_int_equal(r->prio[p4].cnt[lat_col(r, 0)][12], 11);
    assert_true(r->t[lat_col(r, LAT_COLS - 1)] == 10.0 + LAT_COLS + 9);

    /* A second disk has its own ring. */
    frame_set(&f, "sdc", "bfq");
    frame_add(&f, BE4, 3, 1);
    lat_push(&set, &f.d, 1.0, 1.0, true);
    assert_int_equal(set.n, 2);
    assert_int_equal(lat_find(&set, "sdc")->n, 1);

    lat_clear(&set);
    assert_int_equal(set.n, 0);
    assert_null(lat_find(&set, "sdb"));
}

/* A switch from mq-deadline to none at t = 30.5: idle waits ~1.5 s before (bucket 21), ~6 ms
 * after (bucket 13); be/4 ~3 ms throughout (bucket 12). The switch column is the first
 * frame showing none; the merged windows give the percentiles the device view shows. */
static void test_switch_before_after(void **state)
{
    (void)state;
    struct lat_set set = { 0 };
    struct frame_dev f;
    for (unsigned i = 1; i <= 60; i++) {
        bool after = i > 30;
        frame_set(&f, "sdb", after ? "none" : "mq-deadline");
        frame_add(&f, BE4, 12, 400);
        frame_add(&f, IDLE, after ? 13 : 21, 10);
        lat_push(&set, &f.d, (double)i, 1.0, true);
    }
    const struct lat_ring *r = lat_find(&set, "sdb");
    const char *from = NULL, *to = NULL;
    int sw = lat_switch_col(r, LAT_COLS, &from, &to);
    assert_int_equal(sw, 30);              /* column 30 (0-based) ended at t = 31 */
    assert_string_equal(from, "mq-deadline");
    assert_string_equal(to, "none");
    assert_true(r->t[lat_col(r, (unsigned)sw)] == 31.0);
    /* Out of the newest 20 columns: not found there. */
    assert_int_equal(lat_switch_col(r, 20, &from, &to), -1);
    /* The column right after the boundary still sees it. */
    assert_int_equal(lat_switch_col(r, 30, &from, &to), 30);

    uint64_t h[LENS_HIST];
    int idle = lat_prio_index(r, IDLE), be = lat_prio_index(r, BE4);
    /* Before: the 30 s up to the write at 30.2 (columns ending at 1..30, begun >= 0.2). */
    assert_int_equal(lat_merge(r, (unsigned)idle, 30.2 - 30.0, 30.2, h), 29);
    assert_int_equal(h[21], 290);
    double b50 = lens_hist_quantile(h, LENS_HIST, 0.5);
    assert_true(b50 >= 1048.576 && b50 <= 2097.152);        /* bucket 21: 1.05 .. 2.1 s */
    /* After: intervals that began after the switch took at 30.5. */
    assert_int_equal(lat_merge(r, (unsigned)idle, 30.5, 30.5 + 60, h), 29);
    assert_int_equal(h[13], 290);
    double a50 = lens_hist_quantile(h, LENS_HIST, 0.5);
    assert_true(a50 >= 4.096 && a50 <= 8.192);
    assert_true(b50 > 50 * a50);
    /* be/4 alike before and after. */
    lat_merge(r, (unsigned)be, 0.2, 30.2, h);
    double bb = lens_hist_quantile(h, LENS_HIST, 0.99);
    lat_merge(r, (unsigned)be, 30.5, 90.5, h);
    assert_true(fabs(lens_hist_quantile(h, LENS_HIST, 0.99) - bb) < 1e-9);
    /* A slot that does not exist, a window with nothing: empty, quantile unknown. */
    assert_int_equal(lat_merge(r, 99, 0, 100, h), 0);
    assert_int_equal(lat_merge(r, (unsigned)be, 200, 300, h), 0);
    assert_true(isnan(lens_hist_quantile(h, LENS_HIST, 0.5)));
    lat_clear(&set);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bucket_labels),
        cmocka_unit_test(test_shading),
        cmocka_unit_test(test_axis_plan),
        cmocka_unit_test(test_fmt_ms),
        cmocka_unit_test(test_ring),
        cmocka_unit_test(test_switch_before_after),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
