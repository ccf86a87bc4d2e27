/* SPDX-License-Identifier: GPL-2.0-or-later */
/* tui/actions.c: dialogs that ask before anything is changed, and report what changed.
 *
 * Every dialog is filled as plain text (untrusted names escaped) and painted by draw.c.
 * A dialog's `y` is taken only when draw.c could show all of it: nobody confirms a
 * change they could not read.
 *
 * This file holds what every dialog uses (filling one, the refusals, the keys common to
 * all) and the key dispatch; each dialog is in a file named after the action in act/
 * that it drives: dialog_sched.c (act/sched.c), dialog_prio.c (act/prio.c),
 * dialog_delayacct.c (act/delayacct.c), dialog_fsfix.c (act/fsfix.c, act/fsjob.c),
 * dialog_trial.c (act/trial_run.c).
 * tui/dialog.h lists what they share. */
#define _XOPEN_SOURCE_EXTENDED 1
#include "tui/actions.h"

#include <curses.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "util/escape.h"
#include "util.h"
#include "tui/dialog.h"

/* ---- filling a dialog ---- */

void dlg_open(struct actions *a, enum dialog_kind kind, const char *title)
{
    struct dialog *d = &a->vw->dlg;
    memset(d, 0, sizeof(*d));
    d->kind = kind;
    str_copy(d->title, title, sizeof(d->title));
}

__attribute__((format(printf, 2, 3)))
void dlg_line(struct dialog *d, const char *fmt, ...)
{
    if (d->nlines >= DLG_LINES)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(d->lines[d->nlines++], DLG_LINE_MAX, fmt, ap);
    va_end(ap);
}

void dlg_keys(struct dialog *d, const char *keys)
{
    str_copy(d->keys, keys, sizeof(d->keys));
}

void dlg_close(struct actions *a)
{
    a->vw->dlg.kind = DLG_NONE;
}

__attribute__((format(printf, 2, 3)))
void say(struct actions *a, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(a->vw->message, sizeof(a->vw->message), fmt, ap);
    va_end(ap);
}

/* Untrusted text (a process name) made safe for the dialog. */
const char *safe(char *buf, size_t n, const char *s, const struct view *vw)
{
    esc_display(buf, n, s, strlen(s), vw->utf8);
    return buf;
}

void clock_text(char *buf, size_t n, double wall)
{
    time_t t = (time_t)wall;
    struct tm tm;
    localtime_r(&t, &tm);
    strftime(buf, n, "%H:%M:%S", &tm);
}

/* Why no action can be taken now, or NULL. */
const char *refusal(const struct actions *a)
{
    static char busy[160];
    if (a->job.child.pid > 0) {
        /* one change at a time: the next one would queue behind the frozen device anyway */
        snprintf(busy, sizeof(busy), "the switch of %s to %s still waits for its device: one change at a time",
                 a->job.disk, a->job.to);
        return busy;
    }
    if (a->fs_job.child.pid > 0) {
        snprintf(busy, sizeof(busy), "%s is still under way (process %d): one change at a time",
                 a->fs_job.kind == FSFIX_SIGNAL ? "the signal" : "the truncate", (int)a->fs_job.child.pid);
        return busy;
    }
    if (a->trial.pid > 0) {
        snprintf(busy, sizeof(busy), "the trial of %s on %s is under way (process %d): one change at a time",
                 a->trial.to, a->trial.disk, (int)a->trial.pid);
        return busy;
    }
    if (act_read_only())
        return act_built_read_only() ? "read-only: this iotriage was built read-only and changes nothing"
                                     : "read-only: started with --read-only, iotriage changes nothing";
    if (a->vw->replay_total)
        return "a replay shows a recording: there is nothing here to change";
    if (!a->r)
        return "wait for the first sample";
    return NULL;
}

void result_dialog(struct actions *a, const char *title, const char *msg, bool ok)
{
    dlg_open(a, DLG_RESULT, title);
    struct dialog *g = &a->vw->dlg;
    dlg_line(g, "%s%s", ok ? "" : "FAILED: ", msg);
    say(a, "%s", msg);
}

int actions_wait_fd(const struct actions *a)
{
    /* one change at a time (refusal): at most one of them is under way */
    if (a->trial.pid > 0)
        return a->trial.fd;
    return a->job.child.pid > 0 ? a->job.child.fd : a->fs_job.child.pid > 0 ? a->fs_job.child.fd : -1;
}

