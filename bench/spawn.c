/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spawn: the population a benchmark measures against.
 *
 *   spawn [-t THREADS] [-r READERS] [-w WRITERS] [-f FILE] N
 *
 * Forks N idle processes, each with THREADS threads in all (main included, default 1),
 * all asleep in pause(); then READERS processes that read FILE and WRITERS processes
 * that write it, each a few dozen small requests a second, so that rates, delays and
 * devices have something to show without taking the CPU the measurement needs. Prints
 * "ready PROCS TASKS" on stdout once everything is up, then waits for a signal.
 *
 * Cleanup cannot be forgotten: spawn makes itself a process-group leader, every child
 * asks the kernel for SIGKILL when spawn dies (PR_SET_PDEATHSIG), and SIGTERM, SIGINT
 * or SIGHUP make spawn kill its group and exit. The caller kills -PGID as well. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define IO_CHUNK   (64 * 1024)
#define IO_FILE_SZ (32L * 1024 * 1024)
#define IO_PERIOD_NS 25000000L      /* one request every 25 ms: 40 a second per process */

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
    (void)sig;
    stop = 1;
}

static void *sleeper(void *arg)
{
    (void)arg;
    for (;;)
        pause();
    return NULL;
}

static int ready_pipe[2];

/* Die with spawn, and hold no file of the caller's: a child's stdin, stdout and stderr
 * are /dev/null, as for most daemons (a regular file open for writing would make every
 * child look like a buffered writer to iotriage's device attribution). */
static void detach(pid_t parent)
{
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent)        /* the parent died before prctl took effect */
        _exit(0);
    int fd = open("/dev/null", O_RDWR);
    if (fd >= 0) {
        dup2(fd, 0);
        dup2(fd, 1);
        dup2(fd, 2);
        if (fd > 2)
            close(fd);
    }
}

static void say_ready(void)
{
    char b = 1;
    while (write(ready_pipe[1], &b, 1) < 0 && errno == EINTR)
        ;
    close(ready_pipe[1]);
    close(ready_pipe[0]);
}

/* An idle process: THREADS - 1 extra threads with small stacks, everything in pause(). */
static void idle_child(int threads)
{
    pthread_attr_t at;
    pthread_attr_init(&at);
    pthread_attr_setstacksize(&at, 64 * 1024);
    for (int i = 1; i < threads; i++) {
        pthread_t t;
        if (pthread_create(&t, &at, sleeper, NULL) != 0)
            _exit(3);
    }
    say_ready();
    for (;;)
        pause();
}

static void tick(struct timespec *next)
{
    next->tv_nsec += IO_PERIOD_NS;
    if (next->tv_nsec >= 1000000000L) {
        next->tv_nsec -= 1000000000L;
        next->tv_sec++;
    }
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, next, NULL) == EINTR)
        ;
}

/* A reader: O_DIRECT 64 KiB reads all over FILE, so they reach the device. */
static void reader_child(const char *file, unsigned seed)
{
    int fd = open(file, O_RDONLY | O_DIRECT);
    if (fd < 0)
        fd = open(file, O_RDONLY);
    if (fd < 0)
        _exit(4);
    void *buf;
    if (posix_memalign(&buf, 4096, IO_CHUNK))
        _exit(4);
    say_ready();
    struct timespec next;
    clock_gettime(CLOCK_MONOTONIC, &next);
    for (;;) {
        off_t off = (off_t)(rand_r(&seed) % (IO_FILE_SZ / IO_CHUNK)) * IO_CHUNK;
        if (pread(fd, buf, IO_CHUNK, off) < 0 && errno != EINTR)
            _exit(4);
        tick(&next);
    }
}

/* A writer: buffered 64 KiB writes, written back every 16 requests. */
static void writer_child(const char *file, unsigned seed)
{
    int fd = open(file, O_WRONLY);
    if (fd < 0)
        _exit(5);
    static char buf[IO_CHUNK];
    memset(buf, 'w', sizeof(buf));
    say_ready();
    struct timespec next;
    clock_gettime(CLOCK_MONOTONIC, &next);
    for (unsigned n = 1;; n++) {
        off_t off = (off_t)(rand_r(&seed) % (IO_FILE_SZ / IO_CHUNK)) * IO_CHUNK;
        if (pwrite(fd, buf, IO_CHUNK, off) < 0 && errno != EINTR)
            _exit(5);
        if (n % 16 == 0)
            fdatasync(fd);
        tick(&next);
    }
}

