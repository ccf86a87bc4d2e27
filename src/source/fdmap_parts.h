/* SPDX-License-Identifier: GPL-2.0-or-later */
/* source/fdmap_parts.h: private to fdmap.c and fdmap_resolve.c (the resolution of one
 * dev_t through sysfs): what a resolution holds and the functions they share. */
#ifndef IOTRIAGE_SOURCE_FDMAP_PARTS_H
#define IOTRIAGE_SOURCE_FDMAP_PARTS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "source/fdmap.h"

/* Devices one resolution may visit (each stacked, partition or loop device counts). */
#define MAX_VISITS 24

/* A device the resolution looked at, with what identifies its sysfs state: the inode of
 * its directory (a device removed and re-created under the same dev_t gets a new one) and
 * of its loop/ directory, which the loop driver creates when a backing file is attached
 * and removes when it is detached. 0: absent. */
struct visit {
    dev_t dev;
    ino_t dir_ino;
    ino_t loop_ino;
};

struct resolution {
    int      err;                   /* 0 or -errno for the device itself */
    unsigned n;
    bool     truncated;
    bool     partition;             /* the device itself is a partition (of devs[0]) */
    dev_t    devs[FDMAP_MAX_DEVS];
    unsigned nvisits;
    struct visit visits[MAX_VISITS];
};

/* What the scan needs of one open file, from a statx of /proc/PID/fd/N or from the
 * open-files iterator's record. */
struct fd_facts {
    int      fd;
    mode_t   type;                  /* S_IFMT bits; 0: not known */
    bool     nlink_known;
    uint32_t nlink;
    dev_t    dev, rdev;
    ino_t    ino;
    uint64_t size, blocks_bytes;
    int      buffered;              /* open for writing without O_DIRECT: 1, 0, or -1 not
                                     * known yet (the /proc scan asks when it matters) */
};

bool visits_changed(int sys_fd, const struct resolution *r);
void resolve(int sys_fd, dev_t dev, struct resolution *r);
int statx_cached(int dirfd, const char *path, struct statx *stx);
void facts_of_statx(const struct statx *stx, int fd, struct fd_facts *f);
bool facts_device(const struct fd_facts *f, dev_t *dev, bool *may_write);
void set_add(dev_t *devs, unsigned *n, bool *truncated, dev_t dev);
dev_t kdev(uint32_t d);

#endif
