/* Tests for src/source/cgroup.c and cgname.c: the cgroup parsers on the kernel's formats,
 * the fixture trees under tests/fixtures/cgroup/ (README there), and the names of a table
 * of real-looking paths. Expected values are written out by hand from the text. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "source/cgroup.h"
#include "util.h"

#define DOCKER_ID "3f2a9c1be0d4c8a7f6e5d4c3b2a1908f7e6d5c4b3a29180f7e6d5c4b3a291807"

static int open_fixture_dir(const char *rel)
{
    char path[512];
    const char *dir = getenv("IOTRIAGE_FIXTURES");
    snprintf(path, sizeof(path), "%s/%s", dir ? dir : "tests/fixtures", rel);
    int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        fail_msg("cannot open fixture %s (run from the repo root)", path);
    return fd;
}

#define PARSE(fn, text, out) fn(text, strlen(text), out)

/* ---- mountinfo ---------------------------------------------------------------------- */

static void test_mounts_v2_alone(void **state)
{
    (void)state;
    int proc = open_fixture_dir("cgroup/v2/proc");
    struct cgroup_mounts m;
    assert_int_equal(cgroup_mounts_read(proc, &m), 0);
    assert_true(m.has_v2);
    assert_string_equal(m.v2, "/sys/fs/cgroup");
    assert_string_equal(m.v2_root, "/");
    assert_false(m.has_blkio);
    /* block-backed mounts: sda1 ext4, sdb1 xfs, dm ext4, sda2 vfat (escaped mount point) */
    assert_int_equal(m.nblock, 4);
    assert_int_equal(m.block[0].major, 8);
    assert_int_equal(m.block[0].minor, 1);
    assert_string_equal(m.block[0].fstype, "ext4");
    assert_string_equal(m.block[1].fstype, "xfs");
    assert_int_equal(m.block[2].major, 253);
    assert_string_equal(m.block[3].fstype, "vfat");
    close(proc);
}

static void test_mounts_hybrid_and_legacy(void **state)
{
    (void)state;
    int proc = open_fixture_dir("cgroup/hybrid/proc");
    struct cgroup_mounts m;
    assert_int_equal(cgroup_mounts_read(proc, &m), 0);
    assert_true(m.has_v2);
    assert_string_equal(m.v2, "/sys/fs/cgroup/unified");
    assert_true(m.has_blkio);
    assert_string_equal(m.blkio, "/sys/fs/cgroup/blkio");
    close(proc);

    proc = open_fixture_dir("cgroup/legacy/proc");
    assert_int_equal(cgroup_mounts_read(proc, &m), 0);
    assert_false(m.has_v2);
    assert_true(m.has_blkio);
    close(proc);
}

static void test_mounts_escapes_and_namespaces(void **state)
{
    (void)state;
    struct cgroup_mounts m;
    /* A container's view: its own subtree mounted, with a space in the mount point. */
    const char *t = "40 30 0:37 /docker/abc /sys/fs/cg\\040v2 rw,relatime - cgroup2 cgroup2 rw\n"
                    "41 30 0:38 / /x rw - cgroup cgroup rw,cpu,blkio,memory\n"
                    "garbage line\n"
                    "42 30 8:1 / /y rw - ext4\n";   /* no source field: skipped */
    assert_int_equal(PARSE(cgroup_mounts_parse, t, &m), 0);
    assert_true(m.has_v2);
    assert_string_equal(m.v2, "/sys/fs/cg v2");
    assert_string_equal(m.v2_root, "/docker/abc");
    assert_true(m.has_blkio);
    assert_string_equal(m.blkio, "/x");
    assert_int_equal(m.nblock, 0);
}

/* ---- /proc/PID/cgroup --------------------------------------------------------------- */

static void test_proc_cgroup(void **state)
{
    (void)state;
    struct cgroup_membership c;
    int proc = open_fixture_dir("cgroup/hybrid/proc");
    assert_int_equal(cgroup_proc_read(proc, 400, &c), 0);
    assert_true(c.has_v2);
    assert_string_equal(c.v2, "/iot/libpod-" DOCKER_ID ".scope");
    assert_true(c.has_blkio);
    assert_string_equal(c.blkio, "/");
    assert_int_equal(cgroup_proc_read(proc, 999, &c), -ENOENT);
    close(proc);

    proc = open_fixture_dir("cgroup/legacy/proc");
    assert_int_equal(cgroup_proc_read(proc, 500, &c), 0);
    assert_false(c.has_v2);      /* v1 only: said so by has_v2 */
    assert_true(c.has_blkio);
    assert_string_equal(c.blkio, "/lxc/web01");
    close(proc);

    /* a path holding ':' and a controller list with blkio in the middle */
    assert_int_equal(PARSE(cgroup_proc_parse, "3:cpu,blkio,memory:/a:b\n0::/x:y", &c), 0);
    assert_string_equal(c.blkio, "/a:b");
    assert_string_equal(c.v2, "/x:y");
    assert_int_equal(PARSE(cgroup_proc_parse, "", &c), -EINVAL);
    assert_int_equal(PARSE(cgroup_proc_parse, "0::relative\n", &c), -EINVAL);
    assert_int_equal(PARSE(cgroup_proc_parse, "x::/a\n", &c), -EINVAL);
}

