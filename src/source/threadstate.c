/* SPDX-License-Identifier: GPL-2.0-or-later */
/* source/threadstate.c: threads' state and wait channel, sampled (source/threadstate.h). */
#include "source/threadstate.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <sys/resource.h>
#include <unistd.h>

#include "util.h"

char taskstate_parse_state(const char *buf, size_t len)
{
    /* The command may hold ')' and spaces: the state follows the last ')'. */
    size_t i = len;
    while (i > 0 && buf[i - 1] != ')')
        i--;
    if (i == 0 || i + 1 >= len || buf[i] != ' ')
        return 0;
    char c = buf[i + 1];
    return c >= 'A' && c <= 'z' ? c : 0;
}

/* The kernel's waits for block I/O as /proc/.../wchan names them: the function that
 * called io_schedule (directly, or through bit_wait_io or wait_for_completion_io), since
 * scheduler functions are skipped. Older names are kept for older kernels (pages before
 * folios, the old direct I/O path). Lock waits on a page or a buffer count: the kernel
 * counts them as iowait too (they sleep in io_schedule), and they wait for the read that
 * holds the lock. */
static const char *const io_waits[] = {
    /* direct I/O */
    "__blkdev_direct_IO_simple", "__blkdev_direct_IO", "__blkdev_direct_IO_async",
    "blkdev_direct_IO", "__iomap_dio_rw", "iomap_dio_rw", "__blockdev_direct_IO",
    "do_blockdev_direct_IO", "dio_await_one", "blk_io_schedule",
    /* the page cache: reads, writeback, page locks */
    "folio_wait_bit_common", "folio_wait_bit", "folio_wait_bit_killable", "__folio_lock",
    "__folio_lock_killable", "__folio_lock_or_retry", "folio_wait_writeback",
    "folio_wait_stable", "wait_on_page_bit_common", "wait_on_page_bit", "__lock_page",
    "__lock_page_killable", "wait_on_page_writeback", "__filemap_fdatawait_range",
    "balance_dirty_pages",
    /* buffer heads, bit waits */
    "__wait_on_buffer", "__lock_buffer", "__wait_on_bit", "__wait_on_bit_lock",
    "out_of_line_wait_on_bit", "out_of_line_wait_on_bit_lock", "bit_wait_io",
    /* the block layer: tags, throttling, synchronous bios */
    "blk_mq_get_tag", "rq_qos_wait", "wbt_wait", "__rq_qos_throttle", "submit_bio_wait",
    "blk_execute_rq", "wait_for_completion_io", "wait_for_completion_io_timeout",
    "io_schedule", "io_schedule_timeout",
    /* a journal commit: the write of the journal */
    "jbd2_log_wait_commit",
};

bool taskstate_wchan_is_io(const char *name, size_t len)
{
    while (len > 0 && (name[len - 1] == '\n' || name[len - 1] == ' '))
        len--;
    /* A compiler-made copy keeps its function's name before a '.': "f.constprop.0". */
    const char *dot = memchr(name, '.', len);
    if (dot && dot != name)
        len = (size_t)(dot - name);
    for (size_t i = 0; i < ARRAY_SIZE(io_waits); i++)
        if (strlen(io_waits[i]) == len && memcmp(io_waits[i], name, len) == 0)
            return true;
    return false;
}

/* io_uring's wait for completions (io_uring/io_uring.c; io_uring/wait.c in later trees):
 * an interruptible sleep (S) that the kernel counts as iowait, and so in PSI io, while
 * the task has any request pending, a socket receive included (6.1.39 and 6.5 on). The
 * name is the function that called schedule: io_cqring_wait on 6.18, where
 * io_cqring_wait_schedule is inlined into it; the others where it is not. */
static const char *const uring_waits[] = {
    "io_cqring_wait", "io_cqring_wait_schedule", "__io_cqring_wait_schedule",
    "io_cqring_schedule_timeout",
};

/* libaio's wait for completions (fs/aio.c): io_getevents sleeps interruptibly in
 * read_events (wait_event_interruptible_hrtimeout), not in iowait: nothing in PSI io, nor
 * in the blkio delay. read_events on 6.18 and 6.1; do_io_getevents where it is inlined. */
static const char *const aio_waits[] = { "read_events", "do_io_getevents" };

/* Is name (a wait channel, trailing newline and a .isra/.constprop suffix allowed) one of
 * the n names in list? */
