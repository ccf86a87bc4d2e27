/* SPDX-License-Identifier: GPL-2.0-or-later */
/* snapshot_fs.c: the filesystems of a snapshot: mounts, used-bytes history, the device
 * their I/O meets, and deleted files still open. */
#include "snapshot.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "source/cgroups.h"
#include "source/fdmap.h"
#include "source/taskiter.h"
#include "source/threadstate.h"
#include "source/taskstats.h"
#include "util.h"
#include "snapshot_parts.h"

/* ---- Filesystems ---------------------------------------------------------------------- */

/* What the sampler remembers of a filesystem between snapshots. */
struct fs_track {
    dev_t dev;
    unsigned n;
    double mono[FS_HIST];
    uint64_t used[FS_HIST];
};

static int dev_index_of(const struct snapshot *snap, dev_t dev)
{
    return dev ? dev_index(snap, dev) : -1;
}

/* The device whose scheduler the filesystem's I/O meets: a partition's disk; the device
 * itself when it has a scheduler (a disk, a loop device, request-based dm); for a
 * bio-based dm or md device, the first queue-owning device below it (source/fdmap.h:
 * fdmap_resolve, a few sysfs reads, only for those). */
int disk_index_of(const struct sampler *s, const struct snapshot *snap, int idx)
{
    if (idx < 0)
        return -1;
    const struct dev_sample *d = &snap->devs[idx];
    if (d->bd.partition) {
        const struct dev_sample *disk = d->bd.disk[0] ? snapshot_dev(snap, d->bd.disk) : NULL;
        return disk ? (int)(disk - snap->devs) : -1;
    }
    if (d->bd.scheduler[0])
        return idx;
    dev_t below[FDMAP_MAX_DEVS];
    int n = fdmap_resolve(s->sys_fd, makedev(d->ds.major, d->ds.minor), below, FDMAP_MAX_DEVS, NULL);
    for (int i = 0; i < n; i++) {
        int k = dev_index(snap, below[i]);
        if (k >= 0)
            return k;
    }
    return -1;
}

/* Append this snapshot's used bytes to the filesystem's history; carry it into fs. */
static void fs_history(struct sampler *s, struct fs_track *old, size_t nold, struct fs_sample *fs,
                       double mono)
{
    struct fs_track t = { .dev = fs->fs.m.dev };
    for (size_t i = 0; i < nold; i++)
        if (old[i].dev == t.dev) {
            t = old[i];
            break;
        }
    if (fs->fs.statfs_err) {
        t.n = 0;                     /* no figure: the history starts again */
    } else {
        if (t.n == FS_HIST) {
            memmove(t.mono, t.mono + 1, (FS_HIST - 1) * sizeof(t.mono[0]));
            memmove(t.used, t.used + 1, (FS_HIST - 1) * sizeof(t.used[0]));
            t.n--;
        }
        t.mono[t.n] = mono;
        t.used[t.n] = fs->fs.used;
        t.n++;
    }
    fs->nhist = t.n;
    memcpy(fs->hist_mono, t.mono, sizeof(t.mono));
    memcpy(fs->hist_used, t.used, sizeof(t.used));
    s->fst[s->nfst++] = t;
}

static int cmp_deleted_ent(const void *a, const void *b)
{
    const struct fd_deleted *x = *(const struct fd_deleted *const *)a;
    const struct fd_deleted *y = *(const struct fd_deleted *const *)b;
    if (x->dev != y->dev)
        return x->dev < y->dev ? -1 : 1;
    if (x->ino != y->ino)
        return x->ino < y->ino ? -1 : 1;
    if (x->tgid != y->tgid)
        return x->tgid < y->tgid ? -1 : 1;
    return x->fd < y->fd ? -1 : x->fd > y->fd;
}

static int cmp_deleted_file(const void *a, const void *b)
{
    const struct fs_deleted_file *x = a, *y = b;
    if (x->blocks_bytes != y->blocks_bytes)
        return x->blocks_bytes > y->blocks_bytes ? -1 : 1;
    return x->ino < y->ino ? -1 : x->ino > y->ino;
}

static const struct task_sample *task_by_id(const struct snapshot *out, pid_t id)
{
    size_t lo = LOWER_BOUND_ID(out->tasks, out->ntasks, id, id);
    return lo < out->ntasks && out->tasks[lo].id == id ? &out->tasks[lo] : NULL;
}

/* The open flags of fd of pid (fdinfo), 0 or -errno. */
static int fd_flags(int proc_fd, pid_t pid, int fd, unsigned *flags)
{
    char path[48], buf[256];
    snprintf(path, sizeof(path), "%d/fdinfo/%d", (int)pid, fd);
    ssize_t n = read_file_at(proc_fd, path, buf, sizeof(buf));
    if (n < 0)
        return (int)n;
    return fdinfo_parse_flags(buf, (size_t)n, flags);
}

/* The fd's name: readlink of /proc/PID/fd/FD ("... (deleted)"); NULL when closed. */
static char *fd_name(int proc_fd, pid_t pid, int fd)
{
    char path[48], name[PATH_MAX];
    snprintf(path, sizeof(path), "%d/fd/%d", (int)pid, fd);
    ssize_t n = readlinkat(proc_fd, path, name, sizeof(name) - 1);
    if (n < 0)
        return NULL;
    name[n] = '\0';
    return xstrdup(name);
}

/* Is fd of pid still the file (dev, ino), still without a name? Its size and blocks now.
 * One statx through the /proc link: the fd scan that found it may be seconds old. */
