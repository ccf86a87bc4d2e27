/* SPDX-License-Identifier: GPL-2.0-or-later */
/* util/util.c: allocation wrappers, whole-file reads relative to a directory fd, clocks. */
#include "util.h"

#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <stdbool.h>
#include <stdarg.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static void *oom(size_t n)
{
    fprintf(stderr, "iotriage: out of memory (%zu bytes)\n", n);
    abort();
}

void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    return p ? p : oom(n);
}

void *xcalloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size ? size : 1);
    return p ? p : oom(n * size);
}

void *xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);
    return q ? q : oom(n);
}

void *xreallocarray(void *p, size_t n, size_t size)
{
    if (size && n > SIZE_MAX / size)
        return oom(SIZE_MAX);
    return xrealloc(p, n * size);
}

char *xstrdup(const char *s)
{
    char *d = strdup(s);
    return d ? d : oom(strlen(s) + 1);
}

char *xstrndup(const char *s, size_t n)
{
    char *d = strndup(s, n);
    return d ? d : oom(n + 1);
}

void err_set(char *err, size_t errlen, const char *fmt, ...)
{
    if (!err || !errlen)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

ssize_t read_fd_into(int fd, char *buf, size_t cap)
{
    if (cap == 0)
        return -EINVAL;
    size_t len = 0;
    while (len < cap - 1) {
        ssize_t r = read(fd, buf + len, cap - 1 - len);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        if (r == 0)
            break;
        len += (size_t)r;
    }
    buf[len] = '\0';
    return (ssize_t)len;
}

ssize_t read_file_at(int dirfd, const char *path, char *buf, size_t cap)
{
    if (cap == 0)
        return -EINVAL;
    int fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
    if (fd < 0)
        return -errno;
    ssize_t n = read_fd_into(fd, buf, cap);
    close(fd);
    return n;
}

ssize_t read_fd_alloc(int fd, char **out, size_t limit)
{
    size_t cap = 4096, len = 0;
    char *buf = xmalloc(cap);
    for (;;) {
        if (len + 1 >= cap) {
            if (cap >= limit)
                break;
            cap *= 2;
            buf = xrealloc(buf, cap);
        }
        ssize_t r = read(fd, buf + len, cap - 1 - len);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            int e = errno;
            free(buf);
            return -e;
        }
        if (r == 0)
            break;
        len += (size_t)r;
    }
    buf[len] = '\0';
    *out = buf;
    return (ssize_t)len;
}

ssize_t read_file_alloc_at(int dirfd, const char *path, char **out, size_t limit)
{
    int fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
    if (fd < 0)
        return -errno;
    ssize_t n = read_fd_alloc(fd, out, limit);
    close(fd);
    return n;
}

long read_long_at(int dirfd, const char *path)
{
    char buf[64];
    if (read_file_at(dirfd, path, buf, sizeof(buf)) <= 0)
        return -1;
    char *end;
    errno = 0;
    long v = strtol(buf, &end, 10);
    if (end == buf || errno)
        return -1;
    return v;
}

int sysfs_choices(const char *buf, char *active, size_t size, char *list, size_t nlist)
{
    size_t n = 0;
    active[0] = '\0';
    const char *p = buf;
    for (;;) {
        p += strspn(p, " \t\n");
        if (*p == '\0')
            break;
        size_t l = strcspn(p, " \t\n");
        bool bracketed = p[0] == '[' && l >= 2 && p[l - 1] == ']';
        const char *name = bracketed ? p + 1 : p;
        size_t nl = bracketed ? l - 2 : l;
        if (nl == 0 || nl >= size)
            return -EINVAL;
        if (list && n < nlist) {
            memcpy(list + n * size, name, nl);
            list[n * size + nl] = '\0';
        }
        n++;
        if (bracketed) {
            memcpy(active, name, nl);
            active[nl] = '\0';
        }
        p += l;
    }
    return (int)n;
}

long read_loadavg_tasks_at(int dirfd, const char *path)
{
    char buf[128];
    long running, total;
    if (read_file_at(dirfd, path, buf, sizeof(buf)) <= 0 ||
        sscanf(buf, "%*s %*s %*s %ld/%ld", &running, &total) != 2 || total < 0)
        return -1;
    return total;
}

