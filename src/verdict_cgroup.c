/* SPDX-License-Identifier: GPL-2.0-or-later */
/* verdict_cgroup.c: the cgroup rules of verdict.c: weights, limits, latency targets,
 * io.stat and writeback, a task above its cgroup. */
#include "verdict.h"
#include "verdict_rules.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "source/cgroups.h"
#include "util.h"
#include "util/fmt.h"
#include "util/num.h"

/* ---- The cgroup rules (cgroups.h; docs/verdicts.md "cgroup controls") ---------------- */

static void push_cg(struct verdicts *v, enum warn_code code, int dev, int task, int cg, const char *fmt, ...)
    __attribute__((format(printf, 6, 7)));

static void push_cg(struct verdicts *v, enum warn_code code, int dev, int task, int cg, const char *fmt, ...)
{
    char text[WARN_TEXT_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof(text), fmt, ap);
    va_end(ap);
    push(v, code, dev, task, "%s", text);
    v->w[v->n - 1].cgroup = cg;
}

/* Is cgroup k the cgroup ti is in, or one of its ancestors? */
static bool task_below(const struct cgroup_set *set, size_t ti, int k)
{
    for (int c = set->task_cg[ti]; c >= 0; c = set->v[c].parent)
        if (c == k)
            return true;
    return false;
}

/* Devices cgroup k does I/O to: its io.stat rows and its tasks' (and descendants') open
 * files; for a bio-based layer (io.stat has a row for dm-0 and one for its disk), the
 * layer and the disks below it, where a weight is read or not (io.cost and bfq work on
 * a disk's requests; a layer has neither). */
static void cgroup_devices(const struct result *r, const struct cgroup_set *set, int k, bool *devs)
{
    memset(devs, 0, r->ndevs * sizeof(bool));
    const struct cgroup_rates *c = &r->cgroups[k];
    const struct snapshot *s = r->cur;
    for (unsigned i = 0; i < c->ndev; i++) {
        int di = c->dev[i].dev;
        if (di < 0)
            continue;
        const char *below[16];
        size_t n = snapshot_dev_is_layer(s, &s->devs[di])
                 ? snapshot_disks_below(s, s->devs[di].ds.name, below, 16) : 0;
        devs[di] = true;
        for (size_t j = 0; j < n; j++) {
            const struct dev_sample *b = snapshot_dev(s, below[j]);
            if (b)
                devs[b - s->devs] = true;
        }
    }
    for (size_t ti = 0; s->tdevs && ti < r->ntasks && ti < set->ntasks; ti++) {
        const struct task_devs *td = &s->tdevs[ti];
        if (!td->known || td->err || !td->n || !task_below(set, ti, k))
            continue;
        for (unsigned j = 0; j < td->n; j++)
            devs[td->idx[j]] = true;
    }
}

enum cg_judgement verdict_cg_weight(const char *path, const struct cgroup_settings *st,
                                    const struct cg_costqos *q, int qerr, const struct dev_sample *d,
                                    char *text, size_t n)
{
    if (st->weight_err)
        return CGJ_NONE;
    int w = cgroup_weight_for(&st->weight, d->ds.major, d->ds.minor);
    if (w == CG_WEIGHT_DEFAULT)
        return CGJ_NONE;
    int cost = cgroup_cost_enabled(q, qerr, d->ds.major, d->ds.minor);
    if (cost > 0)
        return CGJ_HONOURED;
    if (cost < 0)
        return CGJ_UNKNOWN;          /* io.cost.qos unreadable: no claim */
    const char *sched = d->bd.scheduler[0] ? d->bd.scheduler : "no scheduler";
    if (strcmp(sched, "bfq") == 0) {
        if (st->bfq_weight_err == 0 &&
            cgroup_weight_for(&st->bfq_weight, d->ds.major, d->ds.minor) != CG_WEIGHT_DEFAULT)
            return CGJ_HONOURED;     /* bfq has a weight of its own for it */
        snprintf(text, n,
                 "%s: io.weight %d on %s does nothing: io.cost is not enabled for it and bfq reads "
                 "io.bfq.weight (%s); set io.bfq.weight, or enable io.cost in io.cost.qos",
                 path, w, d->ds.name, st->bfq_weight_err ? "absent" : "at its default");
    } else {
        snprintf(text, n,
                 "%s: io.weight %d on %s does nothing: io.cost is not enabled for it and %s reads "
                 "no cgroup weight; enable io.cost (io.cost.qos enable=1)%s",
                 path, w, d->ds.name, sched,
                 offers(&d->bd, "bfq") ? " or use bfq with io.bfq.weight"
                 : loadable(&d->bd, BD_LOAD_BFQ) ? " or use bfq (modprobe bfq) with io.bfq.weight" : "");
    }
    return CGJ_IGNORED;
}

