/* SPDX-License-Identifier: GPL-2.0-or-later */
/* verdict.c: the rule table (scheduler x priority x queue state -> warnings) and roles. */
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

bool warn_code_is_fs(enum warn_code c)
{
    return c == W_FS_FULL || c == W_FS_FILLING || c == W_FS_DELETED_OPEN;
}

bool warn_code_may_lack_dev(enum warn_code c)
{
    return warn_code_is_fs(c) || c == W_IO_NOT_BLOCK;
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

const char *evidence_name(enum evidence e)
{
    return e == EV_MEASURED ? "measured" : e == EV_SAMPLED ? "sampled" : "rule";
}

/* A time as the evidence prints it: three significant figures or so. */
static void ms_text(char *buf, size_t n, double ms)
{
    snprintf(buf, n, ms < 10 ? "%.2f ms" : ms < 100 ? "%.1f ms" : "%.0f ms", ms);
}

const char *warn_evidence_text(const struct warning *w, char *buf, size_t n)
{
    if (w->evidence == EV_SAMPLED) {
        /* io_uring's wait: its wait channel at the refresh; a netfs wait: its sampled
         * thread states (D) over the interval */
        snprintf(buf, n, "%s", "sampled: found waiting when its state was read");
        return buf;
    }
    if (w->evidence != EV_MEASURED || !w->m.prio[0]) {
        snprintf(buf, n, "%s", "");
        return buf;
    }
    char a[24], b[24];
    ms_text(a, sizeof(a), w->m.p50_ms);
    ms_text(b, sizeof(b), w->m.vs_p50_ms);
    snprintf(buf, n, "measured: %s p50 %s vs %s %s%s", w->m.prio, a, w->m.vs, b,
             w->contradicts ? "; the rule table says otherwise" : "");
    return buf;
}

void push(struct verdicts *v, enum warn_code code, int dev, int task, const char *fmt, ...)
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
    w->cgroup = -1;
    w->fs = -1;
    w->evidence = EV_RULE;
    w->contradicts = false;
    memset(&w->m, 0, sizeof(w->m));
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(w->text, sizeof(w->text), fmt, ap);
    va_end(ap);
}

bool offers(const struct blockdev_info *b, const char *sched)
{
    for (unsigned i = 0; i < b->nsched; i++)
        if (strcmp(b->schedulers[i], sched) == 0)
            return true;
    return false;
}

/* A scheduler the kernel can load for it, not offered yet (a module never loaded). */
bool loadable(const struct blockdev_info *b, unsigned bit)
{
    return (b->sched_loadable & bit) != 0;
}

/* "bfq (class and level) or mq-deadline (class)", limited to what the device offers or
 * the kernel can load for it: never a scheduler this kernel does not have. */
static const char *switch_advice(const struct blockdev_info *b)
{
    bool bfq = offers(b, "bfq"), dl = offers(b, "mq-deadline");
    bool bfq_mod = !bfq && loadable(b, BD_LOAD_BFQ), dl_mod = !dl && loadable(b, BD_LOAD_DEADLINE);
    if (bfq && dl)
        return "switch it to bfq (reads class and level) or mq-deadline (class only)";
    if (bfq)
        return "switch it to bfq (reads class and level)";
    if (dl && bfq_mod)
        return "switch it to mq-deadline (reads the class) or, after modprobe bfq, to bfq "
               "(class and level)";
    if (dl)
        return "switch it to mq-deadline (reads the class)";
    if (bfq_mod)
        return "modprobe bfq and switch it to bfq (reads class and level)";
    if (dl_mod)
        return "modprobe mq-deadline and switch it to mq-deadline (reads the class)";
    return "this kernel has no scheduler that reads priorities";
}

/* ", bfq" where the device offers bfq, ", bfq (modprobe bfq)" where the kernel can load
 * it, "" where this kernel has none. */
static const char *bfq_option(const struct blockdev_info *b)
{
    return offers(b, "bfq") ? ", bfq" : loadable(b, BD_LOAD_BFQ) ? ", bfq (modprobe bfq)" : "";
}

/* The requests the device's queue can hold: nr_requests is each hardware queue's
 * (block/blk-mq-sched.c gives every hctx its own scheduler tags of that depth, and under
 * none the driver's tags are per hctx too), and aqu-sz counts them all. A device with
 * several (NVMe, virtio) is surely full only when all are: one may fill alone (the
 * submitters all on CPUs mapped to it) while aqu-sz stays below the total, which the
 * lens's tag wait shows (queue_full). Drivers whose hardware queues share one set
 * of tags (BLK_MQ_F_TAG_HCTX_SHARED) give a total the queue never reaches: no lottery is
 * called there by this rule (docs/verdicts.md). -1 unknown. */