static bool wchan_in(const char *name, size_t len, const char *const *list, size_t n)
{
    while (len > 0 && (name[len - 1] == '\n' || name[len - 1] == ' '))
        len--;
    const char *dot = memchr(name, '.', len);
    if (dot && dot != name)
        len = (size_t)(dot - name);
    for (size_t i = 0; i < n; i++)
        if (strlen(list[i]) == len && memcmp(list[i], name, len) == 0)
            return true;
    return false;
}

bool taskstate_wchan_is_uring(const char *name, size_t len)
{
    return wchan_in(name, len, uring_waits, ARRAY_SIZE(uring_waits));
}

bool taskstate_wchan_is_aio(const char *name, size_t len)
{
    return wchan_in(name, len, aio_waits, ARRAY_SIZE(aio_waits));
}

enum ts_class taskstate_classify(char state, const char *wchan, size_t wlen)
{
    if (state != 'D')
        return TS_NOT_WAITING;
    while (wchan && wlen > 0 && (wchan[wlen - 1] == '\n' || wchan[wlen - 1] == ' '))
        wlen--;
    /* No name: hidden from us, or the thread woke between the two reads. */
    if (!wchan || wlen == 0 || (wlen == 1 && wchan[0] == '0'))
        return TS_IO_WAIT;
    return taskstate_wchan_is_io(wchan, wlen) ? TS_IO_WAIT : TS_OTHER_WAIT;
}

/* ---- counts ---- */

void ts_counts_free(struct ts_counts *c)
{
    free(c->t);
    free(c->p);
    memset(c, 0, sizeof(*c));
}

void ts_counts_clear(struct ts_counts *c)
{
    c->nt = c->np = 0;
    c->rounds = 0;
    c->reads = 0;
}

static struct ts_thread_count *thread_of(struct ts_counts *c, pid_t tid, pid_t tgid)
{
    for (size_t i = 0; i < c->nt; i++)
        if (c->t[i].tid == tid)
            return &c->t[i];
    if (c->nt == c->capt) {
        c->capt = c->capt ? c->capt * 2 : 32;
        c->t = xreallocarray(c->t, c->capt, sizeof(*c->t));
    }
    struct ts_thread_count *n = &c->t[c->nt++];
    *n = (struct ts_thread_count){ .tid = tid, .tgid = tgid };
    return n;
}

static struct ts_proc_count *proc_of(struct ts_counts *c, pid_t tgid)
{
    for (size_t i = 0; i < c->np; i++)
        if (c->p[i].tgid == tgid)
            return &c->p[i];
    if (c->np == c->capp) {
        c->capp = c->capp ? c->capp * 2 : 16;
        c->p = xreallocarray(c->p, c->capp, sizeof(*c->p));
    }
    struct ts_proc_count *n = &c->p[c->np++];
    *n = (struct ts_proc_count){ .tgid = tgid };
    return n;
}

void ts_counts_add(struct ts_counts *c, pid_t tid, pid_t tgid, enum ts_class cls)
{
    struct ts_thread_count *t = thread_of(c, tid, tgid);
    if (cls == TS_IO_WAIT)
        t->io++;
    if (cls != TS_NOT_WAITING)
        t->dstate++;
}

void ts_counts_round(struct ts_counts *c, pid_t tgid)
{
    proc_of(c, tgid)->rounds++;
}

void ts_counts_merge(struct ts_counts *dst, const struct ts_counts *src)
{
    for (size_t i = 0; i < src->nt; i++) {
        struct ts_thread_count *t = thread_of(dst, src->t[i].tid, src->t[i].tgid);
        t->io += src->t[i].io;
        t->dstate += src->t[i].dstate;
    }
    for (size_t i = 0; i < src->np; i++)
        proc_of(dst, src->p[i].tgid)->rounds += src->p[i].rounds;
    dst->rounds += src->rounds;
    dst->reads += src->reads;
}

double ts_counts_share(const struct ts_counts *c, pid_t tid, pid_t tgid)
{
    /* A thread's process is the one it was counted under. */
    if (tid) {
        tgid = 0;
        for (size_t i = 0; i < c->nt && !tgid; i++)
            if (c->t[i].tid == tid)
                tgid = c->t[i].tgid;
        if (!tgid)
            return (double)NAN;
    }
    unsigned rounds = 0;
    for (size_t i = 0; i < c->np; i++)
        if (c->p[i].tgid == tgid)
            rounds = c->p[i].rounds;
    if (rounds < TS_MIN_ROUNDS)
        return (double)NAN;
    double io = 0;
    for (size_t i = 0; i < c->nt; i++)
        if (tid ? c->t[i].tid == tid : c->t[i].tgid == tgid)
            io += c->t[i].io;
    return 100.0 * io / rounds;
}