static void test_rel_path(void **state)
{
    (void)state;
    char out[64];
    assert_int_equal(cgroup_rel_path("/", "/a/b", out, sizeof(out)), 0);
    assert_string_equal(out, "a/b");
    assert_int_equal(cgroup_rel_path("/", "/", out, sizeof(out)), 0);
    assert_string_equal(out, ".");
    assert_int_equal(cgroup_rel_path("/docker/abc", "/docker/abc/sub", out, sizeof(out)), 0);
    assert_string_equal(out, "sub");
    assert_int_equal(cgroup_rel_path("/docker/abc", "/docker/abcd", out, sizeof(out)), -ENOENT);
    assert_int_equal(cgroup_rel_path("/", "/a/../../etc", out, sizeof(out)), -EINVAL);
    assert_int_equal(cgroup_rel_path("/", "/a..b", out, sizeof(out)), 0);
    assert_int_equal(cgroup_rel_path("/", "/0123456789/0123456789/0123456789/0123456789/0123456789/0123456789",
                                     out, sizeof(out)), -ENAMETOOLONG);
}

/* ---- io.* files --------------------------------------------------------------------- */

static void test_iostat(void **state)
{
    (void)state;
    int d = open_fixture_dir("cgroup/v2/sys/fs/cgroup/system.slice/db.service");
    struct cg_iostat s;
    assert_int_equal(cgroup_iostat_read(d, &s), 0);
    assert_int_equal(s.n, 2);
    assert_int_equal(s.row[0].major, 8);
    assert_int_equal(s.row[0].minor, 16);
    assert_int_equal(s.row[0].rbytes, 1459200);
    assert_int_equal(s.row[0].wbytes, 314773504);
    assert_int_equal(s.row[0].rios, 192);
    assert_int_equal(s.row[0].wios, 353);
    assert_false(s.row[0].has_cost);
    assert_int_equal(s.row[1].dbytes, 50331648);
    assert_int_equal(s.row[1].dios, 3021);
    assert_true(s.row[1].has_cost);
    assert_int_equal(s.row[1].cost_usage_us, 210000);
    assert_int_equal(s.row[1].cost_wait_us, 1500000);
    assert_false(s.row[1].has_lat);
    close(d);

    assert_int_equal(PARSE(cgroup_iostat_parse,
                           "8:16 rbytes=1 wbytes=2 rios=3 wios=4 dbytes=0 dios=0 depth=4 avg_lat=2300 win=100\n"
                           "8:0 rbytes=1 wbytes=2 rios=3 wios=4 dbytes=0 dios=0 depth=max avg_lat=10 win=5\n"
                           "8:32 rbytes=x wbytes=2\n"          /* bad number: row dropped */
                           "8:48 cost.vrate=100.00\n"          /* no counters: not a row */
                           "9 rbytes=1\n", &s), 0);
    assert_int_equal(s.n, 2);
    assert_true(s.row[0].has_lat);
    assert_int_equal(s.row[0].lat_depth, 4);
    assert_int_equal(s.row[0].lat_avg_us, 2300);
    assert_int_equal(s.row[1].lat_depth, -1);
}

static void test_iomax_and_throttle(void **state)
{
    (void)state;
    struct cg_iomax m;
    assert_int_equal(PARSE(cgroup_iomax_parse,
                           "8:16 rbps=2097152 wbps=max riops=max wiops=120\n8:0 rbps=max wbps=max riops=max wiops=max\n",
                           &m), 0);
    assert_int_equal(m.n, 2);
    assert_int_equal(m.row[0].rbps, 2097152);
    assert_true(m.row[0].wbps == CG_UNLIMITED);
    assert_int_equal(m.row[0].wiops, 120);
    assert_true(m.row[1].rbps == CG_UNLIMITED);

    int d = open_fixture_dir("cgroup/legacy/sys/fs/cgroup/blkio/lxc/web01");
    struct cgroup_settings s;
    cgroup_settings_read_v1(d, &s);
    assert_true(s.v1);
    assert_int_equal(s.iomax_err, 0);
    assert_int_equal(s.weight_err, -ENOENT);
    assert_int_equal(s.iomax.n, 2);
    assert_int_equal(s.iomax.row[0].major, 8);
    assert_int_equal(s.iomax.row[0].minor, 0);
    assert_int_equal(s.iomax.row[0].rbps, 10485760);
    assert_int_equal(s.iomax.row[0].wbps, 5242880);
    assert_true(s.iomax.row[0].riops == CG_UNLIMITED);
    assert_int_equal(s.iomax.row[0].wiops, 200);
    assert_int_equal(s.iomax.row[1].minor, 16);
    assert_int_equal(s.iomax.row[1].wbps, 1048576);
    assert_true(s.iomax.row[1].rbps == CG_UNLIMITED);
    close(d);
}

