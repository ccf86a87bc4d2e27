/* lens_maps.h: the layout of the BPF lens's maps, shared by the BPF program
 * (src/bpf/kern/iotriage.bpf.c) and its reader (src/source/lens.c).
 *
 * Contract: only fixed-width __u* types, no pointers, explicit padding, so that the
 * BPF object (compiled with -target bpf) and the host compiler agree byte for byte.
 * Every counter is cumulative since the lens was loaded; readers take differences.
 * Times are CLOCK_MONOTONIC nanoseconds (bpf_ktime_get_ns). Device numbers are the
 * kernel's internal dev_t: major << 20 | minor.
 */
#ifndef IOTRIAGE_LENS_MAPS_H
#define IOTRIAGE_LENS_MAPS_H

#define LENS_HIST       32      /* log2 buckets of microseconds: [0] < 1 us, [k] 2^(k-1).. */
#define LENS_NSTAGES    4
#define LENS_ST_TAG     0       /* bio submitted -> request allocated (waiting for a tag) */
#define LENS_ST_SCHED   1       /* inserted into the scheduler -> issued to the driver */
#define LENS_ST_DEVICE  2       /* issued -> completed */
#define LENS_ST_TOTAL   3       /* bio submitted -> completed */

/* Map sizes: bounded, whatever the number of requests ever made. */
#define LENS_MAX_TASKS  16384   /* threads with a wait recorded (LRU) */
#define LENS_MAX_PROCS  8192    /* thread groups (LRU) */
#define LENS_MAX_BIOS   16384   /* bios submitted, not yet turned into a request (LRU) */
#define LENS_MAX_RQS    16384   /* requests in flight (LRU) */
#define LENS_MAX_DEVPRIO 1024   /* (device, priority) pairs */
#define LENS_MAX_DEVS   256
#define LENS_MAX_SUBMIT 8192    /* (tgid, device) pairs (LRU); filled only with lens_submits */

struct lens_wait {              /* key: tid (tasks) or tgid (procs) */
    __u64 wait_ns;              /* time blocked with in_iowait set, finished waits */
    __u64 waits;                /* finished waits */
    __u64 start_ns;             /* a wait in progress began here; 0: none */
    __u32 tgid;
    __u32 pad;
};

struct lens_stage {
    __u64 count;
    __u64 sum_ns;
    __u64 hist[LENS_HIST];
};

struct lens_dp_key {
    __u32 dev;
    __u32 prio;                 /* class << 13 | level (hint bits dropped) */
};

struct lens_dp_val {
    struct lens_stage st[LENS_NSTAGES];
};

struct lens_dev_val {           /* key: __u32 dev */
    __s64 inflight;             /* requests seen issued and not completed */
    __u64 first_done_ns;        /* first completion of a request seen issued; 0: none yet */
    __u64 issued;               /* requests seen issued */
    __u64 depth_sum;            /* sum over them of the depth at issue (itself included) */
    /* Moments of (depth at issue d, device time y in us) over completed requests issued
     * after first_done_ns, when the depth count is whole: the reader regresses y on d. */
    __u64 n, sd, sdd, sy, sdy;
    __u64 untracked;            /* completions of requests issued before the lens */
    /* Requests inserted into the scheduler and issued from it, by priority class (0 none,
     * 1 rt, 2 be, 3 idle): the difference is what the scheduler holds now. */
    __u64 sched_in[4], sched_out[4];
    /* The fastest device time of a request that moved data since the lens started: the
     * device's own service time, when at least one request found it free. 0: none yet. */
    __u64 min_dev_ns;
};

struct lens_submit_key {
    __u32 tgid;
    __u32 dev;                  /* the bio's device (a partition when the bio targets one) */
};

struct lens_submit_val {
    __u64 bytes;
    __u64 bios;
};

struct lens_rq {                /* key: request address */
    __u64 queue_ns;             /* its first bio submitted; 0: unknown */
    __u64 getrq_ns;             /* request allocated; 0: unknown */
    __u64 insert_ns;            /* inserted into the scheduler; 0: never */
    __u64 issue_ns;             /* issued; 0: not yet */
    __u32 dev;
    __u32 prio;
    __u32 depth;                /* in flight at issue, itself included */
    __u32 depth_whole;          /* 1: the device's depth count was whole at issue */
};

struct lens_bio {               /* key: bio address */
    __u64 queue_ns;
    __u64 getrq_ns;
};

#endif
