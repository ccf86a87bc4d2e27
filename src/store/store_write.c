/* SPDX-License-Identifier: GPL-2.0-or-later */
/* store/store_write.c: the recorder's writer (hourly zstd files of JSON lines, a frame
 * every few samples, paused while the disk is full) and retention (the oldest files
 * removed past the age and size limits). Contract in include/store/store.h; the frames'
 * checks and libzstd are store.c's (store_priv.h).
 */
#include "store/store.h"
#include "store_priv.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stddef.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <zstd.h>
#include <zstd_errors.h>

#include "util.h"

#define FRAME_SOFT_MAX   (4u << 20)   /* compressed bytes before append flushes by itself */
#define FRAME_RAW_MAX    (4u << 20)   /* line bytes before append flushes by itself */
#define RETAIN_EVERY_S   60.0

/* ---- writer ------------------------------------------------------------------------ */

struct store_writer {
    int dirfd;
    char *dir;
    struct store_opts o;
    ZSTD_CCtx *cctx;
    int fd;                      /* the hour's file, or -1 */
    double hour;                 /* its hour (epoch seconds) */
    char name[32];
    uint64_t size;               /* its size: whole frames (what we know we wrote) */
    unsigned char *buf;          /* the current frame's compressed bytes */
    size_t blen, bcap;
    size_t raw;                  /* line bytes in the current frame */
    bool frame_open;             /* samples compressed into it, frame not ended */
    bool frame_ended;            /* buf holds one whole frame not yet written */
    bool paused;
    int pause_err;
    double next_try;
    double last_retain;
    double newest;               /* the latest wall seen */
    struct store_stats st;
};

static int retain(struct store_writer *w, double now, char *err, size_t errlen);

/* Run the compressor on in (may be empty) with directive op, appending to buf. */
static int compress_into(struct store_writer *w, const void *src, size_t len,
                         ZSTD_EndDirective op, char *err, size_t errlen)
{
    ZSTD_inBuffer in = { src, len, 0 };
    for (;;) {
        if (w->bcap - w->blen < zs.CStreamOutSize()) {
            w->bcap = w->bcap ? w->bcap * 2 : 2 * zs.CStreamOutSize();
            w->buf = xrealloc(w->buf, w->bcap);
        }
        ZSTD_outBuffer out = { w->buf + w->blen, w->bcap - w->blen, 0 };
        size_t left = zs.compressStream2(w->cctx, &out, &in, op);
        w->blen += out.pos;
        if (zs.isError(left)) {
            err_set(err, errlen, "%s: zstd: %s", w->dir, zs.getErrorName(left));
            return -EIO;
        }
        if (op == ZSTD_e_continue ? in.pos == in.size : left == 0)
            return 0;
    }
}

/* Enter the paused state, or stay in it. Returns what append must return: the error on
 * the way in (to be reported once), -EAGAIN after. */
static int pause_full(struct store_writer *w, int e, double wall, char *err, size_t errlen,
                      const char *what)
{
    w->next_try = wall + w->o.retry_s;
    if (w->paused)
        return -EAGAIN;
    w->paused = true;
    w->pause_err = -e;
    err_set(err, errlen, "%s/%s: %s: %s; recording paused, retrying every %g s", w->dir,
           w->name[0] ? w->name : "", what, strerror(e), w->o.retry_s);
    return -e;
}

/* Write the ended frame in buf at the end of the file, all or nothing. */
static int write_frame(struct store_writer *w, double wall, char *err, size_t errlen)
{
    size_t done = 0;
    while (done < w->blen) {
        ssize_t k = write(w->fd, w->buf + done, w->blen - done);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0) {
            int e = k < 0 ? errno : EIO;
            /* Undo a partial frame, so that the file stays whole frames (and the space it
             * took is given back). When even that fails, the reader skips the torn bytes. */
            if (done && ftruncate(w->fd, (off_t)w->size) < 0)
                w->size += done;     /* left torn: the reader skips it, the next frame follows */
            if (is_full(e))
                return pause_full(w, e, wall, err, errlen, "write");
            err_set(err, errlen, "%s/%s: write: %s; %zu bytes of samples lost", w->dir,
                   w->name, strerror(e), w->blen);
            w->blen = 0;
            w->frame_ended = false;
            return -e;
        }
        done += (size_t)k;
    }
    w->size += w->blen;
    w->st.frames++;
    w->st.bytes += w->blen;
    w->blen = 0;
    w->frame_ended = false;
    if (w->o.fsync_each_flush && fdatasync(w->fd) < 0 && is_full(errno))
        return pause_full(w, errno, wall, err, errlen, "fdatasync");
    return 0;
}

