/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * slowfs: a FUSE filesystem with one in-memory file, /disk.img, whose every
 * read and write takes a fixed latency and of which at most N are served at
 * once. A loop device with direct I/O on top of it is a block device of known
 * latency (L) and parallelism (N): capacity is N / L requests per second.
 *
 * A second name, /cached.img, reads the same bytes through the page cache (no
 * FOPEN_DIRECT_IO, read only): a buffered reader of it waits for the kernel's
 * readahead of a filesystem with no block device, as on NFS (tests/lab/lab.sh
 * LAB_CACHED).
 *
 *   slowfs MOUNTPOINT [--latency-us 2000] [--threads 4] [--size-mb 64] [-f] [-d]
 *
 * -f stays in the foreground, -d adds FUSE debug output (implies -f).
 * Stop it with `fusermount3 -u MOUNTPOINT` (or umount, SIGINT, SIGTERM).
 */
#define FUSE_USE_VERSION 312

#include <fuse.h>

#include <errno.h>
#include <limits.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static const char img_name[] = "disk.img";
static const char img_path[] = "/disk.img";
static const char cached_name[] = "cached.img";
static const char cached_path[] = "/cached.img";

static char *img;          /* the disk contents, anonymous memory */
static off_t img_size;
static long latency_ns;
static unsigned slots_n;
static sem_t slots;        /* one token per service slot */

/* Holding a slot for the whole latency is what makes the file a queueing
 * server with exactly slots_n servers of service time latency_ns. */
static void serve_begin(void)
{
    while (sem_wait(&slots) != 0 && errno == EINTR)
        ;
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    t.tv_nsec += latency_ns;
    t.tv_sec += t.tv_nsec / 1000000000L;
    t.tv_nsec %= 1000000000L;
    /* An absolute deadline, so a signal cannot stretch the sleep. */
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &t, NULL) == EINTR)
        ;
}

static void serve_end(void)
{
    sem_post(&slots);
}

static void *sf_init(struct fuse_conn_info *conn, struct fuse_config *cfg)
{
    /* Async direct I/O lets the kernel hand the loop driver's iocbs to us
     * without blocking its (single, per-cgroup) worker: without it the loop
     * device would serve one request at a time whatever N is. */
    if (conn->capable & FUSE_CAP_ASYNC_DIO)
        conn->want |= FUSE_CAP_ASYNC_DIO;
    /* Async DIO requests are FUSE "background" requests, which the kernel
     * caps at max_background (default 12); keep that far above N. */
    conn->max_background = 256;
    conn->congestion_threshold = 192;
    /* Direct I/O is set per file at open (sf_open): cfg->direct_io would force it on
     * cached.img too. */
    cfg->attr_timeout = 3600;
    cfg->entry_timeout = 3600;
    return NULL;
}

static int sf_getattr(const char *path, struct stat *st, struct fuse_file_info *fi)
{
    (void)fi;
    memset(st, 0, sizeof *st);
    st->st_uid = getuid();
    st->st_gid = getgid();
    if (strcmp(path, img_path) == 0 || strcmp(path, cached_path) == 0) {
        st->st_mode = S_IFREG | (strcmp(path, img_path) == 0 ? 0600 : 0400);
        st->st_nlink = 1;
        st->st_size = img_size;
        st->st_blksize = 4096;
        st->st_blocks = img_size / 512;
        return 0;
    }
    if (strcmp(path, "/") == 0) {
        st->st_mode = S_IFDIR | 0755;
        st->st_nlink = 2;
        return 0;
    }
    return -ENOENT;
}

static int sf_readdir(const char *path, void *buf, fuse_fill_dir_t fill, off_t off,
                      struct fuse_file_info *fi, enum fuse_readdir_flags flags)
{
    (void)off, (void)fi, (void)flags;
    if (strcmp(path, "/") != 0)
        return -ENOTDIR;
    fill(buf, ".", NULL, 0, 0);
    fill(buf, "..", NULL, 0, 0);
    fill(buf, img_name, NULL, 0, 0);
    fill(buf, cached_name, NULL, 0, 0);
    return 0;
}

static int sf_open(const char *path, struct fuse_file_info *fi)
{
    /* cached.img: the page cache, emptied at every open (keep_cache 0), so each
     * reader's first read of a page reaches us. Read only. */
    if (strcmp(path, cached_path) == 0) {
        if ((fi->flags & O_ACCMODE) != O_RDONLY)
            return -EACCES;
        fi->direct_io = 0;
        fi->keep_cache = 0;
        return 0;
    }
    if (strcmp(path, img_path) != 0)
        return -ENOENT;
    if (fi->flags & O_TRUNC)
        return -EPERM;
    /* FOPEN_DIRECT_IO: no page cache, every request reaches us. The kernel
     * accepts O_DIRECT opens of FUSE files, which the loop driver needs.
     * (libfuse 3.14 cannot yet set FOPEN_PARALLEL_DIRECT_WRITES; with async
     * DIO the inode lock is held only while a write is submitted.) */
    fi->direct_io = 1;
    fi->keep_cache = 0;
    return 0;
}

