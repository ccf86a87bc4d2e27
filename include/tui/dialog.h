/* SPDX-License-Identifier: GPL-2.0-or-later */
/* tui/dialog.h: private to the dialogs: what tui/actions.c gives the files of each
 * dialog (tui/dialog_*.c: filling a dialog, the message line, the refusals, the common
 * keys), and what the dialogs give actions.c's key dispatch and polling. The rest of
 * the program sees tui/actions.h. */
#ifndef IOTRIAGE_TUI_DIALOG_H
#define IOTRIAGE_TUI_DIALOG_H

#include <stdbool.h>
#include <stddef.h>

#include "tui/actions.h"

/* tui/actions.c: filling a dialog (dlg_*), the message line (say), text made safe for
 * it (safe), a wall-clock time, why no change is possible now (refusal, or NULL), and
 * the keys every dialog takes (Esc/n/q cancel, Enter, menu moves, y only when the
 * dialog was shown whole: confirm_ok). */
void dlg_open(struct actions *a, enum dialog_kind kind, const char *title);
__attribute__((format(printf, 2, 3)))
void dlg_line(struct dialog *d, const char *fmt, ...);
void dlg_keys(struct dialog *d, const char *keys);
void dlg_close(struct actions *a);
__attribute__((format(printf, 2, 3)))
void say(struct actions *a, const char *fmt, ...);
const char *safe(char *buf, size_t n, const char *s, const struct view *vw);
void clock_text(char *buf, size_t n, double wall);
const char *refusal(const struct actions *a);
/* The result of any action, in a dialog of its own and on the message line. */
void result_dialog(struct actions *a, const char *title, const char *msg, bool ok);
bool is_cancel(int ch);
bool is_enter(int ch);
void menu_move(struct dialog *g, int ch);
bool confirm_ok(struct actions *a);

/* tui/dialog_sched.c: the steps of a switch that actions_key and actions_poll take */
/* The menu of the schedulers `disk` offers, as dialog `kind` titled `title`, the one in
 * use marked and chosen (at_current) or the first other one; NULL, said why ("no I/O
 * scheduler to VERB"), when the disk has none. The caller adds the keys. */
struct dialog *sched_list_open(struct actions *a, const char *disk, enum dialog_kind kind, const char *verb,
                               const char *title, bool at_current);
void sched_menu_below(struct actions *a, const char *disk);
void sched_confirm(struct actions *a, const char *to);
void sched_finish(struct actions *a, const struct sched_outcome *o);
void wait_dialog(struct actions *a);
void sched_do(struct actions *a, bool keep, bool undo);
/* ... and what the trial's dialog (tui/dialog_trial.c) shares with the switch: the
 * device of a name in the result, and the processes on a->disk whose verdict changes
 * from one scheduler to another, as dialog lines (their count) */
const struct dev_rates *sched_find_dev(const struct result *r, const char *name);
unsigned sched_list_changed(struct actions *a, const char *from, const char *to);
/* tui/dialog_trial.c: t (a scheduler trial in a child `iotriage trial`) */
int  trial_key(struct actions *a, int ch);
bool trial_poll(struct actions *a);

/* tui/dialog_prio.c: the chooser redrawn after a key, the confirmation, the write */
void prio_chooser(struct actions *a, unsigned sel);
void prio_confirm(struct actions *a);
void prio_do(struct actions *a);

/* tui/dialog_delayacct.c: the write after y */
void delayacct_do(struct actions *a);

/* tui/dialog_fsfix.c: a key in one of its dialogs (as actions_key returns); whether
 * the action under way in a child changed the screen */
int fs_key(struct actions *a, int ch);
bool fs_poll(struct actions *a);

#endif
