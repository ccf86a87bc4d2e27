/* SPDX-License-Identifier: GPL-2.0-or-later */
/* tui/tui.c: the interactive loop: sample on time, read keys in between, draw. */
#define _XOPEN_SOURCE_EXTENDED 1
#include "tui/tui.h"

#include <curses.h>
#include <errno.h>
#include <langinfo.h>
#include <math.h>
#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "delta.h"
#include "out/columns.h"
#include "pipeline.h"
#include "source/ioprio.h"
#include "tui/actions.h"
#include "tui/view.h"
#include "util/heap.h"
#include "util.h"
#include "verdict.h"

volatile int tui_stop_signal;

/* ---- rows: what the panels show, in which order ---- */

static bool contains(const char *hay, const char *needle)
{
    return strcasestr(hay, needle) != NULL;
}

/* Has the device ever done I/O? Its lifetime counters say so; a replay has none, and
 * there the IOPS history seen so far does. */
static bool dev_has_io(const struct dev_rates *d, const struct view *vw)
{
    const struct diskstats_row *ds = &d->dev->ds;
    if (ds->f[DS_RD_IOS] || ds->f[DS_WR_IOS])
        return true;
    for (size_t i = 0; i < vw->nsparks; i++)
        if (strcmp(vw->sparks[i].name, ds->name) == 0)
            for (unsigned k = 0; k < SPARK_LEN; k++)
                if (vw->sparks[i].v[k] > 0)
                    return true;
    return false;
}

/* Is task ti in cgroup path, or below it? */
static bool in_cgroup(const struct result *r, size_t ti, const char *path)
{
    int k = r->cgroups ? cgroup_of_task(r, ti) : -1;
    if (k < 0)
        return false;
    const char *p = r->cgroups[k].cg->path;
    size_t n = strlen(path);
    if (strcmp(path, "/") == 0)
        return true;
    return strncmp(p, path, n) == 0 && (p[n] == '\0' || p[n] == '/');
}

void rows_build(struct rows *rows, const struct result *r, const struct verdicts *v, const struct view *vw)
{
    rows_free(rows);
    if (!r)
        return;
    rows->dev = xcalloc(r->ndevs ? r->ndevs : 1, sizeof(size_t));
    for (size_t i = 0; i < r->ndevs; i++) {
        const struct dev_rates *d = &r->devs[i];
        if (!dev_has_io(d, vw))
            continue;                /* never used (an unattached loop device): like iostat */
        if (d->dev->bd.partition && !vw->show_partitions)
            continue;
        if (vw->dev_filter[0] && !contains(d->dev->ds.name, vw->dev_filter))
            continue;
        rows->dev[rows->ndev++] = i;
    }
    /* partitions right after their disk */
    for (size_t a = 1; a < rows->ndev; a++)
        for (size_t b = a; b > 0; b--) {
            const struct dev_rates *x = &r->devs[rows->dev[b - 1]], *y = &r->devs[rows->dev[b]];
            int c = strcmp(x->dev->bd.disk, y->dev->bd.disk);
            if (c == 0)
                c = x->dev->bd.partition - y->dev->bd.partition;
            if (c == 0)
                c = strcmp(x->dev->ds.name, y->dev->ds.name);
            if (c <= 0)
                break;
            size_t tmp = rows->dev[b];
            rows->dev[b] = rows->dev[b - 1];
            rows->dev[b - 1] = tmp;
        }
    rows->proc = xcalloc(r->ntasks ? r->ntasks : 1, sizeof(size_t));
    for (size_t i = 0; i < r->ntasks; i++) {
        const struct task_rates *t = &r->tasks[i];
        if (vw->only_active && !task_is_active(t))
            continue;
        if (vw->filter[0] && !contains(t->task->cmdline, vw->filter) && !contains(t->task->comm, vw->filter) &&
            !contains(t->task->user, vw->filter))
            continue;
        if (vw->cg_filter[0] && !in_cgroup(r, i, vw->cg_filter))
            continue;
        rows->proc[rows->nproc++] = i;
    }
    struct col_ctx c = { .r = r, .v = v, .accumulated = vw->accumulated, .utf8 = vw->utf8 };
    col_sort(rows->proc, rows->nproc, &c, vw->sort, vw->reverse);
}

void rows_free(struct rows *rows)
{
    free(rows->dev);
    free(rows->proc);
    memset(rows, 0, sizeof(*rows));
}

/* ---- the sampling side ---- */

struct tui {
    struct tui_opts opts;
    struct pipeline *p;              /* the machine, or a recording: frames either way */
    const struct frame *f;           /* the frame on the screen, or NULL before the first */
    struct rows rows;
    struct view vw;
    struct actions act;
    struct procinfo_src *pinfo_src;  /* opened with the first process view */
};

static const struct verdicts no_verdicts;

/* What the screen draws from. */
static const struct result *cur_result(const struct tui *t)
{
    return t->f ? t->f->res : NULL;
}