static void test_settings_v2(void **state)
{
    (void)state;
    int d = open_fixture_dir("cgroup/v2/sys/fs/cgroup/system.slice/db.service");
    struct cgroup_settings s;
    cgroup_settings_read(d, &s);
    assert_false(s.v1);
    assert_int_equal(s.iomax_err, 0);
    assert_int_equal(s.weight_err, 0);
    assert_int_equal(s.weight.dflt, 100);
    assert_int_equal(cgroup_weight_for(&s.weight, 8, 16), 500);
    assert_int_equal(cgroup_weight_for(&s.weight, 8, 0), 100);
    assert_int_equal(s.bfq_weight_err, 0);
    assert_int_equal(cgroup_weight_for(&s.bfq_weight, 8, 16), 100);
    assert_int_equal(s.prio_err, 0);
    assert_int_equal(s.prio, CGP_IDLE);
    close(d);

    /* The hybrid machine: no io controller in v2, every control is ENOENT. */
    d = open_fixture_dir("cgroup/hybrid/sys/fs/cgroup/unified/iot/libpod-" DOCKER_ID ".scope");
    cgroup_settings_read(d, &s);
    assert_int_equal(s.iomax_err, -ENOENT);
    assert_int_equal(s.weight_err, -ENOENT);
    assert_int_equal(s.prio_err, -ENOENT);
    struct cg_iostat st;
    assert_int_equal(cgroup_iostat_read(d, &st), -ENOENT);
    struct psi_sample p;
    cgroup_pressure_read(d, &p);
    assert_int_equal(p.err, 0);
    assert_int_equal(p.some.total_us, 2980000);
    assert_int_equal(p.full.total_us, 2900000);
    close(d);

    struct cg_weight w;
    assert_int_equal(PARSE(cgroup_weight_parse, "default 0\n8:0 10001\n8:16 1\n", &w), 0);
    assert_int_equal(w.dflt, -1);            /* out of range: ignored */
    assert_int_equal(w.n, 1);
    assert_int_equal(cgroup_weight_for(&w, 8, 16), 1);
    assert_int_equal(cgroup_weight_for(&w, 8, 0), CG_WEIGHT_DEFAULT);
}

static void test_costqos(void **state)
{
    (void)state;
    int d = open_fixture_dir("cgroup/v2/sys/fs/cgroup");
    struct cg_costqos q;
    int err = cgroup_costqos_read(d, &q);
    assert_int_equal(err, 0);
    assert_int_equal(q.n, 2);
    assert_true(q.row[0].enable);
    assert_false(q.row[0].ctrl_user);
    assert_int_equal(q.row[0].rlat, 10000);
    assert_true(q.row[0].rpct > 94.99 && q.row[0].rpct < 95.01);
    assert_int_equal(cgroup_cost_enabled(&q, err, 8, 0), 1);
    assert_int_equal(cgroup_cost_enabled(&q, err, 8, 16), 0);
    assert_int_equal(cgroup_cost_enabled(&q, err, 253, 0), 0);
    assert_int_equal(cgroup_cost_enabled(&q, -ENOENT, 8, 0), 0);
    assert_int_equal(cgroup_cost_enabled(&q, -EACCES, 8, 0), -1);
    assert_int_equal(cgroup_has_controller(d, "io"), 1);
    assert_int_equal(cgroup_has_controller(d, "memory"), 1);
    assert_int_equal(cgroup_has_controller(d, "mem"), 0);
    close(d);
    d = open_fixture_dir("cgroup/hybrid/sys/fs/cgroup/unified");
    assert_int_equal(cgroup_has_controller(d, "io"), 0);
    assert_int_equal(cgroup_costqos_read(d, &q), -ENOENT);
    close(d);
    assert_int_equal(PARSE(cgroup_costqos_parse, "8:0 enable=2\n8:1 ctrl=auto\n8:2 enable=1 ctrl=bogus\n", &q), 0);
    assert_int_equal(q.n, 0);
}

