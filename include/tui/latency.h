/* SPDX-License-Identifier: GPL-2.0-or-later */
/* tui/latency.h: the screen's memory of measured latency per I/O priority (issue #14),
 * for the latency view (a heat map over the last minutes) and the before/after of a
 * scheduler switch.
 *
 * Each frame's dev_rates.lat (delta.h) is pushed as one column of a bounded ring per
 * whole disk: per priority, the interval's log2 histogram of total latency (LENS_HIST
 * buckets of microseconds, bpf/lens_maps.h). The ring holds LAT_COLS columns and at
 * most LAT_PRIOS priorities per disk, whatever the run's length; a ring is made the
 * first time a disk has a priority row and then takes a column every frame, so time
 * runs on while nothing completes. A column knows whether the lens covered its frame
 * (unknown is not "no request") and the disk's scheduler then, so a switch shows where
 * it happened, whoever made it and in a replay too.
 *
 * The rest is pure (no curses): bucket labels, shading, the rows a heat map takes on a
 * screen, merged histograms over a time window. tests/unit/test_latency.c covers it.
 */
#ifndef IOTRIAGE_TUI_LATENCY_H
#define IOTRIAGE_TUI_LATENCY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "source/lens.h"           /* LENS_HIST, LENS_ST_* */

struct dev_rates;

#define LAT_COLS   256               /* columns (frames) kept per disk */
#define LAT_PRIOS  8                 /* priorities kept per disk; more are counted */
#define LAT_SCHED  16                /* a scheduler name as kept with each column */

/* One priority of one disk: counts of total latency per column and bucket. */
struct lat_prio_ring {
    unsigned prio;                   /* class << 13 | level (source/lens.h) */
    char     name[8];                /* "be/4", "idle" */
    uint32_t (*cnt)[LENS_HIST];      /* LAT_COLS rows, allocated with the slot */
};

struct lat_ring {
    char     name[64];               /* the disk */
    double   t[LAT_COLS];            /* end of the column's interval (snapshot mono; wall
                                      * time in a replay) */
    double   itv[LAT_COLS];          /* its length, s */
    bool     known[LAT_COLS];        /* the lens covered the frame */
    char     sched[LAT_COLS][LAT_SCHED];   /* the disk's scheduler in that frame; "" unknown */
    unsigned n, head;                /* columns held; the next to write */
    struct lat_prio_ring prio[LAT_PRIOS];  /* sorted by prio */
    unsigned nprio;
    unsigned dropped;                /* priority rows not kept: more than LAT_PRIOS */
};

struct lat_set {
    struct lat_ring *v;
    size_t n;
};

/* The ring of disk name, or NULL. */
const struct lat_ring *lat_find(const struct lat_set *s, const char *name);
/* One frame of one whole disk: a column, when the disk has (or had) priority rows.
 * t and itv as in the ring; known: the frame's lens covered the disk. */
void lat_push(struct lat_set *s, const struct dev_rates *d, double t, double itv, bool known);
/* Forget everything (a replay that jumps). */
void lat_clear(struct lat_set *s);

/* Column i of the ring, 0 the oldest held, n - 1 the newest: its slot in the arrays. */
unsigned lat_col(const struct lat_ring *r, unsigned i);
/* The index into r->prio of prio, or -1. */
int lat_prio_index(const struct lat_ring *r, unsigned prio);

/* Bucket k's lower bound, short: "<1us" "1us" "512us" "1ms" "4.1ms" "524ms" "1s" "17s"
 * "18m". At most 6 characters. */
void lat_bucket_label(char *buf, size_t n, unsigned k);
/* A bucket's lower bound in microseconds (0 for bucket 0). */
double lat_bucket_us(unsigned k);

/* Shading of a count against the largest count in view: 0 (blank) exactly when count is
 * 0, else 1..nlevels-1 on a log scale, so that one request in a busy map stays visible
 * and the busiest cell is the darkest. */
unsigned lat_shade_level(uint64_t count, uint64_t max, unsigned nlevels);
/* The glyph of a level: " .:-=+*#%@" in ASCII (10 levels), " ░▒▓█" in UTF-8 (5). */
unsigned lat_shade_levels(bool utf8);
const char *lat_shade_glyph(unsigned level, bool utf8);

/* Rows of a heat map: buckets lo..hi (inclusive, lo <= hi) on at most avail rows,
 * f buckets a row (f > 1 when they do not fit one a row); row 0 starts at bucket lo. */
struct lat_axis {
    unsigned lo, f, nrows;
};
struct lat_axis lat_axis_plan(unsigned lo, unsigned hi, unsigned avail);

/* The lowest and highest bucket with a count in the newest ncols columns of any
 * priority; false when there is none. */
bool lat_range(const struct lat_ring *r, unsigned ncols, unsigned *lo, unsigned *hi);

/* Priority slot p's histogram summed over the columns whose interval lies within
 * [from, to] (10 ms slack); returns the number of such columns. */
unsigned lat_merge(const struct lat_ring *r, unsigned p, double from, double to,
                   uint64_t hist[LENS_HIST]);

/* The first column (index as lat_col takes) of the newest ncols whose scheduler differs
 * from the column before it (both known), newest switch first; -1 when none. from/to
 * get the names. */
int lat_switch_col(const struct lat_ring *r, unsigned ncols, const char **from, const char **to);

/* A latency in ms in at most 6 characters, 3 significant digits: "0.012" "4.10" "812"
 * "2100"; "-" for NAN. */
void lat_fmt_ms(char *buf, size_t n, double ms);

#endif
