/* SPDX-License-Identifier: GPL-2.0-or-later */
/* source/swaps.h: the devices swap lives on (/proc/swaps, mm/swapfile.c: swap_show()).
 *
 * Each active swap area as the block device that serves it: a partition or whole device
 * by its node's major:minor (stat of the name: st_rdev), a swap file by its filesystem's
 * device (st_dev). The names are paths in the reader's mount namespace: one that cannot
 * be stat'ed (another namespace, a fixture's --proc-root) is left out, never guessed.
 */
#ifndef IOTRIAGE_SOURCE_SWAPS_H
#define IOTRIAGE_SOURCE_SWAPS_H

#include <stdbool.h>
#include <stddef.h>

#define SWAPS_MAX 8
#define SWAP_NAME_MAX 256

struct swap_area {
    unsigned major, minor;           /* the block device that serves it */
    bool     file;                   /* a swap file (on that device's filesystem) */
};

/* Pure: the areas' names in the text of /proc/swaps (its octal escapes undone; a name
 * that does not fit is left out) and whether each is a file. Returns how many, at most
 * max. */
size_t swaps_parse(const char *buf, size_t len, char (*names)[SWAP_NAME_MAX], bool *file, size_t max);

/* Read <proc_fd>/swaps and stat each name. Returns the areas found (0 when none, or the
 * file cannot be read). */
size_t swaps_read(int proc_fd, struct swap_area *out, size_t max);

#endif
