/* SPDX-License-Identifier: GPL-2.0-or-later */
/* store/store.c: hourly zstd files of JSON lines; contract in include/store/store.h.
 *
 * Why zstd: at a low level it compresses these repetitive JSON lines about as well as
 * gzip -6 at several times the speed, and its frame format gives what crash safety needs:
 * frames are independent, concatenated frames are one valid stream (`zstd -dc` reads a
 * whole file), each frame can carry a checksum, and the compressed size of a frame is
 * found from its block headers without decoding it.
 */
#include "store/store.h"

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

/* libzstd is loaded with dlopen when a writer opens (`iotriage record`) or
 * a reader meets its first zstd frame (--replay of a store, the quiet-time baselines of
 * a machine the recorder watches): linked, it was mapped and relocated by every run,
 * about 280 KB of resident memory in runs that never touch a store (docs/performance.md).
 * The pointers keep the library's own prototypes. */
#define ZSTD_SONAME "libzstd.so.1"
static struct {
    void *lib;
    __typeof__(ZSTD_CCtx_reset) *CCtx_reset;
    __typeof__(ZSTD_CCtx_setParameter) *CCtx_setParameter;
    __typeof__(ZSTD_CStreamOutSize) *CStreamOutSize;
    __typeof__(ZSTD_compressStream2) *compressStream2;
    __typeof__(ZSTD_createCCtx) *createCCtx;
    __typeof__(ZSTD_createDCtx) *createDCtx;
    __typeof__(ZSTD_decompressDCtx) *decompressDCtx;
    __typeof__(ZSTD_findFrameCompressedSize) *findFrameCompressedSize;
    __typeof__(ZSTD_freeCCtx) *freeCCtx;
    __typeof__(ZSTD_freeDCtx) *freeDCtx;
    __typeof__(ZSTD_getErrorCode) *getErrorCode;
    __typeof__(ZSTD_getErrorName) *getErrorName;
    __typeof__(ZSTD_isError) *isError;
} zs;

static int zstd_load(char *err, size_t errlen)
{
    static const struct dl_sym syms[] = {
        { "ZSTD_CCtx_reset", offsetof(__typeof__(zs), CCtx_reset) },
        { "ZSTD_CCtx_setParameter", offsetof(__typeof__(zs), CCtx_setParameter) },
        { "ZSTD_CStreamOutSize", offsetof(__typeof__(zs), CStreamOutSize) },
        { "ZSTD_compressStream2", offsetof(__typeof__(zs), compressStream2) },
        { "ZSTD_createCCtx", offsetof(__typeof__(zs), createCCtx) },
        { "ZSTD_createDCtx", offsetof(__typeof__(zs), createDCtx) },
        { "ZSTD_decompressDCtx", offsetof(__typeof__(zs), decompressDCtx) },
        { "ZSTD_findFrameCompressedSize", offsetof(__typeof__(zs), findFrameCompressedSize) },
        { "ZSTD_freeCCtx", offsetof(__typeof__(zs), freeCCtx) },
        { "ZSTD_freeDCtx", offsetof(__typeof__(zs), freeDCtx) },
        { "ZSTD_getErrorCode", offsetof(__typeof__(zs), getErrorCode) },
        { "ZSTD_getErrorName", offsetof(__typeof__(zs), getErrorName) },
        { "ZSTD_isError", offsetof(__typeof__(zs), isError) },
    };
    int rc = 0;
    if (!zs.lib)
        zs.lib = dl_load(ZSTD_SONAME, "the store", "libzstd1", &zs, sizeof(zs), syms,
                         sizeof(syms) / sizeof(syms[0]), &rc, err, errlen);
    return rc;
}

#define FRAME_SOFT_MAX   (4u << 20)   /* compressed bytes before append flushes by itself */
#define FRAME_RAW_MAX    (4u << 20)   /* line bytes before append flushes by itself */
#define RETAIN_EVERY_S   60.0

static bool is_full(int e)
{
    return e == ENOSPC || e == EDQUOT;
}

/* ---- names ------------------------------------------------------------------------- */

