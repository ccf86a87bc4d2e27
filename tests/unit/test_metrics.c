/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Unit tests of the Prometheus page (src/out/metrics.c) on a hand-built result, content
 * negotiation, and the --listen parser of src/export.c. */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "export.h"
#include "out/metrics.h"
#include "verdict.h"

struct world {
    struct snapshot snap;
    struct dev_sample dev[4];
    struct dev_rates dr[4];
    struct task_sample ts[4];
    struct task_devs td[4];
    struct task_rates tr[4];
    enum role roles[4];
    struct warning w[8];
    struct result res;
    struct verdicts v;
};

static void dev(struct world *w, int i, const char *name, const char *sched, long nr, int hwq,
                int saturated)
{
    struct dev_sample *d = &w->dev[i];
    snprintf(d->ds.name, sizeof(d->ds.name), "%s", name);
    snprintf(d->bd.disk, sizeof(d->bd.disk), "%s", name);
    snprintf(d->bd.scheduler, sizeof(d->bd.scheduler), "%s", sched);
    if (sched[0]) {
        snprintf(d->bd.schedulers[0], BD_SCHED_MAX, "none");
        snprintf(d->bd.schedulers[1], BD_SCHED_MAX, "%s", strcmp(sched, "none") ? sched : "bfq");
        d->bd.nsched = 2;
    }
    d->bd.has_queue = true;
    d->bd.nr_requests = nr;
    d->bd.hw_queues = hwq;
    w->dr[i].dev = d;
    w->dr[i].valid = true;
    w->dr[i].saturated = saturated;
    w->dr[i].quiet_await = (double)NAN;
    w->snap.ndevs = w->res.ndevs = (size_t)i + 1 > w->res.ndevs ? (size_t)i + 1 : w->res.ndevs;
}

static void warn(struct world *w, enum warn_code c, int d, int t)
{
    w->w[w->v.n].code = c;
    w->w[w->v.n].dev = d;
    w->w[w->v.n].task = t;
    w->v.n++;
}

/* sda: mq-deadline, saturated, two processes whose label is ignored... (the verdicts
 * are made up: the page only counts them), a hidden queue found on the device itself;
 * sda1 its partition; nvme0n1: none, unknowns; a device whose name needs escaping. */
static void w_build(struct world *w)
{
    memset(w, 0, sizeof(*w));
    w->snap.devs = w->dev;
    w->snap.tasks = w->ts;
    w->snap.tdevs = w->td;
    w->snap.delayacct = DA_ON;
    w->snap.wall = 1700000000.25;
    w->res.cur = &w->snap;
    w->res.devs = w->dr;
    w->res.tasks = w->tr;
    w->res.interval_s = 1.0;
    w->v.w = w->w;
    w->v.roles = w->roles;
    dev(w, 0, "sda", "mq-deadline", 64, 4, 1);
    w->dr[0].quiet_await = 0.5;              /* ms */
    dev(w, 1, "sda1", "mq-deadline", 64, 4, 1);
    w->dev[1].bd.partition = true;
    dev(w, 2, "nvme0n1", "none", -1, -1, -1);
    dev(w, 3, "we\"ird\\dev\n\xff", "", 128, 0, 0);
    w->snap.ntasks = w->res.ntasks = w->v.nroles = 3;
    for (int t = 0; t < 3; t++) {
        w->tr[t].task = &w->ts[t];
        w->ts[t].id = 100 + t;
        w->td[t].known = true;
        w->td[t].n = 1;
        w->td[t].idx[0] = 0;
    }
    w->td[2].idx[0] = 2;                     /* task 2 on nvme0n1, not saturated */
    w->tr[3].task = &w->ts[3];               /* task 3: another user's, fds unreadable */
    w->ts[3].id = 200;
    w->td[3].err = -13;
    w->snap.ntasks = w->res.ntasks = w->v.nroles = 4;
    w->roles[0] = ROLE_CAUSE;
    w->roles[1] = ROLE_SUFFER;
    w->roles[2] = ROLE_SUFFER;               /* not on a saturated device: not counted */
    warn(w, W_IOPRIO_LEVEL_IGNORED, 0, 0);
    warn(w, W_IOPRIO_LEVEL_IGNORED, 0, 1);
    warn(w, W_HIDDEN_QUEUE, 0, -1);
    warn(w, W_IOPRIO_IGNORED, 2, 2);
}

