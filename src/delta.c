/* SPDX-License-Identifier: GPL-2.0-or-later */
/* delta.c: iostat math for devices, stall shares for PSI, per-task rates and delays. */
#include "delta.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "source/cgroups.h"
#include "util.h"
#include "util/num.h"

double delta_u32(uint64_t prev, uint64_t cur)
{
    /* The kernel prints these as unsigned int: a smaller value is a wrap, not a reset. */
    if (cur >= prev)
        return (double)(cur - prev);
    return (double)((cur + 0x100000000ull - prev) & 0xffffffffull);
}

int delta_saturated(double await, double aqu_sz, double ios, double quiet_await, double ceiling)
{
    if (isnan(aqu_sz))
        return -1;
    if (aqu_sz < SAT_MIN_AQU || ios <= 0)
        return 0;           /* no queue to speak of: not saturated, whatever the latency */
    if (isnan(await))
        return -1;
    if (!isnan(quiet_await))
        return await >= SAT_AWAIT_FACTOR * quiet_await ? 1 : 0;
    /* No quiet interval seen yet. The lifetime mean await is at least the quiet level (it
     * includes every busy period), so a wait far above it is saturation for sure; a wait
     * below it proves nothing. */
    if (!isnan(ceiling) && await >= SAT_AWAIT_FACTOR * ceiling)
        return 1;
    return -1;
}

const char *delay_source_name(enum delay_source s)
{
    switch (s) {
    case DELAY_SRC_TASKSTATS: return "taskstats";
    case DELAY_SRC_BPF:       return "bpf";
    case DELAY_SRC_SAMPLED:   return "sampled";
    default:                  return NULL;
    }
}

unsigned delay_sources(const struct result *r)
{
    unsigned m = 0;
    for (size_t i = 0; i < r->ntasks; i++)
        if (r->tasks[i].delay_valid)
            m |= 1u << r->tasks[i].io_delay_source;
    const struct snapshot *c = r->cur;
    /* Taskstats gives nothing: every task's figure is the lens's, those that did not wait
     * too (none listed, or none waited yet, is no reason to call delays unavailable). */
    if (c && c->lens_on && (c->taskstats_err || c->delayacct != DA_ON))
        m |= 1u << DELAY_SRC_BPF;
    return m;
}

const char *sat_source_name(enum sat_source s)
{
    switch (s) {
    case SAT_SRC_BASELINE: return "baseline";
    case SAT_SRC_LENS:     return "lens";
    case SAT_SRC_DISKS:    return "disks";
    default:               return NULL;
    }
}

static const struct dev_sample *find_prev_dev(const struct snapshot *prev, const struct dev_sample *d)
{
    if (!prev)
        return NULL;
    for (size_t i = 0; i < prev->ndevs; i++) {
        const struct dev_sample *p = &prev->devs[i];
        if (p->ds.major == d->ds.major && p->ds.minor == d->ds.minor && strcmp(p->ds.name, d->ds.name) == 0)
            return p;
    }
    return NULL;
}

struct dev_baseline *baselines_get(struct baselines *b, const char *name, unsigned major,
                                   unsigned minor)
{
    for (size_t i = 0; i < b->n; i++)
        if (b->v[i].major == major && b->v[i].minor == minor && strcmp(b->v[i].name, name) == 0)
            return &b->v[i];
    if (b->n == b->cap) {
        b->cap = b->cap ? b->cap * 2 : 16;
        b->v = xreallocarray(b->v, b->cap, sizeof(*b->v));
    }
    struct dev_baseline *n = &b->v[b->n++];
    memset(n, 0, sizeof(*n));
    str_copy(n->name, name, sizeof(n->name));
    n->major = major;
    n->minor = minor;
    n->quiet_await = n->ceiling = (double)NAN;
    return n;
}

static struct dev_baseline *baseline_for(struct baselines *b, const struct diskstats_row *ds)
{
    return baselines_get(b, ds->name, ds->major, ds->minor);
}

static double ratio(double num, double den)
{
    return den > 0 ? num / den : (double)NAN;
}

/* The 64-bit counters (ios, merges, sectors) never wrap in practice: a decrease means the
 * device was removed and registered again with fresh counters. */
static bool counters_reset(const struct diskstats_row *a, const struct diskstats_row *b)
{
    static const enum ds_field mono64[] = {
        DS_RD_IOS, DS_RD_MERGES, DS_RD_SECT, DS_WR_IOS, DS_WR_MERGES, DS_WR_SECT,
        DS_DC_IOS, DS_DC_MERGES, DS_DC_SECT, DS_FL_IOS,
    };
    unsigned n = a->nfields < b->nfields ? a->nfields : b->nfields;
    for (size_t i = 0; i < ARRAY_SIZE(mono64); i++)
        if ((unsigned)mono64[i] < n && b->f[mono64[i]] < a->f[mono64[i]])
            return true;
    return false;
}

/* The same name and major:minor, but another registration of the device (a partition
 * deleted and made again, a loop device removed and re-created): its counters started
 * again from zero and may already be above the old ones, so they cannot tell. */
static bool reregistered(const struct dev_sample *a, const struct dev_sample *b)
{
    return a->bd.ident != 0 && b->bd.ident != 0 && a->bd.ident != b->bd.ident;
}

static void nan_rates(struct dev_rates *r)
{
    r->r_s = r->w_s = r->d_s = r->f_s = (double)NAN;
    r->rkb_s = r->wkb_s = r->dkb_s = (double)NAN;
    r->rrqm_s = r->wrqm_s = r->drqm_s = (double)NAN;
    r->rrqm_pct = r->wrqm_pct = r->drqm_pct = (double)NAN;
    r->r_await = r->w_await = r->d_await = r->f_await = (double)NAN;
    r->rareq_sz = r->wareq_sz = r->dareq_sz = (double)NAN;
    r->aqu_sz = r->util = r->await = (double)NAN;
}

