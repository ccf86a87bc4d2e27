/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Tests for util/num.h: each function against libm's own (this test links libm), over the
 * values iotriage passes them and the edges where a hand-written version goes wrong:
 * halves, the largest double below one half, negative numbers, NaN, powers of two. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "util/num.h"

static void test_min_max_like_libm(void **state)
{
    (void)state;
    const double v[] = { -1e300, -3.5, -0.0, 0.0, 1.0, 2.5, 100.0, 1e300, INFINITY, -INFINITY, NAN };
    for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++)
        for (size_t j = 0; j < sizeof(v) / sizeof(v[0]); j++) {
            double a = v[i], b = v[j];
            double lo = num_min(a, b), hi = num_max(a, b);
            if (isnan(fmin(a, b)))
                assert_true(isnan(lo));
            else
                assert_true(lo == fmin(a, b));
            if (isnan(fmax(a, b)))
                assert_true(isnan(hi));
            else
                assert_true(hi == fmax(a, b));
        }
    /* The way delta.c caps a percentage whose interval was unknown. */
    assert_true(num_min(100.0, NAN) == 100.0);
    assert_true(num_min(NAN, 42.0) == 42.0);
}

static void test_lround_like_libm(void **state)
{
    (void)state;
    const double v[] = { 0.0, 0.49999999999999994, 0.5, 1.5, 2.5, -0.5, -1.5, -2.4999, 2.5000001,
                         7.999999, 1e15 + 0.5, -1e15 - 0.5, 4503599627370495.5, 9.0e18 };
    for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
        if (num_llround(v[i]) != llround(v[i]))
            fail_msg("num_llround(%.17g) = %lld, llround %lld", v[i], num_llround(v[i]),
                     llround(v[i]));
        assert_int_equal(num_lround(v[i]), lround(v[i]));
    }
    srand48(19);
    for (int i = 0; i < 200000; i++) {
        double x = (drand48() - 0.5) * 2e6;
        if (num_lround(x) != lround(x))
            fail_msg("num_lround(%.17g) = %ld, lround %ld", x, num_lround(x), lround(x));
    }
}

static void test_pow2_is_ldexp(void **state)
{
    (void)state;
    for (int k = -1022; k <= 1023; k++)
        if (num_pow2(k) != ldexp(1.0, k))
            fail_msg("num_pow2(%d) = %g, ldexp %g", k, num_pow2(k), ldexp(1.0, k));
}

static void test_sqrt_is_sqrt(void **state)
{
    (void)state;
    srand48(7);
    for (int i = 0; i < 100000; i++) {
        double x = drand48() * 1e12;
        assert_true(num_sqrt(x) == sqrt(x));
    }
    assert_true(num_sqrt(0.0) == 0.0);
    assert_true(isnan(num_sqrt(-1.0)));
}

static void test_log2_close_to_libm(void **state)
{
    (void)state;
    for (uint64_t n = 1; n < 100000; n++) {
        double want = log2((double)n), got = num_log2((double)n);
        if (fabs(got - want) > 1e-6)
            fail_msg("num_log2(%llu) = %.9f, log2 %.9f", (unsigned long long)n, got, want);
    }
    for (int k = 0; k < 64; k++)
        assert_true(num_log2(ldexp(1.0, k)) == (double)k);
    double big = 1.8e19;
    assert_true(fabs(num_log2(big) - log2(big)) < 1e-6);
}

/* ln and exp for the trial's ratios: close to libm's (2^-23 relative for ln's ratio part,
 * 2^-26 for exp), and their edges: 0, infinity, NaN, a negative number, a subnormal
 * result. */
static void test_ln_exp_close_to_libm(void **state)
{
    (void)state;
    const double x[] = { 1e-300, 1e-9, 0.01, 0.16, 0.5, 0.999, 1.0, 1.001, 2.0, 2.718281828, 4.0,
                         12.5, 100.0, 1e9, 1e300 };
    for (size_t i = 0; i < sizeof(x) / sizeof(x[0]); i++) {
        double want = log(x[i]), got = num_ln(x[i]);
        assert_true(fabs(got - want) <= 1e-7 * (fabs(want) > 1 ? fabs(want) : 1));
    }
    assert_true(isinf(num_ln(0.0)) && num_ln(0.0) < 0);
    assert_true(isinf(num_ln(INFINITY)) && num_ln(INFINITY) > 0);
    assert_true(isnan(num_ln(-1.0)));
    assert_true(isnan(num_ln(NAN)));
    const double y[] = { -744.0, -700.0, -20.0, -1.83, -0.5, -1e-9, 0.0, 1e-9, 0.47, 0.69314718055994530942,
                         1.0, 2.5, 20.0, 700.0, 709.0 };
    for (size_t i = 0; i < sizeof(y) / sizeof(y[0]); i++) {
        double want = exp(y[i]), got = num_exp(y[i]);
        /* a subnormal result keeps fewer bits: its own bound */
        double tol = want < 2.3e-308 ? 4e-324 + want * 1e-6 : want * 2e-8;
        assert_true(fabs(got - want) <= tol);
    }
    assert_true(num_exp(0.0) == 1.0);
    assert_true(isinf(num_exp(710.0)) && num_exp(-746.0) == 0.0);
    assert_true(isnan(num_exp(NAN)));
    /* the pair undoes itself: a factor of 2.5 and back */
    assert_true(fabs(num_exp(num_ln(2.5)) - 2.5) < 1e-6);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_min_max_like_libm),
        cmocka_unit_test(test_lround_like_libm),
        cmocka_unit_test(test_pow2_is_ldexp),
        cmocka_unit_test(test_sqrt_is_sqrt),
        cmocka_unit_test(test_log2_close_to_libm),
        cmocka_unit_test(test_ln_exp_close_to_libm),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
