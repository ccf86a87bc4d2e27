/* SPDX-License-Identifier: GPL-2.0-or-later */
/* out/columns.c: the process table's columns (out/columns.h). */
#include "out/columns.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "source/ioprio.h"
#include "util.h"
#include "util/escape.h"
#include "util/fmt.h"

static size_t put_text(char *buf, size_t n, const char *s)
{
    int w = snprintf(buf, n, "%s", s);
    return w < 0 ? 0 : (size_t)w < n ? (size_t)w : n - 1;
}

static const struct task_rates *task(const struct col_ctx *c, size_t ti)
{
    return &c->r->tasks[ti];
}

/* ---- formatters ---- */

static size_t f_pid(char *buf, size_t n, const struct col_ctx *c, size_t ti)
{
    char tmp[24];
    size_t len = fmt_int(tmp, task(c, ti)->task->id);
    return put_text(buf, n, len ? tmp : "");
}

static size_t f_user(char *buf, size_t n, const struct col_ctx *c, size_t ti)
{
    const char *u = task(c, ti)->task->user;
    if (!u[0])
        return put_text(buf, n, "?");
    return esc_display(buf, n, u, strlen(u), c->utf8);
}

static size_t f_prio(char *buf, size_t n, const struct col_ctx *c, size_t ti)
{
    const struct task_rates *t = task(c, ti);
    int w = snprintf(buf, n, "%s/%d%s", ioprio_class_name(t->prio.cls), t->prio.level,
                     t->prio.source == IOS_EXPLICIT ? "" : "~");
    return w < 0 ? 0 : (size_t)w < n ? (size_t)w : n - 1;
}

static size_t f_from(char *buf, size_t n, const struct col_ctx *c, size_t ti)
{
    const struct task_rates *t = task(c, ti);
    return put_text(buf, n, t->prio.source == IOS_EXPLICIT ? "set" : ioprio_source_name(t->prio.source));
}

static double bytes_of(const struct col_ctx *c, size_t ti, bool write)
{
    const struct task_rates *t = task(c, ti);
    const struct task_sample *s = t->task;
    if (c->accumulated)
        return s->io_err ? (double)NAN : (double)(write ? s->io.write_bytes : s->io.read_bytes);
    return write ? t->write_bps : t->read_bps;
}

static size_t f_read(char *buf, size_t n, const struct col_ctx *c, size_t ti)
{
    fmt_rate(buf, n, bytes_of(c, ti, false));
    return strlen(buf);
}

static size_t f_write(char *buf, size_t n, const struct col_ctx *c, size_t ti)
{
    fmt_rate(buf, n, bytes_of(c, ti, true));
    return strlen(buf);
}

/* "12.5" and, when the kernel counted more waiting than the wall clock allows, "12.5!";
 * an estimate from sampled thread states (delta_sampled) is "12.5~". */
static size_t f_pct(char *buf, size_t n, bool valid, double pct, char mark)
{
    if (!valid || isnan(pct))
        return put_text(buf, n, "-");
    char tmp[330];
    size_t len = fmt_fixed(tmp, sizeof(tmp), pct, 1);
    if (mark && len + 1 < sizeof(tmp)) {
        tmp[len++] = mark;
        tmp[len] = '\0';
    }
    return put_text(buf, n, tmp);
}

static size_t f_iodly(char *buf, size_t n, const struct col_ctx *c, size_t ti)
{
    const struct task_rates *t = task(c, ti);
    char mark = t->delay_overcount ? '!' : t->io_delay_source == DELAY_SRC_SAMPLED ? '~' : 0;
    return f_pct(buf, n, t->delay_valid, t->io_delay_pct, mark);
}

/* Its requests in flight on average over the interval, on all its devices (the lens's
 * requests_wait, issue #35: the wait of an asynchronous submitter, which IODLY does not
 * hold); NAN when not known (the lens off or not seeing the interval, threads). */
