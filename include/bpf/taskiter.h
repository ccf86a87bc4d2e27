/* SPDX-License-Identifier: GPL-2.0-or-later */
/* bpf/taskiter.h: the record the task iterator (src/bpf/kern/taskiter.bpf.c) writes for each
 * task, read by src/source/taskiter.c.
 *
 * Contract: one fixed-size record per task (thread), written whole with bpf_seq_write
 * (with its command line, if any, in the same write),
 * in the order the kernel's task iterator visits them (ascending tid: it walks the pid
 * numbers of the reader's pid namespace). Only fixed-width __u* types, no pointers,
 * explicit padding, so that the BPF object and the host compiler agree byte for byte;
 * TASKS_REC_SIZE pins the size on both sides. Every field is copied as the kernel keeps
 * it: the conversions to what /proc shows (state letter, clock ticks, nice) are the
 * reader's, pure and unit-tested. Counters of the group's dead threads (sig_*) are filled
 * for a group leader only (tid == tgid), 0 for the other threads.
 *
 * Framing: a record with TASKS_REC_CMDLINE in rflags is followed by cmdline_len bytes of
 * its process's command line and then padding up to TASKS_REC_PAD(cmdline_len) bytes
 * (undefined values), so that every record starts 8-byte aligned; cmdline_len is at most
 * TASKS_CMDLINE_MAX. Without that flag cmdline_len is 0 and the next record follows at
 * once. The iterator sends a command line only for a thread-group leader with memory,
 * the first time its iterator instance sees it and again when the command line moved
 * (an exec, a new mm; prctl PR_SET_MM_ARG_START/END): the bytes are the
 * [arg_start, arg_end) range, or with TASKS_REC_CMD_TITLE the range that
 * /proc/PID/cmdline reads when argv's last byte was overwritten (setproctitle), of
 * which /proc shows the first string with its NUL. TASKS_REC_CMD_STALE says the command
 * line moved but is not here (longer than the cap, unreadable): read /proc/PID/cmdline.
 * TASKS_REC_CMD_LATER: a run asked to leave the command lines of leaders that never
 * moved a byte to or from a disk for the next run left this one's (nothing sent, nothing
 * marked as sent). The bytes are sent again, unasked, once in each TASKS_CMD_RESEND_NS
 * period (argv rewritten in place changes nothing the kernel can see), the periods of
 * each process shifted by a part taken from its pid, so that a population seen at once
 * is not sent again all at once. TASKS_REC_CMD_KEPT says the iterator sent this command
 * line (or found it unsendable: CMD_STALE) in the current period and nothing it can see
 * moved since: what the reader holds from then stands, whatever the reader's own clock
 * says of its age (the iterator's clock alone decides when it is sent again).
 */
#ifndef IOTRIAGE_TASKS_REC_H
#define IOTRIAGE_TASKS_REC_H

/* Indices into ioac[] and sig_ioac[]: struct task_io_accounting's fields, the lines of
 * /proc/PID/io in its order. */
#define TASKS_IO_RCHAR      0
#define TASKS_IO_WCHAR      1
#define TASKS_IO_SYSCR      2
#define TASKS_IO_SYSCW      3
#define TASKS_IO_READ       4
#define TASKS_IO_WRITE      5
#define TASKS_IO_CANCELLED  6
#define TASKS_IO_N          7

