/* SPDX-License-Identifier: GPL-2.0-or-later */
/* requests_tables.bpf.c: the tables the BPF lens's request stages (requests.bpf.c) keep
 * their figures in: the devices (lens_devs), the (device, priority) pairs (devprio) and
 * the requests in flight (rqs), with the global functions that find and claim their
 * entries (each verified once, on its own: see requests.bpf.c). Read by
 * src/source/lens_requests.c with the rest of the request stages. One of the objects
 * linked into the lens (lens.bpf.h, mk/bpf.mk).
 */
#include "lens.bpf.h"

/* The request cache: max_entries set at load for the machine's disks, a power of two,
 * rq_set_shift to 64 minus its log2 (lens.c). */
struct lens_rqs_map rqs SEC(".maps");     /* the type: lens.bpf.h */

/* One word per program and CPU (lens.bpf.h: ptr_bits, SL_N). */
struct lens_scratch_map scratch SEC(".maps");     /* the type: lens.bpf.h */

/* (device, priority) slots, open-addressed (bpf/requests.h); max_entries is set at load
 * to a power of two, devprio_mask to it minus one. */
struct lens_devprio_map devprio SEC(".maps");     /* the type: lens.bpf.h */
const volatile __u32 devprio_mask = LENS_MAX_DEVPRIO - 1;
/* The request cache's sets as a shift: a key's set is the top 64 - rq_set_shift bits of
 * its hash (set at load for the machine's disks, lens.c). */
const volatile __u32 rq_set_shift = 64 - LENS_RQ_SETS_LOG;
/* The devprio slots claimed on some CPU, for the reader. */
__u64 lens_dp_used[LENS_MAX_DEVPRIO / 64] = {};

/* The devices, open-addressed (bpf/requests.h), in global data: shared by every CPU (the
 * depth in flight is one count), read by user space through the mapped .bss. */
struct lens_dev_val lens_devs[LENS_MAX_DEVS] = {};

/* Events the bounded tables could not hold (a device or (device, priority) pair whose
 * probed slots were all taken, a request in flight evicted from the rqs cache). */
__u64 lens_dropped = 0;
/* Requests a second on one device above which only a sample of them is timed
 * (bpf/requests.h: sampled timing); 0 times every request. */
const volatile __u32 lens_timed_rate = LENS_TIMED_RATE;

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

/* The entry helpers below that decide among several outcomes are global functions
 * (__noinline, not static): the verifier checks each once, on its own, where an inlined
 * copy would be checked again for every path of its caller that reaches it, and the
 * outcomes of one would multiply the paths through the next. They take and return
 * numbers only (a way's index: its set times 2 plus the way; -1 for none), which the
 * caller turns back into a pointer with rq_at. */

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
    v->sprio = 0;
    v->tgid = 0;
    v->part = 0;
    v->depth = 0;
    v->depth_whole = 0;
    v->shift = (__u8)shift;
    v->counted = 0;
    return way;
}

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
