/* SPDX-License-Identifier: GPL-2.0-or-later */
/* out/metrics.c: a sample as a Prometheus / OpenMetrics page (docs/metrics.md). */
#include "out/metrics.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "util/escape.h"
#include "util/fmt.h"
#include "util.h"
#include "util/num.h"

/* metrics_format() holds the stream's lock for the whole page (flockfile): the page is a
 * few hundred short writes, and taking the lock for each cost more than formatting. */
#define PUTS(s, f)      fputs_unlocked((s), (f))
#define PUTC(c, f)      fputc_unlocked((c), (f))
#define WRITE(p, n, f)  fwrite_unlocked((p), 1, (n), (f))

/* ---- The writer ---------------------------------------------------------------------- */

/* Label values and HELP text are UTF-8 in both formats: a byte that is not (a device
 * name is whatever a driver chose) becomes U+FFFD, so the page always parses. */
static void put_escaped(FILE *f, const char *s, bool quote)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t n = strlen(s);
    size_t plain = 0;                /* device and scheduler names: ASCII, nothing to do */
    while (plain < n && p[plain] < 0x80 && p[plain] != '\\' && p[plain] != '\n' && p[plain] != '"')
        plain++;
    if (plain == n) {
        WRITE(s, n, f);
        return;
    }
    while (n) {
        unsigned cp;
        size_t len = utf8_decode(p, n, &cp);
        if (len == 0) {
            PUTS("\xef\xbf\xbd", f);
            p++, n--;
            continue;
        }
        if (cp == '\\')
            PUTS("\\\\", f);
        else if (cp == '\n')
            PUTS("\\n", f);
        else if (cp == '"' && quote)
            PUTS("\\\"", f);
        else
            WRITE(p, len, f);
        p += len, n -= len;
    }
}

void metrics_escape_label(FILE *f, const char *s)
{
    put_escaped(f, s, true);
}

/* The shortest text that reads back as v: counters and most gauges are integers, and
 * "0.1" reads better than %.17g's 0.10000000000000001. */
static void put_value(FILE *f, double v)
{
    if (isinf(v)) {
        PUTS(v > 0 ? "+Inf" : "-Inf", f);
        return;
    }
    char buf[32];
    if (v == floor(v) && fabs(v) < 1e15) {
        WRITE(buf, fmt_int(buf, (long long)v), f);
        return;
    }
    for (int prec = 15; prec <= 17; prec++) {
        snprintf(buf, sizeof(buf), "%.*g", prec, v);
        if (strtod(buf, NULL) == v)
            break;
    }
    PUTS(buf, f);
}

static const char *type_suffix(enum metrics_type t)
{
    return t == MT_COUNTER ? "_total" : t == MT_INFO ? "_info" : "";
}

void metrics_family(struct metrics_writer *w, const char *name, enum metrics_type type,
                    const char *help)
{
    static const char *const om_types[] = { "gauge", "counter", "info", "histogram" };
    static const char *const text_types[] = { "gauge", "counter", "gauge", "histogram" };
    /* OpenMetrics names the family without _total/_info; the classic format has no such
     * notion, so its HELP and TYPE name the samples themselves. */
    const char *suffix = w->fmt == METRICS_OPENMETRICS ? "" : type_suffix(type);
    fprintf(w->f, "# HELP %s%s ", name, suffix);
    put_escaped(w->f, help, w->fmt == METRICS_OPENMETRICS);
    fprintf(w->f, "\n# TYPE %s%s %s\n", name, suffix,
            (w->fmt == METRICS_OPENMETRICS ? om_types : text_types)[type]);
}

void metrics_sample(struct metrics_writer *w, const char *name, const char *suffix,
                    const char *const *labels, size_t nlabels, double v)
{
    if (isnan(v))
        return;
    PUTS(name, w->f);
    PUTS(suffix, w->f);
    if (nlabels) {
        PUTC('{', w->f);
        for (size_t i = 0; i < nlabels; i++) {
            if (i)
                PUTC(',', w->f);
            PUTS(labels[2 * i], w->f);
            PUTS("=\"", w->f);
            put_escaped(w->f, labels[2 * i + 1], true);
            PUTC('"', w->f);
        }
        PUTC('}', w->f);
    }
    PUTC(' ', w->f);
    put_value(w->f, v);
    PUTC('\n', w->f);
}

