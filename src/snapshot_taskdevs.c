/* SPDX-License-Identifier: GPL-2.0-or-later */
/* snapshot_taskdevs.c: each process's devices in a snapshot: from its open files (fdmap),
 * rescanned when its I/O signature changed, and from the lens's submitted bytes. */
#include "snapshot.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "source/blkstack.h"
#include "source/cgroups.h"
#include "source/fdmap.h"
#include "source/ioprio.h"
#include "source/taskiter.h"
#include "source/threadstate.h"
#include "source/taskstats.h"
#include "util.h"
#include "snapshot_parts.h"

/* Index of the device major:minor in the snapshot, or -1. */
int dev_index(const struct snapshot *snap, dev_t dev)
{
    for (size_t i = 0; i < snap->ndevs; i++)
        if (snap->devs[i].ds.major == major(dev) && snap->devs[i].ds.minor == minor(dev))
            return (int)i;
    return -1;
}

/* The start time of thread t's process: its leader's entry, when listed. */
static unsigned long long process_start(const struct snapshot *out, const struct task_sample *t)
{
    if (!out->threads || t->id == t->tgid)
        return t->start_ticks;
    size_t lo = LOWER_BOUND_ID(out->tasks, out->ntasks, id, t->tgid);
    return lo < out->ntasks && out->tasks[lo].id == t->tgid ? out->tasks[lo].start_ticks : t->start_ticks;
}

