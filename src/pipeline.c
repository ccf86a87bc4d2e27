/* pipeline.c: one refresh, one way (pipeline.h). */
#include "pipeline.h"

#include <errno.h>
#include <math.h>
#include <sys/stat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "record/replay.h"
#include "util.h"

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
    /* replay */
    struct replay *rp;
    struct replay_frame rf;
    bool have_rf;
    bool started;                    /* the first decodable sample was handed out */
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
        int rc = live_open(p, err, errlen);
        if (rc < 0) {
            free(p);
            return rc;
        }
    }
    *out = p;
    return 0;
}

void pipeline_close(struct pipeline *p)
{
    if (!p)
        return;
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
    return rc < 0 ? rc : 1;
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
    verdict_compute(&p->res, &p->ver);
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

const char *pipeline_replay_damage(const struct pipeline *p)
{
    return p->rp ? replay_damage(p->rp) : NULL;
}

size_t pipeline_replay_pos(const struct pipeline *p)
{
    return p->pos;
}
