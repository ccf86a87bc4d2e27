/* SPDX-License-Identifier: GPL-2.0-or-later */
/* taskiter_dump: one line per task from the BPF task iterator, converted as the
 * sampler converts it (source/taskiter.h), for tests/integration/test_taskiter.sh to
 * compare with /proc:
 *   id tgid state uid nice policy nlwp start_ticks ioprio kthread rchar wchar syscr syscw
 *   read_bytes write_bytes cancelled delays_valid blkio_count swapin_count comm
 * Usage: taskiter_dump [-l] [-b] [-P] [-c] [-n RUNS] [-w] [-t] [PID...]   (-P: threads;
 * PIDs: only these ids or groups). -l: the loader that loaded the iterator, "light" or
 * "libbpf" (source/bpfload.h), to stderr as "loader: NAME". -b: the iterator bound to the
 * PIDs (taskiter_only), every record it returned printed, and "bound: yes" or "bound: no
 * (REASON)" to stderr. -c: instead, what each record said of the command line: "id what
 * hex", what being none, sent, stale or empty (enum taskiter_cmd) and hex the bytes sent
 * as /proc/PID/cmdline reads them ("-" when none). -n: run the iterator RUNS times in this
 * one process (one load) and print the last run (a process sends its command line once).
 * -w: then wait for end of file on stdin before unloading (to measure what it holds).
 * -t: the CPU time of each run (the kernel's iterator work included) to stderr.
 * -f: instead, the open-files iterator (taskiter_files): one line per open file of
 * each process, "tgid fd S_IFMT-octal dev-major:minor rdev-major:minor nlink ino size
 * writable o_direct", what a statx of /proc/PID/fd/N and its fdinfo say (PIDs: only
 * these processes); exit 77 when it did not load.
 * Exit 77 when the iterator cannot load (the reason on stderr), 1 on a failed read. */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "source/taskiter.h"

static const char *const cmd_names[] = { "none", "sent", "stale", "empty" };

/* -f: each record, for the processes asked for (all when none). */
struct files_out {
    int first, argc;
    char **argv;
    bool print;
    size_t n;
};

static void print_files(void *ctx, const struct tasks_file_rec *v, size_t n)
{
    struct files_out *o = ctx;
    o->n += n;
    for (size_t i = 0; o->print && i < n; i++) {
        bool want = o->argc <= o->first;
        for (int a = o->first; a < o->argc && !want; a++)
            want = (unsigned)atoi(o->argv[a]) == v[i].tgid;
        if (!want || v[i].tid != v[i].tgid)
            continue;
        printf("%u %u %o %u:%u %u:%u %u %llu %llu %d %d\n", v[i].tgid, v[i].fd, v[i].mode & 0170000,
               v[i].dev >> 20, v[i].dev & 0xfffff, v[i].rdev >> 20, v[i].rdev & 0xfffff, v[i].nlink,
               (unsigned long long)v[i].ino, (unsigned long long)v[i].size,
               (v[i].fmode & TASKS_FILE_FMODE_WRITE) != 0, (v[i].flags & O_DIRECT) != 0);
    }
}

