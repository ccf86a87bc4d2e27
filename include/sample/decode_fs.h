/* SPDX-License-Identifier: GPL-2.0-or-later */
/* sample/decode_fs.h: the `filesystems` key of a recorded sample (docs/json.md) read back
 * into the snapshot and result of a replay frame (sample/frame.h), so that out_json
 * writes it again byte for byte.
 *
 * Contract
 * - replay_fs_decode reads root's `filesystems`. Absent (a recording made before it): the
 *   snapshot's fs_taken stays false, nothing else changes, 0. Present: s->fss and r->fss
 *   (s->nfss = r->nfss) are filled; the statvfs figures, rates, used_pct and time to full
 *   come from the recording, not recomputed (nhist 0). s->devs must already hold the
 *   sample's devices: `device` and `disk` must name one of them (or be null).
 * - What a recording does not hold: mountinfo ids, major:minor of the filesystem and of
 *   each deleted file (0), inodes, the holders' open flags beyond O_APPEND (flags is
 *   O_APPEND or 0), a statvfs error's errno (-EIO for "figures null").
 * - The input is untrusted: types and ranges are checked, a string holding a NUL is
 *   refused. Any problem: -EINVAL and one line in err naming the key
 *   ("filesystems[2].deleted_open[0].holders[1].pid: ..."); nothing is left allocated in
 *   s or r then (fss NULL, nfss 0). Memory belongs to the snapshot (snapshot_free) and the
 *   result (result_free).
 * - replay_fs_find: the index of the filesystem mounted at mount[0, len) in s, or -1: a
 *   warning's `mount` (fs-* codes) is resolved with it.
 */
#ifndef IOTRIAGE_SAMPLE_DECODE_FS_H
#define IOTRIAGE_SAMPLE_DECODE_FS_H

#include <stddef.h>

#include "delta.h"
#include "sample/json.h"
#include "snapshot.h"

int replay_fs_decode(const struct json_value *root, struct snapshot *s, struct result *r,
                     char *err, size_t errlen);
int replay_fs_find(const struct snapshot *s, const char *mount, size_t len);

#endif
