/* SPDX-License-Identifier: GPL-2.0-or-later */
/* source/blkstack.h: how block devices stack, from sysfs: what each device stacks on
 * (slaves/: a device mapper or md device's members) and what stacks on it (holders/:
 * a disk or a partition claimed by dm or md), by name.
 *
 * One walk serves everything that follows a stack: fdmap.c's resolution of a file to
 * the disks below it lists slaves/ and multipath/ with blkstack_each, and every walk by
 * name (the device view's stack, the path a verdict names, the audit's) goes through
 * blkstack_walk over the lists read here. Both refuse a name that is not a plain block
 * device name (the kernel makes them from [A-Za-z0-9] and a few marks; anything else in
 * those directories is not a device of its own), both stop at BLKSTACK_MAX_DEPTH hops
 * and visit each device once, so a cycle (which the kernel refuses to make, but a
 * corrupted or imitated tree can hold) ends where it closes.
 *
 * Nothing here prints, allocates or exits.
 */
#ifndef IOTRIAGE_SOURCE_BLKSTACK_H
#define IOTRIAGE_SOURCE_BLKSTACK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "source/blockdev.h"

#define BLKSTACK_MAX       16    /* names kept per list (more: truncated) */
#define BLKSTACK_MAX_DEPTH 8     /* hops a walk follows below (or above) its start */
#define BLKSTACK_MAX_HOPS  32    /* devices one walk visits */

struct blkstack_list {
    bool    known;               /* false: unknown (the device's directory could not be
                                  * read, or a recording made before stacks were kept) */
    bool    truncated;           /* more than BLKSTACK_MAX entries */
    uint8_t n;
    char    name[BLKSTACK_MAX][BD_NAME_MAX];   /* sorted */
};

struct blkstack {
    struct blkstack_list slaves;     /* below: what it stacks on */
    struct blkstack_list holders;    /* above: what stacks on it */
};

/* Whether name can be a block device's: 1 to BD_NAME_MAX - 1 bytes of [A-Za-z0-9] and
 * "._-+:!" (cciss!c0d0), not starting with '.'. */
bool blkstack_name_ok(const char *name);

/* Call fn for each entry of list (a directory below devfd: "slaves", "holders",
 * "multipath") whose name is a device's (blkstack_name_ok); others are skipped. dirfd is
 * the list's own directory. fn returns 0 to go on. Returns 0, fn's non-zero return, or
 * -errno when the directory cannot be opened (-ENOENT: the device has no such list). */
int blkstack_each(int devfd, const char *list, int (*fn)(void *ctx, int dirfd, const char *name),
                  void *ctx);

/* Read the slaves/ and holders/ of block device name (class/block/NAME below sys_fd, a
 * partition included). A missing list is an empty one (a partition has no slaves/); an
 * unreadable one, or a device that is not there, is unknown. Returns 0, or -errno for the
 * device itself (then both lists are unknown). */
int blkstack_read(int sys_fd, const char *name, struct blkstack *out);

/* ---- Walks by name over stacks already read ---- */

/* The stack of a device by its name, NULL when the walk does not know the device. */
typedef const struct blkstack *(*blkstack_lookup_fn)(const void *ctx, const char *name);

struct blkstack_hop {
    const char *name;            /* the lookup's string (or the start's) */
    uint8_t     depth;           /* hops from the start (0: the start) */
    int8_t      parent;          /* the hop it was reached from; -1 for the start */
};

/* Breadth first from start, through slaves (below) or holders (above): each device once,
 * at its least depth, the start first; a device deeper than BLKSTACK_MAX_DEPTH is not
 * followed. Returns the hops written to out (at most max, max >= 1); *truncated (may be
 * NULL) is set when devices were left out (depth, max, a truncated or unknown list). */
size_t blkstack_walk(blkstack_lookup_fn lookup, const void *ctx, const char *start, bool below,
                     struct blkstack_hop *out, size_t max, bool *truncated);

/* The path from `from` down to `to` through slaves (shortest; `to` last): writes its
 * names, from first, into out and returns their count; 0 when `to` is not below `from`
 * within the bounds, or from is to. */
size_t blkstack_path(blkstack_lookup_fn lookup, const void *ctx, const char *from, const char *to,
                     const char **out, size_t max);

/* One line: the devices above (furthest first) and below (nearest first), levels
 * joined by arrow (" -> " or " \u2192 "), devices of one level by ",", the device itself
 * between brackets: "dm-1 -> [dm-0] -> nb0", "[md0] -> sda1,sdb1". "" when nothing
 * stacks on it and it stacks on nothing, or neither list is known; "?" stands for the
 * one that is not. */
void blkstack_line(blkstack_lookup_fn lookup, const void *ctx, const char *name, const char *arrow,
                   char *buf, size_t n);

#endif
