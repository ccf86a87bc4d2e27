/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Fuzz the cgroup parsers (source/cgroupfs.h). The first byte chooses the parser, the rest
 * is the file's text: 0 mountinfo, 1 /proc/PID/cgroup, 2 io.stat, 3 io.max, 4 a v1
 * blkio.throttle file (field from the second byte), 5 io.weight, 6 io.cost.qos and
 * io.latency (both "MAJ:MIN key=value" lines),
 * 7 io.prio.class, 8 a cgroup path for cgroup_names_of and cgroup_rel_path (a C string:
 * paths come from parsed, NUL-terminated text). */
#include "fuzz.h"

#include <errno.h>
#include <math.h>

#include "source/cgroupfs.h"

#define MAX_LEN 4096

static void check_str(const char *s, size_t cap)
{
    FZ_CHECK(fz_terminated(s, cap));
}

static void fuzz_mounts(const char *buf, size_t len)
{
    struct cgroup_mounts m;
    memset(&m, 0xa5, sizeof(m));
    FZ_CHECK(cgroup_mounts_parse(buf, len, &m) == 0);
    FZ_CHECK(m.nblock <= CG_MOUNTS_MAX);
    check_str(m.v2, sizeof(m.v2));
    check_str(m.v2_root, sizeof(m.v2_root));
    check_str(m.blkio, sizeof(m.blkio));
    check_str(m.blkio_root, sizeof(m.blkio_root));
    FZ_CHECK(!m.has_v2 || m.v2[0]);
    for (unsigned i = 0; i < m.nblock; i++) {
        check_str(m.block[i].fstype, sizeof(m.block[i].fstype));
        FZ_CHECK(m.block[i].major != 0);
    }
}

static void fuzz_proc(const char *buf, size_t len)
{
    struct cgroup_membership c;
    memset(&c, 0xa5, sizeof(c));
    int r = cgroup_proc_parse(buf, len, &c);
    FZ_CHECK(r == 0 || r == -EINVAL);
    FZ_CHECK((r == 0) == (c.has_v2 || c.has_blkio));
    check_str(c.v2, sizeof(c.v2));
    check_str(c.blkio, sizeof(c.blkio));
    FZ_CHECK(!c.has_v2 || c.v2[0] == '/');
    FZ_CHECK(!c.has_blkio || c.blkio[0] == '/');
    if (c.has_v2) {
        char rel[CG_PATH_MAX];
        int rr = cgroup_rel_path("/", c.v2, rel, sizeof(rel));
        FZ_CHECK(rr == 0 || rr == -EINVAL || rr == -ENAMETOOLONG);
        FZ_CHECK(rr || (rel[0] && rel[0] != '/'));
    }
}

static void fuzz_iostat(const char *buf, size_t len)
{
    struct cg_iostat s;
    memset(&s, 0xa5, sizeof(s));
    FZ_CHECK(cgroup_iostat_parse(buf, len, &s) == 0);
    FZ_CHECK(s.n <= CG_DEVS_MAX);
    for (unsigned i = 0; i < s.n; i++)
        FZ_CHECK(s.row[i].lat_depth >= -1);
}

static void fuzz_iomax(const char *buf, size_t len, int field)
{
    struct cg_iomax m;
    if (field < 0) {
        memset(&m, 0xa5, sizeof(m));
        FZ_CHECK(cgroup_iomax_parse(buf, len, &m) == 0);
    } else {
        memset(&m, 0, sizeof(m));
        FZ_CHECK(cgroup_blkio_throttle_parse(buf, len, field, &m) == (field <= 3 ? 0 : -EINVAL));
    }
    FZ_CHECK(m.n <= CG_DEVS_MAX);
    for (unsigned i = 0; i < m.n; i++)
        for (unsigned j = i + 1; j < m.n; j++)   /* one row per device */
            FZ_CHECK(m.row[i].major != m.row[j].major || m.row[i].minor != m.row[j].minor);
}

