/* SPDX-License-Identifier: GPL-2.0-or-later */
/* export_trials.c: trials.jsonl read as it grows, written as iotriage_trial_* families. */
#include "export_trials.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "act/trial.h"
#include "sample/json.h"
#include "store/store.h"
#include "util.h"
#include "util/num.h"

#define NAME_MAX_LEN 32              /* device and scheduler names, with the NUL */

enum { PH_BEFORE, PH_AFTER, PH_N };
static const char *const phase_name[PH_N] = { "before", "after" };

/* One phase of the last trial: the device's figures, and the lens's per priority slot
 * (NAN: unknown, absent from the page). */
struct phase {
    char   sched[NAME_MAX_LEN];
    double throughput, iops, await_s;
    double prio_iops[TRIAL_SLOTS], p50_s[TRIAL_SLOTS], p99_s[TRIAL_SLOTS];
};

struct last {
    char   sched[NAME_MAX_LEN];      /* the scheduler tried */
    char   decision[8];              /* "keep" "revert" */
    char   source[8];                /* "lens" "await" */
    bool   restored;
    double end_time;                 /* epoch seconds; NAN: a report without it */
    struct phase ph[PH_N];
};

struct kind { char sched[NAME_MAX_LEN]; char decision[8]; unsigned long long n; };

struct dev {
    char   name[NAME_MAX_LEN];
    struct kind kinds[TRIALS_KINDS_MAX];
    size_t nkinds;
    struct last last;
};

struct trials {
    char  *path;                     /* NULL: none */
    dev_t  st_dev;
    ino_t  st_ino;
    off_t  offset;                   /* read up to here */
    bool   skipping;                 /* inside a line longer than TRIALS_LINE_MAX */
    int    last_errno;               /* the failure said last (said once) */
    char  *buf;                      /* a line begun and not yet ended */
    size_t buflen;
    struct dev devs[TRIALS_DEVICES_MAX];
    size_t ndevs;
    unsigned long long taken, skipped;
};

struct trials *trials_new(const char *path)
{
    struct trials *t = xcalloc(1, sizeof(*t));
    if (path && path[0])
        t->path = xstrdup(path);
    return t;
}

void trials_free(struct trials *t)
{
    if (!t)
        return;
    free(t->path);
    free(t->buf);
    free(t);
}

static void reset(struct trials *t)
{
    t->offset = 0;
    t->skipping = false;
    t->buflen = 0;
    t->ndevs = 0;
    t->taken = t->skipped = 0;
}

unsigned long long trials_taken(const struct trials *t) { return t->taken; }
unsigned long long trials_skipped(const struct trials *t) { return t->skipped; }

/* ---- One report --------------------------------------------------------------------------- */

/* A name for a label: 1..31 bytes of [A-Za-z0-9._-] (what sysfs shows for disks and
 * schedulers); anything else is no report of ours. */
static bool take_name(const struct json_value *v, char *out, size_t n)
{
    const char *s;
    size_t len;
    if (json_as_string(v, &s, &len) != JSON_OK || len == 0 || len >= n)
        return false;
    for (size_t i = 0; i < len; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '.' || c == '_' || c == '-'))
            return false;
    }
    memcpy(out, s, len);
    out[len] = '\0';
    return true;
}

/* A figure: a finite number >= 0, divided by div (1000: ms to s, then to whole
 * nanoseconds: the report's ms have 3 decimals, and an integer over 1e9 is the double
 * nearest the decimal, so 1908.408 ms reads 1.908408 s, not 1.9084079999999999); null is
 * unknown (NAN); anything else makes the report no report. */
static bool take_num(const struct json_value *v, double div, double *out)
{
    double x;
    enum json_status st = json_as_double(v, &x);
    if (st == JSON_IS_NULL || st == JSON_MISSING) {
        *out = (double)NAN;
        return true;
    }
    if (st != JSON_OK || !isfinite(x) || x < 0)
        return false;
    *out = div > 1 && x / div < 9e9 ? (double)num_llround(x / div * 1e9) / 1e9 : x / div;
    return true;
}