static void dev_delta(const struct dev_sample *p, const struct dev_sample *c, double itv_s,
                      struct baselines *hist, struct dev_rates *r)
{
    memset(r, 0, sizeof(*r));
    r->dev = c;
    r->has_discard = c->ds.nfields >= 15;
    r->has_flush = c->ds.nfields >= 17;
    nan_rates(r);
    r->quiet_await = (double)NAN;
    r->saturated = -1;
    struct dev_baseline *b = hist ? baseline_for(hist, &c->ds) : NULL;
    if (b)
        r->quiet_await = b->quiet_await;
    if (!p || itv_s <= 0)
        return;
    if (reregistered(p, c) || counters_reset(&p->ds, &c->ds)) {
        r->reset = true;
        if (b)
            b->quiet_await = b->ceiling = r->quiet_await = (double)NAN;
        return;
    }
    r->valid = true;
    const uint64_t *a = p->ds.f, *z = c->ds.f;
#define D64(f) ((double)(z[f] - a[f]))
    double itv_ms = itv_s * 1000.0;
    double rd = D64(DS_RD_IOS), wr = D64(DS_WR_IOS);
    double rm = D64(DS_RD_MERGES), wm = D64(DS_WR_MERGES);
    r->r_s = rd / itv_s;
    r->w_s = wr / itv_s;
    r->rkb_s = D64(DS_RD_SECT) / 2.0 / itv_s;
    r->wkb_s = D64(DS_WR_SECT) / 2.0 / itv_s;
    r->rrqm_s = rm / itv_s;
    r->wrqm_s = wm / itv_s;
    r->rrqm_pct = ratio(rm * 100.0, rm + rd);
    r->wrqm_pct = ratio(wm * 100.0, wm + wr);
    double rt = delta_u32(a[DS_RD_TICKS], z[DS_RD_TICKS]);
    double wt = delta_u32(a[DS_WR_TICKS], z[DS_WR_TICKS]);
    r->r_await = ratio(rt, rd);
    r->w_await = ratio(wt, wr);
    r->rareq_sz = ratio(D64(DS_RD_SECT) / 2.0, rd);
    r->wareq_sz = ratio(D64(DS_WR_SECT) / 2.0, wr);
    r->aqu_sz = delta_u32(a[DS_QUEUE_TICKS], z[DS_QUEUE_TICKS]) / itv_ms;
    r->util = delta_u32(a[DS_IO_TICKS], z[DS_IO_TICKS]) / itv_ms * 100.0;
    if (r->util > 100.0)
        r->util = 100.0;   /* as iostat prints it: the two clocks are read at different moments */
    if (r->has_discard) {
        double dc = D64(DS_DC_IOS), dm = D64(DS_DC_MERGES);
        r->d_s = dc / itv_s;
        r->dkb_s = D64(DS_DC_SECT) / 2.0 / itv_s;
        r->drqm_s = dm / itv_s;
        r->drqm_pct = ratio(dm * 100.0, dm + dc);
        r->d_await = ratio(delta_u32(a[DS_DC_TICKS], z[DS_DC_TICKS]), dc);
        r->dareq_sz = ratio(D64(DS_DC_SECT) / 2.0, dc);
    }
    if (r->has_flush) {
        double fl = D64(DS_FL_IOS);
        r->f_s = fl / itv_s;
        r->f_await = ratio(delta_u32(a[DS_FL_TICKS], z[DS_FL_TICKS]), fl);
    }
#undef D64
    double ios = rd + wr;
    r->await = ratio(rt + wt, ios);

    double ceiling = (double)NAN;
    if (b) {
        /* The quiet-time level: the lowest await of a quiet interval, one with enough
         * requests to mean something but about one at a time (aqu-sz at most
         * SAT_QUIET_AQU), so that nothing queued: its await is the device's service time.
         * A loaded interval never teaches it: its await may already hold queueing. It
         * creeps up slowly so a device that changed (new backing, new firmware) is
         * relearned. */
        if (!isnan(b->quiet_await))
            b->quiet_await *= 1.0 + SAT_BASE_DRIFT * itv_s;
        if (ios >= SAT_MIN_IOS && !isnan(r->await) && r->aqu_sz <= SAT_QUIET_AQU &&
            (isnan(b->quiet_await) || r->await < b->quiet_await))
            b->quiet_await = r->await;
        r->quiet_await = b->quiet_await;
        /* First sight: the lifetime mean await, an upper bound of the quiet level. */
        if (isnan(b->ceiling)) {
            double life_ios = (double)(z[DS_RD_IOS] + z[DS_WR_IOS]);
            if (life_ios >= 1000)
                b->ceiling = (double)(z[DS_RD_TICKS] + z[DS_WR_TICKS]) / life_ios;
        }
        ceiling = b->ceiling;
    }
    r->saturated = delta_saturated(r->await, r->aqu_sz, ios, r->quiet_await, ceiling);
}

static int cmp_lat(const void *a, const void *b)
{
    unsigned x = ((const struct prio_latency *)a)->prio, y = ((const struct prio_latency *)b)->prio;
    return x < y ? -1 : x > y;
}

void delta_prio_stage(const struct lens_stage_sum *s, struct prio_stage *out)
{
    out->count = (double)s->count;
    out->mean_ms = lens_stage_mean_ms(s);
    out->p50_ms = lens_hist_quantile(s->hist, LENS_HIST, 0.50);
    out->p90_ms = lens_hist_quantile(s->hist, LENS_HIST, 0.90);
    out->p99_ms = lens_hist_quantile(s->hist, LENS_HIST, 0.99);
    memcpy(out->hist, s->hist, sizeof(out->hist));
}

/* Latency per priority over the interval (delta.h struct prio_latency): the difference
 * of the two readings' rows of this device. A row whose counters went backwards says
 * nothing this time (lens_stage_delta); one absent before started from zero (same lens:
 * the caller checked `since`). Priorities that print alike (idle at any level) are one
 * row: the name is what outputs key them by. */
