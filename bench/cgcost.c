/* SPDX-License-Identifier: GPL-2.0-or-later */
/* cgcost: what the cgroup lens adds to a refresh (cgroups.h), measured alone.
 *
 *   cgcost [-c CGROUPS] [-n PROCS] [-r REFRESHES]     (root; defaults 500, 10000, 30)
 *
 * Makes CGROUPS cgroups in the v2 hierarchy (found through mountinfo), named like systemd
 * services under one slice, forks PROCS idle processes spread over them, then runs
 * REFRESHES times what the sampler runs per refresh for cgroups (cgroups_take: membership
 * on the rescan cadence, each listed cgroup's io.pressure and io.stat, its controls every
 * FDMAP_RESCAN_S) and what delta runs (cgroups_delta), over every task of /proc, with the
 * monotonic clock advanced by one second per refresh. Prints the CPU time (user + system
 * of this process: the kernel's work for it included) of the first refresh (every task
 * new) and the mean of the others. Everything it made is removed on exit, on SIGINT,
 * SIGTERM and SIGHUP too; its children die with it (PR_SET_PDEATHSIG). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "source/cgroups.h"
#include "delta.h"
#include "snapshot.h"
#include "util.h"

static char top[CG_PATH_MAX + 64];
static int ncg;
static pid_t *kids;
static int nkids;

static void cleanup(void)
{
    for (int i = 0; i < nkids; i++)
        if (kids[i] > 0)
            kill(kids[i], SIGKILL);
    for (int i = 0; i < nkids; i++)
        if (kids[i] > 0)
            waitpid(kids[i], NULL, 0);
    nkids = 0;
    char p[sizeof(top) + 64];
    for (int i = 0; i < ncg; i++) {
        snprintf(p, sizeof(p), "%s/svc-%d.service", top, i);
        /* the leaders' children die with them (PDEATHSIG): wait until they are gone */
        for (int tries = 0; rmdir(p) && errno == EBUSY && tries < 500; tries++)
            usleep(10000);
    }
    if (top[0])
        rmdir(top);
}

static void on_signal(int sig)
{
    (void)sig;
    cleanup();
    _exit(1);
}

static double cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int cmp_task(const void *a, const void *b)
{
    const struct task_sample *x = a, *y = b;
    return (x->id > y->id) - (x->id < y->id);
}