static int slot_by_name(const char *s, size_t len)
{
    for (int sl = 0; sl < TRIAL_SLOTS; sl++) {
        const char *n = trial_slot_name(sl);
        if (strlen(n) == len && memcmp(n, s, len) == 0)
            return sl;
    }
    return -1;
}

static bool take_phase(const struct json_value *o, struct phase *ph)
{
    if (json_as_object(o) != JSON_OK || !take_name(json_get(o, "scheduler"), ph->sched, sizeof(ph->sched)))
        return false;
    if (!take_num(json_get(o, "throughput_bps"), 1, &ph->throughput) ||
        !take_num(json_get(o, "iops"), 1, &ph->iops) ||
        !take_num(json_get(o, "await_ms"), 1000, &ph->await_s))
        return false;
    for (int sl = 0; sl < TRIAL_SLOTS; sl++)
        ph->prio_iops[sl] = ph->p50_s[sl] = ph->p99_s[sl] = (double)NAN;
    const struct json_value *lp = json_get(o, "latency_by_prio");
    if (!lp || json_type(lp) == JSON_NULL)
        return true;                 /* no lens: no figure per priority */
    if (json_as_object(lp) != JSON_OK)
        return false;
    for (size_t i = 0; i < json_len(lp); i++) {
        const struct json_value *m = json_at(lp, i);
        size_t klen;
        const char *k = json_key(m, &klen);
        int sl = k ? slot_by_name(k, klen) : -1;
        if (sl < 0 || json_as_object(m) != JSON_OK)
            return false;
        if (!take_num(json_get(m, "iops"), 1, &ph->prio_iops[sl]) ||
            !take_num(json_get(m, "p50_ms"), 1000, &ph->p50_s[sl]) ||
            !take_num(json_get(m, "p99_ms"), 1000, &ph->p99_s[sl]))
            return false;
    }
    return true;
}

/* A report's device and what is kept of it; false: no report (nothing is changed). */
static bool take_report(const struct json_value *r, char *dev, struct last *l)
{
    int64_t version;
    const char *s;
    size_t len;
    if (json_as_object(r) != JSON_OK || json_as_int(json_get(r, "version"), 1, 1, &version) != JSON_OK ||
        !take_name(json_get(r, "device"), dev, NAME_MAX_LEN) ||
        !take_name(json_get(r, "scheduler"), l->sched, sizeof(l->sched)) ||
        json_as_bool(json_get(r, "restored"), &l->restored) != JSON_OK)
        return false;
    if (json_as_string(json_get(r, "decision"), &s, &len) != JSON_OK ||
        !((len == 4 && memcmp(s, "keep", 4) == 0) || (len == 6 && memcmp(s, "revert", 6) == 0)))
        return false;
    memcpy(l->decision, s, len + 1);
    if (json_as_string(json_get(r, "source"), &s, &len) != JSON_OK ||
        !((len == 4 && memcmp(s, "lens", 4) == 0) || (len == 5 && memcmp(s, "await", 5) == 0)))
        return false;
    memcpy(l->source, s, len + 1);
    if (!take_num(json_get(r, "end_time"), 1, &l->end_time))
        return false;
    return take_phase(json_get(r, "before"), &l->ph[PH_BEFORE]) &&
           take_phase(json_get(r, "after"), &l->ph[PH_AFTER]);
}

static void take_line(struct trials *t, const char *line, size_t len)
{
    struct json_doc *doc = NULL;
    struct json_opts jo = { .max_len = TRIALS_LINE_MAX, .max_depth = 8 };
    if (json_parse(&doc, line, len, &jo, NULL) < 0) {
        t->skipped++;
        return;
    }
    char name[NAME_MAX_LEN];
    struct last l;
    memset(&l, 0, sizeof(l));
    bool ok = take_report(json_root(doc), name, &l);
    json_free(doc);
    if (!ok) {
        t->skipped++;
        return;
    }
    struct dev *d = NULL;
    for (size_t i = 0; i < t->ndevs && !d; i++)
        if (strcmp(t->devs[i].name, name) == 0)
            d = &t->devs[i];
    if (!d) {
        if (t->ndevs == TRIALS_DEVICES_MAX) {
            t->skipped++;
            return;
        }
        d = &t->devs[t->ndevs++];
        memset(d, 0, sizeof(*d));
        str_copy(d->name, name, sizeof(d->name));
    }
    struct kind *k = NULL;
    for (size_t i = 0; i < d->nkinds && !k; i++)
        if (strcmp(d->kinds[i].sched, l.sched) == 0 && strcmp(d->kinds[i].decision, l.decision) == 0)
            k = &d->kinds[i];
    if (!k) {
        if (d->nkinds == TRIALS_KINDS_MAX) {
            t->skipped++;
            return;
        }
        k = &d->kinds[d->nkinds++];
        str_copy(k->sched, l.sched, sizeof(k->sched));
        str_copy(k->decision, l.decision, sizeof(k->decision));
        k->n = 0;
    }
    k->n++;
    d->last = l;
    t->taken++;
}

