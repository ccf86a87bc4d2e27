/* SPDX-License-Identifier: GPL-2.0-or-later */
/* tui/dialog_sched.c: the scheduler switch's dialogs (s, and u to undo it), which drive
 * act/sched.c: the menu, the confirmation with what changes, the wait for a device that
 * has requests in flight, the result; and the after-figures of the last switch
 * (actions_sampled). tui/dialog.h. */
#define _XOPEN_SOURCE_EXTENDED 1
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>

#include "source/ioprio.h"
#include "util.h"
#include "tui/dialog.h"

/* ---- the scheduler switch ---- */

const struct dev_rates *sched_find_dev(const struct result *r, const char *name)
{
    for (size_t i = 0; i < r->ndevs; i++)
        if (strcmp(r->devs[i].dev->ds.name, name) == 0)
            return &r->devs[i];
    return NULL;
}

struct dialog *sched_list_open(struct actions *a, const char *disk, enum dialog_kind kind, const char *verb,
                               const char *title, bool at_current)
{
    str_copy(a->disk, disk, sizeof(a->disk));
    int rc = sched_read(a->sys_root, a->disk, &a->expect);
    if (rc < 0 || a->expect.nsched == 0) {
        say(a, "%s has no I/O scheduler to %s%s%s", a->disk, verb, rc < 0 ? ": " : " (bio-based device)",
            rc < 0 ? strerror(-rc) : "");
        return NULL;
    }
    dlg_open(a, kind, title);
    struct dialog *g = &a->vw->dlg;
    dlg_line(g, "now: %s, nr_requests %ld", a->expect.sched[0] ? a->expect.sched : "?", a->expect.nr_requests);
    dlg_line(g, "%s", "");
    g->first_item = g->nlines;
    for (unsigned i = 0; i < a->expect.nsched; i++) {
        bool cur = strcmp(a->expect.list[i], a->expect.sched) == 0;
        dlg_line(g, "%-12s %s%s", a->expect.list[i], verdict_sched_reads(a->expect.list[i]), cur ? "  [current]" : "");
        if (at_current ? cur : !cur && g->sel == 0 && strcmp(a->expect.list[0], a->expect.sched) == 0)
            g->sel = i;
    }
    g->nitems = a->expect.nsched;
    return g;
}

/* The scheduler menu of whole disk `disk`; why: what the title adds after its name
 * ("" none). */
static void sched_menu(struct actions *a, const char *disk, const char *why)
{
    char title[200];
    snprintf(title, sizeof(title), "I/O scheduler of %s%s", disk, why);
    struct dialog *g = sched_list_open(a, disk, DLG_SCHED_MENU, "switch", title, true);
    if (g)
        dlg_keys(g, "Up/Down choose   Enter review the switch   Esc cancel");
}

/* The menu of the disk chosen below a bio-based device. */
void sched_menu_below(struct actions *a, const char *disk)
{
    char why[160];
    snprintf(why, sizeof(why), " (below %s, which has none of its own)", a->pick_from);
    sched_menu(a, disk, why);
}

void actions_sched(struct actions *a, const char *dev)
{
    const char *no = refusal(a);
    if (no) {
        say(a, "%s", no);
        return;
    }
    const struct dev_rates *d = sched_find_dev(a->r, dev);
    if (!d) {
        say(a, "no device selected: Tab to the devices, pick one, then s");
        return;
    }
    const struct blockdev_info *b = &d->dev->bd;
    /* A bio-based device (dm, md) has no scheduler: its I/O is served by the disks at
     * the bottom of its stack, whose switch is offered instead, each its own. */
    if (!b->partition && b->nsched == 0) {
        const char *below[16];
        size_t n = snapshot_disks_below(a->r->cur, dev, below, 16);
        if (n == 0) {
            say(a, "%s has no I/O scheduler to switch (bio-based device, no disk below it listed)", dev);
            return;
        }
        str_copy(a->pick_from, dev, sizeof(a->pick_from));
        a->npick = (unsigned)n;
        for (size_t i = 0; i < n; i++)
            str_copy(a->pick[i], below[i], sizeof(a->pick[i]));
        if (n == 1) {
            sched_menu_below(a, a->pick[0]);
            return;
        }
        char title[160];
        snprintf(title, sizeof(title), "%s has no I/O scheduler: the disks below it serve its I/O", dev);
        dlg_open(a, DLG_SCHED_PICK, title);
        struct dialog *g = &a->vw->dlg;
        dlg_line(g, "Switch the scheduler of which disk below it (each its own switch and undo)?");
        dlg_line(g, "%s", "");
        g->first_item = g->nlines;
        for (unsigned i = 0; i < a->npick; i++) {
            const struct dev_sample *s = snapshot_dev(a->r->cur, a->pick[i]);
            dlg_line(g, "%-12s %s", a->pick[i], s && s->bd.scheduler[0] ? s->bd.scheduler : "?");
        }
        g->nitems = a->npick;
        g->sel = 0;
        dlg_keys(g, "Up/Down choose   Enter its schedulers   Esc cancel");
        return;
    }
    /* A partition shares its disk's queue: the switch is the disk's. */
    char why[160] = "";
    if (b->partition)
        snprintf(why, sizeof(why), " (the disk of %s)", dev);
    sched_menu(a, b->disk, why);
}