/* A crash (or a full disk whose ftruncate failed) can leave the last frame cut short.
 * Cut it off before appending, but only when nothing after it could be read: the file is
 * cut at the end of its last frame that decodes whole, so a torn frame followed by whole
 * ones (a crash, then a restart that appended) stays, and the reader steps over it.
 * Checking a frame means decoding it: an hour of samples is a few MB of lines, decoded
 * once per restart. */
static void trim_torn_tail(struct store_writer *w)
{
    struct stat st;
    if (fstat(w->fd, &st) < 0 || st.st_size <= 0 || (uint64_t)st.st_size > STORE_FILE_MAX) {
        w->size = st.st_size > 0 ? (uint64_t)st.st_size : 0;
        return;
    }
    size_t len = (size_t)st.st_size;
    unsigned char *b = xmalloc(len);
    size_t got = 0;
    while (got < len) {
        ssize_t k = pread(w->fd, b + got, len - got, (off_t)got);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            break;
        got += (size_t)k;
    }
    w->size = len;
    ZSTD_DCtx *dctx = got == len ? zs.createDCtx() : NULL;
    if (dctx) {
        size_t end = readable_end(dctx, b, len);
        if (end < len && ftruncate(w->fd, (off_t)end) == 0)
            w->size = end;
        zs.freeDCtx(dctx);
    }
    free(b);
}

static void close_file(struct store_writer *w)
{
    if (w->fd < 0)
        return;
    fdatasync(w->fd);
    close(w->fd);
    w->fd = -1;
    w->name[0] = '\0';
}

static int open_hour(struct store_writer *w, double wall, char *err, size_t errlen)
{
    char name[32];
    if (store_file_name(name, sizeof(name), wall) < 0) {
        err_set(err, errlen, "%s: sample time %.3f out of range", w->dir, wall);
        return -ERANGE;
    }
    /* O_NOFOLLOW: a symlink planted under our name is refused, never written through. */
    int fd = openat(w->dirfd, name, O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0640);
    if (fd < 0) {
        int e = errno;
        str_copy(w->name, name, sizeof(w->name));
        if (is_full(e)) {
            int rc = pause_full(w, e, wall, err, errlen, "create");
            w->name[0] = '\0';
            return rc;
        }
        err_set(err, errlen, "%s/%s: %s", w->dir, name, strerror(e));
        w->name[0] = '\0';
        return -e;
    }
    struct stat st;
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        err_set(err, errlen, "%s/%s: not a regular file", w->dir, name);
        return -EEXIST;
    }
    w->fd = fd;
    str_copy(w->name, name, sizeof(w->name));
    w->hour = floor(wall / 3600.0) * 3600.0;
    trim_torn_tail(w);
    return 0;
}

int store_open_writer(struct store_writer **out, const char *dir, const struct store_opts *o,
                      char *err, size_t errlen)
{
    *out = NULL;
    int lrc = zstd_load(err, errlen);
    if (lrc < 0)
        return lrc;
    if (mkdir(dir, 0750) < 0 && errno != EEXIST) {
        int e = errno;
        err_set(err, errlen, "%s: mkdir: %s", dir, strerror(e));
        return -e;
    }
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0) {
        int e = errno;
        err_set(err, errlen, "%s: %s", dir, strerror(e));
        return -e;
    }
    /* One writer per directory: two would append to the same hour, and one's undo of a
     * failed write (ftruncate) could cut the other's frames. The lock is on the directory
     * itself, so no file of another name is needed; it goes with the process. */
    if (flock(dfd, LOCK_EX | LOCK_NB) < 0) {
        int e = errno;
        close(dfd);
        if (e == EWOULDBLOCK) {
            err_set(err, errlen, "%s: another recorder writes to this directory", dir);
            return -EBUSY;
        }
        err_set(err, errlen, "%s: flock: %s", dir, strerror(e));
        return -e;
    }
    struct store_writer *w = xcalloc(1, sizeof(*w));
    w->dirfd = dfd;
    w->dir = xstrdup(dir);
    w->o = o ? *o : (struct store_opts){ 0 };
    if (w->o.level == 0)
        w->o.level = 3;
    if (w->o.level > 19) {
        /* The ultra levels trade a lot of memory for a little ratio; nothing to gain here. */
        err_set(err, errlen, "zstd level %d: at most 19", w->o.level);
        close(dfd);
        free(w->dir);
        free(w);
        return -EINVAL;
    }
    if (!(w->o.retry_s > 0))
        w->o.retry_s = 10;
    w->fd = -1;
    w->last_retain = -(double)INFINITY;
    w->newest = -(double)INFINITY;
    w->cctx = zs.createCCtx();
    if (!w->cctx) {
        fputs("iotriage: out of memory\n", stderr);
        abort();
    }
    size_t r1 = zs.CCtx_setParameter(w->cctx, ZSTD_c_compressionLevel, w->o.level);
    size_t r2 = zs.CCtx_setParameter(w->cctx, ZSTD_c_checksumFlag, 1);
    if (zs.isError(r1) || zs.isError(r2)) {
        err_set(err, errlen, "zstd level %d: %s", w->o.level,
               zs.getErrorName(zs.isError(r1) ? r1 : r2));
        store_close(w, NULL, 0);
        return -EINVAL;
    }
    /* The directory must be listable for retention: find out now, not at the first
     * rollover. Retention itself waits for the first sample's wall: the writer's clock
     * is the samples' clock. */
    DIR *d = opendir_at(dfd, ".");
    if (!d) {
        int e = errno;
        err_set(err, errlen, "%s: %s", dir, strerror(e));
        store_close(w, NULL, 0);
        return -e;
    }
    closedir(d);
    *out = w;
    return 0;
}

