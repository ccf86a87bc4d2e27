/* SPDX-License-Identifier: GPL-2.0-or-later */
/* requests.bpf.c: the BPF lens's request stages (issue #13), read by
 * src/source/lens_requests.c. Per device and priority: the stages of each request (tag
 * wait, scheduler, device, total) as counts, sums and log2 histograms; per device the
 * depth in flight at issue; per (tgid, device, priority): bytes and bios submitted,
 * charged to the submitting thread group, kernel threads (writeback) together under tgid 0. The tables
 * they are kept in are requests_tables.bpf.c's; a kernel thread's bio is charged to its
 * dirtier through writeback.bpf.c's maps. One of the objects linked into the lens
 * (lens.bpf.h, mk/bpf.mk).
 *
 * It runs on every block request of the machine, so the cost per event is kept small
 * (docs/performance.md: the lens's cost): on a fast device only a sample of
 * the requests is timed (bpf/requests.h: sampled timing), every one still counted; a timed
 * request's state is one entry of an array found by index (no hash update per request);
 * counters written at every completion are per CPU. Nothing is sent to user space.
 * Every start of iotriage pays for the kernel's verifier walking these programs
 * (docs/performance.md: the lens's load), once per path through each: the helpers that
 * choose among several outcomes are global functions (verified once each, on their
 * own, taking and returning numbers), comparisons that only weigh a figure are
 * computed without branches (gt_bit), and an untimed request's path calls none of
 * them. `make bench-verify` counts the instructions verified; test_bpfverify bounds
 * them.
 */
#include "lens.bpf.h"

/* Per CPU: the submission adds to its own CPU's copy without atomic operations, and a
 * process's entry does not move between the CPUs its threads run on. */
struct {
    __uint(type, BPF_MAP_TYPE_LRU_PERCPU_HASH);
    __uint(max_entries, LENS_MAX_SUBMIT);
    __type(key, struct lens_submit_key);
    __type(value, struct lens_submit_val);
} submits SEC(".maps");

/* Charge bytes to the submitting thread group per device (the submits map, issue 14's
 * attribution). Read-only data set before load (lens.c sets it): when off, the verifier
 * drops the code. */
const volatile bool lens_submits = false;
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


/* ---- Requests. ----
 * Per request: its entry in the rqs cache (claimed at its first bio's submission, found
 * by index after, freed at completion; no hash map update), and its device's lens_devs
 * and devprio entries, found by probing (bpf/requests.h), claimed by the device's first
 * request. */

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

/* A timed request stands for w = 2^shift requests (bpf/requests.h: sampled timing). ok: 1
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

/* ---- The requests in flight (bpf/requests.h: struct lens_rq). ---- */

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

static __always_inline struct lens_rq *rq_lookup(__u64 key)
{
    return rq_at(rq_index(key));
}

/* Free an entry, unless another CPU took the way meanwhile. */
static __always_inline void rq_free(struct lens_rq *r, __u64 key)
{
    __sync_val_compare_and_swap(&r->key, key, 0);
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
        /* bi_ioprio is set by now (submit_bio's bio_set_ioprio runs before it: 6.8 on,
         * 6.1.y; KERNEL-FACTS.md 14): the class and level the scheduler will see */
        __u32 pv = bio->bi_ioprio;
        struct lens_submit_key sk = { .tgid = tgid, .dev = part, .prio = (pv & 0xe000) | (pv & 7) };
        __u64 bytes = bio->bi_iter.bi_size;
        struct lens_submit_val *sv = bpf_map_lookup_elem(&submits, &sk);
        if (sv) {
            /* this CPU's copy: plain adds (a program never runs nested in itself on
             * one CPU, see lens_rq_complete; the completion writes other fields) */
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
    if (r) {
        r->queue_ns = now;
        if (lens_submits) {
            /* the submits row its completion adds its latency to (sub_wait_add) */
            struct task_struct *cur = bpf_get_current_task_btf();
            __u32 pv = bio->bi_ioprio;
            r->tgid = cur->flags & PF_KTHREAD ? LENS_SUBMIT_KERNEL : (__u32)cur->tgid;
            r->part = part;
            r->sprio = (__u16)((pv & 0xe000) | (pv & 7));
        }
    }
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

/* A timed request's latency from its first bio's submission (queue_ns) to its
 * completion (now), weight w, added to its submitter's row of the submits map on this
 * CPU (made when this CPU has none). One lookup, an update only for a new row. Only a
 * request seen submitted: a window of the duty cycle opened while it was in flight
 * left queue_ns 0, and it is not counted half. Global (see rq_index): its tests do not
 * multiply the completion's paths. tgid_part: the submitter << 32 | the bio's device. */
__noinline int sub_wait_add(__u64 tgid_part, __u32 sprio, __u64 queue_ns, __u64 now, __u64 w)
{
    if (!lens_submits || !queue_ns || now <= queue_ns)
        return 0;
    __u64 ns = now - queue_ns;
    struct lens_submit_key sk = { .tgid = (__u32)(tgid_part >> 32), .dev = (__u32)tgid_part,
                                  .prio = sprio };
    struct lens_submit_val *sv = bpf_map_lookup_elem(&submits, &sk);
    if (sv) {
        sv->wait_ns += ns * w;
        sv->rqs += w;
    } else {
        struct lens_submit_val nv = { .wait_ns = ns * w, .rqs = w };
        bpf_map_update_elem(&submits, &sk, &nv, BPF_NOEXIST);
    }
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
    /* its submitter's wait (issue #35) */
    sub_wait_add((__u64)q.tgid << 32 | q.part, q.sprio, q.queue_ns, now, 1ull << (q.shift & 7));

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