static void dev_lat(const struct lens_reading *a, const struct lens_reading *z, struct dev_rates *r)
{
    unsigned major = r->dev->ds.major, minor = r->dev->ds.minor;
    size_t n = 0;
    for (size_t i = 0; i < z->ndp; i++)
        n += z->dp[i].major == major && z->dp[i].minor == minor;
    if (!n)
        return;
    struct prio_latency *rows = xcalloc(n, sizeof(*rows));
    struct lens_stage_sum (*acc)[LENS_NSTAGES] = xcalloc(n, sizeof(*acc));
    size_t nrows = 0;
    for (size_t i = 0; i < z->ndp; i++) {
        const struct lens_devprio *c = &z->dp[i];
        if (c->major != major || c->minor != minor)
            continue;
        const struct lens_devprio *p = NULL;
        for (size_t j = 0; j < a->ndp && !p; j++)
            if (a->dp[j].major == major && a->dp[j].minor == minor && a->dp[j].prio == c->prio)
                p = &a->dp[j];
        static const struct lens_stage_sum zero;
        struct lens_stage_sum d[LENS_NSTAGES];
        bool reset = false;
        for (int st = 0; st < LENS_NSTAGES && !reset; st++)
            reset = lens_stage_delta(p ? &p->st[st] : &zero, &c->st[st], &d[st]) < 0;
        if (reset || d[LENS_ST_TOTAL].count == 0)
            continue;
        char name[sizeof(rows->name)];
        lens_prio_name(c->prio, name, sizeof(name));
        size_t k = 0;
        while (k < nrows && strcmp(rows[k].name, name) != 0)
            k++;
        if (k == nrows) {
            nrows++;
            rows[k].prio = c->prio;
            memcpy(rows[k].name, name, sizeof(name));
        } else if (c->prio < rows[k].prio) {
            rows[k].prio = c->prio;
        }
        for (int st = 0; st < LENS_NSTAGES; st++)
            lens_stage_add(&acc[k][st], &d[st]);
    }
    /* With the duty cycle the counts are the windows': scaled to the interval. */
    double duty = lens_duty(a, z);
    for (size_t k = 0; k < nrows; k++)
        for (int st = 0; st < LENS_NSTAGES; st++) {
            if (duty > 0 && duty < 1)
                lens_stage_scale(&acc[k][st], 1 / duty);
            delta_prio_stage(&acc[k][st], &rows[k].st[st]);
        }
    free(acc);
    if (!nrows) {
        free(rows);
        return;
    }
    qsort(rows, nrows, sizeof(*rows), cmp_lat);
    r->lat = rows;
    r->nlat = nrows;
}

/* Whether the lens's row of major:minor belongs to device d: d itself, or when d is a
 * disk, one of its partitions. */
static bool dev_owns_row(const struct snapshot *cur, const struct dev_sample *d, unsigned major,
                         unsigned minor)
{
    if (d->ds.major == major && d->ds.minor == minor)
        return true;
    for (size_t k = 0; !d->bd.partition && k < cur->ndevs; k++) {
        const struct dev_sample *p = &cur->devs[k];
        if (p->ds.major == major && p->ds.minor == minor && p->bd.partition &&
            strcmp(p->bd.disk, d->ds.name) == 0)
            return true;
    }
    return false;
}

/* Where an interval's lens figures start from, and the time they cover (*lens_itv_s).
 * The previous snapshot's reading, when both come from one lens (a sampler opened again,
 * as the screen's does when it switches to threads, loads another: counters of two lenses
 * do not subtract). Or, when the lens was loaded after the previous snapshot was taken
 * (sampler_opts.defer_lens: after the first frame), an empty reading at its attachment,
 * where every counter was 0: the figures then cover the interval from there. NULL when the
 * interval has none. */
static const struct lens_reading *lens_base(const struct snapshot *prev, const struct snapshot *cur,
                                            double itv_s, double *lens_itv_s)
{
    static const struct lens_reading empty;
    if (!prev || !cur->lens_on || itv_s <= 0)
        return NULL;
    if (prev->lens_on) {
        if (prev->lens.since != cur->lens.since)
            return NULL;
        *lens_itv_s = itv_s;
        return &prev->lens;
    }
    if (!prev->lens_pending || cur->lens.since < prev->mono || cur->mono - cur->lens.since <= 0)
        return NULL;
    *lens_itv_s = cur->mono - cur->lens.since;
    return &empty;
}

/* The share of the interval the lens saw the bios submitted (lens_duty): the bytes of
 * its windows, divided by it, estimate the interval's. 1 when it always saw them; NAN
 * when no window fell in the interval: it saw nothing, and its 0 bytes are unknown, not
 * none. */
static double lens_bytes_duty(const struct lens_reading *lb, const struct lens_reading *z)
{
    double duty = lens_duty(lb, z);
    if (duty == 0)
        return (double)NAN;
    return duty > 0 && duty < 1 ? duty : 1;
}

/* Bytes kernel threads submitted to the device, from the lens's row for them
 * (LENS_SUBMIT_KERNEL): the device's own, and a disk's partitions'. */
static void dev_kernel_bps(const struct lens_reading *lb, const struct snapshot *cur, double itv_s,
                           struct dev_rates *r)
{
    r->kernel_bps = (double)NAN;
    if (!lb)
        return;
    struct lens_submit_row rows[64];
    size_t n = lens_submit_interval(lb, &cur->lens, LENS_SUBMIT_KERNEL, rows, 64);
    double bytes = 0;
    for (size_t i = 0; i < n && i < 64; i++)
        if (dev_owns_row(cur, r->dev, rows[i].major, rows[i].minor))
            bytes += (double)rows[i].bytes;
    r->kernel_bps = bytes / itv_s / lens_bytes_duty(lb, &cur->lens);
}

static int cmp_wb_share(const void *a, const void *b)
{
    const struct wb_share *x = a, *y = b;
    if (x->bps != y->bps)
        return x->bps < y->bps ? 1 : -1;
    return (x->pid > y->pid) - (x->pid < y->pid);
}

