/* SPDX-License-Identifier: GPL-2.0-or-later */
/* requests.h: the layout of the BPF lens's request-stage maps and tables,
 * shared by src/bpf/kern/requests.bpf.c and requests_tables.bpf.c and their reader,
 * src/source/lens_requests.c.
 * The contract of lens_maps.h (fixed-width types, explicit padding, cumulative
 * counters, CLOCK_MONOTONIC ns, the kernel's dev_t) holds here too.
 */
#ifndef IOTRIAGE_BPF_REQUESTS_H
#define IOTRIAGE_BPF_REQUESTS_H

#define LENS_HIST       32      /* log2 buckets of microseconds: [0] < 1 us, [k] 2^(k-1).. */
#define LENS_NSTAGES    4
#define LENS_ST_TAG     0       /* bio submitted -> request allocated (waiting for a tag) */
#define LENS_ST_SCHED   1       /* inserted into the scheduler -> issued to the driver */
#define LENS_ST_DEVICE  2       /* issued -> completed */
#define LENS_ST_TOTAL   3       /* bio submitted -> completed */

/* Map sizes: bounded, whatever the number of requests ever made. */
#define LENS_RQ_SETS_LOG 13     /* requests in flight: at most 2^13 sets of 2 ways (see
                                 * lens_rq_set), fewer for the disks there are (lens.c) */
#define LENS_RQ_SETS    (1u << LENS_RQ_SETS_LOG)
#define LENS_RQ_SETS_MIN 1024   /* the fewest: 2,048 ways, 144 KB */
#define LENS_MAX_DEVPRIO 256    /* (device, priority) slots, a power of two; fewer on many
                                 * CPUs (lens.c) */
#define LENS_MAX_DEVS   256     /* device slots, a power of two */
#define LENS_MAX_SUBMIT 2048    /* (tgid, device, priority) rows (LRU, per CPU; fewer on many CPUs: lens.c) */

/* Sampled timing: on a device whose requests come faster than the program's
 * lens_timed_rate a second (a const volatile in requests_tables.bpf.c, LENS_TIMED_RATE by
 * default), only 1 in 2^shift of them is timed (LENS_SHIFT_MAX at most); the choice is a
 * hash of the request's key, the same at each of its stages. Every figure a timed request
 * adds (stage counts, sums, histogram buckets, depth moments, scheduler counts) is
 * weighted by 2^shift, so they estimate all the requests and means and percentiles stay
 * those of a uniform sample. The counts that stay exact whatever the shift: the requests
 * issued, their depth in flight, completions, and the bytes per submitter. */
#define LENS_TIMED_RATE 16384
#define LENS_SHIFT_MAX  6
#define LENS_RATE_WIN   1024    /* requests issued per rate measurement (a power of two) */

struct lens_stage {
    __u64 count;
    __u64 sum_ns;
    __u64 hist[LENS_HIST];
};

/* The device and priority tables are open-addressed: a pair's slot is found by hashing
 * its key and probing the next LENS_PROBES slots, each slot holding its key (0: free), so a
 * lookup is an index computation and a few compares, inline, with no hash map helper call
 * (a hash map lookup cost about 175 ns a request on this kind of machine). */
#define LENS_PROBES     8
#define LENS_KEY_USED   (1ull << 63)
/* A device's key: LENS_KEY_USED | dev. A (device, priority) key: LENS_KEY_USED | dev << 16
 * | prio, prio being class << 13 | level (hint bits dropped). */
#define LENS_DP_KEY(dev, prio) (LENS_KEY_USED | (__u64)(dev) << 16 | (__u64)((prio) & 0xffff))

/* Per CPU (a per-CPU array: the completion, which fills it, adds to its own CPU's copy
 * without atomic operations or shared cache lines; the reader sums the CPUs' copies of a
 * key, which need not sit in the same slot on every CPU). The slots ever claimed on any
 * CPU are marked in lens_dp_used, so the reader looks up only those. */
struct lens_dp_val {
    __u64 key;                  /* LENS_DP_KEY; 0: free on this CPU */
    struct lens_stage st[LENS_NSTAGES];
    /* Moments of (depth at issue d, device time y in us) over completed requests issued
     * after the device's first_done_ns, when the depth count is whole: the reader sums
     * them over the device's priorities and regresses y on d. */
    __u64 n, sd, sdd, sy, sdy;
    __u64 timed;                /* completions timed, unweighted (the sample's size) */
};

/* One device, in the lens_devs table (global data: the reader sees it mapped, without a
 * system call). */
