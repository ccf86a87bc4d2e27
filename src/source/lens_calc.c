/* SPDX-License-Identifier: GPL-2.0-or-later */
/* lens_calc.c: the pure arithmetic on lens readings (source/lens.h). No BPF here, so
 * tests/unit/test_lens.c exercises all of it without privileges. */
#include "source/lens.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "source/ioprio.h"
#include "util/num.h"

uint32_t lens_entries_for(size_t tasks, uint32_t lo, uint32_t hi)
{
    if (tasks == 0 || tasks >= hi)
        return hi;
    uint32_t n = lo;
    while (n < hi && n < 2 * tasks)
        n *= 2;
    return n;
}

uint32_t lens_rq_sets_for(size_t requests)
{
    if (requests == 0 || requests >= LENS_RQ_SETS / 2)
        return LENS_RQ_SETS;
    uint32_t n = LENS_RQ_SETS_MIN;
    while (n < 2 * requests)
        n *= 2;
    return n;
}

/* Bucket k holds [lo, hi) microseconds: [0, 1) for k = 0, [2^(k-1), 2^k) after. */
static void bucket_bounds(size_t k, double *lo, double *hi)
{
    if (k == 0) {
        *lo = 0;
        *hi = 1;
        return;
    }
    *lo = num_pow2((int)k - 1);
    *hi = num_pow2((int)k);
}

double lens_hist_quantile(const uint64_t *hist, size_t nbuckets, double q)
{
    uint64_t total = 0;
    for (size_t k = 0; k < nbuckets; k++)
        total += hist[k];
    if (total == 0 || !(q > 0) || !(q < 1))
        return (double)NAN;
    /* The rank of the quantile among the requests, then where in its bucket it falls,
     * as if the bucket's requests were spread evenly over it. */
    double rank = q * (double)total;
    double seen = 0;
    for (size_t k = 0; k < nbuckets; k++) {
        if (hist[k] == 0)
            continue;
        double c = (double)hist[k];
        if (seen + c >= rank) {
            double lo, hi;
            bucket_bounds(k, &lo, &hi);
            double frac = (rank - seen) / c;
            return (lo + frac * (hi - lo)) / 1000.0;
        }
        seen += c;
    }
    double lo, hi;
    bucket_bounds(nbuckets - 1, &lo, &hi);
    return hi / 1000.0;
}

int lens_stage_delta(const struct lens_stage_sum *prev, const struct lens_stage_sum *cur,
                     struct lens_stage_sum *out)
{
    memset(out, 0, sizeof *out);
    if (cur->count < prev->count || cur->sum_ns < prev->sum_ns)
        return -ERANGE;
    struct lens_stage_sum d;
    d.count = cur->count - prev->count;
    d.sum_ns = cur->sum_ns - prev->sum_ns;
    for (size_t k = 0; k < LENS_HIST; k++) {
        if (cur->hist[k] < prev->hist[k])
            return -ERANGE;
        d.hist[k] = cur->hist[k] - prev->hist[k];
    }
    *out = d;
    return 0;
}

double lens_stage_mean_ms(const struct lens_stage_sum *s)
{
    if (s->count == 0)
        return (double)NAN;
    return (double)s->sum_ns / (double)s->count / 1e6;
}

const char *lens_prio_name(unsigned prio, char *buf, size_t len)
{
    unsigned cls = IOPRIO_CLASS_OF(prio), level = IOPRIO_LEVEL_OF(prio);
    switch (cls) {
    case IOC_NONE: snprintf(buf, len, "none"); break;
    case IOC_IDLE: snprintf(buf, len, "idle"); break;  /* idle has no levels that matter */
    case IOC_RT:   snprintf(buf, len, "rt/%u", level); break;
    case IOC_BE:   snprintf(buf, len, "be/%u", level); break;
    default:       snprintf(buf, len, "class%u/%u", cls, level); break;
    }
    return buf;
}

