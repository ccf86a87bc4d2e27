/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Tests for the filesystems lens (issue #20): source/mounts (pure mountinfo parser on
 * tests/fixtures/mounts/mountinfo, the octal unescape, the statvfs figures), the
 * deleted-file notes of source/fdmap on a live child, delta_fs (time to full only when
 * steady), the fs-* verdicts, and act/fsfix's checks on a live child.
 *
 * Run from the repo root. Live scratch files go under /var/tmp (a block device here).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include "act/act.h"
#include "delta.h"
#include "out/text_fs.h"
#include "source/fdmap.h"
#include "source/mounts.h"
#include "sample/decode_fs.h"
#include "verdict.h"

static const char *fixture_path(const char *rel)
{
    static char path[PATH_MAX];
    const char *dir = getenv("IOTRIAGE_FIXTURES");
    if (dir == NULL || *dir == '\0')
        dir = "tests/fixtures";
    snprintf(path, sizeof(path), "%s/%s", dir, rel);
    return path;
}

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    char *buf = malloc(65536);
    assert_non_null(buf);
    *len = fread(buf, 1, 65536, f);
    fclose(f);
    return buf;
}

/* ---- mountinfo ---------------------------------------------------------------------------- */

static void test_mountinfo_fixture(void **state)
{
    (void)state;
    size_t len, n;
    unsigned bad;
    char *buf = slurp(fixture_path("mounts/mountinfo"), &len);
    struct mount_entry *v;
    assert_int_equal(mountinfo_parse(buf, len, &v, &n, &bad), 0);
    free(buf);
    assert_int_equal(n, 8);
    assert_int_equal(bad, 5);
    assert_int_equal(v[1].id, 26);
    assert_int_equal(v[1].parent, 1);
    assert_int_equal(major(v[1].dev), 254);
    assert_int_equal(minor(v[1].dev), 1);
    assert_string_equal(v[1].mount, "/");
    assert_string_equal(v[1].fstype, "ext4");
    assert_string_equal(v[1].source, "/dev/vda1");
    assert_string_equal(v[2].mount, "/mnt/with space");
    assert_string_equal(v[2].source, "my\\tmp");
    assert_string_equal(v[3].root, "/data/sub");
    assert_string_equal(v[3].fstype, "xfs");     /* after two optional fields */
    assert_int_equal(major(v[4].dev), 0);
    assert_string_equal(v[4].source, "/dev/mapper/vg-home");
    assert_string_equal(v[5].fstype, "nfs4");
    assert_string_equal(v[6].mount, "/mnt/loop\ttab\nnl");
    assert_string_equal(v[7].mount, "/dev/shm");
    mountinfo_free(v, n);
}

/* The filesystems with no block device a wait on which is no block I/O (mounts.h
 * mount_is_netfs): network and FUSE types on an anonymous st_dev; not fuseblk (on a block
 * device), nor local memory filesystems. */
static void test_mount_is_netfs(void **state)
{
    (void)state;
    static const char text[] =
        "26 1 254:1 / / rw - ext4 /dev/vda1 rw\n"
        "40 26 0:51 / /srv/nfs rw - nfs4 host:/export rw\n"
        "41 26 0:52 / /tmp/x rw,nosuid - fuse.slowfs slowfs rw\n"
        "42 26 8:17 / /mnt/ntfs rw - fuseblk /dev/sdb1 rw\n"
        "43 26 0:53 / /mnt/share rw - cifs //h/s rw\n"
        "44 26 0:54 / /mnt/9 rw - 9p hostshare rw\n"
        "45 26 0:25 / /dev/shm rw - tmpfs tmpfs rw\n"
        "46 26 0:22 / /proc rw - proc proc rw\n"
        "47 26 0:55 / /mnt/vfs rw - virtiofs tag rw\n";
    struct mount_entry *v;
    size_t n;
    assert_int_equal(mountinfo_parse(text, sizeof(text) - 1, &v, &n, NULL), 0);
    assert_int_equal(n, 9);
    const bool want[] = { false, true, true, false, true, true, false, false, true };
    for (size_t i = 0; i < n; i++)
        if (mount_is_netfs(&v[i]) != want[i])
            fail_msg("%s (%s): mount_is_netfs %d", v[i].mount, v[i].fstype, !want[i]);
    mountinfo_free(v, n);
}

static void test_mountinfo_no_terminator(void **state)
{
    (void)state;
    /* Exactly the bytes, no NUL and no newline after: ASan sees any over-read. */
    static const char line[] = "26 1 254:1 / / rw - ext4 /dev/vda1 rw";
    char *buf = malloc(sizeof(line) - 1);
    memcpy(buf, line, sizeof(line) - 1);
    struct mount_entry *v;
    size_t n;
    assert_int_equal(mountinfo_parse(buf, sizeof(line) - 1, &v, &n, NULL), 0);
    assert_int_equal(n, 1);
    assert_string_equal(v[0].source, "/dev/vda1");
    mountinfo_free(v, n);
    /* Cut before the source: refused. */
    assert_int_equal(mountinfo_parse(buf, strlen("26 1 254:1 / / rw - ext4 "), &v, &n, NULL), 0);
    assert_int_equal(n, 0);
    mountinfo_free(v, n);
    free(buf);
    assert_int_equal(mountinfo_parse("", 0, &v, &n, NULL), 0);
    assert_int_equal(n, 0);
    free(v);
}

