/* SPDX-License-Identifier: GPL-2.0-or-later */
/* pipeline.c: one refresh, one way (pipeline.h). */
#include "pipeline.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <time.h>
#include <sys/stat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "store/replay.h"
#include "store/state.h"
#include "source/threadstate.h"
#include "util.h"

/* The sampling of thread states between refreshes (source/threadstate.h). The thread reads
 * targets and period and adds to acc under mu; the pipeline swaps acc out and sets the
 * next targets under mu once a refresh. */
struct sampling {
    pthread_t th;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool stop;
    pid_t targets[TS_TARGETS_MAX];
    size_t ntargets;
    double period_s;
    struct ts_counts acc;
    struct taskstate *ts;
};

struct pipeline {
    /* live */
    struct sampler_opts so;
    struct sampler *sampler;
    struct snapshot snaps[2];        /* alternating: cur and the reduced one before it */
    int cur;
    bool have_snap, have_result;
    struct result res;
    struct verdicts ver;
    struct baselines hist;
    char host[256];
    struct sampling *smp;            /* NULL when /proc could not be opened for it */
    struct ts_counts counted;        /* the last interval's samples */
    double interval_hint;
    /* remembered quiet-time levels (store/state.h) */
    char *state_path;
    struct state_entry *state_v;     /* as read at open */
    size_t state_n;
    double state_saved_mono;
    char state_note[320];
    /* replay */
    struct replay *rp;
    struct replay_frame rf;
    bool have_rf;
    bool started;                    /* the first decodable sample was handed out */
    double at;                       /* replay: the moment asked (--at), or NAN */
    size_t pos;

    struct frame frame;
    bool have_frame;
    struct sink sinks[PIPELINE_SINKS];
    size_t nsinks;
    bool sink_failed;
};

static void live_clear(struct pipeline *p)
{
    if (p->have_result) {
        verdicts_free(&p->ver);
        result_free(&p->res);
        p->have_result = false;
    }
    if (p->have_snap) {
        snapshot_free(&p->snaps[p->cur]);
        snapshot_free(&p->snaps[p->cur ^ 1]);
        p->have_snap = false;
    }
    p->have_frame = false;
}


/* ---- sampling thread states between refreshes ---- */

static void *sampling_main(void *arg)
{
    struct sampling *m = arg;
    struct ts_counts round = { 0 };
    size_t start = 0;
    pthread_mutex_lock(&m->mu);
    while (!m->stop) {
        if (m->ntargets == 0) {
            pthread_cond_wait(&m->cv, &m->mu);
            continue;
        }
        pid_t t[TS_TARGETS_MAX];
        size_t n = m->ntargets;
        memcpy(t, m->targets, n * sizeof(*t));
        double period = m->period_s;
        pthread_mutex_unlock(&m->mu);
        ts_counts_clear(&round);
        taskstate_sample(m->ts, t, n, start++, &round);
        pthread_mutex_lock(&m->mu);
        ts_counts_merge(&m->acc, &round);
        struct timespec until;
        clock_gettime(CLOCK_MONOTONIC, &until);
        double next = (double)until.tv_sec + (double)until.tv_nsec / 1e9 + period;
        until.tv_sec = (time_t)next;
        until.tv_nsec = (long)((next - (double)until.tv_sec) * 1e9);
        while (!m->stop && pthread_cond_timedwait(&m->cv, &m->mu, &until) != ETIMEDOUT)
            ;
    }
    pthread_mutex_unlock(&m->mu);
    ts_counts_free(&round);
    return NULL;
}

static struct sampling *sampling_start(const char *proc_root, double period_s)
{
    struct sampling *m = xcalloc(1, sizeof(*m));
    if (taskstate_open(&m->ts, proc_root) < 0) {
        free(m);
        return NULL;
    }
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&m->cv, &ca);
    pthread_condattr_destroy(&ca);
    pthread_mutex_init(&m->mu, NULL);
    m->period_s = period_s;
    /* Signals are the main thread's to take (the screen's SIGWINCH, a SIGTERM). */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int rc = pthread_create(&m->th, NULL, sampling_main, m);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
        pthread_cond_destroy(&m->cv);
        pthread_mutex_destroy(&m->mu);
        taskstate_close(m->ts);
        free(m);
        return NULL;
    }
    return m;
}

