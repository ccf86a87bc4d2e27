/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Unit tests of the exporter's trial families (src/export_trials.c): reports read from
 * tests/fixtures/trials/trials.jsonl (two real reports of `iotriage trial`, one made from
 * them with end_time and keep), lines split across reads, damaged and over-long lines,
 * the bound on devices, and the file read as it grows, is cut or is replaced. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "export_trials.h"
#include "out/metrics.h"

#define FIXTURE_TRIALS "trials/trials.jsonl"

static char *slurp(const char *rel, size_t *len)
{
    const char *dir = getenv("IOTRIAGE_FIXTURES");
    char path[4096];
    snprintf(path, sizeof(path), "%s/%s", dir ? dir : "tests/fixtures", rel);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    char *buf = NULL;
    size_t cap = 0;
    ssize_t n = getdelim(&buf, &cap, '\0', f);
    assert_true(n > 0);
    fclose(f);
    *len = (size_t)n;
    return buf;
}

static char *page(struct trials *t)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    struct metrics_writer w = { .f = f, .fmt = METRICS_PROM_TEXT };
    trials_write(&w, t);
    fclose(f);
    return buf;
}

static void has_line(const char *text, const char *line)
{
    const char *p = text;
    size_t n = strlen(line);
    while ((p = strstr(p, line)) != NULL) {
        if ((p == text || p[-1] == '\n') && (p[n] == '\n' || p[n] == '\0'))
            return;
        p++;
    }
    fail_msg("no line '%s' in:\n%s", line, text);
}

static void test_fixture(void **state)
{
    (void)state;
    size_t len;
    char *buf = slurp(FIXTURE_TRIALS, &len);
    struct trials *t = trials_new(NULL);
    assert_int_equal(trials_feed(t, buf, len), len);
    assert_int_equal(trials_taken(t), 3);
    assert_int_equal(trials_skipped(t), 0);
    char *p = page(t);
    has_line(p, "iotriage_trials_total{device=\"loop1\",scheduler=\"mq-deadline\",decision=\"revert\"} 2");
    has_line(p, "iotriage_trials_total{device=\"sdb\",scheduler=\"mq-deadline\",decision=\"keep\"} 1");
    /* the last of loop1's two: the lens's, put back */
    has_line(p, "iotriage_trial_last_info{device=\"loop1\",scheduler_before=\"none\",scheduler=\"mq-deadline\","
                "decision=\"revert\",source=\"lens\",restored=\"true\"} 1");
    has_line(p, "iotriage_trial_last_info{device=\"sdb\",scheduler_before=\"none\",scheduler=\"mq-deadline\","
                "decision=\"keep\",source=\"lens\",restored=\"false\"} 1");
    /* a report without end_time: absent, never 0 */
    has_line(p, "iotriage_trial_last_end_time_seconds{device=\"sdb\"} 1796425201.5");
    assert_null(strstr(p, "iotriage_trial_last_end_time_seconds{device=\"loop1\"}"));
    /* milliseconds to seconds, as written (2.378 ms) */
    has_line(p, "iotriage_trial_last_await_seconds{device=\"loop1\",phase=\"before\"} 0.002378");
    has_line(p, "iotriage_trial_last_throughput_bytes_per_second{device=\"loop1\",phase=\"after\"} 1638679.522");
    has_line(p, "iotriage_trial_last_p99_seconds{device=\"loop1\",phase=\"after\",prio=\"idle\"} 1.908408");
    has_line(p, "iotriage_trial_last_p50_seconds{device=\"loop1\",phase=\"before\",prio=\"be/4\"} 0.003112");
    has_line(p, "iotriage_trial_last_prio_iops{device=\"loop1\",phase=\"after\",prio=\"idle\"} 6.001");
    /* a priority no request had: no series */
    assert_null(strstr(p, "prio=\"rt/0\""));
    free(p);
    trials_free(t);
    free(buf);
}

/* The first report without its lens: await only, no series per priority (null). */
static void test_no_lens(void **state)
{
    (void)state;
    size_t len;
    char *buf = slurp(FIXTURE_TRIALS, &len);
    char *nl = memchr(buf, '\n', len);
    struct trials *t = trials_new(NULL);
    trials_feed(t, buf, (size_t)(nl - buf) + 1);
    assert_int_equal(trials_taken(t), 1);
    char *p = page(t);
    has_line(p, "iotriage_trial_last_info{device=\"loop1\",scheduler_before=\"none\",scheduler=\"mq-deadline\","
                "decision=\"revert\",source=\"await\",restored=\"true\"} 1");
    /* the phase after was interrupted: its figures null, absent */
    has_line(p, "iotriage_trial_last_iops{device=\"loop1\",phase=\"before\"} 790.798");
    assert_null(strstr(p, "iotriage_trial_last_iops{device=\"loop1\",phase=\"after\"}"));
    assert_null(strstr(p, "prio=\""));
    free(p);
    trials_free(t);
    free(buf);
}

