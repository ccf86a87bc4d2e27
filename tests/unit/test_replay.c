/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Tests for store/replay.c and sample/decode*.c: recordings read back into what the
 * outputs draw from.
 *
 * Fixtures (tests/fixtures/replay/, or $IOTRIAGE_FIXTURES/replay; README there says how
 * each was made): real recordings from a 2-vCPU VM (rec*.jsonl), one written by hand in
 * the writer's format to reach what a live machine rarely shows (handmade.jsonl), and
 * damaged copies of rec.jsonl (damage.sh).
 *
 * The strongest check is the round trip: for every sample, replay_load() and then
 * sample_write() must write the recorded line again, byte for byte, notes included.
 * With IOTRIAGE_REPLAY_FILE set, test_roundtrip_env does that to the named file too
 * (tests/integration/test_replay_roundtrip.sh hands it a fresh recording).
 *
 * Expected values in the field tests are written out by hand from the fixture text.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sample/sample.h"
#include "out/output.h"
#include "store/replay.h"

/* ---- helpers ----------------------------------------------------------------------- */

static const char *fx(const char *name)
{
    static char path[4096];
    const char *dir = getenv("IOTRIAGE_FIXTURES");
    snprintf(path, sizeof(path), "%s/replay/%s", dir ? dir : "tests/fixtures", name);
    return path;
}

static struct replay *open_ok(const char *path)
{
    struct replay *r = NULL;
    char err[512] = "";
    int rc = replay_open(&r, path, err, sizeof(err));
    if (rc != 0)
        fail_msg("replay_open(%s): %d %s (run from the repo root or set IOTRIAGE_FIXTURES)",
                 path, rc, err);
    return r;
}

/* The whole file, for comparing lines. */
static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        fail_msg("cannot read %s", path);
    char *buf = NULL;
    size_t cap = 0, n = 0, got;
    do {
        if (n == cap)
            buf = realloc(buf, cap = cap ? 2 * cap : 1 << 16);
        assert_non_null(buf);
        got = fread(buf + n, 1, cap - n, f);
        n += got;
    } while (got > 0);
    fclose(f);
    *len = n;
    return buf;
}

/* Line lineno (1-based) of buf, with its newline if it has one. */
static const char *line_of(const char *buf, size_t len, size_t lineno, size_t *linelen)
{
    const char *p = buf, *end = buf + len;
    for (size_t k = 1; k < lineno; k++) {
        p = memchr(p, '\n', (size_t)(end - p));
        assert_non_null(p);
        p++;
    }
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    *linelen = nl ? (size_t)(nl + 1 - p) : (size_t)(end - p);
    return p;
}

/* sample_write of a frame, as the recorder would have written it. Stubs mean the
 * recording listed only active tasks (-o): write it the same way. */
static char *write_frame(const struct replay_frame *f, size_t *len)
{
    char *buf = NULL;
    FILE *m = open_memstream(&buf, len);
    assert_non_null(m);
    struct sample_opts o = { .hostname = f->host, .only_active = f->nunlisted > 0 };
    sample_write(m, &f->res, &f->ver, &o);
    assert_int_equal(fclose(m), 0);
    return buf;
}

/* Every sample of path written again; fails at the first difference. Returns the count. */
static size_t roundtrip(const char *path)
{
    struct replay *r = open_ok(path);
    size_t len;
    char *file = slurp(path, &len);
    struct replay_frame f = { 0 };
    char err[512];
    for (size_t i = 0; i < replay_count(r); i++) {
        int rc = replay_load(r, i, &f, err, sizeof(err));
        if (rc != 0)
            fail_msg("%s: sample %zu: %s", path, i, err);
        size_t wlen, glen;
        const char *want = line_of(file, len, replay_line(r, i), &wlen);
        char *got = write_frame(&f, &glen);
        if (glen != wlen || memcmp(got, want, glen) != 0) {
            size_t k = 0;
            while (k < glen && k < wlen && got[k] == want[k])
                k++;
            size_t from = k > 60 ? k - 60 : 0;
            fail_msg("%s:%zu: written again differs at column %zu:\n  recorded: %.*s\n  written:  %.*s",
                     path, replay_line(r, i), k + 1, 120, want + from, 120, got + from);
        }
        free(got);
    }
    size_t n = replay_count(r);
    replay_frame_free(&f);
    replay_close(r);
    free(file);
    return n;
}

static struct replay_frame *load_ok(struct replay *r, size_t i, struct replay_frame *f)
{
    char err[512];
    int rc = replay_load(r, i, f, err, sizeof(err));
    if (rc != 0)
        fail_msg("replay_load %zu: %d %s", i, rc, err);
    assert_true(f->res.cur == &f->snap);
    return f;
}

/* replay_load of sample i fails with rc and the message path + ":" + want. */
static void assert_load_fails(struct replay *r, const char *path, size_t i, int want_rc,
                              const char *want)
{
    struct replay_frame f = { 0 };
    char err[512] = "", full[1024];
    int rc = replay_load(r, i, &f, err, sizeof(err));
    snprintf(full, sizeof(full), "%s:%s", path, want);
    if (rc != want_rc || strcmp(err, full) != 0)
        fail_msg("sample %zu: got %d \"%s\"\n   expected %d \"%s\"", i, rc, err, want_rc, full);
    assert_null(f.snap.devs);                /* nothing left behind in the frame */
    assert_null(f.res.tasks);
}

static int find_task(const struct replay_frame *f, pid_t pid)
{
    for (size_t i = 0; i < f->snap.ntasks; i++)
        if (f->snap.tasks[i].id == pid)
            return (int)i;
    fail_msg("no task %d", (int)pid);
    return -1;
}

static int find_dev(const struct replay_frame *f, const char *name)
{
    for (size_t i = 0; i < f->snap.ndevs; i++)
        if (strcmp(f->snap.devs[i].ds.name, name) == 0)
            return (int)i;
    fail_msg("no device %s", name);
    return -1;
}

#define assert_num(x, want) assert_true(fabs((x) - (want)) < 1e-9)

/* ---- round trips ------------------------------------------------------------------- */

static void test_roundtrip_fixtures(void **state)
{
    (void)state;
    static const char *const files[] = {
        "rec.jsonl", "rec-threads.jsonl", "rec-only.jsonl", "rec-unpriv.jsonl", "handmade.jsonl",
    };
    size_t total = 0;
    for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++)
        total += roundtrip(fx(files[i]));
    assert_int_equal(total, 16);
}

static void test_roundtrip_env(void **state)
{
    (void)state;
    const char *path = getenv("IOTRIAGE_REPLAY_FILE");
    if (!path || !*path)
        skip();
    size_t n = roundtrip(path);
    printf("%s: %zu samples written again byte for byte\n", path, n);
}