static const struct verdicts *cur_verdicts(const struct tui *t)
{
    return t->f ? t->f->ver : &no_verdicts;
}

/* A replay is live == false: nothing on the screen can be acted on. */
static bool replaying(const struct tui *t)
{
    return pipeline_is_replay(t->p);
}

/* mono 0: a replayed frame, whose figures are not for before/after. */
static void push_sparks(struct view *vw, const struct result *r, double mono)
{
    for (size_t i = 0; i < r->ndevs; i++) {
        const struct dev_rates *d = &r->devs[i];
        if (!d->dev->bd.partition)
            spark_push(vw, d, mono, r->interval_s);
    }
}

/* Each whole disk's latency per priority, one column a frame (tui/latency.h). Replayed
 * frames carry their wall time as mono: the time axis is right in a replay too. */
static void push_latency(struct view *vw, const struct result *r)
{
    bool known = r->cur->lens_on && r->interval_s > 0;
    for (size_t i = 0; i < r->ndevs; i++) {
        const struct dev_rates *d = &r->devs[i];
        if (!d->dev->bd.partition)
            lat_push(&vw->lat, d, r->cur->mono, r->interval_s, known && d->valid);
    }
}

/* A new frame is on the screen. */
static void frame_shown(struct tui *t)
{
    t->f = pipeline_frame(t->p);
    if (!t->f)
        return;
    if (t->f->replayed) {
        t->vw.replay_pos = pipeline_replay_pos(t->p);
        if (t->f->host)
            t->vw.host = t->f->host;
        push_sparks(&t->vw, t->f->res, 0);
        push_latency(&t->vw, t->f->res);
        return;
    }
    push_sparks(&t->vw, t->f->res, t->f->res->cur->mono);
    push_latency(&t->vw, t->f->res);
    t->act.r = t->f->res;
    t->act.v = t->f->ver;
    actions_sampled(&t->act);
}

/* The pipeline's step failed: a recorded sample that does not decode (the last good one
 * stays, the message says which line), or the recording that could not be written. */
static void step_failed(struct tui *t, const char *err)
{
    if (pipeline_sink_failed(t->p)) {
        snprintf(t->vw.record_error, sizeof(t->vw.record_error), "%s", err);
        snprintf(t->vw.message, sizeof(t->vw.message), "recording stopped: %.140s", err);
    } else {
        str_copy(t->vw.message, err, sizeof(t->vw.message));
    }
}

/* Show sample i of the recording. */
static void replay_goto(struct tui *t, size_t i)
{
    char err[256] = "";
    if (i >= t->vw.replay_total)
        return;
    /* The history shows the frames in the order they were recorded: a step forward adds
     * one; any other move starts it afresh, so a frame looks the same however reached. */
    bool forward = t->f && i == t->vw.replay_pos + 1;
    int rc = pipeline_seek(t->p, i, err, sizeof(err));
    t->vw.replay_pos = i;
    if (rc < 0) {
        step_failed(t, err);
        return;
    }
    if (!forward) {
        t->vw.nsparks = 0;
        lat_clear(&t->vw.lat);
    }
    frame_shown(t);
}

/* Live, right after the pipeline opened: the frame of its one snapshot, at once, so that
 * the table is on the screen before the first interval ends. Its rates are drawn pending
 * (draw.c, view_main.c); it adds nothing to the sparklines, which hold intervals. */
static void first_screen(struct tui *t)
{
    if (pipeline_preview(t->p) != 1)
        return;
    t->f = pipeline_frame(t->p);
    if (!t->f)
        return;
    t->act.r = t->f->res;
    t->act.v = t->f->ver;
}

static void sample(struct tui *t)
{
    char err[320] = "";
    int rc = pipeline_step(t->p, err, sizeof(err));
    if (rc < 0)
        step_failed(t, err);
    frame_shown(t);
}

/* ---- keys ---- */

static void move_sel(struct tui *t, long delta, bool absolute)
{
    size_t *sel = t->vw.focus == FOCUS_DEVICES ? &t->vw.dev_sel : &t->vw.proc_sel;
    size_t n = t->vw.focus == FOCUS_DEVICES ? t->rows.ndev : t->rows.nproc;
    if (n == 0) {
        *sel = 0;
        return;
    }
    long v = absolute ? delta : (long)*sel + delta;
    if (v < 0)
        v = 0;
    if (v >= (long)n)
        v = (long)n - 1;
    *sel = (size_t)v;
}

/* Up to max threads of process pid that the lens saw in iowait, the longest waiters
 * first (cumulative since the lens started). 0 without the lens. */
