/* SPDX-License-Identifier: GPL-2.0-or-later */
/* writeback.h: the layout of the BPF lens's writeback maps (who dirtied the
 * pages a kernel thread writes), shared by src/bpf/kern/writeback.bpf.c (and
 * requests.bpf.c's lens_bio_queue, which charges the bytes) and their reader,
 * src/source/lens_writeback.c.
 * The contract of lens_maps.h (fixed-width types, explicit padding, cumulative
 * counters, CLOCK_MONOTONIC ns, the kernel's dev_t) holds here too.
 */
#ifndef IOTRIAGE_BPF_WRITEBACK_H
#define IOTRIAGE_BPF_WRITEBACK_H

/* Map sizes: bounded. */
#define LENS_MAX_DIRTY  4096    /* inodes with their last dirtier remembered (LRU) */
#define LENS_MAX_WB     1024    /* (device, dirtier, cgroups) rows of writeback (LRU, per CPU) */

/* The last process that dirtied a page of an inode (tp_btf/writeback_dirty_folio, in the
 * dirtier's own context), so that the kernel thread that later writes the page back can
 * be charged to it. Key: the inode, as its filesystem's device and inode number (not its
 * address, which a new inode may take after this one is freed). */
struct lens_dirty_key {
    __u64 ino;
    __u32 sdev;                 /* the superblock's s_dev (the kernel's dev_t layout) */
    __u32 pad;
};

#define LENS_COMM 16            /* TASK_COMM_LEN */

struct lens_dirty_val {
    __u64 cgid;                 /* its v2 cgroup (bpf_get_current_cgroup_id: the id is the
                                 * inode number of the cgroup's directory) */
    __u32 tgid;
    __u32 pad;
    char  comm[LENS_COMM];      /* its name then: the flusher may write after it exited */
};

/* Bytes kernel threads submitted, by whom they are for. tgid and cgid 0: no dirtier
 * remembered for the bio's first page (dirtied before the lens, evicted from the dirty
 * map, dirtied by a kernel thread, swap, no page). blkcg: the cgroup the kernel itself
 * charged the bio to (bio->bi_blkg), when it is a v2 cgroup other than the root (cgroup
 * writeback with io and memory on v2); 0 otherwise. */
struct lens_wb_key {
    __u64 cgid;
    __u64 blkcg;
    __u32 tgid;
    __u32 dev;                  /* the bio's device (a partition when the bio targets one) */
    char  comm[LENS_COMM];      /* the dirtier's, from lens_dirty_val; zeros when unknown */
};

#endif
