/* SPDX-License-Identifier: GPL-2.0-or-later */
/* verdict_pressure.c: the pressure rules of verdict.c: io pressure that is not block I/O
 * (io_uring's completion wait, a filesystem with no block device) and io pressure that is
 * swap (docs/verdicts.md "io-pressure-not-block", "io-pressure-swap"). */
#include "verdict.h"
#include "verdict_rules.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"
#include "util/fmt.h"
#include "util/num.h"

/* ---- A wait on a filesystem with no block device (docs/verdicts.md
 * "io-pressure-not-block") ----
 * A buffered reader of a FUSE or NFS file sleeps for the page the filesystem's readahead
 * fills (filemap_get_pages -> folio_wait_bit_common -> io_schedule): iowait, in D, so in
 * PSI io and in the blkio delay, though no block request of its own is in flight. Such a
 * task: in iowait at least NETFS_WAIT_MIN % of the interval, a file open on a filesystem
 * of snapshot.netfs, and no block I/O of its own (the bytes the lens saw it submit; without
 * the lens, read and written bytes, /proc/PID/io). The mount it waits on, or NULL. */
const struct mount_entry *netfs_waiter(const struct result *r, size_t ti, enum evidence *ev)
{
    const struct task_rates *t = &r->tasks[ti];
    const struct snapshot *s = r->cur;
    const struct task_devs *td = s->tdevs ? &s->tdevs[ti] : NULL;
    if (!td || !td->known || td->err || !td->netfs || td->netfs > s->nnetfs || !s->netfs)
        return NULL;
    if (!t->delay_valid || !(t->io_delay_pct >= NETFS_WAIT_MIN))
        return NULL;
    double own;
    if (td->lens) {
        own = 0;
        for (unsigned k = 0; k < td->n; k++)
            own += task_lens_bps(s, td, k);
    } else {
        own = t->io_valid ? t->read_bps + t->write_bps : (double)NAN;
    }
    if (!(own == 0))
        return NULL;
    if (ev)
        *ev = t->io_delay_source == DELAY_SRC_SAMPLED ? EV_SAMPLED : EV_MEASURED;
    return &s->netfs[td->netfs - 1];
}

/* ---- io pressure that is not block I/O (docs/verdicts.md "io-pressure-not-block") ----
 * The kernel counts io_uring's completion wait as iowait, and so in PSI io, whatever the
 * requests pending are (a socket receive too: 6.1.39 and 6.5 on, unless the program
 * passes IORING_ENTER_NO_IOWAIT, 6.15). Each process stalled that way with no block I/O of
 * its own is named: with the lens, its interruptible iowait (measured) and the bytes it
 * submitted; without it, its wait channel at the refresh (sampled) and its read and
 * written bytes. No device is named: none is the cause. The other kind, a wait on a
 * filesystem with no block device, is netfs_waiter's (above). */

/* Block I/O of the task's own in the interval: bytes the lens saw it submit, or (without
 * the lens) its read and written bytes; a sleep in D. NAN when unknown. */
static double own_block_bps(const struct result *r, size_t ti)
{
    const struct task_rates *t = &r->tasks[ti];
    const struct task_devs *td = r->cur->tdevs ? &r->cur->tdevs[ti] : NULL;
    if (t->task->state == 'D')
        return 1;
    if (t->uring_source == DELAY_SRC_BPF && td && td->lens) {
        double b = 0;
        for (unsigned k = 0; k < td->n; k++)
            b += task_lens_bps(r->cur, td, k);
        return b;
    }
    return t->io_valid ? t->read_bps + t->write_bps : (double)NAN;
}

/* A process stalled on a filesystem with no block device (netfs_waiter), named with the
 * filesystem's type and mount point. */
static void netfs_not_block(const struct result *r, size_t ti, double some_pct, struct verdicts *v)
{
    enum evidence ev;
    const struct mount_entry *m = netfs_waiter(r, ti, &ev);
    if (!m)
        return;
    const struct task_rates *t = &r->tasks[ti];
    const struct task_sample *s = t->task;
    if (ev == EV_MEASURED)
        push(v, W_IO_NOT_BLOCK, -1, (int)ti,
             "io pressure %.0f %% is not block I/O: %s[%d] waited %.0f %% of the time on %s at %s "
             "(a filesystem with no block device), no block I/O of its own; no disk is the cause",
             some_pct, s->comm, (int)s->id, t->io_delay_pct, m->fstype, m->mount);
    else
        push(v, W_IO_NOT_BLOCK, -1, (int)ti,
             "io pressure %.0f %% is not block I/O: %s[%d] waits on %s at %s (a filesystem with "
             "no block device), no block I/O of its own; no disk is the cause",
             some_pct, s->comm, (int)s->id, m->fstype, m->mount);
    v->w[v->n - 1].evidence = (unsigned char)ev;
}