static double queue_tags(const struct blockdev_info *b)
{
    if (b->nr_requests <= 0)
        return -1;
    return (double)b->nr_requests * (b->hw_queues > 1 ? b->hw_queues : 1);
}

/* "nr_requests 8", or "nr_requests 8 on each of 2 hardware queues" */
static const char *tags_text(const struct blockdev_info *b, char *buf, size_t n)
{
    if (b->hw_queues > 1)
        snprintf(buf, n, "nr_requests %ld on each of %d hardware queues", b->nr_requests, b->hw_queues);
    else
        snprintf(buf, n, "nr_requests %ld", b->nr_requests);
    return buf;
}

/* Full: the scheduler holds no more requests and the rest wait for a tag. One queue's
 * worth in flight is needed; on a device of several hardware queues, either all of them
 * full on average, or the lens measuring the wait for a tag (one queue filled by
 * submitters on the CPUs mapped to it, the others not). */
static bool queue_full(const struct dev_rates *d)
{
    const struct blockdev_info *b = &d->dev->bd;
    double tags = queue_tags(b);
    if (!d->valid || tags <= 0 || isnan(d->aqu_sz) || d->aqu_sz < LOTTERY_FULL * (double)b->nr_requests)
        return false;
    if (d->aqu_sz >= LOTTERY_FULL * tags)
        return true;
    const struct lens_dev_interval *l = &d->lens;
    return l->valid && l->requests >= LENS_SAT_MIN_REQS && l->tag_ms >= HIDDEN_MIN_MS;
}

static long raised_nr_requests(const struct dev_rates *d)
{
    long nr = d->dev->bd.nr_requests * 2;
    return nr > 2048 ? 2048 : nr;   /* MAX_SCHED_RQ with a scheduler (block/blk-sysfs.c) */
}

static void task_label_of(struct ioprio_eff p, char *buf, size_t n)
{
    snprintf(buf, n, "%s/%d (%s)", ioprio_class_name(p.cls), p.level,
             p.source == IOS_EXPLICIT ? "set" : ioprio_source_name(p.source));
}

static void task_label(const struct task_rates *t, char *buf, size_t n)
{
    task_label_of(t->prio, buf, n);
}

/* The scheduler's classes from most to least favoured (none is served as best-effort). */
static int class_rank(enum ioprio_class c)
{
    return c == IOC_RT ? 0 : c == IOC_IDLE ? 2 : 1;
}

/* ---- Evidence: what the lens measured per priority (delta.h prio_latency) ---- */

enum lat_says { LAT_UNMEASURED = -1, LAT_UNDECIDED, LAT_SAYS_ALIKE, LAT_SAYS_HONOURED };

/* The total time of a priority's requests, when enough of them completed. */
static const struct prio_stage *lat_total(const struct dev_rates *d, const char *name)
{
    for (size_t i = 0; i < d->nlat; i++) {
        const struct prio_stage *t = &d->lat[i].st[LENS_ST_TOTAL];
        if (strcmp(d->lat[i].name, name) == 0)
            return t->count >= LAT_MIN_REQS && t->p50_ms > 0 ? t : NULL;
    }
    return NULL;
}

/* A process at `prio` on device d against best-effort I/O: its priority's requests and
 * the best-effort priority (another level, for a best-effort process) that completed
 * most requests in the interval. Fills *m and says what the two p50s show. */
static enum lat_says lat_compare(const struct dev_rates *d, struct ioprio_eff prio,
                                 struct warn_measure *m)
{
    memset(m, 0, sizeof(*m));
    lens_prio_name((unsigned)IOPRIO_MAKE(prio.cls, prio.level), m->prio, sizeof(m->prio));
    const struct prio_stage *mine = lat_total(d, m->prio), *vs = NULL;
    if (!mine)
        return LAT_UNMEASURED;
    unsigned vs_level = 0;
    for (size_t i = 0; i < d->nlat; i++) {
        const struct prio_latency *l = &d->lat[i];
        unsigned cls = IOPRIO_CLASS_OF(l->prio), level = IOPRIO_LEVEL_OF(l->prio);
        if (cls != IOC_BE || strcmp(l->name, m->prio) == 0)
            continue;
        const struct prio_stage *t = lat_total(d, l->name);
        if (t && (!vs || t->count > vs->count)) {
            vs = t;
            vs_level = level;
            memcpy(m->vs, l->name, sizeof(m->vs));
        }
    }
    if (!vs)
        return LAT_UNMEASURED;
    m->p50_ms = mine->p50_ms;
    m->count = mine->count;
    m->vs_p50_ms = vs->p50_ms;
    m->vs_count = vs->count;
    double hi = num_max(m->p50_ms, m->vs_p50_ms), lo = num_min(m->p50_ms, m->vs_p50_ms);
    if (hi < LAT_ALIKE * lo)
        return LAT_SAYS_ALIKE;
    /* honoured: the less favoured waits longer (rt before be before idle; within
     * best-effort, the higher level) */
    int mine_rank = class_rank(prio.cls), vs_rank = class_rank(IOC_BE);
    bool mine_first = mine_rank != vs_rank ? mine_rank < vs_rank : (unsigned)prio.level < vs_level;
    double favoured = mine_first ? m->p50_ms : m->vs_p50_ms;
    double other = mine_first ? m->vs_p50_ms : m->p50_ms;
    return other >= LAT_DIFFER * favoured ? LAT_SAYS_HONOURED : LAT_UNDECIDED;
}

