/* SPDX-License-Identifier: GPL-2.0-or-later */
/* tests/fault/fault.c: fault injection for tests, as an LD_PRELOAD library.
 *
 * The program under test runs unchanged; this library sits in front of the C library's
 * system-call wrappers and makes chosen calls fail the way a sick machine makes them
 * fail: EIO or EINTR or a short count from a read of /proc or /sys, EACCES from an open,
 * ENOSPC from a write to stdout, an error from netlink's sendmsg/recvmsg/recvmmsg, an
 * error from one command of the bpf system call.
 *
 *   LD_PRELOAD=build/tests/fault.so IOTRIAGE_FAULT='RULE;RULE;...' iotriage ...
 *
 * A rule is OP followed by :key=value fields:
 *   OP      open (open, openat, fopen and their 64 forms), read (read, pread, readv),
 *           write (write, writev, pwrite, and the stdio calls fwrite, fputs, fputc, putc,
 *           fprintf, vfprintf, fflush, fclose on a stream of that fd), sendmsg, recvmsg,
 *           recvmmsg (taskstats' replies, taken a batch at a time), bpf (syscall(SYS_bpf, ...), as libbpf and the light skeletons call it).
 *   path=GLOB  the file's path matches (fnmatch, FNM_PATHNAME off: * crosses /). For
 *              read and write it is the path the fd was opened with (as the kernel names
 *              it: /proc/self/fd/N at open time, so /sys/class/block/X resolves to
 *              /sys/devices/...); for open the absolute path asked for.
 *   fd=N       the call is on fd N (write: also a stdio stream on fd N).
 *   cmd=N      bpf: the command is N (enum bpf_cmd: 5 BPF_PROG_LOAD, 10 BPF_PROG_RUN...).
 *   after=N    the first N matching calls pass (default 0).
 *   count=N    fail at most N times (default: every matching call after `after`).
 *   bytes=N    write: N bytes pass in all, then every write fails (a disk filling up).
 *   errno=E    the error: a name (EIO, EINTR, EACCES, ENOSPC, ENOENT, EPERM, EAGAIN,
 *              ENOBUFS, ECONNREFUSED, EBADF, EINVAL, ENOMEM, EFAULT, EPIPE, ESRCH) or a
 *              number.
 *   short=N    read/write: the call happens but moves at most N bytes (a short count;
 *              no errno). With errno= as well, errno wins.
 *
 * Every injection is appended to the file named by IOTRIAGE_FAULT_LOG (one line: the
 * rule's index, the call, the path or fd, what was injected), so a test can check that
 * its fault was really met. A rule that cannot be parsed aborts the program at start:
 * a test must not pass because its fault silently did nothing.
 *
 * Not caught: calls the C library makes internally (stdio's own flush of a full buffer
 * goes to the kernel without the exported write(); the stdio wrappers above stand in
 * for it), and raw syscall(2). Only for tests: never linked into iotriage.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

enum op { OP_OPEN, OP_READ, OP_WRITE, OP_SENDMSG, OP_RECVMSG, OP_RECVMMSG, OP_BPF };
static const char *const op_names[] = { "open", "read", "write", "sendmsg", "recvmsg", "recvmmsg", "bpf" };

struct rule {
    enum op op;
    char path[256];                  /* "" any */
    int fd;                          /* -1 any; bpf: the command */
    long after, count, bytes;        /* count, bytes -1: no limit */
    int err;                         /* 0 none */
    long shortn;                     /* -1 none */
    long seen, failed, written;
};

#define MAX_RULES 16
#define MAX_FDS 65536
static struct rule rules[MAX_RULES];
static int nrules;
static char *fd_path[MAX_FDS];       /* the path each fd was opened with */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int log_fd = -1;
static __thread int inside;          /* our own calls are not faulted */

static const struct { const char *name; int val; } errnos[] = {
    { "EIO", EIO }, { "EINTR", EINTR }, { "EACCES", EACCES }, { "ENOSPC", ENOSPC },
    { "ENOENT", ENOENT }, { "EPERM", EPERM }, { "EAGAIN", EAGAIN }, { "ENOBUFS", ENOBUFS },
    { "ECONNREFUSED", ECONNREFUSED }, { "EBADF", EBADF }, { "EINVAL", EINVAL },
    { "ENOMEM", ENOMEM }, { "EFAULT", EFAULT }, { "EPIPE", EPIPE }, { "ESRCH", ESRCH },
};

