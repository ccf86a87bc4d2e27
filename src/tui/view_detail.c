/* SPDX-License-Identifier: GPL-2.0-or-later */
/* tui/view_detail.c: the detail views, of a device (Enter on a device) and of a process
 * (Enter on a process), drawn line by line (struct lines, tui/draw.h). */
#define _XOPEN_SOURCE_EXTENDED 1
#include <curses.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/fmt.h"
#include "source/lens.h"
#include "tui/draw.h"

/* Before and after the last scheduler switch, for a minute after it. */
static void draw_switch_figs(struct lines *l, const struct result *r, const char *disk)
{
    const struct view *vw = l->vw;
    const struct switch_mark *m = &vw->mark;
    double ago = r->cur->mono - m->mono;
    if (!m->active || strcmp(m->disk, disk) != 0 || ago > SWITCH_SHOW_S || ago < 0)
        return;
    char title[160];
    snprintf(title, sizeof(title), "Switched from %s to %s %.0f s ago", m->from, m->to, ago);
    ln_heading(l, title);
    struct dev_figs b = m->before, f = switch_after(m);
    char bh[32], fh[32];
    snprintf(bh, sizeof(bh), "before (%.0f s)", b.secs);
    snprintf(fh, sizeof(fh), f.n ? "after (%.0f s)" : "after (wait)", f.secs);
    ln(l, "  %-10s %14s %14s", "", bh, fh);
    const char *names[4] = { "IOPS", "await ms", "aqu-sz", "%util" };
    double bv[4] = { b.iops, b.await, b.aqu, b.util }, fv[4] = { f.iops, f.await, f.aqu, f.util };
    for (int i = 0; i < 4; i++) {
        char x[16], y[16];
        fmt_num(x, sizeof(x), bv[i], i == 1 || i == 2 ? 2 : 1);
        fmt_num(y, sizeof(y), fv[i], i == 1 || i == 2 ? 2 : 1);
        ln(l, "  %-10s %14s %14s", names[i], x, y);
    }
    draw_switch_lat(l, m, disk);
}

