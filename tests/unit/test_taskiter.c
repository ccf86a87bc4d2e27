/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Unit tests of the task iterator's pure conversions (src/source/taskiter.c): records
 * built by hand as the BPF program writes them, turned into what /proc and taskstats
 * say. No BPF, no privileges. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "source/taskiter.h"

#define PF_KTHREAD 0x00200000

/* The names of the tasks the last tasks_of_batched gave, by index (taskiter_comm). */
static char names[8][TASKS_COMM_LEN];
#define NAME(i) names[i]

/* The records of one run, handed over in batches of `batch` as reads would, into out. */
static size_t tasks_of_batched(const struct tasks_rec *recs, size_t n, bool threads, size_t batch,
                               struct taskiter_task *out)
{
    struct taskiter_acc a = { 0 };
    taskiter_acc_begin(&a, threads, 100);
    for (size_t i = 0; i < n; i += batch) {
        size_t k = n - i < batch ? n - i : batch;
        assert_int_equal(taskiter_acc_feed(&a, recs + i, k * sizeof(recs[0])), (long)(k * sizeof(recs[0])));
    }
    taskiter_acc_end(&a);
    size_t m = a.n;
    memcpy(out, a.tasks, m * sizeof(out[0]));
    memset(names, 0, sizeof(names));
    for (size_t i = 0; i < m && i < 8; i++) {
        const char *c = taskiter_comm(&a, &a.tasks[i]);
        assert_true(strlen(c) < TASKS_COMM_LEN);
        strcpy(names[i], c);
    }
    taskiter_acc_free(&a);
    return m;
}

static size_t taskiter_tasks(const struct tasks_rec *recs, size_t n, bool threads, long clk_tck,
                             struct taskiter_task *out)
{
    assert_int_equal(clk_tck, 100);
    size_t m = tasks_of_batched(recs, n, threads, n ? n : 1, out);
    /* one record at a time gives the same */
    struct taskiter_task one[8];
    assert_true(m <= 8);
    assert_int_equal(tasks_of_batched(recs, n, threads, 1, one), m);
    assert_memory_equal(one, out, m * sizeof(out[0]));
    return m;
}

/* fs/proc/array.c's letters for each state the kernel reports */
static void test_state_letters(void **st)
{
    (void)st;
    assert_int_equal(taskiter_state_letter(0x0, 0), 'R');
    assert_int_equal(taskiter_state_letter(0x1, 0), 'S');
    assert_int_equal(taskiter_state_letter(0x2, 0), 'D');
    assert_int_equal(taskiter_state_letter(0x4, 0), 'T');
    assert_int_equal(taskiter_state_letter(0x8, 0), 't');
    assert_int_equal(taskiter_state_letter(0x0, 0x10), 'X');
    assert_int_equal(taskiter_state_letter(0x0, 0x20), 'Z');
    /* a zombie's state word is TASK_DEAD (0x80, not reported): the exit state decides */
    assert_int_equal(taskiter_state_letter(0x80, 0x20), 'Z');
    assert_int_equal(taskiter_state_letter(0x40, 0), 'P');
    /* TASK_IDLE (uninterruptible | noload) is I, not D */
    assert_int_equal(taskiter_state_letter(0x402, 0), 'I');
    /* TASK_KILLABLE (wakekill | uninterruptible) is still D; stopped with wakekill T */
    assert_int_equal(taskiter_state_letter(0x102, 0), 'D');
    assert_int_equal(taskiter_state_letter(0x104, 0), 'T');
    /* TASK_FREEZABLE | TASK_INTERRUPTIBLE sleeps as S; frozen and rt-lock waits as D */
    assert_int_equal(taskiter_state_letter(0x2001, 0), 'S');
    assert_int_equal(taskiter_state_letter(0x8000, 0), 'D');
    assert_int_equal(taskiter_state_letter(0x1000, 0), 'D');
}

static void test_ticks(void **st)
{
    (void)st;
    /* nsec_to_clock_t rounds down */
    assert_int_equal(taskiter_ticks(0, 100), 0);
    assert_int_equal(taskiter_ticks(9999999, 100), 0);
    assert_int_equal(taskiter_ticks(10000000, 100), 1);
    assert_int_equal(taskiter_ticks(20673549999999ull, 100), 2067354);
    assert_int_equal(taskiter_ticks(1000000000ull, 1000), 1000);
    assert_int_equal(taskiter_ticks(5, 0), 0);
}