DIR *opendir_at(int dirfd, const char *path)
{
    int fd = openat(dirfd, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return NULL;
    DIR *d = fdopendir(fd);
    if (!d) {
        int e = errno;
        close(fd);
        errno = e;
    }
    return d;
}

void dir_reader_init(struct dir_reader *r, int fd)
{
    r->fd = fd;
    r->err = 0;
    r->pos = r->len = 0;
}

const char *dir_reader_next(struct dir_reader *r)
{
    for (;;) {
        if (r->pos >= r->len) {
            if (r->err)
                return NULL;
            ssize_t got = getdents64(r->fd, r->buf, sizeof(r->buf));
            if (got <= 0) {
                r->err = got < 0 ? -errno : 0;
                r->pos = r->len = 0;
                return NULL;
            }
            r->pos = 0;
            r->len = (size_t)got;
        }
        const struct dirent64 *e = (const struct dirent64 *)(const void *)(r->buf + r->pos);
        r->pos += e->d_reclen;
        const char *n = e->d_name;
        if (!(n[0] == '.' && (n[1] == '\0' || (n[1] == '.' && n[2] == '\0'))))
            return n;
    }
}

int dir_count_fd(int fd)
{
    if (lseek(fd, 0, SEEK_SET) < 0)
        return -1;
    struct dir_reader r;
    dir_reader_init(&r, fd);
    int n = 0;
    for (const char *name; (name = dir_reader_next(&r));)
        n += name[0] != '.';
    if (r.err) {
        errno = -r.err;
        return -1;
    }
    return n;
}

void str_copy(char *dst, const char *src, size_t n)
{
    if (n == 0)
        return;
    size_t l = strnlen(src, n - 1);
    memcpy(dst, src, l);
    dst[l] = '\0';
}

char *str_chomp(char *s)
{
    size_t l = strlen(s);
    while (l && (s[l - 1] == '\n' || s[l - 1] == ' ' || s[l - 1] == '\t'))
        s[--l] = '\0';
    return s;
}

int parse_long_in(const char *s, long lo, long hi, long *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (*s == '\0' || *end != '\0' || errno || v < lo || v > hi)
        return -EINVAL;
    *out = v;
    return 0;
}

void exit_usage(const char *who, bool hint, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "%s: ", who);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputs(hint ? " (try --help)\n" : "\n", stderr);
    exit(2);
}

int parse_u64(const char **p, const char *end, uint64_t *out)
{
    const char *s = *p;
    if (s >= end || *s < '0' || *s > '9')
        return -EINVAL;
    uint64_t v = 0;
    while (s < end && *s >= '0' && *s <= '9') {
        unsigned d = (unsigned)(*s - '0');
        if (v > (UINT64_MAX - d) / 10)
            return -EINVAL;
        v = v * 10 + d;
        s++;
    }
    *p = s;
    *out = v;
    return 0;
}

int parse_udouble(const char **p, const char *end, double *out)
{
    const char *s = *p;
    uint64_t ip, fp = 0;
    double scale = 1.0;
    if (parse_u64(&s, end, &ip))
        return -EINVAL;
    if (s < end && *s == '.') {
        s++;
        if (s >= end || *s < '0' || *s > '9')
            return -EINVAL;
        while (s < end && *s >= '0' && *s <= '9') {
            if (scale < 1e15) {     /* further digits cannot change a double's value */
                fp = fp * 10 + (uint64_t)(*s - '0');
                scale *= 10.0;
            }
            s++;
        }
    }
    *out = (double)ip + (double)fp / scale;
    *p = s;
    return 0;
}

double clock_mono(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

double clock_wall(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int stream_flush(FILE *f)
{
    /* A write that failed earlier left its errno (the caller cleared errno before it
     * wrote): that is the reason to give, not a vague EIO. */
    int earlier = errno;
    if (fflush(f) != 0)
        return errno ? -errno : -EIO;
    return ferror(f) ? (earlier ? -earlier : -EIO) : 0;
}

size_t lower_bound_id(const void *base, size_t n, size_t size, size_t off, pid_t id)
{
    const unsigned char *b = base;
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        pid_t v;
        memcpy(&v, b + mid * size + off, sizeof(v));
        if (v < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

uint64_t hash_str(const char *s)
{
    uint64_t h = 1469598103934665603ull;   /* FNV-1a */
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

void *dl_load(const char *soname, const char *who, const char *package, void *table, size_t table_size,
              const struct dl_sym *syms, size_t n, int *rc, char *err, size_t errlen)
{
    void *h = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        err_set(err, errlen, "%s needs %s (Debian: %s): %s", who, soname, package, dlerror());
        *rc = -ENOENT;
        return NULL;
    }
    for (size_t i = 0; i < n; i++) {
        void *f = dlsym(h, syms[i].name);
        if (!f) {
            err_set(err, errlen, "%s lacks %s", soname, syms[i].name);
            dlclose(h);
            memset(table, 0, table_size);
            *rc = -ENOSYS;
            return NULL;
        }
        memcpy((char *)table + syms[i].off, &f, sizeof(f));
    }
    *rc = 0;
    return h;
}
