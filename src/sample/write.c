/* SPDX-License-Identifier: GPL-2.0-or-later */
/* sample/write.c: one sample as one JSON line (sample/sample.h). The keys are a contract
 * (docs/json.md); store/replay.c and sample/decode*.c read them back. */
#include <errno.h>
#include <math.h>
#include <sched.h>
#include <string.h>

#include "source/cgroups.h"
#include "util/escape.h"
#include "sample/sample.h"
#include "util.h"
#include "util/fmt.h"
#include "source/taskstats.h"

/* A tiny writer: it tracks only whether a separator is due at the current depth. */
struct jw {
    FILE *f;
    int depth;
    bool first[16];
};

static void jw_sep(struct jw *w)
{
    if (!w->first[w->depth])
        putc(',', w->f);
    w->first[w->depth] = false;
}

static void jw_open(struct jw *w, const char *key, char c)
{
    if (key) {
        jw_sep(w);
        esc_json(w->f, key, strlen(key));
        putc(':', w->f);
    } else if (w->depth > 0) {
        jw_sep(w);
    }
    putc(c, w->f);
    w->first[++w->depth] = true;
}

static void jw_close(struct jw *w, char c)
{
    putc(c, w->f);
    w->depth--;
}

static void jw_key(struct jw *w, const char *key)
{
    jw_sep(w);
    if (key) {
        esc_json(w->f, key, strlen(key));
        putc(':', w->f);
    }
}

/* Numbers without printf's machinery: a dozen per task per sample (out/output.h). */
static void put_ll(FILE *f, long long v)
{
    char buf[24];
    fwrite(buf, 1, fmt_int(buf, v), f);
}

static void jw_num(struct jw *w, const char *key, double v)
{
    jw_key(w, key);
    if (isnan(v) || isinf(v)) {
        fputs("null", w->f);
    } else {
        char buf[330];               /* %.3f of DBL_MAX: 313 characters */
        fwrite(buf, 1, fmt_fixed(buf, sizeof(buf), v, 3), w->f);
    }
}

static void jw_int(struct jw *w, const char *key, long long v)
{
    jw_key(w, key);
    put_ll(w->f, v);
}

/* -1 (sysfs did not say) becomes null */
static void jw_known(struct jw *w, const char *key, long long v)
{
    jw_key(w, key);
    if (v < 0)
        fputs("null", w->f);
    else
        put_ll(w->f, v);
}

static void jw_bool(struct jw *w, const char *key, int v)   /* v < 0: null */
{
    jw_key(w, key);
    fputs(v < 0 ? "null" : v ? "true" : "false", w->f);
}

static void jw_str(struct jw *w, const char *key, const char *s)
{
    jw_key(w, key);
    if (s)
        esc_json(w->f, s, strlen(s));
    else
        fputs("null", w->f);
}

static const char *policy_name(int p)
{
    switch (p) {
    case SCHED_OTHER: return "other";
    case SCHED_FIFO: return "fifo";
    case SCHED_RR: return "rr";
    case SCHED_BATCH: return "batch";
    case SCHED_IDLE: return "idle";
    case 6: return "deadline";
    default: return "unknown";
    }
}

static void json_psi(struct jw *w, const struct result *r)
{
    jw_open(w, "psi", '{');
    for (int k = 0; k < PSI_NRES; k++) {
        const struct psi_sample *s = &r->cur->psi[k];
        if (s->err) {
            jw_key(w, psi_resource_name[k]);
            fputs("null", w->f);
            continue;
        }
        jw_open(w, psi_resource_name[k], '{');
        const struct psi_line *lines[2] = { &s->some, &s->full };
        const char *names[2] = { "some", "full" };
        const double pct[2] = { r->psi[k].some_pct, r->psi[k].full_pct };
        for (int i = 0; i < 2; i++) {
            if (!lines[i]->valid) {
                jw_key(w, names[i]);
                fputs("null", w->f);
                continue;
            }
            jw_open(w, names[i], '{');
            jw_num(w, "avg10", lines[i]->avg10);
            jw_num(w, "avg60", lines[i]->avg60);
            jw_num(w, "avg300", lines[i]->avg300);
            jw_num(w, "pct", pct[i]);
            jw_int(w, "total_us", (long long)lines[i]->total_us);
            jw_close(w, '}');
        }
        jw_close(w, '}');
    }
    jw_close(w, '}');
}

