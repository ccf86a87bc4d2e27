/* SPDX-License-Identifier: GPL-2.0-or-later */
/* taskhelper: processes with known shapes for the integration tests.
 *   taskhelper threads N SECONDS   N threads in all (main included), all asleep
 *   taskhelper dread FILE SECONDS  synchronous 4 KiB O_DIRECT reads of FILE in a loop
 *   taskhelper dreadt N FILE SECONDS  the same in N threads of one process
 *   taskhelper dreadt-noleader N FILE SECONDS  the same, the main thread gone after 1 s
 *       (pthread_exit: the group lives on in its N threads, its leader a zombie)
 *   taskhelper ptyclose SECONDS PROG [ARG...]  run PROG on a new pseudo-terminal that is
 *       not its controlling terminal (so no SIGHUP comes), close the terminal after
 *       SECONDS, then wait up to 5 s: prints "exit STATUS cpu SECONDS", or "hung" (and
 *       kills it, exit 1). Proves a program leaves, without spinning, when its terminal
 *       goes away.
 *   taskhelper touch MB SECONDS  MB of anonymous memory, every page written with its own
 *       bytes, then read and written page by page round and round: in a cgroup whose
 *       memory.max is below MB, a steady stream of swap-ins.
 * It exits after SECONDS, or earlier on SIGTERM. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/ioctl.h>
#include <unistd.h>

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void *sleeper(void *arg)
{
    (void)arg;
    for (;;)
        pause();
    return NULL;
}

static int do_threads(int n, double secs)
{
    for (int i = 1; i < n; i++) {
        pthread_t t;
        if (pthread_create(&t, NULL, sleeper, NULL) != 0) {
            perror("pthread_create");
            return 1;
        }
    }
    struct timespec ts = { .tv_sec = (time_t)secs, .tv_nsec = (long)((secs - (double)(time_t)secs) * 1e9) };
    nanosleep(&ts, NULL);
    return 0;
}

static int do_dread(const char *path, double secs)
{
    int fd = open(path, O_RDONLY | O_DIRECT);
    if (fd < 0) {
        fprintf(stderr, "open %s: %s\n", path, strerror(errno));
        return 1;
    }
    void *buf;
    if (posix_memalign(&buf, 4096, 4096))
        return 1;
    off_t size = lseek(fd, 0, SEEK_END);
    if (size < 4096)
        return 1;
    unsigned long blocks = (unsigned long)(size / 4096), i = 0;
    double end = now() + secs;
    while (now() < end) {
        off_t off = (off_t)((i++ * 7919u) % blocks) * 4096;
        if (pread(fd, buf, 4096, off) < 0) {
            perror("pread");
            return 1;
        }
    }
    return 0;
}

struct dread_arg {
    const char *path;
    double secs;
};

static void *dread_thread(void *p)
{
    const struct dread_arg *a = p;
    return (void *)(long)do_dread(a->path, a->secs);
}

/* N threads in one process, each a synchronous direct reader; with noleader the main
 * thread leaves after a second (the process then ends with its last thread, status 0). */
static int do_dreadt(int n, const char *path, double secs, bool noleader)
{
    pthread_t t[64];
    static struct dread_arg a;          /* static: read after main may have left */
    a = (struct dread_arg){ path, secs };
    if (n < 1 || n > 64)
        return 2;
    for (int i = 0; i < n; i++)
        if (pthread_create(&t[i], NULL, dread_thread, &a) != 0)
            return 1;
    if (noleader) {
        nanosleep(&(struct timespec){ .tv_sec = 1 }, NULL);
        pthread_exit(NULL);
    }
    long bad = 0;
    for (int i = 0; i < n; i++) {
        void *r;
        pthread_join(t[i], &r);
        bad |= (long)r;
    }
    return bad ? 1 : 0;
}

static int do_ptyclose(double secs, char **argv)
{
    int master = posix_openpt(O_RDWR | O_NOCTTY);
    if (master < 0 || grantpt(master) || unlockpt(master))
        return perror("posix_openpt"), 1;
    const char *name = ptsname(master);
    struct winsize ws = { .ws_row = 30, .ws_col = 100 };
    pid_t pid = fork();
    if (pid == 0) {
        int slave = open(name, O_RDWR | O_NOCTTY);
        if (slave < 0)
            _exit(126);
        ioctl(slave, TIOCSWINSZ, &ws);
        dup2(slave, 0), dup2(slave, 1), dup2(slave, 2);
        close(master);
        execvp(argv[0], argv);
        _exit(127);
    }
    /* drain what the program draws, so it never blocks writing */
    double end = now() + secs;
    char buf[4096];
    fcntl(master, F_SETFL, O_NONBLOCK);
    while (now() < end) {
        while (read(master, buf, sizeof(buf)) > 0)
            ;
        struct timespec ts = { 0, 20000000 };
        nanosleep(&ts, NULL);
    }
    close(master);
    end = now() + 5;
    int status;
    struct rusage ru;
    while (now() < end) {
        pid_t w = wait4(pid, &status, WNOHANG, &ru);
        if (w == pid) {
            double cpu = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
                         (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
            printf("exit %d cpu %.3f\n", WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status), cpu);
            return 0;
        }
        struct timespec ts = { 0, 20000000 };
        nanosleep(&ts, NULL);
    }
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
    printf("hung\n");
    return 1;
}

static int do_touch(long mb, double secs)
{
    size_t pg = (size_t)sysconf(_SC_PAGESIZE), len = (size_t)mb << 20;
    unsigned char *m = malloc(len);
    if (!m) {
        perror("malloc");
        return 1;
    }
    for (size_t i = 0; i < len; i++)
        m[i] = (unsigned char)(i * 2654435761u >> 13);      /* no page alike, none zero */
    double end = now() + secs;
    unsigned long sum = 0;
    while (now() < end)
        for (size_t i = 0; i < len; i += pg) {
            sum += m[i];
            m[i + 1]++;
        }
    free(m);
    return sum == 1;      /* keeps the reads */
}

int main(int argc, char **argv)
{
    if (argc >= 4 && strcmp(argv[1], "ptyclose") == 0)
        return do_ptyclose(atof(argv[2]), argv + 3);
    if (argc == 5 && strcmp(argv[1], "dreadt") == 0)
        return do_dreadt(atoi(argv[2]), argv[3], atof(argv[4]), false);
    if (argc == 5 && strcmp(argv[1], "dreadt-noleader") == 0)
        return do_dreadt(atoi(argv[2]), argv[3], atof(argv[4]), true);
    if (argc == 4 && strcmp(argv[1], "threads") == 0)
        return do_threads(atoi(argv[2]), atof(argv[3]));
    if (argc == 4 && strcmp(argv[1], "dread") == 0)
        return do_dread(argv[2], atof(argv[3]));
    if (argc == 4 && strcmp(argv[1], "touch") == 0)
        return do_touch(atol(argv[2]), atof(argv[3]));
    fprintf(stderr, "usage: taskhelper threads N SECONDS | dread FILE SECONDS | dreadt[-noleader] N FILE SECONDS | touch MB SECONDS | ptyclose SECONDS PROG [ARG...]\n");
    return 2;
}