static void sampling_stop(struct sampling *m)
{
    if (!m)
        return;
    pthread_mutex_lock(&m->mu);
    m->stop = true;
    pthread_cond_signal(&m->cv);
    pthread_mutex_unlock(&m->mu);
    pthread_join(m->th, NULL);
    pthread_cond_destroy(&m->cv);
    pthread_mutex_destroy(&m->mu);
    ts_counts_free(&m->acc);
    taskstate_close(m->ts);
    free(m);
}

/* A tenth of the refresh interval: enough samples for a share in steps of 10 %, few
 * enough reads (source/threadstate.h bounds a round). */
static double sampling_period(double interval_s)
{
    double t = (interval_s > 0 ? interval_s : 1.0) / 10.0;
    return t < 0.02 ? 0.02 : t > 1.0 ? 1.0 : t;
}

static bool has_target(const pid_t *v, size_t n, pid_t id)
{
    for (size_t i = 0; i < n; i++)
        if (v[i] == id)
            return true;
    return false;
}

/* Take what was counted since the last call into p->counted, and name the processes to
 * sample next: those whose delay nothing measures (no taskstats figure, no lens) and
 * that do I/O: their bytes moved (res), a thread is in D now, or one was seen in D by
 * the samples. res NULL: the first snapshot alone (no rates yet), only its D tasks. */
static void sampling_retarget(struct pipeline *p, const struct result *res)
{
    struct sampling *m = p->smp;
    if (!m)
        return;
    const struct snapshot *cur = &p->snaps[p->cur];
    pid_t next[TS_TARGETS_MAX];
    size_t n = 0;
    bool threads = cur->threads;
    for (size_t i = 0; !cur->lens_on && i < cur->ntasks && n < TS_TARGETS_MAX; i++) {
        const struct task_sample *t = &cur->tasks[i];
        pid_t tgid = threads ? t->tgid : t->id;
        bool io = t->state == 'D';
        if (res) {
            const struct task_rates *r = &res->tasks[i];
            if (r->io_delay_source != DELAY_SRC_UNKNOWN && r->io_delay_source != DELAY_SRC_SAMPLED)
                continue;
            io = io || (r->io_valid && (r->read_bps > 0 || r->write_bps > 0)) ||
                 ts_counts_saw_d(&p->counted, tgid);
        }
        if (io && tgid > 0 && !has_target(next, n, tgid))
            next[n++] = tgid;
    }
    pthread_mutex_lock(&m->mu);
    if (res) {
        struct ts_counts t = p->counted;
        p->counted = m->acc;
        m->acc = t;
        ts_counts_clear(&m->acc);
        m->period_s = sampling_period(res->interval_s > 0 ? res->interval_s : p->interval_hint);
    } else {
        ts_counts_clear(&m->acc);
    }
    memcpy(m->targets, next, n * sizeof(*next));
    m->ntargets = n;
    pthread_cond_signal(&m->cv);
    pthread_mutex_unlock(&m->mu);
}

/* ---- the devices' quiet-time levels across runs (store/state.h) ---- */

static const struct dev_sample *dev_named(const struct snapshot *s, const char *name,
                                          unsigned major, unsigned minor)
{
    for (size_t i = 0; i < s->ndevs; i++)
        if (s->devs[i].ds.major == major && s->devs[i].ds.minor == minor &&
            strcmp(s->devs[i].ds.name, name) == 0)
            return &s->devs[i];
    return NULL;
}

static bool state_fresh(const struct state_entry *e, double now)
{
    return e->saved >= now - STATE_MAX_AGE_S && e->saved <= now + 60;
}