static size_t lens_waiters(const struct result *r, pid_t pid, pid_t *out, size_t max)
{
    if (!r || !r->cur || !r->cur->lens_on)
        return 0;
    const struct lens_reading *l = &r->cur->lens;
    const struct lens_wait_row *best[DETAIL_THREADS_MAX];
    size_t n = 0;
    if (max > DETAIL_THREADS_MAX)
        max = DETAIL_THREADS_MAX;
    for (size_t i = 0; i < l->ntids; i++) {
        const struct lens_wait_row *w = &l->tids[i];
        if (w->tgid != pid || w->wait_ns == 0)
            continue;
        /* insertion into the top max by wait_ns, longest first */
        size_t k = n < max ? n++ : max;
        if (k == max && w->wait_ns <= best[max - 1]->wait_ns)
            continue;
        if (k == max)
            k = max - 1;
        while (k > 0 && best[k - 1]->wait_ns < w->wait_ns) {
            best[k] = best[k - 1];
            k--;
        }
        best[k] = w;
    }
    for (size_t k = 0; k < n; k++)
        out[k] = best[k]->id;
    return n;
}

/* The process in the detail view and its threads, each with its own priority (libproc2
 * for what /proc says of them, ioprio_get for the priority). */
static void read_threads(struct tui *t)
{
    struct view *vw = &t->vw;
    vw->nthreads = vw->threads_total = 0;
    vw->have_pinfo = false;
    if (replaying(t) || vw->mode != MODE_PROCESS)
        return;
    if (!t->pinfo_src && procinfo_open(&t->pinfo_src) < 0)
        return;
    /* The threads the lens saw waiting on I/O first, those that waited longest on top:
     * with thousands of threads only DETAIL_THREADS_MAX are read, and these are the ones
     * an I/O question is about. */
    pid_t first[DETAIL_THREADS_MAX];
    size_t nfirst = lens_waiters(cur_result(t), vw->detail_pid, first, DETAIL_THREADS_MAX);
    struct procinfo pi;
    if (procinfo_read(t->pinfo_src, vw->detail_pid, DETAIL_THREADS_MAX, first, nfirst, &pi) < 0)
        return;
    for (size_t i = 0; i < pi.nthreads; i++) {
        const struct procinfo_thread *p = &pi.threads[i];
        struct thread_info *ti = &vw->threads[vw->nthreads++];
        ti->tid = p->tid;
        str_copy(ti->comm, p->comm, sizeof(ti->comm));
        ti->nice = p->nice;
        ti->policy = p->policy;
        ti->state = p->state;
        str_copy(ti->wchan, p->wchan, sizeof(ti->wchan));
        ti->ioprio_raw = ioprio_read(p->tid);
    }
    vw->threads_total = pi.threads_total;
    procinfo_free(&pi);
    vw->pinfo = pi;
    vw->have_pinfo = true;
}

static void open_detail(struct tui *t)
{
    const struct result *r = cur_result(t);
    if (!r)
        return;
    if (t->vw.focus == FOCUS_DEVICES && t->vw.dev_sel < t->rows.ndev) {
        str_copy(t->vw.detail_dev, r->devs[t->rows.dev[t->vw.dev_sel]].dev->ds.name, sizeof(t->vw.detail_dev));
        t->vw.mode = MODE_DEVICE;
    } else if (t->vw.focus == FOCUS_PROCESSES && t->vw.proc_sel < t->rows.nproc) {
        const struct task_sample *s = r->tasks[t->rows.proc[t->vw.proc_sel]].task;
        t->vw.detail_pid = s->id;
        t->vw.detail_start = s->start_ticks;
        t->vw.mode = MODE_PROCESS;
        read_threads(t);
    }
}

static void prompt_open(struct view *vw, int kind, const char *label, const char *initial)
{
    vw->prompt_kind = kind;
    str_copy(vw->prompt, label, sizeof(vw->prompt));
    str_copy(vw->input, initial, sizeof(vw->input));
}

/* A key while the line editor is open. Returns true when the sampling must restart. */
static bool prompt_key(struct tui *t, int ch)
{
    struct view *vw = &t->vw;
    size_t l = strlen(vw->input);
    if (ch == 27) {                          /* Esc: cancel, change nothing */
        vw->prompt[0] = '\0';
        return false;
    }
    if (ch == '\n' || ch == '\r' || ch == KEY_ENTER) {
        vw->prompt[0] = '\0';
        if (vw->prompt_kind == 1) {
            str_copy(vw->filter, vw->input, sizeof(vw->filter));
            vw->proc_sel = vw->proc_top = 0;
        } else if (vw->prompt_kind == 2) {
            char *end;
            double d = strtod(vw->input, &end);
            /* The range -d takes: the interval iotriage was started with is always accepted. */
            if (end == vw->input || *end != '\0' || !(d >= DELAY_MIN_S && d <= DELAY_MAX_S))
                snprintf(vw->message, sizeof(vw->message), "interval not changed: give seconds, %g to %g",
                         DELAY_MIN_S, DELAY_MAX_S);
            else
                vw->delay_s = d;
        } else if (vw->prompt_kind == 3) {
            str_copy(vw->dev_filter, vw->input, sizeof(vw->dev_filter));
            vw->dev_sel = vw->dev_top = 0;
        }
        return false;
    }
    if (ch == 21) {                          /* ^U: clear the line, as in a shell */
        vw->input[0] = '\0';
        return false;
    }
    if (ch == KEY_BACKSPACE || ch == 127 || ch == 8) {
        if (l)
            vw->input[l - 1] = '\0';
        return false;
    }
    if (ch >= 32 && ch < 127 && l + 1 < sizeof(vw->input)) {
        vw->input[l] = (char)ch;
        vw->input[l + 1] = '\0';
    }
    return false;
}

