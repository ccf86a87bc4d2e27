/* SPDX-License-Identifier: GPL-2.0-or-later */
/* tui/view_latency.c: the latency view (l in a device's detail): measured latency per
 * I/O priority, its table and heat map, and the per-priority figures before and after
 * the last scheduler switch that the device detail shows (tui/draw.h). */
#define _XOPEN_SOURCE_EXTENDED 1
#include <curses.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "util/fmt.h"
#include "source/lens.h"
#include "tui/latency.h"
#include "tui/draw.h"

/* ---- the latency view: measured latency per I/O priority (issue 14) ---- */

/* Colour pairs of the heat map, low to high (tui.c setup_colors makes them): colour only
 * adds to the shading characters, which carry the figure alone. */
enum { C_HEAT = 16, C_HEAT_N = 4 };

/* Per priority before and after the last switch: p50/p99 of total latency merged over
 * the same windows as the figures above (before: up to 30 s before y; after: intervals
 * that began once the switch took). */
void draw_switch_lat(struct lines *l, const struct switch_mark *m, const char *disk)
{
    const struct lat_ring *ring = lat_find(&l->vw->lat, disk);
    if (!ring || ring->nprio == 0)
        return;
    ln(l, "  %s", "latency p50/p99 ms per I/O priority (lens):");
    for (unsigned p = 0; p < ring->nprio; p++) {
        uint64_t hb[LENS_HIST], ha[LENS_HIST];
        lat_merge(ring, p, m->asked - 30.0, m->asked, hb);
        lat_merge(ring, p, m->mono, m->mono + SWITCH_SHOW_S, ha);
        char b50[16], b99[16], a50[16], a99[16], bs[40], as[40];
        lat_fmt_ms(b50, sizeof(b50), lens_hist_quantile(hb, LENS_HIST, 0.50));
        lat_fmt_ms(b99, sizeof(b99), lens_hist_quantile(hb, LENS_HIST, 0.99));
        lat_fmt_ms(a50, sizeof(a50), lens_hist_quantile(ha, LENS_HIST, 0.50));
        lat_fmt_ms(a99, sizeof(a99), lens_hist_quantile(ha, LENS_HIST, 0.99));
        snprintf(bs, sizeof(bs), "%s/%s", b50, b99);
        snprintf(as, sizeof(as), "%s/%s", a50, a99);
        ln(l, "  %-10s %14s %14s", ring->prio[p].name, bs, as);
    }
}

/* A count in at most 6 characters. */
static void lat_count(char *buf, size_t n, double c)
{
    if (isnan(c))
        snprintf(buf, n, "-");
    else if (c < 1e5)
        snprintf(buf, n, "%.0f", c);
    else if (c < 1e8)
        snprintf(buf, n, "%.0fk", c / 1e3);
    else
        snprintf(buf, n, "%.0fM", c / 1e6);
}

static const struct prio_latency *lat_row(const struct dev_rates *d, unsigned prio)
{
    for (size_t i = 0; d && i < d->nlat; i++)
        if (d->lat[i].prio == prio)
            return &d->lat[i];
    return NULL;
}

/* One line per priority: the interval's count, percentiles of total latency and the
 * mean of each stage; the shown one marked with > (and reversed). */
static void lat_table(struct lines *l, const struct lat_ring *ring, const struct dev_rates *d, int sel,
                      bool known, int maxrows)
{
    attrset(A_BOLD);
    ln(l, "  %-6s %7s %7s %7s %7s  %7s %7s %7s", "PRIO", "REQ", "p50", "p90", "p99", "tag", "sched", "device");
    attrset(A_NORMAL);
    /* More priorities than rows: a window that keeps the shown one, and a line that says
     * how many others Tab reaches. */
    bool more = (int)ring->nprio > maxrows;
    if (more && maxrows > 1)
        maxrows--;
    int first = 0;
    if (sel >= maxrows)
        first = sel - maxrows + 1;
    for (int p = first; p < (int)ring->nprio && p < first + maxrows; p++) {
        const struct prio_latency *pl = lat_row(d, ring->prio[p].prio);
        char c[7][16];
        lat_count(c[0], 16, pl ? pl->st[LENS_ST_TOTAL].count : known ? 0 : (double)NAN);
        const struct prio_stage *tot = pl ? &pl->st[LENS_ST_TOTAL] : NULL;
        lat_fmt_ms(c[1], 16, tot ? tot->p50_ms : (double)NAN);
        lat_fmt_ms(c[2], 16, tot ? tot->p90_ms : (double)NAN);
        lat_fmt_ms(c[3], 16, tot ? tot->p99_ms : (double)NAN);
        lat_fmt_ms(c[4], 16, pl ? pl->st[LENS_ST_TAG].mean_ms : (double)NAN);
        lat_fmt_ms(c[5], 16, pl ? pl->st[LENS_ST_SCHED].mean_ms : (double)NAN);
        lat_fmt_ms(c[6], 16, pl ? pl->st[LENS_ST_DEVICE].mean_ms : (double)NAN);
        if (p == sel)
            attrset(A_REVERSE);
        ln(l, "%s %-6s %7s %7s %7s %7s  %7s %7s %7s", p == sel ? ">" : " ", ring->prio[p].name, c[0], c[1], c[2],
           c[3], c[4], c[5], c[6]);
        attrset(A_NORMAL);
    }
    if (more)
        ln(l, "  ... %d more (Tab)", (int)ring->nprio - maxrows);
}

