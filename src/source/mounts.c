/* SPDX-License-Identifier: GPL-2.0-or-later */
/* source/mounts.c: mountinfo parser and the filesystems kept for the space view. */
#include "source/mounts.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/magic.h>
#include <poll.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "util.h"

/* mountinfo lines longer than this are not a real kernel's (paths are PATH_MAX at most,
 * escaped up to four bytes each, plus options): refused so the buffer stays bounded. */
#define MOUNTINFO_LIMIT (16u << 20)

static bool is_octal(char c)
{
    return c >= '0' && c <= '7';
}

size_t mountinfo_unescape(const char *s, size_t len, char *dst)
{
    size_t o = 0;
    for (size_t i = 0; i < len; i++) {
        if (s[i] == '\\' && i + 3 < len && is_octal(s[i + 1]) && is_octal(s[i + 2]) &&
            is_octal(s[i + 3])) {
            unsigned v = (unsigned)(s[i + 1] - '0') << 6 | (unsigned)(s[i + 2] - '0') << 3 |
                         (unsigned)(s[i + 3] - '0');
            if (v <= 0xff) {
                dst[o++] = (char)v;
                i += 3;
                continue;
            }
        }
        dst[o++] = s[i];
    }
    dst[o] = '\0';
    return o;
}

/* The next space-separated field of [*p, end): its start and length; false at the end. */
static bool next_field(const char **p, const char *end, const char **f, size_t *flen)
{
    const char *q = *p;
    while (q < end && *q == ' ')
        q++;
    if (q == end)
        return false;
    const char *s = q;
    while (q < end && *q != ' ')
        q++;
    *f = s;
    *flen = (size_t)(q - s);
    *p = q;
    return true;
}

static char *field_dup(const char *f, size_t len)
{
    char *s = xmalloc(len + 1);
    mountinfo_unescape(f, len, s);
    return s;
}

static int field_int(const char *f, size_t len, int *out)
{
    const char *p = f, *end = f + len;
    uint64_t v;
    if (parse_u64(&p, end, &v) || p != end || v > 0x7fffffff)
        return -EINVAL;
    *out = (int)v;
    return 0;
}

void mount_entry_free(struct mount_entry *m)
{
    free(m->root);
    free(m->mount);
    free(m->fstype);
    free(m->source);
    memset(m, 0, sizeof(*m));
}

/* "36 35 98:0 /mnt1 /mnt/parent rw,noatime master:1 - ext3 /dev/root rw,errors=continue":
 * id, parent, major:minor, root, mount point, options, optional fields up to "-", then
 * fstype, source, superblock options (proc(5)). */
int mountinfo_parse_line(const char *line, size_t len, struct mount_entry *out)
{
    memset(out, 0, sizeof(*out));
    const char *p = line, *end = line + len, *f[6];
    size_t fl[6];
    for (int i = 0; i < 6; i++)
        if (!next_field(&p, end, &f[i], &fl[i]))
            return -EINVAL;
    int id, parent;
    if (field_int(f[0], fl[0], &id) || field_int(f[1], fl[1], &parent))
        return -EINVAL;
    const char *colon = memchr(f[2], ':', fl[2]);
    int maj, min;
    if (!colon || field_int(f[2], (size_t)(colon - f[2]), &maj) ||
        field_int(colon + 1, (size_t)(f[2] + fl[2] - colon - 1), &min) || maj > 0xfff ||
        min > 0xfffff)
        return -EINVAL;
    if (f[3][0] != '/' || f[4][0] != '/')
        return -EINVAL;
    /* Optional fields, then the separator. */
    const char *sep;
    size_t seplen;
    do {
        if (!next_field(&p, end, &sep, &seplen))
            return -EINVAL;
    } while (!(seplen == 1 && sep[0] == '-'));
    const char *fs, *src;
    size_t fslen, srclen;
    if (!next_field(&p, end, &fs, &fslen) || !next_field(&p, end, &src, &srclen))
        return -EINVAL;
    out->id = id;
    out->parent = parent;
    out->dev = makedev((unsigned)maj, (unsigned)min);
    out->root = field_dup(f[3], fl[3]);
    out->mount = field_dup(f[4], fl[4]);
    out->fstype = field_dup(fs, fslen);
    out->source = field_dup(src, srclen);
    return 0;
}