bool actions_poll(struct actions *a)
{
    if (a->trial.pid > 0)
        return trial_poll(a);
    if (a->fs_job.child.pid > 0)
        return fs_poll(a);
    if (a->job.child.pid <= 0)
        return false;
    struct sched_outcome o;
    int rc = sched_collect(&a->job, a->sys_root, &o);
    if (rc == 0) {
        if (a->vw->dlg.kind != DLG_SCHED_WAIT)
            return false;
        wait_dialog(a);              /* the seconds and the count in flight, afresh */
        return true;
    }
    sched_finish(a, &o);
    return true;
}

void actions_exit_note(struct actions *a, FILE *f)
{
    if (a->trial.pid > 0) {
        /* quitting is Esc: the trial puts the device back before iotriage ends */
        fprintf(f, "iotriage: stopping the trial of %s on %s (process %d): it puts the device back...\n", a->trial.to,
                a->trial.disk, (int)a->trial.pid);
        fflush(f);
        if (trial_run_finish(&a->trial, TRIAL_SWITCH_WAIT_S + 5.0))
            fprintf(f, "iotriage: the trial stopped: %s\n", a->trial.done ? a->trial.reason : a->trial.err);
        else
            fprintf(f, "iotriage: the trial (process %d) still puts %s back; its guardian finishes it\n",
                    (int)a->trial.pid, a->trial.disk);
    }
    if (a->job.child.pid > 0) {
        fprintf(f, "iotriage: the switch of %s to %s was still waiting for the device's requests to complete; "
                   "process %d finishes it alone (see /sys/block/%s/queue/scheduler)\n",
                a->job.disk, a->job.to, (int)a->job.child.pid, a->job.disk);
        sched_abandon(&a->job);
    }
    if (a->fs_job.child.pid > 0) {
        fprintf(f, "iotriage: %s was still under way; process %d finishes it alone\n", a->fs_job_what,
                (int)a->fs_job.child.pid);
        fsfix_abandon(&a->fs_job);
    }
    if (a->da_turned_on && delayacct_get(a->proc_root) == 1)
        fprintf(f, "iotriage: delay accounting is still on (turned on by iotriage); "
                   "sysctl -w kernel.task_delayacct=0 turns it off\n");
}

/* ---- keys ---- */

bool is_cancel(int ch)
{
    return ch == 27 || ch == 'n' || ch == 'N' || ch == 'q';
}

bool is_enter(int ch)
{
    return ch == '\n' || ch == '\r' || ch == KEY_ENTER;
}

void menu_move(struct dialog *g, int ch)
{
    if ((ch == KEY_UP || ch == 'k') && g->sel > 0)
        g->sel--;
    else if ((ch == KEY_DOWN || ch == 'j') && g->sel + 1 < g->nitems)
        g->sel++;
    else if (ch == KEY_HOME)
        g->sel = 0;
    else if (ch == KEY_END && g->nitems)
        g->sel = g->nitems - 1;
}

/* y on a dialog not shown whole: refused, and the dialog stays. */
bool confirm_ok(struct actions *a)
{
    if (a->vw->dlg.complete)
        return true;
    say(a, "the terminal is too small to show the whole dialog: enlarge it, then y");
    return false;
}