/* Processes on the disk whose verdict the switch would change, as dialog lines. */
unsigned sched_list_changed(struct actions *a, const char *from, const char *to)
{
    const struct result *r = a->r;
    struct dialog *g = &a->vw->dlg;
    unsigned n = 0, shown = 0;
    for (size_t ti = 0; r->cur->tdevs && ti < r->ntasks; ti++) {
        const struct task_devs *td = &r->cur->tdevs[ti];
        bool hit = false;
        for (unsigned k = 0; k < td->n; k++)
            hit |= strcmp(r->devs[td->idx[k]].dev->bd.disk, a->disk) == 0;
        if (!hit)
            continue;
        const struct task_rates *t = &r->tasks[ti];
        enum sched_reading x = verdict_sched_reading(from, t->prio), y = verdict_sched_reading(to, t->prio);
        if (x == y)
            continue;
        n++;
        if (shown < 6 && g->nlines + 4 < DLG_LINES) {
            char name[96];
            dlg_line(g, "  %7d %-14.14s %s/%d%s: %s -> %s", (int)t->task->id, safe(name, sizeof(name), t->task->comm, a->vw),
                     ioprio_class_name(t->prio.cls), t->prio.level, t->prio.source == IOS_EXPLICIT ? "" : "~",
                     sched_reading_name(x), sched_reading_name(y));
            shown++;
        }
    }
    if (n > shown)
        dlg_line(g, "  ... and %u more", n - shown);
    return n;
}

/* Requests in flight on disk now, from sysfs (reading it does not wait for a frozen
 * queue); -1 unknown. */
static long inflight_now(const struct actions *a, const char *disk)
{
    char path[320], buf[64];
    snprintf(path, sizeof(path), "%s/class/block/%s/inflight", a->sys_root ? a->sys_root : "/sys", disk);
    long r, w;
    if (read_file_at(AT_FDCWD, path, buf, sizeof(buf)) <= 0 || blockdev_parse_inflight(buf, &r, &w) < 0)
        return -1;
    return r + w;
}

#define STALL_MIN_S   1.0            /* the switch would hold the device's I/O this long: say so */
#define STALL_FACTOR  20.0           /* "far longer than usual": 20 times the usual await */

/* Before y: is the device stuck? A switch waits until every request in flight has
 * completed, and the kernel holds new I/O to the device meanwhile. sysfs gives no
 * request's age, but when nothing completed over the last intervals while the device
 * was busy, the requests in flight then are still in flight: the oldest is at least
 * that old (sched_stalled_s). The warning comes from STALL_MIN_S on, whatever the
 * device usually does (a switch holding I/O for a second is worth knowing), and says
 * "far longer than usual" from STALL_FACTOR times the usual await: the device's await
 * in quiet intervals (delta.h), else its mean await over the history. An interval that
 * completed something but whose await is above both limits warns the same way. Adds
 * dialog lines; returns true when it warned. */
