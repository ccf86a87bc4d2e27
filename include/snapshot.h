/* SPDX-License-Identifier: GPL-2.0-or-later */
/* snapshot.h: one moment of the machine, as every source saw it.
 *
 * The sampler owns long-lived handles (directory fds, the name caches, the netlink
 * socket). sampler_take() fills a new snapshot from them; after that the snapshot is only
 * read (delta.h, out/) and finally freed with snapshot_free(). snapshot_reduce() cuts a
 * snapshot down to what delta_compute reads of a previous one (its task array replaced by
 * `hist`, its tdevs freed): the pipeline (pipeline.h) does that before it takes the next
 * one, so that two whole task arrays are never alive at once.
 * Each source's failure is recorded in the snapshot next to its data, so outputs can say
 * "unavailable, because ..." instead of printing zeros.
 */
#ifndef IOTRIAGE_SNAPSHOT_H
#define IOTRIAGE_SNAPSHOT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "source/blkstack.h"
#include "source/blockdev.h"
#include "source/diskstats.h"
#include "source/mounts.h"
#include "source/lens.h"
#include "source/procs.h"
#include "source/psi.h"
#include "source/swaps.h"

struct dev_sample {
    struct diskstats_row ds;
    struct blockdev_info bd;
    int bd_err;                      /* 0, or -errno reading sysfs for it */
    struct blkstack stack;           /* its slaves/ and holders/ (source/blkstack.h):
                                      * unknown when sysfs could not say, and in a replay
                                      * of a recording made before they were kept */
};

#define FDMAP_RESCAN_S 5.0           /* seconds between two scans of a process's fds */
/* The same for a process whose I/O counters have not moved since its last scan
 * (source/fdmap.h): it read and wrote nothing through any file, so what it opened since
 * changes none of its rates; once it reads or writes, its counters move and it is due
 * again after FDMAP_RESCAN_S. Until then its DEV column, an ioprio warning about a device
 * it has not used yet, and the devices its waiting is laid at (a task blocked on a read
 * that has not returned has not counted it yet) may be late. At 30 s, 10,000 idle processes
 * cost 8 ms of scans a second, more than a refresh's other work for them. */
#define FDMAP_IDLE_RESCAN_S 300.0

/* The block devices a task does I/O to (source/fdmap.h), as indices into snapshot.devs:
 * whole devices that own a request queue with a scheduler. */
#define TASK_DEVS_MAX 16
struct task_devs {
    int      err;                    /* 0, or -errno: the set is unknown (EACCES...) */
    bool     known;                  /* attribution ran for this task */
    bool     truncated;              /* the set may be incomplete (source/fdmap.h) */
    bool     buffered_writer;        /* a regular file open for writing without O_DIRECT */
    /* The BPF lens saw this process's bios over the interval (process mode, the lens on,
     * a previous reading): lens_bytes and from_lens are the submitted truth. */
    bool     lens;
    /* lens_prio's entries for it are known (requests_by_prio): with `lens`, except in a
     * recording made before them */
    bool     lens_prio;
    /* its requests_wait (task_lens_async) is known: with `lens`, except in a recording
     * made before it */
    bool     lens_wait;
    uint8_t  n;
    /* 1 + the snapshot's netfs[] entry of a filesystem with no block device (nfs, fuse...)
     * on which it has a file open, the first found; 0: none (source/fdmap.h fd_devs.netfs;
     * not in a replay) */
    uint8_t  netfs;
    uint16_t idx[TASK_DEVS_MAX];
    uint16_t buffered;               /* bit k: idx[k] receives writes through the page cache */
    uint16_t from_files;             /* bit k: idx[k] found through its open files */
    uint16_t from_lens;              /* bit k: the lens saw it submit bios to idx[k] */
    /* Its I/O reaches idx[k] (bit k of via) through a stack of bio-based devices (dm,
     * md) whose top, the device its file is on or it submitted to, is device via_top - 1
     * (0: none): the path a verdict names. One top per task, the first found. */
    uint16_t via;
    uint16_t via_top;
    /* 1 + its row of the snapshot's lens_bps (task_lens_bps), when `lens` and it
     * submitted anything; 0: none. Apart from this struct because most tasks have none:
     * 16 doubles each were most of a task's attribution memory (docs/performance.md). */
    uint32_t lens_row;
};