void draw_device_detail(const struct result *r, const struct verdicts *v, struct view *vw, int h, int w)
{
    struct lines l = { 1, h - 1, w, vw };
    const struct dev_rates *d = NULL;
    size_t di = 0;
    for (size_t i = 0; i < r->ndevs; i++)
        if (strcmp(r->devs[i].dev->ds.name, vw->detail_dev) == 0) {
            d = &r->devs[i];
            di = i;
        }
    attrset(A_BOLD);
    ln(&l, "Device %s  (Esc: back)", vw->detail_dev);
    attrset(A_NORMAL);
    if (!d) {
        ln(&l, "gone: the device is no longer listed in /proc/diskstats");
        return;
    }
    const struct blockdev_info *b = &d->dev->bd;
    char list[200] = "";
    for (unsigned i = 0; i < b->nsched; i++) {
        strncat(list, i ? " " : "", sizeof(list) - strlen(list) - 1);
        strncat(list, b->schedulers[i], sizeof(list) - strlen(list) - 1);
    }
    ln(&l, "major:minor %u:%u  %s of %s  rotational %d  hw queues %d  inflight %ld", d->dev->ds.major,
       d->dev->ds.minor, b->partition ? "partition" : "whole disk", b->disk, b->rotational, b->hw_queues,
       b->inflight_r < 0 ? -1 : b->inflight_r + b->inflight_w);
    ln(&l, "scheduler %s  (offered: %s)  nr_requests %ld", b->scheduler[0] ? b->scheduler : "-", list,
       b->nr_requests);
    /* The stack, above and below (source/blkstack.h): what serves a bio-based device's
     * I/O is the scheduler of the disks at its bottom. */
    char stack[512];
    blkstack_line(snapshot_dev_stack, r->cur, d->dev->ds.name, vw->utf8 ? " \u2192 " : " -> ", stack,
                  sizeof(stack));
    if (stack[0])
        ln(&l, "stack %s%s", stack,
           !b->partition && b->nsched == 0 && b->hw_queues == 0 ? "  (bio-based: served by the disks below)" : "");
    for (unsigned i = 0; i < b->ntunables; i += 3) {
        char t[3][72] = { "", "", "" };
        for (unsigned k = 0; k < 3 && i + k < b->ntunables; k++)
            snprintf(t[k], sizeof(t[k]), "%s=%s", b->tunables[i + k].name, b->tunables[i + k].value);
        ln(&l, "  %-24s %-24s %-24s", t[0], t[1], t[2]);
    }
    char a[12][16];
    fmt_num(a[0], 16, d->r_s, 1), fmt_num(a[1], 16, d->w_s, 1), fmt_num(a[2], 16, d->rkb_s, 1);
    fmt_num(a[3], 16, d->wkb_s, 1), fmt_num(a[4], 16, d->r_await, 2), fmt_num(a[5], 16, d->w_await, 2);
    fmt_num(a[6], 16, d->aqu_sz, 2), fmt_num(a[7], 16, d->util, 1), fmt_num(a[8], 16, d->quiet_await, 2);
    fmt_num(a[9], 16, d->rareq_sz, 1), fmt_num(a[10], 16, d->wareq_sz, 1), fmt_num(a[11], 16, d->f_s, 1);
    ln(&l, "r/s %s  w/s %s  rkB/s %s  wkB/s %s  rareq-sz %s  wareq-sz %s  f/s %s", a[0], a[1], a[2], a[3],
       a[9], a[10], a[11]);
    ln(&l, "r_await %s  w_await %s  aqu-sz %s  %%util %s  quiet await %s  saturated %s", a[4], a[5], a[6],
       a[7], a[8], d->saturated < 0 ? "unknown" : d->saturated ? "YES" : "no");
    /* Where the interval's requests waited, measured by the BPF lens. */
    const struct lens_dev_interval *lv = &d->lens;
    if (lv->valid && lv->requests > 0) {
        char g[10][16];
        fmt_num(g[0], 16, lv->tag_ms, 2), fmt_num(g[1], 16, lv->sched_ms, 2);
        fmt_num(g[2], 16, lv->device_ms, 2), fmt_num(g[3], 16, lv->total_ms, 2);
        fmt_num(g[4], 16, lv->total_p99_ms, 2), fmt_num(g[5], 16, lv->busy_depth, 1);
        fmt_num(g[6], 16, lv->sched_queue, 1), fmt_num(g[7], 16, lv->growth, 1);
        ln(&l, "lens: tag %s  scheduler %s  device %s  total %s ms (p99 %s)  at the device %s  in the scheduler %s  growth %s",
           g[0], g[1], g[2], g[3], g[4], g[5], g[6], g[7]);
        /* the duty cycle (source/lens.h): the figures are the windows' */
        if (lv->duty < 1)
            ln(&l, "      watched %.0f%% of the interval (the lens's duty cycle on a fast machine): counts are estimates",
               lv->duty * 100);
        if (lv->held_back)
            ln(&l, "      the scheduler holds %s requests back while the device has free slots: their label is honoured, not saturation",
               lv->held_class >= 0 ? ioprio_class_name((enum ioprio_class)lv->held_class) : "lower-class");
    } else if (!r->cur->lens_on && r->cur->lens_msg[0]) {
        ln(&l, "lens %s", r->cur->lens_msg);
    }
    draw_switch_figs(&l, r, b->disk);
    if (vw->udev_rule[0] && strcmp(vw->udev_disk, b->disk) == 0) {
        ln_heading(&l, "To keep the switch after a reboot (a udev rule; iotriage writes no file)");
        ln(&l, "%s", vw->udev_rule);
    }
    ln_heading(&l, "Verdicts");
    unsigned nv = 0;
    for (size_t i = 0; i < v->n; i++)
        if (v->w[i].dev == (int)di) {
            char line[300];
            snprintf(line, sizeof(line), "  %-8s %-20s ", severity_name(v->w[i].sev), warn_code_name(v->w[i].code));
            ln_untrusted(&l, line, v->w[i].text, vw);
            nv++;
        }
    if (!nv)
        ln(&l, "  none");
    ln_heading(&l, "Processes doing I/O to it");
    for (size_t ti = 0; r->cur->tdevs && ti < r->ntasks; ti++) {
        const struct task_devs *td = &r->cur->tdevs[ti];
        bool hit = false;
        for (unsigned k = 0; k < td->n; k++)
            hit |= td->idx[k] == di;
        if (!hit)
            continue;
        const struct task_rates *t = &r->tasks[ti];
        char rb[16], wb[16], pr[16], line[96];
        fmt_rate(rb, 16, t->read_bps);
        fmt_rate(wb, 16, t->write_bps);
        prio_cell(pr, 16, t);
        snprintf(line, sizeof(line), "  %7d %-8s R %6s W %6s  ", (int)t->task->id, pr, rb, wb);
        ln_untrusted(&l, line, t->task->cmdline[0] ? t->task->cmdline : t->task->comm, vw);
    }
    /* Writeback is written by kernel threads for the processes that dirtied the pages:
     * its own row, from the bios the lens saw them submit (NAN: no lens). */
    if (!isnan(d->kernel_bps)) {
        char wb[16];
        fmt_rate(wb, sizeof(wb), d->kernel_bps);
        ln(&l, "  %7s %-8s   %6s W %6s  kernel threads: writeback of dirtied pages, journal", "-", "-", "",
           wb);
        /* For whom: the two biggest dirtiers (the lens's split), the unknown share too. */
        for (size_t k = 0; d->wb_valid && d->kernel_bps > 0 && k < d->nwb && k < 2; k++) {
            const struct wb_share *s = &d->wb[k];
            char who[WB_CGROUP_MAX + TASK_COMM_MAX + 64];
            double pct = 100.0 * s->bps / d->kernel_bps;
            char proc[TASK_COMM_MAX + 16] = "";
            if (s->pid)
                snprintf(proc, sizeof(proc), " %s[%d]", s->comm[0] ? s->comm : "?", (int)s->pid);
            if (!s->pid && !s->cgid)
                snprintf(who, sizeof(who), "%3.0f%% dirtier unknown", pct);
            else if (s->cgid)
                snprintf(who, sizeof(who), "%3.0f%% dirtied by%s in %s (cgroup from the %s)", pct, proc,
                         s->cgroup[0] ? s->cgroup : "a cgroup no listed process is in",
                         s->from == WB_FROM_BLKCG ? "kernel" : "lens");
            else
                snprintf(who, sizeof(who), "%3.0f%% dirtied by%s", pct, proc);
            ln_untrusted(&l, "                                      ", who, vw);
        }
    }
}