static char *page(const struct world *w, enum metrics_fmt fmt, const struct metrics_meta *m)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    assert_int_equal(metrics_format(f, &w->res, &w->v, fmt, m, NULL, 0), 0);
    fclose(f);
    return buf;
}

static void has_line(const char *page_text, const char *line)
{
    size_t n = strlen(line);
    for (const char *p = page_text; (p = strstr(p, line)) != NULL; p++)
        if ((p == page_text || p[-1] == '\n') && p[n] == '\n')
            return;
    fail_msg("line not found: %s", line);
}

static void no_text(const char *page_text, const char *s)
{
    if (strstr(page_text, s))
        fail_msg("unexpected text: %s", s);
}

static void test_text_page(void **state)
{
    (void)state;
    struct world w;
    w_build(&w);
    struct metrics_meta m = { .version = "9.9", .refreshes = 42, .refresh_seconds = 0.0125,
                              .start_time = (double)NAN };
    char *t = page(&w, METRICS_PROM_TEXT, &m);
    has_line(t, "# TYPE iotriage_refreshes_total counter");
    has_line(t, "iotriage_refreshes_total 42");
    has_line(t, "# TYPE iotriage_build_info gauge");
    has_line(t, "iotriage_build_info{version=\"9.9\"} 1");
    has_line(t, "iotriage_refresh_duration_seconds 0.0125");
    has_line(t, "iotriage_sample_timestamp_seconds 1700000000.25");
    no_text(t, "\niotriage_start_time_seconds ");        /* unknown: absent */
    has_line(t, "iotriage_device_scheduler_info{device=\"sda\",scheduler=\"mq-deadline\"} 1");
    has_line(t, "iotriage_device_scheduler_offered_info{device=\"nvme0n1\",scheduler=\"bfq\"} 1");
    has_line(t, "iotriage_device_nr_requests{device=\"sda\"} 64");
    has_line(t, "iotriage_device_hw_queues{device=\"sda\"} 4");
    has_line(t, "iotriage_device_saturated{device=\"sda\"} 1");
    has_line(t, "iotriage_device_quiet_await_seconds{device=\"sda\"} 0.0005");
    /* partitions share their disk's queue: not listed */
    no_text(t, "\"sda1\"");
    /* unknown is absent, never 0 */
    no_text(t, "iotriage_device_nr_requests{device=\"nvme0n1\"}");
    no_text(t, "iotriage_device_hw_queues{device=\"nvme0n1\"}");
    no_text(t, "iotriage_device_saturated{device=\"nvme0n1\"}");
    no_text(t, "NaN");
    /* processes per code and device; a device finding counts 1; codes not firing are 0 */
    has_line(t, "iotriage_warnings{code=\"ioprio-level-ignored\",device=\"sda\"} 2");
    has_line(t, "iotriage_warnings{code=\"hidden-queue\",device=\"sda\"} 1");
    has_line(t, "iotriage_warnings{code=\"ioprio-ignored\",device=\"sda\"} 0");
    has_line(t, "iotriage_warnings{code=\"ioprio-ignored\",device=\"nvme0n1\"} 1");
    /* a label dropped by a stacked layer is the lens's alone: absent without it */
    no_text(t, "code=\"ioprio-dropped\"");
    has_line(t, "iotriage_device_processes{device=\"sda\",role=\"cause\"} 1");
    has_line(t, "iotriage_device_processes{device=\"sda\",role=\"suffer\"} 1");
    has_line(t, "iotriage_device_processes{device=\"nvme0n1\",role=\"suffer\"} 0");
    has_line(t, "iotriage_processes 4");
    has_line(t, "iotriage_processes_devices_unknown 1");
    /* a device without a scheduler has no scheduler_info, but its other figures */
    has_line(t, "iotriage_device_nr_requests{device=\"we\\\"ird\\\\dev\\n\xef\xbf\xbd\"} 128");
    no_text(t, "iotriage_device_scheduler_info{device=\"we");
    /* no pid anywhere: labels are devices, schedulers, codes, roles */
    no_text(t, "pid=");
    no_text(t, "# EOF");
    /* the same input gives the same page, byte for byte (HELP text never varies) */
    char *t2 = page(&w, METRICS_PROM_TEXT, &m);
    assert_string_equal(t, t2);
    free(t2);
    free(t);
}