static void fuzz_weight(const char *buf, size_t len)
{
    struct cg_weight w;
    memset(&w, 0xa5, sizeof(w));
    FZ_CHECK(cgroup_weight_parse(buf, len, &w) == 0);
    FZ_CHECK(w.dflt == -1 || (w.dflt >= 1 && w.dflt <= 10000));
    FZ_CHECK(w.n <= CG_DEVS_MAX);
    for (unsigned i = 0; i < w.n; i++) {
        FZ_CHECK(w.row[i].weight >= 1 && w.row[i].weight <= 10000);
        int x = cgroup_weight_for(&w, w.row[i].major, w.row[i].minor);
        FZ_CHECK(x >= 1 && x <= 10000);
    }
}

static void fuzz_costqos(const char *buf, size_t len)
{
    struct cg_costqos q;
    memset(&q, 0xa5, sizeof(q));
    FZ_CHECK(cgroup_costqos_parse(buf, len, &q) == 0);
    FZ_CHECK(q.n <= CG_DEVS_MAX);
    for (unsigned i = 0; i < q.n; i++) {
        FZ_CHECK(isfinite(q.row[i].rpct) && q.row[i].rpct >= 0);
        FZ_CHECK(isfinite(q.row[i].max) && q.row[i].max >= 0);
        int e = cgroup_cost_enabled(&q, 0, q.row[i].major, q.row[i].minor);
        FZ_CHECK(e == 0 || e == 1);
    }
    struct cg_latency l;
    memset(&l, 0xa5, sizeof(l));
    FZ_CHECK(cgroup_latency_parse(buf, len, &l) == 0);
    FZ_CHECK(l.n <= CG_DEVS_MAX);
}

static void fuzz_prio(const char *buf, size_t len)
{
    enum cg_prio_policy p = CGP_NO_CHANGE;
    int r = cgroup_prio_parse(buf, len, &p);
    FZ_CHECK(r == 0 || r == -EINVAL);
    if (r)
        return;
    FZ_CHECK(strcmp(cgroup_prio_name(p), "?") != 0);
    /* every valid class and level stays a valid one */
    for (int cls = 1; cls <= 3; cls++)
        for (int lvl = 0; lvl < 8; lvl++) {
            int v = cgroup_prio_apply(p, (cls << 13) | lvl);
            FZ_CHECK((v >> 13) >= 1 && (v >> 13) <= 3 && (v & ~0xe007) == 0);
        }
}

static void fuzz_names(const uint8_t *data, size_t len)
{
    char *path = fz_cstr(data, len);
    struct cgroup_names n;
    memset(&n, 0xa5, sizeof(n));
    cgroup_names_of(path, &n);
    check_str(n.unit, sizeof(n.unit));
    check_str(n.runtime, sizeof(n.runtime));
    check_str(n.id, sizeof(n.id));
    check_str(n.short_id, sizeof(n.short_id));
    check_str(n.pod_uid, sizeof(n.pod_uid));
    check_str(n.qos, sizeof(n.qos));
    FZ_CHECK(strlen(n.short_id) <= 12);
    FZ_CHECK(!n.runtime[0] == !n.id[0]);
    FZ_CHECK(!n.pod_uid[0] == !n.qos[0]);
    FZ_CHECK(strncmp(n.id, n.short_id, strlen(n.short_id)) == 0);
    char rel[256];
    int r = cgroup_rel_path(path, path, rel, sizeof(rel));   /* a path is its own root */
    FZ_CHECK(r != 0 || strcmp(rel, ".") == 0);
    free(path);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2 || size > MAX_LEN)
        return 0;
    uint8_t mode = data[0] % 9;
    int field = data[1] % 6;         /* 4 and 5: out of range, refused */
    data++;
    size--;
    if (mode == 8) {
        fuzz_names(data, size);
        return 0;
    }
    char *buf = fz_copy(data, size);
    switch (mode) {
    case 0: fuzz_mounts(buf, size); break;
    case 1: fuzz_proc(buf, size); break;
    case 2: fuzz_iostat(buf, size); break;
    case 3: fuzz_iomax(buf, size, -1); break;
    case 4: fuzz_iomax(buf, size, field); break;
    case 5: fuzz_weight(buf, size); break;
    case 6: fuzz_costqos(buf, size); break;
    default: fuzz_prio(buf, size); break;
    }
    free(buf);
    return 0;
}
