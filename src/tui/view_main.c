/* SPDX-License-Identifier: GPL-2.0-or-later */
/* tui/view_main.c: the main screen's panels: the devices with their sparklines, the
 * verdicts' banner and the processes (draw_screen lays them out; tui/draw.h). */
#define _XOPEN_SOURCE_EXTENDED 1
#include <curses.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "util/escape.h"
#include "out/columns.h"
#include "util/fmt.h"
#include "util.h"
#include "util/num.h"
#include "tui/draw.h"

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

void draw_devices(const struct result *r, const struct rows *rows, struct view *vw, int y0,
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

int draw_banner(const struct verdicts *v, const struct view *vw, int y0, int maxlines, int w)
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

void prio_cell(char *buf, size_t n, const struct task_rates *t)
{
    snprintf(buf, n, "%s/%d%s", ioprio_class_name(t->prio.cls), t->prio.level,
             t->prio.source == IOS_EXPLICIT ? "" : "~");
}

void draw_processes(const struct result *r, const struct verdicts *v, const struct rows *rows,
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