static bool stall_warning(struct actions *a, const struct dev_rates *d)
{
    struct dialog *g = &a->vw->dlg;
    const struct spark *s = spark_find(a->vw, a->disk);
    long inflight = inflight_now(a, a->disk);
    if (!s || s->n == 0 || inflight <= 0)
        return false;
    struct sched_interval hist[SPARK_LEN];
    double sum_await = 0, n_await = 0;
    for (unsigned k = 0; k < s->n; k++) {
        unsigned i = (s->head + SPARK_LEN - s->n + k) % SPARK_LEN;
        hist[k] = (struct sched_interval){ s->v[i] * s->itv[i], s->util[i], s->itv[i] };
        if (!isnan(s->await[i]))
            sum_await += s->await[i], n_await++;
    }
    double usual_ms = d && !isnan(d->quiet_await) ? d->quiet_await : n_await > 0 ? sum_await / n_await : (double)NAN;
    double stalled = sched_stalled_s(hist, s->n);
    double last_await = s->await[(s->head + SPARK_LEN - 1) % SPARK_LEN];
    double age_s;
    char head[160], usual[80] = "";
    if (!isnan(stalled) && stalled >= STALL_MIN_S)
        age_s = stalled, snprintf(head, sizeof(head), "no request on %s has completed for %.1f s", a->disk, age_s);
    else if (!isnan(last_await) && last_await / 1000.0 >= STALL_MIN_S)
        age_s = last_await / 1000.0, snprintf(head, sizeof(head), "requests on %s take %.1f s now", a->disk, age_s);
    else
        return false;
    if (!isnan(usual_ms) && age_s * 1000.0 >= STALL_FACTOR * usual_ms)
        snprintf(usual, sizeof(usual), ", far longer than usual (%.1f ms)", usual_ms);
    dlg_line(g, "WARNING: %s%s; %ld in flight now.", head, usual, inflight);
    dlg_line(g, "The switch waits until every request in flight has completed, and the kernel holds new");
    dlg_line(g, "I/O to %s until then. iotriage stays usable meanwhile and q quits without waiting.", a->disk);
    dlg_line(g, "%s", "");
    return true;
}

void sched_confirm(struct actions *a, const char *to)
{
    str_copy(a->to, to, sizeof(a->to));
    const struct sched_state *e = &a->expect;
    char title[160];
    snprintf(title, sizeof(title), "Switch %s from %s to %s?", a->disk, e->sched, to);
    dlg_open(a, DLG_SCHED_CONFIRM, title);
    struct dialog *g = &a->vw->dlg;
    stall_warning(a, sched_find_dev(a->r, a->disk));
    dlg_line(g, "%-12s %s", to, verdict_sched_reads(to));
    dlg_line(g, "%-12s %s (now)", e->sched, verdict_sched_reads(e->sched));
    dlg_line(g, "%s", "");
    dlg_line(g, "Processes with files on %s whose priority verdict changes:", a->disk);
    if (sched_list_changed(a, e->sched, to) == 0)
        dlg_line(g, "  none%s", a->r->cur->tdevs ? "" : " known (no device attribution)");
    dlg_line(g, "%s", "");
    long cur_def = sched_default_nr_requests(e->sched, e->queue_depth);
    long new_def = sched_default_nr_requests(to, e->queue_depth);
    bool by_hand = cur_def > 0 && e->nr_requests != cur_def;
    char nd[32];
    if (new_def > 0)
        snprintf(nd, sizeof(nd), "%ld", new_def);
    else
        snprintf(nd, sizeof(nd), "its default (unknown here)");
    dlg_line(g, "nr_requests: now %ld%s; switching resets it: %s sets %s", e->nr_requests,
             by_hand ? " (set by hand: the default is different)" : cur_def > 0 ? " (the default)" : "", to, nd);
    a->keep_nr = 0;
    /* keeping is offered for a value set by hand (or when the default is not known) */
    if (e->nr_requests > 0 && e->nr_requests != new_def && (by_hand || cur_def <= 0)) {
        if (sched_nr_requests_valid(to, e->nr_requests, e->queue_depth))
            a->keep_nr = e->nr_requests;
        else
            dlg_line(g, "  %ld cannot be kept: %s allows %s", e->nr_requests, to,
                     strcmp(to, "none") == 0 ? "at most the hardware queue depth" : "4 to 2048");
    }
    char keys[200];
    if (a->keep_nr)
        snprintf(keys, sizeof(keys), "y switch (nr_requests %s)   k switch, keep nr_requests %ld   n/Esc cancel", nd,
                 a->keep_nr);
    else
        snprintf(keys, sizeof(keys), "y switch (nr_requests %s)   n/Esc cancel", nd);
    dlg_keys(g, keys);
}

/* Means of the device's figures over the last `secs` seconds before `until`. */
static struct dev_figs figs_before(const struct view *vw, const char *disk, double until, double secs)
{
    struct dev_figs f = { (double)NAN, (double)NAN, (double)NAN, (double)NAN, 0, 0 };
    const struct spark *s = spark_find(vw, disk);
    if (!s)
        return f;
    double si = 0, sa = 0, sq = 0, su = 0, wa = 0;
    for (unsigned k = 0; k < s->n; k++) {
        unsigned i = (s->head + SPARK_LEN - 1 - k) % SPARK_LEN;
        if (s->t[i] <= 0 || s->t[i] > until + 0.001 || s->t[i] < until - secs || isnan(s->v[i]))
            continue;
        double w = s->itv[i];
        si += s->v[i] * w, sq += s->aqu[i] * w, su += s->util[i] * w;
        if (!isnan(s->await[i]))
            sa += s->await[i] * w, wa += w;
        f.secs += w;
        f.n++;
    }
    if (f.secs > 0) {
        f.iops = si / f.secs, f.aqu = sq / f.secs, f.util = su / f.secs;
        f.await = wa > 0 ? sa / wa : (double)NAN;
    }
    return f;
}

