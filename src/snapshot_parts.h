/* SPDX-License-Identifier: GPL-2.0-or-later */
/* snapshot_parts.h: private to snapshot.c and its parts (snapshot_taskdevs.c: each
 * process's devices; snapshot_fs.c: filesystems): the sampler and what they share. */
#ifndef IOTRIAGE_SNAPSHOT_PARTS_H
#define IOTRIAGE_SNAPSHOT_PARTS_H

#include <sys/types.h>

#include "snapshot.h"

struct sampler {
    struct sampler_opts opts;
    pid_t *pids;
    int proc_fd, sys_fd;
    struct procs_src *procs;
    struct taskstats_src *ts;
    struct fdmap *fdmap;
    int ts_open_err;
    char ts_open_msg[192];
    enum delayacct_state last_da;
    bool boot_delayacct;             /* "delayacct" on the kernel command line */
    long long da_since;              /* see snapshot.delayacct_since_ticks */
    long clk_tck;
    struct dev_handle *devh;         /* each listed device's open sysfs files, in the order
                                      * /proc/diskstats listed them last */
    unsigned sched_mods;             /* blockdev_sched_modules of the running kernel; 0
                                      * with --sys-root (the tree is not this kernel's) */
    size_t ndevh;
    struct cgroup_src *cg;           /* task -> cgroup on the fd rescan cadence (cgroups.h) */
    struct mounts_src *mnt;          /* the mount table, read again when it changes */
    struct fs_track *fst;            /* per filesystem, its used-bytes history */
    size_t nfst;
    struct lens *lens;               /* the BPF lens; NULL when off (lens_msg says why) */
    bool lens_deferred;              /* to be loaded by sampler_load_lens */
    char tasks_msg[160];             /* why the task iterator is off; "" when it loaded */
    char lens_msg[160];
    unsigned long takes;             /* snapshots taken: the first one scans no fds */
    /* The lens's submitted bytes at the previous snapshot (sorted; lens_submit_cmp), for
     * each process's devices over the interval; have_subs false before the first. */
    struct lens_reading subs_prev;
    bool have_subs;
};

/* Index of the device major:minor in the snapshot, or -1 (snapshot_taskdevs.c). */
int dev_index(const struct snapshot *snap, dev_t dev);
void take_task_devs(struct sampler *s, struct snapshot *out);

/* The device whose scheduler the filesystem's I/O meets (snapshot_fs.c). */
int disk_index_of(const struct sampler *s, const struct snapshot *snap, int idx);
void take_filesystems(struct sampler *s, struct snapshot *out);

#endif