static void test_prio_class(void **state)
{
    (void)state;
    enum cg_prio_policy p;
    assert_int_equal(PARSE(cgroup_prio_parse, "promote-to-rt\n", &p), 0);
    assert_int_equal(p, CGP_PROMOTE_TO_RT);
    assert_int_equal(PARSE(cgroup_prio_parse, "none-to-rt", &p), 0);
    assert_int_equal(p, CGP_NONE_TO_RT);
    assert_int_equal(PARSE(cgroup_prio_parse, "idle extra\n", &p), -EINVAL);
    assert_int_equal(PARSE(cgroup_prio_parse, "", &p), -EINVAL);
    assert_string_equal(cgroup_prio_name(CGP_RESTRICT_TO_BE), "restrict-to-be");

    /* block/blk-ioprio.c: blkcg_set_ioprio (KERNEL-FACTS 3) */
    const int be4 = (2 << 13) | 4, rt2 = (1 << 13) | 2, idle7 = (3 << 13) | 7, be0 = 2 << 13;
    assert_int_equal(cgroup_prio_apply(CGP_NO_CHANGE, be4), be4);
    assert_int_equal(cgroup_prio_apply(CGP_PROMOTE_TO_RT, be4), (1 << 13) | 4);
    assert_int_equal(cgroup_prio_apply(CGP_PROMOTE_TO_RT, idle7), (1 << 13) | 4);
    assert_int_equal(cgroup_prio_apply(CGP_PROMOTE_TO_RT, rt2), rt2);   /* rt keeps its level */
    assert_int_equal(cgroup_prio_apply(CGP_NONE_TO_RT, be4), (1 << 13) | 4);
    assert_int_equal(cgroup_prio_apply(CGP_RESTRICT_TO_BE, rt2), be0);
    assert_int_equal(cgroup_prio_apply(CGP_RESTRICT_TO_BE, be4), be4);
    assert_int_equal(cgroup_prio_apply(CGP_RESTRICT_TO_BE, idle7), idle7);
    assert_int_equal(cgroup_prio_apply(CGP_IDLE, be4), 3 << 13);
    assert_int_equal(cgroup_prio_apply(CGP_IDLE, rt2), 3 << 13);
    assert_int_equal(cgroup_prio_apply(CGP_IDLE, idle7), idle7);
}

/* ---- names --------------------------------------------------------------------------- */

struct name_case {
    const char *path, *unit, *runtime, *id, *short_id, *pod, *qos;
};

