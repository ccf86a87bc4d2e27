/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Tests for source/taskstats: the pure parser on fixtures (tests/fixtures/taskstats, see the
 * README there), then live queries against the running kernel (need root: CAP_NET_ADMIN for
 * the GET command, CAP_SYS_ADMIN to switch kernel.task_delayacct for the blkio test).
 *
 * Run from the repository root, or set IOTRIAGE_FIXTURES to the fixtures directory.
 * With IOTRIAGE_TASKSTATS_CAPTURE=DIR the binary instead (re)writes the fixture files into DIR
 * from live replies, cross-checks them against /proc, and prints the values the fixture tests
 * expect; nothing else runs.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "source/taskstats.h"

#define NOBODY 65534
#define DELAYACCT_SYSCTL "/proc/sys/kernel/task_delayacct"

/* ------------------------------------------------------------------------------------------- */
/* Small helpers                                                                                */
/* ------------------------------------------------------------------------------------------- */

static const char *fixture_path(const char *name)
{
    static char path[4096];
    const char *dir = getenv("IOTRIAGE_FIXTURES");

    if (dir == NULL || *dir == '\0')
        dir = "tests/fixtures";
    snprintf(path, sizeof path, "%s/taskstats/%s", dir, name);
    return path;
}

/* Reads a whole (small) file; returns its length or -errno. */
static ssize_t read_all(const char *path, void *buf, size_t cap)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    size_t got = 0;

    if (fd < 0)
        return -errno;
    while (got < cap) {
        ssize_t r = read(fd, (char *)buf + got, cap - got);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            int e = errno;
            close(fd);
            return -e;
        }
        if (r == 0)
            break;
        got += (size_t)r;
    }
    close(fd);
    return (ssize_t)got;
}

static int write_all(const char *path, const void *buf, size_t len)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    size_t put = 0;

    if (fd < 0)
        return -errno;
    while (put < len) {
        ssize_t w = write(fd, (const char *)buf + put, len - put);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            int e = errno;
            close(fd);
            return -e;
        }
        put += (size_t)w;
    }
    return close(fd) < 0 ? -errno : 0;
}

static ssize_t load_fixture(const char *name, unsigned char *buf, size_t cap)
{
    ssize_t n = read_all(fixture_path(name), buf, cap);

    if (n < 0)
        fail_msg("cannot read fixture %s: %s (run from the repository root or set "
                 "IOTRIAGE_FIXTURES)", fixture_path(name), strerror((int)-n));
    return n;
}

static int delayacct_get(void)
{
    char buf[16] = "";
    ssize_t n = read_all(DELAYACCT_SYSCTL, buf, sizeof buf - 1);

    if (n <= 0)
        return -1;
    return atoi(buf);
}

static int delayacct_set(int v)
{
    char buf[4];

    snprintf(buf, sizeof buf, "%d\n", v ? 1 : 0);
    return write_all(DELAYACCT_SYSCTL, buf, strlen(buf));
}

static void put_u16(unsigned char *p, uint16_t v) { memcpy(p, &v, sizeof v); }
static void put_u64(unsigned char *p, size_t off, uint64_t v) { memcpy(p + off, &v, sizeof v); }
static uint64_t get_u64(const unsigned char *p, size_t off)
{
    uint64_t v;
    memcpy(&v, p + off, sizeof v);
    return v;
}

static void wait_exit(pid_t pid)
{
    while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
        ;
}

/* /proc/PID/schedstat: run_time run_delay pcount. pcount and run_delay are what delay accounting
 * reports as cpu_count and cpu_delay_total (kernel/delayacct.c:delayacct_add_tsk). */
static int read_schedstat(pid_t pid, uint64_t *run_delay, uint64_t *pcount)
{
    char path[64], buf[256];
    unsigned long long rt, rd, pc;
    ssize_t n;

    snprintf(path, sizeof path, "/proc/%d/schedstat", (int)pid);
    n = read_all(path, buf, sizeof buf - 1);
    if (n <= 0)
        return -1;
    buf[n] = '\0';
    if (sscanf(buf, "%llu %llu %llu", &rt, &rd, &pc) != 3)
        return -1;
    *run_delay = rd;
    *pcount = pc;
    return 0;
}

/* /proc/PID/stat field 42, delayacct_blkio_ticks = nsec_to_clock_t(blkio_delay_total). */
static long long read_blkio_ticks(pid_t pid)
{
    char path[64], buf[2048];
    ssize_t n;

    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    n = read_all(path, buf, sizeof buf - 1);
    if (n <= 0)
        return -1;
    buf[n] = '\0';
    char *p = strrchr(buf, ')');          /* comm may contain spaces */
    if (p == NULL)
        return -1;
    p++;                                  /* the space before field 3 */
    for (int field = 3; field < 42; field++) {    /* move to the space before field+1 */
        p = strchr(p + 1, ' ');
        if (p == NULL)
            return -1;
    }
    return strtoll(p + 1, NULL, 10);
}

/* ------------------------------------------------------------------------------------------- */
/* A child that does synchronous O_DIRECT reads, then waits until told to exit.                  */
/* ------------------------------------------------------------------------------------------- */

#define DIO_FILE_SIZE (4u << 20)
#define DIO_CHUNK     (64u << 10)

struct dio_child {
    pid_t pid;
    int   go_fd;       /* closing it lets the child exit */
};

