// SPDX-License-Identifier: GPL-2.0
/* iotriage.bpf.c: the BPF lens (issue #13). Built by mk/bpf.mk with clang -target bpf
 * into an object and a skeleton; loaded by src/source/lens.c.
 *
 * What it keeps (layouts in lens_maps.h), all cumulative and in bounded maps:
 *  - per thread and per thread group: time blocked with in_iowait set (the scheduler's
 *    iowait), from sched_switch (a task leaves the CPU with in_iowait) to sched_wakeup;
 *  - per device and priority: the stages of each request (tag wait, scheduler, device,
 *    total) as counts, sums and log2 histograms; per device the depth in flight at issue;
 *  - per (tgid, device): bytes and bios submitted, charged to the submitting task.
 * Per event the work is a few map lookups and updates; nothing is sent to user space.
 *
 * No vmlinux.h: the few kernel structures read are declared below with
 * preserve_access_index, so libbpf relocates each field against the running kernel's
 * BTF (CO-RE) and the object needs no BTF of the build machine.
 */
typedef unsigned char __u8;
typedef unsigned short __u16;
typedef unsigned int __u32;
typedef unsigned long long __u64;
typedef signed char __s8;
typedef short __s16;
typedef int __s32;
typedef long long __s64;
typedef __u16 __be16;
typedef __u32 __be32;
typedef __u32 __wsum;
typedef _Bool bool;
#define true 1
#define false 0

enum bpf_map_type {
    BPF_MAP_TYPE_HASH = 1,
    BPF_MAP_TYPE_LRU_HASH = 9,
};
#define BPF_ANY     0
#define BPF_NOEXIST 1

#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

#include "bpf/lens_maps.h"

/* ---- The kernel structures read, only the fields used (CO-RE relocates them). ---- */
struct task_struct {
    unsigned int in_iowait : 1;
    int pid;
    int tgid;
} __attribute__((preserve_access_index));

struct gendisk {
    int major;
    int first_minor;
} __attribute__((preserve_access_index));

struct blk_mq_ops;
struct request_queue {
    const struct blk_mq_ops *mq_ops;
    struct gendisk *disk;
} __attribute__((preserve_access_index));

struct block_device {
    __u32 bd_dev;
    struct gendisk *bd_disk;
} __attribute__((preserve_access_index));

struct bvec_iter {
    unsigned int bi_size;
} __attribute__((preserve_access_index));

struct bio {
    struct block_device *bi_bdev;
    unsigned short bi_ioprio;
    struct bvec_iter bi_iter;
} __attribute__((preserve_access_index));

struct request {
    struct request_queue *q;
    struct bio *bio;
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

/* gendisk.queue, for telling request-based (blk-mq) devices from bio-based ones. */
struct gendisk___q {
    struct request_queue *queue;
} __attribute__((preserve_access_index));

char LICENSE[] SEC("license") = "GPL";

/* ---- Maps (sizes in lens_maps.h). ---- */
struct {
    __uint(type, BPF_MAP_TYPE_LRU_HASH);
    __uint(max_entries, LENS_MAX_TASKS);
    __type(key, __u32);
    __type(value, struct lens_wait);
} waits_tid SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_LRU_HASH);
    __uint(max_entries, LENS_MAX_PROCS);
    __type(key, __u32);
    __type(value, struct lens_wait);
} waits_tgid SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_LRU_HASH);
    __uint(max_entries, LENS_MAX_BIOS);
    __type(key, __u64);
    __type(value, struct lens_bio);
} bios SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_LRU_HASH);
    __uint(max_entries, LENS_MAX_RQS);
    __type(key, __u64);
    __type(value, struct lens_rq);
} rqs SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, LENS_MAX_DEVPRIO);
    __type(key, struct lens_dp_key);
    __type(value, struct lens_dp_val);
} devprio SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, LENS_MAX_DEVS);
    __type(key, __u32);
    __type(value, struct lens_dev_val);
} devs SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_LRU_HASH);
    __uint(max_entries, LENS_MAX_SUBMIT);
    __type(key, struct lens_submit_key);
    __type(value, struct lens_submit_val);
} submits SEC(".maps");

