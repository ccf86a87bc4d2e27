/* SPDX-License-Identifier: GPL-2.0-or-later */
/* source/procs_list.c: the task list of procs.c: which tasks /proc has, from the kernel's
 * last pid on (a range of new pids read, not the whole directory), threads included. */
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

/* A /proc entry that is a pid: digits only, no leading zero. */
pid_t pid_name(const char *s)
{
    if (*s < '1' || *s > '9')
        return 0;
    long v = 0;
    for (; *s; s++) {
        if (*s < '0' || *s > '9' || v > 100000000)
            return 0;
        v = v * 10 + (*s - '0');
    }
    return (pid_t)v;
}

void list_push(struct list *l, pid_t tgid, pid_t id)
{
    if (l->n == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 1024;
        l->v = xreallocarray(l->v, l->cap, sizeof(*l->v));
    }
    l->v[l->n].id = id;
    l->v[l->n].tgid = tgid;
    l->n++;
}

void list_threads(struct list *l, int proc_fd, pid_t tgid, const pid_t *only, size_t nonly)
{
    char path[PATH_ROOM];
    snprintf(path, sizeof(path), "%d/task", (int)tgid);
    DIR *d = opendir_at(proc_fd, path);
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d))) {
        pid_t tid = pid_name(e->d_name);
        if (tid > 0 && selected(tid, tgid, only, nonly))
            list_push(l, tgid, tid);
    }
    closedir(d);
}

/* The pid the kernel allocated last, from the last field of /proc/loadavg ("0.10 0.20
 * 0.30 2/123 4567"), or -1 when unknown. It counts in the reader's pid namespace, so it
 * is trusted only for a /proc whose "self" is our own pid (not a fixture tree, not the
 * /proc of another namespace) and whose loadavg procfs itself serves. */
static pid_t last_pid_now(struct procs_src *src, int proc_fd)
{
    if (!src->ns_checked) {
        src->ns_checked = true;
        char self[32];
        ssize_t l = readlinkat(proc_fd, "self", self, sizeof(self) - 1);
        if (l > 0) {
            self[l] = '\0';
            if (pid_name(self) == getpid())
                src->loadavg_fd = openat(proc_fd, "loadavg", O_RDONLY | O_CLOEXEC);
            /* lxcfs (FUSE) can stand in for it in a container, with a field of its own */
            struct statfs fs;
            if (src->loadavg_fd >= 0 &&
                (fstatfs(src->loadavg_fd, &fs) != 0 || fs.f_type != PROC_SUPER_MAGIC)) {
                close(src->loadavg_fd);
                src->loadavg_fd = -1;
            }
        }
    }
    if (src->loadavg_fd < 0)
        return -1;
    char buf[128];
    ssize_t n = pread(src->loadavg_fd, buf, sizeof(buf) - 1, 0);
    if (n <= 0)
        return -1;
    while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
        n--;
    buf[n] = '\0';
    const char *sp = strrchr(buf, ' ');
    pid_t p = sp ? pid_name(sp + 1) : 0;
    return p > 0 ? p : -1;
}

/* Every process (or thread) below proc_fd. Learns tgid_offset on the way: readdir gives
 * each entry the position of the next one, which for /proc is the next pid plus a
 * constant (fs/proc/base.c: TGID_OFFSET); it must be the same for every pair. */
static int list_all(struct procs_src *src, int proc_fd, const pid_t *only, size_t nonly,
                    struct list *l)
{
    DIR *d = opendir_at(proc_fd, ".");
    if (!d)
        return errno ? -errno : -EIO;
    struct dirent *e;
    pid_t prev = 0;
    long prev_off = 0, offset = 0;
    bool steady = true;
    while ((e = readdir(d))) {
        pid_t pid = pid_name(e->d_name);     /* at most 9 digits */
        if (pid <= 0)
            continue;
        if (prev > 0) {
            long o = prev_off - (long)pid;
            if (offset == 0)
                offset = o;
            else if (o != offset)
                steady = false;
        }
        prev = pid;
        prev_off = (long)e->d_off;
        if (src->threads)
            list_threads(l, proc_fd, pid, only, nonly);
        else if (selected(pid, pid, only, nonly))
            list_push(l, pid, pid);
    }
    closedir(d);
    src->tgid_offset = steady && offset > 0 ? offset : 0;
    return 0;
}

/* The processes with a pid in [from, to]: a readdir of /proc from the position of pid
 * `from` on, which the kernel starts at the first process at or above it. Returns false
 * when /proc did not answer as expected (then the caller lists it whole). */
