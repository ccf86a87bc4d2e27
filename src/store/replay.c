/* SPDX-License-Identifier: GPL-2.0-or-later */
/* store/replay.c: a recording, or the recorder's files in a window, read and indexed
 * line by line; each line parsed and handed to the decoders (sample/frame.h,
 * src/sample/decode*.c) that turn it back into snapshot + result + verdicts.
 */
#include "store/replay.h"

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
#include "util.h"
#include "sample/sample.h"
#include "util/fmt.h"

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

/* ---- one sample: parsed here, decoded by sample/decode.c ---- */

static int parse_line(const struct replay *r, size_t line, const struct line_ref *l,
                      struct json_doc **doc, char *err, size_t errlen)
{
    /* \ufffd back to an invalid byte: esc_json writes the same line from it again */
    struct json_opts opts = { .max_len = REPLAY_LINE_MAX, .max_depth = JSON_DEFAULT_MAX_DEPTH,
                              .max_values = REPLAY_VALUES_MAX, .ufffd_escape_as_byte = true };
    struct json_error jerr;
    int rc = json_parse(doc, r->buf + l->off, l->len, &opts, &jerr);
    if (rc == 0)
        return 0;
    bool cut = l == &r->lines[r->n - 1] && r->last_cut;
    err_set(err, errlen, "%s:%zu: %s at column %zu: %s%s", r->path, line,
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
    size_t line = r->lines[i].lineno;
    struct json_doc *doc;
    int rc = parse_line(r, line, &r->lines[i], &doc, err, errlen);
    if (rc)
        return rc;
    struct replay_frame t = { .line = line };
    t.res.cur = &t.snap;
    rc = sample_decode(r->path, line, json_root(doc), &t, err, errlen);
    json_free(doc);
    if (rc) {
        replay_frame_free(&t);
        return rc;
    }
    replay_frame_free(f);
    replay_frame_move(f, &t);
    return 0;
}