static struct tasks_rec rec(unsigned tid, unsigned tgid, const char *comm)
{
    struct tasks_rec r;
    memset(&r, 0, sizeof r);
    r.tid = tid;
    r.tgid = tgid;
    r.static_prio = 120;
    r.state = 0x1;
    r.rflags = TASKS_REC_IOAC;
    r.nr_threads = 1;
    strcpy(r.comm, comm);
    return r;
}

static void test_one_task(void **st)
{
    (void)st;
    struct tasks_rec r = rec(42, 42, "fio");
    r.start_boottime = 1234567890123ull;
    r.euid = 1000;
    r.static_prio = 130;                    /* nice 10 */
    r.policy = SCHED_IDLE;
    r.ioprio = 3 << 13;                     /* idle class */
    r.ioac[TASKS_IO_READ] = 8 << 20;
    r.ioac[TASKS_IO_RCHAR] = 9 << 20;
    r.run_ns = 777;
    struct taskiter_task t;
    assert_int_equal(taskiter_tasks(&r, 1, false, 100, &t), 1);
    assert_int_equal(t.id, 42);
    assert_int_equal(t.tgid, 42);
    assert_int_equal(t.start_ticks, 123456);
    assert_string_equal(NAME(0), "fio");
    assert_int_equal(t.uid, 1000);
    assert_int_equal(t.nice, 10);
    assert_int_equal(t.policy, SCHED_IDLE);
    assert_int_equal(t.nlwp, 1);
    assert_int_equal(t.ioprio_raw, 3 << 13);
    assert_int_equal(t.state, 'S');
    assert_false(t.kthread);
    assert_true(t.io_known);
    assert_int_equal(t.io[TASKS_IO_READ], 8 << 20);
    assert_int_equal(t.io[TASKS_IO_RCHAR], 9 << 20);
    assert_int_equal(t.run_ns, 777);
    /* no delay record: unknown, not zero */
    assert_false(t.delays_valid);

    /* a kernel thread's full name: 63 bytes kept; a name with no NUL in its 64 bytes is
     * cut to 63, as before */
    char longname[TASKS_COMM_LEN];
    memset(longname, 'k', sizeof(longname));
    longname[TASKS_COMM_LEN - 1] = '\0';
    struct tasks_rec k[2] = { rec(7, 7, longname), rec(8, 8, "x") };
    memset(k[1].comm, 'z', sizeof(k[1].comm));
    struct taskiter_task kt[2];
    assert_int_equal(taskiter_tasks(k, 2, false, 100, kt), 2);
    assert_string_equal(NAME(0), longname);
    assert_int_equal(strlen(NAME(1)), TASKS_COMM_LEN - 1);
    assert_int_equal(NAME(1)[0], 'z');
}

/* task_dump_owner: a kernel thread's /proc directory is root's, whatever its cred */
static void test_kthread_owner(void **st)
{
    (void)st;
    struct tasks_rec r = rec(2, 2, "kthreadd");
    r.flags = PF_KTHREAD;
    r.euid = 5;
    r.static_prio = 100;                    /* nice -20 */
    struct taskiter_task t;
    assert_int_equal(taskiter_tasks(&r, 1, true, 100, &t), 1);
    assert_true(t.kthread);
    assert_int_equal(t.uid, 0);
    assert_int_equal(t.nice, -20);
}

/* A process of three threads, one of them exited but not yet released, and two dead
 * threads' counters in the leader's signal struct; another process between them, as
 * the iterator interleaves tids. */