static void state_load(struct pipeline *p)
{
    char why[256] = "";
    if (state_read(p->state_path, &p->state_v, &p->state_n, why, sizeof(why)) < 0) {
        snprintf(p->state_note, sizeof(p->state_note), "remembered device levels ignored: %s", why);
        return;
    }
    const struct snapshot *s = &p->snaps[p->cur];
    double now = clock_wall();
    /* A device's identity is read once (up to six sysfs files), however many entries
     * name it: the file keeps one per identity a name had (loop devices rebound). */
    struct { const struct dev_sample *dev; char id[STATE_IDENT_MAX]; } *ids =
        xcalloc(p->state_n ? p->state_n : 1, sizeof(*ids));
    size_t nids = 0;
    for (size_t i = 0; i < p->state_n; i++) {
        const struct state_entry *e = &p->state_v[i];
        const struct dev_sample *d = state_fresh(e, now) ? dev_named(s, e->name, e->major, e->minor) : NULL;
        if (!d)
            continue;
        size_t k = 0;
        while (k < nids && ids[k].dev != d)
            k++;
        if (k == nids) {
            ids[nids].dev = d;
            state_device_ident(p->so.sys_root, e->name, ids[nids++].id);
        }
        if (strcmp(ids[k].id, e->ident) != 0)
            continue;
        baselines_get(&p->hist, e->name, e->major, e->minor)->quiet_await = e->quiet_await;
    }
    free(ids);
}

/* What this run knows now, then what the file held of other devices. */
static void state_save(struct pipeline *p)
{
    if (!p->state_path || !p->have_snap)
        return;
    const struct snapshot *s = &p->snaps[p->cur];
    double now = clock_wall();
    struct state_entry *v = xcalloc(STATE_ENTRIES_MAX, sizeof(*v));
    size_t n = 0;
    for (size_t i = 0; i < p->hist.n && n < STATE_ENTRIES_MAX; i++) {
        const struct dev_baseline *b = &p->hist.v[i];
        if (!(b->quiet_await > 0) || !isfinite(b->quiet_await) || b->quiet_await > 1e7 ||
            !dev_named(s, b->name, b->major, b->minor))
            continue;
        struct state_entry *e = &v[n++];
        str_copy(e->name, b->name, sizeof(e->name));
        e->major = b->major;
        e->minor = b->minor;
        state_device_ident(p->so.sys_root, b->name, e->ident);
        e->quiet_await = b->quiet_await;
        e->saved = now;
    }
    size_t mine = n;
    for (size_t i = 0; i < p->state_n && n < STATE_ENTRIES_MAX; i++) {
        const struct state_entry *o = &p->state_v[i];
        bool known = false;
        for (size_t j = 0; j < mine && !known; j++)
            known = v[j].major == o->major && v[j].minor == o->minor &&
                    strcmp(v[j].name, o->name) == 0 && strcmp(v[j].ident, o->ident) == 0;
        if (!known && state_fresh(o, now))
            v[n++] = *o;
    }
    /* Nothing learned and nothing to keep: no file to make. */
    if (n > 0 || p->state_n > 0)
        (void)state_write(p->state_path, v, n, NULL, 0);
    free(v);
    p->state_saved_mono = clock_mono();
}

const char *pipeline_state_note(const struct pipeline *p)
{
    return p->state_note[0] ? p->state_note : NULL;
}

static int live_open(struct pipeline *p, char *err, size_t errlen)
{
    struct sampler *s;
    if (sampler_open(&s, &p->so, err, errlen) < 0)
        return -EINVAL;
    live_clear(p);
    if (p->sampler)
        sampler_close(p->sampler);
    p->sampler = s;
    p->cur = 0;
    sampler_take(p->sampler, &p->snaps[0]);
    memset(&p->snaps[1], 0, sizeof(p->snaps[1]));
    p->have_snap = true;
    sampling_retarget(p, NULL);
    return 0;
}