/* The switch is done (or its child failed): the result, the undo, the udev rule. */
void sched_finish(struct actions *a, const struct sched_outcome *o)
{
    bool undo = a->job_undo;
    char title[96];
    snprintf(title, sizeof(title), "%s %s", undo ? "Undo" : "Switch", o->err ? "failed" : "done");
    /* the operator may have hidden the waiting dialog and opened another: keep that one */
    bool show = a->vw->dlg.kind == DLG_NONE || a->vw->dlg.kind == DLG_SCHED_WAIT;
    if (show) {
        result_dialog(a, title, o->msg, o->err == 0);
    } else {
        say(a, "%s: %s", title, o->msg);
    }
    if (o->err) {
        if (show)
            dlg_keys(&a->vw->dlg, "any key: close");
        return;
    }
    const char *disk = a->disk;      /* actions_undo set it to the undone disk */
    /* before/after figures, for a minute: before up to y, after from the moment it took */
    struct switch_mark *m = &a->vw->mark;
    memset(m, 0, sizeof(*m));
    m->active = true;
    str_copy(m->disk, disk, sizeof(m->disk));
    str_copy(m->from, o->before.sched, sizeof(m->from));
    str_copy(m->to, o->after.sched, sizeof(m->to));
    m->mono = clock_mono();
    m->asked = a->job_mono;
    m->before = figs_before(a->vw, disk, a->job_mono, 30.0);
    if (undo) {
        if (a->nundo)
            a->nundo--;
    } else {
        if (a->nundo == ACTIONS_UNDO_MAX) {
            memmove(&a->undo[0], &a->undo[1], (ACTIONS_UNDO_MAX - 1) * sizeof(a->undo[0]));
            a->nundo--;
        }
        struct sched_undo *u = &a->undo[a->nundo++];
        str_copy(u->disk, disk, sizeof(u->disk));
        u->from = o->before;
        u->to = o->after;
        u->wall = clock_wall();
    }
    sched_udev_rule(a->vw->udev_rule, sizeof(a->vw->udev_rule), a->sys_root, disk, o->after.sched,
                    o->after.nr_requests);
    str_copy(a->vw->udev_disk, disk, sizeof(a->vw->udev_disk));
    if (!show)
        return;
    struct dialog *g = &a->vw->dlg;
    double took = m->mono - a->job_mono;
    if (took >= 1.0)
        dlg_line(g, "It took %.1f s: the kernel switches only once the requests in flight have completed.", took);
    dlg_line(g, "%s", "");
    dlg_line(g, "To keep it after a reboot, a udev rule (iotriage writes no file), e.g. in");
    dlg_line(g, "/etc/udev/rules.d/60-io-scheduler.rules:");
    dlg_line(g, "%s", a->vw->udev_rule);
    dlg_line(g, "%s", "");
    dlg_line(g, "The device view (Enter on %s) shows before/after figures for a minute.", disk);
    if (!undo)
        dlg_line(g, "u undoes this switch (after a confirmation).");
    else if (a->nundo)
        dlg_line(g, "u undoes the switch before it, of %s (after a confirmation).", a->undo[a->nundo - 1].disk);
    dlg_keys(g, "any key: close");
}

/* The dialog while the child waits for the device. */
void wait_dialog(struct actions *a)
{
    const struct sched_job *j = &a->job;
    char title[160];
    snprintf(title, sizeof(title), "%s %s to %s: waiting for the device", a->job_undo ? "Undoing: switching" : "Switching",
             j->disk, j->to);
    dlg_open(a, DLG_SCHED_WAIT, title);
    struct dialog *g = &a->vw->dlg;
    long n = inflight_now(a, j->disk);
    char nb[32];
    if (n >= 0)
        snprintf(nb, sizeof(nb), "%ld", n);
    else
        snprintf(nb, sizeof(nb), "an unknown number of");
    dlg_line(g, "Waiting %.1f s for %s request%s in flight on %s to complete.", clock_mono() - a->job_mono, nb,
             n == 1 ? "" : "s", j->disk);
    dlg_line(g, "The kernel changes the scheduler only once every request in flight has completed, and");
    dlg_line(g, "holds new I/O to %s until then. The write runs in process %d, not in iotriage:", j->disk, (int)j->child.pid);
    dlg_line(g, "the screen goes on, and q quits without waiting (that process then finishes alone).");
    dlg_keys(g, "q quit   Esc hide (the result opens when the switch is done)");
}