static void build_group(struct tasks_rec *r)
{
    r[0] = rec(100, 100, "db");
    r[0].nr_threads = 3;
    r[0].ioac[TASKS_IO_READ] = 1000;
    r[0].ioac[TASKS_IO_WRITE] = 10;
    r[0].sig_ioac[TASKS_IO_READ] = 50000;   /* dead threads */
    r[0].sig_ioac[TASKS_IO_CANCELLED] = 7;
    r[0].run_ns = 1;
    r[0].sig_run_ns = 1000;
    r[0].rflags |= TASKS_REC_DELAYS | TASKS_REC_SIG_STATS;
    r[0].blkio_count = 1;
    r[0].blkio_delay_ns = 100;
    r[0].sig_blkio_count = 4;
    r[0].sig_blkio_delay_ns = 4000;
    r[0].sig_swapin_count = 1;
    r[0].sig_swapin_delay_ns = 9;
    r[1] = rec(101, 101, "other");
    r[1].ioac[TASKS_IO_READ] = 123;
    r[2] = rec(102, 100, "db-worker");
    r[2].ioac[TASKS_IO_READ] = 200;
    r[2].run_ns = 10;
    r[2].rflags |= TASKS_REC_DELAYS;
    r[2].blkio_count = 2;
    r[2].blkio_delay_ns = 20;
    r[2].state = 0x2;
    r[3] = rec(103, 100, "db-exiting");     /* exit_state set: taskstats skips its delays */
    r[3].exit_state = 0x20;
    r[3].ioac[TASKS_IO_READ] = 3;
    r[3].run_ns = 100;
    r[3].rflags |= TASKS_REC_DELAYS;
    r[3].blkio_count = 1000;
    r[3].blkio_delay_ns = 1000000;
}

static void test_process_sums(void **st)
{
    (void)st;
    struct tasks_rec r[4];
    build_group(r);
    struct taskiter_task t[4];
    assert_int_equal(taskiter_tasks(r, 4, false, 100, t), 2);
    assert_int_equal(t[0].id, 100);
    assert_int_equal(t[1].id, 101);
    /* the leader's identity and state, the group's thread count */
    assert_string_equal(NAME(0), "db");
    assert_int_equal(t[0].state, 'S');
    assert_int_equal(t[0].nlwp, 3);
    /* /proc/PID/io: signal->ioac plus every listed thread */
    assert_int_equal(t[0].io[TASKS_IO_READ], 50000 + 1000 + 200 + 3);
    assert_int_equal(t[0].io[TASKS_IO_WRITE], 10);
    assert_int_equal(t[0].io[TASKS_IO_CANCELLED], 7);
    assert_int_equal(t[1].io[TASKS_IO_READ], 123);
    /* taskstats TGID: signal->stats plus the live threads */
    assert_true(t[0].delays_valid);
    assert_int_equal(t[0].blkio_count, 4 + 1 + 2);
    assert_int_equal(t[0].blkio_delay_ns, 4000 + 100 + 20);
    assert_int_equal(t[0].swapin_count, 1);
    assert_int_equal(t[0].swapin_delay_ns, 9);
    assert_false(t[1].delays_valid);
    /* run time: every thread and the dead ones */
    assert_int_equal(t[0].run_ns, 1 + 10 + 100 + 1000);
}

static void test_threads_own_counters(void **st)
{
    (void)st;
    struct tasks_rec r[4];
    build_group(r);
    struct taskiter_task t[4];
    assert_int_equal(taskiter_tasks(r, 4, true, 100, t), 4);
    /* /proc/PID/task/TID/io and a PID reply: the thread alone, no signal counters */
    assert_int_equal(t[0].id, 100);
    assert_int_equal(t[0].io[TASKS_IO_READ], 1000);
    assert_int_equal(t[0].blkio_count, 1);
    assert_int_equal(t[0].nlwp, 1);
    assert_int_equal(t[2].id, 102);
    assert_int_equal(t[2].tgid, 100);
    assert_string_equal(NAME(2), "db-worker");
    assert_int_equal(t[2].state, 'D');
    /* an exiting thread still answers a PID query with its final figures */
    assert_int_equal(t[3].state, 'Z');
    assert_true(t[3].delays_valid);
    assert_int_equal(t[3].blkio_count, 1000);
}

/* A zombie process: taskstats TGID skips exited threads, so only the dead threads'
 * stats remain; without them the delays are unknown. */
static void test_zombie_process(void **st)
{
    (void)st;
    struct tasks_rec r = rec(300, 300, "zomb");
    r.state = 0x80;
    r.exit_state = 0x20;
    r.rflags |= TASKS_REC_DELAYS;
    r.blkio_count = 5;
    struct taskiter_task t;
    assert_int_equal(taskiter_tasks(&r, 1, false, 100, &t), 1);
    assert_int_equal(t.state, 'Z');
    assert_false(t.delays_valid);
    assert_int_equal(t.blkio_count, 0);
}

/* A process whose leader exited first (pthread_exit in main): the zombie leader has no
 * memory and no I/O context, its threads read on at idle priority. The process takes its
 * live thread of lowest tid (not an exiting one) for its priority, nice and policy, and
 * its command line is to be read through that thread; in threads mode each thread keeps
 * its own and the leader names the thread. A plain zombie has none. */
