/* SPDX-License-Identifier: GPL-2.0-or-later */
/* tests/soak/churn.c: process and thread churn for the soak test (tests/soak/churn.sh).
 *
 *   churn [-r FORKS_PER_S] [-s SECONDS] [-l MAX_LIFE_MS] [-L LONG_LIFE_MS] [-k LONG_EVERY]
 *         [-w BYTES] [-e EVERY] [-d DIR] [-T THREADS_PER_ROUND]
 *
 * The process (named "churn") forks FORKS_PER_S children a second, paced, and reaps them.
 * Each child (named "churn-kid") lives a random 0..MAX_LIFE_MS (every LONG_EVERY-th one
 * 0..LONG_LIFE_MS, long enough for the pid counter to come round) and exits; every EVERY-th
 * child, at a random moment of its life, writes BYTES to a new file in DIR and unlinks it
 * (before writeback: nothing reaches the disk), so its /proc/PID/io counters move by BYTES
 * (write_bytes, then cancelled_write_bytes) plus the directory and inode blocks the
 * filesystem charges to it (seen on ext4 with ~100 files coming and going: up to 5 pages).
 * One more child (named "churn-thr") creates THREADS_PER_ROUND threads, joins them, and
 * starts again, as fast as it can: threads use up pids, so with the default pid_max
 * (32768) pids are reused within seconds and the sampler meets the same pid with another
 * start time. Runs SECONDS (or until SIGTERM/SIGINT), stops its group (it is a group leader,
 * so only its own children), then prints one line:
 *   forks=N threads=N written_kids=N seconds=S max_alive=N fork_errors=N
 * Exit status 0, or 1 when it could not fork at all. Nothing here needs root.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
    (void)sig;
    stop = 1;
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void sleep_s(double s)
{
    if (s <= 0)
        return;
    struct timespec ts = { (time_t)s, (long)((s - (double)(time_t)s) * 1e9) };
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR && !stop)
        ;
}

static void *thread_fn(void *arg)
{
    (void)arg;
    return NULL;
}

/* The thread churner: its count of created threads lives in shared memory. */
static void thread_churn(unsigned per_round, _Atomic unsigned long long *count)
{
    prctl(PR_SET_NAME, "churn-thr");
    pthread_t *t = calloc(per_round, sizeof(*t));
    if (!t)
        _exit(1);
    while (!stop && getppid() != 1) {
        unsigned n = 0;
        for (; n < per_round; n++)
            if (pthread_create(&t[n], NULL, thread_fn, NULL) != 0)
                break;
        for (unsigned i = 0; i < n; i++)
            pthread_join(t[i], NULL);
        atomic_fetch_add(count, n);
        if (n == 0)
            sleep_s(0.01);
    }
    _exit(0);
}

static void kid(unsigned life_ms, size_t bytes, const char *dir, unsigned seq)
{
    prctl(PR_SET_NAME, "churn-kid");
    srand((unsigned)getpid());
    /* Write part-way through its life, so that a sampler sees it before and after. */
    unsigned before = life_ms ? (unsigned)(rand() % (int)(life_ms + 1)) : 0;
    if (bytes && before) {
        sleep_s((double)before / 1000.0);
        life_ms -= before;
    }
    if (bytes) {
        char path[4096];
        snprintf(path, sizeof(path), "%s/churn.%d.%u", dir, (int)getpid(), seq);
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        if (fd >= 0) {
            static char block[4096];
            memset(block, 'c', sizeof(block));
            size_t left = bytes;
            while (left) {
                size_t n = left < sizeof(block) ? left : sizeof(block);
                ssize_t w = write(fd, block, n);
                if (w <= 0)
                    break;
                left -= (size_t)w;
            }
            close(fd);
            unlink(path);
        }
    }
    if (life_ms)
        sleep_s((double)(rand() % (int)(life_ms + 1)) / 1000.0);
    _exit(0);
}

int main(int argc, char **argv)
{
    double rate = 400, secs = 20;
    unsigned life_ms = 300, long_ms = 4000, long_every = 10, every = 4, per_round = 32;
    size_t bytes = 64 * 1024;
    const char *dir = "/tmp";
    int c;
    while ((c = getopt(argc, argv, "r:s:l:L:k:w:e:d:T:")) != -1) {
        switch (c) {
        case 'r': rate = atof(optarg); break;
        case 's': secs = atof(optarg); break;
        case 'l': life_ms = (unsigned)atoi(optarg); break;
        case 'L': long_ms = (unsigned)atoi(optarg); break;
        case 'k': long_every = (unsigned)atoi(optarg); break;
        case 'w': bytes = (size_t)atol(optarg); break;
        case 'e': every = (unsigned)atoi(optarg); break;
        case 'd': dir = optarg; break;
        case 'T': per_round = (unsigned)atoi(optarg); break;
        default:
            fprintf(stderr, "usage: churn [-r FORKS_PER_S] [-s SECONDS] [-l MAX_LIFE_MS] "
                            "[-L LONG_LIFE_MS] [-k LONG_EVERY] [-w BYTES] [-e EVERY] "
                            "[-d DIR] [-T THREADS_PER_ROUND]\n");
            return 2;
        }
    }
    if (rate <= 0 || secs <= 0 || every == 0 || long_every == 0) {
        fprintf(stderr, "churn: bad arguments\n");
        return 2;
    }
    prctl(PR_SET_NAME, "churn");
    setpgid(0, 0);              /* its own group: the kids can be stopped together at the end */
    struct sigaction sa = { 0 };
    sa.sa_handler = on_signal;
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);

    _Atomic unsigned long long *threads = mmap(NULL, sizeof(*threads), PROT_READ | PROT_WRITE,
                                               MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (threads == MAP_FAILED)
        return 1;
    atomic_store(threads, 0);
    pid_t thr = -1;
    if (per_round) {
        thr = fork();
        if (thr == 0)
            thread_churn(per_round, threads);
    }

    double start = now(), next = start;
    unsigned long long forks = 0, written = 0, fork_errors = 0;
    long alive = 0, max_alive = 0;
    while (!stop && now() - start < secs) {
        /* Fork what is due (catching up after a slow moment, at most 50 at once). */
        int burst = 0;
        while (now() >= next && burst < 50 && !stop) {
            /* forks = 1 (mod every): with the defaults, half the long-lived kids write */
            bool write_it = bytes && (forks + every - 1) % every == 0;
            pid_t p = fork();
            if (p == 0)
                kid(forks % long_every == 1 ? long_ms : life_ms, write_it ? bytes : 0, dir,
                    (unsigned)forks);
            if (p < 0) {
                fork_errors++;
                sleep_s(0.01);
                break;
            }
            forks++;
            written += write_it;
            alive++;
            burst++;
            next += 1.0 / rate;
        }
        if (alive > max_alive)
            max_alive = alive;
        pid_t w;
        while ((w = waitpid(-1, NULL, WNOHANG)) > 0)
            if (w != thr)
                alive--;
        double d = next - now();
        sleep_s(d > 0.005 ? 0.005 : d);
    }
    kill(0, SIGTERM);           /* the group: thread churner and kids still sleeping */
    if (thr > 0)
        waitpid(thr, NULL, 0);
    while (waitpid(-1, NULL, 0) > 0)
        ;
    printf("forks=%llu threads=%llu written_kids=%llu seconds=%.1f max_alive=%ld "
           "fork_errors=%llu\n", forks, (unsigned long long)atomic_load(threads), written,
           now() - start, max_alive, fork_errors);
    return forks ? 0 : 1;
}