/* ---- decoded values ---------------------------------------------------------------- */

/* rec.jsonl line 1: a real sample, values copied from the fixture text. */
static void test_fields_real(void **state)
{
    (void)state;
    struct replay *r = open_ok(fx("rec.jsonl"));
    assert_int_equal(replay_count(r), 3);
    assert_int_equal(replay_line(r, 2), 3);
    assert_int_equal(replay_line(r, 3), 0);
    struct replay_frame f = { 0 };
    load_ok(r, 0, &f);
    assert_int_equal(f.version, 1);
    assert_int_equal(f.line, 1);
    assert_string_equal(f.host, "vm");
    assert_num(f.snap.wall, 1796006709.583);
    assert_num(f.res.interval_s, 0.3);
    assert_false(f.snap.threads);
    assert_int_equal(f.snap.delayacct, DA_ON);
    assert_int_equal(f.snap.taskstats_err, 0);
    /* "io":{"some":{"avg10":0.030,"avg60":4.640,"avg300":6.450,"pct":69.003,"total_us":696307676} */
    assert_int_equal(f.snap.psi[PSI_IO].err, 0);
    assert_true(f.snap.psi[PSI_IO].some.valid);
    assert_num(f.snap.psi[PSI_IO].some.avg10, 0.03);
    assert_num(f.snap.psi[PSI_IO].some.avg300, 6.45);
    assert_int_equal(f.snap.psi[PSI_IO].some.total_us, 696307676);
    assert_true(f.res.psi[PSI_IO].some_valid);
    assert_num(f.res.psi[PSI_IO].some_pct, 69.003);
    assert_num(f.res.psi[PSI_IO].full_pct, 52.601);

    assert_int_equal(f.snap.ndevs, 10);
    assert_int_equal(f.res.ndevs, 10);
    int vda = find_dev(&f, "vda");
    assert_int_equal(vda, 8);
    const struct dev_sample *ds = &f.snap.devs[vda];
    const struct dev_rates *dr = &f.res.devs[vda];
    assert_ptr_equal(dr->dev, ds);
    assert_int_equal(ds->ds.major, 254);
    assert_int_equal(ds->ds.minor, 0);
    assert_false(ds->bd.partition);
    assert_string_equal(ds->bd.disk, "vda");
    assert_string_equal(ds->bd.scheduler, "mq-deadline");
    assert_int_equal(ds->bd.nsched, 4);
    assert_string_equal(ds->bd.schedulers[3], "bfq");
    assert_int_equal(ds->bd.nr_requests, 256);
    assert_int_equal(ds->bd.rotational, 1);
    assert_int_equal(ds->bd.hw_queues, 1);
    assert_int_equal(ds->bd.inflight_r, 1);
    assert_int_equal(ds->bd.inflight_w, 0);
    assert_true(ds->bd.has_queue);
    assert_int_equal(ds->bd.ntunables, 7);
    assert_string_equal(ds->bd.tunables[0].name, "async_depth");
    assert_string_equal(ds->bd.tunables[6].name, "writes_starved");
    assert_string_equal(ds->bd.tunables[6].value, "2");
    assert_int_equal(ds->ds.nfields, 17);
    assert_true(dr->valid && dr->has_discard && dr->has_flush);
    assert_false(dr->reset);
    assert_num(dr->r_s, 45137.528);
    assert_num(dr->wkb_s, 1279.269);
    assert_num(dr->r_await, 0.062);
    assert_true(isnan(dr->d_await));
    assert_num(dr->wareq_sz, 64.0);
    assert_num(dr->util, 74.624);
    assert_true(isnan(dr->quiet_await));
    assert_int_equal(dr->saturated, -1);
    /* the combined await is rebuilt: (0.062 * 45137.528 + 0.167 * 19.989) / 45157.517 */
    assert_true(fabs(dr->await - 0.0620465) < 1e-6);
    /* zram0: bio-based, no scheduler to choose */
    const struct dev_sample *z = &f.snap.devs[find_dev(&f, "zram0")];
    assert_string_equal(z->bd.scheduler, "");
    assert_int_equal(z->bd.nsched, 0);
    assert_int_equal(z->bd.nr_requests, -1);
    assert_int_equal(z->bd.rotational, 0);
    assert_int_equal(z->bd.hw_queues, 0);
    assert_int_equal(f.res.devs[9].saturated, 0);

    assert_int_equal(f.snap.ntasks, 5);
    assert_int_equal(f.res.ntasks, 5);
    assert_int_equal(f.ver.nroles, 5);
    assert_int_equal(f.nunlisted, 0);
    assert_null(f.unlisted);
    assert_non_null(f.snap.tdevs);
    for (size_t i = 0; i < 5; i++)
        assert_ptr_equal(f.res.tasks[i].task, &f.snap.tasks[i]);
    int k = find_task(&f, 2);                      /* kthreadd: attributed, no devices */
    assert_string_equal(f.snap.tasks[k].comm, "kthreadd");
    assert_string_equal(f.snap.tasks[k].cmdline, "");
    assert_true(f.snap.tdevs[k].known);
    assert_int_equal(f.snap.tdevs[k].n, 0);
    int t = find_task(&f, 3557);                   /* the O_DIRECT reader */
    const struct task_sample *ts = &f.snap.tasks[t];
    const struct task_rates *tr = &f.res.tasks[t];
    assert_string_equal(ts->comm, "taskhelper");
    assert_string_equal(ts->cmdline, "./build/tests/taskhelper dread /tmp/replay-work/data.bin 120");
    assert_string_equal(ts->user, "root");
    assert_int_equal(ts->uid, 0);
    assert_int_equal(ts->tgid, 3557);
    assert_int_equal(ts->policy, SCHED_OTHER);
    assert_int_equal(ts->start_ticks, 442537);
    assert_int_equal(ts->io_err, 0);
    assert_int_equal(ts->ioprio_raw, 0);
    assert_true(tr->io_valid && tr->delay_valid);
    assert_num(tr->read_bps, 45316812.378);
    assert_num(tr->write_bps, 0.0);
    assert_num(tr->io_delay_pct, 100.0);
    assert_num(tr->blkio_avg_ms, 0.096);
    assert_true(tr->delay_overcount);
    assert_int_equal(tr->prio.cls, IOC_BE);
    assert_int_equal(tr->prio.level, 4);
    assert_int_equal(tr->prio.source, IOS_NICE);
    assert_true(f.snap.tdevs[t].known);
    assert_int_equal(f.snap.tdevs[t].n, 1);
    assert_int_equal(f.snap.tdevs[t].idx[0], vda);
    assert_true(task_is_active(tr));
    int idle = find_task(&f, 28695);               /* ionice -c3 */
    assert_int_equal(f.snap.tasks[idle].ioprio_raw, IOPRIO_MAKE(IOC_IDLE, 7));
    assert_int_equal(f.res.tasks[idle].prio.cls, IOC_IDLE);
    assert_int_equal(f.res.tasks[idle].prio.source, IOS_EXPLICIT);
    int nice = find_task(&f, 28696);               /* nice -n 19 */
    assert_int_equal(f.snap.tasks[nice].nice, 19);
    assert_true(isnan(f.res.tasks[nice].blkio_avg_ms));

    /* warnings: the top-level list, indices resolved */
    assert_int_equal(f.ver.n, 2);
    assert_int_equal(f.ver.w[0].code, W_IOPRIO_LEVEL_IGNORED);
    assert_int_equal(f.ver.w[0].sev, SEV_WARN);
    assert_int_equal(f.ver.w[0].dev, vda);
    assert_int_equal(f.ver.w[0].task, nice);
    assert_int_equal(f.ver.w[1].task, find_task(&f, 28697));
    assert_non_null(strstr(f.ver.w[0].text, "so be/7 is served like be/4"));
    for (size_t i = 0; i < 5; i++)
        assert_int_equal(f.ver.roles[i], ROLE_NONE);
    replay_frame_free(&f);
    replay_frame_free(&f);                         /* twice is harmless */
    replay_close(r);
}

