/* SPDX-License-Identifier: GPL-2.0-or-later */
/* tui/view_fs.c: the filesystems view (f): space, time to full, and the space held by
 * deleted files with the processes that hold them (tui/draw.h). */
#define _XOPEN_SOURCE_EXTENDED 1
#include <curses.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "util/fmt.h"
#include "tui/draw.h"

/* ---- the filesystems view: space, time to full, space held by deleted files ---- */

/* 115 columns: the row fits at 120 */
#define FS_ROW_FMT "%-22.22s %-8.8s %-11.11s %6s %6s %6s %5s %7s %8s %8s %9s %8s"

/* One filesystem's row. */
static void fs_row(const struct result *r, size_t i, char *buf, size_t n, bool *warn)
{
    const struct fs_rates *fr = &r->fss[i];
    const struct fs_sample *fs = fr->fs;
    const struct fs_mount *m = &fs->fs;
    const struct snapshot *c = r->cur;
    char size[16], used[16], avail[16], inodes[16], wr[16], fill[32], full[24], del[16], use[16];
    snprintf(inodes, sizeof(inodes), "-");
    if (m->statfs_err == 0) {
        fmt_size(size, sizeof(size), (double)m->size);
        fmt_size(used, sizeof(used), (double)m->used);
        fmt_size(avail, sizeof(avail), (double)m->avail);
        /* a count, not bytes: decimal k and M */
        if (m->inodes_used >= 0 && m->inodes_used < 100000)
            snprintf(inodes, sizeof(inodes), "%lld", (long long)m->inodes_used);
        else if (m->inodes_used >= 0)
            snprintf(inodes, sizeof(inodes), m->inodes_used < 10000000 ? "%.0fk" : "%.1fM",
                     m->inodes_used < 10000000 ? (double)m->inodes_used / 1e3 : (double)m->inodes_used / 1e6);
    } else {
        snprintf(size, sizeof(size), "-");
        snprintf(used, sizeof(used), "-");
        snprintf(avail, sizeof(avail), "-");
    }
    fmt_rate(wr, sizeof(wr), fr->write_bps);
    fmt_signed_rate(fill, sizeof(fill), fr->fill_bps);      /* negative: it empties */
    if (fs->deleted_known) {
        fmt_size(del, sizeof(del), (double)fs->deleted_bytes);
        if (!fs->deleted_complete)  /* a lower bound, as in -b: not every process was seen */
            strcat(del, "+");
    } else {
        snprintf(del, sizeof(del), "-");
    }
    fmt_num(use, sizeof(use), fr->used_pct, 1);
    if (isnan(fr->full_in_s))
        snprintf(full, sizeof(full), "-");
    else if (fr->full_in_s < 3600)
        snprintf(full, sizeof(full), "%.0f min", fr->full_in_s / 60);
    else
        snprintf(full, sizeof(full), "%.1f h", fr->full_in_s / 3600);
    const char *dev = fs->dev_idx >= 0 ? c->devs[fs->dev_idx].ds.name : m->m.fstype;
    const char *sched = fs->disk_idx >= 0 && c->devs[fs->disk_idx].bd.scheduler[0]
                            ? c->devs[fs->disk_idx].bd.scheduler : "-";
    snprintf(buf, n, FS_ROW_FMT, m->m.mount, dev, sched, size, used, avail, use, inodes, wr, fill, full, del);
    *warn = (!isnan(fr->used_pct) && fr->used_pct > 90) || !isnan(fr->full_in_s);
}

void draw_filesystems(const struct result *r, struct view *vw, int h, int w)
{
    attrset(A_BOLD);
    put_clip(1, 0, w, "Filesystems  (Esc: back; DELETED: held by files with no name left, still open; "
                      "Enter on a holder: give it back)");
    attrset(color(vw, C_HEAD, A_BOLD | A_UNDERLINE));
    putf(2, 0, w, FS_ROW_FMT, "MOUNT", "DEVICE", "SCHED", "SIZE", "USED", "AVAIL", "USE%", "INODES", "WRITE/s", "FILL/s",
         "FULL IN", "DELETED");
    attrset(A_NORMAL);
    /* How FULL IN is reached, where it is read (delta.h: fs_rates). */
    attrset(color(vw, C_DIM, A_DIM));
    put_clip(h - 2, 0, w, "FULL IN: available / the rate used space grew over the last 3 intervals, only when it grew "
                          "in each (steady); '-' unknown");
    attrset(A_NORMAL);
    h--;
    if (!r->cur->fs_taken || r->nfss == 0) {
        put_clip(3, 0, w, r->cur->fs_taken ? "no filesystem backed by a block device" : "filesystems not sampled in this frame");
        return;
    }
    /* Lines: every filesystem's row, and below the selected one its deleted-but-open
     * files, each followed by one line per holder (the lines the selection walks). */
    if (vw->fs_sel >= r->nfss)
        vw->fs_sel = r->nfss - 1;
    const struct fs_sample *sfs = r->fss[vw->fs_sel].fs;
    size_t items = fs_items(sfs);
    fs_item_sync(vw, sfs);
    size_t nfiles = sfs->deleted_known ? sfs->ndel : 0;
    size_t total = r->nfss + nfiles + items;
    size_t sel_line = vw->fs_sel, file = 0, holder = 0;
    if (fs_item_find(sfs, vw->fs_item, &file, &holder))
        sel_line += 1 + file + 1 + (vw->fs_item - 1);   /* the rows above, its file lines, its holders */
    keep_in_view(&sel_line, &vw->fs_top, total, h - 4);
    int y = 3;
    size_t line = 0;
    for (size_t i = 0; i < r->nfss && y < h - 1; i++) {
        if (line++ >= vw->fs_top) {
            char buf[512];
            bool warn;
            fs_row(r, i, buf, sizeof(buf), &warn);
            attrset((warn ? color(vw, C_WARN, A_BOLD) : A_NORMAL) |
                    (i == vw->fs_sel && vw->fs_item == 0 ? A_REVERSE : 0));
            put_untrusted(y++, 0, w, buf, vw);
            attrset(A_NORMAL);
        }
        if (i != vw->fs_sel)
            continue;
        size_t item = 0;
        for (size_t k = 0; k < nfiles && y < h - 1; k++) {
            const struct fs_deleted_file *d = &sfs->del[k];
            if (line++ >= vw->fs_top) {
                char bl[16], sz[16], dl[640];
                fmt_size(bl, sizeof(bl), (double)d->blocks_bytes);
                fmt_size(sz, sizeof(sz), (double)d->size);
                snprintf(dl, sizeof(dl), "    deleted %7s  %s  (size %s)", bl, d->path ? d->path : "?", sz);
                put_untrusted(y++, 0, w, dl, vw);
            }
            for (size_t j = 0; j < d->nholders && y < h - 1; j++) {
                item++;
                if (line++ < vw->fs_top)
                    continue;
                const struct fs_holder *ho = &d->holders[j];
                char hl[160];
                snprintf(hl, sizeof(hl), "      held by %s[%d] fd %d %s", ho->comm[0] ? ho->comm : "?", (int)ho->pid,
                         ho->fd, fs_holder_mode(ho));
                bool sel = item == vw->fs_item;
                attrset(sel ? A_REVERSE : A_NORMAL);
                int x = put_untrusted(y, 0, w, hl, vw);
                if (sel)
                    for (; x < w - 1; x++)
                        addch(' ');
                attrset(A_NORMAL);
                y++;
            }
        }
    }
}
