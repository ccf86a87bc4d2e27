/* SPDX-License-Identifier: GPL-2.0-or-later */
/* out/text.c: one sample as human text, like `top -b` with iostat's device columns. */
#include <errno.h>
#include <stdbool.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "util/fmt.h"
#include "util/escape.h"
#include "out/columns.h"
#include "out/output.h"
#include "out/text_fs.h"
#include "util.h"

/* A number in a fixed width, or "-" when unknown. */
static void num(FILE *f, int width, int prec, double v)
{
    if (isnan(v))
        fprintf(f, " %*s", width, "-");
    else
        fprintf(f, " %*.*f", width, prec, v);
}

/* Where IODLY% comes from, when not from taskstats: "the BPF lens", "sampled thread
 * states (marked ~)", or both; NULL when from taskstats alone (or nowhere). */
static const char *other_delay_sources(unsigned m)
{
    bool lens = m & (1u << DELAY_SRC_BPF), sampled = m & (1u << DELAY_SRC_SAMPLED);
    return lens && sampled ? "the BPF lens and sampled thread states (marked ~)"
           : lens          ? "the BPF lens"
           : sampled       ? "sampled thread states (marked ~)"
                           : NULL;
}

/* The Delays line: which source gives IODLY%, and what is unavailable and why. Without
 * taskstats the lens (or the sampled estimate) still gives IODLY%; swap-in delay (SWAP%)
 * only taskstats gives. */
static void delays_line(FILE *f, const struct result *r)
{
    const struct snapshot *c = r->cur;
    const char *why = c->taskstats_err ? c->taskstats_msg
                      : c->delayacct == DA_OFF
                          ? "delay accounting is off (sysctl kernel.task_delayacct=1 turns it on; "
                            "only tasks started after that carry data)"
                      : c->delayacct == DA_UNKNOWN
                          ? "kernel without delay accounting (no kernel.task_delayacct)"
                          : NULL;
    const char *other = other_delay_sources(delay_sources(r));
    if (why && other)
        fprintf(f, "Delays: IODLY%% from %s; swap-in delay (SWAP%%) unavailable: %s\n", other, why);
    else if (why)
        fprintf(f, "Delays: unavailable: %s\n", why);
    else if (other)
        fprintf(f, "Delays: on (taskstats); IODLY%% of the tasks it has no figures for from %s, "
                   "their SWAP%% '-'\n", other);
    else if (c->delayacct_since_ticks < 0)
        fprintf(f, "Delays: on (tasks started before it was switched on show '-')\n");
}

/* How far the sample is from the moment asked with --at: "--at now" on a recording that
 * stopped finds its last sample, minutes old, which must not pass for the moment asked. */
static void at_line(FILE *f, double wall, const struct sample_opts *o)
{
    char asked[64], span[32];
    time_t t = (time_t)o->at;
    struct tm tm;
    localtime_r(&t, &tm);
    strftime(asked, sizeof(asked), "%Y-%m-%d %H:%M:%S", &tm);
    double d = wall - o->at;
    fmt_span(span, sizeof(span), fabs(d));
    fprintf(f, "At: %s %s the moment asked (%s)%s\n", span, d < 0 ? "before" : "after", asked,
            o->at_missed ? ": the last sample before it (none after it in the window)" : "");
}