/* Clamp [off, off+size) to the image; returns the byte count (0 past end). */
static size_t clamp(off_t off, size_t size)
{
    if (off < 0 || off >= img_size)
        return 0;
    if ((off_t)size > img_size - off)
        size = (size_t)(img_size - off);
    return size;
}

static int sf_read(const char *path, char *buf, size_t size, off_t off,
                   struct fuse_file_info *fi)
{
    (void)path, (void)fi;
    size_t n = clamp(off, size);
    serve_begin();
    memcpy(buf, img + off, n);
    serve_end();
    return (int)n;
}

static int sf_write(const char *path, const char *buf, size_t size, off_t off,
                    struct fuse_file_info *fi)
{
    (void)path, (void)fi;
    size_t n = clamp(off, size);
    if (n == 0 && size > 0)
        return -ENOSPC;
    serve_begin();
    memcpy(img + off, buf, n);
    serve_end();
    return (int)n;
}

/* Data lives in memory: nothing to flush, but say so rather than ENOSYS. */
static int sf_fsync(const char *path, int datasync, struct fuse_file_info *fi)
{
    (void)path, (void)datasync, (void)fi;
    return 0;
}

static const struct fuse_operations sf_ops = {
    .init = sf_init,
    .getattr = sf_getattr,
    .readdir = sf_readdir,
    .open = sf_open,
    .read = sf_read,
    .write = sf_write,
    .fsync = sf_fsync,
};

static void usage(const char *prog)
{
    fprintf(stderr, "usage: %s MOUNTPOINT [--latency-us N] [--threads N] "
                    "[--size-mb N] [-f] [-d]\n", prog);
    exit(2);
}

static long num_arg(const char *prog, const char *opt, const char *s, long lo, long hi)
{
    char *end;
    errno = 0;
    long v = s ? strtol(s, &end, 10) : 0;
    if (!s || errno || *end || v < lo || v > hi) {
        fprintf(stderr, "%s: %s wants an integer in [%ld, %ld]\n", prog, opt, lo, hi);
        usage(prog);
    }
    return v;
}

int main(int argc, char **argv)
{
    const char *prog = argv[0], *mnt = NULL;
    long lat_us = 2000, threads = 4, size_mb = 64;
    int foreground = 0, debug = 0;

    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--latency-us"))
            lat_us = num_arg(prog, a, argv[++i], 0, 10000000);
        else if (!strcmp(a, "--threads"))
            threads = num_arg(prog, a, argv[++i], 1, 1024);
        else if (!strcmp(a, "--size-mb"))
            size_mb = num_arg(prog, a, argv[++i], 1, 1L << 20);
        else if (!strcmp(a, "-f"))
            foreground = 1;
        else if (!strcmp(a, "-d"))
            debug = foreground = 1;
        else if (a[0] != '-' && !mnt)
            mnt = a;
        else
            usage(prog);
    }
    if (!mnt)
        usage(prog);

    latency_ns = lat_us * 1000;
    slots_n = (unsigned)threads;
    img_size = (off_t)size_mb << 20;
    /* MAP_NORESERVE: untouched pages cost nothing and read back as zeros. */
    img = mmap(NULL, (size_t)img_size, PROT_READ | PROT_WRITE,
               MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (img == MAP_FAILED) {
        perror("slowfs: mmap");
        return 1;
    }
    if (sem_init(&slots, 0, slots_n) != 0) {
        perror("slowfs: sem_init");
        return 1;
    }
    /* 1 ns timer slack instead of 50 us so the latency is what was asked;
     * the FUSE worker threads inherit it. */
    prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);

    static char o[] = "-o", opts[] = "fsname=slowfs,subtype=slowfs", d[] = "-d";
    char *fargv[] = { argv[0], o, opts, d, NULL };
    struct fuse_args args = FUSE_ARGS_INIT(debug ? 4 : 3, fargv);
    struct fuse *f = fuse_new(&args, &sf_ops, sizeof sf_ops, NULL);
    if (!f)
        return 1;
    if (fuse_mount(f, mnt) != 0) {
        fuse_destroy(f);
        return 1;
    }
    int ret = 1;
    if (fuse_daemonize(foreground) == 0 &&
        fuse_set_signal_handlers(fuse_get_session(f)) == 0) {
        /* Far more FUSE workers than slots, all kept alive, so the requests
         * queue on our semaphore (the modelled device) and not in the kernel
         * or in thread start-up. */
        unsigned workers = 4 * slots_n + 16;
        struct fuse_loop_config *lc = fuse_loop_cfg_create();
        fuse_loop_cfg_set_max_threads(lc, workers);
        fuse_loop_cfg_set_idle_threads(lc, workers);
        ret = fuse_loop_mt(f, lc) != 0;
        fuse_loop_cfg_destroy(lc);
        fuse_remove_signal_handlers(fuse_get_session(f));
    }
    fuse_unmount(f);
    fuse_destroy(f);
    return ret;
}