/* handmade.jsonl: everything a live run rarely shows, one sample each. */
static void test_fields_handmade(void **state)
{
    (void)state;
    struct replay *r = open_ok(fx("handmade.jsonl"));
    struct replay_frame f = { 0 };
    load_ok(r, 0, &f);
    /* psi: memory null with its reason in a note; cpu without a "full" line */
    assert_int_equal(f.snap.psi[PSI_MEMORY].err, -EACCES);
    assert_int_equal(f.snap.psi[PSI_CPU].err, 0);
    assert_true(f.snap.psi[PSI_CPU].some.valid);
    assert_false(f.snap.psi[PSI_CPU].full.valid);
    assert_false(f.res.psi[PSI_CPU].full_valid);
    assert_true(isnan(f.res.psi[PSI_CPU].full_pct));
    assert_int_equal(f.snap.delayacct, DA_OFF);
    assert_int_equal(f.snap.taskstats_err, 0);       /* the sysctl's note, not taskstats' */
    /* devices: a partition, a bio-based device after a counter reset */
    int sda1 = find_dev(&f, "sda1"), zram = find_dev(&f, "zram0");
    assert_true(f.snap.devs[sda1].bd.partition);
    assert_string_equal(f.snap.devs[sda1].bd.disk, "sda");
    assert_int_equal(f.snap.devs[sda1].ds.nfields, 15);   /* no flush counts */
    assert_false(f.res.devs[sda1].has_flush);
    assert_int_equal(f.res.devs[sda1].saturated, -1);
    assert_int_equal(f.res.devs[0].saturated, 1);
    assert_int_equal(f.snap.devs[0].bd.inflight_r, 3);
    assert_true(f.res.devs[zram].reset);
    assert_false(f.res.devs[zram].valid);
    assert_true(isnan(f.res.devs[zram].r_s) && isnan(f.res.devs[zram].await));
    assert_int_equal(f.snap.devs[zram].bd.nr_requests, -1);
    assert_int_equal(f.snap.devs[zram].bd.rotational, -1);
    assert_int_equal(f.snap.devs[zram].bd.inflight_r, -1);
    assert_int_equal(f.snap.devs[zram].bd.inflight_w, -1);
    assert_false(f.snap.devs[zram].bd.has_queue);
    /* processes */
    int dd = find_task(&f, 4242);
    const struct task_sample *s = &f.snap.tasks[dd];
    assert_string_equal(s->comm, "dd \x1b[31m");
    /* escapes decoded; \ufffd is the invalid byte it stood for, written back as \ufffd */
    assert_string_equal(s->cmdline, "dd if=/dev/sda of=/x \"q\" \xe2\x80\xae \xff\xff "
                                     "\xc3\xbcn\xc3\xaf" "c\xc3\xb6" "d\xc3\xa9 \xf3\xa0\x80\x81 "
                                     "\xf0\x9f\x98\x80 \\ \x01");
    assert_string_equal(s->user, "");               /* null */
    assert_int_equal(s->uid, 1234);
    assert_int_equal(s->policy, SCHED_IDLE);
    assert_int_equal(s->ioprio_raw, IOPRIO_MAKE(IOC_IDLE, 7));
    assert_int_equal(f.ver.roles[dd], ROLE_CAUSE);
    assert_num(f.res.tasks[dd].cancelled_write_bps, 4096.0);
    assert_false(f.res.tasks[dd].delay_valid);
    int sec = find_task(&f, 5000);
    assert_int_equal(f.snap.tasks[sec].io_err, -EACCES);
    assert_false(f.res.tasks[sec].io_valid);
    assert_true(f.snap.tdevs[sec].known);
    assert_int_equal(f.snap.tdevs[sec].err, -EACCES);
    assert_true(f.snap.tasks[sec].ioprio_raw < 0);  /* class null */
    assert_int_equal(f.snap.tasks[sec].policy, SCHED_FIFO);
    assert_int_equal(f.res.tasks[sec].prio.cls, IOC_RT);
    assert_int_equal(f.res.tasks[sec].prio.source, IOS_POLICY);
    assert_int_equal(f.ver.roles[sec], ROLE_SUFFER);
    int gone = find_task(&f, 6000);
    assert_int_equal(f.snap.tasks[gone].io_err, -ESRCH);
    assert_false(f.snap.tdevs[gone].known);          /* devices null, no error */
    assert_int_equal(f.snap.tasks[gone].policy, 6);  /* SCHED_DEADLINE */
    assert_int_equal(f.ver.roles[gone], ROLE_BOTH);
    int odd = find_task(&f, 7000);
    assert_int_equal(f.snap.tasks[odd].io_err, -ENXIO);
    assert_int_equal(f.snap.tdevs[odd].err, -EINVAL);
    assert_int_equal(f.snap.tasks[odd].policy, -1); /* "unknown" */
    /* warnings: a device finding (no task) and two task findings, in the recorded order */
    assert_int_equal(f.ver.n, 3);
    assert_int_equal(f.ver.w[0].code, W_IOPRIO_LOTTERY);
    assert_int_equal(f.ver.w[0].sev, SEV_CRIT);
    assert_int_equal(f.ver.w[0].task, -1);
    assert_int_equal(f.ver.w[0].dev, find_dev(&f, "sda"));
    assert_int_equal(f.ver.w[1].code, W_HIDDEN_QUEUE);
    assert_int_equal(f.ver.w[1].task, sec);
    assert_int_equal(f.ver.w[2].code, W_IOPRIO_WRITEBACK);
    assert_int_equal(f.ver.w[2].task, dd);

    /* sample 2: threads recorded with -o; two warned threads were not listed */
    load_ok(r, 1, &f);
    assert_null(f.host);
    assert_true(f.snap.threads);
    assert_int_equal(f.nunlisted, 2);
    assert_int_equal(f.snap.ntasks, 3);
    assert_int_equal(f.snap.tasks[0].id, 31);       /* stubs join in pid order */
    assert_int_equal(f.snap.tasks[1].id, 300);
    assert_int_equal(f.snap.tasks[2].id, 301);
    assert_int_equal(f.snap.tasks[1].tgid, 299);
    assert_int_equal(f.snap.tasks[1].nlwp, 1);
    assert_int_equal(f.snap.tasks[1].policy, SCHED_BATCH);
    assert_true(f.res.tasks[1].delay_overcount);
    assert_true(f.res.tasks[1].delay_valid);
    assert_true(f.snap.tasks[1].delay_valid);
    assert_num(f.res.tasks[1].io_delay_pct, 212.5);
    assert_string_equal(f.snap.tasks[0].comm, "sleep");
    assert_string_equal(f.snap.tasks[2].comm, "worker");
    assert_non_null(f.unlisted);
    assert_false(f.unlisted[1]);
    for (int i = 0; i < 3; i += 2) {
        assert_true(f.unlisted[i]);
        assert_false(task_is_active(&f.res.tasks[i]));
        assert_false(f.snap.tdevs[i].known);
        assert_int_equal(f.ver.roles[i], ROLE_NONE);
        assert_string_equal(f.snap.tasks[i].cmdline, "");
    }
    assert_int_equal(f.ver.w[0].task, 0);
    assert_int_equal(f.ver.w[1].task, 2);
    assert_int_equal(f.ver.w[2].task, 0);

    /* sample 3: nothing but notes */
    load_ok(r, 2, &f);
    assert_num(f.res.interval_s, 0.0);               /* null: the first sample */
    assert_int_equal(f.snap.ndevs, 0);
    assert_int_equal(f.snap.ntasks, 0);
    assert_int_equal(f.snap.diskstats_err, -EACCES);
    assert_int_equal(f.snap.psi[PSI_IO].err, -ENOENT);
    assert_int_equal(f.snap.psi[PSI_MEMORY].err, -EIO);
    assert_int_equal(f.snap.delayacct, DA_UNKNOWN);
    assert_int_equal(f.snap.taskstats_err, -EIO);
    assert_string_equal(f.snap.taskstats_msg,
                        "taskstats: family TASKSTATS not found (kernel without CONFIG_TASKSTATS)");
    /* sample 4: no sysctl, taskstats fine */
    load_ok(r, 3, &f);
    assert_int_equal(f.snap.delayacct, DA_UNKNOWN);
    assert_int_equal(f.snap.taskstats_err, 0);
    replay_frame_free(&f);
    replay_close(r);

    /* the unprivileged recording: taskstats refused, which the screen tells by EPERM */
    r = open_ok(fx("rec-unpriv.jsonl"));
    load_ok(r, 0, &f);
    assert_int_equal(f.snap.taskstats_err, -EPERM);
    assert_non_null(strstr(f.snap.taskstats_msg, "CAP_NET_ADMIN"));
    replay_frame_free(&f);
    replay_close(r);
}

