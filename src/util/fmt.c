/* SPDX-License-Identifier: GPL-2.0-or-later */
/* util/fmt.c: numbers and errors as text (util/fmt.h). */
#include "util/fmt.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "util/num.h"

size_t fmt_fixed(char *buf, size_t n, double v, int prec)
{
    static const double scale[] = { 1, 10, 100, 1000 };
    /* Below 1e15 (2^50) the product keeps halves exact. It is correctly rounded, so it
     * lands on a tie whenever the exact product is at or across one: those are left to
     * printf, which rounds the exact binary value. */
    double t = prec >= 0 && prec <= 3 ? fabs(v) * scale[prec] : (double)NAN;
    if (!(t < 1e15) || n < 24) {
        int w = snprintf(buf, n, "%.*f", prec, v);
        return w < 0 ? 0 : (size_t)w < n ? (size_t)w : n ? n - 1 : 0;
    }
    double fl = floor(t);
    if (t - fl == 0.5) {
        int w = snprintf(buf, n, "%.*f", prec, v);
        return w < 0 ? 0 : (size_t)w;
    }
    unsigned long long x = (unsigned long long)fl + (t - fl > 0.5);
    char digits[24];
    int k = 0;
    do {
        digits[k++] = (char)('0' + x % 10);
        x /= 10;
    } while (x || k <= prec);
    size_t o = 0;
    if (signbit(v))
        buf[o++] = '-';
    while (k > prec)
        buf[o++] = digits[--k];
    if (prec) {
        buf[o++] = '.';
        while (k > 0)
            buf[o++] = digits[--k];
    }
    buf[o] = '\0';
    return o;
}

size_t fmt_int(char buf[24], long long v)
{
    char tmp[24];
    size_t k = sizeof(tmp);
    unsigned long long u = v < 0 ? 0ull - (unsigned long long)v : (unsigned long long)v;
    do {
        tmp[--k] = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    if (v < 0)
        tmp[--k] = '-';
    size_t n = sizeof(tmp) - k;
    memcpy(buf, tmp + k, n);
    buf[n] = '\0';
    return n;
}

void fmt_rate(char *buf, size_t n, double bps)
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
    if (n < 26) {                    /* the fast path below wants room for any number */
        if (u == 0)
            snprintf(buf, n, "%.0fB", bps);
        else
            snprintf(buf, n, "%.*f%c", bps < 10 ? 2 : bps < 100 ? 1 : 0, bps, units[u]);
        return;
    }
    size_t o = fmt_fixed(buf, n - 1, bps, u == 0 ? 0 : bps < 10 ? 2 : bps < 100 ? 1 : 0);
    buf[o++] = units[u];
    buf[o] = '\0';
}

void fmt_signed_rate(char *buf, size_t n, double bps)
{
    if (isnan(bps) || bps >= 0) {
        fmt_rate(buf, n, bps);
        return;
    }
    buf[0] = '-';
    fmt_rate(buf + 1, n - 1, -bps);
}

const char *source_err_text(int err)
{
    switch (-err) {
    case 0: return "ok";
    case EACCES:
    case EPERM: return "permission denied";
    case ENOENT:
    case ESRCH: return "exited";
    case EINVAL: return "malformed";
    default: return strerror(-err);
    }
}

void fmt_size(char *buf, size_t n, double v)
{
    static const char unit[] = "BKMGTPE";
    unsigned u = 0;
    while (v >= 1024.0 && u < sizeof(unit) - 2) {
        v /= 1024.0;
        u++;
    }
    if (u == 0)
        snprintf(buf, n, "%.0fB", v);
    else
        snprintf(buf, n, "%.*f%c", v < 10 ? 1 : 0, v, unit[u]);
}

void fmt_span(char *buf, size_t n, double s)
{
    long v = num_lround(s);
    if (v < 120)
        snprintf(buf, n, "%lds", v);
    else if (v < 7200)
        snprintf(buf, n, "%ldm%02lds", v / 60, v % 60);
    else
        snprintf(buf, n, "%ldh%02ldm", v / 3600, v / 60 % 60);
}
