/* SPDX-License-Identifier: GPL-2.0-or-later */
/* source/taskiter.h: every task of the machine in one pass, from a BPF task iterator
 * (src/bpf/kern/taskiter.bpf.c, issue #19).
 *
 * Contract
 * - taskiter_open() loads the iterator's small BPF object and attaches it, through the
 *   light skeleton first, then libbpf's (source/bpfload.h, IOTRIAGE_BPF_LOADER). It needs
 *   root (or CAP_BPF with CAP_PERFMON), the kernel's BTF (/sys/kernel/btf/vmlinux),
 *   a kernel with task iterators (5.8 and later), and the initial pid namespace with
 *   proc_fd being its /proc (the records carry the kernel's global ids, which are then
 *   the ids /proc shows). Otherwise it fails with -errno and one line in err saying why;
 *   the caller then reads /proc as before. Without root, CAP_BPF with CAP_PERFMON shows
 *   every task's counters, where /proc/PID/io would refuse other users' (EACCES): those
 *   capabilities already let a program read any kernel memory. Nothing is pinned: the link and the program
 *   are held by file descriptors of this process and go when it exits or crashes.
 * - taskiter_only() binds it to some processes (-p): one link per process
 *   (BPF_TASK_ITER_TGID, kernel 6.1 and later), so that a run visits their threads
 *   alone, not every task of the machine. It fails with -errno on an older kernel (the
 *   whole iterator stays); a kernel found to ignore the filter (records of another
 *   process) is read whole from then on. A pid that is not a thread group leader gets
 *   nothing from its link (the caller reads such from /proc).
 * - taskiter_read() runs the iterator once: one record (include/bpf/taskiter.h) per
 *   task, in ascending tid order (per process when bound), with a process's command line
 *   after its leader's record when the iterator sends one, read a seq_file buffer at a
 *   time (32 KiB, about 100
 *   records) and handed to acc (taskiter_acc_begin ... _end below). Returns 0, or -errno
 *   (then nothing is known of this refresh from it; a damaged stream is -EPROTO).
 * - The conversions below are pure (unit-tested without BPF): they turn records into
 *   what /proc/PID/stat, the owner of /proc/PID, /proc/PID/io (or
 *   /proc/PID/task/TID/io), ioprio_get and a taskstats reply (TGID for processes, PID
 *   for threads) say, and where the two could differ it is said at the function.
 * - Not thread-safe: one source per sampler.
 */
#ifndef IOTRIAGE_SOURCE_TASKITER_H
#define IOTRIAGE_SOURCE_TASKITER_H

#include <linux/types.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "bpf/taskiter.h"

/* What a record says of its process's command line (bpf/taskiter.h: Framing). */
enum taskiter_cmd {
    TASKITER_CMD_NONE,               /* nothing: as last known (sent before), else /proc */
    TASKITER_CMD_SENT,               /* here: what /proc/PID/cmdline reads now (NULs and all) */
    TASKITER_CMD_STALE,              /* changed, not sent (too long, unreadable): read /proc */
    TASKITER_CMD_EMPTY,              /* no memory: /proc/PID/cmdline reads empty */
    TASKITER_CMD_LATER,              /* left to the next run (taskiter_read's idle_cmd_later) */
    TASKITER_CMD_KEPT,               /* sent (or found stale) in this period, unmoved since:
                                      * what the reader took then stands (bpf/taskiter.h) */
};

/* One process (or thread) as the records tell it. */
struct taskiter_task {
    pid_t    id, tgid;
    unsigned long long start_ticks;  /* /proc/PID/stat field 22 */
    uid_t    uid;                    /* the owner of /proc/PID */
    int      nice, policy;
    int      nlwp;                   /* threads of the process; 1 in threads mode */
    int      ioprio_raw;             /* ioprio_get's value */
    char     state;                  /* /proc/PID/stat field 3 */
    bool     kthread;
    bool     io_known;               /* the kernel keeps I/O accounting */
    bool     delays_valid;           /* a delay record (task->delays or the group's stats) */
    uint64_t io[TASKS_IO_N];         /* /proc/PID/io, in its order */
    uint64_t run_ns;                 /* run time: every thread, plus dead ones for a process */
    uint64_t blkio_count, blkio_delay_ns, swapin_count, swapin_delay_ns;
    enum taskiter_cmd cmd;           /* what the iterator said of the command line */
    uint32_t cmd_off, cmd_len;       /* TASKITER_CMD_SENT: its bytes in the acc's text */
    uint32_t comm_off;               /* the name, NUL-terminated, in the acc's text
                                      * (taskiter_comm): most are far shorter than
                                      * TASKS_COMM_LEN, and a task array is 10,000 long */
    pid_t    live_tid;               /* a leader that exited (a zombie) while threads of
                                      * its group live: the live one of lowest tid, else 0
                                      * (procs.h: task_sample.live_tid). In process mode its
                                      * record gives the process's ioprio_raw, nice and
                                      * policy; the command line the zombie's record says
                                      * is empty becomes TASKITER_CMD_NONE (read from that
                                      * thread's /proc/TGID/task/TID) */
};

/* Pure: the letter /proc/PID/stat shows for a task's state word and exit state
 * (fs/proc/array.c: task_state_index with the 6.x bit values, which older kernels
 * share for every bit they have): R S D T t X Z P I. */
char taskiter_state_letter(uint32_t state, uint32_t exit_state);

/* Pure: nanoseconds since boot as clock ticks, as /proc's nsec_to_clock_t rounds
 * (down). clk_tck: sysconf(_SC_CLK_TCK), USER_HZ. */
unsigned long long taskiter_ticks(uint64_t ns, long clk_tck);

