/* SPDX-License-Identifier: GPL-2.0-or-later */
/* waits.bpf.c: the BPF lens's task waits (issue #13), read by src/source/lens_waits.c.
 * Per thread and per thread group: time blocked with in_iowait set (the scheduler's
 * iowait), from sched_switch out (a task leaves the CPU with in_iowait) to its
 * sched_switch back in (the run-queue delay after the wakeup included), and the part of
 * it slept interruptibly (io_uring's completion wait, not a block wait). One of the
 * objects linked into the lens (lens.bpf.h, mk/bpf.mk).
 */
#include "lens.bpf.h"

char LICENSE[] SEC("license") = "GPL";

/* ---- Maps (sizes in bpf/waits.h). ---- */
/* The wait maps hold the live tasks that ever waited on I/O (lens_exit deletes a task's
 * entry), not every task: allocated entry by entry, so their memory follows the tasks
 * that wait, not the tasks there are. (An entry made in the scheduler's context: safe
 * from 6.1 on, where the kernel takes it from its BPF allocator's per-CPU cache; on an
 * older kernel lens.c makes them preallocated LRU maps, and the light loader, which
 * cannot change a map's type, is not used.) */
struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(map_flags, BPF_F_NO_PREALLOC);
    __uint(max_entries, LENS_MAX_TASKS);
    __type(key, __u32);
    __type(value, struct lens_wait);
} waits_tid SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(map_flags, BPF_F_NO_PREALLOC);
    __uint(max_entries, LENS_MAX_PROCS);
    __type(key, __u32);
    __type(value, struct lens_wait);
} waits_tgid SEC(".maps");


/* The duty cycle (source/lens.h): at a high request rate the scheduler program is
 * attached only in windows, with the request programs. Written by user space through the
 * mapped .bss: lens_wait_shut is 1 from a window's close to its program's detachment
 * (the drain: waits end, none starts), and lens_wait_from is the window's opening, before
 * which a start is stale (a wait that began in an earlier window and ended unseen while
 * the program was detached). Both 0 without the duty cycle: every wait counts. */
__u64 lens_wait_from = 0;
__u32 lens_wait_shut = 0;

/* ---- Per-thread iowait. ----
 * lens_switch runs on every context switch of the machine (in the duty cycle's windows
 * only, at a high request rate: lens_duty.c): it returns on the first tests
 * when neither task is in iowait, before any map access or clock read.
 *
 * A wait is also told apart by how the task sleeps (lens_wait.intr_ns): block waits
 * (io_schedule: folio and buffer locks, bio completion) sleep TASK_UNINTERRUPTIBLE (D);
 * io_uring's completion wait (io_uring/io_uring.c io_cqring_wait, since 6.1.39 and 6.5)
 * sleeps TASK_INTERRUPTIBLE (S) with in_iowait set whenever the task has any request
 * pending, a socket receive included, so PSI io and iowait rise with no block I/O. */

/* 1 when prev, leaving the CPU, sleeps interruptibly: one field read, relocated at load
 * (the pre-5.14 branch is dead where __state exists). */
static __always_inline __u32 switch_intr(struct task_struct *prev)
{
    if (bpf_core_field_exists(prev->__state))
        return prev->__state & TASK_INTERRUPTIBLE;
    return BPF_CORE_READ((struct task_struct___pre514 *)prev, state) & TASK_INTERRUPTIBLE;
}

/* Ends next's wait, if one was started (lens_switch): adds it to the thread's and its
 * group's sums. Inlined: a subprogram taking a task pointer would not be verified alone
 * on 6.1. */
