/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Fuzz diskstats_parse (/proc/diskstats text). */
#include "fuzz.h"

#include <errno.h>

#include "source/diskstats.h"

#define MAX_LEN (64 * 1024)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > MAX_LEN)
        return 0;
    char *buf = fz_copy(data, size);
    size_t lines = 0;
    for (size_t i = 0; i < size; i++)
        lines += data[i] == '\n';
    lines++;                                   /* a last line without a newline */

    struct diskstats_row *rows = NULL;
    size_t n = 12345;
    unsigned bad = 12345;
    int r = diskstats_parse(buf, size, &rows, &n, &bad);
    FZ_CHECK(r == 0 || r == -EINVAL);
    FZ_CHECK(n + bad <= lines);
    if (r == -EINVAL) {
        FZ_CHECK(rows == NULL && n == 0 && bad > 0);
    } else {
        FZ_CHECK(rows != NULL);
        FZ_CHECK(n > 0 || bad == 0);
    }
    for (size_t i = 0; i < n; i++) {
        const struct diskstats_row *w = &rows[i];
        FZ_CHECK(w->nfields == 11 || w->nfields == 15 || w->nfields == 17);
        FZ_CHECK(fz_terminated(w->name, sizeof(w->name)));
        size_t nl = strlen(w->name);
        FZ_CHECK(nl > 0 && nl < DS_NAME_MAX);
        FZ_CHECK(strpbrk(w->name, " \t\n") == NULL);
        for (unsigned f = w->nfields; f < DS_NFIELDS; f++)
            FZ_CHECK(w->f[f] == 0);            /* absent counters are not made up */
    }
    free(rows);
    free(buf);
    return 0;
}