/* Keys of a replay: step, speed, jump. Returns true when the key was one of them. */
static bool replay_key(struct tui *t, int ch)
{
    struct view *vw = &t->vw;
    size_t last = vw->replay_total ? vw->replay_total - 1 : 0;
    switch (ch) {
    case KEY_RIGHT: case 'n': case '.':
        vw->paused = true;
        if (vw->replay_pos < last)
            replay_goto(t, vw->replay_pos + 1);
        else
            snprintf(vw->message, sizeof(vw->message), "end of the recording");
        return true;
    case KEY_LEFT: case 'b': case ',':
        vw->paused = true;
        if (vw->replay_pos > 0)
            replay_goto(t, vw->replay_pos - 1);
        return true;
    case 'g': replay_goto(t, 0); return true;
    case 'G': replay_goto(t, last); return true;
    case '+': if (vw->replay_speed < 64) vw->replay_speed *= 2; return true;
    case '-': if (vw->replay_speed > 0.125) vw->replay_speed /= 2; return true;
    case 'P': case 'd':
        snprintf(vw->message, sizeof(vw->message), "a replay shows what was recorded");
        return true;
    default: return false;
    }
}

/* The device under the cursor (or of the device view), or "". */
static const char *focused_dev(const struct tui *t)
{
    const struct result *r = cur_result(t);
    if (t->vw.mode == MODE_DEVICE || t->vw.mode == MODE_LATENCY)
        return t->vw.detail_dev;
    if (r && t->vw.mode == MODE_MAIN && t->vw.focus == FOCUS_DEVICES && t->vw.dev_sel < t->rows.ndev)
        return r->devs[t->rows.dev[t->vw.dev_sel]].dev->ds.name;
    return "";
}

/* The process under the cursor (or of the process view): an index into r->tasks. */
static size_t focused_task(const struct tui *t)
{
    const struct result *r = cur_result(t);
    if (!r)
        return SIZE_MAX;
    if (t->vw.mode == MODE_PROCESS) {
        for (size_t i = 0; i < r->ntasks; i++)
            if (r->tasks[i].task->id == t->vw.detail_pid && r->tasks[i].task->start_ticks == t->vw.detail_start)
                return i;
        return SIZE_MAX;
    }
    if (t->vw.mode == MODE_MAIN && t->vw.focus == FOCUS_PROCESSES && t->vw.proc_sel < t->rows.nproc)
        return t->rows.proc[t->vw.proc_sel];
    return SIZE_MAX;
}

/* Keys that change the machine: each only opens a dialog. True when ch was one. */
static bool action_key(struct tui *t, int ch)
{
    struct actions *a = &t->act;
    a->r = replaying(t) ? NULL : cur_result(t);
    a->v = cur_verdicts(t);
    enum mode m = t->vw.mode;
    switch (ch) {
    case 's':
        if (m != MODE_MAIN && m != MODE_DEVICE && m != MODE_LATENCY)
            return false;
        if (!focused_dev(t)[0] && !act_read_only() && !replaying(t)) {
            snprintf(t->vw.message, sizeof(t->vw.message), "s switches a device's scheduler: Tab to the devices, pick one");
            return true;
        }
        actions_sched(a, focused_dev(t));
        return true;
    case 't':
        if (m != MODE_MAIN && m != MODE_DEVICE && m != MODE_LATENCY)
            return false;
        if (!focused_dev(t)[0] && !act_read_only() && !replaying(t)) {
            snprintf(t->vw.message, sizeof(t->vw.message), "t tries a scheduler on a device: Tab to the devices, pick one");
            return true;
        }
        actions_trial(a, focused_dev(t));
        return true;
    case 'u':
        if (m != MODE_MAIN && m != MODE_DEVICE && m != MODE_LATENCY)
            return false;
        actions_undo(a);
        return true;
    case 'i':
        if (m != MODE_MAIN && m != MODE_PROCESS)
            return false;
        if (focused_task(t) == SIZE_MAX && !act_read_only() && !replaying(t)) {
            snprintf(t->vw.message, sizeof(t->vw.message), "i sets a process's I/O priority: pick a process first");
            return true;
        }
        actions_prio(a, focused_task(t));
        return true;
    case 'A':
        if (m != MODE_MAIN)
            return false;
        actions_delayacct(a);
        return true;
    default:
        return false;
    }
}