int store_file_name(char *buf, size_t n, double wall)
{
    if (!isfinite(wall) || wall < 0 || wall > 253402300799.0)   /* year 9999 */
        return -ERANGE;
    time_t t = (time_t)wall;
    struct tm tm;
    if (!gmtime_r(&t, &tm))
        return -ERANGE;
    int k = snprintf(buf, n, "%04d-%02d-%02dT%02d" STORE_SUFFIX, tm.tm_year + 1900,
                     tm.tm_mon + 1, tm.tm_mday, tm.tm_hour);
    return k > 0 && (size_t)k < n ? 0 : -ERANGE;
}

static bool digits(const char *s, int n, int *out)
{
    int v = 0;
    for (int i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return false;
        v = v * 10 + (s[i] - '0');
    }
    *out = v;
    return true;
}

static bool leap(int y)
{
    return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

static int mdays(int y, int m)
{
    static const int d[] = { 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };
    return m == 2 && leap(y) ? 29 : d[m - 1];
}

/* Days from 1970-01-01 to y-m-d (proleptic Gregorian), without the C library's time zone. */
static long days_from_civil(int y, int m, int d)
{
    y -= m <= 2;
    long era = (y >= 0 ? y : y - 399) / 400;
    long yoe = y - era * 400;
    long doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    long doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

bool store_name_parse(const char *name, double *hour)
{
    /* Exactly "YYYY-MM-DDTHH" STORE_SUFFIX: nothing before, nothing after. */
    size_t sl = strlen(STORE_SUFFIX);
    if (strlen(name) != 13 + sl || strcmp(name + 13, STORE_SUFFIX) != 0)
        return false;
    int y, mo, d, h;
    if (!digits(name, 4, &y) || name[4] != '-' || !digits(name + 5, 2, &mo) ||
        name[7] != '-' || !digits(name + 8, 2, &d) || name[10] != 'T' ||
        !digits(name + 11, 2, &h))
        return false;
    if (y < 1970 || mo < 1 || mo > 12 || d < 1 || d > mdays(y, mo) || h > 23)
        return false;
    if (hour)
        *hour = (double)(days_from_civil(y, mo, d) * 86400L + h * 3600L);
    return true;
}

/* ---- frames ------------------------------------------------------------------------ */

static const unsigned char zmagic[4] = { 0x28, 0xb5, 0x2f, 0xfd };

static bool is_skippable(const unsigned char *p)
{
    uint32_t m = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
    return (m & 0xFFFFFFF0u) == ZSTD_MAGIC_SKIPPABLE_START;
}

/* What frame_check found at a frame start. */
struct frame_info {
    size_t n;                    /* its compressed length (when it has one) */
    size_t dlen;                 /* its decoded length, in the buffer */
    bool skip;                   /* a whole skippable frame: nothing to decode */
    bool unsure;                 /* whole by its block headers but not decoded here: over
                                  * STORE_FRAME_MAX, or no memory for it */
    char why[160];
};

/* Check the frame at p (left bytes to the end of the file) by decoding it whole into *buf
 * (grown up to STORE_FRAME_MAX) and checking its checksum. Returns NULL when it decoded,
 * else what is wrong with it. Its length from the block headers alone is not enough: the
 * headers of a frame cut short by a crash go on into whatever follows it (the next
 * frame), and can "end" anywhere in there.
 *
 * One-shot decoding straight into buf: no window buffer to allocate (the frame header's
 * window size is the writer's word, or an attacker's). The decoded size is not in our
 * frames' headers: buf grows and the frame is decoded again when it was too small (rare:
 * the buffer keeps its size). */
static const char *frame_check(ZSTD_DCtx *dctx, const unsigned char *p, size_t left,
                               char **buf, size_t *cap, struct frame_info *fi)
{
    memset(fi, 0, sizeof(*fi));
    if (left >= 8 && is_skippable(p)) {
        uint64_t sz = (uint64_t)p[4] | (uint64_t)p[5] << 8 | (uint64_t)p[6] << 16 |
                      (uint64_t)p[7] << 24;
        if (sz > left - 8)
            return "skippable frame cut short";
        fi->n = 8 + (size_t)sz;
        fi->skip = true;
        return NULL;
    }
    if (left < 4 || memcmp(p, zmagic, 4) != 0)
        return "not a zstd frame";
    size_t n = zs.findFrameCompressedSize(p, left);
    if (zs.isError(n))
        return zs.getErrorCode(n) == ZSTD_error_srcSize_wrong ? "frame cut short"
                                                               : zs.getErrorName(n);
    fi->n = n;
    if (!*cap) {
        *cap = 1u << 20;
        *buf = xmalloc(*cap);
    }
    for (;;) {
        size_t ret = zs.decompressDCtx(dctx, *buf, *cap, p, n);
        if (!zs.isError(ret)) {
            fi->dlen = ret;
            return NULL;
        }
        ZSTD_ErrorCode code = zs.getErrorCode(ret);
        if (code == ZSTD_error_dstSize_tooSmall && *cap < STORE_FRAME_MAX) {
            *cap *= 2;
            *buf = xrealloc(*buf, *cap);
            continue;
        }
        if (code == ZSTD_error_dstSize_tooSmall) {
            fi->unsure = true;
            snprintf(fi->why, sizeof(fi->why), "frame decodes to more than %u bytes",
                     STORE_FRAME_MAX);
            return fi->why;
        }
        if (code == ZSTD_error_memory_allocation)
            fi->unsure = true;
        if (code == ZSTD_error_checksum_wrong)
            return "checksum mismatch (frame corrupted)";
        return zs.getErrorName(ret);
    }
}

/* Where what a reader can read of the file b ends: the end of its last frame that
 * decodes whole, 0 when none does. The walk goes over the frames as the reader does:
 * after a frame that does not decode, on from the next frame magic (a false one fails its
 * own decoding), so that a torn frame in the middle of the file is stepped over, never
 * taken for its end. A frame too big to check here counts as readable. */
static size_t readable_end(ZSTD_DCtx *dctx, const unsigned char *b, size_t len)
{
    char *dbuf = NULL;
    size_t dcap = 0, off = 0, end = 0;
    while (off < len) {
        struct frame_info fi;
        const char *what = frame_check(dctx, b + off, len - off, &dbuf, &dcap, &fi);
        if (!what || fi.unsure) {
            off += fi.n;
            end = off;
            continue;
        }
        const unsigned char *m = len - off > 1 ? memmem(b + off + 1, len - off - 1, zmagic, 4)
                                               : NULL;
        if (!m)
            break;
        off = (size_t)(m - b);
    }
    free(dbuf);
    return end;
}

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

/* ---- reader ------------------------------------------------------------------------ */

struct store_reader {
    char **files;
    double *hours;               /* per file: its hour from the name, or NAN */
    size_t nfiles;
    size_t next_file;            /* the file to load when this one is done */
    size_t cur_file;             /* the loaded file's index (valid when loaded) */
    bool loaded;
    unsigned char *fbuf;         /* the loaded file */
    size_t flen;
    bool zst;
    size_t foff;                 /* zst: the next frame's offset */
    char *dbuf;                  /* the decoded frame */
    size_t dcap;
    const char *lines;           /* the bytes lines are taken from: dbuf or fbuf */
    size_t llen, loff;
    uint64_t frame_off;          /* file offset of the frame lines come from */
    ZSTD_DCtx *dctx;
    bool have_line;              /* store_seek found this one: returned next */
    struct store_line line;
    /* Damages store_seek met, returned first, in order: the first STORE_PEND_MAX with
     * their text, then one line that counts the rest. */
    struct pend { int rc; char *msg; } *pend;
    size_t npend, pend_next;
    size_t pend_more;
    struct store_stats st;
};

#define STORE_PEND_MAX 64

static void pend_clear(struct store_reader *r)
{
    for (size_t i = 0; i < r->npend; i++)
        free(r->pend[i].msg);
    free(r->pend);
    r->pend = NULL;
    r->npend = r->pend_next = r->pend_more = 0;
}

static void pend_add(struct store_reader *r, int rc, const char *msg)
{
    if (r->npend == STORE_PEND_MAX) {
        r->pend_more++;
        return;
    }
    if (!r->pend)
        r->pend = xcalloc(STORE_PEND_MAX, sizeof(*r->pend));
    r->pend[r->npend++] = (struct pend){ rc, xstrdup(msg) };
}

/* The next damage store_seek kept, if any: its return code, with its text in err. */
static int pend_take(struct store_reader *r, char *err, size_t errlen)
{
    if (r->pend_next < r->npend) {
        struct pend *d = &r->pend[r->pend_next++];
        err_set(err, errlen, "%s", d->msg);
        return d->rc;
    }
    if (r->pend_more) {
        err_set(err, errlen, "%zu more damages met before the sample sought (not listed)",
                r->pend_more);
        pend_clear(r);
        return -EBADMSG;
    }
    if (r->pend)
        pend_clear(r);
    return 0;
}

static void unload(struct store_reader *r)
{
    free(r->fbuf);
    r->fbuf = NULL;
    r->flen = 0;
    r->loaded = false;
    r->lines = NULL;
    r->llen = r->loff = 0;
    r->foff = 0;
}

static int read_all(const char *path, unsigned char **out, size_t *len, char *err, size_t errlen)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        int e = errno;
        err_set(err, errlen, "%s: %s", path, strerror(e));
        return -e;
    }
    struct stat st;
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        err_set(err, errlen, "%s: not a regular file", path);
        return -EINVAL;
    }
    if ((uint64_t)st.st_size > STORE_FILE_MAX) {
        close(fd);
        err_set(err, errlen, "%s: larger than %llu bytes", path, (unsigned long long)STORE_FILE_MAX);
        return -EFBIG;
    }
    /* Read to the end, not to st_size: the file may be growing (the recorder's hour). */
    size_t cap = (size_t)st.st_size + 1, n = 0;
    unsigned char *b = xmalloc(cap);
    for (;;) {
        if (n == cap) {
            if (cap >= STORE_FILE_MAX)
                break;
            cap *= 2;
            b = xrealloc(b, cap);
        }
        ssize_t k = read(fd, b + n, cap - n);
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0) {
            int e = errno;
            free(b);
            close(fd);
            err_set(err, errlen, "%s: read: %s", path, strerror(e));
            return -e;
        }
        if (k == 0)
            break;
        n += (size_t)k;
    }
    close(fd);
    *out = b;
    *len = n;
    return 0;
}

