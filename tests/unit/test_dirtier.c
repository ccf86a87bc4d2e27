/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Unit tests of the writeback's split by dirtier (issue 14), on hand-built readings and
 * the cgroup fixture tree: no BPF, no privileges.
 *   - lens_wb_interval: the interval of the lens's (device, dirtier, cgroup) rows;
 *   - cgroups_find_id: a v2 cgroup id (its directory's inode number) to its entry;
 *   - delta_compute's writeback_by rows: summed per (dirtier, cgroup) over a disk and its
 *     partitions, the kernel's cgroup before the lens's, the unknown share a row of its
 *     own, paths and comms resolved; unknown (not empty) without the dirtying tracepoint
 *     or an interval.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "delta.h"
#include "store/replay.h"
#include "source/cgroups.h"
#include "source/lens.h"
#include "verdict.h"
#include "devs_fixture.h"

static const char *fixtures(void)
{
    const char *dir = getenv("IOTRIAGE_FIXTURES");
    return dir ? dir : "tests/fixtures";
}

static int open_fixture_dir(const char *rel)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/%s", fixtures(), rel);
    int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        fail_msg("cannot open fixture %s (run from the repo root)", path);
    return fd;
}

/* The inode number of a cgroup directory of the v2 fixture tree: its id. */
static uint64_t fixture_ino(const char *cg)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/cgroup/v2/sys/fs/cgroup%s", fixtures(), cg);
    struct stat st;
    if (stat(path, &st) != 0)
        fail_msg("cannot stat %s", path);
    return (uint64_t)st.st_ino;
}

static void test_wb_interval(void **state)
{
    (void)state;
    struct lens_wb_row pr[] = {
        { .major = 8, .minor = 16, .tgid = 0, .bytes = 100, .bios = 1 },
        { .major = 8, .minor = 16, .tgid = 42, .cgid = 7, .bytes = 4096, .bios = 1 },
        { .major = 8, .minor = 16, .tgid = 43, .cgid = 9, .bytes = 9000, .bios = 9 },
        { .major = 8, .minor = 17, .tgid = 42, .cgid = 7, .bytes = 500, .bios = 5 },
    };
    struct lens_wb_row cr[] = {
        { .major = 8, .minor = 16, .tgid = 0, .bytes = 100, .bios = 1 },        /* still */
        { .major = 8, .minor = 16, .tgid = 42, .cgid = 7, .bytes = 12288, .bios = 3 },
        { .major = 8, .minor = 16, .tgid = 42, .cgid = 7, .blkcg = 11, .bytes = 800, .bios = 1 },
        { .major = 8, .minor = 16, .tgid = 43, .cgid = 9, .bytes = 300, .bios = 1 }, /* evicted */
        { .major = 8, .minor = 17, .tgid = 42, .cgid = 7, .bytes = 700, .bios = 6 },
    };
    /* the reader sorts by lens_wb_cmp: the rows above are in that order */
    struct lens_wb_row sh[5] = { cr[4], cr[2], cr[0], cr[3], cr[1] };
    qsort(sh, 5, sizeof(*sh), lens_wb_cmp);
    assert_memory_equal(sh, cr, sizeof(cr));
    struct lens_reading p = { .wbs = pr, .nwbs = 4 }, c = { .wbs = cr, .nwbs = 5 };
    struct lens_wb_row out[8];
    size_t n = lens_wb_interval(&p, &c, out, 8);
    assert_int_equal(n, 4);                      /* the unknown row did not move */
    assert_int_equal(out[0].tgid, 42);
    assert_int_equal(out[0].bytes, 8192);
    assert_int_equal(out[0].bios, 2);
    assert_int_equal(out[1].blkcg, 11);          /* new in the interval: all of it */
    assert_int_equal(out[1].bytes, 800);
    assert_int_equal(out[2].tgid, 43);
    assert_int_equal(out[2].bytes, 300);         /* smaller than before: a lower bound */
    assert_int_equal(out[3].minor, 17);
    assert_int_equal(out[3].bytes, 200);
    assert_int_equal(lens_wb_interval(NULL, &c, out, 8), 0);
    memset(out, 0xee, sizeof(out));
    assert_int_equal(lens_wb_interval(&p, &c, out, 1), 4);   /* counted, one written */
    assert_int_equal(out[1].tgid, (pid_t)0xeeeeeeee);
}