/* Bytes in any cut: a line is taken once whole, whatever the reads' boundaries. */
static void test_split_reads(void **state)
{
    (void)state;
    size_t len;
    char *buf = slurp(FIXTURE_TRIALS, &len);
    char *whole;
    {
        struct trials *t = trials_new(NULL);
        trials_feed(t, buf, len);
        whole = page(t);
        trials_free(t);
    }
    for (size_t step = 1; step < 9000; step = step * 3 + 1) {
        struct trials *t = trials_new(NULL);
        for (size_t off = 0; off < len; off += step)
            trials_feed(t, buf + off, off + step > len ? len - off : step);
        assert_int_equal(trials_taken(t), 3);
        char *p = page(t);
        assert_string_equal(p, whole);
        free(p);
        trials_free(t);
    }
    free(whole);
    free(buf);
}

/* What is no report is counted and skipped, and changes nothing. */
static void test_damage(void **state)
{
    (void)state;
    size_t len;
    char *buf = slurp(FIXTURE_TRIALS, &len);
    char *first_end = memchr(buf, '\n', len);
    size_t l1 = (size_t)(first_end - buf);
    struct trials *t = trials_new(NULL);
    static const char *bad[] = {
        "garbage\n", "\n", "{\"version\":2}\n", "[1,2]\n",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        trials_feed(t, bad[i], strlen(bad[i]));
    assert_int_equal(trials_skipped(t), 4);
    /* the real report with one field made wrong in each way */
    static const struct { const char *from, *to; } edits[] = {
        { "\"device\":\"loop1\"", "\"device\":\"lo\\\"op\"" },       /* a quote in a label */
        { "\"device\":\"loop1\"", "\"device\":\"\"" },
        { "\"decision\":\"revert\"", "\"decision\":\"maybe\"" },
        { "\"iops\":790.798", "\"iops\":-1" },
        { "\"iops\":790.798", "\"iops\":\"many\"" },
        { "\"restored\":true", "\"restored\":1" },
        { "\"scheduler\":\"none\"", "\"scheduler\":\"n one\"" },
    };
    for (size_t i = 0; i < sizeof(edits) / sizeof(edits[0]); i++) {
        char line[16384];
        char *at = memmem(buf, l1, edits[i].from, strlen(edits[i].from));
        assert_non_null(at);
        size_t pre = (size_t)(at - buf);
        int n = snprintf(line, sizeof(line), "%.*s%s%.*s\n", (int)pre, buf, edits[i].to,
                         (int)(l1 - pre - strlen(edits[i].from)), at + strlen(edits[i].from));
        assert_true(n > 0 && (size_t)n < sizeof(line));
        trials_feed(t, line, (size_t)n);
    }
    assert_int_equal(trials_taken(t), 0);
    assert_int_equal(trials_skipped(t), 4 + sizeof(edits) / sizeof(edits[0]));
    char *p = page(t);
    assert_string_equal(p, "");      /* no report: no family */
    free(p);
    /* an over-long line, fed in pieces, is skipped once; the next line is taken */
    size_t big = TRIALS_LINE_MAX + 10;
    char *junk = malloc(big);
    memset(junk, 'x', big);
    trials_feed(t, junk, big / 2);
    trials_feed(t, junk, big - big / 2);
    trials_feed(t, "\n", 1);
    trials_feed(t, buf, l1 + 1);
    assert_int_equal(trials_skipped(t), 5 + sizeof(edits) / sizeof(edits[0]));
    assert_int_equal(trials_taken(t), 1);
    free(junk);
    trials_free(t);
    free(buf);
}

/* At most TRIALS_DEVICES_MAX devices: a later one is skipped, the known ones still count. */
static void test_device_bound(void **state)
{
    (void)state;
    size_t len;
    char *buf = slurp(FIXTURE_TRIALS, &len);
    char *first_end = memchr(buf, '\n', len);
    size_t l1 = (size_t)(first_end - buf);
    char *at = memmem(buf, l1, "\"loop1\"", 7);
    assert_non_null(at);
    size_t pre = (size_t)(at - buf);
    struct trials *t = trials_new(NULL);
    for (int i = 0; i <= TRIALS_DEVICES_MAX; i++) {
        char line[16384];
        int n = snprintf(line, sizeof(line), "%.*s\"d%d\"%.*s\n", (int)pre, buf, i,
                         (int)(l1 - pre - 7), at + 7);
        trials_feed(t, line, (size_t)n);
    }
    assert_int_equal(trials_taken(t), TRIALS_DEVICES_MAX);
    assert_int_equal(trials_skipped(t), 1);
    trials_feed(t, buf, len);        /* loop1 twice, sdb: no room */
    assert_int_equal(trials_taken(t), TRIALS_DEVICES_MAX);
    char line[16384];
    int n = snprintf(line, sizeof(line), "%.*s\"d0\"%.*s\n", (int)pre, buf, (int)(l1 - pre - 7), at + 7);
    trials_feed(t, line, (size_t)n);
    assert_int_equal(trials_taken(t), TRIALS_DEVICES_MAX + 1);
    char *p = page(t);
    has_line(p, "iotriage_trials_total{device=\"d0\",scheduler=\"mq-deadline\",decision=\"revert\"} 2");
    assert_null(strstr(p, "device=\"d64\""));
    free(p);
    trials_free(t);
    free(buf);
}

static void append(const char *path, const char *data, size_t n)
{
    int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, data, n), (ssize_t)n);
    close(fd);
}

