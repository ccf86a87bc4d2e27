/* SPDX-License-Identifier: GPL-2.0-or-later */
/* tui/actions.c: dialogs that ask before anything is changed, and report what changed.
 *
 * Every dialog is filled here as plain text (untrusted names escaped) and painted by
 * draw.c. A dialog's `y` is taken only when draw.c could show all of it: nobody
 * confirms a change they could not read. */
#define _XOPEN_SOURCE_EXTENDED 1
#include "tui/actions.h"

#include <curses.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>

#include "util/escape.h"
#include "util/fmt.h"
#include "source/ioprio.h"
#include "util.h"

/* ---- filling a dialog ---- */

static void dlg_open(struct actions *a, enum dialog_kind kind, const char *title)
{
    struct dialog *d = &a->vw->dlg;
    memset(d, 0, sizeof(*d));
    d->kind = kind;
    str_copy(d->title, title, sizeof(d->title));
}

__attribute__((format(printf, 2, 3)))
static void dlg_line(struct dialog *d, const char *fmt, ...)
{
    if (d->nlines >= DLG_LINES)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(d->lines[d->nlines++], DLG_LINE_MAX, fmt, ap);
    va_end(ap);
}

static void dlg_keys(struct dialog *d, const char *keys)
{
    str_copy(d->keys, keys, sizeof(d->keys));
}

static void dlg_close(struct actions *a)
{
    a->vw->dlg.kind = DLG_NONE;
}

__attribute__((format(printf, 2, 3)))
static void say(struct actions *a, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(a->vw->message, sizeof(a->vw->message), fmt, ap);
    va_end(ap);
}

/* Untrusted text (a process name) made safe for the dialog. */
static const char *safe(char *buf, size_t n, const char *s, const struct view *vw)
{
    esc_display(buf, n, s, strlen(s), vw->utf8);
    return buf;
}

static void clock_text(char *buf, size_t n, double wall)
{
    time_t t = (time_t)wall;
    struct tm tm;
    localtime_r(&t, &tm);
    strftime(buf, n, "%H:%M:%S", &tm);
}

/* Why no action can be taken now, or NULL. */
static const char *refusal(const struct actions *a)
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
    if (act_read_only())
        return act_built_read_only() ? "read-only: this iotriage was built read-only and changes nothing"
                                     : "read-only: started with --read-only, iotriage changes nothing";
    if (a->vw->replay_total)
        return "a replay shows a recording: there is nothing here to change";
    if (!a->r)
        return "wait for the first sample";
    return NULL;
}

/* ---- the scheduler switch ---- */

static const struct dev_rates *find_dev(const struct result *r, const char *name)
{
    for (size_t i = 0; i < r->ndevs; i++)
        if (strcmp(r->devs[i].dev->ds.name, name) == 0)
            return &r->devs[i];
    return NULL;
}

/* The scheduler menu of whole disk `disk`; why: what the title adds after its name
 * ("" none). */
static void sched_menu(struct actions *a, const char *disk, const char *why)
{
    str_copy(a->disk, disk, sizeof(a->disk));
    int rc = sched_read(a->sys_root, a->disk, &a->expect);
    if (rc < 0 || a->expect.nsched == 0) {
        say(a, "%s has no I/O scheduler to switch%s%s", a->disk, rc < 0 ? ": " : " (bio-based device)",
            rc < 0 ? strerror(-rc) : "");
        return;
    }
    char title[200];
    snprintf(title, sizeof(title), "I/O scheduler of %s%s", a->disk, why);
    dlg_open(a, DLG_SCHED_MENU, title);
    struct dialog *g = &a->vw->dlg;
    dlg_line(g, "now: %s, nr_requests %ld", a->expect.sched[0] ? a->expect.sched : "?", a->expect.nr_requests);
    dlg_line(g, "%s", "");
    g->first_item = g->nlines;
    for (unsigned i = 0; i < a->expect.nsched; i++) {
        bool cur = strcmp(a->expect.list[i], a->expect.sched) == 0;
        dlg_line(g, "%-12s %s%s", a->expect.list[i], verdict_sched_reads(a->expect.list[i]), cur ? "  [current]" : "");
        if (cur)
            g->sel = i;
    }
    g->nitems = a->expect.nsched;
    dlg_keys(g, "Up/Down choose   Enter review the switch   Esc cancel");
}

/* The menu of the disk chosen below a bio-based device. */
static void sched_menu_below(struct actions *a, const char *disk)
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
    const struct dev_rates *d = find_dev(a->r, dev);
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
static unsigned list_changed(struct actions *a, const char *from, const char *to)
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