#define LABELS_MAX 8

void metrics_histogram(struct metrics_writer *w, const char *name,
                       const char *const *labels, size_t nlabels,
                       const double *bounds, const unsigned long long *counts, size_t nbounds,
                       unsigned long long count, double sum)
{
    if (nlabels >= LABELS_MAX)
        return;
    const char *l[2 * LABELS_MAX];
    memcpy(l, labels, 2 * nlabels * sizeof(*l));
    char le[32];
    l[2 * nlabels] = "le";
    l[2 * nlabels + 1] = le;
    for (size_t i = 0; i <= nbounds; i++) {
        if (i < nbounds)
            snprintf(le, sizeof(le), "%.17g", bounds[i]);
        else
            str_copy(le, "+Inf", sizeof(le));
        metrics_sample(w, name, "_bucket", l, nlabels + 1,
                       (double)(i < nbounds ? counts[i] : count));
    }
    metrics_sample(w, name, "_sum", labels, nlabels, sum);
    metrics_sample(w, name, "_count", labels, nlabels, (double)count);
}

/* ---- iotriage's families --------------------------------------------------------------- */

/* The devices a page describes: whole disks (a partition shares its disk's queue, and the
 * verdicts are about queues) whose sysfs entry could be read. */
static bool dev_listed(const struct dev_rates *d)
{
    return d->dev->bd_err == 0 && !d->dev->bd.partition;
}

static void write_meta(struct metrics_writer *w, const struct result *r,
                       const struct metrics_meta *m)
{
    if (m) {
        metrics_family(w, "iotriage_build", MT_INFO, "iotriage's version.");
        const char *lv[] = { "version", m->version ? m->version : "unknown" };
        metrics_sample(w, "iotriage_build", "_info", lv, 1, 1);
        metrics_family(w, "iotriage_refreshes", MT_COUNTER,
                       "Samples iotriage has taken since it started.");
        metrics_sample(w, "iotriage_refreshes", "_total", NULL, 0, (double)m->refreshes);
        metrics_family(w, "iotriage_refresh_duration_seconds", MT_GAUGE,
                       "What the last refresh cost: sampling, rates and verdicts (not formatting this page).");
        metrics_sample(w, "iotriage_refresh_duration_seconds", "", NULL, 0, m->refresh_seconds);
        metrics_family(w, "iotriage_start_time_seconds", MT_GAUGE,
                       "When the exporter started, seconds since the epoch.");
        metrics_sample(w, "iotriage_start_time_seconds", "", NULL, 0, m->start_time);
    }
    const struct snapshot *s = r->cur;
    metrics_family(w, "iotriage_sample_timestamp_seconds", MT_GAUGE,
                   "When the sample on this page was taken, seconds since the epoch.");
    metrics_sample(w, "iotriage_sample_timestamp_seconds", "", NULL, 0, s->wall);
    metrics_family(w, "iotriage_sample_interval_seconds", MT_GAUGE,
                   "Seconds the rates and verdicts of this page are measured over.");
    metrics_sample(w, "iotriage_sample_interval_seconds", "", NULL, 0,
                   r->interval_s > 0 ? r->interval_s : (double)NAN);

    metrics_family(w, "iotriage_source_ok", MT_GAUGE,
                   "1 when the kernel interface could be read this sample, 0 when not "
                   "(figures from it are then absent).");
    const struct { const char *name; int err; } src[] = {
        { "diskstats", s->diskstats_err },
        { "processes", s->procs_err },
        { "taskstats", s->taskstats_err },
    };
    for (size_t i = 0; i < ARRAY_SIZE(src); i++) {
        const char *l[] = { "source", src[i].name };
        metrics_sample(w, "iotriage_source_ok", "", l, 1, src[i].err == 0);
    }
    metrics_family(w, "iotriage_delay_accounting_enabled", MT_GAUGE,
                   "kernel.task_delayacct: 1 on, 0 off (who suffers cannot be judged); "
                   "absent when the kernel has no such setting.");
    metrics_sample(w, "iotriage_delay_accounting_enabled", "", NULL, 0,
                   s->delayacct == DA_UNKNOWN ? (double)NAN : s->delayacct == DA_ON);
}

