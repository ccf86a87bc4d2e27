/* out/text.c: one sample as human text, like `top -b` with iostat's device columns. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "out/escape.h"
#include "out/output.h"
#include "util.h"

/* A number in a fixed width, or "-" when unknown. */
static void num(FILE *f, int width, int prec, double v)
{
    if (isnan(v))
        fprintf(f, " %*s", width, "-");
    else
        fprintf(f, " %*.*f", width, prec, v);
}

static void rate(FILE *f, int width, double bps)
{
    char buf[32];
    fmt_rate(buf, sizeof(buf), bps);
    fprintf(f, " %*s", width, buf);
}

static void header(FILE *f, const struct result *r, const struct out_opts *o)
{
    const struct snapshot *c = r->cur;
    char when[64];
    time_t t = (time_t)c->wall;
    struct tm tm;
    localtime_r(&t, &tm);
    strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", &tm);
    fprintf(f, "iotriage - %s  %s  interval %.2fs  %zu %s\n", o->hostname ? o->hostname : "?", when,
            r->interval_s, c->ntasks, c->threads ? "threads" : "processes");
    if (c->taskstats_err)
        fprintf(f, "Delays: unavailable: %s\n", c->taskstats_msg);
    else if (c->delayacct == DA_OFF)
        fprintf(f, "Delays: unavailable: delay accounting is off (sysctl kernel.task_delayacct=1 turns it on; "
                   "only tasks started after that carry data)\n");
    else if (c->delayacct == DA_UNKNOWN)
        fprintf(f, "Delays: unavailable: kernel without delay accounting (no kernel.task_delayacct)\n");
    else if (c->delayacct_since_ticks < 0)
        fprintf(f, "Delays: on (tasks started before it was switched on show '-')\n");
}

static void psi_block(FILE *f, const struct result *r)
{
    fprintf(f, "PSI      some%%  avg10  avg60 avg300   full%%  avg10  avg60 avg300\n");
    for (int k = 0; k < PSI_NRES; k++) {
        const struct psi_sample *s = &r->cur->psi[k];
        fprintf(f, "%-6s", psi_resource_name[k]);
        if (s->err) {
            fprintf(f, "  unavailable: %s\n", s->err == -ENOENT ? "kernel without PSI (or psi=0)"
                                                                 : source_err_text(s->err));
            continue;
        }
        const struct psi_line *lines[2] = { &s->some, &s->full };
        const double pct[2] = { r->psi[k].some_pct, r->psi[k].full_pct };
        for (int i = 0; i < 2; i++) {
            if (!lines[i]->valid) {
                fprintf(f, " %6s %6s %6s %6s ", "-", "-", "-", "-");
                continue;
            }
            num(f, 6, 1, pct[i]);
            num(f, 6, 2, lines[i]->avg10);
            num(f, 6, 2, lines[i]->avg60);
            num(f, 6, 2, lines[i]->avg300);
            putc(' ', f);
        }
        putc('\n', f);
    }
}

/* Devices the text shows: whole disks that have ever done I/O (like iostat). JSON has all. */
static bool dev_shown(const struct dev_rates *d)
{
    const struct diskstats_row *ds = &d->dev->ds;
    if (d->dev->bd.partition)
        return false;
    return ds->f[DS_RD_IOS] || ds->f[DS_WR_IOS] || (ds->nfields >= 15 && ds->f[DS_DC_IOS]);
}

static void device_block(FILE *f, const struct result *r)
{
    fprintf(f, "%-10s %-11s %5s %8s %9s %7s %5s %7s %6s %8s %9s %7s %5s %7s %6s %7s %7s %7s %6s %7s %6s %5s %s\n",
            "Device", "sched", "nr_rq", "r/s", "rkB/s", "rrqm/s", "%rrqm", "r_await", "rareq",
            "w/s", "wkB/s", "wrqm/s", "%wrqm", "w_await", "wareq", "d/s", "d_await", "f/s",
            "f_await", "aqu-sz", "%util", "sat", "quiet");
    for (size_t i = 0; i < r->ndevs; i++) {
        const struct dev_rates *d = &r->devs[i];
        if (!dev_shown(d))
            continue;
        const struct blockdev_info *b = &d->dev->bd;
        fprintf(f, "%-10s %-11s", d->dev->ds.name, b->scheduler[0] ? b->scheduler : "-");
        if (b->nr_requests >= 0)
            fprintf(f, " %5ld", b->nr_requests);
        else
            fprintf(f, " %5s", "-");
        num(f, 8, 2, d->r_s);
        num(f, 9, 2, d->rkb_s);
        num(f, 7, 2, d->rrqm_s);
        num(f, 5, 1, d->rrqm_pct);
        num(f, 7, 2, d->r_await);
        num(f, 6, 2, d->rareq_sz);
        num(f, 8, 2, d->w_s);
        num(f, 9, 2, d->wkb_s);
        num(f, 7, 2, d->wrqm_s);
        num(f, 5, 1, d->wrqm_pct);
        num(f, 7, 2, d->w_await);
        num(f, 6, 2, d->wareq_sz);
        num(f, 7, 2, d->d_s);
        num(f, 7, 2, d->d_await);
        num(f, 7, 2, d->f_s);
        num(f, 6, 2, d->f_await);
        num(f, 7, 2, d->aqu_sz);
        num(f, 6, 1, d->util);
        fprintf(f, " %5s", d->saturated < 0 ? "-" : d->saturated ? "YES" : "no");
        if (isnan(d->quiet_await))
            fprintf(f, " -\n");
        else
            fprintf(f, " %.2fms\n", d->quiet_await);
    }
}