static void build_leaderless(struct tasks_rec *r)
{
    r[0] = rec(200, 200, "reader");
    r[0].state = 0x80;                      /* TASK_DEAD */
    r[0].exit_state = 0x20;                 /* EXIT_ZOMBIE */
    r[0].rflags |= TASKS_REC_NO_MM;
    r[0].nr_threads = 4;
    r[1] = rec(201, 200, "reader");         /* exiting: not the one */
    r[1].exit_state = 0x10;
    r[1].ioprio = (1 << 13) | 1;
    r[2] = rec(205, 200, "reader");
    r[2].ioprio = (2 << 13) | 5;
    r[3] = rec(202, 200, "reader");         /* after 205: the pids wrapped */
    r[3].ioprio = (3 << 13) | 7;
    r[3].static_prio = 130;
    r[3].policy = SCHED_BATCH;
    r[4] = rec(300, 300, "plainzombie");
    r[4].state = 0x80;
    r[4].exit_state = 0x20;
    r[4].rflags |= TASKS_REC_NO_MM;
}

static void test_leader_exited(void **st)
{
    (void)st;
    struct tasks_rec r[5];
    build_leaderless(r);
    struct taskiter_task t[5];
    assert_int_equal(taskiter_tasks(r, 5, false, 100, t), 2);
    assert_int_equal(t[0].id, 200);
    assert_int_equal(t[0].state, 'Z');
    assert_int_equal(t[0].live_tid, 202);
    assert_int_equal(t[0].ioprio_raw, (3 << 13) | 7);
    assert_int_equal(t[0].nice, 10);
    assert_int_equal(t[0].policy, SCHED_BATCH);
    assert_int_equal(t[0].cmd, TASKITER_CMD_NONE);
    assert_int_equal(t[1].live_tid, 0);
    assert_int_equal(t[1].cmd, TASKITER_CMD_EMPTY);
    /* threads mode: the leader names its live thread, every row keeps its own figures */
    assert_int_equal(taskiter_tasks(r, 5, true, 100, t), 5);
    assert_int_equal(t[0].id, 200);
    assert_int_equal(t[0].live_tid, 202);
    assert_int_equal(t[0].ioprio_raw, 0);
    assert_int_equal(t[0].nice, 0);
    assert_int_equal(t[0].cmd, TASKITER_CMD_NONE);
    assert_int_equal(t[2].id, 202);
    assert_int_equal(t[2].live_tid, 0);
    assert_int_equal(t[2].ioprio_raw, (3 << 13) | 7);
    assert_int_equal(t[3].id, 205);
    assert_int_equal(t[3].ioprio_raw, (2 << 13) | 5);
    assert_int_equal(t[4].live_tid, 0);
    assert_int_equal(t[4].cmd, TASKITER_CMD_EMPTY);
}

/* Records out of order (pids wrapped between two tasks' visits) and a thread whose
 * leader has no record: sorted, and the orphan left out. */
static void test_order_and_orphans(void **st)
{
    (void)st;
    struct tasks_rec r[4] = { rec(500, 500, "b"), rec(7, 7, "a"), rec(9, 600, "orphan"),
                              rec(501, 7, "a-thread") };
    r[3].ioac[TASKS_IO_WRITE] = 5;
    struct taskiter_task t[4];
    assert_int_equal(taskiter_tasks(r, 4, false, 100, t), 2);
    assert_int_equal(t[0].id, 7);
    assert_int_equal(t[1].id, 500);
    assert_int_equal(t[0].io[TASKS_IO_WRITE], 5);
    /* threads mode keeps every record, sorted */
    assert_int_equal(taskiter_tasks(r, 4, true, 100, t), 4);
    assert_int_equal(t[0].id, 7);
    assert_int_equal(t[1].id, 9);
    assert_int_equal(t[3].id, 501);
}

static void test_no_io_accounting(void **st)
{
    (void)st;
    struct tasks_rec r = rec(8, 8, "x");
    r.rflags = 0;
    struct taskiter_task t;
    taskiter_tasks(&r, 1, false, 100, &t);
    assert_false(t.io_known);
}

/* ---- command lines after their records (bpf/taskiter.h: Framing) ---- */