/* A process's comm by tgid ("" when not listed): the tasks are sorted by id, and a
 * group's leader has id == tgid in either mode. */
static const char *comm_of(const struct snapshot *cur, pid_t tgid)
{
    size_t lo = LOWER_BOUND_ID(cur->tasks, cur->ntasks, id, tgid);
    const char *c = lo < cur->ntasks && cur->tasks[lo].id == tgid ? cur->tasks[lo].comm : NULL;
    return c ? c : "";
}

/* Whom the kernel threads' bytes to the device were for (rows: the interval's, all
 * devices; lens_wb_interval): summed per (dirtier, cgroup), the kernel's own cgroup
 * (blkcg) taking the place of the lens's when it names one. */
static void dev_writeback_by(const struct snapshot *cur, const struct lens_wb_row *rows, size_t n,
                             double itv_s, double duty, struct dev_rates *r)
{
    r->wb_valid = true;
    struct wb_share *v = NULL;
    size_t nv = 0;
    for (size_t i = 0; i < n; i++) {
        const struct lens_wb_row *w = &rows[i];
        if (!dev_owns_row(cur, r->dev, w->major, w->minor))
            continue;
        uint64_t cg = w->blkcg ? w->blkcg : w->cgid;
        unsigned char from = w->blkcg ? WB_FROM_BLKCG : w->cgid ? WB_FROM_LENS : WB_FROM_NONE;
        size_t k = 0;
        while (k < nv && !(v[k].pid == w->tgid && v[k].cgid == cg && v[k].from == from))
            k++;
        if (k == nv) {
            v = xreallocarray(v, nv + 1, sizeof(*v));
            memset(&v[nv], 0, sizeof(v[nv]));
            v[nv].pid = w->tgid;
            v[nv].cgid = cg;
            v[nv].from = from;
            /* its name when it dirtied the pages (it may have exited since), else the
             * task list's */
            if (w->tgid)
                str_copy(v[nv].comm, w->comm[0] ? w->comm : comm_of(cur, w->tgid), sizeof(v[nv].comm));
            const char *path = cgroups_path_of(cur->cgroups, cg);
            if (path)
                str_copy(v[nv].cgroup, path, sizeof(v[nv].cgroup));
            nv++;
        }
        v[k].bps += (double)w->bytes / itv_s / duty;
    }
    if (nv > 1)
        qsort(v, nv, sizeof(*v), cmp_wb_share);
    r->wb = v;
    r->nwb = nv;
}

double dev_writeback_of(const struct dev_rates *d, pid_t tgid)
{
    if (!d->wb_valid)
        return (double)NAN;
    double bps = 0;
    for (size_t k = 0; tgid > 0 && k < d->nwb; k++)
        if (d->wb[k].pid == tgid)
            bps += d->wb[k].bps;
    return bps;
}

/* The lens's view of the interval; its saturation verdict, when it can give one, is
 * taken over the baseline's: it needs no quiet history (lens_judge_saturation). */
static void dev_lens(const struct lens_reading *lb, const struct snapshot *cur, double itv_s,
                     struct dev_rates *r)
{
    struct lens_dev_interval *l = &r->lens;
    const struct diskstats_row *ds = &r->dev->ds;
    if (r->saturated >= 0)
        r->sat_source = SAT_SRC_BASELINE;
    if (!lb || r->reset ||
        lens_dev_interval(lb, &cur->lens, ds->major, ds->minor, itv_s, r->aqu_sz, l) < 0) {
        memset(l, 0, sizeof(*l));
        l->saturated = -1;
        return;
    }
    /* A queue before the device with no class seen waiting in it (aqu-sz beyond the
     * device's own requests: lens_dev_interval's last test) is a held class only where
     * the scheduler holds classes: under none or kyber it is the dispatch list on a busy
     * CPU (a CI run: a saturated lab disk under none judged "held back", not saturated). */
    const char *sch = r->dev->bd.scheduler;
    if (l->held_back && l->held_class < 0 && (strcmp(sch, "none") == 0 || strcmp(sch, "kyber") == 0)) {
        l->held_back = false;
        l->saturated = lens_judge_saturation(l);
    }
    if (l->saturated >= 0) {
        r->saturated = l->saturated;
        r->sat_source = SAT_SRC_LENS;
    }
    if (!r->dev->bd.partition)
        dev_lat(lb, &cur->lens, r);
}

static void psi_delta(const struct psi_sample *p, const struct psi_sample *c, double itv_s,
                      struct psi_rates *r)
{
    memset(r, 0, sizeof(*r));
    r->some_pct = r->full_pct = (double)NAN;
    if (!p || itv_s <= 0 || c->err || p->err)
        return;
    double us = itv_s * 1e6;
    if (p->some.valid && c->some.valid && c->some.total_us >= p->some.total_us) {
        r->some_valid = true;
        r->some_pct = num_min(100.0, (double)(c->some.total_us - p->some.total_us) / us * 100.0);
    }
    if (p->full.valid && c->full.valid && c->full.total_us >= p->full.total_us) {
        r->full_valid = true;
        r->full_pct = num_min(100.0, (double)(c->full.total_us - p->full.total_us) / us * 100.0);
    }
}

/* Does this task's delay record hold data? Tasks forked while delay accounting was off
 * have none (their counters stay 0 forever), which must read as unknown, not 0 %. */
static bool task_has_delays(const struct snapshot *cur, const struct task_sample *t)
{
    if (cur->delayacct != DA_ON || cur->taskstats_err || !t->delay_valid)
        return false;
    if (cur->delayacct_since_ticks >= 0 && (long long)t->start_ticks >= cur->delayacct_since_ticks)
        return true;
    return t->delay.blkio_count > 0 || t->delay.swapin_count > 0;
}

/* The task's wait rows in the lens's readings a (before) and cur's, by thread or by
 * group; *full when either map was near full (a missing row may have been evicted). */
