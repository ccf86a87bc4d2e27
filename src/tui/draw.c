/* SPDX-License-Identifier: GPL-2.0-or-later */
/* tui/draw.c: the screen, drawn from the model and the view state; reads, never changes
 * the model. Every untrusted string goes through esc_display before it reaches curses. */
#define _XOPEN_SOURCE_EXTENDED 1
#include <curses.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <wchar.h>

#include "util/escape.h"
#include "out/columns.h"
#include "util/fmt.h"
#include "source/lens.h"
#include "tui/latency.h"
#include "tui/view.h"
#include "util.h"
#include "util/num.h"

enum { C_TITLE = 1, C_CRIT, C_WARN, C_INFO, C_SAT, C_HEAD, C_DIM };

static attr_t color(const struct view *vw, int pair, attr_t mono)
{
    return vw->color ? (attr_t)COLOR_PAIR(pair) : mono;
}

/* How many bytes of s fit in maxw columns, whole characters only, counting each
 * character's width (wide characters take two); *cols: the columns they take. room: the
 * bytes there are for them and the spaces that would pad them to maxw columns (a run of
 * zero-width characters takes bytes but no column). */
static size_t fit_cols(const char *s, int maxw, size_t room, int *cols)
{
    mbstate_t st;
    memset(&st, 0, sizeof(st));
    int used = 0;
    size_t off = 0, left = strlen(s);
    while (left > 0 && used < maxw) {
        wchar_t wc;
        size_t n = mbrtowc(&wc, s + off, left, &st);
        if (n == (size_t)-1 || n == (size_t)-2 || n == 0)
            break;
        int w = wcwidth(wc);
        if (w < 0)
            w = 1;
        if (used + w > maxw || off + n + (size_t)(maxw - used - w) > room)
            break;
        used += w;
        off += n;
        left -= n;
    }
    *cols = used;
    return off;
}

/* Put text at (y, x), at most maxw columns (fit_cols). Returns the columns used. The
 * text is already safe: escaped. */
static int put_clip(int y, int x, int maxw, const char *s)
{
    int used;
    size_t n = fit_cols(s, maxw, SIZE_MAX, &used);
    move(y, x);
    if (n)
        addnstr(s, (int)n);
    return used;
}

__attribute__((format(printf, 4, 5)))
static int putf(int y, int x, int maxw, const char *fmt, ...)
{
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    return put_clip(y, x, maxw, buf);
}

/* Untrusted bytes: escaped first. */
static int put_untrusted(int y, int x, int maxw, const char *s, const struct view *vw)
{
    char buf[1024];
    esc_display(buf, sizeof(buf), s, strlen(s), vw->utf8);
    return put_clip(y, x, maxw, buf);
}

/* A column of a row made of untrusted bytes: s escaped, cut and padded to exactly width
 * columns of what is drawn (a printf width counts the bytes before escaping: an escape
 * or a character of several bytes moved the columns after it). cap > width. */
static void untrusted_cell(char *dst, size_t cap, const char *s, int width, const struct view *vw)
{
    char buf[1024];
    esc_display(buf, sizeof(buf), s, strlen(s), vw->utf8);
    int cols;
    size_t n = fit_cols(buf, width, cap - 1, &cols);
    if (buf[n]) {                    /* cut: after a whole escape, not inside one */
        n = esc_display(buf, n + 1, s, strlen(s), vw->utf8);
        n = fit_cols(buf, width, cap - 1, &cols);
    }
    memcpy(dst, buf, n);
    memset(dst + n, ' ', (size_t)(width - cols));
    dst[n + (size_t)(width - cols)] = '\0';
}

static void fmt_num(char *buf, size_t n, double v, int prec)
{
    if (isnan(v))
        snprintf(buf, n, "-");
    else
        snprintf(buf, n, "%.*f", prec, v);
}

/* ---- columns: chosen by priority until the width is used, drawn in table order ---- */

struct col {
    const char *title;
    int width;                       /* 0: takes the rest */
    int prio;                        /* lower comes first when space is short */
    bool right;
};

/* Columns in priority order until the first that does not fit: a narrow column of low
 * priority never takes the place of a wider, more important one. */
static int choose_cols(const struct col *cols, int n, int width, bool *on)
{
    int used = 0;
    for (int i = 0; i < n; i++)
        on[i] = false;
    for (int p = 0; p < 10; p++)
        for (int i = 0; i < n; i++) {
            if (cols[i].prio != p)
                continue;
            if (used + cols[i].width + 1 > width)
                return used;
            on[i] = true;
            used += cols[i].width + 1;
        }
    return used;
}

/* The selection within the n rows, and the first shown row such that the selection is
 * among the `visible` rows shown. */
static void keep_in_view(size_t *sel, size_t *top, size_t n, int visible)
{
    if (*sel >= n)
        *sel = n ? n - 1 : 0;
    if (*sel < *top)
        *top = *sel;
    if (visible > 0 && *sel >= *top + (size_t)visible)
        *top = *sel - (size_t)(visible - 1);
}

/* ---- the first frame ---- */

/* What a figure that needs an interval shows on the first frame, made from one snapshot
 * before the first interval ended: neither a number nor "-" (unknown), but "not yet". */
#define PENDING ".."

/* The live frame of one snapshot (pipeline_preview): every rate is still to come. A
 * recording's frames always span an interval. */
static bool first_frame(const struct result *r, const struct view *vw)
{
    return r && r->interval_s <= 0 && !vw->replay_total;
}

/* A process-table cell that needs an interval (READ and WRITE as totals since the task
 * started do not), or DEV before the first scan of a process's open files (snapshot.c:
 * scan_deferred; the set is not known and no error says why). */
static bool pending_cell(const struct result *r, const struct view *vw, enum col_id id, size_t ti)
{
    if (!first_frame(r, vw))
        return false;
    switch (id) {
    case COL_DEV:
        return r->cur->tdevs && !r->cur->tdevs[ti].known && !r->cur->tdevs[ti].err;
    case COL_READ:
    case COL_WRITE:
        return !vw->accumulated;
    case COL_IODLY:
    case COL_SWAP:
    case COL_AVGWAIT:
    case COL_ROLE:
        return true;
    default:
        return false;
    }
}

/* ---- header and PSI ---- */