static bool list_range(struct procs_src *src, int proc_fd, pid_t from, pid_t to,
                       const pid_t *only, size_t nonly, struct list *l)
{
    DIR *d = opendir_at(proc_fd, ".");
    if (!d)
        return false;
    seekdir(d, (long)from + src->tgid_offset);
    struct dirent *e;
    bool ok = true;
    while ((e = readdir(d))) {
        pid_t pid = pid_name(e->d_name);
        if (pid < from) {                    /* not a pid, or the position meant otherwise */
            ok = false;
            break;
        }
        if (pid > to)
            break;
        if (selected(pid, pid, only, nonly))
            list_push(l, pid, pid);
    }
    closedir(d);
    return ok;
}

pid_t procs_tgid_of(int proc_fd, pid_t id)
{
    char path[PATH_ROOM], buf[1024];
    snprintf(path, sizeof(path), "%d/status", (int)id);
    ssize_t n = read_once_at(proc_fd, path, buf, sizeof(buf));
    const char *f = n > 0 ? strstr(buf, "\nTgid:") : NULL;
    long tgid = f ? strtol(f + 6, NULL, 10) : 0;
    return tgid > 0 && tgid <= INT_MAX ? (pid_t)tgid : 0;
}

/* Threads mode: the tasks with an id in [from, to], each asked for its thread group in
 * ID/status (readdir of /proc lists no thread but a thread's directory opens all the
 * same; status escapes a newline in the name, so "\nTgid:" is the field). A pid of the
 * range that fails to open exited, or was never a task. Returns false when the range is
 * too wide for one read per pid to be the cheaper way. */
#define PROBE_MAX 64
#define RANGE_BACK 32                /* pids before the counter looked at again after a
                                      * whole listing */
static bool probe_range(struct procs_src *src, int proc_fd, pid_t from, pid_t to,
                        const pid_t *only, size_t nonly, struct list *l)
{
    size_t width = (size_t)(to - from) + 1;
    if (width > PROBE_MAX && width > src->nnames / 16)
        return false;
    for (pid_t p = from; p <= to; p++) {
        pid_t tgid = procs_tgid_of(proc_fd, p);
        if (tgid > 0 && selected(p, tgid, only, nonly))
            list_push(l, tgid, p);
    }
    return true;
}

/* The tasks to read this refresh (procs.h: how tasks are listed). */
int make_list(struct procs_src *src, int proc_fd, const pid_t *only, size_t nonly,
              double now, struct list *l)
{
    pid_t last = last_pid_now(src, proc_fd), prev = src->last_pid;
    /* A pid is handed out (the counter moves) a little before its task can be found
     * (kernel/fork.c: copy_process attaches it after cgroup_can_fork): a fork under way
     * when the counter was read shows only later. So each range starts where the one
     * before the last started: every pid is looked for in two refreshes. */
    pid_t from = src->range_from > 0 ? src->range_from : prev + 1;
    uint64_t sig = nonly;            /* the last list holds only what the filter then chose */
    for (size_t i = 0; i < nonly; i++)
        sig = mix64(sig ^ (uint64_t)only[i]);
    bool refiltered = sig != src->only_sig;
    src->only_sig = sig;
    bool whole = last <= 0 || prev <= 0 || last < prev || src->tgid_offset == 0 || refiltered ||
                 !(now - src->full_at < PROCS_FULL_LIST_S);
    struct list fresh = { 0 };
    if (!whole && from <= last &&
        !(src->threads ? probe_range(src, proc_fd, from, last, only, nonly, &fresh)
                       : list_range(src, proc_fd, from, last, only, nonly, &fresh))) {
        free(fresh.v);
        fresh = (struct list){ 0 };
        whole = true;
    }
    src->last_pid = 0;               /* until this listing has worked */
    if (whole) {
        int rc = list_all(src, proc_fd, only, nonly, l);
        if (rc < 0)
            return rc;
        src->full_at = now;
        /* a fork under way during this listing: looked for again next time */
        src->range_from = last > RANGE_BACK ? last - RANGE_BACK : 1;
        src->last_pid = last > 0 ? last : 0;
        return 0;
    }
    /* The last list, with what was allocated since in place of what it held in that range:
     * a pid there was free when it was allocated, so whatever the list had there is gone.
     * Tasks that exited elsewhere fall out when they cannot be read. */
    size_t i = 0;
    for (; i < src->nnames && src->names[i].id < from; i++)
        if (selected(src->names[i].id, src->names[i].tgid, only, nonly))
            list_push(l, src->names[i].tgid, src->names[i].id);
    for (size_t k = 0; k < fresh.n; k++)
        list_push(l, fresh.v[k].tgid, fresh.v[k].id);
    for (; i < src->nnames; i++)
        if (src->names[i].id > last && selected(src->names[i].id, src->names[i].tgid, only, nonly))
            list_push(l, src->names[i].tgid, src->names[i].id);
    free(fresh.v);
    src->range_from = prev + 1;
    src->last_pid = last;
    return 0;
}