/* The warning just pushed carries the measurement (says: LAT_UNMEASURED leaves it a rule). */
static void mark_evidence(struct verdicts *v, enum lat_says says, const struct warn_measure *m,
                          bool contradicts)
{
    struct warning *w = &v->w[v->n - 1];
    if (says == LAT_UNMEASURED)
        return;
    w->evidence = EV_MEASURED;
    w->m = *m;
    w->contradicts = contradicts;
}

size_t verdict_dev_path(const struct snapshot *s, const char *top, const char *disk, char *buf,
                        size_t n)
{
    /* the disk itself, or a partition of it (dm over sda1: its slave is the partition) */
    unsigned depth;
    const char *to = snapshot_stack_reach(s, top, disk, &depth);
    const char *p[BLKSTACK_MAX_DEPTH + 2];
    size_t np = to ? blkstack_path(snapshot_dev_stack, s, top, to, p, BLKSTACK_MAX_DEPTH + 1) : 0;
    if (np == 0 || n == 0)
        return 0;
    if (strcmp(p[np - 1], disk) != 0)
        p[np++] = disk;
    size_t o = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < np; i++) {
        int w = snprintf(buf + o, n - o, "%s%s", i ? " -> " : "", p[i]);
        if (w < 0 || (size_t)w >= n - o)
            return 0;
        o += (size_t)w;
    }
    return np;
}

/* How a task's I/O reaches device di, for its verdicts' texts: the path from the
 * stacked device its files are on down to the disk ("dm-1 -> dm-0 -> nb0"), else the
 * disk's name. */
static const char *task_dev_text(const struct result *r, size_t ti, size_t di, char *buf, size_t n)
{
    const struct snapshot *s = r->cur;
    const char *disk = r->devs[di].dev->ds.name;
    const struct task_devs *td = s->tdevs ? &s->tdevs[ti] : NULL;
    if (!td || !td->via_top || td->via_top > s->ndevs)
        return disk;
    for (unsigned k = 0; k < td->n; k++)
        if (td->idx[k] == di && (td->via >> k & 1) &&
            verdict_dev_path(s, s->devs[td->via_top - 1].ds.name, disk, buf, n))
            return buf;
    return disk;
}

static bool same_prio(struct ioprio_eff a, struct ioprio_eff b)
{
    return a.cls == b.cls && (a.cls == IOC_IDLE || a.level == b.level);
}

bool verdict_requests_prio(const struct result *r, size_t ti, size_t di, struct ioprio_eff *out)
{
    const struct snapshot *s = r->cur;
    const struct task_devs *td = s && s->tdevs ? &s->tdevs[ti] : NULL;
    if (!td || !td->lens || !td->lens_prio)
        return false;
    struct ioprio_eff own = r->tasks[ti].prio;
    for (unsigned k = 0; k < td->n; k++) {
        if (td->idx[k] != di)
            continue;
        struct task_prio_bps e[32];
        size_t n = task_lens_prios(s, td, k, e, 32);
        if (n > 32)
            return false;            /* no one priority stands out of that many */
        struct ioprio_eff p[32];
        double total = 0;
        for (size_t i = 0; i < n; i++) {
            enum ioprio_class c = (enum ioprio_class)IOPRIO_CLASS_OF(e[i].prio);
            p[i] = c == IOC_NONE ? own
                 : (struct ioprio_eff){ c, (int)IOPRIO_LEVEL_OF(e[i].prio), IOS_EXPLICIT };
            total += e[i].bps;
        }
        for (size_t i = 0; i < n && total > 0; i++) {
            double b = 0;
            for (size_t j = 0; j < n; j++)
                if (same_prio(p[i], p[j]))
                    b += e[j].bps;
            if (b >= REQ_PRIO_SHARE * total) {
                if (same_prio(p[i], own))
                    return false;
                *out = p[i];
                return true;
            }
        }
        return false;
    }
    return false;
}

static void task_writeback(const struct result *r, size_t ti, size_t di, bool buffered_writer,
                           const char *dev, const char *label, struct verdicts *v)
{
    const struct task_rates *t = &r->tasks[ti];
    if (buffered_writer && t->io_valid && t->write_bps > 0)
        push(v, W_IOPRIO_WRITEBACK, (int)di, (int)ti,
             "%s[%d] writes through the page cache to %s: flusher threads write it back at "
             "be/4, not %s; use O_DIRECT, or cgroup io.max/io.weight (writeback is charged to "
             "the cgroup)", t->task->comm, (int)t->task->id, dev, label);
}