/* Appends record r and n bytes of command line (with TASKS_REC_CMDLINE when cmd is set)
 * to the stream buf at off, padded as the program pads; returns the new end. */
static size_t put(char *buf, size_t off, struct tasks_rec r, const char *cmd, size_t n)
{
    if (cmd) {
        r.rflags |= TASKS_REC_CMDLINE;
        r.cmdline_len = (uint32_t)n;
    }
    memcpy(buf + off, &r, sizeof r);
    off += sizeof r;
    if (cmd) {
        memset(buf + off, 0x5a, TASKS_REC_PAD(n));   /* the padding is undefined */
        memcpy(buf + off, cmd, n);
        off += TASKS_REC_PAD(n);
    }
    return off;
}

/* A stream of eight processes and a thread, each way the iterator speaks of command lines. */
static size_t build_cmd_stream(char *buf)
{
    size_t off = 0;
    /* a leader sent with its arguments: NULs between, one at the end */
    off = put(buf, off, rec(10, 10, "sh"), "sh\0-c\0echo a  b\0", 17);
    /* its thread: nothing (the kernel sends a leader's only) */
    off = put(buf, off, rec(11, 10, "sh-t"), NULL, 0);
    /* a zombie: no memory */
    struct tasks_rec z = rec(20, 20, "z");
    z.rflags |= TASKS_REC_NO_MM;
    z.exit_state = 0x20;
    off = put(buf, off, z, NULL, 0);
    /* too long to send */
    struct tasks_rec l = rec(30, 30, "java");
    l.rflags |= TASKS_REC_CMD_STALE;
    off = put(buf, off, l, NULL, 0);
    /* setproctitle: the first string and its NUL; what follows is the old environment */
    struct tasks_rec ti = rec(40, 40, "postgres");
    ti.rflags |= TASKS_REC_CMD_TITLE;
    off = put(buf, off, ti, "postgres: walwriter\0HOME=/root\0", 31);
    /* an empty argument range: sent, empty */
    off = put(buf, off, rec(50, 50, "e"), "", 0);
    /* seen before: nothing */
    off = put(buf, off, rec(60, 60, "old"), NULL, 0);
    /* idle in a first frame's run: left to the next run */
    struct tasks_rec lt = rec(70, 70, "idle");
    lt.rflags |= TASKS_REC_CMD_LATER;
    off = put(buf, off, lt, NULL, 0);
    /* sent in this period and unmoved: what the reader holds stands */
    struct tasks_rec kp = rec(80, 80, "kept");
    kp.rflags |= TASKS_REC_CMD_KEPT;
    off = put(buf, off, kp, NULL, 0);
    return off;
}

static void check_cmd_stream(const struct taskiter_acc *a)
{
    assert_int_equal(a->n, 8);
    const struct taskiter_task *t = a->tasks;
    size_t n;
    const char *c = taskiter_cmdline(a, &t[0], &n);
    assert_int_equal(t[0].cmd, TASKITER_CMD_SENT);
    assert_int_equal(n, 17);
    assert_memory_equal(c, "sh\0-c\0echo a  b\0", 17);
    assert_int_equal(t[0].nlwp, 1);
    assert_int_equal(t[1].cmd, TASKITER_CMD_EMPTY);
    assert_null(taskiter_cmdline(a, &t[1], &n));
    assert_int_equal(n, 0);
    assert_int_equal(t[2].cmd, TASKITER_CMD_STALE);
    assert_null(taskiter_cmdline(a, &t[2], &n));
    c = taskiter_cmdline(a, &t[3], &n);
    assert_int_equal(t[3].cmd, TASKITER_CMD_SENT);
    assert_int_equal(n, 20);
    assert_memory_equal(c, "postgres: walwriter\0", 20);
    c = taskiter_cmdline(a, &t[4], &n);
    assert_int_equal(t[4].cmd, TASKITER_CMD_SENT);
    assert_non_null(c);
    assert_int_equal(n, 0);
    assert_int_equal(t[5].cmd, TASKITER_CMD_NONE);
    assert_null(taskiter_cmdline(a, &t[5], &n));
    assert_int_equal(t[6].cmd, TASKITER_CMD_LATER);
    assert_null(taskiter_cmdline(a, &t[6], &n));
    assert_string_equal(taskiter_comm(a, &t[6]), "idle");
    assert_int_equal(t[7].cmd, TASKITER_CMD_KEPT);
    assert_null(taskiter_cmdline(a, &t[7], &n));
}

