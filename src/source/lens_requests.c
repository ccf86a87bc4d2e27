/* SPDX-License-Identifier: GPL-2.0-or-later */
/* lens_requests.c: the reading of the BPF lens's request stages (src/bpf/kern/
 * requests.bpf.c and requests_tables.bpf.c: the (device, priority) pairs and the
 * devices, bpf/requests.h), for lens_read (lens.c). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/bpf.h>

#include "lens_priv.h"

/* The (device, priority) pairs: every slot marked used in lens_dp_used is looked up (a
 * few, where the whole per-CPU array would be ncpus x 1.1 KB a slot), and each CPU's copy
 * is added to its key's row (a key may sit in different slots on different CPUs). */
int read_devprio(struct lens *l, struct lens_reading *out)
{
    const __u64 *used = l->dp_used;
    int fd = l->devprio.fd;
    size_t nslots = 0;
    for (size_t w = 0; w < LENS_MAX_DEVPRIO / 64; w++)
        nslots += (size_t)__builtin_popcountll(used[w]);
    if (nslots == 0)
        return 0;
    size_t cap = nslots * (size_t)l->ncpus;
    size_t stride = (sizeof(struct lens_dp_val) + 7) & ~(size_t)7;
    size_t vsz = lens_percpu_size(sizeof(struct lens_dp_val), l->ncpus);
    if (l->vals_sz < vsz) {
        void *p = realloc(l->vals, vsz);
        if (!p)
            return -ENOMEM;
        l->vals = p;
        l->vals_sz = vsz;
    }
    out->dp = calloc(cap, sizeof *out->dp);
    struct lens_moments *mm = realloc(l->moments, cap * sizeof *mm);
    __u64 *keys = calloc(cap, sizeof *keys);
    if (mm)
        l->moments = mm;
    if (!out->dp || !mm || !keys) {
        free(keys);
        return -ENOMEM;
    }
    size_t n = 0;
    for (__u32 idx = 0; idx < LENS_MAX_DEVPRIO; idx++) {
        if (!(used[idx / 64] >> (idx % 64) & 1))
            continue;
        if (bpf_map_lookup_elem(fd, &idx, l->vals) < 0) {
            free(keys);
            return -errno;
        }
        for (int c = 0; c < l->ncpus; c++) {
            const struct lens_dp_val *v =
                (const void *)((const char *)l->vals + (size_t)c * stride);
            if (!v->key)
                continue;
            size_t i = 0;
            while (i < n && keys[i] != v->key)
                i++;
            if (i == n) {
                if (n == cap)
                    break;
                keys[n++] = v->key;
                __u32 dev = (__u32)(v->key >> 16);
                out->dp[i].major = dev >> 20;
                out->dp[i].minor = dev & 0xfffff;
                out->dp[i].prio = (unsigned)(v->key & 0xffff);
                l->moments[i] = (struct lens_moments){ .dev = dev };
            }
            struct lens_devprio *d = &out->dp[i];
            struct lens_moments *m = &l->moments[i];
            for (int st = 0; st < LENS_NSTAGES; st++) {
                d->st[st].count += v->st[st].count;
                d->st[st].sum_ns += v->st[st].sum_ns;
                for (int b = 0; b < LENS_HIST; b++)
                    d->st[st].hist[b] += v->st[st].hist[b];
            }
            m->n += v->n;
            m->sd += v->sd;
            m->sdd += v->sdd;
            m->sy += v->sy;
            m->sdy += v->sdy;
            m->timed += v->timed;
        }
    }
    free(keys);
    out->ndp = n;
    l->nmoments = n;
    return 0;
}

/* The devices, from the mapped table; their depth moments are the sums over their
 * priorities (read_devprio). */
int read_devs(struct lens *l, struct lens_reading *out)
{
    const struct lens_dev_val *v = l->devs;
    size_t got = 0;
    for (size_t i = 0; i < LENS_MAX_DEVS; i++)
        got += v[i].key != 0;
    if (got == 0)
        return 0;
    if (!(out->devs = calloc(got, sizeof *out->devs)))
        return -ENOMEM;
    size_t n = 0;
    for (size_t i = 0; i < LENS_MAX_DEVS && n < got; i++) {
        __u64 key = v[i].key;
        if (!key)
            continue;
        __u32 dev = (__u32)key;
        struct lens_devstat *d = &out->devs[n++];
        d->major = dev >> 20;
        d->minor = dev & 0xfffff;
        /* two plain loads, not one instant: a request issued between them can show as
         * one more in flight */
        d->done = v[i].done;
        d->issued = v[i].issued;
        d->inflight = (int64_t)(d->issued - d->done + v[i].lost);
        d->untracked = v[i].untracked;
        memcpy(d->sched_in, v[i].sched_in, sizeof d->sched_in);
        memcpy(d->sched_out, v[i].sched_out, sizeof d->sched_out);
        d->min_dev_ns = v[i].min_dev_ns;
        for (size_t j = 0; j < l->nmoments; j++) {
            const struct lens_moments *m = &l->moments[j];
            if (m->dev != dev)
                continue;
            d->n += m->n;
            d->sd += m->sd;
            d->sdd += m->sdd;
            d->sy += m->sy;
            d->sdy += m->sdy;
            d->timed += m->timed;
        }
    }
    out->ndevs = n;
    return 0;
}

