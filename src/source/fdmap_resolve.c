/* SPDX-License-Identifier: GPL-2.0-or-later */
/* source/fdmap_resolve.c: the resolution of one dev_t through sysfs for fdmap.c: a
 * partition to its disk, a stacked or loop device to the devices below it, and what
 * tells that the answer went stale. */
#include "source/fdmap.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "source/blkstack.h"
#include "source/blockdev.h"
#include "util.h"
#include "fdmap_parts.h"

/* ------------------------------------------------------------------------------------------ */
/* Resolution of one dev_t through sysfs                                                       */
/* ------------------------------------------------------------------------------------------ */


/* Insert dev into the ascending set devs[0..*n), once. When full, say so and keep the
 * smallest: the same devices whatever order readdir gave them in. */
void set_add(dev_t *devs, unsigned *n, bool *truncated, dev_t dev)
{
    unsigned i = 0;
    while (i < *n && devs[i] < dev)
        i++;
    if (i < *n && devs[i] == dev)
        return;
    if (*n == FDMAP_MAX_DEVS) {
        *truncated = true;
        if (i == *n)
            return;
        (*n)--;
    }
    memmove(&devs[i + 1], &devs[i], (*n - i) * sizeof(devs[0]));
    devs[i] = dev;
    (*n)++;
}

static void dev_path(char *buf, size_t size, dev_t dev, const char *suffix)
{
    snprintf(buf, size, "dev/block/%u:%u%s", major(dev), minor(dev), suffix);
}

static ino_t ino_at(int dirfd, const char *path)
{
    struct stat st;
    return fstatat(dirfd, path, &st, 0) == 0 ? st.st_ino : 0;
}

/* A sysfs `dev` file below dirfd. */
static int read_dev_at(int dirfd, const char *path, dev_t *out)
{
    char buf[32];
    ssize_t n = read_file_at(dirfd, path, buf, sizeof(buf));
    if (n < 0)
        return (int)n;
    unsigned maj, min;
    if (parse_majmin(buf, (size_t)n, &maj, &min))
        return -EINVAL;
    *out = makedev(maj, min);
    return 0;
}

/* A queue with a scheduler to choose shows the active one in brackets, "[none]"
 * included. Bio-based devices have no such file on recent kernels (zram on 6.18), an
 * empty one, or a bare "none" on older kernels: nothing to choose, so not kept. */
static bool has_scheduler(int devfd)
{
    char buf[256], active[BD_SCHED_MAX], list[BD_NSCHED][BD_SCHED_MAX];
    if (read_file_at(devfd, "queue/scheduler", buf, sizeof(buf)) <= 0)
        return false;
    return blockdev_parse_scheduler(buf, active, list) > 0 && active[0] != '\0';
}

void facts_of_statx(const struct statx *stx, int fd, struct fd_facts *f)
{
    f->fd = fd;
    f->type = (stx->stx_mask & STATX_TYPE) ? (mode_t)(stx->stx_mode & S_IFMT) : 0;
    f->nlink_known = (stx->stx_mask & STATX_NLINK) != 0;
    f->nlink = stx->stx_nlink;
    f->dev = makedev(stx->stx_dev_major, stx->stx_dev_minor);
    f->rdev = makedev(stx->stx_rdev_major, stx->stx_rdev_minor);
    f->ino = (ino_t)stx->stx_ino;
    f->size = stx->stx_size;
    f->blocks_bytes = (stx->stx_mask & STATX_BLOCKS) ? stx->stx_blocks * 512 : stx->stx_size;
    f->buffered = -1;
}

/* The kernel's dev_t layout (major << 20 | minor), as the iterator copies it. */
dev_t kdev(uint32_t d)
{
    return makedev(d >> 20, d & 0xfffffu);
}

/* Which device a file's I/O goes to: a block device's own number, or the device of the
 * filesystem holding a regular file or directory. A statx that could not say the type
 * (FUSE refuses attributes to other users but still gives st_dev for an empty request
 * mask) is taken as a file on its filesystem. *may_write: the kind of file whose buffered
 * writes go through the page cache. False for anything on an anonymous device. */
bool facts_device(const struct fd_facts *f, dev_t *dev, bool *may_write)
{
    if (f->type == S_IFBLK)
        *dev = f->rdev;
    else if (f->type == 0 || f->type == S_IFREG || f->type == S_IFDIR)
        *dev = f->dev;
    else
        return false;
    *may_write = f->type != S_IFDIR;
    return major(*dev) != 0;
}

/* statx asking for nothing and trusting cached attributes: st_dev and the type are all we
 * need, and neither a FUSE daemon nor an NFS server is asked (a hung one would hang the
 * monitor). Only the path walk of a loop's backing file can still reach them. */
int statx_cached(int dirfd, const char *path, struct statx *stx)
{
    return statx(dirfd, path, AT_STATX_DONT_SYNC | AT_NO_AUTOMOUNT, 0, stx) ? -errno : 0;
}

/* The device a loop device's backing file lives on (or the backing block device). The
 * path is the kernel's d_path in our mount namespace; " (deleted)" or a path from another
 * namespace simply fails to stat, leaving the loop device alone. */