int mountinfo_parse(const char *buf, size_t len, struct mount_entry **out, size_t *n,
                    unsigned *bad)
{
    struct mount_entry *v = NULL;
    size_t cnt = 0, cap = 0;
    unsigned nbad = 0;
    const char *p = buf, *end = buf + len;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *eol = nl ? nl : end;
        if (eol > p) {
            if (cnt == cap) {
                cap = cap ? 2 * cap : 32;
                v = xreallocarray(v, cap, sizeof(*v));
            }
            if (mountinfo_parse_line(p, (size_t)(eol - p), &v[cnt]) == 0)
                cnt++;
            else
                nbad++;
        }
        p = nl ? nl + 1 : end;
    }
    *out = v;
    *n = cnt;
    if (bad)
        *bad = nbad;
    return 0;
}

void mountinfo_free(struct mount_entry *v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        mount_entry_free(&v[i]);
    free(v);
}

void mounts_free(struct fs_mount *v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        mount_entry_free(&v[i].m);
    free(v);
}

void mounts_fill_statvfs(struct fs_mount *fs, const struct statvfs *st)
{
    uint64_t fr = st->f_frsize ? st->f_frsize : st->f_bsize;
    fs->size = (uint64_t)st->f_blocks * fr;
    fs->used = st->f_blocks >= st->f_bfree ? (uint64_t)(st->f_blocks - st->f_bfree) * fr : 0;
    fs->avail = (uint64_t)st->f_bavail * fr;
    if (st->f_files == 0) {
        fs->inodes_total = fs->inodes_used = -1;
    } else {
        fs->inodes_total = (int64_t)st->f_files;
        fs->inodes_used = st->f_files >= st->f_ffree ? (int64_t)(st->f_files - st->f_ffree) : 0;
    }
}

static bool has_sysfs_dev(int sys_fd, dev_t dev)
{
    char path[64];
    snprintf(path, sizeof(path), "dev/block/%u:%u", major(dev), minor(dev));
    return faccessat(sys_fd, path, F_OK, 0) == 0;
}

static bool remote_or_daemon(const char *fstype)
{
    static const char *const skip[] = { "nfs", "nfs4", "cifs", "smb3", "smbfs", "ceph",
                                        "9p", "virtiofs", "afs", "glusterfs", "lustre" };
    if (strncmp(fstype, "fuse", 4) == 0)
        return true;
    for (size_t i = 0; i < ARRAY_SIZE(skip); i++)
        if (strcmp(fstype, skip[i]) == 0)
            return true;
    return false;
}

bool mount_is_netfs(const struct mount_entry *e)
{
    return remote_or_daemon(e->fstype) && major(e->dev) == 0;
}

/* The block device under mount entry e, or 0 when it has none we can name. */
static dev_t backing_dev(int sys_fd, const struct mount_entry *e)
{
    if (major(e->dev) != 0)
        return has_sysfs_dev(sys_fd, e->dev) ? e->dev : 0;
    /* btrfs: files carry an anonymous 0:N; the source names the device. /dev is
     * devtmpfs, a stat there asks no daemon. */
    struct stat st;
    if (strncmp(e->source, "/dev/", 5) == 0 && stat(e->source, &st) == 0 && S_ISBLK(st.st_mode) &&
        has_sysfs_dev(sys_fd, st.st_rdev))
        return st.st_rdev;
    return 0;
}

/* e into the netfs list (one per superblock, the first mount of it), or freed. */
static void netfs_keep(struct mount_entry *e, struct mount_entry *nv, size_t *nn)
{
    size_t j = 0;
    while (nv && j < *nn && nv[j].dev != e->dev)
        j++;
    if (!nv || !mount_is_netfs(e) || j < *nn) {
        mount_entry_free(e);
        return;
    }
    nv[(*nn)++] = *e;
}