/* ---- the real functions ---- */

#define REAL(name) static __typeof__(name) *real_##name
REAL(open); REAL(open64); REAL(openat); REAL(openat64); REAL(fopen); REAL(fopen64);
REAL(read); REAL(pread); REAL(pread64); REAL(readv);
REAL(write); REAL(writev); REAL(pwrite); REAL(pwrite64);
REAL(fwrite); REAL(fputs); REAL(fputc); REAL(putc); REAL(vfprintf); REAL(fflush); REAL(fclose);
REAL(close); REAL(sendmsg); REAL(recvmsg); REAL(recvmmsg); REAL(syscall);

static void die(const char *what, const char *s)
{
    char msg[512];
    int n = snprintf(msg, sizeof(msg), "fault.so: %s: %s\n", what, s);
    if (real_write)
        real_write(2, msg, (size_t)n);
    abort();
}

static void parse_rule(char *text)
{
    if (nrules >= MAX_RULES)
        die("too many rules (16 at most)", text);
    struct rule *r = &rules[nrules];
    memset(r, 0, sizeof(*r));
    r->fd = -1;
    r->count = r->bytes = r->shortn = -1;
    char *save = NULL;
    char *tok = strtok_r(text, ":", &save);
    int op = -1;
    for (int i = 0; tok && i < (int)(sizeof(op_names) / sizeof(op_names[0])); i++)
        if (strcmp(tok, op_names[i]) == 0)
            op = i;
    if (op < 0)
        die("unknown operation (open read write sendmsg recvmsg recvmmsg bpf)", tok ? tok : "");
    r->op = (enum op)op;
    while ((tok = strtok_r(NULL, ":", &save))) {
        char *eq = strchr(tok, '=');
        if (!eq)
            die("field without '='", tok);
        *eq = '\0';
        const char *k = tok, *v = eq + 1;
        char *end;
        long n = strtol(v, &end, 10);
        bool num = *v && !*end && n >= 0;
        if (strcmp(k, "path") == 0) {
            if (strlen(v) >= sizeof(r->path))
                die("path too long", v);
            strcpy(r->path, v);
        } else if (strcmp(k, "errno") == 0) {
            for (size_t i = 0; i < sizeof(errnos) / sizeof(errnos[0]); i++)
                if (strcmp(v, errnos[i].name) == 0)
                    r->err = errnos[i].val;
            if (!r->err && num && n > 0)
                r->err = (int)n;
            if (!r->err)
                die("unknown errno", v);
        } else if (num && (strcmp(k, "fd") == 0 || (op == OP_BPF && strcmp(k, "cmd") == 0))) {
            r->fd = (int)n;
        } else if (num && strcmp(k, "after") == 0) {
            r->after = n;
        } else if (num && strcmp(k, "count") == 0) {
            r->count = n;
        } else if (num && strcmp(k, "bytes") == 0) {
            r->bytes = n;
        } else if (num && strcmp(k, "short") == 0) {
            r->shortn = n;
        } else {
            die("unknown field or bad number", k);
        }
    }
    if (!r->err && r->shortn < 0 && r->bytes < 0)
        die("a rule needs errno=, short= or bytes=", op_names[r->op]);
    if (r->bytes >= 0 && !r->err)
        r->err = ENOSPC;
    nrules++;
}

#define LOAD(name) real_##name = (__typeof__(real_##name))dlsym(RTLD_NEXT, #name)