static void test_unescape(void **state)
{
    (void)state;
    char out[64];
    assert_int_equal(mountinfo_unescape("a\\040b", 6, out), 3);
    assert_string_equal(out, "a b");
    assert_int_equal(mountinfo_unescape("\\134\\011", 8, out), 2);
    assert_string_equal(out, "\\\t");
    /* Not an escape: kept as is. */
    assert_int_equal(mountinfo_unescape("a\\08", 4, out), 4);
    assert_string_equal(out, "a\\08");
    assert_int_equal(mountinfo_unescape("\\04", 3, out), 3);       /* cut short */
    assert_string_equal(out, "\\04");
    assert_int_equal(mountinfo_unescape("\\400", 4, out), 4);      /* above a byte */
    assert_string_equal(out, "\\400");
    assert_int_equal(mountinfo_unescape("x\\", 2, out), 2);
    assert_string_equal(out, "x\\");
}

static void test_statvfs_figures(void **state)
{
    (void)state;
    struct statvfs st = { .f_frsize = 4096, .f_bsize = 4096, .f_blocks = 1000, .f_bfree = 300,
                          .f_bavail = 250, .f_files = 0, .f_ffree = 0 };
    struct fs_mount fs = { 0 };
    mounts_fill_statvfs(&fs, &st);
    assert_int_equal(fs.size, 4096000);
    assert_int_equal(fs.used, 700 * 4096);
    assert_int_equal(fs.avail, 250 * 4096);
    assert_int_equal(fs.inodes_used, -1);       /* btrfs: no inode count */
    st.f_files = 100;
    st.f_ffree = 40;
    mounts_fill_statvfs(&fs, &st);
    assert_int_equal(fs.inodes_used, 60);
    assert_int_equal(fs.inodes_total, 100);
}

/* The live reader on this machine: / is there, on a block device, with figures. */
static void test_mounts_read_live(void **state)
{
    (void)state;
    int proc = open("/proc", O_RDONLY | O_DIRECTORY), sys = open("/sys", O_RDONLY | O_DIRECTORY);
    struct fs_mount *v;
    size_t n;
    assert_int_equal(mounts_read(proc, sys, &v, &n), 0);
    bool root = false;
    struct stat st;
    assert_int_equal(stat("/", &st), 0);
    for (size_t i = 0; i < n; i++) {
        assert_true(strcmp(v[i].m.fstype, "proc") != 0 && strcmp(v[i].m.fstype, "sysfs") != 0);
        if (strcmp(v[i].m.mount, "/") == 0) {
            root = true;
            assert_int_equal(v[i].m.dev, st.st_dev);
            if (major(st.st_dev) != 0)
                assert_int_equal(v[i].bdev, st.st_dev);
            assert_int_equal(v[i].statfs_err, 0);
            assert_true(v[i].size > 0 && v[i].used <= v[i].size);
        }
        for (size_t j = 0; j < i; j++)
            assert_true(v[j].m.dev != v[i].m.dev);      /* one entry per superblock */
    }
    if (major(st.st_dev) != 0)
        assert_true(root);
    mounts_free(v, n);
    close(proc);
    close(sys);
}

/* The kept table (mounts_src): a mount and an unmount show at the next read (the
 * kernel's POLLPRI on the kept mountinfo), the figures are taken every read from the
 * kept table, and a mount point moved by renaming a directory above it (no mount event)
 * is found at its new path. Root: it mounts tmpfs. */
static const struct fs_mount *kept_at(const struct fs_mount *v, size_t n, const char *path)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(v[i].m.mount, path) == 0)
            return &v[i];
    return NULL;
}

static char msrc_top[] = "/tmp/iotriage-msrc-XXXXXX";
static int msrc_proc = -1, msrc_sys = -1;
static struct mounts_src *msrc;

/* Whatever the test left, failed or not: its mounts, directories and files (a later
 * test's child expects its own at fds 3 and 4). */
static int msrc_teardown(void **state)
{
    (void)state;
    mounts_src_free(msrc);
    msrc = NULL;
    if (msrc_proc >= 0)
        close(msrc_proc);
    if (msrc_sys >= 0)
        close(msrc_sys);
    msrc_proc = msrc_sys = -1;
    char cmd[256];
    snprintf(cmd, sizeof cmd, "umount -q %s/a/m %s/b/m 2>/dev/null; rm -rf %s", msrc_top, msrc_top,
             msrc_top);
    if (msrc_top[strlen(msrc_top) - 1] != 'X')
        (void)!system(cmd);
    return 0;
}

