/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Unit tests of the write side (src/act/): the nr_requests rules, the udev rule text,
 * and sched_apply's refusals and roll-back on a tree of plain files standing in for
 * sysfs (the real kernel is exercised by tests/integration/test_actions_*.sh). */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "act/act.h"
#include "util.h"

static void test_default_nr_requests(void **state)
{
    (void)state;
    assert_int_equal(sched_default_nr_requests("none", 128), 128);
    assert_int_equal(sched_default_nr_requests("", 32), 32);
    assert_int_equal(sched_default_nr_requests("mq-deadline", 128), 256);
    assert_int_equal(sched_default_nr_requests("bfq", 1024), 256);   /* min(depth, 128) x 2 */
    assert_int_equal(sched_default_nr_requests("kyber", 2), 4);
    assert_int_equal(sched_default_nr_requests("bfq", -1), -1);      /* depth unknown */
}

static void test_nr_requests_valid(void **state)
{
    (void)state;
    assert_true(sched_nr_requests_valid("none", 128, 128));
    assert_false(sched_nr_requests_valid("none", 200, 128));        /* above the depth */
    assert_false(sched_nr_requests_valid("none", 64, -1));          /* depth unknown */
    assert_true(sched_nr_requests_valid("mq-deadline", 2048, 128));
    assert_false(sched_nr_requests_valid("mq-deadline", 2049, 128));
    assert_false(sched_nr_requests_valid("bfq", 3, 128));           /* the kernel makes it 4 */
}

/* A directory tree shaped like sysfs for one device. */
static char root[64];