__attribute__((constructor)) static void fault_init(void)
{
    LOAD(open); LOAD(open64); LOAD(openat); LOAD(openat64); LOAD(fopen); LOAD(fopen64);
    LOAD(read); LOAD(pread); LOAD(pread64); LOAD(readv);
    LOAD(write); LOAD(writev); LOAD(pwrite); LOAD(pwrite64);
    LOAD(fwrite); LOAD(fputs); LOAD(fputc); LOAD(putc); LOAD(vfprintf); LOAD(fflush); LOAD(fclose);
    LOAD(close); LOAD(sendmsg); LOAD(recvmsg); LOAD(recvmmsg); LOAD(syscall);
    const char *spec = getenv("IOTRIAGE_FAULT");
    if (spec && *spec) {
        char *copy = strdup(spec), *save = NULL;
        for (char *r = strtok_r(copy, ";", &save); r; r = strtok_r(NULL, ";", &save))
            if (*r)
                parse_rule(r);
        /* the rules' fields point into their own arrays: copy may go */
        free(copy);
    }
    const char *log = getenv("IOTRIAGE_FAULT_LOG");
    if (log && *log) {
        log_fd = real_open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
        if (log_fd < 0)
            die("cannot open IOTRIAGE_FAULT_LOG", log);
    }
}

/* ---- matching ---- */

static void remember(int fd, const char *asked)
{
    if (fd < 0 || fd >= MAX_FDS || nrules == 0)
        return;
    char link[64], buf[PATH_MAX];
    snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, buf, sizeof(buf) - 1);
    const char *p = asked;
    if (n > 0) {
        buf[n] = '\0';
        p = buf;
    }
    pthread_mutex_lock(&lock);
    free(fd_path[fd]);
    fd_path[fd] = p ? strdup(p) : NULL;
    pthread_mutex_unlock(&lock);
}

static void forget(int fd)
{
    if (fd < 0 || fd >= MAX_FDS)
        return;
    pthread_mutex_lock(&lock);
    free(fd_path[fd]);
    fd_path[fd] = NULL;
    pthread_mutex_unlock(&lock);
}

static void log_hit(int idx, const char *call, const char *where, const char *what)
{
    if (log_fd < 0)
        return;
    char line[600];
    int n = snprintf(line, sizeof(line), "%d %s %s %s\n", idx, call, where, what);
    if (n > (int)sizeof(line) - 1)
        n = (int)sizeof(line) - 1;
    real_write(log_fd, line, (size_t)n);
}

/* The outcome of one call: 0 pass; -1 fail with *err; 1 pass but cap the count at *cap. */
struct verdict { int act; int err; size_t cap; };

/* len: the bytes the call would move (writes: counted against bytes=). */
static struct verdict decide(enum op op, const char *call, int fd, const char *path, size_t len)
{
    struct verdict v = { 0, 0, 0 };
    if (inside || nrules == 0)
        return v;
    char fdbuf[24];
    pthread_mutex_lock(&lock);
    if (!path && fd >= 0 && fd < MAX_FDS)
        path = fd_path[fd];
    for (int i = 0; i < nrules && v.act == 0; i++) {
        struct rule *r = &rules[i];
        if (r->op != op || (r->fd >= 0 && r->fd != fd))
            continue;
        if (r->path[0] && (!path || fnmatch(r->path, path, 0) != 0))
            continue;
        if (r->seen++ < r->after)
            continue;
        if (r->count >= 0 && r->failed >= r->count)
            continue;
        const char *where = path ? path
                                 : (snprintf(fdbuf, sizeof(fdbuf), "%s=%d", op == OP_BPF ? "cmd" : "fd", fd), fdbuf);
        if (r->bytes >= 0) {
            if (r->written + (long)len <= r->bytes) {
                r->written += (long)len;
                continue;
            }
            /* what still fits goes through (a short write), then the error */
            long room = r->bytes - r->written;
            r->failed++;
            if (room > 0) {
                r->written = r->bytes;
                v = (struct verdict){ 1, 0, (size_t)room };
                log_hit(i, call, where, "short (disk full)");
            } else {
                v = (struct verdict){ -1, r->err, 0 };
                log_hit(i, call, where, strerrorname_np(r->err));
            }
            break;
        }
        r->failed++;
        if (r->err) {
            v = (struct verdict){ -1, r->err, 0 };
            log_hit(i, call, where, strerrorname_np(r->err));
        } else {
            v = (struct verdict){ 1, 0, (size_t)r->shortn };
            log_hit(i, call, where, "short");
        }
    }
    pthread_mutex_unlock(&lock);
    return v;
}

/* ---- opens ---- */

