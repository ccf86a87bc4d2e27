/* source/procinfo.c: one process and its threads in depth, through libproc2.
 *
 * libproc2 is loaded with dlopen when the process view first opens: linked, it and the
 * libraries it pulls in (libsystemd and its compressors) cost about 1.1 MB of resident
 * memory in every run, batch ones included (docs/performance.md). */
#include "source/procinfo.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <libproc2/pids.h>

#include "util.h"

enum { IT_TID, IT_PID, IT_CMD, IT_STATE, IT_WCHAN, IT_NICE, IT_POLICY, IT_CGROUP, IT_RSS, IT_SWAP,
       IT_MAJFLT, IT_ELAPSED, IT_COUNT };

static enum pids_item items[IT_COUNT] = {
    [IT_TID] = PIDS_ID_TID,          [IT_PID] = PIDS_ID_PID,
    [IT_CMD] = PIDS_CMD,             [IT_STATE] = PIDS_STATE,
    [IT_WCHAN] = PIDS_WCHAN_NAME,    [IT_NICE] = PIDS_NICE,
    [IT_POLICY] = PIDS_SCHED_CLASS,  [IT_CGROUP] = PIDS_CGROUP,
    [IT_RSS] = PIDS_VM_RSS,          [IT_SWAP] = PIDS_VM_SWAP,
    [IT_MAJFLT] = PIDS_FLT_MAJ,      [IT_ELAPSED] = PIDS_TIME_ELAPSED,
};

struct procinfo_src {
    struct pids_info *info;
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
    if (lp.lib)
        return 0;
    void *h = dlopen("libproc2.so.0", RTLD_NOW | RTLD_LOCAL);
    if (!h)
        return -ENOENT;
    /* POSIX: a function pointer is stored through its object representation */
    *(void **)&lp.pids_new = dlsym(h, "procps_pids_new");
    *(void **)&lp.pids_select = dlsym(h, "procps_pids_select");
    *(void **)&lp.pids_unref = dlsym(h, "procps_pids_unref");
    if (!lp.pids_new || !lp.pids_select || !lp.pids_unref) {
        dlclose(h);
        memset(&lp, 0, sizeof(lp));
        return -ENOSYS;
    }
    lp.lib = h;
    return 0;
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
    *out = s;
    return 0;
}

void procinfo_close(struct procinfo_src *s)
{
    if (!s)
        return;
    lp.pids_unref(&s->info);
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

static int cmp_thread(const void *a, const void *b)
{
    const struct procinfo_thread *x = a, *y = b;
    return (x->tid > y->tid) - (x->tid < y->tid);
}

int procinfo_read(struct procinfo_src *s, pid_t pid, size_t max_threads, struct procinfo *out)
{
    memset(out, 0, sizeof(*out));
    out->state = '?';
    out->rss_kb = out->swap_kb = -1;
    out->maj_flt = -1;
    out->elapsed_s = -1;
    unsigned want = (unsigned)pid;
    struct pids_fetch *f = lp.pids_select(s->info, &want, 1, PIDS_SELECT_PID_THREADS);
    if (!f) {
        out->err = errno ? -errno : -EIO;
        return out->err;
    }
    int total = f->counts ? f->counts->total : 0;
    bool leader = false;
    for (int i = 0; i < total; i++) {
        struct pids_stack *st = f->stacks[i];
        pid_t tid = PIDS_VAL(IT_TID, s_int, st, s->info);
        if (tid == pid && !leader) {
            leader = true;
            out->state = PIDS_VAL(IT_STATE, s_ch, st, s->info);
            copy_wchan(out->wchan, sizeof(out->wchan), PIDS_VAL(IT_WCHAN, str, st, s->info));
            const char *cg = PIDS_VAL(IT_CGROUP, str, st, s->info);
            str_copy(out->cgroup, cg && strcmp(cg, "-") != 0 ? cg : "", sizeof(out->cgroup));
            out->rss_kb = (long)PIDS_VAL(IT_RSS, ul_int, st, s->info);
            out->swap_kb = (long)PIDS_VAL(IT_SWAP, ul_int, st, s->info);
            out->maj_flt = (long long)PIDS_VAL(IT_MAJFLT, ul_int, st, s->info);
            out->elapsed_s = PIDS_VAL(IT_ELAPSED, real, st, s->info);
        }
        bool dup = false;
        for (size_t k = 0; k < out->nthreads; k++)
            dup |= out->threads[k].tid == tid;
        if (dup)
            continue;
        out->threads_total++;
        if (out->nthreads == max_threads)
            continue;
        out->threads = xreallocarray(out->threads, out->nthreads + 1, sizeof(*out->threads));
        struct procinfo_thread *t = &out->threads[out->nthreads++];
        t->tid = tid;
        const char *cmd = PIDS_VAL(IT_CMD, str, st, s->info);
        str_copy(t->comm, cmd ? cmd : "?", sizeof(t->comm));
        t->state = PIDS_VAL(IT_STATE, s_ch, st, s->info);
        copy_wchan(t->wchan, sizeof(t->wchan), PIDS_VAL(IT_WCHAN, str, st, s->info));
        t->nice = PIDS_VAL(IT_NICE, s_int, st, s->info);
        t->policy = PIDS_VAL(IT_POLICY, s_int, st, s->info);
    }
    if (!leader) {
        procinfo_free(out);
        out->err = -ESRCH;
        return out->err;
    }
    if (out->nthreads > 1)
        qsort(out->threads, out->nthreads, sizeof(*out->threads), cmp_thread);
    /* the leader first (lowest tid, unless pids wrapped) */
    for (size_t k = 1; k < out->nthreads; k++)
        if (out->threads[k].tid == pid) {
            struct procinfo_thread l = out->threads[k];
            memmove(&out->threads[1], &out->threads[0], k * sizeof(l));
            out->threads[0] = l;
        }
    return 0;
}