static bool deleted_recheck(int proc_fd, pid_t pid, int fd, dev_t dev, ino_t ino,
                            struct fs_deleted_file *f)
{
    char path[48];
    snprintf(path, sizeof(path), "%d/fd/%d", (int)pid, fd);
    struct statx stx;
    if (statx(proc_fd, path, AT_STATX_DONT_SYNC | AT_NO_AUTOMOUNT,
              STATX_TYPE | STATX_NLINK | STATX_INO | STATX_SIZE | STATX_BLOCKS, &stx) != 0)
        return false;
    if (makedev(stx.stx_dev_major, stx.stx_dev_minor) != dev || stx.stx_ino != ino ||
        !(stx.stx_mask & STATX_NLINK) || stx.stx_nlink != 0)
        return false;
    f->size = stx.stx_size;
    f->blocks_bytes = (stx.stx_mask & STATX_BLOCKS) ? stx.stx_blocks * 512 : stx.stx_size;
    return true;
}

/* The deleted-but-open files the fd scan noted, grouped by (dev, ino) onto the
 * filesystem holding them, each holder checked again now (a statx), with its open flags
 * (an fdinfo read) and the file's name (one readlink): about 10 us a holder a refresh,
 * only for files on a filesystem listed. */
static void take_deleted(struct sampler *s, struct snapshot *out)
{
    const struct fd_deleted *ents;
    size_t n = fdmap_deleted(s->fdmap, &ents);
    bool complete = s->opts.npids == 0;
    for (size_t i = 0; complete && out->tdevs && i < out->ntasks; i++)
        complete = out->tdevs[i].err != -EACCES && out->tdevs[i].err != -EPERM;
    for (size_t i = 0; i < out->nfss; i++) {
        out->fss[i].deleted_known = s->takes > 0 || !s->opts.defer_idle_scans;   /* scan_deferred */
        out->fss[i].deleted_complete = complete;
    }
    if (n == 0)
        return;
    const struct fd_deleted **ord = xcalloc(n, sizeof(*ord));
    for (size_t i = 0; i < n; i++)
        ord[i] = &ents[i];
    qsort(ord, n, sizeof(*ord), cmp_deleted_ent);
    for (size_t i = 0; i < n;) {
        size_t j = i;
        while (j < n && ord[j]->dev == ord[i]->dev && ord[j]->ino == ord[i]->ino)
            j++;
        struct fs_sample *fs = NULL;
        for (size_t k = 0; k < out->nfss && !fs; k++)
            if (out->fss[k].fs.m.dev == ord[i]->dev)
                fs = &out->fss[k];
        if (!fs) {                   /* a memfd, or on a filesystem not watched */
            i = j;
            continue;
        }
        struct fs_deleted_file f = { .dev = ord[i]->dev, .ino = ord[i]->ino };
        f.holders = xcalloc(j - i, sizeof(*f.holders));
        bool sized = false;
        for (size_t k = i; k < j; k++) {
            const struct fd_deleted *e = ord[k];
            struct fs_deleted_file now;
            if (!deleted_recheck(s->proc_fd, e->tgid, e->fd, e->dev, e->ino, &now))
                continue;            /* closed, or another file on that fd since the scan */
            if (!sized) {
                f.size = now.size;
                f.blocks_bytes = now.blocks_bytes;
                f.path = fd_name(s->proc_fd, e->tgid, e->fd);
                sized = true;
            }
            struct fs_holder *h = &f.holders[f.nholders++];
            h->pid = e->tgid;
            h->fd = e->fd;
            h->flags_known = fd_flags(s->proc_fd, e->tgid, e->fd, &h->flags) == 0;
            h->append = h->flags_known && (h->flags & O_APPEND);
            const struct task_sample *t = task_by_id(out, e->tgid);
            if (t) {
                str_copy(h->comm, t->comm, sizeof(h->comm));
                h->start_ticks = t->start_ticks;
            }
        }
        i = j;
        if (!f.nholders) {
            free(f.holders);
            continue;
        }
        fs->del = xreallocarray(fs->del, fs->ndel + 1, sizeof(*fs->del));
        fs->del[fs->ndel++] = f;
        fs->deleted_bytes += f.blocks_bytes;
    }
    free(ord);
    for (size_t k = 0; k < out->nfss; k++)
        if (out->fss[k].ndel > 1)
            qsort(out->fss[k].del, out->fss[k].ndel, sizeof(out->fss[k].del[0]), cmp_deleted_file);
}

void take_filesystems(struct sampler *s, struct snapshot *out)
{
    struct fs_mount *mv;
    size_t n;
    out->fs_taken = true;
    out->mounts_err = mounts_src_read(s->mnt, &mv, &n);
    struct fs_track *old = s->fst;
    size_t nold = s->nfst;
    s->fst = xcalloc(n ? n : 1, sizeof(*s->fst));
    s->nfst = 0;
    if (out->mounts_err) {
        free(old);
        return;
    }
    out->fss = xcalloc(n ? n : 1, sizeof(*out->fss));
    out->nfss = n;
    for (size_t i = 0; i < n; i++) {
        struct fs_sample *fs = &out->fss[i];
        fs->fs = mv[i];
        fs->dev_idx = dev_index_of(out, mv[i].bdev);
        fs->disk_idx = disk_index_of(s, out, fs->dev_idx);
        fs_history(s, old, nold, fs, out->mono);
    }
    free(mv);                        /* the strings now belong to out->fss */
    free(old);
    if (s->fdmap)
        take_deleted(s, out);
}

void fs_samples_free(struct fs_sample *v, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        mount_entry_free(&v[i].fs.m);
        for (size_t k = 0; k < v[i].ndel; k++) {
            free(v[i].del[k].path);
            free(v[i].del[k].holders);
        }
        free(v[i].del);
    }
    free(v);
}