/* The latency view: l opens it from the device view; Tab and the arrows choose the
 * priority; Esc (Left, Backspace, h) goes back to the device view. True when ch was one. */
static bool latency_key(struct tui *t, int ch)
{
    struct view *vw = &t->vw;
    if (vw->mode == MODE_DEVICE) {
        if (ch != 'l')
            return false;
        vw->mode = MODE_LATENCY;
        return true;
    }
    int dir = 0;
    switch (ch) {
    case '\t': case KEY_DOWN: case 'j': dir = 1; break;
    case KEY_BTAB: case KEY_UP: case 'k': dir = -1; break;
    case 27: case KEY_LEFT: case KEY_BACKSPACE: case 'h':
        vw->mode = MODE_DEVICE;
        return true;
    default: return false;
    }
    const struct result *r = cur_result(t);
    const struct lat_ring *ring = NULL;
    for (size_t i = 0; r && i < r->ndevs && !ring; i++)
        if (strcmp(r->devs[i].dev->ds.name, vw->detail_dev) == 0)
            ring = lat_find(&vw->lat, r->devs[i].dev->bd.disk);
    if (!ring || ring->nprio == 0)
        return true;
    int k = vw->lat_prio_set ? lat_prio_index(ring, vw->lat_prio) : -1;
    if (k < 0)
        k = 0;                       /* the view shows the first until one is chosen */
    k = (k + dir + (int)ring->nprio) % (int)ring->nprio;
    vw->lat_prio = ring->prio[k].prio;
    vw->lat_prio_set = true;
    return true;
}

/* The filesystems view: the selection walks the filesystems and, below the selected
 * one, each holder of its deleted files; Enter on a holder opens its actions. True when
 * ch was one of these keys. */
static bool fs_view_key(struct tui *t, int ch)
{
    struct view *vw = &t->vw;
    const struct result *r = cur_result(t);
    size_t n = r ? r->nfss : 0;
    const struct fs_sample *fs = vw->fs_sel < n ? r->fss[vw->fs_sel].fs : NULL;
    size_t items = fs ? fs_items(fs) : 0;
    if (fs)
        fs_item_sync(vw, fs);        /* on the holder picked, wherever this frame lists it */
    else
        vw->fs_item = 0;
    switch (ch) {
    case KEY_UP: case 'k':
        if (vw->fs_item > 0)
            vw->fs_item--;
        else if (vw->fs_sel > 0)
            vw->fs_sel--;
        break;
    case KEY_DOWN: case 'j':
        if (vw->fs_item < items)
            vw->fs_item++;
        else if (vw->fs_sel + 1 < n)
            vw->fs_sel++, vw->fs_item = 0;
        break;
    case KEY_HOME: vw->fs_sel = vw->fs_item = 0; break;
    case KEY_END: vw->fs_sel = n ? n - 1 : 0; vw->fs_item = 0; break;
    case '\n': case '\r': case KEY_ENTER: {
        size_t file, holder;
        t->act.r = replaying(t) ? NULL : r;
        t->act.v = cur_verdicts(t);
        if (r && vw->fs_sel < n && fs_item_find(r->fss[vw->fs_sel].fs, vw->fs_item, &file, &holder))
            actions_fs(&t->act, vw->fs_sel, file, holder);
        else
            actions_fs(&t->act, SIZE_MAX, 0, 0);    /* says why (read-only, replay) or what to select */
        return true;
    }
    default:
        return false;
    }
    fs_item_pick(vw, vw->fs_sel < n ? r->fss[vw->fs_sel].fs : NULL);
    return true;
}

