/* SPDX-License-Identifier: GPL-2.0-or-later */
/* out/output.h: the human outputs. Each reads one result (and the snapshot it points to)
 * and writes; none of them changes anything it is given. The machine-readable sample is
 * the recording format's writer (sample/sample.h).
 *   out_text_sample: human text, like `top -b` / `iotop -b` with iostat's device columns
 *   and the process table of out/columns.h. Returns 0, or -errno when the stream failed.
 */
#ifndef IOTRIAGE_OUT_OUTPUT_H
#define IOTRIAGE_OUT_OUTPUT_H

#include <stdio.h>

#include "delta.h"
#include "sample/sample.h"
#include "verdict.h"

int out_text_sample(FILE *f, const struct result *r, const struct verdicts *v,
                    const struct sample_opts *o);

#endif