static void test_mounts_src_follows_the_table(void **state)
{
    (void)state;
    if (geteuid() != 0)
        skip();
    char *top = msrc_top;
    assert_non_null(mkdtemp(top));
    char dir[96], moved[96], mnt[128], mnt2[128], file[160];
    snprintf(dir, sizeof dir, "%s/a", top);
    snprintf(moved, sizeof moved, "%s/b", top);
    snprintf(mnt, sizeof mnt, "%s/m", dir);
    snprintf(mnt2, sizeof mnt2, "%s/m", moved);
    assert_int_equal(mkdir(dir, 0700), 0);
    assert_int_equal(mkdir(mnt, 0700), 0);
    msrc_proc = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    msrc_sys = open("/sys", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    struct mounts_src *src = msrc = mounts_src_new(msrc_proc, msrc_sys);
    struct fs_mount *v;
    size_t n;
    assert_int_equal(mounts_src_read(src, &v, &n), 0);
    assert_null(kept_at(v, n, mnt));
    mounts_free(v, n);

    char cmd[256];
    snprintf(cmd, sizeof cmd, "mount -t tmpfs -o size=4m iotriage-msrc %s", mnt);
    assert_int_equal(system(cmd), 0);
    assert_int_equal(mounts_src_read(src, &v, &n), 0);
    const struct fs_mount *m = kept_at(v, n, mnt);
    if (!m) {
        fail();
        return;
    }
    assert_int_equal(m->used, 0);
    mounts_free(v, n);

    /* The table is kept; the figures are not. */
    snprintf(file, sizeof file, "%s/f", mnt);
    int fd = open(file, O_WRONLY | O_CREAT, 0600);
    assert_true(fd >= 0);
    static char block[256 * 1024];
    memset(block, 'x', sizeof block);
    assert_int_equal(write(fd, block, sizeof block), (ssize_t)sizeof block);
    close(fd);
    assert_int_equal(mounts_src_read(src, &v, &n), 0);
    m = kept_at(v, n, mnt);
    if (!m) {
        fail();
        return;
    }
    assert_true(m->used >= sizeof block);
    mounts_free(v, n);

    /* Renaming a directory above a mount point sends no mount event. */
    assert_int_equal(rename(dir, moved), 0);
    assert_int_equal(mounts_src_read(src, &v, &n), 0);
    assert_null(kept_at(v, n, mnt));
    m = kept_at(v, n, mnt2);
    if (!m) {
        fail();
        return;
    }
    assert_int_equal(m->statfs_err, 0);
    mounts_free(v, n);

    snprintf(cmd, sizeof cmd, "umount %s", mnt2);
    assert_int_equal(system(cmd), 0);
    assert_int_equal(mounts_src_read(src, &v, &n), 0);
    assert_null(kept_at(v, n, mnt2));
    mounts_free(v, n);
}

/* ---- live: a child holding deleted files ---------------------------------------------------- */

static char scratch[64];

/* A child with a.log open O_APPEND on fd 3 (4 KiB written) and b.log open O_WRONLY on fd 4,
 * both deleted; it waits for SIGTERM. */
static pid_t spawn_deleted_holder(ino_t *ino_a, ino_t *ino_b, dev_t *dev)
{
    snprintf(scratch, sizeof(scratch), "/var/tmp/iotriage-mounts.XXXXXX");
    assert_non_null(mkdtemp(scratch));
    char a[128], b[128];
    snprintf(a, sizeof(a), "%s/a.log", scratch);
    snprintf(b, sizeof(b), "%s/b.log", scratch);
    int fa = open(a, O_WRONLY | O_CREAT | O_APPEND, 0600), fb = open(b, O_WRONLY | O_CREAT, 0600);
    assert_true(fa >= 0 && fb >= 0);
    char buf[4096];
    memset(buf, 'x', sizeof(buf));
    assert_int_equal(write(fa, buf, sizeof(buf)), (ssize_t)sizeof(buf));
    assert_int_equal(fsync(fa), 0);
    struct stat sa, sb;
    fstat(fa, &sa);
    fstat(fb, &sb);
    *ino_a = sa.st_ino;
    *ino_b = sb.st_ino;
    *dev = sa.st_dev;
    int pipefd[2];
    assert_int_equal(pipe(pipefd), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        /* Exactly two deleted files, at fds 3 and 4, whatever fds the test inherited
         * (a lock held by flock(1) takes 3, and fa and fb move up): each is copied above
         * the low numbers first, so that placing one never closes the other. */
        int ha = fcntl(fa, F_DUPFD, 10), hb = fcntl(fb, F_DUPFD, 10);
        if (ha < 0 || hb < 0)
            _exit(1);
        close(fa);
        close(fb);
        dup2(ha, 3);
        dup2(hb, 4);
        close(ha);
        close(hb);
        close(pipefd[0]);
        if (write(pipefd[1], "y", 1) != 1)
            _exit(1);
        pause();
        _exit(0);
    }
    close(pipefd[1]);
    char c;
    assert_int_equal(read(pipefd[0], &c, 1), 1);
    close(pipefd[0]);
    close(fa);
    close(fb);
    unlink(a);
    unlink(b);
    rmdir(scratch);
    return pid;
}

static unsigned long long start_of(pid_t pid)
{
    unsigned long long st = 0;
    assert_int_equal(prio_start_ticks(NULL, pid, &st), 0);
    return st;
}

static void test_fdmap_notes_deleted(void **state)
{
    (void)state;
    ino_t ia, ib;
    dev_t dev;
    pid_t pid = spawn_deleted_holder(&ia, &ib, &dev);
    int proc = open("/proc", O_RDONLY | O_DIRECTORY), sys = open("/sys", O_RDONLY | O_DIRECTORY);
    struct fdmap *m;
    assert_int_equal(fdmap_new(&m, proc, sys, 5.0, 0), 0);
    struct fd_devs out;
    fdmap_get(m, pid, start_of(pid), 100.0, &out);
    const struct fd_deleted *d;
    size_t n = fdmap_deleted(m, &d);
    assert_int_equal(n, 2);
    int seen = 0;
    for (size_t i = 0; i < n; i++) {
        assert_int_equal(d[i].tgid, pid);
        assert_int_equal(d[i].dev, dev);
        if (d[i].fd == 3) {
            assert_int_equal(d[i].ino, ia);
            assert_int_equal(d[i].size, 4096);
            assert_true(d[i].blocks_bytes >= 4096);
            seen |= 1;
        } else {
            assert_int_equal(d[i].fd, 4);
            assert_int_equal(d[i].ino, ib);
            assert_int_equal(d[i].size, 0);
            seen |= 2;
        }
    }
    assert_int_equal(seen, 3);
    /* A cached answer keeps them; the process forgotten drops them. */
    fdmap_get(m, pid, start_of(pid), 101.0, &out);
    assert_int_equal(fdmap_deleted(m, &d), 2);
    fdmap_prune(m, 200.0, 0);
    assert_int_equal(fdmap_deleted(m, &d), 0);
    /* Exited: a rescan notes nothing. */
    kill(pid, SIGTERM);
    waitpid(pid, NULL, 0);
    fdmap_get(m, pid, 1, 300.0, &out);
    assert_int_equal(fdmap_deleted(m, &d), 0);
    fdmap_free(m);
    close(proc);
    close(sys);
}

static void test_fsfix_live(void **state)
{
    (void)state;
    ino_t ia, ib;
    dev_t dev;
    pid_t pid = spawn_deleted_holder(&ia, &ib, &dev);
    struct fsfix_target t = { .pid = pid, .fd = 3, .dev = dev, .ino = ia,
                              .start_ticks = start_of(pid), .mount = "/var/tmp" };
    struct fsfix_outcome o;
    /* Stale: another inode, another start time, an fd that holds another file. */
    t.ino = ib;
    assert_int_equal(fsfix_truncate(NULL, &t, NULL, &o), -ESTALE);
    t.ino = ia;
    t.start_ticks++;
    assert_int_equal(fsfix_truncate(NULL, &t, NULL, &o), -ESTALE);
    t.start_ticks--;
    t.fd = 5;
    assert_int_equal(fsfix_signal(NULL, &t, SIGHUP, 0, &o), -ESTALE);
    t.fd = 3;
    /* The copy goes first, refusing to overwrite; then the truncate. */
    char copy[128];
    snprintf(copy, sizeof(copy), "/var/tmp/iotriage-mounts-copy.%d", (int)getpid());
    int fd = open(copy, O_WRONLY | O_CREAT | O_EXCL, 0600);
    assert_true(fd >= 0);
    close(fd);
    assert_int_equal(fsfix_truncate(NULL, &t, copy, &o), -EEXIST);
    struct stat st;
    char path[64];
    snprintf(path, sizeof(path), "/proc/%d/fd/3", (int)pid);
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_size, 4096);
    unlink(copy);
    assert_int_equal(fsfix_truncate(NULL, &t, copy, &o), 0);
    assert_int_equal(o.copied, 4096);
    assert_int_equal(o.append, 1);
    assert_int_equal(o.size_before, 4096);
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_size, 0);
    assert_int_equal(stat(copy, &st), 0);
    assert_int_equal(st.st_size, 4096);
    unlink(copy);
    /* No append on fd 4: said so. */
    t.fd = 4;
    t.ino = ib;
    assert_int_equal(fsfix_truncate(NULL, &t, NULL, &o), 0);
    assert_int_equal(o.append, 0);
    assert_non_null(strstr(o.msg, "sparse"));
    /* A signal the child ignores: not released. A bad signal: refused. */
    assert_int_equal(fsfix_signal(NULL, &t, SIGWINCH, 0.1, &o), 0);
    assert_false(o.released);
    assert_int_equal(fsfix_signal(NULL, &t, 0, 0.1, &o), -EINVAL);
    kill(pid, SIGTERM);
    waitpid(pid, NULL, 0);
}

