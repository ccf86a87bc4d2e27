/* SPDX-License-Identifier: GPL-2.0-or-later */
/* source/cgroupfs.h: cgroup membership, I/O controls and pressure, and the names a person
 * knows a cgroup by.
 *
 * Formats are the kernel's (Documentation/admin-guide/cgroup-v2.rst, "IO" section, and
 * block/blk-cgroup.c, blk-throttle.c, blk-iocost.c, blk-iolatency.c, blk-ioprio.c):
 *   /proc/self/mountinfo   the v2 hierarchy is the mount of fstype cgroup2, wherever it
 *                          is (/sys/fs/cgroup alone, or /sys/fs/cgroup/unified beside v1
 *                          hierarchies); the legacy blkio hierarchy is fstype cgroup with
 *                          "blkio" among its super options
 *   /proc/PID/cgroup       "0::/path" for v2, "N:blkio:/path" (or "N:cpu,blkio:...") v1
 *   io.stat                "MAJ:MIN rbytes=N wbytes=N rios=N wios=N dbytes=N dios=N"
 *                          and with io.cost "cost.usage=N cost.wait=N cost.indebt=N
 *                          cost.indelay=N" (microseconds), with io.latency
 *                          "depth=N|max avg_lat=N win=N"
 *   io.max                 "MAJ:MIN rbps=N|max wbps=... riops=... wiops=..."
 *   io.weight, io.bfq.weight  "default N" then "MAJ:MIN N" lines
 *   io.cost.qos (root)     "MAJ:MIN enable=0|1 ctrl=auto|user rpct=.. rlat=.. wpct=..
 *                          wlat=.. min=.. max=.."
 *   io.latency             "MAJ:MIN target=N" (microseconds; blk-iolatency.c)
 *   io.prio.class          one word: no-change promote-to-rt restrict-to-be idle
 *                          (none-to-rt, an old alias of promote-to-rt)
 *   blkio.throttle.{read,write}_{bps,iops}_device (v1)  "MAJ:MIN N" lines
 *   io.pressure            the /proc/pressure format (source/psi.h: psi_parse)
 *
 * Every reader opens only a regular file and follows no symlink (O_NOFOLLOW, O_NONBLOCK):
 * a fixture tree or an image given as a root may hold what cgroupfs never does.
 * Every parser is pure: it reads exactly buf[0, len) (no NUL needed), fills *out and
 * returns 0 or -EINVAL; a line it does not understand is skipped, never half-read. Rows of
 * devices beyond CG_DEVS_MAX are dropped and `truncated` says so. Every reader takes a
 * directory fd (the /proc directory, the hierarchy's root, a cgroup's directory), so a
 * fixture tree (tests/fixtures/cgroup/) and the live system go through the same code.
 * A file that is absent is -ENOENT: the controller is not enabled there (or the kernel
 * lacks it), which is "unavailable", never "no limit".
 */
#ifndef IOTRIAGE_SOURCE_CGROUPFS_H
#define IOTRIAGE_SOURCE_CGROUPFS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "source/psi.h"

#define CG_PATH_MAX   512            /* longer paths are not followed (-ENAMETOOLONG) */
#define CG_DEVS_MAX   16
#define CG_UNLIMITED  UINT64_MAX     /* "max" in io.max */
#define CG_MOUNTS_MAX 64             /* block-backed mounts remembered (writeback verdict) */

/* A block-backed mount: which file system a device's data is written through. */
struct cg_mount {
    unsigned major, minor;
    char fstype[16];
};

struct cgroup_mounts {
    bool has_v2;
    char v2[CG_PATH_MAX];            /* mount point, unescaped ("/sys/fs/cgroup/unified") */
    char v2_root[CG_PATH_MAX];       /* the subtree mounted there ("/" unless a namespace) */
    bool has_blkio;                  /* a legacy v1 hierarchy with the blkio controller */
    char blkio[CG_PATH_MAX];
    char blkio_root[CG_PATH_MAX];
    unsigned nblock;                 /* mounts of block devices, for the writeback verdict */
    bool block_truncated;
    struct cg_mount block[CG_MOUNTS_MAX];
};

/* Pure: parse /proc/self/mountinfo text. Returns 0 (also when no cgroup is mounted). */
int cgroup_mounts_parse(const char *buf, size_t len, struct cgroup_mounts *out);
/* Read <proc_fd>/self/mountinfo. Returns 0 or -errno. */
int cgroup_mounts_read(int proc_fd, struct cgroup_mounts *out);
/* Open a mount point as a directory: a path below /sys is opened relative to sys_fd
 * (so --sys-root fixture trees work), any other absolute path as it is. fd or -errno. */