/* ---- A label dropped on the way down a stack (issue #34; docs/verdicts.md) ----
 * A layer that resubmits I/O from its own threads (dm-crypt's writes: kcryptd and
 * dmcrypt_write before 6.9, whose encrypted clone from crypt_alloc_buffer carried no
 * priority) passes the disk requests that are not the process's: the lens sees its bios,
 * with its label, at the layer and not below it. Judged on the lens alone: which levels
 * of the path carried its label in its own context, and what the disk's requests carried
 * (latency_by_prio). */

/* The bytes a second task ti submitted at one depth above device k with its label. */
static double label_bps_at(const struct snapshot *s, const struct task_devs *td, unsigned k,
                           unsigned depth, struct ioprio_eff label)
{
    struct task_prio_bps e[16];
    size_t n = task_lens_prios_at(s, td, k, depth, e, 16);
    double b = 0;
    for (size_t i = 0; i < n && i < 16; i++) {
        enum ioprio_class c = (enum ioprio_class)IOPRIO_CLASS_OF(e[i].prio);
        struct ioprio_eff p = { c, (int)IOPRIO_LEVEL_OF(e[i].prio), IOS_EXPLICIT };
        if (c != IOC_NONE && same_prio(p, label))   /* none: no label at all */
            b += e[i].bps;
    }
    return b;
}

/* The same for `hops` levels below layer (0: the layer's own bios), over every disk of
 * td's below it: a layer over several disks (RAID 0, 5) sends each its share, and its own
 * bytes are kept at one of them (the first its stack reaches: task_devs_lens), so one
 * disk's level below holds a share of what the level above it holds. */
static double label_bps_under(const struct snapshot *s, const struct task_devs *td, const char *layer,
                              unsigned hops, struct ioprio_eff label)
{
    double b = 0;
    for (unsigned k = 0; k < td->n; k++) {
        unsigned dd;
        if (snapshot_stack_reach(s, layer, s->devs[td->idx[k]].ds.name, &dd) && dd >= hops)
            b += label_bps_at(s, td, k, dd - hops, label);
    }
    return b;
}

/* What the scheduler makes of a request of class c: mq-deadline's classes. */
static const char *served_as(unsigned c)
{
    return c == IOC_RT ? "realtime" : c == IOC_IDLE ? "idle" : "best-effort";
}

/* Whether task ti's label was dropped by a layer above disk di; if so its warning is
 * pushed. The disk's scheduler must read priorities (none and kyber read nothing: the
 * label is ignored there whatever arrives, and ioprio-ignored says so). */
