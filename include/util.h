/* SPDX-License-Identifier: GPL-2.0-or-later */
/* util.h: small helpers shared by every module.
 *
 * Allocation wrappers abort with a message when memory runs out: a monitor that cannot
 * allocate a few kilobytes has nothing useful left to do, and every caller checking NULL
 * would only hide the real logic. Everything else reports errors as -errno.
 */
#ifndef IOTRIAGE_UTIL_H
#define IOTRIAGE_UTIL_H

#include <dirent.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdint.h>
#include <sys/types.h>

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

void *xmalloc(size_t n);
void *xcalloc(size_t n, size_t size);
void *xrealloc(void *p, size_t n);
void *xreallocarray(void *p, size_t n, size_t size);
char *xstrdup(const char *s);
char *xstrndup(const char *s, size_t n);

/* Format one line of error into err (errlen bytes), when err is not NULL: the "char *err,
 * size_t errlen" convention of every function that says why it failed. */
void err_set(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Read fd from where it is to its end (or until buf is full) into buf, NUL-terminated; fd
 * stays open. Returns the bytes read (at most cap-1) or -errno. */
ssize_t read_fd_into(int fd, char *buf, size_t cap);

/* Read a whole (small) file relative to dirfd into buf, NUL-terminated. Returns the number
 * of bytes read (at most cap-1) or -errno. One open, one read loop, one close. */
ssize_t read_file_at(int dirfd, const char *path, char *buf, size_t cap);

/* Read a file that fits no fixed buffer (sysfs lists, cmdline): *out is malloc'd and
 * NUL-terminated. Returns its length or -errno. */
ssize_t read_file_alloc_at(int dirfd, const char *path, char **out, size_t limit);

/* The same from an open fd, from where it is to its end; fd stays open. */
ssize_t read_fd_alloc(int fd, char **out, size_t limit);

/* A small file holding one decimal number (sysfs attributes): the number, or -1 when the
 * file cannot be read or does not start with one. */
long read_long_at(int dirfd, const char *path);

/* Pure: a sysfs file offering choices with the one in force bracketed ("none
 * [mq-deadline] kyber bfq", transparent_hugepage's "always [madvise] never"). active (size
 * bytes) gets the bracketed one, "" when none is; list, when not NULL, the first nlist
 * offered, each in size bytes. Returns the number offered, or -EINVAL for an empty or
 * too long name. */
int sysfs_choices(const char *buf, char *active, size_t size, char *list, size_t nlist);

/* The kernel's task count, every thread (/proc/loadavg's fourth field, "running/total"),
 * from the loadavg file path relative to dirfd: the total, or -1 when unreadable. */
long read_loadavg_tasks_at(int dirfd, const char *path);

/* Open directory path relative to dirfd for readdir. NULL with errno set on failure (the
 * fd is never leaked). */
DIR *opendir_at(int dirfd, const char *path);

/* A directory's entries read with getdents64 into a buffer of the caller's (on its
 * stack): no DIR stream, so no 32 KB buffer on the heap and none of fdopendir's fcntl.
 * For directories read often and whole (/proc/PID/fd, a queue's mq/). The fd is the
 * caller's to open and close. */
struct dir_reader {
    int    fd;
    int    err;                     /* 0, or -errno once a read failed */
    size_t pos, len;
    char   buf[2048] __attribute__((aligned(8)));
};

/* From the directory's current position (a freshly opened fd: its start). */
void dir_reader_init(struct dir_reader *r, int fd);

/* The next entry's name, "." and ".." left out; NULL at the end or when a read failed
 * (then r->err is -errno: -ENOENT for a /proc directory whose process has exited). The
 * name is valid until the next call. */
const char *dir_reader_next(struct dir_reader *r);

/* The entries of the open directory fd whose names do not start with '.', read from its
 * start with a dir_reader. -1 with errno set when it cannot be read. */
int dir_count_fd(int fd);

/* Copy src into dst of size n, always NUL-terminated (truncates). */
void str_copy(char *dst, const char *src, size_t n);

/* Strip trailing newlines and spaces in place; returns s. */
char *str_chomp(char *s);

/* Parse an unsigned decimal at *p, reading no byte at or past end; advance *p past it.
 * Returns 0 or -EINVAL (no digit, or overflow). */
int parse_u64(const char **p, const char *end, uint64_t *out);

/* Parse a non-negative finite decimal fraction ("12.34") in [*p, end); same contract.
 * No exponent, sign, hex, inf or nan: the kernel prints none of those here. */
int parse_udouble(const char **p, const char *end, double *out);

/* A command-line number: the whole of s a decimal in [lo, hi] (sign allowed). Returns 0
 * and *out, or -EINVAL (empty, trailing bytes, overflow, out of range). */
int parse_long_in(const char *s, long lo, long hi, long *out);

/* A bad command line or a refusal: "WHO: message" (then " (try --help)" when hint) on
 * stderr, and exit status 2. */
__attribute__((format(printf, 3, 4), noreturn))
void exit_usage(const char *who, bool hint, const char *fmt, ...);

/* Seconds since an arbitrary point, from CLOCK_MONOTONIC (rates never jump with the wall clock). */
double clock_mono(void);
/* Wall-clock seconds since the epoch, for timestamps only. */
double clock_wall(void);

/* Flush a stream and say whether everything written to it since it was opened arrived:
 * 0, or -errno: the flush's, or that of a write that failed earlier when the caller set
 * errno to 0 before writing (else -EIO). */
int stream_flush(FILE *f);

/* FNV-1a of a C string, for hash tables keyed by paths and names. */
uint64_t hash_str(const char *s);

/* The first of base[0..n) (elements of size bytes, sorted by the pid_t at byte offset off)
 * whose id is not below id; n when none. The one search by task or process id that the
 * arrays sorted by id (tasks, caches, kernel rows) share: LOWER_BOUND_ID names the field. */
size_t lower_bound_id(const void *base, size_t n, size_t size, size_t off, pid_t id);
#define LOWER_BOUND_ID(arr, n, field, id) \
    lower_bound_id((arr), (n), sizeof(*(arr)), offsetof(__typeof__(*(arr)), field), (id))

/* The room to allocate for n entries of an array that every refresh frees and allocates
 * again, one entry a task (the tasks, their devices, cgroups and history, the result):
 * n rounded up to a multiple of TASK_ROOM_STEP. A population that moves by a few tasks
 * then asks for blocks of the same sizes each refresh, which fit the free blocks the
 * last refresh left; one entry more than the block freed went to the heap's top instead,
 * for good (docs/performance.md, memory at 10,000 processes). */
#define TASK_ROOM_STEP 256
static inline size_t task_room(size_t n)
{
    return (n + TASK_ROOM_STEP - 1) / TASK_ROOM_STEP * TASK_ROOM_STEP;
}

/* A library loaded on demand (dlopen) instead of linked, where only one mode needs it:
 * syms[i].name's address is stored at byte offset syms[i].off of table (a struct of
 * function pointers with the library's own prototypes; POSIX stores a function pointer
 * through its object representation). Returns the handle, or NULL with err saying why
 * ("WHO needs SONAME (Debian: PACKAGE): ..." or "SONAME lacks NAME") and *rc -ENOENT
 * or -ENOSYS; table is left zeroed then. */
struct dl_sym { const char *name; size_t off; };
void *dl_load(const char *soname, const char *who, const char *package, void *table, size_t table_size,
              const struct dl_sym *syms, size_t n, int *rc, char *err, size_t errlen);

#endif
