/* SPDX-License-Identifier: GPL-2.0-or-later */
/* source/fdmap.h: which block devices each process does I/O to, judged from its open files.
 *
 * The question behind it: does the scheduler of the device a process's I/O lands on read
 * that process's I/O priority? So the answer is a set of devices that own a request queue
 * with a scheduler to choose, reached from the process's open files:
 *
 *   /proc/PID/fd/N   regular file or directory -> st_dev (its filesystem's device);
 *                    block device opened raw   -> st_rdev;
 *                    anything on an anonymous device (major 0: tmpfs, overlay, btrfs,
 *                    fuse, nfs, pipes, sockets...) reaches no block device we can name.
 *   sysfs            partition -> its disk; dm/md -> each slave (NVMe multipath -> each
 *                    path); loop -> itself and the device holding its backing file,
 *                    whose path is stat'ed; kept: a device whose queue/scheduler
 *                    offers a choice (a bracketed entry, "[none]" included); bio-based
 *                    devices (zram, most dm) only pass through to what they stack on.
 *
 * A thread group whose leader has exited (its /proc/PID/fd reads empty) is read through
 * a live thread of it, /proc/PID/task/TID/fd (the caller names it: fdmap_get_io).
 *
 * What it cannot see: I/O through memory mappings without an open fd (executables,
 * libraries, mmap after close), and anything below a filesystem with an anonymous st_dev:
 * btrfs (one per subvolume), overlayfs (containers), ZFS, FUSE over a block device
 * (fuseblk) all hide the disk they are on.
 *
 * Nothing here asks a FUSE daemon or an NFS server (statx with AT_STATX_DONT_SYNC and an
 * empty mask), except the path walk of a loop device's backing file, done once per loop
 * device and cache lifetime: a hung daemon serving that path would hang the caller.
 *
 * Costs (measured on a 2-vCPU VM, kernel 6.18, 1,000 sleeping processes): a scan is one
 * open and readdir of /proc/PID/fd (about 8 us), one statx per fd through the /proc link
 * (about 1.6 us), an lstat of the link for regular files on a reported device until a
 * buffered writer is found, and an fdinfo read (about 4.4 us) only for one open for
 * writing: 25 us for a process with 7 fds, 39 us with 9 fds of which one is a log file.
 * The first scan of a process ever costs up to 1.5 times that (procfs builds the fd
 * dentries). A cached answer is a hash lookup: 0.01 us. Processes are rescanned when
 * their answer is older than rescan_s; sysfs resolutions of a dev_t live as long as the
 * device's sysfs directory (checked by inode at most once per rescan_s) or until
 * fdmap_invalidate_devices().
 *
 * A caller that knows a process's I/O counters passes a signature of them (fdmap_get_io):
 * a process due for its rescan whose signature has not moved since its last scan did no
 * I/O through any file in between, so its set is kept until idle_rescan_s
 * (fdmap_set_idle_rescan) has passed since that scan. At 10,000 idle processes this
 * spares about 2,000 scans (50 ms) a second with rescan_s 5.
 *
 * The same scan notes every regular file open with no name left (st_nlink 0, from the
 * statx it makes anyway: no extra system call) for fdmap_deleted: what the space view
 * (snapshot.h: fs_sample.del) groups by file. They are as fresh as the process's answer.
 *
 * Memory is bounded: at most max_procs process entries (80 bytes each, plus a whole
 * struct fd_devs for a process reaching more than two devices) and
 * FDMAP_MAX_CACHED_DEVS device entries. When the process table is full, answers are still
 * correct but computed without being stored (stats.uncached counts them): call
 * fdmap_prune() every refresh.
 *
 * Not thread-safe: one fdmap per sampling thread. Nothing here prints or exits.
 */
#ifndef IOTRIAGE_SOURCE_FDMAP_H
#define IOTRIAGE_SOURCE_FDMAP_H

#include <linux/types.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "bpf/taskiter.h"
#include "source/blkstack.h"

#define FDMAP_MAX_DEVS          16     /* devices per process (and per resolution) */
#define FDMAP_MAX_DEPTH         BLKSTACK_MAX_DEPTH   /* stacking hops below the device a
                                                      * file is on */
#define FDMAP_MAX_FDS           4096   /* fds examined per process and scan */
#define FDMAP_MAX_CACHED_DEVS   256    /* distinct dev_t resolutions kept; then all dropped */
#define FDMAP_DEFAULT_MAX_PROCS 32768
#define FDMAP_BULK_AFTER        32     /* the sampler's: /proc scans in a refresh before
                                        * the bulk source is asked (fdmap_set_bulk) */
#define FDMAP_MAX_NETFS         4      /* watched filesystems noted per process */
#define FDMAP_MAX_WATCH         16     /* filesystems fdmap_set_netfs watches */