static char *abs_path(int dirfd, const char *path, char *buf, size_t n)
{
    if (!path)
        return NULL;
    if (path[0] == '/' || dirfd == AT_FDCWD) {
        if (path[0] == '/')
            snprintf(buf, n, "%s", path);
        else if (getcwd(buf, n))
            snprintf(buf + strlen(buf), n - strlen(buf), "/%s", path);
        else
            snprintf(buf, n, "%s", path);
        return buf;
    }
    char link[64], dir[PATH_MAX];
    snprintf(link, sizeof(link), "/proc/self/fd/%d", dirfd);
    ssize_t k = readlink(link, dir, sizeof(dir) - 1);
    if (k <= 0)
        return (char *)(uintptr_t)path;
    dir[k] = '\0';
    snprintf(buf, n, "%s/%s", dir, path);
    return buf;
}

static int open_common(int (*fn)(int, const char *, int, ...), int dirfd, const char *path, int flags, mode_t mode,
                       const char *call)
{
    char buf[PATH_MAX + 64];
    struct verdict v = decide(OP_OPEN, call, -1, nrules ? abs_path(dirfd, path, buf, sizeof(buf)) : NULL, 0);
    if (v.act < 0) {
        errno = v.err;
        return -1;
    }
    int fd = fn(dirfd, path, flags, mode);
    if (fd >= 0)
        remember(fd, path);
    return fd;
}

static int via_open(int dirfd, const char *path, int flags, ...)
{
    va_list ap;
    va_start(ap, flags);
    mode_t m = va_arg(ap, mode_t);
    va_end(ap);
    (void)dirfd;
    return real_open(path, flags, m);
}
static int via_open64(int dirfd, const char *path, int flags, ...)
{
    va_list ap;
    va_start(ap, flags);
    mode_t m = va_arg(ap, mode_t);
    va_end(ap);
    (void)dirfd;
    return real_open64(path, flags, m);
}
static int via_openat(int dirfd, const char *path, int flags, ...)
{
    va_list ap;
    va_start(ap, flags);
    mode_t m = va_arg(ap, mode_t);
    va_end(ap);
    return real_openat(dirfd, path, flags, m);
}
static int via_openat64(int dirfd, const char *path, int flags, ...)
{
    va_list ap;
    va_start(ap, flags);
    mode_t m = va_arg(ap, mode_t);
    va_end(ap);
    return real_openat64(dirfd, path, flags, m);
}

