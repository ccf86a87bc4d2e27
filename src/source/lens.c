/* lens.c: load, attach and read the BPF lens (source/lens.h). The pure arithmetic on
 * readings is in lens_calc.c. */
#include "source/lens.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "iotriage.skel.h"

#define CAP_PERFMON_BIT 38
#define CAP_BPF_BIT     39

struct lens {
    struct iotriage_bpf *skel;
    double since;
    /* Scratch for batch lookups, sized for each map's max_entries once. */
    void  *keys, *vals;
    size_t keys_sz, vals_sz;
};

static double mono_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* libbpf prints its reasons; keep the last error line to pass on instead of printing
 * over the screen. */
static char last_libbpf[160];

__attribute__((format(printf, 2, 0)))
static int lens_print(enum libbpf_print_level level, const char *fmt, va_list ap);
static int lens_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
    if (level != LIBBPF_WARN)
        return 0;
    char line[sizeof last_libbpf];
    vsnprintf(line, sizeof line, fmt, ap);
    size_t n = strlen(line);
    while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == ' '))
        line[--n] = '\0';
    if (n > 0)
        memcpy(last_libbpf, line, n + 1);
    return 0;
}

/* Whether the effective capability set holds both bits (/proc/self/status CapEff). */
static bool have_caps(void)
{
    FILE *f = fopen("/proc/self/status", "re");
    if (!f)
        return false;
    char line[256];
    unsigned long long eff = 0;
    bool found = false;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "CapEff: %llx", &eff) == 1) {
            found = true;
            break;
        }
    fclose(f);
    return found && (eff >> CAP_BPF_BIT & 1) && (eff >> CAP_PERFMON_BIT & 1);
}

int lens_open(struct lens **out, char *err, size_t errlen)
{
    *out = NULL;
    if (geteuid() != 0 && !have_caps()) {
        snprintf(err, errlen, "not root and no CAP_BPF+CAP_PERFMON");
        return -EPERM;
    }
    if (access("/sys/kernel/btf/vmlinux", R_OK) != 0) {
        int e = errno;
        snprintf(err, errlen, "no kernel BTF at /sys/kernel/btf/vmlinux: %s", strerror(e));
        return -e;
    }
    struct lens *l = calloc(1, sizeof *l);
    if (!l) {
        snprintf(err, errlen, "out of memory");
        return -ENOMEM;
    }
    last_libbpf[0] = '\0';
    libbpf_print_fn_t old = libbpf_set_print(lens_print);
    int rc = 0;
    const char *step = "open";
    struct iotriage_bpf *skel = iotriage_bpf__open();
    l->skel = skel;
    if (!skel) {
        rc = errno ? -errno : -ENOMEM;
    } else {
        step = "load";
        rc = iotriage_bpf__load(skel);
        if (rc == 0) {
            step = "attach";
            rc = iotriage_bpf__attach(skel);
        }
    }
    libbpf_set_print(old);
    if (rc != 0) {
        if (rc > 0)
            rc = -rc;
        snprintf(err, errlen, "BPF %s failed: %s%s%s", step, strerror(-rc),
                 last_libbpf[0] ? ": " : "", last_libbpf);
        lens_close(l);
        return rc;
    }
    l->since = mono_now();
    *out = l;
    return 0;
}

void lens_close(struct lens *l)
{
    if (!l)
        return;
    iotriage_bpf__destroy(l->skel);
    free(l->keys);
    free(l->vals);
    free(l);
}

void lens_reading_free(struct lens_reading *r)
{
    free(r->tids);
    free(r->tgids);
    free(r->dp);
    free(r->devs);
    free(r->subs);
    memset(r, 0, sizeof *r);
}

static void *dup_array(const void *p, size_t n, size_t sz, bool *fail)
{
    if (!p || n == 0)
        return NULL;
    void *q = malloc(n * sz);
    if (!q) {
        *fail = true;
        return NULL;
    }
    memcpy(q, p, n * sz);
    return q;
}