static int load_next_file(struct store_reader *r, char *err, size_t errlen)
{
    unload(r);
    size_t i = r->next_file++;
    int rc = read_all(r->files[i], &r->fbuf, &r->flen, err, errlen);
    if (rc < 0) {
        r->st.damages++;
        return rc;
    }
    r->cur_file = i;
    r->loaded = true;
    /* A .zst by name is zstd whatever its first bytes (garbage there is a damage, not a
     * plain recording); any other file is zstd when it starts like one. */
    size_t pl = strlen(r->files[i]), sl = strlen(".zst");
    r->zst = (pl >= sl && strcmp(r->files[i] + pl - sl, ".zst") == 0) ||
             (r->flen >= 4 && (memcmp(r->fbuf, zmagic, 4) == 0 || is_skippable(r->fbuf)));
    if (!r->zst) {
        r->lines = (const char *)r->fbuf;
        r->llen = r->flen;
        r->frame_off = 0;
    }
    return 0;
}

static int damage(struct store_reader *r, uint64_t off, const char *what, char *err, size_t errlen)
{
    r->st.damages++;
    err_set(err, errlen, "%s: damaged at byte %llu: %s", r->files[r->cur_file],
           (unsigned long long)off, what);
    return -EBADMSG;
}

/* Decode the frame at foff into dbuf: 1 lines ready, 0 skipped (skippable frame), or a
 * damage (foff moved to the next frame start found after it). */