/* Where a task's device list came from (docs/json.md "devices_from"): NULL when it has no
 * device. */
struct snapshot;

/* Bytes a second td submitted to its device idx[k] per the lens; 0 when it submitted
 * none there (or the lens did not see the interval: td->lens says which). */
double task_lens_bps(const struct snapshot *s, const struct task_devs *td, unsigned k);

/* td's row of lens rates in s, made (zeroed) when it has none. */
double *task_lens_row(struct snapshot *s, struct task_devs *td);

/* The wait of a task's asynchronous requests on one device over the interval, as the
 * lens timed them from submission to completion (issue #35; docs/devices.md "The wait
 * of an asynchronous submitter"): their mean number in flight (Little's law), and their
 * mean latency in ms (NAN: none of its requests completed there). */
struct task_async {
    double in_flight;
    double await_ms;
};

/* td's entry for device k (a row made when it has none: in_flight 0, await_ms NAN). */
struct task_async *task_lens_async(struct snapshot *s, struct task_devs *td, unsigned k);
/* The same, read only: NULL when td has no row (the lens saw nothing of it) or k is out
 * of range. */
const struct task_async *task_lens_async_of(const struct snapshot *s, const struct task_devs *td,
                                            unsigned k);

/* Bytes a second a task submitted to its device idx[k] at one priority, as the lens saw
 * its bios carry it (issue #35: an io_uring or libaio request may carry its own, not the
 * task's): the entries of snapshot.lens_prio, in the order of their rows. */
struct task_prio_bps {
    uint32_t row;                    /* the task's lens_row */
    uint16_t prio;                   /* class << 13 | level (idle at level 0); 0: none */
    uint8_t  k;                      /* its device idx[k] */
    /* Where on the stack above idx[k] its bios were submitted: hops from the device it
     * submitted to down to the disk (0: the disk or one of its partitions; 2: dm-1 over
     * dm-0 over the disk), TASK_DEPTH_UNKNOWN in a replay (recordings keep what
     * task_lens_prios gives: the lowest level's) */
    uint8_t  depth;
    double   bps;
};
#define TASK_DEPTH_UNKNOWN 0xff

/* Adds bps to td's entry for device k and priority prio (made when missing; idle at any
 * level is one entry, as lens_prio_name prints it). Tasks are added in the order of
 * their rows (take_task_devs, layout_tasks). */
void task_lens_prio_add(struct snapshot *s, struct task_devs *td, unsigned k, unsigned prio,
                        double bps);
/* The same at a known depth on the stack (task_prio_bps.depth): each depth its own entry. */
void task_lens_prio_add_at(struct snapshot *s, struct task_devs *td, unsigned k, unsigned depth,
                           unsigned prio, double bps);

/* td's bytes for device k by priority at the lowest depth it has any (the levels above
 * are the same bytes on their way down: task_devs_lens) (at most max into out, depth
 * TASK_DEPTH_UNKNOWN); returns how many priorities there are. */
size_t task_lens_prios(const struct snapshot *s, const struct task_devs *td, unsigned k,
                       struct task_prio_bps *out, size_t max);
/* td's entries for device k submitted at one depth above it (at most max into out);
 * returns how many there are. */
size_t task_lens_prios_at(const struct snapshot *s, const struct task_devs *td, unsigned k,
                          unsigned depth, struct task_prio_bps *out, size_t max);

const char *task_devs_source(const struct task_devs *td);

/* ---- Filesystems and the space deleted-but-open files hold (issue #20) ---- */

/* Used-bytes samples a filesystem carries (this one last), for the steadiness rule of
 * its time to full (delta.h: FS_STEADY_INTERVALS). */
#define FS_HIST 4

/* A process holding a deleted file open: one per (process, fd); a child that inherited
 * the descriptor is a holder of its own. */
struct fs_holder {
    pid_t    pid;                    /* the process (tgid) */
    int      fd;
    unsigned flags;                  /* open flags (fdinfo) */
    bool     flags_known;
    bool     append;                 /* O_APPEND: after a truncate it writes at the new end */
    char     comm[TASK_COMM_MAX];    /* "" when the process is not in the task list */
    unsigned long long start_ticks;  /* its start time (task list), for fsfix_target; 0
                                      * when not listed */
};

