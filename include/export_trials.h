/* SPDX-License-Identifier: GPL-2.0-or-later */
/* export_trials.h: the scheduler trials recorded on this machine, as the exporter's
 * iotriage_trial_* families (docs/metrics.md, "Scheduler trials").
 *
 * `iotriage trial` appends its JSON report, one line, to trials.jsonl in the recorder's
 * directory (docs/recording.md). The exporter reads that file at each refresh, from where
 * it stopped: a stat when nothing was added, the new lines when something was. A file
 * replaced (another inode) or cut shorter is read again from its start (the counters
 * start again: Prometheus takes that as a counter reset). What it keeps per device is
 * bounded: how many trials per scheduler tried and decision, and the last trial's
 * figures per phase and per I/O priority (the lens's slots, no other label value).
 *
 * The file is the operator's (root's, mode 0640), but it is read as a user's file: a
 * line that is no report (damaged, cut, another tool's) is counted and skipped, never
 * half-taken; a label value is a device or scheduler name of at most 31 bytes, a known
 * priority slot, or a decision; numbers must be finite and not negative.
 */
#ifndef IOTRIAGE_EXPORT_TRIALS_H
#define IOTRIAGE_EXPORT_TRIALS_H

#include <stddef.h>

#include "out/metrics.h"

#define TRIALS_DEVICES_MAX  64       /* devices remembered; a later one is skipped */
#define TRIALS_KINDS_MAX    16       /* (scheduler, decision) counters per device */
#define TRIALS_LINE_MAX     (256u << 10)   /* a report is about 5 KB */
#define TRIALS_READ_MAX     (4u << 20)     /* bytes read per refresh; the rest next time */

struct trials;

/* path: the trials file (NULL or "": none; the families are then absent). */
struct trials *trials_new(const char *path);
void trials_free(struct trials *t);

/* Read what was appended since the last call. A missing file is no error (no trial yet:
 * nothing is written); another failure returns -errno once per kind of failure, with
 * one line in err, and keeps what was read before. */
int trials_refresh(struct trials *t, char *err, size_t errlen);

/* Pure, for tests and fuzzing: take the lines of buf[0, len) as reports, each once it
 * ends ('\n'): a line not yet ended is kept until the rest comes in a later call.
 * Returns len. A line longer than TRIALS_LINE_MAX is skipped whole, also across calls. */
size_t trials_feed(struct trials *t, const char *buf, size_t len);

/* Reports taken and lines skipped (not a report, or a device beyond the bound). */
unsigned long long trials_taken(const struct trials *t);
unsigned long long trials_skipped(const struct trials *t);

/* The families, as a metrics lens (out/metrics.h): ctx is the struct trials. */
void trials_write(struct metrics_writer *w, void *ctx);

/* The trials file of this machine: $IOTRIAGE_RECORD_DIR/trials.jsonl ("" : none), else
 * /var/lib/iotriage/trials.jsonl. Returns buf, or NULL when there is none. */
const char *trials_default_path(char *buf, size_t n);

#endif