int lens_reading_copy(const struct lens_reading *src, struct lens_reading *dst)
{
    bool fail = false;
    *dst = *src;
    dst->tids = dup_array(src->tids, src->ntids, sizeof *src->tids, &fail);
    dst->tgids = dup_array(src->tgids, src->ntgids, sizeof *src->tgids, &fail);
    dst->dp = dup_array(src->dp, src->ndp, sizeof *src->dp, &fail);
    dst->devs = dup_array(src->devs, src->ndevs, sizeof *src->devs, &fail);
    dst->subs = dup_array(src->subs, src->nsubs, sizeof *src->subs, &fail);
    if (fail) {
        lens_reading_free(dst);
        return -ENOMEM;
    }
    return 0;
}

/* Every entry of a map into l->keys/l->vals; returns the count or -errno. One batch
 * call per map when the kernel has them (5.6+), else key by key. */
static long dump_map(struct lens *l, const struct bpf_map *map)
{
    int fd = bpf_map__fd(map);
    size_t ksz = bpf_map__key_size(map), vsz = bpf_map__value_size(map);
    size_t max = bpf_map__max_entries(map);
    if (l->keys_sz < ksz * max) {
        void *p = realloc(l->keys, ksz * max);
        if (!p)
            return -ENOMEM;
        l->keys = p;
        l->keys_sz = ksz * max;
    }
    if (l->vals_sz < vsz * max) {
        void *p = realloc(l->vals, vsz * max);
        if (!p)
            return -ENOMEM;
        l->vals = p;
        l->vals_sz = vsz * max;
    }
    size_t got = 0;
    uint64_t in_tok = 0, out_tok = 0;
    bool first = true;
    for (;;) {
        __u32 count = (__u32)(max - got);
        if (count == 0)
            break;
        int rc = bpf_map_lookup_batch(fd, first ? NULL : &in_tok, &out_tok,
                                      (char *)l->keys + got * ksz, (char *)l->vals + got * vsz,
                                      &count, NULL);
        int e = rc < 0 ? errno : 0;
        got += count;
        if (rc == 0) {
            in_tok = out_tok;
            first = false;
            continue;
        }
        if (e == ENOENT)
            return (long)got;
        if (first && got == 0 && (e == EINVAL || e == ENOTSUP || e == EOPNOTSUPP))
            break;                   /* no batch ops: key by key below */
        return -e;
    }
    if (got > 0)
        return (long)got;
    /* Key by key (kernels before 5.6). */
    char prev[16], key[16];
    if (ksz > sizeof key)
        return -EINVAL;
    void *pk = NULL;
    while (got < max && bpf_map_get_next_key(fd, pk, key) == 0) {
        if (bpf_map_lookup_elem(fd, key, (char *)l->vals + got * vsz) == 0) {
            memcpy((char *)l->keys + got * ksz, key, ksz);
            got++;
        }
        memcpy(prev, key, ksz);
        pk = prev;
    }
    return (long)got;
}

static int cmp_wait(const void *a, const void *b)
{
    pid_t x = ((const struct lens_wait_row *)a)->id, y = ((const struct lens_wait_row *)b)->id;
    return (x > y) - (x < y);
}

static int read_waits(struct lens *l, const struct bpf_map *map, uint64_t now,
                      struct lens_wait_row **rows, size_t *n, bool *full)
{
    long got = dump_map(l, map);
    if (got < 0)
        return (int)got;
    *full = (size_t)got * 10 >= bpf_map__max_entries(map) * 9;
    if (got == 0)
        return 0;
    struct lens_wait_row *v = calloc((size_t)got, sizeof *v);
    if (!v)
        return -ENOMEM;
    const __u32 *keys = l->keys;
    const struct lens_wait *vals = l->vals;
    for (long i = 0; i < got; i++) {
        v[i].id = (pid_t)keys[i];
        v[i].tgid = (pid_t)vals[i].tgid;
        v[i].wait_ns = vals[i].wait_ns;
        v[i].waits = vals[i].waits;
        /* A wait still open counts up to now: a task blocked for the whole interval
         * must not read as not waiting. */
        uint64_t start = vals[i].start_ns;
        if (start && now > start)
            v[i].wait_ns += now - start;
    }
    qsort(v, (size_t)got, sizeof *v, cmp_wait);
    *rows = v;
    *n = (size_t)got;
    return 0;
}