static void json_warning(struct jw *w, const struct result *r, const struct warning *x, bool who)
{
    jw_open(w, NULL, '{');
    jw_str(w, "code", warn_code_name(x->code));
    jw_str(w, "severity", severity_name(x->sev));
    jw_str(w, "device", x->dev >= 0 ? r->devs[x->dev].dev->ds.name : NULL);
    if (x->fs >= 0 && (size_t)x->fs < r->nfss)     /* fs-* codes (out_json_fs below) */
        jw_str(w, "mount", r->fss[x->fs].fs->fs.m.mount);
    if (who && x->task >= 0) {
        const struct task_sample *t = r->tasks[x->task].task;
        jw_int(w, "pid", t->id);
        jw_str(w, "comm", t->comm);
    }
    jw_str(w, "evidence", evidence_name((enum evidence)x->evidence));
    if (x->evidence == EV_MEASURED && x->m.prio[0]) {
        jw_open(w, "measured", '{');
        jw_str(w, "prio", x->m.prio);
        jw_num(w, "p50_ms", x->m.p50_ms);
        jw_int(w, "count", (long long)x->m.count);
        jw_str(w, "vs", x->m.vs);
        jw_num(w, "vs_p50_ms", x->m.vs_p50_ms);
        jw_int(w, "vs_count", (long long)x->m.vs_count);
        jw_close(w, '}');
    } else {
        jw_key(w, "measured");
        fputs("null", w->f);
    }
    jw_bool(w, "contradicts_rules", x->contradicts);
    jw_str(w, "text", x->text);
    jw_close(w, '}');
}

/* ---- The BPF lens's keys (docs/json.md: lens, stages, saturated_source,
 * io_delay_source) ---- */
static void json_lens_stages(struct jw *w, const struct dev_rates *d)
{
    const struct lens_dev_interval *l = &d->lens;
    jw_str(w, "saturated_source", sat_source_name(d->sat_source));
    if (!l->valid) {
        jw_key(w, "stages");
        fputs("null", w->f);
        return;
    }
    jw_open(w, "stages", '{');
    jw_num(w, "requests", l->requests);
    jw_num(w, "sampled", l->sampled);
    jw_num(w, "duty", l->duty);
    jw_num(w, "tag_ms", l->tag_ms);
    jw_num(w, "sched_ms", l->sched_ms);
    jw_num(w, "device_ms", l->device_ms);
    jw_num(w, "total_ms", l->total_ms);
    jw_num(w, "device_p50_ms", l->device_p50_ms);
    jw_num(w, "device_p99_ms", l->device_p99_ms);
    jw_num(w, "total_p50_ms", l->total_p50_ms);
    jw_num(w, "total_p99_ms", l->total_p99_ms);
    jw_num(w, "depth", l->fit.depth);
    jw_num(w, "depth_sd", l->fit.depth_sd);
    jw_num(w, "elasticity", l->fit.elasticity);
    jw_num(w, "busy_depth", l->busy_depth);
    jw_num(w, "service_ms", l->service_ms);
    jw_num(w, "growth", l->growth);
    jw_str(w, "served_class", l->top_class >= 0 ? ioprio_class_name((enum ioprio_class)l->top_class) : NULL);
    jw_num(w, "sched_queue", l->sched_queue);
    jw_bool(w, "held_back", l->held_back);
    jw_str(w, "held_class", l->held_class >= 0 ? ioprio_class_name((enum ioprio_class)l->held_class) : NULL);
    jw_num(w, "held_sched_ms", l->held_sched_ms);
    if (l->held_now == LENS_HELD_UNKNOWN) {
        jw_key(w, "held_now");
        fputs("null", w->f);
    } else {
        jw_int(w, "held_now", (long long)l->held_now);
    }
    jw_bool(w, "saturated", l->saturated);
    jw_close(w, '}');
}

/* One stage's figures, and its buckets up to the last that holds a request: a recording
 * keeps the histogram (docs/json.md "latency_by_prio"), never the requests. */
static void json_prio_stage(struct jw *w, const struct prio_stage *s)
{
    jw_int(w, "count", (long long)s->count);
    jw_num(w, "p50_ms", s->p50_ms);
    jw_num(w, "p90_ms", s->p90_ms);
    jw_num(w, "p99_ms", s->p99_ms);
    jw_num(w, "mean_ms", s->mean_ms);
    size_t n = LENS_HIST;
    while (n > 0 && s->hist[n - 1] == 0)
        n--;
    jw_open(w, "hist", '[');
    for (size_t k = 0; k < n; k++)
        jw_int(w, NULL, (long long)s->hist[k]);
    jw_close(w, ']');
}

/* Latency per I/O priority: null exactly when `stages` is (no lens, a partition, the
 * first sample), so a reader tells "nothing completed" ({}) from "not measured". */
static void json_latency_by_prio(struct jw *w, const struct dev_rates *d)
{
    if (!d->lens.valid) {
        jw_key(w, "latency_by_prio");
        fputs("null", w->f);
        return;
    }
    static const char *const stage_key[] = { [LENS_ST_TAG] = "tag", [LENS_ST_SCHED] = "sched",
                                              [LENS_ST_DEVICE] = "device" };
    jw_open(w, "latency_by_prio", '{');
    for (size_t i = 0; i < d->nlat; i++) {
        const struct prio_latency *l = &d->lat[i];
        jw_open(w, l->name, '{');
        json_prio_stage(w, &l->st[LENS_ST_TOTAL]);
        jw_open(w, "stages", '{');
        for (int st = LENS_ST_TAG; st <= LENS_ST_DEVICE; st++) {
            jw_open(w, stage_key[st], '{');
            json_prio_stage(w, &l->st[st]);
            jw_close(w, '}');
        }
        jw_close(w, '}');
        jw_close(w, '}');
    }
    jw_close(w, '}');
}