/* A weight set for a layer itself (IODeviceWeight= on an LV, io.weight "253:0 500"):
 * nothing reads it, neither there (no scheduler, no io.cost on a bio-based queue) nor
 * at its disks, which read their own rows. True with the text when one is set. */
bool verdict_cg_layer_weight(const struct snapshot *s, const char *path, const struct cg_weight *w,
                             const struct dev_sample *d, char *text, size_t n)
{
    int set = -1;
    for (unsigned i = 0; i < w->n; i++)
        if (w->row[i].major == d->ds.major && w->row[i].minor == d->ds.minor)
            set = w->row[i].weight;
    if (set < 0 || set == (w->dflt > 0 ? w->dflt : CG_WEIGHT_DEFAULT))
        return false;
    const char *below[4];
    size_t nb = snapshot_disks_below(s, d->ds.name, below, 4);
    char disks[4 * BD_NAME_MAX + 8] = "";
    size_t at = 0;
    for (size_t i = 0; i < nb && i < 3; i++)
        at += (size_t)snprintf(disks + at, sizeof(disks) - at, "%s%s", i ? ", " : "", below[i]);
    if (nb > 3)
        snprintf(disks + at, sizeof(disks) - at, ", ...");
    int len = snprintf(text, n,
             "%s: io.weight %d on %s does nothing: %s%s%s%s is a layer with no scheduler and no "
             "io.cost of its own, and its I/O is weighed at the disks below it (%s): set the weight "
             "for those", path, set, d->ds.name, d->ds.name, d->bd.layer[0] ? " (" : "", d->bd.layer,
             d->bd.layer[0] ? ")" : "", disks);
    return len > 0;               /* (cut short at n: still said) */
}

/* io.weight on a device where nothing reads it: io.cost not enabled there, and not bfq
 * (which reads io.bfq.weight, a file of its own). */
static void cg_weight_rule(const struct result *r, const struct cgroup_set *set, int k, bool *devs,
                           struct verdicts *v)
{
    const struct cgroup_entry *e = r->cgroups[k].cg;
    if (e->settings.weight_err)
        return;
    cgroup_devices(r, set, k, devs);
    char text[WARN_TEXT_MAX];
    for (size_t di = 0; di < r->ndevs; di++) {
        const struct dev_sample *d = r->devs[di].dev;
        if (!devs[di] || d->bd.partition)
            continue;
        if (snapshot_dev_is_layer(r->cur, d)) {
            if (verdict_cg_layer_weight(r->cur, e->path, &e->settings.weight, d, text, sizeof(text)))
                push_cg(v, W_CG_WEIGHT_IGNORED, (int)di, -1, k, "%s", text);
            continue;
        }
        if (verdict_cg_weight(e->path, &e->settings, &set->costqos, set->costqos_err, d, text,
                              sizeof(text)) == CGJ_IGNORED)
            push_cg(v, W_CG_WEIGHT_IGNORED, (int)di, -1, k, "%s", text);
    }
}

/* The cgroup's tasks held waiting, beside its stall (docs/verdicts.md "cgroup-at-limit"):
 * an asynchronous reader's wait is no stall to PSI or the delays for libaio, so its tasks
 * found in a completion wait count too. Fills why (the evidence, named) and returns the
 * evidence, *who the first waiter (-1), or -1 when nothing says the tasks are held. */
