/* SPDX-License-Identifier: GPL-2.0-or-later */
/* act/fsfix.c: give back the space a deleted-but-open file holds (issue #20). */
#include "act/act.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "source/fdmap.h"
#include "util.h"

#define COPY_CHUNK (1u << 20)

bool fsfix_is_target(const struct stat *st, dev_t dev, ino_t ino)
{
    return S_ISREG(st->st_mode) && st->st_dev == dev && st->st_ino == ino && st->st_nlink == 0;
}

static void fdpath(char *buf, size_t n, const char *proc_root, pid_t pid, int fd)
{
    snprintf(buf, n, "%s/%d/fd/%d", proc_root ? proc_root : "/proc", (int)pid, fd);
}

static bool avail_of(const char *mount, uint64_t *out)
{
    struct statvfs st;
    if (!mount || statvfs(mount, &st) != 0)
        return false;
    *out = (uint64_t)st.f_bavail * (st.f_frsize ? st.f_frsize : st.f_bsize);
    return true;
}

/* The holder's open flags, from its fdinfo: 0 or -1 unknown. */
static int holder_flags(const char *proc_root, pid_t pid, int fd, unsigned *flags)
{
    char path[96], buf[256];
    snprintf(path, sizeof(path), "%s/%d/fdinfo/%d", proc_root ? proc_root : "/proc", (int)pid, fd);
    ssize_t n = read_file_at(AT_FDCWD, path, buf, sizeof(buf));
    if (n <= 0 || fdinfo_parse_flags(buf, (size_t)n, flags))
        return -1;
    return 0;
}

