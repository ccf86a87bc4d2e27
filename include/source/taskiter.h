/* source/taskiter.h: every task of the machine in one pass, from a BPF task iterator
 * (src/bpf/kern/tasks.bpf.c, issue #19).
 *
 * Contract
 * - taskiter_open() loads the iterator's small BPF object and attaches it. It needs
 *   root (or CAP_BPF with CAP_PERFMON), the kernel's BTF (/sys/kernel/btf/vmlinux),
 *   a kernel with task iterators (5.8 and later), and the initial pid namespace with
 *   proc_fd being its /proc (the records carry the kernel's global ids, which are then
 *   the ids /proc shows). Otherwise it fails with -errno and one line in err saying why;
 *   the caller then reads /proc as before. Nothing is pinned: the link and the program
 *   are held by file descriptors of this process and go when it exits or crashes.
 * - taskiter_read() runs the iterator once: one record (include/bpf/tasks_rec.h) per
 *   task, in ascending tid order, into a buffer the source keeps and reuses; *recs is
 *   valid until the next read or the close. Returns 0, or -errno (then nothing is known
 *   of this refresh from it).
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

#include "bpf/tasks_rec.h"

/* One process (or thread) as the records tell it. */
struct taskiter_task {
    pid_t    id, tgid;
    unsigned long long start_ticks;  /* /proc/PID/stat field 22 */
    const char *comm;                /* into the record it came from */
    uid_t    uid;                    /* the owner of /proc/PID */
    int      nice, policy;
    int      nlwp;                   /* threads of the process; 1 in threads mode */
    int      ioprio_raw;             /* ioprio_get's value */
    char     state;                  /* /proc/PID/stat field 3 */
    bool     kthread;
    bool     io_known;               /* the kernel keeps I/O accounting */
    uint64_t io[TASKS_IO_N];         /* /proc/PID/io, in its order */
    uint64_t run_ns;                 /* run time: live threads, plus dead ones for a process */
    bool     delays_valid;           /* a delay record (task->delays or the group's stats) */
    uint64_t blkio_count, blkio_delay_ns, swapin_count, swapin_delay_ns;
};

/* Pure: the letter /proc/PID/stat shows for a task's state word and exit state
 * (fs/proc/array.c: task_state_index with the 6.x bit values, which older kernels
 * share for every bit they have): R S D T t X Z P I. */
char taskiter_state_letter(uint32_t state, uint32_t exit_state);

/* Pure: nanoseconds since boot as clock ticks, as /proc's nsec_to_clock_t rounds
 * (down). clk_tck: sysconf(_SC_CLK_TCK), USER_HZ. */
unsigned long long taskiter_ticks(uint64_t ns, long clk_tck);

/* Pure: the records of one read, n of them in ascending tid order, as tasks: one per
 * record in threads mode, else one per thread group with its leader's identity and
 * state, the group's thread count, and counters summed as the kernel sums them for a
 * process: I/O over every thread still listed plus the leader's signal->ioac (dead
 * threads), as /proc/PID/io; delays over the live threads plus signal->stats, as a
 * taskstats TGID reply; run time over every thread plus signal->sum_sched_runtime.
 * A thread whose leader has no record (a race with exec or exit) is left out. out has
 * room for n; returns how many it filled, sorted by id. */
size_t taskiter_tasks(const struct tasks_rec *recs, size_t n, bool threads, long clk_tck,
                      struct taskiter_task *out);

struct taskiter;

int  taskiter_open(struct taskiter **out, int proc_fd, char *err, size_t errlen);
int  taskiter_read(struct taskiter *ti, const struct tasks_rec **recs, size_t *n);
void taskiter_close(struct taskiter *ti);

#endif