/* Feeds stream[0, len) as reads of `chunk` bytes would come, keeping what a cut left as
 * taskiter_read does; returns the bytes never taken. */
static size_t feed_chunked(struct taskiter_acc *a, const char *stream, size_t len, size_t chunk)
{
    static char pend[1 << 14];
    size_t have = 0;
    for (size_t i = 0; i < len; i += chunk) {
        size_t k = len - i < chunk ? len - i : chunk;
        memcpy(pend + have, stream + i, k);
        have += k;
        long used = taskiter_acc_feed(a, pend, have);
        assert_true(used >= 0);
        have -= (size_t)used;
        memmove(pend, pend + used, have);
    }
    return have;
}

static void test_cmdline_records(void **st)
{
    (void)st;
    static char buf[1 << 14];
    size_t len = build_cmd_stream(buf);
    assert_int_equal(len % 8, 0);
    struct taskiter_acc a = { 0 };
    taskiter_acc_begin(&a, false, 100);
    assert_int_equal(taskiter_acc_feed(&a, buf, len), (long)len);
    taskiter_acc_end(&a);
    check_cmd_stream(&a);
    /* every cut of the reads gives the same, and a second run forgets the first's text */
    static const size_t chunks[] = { 1, 3, 7, 8, 311, 312, 313, 1000 };
    for (size_t k = 0; k < sizeof chunks / sizeof chunks[0]; k++) {
        taskiter_acc_begin(&a, false, 100);
        assert_int_equal(feed_chunked(&a, buf, len, chunks[k]), 0);
        taskiter_acc_end(&a);
        check_cmd_stream(&a);
        /* the command lines sent, and each task's name with its NUL */
        size_t names_len = 0;
        for (size_t i = 0; i < a.n; i++)
            names_len += strlen(taskiter_comm(&a, &a.tasks[i])) + 1;
        assert_int_equal(a.ntext, 17 + 20 + names_len);
    }
    /* threads mode: the leader's task carries it, its thread nothing */
    taskiter_acc_begin(&a, true, 100);
    assert_int_equal(taskiter_acc_feed(&a, buf, len), (long)len);
    taskiter_acc_end(&a);
    assert_int_equal(a.n, 9);
    size_t n;
    assert_int_equal(a.tasks[0].cmd, TASKITER_CMD_SENT);
    assert_non_null(taskiter_cmdline(&a, &a.tasks[0], &n));
    assert_int_equal(n, 17);
    assert_int_equal(a.tasks[1].id, 11);
    assert_int_equal(a.tasks[1].cmd, TASKITER_CMD_NONE);
    taskiter_acc_free(&a);
}

/* Any alignment of the bytes read. */
static void test_cmdline_unaligned(void **st)
{
    (void)st;
    static char buf[1 << 14];
    static char odd[(1 << 14) + 1];
    size_t len = build_cmd_stream(buf);
    memcpy(odd + 1, buf, len);
    struct taskiter_acc a = { 0 };
    taskiter_acc_begin(&a, false, 100);
    assert_int_equal(taskiter_acc_feed(&a, odd + 1, len), (long)len);
    taskiter_acc_end(&a);
    check_cmd_stream(&a);
    taskiter_acc_free(&a);
}

/* A stream cut inside a command line: the records before it are taken, the cut one is
 * left whole for the next read; never read past the end (ASan in `make san`). */
static void test_cmdline_truncated(void **st)
{
    (void)st;
    static char buf[4096];
    size_t off = put(buf, 0, rec(1, 1, "a"), NULL, 0);
    size_t second = off;
    off = put(buf, off, rec(2, 2, "b"), "0123456789", 10);
    for (size_t cut = second; cut < off; cut++) {
        char *copy = malloc(cut);
        memcpy(copy, buf, cut);
        struct taskiter_acc a = { 0 };
        taskiter_acc_begin(&a, false, 100);
        assert_int_equal(taskiter_acc_feed(&a, copy, cut), (long)second);
        taskiter_acc_end(&a);
        assert_int_equal(a.n, 1);
        taskiter_acc_free(&a);
        free(copy);
    }
}

