/* SPDX-License-Identifier: GPL-2.0-or-later */
/* store/replay.c: recorded JSON samples back into snapshot + result + verdicts.
 *
 * Each key is read back into the field src/sample/write.c wrote it from; the comments name
 * what the writer did to a field on its way out (null for -1, a name for a number...)
 * and so what undoing it takes. Everything is checked: this is a file a user hands us.
 */
#include "store/replay.h"
#include "store/replay_fs.h"

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

#include "sample/json.h"
#include "store/store.h"
#include "util/escape.h"
#include "store/replay_cgroups.h"
#include "util.h"
#include "sample/sample.h"
#include "util/fmt.h"

/* Devices are indexed by task_devs.idx, a uint16_t. */
#define REPLAY_DEVS_MAX ((size_t)UINT16_MAX + 1)

struct line_ref {
    size_t off, len;
    size_t lineno;                   /* 1-based */
};

struct replay {
    char *path;
    char *buf;                       /* the whole file */
    size_t len;
    struct line_ref *lines;          /* non-blank lines: the samples */
    size_t n;
    bool last_cut;                   /* the file does not end with a newline */
    size_t start;                    /* the sample to show first (replay_open_window's at) */
    bool at_missed;                  /* at was given and no sample is at or after it */
    char **damages;                  /* what the recorder's reader met, in order */
    size_t ndamages;
};

/* Damages named one by one; past that, one line counts the rest (a hostile file can
 * hold a false frame magic every few bytes). */
#define REPLAY_DAMAGES_MAX 100

/* ---- open: read and index -------------------------------------------------------------- */

/* Read fd to the end, refusing more than REPLAY_FILE_MAX bytes. Not from st_size alone:
 * a pipe or /dev/stdin has none, and a file may grow while we read. */
static int read_all(int fd, char **out, size_t *len)
{
    struct stat st;
    size_t cap = 1 << 16;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
        if ((unsigned long long)st.st_size > REPLAY_FILE_MAX)
            return -EFBIG;
        cap = (size_t)st.st_size + 1;
    }
    char *buf = xmalloc(cap);
    size_t n = 0;
    for (;;) {
        if (n == cap) {
            if (cap > REPLAY_FILE_MAX) {
                free(buf);
                return -EFBIG;
            }
            cap = cap * 2 > REPLAY_FILE_MAX + 1 ? REPLAY_FILE_MAX + 1 : cap * 2;
            buf = xrealloc(buf, cap);
        }
        ssize_t r = read(fd, buf + n, cap - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            int e = -errno;
            free(buf);
            return e;
        }
        if (r == 0)
            break;
        n += (size_t)r;
    }
    if (n > REPLAY_FILE_MAX) {
        free(buf);
        return -EFBIG;
    }
    *out = buf;
    *len = n;
    return 0;
}

static bool blank(const char *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (p[i] != ' ' && p[i] != '\t' && p[i] != '\r')
            return false;
    return true;
}

static void index_lines(struct replay *r)
{
    size_t cap = 0, lineno = 0;
    for (size_t off = 0; off < r->len;) {
        const char *nl = memchr(r->buf + off, '\n', r->len - off);
        size_t len = nl ? (size_t)(nl - (r->buf + off)) : r->len - off;
        lineno++;
        if (!blank(r->buf + off, len)) {
            if (r->n == cap) {
                cap = cap ? 2 * cap : 256;
                r->lines = xreallocarray(r->lines, cap, sizeof(*r->lines));
            }
            r->lines[r->n++] = (struct line_ref){ off, len, lineno };
        }
        off += len + (nl != NULL);
    }
    r->last_cut = r->len > 0 && r->buf[r->len - 1] != '\n';
}

int replay_open(struct replay **out, const char *path, char *err, size_t errlen)
{
    *out = NULL;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) {
        int e = -errno;
        err_set(err, errlen, "%s: %s", path, strerror(-e));
        return e;
    }
    struct replay *r = xcalloc(1, sizeof(*r));
    int rc = read_all(fd, &r->buf, &r->len);
    close(fd);
    if (rc == -EFBIG)
        err_set(err, errlen, "%s: over the %llu MiB a replay reads", path, REPLAY_FILE_MAX >> 20);
    else if (rc < 0)
        err_set(err, errlen, "%s: %s", path, strerror(-rc));
    if (rc == 0) {
        index_lines(r);
        if (r->n == 0) {
            err_set(err, errlen, "%s: no samples (%s)", path,
                    r->len ? "only blank lines" : "the file is empty");
            rc = -EINVAL;
        }
    }
    if (rc < 0) {
        replay_close(r);
        return rc;
    }
    r->path = xstrdup(path);
    *out = r;
    return 0;
}

static void add_damage(struct replay *r, const char *what)
{
    r->damages = xreallocarray(r->damages, r->ndamages + 1, sizeof(*r->damages));
    r->damages[r->ndamages++] = xstrdup(what);
}

/* A recorder's directory or file (store/store.h), or a plain file read through the same
 * reader: the samples of [from, to] one after the other in memory, as a plain recording
 * would have them. */
int replay_open_window(struct replay **out, const char *path, double from, double to, double at,
                       char *err, size_t errlen)
{
    *out = NULL;
    struct store_reader *sr;
    int rc = store_open_reader(&sr, path, err, errlen);
    if (rc < 0)
        return rc;
    struct replay *r = xcalloc(1, sizeof(*r));
    size_t cap = 0;
    bool at_found = false;
    size_t nlines = 0, more = 0;
    /* Nothing at or after from: the loop meets only the damages the seek met, then the end. */
    if (isfinite(from))
        (void)store_seek(sr, from);
    for (;;) {
        struct store_line l;
        char why[512] = "";
        int n = store_next(sr, &l, why, sizeof(why));
        if (n == 0)
            break;
        if (n < 0) {
            if (r->ndamages < REPLAY_DAMAGES_MAX)
                add_damage(r, why[0] ? why : strerror(-n));
            else
                more++;
            continue;                /* read up to the damage, then on */
        }
        if (isfinite(to) && !isnan(l.ts) && l.ts > to)
            break;
        if (r->len + l.len + 1 > REPLAY_FILE_MAX) {
            err_set(err, errlen, "%s: over the %llu MiB a replay reads: give --from and --to", path,
                    REPLAY_FILE_MAX >> 20);
            store_close_reader(sr);
            replay_close(r);
            return -EFBIG;
        }
        if (r->len + l.len + 1 > cap) {
            cap = (r->len + l.len + 1) * 2;
            r->buf = xrealloc(r->buf, cap);
        }
        memcpy(r->buf + r->len, l.text, l.len);
        r->len += l.len;
        r->buf[r->len++] = '\n';
        if (!at_found && isfinite(at) && !isnan(l.ts) && l.ts >= at) {
            r->start = nlines;
            at_found = true;
        }
        nlines++;
    }
    if (more) {
        char line[96];
        snprintf(line, sizeof(line), "%zu more damages (not listed)", more);
        add_damage(r, line);
    }
    store_close_reader(sr);
    index_lines(r);
    if (isfinite(at) && !at_found && r->n) {
        r->start = r->n - 1;         /* after the last sample: show the last */
        r->at_missed = true;
    }
    if (r->n == 0) {
        err_set(err, errlen, "%s: no samples%s", path, isfinite(from) || isfinite(to) ? " in that window" : "");
        if (r->ndamages && errlen > 0)
            err_set(err, errlen, "%s: no samples%s; %s%s", path,
                    isfinite(from) || isfinite(to) ? " in that window" : "", r->damages[0],
                    r->ndamages > 1 ? " (and more damages)" : "");
        replay_close(r);
        return -ENOENT;
    }
    r->path = xstrdup(path);
    *out = r;
    return 0;
}

size_t replay_start(const struct replay *r)
{
    return r ? r->start : 0;
}

bool replay_at_missed(const struct replay *r)
{
    return r && r->at_missed;
}

size_t replay_damages(const struct replay *r)
{
    return r ? r->ndamages : 0;
}

const char *replay_damage(const struct replay *r, size_t i)
{
    return r && i < r->ndamages ? r->damages[i] : NULL;
}

size_t replay_count(const struct replay *r)
{
    return r ? r->n : 0;
}

size_t replay_line(const struct replay *r, size_t i)
{
    return r && i < r->n ? r->lines[i].lineno : 0;
}

void replay_close(struct replay *r)
{
    if (!r)
        return;
    free(r->path);
    free(r->buf);
    free(r->lines);
    for (size_t i = 0; i < r->ndamages; i++)
        free(r->damages[i]);
    free(r->damages);
    free(r);
}

/* ---- decoding context: where we are, for the one-line error -------------------------- */

struct dec {
    const struct replay *r;
    size_t line;
    char *err;
    size_t errlen;
    char at[200];                    /* the value being read: "processes[3].ioprio" */
    size_t atlen;
};