/* A world: the v2 fixture tree's cgroups for tasks 100 (db.service) and 200. */
struct world {
    int proc_fd, sys_fd;
    struct cgroup_src *src;
    struct task_sample task[2];
};

static struct cgroup_set *world_take(struct world *w)
{
    memset(w, 0, sizeof(*w));
    w->proc_fd = open_fixture_dir("cgroup/v2/proc");
    w->sys_fd = open_fixture_dir("cgroup/v2/sys");
    w->src = cgroups_open(w->proc_fd, w->sys_fd, 5.0);
    static const pid_t ids[2] = { 100, 200 };
    static const char *const comms[2] = { "postgres", "dockerd" };
    for (int i = 0; i < 2; i++) {
        w->task[i].id = w->task[i].tgid = ids[i];
        w->task[i].start_ticks = 1000;
        w->task[i].comm = comms[i];
        w->task[i].cmdline = comms[i];
        w->task[i].user = "root";
    }
    return cgroups_take(w->src, 100.0, false, w->task, 2);
}

static void world_free(struct world *w, struct cgroup_set *set)
{
    cgroups_free(set);
    cgroups_close(w->src);
    close(w->proc_fd);
    close(w->sys_fd);
}

static void test_cgroup_ids(void **state)
{
    (void)state;
    struct world w;
    struct cgroup_set *set = world_take(&w);
    assert_int_equal(set->err, 0);
    assert_true(set->n >= 3);                    /* "/", "/system.slice", its service */
    for (size_t i = 0; i < set->n; i++) {
        uint64_t ino = fixture_ino(strcmp(set->v[i].path, "/") == 0 ? "" : set->v[i].path);
        assert_int_equal(set->v[i].id, ino);
        assert_int_equal(cgroups_find_id(set, ino), (int)i);
    }
    int db = cgroups_find_id(set, fixture_ino("/system.slice/db.service"));
    assert_true(db >= 0);
    assert_string_equal(set->v[db].path, "/system.slice/db.service");
    assert_int_equal(cgroups_find_id(set, 0), -1);           /* unknown id */
    assert_int_equal(cgroups_find_id(set, UINT64_MAX), -1);  /* no listed cgroup has it */
    assert_int_equal(cgroups_find_id(NULL, 5), -1);
    world_free(&w, set);
}

static void set_snap(struct snapshot *s, double mono)
{
    memset(s, 0, sizeof(*s));
    s->mono = mono;
    s->clk_tck = 100;
    s->delayacct = DA_OFF;
    s->delayacct_since_ticks = -1;
    for (int k = 0; k < PSI_NRES; k++)
        s->psi[k].err = -ENOENT;
}