/* A regular file with no name left that processes hold open, grouped by (dev, ino). */
struct fs_deleted_file {
    dev_t    dev;
    ino_t    ino;
    uint64_t size;                   /* st_size now (re-read this refresh) */
    uint64_t blocks_bytes;           /* st_blocks x 512 now: what it holds on the disk */
    char    *path;                   /* readlink of a holder's fd, "... (deleted)" */
    struct fs_holder *holders;       /* by pid, then fd */
    size_t   nholders;
};

struct fs_sample {
    struct fs_mount fs;              /* mount, device, statvfs figures (source/mounts.h) */
    int      dev_idx;                /* its block device's row in devs (partition, dm, loop
                                      * or disk); -1: tmpfs or not listed */
    int      disk_idx;               /* the whole disk of that row (its scheduler); -1 */
    bool     deleted_known;          /* processes' fds were scanned (not with no_tasks) */
    bool     deleted_complete;       /* ... all of them: no -p filter, and no process whose
                                      * fds we may not read (not root). Else the figures are
                                      * a lower bound: what the readable processes hold */
    uint64_t deleted_bytes;          /* sum of blocks_bytes of del[] */
    struct fs_deleted_file *del;     /* largest first */
    size_t   ndel;
    unsigned nhist;                  /* 1..FS_HIST used-bytes samples, oldest first; the
                                      * last is this snapshot's */
    double   hist_mono[FS_HIST];
    uint64_t hist_used[FS_HIST];
};

enum delayacct_state { DA_UNKNOWN = -1, DA_OFF = 0, DA_ON = 1 };

/* What delta_compute reads of a task of the previous snapshot (delta.h), 64 bytes
 * instead of a whole task_sample. */
struct task_hist {
    unsigned long long start_ticks;
    uint64_t read_bytes, write_bytes, cancelled_write_bytes;
    uint64_t blkio_delay_ns, swapin_delay_ns, blkio_count;
    double   delay_at_s;             /* task_delay.at_s */
    pid_t    id;
    bool     io_ok;                  /* io_err was 0 */
    bool     delay_valid;
};
/* What task_delta reads of one task. */
struct task_hist task_hist_of(const struct task_sample *t);

/* The texts of the snapshot's own notes (sys_note, proc_note, hidden_note): what sysfs or
 * procfs could not say, and why (printf formats). */
#define NOTE_SYS_ATTR   "%s %s unreadable (%s), and %zu more devices: their scheduler, nr_requests " \
                        "or inflight are unknown (null), not absent"
#define NOTE_PROC_SUBSET "%s shows processes only (a procfs mounted subset=pid): /proc/diskstats, " \
                         "pressure/ and kernel.task_delayacct cannot be read there; devices, PSI " \
                         "and delay accounting are unknown, not missing from the kernel"
#define NOTE_HIDEPID    "%ld of the kernel's %ld tasks are hidden: /proc is mounted hidepid=%s and " \
                        "uid %u may not see other users' processes (root or the gid= group can)"
#define NOTE_SYS_EMPTY  "no class/block under the sysfs root (%s: empty or not mounted?): schedulers " \
                        "and nr_requests are unknown (null), not absent"

#define SNAP_PIDS_MISSING_MAX 8

struct cgroup_set;                   /* cgroups.h */

struct snapshot {
    double mono;                     /* CLOCK_MONOTONIC seconds when taken */
    double wall;                     /* epoch seconds, for the timestamp only */
    bool   threads;                  /* tasks are threads, not processes */
    long   clk_tck;                  /* start_ticks per second */

    int      diskstats_err;          /* 0 or -errno */
    unsigned diskstats_bad;          /* lines that did not parse */
    struct dev_sample *devs;
    size_t   ndevs;

    struct psi_sample psi[PSI_NRES];
    /* The devices swap lives on (source/swaps.h); none read with a --proc-root, whose
     * names are not this machine's. Not recorded: a replay has none. */
    struct swap_area swaps[SWAPS_MAX];
    unsigned nswaps;