static void write_devices(struct metrics_writer *w, const struct result *r)
{
    metrics_family(w, "iotriage_device_scheduler", MT_INFO,
                   "The active I/O scheduler of a whole block device (absent when it has none "
                   "to choose).");
    for (size_t i = 0; i < r->ndevs; i++) {
        const struct dev_rates *d = &r->devs[i];
        if (!dev_listed(d) || !d->dev->bd.scheduler[0])
            continue;
        const char *l[] = { "device", d->dev->ds.name, "scheduler", d->dev->bd.scheduler };
        metrics_sample(w, "iotriage_device_scheduler", "_info", l, 2, 1);
    }
    metrics_family(w, "iotriage_device_scheduler_offered", MT_INFO,
                   "The I/O schedulers a whole block device offers (queue/scheduler).");
    for (size_t i = 0; i < r->ndevs; i++) {
        const struct dev_rates *d = &r->devs[i];
        if (!dev_listed(d))
            continue;
        for (unsigned k = 0; k < d->dev->bd.nsched && k < BD_NSCHED; k++) {
            const char *l[] = { "device", d->dev->ds.name, "scheduler", d->dev->bd.schedulers[k] };
            metrics_sample(w, "iotriage_device_scheduler_offered", "_info", l, 2, 1);
        }
    }

    metrics_family(w, "iotriage_device_nr_requests", MT_GAUGE,
                   "queue/nr_requests: the requests the scheduler (or the tags, under none) "
                   "can hold; beyond it, submitters wait for a tag in arrival order.");
    for (size_t i = 0; i < r->ndevs; i++) {
        const struct dev_rates *d = &r->devs[i];
        if (!dev_listed(d) || d->dev->bd.nr_requests < 0)
            continue;
        const char *l[] = { "device", d->dev->ds.name };
        metrics_sample(w, "iotriage_device_nr_requests", "", l, 1, (double)d->dev->bd.nr_requests);
    }
    metrics_family(w, "iotriage_device_hw_queues", MT_GAUGE,
                   "Hardware queues of a whole block device (entries of mq/); 0 for a "
                   "bio-based device.");
    for (size_t i = 0; i < r->ndevs; i++) {
        const struct dev_rates *d = &r->devs[i];
        if (!dev_listed(d) || d->dev->bd.hw_queues < 0)
            continue;
        const char *l[] = { "device", d->dev->ds.name };
        metrics_sample(w, "iotriage_device_hw_queues", "", l, 1, (double)d->dev->bd.hw_queues);
    }
    metrics_family(w, "iotriage_device_saturated", MT_GAUGE,
                   "1 when requests queue beyond what the device serves at once (await well "
                   "above its quiet-time level with a queue), 0 when not; absent when unknown.");
    for (size_t i = 0; i < r->ndevs; i++) {
        const struct dev_rates *d = &r->devs[i];
        if (!dev_listed(d) || !d->valid || d->saturated < 0)
            continue;
        const char *l[] = { "device", d->dev->ds.name };
        metrics_sample(w, "iotriage_device_saturated", "", l, 1, d->saturated);
    }
    metrics_family(w, "iotriage_device_quiet_await_seconds", MT_GAUGE,
                   "The device's await when about one request is in flight, learned from "
                   "quiet intervals: the baseline saturation is judged against.");
    for (size_t i = 0; i < r->ndevs; i++) {
        const struct dev_rates *d = &r->devs[i];
        if (!dev_listed(d))
            continue;
        const char *l[] = { "device", d->dev->ds.name };
        metrics_sample(w, "iotriage_device_quiet_await_seconds", "", l, 1, d->quiet_await / 1000.0);
    }
}

/* Whether verdict.c could judge code c on device d this interval: a code it could not
 * judge is absent from the page, not 0, which would say "judged, and nobody".
 * ioprio-ignored and ioprio-level-ignored need only the scheduler and the labels; the
 * others need the interval's rates; the lottery and the hidden queue the queue's depth
 * (nr_requests, aqu-sz); unsaturated the saturation verdict; the hidden queue the
 * readers' delays (delay accounting, taskstats); a dropped label the BPF lens. */
