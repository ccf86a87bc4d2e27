/* SPDX-License-Identifier: GPL-2.0-or-later */
/* lens.c: load and attach the BPF lens, and take its readings (source/lens.h). The duty
 * cycle is lens_duty.c; each concern's maps are read by lens_waits.c, lens_requests.c and
 * lens_writeback.c (what they share: lens_priv.h). The pure arithmetic on readings is in
 * lens_calc.c. */
#include "source/lens.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/utsname.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "bpf/lens_maps.h"            /* the value types, before the light skeleton */
#include "iotriage.skel.h"
#include "iotriage.lskel.h"
#include "source/bpfload.h"
#include "util.h"
#include "lens_priv.h"

/* The most each per-CPU map (devprio, submits) may take, all CPUs together (lens_open). */
#define LENS_DEVPRIO_BYTES (8u << 20)

/* The mapped .bss of either skeleton: the same variables, the same layout. */
_Static_assert(sizeof(((struct iotriage_lskel__bss *)0)->lens_devs) ==
               sizeof(((struct iotriage_bpf__bss *)0)->lens_devs) &&
               sizeof(((struct iotriage_lskel__bss *)0)->lens_dp_used) ==
               sizeof(((struct iotriage_bpf__bss *)0)->lens_dp_used) &&
               sizeof(((struct iotriage_lskel__bss *)0)->lens_marks) ==
               sizeof(((struct iotriage_bpf__bss *)0)->lens_marks),
               "the two skeletons' .bss");

static double mono_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* A per-CPU map's value as user space reads it: one copy per possible CPU, each rounded
 * up to 8 bytes. */
size_t lens_percpu_size(size_t vsz, int ncpus)
{
    return ((vsz + 7) & ~(size_t)7) * (size_t)ncpus;
}

/* Whether the wait maps must be preallocated LRU maps: kernels before 6.1, whose hash
 * maps allocate a new entry with kmalloc, which may wake kswapd and take a run queue's
 * lock inside sched_switch, where one is held (6.1 takes entries from the BPF allocator's
 * per-CPU caches, refilled outside). The light skeleton cannot change a map's type: on
 * those kernels lens_open uses libbpf's. */
static bool lens_wait_maps_lru(void)
{
    struct utsname u;
    int major = 0, minor = 0;
    if (uname(&u) != 0 || sscanf(u.release, "%d.%d", &major, &minor) != 2)
        return true;
    return major < 6 || (major == 6 && minor < 1);
}

/* What lens_open sizes before the load, from the number of CPUs and of tasks. */
struct lens_sizes {
    __u32 devprio, submits, wbs, tids, tgids, rq_sets;
    bool wait_lru;                   /* lens_wait_maps_lru: LRU wait maps, libbpf's loader */
};

/* The requests the machine's request-based disks (those with a blk-mq mq/ directory and
 * a size) can hold at once: nr_requests times hardware queues, summed; 0 when none could
 * be read. A disk added later finds the cache's floor (LENS_RQ_SETS_MIN sets). */
