/* SPDX-License-Identifier: GPL-2.0-or-later */
/* source/cgroups.h: the cgroup lens's model: which cgroup each task is in, the cgroups that hold a
 * listed task (and their ancestors, for the tree), their I/O controls and pressure, and
 * per cgroup rates over an interval.
 *
 * Sampling (cgroups_take, called by the sampler after the tasks are read): a task's
 * /proc/PID/cgroup is read when the task is first seen and again every FDMAP_RESCAN_S or
 * so (spread by pid so that 10,000 tasks do not come due at once), never every refresh:
 * a task rarely moves, and moving it is what a container runtime or systemd does once,
 * at start. Each listed cgroup's io.pressure and io.stat are read every refresh; its
 * controls (io.max, io.weight, io.bfq.weight, io.prio.class, or the v1 throttle files)
 * and the hierarchy's (mountinfo, io.cost.qos, cgroup.controllers) on the same slow
 * cadence. Bounded: only cgroups holding a listed task and their ancestors.
 *
 * Which hierarchy: the v2 one, found through mountinfo (fstype cgroup2) wherever it is
 * mounted. A machine without v2 (legacy only) is shown by its blkio hierarchy: the
 * membership and the throttle limits, and `v1_only` says the v2 controls are unavailable.
 *
 * The set belongs to its snapshot (snapshot.cgroups) and is freed with it; it survives
 * the snapshot's reduction (snapshot.h), since the next delta reads its counters. Paths
 * and names are copies: nothing points into the sampler.
 *
 * cgroups_delta() (delta.h) is pure over two sets and a result's task rates: it writes rates, sums
 * and pressure shares, NAN where unknown (a rate with no previous sample, no task with
 * readable counters, a pressure file missing), never 0.
 */
#ifndef IOTRIAGE_SOURCE_CGROUPS_H
#define IOTRIAGE_SOURCE_CGROUPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "source/cgroupfs.h"
#include "source/ioprio.h"
#include "source/procs.h"
#include "source/psi.h"

struct cgroup_entry {
    char *path;                      /* "/system.slice/foo.service"; "/" the root */
    int   parent;                    /* index in the set; -1 for the root */
    int   depth;                     /* 0 for the root */
    uint64_t id;                     /* v2: its directory's inode number, the kernel's cgroup
                                      * id (what BPF's bpf_get_current_cgroup_id gives);
                                      * 0 unknown (v1, unreadable) */
    struct cgroup_names names;
    unsigned ntasks;                 /* listed tasks directly in it */
    struct psi_sample pressure;      /* io.pressure; err -ENOENT without PSI */
    int   iostat_err;                /* -ENOENT: no io controller for it (or the root) */
    unsigned niostat;                /* io.stat rows: a malloc'd array (NULL when none), */
    struct cg_iostat_row *iostat_row;   /* sized to fit: most cgroups touch a device or two */
    struct cgroup_settings settings;
};

struct cgroup_set {
    int   err;                       /* 0, or why nothing is known (no cgroup hierarchy) */
    bool  v1_only;                   /* no v2 hierarchy: paths and limits are blkio's */
    char  mount[CG_PATH_MAX];        /* where the hierarchy shown is mounted */
    int   io_on_v2;                  /* the v2 root offers io: 1, 0, -1 unknown */
    int   memory_on_v2;              /* and memory (cgroup writeback needs both) */
    int   costqos_err;
    struct cg_costqos costqos;       /* the root's io.cost.qos */
    unsigned nmounts;
    bool  mounts_truncated;
    struct cg_mount mounts[CG_MOUNTS_MAX];   /* block-backed mounts (writeback verdict) */
    struct cgroup_entry *v;          /* tree order: a parent before its children */
    size_t n;
    struct cg_named *named;          /* cgroups holding no listed task, named by id for
                                      * the writeback rows (cgroups_name_ids) */
    size_t nnamed;
    int  *task_cg;                   /* per snapshot task (same order): index into v, -1
                                      * unknown (exited, unreadable) */
    int  *task_err;                  /* per task: 0 or -errno reading /proc/PID/cgroup */
    size_t ntasks;
};