    int    procs_err;
    struct task_sample *tasks;       /* sorted by id */
    struct task_devs *tdevs;         /* per task, same order; NULL when not attributed */
    /* Bytes a second each task submitted to its device idx[k] (its partitions added up)
     * between the lens's two readings: the rows task_devs.lens_row points at. */
    double (*lens_bps)[TASK_DEVS_MAX];
    /* Their asynchronous wait, row for row (task_lens_async). */
    struct task_async (*lens_async)[TASK_DEVS_MAX];
    size_t nlens_bps;
    /* The same bytes by priority (task_prio_bps), sorted by row. */
    struct task_prio_bps *lens_prio;
    size_t nlens_prio;
    size_t ntasks;
    bool   tasks_shared;             /* tasks from procs_read: their strings are shared
                                      * (procs_release); else malloc'd (procs_free) */
    /* Set instead of tasks (NULL, ntasks 0) once the sampler took the next snapshot:
     * sorted by id like tasks were. */
    struct task_hist *hist;
    size_t nhist;

    /* -p ids that match no listed task: tgid 0 when no such task exists, else the process
     * a thread id belongs to (listed with -P, or as -p TGID). */
    struct pid_missing { pid_t id, tgid; } pids_missing[SNAP_PIDS_MISSING_MAX];
    unsigned npids_missing;

    enum delayacct_state delayacct;  /* kernel.task_delayacct */
    /* Tasks started at or after this many ticks since boot carry delay data for sure
     * (delayacct on at boot: 0; switched on while we watched: that moment). -1 when
     * unknown: then only tasks whose counters show data are trusted. */
    long long delayacct_since_ticks;
    /* Why sysfs could not say what a device's queue is ("" when it could): an attribute
     * that exists but cannot be read (blockdev_info.attr_err), or no class/block at all
     * (an empty or unmounted /sys). Then scheduler/nr_requests are unknown, not absent. */
    char   sys_note[320];
    /* Set when the procfs root shows processes only (mounted subset=pid): diskstats, PSI
     * and the delayacct sysctl are then absent from it, not from the kernel, and their
     * ENOENT must not be read as "kernel without ..." or "exited". "" otherwise. */
    char   proc_note[320];
    /* Set when the procfs hides other users' processes from us (hidepid=1/2, and we
     * cannot see through it): how many tasks the kernel has that the list lacks. "" when
     * nothing is hidden or the list was restricted on purpose (-p). */
    char   hidden_note[320];
    int    taskstats_err;            /* 0, or -errno of the whole query (EPERM...) */
    char   taskstats_msg[192];       /* why delays are unavailable, when they are */

    /* The cgroup lens (cgroups.h): each task's cgroup and the cgroups that hold them;
     * NULL when tasks are not sampled. Kept when the snapshot is reduced. */
    struct cgroup_set *cgroups;
    bool   fs_taken;                 /* filesystems were sampled (false in a replayed frame
                                      * of a recording made without them) */
    int    mounts_err;               /* 0 or -errno reading mountinfo */
    struct fs_sample *fss;           /* in mountinfo order */
    size_t nfss;
    /* The mounted filesystems with no block device served by a daemon or another machine
     * (source/mounts.h mount_is_netfs: nfs, cifs, fuse, 9p...), one per superblock, that
     * task_devs.netfs names; taken with the tasks' devices; none in a replay. */
    struct mount_entry *netfs;
    size_t nnetfs;
    /* The BPF lens (source/lens.h): cumulative counters since it was attached. lens_on
     * when this snapshot carries a reading; otherwise lens_msg says why the lens is off
     * ("--no-bpf", "not root and no CAP_BPF+CAP_PERFMON"...; empty in a replay). The
     * reading survives the reduction of a previous snapshot (delta_compute reads it). */
    bool   lens_on;
    bool   lens_pending;             /* off in this snapshot only because it is still to
                                      * be loaded (sampler_opts.defer_lens): the next
                                      * interval has its figures from its attachment */
    char   lens_msg[160];
    char   lens_loader[8];           /* which loader loaded the lens (source/bpfload.h):
                                      * "light" or "libbpf" when lens_on; "" when off, and
                                      * in a replay of a recording that did not say */
    struct lens_reading lens;
    /* Where the task list and its per-task figures came from (source/taskiter.h):
     * "bpf" (the task iterator) or "proc" (/proc files and taskstats), with tasks_msg
     * saying why the iterator did not serve; both empty when no tasks were sampled and
     * in a replay. Not in the sample format yet: a key there must be read back by the
     * replay (every recorded sample is written again byte for byte). */
    char   tasks_from[8];
    char   tasks_msg[160];
};