static void lens_rows(const struct lens_reading *a, const struct snapshot *cur, const struct task_sample *c,
                      const struct lens_wait_row **pr, const struct lens_wait_row **cr, bool *full)
{
    const struct lens_reading *z = &cur->lens;
    if (cur->threads) {
        *pr = lens_wait_find(a->tids, a->ntids, c->id);
        *cr = lens_wait_find(z->tids, z->ntids, c->id);
        *full = a->tids_full || z->tids_full;
    } else {
        *pr = lens_wait_find(a->tgids, a->ntgids, c->id);
        *cr = lens_wait_find(z->tgids, z->ntgids, c->id);
        *full = a->tgids_full || z->tgids_full;
    }
}

/* The share of the interval in which the lens saw waits begin: 1 without the duty
 * cycle; below it the windows' waits are scaled to the interval (lens_duty, which the
 * scheduler program shares with the request programs); 0 when no window fell in it:
 * unknown. */
static double lens_wait_duty(const struct lens_reading *a, const struct snapshot *cur)
{
    double duty = lens_duty(a, &cur->lens);
    return isnan(duty) ? 1 : duty;
}

/* The lens's iowait for a task whose delay taskstats cannot give (delay accounting off,
 * or the task forked while it was off). The kernel's blkio delay is this same time
 * (kernel/sched/core.c: delayacct_blkio_start when a task with in_iowait leaves the CPU,
 * delayacct_blkio_end at its wakeup), so the two agree where both exist. */
static void task_lens_delay(const struct lens_reading *a, const struct snapshot *cur,
                            const struct task_sample *c, double itv_s, struct task_rates *r)
{
    if (!a)
        return;
    const struct lens_wait_row *pr, *cr;
    bool full;
    lens_rows(a, cur, c, &pr, &cr, &full);
    double duty = lens_wait_duty(a, cur);
    if (!(duty > 0))
        return;
    double pct;
    if (cr) {
        pct = lens_wait_pct(pr, cr, itv_s) / duty;
        if (isnan(pct))
            return;
        /* A window's waits stand for the interval's: a task in D now whose windows saw
         * no wait may be in one that began before them (their starts only count). */
        if (duty < 1 && pct == 0 && c->state == 'D')
            return;
        if (pr && cr->waits > pr->waits)
            r->blkio_avg_ms = (double)(cr->wait_ns - pr->wait_ns) / 1e6 / (double)(cr->waits - pr->waits);
    } else {
        /* No row: it has not waited since the lens started, unless the map was full
         * (evicted) or it is asleep in D state now in a wait that began before. */
        if (full || c->state == 'D')
            return;
        pct = 0;
    }
    double cap = 100.0 * (c->nlwp > 0 ? c->nlwp : 1);
    if (pct > cap * DELAY_SLACK)
        r->delay_overcount = true;
    r->io_delay_pct = num_min(pct, cap);
    r->delay_valid = true;
    r->io_delay_source = DELAY_SRC_BPF;
}

/* io_uring's completion wait (delta.h uring_wait_pct). With the lens: the interruptible
 * part of its iowait, which both the lens's iowait and the kernel's blkio delay
 * (taskstats) count, taken out of io_delay_pct so that IODLY stays the synchronous wait.
 * Without it: the wait channel read at the refresh (snapshot.c). */
static void task_uring_wait(const struct lens_reading *a, const struct snapshot *cur,
                            const struct task_sample *c, double itv_s, struct task_rates *r)
{
    if (a && cur->lens_on) {
        const struct lens_wait_row *pr, *cr;
        bool full;
        lens_rows(a, cur, c, &pr, &cr, &full);
        /* No row but its wait channel read: asleep since before the lens (snapshot.c),
         * a wait the lens never saw begin; the wait channel says. */
        if (cr || !c->uring_read) {
            double duty = lens_wait_duty(a, cur);
            double pct = !(duty > 0) ? (double)NAN
                       : cr ? lens_wait_intr_pct(pr, cr, itv_s) / duty : full ? (double)NAN : 0;
            if (isnan(pct))
                return;
            r->uring_wait_pct = num_min(pct, 100.0 * (c->nlwp > 0 ? c->nlwp : 1));
            r->uring_source = DELAY_SRC_BPF;
            if (r->delay_valid &&
                (r->io_delay_source == DELAY_SRC_TASKSTATS || r->io_delay_source == DELAY_SRC_BPF))
                r->io_delay_pct = num_max(0.0, r->io_delay_pct - r->uring_wait_pct);
            return;
        }
    }
    if (c->uring_read) {
        r->uring_wait_pct = c->uring_wait ? 100.0 : 0.0;
        r->uring_source = DELAY_SRC_SAMPLED;
    }
}