static int make_dio_file(char *path, size_t pathlen)
{
    static const char *const dirs[] = { "/tmp", "/work", "/var/tmp" };
    char *buf = malloc(DIO_CHUNK);

    if (buf == NULL)
        return -ENOMEM;
    memset(buf, 0x5a, DIO_CHUNK);
    for (size_t d = 0; d < sizeof dirs / sizeof dirs[0]; d++) {
        snprintf(path, pathlen, "%s/iotriage-ts-XXXXXX", dirs[d]);
        int fd = mkstemp(path);
        if (fd < 0)
            continue;
        bool ok = true;
        for (size_t off = 0; ok && off < DIO_FILE_SIZE; off += DIO_CHUNK)
            ok = write(fd, buf, DIO_CHUNK) == (ssize_t)DIO_CHUNK;
        ok = ok && fsync(fd) == 0;
        close(fd);
        /* O_DIRECT needs a file system backed by a block device (not tmpfs). */
        int dfd = ok ? open(path, O_RDONLY | O_DIRECT | O_CLOEXEC) : -1;
        if (dfd >= 0) {
            close(dfd);
            free(buf);
            return 0;
        }
        unlink(path);
    }
    free(buf);
    return -ENOTSUP;
}

static int dio_read_all(const char *path, unsigned passes)
{
    void *buf = NULL;
    int fd, rc = 0;

    if (posix_memalign(&buf, 4096, DIO_CHUNK) != 0)
        return -ENOMEM;
    fd = open(path, O_RDONLY | O_DIRECT | O_CLOEXEC);
    if (fd < 0) {
        free(buf);
        return -errno;
    }
    for (unsigned p = 0; p < passes && rc == 0; p++)
        for (off_t off = 0; off < (off_t)DIO_FILE_SIZE; off += DIO_CHUNK)
            if (pread(fd, buf, DIO_CHUNK, off) != (ssize_t)DIO_CHUNK) {
                rc = -EIO;
                break;
            }
    close(fd);
    free(buf);
    return rc;
}

struct thread_arg {
    const char *path;
    int         block_fd;   /* >= 0: after reading, block in read() on it */
};

static void *reader_thread(void *p)
{
    const struct thread_arg *a = p;
    char c;

    (void)dio_read_all(a->path, 1);
    if (a->block_fd >= 0)
        while (read(a->block_fd, &c, 1) < 0 && errno == EINTR)
            ;
    return NULL;
}

/* Fork a child that reads the file `passes` times with O_DIRECT (threads: then also one thread
 * that reads it once and exits, and one that reads it once and stays), reports ready and blocks until go_fd is closed.
 * Returns 0 or -errno. */
static int dio_child_start(struct dio_child *c, const char *path, unsigned passes, bool threads)
{
    int ready[2], go[2];

    if (pipe2(ready, O_CLOEXEC) < 0)
        return -errno;
    if (pipe2(go, O_CLOEXEC) < 0) {
        close(ready[0]);
        close(ready[1]);
        return -errno;
    }
    pid_t pid = fork();
    if (pid < 0) {
        int e = errno;
        close(ready[0]); close(ready[1]); close(go[0]); close(go[1]);
        return -e;
    }
    if (pid == 0) {
        char ok = 'r', c1;
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        close(ready[0]);
        close(go[1]);
        if (dio_read_all(path, passes) < 0)
            ok = 'e';
        if (threads) {
            pthread_t t1, t2;
            struct thread_arg a1 = { path, -1 }, a2 = { path, go[0] };
            if (pthread_create(&t1, NULL, reader_thread, &a1) != 0 ||
                pthread_join(t1, NULL) != 0 ||
                pthread_create(&t2, NULL, reader_thread, &a2) != 0)
                ok = 'e';
            /* Let t2 finish its reads before reporting. */
            struct timespec ts = { 0, 200 * 1000 * 1000 };
            nanosleep(&ts, NULL);
        }
        if (write(ready[1], &ok, 1) != 1)
            _exit(2);
        while (read(go[0], &c1, 1) < 0 && errno == EINTR)
            ;
        _exit(0);
    }
    close(ready[1]);
    close(go[0]);
    char r = 0;
    ssize_t n;
    while ((n = read(ready[0], &r, 1)) < 0 && errno == EINTR)
        ;
    close(ready[0]);
    c->pid = pid;
    c->go_fd = go[1];
    if (n != 1 || r != 'r') {
        close(go[1]);
        kill(pid, SIGKILL);
        wait_exit(pid);
        return -EIO;
    }
    return 0;
}

static void dio_child_stop(struct dio_child *c)
{
    if (c->pid > 0) {
        close(c->go_fd);
        kill(c->pid, SIGKILL);
        wait_exit(c->pid);
        c->pid = 0;
    }
}

/* ------------------------------------------------------------------------------------------- */
/* Fixture tests (pure)                                                                          */
/* ------------------------------------------------------------------------------------------- */

/* Values of the captured v16 PID reply (tests/fixtures/taskstats/v16-pid-dio.bin): a child that
 * was forked with task_delayacct=1, read 32 MiB with O_DIRECT in 64 KiB chunks (512 reads, 511
 * of which waited) and was stopped with SIGSTOP; schedstat and /proc/PID/stat field 42 agreed. */
#define DIO_CPU_COUNT      UINT64_C(513)
#define DIO_CPU_DELAY      UINT64_C(178747)
#define DIO_BLKIO_COUNT    UINT64_C(511)
#define DIO_BLKIO_DELAY    UINT64_C(32613268)
#define DIO_SWAPIN_COUNT   UINT64_C(0)
#define DIO_SWAPIN_DELAY   UINT64_C(0)