struct fd_devs {
    int      err;                   /* 0, or -errno: the set is unknown (ndevs is 0).
                                     * -EACCES: not permitted to look; -ENOENT/-ESRCH:
                                     * the process exited. */
    unsigned ndevs;
    bool     truncated;             /* the set may be larger than devs[]: the array was
                                     * full, the process had more than FDMAP_MAX_FDS fds,
                                     * or a stack was deeper than FDMAP_MAX_DEPTH */
    bool     buffered_writer;       /* a regular file (or raw block device) on one of
                                     * devs[] is open for writing without O_DIRECT: its
                                     * writes go through the page cache and reach the disk
                                     * from flusher threads, without this process's
                                     * I/O priority */
    dev_t    devs[FDMAP_MAX_DEVS];  /* queue-owning whole devices, ascending */
    unsigned nbuffered;
    dev_t    buffered_devs[FDMAP_MAX_DEVS]; /* those of devs[] reached by a buffered writer
                                             * (a subset: a process may write one device
                                             * through the page cache and another with
                                             * O_DIRECT) */
    /* Devices of devs[] reached through stacked devices (dm, md, multipath) rather than
     * directly or through a partition: via_top[k] is the device the file is on (the top
     * of the stack), via_disk[k] the one of devs[] it reaches; the first file found
     * for a disk names it. For the path a verdict names (source/blkstack.h). */
    unsigned nvia;
    dev_t    via_disk[FDMAP_MAX_DEVS], via_top[FDMAP_MAX_DEVS];
    /* The filesystems of fdmap_set_netfs's set (no block device: nfs, cifs, fuse...) on
     * which it has a regular file or directory open, their st_dev, in the order found:
     * where a wait with no block I/O of its own may be (verdicts.md
     * "io-pressure-not-block"). */
    unsigned nnetfs;
    dev_t    netfs[FDMAP_MAX_NETFS];
};

struct fdmap_stats {
    unsigned long long scans;       /* fd directories read */
    unsigned long long hits;        /* answers from the cache */
    unsigned long long idle_skips;  /* of those, rescans skipped: the I/O signature had not
                                     * moved */
    unsigned long long uncached;    /* answers not stored: the process table was full */
    unsigned long long fds;         /* fds examined (statx calls) */
    unsigned long long fdinfo_reads;
    unsigned long long deleted;     /* deleted-but-open fds noted */
    unsigned long long bulk_runs;   /* times the bulk source was asked */
    unsigned long long bulk_scans;  /* of scans, those answered from its records */
    unsigned long long resolves;    /* dev_t resolutions through sysfs */
    unsigned long long dev_checks;  /* cached resolutions revalidated */
    unsigned long long dev_drops;   /* cached resolutions found stale and redone */
    size_t procs;                   /* process entries held */
    size_t devs;                    /* device entries held */
    size_t bytes;                   /* heap held by the cache */
};

/* A regular file open in a process with no name left (st_nlink 0): deleted while open
 * (a log rotated away under its writer), made with O_TMPFILE, or a memfd (those live on
 * the kernel's internal tmpfs, whose st_dev no mounted filesystem has). */
struct fd_deleted {
    pid_t    tgid;
    int      fd;
    dev_t    dev;                   /* st_dev: the filesystem holding its blocks */
    ino_t    ino;
    uint64_t size;                  /* st_size at the scan */
    uint64_t blocks_bytes;          /* st_blocks x 512: the space it holds at the scan
                                     * (from the bulk source, the inode's allocated
                                     * blocks: without the delayed allocation ext4's
                                     * statx counts) */
};

struct fdmap;

/* proc_fd and sys_fd are directory fds of /proc and /sys (or fixture trees), borrowed:
 * they must outlive the fdmap. rescan_s > 0. max_procs 0 means FDMAP_DEFAULT_MAX_PROCS.
 * Returns 0 or -EINVAL. */
int  fdmap_new(struct fdmap **out, int proc_fd, int sys_fd, double rescan_s, size_t max_procs);

/* The devices of process tgid, which started at start_ticks (field 22 of its stat: a
 * reused pid with another start time is a new process). now is CLOCK_MONOTONIC seconds.
 * A new process is scanned at once; a known one when its answer is older than rescan_s
 * (the first rescan of a process comes at a per-process fraction, 0.5 to 1, of rescan_s,
 * so processes first seen together are not all rescanned in the same refresh). Errors
 * are cached like answers. Always fills *out. */
void fdmap_get(struct fdmap *m, pid_t tgid, unsigned long long start_ticks, double now,
               struct fd_devs *out);

/* The same, with what the caller knows of the process's I/O: io_known, and io_sig, any
 * value that changes whenever one of its I/O counters does (a hash of /proc/PID/io). A
 * process due for its rescan whose io_sig equals the one at its last scan is not rescanned
 * until idle_rescan_s after that scan. tid: 0 (or tgid), the process's own table; else a
 * live thread of it whose table is read instead, for a process whose leader has exited
 * (procs.h: task_sample.live_tid). The answer is the process's (cached by tgid).
 * fdmap_get is this with tid 0 and io_known false. */
