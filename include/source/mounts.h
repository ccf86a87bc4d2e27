/* SPDX-License-Identifier: GPL-2.0-or-later */
/* source/mounts.h: the mounted filesystems worth watching for space, from
 * /proc/self/mountinfo and statvfs(3).
 *
 * Kept: a filesystem backed by a block device and tmpfs. Backed by a block device means
 * the mountinfo major:minor names one with a /sys/dev/block/MAJ:MIN entry, or (btrfs,
 * whose st_dev is an anonymous 0:N per subvolume) the mount source is a /dev path naming
 * a block device that has one. Left out: everything on another machine or behind a
 * daemon (nfs, cifs, fuse, fuseblk): statvfs there asks a server that may hang the
 * monitor. A filesystem mounted several times (bind mounts, a subvolume twice) is one
 * superblock and one set of figures: it is listed once, under the mount whose root is
 * "/" when there is one, else the first in mountinfo order. A mount covered by another
 * on the same path (its mount point's st_dev is the cover's) is left out: no path
 * reaches it.
 *
 * Ownership: mounts_read and mountinfo_parse return malloc'd arrays whose strings are
 * their own; free with mounts_free. Nothing here prints or exits.
 */
#ifndef IOTRIAGE_SOURCE_MOUNTS_H
#define IOTRIAGE_SOURCE_MOUNTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* One line of mountinfo (proc(5)), octal escapes (\040 \011 \012 \134) decoded. */
struct mount_entry {
    int      id, parent;
    dev_t    dev;                    /* major:minor, the st_dev of every file on it */
    char    *root;                   /* the directory of the filesystem mounted there */
    char    *mount;                  /* the mount point */
    char    *fstype;                 /* "ext4", "tmpfs", "btrfs"... */
    char    *source;                 /* "/dev/vda1", "tmpfs"... */
};

/* A filesystem kept by mounts_read, with its figures. Sizes in bytes. */
struct fs_mount {
    struct mount_entry m;
    dev_t    bdev;                   /* the block device it lives on (a partition, dm, loop,
                                      * a whole disk); 0 for tmpfs */
    bool     read_only;              /* ST_RDONLY: nothing can fill it */
    int      statfs_err;             /* 0 or -errno of statvfs: then the figures are 0 */
    uint64_t size, used, avail;      /* f_blocks, f_blocks - f_bfree, f_bavail, x f_frsize */
    int64_t  inodes_total, inodes_used;   /* -1: the filesystem does not count inodes
                                           * (btrfs reports f_files 0) */
};

/* Pure: all of a mountinfo text buf[0, len) (no NUL needed). *out is malloc'd (NULL when
 * *n is 0). Lines that do not parse are skipped and counted in *bad (may be NULL).
 * Returns 0. */
int  mountinfo_parse(const char *buf, size_t len, struct mount_entry **out, size_t *n,
                     unsigned *bad);

/* Pure: one line (no newline) into *out (strings malloc'd; free with mount_entry_free).
 * Returns 0 or -EINVAL. */
int  mountinfo_parse_line(const char *line, size_t len, struct mount_entry *out);

/* Pure: decode mountinfo's octal escapes of field [s, s+len) into dst (room for len + 1
 * bytes); a backslash not followed by three octal digits of a byte value stays as is.
 * Returns the decoded length. */
size_t mountinfo_unescape(const char *s, size_t len, char *dst);

/* Read proc_fd's self/mountinfo (proc_fd: a directory fd of /proc), keep the filesystems
 * described above (sys_fd: a directory fd of /sys, for dev/block/MAJ:MIN), statvfs each.
 * Returns 0 or -errno (mountinfo unreadable). */
int  mounts_read(int proc_fd, int sys_fd, struct fs_mount **out, size_t *n);

/* The same, kept between refreshes: /proc/self/mountinfo stays open and is read and
 * parsed again only when the kernel says the table changed (poll: POLLPRI after a mount
 * or unmount in our namespace since the last poll), or when a kept mount point can no
 * longer be looked at (a directory above it renamed, which no event reports). The cover
 * check and the figures are taken every time. A tree that is not procfs (--proc-root)
 * is read every time. mounts_src_new never fails: a table it cannot read is reported by
 * mounts_src_read. */
struct mounts_src;
struct mounts_src *mounts_src_new(int proc_fd, int sys_fd);
int  mounts_src_read(struct mounts_src *s, struct fs_mount **out, size_t *n);
void mounts_src_free(struct mounts_src *s);

/* Pure: is e a filesystem with no block device whose files a daemon or another machine
 * serves (nfs, nfs4, cifs, smb3, smbfs, ceph, 9p, virtiofs, afs, glusterfs, lustre, fuse
 * and fuse.*) with an anonymous st_dev (major 0: fuseblk, on a block device, is not)? A
 * wait on its files is no block I/O of the waiter's (verdicts.md "io-pressure-not-block").
 * The same types mounts_read leaves out. */
bool mount_is_netfs(const struct mount_entry *e);

/* The mount_is_netfs mounts of the table, one per superblock (st_dev), as last read (read
 * again first when it changed, as mounts_src_read). Borrowed: valid until the next call
 * on s. 0 when there is none or the table cannot be read. */
size_t mounts_src_netfs(struct mounts_src *s, const struct mount_entry **out);

/* Pure: the figures of a statvfs result. */
struct statvfs;
void mounts_fill_statvfs(struct fs_mount *fs, const struct statvfs *st);

void mount_entry_free(struct mount_entry *m);
void mounts_free(struct fs_mount *v, size_t n);
void mountinfo_free(struct mount_entry *v, size_t n);

#endif