static void assert_dio_values(const struct delay_sample *s)
{
    assert_true(s->valid);
    assert_int_equal(s->error, 0);
    assert_int_equal(s->cpu_count, DIO_CPU_COUNT);
    assert_int_equal(s->cpu_delay_ns, DIO_CPU_DELAY);
    assert_int_equal(s->blkio_count, DIO_BLKIO_COUNT);
    assert_int_equal(s->blkio_delay_ns, DIO_BLKIO_DELAY);
    assert_int_equal(s->swapin_count, DIO_SWAPIN_COUNT);
    assert_int_equal(s->swapin_delay_ns, DIO_SWAPIN_DELAY);
}

static void test_fixture_v16_pid(void **state)
{
    unsigned char buf[4096];
    struct delay_sample s;
    (void)state;

    ssize_t n = load_fixture("v16-pid-dio.bin", buf, sizeof buf);
    assert_int_equal(n, 560);
    assert_int_equal(taskstats_parse(buf, (size_t)n, &s), 0);
    assert_int_equal(s.version, 16);
    assert_dio_values(&s);
}

/* The same bytes at an odd address: the decoder must not depend on alignment. */
static void test_fixture_unaligned(void **state)
{
    unsigned char buf[4096 + 8];
    struct delay_sample s;
    (void)state;

    ssize_t n = load_fixture("v16-pid-dio.bin", buf + 3, sizeof buf - 3);
    assert_int_equal(n, 560);
    assert_int_equal(taskstats_parse(buf + 3, (size_t)n, &s), 0);
    assert_dio_values(&s);
}

/* TGID reply of a two-thread child that also had a thread exit: the delays are the sum of the
 * live threads and the exited one. */
static void test_fixture_v16_tgid(void **state)
{
    unsigned char buf[4096];
    struct delay_sample s;
    (void)state;

    ssize_t n = load_fixture("v16-tgid-mt.bin", buf, sizeof buf);
    assert_int_equal(n, 560);
    assert_int_equal(taskstats_parse(buf, (size_t)n, &s), 0);
    assert_true(s.valid);
    assert_int_equal(s.version, 16);
    assert_int_equal(s.cpu_count, UINT64_C(261));
    assert_int_equal(s.cpu_delay_ns, UINT64_C(71815));
    assert_int_equal(s.blkio_count, UINT64_C(256));
    assert_int_equal(s.blkio_delay_ns, UINT64_C(15562306));
    assert_int_equal(s.swapin_count, 0);
    assert_int_equal(s.swapin_delay_ns, 0);
}

/* A task forked while task_delayacct was 0 (the default here): cpu figures but no blkio. */
static void test_fixture_v16_nodelayacct(void **state)
{
    unsigned char buf[4096];
    struct delay_sample s;
    (void)state;

    ssize_t n = load_fixture("v16-pid-nodelayacct.bin", buf, sizeof buf);
    assert_int_equal(n, 560);
    assert_int_equal(taskstats_parse(buf, (size_t)n, &s), 0);
    assert_true(s.valid);
    assert_int_equal(s.version, 16);
    assert_true(s.cpu_count > 0);
    assert_int_equal(s.blkio_count, 0);
    assert_int_equal(s.blkio_delay_ns, 0);
}

static void test_fixture_v14(void **state)
{
    unsigned char buf[4096];
    struct delay_sample s;
    (void)state;

    ssize_t n = load_fixture("v14-432.bin", buf, sizeof buf);
    assert_int_equal(n, 432);
    assert_int_equal(taskstats_parse(buf, (size_t)n, &s), 0);
    assert_int_equal(s.version, 14);
    assert_dio_values(&s);
}

/* v15 put max/min fields after every *_delay_total: blkio_count at 48, swapin_count at 80. */
static void test_fixture_v15(void **state)
{
    unsigned char buf[4096];
    struct delay_sample s;
    (void)state;

    ssize_t n = load_fixture("v15-560.bin", buf, sizeof buf);
    assert_int_equal(n, 560);
    assert_int_equal(taskstats_parse(buf, (size_t)n, &s), 0);
    assert_int_equal(s.version, 15);
    assert_dio_values(&s);
    /* The v16 offsets would have read cpu_delay_max as blkio_count. */
    assert_int_equal(get_u64(buf, 32), UINT64_C(0x1111111111111111));
}

static void test_fixture_short(void **state)
{
    unsigned char buf[4096];
    struct delay_sample s;
    (void)state;

    ssize_t n = load_fixture("short-40.bin", buf, sizeof buf);
    assert_int_equal(n, 40);
    assert_int_equal(taskstats_parse(buf, (size_t)n, &s), -EINVAL);
    assert_false(s.valid);
    assert_int_equal(s.error, -EINVAL);
    assert_int_equal(s.blkio_count, 0);
}

static void test_fixture_version0(void **state)
{
    unsigned char buf[4096];
    struct delay_sample s;
    (void)state;

    ssize_t n = load_fixture("v0-560.bin", buf, sizeof buf);
    assert_int_equal(n, 560);
    assert_int_equal(taskstats_parse(buf, (size_t)n, &s), -EINVAL);
    assert_false(s.valid);
    assert_int_equal(s.cpu_count, 0);
}

/* A v16 struct cut to v14's length: long enough for our fields, but not a whole v16 reply. */
static void test_fixture_v16_cut(void **state)
{
    unsigned char buf[4096];
    struct delay_sample s;
    (void)state;

    ssize_t n = load_fixture("v16-cut-432.bin", buf, sizeof buf);
    assert_int_equal(n, 432);
    assert_int_equal(taskstats_parse(buf, (size_t)n, &s), -EPROTO);
    assert_false(s.valid);
    assert_int_equal(s.version, 16);
    assert_int_equal(s.blkio_count, 0);
}

