/* SPDX-License-Identifier: GPL-2.0-or-later */
/* tui/view.h: what the screen shows, and how: the state the keys change and the drawing
 * functions that read it. draw.c and the views' files (view_*.c) only read the model
 * (result, verdicts) and the view state; tui.c owns both and changes them, actions.c and
 * the dialogs' files (dialog_*.c) fill the dialogs; view.c holds the helpers all three
 * share. */
#ifndef IOTRIAGE_TUI_VIEW_H
#define IOTRIAGE_TUI_VIEW_H

#include <stdbool.h>
#include <stddef.h>

#include "delta.h"
#include "out/columns.h"
#include "source/procinfo.h"
#include "tui/latency.h"
#include "verdict.h"

enum focus { FOCUS_DEVICES, FOCUS_PROCESSES };
enum mode { MODE_MAIN, MODE_HELP, MODE_DEVICE, MODE_PROCESS, MODE_CGROUPS, MODE_FILESYSTEMS,
            MODE_LATENCY };                  /* from MODE_DEVICE (l); Esc goes back there */

#define SPARK_LEN 64
#define DETAIL_THREADS_MAX 64

/* One thread of the process in the detail view: priority is per thread, and a label set
 * on one thread says nothing of the others. Read when the view opens and refreshed with
 * each sample (tui.c), live only. */
struct thread_info {
    pid_t tid;
    char  comm[64];
    int   ioprio_raw;                /* or -errno */
    int   nice, policy;
    char  state;                     /* R S D ...; '?' unknown */
    char  wchan[48];                 /* where it sleeps; "" running or unknown */
};

/* Per-device history, keyed by name: IOPS for the sparkline, and the figures a
 * scheduler switch is judged by (before and after it). */
struct spark {
    char name[64];
    double v[SPARK_LEN];             /* r/s + w/s */
    double await[SPARK_LEN], aqu[SPARK_LEN], util[SPARK_LEN];
    double t[SPARK_LEN];             /* CLOCK_MONOTONIC end of the interval; 0 in a replay */
    double itv[SPARK_LEN];           /* its length, s */
    unsigned n, head;
};

/* A modal dialog: text already escaped, an optional menu, and the keys it takes. The
 * logic that fills it lives in tui/actions.c and tui/dialog_*.c; draw.c only paints it. */
enum dialog_kind {
    DLG_NONE, DLG_SCHED_MENU, DLG_SCHED_CONFIRM, DLG_UNDO_CONFIRM, DLG_PRIO_CHOOSE,
    DLG_PRIO_CONFIRM, DLG_DELAYACCT_CONFIRM, DLG_QUIT_DELAYACCT, DLG_RESULT,
    DLG_SCHED_WAIT,                  /* a switch waits for the device (tui/dialog_sched.c) */
    DLG_SCHED_PICK,                  /* a bio-based device: which disk below it to switch */
    DLG_TRIAL_MENU, DLG_TRIAL_CONFIRM, DLG_TRIAL_RUN,   /* t (tui/dialog_trial.c) */
    /* space held by a deleted-but-open file: the action, the signal, a typed signal, the
     * confirmations, a typed copy path, the child at work */
    DLG_FS_MENU, DLG_FS_SIGNAL_MENU, DLG_FS_SIGNAL_TYPE, DLG_FS_SIGNAL_CONFIRM,
    DLG_FS_TRUNCATE_CONFIRM, DLG_FS_COPY_PATH, DLG_FS_WAIT,
};
#define DLG_LINES 24
#define DLG_LINE_MAX 256
struct dialog {
    enum dialog_kind kind;
    char title[160];
    char lines[DLG_LINES][DLG_LINE_MAX];
    unsigned nlines;
    unsigned first_item, nitems, sel;   /* a menu: lines[first_item + k], k < nitems */
    char keys[200];                  /* the key line at the bottom */
    bool complete;                   /* set by draw: every line and the key line were shown */
};

/* Figures of a device over some seconds: means of the samples in them. */
struct dev_figs {
    double iops, await, aqu, util;   /* NAN when no sample */
    double secs;
    unsigned n;
};

/* The last scheduler switch, to show before/after figures for a while. */
#define SWITCH_SHOW_S 60.0
struct switch_mark {
    bool active;
    char disk[64], from[24], to[24];
    double mono;                     /* when it was written */
    double asked;                    /* when y was pressed: "before" ends here */
    struct dev_figs before;
    double sum_iops, sum_await, sum_aqu, sum_util, sum_secs, await_secs;   /* after, weighted */
    unsigned n_after;
};