static size_t disk_requests(void)
{
    int sfd = open("/sys/block", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (sfd < 0)
        return 0;
    struct dir_reader r;
    dir_reader_init(&r, sfd);
    size_t sum = 0;
    char path[NAME_MAX + 32];
    for (const char *name; (name = dir_reader_next(&r));) {
        snprintf(path, sizeof path, "%s/size", name);
        if (read_long_at(sfd, path) <= 0)
            continue;
        snprintf(path, sizeof path, "%s/queue/nr_requests", name);
        long nr = read_long_at(sfd, path);
        snprintf(path, sizeof path, "%s/mq", name);
        int mfd = openat(sfd, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (mfd < 0)
            continue;                /* bio-based (device mapper, zram): no requests */
        int hw = dir_count_fd(mfd);
        close(mfd);
        if (nr > 0 && hw > 0)
            sum += (size_t)nr * (size_t)hw;
    }
    close(sfd);
    return sum;
}

static void lens_sizes_of(int ncpus, struct lens_sizes *z)
{
    /* The maps keyed by thread and process hold the live tasks that waited, allocated
     * as they do: their bound costs only its hash buckets (16 bytes an entry), so it is
     * the largest, room for a machine that grows. Before 6.1 they are preallocated LRU
     * maps (lens_wait_maps_lru), whose creation was most of the lens's load on a small
     * machine (docs/performance.md): sized to twice the tasks there are, within their
     * bounds, the least recently used evicted past that. A full map makes an absent
     * task's wait unknown, never 0. */
    long now = read_loadavg_tasks_at(AT_FDCWD, "/proc/loadavg");
    size_t tasks = now > 0 ? (size_t)now : 0;    /* 0: unknown, the largest sizes */
    z->wait_lru = lens_wait_maps_lru();
    z->tids = z->wait_lru ? lens_entries_for(tasks, 4096, LENS_MAX_TASKS) : LENS_MAX_TASKS;
    z->tgids = z->wait_lru ? lens_entries_for(tasks, 2048, LENS_MAX_PROCS) : LENS_MAX_PROCS;
    /* The per-CPU devprio map is preallocated: about 1.1 KB a pair on each CPU. Keep it
     * within LENS_DEVPRIO_BYTES on many CPUs; a full map counts the completions it could
     * not hold in lens_dropped. */
    size_t per = lens_percpu_size(sizeof(struct lens_dp_val), ncpus);
    size_t n = LENS_MAX_DEVPRIO;         /* a power of two: the slots are masked */
    while (n > 64 && n * per > LENS_DEVPRIO_BYTES)
        n /= 2;
    z->devprio = (__u32)n;
    /* Bytes per (process, device) at submission (the attribution that open files cannot
     * give: anonymous st_dev, memory maps, writeback), and kernel threads' bytes per
     * dirtier: per CPU too (32 and 16 bytes a pair on each CPU), within LENS_DEVPRIO_BYTES. */
    size_t sub = LENS_DEVPRIO_BYTES / lens_percpu_size(sizeof(struct lens_submit_val), ncpus);
    size_t wb = LENS_DEVPRIO_BYTES / lens_percpu_size(sizeof(struct lens_count_val), ncpus);
    z->submits = (__u32)(sub < LENS_MAX_SUBMIT ? (sub < 256 ? 256 : sub) : LENS_MAX_SUBMIT);
    __u32 by_tasks = lens_entries_for(tasks, 1024, LENS_MAX_SUBMIT);
    if (z->submits > by_tasks)
        z->submits = by_tasks;
    z->wbs = (__u32)(wb < LENS_MAX_WB ? (wb < 256 ? 256 : wb) : LENS_MAX_WB);
    z->rq_sets = lens_rq_sets_for(disk_requests());
}

static int map_of_fd(int fd, struct lens_map *m)
{
    struct bpf_map_info info;
    __u32 len = sizeof(info);
    memset(&info, 0, sizeof(info));
    if (bpf_obj_get_info_by_fd(fd, &info, &len) < 0)
        return -errno;
    *m = (struct lens_map){ .fd = fd, .type = info.type, .key_size = info.key_size,
                            .value_size = info.value_size, .max_entries = info.max_entries };
    return 0;
}

/* The maps lens_read reads, in this order, by their fds from either skeleton. */
enum { MAP_WAITS_TID, MAP_WAITS_TGID, MAP_DEVPRIO, MAP_SUBMITS, MAP_WBS, NMAPS };

static int lens_take_maps(struct lens *l, const int fd[NMAPS])
{
    struct lens_map *m[NMAPS] = { &l->waits_tid, &l->waits_tgid, &l->devprio, &l->submits, &l->wbs };
    for (int i = 0; i < NMAPS; i++) {
        int rc = map_of_fd(fd[i], m[i]);
        if (rc < 0)
            return rc;
    }
    return 0;
}

/* Every program the light loader loaded, attached (they are all BTF tracepoints, each
 * carrying its own target). Not iotriage_lskel__attach: it attaches every program,
 * also the ones left out of the load (fd 0), and fails there. */
static int attach_light(struct iotriage_lskel *s)
{
    const struct bpf_prog_desc *progs = (const struct bpf_prog_desc *)&s->progs;
    int *links = (int *)&s->links;
    enum { NPROGS = sizeof(s->progs) / sizeof(struct bpf_prog_desc) };
    _Static_assert(sizeof(s->links) == NPROGS * sizeof(int), "one link per program");
    for (size_t i = 0; i < NPROGS; i++) {
        if (progs[i].prog_fd <= 0)
            continue;
        int fd = bpf_raw_tracepoint_open(NULL, progs[i].prog_fd);
        if (fd < 0)
            return fd;
        links[i] = fd;
    }
    return 0;
}

/* The light skeleton's program and link slots of the program named name: the slot whose
 * program the kernel names so (its name, cut to BPF_OBJ_NAME_LEN - 1), not the slot of
 * that name. The light loader leaves out a program whose section starts with "?"
 * (lens_dirty_page) and puts the next programs' fds one slot early, so a slot's name is
 * not its program's there. -ENOENT when none is. */
static int light_slot(struct iotriage_lskel *s, const char *name)
{
    const struct bpf_prog_desc *progs = (const struct bpf_prog_desc *)&s->progs;
    enum { NPROGS = sizeof(s->progs) / sizeof(struct bpf_prog_desc) };
    for (size_t i = 0; i < NPROGS; i++) {
        if (progs[i].prog_fd <= 0)
            continue;
        struct bpf_prog_info info;
        __u32 len = sizeof(info);
        memset(&info, 0, sizeof(info));
        if (bpf_obj_get_info_by_fd(progs[i].prog_fd, &info, &len) < 0)
            continue;
        if (strncmp(info.name, name, sizeof(info.name) - 1) == 0)
            return (int)i;
    }
    return -ENOENT;
}

/* The light skeleton: the kernel's loader program does the CO-RE relocations and finds
 * each tracepoint's BTF id, nothing here reads the kernel's BTF. Kernels with in-kernel
 * CO-RE (5.17+) all have writeback_dirty_folio (the folio conversion of the writeback
 * tracepoints came with 5.16-5.17), so it is loaded unconditionally; a kernel without it
 * refuses the load and the normal skeleton runs. cast: the variant that reads the
 * block layer's structures through untrusted pointers (source/bpfload.h), tried first. */
static int open_light(struct lens *l, const struct lens_sizes *z, bool cast)
{
    struct iotriage_lskel *s = cast ? bpfload_lens_cast_open() : iotriage_lskel__open();
    if (!s)
        return -ENOMEM;
    s->maps.devprio.max_entries = z->devprio;
    s->rodata->devprio_mask = z->devprio - 1;
    s->maps.rqs.max_entries = z->rq_sets;
    s->rodata->rq_set_shift = 64 - (__u32)__builtin_ctz(z->rq_sets);
    s->maps.waits_tid.max_entries = z->tids;
    s->maps.waits_tgid.max_entries = z->tgids;
    s->rodata->lens_submits = true;
    s->maps.submits.max_entries = z->submits;
    s->rodata->lens_wb_split = true;
    s->maps.wbs.max_entries = z->wbs;
    int rc = cast ? bpfload_lens_cast_load(s) : iotriage_lskel__load(s);
    if (rc == 0)
        rc = attach_light(s);
    if (rc == 0) {
        const int fd[NMAPS] = { s->maps.waits_tid.map_fd, s->maps.waits_tgid.map_fd,
                                s->maps.devprio.map_fd, s->maps.submits.map_fd, s->maps.wbs.map_fd };
        rc = lens_take_maps(l, fd);
    }
    if (rc < 0) {
        iotriage_lskel__destroy(s);
        return rc;
    }
    l->lskel = s;
#define RQP_LIGHT(name) #name,
    static const char *const rq_names[RQP_N] = { LENS_RQ_PROGS(RQP_LIGHT) };
#undef RQP_LIGHT
    for (size_t i = 0; i < RQP_N; i++) {
        int k = light_slot(s, rq_names[i]);
        /* (not found: left attached for good, the duty cycle does not run, duty_start) */
        if (k >= 0)
            l->rqp[i] = (struct lens_rqprog){
                .prog_fd = ((const struct bpf_prog_desc *)&s->progs)[k].prog_fd,
                .link_fd = &((int *)&s->links)[k] };
    }
    l->rqs_fd = s->maps.rqs.map_fd;
    l->devs_rw = s->bss->lens_devs;
    l->marks = s->bss->lens_marks;
    l->t0 = &s->bss->lens_t0;
    l->wait_from = &s->bss->lens_wait_from;
    l->wait_shut = &s->bss->lens_wait_shut;
    l->issue_seen = &s->bss->lens_issue_seen;
    l->dp_used = s->bss->lens_dp_used;
    l->devs = s->bss->lens_devs;
    l->dropped = &s->bss->lens_dropped;
    l->dirty_on = s->progs.lens_dirty_folio.prog_fd > 0;
    l->loader = BPFLOAD_NAME_LIGHT;
    return 0;
}

/* libbpf's normal skeleton: libbpf parses the kernel's BTF here (older kernels). */
static int open_libbpf(struct lens *l, const struct lens_sizes *z, char *err, size_t errlen)
{
    libbpf_print_fn_t old = bpfload_begin();
    const char *step = "open";
    int rc;
    struct iotriage_bpf *skel = iotriage_bpf__open();
    l->skel = skel;
    if (!skel) {
        rc = errno ? -errno : -ENOMEM;
    } else {
        bpf_map__set_max_entries(skel->maps.devprio, z->devprio);
        skel->rodata->devprio_mask = z->devprio - 1;
        bpf_map__set_max_entries(skel->maps.rqs, z->rq_sets);
        skel->rodata->rq_set_shift = 64 - (__u32)__builtin_ctz(z->rq_sets);
        bpf_map__set_max_entries(skel->maps.waits_tid, z->tids);
        bpf_map__set_max_entries(skel->maps.waits_tgid, z->tgids);
        if (z->wait_lru) {
            struct bpf_map *w[] = { skel->maps.waits_tid, skel->maps.waits_tgid };
            for (size_t i = 0; i < 2; i++) {
                bpf_map__set_type(w[i], BPF_MAP_TYPE_LRU_HASH);
                bpf_map__set_map_flags(w[i], 0);
            }
        }
        /* One LRU hash lookup per bio, per CPU (docs/performance.md). */
        skel->rodata->lens_submits = true;
        bpf_map__set_max_entries(skel->maps.submits, z->submits);
        /* Who dirtied the pages the flusher writes: the tracepoint of the running kernel
         * (writeback_dirty_folio since 5.17, writeback_dirty_page before); without either,
         * the writeback's split is unknown and the rest of the lens runs. */
        bool folio = libbpf_find_vmlinux_btf_id("writeback_dirty_folio", BPF_TRACE_RAW_TP) > 0;
        bool page = !folio && libbpf_find_vmlinux_btf_id("writeback_dirty_page", BPF_TRACE_RAW_TP) > 0;
        bpf_program__set_autoload(skel->progs.lens_dirty_folio, folio);
        bpf_program__set_autoload(skel->progs.lens_dirty_page, page);
        l->dirty_on = folio || page;
        skel->rodata->lens_wb_split = l->dirty_on;
        bpf_map__set_max_entries(skel->maps.wbs, z->wbs);
        step = "load";
        rc = iotriage_bpf__load(skel);
        if (rc == 0) {
            step = "attach";
            rc = iotriage_bpf__attach(skel);
        }
        if (rc == 0) {
            step = "map info";
            const int fd[NMAPS] = { bpf_map__fd(skel->maps.waits_tid), bpf_map__fd(skel->maps.waits_tgid),
                                    bpf_map__fd(skel->maps.devprio), bpf_map__fd(skel->maps.submits),
                                    bpf_map__fd(skel->maps.wbs) };
            rc = lens_take_maps(l, fd);
        }
        if (rc == 0) {
#define RQP_LIBBPF(name) l->rqp[i++] = (struct lens_rqprog){ .prog = skel->progs.name, \
                                                           .link = &skel->links.name };
            size_t i = 0;
            LENS_RQ_PROGS(RQP_LIBBPF)
#undef RQP_LIBBPF
            l->rqs_fd = bpf_map__fd(skel->maps.rqs);
            l->devs_rw = skel->bss->lens_devs;
            l->marks = skel->bss->lens_marks;
            l->t0 = &skel->bss->lens_t0;
            l->wait_from = &skel->bss->lens_wait_from;
            l->wait_shut = &skel->bss->lens_wait_shut;
            l->issue_seen = &skel->bss->lens_issue_seen;
            l->dp_used = skel->bss->lens_dp_used;
            l->devs = skel->bss->lens_devs;
            l->dropped = &skel->bss->lens_dropped;
        }
    }
    bpfload_end(old);
    if (rc != 0) {
        if (rc > 0)
            rc = -rc;
        snprintf(err, errlen, "BPF %s failed: %s%s%s", step, strerror(-rc),
                 bpfload_last()[0] ? ": " : "", bpfload_last());
        return rc;
    }
    l->loader = BPFLOAD_NAME_LIBBPF;
    return 0;
}

int lens_open(struct lens **out, char *err, size_t errlen)
{
    *out = NULL;
    int rc = bpfload_check(err, errlen);
    if (rc < 0)
        return rc;
    struct lens *l = calloc(1, sizeof *l);
    if (!l) {
        snprintf(err, errlen, "out of memory");
        return -ENOMEM;
    }
    pthread_mutex_init(&l->mu, NULL);
    pthread_mutex_init(&l->rd, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&l->cv, &ca);
    pthread_condattr_destroy(&ca);
    l->ncpus = libbpf_num_possible_cpus();
    if (l->ncpus <= 0) {
        rc = l->ncpus < 0 ? l->ncpus : -EINVAL;
        snprintf(err, errlen, "BPF open failed: possible CPUs: %s", strerror(-rc));
        lens_close(l);
        return rc;
    }
    struct lens_sizes z;
    lens_sizes_of(l->ncpus, &z);
    l->rq_sets = z.rq_sets;
    enum bpfload_loader how = bpfload_choice();
    rc = -ENOEXEC;
    if (how != BPFLOAD_LIBBPF && z.wait_lru) {
        if (how == BPFLOAD_LIGHT)
            snprintf(err, errlen, "BPF light load failed: kernel before 6.1");
    } else if (how != BPFLOAD_LIBBPF) {
        rc = open_light(l, &z, true);
        if (rc < 0)
            rc = open_light(l, &z, false);
        if (rc < 0 && how == BPFLOAD_LIGHT)
            snprintf(err, errlen, "BPF light load failed: %s", strerror(-rc));
    }
    if (rc < 0 && how != BPFLOAD_LIGHT)
        rc = open_libbpf(l, &z, err, errlen);
    if (rc < 0) {
        lens_close(l);
        return rc;
    }
    l->since = mono_now();
    duty_start(l);
    *out = l;
    return 0;
}

const char *lens_loader(const struct lens *l)
{
    return l->loader;
}

void lens_close(struct lens *l)
{
    if (!l)
        return;
    if (l->duty_started) {
        pthread_mutex_lock(&l->mu);
        l->stop = true;
        pthread_cond_signal(&l->cv);
        pthread_mutex_unlock(&l->mu);
        pthread_join(l->duty_thread, NULL);
    }
    pthread_cond_destroy(&l->cv);
    pthread_mutex_destroy(&l->mu);
    pthread_mutex_destroy(&l->rd);
    free(l->rqs_zero);
    free(l->rqs_keys);
    iotriage_lskel__destroy(l->lskel);
    iotriage_bpf__destroy(l->skel);
    free(l->keys);
    free(l->vals);
    free(l->moments);
    free(l);
}

void lens_reading_free(struct lens_reading *r)
{
    free(r->tids);
    free(r->tgids);
    free(r->dp);
    free(r->devs);
    free(r->subs);
    free(r->wbs);
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
    dst->wbs = dup_array(src->wbs, src->nwbs, sizeof *src->wbs, &fail);
    if (fail) {
        lens_reading_free(dst);
        return -ENOMEM;
    }
    return 0;
}

#define DUMP_SLACK 64

/* Room in l->keys/l->vals for at least `want` entries of ksz/vsz bytes (doubling, from
 * 256 entries, within max): the buffers follow the most entries a map has held, not the
 * most it could hold. Returns the entries there is room for, or 0 when out of memory. */
static size_t dump_room(struct lens *l, size_t want, size_t max, size_t ksz, size_t vsz)
{
    size_t room = l->keys_sz / ksz < l->vals_sz / vsz ? l->keys_sz / ksz : l->vals_sz / vsz;
    if (room >= want)
        return room;
    size_t n = room > 256 ? room : 256;
    while (n < want)
        n *= 2;
    if (n > max)
        n = max;
    if (l->keys_sz < ksz * n) {
        void *p = realloc(l->keys, ksz * n);
        if (!p)
            return 0;
        l->keys = p;
        l->keys_sz = ksz * n;
    }
    if (l->vals_sz < vsz * n) {
        void *p = realloc(l->vals, vsz * n);
        if (!p)
            return 0;
        l->vals = p;
        l->vals_sz = vsz * n;
    }
    return n;
}

/* Every entry of a map into l->keys/l->vals; returns the count or -errno. Batch calls
 * when the kernel has them (5.6+), else key by key. */
long dump_map(struct lens *l, const struct lens_map *map)
{
    int fd = map->fd;
    size_t ksz = map->key_size, vsz = map->value_size;
    if (map->type == BPF_MAP_TYPE_PERCPU_HASH || map->type == BPF_MAP_TYPE_LRU_PERCPU_HASH)
        vsz = lens_percpu_size(vsz, l->ncpus);
    /* A hash map without preallocation checks its count, then raises it, without a
     * lock: racing updates may leave it a few entries over max_entries for a while. */
    size_t max = (size_t)map->max_entries + DUMP_SLACK;
    size_t room = dump_room(l, 1, max, ksz, vsz);
    if (!room)
        return -ENOMEM;
    size_t got = 0;
    uint64_t in_tok = 0, out_tok = 0;
    bool first = true;
    for (;;) {
        if (got == room) {
            if (room >= max)
                break;
            room = dump_room(l, room + 1, max, ksz, vsz);
            if (!room)
                return -ENOMEM;
        }
        __u32 count = (__u32)(room - got);
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
        if (e == ENOSPC && count == 0 && room < max) {
            /* a hash bucket holds more entries than the room left: more room, again */
            room = dump_room(l, room + 1, max, ksz, vsz);
            if (!room)
                return -ENOMEM;
            continue;
        }
        if (first && got == 0 && (e == EINVAL || e == ENOTSUP || e == EOPNOTSUPP))
            break;                   /* no batch ops: key by key below */
        return -e;
    }
    if (got > 0)
        return (long)got;
    /* Key by key (kernels before 5.6). */
    char prev[64], key[64];         /* the largest key: struct lens_wb_key, 40 bytes */
    if (ksz > sizeof key)
        return -EINVAL;
    void *pk = NULL;
    while (got < max && bpf_map_get_next_key(fd, pk, key) == 0) {
        if (got == room && !(room = dump_room(l, room + 1, max, ksz, vsz)))
            return -ENOMEM;
        if (bpf_map_lookup_elem(fd, key, (char *)l->vals + got * vsz) == 0) {
            memcpy((char *)l->keys + got * ksz, key, ksz);
            got++;
        }
        memcpy(prev, key, ksz);
        pk = prev;
    }
    return (long)got;
}

/* The sum of a per-CPU (bytes, bios) value's copies (each 8-byte aligned, 16 bytes). */
void percpu_counts(const struct lens *l, long i, uint64_t *bytes, uint64_t *bios)
{
    size_t vsz = lens_percpu_size(sizeof(struct lens_count_val), l->ncpus);
    for (int c = 0; c < l->ncpus; c++) {
        const struct lens_count_val *v =
            (const void *)((const char *)l->vals + (size_t)i * vsz + (size_t)c * sizeof(struct lens_count_val));
        *bytes += v->bytes;
        *bios += v->bios;
    }
}

/* The same for a submits row (struct lens_submit_val: 32 bytes a copy). */
static void percpu_submit(const struct lens *l, long i, struct lens_submit_row *r)
{
    size_t vsz = lens_percpu_size(sizeof(struct lens_submit_val), l->ncpus);
    for (int c = 0; c < l->ncpus; c++) {
        const struct lens_submit_val *v =
            (const void *)((const char *)l->vals + (size_t)i * vsz + (size_t)c * sizeof(struct lens_submit_val));
        r->bytes += v->bytes;
        r->bios += v->bios;
        r->wait_ns += v->wait_ns;
        r->rqs += v->rqs;
    }
}

double lens_since(const struct lens *l)
{
    return l->since;
}

static int lens_read_locked(struct lens *l, struct lens_reading *out);

int lens_read(struct lens *l, struct lens_reading *out)
{
    pthread_mutex_lock(&l->rd);
    int rc = lens_read_locked(l, out);
    pthread_mutex_unlock(&l->rd);
    return rc;
}

/* (l->rd held: the duty cycle neither uses the scratch nor ends open waits meanwhile.) */
static int lens_read_locked(struct lens *l, struct lens_reading *out)
{
    memset(out, 0, sizeof *out);
    out->since = l->since;
    pthread_mutex_lock(&l->mu);
    uint64_t now = mono_ns();
    uint64_t det = l->detached_ns + (l->detached_from && now > l->detached_from ? now - l->detached_from : 0);
    out->cycling = l->cycling;
    pthread_mutex_unlock(&l->mu);
    out->mono = (double)now / 1e9;
    out->detached_s = (double)det / 1e9;
    l->nmoments = 0;
    struct open_wait *opens = NULL;
    size_t nopen = 0;
    int rc = read_waits(l, &l->waits_tid, now, &out->tids, &out->ntids, &out->tids_full,
                        &opens, &nopen);
    if (rc == 0)
        rc = read_waits(l, &l->waits_tgid, now, &out->tgids, &out->ntgids,
                        &out->tgids_full, NULL, NULL);
    if (rc == 0)
        rc = add_open_waits(out, opens, nopen);
    free(opens);
    if (rc == 0)
        rc = read_devprio(l, out);
    if (rc == 0)
        rc = read_devs(l, out);
    if (rc == 0) {
        long got = dump_map(l, &l->submits);
        if (got < 0)
            rc = (int)got;
        else if (got > 0 && !(out->subs = calloc((size_t)got, sizeof *out->subs)))
            rc = -ENOMEM;
        else {
            const struct lens_submit_key *k = l->keys;
            for (long i = 0; i < got; i++) {
                out->subs[i].tgid = (pid_t)k[i].tgid;
                out->subs[i].major = k[i].dev >> 20;
                out->subs[i].minor = k[i].dev & 0xfffff;
                out->subs[i].prio = k[i].prio;
                percpu_submit(l, i, &out->subs[i]);
            }
            out->nsubs = (size_t)got;
            if (out->nsubs > 1)
                qsort(out->subs, out->nsubs, sizeof *out->subs, lens_submit_cmp);
        }
    }
    if (rc == 0)
        rc = read_wbs(l, out);
    out->dirty_on = l->dirty_on;
    if (rc == 0)
        out->dropped = *l->dropped;
    if (rc != 0)
        lens_reading_free(out);
    return rc;
}