static void test_writeback_by(void **state)
{
    (void)state;
    struct world w;
    struct cgroup_set *set = world_take(&w);
    uint64_t db = fixture_ino("/system.slice/db.service");
    struct dev_sample dv[3];
    devs_fixture(dv);
    struct snapshot p, c;
    set_snap(&p, 10.0);
    set_snap(&c, 12.0);
    p.devs = c.devs = dv;
    p.ndevs = c.ndevs = 3;
    c.tasks = w.task;
    c.ntasks = 2;
    c.cgroups = set;
    struct lens_wb_row pr[] = {
        { .major = 8, .minor = 16, .tgid = 0, .bytes = 1000 },
    };
    struct lens_wb_row cr[] = {
        { .major = 8, .minor = 16, .tgid = 0, .bytes = 1400 },               /* +400 unknown */
        { .major = 8, .minor = 16, .tgid = 100, .cgid = db, .bytes = 6000 },
        { .major = 8, .minor = 16, .tgid = 555, .cgid = 77, .bytes = 2000, .comm = "dd" }, /* exited */
        { .major = 8, .minor = 17, .tgid = 100, .cgid = db, .bytes = 4000 }, /* sdb1 */
        { .major = 8, .minor = 17, .tgid = 100, .cgid = 1, .blkcg = db, .bytes = 2000 },
    };
    p.lens.wbs = pr, p.lens.nwbs = 1;
    c.lens.wbs = cr, c.lens.nwbs = 5;
    p.lens_on = c.lens_on = true;
    p.lens.dirty_on = c.lens.dirty_on = true;
    struct baselines hist = { 0 };
    struct result r;
    delta_compute(&p, &c, &hist, &r);
    const struct dev_rates *d = &r.devs[0];
    assert_true(d->wb_valid);
    assert_int_equal(d->nwb, 4);
    /* biggest first: db.service's postgres, 10000 B from the lens over sdb and sdb1 */
    assert_int_equal(d->wb[0].pid, 100);
    assert_int_equal(d->wb[0].from, WB_FROM_LENS);
    assert_string_equal(d->wb[0].comm, "postgres");
    assert_string_equal(d->wb[0].cgroup, "/system.slice/db.service");
    assert_true(fabs(d->wb[0].bps - 5000.0) < 1e-9);
    /* the kernel's own cgroup (blkcg) stands in for the lens's and is said to */
    assert_int_equal(d->wb[1].pid, 100);
    assert_int_equal(d->wb[1].from, WB_FROM_BLKCG);
    assert_int_equal(d->wb[1].cgid, db);
    assert_true(fabs(d->wb[1].bps - 1000.0) < 1e-9);
    /* an exited dirtier in a cgroup no listed task is in: its id and the name it had
     * when it dirtied the pages, no path */
    assert_int_equal(d->wb[2].pid, 555);
    assert_int_equal(d->wb[2].cgid, 77);
    assert_string_equal(d->wb[2].comm, "dd");
    assert_string_equal(d->wb[2].cgroup, "");
    /* the unknown share: its own row */
    assert_int_equal(d->wb[3].pid, 0);
    assert_int_equal(d->wb[3].cgid, 0);
    assert_int_equal(d->wb[3].from, WB_FROM_NONE);
    assert_true(fabs(d->wb[3].bps - 200.0) < 1e-9);
    /* the partition: its own rows only */
    assert_true(r.devs[1].wb_valid);
    assert_int_equal(r.devs[1].nwb, 2);
    assert_true(fabs(r.devs[1].wb[0].bps + r.devs[1].wb[1].bps - 3000.0) < 1e-9);
    /* nothing written: known and empty */
    assert_true(r.devs[2].wb_valid);
    assert_int_equal(r.devs[2].nwb, 0);
    result_free(&r);
    /* duty-cycled with no window in the interval: the lens saw no dirtier, unknown */
    p.lens.mono = 10.0, c.lens.mono = 12.0;
    p.lens.detached_s = 5.0, c.lens.detached_s = 7.0;
    delta_compute(&p, &c, &hist, &r);
    assert_false(r.devs[0].wb_valid);
    assert_false(r.devs[2].wb_valid);
    result_free(&r);
    p.lens.detached_s = c.lens.detached_s = 0;
    /* without the dirtying tracepoint, or the first sample: unknown */
    c.lens.dirty_on = false;
    delta_compute(&p, &c, &hist, &r);
    assert_false(r.devs[0].wb_valid);
    assert_null(r.devs[0].wb);
    result_free(&r);
    c.lens.dirty_on = true;
    delta_compute(NULL, &c, &hist, &r);
    assert_false(r.devs[0].wb_valid);
    result_free(&r);
    baselines_free(&hist);
    world_free(&w, set);
}

/* The cause share counts what kernel threads wrote for a buffered writer's dirtied pages:
 * a writer that submits 10 % of a saturated device's bytes itself and whose pages the
 * flusher writes for another 60 % causes its queue. */