static int make_file(const char *file)
{
    int fd = open(file, O_WRONLY | O_CREAT, 0600);
    if (fd < 0)
        return -errno;
    static char buf[1 << 20];
    memset(buf, 'x', sizeof(buf));
    for (long off = 0; off < IO_FILE_SZ; off += (long)sizeof(buf))
        if (pwrite(fd, buf, sizeof(buf), off) != (ssize_t)sizeof(buf)) {
            int e = errno;
            close(fd);
            return -e;
        }
    fsync(fd);
    close(fd);
    return 0;
}

static void usage(void)
{
    fputs("usage: spawn [-t THREADS] [-r READERS] [-w WRITERS] [-f FILE] N\n", stderr);
    exit(2);
}

int main(int argc, char **argv)
{
    long threads = 1, readers = 0, writers = 0;
    const char *file = NULL;
    int c;
    while ((c = getopt(argc, argv, "t:r:w:f:")) != -1) {
        switch (c) {
        case 't': threads = strtol(optarg, NULL, 10); break;
        case 'r': readers = strtol(optarg, NULL, 10); break;
        case 'w': writers = strtol(optarg, NULL, 10); break;
        case 'f': file = optarg; break;
        default: usage();
        }
    }
    if (optind != argc - 1 || threads < 1 || readers < 0 || writers < 0)
        usage();
    long n = strtol(argv[optind], NULL, 10);
    if (n < 0)
        usage();
    if ((readers || writers) && !file) {
        fputs("spawn: -r/-w need -f FILE\n", stderr);
        return 2;
    }
    if (file) {
        int r = make_file(file);
        if (r < 0) {
            fprintf(stderr, "spawn: cannot create %s: %s\n", file, strerror(-r));
            return 1;
        }
    }

    setpgid(0, 0);
    if (pipe2(ready_pipe, O_CLOEXEC) < 0) {
        perror("spawn: pipe");
        return 1;
    }
    struct sigaction sa = { .sa_handler = on_signal };
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    /* Blocked except inside sigsuspend(), so a signal between the test of `stop` and the
     * wait cannot be lost. */
    sigset_t block, old;
    sigemptyset(&block);
    sigaddset(&block, SIGTERM);
    sigaddset(&block, SIGINT);
    sigaddset(&block, SIGHUP);
    sigprocmask(SIG_BLOCK, &block, &old);
    /* The children never exec: they get the default actions back right after fork. */
    pid_t self = getpid();
    long made = 0;
    for (long i = 0; i < n + readers + writers && !stop; i++) {
        pid_t p = fork();
        if (p < 0) {
            fprintf(stderr, "spawn: fork failed after %ld processes: %s\n", made, strerror(errno));
            kill(0, SIGKILL);
            return 1;
        }
        if (p == 0) {
            signal(SIGTERM, SIG_DFL);
            signal(SIGINT, SIG_DFL);
            signal(SIGHUP, SIG_DFL);
            sigprocmask(SIG_SETMASK, &old, NULL);
            detach(self);
            if (i < n)
                idle_child((int)threads);
            else if (i < n + readers)
                reader_child(file, (unsigned)i);
            else
                writer_child(file, (unsigned)i);
            _exit(0);
        }
        made++;
    }
    /* Every child writes one byte once it is fully up (threads made, file open). */
    close(ready_pipe[1]);
    for (long got = 0; got < made;) {
        char b[256];
        ssize_t r = read(ready_pipe[0], b, sizeof(b));
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            fprintf(stderr, "spawn: only %ld of %ld children came up\n", got, made);
            kill(0, SIGKILL);
            return 1;
        }
        got += r;
    }
    close(ready_pipe[0]);
    printf("ready %ld %ld\n", made, n * threads + readers + writers);
    fflush(stdout);
    while (!stop)
        sigsuspend(&old);
    signal(SIGTERM, SIG_IGN);
    kill(0, SIGTERM);
    while (wait(NULL) > 0 || errno == EINTR)
        ;
    if (file)
        unlink(file);
    return 0;
}
