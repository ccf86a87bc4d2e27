/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Unit tests of source/procinfo.c (one process in depth) on this very process: its
 * threads, leader first, then the caller's choice, then by tid; its state, memory and v2
 * cgroup; and a pid that does not exist. */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "source/procinfo.h"

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int quit;
static pid_t tids[4];

static void *sleeper(void *arg)
{
    pthread_mutex_lock(&mu);
    tids[(intptr_t)arg] = gettid();
    while (!quit)
        pthread_cond_wait(&cv, &mu);
    pthread_mutex_unlock(&mu);
    return NULL;
}

/* Until the four sleepers have said their tids and sleep on the condition (state S):
 * what the checks below read. pthread_create returns once a thread exists, not once it
 * has run; a fixed 50 ms was a guess a loaded machine (2 cores, a sanitizer build) can
 * miss, leaving a tid of 0 or a thread still running. */
static void wait_sleepers(void)
{
    char path[64], buf[512] = "";
    for (int tries = 0; tries < 10000; tries++) {
        int asleep = 0;
        pthread_mutex_lock(&mu);
        pid_t t[4];
        memcpy(t, tids, sizeof(t));
        pthread_mutex_unlock(&mu);
        for (int i = 0; i < 4 && t[i]; i++) {
            snprintf(path, sizeof(path), "/proc/self/task/%d/stat", (int)t[i]);
            FILE *f = fopen(path, "r");
            size_t n = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;
            if (f)
                fclose(f);
            buf[n] = '\0';
            const char *r = strrchr(buf, ')');
            if (r && r[1] == ' ' && r[2] == 'S')
                asleep++;
        }
        if (asleep == 4)
            return;
        usleep(1000);
    }
    fail_msg("the sleeper threads never all slept (last stat read: %.80s)", buf);
}

static void test_self(void **state)
{
    (void)state;
    struct procinfo_src *s;
    assert_int_equal(procinfo_open(&s), 0);
    pthread_t th[4];
    for (intptr_t i = 0; i < 4; i++)
        assert_int_equal(pthread_create(&th[i], NULL, sleeper, (void *)i), 0);
    wait_sleepers();
    struct procinfo p;
    /* A sleeper can be on a CPU for a moment (a spurious futex wakeup, the kernel's own
     * work), when the kernel gives no wchan: read again until it is asleep and says where,
     * as the screen's next refresh would (seen once beside the VM lane, a read in S with
     * wchan empty). */
    for (int tries = 0;; tries++) {
        assert_int_equal(procinfo_read(s, getpid(), 64, NULL, 0, &p), 0);
        if ((p.nthreads > 1 && p.threads[1].state == 'S' && p.threads[1].wchan[0]) || tries == 1000)
            break;
        procinfo_free(&p);
        usleep(1000);
    }
    assert_int_equal(p.threads_total, 5);
    assert_int_equal(p.nthreads, 5);
    assert_int_equal(p.threads[0].tid, getpid());              /* the leader first */
    for (int i = 1; i < 4; i++)
        assert_true(p.threads[i].tid < p.threads[i + 1].tid);
    assert_int_equal(p.threads[0].state, 'R');                 /* reading itself */
    assert_int_equal(p.state, 'R');
    assert_string_equal(p.threads[0].comm, "test_procinfo");
    assert_int_equal(p.threads[1].state, 'S');                 /* waiting on the condition */
    assert_true(p.threads[1].wchan[0] != '\0');                /* and the kernel says where */
    assert_true(p.rss_kb > 0);
    assert_true(p.maj_flt >= 0);
    assert_true(p.elapsed_s >= 0);
    /* the v2 cgroup, as /proc/self/cgroup's "0::" line gives it */
    char buf[4096] = "", want[600] = "";
    FILE *f = fopen("/proc/self/cgroup", "r");
    assert_non_null(f);
    while (fgets(buf, sizeof(buf), f))
        if (strncmp(buf, "0::", 3) == 0)
            snprintf(want, sizeof(want), "%.*s", (int)strcspn(buf + 3, "\n"), buf + 3);
    fclose(f);
    if (want[0])
        assert_string_equal(p.cgroup, want);
    procinfo_free(&p);
    /* at most max_threads kept, all counted */
    assert_int_equal(procinfo_read(s, getpid(), 1, NULL, 0, &p), 0);
    assert_int_equal(p.nthreads, 1);
    assert_int_equal(p.threads_total, 5);
    assert_int_equal(p.threads[0].tid, getpid());
    procinfo_free(&p);
    /* the caller's firsts after the leader, in its order; an absent tid and a repeat
     * skipped; then the lowest of the rest */
    pid_t first[] = { tids[3], 4194305, tids[1], tids[3] };
    assert_int_equal(procinfo_read(s, getpid(), 4, first, 4, &p), 0);
    assert_int_equal(p.threads_total, 5);
    assert_int_equal(p.nthreads, 4);
    assert_int_equal(p.threads[0].tid, getpid());
    assert_int_equal(p.threads[1].tid, tids[3]);
    assert_int_equal(p.threads[2].tid, tids[1]);
    pid_t low = tids[0] < tids[2] ? tids[0] : tids[2];
    assert_int_equal(p.threads[3].tid, low);
    assert_int_equal(p.threads[3].state, 'S');
    procinfo_free(&p);
    pthread_mutex_lock(&mu);
    quit = 1;
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&mu);
    for (int i = 0; i < 4; i++)
        pthread_join(th[i], NULL);
    procinfo_close(s);
}

static void test_gone(void **state)
{
    (void)state;
    struct procinfo_src *s;
    assert_int_equal(procinfo_open(&s), 0);
    struct procinfo p;
    /* pid_max is at most 4194304: this one cannot exist */
    assert_int_equal(procinfo_read(s, 4194305, 64, NULL, 0, &p), -ESRCH);
    assert_int_equal(p.nthreads, 0);
    assert_null(p.threads);
    procinfo_close(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_self),
        cmocka_unit_test(test_gone),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
