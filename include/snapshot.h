/* snapshot.h: one moment of the machine, as every source saw it.
 *
 * The sampler owns long-lived handles (directory fds, the name caches, the netlink
 * socket). sampler_take() fills a new snapshot from them; after that the snapshot is only
 * read (delta.h, out/) and finally freed with snapshot_free(), with one exception: when
 * the same sampler takes the next snapshot (into another struct), the one before is
 * reduced to what delta_compute reads of a previous snapshot (its task array replaced by
 * `hist`, its tdevs freed), so that two whole task arrays are never alive at once. A
 * caller keeps the previous snapshot for delta_compute and frees it after; it must not
 * read its tasks (nor a result computed from it) once the next one is taken.
 * Each source's failure is recorded in the snapshot next to its data, so outputs can say
 * "unavailable, because ..." instead of printing zeros.
 */
#ifndef IOTRIAGE_SNAPSHOT_H
#define IOTRIAGE_SNAPSHOT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "source/blockdev.h"
#include "source/diskstats.h"
#include "source/lens.h"
#include "source/procs.h"
#include "source/psi.h"

struct dev_sample {
    struct diskstats_row ds;
    struct blockdev_info bd;
    int bd_err;                      /* 0, or -errno reading sysfs for it */
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
    uint8_t  n;
    uint16_t idx[TASK_DEVS_MAX];
    uint16_t buffered;               /* bit k: idx[k] receives writes through the page cache */
};

enum delayacct_state { DA_UNKNOWN = -1, DA_OFF = 0, DA_ON = 1 };

/* What delta_compute reads of a task of the previous snapshot (delta.h), 64 bytes
 * instead of a whole task_sample. */
struct task_hist {
    unsigned long long start_ticks;
    uint64_t read_bytes, write_bytes, cancelled_write_bytes;
    uint64_t blkio_delay_ns, swapin_delay_ns, blkio_count;
    pid_t    id;
    bool     io_ok;                  /* io_err was 0 */
    bool     delay_valid;
};
/* What task_delta reads of one task. */
struct task_hist task_hist_of(const struct task_sample *t);

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

    int    procs_err;
    struct task_sample *tasks;       /* sorted by id */
    struct task_devs *tdevs;         /* per task, same order; NULL when not attributed */
    size_t ntasks;
    bool   tasks_shared;             /* tasks from procs_read: their strings are shared
                                      * (procs_release); else malloc'd (procs_free) */
    /* Set instead of tasks (NULL, ntasks 0) once the sampler took the next snapshot:
     * sorted by id like tasks were. */
    struct task_hist *hist;
    size_t nhist;
    unsigned long serial;            /* which sampler_take filled it (0: none) */

    enum delayacct_state delayacct;  /* kernel.task_delayacct */
    /* Tasks started at or after this many ticks since boot carry delay data for sure
     * (delayacct on at boot: 0; switched on while we watched: that moment). -1 when
     * unknown: then only tasks whose counters show data are trusted. */
    long long delayacct_since_ticks;
    int    taskstats_err;            /* 0, or -errno of the whole query (EPERM...) */
    char   taskstats_msg[192];       /* why delays are unavailable, when they are */

    /* The BPF lens (source/lens.h): cumulative counters since it was attached. lens_on
     * when this snapshot carries a reading; otherwise lens_msg says why the lens is off
     * ("--no-bpf", "not root and no CAP_BPF+CAP_PERFMON"...; empty in a replay). The
     * reading survives the reduction of a previous snapshot (delta_compute reads it). */
    bool   lens_on;
    char   lens_msg[160];
    struct lens_reading lens;
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
};

struct sampler;

int  sampler_open(struct sampler **out, const struct sampler_opts *opts, char *err, size_t errlen);
/* Take a snapshot now. Never fails as a whole: each source records its own error. */
void sampler_take(struct sampler *s, struct snapshot *out);
void sampler_close(struct sampler *s);

void snapshot_free(struct snapshot *snap);

/* Find a device by name; NULL when absent. */
const struct dev_sample *snapshot_dev(const struct snapshot *snap, const char *name);

#endif