/* Events the bounded maps could not hold (a full devprio or devs map). */
__u64 lens_dropped = 0;
/* Charge bytes to the submitting thread group per device (the submits map, for issue
 * 14's attribution). Read-only data set before load: when off, the verifier drops the
 * code, and each bio costs one LRU update less (about 0.3 us). Off until a reader uses
 * it. */
const volatile bool lens_submits = false;

/* A new devprio entry's first value: too big for the 512-byte BPF stack. */
const struct lens_dp_val dp_zero = {};

/* ---- Per-thread iowait. ---- */

static __always_inline void wait_begin(struct lens_wait *w, __u64 now)
{
    w->start_ns = now;
}

static __always_inline struct lens_wait *wait_slot(void *map, __u32 key, __u32 tgid)
{
    struct lens_wait *w = bpf_map_lookup_elem(map, &key);
    if (w)
        return w;
    struct lens_wait zero = { .tgid = tgid };
    bpf_map_update_elem(map, &key, &zero, BPF_NOEXIST);
    return bpf_map_lookup_elem(map, &key);
}

SEC("tp_btf/sched_switch")
int BPF_PROG(lens_switch, bool preempt, struct task_struct *prev, struct task_struct *next)
{
    /* A preempted task is runnable, not waiting, whatever in_iowait says. */
    if (preempt || !BPF_CORE_READ_BITFIELD_PROBED(prev, in_iowait))
        return 0;
    __u32 tid = BPF_CORE_READ(prev, pid), tgid = BPF_CORE_READ(prev, tgid);
    if (!tid)
        return 0;
    __u64 now = bpf_ktime_get_ns();
    struct lens_wait *w = wait_slot(&waits_tid, tid, tgid);
    if (w)
        wait_begin(w, now);
    w = wait_slot(&waits_tgid, tgid, tgid);
    /* Threads of one group may wait at once: the group's figure is the sum of its
     * threads' waits, so its start is only a marker that some wait is open. */
    if (w && !w->start_ns)
        wait_begin(w, now);
    return 0;
}

static __always_inline void on_wakeup(struct task_struct *p)
{
    __u32 tid = BPF_CORE_READ(p, pid);
    struct lens_wait *w = bpf_map_lookup_elem(&waits_tid, &tid);
    if (!w || !w->start_ns)
        return;
    __u64 now = bpf_ktime_get_ns();
    __u64 start = w->start_ns;
    w->start_ns = 0;
    if (now <= start)
        return;
    __sync_fetch_and_add(&w->wait_ns, now - start);
    __sync_fetch_and_add(&w->waits, 1);
    __u32 tgid = w->tgid;
    struct lens_wait *g = bpf_map_lookup_elem(&waits_tgid, &tgid);
    if (g) {
        __sync_fetch_and_add(&g->wait_ns, now - start);
        __sync_fetch_and_add(&g->waits, 1);
        g->start_ns = 0;
    }
}