/* A frame moves only through replay_frame_move; a failed load keeps the frame. */
static void test_frame_lifecycle(void **state)
{
    (void)state;
    struct replay *r = open_ok(fx("garbage.jsonl"));
    assert_int_equal(replay_count(r), 5);            /* the blank line is no sample */
    struct replay_frame a = { 0 }, b = { 0 };
    load_ok(r, 0, &a);
    double ts = a.snap.wall;
    size_t ntasks = a.snap.ntasks;
    char err[256];
    assert_int_equal(replay_load(r, 1, &a, err, sizeof(err)), -EINVAL);
    assert_int_equal(a.line, 1);                     /* still the good sample */
    assert_true(a.snap.wall == ts && a.snap.ntasks == ntasks && a.res.cur == &a.snap);
    replay_frame_move(&b, &a);
    assert_null(a.snap.devs);
    assert_null(a.res.cur);
    assert_true(b.res.cur == &b.snap);
    assert_ptr_equal(b.res.tasks[0].task, &b.snap.tasks[0]);
    size_t n;
    free(write_frame(&b, &n));
    load_ok(r, 2, &b);                               /* replaces, frees the old one */
    assert_int_equal(b.line, 4);
    assert_int_equal(replay_load(r, 5, &b, err, sizeof(err)), -ERANGE);
    assert_string_equal(err + strlen(err) - strlen("no sample 6 (the file has 5)"),
                        "no sample 6 (the file has 5)");
    replay_frame_free(&b);
    replay_close(r);
    replay_close(NULL);
    replay_frame_free(NULL);
}

/* ---- damage -------------------------------------------------------------------------- */

static void test_damaged_fixtures(void **state)
{
    (void)state;
    char path[4096];
    struct replay *r;

    snprintf(path, sizeof(path), "%s", fx("truncated.jsonl"));
    r = open_ok(path);
    assert_int_equal(replay_count(r), 3);
    struct replay_frame f = { 0 };
    load_ok(r, 1, &f);
    replay_frame_free(&f);
    assert_load_fails(r, path, 2, -EINVAL, "3: not JSON at column 4001: unterminated string "
                      "(the last line has no newline: the recording was cut short?)");
    replay_close(r);

    snprintf(path, sizeof(path), "%s", fx("garbage.jsonl"));
    r = open_ok(path);
    assert_load_fails(r, path, 1, -EINVAL, "2: not JSON at column 1: unexpected 'g', expected a value");
    assert_load_fails(r, path, 3, -EINVAL, "5: not JSON at column 1: unexpected byte 0x01, expected a value");
    load_ok(r, 2, &f);
    load_ok(r, 4, &f);
    replay_frame_free(&f);
    replay_close(r);

    snprintf(path, sizeof(path), "%s", fx("version99.jsonl"));
    r = open_ok(path);
    assert_load_fails(r, path, 0, -EPROTO, "1: sample from the future: format version 99, "
                      "this iotriage reads up to version 1 (replay it with a newer iotriage)");
    replay_close(r);

    snprintf(path, sizeof(path), "%s", fx("unknown-device.jsonl"));
    r = open_ok(path);
    assert_load_fails(r, path, 0, -EINVAL, "1: warnings[0].device: \"sdz\" is not among the sample's devices");
    replay_close(r);

    snprintf(path, sizeof(path), "%s", fx("negative-count.jsonl"));
    r = open_ok(path);
    assert_load_fails(r, path, 0, -EINVAL, "1: devices[8].nr_requests: -1 is negative");
    replay_close(r);

    char err[512];
    snprintf(path, sizeof(path), "%s", fx("empty.jsonl"));
    r = (struct replay *)1;
    assert_int_equal(replay_open(&r, path, err, sizeof(err)), -EINVAL);
    assert_null(r);
    assert_true(strlen(err) > strlen(path));
    assert_string_equal(err + strlen(path), ": no samples (the file is empty)");
}