static int cg_held(const struct result *r, const struct cgroup_set *set, int k, char *why, size_t n,
                   int *who)
{
    const struct cgroup_rates *c = &r->cgroups[k];
    *who = -1;
    /* Stalled: its own io.pressure (v2), or without PSI its tasks' summed delay. */
    double stall = !isnan(c->some_pct) ? c->some_pct : c->io_delay_pct;
    if (!isnan(stall) && stall >= CG_LIMIT_PRESSURE) {
        snprintf(why, n, "stalls %.0f%% of the time", stall);
        return EV_RULE;
    }
    if (!set || set->ntasks != r->ntasks)
        return -1;
    /* Measured: the lens's interruptible iowait of its tasks, io_uring's wait. */
    double uring = 0;
    unsigned sampled = 0;
    int first = -1;
    const char *where = "";
    for (size_t ti = 0; ti < r->ntasks; ti++) {
        const struct task_rates *t = &r->tasks[ti];
        if (!task_below(set, ti, k))
            continue;
        if (t->uring_source == DELAY_SRC_BPF && t->uring_wait_pct > 0)
            uring += t->uring_wait_pct;
        if (t->task->uring_read && (t->task->aio_wait || t->task->uring_wait)) {
            if (first < 0) {
                first = (int)ti;
                where = t->task->aio_wait ? "libaio's io_getevents" : "io_uring's completion wait";
            }
            sampled++;
        }
    }
    if (uring >= CG_LIMIT_PRESSURE) {
        snprintf(why, n, "its tasks wait %.0f%% of the time in io_uring for completions (measured)", uring);
        return EV_MEASURED;
    }
    if (first < 0)
        return -1;
    const struct task_sample *s = r->tasks[first].task;
    snprintf(why, n, "%s[%d]%s wait%s for asynchronous completions (in %s, sampled at the refresh)",
             s->comm, (int)s->id, sampled > 1 ? " and others" : "", sampled > 1 ? "" : "s", where);
    *who = first;
    return EV_SAMPLED;
}

/* A rate at its io.max (v1: blkio.throttle) limit, the cgroup's tasks held (stalled, or
 * waiting for asynchronous completions), the device not saturated: the limit, not the
 * disk, is what its tasks wait for. */
static void cg_limit_rule(const struct result *r, const struct cgroup_set *set, int k, struct verdicts *v)
{
    const struct cgroup_rates *c = &r->cgroups[k];
    const struct cgroup_entry *e = c->cg;
    const struct cgroup_settings *st = &e->settings;
    if (st->iomax_err)
        return;
    char why[160];
    int who, ev = cg_held(r, set, k, why, sizeof(why), &who);
    if (ev < 0)
        return;
    for (unsigned i = 0; i < st->iomax.n; i++) {
        const struct cg_limit_row *l = &st->iomax.row[i];
        int di = -1;
        for (size_t j = 0; j < r->ndevs; j++)
            if (r->devs[j].dev->ds.major == l->major && r->devs[j].dev->ds.minor == l->minor)
                di = (int)j;
        if (di < 0 || r->devs[di].saturated != 0)
            continue;
        /* The rates on that device: io.stat's row, else (v1, no io.stat) its tasks' sums. */
        double rate[4] = { (double)NAN, (double)NAN, (double)NAN, (double)NAN };
        for (unsigned j = 0; j < c->ndev; j++)
            if (c->dev[j].major == l->major && c->dev[j].minor == l->minor) {
                rate[0] = c->dev[j].rbps;
                rate[1] = c->dev[j].wbps;
                rate[2] = c->dev[j].riops;
                rate[3] = c->dev[j].wiops;
            }
        if (e->iostat_err && isnan(rate[0]) && isnan(rate[1])) {
            rate[0] = c->read_bps;
            rate[1] = c->write_bps;
        }
        const uint64_t lim[4] = { l->rbps, l->wbps, l->riops, l->wiops };
        static const char *const what[4] = { "rbps", "wbps", "riops", "wiops" };
        for (int q = 0; q < 4; q++) {
            if (lim[q] == CG_UNLIMITED || isnan(rate[q]) || rate[q] < CG_LIMIT_NEAR * (double)lim[q])
                continue;
            push_cg(v, W_CG_AT_LIMIT, di, who, k,
                    "%s is at its %s limit on %s (%.0f of %llu%s) and %s, "
                    "while %s is not saturated: the limit is the cause; raise %s",
                    e->path, what[q], r->devs[di].dev->ds.name, rate[q], (unsigned long long)lim[q],
                    q < 2 ? " B/s" : "/s", why, r->devs[di].dev->ds.name,
                    st->v1 ? "blkio.throttle.*_device" : "io.max");
            v->w[v->n - 1].evidence = (unsigned char)ev;
            break;
        }
    }
}