static bool code_judged(enum warn_code c, const struct dev_rates *d, bool delays)
{
    if (c == W_IOPRIO_IGNORED || c == W_IOPRIO_LEVEL_IGNORED)
        return true;
    if (!d->valid)
        return false;
    switch (c) {
    case W_IOPRIO_LOTTERY:
        return d->dev->bd.nr_requests > 0 && !isnan(d->aqu_sz);
    case W_HIDDEN_QUEUE:
        return delays && d->dev->bd.nr_requests > 0 && !isnan(d->aqu_sz);
    case W_IOPRIO_UNSATURATED:
        return d->saturated >= 0;
    case W_IO_NOT_BLOCK:             /* no device: write_not_block */
        return false;
    case W_IO_SWAP:                  /* the lens's bytes say where a process's I/O went */
    case W_IOPRIO_DROPPED:           /* the lens's levels of a stack, nothing else */
        return d->lens.valid;
    default:
        return true;
    }
}

static bool tasks_known(const struct result *r)
{
    return r->cur->procs_err == 0 && r->cur->tdevs != NULL;
}

/* Processes whose devices could not be read (another user's, without the capabilities
 * of the unit file) carry no warning: beside them, every count below is a lower bound. */
static void write_coverage(struct metrics_writer *w, const struct result *r)
{
    size_t unknown = 0;
    for (size_t ti = 0; ti < r->ntasks; ti++) {
        const struct task_devs *td = &r->cur->tdevs[ti];
        if (!td->known || td->err)
            unknown++;
    }
    metrics_family(w, "iotriage_processes", MT_GAUGE, "Processes iotriage saw this sample.");
    metrics_sample(w, "iotriage_processes", "", NULL, 0, (double)r->ntasks);
    metrics_family(w, "iotriage_processes_devices_unknown", MT_GAUGE,
                   "Processes whose devices could not be read (permission): they carry no "
                   "warning, so iotriage_warnings is a lower bound while this is above 0.");
    metrics_sample(w, "iotriage_processes_devices_unknown", "", NULL, 0, (double)unknown);
}

static void write_warnings(struct metrics_writer *w, const struct result *r,
                           const struct verdicts *v)
{
    metrics_family(w, "iotriage_warnings", MT_GAUGE,
                   "Processes a warning code applies to on a whole block device now (a "
                   "finding about the device itself counts 1); 0 when the code does not fire; "
                   "absent when it cannot be judged. Codes: docs/verdicts.md.");
    if (!tasks_known(r))
        return;
    /* A task gets at most one warning of a code per device (verdict.c judges each pair
     * once), so counting warnings counts processes. */
    unsigned *count = xcalloc(r->ndevs ? r->ndevs * W_NCODES : 1, sizeof(*count));
    bool *devfind = xcalloc(r->ndevs ? r->ndevs * W_NCODES : 1, sizeof(*devfind));
    for (size_t i = 0; i < v->n; i++) {
        const struct warning *x = &v->w[i];
        if (x->dev < 0 || (size_t)x->dev >= r->ndevs || (unsigned)x->code >= W_NCODES)
            continue;
        size_t k = (size_t)x->dev * W_NCODES + x->code;
        if (x->task < 0)
            devfind[k] = true;
        else
            count[k]++;
    }
    bool delays = r->cur->delayacct == DA_ON && r->cur->taskstats_err == 0;
    for (size_t di = 0; di < r->ndevs; di++) {
        const struct dev_rates *d = &r->devs[di];
        if (!dev_listed(d))
            continue;
        for (unsigned c = 0; c < W_NCODES; c++) {
            if (!code_judged(c, d, delays))
                continue;
            size_t k = di * W_NCODES + c;
            unsigned n = count[k] ? count[k] : devfind[k] ? 1 : 0;
            const char *l[] = { "code", warn_code_name(c), "device", d->dev->ds.name };
            metrics_sample(w, "iotriage_warnings", "", l, 2, n);
        }
    }
    free(count);
    free(devfind);
}

/* io-pressure-not-block: the processes stalled in io_uring's completion wait with no block
 * I/O of their own while the io pressure is up (verdict.h), by the evidence behind it.
 * Absent when the io pressure or the process list is unknown. */
