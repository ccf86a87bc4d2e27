/* SPDX-License-Identifier: GPL-2.0-or-later */
/* lens.c: load, attach and read the BPF lens (source/lens.h). The pure arithmetic on
 * readings is in lens_calc.c. */
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

/* The request cache is cleared (duty_reset) this many sets a call: 32 KB of zeros kept,
 * not the whole cache's megabyte. */
#define LENS_RQ_CLEAR 256
_Static_assert(LENS_RQ_SETS_MIN % LENS_RQ_CLEAR == 0, "the cache clears in whole blocks");

/* The most each per-CPU map (devprio, submits) may take, all CPUs together (lens_open). */
#define LENS_DEVPRIO_BYTES (8u << 20)

struct lens_moments {
    __u32 dev;
    __u64 n, sd, sdd, sy, sdy, timed;
};

/* A map as this file reads it, whichever loader made it: the kernel's own figures for
 * the map behind fd (BPF_OBJ_GET_INFO_BY_FD), so that reading never depends on libbpf's
 * struct bpf_map. */
struct lens_map {
    int   fd;
    __u32 type, key_size, value_size, max_entries;
};

/* The mapped .bss of either skeleton: the same variables, the same layout. */
_Static_assert(sizeof(((struct iotriage_lskel__bss *)0)->lens_devs) ==
               sizeof(((struct iotriage_bpf__bss *)0)->lens_devs) &&
               sizeof(((struct iotriage_lskel__bss *)0)->lens_dp_used) ==
               sizeof(((struct iotriage_bpf__bss *)0)->lens_dp_used) &&
               sizeof(((struct iotriage_lskel__bss *)0)->lens_marks) ==
               sizeof(((struct iotriage_bpf__bss *)0)->lens_marks),
               "the two skeletons' .bss");

/* The per-request programs that run for every request, which the duty cycle attaches
 * and detaches (lens.h): the completion first in this table, attached first and detached
 * last. Each attachment or detachment costs 1-4 ms here (the tracepoint's static key is
 * patched on every CPU), so the programs of rarer events stay attached: the merges and
 * the requeue act only on entries of the request cache and on requests counted in flight,
 * which there are none of between windows (duty_reset). */
#define LENS_RQ_PROGS(X) X(lens_rq_complete) X(lens_rq_issue) X(lens_rq_insert) X(lens_getrq) \
    X(lens_bio_queue)
enum { RQP_COMPLETE, RQP_ISSUE, RQP_SUBMIT_FIRST = RQP_ISSUE, RQP_N = 5 };

/* One of them, whichever skeleton loaded it: the light one's program fd and the slot of
 * its link fd (the skeleton's own, closed by its destroy), or libbpf's program and link. */
struct lens_rqprog {
    int prog_fd;
    int *link_fd;
    struct bpf_program *prog;
    struct bpf_link **link;
};

