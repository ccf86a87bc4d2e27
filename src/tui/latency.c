/* SPDX-License-Identifier: GPL-2.0-or-later */
/* tui/latency.c: the rings of measured latency per priority and the pure arithmetic of
 * the latency view (tui/latency.h). No curses here. */
#include "tui/latency.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "delta.h"
#include "util.h"
#include "util/num.h"

const struct lat_ring *lat_find(const struct lat_set *s, const char *name)
{
    for (size_t i = 0; i < s->n; i++)
        if (strcmp(s->v[i].name, name) == 0)
            return &s->v[i];
    return NULL;
}

unsigned lat_col(const struct lat_ring *r, unsigned i)
{
    return (r->head + LAT_COLS - r->n + i) % LAT_COLS;
}

int lat_prio_index(const struct lat_ring *r, unsigned prio)
{
    for (unsigned p = 0; p < r->nprio; p++)
        if (r->prio[p].prio == prio)
            return (int)p;
    return -1;
}

/* The slot of a priority, made (in prio order) when there is room; NULL when not. */
static struct lat_prio_ring *slot_get(struct lat_ring *r, const struct prio_latency *pl)
{
    int k = lat_prio_index(r, pl->prio);
    if (k >= 0)
        return &r->prio[k];
    if (r->nprio == LAT_PRIOS)
        return NULL;
    unsigned at = 0;
    while (at < r->nprio && r->prio[at].prio < pl->prio)
        at++;
    memmove(&r->prio[at + 1], &r->prio[at], (r->nprio - at) * sizeof(r->prio[0]));
    r->nprio++;
    struct lat_prio_ring *s = &r->prio[at];
    memset(s, 0, sizeof(*s));
    s->prio = pl->prio;
    str_copy(s->name, pl->name, sizeof(s->name));
    /* Zero counts for the columns before it appeared: it completed nothing then. */
    s->cnt = xcalloc(LAT_COLS, sizeof(*s->cnt));
    return s;
}

void lat_push(struct lat_set *s, const struct dev_rates *d, double t, double itv, bool known)
{
    const char *name = d->dev->ds.name;
    struct lat_ring *r = NULL;
    for (size_t i = 0; i < s->n && !r; i++)
        if (strcmp(s->v[i].name, name) == 0)
            r = &s->v[i];
    if (!r) {
        if (d->nlat == 0)
            return;                  /* never measured: no ring, no memory */
        s->v = xreallocarray(s->v, s->n + 1, sizeof(*s->v));
        r = &s->v[s->n++];
        memset(r, 0, sizeof(*r));
        str_copy(r->name, name, sizeof(r->name));
    }
    unsigned c = r->head;
    r->t[c] = t;
    r->itv[c] = itv;
    r->known[c] = known;
    str_copy(r->sched[c], d->dev->bd.scheduler, sizeof(r->sched[c]));
    for (unsigned p = 0; p < r->nprio; p++)
        memset(r->prio[p].cnt[c], 0, sizeof(r->prio[p].cnt[c]));
    for (size_t i = 0; known && i < d->nlat; i++) {
        struct lat_prio_ring *sl = slot_get(r, &d->lat[i]);
        if (!sl) {
            r->dropped++;
            continue;
        }
        const struct prio_stage *st = &d->lat[i].st[LENS_ST_TOTAL];
        for (unsigned k = 0; k < LENS_HIST; k++)
            sl->cnt[c][k] = st->hist[k] > UINT32_MAX ? UINT32_MAX : (uint32_t)st->hist[k];
    }
    r->head = (r->head + 1) % LAT_COLS;
    if (r->n < LAT_COLS)
        r->n++;
}

void lat_clear(struct lat_set *s)
{
    for (size_t i = 0; i < s->n; i++)
        for (unsigned p = 0; p < s->v[i].nprio; p++)
            free(s->v[i].prio[p].cnt);
    free(s->v);
    s->v = NULL;
    s->n = 0;
}

double lat_bucket_us(unsigned k)
{
    return k == 0 ? 0 : num_pow2((int)k - 1);
}

/* Two significant digits below 10, whole numbers above. */
static void short_num(char *buf, size_t n, double v, const char *unit)
{
    if (v < 9.95)
        snprintf(buf, n, "%.1f%s", v, unit);
    else
        snprintf(buf, n, "%.0f%s", v, unit);
}