static void write_not_block(struct metrics_writer *w, const struct result *r,
                            const struct verdicts *v)
{
    metrics_family(w, "iotriage_io_pressure_not_block", MT_GAUGE,
                   "Processes io-pressure-not-block names: stalled in io_uring's completion "
                   "wait (iowait and PSI io to the kernel) with no block I/O of their own, "
                   "while the io pressure is up; evidence measured (the BPF lens) or sampled "
                   "(thread states). Absent when the io pressure or processes are unknown.");
    if (!tasks_known(r) || !r->psi[PSI_IO].some_valid)
        return;
    unsigned n[3] = { 0 };
    for (size_t i = 0; i < v->n; i++)
        if (v->w[i].code == W_IO_NOT_BLOCK && v->w[i].evidence < 3)
            n[v->w[i].evidence]++;
    static const enum evidence evs[] = { EV_MEASURED, EV_SAMPLED };
    for (size_t k = 0; k < 2; k++) {
        const char *l[] = { "evidence", evidence_name(evs[k]) };
        metrics_sample(w, "iotriage_io_pressure_not_block", "", l, 1, n[evs[k]]);
    }
}

/* Roles per device: the processes that cause or suffer the load of a saturated device
 * (verdict.h). A role is laid at every saturated device the process does I/O to, as
 * verdict.c judges it; a device that is not saturated has none. */
static void write_roles(struct metrics_writer *w, const struct result *r,
                        const struct verdicts *v)
{
    static const enum role roles[] = { ROLE_CAUSE, ROLE_SUFFER, ROLE_BOTH };
    metrics_family(w, "iotriage_device_processes", MT_GAUGE,
                   "Processes with a role on a saturated whole block device: cause (a quarter "
                   "or more of its bytes), suffer (a fifth or more of the time waiting on "
                   "block I/O), both; absent when processes are unknown, suffer and both "
                   "also without delay accounting.");
    if (!tasks_known(r) || v->nroles != r->ntasks)
        return;
    bool *hidden = xcalloc(r->ndevs ? r->ndevs : 1, sizeof(*hidden));
    for (size_t i = 0; i < v->n; i++)
        if (v->w[i].code == W_HIDDEN_QUEUE && v->w[i].dev >= 0 && (size_t)v->w[i].dev < r->ndevs)
            hidden[v->w[i].dev] = true;
    unsigned *count = xcalloc(r->ndevs ? r->ndevs * 4 : 1, sizeof(*count));
    for (size_t ti = 0; ti < r->ntasks; ti++) {
        const struct task_devs *td = &r->cur->tdevs[ti];
        if (v->roles[ti] == ROLE_NONE || !td->known || td->err)
            continue;
        for (unsigned k = 0; k < td->n; k++) {
            size_t di = td->idx[k];
            if (di < r->ndevs && (r->devs[di].saturated == 1 || hidden[di]))
                count[di * 4 + v->roles[ti]]++;
        }
    }
    /* Who suffers is judged from delay accounting: without it, suffer and both are
     * unknown, not 0 (a cause needs only bytes). */
    bool delays = r->cur->delayacct == DA_ON && r->cur->taskstats_err == 0;
    for (size_t di = 0; di < r->ndevs; di++) {
        const struct dev_rates *d = &r->devs[di];
        if (!dev_listed(d) || !d->valid)
            continue;
        for (size_t k = 0; k < (delays ? ARRAY_SIZE(roles) : 1); k++) {
            const char *l[] = { "device", d->dev->ds.name, "role", role_name(roles[k]) };
            metrics_sample(w, "iotriage_device_processes", "", l, 2, count[di * 4 + roles[k]]);
        }
    }
    free(count);
    free(hidden);
}

/* ---- The cgroup lens: cumulative figures Prometheus takes rates of ---------------------- */

/* A cgroup's path as its label: bounded by the cgroups that hold a listed task (and their
 * ancestors), as many as the machine's services and containers, never one per process. */