/* Edge cases built in memory. */
static void test_parse_edges(void **state)
{
    unsigned char b[1024];
    struct delay_sample s;
    (void)state;

    assert_int_equal(taskstats_parse(NULL, 560, &s), -EINVAL);
    memset(b, 0, sizeof b);
    put_u16(b, 16);
    assert_int_equal(taskstats_parse(b, 0, &s), -EINVAL);
    assert_int_equal(taskstats_parse(b, 1, &s), -EINVAL);
    assert_int_equal(taskstats_parse(b, 63, &s), -EINVAL);    /* ends inside swapin_delay */

    /* Implausible version (a byte-swapped 16 reads 4096). */
    put_u16(b, 0x1000);
    assert_int_equal(taskstats_parse(b, 560, &s), -EPROTO);

    /* Old version 8: only our 64 bytes are required. */
    put_u16(b, 8);
    put_u64(b, 16, 3);
    put_u64(b, 24, 300);
    put_u64(b, 32, 4);
    put_u64(b, 40, 400);
    put_u64(b, 48, 5);
    put_u64(b, 56, 500);
    assert_int_equal(taskstats_parse(b, 64, &s), 0);
    assert_true(s.valid);
    assert_int_equal(s.version, 8);
    assert_int_equal(s.cpu_count, 3);
    assert_int_equal(s.cpu_delay_ns, 300);
    assert_int_equal(s.blkio_count, 4);
    assert_int_equal(s.blkio_delay_ns, 400);
    assert_int_equal(s.swapin_count, 5);
    assert_int_equal(s.swapin_delay_ns, 500);

    /* A future version that appended fields: same offsets, accepted. */
    put_u16(b, 17);
    assert_int_equal(taskstats_parse(b, 600, &s), 0);
    assert_int_equal(s.version, 17);
    assert_int_equal(s.blkio_delay_ns, 400);
    assert_int_equal(taskstats_parse(b, 559, &s), -EPROTO);

    /* v13 and v14 must be at least their struct size. */
    put_u16(b, 13);
    assert_int_equal(taskstats_parse(b, 416, &s), 0);
    assert_int_equal(taskstats_parse(b, 415, &s), -EPROTO);
    put_u16(b, 14);
    assert_int_equal(taskstats_parse(b, 431, &s), -EPROTO);

    /* Version 1 (2.6.18): u16 version, u16 padding[3], the delay block at 8. */
    memset(b, 0, sizeof b);
    put_u16(b, 1);
    for (unsigned i = 0; i < 6; i++)
        put_u64(b, 8 + 8 * i, 10 + i);
    assert_int_equal(taskstats_parse(b, 55, &s), -EINVAL);
    assert_int_equal(taskstats_parse(b, 72, &s), 0);
    assert_int_equal(s.cpu_count, 10);
    assert_int_equal(s.cpu_delay_ns, 11);
    assert_int_equal(s.blkio_count, 12);
    assert_int_equal(s.blkio_delay_ns, 13);
    assert_int_equal(s.swapin_count, 14);
    assert_int_equal(s.swapin_delay_ns, 15);
}

/* ------------------------------------------------------------------------------------------- */
/* Live tests                                                                                    */
/* ------------------------------------------------------------------------------------------- */

/* Opens a source for a live test; skips the test when we lack CAP_NET_ADMIN. */
static struct taskstats_src *open_or_fail(void)
{
    struct taskstats_src *src = NULL;
    struct delay_sample s;
    pid_t self = getpid();
    char err[256] = "";
    int rc = taskstats_open(&src, err, sizeof err);

    if (rc != 0)
        fail_msg("taskstats_open: %d %s", rc, err);
    rc = taskstats_query(src, &self, 1, false, &s, err, sizeof err);
    taskstats_close(src);
    if (rc == -EPERM) {
        print_message("skipped: %s\n", err);
        skip();
    }
    /* A fresh source, so that the tests see counters that start at zero. */
    rc = taskstats_open(&src, err, sizeof err);
    if (rc != 0)
        fail_msg("taskstats_open: %d %s", rc, err);
    return src;
}

static void test_live_self(void **state)
{
    struct taskstats_src *src = open_or_fail();
    struct delay_sample pid_s, tgid_s;
    pid_t self = getpid();
    char err[256] = "";
    (void)state;

    assert_int_equal(taskstats_query(src, &self, 1, false, &pid_s, err, sizeof err), 0);
    assert_true(pid_s.valid);
    assert_true(pid_s.version >= 1);
    assert_int_equal(pid_s.error, 0);
    assert_true(pid_s.cpu_count >= 1);

    assert_int_equal(taskstats_query(src, &self, 1, true, &tgid_s, err, sizeof err), 0);
    assert_true(tgid_s.valid);
    assert_true(tgid_s.version >= 1);
    assert_int_equal(tgid_s.version, pid_s.version);
    /* Single-threaded and we have not run in between except for the query itself. */
    assert_true(tgid_s.cpu_count >= pid_s.cpu_count);

    /* The raw reply decodes to the same thing. */
    unsigned char raw[4096];
    size_t len = 0;
    struct delay_sample r;
    assert_int_equal(taskstats_fetch_raw(src, self, false, raw, sizeof raw, &len, err,
                                         sizeof err), 0);
    assert_true(len >= 64);
    assert_int_equal(taskstats_parse(raw, len, &r), 0);
    assert_int_equal(r.version, pid_s.version);
    assert_true(r.cpu_count >= pid_s.cpu_count);
    assert_int_equal(taskstats_fetch_raw(src, self, false, raw, 8, &len, err, sizeof err),
                     -EMSGSIZE);
    assert_true(len >= 64);

    taskstats_close(src);
}

