/* SPDX-License-Identifier: GPL-2.0-or-later */
/* sample/decode_cgroups.h: the cgroup lens's part of a recording read back (sample/frame.h).
 *
 * replay_cgroups_decode() reads a sample's top-level "cgroups" array and each process's
 * "cgroup" (docs/json.md) into the frame: f->snap.cgroups (a cgroup_set whose entries hold
 * what was written: path, parent, names, task counts, settings, the io.stat rows' devices,
 * the pressure error) and f->res.cgroups (the rates as written), and marks which of the
 * frame's warnings belong to which cgroup (warning.cgroup), so that sample_write writes
 * the same line again. It runs after the frame's tasks and warnings are decoded.
 *
 * A sample without "cgroups" (a recording made before the lens, or without tasks) leaves
 * the frame without a set, and the output omits the keys as the recording did. Input is
 * untrusted: a wrong type, an unknown parent, device, path or warning fails with -EINVAL
 * and one line (no file or line number: the caller adds them) in err. On failure the
 * frame's cgroup fields are left empty. Nothing counters-based is restored: a replayed
 * set's pressure and io.stat counters are 0, only the rates are as recorded.
 */
#ifndef IOTRIAGE_SAMPLE_DECODE_CGROUPS_H
#define IOTRIAGE_SAMPLE_DECODE_CGROUPS_H

#include <stddef.h>

#include "sample/json.h"
#include "sample/frame.h"

int replay_cgroups_decode(const struct json_value *root, struct replay_frame *f, char *err, size_t errlen);

#endif