static double inflight_of(const struct col_ctx *c, size_t ti)
{
    const struct result *r = c->r;
    const struct task_devs *td = r->cur->tdevs ? &r->cur->tdevs[ti] : NULL;
    if (!td || !td->known || td->err || !td->lens || !td->lens_wait)
        return (double)NAN;
    double sum = 0;
    for (unsigned k = 0; k < td->n; k++) {
        const struct task_async *a = task_lens_async_of(r->cur, td, k);
        if (a && (td->from_lens >> k & 1) && !isnan(a->in_flight))
            sum += a->in_flight;
    }
    return sum;
}

static size_t f_inflt(char *buf, size_t n, const struct col_ctx *c, size_t ti)
{
    double v = inflight_of(c, ti);
    if (isnan(v))
        return put_text(buf, n, "-");
    char tmp[330];
    /* five wide: 0.25, 12.5, 140 (a deep io_uring or libaio submitter) */
    fmt_fixed(tmp, sizeof(tmp), v, v < 9.995 ? 2 : v < 99.95 ? 1 : 0);
    return put_text(buf, n, tmp);
}

static size_t f_swap(char *buf, size_t n, const struct col_ctx *c, size_t ti)
{
    const struct task_rates *t = task(c, ti);
    return f_pct(buf, n, t->delay_valid, t->swapin_delay_pct, 0);
}

static size_t f_avgwait(char *buf, size_t n, const struct col_ctx *c, size_t ti)
{
    double ms = task(c, ti)->blkio_avg_ms;
    if (isnan(ms))
        return put_text(buf, n, "-");
    char tmp[330];
    size_t len = fmt_fixed(tmp, sizeof(tmp), ms, 2);
    if (len + 2 < sizeof(tmp))
        memcpy(tmp + len, "ms", 3);
    return put_text(buf, n, tmp);
}

static enum role role_of(const struct col_ctx *c, size_t ti)
{
    return ti < c->v->nroles ? c->v->roles[ti] : ROLE_NONE;
}

static size_t f_role(char *buf, size_t n, const struct col_ctx *c, size_t ti)
{
    const char *r = role_name(role_of(c, ti));
    return put_text(buf, n, r ? r : "");
}

static size_t f_dev(char *buf, size_t n, const struct col_ctx *c, size_t ti)
{
    char raw[COL_CELL_MAX];
    fmt_task_devs(raw, sizeof(raw), c->r, ti, "-");
    /* Device names come from the kernel, or from a recording anyone may have written. */
    return esc_display(buf, n, raw, strlen(raw), c->utf8);
}

/* The service, container or pod a process runs in, from its cgroup's path (the cgroup
 * lens): "docker:3f2a9c1b7d4e", "pod:1a2b3c4d", "nginx.service"; "-" when unknown. */
static size_t f_unit(char *buf, size_t n, const struct col_ctx *c, size_t ti)
{
    int k = c->r->cgroups ? cgroup_of_task(c->r, ti) : -1;
    if (k < 0)
        return put_text(buf, n, "-");
    const struct cgroup_names *nm = &c->r->cgroups[k].cg->names;
    char raw[COL_CELL_MAX];
    if (nm->runtime[0])
        snprintf(raw, sizeof(raw), "%s:%s", nm->runtime, nm->short_id);
    else if (nm->pod_uid[0])
        snprintf(raw, sizeof(raw), "pod:%.8s", nm->pod_uid);
    else if (nm->unit[0])
        snprintf(raw, sizeof(raw), "%s", nm->unit);
    else
        snprintf(raw, sizeof(raw), "%s", c->r->cgroups[k].cg->path);
    return esc_display(buf, n, raw, strlen(raw), c->utf8);
}

static size_t f_command(char *buf, size_t n, const struct col_ctx *c, size_t ti)
{
    const struct task_sample *s = task(c, ti)->task;
    if (s->cmdline[0])
        return esc_display(buf, n, s->cmdline, strlen(s->cmdline), c->utf8);
    /* Not read yet (an idle process on the first frame): its name, until the next. */
    if (s->cmdline_pending)
        return esc_display(buf, n, s->comm, strlen(s->comm), c->utf8);
    /* No command line (kernel threads, zombies): the name in brackets, like ps. */
    if (n < 3)
        return put_text(buf, n, "");
    buf[0] = '[';
    size_t len = 1 + esc_display(buf + 1, n - 2, s->comm, strlen(s->comm), c->utf8);
    buf[len++] = ']';
    buf[len] = '\0';
    return len;
}

