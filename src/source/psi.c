/* SPDX-License-Identifier: GPL-2.0-or-later */
/* source/psi.c: reader and pure parser for /proc/pressure files
 * (format: kernel/sched/psi.c:psi_show). */
#include "source/psi.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

const char *const psi_resource_name[PSI_NRES] = { "io", "cpu", "memory" };

/* "avg10=1.23 avg60=0.50 avg300=0.10 total=12345" */
static int parse_fields(const char *p, const char *end, struct psi_line *l)
{
    bool have[4] = { false, false, false, false };
    while (p < end) {
        while (p < end && (*p == ' ' || *p == '\t'))   /* not strspn: no NUL at end */
            p++;
        if (p >= end)
            break;
        const char *eq = memchr(p, '=', (size_t)(end - p));
        if (!eq)
            return -EINVAL;
        size_t kl = (size_t)(eq - p);
        const char *v = eq + 1;
        const char *after;
        if (kl == 5 && memcmp(p, "total", 5) == 0) {
            uint64_t t;
            if (parse_u64(&v, end, &t))
                return -EINVAL;
            l->total_us = t;
            have[3] = true;
            after = v;
        } else {
            double d;
            if (parse_udouble(&v, end, &d))
                return -EINVAL;
            after = v;
            if (kl == 5 && memcmp(p, "avg10", 5) == 0) {
                l->avg10 = d;
                have[0] = true;
            } else if (kl == 5 && memcmp(p, "avg60", 5) == 0) {
                l->avg60 = d;
                have[1] = true;
            } else if (kl == 6 && memcmp(p, "avg300", 6) == 0) {
                l->avg300 = d;
                have[2] = true;
            } /* an unknown key from a future kernel: skip it */
        }
        if (after < end && *after != ' ' && *after != '\t')
            return -EINVAL;
        p = after;
    }
    if (!(have[0] && have[1] && have[2] && have[3]))
        return -EINVAL;
    l->valid = true;
    return 0;
}

int psi_parse(const char *buf, size_t len, struct psi_sample *out)
{
    memset(out, 0, sizeof(*out));
    const char *p = buf, *end = buf + len;
    int lines = 0;
    while (p < end) {
        const char *eol = memchr(p, '\n', (size_t)(end - p));
        if (!eol)
            eol = end;
        struct psi_line *l = NULL;
        if ((size_t)(eol - p) > 5 && memcmp(p, "some ", 5) == 0)
            l = &out->some;
        else if ((size_t)(eol - p) > 5 && memcmp(p, "full ", 5) == 0)
            l = &out->full;
        if (l) {
            struct psi_line tmp = { 0 };
            if (parse_fields(p + 5, eol, &tmp) == 0) {
                *l = tmp;
                lines++;
            }
        }
        p = eol + 1;
    }
    if (lines == 0) {
        out->err = -EINVAL;
        return -EINVAL;
    }
    return 0;
}

void psi_read(int proc_fd, enum psi_resource res, struct psi_sample *out)
{
    char path[32], buf[512];
    snprintf(path, sizeof(path), "pressure/%s", psi_resource_name[res]);
    ssize_t len = read_file_at(proc_fd, path, buf, sizeof(buf));
    if (len < 0) {
        memset(out, 0, sizeof(*out));
        out->err = (int)len;
        return;
    }
    psi_parse(buf, (size_t)len, out);
}
