/* Unit tests of the task iterator's pure conversions (src/source/taskiter.c): records
 * built by hand as the BPF program writes them, turned into what /proc and taskstats
 * say. No BPF, no privileges. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <sched.h>
#include <string.h>

#include "source/taskiter.h"

#define PF_KTHREAD 0x00200000

/* The records of one run, handed over in batches of `batch` as reads would, into out. */
static size_t tasks_of_batched(const struct tasks_rec *recs, size_t n, bool threads, size_t batch,
                               struct taskiter_task *out)
{
    struct taskiter_acc a = { 0 };
    taskiter_acc_begin(&a, threads, 100);
    for (size_t i = 0; i < n; i += batch)
        taskiter_acc_add(&a, recs + i, n - i < batch ? n - i : batch);
    taskiter_acc_end(&a);
    size_t m = a.n;
    memcpy(out, a.tasks, m * sizeof(out[0]));
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
    assert_string_equal(t.comm, "fio");
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
    assert_string_equal(t[0].comm, "db");
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
    assert_string_equal(t[2].comm, "db-worker");
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
        cmocka_unit_test(test_order_and_orphans),
        cmocka_unit_test(test_no_io_accounting),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
