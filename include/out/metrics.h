/* SPDX-License-Identifier: GPL-2.0-or-later */
/* out/metrics.h: one sample as a Prometheus page (text format 0.0.4 or OpenMetrics 1.0).
 *
 * metrics_format() reads a result and its verdicts (and the snapshot they point to) and
 * writes one whole page to a FILE (an open_memstream buffer in `iotriage export`); it
 * changes nothing it is given. What it writes is what iotriage knows and node_exporter
 * does not (docs/metrics.md lists every family): each device's scheduler, nr_requests,
 * hardware queues, saturation, the warning codes per device, the roles per device. PSI
 * and the diskstats counters are node_exporter's and are not written again.
 *
 * Conventions the page keeps, so that Prometheus and node_exporter's textfile collector
 * take it as it is:
 *   - names start with iotriage_, are in base units (seconds, bytes), counters end in
 *     _total and metadata in _info; HELP text is a constant, identical on every write;
 *   - no sample carries a timestamp (the scrape, or the textfile's mtime, gives it);
 *   - no label holds a pid, a command or anything a process chooses: every label value
 *     is a device name, a scheduler name, a warning code or a role, so the number of
 *     series is bounded by the number of block devices;
 *   - a figure iotriage does not know is absent, never 0 (NAN never reaches the page);
 *   - label values are escaped per the exposition format (\\, \", \n) and any byte
 *     that is not valid UTF-8 is written as U+FFFD, which both formats require.
 *
 * Lenses that come later (per-priority latency histograms from BPF, per-cgroup I/O and
 * pressure) add their families through struct metrics_lens: metrics_format() calls each
 * after its own families, with a writer that knows the format. They use metrics_family()
 * and metrics_sample() (and metrics_histogram() for histograms), so escaping, the
 * counter and info suffixes and the OpenMetrics differences live in one place. The names
 * they are planned to use are reserved in docs/metrics.md.
 */
#ifndef IOTRIAGE_OUT_METRICS_H
#define IOTRIAGE_OUT_METRICS_H

#include <stddef.h>
#include <stdio.h>

#include "delta.h"
#include "verdict.h"

enum metrics_fmt {
    METRICS_PROM_TEXT,               /* text/plain; version=0.0.4 */
    METRICS_OPENMETRICS,             /* application/openmetrics-text; version=1.0.0; ends
                                      * with "# EOF" */
};

#define METRICS_CTYPE_TEXT "text/plain; version=0.0.4; charset=utf-8"
#define METRICS_CTYPE_OPENMETRICS "application/openmetrics-text; version=1.0.0; charset=utf-8"

enum metrics_type { MT_GAUGE, MT_COUNTER, MT_INFO, MT_HISTOGRAM };

struct metrics_writer {
    FILE *f;
    enum metrics_fmt fmt;
};

/* A family's header. name is the family name without _total (counter) or _info (info):
 * the writer adds the suffix where the format wants it. help must hold no newline. */
void metrics_family(struct metrics_writer *w, const char *name, enum metrics_type type,
                    const char *help);
/* One sample of family name: the suffix ("_total", "_info", "_bucket", "" ...) is
 * appended to the name; labels are nlabels (key, value) pairs, values escaped here.
 * A NAN value writes nothing: unknown is absent. */
void metrics_sample(struct metrics_writer *w, const char *name, const char *suffix,
                    const char *const *labels, size_t nlabels, double v);
/* A whole histogram sample set (after metrics_family(.., MT_HISTOGRAM, ..)): counts[i] is
 * the number of observations <= bounds[i] (cumulative, as Prometheus wants them), then
 * the +Inf bucket (= count), _sum and _count. */
void metrics_histogram(struct metrics_writer *w, const char *name,
                       const char *const *labels, size_t nlabels,
                       const double *bounds, const unsigned long long *counts, size_t nbounds,
                       unsigned long long count, double sum);

/* What the exporter knows of itself, not of the sample. */
struct metrics_meta {
    const char *version;             /* iotriage's version, for iotriage_build_info */
    unsigned long long refreshes;    /* samples taken since start (iotriage_refreshes_total) */
    double refresh_seconds;          /* what the last refresh cost; NAN when unknown */
    double start_time;               /* epoch seconds the exporter started; NAN when unknown */
};

/* A later lens's families (see above). write is called once per page. */
struct metrics_lens {
    const char *name;                /* for diagnostics only */
    void (*write)(struct metrics_writer *w, void *ctx);
    void *ctx;
};

/* Write one page: iotriage's own families, then each lens's, then "# EOF" for
 * OpenMetrics. meta may be NULL (no exporter families). Returns 0, or -EIO when a write
 * to f failed. */
int metrics_format(FILE *f, const struct result *r, const struct verdicts *v,
                   enum metrics_fmt fmt, const struct metrics_meta *meta,
                   const struct metrics_lens *lenses, size_t nlenses);

/* Content negotiation as Prometheus does it: OpenMetrics when the Accept header lists
 * application/openmetrics-text (version 1.0.0, 0.0.1 or none) with a q above 0 and not
 * below what it gives text/plain; else the classic text format (also for no header). */
enum metrics_fmt metrics_negotiate(const char *accept);

/* Write s as a label value (no quotes): \\, \" and \n escaped, invalid UTF-8 as U+FFFD. */
void metrics_escape_label(FILE *f, const char *s);

#endif
