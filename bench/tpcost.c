/* SPDX-License-Identifier: GPL-2.0-or-later */
/* tpcost: what an attached BPF program that returns at once costs a tracepoint's caller,
 * against attaching and detaching it (issue #40: the duty cycle's choice, docs/
 * performance.md "Issue #40").
 *
 * 1. A loop of kill(getpid(), SIGUSR1) (ignored: the signal_generate tracepoint still
 *    fires) pinned to CPU 0, its own CPU time (CLOCK_THREAD_CPUTIME_ID) per call without
 *    the program, with it attached, and without again, ROUNDS times alternated: the median
 *    of (with - mean of the two without) is the cost of one run of a program that returns
 *    after one load, its tracepoint dispatch and trampoline included. Its own CPU time
 *    holds on a shared machine far better than wall time.
 * 2. The BPF statistics' own view of the same runs (BPF_ENABLE_STATS while this runs:
 *    run_time_ns / run_cnt), which does not see the dispatch and the trampoline.
 * 3. Attaching and detaching a program on block_rq_issue N times: the function-call IPIs
 *    (/proc/interrupts CAL, all CPUs) and the wall time per attach and per detach.
 *
 * Usage (root): build/bench/tpcost [ROUNDS [CALLS]]   (40 rounds of 30,000 calls) */
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "tpcost.skel.h"

static double thread_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static double mono_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static double per_call(long n)
{
    pid_t p = getpid();
    double a = thread_ns();
    for (long i = 0; i < n; i++)
        kill(p, SIGUSR1);
    return (thread_ns() - a) / (double)n;
}

/* The sum over CPUs of a /proc/interrupts row (e.g. "CAL:"). */
static long long irq_sum(const char *row)
{
    FILE *f = fopen("/proc/interrupts", "r");
    if (!f)
        return -1;
    char line[8192];
    long long s = 0;
    size_t rl = strlen(row);
    while (fgets(line, sizeof line, f)) {
        char *p = line;
        while (*p == ' ')
            p++;
        if (strncmp(p, row, rl) != 0)
            continue;
        p += rl;
        for (;;) {
            char *e;
            long long v = strtoll(p, &e, 10);
            if (e == p)
                break;
            s += v;
            p = e;
        }
    }
    fclose(f);
    return s;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    int rounds = argc > 1 ? atoi(argv[1]) : 40;
    long calls = argc > 2 ? atol(argv[2]) : 30000;
    if (rounds < 1 || rounds > 1000 || calls < 1) {
        fprintf(stderr, "usage: tpcost [ROUNDS [CALLS]]\n");
        return 2;
    }
    signal(SIGUSR1, SIG_IGN);
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(0, &set);
    sched_setaffinity(0, sizeof set, &set);
    struct tpcost_bpf *s = tpcost_bpf__open_and_load();
    if (!s) {
        fprintf(stderr, "tpcost: load: %s\n", strerror(errno));
        return 1;
    }
    double *d = calloc((size_t)rounds, sizeof *d);
    if (!d)
        return 1;
    double off_sum = 0;
    for (int r = 0; r < rounds; r++) {
        double off = per_call(calls);
        struct bpf_link *l = bpf_program__attach(s->progs.tpcost_paused);
        if (!l) {
            fprintf(stderr, "tpcost: attach: %s\n", strerror(errno));
            return 1;
        }
        double on = per_call(calls);
        bpf_link__destroy(l);
        double off2 = per_call(calls);
        d[r] = on - (off + off2) / 2;
        off_sum += (off + off2) / 2;
    }
    qsort(d, (size_t)rounds, sizeof *d, cmp_d);
    printf("an attached program that returns at once: %+.1f ns a run (median of %d rounds; quartiles %+.1f %+.1f), "
           "on a %.0f ns kill(2)\n", d[rounds / 2], rounds, d[rounds / 4], d[3 * rounds / 4],
           off_sum / rounds);
    /* The BPF statistics of the same program, for comparison with bench/lens.sh's. */
    int sfd = bpf_enable_stats(BPF_STATS_RUN_TIME);
    if (sfd >= 0) {
        struct bpf_link *l = bpf_program__attach(s->progs.tpcost_paused);
        if (l) {
            per_call(calls * 4);
            bpf_link__destroy(l);
            struct bpf_prog_info info;
            __u32 len = sizeof info;
            memset(&info, 0, sizeof info);
            if (bpf_obj_get_info_by_fd(bpf_program__fd(s->progs.tpcost_paused), &info, &len) == 0 &&
                info.run_cnt)
                printf("the BPF statistics of it: %.1f ns a run (%llu runs)\n",
                       (double)info.run_time_ns / (double)info.run_cnt,
                       (unsigned long long)info.run_cnt);
        }
        close(sfd);
    }
    int n = 100;
    long long c0 = irq_sum("CAL:");
    double att = 0, det = 0;
    for (int i = 0; i < n; i++) {
        double a = mono_ns();
        struct bpf_link *l = bpf_program__attach(s->progs.tpcost_block);
        double b = mono_ns();
        if (!l) {
            fprintf(stderr, "tpcost: attach block_rq_issue: %s\n", strerror(errno));
            return 1;
        }
        bpf_link__destroy(l);
        att += b - a;
        det += mono_ns() - b;
    }
    long long c1 = irq_sum("CAL:");
    printf("attach and detach on block_rq_issue: %.1f function-call IPIs each (all CPUs, other "
           "work's included), %.0f us to attach, %.0f us to detach (wall)\n",
           c0 >= 0 && c1 >= c0 ? (double)(c1 - c0) / n : -1.0, att / n / 1000, det / n / 1000);
    printf("load average: ");
    FILE *f = fopen("/proc/loadavg", "r");
    char la[64] = "";
    if (f && fgets(la, sizeof la, f))
        printf("%s", la);
    if (f)
        fclose(f);
    free(d);
    tpcost_bpf__destroy(s);
    return 0;
}