/* A stopped child does not run, so its schedstat and its taskstats cpu fields must agree
 * exactly: an independent check of the cpu_count/cpu_delay_total offsets. */
static void test_live_cpu_matches_schedstat(void **state)
{
    struct taskstats_src *src = open_or_fail();
    char err[256] = "";
    int st;
    (void)state;

    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        for (volatile unsigned long i = 0; i < 20000000ul; i = i + 1)
            ;
        raise(SIGSTOP);
        _exit(0);
    }
    while (waitpid(pid, &st, WUNTRACED) < 0 && errno == EINTR)
        ;
    assert_true(WIFSTOPPED(st));

    uint64_t run_delay = 0, pcount = 0;
    struct delay_sample s;
    int rc_sched = read_schedstat(pid, &run_delay, &pcount);
    int rc = taskstats_query(src, &pid, 1, false, &s, err, sizeof err);
    kill(pid, SIGKILL);
    wait_exit(pid);
    taskstats_close(src);

    if (rc_sched != 0)
        skip();                           /* kernel without CONFIG_SCHED_INFO */
    assert_int_equal(rc, 0);
    assert_true(s.valid);
    assert_int_equal(s.cpu_count, pcount);
    assert_int_equal(s.cpu_delay_ns, run_delay);
}

static void test_live_missing_pid(void **state)
{
    char err[256] = "";
    char buf[32] = "";
    (void)state;

    /* pid_max itself is never handed out (pids are < pid_max); a reaped child's pid is free
     * until it is reused, which takes a full cycle of pid_max. */
    assert_true(read_all("/proc/sys/kernel/pid_max", buf, sizeof buf - 1) > 0);
    pid_t pid_max = (pid_t)atoi(buf);
    pid_t gone = fork();
    assert_true(gone >= 0);
    if (gone == 0)
        _exit(0);
    wait_exit(gone);

    struct taskstats_src *src = open_or_fail();
    pid_t ids[5] = { getpid(), pid_max, gone, 0, getpid() };
    struct delay_sample out[5];
    for (int tg = 0; tg < 2; tg++) {
        assert_int_equal(taskstats_query(src, ids, 5, tg != 0, out, err, sizeof err), 0);
        assert_true(out[0].valid);
        assert_false(out[1].valid);
        assert_int_equal(out[1].error, -ESRCH);
        assert_false(out[2].valid);
        assert_int_equal(out[2].error, -ESRCH);
        assert_false(out[3].valid);
        assert_int_equal(out[3].error, -EINVAL);
        assert_true(out[4].valid);
    }
    struct taskstats_counters c;
    taskstats_get_counters(src, &c);
    assert_int_equal(c.gone, 4);
    assert_int_equal(c.bad_replies, 0);
    assert_int_equal(taskstats_query(src, ids, 0, false, out, err, sizeof err), 0);
    taskstats_close(src);
}

static volatile pid_t thread_tid;

static void *tid_thread(void *p)
{
    int fd = *(const int *)p;
    char c;

    thread_tid = gettid();
    while (read(fd, &c, 1) < 0 && errno == EINTR)
        ;
    return NULL;
}

/* PID mode takes any TID; TGID mode accepts a non-leader TID too and answers for its group. */
static void test_live_thread_ids(void **state)
{
    struct taskstats_src *src = open_or_fail();
    struct delay_sample out[4];
    pthread_t t;
    int block[2];
    char err[256] = "";
    (void)state;

    assert_int_equal(pipe2(block, O_CLOEXEC), 0);
    thread_tid = 0;
    assert_int_equal(pthread_create(&t, NULL, tid_thread, &block[0]), 0);
    while (thread_tid == 0)
        sched_yield();
    pid_t ids[4] = { getpid(), thread_tid, getpid(), thread_tid };
    int rc1 = taskstats_query(src, ids, 2, false, out, err, sizeof err);
    int rc2 = taskstats_query(src, ids + 2, 2, true, out + 2, err, sizeof err);
    close(block[1]);
    pthread_join(t, NULL);
    close(block[0]);
    taskstats_close(src);

    assert_int_equal(rc1, 0);
    assert_int_equal(rc2, 0);
    for (int i = 0; i < 4; i++)
        assert_true(out[i].valid);
    assert_true(out[1].cpu_count >= 1);
    /* The group figures cover both threads. */
    assert_true(out[2].cpu_count >= out[0].cpu_count + out[1].cpu_count);
    assert_true(out[3].cpu_count >= out[0].cpu_count + out[1].cpu_count);
}

/* Pins what the kernel does for a zombie (exited, not reaped): the PID query still answers with
 * the task's final figures, while the TGID query answers "valid" with all delays 0 (it skips
 * exited threads), so a monitor must not take that for a counter reset. After the reap: ESRCH. */
