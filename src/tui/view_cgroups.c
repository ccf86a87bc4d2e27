/* SPDX-License-Identifier: GPL-2.0-or-later */
/* tui/view_cgroups.c: the cgroup view (c): the cgroups as a tree, like systemd-cgtop,
 * with their I/O settings (tui/draw.h). */
#define _XOPEN_SOURCE_EXTENDED 1
#include <curses.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "util/fmt.h"
#include "tui/draw.h"

/* ---- the cgroup view: a tree like systemd-cgtop ---- */

/* "loop0" for a device the snapshot knows, else "7:0". */
static const char *cg_dev(const struct snapshot *s, unsigned major, unsigned minor, char *buf, size_t n)
{
    for (size_t i = 0; i < s->ndevs; i++)
        if (s->devs[i].ds.major == major && s->devs[i].ds.minor == minor)
            return s->devs[i].ds.name;
    snprintf(buf, n, "%u:%u", major, minor);
    return buf;
}

/* Append "; " and a printf'd part to buf at *o (cut at the end, never past it). */
static void cg_part(char *buf, size_t n, size_t *o, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static void cg_part(char *buf, size_t n, size_t *o, const char *fmt, ...)
{
    if (*o + 3 >= n)
        return;
    if (*o)
        *o += (size_t)snprintf(buf + *o, n - *o, "; ");
    va_list ap;
    va_start(ap, fmt);
    int w = vsnprintf(buf + *o, n - *o, fmt, ap);
    va_end(ap);
    if (w > 0)
        *o = *o + (size_t)w < n ? *o + (size_t)w : n - 1;
}

static void cg_weight_part(char *buf, size_t n, size_t *o, const struct snapshot *s, const char *name,
                           int err, const struct cg_weight *x)
{
    if (err || (x->dflt < 0 && x->n == 0))
        return;
    char part[256], dv[16];
    size_t p = 0;
    part[0] = '\0';
    if (x->dflt >= 0)
        p += (size_t)snprintf(part, sizeof(part), "default %d", x->dflt);
    for (unsigned i = 0; i < x->n && p + 24 < sizeof(part); i++)
        p += (size_t)snprintf(part + p, sizeof(part) - p, "%s%s %d", p ? ", " : "",
                              cg_dev(s, x->row[i].major, x->row[i].minor, dv, sizeof(dv)), x->row[i].weight);
    cg_part(buf, n, o, "%s %s", name, part);
}

/* One line of a cgroup's I/O settings as its files say them; what is not set is left out. */
static void cg_settings_line(char *buf, size_t n, const struct snapshot *s, const struct cgroup_entry *e, bool v1)
{
    const struct cgroup_settings *st = &e->settings;
    size_t o = 0;
    buf[0] = '\0';
    if (!st->iomax_err)
        for (unsigned i = 0; i < st->iomax.n; i++) {
            char lim[128], dv[16];
            cgroup_limit_text(lim, sizeof(lim), &st->iomax.row[i], st->v1);
            if (lim[0])
                cg_part(buf, n, &o, "%s %s %s", v1 ? "blkio.throttle" : "io.max",
                        cg_dev(s, st->iomax.row[i].major, st->iomax.row[i].minor, dv, sizeof(dv)), lim);
        }
    if (!v1) {
        cg_weight_part(buf, n, &o, s, "io.weight", st->weight_err, &st->weight);
        cg_weight_part(buf, n, &o, s, "io.bfq.weight", st->bfq_weight_err, &st->bfq_weight);
        if (!st->prio_err && st->prio != CGP_NO_CHANGE)
            cg_part(buf, n, &o, "io.prio.class %s", cgroup_prio_name(st->prio));
    }
    if (o == 0)
        snprintf(buf, n, "%s", st->iomax_err == -ENOENT && st->weight_err == -ENOENT
                                   ? "no io.* files here (the io controller is not enabled for it)"
                                   : "no I/O limit, weight or class set");
}

void draw_cgroups(const struct result *r, const struct verdicts *v, struct view *vw, int h, int w)
{
    attrset(A_BOLD);
    put_clip(1, 0, w, "Cgroups  (Enter: its processes, Esc: back; rates and delay summed over its tasks and those below)");
    attrset(color(vw, C_HEAD, A_BOLD | A_UNDERLINE));
    putf(2, 0, w, "%-40s %-20s %7s %7s %7s %6s %6s %5s %4s", "CGROUP", "UNIT", "READ/s", "WRITE/s", "IODLY%",
         "SOME%", "FULL%", "TASKS", "WARN");
    attrset(A_NORMAL);
    if (!r->cgroups || r->ncgroups == 0) {
        const struct cgroup_set *cs = r->cur->cgroups;
        put_clip(3, 0, w, cs && cs->err ? "no cgroup hierarchy could be read" : "no cgroup known in this frame");
        return;
    }
    const struct cgroup_set *set = r->cur->cgroups;
    bool v1 = set && set->v1_only;
    int y = 3;
    if (v1)
        put_clip(y++, 0, w, "legacy blkio hierarchy only: the v2 controls (io.max, io.weight, io.prio.class, "
                            "io.latency, io.cost) are unavailable; its throttle limits are shown");
    keep_in_view(&vw->cg_sel, &vw->cg_top, r->ncgroups, h - 1 - y);
    for (size_t k = vw->cg_top; k < r->ncgroups && y < h - 1; k++) {
        const struct cgroup_rates *c = &r->cgroups[k];
        const struct cgroup_entry *e = c->cg;
        const char *base = strrchr(e->path, '/');
        base = base && base[1] ? base + 1 : e->path;
        char name[256], unit[192], rb[16], wb[16], dl[16], so[16], fu[16];
        snprintf(name, sizeof(name), "%*s%s", 2 * (e->depth < 12 ? e->depth : 12), "", base);
        if (e->names.runtime[0])
            snprintf(unit, sizeof(unit), "%s:%s", e->names.runtime, e->names.short_id);
        else if (e->names.pod_uid[0])
            snprintf(unit, sizeof(unit), "pod %.8s %s", e->names.pod_uid, e->names.qos);
        else
            snprintf(unit, sizeof(unit), "%s", e->names.unit);
        /* the names as drawn, in their columns' widths: escaped, then cut and padded */
        char name_cell[4 * 40 + 1], unit_cell[4 * 20 + 1];
        untrusted_cell(name_cell, sizeof(name_cell), name, 40, vw);
        untrusted_cell(unit_cell, sizeof(unit_cell), unit, 20, vw);
        fmt_rate(rb, sizeof(rb), c->read_bps);
        fmt_rate(wb, sizeof(wb), c->write_bps);
        fmt_num(dl, sizeof(dl), c->io_delay_pct, 1);
        fmt_num(so, sizeof(so), c->some_pct, 1);
        fmt_num(fu, sizeof(fu), c->full_pct, 1);
        unsigned nw = 0;
        for (size_t i = 0; i < v->n; i++)
            nw += v->w[i].cgroup == (int)k;
        char line_buf[512];
        snprintf(line_buf, sizeof(line_buf), "%s %s %7s %7s %7s %6s %6s %5u %4u", name_cell, unit_cell, rb, wb,
                 dl, so, fu, c->ntasks, nw);
        bool sel = k == vw->cg_sel;
        attrset((nw ? color(vw, C_WARN, A_BOLD) : A_NORMAL) | (sel ? A_REVERSE : 0));
        put_clip(y++, 0, w, line_buf);   /* escaped: its names above, the rest numbers */
        attrset(A_NORMAL);
        /* The selected cgroup's settings and its warnings, whole. */
        if (!sel)
            continue;
        char st[512], wl[WARN_TEXT_MAX + 48];
        cg_settings_line(st, sizeof(st), r->cur, e, v1);
        snprintf(wl, sizeof(wl), "    settings: %s", st);
        if (y < h - 1)
            put_untrusted(y++, 0, w, wl, vw);
        for (size_t i = 0; i < v->n && y < h - 1; i++) {
            if (v->w[i].cgroup != (int)k)
                continue;
            snprintf(wl, sizeof(wl), "    ! %s: %s", warn_code_name(v->w[i].code), v->w[i].text);
            attrset(color(vw, C_WARN, A_BOLD));
            put_untrusted(y++, 0, w, wl, vw);
            attrset(A_NORMAL);
        }
    }
}