static void test_names_table(void **state)
{
    (void)state;
    static const struct name_case cases[] = {
        { "/", "", "", "", "", "", "" },
        { "/system.slice/nginx.service", "nginx.service", "", "", "", "", "" },
        { "/system.slice/nginx.service/worker", "nginx.service", "", "", "", "", "" },
        { "/user.slice/user-1000.slice/session-3.scope", "session-3.scope", "", "", "", "", "" },
        { "/user.slice/user-1000.slice/user@1000.service/app.slice/app-org.gnome.Terminal.slice/vte-spawn-1.scope",
          "vte-spawn-1.scope", "", "", "", "", "" },
        { "/user.slice/user-1000.slice/user@1000.service/init.scope", "init.scope", "", "", "", "", "" },
        { "/user.slice/user-1000.slice", "user-1000.slice", "", "", "", "", "" },
        { "/machine.slice", "machine.slice", "", "", "", "", "" },
        { "/system.slice/docker-" DOCKER_ID ".scope", "docker-" DOCKER_ID ".scope", "docker", DOCKER_ID,
          "3f2a9c1be0d4", "", "" },
        { "/docker/" DOCKER_ID, "", "docker", DOCKER_ID, "3f2a9c1be0d4", "", "" },
        /* docker in docker: the deepest wins */
        { "/docker/0000000000000000000000000000000000000000000000000000000000000000/docker/" DOCKER_ID,
          "", "docker", DOCKER_ID, "3f2a9c1be0d4", "", "" },
        { "/docker/not-an-id", "", "", "", "", "", "" },
        { "/machine.slice/libpod-" DOCKER_ID ".scope", "libpod-" DOCKER_ID ".scope", "podman", DOCKER_ID,
          "3f2a9c1be0d4", "", "" },
        { "/machine.slice/libpod-" DOCKER_ID ".scope/container", "libpod-" DOCKER_ID ".scope", "podman",
          DOCKER_ID, "3f2a9c1be0d4", "", "" },
        { "/machine.slice/libpod-conmon-" DOCKER_ID ".scope", "libpod-conmon-" DOCKER_ID ".scope", "", "", "",
          "", "" },
        { "/libpod_parent/libpod-" DOCKER_ID, "", "podman", DOCKER_ID, "3f2a9c1be0d4", "", "" },
        { "/user.slice/user-1000.slice/user@1000.service/user.slice/libpod-" DOCKER_ID ".scope",
          "libpod-" DOCKER_ID ".scope", "podman", DOCKER_ID, "3f2a9c1be0d4", "", "" },
        { "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod8d5ad1c8_64f3_4b1f_9e2a_0c1e4b6a7d21.slice/cri-containerd-" DOCKER_ID ".scope",
          "cri-containerd-" DOCKER_ID ".scope", "containerd", DOCKER_ID, "3f2a9c1be0d4",
          "8d5ad1c8-64f3-4b1f-9e2a-0c1e4b6a7d21", "burstable" },
        { "/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod8d5ad1c8_64f3_4b1f_9e2a_0c1e4b6a7d21.slice/crio-" DOCKER_ID ".scope",
          "crio-" DOCKER_ID ".scope", "cri-o", DOCKER_ID, "3f2a9c1be0d4",
          "8d5ad1c8-64f3-4b1f-9e2a-0c1e4b6a7d21", "besteffort" },
        { "/kubepods.slice/kubepods-pod8d5ad1c8_64f3_4b1f_9e2a_0c1e4b6a7d21.slice/crio-conmon-" DOCKER_ID ".scope",
          "crio-conmon-" DOCKER_ID ".scope", "", "", "", "8d5ad1c8-64f3-4b1f-9e2a-0c1e4b6a7d21", "guaranteed" },
        { "/kubepods.slice/kubepods-burstable.slice", "kubepods-burstable.slice", "", "", "", "", "" },
        { "/kubepods/besteffort/pod8d5ad1c8-64f3-4b1f-9e2a-0c1e4b6a7d21/" DOCKER_ID, "", "cri", DOCKER_ID,
          "3f2a9c1be0d4", "8d5ad1c8-64f3-4b1f-9e2a-0c1e4b6a7d21", "besteffort" },
        { "/kubepods/burstable/pod8d5ad1c8-64f3-4b1f-9e2a-0c1e4b6a7d21", "", "", "", "",
          "8d5ad1c8-64f3-4b1f-9e2a-0c1e4b6a7d21", "burstable" },
        { "/kubepods/pod8d5ad1c8-64f3-4b1f-9e2a-0c1e4b6a7d21/" DOCKER_ID, "", "cri", DOCKER_ID, "3f2a9c1be0d4",
          "8d5ad1c8-64f3-4b1f-9e2a-0c1e4b6a7d21", "guaranteed" },
        { "/kubepods/podnot_a_uid!", "", "", "", "", "", "" },
        { "/" DOCKER_ID, "", "", "", "", "", "" },        /* bare hex outside a pod: no claim */
        { "/lxc.payload.web01", "", "lxc", "web01", "web01", "", "" },
        { "/lxc.payload.a-very-long-container-name/system.slice/cron.service", "cron.service", "lxc",
          "a-very-long-container-name", "a-very-long-", "", "" },
        { "/lxc.monitor.web01", "", "", "", "", "", "" },
        { "/lxc/web01", "", "lxc", "web01", "web01", "", "" },
        { "//system.slice//foo.service/", "foo.service", "", "", "", "", "" },
    };
    for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
        const struct name_case *c = &cases[i];
        struct cgroup_names n;
        cgroup_names_of(c->path, &n);
        if (strcmp(n.unit, c->unit) || strcmp(n.runtime, c->runtime) || strcmp(n.id, c->id) ||
            strcmp(n.short_id, c->short_id) || strcmp(n.pod_uid, c->pod) || strcmp(n.qos, c->qos))
            fail_msg("%s: got unit '%s' runtime '%s' id '%s' short '%s' pod '%s' qos '%s'", c->path,
                     n.unit, n.runtime, n.id, n.short_id, n.pod_uid, n.qos);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_mounts_v2_alone),
        cmocka_unit_test(test_mounts_hybrid_and_legacy),
        cmocka_unit_test(test_mounts_escapes_and_namespaces),
        cmocka_unit_test(test_proc_cgroup),
        cmocka_unit_test(test_rel_path),
        cmocka_unit_test(test_iostat),
        cmocka_unit_test(test_iomax_and_throttle),
        cmocka_unit_test(test_settings_v2),
        cmocka_unit_test(test_costqos),
        cmocka_unit_test(test_prio_class),
        cmocka_unit_test(test_names_table),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