int main(int argc, char **argv)
{
    int nproc = 10000, refreshes = 30;
    ncg = 500;
    int opt;
    while ((opt = getopt(argc, argv, "c:n:r:")) != -1) {
        if (opt == 'c')
            ncg = atoi(optarg);
        else if (opt == 'n')
            nproc = atoi(optarg);
        else if (opt == 'r')
            refreshes = atoi(optarg);
        else
            return 2;
    }
    int proc_fd = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    int sys_fd = open("/sys", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    struct cgroup_mounts m;
    if (proc_fd < 0 || sys_fd < 0 || cgroup_mounts_read(proc_fd, &m) || !m.has_v2) {
        fprintf(stderr, "cgcost: no cgroup v2 hierarchy\n");
        return 77;
    }
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    signal(SIGHUP, on_signal);
    snprintf(top, sizeof(top), "%s/iotriage-bench-%d.slice", m.v2, (int)getpid());
    if (mkdir(top, 0755)) {
        fprintf(stderr, "cgcost: mkdir %s: %s\n", top, strerror(errno));
        top[0] = '\0';
        return 77;
    }
    char p[sizeof(top) + 64];
    for (int i = 0; i < ncg; i++) {
        snprintf(p, sizeof(p), "%s/svc-%d.service", top, i);
        if (mkdir(p, 0755)) {
            fprintf(stderr, "cgcost: mkdir %s: %s\n", p, strerror(errno));
            ncg = i;
            cleanup();
            return 1;
        }
    }
    /* One leader per cgroup, moved in (each move waits for an RCU grace period: 10 ms
     * here, so moving 10,000 processes one by one would take minutes); it then forks the
     * cgroup's other processes, which start where their parent is. */
    kids = calloc((size_t)ncg, sizeof(pid_t));
    int per = nproc / ncg > 0 ? nproc / ncg : 1;
    for (int i = 0; i < ncg; i++) {
        int go[2], done[2];
        if (pipe(go) || pipe(done)) {
            cleanup();
            return 1;
        }
        pid_t k = fork();
        if (k == 0) {
            prctl(PR_SET_PDEATHSIG, SIGKILL);
            char c;
            if (read(go[0], &c, 1) != 1)
                _exit(1);
            for (int j = 1; j < per; j++) {
                pid_t g = fork();
                if (g == 0) {
                    prctl(PR_SET_PDEATHSIG, SIGKILL);
                    for (;;)
                        pause();
                }
            }
            if (write(done[1], "x", 1) != 1)
                _exit(1);
            for (;;)
                pause();
        }
        if (k < 0) {
            fprintf(stderr, "cgcost: fork: %s\n", strerror(errno));
            cleanup();
            return 1;
        }
        kids[nkids++] = k;
        snprintf(p, sizeof(p), "%s/svc-%d.service/cgroup.procs", top, i);
        FILE *f = fopen(p, "w");
        char c;
        if (!f || fprintf(f, "%d\n", (int)k) < 0 || fclose(f) || write(go[1], "x", 1) != 1 ||
            read(done[0], &c, 1) != 1) {
            fprintf(stderr, "cgcost: cannot start cgroup %d's processes\n", i);
            cleanup();
            return 1;
        }
        close(go[0]);
        close(go[1]);
        close(done[0]);
        close(done[1]);
    }

    /* Every task of /proc, as the sampler lists processes. */
    struct task_sample *tasks = NULL;
    size_t n = 0, cap = 0;
    DIR *d = opendir("/proc");
    struct dirent *e;
    while (d && (e = readdir(d))) {
        char *end;
        long id = strtol(e->d_name, &end, 10);
        if (*end || id <= 0)
            continue;
        if (n == cap) {
            cap = cap ? 2 * cap : 1024;
            tasks = xreallocarray(tasks, cap, sizeof(*tasks));
        }
        memset(&tasks[n], 0, sizeof(tasks[n]));
        tasks[n].id = tasks[n].tgid = (pid_t)id;
        tasks[n].comm = tasks[n].cmdline = tasks[n].user = "";
        n++;
    }
    if (d)
        closedir(d);
    qsort(tasks, n, sizeof(*tasks), cmp_task);

    struct cgroup_src *src = cgroups_open(proc_fd, sys_fd, FDMAP_RESCAN_S);
    struct task_rates *tr = xcalloc(n ? n : 1, sizeof(*tr));
    struct cgroup_set *prev = NULL;
    double first = 0, rest = 0;
    size_t ncgroups = 0;
    for (int i = 0; i < refreshes; i++) {
        struct snapshot snap = { .tasks = tasks, .ntasks = n, .mono = 1000.0 + i };
        struct result r = { .cur = &snap, .interval_s = 1.0, .tasks = tr, .ntasks = n };
        double t0 = cpu_now();
        snap.cgroups = cgroups_take(src, snap.mono, snap.threads, snap.tasks, snap.ntasks);
        cgroups_delta(prev, snap.cgroups, &r);
        double dt = cpu_now() - t0;
        if (i == 0)
            first = dt;
        else
            rest += dt;
        ncgroups = snap.cgroups->n;
        free(r.cgroups);
        cgroups_free(prev);
        prev = snap.cgroups;
    }
    cgroups_free(prev);
    cgroups_close(src);
    printf("tasks %zu, cgroups listed %zu (made %d), refreshes %d\n", n, ncgroups, ncg, refreshes);
    printf("first refresh %.2f ms CPU, then %.2f ms CPU per refresh (mean of %d)\n", first * 1e3,
           refreshes > 1 ? rest / (refreshes - 1) * 1e3 : 0.0, refreshes - 1);
    free(tr);
    free(tasks);
    cleanup();
    free(kids);
    return 0;
}
