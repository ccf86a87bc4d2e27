/* SPDX-License-Identifier: GPL-2.0-or-later */
/* source/blockdev.h: what sysfs says about a block device (queue attributes, scheduler).
 *
 * Partitions are told from whole disks by the kernel's own marker, the `partition`
 * attribute, and mapped to their disk through the device path (never by name or major).
 * Every numeric attribute is -1 when sysfs did not give it: unknown, not zero.
 *
 * Identity: a device removed and registered again can come back under the same name and
 * major:minor (a partition deleted and re-added with BLKPG gets its minor back once the
 * kernel has released it, ~0.1 s later on 6.18; a loop device removed and re-created
 * through /dev/loop-control), and its counters start again from zero, so they need not go
 * down. Its sysfs directory is a new kernfs node, with a new inode number (kernfs numbers
 * them cyclically, never reusing one soon): `ident` tells two registrations apart.
 */
#ifndef IOTRIAGE_SOURCE_BLOCKDEV_H
#define IOTRIAGE_SOURCE_BLOCKDEV_H

#include <stdbool.h>
#include <stddef.h>

#define BD_NAME_MAX   64
#define BD_SCHED_MAX  24
#define BD_NSCHED     8
#define BD_NTUNABLES  24

struct bd_tunable {
    char name[32];
    char value[32];
};

struct blockdev_info {
    bool partition;
    char disk[BD_NAME_MAX];          /* the whole disk: itself when not a partition */
    unsigned long long ident;        /* inode of its sysfs directory: differs for every
                                      * registration of the device; 0 when unknown */
    /* Queue attributes of the whole disk (a partition shares its disk's queue). */
    bool has_queue;                  /* queue/ exists (false: bio-based without one) */
    char scheduler[BD_SCHED_MAX];    /* active one; "" when the device offers none */
    char schedulers[BD_NSCHED][BD_SCHED_MAX];
    unsigned nsched;
    long nr_requests;
    int  rotational;
    int  hw_queues;                  /* entries under mq/; 0 for bio-based devices */
    long inflight_r, inflight_w;     /* of this device (partition or disk) */
    struct bd_tunable tunables[BD_NTUNABLES];   /* queue/iosched/<name> */
    unsigned ntunables;
    /* The first attribute (inflight, queue/scheduler, queue/nr_requests) that exists but
     * could not be read, and why (-errno; 0 none): its field is unknown, which the -1/""
     * of an absent attribute cannot tell apart from "the device has none". */
    int  attr_err;
    char attr_err_name[24];
    /* Schedulers not offered by the queue that the running kernel can still load as a
     * module at the first write of their name (BD_LOAD_*; filled by the sampler from
     * blockdev_sched_modules, 0 for a tree given with --sys-root and in a replay). */
    unsigned sched_loadable;
    /* What kind of layer a bio-based device is, as sysfs says it (blockdev_layer_text):
     * "crypt, home" for device mapper (dm/uuid's prefix, dm/name), "raid1" for md
     * (md/level); "" when sysfs says nothing (a disk, a dm device without a uuid or
     * name). Read once, with the device. */
    char layer[48];
};

#define BD_LOAD_BFQ      1u
#define BD_LOAD_DEADLINE 2u
#define BD_LOAD_KYBER    4u

/* The schedulers the running kernel has as loadable modules (BD_LOAD_*): their module
 * file under modules_dir (/lib/modules/RELEASE, from uname), looked up once a process;
 * writing the name to queue/scheduler loads it (elevator_get() asks for
 * "NAME-iosched"). 0 when none, or the directory is missing (a kernel without modules,
 * or one whose tree is not on this machine). */
unsigned blockdev_sched_modules(const char *modules_dir);

/* Pure: parse the text of queue/scheduler, e.g. "none [mq-deadline] kyber bfq".
 * Fills active ("" when nothing is bracketed, as for "none" alone on old kernels or an
 * empty file) and the offered list. Returns the number offered, or -EINVAL. */
int blockdev_parse_scheduler(const char *buf, char active[BD_SCHED_MAX],
                             char list[BD_NSCHED][BD_SCHED_MAX]);

/* Pure: parse the text of `inflight` ("reads writes"). Returns 0 or -EINVAL. */
int blockdev_parse_inflight(const char *buf, long *r, long *w);

/* Read sysfs for block device `name` below sys_fd (the /sys directory).
 * Returns 0, or -errno when the device itself is gone (ENOENT: also when it went away
 * while being read; then nothing read is kept, partition is false and disk is name, as
 * for a device never found); missing attributes are left at -1/empty. */
int blockdev_read(int sys_fd, const char *name, struct blockdev_info *out);

/* A stacked device's kind: from a device mapper uuid's prefix, the one its tool gives
 * (cryptsetup "CRYPT-", LVM "LVM-", multipath "mpath-", kpartx "partN-"), and its name;
 * or md's level. Any may be NULL or "". Writes "" when neither says anything. */
void blockdev_layer_text(const char *dm_uuid, const char *dm_name, const char *md_level,
                         char *out, size_t n);

/* The same, for a device read every refresh: its files stay open in *h (NULL at first)
 * and are read again with pread, a fifth of the system calls and no path walk. A handle
 * stands for one registration of the device: once it is removed, reads of its files fail
 * (ENODEV), and a change of scheduler replaces the iosched directory; either way the
 * device is read from scratch with blockdev_read and its files opened anew (only when
 * may_open: the caller keeps the files it holds within a budget). A bio-based device
 * (zram, most dm) is kept by its inflight and rotational files where its queue shows no
 * scheduler file (6.18); a blk-mq disk only once its mq/ is made. Free *h with
 * blockdev_handle_free when the device is no longer listed. */
struct blockdev_handle;
#define BD_HANDLE_FILES_MAX (5 + BD_NTUNABLES)
int    blockdev_refresh(int sys_fd, const char *name, struct blockdev_handle **h, bool may_open,
                        struct blockdev_info *out);
size_t blockdev_handle_files(const struct blockdev_handle *h);   /* files it holds open */
void   blockdev_handle_free(struct blockdev_handle *h);

#endif
