/* SPDX-License-Identifier: GPL-2.0-or-later */
/* pipeline.h: one refresh, one way. The one owner of the sampler, the snapshots, the
 * rates and the verdicts; every consumer (batch text, JSON, the screen, a recording, and
 * whatever comes next) reads the frame it produces.
 *
 *   live:    sampler_take -> snapshot -> delta_compute -> verdict_compute -> frame
 *   replay:  a recorded sample (store/replay.h) -> frame
 *
 * Contract
 * - pipeline_open() opens the machine (o->replay NULL) or a recording. Live, it takes the
 *   first snapshot at once: rates need two, so the first frame comes from the first
 *   pipeline_step() after it. A recording is refused here when none of its samples
 *   decodes; the first pipeline_step() hands out the first sample that does.
 * - pipeline_step() makes the next frame: live, a new snapshot against the one before;
 *   replay, the next recorded sample. It returns 1 with a new frame, 0 when there is none
 *   (the end of a recording), or -errno with one line in err: a recorded sample that
 *   does not decode (the last good frame stays), or a sink that failed (below).
 * - Every new frame is handed to each sink, in the order they were added, before
 *   pipeline_step() returns. A sink returns 0 or -errno with one line in err; a sink
 *   that fails is removed (it is not called again) and its error is what pipeline_step()
 *   returns, after the other sinks had the frame. A recording on a full disk stops with
 *   a message instead of being cut silently.
 * - The frame and everything it points to stay valid until the next pipeline_step(),
 *   pipeline_seek(), pipeline_set_threads() or pipeline_close(). Between two frames the
 *   pipeline keeps of the older snapshot only what the deltas need (snapshot_reduce), so
 *   two whole task lists are never alive at once; callers never see that.
 * - Live, tasks whose I/O delay neither taskstats nor the BPF lens gives are sampled
 *   between refreshes (source/threadstate.h) by a thread the pipeline owns: it reads
 *   /proc only, never blocks pipeline_step() beyond a lock held to swap two counters,
 *   and samples nothing while no task needs it. delta_sampled (delta.h) turns what it
 *   counted into the frame's estimates.
 * - Live, with o->state_path, the devices' quiet-time levels of earlier runs are read at
 *   open and written every STATE_SAVE_S and at close (store/state.h).
 * - Nothing here prints or exits. Allocation failure aborts (util.h).
 */
#ifndef IOTRIAGE_PIPELINE_H
#define IOTRIAGE_PIPELINE_H

#include <stdbool.h>
#include <stddef.h>

#include "delta.h"
#include "snapshot.h"
#include "verdict.h"

/* One refresh, as every consumer reads it. */
struct frame {
    const struct snapshot *snap;
    const struct result *res;        /* res->cur == snap */
    const struct verdicts *ver;
    const char *host;                /* this machine's name, or the recorded one (may be NULL) */
    /* Replay: per task, a stub added so that a warning has a task to name (store/replay.h);
     * NULL when there is none. */
    const bool *unlisted;
    size_t nunlisted;
    bool replayed;                   /* from a recording, not the machine */
    /* Replay with a moment asked (--at): that moment, and whether nothing was recorded at
     * or after it (the first frame is then the last sample before it). */
    bool has_at, at_missed;
    double at;
};

/* A consumer of every frame. */
struct sink {
    const char *name;                /* for messages: "recording", "stdout" */
    int (*emit)(void *ctx, const struct frame *f, char *err, size_t errlen);
    void *ctx;
};

struct pipeline_opts {
    struct sampler_opts sampler;     /* live */
    const char *replay;              /* a recording to read instead of the machine: a file,
                                      * or a recorder's directory (store/store.h) */
    /* A window of it (epoch seconds; NAN, or 0 in all three: the whole file, or the last
     * hour of a directory), and the moment the first frame shows (the first sample at or
     * after it). */
    double replay_from, replay_to, replay_at;
    /* Live: the devices' remembered quiet-time levels (store/state.h); NULL: none. */
    const char *state_path;
    /* Live: the caller's refresh interval, for the sampling period before the first
     * interval is measured (0: 1 s). */
    double interval_s;
};

struct pipeline;

/* Returns 0, or -errno with one line in err (the sampler or the recording cannot open). */
int  pipeline_open(struct pipeline **out, const struct pipeline_opts *o, char *err, size_t errlen);
void pipeline_close(struct pipeline *p);

/* At most PIPELINE_SINKS sinks. */
#define PIPELINE_SINKS 8
void pipeline_add_sink(struct pipeline *p, const struct sink *s);

int  pipeline_step(struct pipeline *p, char *err, size_t errlen);
/* Live, right after pipeline_open() or pipeline_set_threads(): a frame from the one
 * snapshot there is, with what needs no interval (devices, schedulers, priorities, the
 * labels a scheduler ignores outright) and every rate unknown (interval_s 0), handed to
 * the sinks like any frame. The next pipeline_step() measures from the same snapshot.
 * Returns 1, or -errno with err when a sink failed; 0 when not live or not just opened. */
int  pipeline_first(struct pipeline *p, char *err, size_t errlen);
/* The same frame for the screen alone: no sink is called, so a recording or --json still
 * starts with a whole interval. Returns 1, or 0 when not live or not just opened. */
int  pipeline_preview(struct pipeline *p);
/* Once the first frame is out (drawn, or handed to the sinks by pipeline_first, which
 * calls it): load what sampler_opts.defer_lens left for later. Nothing when done, not
 * live, or nothing deferred. */
void pipeline_load_deferred(struct pipeline *p);
/* Whether pipeline_load_deferred has something to load (live, the lens deferred: after
 * pipeline_open, and again after pipeline_set_threads opens a new sampler). */
bool pipeline_has_deferred(const struct pipeline *p);
/* The error pipeline_step() just returned came from a sink (a write that failed), not
 * from a recorded sample that did not decode. */
bool pipeline_sink_failed(const struct pipeline *p);

/* The newest frame, or NULL before the first one. */
const struct frame *pipeline_frame(const struct pipeline *p);

bool pipeline_is_replay(const struct pipeline *p);

/* The device baselines the deltas keep (delta.h), for seeding them before the first step
 * (the recorder's quiet-time levels of an earlier run); not to be changed after. */
struct baselines *pipeline_baselines(struct pipeline *p);

/* Why the remembered levels were not read (a file that is not one, unreadable), or
 * NULL; for one line on stderr. */
const char *pipeline_state_note(const struct pipeline *p);

/* Live: start again with threads (or processes) as the unit. The first frame comes from
 * the next step. Returns 0 or -errno with err. */
int  pipeline_set_threads(struct pipeline *p, bool threads, char *err, size_t errlen);

/* Replay: how many samples the recording has, which one the frame is (0-based), and go
 * to sample i (sinks are not called: moving about a recording is not a new frame).
 * pipeline_seek() returns 0, or -errno with err (the frame stays the last good one). */
size_t pipeline_replay_count(const struct pipeline *p);
/* The damages met reading a recorder's files (store/replay.h replay_damages), and
 * each one's text (NULL past the end). */
size_t pipeline_replay_damages(const struct pipeline *p);
const char *pipeline_replay_damage(const struct pipeline *p, size_t i);
size_t pipeline_replay_pos(const struct pipeline *p);
int    pipeline_seek(struct pipeline *p, size_t i, char *err, size_t errlen);

#endif
