/* SPDX-License-Identifier: GPL-2.0-or-later */
/* source/diskstats.h: /proc/diskstats, parsed.
 *
 * Each line is "major minor name" and 11, 15 or 17 counters depending on the kernel
 * (4.18 added discards, 5.5 flushes). Counters the kernel does not give are absent
 * (nfields tells how many there are), never zero-filled and presented as data.
 */
#ifndef IOTRIAGE_SOURCE_DISKSTATS_H
#define IOTRIAGE_SOURCE_DISKSTATS_H

#include <stddef.h>
#include <stdint.h>

/* Field positions, in the kernel's order (Documentation/admin-guide/iostats.rst). */
enum ds_field {
    DS_RD_IOS, DS_RD_MERGES, DS_RD_SECT, DS_RD_TICKS,
    DS_WR_IOS, DS_WR_MERGES, DS_WR_SECT, DS_WR_TICKS,
    DS_INFLIGHT, DS_IO_TICKS, DS_QUEUE_TICKS,
    DS_DC_IOS, DS_DC_MERGES, DS_DC_SECT, DS_DC_TICKS,
    DS_FL_IOS, DS_FL_TICKS,
    DS_NFIELDS
};

#define DS_NAME_MAX 64

struct diskstats_row {
    unsigned major, minor;
    char     name[DS_NAME_MAX];
    unsigned nfields;          /* 11, 15 or 17 (fewer only for a malformed line: rejected) */
    uint64_t f[DS_NFIELDS];
};

/* Pure: parse the text of /proc/diskstats. *rows is malloc'd (caller frees), *n set.
 * Malformed lines are skipped and counted in *bad (may be NULL). Returns 0 or -EINVAL
 * when nothing at all could be parsed from non-empty input. */
int diskstats_parse(const char *buf, size_t len, struct diskstats_row **rows, size_t *n,
                    unsigned *bad);

/* Read and parse <proc_fd>/diskstats. Returns 0 or -errno. */
int diskstats_read(int proc_fd, struct diskstats_row **rows, size_t *n, unsigned *bad);

#endif