/* Bucket rows of the heat map, high latency at the top as in a graph: on the left the
 * last interval's histogram (a bar and its count), then the heat map of the last ncols
 * columns, newest at the right, each cell shaded by its count against the busiest cell. */
static void lat_map(int y, int w, const struct lat_ring *ring, unsigned p, const struct prio_latency *pl,
                    struct lat_axis ax, unsigned ncols, int bar_w, const struct view *vw)
{
    int x0 = w - 1 - (int)ncols;             /* the newest column ends before the last column */
    unsigned nlev = lat_shade_levels(vw->utf8);
    uint64_t hmax = 0, cmax = 0;
    for (unsigned row = 0; row < ax.nrows; row++) {
        uint64_t hs = 0;
        for (unsigned k = ax.lo + row * ax.f; k < ax.lo + (row + 1) * ax.f && k < LENS_HIST; k++)
            hs += pl ? pl->st[LENS_ST_TOTAL].hist[k] : 0;
        hmax = hs > hmax ? hs : hmax;
        for (unsigned i = ring->n - ncols; i < ring->n; i++) {
            uint64_t cs = 0;
            for (unsigned k = ax.lo + row * ax.f; k < ax.lo + (row + 1) * ax.f && k < LENS_HIST; k++)
                cs += ring->prio[p].cnt[lat_col(ring, i)][k];
            cmax = cs > cmax ? cs : cmax;
        }
    }
    for (unsigned row = 0; row < ax.nrows; row++) {
        unsigned b = ax.lo + (ax.nrows - 1 - row) * ax.f;    /* the top row: the highest buckets */
        int yy = y + (int)row;
        char label[16], cnt[16];
        lat_bucket_label(label, sizeof(label), b);
        uint64_t hs = 0;
        for (unsigned k = b; k < b + ax.f && k < LENS_HIST; k++)
            hs += pl ? pl->st[LENS_ST_TOTAL].hist[k] : 0;
        putf(yy, 0, w, "%5s ", label);
        int len = hs && hmax ? (int)ceil((double)hs / (double)hmax * bar_w) : 0;
        move(yy, 6);
        for (int i = 0; i < len; i++)
            addstr(vw->utf8 ? "\u2588" : "#");
        if (hs)
            lat_count(cnt, sizeof(cnt), (double)hs);
        else
            snprintf(cnt, sizeof(cnt), "%s", "");
        putf(yy, 6 + bar_w + 1, w, "%6s |", cnt);
        for (unsigned i = ring->n - ncols; i < ring->n; i++) {
            uint64_t cs = 0;
            for (unsigned k = b; k < b + ax.f && k < LENS_HIST; k++)
                cs += ring->prio[p].cnt[lat_col(ring, i)][k];
            unsigned lv = lat_shade_level(cs, cmax, nlev);
            if (!lv)
                continue;
            if (vw->color)
                attrset((attr_t)COLOR_PAIR(C_HEAT + (int)((lv - 1) * C_HEAT_N / (nlev - 1))));
            mvaddstr(yy, x0 + (int)(i - (ring->n - ncols)), lat_shade_glyph(lv, vw->utf8));
            attrset(A_NORMAL);
        }
    }
}

/* The time axis under the map: one mark a column ('?' where the lens did not cover the
 * frame), the switch of scheduler as ^ with its names, the span on the left. */
static void lat_time_axis(int y, int w, int left, const struct lat_ring *ring, unsigned ncols,
                          const struct view *vw)
{
    int x0 = w - 1 - (int)ncols;
    unsigned first = ring->n - ncols;
    unsigned c0 = lat_col(ring, first), cn = lat_col(ring, ring->n - 1);
    char span[24], txt[64];
    fmt_span(span, sizeof(span), ring->t[cn] - (ring->t[c0] - ring->itv[c0]));
    snprintf(txt, sizeof(txt), "-%s .. now", span);
    putf(y, 0, left, "%*s", left, txt);
    move(y, x0);
    for (unsigned i = first; i < ring->n; i++)
        addch(ring->known[lat_col(ring, i)] ? '-' : '?');
    const char *from, *to;
    int sw = lat_switch_col(ring, ncols, &from, &to);
    if (sw < 0)
        return;
    int xs = x0 + (sw - (int)first);
    char lab[2 * LAT_SCHED + 8];
    snprintf(lab, sizeof(lab), "%s->%s", from, to);
    attrset(A_BOLD);
    mvaddch(y, xs, '^');
    int len = (int)strlen(lab);
    if (xs + 2 + len < w - 1) {
        mvaddch(y, xs + 1, ' ');
        put_untrusted(y, xs + 2, len, lab, vw);
    } else if (xs - 1 - len >= x0) {
        put_untrusted(y, xs - 1 - len, len, lab, vw);
        addch(' ');
    }
    attrset(A_NORMAL);
}

