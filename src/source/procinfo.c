/* SPDX-License-Identifier: GPL-2.0-or-later */
/* source/procinfo.c: one process in depth through libproc2, its threads from their own
 * stat and wchan files.
 *
 * libproc2 is loaded with dlopen when the process view first opens: linked, it and the
 * libraries it pulls in (libsystemd and its compressors) cost about 1.1 MB of resident
 * memory in every run, batch ones included (docs/performance.md). */
#include "source/procinfo.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <libproc2/pids.h>

#include "source/cgroupfs.h"
#include "source/procs.h"
#include "util.h"

/* The process's own fields; its threads are read from their stat files (below). */
enum { IT_STATE, IT_WCHAN, IT_RSS, IT_SWAP, IT_MAJFLT, IT_ELAPSED, IT_COUNT };

static enum pids_item items[IT_COUNT] = {
    [IT_STATE] = PIDS_STATE,         [IT_WCHAN] = PIDS_WCHAN_NAME,
    [IT_RSS] = PIDS_VM_RSS,          [IT_SWAP] = PIDS_VM_SWAP,
    [IT_MAJFLT] = PIDS_FLT_MAJ,      [IT_ELAPSED] = PIDS_TIME_ELAPSED,
};

struct procinfo_src {
    struct pids_info *info;
    int proc_fd;                     /* /proc, for the files read without libproc2 */
};

/* The three libproc2 functions used, from the library loaded at first use. */
static struct {
    void *lib;
    int (*pids_new)(struct pids_info **, enum pids_item *, int);
    struct pids_fetch *(*pids_select)(struct pids_info *, unsigned *, int, enum pids_select_type);
    int (*pids_unref)(struct pids_info **);
} lp;

static int load_libproc2(void)
{
    static const struct dl_sym syms[] = {
        { "procps_pids_new", offsetof(__typeof__(lp), pids_new) },
        { "procps_pids_select", offsetof(__typeof__(lp), pids_select) },
        { "procps_pids_unref", offsetof(__typeof__(lp), pids_unref) },
    };
    int rc = 0;
    if (!lp.lib)
        lp.lib = dl_load("libproc2.so.0", "the process view", "libproc2-0", &lp, sizeof(lp), syms,
                         sizeof(syms) / sizeof(syms[0]), &rc, NULL, 0);
    return rc;
}

int procinfo_open(struct procinfo_src **out)
{
    int r = load_libproc2();
    if (r < 0)
        return r;
    struct procinfo_src *s = xcalloc(1, sizeof(*s));
    r = lp.pids_new(&s->info, items, IT_COUNT);
    if (r < 0) {
        free(s);
        return r;
    }
    s->proc_fd = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (s->proc_fd < 0) {
        r = -errno;
        lp.pids_unref(&s->info);
        free(s);
        return r;
    }
    *out = s;
    return 0;
}

void procinfo_close(struct procinfo_src *s)
{
    if (!s)
        return;
    lp.pids_unref(&s->info);
    close(s->proc_fd);
    free(s);
}

void procinfo_free(struct procinfo *p)
{
    free(p->threads);
    p->threads = NULL;
    p->nthreads = p->threads_total = 0;
}

/* libproc2 gives "-" for no wchan (running) and "?" when it cannot tell. */
static void copy_wchan(char *dst, size_t n, const char *w)
{
    str_copy(dst, w && strcmp(w, "-") != 0 && strcmp(w, "?") != 0 && strcmp(w, "0") != 0 ? w : "", n);
}

static int cmp_tid(const void *a, const void *b)
{
    const pid_t *x = a, *y = b;
    return (*x > *y) - (*x < *y);
}

/* Every thread id of the process, sorted: a readdir of its task directory, about a
 * microsecond a thread in the kernel. Reading each thread's stat to rank them cost 12 us
 * a thread here (open, read, close), three times a task of the main table: the ranking
 * comes from what the caller already knows instead (docs/performance.md). */
static size_t list_tids(int task_fd, pid_t **out)
{
    DIR *d = fdopendir(dup(task_fd));
    size_t n = 0, cap = 0;
    *out = NULL;
    if (!d)
        return 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        char *end;
        long tid = strtol(e->d_name, &end, 10);
        if (*end || tid <= 0)
            continue;
        if (n == cap)
            *out = xreallocarray(*out, cap = cap ? 2 * cap : 64, sizeof(**out));
        (*out)[n++] = (pid_t)tid;
    }
    closedir(d);
    if (n > 1)
        qsort(*out, n, sizeof(**out), cmp_tid);
    return n;
}