int pipeline_open(struct pipeline **out, const struct pipeline_opts *o, char *err, size_t errlen)
{
    struct pipeline *p = xcalloc(1, sizeof(*p));
    if (o->replay) {
        int rc;
        struct stat st;
        bool dir = stat(o->replay, &st) == 0 && S_ISDIR(st.st_mode);
        size_t plen = strlen(o->replay);
        bool zst = plen > 4 && strcmp(o->replay + plen - 4, ".zst") == 0;
        double from = o->replay_from, to = o->replay_to, at = o->replay_at;
        if (from == 0 && to == 0 && at == 0)
            from = to = at = (double)NAN;
        if (dir || zst || !isnan(from) || !isnan(to) || !isnan(at)) {
            /* A directory without a window: the last hour of it. */
            if (dir && isnan(from) && isnan(to) && isnan(at))
                from = clock_wall() - 3600;
            /* A moment without a window: the hour around it. */
            if (!isnan(at) && isnan(from) && isnan(to)) {
                from = at - 3600;
                to = at + 3600;
            }
            rc = replay_open_window(&p->rp, o->replay, from, to, at, err, errlen);
        } else {
            rc = replay_open(&p->rp, o->replay, err, errlen);
        }
        if (rc < 0) {
            free(p);
            return rc;
        }
        p->at = at;
        /* The first sample that decodes; a recording of which none does is refused here,
         * with the first sample's error. */
        char first[256] = "";
        size_t n = replay_count(p->rp);
        for (size_t i = replay_start(p->rp); i < n; i++) {
            rc = pipeline_seek(p, i, i ? NULL : first, i ? 0 : sizeof(first));
            if (rc == 0)
                break;
        }
        if (!p->have_rf) {
            snprintf(err, errlen, "%s", first[0] ? first : "no sample decodes");
            replay_close(p->rp);
            free(p);
            return -EINVAL;
        }
        p->started = false;
    } else {
        p->so = o->sampler;
        if (gethostname(p->host, sizeof(p->host) - 1) < 0)
            str_copy(p->host, "?", sizeof(p->host));
        p->interval_hint = o->interval_s;
        p->smp = sampling_start(p->so.proc_root, sampling_period(o->interval_s));
        int rc = live_open(p, err, errlen);
        if (rc < 0) {
            sampling_stop(p->smp);
            free(p);
            return rc;
        }
        if (o->state_path) {
            p->state_path = xstrdup(o->state_path);
            state_load(p);
            p->state_saved_mono = clock_mono();
        }
    }
    *out = p;
    return 0;
}

void pipeline_close(struct pipeline *p)
{
    if (!p)
        return;
    sampling_stop(p->smp);
    state_save(p);
    ts_counts_free(&p->counted);
    free(p->state_path);
    free(p->state_v);
    live_clear(p);
    baselines_free(&p->hist);
    if (p->sampler)
        sampler_close(p->sampler);
    if (p->rp) {
        replay_frame_free(&p->rf);
        replay_close(p->rp);
    }
    free(p);
}

void pipeline_add_sink(struct pipeline *p, const struct sink *s)
{
    if (p->nsinks < PIPELINE_SINKS)
        p->sinks[p->nsinks++] = *s;
}

/* Hand the new frame to every sink; the first failure is reported, the failed sinks go. */
static int emit(struct pipeline *p, char *err, size_t errlen)
{
    int first = 0;
    p->sink_failed = false;
    size_t kept = 0;
    for (size_t i = 0; i < p->nsinks; i++) {
        char why[256] = "";
        int rc = p->sinks[i].emit(p->sinks[i].ctx, &p->frame, why, sizeof(why));
        if (rc < 0) {
            if (!first) {
                first = rc;
                if (err && errlen)
                    snprintf(err, errlen, "%s", why[0] ? why : strerror(-rc));
            }
            continue;
        }
        p->sinks[kept++] = p->sinks[i];
    }
    p->nsinks = kept;
    p->sink_failed = first < 0;
    return first;
}

static void frame_from_replay(struct pipeline *p)
{
    p->frame = (struct frame){
        .snap = &p->rf.snap, .res = &p->rf.res, .ver = &p->rf.ver, .host = p->rf.host,
        .unlisted = p->rf.unlisted, .nunlisted = p->rf.nunlisted, .replayed = true,
        .has_at = !isnan(p->at), .at = p->at, .at_missed = replay_at_missed(p->rp),
    };
    p->have_frame = true;
}

int pipeline_seek(struct pipeline *p, size_t i, char *err, size_t errlen)
{
    if (!p->rp)
        return -EINVAL;
    p->started = true;
    char why[256] = "";
    int rc = replay_load(p->rp, i, &p->rf, why, sizeof(why));
    if (rc == -ERANGE)
        return rc;
    p->pos = i;
    if (rc < 0) {
        if (err && errlen)
            snprintf(err, errlen, "%s", why);
        return rc;
    }
    p->have_rf = true;
    frame_from_replay(p);
    return 0;
}

/* The frame of the one snapshot there is (pipeline_first); false when there is none to
 * make (a recording, or a frame made already from this snapshot). */
