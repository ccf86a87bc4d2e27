/* SPDX-License-Identifier: GPL-2.0-or-later */
/* store/replay.h: a recording (`iotriage --record FILE`, one sample_write line per
 * sample) read back into the structs the outputs and the screen draw from.
 *
 * Contract
 * - replay_open() reads the whole file (at most REPLAY_FILE_MAX bytes) and indexes its
 *   lines; it does not decode them, so a file with some bad lines opens fine and only
 *   replay_load() of those lines fails. Blank lines are not samples (but count as lines in
 *   messages). A file with no sample at all is an error.
 * - replay_load() decodes one sample into a frame: a snapshot, the result that points
 *   into it and the verdicts, as the live pipeline would have had them when it wrote the
 *   line, so that sample_write(&f->res, &f->ver, &(struct sample_opts){ .hostname =
 *   f->host, .only_active = f->nunlisted > 0 }) writes that line again byte for byte
 *   (notes included: they are rebuilt from their text). Numbers were printed with three
 *   decimals and come back as those decimals.
 * - The input is untrusted: every key is checked for presence, type and range, every
 *   name a sample refers to (a process's devices, a warning's device and pid) must
 *   resolve. Any problem makes that one sample fail with -EINVAL (malformed) or -EPROTO
 *   (a sample from a newer format version) and one line "FILE:LINE: what" in err.
 * - Errors are -errno with one line of text in err (no newline); nothing here prints or
 *   exits. Allocation failure aborts (util.h).
 * - Decoding is bounded (sample/frame.h): a line is at most REPLAY_LINE_MAX bytes and
 *   REPLAY_VALUES_MAX JSON values, nested at most 32 deep.
 *
 * What a recording does not hold, and what a frame has instead (documented per field in
 * sample/decode*.c): the diskstats counters (f[] is 0; nfields from which rates the kernel gave),
 * the /proc/PID/io counters (0), nlwp (1 with threads, else 0: unknown), state (0: unknown),
 * kthread (false), delay_sample (only .valid, from delay_valid), mono (= wall),
 * delayacct_since_ticks (-1), the per-task buffered/truncated device bits, the raw errno
 * of a failure (one representative errno per recorded reason: "permission denied" ->
 * -EACCES, "exited" -> -ESRCH, "malformed" -> -EINVAL, strerror text -> that errno).
 *
 * Recordings made with -o list only active processes, but warnings name every process
 * they are about. A process named by a warning and absent from `processes` is added to
 * the frame as a stub (pid and comm from the warning, everything else unknown: rates NAN,
 * not valid, io_err -ENODATA; role none) so the warning has a task to point to; stubs
 * are inactive (task_is_active() false), so an output with only_active skips them;
 * nunlisted counts them and unlisted[] marks them.
 */
#ifndef IOTRIAGE_STORE_REPLAY_H
#define IOTRIAGE_STORE_REPLAY_H

#include <stdbool.h>
#include <stddef.h>

#include "sample/frame.h"

#define REPLAY_FILE_MAX   (512ull << 20)   /* bytes of a recording */

struct replay;                               /* an opened recording, its lines indexed */

/* Open and index path. Returns 0, or -errno with "FILE: what" in err: the open/read
 * error, -EFBIG over REPLAY_FILE_MAX, -EINVAL when there is no sample. */
int    replay_open(struct replay **out, const char *path, char *err, size_t errlen);
/* The recorder's files (a directory of them, one .zst file, or a plain file read the same
 * way: store/store.h), the samples of [from, to] (NAN: no bound), taken into memory as
 * one plain recording; at (NAN: none) picks the sample replay_start() names, the first at
 * or after it (the last when none is). A damaged file is read up to the damage and on from
 * the next frame; replay_damages() counts the damages met (every file and frame, those
 * the seek to from met too; past 100, the last one counts the rest) and replay_damage()
 * tells each, "FILE: damaged at byte N: what". Returns 0, or -errno with err:
 * -ENOENT when the window holds no sample, -EFBIG over REPLAY_FILE_MAX. Line numbers in
 * messages count the window's samples. */
int    replay_open_window(struct replay **out, const char *path, double from, double to, double at,
                          char *err, size_t errlen);
size_t replay_start(const struct replay *r);
/* at was given and the window holds no sample at or after it: replay_start() is the last
 * sample before it. */
bool   replay_at_missed(const struct replay *r);
size_t replay_damages(const struct replay *r);
const char *replay_damage(const struct replay *r, size_t i);
/* Samples (non-blank lines) in the file. */
size_t replay_count(const struct replay *r);
/* The 1-based line of sample i, or 0 when there is no such sample. */
size_t replay_line(const struct replay *r, size_t i);
/* Decode sample i (0-based). Returns 0, or -EINVAL / -EPROTO with "FILE:LINE: what" in
 * err (-ERANGE "FILE: ..." when i >= replay_count()). */
int    replay_load(struct replay *r, size_t i, struct replay_frame *f, char *err, size_t errlen);
void   replay_close(struct replay *r);

#endif