void sched_do(struct actions *a, bool keep, bool undo)
{
    const struct sched_undo *u = undo && a->nundo ? &a->undo[a->nundo - 1] : NULL;
    if (undo && !u)
        return;
    const char *to = u ? u->from.sched : a->to;
    long nr = u ? u->from.nr_requests : keep ? a->keep_nr : 0;
    const char *disk = u ? u->disk : a->disk;
    a->job_undo = undo;
    a->job_mono = clock_mono();
    int rc = sched_start(&a->job, a->sys_root, disk, &a->expect, to, nr);
    if (rc < 0) {
        char msg[200];
        snprintf(msg, sizeof(msg), "%s: could not start the process that writes: %s; nothing written", disk,
                 strerror(-rc));
        result_dialog(a, undo ? "Undo failed" : "Switch failed", msg, false);
        dlg_keys(&a->vw->dlg, "any key: close");
        return;
    }
    /* A device that is not stuck switches in milliseconds: its result opens at once,
     * with no waiting dialog flashing past. The wait is poll(2), never the write. */
    wait_dialog(a);                  /* replaces the confirmation (drawn only if still waiting) */
    struct pollfd p = { .fd = a->job.child.fd, .events = POLLIN };
    if (poll(&p, 1, 200) > 0)
        actions_poll(a);
}

void actions_undo(struct actions *a)
{
    const char *no = refusal(a);
    if (no) {
        say(a, "%s", no);
        return;
    }
    if (!a->nundo) {
        say(a, "nothing to undo: no scheduler was switched in this run");
        return;
    }
    const struct sched_undo *u = &a->undo[a->nundo - 1];
    int rc = sched_read(a->sys_root, u->disk, &a->expect);
    if (rc < 0) {
        say(a, "cannot read %s: %s", u->disk, strerror(-rc));
        return;
    }
    str_copy(a->disk, u->disk, sizeof(a->disk));
    char when[16], title[160];
    clock_text(when, sizeof(when), u->wall);
    snprintf(title, sizeof(title), "Undo the switch of %s at %s?", u->disk, when);
    dlg_open(a, DLG_UNDO_CONFIRM, title);
    struct dialog *g = &a->vw->dlg;
    dlg_line(g, "scheduler   %s -> %s", a->expect.sched, u->from.sched);
    dlg_line(g, "nr_requests %ld -> %ld", a->expect.nr_requests, u->from.nr_requests);
    if (strcmp(a->expect.sched, u->to.sched) != 0 || a->expect.nr_requests != u->to.nr_requests)
        dlg_line(g, "note: %s is now %s/%ld, not the %s/%ld iotriage set: something else changed it", u->disk,
                 a->expect.sched, a->expect.nr_requests, u->to.sched, u->to.nr_requests);
    if (a->nundo > 1)
        dlg_line(g, "(the last of %u switches in this run; u again undoes the one before)", a->nundo);
    dlg_line(g, "%s", "");
    dlg_line(g, "%-12s %s", u->from.sched, verdict_sched_reads(u->from.sched));
    dlg_line(g, "%s", "");
    dlg_line(g, "Processes with files on %s whose priority verdict changes:", u->disk);
    if (sched_list_changed(a, a->expect.sched, u->from.sched) == 0)
        dlg_line(g, "  none");
    dlg_keys(g, "y undo   n/Esc cancel");
}

void actions_sampled(struct actions *a)
{
    actions_poll(a);
    struct switch_mark *m = &a->vw->mark;
    const struct result *r = a->r;
    if (!m->active || !r || r->interval_s <= 0)
        return;
    if (r->cur->mono - m->mono > SWITCH_SHOW_S + 30.0) {
        m->active = false;
        return;
    }
    /* only intervals that began after the write */
    if (r->cur->mono - r->interval_s < m->mono - 0.01)
        return;
    const struct dev_rates *d = sched_find_dev(r, m->disk);
    if (!d || !d->valid || r->cur->mono - m->mono > SWITCH_SHOW_S)
        return;
    double w = r->interval_s;
    m->sum_iops += (d->r_s + d->w_s) * w;
    m->sum_aqu += d->aqu_sz * w;
    m->sum_util += d->util * w;
    if (!isnan(d->await)) {
        m->sum_await += d->await * w;
        m->await_secs += w;
    }
    m->sum_secs += w;
    m->n_after++;
}