static void task_delta(const struct lens_reading *lb, double lens_itv_s, const struct snapshot *cur,
                       const struct task_hist *p, const struct task_sample *c, double itv_s,
                       struct task_rates *r)
{
    memset(r, 0, sizeof(*r));
    r->task = c;
    r->is_new = p == NULL;
    r->read_bps = r->write_bps = r->cancelled_write_bps = (double)NAN;
    r->io_delay_pct = r->swapin_delay_pct = r->blkio_avg_ms = r->uring_wait_pct = (double)NAN;
    r->prio = ioprio_effective(c->ioprio_raw, c->nice, c->policy);
    if (!p || itv_s <= 0)
        return;
    if (p->io_ok && !c->io_err) {
        const struct task_hist *a = p;
        const struct task_io *z = &c->io;
        /* A decrease is a reset (never a huge rate): the rate stays unknown this interval. */
        if (z->read_bytes >= a->read_bytes && z->write_bytes >= a->write_bytes &&
            z->cancelled_write_bytes >= a->cancelled_write_bytes) {
            r->io_valid = true;
            r->read_bps = (double)(z->read_bytes - a->read_bytes) / itv_s;
            r->write_bps = (double)(z->write_bytes - a->write_bytes) / itv_s;
            r->cancelled_write_bps = (double)(z->cancelled_write_bytes - a->cancelled_write_bytes) / itv_s;
        }
    }
    if (task_has_delays(cur, c) && p->delay_valid) {
        const struct task_hist *a = p;
        const struct task_delay *z = &c->delay;
        if (z->blkio_delay_ns >= a->blkio_delay_ns && z->swapin_delay_ns >= a->swapin_delay_ns &&
            z->blkio_count >= a->blkio_count) {
            /* over the time between the two readings of its counters when both say when
             * (a refresh reads its tasks over tens of ms: at 0.2 s intervals a task read
             * late, then early, waited a few % longer than the snapshots' interval) */
            double ns = (c->delay.at_s > 0 && a->delay_at_s > 0 && c->delay.at_s > a->delay_at_s
                         ? c->delay.at_s - a->delay_at_s : itv_s) * 1e9;
            r->delay_valid = true;
            r->io_delay_pct = (double)(z->blkio_delay_ns - a->blkio_delay_ns) / ns * 100.0;
            r->swapin_delay_pct = (double)(z->swapin_delay_ns - a->swapin_delay_ns) / ns * 100.0;
            /* No task waits longer than the interval. Seen on 6.18: synchronous readers in
             * several threads of one process each get more blkio delay than wall time. A
             * small slack covers the sampling moments; beyond it, cap and say so. */
            double cap = 100.0 * (c->nlwp > 0 ? c->nlwp : 1);
            if (r->io_delay_pct > cap * DELAY_SLACK || r->swapin_delay_pct > cap * DELAY_SLACK)
                r->delay_overcount = true;
            r->io_delay_pct = num_min(r->io_delay_pct, cap);
            r->swapin_delay_pct = num_min(r->swapin_delay_pct, cap);
            r->blkio_avg_ms = ratio((double)(z->blkio_delay_ns - a->blkio_delay_ns) / 1e6,
                                    (double)(z->blkio_count - a->blkio_count));
            r->io_delay_source = DELAY_SRC_TASKSTATS;
        }
    }
    if (!r->delay_valid)
        task_lens_delay(lb, cur, c, lens_itv_s, r);
    task_uring_wait(lb, cur, c, lens_itv_s, r);
}

/* A bio-based layer (dm, md: no scheduler, disks below it) queues nothing of its own:
 * its await and aqu-sz are its disks' waits seen from above, and its requests are served
 * there. Saturated when a disk below it is, not when all are not, unknown otherwise
 * (issue #34: judged where the I/O is served). */
static void layers_saturation(const struct snapshot *cur, struct result *out)
{
    for (size_t i = 0; i < cur->ndevs; i++) {
        const struct dev_sample *d = &cur->devs[i];
        const char *below[16];
        size_t n = d->bd.partition || d->bd.nsched ? 0
                 : snapshot_disks_below(cur, d->ds.name, below, 16);
        if (n == 0)
            continue;
        int sat = 0;
        for (size_t k = 0; k < n && sat != 1; k++) {
            const struct dev_sample *b = snapshot_dev(cur, below[k]);
            int bs = b ? out->devs[b - cur->devs].saturated : -1;
            sat = bs == 1 ? 1 : bs < 0 ? -1 : sat;
        }
        out->devs[i].saturated = sat;
        out->devs[i].sat_source = sat >= 0 ? SAT_SRC_DISKS : SAT_SRC_NONE;
    }
}

void delta_compute(const struct snapshot *prev, const struct snapshot *cur,
                   struct baselines *hist, struct result *out)
{
    memset(out, 0, sizeof(*out));
    out->cur = cur;
    out->interval_s = prev ? cur->mono - prev->mono : 0;
    if (out->interval_s < 0)
        out->interval_s = 0;
    double itv = out->interval_s;
    double litv = 0;
    const struct lens_reading *lb = lens_base(prev, cur, itv, &litv);

    out->ndevs = cur->ndevs;
    out->devs = xcalloc(cur->ndevs ? cur->ndevs : 1, sizeof(*out->devs));
    /* The writeback's dirtiers over the interval, all devices at once. */
    struct lens_wb_row *wb = NULL;
    size_t nwb = 0;
    bool wb_ok = lb && cur->lens.dirty_on;
    if (wb_ok && cur->lens.nwbs) {
        wb = xcalloc(cur->lens.nwbs, sizeof(*wb));
        nwb = lens_wb_interval(lb, &cur->lens, wb, cur->lens.nwbs);
    }
    double wb_duty = wb_ok ? lens_bytes_duty(lb, &cur->lens) : (double)NAN;
    for (size_t i = 0; i < cur->ndevs; i++)
    {
        dev_delta(find_prev_dev(prev, &cur->devs[i]), &cur->devs[i], itv, hist, &out->devs[i]);
        dev_lens(lb, cur, litv, &out->devs[i]);
        dev_kernel_bps(lb, cur, litv, &out->devs[i]);
        if (wb_ok && !isnan(wb_duty))
            dev_writeback_by(cur, wb, nwb, litv, wb_duty, &out->devs[i]);
    }
    free(wb);
    layers_saturation(cur, out);

    for (int k = 0; k < PSI_NRES; k++)
        psi_delta(prev ? &prev->psi[k] : NULL, &cur->psi[k], itv, &out->psi[k]);

    /* Both task arrays are sorted by id: walk them together. Identity is (id, start). The
     * previous snapshot holds whole tasks, or only their history once reduced (snapshot.h). */
    out->ntasks = cur->ntasks;
    out->tasks = xcalloc(task_room(cur->ntasks ? cur->ntasks : 1), sizeof(*out->tasks));
    const struct task_hist *ph = prev ? prev->hist : NULL;
    size_t np = !prev ? 0 : ph ? prev->nhist : prev->ntasks;
    size_t j = 0;
    for (size_t i = 0; i < cur->ntasks; i++) {
        const struct task_sample *c = &cur->tasks[i];
        const struct task_hist *p = NULL;
        struct task_hist tmp;
        while (j < np && (ph ? ph[j].id : prev->tasks[j].id) < c->id)
            j++;
        if (j < np) {
            if (!ph)
                tmp = task_hist_of(&prev->tasks[j]);
            const struct task_hist *h = ph ? &ph[j] : &tmp;
            if (h->id == c->id && h->start_ticks == c->start_ticks)
                p = h;
        }
        task_delta(lb, litv, cur, p, c, itv, &out->tasks[i]);
    }
    cgroups_delta(prev ? prev->cgroups : NULL, cur->cgroups, out);

