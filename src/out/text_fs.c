/* SPDX-License-Identifier: GPL-2.0-or-later */
/* out/text_fs.c: the filesystems section of the batch text output (out/text_fs.h). */
#include "out/text_fs.h"

#include <limits.h>
#include <math.h>
#include <string.h>

#include "util/escape.h"
#include "util/fmt.h"

static void fmt_duration(char *buf, size_t n, double s)
{
    if (isnan(s))
        snprintf(buf, n, "-");
    else if (s < 120)
        snprintf(buf, n, "%.0fs", s);
    else if (s < 7200)
        snprintf(buf, n, "%.0fmin", s / 60);
    else if (s < 172800)
        snprintf(buf, n, "%.1fh", s / 3600);
    else
        snprintf(buf, n, "%.0fd", s / 86400);
}

static void put_esc(FILE *f, const char *s, bool utf8)
{
    char buf[PATH_MAX * 2];
    esc_display(buf, sizeof(buf), s, strlen(s), utf8);
    fputs(buf, f);
}

void out_text_filesystems(FILE *f, const struct result *r, bool utf8)
{
    const struct snapshot *c = r->cur;
    if (!c->fs_taken)
        return;
    if (c->mounts_err) {
        fprintf(f, "Filesystems unavailable: %s\n", source_err_text(c->mounts_err));
        return;
    }
    fprintf(f, "%-10s %-11s %7s %7s %7s %6s %8s %8s %8s %8s %8s  %s\n", "FSdevice", "sched", "size",
            "used", "avail", "use%", "inodes", "write/s", "fill/s", "full_in", "deleted", "mount (type)");
    for (size_t i = 0; i < r->nfss; i++) {
        const struct fs_rates *fr = &r->fss[i];
        const struct fs_sample *fs = fr->fs;
        const struct fs_mount *m = &fs->fs;
        char size[16] = "-", used[16] = "-", avail[16] = "-", inodes[24] = "-", pct[16] = "-";
        char wr[32], fill[32], full[24], del[16] = "?";
        if (!m->statfs_err) {
            fmt_size(size, sizeof(size), (double)m->size);
            fmt_size(used, sizeof(used), (double)m->used);
            fmt_size(avail, sizeof(avail), (double)m->avail);
            if (m->inodes_used >= 0)
                snprintf(inodes, sizeof(inodes), "%lld", (long long)m->inodes_used);
        }
        if (!isnan(fr->used_pct))
            snprintf(pct, sizeof(pct), "%.1f", fr->used_pct);
        fmt_rate(wr, sizeof(wr), fr->write_bps);
        fmt_signed_rate(fill, sizeof(fill), fr->fill_bps);
        fmt_duration(full, sizeof(full), fr->full_in_s);
        if (fs->deleted_known) {
            fmt_size(del, sizeof(del), (double)fs->deleted_bytes);
            if (!fs->deleted_complete)          /* a lower bound: not every process seen */
                strcat(del, "+");
        }
        const char *dev = fs->dev_idx >= 0 ? c->devs[fs->dev_idx].ds.name
                                           : strcmp(m->m.fstype, "tmpfs") == 0 ? "tmpfs" : "-";
        const char *sched = fs->disk_idx >= 0 && c->devs[fs->disk_idx].bd.scheduler[0]
                                ? c->devs[fs->disk_idx].bd.scheduler : "-";
        fprintf(f, "%-10s %-11s %7s %7s %7s %6s %8s %8s %8s %8s %8s  ", dev, sched, size, used, avail,
                pct, inodes, wr, fill, full, del);
        put_esc(f, m->m.mount, utf8);
        fprintf(f, " (%s)%s\n", m->m.fstype, m->read_only ? " ro" : "");
        for (size_t k = 0; k < fs->ndel; k++) {
            const struct fs_deleted_file *d = &fs->del[k];
            char blk[16], sz[16];
            fmt_size(blk, sizeof(blk), (double)d->blocks_bytes);
            fmt_size(sz, sizeof(sz), (double)d->size);
            fprintf(f, "  deleted %7s (size %s) ", blk, sz);
            put_esc(f, d->path ? d->path : "?", utf8);
            fputs(" held by", f);
            for (size_t h = 0; h < d->nholders; h++) {
                const struct fs_holder *ho = &d->holders[h];
                fputs(h ? ", " : " ", f);
                put_esc(f, ho->comm[0] ? ho->comm : "?", utf8);
                fprintf(f, "[%d] fd %d %s", (int)ho->pid, ho->fd,
                        !ho->flags_known ? "flags?" : ho->append ? "append" : "no-append");
            }
            putc('\n', f);
        }
    }
    putc('\n', f);
}
