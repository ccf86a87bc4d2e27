/* SPDX-License-Identifier: GPL-2.0-or-later */
/* tui/dialog_trial.c: t, a scheduler trial (docs/trial.md) from the screen: the
 * scheduler to try, the plan and the rule with the processes whose verdict changes (as
 * the switch's confirmation lists them), then the trial's live view, and its report.
 * The trial is the command `iotriage trial` in a child (act/trial_run.c): its checks,
 * guardian and signal handling are the command's, and the screen only reads its
 * progress. Esc or q stops it and the child puts the device back. tui/dialog.h. */
#define _XOPEN_SOURCE_EXTENDED 1
#include <curses.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "util.h"
#include "tui/dialog.h"

static void trial_menu(struct actions *a, const char *disk, const char *why)
{
    char title[200];
    snprintf(title, sizeof(title), "Trial of a scheduler on %s%s: which one?", disk, why);
    /* (the first scheduler not in use chosen: a trial of the current one is refused) */
    struct dialog *g = sched_list_open(a, disk, DLG_TRIAL_MENU, "try", title, false);
    if (g)
        dlg_keys(g, "Up/Down choose   Enter the plan   Esc cancel");
}

void actions_trial(struct actions *a, const char *dev)
{
    const char *no = refusal(a);
    if (no) {
        say(a, "%s", no);
        return;
    }
    const struct dev_rates *d = sched_find_dev(a->r, dev);
    if (!d) {
        say(a, "no device selected: Tab to the devices, pick one, then t");
        return;
    }
    const struct blockdev_info *b = &d->dev->bd;
    if (!b->partition && b->nsched == 0) {
        say(a, "%s has no I/O scheduler (bio-based device): t on a disk below it", dev);
        return;
    }
    char why[160] = "";
    if (b->partition)
        snprintf(why, sizeof(why), " (the disk of %s)", dev);
    if (a->trial_seconds < TRIAL_SECONDS_MIN || a->trial_seconds > TRIAL_SECONDS_MAX)
        a->trial_seconds = TRIAL_SECONDS_DEFAULT;
    trial_menu(a, b->disk, why);
}

static void trial_confirm(struct actions *a)
{
    const struct sched_state *e = &a->expect;
    char title[160];
    snprintf(title, sizeof(title), "Trial: %s from %s to %s, measured before and after?", a->disk, e->sched, a->to);
    dlg_open(a, DLG_TRIAL_CONFIRM, title);
    struct dialog *g = &a->vw->dlg;
    long s = a->trial_seconds;
    dlg_line(g, "1. %ld s measured under %s   2. switch to %s   3. %g s to settle   4. %ld s under %s", s, e->sched,
             a->to, TRIAL_SETTLE_S, s, a->to);
    dlg_line(g, "5. keep %s if the rule holds, else put %s (nr_requests %ld) back. The rule:", a->to, e->sched,
             e->nr_requests);
    dlg_line(g, "   %.*s", DLG_LINE_MAX - 8, TRIAL_RULE_DEFAULT);
    dlg_line(g, "   (best-effort or realtime p50/p99 lower beyond the noise, neither p99 higher, throughput");
    dlg_line(g, "   at most 10 %% lower; other rules: iotriage trial --keep-if, docs/trial.md)");
    dlg_line(g, "%-12s %s", a->to, verdict_sched_reads(a->to));
    dlg_line(g, "%s", "");
    dlg_line(g, "Processes with files on %s whose priority verdict changes under %s:", a->disk, a->to);
    if (sched_list_changed(a, e->sched, a->to) == 0)
        dlg_line(g, "  none%s", a->r->cur->tdevs ? "" : " known (no device attribution)");
    dlg_line(g, "%s", "");
    dlg_line(g, "Esc or q during the trial puts %s back at once; so does quitting iotriage.", e->sched);
    dlg_keys(g, "y start   +/- seconds   n/Esc cancel");
}

/* The live view, from the progress read so far. */
static void trial_view(struct actions *a)
{
    const struct trial_run *t = &a->trial;
    char title[160];
    snprintf(title, sizeof(title), "Trial of %s on %s", t->to, t->disk);
    dlg_open(a, DLG_TRIAL_RUN, title);
    struct dialog *g = &a->vw->dlg;
    double now = clock_mono();
    double left = t->remain - (now - t->phase_mono);
    if (left < 0)
        left = 0;
    const char *from = a->expect.sched;
    if (strcmp(t->phase, "before") == 0)
        dlg_line(g, "phase: before, measuring under %s: %.0f s left of %.0f", from, left, t->total);
    else if (strcmp(t->phase, "switching") == 0)
        dlg_line(g, "phase: switching to %s (the requests in flight complete first)", t->to);
    else if (strcmp(t->phase, "settle") == 0)
        dlg_line(g, "phase: settle under %s: %.0f s left", t->to, left);
    else if (strcmp(t->phase, "after") == 0)
        dlg_line(g, "phase: after, measuring under %s: %.0f s left of %.0f", t->to, left, t->total);
    else if (strcmp(t->phase, "putting-back") == 0)
        dlg_line(g, "phase: putting %s back", from);
    else
        dlg_line(g, "phase: %s", t->phase);
    /* the whole trial's countdown, from the phase's */
    double total = left;
    if (strcmp(t->phase, "starting") == 0)
        total = 2.0 * (double)t->seconds + TRIAL_SETTLE_S + 1;
    else if (strcmp(t->phase, "before") == 0)
        total = left + TRIAL_SETTLE_S + (double)t->seconds;
    else if (strcmp(t->phase, "switching") == 0 || strcmp(t->phase, "settle") == 0)
        total = left + (double)t->seconds + (strcmp(t->phase, "switching") == 0 ? TRIAL_SETTLE_S : 0);
    dlg_line(g, "about %.0f s to the decision (running %.0f s, process %d)", total, now - t->start_mono, (int)t->pid);
    dlg_line(g, "%s", "");
    if (t->stopping)
        dlg_line(g, "STOPPING: the trial puts %s back, then reports.", from);
    else
        dlg_line(g, "Esc or q stops the trial and puts %s back at once.", from);
    dlg_keys(g, t->stopping ? "waiting for the trial to put the device back" : "Esc/q stop and put back");
}