/* The screen runs the actions in a child (fsfix_start): the outcome comes back whole,
 * with the file's figures afterwards; and it reads what a signal will do first. */
static void test_fsfix_job_live(void **state)
{
    (void)state;
    ino_t ia, ib;
    dev_t dev;
    pid_t pid = spawn_deleted_holder(&ia, &ib, &dev);
    struct fsfix_target t = { .pid = pid, .fd = 3, .dev = dev, .ino = ia,
                              .start_ticks = start_of(pid), .mount = "/var/tmp" };
    bool blocked = true;
    assert_int_equal(fsfix_sig_disposition(NULL, pid, SIGHUP, &blocked), FSD_DEFAULT);
    assert_false(blocked);
    struct fsfix_job job;
    assert_int_equal(fsfix_start(&job, FSFIX_TRUNCATE, NULL, &t, 0, 0, NULL), 0);
    assert_true(job.child.pid > 0 && job.child.fd >= 0);
    struct fsfix_outcome o;
    int rc;
    for (int i = 0; (rc = fsfix_collect(&job, &o)) == 0 && i < 1000; i++)
        usleep(10000);
    assert_int_equal(rc, 1);
    assert_int_equal(job.child.pid, 0);
    assert_int_equal(o.err, 0);
    assert_int_equal(o.size_before, 4096);
    assert_true(o.after_known);
    assert_int_equal(o.size_after, 0);
    assert_int_equal(o.blocks_after, 0);
    assert_int_equal(o.append, 1);
    /* A refusal travels back the same way. */
    t.ino = ib + 1000000;
    assert_int_equal(fsfix_start(&job, FSFIX_SIGNAL, NULL, &t, SIGHUP, 0.1, NULL), 0);
    for (int i = 0; (rc = fsfix_collect(&job, &o)) == 0 && i < 1000; i++)
        usleep(10000);
    assert_int_equal(rc, 1);
    assert_int_equal(o.err, -ESTALE);
    assert_int_equal(kill(pid, 0), 0);             /* nothing was sent */
    kill(pid, SIGTERM);
    waitpid(pid, NULL, 0);
}