/* rflags */
#define TASKS_REC_DELAYS    0x1u    /* task->delays was allocated: blkio_* and swapin_* hold data */
#define TASKS_REC_SIG_STATS 0x2u    /* a leader whose signal->stats was allocated (sig_blkio_* ...) */
#define TASKS_REC_IOAC      0x4u    /* the kernel keeps per-task I/O accounting (ioac exists) */
#define TASKS_REC_CMDLINE   0x8u    /* cmdline_len bytes of command line follow the record */
#define TASKS_REC_CMD_TITLE 0x10u   /* ... read as setproctitle's: up to the first NUL */
#define TASKS_REC_CMD_STALE 0x20u   /* the command line moved but is not sent: ask /proc */
#define TASKS_REC_NO_MM     0x40u   /* no memory (a kernel thread, a zombie, an exited
                                     * leader): /proc/PID/cmdline reads empty (the
                                     * reader asks a live thread's: taskiter.h live_tid) */
#define TASKS_REC_CMD_LATER 0x80u   /* not sent in this run, asked to leave idle leaders'
                                     * for the next (taskiter.bpf.c cmd_idle_later) */
#define TASKS_REC_CMD_KEPT  0x100u  /* sent (or found stale) in this TASKS_CMD_RESEND_NS
                                     * period, unchanged since as far as the kernel shows */

/* The period in which a command line is sent again (procs.h PROCS_NAMES_REFRESH_S, the
 * /proc path's re-read, is the same). */
#define TASKS_CMD_RESEND_NS 10000000000ull

/* The most command-line bytes a record carries: a page, which is also what /proc reads
 * of a setproctitle title (longer command lines are left to /proc: CMD_STALE). */
#define TASKS_CMDLINE_MAX   4096u
#define TASKS_REC_PAD(n)    (((n) + 7u) & ~7u)

#define TASKS_COMM_LEN      64      /* as TASK_COMM_MAX: a kernel thread's full name, a
                                     * workqueue worker's "+desc"/"-desc" suffix */

struct tasks_rec {
    __u32 tid, tgid;
    __u64 start_boottime;           /* ns since boot, CLOCK_BOOTTIME (task->start_boottime) */
    __u32 euid;                     /* real_cred->euid: the owner /proc gives the task's directory */
    __s32 static_prio;              /* nice = static_prio - 120 */
    __u32 policy;                   /* SCHED_* */
    __s32 nr_threads;               /* signal->nr_threads */
    __u32 state;                    /* task->__state (the old "state" before 5.14) */
    __u32 exit_state;               /* EXIT_ZOMBIE 0x20, EXIT_DEAD 0x10 */
    __u32 flags;                    /* PF_* */
    __u32 ioprio;                   /* what ioprio_get(IOPRIO_WHO_PROCESS, tid) returns */
    __u32 rflags;                   /* TASKS_REC_* */
    __u32 cmdline_len;              /* bytes after the record (TASKS_REC_CMDLINE), else 0 */
    __u64 run_ns;                   /* se.sum_exec_runtime */
    __u64 ioac[TASKS_IO_N];         /* task->ioac */
    __u64 blkio_count, blkio_delay_ns, swapin_count, swapin_delay_ns;   /* task->delays */
    __u64 sig_run_ns;               /* signal->sum_sched_runtime (dead threads) */
    __u64 sig_ioac[TASKS_IO_N];     /* signal->ioac (dead threads) */
    __u64 sig_blkio_count, sig_blkio_delay_ns, sig_swapin_count, sig_swapin_delay_ns; /* signal->stats */
    char  comm[TASKS_COMM_LEN];     /* NUL-terminated */
};

#define TASKS_REC_SIZE 312

/* The open-files iterator (taskiter_files.bpf.c files_dump, iter/task_file): one record per open
 * file of every thread group (a thread sharing its leader's file table is not visited
 * again), in ascending tgid order then fd order, nothing after it. What a statx of
 * /proc/PID/fd/N and its fdinfo would say, as the kernel keeps it: dev and rdev in the
 * kernel's dev_t layout (major << 20 | minor), mode the inode's i_mode, flags the file's
 * f_flags (O_* as open(2) took them), fmode its f_mode (FMODE_READ 0x1, FMODE_WRITE 0x2). */
struct tasks_file_rec {
    __u32 tid, tgid;                /* the task whose file table this is (a leader's
                                     * unless a thread has a table of its own) */
    __u32 fd;
    __u32 pad;
    __u32 mode;                     /* inode->i_mode: S_IFMT and permissions */
    __u32 flags;                    /* file->f_flags */
    __u32 fmode;                    /* file->f_mode */
    __u32 nlink;                    /* inode->i_nlink: 0 for a file deleted while open */
    __u32 dev;                      /* inode->i_sb->s_dev: the filesystem's device */
    __u32 rdev;                     /* inode->i_rdev: a device file's own number */
    __u64 ino;
    __u64 size;                     /* inode->i_size */
    __u64 blocks;                   /* inode->i_blocks, 512-byte units */
};

#define TASKS_FILE_REC_SIZE 64
#define TASKS_FILE_FMODE_WRITE 0x2u

#endif