static mode_t mode_arg(int flags, va_list ap)
{
    return (flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE ? va_arg(ap, mode_t) : 0;
}

int open(const char *path, int flags, ...)
{
    va_list ap;
    va_start(ap, flags);
    mode_t m = mode_arg(flags, ap);
    va_end(ap);
    return open_common(via_open, AT_FDCWD, path, flags, m, "open");
}
int open64(const char *path, int flags, ...)
{
    va_list ap;
    va_start(ap, flags);
    mode_t m = mode_arg(flags, ap);
    va_end(ap);
    return open_common(via_open64, AT_FDCWD, path, flags, m, "open64");
}
int openat(int dirfd, const char *path, int flags, ...)
{
    va_list ap;
    va_start(ap, flags);
    mode_t m = mode_arg(flags, ap);
    va_end(ap);
    return open_common(via_openat, dirfd, path, flags, m, "openat");
}
int openat64(int dirfd, const char *path, int flags, ...)
{
    va_list ap;
    va_start(ap, flags);
    mode_t m = mode_arg(flags, ap);
    va_end(ap);
    return open_common(via_openat64, dirfd, path, flags, m, "openat64");
}

static FILE *fopen_common(__typeof__(fopen) *fn, const char *path, const char *mode, const char *call)
{
    char buf[PATH_MAX + 64];
    struct verdict v = decide(OP_OPEN, call, -1, nrules ? abs_path(AT_FDCWD, path, buf, sizeof(buf)) : NULL, 0);
    if (v.act < 0) {
        errno = v.err;
        return NULL;
    }
    FILE *f = fn(path, mode);
    if (f)
        remember(fileno(f), path);
    return f;
}
FILE *fopen(const char *path, const char *mode) { return fopen_common(real_fopen, path, mode, "fopen"); }
FILE *fopen64(const char *path, const char *mode) { return fopen_common(real_fopen64, path, mode, "fopen64"); }

int close(int fd)
{
    forget(fd);
    return real_close(fd);
}

/* ---- reads ---- */

ssize_t read(int fd, void *buf, size_t n)
{
    struct verdict v = decide(OP_READ, "read", fd, NULL, n);
    if (v.act < 0) {
        errno = v.err;
        return -1;
    }
    return real_read(fd, buf, v.act > 0 && v.cap < n ? v.cap : n);
}
ssize_t pread(int fd, void *buf, size_t n, off_t off)
{
    struct verdict v = decide(OP_READ, "pread", fd, NULL, n);
    if (v.act < 0) {
        errno = v.err;
        return -1;
    }
    return real_pread(fd, buf, v.act > 0 && v.cap < n ? v.cap : n, off);
}
ssize_t pread64(int fd, void *buf, size_t n, off64_t off)
{
    struct verdict v = decide(OP_READ, "pread64", fd, NULL, n);
    if (v.act < 0) {
        errno = v.err;
        return -1;
    }
    return real_pread64(fd, buf, v.act > 0 && v.cap < n ? v.cap : n, off);
}
ssize_t readv(int fd, const struct iovec *iov, int cnt)
{
    struct verdict v = decide(OP_READ, "readv", fd, NULL, 0);
    if (v.act < 0) {
        errno = v.err;
        return -1;
    }
    if (v.act > 0 && cnt > 0)
        return real_read(fd, iov[0].iov_base, v.cap < iov[0].iov_len ? v.cap : iov[0].iov_len);
    return real_readv(fd, iov, cnt);
}

/* ---- writes ---- */

ssize_t write(int fd, const void *buf, size_t n)
{
    struct verdict v = decide(OP_WRITE, "write", fd, NULL, n);
    if (v.act < 0) {
        errno = v.err;
        return -1;
    }
    return real_write(fd, buf, v.act > 0 && v.cap < n ? v.cap : n);
}
ssize_t pwrite(int fd, const void *buf, size_t n, off_t off)
{
    struct verdict v = decide(OP_WRITE, "pwrite", fd, NULL, n);
    if (v.act < 0) {
        errno = v.err;
        return -1;
    }
    return real_pwrite(fd, buf, v.act > 0 && v.cap < n ? v.cap : n, off);
}
ssize_t pwrite64(int fd, const void *buf, size_t n, off64_t off)
{
    struct verdict v = decide(OP_WRITE, "pwrite64", fd, NULL, n);
    if (v.act < 0) {
        errno = v.err;
        return -1;
    }
    return real_pwrite64(fd, buf, v.act > 0 && v.cap < n ? v.cap : n, off);
}
ssize_t writev(int fd, const struct iovec *iov, int cnt)
{
    size_t total = 0;
    for (int i = 0; i < cnt; i++)
        total += iov[i].iov_len;
    struct verdict v = decide(OP_WRITE, "writev", fd, NULL, total);
    if (v.act < 0) {
        errno = v.err;
        return -1;
    }
    if (v.act > 0) {                 /* a short writev: the first bytes of the first buffers */
        size_t done = 0;
        for (int i = 0; i < cnt && done < v.cap; i++) {
            size_t k = iov[i].iov_len < v.cap - done ? iov[i].iov_len : v.cap - done;
            ssize_t w = real_write(fd, iov[i].iov_base, k);
            if (w < 0)
                return done ? (ssize_t)done : -1;
            done += (size_t)w;
            if ((size_t)w < k)
                break;
        }
        return (ssize_t)done;
    }
    return real_writev(fd, iov, cnt);
}

/* stdio on a stream whose fd a write rule names: the stream fails as a full disk makes
 * it fail (error flag set, EOF or a short count), since its own flushes are out of
 * reach. A short= rule makes the call write only its first bytes and fail. */
static int stdio_fault(FILE *f, const char *call, size_t len, size_t *cap)
{
    if (inside || nrules == 0 || !f)
        return 0;
    struct verdict v = decide(OP_WRITE, call, fileno(f), NULL, len);
    if (v.act == 0)
        return 0;
    *cap = v.act > 0 ? v.cap : 0;
    f->_flags |= _IO_ERR_SEEN;
    errno = v.act < 0 ? v.err : EIO;
    return 1;
}

size_t fwrite(const void *p, size_t size, size_t n, FILE *f)
{
    size_t cap;
    if (size && stdio_fault(f, "fwrite", size * n, &cap)) {
        inside++;
        size_t k = cap / size < n ? cap / size : n;
        size_t w = k ? real_fwrite(p, size, k, f) : 0;
        inside--;
        return w;
    }
    return real_fwrite(p, size, n, f);
}
int fputs(const char *s, FILE *f)
{
    size_t cap;
    if (stdio_fault(f, "fputs", strlen(s), &cap)) {
        inside++;
        if (cap)
            real_fwrite(s, 1, cap < strlen(s) ? cap : strlen(s), f);
        inside--;
        return EOF;
    }
    return real_fputs(s, f);
}
int fputc(int c, FILE *f)
{
    size_t cap;
    if (stdio_fault(f, "fputc", 1, &cap))
        return cap ? real_fputc(c, f) : EOF;
    return real_fputc(c, f);
}
int putc(int c, FILE *f)
{
    size_t cap;
    if (stdio_fault(f, "putc", 1, &cap))
        return cap ? real_putc(c, f) : EOF;
    return real_putc(c, f);
}
int vfprintf(FILE *f, const char *fmt, va_list ap)
{
    size_t cap;
    va_list aq;
    va_copy(aq, ap);
    int len = vsnprintf(NULL, 0, fmt, aq);
    va_end(aq);
    if (stdio_fault(f, "fprintf", len > 0 ? (size_t)len : 0, &cap)) {
        if (cap && len > 0) {
            char *buf = malloc((size_t)len + 1);
            if (buf) {
                vsnprintf(buf, (size_t)len + 1, fmt, ap);
                inside++;
                real_fwrite(buf, 1, cap < (size_t)len ? cap : (size_t)len, f);
                inside--;
                free(buf);
            }
        }
        return -1;
    }
    return real_vfprintf(f, fmt, ap);
}
int fprintf(FILE *f, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int r = vfprintf(f, fmt, ap);
    va_end(ap);
    return r;
}
int fflush(FILE *f)
{
    size_t cap;
    if (f && stdio_fault(f, "fflush", 0, &cap))
        return EOF;
    return real_fflush(f);
}
int fclose(FILE *f)
{
    size_t cap;
    int fd = f ? fileno(f) : -1;
    bool fail = stdio_fault(f, "fclose", 0, &cap);
    int e = errno;
    int r = real_fclose(f);
    forget(fd);
    if (fail) {
        errno = e;
        return EOF;
    }
    return r;
}

/* ---- netlink (any socket) ---- */

ssize_t sendmsg(int fd, const struct msghdr *m, int flags)
{
    struct verdict v = decide(OP_SENDMSG, "sendmsg", fd, NULL, 0);
    if (v.act < 0) {
        errno = v.err;
        return -1;
    }
    return real_sendmsg(fd, m, flags);
}
ssize_t recvmsg(int fd, struct msghdr *m, int flags)
{
    struct verdict v = decide(OP_RECVMSG, "recvmsg", fd, NULL, 0);
    if (v.act < 0) {
        errno = v.err;
        return -1;
    }
    return real_recvmsg(fd, m, flags);
}
int recvmmsg(int fd, struct mmsghdr *v, unsigned int n, int flags, struct timespec *timeout)
{
    struct verdict v2 = decide(OP_RECVMMSG, "recvmmsg", fd, NULL, 0);
    if (v2.act < 0) {
        errno = v2.err;
        return -1;
    }
    return real_recvmmsg(fd, v, n, flags, timeout);
}

/* ---- the bpf system call ---- */

/* Every system call through the C library's syscall(): the bpf one is matched on its
 * command (cmd=, kept in the rule's fd), the rest pass. Six arguments are taken, as the
 * kernel's calling convention passes them in registers whatever the call uses. */
long syscall(long number, ...)
{
    va_list ap;
    va_start(ap, number);
    long a[6];
    for (int i = 0; i < 6; i++)
        a[i] = va_arg(ap, long);
    va_end(ap);
    if (number == SYS_bpf) {
        struct verdict v = decide(OP_BPF, "bpf", (int)a[0], NULL, 0);
        if (v.act < 0) {
            errno = v.err;
            return -1;
        }
    }
    return real_syscall(number, a[0], a[1], a[2], a[3], a[4], a[5]);
}
