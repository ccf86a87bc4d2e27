/* SPDX-License-Identifier: GPL-2.0-or-later */
/* tui/dialog_delayacct.c: the dialogs of delay accounting, which drive act/delayacct.c:
 * turning it on (A), and the question on q when iotriage turned it on. */
#define _XOPEN_SOURCE_EXTENDED 1
#include <stdio.h>
#include <string.h>

#include "util.h"
#include "tui/dialog.h"

/* ---- delay accounting ---- */

void actions_delayacct(struct actions *a)
{
    const char *no = refusal(a);
    if (no) {
        say(a, "%s", no);
        return;
    }
    int now = delayacct_get(a->proc_root);
    if (now < 0) {
        say(a, "delay accounting cannot be read here (%s): not in this kernel?", strerror(-now));
        return;
    }
    if (now == 1 && !a->da_turned_on) {
        say(a, "delay accounting is already on (not by iotriage: it stays as it is)");
        return;
    }
    if (now == 1) {
        dlg_open(a, DLG_DELAYACCT_CONFIRM, "Turn delay accounting off again (kernel.task_delayacct=0)?");
        dlg_line(&a->vw->dlg, "iotriage turned it on in this run. Off, delays are shown as unknown again.");
        dlg_keys(&a->vw->dlg, "y turn off   n/Esc cancel");
        return;
    }
    dlg_open(a, DLG_DELAYACCT_CONFIRM, "Turn on delay accounting (sysctl kernel.task_delayacct=1)?");
    struct dialog *g = &a->vw->dlg;
    dlg_line(g, "The kernel then times every task's waits for block I/O and swap-in (IODLY%%,");
    dlg_line(g, "SWAP%%): a small cost on each context switch, for every task on the machine.");
    dlg_line(g, "%s", "");
    dlg_line(g, "Only tasks started from now on carry delay data: the kernel gives none to");
    dlg_line(g, "tasks forked while it was off. iotriage shows theirs as '-' (unknown), not 0.");
    dlg_line(g, "When you quit, iotriage asks whether to turn it off again.");
    dlg_keys(g, "y turn on   n/Esc cancel");
}

void delayacct_do(struct actions *a)
{
    bool on = !a->da_turned_on;
    int rc = delayacct_set(a->proc_root, on);
    char msg[160];
    if (rc < 0) {
        snprintf(msg, sizeof(msg), "kernel.task_delayacct not changed: %s", strerror(-rc));
        result_dialog(a, "Delay accounting", msg, false);
    } else {
        a->da_turned_on = on;
        a->da_on_wall = clock_wall();
        snprintf(msg, sizeof(msg), "kernel.task_delayacct is now %d%s", on ? 1 : 0,
                 on ? ": delays of tasks started from now on will show" : "");
        result_dialog(a, "Delay accounting", msg, true);
    }
    dlg_keys(&a->vw->dlg, "any key: close");
}

bool actions_quit(struct actions *a)
{
    if (!a->da_turned_on || delayacct_get(a->proc_root) != 1)
        return true;
    char when[16];
    clock_text(when, sizeof(when), a->da_on_wall);
    dlg_open(a, DLG_QUIT_DELAYACCT, "Turn delay accounting off before quitting?");
    dlg_line(&a->vw->dlg, "iotriage turned kernel.task_delayacct on at %s.", when);
    dlg_keys(&a->vw->dlg, "y turn it off and quit   n leave it on and quit   Esc stay");
    return false;
}