static void test_openmetrics_page(void **state)
{
    (void)state;
    struct world w;
    w_build(&w);
    struct metrics_meta m = { .version = "9.9", .refreshes = 7, .refresh_seconds = (double)NAN,
                              .start_time = 1.5 };
    char *t = page(&w, METRICS_OPENMETRICS, &m);
    has_line(t, "# TYPE iotriage_refreshes counter");
    has_line(t, "iotriage_refreshes_total 7");
    has_line(t, "# TYPE iotriage_build info");
    has_line(t, "iotriage_build_info{version=\"9.9\"} 1");
    has_line(t, "# TYPE iotriage_device_scheduler info");
    has_line(t, "iotriage_start_time_seconds 1.5");
    size_t n = strlen(t);
    assert_true(n > 6);
    assert_string_equal(t + n - 6, "# EOF\n");
    assert_ptr_equal(strstr(t, "# EOF"), t + n - 6);
    free(t);
}

static void test_tasks_unknown(void **state)
{
    (void)state;
    struct world w;
    w_build(&w);
    w.snap.procs_err = -13;
    char *t = page(&w, METRICS_PROM_TEXT, NULL);
    has_line(t, "# TYPE iotriage_warnings gauge");    /* the family, without samples */
    no_text(t, "iotriage_warnings{");
    no_text(t, "iotriage_device_processes{");
    no_text(t, "\niotriage_processes ");
    has_line(t, "iotriage_source_ok{source=\"processes\"} 0");
    no_text(t, "iotriage_build_info");                /* no meta: no exporter families */
    free(t);
    /* without delay accounting nobody can be said to suffer: absent, not 0 */
    w_build(&w);
    w.snap.delayacct = DA_OFF;
    t = page(&w, METRICS_PROM_TEXT, NULL);
    has_line(t, "iotriage_device_processes{device=\"sda\",role=\"cause\"} 1");
    no_text(t, "role=\"suffer\"");
    no_text(t, "role=\"both\"");
    no_text(t, "code=\"hidden-queue\"");
    has_line(t, "iotriage_warnings{code=\"ioprio-lottery\",device=\"sda\"} 0");
    free(t);
    /* nvme0n1: nr_requests and saturation unknown: the codes judged from them absent */
    w_build(&w);
    t = page(&w, METRICS_PROM_TEXT, NULL);
    no_text(t, "iotriage_warnings{code=\"ioprio-lottery\",device=\"nvme0n1\"}");
    no_text(t, "iotriage_warnings{code=\"ioprio-unsaturated\",device=\"nvme0n1\"}");
    has_line(t, "iotriage_warnings{code=\"ioprio-writeback\",device=\"nvme0n1\"} 0");
    has_line(t, "iotriage_warnings{code=\"ioprio-unsaturated\",device=\"sda\"} 0");
    free(t);
    /* a device re-registered (no rates): only the codes that need none */
    w_build(&w);
    w.dr[0].valid = false;
    t = page(&w, METRICS_PROM_TEXT, NULL);
    has_line(t, "iotriage_warnings{code=\"ioprio-level-ignored\",device=\"sda\"} 2");
    no_text(t, "iotriage_warnings{code=\"hidden-queue\",device=\"sda\"}");
    no_text(t, "iotriage_device_saturated{device=\"sda\"}");
    free(t);
}

