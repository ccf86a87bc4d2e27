/* SPDX-License-Identifier: GPL-2.0-or-later */
/* tui/actions.h: the screen's side of changing the machine.
 *
 * Each key that would change something (s, u, i, A, and Enter on a holder of a deleted
 * file in the filesystems view) only opens a dialog that says what will change; the
 * write (act/act.h) happens on `y` in that dialog, and its result, read back from the
 * kernel, is shown afterwards. Esc or n closes a dialog without writing. Writes that can
 * block (a scheduler switch on a stuck device, a copy or truncate on a slow disk, the
 * seconds a signalled holder is watched) run in a child process: one at a time.
 */
#ifndef IOTRIAGE_TUI_ACTIONS_H
#define IOTRIAGE_TUI_ACTIONS_H

#include <stdbool.h>
#include <stdio.h>
#include <sys/types.h>

#include "act/act.h"
#include "act/trial.h"
#include "delta.h"
#include "tui/view.h"
#include "verdict.h"

#define ACTIONS_UNDO_MAX 8

struct actions {
    /* set by the loop before each call */
    const struct result *r;          /* NULL before the first sample and in a replay */
    const struct verdicts *v;
    struct view *vw;
    const char *proc_root, *sys_root;

    /* a pending scheduler switch */
    char disk[64];
    /* a bio-based device's switch: the disks below it, one to choose (DLG_SCHED_PICK) */
    char pick_from[64];
    char pick[16][64];
    unsigned npick;
    struct sched_state expect;       /* the device as shown in the dialog */
    char to[BD_SCHED_MAX];
    long keep_nr;                    /* offered with k; 0 when not offered */
    /* a switch under way in a child process (act.h: sched_start) */
    struct sched_job job;
    bool job_undo;
    double job_mono;                 /* when y was pressed */
    /* the switches of this run, for u: the last first (the disks below a stack, each its
     * own switch, are undone one by one); the oldest dropped past ACTIONS_UNDO_MAX */
    struct sched_undo {
        char disk[64];
        struct sched_state from, to;
        double wall;
    } undo[ACTIONS_UNDO_MAX];
    unsigned nundo;
    /* a pending priority change */
    pid_t pid;
    unsigned long long start_ticks;
    int nice, policy, cls, level;
    size_t task;                     /* index into r->tasks when opened */
    char comm[64];
    /* delay accounting */
    bool da_turned_on;               /* by us, in this run */
    double da_on_wall;
    /* a deleted-but-open file and the holder the dialog is about, copied when it opened
     * (the frame changes under the dialog; the action checks it is still that file) */
    struct fsfix_target fst;
    char fs_mount[256], fs_dev[64], fs_path[256], fs_comm[64];
    uint64_t fs_size, fs_blocks, fs_avail;
    bool fs_space_known;
    int fs_append;                   /* the holder's O_APPEND as sampled: 1, 0, -1 unknown */
    int fs_writes;                   /* ... it has the file open for writing: 1, 0, -1 */
    unsigned fs_nothers;             /* other holders of the file */
    char fs_others[4][96];           /* the first ones, as "comm[pid] fd N append" */
    unsigned fs_noappend;            /* writers (this one included) known not to append */
    int fs_sig;                      /* the signal chosen */
    char fs_input[200];              /* a line typed in the dialog (signal, copy path) */
    char fs_error[320];              /* why the typed line was refused */
    char fs_copy[200];               /* copy here before truncating; "" none */
    struct fsfix_job fs_job;         /* an action under way in a child */
    char fs_job_what[160];
    /* a scheduler trial: the plan (disk, to: above), its seconds, the run in a child */
    long trial_seconds;
    struct trial_run trial;
};

/* The keys; each opens a dialog or says in the message line why it cannot. */
void actions_sched(struct actions *a, const char *dev);     /* s: on this device */
void actions_trial(struct actions *a, const char *dev);     /* t: a trial on it */
void actions_undo(struct actions *a);                        /* u */
void actions_prio(struct actions *a, size_t task);           /* i: on r->tasks[task] */
void actions_delayacct(struct actions *a);                   /* A */
/* Enter in the filesystems view: the actions on holder `holder` of deleted file `file`
 * of r->fss[fs] (signal it to reopen, or truncate the file through its descriptor). */
void actions_fs(struct actions *a, size_t fs, size_t file, size_t holder);
/* q: true when the program may end now; false when a dialog asks first. A switch still
 * waiting does not hold the program: its child finishes alone (actions_exit_note). */
bool actions_quit(struct actions *a);

/* A key while a dialog is open. Returns 1 when the program should end. */
int actions_key(struct actions *a, int ch);

/* After each live sample: the after-figures of the last switch. */
void actions_sampled(struct actions *a);

/* A switch or a space action works in a child process and the screen goes on: the loop
 * polls this fd (POLLIN; -1 when none is under way) and calls actions_poll when it is
 * readable
 * (also called after each sample, so a loop that does not poll the fd is late, not
 * wrong). Returns true when the screen changed. */
int  actions_wait_fd(const struct actions *a);
bool actions_poll(struct actions *a);

/* After the screen is gone: what is left changed (delay accounting on) or still under
 * way (a switch waiting for its device) goes to f. */
void actions_exit_note(struct actions *a, FILE *f);

#endif