static void json_lens_state(struct jw *w, const struct snapshot *c)
{
    jw_open(w, "lens", '{');
    jw_bool(w, "on", c->lens_on);
    jw_str(w, "reason", c->lens_on || !c->lens_msg[0] ? NULL : c->lens_msg);
    jw_str(w, "loader", c->lens_on && c->lens_loader[0] ? c->lens_loader : NULL);
    jw_close(w, '}');
}
/* ---- end of the lens's keys ---- */

static const char *const wb_from_name[] = { [WB_FROM_NONE] = NULL, [WB_FROM_LENS] = "lens",
                                            [WB_FROM_BLKCG] = "blkcg" };

/* Whom the kernel threads' writes were for: null when not known (no lens, no dirtying
 * tracepoint, the first sample), [] when they wrote nothing. */
static void json_writeback_by(struct jw *w, const struct dev_rates *d)
{
    if (!d->wb_valid) {
        jw_key(w, "writeback_by");
        fputs("null", w->f);
        return;
    }
    jw_open(w, "writeback_by", '[');
    for (size_t i = 0; i < d->nwb; i++) {
        const struct wb_share *s = &d->wb[i];
        jw_open(w, NULL, '{');
        if (s->pid)
            jw_int(w, "pid", s->pid);
        else
            jw_str(w, "pid", NULL);
        jw_str(w, "comm", s->comm[0] ? s->comm : NULL);
        jw_str(w, "cgroup", s->cgroup[0] ? s->cgroup : NULL);
        if (s->cgid)
            jw_int(w, "cgroup_id", (long long)s->cgid);
        else
            jw_str(w, "cgroup_id", NULL);
        jw_str(w, "cgroup_from", s->from <= WB_FROM_BLKCG ? wb_from_name[s->from] : NULL);
        jw_num(w, "bps", s->bps);
        jw_close(w, '}');
    }
    jw_close(w, ']');
}

/* A device's slaves or holders by name, as sysfs lists them; left out when unknown, as
 * in a recording made before they were kept (which is then written back as it was). */
static void json_stack_list(struct jw *w, const char *key, const struct blkstack_list *l)
{
    if (!l->known)
        return;
    jw_open(w, key, '[');
    for (unsigned i = 0; i < l->n; i++)
        jw_str(w, NULL, l->name[i]);
    jw_close(w, ']');
}

static void json_device(struct jw *w, const struct result *r, size_t di, const struct verdicts *v)
{
    const struct dev_rates *d = &r->devs[di];
    const struct dev_sample *s = d->dev;
    const struct blockdev_info *b = &s->bd;
    jw_open(w, NULL, '{');
    jw_str(w, "name", s->ds.name);
    jw_int(w, "major", s->ds.major);
    jw_int(w, "minor", s->ds.minor);
    jw_bool(w, "partition", b->partition);
    jw_str(w, "disk", b->disk);
    jw_str(w, "scheduler", b->scheduler[0] ? b->scheduler : NULL);
    jw_open(w, "schedulers", '[');
    for (unsigned i = 0; i < b->nsched; i++)
        jw_str(w, NULL, b->schedulers[i]);
    jw_close(w, ']');
    jw_known(w, "nr_requests", b->nr_requests);
    jw_known(w, "rotational", b->rotational);
    jw_known(w, "hw_queues", b->hw_queues);
    json_stack_list(w, "slaves", &s->stack.slaves);
    json_stack_list(w, "holders", &s->stack.holders);
    jw_key(w, "inflight");
    if (b->inflight_r < 0)
        fputs("null", w->f);
    else
        fprintf(w->f, "%ld", b->inflight_r + b->inflight_w);
    jw_open(w, "tunables", '{');
    for (unsigned i = 0; i < b->ntunables; i++)
        jw_str(w, b->tunables[i].name, b->tunables[i].value);
    jw_close(w, '}');
    jw_num(w, "r_s", d->r_s);
    jw_num(w, "w_s", d->w_s);
    jw_num(w, "d_s", d->d_s);
    jw_num(w, "f_s", d->f_s);
    jw_num(w, "rkb_s", d->rkb_s);
    jw_num(w, "wkb_s", d->wkb_s);
    jw_num(w, "dkb_s", d->dkb_s);
    jw_num(w, "rrqm_s", d->rrqm_s);
    jw_num(w, "wrqm_s", d->wrqm_s);
    jw_num(w, "drqm_s", d->drqm_s);
    jw_num(w, "rrqm_pct", d->rrqm_pct);
    jw_num(w, "wrqm_pct", d->wrqm_pct);
    jw_num(w, "drqm_pct", d->drqm_pct);
    jw_num(w, "r_await", d->r_await);
    jw_num(w, "w_await", d->w_await);
    jw_num(w, "d_await", d->d_await);
    jw_num(w, "f_await", d->f_await);
    jw_num(w, "rareq_sz", d->rareq_sz);
    jw_num(w, "wareq_sz", d->wareq_sz);
    jw_num(w, "dareq_sz", d->dareq_sz);
    jw_num(w, "aqu_sz", d->aqu_sz);
    jw_num(w, "util", d->util);
    jw_num(w, "quiet_await", d->quiet_await);
    jw_bool(w, "saturated", d->saturated);
    jw_bool(w, "reset", d->reset);
    json_lens_stages(w, d);
    jw_num(w, "writeback_bps", d->kernel_bps);
    json_writeback_by(w, d);
    json_latency_by_prio(w, d);
    jw_open(w, "warnings", '[');
    for (size_t i = 0; i < v->n; i++)
        if (v->w[i].task < 0 && v->w[i].dev == (int)di)
            json_warning(w, r, &v->w[i], false);
    jw_close(w, ']');
    jw_close(w, '}');
}