static void draw_header(const struct result *r, struct view *vw, int w)
{
    char when[16] = "--:--:--";
    if (r) {
        time_t t = (time_t)r->cur->wall;
        struct tm tm;
        localtime_r(&t, &tm);
        strftime(when, sizeof(when), "%H:%M:%S", &tm);
    }
    attrset(color(vw, C_TITLE, A_BOLD));
    int x;
    if (vw->replay_total)
        x = putf(0, 0, w, "iotriage - %s  %s  REPLAY %zu/%zu x%g", vw->host, when, vw->replay_pos + 1,
                 vw->replay_total, vw->replay_speed);
    else
        x = putf(0, 0, w, "iotriage - %s  %s  every %.2gs", vw->host, when, vw->delay_s);
    attrset(A_NORMAL);
    if (vw->paused) {
        attrset(A_REVERSE);
        x += putf(0, x, w - x, " PAUSED ");
        attrset(A_NORMAL);
    }
    if (!r)
        return;
    if (vw->replay_has_at) {
        /* How far this frame is from the moment asked: "--at now" on a recording that
         * stopped shows its last sample, which must not pass for now. */
        char span[32];
        double d = r->cur->wall - vw->replay_at;
        fmt_span(span, sizeof(span), fabs(d));
        if (vw->replay_at_missed && d < 0)
            attrset(color(vw, C_WARN, A_BOLD));
        x += putf(0, x, w - x, "%s%s %s --at%s", vw->paused ? " " : "  ", span, d < 0 ? "before" : "after",
                  vw->replay_at_missed && d < 0 ? " (none after)" : "");
        attrset(A_NORMAL);
    }
    const struct snapshot *c = r->cur;
    const char *da;
    if (c->taskstats_err == -EPERM || c->taskstats_err == -EACCES)
        da = "delays: need CAP_NET_ADMIN (root)";
    else if (c->taskstats_err == -ENOENT)                       /* no such genetlink family */
        da = "delays: kernel without taskstats";
    else if (c->taskstats_err)
        da = "delays: taskstats unavailable";
    else if (c->delayacct == DA_OFF)
        da = vw->replay_total ? "delays off"     /* of the recording: nothing to turn on */
             : vw->read_only ? "delays off: sysctl kernel.task_delayacct=1" : "delays off: A turns on";
    else if (c->delayacct == DA_UNKNOWN)
        da = "delays: not in this kernel";
    else
        da = "delays on";
    /* Where IODLY% comes from when taskstats does not give it all: the lens, the sampled
     * estimate. Without taskstats, swap-in delay (SWAP%) is nobody's. */
    unsigned m = delay_sources(r);
    bool ts = !c->taskstats_err && c->delayacct == DA_ON;
    bool lens = m & (1u << DELAY_SRC_BPF), smp = m & (1u << DELAY_SRC_SAMPLED);
    char src[64] = "";
    if (lens || smp)
        snprintf(src, sizeof(src), "IODLY by %s%s%s%s%s  ", ts ? "taskstats+" : "", lens ? "lens" : "",
                 lens && smp ? "+" : "", smp ? "sampled~" : "", ts ? "" : ", no swap-in");
    x += putf(0, x, w - x, "  %zu %s  ", c->ntasks, c->threads ? "threads" : "procs");
    if (vw->read_only) {
        attrset(A_BOLD);
        x += putf(0, x, w - x, "READ-ONLY  ");
        attrset(A_NORMAL);
    }
    if (vw->record_error[0]) {
        attrset(color(vw, C_CRIT, A_BOLD));
        x += putf(0, x, w - x, "RECORDING STOPPED  ");
        attrset(A_NORMAL);
    } else if (vw->recording) {
        x += putf(0, x, w - x, "REC  ");
    }
    if (geteuid() != 0) {
        attrset(color(vw, C_WARN, A_BOLD));
        x += putf(0, x, w - x, "not root: others' I/O unknown  ");
        attrset(A_NORMAL);
    }
    /* What procfs or sysfs could not say, in short: the full text is in -b and JSON. */
    attrset(color(vw, C_WARN, A_BOLD));
    /* The BPF lens off (its reason is in the device view and the JSON): iowait of tasks
     * delay accounting does not cover is unknown. */
    if (!c->lens_on && c->lens_msg[0])
        x += putf(0, x, w - x, c->lens_pending ? "lens loading  " : "lens off  ");
    if (c->hidden_note[0]) {
        long hidden = strtol(c->hidden_note, NULL, 10);
        x += putf(0, x, w - x, "%ld hidden (hidepid)  ", hidden);
    }
    if (c->proc_note[0])
        x += putf(0, x, w - x, "/proc restricted  ");
    if (c->sys_note[0])
        x += putf(0, x, w - x, "sysfs unreadable  ");
    attrset(A_NORMAL);
    x += putf(0, x, w - x, "%s", src);
    if (c->delayacct != DA_ON || c->taskstats_err)
        attrset(color(vw, C_WARN, A_BOLD));
    putf(0, x, w - x, "%s", da);
    attrset(A_NORMAL);
}

static void draw_psi(const struct result *r, const struct view *vw, int y, int w)
{
    int x = putf(y, 0, w, "PSI ");
    for (int k = 0; k < PSI_NRES && x < w; k++) {
        const struct psi_sample *s = &r->cur->psi[k];
        const struct psi_rates *p = &r->psi[k];
        if (s->err) {
            x += putf(y, x, w - x, "%s n/a  ", psi_resource_name[k]);
            continue;
        }
        char some[16], full[16];
        fmt_num(some, sizeof(some), p->some_pct, 1);
        fmt_num(full, sizeof(full), p->full_pct, 1);
        if (first_frame(r, vw)) {
            snprintf(some, sizeof(some), PENDING);
            snprintf(full, sizeof(full), PENDING);
        }
        bool hot = !isnan(p->some_pct) && p->some_pct >= 20;
        if (hot)
            attrset(color(vw, C_WARN, A_BOLD));
        if (k == PSI_IO)
            x += putf(y, x, w - x, "io some %s%% full %s%% (10s %.1f 60s %.1f 300s %.1f)  ", some, full,
                      s->some.avg10, s->some.avg60, s->some.avg300);
        else
            x += putf(y, x, w - x, "%s some %s%%  ", k == PSI_CPU ? "cpu" : "mem", some);
        attrset(A_NORMAL);
    }
}

/* ---- devices ---- */

static void draw_spark(int y, int x, int w, const struct spark *s, const struct view *vw)
{
    static const char *const blocks[] = { " ", "\u2581", "\u2582", "\u2583", "\u2584", "\u2585", "\u2586", "\u2587", "\u2588" };
    static const char ascii[] = " .:-=+*#%";
    if (!s || s->n == 0 || w <= 0)
        return;
    unsigned n = s->n < (unsigned)w ? s->n : (unsigned)w;
    double max = 0;
    for (unsigned i = 0; i < n; i++) {
        double v = s->v[(s->head + SPARK_LEN - n + i) % SPARK_LEN];
        if (v > max)
            max = v;
    }
    move(y, x);
    for (unsigned i = 0; i < n; i++) {
        double v = s->v[(s->head + SPARK_LEN - n + i) % SPARK_LEN];
        int lvl = max > 0 && !isnan(v) ? (int)num_lround(v / max * 8.0) : 0;
        if (vw->utf8)
            addstr(blocks[lvl]);
        else
            addch((chtype)ascii[lvl]);
    }
}

static const struct col dev_cols[] = {
    { "DEVICE", 9, 0, false },  { "SCHED", 11, 0, false }, { "NR", 5, 1, true },
    { "r/s", 8, 0, true },      { "w/s", 8, 0, true },     { "rMB/s", 7, 3, true },
    { "wMB/s", 7, 3, true },    { "r_await", 7, 1, true }, { "w_await", 7, 2, true },
    { "aqu-sz", 6, 1, true },   { "%util", 5, 0, true },   { "SAT", 3, 0, false },
};
#define NDEVCOLS ((int)ARRAY_SIZE(dev_cols))

