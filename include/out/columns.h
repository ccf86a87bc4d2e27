/* SPDX-License-Identifier: GPL-2.0-or-later */
/* out/columns.h: the process table's columns, one table for every output that shows it.
 *
 * The batch text (out/text.c), the screen (tui/view_main.c), the sort keys (`<` `>` on the
 * screen, the order of both), the help screen and `iotriage --list-columns` are all made
 * from col_table[]. Adding a column is one entry there and its formatter.
 *
 * Contract
 * - A formatter writes the cell of task ti of ctx->r into buf (at most n bytes with its
 *   NUL, n >= COL_CELL_MAX) and returns its length. What comes from outside (user and
 *   command names) is escaped for the terminal (util/escape.h); unknown is "-", never 0.
 * - col_sort() orders row indices by one column, as the screen and the text output show
 *   them: numbers high first (the busiest on top, like top), names A to Z, then by bytes
 *   moved, then by id. Columns marked active_first put the tasks doing or waiting on I/O
 *   (task_is_active) before every other, whatever is unknown about them: a reader whose
 *   delay cannot be known still comes before a shell that waited 0.0 %.
 * - Nothing here keeps state between calls.
 */
#ifndef IOTRIAGE_OUT_COLUMNS_H
#define IOTRIAGE_OUT_COLUMNS_H

#include <stdbool.h>
#include <stddef.h>

#include "delta.h"
#include "verdict.h"

#define COLUMNS(X)                                                                        \
    X(COL_PID,     "PID")     X(COL_USER,  "USER")  X(COL_PRIO,    "PRIO")               \
    X(COL_FROM,    "FROM")    X(COL_READ,  "READ/s") X(COL_WRITE,  "WRITE/s")            \
    X(COL_IODLY,   "IODLY%")  X(COL_INFLT, "INFLT") X(COL_SWAP,    "SWAP%")              \
    X(COL_AVGWAIT, "AVGWAIT")                                                             \
    X(COL_ROLE,    "ROLE")    X(COL_DEV,   "DEV")   X(COL_UNIT,    "UNIT")               \
    X(COL_COMMAND, "COMMAND")

#define X_ENUM(e, title) e,
enum col_id { COLUMNS(X_ENUM) COL_N };
#undef X_ENUM

#define COL_CELL_MAX 512

/* What a cell is drawn from. */
struct col_ctx {
    const struct result *r;
    const struct verdicts *v;
    bool accumulated;                /* READ and WRITE as totals since the task started */
    bool utf8;                       /* the terminal takes UTF-8 (escaping) */
};

struct column {
    enum col_id id;
    const char *title;               /* the header, as in COLUMNS() */
    const char *sort_name;           /* the sort key's name on the screen ("IODLY") */
    int   width;                     /* cells are padded or cut to it; 0: the rest of the line */
    int   drop;                      /* 0 always shown; higher numbers go first when narrow */
    bool  right;                     /* right-aligned (numbers) */
    bool  active_first;              /* sorting puts active tasks first (see above) */
    size_t (*format)(char *buf, size_t n, const struct col_ctx *c, size_t ti);
    /* The sort key: a number (higher first) ... */
    double (*sort_num)(const struct col_ctx *c, size_t ti);
    /* ... or, when sort_num is NULL, the text of the cell compared A to Z. */
    const char *help;                /* one line for the help screen and --list-columns */
};

extern const struct column col_table[COL_N];

/* The column the screen and the text output sort by unless told otherwise. */
#define COL_DEFAULT_SORT COL_IODLY

/* The header of a column in this context: PID is TID for threads, READ/s is READ for
 * totals. */
const char *col_title(const struct column *col, const struct col_ctx *c);

/* Order idx[0..n) (indices into c->r->tasks) by column key; reverse turns it round. */
void col_sort(size_t *idx, size_t n, const struct col_ctx *c, enum col_id key, bool reverse);

/* Columns shown in a line of `width` characters: in drop order, until the first that
 * does not fit, so that a narrow column of low importance never takes the place of a
 * wider, more important one. The last column (width 0) takes what is left. */
void col_choose(int width, bool on[COL_N]);

/* The devices task ti does I/O to, "vda,loop0"; `unknown` when they cannot be known. */
void fmt_task_devs(char *buf, size_t n, const struct result *r, size_t ti, const char *unknown);

#endif