/* A v2 cgroup known only by its id (the lens's writeback rows), and its path. */
struct cg_named {
    uint64_t id;
    char     path[CG_PATH_MAX];
};

struct cgroup_src;

/* proc_fd, sys_fd: the /proc and /sys directories (borrowed: they must outlive src). */
struct cgroup_src *cgroups_open(int proc_fd, int sys_fd, double rescan_s);
void cgroups_close(struct cgroup_src *src);
/* The set for a snapshot's tasks (sorted by id, taken at mono). Never NULL. */
struct cgroup_set *cgroups_take(struct cgroup_src *src, double mono, bool threads,
                                const struct task_sample *tasks, size_t ntasks);
void cgroups_free(struct cgroup_set *set);

/* Rates of one device from a cgroup's io.stat (hierarchical: its descendants included). */
struct cgroup_dev_rates {
    int      dev;                    /* index into result.devs; -1 when not listed */
    unsigned major, minor;
    double   rbps, wbps, riops, wiops;
    bool     has_cost;
    double   cost_wait_pct;          /* io.cost: share of the interval its I/O waited */
    double   cost_indelay_pct;       /* io.cost: delayed for debt (memory, swap) */
    bool     has_lat;
    long     lat_depth;              /* io.latency's queue depth for it; -1 unlimited */
};

struct cgroup_rates {
    const struct cgroup_entry *cg;   /* points into cur's set */
    /* Summed over its listed tasks and those of its descendants (like systemd-cgtop);
     * NAN when none of them had readable counters over the interval. */
    double read_bps, write_bps;
    unsigned ntasks;                 /* tasks in it and below */
    unsigned io_unknown;             /* of which the I/O rates are unknown */
    /* Summed block-I/O delay of the same tasks: 250 means two and a half tasks' worth of
     * waiting; NAN when no task had delay data. */
    double io_delay_pct;
    unsigned delay_unknown;
    /* Its own io.pressure over the interval, from the `total` counters: NAN unknown. */
    double some_pct, full_pct;
    unsigned ndev;                   /* one per io.stat row; dev points into the same */
    struct cgroup_dev_rates *dev;    /* allocation as result.cgroups (freed with it) */
};

/* The entry of v2 cgroup id `id` (cgroup_entry.id), or -1 when none of the set's has it
 * (a cgroup holding no listed task, or id 0). */
int cgroups_find_id(const struct cgroup_set *set, uint64_t id);

/* Name the v2 cgroups of ids[] that the set does not hold (a writer that dirtied pages
 * and exited, or is not listed): their directory opened from the id (open_by_handle_at
 * with the kernel's kernfs file handle, which needs CAP_DAC_READ_SEARCH) and named by
 * its link under /proc/self/fd. At most CG_NAMED_MAX a take; an id the kernel no longer
 * has (the cgroup removed), or any failure, stays unnamed. */
#define CG_NAMED_MAX 32
void cgroups_name_ids(const struct cgroup_src *src, struct cgroup_set *set, const uint64_t *ids,
                      size_t n);
/* The path of cgroup `id`: the set's entry, else a name found by cgroups_name_ids; NULL
 * when unknown. */
const char *cgroups_path_of(const struct cgroup_set *set, uint64_t id);

/* The cgroup whose io.prio.class applies to task ti (its nearest ancestor-or-self with
 * the file), when that policy is not no-change; else -1. */
int cgroups_prio_owner(const struct cgroup_set *set, size_t ti);
/* What io.prio.class makes of task ti's effective priority *e (blkcg_set_ioprio runs
 * after the task's own value is filled in): *e rewritten, with source IOS_CGROUP, and
 * true when the policy changes it; false and *e untouched otherwise. */
bool cgroups_prio_effective(const struct cgroup_set *set, size_t ti, struct ioprio_eff *e);

#endif
