/* SPDX-License-Identifier: GPL-2.0-or-later */
/* waits.h: the layout of the BPF lens's task-wait maps, shared by
 * src/bpf/kern/waits.bpf.c and its reader, src/source/lens_waits.c.
 * The contract of lens_maps.h (fixed-width types, explicit padding, cumulative
 * counters, CLOCK_MONOTONIC ns, the kernel's dev_t) holds here too.
 */
#ifndef IOTRIAGE_BPF_WAITS_H
#define IOTRIAGE_BPF_WAITS_H

/* Map sizes: bounded, whatever the number of tasks there are. */
#define LENS_MAX_TASKS  16384   /* live threads that waited (allocated as they do) */
#define LENS_MAX_PROCS  8192    /* thread groups (the same) */

struct lens_wait {              /* key: tid (tasks) or tgid (procs) */
    __u64 wait_ns;              /* time blocked with in_iowait set, finished waits */
    __u64 waits;                /* finished waits */
    __u64 start_ns;             /* a wait in progress began here; 0: none. Threads only: a
                                 * group's open waits are its threads' (the reader adds
                                 * them), so a switch touches one map, not two */
    __u32 tgid;
    __u32 open_intr;            /* 1: the wait in progress (start_ns) is interruptible.
                                 * Threads only, as start_ns */
    /* The part of wait_ns slept interruptibly (TASK_INTERRUPTIBLE with in_iowait: io_uring's
     * completion wait, which counts as iowait and PSI io for any pending request, a socket
     * receive included), finished waits. wait_ns - intr_ns: the uninterruptible (D) waits,
     * the block I/O ones (io_schedule). */
    __u64 intr_ns;
};

#endif