static __always_inline void wait_end(struct task_struct *task)
{
    __u32 tid = task->pid;
    struct lens_wait *w = bpf_map_lookup_elem(&waits_tid, &tid);
    if (!w || !w->start_ns)
        return;
    __u64 now = bpf_ktime_get_ns();
    __u64 start = w->start_ns;
    w->start_ns = 0;
    if (now <= start || start < lens_wait_from)
        return;
    __u64 d = now - start;
    /* The interruptible part, added only when there is one: a block wait pays a load
     * and a test, not another atomic add. */
    __u32 intr = w->open_intr;
    __sync_fetch_and_add(&w->wait_ns, d);
    if (intr)
        __sync_fetch_and_add(&w->intr_ns, d);
    __sync_fetch_and_add(&w->waits, 1);
    __u32 tgid = w->tgid;
    struct lens_wait *g = bpf_map_lookup_elem(&waits_tgid, &tgid);
    if (g) {
        __sync_fetch_and_add(&g->wait_ns, d);
        if (intr)
            __sync_fetch_and_add(&g->intr_ns, d);
        __sync_fetch_and_add(&g->waits, 1);
        return;
    }
    /* The group's first finished wait (none for an exiting thread, as for a start).
     * Two threads may race here: the loser's update fails (NOEXIST) and it adds to the
     * winner's entry. */
    if (task->flags & PF_EXITING)
        return;
    struct lens_wait n = { .wait_ns = d, .waits = 1, .tgid = tgid,
                          .intr_ns = intr ? d : 0 };
    if (bpf_map_update_elem(&waits_tgid, &tgid, &n, BPF_NOEXIST) == 0)
        return;
    g = bpf_map_lookup_elem(&waits_tgid, &tgid);
    if (g) {
        __sync_fetch_and_add(&g->wait_ns, d);
        if (intr)
            __sync_fetch_and_add(&g->intr_ns, d);
        __sync_fetch_and_add(&g->waits, 1);
    }
}

/* The one scheduler program (issue #40: no sched_wakeup program; the wakeup tracepoint
 * runs as often as the switch and its program cost a synchronous read as much). A wait
 * starts when prev leaves the CPU with in_iowait set and ends when the task is switched
 * back in: in_iowait is the sleeper's own flag, which it clears itself only after
 * schedule() returns (kernel/sched/core.c io_schedule_finish; io_uring's
 * io_cqring_wait_schedule sets and clears it around its schedule() likewise, 6.1 and
 * 6.18), so it is still set on next here. The wait so includes the run-queue delay
 * after the wakeup, as delay accounting's blkio_delay does (delayacct_blkio_end in
 * io_schedule_finish). Every other switch costs the two flag loads and the preempt
 * test. A task preempted with in_iowait set (between io_schedule_prepare and the
 * switch, or after the switch back in before it clears the flag) starts no wait; at
 * its switch back in its entry has no start and nothing is added. */
SEC("tp_btf/sched_switch")
int BPF_PROG(lens_switch, bool preempt, struct task_struct *prev, struct task_struct *next)
{
    /* (BPF_CORE_READ_BITFIELD has a local named p: the tasks are not named so.) */
    if (BPF_CORE_READ_BITFIELD(next, in_iowait))
        wait_end(next);
    /* A preempted task is runnable, not waiting, whatever in_iowait says. */
    if (preempt || !BPF_CORE_READ_BITFIELD(prev, in_iowait) || lens_wait_shut)
        return 0;
    __u32 tid = prev->pid;
    if (!tid)
        return 0;
    __u64 now = bpf_ktime_get_ns();
    __u32 intr = switch_intr(prev);
    struct lens_wait *w = bpf_map_lookup_elem(&waits_tid, &tid);
    if (w) {
        w->open_intr = intr;
        w->start_ns = now;
        return 0;
    }
    /* No new entry for an exiting task: lens_exit may have deleted its entry already
     * (do_exit closes its files after the tracepoint, and a close may wait on I/O), and
     * one made again would stay for good in a map that does not evict. */
    if (prev->flags & PF_EXITING)
        return 0;
    struct lens_wait n = { .start_ns = now, .tgid = prev->tgid, .open_intr = intr };
    bpf_map_update_elem(&waits_tid, &tid, &n, BPF_NOEXIST);
    return 0;
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(lens_exit, struct task_struct *p)
{
    __u32 tid = p->pid, tgid = p->tgid;
    bpf_map_delete_elem(&waits_tid, &tid);
    /* The group's entry goes with its last thread: do_exit counts signal->live down
     * before this tracepoint, so it reads 0 in the last one (a leader that exits first
     * leaves the group's figure to its threads). */
    struct signal_struct *sig = p->signal;
    if (!sig || sig->live.counter == 0)
        bpf_map_delete_elem(&waits_tgid, &tgid);
    return 0;
}