struct view {
    enum mode mode;
    enum focus focus;
    enum col_id sort;                /* the column the processes are sorted by */
    bool reverse, only_active, accumulated, show_partitions, paused;
    bool utf8, color;
    bool read_only;                  /* actions refused; shown in the header */
    char filter[64];
    char dev_filter[64];             /* device names containing this */
    char prompt[96];                 /* non-empty: a line editor is open with this label */
    char input[64];
    int prompt_kind;                 /* 1 filter, 2 delay, 3 device filter */
    char message[160];               /* one line at the bottom until the next key */
    size_t dev_sel, proc_sel;        /* index into the shown rows */
    size_t dev_top, proc_top;        /* first shown row */
    char detail_dev[64];             /* MODE_DEVICE: which device */
    size_t cg_sel, cg_top;           /* MODE_CGROUPS: the selected cgroup, the first shown */
    char cg_filter[256];             /* processes of this cgroup (and below) only; "" all */
    size_t fs_sel;                   /* MODE_FILESYSTEMS: the selected filesystem */
    size_t fs_item;                  /* 0: its row; k > 0: the k-th holder of its deleted
                                      * files, in the order shown (file by file) */
    size_t fs_top;                   /* the first shown line (rows and holder lines) */
    struct { pid_t pid; int fd; ino_t ino; } fs_pick;   /* the holder fs_item is: the
                                      * files are reordered by size each refresh, and the
                                      * selection follows the holder, not its place */
    pid_t detail_pid;                /* MODE_PROCESS: which task */
    unsigned long long detail_start;
    struct thread_info threads[DETAIL_THREADS_MAX];
    size_t nthreads, threads_total;  /* shown, and found (0 when not read: a replay) */
    struct procinfo pinfo;           /* the process itself (source/procinfo.h); no threads */
    bool have_pinfo;
    double delay_s;
    const char *host;
    const char *recording;           /* --record FILE, or NULL */
    char record_error[256];          /* why the recording stopped; "" while it runs */
    /* replay: position, count and speed; replay_total 0 when live */
    size_t replay_pos, replay_total;
    double replay_speed;
    /* replay --at: the moment asked, and whether nothing came at or after it (the header
     * says how far the frame shown is from it) */
    bool replay_has_at, replay_at_missed;
    double replay_at;
    struct spark *sparks;
    size_t nsparks;
    struct dialog dlg;
    struct switch_mark mark;
    char udev_rule[DLG_LINE_MAX];    /* for the last switch; shown in the device view */
    char udev_disk[64];
    /* The latency view (tui/latency.h): per-disk rings fed with every frame, and the
     * priority it shows (by value: a slot index moves when a priority appears). */
    struct lat_set lat;
    unsigned lat_prio;
    bool lat_prio_set;
};

/* The rows the panels show, in order; rebuilt after every sample or key. */
struct rows {
    size_t *dev;                     /* indices into result.devs */
    size_t ndev;
    size_t *proc;                    /* indices into result.tasks */
    size_t nproc;
};

void rows_build(struct rows *rows, const struct result *r, const struct verdicts *v,
                const struct view *vw);
void rows_free(struct rows *rows);

/* Draw the whole screen (stdscr) from the model; r may be NULL before the first sample. */
void draw_screen(const struct result *r, const struct verdicts *v, const struct rows *rows,
                 struct view *vw);


/* The history of a device, or NULL. */
const struct spark *spark_find(const struct view *vw, const char *name);
/* Add one interval's figures of d, which ended at mono (0 in a replay), itv s long. */
void spark_push(struct view *vw, const struct dev_rates *d, double mono, double itv);
/* After figures of the mark so far. */
struct dev_figs switch_after(const struct switch_mark *m);

/* The holders of a filesystem's deleted files, one selectable line each (view.fs_item):
 * how many, and which file and holder item k (1-based) is; false when none is. */
size_t fs_items(const struct fs_sample *fs);
bool fs_item_find(const struct fs_sample *fs, size_t item, size_t *file, size_t *holder);
/* How a holder has the file open: "append, write-only", "no-append, read-write",
 * "read-only" (a reader: no offset to write on at), "flags unknown". */
const char *fs_holder_mode(const struct fs_holder *h);
/* After the selection moved: remember which holder it is on (none on a row). */
void fs_item_pick(struct view *vw, const struct fs_sample *fs);
/* Before using fs_item on a new frame: put it back on the remembered holder when that one
 * is still listed, else keep it in range. */
void fs_item_sync(struct view *vw, const struct fs_sample *fs);

#endif
