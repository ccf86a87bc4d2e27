/* SPDX-License-Identifier: GPL-2.0-or-later */
/* util/num.h: the few functions of libm iotriage needs, so that it does not load libm.
 *
 * Loading libm.so.6 costs every run 0.2-0.4 MB of resident memory before a line of it
 * runs (its load resolves its own indirect functions, touching page after page), for
 * seven functions: fmin, fmax, sqrt, lround, llround, ldexp and log. These are their
 * exact equivalents for what iotriage passes them (finite numbers, NaN for unknown), and
 * log2 for the one ratio of logarithms; ln and exp, close approximations, for the trial's
 * noise (ratios, a few percent its resolution). The link keeps `-lm` behind --as-needed: what
 * still calls libm (tests/unit/test_num.c, which checks these against it) links it.
 * Pure and header-only. */
#ifndef IOTRIAGE_UTIL_NUM_H
#define IOTRIAGE_UTIL_NUM_H

#include <math.h>
#include <stdint.h>

/* fmin and fmax: a NaN argument yields the other one. */
static inline double num_min(double a, double b)
{
    if (isnan(a))
        return b;
    return b < a ? b : a;
}

static inline double num_max(double a, double b)
{
    if (isnan(a))
        return b;
    return b > a ? b : a;
}

/* lround: halves away from zero. x - trunc(x) is exact in binary floating point, so the
 * comparison with one half is too (x + 0.5 is not: 0.49999999999999994 + 0.5 == 1.0).
 * |x| must fit a long long, as for lround itself. */
static inline long long num_llround(double x)
{
    long long t = (long long)x;
    double frac = x - (double)t;
    if (frac >= 0.5)
        t++;
    else if (frac <= -0.5)
        t--;
    return t;
}

static inline long num_lround(double x)
{
    return (long)num_llround(x);
}

/* ldexp(1.0, k): 2^k, exactly, for k in [-1022, 1023]. */
static inline double num_pow2(int k)
{
    union { uint64_t u; double d; } v = { .u = (uint64_t)(k + 1023) << 52 };
    return v.d;
}

/* sqrt: the processor's instruction (sqrtsd on x86-64) where the compiler may use it
 * without setting errno, which is what -fno-math-errno in the build tells it. */
static inline double num_sqrt(double x)
{
    return __builtin_sqrt(x);
}

/* log2(x) for x >= 1, to within 2^-24: the exponent, then the mantissa's bits one at a
 * time by squaring (m in [1, 2): m^2 >= 2 sets the next bit and halves it). */
static inline double num_log2(double x)
{
    union { double d; uint64_t u; } v = { .d = x };
    int e = (int)((v.u >> 52) & 0x7ff) - 1023;
    v.u = (v.u & ((UINT64_C(1) << 52) - 1)) | (UINT64_C(1023) << 52);
    double m = v.d, frac = 0, bit = 0.5;
    for (int i = 0; i < 24; i++, bit /= 2) {
        m *= m;
        if (m >= 2) {
            frac += bit;
            m /= 2;
        }
    }
    return e + frac;
}

/* ln(x), to within 2^-24 relative of ln 2 (num_log2 on x or 1/x): -inf at 0, NaN below
 * it or for NaN. For the trial's ratios (act/trial_calc.c), which need no more. */
static inline double num_ln(double x)
{
    const double ln2 = 0.69314718055994530942;
    if (!(x >= 0))
        return (double)NAN;
    if (x == 0)
        return -(double)INFINITY;
    if (x > 1.7976931348623157e308)
        return (double)INFINITY;
    return x >= 1 ? num_log2(x) * ln2 : -num_log2(1 / x) * ln2;
}

/* e^y to within about 2^-28 relative: 2^k for the whole part of y / ln 2 (num_pow2), and
 * 2^f for its fraction from f's bits, each a square root of the one before (2^(1/2),
 * 2^(1/4), ...). 0 and inf beyond a double's range, NaN for NaN. */
static inline double num_exp(double y)
{
    const double ln2 = 0.69314718055994530942;
    if (y != y)
        return y;
    if (y > 709.8)
        return (double)INFINITY;
    if (y < -745.2)
        return 0;
    double t = y / ln2;
    long long k = (long long)t;
    if ((double)k > t)
        k--;
    double f = t - (double)k, r = 1, s = 2;
    for (int i = 0; i < 30; i++) {
        s = num_sqrt(s);
        f *= 2;
        if (f >= 1) {
            r *= s;
            f -= 1;
        }
    }
    /* 2^k in two steps below 2^-1022 (a subnormal result) */
    if (k < -1022)
        return r * num_pow2(-1022) * num_pow2((int)k + 1022);
    return r * num_pow2((int)k);
}

#endif
