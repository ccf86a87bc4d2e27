/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Tests for the number formatting of util/fmt.c: fmt_fixed must give printf's "%.*f"
 * text exactly (the batch output swapped one for the other), fmt_int its "%lld", and
 * fmt_rate the iotop-style rates it gave with printf.
 *
 * The reference is snprintf itself, over values chosen to hurt: ties at every precision
 * (0.125, 2.5), values a hair either side of a tie, negative zero and tiny negatives
 * ("-0.0"), powers of ten, the edges of the fast path (1e15) and beyond, NaN and
 * infinities, and a few million pseudo-random values over twenty orders of magnitude.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "util.h"
#include "util/fmt.h"
#include "out/output.h"

static void check_fixed(double v, int prec)
{
    char want[512], got[512];
    snprintf(want, sizeof(want), "%.*f", prec, v);
    size_t n = fmt_fixed(got, sizeof(got), v, prec);
    if (strcmp(want, got) != 0 || n != strlen(want))
        fail_msg("fmt_fixed(%.17g, %d) = \"%s\" (%zu), printf says \"%s\"", v, prec, got, n, want);
}

static void check_all_precisions(double v)
{
    for (int p = 0; p <= 3; p++) {
        check_fixed(v, p);
        check_fixed(-v, p);
    }
}

static void test_fixed_edges(void **state)
{
    (void)state;
    static const double vals[] = {
        0, 0.5, 1.5, 2.5, 0.25, 0.75, 0.125, 0.375, 0.0625, 1.0005, 2.675, 0.35, 0.45, 1.45,
        9.995, 99.95, 999.5, 0.05, 0.005, 0.0005, 0.00049999999999999999, 1e-300, 5e-324,
        1, 10, 100, 1000, 1e6, 1e9, 1e12, 123456789.987654321, 999999999999999.0,
        1e15 - 0.5, 1e15, 1e15 + 1, 9007199254740993.0, 1e18, 1.8e19, 1e20, 1e300, DBL_MAX,
    };
    for (size_t i = 0; i < sizeof(vals) / sizeof(vals[0]); i++) {
        check_all_precisions(vals[i]);
        check_all_precisions(nextafter(vals[i], 0));
        check_all_precisions(nextafter(vals[i], INFINITY));
    }
    check_all_precisions(-0.0);
    check_all_precisions(NAN);
    check_all_precisions(INFINITY);
    for (int p = 0; p <= 3; p++)             /* every tie of the form k + m/10^p */
        for (int k = 0; k < 20000; k++) {
            double v = (k + 0.5) / pow(10, p);
            check_fixed(v, p);
            check_fixed(-v, p);
        }
}

static void test_fixed_random(void **state)
{
    (void)state;
    uint64_t x = 0x9e3779b97f4a7c15ull;
    for (int i = 0; i < 2000000; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;                 /* xorshift64 */
        double mant = (double)(x >> 11) / 9007199254740992.0;      /* [0, 1) */
        int e = (int)(x % 21) - 6;                                  /* 1e-6 .. 1e14 */
        double v = mant * pow(10, e);
        check_fixed(i & 1 ? -v : v, (int)((x >> 5) & 3));
    }
}

/* fmt_rate: what the printf version gave, for every unit and precision step. */
static void ref_rate(char *buf, size_t n, double bps)
{
    static const char units[] = "BKMGT";
    if (isnan(bps)) {
        snprintf(buf, n, "-");
        return;
    }
    int u = 0;
    while (bps >= 1000.0 && u < 4) {
        bps /= 1024.0;
        u++;
    }
    if (u == 0)
        snprintf(buf, n, "%.0fB", bps);
    else
        snprintf(buf, n, "%.*f%c", bps < 10 ? 2 : bps < 100 ? 1 : 0, bps, units[u]);
}

static void test_rate(void **state)
{
    (void)state;
    char want[64], got[64];
    static const double vals[] = { 0, 0.4, 0.5, 1.5, 999, 999.5, 1000, 1023, 1024, 10239, 10240,
                                   102399, 102400, 1048576, 5.5 * 1048576, 1e12, 1e15, 1e18,
                                   1e21, NAN, -1 };
    for (size_t i = 0; i < sizeof(vals) / sizeof(vals[0]); i++) {
        ref_rate(want, sizeof(want), vals[i]);
        fmt_rate(got, sizeof(got), vals[i]);
        assert_string_equal(got, want);
    }
    uint64_t x = 12345;
    for (int i = 0; i < 200000; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        double v = (double)(x >> 11) / 9007199254740992.0 * pow(10, (double)(x % 16));
        ref_rate(want, sizeof(want), v);
        fmt_rate(got, sizeof(got), v);
        if (strcmp(got, want) != 0)
            fail_msg("fmt_rate(%.17g) = \"%s\", printf says \"%s\"", v, got, want);
    }
    /* A short buffer takes printf's path and truncates like it. */
    char small[4];
    fmt_rate(small, sizeof(small), 12345678.0);
    ref_rate(want, sizeof(small), 12345678.0);
    assert_string_equal(small, want);
}

/* The search every id-sorted array shares (util.h): the first not below id, at any
 * offset in an element, with duplicates, and at the ends. */
static void test_lower_bound_id(void **state)
{
    (void)state;
    struct row { double pad; pid_t id; char tail[3]; } v[] = {
        { 0, 2, "" }, { 0, 5, "" }, { 0, 5, "" }, { 0, 9, "" }, { 0, 40000, "" },
    };
    size_t n = sizeof(v) / sizeof(v[0]);
    assert_int_equal(LOWER_BOUND_ID(v, n, id, 1), 0);
    assert_int_equal(LOWER_BOUND_ID(v, n, id, 2), 0);
    assert_int_equal(LOWER_BOUND_ID(v, n, id, 3), 1);
    assert_int_equal(LOWER_BOUND_ID(v, n, id, 5), 1);
    assert_int_equal(LOWER_BOUND_ID(v, n, id, 6), 3);
    assert_int_equal(LOWER_BOUND_ID(v, n, id, 40000), 4);
    assert_int_equal(LOWER_BOUND_ID(v, n, id, 40001), n);
    assert_int_equal(LOWER_BOUND_ID(v, 0, id, 5), 0);
    /* against a linear scan over every id in range */
    for (pid_t id = 0; id < 12; id++) {
        size_t want = 0;
        while (want < n && v[want].id < id)
            want++;
        assert_int_equal(lower_bound_id(v, n, sizeof(v[0]), offsetof(struct row, id), id), want);
    }
}

static void test_int(void **state)
{
    (void)state;
    static const long long vals[] = { 0, 1, -1, 9, 10, -10, 99, 100, 123456789, -987654321,
                                      INT_MAX, INT_MIN, LLONG_MAX, LLONG_MIN, LLONG_MIN + 1 };
    char want[32], got[24];
    for (size_t i = 0; i < sizeof(vals) / sizeof(vals[0]); i++) {
        snprintf(want, sizeof(want), "%lld", vals[i]);
        size_t n = fmt_int(got, vals[i]);
        assert_string_equal(got, want);
        assert_int_equal(n, strlen(want));
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fixed_edges),
        cmocka_unit_test(test_lower_bound_id),
        cmocka_unit_test(test_fixed_random),
        cmocka_unit_test(test_rate),
        cmocka_unit_test(test_int),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