/* ---- sort keys ---- */

static double k_pid(const struct col_ctx *c, size_t ti)
{
    /* The one number sorted low first: negated, since numbers sort high first. */
    return -(double)task(c, ti)->task->id;
}

static double k_prio(const struct col_ctx *c, size_t ti)
{
    const struct task_rates *t = task(c, ti);
    return t->prio.cls * 8 + t->prio.level;
}

static double nan_low(double v)
{
    return isnan(v) ? -1 : v;
}

static double k_read(const struct col_ctx *c, size_t ti) { return nan_low(bytes_of(c, ti, false)); }
static double k_write(const struct col_ctx *c, size_t ti) { return nan_low(bytes_of(c, ti, true)); }

static double k_iodly(const struct col_ctx *c, size_t ti)
{
    const struct task_rates *t = task(c, ti);
    return t->delay_valid ? nan_low(t->io_delay_pct) : -1;
}

static double k_inflt(const struct col_ctx *c, size_t ti) { return nan_low(inflight_of(c, ti)); }

static double k_swap(const struct col_ctx *c, size_t ti)
{
    const struct task_rates *t = task(c, ti);
    return t->delay_valid ? nan_low(t->swapin_delay_pct) : -1;
}

static double k_avgwait(const struct col_ctx *c, size_t ti)
{
    return nan_low(task(c, ti)->blkio_avg_ms);
}

static double k_role(const struct col_ctx *c, size_t ti)
{
    return role_of(c, ti);
}

const struct column col_table[COL_N] = {
    [COL_PID] = { COL_PID, "PID", "PID", 7, 0, true, false, f_pid, k_pid,
        "process id (TID: thread id with -P or P)" },
    [COL_USER] = { COL_USER, "USER", "USER", 8, 2, false, false, f_user, NULL,
        "owner of the process" },
    [COL_PRIO] = { COL_PRIO, "PRIO", "PRIO", 7, 0, false, false, f_prio, k_prio,
        "effective I/O priority class/level; ~ derived from nice or the policy, not set" },
    [COL_FROM] = { COL_FROM, "FROM", "FROM", 6, 4, false, false, f_from, NULL,
        "where PRIO comes from: set (ionice), nice, policy (e.g. SCHED_IDLE)" },
    [COL_READ] = { COL_READ, "READ/s", "READ", 7, 0, true, false, f_read, k_read,
        "bytes read from storage per second (a: total since start)" },
    [COL_WRITE] = { COL_WRITE, "WRITE/s", "WRITE", 7, 0, true, false, f_write, k_write,
        "bytes written towards storage per second (a: total since start)" },
    [COL_IODLY] = { COL_IODLY, "IODLY%", "IODLY", 6, 1, true, true, f_iodly, k_iodly,
        "time waiting for block I/O, % of the interval; - unknown, ! over-counted, ~ estimated" },
    [COL_INFLT] = { COL_INFLT, "INFLT", "INFLT", 5, 4, true, true, f_inflt, k_inflt,
        "block requests in flight on average (BPF lens), libaio and io_uring too; - unknown" },
    [COL_SWAP] = { COL_SWAP, "SWAP%", "SWAP", 5, 3, true, true, f_swap, k_swap,
        "time waiting for swap-in, % of the interval; - unknown" },
    [COL_AVGWAIT] = { COL_AVGWAIT, "AVGWAIT", "AVGWAIT", 8, 5, true, false, f_avgwait, k_avgwait,
        "mean wait per block I/O this interval" },
    [COL_ROLE] = { COL_ROLE, "ROLE", "ROLE", 6, 1, false, false, f_role, k_role,
        "cause (a large share of a saturated device), suffer (waits on one)" },
    [COL_DEV] = { COL_DEV, "DEV", "DEV", 10, 2, false, false, f_dev, NULL,
        "block devices it does I/O to (from its open files)" },
    [COL_UNIT] = { COL_UNIT, "UNIT", "UNIT", 14, 6, false, false, f_unit, NULL,
        "the service, container or pod it runs in (from its cgroup); - unknown" },
    [COL_COMMAND] = { COL_COMMAND, "COMMAND", "COMMAND", 0, 0, false, false, f_command, NULL,
        "command line, or [name] when it has none" },
};