static uint64_t mix64(uint64_t x)
{
    x ^= x >> 30;                    /* splitmix64's finalizer */
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

/* A value that changes whenever one of the task's I/O counters does. */
static uint64_t io_sig(const struct task_sample *t)
{
    const struct task_io *io = &t->io;      /* other_sig: rchar, wchar, syscr, syscw */
    const uint64_t v[] = { io->other_sig, io->read_bytes, io->write_bytes,
                           io->cancelled_write_bytes };
    uint64_t h = mix64((uint64_t)(uint32_t)t->id);
    for (size_t i = 0; i < ARRAY_SIZE(v); i++)
        h = mix64(h ^ v[i]);
    return h;
}

/* Threads: the signature of each thread's process, the sum of its threads' (any thread's
 * counter moving, or a thread coming or going, changes it); sig_known false when one of
 * them could not be read. An open-addressing table on tgid. */
struct group_sig {
    pid_t tgid;
    pid_t live_tid;                  /* its leader's row's task_sample.live_tid */
    bool known;
    uint64_t sig;
};

static void group_sigs(const struct snapshot *out, struct group_sig **tab, size_t *nslots)
{
    size_t n = 64;
    while (n < 2 * out->ntasks)
        n *= 2;
    struct group_sig *g = xcalloc(n, sizeof(*g));
    for (size_t i = 0; i < out->ntasks; i++) {
        const struct task_sample *t = &out->tasks[i];
        size_t h = (size_t)mix64((uint64_t)(uint32_t)t->tgid) & (n - 1);
        while (g[h].tgid && g[h].tgid != t->tgid)
            h = (h + 1) & (n - 1);
        if (!g[h].tgid) {
            g[h].tgid = t->tgid;
            g[h].known = true;
        }
        if (t->io_err)
            g[h].known = false;
        else
            g[h].sig += io_sig(t);
        if (t->live_tid)
            g[h].live_tid = t->live_tid;
    }
    *tab = g;
    *nslots = n;
}

static const struct group_sig *group_find(const struct group_sig *g, size_t n, pid_t tgid)
{
    size_t h = (size_t)mix64((uint64_t)(uint32_t)tgid) & (n - 1);
    while (g[h].tgid && g[h].tgid != tgid)
        h = (h + 1) & (n - 1);
    return &g[h];
}

/* The first snapshot leaves out the scans of the processes that never moved a byte to or
 * from a disk (read, write and cancelled bytes all 0 in their io file: most idle ones):
 * the scans are about a quarter of that snapshot (docs/performance.md), which the first
 * screen waits for, and such a process has no rate or verdict yet for its devices to
 * matter to. Their set is pending: not known and no error, so unknown in every output
 * ("..": on the first screen); the next snapshot scans them (fdmap has no answer for
 * them yet). In threads mode a thread's counters say nothing of its siblings': no
 * scan is left out there. */
static bool scan_deferred(const struct sampler *s, const struct snapshot *out,
                          const struct task_sample *t)
{
    return s->opts.defer_idle_scans && s->takes == 0 && !out->threads && task_disk_idle(t);
}


const char *task_devs_source(const struct task_devs *td)
{
    if (!td || !td->known || td->err || td->n == 0)
        return NULL;
    uint16_t all = (uint16_t)((1u << td->n) - 1);
    if ((td->from_lens & all) == 0)
        return "files";
    if ((td->from_files & all) == 0)
        return "lens";
    return "both";
}

double task_lens_bps(const struct snapshot *s, const struct task_devs *td, unsigned k)
{
    if (!td->lens_row || td->lens_row > s->nlens_bps || k >= TASK_DEVS_MAX)
        return 0;
    return s->lens_bps[td->lens_row - 1][k];
}

double *task_lens_row(struct snapshot *s, struct task_devs *td)
{
    if (!td->lens_row) {
        /* Grown by doubling: few tasks submit in an interval. */
        if ((s->nlens_bps & (s->nlens_bps - 1)) == 0) {
            size_t room = s->nlens_bps ? 2 * s->nlens_bps : 8;
            s->lens_bps = xreallocarray(s->lens_bps, room, sizeof(*s->lens_bps));
            s->lens_async = xreallocarray(s->lens_async, room, sizeof(*s->lens_async));
        }
        memset(s->lens_bps[s->nlens_bps], 0, sizeof(s->lens_bps[0]));
        for (unsigned k = 0; k < TASK_DEVS_MAX; k++)
            s->lens_async[s->nlens_bps][k] = (struct task_async){ 0, (double)NAN };
        td->lens_row = (uint32_t)++s->nlens_bps;
    }
    return s->lens_bps[td->lens_row - 1];
}

struct task_async *task_lens_async(struct snapshot *s, struct task_devs *td, unsigned k)
{
    task_lens_row(s, td);
    return &s->lens_async[td->lens_row - 1][k < TASK_DEVS_MAX ? k : 0];
}

const struct task_async *task_lens_async_of(const struct snapshot *s, const struct task_devs *td,
                                            unsigned k)
{
    if (!td->lens_row || td->lens_row > s->nlens_bps || k >= TASK_DEVS_MAX || !s->lens_async)
        return NULL;
    return &s->lens_async[td->lens_row - 1][k];
}

void task_lens_prio_add_at(struct snapshot *s, struct task_devs *td, unsigned k, unsigned depth,
                           unsigned prio, double bps)
{
    if (IOPRIO_CLASS_OF(prio) == IOC_IDLE)
        prio = (unsigned)IOPRIO_MAKE(IOC_IDLE, 0);
    task_lens_row(s, td);
    size_t i = s->nlens_prio;
    while (i > 0 && s->lens_prio[i - 1].row == td->lens_row) {
        struct task_prio_bps *e = &s->lens_prio[--i];
        if (e->k == k && e->prio == prio && e->depth == depth) {
            e->bps += bps;
            return;
        }
    }
    if ((s->nlens_prio & (s->nlens_prio - 1)) == 0)
        s->lens_prio = xreallocarray(s->lens_prio, s->nlens_prio ? 2 * s->nlens_prio : 8,
                                     sizeof(*s->lens_prio));
    s->lens_prio[s->nlens_prio++] = (struct task_prio_bps){
        .row = td->lens_row, .k = (uint8_t)k, .depth = (uint8_t)depth, .prio = (uint16_t)prio,
        .bps = bps };
}

void task_lens_prio_add(struct snapshot *s, struct task_devs *td, unsigned k, unsigned prio,
                        double bps)
{
    task_lens_prio_add_at(s, td, k, TASK_DEPTH_UNKNOWN, prio, bps);
}

/* The first of td's entries (sorted by row), nlens_prio when it has none. */
static size_t prio_first(const struct snapshot *s, const struct task_devs *td)
{
    size_t lo = 0, hi = s->nlens_prio;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (s->lens_prio[mid].row < td->lens_row)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

size_t task_lens_prios(const struct snapshot *s, const struct task_devs *td, unsigned k,
                       struct task_prio_bps *out, size_t max)
{
    if (!td->lens_row)
        return 0;
    /* the lowest level with bytes, as task_devs_lens keeps for lens_bytes: what the disk
     * received, the levels above being the same bytes on their way down */
    size_t first = prio_first(s, td);
    unsigned low = UINT_MAX;
    for (size_t i = first; i < s->nlens_prio && s->lens_prio[i].row == td->lens_row; i++)
        if (s->lens_prio[i].k == k && s->lens_prio[i].depth < low)
            low = s->lens_prio[i].depth;
    size_t got = 0;
    for (size_t i = first; i < s->nlens_prio && s->lens_prio[i].row == td->lens_row; i++) {
        const struct task_prio_bps *e = &s->lens_prio[i];
        if (e->k != k || e->depth != low)
            continue;
        /* the same priority in another entry: added to its first (a priority
         * already counted past max is counted once more: got only says "more") */
        size_t j = 0;
        while (j < got && j < max && out[j].prio != e->prio)
            j++;
        if (j < got && j < max) {
            out[j].bps += e->bps;
            continue;
        }
        if (got < max) {
            out[got] = *e;
            out[got].depth = TASK_DEPTH_UNKNOWN;
        }
        got++;
    }
    return got;
}

size_t task_lens_prios_at(const struct snapshot *s, const struct task_devs *td, unsigned k,
                          unsigned depth, struct task_prio_bps *out, size_t max)
{
    if (!td->lens_row)
        return 0;
    size_t got = 0;
    for (size_t i = prio_first(s, td); i < s->nlens_prio && s->lens_prio[i].row == td->lens_row; i++) {
        const struct task_prio_bps *e = &s->lens_prio[i];
        if (e->k != k || e->depth != depth)
            continue;
        if (got < max)
            out[got] = *e;
        got++;
    }
    return got;
}

/* The devices the lens saw process t submit bios to over the interval, added to its set
 * (partitions and stacked devices as the disk whose scheduler meets them, as for open
 * files). Open files miss a filesystem with an anonymous st_dev (btrfs, overlayfs), reads
 * through a memory map, and hold a device a process opened but does not use; the lens
 * sees what was submitted. Processes only: the lens counts by thread group. */
/* Whether devs[top] may be the one stack top of td's paths (task_devs.via_top): none is
 * named yet, it is the one named, or it sits above the one named (its I/O reaches the
 * kernel in layers: a reader of dm-1, crypt over dm-0, submits to both, in whichever
 * order the lens's rows come, and the path starts at the highest: dm-1 -> dm-0 -> nb0). */
static bool via_top_takes(const struct snapshot *out, const struct task_devs *td, int top)
{
    if (!td->via_top || td->via_top == top + 1)
        return true;
    const char *p[BLKSTACK_MAX_DEPTH + 2];
    return td->via_top <= out->ndevs &&
           blkstack_path(snapshot_dev_stack, out, out->devs[top].ds.name,
                         out->devs[td->via_top - 1].ds.name, p, BLKSTACK_MAX_DEPTH + 1) > 0;
}

/* Whether row i of the task's rows was submitted at a layer with rows of the task below
 * it: the layer passed those bios on in the task's own context (dm-linear, md RAID 0/1, a
 * dm-crypt read), and what the disks received is counted there. */
static bool rows_below(const struct snapshot *out, const int *sub, size_t n, size_t i)
{
    const char *p[BLKSTACK_MAX_DEPTH + 2];
    for (size_t j = 0; j < n; j++)
        if (j != i && sub[j] >= 0 && sub[j] != sub[i] &&
            blkstack_path(snapshot_dev_stack, out, out->devs[sub[i]].ds.name, out->devs[sub[j]].ds.name, p,
                          BLKSTACK_MAX_DEPTH + 1) > 0)
            return true;
    return false;
}

/* A share of one lens row kept at one of td's disks, at a depth of its stack. */
struct row_part {
    uint16_t row;
    uint8_t  k;
    unsigned depth;
    double   share;
};

/* The parts of row i (submitted at snapshot device sub): the disk below it, the whole; a
 * layer over several disks with none of the task's rows below it (md RAID 5/6 writes,
 * which raid5d submits from its own thread) an even share at each of its disks, its
 * bytes counted once however they spread there. Returns the parts written. */
static size_t row_parts(const struct sampler *s, struct snapshot *out, struct task_devs *td,
                        const int *sub, size_t n, size_t i, struct row_part *pt, size_t max)
{
    int idx[TASK_DEVS_MAX];
    size_t nd = 0;
    const struct dev_sample *d = &out->devs[sub[i]];
    if (!d->bd.partition && d->bd.nsched == 0 && !rows_below(out, sub, n, i)) {
        const char *below[TASK_DEVS_MAX];
        size_t nb = snapshot_disks_below(out, d->ds.name, below, TASK_DEVS_MAX);
        for (size_t b = 0; b < nb; b++)
            idx[nd++] = (int)(snapshot_dev(out, below[b]) - out->devs);
    }
    if (nd == 0) {
        /* the device itself, or a layer passed on in the task's context: the disk it
         * meets first (a single-disk layer's is the one found above, no sysfs read) */
        int one = disk_index_of(s, out, sub[i]);
        if (one < 0)
            return 0;
        idx[nd++] = one;
    }
    size_t got = 0;
    for (size_t b = 0; b < nd && got < max; b++) {
        unsigned k = 0;
        while (k < td->n && td->idx[k] != idx[b])
            k++;
        if (k == td->n) {
            if (td->n >= TASK_DEVS_MAX) {
                td->truncated = true;
                continue;
            }
            td->idx[td->n++] = (uint16_t)idx[b];
        }
        unsigned depth = 0;
        if (sub[i] != idx[b] && !d->bd.partition &&
            !snapshot_stack_reach(out, d->ds.name, out->devs[idx[b]].ds.name, &depth))
            depth = TASK_DEPTH_UNKNOWN;
        pt[got++] = (struct row_part){ .row = (uint16_t)i, .k = (uint8_t)k, .depth = depth,
                                       .share = 1.0 / (double)nd };
    }
    if (got < nd)
        td->truncated = true;
    return got;
}

static void task_devs_lens(const struct sampler *s, struct snapshot *out,
                           const struct task_sample *t, struct task_devs *td)
{
    double itv = out->lens.mono - s->subs_prev.mono;
    if (!out->lens_on || !s->have_subs || out->threads || itv <= 0)
        return;
    /* With the duty cycle (lens.h), the bios of its windows: scaled to the interval, an
     * estimate (docs/json.md lens_bytes) */
    double duty = lens_duty(&s->subs_prev, &out->lens);
    /* no window in the interval: the lens saw nothing of it, its bytes and waits are
     * unknown (not 0); what is known without it stands */
    if (duty == 0)
        return;
    if (duty > 0 && duty < 1)
        itv *= duty;
    td->lens = td->lens_prio = td->lens_wait = true;
    /* a row per device and priority (a few priorities at most, in practice one) */
    enum { ROWS = 4 * TASK_DEVS_MAX, PARTS = 2 * ROWS };
    struct lens_submit_row rows[ROWS];
    size_t n = lens_submit_interval(&s->subs_prev, &out->lens, t->tgid, rows, ROWS);
    if (n > ROWS) {
        td->truncated = true;
        n = ROWS;
    }
    /* each row's device in the snapshot (-1: not listed) */
    int sub[ROWS];
    for (size_t i = 0; i < n; i++)
        sub[i] = dev_index(out, makedev(rows[i].major, rows[i].minor));
    /* each row's parts: a disk of td's and its depth there */
    struct row_part pt[PARTS];
    size_t np = 0;
    for (size_t i = 0; i < n; i++)
        if (sub[i] >= 0)
            np += row_parts(s, out, td, sub, n, i, pt + np, PARTS - np);
    /* per device, the lowest level of its stack with bytes (with requests timed) */
    unsigned low_bytes[TASK_DEVS_MAX], low_rqs[TASK_DEVS_MAX];
    for (unsigned k = 0; k < TASK_DEVS_MAX; k++)
        low_bytes[k] = low_rqs[k] = UINT_MAX;
    for (size_t q = 0; q < np; q++) {
        const struct lens_submit_row *r = &rows[pt[q].row];
        unsigned k = pt[q].k, depth = pt[q].depth;
        int sb = sub[pt[q].row];
        td->from_lens |= (uint16_t)(1u << k);
        /* submitted to a stacked device above the disk: the top of its path */
        if (sb != td->idx[k] && !out->devs[sb].bd.partition && via_top_takes(out, td, sb)) {
            td->via_top = (uint16_t)(sb + 1);
            td->via |= (uint16_t)(1u << k);
        }
        /* the level of the stack it submitted at: which layers its bios passed with its
         * priority in its own context (a verdict names the one that dropped it) */
        if (r->bytes)    /* else listed for its completions alone */
            task_lens_prio_add_at(out, td, k, depth, r->prio, pt[q].share * (double)r->bytes / itv);
        if (r->bytes && depth < low_bytes[k])
            low_bytes[k] = depth;
        if (r->rqs && depth < low_rqs[k])
            low_rqs[k] = depth;
    }
    /* One level per disk: a bio passes each layer of its stack, and a layer that submits
     * in the reader's own context (dm-linear, md RAID 0/1, a dm-crypt read) hands the same
     * bytes on below, so the levels are not added up (twice for an LV over its PV, three
     * times for crypt over linear). The lowest level seen is the nearest to what the disk
     * received: its own bios at the disk when it has any, the stripe's share for each disk
     * of a RAID 0, where md1's whole figure would go to its first disk; the top when the
     * layers below submit from their own threads (a crypt writer's; a RAID 5 writer's,
     * a share at each disk: row_parts). */
    double wait_ns[TASK_DEVS_MAX] = { 0 }, rqs[TASK_DEVS_MAX] = { 0 };
    for (size_t q = 0; q < np; q++) {
        const struct lens_submit_row *r = &rows[pt[q].row];
        unsigned k = pt[q].k;
        if (pt[q].depth == low_bytes[k])
            task_lens_row(out, td)[k] += pt[q].share * (double)r->bytes / itv;
        if (pt[q].depth == low_rqs[k]) {
            /* its requests' latencies per device, all partitions and priorities together */
            wait_ns[k] += pt[q].share * (double)r->wait_ns;
            rqs[k] += pt[q].share * (double)r->rqs;
        }
    }
    for (unsigned k = 0; k < td->n; k++) {
        if (!(td->from_lens >> k & 1))
            continue;
        struct task_async *a = task_lens_async(out, td, k);
        lens_submit_wait(wait_ns[k], rqs[k], itv, &a->in_flight, &a->await_ms);
    }
}

/* A disk the task reached below its path's top is on that path, however it was found: md
 * RAID 0 submits to each disk of its stripe in the reader's own context, so the lens has a
 * row for nb3 as well as for md1, and which disk the fd scan names first varies. Without
 * this, a verdict on nb3 read "nb3 uses kyber" in one sample and "md1 -> nb3" in another. */
static void via_fill(const struct snapshot *out, struct task_devs *td)
{
    if (!td->via_top || td->via_top > out->ndevs)
        return;
    const char *p[BLKSTACK_MAX_DEPTH + 2];
    const char *top = out->devs[td->via_top - 1].ds.name;
    for (unsigned k = 0; k < td->n; k++)
        if (!(td->via & (1u << k)) && td->idx[k] != td->via_top - 1 &&
            blkstack_path(snapshot_dev_stack, out, top, out->devs[td->idx[k]].ds.name, p,
                          BLKSTACK_MAX_DEPTH + 1) > 0)
            td->via |= (uint16_t)(1u << k);
}

/* Remember this reading's submitted bytes for the next interval. */
static void subs_keep(struct sampler *s, const struct snapshot *out)
{
    if (!out->lens_on) {
        s->have_subs = false;
        return;
    }
    struct lens_submit_row *p = NULL;
    if (out->lens.nsubs && !(p = malloc(out->lens.nsubs * sizeof(*p)))) {
        s->have_subs = false;
        return;
    }
    if (p)
        memcpy(p, out->lens.subs, out->lens.nsubs * sizeof(*p));
    free(s->subs_prev.subs);
    s->subs_prev.subs = p;
    s->subs_prev.nsubs = out->lens.nsubs;
    s->subs_prev.mono = out->lens.mono;
    s->subs_prev.since = out->lens.since;
    s->subs_prev.detached_s = out->lens.detached_s;
    s->have_subs = true;
}

/* The filesystems with no block device (source/mounts.h mount_is_netfs) into the snapshot,
 * and the fdmap told to note open files on them: a wait there is no block I/O of the
 * waiter's (verdict.c io_not_block). At most FDMAP_MAX_WATCH; none on most machines. */
static void netfs_watch(struct sampler *s, struct snapshot *out)
{
    const struct mount_entry *v;
    size_t n = s->mnt ? mounts_src_netfs(s->mnt, &v) : 0;
    if (n > FDMAP_MAX_WATCH)
        n = FDMAP_MAX_WATCH;
    dev_t devs[FDMAP_MAX_WATCH];
    out->netfs = n ? xcalloc(n, sizeof(*out->netfs)) : NULL;
    out->nnetfs = n;
    for (size_t i = 0; i < n; i++) {
        struct mount_entry *e = &out->netfs[i];
        *e = v[i];
        e->root = xstrdup(v[i].root);
        e->mount = xstrdup(v[i].mount);
        e->fstype = xstrdup(v[i].fstype);
        e->source = xstrdup(v[i].source);
        devs[i] = v[i].dev;
    }
    fdmap_set_netfs(s->fdmap, devs, n);
}

/* Which devices each process does I/O to, from its open files (source/fdmap.h) and, when
 * the lens runs, from the bios it submitted. */
void take_task_devs(struct sampler *s, struct snapshot *out)
{
    if (!s->fdmap || out->ntasks == 0)
        return;
    struct group_sig *groups = NULL;
    size_t ngroups = 0;
    if (out->threads)
        group_sigs(out, &groups, &ngroups);
    out->tdevs = xcalloc(task_room(out->ntasks), sizeof(*out->tdevs));
    fdmap_reserve(s->fdmap, groups ? ngroups : out->ntasks);   /* kernel threads included */
    fdmap_begin_refresh(s->fdmap);
    netfs_watch(s, out);
    for (size_t i = 0; i < out->ntasks; i++) {
        const struct task_sample *t = &out->tasks[i];
        struct task_devs *td = &out->tdevs[i];
        td->known = true;
        if (t->kthread)
            continue;             /* no files of its own: an empty set, at no cost */
        if (scan_deferred(s, out, t)) {
            td->known = false;
            continue;
        }
        bool known = t->io_err == 0;
        uint64_t sig = known ? io_sig(t) : 0;
        pid_t live = t->live_tid;    /* the leader exited: a live thread's open files */
        if (groups) {
            const struct group_sig *g = group_find(groups, ngroups, t->tgid);
            known = g->known;
            sig = g->sig;
            live = g->live_tid;
        }
        struct fd_devs fd;
        fdmap_get_io(s->fdmap, t->tgid, live, process_start(out, t), out->mono, known, sig, &fd);
        td->err = fd.err;
        td->truncated = fd.truncated;
        for (unsigned k = 0; k < fd.nnetfs && !td->netfs; k++)
            for (size_t j = 0; j < out->nnetfs && !td->netfs; j++)
                if (out->netfs[j].dev == fd.netfs[k])
                    td->netfs = (uint8_t)(j + 1);
        td->buffered_writer = fd.buffered_writer;
        for (unsigned k = 0; k < fd.ndevs && td->n < TASK_DEVS_MAX; k++) {
            int idx = dev_index(out, fd.devs[k]);
            if (idx < 0)
                continue;
            for (unsigned b = 0; b < fd.nbuffered; b++)
                if (fd.buffered_devs[b] == fd.devs[k])
                    td->buffered |= (uint16_t)(1u << td->n);
            td->from_files |= (uint16_t)(1u << td->n);
            for (unsigned v = 0; v < fd.nvia; v++) {
                int top = fd.via_disk[v] == fd.devs[k] ? dev_index(out, fd.via_top[v]) : -1;
                if (top >= 0 && via_top_takes(out, td, top)) {
                    td->via_top = (uint16_t)(top + 1);
                    td->via |= (uint16_t)(1u << td->n);
                }
            }
            td->idx[td->n++] = (uint16_t)idx;
        }
        task_devs_lens(s, out, t, td);
        via_fill(out, td);
    }
    free(groups);
    fdmap_prune(s->fdmap, out->mono, 0);
    subs_keep(s, out);
}
