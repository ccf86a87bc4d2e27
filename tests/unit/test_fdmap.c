/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Tests for source/fdmap: which block devices a process does I/O to.
 *
 * Three kinds of test:
 *   pure      fdinfo_parse_flags and parse_majmin on literal text (and guarded buffers);
 *   fixture   fdmap_resolve on tests/fixtures/fdmap/sys (or $IOTRIAGE_FIXTURES/fdmap/sys),
 *             a sysfs imitation described in tests/fixtures/fdmap/README. It is copied to
 *             a scratch directory first, because the loop device's backing_file must name
 *             a file this test creates, and the cache tests change the tree;
 *   live      real /proc and /sys: a child "holder" process opens exactly the files under
 *             test (nothing else: its 0-2 are /dev/null) and waits while we look at it.
 *
 * Run from the repo root. Scratch files go to a directory under /var/tmp, which is on a
 * block device on this machine (the root filesystem): the live tests need files whose
 * device has a request queue. Where that does not hold (anonymous-device root, no root
 * privileges for mknod or setresuid), the affected test says so and skips.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include "source/blkstack.h"
#include "source/fdmap.h"
#include "snapshot.h"
#include "source/taskiter.h"
#include "util.h"

/* ------------------------------------------------------------------------------------------ */
/* Helpers                                                                                     */
/* ------------------------------------------------------------------------------------------ */

/* Short buffers, so that every path built from them fits PATH_MAX (and gcc can tell). */
static char scratch[64];            /* /var/tmp/iotriage-fdmap.XXXXXX */
static char sys_copy[128];          /* scratch/sys: the fixture tree, writable */
static char backing[128];           /* scratch/backing.img: loop0's backing file */

static const char *fixture_path(const char *rel)
{
    static char path[PATH_MAX];
    const char *dir = getenv("IOTRIAGE_FIXTURES");
    if (dir == NULL || *dir == '\0')
        dir = "tests/fixtures";
    snprintf(path, sizeof(path), "%s/%s", dir, rel);
    return path;
}

static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    if (!f) {
        fail_msg("cannot write %s: %s", path, strerror(errno));
        return;
    }
    fputs(text, f);
    fclose(f);
}

/* Copy a tree of directories, regular files and symlinks (kept as links). */
static int copy_tree(const char *src, const char *dst)
{
    struct stat st;
    if (lstat(src, &st))
        return -1;
    if (S_ISLNK(st.st_mode)) {
        char target[PATH_MAX];
        ssize_t n = readlink(src, target, sizeof(target) - 1);
        if (n < 0)
            return -1;
        target[n] = '\0';
        return symlink(target, dst);
    }
    if (S_ISREG(st.st_mode)) {
        FILE *in = fopen(src, "rb"), *out = fopen(dst, "wb");
        char buf[4096];
        size_t n;
        while (in && out && (n = fread(buf, 1, sizeof(buf), in)) > 0)
            fwrite(buf, 1, n, out);
        int ok = in && out;
        if (in)
            fclose(in);
        if (out)
            fclose(out);
        return ok ? 0 : -1;
    }
    if (!S_ISDIR(st.st_mode) || mkdir(dst, 0755))
        return -1;
    DIR *d = opendir(src);
    if (!d)
        return -1;
    struct dirent *e;
    int rc = 0;
    while (rc == 0 && (e = readdir(d))) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        char s[PATH_MAX], t[PATH_MAX];
        snprintf(s, sizeof(s), "%s/%s", src, e->d_name);
        snprintf(t, sizeof(t), "%s/%s", dst, e->d_name);
        rc = copy_tree(s, t);
    }
    closedir(d);
    return rc;
}

static void remove_tree(const char *path)
{
    struct stat st;
    if (lstat(path, &st))
        return;
    if (S_ISDIR(st.st_mode)) {
        DIR *d = opendir(path);
        struct dirent *e;
        while (d && (e = readdir(d))) {
            if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
                continue;
            char p[PATH_MAX];
            snprintf(p, sizeof(p), "%s/%s", path, e->d_name);
            remove_tree(p);
        }
        if (d)
            closedir(d);
        rmdir(path);
    } else {
        unlink(path);
    }
}

static int open_dir(const char *path)
{
    int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        fail_msg("cannot open directory %s: %s", path, strerror(errno));
    return fd;
}

static dev_t dev_of(const char *path)
{
    struct stat st;
    if (stat(path, &st))
        fail_msg("stat %s: %s", path, strerror(errno));
    return st.st_dev;
}

/* In the scratch copy of the fixture sysfs, make dev/block/MAJ:MIN of dev a link to
 * devices/<target>. Lets the real device of a real file stand for a fixture device.
 * False when dev is already a fixture device (the fixture uses majors 60-63, reserved
 * for local use, so this should never happen). */
static bool alias_dev(dev_t dev, const char *target)
{
    char link[PATH_MAX], to[PATH_MAX];
    snprintf(link, sizeof(link), "%s/dev/block/%u:%u", sys_copy, major(dev), minor(dev));
    snprintf(to, sizeof(to), "../../devices/%s", target);
    unlink(link);
    return symlink(to, link) == 0;
}

#define assert_devs(got, n, ...)                                                             \
    do {                                                                                     \
        const dev_t want_[] = { __VA_ARGS__ };                                               \
        assert_devs_(got, n, want_, sizeof(want_) / sizeof(want_[0]), __LINE__);             \
    } while (0)

static void assert_devs_(const dev_t *got, int n, const dev_t *want, size_t nwant, int line)
{
    if (n != (int)nwant)
        fail_msg("line %d: %d devices, expected %zu", line, n, nwant);
    for (size_t i = 0; i < nwant; i++)
        if (got[i] != want[i])
            fail_msg("line %d: device %zu is %u:%u, expected %u:%u", line, i, major(got[i]),
                     minor(got[i]), major(want[i]), minor(want[i]));
}

/* ------------------------------------------------------------------------------------------ */
/* Scratch directory, set up once                                                              */
/* ------------------------------------------------------------------------------------------ */

static int group_setup(void **state)
{
    (void)state;
    snprintf(scratch, sizeof(scratch), "/var/tmp/iotriage-fdmap.XXXXXX");
    if (!mkdtemp(scratch)) {
        fprintf(stderr, "mkdtemp %s: %s\n", scratch, strerror(errno));
        return -1;
    }
    snprintf(sys_copy, sizeof(sys_copy), "%s/sys", scratch);
    if (copy_tree(fixture_path("fdmap/sys"), sys_copy)) {
        fprintf(stderr, "cannot copy %s to %s (run from the repo root or set "
                "IOTRIAGE_FIXTURES)\n", fixture_path("fdmap/sys"), sys_copy);
        return -1;
    }
    snprintf(backing, sizeof(backing), "%s/backing.img", scratch);
    FILE *f = fopen(backing, "w");
    if (!f)
        return -1;
    fclose(f);
    return 0;
}