static int flush_frame(struct store_writer *w, double wall, char *err, size_t errlen)
{
    if (w->frame_open) {
        int rc = compress_into(w, "", 0, ZSTD_e_end, err, errlen);
        if (rc < 0)
            return rc;
        w->frame_open = false;
        w->frame_ended = true;
        w->raw = 0;
    }
    if (!w->frame_ended || w->fd < 0)
        return 0;
    return write_frame(w, wall, err, errlen);
}

/* Paused: is it time to try again, and does it work? 0 when writing may go on. */
static int try_resume(struct store_writer *w, double wall, char *err, size_t errlen, bool force)
{
    if (!w->paused)
        return 0;
    if (!force && wall < w->next_try)
        return -EAGAIN;
    w->next_try = wall + w->o.retry_s;
    int rc = flush_frame(w, wall, err, errlen);
    if (rc < 0)
        return rc == -EAGAIN || is_full(-rc) ? -EAGAIN : rc;
    w->paused = false;
    w->pause_err = 0;
    return 0;
}

int store_append(struct store_writer *w, double wall, const char *line, size_t len,
                 char *err, size_t errlen)
{
    if (len && line[len - 1] == '\n')
        len--;
    if (len == 0 || memchr(line, '\n', len)) {
        err_set(err, errlen, "%s: a sample must be one non-empty line", w->dir);
        return -EINVAL;
    }
    if (len > STORE_LINE_MAX) {
        err_set(err, errlen, "%s: a sample of %zu bytes is over %u", w->dir, len, STORE_LINE_MAX);
        return -E2BIG;
    }
    if (!isfinite(wall) || wall < 0) {
        err_set(err, errlen, "%s: sample time is not a time", w->dir);
        return -ERANGE;
    }
    int rc = try_resume(w, wall, err, errlen, false);
    if (rc < 0) {
        w->st.dropped++;
        return rc;
    }
    if (wall > w->newest)
        w->newest = wall;
    double hour = floor(wall / 3600.0) * 3600.0;
    if (w->fd < 0 || hour != w->hour) {
        bool had = w->fd >= 0;
        rc = flush_frame(w, wall, err, errlen);
        if (rc < 0) {
            w->st.dropped++;
            return rc;
        }
        close_file(w);
        rc = open_hour(w, wall, err, errlen);
        if (rc < 0) {
            w->st.dropped++;
            return rc;
        }
        if (had || isinf(w->last_retain))
            retain(w, wall, NULL, 0);
    }
    rc = compress_into(w, line, len, ZSTD_e_continue, err, errlen);
    if (rc == 0)
        rc = compress_into(w, "\n", 1, ZSTD_e_continue, err, errlen);
    if (rc < 0) {
        /* The compressor's state is unknown now: drop the frame and start a new one. */
        zs.CCtx_reset(w->cctx, ZSTD_reset_session_only);
        w->blen = 0;
        w->raw = 0;
        w->frame_open = false;
        w->st.dropped++;
        return rc;
    }
    w->frame_open = true;
    w->raw += len + 1;
    w->st.appended++;
    if (w->blen >= FRAME_SOFT_MAX || w->raw >= FRAME_RAW_MAX) {
        rc = flush_frame(w, wall, err, errlen);
        if (rc < 0)
            return rc;     /* the sample is in the kept frame: not dropped */
    }
    return 0;
}