SEC("tp_btf/sched_wakeup")
int BPF_PROG(lens_wakeup, struct task_struct *p)
{
    on_wakeup(p);
    return 0;
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(lens_exit, struct task_struct *p)
{
    __u32 tid = BPF_CORE_READ(p, pid), tgid = BPF_CORE_READ(p, tgid);
    bpf_map_delete_elem(&waits_tid, &tid);
    /* The group's entry goes with its leader (a leader that exits before its threads
     * takes the group's figure with it: the reader then shows the process as unknown). */
    if (tid == tgid)
        bpf_map_delete_elem(&waits_tgid, &tgid);
    return 0;
}

/* ---- Requests. ---- */

static __always_inline __u32 log2_bucket(__u64 ns)
{
    __u64 us = ns / 1000;
    __u32 b = 0;
    /* bucket k >= 1 holds [2^(k-1), 2^k) us; unrolled, no loop for the verifier */
    if (us >= (1ULL << 16)) { b += 16; us >>= 16; }
    if (us >= (1ULL << 8))  { b += 8;  us >>= 8; }
    if (us >= (1ULL << 4))  { b += 4;  us >>= 4; }
    if (us >= (1ULL << 2))  { b += 2;  us >>= 2; }
    if (us >= (1ULL << 1))  { b += 1;  us >>= 1; }
    b += (__u32)us;           /* us is 0 or 1 here */
    return b < LENS_HIST ? b : LENS_HIST - 1;
}

static __always_inline void stage_add(struct lens_stage *s, __u64 ns)
{
    __sync_fetch_and_add(&s->count, 1);
    __sync_fetch_and_add(&s->sum_ns, ns);
    __u32 b = log2_bucket(ns);
    if (b < LENS_HIST)
        __sync_fetch_and_add(&s->hist[b], 1);
}

static __always_inline __u32 rq_dev(struct request *rq)
{
    struct gendisk *d;
    struct request_queue *q = BPF_CORE_READ(rq, q);
    if (bpf_core_field_exists(q->disk))
        d = BPF_CORE_READ(q, disk);
    else
        d = BPF_CORE_READ((struct request___old *)rq, rq_disk);
    if (!d)
        return 0;
    __u32 major = BPF_CORE_READ(d, major), minor = BPF_CORE_READ(d, first_minor);
    return major << 20 | minor;
}

static __always_inline __u32 rq_prio(struct request *rq)
{
    __u32 v;
    struct request___old *old = (void *)rq;
    if (bpf_core_field_exists(old->ioprio))
        v = BPF_CORE_READ(old, ioprio);
    else
        v = BPF_CORE_READ(rq, bio, bi_ioprio);    /* no bio: 0, as req_get_ioprio */
    return (v & 0xe000) | (v & 7);
}

static __always_inline struct lens_dev_val *dev_slot(__u32 dev)
{
    struct lens_dev_val *d = bpf_map_lookup_elem(&devs, &dev);
    if (d)
        return d;
    struct lens_dev_val zero = {};
    bpf_map_update_elem(&devs, &dev, &zero, BPF_NOEXIST);
    d = bpf_map_lookup_elem(&devs, &dev);
    if (!d)
        __sync_fetch_and_add(&lens_dropped, 1);
    return d;
}

/* The request's entry, created from its first bio's times when first seen. Requests
 * live in a fixed pool (one per tag) and are reused at once: an entry already issued
 * belongs to an earlier life of the same address whose end we missed, and is replaced. */
static __always_inline struct lens_rq *rq_slot(struct request *rq)
{
    __u64 key = (__u64)rq;
    struct lens_rq *r = bpf_map_lookup_elem(&rqs, &key);
    if (r && !r->issue_ns)
        return r;
    struct lens_rq n = {};
    __u64 bkey = (__u64)BPF_CORE_READ(rq, bio);
    if (bkey) {
        struct lens_bio *b = bpf_map_lookup_elem(&bios, &bkey);
        if (b) {
            n.queue_ns = b->queue_ns;
            n.getrq_ns = b->getrq_ns;
            bpf_map_delete_elem(&bios, &bkey);
        }
    }
    n.dev = rq_dev(rq);
    bpf_map_update_elem(&rqs, &key, &n, BPF_ANY);
    return bpf_map_lookup_elem(&rqs, &key);
}

SEC("tp_btf/block_bio_queue")
int BPF_PROG(lens_bio_queue, struct bio *bio)
{
    struct gendisk___q *disk;
    __u32 dev;
    if (bpf_core_field_exists(bio->bi_bdev)) {
        struct block_device *bdev = BPF_CORE_READ(bio, bi_bdev);
        if (!bdev)
            return 0;
        dev = BPF_CORE_READ(bdev, bd_dev);
        disk = (void *)BPF_CORE_READ(bdev, bd_disk);
    } else {
        struct bio___old *old = (void *)bio;
        struct gendisk *g = BPF_CORE_READ(old, bi_disk);
        if (!g)
            return 0;
        dev = (__u32)BPF_CORE_READ(g, major) << 20 |
              ((__u32)BPF_CORE_READ(g, first_minor) + BPF_CORE_READ(old, bi_partno));
        disk = (void *)g;
    }
    if (lens_submits) {
        __u64 tg = bpf_get_current_pid_tgid();
        struct lens_submit_key sk = { .tgid = tg >> 32, .dev = dev };
        __u64 bytes = BPF_CORE_READ(bio, bi_iter.bi_size);
        struct lens_submit_val *sv = bpf_map_lookup_elem(&submits, &sk);
        if (sv) {
            __sync_fetch_and_add(&sv->bytes, bytes);
            __sync_fetch_and_add(&sv->bios, 1);
        } else {
            struct lens_submit_val nv = { .bytes = bytes, .bios = 1 };
            bpf_map_update_elem(&submits, &sk, &nv, BPF_NOEXIST);
        }
    }
    /* Bio-based devices (device mapper, zram) make no requests: nothing to time. */
    if (!disk || !BPF_CORE_READ(disk, queue, mq_ops))
        return 0;
    __u64 key = (__u64)bio;
    struct lens_bio b = { .queue_ns = bpf_ktime_get_ns() };
    bpf_map_update_elem(&bios, &key, &b, BPF_ANY);
    return 0;
}

SEC("tp_btf/block_getrq")
int BPF_PROG(lens_getrq, struct bio *bio)
{
    __u64 key = (__u64)bio;
    struct lens_bio *b = bpf_map_lookup_elem(&bios, &key);
    if (b)
        b->getrq_ns = bpf_ktime_get_ns();
    return 0;
}

/* A bio merged into an existing request makes none of its own. */
SEC("tp_btf/block_bio_backmerge")
int BPF_PROG(lens_backmerge, struct bio *bio)
{
    __u64 key = (__u64)bio;
    bpf_map_delete_elem(&bios, &key);
    return 0;
}

SEC("tp_btf/block_bio_frontmerge")
int BPF_PROG(lens_frontmerge, struct bio *bio)
{
    __u64 key = (__u64)bio;
    bpf_map_delete_elem(&bios, &key);
    return 0;
}

SEC("tp_btf/block_rq_insert")
int BPF_PROG(lens_rq_insert, struct request *rq)
{
    struct lens_rq *r = rq_slot(rq);
    if (!r || r->insert_ns)
        return 0;
    r->insert_ns = bpf_ktime_get_ns();
    r->prio = rq_prio(rq);
    struct lens_dev_val *d = dev_slot(r->dev);
    if (d)
        __sync_fetch_and_add(&d->sched_in[(r->prio >> 13) & 3], 1);
    return 0;
}

SEC("tp_btf/block_rq_issue")
int BPF_PROG(lens_rq_issue, struct request *rq)
{
    struct lens_rq *r = rq_slot(rq);
    if (!r)
        return 0;
    __u64 now = bpf_ktime_get_ns();
    r->issue_ns = now;
    r->prio = rq_prio(rq);
    struct lens_dev_val *d = dev_slot(r->dev);
    if (!d)
        return 0;
    if (r->insert_ns)
        __sync_fetch_and_add(&d->sched_out[(r->prio >> 13) & 3], 1);
    __s64 depth = __sync_fetch_and_add(&d->inflight, 1) + 1;
    r->depth = depth > 0 ? (__u32)depth : 1;
    /* Requests issued before the lens are not counted in flight; once one request we
     * saw issued has completed, those ahead of it (mostly) have too. */
    r->depth_whole = d->first_done_ns != 0;
    __sync_fetch_and_add(&d->issued, 1);
    __sync_fetch_and_add(&d->depth_sum, r->depth);
    return 0;
}

/* Merged into another request in the scheduler: it ends here, never issued. */
SEC("tp_btf/block_rq_merge")
int BPF_PROG(lens_rq_merge, struct request *rq)
{
    __u64 key = (__u64)rq;
    struct lens_rq *r = bpf_map_lookup_elem(&rqs, &key);
    if (!r)
        return 0;
    if (r->insert_ns && !r->issue_ns) {
        struct lens_dev_val *d = bpf_map_lookup_elem(&devs, &r->dev);
        if (d)
            __sync_fetch_and_add(&d->sched_out[(r->prio >> 13) & 3], 1);
    }
    bpf_map_delete_elem(&rqs, &key);
    return 0;
}

/* Back to the queue: it will be issued again. */
SEC("tp_btf/block_rq_requeue")
int BPF_PROG(lens_rq_requeue, struct request *rq)
{
    __u64 key = (__u64)rq;
    struct lens_rq *r = bpf_map_lookup_elem(&rqs, &key);
    if (!r || !r->issue_ns)
        return 0;
    r->issue_ns = 0;
    struct lens_dev_val *d = bpf_map_lookup_elem(&devs, &r->dev);
    if (d)
        __sync_fetch_and_add(&d->inflight, -1);
    return 0;
}

SEC("tp_btf/block_rq_complete")
int BPF_PROG(lens_rq_complete, struct request *rq, int error, unsigned int nr_bytes)
{
    __u64 key = (__u64)rq;
    struct lens_rq *r = bpf_map_lookup_elem(&rqs, &key);
    if (!r || !r->issue_ns) {
        __u32 dev = rq_dev(rq);
        struct lens_dev_val *d = bpf_map_lookup_elem(&devs, &dev);
        if (d)
            __sync_fetch_and_add(&d->untracked, 1);
        if (r)
            bpf_map_delete_elem(&rqs, &key);
        return 0;
    }
    __u64 now = bpf_ktime_get_ns();
    struct lens_rq q = *r;
    bpf_map_delete_elem(&rqs, &key);

    struct lens_dev_val *d = bpf_map_lookup_elem(&devs, &q.dev);
    __u64 dev_ns = now > q.issue_ns ? now - q.issue_ns : 0;
    if (d) {
        __sync_fetch_and_add(&d->inflight, -1);
        if (!d->first_done_ns)
            d->first_done_ns = now;
        /* A racy minimum (two CPUs may both write): either value is a real request's. */
        if (nr_bytes && dev_ns && (!d->min_dev_ns || dev_ns < d->min_dev_ns))
            d->min_dev_ns = dev_ns;
        if (q.depth_whole) {
            __u64 y = dev_ns / 1000;
            __sync_fetch_and_add(&d->n, 1);
            __sync_fetch_and_add(&d->sd, q.depth);
            __sync_fetch_and_add(&d->sdd, (__u64)q.depth * q.depth);
            __sync_fetch_and_add(&d->sy, y);
            __sync_fetch_and_add(&d->sdy, y * q.depth);
        }
    }

    struct lens_dp_key k = { .dev = q.dev, .prio = q.prio };
    struct lens_dp_val *v = bpf_map_lookup_elem(&devprio, &k);
    if (!v) {
        bpf_map_update_elem(&devprio, &k, &dp_zero, BPF_NOEXIST);
        v = bpf_map_lookup_elem(&devprio, &k);
        if (!v) {
            __sync_fetch_and_add(&lens_dropped, 1);
            return 0;
        }
    }
    stage_add(&v->st[LENS_ST_DEVICE], dev_ns);
    if (q.insert_ns && q.issue_ns >= q.insert_ns)
        stage_add(&v->st[LENS_ST_SCHED], q.issue_ns - q.insert_ns);
    if (q.queue_ns) {
        if (q.getrq_ns >= q.queue_ns)
            stage_add(&v->st[LENS_ST_TAG], q.getrq_ns - q.queue_ns);
        if (now >= q.queue_ns)
            stage_add(&v->st[LENS_ST_TOTAL], now - q.queue_ns);
    }
    return 0;
}