int cgroup_open_mount(int sys_fd, const char *mountpoint);

/* Where a task is. A v1-only machine has has_v2 false and maybe has_blkio. */
struct cgroup_membership {
    bool has_v2;
    char v2[CG_PATH_MAX];            /* "/system.slice/foo.service" */
    bool has_blkio;
    char blkio[CG_PATH_MAX];
};

/* Pure: parse /proc/PID/cgroup text. Returns 0 when a v2 or blkio line was found, else
 * -EINVAL. A path too long for CG_PATH_MAX leaves that hierarchy unset. */
int cgroup_proc_parse(const char *buf, size_t len, struct cgroup_membership *out);
/* Read <proc_fd>/<pid>/cgroup. 0 or -errno (-ENOENT: the task exited). */
int cgroup_proc_read(int proc_fd, pid_t pid, struct cgroup_membership *out);

/* The directory of cgroup `path` relative to the hierarchy mounted with `root` (the
 * mountinfo root field): "/a/b" under root "/" is "a/b", under root "/a" it is "b"; "."
 * for the mount's own root. -ENOENT when the path lies outside the mounted subtree. */
int cgroup_rel_path(const char *root, const char *path, char *out, size_t outlen);

/* io.stat: one row per device the cgroup did I/O to (counters are hierarchical). */
struct cg_iostat_row {
    unsigned major, minor;
    uint64_t rbytes, wbytes, rios, wios, dbytes, dios;
    bool     has_cost;               /* io.cost is enabled on the device */
    uint64_t cost_usage_us, cost_wait_us, cost_indebt_us, cost_indelay_us;
    bool     has_lat;                /* io.latency is set for the device */
    long     lat_depth;              /* queue depth io.latency allows it; -1: "max" */
    uint64_t lat_avg_us;
};
struct cg_iostat {
    unsigned n;
    bool truncated;
    struct cg_iostat_row row[CG_DEVS_MAX];
};
int cgroup_iostat_parse(const char *buf, size_t len, struct cg_iostat *out);

/* io.max (v2) or the four blkio.throttle files (v1): CG_UNLIMITED where no limit. */
struct cg_limit_row {
    unsigned major, minor;
    uint64_t rbps, wbps, riops, wiops;
};
struct cg_iomax {
    unsigned n;
    bool truncated;
    struct cg_limit_row row[CG_DEVS_MAX];
};
int cgroup_iomax_parse(const char *buf, size_t len, struct cg_iomax *out);
/* Pure: one limit row as the kernel's files name its keys ("rbps=1048576 wiops=100", or
 * v1's "read_bps=..."); "" when the row limits nothing. */
void cgroup_limit_text(char *buf, size_t n, const struct cg_limit_row *l, bool v1);
/* One v1 throttle file ("MAJ:MIN N" lines) merged into *out: field 0 rbps, 1 wbps,
 * 2 riops, 3 wiops. Rows new to *out start unlimited. */
int cgroup_blkio_throttle_parse(const char *buf, size_t len, int field, struct cg_iomax *out);

/* io.weight or io.bfq.weight. */
struct cg_weight {
    int dflt;                        /* the "default" line; -1 when absent */
    unsigned n;
    bool truncated;
    struct { unsigned major, minor; int weight; } row[CG_DEVS_MAX];
};
#define CG_WEIGHT_DEFAULT 100        /* the kernel's (CGROUP_WEIGHT_DFL) */
int cgroup_weight_parse(const char *buf, size_t len, struct cg_weight *out);
/* The weight the cgroup has on major:minor (its row, else its default, else 100). */
int cgroup_weight_for(const struct cg_weight *w, unsigned major, unsigned minor);

/* io.cost.qos of the root cgroup: is io.cost enabled on a device. */
struct cg_costqos_row {
    unsigned major, minor;
    bool enable, ctrl_user;
    double rpct, wpct, min, max;
    uint64_t rlat, wlat;
};
struct cg_costqos {
    unsigned n;
    bool truncated;
    struct cg_costqos_row row[CG_DEVS_MAX];
};
int cgroup_costqos_parse(const char *buf, size_t len, struct cg_costqos *out);
/* 1 enabled, 0 not (a row with enable=0, or no row: io.cost lists devices it was
 * configured for), -1 unknown (the file could not be read: pass err). */
int cgroup_cost_enabled(const struct cg_costqos *q, int err, unsigned major, unsigned minor);