/* Lengths that cannot be: the stream is refused, not read past. */
static void test_cmdline_bogus(void **st)
{
    (void)st;
    static char buf[2 * 4096 + 1024];
    struct taskiter_acc a = { 0 };
    /* longer than the cap */
    struct tasks_rec r = rec(3, 3, "x");
    r.rflags |= TASKS_REC_CMDLINE;
    r.cmdline_len = TASKS_CMDLINE_MAX + 1;
    memset(buf, 0, sizeof buf);
    size_t good = put(buf, 0, rec(2, 2, "ok"), "ok", 2);
    memcpy(buf + good, &r, sizeof r);
    taskiter_acc_begin(&a, false, 100);
    assert_int_equal(taskiter_acc_feed(&a, buf, sizeof buf), -EPROTO);
    /* 0xffffffff: no wrap-around of the length */
    r.cmdline_len = 0xffffffffu;
    memcpy(buf + good, &r, sizeof r);
    taskiter_acc_begin(&a, false, 100);
    assert_int_equal(taskiter_acc_feed(&a, buf, good + sizeof r), -EPROTO);
    /* a length without the flag */
    r.rflags &= ~TASKS_REC_CMDLINE;
    r.cmdline_len = 8;
    memcpy(buf + good, &r, sizeof r);
    taskiter_acc_begin(&a, false, 100);
    assert_int_equal(taskiter_acc_feed(&a, buf, good + sizeof r + 8), -EPROTO);
    /* exactly the cap is fine */
    taskiter_acc_begin(&a, false, 100);
    char *big = malloc(TASKS_CMDLINE_MAX);
    memset(big, 'x', TASKS_CMDLINE_MAX);
    size_t end = put(buf, 0, rec(4, 4, "big"), big, TASKS_CMDLINE_MAX);
    assert_int_equal(taskiter_acc_feed(&a, buf, end), (long)end);
    taskiter_acc_end(&a);
    size_t n;
    assert_non_null(taskiter_cmdline(&a, &a.tasks[0], &n));
    assert_int_equal(n, TASKS_CMDLINE_MAX);
    /* a title without a NUL in the bytes sent: all of them, as /proc's strnlen */
    struct tasks_rec t = rec(5, 5, "t");
    t.rflags |= TASKS_REC_CMD_TITLE;
    end = put(buf, 0, t, "abc", 3);
    taskiter_acc_begin(&a, false, 100);
    assert_int_equal(taskiter_acc_feed(&a, buf, end), (long)end);
    taskiter_acc_end(&a);
    const char *c = taskiter_cmdline(&a, &a.tasks[0], &n);
    assert_int_equal(n, 3);
    assert_memory_equal(c, "abc", 3);
    free(big);
    taskiter_acc_free(&a);
}

/* A link bound to one process: a record of another says the kernel ignored the filter. */
static void test_want_tgid(void **st)
{
    (void)st;
    static char buf[4096];
    size_t off = put(buf, 0, rec(10, 10, "a"), "a", 1);
    off = put(buf, off, rec(11, 10, "a-t"), NULL, 0);
    size_t good = off;
    off = put(buf, off, rec(12, 12, "b"), NULL, 0);
    struct taskiter_acc a = { 0 };
    taskiter_acc_begin(&a, true, 100);
    a.want_tgid = 10;
    assert_int_equal(taskiter_acc_feed(&a, buf, good), (long)good);
    assert_int_equal(taskiter_acc_feed(&a, buf, off), -ENOTSUP);
    a.want_tgid = 0;
    taskiter_acc_begin(&a, true, 100);
    assert_int_equal(taskiter_acc_feed(&a, buf, off), (long)off);
    taskiter_acc_end(&a);
    assert_int_equal(a.n, 3);
    taskiter_acc_free(&a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_state_letters),
        cmocka_unit_test(test_ticks),
        cmocka_unit_test(test_one_task),
        cmocka_unit_test(test_kthread_owner),
        cmocka_unit_test(test_process_sums),
        cmocka_unit_test(test_threads_own_counters),
        cmocka_unit_test(test_zombie_process),
        cmocka_unit_test(test_leader_exited),
        cmocka_unit_test(test_order_and_orphans),
        cmocka_unit_test(test_no_io_accounting),
        cmocka_unit_test(test_cmdline_records),
        cmocka_unit_test(test_cmdline_unaligned),
        cmocka_unit_test(test_cmdline_truncated),
        cmocka_unit_test(test_cmdline_bogus),
        cmocka_unit_test(test_want_tgid),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