bool ts_counts_saw_d(const struct ts_counts *c, pid_t tgid)
{
    for (size_t i = 0; i < c->nt; i++)
        if (c->t[i].tgid == tgid && c->t[i].dstate > 0)
            return true;
    return false;
}

/* ---- the reader ---- */

/* A thread whose files stay open between rounds: a pread of an open /proc file makes
 * the kernel print it afresh, one system call instead of a path walk, open, read and
 * close (bench/tscost: about a third of the cost). */
struct ts_thread_fds {
    pid_t tid, tgid;
    int   stat_fd, wchan_fd;         /* -1: not open */
    bool  listed;                    /* seen in the last listing of its process */
};

struct taskstate {
    int proc_fd;
    struct ts_thread_fds *v;         /* at most files_max / 2 threads */
    size_t n;
    size_t files_max;
    unsigned round;
    struct ts_thread_fds extra[TS_READS_MAX];   /* threads read the long way this round */
};

int taskstate_open(struct taskstate **out, const char *proc_root)
{
    int fd = open(proc_root ? proc_root : "/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    struct taskstate *ts = xcalloc(1, sizeof(*ts));
    ts->proc_fd = fd;
    /* The fd table is shared with the devices' and the cgroups' open files (snapshot.c,
     * cgroups.c): take at most an eighth of its soft limit. */
    ts->files_max = TS_FILES_MAX;
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur / 8 < ts->files_max)
        ts->files_max = (size_t)(rl.rlim_cur / 8);
    ts->v = xcalloc(ts->files_max / 2 + 1, sizeof(*ts->v));
    *out = ts;
    return 0;
}

static void fds_close(struct ts_thread_fds *t)
{
    if (t->stat_fd >= 0)
        close(t->stat_fd);
    if (t->wchan_fd >= 0)
        close(t->wchan_fd);
    t->stat_fd = t->wchan_fd = -1;
}

void taskstate_close(struct taskstate *ts)
{
    if (!ts)
        return;
    for (size_t i = 0; i < ts->n; i++)
        fds_close(&ts->v[i]);
    free(ts->v);
    close(ts->proc_fd);
    free(ts);
}

size_t taskstate_files(const struct taskstate *ts)
{
    size_t k = 0;
    for (size_t i = 0; i < ts->n; i++)
        k += (ts->v[i].stat_fd >= 0) + (ts->v[i].wchan_fd >= 0);
    return k;
}

/* Read one of a thread's files into buf: through its open fd (opened now if it has
 * none and keep is set), else open, read, close. Its length, or -1 (the thread exited). */
static ssize_t read_file(int proc_fd, pid_t tgid, pid_t tid, const char *name, int *fd, bool keep,
                         char *buf, size_t len)
{
    if (*fd < 0) {
        char path[80];
        snprintf(path, sizeof(path), "%d/task/%d/%s", (int)tgid, (int)tid, name);
        int f = openat(proc_fd, path, O_RDONLY | O_CLOEXEC);
        if (f < 0)
            return -1;
        if (!keep) {
            ssize_t n = read(f, buf, len);
            close(f);
            return n;
        }
        *fd = f;
    }
    return pread(*fd, buf, len, 0);
}

static void thread_drop(struct taskstate *ts, size_t i)
{
    fds_close(&ts->v[i]);
    ts->v[i] = ts->v[--ts->n];
}

/* List the threads of tgid; the new ones are added while there is room. Returns false
 * when the process is gone (or not ours to see). */