static bool first_frame(struct pipeline *p)
{
    if (p->rp || !p->have_snap || p->have_result)
        return false;
    delta_compute(NULL, &p->snaps[p->cur], &p->hist, &p->res);
    verdict_compute(&p->res, &p->ver);
    p->have_result = true;
    p->frame = (struct frame){
        .snap = &p->snaps[p->cur], .res = &p->res, .ver = &p->ver, .host = p->host,
    };
    p->have_frame = true;
    return true;
}

int pipeline_first(struct pipeline *p, char *err, size_t errlen)
{
    p->sink_failed = false;
    if (!first_frame(p))
        return 0;
    int rc = emit(p, err, errlen);
    pipeline_load_deferred(p);
    return rc < 0 ? rc : 1;
}

bool pipeline_has_deferred(const struct pipeline *p)
{
    return p->sampler && sampler_lens_deferred(p->sampler);
}

void pipeline_load_deferred(struct pipeline *p)
{
    if (p->sampler)
        sampler_load_lens(p->sampler);
}

int pipeline_preview(struct pipeline *p)
{
    return first_frame(p) ? 1 : 0;
}

bool pipeline_sink_failed(const struct pipeline *p)
{
    return p->sink_failed;
}

int pipeline_step(struct pipeline *p, char *err, size_t errlen)
{
    p->sink_failed = false;
    if (p->rp) {
        /* The first step hands out the sample pipeline_open found; later ones the next. */
        if (p->started) {
            if (p->pos + 1 >= replay_count(p->rp))
                return 0;
            int rc = pipeline_seek(p, p->pos + 1, err, errlen);
            if (rc < 0)
                return rc;
        }
        p->started = true;
        int rc = emit(p, err, errlen);
        return rc < 0 ? rc : 1;
    }
    int prev = p->cur, next = p->cur ^ 1;
    /* The frame that was is over: its result points into the tasks about to be cut. */
    if (p->have_result) {
        verdicts_free(&p->ver);
        result_free(&p->res);
        p->have_result = false;
        p->have_frame = false;
    }
    snapshot_free(&p->snaps[next]);
    snapshot_reduce(&p->snaps[prev]);
    sampler_take(p->sampler, &p->snaps[next]);
    p->cur = next;
    delta_compute(&p->snaps[prev], &p->snaps[next], &p->hist, &p->res);
    /* The previous snapshot's history is for the rates alone: freed now, before the
     * verdicts and the output, not at the next step. The output was a refresh's highest
     * point of memory with it still held; its blocks now take its place in the heap. */
    free(p->snaps[prev].hist);
    p->snaps[prev].hist = NULL;
    p->snaps[prev].nhist = 0;
    sampling_retarget(p, &p->res);
    delta_sampled(&p->res, &p->counted);
    verdict_compute(&p->res, &p->ver);
    if (p->state_path && clock_mono() - p->state_saved_mono >= STATE_SAVE_S)
        state_save(p);
    p->have_result = true;
    p->frame = (struct frame){
        .snap = &p->snaps[next], .res = &p->res, .ver = &p->ver, .host = p->host,
    };
    p->have_frame = true;
    int rc = emit(p, err, errlen);
    return rc < 0 ? rc : 1;
}

const struct frame *pipeline_frame(const struct pipeline *p)
{
    return p->have_frame ? &p->frame : NULL;
}

struct baselines *pipeline_baselines(struct pipeline *p)
{
    return &p->hist;
}

bool pipeline_is_replay(const struct pipeline *p)
{
    return p->rp != NULL;
}

int pipeline_set_threads(struct pipeline *p, bool threads, char *err, size_t errlen)
{
    if (p->rp)
        return -EINVAL;
    bool was = p->so.threads;
    p->so.threads = threads;
    int rc = live_open(p, err, errlen);
    if (rc < 0)
        p->so.threads = was;
    return rc;
}

size_t pipeline_replay_count(const struct pipeline *p)
{
    return p->rp ? replay_count(p->rp) : 0;
}

size_t pipeline_replay_damages(const struct pipeline *p)
{
    return p->rp ? replay_damages(p->rp) : 0;
}

const char *pipeline_replay_damage(const struct pipeline *p, size_t i)
{
    return p->rp ? replay_damage(p->rp, i) : NULL;
}

size_t pipeline_replay_pos(const struct pipeline *p)
{
    return p->pos;
}