/* The filesystems kept from a mountinfo text, before the cover check and the figures; and
 * when nout is not NULL, the mount_is_netfs ones. */
static void mounts_list(const char *buf, size_t len, int sys_fd, struct fs_mount **out, size_t *n,
                        struct mount_entry **nout, size_t *nn)
{
    struct mount_entry *e;
    size_t ne;
    mountinfo_parse(buf, len, &e, &ne, NULL);
    struct fs_mount *v = xcalloc(ne ? ne : 1, sizeof(*v));
    struct mount_entry *nv = nout ? xcalloc(ne ? ne : 1, sizeof(*nv)) : NULL;
    size_t k = 0;
    if (nn)
        *nn = 0;
    for (size_t i = 0; i < ne; i++) {
        bool tmpfs = strcmp(e[i].fstype, "tmpfs") == 0;
        dev_t bdev = 0;
        if (remote_or_daemon(e[i].fstype) || (!tmpfs && !(bdev = backing_dev(sys_fd, &e[i])))) {
            netfs_keep(&e[i], nv, nn);
            continue;
        }
        /* The same superblock again: keep one, preferring the mount of its root. */
        size_t j = 0;
        while (j < k && v[j].m.dev != e[i].dev)
            j++;
        if (j < k) {
            if (strcmp(v[j].m.root, "/") != 0 && strcmp(e[i].root, "/") == 0) {
                mount_entry_free(&v[j].m);
                v[j].m = e[i];
            } else {
                mount_entry_free(&e[i]);
            }
            continue;
        }
        v[k].m = e[i];
        v[k].bdev = bdev;
        k++;
    }
    free(e);
    *out = v;
    *n = k;
    if (nout)
        *nout = nv;
}

/* A mount covered by a later one on the same path (tmpfs mounted twice on /dev/shm)
 * cannot be reached by its path: its figures would be the cover's. 1 covered, 0 not,
 * -errno when its path cannot be looked at (gone: renamed or unmounted since). */
static int covered(const struct fs_mount *fm)
{
    struct stat pst;
    if (stat(fm->m.mount, &pst) != 0)
        return -errno;
    return pst.st_dev != fm->m.dev;
}

static void take_figures(struct fs_mount *fm)
{
    struct statvfs st;
    if (statvfs(fm->m.mount, &st) != 0) {
        fm->statfs_err = -errno;
        fm->inodes_total = fm->inodes_used = -1;
        return;
    }
    mounts_fill_statvfs(fm, &st);
    fm->read_only = (st.f_flag & ST_RDONLY) != 0;
}

