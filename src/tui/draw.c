/* SPDX-License-Identifier: GPL-2.0-or-later */
/* tui/draw.c: the screen, drawn from the model and the view state; reads, never changes
 * the model. Every untrusted string goes through esc_display before it reaches curses.
 *
 * This file holds what every view uses (clipped and escaped text, columns, the first
 * frame, the header, lines of a detail view), the dialogs' and the help's painting, the
 * bottom line, and draw_screen, which picks the view; each view is in a view_*.c file
 * of its own (tui/draw.h lists what they share). */
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
#include "util.h"
#include "tui/draw.h"

attr_t color(const struct view *vw, int pair, attr_t mono)
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
int put_clip(int y, int x, int maxw, const char *s)
{
    int used;
    size_t n = fit_cols(s, maxw, SIZE_MAX, &used);
    move(y, x);
    if (n)
        addnstr(s, (int)n);
    return used;
}

__attribute__((format(printf, 4, 5)))
int putf(int y, int x, int maxw, const char *fmt, ...)
{
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    return put_clip(y, x, maxw, buf);
}

/* Untrusted bytes: escaped first. */
int put_untrusted(int y, int x, int maxw, const char *s, const struct view *vw)
{
    char buf[1024];
    esc_display(buf, sizeof(buf), s, strlen(s), vw->utf8);
    return put_clip(y, x, maxw, buf);
}

/* A column of a row made of untrusted bytes: s escaped, cut and padded to exactly width
 * columns of what is drawn (a printf width counts the bytes before escaping: an escape
 * or a character of several bytes moved the columns after it). cap > width. */
void untrusted_cell(char *dst, size_t cap, const char *s, int width, const struct view *vw)
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

void fmt_num(char *buf, size_t n, double v, int prec)
{
    if (isnan(v))
        snprintf(buf, n, "-");
    else
        snprintf(buf, n, "%.*f", prec, v);
}

/* ---- columns: chosen by priority until the width is used, drawn in table order ---- */

/* Columns in priority order until the first that does not fit: a narrow column of low
 * priority never takes the place of a wider, more important one. */
int choose_cols(const struct col *cols, int n, int width, bool *on)
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
void keep_in_view(size_t *sel, size_t *top, size_t n, int visible)
{
    if (*sel >= n)
        *sel = n ? n - 1 : 0;
    if (*sel < *top)
        *top = *sel;
    if (visible > 0 && *sel >= *top + (size_t)visible)
        *top = *sel - (size_t)(visible - 1);
}

/* ---- the first frame ---- */

/* The live frame of one snapshot (pipeline_preview): every rate is still to come. A
 * recording's frames always span an interval. */
bool first_frame(const struct result *r, const struct view *vw)
{
    return r && r->interval_s <= 0 && !vw->replay_total;
}

/* A process-table cell that needs an interval (READ and WRITE as totals since the task
 * started do not), or DEV before the first scan of a process's open files (snapshot.c:
 * scan_deferred; the set is not known and no error says why). */
bool pending_cell(const struct result *r, const struct view *vw, enum col_id id, size_t ti)
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
    case COL_INFLT:
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

/* ---- detail views ---- */

__attribute__((format(printf, 2, 3)))
void ln(struct lines *l, const char *fmt, ...)
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
void ln_heading(struct lines *l, const char *title)
{
    ln(l, "%s", "");
    attrset(A_BOLD);
    ln(l, "%s", title);
    attrset(A_NORMAL);
}

void ln_untrusted(struct lines *l, const char *label, const char *s, const struct view *vw)
{
    if (l->y >= l->h)
        return;
    int x = put_clip(l->y, 0, l->w, label);
    put_untrusted(l->y++, x, l->w - x, s, vw);
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
        "  t            a scheduler trial: measure, switch, measure, keep or put back",
        "  u            undo switches, the last first (scheduler, nr_requests)",
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
        const char *sw = vw->replay_total ? "" : "  s scheduler  t trial  u undo";
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
                              ? "q quit  h help  Tab focus  Enter details  s scheduler  t trial  u undo  / filter  p pause"
                              : keys);
    }
    attrset(A_NORMAL);
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