static int fail(struct fsfix_outcome *out, int err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int fail(struct fsfix_outcome *out, int err, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(out->msg, sizeof(out->msg), fmt, ap);
    va_end(ap);
    return out->err = err;
}

/* Same process (start time), and its fd still the target. */
static int check_target(const char *proc_root, const struct fsfix_target *t, struct fsfix_outcome *out)
{
    if (t->start_ticks) {
        unsigned long long st;
        int rc = prio_start_ticks(proc_root, t->pid, &st);
        if (rc)
            return fail(out, rc == -ENOENT ? -ESRCH : rc, "process %d: %s", (int)t->pid,
                        rc == -ENOENT ? "exited" : strerror(-rc));
        if (st != t->start_ticks)
            return fail(out, -ESTALE, "pid %d is another process now: nothing done", (int)t->pid);
    }
    char path[96];
    fdpath(path, sizeof(path), proc_root, t->pid, t->fd);
    struct stat st;
    if (stat(path, &st) != 0) {
        int e = errno;
        return fail(out, e == ENOENT ? -ESTALE : -e, "fd %d of process %d: %s: nothing done",
                    t->fd, (int)t->pid, e == ENOENT ? "closed since" : strerror(e));
    }
    if (!fsfix_is_target(&st, t->dev, t->ino))
        return fail(out, -ESTALE, "fd %d of process %d is no longer that deleted file: nothing done",
                    t->fd, (int)t->pid);
    out->size_before = (uint64_t)st.st_size;
    out->blocks_before = (uint64_t)st.st_blocks * 512;
    return 0;
}

static void begin(const char *proc_root, const struct fsfix_target *t, struct fsfix_outcome *out)
{
    memset(out, 0, sizeof(*out));
    unsigned flags;
    bool known = holder_flags(proc_root, t->pid, t->fd, &flags) == 0;
    out->append = known ? (flags & O_APPEND) != 0 : -1;
    /* a reader has no offset to write on at: no sparse file comes of it */
    out->writes = known ? (flags & O_ACCMODE) != O_RDONLY : -1;
}

/* The space after, and the file as the holder's fd shows it then (the figure that says
 * whether the space came back with the size or without it: a sparse file). */
static void measure_after(const char *proc_root, const struct fsfix_target *t, struct fsfix_outcome *out,
                          bool had_before)
{
    out->space_known = had_before && avail_of(t->mount, &out->avail_after);
    if (out->space_known)
        out->freed = (int64_t)out->avail_after - (int64_t)out->avail_before;
    char path[96];
    fdpath(path, sizeof(path), proc_root, t->pid, t->fd);
    struct stat st;
    out->after_known = stat(path, &st) == 0 && fsfix_is_target(&st, t->dev, t->ino);
    if (out->after_known) {
        out->size_after = (uint64_t)st.st_size;
        out->blocks_after = (uint64_t)st.st_blocks * 512;
    }
}

/* Bytes for a message: "12.0 KiB", "40.0 MiB". */
static const char *human(char buf[32], double v)
{
    static const char *const unit[] = { "B", "KiB", "MiB", "GiB", "TiB" };
    unsigned u = 0;
    double a = v < 0 ? -v : v;
    while (a >= 1024.0 && u < 4) {
        a /= 1024.0;
        v /= 1024.0;
        u++;
    }
    snprintf(buf, 32, u ? "%.1f %s" : "%.0f %s", v, unit[u]);
    return buf;
}

static void sleep_s(double s)
{
    struct timespec ts = { (time_t)s, (long)((s - (double)(time_t)s) * 1e9) };
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

int fsfix_signal(const char *proc_root, const struct fsfix_target *t, int sig, double wait_s,
                 struct fsfix_outcome *out)
{
    begin(proc_root, t, out);
    if (act_read_only())
        return fail(out, -EROFS, "read-only mode: no signal sent");
    if (sig <= 0 || sig >= NSIG)
        return fail(out, -EINVAL, "signal %d does not exist", sig);
    if (check_target(proc_root, t, out))
        return out->err;
    bool had = avail_of(t->mount, &out->avail_before);
    if (kill(t->pid, sig) != 0)
        return fail(out, -errno, "kill(%d, %s): %s", (int)t->pid, sigabbrev_np(sig) ? sigabbrev_np(sig) : "?",
                    strerror(errno));
    /* The holder reopens (or exits) in its own time: watch its fd, without holding the
     * file ourselves (that would keep the space). */
    char path[96];
    fdpath(path, sizeof(path), proc_root, t->pid, t->fd);
    for (double waited = 0;; waited += 0.05) {
        struct stat st;
        if (stat(path, &st) != 0 || !fsfix_is_target(&st, t->dev, t->ino)) {
            out->released = true;
            break;
        }
        if (waited >= wait_s)
            break;
        sleep_s(0.05);
    }
    /* The fd table changes before the old file's last close has run (the kernel finishes
     * it on the holder's way back to user space) and before the filesystem has freed its
     * blocks: the space can lag the release by moments. Give it up to 0.5 s to show. */
    uint64_t now;
    for (int k = 0; out->released && had && k < 10; k++) {
        if (avail_of(t->mount, &now) && now >= out->avail_before + out->blocks_before / 2)
            break;
        sleep_s(0.05);
    }
    measure_after(proc_root, t, out, had);
    const char *name = sigabbrev_np(sig) ? sigabbrev_np(sig) : "?";
    char hb[32];
    if (!out->released)
        snprintf(out->msg, sizeof(out->msg),
                 "SIG%s sent to %d; after %.1f s its fd %d still holds the file: it may not reopen on "
                 "that signal", name, (int)t->pid, wait_s, t->fd);
    else if (out->space_known)
        snprintf(out->msg, sizeof(out->msg), "SIG%s sent to %d; it let go of the file; %s came back on %s",
                 name, (int)t->pid, human(hb, (double)out->freed), t->mount);
    else
        snprintf(out->msg, sizeof(out->msg), "SIG%s sent to %d; it let go of the file", name, (int)t->pid);
    return 0;
}

/* Copy src (an open fd at offset 0) to a new file at dst. Returns 0 or -errno; on failure
 * the new file is removed. */
static int copy_out(int src, const char *dst, uint64_t *copied)
{
    int out = open(dst, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (out < 0)
        return -errno;
    int err = 0;
    char *buf = NULL;
    for (;;) {
        ssize_t n = copy_file_range(src, NULL, out, NULL, COPY_CHUNK, 0);
        if (n < 0 && (errno == EXDEV || errno == EINVAL || errno == ENOSYS || errno == EOPNOTSUPP)) {
            /* Fall back to read/write (older kernels, some filesystem pairs). */
            if (!buf)
                buf = xmalloc(COPY_CHUNK);
            n = read(src, buf, COPY_CHUNK);
            for (ssize_t off = 0; n > 0 && off < n;) {
                ssize_t w = write(out, buf + off, (size_t)(n - off));
                if (w < 0) {
                    if (errno == EINTR)
                        continue;
                    n = -1;
                    break;
                }
                off += w;
            }
        }
        if (n < 0) {
            if (errno == EINTR)
                continue;
            err = -errno;
            break;
        }
        if (n == 0)
            break;
        *copied += (uint64_t)n;
    }
    free(buf);
    if (!err && fsync(out) != 0)
        err = -errno;
    if (close(out) != 0 && !err)
        err = -errno;
    if (err)
        unlink(dst);
    return err;
}

int fsfix_truncate(const char *proc_root, const struct fsfix_target *t, const char *copy_to,
                   struct fsfix_outcome *out)
{
    begin(proc_root, t, out);
    if (act_read_only())
        return fail(out, -EROFS, "read-only mode: nothing truncated");
    if (check_target(proc_root, t, out))
        return out->err;
    char path[96];
    fdpath(path, sizeof(path), proc_root, t->pid, t->fd);
    /* What the open gives is checked again: the fd may have changed since the stat. */
    int fd = open(path, O_WRONLY | O_CLOEXEC | O_NOCTTY);
    if (fd < 0)
        return fail(out, -errno, "open %s for writing: %s: nothing done", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0 || !fsfix_is_target(&st, t->dev, t->ino)) {
        close(fd);
        return fail(out, -ESTALE, "fd %d of process %d changed while opening it: nothing done",
                    t->fd, (int)t->pid);
    }
    if (copy_to && *copy_to) {
        int rfd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        struct stat rst;
        int rc = rfd < 0 ? -errno : fstat(rfd, &rst) != 0 ? -errno
                                   : !fsfix_is_target(&rst, t->dev, t->ino) ? -ESTALE : 0;
        if (!rc)
            rc = copy_out(rfd, copy_to, &out->copied);
        if (rfd >= 0)
            close(rfd);
        if (rc) {
            close(fd);
            return fail(out, rc, "copy to %s failed: %s: nothing truncated", copy_to,
                        rc == -EEXIST ? "it exists (not overwritten)" : strerror(-rc));
        }
    }
    bool had = avail_of(t->mount, &out->avail_before);
    if (ftruncate(fd, 0) != 0) {
        int e = errno;
        close(fd);
        return fail(out, -e, "ftruncate: %s", strerror(e));
    }
    close(fd);
    measure_after(proc_root, t, out, had);
    char copied[PATH_MAX + 64] = "", hb[32];
    if (copy_to && *copy_to)
        snprintf(copied, sizeof(copied), " (copied %s to %s first)", human(hb, (double)out->copied),
                 copy_to);
    char space[96] = "";
    if (out->space_known)
        snprintf(space, sizeof(space), "; %s came back", human(hb, (double)out->freed));
    snprintf(out->msg, sizeof(out->msg), "truncated fd %d of %d to 0%s%s%s", t->fd, (int)t->pid,
             copied, space,
             out->append == 0 && out->writes != 0 ? "; it does not append: it writes on at its old offset, the file "
                                "turns sparse at its old size"
                              : "");
    return 0;
}