    out->nfss = cur->nfss;
    out->fss = xcalloc(cur->nfss ? cur->nfss : 1, sizeof(*out->fss));
    for (size_t i = 0; i < cur->nfss; i++) {
        int di = cur->fss[i].dev_idx;
        delta_fs(&cur->fss[i], di >= 0 ? &out->devs[di] : NULL, &out->fss[i]);
    }
}

void delta_fs(const struct fs_sample *fs, const struct dev_rates *dev, struct fs_rates *out)
{
    const struct fs_mount *m = &fs->fs;
    out->fs = fs;
    out->used_pct = out->write_bps = out->fill_bps = out->full_in_s = (double)NAN;
    if (!m->statfs_err && m->used + m->avail > 0)
        out->used_pct = 100.0 * (double)m->used / (double)(m->used + m->avail);
    if (dev && dev->valid)
        out->write_bps = dev->wkb_s * 1024.0;
    unsigned n = fs->nhist;
    if (n < 2)
        return;
    double dt = fs->hist_mono[n - 1] - fs->hist_mono[n - 2];
    if (dt > 0)
        out->fill_bps = ((double)fs->hist_used[n - 1] - (double)fs->hist_used[n - 2]) / dt;
    if (n < FS_STEADY_INTERVALS + 1)
        return;
    for (unsigned i = n - FS_STEADY_INTERVALS; i < n; i++)
        if (!(fs->hist_used[i] > fs->hist_used[i - 1]) || !(fs->hist_mono[i] > fs->hist_mono[i - 1]))
            return;
    unsigned first = n - 1 - FS_STEADY_INTERVALS;
    double span = fs->hist_mono[n - 1] - fs->hist_mono[first];
    double rate = ((double)fs->hist_used[n - 1] - (double)fs->hist_used[first]) / span;
    out->full_in_s = (double)m->avail / rate;
}

void delta_sampled(struct result *r, const struct ts_counts *c)
{
    if (!c || r->interval_s <= 0)
        return;
    bool threads = r->cur && r->cur->threads;
    for (size_t i = 0; i < r->ntasks; i++) {
        struct task_rates *t = &r->tasks[i];
        if (t->delay_valid || t->io_delay_source != DELAY_SRC_UNKNOWN)
            continue;
        const struct task_sample *s = t->task;
        double pct = threads ? ts_counts_share(c, s->id, s->tgid) : ts_counts_share(c, 0, s->id);
        if (isnan(pct))
            continue;
        /* Each thread is at most in one state a sample: no share exceeds nlwp x 100 %. */
        double cap = 100.0 * (s->nlwp > 0 ? s->nlwp : 1);
        t->io_delay_pct = num_min(pct, cap);
        t->delay_valid = true;
        t->io_delay_source = DELAY_SRC_SAMPLED;
    }
}

void result_free(struct result *r)
{
    for (size_t i = 0; r->devs && i < r->ndevs; i++)
    {
        free(r->devs[i].lat);
        free(r->devs[i].wb);
    }
    free(r->fss);
    free(r->devs);
    free(r->tasks);
    free(r->cgroups);
    memset(r, 0, sizeof(*r));
}

void baselines_free(struct baselines *b)
{
    free(b->v);
    memset(b, 0, sizeof(*b));
}

bool task_is_active(const struct task_rates *t)
{
    if (t->io_valid && (t->read_bps > 0 || t->write_bps > 0))
        return true;
    /* io_uring's completion wait: no block I/O, but the io pressure's (delta.h) */
    if (t->uring_source != DELAY_SRC_UNKNOWN && t->uring_wait_pct > 0.05)
        return true;
    return t->delay_valid && t->io_delay_pct > 0.05;
}

/* ---- The cgroup lens: rates, sums and pressure per cgroup over an interval ---- */

static const struct cgroup_entry *find_prev(const struct cgroup_set *prev, const char *path,
                                            const size_t *slots, size_t nslots)
{
    size_t h = (size_t)hash_str(path) & (nslots - 1);
    while (slots[h]) {
        const struct cgroup_entry *e = &prev->v[slots[h] - 1];
        if (strcmp(e->path, path) == 0)
            return e;
        h = (h + 1) & (nslots - 1);
    }
    return NULL;
}

static double pressure_pct(const struct psi_line *a, const struct psi_line *b, double itv_s)
{
    if (!a->valid || !b->valid || b->total_us < a->total_us || itv_s <= 0)
        return (double)NAN;
    return num_min(100.0, (double)(b->total_us - a->total_us) / (itv_s * 1e6) * 100.0);
}

static int dev_of(const struct result *r, unsigned major, unsigned minor)
{
    for (size_t i = 0; i < r->ndevs; i++)
        if (r->devs[i].dev->ds.major == major && r->devs[i].dev->ds.minor == minor)
            return (int)i;
    return -1;
}

struct cgroup_rates *cgroups_rates_alloc(size_t n, size_t nrows)
{
    return xcalloc(1, n * sizeof(struct cgroup_rates) + nrows * sizeof(struct cgroup_dev_rates) + 1);
}