static void put(const char *rel, const char *text)
{
    char p[256];
    snprintf(p, sizeof(p), "%s/%s", root, rel);
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static void get(const char *rel, char *buf, size_t n)
{
    char p[256];
    snprintf(p, sizeof(p), "%s/%s", root, rel);
    assert_true(read_file_at(AT_FDCWD, p, buf, n) >= 0);
    str_chomp(buf);
}

static int tree_setup(void **state)
{
    (void)state;
    strcpy(root, "/tmp/iotriage-act.XXXXXX");
    assert_non_null(mkdtemp(root));
    char p[256];
    const char *dirs[] = { "class", "class/block", "class/block/sdz", "class/block/sdz/queue",
                           "class/block/sdz/mq", "class/block/sdz/mq/0" };
    for (size_t i = 0; i < ARRAY_SIZE(dirs); i++) {
        snprintf(p, sizeof(p), "%s/%s", root, dirs[i]);
        assert_int_equal(mkdir(p, 0755), 0);
    }
    put("class/block/sdz/queue/scheduler", "[none] mq-deadline bfq\n");
    put("class/block/sdz/queue/nr_requests", "64\n");
    put("class/block/sdz/mq/0/nr_tags", "128\n");
    return 0;
}

static int tree_teardown(void **state)
{
    (void)state;
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
    return system(cmd) == 0 ? 0 : -1;
}

static void test_read(void **state)
{
    (void)state;
    struct sched_state s;
    assert_int_equal(sched_read(root, "sdz", &s), 0);
    assert_string_equal(s.sched, "none");
    assert_int_equal(s.nsched, 3);
    assert_string_equal(s.list[2], "bfq");
    assert_int_equal(s.nr_requests, 64);
    assert_int_equal(s.queue_depth, 128);
    assert_int_equal(sched_read(root, "nosuch", &s), -ENOENT);
    assert_int_equal(sched_read(root, "../sdz", &s), -EINVAL);      /* a name, not a path */
}

/* The operator saw another state than the device has now: nothing is written. */
static void test_stale_refused(void **state)
{
    (void)state;
    struct sched_state seen;
    assert_int_equal(sched_read(root, "sdz", &seen), 0);
    seen.nr_requests = 32;
    struct sched_outcome o;
    assert_int_equal(sched_apply(root, "sdz", &seen, "bfq", 0, &o), -ESTALE);
    char buf[64];
    get("class/block/sdz/queue/scheduler", buf, sizeof(buf));
    assert_string_equal(buf, "[none] mq-deadline bfq");
    assert_non_null(strstr(o.msg, "nothing written"));
}

/* The second write fails (nr_requests is a directory here): the first is undone. */
static void test_rollback(void **state)
{
    (void)state;
    char p[256];
    snprintf(p, sizeof(p), "%s/class/block/sdz/queue/nr_requests", root);
    unlink(p);
    assert_int_equal(mkdir(p, 0755), 0);
    struct sched_outcome o;
    int rc = sched_apply(root, "sdz", NULL, "bfq", 64, &o);
    assert_int_equal(rc, -EISDIR);
    assert_true(o.rolled_back);
    char buf[64];
    get("class/block/sdz/queue/scheduler", buf, sizeof(buf));
    assert_string_equal(buf, "none");          /* written back (a plain file keeps no list) */
    assert_non_null(strstr(o.msg, "switched back"));
    rmdir(p);
    put("class/block/sdz/queue/nr_requests", "64\n");
    put("class/block/sdz/queue/scheduler", "[none] mq-deadline bfq\n");
}

/* A file takes any text: what is read back is not the kernel's "[bfq]", and that is
 * reported, not taken for success. */
static void test_readback_checked(void **state)
{
    (void)state;
    struct sched_outcome o;
    assert_int_equal(sched_apply(root, "sdz", NULL, "bfq", 0, &o), -EIO);
    assert_non_null(strstr(o.msg, "accepted 'bfq' but shows"));
    put("class/block/sdz/queue/scheduler", "[none] mq-deadline bfq\n");
}

static void test_udev_rule(void **state)
{
    (void)state;
    char buf[256];
    sched_udev_rule(buf, sizeof(buf), root, "sdz", "bfq", 256);
    assert_string_equal(buf, "ACTION==\"add|change\", SUBSYSTEM==\"block\", KERNEL==\"sdz\", "
                             "ATTR{queue/scheduler}=\"bfq\", ATTR{queue/nr_requests}=\"256\"");
    put("class/block/sdz/wwid", "naa.5000c500a1b2c3d4\n");
    sched_udev_rule(buf, sizeof(buf), root, "sdz", "mq-deadline", 64);
    assert_string_equal(buf, "ACTION==\"add|change\", SUBSYSTEM==\"block\", ATTR{wwid}==\"naa.5000c500a1b2c3d4\", "
                             "ATTR{queue/scheduler}=\"mq-deadline\", ATTR{queue/nr_requests}=\"64\"");
    /* a wwid udev cannot quote safely: matched on the name instead */
    put("class/block/sdz/wwid", "t10.ATA   QEMU\"x\n");
    sched_udev_rule(buf, sizeof(buf), root, "sdz", "bfq", 256);
    assert_non_null(strstr(buf, "KERNEL==\"sdz\""));
    char p[256];
    snprintf(p, sizeof(p), "%s/class/block/sdz/wwid", root);
    unlink(p);
}

/* Read-only: refused before anything is opened for writing. Last: it cannot be undone. */
static void test_read_only(void **state)
{
    (void)state;
    act_set_read_only();
    assert_true(act_read_only());
    struct sched_outcome o;
    assert_int_equal(sched_apply(root, "sdz", NULL, "bfq", 0, &o), -EROFS);
    char buf[64];
    get("class/block/sdz/queue/scheduler", buf, sizeof(buf));
    assert_string_equal(buf, "[none] mq-deadline bfq");
    struct prio_outcome po;
    assert_int_equal(prio_apply(NULL, getpid(), 0, 0, &po), -EROFS);
    assert_int_equal(act_write_at(AT_FDCWD, "/dev/null", "x"), -EROFS);
}

/* The lower bound on the oldest request's age, from intervals without completions. */
static void test_stalled(void **state)
{
    (void)state;
    /* busy throughout, nothing completed in the last three: 1.5 s */
    struct sched_interval h[] = { { 10, 80, 0.5 }, { 0, 100, 0.5 }, { 0, 99.8, 0.5 }, { 0, 100, 0.5 } };
    assert_true(fabs(sched_stalled_s(h, 4) - (0.5 + 0.499 + 0.5)) < 1e-9);
    /* the run starts in an interval busy 40 %: its busy end counts, what came before not */
    struct sched_interval g[] = { { 0, 100, 1 }, { 0, 40, 1 }, { 0, 100, 1 } };
    assert_true(fabs(sched_stalled_s(g, 3) - 1.4) < 1e-9);
    /* the last interval completed something: no stall */
    struct sched_interval c[] = { { 0, 100, 1 }, { 3, 100, 1 } };
    assert_true(sched_stalled_s(c, 2) == 0);
    /* idle: nothing in flight */
    struct sched_interval i[] = { { 0, 0, 1 } };
    assert_true(sched_stalled_s(i, 1) == 0);
    /* unknown newest interval, or none: unknown, not 0 */
    struct sched_interval u[] = { { 0, 100, 1 }, { (double)NAN, (double)NAN, 1 } };
    assert_true(isnan(sched_stalled_s(u, 2)));
    assert_true(isnan(sched_stalled_s(u, 0)));
    /* an unknown interval earlier ends the run */
    struct sched_interval e[] = { { (double)NAN, 100, 1 }, { 0, 100, 1 } };
    assert_true(fabs(sched_stalled_s(e, 2) - 1.0) < 1e-9);
}

/* The switch in a child: its outcome comes back through the pipe. */
static void test_job_reports(void **state)
{
    (void)state;
    struct sched_state seen;
    assert_int_equal(sched_read(root, "sdz", &seen), 0);
    seen.nr_requests = 32;           /* stale: the child writes nothing and says why */
    struct sched_job j;
    assert_int_equal(sched_start(&j, root, "sdz", &seen, "bfq", 0), 0);
    assert_true(j.child.pid > 0 && j.child.fd >= 0);
    struct pollfd p = { .fd = j.child.fd, .events = POLLIN };
    assert_int_equal(poll(&p, 1, 10000), 1);
    struct sched_outcome o;
    assert_int_equal(sched_collect(&j, root, &o), 1);
    assert_int_equal(o.err, -ESTALE);
    assert_non_null(strstr(o.msg, "nothing written"));
    assert_int_equal(j.child.pid, 0);
    assert_int_equal(j.child.fd, -1);
    assert_int_equal(waitpid(-1, NULL, WNOHANG), -1);   /* reaped: no zombie left */
}

/* A write that never returns (a FIFO nobody reads stands in for a frozen queue): the
 * caller is told "still waiting" without blocking; a child killed meanwhile is reported
 * as such, with the device as it is now. */
static void test_job_stuck(void **state)
{
    (void)state;
    char p[256];
    snprintf(p, sizeof(p), "%s/class/block/sdz/queue/scheduler", root);
    unlink(p);
    assert_int_equal(mkfifo(p, 0600), 0);
    struct sched_job j;
    assert_int_equal(sched_start(&j, root, "sdz", NULL, "bfq", 0), 0);
    struct sched_outcome o;
    for (int k = 0; k < 5; k++) {
        assert_int_equal(sched_collect(&j, root, &o), 0);
        usleep(20000);
    }
    pid_t child = j.child.pid;
    assert_int_equal(kill(child, SIGKILL), 0);
    unlink(p);
    put("class/block/sdz/queue/scheduler", "[none] mq-deadline bfq\n");
    struct pollfd pf = { .fd = j.child.fd, .events = POLLIN };
    assert_int_equal(poll(&pf, 1, 10000), 1);       /* end of file: the child is gone */
    assert_int_equal(sched_collect(&j, root, &o), -ECHILD);
    assert_int_equal(o.err, -ECHILD);
    assert_non_null(strstr(o.msg, "killed by signal 9"));
    assert_non_null(strstr(o.msg, "now none"));
    assert_int_equal(j.child.fd, -1);
    /* abandoning a job that still runs returns at once and leaves the child alone */
    unlink(p);
    assert_int_equal(mkfifo(p, 0600), 0);
    assert_int_equal(sched_start(&j, root, "sdz", NULL, "bfq", 0), 0);
    child = j.child.pid;
    sched_abandon(&j);
    assert_int_equal(j.child.fd, -1);
    assert_int_equal(kill(child, 0), 0);             /* still there, blocked on its write */
    kill(child, SIGKILL);
    assert_int_equal(waitpid(child, NULL, 0), child);
    unlink(p);
    put("class/block/sdz/queue/scheduler", "[none] mq-deadline bfq\n");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_default_nr_requests),
        cmocka_unit_test(test_nr_requests_valid),
        cmocka_unit_test(test_read),
        cmocka_unit_test(test_stale_refused),
        cmocka_unit_test(test_rollback),
        cmocka_unit_test(test_readback_checked),
        cmocka_unit_test(test_udev_rule),
        cmocka_unit_test(test_stalled),
        cmocka_unit_test(test_job_reports),
        cmocka_unit_test(test_job_stuck),
        cmocka_unit_test(test_read_only),           /* last: read-only mode cannot be left */
    };
    return cmocka_run_group_tests(tests, tree_setup, tree_teardown);
}