static void write_cgroups(struct metrics_writer *w, const struct result *r)
{
    const struct cgroup_set *set = r->cur->cgroups;
    if (!set || !r->cgroups || set->n == 0)
        return;
    metrics_family(w, "iotriage_cgroup_io_pressure_waiting_seconds", MT_COUNTER,
                   "Time some task of the cgroup waited for I/O (io.pressure some total)");
    for (size_t k = 0; k < set->n; k++) {
        const struct cgroup_entry *e = &set->v[k];
        const char *lab[] = { "cgroup", e->path };
        if (!e->pressure.err && e->pressure.some.valid)
            metrics_sample(w, "iotriage_cgroup_io_pressure_waiting_seconds", "_total", lab, 1,
                           (double)e->pressure.some.total_us / 1e6);
    }
    metrics_family(w, "iotriage_cgroup_io_pressure_stalled_seconds", MT_COUNTER,
                   "Time every runnable task of the cgroup waited for I/O (io.pressure full total)");
    for (size_t k = 0; k < set->n; k++) {
        const struct cgroup_entry *e = &set->v[k];
        const char *lab[] = { "cgroup", e->path };
        if (!e->pressure.err && e->pressure.full.valid)
            metrics_sample(w, "iotriage_cgroup_io_pressure_stalled_seconds", "_total", lab, 1,
                           (double)e->pressure.full.total_us / 1e6);
    }
    static const char *const fam[2] = { "iotriage_cgroup_io_read_bytes", "iotriage_cgroup_io_written_bytes" };
    static const char *const help[2] = { "Bytes the cgroup read from the device (io.stat rbytes)",
                                         "Bytes the cgroup wrote to the device (io.stat wbytes)" };
    for (int rw = 0; rw < 2; rw++) {
        metrics_family(w, fam[rw], MT_COUNTER, help[rw]);
        for (size_t k = 0; k < set->n; k++) {
            const struct cgroup_entry *e = &set->v[k];
            if (e->iostat_err)
                continue;
            for (unsigned i = 0; i < e->niostat; i++) {
                const struct cg_iostat_row *row = &e->iostat_row[i];
                const char *dev = NULL;
                for (size_t d = 0; d < r->ndevs && !dev; d++)
                    if (r->devs[d].dev->ds.major == row->major && r->devs[d].dev->ds.minor == row->minor)
                        dev = r->devs[d].dev->ds.name;
                if (!dev)
                    continue;        /* a device not listed: no name to give it */
                const char *lab[] = { "cgroup", e->path, "device", dev };
                metrics_sample(w, fam[rw], "_total", lab, 2, (double)(rw ? row->wbytes : row->rbytes));
            }
        }
    }
}

/* ---- The BPF lens: latency per device and priority class, as histograms ------------------ */

#define LAT_FIRST_BUCKET 7               /* 2^7 us = 128 us: below, everything is fast */
#define LAT_LAST_BUCKET  24              /* 2^24 us = 16.8 s */

static void write_latency(struct metrics_writer *w, const struct result *r)
{
    const struct snapshot *c = r->cur;
    if (!c->lens_on || c->lens.ndp == 0)
        return;
    metrics_family(w, "iotriage_io_latency_seconds", MT_HISTOGRAM,
                   "Time from a request's submission to its completion, per priority class, "
                   "measured by the BPF lens since it was loaded");
    static const char *const cls[4] = { "none", "rt", "be", "idle" };
    double bounds[LAT_LAST_BUCKET - LAT_FIRST_BUCKET + 1];
    for (int k = LAT_FIRST_BUCKET; k <= LAT_LAST_BUCKET; k++)
        bounds[k - LAT_FIRST_BUCKET] = num_pow2(k) / 1e6;
    for (size_t d = 0; d < r->ndevs; d++) {
        const struct dev_sample *ds = r->devs[d].dev;
        if (ds->bd.partition)
            continue;
        for (unsigned k = 0; k < 4; k++) {
            /* The levels of a class together: 8 levels x buckets per device is more
             * series than an alert needs (docs/metrics.md). */
            uint64_t hist[LENS_HIST] = { 0 }, count = 0, sum_ns = 0;
            for (size_t i = 0; i < c->lens.ndp; i++) {
                const struct lens_devprio *p = &c->lens.dp[i];
                if (p->major != ds->ds.major || p->minor != ds->ds.minor || ((p->prio >> 13) & 7) != k)
                    continue;
                const struct lens_stage_sum *st = &p->st[LENS_ST_TOTAL];
                for (int b = 0; b < LENS_HIST; b++)
                    hist[b] += st->hist[b];
                count += st->count;
                sum_ns += st->sum_ns;
            }
            if (count == 0)
                continue;
            unsigned long long cum[LAT_LAST_BUCKET - LAT_FIRST_BUCKET + 1];
            unsigned long long acc = 0;
            for (int b = 0; b < LAT_FIRST_BUCKET; b++)
                acc += hist[b];
            /* bucket b holds [2^(b-1), 2^b) us: everything <= 2^k us is buckets 0..k */
            for (int b = LAT_FIRST_BUCKET; b <= LAT_LAST_BUCKET; b++) {
                acc += hist[b];
                cum[b - LAT_FIRST_BUCKET] = acc;
            }
            const char *lab[] = { "device", ds->ds.name, "class", cls[k] };
            metrics_histogram(w, "iotriage_io_latency_seconds", lab, 2, bounds, cum,
                              LAT_LAST_BUCKET - LAT_FIRST_BUCKET + 1, count, (double)sum_ns / 1e9);
        }
    }
}

