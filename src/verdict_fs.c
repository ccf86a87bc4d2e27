/* SPDX-License-Identifier: GPL-2.0-or-later */
/* verdict_fs.c: the filesystem rules of verdict.c: full, filling, space held by deleted
 * files still open (docs/verdicts.md "Filesystems"). */
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

/* ---- Filesystems (issue #20) ----------------------------------------------------------- */

static void human_secs(char *buf, size_t n, double s)
{
    if (s < 120)
        snprintf(buf, n, "%.0f s", s);
    else if (s < 7200)
        snprintf(buf, n, "%.0f min", s / 60);
    else
        snprintf(buf, n, "%.1f h", s / 3600);
}

static void fs_push(struct verdicts *v, enum warn_code code, const struct result *r, size_t fi,
                    const char *fmt, ...) __attribute__((format(printf, 5, 6)));

static void fs_push(struct verdicts *v, enum warn_code code, const struct result *r, size_t fi,
                    const char *fmt, ...)
{
    push(v, code, r->cur->fss[fi].dev_idx, -1, "%s", "");
    struct warning *w = &v->w[v->n - 1];
    w->fs = (int)fi;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(w->text, sizeof(w->text), fmt, ap);
    va_end(ap);
}

void fs_findings(const struct result *r, size_t fi, struct verdicts *v)
{
    const struct fs_rates *fr = &r->fss[fi];
    const struct fs_sample *fs = fr->fs;
    const struct fs_mount *m = &fs->fs;
    if (m->statfs_err)
        return;
    char avail[16], used[16], held[16];
    fmt_size(avail, sizeof(avail), (double)m->avail);
    fmt_size(used, sizeof(used), (double)m->used);
    /* A read-only filesystem cannot fill: squashfs images are 100 % full by design. */
    if (!m->read_only && fr->used_pct >= FS_FULL_PCT)
        fs_push(v, W_FS_FULL, r, fi, "%s (%s) is %.1f%% full: %s left of %s", m->m.mount,
                m->m.fstype, fr->used_pct, avail, used);
    if (!m->read_only && fr->full_in_s < FS_FILL_HORIZON_S) {
        char when[24], rate[16];
        human_secs(when, sizeof(when), fr->full_in_s);
        fmt_size(rate, sizeof(rate), (double)m->avail / fr->full_in_s);
        fs_push(v, W_FS_FILLING, r, fi, "%s fills steadily at %s/s: full in %s (%s left)",
                m->m.mount, rate, when, avail);
    }
    if (fs->deleted_known && fs->ndel && m->used > 0 &&
        (double)fs->deleted_bytes > FS_DELETED_SHARE * (double)m->used) {
        const struct fs_deleted_file *d = &fs->del[0];
        const struct fs_holder *h = &d->holders[0];
        fmt_size(held, sizeof(held), (double)fs->deleted_bytes);
        fs_push(v, W_FS_DELETED_OPEN, r, fi,
                "%s: %s (%.0f%% of used) held by %zu deleted file%s still open; largest %s, "
                "held by %s[%d] fd %d%s",
                m->m.mount, held, 100.0 * (double)fs->deleted_bytes / (double)m->used, fs->ndel,
                fs->ndel == 1 ? "" : "s", d->path ? d->path : "?", h->comm[0] ? h->comm : "?",
                (int)h->pid, h->fd, d->nholders > 1 ? " and others" : "");
    }
}