#define X_CHECK(e, t) _Static_assert(e < COL_N, "column " t);
COLUMNS(X_CHECK)
#undef X_CHECK

const char *col_title(const struct column *col, const struct col_ctx *c)
{
    if (col->id == COL_PID && c->r && c->r->cur && c->r->cur->threads)
        return "TID";
    if (c->accumulated && col->id == COL_READ)
        return "READ";
    if (c->accumulated && col->id == COL_WRITE)
        return "WRITE";
    return col->title;
}

struct sort_ctx {
    const struct col_ctx *c;
    const struct column *col;
    bool reverse;
};

static double moved(const struct task_rates *t)
{
    return t->io_valid ? t->read_bps + t->write_bps : -1;
}

static int cmp_rows(const void *a, const void *b, void *arg)
{
    const struct sort_ctx *sc = arg;
    const struct col_ctx *c = sc->c;
    size_t i = *(const size_t *)a, j = *(const size_t *)b;
    const struct task_rates *x = &c->r->tasks[i], *y = &c->r->tasks[j];
    int d = 0;
    if (sc->col->active_first)
        d = (int)task_is_active(y) - (int)task_is_active(x);
    if (d == 0 && sc->col->sort_num) {
        double p = sc->col->sort_num(c, i), q = sc->col->sort_num(c, j);
        d = p < q ? 1 : p > q ? -1 : 0;
    } else if (d == 0) {
        char p[COL_CELL_MAX], q[COL_CELL_MAX];
        sc->col->format(p, sizeof(p), c, i);
        sc->col->format(q, sizeof(q), c, j);
        d = strcmp(p, q);
    }
    if (d == 0) {   /* then by bytes moved, then by id: a stable, useful order */
        double p = moved(x), q = moved(y);
        d = p < q ? 1 : p > q ? -1 : (x->task->id > y->task->id) - (x->task->id < y->task->id);
    }
    return sc->reverse ? -d : d;
}

void col_sort(size_t *idx, size_t n, const struct col_ctx *c, enum col_id key, bool reverse)
{
    struct sort_ctx sc = { .c = c, .col = &col_table[(unsigned)key < COL_N ? key : COL_DEFAULT_SORT],
                           .reverse = reverse };
    qsort_r(idx, n, sizeof(*idx), cmp_rows, &sc);
}

void col_choose(int width, bool on[COL_N])
{
    int used = 0;
    for (int i = 0; i < COL_N; i++)
        on[i] = false;
    for (int p = 0; p < 10; p++)
        for (int i = 0; i < COL_N; i++) {
            const struct column *col = &col_table[i];
            if (col->drop != p || col->width == 0)
                continue;
            if (used + col->width + 1 > width)
                goto rest;
            on[i] = true;
            used += col->width + 1;
        }
rest:
    for (int i = 0; i < COL_N; i++)
        if (col_table[i].width == 0)
            on[i] = true;
}

void fmt_task_devs(char *buf, size_t n, const struct result *r, size_t ti, const char *unknown)
{
    const struct task_devs *td = r->cur->tdevs ? &r->cur->tdevs[ti] : NULL;
    if (n == 0)
        return;
    buf[0] = '\0';
    if (!td || !td->known || td->err) {
        snprintf(buf, n, "%s", unknown);
        return;
    }
    size_t o = 0;
    for (unsigned k = 0; k < td->n && o + 1 < n; k++) {
        int w = snprintf(buf + o, n - o, "%s%s", k ? "," : "", r->devs[td->idx[k]].dev->ds.name);
        if (w < 0 || (size_t)w >= n - o) {
            buf[o] = '\0';
            break;
        }
        o += (size_t)w;
    }
}
