/* SPDX-License-Identifier: GPL-2.0-or-later */
/* tui/draw.h: private to the screen's painting: what tui/draw.c gives the views drawn
 * in tui/view_*.c (text clipped and escaped, colours, columns, the first frame, lines of
 * a detail view), and the views' drawing functions that draw_screen calls. Only the
 * painting files include it; the rest of the program sees tui/view.h. */
#ifndef IOTRIAGE_TUI_DRAW_H
#define IOTRIAGE_TUI_DRAW_H

#include <curses.h>
#include <stdbool.h>
#include <stddef.h>

#include "tui/view.h"

/* Colour pairs (tui.c setup_colors makes them); color() falls back to mono attributes. */
enum { C_TITLE = 1, C_CRIT, C_WARN, C_INFO, C_SAT, C_HEAD, C_DIM };

/* A column of a panel drawn by choose_cols: its title, width and priority. */
struct col {
    const char *title;
    int width;                       /* 0: takes the rest */
    int prio;                        /* lower comes first when space is short */
    bool right;
};

/* What a figure that needs an interval shows on the first frame, made from one snapshot
 * before the first interval ended: neither a number nor "-" (unknown), but "not yet". */
#define PENDING ".."

/* A detail view's lines: the next row y of h, each w wide (ln and friends). */
struct lines {
    int y, h, w;
    const struct view *vw;
};

/* tui/draw.c: the primitives. put_clip, putf: the program's own text, cut at maxw
 * columns; put_untrusted, untrusted_cell: a name from outside, escaped first; each
 * returns the columns it took. */
attr_t color(const struct view *vw, int pair, attr_t mono);
int put_clip(int y, int x, int maxw, const char *s);
__attribute__((format(printf, 4, 5)))
int putf(int y, int x, int maxw, const char *fmt, ...);
int put_untrusted(int y, int x, int maxw, const char *s, const struct view *vw);
void untrusted_cell(char *dst, size_t cap, const char *s, int width, const struct view *vw);
void fmt_num(char *buf, size_t n, double v, int prec);
int choose_cols(const struct col *cols, int n, int width, bool *on);
void keep_in_view(size_t *sel, size_t *top, size_t n, int visible);
bool first_frame(const struct result *r, const struct view *vw);
bool pending_cell(const struct result *r, const struct view *vw, enum col_id id, size_t ti);
__attribute__((format(printf, 2, 3)))
void ln(struct lines *l, const char *fmt, ...);
void ln_heading(struct lines *l, const char *title);
void ln_untrusted(struct lines *l, const char *label, const char *s, const struct view *vw);

/* tui/view_main.c: the main screen's panels (prio_cell: also the process detail's) */
void draw_devices(const struct result *r, const struct rows *rows, struct view *vw, int y0,
                  int h, int w);
int draw_banner(const struct verdicts *v, const struct view *vw, int y0, int maxlines, int w);
void prio_cell(char *buf, size_t n, const struct task_rates *t);
void draw_processes(const struct result *r, const struct verdicts *v, const struct rows *rows,
                    struct view *vw, int y0, int h, int w);

/* tui/view_latency.c (draw_switch_lat: also the device detail's) */
void draw_switch_lat(struct lines *l, const struct switch_mark *m, const char *disk);
void draw_latency(const struct result *r, struct view *vw, int h, int w);

/* tui/view_detail.c: Enter on a device, on a process */
void draw_device_detail(const struct result *r, const struct verdicts *v, struct view *vw, int h, int w);
void draw_process_detail(const struct result *r, const struct verdicts *v, struct view *vw, int h, int w);

/* tui/view_cgroups.c */
void draw_cgroups(const struct result *r, const struct verdicts *v, struct view *vw, int h, int w);

/* tui/view_fs.c */
void draw_filesystems(const struct result *r, struct view *vw, int h, int w);

#endif