static void iostat_rates(const struct cgroup_entry *p, const struct cgroup_entry *c, double itv,
                         const struct result *r, struct cgroup_rates *out)
{
    for (unsigned i = 0; i < c->niostat; i++) {
        const struct cg_iostat_row *z = &c->iostat_row[i];
        struct cgroup_dev_rates *d = &out->dev[out->ndev++];
        d->dev = dev_of(r, z->major, z->minor);
        d->major = z->major;
        d->minor = z->minor;
        d->has_cost = z->has_cost;
        d->has_lat = z->has_lat;
        d->lat_depth = z->lat_depth;
        d->rbps = d->wbps = d->riops = d->wiops = (double)NAN;
        d->cost_wait_pct = d->cost_indelay_pct = (double)NAN;
        const struct cg_iostat_row *a = NULL;
        for (unsigned k = 0; p && !p->iostat_err && k < p->niostat; k++)
            if (p->iostat_row[k].major == z->major && p->iostat_row[k].minor == z->minor)
                a = &p->iostat_row[k];
        if (!a || itv <= 0 || z->rbytes < a->rbytes || z->wbytes < a->wbytes || z->rios < a->rios ||
            z->wios < a->wios)
            continue;   /* new, or its counters were reset (the cgroup made again) */
        d->rbps = (double)(z->rbytes - a->rbytes) / itv;
        d->wbps = (double)(z->wbytes - a->wbytes) / itv;
        d->riops = (double)(z->rios - a->rios) / itv;
        d->wiops = (double)(z->wios - a->wios) / itv;
        if (z->has_cost && a->has_cost && z->cost_wait_us >= a->cost_wait_us &&
            z->cost_indelay_us >= a->cost_indelay_us) {
            d->cost_wait_pct = (double)(z->cost_wait_us - a->cost_wait_us) / (itv * 1e6) * 100.0;
            d->cost_indelay_pct = (double)(z->cost_indelay_us - a->cost_indelay_us) / (itv * 1e6) * 100.0;
        }
    }
}

void cgroups_delta(const struct cgroup_set *prev, const struct cgroup_set *cur, struct result *r)
{
    r->ncgroups = cur ? cur->n : 0;
    /* One allocation: the rates, then every cgroup's device rows (result_free frees it). */
    size_t nrows = 0;
    for (size_t i = 0; cur && i < cur->n; i++)
        nrows += cur->v[i].iostat_err ? 0 : cur->v[i].niostat;
    r->cgroups = cgroups_rates_alloc(r->ncgroups, nrows);
    if (!cur)
        return;
    struct cgroup_dev_rates *rows = (struct cgroup_dev_rates *)(r->cgroups + r->ncgroups);
    for (size_t i = 0; i < cur->n; i++) {
        r->cgroups[i].dev = rows;
        rows += cur->v[i].iostat_err ? 0 : cur->v[i].niostat;
    }
    double itv = r->interval_s;
    size_t nslots = 64, *slots = NULL;
    if (prev && prev->n) {
        while (nslots < 2 * prev->n)
            nslots *= 2;
        slots = xcalloc(nslots, sizeof(size_t));
        for (size_t i = 0; i < prev->n; i++) {
            size_t h = (size_t)hash_str(prev->v[i].path) & (nslots - 1);
            while (slots[h])
                h = (h + 1) & (nslots - 1);
            slots[h] = i + 1;
        }
    }
    /* sums of known values, and whether any was known */
    bool *io_known = xcalloc(cur->n ? cur->n : 1, sizeof(bool));
    bool *delay_known = xcalloc(cur->n ? cur->n : 1, sizeof(bool));
    for (size_t i = 0; i < cur->n; i++) {
        struct cgroup_rates *c = &r->cgroups[i];
        const struct cgroup_entry *e = &cur->v[i];
        c->cg = e;
        c->read_bps = c->write_bps = c->io_delay_pct = 0;
        c->some_pct = c->full_pct = (double)NAN;
        const struct cgroup_entry *p = slots ? find_prev(prev, e->path, slots, nslots) : NULL;
        if (p && !p->pressure.err && !e->pressure.err && itv > 0) {
            c->some_pct = pressure_pct(&p->pressure.some, &e->pressure.some, itv);
            c->full_pct = pressure_pct(&p->pressure.full, &e->pressure.full, itv);
        }
        if (!e->iostat_err)
            iostat_rates(p && !p->iostat_err ? p : NULL, e, itv, r, c);
    }
    for (size_t ti = 0; ti < r->ntasks && ti < cur->ntasks; ti++) {
        const struct task_rates *t = &r->tasks[ti];
        for (int k = cur->task_cg[ti]; k >= 0; k = cur->v[k].parent) {
            struct cgroup_rates *c = &r->cgroups[k];
            c->ntasks++;
            if (t->io_valid) {
                c->read_bps += t->read_bps;
                c->write_bps += t->write_bps;
                io_known[k] = true;
            } else {
                c->io_unknown++;
            }
            if (t->delay_valid) {
                c->io_delay_pct += t->io_delay_pct;
                delay_known[k] = true;
            } else {
                c->delay_unknown++;
            }
        }
    }
    for (size_t i = 0; i < cur->n; i++) {
        if (!io_known[i])
            r->cgroups[i].read_bps = r->cgroups[i].write_bps = (double)NAN;
        if (!delay_known[i])
            r->cgroups[i].io_delay_pct = (double)NAN;
    }
    free(io_known);
    free(delay_known);
    free(slots);

    /* io.prio.class rewrites each bio's class after the task's own value is filled in
     * (block/blk-ioprio.c: blkcg_set_ioprio, called from bio_set_ioprio): the priority
     * the scheduler sees is the rewritten one, and its origin is the cgroup. */
    for (size_t ti = 0; ti < r->ntasks && ti < cur->ntasks; ti++)
        cgroups_prio_effective(cur, ti, &r->tasks[ti].prio);
}


int cgroup_of_task(const struct result *r, size_t ti)
{
    const struct cgroup_set *s = r->cur ? r->cur->cgroups : NULL;
    if (!s || ti >= s->ntasks || ti >= r->ntasks)
        return -1;
    int k = s->task_cg[ti];
    return k >= 0 && (size_t)k < r->ncgroups ? k : -1;
}