struct lens {
    struct iotriage_lskel *lskel;    /* the light skeleton's, or NULL */
    struct iotriage_bpf *skel;       /* the normal skeleton's, or NULL */
    const char *loader;              /* BPFLOAD_NAME_* of the one that loaded */
    struct lens_map waits_tid, waits_tgid, devprio, submits, wbs;
    const __u64 *dp_used;            /* .bss lens_dp_used[LENS_MAX_DEVPRIO / 64] */
    const struct lens_dev_val *devs; /* .bss lens_devs[LENS_MAX_DEVS] */
    const __u64 *dropped;            /* .bss lens_dropped */
    double since;
    bool dirty_on;               /* a page-dirtying tracepoint is attached */
    int ncpus;                   /* possible CPUs: the copies of a per-CPU map's value */
    /* Scratch for batch lookups, grown with the most entries a map held (dump_room). */
    void  *keys, *vals;
    size_t keys_sz, vals_sz;
    /* The depth moments of each (device, priority) pair of the last read, for summing
     * per device. */
    struct lens_moments *moments;
    size_t nmoments;
    /* The duty cycle (lens.h): its thread, and what it shares with the reader under mu. */
    struct lens_rqprog rqp[RQP_N];
    struct lens_dev_val *devs_rw;    /* the same table, written while detached */
    __u64 *marks, *t0;
    __u32 *issue_seen;
    int rqs_fd;
    __u32 rq_sets;                   /* the request cache's sets (lens_rq_sets_for) */
    void *rqs_zero;                  /* zeros for LENS_RQ_CLEAR sets of the request cache, */
    __u32 *rqs_keys;                 /* and their keys, for clearing it a block a call */
    pthread_t duty_thread;
    bool duty_started;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool stop;                       /* under mu: lens_close asks the thread to end */
    bool cycling;                    /* under mu */
    uint64_t detached_ns;            /* under mu: the request programs' detached time, */
    uint64_t detached_from;          /* and when the current detachment began (0: attached) */
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

/* A per-CPU map's value as user space reads it: one copy per possible CPU, each rounded
 * up to 8 bytes. */
static size_t lens_percpu_size(size_t vsz, int ncpus)
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
     * dirtier: per CPU too (16 bytes a pair on each CPU), within LENS_DEVPRIO_BYTES. */
    size_t sub = LENS_DEVPRIO_BYTES / lens_percpu_size(sizeof(struct lens_submit_val), ncpus);
    z->submits = (__u32)(sub < LENS_MAX_SUBMIT ? (sub < 256 ? 256 : sub) : LENS_MAX_SUBMIT);
    __u32 by_tasks = lens_entries_for(tasks, 1024, LENS_MAX_SUBMIT);
    if (z->submits > by_tasks)
        z->submits = by_tasks;
    z->wbs = (__u32)(sub < LENS_MAX_WB ? (sub < 256 ? 256 : sub) : LENS_MAX_WB);
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

/* ---- The duty cycle (lens.h) ---- */


/* Attach one request program (again); 0 or -errno. */
static int rqp_attach(struct lens_rqprog *p)
{
    if (p->link_fd) {
        if (*p->link_fd > 0 || p->prog_fd <= 0)
            return 0;
        int fd = bpf_raw_tracepoint_open(NULL, p->prog_fd);
        if (fd < 0)
            return fd;
        *p->link_fd = fd;
        return 0;
    }
    if (*p->link || !p->prog)
        return 0;
    struct bpf_link *k = bpf_program__attach(p->prog);
    if (!k)
        return -errno;
    *p->link = k;
    return 0;
}

/* Closing the link's last fd takes the program off its tracepoint. */
static void rqp_detach(struct lens_rqprog *p)
{
    if (p->link_fd) {
        if (*p->link_fd > 0)
            close(*p->link_fd);
        *p->link_fd = 0;
        return;
    }
    bpf_link__destroy(*p->link);
    *p->link = NULL;
}

/* Requests issued on every device, as the issue program counts them. */
static uint64_t rq_issued_sum(const struct lens *l)
{
    uint64_t n = 0;
    for (size_t i = 0; i < LENS_MAX_DEVS; i++)
        if (__atomic_load_n(&l->devs[i].key, __ATOMIC_RELAXED))
            n += __atomic_load_n(&l->devs[i].issued, __ATOMIC_RELAXED);
    return n;
}

static bool marks_clear(const struct lens *l)
{
    enum { N = sizeof(((struct iotriage_bpf__bss *)0)->lens_marks) / sizeof(__u64) };
    for (size_t i = 0; i < N; i++)
        if (__atomic_load_n(&l->marks[i], __ATOMIC_RELAXED))
            return false;
    return true;
}

/* With every request program detached: what a window left is cleared, so that nothing of
 * it reaches the next one. The requests counted in flight and still there (a completion
 * after the drain's end) leave the count; the scheduler's counts are evened (the lens saw
 * only the window's inserts); the marks and the request cache are emptied (an entry left
 * would time a later request of the same address from this window's stamps); and the
 * programs' start (lens_t0) is taken again, so that a request counts in flight only when
 * the next window saw it allocated after both its issue and its completion programs ran
 * (iotriage.bpf.c: lens_t0). The device's rate and first completion start again too. */
static void duty_reset(struct lens *l)
{
    for (size_t i = 0; i < LENS_MAX_DEVS; i++) {
        struct lens_dev_val *d = &l->devs_rw[i];
        if (!d->key)
            continue;
        d->lost = d->done - d->issued;       /* in flight: issued - done + lost = 0 */
        memcpy(d->sched_out, d->sched_in, sizeof d->sched_out);
        d->first_done_ns = 0;
        d->rate_ns = 0;
    }
    memset(l->marks, 0, sizeof(((struct iotriage_bpf__bss *)0)->lens_marks));
    *l->issue_seen = 0;
    *l->t0 = 0;
    for (__u32 at = 0; at < l->rq_sets; at += LENS_RQ_CLEAR) {
        for (__u32 k = 0; k < LENS_RQ_CLEAR; k++)
            l->rqs_keys[k] = at + k;
        __u32 n = LENS_RQ_CLEAR;
        if (bpf_map_update_batch(l->rqs_fd, l->rqs_keys, l->rqs_zero, &n, NULL) < 0) {
            for (__u32 k = at; k < at + LENS_RQ_CLEAR; k++) /* kernels without batch ops */
                bpf_map_update_elem(l->rqs_fd, &k, l->rqs_zero, BPF_ANY);
        }
    }
}

/* The detached time's bookkeeping, at the midpoint of the issue program's attach or
 * detach call (the count of requests the window stands for is that program's). */
static void duty_mark(struct lens *l, uint64_t t, bool attached)
{
    pthread_mutex_lock(&l->mu);
    if (attached && l->detached_from) {
        if (t > l->detached_from)
            l->detached_ns += t - l->detached_from;
        l->detached_from = 0;
    } else if (!attached && !l->detached_from) {
        l->detached_from = t;
    }
    pthread_mutex_unlock(&l->mu);
}

/* A window opens: the completion side first, then the issue, then the rest of the
 * submission side. Returns when the issue program was attached (a midpoint). */
static uint64_t duty_open(struct lens *l)
{
    uint64_t at = 0;
    for (int i = 0; i < RQP_N; i++) {
        uint64_t a = mono_ns();
        int rc = rqp_attach(&l->rqp[i]);
        if (i == RQP_ISSUE && rc == 0) {
            at = a + (mono_ns() - a) / 2;
            duty_mark(l, at, true);
        }
    }
    return at ? at : mono_ns();
}

/* A window closes: the submission side, the issue last; then the completions of the
 * requests counted in flight are followed (they are marked, iotriage.bpf.c: lens_marks)
 * for up to LENS_DUTY_DRAIN_NS; then the completion side goes and what is left is
 * cleared. Returns when the issue program was detached. */
static uint64_t duty_close(struct lens *l, uint64_t opened)
{
    uint64_t at = 0;
    for (int i = RQP_N - 1; i >= RQP_SUBMIT_FIRST; i--) {
        uint64_t a = mono_ns();
        rqp_detach(&l->rqp[i]);
        if (i == RQP_ISSUE) {
            at = a + (mono_ns() - a) / 2;
            duty_mark(l, at, false);
        }
    }
    /* The window's requests are those allocated from lens_t0 on (bpf_ktime_get_ns:
     * CLOCK_MONOTONIC), the first completion after its first issue, which a loaded
     * machine can delay by milliseconds: the time before it counts as not watched. */
    uint64_t t0 = __atomic_load_n(l->t0, __ATOMIC_RELAXED);
    if (opened && t0 > opened && t0 < at) {
        pthread_mutex_lock(&l->mu);
        l->detached_ns += t0 - opened;
        pthread_mutex_unlock(&l->mu);
    }
    while (!marks_clear(l) && mono_ns() - at < LENS_DUTY_DRAIN_NS)
        nanosleep(&(struct timespec){ .tv_nsec = 1000000 }, NULL);
    for (int i = RQP_SUBMIT_FIRST - 1; i >= 0; i--)
        rqp_detach(&l->rqp[i]);
    /* A program run that began before its detachment may still be finishing on another
     * CPU (the kernel frees the tracepoint's probe list after a grace period, it does not
     * wait for it): a run takes microseconds. */
    nanosleep(&(struct timespec){ .tv_nsec = 1000000 }, NULL);
    duty_reset(l);
    return at;
}

/* Sleep until CLOCK_MONOTONIC ns `until`; true when lens_close asks the thread to end. */
static bool duty_sleep(struct lens *l, uint64_t until)
{
    struct timespec ts = { .tv_sec = (time_t)(until / 1000000000ull),
                           .tv_nsec = (long)(until % 1000000000ull) };
    pthread_mutex_lock(&l->mu);
    while (!l->stop && mono_ns() < until)
        pthread_cond_timedwait(&l->cv, &l->mu, &ts);
    bool stop = l->stop;
    pthread_mutex_unlock(&l->mu);
    return stop;
}

static void duty_set_cycling(struct lens *l, bool on)
{
    pthread_mutex_lock(&l->mu);
    l->cycling = on;
    pthread_mutex_unlock(&l->mu);
}

/* The thread: every probe, the machine's request rate; above LENS_TIMED_RATE twice in a
 * row, a window each period from then on, until the windows' rate falls under
 * LENS_DUTY_LOW twice in a row (lens_duty_step decides). The phases run from the lens's
 * start, on their own clock: nothing the user does (the refresh interval, a pause)
 * moves them. */
static void *duty_main(void *arg)
{
    struct lens *l = arg;
    struct lens_duty_ctl c = { 0 };
    uint64_t t = mono_ns(), last_t = t, last_n = rq_issued_sum(l);
    for (;;) {
        t += lens_duty_phase_ns(&c);
        if (duty_sleep(l, t))
            break;
        if (!c.cycling) {
            uint64_t now = mono_ns(), n = rq_issued_sum(l);
            bool start = lens_duty_step(&c, now > last_t ? now - last_t : 0, n - last_n);
            last_t = now;
            last_n = n;
            if (start) {
                duty_set_cycling(l, true);
                duty_close(l, 0);
            }
            continue;
        }
        uint64_t n0 = rq_issued_sum(l);
        uint64_t a = duty_open(l);
        if (duty_sleep(l, a + LENS_DUTY_WINDOW_NS))
            break;
        uint64_t n1 = rq_issued_sum(l);
        uint64_t z = duty_close(l, a);
        if (lens_duty_step(&c, z > a ? z - a : 0, n1 - n0)) {
            duty_open(l);
            duty_set_cycling(l, false);
            last_t = mono_ns();
            last_n = rq_issued_sum(l);
        }
    }
    return NULL;
}

/* The thread, unless IOTRIAGE_LENS_DUTY=1 keeps every program attached (an A/B of the
 * duty cycle's cost, bench/lens.sh). Without it (no memory, no thread) the lens runs
 * attached, as it did before the duty cycle. */
static void duty_start(struct lens *l)
{
    const char *e = getenv("IOTRIAGE_LENS_DUTY");
    if (e && strcmp(e, "1") == 0)
        return;
    for (int i = 0; i < RQP_N; i++)
        if (!l->rqp[i].link_fd && !l->rqp[i].prog)
            return;                  /* a program not found: it could not be detached */
    l->rqs_zero = calloc(LENS_RQ_CLEAR, sizeof(struct lens_rq_set));
    l->rqs_keys = malloc(LENS_RQ_CLEAR * sizeof(*l->rqs_keys));
    if (!l->rqs_zero || !l->rqs_keys)
        return;
    l->duty_started = pthread_create(&l->duty_thread, NULL, duty_main, l) == 0;
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
static long dump_map(struct lens *l, const struct lens_map *map)
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
static int read_waits(struct lens *l, const struct lens_map *map, uint64_t now,
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
static int add_open_waits(struct lens_reading *out, const struct open_wait *o, size_t no)
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

/* The (device, priority) pairs: every slot marked used in lens_dp_used is looked up (a
 * few, where the whole per-CPU array would be ncpus x 1.1 KB a slot), and each CPU's copy
 * is added to its key's row (a key may sit in different slots on different CPUs). */
static int read_devprio(struct lens *l, struct lens_reading *out)
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
static int read_devs(struct lens *l, struct lens_reading *out)
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

/* The sum of a per-CPU (bytes, bios) value's copies (each 8-byte aligned, 16 bytes). */
static void percpu_counts(const struct lens *l, long i, uint64_t *bytes, uint64_t *bios)
{
    size_t vsz = lens_percpu_size(sizeof(struct lens_submit_val), l->ncpus);
    for (int c = 0; c < l->ncpus; c++) {
        const struct lens_submit_val *v =
            (const void *)((const char *)l->vals + (size_t)i * vsz + (size_t)c * sizeof(struct lens_submit_val));
        *bytes += v->bytes;
        *bios += v->bios;
    }
}

/* Kernel threads' bytes by dirtier (lens_maps.h: struct lens_wb_key). */
static int read_wbs(struct lens *l, struct lens_reading *out)
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

double lens_since(const struct lens *l)
{
    return l->since;
}

int lens_read(struct lens *l, struct lens_reading *out)
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
                percpu_counts(l, i, &out->subs[i].bytes, &out->subs[i].bios);
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