bool verdict_cg_latency(const char *path, bool has_lat, long depth, const char *dev, char *text,
                        size_t n)
{
    if (!has_lat || depth < 0)
        return false;
    snprintf(text, n, "%s: io.latency limits it to %ld request%s in flight on %s, to protect a "
             "sibling's latency target", path, depth, depth == 1 ? "" : "s", dev);
    return true;
}

/* io.cost and io.latency holding a cgroup back, where io.stat shows it. */
static void cg_iostat_rules(const struct result *r, int k, struct verdicts *v)
{
    const struct cgroup_rates *c = &r->cgroups[k];
    for (unsigned i = 0; i < c->ndev; i++) {
        const struct cgroup_dev_rates *d = &c->dev[i];
        if (d->dev < 0)
            continue;
        const char *dev = r->devs[d->dev].dev->ds.name;
        double wait = (isnan(d->cost_wait_pct) ? 0 : d->cost_wait_pct) +
                      (isnan(d->cost_indelay_pct) ? 0 : d->cost_indelay_pct);
        if (d->has_cost && wait >= CG_COST_WAIT_PCT)
            push_cg(v, W_CG_IOCOST_WAIT, d->dev, -1, k,
                    "%s: io.cost held its I/O on %s back %.0f%% of the interval (cost.wait %.0f%%, "
                    "indelay %.0f%%): its io.weight against its siblings', or the device's io.cost.qos",
                    c->cg->path, dev, wait, isnan(d->cost_wait_pct) ? 0.0 : d->cost_wait_pct,
                    isnan(d->cost_indelay_pct) ? 0.0 : d->cost_indelay_pct);
        char text[WARN_TEXT_MAX];
        if (verdict_cg_latency(c->cg->path, d->has_lat, d->lat_depth, dev, text, sizeof(text)))
            push_cg(v, W_CG_IOLATENCY_THROTTLED, d->dev, -1, k, "%s", text);
    }
}

/* File systems that do cgroup writeback (Documentation/admin-guide/cgroup-v2.rst,
 * "Writeback": ext2, ext4, btrfs, f2fs and xfs; SB_I_CGROUPWB in their fill_super). */
static bool fs_has_cgwb(const char *fs)
{
    static const char *const ok[] = { "ext2", "ext4", "btrfs", "f2fs", "xfs" };
    for (size_t i = 0; i < ARRAY_SIZE(ok); i++)
        if (strcmp(fs, ok[i]) == 0)
            return true;
    return false;
}

const char *verdict_cg_writeback_reason(const struct cgroup_set *set, const struct dev_sample *devs,
                                        size_t ndevs, const char *dev, char *buf, size_t n)
{
    if (set->v1_only)
        return "the io controller is on a v1 hierarchy, which never charges writeback";
    if (set->io_on_v2 == 0 || set->memory_on_v2 == 0) {
        snprintf(buf, n, "the v2 hierarchy lacks the %s controller%s (bound to v1)",
                 set->io_on_v2 == 0 && set->memory_on_v2 == 0 ? "io and memory"
                 : set->io_on_v2 == 0 ? "io" : "memory",
                 set->io_on_v2 == 0 && set->memory_on_v2 == 0 ? "s" : "");
        return buf;
    }
    if (set->io_on_v2 < 0 || set->memory_on_v2 < 0 || set->mounts_truncated)
        return NULL;
    /* Every file system mounted from the device (or its partitions) lacks it. */
    const char *fs = NULL;
    for (unsigned m = 0; m < set->nmounts; m++) {
        for (size_t j = 0; j < ndevs; j++) {
            const struct dev_sample *d = &devs[j];
            if (d->ds.major != set->mounts[m].major || d->ds.minor != set->mounts[m].minor)
                continue;
            if (strcmp(d->bd.disk, dev) != 0 && strcmp(d->ds.name, dev) != 0)
                continue;
            if (fs_has_cgwb(set->mounts[m].fstype))
                return NULL;
            fs = set->mounts[m].fstype;
        }
    }
    if (!fs)
        return NULL;
    snprintf(buf, n, "%s does not do cgroup writeback", fs);
    return buf;
}