int main(int argc, char **argv)
{
    bool threads = false, loader = false, bind = false, cmd = false, hold = false, timing = false;
    bool files = false;
    int runs = 1, first = 1;
    for (; first < argc && argv[first][0] == '-'; first++) {
        if (strcmp(argv[first], "-P") == 0)
            threads = true;
        else if (strcmp(argv[first], "-l") == 0)
            loader = true;
        else if (strcmp(argv[first], "-b") == 0)
            bind = true;
        else if (strcmp(argv[first], "-c") == 0)
            cmd = true;
        else if (strcmp(argv[first], "-w") == 0)
            hold = true;
        else if (strcmp(argv[first], "-t") == 0)
            timing = true;
        else if (strcmp(argv[first], "-f") == 0)
            files = true;
        else if (strcmp(argv[first], "-n") == 0 && first + 1 < argc)
            runs = atoi(argv[++first]);
    }
    int proc_fd = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    char err[256];
    struct taskiter *ti;
    if (taskiter_open(&ti, proc_fd, err, sizeof err) < 0) {
        fprintf(stderr, "taskiter: %s\n", err);
        return 77;
    }
    if (loader)
        fprintf(stderr, "loader: %s\n", taskiter_loader(ti));
    if (bind) {
        pid_t pids[256];
        size_t n = 0;
        for (int a = first; a < argc && n < 256; a++)
            pids[n++] = (pid_t)atoi(argv[a]);
        int rc = taskiter_only(ti, pids, n);
        if (rc < 0)
            fprintf(stderr, "bound: no (%s)\n", strerror(-rc));
    }
    if (files) {
        struct files_out fo = { .first = first, .argc = argc, .argv = argv };
        for (int k = 0; k < runs; k++) {
            struct timespec t0, t1;
            fo.print = k == runs - 1;
            fo.n = 0;
            clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t0);
            int rc = taskiter_files(ti, print_files, &fo);
            clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t1);
            if (rc == -ENOTSUP) {
                fprintf(stderr, "taskiter: no open-files iterator\n");
                return 77;
            }
            if (rc < 0) {
                fprintf(stderr, "taskiter: files read failed: %s\n", strerror(-rc));
                return 1;
            }
            if (timing)
                fprintf(stderr, "run %d: %zu files, %.0f us of CPU\n", k + 1, fo.n,
                        (double)(t1.tv_sec - t0.tv_sec) * 1e6 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e3);
        }
        taskiter_close(ti);
        return 0;
    }
    struct taskiter_acc acc = { 0 };
    for (int k = 0; k < runs; k++) {
        struct timespec t0, t1;
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t0);
        if (taskiter_read(ti, threads, sysconf(_SC_CLK_TCK), false, &acc) < 0 || acc.n == 0) {
            fprintf(stderr, "taskiter: read failed\n");
            return 1;
        }
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t1);
        if (timing)
            fprintf(stderr, "run %d: %zu tasks, %zu command-line bytes, %.0f us of CPU\n", k + 1, acc.n,
                    acc.ntext, (double)(t1.tv_sec - t0.tv_sec) * 1e6 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e3);
    }
    struct taskiter_task *t = acc.tasks;
    size_t m = acc.n;
    for (size_t i = 0; i < m; i++) {
        bool want = argc <= first || taskiter_bound(ti);
        for (int a = first; a < argc && !want; a++)
            want = atoi(argv[a]) == t[i].id || atoi(argv[a]) == t[i].tgid;
        if (!want)
            continue;
        if (cmd) {
            size_t n;
            const char *c = taskiter_cmdline(&acc, &t[i], &n);
            printf("%d %s ", (int)t[i].id, cmd_names[t[i].cmd]);
            for (size_t k = 0; k < n; k++)
                printf("%02x", (unsigned char)c[k]);
            printf("%s\n", c ? "" : "-");
            continue;
        }
        printf("%d %d %c %u %d %d %d %llu %d %d", (int)t[i].id, (int)t[i].tgid, t[i].state,
               (unsigned)t[i].uid, t[i].nice, t[i].policy, t[i].nlwp, t[i].start_ticks,
               t[i].ioprio_raw, t[i].kthread);
        for (int k = 0; k < TASKS_IO_N; k++)
            printf(" %llu", (unsigned long long)t[i].io[k]);
        printf(" %d %llu %llu %s\n", t[i].delays_valid, (unsigned long long)t[i].blkio_count,
               (unsigned long long)t[i].swapin_count, taskiter_comm(&acc, &t[i]));
    }
    if (bind && taskiter_bound(ti))
        fprintf(stderr, "bound: yes\n");
    fflush(stdout);
    while (hold && getchar() != EOF)
        ;
    taskiter_acc_free(&acc);
    taskiter_close(ti);
    close(proc_fd);
    return 0;
}