static bool label_dropped(const struct result *r, size_t ti, size_t di, struct verdicts *v)
{
    const struct snapshot *s = r->cur;
    const struct task_rates *t = &r->tasks[ti];
    const struct dev_rates *d = &r->devs[di];
    const struct blockdev_info *b = &d->dev->bd;
    const struct task_devs *td = s->tdevs ? &s->tdevs[ti] : NULL;
    struct ioprio_eff label = t->prio;
    enum sched_reading sr = verdict_sched_reading(b->scheduler, label);
    if (!td || !td->lens || !td->lens_prio || !td->via_top || td->via_top > s->ndevs ||
        sr == SR_DEFAULT || sr == SR_IGNORED || sr == SR_UNKNOWN_SCHED)
        return false;
    unsigned k = 0;
    while (k < td->n && td->idx[k] != di)
        k++;
    if (k == td->n || !(td->via >> k & 1))
        return false;
    const char *disk = d->dev->ds.name, *top = s->devs[td->via_top - 1].ds.name;
    unsigned depth;
    const char *reach = snapshot_stack_reach(s, top, disk, &depth);
    const char *p[BLKSTACK_MAX_DEPTH + 2];
    size_t np = reach ? blkstack_path(snapshot_dev_stack, s, top, reach, p, BLKSTACK_MAX_DEPTH + 1) : 0;
    if (np < 2 || np != depth + 1)
        return false;
    /* From the top down: the first layer whose labelled bytes did not go on below it.
     * p[i] is depth np - 1 - i above the disk. */
    size_t at = np;
    double above = 0, below = 0;
    for (size_t i = 0; i + 1 < np && at == np; i++) {
        above = label_bps_under(s, td, p[i], 0, label);
        below = label_bps_under(s, td, p[i], 1, label);
        if (above < DROP_MIN_BPS)
            return false;            /* too little of it there to say */
        if (below < (1 - DROP_SHARE) * above)
            at = i;
    }
    if (at == np)
        return false;
    /* What the disk's requests carried: its priorities other than the label's, none first
     * (a bio resubmitted without one), else the one that completed most requests. A
     * scheduler that reads the request's priority (mq-deadline) is certain
     * to have lost the label only when no request of that class reached the disk at all;
     * bfq reads the io_context of the thread that submits at the disk, never the label's
     * once another thread does. */
    bool bfq = !verdict_sched_reads_request_prio(b->scheduler);
    if (!d->lens.valid)
        return false;
    const struct prio_latency *got = NULL, *mine = NULL;
    for (size_t i = 0; i < d->nlat; i++) {
        const struct prio_latency *l = &d->lat[i];
        enum ioprio_class c = (enum ioprio_class)IOPRIO_CLASS_OF(l->prio);
        struct ioprio_eff lp = { c, (int)IOPRIO_LEVEL_OF(l->prio), IOS_EXPLICIT };
        if (c != IOC_NONE && same_prio(lp, label))
            mine = l;
        else if (!got || c == IOC_NONE ||
                 (IOPRIO_CLASS_OF(got->prio) != IOC_NONE &&
                  l->st[LENS_ST_TOTAL].count > got->st[LENS_ST_TOTAL].count))
            got = l;
    }
    if (mine && !bfq)
        return false;
    if (!got)                        /* bfq: requests of its class, from other threads */
        got = mine;
    if (!got)
        return false;
    char layer[BD_NAME_MAX + 56], path[160], lab[48], tail[200];
    const struct dev_sample *ld = snapshot_dev(s, p[at]);
    if (ld && ld->bd.layer[0])
        snprintf(layer, sizeof(layer), "%s (%s)", p[at], ld->bd.layer);
    else
        snprintf(layer, sizeof(layer), "%s", p[at]);
    if (!verdict_dev_path(s, top, disk, path, sizeof(path)))
        snprintf(path, sizeof(path), "%s", disk);
    task_label(t, lab, sizeof(lab));
    char ln[16];
    lens_prio_name((unsigned)IOPRIO_MAKE(label.cls, label.level), ln, sizeof(ln));
    if (bfq)
        snprintf(tail, sizeof(tail), "go on from other threads and reach %s as %s; bfq serves them "
                 "at those threads' priority, not %s", disk, got->name, ln);
    else
        snprintf(tail, sizeof(tail), "reach %s as %s, which %s serves as %s", disk, got->name,
                 b->scheduler, served_as(IOPRIO_CLASS_OF(got->prio)));
    push(v, W_IOPRIO_DROPPED, (int)di, (int)ti,
         "%s dropped %s[%d]'s %s label on %s: %.0f%% of its bytes there %s", layer, t->task->comm,
         (int)t->task->id, lab, path, 100.0 * (1 - below / above), tail);
    v->w[v->n - 1].evidence = EV_MEASURED;
    return true;
}

/* A task's findings on one device it touches. Names in texts are the kernel's comm,
 * escaped at output time like every other string. */
static void task_on_device(const struct result *r, size_t ti, size_t di, bool buffered_writer,
                           struct verdicts *v)
{
    const struct task_rates *t = &r->tasks[ti];
    const struct dev_rates *d = &r->devs[di];
    const struct blockdev_info *b = &d->dev->bd;
    char path[160];
    const char *dev = task_dev_text(r, ti, di, path, sizeof(path)), *comm = t->task->comm;
    int pid = (int)t->task->id;
    const char *sched = b->scheduler[0] ? b->scheduler : "no scheduler";
    char label[48];
    task_label(t, label, sizeof(label));
    /* A layer above dropped its label: the disk received none or another thread's
     * priority, the default best-effort, which the verdicts below have nothing to judge
     * on (SR_DEFAULT); its writeback through the page cache is its own case. */
    if (label_dropped(r, ti, di, v)) {
        task_writeback(r, ti, di, buffered_writer, dev, label, v);
        return;
    }