/* ---- Lines in, from a buffer or the file ------------------------------------------------- */

size_t trials_feed(struct trials *t, const char *buf, size_t len)
{
    size_t used = 0;
    for (;;) {
        const char *nl = memchr(buf + used, '\n', len - used);
        size_t part = nl ? (size_t)(nl - (buf + used)) : len - used;
        if (t->skipping || t->buflen + part > TRIALS_LINE_MAX) {
            if (!t->skipping)
                t->skipped++;
            t->skipping = nl == NULL;
            t->buflen = 0;
        } else if (nl && t->buflen == 0) {
            take_line(t, buf + used, part);
        } else {
            t->buf = xrealloc(t->buf, t->buflen + part + 1);
            memcpy(t->buf + t->buflen, buf + used, part);
            t->buflen += part;
            if (nl) {
                take_line(t, t->buf, t->buflen);
                t->buflen = 0;
            }
        }
        if (!nl)
            return len;
        used += part + 1;
    }
}

static int say(struct trials *t, int e, char *err, size_t errlen, const char *what)
{
    if (e == t->last_errno)
        return 0;
    t->last_errno = e;
    snprintf(err, errlen, "%s %s: %s (the trial metrics keep what was read before)", what, t->path, strerror(e));
    return -e;
}

int trials_refresh(struct trials *t, char *err, size_t errlen)
{
    if (!t->path)
        return 0;
    int fd = open(t->path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    if (fd < 0) {
        if (errno == ENOENT) {       /* no trial yet, or the file was removed */
            reset(t);
            t->last_errno = 0;
            return 0;
        }
        return say(t, errno, err, errlen, "opening");
    }
    struct stat st;
    int e = fstat(fd, &st) < 0 ? errno : !S_ISREG(st.st_mode) ? EINVAL : 0;
    if (e) {
        close(fd);
        return say(t, e, err, errlen, "reading");
    }
    if (st.st_dev != t->st_dev || st.st_ino != t->st_ino || st.st_size < t->offset) {
        reset(t);
        t->st_dev = st.st_dev;
        t->st_ino = st.st_ino;
    }
    int rc = 0;
    size_t want = st.st_size - t->offset > (off_t)TRIALS_READ_MAX ? TRIALS_READ_MAX
                                                                    : (size_t)(st.st_size - t->offset);
    if (want > 0) {
        char *chunk = xmalloc(want);
        ssize_t n = pread(fd, chunk, want, t->offset);
        if (n < 0) {
            rc = say(t, errno, err, errlen, "reading");
        } else {
            trials_feed(t, chunk, (size_t)n);
            t->offset += n;
            t->last_errno = 0;
        }
        free(chunk);
    }
    close(fd);
    return rc;
}

const char *trials_default_path(char *buf, size_t n)
{
    const char *dir = store_record_dir();
    if (!dir || snprintf(buf, n, "%s/%s", dir, TRIAL_RECORD_FILE) >= (int)n)
        return NULL;
    return buf;
}

/* ---- The families -------------------------------------------------------------------------- */

typedef double (*phase_fig)(const struct phase *ph, int slot);
static double fig_tput(const struct phase *ph, int slot) { (void)slot; return ph->throughput; }
static double fig_iops(const struct phase *ph, int slot) { (void)slot; return ph->iops; }
static double fig_await(const struct phase *ph, int slot) { (void)slot; return ph->await_s; }
static double fig_prio_iops(const struct phase *ph, int slot) { return ph->prio_iops[slot]; }
static double fig_p50(const struct phase *ph, int slot) { return ph->p50_s[slot]; }
static double fig_p99(const struct phase *ph, int slot) { return ph->p99_s[slot]; }

/* One gauge per device and phase (slot < 0), or per device, phase and priority slot. */
static void phase_family(struct metrics_writer *w, const struct trials *t, const char *name,
                         const char *help, phase_fig fig, bool by_prio)
{
    metrics_family(w, name, MT_GAUGE, help);
    for (size_t i = 0; i < t->ndevs; i++)
        for (int p = 0; p < PH_N; p++) {
            const struct phase *ph = &t->devs[i].last.ph[p];
            const char *l[] = { "device", t->devs[i].name, "phase", phase_name[p], "prio", NULL };
            if (!by_prio) {
                metrics_sample(w, name, "", l, 2, fig(ph, 0));
                continue;
            }
            for (int sl = 0; sl < TRIAL_SLOTS; sl++) {
                l[5] = trial_slot_name(sl);
                metrics_sample(w, name, "", l, 3, fig(ph, sl));
            }
        }
}

void trials_write(struct metrics_writer *w, void *ctx)
{
    const struct trials *t = ctx;
    if (t->ndevs == 0)
        return;                      /* no trial recorded: no family */
    metrics_family(w, "iotriage_trials", MT_COUNTER,
                   "Scheduler trials recorded in trials.jsonl, by device, scheduler tried and decision.");
    for (size_t i = 0; i < t->ndevs; i++)
        for (size_t k = 0; k < t->devs[i].nkinds; k++) {
            const struct kind *kd = &t->devs[i].kinds[k];
            const char *l[] = { "device", t->devs[i].name, "scheduler", kd->sched, "decision", kd->decision };
            metrics_sample(w, "iotriage_trials", "_total", l, 3, (double)kd->n);
        }
    metrics_family(w, "iotriage_trial_last", MT_INFO,
                   "The device's last scheduler trial: scheduler before and tried, decision, source, "
                   "whether the device was put back as it was.");
    for (size_t i = 0; i < t->ndevs; i++) {
        const struct last *ls = &t->devs[i].last;
        const char *l[] = { "device", t->devs[i].name, "scheduler_before", ls->ph[PH_BEFORE].sched,
                            "scheduler", ls->sched, "decision", ls->decision, "source", ls->source,
                            "restored", ls->restored ? "true" : "false" };
        metrics_sample(w, "iotriage_trial_last", "_info", l, 6, 1);
    }
    metrics_family(w, "iotriage_trial_last_end_time_seconds", MT_GAUGE,
                   "When the device's last scheduler trial ended, seconds since the epoch.");
    for (size_t i = 0; i < t->ndevs; i++) {
        const char *l[] = { "device", t->devs[i].name };
        metrics_sample(w, "iotriage_trial_last_end_time_seconds", "", l, 1, t->devs[i].last.end_time);
    }
    phase_family(w, t, "iotriage_trial_last_throughput_bytes_per_second",
                 "The device's throughput in each phase of its last scheduler trial.", fig_tput, false);
    phase_family(w, t, "iotriage_trial_last_iops",
                 "The device's requests a second in each phase of its last scheduler trial.", fig_iops, false);
    phase_family(w, t, "iotriage_trial_last_await_seconds",
                 "The device's await in each phase of its last scheduler trial (no priority split).",
                 fig_await, false);
    phase_family(w, t, "iotriage_trial_last_prio_iops",
                 "Requests a second of each I/O priority in each phase of the device's last scheduler "
                 "trial (the BPF lens).", fig_prio_iops, true);
    phase_family(w, t, "iotriage_trial_last_p50_seconds",
                 "Median latency (submission to completion) of each I/O priority in each phase of the "
                 "device's last scheduler trial (the BPF lens).", fig_p50, true);
    phase_family(w, t, "iotriage_trial_last_p99_seconds",
                 "99th percentile latency (submission to completion) of each I/O priority in each phase "
                 "of the device's last scheduler trial (the BPF lens).", fig_p99, true);
}
