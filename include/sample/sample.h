/* SPDX-License-Identifier: GPL-2.0-or-later */
/* sample/sample.h: the sample format, one JSON object per line (NDJSON): what `--json`
 * prints, what `--record` writes and `--replay` reads back (store/replay.h). Keys are
 * documented in docs/json.md.
 *   sample_write: one sample of a result and its verdicts, on one line. Reads, never
 *   changes, what it is given. Returns 0, or -errno when the stream failed (ferror or
 *   fflush: a full disk, a closed pipe), so that a recording is never lost silently.
 */
#ifndef IOTRIAGE_SAMPLE_SAMPLE_H
#define IOTRIAGE_SAMPLE_SAMPLE_H

#include <stdbool.h>
#include <stdio.h>

#include "delta.h"
#include "verdict.h"

/* The JSON sample format's version: raised when a key changes meaning or goes away
 * (adding keys does not raise it). A replay refuses samples from a newer version. */
#define IOTRIAGE_JSON_VERSION 1

/* The texts of the JSON `notes` (and what a replay maps back to source errors). */
#define NOTE_PSI_ENOENT "kernel without PSI or booted with psi=0"
#define NOTE_DA_OFF     "kernel.task_delayacct is 0: delays unavailable; after enabling it only tasks started later carry data"
#define NOTE_DA_MISSING "kernel.task_delayacct not found: kernel without delay accounting"


struct sample_opts {
    const char *hostname;
    bool only_active;       /* -o: only tasks that moved bytes or waited on I/O */
    bool utf8;              /* the terminal/locale takes UTF-8 (text output only) */
    /* A replay's moment asked (--at): the sample says how far it is from it (JSON "at",
     * the text's "At:" line). at_missed: nothing was recorded at or after it. */
    bool has_at, at_missed;
    double at;
};

int sample_write(FILE *f, const struct result *r, const struct verdicts *v,
                 const struct sample_opts *o);

#endif