    /* bfq takes the priority from the task's io_context, never from the request, so an
     * io.prio.class rewrite does not reach it (KERNEL-FACTS 3): judge the task's own. */
    struct ioprio_eff prio = t->prio;
    if (prio.source == IOS_CGROUP && !verdict_sched_reads_request_prio(b->scheduler)) {
        prio = ioprio_effective(t->task->ioprio_raw, t->task->nice, t->task->policy);
        task_label_of(prio, label, sizeof(label));
    }
    /* Its requests carried a priority of their own (io_uring, libaio; issue #35): a
     * scheduler that reads the request's (all but bfq) is judged on that. */
    struct ioprio_eff rp, at_disk = t->prio;    /* the priority the lens measured it at */
    if (verdict_sched_reads_request_prio(b->scheduler) && verdict_requests_prio(r, ti, di, &rp)) {
        char rn[16];
        lens_prio_name((unsigned)IOPRIO_MAKE(rp.cls, rp.level), rn, sizeof(rn));
        snprintf(label, sizeof(label), "%s (its requests'; task %s/%d)", rn,
                 ioprio_class_name(t->prio.cls), t->prio.level);
        prio = at_disk = rp;
    } else if (b->scheduler[0] && verdict_requests_prio(r, ti, di, &rp)) {
        /* bfq serves a request at its task's priority (bfq_check_ioprio_change() reads
         * the io_context's, never bio->bi_ioprio): the requests' own is not read. The
         * task's is judged below as ever. */
        char rn[16], how[24];
        lens_prio_name((unsigned)IOPRIO_MAKE(rp.cls, rp.level), rn, sizeof(rn));
        if (rp.cls == IOC_IDLE)
            snprintf(how, sizeof(how), "-c3");
        else
            snprintf(how, sizeof(how), "-c%d -n%d", (int)rp.cls, rp.level);
        push(v, W_IOPRIO_IGNORED, (int)di, (int)ti,
             "%s[%d]'s requests carry %s of their own, ignored: %s uses %s, which reads the task's "
             "priority, not the request's, and serves them as the task's %s; set the task's "
             "(ionice %s -p %d), or use mq-deadline, which reads the request's class",
             comm, pid, rn, dev, sched, label, how, pid);
    }
    enum sched_reading sr = verdict_sched_reading(b->scheduler, prio);
    if (sr == SR_DEFAULT)
        return;
    /* What the lens measured for this priority against best-effort I/O on the device.
     * Against the table, the measurement wins while requests queue (LAT_BUSY_AQU). */
    struct warn_measure m;
    enum lat_says says = lat_compare(d, at_disk, &m);
    bool busy = d->valid && d->aqu_sz >= LAT_BUSY_AQU;
    char ma[24] = "", mb[24] = "";
    if (says != LAT_UNMEASURED) {
        ms_text(ma, sizeof(ma), m.p50_ms);
        ms_text(mb, sizeof(mb), m.vs_p50_ms);
    }
    if ((sr == SR_IGNORED || sr == SR_LEVEL_IGNORED) && says == LAT_SAYS_HONOURED && busy) {
        push(v, W_IOPRIO_HONOURED, (int)di, (int)ti,
             "%s[%d] %s is honoured on %s, measured: p50 %s against %s %s while requests queue "
             "(aqu-sz %.1f), though the rule table says %s reads %s",
             comm, pid, label, dev, ma, m.vs, mb, d->aqu_sz, sched,
             sr == SR_IGNORED ? "no priority" : "the class, not the level");
        mark_evidence(v, says, &m, true);
    } else if (sr == SR_IGNORED) {
        push(v, W_IOPRIO_IGNORED, (int)di, (int)ti,
             "%s[%d] %s is ignored: %s uses %s, which reads no I/O priority; %s, or cap the "
             "others with cgroup io.max", comm, pid, label, dev, sched, switch_advice(b));
        mark_evidence(v, says, &m, false);
    } else if (sr == SR_LEVEL_IGNORED) {
        push(v, W_IOPRIO_LEVEL_IGNORED, (int)di, (int)ti,
             "%s[%d] %s: %s uses mq-deadline, which reads the class but not the level, so "
             "be/%d is served like be/4; use idle class (ionice -c3)%s, or cgroup io.weight",
             comm, pid, label, dev, prio.level, bfq_option(b));
        mark_evidence(v, says, &m, false);
    }
    char tags[80];
    if ((sr == SR_HONOURED || sr == SR_LEVEL_IGNORED) && queue_full(d))
        push(v, W_IOPRIO_LOTTERY, (int)di, (int)ti,
             "%s[%d] %s is a lottery on %s: its queue is full (aqu-sz %.1f of %s), "
             "requests wait for a tag in arrival order; raise nr_requests to %ld",
             comm, pid, label, dev, d->aqu_sz, tags_text(b, tags, sizeof(tags)), raised_nr_requests(d));
    /* Measured by the lens: this task's class is the one the scheduler holds back. */
    const struct lens_dev_interval *l = &d->lens;
    bool held = l->valid && l->held_back &&
                ((int)at_disk.cls == l->held_class ||
                 (l->held_class < 0 && l->top_class >= 0 && class_rank(at_disk.cls) > class_rank((enum ioprio_class)l->top_class)));
    if (held) {
        char ms[48] = "";
        if (!isnan(l->held_sched_ms))
            snprintf(ms, sizeof(ms), "%.0f ms a request, ", l->held_sched_ms);
        /* the lens's count of them is unknown when its duty cycle ran (lens.h) */
        double q = !isnan(l->sched_queue) ? l->sched_queue
                 : l->held_now == LENS_HELD_UNKNOWN ? (double)NAN : (double)l->held_now;
        char qs[32] = "? held";
        if (!isnan(q))
            snprintf(qs, sizeof(qs), "%.1f held on average", q);
        push(v, W_IOPRIO_HELD, (int)di, (int)ti,
             "%s[%d] %s waits in %s's scheduler (%s%s) while %s I/O is "
             "served: its label is honoured by %s; the device is not saturated",
             comm, pid, label, dev, ms, qs,
             l->top_class >= 0 ? ioprio_class_name((enum ioprio_class)l->top_class) : "other",
             sched);
        mark_evidence(v, says, &m, false);
    }
    /* The table says honoured, but this priority and best-effort wait alike while
     * requests queue: the scheduler does not act on the label here. */
    if (sr == SR_HONOURED && !held && says == LAT_SAYS_ALIKE && busy) {
        bool level = at_disk.cls == IOC_BE;
        push(v, level ? W_IOPRIO_LEVEL_IGNORED : W_IOPRIO_IGNORED, (int)di, (int)ti,
             "%s[%d] %s changes nothing on %s, measured: p50 %s against %s %s while requests "
             "queue (aqu-sz %.1f), though the rule table says %s honours it",
             comm, pid, label, dev, ma, m.vs, mb, d->aqu_sz, sched);
        mark_evidence(v, says, &m, true);
    }
    if (d->saturated == 0 && !held)
        push(v, W_IOPRIO_UNSATURATED, (int)di, (int)ti,
             "%s is not saturated (aqu-sz %.1f): %s[%d]'s %s changes nothing now, nothing queues",
             dev, isnan(d->aqu_sz) ? 0.0 : d->aqu_sz, comm, pid, label);
    task_writeback(r, ti, di, buffered_writer, dev, label, v);
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
    char tags[80];
    if (queue_full(d) && verdict_sched_reading(b->scheduler, idle) == SR_HONOURED)
        push(v, W_IOPRIO_LOTTERY, (int)di, -1,
             "%s: queue full (aqu-sz %.1f of %s): %s can only order what it holds, "
             "the rest wait for a tag in arrival order; raise nr_requests to %ld",
             dev, d->aqu_sz, tags_text(b, tags, sizeof(tags)), b->scheduler, raised_nr_requests(d));

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
        v->w[v->n - 1].evidence = EV_MEASURED;   /* the tag wait, no priorities compared */
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
    double all_tags = queue_tags(b);
    if (all_tags <= 0 || isnan(d->aqu_sz) || d->aqu_sz < HIDDEN_TAGS_USED * all_tags)
        return false;
    double wait_ms = 0, reads = 0;
    for (size_t ti = 0; ti < r->ntasks; ti++) {
        const struct task_rates *t = &r->tasks[ti];
        /* a delay the kernel over-counted (delta.h: delay_overcount) proves nothing, nor
         * does an estimate from sampled states, too coarse for a mean wait per read */
        if (!reads_only_from(r, s, ti, di) || !t->delay_valid || t->delay_overcount || !t->io_valid ||
            t->read_bps <= 0 || t->io_delay_source == DELAY_SRC_SAMPLED)
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
static enum role task_role(const struct result *r, size_t ti, const bool *hidden,
                           const double *lens_inflight)
{
    const struct task_rates *t = &r->tasks[ti];
    const struct task_devs *td = r->cur->tdevs ? &r->cur->tdevs[ti] : NULL;
    if (!td || !td->known || td->err)
        return ROLE_NONE;
    bool cause = false, on_saturated = false, async_wait = false;
    double bps = t->io_valid ? t->read_bps + t->write_bps : 0;
    for (unsigned k = 0; k < td->n; k++) {
        const struct dev_rates *d = &r->devs[td->idx[k]];
        if (d->saturated != 1 && !hidden[td->idx[k]])
            continue;
        on_saturated = true;
        double dev_bps = (d->rkb_s + d->wkb_s) * 1024.0;
        /* With the lens, what the process submitted to this device, and what kernel
         * threads wrote there for pages it dirtied (the flusher's writeback: its writes,
         * submitted later by another task): exact. Without it, its bytes are counted
         * against every saturated device it touches: we do not know how it splits them,
         * so this is an upper bound. */
        double mine = bps;
        if (td->lens) {
            double wb = dev_writeback_of(d, t->task->tgid);
            mine = task_lens_bps(r->cur, td, k) + (isnan(wb) ? 0 : wb);
        }
        if (dev_bps > 0 && mine / dev_bps >= ROLE_CAUSE_SHARE)
            cause = true;
        /* Its requests' own wait there, whatever its engine (the lens; iowait misses an
         * asynchronous submitter's): in flight a fifth of the time or more, mostly
         * behind others' requests. Others' requests: aqu-sz counts them from their tag
         * on, the lens from their bio's submission, a wait for a tag included (under
         * none with 16 synchronous readers on 4 tags, aqu-sz 4 and 16 timed in flight):
         * the larger of the two, so that a reader of 3 waiting behind 16 is not taken
         * for most of a queue of 4. */
        const struct task_async *a = td->lens && td->lens_wait ? task_lens_async_of(r->cur, td, k) : NULL;
        double all = num_max(d->aqu_sz, lens_inflight[td->idx[k]]);
        if (a && !isnan(a->await_ms) && a->in_flight >= ROLE_SUFFER_INFLIGHT &&
            all > 0 && a->in_flight <= ROLE_SUFFER_OWN_SHARE * all)
            async_wait = true;
    }
    /* A device outside its list that kernel threads write its dirtied pages to (a
     * filesystem with an anonymous st_dev, a file it closed): the writes are its own
     * there too. It is not a device it waits on: no suffer from it. */
    for (size_t di = 0; td->lens && !cause && di < r->ndevs; di++) {
        const struct dev_rates *d = &r->devs[di];
        bool listed = false;
        for (unsigned k = 0; k < td->n && !listed; k++)
            listed = td->idx[k] == di;
        /* a layer's writeback is its disks' (their rows have it): judged there */
        if (listed || d->dev->bd.partition || (d->saturated != 1 && !hidden[di]) ||
            snapshot_dev_is_layer(r->cur, d->dev))
            continue;
        double dev_bps = (d->rkb_s + d->wkb_s) * 1024.0;
        double wb = dev_writeback_of(d, t->task->tgid);
        if (dev_bps > 0 && wb / dev_bps >= ROLE_CAUSE_SHARE)
            cause = true;
    }
    /* io_uring's completion wait is not a wait on the device: with the lens it is out of
     * io_delay_pct already (delta.c); without it, taskstats counts it, so a task found
     * asleep there (sampled) has no block wait to suffer from. */
    bool uring = t->uring_source == DELAY_SRC_SAMPLED && t->uring_wait_pct > 0 &&
                 t->io_delay_source == DELAY_SRC_TASKSTATS;
    /* Nor a wait on a filesystem with no block device (netfs_waiter): not this device's. */
    bool netfs = on_saturated && netfs_waiter(r, ti, NULL);
    bool suffer = (on_saturated && !uring && !netfs && t->delay_valid &&
                   t->io_delay_pct >= ROLE_SUFFER_DELAY) ||
                  async_wait;
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
    if (x->fs != y->fs)
        return x->fs < y->fs ? -1 : 1;
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
    /* every process's requests in flight per device, as the lens timed them */
    double *lens_inflight = xcalloc(r->ndevs ? r->ndevs : 1, sizeof(double));
    for (size_t ti = 0; s->tdevs && ti < r->ntasks; ti++) {
        const struct task_devs *td = &s->tdevs[ti];
        for (unsigned k = 0; td->known && !td->err && td->lens && td->lens_wait && k < td->n; k++) {
            const struct task_async *a = task_lens_async_of(s, td, k);
            if (a && (td->from_lens >> k & 1) && td->idx[k] < r->ndevs && !isnan(a->in_flight))
                lens_inflight[td->idx[k]] += a->in_flight;
        }
    }
    for (size_t fi = 0; fi < r->nfss; fi++)
        fs_findings(r, fi, out);
    for (size_t ti = 0; s->tdevs && ti < r->ntasks; ti++) {
        const struct task_devs *td = &s->tdevs[ti];
        out->roles[ti] = task_role(r, ti, hidden, lens_inflight);
        if (!td->known || td->err)
            continue;
        for (unsigned k = 0; k < td->n; k++)
            task_on_device(r, ti, td->idx[k], (td->buffered >> k) & 1u, out);
    }
    free(hidden);
    free(lens_inflight);
    pressure_findings(r, out);
    cgroup_findings(r, out);
    if (out->n)   /* qsort_r wants a non-null array even for no elements */
        qsort_r(out->w, out->n, sizeof(*out->w), cmp_warning, (void *)(uintptr_t)r);
}

void verdicts_free(struct verdicts *v)
{
    free(v->w);
    free(v->roles);
    memset(v, 0, sizeof(*v));
}

void warn_index_build(struct warn_index *ix, const struct verdicts *v, size_t ntasks)
{
    ix->first = xcalloc(ntasks + 2, sizeof(size_t));
    ix->order = xcalloc(v->n ? v->n : 1, sizeof(size_t));
    /* counting sort by task; device findings (task -1) are not indexed */
    for (size_t i = 0; i < v->n; i++)
        if (v->w[i].task >= 0)
            ix->first[(size_t)v->w[i].task + 2]++;
    for (size_t t = 2; t < ntasks + 2; t++)
        ix->first[t] += ix->first[t - 1];
    for (size_t i = 0; i < v->n; i++)
        if (v->w[i].task >= 0)
            ix->order[ix->first[(size_t)v->w[i].task + 1]++] = i;
}

void warn_index_free(struct warn_index *ix)
{
    free(ix->first);
    free(ix->order);
}