static void test_fsfix_signals(void **state)
{
    (void)state;
    assert_int_equal(fsfix_sig_parse("HUP"), SIGHUP);
    assert_int_equal(fsfix_sig_parse(" sighup "), SIGHUP);
    assert_int_equal(fsfix_sig_parse("SIGUSR2"), SIGUSR2);
    assert_int_equal(fsfix_sig_parse("usr1"), SIGUSR1);
    assert_int_equal(fsfix_sig_parse("10"), 10);
    assert_int_equal(fsfix_sig_parse("RTMIN"), SIGRTMIN);
    assert_int_equal(fsfix_sig_parse("rtmin+2"), SIGRTMIN + 2);
    assert_int_equal(fsfix_sig_parse("SIGRTMAX-1"), SIGRTMAX - 1);
    assert_int_equal(fsfix_sig_parse("RTMIN+99"), 0);
    assert_int_equal(fsfix_sig_parse("RTMIN-1"), 0);
    assert_int_equal(fsfix_sig_parse("FOO"), 0);
    assert_int_equal(fsfix_sig_parse(""), 0);
    assert_int_equal(fsfix_sig_parse("0"), 0);
    assert_int_equal(fsfix_sig_parse("65"), 0);
    assert_int_equal(fsfix_sig_parse("1x"), 0);
    assert_string_equal(fsfix_sig_default(SIGHUP), "terminates it");
    assert_string_equal(fsfix_sig_default(SIGWINCH), "ignores it");
    assert_string_equal(fsfix_sig_default(SIGQUIT), "terminates it (and dumps core)");
    assert_string_equal(fsfix_sig_default(SIGTSTP), "stops it");
    static const char status[] = "Name:\tbash\nSigQ:\t0/63\nSigPnd:\t0000000000000000\n"
                                 "SigBlk:\t0000000000010000\nSigIgn:\t0000000000380004\n"
                                 "SigCgt:\t000000004b813efb\nCapInh:\t0\n";
    uint64_t m = 0;
    assert_int_equal(fsfix_status_mask(status, strlen(status), "SigCgt:", &m), 0);
    assert_true(m == 0x4b813efbULL);
    assert_int_equal(fsfix_status_mask(status, strlen(status), "SigBlk:", &m), 0);
    assert_true(m == 0x10000ULL);
    assert_int_equal(fsfix_status_mask(status, strlen(status), "SigX:", &m), -EINVAL);
    static const char bad[] = "SigCgt:\t00zz\n";
    assert_int_equal(fsfix_status_mask(bad, strlen(bad), "SigCgt:", &m), -EINVAL);
    static const char lng[] = "SigCgt:\t00000000000000000\n";     /* 17 digits */
    assert_int_equal(fsfix_status_mask(lng, strlen(lng), "SigCgt:", &m), -EINVAL);
    static const char cut[] = "SigCgt:\t1f";                         /* no newline */
    assert_int_equal(fsfix_status_mask(cut, strlen(cut), "SigCgt:", &m), 0);
    assert_true(m == 0x1fULL);
}