/* A temporary file holding text; its path in path (PATH_MAX bytes). */
static void write_tmp(char *path, const char *text, size_t len)
{
    strcpy(path, "/tmp/iotriage-test-replay.XXXXXX");
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, text, len), (ssize_t)len);
    close(fd);
}

/* Line 1 of rec.jsonl with the first `find` replaced by `repl`. */
static char *damaged_line(const char *find, const char *repl, size_t *len)
{
    size_t flen;
    char *file = slurp(fx("rec.jsonl"), &flen);
    size_t l1;
    line_of(file, flen, 1, &l1);
    file[l1 - 1] = '\0';
    char *at = strstr(file, find);
    if (!at)
        fail_msg("rec.jsonl line 1 has no %s", find);
    size_t n = l1 + strlen(repl) + 1;
    char *out = malloc(n);
    assert_non_null(out);
    *len = (size_t)snprintf(out, n, "%.*s%s%s\n", (int)(at - file), file, repl, at + strlen(find));
    free(file);
    return out;
}

/* Each damage to a real sample, and its one-line message. */
static void test_damage_table(void **state)
{
    (void)state;
    static const struct { const char *find, *repl; int rc; const char *msg; } cases[] = {
        /* not a sample */
        { "\"version\":1,", "\"versio\":1,", -EINVAL, "no \"version\": not an iotriage sample" },
        { "\"version\":1,", "\"version\":\"1\",", -EINVAL, "version: expected an integer, got string" },
        { "\"version\":1,", "\"version\":0,", -EINVAL, "version: 0 is no format version (they start at 1)" },
        { "\"version\":1,", "\"version\":1.5,", -EINVAL, "version: expected an integer" },
        /* missing keys, wrong types */
        { "\"ts\":", "\"tz\":", -EINVAL, "ts: missing (expected a number or null)" },
        { "\"threads\":false", "\"threads\":\"no\"", -EINVAL, "threads: expected true or false, got string" },
        { "\"psi\":{\"io\":{", "\"psi\":{\"io\":[],\"x\":{", -EINVAL, "psi.io: expected an object or null, got array" },
        { "\"total_us\":696307676", "\"total_us\":-3", -EINVAL, "psi.io.some.total_us: -3 is negative" },
        { "\"comm\":\"kthreadd\",", "", -EINVAL, "processes[0].comm: missing (expected a string)" },
        { "\"pid\":2,", "\"pid\":null,", -EINVAL, "processes[0].pid: null, expected an integer" },
        { "\"nice\":0,", "\"nice\":40,", -EINVAL, "processes[0].nice: 40 is outside -20..19" },
        { "\"policy\":\"other\"", "\"policy\":\"turbo\"", -EINVAL,
          "processes[0].policy: \"turbo\" is no scheduling policy iotriage knows" },
        { "\"raw\":0,", "\"raw\":16388,", -EINVAL, "processes[0].ioprio.raw: 16388 is be/4, not none/0" },
        { "\"effective_class\":\"be\"", "\"effective_class\":\"none\"", -EINVAL,
          "processes[0].ioprio.effective_class: \"none\" is no effective I/O priority class iotriage knows" },
        { "\"role\":null", "\"role\":\"villain\"", -EINVAL, "processes[0].role: \"villain\" is no role iotriage knows" },
        { "\"devices\":[],", "\"devices\":[\"sdz\"],", -EINVAL,
          "processes[0].devices[0]: \"sdz\" is not among the sample's devices" },
        { "\"devices\":[],", "\"devices\":[\"vda\",\"vda\",\"vda\",\"vda\",\"vda\",\"vda\",\"vda\",\"vda\","
                             "\"vda\",\"vda\",\"vda\",\"vda\",\"vda\",\"vda\",\"vda\",\"vda\",\"vda\"],", -EINVAL,
          "processes[0].devices: 17 entries, at most 16 possible" },
        { "\"cmdline\":\"\"", "\"cmdline\":\"a\\u0000b\"", -EINVAL, "processes[0].cmdline: holds a NUL character" },
        { "\"name\":\"loop0\"", "\"name\":\"loop1\"", -EINVAL, "devices[0] and devices[1] are both \"loop1\"" },
        { "\"name\":\"loop0\"", "\"name\":\"\\u001b]0;pwned\\u0007loooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooong\"",
          -EINVAL, "devices[0].name: \"\\e]0;pwned\\x07looooooooooooooooooooooooooooo...\" is longer than 63 bytes" },
        { "\"pid\":3557,", "\"pid\":2,", -EINVAL, "processes[0] and processes[1] are both pid 2" },
        { "\"code\":\"ioprio-level-ignored\",\"severity\":\"warning\",\"device\":\"vda\",\"pid\"",
          "\"code\":\"ioprio-ignored-xx\",\"severity\":\"warning\",\"device\":\"vda\",\"pid\"", -EINVAL,
          "warnings[0].code: \"ioprio-ignored-xx\" is no warning code iotriage knows" },
        { "\"severity\":\"warning\",\"device\":\"vda\",\"pid\"", "\"severity\":\"fatal\",\"device\":\"vda\",\"pid\"",
          -EINVAL, "warnings[0].severity: \"fatal\" is no severity iotriage knows" },
        { "\"saturated\":null", "\"saturated\":1", -EINVAL,
          "devices[8].saturated: expected true, false or null, got number" },
        { "\"schedulers\":[\"none\"", "\"schedulers\":[\"a\",\"b\",\"c\",\"d\",\"e\",\"f\",\"g\",\"h\",\"none\"",
          -EINVAL, "devices[0].schedulers: 12 entries, at most 8 possible" },
        { "\"tunables\":{\"async_depth\":\"256\"", "\"tunables\":{\"async_depth\":256", -EINVAL,
          "devices[8].tunables: expected string values, got number" },
        { "\"notes\":[]", "\"notes\":[{\"source\":\"psi\"}]", -EINVAL, "notes[0].text: missing (expected a string)" },
        /* the stack of a device (slaves, holders): names only, within the bound */
        { "\"hw_queues\":1,", "\"hw_queues\":1,\"slaves\":[\"../etc\"],", -EINVAL,
          "devices[0].slaves[0]: \"../etc\" is no device name" },
        { "\"hw_queues\":1,", "\"hw_queues\":1,\"holders\":[\"a\\u001b[2J\"],", -EINVAL,
          "devices[0].holders[0]: \"a\\e[2J\" is no device name" },
        { "\"hw_queues\":1,", "\"hw_queues\":1,\"slaves\":[7],", -EINVAL,
          "devices[0].slaves[0]: expected a string, got number" },
        { "\"hw_queues\":1,", "\"hw_queues\":1,\"holders\":{},", -EINVAL,
          "devices[0].holders: expected an array" },
        /* the lens's loader */
        { "\"loader\":null", "\"loader\":\"bcc\"", -EINVAL, "loader: not \"light\", \"libbpf\" nor null" },
        { "\"loader\":null", "\"loader\":\"light\"", -EINVAL, "loader: a loader for a lens that is off" },
        { "\"loader\":null", "\"loader\":7", -EINVAL, "loader: expected a string or null, got number" },
        /* latency per priority (latency_by_prio) and the warnings' evidence */
        { "\"latency_by_prio\":null", "\"latency_by_prio\":{\"be/9\":{}}", -EINVAL,
          "devices[0].latency_by_prio: \"be/9\" is no I/O priority iotriage prints" },
        { "\"latency_by_prio\":null", "\"latency_by_prio\":[]", -EINVAL,
          "devices[0].latency_by_prio: expected an object, got array" },
        { "\"latency_by_prio\":null", "\"latency_by_prio\":{\"be/4\":{\"count\":3,\"p50_ms\":1,\"p90_ms\":1,"
          "\"p99_ms\":1,\"mean_ms\":1,\"hist\":[0,2],\"stages\":{}}}", -EINVAL,
          "devices[0].latency_by_prio.be/4.hist: holds 2 requests, count says 3" },
        { "\"latency_by_prio\":null", "\"latency_by_prio\":{\"be/4\":{\"count\":3,\"p50_ms\":1,\"p90_ms\":1,"
          "\"p99_ms\":1,\"mean_ms\":1,\"hist\":[0,3,0],\"stages\":{}}}", -EINVAL,
          "devices[0].latency_by_prio.be/4.hist: ends with an empty bucket" },
        { "\"latency_by_prio\":null", "\"latency_by_prio\":{\"idle\":{\"count\":3,\"p50_ms\":1,\"p90_ms\":1,"
          "\"p99_ms\":1,\"mean_ms\":1,\"hist\":[0,3],\"stages\":{}}}", -EINVAL,
          "devices[0].latency_by_prio.idle.stages.tag: missing" },
        { "\"latency_by_prio\":null", "\"latency_by_prio\":{\"be/4\":{\"count\":1,\"p50_ms\":1,\"p90_ms\":1,"
          "\"p99_ms\":1,\"mean_ms\":1,\"hist\":[0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,1],"
          "\"stages\":{}}}", -EINVAL, "devices[0].latency_by_prio.be/4.hist: 33 entries, at most 32 possible" },
        { "\"comm\":\"sleep\",\"evidence\":\"rule\"", "\"comm\":\"sleep\",\"evidence\":\"maybe\"", -EINVAL,
          "warnings[0].evidence: \"maybe\" is not \"measured\", \"sampled\" nor \"rule\"" },
        { "\"comm\":\"sleep\",\"evidence\":\"rule\",\"measured\":null", "\"comm\":\"sleep\",\"evidence\":\"rule\",\"measured\":{\"prio\":\"idle\"}",
          -EINVAL, "warnings[0].measured: figures on a warning of the rule table" },
        { "\"comm\":\"sleep\",\"evidence\":\"rule\",\"measured\":null", "\"comm\":\"sleep\",\"evidence\":\"measured\",\"measured\":{\"prio\":\"idle\","
          "\"p50_ms\":1,\"count\":30,\"vs\":\"be/9\",\"vs_p50_ms\":1,\"vs_count\":30}",
          -EINVAL, "warnings[0].measured: names no I/O priority iotriage prints" },
        { "\"comm\":\"sleep\",\"evidence\":\"rule\",\"measured\":null,\"contradicts_rules\":false",
          "\"comm\":\"sleep\",\"evidence\":\"rule\",\"measured\":null,\"contradicts_rules\":0", -EINVAL,
          "warnings[0].contradicts_rules: expected true or false, got number" },
        /* broken JSON inside a sample */
        { "\"comm\":\"kthreadd\"", "\"comm\":\"kth\\qreadd\"", -EINVAL, "invalid escape \\q" },
        { "\"comm\":\"kthreadd\"", "\"comm\":\"\\udc00\"", -EINVAL, "lone low surrogate \\udc00" },
        { "\"comm\":\"kthreadd\"", "\"comm\":\"\\ud800x\"", -EINVAL, "without its low half" },
        { "\"comm\":\"kthreadd\"", "\"comm\":\"k\",\"comm\":\"k\"", -EINVAL, "duplicate key \"comm\"" },
        { "\"tunables\":{}", "\"tunables\":{\"a\":[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}",
          -EINVAL, "over a limit at column" },
        { "\"r_s\":45137.528", "\"r_s\":1e999", -EINVAL, "number out of range" },
        { "\"r_s\":45137.528", "\"r_s\":NaN", -EINVAL, "unexpected 'N', expected a value" },
        /* who submitted (devices_from, lens_bytes) */
        { "\"devices_from\":\"files\",\"lens_bytes\":null", "\"devices_from\":\"disk\",\"lens_bytes\":null",
          -EINVAL, "processes[1].devices_from: not \"files\", \"lens\" nor \"both\"" },
        { "\"devices_from\":\"files\",\"lens_bytes\":null", "\"devices_from\":\"lens\",\"lens_bytes\":null",
          -EINVAL, "processes[1].devices_from: \"lens\", but lens_bytes lacks some of the devices" },
        { "\"devices_from\":\"files\",\"lens_bytes\":null", "\"devices_from\":\"both\",\"lens_bytes\":{}",
          -EINVAL, "processes[1].devices_from: \"both\", but lens_bytes names none of the devices" },
        { "\"devices_from\":\"files\",\"lens_bytes\":null", "\"devices_from\":\"lens\",\"lens_bytes\":[]",
          -EINVAL, "processes[1].lens_bytes: expected an object or null, got array" },
        { "\"devices_from\":\"files\",\"lens_bytes\":null", "\"devices_from\":\"lens\",\"lens_bytes\":{\"vda\":\"1\"}",
          -EINVAL, "processes[1].lens_bytes.vda: expected a number or null, got string" },
        /* the priorities its requests carried (requests_by_prio) */
        { "\"lens_bytes\":null,\"requests_by_prio\":null", "\"lens_bytes\":null,\"requests_by_prio\":{}",
          -EINVAL, "processes[0].requests_by_prio: an object, but lens_bytes is null" },
        { "\"devices_from\":\"files\",\"lens_bytes\":null,\"requests_by_prio\":null",
          "\"devices_from\":\"files\",\"lens_bytes\":{},\"requests_by_prio\":[]",
          -EINVAL, "processes[1].requests_by_prio: expected an object or null, got array" },
        { "\"devices_from\":\"files\",\"lens_bytes\":null,\"requests_by_prio\":null",
          "\"devices_from\":\"files\",\"lens_bytes\":{},\"requests_by_prio\":{\"vda\":{\"be/4\":1}}",
          -EINVAL, "processes[1].requests_by_prio.vda: a device lens_bytes does not name" },
        { "\"devices_from\":\"files\",\"lens_bytes\":null,\"requests_by_prio\":null",
          "\"devices_from\":\"lens\",\"lens_bytes\":{\"vda\":1},\"requests_by_prio\":{\"vda\":{\"be/9\":1}}",
          -EINVAL, "processes[1].requests_by_prio.vda: \"be/9\" is no I/O priority iotriage prints" },
        { "\"devices_from\":\"files\",\"lens_bytes\":null,\"requests_by_prio\":null",
          "\"devices_from\":\"lens\",\"lens_bytes\":{\"vda\":1},\"requests_by_prio\":{\"vda\":{\"idle\":\"1\"}}",
          -EINVAL, "processes[1].requests_by_prio.vda.idle: expected a number, got string" },
        /* its requests' wait (requests_wait) */
        { "\"lens_bytes\":null,\"requests_by_prio\":null,\"requests_wait\":null",
          "\"lens_bytes\":null,\"requests_by_prio\":null,\"requests_wait\":{}",
          -EINVAL, "processes[0].requests_wait: an object, but lens_bytes is null" },
        { "\"devices_from\":\"files\",\"lens_bytes\":null,\"requests_by_prio\":null,\"requests_wait\":null",
          "\"devices_from\":\"files\",\"lens_bytes\":{},\"requests_by_prio\":null,\"requests_wait\":{\"vda\":{\"in_flight\":1,\"await_ms\":1}}",
          -EINVAL, "processes[1].requests_wait.vda: a device lens_bytes does not name" },
        { "\"devices_from\":\"files\",\"lens_bytes\":null,\"requests_by_prio\":null,\"requests_wait\":null",
          "\"devices_from\":\"lens\",\"lens_bytes\":{\"vda\":1},\"requests_by_prio\":null,\"requests_wait\":{\"vda\":{\"in_flight\":\"1\",\"await_ms\":1}}",
          -EINVAL, "processes[1].requests_wait.vda.in_flight: expected a number or null, got string" },
        { "\"writeback_bps\":null", "\"writeback_bps\":true", -EINVAL,
          "devices[0].writeback_bps: expected a number or null, got" },
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        size_t len;
        char *text = damaged_line(cases[i].find, cases[i].repl, &len);
        char path[64], err[512] = "";
        write_tmp(path, text, len);
        free(text);
        struct replay *r = open_ok(path);
        struct replay_frame f = { 0 };
        int rc = replay_load(r, 0, &f, err, sizeof(err));
        char prefix[128];
        snprintf(prefix, sizeof(prefix), "%s:1: ", path);
        if (rc != cases[i].rc || strncmp(err, prefix, strlen(prefix)) != 0 ||
            !strstr(err, cases[i].msg) || strchr(err, '\n') || strchr(err, '\x1b'))
            fail_msg("case %zu (%s -> %s): got %d \"%s\"\n   expected %d \"%s\"", i, cases[i].find,
                     cases[i].repl, rc, err, cases[i].rc, cases[i].msg);
        assert_null(f.snap.devs);
        replay_close(r);
        unlink(path);
    }
}