static void draw_devices(const struct result *r, const struct rows *rows, struct view *vw, int y0,
                         int h, int w)
{
    bool on[NDEVCOLS];
    int used = choose_cols(dev_cols, NDEVCOLS, w, on);
    attrset(color(vw, C_HEAD, A_BOLD | A_UNDERLINE));
    int x = 0;
    for (int i = 0; i < NDEVCOLS; i++)
        if (on[i])
            x += putf(y0, x, w - x, dev_cols[i].right ? "%*s " : "%-*s ", dev_cols[i].width, dev_cols[i].title);
    if (w - used >= 10)
        putf(y0, x, w - x, "%-*s", w - x, "IOPS history");
    attrset(A_NORMAL);
    keep_in_view(&vw->dev_sel, &vw->dev_top, rows->ndev, h - 1);
    for (int line = 1; line < h; line++) {
        size_t ri = vw->dev_top + (size_t)(line - 1);
        if (ri >= rows->ndev)
            break;
        const struct dev_rates *d = &r->devs[rows->dev[ri]];
        const struct blockdev_info *b = &d->dev->bd;
        char cell[NDEVCOLS][72];
        char raw[72];
        snprintf(raw, sizeof(raw), "%s%s", b->partition ? " " : "", d->dev->ds.name);
        esc_display(cell[0], 72, raw, strlen(raw), vw->utf8);
        esc_display(cell[1], 72, b->scheduler[0] ? b->scheduler : "-", strlen(b->scheduler[0] ? b->scheduler : "-"), vw->utf8);
        if (b->nr_requests >= 0)
            snprintf(cell[2], 72, "%ld", b->nr_requests);
        else
            snprintf(cell[2], 72, "-");
        fmt_num(cell[3], 72, d->r_s, 1);
        fmt_num(cell[4], 72, d->w_s, 1);
        fmt_num(cell[5], 72, d->rkb_s / 1024.0, 2);
        fmt_num(cell[6], 72, d->wkb_s / 1024.0, 2);
        fmt_num(cell[7], 72, d->r_await, 2);
        fmt_num(cell[8], 72, d->w_await, 2);
        fmt_num(cell[9], 72, d->aqu_sz, 2);
        fmt_num(cell[10], 72, d->util, 0);
        snprintf(cell[11], 72, "%s", d->saturated < 0 ? "-" : d->saturated ? "SAT" : "");
        for (int i = 3; i < NDEVCOLS && first_frame(r, vw); i++)
            snprintf(cell[i], 72, PENDING);
        bool sel = vw->focus == FOCUS_DEVICES && ri == vw->dev_sel && vw->mode == MODE_MAIN;
        attr_t a = d->saturated == 1 ? color(vw, C_SAT, A_BOLD) : A_NORMAL;
        attrset(a | (sel ? A_REVERSE : 0));
        int y = y0 + line;
        x = 0;
        for (int i = 0; i < NDEVCOLS; i++)
            if (on[i])
                x += putf(y, x, w - x, dev_cols[i].right ? "%*.*s " : "%-*.*s ", dev_cols[i].width,
                          dev_cols[i].width, cell[i]);
        if (sel)
            for (int k = x; k < w; k++)
                mvaddch(y, k, ' ');
        attrset(A_NORMAL);
        if (w - x >= 10)   /* the last column stays empty: writing it can wrap the line */
            draw_spark(y, x, w - x - 1, spark_find(vw, d->dev->ds.name), vw);
    }
}

/* ---- banner ---- */

static int draw_banner(const struct verdicts *v, const struct view *vw, int y0, int maxlines, int w)
{
    size_t shown = 0;
    int lines = 0;
    for (size_t i = 0; i < v->n && lines < maxlines; i++) {
        const struct warning *x = &v->w[i];
        if (x->sev == SEV_INFO)
            continue;               /* information stays in the detail views */
        bool last = lines == maxlines - 1;
        size_t rest = 0;
        for (size_t k = i + 1; k < v->n; k++)
            rest += v->w[k].sev != SEV_INFO;
        attrset(x->sev == SEV_CRIT ? color(vw, C_CRIT, A_BOLD | A_REVERSE) : color(vw, C_WARN, A_BOLD));
        int col = putf(y0 + lines, 0, w, "%s %s: ", x->sev == SEV_CRIT ? "!!" : "! ", warn_code_name(x->code));
        attrset(x->sev == SEV_CRIT ? color(vw, C_CRIT, A_BOLD) : A_NORMAL);
        char more[48] = "";
        if (last && rest > 0)
            snprintf(more, sizeof(more), " (+%zu more: h)", rest);
        char ev[128];
        if (warn_evidence_text(x, ev, sizeof(ev))[0])   /* first: the text may be cut */
            col += putf(y0 + lines, col, w - col, "%s: ", ev);
        int room = w - col - (int)strlen(more);
        col += put_untrusted(y0 + lines, col, room > 0 ? room : 0, x->text, vw);
        attrset(A_BOLD);
        putf(y0 + lines, col, w - col, "%s", more);
        attrset(A_NORMAL);
        lines++;
        shown++;
    }
    (void)shown;
    return lines;
}

/* ---- processes ---- */

static void prio_cell(char *buf, size_t n, const struct task_rates *t)
{
    snprintf(buf, n, "%s/%d%s", ioprio_class_name(t->prio.cls), t->prio.level,
             t->prio.source == IOS_EXPLICIT ? "" : "~");
}

static void draw_processes(const struct result *r, const struct verdicts *v, const struct rows *rows,
                           struct view *vw, int y0, int h, int w)
{
    bool on[COL_N];
    col_choose(w - 10, on);
    struct col_ctx cc = { .r = r, .v = v, .accumulated = vw->accumulated, .utf8 = vw->utf8 };
    attrset(color(vw, C_HEAD, A_BOLD | A_UNDERLINE));
    int x = 0;
    for (int i = 0; i < COL_N; i++) {
        const struct column *col = &col_table[i];
        if (!on[i] || col->width == 0)
            continue;
        x += putf(y0, x, w - x, col->right ? "%*s " : "%-*s ", col->width, col_title(col, &cc));
    }
    char title[512];
    /* The sort key is in the key line at the bottom: the columns leave this title little
     * room at 120 characters, and a filter matters more here. */
    snprintf(title, sizeof(title), "COMMAND%s%s%s%s%s", vw->filter[0] ? "  filter: " : "", vw->filter,
             vw->cg_filter[0] ? "  cgroup: " : "", vw->cg_filter, vw->only_active ? "  active only" : "");
    put_untrusted(y0, x, w - x, title, vw);
    for (int k = getcurx(stdscr); k < w && getcury(stdscr) == y0; k++)
        addch(' ');
    attrset(A_NORMAL);

    keep_in_view(&vw->proc_sel, &vw->proc_top, rows->nproc, h - 1);
    /* -p ids that matched nothing: said where their rows would be. */
    for (unsigned k = 0; rows->nproc == 0 && k < r->cur->npids_missing && (int)k + 1 < h; k++) {
        char txt[128];
        snapshot_pid_note(txt, sizeof(txt), &r->cur->pids_missing[k]);
        attrset(color(vw, C_WARN, A_BOLD));
        put_clip(y0 + 1 + (int)k, 0, w, txt);
        attrset(A_NORMAL);
    }
    for (int line = 1; line < h; line++) {
        size_t ri = vw->proc_top + (size_t)(line - 1);
        if (ri >= rows->nproc)
            break;
        size_t ti = rows->proc[ri];
        const char *role = role_name(ti < v->nroles ? v->roles[ti] : ROLE_NONE);
        bool sel = vw->focus == FOCUS_PROCESSES && ri == vw->proc_sel && vw->mode == MODE_MAIN;
        attr_t a = A_NORMAL;
        if (role && strcmp(role, "suffer") == 0)
            a = color(vw, C_WARN, A_BOLD);
        else if (role)
            a = color(vw, C_CRIT, A_BOLD);
        attrset(a | (sel ? A_REVERSE : 0));
        int y = y0 + line;
        x = 0;
        for (int i = 0; i < COL_N; i++) {
            const struct column *col = &col_table[i];
            if (!on[i])
                continue;
            /* Cells come escaped from the formatters: put as they are. */
            char cell[COL_CELL_MAX];
            if (pending_cell(r, vw, col->id, ti))
                snprintf(cell, sizeof(cell), PENDING);
            else
                col->format(cell, sizeof(cell), &cc, ti);
            if (col->width)
                x += putf(y, x, w - x, col->right ? "%*.*s " : "%-*.*s ", col->width, col->width, cell);
            else
                x += putf(y, x, w - x, "%s", cell);
        }
        if (sel)
            for (int k = x; k < w; k++)
                mvaddch(y, k, ' ');
        attrset(A_NORMAL);
    }
}