/* ---- delta_fs and the verdicts ------------------------------------------------------------ */

static void fill_hist(struct fs_sample *fs, const uint64_t *used, unsigned n)
{
    fs->nhist = n;
    for (unsigned i = 0; i < n; i++) {
        fs->hist_mono[i] = 10.0 + i;
        fs->hist_used[i] = used[i];
    }
    fs->fs.used = used[n - 1];
}

static void test_delta_fs_steady(void **state)
{
    (void)state;
    struct fs_sample fs = { .dev_idx = -1, .disk_idx = -1 };
    fs.fs.avail = 3000;
    struct fs_rates r;
    const uint64_t grow[4] = { 1000, 1010, 1020, 1030 };
    fill_hist(&fs, grow, 4);
    delta_fs(&fs, NULL, &r);
    assert_true(fabs(r.fill_bps - 10.0) < 1e-9);
    assert_true(fabs(r.full_in_s - 300.0) < 1e-9);
    assert_true(isnan(r.write_bps));                 /* tmpfs: no device */
    assert_true(fabs(r.used_pct - 100.0 * 1030 / 4030) < 1e-9);
    /* Too few samples, a flat interval, a shrink: unknown. */
    fill_hist(&fs, grow, 3);
    delta_fs(&fs, NULL, &r);
    assert_true(isnan(r.full_in_s));
    assert_true(fabs(r.fill_bps - 10.0) < 1e-9);
    const uint64_t flat[4] = { 1000, 1010, 1010, 1030 };
    fill_hist(&fs, flat, 4);
    delta_fs(&fs, NULL, &r);
    assert_true(isnan(r.full_in_s));
    const uint64_t shrink[4] = { 1000, 1010, 1020, 900 };
    fill_hist(&fs, shrink, 4);
    delta_fs(&fs, NULL, &r);
    assert_true(isnan(r.full_in_s));
    assert_true(r.fill_bps < 0);
    fill_hist(&fs, grow, 1);
    delta_fs(&fs, NULL, &r);
    assert_true(isnan(r.fill_bps) && isnan(r.full_in_s));
    /* The device's write rate, when it has one. */
    struct dev_rates dr = { .valid = true, .wkb_s = 2.0 };
    fill_hist(&fs, grow, 4);
    delta_fs(&fs, &dr, &r);
    assert_true(fabs(r.write_bps - 2048.0) < 1e-9);
    fs.fs.statfs_err = -EACCES;
    delta_fs(&fs, &dr, &r);
    assert_true(isnan(r.used_pct));
}

static size_t count_code(const struct verdicts *v, enum warn_code c, int fs)
{
    size_t k = 0;
    for (size_t i = 0; i < v->n; i++)
        k += v->w[i].code == c && v->w[i].fs == fs;
    return k;
}

static void test_fs_verdicts(void **state)
{
    (void)state;
    struct snapshot snap = { 0 };
    struct fs_sample fss[3] = { 0 };
    char mnt[3][8] = { "/a", "/b", "/c" }, ext4[] = "ext4";
    for (int i = 0; i < 3; i++) {
        fss[i].dev_idx = fss[i].disk_idx = -1;
        fss[i].fs.m.mount = mnt[i];
        fss[i].fs.m.fstype = ext4;
        fss[i].deleted_known = true;
    }
    /* /a: 95 % full, filling steadily, 20 % of used held by one deleted file. */
    fss[0].fs.avail = 50;
    const uint64_t grow[4] = { 900, 920, 935, 950 };
    fill_hist(&fss[0], grow, 4);
    struct fs_holder h = { .pid = 42, .fd = 3, .append = true, .comm = "daemon" };
    char path[] = "/a/log (deleted)";
    struct fs_deleted_file del = { .size = 190, .blocks_bytes = 190, .path = path, .holders = &h,
                                   .nholders = 1 };
    fss[0].del = &del;
    fss[0].ndel = 1;
    fss[0].deleted_bytes = 190;
    /* /b: the same figures but read-only and its deleted files unknown. */
    fss[1] = fss[0];
    fss[1].fs.m.mount = mnt[1];
    fss[1].fs.read_only = true;
    fss[1].deleted_known = false;
    /* /c: half full, idle, deleted files 5 % of used. */
    fss[2].fs.used = 500;
    fss[2].fs.avail = 500;
    fss[2].nhist = 1;
    fss[2].del = &del;
    fss[2].ndel = 1;
    fss[2].deleted_bytes = 25;
    snap.fss = fss;
    snap.nfss = 3;
    struct result r = { .cur = &snap };
    struct fs_rates fr[3];
    for (int i = 0; i < 3; i++)
        delta_fs(&fss[i], NULL, &fr[i]);
    r.fss = fr;
    r.nfss = 3;
    struct verdicts v;
    verdict_compute(&r, &v);
    assert_int_equal(count_code(&v, W_FS_FULL, 0), 1);
    assert_int_equal(count_code(&v, W_FS_FILLING, 0), 1);
    assert_int_equal(count_code(&v, W_FS_DELETED_OPEN, 0), 1);
    assert_int_equal(v.n, 3);                        /* nothing for /b nor /c */
    assert_int_equal(v.w[0].code, W_FS_FILLING);     /* critical first */
    for (size_t i = 0; i < v.n; i++) {
        assert_int_equal(v.w[i].dev, -1);
        assert_int_equal(v.w[i].task, -1);
        assert_non_null(strstr(v.w[i].text, "/a"));
    }
    assert_string_equal(warn_code_name(W_FS_DELETED_OPEN), "fs-deleted-open");
    verdicts_free(&v);
}

