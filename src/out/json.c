/* out/json.c: one sample as one JSON line. The keys are a contract (docs/json.md). */
#include <errno.h>
#include <math.h>
#include <sched.h>
#include <string.h>

#include "out/escape.h"
#include "out/output.h"
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
    jw_str(w, "device", r->devs[x->dev].dev->ds.name);
    if (who && x->task >= 0) {
        const struct task_sample *t = r->tasks[x->task].task;
        jw_int(w, "pid", t->id);
        jw_str(w, "comm", t->comm);
    }
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
    jw_num(w, "tag_ms", l->tag_ms);
    jw_num(w, "sched_ms", l->sched_ms);
    jw_num(w, "device_ms", l->device_ms);
    jw_num(w, "total_ms", l->total_ms);
    jw_num(w, "device_p50_ms", l->device_p50_ms);
    jw_num(w, "device_p99_ms", l->device_p99_ms);
    jw_num(w, "total_p50_ms", l->total_p50_ms);
    jw_num(w, "total_p99_ms", l->total_p99_ms);
    jw_num(w, "depth", l->fit.depth);
    jw_num(w, "busy_depth", l->busy_depth);
    jw_num(w, "service_ms", l->service_ms);
    jw_num(w, "growth", l->growth);
    jw_str(w, "served_class", l->top_class >= 0 ? ioprio_class_name((enum ioprio_class)l->top_class) : NULL);
    jw_num(w, "sched_queue", l->sched_queue);
    jw_bool(w, "held_back", l->held_back);
    jw_str(w, "held_class", l->held_class >= 0 ? ioprio_class_name((enum ioprio_class)l->held_class) : NULL);
    jw_num(w, "held_sched_ms", l->held_sched_ms);
    jw_int(w, "held_now", (long long)l->held_now);
    jw_bool(w, "saturated", l->saturated);
    jw_close(w, '}');
}

static void json_lens_state(struct jw *w, const struct snapshot *c)
{
    jw_open(w, "lens", '{');
    jw_bool(w, "on", c->lens_on);
    jw_str(w, "reason", c->lens_on || !c->lens_msg[0] ? NULL : c->lens_msg);
    jw_close(w, '}');
}
/* ---- end of the lens's keys ---- */

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
    jw_open(w, "warnings", '[');
    for (size_t i = 0; i < v->n; i++)
        if (v->w[i].task < 0 && v->w[i].dev == (int)di)
            json_warning(w, r, &v->w[i], false);
    jw_close(w, ']');
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
    } else {
        jw_open(w, "devices", '[');
        for (unsigned k = 0; k < td->n; k++)
            jw_str(w, NULL, r->devs[td->idx[k]].dev->ds.name);
        jw_close(w, ']');
    }
    jw_str(w, "role", role_name(ti < v->nroles ? v->roles[ti] : ROLE_NONE));
    jw_open(w, "warnings", '[');
    for (size_t k = ix->first[ti]; k < ix->first[ti + 1]; k++)
        json_warning(w, r, &v->w[ix->order[k]], false);
    jw_close(w, ']');
    jw_close(w, '}');
}

void out_json_sample(FILE *f, const struct result *r, const struct verdicts *v,
                     const struct out_opts *o)
{
    const struct snapshot *c = r->cur;
    struct jw w = { .f = f };
    jw_open(&w, NULL, '{');
    jw_int(&w, "version", IOTRIAGE_JSON_VERSION);
    jw_num(&w, "ts", c->wall);
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

    jw_open(&w, "warnings", '[');
    for (size_t i = 0; i < v->n; i++)
        json_warning(&w, r, &v->w[i], true);
    jw_close(&w, ']');

    /* Why something is unavailable: one entry per source that could not give data. */
    jw_open(&w, "notes", '[');
    if (c->diskstats_err) {
        jw_open(&w, NULL, '{');
        jw_str(&w, "source", "diskstats");
        jw_str(&w, "text", source_err_text(c->diskstats_err));
        jw_close(&w, '}');
    }
    for (int k = 0; k < PSI_NRES; k++) {
        if (!c->psi[k].err)
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
    if (c->delayacct != DA_ON || c->taskstats_err) {
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
}