static int decode_frame(struct store_reader *r, char *err, size_t errlen)
{
    if (!r->dctx) {                  /* the first frame: libzstd and a decoder now */
        int rc = zstd_load(err, errlen);
        if (rc < 0)
            return rc;
        r->dctx = zs.createDCtx();
        if (!r->dctx) {
            fputs("iotriage: out of memory\n", stderr);
            abort();
        }
    }
    size_t off = r->foff, left = r->flen - off;
    const unsigned char *p = r->fbuf + off;
    struct frame_info fi;
    const char *what = frame_check(r->dctx, p, left, &r->dbuf, &r->dcap, &fi);
    if (what) {
        /* Resynchronise on the next frame magic; a false match fails its own decode. */
        const unsigned char *m = left > 1 ? memmem(p + 1, left - 1, zmagic, 4) : NULL;
        r->foff = m ? (size_t)(m - r->fbuf) : r->flen;
        return damage(r, off, what, err, errlen);
    }
    if (fi.skip) {
        r->foff += fi.n;
        return 0;
    }
    r->foff = off + fi.n;
    r->frame_off = off;
    r->lines = r->dbuf;
    r->llen = fi.dlen;
    r->loff = 0;
    return 1;
}

/* The `ts` of a sample line, from its first bytes (sample_write writes it second). */
static double line_ts(const char *s, size_t len)
{
    size_t lim = len < 256 ? len : 256;
    const char *k = memmem(s, lim, "\"ts\":", 5);
    if (!k)
        return (double)NAN;
    k += 5;
    size_t left = (size_t)(s + len - k);
    char num[48];
    size_t i = 0;
    while (i < left && i < sizeof(num) - 1 && (isdigit((unsigned char)k[i]) || k[i] == '.' ||
                                               k[i] == '-' || k[i] == 'e' || k[i] == 'E' || k[i] == '+'))
        num[i] = k[i], i++;
    num[i] = '\0';
    if (!i)
        return (double)NAN;
    char *end;
    double v = strtod(num, &end);
    return *end == '\0' && isfinite(v) ? v : (double)NAN;
}