static void test_text_section(void **state)
{
    (void)state;
    struct snapshot snap = { .fs_taken = true };
    struct fs_sample fs = { .dev_idx = -1, .disk_idx = -1, .deleted_known = true,
                            .deleted_complete = false };
    char mnt[] = "/var/\x1b[2Jlog", tmpfs[] = "tmpfs";
    fs.fs.m.mount = mnt;
    fs.fs.m.fstype = tmpfs;
    fs.fs.size = 100 << 20;
    fs.fs.used = 40 << 20;
    fs.fs.avail = 60 << 20;
    fs.fs.inodes_used = 12;
    struct fs_holder h[2] = { { .pid = 7, .fd = 3, .flags_known = true, .append = true, .comm = "bash" },
                              { .pid = 8, .fd = 3, .flags_known = true, .append = false, .comm = "sleep" } };
    char path[] = "/var/log/app.log (deleted)";
    struct fs_deleted_file del = { .size = 40 << 20, .blocks_bytes = 40 << 20, .path = path,
                                   .holders = h, .nholders = 2 };
    fs.del = &del;
    fs.ndel = 1;
    fs.deleted_bytes = 40 << 20;
    fs.nhist = 1;
    snap.fss = &fs;
    snap.nfss = 1;
    struct fs_rates fr;
    delta_fs(&fs, NULL, &fr);
    struct result r = { .cur = &snap, .fss = &fr, .nfss = 1 };
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    out_text_filesystems(f, &r, true);
    fclose(f);
    assert_non_null(strstr(buf, "tmpfs"));
    assert_non_null(strstr(buf, " 40M+ "));             /* a lower bound: not complete */
    assert_non_null(strstr(buf, " 40.0 "));             /* use% */
    assert_null(strchr(buf, '\x1b'));                   /* the escape is shown, not sent */
    assert_non_null(strstr(buf, "bash[7] fd 3 append, sleep[8] fd 3 no-append"));
    assert_non_null(strstr(buf, "/var/log/app.log (deleted)"));
    free(buf);
    /* A replayed frame without filesystems: nothing at all. */
    snap.fs_taken = false;
    buf = NULL;
    f = open_memstream(&buf, &len);
    out_text_filesystems(f, &r, true);
    fclose(f);
    assert_int_equal(len, 0);
    free(buf);
}

/* ---- replay of the filesystems key ---------------------------------------------------------- */

static int decode_text(const char *text, struct snapshot *s, struct result *r, char *err, size_t n)
{
    struct json_doc *doc;
    struct json_error jerr;
    struct json_opts opts = { 0 };
    if (json_parse(&doc, text, strlen(text), &opts, &jerr) != 0)
        fail_msg("json at %zu: %s: %s", jerr.offset, jerr.msg, text);
    int rc = replay_fs_decode(json_root(doc), s, r, err, n);
    json_free(doc);
    return rc;
}

#define FS_OK "{\"mount\":\"/\",\"device\":\"vda\",\"disk\":\"vda\",\"scheduler\":null," \
    "\"fstype\":\"ext4\",\"source\":\"/dev/vda\",\"read_only\":false,\"size_bytes\":1000," \
    "\"used_bytes\":600,\"avail_bytes\":400,\"used_pct\":60,\"inodes_used\":5,\"inodes_total\":null," \
    "\"write_bps\":null,\"fill_bps\":1.5,\"full_in_s\":null,\"deleted_open_bytes\":512," \
    "\"deleted_open_complete\":true,\"deleted_open\":[{\"path\":\"/log (deleted)\"," \
    "\"size_bytes\":700,\"blocks_bytes\":512,\"holders\":[{\"pid\":7,\"comm\":\"bash\",\"fd\":3," \
    "\"append\":true},{\"pid\":8,\"comm\":null,\"fd\":4,\"append\":null}]}]}"
