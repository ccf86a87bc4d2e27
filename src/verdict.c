/* verdict.c: the rule table (scheduler x priority x queue state -> warnings) and roles. */
#include "verdict.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

#define X_NAME(e, name, sev) [e] = name,
static const char *const code_names[W_NCODES] = { WARNING_CODES(X_NAME) };
#undef X_NAME
#define X_SEV(e, name, sev) [e] = sev,
static const enum severity code_sev[W_NCODES] = { WARNING_CODES(X_SEV) };
#undef X_SEV

const char *warn_code_name(enum warn_code c)
{
    return (unsigned)c < W_NCODES ? code_names[c] : "?";
}

enum severity warn_code_severity(enum warn_code c)
{
    return (unsigned)c < W_NCODES ? code_sev[c] : SEV_INFO;
}

const char *severity_name(enum severity s)
{
    static const char *const names[] = { "info", "warning", "critical" };
    return (unsigned)s < 3 ? names[s] : "?";
}

const char *role_name(enum role r)
{
    static const char *const names[] = { NULL, "cause", "suffer", "both" };
    return (unsigned)r < 4 ? names[r] : NULL;
}

enum sched_reading verdict_sched_reading(const char *sched, struct ioprio_eff prio)
{
    if (ioprio_is_default(prio))
        return SR_DEFAULT;
    /* A device without a scheduler (bio-based) or with none/kyber: no code reads the
     * priority (block/kyber-iosched.c has no ioprio code; none has no code at all). */
    if (!sched || !sched[0] || strcmp(sched, "none") == 0 || strcmp(sched, "kyber") == 0)
        return SR_IGNORED;
    if (strcmp(sched, "bfq") == 0)
        return SR_HONOURED;          /* class strictly, level as weight (8 - level) * 10 */
    if (strcmp(sched, "mq-deadline") == 0) {
        /* dd_rq_ioclass() reads the class bits only: rt, be, idle queues; levels within
         * best-effort are all served alike. */
        if (prio.cls == IOC_BE && prio.level != 4)
            return SR_LEVEL_IGNORED;
        return SR_HONOURED;
    }
    return SR_UNKNOWN_SCHED;
}

const char *verdict_sched_reads(const char *sched)
{
    if (!sched || !sched[0] || strcmp(sched, "none") == 0)
        return "reads no priority: every class and level is served in arrival order";
    if (strcmp(sched, "kyber") == 0)
        return "reads no priority: it orders reads, writes and discards by latency targets only";
    if (strcmp(sched, "mq-deadline") == 0)
        return "reads the class (rt before be before idle) but not the level: be/0 = be/7";
    if (strcmp(sched, "bfq") == 0)
        return "reads class and level: rt, be/0-7 as weights, idle only when others are quiet";
    return "not known to iotriage: what it reads is unknown";
}

const char *sched_reading_name(enum sched_reading r)
{
    switch (r) {
    case SR_DEFAULT: return "default (nothing to honour)";
    case SR_HONOURED: return "honoured";
    case SR_LEVEL_IGNORED: return "class read, level ignored";
    case SR_IGNORED: return "ignored";
    default: return "unknown";
    }
}