static void json_task_cgroup(struct jw *w, const struct result *r, size_t ti);   /* the cgroup lens, below */

/* Bytes a second kernel threads wrote per device for pages this process dirtied
 * (the devices' writeback_by rows of its tgid): null when no device's split is known,
 * and in thread mode (the rows are per process, as lens_bytes). */
static void json_task_writeback(struct jw *w, const struct result *r, pid_t tgid)
{
    bool known = false;
    for (size_t i = 0; i < r->ndevs && !known && !r->cur->threads; i++)
        known = r->devs[i].wb_valid;
    if (!known) {
        jw_key(w, "lens_writeback");
        fputs("null", w->f);
        return;
    }
    jw_open(w, "lens_writeback", '{');
    for (size_t i = 0; i < r->ndevs; i++) {
        double bps = dev_writeback_of(&r->devs[i], tgid);
        if (bps > 0)
            jw_num(w, r->devs[i].dev->ds.name, bps);
    }
    jw_close(w, '}');
}

/* The same bytes by the priority its bios carried (issue #35: an io_uring or libaio
 * request may carry its own), per device as lens_bytes; null as lens_bytes is. */
static void json_task_prios(struct jw *w, const struct result *r, const struct task_devs *td)
{
    if (!td || !td->known || td->err || !td->lens || !td->lens_prio) {
        jw_key(w, "requests_by_prio");
        fputs("null", w->f);
        return;
    }
    jw_open(w, "requests_by_prio", '{');
    for (unsigned k = 0; k < td->n; k++) {
        if (!(td->from_lens >> k & 1))
            continue;
        struct task_prio_bps e[32];
        size_t n = task_lens_prios(r->cur, td, k, e, 32);
        jw_open(w, r->devs[td->idx[k]].dev->ds.name, '{');
        for (size_t i = 0; i < n && i < 32; i++) {
            char name[16];
            jw_num(w, lens_prio_name(e[i].prio, name, sizeof(name)), e[i].bps);
        }
        jw_close(w, '}');
    }
    jw_close(w, '}');
}

/* Its asynchronous wait per device of lens_bytes (issue #35): requests in flight on
 * average and their mean latency from submission to completion (null: none completed);
 * null as lens_bytes is, and when not known (a recording made before it). */
static void json_task_async(struct jw *w, const struct result *r, const struct task_devs *td)
{
    if (!td || !td->known || td->err || !td->lens || !td->lens_wait) {
        jw_key(w, "requests_wait");
        fputs("null", w->f);
        return;
    }
    jw_open(w, "requests_wait", '{');
    for (unsigned k = 0; k < td->n; k++) {
        const struct task_async *a = task_lens_async_of(r->cur, td, k);
        if (!(td->from_lens >> k & 1) || !a)
            continue;
        jw_open(w, r->devs[td->idx[k]].dev->ds.name, '{');
        jw_num(w, "in_flight", a->in_flight);
        jw_num(w, "await_ms", a->await_ms);
        jw_close(w, '}');
    }
    jw_close(w, '}');
}