static bool blank(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r')
            return false;
    return true;
}

static int next_raw(struct store_reader *r, struct store_line *l, char *err, size_t errlen)
{
    for (;;) {
        while (r->lines && r->loff < r->llen) {
            const char *s = r->lines + r->loff;
            size_t left = r->llen - r->loff;
            const char *nl = memchr(s, '\n', left);
            uint64_t lineoff = r->zst ? r->frame_off : r->loff;
            if (!nl) {
                r->loff = r->llen;
                return damage(r, r->zst ? r->frame_off : lineoff,
                              r->zst ? "frame ends inside a line" : "last line cut short (no newline)",
                              err, errlen);
            }
            size_t n = (size_t)(nl - s);
            r->loff += n + 1;
            if (blank(s, n))
                continue;
            l->pos = (struct store_pos){ r->cur_file, r->zst ? r->frame_off : 0,
                                         (size_t)(s - r->lines) };
            l->text = s;
            l->len = n;
            l->ts = line_ts(s, n);
            l->file = r->files[r->cur_file];
            l->offset = lineoff;
            return 1;
        }
        r->lines = NULL;
        if (r->loaded && r->zst && r->foff < r->flen) {
            int rc = decode_frame(r, err, errlen);
            if (rc < 0)
                return rc;
            continue;
        }
        if (r->next_file >= r->nfiles) {
            unload(r);
            return 0;
        }
        int rc = load_next_file(r, err, errlen);
        if (rc < 0)
            return rc;
    }
}

int store_next(struct store_reader *r, struct store_line *l, char *err, size_t errlen)
{
    int prc = pend_take(r, err, errlen);
    if (prc < 0)
        return prc;
    if (r->have_line) {
        r->have_line = false;
        *l = r->line;
        return 1;
    }
    return next_raw(r, l, err, errlen);
}

int store_seek(struct store_reader *r, double wall)
{
    r->have_line = false;
    pend_clear(r);
    size_t start = 0;
    for (size_t i = 0; i < r->nfiles; i++)
        if (!isnan(r->hours[i]) && r->hours[i] <= wall)
            start = i;
    unload(r);
    r->next_file = start;
    char err[512];
    for (;;) {
        struct store_line l;
        int rc = next_raw(r, &l, err, sizeof(err));
        if (rc == 0)
            return -ENOENT;
        if (rc < 0) {
            pend_add(r, rc, err);
            continue;
        }
        if (!isnan(l.ts) && l.ts >= wall) {
            r->line = l;
            r->have_line = true;
            return 0;
        }
    }
}

