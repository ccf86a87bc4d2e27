/* SPDX-License-Identifier: GPL-2.0-or-later */
/* sample/frame.h: one recorded sample decoded back into the structs the outputs and the
 * screen draw from (the inverse of sample/sample.h's sample_write). The contract of the
 * decoding, and what a recording does not hold, is store/replay.h's: replay_load() reads
 * a line of a recording and hands its JSON to sample_decode().
 *
 * The decoders: sample/decode.c (context, typed reads, names, head, psi, one sample),
 * decode_lens.c, decode_devices.c, decode_procs.c, decode_warn.c (warnings, notes, the
 * cgroup lens), decode_fs.c and decode_cgroups.c.
 */
#ifndef IOTRIAGE_SAMPLE_FRAME_H
#define IOTRIAGE_SAMPLE_FRAME_H

#include <stdbool.h>
#include <stddef.h>

#include "delta.h"
#include "sample/json.h"
#include "snapshot.h"
#include "verdict.h"

#define REPLAY_LINE_MAX   (64u << 20)      /* bytes of one sample */
#define REPLAY_VALUES_MAX (4u << 20)       /* JSON values in one sample */

/* Everything the outputs and the screen read for one sample, owned by the frame.
 *
 * A frame points into itself (res.cur == &snap), so it must not be copied or moved with
 * `=` or memcpy: use replay_frame_move(). Its other pointers (res.devs[i].dev into
 * snap.devs, res.tasks[i].task into snap.tasks, host) point into heap memory it owns and
 * survive a move.
 *
 * Start from a zeroed frame (struct replay_frame f = { 0 }). replay_load() into a frame
 * that holds a sample replaces it on success and leaves it untouched on failure, so a
 * screen can keep showing the last good sample. Free with replay_frame_free(). */
struct replay_frame {
    struct snapshot snap;            /* devs (ds + bd), tasks (+ cmdline), tdevs, psi, ... */
    struct result   res;             /* devs, tasks pointing into snap; psi; interval_s */
    struct verdicts ver;             /* warnings (dev/task indices resolved), roles */
    char  *host;                     /* the recorded host name, or NULL (null in the file) */
    int    version;                  /* the sample's format version */
    size_t line;                     /* its 1-based line in the file */
    size_t nunlisted;                /* stub tasks added for warnings (see above) */
    bool  *unlisted;                 /* per task: a stub; NULL when nunlisted is 0 */
};

/* Decode one sample, root (the parsed line), into a frame f that starts zeroed but for
 * f->line and f->res.cur = &f->snap. Returns 0, or -EINVAL / -EPROTO with
 * "PATH:LINE: what" in err (path and line name the sample in messages). */
int    sample_decode(const char *path, size_t line, const struct json_value *root,
                     struct replay_frame *f, char *err, size_t errlen);
/* Move a loaded frame: *dst (which must hold no sample) takes over *src, which is left
 * zeroed. */
void   replay_frame_move(struct replay_frame *dst, struct replay_frame *src);
void   replay_frame_free(struct replay_frame *f);

#endif