int mounts_read(int proc_fd, int sys_fd, struct fs_mount **out, size_t *n)
{
    *out = NULL;
    *n = 0;
    char *buf;
    ssize_t len = read_file_alloc_at(proc_fd, "self/mountinfo", &buf, MOUNTINFO_LIMIT);
    if (len < 0)
        return (int)len;
    struct fs_mount *v;
    size_t k;
    mounts_list(buf, (size_t)len, sys_fd, &v, &k, NULL, NULL);
    free(buf);
    size_t kept = 0;
    for (size_t i = 0; i < k; i++) {
        if (covered(&v[i]) == 1) {
            mount_entry_free(&v[i].m);
            continue;
        }
        struct fs_mount *fm = &v[kept++];
        if (fm != &v[i])
            *fm = v[i];
        take_figures(fm);
    }
    *out = v;
    *n = kept;
    return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* The mount table kept between refreshes                                                      */
/* ------------------------------------------------------------------------------------------ */

struct mounts_src {
    int proc_fd, sys_fd;
    int fd;                          /* self/mountinfo, kept open; -1: read by path */
    bool pollable;                   /* fd is procfs's: POLLPRI says the table changed */
    bool valid;                      /* list[] is the table as last read */
    struct fs_mount *list;           /* kept, before the cover check and the figures */
    size_t n;
    struct mount_entry *netfs;       /* mount_is_netfs ones (mounts_src_netfs) */
    size_t nnetfs;
};

struct mounts_src *mounts_src_new(int proc_fd, int sys_fd)
{
    struct mounts_src *s = xcalloc(1, sizeof(*s));
    s->proc_fd = proc_fd;
    s->sys_fd = sys_fd;
    s->fd = openat(proc_fd, "self/mountinfo", O_RDONLY | O_CLOEXEC | O_NOCTTY);
    struct statfs sf;
    s->pollable = s->fd >= 0 && fstatfs(s->fd, &sf) == 0 && sf.f_type == PROC_SUPER_MAGIC;
    if (s->fd >= 0 && !s->pollable) {
        close(s->fd);
        s->fd = -1;
    }
    return s;
}

void mounts_src_free(struct mounts_src *s)
{
    if (!s)
        return;
    if (s->fd >= 0)
        close(s->fd);
    mounts_free(s->list, s->n);
    mountinfo_free(s->netfs, s->nnetfs);
    free(s);
}

/* Whether the table may have changed since it was last read: always, where it cannot be
 * polled. The event is the kernel's per open file: reported once per change. */
static bool table_changed(struct mounts_src *s)
{
    if (!s->pollable || !s->valid)
        return true;
    struct pollfd p = { .fd = s->fd, .events = POLLPRI };
    return poll(&p, 1, 0) != 0;      /* an error re-reads too */
}

static int table_read(struct mounts_src *s)
{
    mounts_free(s->list, s->n);
    s->list = NULL;
    s->n = 0;
    mountinfo_free(s->netfs, s->nnetfs);
    s->netfs = NULL;
    s->nnetfs = 0;
    s->valid = false;
    char *buf;
    ssize_t len = s->fd >= 0 && lseek(s->fd, 0, SEEK_SET) == 0
                      ? read_fd_alloc(s->fd, &buf, MOUNTINFO_LIMIT)
                      : read_file_alloc_at(s->proc_fd, "self/mountinfo", &buf, MOUNTINFO_LIMIT);
    if (len < 0)
        return (int)len;
    mounts_list(buf, (size_t)len, s->sys_fd, &s->list, &s->n, &s->netfs, &s->nnetfs);
    free(buf);
    s->valid = true;
    return 0;
}

size_t mounts_src_netfs(struct mounts_src *s, const struct mount_entry **out)
{
    *out = NULL;
    if (table_changed(s) && table_read(s) < 0)
        return 0;
    *out = s->netfs;
    return s->nnetfs;
}

static char *dup_or_null(const char *t)
{
    return t ? xstrdup(t) : NULL;
}

int mounts_src_read(struct mounts_src *s, struct fs_mount **out, size_t *n)
{
    *out = NULL;
    *n = 0;
    bool fresh = table_changed(s);
    for (int pass = 0; pass < 2; pass++) {
        if (fresh) {
            int rc = table_read(s);
            if (rc < 0)
                return rc;
        }
        struct fs_mount *v = xcalloc(s->n ? s->n : 1, sizeof(*v));
        size_t kept = 0;
        bool stale = false;
        for (size_t i = 0; i < s->n && !stale; i++) {
            int c = covered(&s->list[i]);
            /* A kept table whose mount point is gone (a directory above it renamed: no
             * mount event) is read again at once. */
            stale = c < 0 && !fresh;
            if (c == 1 || stale)
                continue;
            struct fs_mount *fm = &v[kept++];
            *fm = s->list[i];
            fm->m.root = dup_or_null(s->list[i].m.root);
            fm->m.mount = dup_or_null(s->list[i].m.mount);
            fm->m.fstype = dup_or_null(s->list[i].m.fstype);
            fm->m.source = dup_or_null(s->list[i].m.source);
            take_figures(fm);
        }
        if (!stale) {
            *out = v;
            *n = kept;
            return 0;
        }
        mounts_free(v, kept);
        fresh = true;
    }
    return 0;                        /* not reached: a fresh pass is never stale */
}