static void lens_write(struct metrics_writer *mw, void *ctx)
{
    (void)ctx;
    static const double bounds[] = { 0.001, 0.01 };
    static const unsigned long long counts[] = { 3, 5 };
    const char *l[] = { "device", "sda", "class", "idle" };
    metrics_family(mw, "iotriage_test_latency_seconds", MT_HISTOGRAM, "A test histogram.");
    metrics_histogram(mw, "iotriage_test_latency_seconds", l, 2, bounds, counts, 2, 6, 0.25);
}

static void test_lens_histogram(void **state)
{
    (void)state;
    struct world w;
    w_build(&w);
    struct metrics_lens lens = { "test", lens_write, NULL };
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_int_equal(metrics_format(f, &w.res, &w.v, METRICS_OPENMETRICS, NULL, &lens, 1), 0);
    fclose(f);
    has_line(buf, "iotriage_test_latency_seconds_bucket{device=\"sda\",class=\"idle\",le=\"0.001\"} 3");
    has_line(buf, "iotriage_test_latency_seconds_bucket{device=\"sda\",class=\"idle\",le=\"+Inf\"} 6");
    has_line(buf, "iotriage_test_latency_seconds_sum{device=\"sda\",class=\"idle\"} 0.25");
    has_line(buf, "iotriage_test_latency_seconds_count{device=\"sda\",class=\"idle\"} 6");
    /* the lens comes before the end marker */
    assert_true(strstr(buf, "_count{") < strstr(buf, "# EOF"));
    free(buf);
}

static void test_negotiate(void **state)
{
    (void)state;
    assert_int_equal(metrics_negotiate(NULL), METRICS_PROM_TEXT);
    assert_int_equal(metrics_negotiate(""), METRICS_PROM_TEXT);
    assert_int_equal(metrics_negotiate("*/*"), METRICS_PROM_TEXT);
    assert_int_equal(metrics_negotiate("text/plain;version=0.0.4"), METRICS_PROM_TEXT);
    /* what Prometheus 2.x sends by default */
    assert_int_equal(metrics_negotiate("application/openmetrics-text;version=1.0.0,"
                                       "application/openmetrics-text;version=0.0.1;q=0.75,"
                                       "text/plain;version=0.0.4;q=0.5,*/*;q=0.1"),
                     METRICS_OPENMETRICS);
    assert_int_equal(metrics_negotiate("application/openmetrics-text"), METRICS_OPENMETRICS);
    assert_int_equal(metrics_negotiate("Application/OpenMetrics-Text; version=0.0.1"), METRICS_OPENMETRICS);
    /* refused, or preferred less than text */
    assert_int_equal(metrics_negotiate("application/openmetrics-text;q=0"), METRICS_PROM_TEXT);
    assert_int_equal(metrics_negotiate("text/plain, application/openmetrics-text;q=0.5"), METRICS_PROM_TEXT);
    /* a version we do not write */
    assert_int_equal(metrics_negotiate("application/openmetrics-text;version=2.0.0"), METRICS_PROM_TEXT);
    /* junk does not crash and falls back */
    assert_int_equal(metrics_negotiate(";;;,,,q=,application/openmetrics-text;q=abc"), METRICS_PROM_TEXT);
    assert_int_equal(metrics_negotiate("application/openmetrics-text-evil"), METRICS_PROM_TEXT);
}