/* Returns 1 to quit, 2 to sample now, 0 otherwise. */
static int handle_key(struct tui *t, int ch)
{
    struct view *vw = &t->vw;
    vw->message[0] = '\0';
    if (vw->dlg.kind != DLG_NONE) {
        t->act.r = replaying(t) ? NULL : cur_result(t);
        t->act.v = cur_verdicts(t);
        return actions_key(&t->act, ch);
    }
    if (vw->prompt[0]) {
        prompt_key(t, ch);
        return 0;
    }
    if (action_key(t, ch))
        return 0;
    if (replaying(t) && vw->mode == MODE_MAIN && replay_key(t, ch))
        return 0;
    if (vw->mode == MODE_FILESYSTEMS && fs_view_key(t, ch))
        return 0;
    if (vw->mode == MODE_CGROUPS || vw->mode == MODE_FILESYSTEMS) {
        const struct result *r = cur_result(t);
        size_t *sel = vw->mode == MODE_CGROUPS ? &vw->cg_sel : &vw->fs_sel;
        size_t n = !r ? 0 : vw->mode == MODE_CGROUPS ? r->ncgroups : r->nfss;
        switch (ch) {
        case KEY_UP: case 'k': if (*sel > 0) (*sel)--; return 0;
        case KEY_DOWN: case 'j': if (*sel + 1 < n) (*sel)++; return 0;
        case KEY_HOME: *sel = 0; return 0;
        case KEY_END: *sel = n ? n - 1 : 0; return 0;
        case '\n': case '\r': case KEY_ENTER:
            if (vw->mode == MODE_CGROUPS && r && *sel < n) {
                /* Its processes (and those below it) in the main view. */
                str_copy(vw->cg_filter, r->cgroups[*sel].cg->path, sizeof(vw->cg_filter));
                vw->proc_sel = vw->proc_top = 0;
                vw->focus = FOCUS_PROCESSES;
                vw->mode = MODE_MAIN;
            }
            return 0;
        default: break;
        }
    }
    if ((vw->mode == MODE_DEVICE || vw->mode == MODE_LATENCY) && latency_key(t, ch))
        return 0;
    if (vw->mode != MODE_MAIN) {
        /* q quits from every view, as the key bar says (and as in top and htop). */
        if (ch == 'q')
            return actions_quit(&t->act) ? 1 : 0;
        if (ch == 27 || ch == KEY_LEFT || ch == KEY_BACKSPACE || ch == 'h' || ch == '?')
            vw->mode = MODE_MAIN;
        return 0;
    }
    int page = LINES / 3 > 1 ? LINES / 3 : 1;
    switch (ch) {
    case 'q': return actions_quit(&t->act) ? 1 : 0;
    case 'h': case '?': vw->mode = MODE_HELP; break;
    case 'c': vw->mode = MODE_CGROUPS; break;
    case 'F': vw->mode = MODE_FILESYSTEMS; break;
    case 'C': vw->cg_filter[0] = '\0'; break;
    case '\t': vw->focus = vw->focus == FOCUS_DEVICES ? FOCUS_PROCESSES : FOCUS_DEVICES; break;
    case KEY_UP: case 'k': move_sel(t, -1, false); break;
    case KEY_DOWN: case 'j': move_sel(t, 1, false); break;
    case KEY_PPAGE: move_sel(t, -page, false); break;
    case KEY_NPAGE: move_sel(t, page, false); break;
    case KEY_HOME: move_sel(t, 0, true); break;
    case KEY_END: move_sel(t, 1L << 30, true); break;
    case '\n': case '\r': case KEY_ENTER: open_detail(t); break;
    case '<': vw->sort = (enum col_id)((vw->sort + COL_N - 1) % COL_N); break;
    case '>': case KEY_F(6): vw->sort = (enum col_id)((vw->sort + 1) % COL_N); break;
    case 'r': vw->reverse = !vw->reverse; break;
    case 'o': vw->only_active = !vw->only_active; vw->proc_sel = vw->proc_top = 0; break;
    case 'a': vw->accumulated = !vw->accumulated; break;
    case 'D': vw->show_partitions = !vw->show_partitions; break;
    case 'P': return 3;
    case '/':
        if (vw->focus == FOCUS_DEVICES)
            prompt_open(vw, 3, "device filter (name, Enter applies, Esc cancels): ", vw->dev_filter);
        else
            prompt_open(vw, 1, "filter (command or user, Enter applies, Esc cancels): ", vw->filter);
        break;
    case 'd': {
        char cur[32];
        snprintf(cur, sizeof(cur), "%g", vw->delay_s);
        prompt_open(vw, 2, "interval in seconds: ", cur);
        break;
    }
    case ' ': return 2;
    case 'p': vw->paused = !vw->paused; break;
    case 27: break;                          /* a stray Esc: nothing */
    default: break;
    }
    return 0;
}

/* ---- the loop ---- */

/* Colours where the terminal has them and NO_COLOR is not set. */
static bool setup_colors(void)
{
    const char *nc = getenv("NO_COLOR");
    if (!has_colors() || (nc && nc[0]))
        return false;
    start_color();
    use_default_colors();
    init_pair(1, COLOR_CYAN, -1);
    init_pair(2, COLOR_RED, -1);
    init_pair(3, COLOR_YELLOW, -1);
    init_pair(4, COLOR_GREEN, -1);
    init_pair(5, COLOR_RED, -1);
    init_pair(6, COLOR_CYAN, -1);
    init_pair(7, COLOR_WHITE, -1);
    /* The latency view's heat map, low to high (view_latency.c C_HEAT): on top of its shading. */
    init_pair(16, COLOR_BLUE, -1);
    init_pair(17, COLOR_GREEN, -1);
    init_pair(18, COLOR_YELLOW, -1);
    init_pair(19, COLOR_RED, -1);
    return true;
}

/* The lens (main.c: defer_lens) loads this long after the first frame is written, not
 * at once: its load is some 40 ms of CPU, most of it the kernel's (verification, JIT,
 * attachment), and begun at once it took the CPU from whatever has the frame to show,
 * the terminal or the sshd that carries it: on two CPUs the frame showed 3-4 ms later
 * (docs/performance.md; 20 and 60 ms of delay did as well as each other). */