int metrics_format(FILE *f, const struct result *r, const struct verdicts *v,
                   enum metrics_fmt fmt, const struct metrics_meta *meta,
                   const struct metrics_lens *lenses, size_t nlenses)
{
    struct metrics_writer w = { .f = f, .fmt = fmt };
    flockfile(f);
    write_meta(&w, r, meta);
    write_devices(&w, r);
    if (tasks_known(r))
        write_coverage(&w, r);
    write_warnings(&w, r, v);
    write_not_block(&w, r, v);
    write_roles(&w, r, v);
    write_cgroups(&w, r);
    write_latency(&w, r);
    for (size_t i = 0; i < nlenses; i++)
        if (lenses[i].write)
            lenses[i].write(&w, lenses[i].ctx);
    if (fmt == METRICS_OPENMETRICS)
        PUTS("# EOF\n", f);
    funlockfile(f);
    return ferror(f) ? -EIO : 0;
}

/* ---- Content negotiation --------------------------------------------------------------- */

/* The q of one media range's parameters ("; q=0.5; version=1.0.0"), and whether its
 * version is one we can serve (OpenMetrics 1.0.0 and 0.0.1 are the same text for what
 * this page holds). */
static double range_q(const char *params, size_t len, bool *version_ok, bool om)
{
    double q = 1.0;
    *version_ok = true;
    const char *p = params, *end = params + len;
    while (p < end) {
        while (p < end && (*p == ';' || *p == ' ' || *p == '\t'))
            p++;
        const char *e = p;
        while (e < end && *e != ';')
            e++;
        if (e - p > 2 && strncasecmp(p, "q=", 2) == 0) {
            char buf[16];
            size_t n = (size_t)(e - p - 2) < sizeof(buf) - 1 ? (size_t)(e - p - 2) : sizeof(buf) - 1;
            memcpy(buf, p + 2, n);
            buf[n] = '\0';
            char *stop;
            double x = strtod(buf, &stop);
            q = (stop != buf && x >= 0 && x <= 1) ? x : 0;
        } else if (e - p > 8 && strncasecmp(p, "version=", 8) == 0) {
            size_t n = (size_t)(e - p - 8);
            while (n && (p[8 + n - 1] == ' ' || p[8 + n - 1] == '\t'))
                n--;
            const char *ver = p + 8;
            if (om)
                *version_ok = (n == 5 && (memcmp(ver, "1.0.0", 5) == 0 || memcmp(ver, "0.0.1", 5) == 0));
            else
                *version_ok = (n == 5 && memcmp(ver, "0.0.4", 5) == 0);
        }
        p = e;
    }
    return q;
}

enum metrics_fmt metrics_negotiate(const char *accept)
{
    if (!accept)
        return METRICS_PROM_TEXT;
    double q_om = 0, q_text = 0;
    const char *p = accept;
    while (*p) {
        const char *e = strchr(p, ',');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        while (len && (*p == ' ' || *p == '\t'))
            p++, len--;
        size_t tlen = 0;
        while (tlen < len && p[tlen] != ';' && p[tlen] != ' ' && p[tlen] != '\t')
            tlen++;
        bool is_om = tlen == 28 && strncasecmp(p, "application/openmetrics-text", 28) == 0;
        bool is_text = (tlen == 10 && strncasecmp(p, "text/plain", 10) == 0) ||
                       (tlen == 6 && strncasecmp(p, "text/*", 6) == 0) ||
                       (tlen == 3 && strncmp(p, "*/*", 3) == 0);
        if (is_om || is_text) {
            bool version_ok;
            double q = range_q(p + tlen, len - tlen, &version_ok, is_om);
            if (version_ok) {
                if (is_om && q > q_om)
                    q_om = q;
                if (is_text && q > q_text)
                    q_text = q;
            }
        }
        p = e ? e + 1 : p + len;
    }
    return q_om > 0 && q_om >= q_text ? METRICS_OPENMETRICS : METRICS_PROM_TEXT;
}