static void test_live_zombie(void **state)
{
    struct delay_sample out[2], after;
    char err[256] = "";
    siginfo_t si;
    (void)state;

    /* Fork before opening: the child must not exit holding a copy of the source. */
    pid_t z = fork();
    assert_true(z >= 0);
    if (z == 0) {
        for (volatile unsigned long i = 0; i < 5000000ul; i = i + 1)
            ;
        _exit(0);
    }
    struct taskstats_src *src = open_or_fail();
    /* Wait for the exit without reaping. */
    assert_int_equal(waitid(P_PID, (id_t)z, &si, WEXITED | WNOWAIT), 0);
    int rc1 = taskstats_query(src, &z, 1, false, &out[0], err, sizeof err);
    int rc2 = taskstats_query(src, &z, 1, true, &out[1], err, sizeof err);
    wait_exit(z);
    int rc3 = taskstats_query(src, &z, 1, false, &after, err, sizeof err);
    taskstats_close(src);

    assert_int_equal(rc1, 0);
    assert_int_equal(rc2, 0);
    assert_int_equal(rc3, 0);
    assert_true(out[0].valid);
    assert_true(out[0].cpu_count >= 1);
    assert_true(out[1].valid);
    assert_int_equal(out[1].cpu_count, 0);
    assert_int_equal(out[1].cpu_delay_ns, 0);
    assert_false(after.valid);
    assert_int_equal(after.error, -ESRCH);
}

#define NCHILD 500

struct children {
    pid_t pid[NCHILD];
    size_t n;
};

static int children_teardown(void **state);

static int children_setup(void **state)
{
    struct children *c = calloc(1, sizeof *c);

    if (c == NULL)
        return -1;
    for (size_t i = 0; i < NCHILD; i++) {
        pid_t pid = fork();
        if (pid < 0)
            break;
        if (pid == 0) {
            prctl(PR_SET_PDEATHSIG, SIGKILL);
            for (;;)
                pause();
        }
        c->pid[c->n++] = pid;
    }
    *state = c;
    if (c->n == NCHILD)
        return 0;
    children_teardown(state);     /* cmocka does not call the teardown when setup fails */
    *state = NULL;
    return -1;
}

static int children_teardown(void **state)
{
    struct children *c = *state;

    if (c == NULL)
        return 0;
    for (size_t i = 0; i < c->n; i++)
        kill(c->pid[i], SIGKILL);
    for (size_t i = 0; i < c->n; i++)
        wait_exit(c->pid[i]);
    free(c);
    return 0;
}

static void query_children(struct taskstats_src *src, const struct children *c, bool tgid)
{
    static struct delay_sample out[NCHILD];
    char err[256] = "";

    memset(out, 0xa5, sizeof out);
    int rc = taskstats_query(src, c->pid, c->n, tgid, out, err, sizeof err);
    if (rc != 0)
        fail_msg("query of %zu children: %d %s", c->n, rc, err);
    for (size_t i = 0; i < c->n; i++) {
        if (!out[i].valid)
            fail_msg("child %zu (pid %d) not valid: error %d", i, (int)c->pid[i],
                     (int)out[i].error);
        assert_true(out[i].version >= 1);
    }
}

static void test_live_500_children(void **state)
{
    const struct children *c = *state;
    struct taskstats_src *src = open_or_fail();
    struct taskstats_counters k;
    (void)state;

    query_children(src, c, false);
    query_children(src, c, true);
    taskstats_get_counters(src, &k);
    assert_int_equal(k.replies, 2 * NCHILD);
    assert_int_equal(k.enobufs, 0);

    assert_int_equal(taskstats_set_batch(src, 1), 0);
    query_children(src, c, false);
    assert_int_equal(taskstats_set_batch(src, 0), -EINVAL);
    assert_int_equal(taskstats_set_batch(src, TASKSTATS_BATCH_MAX + 1), -EINVAL);
    taskstats_close(src);
}

/* One sendmsg with 500 requests into a 16 KiB receive buffer (32 KiB effective, about 25
 * replies): the kernel drops replies, and the query must resend exactly those. */
static void test_live_enobufs_recovery(void **state)
{
    const struct children *c = *state;
    struct taskstats_src *src = open_or_fail();
    struct taskstats_counters k;

    assert_int_equal(taskstats_set_rcvbuf(src, 16384), 0);
    assert_int_equal(taskstats_set_batch(src, TASKSTATS_BATCH_MAX), 0);
    query_children(src, c, false);
    query_children(src, c, true);
    taskstats_get_counters(src, &k);
    printf("  enobufs recovery: %" PRIu64 " requests for %d replies, %" PRIu64 " ENOBUFS, %"
           PRIu64 " resent\n", k.requests, 2 * NCHILD, k.enobufs, k.resent);
    assert_int_equal(k.replies, 2 * NCHILD);
    assert_true(k.enobufs > 0);
    assert_true(k.resent > 0);
    assert_int_equal(k.bad_replies, 0);
    taskstats_close(src);
}

/* Unprivileged: the family lookup works, the GET is refused with EPERM for the whole query. */
static void test_live_unprivileged(void **state)
{
    int st;
    (void)state;

    if (geteuid() != 0)
        skip();                           /* we cannot switch to nobody */
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        struct taskstats_src *src = NULL;
        char err[256] = "";
        pid_t ids[2] = { getpid(), 1 };
        struct delay_sample out[2];

        if (setgroups(0, NULL) < 0 || setresgid(NOBODY, NOBODY, NOBODY) < 0 ||
            setresuid(NOBODY, NOBODY, NOBODY) < 0)
            _exit(10);
        if (taskstats_open(&src, err, sizeof err) != 0)
            _exit(11);
        int rc = taskstats_query(src, ids, 2, false, out, err, sizeof err);
        taskstats_close(src);
        if (rc != -EPERM)
            _exit(12);
        if (strstr(err, "CAP_NET_ADMIN") == NULL)
            _exit(13);
        if (out[0].valid || out[0].error != -ECANCELED || out[1].valid)
            _exit(14);
        _exit(0);
    }
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
        ;
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 0);
}