/* The file as the exporter meets it: absent, growing (a report at a time, one half
 * written), cut shorter and replaced. */
static void test_file(void **state)
{
    (void)state;
    size_t len;
    char *buf = slurp(FIXTURE_TRIALS, &len);
    char dir[] = "/tmp/iotriage-trials.XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[64], other[64];
    snprintf(path, sizeof(path), "%s/trials.jsonl", dir);
    snprintf(other, sizeof(other), "%s/new", dir);
    struct trials *t = trials_new(path);
    char err[512] = "";
    assert_int_equal(trials_refresh(t, err, sizeof(err)), 0);   /* no file: no trial yet */
    assert_int_equal(trials_taken(t), 0);
    char *l2 = (char *)memchr(buf, '\n', len) + 1;
    size_t n1 = (size_t)(l2 - buf);
    append(path, buf, n1 + 100);     /* a report and the start of the next */
    assert_int_equal(trials_refresh(t, err, sizeof(err)), 0);
    assert_int_equal(trials_taken(t), 1);
    append(path, buf + n1 + 100, len - n1 - 100);
    assert_int_equal(trials_refresh(t, err, sizeof(err)), 0);
    assert_int_equal(trials_taken(t), 3);
    assert_int_equal(trials_refresh(t, err, sizeof(err)), 0);   /* nothing new */
    assert_int_equal(trials_taken(t), 3);
    /* cut shorter: read again from the start */
    assert_int_equal(truncate(path, (off_t)n1), 0);
    assert_int_equal(trials_refresh(t, err, sizeof(err)), 0);
    assert_int_equal(trials_taken(t), 1);
    /* replaced by another file, longer than the one before */
    append(other, buf, len);
    append(other, buf, len);
    assert_int_equal(rename(other, path), 0);
    assert_int_equal(trials_refresh(t, err, sizeof(err)), 0);
    assert_int_equal(trials_taken(t), 6);
    char *p = page(t);
    has_line(p, "iotriage_trials_total{device=\"loop1\",scheduler=\"mq-deadline\",decision=\"revert\"} 4");
    free(p);
    /* removed: nothing known any more */
    assert_int_equal(unlink(path), 0);
    assert_int_equal(trials_refresh(t, err, sizeof(err)), 0);
    p = page(t);
    assert_string_equal(p, "");
    free(p);
    /* a directory where the file should be: said once */
    assert_int_equal(mkdir(path, 0700), 0);
    assert_int_equal(trials_refresh(t, err, sizeof(err)), -EINVAL);
    assert_non_null(strstr(err, path));
    assert_int_equal(trials_refresh(t, err, sizeof(err)), 0);
    assert_int_equal(rmdir(path), 0);
    assert_int_equal(rmdir(dir), 0);
    trials_free(t);
    free(buf);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fixture),
        cmocka_unit_test(test_no_lens),
        cmocka_unit_test(test_split_reads),
        cmocka_unit_test(test_damage),
        cmocka_unit_test(test_device_bound),
        cmocka_unit_test(test_file),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
