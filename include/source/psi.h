/* SPDX-License-Identifier: GPL-2.0-or-later */
/* source/psi.h: pressure stall information (/proc/pressure/{io,cpu,memory}).
 *
 * A resource whose file is missing (kernel without PSI, or booted with it off: ENOENT)
 * or unreadable is marked unavailable with the errno; it is never reported as zero
 * pressure. A line that is absent (old kernels have no cpu "full") is unavailable alone.
 */
#ifndef IOTRIAGE_SOURCE_PSI_H
#define IOTRIAGE_SOURCE_PSI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum psi_resource { PSI_IO, PSI_CPU, PSI_MEMORY, PSI_NRES };

struct psi_line {
    bool     valid;
    double   avg10, avg60, avg300;   /* percent, as the kernel averages them */
    uint64_t total_us;               /* cumulative stall time */
};

struct psi_sample {
    int err;                         /* 0, or the -errno of reading the file */
    struct psi_line some, full;
};

extern const char *const psi_resource_name[PSI_NRES];

/* Pure: parse the text of one pressure file. Returns 0 when at least one line parsed,
 * else -EINVAL. */
int psi_parse(const char *buf, size_t len, struct psi_sample *out);

/* Read <proc_fd>/pressure/<res>; the result's err says why it is unavailable. */
void psi_read(int proc_fd, enum psi_resource res, struct psi_sample *out);

#endif