static void header(FILE *f, const struct result *r, const struct sample_opts *o)
{
    const struct snapshot *c = r->cur;
    char when[64];
    time_t t = (time_t)c->wall;
    struct tm tm;
    localtime_r(&t, &tm);
    strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", &tm);
    fprintf(f, "iotriage - %s  %s  interval %.2fs  %zu %s\n", o->hostname ? o->hostname : "?", when,
            r->interval_s, c->ntasks, c->threads ? "threads" : "processes");
    if (o->has_at)
        at_line(f, c->wall, o);
    delays_line(f, r);
    /* What procfs or sysfs could not say (snapshot.h): hidden processes, a restricted
     * /proc, devices sysfs does not describe. */
    const char *notes[] = { c->proc_note, c->hidden_note, c->sys_note };
    for (size_t k = 0; k < ARRAY_SIZE(notes); k++)
        if (notes[k][0]) {
            char esc[1024];
            esc_display(esc, sizeof(esc), notes[k], strlen(notes[k]), o->utf8);
            fprintf(f, "Note: %s\n", esc);
        }
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
    if (ds->f[DS_RD_IOS] || ds->f[DS_WR_IOS] || (ds->nfields >= 15 && ds->f[DS_DC_IOS]))
        return true;
    /* A recorded frame has no lifetime counters (store/replay.h): a device that moved
     * anything in the interval is shown. */
    return d->valid && (d->r_s > 0 || d->w_s > 0 || d->util > 0);
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

/* The warnings, most severe first: all of them (batch output is read afterwards, not
 * glanced at), each on one line. */
static void warning_block(FILE *f, const struct result *r, const struct verdicts *v, const struct sample_opts *o)
{
    if (v->n == 0)
        return;
    fprintf(f, "Warnings (%zu):\n", v->n);
    for (size_t i = 0; i < v->n; i++) {
        char text[2 * WARN_TEXT_MAX];
        char ev[128];
        esc_display(text, sizeof(text), v->w[i].text, strlen(v->w[i].text), o->utf8);
        warn_evidence_text(&v->w[i], ev, sizeof(ev));
        fprintf(f, "  %-8s %-21s %s%s%s%s\n", severity_name(v->w[i].sev), warn_code_name(v->w[i].code),
                text, ev[0] ? " (" : "", ev, ev[0] ? ")" : "");
    }
    (void)r;
    putc('\n', f);
}

/* One line of the task table, built in place and written at once: a dozen fprintf calls
 * per task were a tenth of a refresh at 1,000 tasks. Each put is printf's conversion it
 * names, with the same text. */
struct line {
    char b[1024];
    size_t n;
};

static void put(struct line *l, const char *s, size_t len)
{
    size_t room = sizeof(l->b) - 1 - l->n;
    if (len > room)
        len = room;
    memcpy(l->b + l->n, s, len);
    l->n += len;
}

static void put_ch(struct line *l, char c)
{
    put(l, &c, 1);
}

/* "%*s" (right) or "%-*s" (left) of s[0, len). */
static void put_pad(struct line *l, int width, bool left, const char *s, size_t len)
{
    static const char blanks[] = "                                ";
    size_t pad = width > 0 && (size_t)width > len ? (size_t)width - len : 0;
    if (left)
        put(l, s, len);
    while (pad) {
        size_t k = pad < sizeof(blanks) - 1 ? pad : sizeof(blanks) - 1;
        put(l, blanks, k);
        pad -= k;
    }
    if (!left)
        put(l, s, len);
}

static void put_str(struct line *l, int width, bool left, const char *s)
{
    put_pad(l, width, left, s, strlen(s));
}

/* The process table: every column of out/columns.h, in the order the screen sorts by
 * default. */
static void task_block(FILE *f, const struct result *r, const struct verdicts *v, const struct sample_opts *o)
{
    size_t *order = xreallocarray(NULL, task_room(r->ntasks ? r->ntasks : 1), sizeof(*order));
    size_t n = 0;
    for (size_t i = 0; i < r->ntasks; i++)
        if (!o->only_active || task_is_active(&r->tasks[i]))
            order[n++] = i;
    struct col_ctx cc = { .r = r, .v = v, .utf8 = o->utf8 };
    col_sort(order, n, &cc, COL_DEFAULT_SORT, false);
    struct line l = { .n = 0 };
    for (int k = 0; k < COL_N; k++) {
        const struct column *col = &col_table[k];
        if (k)
            put_ch(&l, ' ');
        put_str(&l, col->width, !col->right, col_title(col, &cc));
    }
    put_ch(&l, '\n');
    fwrite(l.b, 1, l.n, f);
    for (size_t i = 0; i < n; i++) {
        l.n = 0;
        for (int k = 0; k < COL_N; k++) {
            const struct column *col = &col_table[k];
            char cell[COL_CELL_MAX];
            size_t len = col->format(cell, sizeof(cell), &cc, order[i]);
            if (col->width && len > (size_t)col->width)
                len = (size_t)col->width;
            if (k)
                put_ch(&l, ' ');
            put_pad(&l, col->width, !col->right, cell, len);
        }
        put_ch(&l, '\n');
        fwrite(l.b, 1, l.n, f);
    }
    free(order);
}

int out_text_sample(FILE *f, const struct result *r, const struct verdicts *v,
                    const struct sample_opts *o)
{
    header(f, r, o);
    psi_block(f, r);
    putc('\n', f);
    device_block(f, r);
    putc('\n', f);
    out_text_filesystems(f, r, o->utf8);
    warning_block(f, r, v, o);
    for (unsigned k = 0; k < r->cur->npids_missing; k++) {
        char txt[128];
        snapshot_pid_note(txt, sizeof(txt), &r->cur->pids_missing[k]);
        fprintf(f, "Processes: %s\n", txt);
    }
    if (r->cur->procs_err)
        fprintf(f, "Processes unavailable: %s\n", source_err_text(r->cur->procs_err));
    else
        task_block(f, r, v, o);
    putc('\n', f);
    return stream_flush(f);
}