#define LENS_AFTER_FRAME_S 0.025

/* ---- the terminal's set-up, begun beside the first sample (tui_prepare) ---- */

static struct {
    pthread_t th;
    bool running;                    /* term_thread sets the terminal up */
    bool ready;                      /* curses holds the terminal */
    bool color;
} term;

/* The memory ncurses's set-up is about to fill: its three screens (stdscr, curscr,
 * newscr) of LINES x COLS cells, and some room for the rest, faulted in at once
 * (util/heap.h: heap_prefault) rather than a page at a time by initscr. */
static void term_prefault(void)
{
    struct winsize ws;
    if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) != 0 || ws.ws_row == 0 || ws.ws_col == 0)
        return;
    heap_prefault(3 * (size_t)ws.ws_row * ((size_t)ws.ws_col + 1) * sizeof(cchar_t) + (64u << 10));
}

static void term_setup(void)
{
    term_prefault();
    initscr();
    /* ncurses 6.4 flushes its output at every cursor move until the screen has been left
     * and resumed once (its state stays "initial" till then): 286 write()s for the first
     * 200x50 frame, each a wakeup of sshd and often a packet of its own. Left and resumed
     * before anything is drawn, a frame goes out in one or two writes. */
    endwin();
    refresh();
    cbreak();
    noecho();
    nonl();
    keypad(stdscr, TRUE);
    nodelay(stdscr, TRUE);
    set_escdelay(25);
    curs_set(0);
    term.color = setup_colors();
    term.ready = true;
}

/* The check first (initscr exits the process on a terminal it cannot drive), here too:
 * its terminfo read is off the main thread's way to the first sample. */
static bool term_check(char *msg, size_t n);

static void *term_thread(void *arg)
{
    (void)arg;
    char msg[256];
    if (term_check(msg, sizeof(msg)))
        term_setup();
    return NULL;
}

/* The set-up's thread is done: curses is the caller's from here. */
static void term_join(void)
{
    if (term.running)
        pthread_join(term.th, NULL);
    term.running = false;
}

static bool term_check(char *msg, size_t n)
{
    char why[128];
    if (!isatty(STDIN_FILENO) || !isatty(STDOUT_FILENO)) {
        snprintf(msg, n, "the interactive screen needs a terminal; use -b or --json");
        return false;
    }
    if (!term_usable(why, sizeof(why))) {
        snprintf(msg, n, "cannot drive this terminal (%s); -b and --json work without one", why);
        return false;
    }
    return true;
}

void tui_prepare(void)
{
    if (term.running || term.ready)
        return;
    /* not ready when the thread's check failed: tui_run checks again and says why */
    term.running = pthread_create(&term.th, NULL, term_thread, NULL) == 0;
}

void tui_pause(void)
{
    term_join();
    if (term.ready && !isendwin())
        endwin();
}