int store_goto(struct store_reader *r, const struct store_pos *pos, char *err, size_t errlen)
{
    r->have_line = false;
    pend_clear(r);
    if (pos->file >= r->nfiles) {
        err_set(err, errlen, "no file %zu in the recording", pos->file);
        return -ERANGE;
    }
    if (!r->loaded || r->cur_file != pos->file) {
        unload(r);
        r->next_file = pos->file;
        int rc = load_next_file(r, err, errlen);
        if (rc < 0)
            return rc;
    }
    if (r->zst) {
        if (pos->frame >= r->flen) {
            err_set(err, errlen, "%s: no frame at byte %llu", r->files[pos->file],
                   (unsigned long long)pos->frame);
            return -ERANGE;
        }
        if (!(r->lines && r->frame_off == pos->frame && r->lines == r->dbuf)) {
            r->foff = (size_t)pos->frame;
            int rc = decode_frame(r, err, errlen);
            if (rc < 0)
                return rc;
            if (rc == 0) {
                err_set(err, errlen, "%s: no frame at byte %llu", r->files[pos->file],
                       (unsigned long long)pos->frame);
                return -ERANGE;
            }
        }
    } else {
        r->lines = (const char *)r->fbuf;
        r->llen = r->flen;
    }
    if (pos->line >= r->llen) {
        err_set(err, errlen, "%s: no line at %zu", r->files[pos->file], pos->line);
        return -ERANGE;
    }
    r->loff = pos->line;
    return 0;
}

static int name_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int store_open_reader(struct store_reader **out, const char *path, char *err, size_t errlen)
{
    *out = NULL;
    struct stat st;
    if (stat(path, &st) < 0) {
        int e = errno;
        err_set(err, errlen, "%s: %s", path, strerror(e));
        return -e;
    }
    struct store_reader *r = xcalloc(1, sizeof(*r));
    if (S_ISDIR(st.st_mode)) {
        int dfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        DIR *d = dfd >= 0 ? fdopendir(dfd) : NULL;
        if (!d) {
            int e = errno;
            if (dfd >= 0)
                close(dfd);
            free(r);
            err_set(err, errlen, "%s: %s", path, strerror(e));
            return -e;
        }
        size_t cap = 0;
        struct dirent *de;
        char **names = NULL;
        while ((de = readdir(d))) {
            struct stat fs;
            if (!store_name_parse(de->d_name, NULL) ||
                fstatat(dfd, de->d_name, &fs, AT_SYMLINK_NOFOLLOW) < 0 ||
                !S_ISREG(fs.st_mode))
                continue;
            if (r->nfiles == cap) {
                cap = cap ? cap * 2 : 64;
                names = xreallocarray(names, cap, sizeof(*names));
            }
            names[r->nfiles++] = xstrdup(de->d_name);
        }
        closedir(d);
        if (r->nfiles)
            qsort(names, r->nfiles, sizeof(*names), name_cmp);
        r->files = xcalloc(r->nfiles ? r->nfiles : 1, sizeof(*r->files));
        r->hours = xcalloc(r->nfiles ? r->nfiles : 1, sizeof(*r->hours));
        size_t pl = strlen(path);
        for (size_t i = 0; i < r->nfiles; i++) {
            size_t nl = strlen(names[i]);
            r->files[i] = xmalloc(pl + nl + 2);
            memcpy(r->files[i], path, pl);
            r->files[i][pl] = '/';
            memcpy(r->files[i] + pl + 1, names[i], nl + 1);
            store_name_parse(names[i], &r->hours[i]);
            free(names[i]);
        }
        free(names);
    } else {
        r->nfiles = 1;
        r->files = xcalloc(1, sizeof(*r->files));
        r->hours = xcalloc(1, sizeof(*r->hours));
        r->files[0] = xstrdup(path);
        r->hours[0] = (double)NAN;   /* a lone file: seek scans it from its start */
    }
    *out = r;                        /* the decoder comes with the first frame (decode_frame) */
    return 0;
}

size_t store_reader_files(const struct store_reader *r)
{
    return r->nfiles;
}

const char *store_reader_file(const struct store_reader *r, size_t i)
{
    return i < r->nfiles ? r->files[i] : NULL;
}