/* Blkio delay: switch task_delayacct on, fork a child that does O_DIRECT reads, check its
 * blkio figures, and restore the sysctl before any assertion can abort the test. */
static void test_live_blkio(void **state)
{
    struct taskstats_src *src = open_or_fail();
    struct dio_child child = { 0 };
    struct delay_sample pid_s, tgid_s;
    char err[256] = "", path[64];
    int rc_pid = -1, rc_tgid = -1, rc_child, rc_file, rc_set;
    long long ticks = -1;
    (void)state;

    rc_file = make_dio_file(path, sizeof path);
    if (rc_file != 0) {
        taskstats_close(src);
        fail_msg("cannot create a file usable with O_DIRECT: %s", strerror(-rc_file));
    }
    int old = delayacct_get();
    if (old < 0 || access(DELAYACCT_SYSCTL, W_OK) != 0) {
        unlink(path);
        taskstats_close(src);
        skip();          /* kernel without CONFIG_TASK_DELAY_ACCT, or we may not switch it */
    }

    /* --- from here until the restore: no assertions --- */
    rc_set = delayacct_set(1);
    rc_child = rc_set == 0 ? dio_child_start(&child, path, 4, false) : rc_set;
    if (rc_child == 0) {
        rc_pid = taskstats_query(src, &child.pid, 1, false, &pid_s, err, sizeof err);
        rc_tgid = taskstats_query(src, &child.pid, 1, true, &tgid_s, err, sizeof err);
        ticks = read_blkio_ticks(child.pid);
        dio_child_stop(&child);
    }
    int rc_restore = delayacct_set(old);
    /* --- restored --- */
    unlink(path);
    taskstats_close(src);

    assert_int_equal(rc_restore, 0);
    assert_int_equal(delayacct_get(), old);
    assert_int_equal(rc_set, 0);
    assert_int_equal(rc_child, 0);
    if (rc_pid != 0 || rc_tgid != 0)
        fail_msg("query: pid %d tgid %d: %s", rc_pid, rc_tgid, err);
    assert_true(pid_s.valid);
    assert_true(pid_s.blkio_count > 0);
    assert_true(pid_s.blkio_delay_ns > 0);
    /* Independent check of the blkio offset: /proc/PID/stat field 42 is the same total in
     * clock ticks (nsec_to_clock_t rounds down). */
    long hz = sysconf(_SC_CLK_TCK);
    assert_true(ticks >= 0);
    assert_int_equal((uint64_t)ticks, pid_s.blkio_delay_ns / (UINT64_C(1000000000) / (uint64_t)hz));
    /* Single-threaded, no exited threads, idle while we asked: TGID figures are the PID's. */
    assert_true(tgid_s.valid);
    assert_int_equal(tgid_s.blkio_count, pid_s.blkio_count);
    assert_int_equal(tgid_s.blkio_delay_ns, pid_s.blkio_delay_ns);
    assert_int_equal(tgid_s.cpu_count, pid_s.cpu_count);
    assert_int_equal(tgid_s.cpu_delay_ns, pid_s.cpu_delay_ns);
}

/* ------------------------------------------------------------------------------------------- */
/* Capture mode: write the fixture files from live replies                                      */
/* ------------------------------------------------------------------------------------------- */

static void print_sample(const char *name, const struct delay_sample *s)
{
    printf("%-26s valid=%d v=%u cpu=%" PRIu64 "/%" PRIu64 " blkio=%" PRIu64 "/%" PRIu64
           " swapin=%" PRIu64 "/%" PRIu64 "\n", name, s->valid, s->version, s->cpu_count,
           s->cpu_delay_ns, s->blkio_count, s->blkio_delay_ns, s->swapin_count,
           s->swapin_delay_ns);
}

static int save(const char *dir, const char *name, const void *buf, size_t len)
{
    char path[4096];
    struct delay_sample s;

    snprintf(path, sizeof path, "%s/%s", dir, name);
    int rc = write_all(path, buf, len);
    if (rc != 0) {
        fprintf(stderr, "capture: %s: %s\n", path, strerror(-rc));
        return rc;
    }
    rc = taskstats_parse(buf, len, &s);
    printf("%-26s %4zu bytes, parse %d\n", name, len, rc);
    print_sample(name, &s);
    return 0;
}

