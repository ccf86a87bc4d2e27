/* SPDX-License-Identifier: GPL-2.0-or-later */
/* source/diskstats.c: reader and pure parser for /proc/diskstats. */
#include "source/diskstats.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

static const char *skip_blanks(const char *p, const char *end)
{
    while (p < end && (*p == ' ' || *p == '\t'))
        p++;
    return p;
}

/* Parse one line [p, end). Returns 0 on success. */
static int parse_line(const char *p, const char *end, struct diskstats_row *r)
{
    char tmp[512];
    size_t l = (size_t)(end - p);
    if (l >= sizeof(tmp))
        return -EINVAL;
    memcpy(tmp, p, l);
    tmp[l] = '\0';

    const char *s = skip_blanks(tmp, tmp + l);
    uint64_t v;
    memset(r, 0, sizeof(*r));
    if (parse_u64(&s, tmp + l, &v) || v > UINT32_MAX)
        return -EINVAL;
    r->major = (unsigned)v;
    s = skip_blanks(s, tmp + l);
    if (parse_u64(&s, tmp + l, &v) || v > UINT32_MAX)
        return -EINVAL;
    r->minor = (unsigned)v;
    s = skip_blanks(s, tmp + l);
    size_t nl = strcspn(s, " \t");
    if (nl == 0 || nl >= DS_NAME_MAX)
        return -EINVAL;
    memcpy(r->name, s, nl);
    r->name[nl] = '\0';
    s += nl;
    unsigned nf = 0;
    for (;;) {
        s = skip_blanks(s, tmp + l);
        if (*s == '\0')
            break;
        if (nf == DS_NFIELDS)
            break; /* a future kernel's extra fields: ignore them */
        if (parse_u64(&s, tmp + l, &r->f[nf]))
            return -EINVAL;
        if (*s != '\0' && *s != ' ' && *s != '\t')
            return -EINVAL;
        nf++;
    }
    /* The kernel has printed 11, 15 or 17 fields; anything else is a damaged line. */
    if (nf != 11 && nf != 15 && nf != 17)
        return -EINVAL;
    r->nfields = nf;
    return 0;
}

int diskstats_parse(const char *buf, size_t len, struct diskstats_row **rows, size_t *n,
                    unsigned *bad)
{
    size_t cap = 16, cnt = 0;
    unsigned nbad = 0;
    struct diskstats_row *out = xcalloc(cap, sizeof(*out));
    const char *p = buf, *end = buf + len;
    while (p < end) {
        const char *eol = memchr(p, '\n', (size_t)(end - p));
        if (!eol)
            eol = end;
        if (skip_blanks(p, eol) < eol) {
            if (cnt == cap) {
                cap *= 2;
                out = xreallocarray(out, cap, sizeof(*out));
            }
            if (parse_line(p, eol, &out[cnt]) == 0)
                cnt++;
            else
                nbad++;
        }
        p = eol + 1;
    }
    if (bad)
        *bad = nbad;
    if (cnt == 0 && nbad > 0) {
        free(out);
        *rows = NULL;
        *n = 0;
        return -EINVAL;
    }
    *rows = out;
    *n = cnt;
    return 0;
}

int diskstats_read(int proc_fd, struct diskstats_row **rows, size_t *n, unsigned *bad)
{
    char *buf;
    ssize_t len = read_file_alloc_at(proc_fd, "diskstats", &buf, 1 << 22);
    if (len < 0)
        return (int)len;
    int r = diskstats_parse(buf, (size_t)len, rows, n, bad);
    free(buf);
    return r;
}