const struct lens_wait_row *lens_wait_find(const struct lens_wait_row *rows, size_t n, pid_t id)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (rows[mid].id == id)
            return &rows[mid];
        if (rows[mid].id < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

const struct lens_devstat *lens_devstat_find(const struct lens_reading *r, unsigned major,
                                             unsigned minor)
{
    for (size_t i = 0; i < r->ndevs; i++)
        if (r->devs[i].major == major && r->devs[i].minor == minor)
            return &r->devs[i];
    return NULL;
}

int lens_depth_fit(const struct lens_devstat *prev, const struct lens_devstat *cur,
                   struct lens_depth_fit *out)
{
    out->n = out->depth = out->device_ms = out->depth_sd = (double)NAN;
    out->slope_ms = out->elasticity = (double)NAN;
    uint64_t p_n = prev ? prev->n : 0, p_sd = prev ? prev->sd : 0, p_sdd = prev ? prev->sdd : 0;
    uint64_t p_sy = prev ? prev->sy : 0, p_sdy = prev ? prev->sdy : 0;
    if (cur->n < p_n || cur->sd < p_sd || cur->sdd < p_sdd || cur->sy < p_sy || cur->sdy < p_sdy)
        return -ERANGE;
    double n = (double)(cur->n - p_n);
    out->n = n;
    if (n < 1)
        return -ENODATA;
    double sd = (double)(cur->sd - p_sd), sdd = (double)(cur->sdd - p_sdd);
    double sy = (double)(cur->sy - p_sy), sdy = (double)(cur->sdy - p_sdy);
    double md = sd / n, my = sy / n;                 /* my in us */
    double var = sdd / n - md * md;
    if (var < 0)
        var = 0;                                     /* rounding */
    out->depth = md;
    out->device_ms = my / 1000.0;
    out->depth_sd = num_sqrt(var);
    if (var > 0) {
        double slope = (sdy / n - md * my) / var;    /* us per request ahead */
        out->slope_ms = slope / 1000.0;
        if (my > 0)
            out->elasticity = slope * md / my;
    }
    return 0;
}

double lens_duty(const struct lens_reading *prev, const struct lens_reading *cur)
{
    /* prev without a read time: the empty reading at the lens's attachment (delta.c) */
    bool from_start = !prev || prev->mono <= 0;
    double t0 = from_start ? cur->since : prev->mono;
    double d0 = from_start ? 0 : prev->detached_s;
    double span = cur->mono - t0;
    if (!(span > 0))
        return (double)NAN;
    double att = span - (cur->detached_s - d0);
    return num_min(1.0, num_max(0.0, att / span));
}

uint64_t lens_duty_phase_ns(const struct lens_duty_ctl *c)
{
    return c->cycling ? LENS_DUTY_PERIOD_NS : LENS_DUTY_PROBE_NS;
}

bool lens_duty_step(struct lens_duty_ctl *c, uint64_t span_ns, uint64_t requests)
{
    if (span_ns == 0)
        return false;
    double rate = (double)requests * 1e9 / (double)span_ns;
    bool past = c->cycling ? rate < LENS_DUTY_LOW : rate > LENS_TIMED_RATE;
    c->hits = past ? c->hits + 1 : 0;
    if (c->hits < LENS_DUTY_CHECKS)
        return false;
    c->hits = 0;
    c->cycling = !c->cycling;
    return true;
}

double lens_done(const struct lens_devstat *prev, const struct lens_devstat *cur)
{
    uint64_t p = prev ? prev->done : 0;
    if (cur->done < p)
        return -1;
    return (double)(cur->done - p);
}

double lens_sampled_share(const struct lens_devstat *prev, const struct lens_devstat *cur,
                          double count)
{
    double done = lens_done(prev, cur);
    uint64_t pt = prev ? prev->timed : 0;
    if (!(done > 0) || cur->timed < pt)
        return (double)NAN;
    double timed = (double)(cur->timed - pt);
    if (timed == 0 && count > 0)
        return (double)NAN;          /* a reading without the count of timed requests */
    /* Requests issued before the interval and timed in it can make the ratio pass 1. */
    return num_min(1.0, timed / done);
}

double lens_wait_pct(const struct lens_wait_row *prev, const struct lens_wait_row *cur,
                     double interval_s)
{
    if (!cur || !(interval_s > 0))
        return (double)NAN;
    uint64_t p = prev ? prev->wait_ns : 0;
    if (cur->wait_ns < p)
        return (double)NAN;
    return (double)(cur->wait_ns - p) / (interval_s * 1e9) * 100.0;
}

double lens_wait_intr_pct(const struct lens_wait_row *prev, const struct lens_wait_row *cur,
                          double interval_s)
{
    if (!cur || !(interval_s > 0))
        return (double)NAN;
    uint64_t p = prev ? prev->intr_ns : 0, pw = prev ? prev->wait_ns : 0;
    if (cur->intr_ns < p || cur->wait_ns < pw || cur->intr_ns - p > cur->wait_ns - pw)
        return (double)NAN;
    return (double)(cur->intr_ns - p) / (interval_s * 1e9) * 100.0;
}

static const struct lens_devprio *dp_find(const struct lens_reading *r, unsigned major,
                                          unsigned minor, unsigned prio)
{
    if (!r)
        return NULL;
    for (size_t i = 0; i < r->ndp; i++)
        if (r->dp[i].major == major && r->dp[i].minor == minor && r->dp[i].prio == prio)
            return &r->dp[i];
    return NULL;
}

void lens_stage_add(struct lens_stage_sum *to, const struct lens_stage_sum *s)
{
    to->count += s->count;
    to->sum_ns += s->sum_ns;
    for (size_t k = 0; k < LENS_HIST; k++)
        to->hist[k] += s->hist[k];
}

void lens_stage_scale(struct lens_stage_sum *s, double f)
{
    uint64_t n = 0;
    for (size_t k = 0; k < LENS_HIST; k++) {
        s->hist[k] = (uint64_t)num_llround((double)s->hist[k] * f);
        n += s->hist[k];
    }
    s->count = n;
    s->sum_ns = (uint64_t)num_llround((double)s->sum_ns * f);
}

/* The scheduler's classes from most to least favoured; none is served as best-effort
 * (mq-deadline's ioprio_class_to_prio). */
static int class_rank(unsigned cls)
{
    switch (cls) {
    case IOC_RT:   return 0;
    case IOC_IDLE: return 2;
    default:       return 1;
    }
}

int lens_dev_interval(const struct lens_reading *prev, const struct lens_reading *cur,
                      unsigned major, unsigned minor, double interval_s, double aqu_sz,
                      struct lens_dev_interval *out)
{
    memset(out, 0, sizeof *out);
    out->requests = out->tag_ms = out->sched_ms = out->device_ms = out->total_ms = (double)NAN;
    out->device_p05_ms = out->device_p50_ms = out->device_p99_ms = (double)NAN;
    out->total_p50_ms = out->total_p99_ms = out->busy_depth = (double)NAN;
    out->top_device_ms = out->growth = out->held_sched_ms = out->service_ms = (double)NAN;
    out->top_busy_depth = out->top_sched_ms = out->sched_queue = out->sampled = (double)NAN;
    out->duty = lens_duty(prev, cur);
    out->top_class = out->held_class = -1;
    out->saturated = -1;
    lens_depth_fit(NULL, &(struct lens_devstat){0}, &out->fit);   /* all (double)NAN */
    const struct lens_devstat *dc = lens_devstat_find(cur, major, minor);
    const struct lens_devstat *dpv = prev ? lens_devstat_find(prev, major, minor) : NULL;
    bool any = dc != NULL;
    /* Stages summed over priorities, and per class (rank) for the served/held test. */
    struct lens_stage_sum all[LENS_NSTAGES], cls_dev[3], cls_sched[3];
    memset(all, 0, sizeof all);
    memset(cls_dev, 0, sizeof cls_dev);
    memset(cls_sched, 0, sizeof cls_sched);
    for (size_t i = 0; i < cur->ndp; i++) {
        const struct lens_devprio *c = &cur->dp[i];
        if (c->major != major || c->minor != minor)
            continue;
        any = true;
        const struct lens_devprio *p = dp_find(prev, major, minor, c->prio);
        int rank = class_rank((c->prio >> 13) & 7);
        for (int st = 0; st < LENS_NSTAGES; st++) {
            struct lens_stage_sum d;
            static const struct lens_stage_sum zero;
            if (lens_stage_delta(p ? &p->st[st] : &zero, &c->st[st], &d) < 0)
                continue;            /* a reset: this priority says nothing this time */
            lens_stage_add(&all[st], &d);
            if (st == LENS_ST_DEVICE)
                lens_stage_add(&cls_dev[rank], &d);
            if (st == LENS_ST_SCHED)
                lens_stage_add(&cls_sched[rank], &d);
        }
    }
    if (!any)
        return -ENODATA;
    out->valid = true;
    const struct lens_stage_sum *dev = &all[LENS_ST_DEVICE];
    out->requests = (double)dev->count;
    /* The duty cycle ran: the counts are the windows'. The requests issued in them are
     * the timed ones weighted (each window's completions of requests it issued; the
     * device's done count also holds completions of requests issued between windows),
     * and divided by the attached share they estimate the interval's. */
    bool cyc = out->duty < 1;
    double scale = cyc && out->duty > 0 ? 1 / out->duty : 1;
    if (cyc)
        out->held_now = LENS_HELD_UNKNOWN;
    if (cyc) {
        out->requests = out->duty > 0 ? (double)dev->count * scale : (double)NAN;
        if (dc && dev->count > 0) {
            uint64_t pt = dpv ? dpv->timed : 0;
            if (dc->timed >= pt)
                out->sampled = num_min(1.0, (double)(dc->timed - pt) / out->requests);
        }
    } else if (dc) {
        /* Exact when the readings count the issues (every reading of the lens does); the
         * weighted count is an estimate once requests are sampled. */
        double done = lens_done(dpv, dc);
        if (done > 0 || (done == 0 && dev->count == 0))
            out->requests = done;
        out->sampled = lens_sampled_share(dpv, dc, (double)dev->count);
    }
    out->tag_ms = lens_stage_mean_ms(&all[LENS_ST_TAG]);
    out->sched_ms = lens_stage_mean_ms(&all[LENS_ST_SCHED]);
    out->device_ms = lens_stage_mean_ms(dev);
    out->total_ms = lens_stage_mean_ms(&all[LENS_ST_TOTAL]);
    out->device_p05_ms = lens_hist_quantile(dev->hist, LENS_HIST, 0.05);
    out->device_p50_ms = lens_hist_quantile(dev->hist, LENS_HIST, 0.50);
    out->device_p99_ms = lens_hist_quantile(dev->hist, LENS_HIST, 0.99);
    out->total_p50_ms = lens_hist_quantile(all[LENS_ST_TOTAL].hist, LENS_HIST, 0.50);
    out->total_p99_ms = lens_hist_quantile(all[LENS_ST_TOTAL].hist, LENS_HIST, 0.99);
    /* Little's law over the time the programs watched */
    if (interval_s > 0 && !(cyc && out->duty <= 0))
        out->busy_depth = (double)dev->sum_ns * scale / (interval_s * 1e9);
    if (!isnan(aqu_sz) && !isnan(out->busy_depth))
        out->sched_queue = num_max(0.0, aqu_sz - out->busy_depth);
    if (dc)
        lens_depth_fit(dpv, dc, &out->fit);

    static const int rank_class[3] = { IOC_RT, IOC_BE, IOC_IDLE };
    int top = -1;
    for (int k = 0; k < 3 && top < 0; k++)
        if (cls_dev[k].count >= LENS_SERVED_MIN)
            top = k;
    if (top >= 0) {
        out->top_class = rank_class[top];
        out->top_device_ms = lens_stage_mean_ms(&cls_dev[top]);
        if (interval_s > 0)
            out->top_busy_depth = (double)cls_dev[top].sum_ns * scale / (interval_s * 1e9);
        double svc = (double)NAN;
        if (dc && dc->min_dev_ns)
            svc = (double)dc->min_dev_ns / 1e6;
        if (!isnan(svc) && out->device_p05_ms / 4 > svc)
            svc = out->device_p05_ms / 4;
        out->service_ms = svc;
        if (svc > 0)
            out->growth = out->top_device_ms / svc;
        /* A lower class held in the scheduler while this one is served: requests of it
         * sit there now, or those that left waited far longer there than the served
         * class's did. The held requests that have not left yet are the clearest sign:
         * under mq-deadline an idle request may wait up to prio_aging_expire (10 s). */
        double top_sched = lens_stage_mean_ms(&cls_sched[top]);
        out->top_sched_ms = top_sched;
        if (isnan(top_sched))
            top_sched = 0;
        for (int k = 2; k > top && out->held_class < 0; k--) {
            int cls = rank_class[k];
            uint64_t now_q = 0;
            /* (the scheduler's counts of a window do not hold what it inserted before) */
            if (dc && !cyc) {
                /* none (class 0) is served as best-effort: counted with it */
                for (unsigned c = 0; c < 4; c++)
                    if (class_rank(c) == k && dc->sched_in[c] > dc->sched_out[c])
                        now_q += dc->sched_in[c] - dc->sched_out[c];
            }
            double ms = lens_stage_mean_ms(&cls_sched[k]);
            bool waited = !isnan(ms) && ms >= LENS_HELD_MIN_MS && ms >= LENS_HELD_FACTOR * top_sched;
            if (now_q > 0 || waited) {
                out->held_back = true;
                out->held_class = cls;
                out->held_sched_ms = ms;
                out->held_now = cyc ? LENS_HELD_UNKNOWN : now_q;
            }
        }
        /* Requests held since before the lens started are not in its counts, but they
         * are in aqu-sz, which counts a request from its allocation: what aqu-sz holds
         * beyond the device's own queue sits in the scheduler. */
        if (!out->held_back && out->sched_queue >= LENS_HELD_QUEUE)
            out->held_back = true;
    }
    out->saturated = lens_judge_saturation(out);
    return 0;
}

int lens_judge_saturation(const struct lens_dev_interval *d)
{
    if (!d->valid || !(d->requests >= LENS_SAT_MIN_REQS))
        return -1;
    /* Fewer than LENS_SAT_MIN_DEPTH requests at the device on average: it has free
     * slots; whatever waits, waits elsewhere (the scheduler, the application). */
    if (d->busy_depth < LENS_SAT_MIN_DEPTH)
        return 0;
    /* The scheduler holds a lower class back on purpose (mq-deadline, bfq) while the
     * served class alone keeps fewer than LENS_SAT_MIN_DEPTH requests at the device:
     * the device has room for the served I/O; what it carries beyond that is the held
     * class let through in the gaps. A label honoured, not a saturated device, even
     * when those gaps make the served requests wait behind a burst. */
    if (d->held_back && d->top_busy_depth < LENS_SAT_MIN_DEPTH)
        return 0;
    /* The served class's requests take far longer at the device than its own service
     * time: they wait there behind the others in flight. */
    if (d->growth >= LENS_SAT_GROWTH)
        return 1;
    /* Or they wait before it, for a tag, at least one service time: every slot of the
     * queue is taken (under none, the device's own; seen on the lab disk with
     * nr_requests 4: 7.5 ms for a tag, 2.5 ms in the device). */
    if (d->service_ms > 0 && d->tag_ms >= LENS_SAT_TAG * d->service_ms)
        return 1;
    /* Or, with a scheduler, the served class keeps the device busy and its own requests
     * wait in the scheduler at least one service time: the device's slots (its driver's
     * tags) are all taken and the served I/O queues behind itself. A driver that takes
     * only what it serves at once shows no growth at the device (scsi_debug, 4 commands,
     * 32 requests of one class under mq-deadline on 6.1: 32.8 ms in the scheduler, 4.4 at
     * the device, growth 1.1). A class held back waits there too, but the served one
     * does not. */
    if (d->service_ms > 0 && d->top_busy_depth >= LENS_SAT_MIN_DEPTH &&
        d->top_sched_ms >= LENS_SAT_TAG * d->service_ms)
        return 1;
    /* Or, without a service time to compare with (a device saturated since before the
     * lens, in strict FIFO: no request ever found it free), each request's own depth at
     * issue says it: with every slot taken a request waits for those ahead of it, so its
     * device time grows with their number (Little's law per request: elasticity 1);
     * with free slots it does not depend on it (0). The fit needs the depths to spread
     * (LENS_FIT_MIN_SD); on the lab disk in FIFO (3 at once, 16-17 in flight) 0.3 to 4.9
     * with an sd of 0.2-0.9 on a quiet machine, with free slots (32 at once, the same
     * load) -0.35 to -0.03. The converse does not hold: a flat fit does not prove free
     * slots (FIFO intervals on a loaded machine gave -0.37 to 0.7, CPU delays in the
     * lab's server swamping the depth's effect), so it never says "not saturated". */
    const struct lens_depth_fit *f = &d->fit;
    bool fit = f->n >= LENS_SAT_MIN_REQS && f->depth_sd >= LENS_FIT_MIN_SD && !isnan(f->elasticity);
    if (fit && f->elasticity >= LENS_SAT_ELASTIC)
        return 1;
    if (d->held_back)
        return 0;
    return -1;
}

int lens_submit_cmp(const void *a, const void *b)
{
    const struct lens_submit_row *x = a, *y = b;
    if (x->tgid != y->tgid)
        return (x->tgid > y->tgid) - (x->tgid < y->tgid);
    if (x->major != y->major)
        return (x->major > y->major) - (x->major < y->major);
    if (x->minor != y->minor)
        return (x->minor > y->minor) - (x->minor < y->minor);
    return (x->prio > y->prio) - (x->prio < y->prio);
}

/* The first row of tgid in rows sorted by lens_submit_cmp (n when none). */
static size_t submit_first(const struct lens_submit_row *rows, size_t n, pid_t tgid)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (rows[mid].tgid < tgid)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* A cumulative (bytes, bios) row's interval, in place over the current figures; false
 * when it did not move. Absent before (prev NULL): made in the interval (a row evicted and
 * made again after the previous reading holds only the interval's bytes too). Smaller
 * than before: it was evicted and made again within the interval, so its count is a
 * lower bound. */
static bool counts_delta(const uint64_t *pbytes, const uint64_t *pbios, uint64_t *bytes,
                         uint64_t *bios)
{
    if (pbytes && *bytes >= *pbytes && *bios >= *pbios) {
        *bytes -= *pbytes;
        *bios -= *pbios;
    }
    return *bytes || *bios;
}

size_t lens_submit_interval(const struct lens_reading *prev, const struct lens_reading *cur,
                            pid_t tgid, struct lens_submit_row *out, size_t max)
{
    if (!prev || !cur)
        return 0;
    size_t got = 0;
    size_t j = submit_first(prev->subs, prev->nsubs, tgid);
    for (size_t i = submit_first(cur->subs, cur->nsubs, tgid);
         i < cur->nsubs && cur->subs[i].tgid == tgid; i++) {
        const struct lens_submit_row *c = &cur->subs[i];
        while (j < prev->nsubs && prev->subs[j].tgid == tgid && lens_submit_cmp(&prev->subs[j], c) < 0)
            j++;
        const struct lens_submit_row *p =
            j < prev->nsubs && lens_submit_cmp(&prev->subs[j], c) == 0 ? &prev->subs[j] : NULL;
        struct lens_submit_row d = *c;
        /* Smaller than before in any figure (the completions' too): evicted and made
         * again within the interval, its figures the interval's (a lower bound), as in
         * counts_delta. */
        if (p && c->bytes >= p->bytes && c->bios >= p->bios && c->wait_ns >= p->wait_ns &&
            c->rqs >= p->rqs) {
            d.bytes -= p->bytes;
            d.bios -= p->bios;
            d.wait_ns -= p->wait_ns;
            d.rqs -= p->rqs;
        }
        if (!d.bytes && !d.bios && !d.rqs)
            continue;
        if (got < max)
            out[got] = d;
        got++;
    }
    return got;
}

void lens_submit_wait(double wait_ns, double rqs, double itv_s, double *in_flight,
                      double *await_ms)
{
    *in_flight = *await_ms = (double)NAN;
    if (!(itv_s > 0))
        return;
    *in_flight = wait_ns / 1e9 / itv_s;
    if (rqs > 0)
        *await_ms = wait_ns / rqs / 1e6;
}

int lens_wb_cmp(const void *a, const void *b)
{
    const struct lens_wb_row *x = a, *y = b;
#define CMP(f) if (x->f != y->f) return (x->f > y->f) - (x->f < y->f)
    CMP(major);
    CMP(minor);
    CMP(tgid);
    CMP(cgid);
    CMP(blkcg);
#undef CMP
    return strncmp(x->comm, y->comm, sizeof(x->comm));
}

size_t lens_wb_interval(const struct lens_reading *prev, const struct lens_reading *cur,
                        struct lens_wb_row *out, size_t max)
{
    if (!prev || !cur)
        return 0;
    size_t got = 0, j = 0;
    for (size_t i = 0; i < cur->nwbs; i++) {
        const struct lens_wb_row *c = &cur->wbs[i];
        while (j < prev->nwbs && lens_wb_cmp(&prev->wbs[j], c) < 0)
            j++;
        const struct lens_wb_row *p = j < prev->nwbs && lens_wb_cmp(&prev->wbs[j], c) == 0 ? &prev->wbs[j] : NULL;
        struct lens_wb_row d = *c;
        if (!counts_delta(p ? &p->bytes : NULL, p ? &p->bios : NULL, &d.bytes, &d.bios))
            continue;
        if (got < max)
            out[got] = d;
        got++;
    }
    return got;
}
