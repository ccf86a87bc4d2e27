/* Unit tests of source/procinfo.c (libproc2, one process in depth) on this very process:
 * its threads, leader first, its state and memory, and a pid that does not exist. */
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

static void *sleeper(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&mu);
    while (!quit)
        pthread_cond_wait(&cv, &mu);
    pthread_mutex_unlock(&mu);
    return NULL;
}

static void test_self(void **state)
{
    (void)state;
    struct procinfo_src *s;
    assert_int_equal(procinfo_open(&s), 0);
    pthread_t th[2];
    for (int i = 0; i < 2; i++)
        assert_int_equal(pthread_create(&th[i], NULL, sleeper, NULL), 0);
    usleep(50000);
    struct procinfo p;
    assert_int_equal(procinfo_read(s, getpid(), 64, &p), 0);
    assert_int_equal(p.threads_total, 3);
    assert_int_equal(p.nthreads, 3);
    assert_int_equal(p.threads[0].tid, getpid());              /* the leader first */
    assert_true(p.threads[1].tid < p.threads[2].tid);
    assert_int_equal(p.threads[0].state, 'R');                 /* reading itself */
    assert_int_equal(p.state, 'R');
    assert_string_equal(p.threads[0].comm, "test_procinfo");
    assert_int_equal(p.threads[1].state, 'S');                 /* waiting on the condition */
    assert_true(p.threads[1].wchan[0] != '\0');                /* and the kernel says where */
    assert_true(p.rss_kb > 0);
    assert_true(p.maj_flt >= 0);
    assert_true(p.elapsed_s >= 0);
    procinfo_free(&p);
    /* at most max_threads kept, all counted */
    assert_int_equal(procinfo_read(s, getpid(), 1, &p), 0);
    assert_int_equal(p.nthreads, 1);
    assert_int_equal(p.threads_total, 3);
    procinfo_free(&p);
    pthread_mutex_lock(&mu);
    quit = 1;
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&mu);
    for (int i = 0; i < 2; i++)
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
    assert_int_equal(procinfo_read(s, 4194305, 64, &p), -ESRCH);
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
