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
#include <sched.h>
#include <sys/resource.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "delta.h"
#include "out/output.h"
#include "snapshot.h"
#include "source/ioprio.h"
#include "source/replay.h"
#include "tui/actions.h"
#include "tui/view.h"
#include "util.h"
#include "verdict.h"

volatile int tui_stop_signal;

/* ---- rows: what the panels show, in which order ---- */

struct sort_ctx {
    const struct result *r;
    const struct verdicts *v;
    const struct view *vw;
};

static double key_num(const struct sort_ctx *c, size_t i)
{
    const struct task_rates *t = &c->r->tasks[i];
    const struct task_sample *s = t->task;
    switch (c->vw->sort) {
    case SORT_PID: return s->id;
    case SORT_PRIO: return t->prio.cls * 8 + t->prio.level;
    case SORT_READ: return c->vw->accumulated ? (s->io_err ? -1 : (double)s->io.read_bytes)
                                              : (isnan(t->read_bps) ? -1 : t->read_bps);
    case SORT_WRITE: return c->vw->accumulated ? (s->io_err ? -1 : (double)s->io.write_bytes)
                                               : (isnan(t->write_bps) ? -1 : t->write_bps);
    case SORT_IODELAY: return t->delay_valid ? t->io_delay_pct : -1;
    case SORT_SWAPIN: return t->delay_valid ? t->swapin_delay_pct : -1;
    case SORT_ROLE: return i < c->v->nroles ? c->v->roles[i] : 0;
    default: return 0;
    }
}

static int cmp_proc(const void *a, const void *b, void *ctx)
{
    const struct sort_ctx *c = ctx;
    size_t i = *(const size_t *)a, j = *(const size_t *)b;
    const struct task_sample *x = c->r->tasks[i].task, *y = c->r->tasks[j].task;
    int d = 0;
    if (c->vw->sort == SORT_USER) {
        d = strcmp(x->user, y->user);
    } else if (c->vw->sort == SORT_COMMAND) {
        d = strcmp(x->cmdline[0] ? x->cmdline : x->comm, y->cmdline[0] ? y->cmdline : y->comm);
    } else {
        double p = key_num(c, i), q = key_num(c, j);
        /* numbers sort high first (the busiest on top), like top */
        d = p < q ? 1 : p > q ? -1 : 0;
        if (c->vw->sort == SORT_PID)
            d = -d;
    }
    if (d == 0) {   /* then by bytes moved, then by pid: a stable, useful order */
        const struct task_rates *t = &c->r->tasks[i], *u = &c->r->tasks[j];
        double p = t->io_valid ? t->read_bps + t->write_bps : -1, q = u->io_valid ? u->read_bps + u->write_bps : -1;
        d = p < q ? 1 : p > q ? -1 : (x->id > y->id) - (x->id < y->id);
    }
    return c->vw->reverse ? -d : d;
}

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
        rows->proc[rows->nproc++] = i;
    }
    struct sort_ctx c = { r, v, vw };
    qsort_r(rows->proc, rows->nproc, sizeof(size_t), cmp_proc, &c);
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
    struct sampler *sampler;
    struct snapshot snaps[2];
    int cur;
    bool have_prev, have_result;
    struct result res;
    struct verdicts ver;
    struct baselines hist;
    struct rows rows;
    struct view vw;
    struct out_opts oo;
    /* replay: frames from a recording instead of the sampler */
    struct replay *rp;
    struct replay_frame frame;
    bool have_frame;
    struct actions act;
    struct procinfo_src *pinfo_src;  /* opened with the first process view */
};

/* What the screen draws from: the live result or the replayed frame. */
static const struct result *cur_result(const struct tui *t)
{
    if (t->rp)
        return t->have_frame ? &t->frame.res : NULL;
    return t->have_result ? &t->res : NULL;
}