void draw_latency(const struct result *r, struct view *vw, int h, int w)
{
    struct lines l = { 1, h - 1, w, vw };
    const struct dev_rates *sel_dev = NULL, *d = NULL;
    for (size_t i = 0; i < r->ndevs; i++)
        if (strcmp(r->devs[i].dev->ds.name, vw->detail_dev) == 0)
            sel_dev = &r->devs[i];
    const char *disk = sel_dev ? sel_dev->dev->bd.disk : vw->detail_dev;
    for (size_t i = 0; i < r->ndevs; i++)
        if (strcmp(r->devs[i].dev->ds.name, disk) == 0)
            d = &r->devs[i];
    char title[256];
    snprintf(title, sizeof(title), "Latency per I/O priority on %s%s%s%s, scheduler %s  (Esc: back)",
             disk, strcmp(disk, vw->detail_dev) ? " (the disk of " : "", strcmp(disk, vw->detail_dev) ? vw->detail_dev : "",
             strcmp(disk, vw->detail_dev) ? ")" : "", d && d->dev->bd.scheduler[0] ? d->dev->bd.scheduler : "-");
    attrset(A_BOLD);
    ln(&l, "%s", title);
    attrset(A_NORMAL);
    if (!d) {
        ln(&l, "gone: the device is no longer listed in /proc/diskstats");
        return;
    }
    const struct lat_ring *ring = lat_find(&vw->lat, disk);
    bool known = r->cur->lens_on && r->interval_s > 0;
    if (!r->cur->lens_on)
        ln(&l, "Nothing measured in this frame: lens %s", r->cur->lens_msg[0] ? r->cur->lens_msg : "off when this was recorded");
    if (!ring || ring->nprio == 0) {
        if (r->cur->lens_on && vw->replay_total)
            ln(&l, "No request completed on %s in the frames replayed so far (recordings made before iotriage measured latency per priority have none).", disk);
        else if (r->cur->lens_on)
            ln(&l, "No request has completed on %s since this screen started: the lens times each request as it completes.", disk);
        ln(&l, "%s", "The BPF lens measures each request's wait per I/O priority (root, a kernel with BTF; --no-bpf turns it off).");
        return;
    }
    int sel = vw->lat_prio_set ? lat_prio_index(ring, vw->lat_prio) : -1;
    if (sel < 0)
        sel = 0;
    int maxrows = h >= 40 ? LAT_PRIOS : h >= 20 ? 4 : 2;
    lat_table(&l, ring, d, sel, known, maxrows);
    /* One heat map, of the priority chosen with Tab, rather than one per priority: at
     * 80x24 a map needs some 12 rows to span a device's milliseconds and a starved
     * class's seconds, so two would not fit beside the table, which keeps every
     * priority's figures in view. All priorities share the rows, so Tab compares them
     * row for row. */
    int bar_w = w >= 120 ? 16 : w >= 70 ? 10 : 4;
    int left = 5 + 1 + bar_w + 1 + 6 + 1;
    unsigned ncols = w - 1 - (left + 1) > 0 ? (unsigned)(w - 1 - (left + 1)) : 0;
    if (ncols > ring->n)
        ncols = ring->n;
    unsigned lo = 0, hi = 0;
    const struct lat_prio_ring *pr = &ring->prio[sel];
    const struct prio_latency *pl = lat_row(d, pr->prio);
    char head[256], span[24] = "-";
    if (ncols > 0) {
        unsigned c0 = lat_col(ring, ring->n - ncols), cn = lat_col(ring, ring->n - 1);
        fmt_span(span, sizeof(span), ring->t[cn] - (ring->t[c0] - ring->itv[c0]));
    }
    char what[32];
    snprintf(what, sizeof(what), "%s, last interval", pr->name);
    if ((int)strlen(what) >= left)
        snprintf(what, sizeof(what), "%s, last", pr->name);
    snprintf(head, sizeof(head), "%-*.*s| %s, last %s: a column a refresh, newest right%s", left, left, what,
             pr->name, span, ring->dropped ? "  (more priorities than kept)" : "");
    if (l.y < l.h) {
        attrset(A_BOLD);
        put_untrusted(l.y++, 0, w, head, vw);
        attrset(A_NORMAL);
    }
    if (!lat_range(ring, ncols, &lo, &hi)) {
        ln(&l, "No request at any priority completed on %s in the last %s.", disk, span);
        return;
    }
    int avail = l.h - l.y - 1;                   /* the time axis takes a row */
    if (avail < 3) {
        ln(&l, "%s", "(the heat map needs a taller terminal)");
        return;
    }
    struct lat_axis ax = lat_axis_plan(lo, hi, (unsigned)avail);
    lat_map(l.y, w, ring, (unsigned)sel, pl, ax, ncols, bar_w, vw);
    lat_time_axis(l.y + (int)ax.nrows, w, left, ring, ncols, vw);
}
