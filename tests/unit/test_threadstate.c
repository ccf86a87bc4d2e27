/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Unit tests of the sampled I/O wait (source/threadstate.h): the stat and wchan parsers,
 * the counts and the estimate, how delta_sampled fills only the tasks nothing else
 * measures, and the reader on a procfs tree built in a temporary directory. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "delta.h"
#include "source/threadstate.h"

#define S(x) x, sizeof(x) - 1

static void test_parse_state(void **st)
{
    (void)st;
    assert_int_equal(taskstate_parse_state(S("123 (dd) D 1 2 3")), 'D');
    /* a command with ") R (" in it: the state follows the last ')' */
    assert_int_equal(taskstate_parse_state(S("9 (a) R (b) S 1 2")), 'S');
    assert_int_equal(taskstate_parse_state(S("9 (x)")), 0);
    assert_int_equal(taskstate_parse_state(S("9 (x) ")), 0);
    assert_int_equal(taskstate_parse_state(S("no parenthesis D")), 0);
    assert_int_equal(taskstate_parse_state(S("")), 0);
    assert_int_equal(taskstate_parse_state(S("1 (x)D 0")), 0);
}

static void test_wchan_names(void **st)
{
    (void)st;
    assert_true(taskstate_wchan_is_io(S("__blkdev_direct_IO_simple")));
    assert_true(taskstate_wchan_is_io(S("folio_wait_bit_common\n")));
    assert_true(taskstate_wchan_is_io(S("blk_mq_get_tag")));
    assert_true(taskstate_wchan_is_io(S("jbd2_log_wait_commit")));
    assert_true(taskstate_wchan_is_io(S("__iomap_dio_rw.constprop.0")));
    assert_false(taskstate_wchan_is_io(S("__blkdev_direct_IO_simplex")));
    assert_false(taskstate_wchan_is_io(S("mutex_lock")));
    assert_false(taskstate_wchan_is_io(S("do_sys_poll")));
    assert_false(taskstate_wchan_is_io(S("")));
    assert_false(taskstate_wchan_is_io(S(".")));
    /* io_uring's completion wait: iowait to the kernel, but not a block wait */
    assert_true(taskstate_wchan_is_uring(S("io_cqring_wait\n")));
    assert_true(taskstate_wchan_is_uring(S("io_cqring_wait_schedule.isra.0")));
    assert_false(taskstate_wchan_is_uring(S("io_cqring_waitx")));
    assert_false(taskstate_wchan_is_uring(S("do_sys_poll")));
    assert_false(taskstate_wchan_is_uring(S("")));
    /* libaio's io_getevents: not iowait at all */
    assert_true(taskstate_wchan_is_aio(S("read_events")));
    assert_true(taskstate_wchan_is_aio(S("do_io_getevents.constprop.0\n")));
    assert_false(taskstate_wchan_is_aio(S("io_cqring_wait")));
    assert_false(taskstate_wchan_is_uring(S("read_events")));
    assert_false(taskstate_wchan_is_io(S("io_cqring_wait")));
}

static void test_classify(void **st)
{
    (void)st;
    assert_int_equal(taskstate_classify('R', S("folio_wait_bit_common")), TS_NOT_WAITING);
    assert_int_equal(taskstate_classify('S', S("do_sys_poll")), TS_NOT_WAITING);
    assert_int_equal(taskstate_classify('D', S("folio_wait_bit_common")), TS_IO_WAIT);
    assert_int_equal(taskstate_classify('D', S("__mutex_lock.constprop.0")), TS_OTHER_WAIT);
    /* no name: hidden from us, or woke in between: counted as I/O (an upper bound) */
    assert_int_equal(taskstate_classify('D', S("0")), TS_IO_WAIT);
    assert_int_equal(taskstate_classify('D', S("0\n")), TS_IO_WAIT);
    assert_int_equal(taskstate_classify('D', NULL, 0), TS_IO_WAIT);
}

