/* SPDX-License-Identifier: GPL-2.0-or-later */
/* lens_waits.c: the reading of the BPF lens's task waits (src/bpf/kern/waits.bpf.c's
 * maps, bpf/waits.h), for lens_read (lens.c). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/bpf.h>

#include "lens_priv.h"

static int cmp_wait(const void *a, const void *b)
{
    pid_t x = ((const struct lens_wait_row *)a)->id, y = ((const struct lens_wait_row *)b)->id;
    return (x > y) - (x < y);
}

/* A thread's wait in progress, to be added to its group's row. */
struct open_wait {
    pid_t    tgid;
    uint64_t ns;
    bool     intr;                   /* slept interruptibly (lens_wait.open_intr) */
};

static int cmp_open(const void *a, const void *b)
{
    pid_t x = ((const struct open_wait *)a)->tgid, y = ((const struct open_wait *)b)->tgid;
    return (x > y) - (x < y);
}

/* Rows of a wait map, sorted by id. A wait still open counts up to now: a task blocked
 * for the whole interval must not read as not waiting. With opens (the threads' map),
 * the open waits are also listed there by group, sorted (*nopen of them). */
int read_waits(struct lens *l, const struct lens_map *map, uint64_t now,
               struct lens_wait_row **rows, size_t *n, bool *full,
               struct open_wait **opens, size_t *nopen)
{
    long got = dump_map(l, map);
    if (got < 0)
        return (int)got;
    *full = (size_t)got * 10 >= (size_t)map->max_entries * 9;
    if (got == 0)
        return 0;
    struct lens_wait_row *v = calloc((size_t)got, sizeof *v);
    struct open_wait *o = opens ? calloc((size_t)got, sizeof *o) : NULL;
    if (!v || (opens && !o)) {
        free(v);
        free(o);
        return -ENOMEM;
    }
    size_t no = 0;
    const __u32 *keys = l->keys;
    const struct lens_wait *vals = l->vals;
    for (long i = 0; i < got; i++) {
        v[i].id = (pid_t)keys[i];
        v[i].tgid = (pid_t)vals[i].tgid;
        v[i].wait_ns = vals[i].wait_ns;
        v[i].waits = vals[i].waits;
        v[i].intr_ns = vals[i].intr_ns;
        uint64_t start = vals[i].start_ns;
        if (start && now > start) {
            bool intr = vals[i].open_intr != 0;
            v[i].wait_ns += now - start;
            if (intr)
                v[i].intr_ns += now - start;
            if (o)
                o[no++] = (struct open_wait){ .tgid = v[i].tgid, .ns = now - start, .intr = intr };
        }
    }
    if (got > 1)
        qsort(v, (size_t)got, sizeof *v, cmp_wait);
    *rows = v;
    *n = (size_t)got;
    if (opens) {
        if (no > 1)
            qsort(o, no, sizeof *o, cmp_open);
        *opens = o;
        *nopen = no;
    }
    return 0;
}

/* A group's figure is the sum of its threads' waits: the program adds each finished wait
 * to the group's row, and here the threads' open waits are added too (a group whose
 * threads have only waits in progress gets a row of its own, with no finished wait). */
int add_open_waits(struct lens_reading *out, const struct open_wait *o, size_t no)
{
    size_t extra = 0;
    for (size_t i = 0; i < no; i++)
        if ((i == 0 || o[i].tgid != o[i - 1].tgid) &&
            !lens_wait_find(out->tgids, out->ntgids, o[i].tgid))
            extra++;
    if (extra) {
        struct lens_wait_row *p = realloc(out->tgids, (out->ntgids + extra) * sizeof *p);
        if (!p)
            return -ENOMEM;
        out->tgids = p;
    }
    size_t n = out->ntgids;          /* the sorted rows searched below */
    for (size_t i = 0; i < no; i++) {
        const struct lens_wait_row *f = lens_wait_find(out->tgids, n, o[i].tgid);
        struct lens_wait_row *g = f ? out->tgids + (f - out->tgids) : NULL;
        if (!g) {
            if (i > 0 && o[i].tgid == o[i - 1].tgid)
                g = &out->tgids[out->ntgids - 1];
            else {
                g = &out->tgids[out->ntgids++];
                *g = (struct lens_wait_row){ .id = o[i].tgid, .tgid = o[i].tgid };
            }
        }
        g->wait_ns += o[i].ns;
        if (o[i].intr)
            g->intr_ns += o[i].ns;
    }
    if (out->ntgids > n)
        qsort(out->tgids, out->ntgids, sizeof *out->tgids, cmp_wait);
    return 0;
}


/* Adds a finished wait of d ns to an entry's sums. */
static void wait_add(struct lens_wait *w, uint64_t d, bool intr)
{
    w->wait_ns += d;
    w->waits++;
    if (intr)
        w->intr_ns += d;
}

/* The duty cycle has just detached the scheduler program (lens_duty.c): the waits it saw
 * begin in the window and not end are ended here, at `now`, as the program would have.
 * A wait is so counted whole when it began in a window, up to the detachment at most
 * (a window's waits stand for the interval's, lens_duty scaling them), and no start is
 * left to be read as a wait in progress while nothing watches it end. l->rd held; with
 * the program detached only lens_exit touches the entries (a deleted one fails the
 * update, BPF_EXIST). */
void waits_finish(struct lens *l, uint64_t now)
{
    long got = dump_map(l, &l->waits_tid);
    if (got <= 0)
        return;
    uint64_t from = __atomic_load_n(l->wait_from, __ATOMIC_RELAXED);
    const __u32 *keys = l->keys;
    struct lens_wait *vals = l->vals;
    for (long i = 0; i < got; i++) {
        struct lens_wait w = vals[i];
        if (!w.start_ns)
            continue;
        uint64_t start = w.start_ns;
        bool intr = w.open_intr != 0;
        w.start_ns = 0;
        w.open_intr = 0;
        bool counts = start >= from && now > start;
        if (counts)
            wait_add(&w, now - start, intr);
        if (bpf_map_update_elem(l->waits_tid.fd, &keys[i], &w, BPF_EXIST) != 0 || !counts)
            continue;
        __u32 tgid = w.tgid;
        struct lens_wait g;
        if (bpf_map_lookup_elem(l->waits_tgid.fd, &tgid, &g) == 0) {
            wait_add(&g, now - start, intr);
            bpf_map_update_elem(l->waits_tgid.fd, &tgid, &g, BPF_EXIST);
        } else {
            g = (struct lens_wait){ .tgid = tgid };
            wait_add(&g, now - start, intr);
            bpf_map_update_elem(l->waits_tgid.fd, &tgid, &g, BPF_NOEXIST);
        }
    }
}