bool verdict_sched_reads_request_prio(const char *sched)
{
    /* bfq takes the priority from the task's io_context, never from the request. */
    return !sched || strcmp(sched, "bfq") != 0;
}

void verdict_cg_prio_text(char *buf, size_t n, const char *comm, int pid, struct ioprio_eff own,
                          struct ioprio_eff now, const char *dev, const char *sched,
                          enum cg_prio_policy policy, const char *owner_path)
{
    snprintf(buf, n, "%s[%d] %s/%d becomes %s/%d on %s through io.prio.class %s of %s%s", comm, pid,
             ioprio_class_name(own.cls), own.level, ioprio_class_name(now.cls), now.level, dev,
             cgroup_prio_name(policy), owner_path,
             verdict_sched_reads_request_prio(sched)
                 ? "" : ", but bfq reads the task's own priority, not the request's: no effect there");
}

static void cg_task_rules(const struct result *r, const struct cgroup_set *set, struct verdicts *v)
{
    const struct snapshot *s = r->cur;
    if (!s->tdevs)
        return;
    for (size_t ti = 0; ti < r->ntasks && ti < set->ntasks; ti++) {
        const struct task_rates *t = &r->tasks[ti];
        const struct task_devs *td = &s->tdevs[ti];
        int k = set->task_cg[ti];
        if (k < 0 || !td->known || td->err)
            continue;
        const char *comm = t->task->comm;
        int pid = (int)t->task->id;
        int owner = t->prio.source == IOS_CGROUP ? cgroups_prio_owner(set, ti) : -1;
        for (unsigned j = 0; j < td->n; j++) {
            size_t di = td->idx[j];
            const struct blockdev_info *b = &r->devs[di].dev->bd;
            if (owner >= 0) {
                struct ioprio_eff own = ioprio_effective(t->task->ioprio_raw, t->task->nice, t->task->policy);
                char text[WARN_TEXT_MAX];
                verdict_cg_prio_text(text, sizeof(text), comm, pid, own, t->prio, r->devs[di].dev->ds.name,
                                     b->scheduler, set->v[owner].settings.prio, set->v[owner].path);
                push_cg(v, W_CG_PRIO_CLASS, (int)di, (int)ti, owner, "%s", text);
            }
            char why[128];
            const char *reason;
            if (set->v[k].parent >= 0 && ((td->buffered >> j) & 1u) && t->io_valid && t->write_bps > 0 &&
                (reason = verdict_cg_writeback_reason(set, s->devs, s->ndevs, r->devs[di].dev->ds.name,
                                                      why, sizeof(why))) != NULL)
                push_cg(v, W_CG_WRITEBACK_ROOT, (int)di, (int)ti, k,
                        "%s[%d] in %s writes through the page cache to %s, but its writeback is charged "
                        "to the root cgroup: %s; its cgroup's io limits and weight do not hold for it",
                        comm, pid, set->v[k].path, r->devs[di].dev->ds.name, reason);
        }
    }
}

void cgroup_findings(const struct result *r, struct verdicts *v)
{
    const struct cgroup_set *set = r->cur ? r->cur->cgroups : NULL;
    if (!set || !r->cgroups || r->ncgroups != set->n)
        return;
    bool *devs = xcalloc(r->ndevs ? r->ndevs : 1, sizeof(bool));
    for (size_t k = 0; k < r->ncgroups; k++) {
        cg_weight_rule(r, set, (int)k, devs, v);
        cg_limit_rule(r, set, (int)k, v);
        cg_iostat_rules(r, (int)k, v);
    }
    free(devs);
    cg_task_rules(r, set, v);
}
