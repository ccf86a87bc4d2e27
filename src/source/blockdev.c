/* SPDX-License-Identifier: GPL-2.0-or-later */
/* source/blockdev.c: sysfs block device attributes, reader and pure parsers. */
#include "source/blockdev.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util.h"

int blockdev_parse_scheduler(const char *buf, char active[BD_SCHED_MAX],
                             char list[BD_NSCHED][BD_SCHED_MAX])
{
    int n = sysfs_choices(buf, active, BD_SCHED_MAX, &list[0][0], BD_NSCHED);
    return n > BD_NSCHED ? BD_NSCHED : n;
}

unsigned blockdev_sched_modules(const char *modules_dir)
{
    static const struct { const char *path; unsigned bit; } mods[] = {
        { "kernel/block/bfq.ko", BD_LOAD_BFQ },
        { "kernel/block/mq-deadline.ko", BD_LOAD_DEADLINE },
        { "kernel/block/kyber-iosched.ko", BD_LOAD_KYBER },
    };
    static const char *const ext[] = { "", ".xz", ".zst", ".gz" };
    int dfd = open(modules_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0)
        return 0;
    unsigned got = 0;
    char path[96];
    for (size_t i = 0; i < sizeof(mods) / sizeof(mods[0]); i++)
        for (size_t e = 0; e < sizeof(ext) / sizeof(ext[0]); e++) {
            snprintf(path, sizeof(path), "%s%s", mods[i].path, ext[e]);
            if (faccessat(dfd, path, F_OK, 0) == 0) {
                got |= mods[i].bit;
                break;
            }
        }
    close(dfd);
    return got;
}

int blockdev_parse_inflight(const char *buf, long *r, long *w)
{
    char *end;
    errno = 0;
    long a = strtol(buf, &end, 10);
    if (end == buf || errno)
        return -EINVAL;
    const char *s = end;
    long b = strtol(s, &end, 10);
    if (end == s || errno || a < 0 || b < 0)
        return -EINVAL;
    *r = a;
    *w = b;
    return 0;
}

static int count_entries(int dirfd, const char *path)
{
    int fd = openat(dirfd, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return errno == ENOENT ? 0 : -1;
    int n = dir_count_fd(fd);
    close(fd);
    return n;
}

static void read_tunables(int qfd, struct blockdev_info *out)
{
    DIR *d = opendir_at(qfd, "iosched");
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d)) && out->ntunables < BD_NTUNABLES) {
        if (e->d_name[0] == '.' || strlen(e->d_name) >= sizeof(out->tunables[0].name))
            continue;
        char val[64];
        if (read_file_at(dirfd(d), e->d_name, val, sizeof(val)) <= 0)
            continue;
        struct bd_tunable *t = &out->tunables[out->ntunables++];
        str_copy(t->name, e->d_name, sizeof(t->name));
        str_copy(t->value, str_chomp(val), sizeof(t->value));
    }
    closedir(d);
    /* readdir order is arbitrary: sort so output is stable between samples. */
    for (unsigned i = 1; i < out->ntunables; i++)
        for (unsigned j = i; j > 0 && strcmp(out->tunables[j - 1].name, out->tunables[j].name) > 0; j--) {
            struct bd_tunable tmp = out->tunables[j];
            out->tunables[j] = out->tunables[j - 1];
            out->tunables[j - 1] = tmp;
        }
}

/* rc: what reading attribute `name` gave (<0: -errno). An absent attribute (ENOENT) is
 * the device's answer; anything else (EIO, EACCES...) leaves the field unknown. */
static void attr_failed(struct blockdev_info *out, const char *name, int rc)
{
    if (rc >= 0 || rc == -ENOENT || out->attr_err)
        return;
    out->attr_err = rc;
    str_copy(out->attr_err_name, name, sizeof(out->attr_err_name));
}

void blockdev_layer_text(const char *dm_uuid, const char *dm_name, const char *md_level,
                         char *out, size_t n)
{
    static const struct { const char *prefix, *kind; } kinds[] = {
        { "CRYPT-", "crypt" }, { "LVM-", "LVM" }, { "mpath-", "multipath" }, { "part", "partition" },
    };
    const char *kind = NULL;
    for (size_t i = 0; dm_uuid && i < sizeof(kinds) / sizeof(kinds[0]) && !kind; i++)
        if (strncmp(dm_uuid, kinds[i].prefix, strlen(kinds[i].prefix)) == 0)
            kind = kinds[i].kind;
    if (kind && strcmp(kind, "partition") == 0 && !(dm_uuid[4] >= '0' && dm_uuid[4] <= '9'))
        kind = NULL;                 /* kpartx: "part1-..."; not any uuid starting "part" */
    bool named = dm_name && dm_name[0];
    if (md_level && md_level[0] && !kind && !named)
        snprintf(out, n, "%s", md_level);
    else if (kind && named)
        snprintf(out, n, "%s, %s", kind, dm_name);
    else
        snprintf(out, n, "%s", kind ? kind : named ? dm_name : "");
}