int store_flush(struct store_writer *w, double wall, char *err, size_t errlen)
{
    if (w->paused)
        return try_resume(w, wall, err, errlen, false);
    int rc = flush_frame(w, wall, err, errlen);
    if (rc == 0 && wall - w->last_retain >= RETAIN_EVERY_S)
        retain(w, wall, NULL, 0);
    return rc;
}

int store_retry(struct store_writer *w, double wall, char *err, size_t errlen)
{
    return try_resume(w, wall, err, errlen, true);
}

void store_writer_stats(const struct store_writer *w, struct store_stats *st)
{
    *st = w->st;
    st->paused = w->paused;
    st->pause_err = w->pause_err;
}

int store_close(struct store_writer *w, char *err, size_t errlen)
{
    if (!w)
        return 0;
    int rc = 0;
    if (w->fd >= 0) {
        rc = flush_frame(w, w->newest > 0 ? w->newest : clock_wall(), err, errlen);
        if (rc == -EAGAIN || (rc < 0 && w->frame_ended)) {
            rc = w->pause_err ? w->pause_err : -ENOSPC;
            err_set(err, errlen, "%s/%s: %s: %zu bytes of samples kept in memory are lost",
                   w->dir, w->name, strerror(-rc), w->blen);
        }
        if (rc == 0 && fdatasync(w->fd) < 0) {
            rc = -errno;
            err_set(err, errlen, "%s/%s: fdatasync: %s", w->dir, w->name, strerror(-rc));
        }
        close(w->fd);
    }
    if (w->dirfd >= 0)
        close(w->dirfd);
    zs.freeCCtx(w->cctx);
    free(w->buf);
    free(w->dir);
    free(w);
    return rc;
}

/* ---- retention --------------------------------------------------------------------- */

struct own_file {
    char name[32];
    double hour;
    uint64_t size;
};

static int own_cmp(const void *a, const void *b)
{
    const struct own_file *x = a, *y = b;
    return (x->hour > y->hour) - (x->hour < y->hour);
}

/* The recorder's own files in dirfd: names that match exactly, regular files only (lstat:
 * a symlink is not ours even when it points at one of ours). Sorted oldest first. */
static int list_own(int dirfd, struct own_file **out, size_t *n)
{
    *out = NULL;
    *n = 0;
    DIR *d = opendir_at(dirfd, ".");
    if (!d)
        return -errno;
    size_t cap = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        double hour;
        if (!store_name_parse(de->d_name, &hour))
            continue;
        struct stat st;
        if (fstatat(dirfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(st.st_mode))
            continue;
        if (*n == cap) {
            cap = cap ? cap * 2 : 64;
            *out = xreallocarray(*out, cap, sizeof(**out));
        }
        struct own_file *f = &(*out)[(*n)++];
        str_copy(f->name, de->d_name, sizeof(f->name));
        f->hour = hour;
        f->size = (uint64_t)st.st_size;
    }
    closedir(d);
    if (*n)
        qsort(*out, *n, sizeof(**out), own_cmp);
    return 0;
}

static int retain(struct store_writer *w, double now, char *err, size_t errlen)
{
    w->last_retain = now;
    if (!(w->o.max_age_s > 0) && w->o.max_bytes == 0)
        return 0;
    struct own_file *f;
    size_t n;
    int rc = list_own(w->dirfd, &f, &n);
    if (rc < 0) {
        err_set(err, errlen, "%s: %s", w->dir, strerror(-rc));
        return rc;
    }
    uint64_t total = 0;
    for (size_t i = 0; i < n; i++)
        total += f[i].size;
    int deleted = 0;
    for (size_t i = 0; i < n; i++) {
        if (strcmp(f[i].name, w->name) == 0)
            continue;                        /* never the file being written */
        bool old = w->o.max_age_s > 0 && f[i].hour + 3600.0 + w->o.max_age_s < now;
        bool big = w->o.max_bytes && total > w->o.max_bytes;
        if (!old && !big)
            continue;
        if (unlinkat(w->dirfd, f[i].name, 0) == 0 || errno == ENOENT) {
            total -= f[i].size;
            deleted++;
            w->st.deleted++;
        }
    }
    free(f);
    return deleted;
}

int store_retain(struct store_writer *w, double wall, char *err, size_t errlen)
{
    return retain(w, wall, err, errlen);
}