static void test_cause_counts_writeback(void **state)
{
    (void)state;
    struct snapshot snap;
    set_snap(&snap, 1.0);
    struct dev_sample dev;
    memset(&dev, 0, sizeof(dev));
    snprintf(dev.ds.name, sizeof(dev.ds.name), "sdb");
    snprintf(dev.bd.disk, sizeof(dev.bd.disk), "sdb");
    snprintf(dev.bd.scheduler, sizeof(dev.bd.scheduler), "mq-deadline");
    dev.bd.nr_requests = 64;
    struct task_sample ts = { .id = 42, .tgid = 42, .comm = "writer" };
    struct task_devs td = { .known = true, .lens = true, .n = 1, .from_lens = 1 };
    snap.devs = &dev;
    snap.ndevs = 1;
    snap.tasks = &ts;
    snap.ntasks = 1;
    snap.tdevs = &td;
    task_lens_row(&snap, &td)[0] = 100.0 * 1024;
    struct wb_share rows[2] = {
        { .bps = 600.0 * 1024, .pid = 42, .cgid = 5, .from = WB_FROM_LENS },
        { .bps = 300.0 * 1024 },
    };
    struct dev_rates dr = { .dev = &dev, .valid = true, .saturated = 1, .aqu_sz = 9,
                            .await = 40, .wkb_s = 1000, .wb_valid = true, .wb = rows, .nwb = 2 };
    struct task_rates tr = { .task = &ts, .io_valid = true, .write_bps = 700.0 * 1024,
                             .io_delay_pct = (double)NAN };
    struct result res = { .cur = &snap, .interval_s = 1.0, .devs = &dr, .ndevs = 1,
                          .tasks = &tr, .ntasks = 1 };
    struct verdicts v;
    verdict_compute(&res, &v);
    assert_int_equal(v.roles[0], ROLE_CAUSE);        /* 100 + 600 of 1000 kB/s */
    verdicts_free(&v);
    rows[0].pid = 43;                                 /* another's pages: 10 % alone */
    verdict_compute(&res, &v);
    assert_int_equal(v.roles[0], ROLE_NONE);
    verdicts_free(&v);
    /* its pages on a device outside its list (btrfs's anonymous st_dev): still its own */
    rows[0].pid = 42;
    td.n = 0;
    td.from_lens = 0;
    verdict_compute(&res, &v);
    assert_int_equal(v.roles[0], ROLE_CAUSE);        /* 600 of 1000 kB/s */
    verdicts_free(&v);
    td.lens = false;                                  /* no lens: not known */
    verdict_compute(&res, &v);
    assert_int_equal(v.roles[0], ROLE_NONE);
    verdicts_free(&v);
    rows[0].pid = 43;
    assert_true(fabs(dev_writeback_of(&dr, 43) - 600.0 * 1024) < 1e-9);
    assert_true(dev_writeback_of(&dr, 42) == 0);
    dr.wb_valid = false;
    assert_true(isnan(dev_writeback_of(&dr, 43)));
    free(snap.lens_bps);
    free(snap.lens_async);
}

/* rec-lens.jsonl's last sample carries rows; the same file without the two keys (a
 * recording made before them) still replays, the split unknown. */