/* The layer a bio-based device is (blockdev_info.layer), from dm/ or md/ below dfd. */
static void read_layer(int dfd, struct blockdev_info *out)
{
    char uuid[160] = "", name[BD_NAME_MAX] = "", level[24] = "";
    if (read_file_at(dfd, "dm/uuid", uuid, sizeof(uuid)) > 0)
        str_chomp(uuid);
    if (read_file_at(dfd, "dm/name", name, sizeof(name)) > 0)
        str_chomp(name);
    if (!uuid[0] && !name[0] && read_file_at(dfd, "md/level", level, sizeof(level)) > 0)
        str_chomp(level);
    blockdev_layer_text(uuid, name, level, out->layer, sizeof(out->layer));
}

int blockdev_read(int sys_fd, const char *name, struct blockdev_info *out)
{
    char path[256], buf[512];
    memset(out, 0, sizeof(*out));
    out->nr_requests = out->rotational = out->hw_queues = -1;
    out->inflight_r = out->inflight_w = -1;
    str_copy(out->disk, name, sizeof(out->disk));

    snprintf(path, sizeof(path), "class/block/%s", name);
    int dfd = openat(sys_fd, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0)
        return -errno;
    struct stat st;
    if (fstat(dfd, &st) == 0)
        out->ident = (unsigned long long)st.st_ino;

    /* Only partitions carry a `partition` attribute; their sysfs directory sits inside
     * the disk's, so the link target's parent is the disk. */
    out->partition = faccessat(dfd, "partition", F_OK, 0) == 0;
    if (out->partition) {
        ssize_t l = readlinkat(sys_fd, path, buf, sizeof(buf) - 1);
        if (l > 0) {
            buf[l] = '\0';
            char *slash = strrchr(buf, '/');
            if (slash) {
                *slash = '\0';
                char *parent = strrchr(buf, '/');
                str_copy(out->disk, parent ? parent + 1 : buf, sizeof(out->disk));
            }
        }
    }

    if (!out->partition)
        read_layer(dfd, out);
    ssize_t rd = read_file_at(dfd, "inflight", buf, sizeof(buf));
    if (rd > 0)
        blockdev_parse_inflight(buf, &out->inflight_r, &out->inflight_w);
    else
        attr_failed(out, "inflight", (int)rd);
    close(dfd);

    /* Deleted while we read? The kernel removes the class link before the directory, so a
     * device whose `partition` attribute vanished under us has lost its link by now: what
     * was read is half of a device that is gone (a partition would pass for a disk). */
    if (faccessat(sys_fd, path, F_OK, AT_SYMLINK_NOFOLLOW) != 0 && errno == ENOENT) {
        out->partition = false;
        out->inflight_r = out->inflight_w = -1;
        str_copy(out->disk, name, sizeof(out->disk));
        return -ENOENT;
    }

    snprintf(path, sizeof(path), "class/block/%s/mq", out->disk);
    out->hw_queues = count_entries(sys_fd, path);

    snprintf(path, sizeof(path), "class/block/%s/queue", out->disk);
    int qfd = openat(sys_fd, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (qfd < 0)
        return 0;
    out->has_queue = true;
    ssize_t rs = read_file_at(qfd, "scheduler", buf, sizeof(buf));
    attr_failed(out, "queue/scheduler", (int)rs);
    if (rs >= 0) {
        int n = blockdev_parse_scheduler(buf, out->scheduler, out->schedulers);
        out->nsched = n > 0 ? (unsigned)n : 0;
        /* "none" alone without brackets is what a queue that is not blk-mq shows (dm, md
         * on 6.1: block/elevator.c, elv_iosched_show() prints it when !queue_is_mq(q)); a
         * blk-mq queue always brackets the active choice, "[none]" included. Such a
         * device offers no scheduler: it is bio-based (6.18 hides the file instead). */
        if (out->scheduler[0] == '\0' && out->nsched == 1 && strcmp(out->schedulers[0], "none") == 0)
            out->nsched = 0;
    }
    out->nr_requests = read_long_at(qfd, "nr_requests");
    if (out->nr_requests < 0) {
        ssize_t rn = read_file_at(qfd, "nr_requests", buf, sizeof(buf));
        attr_failed(out, "queue/nr_requests", rn < 0 ? (int)rn : 0);
    }
    out->rotational = (int)read_long_at(qfd, "rotational");
    /* 6.1 shows a bio-based queue's nr_requests (128, the default nothing uses). */
    if (out->nsched == 0 && out->scheduler[0] == '\0' && out->hw_queues == 0)
        out->nr_requests = -1;
    if (out->scheduler[0] && strcmp(out->scheduler, "none") != 0)
        read_tunables(qfd, out);
    close(qfd);
    return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* A device read every refresh                                                                 */
/* ------------------------------------------------------------------------------------------ */

struct blockdev_handle {
    struct blockdev_info info;       /* as first read; the changing fields are read again */
    int inflight_fd, sched_fd, nr_fd, rot_fd;   /* sched_fd, nr_fd -1: a bio-based device's
                                                 * queue has neither attribute */
    int mq_fd;                       /* mq/, its entries counted each refresh; -1: bio-based */
    int tun_fd[BD_NTUNABLES];
};

void blockdev_handle_free(struct blockdev_handle *h)
{
    if (!h)
        return;
    int *fds[] = { &h->inflight_fd, &h->sched_fd, &h->nr_fd, &h->rot_fd, &h->mq_fd };
    for (size_t i = 0; i < sizeof(fds) / sizeof(fds[0]); i++)
        if (*fds[i] >= 0)
            close(*fds[i]);
    for (unsigned i = 0; i < h->info.ntunables; i++)
        if (h->tun_fd[i] >= 0)
            close(h->tun_fd[i]);
    free(h);
}

/* One attribute, read again from its start: sysfs shows it anew for a read at offset 0.
 * Returns its length, or -1 (the device or the attribute went away: ENODEV). */
static ssize_t pread_attr(int fd, char *buf, size_t cap)
{
    ssize_t r;
    do
        r = pread(fd, buf, cap - 1, 0);
    while (r < 0 && errno == EINTR);
    if (r < 0)
        return -1;
    buf[r] = '\0';
    return r;
}

static bool pread_long(int fd, long *out)
{
    char buf[64], *end;
    if (pread_attr(fd, buf, sizeof(buf)) <= 0)
        return false;
    errno = 0;
    long v = strtol(buf, &end, 10);
    if (end == buf || errno)
        return false;
    *out = v;
    return true;
}

static int open_attr(int sys_fd, const char *dev, const char *attr)
{
    char path[256];
    snprintf(path, sizeof(path), "class/block/%s/%s", dev, attr);
    return openat(sys_fd, path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
}

/* A bio-based device (zram, most dm targets): its queue has attributes but no
 * scheduler to choose, and no hardware queues. On kernels that hide the scheduler
 * attribute from such a queue (6.18 does) that is certain: a blk-mq disk being
 * registered, whose mq/ is not made yet, already shows its scheduler file. Older kernels
 * show "none" there, as for a blk-mq queue offering nothing else: no handle for those. */
static bool bio_based(const struct blockdev_info *b)
{
    return b->hw_queues == 0 && b->nsched == 0 && b->scheduler[0] == '\0' &&
           b->rotational >= 0 && !b->attr_err;
}

/* The files of a device just read by blockdev_read, kept open. NULL when any cannot be,
 * when the device is not the registration just read (removed and added again in
 * between: its directory has another inode), or when it has no request queue with
 * hardware queues yet and is not bio-based (a disk is listed in diskstats before its
 * queue/ and mq/ are made): such a device is read from scratch until its files can
 * stand for it. */
static struct blockdev_handle *handle_open(int sys_fd, const char *name, const struct blockdev_info *b)
{
    bool bio = bio_based(b);
    if (!b->has_queue || (b->hw_queues <= 0 && !bio) || b->ident == 0)
        return NULL;
    char path[256];
    snprintf(path, sizeof(path), "class/block/%s", name);
    int dfd = openat(sys_fd, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0)
        return NULL;
    struct stat st;
    if (fstat(dfd, &st) != 0 || (unsigned long long)st.st_ino != b->ident) {
        close(dfd);
        return NULL;
    }
    struct blockdev_handle *h = xcalloc(1, sizeof(*h));
    h->info = *b;
    h->sched_fd = h->nr_fd = h->rot_fd = h->mq_fd = -1;
    for (unsigned i = 0; i < BD_NTUNABLES; i++)
        h->tun_fd[i] = -1;
    h->inflight_fd = openat(dfd, "inflight", O_RDONLY | O_CLOEXEC | O_NOCTTY);
    close(dfd);
    bool ok = h->inflight_fd >= 0;
    h->rot_fd = open_attr(sys_fd, b->disk, "queue/rotational");
    ok = ok && h->rot_fd >= 0;
    if (!bio) {
        h->sched_fd = open_attr(sys_fd, b->disk, "queue/scheduler");
        h->nr_fd = open_attr(sys_fd, b->disk, "queue/nr_requests");
        ok = ok && h->sched_fd >= 0 && h->nr_fd >= 0;
    } else if (b->nr_requests >= 0) {
        h->nr_fd = open_attr(sys_fd, b->disk, "queue/nr_requests");
        ok = ok && h->nr_fd >= 0;
    }
    for (unsigned i = 0; ok && i < b->ntunables; i++) {
        char attr[64];
        snprintf(attr, sizeof(attr), "queue/iosched/%s", b->tunables[i].name);
        h->tun_fd[i] = open_attr(sys_fd, b->disk, attr);
        ok = h->tun_fd[i] >= 0;
    }
    if (ok && !bio) {
        snprintf(path, sizeof(path), "class/block/%s/mq", b->disk);
        h->mq_fd = openat(sys_fd, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        ok = h->mq_fd >= 0;
    }
    if (!ok) {
        blockdev_handle_free(h);
        return NULL;
    }
    return h;
}

/* Read what changes through the open files. Returns false when the device is not the one
 * the handle was opened on any more, or its scheduler changed (the iosched directory is
 * made anew): then it is read from scratch. */
static bool handle_read(struct blockdev_handle *h, struct blockdev_info *out)
{
    char buf[512];
    *out = h->info;
    if (pread_attr(h->inflight_fd, buf, sizeof(buf)) < 0)
        return false;
    out->inflight_r = out->inflight_w = -1;
    blockdev_parse_inflight(buf, &out->inflight_r, &out->inflight_w);
    if (h->sched_fd >= 0) {
        char active[BD_SCHED_MAX], list[BD_NSCHED][BD_SCHED_MAX];
        if (pread_attr(h->sched_fd, buf, sizeof(buf)) < 0)
            return false;
        int n = blockdev_parse_scheduler(buf, active, list);
        if (n < 0 || (unsigned)n != h->info.nsched ||
            (active[0] && strcmp(active, h->info.scheduler) != 0))
            return false;
        for (int i = 0; i < n && i < BD_NSCHED; i++)
            if (strcmp(list[i], h->info.schedulers[i]) != 0)
                return false;
    }
    if (h->nr_fd < 0 || !pread_long(h->nr_fd, &out->nr_requests))
        out->nr_requests = -1;
    long rot;
    out->rotational = pread_long(h->rot_fd, &rot) ? (int)rot : -1;
    for (unsigned i = 0; i < h->info.ntunables; i++) {
        if (pread_attr(h->tun_fd[i], buf, sizeof(buf)) < 0)
            return false;
        str_copy(out->tunables[i].value, str_chomp(buf), sizeof(out->tunables[i].value));
    }
    if (h->mq_fd >= 0) {
        int n = dir_count_fd(h->mq_fd);
        if (n < 0)
            return false;
        out->hw_queues = n;
    }
    h->info = *out;
    return true;
}

int blockdev_refresh(int sys_fd, const char *name, struct blockdev_handle **hp, bool may_open,
                     struct blockdev_info *out)
{
    if (*hp) {
        if (handle_read(*hp, out))
            return 0;
        blockdev_handle_free(*hp);
        *hp = NULL;
    }
    int rc = blockdev_read(sys_fd, name, out);
    if (rc == 0 && may_open)
        *hp = handle_open(sys_fd, name, out);
    return rc;
}

size_t blockdev_handle_files(const struct blockdev_handle *h)
{
    if (!h)
        return 0;
    size_t n = (h->inflight_fd >= 0) + (h->sched_fd >= 0) + (h->nr_fd >= 0) + (h->rot_fd >= 0) +
               (h->mq_fd >= 0);
    for (unsigned i = 0; i < h->info.ntunables; i++)
        n += h->tun_fd[i] >= 0;
    return n;
}