static void test_counts_and_share(void **st)
{
    (void)st;
    struct ts_counts c = { 0 };
    /* 10 rounds of process 100: thread 100 in I/O wait 9 times, thread 101 5 times
     * and in another D wait twice; process 200 read only twice. */
    for (int r = 0; r < 10; r++) {
        ts_counts_round(&c, 100);
        ts_counts_add(&c, 100, 100, r < 9 ? TS_IO_WAIT : TS_NOT_WAITING);
        ts_counts_add(&c, 101, 100, r < 5 ? TS_IO_WAIT : r < 7 ? TS_OTHER_WAIT : TS_NOT_WAITING);
    }
    for (int r = 0; r < 2; r++) {
        ts_counts_round(&c, 200);
        ts_counts_add(&c, 200, 200, TS_IO_WAIT);
    }
    assert_true(fabs(ts_counts_share(&c, 100, 0) - 90.0) < 1e-9);
    assert_true(fabs(ts_counts_share(&c, 101, 0) - 50.0) < 1e-9);
    assert_true(fabs(ts_counts_share(&c, 0, 100) - 140.0) < 1e-9);   /* the sum, as taskstats */
    assert_true(isnan(ts_counts_share(&c, 0, 200)));                   /* too few rounds */
    assert_true(isnan(ts_counts_share(&c, 0, 300)));                   /* never read */
    assert_true(isnan(ts_counts_share(&c, 999, 0)));
    assert_true(ts_counts_saw_d(&c, 100));
    assert_false(ts_counts_saw_d(&c, 300));

    /* merging two periods adds them */
    struct ts_counts d = { 0 };
    ts_counts_merge(&d, &c);
    ts_counts_merge(&d, &c);
    assert_true(fabs(ts_counts_share(&d, 0, 100) - 140.0) < 1e-9);
    assert_true(fabs(ts_counts_share(&d, 0, 200) - 100.0) < 1e-9);   /* 4 rounds now */
    ts_counts_clear(&d);
    assert_true(isnan(ts_counts_share(&d, 0, 100)));
    ts_counts_free(&d);
    ts_counts_free(&c);
}

/* delta_sampled fills the unknown, and only the unknown. */
static void test_delta_sampled(void **st)
{
    (void)st;
    struct task_sample ts[3];
    memset(ts, 0, sizeof(ts));
    struct snapshot snap = { .threads = false, .tasks = ts, .ntasks = 3 };
    struct task_rates tr[3];
    memset(tr, 0, sizeof(tr));
    for (int i = 0; i < 3; i++) {
        ts[i].id = ts[i].tgid = 100 * (i + 1);
        ts[i].nlwp = 1;
        tr[i].task = &ts[i];
        tr[i].io_delay_pct = tr[i].swapin_delay_pct = tr[i].blkio_avg_ms = (double)NAN;
    }
    /* task 200 has a figure from taskstats already */
    tr[1].delay_valid = true;
    tr[1].io_delay_pct = 12.0;
    tr[1].io_delay_source = DELAY_SRC_TASKSTATS;
    struct result r = { .cur = &snap, .interval_s = 1.0, .tasks = tr, .ntasks = 3 };
    struct ts_counts c = { 0 };
    for (int k = 0; k < 10; k++)
        for (pid_t p = 100; p <= 300; p += 100) {
            ts_counts_round(&c, p);
            ts_counts_add(&c, p, p, TS_IO_WAIT);
            /* a second thread of 300 waits too: 200 %, capped at nlwp (1) x 100 */
            if (p == 300)
                ts_counts_add(&c, 301, p, TS_IO_WAIT);
        }
    delta_sampled(&r, &c);
    assert_int_equal(tr[0].io_delay_source, DELAY_SRC_SAMPLED);
    assert_true(tr[0].delay_valid);
    assert_true(fabs(tr[0].io_delay_pct - 100.0) < 1e-9);
    assert_true(isnan(tr[0].swapin_delay_pct) && isnan(tr[0].blkio_avg_ms));
    assert_int_equal(tr[1].io_delay_source, DELAY_SRC_TASKSTATS);
    assert_true(fabs(tr[1].io_delay_pct - 12.0) < 1e-9);
    assert_true(fabs(tr[2].io_delay_pct - 100.0) < 1e-9);
    assert_string_equal(delay_source_name(DELAY_SRC_SAMPLED), "sampled");

    /* the first frame (no interval) gets nothing */
    memset(&tr[0], 0, sizeof(tr[0]));
    tr[0].task = &ts[0];
    tr[0].io_delay_pct = (double)NAN;
    r.interval_s = 0;
    delta_sampled(&r, &c);
    assert_false(tr[0].delay_valid);
    ts_counts_free(&c);
}