static void test_split_listen(void **state)
{
    (void)state;
    char h[64], p[8];
    assert_int_equal(export_split_listen("127.0.0.1:9851", h, sizeof(h), p, sizeof(p)), 0);
    assert_string_equal(h, "127.0.0.1");
    assert_string_equal(p, "9851");
    assert_int_equal(export_split_listen("[::1]:0", h, sizeof(h), p, sizeof(p)), 0);
    assert_string_equal(h, "::1");
    assert_string_equal(p, "0");
    assert_int_equal(export_split_listen("localhost:80", h, sizeof(h), p, sizeof(p)), 0);
    /* an empty address would be every interface: it must be said as 0.0.0.0 */
    assert_int_equal(export_split_listen(":9851", h, sizeof(h), p, sizeof(p)), -EINVAL);
    assert_int_equal(export_split_listen("[]:9851", h, sizeof(h), p, sizeof(p)), -EINVAL);
    assert_int_equal(export_split_listen("127.0.0.1", h, sizeof(h), p, sizeof(p)), -EINVAL);
    assert_int_equal(export_split_listen("127.0.0.1:", h, sizeof(h), p, sizeof(p)), -EINVAL);
    assert_int_equal(export_split_listen("127.0.0.1:65536", h, sizeof(h), p, sizeof(p)), -EINVAL);
    assert_int_equal(export_split_listen("127.0.0.1:http", h, sizeof(h), p, sizeof(p)), -EINVAL);
    assert_int_equal(export_split_listen("::1:9851", h, sizeof(h), p, sizeof(p)), -EINVAL);
    assert_int_equal(export_split_listen("[::1]9851", h, sizeof(h), p, sizeof(p)), -EINVAL);
}

/* The sink alone, textfile only (no HTTP): the file appears whole under its name, no
 * temporary file stays, HELP is identical from one write to the next, and a directory
 * that went away is an error with a message while the sink lives on. */
static void test_sink_textfile(void **state)
{
    (void)state;
    char dir[] = "/tmp/iotriage-metrics-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[128], err[256] = "";
    snprintf(path, sizeof(path), "%s/iotriage.prom", dir);
    struct export_opts o = { .textfile = path, .version = "t" };
    struct export_sink *k;
    assert_int_equal(export_sink_open(&k, &o, err, sizeof(err)), 0);
    struct world w;
    w_build(&w);
    w.snap.mono = 0;                         /* the refresh duration is then "now" */
    assert_int_equal(export_sink_emit(k, &w.res, &w.v, err, sizeof(err)), 0);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    char first[16384];
    size_t n1 = fread(first, 1, sizeof(first) - 1, f);
    first[n1] = '\0';
    fclose(f);
    has_line(first, "iotriage_refreshes_total 1");
    has_line(first, "iotriage_device_nr_requests{device=\"sda\"} 64");
    no_text(first, "# EOF");                 /* the textfile is the classic format */
    assert_int_equal(export_sink_emit(k, &w.res, &w.v, err, sizeof(err)), 0);
    f = fopen(path, "r");
    char second[16384];
    size_t n2 = fread(second, 1, sizeof(second) - 1, f);
    second[n2] = '\0';
    fclose(f);
    has_line(second, "iotriage_refreshes_total 2");
    /* every HELP line the same */
    for (const char *p = first; (p = strstr(p, "# HELP ")) != NULL; p++) {
        const char *e = strchr(p, '\n');
        char line[512];
        snprintf(line, sizeof(line), "%.*s", (int)(e - p), p);
        has_line(second, line);
    }
    char cmd[160];
    snprintf(cmd, sizeof(cmd), "ls %s | grep -c tmp", dir);
    FILE *ls = popen(cmd, "r");
    int leftover = -1;
    assert_int_equal(fscanf(ls, "%d", &leftover), 1);
    pclose(ls);
    assert_int_equal(leftover, 0);
    /* the directory goes away: an error, said */
    unlink(path);
    assert_int_equal(rmdir(dir), 0);
    assert_int_equal(export_sink_emit(k, &w.res, &w.v, err, sizeof(err)), -ENOENT);
    assert_non_null(strstr(err, path));
    export_sink_close(k);
    /* names the collector would not read are refused up front */
    struct export_opts bad = { .textfile = "/tmp/iotriage.txt" };
    assert_int_equal(export_sink_open(&k, &bad, err, sizeof(err)), -EINVAL);
    assert_null(k);
    assert_non_null(strstr(err, ".prom"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_text_page),
        cmocka_unit_test(test_openmetrics_page),
        cmocka_unit_test(test_tasks_unknown),
        cmocka_unit_test(test_lens_histogram),
        cmocka_unit_test(test_negotiate),
        cmocka_unit_test(test_split_listen),
        cmocka_unit_test(test_sink_textfile),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