/* ---- detail views ---- */

struct lines {
    int y, h, w;
    const struct view *vw;
};

__attribute__((format(printf, 2, 3)))
static void ln(struct lines *l, const char *fmt, ...)
{
    if (l->y >= l->h)
        return;
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    /* The lines carry names from sysfs or from a recording anyone may have written (a
     * device, its tunables): the whole line goes through the terminal escaping, which
     * leaves the program's own text as it is. */
    put_untrusted(l->y++, 0, l->w, buf, l->vw);
}

/* A blank line, then a bold heading. */
static void ln_heading(struct lines *l, const char *title)
{
    ln(l, "%s", "");
    attrset(A_BOLD);
    ln(l, "%s", title);
    attrset(A_NORMAL);
}

static void ln_untrusted(struct lines *l, const char *label, const char *s, const struct view *vw)
{
    if (l->y >= l->h)
        return;
    int x = put_clip(l->y, 0, l->w, label);
    put_untrusted(l->y++, x, l->w - x, s, vw);
}

/* ---- the latency view: measured latency per I/O priority (issue 14) ---- */

/* Colour pairs of the heat map, low to high (tui.c setup_colors makes them): colour only
 * adds to the shading characters, which carry the figure alone. */
enum { C_HEAT = 16, C_HEAT_N = 4 };

/* Per priority before and after the last switch: p50/p99 of total latency merged over
 * the same windows as the figures above (before: up to 30 s before y; after: intervals
 * that began once the switch took). */
static void draw_switch_lat(struct lines *l, const struct switch_mark *m, const char *disk)
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

static void draw_latency(const struct result *r, struct view *vw, int h, int w)
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

/* Before and after the last scheduler switch, for a minute after it. */
static void draw_switch_figs(struct lines *l, const struct result *r, const char *disk)
{
    const struct view *vw = l->vw;
    const struct switch_mark *m = &vw->mark;
    double ago = r->cur->mono - m->mono;
    if (!m->active || strcmp(m->disk, disk) != 0 || ago > SWITCH_SHOW_S || ago < 0)
        return;
    char title[160];
    snprintf(title, sizeof(title), "Switched from %s to %s %.0f s ago", m->from, m->to, ago);
    ln_heading(l, title);
    struct dev_figs b = m->before, f = switch_after(m);
    char bh[32], fh[32];
    snprintf(bh, sizeof(bh), "before (%.0f s)", b.secs);
    snprintf(fh, sizeof(fh), f.n ? "after (%.0f s)" : "after (wait)", f.secs);
    ln(l, "  %-10s %14s %14s", "", bh, fh);
    const char *names[4] = { "IOPS", "await ms", "aqu-sz", "%util" };
    double bv[4] = { b.iops, b.await, b.aqu, b.util }, fv[4] = { f.iops, f.await, f.aqu, f.util };
    for (int i = 0; i < 4; i++) {
        char x[16], y[16];
        fmt_num(x, sizeof(x), bv[i], i == 1 || i == 2 ? 2 : 1);
        fmt_num(y, sizeof(y), fv[i], i == 1 || i == 2 ? 2 : 1);
        ln(l, "  %-10s %14s %14s", names[i], x, y);
    }
    draw_switch_lat(l, m, disk);
}