int actions_key(struct actions *a, int ch)
{
    struct dialog *g = &a->vw->dlg;
    a->vw->message[0] = '\0';
    if (!a->r && g->kind != DLG_NONE && g->kind != DLG_RESULT && g->kind != DLG_QUIT_DELAYACCT &&
        g->kind != DLG_SCHED_WAIT && g->kind != DLG_FS_WAIT && g->kind != DLG_TRIAL_RUN) {
        dlg_close(a);                /* the sampler restarted under it */
        say(a, "nothing changed");
        return 0;
    }
    switch (g->kind) {
    case DLG_NONE:
        return 0;
    case DLG_RESULT:
        dlg_close(a);
        return 0;
    case DLG_SCHED_WAIT:
        if (ch == 'q' || ch == 'Q')
            return actions_quit(a) ? 1 : 0;
        if (ch == 27) {
            dlg_close(a);
            say(a, "the switch of %s goes on: its result opens when it is done", a->job.disk);
        }
        return 0;
    case DLG_SCHED_PICK:
        if (ch == 27 || ch == 'q' || ch == 'n') {
            dlg_close(a);
            say(a, "nothing changed");
        } else if (is_enter(ch)) {
            if (g->sel < a->npick) {
                char disk[64];
                str_copy(disk, a->pick[g->sel], sizeof(disk));
                dlg_close(a);
                sched_menu_below(a, disk);
            }
        } else {
            menu_move(g, ch);
        }
        return 0;
    case DLG_SCHED_MENU:
        if (ch == 27 || ch == 'q' || ch == 'n') {
            dlg_close(a);
            say(a, "nothing changed");
        } else if (is_enter(ch)) {
            const char *to = a->expect.list[g->sel];
            if (strcmp(to, a->expect.sched) == 0)
                say(a, "%s already uses %s", a->disk, to);
            else
                sched_confirm(a, to);
        } else {
            menu_move(g, ch);
        }
        return 0;
    case DLG_SCHED_CONFIRM:
    case DLG_UNDO_CONFIRM:
        if (is_cancel(ch)) {
            dlg_close(a);
            say(a, "nothing changed: %s still uses %s", a->disk, a->expect.sched);
        } else if ((ch == 'y' || ch == 'Y') && confirm_ok(a)) {
            sched_do(a, false, g->kind == DLG_UNDO_CONFIRM);
        } else if (ch == 'k' && g->kind == DLG_SCHED_CONFIRM && a->keep_nr && confirm_ok(a)) {
            sched_do(a, true, false);
        }
        return 0;
    case DLG_PRIO_CHOOSE:
        if (ch == 27 || ch == 'q' || ch == 'n') {
            dlg_close(a);
            say(a, "nothing changed");
            return 0;
        }
        if (a->task >= a->r->ntasks || a->r->tasks[a->task].task->tgid != a->pid) {
            /* the rows moved under the dialog: find the process again */
            size_t i;
            for (i = 0; i < a->r->ntasks; i++)
                if (a->r->tasks[i].task->id == a->pid)
                    break;
            if (i == a->r->ntasks) {
                dlg_close(a);
                say(a, "process %d has exited: nothing changed", (int)a->pid);
                return 0;
            }
            a->task = i;
        }
        if (is_enter(ch)) {
            prio_confirm(a);
            return 0;
        }
        if ((ch == KEY_LEFT || ch == 'h' || ch == '-') && a->level > 0)
            a->level--;
        else if ((ch == KEY_RIGHT || ch == 'l' || ch == '+') && a->level < 7)
            a->level++;
        else if (ch >= '0' && ch <= '7')
            a->level = ch - '0';
        else
            menu_move(g, ch);
        prio_chooser(a, g->sel);
        return 0;
    case DLG_PRIO_CONFIRM:
        if (is_cancel(ch)) {
            dlg_close(a);
            say(a, "nothing changed");
        } else if ((ch == 'y' || ch == 'Y') && confirm_ok(a)) {
            prio_do(a);
        }
        return 0;
    case DLG_DELAYACCT_CONFIRM:
        if (is_cancel(ch)) {
            dlg_close(a);
            say(a, "nothing changed");
        } else if ((ch == 'y' || ch == 'Y') && confirm_ok(a)) {
            delayacct_do(a);
        }
        return 0;
    case DLG_TRIAL_MENU: case DLG_TRIAL_CONFIRM: case DLG_TRIAL_RUN:
        return trial_key(a, ch);
    case DLG_FS_MENU: case DLG_FS_SIGNAL_MENU: case DLG_FS_SIGNAL_TYPE: case DLG_FS_SIGNAL_CONFIRM:
    case DLG_FS_TRUNCATE_CONFIRM: case DLG_FS_COPY_PATH: case DLG_FS_WAIT:
        return fs_key(a, ch);
    case DLG_QUIT_DELAYACCT:
        if (ch == 27) {
            dlg_close(a);
            return 0;
        }
        if (ch == 'y' || ch == 'Y') {
            int rc = delayacct_set(a->proc_root, false);
            if (rc < 0) {
                char msg[160];
                snprintf(msg, sizeof(msg), "kernel.task_delayacct could not be turned off: %s", strerror(-rc));
                result_dialog(a, "Delay accounting", msg, false);
                dlg_keys(g, "any key: close (q then quits)");
                return 0;
            }
            a->da_turned_on = false;
            return 1;
        }
        if (ch == 'n' || ch == 'N')
            return 1;
        return 0;
    }
    return 0;
}