static void test_replay(void **state)
{
    (void)state;
    char path[512], err[512];
    snprintf(path, sizeof(path), "%s/replay/rec-lens.jsonl", fixtures());
    struct replay *rp;
    if (replay_open(&rp, path, err, sizeof(err)) != 0)
        fail_msg("%s", err);
    struct replay_frame f = { 0 };
    if (replay_load(rp, replay_count(rp) - 1, &f, err, sizeof(err)) != 0)
        fail_msg("%s", err);
    const struct dev_rates *vda = NULL;
    for (size_t i = 0; i < f.res.ndevs; i++)
        if (strcmp(f.res.devs[i].dev->ds.name, "vda") == 0)
            vda = &f.res.devs[i];
    if (!vda)
        fail_msg("no vda in the fixture's last sample");
    assert_true(vda->wb_valid);
    assert_int_equal(vda->nwb, 2);
    assert_int_equal(vda->wb[0].pid, 6091);
    assert_string_equal(vda->wb[0].comm, "fio");
    assert_string_equal(vda->wb[0].cgroup, "/lab.slice/fio-writer");
    assert_int_equal(vda->wb[0].cgid, 80585);
    assert_int_equal(vda->wb[0].from, WB_FROM_LENS);
    assert_int_equal(vda->wb[1].pid, 0);
    assert_int_equal(vda->wb[1].from, WB_FROM_NONE);
    assert_true(fabs(vda->wb[1].bps - 12.5) < 1e-9);
    replay_frame_free(&f);
    replay_close(rp);

    /* the old file: the same lines without writeback_by and lens_writeback */
    FILE *in = fopen(path, "r");
    char old[] = "/tmp/iotriage-dirtier-old.XXXXXX";
    int fd = mkstemp(old);
    FILE *out = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (!in || !out)
        fail_msg("cannot copy %s to %s", path, old);
    static char line[1 << 20];
    while (fgets(line, sizeof(line), in)) {
        static const char *const keys[] = { ",\"writeback_by\":", ",\"lens_writeback\":" };
        for (int k = 0; k < 2; k++) {
            char *at;
            while ((at = strstr(line, keys[k]))) {
                /* the value ends at the first ',"' at depth 0 after it */
                char *v = at + strlen(keys[k]);
                int depth = 0;
                char *e = v;
                for (; *e; e++) {
                    if (*e == '[' || *e == '{')
                        depth++;
                    else if (*e == ']' || *e == '}')
                        depth--;
                    else if (*e == ',' && depth == 0)
                        break;
                    if (depth < 0)
                        break;
                }
                memmove(at, e, strlen(e) + 1);
            }
        }
        fputs(line, out);
    }
    fclose(in);
    fclose(out);
    if (replay_open(&rp, old, err, sizeof(err)) != 0)
        fail_msg("%s", err);
    for (size_t i = 0; i < replay_count(rp); i++) {
        if (replay_load(rp, i, &f, err, sizeof(err)) != 0)
            fail_msg("old recording, sample %zu: %s", i, err);
        for (size_t k = 0; k < f.res.ndevs; k++) {
            assert_false(f.res.devs[k].wb_valid);
            assert_null(f.res.devs[k].wb);
        }
    }
    replay_frame_free(&f);
    replay_close(rp);
    unlink(old);
}

/* A damaged writeback_by fails its sample with a message that names the member. */
static void assert_damage(const char *from, const char *to, const char *want)
{
    char path[512], err[512];
    snprintf(path, sizeof(path), "%s/replay/rec-lens.jsonl", fixtures());
    FILE *in = fopen(path, "r");
    char tmp[] = "/tmp/iotriage-dirtier-bad.XXXXXX";
    int fd = mkstemp(tmp);
    FILE *out = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (!in || !out)
        fail_msg("cannot copy %s", path);
    static char line[1 << 20];
    bool done = false;
    while (fgets(line, sizeof(line), in)) {
        char *at = strstr(line, from);
        if (at && !done) {
            fwrite(line, 1, (size_t)(at - line), out);
            fputs(to, out);
            fputs(at + strlen(from), out);
            done = true;
        } else {
            fputs(line, out);
        }
    }
    fclose(in);
    fclose(out);
    assert_true(done);
    struct replay *rp;
    if (replay_open(&rp, tmp, err, sizeof(err)) != 0)
        fail_msg("%s", err);
    struct replay_frame f = { 0 };
    int rc = replay_load(rp, replay_count(rp) - 1, &f, err, sizeof(err));
    replay_frame_free(&f);
    replay_close(rp);
    unlink(tmp);
    if (rc == 0 || !strstr(err, want))
        fail_msg("%s -> %s: rc %d, \"%s\", expected \"%s\"", from, to, rc, err, want);
}

static void test_replay_damage(void **state)
{
    (void)state;
    assert_damage("\"cgroup_from\":\"lens\"", "\"cgroup_from\":\"disk\"",
                  "writeback_by[0].cgroup_from: not \"lens\", \"blkcg\" nor null");
    assert_damage("\"writeback_by\":[{\"pid\":6091", "\"writeback_by\":[{\"pid\":0",
                  "writeback_by[0].pid");
    assert_damage("\"writeback_by\":[{", "\"writeback_by\":[7,{", "writeback_by[0]");
    assert_damage("\"cgroup_id\":80585", "\"cgroup_id\":\"x\"", "writeback_by[0].cgroup_id");
    assert_damage("\"bps\":12.500", "\"bps\":\"many\"", "writeback_by[1].bps");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_wb_interval),
        cmocka_unit_test(test_cgroup_ids),
        cmocka_unit_test(test_writeback_by),
        cmocka_unit_test(test_cause_counts_writeback),
        cmocka_unit_test(test_replay),
        cmocka_unit_test(test_replay_damage),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