int lens_read(struct lens *l, struct lens_reading *out)
{
    memset(out, 0, sizeof *out);
    out->since = l->since;
    out->mono = mono_now();
    uint64_t now = mono_ns();
    struct iotriage_bpf *s = l->skel;
    int rc = read_waits(l, s->maps.waits_tid, now, &out->tids, &out->ntids, &out->tids_full);
    if (rc == 0)
        rc = read_waits(l, s->maps.waits_tgid, now, &out->tgids, &out->ntgids, &out->tgids_full);
    if (rc == 0) {
        long got = dump_map(l, s->maps.devprio);
        if (got < 0)
            rc = (int)got;
        else if (got > 0 && !(out->dp = calloc((size_t)got, sizeof *out->dp)))
            rc = -ENOMEM;
        else {
            const struct lens_dp_key *k = l->keys;
            const struct lens_dp_val *v = l->vals;
            for (long i = 0; i < got; i++) {
                struct lens_devprio *d = &out->dp[i];
                d->major = k[i].dev >> 20;
                d->minor = k[i].dev & 0xfffff;
                d->prio = k[i].prio;
                for (int st = 0; st < LENS_NSTAGES; st++) {
                    d->st[st].count = v[i].st[st].count;
                    d->st[st].sum_ns = v[i].st[st].sum_ns;
                    memcpy(d->st[st].hist, v[i].st[st].hist, sizeof d->st[st].hist);
                }
            }
            out->ndp = (size_t)got;
        }
    }
    if (rc == 0) {
        long got = dump_map(l, s->maps.devs);
        if (got < 0)
            rc = (int)got;
        else if (got > 0 && !(out->devs = calloc((size_t)got, sizeof *out->devs)))
            rc = -ENOMEM;
        else {
            const __u32 *k = l->keys;
            const struct lens_dev_val *v = l->vals;
            for (long i = 0; i < got; i++) {
                struct lens_devstat *d = &out->devs[i];
                d->major = k[i] >> 20;
                d->minor = k[i] & 0xfffff;
                d->inflight = v[i].inflight;
                d->issued = v[i].issued;
                d->depth_sum = v[i].depth_sum;
                d->n = v[i].n;
                d->sd = v[i].sd;
                d->sdd = v[i].sdd;
                d->sy = v[i].sy;
                d->sdy = v[i].sdy;
                d->untracked = v[i].untracked;
                memcpy(d->sched_in, v[i].sched_in, sizeof d->sched_in);
                memcpy(d->sched_out, v[i].sched_out, sizeof d->sched_out);
                d->min_dev_ns = v[i].min_dev_ns;
            }
            out->ndevs = (size_t)got;
        }
    }
    if (rc == 0) {
        long got = dump_map(l, s->maps.submits);
        if (got < 0)
            rc = (int)got;
        else if (got > 0 && !(out->subs = calloc((size_t)got, sizeof *out->subs)))
            rc = -ENOMEM;
        else {
            const struct lens_submit_key *k = l->keys;
            const struct lens_submit_val *v = l->vals;
            for (long i = 0; i < got; i++) {
                out->subs[i].tgid = (pid_t)k[i].tgid;
                out->subs[i].major = k[i].dev >> 20;
                out->subs[i].minor = k[i].dev & 0xfffff;
                out->subs[i].bytes = v[i].bytes;
                out->subs[i].bios = v[i].bios;
            }
            out->nsubs = (size_t)got;
        }
    }
    if (rc == 0 && s->bss)
        out->dropped = s->bss->lens_dropped;
    if (rc != 0)
        lens_reading_free(out);
    return rc;
}