static void json_task(struct jw *w, const struct result *r, size_t ti, const struct verdicts *v,
                      const struct warn_index *ix)
{
    const struct task_rates *t = &r->tasks[ti];
    const struct task_sample *s = t->task;
    bool threads = r->cur->threads;
    jw_open(w, NULL, '{');
    jw_int(w, "pid", s->id);
    if (threads)
        jw_int(w, "tgid", s->tgid);
    jw_str(w, "comm", s->comm);
    jw_str(w, "cmdline", s->cmdline);
    jw_str(w, "user", s->user[0] ? s->user : NULL);
    jw_int(w, "uid", s->uid);
    jw_int(w, "nice", s->nice);
    jw_str(w, "policy", policy_name(s->policy));
    jw_int(w, "start_ticks", (long long)s->start_ticks);
    jw_num(w, "read_bps", t->read_bps);
    jw_num(w, "write_bps", t->write_bps);
    jw_num(w, "cancelled_write_bps", t->cancelled_write_bps);
    jw_str(w, "io_error", s->io_err ? source_err_text(s->io_err) : NULL);
    jw_num(w, "io_delay_pct", t->io_delay_pct);
    jw_str(w, "io_delay_source", delay_source_name((enum delay_source)t->io_delay_source));
    jw_num(w, "swapin_delay_pct", t->swapin_delay_pct);
    jw_num(w, "uring_wait_pct", t->uring_wait_pct);
    jw_str(w, "uring_wait_source", delay_source_name((enum delay_source)t->uring_source));
    jw_num(w, "blkio_avg_ms", t->blkio_avg_ms);
    jw_bool(w, "delay_overcount", t->delay_overcount);
    jw_open(w, "ioprio", '{');
    if (s->ioprio_raw >= 0) {
        jw_str(w, "class", ioprio_class_name((enum ioprio_class)IOPRIO_CLASS_OF(s->ioprio_raw)));
        jw_int(w, "level", IOPRIO_LEVEL_OF(s->ioprio_raw));
        jw_int(w, "raw", s->ioprio_raw);
    } else {
        jw_str(w, "class", NULL);
        jw_str(w, "level", NULL);
        jw_str(w, "raw", NULL);
    }
    jw_str(w, "effective_class", ioprio_class_name(t->prio.cls));
    jw_int(w, "effective_level", t->prio.level);
    jw_str(w, "source", ioprio_source_name(t->prio.source));
    jw_close(w, '}');
    const struct task_devs *td = r->cur->tdevs ? &r->cur->tdevs[ti] : NULL;
    if (!td || !td->known || td->err) {
        jw_key(w, "devices");
        fputs("null", w->f);
        jw_str(w, "devices_error", td && td->err ? source_err_text(td->err) : NULL);
        jw_str(w, "devices_from", NULL);
    } else {
        jw_open(w, "devices", '[');
        for (unsigned k = 0; k < td->n; k++)
            jw_str(w, NULL, r->devs[td->idx[k]].dev->ds.name);
        jw_close(w, ']');
        jw_str(w, "devices_from", task_devs_source(td));
    }
    /* Bytes a second it submitted to each device, measured at submission by the lens;
     * null when the lens did not see the interval. */
    if (td && td->known && !td->err && td->lens) {
        jw_open(w, "lens_bytes", '{');
        for (unsigned k = 0; k < td->n; k++)
            if (td->from_lens >> k & 1)
                jw_num(w, r->devs[td->idx[k]].dev->ds.name, task_lens_bps(r->cur, td, k));
        jw_close(w, '}');
    } else {
        jw_key(w, "lens_bytes");
        fputs("null", w->f);
    }
    json_task_prios(w, r, td);
    json_task_async(w, r, td);
    json_task_writeback(w, r, s->tgid);
    json_task_cgroup(w, r, ti);
    jw_str(w, "role", role_name(ti < v->nroles ? v->roles[ti] : ROLE_NONE));
    jw_open(w, "warnings", '[');
    for (size_t k = ix->first[ti]; k < ix->first[ti + 1]; k++)
        json_warning(w, r, &v->w[ix->order[k]], false);
    jw_close(w, ']');
    jw_close(w, '}');
}

/* ---- The cgroup lens (cgroups.h; docs/json.md "cgroups") -------------------------------- */

/* A device by major:minor: its name when listed, else "MAJ:MIN". */
static void jw_dev(struct jw *w, const char *key, const struct result *r, unsigned major, unsigned minor)
{
    for (size_t i = 0; i < r->ndevs; i++)
        if (r->devs[i].dev->ds.major == major && r->devs[i].dev->ds.minor == minor) {
            jw_str(w, key, r->devs[i].dev->ds.name);
            return;
        }
    char buf[32];
    snprintf(buf, sizeof(buf), "%u:%u", major, minor);
    jw_str(w, key, buf);
}

static void jw_limit(struct jw *w, const char *key, uint64_t v)
{
    if (v == CG_UNLIMITED)
        jw_str(w, key, NULL);
    else
        jw_int(w, key, (long long)v);
}

static void json_cg_weight(struct jw *w, const char *key, const struct result *r, int err,
                           const struct cg_weight *x)
{
    if (err) {
        jw_key(w, key);
        fputs("null", w->f);
        return;
    }
    jw_open(w, key, '{');
    jw_known(w, "default", x->dflt);
    jw_open(w, "devices", '[');
    for (unsigned i = 0; i < x->n; i++) {
        jw_open(w, NULL, '{');
        jw_dev(w, "device", r, x->row[i].major, x->row[i].minor);
        jw_int(w, "weight", x->row[i].weight);
        jw_close(w, '}');
    }
    jw_close(w, ']');
    jw_close(w, '}');
}

