/* SPDX-License-Identifier: GPL-2.0-or-later */
/* store/store_read.c: the recorder's files read back: a directory of hourly files, one
 * .zst file or a plain file, line by line, damage skipped to the next frame, seeking by
 * time. Contract in include/store/store.h; the frames' checks and libzstd are store.c's
 * (store_priv.h).
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