static void draw_device_detail(const struct result *r, const struct verdicts *v, struct view *vw, int h, int w)
{
    struct lines l = { 1, h - 1, w, vw };
    const struct dev_rates *d = NULL;
    size_t di = 0;
    for (size_t i = 0; i < r->ndevs; i++)
        if (strcmp(r->devs[i].dev->ds.name, vw->detail_dev) == 0) {
            d = &r->devs[i];
            di = i;
        }
    attrset(A_BOLD);
    ln(&l, "Device %s  (Esc: back)", vw->detail_dev);
    attrset(A_NORMAL);
    if (!d) {
        ln(&l, "gone: the device is no longer listed in /proc/diskstats");
        return;
    }
    const struct blockdev_info *b = &d->dev->bd;
    char list[200] = "";
    for (unsigned i = 0; i < b->nsched; i++) {
        strncat(list, i ? " " : "", sizeof(list) - strlen(list) - 1);
        strncat(list, b->schedulers[i], sizeof(list) - strlen(list) - 1);
    }
    ln(&l, "major:minor %u:%u  %s of %s  rotational %d  hw queues %d  inflight %ld", d->dev->ds.major,
       d->dev->ds.minor, b->partition ? "partition" : "whole disk", b->disk, b->rotational, b->hw_queues,
       b->inflight_r < 0 ? -1 : b->inflight_r + b->inflight_w);
    ln(&l, "scheduler %s  (offered: %s)  nr_requests %ld", b->scheduler[0] ? b->scheduler : "-", list,
       b->nr_requests);
    /* The stack, above and below (source/blkstack.h): what serves a bio-based device's
     * I/O is the scheduler of the disks at its bottom. */
    char stack[512];
    blkstack_line(snapshot_dev_stack, r->cur, d->dev->ds.name, vw->utf8 ? " \u2192 " : " -> ", stack,
                  sizeof(stack));
    if (stack[0])
        ln(&l, "stack %s%s", stack,
           !b->partition && b->nsched == 0 && b->hw_queues == 0 ? "  (bio-based: served by the disks below)" : "");
    for (unsigned i = 0; i < b->ntunables; i += 3) {
        char t[3][72] = { "", "", "" };
        for (unsigned k = 0; k < 3 && i + k < b->ntunables; k++)
            snprintf(t[k], sizeof(t[k]), "%s=%s", b->tunables[i + k].name, b->tunables[i + k].value);
        ln(&l, "  %-24s %-24s %-24s", t[0], t[1], t[2]);
    }
    char a[12][16];
    fmt_num(a[0], 16, d->r_s, 1), fmt_num(a[1], 16, d->w_s, 1), fmt_num(a[2], 16, d->rkb_s, 1);
    fmt_num(a[3], 16, d->wkb_s, 1), fmt_num(a[4], 16, d->r_await, 2), fmt_num(a[5], 16, d->w_await, 2);
    fmt_num(a[6], 16, d->aqu_sz, 2), fmt_num(a[7], 16, d->util, 1), fmt_num(a[8], 16, d->quiet_await, 2);
    fmt_num(a[9], 16, d->rareq_sz, 1), fmt_num(a[10], 16, d->wareq_sz, 1), fmt_num(a[11], 16, d->f_s, 1);
    ln(&l, "r/s %s  w/s %s  rkB/s %s  wkB/s %s  rareq-sz %s  wareq-sz %s  f/s %s", a[0], a[1], a[2], a[3],
       a[9], a[10], a[11]);
    ln(&l, "r_await %s  w_await %s  aqu-sz %s  %%util %s  quiet await %s  saturated %s", a[4], a[5], a[6],
       a[7], a[8], d->saturated < 0 ? "unknown" : d->saturated ? "YES" : "no");
    /* Where the interval's requests waited, measured by the BPF lens. */
    const struct lens_dev_interval *lv = &d->lens;
    if (lv->valid && lv->requests > 0) {
        char g[10][16];
        fmt_num(g[0], 16, lv->tag_ms, 2), fmt_num(g[1], 16, lv->sched_ms, 2);
        fmt_num(g[2], 16, lv->device_ms, 2), fmt_num(g[3], 16, lv->total_ms, 2);
        fmt_num(g[4], 16, lv->total_p99_ms, 2), fmt_num(g[5], 16, lv->busy_depth, 1);
        fmt_num(g[6], 16, lv->sched_queue, 1), fmt_num(g[7], 16, lv->growth, 1);
        ln(&l, "lens: tag %s  scheduler %s  device %s  total %s ms (p99 %s)  at the device %s  in the scheduler %s  growth %s",
           g[0], g[1], g[2], g[3], g[4], g[5], g[6], g[7]);
        /* the duty cycle (source/lens.h): the figures are the windows' */
        if (lv->duty < 1)
            ln(&l, "      watched %.0f%% of the interval (the lens's duty cycle on a fast machine): counts are estimates",
               lv->duty * 100);
        if (lv->held_back)
            ln(&l, "      the scheduler holds %s requests back while the device has free slots: their label is honoured, not saturation",
               lv->held_class >= 0 ? ioprio_class_name((enum ioprio_class)lv->held_class) : "lower-class");
    } else if (!r->cur->lens_on && r->cur->lens_msg[0]) {
        ln(&l, "lens %s", r->cur->lens_msg);
    }
    draw_switch_figs(&l, r, b->disk);
    if (vw->udev_rule[0] && strcmp(vw->udev_disk, b->disk) == 0) {
        ln_heading(&l, "To keep the switch after a reboot (a udev rule; iotriage writes no file)");
        ln(&l, "%s", vw->udev_rule);
    }
    ln_heading(&l, "Verdicts");
    unsigned nv = 0;
    for (size_t i = 0; i < v->n; i++)
        if (v->w[i].dev == (int)di) {
            char line[300];
            snprintf(line, sizeof(line), "  %-8s %-20s ", severity_name(v->w[i].sev), warn_code_name(v->w[i].code));
            ln_untrusted(&l, line, v->w[i].text, vw);
            nv++;
        }
    if (!nv)
        ln(&l, "  none");
    ln_heading(&l, "Processes doing I/O to it");
    for (size_t ti = 0; r->cur->tdevs && ti < r->ntasks; ti++) {
        const struct task_devs *td = &r->cur->tdevs[ti];
        bool hit = false;
        for (unsigned k = 0; k < td->n; k++)
            hit |= td->idx[k] == di;
        if (!hit)
            continue;
        const struct task_rates *t = &r->tasks[ti];
        char rb[16], wb[16], pr[16], line[96];
        fmt_rate(rb, 16, t->read_bps);
        fmt_rate(wb, 16, t->write_bps);
        prio_cell(pr, 16, t);
        snprintf(line, sizeof(line), "  %7d %-8s R %6s W %6s  ", (int)t->task->id, pr, rb, wb);
        ln_untrusted(&l, line, t->task->cmdline[0] ? t->task->cmdline : t->task->comm, vw);
    }
    /* Writeback is written by kernel threads for the processes that dirtied the pages:
     * its own row, from the bios the lens saw them submit (NAN: no lens). */
    if (!isnan(d->kernel_bps)) {
        char wb[16];
        fmt_rate(wb, sizeof(wb), d->kernel_bps);
        ln(&l, "  %7s %-8s   %6s W %6s  kernel threads: writeback of dirtied pages, journal", "-", "-", "",
           wb);
        /* For whom: the two biggest dirtiers (the lens's split), the unknown share too. */
        for (size_t k = 0; d->wb_valid && d->kernel_bps > 0 && k < d->nwb && k < 2; k++) {
            const struct wb_share *s = &d->wb[k];
            char who[WB_CGROUP_MAX + TASK_COMM_MAX + 64];
            double pct = 100.0 * s->bps / d->kernel_bps;
            char proc[TASK_COMM_MAX + 16] = "";
            if (s->pid)
                snprintf(proc, sizeof(proc), " %s[%d]", s->comm[0] ? s->comm : "?", (int)s->pid);
            if (!s->pid && !s->cgid)
                snprintf(who, sizeof(who), "%3.0f%% dirtier unknown", pct);
            else if (s->cgid)
                snprintf(who, sizeof(who), "%3.0f%% dirtied by%s in %s (cgroup from the %s)", pct, proc,
                         s->cgroup[0] ? s->cgroup : "a cgroup no listed process is in",
                         s->from == WB_FROM_BLKCG ? "kernel" : "lens");
            else
                snprintf(who, sizeof(who), "%3.0f%% dirtied by%s", pct, proc);
            ln_untrusted(&l, "                                      ", who, vw);
        }
    }
}

/* What libproc2 says of the process (source/procinfo.h), live only. */
static void draw_pinfo(struct lines *l, const struct procinfo *p)
{
    char up[32] = "-", rss[24] = "-", swp[24] = "-", flt[24] = "-";
    if (p->elapsed_s >= 0) {
        long e = (long)p->elapsed_s;
        if (e >= 86400)
            snprintf(up, sizeof(up), "%ldd%02ldh", e / 86400, e / 3600 % 24);
        else if (e >= 3600)
            snprintf(up, sizeof(up), "%ldh%02ldm", e / 3600, e / 60 % 60);
        else
            snprintf(up, sizeof(up), "%ldm%02lds", e / 60, e % 60);
    }
    if (p->rss_kb >= 0)
        fmt_rate(rss, sizeof(rss), (double)p->rss_kb * 1024.0);
    if (p->swap_kb >= 0)
        fmt_rate(swp, sizeof(swp), (double)p->swap_kb * 1024.0);
    if (p->maj_flt >= 0)
        snprintf(flt, sizeof(flt), "%lld", p->maj_flt);
    ln(l, "now       %c %s%s   up %s   rss %s   swap %s   major faults %s", p->state ? p->state : '?',
       p->wchan[0] ? "in " : "", p->wchan[0] ? p->wchan : (p->state == 'R' ? "running" : ""), up, rss, swp, flt);
    ln_untrusted(l, "cgroup    ", p->cgroup[0] ? p->cgroup : "-", l->vw);
}