/* Pure: records turned into tasks as they are read (no run's records are kept whole):
 * one task per record in threads mode, else one per thread group with its leader's
 * identity and state, the group's thread count, and counters summed as the kernel sums
 * them for a process: I/O over every thread still listed plus the leader's
 * signal->ioac (dead threads), as /proc/PID/io; delays over the live threads plus
 * signal->stats, as a taskstats TGID reply; run time over every thread plus
 * signal->sum_sched_runtime. Records come in ascending tid order, so a thread finds its
 * leader already there; one that does not (the pids wrapped) is kept aside until
 * taskiter_acc_end, and left out if its leader never came (a race with exec or exit).
 * Use: taskiter_acc_begin, taskiter_acc_feed for the bytes of each read, taskiter_acc_end:
 * then tasks[0, n) are sorted by id and valid until the next begin. A process's command
 * line comes with its leader's record (cmd, cmd_off, cmd_len: taskiter_cmdline); in
 * threads mode only the leader's task carries it. A leader that exited before its
 * threads gets live_tid (above). The arrays are reused across runs;
 * taskiter_acc_free releases them. */
struct taskiter_acc {
    bool threads;
    long clk_tck;
    struct taskiter_task *tasks;
    size_t n, cap;
    bool   sorted;
    struct tasks_rec *late;          /* threads whose leader was not there yet */
    size_t nlate, late_cap;
    char  *text;                     /* the command lines of this run */
    size_t ntext, text_cap;
    pid_t  want_tgid;                /* > 0: every record must be this process's (a link
                                      * bound to it): another one is -ENOTSUP */
    bool   gone_leader;              /* threads mode: a leader that exited while threads
                                      * of its group live was seen (taskiter_acc_end) */
};
void taskiter_acc_begin(struct taskiter_acc *a, bool threads, long clk_tck);
/* Room for `tasks` tasks and `text` bytes of names and command lines, made at once: a
 * first run would otherwise grow them by doubling, a copy each (2.5 MB of tasks at 10,000
 * processes). */
void taskiter_acc_reserve(struct taskiter_acc *a, size_t tasks, size_t text);
/* Pure: the bytes buf[0, len) of the stream (bpf/taskiter.h: Framing), from a record's start:
 * takes every whole record and returns the bytes it took; a record cut short at the end
 * is left (handed again with what follows it). -EPROTO: a record that cannot be (a
 * command line longer than TASKS_CMDLINE_MAX, a length without TASKS_REC_CMDLINE), after
 * which the stream cannot be followed; -ENOTSUP: a record of another process than
 * want_tgid (when set; a kernel that ignored the link's filter). Any alignment of buf. */
long taskiter_acc_feed(struct taskiter_acc *a, const void *buf, size_t len);
void taskiter_acc_end(struct taskiter_acc *a);
/* The command line the iterator sent for t (TASKITER_CMD_SENT), *len bytes as
 * /proc/PID/cmdline reads them, or NULL. Valid until the next taskiter_acc_begin. */
const char *taskiter_cmdline(const struct taskiter_acc *a, const struct taskiter_task *t, size_t *len);
/* t's name (at most TASKS_COMM_LEN - 1 bytes). Valid until the next taskiter_acc_begin. */
const char *taskiter_comm(const struct taskiter_acc *a, const struct taskiter_task *t);
void taskiter_acc_free(struct taskiter_acc *a);

struct taskiter;

int  taskiter_open(struct taskiter **out, int proc_fd, char *err, size_t errlen);
/* One run over every task (or the taskiter_only ones) into acc. idle_cmd_later: leave the
 * command lines of processes whose leader never moved a byte to or from a disk to the
 * next run (TASKITER_CMD_LATER), which sends them: a first frame's run. */
int  taskiter_read(struct taskiter *ti, bool threads, long clk_tck, bool idle_cmd_later,
                   struct taskiter_acc *acc);
/* Visit only these processes' tasks (pids: thread group ids); n 0: every task again.
 * 0, or -errno with every task still visited. */
int  taskiter_only(struct taskiter *ti, const pid_t *pids, size_t n);
/* Whether taskiter_only bound it: then only those processes can be missing from it. */
bool taskiter_bound(const struct taskiter *ti);
/* Which loader loaded it: "light" or "libbpf" (source/bpfload.h). */
const char *taskiter_loader(const struct taskiter *ti);
void taskiter_close(struct taskiter *ti);

/* The open files of every process at once (taskiter_files.bpf.c files_dump, iter/task_file): one
 * record per open file of each file table (include/bpf/taskiter.h: struct
 * tasks_file_rec), handed to each(ctx, v, n) a read at a time (v valid for the call
 * only), in the kernel's order: ascending tid, then fd. A thread whose file table is its
 * leader's is not visited again (one with a table of its own is: tid != tgid). A process
 * with no open file has no record, nor does one the kernel's iterator did not visit.
 * The program is loaded at the first call (by the loader of the task iterator): the
 * first frame's sample asks for it only where it scans many processes (threads mode, or
 * 32 or more that ever moved a byte to or from a disk: fdmap.h, FDMAP_BULK_AFTER), since
 * it leaves idle processes' scans to the next. Returns 0, -ENOTSUP where
 * the program did not load or attach (taskiter_has_files false from then on), or -errno
 * (what each was handed is then incomplete). taskiter_has_files: true until a load of
 * the program failed. */
typedef void (*taskiter_files_fn)(void *ctx, const struct tasks_file_rec *v, size_t n);
bool taskiter_has_files(const struct taskiter *ti);
int  taskiter_files(struct taskiter *ti, taskiter_files_fn each, void *ctx);

#endif
