/* SPDX-License-Identifier: GPL-2.0-or-later */
/* act/prio.c: set an I/O priority on every thread of a process, and check each one.
 *
 * ioprio_set(IOPRIO_WHO_PROCESS, tid) changes one thread: a label set on the main thread
 * says nothing of the others, and IOPRIO_WHO_PGRP would reach other processes. So each
 * thread listed in /proc/PID/task is set and read back; the list is read again until no
 * new thread shows up, for a process that starts threads while we work. */
#include "act/act.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "source/ioprio.h"
#include "source/procs.h"
#include "util.h"

#define IOPRIO_WHO_PROCESS 1
#define PASSES 4                     /* rounds of listing threads */
#define TIDS_MAX 65536

static int sys_ioprio_set(pid_t tid, int raw)
{
    return syscall(SYS_ioprio_set, IOPRIO_WHO_PROCESS, (int)tid, raw) < 0 ? -errno : 0;
}

/* The start time of pid, from /proc/PID/stat as the sampler parses it. */
static int start_ticks_of(int proc_fd, pid_t pid, unsigned long long *out)
{
    char path[32], buf[2048];
    snprintf(path, sizeof(path), "%d/stat", (int)pid);
    ssize_t l = read_file_at(proc_fd, path, buf, sizeof(buf));
    if (l < 0)
        return (int)l;
    struct proc_stat ps;
    if (procstat_parse(buf, (size_t)l, &ps) != 0)
        return -EINVAL;
    *out = ps.start_ticks;
    return 0;
}

int prio_start_ticks(const char *proc_root, pid_t pid, unsigned long long *out)
{
    int proc_fd = open(proc_root ? proc_root : "/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (proc_fd < 0)
        return -errno;
    int rc = start_ticks_of(proc_fd, pid, out);
    close(proc_fd);
    return rc;
}

static int cmp_pid(const void *a, const void *b)
{
    pid_t x = *(const pid_t *)a, y = *(const pid_t *)b;
    return (x > y) - (x < y);
}

static bool seen(const pid_t *v, size_t n, pid_t tid)
{
    return bsearch(&tid, v, n, sizeof(*v), cmp_pid) != NULL;
}

static void note_fail(struct prio_outcome *o, pid_t tid, int err)
{
    if (o->nfail < PRIO_FAIL_MAX) {
        o->fail[o->nfail].tid = tid;
        o->fail[o->nfail].err = err;
    }
    o->nfail++;
}

int prio_apply(const char *proc_root, pid_t pid, unsigned long long start_ticks, int raw,
               struct prio_outcome *out)
{
    memset(out, 0, sizeof(*out));
    if (act_read_only()) {
        out->err = -EROFS;
        snprintf(out->msg, sizeof(out->msg), "read-only mode: nothing written");
        return out->err;
    }
    int proc_fd = open(proc_root ? proc_root : "/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (proc_fd < 0) {
        out->err = -errno;
        snprintf(out->msg, sizeof(out->msg), "cannot open /proc: %s", strerror(errno));
        return out->err;
    }
    unsigned long long st;
    int rc = start_ticks_of(proc_fd, pid, &st);
    if (rc < 0 || st != start_ticks) {
        close(proc_fd);
        out->err = -ESRCH;
        snprintf(out->msg, sizeof(out->msg), "process %d %s: nothing written", (int)pid,
                 rc < 0 ? "has exited" : "has exited (its pid now names another process)");
        return out->err;
    }
    pid_t *done = NULL;
    size_t ndone = 0;
    char tdir[32];
    snprintf(tdir, sizeof(tdir), "%d/task", (int)pid);
    for (int pass = 0; pass < PASSES; pass++) {
        DIR *d = opendir_at(proc_fd, tdir);
        if (!d) {
            if (pass == 0) {
                out->err = -errno;
                snprintf(out->msg, sizeof(out->msg), "cannot list the threads of %d: %s", (int)pid, strerror(errno));
            }
            break;
        }
        pid_t *fresh = NULL;
        size_t nfresh = 0;
        struct dirent *e;
        while ((e = readdir(d))) {
            if (e->d_name[0] < '0' || e->d_name[0] > '9')
                continue;
            pid_t tid = (pid_t)atoi(e->d_name);
            if (seen(done, ndone, tid) || ndone + nfresh >= TIDS_MAX)
                continue;
            fresh = xreallocarray(fresh, nfresh + 1, sizeof(*fresh));
            fresh[nfresh++] = tid;
        }
        closedir(d);
        if (nfresh == 0) {
            free(fresh);
            break;
        }
        for (size_t i = 0; i < nfresh; i++) {
            pid_t tid = fresh[i];
            int e2 = sys_ioprio_set(tid, raw);
            if (e2 == -ESRCH)
                continue;            /* the thread ended meanwhile: nothing to set */
            out->nthreads++;
            if (e2 == 0) {
                int got = ioprio_read(tid);
                if (got == -ESRCH) {
                    out->nthreads--;
                    continue;
                }
                e2 = got < 0 ? got : got != raw ? -EIO : 0;
            }
            if (e2 == 0)
                out->nset++;
            else
                note_fail(out, tid, e2);
        }
        done = xreallocarray(done, ndone + nfresh, sizeof(*done));
        memcpy(done + ndone, fresh, nfresh * sizeof(*done));
        ndone += nfresh;
        qsort(done, ndone, sizeof(*done), cmp_pid);
        free(fresh);
    }
    free(done);
    close(proc_fd);
    if (out->err)
        return out->err;
    if (out->nthreads == 0) {
        out->err = -ESRCH;
        snprintf(out->msg, sizeof(out->msg), "process %d has exited: nothing written", (int)pid);
        return out->err;
    }
    const char *cls = ioprio_class_name((enum ioprio_class)IOPRIO_CLASS_OF(raw));
    char label[24];
    if (IOPRIO_CLASS_OF(raw) == IOC_NONE)
        snprintf(label, sizeof(label), "none (follows nice)");
    else
        snprintf(label, sizeof(label), "%s/%u", cls, IOPRIO_LEVEL_OF(raw));
    if (out->nfail == 0) {
        snprintf(out->msg, sizeof(out->msg), "process %d: %s set on all %u thread%s, each read back", (int)pid, label,
                 out->nthreads, out->nthreads == 1 ? "" : "s");
        return 0;
    }
    int n = snprintf(out->msg, sizeof(out->msg), "process %d: %s set on %u of %u threads; failed:", (int)pid, label,
                     out->nset, out->nthreads);
    for (unsigned i = 0; i < out->nfail && i < PRIO_FAIL_MAX && n > 0 && (size_t)n < sizeof(out->msg); i++)
        n += snprintf(out->msg + n, sizeof(out->msg) - (size_t)n, " %d (%s)", (int)out->fail[i].tid,
                      out->fail[i].err == -EIO ? "read back different" : strerror(-out->fail[i].err));
    if (out->nfail > PRIO_FAIL_MAX && n > 0 && (size_t)n < sizeof(out->msg))
        snprintf(out->msg + n, sizeof(out->msg) - (size_t)n, " and %u more", out->nfail - PRIO_FAIL_MAX);
    return -EIO;
}
