/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Tests for src/source/cgroupfs.c and cgname.c: the cgroup parsers on the kernel's formats,
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
#include <sys/stat.h>
#include <unistd.h>

#include <math.h>
#include <sched.h>

#include "source/cgroups.h"
#include "delta.h"
#include "sample/sample.h"
#include "store/replay.h"
#include "snapshot.h"
#include "source/cgroupfs.h"
#include "util.h"
#include "verdict.h"

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

/* io.latency targets; and every reader refuses what is not a regular file (a FIFO
 * would block) and does not follow a symlink. */
static void test_latency_and_safe_reads(void **state)
{
    (void)state;
    struct cg_latency l;
    assert_int_equal(PARSE(cgroup_latency_parse, "8:0 target=10000\n8:16 target=x\n8:32 lat=5\n253:1 target=250\n", &l), 0);
    assert_int_equal(l.n, 2);
    assert_int_equal(l.row[0].major, 8);
    assert_int_equal(l.row[0].target_us, 10000);
    assert_int_equal(l.row[1].major, 253);
    assert_int_equal(l.row[1].target_us, 250);
    int d = open_fixture_dir("cgroup/audit/sys/fs/cgroup/kubepods.slice/"
                             "kubepods-pod8d5ad1c8_64f3_4b1f_9e2a_0c1e4b6a7d21.slice");
    assert_int_equal(cgroup_latency_read(d, &l), 0);
    assert_int_equal(l.n, 1);
    assert_int_equal(l.row[0].target_us, 10000);
    close(d);

    char dir[] = "/tmp/test_cgroup.XXXXXX";
    assert_non_null(mkdtemp(dir));
    d = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    assert_true(d >= 0);
    assert_int_equal(mkfifoat(d, "io.max", 0600), 0);
    assert_int_equal(mkfifoat(d, "io.cost.qos", 0600), 0);
    char outside[] = "/tmp/test_cgroup_out.XXXXXX";
    int ofd = mkstemp(outside);
    assert_true(ofd >= 0);
    assert_int_equal(write(ofd, "default 900\n", 12), 12);
    close(ofd);
    assert_int_equal(symlinkat(outside, d, "io.weight"), 0);
    struct cgroup_settings st;
    cgroup_settings_read(d, &st);    /* returns: the FIFO is not read */
    assert_int_equal(st.iomax_err, -EINVAL);
    assert_int_equal(st.weight_err, -ELOOP);
    struct cg_costqos q;
    assert_int_equal(cgroup_costqos_read(d, &q), -EINVAL);
    unlinkat(d, "io.max", 0);
    unlinkat(d, "io.cost.qos", 0);
    unlinkat(d, "io.weight", 0);
    unlink(outside);
    close(d);
    rmdir(dir);
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


/* ---- the model and the verdicts on the v2 fixture --------------------------------------- */

#define KUBE_POD "/kubepods.slice/kubepods-pod8d5ad1c8_64f3_4b1f_9e2a_0c1e4b6a7d21.slice"
#define DB "/system.slice/db.service"

/* Devices sda (8:0, mq-deadline), its partition sda1 (8:1), sdb (8:16, mq-deadline);
 * tasks 100 (db.service), 200 (docker), 300 (pod container), 999 (no /proc entry). */
struct cg_world {
    int proc_fd, sys_fd;
    struct cgroup_src *src;
    struct snapshot snap;
    struct dev_sample dev[3];
    struct dev_rates drates[3];
    struct task_sample task[4];
    struct task_rates trates[4];
    struct task_devs tdevs[4];
    struct cgroup_set *prev;
    struct result r;
    struct verdicts v;
};

static struct cg_world *world_new(void)
{
    struct cg_world *w = xcalloc(1, sizeof(*w));
    w->proc_fd = open_fixture_dir("cgroup/v2/proc");
    w->sys_fd = open_fixture_dir("cgroup/v2/sys");
    w->src = cgroups_open(w->proc_fd, w->sys_fd, 5.0);
    static const struct { const char *name; unsigned maj, min; bool part; } devs[3] = {
        { "sda", 8, 0, false }, { "sda1", 8, 1, true }, { "sdb", 8, 16, false },
    };
    for (int i = 0; i < 3; i++) {
        struct dev_sample *d = &w->dev[i];
        str_copy(d->ds.name, devs[i].name, sizeof(d->ds.name));
        d->ds.major = devs[i].maj;
        d->ds.minor = devs[i].min;
        d->bd.partition = devs[i].part;
        str_copy(d->bd.disk, devs[i].part ? "sda" : devs[i].name, sizeof(d->bd.disk));
        str_copy(d->bd.scheduler, "mq-deadline", sizeof(d->bd.scheduler));
        d->bd.nr_requests = 64;
        w->drates[i].dev = d;
        w->drates[i].saturated = 0;
        w->drates[i].aqu_sz = 0.5;
    }
    static const pid_t ids[4] = { 100, 200, 300, 999 };
    for (int i = 0; i < 4; i++) {
        struct task_sample *t = &w->task[i];
        t->id = t->tgid = ids[i];
        t->start_ticks = 1000 + (unsigned long long)i;
        t->comm = "worker";
        t->cmdline = "worker";
        t->user = "root";
        t->ioprio_raw = 0;       /* class none: effective be/4 from nice 0 */
        t->policy = SCHED_OTHER;
        w->trates[i].task = t;
        w->trates[i].prio = ioprio_effective(0, 0, SCHED_OTHER);
        w->trates[i].io_valid = i != 2;              /* 300's counters unreadable */
        w->trates[i].read_bps = i != 2 ? 1000.0 * (i + 1) : (double)NAN;
        w->trates[i].write_bps = i != 2 ? 10.0 : (double)NAN;
        w->trates[i].delay_valid = i == 0;
        w->trates[i].io_delay_pct = i == 0 ? 40.0 : (double)NAN;
        w->tdevs[i].known = true;
        w->tdevs[i].n = 2;
        w->tdevs[i].idx[0] = 0;  /* sda */
        w->tdevs[i].idx[1] = 2;  /* sdb */
    }
    w->snap.tasks = w->task;
    w->snap.ntasks = 4;
    w->snap.tdevs = w->tdevs;
    w->snap.devs = w->dev;
    w->snap.ndevs = 3;
    w->snap.mono = 100.0;
    w->prev = cgroups_take(w->src, w->snap.mono, w->snap.threads, w->snap.tasks, w->snap.ntasks);
    w->snap.mono = 102.0;
    w->snap.cgroups = cgroups_take(w->src, w->snap.mono, w->snap.threads, w->snap.tasks, w->snap.ntasks);
    w->r.cur = &w->snap;
    w->r.interval_s = 2.0;
    w->r.devs = w->drates;
    w->r.ndevs = 3;
    w->r.tasks = w->trates;
    w->r.ntasks = 4;
    return w;
}

static void world_free(struct cg_world *w)
{
    verdicts_free(&w->v);
    free(w->r.cgroups);
    cgroups_free(w->prev);
    cgroups_free(w->snap.cgroups);
    cgroups_close(w->src);
    close(w->proc_fd);
    close(w->sys_fd);
    free(w);
}

static int cg_index(const struct cgroup_set *s, const char *path)
{
    for (size_t i = 0; i < s->n; i++)
        if (strcmp(s->v[i].path, path) == 0)
            return (int)i;
    fail_msg("cgroup %s not in the set", path);
    return -1;
}

static struct cgroup_entry *prev_of(struct cg_world *w, const char *path)
{
    return &w->prev->v[cg_index(w->prev, path)];
}

static void world_compute(struct cg_world *w)
{
    free(w->r.cgroups);
    verdicts_free(&w->v);
    cgroups_delta(w->prev, w->snap.cgroups, &w->r);
    verdict_compute(&w->r, &w->v);
}

static size_t count_code(const struct verdicts *v, enum warn_code c, int dev, const char **text)
{
    size_t n = 0;
    for (size_t i = 0; i < v->n; i++)
        if (v->w[i].code == c && (dev < 0 || v->w[i].dev == dev)) {
            n++;
            if (text)
                *text = v->w[i].text;
        }
    return n;
}

static void test_model_tree_and_membership(void **state)
{
    (void)state;
    struct cg_world *w = world_new();
    const struct cgroup_set *s = w->snap.cgroups;
    assert_int_equal(s->err, 0);
    assert_false(s->v1_only);
    assert_string_equal(s->mount, "/sys/fs/cgroup");
    assert_int_equal(s->io_on_v2, 1);
    assert_int_equal(s->memory_on_v2, 1);
    assert_int_equal(s->costqos.n, 2);
    assert_int_equal(s->nmounts, 4);
    /* the three cgroups of the tasks and their ancestors, a parent before its children */
    static const char *const order[] = {
        "/", "/kubepods.slice", KUBE_POD, KUBE_POD "/cri-containerd-" DOCKER_ID ".scope",
        "/system.slice", DB, "/system.slice/docker-" DOCKER_ID ".scope",
    };
    assert_int_equal(s->n, ARRAY_SIZE(order));
    for (size_t i = 0; i < ARRAY_SIZE(order); i++)
        assert_string_equal(s->v[i].path, order[i]);
    assert_int_equal(s->v[0].parent, -1);
    assert_int_equal(s->v[3].parent, 2);
    assert_int_equal(s->v[6].parent, 4);
    assert_int_equal(s->v[5].depth, 2);
    assert_string_equal(s->v[6].names.runtime, "docker");
    assert_string_equal(s->v[2].names.qos, "guaranteed");
    /* membership */
    assert_int_equal(s->task_cg[0], 5);
    assert_int_equal(s->task_cg[1], 6);
    assert_int_equal(s->task_cg[2], 3);
    assert_int_equal(s->task_cg[3], -1);
    assert_int_equal(s->task_err[3], -ENOENT);
    assert_int_equal(s->v[5].ntasks, 1);
    assert_int_equal(s->v[0].ntasks, 0);
    /* controls read through the tree: the root has none */
    assert_int_equal(s->v[0].settings.iomax_err, -ENOENT);
    assert_int_equal(s->v[5].settings.prio, CGP_IDLE);
    assert_int_equal(s->v[5].niostat, 2);
    assert_int_equal(s->v[5].pressure.some.total_us, 4000000);
    world_free(w);
}

static void test_model_rates(void **state)
{
    (void)state;
    struct cg_world *w = world_new();
    /* 2 s before: 1.8 s less of db.service's "some" stall, 4 MiB less read from sdb */
    struct cgroup_entry *p = prev_of(w, DB);
    p->pressure.some.total_us -= 1800000;
    p->pressure.full.total_us -= 200000;
    struct cgroup_entry *c = &w->snap.cgroups->v[cg_index(w->snap.cgroups, DB)];
    c->iostat_row[0].rbytes += 4194304;     /* the fixture's counters are small: add to cur */
    c->iostat_row[0].rios += 1024;
    p->iostat_row[1].cost_wait_us -= 1000000;
    world_compute(w);
    const struct cgroup_set *s = w->snap.cgroups;
    assert_int_equal(w->r.ncgroups, s->n);
    const struct cgroup_rates *db = &w->r.cgroups[cg_index(s, DB)];
    assert_true(fabs(db->some_pct - 90.0) < 1e-9);
    assert_true(fabs(db->full_pct - 10.0) < 1e-9);
    assert_int_equal(db->ndev, 2);
    assert_int_equal(db->dev[0].dev, 2);                       /* sdb */
    assert_true(fabs(db->dev[0].rbps - 2097152.0) < 1e-6);
    assert_true(fabs(db->dev[0].riops - 512.0) < 1e-9);
    assert_true(db->dev[0].wbps == 0);
    assert_true(fabs(db->dev[1].cost_wait_pct - 50.0) < 1e-9);
    /* sums: db 1000, docker 2000, the pod's container unknown */
    assert_true(fabs(db->read_bps - 1000.0) < 1e-9);
    assert_true(fabs(db->io_delay_pct - 40.0) < 1e-9);
    const struct cgroup_rates *root = &w->r.cgroups[0];
    assert_int_equal(root->ntasks, 3);                         /* 999 has no cgroup */
    assert_true(fabs(root->read_bps - 3000.0) < 1e-9);
    assert_int_equal(root->io_unknown, 1);
    assert_true(fabs(root->io_delay_pct - 40.0) < 1e-9);
    const struct cgroup_rates *sys = &w->r.cgroups[cg_index(s, "/system.slice")];
    assert_true(fabs(sys->read_bps - 3000.0) < 1e-9);
    const struct cgroup_rates *pod = &w->r.cgroups[cg_index(s, KUBE_POD)];
    assert_true(isnan(pod->read_bps));                         /* unknown, never 0 */
    assert_true(isnan(pod->io_delay_pct));
    /* no previous sample: unknown */
    free(w->r.cgroups);
    cgroups_delta(NULL, s, &w->r);
    assert_true(isnan(w->r.cgroups[cg_index(s, DB)].some_pct));
    assert_true(isnan(w->r.cgroups[cg_index(s, DB)].dev[0].rbps));
    assert_true(cgroup_of_task(&w->r, 0) == cg_index(s, DB));
    assert_int_equal(cgroup_of_task(&w->r, 3), -1);
    world_free(w);
}

static void test_verdict_prio_class(void **state)
{
    (void)state;
    struct cg_world *w = world_new();
    w->task[2].ioprio_raw = (1 << 13) | 2;                     /* rt/2, set */
    w->trates[2].prio = ioprio_effective(w->task[2].ioprio_raw, 0, SCHED_OTHER);
    world_compute(w);
    /* db.service: io.prio.class idle turns be/4 into idle/0 */
    assert_int_equal(w->trates[0].prio.cls, IOC_IDLE);
    assert_int_equal(w->trates[0].prio.level, 0);
    assert_int_equal(w->trates[0].prio.source, IOS_CGROUP);
    /* the pod's container: restrict-to-be turns rt/2 into be/0 */
    assert_int_equal(w->trates[2].prio.cls, IOC_BE);
    assert_int_equal(w->trates[2].prio.level, 0);
    /* docker: no-change */
    assert_int_equal(w->trates[1].prio.source, IOS_NICE);
    const char *text = NULL;
    assert_int_equal(count_code(&w->v, W_CG_PRIO_CLASS, 0, &text), 2);
    assert_non_null(strstr(text, "io.prio.class"));
    /* be/0 under mq-deadline: the level is not read */
    assert_int_equal(count_code(&w->v, W_IOPRIO_LEVEL_IGNORED, 0, NULL), 1);
    /* bfq reads the task's own priority: the rewrite has no effect, and the task's be/4
     * is the default, so no ioprio verdict on sdb for db.service */
    str_copy(w->dev[2].bd.scheduler, "bfq", sizeof(w->dev[2].bd.scheduler));
    world_compute(w);
    size_t n = 0;
    for (size_t i = 0; i < w->v.n; i++)
        if (w->v.w[i].code == W_CG_PRIO_CLASS && w->v.w[i].dev == 2 && w->v.w[i].task == 0) {
            n++;
            assert_non_null(strstr(w->v.w[i].text, "no effect"));
        }
    assert_int_equal(n, 1);
    for (size_t i = 0; i < w->v.n; i++)
        assert_false(w->v.w[i].dev == 2 && w->v.w[i].task == 0 && w->v.w[i].code == W_IOPRIO_UNSATURATED);
    world_free(w);
}

static void test_verdict_weight(void **state)
{
    (void)state;
    struct cg_world *w = world_new();
    world_compute(w);
    /* db.service has io.weight 500 on sdb, where io.cost is off and mq-deadline reads none */
    const char *text = NULL;
    assert_int_equal(count_code(&w->v, W_CG_WEIGHT_IGNORED, 2, &text), 1);
    assert_non_null(strstr(text, "io.weight 500"));
    assert_int_equal(count_code(&w->v, W_CG_WEIGHT_IGNORED, 0, NULL), 0);   /* 100 on sda */
    /* bfq with io.bfq.weight at its default: still nothing reads the 500 */
    str_copy(w->dev[2].bd.scheduler, "bfq", sizeof(w->dev[2].bd.scheduler));
    world_compute(w);
    assert_int_equal(count_code(&w->v, W_CG_WEIGHT_IGNORED, 2, &text), 1);
    assert_non_null(strstr(text, "io.bfq.weight"));
    /* io.cost enabled for sdb: the weight works */
    w->snap.cgroups->costqos.row[1].enable = true;
    world_compute(w);
    assert_int_equal(count_code(&w->v, W_CG_WEIGHT_IGNORED, -1, NULL), 0);
    /* io.cost.qos unreadable: no claim */
    w->snap.cgroups->costqos.row[1].enable = false;
    w->snap.cgroups->costqos_err = -EACCES;
    world_compute(w);
    assert_int_equal(count_code(&w->v, W_CG_WEIGHT_IGNORED, -1, NULL), 0);
    world_free(w);
}

/* A weight set for a layer itself (sdb made a dm-linear over sda here): nothing reads it,
 * there or below; the warning names the disks to set it for, and says nothing of io.cost
 * or bfq for the layer, which can have neither. The disk below is judged on its own row
 * (db.service's default there: nothing to say). */
static void test_verdict_weight_on_layer(void **state)
{
    (void)state;
    struct cg_world *w = world_new();
    struct dev_sample *sda = &w->dev[0], *lv = &w->dev[2];
    sda->bd.nsched = 1;
    str_copy(sda->bd.schedulers[0], "mq-deadline", sizeof(sda->bd.schedulers[0]));
    sda->stack.slaves.known = sda->stack.holders.known = true;
    sda->stack.holders.n = 1;
    str_copy(sda->stack.holders.name[0], "sdb", sizeof(sda->stack.holders.name[0]));
    lv->bd.scheduler[0] = '\0';
    lv->bd.nsched = 0;
    str_copy(lv->bd.layer, "linear, vg-lv", sizeof(lv->bd.layer));
    lv->stack.slaves.known = lv->stack.holders.known = true;
    lv->stack.slaves.n = 1;
    str_copy(lv->stack.slaves.name[0], "sda", sizeof(lv->stack.slaves.name[0]));
    world_compute(w);
    const char *text = NULL;
    assert_int_equal(count_code(&w->v, W_CG_WEIGHT_IGNORED, 2, &text), 1);
    assert_non_null(strstr(text, "io.weight 500 on sdb does nothing: sdb (linear, vg-lv) is a layer"));
    assert_non_null(strstr(text, "weighed at the disks below it (sda)"));
    assert_null(strstr(text, "modprobe"));
    assert_int_equal(count_code(&w->v, W_CG_WEIGHT_IGNORED, 0, NULL), 0);
    /* the same weight on the disk below instead: judged there, as any disk (io.cost off) */
    w->snap.cgroups->v[cg_index(w->snap.cgroups, DB)].settings.weight.row[0].minor = 0;
    w->snap.cgroups->costqos.row[0].enable = false;
    world_compute(w);
    assert_int_equal(count_code(&w->v, W_CG_WEIGHT_IGNORED, 2, NULL), 0);
    assert_int_equal(count_code(&w->v, W_CG_WEIGHT_IGNORED, 0, &text), 1);
    assert_non_null(strstr(text, "io.weight 500 on sda"));
    world_free(w);
}

static void test_verdict_at_limit(void **state)
{
    (void)state;
    struct cg_world *w = world_new();
    /* db.service read sdb at 2 MiB/s, its rbps limit, and stalled 90 % of the time */
    struct cgroup_entry *p = prev_of(w, DB);
    p->pressure.some.total_us -= 1800000;
    struct cgroup_entry *c = &w->snap.cgroups->v[cg_index(w->snap.cgroups, DB)];
    c->iostat_row[0].rbytes += 4194304;
    world_compute(w);
    const char *text = NULL;
    assert_int_equal(count_code(&w->v, W_CG_AT_LIMIT, 2, &text), 1);
    assert_non_null(strstr(text, "rbps"));
    assert_non_null(strstr(text, "the limit is the cause"));
    /* the device saturated: the disk may be the cause, no claim */
    w->drates[2].saturated = 1;
    world_compute(w);
    assert_int_equal(count_code(&w->v, W_CG_AT_LIMIT, -1, NULL), 0);
    w->drates[2].saturated = 0;
    /* half the limit: not at it */
    c->iostat_row[0].rbytes -= 2097152;
    world_compute(w);
    assert_int_equal(count_code(&w->v, W_CG_AT_LIMIT, -1, NULL), 0);
    /* at the limit without stalling: nobody waits for it */
    c->iostat_row[0].rbytes += 2097152;
    p->pressure.some.total_us += 1790000;
    world_compute(w);
    assert_int_equal(count_code(&w->v, W_CG_AT_LIMIT, -1, NULL), 0);
    /* ... unless its task waits for asynchronous completions, which no stall counts: a
     * libaio reader found in io_getevents at the refresh (its wait channel) */
    w->task[0].uring_read = true;
    w->task[0].aio_wait = true;
    world_compute(w);
    assert_int_equal(count_code(&w->v, W_CG_AT_LIMIT, 2, &text), 1);
    assert_non_null(strstr(text, "worker[100]"));
    assert_non_null(strstr(text, "libaio's io_getevents"));
    for (size_t i = 0; i < w->v.n; i++)
        if (w->v.w[i].code == W_CG_AT_LIMIT) {
            assert_int_equal(w->v.w[i].evidence, EV_SAMPLED);
            assert_int_equal(w->v.w[i].task, 0);
        }
    /* a wait channel read and found elsewhere (a self-paced reader asleep in its timer) */
    w->task[0].aio_wait = false;
    world_compute(w);
    assert_int_equal(count_code(&w->v, W_CG_AT_LIMIT, -1, NULL), 0);
    /* io_uring's wait measured by the lens (its interruptible iowait) */
    w->trates[0].uring_source = DELAY_SRC_BPF;
    w->trates[0].uring_wait_pct = 80.0;
    world_compute(w);
    assert_int_equal(count_code(&w->v, W_CG_AT_LIMIT, 2, &text), 1);
    assert_non_null(strstr(text, "measured"));
    for (size_t i = 0; i < w->v.n; i++)
        if (w->v.w[i].code == W_CG_AT_LIMIT)
            assert_int_equal(w->v.w[i].evidence, EV_MEASURED);
    world_free(w);
}

static void test_verdict_iostat_waits(void **state)
{
    (void)state;
    struct cg_world *w = world_new();
    prev_of(w, DB)->iostat_row[1].cost_wait_us -= 1000000;        /* 50 % of 2 s on sda */
    world_compute(w);
    const char *text = NULL;
    assert_int_equal(count_code(&w->v, W_CG_IOCOST_WAIT, 0, &text), 1);
    assert_non_null(strstr(text, "50%"));
    /* io.latency holds the pod's container at depth 4 on sdb */
    assert_int_equal(count_code(&w->v, W_CG_IOLATENCY_THROTTLED, 2, &text), 1);
    assert_non_null(strstr(text, "4 requests"));
    world_free(w);
}

static void test_verdict_writeback_root(void **state)
{
    (void)state;
    struct cg_world *w = world_new();
    w->tdevs[1].buffered = 1u;               /* docker writes to sda through the page cache */
    world_compute(w);
    /* v2 with io and memory, sda holds ext4: writeback is charged to the cgroup */
    assert_int_equal(count_code(&w->v, W_CG_WRITEBACK_ROOT, -1, NULL), 0);
    /* sda's only file system is vfat */
    struct cgroup_set *s = w->snap.cgroups;
    for (unsigned m = 0; m < s->nmounts; m++)
        if (s->mounts[m].major == 8 && s->mounts[m].minor == 1)
            str_copy(s->mounts[m].fstype, "vfat", sizeof(s->mounts[m].fstype));
    world_compute(w);
    const char *text = NULL;
    assert_int_equal(count_code(&w->v, W_CG_WRITEBACK_ROOT, 0, &text), 1);
    assert_non_null(strstr(text, "vfat does not do cgroup writeback"));
    /* this project's machines: io bound to v1 */
    for (unsigned m = 0; m < s->nmounts; m++)
        if (s->mounts[m].major == 8 && s->mounts[m].minor == 1)
            str_copy(s->mounts[m].fstype, "ext4", sizeof(s->mounts[m].fstype));
    s->io_on_v2 = 0;
    world_compute(w);
    assert_int_equal(count_code(&w->v, W_CG_WRITEBACK_ROOT, 0, &text), 1);
    assert_non_null(strstr(text, "lacks the io controller"));
    /* no write in the interval: nothing to charge */
    w->trates[1].write_bps = 0;
    world_compute(w);
    assert_int_equal(count_code(&w->v, W_CG_WRITEBACK_ROOT, -1, NULL), 0);
    world_free(w);
}

static void test_model_legacy_and_missing(void **state)
{
    (void)state;
    int proc = open_fixture_dir("cgroup/legacy/proc");
    int sys = open_fixture_dir("cgroup/legacy/sys");
    struct cgroup_src *src = cgroups_open(proc, sys, 5.0);
    struct task_sample t = { .id = 500, .tgid = 500, .comm = "nginx", .cmdline = "", .user = "" };
    struct snapshot snap = { .tasks = &t, .ntasks = 1, .mono = 1.0 };
    struct cgroup_set *s = cgroups_take(src, snap.mono, snap.threads, snap.tasks, snap.ntasks);
    assert_true(s->v1_only);
    assert_int_equal(s->n, 3);                 /* /, /lxc, /lxc/web01 */
    assert_string_equal(s->v[2].path, "/lxc/web01");
    assert_string_equal(s->v[2].names.runtime, "lxc");
    assert_true(s->v[2].settings.v1);
    assert_int_equal(s->v[2].settings.iomax.row[0].rbps, 10485760);
    assert_int_equal(s->v[2].pressure.err, -ENOENT);
    assert_int_equal(s->io_on_v2, 0);
    cgroups_free(s);

    /* v1 only: the limit judged from its tasks' summed rates and delays (no io.stat, no
     * PSI): nginx writes 5 MiB/s to sda, its write limit, and waits 50 % of the time */
    snap.mono = 2.0;
    s = cgroups_take(src, snap.mono, snap.threads, snap.tasks, snap.ntasks);
    struct dev_sample dev = { .ds = { .name = "sda", .major = 8, .minor = 0 } };
    str_copy(dev.bd.disk, "sda", sizeof(dev.bd.disk));
    struct dev_rates dr = { .dev = &dev, .saturated = 0 };
    struct task_rates tr = { .task = &t, .io_valid = true, .read_bps = 0, .write_bps = 5242880.0,
                             .delay_valid = true, .io_delay_pct = 50.0 };
    snap.cgroups = s;
    struct result r = { .cur = &snap, .interval_s = 1.0, .devs = &dr, .ndevs = 1, .tasks = &tr, .ntasks = 1 };
    cgroups_delta(NULL, s, &r);
    struct verdicts v;
    verdict_compute(&r, &v);
    const char *text = NULL;
    assert_int_equal(count_code(&v, W_CG_AT_LIMIT, 0, &text), 1);
    assert_non_null(strstr(text, "wbps"));
    assert_non_null(strstr(text, "blkio.throttle"));
    verdicts_free(&v);
    free(r.cgroups);
    snap.cgroups = NULL;
    cgroups_free(s);
    cgroups_close(src);
    close(proc);
    close(sys);

    /* no cgroup mounted at all */
    proc = open_fixture_dir("root1/proc");
    sys = open_fixture_dir("root1/sys");
    src = cgroups_open(proc, sys, 5.0);
    s = cgroups_take(src, snap.mono, snap.threads, snap.tasks, snap.ntasks);
    assert_int_equal(s->err, -ENOENT);
    assert_int_equal(s->n, 0);
    assert_int_equal(s->task_cg[0], -1);
    cgroups_free(s);
    cgroups_close(src);
    close(proc);
    close(sys);
}

/* ---- membership on the slow cadence, in a tree made for the test --------------------- */

static void put(const char *root, const char *rel, const char *text)
{
    char path[1024];
    snprintf(path, sizeof(path), "%s/%s", root, rel);
    /* make the parent directories */
    for (char *q = path + strlen(root) + 1; (q = strchr(q, '/')); q++) {
        *q = '\0';
        mkdir(path, 0755);
        *q = '/';
    }
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static void test_model_moves_seen_through_listings(void **state)
{
    (void)state;
    char root[] = "/tmp/iotriage-cgtest.XXXXXX";
    assert_non_null(mkdtemp(root));
    put(root, "proc/self/mountinfo", "26 25 0:23 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n");
    put(root, "proc/10/cgroup", "0::/a\n");
    put(root, "proc/11/cgroup", "0::/a\n");
    put(root, "sys/fs/cgroup/cgroup.controllers", "io memory\n");
    put(root, "sys/fs/cgroup/a/cgroup.procs", "10\n11\n");
    put(root, "sys/fs/cgroup/b/cgroup.procs", "");
    char dir[1100];
    snprintf(dir, sizeof(dir), "%s/proc", root);
    int proc = open(dir, O_RDONLY | O_DIRECTORY);
    snprintf(dir, sizeof(dir), "%s/sys", root);
    int sys = open(dir, O_RDONLY | O_DIRECTORY);
    assert_true(proc >= 0 && sys >= 0);
    struct cgroup_src *src = cgroups_open(proc, sys, 5.0);
    struct task_sample t[2] = {
        { .id = 10, .tgid = 10, .comm = "a", .cmdline = "", .user = "" },
        { .id = 11, .tgid = 11, .comm = "b", .cmdline = "", .user = "" },
    };
    struct snapshot snap = { .tasks = t, .ntasks = 2, .mono = 0.0 };
    struct cgroup_set *set = cgroups_take(src, snap.mono, snap.threads, snap.tasks, snap.ntasks);
    assert_string_equal(set->v[set->task_cg[0]].path, "/a");
    cgroups_free(set);

    /* 10 moves to /b. Before the next check nothing is read again. */
    put(root, "proc/10/cgroup", "0::/b\n");
    put(root, "sys/fs/cgroup/a/cgroup.procs", "11\n");
    put(root, "sys/fs/cgroup/b/cgroup.procs", "10\n");
    /* 11's /proc entry says /b too, but /a's listing still holds it: the listing is what
     * is checked, so 11 stays where its listing puts it (and its file is not read). */
    put(root, "proc/11/cgroup", "0::/b\n");
    snap.mono = 1.0;
    set = cgroups_take(src, snap.mono, snap.threads, snap.tasks, snap.ntasks);
    assert_string_equal(set->v[set->task_cg[0]].path, "/a");
    cgroups_free(set);
    snap.mono = 6.0;
    set = cgroups_take(src, snap.mono, snap.threads, snap.tasks, snap.ntasks);
    assert_string_equal(set->v[set->task_cg[0]].path, "/b");
    assert_string_equal(set->v[set->task_cg[1]].path, "/a");
    cgroups_free(set);

    /* A pid reused by a new task (another start time) is read at once. */
    t[1].start_ticks = 99;
    snap.mono = 7.0;
    set = cgroups_take(src, snap.mono, snap.threads, snap.tasks, snap.ntasks);
    assert_string_equal(set->v[set->task_cg[1]].path, "/b");
    cgroups_free(set);
    cgroups_close(src);
    close(proc);
    close(sys);
    char cmd[1200];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
    assert_int_equal(system(cmd), 0);
}

/* Many new tasks at once (the first take): memberships come from the tree's listings,
 * not from one /proc/PID/cgroup each. Every task's file here names /wrong, so a task
 * placed by its listing shows that its file was not read; the tasks the listings do not
 * place (in none, or in two: moved during the walk) are read from their files. */
static void test_model_first_take_walks_listings(void **state)
{
    (void)state;
    char root[] = "/tmp/iotriage-cgtest.XXXXXX";
    assert_non_null(mkdtemp(root));
    put(root, "proc/self/mountinfo", "26 25 0:23 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n");
    put(root, "sys/fs/cgroup/cgroup.controllers", "io memory\n");
    enum { N = 100 };
    char rel[64], text[N * 8 + 1];
    for (int id = 100; id < 100 + N; id++) {
        snprintf(rel, sizeof(rel), "proc/%d/cgroup", id);
        put(root, rel, "0::/wrong\n");
    }
    /* / holds 100-109, /a 110-149 and 197, /b/c 150-196 and 197; 198, 199 in none */
    text[0] = '\0';
    for (int id = 100; id < 110; id++)
        snprintf(text + strlen(text), sizeof(text) - strlen(text), "%d\n", id);
    put(root, "sys/fs/cgroup/cgroup.procs", text);
    text[0] = '\0';
    for (int id = 110; id < 150; id++)
        snprintf(text + strlen(text), sizeof(text) - strlen(text), "%d\n", id);
    strcat(text, "197\n");
    put(root, "sys/fs/cgroup/a/cgroup.procs", text);
    put(root, "sys/fs/cgroup/b/cgroup.procs", "");
    text[0] = '\0';
    for (int id = 150; id < 198; id++)
        snprintf(text + strlen(text), sizeof(text) - strlen(text), "%d\n", id);
    put(root, "sys/fs/cgroup/b/c/cgroup.procs", text);
    put(root, "sys/fs/cgroup/empty/cgroup.procs", "");
    char dir[1100];
    snprintf(dir, sizeof(dir), "%s/proc", root);
    int proc = open(dir, O_RDONLY | O_DIRECTORY);
    snprintf(dir, sizeof(dir), "%s/sys", root);
    int sys = open(dir, O_RDONLY | O_DIRECTORY);
    assert_true(proc >= 0 && sys >= 0);
    struct cgroup_src *src = cgroups_open(proc, sys, 5.0);
    struct task_sample t[N];
    memset(t, 0, sizeof(t));
    for (int i = 0; i < N; i++)
        t[i] = (struct task_sample){ .id = 100 + i, .tgid = 100 + i, .start_ticks = 7,
                                     .comm = "w", .cmdline = "", .user = "" };
    struct snapshot snap = { .tasks = t, .ntasks = N, .mono = 0.0 };
    struct cgroup_set *set = cgroups_take(src, snap.mono, snap.threads, snap.tasks, snap.ntasks);
    assert_string_equal(set->v[set->task_cg[0]].path, "/");
    assert_string_equal(set->v[set->task_cg[9]].path, "/");
    assert_string_equal(set->v[set->task_cg[10]].path, "/a");
    assert_string_equal(set->v[set->task_cg[49]].path, "/a");
    assert_string_equal(set->v[set->task_cg[50]].path, "/b/c");
    assert_string_equal(set->v[set->task_cg[96]].path, "/b/c");
    assert_string_equal(set->v[set->task_cg[97]].path, "/wrong");  /* listed twice */
    assert_string_equal(set->v[set->task_cg[98]].path, "/wrong");  /* listed nowhere */
    /* the empty cgroups hold no task: not part of the set */
    for (size_t k = 0; k < set->n; k++)
        assert_null(strstr(set->v[k].path, "empty"));
    cgroups_free(set);

    /* Below CG_WALK_MIN new tasks, each new one is read from its file. */
    t[5].start_ticks = 8;          /* pid 105 reused */
    snap.mono = 1.0;
    set = cgroups_take(src, snap.mono, snap.threads, snap.tasks, snap.ntasks);
    assert_string_equal(set->v[set->task_cg[5]].path, "/wrong");
    assert_string_equal(set->v[set->task_cg[6]].path, "/");
    cgroups_free(set);
    cgroups_close(src);
    close(proc);
    close(sys);
    char cmd[1200];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
    assert_int_equal(system(cmd), 0);
}

static void test_model_quiet_parent_not_read(void **state)
{
    (void)state;
    char root[] = "/tmp/iotriage-cgtest.XXXXXX";
    assert_non_null(mkdtemp(root));
    const char *p0 = "some avg10=0.00 avg60=0.00 avg300=0.00 total=1000\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=500\n";
    const char *p1 = "some avg10=0.00 avg60=0.00 avg300=0.00 total=2000\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=900\n";
    put(root, "proc/self/mountinfo", "26 25 0:23 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n");
    put(root, "proc/10/cgroup", "0::/a/b\n");
    put(root, "sys/fs/cgroup/cgroup.controllers", "\n");
    put(root, "sys/fs/cgroup/io.pressure", p0);
    put(root, "sys/fs/cgroup/a/io.pressure", p0);
    put(root, "sys/fs/cgroup/a/b/io.pressure", p0);
    put(root, "sys/fs/cgroup/a/b/cgroup.procs", "10\n");
    char dir[1100];
    snprintf(dir, sizeof(dir), "%s/proc", root);
    int proc = open(dir, O_RDONLY | O_DIRECTORY);
    snprintf(dir, sizeof(dir), "%s/sys", root);
    int sys = open(dir, O_RDONLY | O_DIRECTORY);
    struct cgroup_src *src = cgroups_open(proc, sys, 5.0);
    struct task_sample t = { .id = 10, .tgid = 10, .comm = "a", .cmdline = "", .user = "" };
    struct snapshot snap = { .tasks = &t, .ntasks = 1, .mono = 0.0 };
    struct cgroup_set *set = cgroups_take(src, snap.mono, snap.threads, snap.tasks, snap.ntasks);
    assert_int_equal(set->n, 3);
    assert_int_equal(set->v[2].pressure.some.total_us, 1000);
    cgroups_free(set);
    /* Only b's total moves: a state the kernel cannot be in (a stall below /a is a stall
     * of /a), written here to show that b is not read while /a is quiet. */
    put(root, "sys/fs/cgroup/a/b/io.pressure", p1);
    snap.mono = 1.0;
    set = cgroups_take(src, snap.mono, snap.threads, snap.tasks, snap.ntasks);     /* /, /a read: unchanged since the first take */
    cgroups_free(set);
    snap.mono = 2.0;
    set = cgroups_take(src, snap.mono, snap.threads, snap.tasks, snap.ntasks);
    assert_int_equal(set->v[2].pressure.some.total_us, 1000);   /* carried forward */
    cgroups_free(set);
    /* a stall in /a (so in / too): /a and b are read again */
    put(root, "sys/fs/cgroup/io.pressure", p1);
    put(root, "sys/fs/cgroup/a/io.pressure", p1);
    snap.mono = 3.0;
    set = cgroups_take(src, snap.mono, snap.threads, snap.tasks, snap.ntasks);
    assert_int_equal(set->v[1].pressure.some.total_us, 2000);
    assert_int_equal(set->v[2].pressure.some.total_us, 2000);
    assert_int_equal(set->v[2].pressure.full.total_us, 900);
    cgroups_free(set);
    cgroups_close(src);
    close(proc);
    close(sys);
    char cmd[1200];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
    assert_int_equal(system(cmd), 0);
}

/* The v2 fixture world with every control verdict, written as JSON, read back by replay
 * and written again: the same bytes (settings, io.stat rows, warnings under their
 * cgroups, each process's cgroup). IOTRIAGE_CGROUP_SEED=FILE keeps the line (the fuzz
 * seed tests/fuzz/seeds/replay/cgroups-fixture.jsonl was made so). */
static void test_json_replay_roundtrip(void **state)
{
    (void)state;
    struct cg_world *w = world_new();
    struct cgroup_entry *p = prev_of(w, DB);
    p->pressure.some.total_us -= 1800000;
    struct cgroup_entry *c = &w->snap.cgroups->v[cg_index(w->snap.cgroups, DB)];
    c->iostat_row[0].rbytes += 4194304;
    prev_of(w, DB)->iostat_row[1].cost_wait_us -= 1000000;
    w->tdevs[1].buffered = 1u;
    w->snap.cgroups->io_on_v2 = 0;
    w->snap.wall = 1764590000.0;
    world_compute(w);
    assert_true(w->v.n >= 5);
    char path[] = "/tmp/iotriage-cgjson.XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    FILE *f = fdopen(fd, "w+");
    struct sample_opts o = { .hostname = "fixture" };
    sample_write(f, &w->r, &w->v, &o);
    fflush(f);
    long len = ftell(f);
    char *want = xcalloc(1, (size_t)len + 1);
    rewind(f);
    assert_int_equal(fread(want, 1, (size_t)len, f), (size_t)len);
    fclose(f);
    const char *seed = getenv("IOTRIAGE_CGROUP_SEED");
    if (seed) {
        FILE *s = fopen(seed, "w");
        assert_non_null(s);
        fwrite(want, 1, (size_t)len, s);
        fclose(s);
    }
    struct replay *rp;
    char err[512];
    if (replay_open(&rp, path, err, sizeof(err)))
        fail_msg("%s", err);
    struct replay_frame fr = { 0 };
    if (replay_load(rp, 0, &fr, err, sizeof(err)))
        fail_msg("%s", err);
    assert_non_null(fr.snap.cgroups);
    assert_int_equal(fr.res.ncgroups, w->r.ncgroups);
    char *got = NULL;
    size_t glen = 0;
    FILE *g = open_memstream(&got, &glen);
    sample_write(g, &fr.res, &fr.ver, &o);
    fclose(g);
    if (glen != (size_t)len || memcmp(got, want, glen) != 0) {
        size_t k = 0;
        while (k < glen && k < (size_t)len && got[k] == want[k])
            k++;
        size_t from = k > 60 ? k - 60 : 0;
        fail_msg("written again differs at column %zu:\n  first:  %.*s\n  second: %.*s", k + 1, 160,
                 want + from, 160, got + from);
    }
    free(got);
    free(want);
    replay_frame_free(&fr);
    replay_close(rp);
    unlink(path);
    world_free(w);
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
        cmocka_unit_test(test_latency_and_safe_reads),
        cmocka_unit_test(test_prio_class),
        cmocka_unit_test(test_names_table),
        cmocka_unit_test(test_model_tree_and_membership),
        cmocka_unit_test(test_model_rates),
        cmocka_unit_test(test_verdict_prio_class),
        cmocka_unit_test(test_verdict_weight),
        cmocka_unit_test(test_verdict_weight_on_layer),
        cmocka_unit_test(test_verdict_at_limit),
        cmocka_unit_test(test_verdict_iostat_waits),
        cmocka_unit_test(test_verdict_writeback_root),
        cmocka_unit_test(test_model_legacy_and_missing),
        cmocka_unit_test(test_model_moves_seen_through_listings),
        cmocka_unit_test(test_model_first_take_walks_listings),
        cmocka_unit_test(test_model_quiet_parent_not_read),
        cmocka_unit_test(test_json_replay_roundtrip),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