static void push(struct verdicts *v, enum warn_code code, int dev, int task, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

static void push(struct verdicts *v, enum warn_code code, int dev, int task, const char *fmt, ...)
{
    if (v->n == v->cap) {
        v->cap = v->cap ? v->cap * 2 : 16;
        v->w = xreallocarray(v->w, v->cap, sizeof(*v->w));
    }
    struct warning *w = &v->w[v->n++];
    w->code = code;
    w->sev = warn_code_severity(code);
    w->dev = dev;
    w->task = task;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(w->text, sizeof(w->text), fmt, ap);
    va_end(ap);
}

static bool offers(const struct blockdev_info *b, const char *sched)
{
    for (unsigned i = 0; i < b->nsched; i++)
        if (strcmp(b->schedulers[i], sched) == 0)
            return true;
    return false;
}

/* "bfq (class and level) or mq-deadline (class)", limited to what the device offers. */
static const char *switch_advice(const struct blockdev_info *b)
{
    bool bfq = offers(b, "bfq"), dl = offers(b, "mq-deadline");
    if (bfq && dl)
        return "switch it to bfq (reads class and level) or mq-deadline (class only)";
    if (bfq)
        return "switch it to bfq (reads class and level)";
    if (dl)
        return "switch it to mq-deadline (reads the class)";
    return "no scheduler that reads priorities is offered (modprobe bfq)";
}

static bool queue_full(const struct dev_rates *d)
{
    long nr = d->dev->bd.nr_requests;
    return d->valid && nr > 0 && !isnan(d->aqu_sz) && d->aqu_sz >= LOTTERY_FULL * (double)nr;
}

static long raised_nr_requests(const struct dev_rates *d)
{
    long nr = d->dev->bd.nr_requests * 2;
    return nr > 2048 ? 2048 : nr;   /* MAX_SCHED_RQ with a scheduler (block/blk-sysfs.c) */
}

static void task_label(const struct task_rates *t, char *buf, size_t n)
{
    snprintf(buf, n, "%s/%d (%s)", ioprio_class_name(t->prio.cls), t->prio.level,
             t->prio.source == IOS_EXPLICIT ? "set" : ioprio_source_name(t->prio.source));
}

/* The scheduler's classes from most to least favoured (none is served as best-effort). */
static int class_rank(enum ioprio_class c)
{
    return c == IOC_RT ? 0 : c == IOC_IDLE ? 2 : 1;
}

/* A task's findings on one device it touches. Names in texts are the kernel's comm,
 * escaped at output time like every other string. */
static void task_on_device(const struct result *r, size_t ti, size_t di, bool buffered_writer,
                           struct verdicts *v)
{
    const struct task_rates *t = &r->tasks[ti];
    const struct dev_rates *d = &r->devs[di];
    const struct blockdev_info *b = &d->dev->bd;
    const char *dev = d->dev->ds.name, *comm = t->task->comm;
    int pid = (int)t->task->id;
    const char *sched = b->scheduler[0] ? b->scheduler : "no scheduler";
    char label[48];
    task_label(t, label, sizeof(label));

    enum sched_reading sr = verdict_sched_reading(b->scheduler, t->prio);
    switch (sr) {
    case SR_DEFAULT:
        return;
    case SR_IGNORED:
        push(v, W_IOPRIO_IGNORED, (int)di, (int)ti,
             "%s[%d] %s is ignored: %s uses %s, which reads no I/O priority; %s, or cap the "
             "others with cgroup io.max", comm, pid, label, dev, sched, switch_advice(b));
        break;
    case SR_LEVEL_IGNORED:
        push(v, W_IOPRIO_LEVEL_IGNORED, (int)di, (int)ti,
             "%s[%d] %s: %s uses mq-deadline, which reads the class but not the level, so "
             "be/%d is served like be/4; use idle class (ionice -c3), bfq, or cgroup io.weight",
             comm, pid, label, dev, t->prio.level);
        break;
    case SR_HONOURED:
    case SR_UNKNOWN_SCHED:
        break;
    }
    if ((sr == SR_HONOURED || sr == SR_LEVEL_IGNORED) && queue_full(d))
        push(v, W_IOPRIO_LOTTERY, (int)di, (int)ti,
             "%s[%d] %s is a lottery on %s: its queue is full (aqu-sz %.1f of nr_requests %ld), "
             "requests wait for a tag in arrival order; raise nr_requests to %ld",
             comm, pid, label, dev, d->aqu_sz, b->nr_requests, raised_nr_requests(d));
    /* Measured by the lens: this task's class is the one the scheduler holds back. */
    const struct lens_dev_interval *l = &d->lens;
    bool held = l->valid && l->held_back &&
                ((int)t->prio.cls == l->held_class ||
                 (l->held_class < 0 && l->top_class >= 0 && class_rank(t->prio.cls) > class_rank((enum ioprio_class)l->top_class)));
    if (held) {
        char ms[48] = "";
        if (!isnan(l->held_sched_ms))
            snprintf(ms, sizeof(ms), "%.0f ms a request, ", l->held_sched_ms);
        push(v, W_IOPRIO_HELD, (int)di, (int)ti,
             "%s[%d] %s waits in %s's scheduler (%s%.1f held on average) while %s I/O is "
             "served: its label is honoured by %s; the device is not saturated",
             comm, pid, label, dev, ms, isnan(l->sched_queue) ? (double)l->held_now : l->sched_queue,
             l->top_class >= 0 ? ioprio_class_name((enum ioprio_class)l->top_class) : "other",
             sched);
    }
    if (d->saturated == 0 && !held)
        push(v, W_IOPRIO_UNSATURATED, (int)di, (int)ti,
             "%s is not saturated (aqu-sz %.1f): %s[%d]'s %s changes nothing now, nothing queues",
             dev, isnan(d->aqu_sz) ? 0.0 : d->aqu_sz, comm, pid, label);
    if (buffered_writer && t->io_valid && t->write_bps > 0)
        push(v, W_IOPRIO_WRITEBACK, (int)di, (int)ti,
             "%s[%d] writes through the page cache to %s: flusher threads write it back at "
             "be/4, not %s; use O_DIRECT, or cgroup io.max/io.weight (writeback is charged to "
             "the cgroup)", comm, pid, dev, label);
}

/* Task ti reads from device di, and every other device it touches read less in all
 * than a tenth of what the task read: its read waits can be laid at di's door. (Its log
 * on the root disk, with a few writes, does not get in the way.) */
static bool reads_only_from(const struct result *r, const struct snapshot *s, size_t ti, size_t di)
{
    const struct task_devs *td = &s->tdevs[ti];
    const struct task_rates *t = &r->tasks[ti];
    if (!td->known || td->err || !t->io_valid)
        return false;
    bool found = false;
    for (unsigned k = 0; k < td->n; k++) {
        const struct dev_rates *o = &r->devs[td->idx[k]];
        if (td->idx[k] == di)
            found = true;
        else if (!o->valid || o->rkb_s * 1024.0 >= 0.1 * t->read_bps)
            return false;
    }
    return found;
}

/* Returns true when the device has a hidden queue. */
static bool device_findings(const struct result *r, size_t di, struct verdicts *v)
{
    const struct dev_rates *d = &r->devs[di];
    const struct blockdev_info *b = &d->dev->bd;
    const char *dev = d->dev->ds.name;
    if (b->partition || !d->valid)
        return false;
    struct ioprio_eff idle = { IOC_IDLE, 7, IOS_EXPLICIT };
    if (queue_full(d) && verdict_sched_reading(b->scheduler, idle) == SR_HONOURED)
        push(v, W_IOPRIO_LOTTERY, (int)di, -1,
             "%s: queue full (aqu-sz %.1f of nr_requests %ld): %s can only order what it holds, "
             "the rest wait for a tag in arrival order; raise nr_requests to %ld",
             dev, d->aqu_sz, b->nr_requests, b->scheduler, raised_nr_requests(d));

    /* Measured by the lens: the time from a bio's submission to its request's
     * allocation is the wait for a tag. When the lens saw enough requests, it decides. */
    const struct lens_dev_interval *l = &d->lens;
    if (l->valid && l->requests >= LENS_SAT_MIN_REQS && !isnan(l->tag_ms)) {
        if (l->tag_ms < HIDDEN_MIN_MS)
            return false;
        push(v, W_HIDDEN_QUEUE, (int)di, -1,
             "%s: requests waited %.1f ms for a tag before the scheduler saw them (measured; "
             "device time %.1f ms, nr_requests %ld%s); raise nr_requests, use a scheduler "
             "that holds them (mq-deadline), or lower the I/O depth",
             dev, l->tag_ms, l->device_ms, b->nr_requests,
             strcmp(b->scheduler, "none") == 0 ? " under none" : "");
        return true;
    }

    /* Hidden queue: what the readers of this device wait per read, against the device's
     * own await. Waiting for a tag happens before the request exists, so diskstats
     * never times it. A reader's reads are estimated from its bytes and the device's
     * mean read size; its waiting from taskstats. (blkio_count cannot serve: a read that
     * first waits for a tag sleeps twice.) */
    const struct snapshot *s = r->cur;
    if (!s->tdevs || isnan(d->r_await) || isnan(d->rareq_sz) || d->rareq_sz <= 0)
        return false;
    /* A wait for a tag needs the tags in use: the requests holding one are what aqu-sz
     * counts. Without that, a reader's longer wait is for something else: an O_DIRECT
     * read first waits for the writeback of dirty pages in its range, for instance, and
     * that is a wait on writes, not on a hidden queue. */
    if (b->nr_requests <= 0 || isnan(d->aqu_sz) || d->aqu_sz < HIDDEN_TAGS_USED * (double)b->nr_requests)
        return false;
    double wait_ms = 0, reads = 0;
    for (size_t ti = 0; ti < r->ntasks; ti++) {
        const struct task_rates *t = &r->tasks[ti];
        /* a delay the kernel over-counted (delta.h: delay_overcount) proves nothing */
        if (!reads_only_from(r, s, ti, di) || !t->delay_valid || t->delay_overcount || !t->io_valid ||
            t->read_bps <= 0)
            continue;
        wait_ms += t->io_delay_pct / 100.0 * 1000.0;
        reads += t->read_bps / (d->rareq_sz * 1024.0);
    }
    if (reads < 1.0)
        return false;
    double wait = wait_ms / reads;
    if (!(wait >= HIDDEN_FACTOR * d->r_await && wait - d->r_await >= HIDDEN_MIN_MS))
        return false;
    push(v, W_HIDDEN_QUEUE, (int)di, -1,
             "%s: readers wait %.1f ms per read but its r_await is %.1f ms: requests wait where "
             "the device statistics cannot see them (for a tag, nr_requests %ld%s); raise "
             "nr_requests, use a scheduler that holds them (mq-deadline), or lower the I/O depth",
             dev, wait, d->r_await, b->nr_requests,
             strcmp(b->scheduler, "none") == 0 ? " under none" : "");
    return true;
}

/* A device is saturated for the roles when its statistics say so, or when a hidden queue
 * shows requests waiting that the statistics cannot see (seen on a loop device under
 * none: 32 requests outstanding, aqu-sz 4 and await at its quiet level). */
static enum role task_role(const struct result *r, size_t ti, const bool *hidden)
{
    const struct task_rates *t = &r->tasks[ti];
    const struct task_devs *td = r->cur->tdevs ? &r->cur->tdevs[ti] : NULL;
    if (!td || !td->known || td->err)
        return ROLE_NONE;
    bool cause = false, on_saturated = false;
    double bps = t->io_valid ? t->read_bps + t->write_bps : 0;
    for (unsigned k = 0; k < td->n; k++) {
        const struct dev_rates *d = &r->devs[td->idx[k]];
        if (d->saturated != 1 && !hidden[td->idx[k]])
            continue;
        on_saturated = true;
        double dev_bps = (d->rkb_s + d->wkb_s) * 1024.0;
        /* A process's bytes are counted against every saturated device it touches: we
         * do not know how it splits them, so this is an upper bound. */
        if (dev_bps > 0 && bps / dev_bps >= ROLE_CAUSE_SHARE)
            cause = true;
    }
    bool suffer = on_saturated && t->delay_valid && t->io_delay_pct >= ROLE_SUFFER_DELAY;
    return cause && suffer ? ROLE_BOTH : cause ? ROLE_CAUSE : suffer ? ROLE_SUFFER : ROLE_NONE;
}

static int cmp_warning(const void *a, const void *b, void *ctx)
{
    const struct result *r = ctx;
    const struct warning *x = a, *y = b;
    if (x->sev != y->sev)
        return x->sev > y->sev ? -1 : 1;
    if (x->dev != y->dev)
        return x->dev < y->dev ? -1 : 1;
    int px = x->task < 0 ? -1 : (int)r->tasks[x->task].task->id;
    int py = y->task < 0 ? -1 : (int)r->tasks[y->task].task->id;
    if (px != py)
        return px < py ? -1 : 1;
    return (int)x->code - (int)y->code;
}

void verdict_compute(const struct result *r, struct verdicts *out)
{
    memset(out, 0, sizeof(*out));
    const struct snapshot *s = r->cur;
    out->nroles = r->ntasks;
    out->roles = xcalloc(r->ntasks ? r->ntasks : 1, sizeof(*out->roles));
    bool *hidden = xcalloc(r->ndevs ? r->ndevs : 1, sizeof(bool));
    for (size_t di = 0; di < r->ndevs; di++)
        hidden[di] = device_findings(r, di, out);
    for (size_t ti = 0; s->tdevs && ti < r->ntasks; ti++) {
        const struct task_devs *td = &s->tdevs[ti];
        out->roles[ti] = task_role(r, ti, hidden);
        if (!td->known || td->err)
            continue;
        for (unsigned k = 0; k < td->n; k++)
            task_on_device(r, ti, td->idx[k], (td->buffered >> k) & 1u, out);
    }
    free(hidden);
    if (out->n)   /* qsort_r wants a non-null array even for no elements */
        qsort_r(out->w, out->n, sizeof(*out->w), cmp_warning, (void *)(uintptr_t)r);
}

void verdicts_free(struct verdicts *v)
{
    free(v->w);
    free(v->roles);
    memset(v, 0, sizeof(*v));
}
