/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Fuzz what the exporter takes from a client or the kernel into its page: the Accept
 * header (metrics_negotiate, sent by anyone who can connect) and a label value
 * (metrics_escape_label: a device name is whatever a driver chose). The escaped value
 * must be one valid label value: valid UTF-8, no raw newline, every quote and backslash
 * escaped. Needs src/out/metrics.c in FUZZ_SRCS. */
#include "fuzz.h"

#include "util/escape.h"
#include "out/metrics.h"

#define MAX_LEN 4096

static void check_label(const char *out, size_t n)
{
    const unsigned char *p = (const unsigned char *)out;
    for (size_t i = 0; i < n;) {
        unsigned cp;
        size_t len = utf8_decode(p + i, n - i, &cp);
        FZ_CHECK(len > 0);                   /* valid UTF-8 all through */
        FZ_CHECK(cp != '\n');
        if (cp == '\\') {                    /* an escape: \\, \" or \n */
            FZ_CHECK(i + 1 < n);
            FZ_CHECK(p[i + 1] == '\\' || p[i + 1] == '"' || p[i + 1] == 'n');
            i += 2;
            continue;
        }
        FZ_CHECK(cp != '"');
        i += len;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > MAX_LEN)
        return 0;
    char *s = fz_cstr(data, size);
    enum metrics_fmt f = metrics_negotiate(s);
    FZ_CHECK(f == METRICS_PROM_TEXT || f == METRICS_OPENMETRICS);
    char *out = NULL;
    size_t n = 0;
    FILE *m = open_memstream(&out, &n);
    if (!m)
        abort();
    metrics_escape_label(m, s);
    fclose(m);
    check_label(out, n);
    free(out);
    free(s);
    return 0;
}