/* What libproc2 says of the process (source/procinfo.h), live only. */
static void draw_pinfo(struct lines *l, const struct procinfo *p)
{
    char up[32] = "-", rss[24] = "-", swp[24] = "-", flt[24] = "-";
    if (p->elapsed_s >= 0) {
        long e = (long)p->elapsed_s;
        if (e >= 86400)
            snprintf(up, sizeof(up), "%ldd%02ldh", e / 86400, e / 3600 % 24);
        else if (e >= 3600)
            snprintf(up, sizeof(up), "%ldh%02ldm", e / 3600, e / 60 % 60);
        else
            snprintf(up, sizeof(up), "%ldm%02lds", e / 60, e % 60);
    }
    if (p->rss_kb >= 0)
        fmt_rate(rss, sizeof(rss), (double)p->rss_kb * 1024.0);
    if (p->swap_kb >= 0)
        fmt_rate(swp, sizeof(swp), (double)p->swap_kb * 1024.0);
    if (p->maj_flt >= 0)
        snprintf(flt, sizeof(flt), "%lld", p->maj_flt);
    ln(l, "now       %c %s%s   up %s   rss %s   swap %s   major faults %s", p->state ? p->state : '?',
       p->wchan[0] ? "in " : "", p->wchan[0] ? p->wchan : (p->state == 'R' ? "running" : ""), up, rss, swp, flt);
    ln_untrusted(l, "cgroup    ", p->cgroup[0] ? p->cgroup : "-", l->vw);
}