static void draw_process_detail(const struct result *r, const struct verdicts *v, struct view *vw, int h, int w)
{
    struct lines l = { 1, h - 1, w, vw };
    const struct task_rates *t = NULL;
    size_t ti = 0;
    for (size_t i = 0; i < r->ntasks; i++)
        if (r->tasks[i].task->id == vw->detail_pid && r->tasks[i].task->start_ticks == vw->detail_start) {
            t = &r->tasks[i];
            ti = i;
        }
    attrset(A_BOLD);
    ln(&l, "%s %d  (Esc: back)", r->cur->threads ? "Thread" : "Process", (int)vw->detail_pid);
    attrset(A_NORMAL);
    if (!t) {
        ln(&l, "exited");
        return;
    }
    const struct task_sample *s = t->task;
    ln_untrusted(&l, "name      ", s->comm, vw);
    ln_untrusted(&l, "command   ", s->cmdline_pending ? PENDING : s->cmdline, vw);
    ln_untrusted(&l, "user      ", s->user, vw);
    ln(&l, "threads   %d   nice %d   policy %d   state %c", s->nlwp, s->nice, s->policy, s->state ? s->state : '?');
    if (vw->have_pinfo)
        draw_pinfo(&l, &vw->pinfo);
    const char *origin = t->prio.source == IOS_EXPLICIT ? "set explicitly (ionice / ioprio_set)"
                         : t->prio.source == IOS_NICE ? "derived from nice: level (nice+20)/5, best-effort"
                                                      : "derived from the scheduling policy";
    if (s->ioprio_raw >= 0)
        ln(&l, "ioprio    %s/%d  (raw 0x%04x: class %s)  %s", ioprio_class_name(t->prio.cls), t->prio.level,
           (unsigned)s->ioprio_raw, ioprio_class_name((enum ioprio_class)IOPRIO_CLASS_OF(s->ioprio_raw)), origin);
    else
        ln(&l, "ioprio    %s/%d  (raw unreadable)  %s", ioprio_class_name(t->prio.cls), t->prio.level, origin);
    char rb[16], wb[16], cb[16], d1[16], d2[16], aw[16];
    fmt_rate(rb, 16, t->read_bps), fmt_rate(wb, 16, t->write_bps), fmt_rate(cb, 16, t->cancelled_write_bps);
    fmt_num(d1, 16, t->delay_valid ? t->io_delay_pct : (double)NAN, 1);
    fmt_num(d2, 16, t->delay_valid ? t->swapin_delay_pct : (double)NAN, 1);
    fmt_num(aw, 16, t->blkio_avg_ms, 2);
    ln(&l, "read %s/s  write %s/s  cancelled %s/s%s", rb, wb, cb, s->io_err ? "  (io counters unreadable)" : "");
    ln(&l, "block-I/O delay %s%%  swap-in delay %s%%  mean wait %s ms%s", d1, d2, aw,
       t->delay_overcount ? "  (kernel over-counted: capped)"
       : t->io_delay_source == DELAY_SRC_SAMPLED ? "  (estimated from sampled thread states)" : "");
    char devs[128];
    fmt_task_devs(devs, sizeof(devs), r, ti, "?");
    const char *role = role_name(ti < v->nroles ? v->roles[ti] : ROLE_NONE);
    ln(&l, "devices   %s   role %s", devs, role ? role : "-");
    ln_heading(&l, "Verdicts");
    unsigned nv = 0;
    for (size_t i = 0; i < v->n; i++)
        if (v->w[i].task == (int)ti) {
            char line[64];
            snprintf(line, sizeof(line), "  %-20s ", warn_code_name(v->w[i].code));
            ln_untrusted(&l, line, v->w[i].text, vw);
            nv++;
        }
    if (!nv)
        ln(&l, "  none%s", ioprio_is_default(t->prio) ? " (default priority: nothing to honour or ignore)" : "");
    if (r->cur->threads) {
        char title[64];
        snprintf(title, sizeof(title), "Threads of process %d", (int)s->tgid);
        ln_heading(&l, title);
        for (size_t i = 0; i < r->ntasks; i++) {
            const struct task_rates *o = &r->tasks[i];
            if (o->task->tgid != s->tgid)
                continue;
            char pr[16], dl[16];
            prio_cell(pr, 16, o);
            fmt_num(dl, 16, o->delay_valid ? o->io_delay_pct : (double)NAN, 1);
            char line[80];
            snprintf(line, sizeof(line), "  %7d %-8s delay %6s%%  ", (int)o->task->id, pr, dl);
            ln_untrusted(&l, line, o->task->comm, vw);
        }
    } else if (vw->threads_total > 0) {
        char title[64];
        snprintf(title, sizeof(title), "Threads (%zu): each has its own I/O priority", vw->threads_total);
        ln_heading(&l, title);
        for (size_t i = 0; i < vw->nthreads; i++) {
            const struct thread_info *th = &vw->threads[i];
            struct ioprio_eff e = ioprio_effective(th->ioprio_raw, th->nice, th->policy);
            char line[120];
            snprintf(line, sizeof(line), "  %7d %s/%d%s  nice %3d  %c %-22.22s ", (int)th->tid, ioprio_class_name(e.cls),
                     e.level, e.source == IOS_EXPLICIT ? " " : "~", th->nice, th->state ? th->state : '?',
                     th->wchan[0] ? th->wchan : "");
            ln_untrusted(&l, line, th->comm, vw);
        }
        if (vw->threads_total > vw->nthreads)
            ln(&l, "  ... and %zu more (shown: the leader, those the lens saw waiting on I/O, then by tid)",
               vw->threads_total - vw->nthreads);
    }
}

/* ---- dialogs ---- */

/* Put s from row y, wrapped at width w (at a space when one is near), at most rows rows.
 * Returns the rows used, or -1 when s did not fit in them. */
static int put_wrap(int y, int w, int rows, const char *s)
{
    int used = 0;
    size_t left = strlen(s);
    while (used < rows) {
        /* how many bytes fit in w columns */
        mbstate_t st;
        memset(&st, 0, sizeof(st));
        size_t fit = 0, last_space = 0;
        int cols = 0;
        while (fit < left) {
            wchar_t wc;
            size_t n = mbrtowc(&wc, s + fit, left - fit, &st);
            if (n == (size_t)-1 || n == (size_t)-2 || n == 0)
                n = 1, wc = L'?';
            int cw = wcwidth(wc);
            if (cw < 0)
                cw = 1;
            if (cols + cw > w)
                break;
            cols += cw;
            fit += n;
            if (wc == L' ')
                last_space = fit;
        }
        if (fit < left && last_space > (size_t)w / 2)
            fit = last_space;
        char buf[DLG_LINE_MAX + 8];
        size_t k = fit < sizeof(buf) - 1 ? fit : sizeof(buf) - 1;
        memcpy(buf, s, k);
        buf[k] = '\0';
        put_clip(y + used, 0, w, buf);
        used++;
        s += fit;
        left -= fit;
        if (left == 0)
            return used;
        if (fit == 0)
            return -1;
        while (*s == ' ' && left)
            s++, left--;
    }
    return -1;
}