int tui_run(struct pipeline *p, const struct tui_opts *o)
{
    term_join();
    char msg[256];
    if (!term.ready && !term_check(msg, sizeof(msg))) {
        fprintf(stderr, "iotriage: %s\n", msg);
        return 2;
    }
    struct tui *t = xcalloc(1, sizeof(*t));
    t->opts = *o;
    t->p = p;
    char host[256] = "?";
    gethostname(host, sizeof(host) - 1);
    t->vw.host = host;
    t->vw.delay_s = o->delay_s;
    t->vw.sort = COL_DEFAULT_SORT;
    t->vw.focus = FOCUS_PROCESSES;
    t->vw.only_active = o->only_active;
    t->vw.read_only = act_read_only();
    t->vw.recording = o->recording;
    t->act.vw = &t->vw;
    t->act.proc_root = o->proc_root;
    t->act.sys_root = o->sys_root;
    const char *cs = nl_langinfo(CODESET);
    t->vw.utf8 = cs && strcmp(cs, "UTF-8") == 0;
    if (replaying(t)) {
        t->vw.replay_total = pipeline_replay_count(p);
        t->vw.replay_speed = 1.0;
        const struct frame *f0 = pipeline_frame(p);
        if (f0 && f0->has_at) {
            t->vw.replay_has_at = true;
            t->vw.replay_at = f0->at;
            t->vw.replay_at_missed = f0->at_missed;
        }
    }

    if (!term.ready)
        term_setup();
    t->vw.color = term.color;

    /* Live, the pipeline took the first snapshot: what it can tell is drawn at once, the
     * rates with the second one; a replay has its first frame at once. */
    if (replaying(t))
        sample(t);
    else
        first_screen(t);
    double next = clock_mono() + (t->vw.delay_s < 1.0 ? t->vw.delay_s : 1.0);
    double lens_due = 0;                 /* when the deferred lens loads; 0: none due */
    int status = 0;
    bool dirty = true;
    while (!tui_stop_signal) {
        if (dirty) {
            rows_build(&t->rows, cur_result(t), cur_verdicts(t), &t->vw);
            draw_screen(cur_result(t), cur_verdicts(t), &t->rows, &t->vw);
            dirty = false;
            /* A first frame is written (at start, or of the sampler P opened): its
             * deferred lens (main.c: defer_lens) a moment later. */
            if (lens_due == 0 && pipeline_has_deferred(t->p))
                lens_due = clock_mono() + LENS_AFTER_FRAME_S;
        }
        double now = clock_mono();
        if (lens_due > 0 && now >= lens_due) {
            pipeline_load_deferred(t->p);
            lens_due = 0;
            now = clock_mono();
        }
        /* Paused, nothing moves on by itself: sleep until a key (or a signal). */
        int wait_ms = t->vw.paused ? -1 : next > now ? (int)((next - now) * 1000.0) + 1 : 0;
        if (lens_due > 0) {
            int lens_ms = lens_due > now ? (int)((lens_due - now) * 1000.0) + 1 : 0;
            if (wait_ms < 0 || lens_ms < wait_ms)
                wait_ms = lens_ms;
        }
        struct pollfd pfd = { .fd = STDIN_FILENO, .events = POLLIN };
        /* A scheduler switch waiting in its child reports on this fd */
        struct pollfd pfds[2] = { pfd, { .fd = actions_wait_fd(&t->act), .events = POLLIN } };
        int pr = poll(pfds, pfds[1].fd >= 0 ? 2 : 1, wait_ms);
        pfd = pfds[0];
        if (pr > 0 && pfds[1].fd >= 0 && pfds[1].revents) {
            dirty |= actions_poll(&t->act);
            pr -= 1;
        }
        if (pr < 0 && errno != EINTR)
            break;
        if (pr > 0 && (pfd.revents & (POLLHUP | POLLERR | POLLNVAL)) && !(pfd.revents & POLLIN)) {
            status = 0;                      /* the terminal went away: leave quietly */
            break;
        }
        int action = 0, keys = 0;
        if (pr > 0 && (pfd.revents & POLLIN)) {
            int ch;
            while ((ch = getch()) != ERR && action != 1) {
                /* Each key acts on the rows the keys before it left: a filter typed and
                 * Enter pressed in one burst (a paste, typing ahead over a slow link)
                 * opens a row of the filtered list, not of the one on the screen. */
                if (keys++ > 0 && dirty)
                    rows_build(&t->rows, cur_result(t), cur_verdicts(t), &t->vw);
                if (ch == KEY_RESIZE) {
                    dirty = true;
                    continue;
                }
                int a = handle_key(t, ch);
                if (a)
                    action = a;
                dirty = true;
            }
            /* readable but nothing read: end of file on stdin. Leave instead of spinning. */
            if (keys == 0) {
                char c;
                ssize_t n = read(STDIN_FILENO, &c, 1);
                if (n <= 0)
                    break;
            }
        } else if (pr < 0 && errno == EINTR) {
            dirty = true;                    /* SIGWINCH and friends: redraw */
        }
        if (action == 1)
            break;
        if (action == 3 && !replaying(t)) {
            char err[256] = "";
            if (pipeline_set_threads(t->p, !t->opts.threads, err, sizeof(err)) == 0) {
                t->opts.threads = !t->opts.threads;
                t->f = NULL;
                first_screen(t);
                t->vw.proc_sel = t->vw.proc_top = 0;
                next = clock_mono() + 0.5;
            } else {
                snprintf(t->vw.message, sizeof(t->vw.message), "cannot sample: %.140s", err);
            }
            dirty = true;
            continue;
        }
        now = clock_mono();
        if (replaying(t)) {
            /* A replay moves on at the recorded pace, times the speed. The recorded
             * interval is anyone's number: kept between 0.05 s and an hour. */
            double itv = t->f && t->f->res->interval_s > 0 ? t->f->res->interval_s : 1.0;
            if (!(itv >= 0.05))
                itv = 0.05;
            if (itv > 3600)
                itv = 3600;
            if (action == 2 || (now >= next && !t->vw.paused)) {
                if (t->vw.replay_pos + 1 < t->vw.replay_total) {
                    replay_goto(t, t->vw.replay_pos + 1);
                } else if (!t->vw.paused) {
                    t->vw.paused = true;
                    snprintf(t->vw.message, sizeof(t->vw.message), "end of the recording");
                }
                dirty = true;
            }
            if (now >= next)
                next = now + itv / t->vw.replay_speed;
        } else if (action == 2 || (now >= next && !t->vw.paused)) {
            sample(t);
            read_threads(t);
            next = now + t->vw.delay_s;
            dirty = true;
        } else if (now >= next) {
            next = now + t->vw.delay_s;      /* paused: the screen holds still */
        }
    }
    endwin();
    actions_exit_note(&t->act, stderr);
    rows_free(&t->rows);
    procinfo_close(t->pinfo_src);
    free(t->vw.sparks);
    lat_clear(&t->vw.lat);
    free(t);
    return status;
}