static bool threads_list(struct taskstate *ts, pid_t tgid, struct ts_thread_fds *extra,
                         size_t *nextra, size_t extra_max)
{
    char path[48];
    snprintf(path, sizeof(path), "%d/task", (int)tgid);
    int dfd = openat(ts->proc_fd, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0)
        return false;
    DIR *d = fdopendir(dfd);
    if (!d) {
        close(dfd);
        return false;
    }
    for (size_t i = 0; i < ts->n; i++)
        if (ts->v[i].tgid == tgid)
            ts->v[i].listed = false;
    struct dirent *e;
    while ((e = readdir(d))) {
        char *end;
        long tid = strtol(e->d_name, &end, 10);
        if (*end || tid <= 0 || tid > INT32_MAX)
            continue;
        bool known = false;
        for (size_t i = 0; i < ts->n && !known; i++)
            if (ts->v[i].tid == (pid_t)tid) {
                ts->v[i].listed = true;
                known = true;
            }
        if (known)
            continue;
        struct ts_thread_fds t = { .tid = (pid_t)tid, .tgid = tgid, .stat_fd = -1, .wchan_fd = -1,
                                   .listed = true };
        if (ts->n < ts->files_max / 2)
            ts->v[ts->n++] = t;
        else if (*nextra < extra_max)
            extra[(*nextra)++] = t;   /* no room to keep it open: read it the long way */
    }
    closedir(d);
    for (size_t i = ts->n; i-- > 0;)
        if (ts->v[i].tgid == tgid && !ts->v[i].listed)
            thread_drop(ts, i);
    return true;
}

/* One thread's sample; the files read (0: it exited). */
static unsigned thread_sample(struct taskstate *ts, struct ts_thread_fds *t, bool keep,
                              struct ts_counts *one)
{
    char buf[512], wchan[128];
    ssize_t len = read_file(ts->proc_fd, t->tgid, t->tid, "stat", &t->stat_fd, keep, buf, sizeof(buf));
    if (len <= 0)
        return 0;
    unsigned reads = 1;
    char st = taskstate_parse_state(buf, (size_t)len);
    if (!st)
        return reads;
    ssize_t wl = -1;
    if (st == 'D') {
        wl = read_file(ts->proc_fd, t->tgid, t->tid, "wchan", &t->wchan_fd, keep, wchan, sizeof(wchan));
        reads++;
    }
    ts_counts_add(one, t->tid, t->tgid, taskstate_classify(st, wl > 0 ? wchan : NULL, wl > 0 ? (size_t)wl : 0));
    return reads;
}

static bool in_targets(const pid_t *tgids, size_t n, pid_t tgid)
{
    for (size_t i = 0; i < n; i++)
        if (tgids[i] == tgid)
            return true;
    return false;
}

unsigned taskstate_sample(struct taskstate *ts, const pid_t *tgids, size_t n, size_t start,
                          struct ts_counts *acc)
{
    unsigned reads = 0;
    acc->rounds++;
    /* Processes no longer sampled give their files back. */
    for (size_t i = ts->n; i-- > 0;)
        if (!in_targets(tgids, n, ts->v[i].tgid))
            thread_drop(ts, i);
    bool relist = ts->round++ % TS_RELIST_ROUNDS == 0;
    struct ts_thread_fds *extra = ts->extra;
    for (size_t k = 0; k < n && reads < TS_READS_MAX; k++) {
        pid_t tgid = tgids[(start + k) % n];
        size_t nextra = 0;
        bool have = false;
        for (size_t i = 0; i < ts->n && !have; i++)
            have = ts->v[i].tgid == tgid;
        /* Its threads are listed again every TS_RELIST_ROUNDS rounds (a new thread is
         * sampled from the next listing), and whenever none is known: the first round,
         * or threads kept the long way for want of room. */
        if (relist || !have) {
            reads++;
            if (!threads_list(ts, tgid, extra, &nextra, ARRAY_SIZE(ts->extra)))
                continue;            /* gone, or not ours to see */
        }
        /* A process whose threads the budget cuts short is not counted for this round:
         * a share over the threads that were read would be too low. */
        struct ts_counts one = { 0 };
        bool cut = false;
        for (size_t i = 0; i < ts->n; i++) {
            if (ts->v[i].tgid != tgid)
                continue;
            if (reads + 2 > TS_READS_MAX) {
                cut = true;
                break;
            }
            unsigned r = thread_sample(ts, &ts->v[i], true, &one);
            if (r == 0) {
                thread_drop(ts, i--);    /* it exited */
                continue;
            }
            reads += r;
        }
        for (size_t i = 0; i < nextra && !cut; i++) {
            if (reads + 2 > TS_READS_MAX) {
                cut = true;
                break;
            }
            reads += thread_sample(ts, &extra[i], false, &one);
        }
        if (!cut) {
            ts_counts_round(&one, tgid);
            one.rounds = 0;
            ts_counts_merge(acc, &one);
        }
        ts_counts_free(&one);
    }
    acc->reads += reads;
    return reads;
}