static void draw_dialog(struct view *vw, int h, int w)
{
    struct dialog *g = &vw->dlg;
    int y = 1, last = h - 2;             /* the key line takes the bottom row */
    bool whole = true;
    attrset(color(vw, C_TITLE, A_BOLD));
    int n = put_wrap(y, w, last - y + 1, g->title);
    attrset(A_NORMAL);
    whole &= n > 0;
    y += n > 0 ? n : last - y + 1;
    y++;
    for (unsigned i = 0; i < g->nlines && y <= last; i++) {
        bool item = g->nitems && i >= g->first_item && i < g->first_item + g->nitems;
        bool sel = item && i - g->first_item == g->sel;
        char line[DLG_LINE_MAX + 8];
        snprintf(line, sizeof(line), "%s%s", item ? (sel ? "> " : "  ") : "", g->lines[i]);
        if (sel)
            attrset(A_REVERSE | A_BOLD);
        n = put_wrap(y, w, last - y + 1, line);
        if (sel) {
            for (int k = getcurx(stdscr); k < w && getcury(stdscr) == y; k++)
                addch(' ');
            attrset(A_NORMAL);
        }
        whole &= n > 0;
        y += n > 0 ? n : last - y + 1;
        if (i + 1 < g->nlines && y > last)
            whole = false;
    }
    attrset(A_BOLD);
    int kw = put_clip(h - 1, 0, w, g->keys);
    attrset(A_NORMAL);
    whole &= (size_t)kw >= strlen(g->keys);
    g->complete = whole;
    if (vw->message[0]) {                /* why a key was refused: over the key line */
        move(h - 1, 0);
        clrtoeol();
        attrset(color(vw, C_WARN, A_BOLD));
        put_clip(h - 1, 0, w, vw->message);
        attrset(A_NORMAL);
    }
}

static void draw_help(struct view *vw, int h, int w)
{
    static const char *const text[] = {
        "iotriage keys",
        "",
        "  q            quit                     h ?        this help",
        "  Tab          devices / processes      arrows PgUp PgDn Home End  move",
        "  Enter        details of the selection Esc        back",
        "  < >  F6      sort column              r          reverse the order",
        "  o            only processes doing I/O P          threads instead of processes",
        "  a            totals since start       D          show partitions",
        "  c            cgroups (Enter: its processes)  F   filesystems, deleted-open files",
        "  /            filter by command/user   d          change the interval",
        "  space        refresh now              p          pause",
        "  replay:      Left/Right (b n) step    + -        speed     g G  first/last",
        "",
        "Actions (each asks first: y applies, n or Esc writes nothing; --read-only refuses):",
        "  s            switch the I/O scheduler of the selected device (or device view)",
        "  u            undo the last switch (scheduler and nr_requests)",
        "  i            set the I/O priority of the selected process, on all its threads",
        "  A            turn delay accounting (kernel.task_delayacct) on, or back off",
        "  F, Enter on a holder of a deleted file: signal it to reopen (HUP...) or truncate it",
        "  / on devices filter the devices by name",
        "",
        "Banner: labels the device's scheduler ignores, full queues (a lottery),",
        "hidden queues; docs/verdicts.md explains each code. '-' is unknown, never 0.",
        "'..' is pending: the first screen comes before the first interval ends.",
        "IODLY% comes from delay accounting (taskstats) or, for tasks it does not cover",
        "(started before it was on), from the BPF lens's iowait; --no-bpf turns it off.",
        "Without either, it is estimated from the threads' state sampled ten times an",
        "interval (D in an I/O wait), shown with ~ (JSON io_delay_source \"sampled\").",
        "The lens also times each request's stages in the device view (Enter), and l",
        "there shows its latency per I/O priority: the last interval's histogram and a",
        "heat map of the last minutes (Tab: priority; ^ marks a scheduler switch).",
        "",
        "Process columns (the narrowest screens drop the last ones first):",
    };
    attrset(A_NORMAL);
    int y = 1;
    for (int i = 0; i < (int)ARRAY_SIZE(text) && y < h; i++)
        put_clip(y++, 0, w, text[i]);
    for (int i = 0; i < COL_N && y < h; i++) {
        char line[200];
        snprintf(line, sizeof(line), "  %-8s %s", col_table[i].title, col_table[i].help);
        put_clip(y++, 0, w, line);
    }
    (void)vw;
}

static void draw_bottom(struct view *vw, int y, int w)
{
    if (vw->prompt[0]) {
        attrset(A_BOLD);
        int x = putf(y, 0, w, "%s", vw->prompt);
        attrset(A_NORMAL);
        put_untrusted(y, x, w - x, vw->input, vw);
        curs_set(1);
        return;
    }
    curs_set(0);
    if (vw->message[0]) {
        attrset(color(vw, C_WARN, A_BOLD));
        put_clip(y, 0, w, vw->message);
        attrset(A_NORMAL);
        return;
    }
    attrset(color(vw, C_DIM, A_DIM));
    if (vw->mode == MODE_DEVICE || vw->mode == MODE_LATENCY) {
        const char *sw = vw->replay_total ? "" : "  s scheduler  u undo";
        putf(y, 0, w, "q quit  Esc back  %s%s", vw->mode == MODE_DEVICE ? "l latency per priority" :
             "Tab/Up/Down priority", sw);
        attrset(A_NORMAL);
        return;
    }
    if (vw->replay_total)
        put_clip(y, 0, w, "q quit  h help  <-/-> step  +/- speed  g/G first/last  p pause  Enter details  / filter");
    else
    {
        char keys[200];
        snprintf(keys, sizeof(keys), "q quit  h help  Tab focus  Enter details  i ionice  </> sort: %s%s  o active  "
                 "P threads  / filter  c cgroups  F filesystems", col_table[vw->sort].sort_name, vw->reverse ? " asc" : "");
        put_clip(y, 0, w, vw->focus == FOCUS_DEVICES
                              ? "q quit  h help  Tab focus  Enter details  s scheduler  u undo  / filter  p pause"
                              : keys);
    }
    attrset(A_NORMAL);
}

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

static void draw_cgroups(const struct result *r, const struct verdicts *v, struct view *vw, int h, int w)
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

/* ---- the filesystems view: space, time to full, space held by deleted files ---- */

/* 115 columns: the row fits at 120 */
#define FS_ROW_FMT "%-22.22s %-8.8s %-11.11s %6s %6s %6s %5s %7s %8s %8s %9s %8s"

/* One filesystem's row. */
static void fs_row(const struct result *r, size_t i, char *buf, size_t n, bool *warn)
{
    const struct fs_rates *fr = &r->fss[i];
    const struct fs_sample *fs = fr->fs;
    const struct fs_mount *m = &fs->fs;
    const struct snapshot *c = r->cur;
    char size[16], used[16], avail[16], inodes[16], wr[16], fill[32], full[24], del[16], use[16];
    snprintf(inodes, sizeof(inodes), "-");
    if (m->statfs_err == 0) {
        fmt_size(size, sizeof(size), (double)m->size);
        fmt_size(used, sizeof(used), (double)m->used);
        fmt_size(avail, sizeof(avail), (double)m->avail);
        /* a count, not bytes: decimal k and M */
        if (m->inodes_used >= 0 && m->inodes_used < 100000)
            snprintf(inodes, sizeof(inodes), "%lld", (long long)m->inodes_used);
        else if (m->inodes_used >= 0)
            snprintf(inodes, sizeof(inodes), m->inodes_used < 10000000 ? "%.0fk" : "%.1fM",
                     m->inodes_used < 10000000 ? (double)m->inodes_used / 1e3 : (double)m->inodes_used / 1e6);
    } else {
        snprintf(size, sizeof(size), "-");
        snprintf(used, sizeof(used), "-");
        snprintf(avail, sizeof(avail), "-");
    }
    fmt_rate(wr, sizeof(wr), fr->write_bps);
    fmt_signed_rate(fill, sizeof(fill), fr->fill_bps);      /* negative: it empties */
    if (fs->deleted_known) {
        fmt_size(del, sizeof(del), (double)fs->deleted_bytes);
        if (!fs->deleted_complete)  /* a lower bound, as in -b: not every process was seen */
            strcat(del, "+");
    } else {
        snprintf(del, sizeof(del), "-");
    }
    fmt_num(use, sizeof(use), fr->used_pct, 1);
    if (isnan(fr->full_in_s))
        snprintf(full, sizeof(full), "-");
    else if (fr->full_in_s < 3600)
        snprintf(full, sizeof(full), "%.0f min", fr->full_in_s / 60);
    else
        snprintf(full, sizeof(full), "%.1f h", fr->full_in_s / 3600);
    const char *dev = fs->dev_idx >= 0 ? c->devs[fs->dev_idx].ds.name : m->m.fstype;
    const char *sched = fs->disk_idx >= 0 && c->devs[fs->disk_idx].bd.scheduler[0]
                            ? c->devs[fs->disk_idx].bd.scheduler : "-";
    snprintf(buf, n, FS_ROW_FMT, m->m.mount, dev, sched, size, used, avail, use, inodes, wr, fill, full, del);
    *warn = (!isnan(fr->used_pct) && fr->used_pct > 90) || !isnan(fr->full_in_s);
}