/* A sample with the lens's attribution keys decodes into the task's devices and the
 * device's writeback figure, and is written again byte for byte. */
static void test_lens_attribution(void **state)
{
    (void)state;
    size_t len;
    char *once = damaged_line("\"devices\":[\"vda\"],\"devices_from\":\"files\",\"lens_bytes\":null,"
                              "\"requests_by_prio\":null,\"requests_wait\":null",
                              "\"devices\":[\"vda\",\"loop1\"],\"devices_from\":\"both\","
                              "\"lens_bytes\":{\"loop1\":1234.500},"
                              "\"requests_by_prio\":{\"loop1\":{\"be/4\":234.500,\"idle\":1000.000}},"
                              "\"requests_wait\":{\"loop1\":{\"in_flight\":0.980,\"await_ms\":9.750}}", &len);
    const char *wb = "\"name\":\"loop1\"";
    char *at = strstr(once, wb);
    assert_non_null(at);
    at = strstr(at, "\"writeback_bps\":null");
    assert_non_null(at);
    char *text = malloc(len + 16);
    assert_non_null(text);
    len = (size_t)sprintf(text, "%.*s\"writeback_bps\":4096.000%s", (int)(at - once), once,
                          at + strlen("\"writeback_bps\":null"));
    free(once);
    char path[64];
    write_tmp(path, text, len);
    struct replay *r = open_ok(path);
    struct replay_frame f = { 0 };
    load_ok(r, 0, &f);
    int ti = find_task(&f, 3557), di = find_dev(&f, "loop1");
    const struct task_devs *td = &f.snap.tdevs[ti];
    assert_int_equal(td->n, 2);
    assert_true(td->lens);
    assert_int_equal(td->from_files, 1);          /* vda: from files */
    assert_int_equal(td->from_lens, 2);           /* loop1: the lens */
    assert_num(task_lens_bps(&f.snap, td, 1), 1234.5);
    assert_num(task_lens_bps(&f.snap, td, 0), 0.0);
    assert_string_equal(task_devs_source(td), "both");
    /* the same bytes by the priority the requests carried (issue #35) */
    assert_true(td->lens_prio);
    struct task_prio_bps e[4];
    assert_int_equal(task_lens_prios(&f.snap, td, 1, e, 4), 2);
    assert_int_equal(e[0].prio, IOPRIO_MAKE(IOC_BE, 4));
    assert_num(e[0].bps, 234.5);
    assert_int_equal(e[1].prio, IOPRIO_MAKE(IOC_IDLE, 0));
    assert_num(e[1].bps, 1000.0);
    assert_int_equal(task_lens_prios(&f.snap, td, 0, e, 4), 0);
    /* its requests' wait there (issue #35) */
    assert_true(td->lens_wait);
    const struct task_async *a = task_lens_async_of(&f.snap, td, 1);
    assert_non_null(a);
    assert_num(a->in_flight, 0.98);
    assert_num(a->await_ms, 9.75);
    assert_num(f.res.devs[di].kernel_bps, 4096.0);
    assert_true(isnan(f.res.devs[find_dev(&f, "vda")].kernel_bps));
    size_t glen;
    char *got = write_frame(&f, &glen);
    if (glen != len || memcmp(got, text, len) != 0)
        fail_msg("written again differs:\n%.*s\n%.*s", (int)glen, got, (int)len, text);
    free(got);
    free(text);
    replay_frame_free(&f);
    replay_close(r);
    unlink(path);
}