void draw_process_detail(const struct result *r, const struct verdicts *v, struct view *vw, int h, int w)
{
    struct lines l = { 1, h - 1, w, vw };
    const struct task_rates *t = NULL;
    size_t ti = 0;
    for (size_t i = 0; i < r->ntasks; i++)
        if (r->tasks[i].task->id == vw->detail_pid && r->tasks[i].task->start_ticks == vw->detail_start) {
            t = &r->tasks[i];
            ti = i;
        }
    attrset(A_BOLD);
    ln(&l, "%s %d  (Esc: back)", r->cur->threads ? "Thread" : "Process", (int)vw->detail_pid);
    attrset(A_NORMAL);
    if (!t) {
        ln(&l, "exited");
        return;
    }
    const struct task_sample *s = t->task;
    ln_untrusted(&l, "name      ", s->comm, vw);
    ln_untrusted(&l, "command   ", s->cmdline_pending ? PENDING : s->cmdline, vw);
    ln_untrusted(&l, "user      ", s->user, vw);
    ln(&l, "threads   %d   nice %d   policy %d   state %c", s->nlwp, s->nice, s->policy, s->state ? s->state : '?');
    if (vw->have_pinfo)
        draw_pinfo(&l, &vw->pinfo);
    const char *origin = t->prio.source == IOS_EXPLICIT ? "set explicitly (ionice / ioprio_set)"
                         : t->prio.source == IOS_NICE ? "derived from nice: level (nice+20)/5, best-effort"
                                                      : "derived from the scheduling policy";
    if (s->ioprio_raw >= 0)
        ln(&l, "ioprio    %s/%d  (raw 0x%04x: class %s)  %s", ioprio_class_name(t->prio.cls), t->prio.level,
           (unsigned)s->ioprio_raw, ioprio_class_name((enum ioprio_class)IOPRIO_CLASS_OF(s->ioprio_raw)), origin);
    else
        ln(&l, "ioprio    %s/%d  (raw unreadable)  %s", ioprio_class_name(t->prio.cls), t->prio.level, origin);
    /* its requests carried a priority of their own (io_uring, libaio; issue #35) */
    const struct task_devs *tdv = r->cur->tdevs ? &r->cur->tdevs[ti] : NULL;
    for (unsigned k = 0; tdv && k < tdv->n; k++) {
        struct ioprio_eff rp;
        if (!verdict_requests_prio(r, ti, tdv->idx[k], &rp))
            continue;
        char rn[16];
        lens_prio_name((unsigned)IOPRIO_MAKE(rp.cls, rp.level), rn, sizeof(rn));
        ln(&l, "requests  %s on %s, not the task's %s/%d: a priority of their own (io_uring, libaio)",
           rn, r->devs[tdv->idx[k]].dev->ds.name, ioprio_class_name(t->prio.cls), t->prio.level);
    }
    char rb[16], wb[16], cb[16], d1[16], d2[16], aw[16];
    fmt_rate(rb, 16, t->read_bps), fmt_rate(wb, 16, t->write_bps), fmt_rate(cb, 16, t->cancelled_write_bps);
    fmt_num(d1, 16, t->delay_valid ? t->io_delay_pct : (double)NAN, 1);
    fmt_num(d2, 16, t->delay_valid ? t->swapin_delay_pct : (double)NAN, 1);
    fmt_num(aw, 16, t->blkio_avg_ms, 2);
    ln(&l, "read %s/s  write %s/s  cancelled %s/s%s", rb, wb, cb, s->io_err ? "  (io counters unreadable)" : "");
    ln(&l, "block-I/O delay %s%%  swap-in delay %s%%  mean wait %s ms%s", d1, d2, aw,
       t->delay_overcount ? "  (kernel over-counted: capped)"
       : t->io_delay_source == DELAY_SRC_SAMPLED ? "  (estimated from sampled thread states)" : "");
    /* its requests' own wait per device, any engine (the lens; issue #35): IODLY above
     * is the synchronous wait only */
    for (unsigned k = 0; tdv && tdv->lens && tdv->lens_wait && k < tdv->n; k++) {
        const struct task_async *a = task_lens_async_of(r->cur, tdv, k);
        if (!a || !(tdv->from_lens >> k & 1))
            continue;
        char inf[16], am[16];
        fmt_num(inf, 16, a->in_flight, 2);
        fmt_num(am, 16, a->await_ms, 2);
        ln(&l, "requests  on %s: %s in flight on average, %s ms each from submission to completion",
           r->devs[tdv->idx[k]].dev->ds.name, inf, am);
    }
    char devs[128];
    fmt_task_devs(devs, sizeof(devs), r, ti, "?");
    const char *role = role_name(ti < v->nroles ? v->roles[ti] : ROLE_NONE);
    ln(&l, "devices   %s   role %s", devs, role ? role : "-");
    ln_heading(&l, "Verdicts");
    unsigned nv = 0;
    for (size_t i = 0; i < v->n; i++)
        if (v->w[i].task == (int)ti) {
            char line[64];
            snprintf(line, sizeof(line), "  %-20s ", warn_code_name(v->w[i].code));
            ln_untrusted(&l, line, v->w[i].text, vw);
            nv++;
        }
    if (!nv)
        ln(&l, "  none%s", ioprio_is_default(t->prio) ? " (default priority: nothing to honour or ignore)" : "");
    if (r->cur->threads) {
        char title[64];
        snprintf(title, sizeof(title), "Threads of process %d", (int)s->tgid);
        ln_heading(&l, title);
        for (size_t i = 0; i < r->ntasks; i++) {
            const struct task_rates *o = &r->tasks[i];
            if (o->task->tgid != s->tgid)
                continue;
            char pr[16], dl[16];
            prio_cell(pr, 16, o);
            fmt_num(dl, 16, o->delay_valid ? o->io_delay_pct : (double)NAN, 1);
            char line[80];
            snprintf(line, sizeof(line), "  %7d %-8s delay %6s%%  ", (int)o->task->id, pr, dl);
            ln_untrusted(&l, line, o->task->comm, vw);
        }
    } else if (vw->threads_total > 0) {
        char title[64];
        snprintf(title, sizeof(title), "Threads (%zu): each has its own I/O priority", vw->threads_total);
        ln_heading(&l, title);
        for (size_t i = 0; i < vw->nthreads; i++) {
            const struct thread_info *th = &vw->threads[i];
            struct ioprio_eff e = ioprio_effective(th->ioprio_raw, th->nice, th->policy);
            char line[120];
            snprintf(line, sizeof(line), "  %7d %s/%d%s  nice %3d  %c %-22.22s ", (int)th->tid, ioprio_class_name(e.cls),
                     e.level, e.source == IOS_EXPLICIT ? " " : "~", th->nice, th->state ? th->state : '?',
                     th->wchan[0] ? th->wchan : "");
            ln_untrusted(&l, line, th->comm, vw);
        }
        if (vw->threads_total > vw->nthreads)
            ln(&l, "  ... and %zu more (shown: the leader, those the lens saw waiting on I/O, then by tid)",
               vw->threads_total - vw->nthreads);
    }
}