void store_reader_stats(const struct store_reader *r, struct store_stats *st)
{
    *st = r->st;
}

void store_close_reader(struct store_reader *r)
{
    if (!r)
        return;
    unload(r);
    pend_clear(r);
    for (size_t i = 0; i < r->nfiles; i++)
        free(r->files[i]);
    free(r->files);
    free(r->hours);
    free(r->dbuf);
    if (r->dctx)
        zs.freeDCtx(r->dctx);
    free(r);
}

/* ---- time for the CLI -------------------------------------------------------------- */

/* Fixed-width digits at *p, advancing; false when not all digits. */
static bool take(const char **p, int n, int *out)
{
    if (!digits(*p, n, out))
        return false;
    *p += n;
    return true;
}

/* Local broken-down time -> epoch, refusing times that do not exist (a DST gap) or that
 * mktime had to normalise (February 30th). */
static int local_epoch(int y, int mo, int d, int h, int mi, int s, double *out)
{
    if (mo < 1 || mo > 12 || d < 1 || d > mdays(y, mo) || h > 23 || mi > 59 || s > 60)
        return -EINVAL;
    struct tm tm = { .tm_year = y - 1900, .tm_mon = mo - 1, .tm_mday = d,
                     .tm_hour = h, .tm_min = mi, .tm_sec = s, .tm_isdst = -1 };
    time_t t = mktime(&tm);
    if (t == (time_t)-1 && !(tm.tm_year == 69 && tm.tm_mon == 11 && tm.tm_mday == 31))
        return -EINVAL;
    if (tm.tm_year != y - 1900 || tm.tm_mon != mo - 1 || tm.tm_mday != d ||
        tm.tm_hour != h || tm.tm_min != mi)
        return -EINVAL;
    *out = (double)t;
    return 0;
}

/* "HH:MM" or "HH:MM:SS" at p, to the end of the string. */
static bool clock_part(const char *p, int *h, int *mi, int *s)
{
    *s = 0;
    if (!take(&p, 2, h) || *p++ != ':' || !take(&p, 2, mi))
        return false;
    if (*p == ':') {
        p++;
        if (!take(&p, 2, s))
            return false;
    }
    return *p == '\0';
}

int store_parse_time(const char *s, double now, double *out)
{
    if (!s || !isfinite(now))
        return -EINVAL;
    if (strcmp(s, "now") == 0) {
        *out = now;
        return 0;
    }
    if (s[0] == '@') {
        const char *p = s + 1;
        double v;
        if (!*p || parse_udouble(&p, p + strlen(p), &v) < 0 || *p)
            return -EINVAL;
        *out = v;
        return 0;
    }
    if (s[0] == '-') {
        const char *p = s + 1, *end = s + strlen(s);
        double total = 0;
        int parts = 0;
        while (p < end) {
            uint64_t v;
            if (parse_u64(&p, end, &v) < 0 || v > 100000000ull || p == end)
                return -EINVAL;
            double unit;
            switch (*p++) {
            case 'd': unit = 86400; break;
            case 'h': unit = 3600; break;
            case 'm': unit = 60; break;
            case 's': unit = 1; break;
            default: return -EINVAL;
            }
            total += (double)v * unit;
            parts++;
        }
        if (!parts)
            return -EINVAL;
        *out = now - total;
        return 0;
    }
    int y, mo, d, h, mi, sec;
    if (clock_part(s, &h, &mi, &sec)) {
        time_t t = (time_t)now;
        struct tm tm;
        if (!localtime_r(&t, &tm))
            return -EINVAL;
        return local_epoch(tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, h, mi, sec, out);
    }
    const char *p = s;
    if (!take(&p, 4, &y) || *p++ != '-' || !take(&p, 2, &mo) || *p++ != '-' || !take(&p, 2, &d))
        return -EINVAL;
    if (*p == '\0')
        return local_epoch(y, mo, d, 0, 0, 0, out);
    if (*p != ' ' && *p != 'T')
        return -EINVAL;
    if (!clock_part(p + 1, &h, &mi, &sec))
        return -EINVAL;
    return local_epoch(y, mo, d, h, mi, sec, out);
}
