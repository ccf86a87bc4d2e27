/* SPDX-License-Identifier: GPL-2.0-or-later */
/* iotriage.bpf.c: the BPF lens (issue #13). Built by mk/bpf.mk with clang -target bpf
 * into an object and a skeleton; loaded by src/source/lens.c.
 *
 * What it keeps (layouts in lens_maps.h), all cumulative and in bounded maps:
 *  - per thread and per thread group: time blocked with in_iowait set (the scheduler's
 *    iowait), from sched_switch out (a task leaves the CPU with in_iowait) to its
 *    sched_switch back in (the run-queue delay after the wakeup included),
 *    and the part of it slept interruptibly (io_uring's completion wait, not a block wait);
 *  - per device and priority: the stages of each request (tag wait, scheduler, device,
 *    total) as counts, sums and log2 histograms; per device the depth in flight at issue;
 *  - per (tgid, device): bytes and bios submitted, charged to the submitting thread
 *    group, kernel threads (writeback) together under tgid 0;
 *  - per inode: the last process (and its v2 cgroup) that dirtied one of its pages, and
 *    per (device, dirtier, cgroup): the bytes kernel threads submitted for it (writeback
 *    charged to whoever dirtied the pages, and the cgroup the kernel itself charged).
 * It runs on every context switch and block request of the machine, so the cost
 * per event is kept small (docs/performance.md: the lens's cost): scheduler events
 * return on the first test for a task not in iowait; on a fast device only a sample of
 * the requests is timed (lens_maps.h: sampled timing), every one still counted; a timed
 * request's state is one entry of an array found by index (no hash update per request);
 * counters written at every completion are per CPU. Nothing is sent to user space.
 * Every start of iotriage pays for the kernel's verifier walking these programs
 * (docs/performance.md: the lens's load), once per path through each: the helpers that
 * choose among several outcomes are global functions (verified once each, on their
 * own, taking and returning numbers), comparisons that only weigh a figure are
 * computed without branches (gt_bit), and an untimed request's path calls none of
 * them. `make bench-verify` counts the instructions verified; test_bpfverify bounds
 * them.
 *
 * No vmlinux.h: the few kernel structures read are declared below with
 * preserve_access_index, so libbpf relocates each field against the running kernel's
 * BTF (CO-RE) and the object needs no BTF of the build machine.
 */
#include "bpf/kern_types.h"

#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

#include "bpf/lens_maps.h"

/* ---- The kernel structures read, only the fields used (CO-RE relocates them). ----
 * tp_btf arguments are typed kernel pointers: fields are read with plain loads (the
 * verifier follows the types; a fault reads 0), not bpf_probe_read_kernel calls, which
 * cost a helper call each. Only the old kernels' flavours below use BPF_CORE_READ. */
struct signal_struct {
    struct {
        int counter;
    } live;                     /* atomic_t: the group's threads not yet in do_exit's end */
} __attribute__((preserve_access_index));

struct task_struct {
    unsigned int __state;       /* at sched_switch, the state prev sleeps in (5.14 on) */
    unsigned int flags;
    unsigned int in_iowait : 1;
    int pid;
    int tgid;
    struct signal_struct *signal;
} __attribute__((preserve_access_index));

/* Before 5.14 the state was `volatile long state`. */
struct task_struct___pre514 {
    long state;
} __attribute__((preserve_access_index));

/* include/linux/sched.h: the bit every interruptible sleep has (TASK_INTERRUPTIBLE);
 * an uninterruptible one (TASK_UNINTERRUPTIBLE, KILLABLE, IDLE) has 2 and not this. */
#define TASK_INTERRUPTIBLE 0x1

struct blk_mq_ops;
struct request_queue;

struct gendisk {
    int major;
    int first_minor;
    struct request_queue *queue;
} __attribute__((preserve_access_index));

struct request_queue {
    const struct blk_mq_ops *mq_ops;
    struct gendisk *disk;
} __attribute__((preserve_access_index));

struct block_device {
    __u32 bd_dev;
    struct gendisk *bd_disk;
} __attribute__((preserve_access_index));

struct bvec_iter {
    __u64 bi_sector;
    unsigned int bi_size;
} __attribute__((preserve_access_index));

struct address_space;

struct page {
    struct address_space *mapping;  /* low bits set: anonymous or movable, no inode */
} __attribute__((preserve_access_index));

struct bio_vec {
    struct page *bv_page;
} __attribute__((preserve_access_index));

struct super_block {
    __u32 s_dev;
} __attribute__((preserve_access_index));

struct inode {
    unsigned long i_ino;
    struct super_block *i_sb;
} __attribute__((preserve_access_index));

struct address_space {
    struct inode *host;
} __attribute__((preserve_access_index));

/* The cgroup the kernel charged a bio to: bio->bi_blkg->blkcg->css.cgroup (only with
 * CONFIG_BLK_CGROUP: bpf_core_field_exists guards it). */
struct kernfs_node {
    __u64 id;                   /* a v2 cgroup's id: its directory's inode number */
} __attribute__((preserve_access_index));

struct cgroup_root {
    int hierarchy_id;           /* 0: the v2 (default) hierarchy */
} __attribute__((preserve_access_index));

struct cgroup {
    int level;                  /* 0: a hierarchy's root */
    struct kernfs_node *kn;
    struct cgroup_root *root;
} __attribute__((preserve_access_index));

struct cgroup_subsys_state {
    struct cgroup *cgroup;
} __attribute__((preserve_access_index));

struct blkcg {
    struct cgroup_subsys_state css;
} __attribute__((preserve_access_index));

struct blkcg_gq {
    struct blkcg *blkcg;
} __attribute__((preserve_access_index));

struct bio {
    struct bio *bi_next;
    struct block_device *bi_bdev;
    unsigned short bi_ioprio;
    unsigned short bi_vcnt;
    struct bvec_iter bi_iter;
    struct blkcg_gq *bi_blkg;
    struct bio_vec *bi_io_vec;
} __attribute__((preserve_access_index));

struct request {
    struct request_queue *q;
    unsigned int cmd_flags;     /* the op in its low 8 bits (REQ_OP_MASK) */
    __u64 __sector;             /* its first bio's sector until a completion advances it */
    struct bio *bio;
    __u64 start_time_ns;        /* allocated (blk_mq_rq_ctx_init); 0 without iostats,
                                 * a scheduler or the queue's statistics */
} __attribute__((preserve_access_index));

/* Before 6.12 the request carried its own copy of the priority (6975c1a486a4 removed
 * it), and before 5.14 its disk (rq_disk; then q->disk); the flavours let one object
 * read whichever the running kernel has. */
struct request___old {
    unsigned short ioprio;
    struct gendisk *rq_disk;
} __attribute__((preserve_access_index));

/* Before 5.12 a bio named its disk and partition (bi_disk, bi_partno), not a bdev. */
struct bio___old {
    struct gendisk *bi_disk;
    unsigned char bi_partno;
} __attribute__((preserve_access_index));

char LICENSE[] SEC("license") = "GPL";

/* ---- Maps (sizes in lens_maps.h). ---- */
/* The wait maps hold the live tasks that ever waited on I/O (lens_exit deletes a task's
 * entry), not every task: allocated entry by entry, so their memory follows the tasks
 * that wait, not the tasks there are. (An entry made in the scheduler's context: safe
 * from 6.1 on, where the kernel takes it from its BPF allocator's per-CPU cache; on an
 * older kernel lens.c makes them preallocated LRU maps, and the light loader, which
 * cannot change a map's type, is not used.) */
struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(map_flags, BPF_F_NO_PREALLOC);
    __uint(max_entries, LENS_MAX_TASKS);
    __type(key, __u32);
    __type(value, struct lens_wait);
} waits_tid SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(map_flags, BPF_F_NO_PREALLOC);
    __uint(max_entries, LENS_MAX_PROCS);
    __type(key, __u32);
    __type(value, struct lens_wait);
} waits_tgid SEC(".maps");

/* The request cache: max_entries set at load for the machine's disks, a power of two,
 * rq_set_shift to 64 minus its log2 (lens.c). */
struct {
    __uint(type, BPF_MAP_TYPE_ARRAY);
    __uint(max_entries, LENS_RQ_SETS);
    __type(key, __u32);
    __type(value, struct lens_rq_set);
} rqs SEC(".maps");

/* One word per program and CPU (see ptr_bits). */
enum { SL_QUEUE, SL_GETRQ, SL_MERGE, SL_INSERT, SL_ISSUE, SL_RQMERGE, SL_REQUEUE,
       SL_COMPLETE, SL_WB, SL_N };
struct {
    __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
    __uint(max_entries, SL_N);
    __type(key, __u32);
    __type(value, __u64);
} scratch SEC(".maps");

/* (device, priority) slots, open-addressed (lens_maps.h); max_entries is set at load
 * to a power of two, devprio_mask to it minus one. */
struct {
    __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
    __uint(max_entries, LENS_MAX_DEVPRIO);
    __type(key, __u32);
    __type(value, struct lens_dp_val);
} devprio SEC(".maps");
const volatile __u32 devprio_mask = LENS_MAX_DEVPRIO - 1;
/* The request cache's sets as a shift: a key's set is the top 64 - rq_set_shift bits of
 * its hash (set at load for the machine's disks, lens.c). */
const volatile __u32 rq_set_shift = 64 - LENS_RQ_SETS_LOG;
/* The devprio slots claimed on some CPU, for the reader. */
__u64 lens_dp_used[LENS_MAX_DEVPRIO / 64] = {};

/* The devices, open-addressed (lens_maps.h), in global data: shared by every CPU (the
 * depth in flight is one count), read by user space through the mapped .bss. */
struct lens_dev_val lens_devs[LENS_MAX_DEVS] = {};

/* Per CPU: the submission adds to its own CPU's copy without atomic operations, and a
 * process's entry does not move between the CPUs its threads run on. */
struct {
    __uint(type, BPF_MAP_TYPE_LRU_PERCPU_HASH);
    __uint(max_entries, LENS_MAX_SUBMIT);
    __type(key, struct lens_submit_key);
    __type(value, struct lens_submit_val);
} submits SEC(".maps");

/* Each inode's last dirtier (lens_maps.h: struct lens_dirty_key). LRU: an inode whose
 * pages were dirtied long ago and not since makes room; its writeback is then unknown. */
struct {
    __uint(type, BPF_MAP_TYPE_LRU_HASH);
    __uint(max_entries, LENS_MAX_DIRTY);
    __type(key, struct lens_dirty_key);
    __type(value, struct lens_dirty_val);
} dirtiers SEC(".maps");

/* Kernel threads' bytes by dirtier, per CPU like submits. */
struct {
    __uint(type, BPF_MAP_TYPE_LRU_PERCPU_HASH);
    __uint(max_entries, LENS_MAX_WB);
    __type(key, struct lens_wb_key);
    __type(value, struct lens_submit_val);
} wbs SEC(".maps");

/* Events the bounded tables could not hold (a device or (device, priority) pair whose
 * probed slots were all taken, a request in flight evicted from the rqs cache). */
__u64 lens_dropped = 0;
/* Charge bytes to the submitting thread group per device (the submits map, issue 14's
 * attribution). Read-only data set before load (lens.c sets it): when off, the verifier
 * drops the code. */
const volatile bool lens_submits = false;
/* Split the kernel threads' bytes by dirtier (the wbs map): on when a page-dirtying
 * tracepoint is attached (lens.c), so that without one no bio pays for the lookups. */
const volatile bool lens_wb_split = false;
/* Requests a second on one device above which only a sample of them is timed
 * (lens_maps.h: sampled timing); 0 times every request. */
const volatile __u32 lens_timed_rate = LENS_TIMED_RATE;
/* When the issue and completion programs were both seen running (CLOCK_MONOTONIC ns; 0:
 * not yet; the programs attach one by one). A request the kernel allocated at or after
 * it (rq->start_time_ns) has its issue and its completion seen: it is counted in its
 * device's depth at issue and taken out at completion by that test alone, timed or not;
 * one allocated before is left out at both ends. */
__u64 lens_t0 = 0;
__u32 lens_issue_seen = 0;
/* The requests counted in flight, by the address of their struct request (a slot a hash
 * of it; 0 free): set at issue, cleared at completion and requeue. A completion the lens
 * did not see (a program run the kernel skipped) would leave its request in the depth
 * count for ever; the kernel reuses its requests (one per tag), so the same request
 * issued again while still marked is counted out first. A collision (two requests in
 * flight in one slot) only loses that repair. */
#define LENS_MARKS 4096
__u64 lens_marks[LENS_MARKS] = {};


/* ---- Per-thread iowait. ----
 * lens_switch runs on every context switch of the machine: it returns on the first tests
 * when neither task is in iowait, before any map access or clock read.
 *
 * A wait is also told apart by how the task sleeps (lens_wait.intr_ns): block waits
 * (io_schedule: folio and buffer locks, bio completion) sleep TASK_UNINTERRUPTIBLE (D);
 * io_uring's completion wait (io_uring/io_uring.c io_cqring_wait, since 6.1.39 and 6.5)
 * sleeps TASK_INTERRUPTIBLE (S) with in_iowait set whenever the task has any request
 * pending, a socket receive included, so PSI io and iowait rise with no block I/O. */

/* 1 when prev, leaving the CPU, sleeps interruptibly: one field read, relocated at load
 * (the pre-5.14 branch is dead where __state exists). */
static __always_inline __u32 switch_intr(struct task_struct *prev)
{
    if (bpf_core_field_exists(prev->__state))
        return prev->__state & TASK_INTERRUPTIBLE;
    return BPF_CORE_READ((struct task_struct___pre514 *)prev, state) & TASK_INTERRUPTIBLE;
}

/* Ends next's wait, if one was started (lens_switch): adds it to the thread's and its
 * group's sums. Inlined: a subprogram taking a task pointer would not be verified alone
 * on 6.1. */
static __always_inline void wait_end(struct task_struct *task)
{
    __u32 tid = task->pid;
    struct lens_wait *w = bpf_map_lookup_elem(&waits_tid, &tid);
    if (!w || !w->start_ns)
        return;
    __u64 now = bpf_ktime_get_ns();
    __u64 start = w->start_ns;
    w->start_ns = 0;
    if (now <= start)
        return;
    __u64 d = now - start;
    /* The interruptible part, added only when there is one: a block wait pays a load
     * and a test, not another atomic add. */
    __u32 intr = w->open_intr;
    __sync_fetch_and_add(&w->wait_ns, d);
    if (intr)
        __sync_fetch_and_add(&w->intr_ns, d);
    __sync_fetch_and_add(&w->waits, 1);
    __u32 tgid = w->tgid;
    struct lens_wait *g = bpf_map_lookup_elem(&waits_tgid, &tgid);
    if (g) {
        __sync_fetch_and_add(&g->wait_ns, d);
        if (intr)
            __sync_fetch_and_add(&g->intr_ns, d);
        __sync_fetch_and_add(&g->waits, 1);
        return;
    }
    /* The group's first finished wait (none for an exiting thread, as for a start).
     * Two threads may race here: the loser's update fails (NOEXIST) and it adds to the
     * winner's entry. */
    if (task->flags & PF_EXITING)
        return;
    struct lens_wait n = { .wait_ns = d, .waits = 1, .tgid = tgid,
                          .intr_ns = intr ? d : 0 };
    if (bpf_map_update_elem(&waits_tgid, &tgid, &n, BPF_NOEXIST) == 0)
        return;
    g = bpf_map_lookup_elem(&waits_tgid, &tgid);
    if (g) {
        __sync_fetch_and_add(&g->wait_ns, d);
        if (intr)
            __sync_fetch_and_add(&g->intr_ns, d);
        __sync_fetch_and_add(&g->waits, 1);
    }
}