static int cmp_rates(const void *a, const void *b)
{
    const struct task_rates *x = *(const struct task_rates *const *)a;
    const struct task_rates *y = *(const struct task_rates *const *)b;
    double xa = x->io_valid ? x->read_bps + x->write_bps : -1;
    double ya = y->io_valid ? y->read_bps + y->write_bps : -1;
    if (xa != ya)
        return xa < ya ? 1 : -1;
    double xd = x->delay_valid ? x->io_delay_pct : -1, yd = y->delay_valid ? y->io_delay_pct : -1;
    if (xd != yd)
        return xd < yd ? 1 : -1;
    return (x->task->id > y->task->id) - (x->task->id < y->task->id);
}

/* The warnings, most severe first: all of them (batch output is read afterwards, not
 * glanced at), each on one line. */
static void warning_block(FILE *f, const struct result *r, const struct verdicts *v, const struct out_opts *o)
{
    if (v->n == 0)
        return;
    fprintf(f, "Warnings (%zu):\n", v->n);
    for (size_t i = 0; i < v->n; i++) {
        char text[2 * WARN_TEXT_MAX];
        esc_display(text, sizeof(text), v->w[i].text, strlen(v->w[i].text), o->utf8);
        fprintf(f, "  %-8s %-21s %s\n", severity_name(v->w[i].sev), warn_code_name(v->w[i].code), text);
    }
    (void)r;
    putc('\n', f);
}

static void task_block(FILE *f, const struct result *r, const struct verdicts *v, const struct out_opts *o)
{
    const struct task_rates **order = malloc((r->ntasks ? r->ntasks : 1) * sizeof(*order));
    if (!order)
        return;
    size_t n = 0;
    for (size_t i = 0; i < r->ntasks; i++)
        if (!o->only_active || task_is_active(&r->tasks[i]))
            order[n++] = &r->tasks[i];
    qsort(order, n, sizeof(*order), cmp_rates);
    fprintf(f, "%7s %-9s %-7s %-6s %9s %9s %8s %7s %8s %-6s %-12s %s\n", r->cur->threads ? "TID" : "PID",
            "USER", "PRIO", "FROM", "READ/s", "WRITE/s", "IODELAY", "SWAPIN", "AVGWAIT", "ROLE",
            "DEV", "COMMAND");
    for (size_t i = 0; i < n; i++) {
        const struct task_rates *t = order[i];
        const struct task_sample *s = t->task;
        char prio[16], user[64], cmd[512];
        snprintf(prio, sizeof(prio), "%s/%d", ioprio_class_name(t->prio.cls), t->prio.level);
        esc_display(user, sizeof(user), s->user, strlen(s->user), o->utf8);
        fprintf(f, "%7d %-9.9s %-7s %-6s", (int)s->id, user[0] ? user : "?", prio,
                t->prio.source == IOS_EXPLICIT ? "set" : ioprio_source_name(t->prio.source));
        rate(f, 9, t->read_bps);
        rate(f, 9, t->write_bps);
        if (t->delay_valid)
            fprintf(f, " %7.1f%%%c%6.1f%%", t->io_delay_pct, t->delay_overcount ? '!' : ' ',
                    t->swapin_delay_pct);
        else
            fprintf(f, " %8s %7s", "-", "-");
        if (isnan(t->blkio_avg_ms))
            fprintf(f, " %8s", "-");
        else
            fprintf(f, " %6.2fms", t->blkio_avg_ms);
        size_t ti = (size_t)(t - r->tasks);
        const char *role = role_name(ti < v->nroles ? v->roles[ti] : ROLE_NONE);
        char devs[64];
        fmt_task_devs(devs, sizeof(devs), r, ti, "-");
        fprintf(f, " %-6s %-12s", role ? role : "", devs);
        const char *text = s->cmdline[0] ? s->cmdline : s->comm;
        esc_display(cmd, sizeof(cmd), text, strlen(text), o->utf8);
        if (s->cmdline[0])
            fprintf(f, " %s\n", cmd);
        else
            fprintf(f, " [%s]\n", cmd);
    }
    free(order);
}

void out_text_sample(FILE *f, const struct result *r, const struct verdicts *v,
                     const struct out_opts *o)
{
    header(f, r, o);
    psi_block(f, r);
    putc('\n', f);
    device_block(f, r);
    putc('\n', f);
    warning_block(f, r, v, o);
    if (r->cur->procs_err)
        fprintf(f, "Processes unavailable: %s\n", source_err_text(r->cur->procs_err));
    else
        task_block(f, r, v, o);
    putc('\n', f);
}
