/* SPDX-License-Identifier: GPL-2.0-or-later */
/* measure: run one command and report what it cost, as the kernel accounted it.
 *
 *   measure [-o OUTFILE] -- COMMAND [ARG ...]
 *
 * Runs COMMAND with stdout sent to OUTFILE (default /dev/null), reaps it with wait4()
 * and prints one line on stdout:
 *
 *   rc=R user_s=U sys_s=S maxrss_kb=M wall_s=W slab0_kb=A slabmax_kb=B bpfmaps_kb=C
 *
 * user/sys are the child's utime/stime (struct rusage, microseconds), maxrss its peak
 * resident set. While the child runs, /proc/meminfo's Slab is sampled every 20 ms:
 * slab0 is the value just before the start, slabmax the highest seen while it ran, so
 * slabmax - slab0 is the kernel memory the run pinned (plus whatever the rest of the
 * machine did meanwhile: run it on a quiet machine, several times). bpfmaps is the
 * highest sum, sampled every 100 ms, of the locked memory ("memlock" in the map's
 * fdinfo: what the kernel charges for it) of the BPF maps created since the start: the
 * maps a program with a BPF lens holds, which its resident set does not show (-1 where
 * the maps cannot be listed: not root). */
#include <errno.h>
#include <linux/bpf.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
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

/* The BPF map after id (0: the first), or 0 when none; -1 when they cannot be listed. */
static long map_next(__u32 id)
{
    union bpf_attr a;
    memset(&a, 0, sizeof(a));
    a.start_id = id;
    if (syscall(SYS_bpf, BPF_MAP_GET_NEXT_ID, &a, sizeof(a)) != 0)
        return errno == ENOENT ? 0 : -1;
    return (long)a.next_id;
}

/* The memlock of the maps whose id is above first (the run's), in kB; -1 when the maps
 * cannot be listed. A map gone between two calls is skipped. */
static long maps_kb(__u32 first)
{
    long total = 0, id;
    for (id = map_next(first); id > 0; id = map_next((__u32)id)) {
        union bpf_attr a;
        memset(&a, 0, sizeof(a));
        a.map_id = (__u32)id;
        int fd = (int)syscall(SYS_bpf, BPF_MAP_GET_FD_BY_ID, &a, sizeof(a));
        if (fd < 0)
            continue;
        char path[64], buf[1024];
        snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
        int in = open(path, O_RDONLY | O_CLOEXEC);
        ssize_t n = in >= 0 ? read(in, buf, sizeof(buf) - 1) : -1;
        if (in >= 0)
            close(in);
        close(fd);
        if (n <= 0)
            continue;
        buf[n] = '\0';
        const char *p = strstr(buf, "memlock:");
        if (p)
            total += strtol(p + 8, NULL, 10) / 1024;
    }
    return id < 0 ? -1 : total;
}

/* The highest map id now: the maps a run creates have higher ones. */
static long maps_last(void)
{
    long last = 0, id;
    while ((id = map_next((__u32)last)) > 0)
        last = id;
    return id < 0 ? -1 : last;
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
    long first_map = maps_last(), bpfmaps = first_map < 0 ? -1 : 0;
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
    for (unsigned tick = 0;; tick++) {
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
        if (bpfmaps >= 0 && tick % 5 == 0) {
            long m = maps_kb((__u32)first_map);
            if (m > bpfmaps)
                bpfmaps = m;
        }
        struct timespec ts = { 0, 20000000L };
        nanosleep(&ts, NULL);
    }
    double wall = mono() - t0;
    int rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    printf("rc=%d user_s=%.6f sys_s=%.6f maxrss_kb=%ld wall_s=%.3f slab0_kb=%ld slabmax_kb=%ld bpfmaps_kb=%ld\n",
           rc, tv_s(ru.ru_utime), tv_s(ru.ru_stime), ru.ru_maxrss, wall, slab0, slabmax, bpfmaps);
    return 0;
}