/* Fill one kept thread from its stat and wchan files. false: it exited meanwhile. */
static bool read_thread(int task_fd, pid_t tid, struct procinfo_thread *t)
{
    char name[32], buf[1024];
    struct proc_stat st;
    snprintf(name, sizeof(name), "%d/stat", (int)tid);
    ssize_t r = read_file_at(task_fd, name, buf, sizeof(buf));
    if (r <= 0 || procstat_parse(buf, (size_t)r, &st) < 0)
        return false;
    t->tid = tid;
    str_copy(t->comm, st.comm, sizeof(t->comm));
    t->state = st.state;
    t->nice = st.nice;
    t->policy = st.policy;
    snprintf(name, sizeof(name), "%d/wchan", (int)tid);
    copy_wchan(t->wchan, sizeof(t->wchan), read_file_at(task_fd, name, buf, sizeof(buf)) > 0 ? buf : NULL);
    return true;
}

int procinfo_read(struct procinfo_src *s, pid_t pid, size_t max_threads, const pid_t *first, size_t nfirst,
                  struct procinfo *out)
{
    memset(out, 0, sizeof(*out));
    out->state = '?';
    out->rss_kb = out->swap_kb = -1;
    out->maj_flt = -1;
    out->elapsed_s = -1;

    /* The process: libproc2, for its one stack of many fields. */
    unsigned want = (unsigned)pid;
    struct pids_fetch *f = lp.pids_select(s->info, &want, 1, PIDS_SELECT_PID);
    if (!f) {
        out->err = errno ? -errno : -EIO;
        return out->err;
    }
    if (!f->counts || f->counts->total < 1) {
        out->err = -ESRCH;
        return out->err;
    }
    struct pids_stack *st = f->stacks[0];
    out->state = PIDS_VAL(IT_STATE, s_ch, st, s->info);
    copy_wchan(out->wchan, sizeof(out->wchan), PIDS_VAL(IT_WCHAN, str, st, s->info));
    /* the cgroup the lens and the io.* controls speak of: the v2 one (libproc2 gives
     * every hierarchy's line, v1 ones first) */
    struct cgroup_membership cg;
    if (cgroup_proc_read(s->proc_fd, pid, &cg) == 0 && (cg.has_v2 || cg.has_blkio))
        snprintf(out->cgroup, sizeof(out->cgroup), "%s%s", cg.has_v2 ? "" : "blkio:", cg.has_v2 ? cg.v2 : cg.blkio);
    out->rss_kb = (long)PIDS_VAL(IT_RSS, ul_int, st, s->info);
    out->swap_kb = (long)PIDS_VAL(IT_SWAP, ul_int, st, s->info);
    out->maj_flt = (long long)PIDS_VAL(IT_MAJFLT, ul_int, st, s->info);
    out->elapsed_s = PIDS_VAL(IT_ELAPSED, real, st, s->info);

    /* Its threads: all counted, at most max_threads kept and read: the leader, then the
     * ones the caller put first (e.g. those that waited on I/O), then by tid. */
    char path[32];
    snprintf(path, sizeof(path), "%d/task", (int)pid);
    int task_fd = openat(s->proc_fd, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (task_fd < 0) {
        out->err = errno == ENOENT ? -ESRCH : -errno;
        return out->err;
    }
    pid_t *tids;
    size_t n = list_tids(task_fd, &tids);
    out->threads_total = n;
    out->threads = n ? xcalloc(n < max_threads ? n : max_threads, sizeof(*out->threads)) : NULL;
    bool *taken = n ? xcalloc(n, sizeof(*taken)) : NULL;
    /* the order wanted: the leader, the caller's firsts, then the rest by tid */
    for (size_t pass = 0; pass < 3 && out->nthreads < max_threads; pass++) {
        size_t m = pass == 0 ? 1 : pass == 1 ? nfirst : n;
        for (size_t k = 0; k < m && out->nthreads < max_threads; k++) {
            pid_t want_tid = pass == 0 ? pid : pass == 1 ? first[k] : tids[k];
            pid_t *hit = bsearch(&want_tid, tids, n, sizeof(*tids), cmp_tid);
            if (!hit || taken[hit - tids])
                continue;
            taken[hit - tids] = true;
            if (read_thread(task_fd, want_tid, &out->threads[out->nthreads]))
                out->nthreads++;
        }
    }
    free(taken);
    free(tids);
    close(task_fd);
    return 0;
}