static void draw_filesystems(const struct result *r, struct view *vw, int h, int w)
{
    attrset(A_BOLD);
    put_clip(1, 0, w, "Filesystems  (Esc: back; DELETED: held by files with no name left, still open; "
                      "Enter on a holder: give it back)");
    attrset(color(vw, C_HEAD, A_BOLD | A_UNDERLINE));
    putf(2, 0, w, FS_ROW_FMT, "MOUNT", "DEVICE", "SCHED", "SIZE", "USED", "AVAIL", "USE%", "INODES", "WRITE/s", "FILL/s",
         "FULL IN", "DELETED");
    attrset(A_NORMAL);
    /* How FULL IN is reached, where it is read (delta.h: fs_rates). */
    attrset(color(vw, C_DIM, A_DIM));
    put_clip(h - 2, 0, w, "FULL IN: available / the rate used space grew over the last 3 intervals, only when it grew "
                          "in each (steady); '-' unknown");
    attrset(A_NORMAL);
    h--;
    if (!r->cur->fs_taken || r->nfss == 0) {
        put_clip(3, 0, w, r->cur->fs_taken ? "no filesystem backed by a block device" : "filesystems not sampled in this frame");
        return;
    }
    /* Lines: every filesystem's row, and below the selected one its deleted-but-open
     * files, each followed by one line per holder (the lines the selection walks). */
    if (vw->fs_sel >= r->nfss)
        vw->fs_sel = r->nfss - 1;
    const struct fs_sample *sfs = r->fss[vw->fs_sel].fs;
    size_t items = fs_items(sfs);
    fs_item_sync(vw, sfs);
    size_t nfiles = sfs->deleted_known ? sfs->ndel : 0;
    size_t total = r->nfss + nfiles + items;
    size_t sel_line = vw->fs_sel, file = 0, holder = 0;
    if (fs_item_find(sfs, vw->fs_item, &file, &holder))
        sel_line += 1 + file + 1 + (vw->fs_item - 1);   /* the rows above, its file lines, its holders */
    keep_in_view(&sel_line, &vw->fs_top, total, h - 4);
    int y = 3;
    size_t line = 0;
    for (size_t i = 0; i < r->nfss && y < h - 1; i++) {
        if (line++ >= vw->fs_top) {
            char buf[512];
            bool warn;
            fs_row(r, i, buf, sizeof(buf), &warn);
            attrset((warn ? color(vw, C_WARN, A_BOLD) : A_NORMAL) |
                    (i == vw->fs_sel && vw->fs_item == 0 ? A_REVERSE : 0));
            put_untrusted(y++, 0, w, buf, vw);
            attrset(A_NORMAL);
        }
        if (i != vw->fs_sel)
            continue;
        size_t item = 0;
        for (size_t k = 0; k < nfiles && y < h - 1; k++) {
            const struct fs_deleted_file *d = &sfs->del[k];
            if (line++ >= vw->fs_top) {
                char bl[16], sz[16], dl[640];
                fmt_size(bl, sizeof(bl), (double)d->blocks_bytes);
                fmt_size(sz, sizeof(sz), (double)d->size);
                snprintf(dl, sizeof(dl), "    deleted %7s  %s  (size %s)", bl, d->path ? d->path : "?", sz);
                put_untrusted(y++, 0, w, dl, vw);
            }
            for (size_t j = 0; j < d->nholders && y < h - 1; j++) {
                item++;
                if (line++ < vw->fs_top)
                    continue;
                const struct fs_holder *ho = &d->holders[j];
                char hl[160];
                snprintf(hl, sizeof(hl), "      held by %s[%d] fd %d %s", ho->comm[0] ? ho->comm : "?", (int)ho->pid,
                         ho->fd, fs_holder_mode(ho));
                bool sel = item == vw->fs_item;
                attrset(sel ? A_REVERSE : A_NORMAL);
                int x = put_untrusted(y, 0, w, hl, vw);
                if (sel)
                    for (; x < w - 1; x++)
                        addch(' ');
                attrset(A_NORMAL);
                y++;
            }
        }
    }
}

void draw_screen(const struct result *r, const struct verdicts *v, const struct rows *rows, struct view *vw)
{
    int h = LINES, w = COLS;
    erase();
    vw->dlg.complete = false;
    if (w < 30 || h < 8) {
        char size[32];
        snprintf(size, sizeof(size), "%dx%d, need 30x8", w, h);
        put_clip(0, 0, w, "terminal too small");
        if (h > 1)
            put_clip(1, 0, w, size);
        refresh();
        return;
    }
    draw_header(r, vw, w);
    if (!r) {
        put_clip(2, 0, w, "first sample in progress...");
        draw_bottom(vw, h - 1, w);
        refresh();
        return;
    }
    if (vw->dlg.kind != DLG_NONE) {
        draw_dialog(vw, h, w);
        refresh();
        return;
    }
    if (vw->mode == MODE_HELP) {
        draw_help(vw, h - 1, w);
    } else if (vw->mode == MODE_DEVICE) {
        draw_device_detail(r, v, vw, h, w);
    } else if (vw->mode == MODE_LATENCY) {
        draw_latency(r, vw, h, w);
    } else if (vw->mode == MODE_PROCESS) {
        draw_process_detail(r, v, vw, h, w);
    } else if (vw->mode == MODE_CGROUPS) {
        draw_cgroups(r, v, vw, h, w);
    } else if (vw->mode == MODE_FILESYSTEMS) {
        draw_filesystems(r, vw, h, w);
    } else {
        draw_psi(r, vw, 1, w);
        int y = 2;
        int avail = h - 3;                      /* header, PSI, bottom line */
        int banner_max = avail >= 20 ? 3 : avail >= 12 ? 2 : 1;
        int used = draw_banner(v, vw, y, banner_max, w);
        y += used;
        avail -= used;
        int dev_h = (int)rows->ndev + 1;
        int dev_max = avail / 3 > 2 ? avail / 3 : 2;
        if (dev_h > dev_max)
            dev_h = dev_max;
        draw_devices(r, rows, vw, y, dev_h, w);
        y += dev_h;
        avail -= dev_h;
        if (avail >= 2)
            draw_processes(r, v, rows, vw, y, avail, w);
    }
    draw_bottom(vw, h - 1, w);
    refresh();
}
