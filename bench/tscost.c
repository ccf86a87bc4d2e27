/* SPDX-License-Identifier: GPL-2.0-or-later */
/* tscost: what the sampling of thread states costs (source/threadstate.h), measured alone.
 *
 *   tscost [-n PROCS] [-t THREADS] [-r ROUNDS]     (defaults 64, 4, 2000)
 *
 * Forks PROCS processes of THREADS threads each, all asleep, then takes ROUNDS rounds of
 * taskstate_sample over them, as the pipeline's sampling thread does ten times a refresh.
 * Prints the files read and the CPU time (user + system of this process: the kernel's
 * work for it included) per round. Threads asleep in S cost one read each; a thread in
 * D costs a second one (its wait channel), and TS_READS_MAX bounds a round either way.
 * The children die with it (PR_SET_PDEATHSIG) and are killed at the end. */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "source/threadstate.h"

static void *sleeper(void *arg)
{
    (void)arg;
    for (;;)
        pause();
    return NULL;
}

static double cpu_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
    int n = 64, threads = 4, rounds = 2000, c;
    while ((c = getopt(argc, argv, "n:t:r:")) != -1) {
        switch (c) {
        case 'n': n = atoi(optarg); break;
        case 't': threads = atoi(optarg); break;
        case 'r': rounds = atoi(optarg); break;
        default:
            fprintf(stderr, "usage: tscost [-n PROCS] [-t THREADS] [-r ROUNDS]\n");
            return 2;
        }
    }
    if (n < 1 || n > TS_TARGETS_MAX || threads < 1 || threads > 64 || rounds < 1) {
        fprintf(stderr, "tscost: 1..%d processes, 1..64 threads, rounds > 0\n", TS_TARGETS_MAX);
        return 2;
    }
    pid_t kids[TS_TARGETS_MAX];
    for (int i = 0; i < n; i++) {
        kids[i] = fork();
        if (kids[i] < 0) {
            perror("fork");
            return 1;
        }
        if (kids[i] == 0) {
            prctl(PR_SET_PDEATHSIG, SIGKILL);
            for (int k = 1; k < threads; k++) {
                pthread_t th;
                pthread_create(&th, NULL, sleeper, NULL);
            }
            sleeper(NULL);
        }
    }
    usleep(200000);   /* let the threads start */
    struct taskstate *ts;
    if (taskstate_open(&ts, NULL) < 0) {
        perror("taskstate_open");
        return 1;
    }
    struct ts_counts acc = { 0 };
    taskstate_sample(ts, kids, (size_t)n, 0, &acc);   /* warm the dentries */
    ts_counts_clear(&acc);
    double t0 = cpu_s();
    for (int r = 0; r < rounds; r++)
        taskstate_sample(ts, kids, (size_t)n, (size_t)r, &acc);
    double t1 = cpu_s();
    printf("tscost: %d processes x %d threads, %d rounds: %.1f reads a round, %.1f us CPU a round, "
           "%.2f us a read\n", n, threads, rounds, (double)acc.reads / rounds,
           (t1 - t0) / rounds * 1e6, (t1 - t0) / (double)acc.reads * 1e6);
    ts_counts_free(&acc);
    taskstate_close(ts);
    for (int i = 0; i < n; i++)
        kill(kids[i], SIGKILL);
    for (int i = 0; i < n; i++)
        waitpid(kids[i], NULL, 0);
    return 0;
}