static int loop_backing_dev(int loopfd, dev_t *out)
{
    char path[PATH_MAX];
    ssize_t n = read_file_at(loopfd, "backing_file", path, sizeof(path));
    if (n < 0)
        return (int)n;
    str_chomp(path);
    if (path[0] != '/')
        return -EINVAL;
    struct statx stx;
    int err = statx_cached(AT_FDCWD, path, &stx);
    if (err)
        return err;
    struct fd_facts f;
    facts_of_statx(&stx, -1, &f);
    bool may_write;
    return facts_device(&f, out, &may_write) ? 0 : -ENODEV;
}

static bool visited(const struct resolution *r, dev_t dev)
{
    for (unsigned i = 0; i < r->nvisits; i++)
        if (r->visits[i].dev == dev)
            return true;
    return false;
}

static int walk(int sys_fd, dev_t dev, unsigned depth, struct resolution *r);

/* A device below the current one: a missing or unreadable one only loses that branch. */
static void walk_below(int sys_fd, dev_t dev, unsigned depth, struct resolution *r)
{
    if (depth > FDMAP_MAX_DEPTH) {
        r->truncated = true;
        return;
    }
    (void)walk(sys_fd, dev, depth, r);
}

/* Devices listed as <list>/<name> links to their directories: dm and md list what they
 * stack on in slaves/. The listing is blkstack's, the one every stack walk uses. */
struct list_walk {
    int sys_fd;
    unsigned depth;
    struct resolution *r;
};

static int walk_entry(void *ctx, int dirfd, const char *name)
{
    const struct list_walk *lw = ctx;
    char path[NAME_MAX + 8];
    dev_t below;
    snprintf(path, sizeof(path), "%s/dev", name);
    if (read_dev_at(dirfd, path, &below) == 0)
        walk_below(lw->sys_fd, below, lw->depth + 1, lw->r);
    return 0;
}

static void walk_list(int sys_fd, int devfd, const char *list, unsigned depth,
                      struct resolution *r)
{
    struct list_walk lw = { .sys_fd = sys_fd, .depth = depth, .r = r };
    (void)blkstack_each(devfd, list, walk_entry, &lw);
}

static int walk(int sys_fd, dev_t dev, unsigned depth, struct resolution *r)
{
    /* Seen already: a cycle, or two partitions of one disk under one dm device. */
    if (visited(r, dev))
        return 0;
    if (r->nvisits == MAX_VISITS) {
        r->truncated = true;
        return 0;
    }
    /* Recorded even when absent, so that a device appearing later is noticed. */
    struct visit *v = &r->visits[r->nvisits++];
    *v = (struct visit){ .dev = dev };

    char path[64];
    dev_path(path, sizeof(path), dev, "");
    int fd = openat(sys_fd, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    struct stat st;
    v->dir_ino = fstat(fd, &st) == 0 ? st.st_ino : 0;
    v->loop_ino = ino_at(fd, "loop");

    /* A partition shares its disk's queue; its directory sits inside the disk's. */
    if (faccessat(fd, "partition", F_OK, 0) == 0) {
        r->partition |= depth == 0;
        dev_t disk;
        if (read_dev_at(fd, "../dev", &disk) == 0)
            walk_below(sys_fd, disk, depth + 1, r);
        close(fd);
        return 0;
    }
    if (has_scheduler(fd))
        set_add(r->devs, &r->n, &r->truncated, dev);
    walk_list(sys_fd, fd, "slaves", depth, r);
    /* NVMe native multipath: the namespace head (nvme0n1) is bio-based and its paths,
     * hidden disks with the request queues (nvme0c0n1...), are linked from multipath/,
     * not slaves/ (drivers/nvme/host/multipath.c:nvme_mpath_add_disk). Not seen on this
     * machine: no NVMe here. */
    walk_list(sys_fd, fd, "multipath", depth, r);
    /* A loop device queues its own requests, then reads and writes its backing file:
     * that I/O lands on the backing file's device too. */
    if (v->loop_ino) {
        int lfd = openat(fd, "loop", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        dev_t backing;
        if (lfd >= 0 && loop_backing_dev(lfd, &backing) == 0)
            walk_below(sys_fd, backing, depth + 1, r);
        if (lfd >= 0)
            close(lfd);
    }
    close(fd);
    return 0;
}

void resolve(int sys_fd, dev_t dev, struct resolution *r)
{
    memset(r, 0, sizeof(*r));
    r->err = walk(sys_fd, dev, 0, r);
}

int fdmap_resolve(int sys_fd, dev_t dev, dev_t *out, unsigned max, bool *truncated)
{
    struct resolution r;
    resolve(sys_fd, dev, &r);
    if (truncated)
        *truncated = r.truncated || r.n > max;
    if (r.err)
        return r.err;
    unsigned n = r.n < max ? r.n : max;
    memcpy(out, r.devs, n * sizeof(out[0]));
    return (int)n;
}

/* Whether any device the resolution visited was removed, re-created or re-attached. */
bool visits_changed(int sys_fd, const struct resolution *r)
{
    char path[64];
    for (unsigned i = 0; i < r->nvisits; i++) {
        const struct visit *v = &r->visits[i];
        dev_path(path, sizeof(path), v->dev, "");
        if (ino_at(sys_fd, path) != v->dir_ino)
            return true;
        dev_path(path, sizeof(path), v->dev, "/loop");
        if (ino_at(sys_fd, path) != v->loop_ino)
            return true;
    }
    return false;
}