void lat_bucket_label(char *buf, size_t n, unsigned k)
{
    double us = lat_bucket_us(k);
    if (k == 0)
        snprintf(buf, n, "<1us");
    else if (us < 1000)
        snprintf(buf, n, "%.0fus", us);
    else if (us < 1e6)
        short_num(buf, n, us / 1e3, "ms");
    else if (us < 60e6)
        short_num(buf, n, us / 1e6, "s");
    else
        short_num(buf, n, us / 60e6, "m");
}

unsigned lat_shade_level(uint64_t count, uint64_t max, unsigned nlevels)
{
    if (count == 0 || nlevels < 2)
        return 0;
    if (count >= max || max <= 1 || nlevels == 2)
        return nlevels - 1;
    double frac = num_log2((double)count) / num_log2((double)max);
    return 1 + (unsigned)num_lround((double)(nlevels - 2) * frac);
}

static const char *const shade_ascii[] = { " ", ".", ":", "-", "=", "+", "*", "#", "%", "@" };
static const char *const shade_utf8[] = { " ", "\u2591", "\u2592", "\u2593", "\u2588" };

unsigned lat_shade_levels(bool utf8)
{
    return utf8 ? (unsigned)ARRAY_SIZE(shade_utf8) : (unsigned)ARRAY_SIZE(shade_ascii);
}

const char *lat_shade_glyph(unsigned level, bool utf8)
{
    unsigned n = lat_shade_levels(utf8);
    if (level >= n)
        level = n - 1;
    return utf8 ? shade_utf8[level] : shade_ascii[level];
}

struct lat_axis lat_axis_plan(unsigned lo, unsigned hi, unsigned avail)
{
    struct lat_axis a = { lo, 1, 0 };
    if (avail == 0 || hi < lo)
        return a;
    unsigned need = hi - lo + 1;
    if (need <= avail) {
        /* An empty bucket either side, when there is room, shows where the heat ends. */
        if (lo > 0 && need < avail)
            a.lo = lo - 1, need++;
        if (hi + 1 < LENS_HIST && need < avail)
            need++;
        a.nrows = need;
        return a;
    }
    a.f = (need + avail - 1) / avail;
    a.nrows = (need + a.f - 1) / a.f;
    return a;
}

bool lat_range(const struct lat_ring *r, unsigned ncols, unsigned *lo, unsigned *hi)
{
    bool any = false;
    if (ncols > r->n)
        ncols = r->n;
    for (unsigned i = r->n - ncols; i < r->n; i++) {
        unsigned c = lat_col(r, i);
        for (unsigned p = 0; p < r->nprio; p++)
            for (unsigned k = 0; k < LENS_HIST; k++) {
                if (!r->prio[p].cnt[c][k])
                    continue;
                if (!any || k < *lo)
                    *lo = k;
                if (!any || k > *hi)
                    *hi = k;
                any = true;
            }
    }
    return any;
}

unsigned lat_merge(const struct lat_ring *r, unsigned p, double from, double to, uint64_t hist[LENS_HIST])
{
    memset(hist, 0, LENS_HIST * sizeof(hist[0]));
    if (p >= r->nprio)
        return 0;
    unsigned used = 0;
    for (unsigned i = 0; i < r->n; i++) {
        unsigned c = lat_col(r, i);
        if (!r->known[c] || r->t[c] - r->itv[c] < from - 0.01 || r->t[c] > to + 0.01)
            continue;
        for (unsigned k = 0; k < LENS_HIST; k++)
            hist[k] += r->prio[p].cnt[c][k];
        used++;
    }
    return used;
}

int lat_switch_col(const struct lat_ring *r, unsigned ncols, const char **from, const char **to)
{
    if (ncols > r->n)
        ncols = r->n;
    unsigned first = r->n - ncols;
    if (first == 0)
        first = 1;
    for (unsigned i = r->n; i-- > first;) {
        const char *a = r->sched[lat_col(r, i - 1)], *b = r->sched[lat_col(r, i)];
        if (a[0] && b[0] && strcmp(a, b) != 0) {
            *from = a;
            *to = b;
            return (int)i;
        }
    }
    return -1;
}

void lat_fmt_ms(char *buf, size_t n, double ms)
{
    if (isnan(ms))
        snprintf(buf, n, "-");
    else if (ms < 1)
        snprintf(buf, n, "%.3f", ms);
    else if (ms < 10)
        snprintf(buf, n, "%.2f", ms);
    else if (ms < 100)
        snprintf(buf, n, "%.1f", ms);
    else
        snprintf(buf, n, "%.0f", ms);
}