struct lens_dev_val {
    __u64 key;                  /* LENS_KEY_USED | dev; 0: a free slot */
    /* Requests seen issued (every one, timed or not), and those of them that left the
     * device: completed, requeued, or counted out after a missed completion. In flight:
     * issued - done. (Two counters, one atomic add a request each, where a count in
     * flight and a count issued took two at issue.) */
    __u64 issued;
    __u64 first_done_ns;        /* first completion of a request seen issued; 0: none yet */
    __u64 untracked;            /* completions of requests issued before the lens */
    /* Requests inserted into the scheduler and issued from it, by priority class (0 none,
     * 1 rt, 2 be, 3 idle): the difference is what the scheduler holds now. */
    __u64 sched_in[4], sched_out[4];
    /* The fastest device time of a request that moved data since the lens started: the
     * device's own service time, when at least one request found it free. 0: none yet. */
    __u64 min_dev_ns;
    __u64 rate_ns;              /* when issued last crossed a multiple of LENS_RATE_WIN */
    __u8  shift;                /* 1 in 2^shift of its requests is timed now */
    __u8  shift_lo;             /* the lower of the shift and the one before it, for a
                                 * while after a change: requests chosen under either
                                 * are looked up (a request keeps its choice) */
    __u8  lo_ticks;             /* rate measurements left before shift_lo = shift */
    __u8  stampless;            /* a request without a start time was seen: time all */
    __u32 pad;
    __u64 done;                 /* (see issued; last, apart from it: another CPU's) */
    /* Completions counted whose issue was not (a skipped program run, a request the
     * kernel stamped again at its start): found when the count in flight would fall
     * below the request being issued, which is at the device. In flight: issued - done
     * + lost. */
    __u64 lost;
};

/* The submits map's tgid for bios a kernel thread submitted (the flusher's writeback, a
 * journal thread, a filesystem's workers): no process has the id 0. */
#define LENS_SUBMIT_KERNEL 0u

struct lens_submit_key {
    __u32 tgid;                 /* the submitting thread group; LENS_SUBMIT_KERNEL */
    __u32 dev;                  /* the bio's device (a partition when the bio targets one) */
    /* The priority the bio carried (bi_ioprio: class << 13 | level, the hint dropped):
     * the request's own (io_uring sqe->ioprio, libaio IOCB_FLAG_IOPRIO) or, set by
     * submit_bio before the tracepoint, the submitter's (issue #35); 0 (class none) when
     * the kernel had set none. */
    __u32 prio;
};

/* The wbs map's value (bpf/lens_maps.h: kernel threads' bytes per dirtier). */
struct lens_count_val {
    __u64 bytes;
    __u64 bios;
};

struct lens_submit_val {
    __u64 bytes;                /* added at submission (block_bio_queue) */
    __u64 bios;
    /* Added at the completion of the timed requests whose first bio this row's bio was
     * (the lens saw it submitted: lens_rq.queue_ns): their time from submission to
     * completion, and their number, each weighted by 2^shift (sampled timing) like the
     * stage figures. Over an interval, wait_ns / interval is the submitter's mean
     * number of requests in flight on the device (Little's law), wait_ns / rqs their
     * mean latency (issue #35: the wait of an asynchronous submitter, which is not
     * iowait). Written by the completion, on its own CPU's copy (a row made there with
     * no bytes when the submission ran on another CPU). */
    __u64 wait_ns;
    __u64 rqs;
};


/* One entry per request in flight, from its first bio's submission to its completion,
 * claimed once and written in place after. Key: the address of the request's first bio
 * (rq->bio), which stays its first bio from submission to completion except after a
 * front merge (the entry is then found by following rq->bio->bi_next); a request
 * without a bio (a flush) is keyed by its own address. Bios and requests are distinct
 * objects: the two kinds of key never collide.
 *
 * The entries live in an array used as a 2-way set-associative cache (the set: a hash of
 * the key), not in a hash map: a lookup is an index computation, without a lock or a
 * helper call, and the memory is fixed whatever the number of requests ever made. A
 * request that finds both ways of its set taken evicts the entry with the older last
 * event (a request whose end was missed, typically); an evicted request is taken out of
 * its device's scheduler counts (and, without a start time, its depth count) and counted
 * in lens_dropped. Only timed requests have an entry (sampled timing, above). */
struct lens_rq {
    __u64 key;                  /* 0: the way is free */
    __u64 queue_ns;             /* its first bio submitted; 0: unknown */
    __u64 getrq_ns;             /* request allocated; 0: unknown */
    __u64 insert_ns;            /* inserted into the scheduler; 0: never */
    __u64 issue_ns;             /* issued; 0: not yet */
    __u64 last_ns;              /* its last event, for choosing what to evict */
    __u32 dev;
    __u32 depth;                /* in flight at issue, itself included */
    /* Its first bio's submitter and the device the bio targeted (a partition, maybe),
     * the submits map's key but for the priority (sprio): set with queue_ns, for the
     * completion to add its latency to that row. */
    __u32 tgid;
    __u32 part;
    __u16 prio;                 /* the request's (class << 13 | level) */
    __u16 sprio;                /* its first bio's at submission (lens_submit_key.prio) */
    __u8  depth_whole;          /* 1: the device's depth count was whole at issue */
    __u8  shift;                /* its weight is 2^shift (lens_dev_val.shift when sampled) */
    __u8  counted;              /* in its device's in-flight count by this entry (no start
                                 * time) */
    __u8  pad;
};

struct lens_rq_set {            /* key: __u32 set index */
    struct lens_rq way[2];
};

#endif