static void sched_confirm(struct actions *a, const char *to)
{
    str_copy(a->to, to, sizeof(a->to));
    const struct sched_state *e = &a->expect;
    char title[160];
    snprintf(title, sizeof(title), "Switch %s from %s to %s?", a->disk, e->sched, to);
    dlg_open(a, DLG_SCHED_CONFIRM, title);
    struct dialog *g = &a->vw->dlg;
    stall_warning(a, find_dev(a->r, a->disk));
    dlg_line(g, "%-12s %s", to, verdict_sched_reads(to));
    dlg_line(g, "%-12s %s (now)", e->sched, verdict_sched_reads(e->sched));
    dlg_line(g, "%s", "");
    dlg_line(g, "Processes with files on %s whose priority verdict changes:", a->disk);
    if (list_changed(a, e->sched, to) == 0)
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

static void result_dialog(struct actions *a, const char *title, const char *msg, bool ok)
{
    dlg_open(a, DLG_RESULT, title);
    struct dialog *g = &a->vw->dlg;
    dlg_line(g, "%s%s", ok ? "" : "FAILED: ", msg);
    say(a, "%s", msg);
}

/* The switch is done (or its child failed): the result, the undo, the udev rule. */
static void sched_finish(struct actions *a, const struct sched_outcome *o)
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
        a->have_undo = false;
    } else {
        a->have_undo = true;
        str_copy(a->undo_disk, disk, sizeof(a->undo_disk));
        a->undo_from = o->before;
        a->undo_to = o->after;
        a->undo_wall = clock_wall();
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
    dlg_keys(g, "any key: close");
}

/* The dialog while the child waits for the device. */
static void wait_dialog(struct actions *a)
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