/* io.latency: the latency target set for a device (blk-iolatency.c: iolatency_prfill_limit). */
struct cg_latency {
    unsigned n;
    bool truncated;
    struct { unsigned major, minor; uint64_t target_us; } row[CG_DEVS_MAX];
};
int cgroup_latency_parse(const char *buf, size_t len, struct cg_latency *out);
/* Read io.latency of a cgroup directory: 0 or -errno (-ENOENT: the kernel lacks
 * CONFIG_BLK_CGROUP_IOLATENCY, the io controller is not enabled for it, or the root). */
int cgroup_latency_read(int dirfd, struct cg_latency *out);

/* io.prio.class (block/blk-ioprio.c: policy_name[]); numbers are the kernel's. */
enum cg_prio_policy {
    CGP_NO_CHANGE = 0,
    CGP_PROMOTE_TO_RT = 1,
    CGP_RESTRICT_TO_BE = 2,
    CGP_IDLE = 3,
    CGP_NONE_TO_RT = 4,              /* deprecated alias: acts as promote-to-rt */
};
int cgroup_prio_parse(const char *buf, size_t len, enum cg_prio_policy *out);
const char *cgroup_prio_name(enum cg_prio_policy p);
/* Pure: what blkcg_set_ioprio() makes of a bio's priority (class << 13 | level, the
 * task's effective value, since bio_set_ioprio() fills a NONE bio from the task first):
 * promote-to-rt turns every non-realtime bio into rt/4; otherwise the bio gets the larger
 * of its value and (policy class, level 0): restrict-to-be turns rt into be/0, idle turns
 * rt and be into idle/0. */
int cgroup_prio_apply(enum cg_prio_policy p, int ioprio);

/* The I/O controls of one cgroup, each with the -errno of reading it (-ENOENT: the io
 * controller is not enabled for it, or it is the root, which has none of them). */
struct cgroup_settings {
    bool v1;                         /* limits are blkio.throttle.* of a v1 hierarchy */
    int  iomax_err, weight_err, bfq_weight_err, prio_err;
    struct cg_iomax iomax;
    struct cg_weight weight, bfq_weight;
    enum cg_prio_policy prio;
};
/* Read io.max, io.weight, io.bfq.weight and io.prio.class of the cgroup whose directory
 * is dirfd. */
void cgroup_settings_read(int dirfd, struct cgroup_settings *out);
/* The same from a v1 blkio cgroup directory (only the throttle limits exist there). */
void cgroup_settings_read_v1(int dirfd, struct cgroup_settings *out);
/* io.stat and io.pressure of a cgroup directory: 0 or -errno each. */
int cgroup_iostat_read(int dirfd, struct cg_iostat *out);
void cgroup_pressure_read(int dirfd, struct psi_sample *out);
/* io.cost.qos and cgroup.controllers of the hierarchy's root directory. */
int cgroup_costqos_read(int rootfd, struct cg_costqos *out);
/* Does the root's cgroup.controllers list `name` ("io", "memory")? 1, 0, or -errno. */
int cgroup_has_controller(int rootfd, const char *name);

/* Names a person knows, from the path's conventions alone (no runtime is asked):
 *   unit       the deepest systemd unit in the path, .service or .scope ("foo.service",
 *              "session-3.scope", "docker-<id>.scope"); else the deepest .slice; "" none
 *   container  docker (docker-<id>.scope, /docker/<id>), podman (libpod-<id>.scope,
 *              /libpod_parent/libpod-<id>), containerd (cri-containerd-<id>.scope),
 *              cri-o (crio-<id>.scope), lxc (lxc.payload.NAME, /lxc/NAME), and "cri"
 *              for a bare 64-hex container directory inside a Kubernetes pod whose
 *              runtime the path does not say. conmon/monitor cgroups are no container.
 *   pod        Kubernetes pod uid (kubepods-burstable-pod<uid>.slice with '_' for '-',
 *              or kubepods/besteffort/pod<uid>) and its QoS class: guaranteed when the
 *              pod sits directly under kubepods, else burstable or besteffort.
 * The deepest match wins (docker in docker). short_id is the id's first 12 characters
 * (a name, for LXC, is kept whole when it is shorter). */
#define CG_UNIT_MAX 128
#define CG_ID_MAX   72
struct cgroup_names {
    char unit[CG_UNIT_MAX];
    char runtime[16];                /* "" when no container */
    char id[CG_ID_MAX];
    char short_id[16];
    char pod_uid[40];                /* "" when no pod */
    char qos[16];                    /* "guaranteed" "burstable" "besteffort" */
};
void cgroup_names_of(const char *path, struct cgroup_names *out);

#endif