#define FS_TMPFS "{\"mount\":\"/dev/shm\",\"device\":null,\"disk\":null,\"scheduler\":null," \
    "\"fstype\":\"tmpfs\",\"source\":\"tmpfs\",\"read_only\":false,\"size_bytes\":null," \
    "\"used_bytes\":null,\"avail_bytes\":null,\"used_pct\":null,\"inodes_used\":null," \
    "\"inodes_total\":null,\"write_bps\":null,\"fill_bps\":null,\"full_in_s\":null," \
    "\"deleted_open_bytes\":null,\"deleted_open_complete\":null,\"deleted_open\":null}"

static void test_replay_fs(void **state)
{
    (void)state;
    struct dev_sample dev = { 0 };
    snprintf(dev.ds.name, sizeof(dev.ds.name), "vda");
    struct snapshot s = { .devs = &dev, .ndevs = 1 };
    struct result r = { .cur = &s };
    char err[256] = "";
    /* No key: a recording from before it. */
    assert_int_equal(decode_text("{}", &s, &r, err, sizeof(err)), 0);
    assert_false(s.fs_taken);
    assert_int_equal(s.nfss, 0);
    int rc = decode_text("{\"filesystems\":[" FS_OK "," FS_TMPFS "]}", &s, &r, err, sizeof(err));
    if (rc)
        fail_msg("%s", err);
    assert_true(s.fs_taken);
    assert_int_equal(s.nfss, 2);
    assert_int_equal(r.nfss, 2);
    assert_int_equal(s.fss[0].dev_idx, 0);
    assert_int_equal(s.fss[0].fs.used, 600);
    assert_int_equal(s.fss[0].fs.inodes_total, -1);
    assert_true(isnan(r.fss[0].write_bps));
    assert_true(r.fss[0].fill_bps == 1.5);
    assert_int_equal(s.fss[0].ndel, 1);
    assert_int_equal(s.fss[0].del[0].nholders, 2);
    assert_true(s.fss[0].del[0].holders[0].append && s.fss[0].del[0].holders[0].flags_known);
    assert_false(s.fss[0].del[0].holders[1].flags_known);
    assert_string_equal(s.fss[0].del[0].holders[0].comm, "bash");
    assert_int_equal(s.fss[1].dev_idx, -1);
    assert_int_equal(s.fss[1].fs.statfs_err, -EIO);
    assert_false(s.fss[1].deleted_known);
    assert_int_equal(replay_fs_find(&s, "/dev/shm", 8), 1);
    assert_int_equal(replay_fs_find(&s, "/dev/sh", 7), -1);
    fs_samples_free(s.fss, s.nfss);
    free(r.fss);
    /* Damage: named by its place, nothing kept. */
    s = (struct snapshot){ .devs = &dev, .ndevs = 1 };
    r = (struct result){ .cur = &s };
    assert_int_equal(decode_text("{\"filesystems\":{}}", &s, &r, err, sizeof(err)), -EINVAL);
    assert_non_null(strstr(err, "filesystems: an array"));
    char text[4096];
    snprintf(text, sizeof(text), "{\"filesystems\":[%s,%s]}", FS_TMPFS, FS_OK);
    char *p = strstr(text, "\"device\":\"vda\"");
    memcpy(p, "\"device\":\"sdz\"", 14);
    assert_int_equal(decode_text(text, &s, &r, err, sizeof(err)), -EINVAL);
    assert_non_null(strstr(err, "filesystems[1].device"));
    assert_null(s.fss);
    assert_int_equal(s.nfss, 0);
    assert_false(s.fs_taken);
    snprintf(text, sizeof(text), "{\"filesystems\":[%s]}", FS_OK);
    p = strstr(text, "\"pid\":8");
    memcpy(p, "\"pid\":0", 7);
    assert_int_equal(decode_text(text, &s, &r, err, sizeof(err)), -EINVAL);
    assert_non_null(strstr(err, "filesystems[0].deleted_open[0].holders[1].pid"));
    assert_null(s.fss);
    assert_null(r.fss);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_mountinfo_fixture),
        cmocka_unit_test(test_mountinfo_no_terminator),
        cmocka_unit_test(test_mount_is_netfs),
        cmocka_unit_test(test_unescape),
        cmocka_unit_test(test_statvfs_figures),
        cmocka_unit_test(test_mounts_read_live),
        cmocka_unit_test_teardown(test_mounts_src_follows_the_table, msrc_teardown),
        cmocka_unit_test(test_fdmap_notes_deleted),
        cmocka_unit_test(test_fsfix_live),
        cmocka_unit_test(test_fsfix_job_live),
        cmocka_unit_test(test_fsfix_signals),
        cmocka_unit_test(test_delta_fs_steady),
        cmocka_unit_test(test_fs_verdicts),
        cmocka_unit_test(test_text_section),
        cmocka_unit_test(test_replay_fs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