/* The reader over a procfs tree of files: two threads of process 4242, one in D in an
 * I/O wait, one running; a process that does not exist is skipped. */
static void put(const char *dir, const char *rel, const char *text)
{
    char p[512];
    snprintf(p, sizeof(p), "%s/%s", dir, rel);
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static void test_reader_on_a_tree(void **st)
{
    (void)st;
    char root[] = "/tmp/iotriage-taskstate.XXXXXX";
    assert_non_null(mkdtemp(root));
    char p[512];
    const char *dirs[] = { "4242", "4242/task", "4242/task/4242", "4242/task/4243" };
    for (size_t i = 0; i < 4; i++) {
        snprintf(p, sizeof(p), "%s/%s", root, dirs[i]);
        assert_int_equal(mkdir(p, 0755), 0);
    }
    put(root, "4242/task/4242/stat", "4242 (reader) D 1 4242 4242 0 -1 0\n");
    put(root, "4242/task/4242/wchan", "__blkdev_direct_IO_simple");
    put(root, "4242/task/4243/stat", "4243 (reader) R 1 4242 4242 0 -1 0\n");
    put(root, "4242/task/4243/wchan", "0");

    struct taskstate *ts;
    assert_int_equal(taskstate_open(&ts, root), 0);
    struct ts_counts c = { 0 };
    pid_t targets[] = { 4242, 999999 };
    unsigned reads = 0;
    for (int k = 0; k < 4; k++)
        reads += taskstate_sample(ts, targets, 2, (size_t)k, &c);
    /* the first round: 2 listings, 2 stats, 1 wchan (of the thread in D); then the
     * files stay open and only the process that is not there is listed again */
    assert_int_equal(reads, 5 + 3 * 4);
    assert_int_equal(taskstate_files(ts), 3);
    assert_int_equal(c.rounds, 4);
    assert_true(fabs(ts_counts_share(&c, 4242, 0) - 100.0) < 1e-9);
    assert_true(fabs(ts_counts_share(&c, 4243, 0) - 0.0) < 1e-9);
    assert_true(fabs(ts_counts_share(&c, 0, 4242) - 100.0) < 1e-9);
    assert_true(isnan(ts_counts_share(&c, 0, 999999)));

    /* the same thread in another kind of D sleep is not I/O */
    put(root, "4242/task/4242/wchan", "__mutex_lock.constprop.0");
    ts_counts_clear(&c);
    for (int k = 0; k < 4; k++)
        taskstate_sample(ts, targets, 1, 0, &c);
    assert_true(fabs(ts_counts_share(&c, 0, 4242) - 0.0) < 1e-9);
    assert_true(ts_counts_saw_d(&c, 4242));

    /* a thread started meanwhile is sampled once the process is listed again */
    snprintf(p, sizeof(p), "%s/4242/task/4244", root);
    assert_int_equal(mkdir(p, 0755), 0);
    put(root, "4242/task/4244/stat", "4244 (reader) D 1 4242 4242 0 -1 0\n");
    put(root, "4242/task/4244/wchan", "folio_wait_bit_common\n");
    ts_counts_clear(&c);
    for (int k = 0; k < TS_RELIST_ROUNDS; k++)
        taskstate_sample(ts, targets, 1, 0, &c);
    assert_true(ts_counts_share(&c, 4244, 0) > 0);
    assert_true(ts_counts_share(&c, 4244, 0) < 100);

    /* a process no longer sampled gives its files back */
    ts_counts_clear(&c);
    taskstate_sample(ts, targets + 1, 1, 0, &c);
    assert_int_equal(taskstate_files(ts), 0);
    ts_counts_free(&c);
    taskstate_close(ts);

    char cmd[600];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
    assert_int_equal(system(cmd), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_state),
        cmocka_unit_test(test_wchan_names),
        cmocka_unit_test(test_classify),
        cmocka_unit_test(test_counts_and_share),
        cmocka_unit_test(test_delta_sampled),
        cmocka_unit_test(test_reader_on_a_tree),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