void fdmap_get_io(struct fdmap *m, pid_t tgid, pid_t tid, unsigned long long start_ticks, double now,
                  bool io_known, uint64_t io_sig, struct fd_devs *out);

/* Room for procs processes (capped at the table's maximum), made at once while the table
 * is empty (the first sample): a caller that knows how many it will ask about spares it
 * its doublings, each a copy. Later, the table grows and shrinks with what it holds. */
void fdmap_reserve(struct fdmap *m, size_t procs);

/* Every process's open files at once (the task iterator's taskiter_files: one BPF pass
 * over every open file of the machine instead of an open, a getdents64 and a statx per
 * fd for each process). Once a refresh has scanned `after` processes from /proc (a
 * first sample, a burst of new processes; the sampler's FDMAP_BULK_AFTER, 0: at its
 * first scan), the fdmap calls fn once, which hands it the records with
 * fdmap_bulk_add as they come, and answers the refresh's further scans from them with
 * the same per-file logic (the fd's flags come with the record: no lstat, no fdinfo).
 * Kept of them: 16 bytes a file that reaches a block device or is deleted, one entry for
 * a process with neither (pipes, sockets, /dev/null), the deleted ones whole. A process
 * it has no record of (no open file, or one the kernel's iterator did not visit) is read
 * from /proc as before. fn returns 0 or -errno (then /proc for the rest of the
 * refresh). */
typedef int (*fdmap_bulk_fn)(void *ctx, struct fdmap *m);
void fdmap_set_bulk(struct fdmap *m, fdmap_bulk_fn fn, void *ctx, unsigned after);
/* For fn: records in the iterator's order (ascending tid, then fd). A thread's records
 * (tid != tgid: a table of its own, or a live thread of a group whose leader exited, whose
 * table is NULL) are kept by its tid: a process's scan reads its leader's, or the thread's
 * fdmap_get_io names. */
void fdmap_bulk_add(struct fdmap *m, const struct tasks_file_rec *v, size_t n);

/* A refresh begins: the bulk source's records of the last one are forgotten. */
void fdmap_begin_refresh(struct fdmap *m);

/* Seconds an idle process's answer may age (see fdmap_get_io); at least rescan_s, which
 * is also the default (no idle rule). */
void fdmap_set_idle_rescan(struct fdmap *m, double idle_rescan_s);

/* The filesystems with no block device (their st_dev, major 0) whose open files a scan
 * notes in fd_devs.netfs; at most FDMAP_MAX_WATCH are kept. Any other file on an
 * anonymous device stays unnoted (tmpfs, proc, pipes: nothing a process waits on as I/O).
 * A set that differs from the last one marks every process for rescanning. Empty (the
 * default, and most machines): the scans note nothing and cost nothing more. */
void fdmap_set_netfs(struct fdmap *m, const dev_t *devs, size_t n);

/* Forget processes not asked about since now - max_age_s (max_age_s 0: every process not
 * asked about at `now` itself). */
void fdmap_prune(struct fdmap *m, double now, double max_age_s);

/* Drop every cached device resolution and mark every process for rescanning at its next
 * fdmap_get (after a loop device was re-attached, a dm table changed...). */
void fdmap_invalidate_devices(struct fdmap *m);

/* The deleted-but-open files of every process, as each one's latest scan saw them (a
 * process scanned again replaces its own; fdmap_prune drops those of forgotten
 * processes). Their size and blocks are as of that scan: a caller wanting them now
 * statx's /proc/PID/fd/N again, and reads the fd's flags (fdinfo) and name (readlink)
 * itself for the files it cares about. Valid until the next fdmap_get, fdmap_prune or
 * fdmap_free. Noting them costs the scan no system call: the statx it makes of every fd
 * already carries st_nlink. */
size_t fdmap_deleted(const struct fdmap *m, const struct fd_deleted **out);

void fdmap_get_stats(const struct fdmap *m, struct fdmap_stats *out);
void fdmap_free(struct fdmap *m);

/* Pure: the `flags:` line of an fdinfo file ("flags:\t0100002", octal), anywhere in
 * buf[0, len); buf needs no NUL. Returns 0 or -EINVAL (missing, empty, not octal,
 * overflow). */
int  fdinfo_parse_flags(const char *buf, size_t len, unsigned *flags);

/* Pure: a sysfs `dev` file, "MAJ:MIN" with an optional trailing newline, nothing else.
 * Returns 0 or -EINVAL. */
int  parse_majmin(const char *buf, size_t len, unsigned *maj, unsigned *min);

/* Resolve dev through the sysfs tree below sys_fd (the /sys directory) into queue-owning
 * whole devices: writes at most max of them to out, ascending, and returns how many, or
 * -errno when dev itself has no sysfs directory (-ENOENT). *truncated (may be NULL) says
 * whether some were left out (more than max or FDMAP_MAX_DEVS, or deeper than
 * FDMAP_MAX_DEPTH). Uncached: every call reads sysfs. */
int  fdmap_resolve(int sys_fd, dev_t dev, dev_t *out, unsigned max, bool *truncated);

#endif