static void json_cg_settings(struct jw *w, const struct result *r, const struct cgroup_entry *e)
{
    const struct cgroup_settings *s = &e->settings;
    jw_open(w, "settings", '{');
    jw_str(w, "hierarchy", s->v1 ? "v1-blkio" : "v2");
    if (s->iomax_err) {
        jw_key(w, "io_max");
        fputs("null", w->f);
    } else {
        jw_open(w, "io_max", '[');
        for (unsigned i = 0; i < s->iomax.n; i++) {
            const struct cg_limit_row *l = &s->iomax.row[i];
            jw_open(w, NULL, '{');
            jw_dev(w, "device", r, l->major, l->minor);
            jw_limit(w, "rbps", l->rbps);
            jw_limit(w, "wbps", l->wbps);
            jw_limit(w, "riops", l->riops);
            jw_limit(w, "wiops", l->wiops);
            jw_close(w, '}');
        }
        jw_close(w, ']');
    }
    json_cg_weight(w, "io_weight", r, s->weight_err, &s->weight);
    json_cg_weight(w, "io_bfq_weight", r, s->bfq_weight_err, &s->bfq_weight);
    jw_str(w, "io_prio_class", s->prio_err ? NULL : cgroup_prio_name(s->prio));
    /* Why the v2 controls are absent, when they are. */
    const char *why = NULL;
    if (s->v1)
        why = "no cgroup v2 hierarchy: only the v1 blkio throttle limits are known";
    else if (s->iomax_err == -ENOENT && e->parent < 0)
        why = "the root cgroup has no io controls";
    else if (s->iomax_err == -ENOENT)
        why = "the io controller is not enabled for this cgroup (or is bound to a v1 hierarchy)";
    else if (s->iomax_err)
        why = source_err_text(s->iomax_err);
    jw_str(w, "unavailable", why);
    jw_close(w, '}');
}

static void json_cgroup(struct jw *w, const struct result *r, size_t k, const struct verdicts *v)
{
    const struct cgroup_rates *c = &r->cgroups[k];
    const struct cgroup_entry *e = c->cg;
    jw_open(w, NULL, '{');
    jw_str(w, "path", e->path);
    jw_key(w, "parent");
    if (e->parent < 0)
        fputs("null", w->f);
    else
        esc_json(w->f, r->cgroups[e->parent].cg->path, strlen(r->cgroups[e->parent].cg->path));
    jw_str(w, "unit", e->names.unit[0] ? e->names.unit : NULL);
    if (e->names.runtime[0]) {
        jw_open(w, "container", '{');
        jw_str(w, "runtime", e->names.runtime);
        jw_str(w, "id", e->names.id);
        jw_str(w, "short_id", e->names.short_id);
        jw_close(w, '}');
    } else {
        jw_str(w, "container", NULL);
    }
    if (e->names.pod_uid[0]) {
        jw_open(w, "pod", '{');
        jw_str(w, "uid", e->names.pod_uid);
        jw_str(w, "qos", e->names.qos);
        jw_close(w, '}');
    } else {
        jw_str(w, "pod", NULL);
    }
    jw_int(w, "tasks", e->ntasks);
    jw_int(w, "tasks_below", c->ntasks);
    jw_num(w, "read_bps", c->read_bps);
    jw_num(w, "write_bps", c->write_bps);
    jw_int(w, "io_unknown", c->io_unknown);
    jw_num(w, "io_delay_pct", c->io_delay_pct);
    jw_open(w, "io_pressure", '{');
    jw_num(w, "some_pct", c->some_pct);
    jw_num(w, "full_pct", c->full_pct);
    /* absent: no PSI, or a v1 hierarchy (source_err_text would say "exited") */
    jw_str(w, "error", !e->pressure.err ? NULL : e->pressure.err == -ENOENT ? "absent"
                                                   : source_err_text(e->pressure.err));
    jw_close(w, '}');
    if (e->iostat_err) {
        jw_key(w, "io_stat");
        fputs("null", w->f);
    } else {
        jw_open(w, "io_stat", '[');
        for (unsigned i = 0; i < c->ndev; i++) {
            const struct cgroup_dev_rates *d = &c->dev[i];
            jw_open(w, NULL, '{');
            jw_dev(w, "device", r, d->major, d->minor);
            jw_num(w, "rbps", d->rbps);
            jw_num(w, "wbps", d->wbps);
            jw_num(w, "riops", d->riops);
            jw_num(w, "wiops", d->wiops);
            jw_num(w, "cost_wait_pct", d->cost_wait_pct);
            jw_num(w, "cost_indelay_pct", d->cost_indelay_pct);
            jw_key(w, "latency_depth");
            if (!d->has_lat || d->lat_depth < 0)
                fputs("null", w->f);
            else
                put_ll(w->f, d->lat_depth);
            jw_close(w, '}');
        }
        jw_close(w, ']');
    }
    json_cg_settings(w, r, e);
    jw_open(w, "warnings", '[');
    for (size_t i = 0; i < v->n; i++)
        if (v->w[i].cgroup == (int)k)
            json_warning(w, r, &v->w[i], true);
    jw_close(w, ']');
    jw_close(w, '}');
}