static int group_teardown(void **state)
{
    (void)state;
    if (scratch[0])
        remove_tree(scratch);
    return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* Pure parsers                                                                                */
/* ------------------------------------------------------------------------------------------ */

/* A copy of s that ends exactly at a PROT_NONE page: reading past len faults. */
static char *guarded_copy(const char *s, size_t len)
{
    long pg = sysconf(_SC_PAGESIZE);
    assert_true(pg > 0 && len <= (size_t)pg);
    char *map = mmap(NULL, 2 * (size_t)pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                     -1, 0);
    assert_true(map != MAP_FAILED);
    assert_int_equal(mprotect(map + pg, (size_t)pg, PROT_NONE), 0);
    char *p = map + pg - len;
    memcpy(p, s, len);
    return p;
}

static void guarded_free(char *p, size_t len)
{
    long pg = sysconf(_SC_PAGESIZE);
    munmap(p + len - pg, 2 * (size_t)pg);
}

static int flags_of(const char *s, unsigned *flags)
{
    return fdinfo_parse_flags(s, strlen(s), flags);
}

static void test_fdinfo_flags_real_file(void **state)
{
    (void)state;
    unsigned f = 0;
    /* /proc/self/fdinfo/1 of a shell writing to a file, 6.18 */
    assert_int_equal(flags_of("pos:\t1005\nflags:\t0100001\nmnt_id:\t27\nino:\t10952794\n", &f), 0);
    assert_int_equal(f, 0100001);
    /* O_RDWR|O_DIRECT|O_LARGEFILE|O_CLOEXEC */
    assert_int_equal(flags_of("pos:\t0\nflags:\t02140002\nmnt_id:\t24\nino:\t3\n", &f), 0);
    assert_int_equal(f, 02140002);
    assert_int_equal(flags_of("flags: 0\n", &f), 0);
    assert_int_equal(f, 0);
    /* no newline at the end, trailing blanks */
    assert_int_equal(flags_of("pos:\t0\nflags:\t2 \t", &f), 0);
    assert_int_equal(f, 2);
}

static void test_fdinfo_flags_rejects_malformed(void **state)
{
    (void)state;
    unsigned f = 12345;
    assert_int_equal(flags_of("", &f), -EINVAL);
    assert_int_equal(flags_of("pos:\t0\nmnt_id:\t27\n", &f), -EINVAL);
    assert_int_equal(flags_of("flags:\t\n", &f), -EINVAL);
    assert_int_equal(flags_of("flags:\t0108\n", &f), -EINVAL);      /* 8 is not octal */
    assert_int_equal(flags_of("flags:\t-1\n", &f), -EINVAL);
    assert_int_equal(flags_of("flags:\t0x10\n", &f), -EINVAL);
    assert_int_equal(flags_of("flags:\t1 2\n", &f), -EINVAL);
    assert_int_equal(flags_of("flags:\t777777777777\n", &f), -EINVAL); /* > 32 bits */
    /* the key must start a line */
    assert_int_equal(flags_of("pos:\t0 flags:\t01\n", &f), -EINVAL);
    assert_int_equal(flags_of("xflags:\t01\n", &f), -EINVAL);
    assert_int_equal(f, 12345);
    /* the largest 32-bit value still fits */
    assert_int_equal(flags_of("flags:\t37777777777\n", &f), 0);
    assert_int_equal(f, 0xffffffffu);
}

static void test_fdinfo_flags_reads_only_len_bytes(void **state)
{
    (void)state;
    static const char text[] = "pos:\t0\nflags:\t0100002\nmnt_id:\t24\n";
    unsigned f = 0;
    /* cut inside the number: the digits before the cut are the value */
    size_t cut = strlen("pos:\t0\nflags:\t01");
    char *g = guarded_copy(text, cut);
    assert_int_equal(fdinfo_parse_flags(g, cut, &f), 0);
    assert_int_equal(f, 01);
    guarded_free(g, cut);
    /* cut inside the key */
    cut = strlen("pos:\t0\nfla");
    g = guarded_copy(text, cut);
    assert_int_equal(fdinfo_parse_flags(g, cut, &f), -EINVAL);
    guarded_free(g, cut);
    /* the whole text, no NUL after it */
    g = guarded_copy(text, strlen(text));
    assert_int_equal(fdinfo_parse_flags(g, strlen(text), &f), 0);
    assert_int_equal(f, 0100002);
    guarded_free(g, strlen(text));
}

static int majmin_of(const char *s, unsigned *a, unsigned *b)
{
    return parse_majmin(s, strlen(s), a, b);
}

static void test_parse_majmin(void **state)
{
    (void)state;
    unsigned a = 0, b = 0;
    assert_int_equal(majmin_of("7:0\n", &a, &b), 0);
    assert_int_equal(a, 7);
    assert_int_equal(b, 0);
    assert_int_equal(majmin_of("259:12", &a, &b), 0);
    assert_int_equal(a, 259);
    assert_int_equal(b, 12);
    assert_int_equal(majmin_of("4095:1048575\n", &a, &b), 0);
    assert_int_equal(a, 4095);
    assert_int_equal(b, 1048575);
    assert_int_equal(majmin_of("4294967295:4294967295", &a, &b), 0);
    assert_int_equal(a, 4294967295u);

    a = b = 77;
    const char *bad[] = { "", "\n", "7", "7:", ":0", "7:0\n\n", "7:0 ", " 7:0", "7 :0", "7:-1",
                          "-7:0", "7:0x1", "0x7:0", "7:0:0", "4294967296:0", "7:4294967296",
                          "7:0\nX" };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        if (majmin_of(bad[i], &a, &b) != -EINVAL)
            fail_msg("\"%s\" was accepted", bad[i]);
    assert_int_equal(a, 77);
    assert_int_equal(b, 77);

    char *g = guarded_copy("254:0", 5);
    assert_int_equal(parse_majmin(g, 5, &a, &b), 0);
    assert_int_equal(a, 254);
    assert_int_equal(b, 0);
    assert_int_equal(parse_majmin(g, 4, &a, &b), -EINVAL);   /* "254:" */
    guarded_free(g, 5);
}

/* ------------------------------------------------------------------------------------------ */
/* fdmap_resolve on the fixture tree                                                           */
/* ------------------------------------------------------------------------------------------ */

#define SDA   makedev(60, 0)
#define SDA1  makedev(60, 1)
#define SDA2  makedev(60, 2)
#define SDB   makedev(60, 16)
#define LOOP0 makedev(61, 0)
#define LOOP1 makedev(61, 1)
#define LOOP0P1 makedev(62, 0)
#define ZRAM0 makedev(63, 0)
#define ZRAM1 makedev(63, 1)
#define DM0   makedev(63, 10)
#define MD0   makedev(63, 20)
#define DM1   makedev(63, 31)
#define DM5   makedev(63, 5)
#define DM6   makedev(63, 6)

static int resolve_fixture(dev_t dev, dev_t *out, bool *trunc)
{
    int sys = open_dir(sys_copy);
    int n = fdmap_resolve(sys, dev, out, FDMAP_MAX_DEVS, trunc);
    close(sys);
    return n;
}

static void test_resolve_disks_and_partitions(void **state)
{
    (void)state;
    dev_t d[FDMAP_MAX_DEVS];
    bool t = true;
    int n = resolve_fixture(SDA, d, &t);
    assert_devs(d, n, SDA);
    assert_false(t);
    n = resolve_fixture(SDA1, d, &t);            /* partition -> its disk */
    assert_devs(d, n, SDA);
    assert_false(t);
    n = resolve_fixture(SDA2, d, &t);
    assert_devs(d, n, SDA);
    n = resolve_fixture(SDB, d, &t);
    assert_devs(d, n, SDB);
}

static void test_resolve_stacked_devices(void **state)
{
    (void)state;
    dev_t d[FDMAP_MAX_DEVS];
    bool t = true;
    /* bio-based dm (queue/ without scheduler) over sda1 and sdb: both disks, not dm-0 */
    int n = resolve_fixture(DM0, d, &t);
    assert_devs(d, n, SDA, SDB);
    assert_false(t);
    /* md0 says a bare "none" as older kernels do for bio-based queues: not kept */
    n = resolve_fixture(MD0, d, &t);
    assert_devs(d, n, SDA, SDB);
    /* request-based dm (multipath) has a scheduler of its own: kept, and what it is on */
    n = resolve_fixture(DM5, d, &t);
    assert_devs(d, n, SDB, DM5);
    /* NVMe multipath: the bio-based head lands on its paths' queues */
    n = resolve_fixture(makedev(63, 50), d, &t);
    assert_devs(d, n, makedev(63, 51), makedev(63, 52));
    assert_false(t);
    /* 17 disks under dm-8: the 16 smallest, and truncated */
    n = resolve_fixture(makedev(63, 8), d, &t);
    assert_int_equal(n, FDMAP_MAX_DEVS);
    assert_true(t);
    for (int i = 0; i < FDMAP_MAX_DEVS; i++)
        assert_true(d[i] == makedev(60, 100 + (unsigned)i));
    /* only room for one: the first in order, and truncated */
    int sys = open_dir(sys_copy);
    n = fdmap_resolve(sys, DM0, d, 1, &t);
    close(sys);
    assert_devs(d, n, SDA);
    assert_true(t);
}

static void test_resolve_devices_without_scheduler_give_nothing(void **state)
{
    (void)state;
    dev_t d[FDMAP_MAX_DEVS];
    bool t = true;
    assert_int_equal(resolve_fixture(ZRAM0, d, &t), 0);   /* no queue/scheduler (6.18) */
    assert_false(t);
    assert_int_equal(resolve_fixture(ZRAM1, d, &t), 0);   /* empty scheduler file */
    assert_int_equal(resolve_fixture(makedev(63, 99), d, &t), -ENOENT);
}

static void test_resolve_cycle_terminates(void **state)
{
    (void)state;
    dev_t d[FDMAP_MAX_DEVS];
    bool t = true;
    /* dm-1 -> dm-2 -> dm-1 ..., and dm-2 also -> sdb */
    int n = resolve_fixture(DM1, d, &t);
    assert_devs(d, n, SDB);
    assert_false(t);
}

static void test_resolve_depth_limit(void **state)
{
    (void)state;
    dev_t d[FDMAP_MAX_DEVS];
    bool t = true;
    /* dm-42 -> ... -> dm-49 -> sdb: sdb is 8 hops down, the limit */
    int n = resolve_fixture(makedev(63, 42), d, &t);
    assert_devs(d, n, SDB);
    assert_false(t);
    /* from dm-41 it is 9 hops: cut off, and said so */
    n = resolve_fixture(makedev(63, 41), d, &t);
    assert_int_equal(n, 0);
    assert_true(t);
}

static void test_resolve_loop_devices(void **state)
{
    (void)state;
    dev_t d[FDMAP_MAX_DEVS];
    bool t = true;
    char path[PATH_MAX];
    snprintf(path, sizeof(path), "%s/devices/virtual/block/loop0/loop/backing_file", sys_copy);

    /* The fixture's own backing_file names a path that does not exist: the loop alone. */
    write_text(path, "/nonexistent/iotriage-fdmap-fixture.img\n");
    int n = resolve_fixture(LOOP0, d, &t);
    assert_devs(d, n, LOOP0);
    assert_false(t);
    /* An unbound loop (no loop/ directory) has its queue all the same. */
    n = resolve_fixture(LOOP1, d, &t);
    assert_devs(d, n, LOOP1);

    /* Now a backing file we created: its device (made to stand for sdb in the copy) too. */
    dev_t bdev = dev_of(backing);
    if (major(bdev) == 0)
        skip();                     /* /var/tmp on an anonymous device: nothing to find */
    assert_true(alias_dev(bdev, "pci0000:00/host1/block/sdb"));
    char text[PATH_MAX + 2];
    snprintf(text, sizeof(text), "%s\n", backing);
    write_text(path, text);
    n = resolve_fixture(LOOP0, d, &t);
    assert_devs(d, n, LOOP0 < bdev ? LOOP0 : bdev, LOOP0 < bdev ? bdev : LOOP0);
    assert_false(t);
    /* a partition of the loop device, and a dm device over it, land on the same two */
    n = resolve_fixture(LOOP0P1, d, &t);
    assert_devs(d, n, LOOP0 < bdev ? LOOP0 : bdev, LOOP0 < bdev ? bdev : LOOP0);
    n = resolve_fixture(DM6, d, &t);
    assert_devs(d, n, LOOP0 < bdev ? LOOP0 : bdev, LOOP0 < bdev ? bdev : LOOP0);
}

/* ------------------------------------------------------------------------------------------ */
/* Live: real processes, real /proc and /sys                                                   */
/* ------------------------------------------------------------------------------------------ */

/* The whole disk under path's filesystem, worked out without fdmap: the sysfs directory of
 * its device, or the parent directory when that is a partition; it must offer a scheduler.
 * Returns false when the filesystem is not on a plain disk or partition. */
static bool disk_under(const char *path, dev_t *disk, char *name, size_t namelen)
{
    dev_t dev = dev_of(path);
    if (major(dev) == 0)
        return false;
    char link[64], real[PATH_MAX], attr[PATH_MAX + 32];
    snprintf(link, sizeof(link), "/sys/dev/block/%u:%u", major(dev), minor(dev));
    if (!realpath(link, real))
        return false;
    snprintf(attr, sizeof(attr), "%s/partition", real);
    if (access(attr, F_OK) == 0)
        *strrchr(real, '/') = '\0';
    snprintf(attr, sizeof(attr), "%s/slaves", real);
    DIR *d = opendir(attr);
    int nslaves = 0;
    struct dirent *e;
    while (d && (e = readdir(d)))
        nslaves += e->d_name[0] != '.';
    if (d)
        closedir(d);
    snprintf(attr, sizeof(attr), "%s/queue/scheduler", real);
    char sched[256] = "";
    FILE *f = fopen(attr, "r");
    if (f) {
        if (!fgets(sched, sizeof(sched), f))
            sched[0] = '\0';
        fclose(f);
    }
    snprintf(attr, sizeof(attr), "%s/dev", real);
    unsigned a, b;
    f = fopen(attr, "r");
    int ok = f && fscanf(f, "%u:%u", &a, &b) == 2;
    if (f)
        fclose(f);
    if (!ok || nslaves > 0 || !strchr(sched, '['))
        return false;
    *disk = makedev(a, b);
    snprintf(name, namelen, "%s", strrchr(real, '/') + 1);
    return true;
}

static dev_t root_disk;             /* the disk under /var/tmp, 0 when unusable */

static void need_root_disk(void)
{
    char name[64];
    if (root_disk == 0 && !disk_under(scratch, &root_disk, name, sizeof(name))) {
        fprintf(stderr, "skipped: %s is not on a plain disk with a scheduler\n", scratch);
        skip();
    }
}

struct open_spec {
    const char *path;
    int flags;
};

/* In a child: 0, 1 and 2 on /dev/null, every other fd closed but keep. */
static void child_fds_only(int keep)
{
    int null = open("/dev/null", O_RDWR);
    for (int fd = 0; fd < 3; fd++)
        dup2(null, fd);
    for (int fd = 3; fd < 1024; fd++)
        if (fd != keep)
            close(fd);
}

/* A process holding exactly these files open (0, 1 and 2 are /dev/null; every other fd
 * is closed), waiting to be killed. It is a child that opens the files, then becomes
 * /bin/sleep: a fork alone would also hold whatever a tool running this test keeps open
 * (valgrind's own fds cannot be closed, but are close-on-exec). Returns its pid once the
 * exec is done (the pipe's write end is close-on-exec, so EOF says so) and sleep sleeps. */
static pid_t spawn_holder(const struct open_spec *specs, size_t n)
{
    int p[2];
    assert_int_equal(pipe2(p, O_CLOEXEC), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        child_fds_only(p[1]);
        char ok = 'y';
        for (size_t i = 0; i < n; i++)
            if (open(specs[i].path, specs[i].flags, 0600) < 0)
                ok = 'n';
        if (write(p[1], &ok, 1) != 1)
            _exit(1);
        execl("/bin/sleep", "sleep", "3600", (char *)NULL);
        ok = 'e';
        (void)!write(p[1], &ok, 1);
        _exit(127);
    }
    close(p[1]);
    char ok = 0, after = 0;
    ssize_t r = read(p[0], &ok, 1);
    ssize_t eof = read(p[0], &after, 1);
    close(p[0]);
    if (r != 1 || ok != 'y' || eof != 0) {
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
        fail_msg("holder could not %s", ok == 'y' ? "exec /bin/sleep" : "open its files");
    }
    /* The exec is done, but the new image is still starting: the dynamic loader and
     * setlocale hold ld.so.cache, libc and the locale archive open for a moment, files on
     * the root disk a scan could catch. Settled once it sleeps. */
    char path[64], wchan[64] = "";
    snprintf(path, sizeof(path), "/proc/%d/wchan", (int)pid);
    for (int tries = 0; tries < 10000; tries++) {
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        ssize_t len = fd >= 0 ? read(fd, wchan, sizeof(wchan) - 1) : -1;
        if (fd >= 0)
            close(fd);
        wchan[len > 0 ? len : 0] = '\0';
        if (strstr(wchan, "nanosleep"))
            return pid;
        usleep(1000);
    }
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    fail_msg("holder never went to sleep (wchan \"%s\")", wchan);
    return -1;
}

static void reap(pid_t pid)
{
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
}

/* One fresh fdmap over the real /proc and /sys, asked once about pid. */
static void live_get(pid_t pid, struct fd_devs *out)
{
    int proc = open_dir("/proc"), sys = open_dir("/sys");
    struct fdmap *m;
    assert_int_equal(fdmap_new(&m, proc, sys, 5.0, 0), 0);
    fdmap_get(m, pid, 1, 0.0, out);
    fdmap_free(m);
    close(proc);
    close(sys);
}

static void scratch_file(char *path, size_t len, const char *name)
{
    snprintf(path, len, "%s/%s", scratch, name);
}

static void test_live_root_disk_matches_sysfs(void **state)
{
    (void)state;
    need_root_disk();
    char name[64];
    dev_t disk;
    assert_true(disk_under(scratch, &disk, name, sizeof(name)));
    /* This machine: the root filesystem is on vda. Say so when it holds. */
    FILE *f = fopen("/sys/class/block/vda/dev", "r");
    unsigned a, b;
    if (f && fscanf(f, "%u:%u", &a, &b) == 2 && strcmp(name, "vda") == 0)
        assert_true(disk == makedev(a, b));
    if (f)
        fclose(f);
    int sys = open_dir("/sys");
    dev_t d[FDMAP_MAX_DEVS];
    bool t = true;
    int n = fdmap_resolve(sys, dev_of(scratch), d, FDMAP_MAX_DEVS, &t);
    assert_devs(d, n, disk);
    assert_false(t);
    close(sys);
}

static void test_live_anonymous_and_char_devices_are_ignored(void **state)
{
    (void)state;
    struct open_spec specs[3] = { { "/dev/null", O_RDONLY }, { "/proc/self/stat", O_RDONLY } };
    size_t n = 2;
    char shm[PATH_MAX] = "";
    struct stat st;
    if (stat("/dev/shm", &st) == 0 && major(st.st_dev) == 0) {
        snprintf(shm, sizeof(shm), "/dev/shm/iotriage-fdmap.%d", (int)getpid());
        specs[n++] = (struct open_spec){ shm, O_WRONLY | O_CREAT };   /* tmpfs, written */
    }
    pid_t pid = spawn_holder(specs, n);
    struct fd_devs r;
    live_get(pid, &r);
    reap(pid);
    if (shm[0])
        unlink(shm);
    assert_int_equal(r.err, 0);
    assert_int_equal(r.ndevs, 0);
    assert_false(r.buffered_writer);
    assert_false(r.truncated);
}

/* fdmap_set_netfs: a file on a watched filesystem with no block device is noted in
 * fd_devs.netfs (tmpfs stands in for nfs or fuse here: any anonymous st_dev), one on an
 * unwatched one (procfs) is not; unwatched, nothing is. A new set rescans a process whose
 * cached answer is not due. */
static void test_live_watched_anonymous_filesystem_is_noted(void **state)
{
    (void)state;
    struct stat st;
    if (stat("/dev/shm", &st) != 0 || major(st.st_dev) != 0) {
        fprintf(stderr, "skipped: no tmpfs at /dev/shm\n");
        skip();
    }
    char shm[PATH_MAX];
    snprintf(shm, sizeof(shm), "/dev/shm/iotriage-fdmap-netfs.%d", (int)getpid());
    struct open_spec specs[] = { { shm, O_RDONLY | O_CREAT }, { "/proc/self/stat", O_RDONLY } };
    pid_t pid = spawn_holder(specs, 2);
    unlink(shm);
    int proc = open_dir("/proc"), sys = open_dir("/sys");
    struct fdmap *m;
    assert_int_equal(fdmap_new(&m, proc, sys, 5.0, 0), 0);
    struct fd_devs r;
    fdmap_get(m, pid, 1, 0.0, &r);
    assert_int_equal(r.err, 0);
    assert_int_equal(r.nnetfs, 0);
    dev_t watch[] = { st.st_dev };
    fdmap_set_netfs(m, watch, 1);
    struct fdmap_stats before, after;
    fdmap_get_stats(m, &before);
    fdmap_get(m, pid, 1, 0.1, &r);          /* not due by age: rescanned for the new set */
    fdmap_get_stats(m, &after);
    assert_int_equal(after.scans, before.scans + 1);
    assert_int_equal(r.err, 0);
    assert_int_equal(r.ndevs, 0);
    assert_int_equal(r.nnetfs, 1);
    assert_true(r.netfs[0] == st.st_dev);
    fdmap_get(m, pid, 1, 0.2, &r);          /* from the cache: the same */
    assert_int_equal(r.nnetfs, 1);
    assert_true(r.netfs[0] == st.st_dev);
    fdmap_set_netfs(m, NULL, 0);
    fdmap_get(m, pid, 1, 0.3, &r);
    assert_int_equal(r.nnetfs, 0);
    fdmap_free(m);
    reap(pid);
    close(proc);
    close(sys);
}

/* The holder opens `path` with `flags`; the answer must be `want` alone, and
 * buffered_writer as given. */
static void expect_one_file(const char *path, int flags, dev_t want, bool buffered)
{
    struct open_spec spec = { path, flags };
    pid_t pid = spawn_holder(&spec, 1);
    struct fd_devs r;
    live_get(pid, &r);
    reap(pid);
    assert_int_equal(r.err, 0);
    assert_devs(r.devs, (int)r.ndevs, want);
    if (r.buffered_writer != buffered)
        fail_msg("%s opened with flags %#o: buffered_writer %d, expected %d", path, flags,
                 r.buffered_writer, buffered);
}

static void test_live_open_modes(void **state)
{
    (void)state;
    need_root_disk();
    char file[PATH_MAX];
    scratch_file(file, sizeof(file), "data");
    write_text(file, "x");
    expect_one_file(file, O_RDONLY, root_disk, false);
    expect_one_file(file, O_WRONLY, root_disk, true);
    expect_one_file(file, O_RDWR, root_disk, true);
    expect_one_file(file, O_WRONLY | O_APPEND, root_disk, true);
    expect_one_file(file, O_WRONLY | O_DIRECT, root_disk, false);
    expect_one_file(file, O_RDWR | O_DIRECT, root_disk, false);
    expect_one_file(scratch, O_RDONLY | O_DIRECTORY, root_disk, false);
}

/* The open-files iterator (fdmap_set_bulk with taskiter_files) gives every holder the
 * answer the /proc scan gives: devices, buffered writers (O_DIRECT and read-only files
 * apart) and the deleted files noted, from the iterator's records alone. Root, BPF. */
static void bulk_add(void *m, const struct tasks_file_rec *v, size_t n)
{
    fdmap_bulk_add(m, v, n);
}

static int bulk_from_iter(void *ti, struct fdmap *m)
{
    return taskiter_files(ti, bulk_add, m);
}

static void assert_same_answer(const struct fd_devs *a, const struct fd_devs *b, int which)
{
    assert_int_equal(a->nnetfs, b->nnetfs);
    for (unsigned i = 0; i < a->nnetfs; i++)
        assert_true(a->netfs[i] == b->netfs[i]);
    if (a->err != b->err || a->ndevs != b->ndevs || a->buffered_writer != b->buffered_writer ||
        a->nbuffered != b->nbuffered || a->truncated != b->truncated)
        fail_msg("holder %d: /proc says err %d, %u devices, buffered %d (%u); the iterator err %d, "
                 "%u devices, buffered %d (%u)", which, a->err, a->ndevs, a->buffered_writer,
                 a->nbuffered, b->err, b->ndevs, b->buffered_writer, b->nbuffered);
    for (unsigned i = 0; i < a->ndevs; i++)
        assert_true(a->devs[i] == b->devs[i]);
    for (unsigned i = 0; i < a->nbuffered; i++)
        assert_true(a->buffered_devs[i] == b->buffered_devs[i]);
}

static pid_t bulk_pids[4];

/* The holders go whether the test passed or failed. */
static int bulk_teardown(void **state)
{
    (void)state;
    for (int i = 0; i < 4; i++)
        if (bulk_pids[i] > 0)
            reap(bulk_pids[i]);
    memset(bulk_pids, 0, sizeof(bulk_pids));
    return 0;
}

static void bulk_none(void *ctx, const struct tasks_file_rec *v, size_t n)
{
    (void)ctx;
    (void)v;
    (void)n;
}

static void test_live_bulk_matches_proc(void **state)
{
    (void)state;
    need_root_disk();
    int proc = open_dir("/proc"), sys = open_dir("/sys");
    char err[256] = "the open-files program did not load";
    struct taskiter *ti;
    /* the open-files program loads at its first read: one read to know it does */
    if (taskiter_open(&ti, proc, err, sizeof err) < 0 || taskiter_files(ti, bulk_none, NULL) == -ENOTSUP) {
        fprintf(stderr, "skipped: no open-files iterator here (%s)\n", err);
        taskiter_close(ti);
        close(proc);
        close(sys);
        skip();
    }
    char data[PATH_MAX], wr[PATH_MAX], direct[PATH_MAX], gone[PATH_MAX], shm[PATH_MAX];
    scratch_file(data, sizeof(data), "bulk-data");
    scratch_file(wr, sizeof(wr), "bulk-w");
    scratch_file(direct, sizeof(direct), "bulk-direct");
    scratch_file(gone, sizeof(gone), "bulk-gone");
    snprintf(shm, sizeof(shm), "/dev/shm/iotriage-fdmap-bulk.%d", (int)getpid());
    write_text(data, "x");
    write_text(wr, "y");
    write_text(direct, "z");
    write_text(gone, "deleted while open");
    char shm0[PATH_MAX];
    snprintf(shm0, sizeof(shm0), "/dev/shm/iotriage-fdmap-bulk0.%d", (int)getpid());
    struct open_spec h0[] = { { data, O_RDONLY }, { scratch, O_RDONLY | O_DIRECTORY },
                              { shm0, O_RDONLY | O_CREAT } };
    struct open_spec h1[] = { { wr, O_WRONLY | O_APPEND }, { direct, O_WRONLY | O_DIRECT } };
    struct open_spec h2[] = { { direct, O_RDWR | O_DIRECT } };
    struct open_spec h3[] = { { gone, O_WRONLY }, { shm, O_RDWR | O_CREAT }, { "/dev/null", O_RDONLY } };
    pid_t *pids = bulk_pids;
    pids[0] = spawn_holder(h0, 3);
    pids[1] = spawn_holder(h1, 2);
    pids[2] = spawn_holder(h2, 1);
    pids[3] = spawn_holder(h3, 3);
    unlink(gone);
    unlink(shm);
    struct fdmap *byproc, *byiter;
    assert_int_equal(fdmap_new(&byproc, proc, sys, 5.0, 0), 0);
    assert_int_equal(fdmap_new(&byiter, proc, sys, 5.0, 0), 0);
    /* the shm file of holder 3 on a watched filesystem (fdmap_set_netfs): both note it */
    struct stat shm_st;
    if (stat("/dev/shm", &shm_st) == 0 && major(shm_st.st_dev) == 0) {
        fdmap_set_netfs(byproc, &shm_st.st_dev, 1);
        fdmap_set_netfs(byiter, &shm_st.st_dev, 1);
    }
    fdmap_set_bulk(byiter, bulk_from_iter, ti, 0);
    fdmap_begin_refresh(byiter);
    for (int i = 0; i < 4; i++) {
        struct fd_devs a, b;
        fdmap_get(byproc, pids[i], 1, 0.0, &a);
        fdmap_get(byiter, pids[i], 1, 0.0, &b);
        assert_int_equal(a.err, 0);
        assert_same_answer(&a, &b, i);
    }
    /* the answers came from the records, not from /proc */
    struct fdmap_stats st;
    fdmap_get_stats(byiter, &st);
    assert_int_equal(st.bulk_runs, 1);
    assert_int_equal(st.bulk_scans, 4);
    /* holder 1 writes through the page cache to the root disk; 2 only with O_DIRECT */
    struct fd_devs b1, b2;
    fdmap_get(byiter, pids[1], 1, 0.0, &b1);
    fdmap_get(byiter, pids[2], 1, 0.0, &b2);
    assert_true(b1.buffered_writer);
    assert_false(b2.buffered_writer);
    struct fd_devs b0, b3;
    fdmap_get(byiter, pids[0], 1, 0.0, &b0);
    fdmap_get(byiter, pids[3], 1, 0.0, &b3);
    unlink(shm0);
    assert_int_equal(b0.nnetfs, major(shm_st.st_dev) == 0 ? 1 : 0);
    assert_int_equal(b3.nnetfs, major(shm_st.st_dev) == 0 ? 1 : 0);
    /* the same deleted file, the same way, from both */
    const struct fd_deleted *da, *db;
    size_t na = fdmap_deleted(byproc, &da), nb = fdmap_deleted(byiter, &db);
    assert_int_equal(na, nb);
    size_t mine = 0;
    for (size_t i = 0; i < na; i++) {
        assert_int_equal(da[i].tgid, db[i].tgid);
        assert_int_equal(da[i].fd, db[i].fd);
        assert_true(da[i].dev == db[i].dev && da[i].ino == db[i].ino);
        /* blocks may differ: statx counts ext4's delayed allocation, the inode's
         * i_blocks not yet (the space view statx's each holder again anyway) */
        assert_true(da[i].size == db[i].size);
        mine += da[i].tgid == pids[3];
    }
    assert_true(mine >= 1);                 /* the deleted file (and the shm one, if tmpfs) */
    fdmap_free(byproc);
    fdmap_free(byiter);
    taskiter_close(ti);
    close(proc);
    close(sys);
}

/* A process whose main thread left (pthread_exit) after opening `path` for writing: its
 * leader is a zombie, whose /proc/PID/fd reads empty, and one thread lives on, asleep.
 * *tid: that thread. */
static int leaderless_pipe = -1;

static void *leaderless_thread(void *arg)
{
    (void)arg;
    pid_t tid = gettid();
    if (write(leaderless_pipe, &tid, sizeof tid) != sizeof tid)
        _exit(1);
    for (;;)
        pause();
    return NULL;
}

static pid_t spawn_leaderless(const char *path, pid_t *tid)
{
    int p[2];
    assert_int_equal(pipe2(p, O_CLOEXEC), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        child_fds_only(p[1]);
        if (open(path, O_WRONLY) < 0)
            _exit(1);
        leaderless_pipe = p[1];
        pthread_t t;
        if (pthread_create(&t, NULL, leaderless_thread, NULL) != 0)
            _exit(1);
        pthread_exit(NULL);
    }
    close(p[1]);
    ssize_t r = read(p[0], tid, sizeof *tid);
    close(p[0]);
    if (r != sizeof *tid) {
        reap(pid);
        fail_msg("the leaderless holder did not start");
    }
    /* its leader gone: a zombie */
    char path_s[64], buf[4096];
    snprintf(path_s, sizeof(path_s), "/proc/%d/status", (int)pid);
    for (int tries = 0; tries < 10000; tries++) {
        FILE *f = fopen(path_s, "r");
        bool z = false;
        while (f && fgets(buf, sizeof(buf), f))
            z |= strncmp(buf, "State:\tZ", 8) == 0;
        if (f)
            fclose(f);
        if (z)
            return pid;
        usleep(1000);
    }
    reap(pid);
    fail_msg("the leaderless holder's leader never became a zombie");
    return -1;
}

static pid_t leaderless_pid;

static int leaderless_teardown(void **state)
{
    (void)state;
    if (leaderless_pid > 0)
        reap(leaderless_pid);
    leaderless_pid = 0;
    return 0;
}

/* A process whose leader exited: its open files are read through its live thread
 * (/proc/PID/task/TID/fd and fdinfo, or that thread's records from the open-files
 * iterator), the answer the leader's table gave before it went. */
static void test_live_leader_exited(void **state)
{
    (void)state;
    need_root_disk();
    char file[PATH_MAX];
    scratch_file(file, sizeof(file), "leaderless");
    write_text(file, "x");
    pid_t tid;
    leaderless_pid = spawn_leaderless(file, &tid);
    pid_t pid = leaderless_pid;
    int proc = open_dir("/proc"), sys = open_dir("/sys");
    struct fdmap *m;
    assert_int_equal(fdmap_new(&m, proc, sys, 5.0, 0), 0);
    struct fd_devs r;
    /* the zombie leader's own table: nothing */
    fdmap_get(m, pid, 1, 0.0, &r);
    assert_int_equal(r.ndevs, 0);
    fdmap_free(m);
    /* through its thread: the disk, written through the page cache (its fdinfo read) */
    assert_int_equal(fdmap_new(&m, proc, sys, 5.0, 0), 0);
    fdmap_get_io(m, pid, tid, 1, 0.0, false, 0, &r);
    assert_int_equal(r.err, 0);
    assert_devs(r.devs, (int)r.ndevs, root_disk);
    assert_true(r.buffered_writer);
    fdmap_free(m);
    /* the open-files iterator (root, BPF) says the same from the thread's records */
    char err[256] = "";
    struct taskiter *ti;
    if (taskiter_open(&ti, proc, err, sizeof err) == 0 && taskiter_files(ti, bulk_none, NULL) != -ENOTSUP) {
        assert_int_equal(fdmap_new(&m, proc, sys, 5.0, 0), 0);
        fdmap_set_bulk(m, bulk_from_iter, ti, 0);
        fdmap_begin_refresh(m);
        struct fd_devs b;
        fdmap_get_io(m, pid, tid, 1, 0.0, false, 0, &b);
        assert_same_answer(&r, &b, 0);
        struct fdmap_stats st;
        fdmap_get_stats(m, &st);
        assert_int_equal(st.bulk_scans, 1);
        fdmap_free(m);
        taskiter_close(ti);
    } else {
        fprintf(stderr, "note: no open-files iterator here (%s): /proc only\n", err);
    }
    close(proc);
    close(sys);
}

/* A block device node for dev in the scratch directory; false (and why) when refused. */
static bool make_node(char *node, size_t len, const char *name, dev_t dev)
{
    scratch_file(node, len, name);
    unlink(node);
    if (mknod(node, S_IFBLK | 0600, dev) == 0)
        return true;
    fprintf(stderr, "skipped: mknod: %s\n", strerror(errno));
    return false;
}

static void test_live_raw_block_device_maps_to_its_disk(void **state)
{
    (void)state;
    need_root_disk();
    char node[PATH_MAX];
    /* The device under the scratch directory, maybe a partition. Opening the root disk
     * may be refused (this sandbox's device cgroup says EPERM), and is not needed: an
     * O_PATH fd shows the node to statx through /proc/PID/fd all the same. */
    if (!make_node(node, sizeof(node), "blk", dev_of(scratch)))
        skip();
    expect_one_file(node, O_PATH, root_disk, false);
    unlink(node);
}

/* Buffered writes to a raw block device go through its page cache like a file's. Needs a
 * block device we may open and that nobody uses: an unbound loop device (no loop/). */
static void test_live_raw_block_device_open_modes(void **state)
{
    (void)state;
    dev_t loop = 0;
    char path[PATH_MAX];
    for (int i = 0; i < 64 && !loop; i++) {
        snprintf(path, sizeof(path), "/sys/class/block/loop%d/loop", i);
        if (access(path, F_OK) == 0)
            continue;
        snprintf(path, sizeof(path), "/sys/class/block/loop%d/dev", i);
        unsigned a, b;
        FILE *f = fopen(path, "r");
        if (f && fscanf(f, "%u:%u", &a, &b) == 2)
            loop = makedev(a, b);
        if (f)
            fclose(f);
    }
    if (!loop) {
        fprintf(stderr, "skipped: no unbound loop device\n");
        skip();
    }
    char node[PATH_MAX];
    if (!make_node(node, sizeof(node), "loop", loop))
        skip();
    int fd = open(node, O_RDONLY);
    if (fd < 0) {
        fprintf(stderr, "skipped: opening loop device %u:%u: %s\n", major(loop), minor(loop),
                strerror(errno));
        unlink(node);
        skip();
    }
    close(fd);
    expect_one_file(node, O_RDONLY, loop, false);
    expect_one_file(node, O_WRONLY, loop, true);
    expect_one_file(node, O_WRONLY | O_DIRECT, loop, false);
    unlink(node);
}

static void test_live_exited_process_is_enoent(void **state)
{
    (void)state;
    pid_t pid = spawn_holder(NULL, 0);
    reap(pid);
    struct fd_devs r;
    live_get(pid, &r);
    assert_int_equal(r.err, -ENOENT);
    assert_int_equal(r.ndevs, 0);
}

static void test_live_unprivileged_gets_eacces_for_root_process(void **state)
{
    (void)state;
    if (geteuid() != 0) {
        fprintf(stderr, "skipped: needs root to switch to uid 65534\n");
        skip();
    }
    pid_t target = spawn_holder(NULL, 0);   /* a root process */
    int p[2];
    assert_int_equal(pipe(p), 0);
    int proc = open_dir("/proc"), sys = open_dir("/sys");
    pid_t child = fork();
    assert_true(child >= 0);
    if (child == 0) {
        int err = 1;
        if (setgroups(0, NULL) == 0 && setresgid(65534, 65534, 65534) == 0 &&
            setresuid(65534, 65534, 65534) == 0) {
            struct fdmap *m;
            struct fd_devs r;
            fdmap_new(&m, proc, sys, 5.0, 0);
            fdmap_get(m, target, 1, 0.0, &r);
            err = r.err;
            fdmap_free(m);
        }
        _exit(write(p[1], &err, sizeof(err)) == sizeof(err) ? 0 : 1);
    }
    close(p[1]);
    int err = 0;
    assert_int_equal(read(p[0], &err, sizeof(err)), sizeof(err));
    close(p[0]);
    waitpid(child, NULL, 0);
    reap(target);
    close(proc);
    close(sys);
    assert_int_equal(err, -EACCES);
}

/* ------------------------------------------------------------------------------------------ */
/* The caches                                                                                  */
/* ------------------------------------------------------------------------------------------ */

static void test_cache_rescans_only_after_the_period(void **state)
{
    (void)state;
    need_root_disk();
    char file[PATH_MAX];
    scratch_file(file, sizeof(file), "data");
    write_text(file, "x");
    struct open_spec spec = { file, O_RDONLY };
    pid_t pid = spawn_holder(&spec, 1);
    int proc = open_dir("/proc"), sys = open_dir("/sys");
    struct fdmap *m;
    struct fdmap_stats st;
    struct fd_devs r;
    assert_int_equal(fdmap_new(&m, proc, sys, 10.0, 0), 0);

    fdmap_get(m, pid, 42, 100.0, &r);
    fdmap_get_stats(m, &st);
    assert_int_equal(st.scans, 1);
    assert_int_equal(st.resolves, 1);
    assert_devs(r.devs, (int)r.ndevs, root_disk);
    /* The first rescan comes no earlier than half the period. */
    fdmap_get(m, pid, 42, 104.9, &r);
    fdmap_get_stats(m, &st);
    assert_int_equal(st.scans, 1);
    assert_int_equal(st.hits, 1);
    assert_devs(r.devs, (int)r.ndevs, root_disk);
    /* and no later than the whole period */
    fdmap_get(m, pid, 42, 110.0, &r);
    fdmap_get_stats(m, &st);
    assert_int_equal(st.scans, 2);
    assert_int_equal(st.resolves, 1);       /* the device resolution was kept */
    assert_int_equal(st.dev_checks, 1);     /* and checked once: a period had passed */
    assert_int_equal(st.dev_drops, 0);
    /* after that, every whole period */
    fdmap_get(m, pid, 42, 119.9, &r);
    fdmap_get_stats(m, &st);
    assert_int_equal(st.scans, 2);
    fdmap_get(m, pid, 42, 120.0, &r);
    fdmap_get_stats(m, &st);
    assert_int_equal(st.scans, 3);
    /* Another start time is another process behind a reused pid: scanned at once. */
    fdmap_get(m, pid, 43, 120.1, &r);
    fdmap_get_stats(m, &st);
    assert_int_equal(st.scans, 4);
    assert_int_equal(st.procs, 1);
    /* Asked to forget devices: rescanned and re-resolved at once. */
    fdmap_invalidate_devices(m);
    fdmap_get(m, pid, 43, 120.2, &r);
    fdmap_get_stats(m, &st);
    assert_int_equal(st.scans, 5);
    assert_int_equal(st.resolves, 2);
    assert_devs(r.devs, (int)r.ndevs, root_disk);

    fdmap_free(m);
    reap(pid);
    close(proc);
    close(sys);
}

/* With the I/O signature: a process due for its rescan that did no I/O since its last
 * scan keeps its answer until the idle period; one whose counters moved, or whose counters
 * are unknown, is rescanned on the usual schedule. The kept answer is the scanned one,
 * buffered set included (it is stored compactly). */
static void test_cache_idle_processes_are_not_rescanned(void **state)
{
    (void)state;
    need_root_disk();
    char file[PATH_MAX];
    scratch_file(file, sizeof(file), "log");
    write_text(file, "x");
    struct open_spec spec = { file, O_WRONLY | O_APPEND };
    pid_t pid = spawn_holder(&spec, 1);
    int proc = open_dir("/proc"), sys = open_dir("/sys");
    struct fdmap *m;
    struct fdmap_stats st;
    struct fd_devs first, r;
    assert_int_equal(fdmap_new(&m, proc, sys, 10.0, 0), 0);
    fdmap_set_idle_rescan(m, 30.0);

    fdmap_get_io(m, pid, 0, 42, 100.0, true, 7, &first);
    assert_int_equal(first.err, 0);
    assert_true(first.buffered_writer);
    assert_devs(first.devs, (int)first.ndevs, root_disk);
    assert_int_equal(first.nbuffered, 1);
    assert_true(first.buffered_devs[0] == root_disk);
    /* due (the first rescan comes within the period), but idle: kept */
    fdmap_get_io(m, pid, 0, 42, 110.0, true, 7, &r);
    fdmap_get_stats(m, &st);
    assert_int_equal(st.scans, 1);
    assert_int_equal(st.idle_skips, 1);
    assert_memory_equal(&r, &first, sizeof(r));
    fdmap_get_io(m, pid, 0, 42, 129.9, true, 7, &r);
    fdmap_get_stats(m, &st);
    assert_int_equal(st.scans, 1);
    assert_memory_equal(&r, &first, sizeof(r));
    /* the idle period is over: rescanned even though still idle */
    fdmap_get_io(m, pid, 0, 42, 130.0, true, 7, &r);
    fdmap_get_stats(m, &st);
    assert_int_equal(st.scans, 2);
    /* not due yet: the signature moving changes nothing before the period */
    fdmap_get_io(m, pid, 0, 42, 135.0, true, 8, &r);
    fdmap_get_stats(m, &st);
    assert_int_equal(st.scans, 2);
    /* due and moved since the last scan (7 then): rescanned */
    fdmap_get_io(m, pid, 0, 42, 140.0, true, 8, &r);
    fdmap_get_stats(m, &st);
    assert_int_equal(st.scans, 3);
    /* due, counters unknown: rescanned */
    fdmap_get_io(m, pid, 0, 42, 150.0, false, 8, &r);
    fdmap_get_stats(m, &st);
    assert_int_equal(st.scans, 4);
    /* due, known now but unknown at the last scan: rescanned */
    fdmap_get_io(m, pid, 0, 42, 160.0, true, 8, &r);
    fdmap_get_stats(m, &st);
    assert_int_equal(st.scans, 5);
    /* fdmap_get knows no counters: the usual schedule */
    fdmap_get(m, pid, 42, 170.0, &r);
    fdmap_get_stats(m, &st);
    assert_int_equal(st.scans, 6);
    assert_memory_equal(&r, &first, sizeof(r));
    /* another start time behind the same pid: scanned at once, idle or not */
    fdmap_get_io(m, pid, 0, 43, 170.1, true, 8, &r);
    fdmap_get_stats(m, &st);
    assert_int_equal(st.scans, 7);

    fdmap_free(m);
    reap(pid);
    close(proc);
    close(sys);
}

static void test_cache_prune_and_bound(void **state)
{
    (void)state;
    int proc = open_dir("/proc"), sys = open_dir("/sys");
    pid_t a = spawn_holder(NULL, 0), b = spawn_holder(NULL, 0), c = spawn_holder(NULL, 0);
    struct fdmap *m;
    struct fdmap_stats st;
    struct fd_devs r;
    assert_int_equal(fdmap_new(&m, proc, sys, 5.0, 2), 0);   /* room for two processes */
    fdmap_get(m, a, 1, 0.0, &r);
    fdmap_get(m, b, 1, 0.0, &r);
    fdmap_get(m, c, 1, 0.0, &r);           /* full: answered, not stored */
    assert_int_equal(r.err, 0);
    fdmap_get_stats(m, &st);
    assert_int_equal(st.procs, 2);
    assert_int_equal(st.uncached, 1);
    fdmap_get(m, c, 1, 1.0, &r);           /* still not stored, so scanned again */
    fdmap_get(m, a, 1, 1.0, &r);           /* a hit */
    fdmap_get_stats(m, &st);
    assert_int_equal(st.scans, 4);
    assert_int_equal(st.hits, 1);
    /* b was not asked about at 1.0: pruned with max_age 0 */
    fdmap_prune(m, 1.0, 0.0);
    fdmap_get_stats(m, &st);
    assert_int_equal(st.procs, 1);
    fdmap_get(m, a, 1, 1.5, &r);
    fdmap_get(m, c, 1, 1.5, &r);           /* room again: stored now */
    fdmap_get(m, c, 1, 1.6, &r);
    fdmap_get_stats(m, &st);
    assert_int_equal(st.procs, 2);
    assert_int_equal(st.hits, 3);
    assert_int_equal(st.uncached, 2);
    /* max_age: a process asked about 10 s ago survives a 30 s prune, not a 5 s one */
    fdmap_prune(m, 11.6, 30.0);
    fdmap_get_stats(m, &st);
    assert_int_equal(st.procs, 2);
    fdmap_prune(m, 11.6, 5.0);
    fdmap_get_stats(m, &st);
    assert_int_equal(st.procs, 0);
    fdmap_free(m);
    reap(a);
    reap(b);
    reap(c);
    close(proc);
    close(sys);
}

static void test_cache_many_processes_grow_and_shrink(void **state)
{
    (void)state;
    /* Fake pids of processes that do not exist: answers are -ENOENT, stored all the same. */
    int proc = open_dir("/proc"), sys = open_dir("/sys");
    struct fdmap *m;
    struct fdmap_stats st;
    struct fd_devs r;
    assert_int_equal(fdmap_new(&m, proc, sys, 5.0, 1000), 0);
    for (pid_t p = 0; p < 1200; p++)
        fdmap_get(m, 4000000 + p, 1, 0.0, &r);
    fdmap_get_stats(m, &st);
    assert_int_equal(st.procs, 1000);
    assert_int_equal(st.uncached, 200);
    assert_int_equal(r.err, -ENOENT);
    size_t full = st.bytes;
    for (pid_t p = 0; p < 1000; p++) {
        fdmap_get(m, 4000000 + p, 1, 1.0, &r);
        assert_int_equal(r.err, -ENOENT);
    }
    fdmap_get_stats(m, &st);
    assert_int_equal(st.hits, 1000);
    for (pid_t p = 0; p < 10; p++)
        fdmap_get(m, 4000000 + p, 1, 2.0, &r);
    fdmap_prune(m, 2.0, 0.0);
    fdmap_get_stats(m, &st);
    assert_int_equal(st.procs, 10);
    assert_true(st.bytes < full / 4);
    for (pid_t p = 0; p < 10; p++)
        fdmap_get(m, 4000000 + p, 1, 2.5, &r);
    fdmap_get_stats(m, &st);
    assert_int_equal(st.hits, 1020);
    fdmap_free(m);
    close(proc);
    close(sys);
}

/* The device cache lives as long as the sysfs directory: a change of content is not
 * noticed (devices rarely change), a directory replaced is, and invalidate drops all.
 * The holder's real file device is made to stand for a fixture disk in the scratch copy. */
static void test_cache_device_directory_replaced_or_invalidated(void **state)
{
    (void)state;
    char file[PATH_MAX];
    scratch_file(file, sizeof(file), "data");
    write_text(file, "x");
    dev_t dev = dev_of(file);
    if (major(dev) == 0)
        skip();
    /* disk-a: a scheduler; disk-b: none */
    char path[PATH_MAX];
    snprintf(path, sizeof(path), "%s/devices/test", sys_copy);
    mkdir(path, 0755);
    const char *disks[] = { "disk-a", "disk-b" };
    for (int i = 0; i < 2; i++) {
        snprintf(path, sizeof(path), "%s/devices/test/%s", sys_copy, disks[i]);
        mkdir(path, 0755);
        snprintf(path, sizeof(path), "%s/devices/test/%s/queue", sys_copy, disks[i]);
        mkdir(path, 0755);
        snprintf(path, sizeof(path), "%s/devices/test/%s/queue/scheduler", sys_copy, disks[i]);
        write_text(path, i == 0 ? "[none] mq-deadline\n" : "");
    }
    assert_true(alias_dev(dev, "test/disk-a"));

    struct open_spec spec = { file, O_RDONLY };
    pid_t pid = spawn_holder(&spec, 1);
    int proc = open_dir("/proc"), sys = open_dir(sys_copy);
    struct fdmap *m;
    struct fdmap_stats st;
    struct fd_devs r;
    assert_int_equal(fdmap_new(&m, proc, sys, 10.0, 0), 0);
    fdmap_get(m, pid, 1, 0.0, &r);
    assert_devs(r.devs, (int)r.ndevs, dev);

    /* disk-a loses its scheduler in place: the cached resolution stands */
    snprintf(path, sizeof(path), "%s/devices/test/disk-a/queue/scheduler", sys_copy);
    write_text(path, "");
    fdmap_get(m, pid, 1, 20.0, &r);
    fdmap_get_stats(m, &st);
    assert_int_equal(st.scans, 2);
    assert_int_equal(st.dev_drops, 0);
    assert_devs(r.devs, (int)r.ndevs, dev);
    /* until asked to drop it */
    fdmap_invalidate_devices(m);
    fdmap_get(m, pid, 1, 20.1, &r);
    assert_int_equal(r.ndevs, 0);

    /* The device directory is replaced (disk-b, no scheduler -> disk-a again, with one):
     * noticed at the next check, a period later. */
    assert_true(alias_dev(dev, "test/disk-b"));
    write_text(path, "[bfq]\n");
    fdmap_get(m, pid, 1, 40.0, &r);
    fdmap_get_stats(m, &st);
    assert_int_equal(st.dev_drops, 1);
    assert_int_equal(r.ndevs, 0);                   /* disk-b has no scheduler */
    assert_true(alias_dev(dev, "test/disk-a"));
    fdmap_get(m, pid, 1, 45.0, &r);                 /* within the period: cached */
    assert_int_equal(r.ndevs, 0);
    fdmap_get(m, pid, 1, 60.0, &r);
    fdmap_get_stats(m, &st);
    assert_int_equal(st.dev_drops, 2);
    assert_devs(r.devs, (int)r.ndevs, dev);

    /* The directory vanishes: the device is unknown to sysfs, nothing to report. */
    char link[PATH_MAX];
    snprintf(link, sizeof(link), "%s/dev/block/%u:%u", sys_copy, major(dev), minor(dev));
    unlink(link);
    fdmap_get(m, pid, 1, 80.0, &r);
    fdmap_get_stats(m, &st);
    assert_int_equal(st.dev_drops, 3);
    assert_int_equal(r.err, 0);
    assert_int_equal(r.ndevs, 0);

    fdmap_free(m);
    reap(pid);
    close(proc);
    close(sys);
}

/* A loop device re-attached to another backing file: its loop/ directory is new. */
static void test_cache_loop_reattached(void **state)
{
    (void)state;
    dev_t bdev = dev_of(backing);
    if (major(bdev) == 0)
        skip();
    assert_true(alias_dev(bdev, "pci0000:00/host1/block/sdb"));
    char loopdir[256], newdir[300], path[PATH_MAX];
    snprintf(loopdir, sizeof(loopdir), "%s/devices/virtual/block/loop0/loop", sys_copy);
    snprintf(path, sizeof(path), "%s/backing_file", loopdir);
    write_text(path, "/nonexistent/detached.img\n");

    /* A process with loop0 open: a block device node for 61:0 in the scratch directory. */
    char node[PATH_MAX];
    if (!make_node(node, sizeof(node), "loop0-node", LOOP0))
        skip();
    /* No driver has major 61, so the node cannot be opened for I/O (ENXIO); the holder
     * keeps an O_PATH fd, which statx through /proc/PID/fd follows to the node all the
     * same. */
    struct open_spec spec = { node, O_PATH };
    pid_t pid = spawn_holder(&spec, 1);
    int proc = open_dir("/proc"), sys = open_dir(sys_copy);
    struct fdmap *m;
    struct fdmap_stats st;
    struct fd_devs r;
    assert_int_equal(fdmap_new(&m, proc, sys, 10.0, 0), 0);
    fdmap_get(m, pid, 1, 0.0, &r);
    assert_devs(r.devs, (int)r.ndevs, LOOP0);

    /* Re-attached: the driver removes loop/ and creates it again. Create the new one
     * before removing the old, so that the inode number cannot be reused. */
    snprintf(newdir, sizeof(newdir), "%s.new", loopdir);
    mkdir(newdir, 0755);
    snprintf(path, sizeof(path), "%s/backing_file", newdir);
    char text[PATH_MAX + 2];
    snprintf(text, sizeof(text), "%s\n", backing);
    write_text(path, text);
    snprintf(path, sizeof(path), "%s/backing_file", loopdir);
    unlink(path);
    rmdir(loopdir);
    assert_int_equal(rename(newdir, loopdir), 0);

    fdmap_get(m, pid, 1, 10.0, &r);
    fdmap_get_stats(m, &st);
    assert_int_equal(st.dev_drops, 1);
    assert_devs(r.devs, (int)r.ndevs, LOOP0 < bdev ? LOOP0 : bdev, LOOP0 < bdev ? bdev : LOOP0);

    fdmap_free(m);
    reap(pid);
    unlink(node);
    close(proc);
    close(sys);
}

/* ------------------------------------------------------------------------------------------ */
/* Stacks by name: blkstack on tests/fixtures/stack/sys (its README)                           */
/* ------------------------------------------------------------------------------------------ */

/* A lookup reading each device's stack from the fixture tree once, as the sampler reads
 * each listed device's. */
struct fixture_stacks {
    int sys;
    unsigned n;
    char name[16][BD_NAME_MAX];
    struct blkstack st[16];
    int rc[16];
};

static const struct blkstack *fixture_lookup(const void *ctx, const char *name)
{
    struct fixture_stacks *f = (struct fixture_stacks *)(uintptr_t)ctx;
    for (unsigned i = 0; i < f->n; i++)
        if (strcmp(f->name[i], name) == 0)
            return f->rc[i] ? NULL : &f->st[i];
    assert_true(f->n < 16);
    str_copy(f->name[f->n], name, BD_NAME_MAX);
    f->rc[f->n] = blkstack_read(f->sys, name, &f->st[f->n]);
    f->n++;
    return f->rc[f->n - 1] ? NULL : &f->st[f->n - 1];
}

static int open_stack_fixture(void)
{
    int sys = open(fixture_path("stack/sys"), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (sys < 0)
        fail_msg("fixture %s missing (run from the repo root or set IOTRIAGE_FIXTURES)",
                 fixture_path("stack/sys"));
    return sys;
}

static void assert_list(const struct blkstack_list *l, const char *want)
{
    char got[256] = "";
    assert_true(l->known);
    for (unsigned i = 0; i < l->n; i++)
        snprintf(got + strlen(got), sizeof(got) - strlen(got), "%s%s", i ? "," : "", l->name[i]);
    assert_string_equal(got, want);
}

/* Each device's own lists, as sysfs has them: a partition's holders, a missing list
 * (empty), a name that is no device's (refused), a device that is not there (unknown). */
static void test_blkstack_read_lists(void **state)
{
    (void)state;
    int sys = open_stack_fixture();
    struct blkstack st;
    assert_int_equal(blkstack_read(sys, "dm-1", &st), 0);
    assert_list(&st.slaves, "dm-0");
    assert_list(&st.holders, "dm-2");
    assert_int_equal(blkstack_read(sys, "sda1", &st), 0);   /* a partition: no slaves/ */
    assert_list(&st.slaves, "");
    assert_list(&st.holders, "dm-0");
    assert_int_equal(blkstack_read(sys, "sda", &st), 0);    /* its partition's holder is not its own */
    assert_list(&st.holders, "");
    assert_int_equal(blkstack_read(sys, "md0", &st), 0);    /* "bad name" and "x;y" refused */
    assert_list(&st.slaves, "sdb,sdc");
    assert_false(st.slaves.truncated);
    assert_int_equal(blkstack_read(sys, "sdc", &st), 0);    /* holders/ missing: none */
    assert_list(&st.holders, "");
    assert_int_equal(blkstack_read(sys, "sdz", &st), -ENOENT);
    assert_false(st.slaves.known);
    assert_false(st.holders.known);
    assert_int_equal(blkstack_read(sys, "../sda", &st), -EINVAL);
    assert_false(st.slaves.known);

    const char *ok[] = { "sda", "dm-0", "nvme0n1p1", "cciss!c0d0", "md127", "sr0" };
    const char *bad[] = { "", ".", "..", ".x", "a/b", "bad name", "x;y", "a\nb", "\x1b[2J",
                          "caf\xc3\xa9" };
    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
        assert_true(blkstack_name_ok(ok[i]));
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        if (blkstack_name_ok(bad[i]))
            fail_msg("\"%s\" was taken for a device name", bad[i]);
    char longname[BD_NAME_MAX + 1];
    memset(longname, 'a', BD_NAME_MAX);
    longname[BD_NAME_MAX] = '\0';
    assert_false(blkstack_name_ok(longname));
    close(sys);
}

/* Three levels of device mapper over a partition: the walks down and up, the path from
 * the top to the partition, the device view's line. */
static void test_blkstack_walk_three_levels(void **state)
{
    (void)state;
    struct fixture_stacks f = { .sys = open_stack_fixture() };
    struct blkstack_hop h[BLKSTACK_MAX_HOPS];
    bool trunc = true;
    size_t n = blkstack_walk(fixture_lookup, &f, "dm-2", true, h, BLKSTACK_MAX_HOPS, &trunc);
    assert_int_equal(n, 4);
    assert_false(trunc);
    const char *down[] = { "dm-2", "dm-1", "dm-0", "sda1" };
    for (size_t i = 0; i < n; i++) {
        assert_string_equal(h[i].name, down[i]);
        assert_int_equal(h[i].depth, i);
        assert_int_equal(h[i].parent, (int)i - 1);
    }
    n = blkstack_walk(fixture_lookup, &f, "sda1", false, h, BLKSTACK_MAX_HOPS, &trunc);
    assert_int_equal(n, 4);
    assert_string_equal(h[3].name, "dm-2");
    assert_int_equal(h[3].depth, 3);

    const char *p[8];
    n = blkstack_path(fixture_lookup, &f, "dm-2", "sda1", p, 8);
    assert_int_equal(n, 4);
    for (size_t i = 0; i < n; i++)
        assert_string_equal(p[i], down[i]);
    assert_int_equal(blkstack_path(fixture_lookup, &f, "dm-2", "sda1", p, 3), 0);   /* no room */
    assert_int_equal(blkstack_path(fixture_lookup, &f, "dm-0", "dm-2", p, 8), 0);   /* above */
    assert_int_equal(blkstack_path(fixture_lookup, &f, "dm-0", "dm-0", p, 8), 0);

    char line[160];
    blkstack_line(fixture_lookup, &f, "dm-1", " -> ", line, sizeof(line));
    assert_string_equal(line, "dm-2 -> [dm-1] -> dm-0 -> sda1");
    blkstack_line(fixture_lookup, &f, "sda1", " -> ", line, sizeof(line));
    assert_string_equal(line, "dm-2 -> dm-1 -> dm-0 -> [sda1]");
    blkstack_line(fixture_lookup, &f, "md0", " \u2192 ", line, sizeof(line));
    assert_string_equal(line, "[md0] \u2192 sdb,sdc");
    blkstack_line(fixture_lookup, &f, "sda", " -> ", line, sizeof(line));
    assert_string_equal(line, "");                          /* stacks on nothing, nothing on it */
    blkstack_line(fixture_lookup, &f, "sdz", " -> ", line, sizeof(line));
    assert_string_equal(line, "");                          /* unknown: nothing said */
    f.st[0].holders.known = false;                         /* dm-2's, read first above */
    assert_string_equal(f.name[0], "dm-2");
    blkstack_line(fixture_lookup, &f, "dm-2", " -> ", line, sizeof(line));
    assert_string_equal(line, "? -> [dm-2] -> dm-1 -> dm-0 -> sda1");
    close(f.sys);
}

/* dm-7 and dm-8 stack on each other: each walk ends where the cycle closes. */
static void test_blkstack_walk_cycle_ends(void **state)
{
    (void)state;
    struct fixture_stacks f = { .sys = open_stack_fixture() };
    struct blkstack_hop h[BLKSTACK_MAX_HOPS];
    for (int below = 0; below < 2; below++) {
        size_t n = blkstack_walk(fixture_lookup, &f, "dm-7", below, h, BLKSTACK_MAX_HOPS, NULL);
        assert_int_equal(n, 2);
        assert_string_equal(h[1].name, "dm-8");
    }
    const char *p[8];
    assert_int_equal(blkstack_path(fixture_lookup, &f, "dm-7", "dm-8", p, 8), 2);
    assert_int_equal(blkstack_path(fixture_lookup, &f, "dm-7", "sda", p, 8), 0);
    char line[160];
    blkstack_line(fixture_lookup, &f, "dm-7", " -> ", line, sizeof(line));
    assert_string_equal(line, "dm-8 -> [dm-7] -> dm-8");
    close(f.sys);
}

/* What a scheduler switch on a bio-based device offers: the disks with a scheduler at the
 * bottom of its stack, a partition standing for its disk, each once; nothing for a
 * cycle of bio-based devices or a disk. The devices as the sampler lists them, their
 * stacks read from the fixture tree. */
static void test_disks_below_for_the_switch(void **state)
{
    (void)state;
    int sys = open_stack_fixture();
    static const char *const names[] = { "sda", "sda1", "sdb", "sdc", "dm-0", "dm-1", "dm-2",
                                         "dm-7", "dm-8", "md0" };
    enum { N = sizeof(names) / sizeof(names[0]) };
    static struct dev_sample devs[N];
    memset(devs, 0, sizeof(devs));
    for (size_t i = 0; i < N; i++) {
        struct dev_sample *d = &devs[i];
        str_copy(d->ds.name, names[i], sizeof(d->ds.name));
        str_copy(d->bd.disk, names[i], sizeof(d->bd.disk));
        assert_int_equal(blkstack_read(sys, names[i], &d->stack), 0);
        if (names[i][0] == 's' && strlen(names[i]) == 3) {     /* the disks */
            d->bd.nsched = 2;
            str_copy(d->bd.scheduler, "mq-deadline", sizeof(d->bd.scheduler));
        }
    }
    devs[1].bd.partition = true;
    str_copy(devs[1].bd.disk, "sda", sizeof(devs[1].bd.disk));
    struct snapshot snap = { .devs = devs, .ndevs = N };
    const char *out[16];
    assert_int_equal(snapshot_disks_below(&snap, "dm-2", out, 16), 1);
    assert_string_equal(out[0], "sda");
    assert_int_equal(snapshot_disks_below(&snap, "md0", out, 16), 2);
    assert_string_equal(out[0], "sdb");
    assert_string_equal(out[1], "sdc");
    assert_int_equal(snapshot_disks_below(&snap, "md0", out, 1), 1);
    assert_int_equal(snapshot_disks_below(&snap, "dm-7", out, 16), 0);
    assert_int_equal(snapshot_disks_below(&snap, "sda", out, 16), 0);
    assert_int_equal(snapshot_disks_below(&snap, "sdz", out, 16), 0);
    close(sys);
}

/* In memory: a chain c0 -> c1 -> ... -> c11, deeper than the bound, and a list holding a
 * name that is no device's (as a recording could). */
struct chain { struct blkstack st[12]; };

static const struct blkstack *chain_lookup(const void *ctx, const char *name)
{
    const struct chain *c = ctx;
    if (name[0] != 'c')
        return NULL;
    int i = atoi(name + 1);
    return i >= 0 && i < 12 ? &c->st[i] : NULL;
}

static void test_blkstack_walk_depth_bound(void **state)
{
    (void)state;
    static struct chain c;
    memset(&c, 0, sizeof(c));
    for (int i = 0; i < 12; i++) {
        c.st[i].slaves.known = c.st[i].holders.known = true;
        if (i < 11) {
            snprintf(c.st[i].slaves.name[0], BD_NAME_MAX, "c%d", i + 1);
            c.st[i].slaves.n = 1;
        }
    }
    str_copy(c.st[11].slaves.name[0], "../etc", BD_NAME_MAX);
    c.st[11].slaves.n = 1;
    struct blkstack_hop h[BLKSTACK_MAX_HOPS];
    bool trunc = false;
    size_t n = blkstack_walk(chain_lookup, &c, "c0", true, h, BLKSTACK_MAX_HOPS, &trunc);
    assert_int_equal(n, BLKSTACK_MAX_DEPTH + 1);
    assert_true(trunc);
    assert_string_equal(h[n - 1].name, "c8");
    const char *p[16];
    assert_int_equal(blkstack_path(chain_lookup, &c, "c0", "c8", p, 16), 9);
    assert_int_equal(blkstack_path(chain_lookup, &c, "c0", "c9", p, 16), 0);
    n = blkstack_walk(chain_lookup, &c, "c11", true, h, BLKSTACK_MAX_HOPS, &trunc);
    assert_int_equal(n, 1);                                  /* "../etc" is not followed */
    n = blkstack_walk(chain_lookup, &c, "c5", true, h, 3, &trunc);
    assert_int_equal(n, 3);
    assert_true(trunc);
}

static void test_new_rejects_bad_arguments(void **state)
{
    (void)state;
    struct fdmap *m = NULL;
    assert_int_equal(fdmap_new(&m, 0, 0, 0.0, 0), -EINVAL);
    assert_int_equal(fdmap_new(&m, 0, 0, -1.0, 0), -EINVAL);
    assert_int_equal(fdmap_new(&m, -1, 0, 5.0, 0), -EINVAL);
    assert_null(m);
    fdmap_free(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fdinfo_flags_real_file),
        cmocka_unit_test(test_fdinfo_flags_rejects_malformed),
        cmocka_unit_test(test_fdinfo_flags_reads_only_len_bytes),
        cmocka_unit_test(test_parse_majmin),
        cmocka_unit_test(test_resolve_disks_and_partitions),
        cmocka_unit_test(test_resolve_stacked_devices),
        cmocka_unit_test(test_resolve_devices_without_scheduler_give_nothing),
        cmocka_unit_test(test_resolve_cycle_terminates),
        cmocka_unit_test(test_resolve_depth_limit),
        cmocka_unit_test(test_resolve_loop_devices),
        cmocka_unit_test(test_live_root_disk_matches_sysfs),
        cmocka_unit_test(test_live_anonymous_and_char_devices_are_ignored),
        cmocka_unit_test(test_live_watched_anonymous_filesystem_is_noted),
        cmocka_unit_test(test_live_open_modes),
        cmocka_unit_test_teardown(test_live_bulk_matches_proc, bulk_teardown),
        cmocka_unit_test_teardown(test_live_leader_exited, leaderless_teardown),
        cmocka_unit_test(test_live_raw_block_device_maps_to_its_disk),
        cmocka_unit_test(test_live_raw_block_device_open_modes),
        cmocka_unit_test(test_live_exited_process_is_enoent),
        cmocka_unit_test(test_live_unprivileged_gets_eacces_for_root_process),
        cmocka_unit_test(test_cache_rescans_only_after_the_period),
        cmocka_unit_test(test_cache_idle_processes_are_not_rescanned),
        cmocka_unit_test(test_cache_prune_and_bound),
        cmocka_unit_test(test_cache_many_processes_grow_and_shrink),
        cmocka_unit_test(test_cache_device_directory_replaced_or_invalidated),
        cmocka_unit_test(test_cache_loop_reattached),
        cmocka_unit_test(test_new_rejects_bad_arguments),
        cmocka_unit_test(test_blkstack_read_lists),
        cmocka_unit_test(test_blkstack_walk_three_levels),
        cmocka_unit_test(test_blkstack_walk_cycle_ends),
        cmocka_unit_test(test_blkstack_walk_depth_bound),
        cmocka_unit_test(test_disks_below_for_the_switch),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
