/* measure: run one command and report what it cost, as the kernel accounted it.
 *
 *   measure [-o OUTFILE] -- COMMAND [ARG ...]
 *
 * Runs COMMAND with stdout sent to OUTFILE (default /dev/null), reaps it with wait4()
 * and prints one line on stdout:
 *
 *   rc=R user_s=U sys_s=S maxrss_kb=M wall_s=W slab0_kb=A slabmax_kb=B
 *
 * user/sys are the child's utime/stime (struct rusage, microseconds), maxrss its peak
 * resident set. While the child runs, /proc/meminfo's Slab is sampled every 20 ms:
 * slab0 is the value just before the start, slabmax the highest seen while it ran, so
 * slabmax - slab0 is the kernel memory the run pinned (plus whatever the rest of the
 * machine did meanwhile: run it on a quiet machine, several times). */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static long slab_kb(void)
{
    static int fd = -1;
    char buf[4096];
    if (fd < 0)
        fd = open("/proc/meminfo", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);
    if (n <= 0)
        return -1;
    buf[n] = '\0';
    const char *p = strstr(buf, "\nSlab:");
    return p ? strtol(p + 6, NULL, 10) : -1;
}

static double mono(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double tv_s(struct timeval tv)
{
    return (double)tv.tv_sec + (double)tv.tv_usec / 1e6;
}

int main(int argc, char **argv)
{
    const char *outfile = "/dev/null";
    int c;
    while ((c = getopt(argc, argv, "+o:")) != -1) {
        if (c == 'o')
            outfile = optarg;
        else {
            fputs("usage: measure [-o OUTFILE] -- COMMAND [ARG ...]\n", stderr);
            return 2;
        }
    }
    if (optind >= argc) {
        fputs("usage: measure [-o OUTFILE] -- COMMAND [ARG ...]\n", stderr);
        return 2;
    }
    /* The program run before may still be handing slab back (RCU and deferred frees of
     * its files): wait, up to 2 s, until Slab stops falling, so that its exit is not
     * counted as this run's gain or loss. */
    long slab0 = slab_kb();
    for (int i = 0; i < 20; i++) {
        struct timespec ts = { 0, 100000000L };
        nanosleep(&ts, NULL);
        long s = slab_kb();
        if (s >= slab0 - 64) {
            slab0 = s < slab0 ? s : slab0;
            break;
        }
        slab0 = s;
    }
    long slabmax = slab0;
    double t0 = mono();
    pid_t pid = fork();
    if (pid < 0) {
        perror("measure: fork");
        return 1;
    }
    if (pid == 0) {
        int fd = open(outfile, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fd < 0 || dup2(fd, 1) < 0) {
            perror("measure: output");
            _exit(126);
        }
        execvp(argv[optind], argv + optind);
        fprintf(stderr, "measure: cannot run %s: %s\n", argv[optind], strerror(errno));
        _exit(127);
    }
    int status = 0;
    struct rusage ru;
    for (;;) {
        pid_t r = wait4(pid, &status, WNOHANG, &ru);
        if (r == pid)
            break;
        if (r < 0 && errno != EINTR) {
            perror("measure: wait4");
            return 1;
        }
        long s = slab_kb();
        if (s > slabmax)
            slabmax = s;
        struct timespec ts = { 0, 20000000L };
        nanosleep(&ts, NULL);
    }
    double wall = mono() - t0;
    int rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    printf("rc=%d user_s=%.6f sys_s=%.6f maxrss_kb=%ld wall_s=%.3f slab0_kb=%ld slabmax_kb=%ld\n",
           rc, tv_s(ru.ru_utime), tv_s(ru.ru_stime), ru.ru_maxrss, wall, slab0, slabmax);
    return 0;
}