#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
static int dfail(struct dec *d, const char *key, const char *fmt, ...)
{
    char msg[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    const char *dot = d->atlen && key ? "." : "";
    bool where = d->atlen || key;
    err_set(d->err, d->errlen, "%s:%zu: %s%s%s%s%s", d->r->path, d->line, d->at, dot,
            key ? key : "", where ? ": " : "", msg);
    return -EINVAL;
}

/* Untrusted text for a message, made safe for a terminal and kept short. */
static const char *shown(char buf[64], const char *s, size_t len)
{
    size_t n = esc_display(buf, 60, s, len > 40 ? 40 : len, true);
    if (len > 40)
        memcpy(buf + n, "...", 4);
    return buf;
}

#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
static size_t at_push(struct dec *d, const char *fmt, ...)
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

static void at_pop(struct dec *d, size_t old)
{
    d->atlen = old;
    d->at[old] = '\0';
}

/* A getter's failure as a sentence. */
static int status_fail(struct dec *d, const char *key, const struct json_value *v,
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
static int get_num(struct dec *d, const struct json_value *o, const char *key, double *out)
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

static int get_int(struct dec *d, const struct json_value *o, const char *key,
                   int64_t lo, int64_t hi, int64_t *out)
{
    const struct json_value *v = json_get(o, key);
    enum json_status st = json_as_int(v, lo, hi, out);
    if (st == JSON_OUT_OF_RANGE)
        return range_fail(d, key, v, lo, hi);
    return st == JSON_OK ? 0 : status_fail(d, key, v, st, "an integer");
}

/* A count sysfs may not have given: null is -1 (blockdev.h), a negative number is damage. */
static int get_known(struct dec *d, const struct json_value *o, const char *key, int64_t hi,
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

static int get_bool(struct dec *d, const struct json_value *o, const char *key, bool *out)
{
    const struct json_value *v = json_get(o, key);
    enum json_status st = json_as_bool(v, out);
    return st == JSON_OK ? 0 : status_fail(d, key, v, st, "true or false");
}

/* Tri-state (delta.h): null is -1. */
static int get_tri(struct dec *d, const struct json_value *o, const char *key, int *out)
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
static int get_str(struct dec *d, const struct json_value *o, const char *key, bool nullable,
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
enum fit { FIT_EXACT, FIT_CUT };

static void copy_cut(char *dst, size_t cap, const char *s, size_t len)
{
    if (len >= cap) {
        len = cap - 1;
        while (len > 0 && ((unsigned char)s[len] & 0xc0) == 0x80)
            len--;                   /* s[len] is the first byte left out: not mid-character */
    }
    memcpy(dst, s, len);
    dst[len] = '\0';
}

static int get_fixed(struct dec *d, const struct json_value *o, const char *key, bool nullable,
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
static int get_list(struct dec *d, const struct json_value *o, const char *key, bool object,
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
static int err_from_text(const char *s)
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
static bool policy_lookup(const char *s, int *out)
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
static bool code_lookup(const char *s, int *out)
{
    for (int c = 0; c < W_NCODES; c++)
        if (strcmp(s, warn_code_name((enum warn_code)c)) == 0)
            return *out = c, true;
    return false;
}

static bool severity_lookup(const char *s, int *out)
{
    for (int v = SEV_INFO; v <= SEV_CRIT; v++)
        if (strcmp(s, severity_name((enum severity)v)) == 0)
            return *out = v, true;
    return false;
}

static bool role_lookup(const char *s, int *out)
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

static bool class_lookup(const char *s, int *out)
{
    return class_lookup_from(s, IOC_NONE, out);
}

/* The block layer never applies class none (ioprio.h). */
static bool eff_class_lookup(const char *s, int *out)
{
    return class_lookup_from(s, IOC_RT, out);
}

static bool source_lookup(const char *s, int *out)
{
    for (int v = IOS_EXPLICIT; v <= IOS_CGROUP; v++)
        if (strcmp(s, ioprio_source_name((enum ioprio_source)v)) == 0)
            return *out = v, true;
    return false;
}

/* A name member looked up in a table. Returns 0 (found), 1 (null, when nullable) or
 * -EINVAL. */
static int get_name(struct dec *d, const struct json_value *o, const char *key, bool nullable,
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

static bool is_null(const struct json_value *o, const char *key)
{
    const struct json_value *v = json_get(o, key);
    return v && json_type(v) == JSON_NULL;
}

/* ---- top level: version, clock, host --------------------------------------------------- */

/* ---- The BPF lens's keys (docs/json.md): absent in recordings made before the lens,
 * which then read as "no lens". ---- */
static int class_of_name(const char *s, size_t len)
{
    static const char *const names[] = { "none", "rt", "be", "idle" };
    for (int c = 0; c < 4; c++)
        if (s && strlen(names[c]) == len && memcmp(s, names[c], len) == 0)
            return c;
    return -1;
}

static int decode_lens_head(struct dec *d, const struct json_value *root, struct snapshot *s)
{
    const struct json_value *l = json_get(root, "lens");
    if (!l)
        return 0;
    enum json_status st = json_as_object(l);
    if (st != JSON_OK)
        return status_fail(d, "lens", l, st, "an object");
    const char *why;
    size_t len;
    int rc;
    if ((rc = get_bool(d, l, "on", &s->lens_on)) || (rc = get_str(d, l, "reason", true, &why, &len)))
        return rc;
    if (why)
        snprintf(s->lens_msg, sizeof(s->lens_msg), "%.*s", (int)len, why);
    /* which loader loaded it: absent in recordings made before the key */
    const char *ld = NULL;
    if (json_get(l, "loader") && (rc = get_str(d, l, "loader", true, &ld, &len)))
        return rc;
    if (ld && !(len == 5 && memcmp(ld, "light", 5) == 0) && !(len == 6 && memcmp(ld, "libbpf", 6) == 0))
        return dfail(d, "loader", "not \"light\", \"libbpf\" nor null");
    if (ld && !s->lens_on)
        return dfail(d, "loader", "a loader for a lens that is off");
    if (ld)
        snprintf(s->lens_loader, sizeof(s->lens_loader), "%.*s", (int)len, ld);
    return 0;
}

static int decode_lens_stages(struct dec *d, const struct json_value *o, struct dev_rates *r)
{
    struct lens_dev_interval *l = &r->lens;
    memset(l, 0, sizeof(*l));
    l->saturated = l->top_class = l->held_class = -1;
    const char *src;
    size_t len;
    int rc;
    /* before the lens, the baseline was the only rule */
    r->sat_source = r->saturated >= 0 ? SAT_SRC_BASELINE : SAT_SRC_NONE;
    if (json_get(o, "saturated_source")) {
        if ((rc = get_str(d, o, "saturated_source", true, &src, &len)))
            return rc;
        r->sat_source = !src ? SAT_SRC_NONE : len == 4 && memcmp(src, "lens", 4) == 0 ? SAT_SRC_LENS
                                                                                 : SAT_SRC_BASELINE;
    }
    const struct json_value *v = json_get(o, "stages");
    if (!v || json_as_object(v) == JSON_IS_NULL)
        return 0;
    enum json_status st = json_as_object(v);
    if (st != JSON_OK)
        return status_fail(d, "stages", v, st, "an object or null");
    static const struct { const char *key; size_t off; } nums[] = {
#define L(k, f) { k, offsetof(struct lens_dev_interval, f) }
        L("requests", requests), L("tag_ms", tag_ms), L("sched_ms", sched_ms),
        L("device_ms", device_ms), L("total_ms", total_ms), L("device_p50_ms", device_p50_ms),
        L("device_p99_ms", device_p99_ms), L("total_p50_ms", total_p50_ms),
        L("total_p99_ms", total_p99_ms), L("depth", fit.depth), L("busy_depth", busy_depth),
        L("service_ms", service_ms), L("growth", growth), L("sched_queue", sched_queue),
        L("held_sched_ms", held_sched_ms),
#undef L
    };
    for (size_t i = 0; i < ARRAY_SIZE(nums); i++) {
        double x;
        if ((rc = get_num(d, v, nums[i].key, &x)))
            return rc;
        memcpy((char *)l + nums[i].off, &x, sizeof(x));
    }
    /* A recording made before sampled timing has no share: unknown. */
    l->sampled = (double)NAN;
    if (json_get(v, "sampled") && (rc = get_num(d, v, "sampled", &l->sampled)))
        return rc;
    /* Recordings made before the depth fit was written: unknown. */
    l->fit.depth_sd = l->fit.elasticity = (double)NAN;
    if (json_get(v, "depth_sd") && (rc = get_num(d, v, "depth_sd", &l->fit.depth_sd)))
        return rc;
    if (json_get(v, "elasticity") && (rc = get_num(d, v, "elasticity", &l->fit.elasticity)))
        return rc;
    /* Before the duty cycle the request programs were always attached. */
    l->duty = 1;
    if (json_get(v, "duty") && (rc = get_num(d, v, "duty", &l->duty)))
        return rc;
    const char *served, *held;
    size_t slen, hlen;
    int64_t now = 0;
    /* null: the duty cycle ran (lens.h LENS_HELD_UNKNOWN) */
    const struct json_value *hn = json_get(v, "held_now");
    bool held_null = hn && json_as_object(hn) == JSON_IS_NULL;
    if ((rc = get_str(d, v, "served_class", true, &served, &slen)) ||
        (rc = get_bool(d, v, "held_back", &l->held_back)) ||
        (rc = get_str(d, v, "held_class", true, &held, &hlen)) ||
        (!held_null && (rc = get_int(d, v, "held_now", 0, INT64_MAX, &now))) ||
        (rc = get_tri(d, v, "saturated", &l->saturated)))
        return rc;
    l->top_class = class_of_name(served, slen);
    l->held_class = class_of_name(held, hlen);
    l->held_now = held_null ? LENS_HELD_UNKNOWN : (uint64_t)now;
    l->valid = true;
    return 0;
}

/* A priority as lens_prio_name() prints it, back to its number; the lowest of those
 * that print alike (idle at any level: delta.c keeps the lowest too). */
static bool prio_of_name(const char *s, size_t len, unsigned *out)
{
    for (unsigned cls = 0; cls < 8; cls++)
        for (unsigned level = 0; level < 8; level++) {
            char buf[sizeof(((struct prio_latency *)0)->name)];
            unsigned prio = cls << 13 | level;
            lens_prio_name(prio, buf, sizeof(buf));
            if (strlen(buf) == len && memcmp(buf, s, len) == 0) {
                *out = prio;
                return true;
            }
        }
    return false;
}

/* One stage as json_prio_stage (write.c) wrote it. Its buckets must add up to its count:
 * anything else is damage, not a measurement. */
static int decode_prio_stage(struct dec *d, const struct json_value *o, struct prio_stage *s)
{
    enum json_status st = json_as_object(o);
    if (st != JSON_OK)
        return status_fail(d, NULL, o, st, "an object");
    int64_t count;
    const struct json_value *hist;
    int rc;
    if ((rc = get_int(d, o, "count", 0, INT64_MAX, &count)) ||
        (rc = get_num(d, o, "p50_ms", &s->p50_ms)) || (rc = get_num(d, o, "p90_ms", &s->p90_ms)) ||
        (rc = get_num(d, o, "p99_ms", &s->p99_ms)) || (rc = get_num(d, o, "mean_ms", &s->mean_ms)) ||
        (rc = get_list(d, o, "hist", false, LENS_HIST, &hist)))
        return rc;
    s->count = (double)count;
    uint64_t sum = 0;
    for (size_t k = 0; k < json_len(hist); k++) {
        int64_t n;
        st = json_as_int(json_at(hist, k), 0, INT64_MAX, &n);
        if (st != JSON_OK)
            return dfail(d, "hist", "[%zu] is not a count (an integer of at least 0)", k);
        s->hist[k] = (uint64_t)n;
        sum += (uint64_t)n;
    }
    if (json_len(hist) && s->hist[json_len(hist) - 1] == 0)
        return dfail(d, "hist", "ends with an empty bucket (the writer trims them)");
    if (sum != (uint64_t)count)
        return dfail(d, "hist", "holds %" PRIu64 " requests, count says %" PRId64, sum, count);
    return 0;
}

static int cmp_lat_prio(const void *a, const void *b)
{
    unsigned x = ((const struct prio_latency *)a)->prio, y = ((const struct prio_latency *)b)->prio;
    return x < y ? -1 : x > y;
}

/* devices[].latency_by_prio (docs/json.md): absent in recordings made before it, null
 * without the lens. r->lat is set only when the whole object decoded. */
static int decode_lens_lat(struct dec *d, const struct json_value *o, struct dev_rates *r)
{
    r->lat = NULL;
    r->nlat = 0;
    const struct json_value *v = json_get(o, "latency_by_prio");
    if (!v || json_as_object(v) == JSON_IS_NULL)
        return 0;
    const struct json_value *list;
    int rc = get_list(d, o, "latency_by_prio", true, LENS_MAX_DEVPRIO, &list);
    if (rc)
        return rc;
    size_t n = json_len(list);
    if (!n)
        return 0;
    static const char *const stage_key[] = { [LENS_ST_TAG] = "tag", [LENS_ST_SCHED] = "sched",
                                              [LENS_ST_DEVICE] = "device" };
    struct prio_latency *rows = xcalloc(n, sizeof(*rows));
    for (size_t i = 0; !rc && i < n; i++) {
        const struct json_value *m = json_at(list, i);
        size_t klen;
        const char *key = json_key(m, &klen);
        char buf[64];
        if (!prio_of_name(key, klen, &rows[i].prio)) {
            rc = dfail(d, "latency_by_prio", "\"%s\" is no I/O priority iotriage prints",
                       shown(buf, key, klen));
            break;
        }
        memcpy(rows[i].name, key, klen);
        size_t old = at_push(d, ".latency_by_prio.%s", rows[i].name);
        const struct json_value *stages = json_get(m, "stages");
        enum json_status st = json_as_object(stages);
        rc = decode_prio_stage(d, m, &rows[i].st[LENS_ST_TOTAL]);
        if (!rc && st != JSON_OK)
            rc = status_fail(d, "stages", stages, st, "an object");
        for (int k = LENS_ST_TAG; !rc && k <= LENS_ST_DEVICE; k++) {
            size_t old2 = at_push(d, ".stages.%s", stage_key[k]);
            const struct json_value *sv = json_get(stages, stage_key[k]);
            rc = sv ? decode_prio_stage(d, sv, &rows[i].st[k]) : dfail(d, NULL, "missing");
            at_pop(d, old2);
        }
        at_pop(d, old);
    }
    if (rc) {
        free(rows);
        return rc;
    }
    qsort(rows, n, sizeof(*rows), cmp_lat_prio);
    r->lat = rows;
    r->nlat = n;
    return 0;
}

/* writeback_by (docs/json.md): absent in recordings made before it, null when the split
 * was not known; r->wb is set only when the whole array decoded. */
static int decode_writeback_by(struct dec *d, const struct json_value *o, struct dev_rates *r)
{
    r->wb = NULL;
    r->nwb = 0;
    r->wb_valid = false;
    const struct json_value *v = json_get(o, "writeback_by");
    if (!v || json_as_array(v) == JSON_IS_NULL)
        return 0;
    const struct json_value *list;
    int rc = get_list(d, o, "writeback_by", false, LENS_MAX_WB, &list);
    if (rc)
        return rc;
    size_t n = json_len(list);
    struct wb_share *rows = n ? xcalloc(n, sizeof(*rows)) : NULL;
    for (size_t i = 0; !rc && i < n; i++) {
        const struct json_value *m = json_at(list, i);
        struct wb_share *w = &rows[i];
        size_t old = at_push(d, ".writeback_by[%zu]", i);
        enum json_status st = json_as_object(m);
        int64_t pid = 0, cgid = 0;
        const char *from;
        size_t len;
        if (st != JSON_OK)
            rc = status_fail(d, NULL, m, st, "an object");
        if (!rc && json_as_int(json_get(m, "pid"), 0, 0, &pid) != JSON_IS_NULL)
            rc = get_int(d, m, "pid", 1, INT32_MAX, &pid);
        if (!rc && json_as_int(json_get(m, "cgroup_id"), 0, 0, &cgid) != JSON_IS_NULL)
            rc = get_int(d, m, "cgroup_id", 1, INT64_MAX, &cgid);
        if (!rc)
            rc = get_fixed(d, m, "comm", true, FIT_CUT, w->comm, sizeof(w->comm));
        if (!rc)
            rc = get_fixed(d, m, "cgroup", true, FIT_CUT, w->cgroup, sizeof(w->cgroup));
        if (!rc)
            rc = get_num(d, m, "bps", &w->bps);
        if (!rc)
            rc = get_str(d, m, "cgroup_from", true, &from, &len);
        if (!rc) {
            w->pid = (pid_t)pid;
            w->cgid = (uint64_t)cgid;
            w->from = !from ? WB_FROM_NONE
                    : len == 4 && memcmp(from, "lens", 4) == 0 ? WB_FROM_LENS
                    : len == 5 && memcmp(from, "blkcg", 5) == 0 ? WB_FROM_BLKCG : 255;
            if (w->from == 255)
                rc = dfail(d, "cgroup_from", "not \"lens\", \"blkcg\" nor null");
        }
        at_pop(d, old);
    }
    if (rc) {
        free(rows);
        return rc;
    }
    r->wb = rows;
    r->nwb = n;
    r->wb_valid = true;
    return 0;
}

/* The source names of delay_source_name: "bpf", "sampled", anything else taskstats. */
static unsigned char source_from(const char *src, size_t len)
{
    return !src ? DELAY_SRC_UNKNOWN
         : len == 3 && memcmp(src, "bpf", 3) == 0 ? DELAY_SRC_BPF
         : len == 7 && memcmp(src, "sampled", 7) == 0 ? DELAY_SRC_SAMPLED
         : DELAY_SRC_TASKSTATS;
}

/* io_uring's completion wait (issue #35; recordings before it have no key: unknown). */
static int decode_uring_task(struct dec *d, const struct json_value *o, struct task_rates *r)
{
    r->uring_wait_pct = (double)NAN;
    r->uring_source = DELAY_SRC_UNKNOWN;
    if (!json_get(o, "uring_wait_pct"))
        return 0;
    const char *src;
    size_t len;
    int rc;
    if ((rc = get_num(d, o, "uring_wait_pct", &r->uring_wait_pct)) ||
        (rc = get_str(d, o, "uring_wait_source", true, &src, &len)))
        return rc;
    r->uring_source = isnan(r->uring_wait_pct) ? DELAY_SRC_UNKNOWN : source_from(src, len);
    return 0;
}

static int decode_lens_task(struct dec *d, const struct json_value *o, struct task_rates *r)
{
    int rc = decode_uring_task(d, o, r);
    if (rc)
        return rc;
    /* before the lens, a known delay came from taskstats */
    r->io_delay_source = isnan(r->io_delay_pct) ? DELAY_SRC_UNKNOWN : DELAY_SRC_TASKSTATS;
    if (!json_get(o, "io_delay_source"))
        return 0;
    const char *src;
    size_t len;
    if ((rc = get_str(d, o, "io_delay_source", true, &src, &len)))
        return rc;
    r->io_delay_source = source_from(src, len);
    return 0;
}
/* ---- end of the lens's keys ---- */

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
                d->r->path, d->line, ver, IOTRIAGE_JSON_VERSION);
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

/* ---- devices ------------------------------------------------------------------------------- */

/* Member i of list (the value of key), a string that fits dst with no NUL in it. */
static int list_string(struct dec *d, const struct json_value *list, const char *key, unsigned i,
                       const char *what, char *dst, size_t cap)
{
    const char *s;
    size_t len;
    enum json_status st = json_as_string(json_at(list, i), &s, &len);
    char k[48], buf[64];
    snprintf(k, sizeof(k), "%s[%u]", key, i);
    if (st != JSON_OK)
        return status_fail(d, k, json_at(list, i), st, "a string");
    if (len >= cap || memchr(s, '\0', len))
        return dfail(d, k, "\"%s\" is no %s", shown(buf, s, len), what);
    copy_cut(dst, cap, s, len);
    return 0;
}

static int decode_schedulers(struct dec *d, const struct json_value *o, struct blockdev_info *b)
{
    const struct json_value *list;
    int rc = get_fixed(d, o, "scheduler", true, FIT_EXACT, b->scheduler, sizeof(b->scheduler));
    if (!rc)
        rc = get_list(d, o, "schedulers", false, BD_NSCHED, &list);
    if (rc)
        return rc;
    b->nsched = (unsigned)json_len(list);
    for (unsigned i = 0; i < b->nsched; i++)
        if ((rc = list_string(d, list, "schedulers", i, "scheduler name", b->schedulers[i], BD_SCHED_MAX)))
            return rc;
    return 0;
}

static int decode_tunables(struct dec *d, const struct json_value *o, struct blockdev_info *b)
{
    const struct json_value *t;
    int rc = get_list(d, o, "tunables", true, BD_NTUNABLES, &t);
    if (rc)
        return rc;
    b->ntunables = (unsigned)json_len(t);
    for (unsigned i = 0; i < b->ntunables; i++) {
        struct bd_tunable *x = &b->tunables[i];
        size_t klen, vlen;
        const char *key = json_key(json_at(t, i), &klen), *val;
        char buf[64];
        enum json_status st = json_as_string(json_at(t, i), &val, &vlen);
        if (st != JSON_OK)
            return status_fail(d, "tunables", json_at(t, i), st, "string values");
        if (klen >= sizeof(x->name) || vlen >= sizeof(x->value) || memchr(key, '\0', klen) ||
            memchr(val, '\0', vlen))
            return dfail(d, "tunables", "\"%s\": name or value too long (%zu bytes at most)",
                         shown(buf, key, klen), sizeof(x->name) - 1);
        copy_cut(x->name, sizeof(x->name), key, klen);
        copy_cut(x->value, sizeof(x->value), val, vlen);
    }
    return 0;
}

/* The device's sysfs part (blockdev_info). */
static int decode_bd(struct dec *d, const struct json_value *o, struct blockdev_info *b)
{
    long rot, hwq;
    int rc;
    if ((rc = get_bool(d, o, "partition", &b->partition)) ||
        (rc = get_fixed(d, o, "disk", false, FIT_EXACT, b->disk, sizeof(b->disk))) ||
        (rc = decode_schedulers(d, o, b)) ||
        (rc = get_known(d, o, "nr_requests", LONG_MAX, &b->nr_requests)) ||
        (rc = get_known(d, o, "rotational", INT_MAX, &rot)) ||
        (rc = get_known(d, o, "hw_queues", INT_MAX, &hwq)) ||
        (rc = get_known(d, o, "inflight", LONG_MAX, &b->inflight_r)) ||
        (rc = decode_tunables(d, o, b)))
        return rc;
    b->rotational = (int)rot;
    b->hw_queues = (int)hwq;
    /* the writer printed reads + writes: all of it goes to reads; unknown stays -1 */
    b->inflight_w = b->inflight_r < 0 ? -1 : 0;
    /* not recorded: a queue/ directory is what gives any of these */
    b->has_queue = b->nsched > 0 || b->nr_requests >= 0 || b->rotational >= 0;
    return 0;
}


/* The rates of one device, in the writer's order. */
static int decode_dev_rates(struct dec *d, const struct json_value *o, struct dev_rates *r)
{
    static const struct { const char *key; size_t off; } nums[] = {
#define R(k) { #k, offsetof(struct dev_rates, k) }
        R(r_s), R(w_s), R(d_s), R(f_s), R(rkb_s), R(wkb_s), R(dkb_s),
        R(rrqm_s), R(wrqm_s), R(drqm_s), R(rrqm_pct), R(wrqm_pct), R(drqm_pct),
        R(r_await), R(w_await), R(d_await), R(f_await),
        R(rareq_sz), R(wareq_sz), R(dareq_sz), R(aqu_sz), R(util), R(quiet_await),
#undef R
    };
    for (size_t i = 0; i < ARRAY_SIZE(nums); i++) {
        double v;
        int rc = get_num(d, o, nums[i].key, &v);
        if (rc)
            return rc;
        memcpy((char *)r + nums[i].off, &v, sizeof(v));
    }
    int rc = get_tri(d, o, "saturated", &r->saturated);
    if (!rc)
        rc = get_bool(d, o, "reset", &r->reset);
    if (!rc)
        rc = decode_lens_stages(d, o, r);
    if (!rc)
        rc = decode_lens_lat(d, o, r);
    r->kernel_bps = (double)NAN;     /* absent in recordings made before it */
    if (!rc && json_get(o, "writeback_bps"))
        rc = get_num(d, o, "writeback_bps", &r->kernel_bps);
    if (!rc)
        rc = decode_writeback_by(d, o, r);
    if (rc)
        return rc;
    /* The delta's own flags, from what it left null: r_s is null exactly when there was
     * no previous sample or a counter reset; discard and flush rates exist only when the
     * kernel gives those fields. */
    r->valid = !isnan(r->r_s);
    r->has_discard = !isnan(r->d_s);
    r->has_flush = !isnan(r->f_s);
    /* Not recorded: the await of reads and writes together, rebuilt from its halves
     * (to the three decimals they were printed with). */
    double rt = r->r_s > 0 ? r->r_await * r->r_s : 0, wt = r->w_s > 0 ? r->w_await * r->w_s : 0;
    double ios = r->r_s + r->w_s;
    r->await = ios > 0 ? (rt + wt) / ios : (double)NAN;
    return 0;
}

/* slaves or holders: absent or null (a recording made before they were kept) is
 * unknown, never empty; a name that is no device's fails the recording. */
static int decode_stack_list(struct dec *d, const struct json_value *o, const char *key,
                             struct blkstack_list *l)
{
    memset(l, 0, sizeof(*l));
    const struct json_value *v = json_get(o, key), *list;
    if (!v || json_type(v) == JSON_NULL)
        return 0;
    int rc = get_list(d, o, key, false, BLKSTACK_MAX, &list);
    if (rc)
        return rc;
    l->known = true;
    l->n = (uint8_t)json_len(list);
    for (unsigned i = 0; i < l->n; i++) {
        if ((rc = list_string(d, list, key, i, "device name", l->name[i], BD_NAME_MAX)))
            return rc;
        if (!blkstack_name_ok(l->name[i])) {
            char k[48], buf[64];
            snprintf(k, sizeof(k), "%s[%u]", key, i);
            return dfail(d, k, "\"%s\" is no device name", shown(buf, l->name[i], strlen(l->name[i])));
        }
    }
    return 0;
}

static int decode_device(struct dec *d, const struct json_value *o, struct dev_sample *s,
                         struct dev_rates *r)
{
    int64_t major, minor;
    int rc;
    enum json_status st = json_as_object(o);
    if (st != JSON_OK)
        return status_fail(d, NULL, o, st, "an object");
    if ((rc = get_fixed(d, o, "name", false, FIT_EXACT, s->ds.name, sizeof(s->ds.name))) ||
        (rc = get_int(d, o, "major", 0, UINT_MAX, &major)) ||
        (rc = get_int(d, o, "minor", 0, UINT_MAX, &minor)) ||
        (rc = decode_bd(d, o, &s->bd)) || (rc = decode_dev_rates(d, o, r)) ||
        (rc = decode_stack_list(d, o, "slaves", &s->stack.slaves)) ||
        (rc = decode_stack_list(d, o, "holders", &s->stack.holders)))
        return rc;
    if (!s->ds.name[0])
        return dfail(d, "name", "empty");
    s->ds.major = (unsigned)major;
    s->ds.minor = (unsigned)minor;
    /* The counters are not recorded (f[] stays 0); how many the kernel gave shows in
     * which rates it could compute. */
    s->ds.nfields = r->has_flush ? 17 : r->has_discard ? 15 : 11;
    return 0;
}

/* Device index by name, for processes' device lists and warnings. */
struct name_ix {
    const struct dev_sample *devs;
    size_t *order;                   /* indices into devs, sorted by name */
    size_t n;
};

static int dev_find(const struct name_ix *ix, const char *name)
{
    size_t lo = 0, hi = ix->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(ix->devs[ix->order[mid]].ds.name, name);
        if (c == 0)
            return (int)ix->order[mid];
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return -1;
}

static int cmp_dev_name(const void *a, const void *b, void *ctx)
{
    const struct dev_sample *devs = ctx;
    return strcmp(devs[*(const size_t *)a].ds.name, devs[*(const size_t *)b].ds.name);
}

/* Names must be unique, or a lookup would have two answers. */
static int build_dev_index(struct dec *d, struct name_ix *ix, const struct dev_sample *devs,
                           size_t n)
{
    ix->devs = devs;
    ix->n = n;
    ix->order = xcalloc(n ? n : 1, sizeof(size_t));
    for (size_t i = 0; i < n; i++)
        ix->order[i] = i;
    qsort_r(ix->order, n, sizeof(size_t), cmp_dev_name, (void *)(uintptr_t)devs);
    for (size_t i = 1; i < n; i++) {
        size_t a = ix->order[i - 1], b = ix->order[i];
        if (strcmp(devs[a].ds.name, devs[b].ds.name) == 0) {
            char buf[64];
            return dfail(d, NULL, "devices[%zu] and devices[%zu] are both \"%s\"",
                         a < b ? a : b, a < b ? b : a,
                         shown(buf, devs[a].ds.name, strlen(devs[a].ds.name)));
        }
    }
    return 0;
}

static int decode_devices(struct dec *d, const struct json_value *root, struct replay_frame *f)
{
    const struct json_value *list;
    int rc = get_list(d, root, "devices", false, REPLAY_DEVS_MAX, &list);
    if (rc)
        return rc;
    size_t n = json_len(list), cap = 0;
    for (size_t i = 0; i < n; i++) {
        if (i == cap) {              /* grown as decoded: memory follows what is valid */
            cap = cap ? 2 * cap : 16;
            f->snap.devs = xreallocarray(f->snap.devs, cap, sizeof(*f->snap.devs));
            f->res.devs = xreallocarray(f->res.devs, cap, sizeof(*f->res.devs));
        }
        memset(&f->snap.devs[i], 0, sizeof(f->snap.devs[i]));
        memset(&f->res.devs[i], 0, sizeof(f->res.devs[i]));
        size_t old = at_push(d, "devices[%zu]", i);
        rc = decode_device(d, json_at(list, i), &f->snap.devs[i], &f->res.devs[i]);
        at_pop(d, old);
        if (rc) {
            free(f->res.devs[i].lat);    /* not yet counted in ndevs: result_free misses it */
            return rc;
        }
        f->snap.ndevs = f->res.ndevs = i + 1;
    }
    for (size_t i = 0; i < n; i++)
        f->res.devs[i].dev = &f->snap.devs[i];
    return 0;
}

/* ---- processes --------------------------------------------------------------------------- */

/* One task as decoded, before the frame's arrays are laid out (stubs may join it). */
struct ptask {
    struct task_sample s;
    struct task_rates r;
    struct task_devs td;
    double lens_bps[TASK_DEVS_MAX];  /* to the frame's snapshot rows (layout_tasks) */
    enum role role;
    bool stub;
};

struct ptasks {
    struct ptask *v;
    size_t n, cap;
};

static void ptasks_free(struct ptasks *p)
{
    for (size_t i = 0; i < p->n; i++) {
        free((char *)(uintptr_t)p->v[i].s.comm);
        free((char *)(uintptr_t)p->v[i].s.user);
        free((char *)(uintptr_t)p->v[i].s.cmdline);
    }
    free(p->v);
    memset(p, 0, sizeof(*p));
}

static struct ptask *ptasks_add(struct ptasks *p)
{
    if (p->n == p->cap) {
        p->cap = p->cap ? 2 * p->cap : 64;
        p->v = xreallocarray(p->v, p->cap, sizeof(*p->v));
    }
    struct ptask *t = &p->v[p->n++];
    memset(t, 0, sizeof(*t));
    return t;
}

static int decode_ioprio_fields(struct dec *d, const struct json_value *o, struct ptask *p)
{
    int cls = -1, ecls, src, rc;   /* -1: quiets a false maybe-uninitialized once inlined */
    int64_t level, raw, elevel;
    rc = get_name(d, o, "class", true, class_lookup, "I/O priority class", &cls);
    if (rc < 0)
        return rc;
    if (rc == 1) {
        /* ioprio_get failed; the writer printed level and raw as null too, and not why */
        if (!is_null(o, "level") || !is_null(o, "raw"))
            return dfail(d, "raw", "expected null with class null");
        p->s.ioprio_raw = -ENODATA;
    } else {
        if ((rc = get_int(d, o, "level", 0, 7, &level)) ||
            (rc = get_int(d, o, "raw", 0, UINT16_MAX, &raw)))
            return rc;
        /* class and level are the raw value's two parts: they must agree */
        if ((int)IOPRIO_CLASS_OF(raw) != cls || (int64_t)IOPRIO_LEVEL_OF(raw) != level)
            return dfail(d, "raw", "%" PRId64 " is %s/%u, not %s/%" PRId64, raw,
                         ioprio_class_name((enum ioprio_class)IOPRIO_CLASS_OF(raw)),
                         IOPRIO_LEVEL_OF(raw), ioprio_class_name((enum ioprio_class)cls), level);
        p->s.ioprio_raw = (int)raw;
    }
    if ((rc = get_name(d, o, "effective_class", false, eff_class_lookup,
                       "effective I/O priority class", &ecls)) ||
        (rc = get_int(d, o, "effective_level", 0, 7, &elevel)) ||
        (rc = get_name(d, o, "source", false, source_lookup, "I/O priority source", &src)))
        return rc;
    p->r.prio.cls = (enum ioprio_class)ecls;
    p->r.prio.level = (int)elevel;
    p->r.prio.source = (enum ioprio_source)src;
    return 0;
}

static int decode_ioprio(struct dec *d, const struct json_value *t, struct ptask *p)
{
    const struct json_value *o = json_get(t, "ioprio");
    enum json_status st = json_as_object(o);
    if (st != JSON_OK)
        return status_fail(d, "ioprio", o, st, "an object");
    size_t old = at_push(d, ".ioprio");
    int rc = decode_ioprio_fields(d, o, p);
    at_pop(d, old);
    return rc;
}

/* devices_from and lens_bytes (docs/json.md): absent in recordings made before them (the
 * devices then came from open files). A device in lens_bytes was seen by the lens; the
 * others came from files, and under "both" with every device in lens_bytes, all did. */
static int decode_task_lens(struct dec *d, const struct json_value *o, const struct name_ix *ix,
                            struct task_devs *td, double *lens_bps)
{
    uint16_t all = (uint16_t)((1u << td->n) - 1);
    const char *from = NULL;
    size_t len = 0;
    int rc;
    if (json_get(o, "devices_from") && (rc = get_str(d, o, "devices_from", true, &from, &len)))
        return rc;
    const struct json_value *v = json_get(o, "lens_bytes");
    if (v && json_type(v) != JSON_NULL) {
        enum json_status st = json_as_object(v);
        if (st != JSON_OK)
            return status_fail(d, "lens_bytes", v, st, "an object or null");
        td->lens = true;
        for (unsigned k = 0; k < td->n; k++) {
            const char *name = ix->devs[td->idx[k]].ds.name;
            if (!json_get(v, name))
                continue;
            size_t old = at_push(d, ".lens_bytes");
            rc = get_num(d, v, name, &lens_bps[k]);
            at_pop(d, old);
            if (rc)
                return rc;
            td->from_lens |= (uint16_t)(1u << k);
        }
    }
    bool lens_only = from && len == 4 && memcmp(from, "lens", 4) == 0;
    bool both = from && len == 4 && memcmp(from, "both", 4) == 0;
    if (from && !lens_only && !both && !(len == 5 && memcmp(from, "files", 5) == 0))
        return dfail(d, "devices_from", "not \"files\", \"lens\" nor \"both\"");
    if (lens_only && (td->from_lens & all) != all)
        return dfail(d, "devices_from", "\"lens\", but lens_bytes lacks some of the devices");
    td->from_files = lens_only ? 0 : (uint16_t)(all & ~td->from_lens);
    if (both && !td->from_files)
        td->from_files = all;
    if (both && !td->from_lens)
        return dfail(d, "devices_from", "\"both\", but lens_bytes names none of the devices");
    return 0;
}

/* devices: names into snap.devs indices; null with devices_error when unknown. */
static int decode_task_devs(struct dec *d, const struct json_value *o, const struct name_ix *ix,
                            struct task_devs *td, double *lens_bps)
{
    const struct json_value *v = json_get(o, "devices");
    const char *s;
    size_t len;
    int rc;
    if (v && json_type(v) == JSON_NULL) {
        if ((rc = get_str(d, o, "devices_error", true, &s, &len)))
            return rc;
        /* null and no error: attribution did not run for it (known stays false) */
        td->known = s != NULL;
        td->err = s ? err_from_text(s) : 0;
        return 0;
    }
    if ((rc = get_list(d, o, "devices", false, TASK_DEVS_MAX, &v)))
        return rc;
    td->known = true;
    td->n = (uint8_t)json_len(v);
    for (unsigned k = 0; k < td->n; k++) {
        char key[32], buf[64];
        snprintf(key, sizeof(key), "devices[%u]", k);
        enum json_status st = json_as_string(json_at(v, k), &s, &len);
        if (st != JSON_OK)
            return status_fail(d, key, json_at(v, k), st, "a device name");
        int di = memchr(s, '\0', len) ? -1 : dev_find(ix, s);
        if (di < 0)
            return dfail(d, key, "\"%s\" is not among the sample's devices", shown(buf, s, len));
        td->idx[k] = (uint16_t)di;
    }
    return decode_task_lens(d, o, ix, td, lens_bps);
}

/* Identity, owner and scheduling. */
static int decode_task_ident(struct dec *d, const struct json_value *o, bool threads,
                             struct task_sample *s)
{
    int64_t pid, tgid, uid, nice, start;
    int policy, rc;
    char comm[TASK_COMM_MAX], user[TASK_USER_MAX];
    if ((rc = get_int(d, o, "pid", 0, INT_MAX, &pid)))
        return rc;
    tgid = pid;                      /* written with -P only; a process is its own group */
    if ((threads || json_get(o, "tgid")) && (rc = get_int(d, o, "tgid", 0, INT_MAX, &tgid)))
        return rc;
    if ((rc = get_fixed(d, o, "comm", false, FIT_CUT, comm, sizeof(comm))) ||
        (rc = get_fixed(d, o, "user", true, FIT_CUT, user, sizeof(user))) ||
        (rc = get_int(d, o, "uid", 0, UINT32_MAX, &uid)) ||
        (rc = get_int(d, o, "nice", -20, 19, &nice)) ||
        (rc = get_name(d, o, "policy", false, policy_lookup, "scheduling policy", &policy)) ||
        (rc = get_int(d, o, "start_ticks", 0, INT64_MAX, &start)))
        return rc;
    s->id = (pid_t)pid;
    s->tgid = (pid_t)tgid;
    s->uid = (uid_t)uid;
    s->nice = (int)nice;
    s->policy = policy;
    s->start_ticks = (unsigned long long)start;
    s->nlwp = threads ? 1 : 0;       /* not recorded for processes: 0 says unknown */
    s->comm = xstrdup(comm);         /* freed with the task (procs_free, ptasks_free) */
    s->user = xstrdup(user);
    return 0;
}

/* The rates and what the delta decided about them. */
static int decode_task_rates(struct dec *d, const struct json_value *o, struct ptask *p)
{
    struct task_rates *r = &p->r;
    const char *ioerr;
    size_t len;
    int rc;
    if ((rc = get_num(d, o, "read_bps", &r->read_bps)) ||
        (rc = get_num(d, o, "write_bps", &r->write_bps)) ||
        (rc = get_num(d, o, "cancelled_write_bps", &r->cancelled_write_bps)) ||
        (rc = get_str(d, o, "io_error", true, &ioerr, &len)) ||
        (rc = get_num(d, o, "io_delay_pct", &r->io_delay_pct)) ||
        (rc = get_num(d, o, "swapin_delay_pct", &r->swapin_delay_pct)) ||
        (rc = get_num(d, o, "blkio_avg_ms", &r->blkio_avg_ms)) ||
        (rc = get_bool(d, o, "delay_overcount", &r->delay_overcount)) ||
        (rc = decode_lens_task(d, o, r)))
        return rc;
    p->s.io_err = ioerr ? err_from_text(ioerr) : 0;
    /* delta.h's validity flags, from what the writer left null */
    r->io_valid = !isnan(r->read_bps);
    r->delay_valid = !isnan(r->io_delay_pct);
    p->s.delay_valid = r->delay_valid;   /* the delay counters themselves are not recorded */
    return 0;
}

static int decode_task(struct dec *d, const struct json_value *o, bool threads,
                       const struct name_ix *ix, struct ptask *p)
{
    const char *cmd;
    size_t cmdlen;
    int role = ROLE_NONE, rc;
    enum json_status st = json_as_object(o);
    if (st != JSON_OK)
        return status_fail(d, NULL, o, st, "an object");
    if ((rc = decode_task_ident(d, o, threads, &p->s)) ||
        (rc = get_str(d, o, "cmdline", false, &cmd, &cmdlen)) ||
        (rc = decode_task_rates(d, o, p)) || (rc = decode_ioprio(d, o, p)) ||
        (rc = decode_task_devs(d, o, ix, &p->td, p->lens_bps)))
        return rc;
    rc = get_name(d, o, "role", true, role_lookup, "role", &role);
    if (rc < 0)
        return rc;
    p->role = (enum role)role;
    p->s.cmdline = xstrndup(cmd, cmdlen);    /* last: nothing can fail after it */
    return 0;
}

static int decode_processes(struct dec *d, const struct json_value *root, bool threads,
                            const struct name_ix *ix, struct ptasks *pt)
{
    const struct json_value *list;
    int rc = get_list(d, root, "processes", false, SIZE_MAX, &list);
    for (size_t i = 0; !rc && i < json_len(list); i++) {
        size_t old = at_push(d, "processes[%zu]", i);
        rc = decode_task(d, json_at(list, i), threads, ix, ptasks_add(pt));
        if (rc) {                    /* of it only its names may have been allocated */
            struct ptask *p = &pt->v[--pt->n];
            free((char *)(uintptr_t)p->s.comm);
            free((char *)(uintptr_t)p->s.user);
        }
        at_pop(d, old);
    }
    return rc;
}

/* ---- tasks by pid, stubs for tasks only warnings name ------------------------------------ */

struct pid_ix {
    pid_t pid;
    size_t idx;
};

static int cmp_pid(const void *a, const void *b)
{
    const struct pid_ix *x = a, *y = b;
    if (x->pid != y->pid)
        return x->pid < y->pid ? -1 : 1;
    return x->idx < y->idx ? -1 : x->idx > y->idx;
}

static struct pid_ix *pid_index(const struct ptasks *pt)
{
    struct pid_ix *ix = xcalloc(pt->n ? pt->n : 1, sizeof(*ix));
    for (size_t i = 0; i < pt->n; i++)
        ix[i] = (struct pid_ix){ pt->v[i].s.id, i };
    qsort(ix, pt->n, sizeof(*ix), cmp_pid);
    return ix;
}

static long pid_find(const struct pid_ix *ix, size_t n, pid_t pid)
{
    size_t lo = LOWER_BOUND_ID(ix, n, pid, pid);
    return lo < n && ix[lo].pid == pid ? (long)ix[lo].idx : -1;
}

static int check_unique_pids(struct dec *d, const struct pid_ix *ix, size_t n)
{
    for (size_t i = 1; i < n; i++)
        if (ix[i].pid == ix[i - 1].pid)
            return dfail(d, NULL, "processes[%zu] and processes[%zu] are both pid %d",
                         ix[i - 1].idx, ix[i].idx, (int)ix[i].pid);
    return 0;
}

/* A task known only from a warning (the recording was made with -o): everything but its
 * pid and comm is unknown, and it is inactive so only_active outputs skip it. */
static void add_stub(struct ptasks *pt, pid_t pid, const char *comm, bool threads)
{
    struct ptask *p = ptasks_add(pt);
    p->stub = true;
    p->s.id = p->s.tgid = pid;      /* a thread's group is not known either */
    p->s.comm = xstrdup(comm);
    p->s.user = xstrdup("");
    p->s.cmdline = xstrdup("");
    p->s.uid = (uid_t)-1;
    p->s.policy = -1;
    p->s.nlwp = threads ? 1 : 0;
    p->s.io_err = -ENODATA;
    p->s.ioprio_raw = -ENODATA;
    p->r.read_bps = p->r.write_bps = p->r.cancelled_write_bps = (double)NAN;
    p->r.io_delay_pct = p->r.swapin_delay_pct = p->r.blkio_avg_ms = p->r.uring_wait_pct = (double)NAN;
    p->r.prio = ioprio_effective(IOPRIO_MAKE(IOC_NONE, 0), 0, SCHED_OTHER);
}

static int cmp_ptask(const void *a, const void *b)
{
    const struct ptask *x = a, *y = b;
    return (x->s.id > y->s.id) - (x->s.id < y->s.id);
}

/* Stubs for warnings whose pid is not listed, one per pid, with the comm of its first
 * warning. The writer listed processes in pid order; when they are, stubs join in that
 * order (which keeps the listed ones in their written order), otherwise they go last. */
static int add_stubs(struct dec *d, const struct json_value *warnings, bool threads,
                     struct ptasks *pt, size_t *nstubs)
{
    size_t nlisted = pt->n, nw = json_len(warnings), nc = 0;
    struct pid_ix *ix = pid_index(pt);
    struct pid_ix *cand = xcalloc(nw ? nw : 1, sizeof(*cand));   /* pid, warning index */
    int rc = check_unique_pids(d, ix, nlisted);
    for (size_t i = 0; !rc && i < nw; i++) {
        const struct json_value *pv = json_get(json_at(warnings, i), "pid");
        int64_t pid;
        /* no pid: a device finding; a bad one: damage decode_warning reports */
        if (json_as_int(pv, 0, INT_MAX, &pid) == JSON_OK && pid_find(ix, nlisted, (pid_t)pid) < 0)
            cand[nc++] = (struct pid_ix){ (pid_t)pid, i };
    }
    qsort(cand, nc, sizeof(*cand), cmp_pid);
    for (size_t k = 0; !rc && k < nc; k++) {
        if (k > 0 && cand[k].pid == cand[k - 1].pid)
            continue;
        char comm[TASK_COMM_MAX];
        size_t old = at_push(d, "warnings[%zu]", cand[k].idx);
        rc = get_fixed(d, json_at(warnings, cand[k].idx), "comm", false, FIT_CUT, comm,
                       sizeof(comm));
        at_pop(d, old);
        if (!rc)
            add_stub(pt, cand[k].pid, comm, threads);
    }
    free(cand);
    free(ix);
    *nstubs = pt->n - nlisted;
    if (rc || *nstubs == 0)
        return rc;
    bool sorted = true;
    for (size_t i = 1; i < nlisted && sorted; i++)
        sorted = pt->v[i - 1].s.id < pt->v[i].s.id;
    if (sorted)
        qsort(pt->v, pt->n, sizeof(*pt->v), cmp_ptask);
    return 0;
}

/* The decoded tasks into the frame's parallel arrays (snapshot, result, verdict roles). */
static void layout_tasks(struct replay_frame *f, struct ptasks *pt)
{
    size_t n = pt->n;
    f->snap.tasks = xcalloc(n ? n : 1, sizeof(*f->snap.tasks));
    f->snap.tdevs = xcalloc(n ? n : 1, sizeof(*f->snap.tdevs));
    f->res.tasks = xcalloc(n ? n : 1, sizeof(*f->res.tasks));
    f->ver.roles = xcalloc(n ? n : 1, sizeof(*f->ver.roles));
    if (f->nunlisted)
        f->unlisted = xcalloc(n, sizeof(*f->unlisted));
    for (size_t i = 0; i < n; i++) {
        f->snap.tasks[i] = pt->v[i].s;   /* the strings change owner */
        f->snap.tdevs[i] = pt->v[i].td;
        if (pt->v[i].td.lens && pt->v[i].td.from_lens)
            memcpy(task_lens_row(&f->snap, &f->snap.tdevs[i]), pt->v[i].lens_bps,
                   sizeof(pt->v[i].lens_bps));
        f->res.tasks[i] = pt->v[i].r;
        f->res.tasks[i].task = &f->snap.tasks[i];
        f->ver.roles[i] = pt->v[i].role;
        if (f->unlisted)
            f->unlisted[i] = pt->v[i].stub;
    }
    f->snap.ntasks = f->res.ntasks = f->ver.nroles = n;
    free(pt->v);
    memset(pt, 0, sizeof(*pt));
}

/* ---- warnings ---------------------------------------------------------------------------- */

/* A warning's evidence (docs/json.md "Warning objects"): absent in recordings made
 * before it, which were all the rule table's. */
static int decode_evidence(struct dec *d, const struct json_value *o, struct warning *w)
{
    w->evidence = EV_RULE;
    w->contradicts = false;
    memset(&w->m, 0, sizeof(w->m));
    if (!json_get(o, "evidence"))
        return 0;
    const char *ev;
    size_t len;
    int rc;
    if ((rc = get_str(d, o, "evidence", false, &ev, &len)) ||
        (rc = get_bool(d, o, "contradicts_rules", &w->contradicts)))
        return rc;
    if (len == 8 && memcmp(ev, "measured", 8) == 0) {
        w->evidence = EV_MEASURED;
    } else if (len == 7 && memcmp(ev, "sampled", 7) == 0) {
        w->evidence = EV_SAMPLED;
    } else if (!(len == 4 && memcmp(ev, "rule", 4) == 0)) {
        char buf[64];
        return dfail(d, "evidence", "\"%s\" is not \"measured\", \"sampled\" nor \"rule\"",
                     shown(buf, ev, len));
    }
    const struct json_value *m = json_get(o, "measured");
    if (!m || json_as_object(m) == JSON_IS_NULL)
        return 0;
    if (w->evidence != EV_MEASURED)
        return dfail(d, "measured", "figures on a warning of the rule table");
    enum json_status st = json_as_object(m);
    if (st != JSON_OK)
        return status_fail(d, "measured", m, st, "an object or null");
    int64_t n, vn;
    size_t old = at_push(d, ".measured");
    unsigned prio;
    if (!(rc = get_fixed(d, m, "prio", false, FIT_EXACT, w->m.prio, sizeof(w->m.prio))) &&
        !(rc = get_num(d, m, "p50_ms", &w->m.p50_ms)) && !(rc = get_int(d, m, "count", 0, INT64_MAX, &n)) &&
        !(rc = get_fixed(d, m, "vs", false, FIT_EXACT, w->m.vs, sizeof(w->m.vs))) &&
        !(rc = get_num(d, m, "vs_p50_ms", &w->m.vs_p50_ms)) &&
        !(rc = get_int(d, m, "vs_count", 0, INT64_MAX, &vn))) {
        w->m.count = (double)n;
        w->m.vs_count = (double)vn;
        if (!prio_of_name(w->m.prio, strlen(w->m.prio), &prio) || !prio_of_name(w->m.vs, strlen(w->m.vs), &prio))
            rc = dfail(d, NULL, "names no I/O priority iotriage prints");
    }
    at_pop(d, old);
    return rc;
}

static int decode_warning(struct dec *d, const struct json_value *o, const struct name_ix *dix,
                          const struct pid_ix *pix, size_t npix, const struct snapshot *snap,
                          struct warning *w)
{
    const char *dev;
    size_t len;
    int code = 0, sev = 0, rc; /* set by get_name() on success; gcc cannot see that
                                 * through the lookup pointer with Debian's flags */
    enum json_status st = json_as_object(o);
    if (st != JSON_OK)
        return status_fail(d, NULL, o, st, "an object");
    if ((rc = get_name(d, o, "code", false, code_lookup, "warning code", &code)) ||
        (rc = get_name(d, o, "severity", false, severity_lookup, "severity", &sev)) ||
        (rc = get_str(d, o, "device", warn_code_may_lack_dev((enum warn_code)code), &dev, &len)) ||
        (rc = get_fixed(d, o, "text", false, FIT_CUT, w->text, sizeof(w->text))))
        return rc;
    if ((rc = decode_evidence(d, o, w)))
        return rc;
    w->code = (enum warn_code)code;
    w->sev = (enum severity)sev;
    w->cgroup = -1;                  /* recordings carry no cgroup index (cgroups.h) */
    /* fs-* warnings (issue #20): about the filesystem at `mount`; tmpfs has no device. */
    w->fs = -1;
    if (warn_code_is_fs(w->code)) {
        const char *mnt;
        size_t mlen;
        if ((rc = get_str(d, o, "mount", false, &mnt, &mlen)))
            return rc;
        if ((w->fs = replay_fs_find(snap, mnt, mlen)) < 0)
            return dfail(d, "mount", "not among the sample's filesystems");
        if (!dev) {
            w->dev = -1;
            w->task = -1;
            return 0;
        }
    }
    w->task = -1;
    if (!dev) {                      /* io-pressure-not-block: a process, no device */
        w->dev = -1;
        if (json_get(o, "pid")) {
            int64_t pid;
            if ((rc = get_int(d, o, "pid", 0, INT_MAX, &pid)))
                return rc;
            long t = pid_find(pix, npix, (pid_t)pid);
            if (t < 0)
                return dfail(d, "pid", "%" PRId64 " has no task", pid);
            w->task = (int)t;
        }
        return 0;
    }
    w->dev = memchr(dev, '\0', len) ? -1 : dev_find(dix, dev);
    if (w->dev < 0) {
        char buf[64];
        return dfail(d, "device", "\"%s\" is not among the sample's devices", shown(buf, dev, len));
    }
    w->task = -1;                    /* a device finding has no pid */
    if (json_get(o, "pid")) {
        int64_t pid;
        if ((rc = get_int(d, o, "pid", 0, INT_MAX, &pid)))
            return rc;
        long t = pid_find(pix, npix, (pid_t)pid);
        if (t < 0)                   /* add_stubs gave every pid a task */
            return dfail(d, "pid", "%" PRId64 " has no task", pid);
        w->task = (int)t;
    }
    return 0;
}

/* The top-level list is every verdict in the verdicts' order; the per-device and
 * per-process lists repeat parts of it and are not read. */
static int decode_warnings(struct dec *d, const struct json_value *list, const struct name_ix *dix,
                           struct replay_frame *f)
{
    size_t nt = f->snap.ntasks;
    struct pid_ix *pix = xcalloc(nt ? nt : 1, sizeof(*pix));
    for (size_t i = 0; i < nt; i++)
        pix[i] = (struct pid_ix){ f->snap.tasks[i].id, i };
    qsort(pix, nt, sizeof(*pix), cmp_pid);
    int rc = 0;
    for (size_t i = 0; !rc && i < json_len(list); i++) {
        if (f->ver.n == f->ver.cap) {
            f->ver.cap = f->ver.cap ? 2 * f->ver.cap : 16;
            f->ver.w = xreallocarray(f->ver.w, f->ver.cap, sizeof(*f->ver.w));
        }
        struct warning *w = &f->ver.w[f->ver.n];
        memset(w, 0, sizeof(*w));
        size_t old = at_push(d, "warnings[%zu]", i);
        rc = decode_warning(d, json_at(list, i), dix, pix, nt, &f->snap, w);
        at_pop(d, old);
        f->ver.n += !rc;
    }
    free(pix);
    return rc;
}

/* ---- notes: the errors the writer turned into text ------------------------------------- */

/* The writer's fixed texts (src/sample/write.c); the round-trip test fails if they drift. */
/* NOTE_* texts: sample/sample.h, shared with the writer */

static void note_psi(struct snapshot *s, const char *text)
{
    for (int k = 0; k < PSI_NRES; k++) {
        char prefix[64];
        int n = snprintf(prefix, sizeof(prefix), "pressure/%s unavailable: ", psi_resource_name[k]);
        if (strncmp(text, prefix, (size_t)n) != 0 || !s->psi[k].err)
            continue;                /* a note about a resource the sample has is noise */
        const char *why = text + n;
        s->psi[k].err = strcmp(why, NOTE_PSI_ENOENT) == 0 ? -ENOENT : err_from_text(why);
    }
}

static void note_delayacct(struct snapshot *s, const char *text)
{
    if ((s->delayacct == DA_OFF && strcmp(text, NOTE_DA_OFF) == 0) ||
        (s->delayacct == DA_UNKNOWN && strcmp(text, NOTE_DA_MISSING) == 0))
        return;                      /* the sysctl's state, not a taskstats failure */
    /* taskstats' own message; the screen tells "need CAP_NET_ADMIN" by EPERM */
    s->taskstats_err = strstr(text, "permission denied") ? -EPERM : -EIO;
    copy_cut(s->taskstats_msg, sizeof(s->taskstats_msg), text, strlen(text));
}

static int decode_notes(struct dec *d, const struct json_value *root, struct snapshot *s)
{
    const struct json_value *list;
    int rc = get_list(d, root, "notes", false, SIZE_MAX, &list);
    for (size_t i = 0; !rc && i < json_len(list); i++) {
        const struct json_value *o = json_at(list, i);
        const char *src, *text;
        size_t slen, tlen;
        size_t old = at_push(d, "notes[%zu]", i);
        enum json_status st = json_as_object(o);
        if (st != JSON_OK)
            rc = status_fail(d, NULL, o, st, "an object");
        else if (!(rc = get_str(d, o, "source", false, &src, &slen)) &&
                 !(rc = get_str(d, o, "text", false, &text, &tlen))) {
            if (strcmp(src, "diskstats") == 0)
                s->diskstats_err = err_from_text(text);
            else if (strcmp(src, "psi") == 0)
                note_psi(s, text);
            else if (strcmp(src, "delayacct") == 0)
                note_delayacct(s, text);
            else if (strcmp(src, "procfs") == 0)
                copy_cut(s->proc_note, sizeof(s->proc_note), text, tlen);
            else if (strcmp(src, "procs") == 0)
                copy_cut(s->hidden_note, sizeof(s->hidden_note), text, tlen);
            else if (strcmp(src, "sysfs") == 0)
                copy_cut(s->sys_note, sizeof(s->sys_note), text, tlen);
            else if (strcmp(src, "pids") == 0 && s->npids_missing < SNAP_PIDS_MISSING_MAX &&
                     snapshot_pid_note_parse(text, &s->pids_missing[s->npids_missing]))
                s->npids_missing++;
            /* other sources: a newer writer's notes, nothing to restore */
        }
        at_pop(d, old);
    }
    return rc;
}

/* ---- the cgroup lens (store/replay_cgroups.h) ------------------------------------------ */

static int decode_cgroups(struct dec *d, const struct json_value *root, struct replay_frame *f)
{
    char msg[256];
    if (replay_cgroups_decode(root, f, msg, sizeof(msg)) == 0)
        return 0;
    return dfail(d, NULL, "%s", msg);
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
    /* filesystems (issue #20): store/replay_fs.h, before the warnings that name them */
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

static int parse_line(struct dec *d, const struct line_ref *l, struct json_doc **doc)
{
    /* \ufffd back to an invalid byte: esc_json writes the same line from it again */
    struct json_opts opts = { .max_len = REPLAY_LINE_MAX, .max_depth = JSON_DEFAULT_MAX_DEPTH,
                              .max_values = REPLAY_VALUES_MAX, .ufffd_escape_as_byte = true };
    struct json_error jerr;
    int rc = json_parse(doc, d->r->buf + l->off, l->len, &opts, &jerr);
    if (rc == 0)
        return 0;
    bool cut = l == &d->r->lines[d->r->n - 1] && d->r->last_cut;
    err_set(d->err, d->errlen, "%s:%zu: %s at column %zu: %s%s", d->r->path, d->line,
            rc == -E2BIG ? "over a limit" : "not JSON", jerr.offset + 1, jerr.msg,
            cut ? " (the last line has no newline: the recording was cut short?)" : "");
    return -EINVAL;
}

int replay_load(struct replay *r, size_t i, struct replay_frame *f, char *err, size_t errlen)
{
    if (i >= r->n) {
        err_set(err, errlen, "%s: no sample %zu (the file has %zu)", r->path, i + 1, r->n);
        return -ERANGE;
    }
    struct dec d = { .r = r, .line = r->lines[i].lineno, .err = err, .errlen = errlen };
    struct json_doc *doc;
    int rc = parse_line(&d, &r->lines[i], &doc);
    if (rc)
        return rc;
    struct replay_frame t = { .line = d.line };
    t.res.cur = &t.snap;
    rc = decode_sample(&d, json_root(doc), &t);
    json_free(doc);
    if (rc) {
        replay_frame_free(&t);
        return rc;
    }
    replay_frame_free(f);
    replay_frame_move(f, &t);
    return 0;
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