struct sampler_opts {
    bool threads;
    const pid_t *pids;               /* only these (pid or tgid), when npids > 0 */
    size_t npids;
    const char *proc_root;           /* "/proc" unless testing */
    const char *sys_root;            /* "/sys" unless testing */
    bool no_tasks;                   /* skip processes entirely (device-only tests) */
    bool no_bpf;                     /* do not load the BPF lens (--no-bpf); it is also not
                                      * loaded when proc_root or sys_root is set (tests) */
    bool defer_idle_scans;           /* the first snapshot leaves out the open-file scans of
                                      * processes that never moved a byte (their devices
                                      * unknown until the second): for a first frame that
                                      * must come fast (the screen, the exporter's first
                                      * page); off for whoever reads one snapshot as the
                                      * truth (audit) or prints only whole intervals */
    bool defer_lens;                 /* the BPF lens is loaded by sampler_load_lens, once
                                      * the first frame is out, not by sampler_open: its
                                      * load (the verifier, 100-300 ms of CPU) does not
                                      * hold up the first frame, and the first interval's
                                      * lens figures cover it from the attachment on */
};

struct sampler;

int  sampler_open(struct sampler **out, const struct sampler_opts *opts, char *err, size_t errlen);
/* Load the lens deferred by sampler_opts.defer_lens, if it is still to be loaded; nothing
 * otherwise. */
void sampler_load_lens(struct sampler *s);
/* Whether sampler_load_lens has a lens still to load. */
bool sampler_lens_deferred(const struct sampler *s);
/* Take a snapshot now. Never fails as a whole: each source records its own error. */
void sampler_take(struct sampler *s, struct snapshot *out);
void sampler_close(struct sampler *s);

void snapshot_free(struct snapshot *snap);
/* Keep only what delta_compute reads of a previous snapshot; nothing of its tasks (nor of
 * a result computed from it) may be read after. */
void snapshot_reduce(struct snapshot *snap);

/* One line for a -p id that matched nothing: "-p 123: no such process", "-p 124: a thread
 * of process 120: use -P, or -p 120". Returns its length. */
size_t snapshot_pid_note(char *buf, size_t n, const struct pid_missing *m);
/* The same text back (a recording's note); false when it is not such a line. */
bool snapshot_pid_note_parse(const char *text, struct pid_missing *m);
/* Free an array of filesystems with their strings and deleted files (snapshot_free calls
 * it for snap->fss). */
void fs_samples_free(struct fs_sample *v, size_t n);

/* Find a device by name; NULL when absent. */
const struct dev_sample *snapshot_dev(const struct snapshot *snap, const char *name);

/* The blkstack_lookup_fn over a snapshot's devices (ctx: the snapshot): a device's
 * stack by name, for blkstack_walk, blkstack_path and blkstack_line. */
const struct blkstack *snapshot_dev_stack(const void *snap, const char *name);

/* The whole disks with a scheduler to choose at the bottom of bio-based device dev's
 * stack (a partition below stands for its disk), nearest first, each once: what serves
 * dev's I/O, and what a scheduler switch offered on dev switches. Names are the
 * snapshot's. Returns how many (at most max); 0 for a device that stacks on nothing. */
size_t snapshot_disks_below(const struct snapshot *snap, const char *dev, const char **out, size_t max);

/* Whether d is a bio-based layer over disks (dm, md: no scheduler of its own, disks with
 * one below it): its I/O is served, and judged, at those disks (snapshot_disks_below). */
bool snapshot_dev_is_layer(const struct snapshot *snap, const struct dev_sample *d);

/* Where whole disk `disk` is met below device top: the device on top's stack that is the
 * disk or one of its partitions (dm over sda1 reaches sda through sda1), its name (the
 * snapshot's), and in *depth its hops below top. NULL when the disk is not below top
 * within the walk's bounds (a top that is the disk, or its partition, is not a stack). */
const char *snapshot_stack_reach(const struct snapshot *snap, const char *top, const char *disk,
                                 unsigned *depth);

#endif
