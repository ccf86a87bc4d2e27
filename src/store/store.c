/* SPDX-License-Identifier: GPL-2.0-or-later */
/* store/store.c: hourly zstd files of JSON lines; contract in include/store/store.h.
 * This part: libzstd loaded, the files' names, the frames' checks that the writer and the
 * reader share (store_priv.h), and time for the CLI; the writer and retention are in
 * store_write.c, the reader in store_read.c.
 *
 * Why zstd: at a low level it compresses these repetitive JSON lines about as well as
 * gzip -6 at several times the speed, and its frame format gives what crash safety needs:
 * frames are independent, concatenated frames are one valid stream (`zstd -dc` reads a
 * whole file), each frame can carry a checksum, and the compressed size of a frame is
 * found from its block headers without decoding it.
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

/* libzstd is loaded with dlopen when a writer opens (`iotriage record`) or
 * a reader meets its first zstd frame (--replay of a store, the quiet-time baselines of
 * a machine the recorder watches): linked, it was mapped and relocated by every run,
 * about 280 KB of resident memory in runs that never touch a store (docs/performance.md).
 * The pointers keep the library's own prototypes. */
#define ZSTD_SONAME "libzstd.so.1"
struct zstd_lib zs;

int zstd_load(char *err, size_t errlen)
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

bool is_full(int e)
{
    return e == ENOSPC || e == EDQUOT;
}

/* ---- names ------------------------------------------------------------------------- */

const char *store_record_dir(void)
{
    const char *dir = getenv("IOTRIAGE_RECORD_DIR");
    if (!dir)
        return STORE_DEFAULT_DIR;
    return dir[0] ? dir : NULL;
}

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

const unsigned char zmagic[4] = { 0x28, 0xb5, 0x2f, 0xfd };

bool is_skippable(const unsigned char *p)
{
    uint32_t m = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
    return (m & 0xFFFFFFF0u) == ZSTD_MAGIC_SKIPPABLE_START;
}

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
const char *frame_check(ZSTD_DCtx *dctx, const unsigned char *p, size_t left,
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
size_t readable_end(ZSTD_DCtx *dctx, const unsigned char *b, size_t len)
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