/* The report, when the child has ended. */
static void trial_report(struct actions *a)
{
    const struct trial_run *t = &a->trial;
    char title[200];
    const char *what = t->status == 0 ? "kept" : t->status == 3 ? "put back" : t->status == 2 ? "refused" : "not completed";
    snprintf(title, sizeof(title), "Trial of %s on %s: %s", t->to, t->disk, what);
    bool show = a->vw->dlg.kind == DLG_NONE || a->vw->dlg.kind == DLG_TRIAL_RUN;
    char msg[DLG_LINE_MAX];
    char esc[DLG_LINE_MAX * 2];
    if (t->done)
        snprintf(msg, sizeof(msg), "decision: %s (%s now %s, nr_requests %ld)", t->decision, t->disk, t->final_sched,
                 t->final_nr);
    else
        snprintf(msg, sizeof(msg), "%s", t->err[0] ? safe(esc, sizeof(esc), t->err, a->vw) : "the trial ended without a report");
    if (!show) {
        say(a, "%s: %s", title, msg);
        return;
    }
    result_dialog(a, title, msg, t->done && t->status != 1);
    struct dialog *g = &a->vw->dlg;
    if (t->done) {
        /* the reason, in lines the dialog can hold */
        safe(esc, sizeof(esc), t->reason, a->vw);
        const char *p = esc;
        dlg_line(g, "why:");
        while (*p && g->nlines + 3 < DLG_LINES) {
            size_t n = strlen(p);
            if (n > 100) {
                n = 100;
                while (n > 60 && p[n] != ' ')
                    n--;
            }
            dlg_line(g, "  %.*s", (int)n, p);
            p += n;
            while (*p == ' ')
                p++;
        }
        if (t->nchanges)
            dlg_line(g, "changes beyond the noise (subject figure %%):");
        for (unsigned i = 0; i < t->nchanges && g->nlines < DLG_LINES; i++)
            dlg_line(g, "  %s", safe(esc, sizeof(esc), t->changes[i], a->vw));
    }
    dlg_keys(g, "any key: close");
}

bool trial_poll(struct actions *a)
{
    if (a->trial.pid <= 0)
        return false;
    if (trial_run_poll(&a->trial)) {
        trial_report(a);
        return true;
    }
    if (a->vw->dlg.kind == DLG_TRIAL_RUN)
        trial_view(a);
    return true;
}

static void trial_start(struct actions *a)
{
    int rc = trial_run_start(&a->trial, a->disk, a->to, a->trial_seconds);
    if (rc < 0) {
        char msg[200];
        snprintf(msg, sizeof(msg), "the trial could not be started: %s; nothing changed", strerror(-rc));
        result_dialog(a, "Trial failed", msg, false);
        dlg_keys(&a->vw->dlg, "any key: close");
        return;
    }
    trial_view(a);
}

int trial_key(struct actions *a, int ch)
{
    struct dialog *g = &a->vw->dlg;
    switch (g->kind) {
    case DLG_TRIAL_MENU:
        if (ch == 27 || ch == 'q' || ch == 'n') {
            dlg_close(a);
            say(a, "nothing changed");
        } else if (is_enter(ch)) {
            const char *to = a->expect.list[g->sel];
            if (strcmp(to, a->expect.sched) == 0) {
                say(a, "%s already uses %s: choose another to try", a->disk, to);
            } else {
                str_copy(a->to, to, sizeof(a->to));
                trial_confirm(a);
            }
        } else {
            menu_move(g, ch);
        }
        return 0;
    case DLG_TRIAL_CONFIRM:
        if (is_cancel(ch)) {
            dlg_close(a);
            say(a, "nothing changed: %s still uses %s", a->disk, a->expect.sched);
        } else if ((ch == '+' || ch == KEY_RIGHT) && a->trial_seconds < TRIAL_SECONDS_MAX) {
            a->trial_seconds++;
            trial_confirm(a);
        } else if ((ch == '-' || ch == KEY_LEFT) && a->trial_seconds > TRIAL_SECONDS_MIN) {
            a->trial_seconds--;
            trial_confirm(a);
        } else if ((ch == 'y' || ch == 'Y') && confirm_ok(a)) {
            trial_start(a);
        }
        return 0;
    case DLG_TRIAL_RUN:
        if (ch == 27 || ch == 'q' || ch == 'Q') {
            trial_run_stop(&a->trial);
            trial_view(a);
        }
        return 0;
    default:
        return 0;
    }
}