static const struct verdicts *cur_verdicts(const struct tui *t)
{
    return t->rp ? &t->frame.ver : &t->ver;
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

/* Show sample i of the recording. A damaged sample leaves the last good one on the
 * screen and says why, with its line number. */
static void replay_goto(struct tui *t, size_t i)
{
    char err[256] = "";
    if (i >= t->vw.replay_total)
        return;
    if (replay_load(t->rp, i, &t->frame, err, sizeof(err)) < 0) {
        str_copy(t->vw.message, err, sizeof(t->vw.message));
        t->vw.replay_pos = i;
        return;
    }
    /* The history shows the frames in the order they were recorded: a step forward adds
     * one; any other move starts it afresh, so a frame looks the same however reached. */
    if (!(t->have_frame && i == t->vw.replay_pos + 1))
        t->vw.nsparks = 0;
    t->have_frame = true;
    t->vw.replay_pos = i;
    if (t->frame.host)
        t->vw.host = t->frame.host;
    push_sparks(&t->vw, &t->frame.res, 0);
}

static void sample(struct tui *t)
{
    int next = t->cur ^ 1;
    if (!t->have_prev) {
        sampler_take(t->sampler, &t->snaps[t->cur]);
        t->have_prev = true;
        return;
    }
    sampler_take(t->sampler, &t->snaps[next]);
    if (t->have_result) {
        verdicts_free(&t->ver);
        result_free(&t->res);
    }
    delta_compute(&t->snaps[t->cur], &t->snaps[next], &t->hist, &t->res);
    verdict_compute(&t->res, &t->ver);
    snapshot_free(&t->snaps[t->cur]);
    t->cur = next;
    t->have_result = true;
    push_sparks(&t->vw, &t->res, t->res.cur->mono);
    t->act.r = &t->res;
    t->act.v = &t->ver;
    actions_sampled(&t->act);
    if (t->opts.record) {
        out_json_sample(t->opts.record, &t->res, &t->ver, &t->oo);
        fflush(t->opts.record);
    }
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

/* The process in the detail view and its threads, each with its own priority (libproc2
 * for what /proc says of them, ioprio_get for the priority). */
static void read_threads(struct tui *t)
{
    struct view *vw = &t->vw;
    vw->nthreads = vw->threads_total = 0;
    vw->have_pinfo = false;
    if (t->rp || vw->mode != MODE_PROCESS)
        return;
    if (!t->pinfo_src && procinfo_open(&t->pinfo_src) < 0)
        return;
    struct procinfo pi;
    if (procinfo_read(t->pinfo_src, vw->detail_pid, DETAIL_THREADS_MAX, &pi) < 0)
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
            if (end == vw->input || *end != '\0' || !(d >= 0.1 && d <= 3600))
                snprintf(vw->message, sizeof(vw->message), "interval not changed: give seconds, 0.1 to 3600");
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
    if (t->vw.mode == MODE_DEVICE)
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
    a->r = t->rp ? NULL : cur_result(t);
    a->v = cur_verdicts(t);
    enum mode m = t->vw.mode;
    switch (ch) {
    case 's':
        if (m != MODE_MAIN && m != MODE_DEVICE)
            return false;
        if (!focused_dev(t)[0] && !act_read_only() && !t->rp) {
            snprintf(t->vw.message, sizeof(t->vw.message), "s switches a device's scheduler: Tab to the devices, pick one");
            return true;
        }
        actions_sched(a, focused_dev(t));
        return true;
    case 'u':
        if (m != MODE_MAIN && m != MODE_DEVICE)
            return false;
        actions_undo(a);
        return true;
    case 'i':
        if (m != MODE_MAIN && m != MODE_PROCESS)
            return false;
        if (focused_task(t) == SIZE_MAX && !act_read_only() && !t->rp) {
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

/* Returns 1 to quit, 2 to sample now, 0 otherwise. */
static int handle_key(struct tui *t, int ch)
{
    struct view *vw = &t->vw;
    vw->message[0] = '\0';
    if (vw->dlg.kind != DLG_NONE) {
        t->act.r = t->rp ? NULL : cur_result(t);
        t->act.v = cur_verdicts(t);
        return actions_key(&t->act, ch);
    }
    if (vw->prompt[0]) {
        prompt_key(t, ch);
        return 0;
    }
    if (action_key(t, ch))
        return 0;
    if (t->rp && vw->mode == MODE_MAIN && replay_key(t, ch))
        return 0;
    if (vw->mode != MODE_MAIN) {
        if (ch == 27 || ch == 'q' || ch == KEY_LEFT || ch == KEY_BACKSPACE || ch == 'h' || ch == '?') {
            if (ch == 'q' && vw->mode == MODE_MAIN)
                return 1;
            vw->mode = MODE_MAIN;
        }
        return 0;
    }
    int page = LINES / 3 > 1 ? LINES / 3 : 1;
    switch (ch) {
    case 'q': return actions_quit(&t->act) ? 1 : 0;
    case 'h': case '?': vw->mode = MODE_HELP; break;
    case '\t': vw->focus = vw->focus == FOCUS_DEVICES ? FOCUS_PROCESSES : FOCUS_DEVICES; break;
    case KEY_UP: case 'k': move_sel(t, -1, false); break;
    case KEY_DOWN: case 'j': move_sel(t, 1, false); break;
    case KEY_PPAGE: move_sel(t, -page, false); break;
    case KEY_NPAGE: move_sel(t, page, false); break;
    case KEY_HOME: move_sel(t, 0, true); break;
    case KEY_END: move_sel(t, 1L << 30, true); break;
    case '\n': case '\r': case KEY_ENTER: open_detail(t); break;
    case '<': vw->sort = (enum sort_key)((vw->sort + SORT_NKEYS - 1) % SORT_NKEYS); break;
    case '>': case KEY_F(6): vw->sort = (enum sort_key)((vw->sort + 1) % SORT_NKEYS); break;
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

static void setup_colors(struct view *vw)
{
    const char *nc = getenv("NO_COLOR");
    vw->color = has_colors() && !(nc && nc[0]);
    if (!vw->color)
        return;
    start_color();
    use_default_colors();
    init_pair(1, COLOR_CYAN, -1);
    init_pair(2, COLOR_RED, -1);
    init_pair(3, COLOR_YELLOW, -1);
    init_pair(4, COLOR_GREEN, -1);
    init_pair(5, COLOR_RED, -1);
    init_pair(6, COLOR_CYAN, -1);
    init_pair(7, COLOR_WHITE, -1);
}

static int restart_sampler(struct tui *t, bool threads)
{
    struct sampler_opts so = {
        .threads = threads, .pids = t->opts.pids, .npids = t->opts.npids,
        .proc_root = t->opts.proc_root, .sys_root = t->opts.sys_root, .no_bpf = t->opts.no_bpf,
    };
    char err[256] = "";
    struct sampler *s;
    if (sampler_open(&s, &so, err, sizeof(err)) < 0) {
        snprintf(t->vw.message, sizeof(t->vw.message), "cannot sample: %.140s", err);
        return -1;
    }
    if (t->sampler)
        sampler_close(t->sampler);
    if (t->have_prev)
        snapshot_free(&t->snaps[t->cur]);
    if (t->have_result) {
        verdicts_free(&t->ver);
        result_free(&t->res);
    }
    t->have_prev = t->have_result = false;
    t->sampler = s;
    t->opts.threads = threads;
    t->vw.proc_sel = t->vw.proc_top = 0;
    return 0;
}

int tui_run(const struct tui_opts *o)
{
    struct tui *t = xcalloc(1, sizeof(*t));
    t->opts = *o;
    char host[256] = "?";
    gethostname(host, sizeof(host) - 1);
    t->oo.hostname = host;
    t->vw.host = host;
    t->vw.delay_s = o->delay_s;
    t->vw.sort = SORT_IODELAY;
    t->vw.focus = FOCUS_PROCESSES;
    t->vw.only_active = o->only_active;
    t->vw.read_only = act_read_only();
    t->act.vw = &t->vw;
    t->act.proc_root = o->proc_root;
    t->act.sys_root = o->sys_root;
    const char *cs = nl_langinfo(CODESET);
    t->vw.utf8 = cs && strcmp(cs, "UTF-8") == 0;
    if (o->replay) {
        char err[256] = "";
        if (replay_open(&t->rp, o->replay, err, sizeof(err)) < 0) {
            fprintf(stderr, "iotriage: %s\n", err);
            free(t);
            return 1;
        }
        t->vw.replay_total = replay_count(t->rp);
        t->vw.replay_speed = 1.0;
    } else if (restart_sampler(t, o->threads) < 0) {
        fprintf(stderr, "iotriage: %s\n", t->vw.message);
        free(t);
        return 1;
    }
    if (!isatty(STDIN_FILENO) || !isatty(STDOUT_FILENO)) {
        fprintf(stderr, "iotriage: the interactive screen needs a terminal; use -b or --json\n");
        if (t->rp)
            replay_close(t->rp);
        if (t->sampler)
            sampler_close(t->sampler);
        free(t);
        return 2;
    }

    initscr();
    cbreak();
    noecho();
    nonl();
    keypad(stdscr, TRUE);
    nodelay(stdscr, TRUE);
    set_escdelay(25);
    curs_set(0);
    setup_colors(&t->vw);

    if (t->rp)
        replay_goto(t, 0);
    else
        sample(t);                           /* the first snapshot: rates need two */
    double next = clock_mono() + (t->vw.delay_s < 1.0 ? t->vw.delay_s : 1.0);
    int status = 0;
    bool dirty = true;
    while (!tui_stop_signal) {
        if (dirty) {
            rows_build(&t->rows, cur_result(t), cur_verdicts(t), &t->vw);
            draw_screen(cur_result(t), cur_verdicts(t), &t->rows, &t->vw);
            dirty = false;
        }
        double now = clock_mono();
        int wait_ms = next > now ? (int)((next - now) * 1000.0) + 1 : 0;
        struct pollfd pfd = { .fd = STDIN_FILENO, .events = POLLIN };
        int pr = poll(&pfd, 1, wait_ms);
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
                keys++;
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
        if (action == 3 && !t->rp) {
            if (restart_sampler(t, !t->opts.threads) == 0) {
                sample(t);
                next = clock_mono() + 0.5;
            }
            dirty = true;
            continue;
        }
        now = clock_mono();
        if (t->rp) {
            /* a replay moves on at the recorded pace, times the speed */
            double itv = t->have_frame && t->frame.res.interval_s > 0 ? t->frame.res.interval_s : 1.0;
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
    if (t->have_result) {
        verdicts_free(&t->ver);
        result_free(&t->res);
    }
    if (t->have_prev)
        snapshot_free(&t->snaps[t->cur]);
    baselines_free(&t->hist);
    if (t->rp) {
        replay_frame_free(&t->frame);
        replay_close(t->rp);
    }
    if (t->sampler)
        sampler_close(t->sampler);
    procinfo_close(t->pinfo_src);
    free(t->vw.sparks);
    free(t);
    return status;
}
