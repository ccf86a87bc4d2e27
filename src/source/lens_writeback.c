/* SPDX-License-Identifier: GPL-2.0-or-later */
/* lens_writeback.c: the reading of the BPF lens's writeback (src/bpf/kern/
 * writeback.bpf.c's wbs map, bpf/writeback.h), for lens_read (lens.c). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "lens_priv.h"

/* Kernel threads' bytes by dirtier (lens_maps.h: struct lens_wb_key). */
int read_wbs(struct lens *l, struct lens_reading *out)
{
    long got = dump_map(l, &l->wbs);
    if (got <= 0)
        return (int)got;
    if (!(out->wbs = calloc((size_t)got, sizeof *out->wbs)))
        return -ENOMEM;
    const struct lens_wb_key *k = l->keys;
    for (long i = 0; i < got; i++) {
        struct lens_wb_row *w = &out->wbs[i];
        w->major = k[i].dev >> 20;
        w->minor = k[i].dev & 0xfffff;
        w->tgid = (pid_t)k[i].tgid;
        w->cgid = k[i].cgid;
        w->blkcg = k[i].blkcg;
        memcpy(w->comm, k[i].comm, sizeof(w->comm));
        w->comm[sizeof(w->comm) - 1] = '\0';
        percpu_counts(l, i, &w->bytes, &w->bios);
    }
    out->nwbs = (size_t)got;
    if (out->nwbs > 1)
        qsort(out->wbs, out->nwbs, sizeof *out->wbs, lens_wb_cmp);
    return 0;
}