/* Files that are not recordings at all, and the limits. */
/* A device's stack decodes into its lists and is written again byte for byte; a
 * recording made before stacks were kept (no keys) leaves them unknown, never empty, and
 * null says the same. */
static void test_device_stack(void **state)
{
    (void)state;
    size_t len;
    char *text = damaged_line("\"hw_queues\":1,", "\"hw_queues\":1,\"slaves\":[\"dm-0\",\"sdb1\"],"
                              "\"holders\":[],", &len);
    char path[64];
    write_tmp(path, text, len);
    struct replay *r = open_ok(path);
    struct replay_frame f = { 0 };
    load_ok(r, 0, &f);
    const struct dev_sample *d = &f.snap.devs[find_dev(&f, "loop0")];
    assert_true(d->stack.slaves.known);
    assert_int_equal(d->stack.slaves.n, 2);
    assert_string_equal(d->stack.slaves.name[0], "dm-0");
    assert_string_equal(d->stack.slaves.name[1], "sdb1");
    assert_true(d->stack.holders.known);
    assert_int_equal(d->stack.holders.n, 0);
    d = &f.snap.devs[find_dev(&f, "vda")];             /* no keys: unknown */
    assert_false(d->stack.slaves.known);
    assert_false(d->stack.holders.known);
    size_t glen;
    char *got = write_frame(&f, &glen);
    if (glen != len || memcmp(got, text, len) != 0)
        fail_msg("written again differs:\n%.*s\n%.*s", (int)glen, got, (int)len, text);
    free(got);
    replay_frame_free(&f);
    replay_close(r);
    unlink(path);
    free(text);

    text = damaged_line("\"hw_queues\":1,", "\"hw_queues\":1,\"slaves\":null,", &len);
    write_tmp(path, text, len);
    r = open_ok(path);
    memset(&f, 0, sizeof(f));
    load_ok(r, 0, &f);
    d = &f.snap.devs[find_dev(&f, "loop0")];
    assert_false(d->stack.slaves.known);
    replay_frame_free(&f);
    replay_close(r);
    unlink(path);
    free(text);
}

