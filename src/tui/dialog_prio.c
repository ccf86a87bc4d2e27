/* SPDX-License-Identifier: GPL-2.0-or-later */
/* tui/dialog_prio.c: the dialogs of a process's I/O priority (i), which drive
 * act/prio.c: the class and level chooser with its preview, the confirmation. */
#define _XOPEN_SOURCE_EXTENDED 1
#include <stdio.h>

#include "source/ioprio.h"
#include "util.h"
#include "tui/dialog.h"

/* ---- a process's I/O priority ---- */

static const int class_order[4] = { IOC_NONE, IOC_RT, IOC_BE, IOC_IDLE };
static const char *const class_text[4] = {
    "none        follow nice and the scheduling policy (the default)",
    "realtime    served before everything else: can starve the others",
    "best-effort levels 0 (first) to 7 (last)",
    "idle        only when no one else wants the device",
};

static int chosen_raw(const struct actions *a)
{
    if (a->cls == IOC_NONE)
        return IOPRIO_MAKE(IOC_NONE, 0);
    if (a->cls == IOC_IDLE)
        return IOPRIO_MAKE(IOC_IDLE, 0);
    return IOPRIO_MAKE(a->cls, a->level);
}

static void label_of(char *buf, size_t n, const struct actions *a)
{
    if (a->cls == IOC_NONE)
        snprintf(buf, n, "none (follows nice)");
    else if (a->cls == IOC_IDLE)
        snprintf(buf, n, "idle");
    else
        snprintf(buf, n, "%s/%d", ioprio_class_name((enum ioprio_class)a->cls), a->level);
}

/* The verdict the chosen label gets on each device of the process. */
static void prio_preview(struct actions *a)
{
    struct dialog *g = &a->vw->dlg;
    const struct result *r = a->r;
    struct ioprio_eff e = ioprio_effective(chosen_raw(a), a->nice, a->policy);
    dlg_line(g, "The kernel would apply %s/%d%s; on the process's devices that is:", ioprio_class_name(e.cls), e.level,
             e.source == IOS_EXPLICIT ? "" : " (derived from nice/policy)");
    const struct task_devs *td = r->cur->tdevs && a->task < r->ntasks ? &r->cur->tdevs[a->task] : NULL;
    if (!td || !td->known || td->err || td->n == 0) {
        dlg_line(g, "  no device known for it (no open file on a block device seen)");
        return;
    }
    for (unsigned k = 0; k < td->n; k++) {
        const struct blockdev_info *b = &r->devs[td->idx[k]].dev->bd;
        const char *s = b->scheduler[0] ? b->scheduler : "no scheduler";
        enum sched_reading x = verdict_sched_reading(b->scheduler, e);
        const char *why = x == SR_IGNORED ? ": it reads no priority" : x == SR_LEVEL_IGNORED ? ": it reads the class only" : "";
        dlg_line(g, "  %-10s %-12s %s%s", r->devs[td->idx[k]].dev->ds.name, s, sched_reading_name(x), why);
    }
}

void prio_chooser(struct actions *a, unsigned sel)
{
    char title[200], name[96];
    snprintf(title, sizeof(title), "I/O priority of process %d (%s)", (int)a->pid,
             safe(name, sizeof(name), a->comm, a->vw));
    dlg_open(a, DLG_PRIO_CHOOSE, title);
    struct dialog *g = &a->vw->dlg;
    const struct task_rates *t = &a->r->tasks[a->task];
    dlg_line(g, "now %s/%d%s (nice %d); set on every thread (%d)", ioprio_class_name(t->prio.cls), t->prio.level,
             t->prio.source == IOS_EXPLICIT ? " set explicitly" : ", derived", a->nice, t->task->nlwp);
    dlg_line(g, "%s", "");
    g->first_item = g->nlines;
    for (unsigned i = 0; i < 4; i++)
        dlg_line(g, "%s", class_text[i]);
    g->nitems = 4;
    g->sel = sel < 4 ? sel : 0;
    a->cls = class_order[g->sel];
    dlg_line(g, "%s", "");
    if (a->cls == IOC_RT || a->cls == IOC_BE)
        dlg_line(g, "level %d   (Left/Right or 0-7; 0 is served first)", a->level);
    else
        dlg_line(g, "level -   (only realtime and best-effort have levels)");
    dlg_line(g, "%s", "");
    prio_preview(a);
    dlg_keys(g, "Up/Down class   Left/Right 0-7 level   Enter review   Esc cancel");
}

void actions_prio(struct actions *a, size_t task)
{
    const char *no = refusal(a);
    if (no) {
        say(a, "%s", no);
        return;
    }
    if (task >= a->r->ntasks) {
        say(a, "no process selected");
        return;
    }
    const struct task_sample *s = a->r->tasks[task].task;
    a->task = task;
    a->pid = s->tgid ? s->tgid : s->id;
    a->start_ticks = s->start_ticks;
    if (a->r->cur->threads && s->tgid != s->id) {
        /* a thread row: the whole process is meant; its start time is the leader's */
        if (prio_start_ticks(a->proc_root, s->tgid, &a->start_ticks) < 0) {
            say(a, "process %d has exited", (int)s->tgid);
            return;
        }
    }
    a->nice = s->nice;
    a->policy = s->policy;
    str_copy(a->comm, s->comm, sizeof(a->comm));
    struct ioprio_eff e = a->r->tasks[task].prio;
    a->level = e.level;
    /* start on the class the process has now */
    unsigned sel = 0;
    if (s->ioprio_raw >= 0)
        for (unsigned i = 0; i < 4; i++)
            if (class_order[i] == (int)IOPRIO_CLASS_OF(s->ioprio_raw))
                sel = i;
    prio_chooser(a, sel);
}

void prio_confirm(struct actions *a)
{
    char title[200], name[96], label[32];
    label_of(label, sizeof(label), a);
    snprintf(title, sizeof(title), "Set %s on every thread of process %d (%s)?", label, (int)a->pid,
             safe(name, sizeof(name), a->comm, a->vw));
    dlg_open(a, DLG_PRIO_CONFIRM, title);
    struct dialog *g = &a->vw->dlg;
    dlg_line(g, "Like ionice -p on each thread: each one is set, then read back.");
    dlg_line(g, "%s", "");
    prio_preview(a);
    dlg_keys(g, "y apply   n/Esc cancel");
}

void prio_do(struct actions *a)
{
    struct prio_outcome o;
    prio_apply(a->proc_root, a->pid, a->start_ticks, chosen_raw(a), &o);
    result_dialog(a, o.err ? "Priority not changed" : o.nfail ? "Priority partly changed" : "Priority changed", o.msg,
                  o.err == 0 && o.nfail == 0);
    dlg_keys(&a->vw->dlg, "any key: close");
}
