/* out/common.c: what every output decides the same way. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "out/output.h"
#include "util.h"

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

void fmt_task_devs(char *buf, size_t n, const struct result *r, size_t ti, const char *unknown)
{
    const struct task_devs *td = r->cur->tdevs ? &r->cur->tdevs[ti] : NULL;
    if (n == 0)
        return;
    buf[0] = '\0';
    if (!td || !td->known || td->err) {
        snprintf(buf, n, "%s", unknown);
        return;
    }
    size_t o = 0;
    for (unsigned k = 0; k < td->n && o + 1 < n; k++) {
        int w = snprintf(buf + o, n - o, "%s%s", k ? "," : "", r->devs[td->idx[k]].dev->ds.name);
        if (w < 0 || (size_t)w >= n - o) {
            buf[o] = '\0';
            break;
        }
        o += (size_t)w;
    }
}

void warn_index_build(struct warn_index *ix, const struct verdicts *v, size_t ntasks)
{
    ix->first = xcalloc(ntasks + 2, sizeof(size_t));
    ix->order = xcalloc(v->n ? v->n : 1, sizeof(size_t));
    /* counting sort by task; device findings (task -1) are not indexed */
    for (size_t i = 0; i < v->n; i++)
        if (v->w[i].task >= 0)
            ix->first[(size_t)v->w[i].task + 2]++;
    for (size_t t = 2; t < ntasks + 2; t++)
        ix->first[t] += ix->first[t - 1];
    for (size_t i = 0; i < v->n; i++)
        if (v->w[i].task >= 0)
            ix->order[ix->first[(size_t)v->w[i].task + 1]++] = i;
}

void warn_index_free(struct warn_index *ix)
{
    free(ix->first);
    free(ix->order);
}

bool task_is_active(const struct task_rates *t)
{
    if (t->io_valid && (t->read_bps > 0 || t->write_bps > 0))
        return true;
    return t->delay_valid && t->io_delay_pct > 0.05;
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