/* Top-level "cgroups": the tree, a parent before its children; absent when not sampled
 * (no tasks, or a recording made before the cgroup lens: replayed as it was). */
static void json_cgroups(struct jw *w, const struct result *r, const struct verdicts *v)
{
    const struct cgroup_set *set = r->cur->cgroups;
    if (!set || !r->cgroups)
        return;
    jw_open(w, "cgroups", '[');
    for (size_t k = 0; k < r->ncgroups; k++)
        json_cgroup(w, r, k, v);
    jw_close(w, ']');
}

/* Per process: the path of its cgroup (null: unknown); absent with "cgroups". */
static void json_task_cgroup(struct jw *w, const struct result *r, size_t ti)
{
    if (!r->cur->cgroups || !r->cgroups)
        return;
    int k = cgroup_of_task(r, ti);
    jw_str(w, "cgroup", k >= 0 ? r->cgroups[k].cg->path : NULL);
}

/* ---- filesystems (issue #20; docs/json.md) --------------------------------------------- */

static void json_fs_deleted(struct jw *w, const struct fs_deleted_file *d)
{
    jw_open(w, NULL, '{');
    jw_str(w, "path", d->path);
    jw_int(w, "size_bytes", (long long)d->size);
    jw_int(w, "blocks_bytes", (long long)d->blocks_bytes);
    jw_open(w, "holders", '[');
    for (size_t k = 0; k < d->nholders; k++) {
        const struct fs_holder *h = &d->holders[k];
        jw_open(w, NULL, '{');
        jw_int(w, "pid", h->pid);
        jw_str(w, "comm", h->comm[0] ? h->comm : NULL);
        jw_int(w, "fd", h->fd);
        jw_bool(w, "append", h->flags_known ? h->append : -1);
        jw_close(w, '}');
    }
    jw_close(w, ']');
    jw_close(w, '}');
}

static void json_filesystems(struct jw *w, const struct result *r)
{
    if (!r->cur->fs_taken)           /* a replayed frame that had none: no key, as recorded */
        return;
    jw_open(w, "filesystems", '[');
    for (size_t i = 0; i < r->nfss; i++) {
        const struct fs_rates *fr = &r->fss[i];
        const struct fs_sample *fs = fr->fs;
        const struct fs_mount *m = &fs->fs;
        const struct snapshot *c = r->cur;
        bool ok = m->statfs_err == 0;
        jw_open(w, NULL, '{');
        jw_str(w, "mount", m->m.mount);
        jw_str(w, "device", fs->dev_idx >= 0 ? c->devs[fs->dev_idx].ds.name : NULL);
        jw_str(w, "disk", fs->disk_idx >= 0 ? c->devs[fs->disk_idx].ds.name : NULL);
        jw_str(w, "scheduler", fs->disk_idx >= 0 && c->devs[fs->disk_idx].bd.scheduler[0]
                                   ? c->devs[fs->disk_idx].bd.scheduler : NULL);
        jw_str(w, "fstype", m->m.fstype);
        jw_str(w, "source", m->m.source);
        jw_bool(w, "read_only", m->read_only);
        jw_known(w, "size_bytes", ok ? (long long)m->size : -1);
        jw_known(w, "used_bytes", ok ? (long long)m->used : -1);
        jw_known(w, "avail_bytes", ok ? (long long)m->avail : -1);
        jw_num(w, "used_pct", fr->used_pct);
        jw_known(w, "inodes_used", ok ? m->inodes_used : -1);
        jw_known(w, "inodes_total", ok ? m->inodes_total : -1);
        jw_num(w, "write_bps", fr->write_bps);
        jw_num(w, "fill_bps", fr->fill_bps);
        jw_num(w, "full_in_s", fr->full_in_s);
        jw_known(w, "deleted_open_bytes", fs->deleted_known ? (long long)fs->deleted_bytes : -1);
        jw_bool(w, "deleted_open_complete", fs->deleted_known ? fs->deleted_complete : -1);
        if (fs->deleted_known) {
            jw_open(w, "deleted_open", '[');
            for (size_t k = 0; k < fs->ndel; k++)
                json_fs_deleted(w, &fs->del[k]);
            jw_close(w, ']');
        } else {
            jw_str(w, "deleted_open", NULL);
        }
        jw_close(w, '}');
    }
    jw_close(w, ']');
}

