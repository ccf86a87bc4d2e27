/* SPDX-License-Identifier: GPL-2.0-or-later */
/* source/procs_iter.c: procs.c with the task iterator: every task's figures from one
 * pass, and the few processes it does not show (blind) read from /proc. */
#include "source/procs.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/magic.h>
#include <pthread.h>
#include <pwd.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "source/ioprio.h"
#include "source/taskiter.h"
#include "util.h"
#include "util/strpool.h"
#include "procs_parts.h"

/* Whether this run of the iterator showed task id (src->acc, sorted). */
static bool iter_has(const struct procs_src *src, pid_t id)
{
    const struct taskiter_task *v = src->acc.tasks;
    size_t lo = 0, hi = src->acc.n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (v[mid].id < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < src->acc.n && v[lo].id == id;
}

/* The processes /proc lists that the iterator did not show. A kernel may keep a task
 * out of its iterator that /proc shows (seen: a kernel whose init process and its
 * threads never reach task iterators); those few are read from /proc, so that the list
 * is /proc's whatever the iterator skips. Checked every PROCS_FULL_LIST_S (one readdir
 * of /proc); a process started between the run and the readdir is read from /proc
 * until the next check, unless the iterator shows it. */
static void blind_push(struct procs_src *src, pid_t pid)
{
    if (src->nblind == src->blind_cap) {
        src->blind_cap = src->blind_cap ? 2 * src->blind_cap : 16;
        src->blind = xreallocarray(src->blind, src->blind_cap, sizeof(src->blind[0]));
    }
    src->blind[src->nblind++] = pid;
}

/* Whether /proc's readdir would list pid: a thread group leader (status Tgid). */
static bool proc_leader(int proc_fd, pid_t pid)
{
    return procs_tgid_of(proc_fd, pid) == pid;
}

/* /proc's listing for blind_check, made on a thread of its own while the iterator runs
 * (both walk the pid numbers: the kernel for the program, readdir for /proc): at 10,000
 * processes its 14 ms no longer add to a refresh's time, the iterator's run taking 20. */
struct proc_listing {
    int proc_fd;
    pthread_t th;
    bool thread;                     /* th runs list_proc, to be joined */
    bool ok;                         /* /proc was read */
    pid_t *v;
    size_t n, cap;
};

static void *list_proc(void *arg)
{
    struct proc_listing *l = arg;
    DIR *d = opendir_at(l->proc_fd, ".");
    if (!d)
        return NULL;
    struct dirent *e;
    while ((e = readdir(d))) {
        pid_t pid = pid_name(e->d_name);
        if (pid <= 0)
            continue;
        if (l->n == l->cap) {
            l->cap = l->cap ? 2 * l->cap : 1024;
            l->v = xreallocarray(l->v, l->cap, sizeof(l->v[0]));
        }
        l->v[l->n++] = pid;
    }
    closedir(d);
    l->ok = true;
    return NULL;
}

/* The listing done: on its thread if one was started, else here. */
static void listing_wait(struct proc_listing *l)
{
    if (l->thread)
        pthread_join(l->th, NULL);
    else
        list_proc(l);
    l->thread = false;
}

/* A listing not needed after all: its thread joined, its pids freed. */
static void listing_drop(struct proc_listing *l)
{
    if (l->thread)
        pthread_join(l->th, NULL);
    l->thread = false;
    free(l->v);
    l->v = NULL;
}

/* pl: /proc's listing, begun before the iterator's run or (no thread) made here. */
static void blind_check(struct procs_src *src, int proc_fd, const pid_t *only, size_t nonly,
                        struct proc_listing *pl)
{
    if (taskiter_bound(src->ti)) {
        /* bound to the chosen processes: only they can be missing from its runs */
        listing_drop(pl);
        src->nblind = 0;
        for (size_t i = 0; i < nonly; i++)
            if (!iter_has(src, only[i]) && proc_leader(proc_fd, only[i]))
                blind_push(src, only[i]);
        return;
    }
    listing_wait(pl);
    if (pl->ok) {                    /* else the last check's stand */
        src->nblind = 0;
        for (size_t i = 0; i < pl->n; i++)
            if (!iter_has(src, pl->v[i]))
                blind_push(src, pl->v[i]);
    }
    listing_drop(pl);
}

/* Before the first listing (a first frame's run): the init process, the one process seen
 * skipped by an iterator (this VM's, with its threads), when the run did not show it. */
static void blind_first(struct procs_src *src, int proc_fd)
{
    src->nblind = 0;
    if (!iter_has(src, 1) && proc_leader(proc_fd, 1))
        blind_push(src, 1);
}

/* The blind processes (or their threads) from /proc, with taskstats' delays, as the
 * /proc path reads every task. */
static void read_blind(struct reap *rp, const pid_t *only, size_t nonly,
                       procs_stats_fn stats, void *ctx)
{
    struct procs_src *src = rp->src;
    struct list l = { 0 };
    for (size_t i = 0; i < src->nblind; i++) {
        pid_t b = src->blind[i];
        if (iter_has(src, b))
            continue;
        if (src->threads)
            list_threads(&l, rp->proc_fd, b, only, nonly);
        else if (selected(b, b, only, nonly))
            list_push(&l, b, b);
    }
    pid_t ids[GATE_CHUNK];
    struct delay_sample ds[GATE_CHUNK];
    char path[PATH_ROOM];
    for (size_t i0 = 0; i0 < l.n; i0 += GATE_CHUNK) {
        size_t k = l.n - i0 < GATE_CHUNK ? l.n - i0 : GATE_CHUNK;
        for (size_t j = 0; j < k; j++)
            ids[j] = l.v[i0 + j].id;
        if (stats)
            stats(ctx, ids, k, ds);
        double at = stats ? clock_mono() : 0;
        for (size_t j = 0; j < k; j++) {
            const struct listed *x = &l.v[i0 + j];
            if (src->threads)
                snprintf(path, sizeof(path), "%d/task/%d", (int)x->tgid, (int)x->id);
            else
                snprintf(path, sizeof(path), "%d", (int)x->id);
            size_t before = rp->n;
            read_task(rp, x->tgid, x->id, path, strlen(path));
            if (rp->n == before)
                continue;
            note_full(rp, before);
            if (stats) {
                struct task_delay *d = &rp->out[before].delay;
                rp->out[before].delay_valid = ds[j].valid;
                d->blkio_count = ds[j].blkio_count;
                d->blkio_delay_ns = ds[j].blkio_delay_ns;
                d->swapin_count = ds[j].swapin_count;
                d->swapin_delay_ns = ds[j].swapin_delay_ns;
                d->at_s = at;
            }
        }
    }
    if (l.n)
        rp->unsorted = true;
    free(l.v);
}

/* Every task from one run of the task iterator: no file of /proc and no system call per
 * task; the command lines come with the records (first sight, an exec, and again every
 * TASKS_CMD_RESEND_NS), /proc read only for one the iterator could not send. Returns 0
 * or the iterator's -errno. */
int read_iter(struct procs_src *src, int proc_fd, const pid_t *only, size_t nonly,
              procs_stats_fn stats, void *ctx, double now, struct task_sample **tasks,
              size_t *n)
{
    bool later = src->idle_cmd_later && !src->threads;
    src->idle_cmd_later = false;
    bool check = !(now - src->blind_at < PROCS_FULL_LIST_S);
    /* A first frame's run (later) leaves /proc's listing to the next refresh (blind_at
     * stays, so it is due then): at 10,000 processes the readdir is 15-50 ms of a second
     * CPU beside the run, for the few processes an iterator skips; the one seen skipped,
     * the init process, is looked for by itself (blind_first). */
    bool first = check && later && !taskiter_bound(src->ti);
    if (first)
        check = false;
    struct proc_listing pl = { .proc_fd = proc_fd };
    if (check && !taskiter_bound(src->ti))
        pl.thread = pthread_create(&pl.th, NULL, list_proc, &pl) == 0;
    if (src->acc.cap == 0) {
        /* The first run: room for the kernel's count of threads (an upper bound for
         * processes: what is not touched of it costs no memory), never above the
         * kernel's limit on pids. Later runs find the room the runs before made. */
        long k = read_loadavg_tasks_at(proc_fd, "loadavg");
        size_t expect = k > 0 ? (size_t)k : 0;
        if (expect > PROCS_PID_MAX_LIMIT)
            expect = PROCS_PID_MAX_LIMIT;
        taskiter_acc_reserve(&src->acc, expect + expect / 16 + 16, 16 * expect);
    }
    int rc = taskiter_read(src->ti, src->threads, src->clk_tck, later, &src->acc);
    double iter_at = clock_mono();      /* the delays' reading: the iterator's pass */
    if (rc < 0) {
        listing_drop(&pl);
        return rc;
    }
    size_t nt = src->acc.n;
    struct reap rp = { .src = src, .proc_fd = proc_fd, .now = now };
    /* room for the processes the iterator does not show (PID 1 here, see blind_check),
     * read from /proc after it: without it every refresh doubled both arrays */
    rp.cap = task_room(nt + src->nblind + 8);
    rp.out = xreallocarray(NULL, rp.cap, sizeof(rp.out[0]));
    reap_begin(&rp);
    for (size_t k = 0; k < nt; k++) {
        const struct taskiter_task *x = &src->acc.tasks[k];
        if (!selected(x->id, x->tgid, only, nonly))
            continue;
        struct task_sample *t = &rp.out[rp.n];
        memset(t, 0, sizeof(*t));
        t->id = x->id;
        t->tgid = x->tgid;
        t->start_ticks = x->start_ticks;
        t->uid = x->uid;
        t->user = strpool_ref(user_of(src, x->uid));
        t->nice = task_nice8(x->nice);
        t->policy = task_policy8(x->policy);
        t->state = x->state;
        t->nlwp = x->nlwp;
        t->kthread = x->kthread;
        t->ioprio_raw = x->ioprio_raw;
        t->live_tid = x->live_tid;
        if (x->io_known) {
            t->io.read_bytes = x->io[TASKS_IO_READ];
            t->io.write_bytes = x->io[TASKS_IO_WRITE];
            t->io.cancelled_write_bytes = x->io[TASKS_IO_CANCELLED];
            t->io.other_sig = io_other_sig(x->io[TASKS_IO_RCHAR], x->io[TASKS_IO_WCHAR],
                                           x->io[TASKS_IO_SYSCR], x->io[TASKS_IO_SYSCW]);
        } else {
            t->io_err = -EOPNOTSUPP;         /* a kernel without I/O accounting: no io file */
        }
        t->delay_valid = x->delays_valid;
        t->delay.blkio_count = x->blkio_count;
        t->delay.blkio_delay_ns = x->blkio_delay_ns;
        t->delay.swapin_count = x->swapin_count;
        t->delay.swapin_delay_ns = x->swapin_delay_ns;
        t->delay.at_s = iter_at;
        names_of(&rp, t, taskiter_comm(&src->acc, x), &src->acc, x);
        note_full(&rp, rp.n);
        rp.last_id = t->id;
        rp.n++;
    }
    if (check) {
        blind_check(src, proc_fd, only, nonly, &pl);
        src->blind_at = now;
    } else if (first) {
        blind_first(src, proc_fd);
    }
    read_blind(&rp, only, nonly, stats, ctx);
    /* the /proc path, should it run again, lists /proc whole first */
    src->last_pid = 0;
    src->range_from = 0;
    finish_read(&rp, tasks, n);
    return 0;
}