static void io_not_block(const struct result *r, struct verdicts *v)
{
    const struct psi_rates *p = &r->psi[PSI_IO];
    if (!p->some_valid || !(p->some_pct >= PSI_NOT_BLOCK_MIN))
        return;
    for (size_t ti = 0; ti < r->ntasks; ti++) {
        const struct task_rates *t = &r->tasks[ti];
        bool measured = t->uring_source == DELAY_SRC_BPF;
        if (t->uring_source == DELAY_SRC_UNKNOWN || !(t->uring_wait_pct >= (measured ? URING_WAIT_MIN : 100.0)))
            continue;
        /* Waiting on block I/O as well: the pressure is its disk's too. */
        if (t->delay_valid && t->io_delay_pct >= ROLE_SUFFER_DELAY)
            continue;
        double own = own_block_bps(r, ti);
        if (!(own == 0))
            continue;
        const struct task_sample *s = t->task;
        const char *who = s->comm;
        if (measured)
            push(v, W_IO_NOT_BLOCK, -1, (int)ti,
                 "io pressure %.0f %% is not block I/O: %s[%d] waited %.0f %% of the time in io_uring "
                 "for completions, with no block I/O of its own (the kernel counts that wait as iowait, "
                 "a socket receive too); no disk is the cause",
                 p->some_pct, who, (int)s->id, t->uring_wait_pct);
        else
            push(v, W_IO_NOT_BLOCK, -1, (int)ti,
                 "io pressure %.0f %% is not block I/O: %s[%d] sleeps in io_uring's completion wait "
                 "(S, sampled at the refresh), with no block I/O of its own (the kernel counts that "
                 "wait as iowait, a socket receive too); no disk is the cause",
                 p->some_pct, who, (int)s->id);
        v->w[v->n - 1].evidence = measured ? EV_MEASURED : EV_SAMPLED;
    }
    for (size_t ti = 0; ti < r->ntasks; ti++)
        netfs_not_block(r, ti, p->some_pct, v);
}

/* ---- io pressure that is swap (docs/verdicts.md "io-pressure-swap") ----
 * A page swapped out is read back in the faulting task's own context (a bio to the swap
 * device, then a sleep on the page's lock: io_schedule(), iowait, PSI io), so a process
 * short of memory looks like one waiting on a slow disk: IODLY high, the swap device busy.
 * With the lens its bytes say where they went; on a device in /proc/swaps, the wait is
 * swap-in (and its writes, reclaim writing its pages out). Without the lens, nothing is
 * said: its read bytes cannot tell a swap-in from a file read. */

/* The index in r->devs of the whole disk of the device major:minor; -1 when not listed. */
static int disk_of_devnum(const struct result *r, unsigned major, unsigned minor)
{
    const struct snapshot *s = r->cur;
    for (size_t i = 0; i < s->ndevs; i++) {
        const struct dev_sample *d = &s->devs[i];
        if (d->ds.major != major || d->ds.minor != minor)
            continue;
        if (!d->bd.partition)
            return (int)i;
        for (size_t j = 0; j < s->ndevs; j++)
            if (strcmp(s->devs[j].ds.name, d->bd.disk) == 0)
                return (int)j;
        return -1;
    }
    return -1;
}

static void io_swap(const struct result *r, struct verdicts *v)
{
    const struct snapshot *s = r->cur;
    const struct psi_rates *p = &r->psi[PSI_IO];
    if (!s->nswaps || !s->tdevs || !p->some_valid || !(p->some_pct >= PSI_NOT_BLOCK_MIN))
        return;
    int swap_disk[SWAPS_MAX];
    for (unsigned i = 0; i < s->nswaps; i++)
        swap_disk[i] = disk_of_devnum(r, s->swaps[i].major, s->swaps[i].minor);
    const struct psi_rates *mem = &r->psi[PSI_MEMORY];
    for (size_t ti = 0; ti < r->ntasks; ti++) {
        const struct task_rates *t = &r->tasks[ti];
        const struct task_devs *td = &s->tdevs[ti];
        if (!t->delay_valid || !(t->io_delay_pct >= ROLE_SUFFER_DELAY) || !td->lens)
            continue;
        double all = 0, swap = 0, top = 0;
        int top_di = -1;
        for (unsigned k = 0; k < td->n; k++) {
            double b = task_lens_bps(s, td, k);
            all += b;
            for (unsigned i = 0; i < s->nswaps; i++)
                if (swap_disk[i] >= 0 && (size_t)swap_disk[i] == td->idx[k]) {
                    swap += b;
                    if (b > top) {
                        top = b;
                        top_di = swap_disk[i];
                    }
                    break;
                }
        }
        if (top_di < 0 || !(swap > 0) || !(swap >= SWAP_SHARE_MIN * all))
            continue;
        char rate[24], mp[48] = "";
        fmt_rate(rate, sizeof(rate), swap);
        if (mem->some_valid)
            snprintf(mp, sizeof(mp), " (memory pressure %.0f %%)", mem->some_pct);
        push(v, W_IO_SWAP, top_di, (int)ti,
             "io pressure %.0f %% is swap: %s[%d] waited %.0f %% of the time on block I/O, its "
             "I/O %s/s to %s, where swap lives: it is short of memory%s; give it memory (its "
             "cgroup's memory.max, or what fills the machine) rather than a faster disk",
             p->some_pct, t->task->comm, (int)t->task->id, t->io_delay_pct, rate,
             s->devs[top_di].ds.name, mp);
        v->w[v->n - 1].evidence = EV_MEASURED;
    }
}

void pressure_findings(const struct result *r, struct verdicts *v)
{
    io_not_block(r, v);
    io_swap(r, v);
}