int sample_write(FILE *f, const struct result *r, const struct verdicts *v,
                 const struct sample_opts *o)
{
    const struct snapshot *c = r->cur;
    struct jw w = { .f = f };
    jw_open(&w, NULL, '{');
    jw_int(&w, "version", IOTRIAGE_JSON_VERSION);
    jw_num(&w, "ts", c->wall);
    if (o->has_at) {
        /* How far this sample is from the moment asked: --at now may find the last
         * sample minutes before it, which must not pass for "now". */
        jw_open(&w, "at", '{');
        jw_num(&w, "asked", o->at);
        jw_num(&w, "offset_s", c->wall - o->at);
        jw_bool(&w, "missed", o->at_missed);
        jw_close(&w, '}');
    }
    jw_num(&w, "interval_s", r->interval_s > 0 ? r->interval_s : (double)NAN);
    jw_str(&w, "host", o->hostname);
    jw_bool(&w, "threads", c->threads);
    jw_bool(&w, "delayacct", c->delayacct == DA_UNKNOWN ? -1 : c->delayacct == DA_ON);
    json_psi(&w, r);
    json_lens_state(&w, c);

    jw_open(&w, "devices", '[');
    for (size_t i = 0; i < r->ndevs; i++)
        json_device(&w, r, i, v);
    jw_close(&w, ']');

    struct warn_index ix;
    warn_index_build(&ix, v, r->ntasks);
    jw_open(&w, "processes", '[');
    for (size_t i = 0; i < r->ntasks; i++)
        if (!o->only_active || task_is_active(&r->tasks[i]))
            json_task(&w, r, i, v, &ix);
    jw_close(&w, ']');
    warn_index_free(&ix);

    json_cgroups(&w, r, v);
    json_filesystems(&w, r);

    jw_open(&w, "warnings", '[');
    for (size_t i = 0; i < v->n; i++)
        json_warning(&w, r, &v->w[i], true);
    jw_close(&w, ']');

    /* Why something is unavailable: one entry per source that could not give data. */
    jw_open(&w, "notes", '[');
    /* A procfs showing processes only explains the ENOENTs below: not "exited",
     * not "kernel without PSI", not "without delay accounting" */
    bool subset = c->proc_note[0] != '\0';
    if (subset) {
        jw_open(&w, NULL, '{');
        jw_str(&w, "source", "procfs");
        jw_str(&w, "text", c->proc_note);
        jw_close(&w, '}');
    }
    if (c->hidden_note[0]) {         /* hidepid hides processes */
        jw_open(&w, NULL, '{');
        jw_str(&w, "source", "procs");
        jw_str(&w, "text", c->hidden_note);
        jw_close(&w, '}');
    }
    if (c->diskstats_err && !(subset && c->diskstats_err == -ENOENT)) {
        jw_open(&w, NULL, '{');
        jw_str(&w, "source", "diskstats");
        jw_str(&w, "text", source_err_text(c->diskstats_err));
        jw_close(&w, '}');
    }
    for (int k = 0; k < PSI_NRES; k++) {
        if (!c->psi[k].err || (subset && c->psi[k].err == -ENOENT))
            continue;
        jw_open(&w, NULL, '{');
        jw_str(&w, "source", "psi");
        char txt[128];
        snprintf(txt, sizeof(txt), "pressure/%s unavailable: %s", psi_resource_name[k],
                 c->psi[k].err == -ENOENT ? NOTE_PSI_ENOENT
                                          : source_err_text(c->psi[k].err));
        jw_str(&w, "text", txt);
        jw_close(&w, '}');
    }
    for (unsigned k = 0; k < c->npids_missing; k++) {
        char txt[128];
        snapshot_pid_note(txt, sizeof(txt), &c->pids_missing[k]);
        jw_open(&w, NULL, '{');
        jw_str(&w, "source", "pids");
        jw_str(&w, "text", txt);
        jw_close(&w, '}');
    }
    if (c->sys_note[0]) {            /* sysfs could not describe the devices */
        jw_open(&w, NULL, '{');
        jw_str(&w, "source", "sysfs");
        jw_str(&w, "text", c->sys_note);
        jw_close(&w, '}');
    }
    if ((c->delayacct != DA_ON || c->taskstats_err) && !(subset && c->delayacct == DA_UNKNOWN && !c->taskstats_err)) {
        jw_open(&w, NULL, '{');
        jw_str(&w, "source", "delayacct");
        if (c->taskstats_err)
            jw_str(&w, "text", c->taskstats_msg);
        else if (c->delayacct == DA_OFF)
            jw_str(&w, "text", NOTE_DA_OFF);
        else
            jw_str(&w, "text", NOTE_DA_MISSING);
        jw_close(&w, '}');
    }
    jw_close(&w, ']');
    jw_close(&w, '}');
    putc('\n', f);
    return stream_flush(f);
}