static void test_files(void **state)
{
    (void)state;
    char path[64], err[512];
    struct replay *r;

    /* only blank lines */
    write_tmp(path, "\n  \n\t\r\n", 7);
    assert_int_equal(replay_open(&r, path, err, sizeof(err)), -EINVAL);
    assert_non_null(strstr(err, ": no samples (only blank lines)"));
    unlink(path);

    /* lines that are JSON but not samples: each fails alone, with its line number */
    const char *notsamples = "{\"hello\":\"world\"}\n[1,2,3]\n\"text\"\n{\"version\":1}\n";
    write_tmp(path, notsamples, strlen(notsamples));
    r = open_ok(path);
    assert_int_equal(replay_count(r), 4);
    char want[256];
    snprintf(want, sizeof(want), "1: no \"version\": not an iotriage sample");
    assert_load_fails(r, path, 0, -EINVAL, want);
    assert_load_fails(r, path, 1, -EINVAL, "2: a JSON array, not an iotriage sample (an object)");
    assert_load_fails(r, path, 2, -EINVAL, "3: a JSON string, not an iotriage sample (an object)");
    assert_load_fails(r, path, 3, -EINVAL, "4: ts: missing (expected a number or null)");
    replay_close(r);
    unlink(path);

    /* a huge array: refused by the value limit, without a huge allocation */
    size_t n = (size_t)REPLAY_VALUES_MAX + 10;
    size_t len = 64 + 2 * n;
    char *big = malloc(len);
    assert_non_null(big);
    size_t k = (size_t)sprintf(big, "{\"version\":1,\"processes\":[");
    for (size_t i = 0; i < n; i++) {
        big[k++] = '0';
        big[k++] = ',';
    }
    big[k - 1] = ']';
    big[k++] = '}';
    big[k++] = '\n';
    write_tmp(path, big, k);
    free(big);
    r = open_ok(path);
    assert_int_equal(replay_load(r, 0, &(struct replay_frame){ 0 }, err, sizeof(err)), -EINVAL);
    assert_non_null(strstr(err, ":1: over a limit at column"));
    assert_non_null(strstr(err, "more than 4194304 values"));
    replay_close(r);
    unlink(path);

    /* over 512 MiB: refused at open (a sparse file: nothing is read) */
    strcpy(path, "/tmp/iotriage-test-replay.XXXXXX");
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(ftruncate(fd, (off_t)REPLAY_FILE_MAX + 1), 0);
    close(fd);
    r = (struct replay *)1;
    assert_int_equal(replay_open(&r, path, err, sizeof(err)), -EFBIG);
    assert_null(r);
    assert_non_null(strstr(err, ": over the 512 MiB a replay reads"));
    unlink(path);

    /* missing file, directory */
    assert_int_equal(replay_open(&r, "/nonexistent/rec.jsonl", err, sizeof(err)), -ENOENT);
    assert_string_equal(err, "/nonexistent/rec.jsonl: No such file or directory");
    assert_int_equal(replay_open(&r, "/tmp", err, sizeof(err)), -EISDIR);
    assert_string_equal(err, "/tmp: Is a directory");

    /* a file without a final newline: the last sample still loads when it is whole */
    size_t flen;
    char *file = slurp(fx("rec.jsonl"), &flen);
    write_tmp(path, file, flen - 1);
    free(file);
    r = open_ok(path);
    struct replay_frame f = { 0 };
    load_ok(r, 2, &f);
    replay_frame_free(&f);
    replay_close(r);
    unlink(path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_roundtrip_fixtures),
        cmocka_unit_test(test_roundtrip_env),
        cmocka_unit_test(test_fields_real),
        cmocka_unit_test(test_fields_handmade),
        cmocka_unit_test(test_frame_lifecycle),
        cmocka_unit_test(test_damaged_fixtures),
        cmocka_unit_test(test_damage_table),
        cmocka_unit_test(test_lens_attribution),
        cmocka_unit_test(test_device_stack),
        cmocka_unit_test(test_files),
    };
    /* a file to round-trip: that alone (the fixtures need the repo root as cwd) */
    const char *file = getenv("IOTRIAGE_REPLAY_FILE");
    if (file && *file)
        cmocka_set_test_filter("test_roundtrip_env");
    return cmocka_run_group_tests(tests, NULL, NULL);
}
