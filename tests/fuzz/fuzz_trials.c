/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Fuzz the exporter's reader of trials.jsonl (export_trials.h): the fuzzer's bytes as the
 * file's, fed whole and again cut where the first byte says. Both readings agree (lines
 * taken and skipped, the page), every line is taken or skipped at most once, and the page
 * holds only iotriage_trial* families whose label values are plain names: a name the
 * reader took cannot break a label. */
#include "fuzz.h"

#include "export_trials.h"
#include "out/metrics.h"

#define MAX_LEN 65536

static char *page(struct trials *t)
{
    char *out = NULL;
    size_t n = 0;
    FILE *m = open_memstream(&out, &n);
    if (!m)
        abort();
    struct metrics_writer w = { .f = m, .fmt = METRICS_PROM_TEXT };
    trials_write(&w, t);
    fclose(m);
    return out;
}

static void check_page(const char *p)
{
    for (const char *line = p; *line;) {
        const char *end = strchr(line, '\n');
        FZ_CHECK(end != NULL);               /* every line ends */
        if (line[0] != '#') {
            FZ_CHECK(strncmp(line, "iotriage_trial", 14) == 0);
            const char *open = memchr(line, '{', (size_t)(end - line));
            const char *close = open ? memchr(open, '}', (size_t)(end - open)) : NULL;
            FZ_CHECK(open && close);
            for (const char *c = open + 1; c < close; c++)   /* no escape needed */
                FZ_CHECK(*c != '\\' && (unsigned char)*c >= 0x20 && (unsigned char)*c < 0x7f);
            FZ_CHECK(close[1] == ' ' && close[2] != '-' && strncmp(close + 2, "NaN", 3) != 0);
        }
        line = end + 1;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1 || size > MAX_LEN)
        return 0;
    size_t cut = (size_t)data[0] * (size - 1) / 255;
    char *buf = fz_copy(data + 1, size - 1);
    size_t len = size - 1, lines = 0;
    for (size_t i = 0; i < len; i++)
        lines += buf[i] == '\n';

    struct trials *a = trials_new(NULL), *b = trials_new(NULL);
    FZ_CHECK(trials_feed(a, buf, len) == len);
    FZ_CHECK(trials_feed(b, buf, cut) == cut);
    FZ_CHECK(trials_feed(b, buf + cut, len - cut) == len - cut);
    FZ_CHECK(trials_taken(a) + trials_skipped(a) <= lines);
    FZ_CHECK(trials_taken(a) == trials_taken(b) && trials_skipped(a) == trials_skipped(b));
    char *pa = page(a), *pb = page(b);
    FZ_CHECK(strcmp(pa, pb) == 0);
    FZ_CHECK((trials_taken(a) == 0) == (pa[0] == '\0'));
    check_page(pa);
    free(pa);
    free(pb);
    trials_free(a);
    trials_free(b);
    free(buf);
    return 0;
}
