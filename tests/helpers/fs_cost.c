/* SPDX-License-Identifier: GPL-2.0-or-later */
/* tests/helpers/fs_cost.c: what the filesystems lens adds to a refresh, measured alone
 * (docs/performance.md "Filesystems"). Needs root for other processes' fds: here it
 * forks its own holders.
 *
 *   fs_cost [N]    N rounds of each (default 2000); prints microseconds per call:
 *     mounts_read        mountinfo + the kept filesystems' statvfs, once per refresh
 *     scan_plain         fdmap scan of a process with 3 + 8 regular files open
 *     scan_deleted       the same process with one of the 8 deleted (fdinfo + readlink)
 *     recheck            the per-refresh statx of one holder's fd (snapshot_fs.c)
 */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "source/fdmap.h"
#include "source/mounts.h"
#include "util.h"

static pid_t holder(const char *dir, bool del)
{
    int fds[8];
    char path[256];
    for (int i = 0; i < 8; i++) {
        snprintf(path, sizeof(path), "%s/f%d.%d", dir, i, del);
        fds[i] = open(path, O_WRONLY | O_CREAT | O_APPEND, 0600);
        if (fds[i] < 0 || write(fds[i], "x", 1) != 1)
            exit(1);
    }
    int p[2];
    if (pipe(p))
        exit(1);
    pid_t pid = fork();
    if (pid == 0) {
        close(p[0]);
        if (write(p[1], "y", 1) != 1)
            _exit(1);
        pause();
        _exit(0);
    }
    close(p[1]);
    char c;
    if (read(p[0], &c, 1) != 1)
        exit(1);
    close(p[0]);
    for (int i = 0; i < 8; i++) {
        close(fds[i]);
        snprintf(path, sizeof(path), "%s/f%d.%d", dir, i, del);
        if (del && i == 0)
            unlink(path);           /* the one deleted while open */
    }
    return pid;
}

static double per_call(double t0, int n)
{
    return (clock_mono() - t0) / n * 1e6;
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 2000;
    int proc = open("/proc", O_RDONLY | O_DIRECTORY), sys = open("/sys", O_RDONLY | O_DIRECTORY);
    char dir[] = "/var/tmp/iotriage-fscost.XXXXXX";
    if (!mkdtemp(dir))
        return 1;
    double t0 = clock_mono();
    size_t nfs = 0;
    for (int i = 0; i < n; i++) {
        struct fs_mount *v;
        mounts_read(proc, sys, &v, &nfs);
        mounts_free(v, nfs);
    }
    printf("mounts_read   %8.2f us  (%zu filesystems kept)\n", per_call(t0, n), nfs);
    for (int del = 0; del <= 1; del++) {
        pid_t pid = holder(dir, del);
        struct fdmap *m;
        fdmap_new(&m, proc, sys, 5.0, 0);
        struct fd_devs out;
        t0 = clock_mono();
        for (int i = 0; i < n; i++)
            fdmap_get(m, pid, (unsigned long long)i, 1.0, &out);   /* a new start: rescanned */
        printf("%-13s %8.2f us  (%zu deleted noted)\n", del ? "scan_deleted" : "scan_plain",
               per_call(t0, n), ({ const struct fd_deleted *d; fdmap_deleted(m, &d); }));
        if (del) {
            char path[64];
            snprintf(path, sizeof(path), "%d/fd/3", (int)pid);
            t0 = clock_mono();
            for (int i = 0; i < n; i++) {
                struct statx stx;
                statx(proc, path, AT_STATX_DONT_SYNC, STATX_NLINK | STATX_INO | STATX_SIZE | STATX_BLOCKS, &stx);
            }
            printf("recheck       %8.2f us\n", per_call(t0, n));
        }
        fdmap_free(m);
        kill(pid, SIGTERM);
        waitpid(pid, NULL, 0);
    }
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    return system(cmd) == 0 ? 0 : 1;
}