static int capture(const char *dir)
{
    static unsigned char raw[4096], v15[4096];
    struct taskstats_src *src = NULL;
    struct dio_child single = { 0 }, multi = { 0 };
    char err[256] = "", path[64];
    size_t len_pid = 0, len_tgid = 0, len_nd = 0;
    static unsigned char raw_tgid[4096], raw_nd[4096];
    int rc;

    if (taskstats_open(&src, err, sizeof err) != 0) {
        fprintf(stderr, "capture: %s\n", err);
        return 1;
    }
    /* Our own reply, forked (by the shell) while task_delayacct was off. */
    rc = taskstats_fetch_raw(src, getpid(), false, raw_nd, sizeof raw_nd, &len_nd, err,
                             sizeof err);
    if (rc != 0) {
        fprintf(stderr, "capture: %s\n", err);
        taskstats_close(src);
        return 1;
    }
    if (make_dio_file(path, sizeof path) != 0) {
        fprintf(stderr, "capture: no O_DIRECT-capable file\n");
        taskstats_close(src);
        return 1;
    }
    int old = delayacct_get();
    long long ticks = -1;
    uint64_t run_delay = 0, pcount = 0;
    int rc_single = -1, rc_multi = -1;
    if (delayacct_set(1) == 0) {
        rc_single = dio_child_start(&single, path, 8, false);
        rc_multi = dio_child_start(&multi, path, 2, true);
        if (rc_single == 0 && rc_multi == 0) {
            kill(single.pid, SIGSTOP);
            int st;
            waitpid(single.pid, &st, WUNTRACED);
            rc = taskstats_fetch_raw(src, single.pid, false, raw, sizeof raw, &len_pid, err,
                                     sizeof err);
            if (rc == 0)
                rc = taskstats_fetch_raw(src, multi.pid, true, raw_tgid, sizeof raw_tgid,
                                         &len_tgid, err, sizeof err);
            ticks = read_blkio_ticks(single.pid);
            read_schedstat(single.pid, &run_delay, &pcount);
        }
        dio_child_stop(&single);
        dio_child_stop(&multi);
    }
    delayacct_set(old);
    unlink(path);
    taskstats_close(src);
    if (rc_single != 0 || rc_multi != 0 || rc != 0 || len_pid != 560) {
        fprintf(stderr, "capture failed: children %d %d, fetch %d (%s), len %zu\n", rc_single,
                rc_multi, rc, err, len_pid);
        return 1;
    }

    struct delay_sample s;
    taskstats_parse(raw, len_pid, &s);
    printf("cross-check: schedstat pcount=%" PRIu64 " run_delay=%" PRIu64 ", stat blkio ticks=%lld"
           " (expect %" PRIu64 ")\n", pcount, run_delay, ticks,
           s.blkio_delay_ns / (UINT64_C(1000000000) / (uint64_t)sysconf(_SC_CLK_TCK)));
    if (s.cpu_count != pcount || s.cpu_delay_ns != run_delay ||
        (uint64_t)ticks != s.blkio_delay_ns / (UINT64_C(1000000000) /
                                               (uint64_t)sysconf(_SC_CLK_TCK))) {
        fprintf(stderr, "capture: decoded values disagree with /proc\n");
        return 1;
    }

    if (save(dir, "v16-pid-dio.bin", raw, len_pid) || save(dir, "v16-tgid-mt.bin", raw_tgid,
                                                            len_tgid) ||
        save(dir, "v16-pid-nodelayacct.bin", raw_nd, len_nd))
        return 1;

    /* v14: same bytes, version 14, cut to v14's 432 bytes. */
    memcpy(v15, raw, len_pid);
    put_u16(v15, 14);
    if (save(dir, "v14-432.bin", v15, 432))
        return 1;

    /* v15: max/min inserted after each *_delay_total (distinctive fillers), the rest of the
     * v16 struct shifted by the 48 bytes inserted before swapin_delay_total's end. */
    memset(v15, 0, sizeof v15);
    memcpy(v15, raw, 16);
    put_u16(v15, 15);
    put_u64(v15, 16, get_u64(raw, 16));                 /* cpu_count */
    put_u64(v15, 24, get_u64(raw, 24));                 /* cpu_delay_total */
    put_u64(v15, 32, UINT64_C(0x1111111111111111));     /* cpu_delay_max */
    put_u64(v15, 40, UINT64_C(0x2222222222222222));     /* cpu_delay_min */
    put_u64(v15, 48, get_u64(raw, 32));                 /* blkio_count */
    put_u64(v15, 56, get_u64(raw, 40));                 /* blkio_delay_total */
    put_u64(v15, 64, UINT64_C(0x3333333333333333));
    put_u64(v15, 72, UINT64_C(0x4444444444444444));
    put_u64(v15, 80, get_u64(raw, 48));                 /* swapin_count */
    put_u64(v15, 88, get_u64(raw, 56));                 /* swapin_delay_total */
    put_u64(v15, 96, UINT64_C(0x5555555555555555));
    put_u64(v15, 104, UINT64_C(0x6666666666666666));
    memcpy(v15 + 112, raw + 64, 560 - 112);
    if (save(dir, "v15-560.bin", v15, 560))
        return 1;

    if (save(dir, "short-40.bin", raw, 40))
        return 1;
    memcpy(v15, raw, len_pid);
    put_u16(v15, 0);
    if (save(dir, "v0-560.bin", v15, 560))
        return 1;
    if (save(dir, "v16-cut-432.bin", raw, 432))
        return 1;
    return 0;
}

int main(void)
{
    const char *cap = getenv("IOTRIAGE_TASKSTATS_CAPTURE");

    if (cap != NULL && *cap != '\0')
        return capture(cap);

    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fixture_v16_pid),
        cmocka_unit_test(test_fixture_unaligned),
        cmocka_unit_test(test_fixture_v16_tgid),
        cmocka_unit_test(test_fixture_v16_nodelayacct),
        cmocka_unit_test(test_fixture_v14),
        cmocka_unit_test(test_fixture_v15),
        cmocka_unit_test(test_fixture_short),
        cmocka_unit_test(test_fixture_version0),
        cmocka_unit_test(test_fixture_v16_cut),
        cmocka_unit_test(test_parse_edges),
        cmocka_unit_test(test_live_self),
        cmocka_unit_test(test_live_cpu_matches_schedstat),
        cmocka_unit_test(test_live_missing_pid),
        cmocka_unit_test(test_live_thread_ids),
        cmocka_unit_test(test_live_zombie),
        cmocka_unit_test_setup_teardown(test_live_500_children, children_setup,
                                        children_teardown),
        cmocka_unit_test_setup_teardown(test_live_enobufs_recovery, children_setup,
                                        children_teardown),
        cmocka_unit_test(test_live_unprivileged),
        cmocka_unit_test(test_live_blkio),
    };
    return cmocka_run_group_tests_name("taskstats", tests, NULL, NULL);
}