/* The one scheduler program (issue #40: no sched_wakeup program; the wakeup tracepoint
 * runs as often as the switch and its program cost a synchronous read as much). A wait
 * starts when prev leaves the CPU with in_iowait set and ends when the task is switched
 * back in: in_iowait is the sleeper's own flag, which it clears itself only after
 * schedule() returns (kernel/sched/core.c io_schedule_finish; io_uring's
 * io_cqring_wait_schedule sets and clears it around its schedule() likewise, 6.1 and
 * 6.18), so it is still set on next here. The wait so includes the run-queue delay
 * after the wakeup, as delay accounting's blkio_delay does (delayacct_blkio_end in
 * io_schedule_finish). Every other switch costs the two flag loads and the preempt
 * test. A task preempted with in_iowait set (between io_schedule_prepare and the
 * switch, or after the switch back in before it clears the flag) starts no wait; at
 * its switch back in its entry has no start and nothing is added. */
SEC("tp_btf/sched_switch")
int BPF_PROG(lens_switch, bool preempt, struct task_struct *prev, struct task_struct *next)
{
    /* (BPF_CORE_READ_BITFIELD has a local named p: the tasks are not named so.) */
    if (BPF_CORE_READ_BITFIELD(next, in_iowait))
        wait_end(next);
    /* A preempted task is runnable, not waiting, whatever in_iowait says. */
    if (preempt || !BPF_CORE_READ_BITFIELD(prev, in_iowait))
        return 0;
    __u32 tid = prev->pid;
    if (!tid)
        return 0;
    __u64 now = bpf_ktime_get_ns();
    __u32 intr = switch_intr(prev);
    struct lens_wait *w = bpf_map_lookup_elem(&waits_tid, &tid);
    if (w) {
        w->open_intr = intr;
        w->start_ns = now;
        return 0;
    }
    /* No new entry for an exiting task: lens_exit may have deleted its entry already
     * (do_exit closes its files after the tracepoint, and a close may wait on I/O), and
     * one made again would stay for good in a map that does not evict. */
    if (prev->flags & PF_EXITING)
        return 0;
    struct lens_wait n = { .start_ns = now, .tgid = prev->tgid, .open_intr = intr };
    bpf_map_update_elem(&waits_tid, &tid, &n, BPF_NOEXIST);
    return 0;
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(lens_exit, struct task_struct *p)
{
    __u32 tid = p->pid, tgid = p->tgid;
    bpf_map_delete_elem(&waits_tid, &tid);
    /* The group's entry goes with its last thread: do_exit counts signal->live down
     * before this tracepoint, so it reads 0 in the last one (a leader that exits first
     * leaves the group's figure to its threads). */
    struct signal_struct *sig = p->signal;
    if (!sig || sig->live.counter == 0)
        bpf_map_delete_elem(&waits_tgid, &tgid);
    return 0;
}

/* ---- Requests. ----
 * Per request: its entry in the rqs cache (claimed at its first bio's submission, found
 * by index after, freed at completion; no hash map update), and its device's lens_devs
 * and devprio entries, found by probing (lens_maps.h), claimed by the device's first
 * request. */

/* 1 when a > b, else 0, without a branch, for a and b under 2^63 (then b - a wraps
 * exactly when a > b). The verifier walks straight-line code once: a branch per
 * comparison would double the paths after it. (The barrier keeps clang from turning
 * the subtraction back into a comparison, which BPF makes with a branch.) */
static __always_inline __u64 gt_bit(__u64 a, __u64 b)
{
    __u64 d = b - a;
    barrier_var(d);
    return d >> 63;
}

/* 1 when a >= b, else 0 (a and b under 2^63, as gt_bit). */
static __always_inline __u64 ge_bit(__u64 a, __u64 b)
{
    return 1 - gt_bit(b, a);
}

/* 1 when a != 0, else 0 (a under 2^63). */
static __always_inline __u64 nz_bit(__u64 a)
{
    return gt_bit(a, 0);
}

static __always_inline __u32 log2_bucket(__u64 ns)
{
    __u64 us = ns / 1000;       /* under 2^54 */
    __u32 b = 0, t;
    /* bucket k >= 1 holds [2^(k-1), 2^k) us: a binary search for the top bit */
    t = (__u32)gt_bit(us, (1ULL << 16) - 1) << 4; b += t; us >>= t;
    t = (__u32)gt_bit(us, (1ULL << 8) - 1) << 3;  b += t; us >>= t;
    t = (__u32)gt_bit(us, (1ULL << 4) - 1) << 2;  b += t; us >>= t;
    t = (__u32)gt_bit(us, (1ULL << 2) - 1) << 1;  b += t; us >>= t;
    t = (__u32)gt_bit(us, 1);                     b += t; us >>= t;
    b += (__u32)us;           /* us is 0 or 1 here under 2^32 us, else under 2^23 */
    /* the last bucket holds everything from 2^(LENS_HIST-2) us on */
    __u32 over = (__u32)gt_bit(b, LENS_HIST - 1);
    return b - over * (b - (LENS_HIST - 1));
}

/* A timed request stands for w = 2^shift requests (lens_maps.h: sampled timing). ok: 1
 * to add, 0 when the stage is unknown for this request, which then adds zeros: the
 * figures are those of a test, without a branch for the verifier to follow. */
static __always_inline void stage_add(struct lens_stage *s, __u64 ns, __u64 w, __u64 ok)
{
    w &= -ok;
    s->count += w;
    s->sum_ns += ns * w;
    __u32 b = log2_bucket(ns);
    if (b < LENS_HIST)
        s->hist[b] += w;
}

static __always_inline __u32 disk_dev(struct gendisk *d)
{
    if (!d)
        return 0;
    return (__u32)d->major << 20 | (__u32)d->first_minor;
}

static __always_inline __u32 rq_dev(struct request *rq)
{
    if (bpf_core_field_exists(rq->q->disk))
        return disk_dev(rq->q->disk);
    return disk_dev(BPF_CORE_READ((struct request___old *)rq, rq_disk));
}

static __always_inline __u32 rq_prio(struct request *rq)
{
    __u32 v;
    struct request___old *old = (void *)rq;
    if (bpf_core_field_exists(old->ioprio)) {
        v = BPF_CORE_READ(old, ioprio);
    } else {
        struct bio *b = rq->bio;
        v = b ? b->bi_ioprio : 0;           /* no bio: 0, as req_get_ioprio */
    }
    return (v & 0xe000) | (v & 7);
}

/* A key's home slot, before the table's mask: the high half of its Fibonacci hash. */
static __always_inline __u32 slot_hash(__u64 key)
{
    return (__u32)((key * 0x9E3779B97F4A7C15ULL) >> 32);
}

/* A device's slot in lens_devs, or -1 when it has none. A global function: the verifier
 * checks its probes once, not once per path of each caller (each outcome would
 * otherwise multiply the caller's paths). */
__noinline int dev_index(__u32 dev)
{
    __u64 want = LENS_KEY_USED | dev;
    __u32 h = slot_hash(want);
#pragma clang loop unroll(full)
    for (int i = 0; i < LENS_PROBES; i++) {
        __u32 idx = (h + i) & (LENS_MAX_DEVS - 1);
        __u64 k = lens_devs[idx].key;
        if (k == want)
            return (int)idx;
        if (!k)
            return -1;
    }
    return -1;
}

/* The same, a free slot taken for a device not yet seen (two CPUs racing for one slot:
 * the compare-and-swap lets one win, the other probes on); -1 when every probed slot
 * holds another device (counted in lens_dropped). Apart from dev_index so that neither
 * carries a flag through its probes (which made the verifier walk each probe twice). */
__noinline int dev_claim(__u32 dev)
{
    __u64 want = LENS_KEY_USED | dev;
    __u32 h = slot_hash(want);
#pragma clang loop unroll(full)
    for (int i = 0; i < LENS_PROBES; i++) {
        __u32 idx = (h + i) & (LENS_MAX_DEVS - 1);
        __u64 k = lens_devs[idx].key;
        if (!k)
            k = __sync_val_compare_and_swap(&lens_devs[idx].key, 0, want);
        if (k == 0 || k == want)
            return (int)idx;
    }
    __sync_fetch_and_add(&lens_dropped, 1);
    return -1;
}

/* The device's home slot when it holds it (nearly always: a machine has far fewer
 * devices than slots), without a call; else the probes. On the paths every request
 * takes; rare ones (an eviction, a merge, a requeue) call dev_index directly, which the
 * verifier checks in fewer steps. */
static __always_inline int dev_lookup(__u32 dev, bool claim)
{
    __u64 want = LENS_KEY_USED | dev;
    __u32 idx = slot_hash(want) & (LENS_MAX_DEVS - 1);
    if (lens_devs[idx].key == want)
        return (int)idx;
    return claim ? dev_claim(dev) : dev_index(dev);
}

static __always_inline struct lens_dev_val *dev_at(int i)
{
    return i < 0 ? NULL : &lens_devs[i & (LENS_MAX_DEVS - 1)];
}

static __always_inline struct lens_dev_val *dev_find(__u32 dev)
{
    return dev_at(dev_lookup(dev, false));
}

/* 1 in 2^shift of the device's requests is timed now; every one on a device that has
 * shown a request without a start time (its depth count then needs every entry). */
static __always_inline __u32 dev_shift(const struct lens_dev_val *d)
{
    return d->stampless ? 0 : d->shift & 7;
}

/* Whether a request is timed at a device's shift: a hash of its first bio's address and
 * sector, the same at each of its stages (the bio at submission, the request after:
 * rq->bio and rq->__sector). The address alone would not do: a synchronous reader's
 * bios come back at the same few addresses, which would be all timed or none. */
static __always_inline bool key_timed(__u64 key, __u64 sector, __u32 shift)
{
    if (!shift)
        return true;
    return (slot_hash(key ^ sector) & ((1u << shift) - 1)) == 0;
}

/* Every LENS_RATE_WIN requests issued: the device's rate over them, and the shift that
 * keeps its timed requests under lens_timed_rate a second. Called by the issue that
 * crossed the multiple, one CPU at a time in practice (a race leaves one of two
 * equally good values). Global (see rq_index), on the device's slot. */
__noinline int dev_rate_tick(__u32 di)
{
    struct lens_dev_val *d = &lens_devs[di & (LENS_MAX_DEVS - 1)];
    __u64 now = bpf_ktime_get_ns();
    __u64 last = d->rate_ns;
    d->rate_ns = now;
    if (!last || now <= last)
        return 0;
    __u64 per_s = (__u64)LENS_RATE_WIN * 1000000000ull / (now - last);
    __u64 lim = lens_timed_rate;
    __u32 s = 0;
    if (lim && !d->stampless) {
        /* the steps whose threshold the rate is above (per_s under 2^40, lim << i under
         * 2^38: gt_bit holds) */
#pragma clang loop unroll(full)
        for (int i = 0; i < LENS_SHIFT_MAX; i++)
            s += (__u32)gt_bit(per_s, lim << i);
    }
    __u32 cur = d->shift & 7;
    /* Down only once the rate is a quarter under the step's threshold: a rate near it
     * would otherwise flip the shift every window (a request keeps the weight it was
     * chosen with; changes only make the sample less even). */
    if (s < cur && cur > 0 && per_s * 4 > (lim << (cur - 1)) * 3)
        s = cur;
    if (cur != s) {
        /* Requests in flight chosen under the old shift are still looked up for four
         * windows, so that one chosen at submission is not left half-counted (its
         * scheduler counts; an eviction would repair that later). */
        d->shift_lo = s < cur ? s : cur;
        d->lo_ticks = 4;
        d->shift = s;
    } else if (d->lo_ticks) {
        d->lo_ticks -= 1;
        if (!d->lo_ticks)
            d->shift_lo = s;
    }
    return 0;
}

/* The slot of a (device, priority) pair in this CPU's copy of devprio, claimed when new;
 * -1 when every probed slot holds another pair (counted in lens_dropped). Global (see
 * rq_index): each probe's outcome would verify the stages after it again. */
__noinline int dp_index(__u32 dev, __u32 prio)
{
    __u64 want = LENS_DP_KEY(dev, prio);
    __u32 h = slot_hash(want);
#pragma clang loop unroll(full)
    for (int i = 0; i < LENS_PROBES; i++) {
        __u32 idx = (h + i) & devprio_mask & (LENS_MAX_DEVPRIO - 1);
        struct lens_dp_val *v = bpf_map_lookup_elem(&devprio, &idx);
        if (!v)
            break;
        if (v->key == want)
            return (int)idx;
        if (v->key)
            continue;
        /* Only the completion writes this CPU's copy, and never nested in itself. */
        v->key = want;
        /* idx comes back from the stack, where the verifier may not know its bound:
         * masked again, the compiler told to forget it already is */
        __u32 u = idx;
        barrier_var(u);
        __sync_fetch_and_or(&lens_dp_used[(u / 64) & (LENS_MAX_DEVPRIO / 64 - 1)], 1ull << (u % 64));
        return (int)idx;
    }
    __sync_fetch_and_add(&lens_dropped, 1);
    return -1;
}

/* ---- The requests in flight (lens_maps.h: struct lens_rq). ---- */

/* A kernel pointer's bits as a number, for hashing: the verifier forbids arithmetic on
 * pointers, but a word read back from a map value is a number. A program never runs
 * nested in itself on one CPU, so its own per-CPU word is not overwritten between the
 * two accesses. 0 when the scratch map is missing (never). */
static __always_inline __u64 ptr_bits(const void *p, __u32 slot)
{
    volatile __u64 *w = bpf_map_lookup_elem(&scratch, &slot);
    if (!w)
        return 0;
    *w = (__u64)p;
    return *w;
}

/* Whether a request is counted in its device's depth (see lens_t0): 1 yes, 0 no, -1
 * the kernel gave it no start time (then it is counted only through its entry,
 * lens_rq.counted, and its device times every request). op: its cmd_flags' op; st: its
 * start_time_ns (0 also when the kernel has none). */
static __always_inline int rq_after(__u32 op, __u64 st)
{
    /* A driver's own command (REQ_OP_DRV_IN 34, DRV_OUT 35: an ioctl, SMART) carries no
     * start time and is in no statistic of the kernel's: left out, rather than making its
     * device time every request. */
    if (op == 34 || op == 35)
        return 0;
    if (!st)
        return -1;
    __u64 t0 = lens_t0;
    return t0 && st >= t0;
}

static __always_inline int rq_after_t0(struct request *rq)
{
    __u64 st = bpf_core_field_exists(rq->start_time_ns) ? rq->start_time_ns : 0;
    return rq_after(rq->cmd_flags & 0xff, st);
}

static __always_inline __u32 mark_slot(__u64 rqbits)
{
    return slot_hash(rqbits) & (LENS_MARKS - 1);
}

/* A request counted in flight at issue: true when its mark was still set (the end of
 * its previous use was missed: the caller counts that one out). Plain loads and stores,
 * no locked instruction on every request: one request is never issued and completed at
 * once, and two CPUs meet in a slot only for two requests that collide there, which at
 * worst loses a mark (a repair). */
static __always_inline bool mark_set(__u64 bits)
{
    if (!bits)
        return false;
    __u64 *m = &lens_marks[mark_slot(bits)];
    bool missed = *m == bits;
    *m = bits;
    return missed;
}

static __always_inline void mark_clear(struct request *rq, __u32 sl)
{
    __u64 bits = ptr_bits(rq, sl);
    if (!bits)
        return;
    __u64 *m = &lens_marks[mark_slot(bits)];
    if (*m == bits)
        *m = 0;
}

/* The entry helpers below that decide among several outcomes are global functions
 * (__noinline, not static): the verifier checks each once, on its own, where an inlined
 * copy would be checked again for every path of its caller that reaches it, and the
 * outcomes of one would multiply the paths through the next. They take and return
 * numbers only (a way's index: its set times 2 plus the way; -1 for none), which the
 * caller turns back into a pointer with rq_at. */

static __always_inline __u32 rq_set_index(__u64 key)
{
    /* Fibonacci hashing: the top bits of key times 2^64 / golden ratio. */
    __u32 shift = rq_set_shift & 63;
    return (__u32)((key * 0x9E3779B97F4A7C15ULL) >> shift) & (LENS_RQ_SETS - 1);
}

static __always_inline struct lens_rq *rq_at(int i)
{
    if (i < 0)
        return NULL;
    __u32 set = (__u32)i >> 1;
    struct lens_rq_set *s = bpf_map_lookup_elem(&rqs, &set);
    if (!s)
        return NULL;
    barrier_var(s);             /* clang would add the offset before the test */
    return &s->way[i & 1];
}

/* The way holding key, or -1. */
__noinline int rq_index(__u64 key)
{
    if (!key)
        return -1;              /* 0 marks a free way */
    __u32 set = rq_set_index(key);
    struct lens_rq_set *s = bpf_map_lookup_elem(&rqs, &set);
    if (!s)
        return -1;
    if (s->way[0].key == key)
        return (int)(set << 1);
    if (s->way[1].key == key)
        return (int)(set << 1 | 1);
    return -1;
}

static __always_inline struct lens_rq *rq_lookup(__u64 key)
{
    return rq_at(rq_index(key));
}

/* Free an entry, unless another CPU took the way meanwhile. */
static __always_inline void rq_free(struct lens_rq *r, __u64 key)
{
    __sync_val_compare_and_swap(&r->key, key, 0);
}

/* An entry (way) leaves the cache before its completion (evicted, or replaced after a
 * missed completion): take it out of the counts it holds, as the kernel has. (A request
 * with a start time leaves the depth count at its completion, entry or not.) Global
 * (see rq_index), and rare. */
__noinline int rq_drop(int way)
{
    struct lens_rq *r = rq_at(way);
    if (!r || (!r->insert_ns && !r->issue_ns))
        return 0;               /* a bio without a request yet: no count holds it */
    struct lens_dev_val *d = dev_at(dev_index(r->dev));
    if (d) {
        if (r->issue_ns) {
            if (r->counted)
                __sync_fetch_and_add(&d->done, 1);
        } else {
            __sync_fetch_and_add(&d->sched_out[(r->prio >> 13) & 3], 1ull << (r->shift & 7));
        }
    }
    __sync_fetch_and_add(&lens_dropped, 1);
    return 0;
}

/* A way for key, zeroed but for its key, device and shift; -1 when another CPU took it
 * first. */
__noinline int rq_claim_index(__u64 key, __u64 now, __u32 shift, __u32 dev)
{
    __u32 set = rq_set_index(key);
    struct lens_rq_set *s = bpf_map_lookup_elem(&rqs, &set);
    if (!s)
        return -1;
    /* The way as a number, one pointer made from it after: the verifier then follows
     * two ways, not one path per test that chose it. */
    __u32 w;
    __u64 old;
    if (s->way[0].key == key || s->way[1].key == key) {
        /* the same bio submitted again (the rest of a split): a new life */
        w = s->way[0].key == key ? 0 : 1;
        old = key;
    } else {
        if (!s->way[0].key)
            w = 0;
        else if (!s->way[1].key)
            w = 1;
        else
            w = s->way[0].last_ns <= s->way[1].last_ns ? 0 : 1;
        old = s->way[w & 1].key;
        if (__sync_val_compare_and_swap(&s->way[w & 1].key, old, key) != old)
            return -1;
    }
    int way = (int)(set << 1 | (w & 1));
    if (old)
        rq_drop(way);
    struct lens_rq *v = &s->way[w & 1];
    v->queue_ns = 0;
    v->getrq_ns = 0;
    v->insert_ns = 0;
    v->issue_ns = 0;
    v->last_ns = now;
    v->dev = dev;
    v->prio = 0;
    v->depth = 0;
    v->depth_whole = 0;
    v->shift = (__u8)shift;
    v->counted = 0;
    return way;
}

static __always_inline struct lens_rq *rq_claim(__u64 key, __u64 now, __u32 shift, __u32 dev)
{
    return rq_at(rq_claim_index(key, now, shift, dev));
}

/* The key of a request's entry: the address of its first bio (a flush: its own). */
static __always_inline __u64 rq_key(struct request *rq, __u32 sl)
{
    struct bio *b = rq->bio;
    return b ? ptr_bits(b, sl) : ptr_bits(rq, sl);
}

/* A request's entry (its way, or -1); *key, rq_key on entry, is set to the key it is
 * (or would be) under. After a front merge the first bio is the merged one (whose own
 * entry went at the merge): the request's entry is under a bio further on. Only a miss
 * pays for the walk. */
static __always_inline int rq_find_index(struct request *rq, __u64 *key, __u32 sl)
{
    if (!*key)
        return -1;
    int i = rq_index(*key);
    struct bio *b = rq->bio;
    if (i >= 0 || !b)
        return i;
    for (int n = 0; n < 3; n++) {
        b = b->bi_next;
        if (!b)
            return -1;
        __u64 k = ptr_bits(b, sl);
        i = rq_index(k);
        if (i >= 0) {
            *key = k;
            return i;
        }
    }
    return -1;
}

static __always_inline struct lens_rq *rq_find(struct request *rq, __u64 *key, __u32 sl)
{
    *key = rq_key(rq, sl);
    return rq_at(rq_find_index(rq, key, sl));
}

#define RQ_TAKE_CLAIM 0x100         /* rq_take's shift: may claim a way */

/* The entry of a request about to be inserted or issued, from what rq_find_index found
 * (way, key). One already issued belongs to an earlier life of the same key whose end we
 * missed, and is replaced; a request the lens did not see submitted (a flush, the front
 * part of a split bio, one from before the lens) gets one now when RQ_TAKE_CLAIM is set,
 * its tag wait and total unknown. Global (see rq_index). */
__noinline int rq_take(int way, __u64 key, __u64 now, __u32 shift, __u32 dev)
{
    struct lens_rq *r = rq_at(way);
    if (r && !r->issue_ns) {
        r->last_ns = now;
        return way;
    }
    if (!key || !(shift & RQ_TAKE_CLAIM))
        return -1;
    return rq_claim_index(key, now, shift & 0xff, dev);
}

/* What a request's later stages do: skip it (not in the sample), look its entry up (in
 * the sample under the shift before a recent change), or look it up and claim one when
 * missing (in the sample now). The choice its first bio's submission made, from the
 * request's key (rq_key) and first sector. */
enum { RQ_SKIP, RQ_LOOKUP, RQ_TIMED };
static __always_inline int rq_choice(const struct lens_dev_val *d, __u64 key, __u64 sector)
{
    __u32 shift = dev_shift(d);
    if (!shift)
        return RQ_TIMED;
    __u32 lo = d->shift_lo & 7;
    __u32 h = slot_hash(key ^ sector);
    if (!(h & ((1u << shift) - 1)))
        return RQ_TIMED;
    return lo < shift && !(h & ((1u << lo) - 1)) ? RQ_LOOKUP : RQ_SKIP;
}

/* ---- Writeback: who dirtied the pages a kernel thread writes. ---- */

/* An inode's key; false for a mapping without one (anonymous, swap, movable: low bits). */
static __always_inline bool dirty_key(struct address_space *m, struct lens_dirty_key *k)
{
    if (!m || (ptr_bits(m, SL_WB) & 3))
        return false;
    struct inode *ino = m->host;
    if (!ino)
        return false;
    struct super_block *sb = ino->i_sb;
    k->ino = ino->i_ino;
    k->sdev = sb ? sb->s_dev : 0;
    k->pad = 0;
    return true;
}

/* Runs when a page (folio) goes from clean to dirty, in the dirtier's context (a write(2)
 * or a fault on a shared writable map): once per page, so an unchanged dirtier costs one
 * lookup and no write. A kernel thread's dirtying (a filesystem's metadata, a loop
 * device's worker) leaves the inode's last process dirtier as it was. */
static __always_inline int dirty_note(struct address_space *m)
{
    struct task_struct *cur = bpf_get_current_task_btf();
    if (cur->flags & PF_KTHREAD)
        return 0;
    struct lens_dirty_key k;
    if (!dirty_key(m, &k))
        return 0;
    __u32 tgid = (__u32)cur->tgid;
    __u64 cg = bpf_get_current_cgroup_id();
    struct lens_dirty_val *v = bpf_map_lookup_elem(&dirtiers, &k);
    if (v && v->tgid == tgid && v->cgid == cg)
        return 0;
    struct lens_dirty_val n = { .cgid = cg, .tgid = tgid };
    bpf_get_current_comm(n.comm, sizeof(n.comm));
    bpf_map_update_elem(&dirtiers, &k, &n, BPF_ANY);
    return 0;
}

/* mm/page-writeback.c folio_account_dirtied (5.17+); before, account_page_dirtied with
 * writeback_dirty_page. Both pass the mapping second. lens.c loads whichever the running
 * kernel has (neither: no split of the writeback, the rest of the lens unchanged). */
SEC("tp_btf/writeback_dirty_folio")
int BPF_PROG(lens_dirty_folio, void *folio, struct address_space *mapping)
{
    return dirty_note(mapping);
}

SEC("?tp_btf/writeback_dirty_page")
int BPF_PROG(lens_dirty_page, void *page, struct address_space *mapping)
{
    return dirty_note(mapping);
}

/* The v2 cgroup (not the root) the kernel charged the bio to, else 0: on v2 with io and
 * memory, cgroup writeback tags the flusher's bios with the dirtying cgroup; with io on
 * v1, or without cgroup writeback, they carry the root. */
static __always_inline __u64 bio_blkcg(struct bio *bio)
{
    if (!bpf_core_field_exists(bio->bi_blkg))
        return 0;
    struct blkcg_gq *g = bio->bi_blkg;
    struct blkcg *c = g ? g->blkcg : NULL;
    struct cgroup *cg = c ? c->css.cgroup : NULL;
    if (!cg || cg->level == 0)
        return 0;
    struct cgroup_root *root = cg->root;
    if (!root || root->hierarchy_id != 0)
        return 0;
    struct kernfs_node *kn = cg->kn;
    return kn ? kn->id : 0;
}

/* A kernel thread's bio, charged to the last dirtier of the inode of its first page: a
 * writeback bio carries pages of one inode (a filesystem writes back inode by inode). */
static __always_inline void wb_charge(struct bio *bio, __u32 part, __u64 bytes)
{
    struct lens_wb_key k = { .blkcg = bio_blkcg(bio), .dev = part };
    struct bio_vec *bv = bio->bi_vcnt ? bio->bi_io_vec : NULL;
    struct page *pg = bv ? bv->bv_page : NULL;
    struct lens_dirty_key dk;
    if (pg && dirty_key(pg->mapping, &dk)) {
        struct lens_dirty_val *dv = bpf_map_lookup_elem(&dirtiers, &dk);
        if (dv) {
            k.tgid = dv->tgid;
            k.cgid = dv->cgid;
            __builtin_memcpy(k.comm, dv->comm, sizeof(k.comm));
        }
    }
    struct lens_submit_val *v = bpf_map_lookup_elem(&wbs, &k);
    if (v) {
        v->bytes += bytes;      /* this CPU's copy, as in submits */
        v->bios += 1;
    } else {
        struct lens_submit_val nv = { .bytes = bytes, .bios = 1 };
        bpf_map_update_elem(&wbs, &k, &nv, BPF_NOEXIST);
    }
}

/* A bio's disk and the device it targets (a partition's own number); NULL when it has
 * none. */
static __always_inline struct gendisk *bio_disk(struct bio *bio, __u32 *part)
{
    struct gendisk *disk;
    if (bpf_core_field_exists(bio->bi_bdev)) {
        struct block_device *bdev = bio->bi_bdev;
        if (!bdev)
            return NULL;
        *part = bdev->bd_dev;
        disk = bdev->bd_disk;
    } else {
        struct bio___old *old = (void *)bio;
        disk = BPF_CORE_READ(old, bi_disk);
        if (!disk)
            return NULL;
        *part = disk_dev(disk) + BPF_CORE_READ(old, bi_partno);
    }
    return disk;
}

SEC("tp_btf/block_bio_queue")
int BPF_PROG(lens_bio_queue, struct bio *bio)
{
    bio = UNTRUSTED(struct bio, bio);      /* reads only: kern_types.h */
    __u32 part = 0;
    struct gendisk *disk = bio_disk(bio, &part);
    if (!disk)
        return 0;
    if (lens_submits) {
        /* The tracepoint runs in the submitter's context (submit_bio_noacct_nocheck, called
         * synchronously from submit_bio): a direct read or write, and readahead for a
         * reader (also a page fault on a memory map), in the reader's own task; writeback
         * in the flusher kworker (wb_workfn), a journal in its kthread. Every kernel
         * thread is charged to tgid 0 (LENS_SUBMIT_KERNEL): one row per device, not one
         * per kworker, whose ids mean nothing to the user. */
        struct task_struct *cur = bpf_get_current_task_btf();
        __u32 tgid = cur->flags & PF_KTHREAD ? LENS_SUBMIT_KERNEL : (__u32)cur->tgid;
        struct lens_submit_key sk = { .tgid = tgid, .dev = part };
        __u64 bytes = bio->bi_iter.bi_size;
        struct lens_submit_val *sv = bpf_map_lookup_elem(&submits, &sk);
        if (sv) {
            /* this CPU's copy: plain adds (a program never runs nested in itself on
             * one CPU, see lens_rq_complete) */
            sv->bytes += bytes;
            sv->bios += 1;
        } else {
            struct lens_submit_val nv = { .bytes = bytes, .bios = 1 };
            bpf_map_update_elem(&submits, &sk, &nv, BPF_NOEXIST);
        }
        if (lens_wb_split && tgid == LENS_SUBMIT_KERNEL && bytes)
            wb_charge(bio, part, bytes);
    }
    /* Bio-based devices (device mapper, zram) make no requests: nothing to time. */
    if (!disk->queue || !disk->queue->mq_ops)
        return 0;
    __u32 dev = disk_dev(disk);
    struct lens_dev_val *d = dev_at(dev_lookup(dev, true));
    __u64 key = ptr_bits(bio, SL_QUEUE);
    if (!d || !key)
        return 0;
    __u32 shift = dev_shift(d);
    if (!key_timed(key, bio->bi_iter.bi_sector, shift))
        return 0;               /* not in the sample: no entry, no clock read */
    __u64 now = bpf_ktime_get_ns();
    struct lens_rq *r = rq_claim(key, now, shift, dev);
    if (r)
        r->queue_ns = now;
    return 0;
}

SEC("tp_btf/block_getrq")
int BPF_PROG(lens_getrq, struct bio *bio)
{
    bio = UNTRUSTED(struct bio, bio);      /* reads only: kern_types.h */
    __u32 part = 0;
    struct gendisk *disk = bio_disk(bio, &part);
    struct lens_dev_val *d = disk ? dev_find(disk_dev(disk)) : NULL;
    if (!d)
        return 0;
    __u64 key = ptr_bits(bio, SL_GETRQ);
    __u32 lo = d->shift_lo & 7, shift = dev_shift(d);
    if (!key_timed(key, bio->bi_iter.bi_sector, lo < shift ? lo : shift))
        return 0;
    struct lens_rq *r = rq_lookup(key);
    if (r)
        r->last_ns = r->getrq_ns = bpf_ktime_get_ns();
    return 0;
}

/* A bio merged into an existing request makes none of its own. (A front merge makes it
 * the request's first bio; the request's entry stays under the bio after it.) */
SEC("tp_btf/block_bio_backmerge")
int BPF_PROG(lens_backmerge, struct bio *bio)
{
    bio = UNTRUSTED(struct bio, bio);      /* reads only: kern_types.h */
    __u64 key = ptr_bits(bio, SL_MERGE);
    struct lens_rq *r = rq_lookup(key);
    if (r)
        rq_free(r, key);
    return 0;
}

SEC("tp_btf/block_bio_frontmerge")
int BPF_PROG(lens_frontmerge, struct bio *bio)
{
    bio = UNTRUSTED(struct bio, bio);      /* reads only: kern_types.h */
    __u64 key = ptr_bits(bio, SL_MERGE);
    struct lens_rq *r = rq_lookup(key);
    if (r)
        rq_free(r, key);
    return 0;
}

/* Requests in the scheduler are counted per class through their entries: a timed request
 * adds its weight at insert and takes it away at issue or merge, so the difference
 * estimates what the scheduler holds (exact while every request is timed). */
SEC("tp_btf/block_rq_insert")
int BPF_PROG(lens_rq_insert, struct request *rq)
{
    rq = UNTRUSTED(struct request, rq);      /* reads only: kern_types.h */
    __u32 dev = rq_dev(rq);
    int di = dev_lookup(dev, true);
    if (di < 0)
        return 0;
    struct lens_dev_val *d = &lens_devs[di & (LENS_MAX_DEVS - 1)];
    __u64 key = rq_key(rq, SL_INSERT);
    int c = rq_choice(d, key, rq->__sector);
    if (c == RQ_SKIP)
        return 0;
    __u64 now = bpf_ktime_get_ns();
    int way = rq_find_index(rq, &key, SL_INSERT);
    way = rq_take(way, key, now, dev_shift(d) | (c == RQ_TIMED ? RQ_TAKE_CLAIM : 0), dev);
    struct lens_rq *r = rq_at(way);
    if (!r || r->insert_ns)
        return 0;
    r->insert_ns = now;
    r->prio = rq_prio(rq);
    __sync_fetch_and_add(&d->sched_in[(r->prio >> 13) & 3], 1ull << (r->shift & 7));
    return 0;
}

#define RQ_COUNTED 0x200            /* rq_issue_entry's flags: in the depth by its entry */

/* A sampled request's issue: its entry taken (rq_take; flags: the device's shift,
 * RQ_TAKE_CLAIM, RQ_COUNTED, the device's slot << 16) and stamped; its way, or -1.
 * dev_prio: the device, and the request's priority << 32. Global (see rq_index). */
__noinline int rq_issue_entry(int way, __u64 key, __u64 now, __u32 flags, __u64 dev_prio)
{
    way = rq_take(way, key, now, flags & (RQ_TAKE_CLAIM | 0xff), (__u32)dev_prio);
    struct lens_rq *r = rq_at(way);
    if (!r)
        return -1;
    r->issue_ns = now;
    if (!r->insert_ns) {        /* else read at insert */
        r->prio = (__u32)(dev_prio >> 32);
    } else {
        struct lens_dev_val *d = &lens_devs[(flags >> 16) & (LENS_MAX_DEVS - 1)];
        __sync_fetch_and_add(&d->sched_out[(r->prio >> 13) & 3], 1ull << (r->shift & 7));
    }
    r->counted = (flags & RQ_COUNTED) != 0;
    return way;
}

/* An issue's count in its device's depth (rq_after_t0: every request allocated after
 * lens_t0; one without a start time only through its entry), and the device's rate.
 * way: the request's entry, or -1; rqbits: the request's address when after > 0 (its
 * mark). */
static __always_inline int dev_issue(__u32 di, int way, int after, __u64 rqbits)
{
    struct lens_dev_val *d = &lens_devs[di & (LENS_MAX_DEVS - 1)];
    struct lens_rq *r = rq_at(way);
    if (after == 0 || (after < 0 && !r))
        return 0;               /* from before the lens, or not countable */
    if (after > 0 && mark_set(rqbits)) {
        __sync_fetch_and_add(&d->done, 1);
        __sync_fetch_and_add(&lens_dropped, 1);
    }
    __u64 n = __sync_fetch_and_add(&d->issued, 1);
    __s64 depth = (__s64)(n + 1 - d->done + d->lost);
    if (depth < 1) {
        /* at least this request is at the device: the count lost some issues */
        __sync_fetch_and_add(&d->lost, (__u64)(1 - depth));
        depth = 1;
    }
    if (r) {
        r->depth = depth > 0 ? (__u32)depth : 1;
        /* Requests issued before the lens are not counted in flight; once one request we
         * saw issued has completed, those ahead of it (mostly) have too. */
        r->depth_whole = d->first_done_ns != 0;
    }
    if ((n & (LENS_RATE_WIN - 1)) == LENS_RATE_WIN - 1)
        dev_rate_tick(di);
    return 0;
}

/* Every request is counted here (its depth, the device's rate); only a timed one has an
 * entry and reads the clock. */
SEC("tp_btf/block_rq_issue")
int BPF_PROG(lens_rq_issue, struct request *rq)
{
    rq = UNTRUSTED(struct request, rq);      /* reads only: kern_types.h */
    __u32 dev = rq_dev(rq);
    int di = dev_lookup(dev, true);
    if (di < 0)
        return 0;
    struct lens_dev_val *d = &lens_devs[di & (LENS_MAX_DEVS - 1)];
    if (!lens_issue_seen)
        lens_issue_seen = 1;
    int after = rq_after_t0(rq);
    if (after < 0 && !d->stampless)
        d->stampless = 1;       /* from now on every request of it is timed */
    __u64 key = rq_key(rq, SL_ISSUE);
    int way = -1;
    int c = rq_choice(d, key, rq->__sector);
    if (c != RQ_SKIP) {
        __u64 now = bpf_ktime_get_ns();
        way = rq_find_index(rq, &key, SL_ISSUE);
        __u32 flags = dev_shift(d) | (c == RQ_TIMED ? RQ_TAKE_CLAIM : 0) |
                      (after < 0 ? RQ_COUNTED : 0) | (__u32)di << 16;
        way = rq_issue_entry(way, key, now, flags, dev | (__u64)rq_prio(rq) << 32);
    }
    return dev_issue((__u32)di, way, after, after > 0 ? ptr_bits(rq, SL_ISSUE) : 0);
}

/* Merged into another request in the scheduler: it ends here, never issued. Its bios
 * (its first one still in next->bio at this tracepoint) go to the other request. */
SEC("tp_btf/block_rq_merge")
int BPF_PROG(lens_rq_merge, struct request *rq)
{
    rq = UNTRUSTED(struct request, rq);      /* reads only: kern_types.h */
    __u64 key;
    struct lens_rq *r = rq_find(rq, &key, SL_RQMERGE);
    if (!r)
        return 0;
    if (r->insert_ns && !r->issue_ns) {
        struct lens_dev_val *d = dev_at(dev_index(r->dev));
        if (d)
            __sync_fetch_and_add(&d->sched_out[(r->prio >> 13) & 3], 1ull << (r->shift & 7));
    }
    rq_free(r, key);
    return 0;
}

/* Back to the queue: it will be issued again. */
SEC("tp_btf/block_rq_requeue")
int BPF_PROG(lens_rq_requeue, struct request *rq)
{
    rq = UNTRUSTED(struct request, rq);      /* reads only: kern_types.h */
    __u64 key;
    struct lens_rq *r = rq_find(rq, &key, SL_REQUEUE);
    int after = rq_after_t0(rq);
    bool counted = after > 0 || (after < 0 && r && r->issue_ns && r->counted);
    if (r) {
        r->issue_ns = 0;
        r->counted = 0;
    }
    if (!counted)
        return 0;
    if (after > 0)
        mark_clear(rq, SL_REQUEUE);
    struct lens_dev_val *d = dev_at(dev_index(rq_dev(rq)));
    if (d)
        __sync_fetch_and_add(&d->done, 1);
    return 0;
}

/* The tracepoint fires before the request's bios are ended (blk_update_request):
 * rq->bio is still its first bio. */
/* A timed request's completion: its entry (way) freed and its stages added to its
 * (device, priority) pair. Global (see rq_index): the stages' tests would multiply the
 * completion's paths. di: the device's slot. */
__noinline int rq_done_timed(int way, __u64 key, __u32 di, __u32 nr_bytes)
{
    struct lens_rq *r = rq_at(way);
    if (!r)
        return 0;
    struct lens_dev_val *d = &lens_devs[di & (LENS_MAX_DEVS - 1)];
    __u64 now = bpf_ktime_get_ns();
    struct lens_rq q = *r;
    rq_free(r, key);

    /* Straight-line from here on (gt_bit, stage_add): each test would otherwise double
     * the verifier's paths through every stage after it. */
    __u64 dev_ns = (now - q.issue_ns) & -gt_bit(now, q.issue_ns);    /* else 0 */
    /* A racy minimum (two CPUs may both write): either value is a real request's. */
    if (nr_bytes && dev_ns && (!d->min_dev_ns || dev_ns < d->min_dev_ns))
        d->min_dev_ns = dev_ns;

    /* This CPU's copy: plain additions. Only this program writes the map, and the
     * kernel never runs a program twice at once on one CPU (it skips a nested run). */
    int i = dp_index(q.dev, q.prio);
    if (i < 0)
        return 0;
    __u32 idx = (__u32)i;
    struct lens_dp_val *v = bpf_map_lookup_elem(&devprio, &idx);
    if (!v)
        return 0;
    __u64 w = 1ull << (q.shift & 7);
    v->timed += 1;
    /* the depth moments only while the depth count is whole: weight 0 otherwise */
    __u64 wd = w & -(__u64)(q.depth_whole & 1);
    __u64 y = dev_ns / 1000;
    v->n += wd;
    v->sd += wd * q.depth;
    v->sdd += wd * q.depth * q.depth;
    v->sy += wd * y;
    v->sdy += wd * y * q.depth;
    stage_add(&v->st[LENS_ST_DEVICE], dev_ns, w, 1);
    stage_add(&v->st[LENS_ST_SCHED], q.issue_ns - q.insert_ns, w,
              nz_bit(q.insert_ns) & ge_bit(q.issue_ns, q.insert_ns));
    stage_add(&v->st[LENS_ST_TAG], q.getrq_ns - q.queue_ns, w,
              nz_bit(q.queue_ns) & ge_bit(q.getrq_ns, q.queue_ns));
    stage_add(&v->st[LENS_ST_TOTAL], now - q.queue_ns, w,
              nz_bit(q.queue_ns) & ge_bit(now, q.queue_ns));
    return 0;
}

SEC("tp_btf/block_rq_complete")
int BPF_PROG(lens_rq_complete, struct request *rq, int error, unsigned int nr_bytes)
{
    rq = UNTRUSTED(struct request, rq);      /* reads only: kern_types.h */
    if (!lens_t0 && lens_issue_seen)
        __sync_val_compare_and_swap(&lens_t0, 0, bpf_ktime_get_ns());
    int di = dev_lookup(rq_dev(rq), false);
    struct lens_dev_val *d = di < 0 ? NULL : &lens_devs[di & (LENS_MAX_DEVS - 1)];
    __u64 key = 0;
    int way = -1;
    if (d) {
        key = rq_key(rq, SL_COMPLETE);
        if (rq_choice(d, key, rq->__sector) != RQ_SKIP)
            way = rq_find_index(rq, &key, SL_COMPLETE);
    }
    struct lens_rq *r = rq_at(way);
    int after = rq_after_t0(rq);
    bool counted = after > 0 || (after < 0 && r && r->issue_ns && r->counted);
    if (!counted) {
        if (d)
            __sync_fetch_and_add(&d->untracked, 1);
        if (r)
            rq_free(r, key);
        return 0;
    }
    if (after > 0)
        mark_clear(rq, SL_COMPLETE);
    if (d) {
        __sync_fetch_and_add(&d->done, 1);
        if (!d->first_done_ns)
            d->first_done_ns = bpf_ktime_get_ns();
    }
    if (!r || !r->issue_ns) {
        if (r)
            rq_free(r, key);
        return 0;               /* counted, not timed */
    }
    return rq_done_timed(way, key, (__u32)di, nr_bytes);
}