static void sched_do(struct actions *a, bool keep, bool undo)
{
    const char *to = undo ? a->undo_from.sched : a->to;
    long nr = undo ? a->undo_from.nr_requests : keep ? a->keep_nr : 0;
    const char *disk = undo ? a->undo_disk : a->disk;
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

int actions_wait_fd(const struct actions *a)
{
    /* one change at a time (refusal): at most one of the two is under way */
    return a->job.child.pid > 0 ? a->job.child.fd : a->fs_job.child.pid > 0 ? a->fs_job.child.fd : -1;
}

static void fs_finish(struct actions *a, const struct fsfix_outcome *o);
static void fs_wait_dialog(struct actions *a);

static bool fs_poll(struct actions *a)
{
    struct fsfix_outcome o;
    if (fsfix_collect(&a->fs_job, &o) == 0) {
        if (a->vw->dlg.kind != DLG_FS_WAIT)
            return false;
        fs_wait_dialog(a);           /* the seconds, afresh */
        return true;
    }
    fs_finish(a, &o);
    return true;
}

bool actions_poll(struct actions *a)
{
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

void actions_undo(struct actions *a)
{
    const char *no = refusal(a);
    if (no) {
        say(a, "%s", no);
        return;
    }
    if (!a->have_undo) {
        say(a, "nothing to undo: no scheduler was switched in this run");
        return;
    }
    int rc = sched_read(a->sys_root, a->undo_disk, &a->expect);
    if (rc < 0) {
        say(a, "cannot read %s: %s", a->undo_disk, strerror(-rc));
        return;
    }
    str_copy(a->disk, a->undo_disk, sizeof(a->disk));
    char when[16], title[160];
    clock_text(when, sizeof(when), a->undo_wall);
    snprintf(title, sizeof(title), "Undo the switch of %s at %s?", a->undo_disk, when);
    dlg_open(a, DLG_UNDO_CONFIRM, title);
    struct dialog *g = &a->vw->dlg;
    dlg_line(g, "scheduler   %s -> %s", a->expect.sched, a->undo_from.sched);
    dlg_line(g, "nr_requests %ld -> %ld", a->expect.nr_requests, a->undo_from.nr_requests);
    if (strcmp(a->expect.sched, a->undo_to.sched) != 0 || a->expect.nr_requests != a->undo_to.nr_requests)
        dlg_line(g, "note: %s is now %s/%ld, not the %s/%ld iotriage set: something else changed it", a->undo_disk,
                 a->expect.sched, a->expect.nr_requests, a->undo_to.sched, a->undo_to.nr_requests);
    dlg_line(g, "%s", "");
    dlg_line(g, "%-12s %s", a->undo_from.sched, verdict_sched_reads(a->undo_from.sched));
    dlg_line(g, "%s", "");
    dlg_line(g, "Processes with files on %s whose priority verdict changes:", a->undo_disk);
    if (list_changed(a, a->expect.sched, a->undo_from.sched) == 0)
        dlg_line(g, "  none");
    dlg_keys(g, "y undo   n/Esc cancel");
}

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

static void prio_chooser(struct actions *a, unsigned sel)
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

static void prio_confirm(struct actions *a)
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

static void prio_do(struct actions *a)
{
    struct prio_outcome o;
    prio_apply(a->proc_root, a->pid, a->start_ticks, chosen_raw(a), &o);
    result_dialog(a, o.err ? "Priority not changed" : o.nfail ? "Priority partly changed" : "Priority changed", o.msg,
                  o.err == 0 && o.nfail == 0);
    dlg_keys(&a->vw->dlg, "any key: close");
}

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

static void delayacct_do(struct actions *a)
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

void actions_exit_note(struct actions *a, FILE *f)
{
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

static bool is_cancel(int ch)
{
    return ch == 27 || ch == 'n' || ch == 'N' || ch == 'q';
}

static bool is_enter(int ch)
{
    return ch == '\n' || ch == '\r' || ch == KEY_ENTER;
}

static void menu_move(struct dialog *g, int ch)
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
static bool confirm_ok(struct actions *a)
{
    if (a->vw->dlg.complete)
        return true;
    say(a, "the terminal is too small to show the whole dialog: enlarge it, then y");
    return false;
}

/* ---- space held by a deleted-but-open file ---- */

#define FS_SIGNAL_WAIT_S 3.0         /* how long the holder is watched after the signal */

static const struct { int sig; const char *what; } fs_signals[] = {
    { SIGHUP,  "the usual signal to reload and reopen log files" },
    { SIGUSR1, "nginx reopens its logs on it; Apache httpd restarts gracefully" },
    { SIGUSR2, "a program's own meaning (dnsmasq reopens its log on it)" },
    { SIGTERM, "asks it to exit: the file is let go when it has" },
};
#define FS_NSIGNALS ((unsigned)ARRAY_SIZE(fs_signals))

static const char *sig_name(char buf[24], int sig)
{
    if (sig >= SIGRTMIN && sig <= SIGRTMAX)
        snprintf(buf, 24, sig == SIGRTMIN ? "SIGRTMIN" : "SIGRTMIN+%d", sig - SIGRTMIN);
    else
        snprintf(buf, 24, "SIG%s", sigabbrev_np(sig) ? sigabbrev_np(sig) : "?");
    return buf;
}

static const char *size_text(char buf[16], uint64_t v)
{
    fmt_size(buf, 16, (double)v);
    return buf;
}

/* "bash[123]" of the target, and "bash[123] fd 3" */
static const char *proc_text(char *buf, size_t n, const struct actions *a)
{
    char name[96];
    snprintf(buf, n, "%s[%d]", safe(name, sizeof(name), a->fs_comm[0] ? a->fs_comm : "?", a->vw), (int)a->fst.pid);
    return buf;
}

static const char *holder_text(char *buf, size_t n, const struct actions *a)
{
    char p[112];
    snprintf(buf, n, "%s fd %d", proc_text(p, sizeof(p), a), a->fst.fd);
    return buf;
}

static const char *append_text(int append, int writes)
{
    if (writes == 0)
        return "only reads it";
    return append == 1 ? "appends (O_APPEND)" : append == 0 ? "does not append (no O_APPEND)" : "append unknown";
}

void actions_fs(struct actions *a, size_t fsi, size_t file, size_t holder)
{
    const char *no = refusal(a);
    if (no) {
        say(a, "%s", no);
        return;
    }
    if (fsi >= a->r->nfss || file >= a->r->fss[fsi].fs->ndel || holder >= a->r->fss[fsi].fs->del[file].nholders) {
        say(a, "select a holder of a deleted file (Down below its filesystem), then Enter");
        return;
    }
    const struct fs_sample *fs = a->r->fss[fsi].fs;
    const struct fs_deleted_file *d = &fs->del[file];
    const struct fs_holder *h = &d->holders[holder];
    str_copy(a->fs_mount, fs->fs.m.mount, sizeof(a->fs_mount));
    str_copy(a->fs_dev, fs->dev_idx >= 0 ? a->r->cur->devs[fs->dev_idx].ds.name : fs->fs.m.fstype, sizeof(a->fs_dev));
    str_copy(a->fs_path, d->path ? d->path : "?", sizeof(a->fs_path));
    str_copy(a->fs_comm, h->comm, sizeof(a->fs_comm));
    a->fst = (struct fsfix_target){ .pid = h->pid, .fd = h->fd, .dev = d->dev, .ino = d->ino,
                                    .start_ticks = h->start_ticks, .mount = a->fs_mount };
    a->fs_size = d->size;
    a->fs_blocks = d->blocks_bytes;
    a->fs_space_known = fs->fs.statfs_err == 0;
    a->fs_avail = fs->fs.avail;
    a->fs_append = h->flags_known ? h->append : -1;
    a->fs_writes = h->flags_known ? (h->flags & O_ACCMODE) != O_RDONLY : -1;
    a->fs_nothers = a->fs_noappend = 0;
    for (size_t j = 0; j < d->nholders; j++) {
        const struct fs_holder *o = &d->holders[j];
        a->fs_noappend += o->flags_known && !o->append && (o->flags & O_ACCMODE) != O_RDONLY;
        if (j == holder)
            continue;
        if (a->fs_nothers < ARRAY_SIZE(a->fs_others)) {
            char name[64];
            snprintf(a->fs_others[a->fs_nothers], sizeof(a->fs_others[0]), "%.40s[%d] fd %d, %s",
                     safe(name, sizeof(name), o->comm[0] ? o->comm : "?", a->vw), (int)o->pid, o->fd,
                     fs_holder_mode(o));
        }
        a->fs_nothers++;
    }
    a->fs_copy[0] = '\0';
    a->fs_sig = SIGHUP;
    char path[DLG_LINE_MAX], ht[128];
    dlg_open(a, DLG_FS_MENU, "A deleted file still open: give its space back?");
    struct dialog *g = &a->vw->dlg;
    char sz[16], bl[16];
    dlg_line(g, "file: %s", safe(path, sizeof(path), a->fs_path, a->vw));
    char dev[96];
    dlg_line(g, "on:   %s (%s)", safe(ht, sizeof(ht), a->fs_mount, a->vw), safe(dev, sizeof(dev), a->fs_dev, a->vw));
    dlg_line(g, "size %s, %s allocated; held by %s, which %s%s", size_text(sz, a->fs_size),
             size_text(bl, a->fs_blocks), holder_text(ht, sizeof(ht), a), append_text(a->fs_append, a->fs_writes),
             a->fs_nothers ? "" : " (the only holder)");
    for (unsigned k = 0; k < a->fs_nothers && k < ARRAY_SIZE(a->fs_others); k++)
        dlg_line(g, "also held by %s", a->fs_others[k]);
    if (a->fs_nothers > ARRAY_SIZE(a->fs_others))
        dlg_line(g, "... and %u more holders", a->fs_nothers - (unsigned)ARRAY_SIZE(a->fs_others));
    dlg_line(g, "%s", "");
    g->first_item = g->nlines;
    dlg_line(g, "signal    ask %s to reopen its log (SIGHUP, or another signal)", proc_text(ht, sizeof(ht), a));
    dlg_line(g, "truncate  empty the file through its descriptor: the space comes back at once");
    g->nitems = 2;
    dlg_keys(g, "Up/Down choose   Enter review   s signal   t truncate   Esc cancel");
}

/* What sending sig does to the holder, as a dialog line. */
static void sig_effect(struct actions *a, int sig)
{
    struct dialog *g = &a->vw->dlg;
    bool blocked;
    char sn[24], ht[128];
    enum fsfix_disp d = fsfix_sig_disposition(a->proc_root, a->fst.pid, sig, &blocked);
    proc_text(ht, sizeof(ht), a);
    sig_name(sn, sig);
    if (sig == SIGKILL || sig == SIGSTOP)
        dlg_line(g, "%s cannot be caught: it %s.", sn, fsfix_sig_default(sig));
    else if (d == FSD_CAUGHT)
        dlg_line(g, "%s has a handler for %s (as a program that reopens its log on it has)%s.", ht, sn,
                 blocked ? ", but blocks it now: it runs when unblocked" : "");
    else if (d == FSD_IGNORED)
        dlg_line(g, "%s ignores %s: sending it does nothing.", ht, sn);
    else if (d == FSD_DEFAULT)
        dlg_line(g, "%s%s has no handler for %s: without one the kernel %s.",
                 strncmp(fsfix_sig_default(sig), "terminates", 10) == 0 || strcmp(fsfix_sig_default(sig), "stops it") == 0
                     ? "WARNING: " : "", ht, sn, fsfix_sig_default(sig));
    else
        dlg_line(g, "How %s handles %s is unknown (its status is not readable).", ht, sn);
}

static void fs_signal_menu(struct actions *a, unsigned sel)
{
    char title[200], ht[128];
    snprintf(title, sizeof(title), "Which signal for %s?", proc_text(ht, sizeof(ht), a));
    dlg_open(a, DLG_FS_SIGNAL_MENU, title);
    struct dialog *g = &a->vw->dlg;
    g->first_item = 0;
    for (unsigned i = 0; i < FS_NSIGNALS; i++) {
        char sn[24];
        dlg_line(g, "%-9s %s", sig_name(sn, fs_signals[i].sig), fs_signals[i].what);
    }
    dlg_line(g, "%-9s type a signal's name or number", "other");
    g->nitems = FS_NSIGNALS + 1;
    g->sel = sel < g->nitems ? sel : 0;
    dlg_line(g, "%s", "");
    if (g->sel < FS_NSIGNALS)
        sig_effect(a, fs_signals[g->sel].sig);
    dlg_keys(g, "Up/Down choose   Enter review   Esc cancel");
}

static void fs_signal_type(struct actions *a)
{
    char ht[128];
    char title[200];
    snprintf(title, sizeof(title), "Which signal for %s? Type its name or number", proc_text(ht, sizeof(ht), a));
    dlg_open(a, DLG_FS_SIGNAL_TYPE, title);
    struct dialog *g = &a->vw->dlg;
    char in[DLG_LINE_MAX];
    dlg_line(g, "signal: %s_", safe(in, sizeof(in), a->fs_input, a->vw));
    dlg_line(g, "%s", "");
    dlg_line(g, "e.g. HUP, USR1, SIGUSR2, 10, RTMIN+1");
    if (a->fs_error[0])
        dlg_line(g, "%s", a->fs_error);
    dlg_keys(g, "Enter review   Backspace ^U edit   Esc back");
}

static void fs_signal_confirm(struct actions *a)
{
    char title[DLG_LINE_MAX], sn[24], ht[128], path[DLG_LINE_MAX], mnt[128], bl[16];
    sig_name(sn, a->fs_sig);
    snprintf(title, sizeof(title), "Send %s to %s?", sn, proc_text(ht, sizeof(ht), a));
    dlg_open(a, DLG_FS_SIGNAL_CONFIRM, title);
    struct dialog *g = &a->vw->dlg;
    dlg_line(g, "It holds %s (no name left): %s allocated on %s.", safe(path, sizeof(path), a->fs_path, a->vw),
             size_text(bl, a->fs_blocks), safe(mnt, sizeof(mnt), a->fs_mount, a->vw));
    sig_effect(a, a->fs_sig);
    dlg_line(g, "%s", "");
    dlg_line(g, "iotriage then watches its fd %d for %.0f s: when it lets go (reopens or exits), the", a->fst.fd,
             FS_SIGNAL_WAIT_S);
    dlg_line(g, "space comes back, %s.", a->fs_nothers ? "but only once every other holder lets go too" : "as it is the only holder");
    for (unsigned k = 0; k < a->fs_nothers && k < ARRAY_SIZE(a->fs_others); k++)
        dlg_line(g, "  also held by %s", a->fs_others[k]);
    if (a->fs_nothers)
        dlg_line(g, "(a child that inherited the descriptor holds the file until it closes it or exits)");
    char keys[96];
    snprintf(keys, sizeof(keys), "y send %s   n/Esc cancel", sn);
    dlg_keys(g, keys);
}

static void fs_truncate_confirm(struct actions *a)
{
    char title[200], ht[128], path[DLG_LINE_MAX], mnt[128], sz[16], bl[16], av[16];
    snprintf(title, sizeof(title), "Truncate the deleted file to 0 bytes through %s?", holder_text(ht, sizeof(ht), a));
    dlg_open(a, DLG_FS_TRUNCATE_CONFIRM, title);
    struct dialog *g = &a->vw->dlg;
    dlg_line(g, "file: %s", safe(path, sizeof(path), a->fs_path, a->vw));
    safe(mnt, sizeof(mnt), a->fs_mount, a->vw);
    dlg_line(g, "Its contents are lost: %s (%s allocated on %s%s%s%s). Nothing brings them back.",
             size_text(sz, a->fs_size), size_text(bl, a->fs_blocks), mnt, a->fs_space_known ? ", which has " : "",
             a->fs_space_known ? size_text(av, a->fs_avail) : "", a->fs_space_known ? " available" : "");
    if (a->fs_copy[0]) {
        char cp[DLG_LINE_MAX];
        dlg_line(g, "It is copied first to %s (%s); a copy that fails truncates nothing.",
                 safe(cp, sizeof(cp), a->fs_copy, a->vw), sz);
    } else {
        dlg_line(g, "c copies it first to a path you type (on another filesystem).");
    }
    dlg_line(g, "%s", "");
    if (a->fs_writes == 0) {
        dlg_line(g, "%s only reads the file: after the truncate its reads find nothing more.", ht);
    } else if (a->fs_append == 0) {
        dlg_line(g, "WARNING: %s does not append (no O_APPEND): it writes on at its old offset, so the", ht);
        dlg_line(g, "file becomes sparse at its old size (%s): the space comes back, the size does not.", sz);
    } else if (a->fs_append == 1) {
        dlg_line(g, "%s appends (O_APPEND): its next write lands at the new end, from 0.", ht);
    } else {
        dlg_line(g, "Whether %s appends is unknown: without O_APPEND the file turns sparse at its old size.", ht);
    }
    if (a->fs_nothers && a->fs_noappend && !(a->fs_append == 0 && a->fs_writes != 0))
        dlg_line(g, "WARNING: %u other writer%s without O_APPEND (below): the file turns sparse at its old size when %s "
                 "writes.", a->fs_noappend, a->fs_noappend == 1 ? "" : "s", a->fs_noappend == 1 ? "it" : "one");
    for (unsigned k = 0; k < a->fs_nothers && k < ARRAY_SIZE(a->fs_others); k++)
        dlg_line(g, "  also held by %s", a->fs_others[k]);
    dlg_keys(g, a->fs_copy[0] ? "y copy, then truncate   c change the copy path   n/Esc cancel"
                              : "y truncate   c copy first   n/Esc cancel");
}

static void fs_copy_prompt(struct actions *a)
{
    dlg_open(a, DLG_FS_COPY_PATH, "Copy the file first: to which path?");
    struct dialog *g = &a->vw->dlg;
    char in[DLG_LINE_MAX], sz[16];
    dlg_line(g, "copy to: %s_", safe(in, sizeof(in), a->fs_input, a->vw));
    dlg_line(g, "%s", "");
    dlg_line(g, "An absolute path to a new file (never overwritten) on another filesystem with room for");
    dlg_line(g, "%s: a copy on the same one would take back the space the truncate gives.", size_text(sz, a->fs_size));
    if (a->fs_error[0])
        dlg_line(g, "%s", a->fs_error);
    dlg_keys(g, "Enter accept   Backspace ^U edit   Esc back (no copy)");
}

/* Is path a place the copy may go? Else why not, in a->fs_error. */
static bool fs_copy_ok(struct actions *a, const char *path)
{
    char *e = a->fs_error, sz[16], av[16];
    size_t n = sizeof(a->fs_error);
    struct stat st;
    if (path[0] != '/') {
        snprintf(e, n, "refused: give an absolute path (from /)");
        return false;
    }
    if (lstat(path, &st) == 0) {
        snprintf(e, n, "refused: %.200s exists: iotriage never overwrites a file", path);
        return false;
    }
    if (errno != ENOENT) {
        snprintf(e, n, "refused: %.200s: %s", path, strerror(errno));
        return false;
    }
    if (path[strlen(path) - 1] == '/') {
        snprintf(e, n, "refused: %.200s names a directory: add a file name", path);
        return false;
    }
    char dir[sizeof(a->fs_input)];
    str_copy(dir, path, sizeof(dir));
    char *slash = strrchr(dir, '/');
    slash[slash == dir ? 1 : 0] = '\0';
    if (stat(dir, &st) != 0) {
        snprintf(e, n, "refused: the directory %.200s: %s", dir, strerror(errno));
        return false;
    }
    if (!S_ISDIR(st.st_mode)) {
        snprintf(e, n, "refused: %.200s is not a directory", dir);
        return false;
    }
    if (st.st_dev == a->fst.dev) {
        snprintf(e, n, "refused: %.160s is on the same filesystem as the file (%.40s): the copy would take the space back",
                 dir, a->fs_mount);
        return false;
    }
    struct statvfs sv;
    if (statvfs(dir, &sv) == 0) {
        uint64_t avail = (uint64_t)sv.f_bavail * (sv.f_frsize ? sv.f_frsize : sv.f_bsize);
        if (avail < a->fs_size) {
            snprintf(e, n, "refused: %.200s has %s available, the copy needs %s", dir, size_text(av, avail),
                     size_text(sz, a->fs_size));
            return false;
        }
    }
    e[0] = '\0';
    return true;
}

/* The dialog while the child works. */
static void fs_wait_dialog(struct actions *a)
{
    dlg_open(a, DLG_FS_WAIT, a->fs_job_what);
    struct dialog *g = &a->vw->dlg;
    dlg_line(g, "For %.1f s. It runs in process %d, not in iotriage: the screen goes on, and q quits", 
             clock_mono() - a->fs_job.child.started, (int)a->fs_job.child.pid);
    dlg_line(g, "without waiting (that process then finishes what was confirmed alone).");
    dlg_keys(g, "q quit   Esc hide (the result opens when it is done)");
}

static void fs_do(struct actions *a, enum fsfix_kind kind)
{
    char ht[128], pt[128], sn[24], cp[DLG_LINE_MAX];
    holder_text(ht, sizeof(ht), a);
    proc_text(pt, sizeof(pt), a);
    if (kind == FSFIX_SIGNAL)
        snprintf(a->fs_job_what, sizeof(a->fs_job_what), "Sent %s to %.100s: waiting up to %.0f s for it to let go",
                 sig_name(sn, a->fs_sig), pt, FS_SIGNAL_WAIT_S);
    else if (a->fs_copy[0])
        snprintf(a->fs_job_what, sizeof(a->fs_job_what), "Copying the file to %.100s, then truncating it",
                 safe(cp, sizeof(cp), a->fs_copy, a->vw));
    else
        snprintf(a->fs_job_what, sizeof(a->fs_job_what), "Truncating the file through %s", ht);
    int rc = fsfix_start(&a->fs_job, kind, a->proc_root, &a->fst, a->fs_sig, FS_SIGNAL_WAIT_S,
                         a->fs_copy[0] ? a->fs_copy : NULL);
    if (rc < 0) {
        char msg[200];
        snprintf(msg, sizeof(msg), "could not start the process that acts: %s; nothing done", strerror(-rc));
        result_dialog(a, kind == FSFIX_SIGNAL ? "Signal not sent" : "Nothing truncated", msg, false);
        dlg_keys(&a->vw->dlg, "any key: close");
        return;
    }
    fs_wait_dialog(a);
    /* A quick action shows its result at once; the wait is poll(2), never the work. */
    struct pollfd p = { .fd = a->fs_job.child.fd, .events = POLLIN };
    if (poll(&p, 1, kind == FSFIX_SIGNAL ? 400 : 200) > 0)
        actions_poll(a);
}

/* The action is over: what it did, the space before and after, the file afterwards. */
static void fs_finish(struct actions *a, const struct fsfix_outcome *o)
{
    bool signal = a->fs_job.kind == FSFIX_SIGNAL;
    const char *title = o->err ? (signal ? "Signal failed" : "Truncate failed")
                        : signal ? (o->released ? "Signal sent: the file was let go" : "Signal sent: the file is still held")
                                 : "Truncated";
    bool show = a->vw->dlg.kind == DLG_NONE || a->vw->dlg.kind == DLG_FS_WAIT;
    if (!show) {
        say(a, "%s: %s", title, o->msg);
        return;
    }
    result_dialog(a, title, o->msg, o->err == 0);
    struct dialog *g = &a->vw->dlg;
    char b1[16], b2[16], b3[16], b4[16], mnt[128], ht[128];
    safe(mnt, sizeof(mnt), a->fs_mount, a->vw);
    holder_text(ht, sizeof(ht), a);
    if (!o->err) {
        dlg_line(g, "%s", "");
        if (o->space_known)
            dlg_line(g, "Available on %s: %s before, %s after: %s%s came back", mnt, size_text(b1, o->avail_before),
                     size_text(b2, o->avail_after), o->freed < 0 ? "-" : "",
                     size_text(b3, (uint64_t)(o->freed < 0 ? -o->freed : o->freed)));
        else
            dlg_line(g, "The space available on %s could not be measured.", mnt);
        if (o->after_known)
            dlg_line(g, "The file: %s allocated before, %s after; size %s before, %s after", size_text(b1, o->blocks_before),
                     size_text(b2, o->blocks_after), size_text(b3, o->size_before), size_text(b4, o->size_after));
        else if (signal && o->released)
            dlg_line(g, "%s no longer holds the file (it had %s allocated).", ht, size_text(b1, o->blocks_before));
        if (!signal && o->append == 0 && o->writes != 0)
            dlg_line(g, "WARNING: it does not append: it writes on at offset %s, the file stays sparse at that size.",
                     size_text(b1, o->size_before));
        if (signal && o->released && a->fs_nothers)
            dlg_line(g, "The space comes back only when the other holders let go too (they held it when the dialog opened):");
        for (unsigned k = 0; signal && o->released && k < a->fs_nothers && k < ARRAY_SIZE(a->fs_others); k++)
            dlg_line(g, "  %s", a->fs_others[k]);
        if (a->fs_copy[0] && !signal) {
            char cp[DLG_LINE_MAX];
            dlg_line(g, "The copy: %s, %s.", safe(cp, sizeof(cp), a->fs_copy, a->vw), size_text(b1, o->copied));
        }
        dlg_line(g, "%s", "");
        dlg_line(g, "The filesystems view shows the figures of the next refresh.");
    }
    dlg_keys(g, "any key: close");
}

/* A line typed in a dialog: true when ch was an editing key. */
static bool fs_edit(struct actions *a, int ch)
{
    size_t l = strlen(a->fs_input);
    if (ch == 21) {                  /* ^U */
        a->fs_input[0] = '\0';
    } else if (ch == KEY_BACKSPACE || ch == 127 || ch == 8) {
        if (l)
            a->fs_input[l - 1] = '\0';
    } else if (ch >= 32 && ch < 127) {
        if (l + 1 < sizeof(a->fs_input)) {
            a->fs_input[l] = (char)ch;
            a->fs_input[l + 1] = '\0';
        }
    } else {
        return false;
    }
    a->fs_error[0] = '\0';
    return true;
}

static int fs_key(struct actions *a, int ch)
{
    struct dialog *g = &a->vw->dlg;
    switch (g->kind) {
    case DLG_FS_MENU:
        if (ch == 27 || ch == 'q' || ch == 'n') {
            dlg_close(a);
            say(a, "nothing changed");
        } else if (ch == 's' || (is_enter(ch) && g->sel == 0)) {
            fs_signal_menu(a, 0);
        } else if (ch == 't' || (is_enter(ch) && g->sel == 1)) {
            fs_truncate_confirm(a);
        } else {
            menu_move(g, ch);
        }
        return 0;
    case DLG_FS_SIGNAL_MENU:
        if (ch == 27 || ch == 'q' || ch == 'n') {
            dlg_close(a);
            say(a, "nothing changed");
        } else if (is_enter(ch) && g->sel < FS_NSIGNALS) {
            a->fs_sig = fs_signals[g->sel].sig;
            fs_signal_confirm(a);
        } else if (is_enter(ch)) {
            a->fs_input[0] = a->fs_error[0] = '\0';
            fs_signal_type(a);
        } else {
            menu_move(g, ch);
            fs_signal_menu(a, g->sel);
        }
        return 0;
    case DLG_FS_SIGNAL_TYPE:
        if (ch == 27) {
            fs_signal_menu(a, FS_NSIGNALS);
        } else if (is_enter(ch)) {
            int sig = fsfix_sig_parse(a->fs_input);
            if (sig > 0) {
                a->fs_sig = sig;
                fs_signal_confirm(a);
                return 0;
            }
            snprintf(a->fs_error, sizeof(a->fs_error), "refused: no signal is called '%.60s'", a->fs_input);
            fs_signal_type(a);
        } else if (fs_edit(a, ch)) {
            fs_signal_type(a);
        }
        return 0;
    case DLG_FS_SIGNAL_CONFIRM:
    case DLG_FS_TRUNCATE_CONFIRM:
        if (is_cancel(ch)) {
            dlg_close(a);
            say(a, "nothing changed: %s still holds the file", a->fs_comm[0] ? a->fs_comm : "its holder");
        } else if (ch == 'c' && g->kind == DLG_FS_TRUNCATE_CONFIRM) {
            str_copy(a->fs_input, a->fs_copy, sizeof(a->fs_input));
            a->fs_error[0] = '\0';
            fs_copy_prompt(a);
        } else if ((ch == 'y' || ch == 'Y') && confirm_ok(a)) {
            fs_do(a, g->kind == DLG_FS_SIGNAL_CONFIRM ? FSFIX_SIGNAL : FSFIX_TRUNCATE);
        }
        return 0;
    case DLG_FS_COPY_PATH:
        if (ch == 27) {
            a->fs_copy[0] = '\0';
            fs_truncate_confirm(a);
        } else if (is_enter(ch)) {
            if (!a->fs_input[0]) {
                a->fs_copy[0] = '\0';
                fs_truncate_confirm(a);
            } else if (fs_copy_ok(a, a->fs_input)) {
                str_copy(a->fs_copy, a->fs_input, sizeof(a->fs_copy));
                fs_truncate_confirm(a);
            } else {
                fs_copy_prompt(a);
            }
        } else if (fs_edit(a, ch)) {
            fs_copy_prompt(a);
        }
        return 0;
    case DLG_FS_WAIT:
        if (ch == 'q' || ch == 'Q')
            return actions_quit(a) ? 1 : 0;
        if (ch == 27) {
            dlg_close(a);
            say(a, "%s goes on: its result opens when it is done", a->fs_job.kind == FSFIX_SIGNAL ? "the signal" : "the truncate");
        }
        return 0;
    default:
        return 0;
    }
}

int actions_key(struct actions *a, int ch)
{
    struct dialog *g = &a->vw->dlg;
    a->vw->message[0] = '\0';
    if (!a->r && g->kind != DLG_NONE && g->kind != DLG_RESULT && g->kind != DLG_QUIT_DELAYACCT &&
        g->kind != DLG_SCHED_WAIT && g->kind != DLG_FS_WAIT) {
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
    const struct dev_rates *d = find_dev(r, m->disk);
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
