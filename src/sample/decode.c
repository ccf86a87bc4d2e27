/* SPDX-License-Identifier: GPL-2.0-or-later */
/* sample/decode.c: the decoding context (where we are, for the one-line error), typed
 * reads of one member, names back to numbers, the top level (version, clock, host, psi)
 * and one sample as a whole (sample_decode); frames moved and freed.
 *
 * Each key is read back into the field src/sample/write.c wrote it from; the comments name
 * what the writer did to a field on its way out (null for -1, a name for a number...)
 * and so what undoing it takes. Everything is checked: this is a file a user hands us.
 */
#include "decode.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sample/decode_cgroups.h"
#include "sample/decode_fs.h"
#include "sample/json.h"
#include "sample/sample.h"
#include "util.h"
#include "util/escape.h"
#include "util/fmt.h"

/* ---- decoding context: where we are, for the one-line error -------------------------- */

#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
int dfail(struct dec *d, const char *key, const char *fmt, ...)
{
    char msg[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    const char *dot = d->atlen && key ? "." : "";
    bool where = d->atlen || key;
    err_set(d->err, d->errlen, "%s:%zu: %s%s%s%s%s", d->path, d->line, d->at, dot,
            key ? key : "", where ? ": " : "", msg);
    return -EINVAL;
}

/* Untrusted text for a message, made safe for a terminal and kept short. */
const char *shown(char buf[64], const char *s, size_t len)
{
    size_t n = esc_display(buf, 60, s, len > 40 ? 40 : len, true);
    if (len > 40)
        memcpy(buf + n, "...", 4);
    return buf;
}

#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
size_t at_push(struct dec *d, const char *fmt, ...)
{
    size_t old = d->atlen;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(d->at + d->atlen, sizeof(d->at) - d->atlen, fmt, ap);
    va_end(ap);
    if (n > 0)
        d->atlen += (size_t)n < sizeof(d->at) - d->atlen ? (size_t)n : sizeof(d->at) - d->atlen - 1;
    return old;
}

void at_pop(struct dec *d, size_t old)
{
    d->atlen = old;
    d->at[old] = '\0';
}

/* A getter's failure as a sentence. */
int status_fail(struct dec *d, const char *key, const struct json_value *v,
                enum json_status st, const char *want)
{
    switch (st) {
    case JSON_MISSING:
        return dfail(d, key, "missing (expected %s)", want);
    case JSON_IS_NULL:
        return dfail(d, key, "null, expected %s", want);
    case JSON_WRONG_TYPE:
        return dfail(d, key, "expected %s, got %s", want, json_type_name(json_type(v)));
    default:
        return dfail(d, key, "expected %s", want);
    }
}

/* ---- typed reads of one member ----------------------------------------------------------- */

/* A rate or level: the writer prints NAN and infinities as null. */
int get_num(struct dec *d, const struct json_value *o, const char *key, double *out)
{
    const struct json_value *v = json_get(o, key);
    enum json_status st = json_as_double(v, out);
    if (st == JSON_IS_NULL) {
        *out = (double)NAN;
        return 0;
    }
    return st == JSON_OK ? 0 : status_fail(d, key, v, st, "a number or null");
}

static int range_fail(struct dec *d, const char *key, const struct json_value *v,
                      int64_t lo, int64_t hi)
{
    int64_t i;
    double x;
    if (json_as_int(v, INT64_MIN, INT64_MAX, &i) != JSON_OK) {
        json_as_double(v, &x);
        return dfail(d, key, "%g is not an integer", x);
    }
    if (lo == 0 && i < 0)
        return dfail(d, key, "%" PRId64 " is negative", i);
    return dfail(d, key, "%" PRId64 " is outside %" PRId64 "..%" PRId64, i, lo, hi);
}

int get_int(struct dec *d, const struct json_value *o, const char *key,
            int64_t lo, int64_t hi, int64_t *out)
{
    const struct json_value *v = json_get(o, key);
    enum json_status st = json_as_int(v, lo, hi, out);
    if (st == JSON_OUT_OF_RANGE)
        return range_fail(d, key, v, lo, hi);
    return st == JSON_OK ? 0 : status_fail(d, key, v, st, "an integer");
}

/* A count sysfs may not have given: null is -1 (blockdev.h), a negative number is damage. */
int get_known(struct dec *d, const struct json_value *o, const char *key, int64_t hi,
              long *out)
{
    const struct json_value *v = json_get(o, key);
    int64_t i;
    enum json_status st = json_as_int(v, 0, hi, &i);
    if (st == JSON_IS_NULL) {
        *out = -1;
        return 0;
    }
    if (st == JSON_OUT_OF_RANGE)
        return range_fail(d, key, v, 0, hi);
    if (st != JSON_OK)
        return status_fail(d, key, v, st, "an integer or null");
    *out = (long)i;
    return 0;
}

int get_bool(struct dec *d, const struct json_value *o, const char *key, bool *out)
{
    const struct json_value *v = json_get(o, key);
    enum json_status st = json_as_bool(v, out);
    return st == JSON_OK ? 0 : status_fail(d, key, v, st, "true or false");
}

/* Tri-state (delta.h): null is -1. */
int get_tri(struct dec *d, const struct json_value *o, const char *key, int *out)
{
    const struct json_value *v = json_get(o, key);
    bool b;
    enum json_status st = json_as_bool(v, &b);
    if (st == JSON_IS_NULL) {
        *out = -1;
        return 0;
    }
    if (st != JSON_OK)
        return status_fail(d, key, v, st, "true, false or null");
    *out = b;
    return 0;
}

/* A string, *s NULL for null when nullable. C strings end at NUL: one inside is damage. */
int get_str(struct dec *d, const struct json_value *o, const char *key, bool nullable,
            const char **s, size_t *len)
{
    const struct json_value *v = json_get(o, key);
    enum json_status st = json_as_string(v, s, len);
    if (st == JSON_IS_NULL && nullable) {
        *s = NULL;
        *len = 0;
        return 0;
    }
    if (st != JSON_OK)
        return status_fail(d, key, v, st, nullable ? "a string or null" : "a string");
    if (memchr(*s, '\0', *len))
        return dfail(d, key, "holds a NUL character");
    return 0;
}

/* Into a fixed field. A name (device, scheduler, tunable) too long for it cannot have come
 * from the struct the writer read, and cut short it could name something else: damage.
 * Display text (comm, user, a warning's text) only loses its end when cut, at a character
 * boundary, so a hand-edited file still replays. */

void copy_cut(char *dst, size_t cap, const char *s, size_t len)
{
    if (len >= cap) {
        len = cap - 1;
        while (len > 0 && ((unsigned char)s[len] & 0xc0) == 0x80)
            len--;                   /* s[len] is the first byte left out: not mid-character */
    }
    memcpy(dst, s, len);
    dst[len] = '\0';
}

int get_fixed(struct dec *d, const struct json_value *o, const char *key, bool nullable,
              enum fit fit, char *dst, size_t cap)
{
    const char *s;
    size_t len;
    int rc = get_str(d, o, key, nullable, &s, &len);
    if (rc)
        return rc;
    if (!s)
        s = "";
    if (len >= cap && fit == FIT_EXACT) {
        char buf[64];
        return dfail(d, key, "\"%s\" is longer than %zu bytes", shown(buf, s, len), cap - 1);
    }
    copy_cut(dst, cap, s, len);
    return 0;
}

/* A value that must be an array (or object) of at most max members. */
int get_list(struct dec *d, const struct json_value *o, const char *key, bool object,
             size_t max, const struct json_value **out)
{
    const struct json_value *v = json_get(o, key);
    enum json_status st = object ? json_as_object(v) : json_as_array(v);
    if (st != JSON_OK)
        return status_fail(d, key, v, st, object ? "an object" : "an array");
    if (json_len(v) > max)
        return dfail(d, key, "%zu entries, at most %zu possible", json_len(v), max);
    *out = v;
    return 0;
}

/* ---- names back to numbers ------------------------------------------------------------ */

/* source_err_text() backwards: one errno per text it prints (EACCES and EPERM both print
 * "permission denied", ENOENT and ESRCH "exited": either reads back the same way), else
 * the strerror() text it fell back to. -EIO for a text we cannot place. */
int err_from_text(const char *s)
{
    if (strcmp(s, "permission denied") == 0)
        return -EACCES;
    if (strcmp(s, "exited") == 0)
        return -ESRCH;
    if (strcmp(s, "malformed") == 0)
        return -EINVAL;
    for (int e = 1; e < 256; e++)    /* Linux errnos end near 133 */
        if (strcmp(s, strerror(e)) == 0)
            return -e;
    return -EIO;
}

/* The writer's policy_name() backwards; "unknown" was a number it had no name for. */
bool policy_lookup(const char *s, int *out)
{
    static const struct { const char *name; int policy; } names[] = {
        { "other", SCHED_OTHER }, { "fifo", SCHED_FIFO }, { "rr", SCHED_RR },
        { "batch", SCHED_BATCH }, { "idle", SCHED_IDLE }, { "deadline", 6 },
        { "unknown", -1 },
    };
    for (size_t i = 0; i < ARRAY_SIZE(names); i++)
        if (strcmp(s, names[i].name) == 0)
            return *out = names[i].policy, true;
    return false;
}

/* The other tables are looked up through the modules that own them, never copied. */
bool code_lookup(const char *s, int *out)
{
    for (int c = 0; c < W_NCODES; c++)
        if (strcmp(s, warn_code_name((enum warn_code)c)) == 0)
            return *out = c, true;
    return false;
}

bool severity_lookup(const char *s, int *out)
{
    for (int v = SEV_INFO; v <= SEV_CRIT; v++)
        if (strcmp(s, severity_name((enum severity)v)) == 0)
            return *out = v, true;
    return false;
}

bool role_lookup(const char *s, int *out)
{
    for (int r = ROLE_CAUSE; r <= ROLE_BOTH; r++)
        if (strcmp(s, role_name((enum role)r)) == 0)
            return *out = r, true;
    return false;
}

static bool class_lookup_from(const char *s, int lo, int *out)
{
    for (int c = lo; c <= IOC_IDLE; c++)
        if (strcmp(s, ioprio_class_name((enum ioprio_class)c)) == 0)
            return *out = c, true;
    return false;
}

bool class_lookup(const char *s, int *out)
{
    return class_lookup_from(s, IOC_NONE, out);
}

/* The block layer never applies class none (ioprio.h). */
bool eff_class_lookup(const char *s, int *out)
{
    return class_lookup_from(s, IOC_RT, out);
}

bool source_lookup(const char *s, int *out)
{
    for (int v = IOS_EXPLICIT; v <= IOS_CGROUP; v++)
        if (strcmp(s, ioprio_source_name((enum ioprio_source)v)) == 0)
            return *out = v, true;
    return false;
}

/* A name member looked up in a table. Returns 0 (found), 1 (null, when nullable) or
 * -EINVAL. */
int get_name(struct dec *d, const struct json_value *o, const char *key, bool nullable,
             bool (*lookup)(const char *, int *), const char *what, int *out)
{
    const char *s;
    size_t len;
    int rc = get_str(d, o, key, nullable, &s, &len);
    if (rc)
        return rc;
    if (!s)
        return 1;
    if (!lookup(s, out)) {
        char buf[64];
        return dfail(d, key, "\"%s\" is no %s iotriage knows", shown(buf, s, len), what);
    }
    return 0;
}

bool is_null(const struct json_value *o, const char *key)
{
    const struct json_value *v = json_get(o, key);
    return v && json_type(v) == JSON_NULL;
}

/* ---- top level: version, clock, host --------------------------------------------------- */

static int decode_version(struct dec *d, const struct json_value *root, struct replay_frame *f)
{
    if (json_as_object(root) != JSON_OK)
        return dfail(d, NULL, "a JSON %s, not an iotriage sample (an object)",
                     json_type_name(json_type(root)));
    const struct json_value *v = json_get(root, "version");
    int64_t ver;
    if (!v)
        return dfail(d, NULL, "no \"version\": not an iotriage sample");
    enum json_status st = json_as_int(v, INT64_MIN, INT64_MAX, &ver);
    if (st != JSON_OK)
        return status_fail(d, "version", v, st, "an integer");
    if (ver > IOTRIAGE_JSON_VERSION) {
        err_set(d->err, d->errlen, "%s:%zu: sample from the future: format version %" PRId64
                ", this iotriage reads up to version %d (replay it with a newer iotriage)",
                d->path, d->line, ver, IOTRIAGE_JSON_VERSION);
        return -EPROTO;
    }
    if (ver < 1)
        return dfail(d, "version", "%" PRId64 " is no format version (they start at 1)", ver);
    f->version = (int)ver;
    return 0;
}

static int decode_head(struct dec *d, const struct json_value *root, struct replay_frame *f)
{
    struct snapshot *s = &f->snap;
    int rc, da;
    const char *host;
    size_t hostlen;
    if ((rc = get_num(d, root, "ts", &s->wall)) ||
        (rc = get_num(d, root, "interval_s", &f->res.interval_s)) ||
        (rc = get_str(d, root, "host", true, &host, &hostlen)) ||
        (rc = get_bool(d, root, "threads", &s->threads)) ||
        (rc = get_tri(d, root, "delayacct", &da)))
        return rc;
    /* the writer prints "no interval" (0, the first sample) as null */
    if (isnan(f->res.interval_s))
        f->res.interval_s = 0;
    f->host = host ? xstrndup(host, hostlen) : NULL;
    s->mono = s->wall;               /* not recorded; wall time orders samples as well */
    s->clk_tck = sysconf(_SC_CLK_TCK);   /* not recorded: this machine's (nearly always 100) */
    s->delayacct = da < 0 ? DA_UNKNOWN : da ? DA_ON : DA_OFF;
    s->delayacct_since_ticks = -1;   /* not recorded: each task's delay_valid says it all */
    return decode_lens_head(d, root, s);
}

/* ---- psi ---------------------------------------------------------------------------------- */

static int decode_psi_line(struct dec *d, const struct json_value *res, const char *key,
                           struct psi_line *l, bool *valid, double *pct)
{
    const struct json_value *v = json_get(res, key);
    *pct = (double)NAN;
    if (v && json_type(v) == JSON_NULL)
        return 0;                    /* the kernel gave no such line (cpu "full", old kernels) */
    enum json_status st = json_as_object(v);
    if (st != JSON_OK)
        return status_fail(d, key, v, st, "an object or null");
    size_t old = at_push(d, ".%s", key);
    int64_t total;
    int rc;
    if (!(rc = get_num(d, v, "avg10", &l->avg10)) && !(rc = get_num(d, v, "avg60", &l->avg60)) &&
        !(rc = get_num(d, v, "avg300", &l->avg300)) && !(rc = get_num(d, v, "pct", pct)))
        rc = get_int(d, v, "total_us", 0, INT64_MAX, &total);
    at_pop(d, old);
    if (rc)
        return rc;
    l->valid = true;
    l->total_us = (uint64_t)total;
    *valid = !isnan(*pct);           /* null on the first sample: no change of total yet */
    return 0;
}

static int decode_psi(struct dec *d, const struct json_value *root, struct replay_frame *f)
{
    const struct json_value *psi = json_get(root, "psi");
    enum json_status st = json_as_object(psi);
    if (st != JSON_OK)
        return status_fail(d, "psi", psi, st, "an object");
    for (int k = 0; k < PSI_NRES; k++) {
        const char *name = psi_resource_name[k];
        const struct json_value *v = json_get(psi, name);
        struct psi_sample *s = &f->snap.psi[k];
        struct psi_rates *pr = &f->res.psi[k];
        pr->some_pct = pr->full_pct = (double)NAN;
        if (v && json_type(v) == JSON_NULL) {
            s->err = -ENOENT;        /* the usual reason; its note, if any, says which */
            continue;
        }
        size_t old = at_push(d, "psi");
        int rc;
        if ((st = json_as_object(v)) != JSON_OK) {
            rc = status_fail(d, name, v, st, "an object or null");
        } else {
            at_push(d, ".%s", name);
            rc = decode_psi_line(d, v, "some", &s->some, &pr->some_valid, &pr->some_pct);
            if (!rc)
                rc = decode_psi_line(d, v, "full", &s->full, &pr->full_valid, &pr->full_pct);
        }
        at_pop(d, old);
        if (rc)
            return rc;
    }
    return 0;
}

/* ---- one sample ------------------------------------------------------------------------- */

static int decode_sample(struct dec *d, const struct json_value *root, struct replay_frame *f)
{
    struct name_ix dix = { .order = NULL };
    struct ptasks pt = { .v = NULL };
    const struct json_value *warnings;
    int rc;
    if ((rc = decode_version(d, root, f)) || (rc = decode_head(d, root, f)) ||
        (rc = decode_psi(d, root, f)) || (rc = decode_devices(d, root, f)) ||
        (rc = build_dev_index(d, &dix, f->snap.devs, f->snap.ndevs)) ||
        (rc = get_list(d, root, "warnings", false, SIZE_MAX, &warnings)) ||
        (rc = decode_processes(d, root, f->snap.threads, &dix, &pt)) ||
        (rc = add_stubs(d, warnings, f->snap.threads, &pt, &f->nunlisted)))
        goto out;
    layout_tasks(f, &pt);
    /* filesystems (issue #20): sample/decode_fs.h, before the warnings that name them */
    char fserr[256];
    if (replay_fs_decode(root, &f->snap, &f->res, fserr, sizeof(fserr))) {
        rc = dfail(d, NULL, "%s", fserr);
        goto out;
    }
    if ((rc = decode_warnings(d, warnings, &dix, f)) || (rc = decode_cgroups(d, root, f)))
        goto out;
    rc = decode_notes(d, root, &f->snap);
out:
    ptasks_free(&pt);
    free(dix.order);
    return rc;
}

/* ---- the entry point: one parsed line into a frame ---- */

int sample_decode(const char *path, size_t line, const struct json_value *root,
                  struct replay_frame *f, char *err, size_t errlen)
{
    struct dec d = { .path = path, .line = line, .err = err, .errlen = errlen };
    return decode_sample(&d, root, f);
}

void replay_frame_move(struct replay_frame *dst, struct replay_frame *src)
{
    *dst = *src;
    dst->res.cur = &dst->snap;       /* the one pointer into the frame itself */
    memset(src, 0, sizeof(*src));
}

void replay_frame_free(struct replay_frame *f)
{
    if (!f)
        return;
    snapshot_free(&f->snap);
    result_free(&f->res);
    verdicts_free(&f->ver);
    free(f->host);
    free(f->unlisted);
    memset(f, 0, sizeof(*f));
}
