/* SPDX-License-Identifier: GPL-2.0-or-later */
/* tui/view.c: the view state's own helpers, shared by the loop (tui.c), the dialogs
 * (actions.c, dialog_*.c) and the painter (draw.c, view_*.c): per-device history,
 * before/after. */
#include "tui/view.h"

#include <fcntl.h>
#include <math.h>
#include <string.h>

#include "util.h"

const struct spark *spark_find(const struct view *vw, const char *name)
{
    for (size_t i = 0; i < vw->nsparks; i++)
        if (strcmp(vw->sparks[i].name, name) == 0)
            return &vw->sparks[i];
    return NULL;
}

void spark_push(struct view *vw, const struct dev_rates *d, double mono, double itv)
{
    const char *name = d->dev->ds.name;
    struct spark *s = NULL;
    for (size_t i = 0; i < vw->nsparks && !s; i++)
        if (strcmp(vw->sparks[i].name, name) == 0)
            s = &vw->sparks[i];
    if (!s) {
        vw->sparks = xreallocarray(vw->sparks, vw->nsparks + 1, sizeof(*vw->sparks));
        s = &vw->sparks[vw->nsparks++];
        memset(s, 0, sizeof(*s));
        str_copy(s->name, name, sizeof(s->name));
    }
    s->v[s->head] = d->r_s + d->w_s;
    s->await[s->head] = d->await;
    s->aqu[s->head] = d->aqu_sz;
    s->util[s->head] = d->util;
    s->t[s->head] = mono;
    s->itv[s->head] = itv;
    s->head = (s->head + 1) % SPARK_LEN;
    if (s->n < SPARK_LEN)
        s->n++;
}

struct dev_figs switch_after(const struct switch_mark *m)
{
    struct dev_figs f = { (double)NAN, (double)NAN, (double)NAN, (double)NAN, m->sum_secs, m->n_after };
    if (m->sum_secs > 0) {
        f.iops = m->sum_iops / m->sum_secs, f.aqu = m->sum_aqu / m->sum_secs, f.util = m->sum_util / m->sum_secs;
        f.await = m->await_secs > 0 ? m->sum_await / m->await_secs : (double)NAN;
    }
    return f;
}


size_t fs_items(const struct fs_sample *fs)
{
    size_t n = 0;
    for (size_t k = 0; fs->deleted_known && k < fs->ndel; k++)
        n += fs->del[k].nholders;
    return n;
}

bool fs_item_find(const struct fs_sample *fs, size_t item, size_t *file, size_t *holder)
{
    if (item == 0 || !fs->deleted_known)
        return false;
    size_t k = item - 1;
    for (size_t f = 0; f < fs->ndel; f++) {
        if (k < fs->del[f].nholders) {
            *file = f;
            *holder = k;
            return true;
        }
        k -= fs->del[f].nholders;
    }
    return false;
}

void fs_item_pick(struct view *vw, const struct fs_sample *fs)
{
    size_t f, h;
    memset(&vw->fs_pick, 0, sizeof(vw->fs_pick));
    if (fs && fs_item_find(fs, vw->fs_item, &f, &h)) {
        vw->fs_pick.pid = fs->del[f].holders[h].pid;
        vw->fs_pick.fd = fs->del[f].holders[h].fd;
        vw->fs_pick.ino = fs->del[f].ino;
    }
}

void fs_item_sync(struct view *vw, const struct fs_sample *fs)
{
    size_t item = 0, n = fs_items(fs);
    if (vw->fs_pick.pid)
        for (size_t f = 0; fs->deleted_known && f < fs->ndel; f++)
            for (size_t h = 0; h < fs->del[f].nholders; h++) {
                item++;
                const struct fs_holder *x = &fs->del[f].holders[h];
                if (x->pid == vw->fs_pick.pid && x->fd == vw->fs_pick.fd && fs->del[f].ino == vw->fs_pick.ino) {
                    vw->fs_item = item;
                    return;
                }
            }
    if (vw->fs_item > n)
        vw->fs_item = n;
    fs_item_pick(vw, fs);            /* gone: the holder now in its place */
}

const char *fs_holder_mode(const struct fs_holder *h)
{
    if (!h->flags_known)
        return "flags unknown";
    switch (h->flags & O_ACCMODE) {
    case O_RDONLY: return "read-only";
    case O_WRONLY: return h->append ? "append, write-only" : "no-append, write-only";
    default:       return h->append ? "append, read-write" : "no-append, read-write";
    }
}
