/* SPDX-License-Identifier: GPL-2.0-or-later */
/* source/procs.c: the task list, identity and scheduling from /proc/PID/stat, the owner of
 * /proc/PID, I/O counters from /proc/PID/io; every parser pure. */
#include "source/procs.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/magic.h>
#include <pthread.h>
#include <pwd.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "source/ioprio.h"
#include "source/taskiter.h"
#include "util.h"
#include "util/strpool.h"

#define CMDLINE_MAX (64 * 1024)
#define PF_KTHREAD  0x00200000   /* include/linux/sched.h: the task is a kernel thread */
#define STAT_BUF    2048         /* /proc/PID/stat: 52 numbers and a name of at most 64 bytes */
#define IO_BUF      512          /* /proc/PID/io: 7 short lines */

/* include/linux/threads.h: PID_MAX_LIMIT on 64-bit, the most tasks a kernel can have */
#define PROCS_PID_MAX_LIMIT ((size_t)4 * 1024 * 1024)

/* A task's command line as last read, by (id, start), and the name it had then: a
 * different name means an exec, and a new command line. Both are references. */
struct name_cache {                  /* 104 bytes: 4 of padding */
    pid_t id;
    pid_t tgid;
    pid_t live_tid;                  /* task_sample.live_tid at the last full read */
    unsigned long long start;
    char *comm;
    char *cmdline;
    double read_at;
    /* What the last full read found, to stand for it while the task does not run (see
     * procs_read: the run-time gate). */
    uint64_t run_ns;
    struct task_io io;
    uid_t uid;
    int  io_err;
    int  nlwp;
    char state;
    bool kthread;
    bool has_run;                    /* run_ns is the task's run time at that read */
    bool cmd_pending;                /* cmdline is "" for now, not read (idle_cmd_later) */
};

struct user_name {
    uid_t uid;
    char *name;                      /* one reference */
};

struct procs_src {
    bool threads;
    struct strpool *pool;
    struct name_cache *names;        /* the last refresh's, sorted by id */
    size_t nnames, names_cap;
    struct user_name *users;         /* every uid seen, never expired (like libproc2) */
    size_t nusers, users_cap, last_user;
    char *cmdbuf;                    /* CMDLINE_MAX, for reading command lines */
    /* The listing (see procs.h: how tasks are listed). */
    int loadavg_fd;                  /* /proc/loadavg, kept open; -1: not ours to trust */
    bool ns_checked;                 /* whether loadavg_fd can be opened was decided */
    pid_t last_pid;                  /* the kernel's last allocated pid when the list was
                                      * last made; 0: unknown */
    long tgid_offset;                /* /proc's directory position of process p is
                                      * p + tgid_offset; 0: not learnt */
    pid_t range_from;                /* where the next range starts: the start of the last
                                      * refresh's own allocations; 0: unknown */
    double full_at;                  /* when /proc was last listed whole */
    uint64_t only_sig;               /* the `only` filter the last list was made with */
    /* The task iterator (procs_set_taskiter): when set, the task list and every per-task
     * figure come from it; NULL: from /proc. */
    struct taskiter *ti;
    struct taskiter_acc acc;         /* its tasks of this refresh, reused */
    long clk_tck;
    bool last_iter;                  /* the last procs_read's tasks came from it */
    bool idle_cmd_later;             /* procs_defer_idle_cmdlines: for the next run only */
    pid_t *blind;                    /* processes /proc listed that the iterator did not
                                      * show at the last check: read from /proc */
    size_t nblind, blind_cap;
    double blind_at;                 /* when /proc was last listed for that check */
};

/* The refresh being assembled. */
struct reap {
    struct procs_src *src;
    int proc_fd;
    double now;
    struct task_sample *out;
    size_t n, cap;
    /* The cache is updated in place, not copied: the last refresh's entry of each task read
     * again is rewritten (and marked in seen, one bit an entry of src->names), a task it
     * did not hold gets one in added; finish_read drops the unmarked, merges in added. */
    uint64_t *seen;
    struct name_cache *added;
    size_t nadded, added_cap;
    struct name_cache *cur;          /* the entry of the task added last */
    char *group_cmd;                 /* threads: the command line of this process as */
    pid_t group_tgid;                /* known this refresh (its leader's, or the last read) */
    double group_read_at;            /* ... and when it was read */
    pid_t last_id;
    bool unsorted;                   /* ids did not come in ascending order */
};

/* ------------------------------------------------------------------------------------------ */
/* Pure parsers                                                                                */
/* ------------------------------------------------------------------------------------------ */

int procio_parse(const char *buf, size_t len, struct proc_io *out)
{
    static const struct {
        const char *key;
        size_t len, off;
    } keys[] = {
#define K(name) { #name, sizeof(#name) - 1, offsetof(struct proc_io, name) }
        K(rchar), K(wchar), K(syscr), K(syscw), K(read_bytes), K(write_bytes),
        K(cancelled_write_bytes),
#undef K
    };
    unsigned seen = 0;
    size_t expect = 0;               /* the kernel prints them in this order: try it first */
    memset(out, 0, sizeof(*out));
    const char *p = buf, *end = buf + len;
    while (p < end) {
        const char *eol = memchr(p, '\n', (size_t)(end - p));
        if (!eol)
            eol = end;
        const char *colon = memchr(p, ':', (size_t)(eol - p));
        if (colon) {
            size_t kl = (size_t)(colon - p);
            for (size_t j = 0; j < ARRAY_SIZE(keys); j++) {
                size_t i = (expect + j) % ARRAY_SIZE(keys);
                if (keys[i].len != kl || memcmp(p, keys[i].key, kl) != 0)
                    continue;
                expect = i + 1;
                const char *v = colon + 1;
                while (v < eol && *v == ' ')
                    v++;
                uint64_t val;
                /* the value must end at the line's end: a cut-off number is no number */
                if (eol == end || parse_u64(&v, eol, &val) || v != eol)
                    return -EINVAL;
                memcpy((char *)out + keys[i].off, &val, sizeof(val));
                seen |= 1u << i;
                break;
            }
        }
        p = eol + 1;
    }
    return seen == (1u << ARRAY_SIZE(keys)) - 1 ? 0 : -EINVAL;
}

/* One space-separated field of stat as a signed decimal; *p moves past it. The number
 * must end at a space or a newline: a cut-off number is no number. */
static int stat_field(const char **p, const char *end, long long *out)
{
    const char *q = *p;
    if (q >= end || *q != ' ')
        return -EINVAL;
    q++;
    bool neg = q < end && *q == '-';
    if (neg)
        q++;
    uint64_t v;
    if (parse_u64(&q, end, &v) || q == end || (*q != ' ' && *q != '\n'))
        return -EINVAL;
    if (v > (uint64_t)INT64_MAX)
        v = (uint64_t)INT64_MAX;
    *out = neg ? -(long long)v : (long long)v;
    *p = q;
    return 0;
}

/* Skip n space-separated fields we do not use. */
static int stat_skip(const char **p, const char *end, int n)
{
    const char *q = *p;
    for (; n > 0; n--) {
        if (q >= end || *q != ' ')
            return -EINVAL;
        const char *sp = memchr(q + 1, ' ', (size_t)(end - q - 1));
        if (!sp)
            return -EINVAL;
        q = sp;
    }
    *p = q;
    return 0;
}

int procstat_parse(const char *buf, size_t len, struct proc_stat *out)
{
    memset(out, 0, sizeof(*out));
    const char *end = buf + len;
    const char *open = memchr(buf, '(', len);
    if (!open)
        return -EINVAL;
    const char *close = memrchr(open + 1, ')', (size_t)(end - open - 1));
    if (!close)
        return -EINVAL;
    size_t cl = (size_t)(close - open - 1);
    if (cl > sizeof(out->comm) - 1)
        cl = sizeof(out->comm) - 1;
    memcpy(out->comm, open + 1, cl);
    out->comm[cl] = '\0';
    /* ") S ..." : the state (field 3), then fields 4 (ppid) to 41 (policy) */
    const char *p = close + 1;
    if (end - p < 3 || p[0] != ' ' || p[1] == ' ' || p[1] == '\n')
        return -EINVAL;
    out->state = p[1];
    p += 2;
    long long flags, nice, nlwp, start, policy;
    if (stat_skip(&p, end, 5) || stat_field(&p, end, &flags) ||        /* 4-8, 9 */
        stat_skip(&p, end, 9) || stat_field(&p, end, &nice) ||         /* 10-18, 19 */
        stat_field(&p, end, &nlwp) || stat_skip(&p, end, 1) ||         /* 20, 21 */
        stat_field(&p, end, &start) || stat_skip(&p, end, 18) ||       /* 22, 23-40 */
        stat_field(&p, end, &policy))                                  /* 41 */
        return -EINVAL;
    out->flags = (unsigned long)flags;
    out->nice = (int)nice;
    out->nlwp = (int)nlwp;
    out->start_ticks = (unsigned long long)start;
    out->policy = (int)policy;
    return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* Reading                                                                                     */
/* ------------------------------------------------------------------------------------------ */

/* One open, one read, one close. For the single-record seq_files of /proc/PID (stat, io)
 * one read returns the whole text when the buffer holds it, so the read to see the end
 * that read_file_at does would only add a syscall. buf is NUL-terminated. */
static ssize_t read_once_at(int dirfd, const char *path, char *buf, size_t cap)
{
    int fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
    if (fd < 0)
        return -errno;
    size_t len = 0;
    ssize_t r;
    /* Their text ends in a newline; a read that stopped before it was short
     * (seen only under fault injection, but then every task was dropped without a word):
     * read on, at no cost in the usual case */
    do {
        do
            r = read(fd, buf + len, cap - 1 - len);
        while (r < 0 && errno == EINTR);
        if (r > 0)
            len += (size_t)r;
    } while (r > 0 && buf[len - 1] != '\n' && len < cap - 1);
    int e = errno;
    close(fd);
    if (r < 0)
        return -e;
    buf[len] = '\0';
    return (ssize_t)len;
}

int procs_open(struct procs_src **out, bool threads, char *err, size_t errlen)
{
    (void)err;
    (void)errlen;
    struct procs_src *s = xcalloc(1, sizeof(*s));
    s->threads = threads;
    s->pool = strpool_new();
    s->loadavg_fd = -1;
    s->clk_tck = sysconf(_SC_CLK_TCK);
    *out = s;
    return 0;
}

void procs_set_taskiter(struct procs_src *src, struct taskiter *ti)
{
    taskiter_close(src->ti);
    src->ti = ti;
}

bool procs_from_taskiter(const struct procs_src *src)
{
    return src->last_iter;
}

void procs_defer_idle_cmdlines(struct procs_src *src)
{
    src->idle_cmd_later = true;
}

static bool selected(pid_t id, pid_t tgid, const pid_t *only, size_t nonly)
{
    if (nonly == 0)
        return true;
    for (size_t i = 0; i < nonly; i++)
        if (only[i] == id || only[i] == tgid)
            return true;
    return false;
}

static int cmp_task(const void *a, const void *b)
{
    const struct task_sample *x = a, *y = b;
    return (x->id > y->id) - (x->id < y->id);
}

static int cmp_name(const void *a, const void *b)
{
    const struct name_cache *x = a, *y = b;
    return (x->id > y->id) - (x->id < y->id);
}

/* The user name of uid, as libproc2's pwcache gives it. */
static char *user_of(struct procs_src *src, uid_t uid)
{
    if (src->last_user < src->nusers && src->users[src->last_user].uid == uid)
        return src->users[src->last_user].name;
    for (size_t i = 0; i < src->nusers; i++)
        if (src->users[i].uid == uid) {
            src->last_user = i;
            return src->users[i].name;
        }
    if (src->nusers == src->users_cap) {
        src->users_cap = src->users_cap ? 2 * src->users_cap : 16;
        src->users = xreallocarray(src->users, src->users_cap, sizeof(src->users[0]));
    }
    struct user_name *u = &src->users[src->nusers];
    u->uid = uid;
    const struct passwd *pw = getpwuid(uid);
    char num[TASK_USER_MAX];
    const char *name = num;
    if (pw && strlen(pw->pw_name) < TASK_USER_MAX)
        name = pw->pw_name;
    else
        snprintf(num, sizeof(num), "%u", (unsigned)uid);
    u->name = strpool_get(src->pool, name, strlen(name));
    src->last_user = src->nusers++;
    return u->name;
}

/* What /proc/PID/cmdline reads (arguments separated by NULs), cl[0, len), as the
 * command line shown (separated by spaces), a new reference; cl is changed. */
static char *cmdline_intern(struct procs_src *src, char *cl, ssize_t len)
{
    while (len > 0 && cl[len - 1] == '\0')
        len--;
    if (len <= 0)
        return strpool_get(src->pool, "", 0);
    for (ssize_t i = 0; i < len; i++)
        if (cl[i] == '\0')
            cl[i] = ' ';
    return strpool_get(src->pool, cl, (size_t)len);
}

/* The command line of process tgid, as a new reference; the empty string when it has
 * none or cannot be read. live_tid: its leader exited, thread live_tid's (the same
 * memory) is read; 0: the leader's. */
static char *read_cmdline(struct procs_src *src, int proc_fd, pid_t tgid, pid_t live_tid)
{
    if (!src->cmdbuf)
        src->cmdbuf = xmalloc(CMDLINE_MAX);
    char path[48];
    if (live_tid)                    /* rare: cached */
        snprintf(path, sizeof(path), "%d/task/%d/cmdline", (int)tgid, (int)live_tid);
    else
        snprintf(path, sizeof(path), "%d/cmdline", (int)tgid);
    ssize_t len = read_file_at(proc_fd, path, src->cmdbuf, CMDLINE_MAX);
    return cmdline_intern(src, src->cmdbuf, len);
}

/* The command line the task iterator sent (bytes[0, len), at most TASKS_CMDLINE_MAX). */
static char *sent_cmdline(struct procs_src *src, const char *bytes, size_t len)
{
    if (!src->cmdbuf)
        src->cmdbuf = xmalloc(CMDLINE_MAX);
    if (len > CMDLINE_MAX)
        len = CMDLINE_MAX;
    memcpy(src->cmdbuf, bytes, len);
    return cmdline_intern(src, src->cmdbuf, (ssize_t)len);
}

static const struct name_cache *cache_find(const struct procs_src *src, pid_t id)
{
    size_t lo = 0, hi = src->nnames;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (src->names[mid].id < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < src->nnames && src->names[lo].id == id ? &src->names[lo] : NULL;
}

/* The cache room for this refresh, once rp->cap (the tasks expected) is known. */
static void reap_begin(struct reap *rp)
{
    const struct procs_src *src = rp->src;
    rp->seen = xcalloc((src->nnames + 63) / 64 + 1, sizeof(rp->seen[0]));
    /* the first refresh adds every task: room for them at once, not by doubling */
    rp->added_cap = src->nnames ? 0 : rp->cap;
    rp->added = rp->added_cap ? xreallocarray(NULL, rp->added_cap, sizeof(rp->added[0])) : NULL;
}

/* Entry e of the last refresh's cache stands for the task added now. */
static void cache_keep(struct reap *rp, struct name_cache *e)
{
    size_t i = (size_t)(e - rp->src->names);
    rp->seen[i / 64] |= (uint64_t)1 << (i % 64);
    rp->cur = e;
}

/* The entry of task id for this refresh: its last one, or a new one, empty (no strings). */
static struct name_cache *cache_entry(struct reap *rp, pid_t id)
{
    struct name_cache *e = (struct name_cache *)(uintptr_t)cache_find(rp->src, id);
    if (e) {
        cache_keep(rp, e);
        return e;
    }
    if (rp->nadded == rp->added_cap) {
        rp->added_cap = rp->added_cap ? 2 * rp->added_cap : 64;
        rp->added = xreallocarray(rp->added, rp->added_cap, sizeof(rp->added[0]));
    }
    e = &rp->added[rp->nadded++];
    memset(e, 0, sizeof(*e));
    rp->cur = e;
    return e;
}

/* t->comm (comm: the name just parsed) and t->cmdline, recorded in the task's cache entry
 * (rp->cur after, updated in place). The command line is, in this order: the one the task
 * iterator sent (x, its task of acc; NULL on the /proc path), which is new (first sight,
 * an exec, a moved argument range) or sent again (once in each TASKS_CMD_RESEND_NS period
 * of the process); in threads mode the process's as known this refresh; the cache's while
 * the iterator says it stands (CMD_KEPT: its clock alone decides, so that no refresh reads
 * /proc at the edge of a period) or, on the /proc path, while still good (same task and
 * name, younger than PROCS_NAMES_REFRESH_S), unless the iterator said it changed; empty
 * when the iterator saw no memory (what /proc reads then); else read from /proc. */
static void names_of(struct reap *rp, struct task_sample *t, const char *comm,
                     const struct taskiter_acc *acc, const struct taskiter_task *x)
{
    struct procs_src *src = rp->src;
    struct name_cache *e = cache_entry(rp, t->id);     /* what it held: the last refresh's */
    bool same = e->comm && e->start == t->start_ticks && strcmp(e->comm, comm) == 0;
    bool was_pending = e->cmd_pending;
    char *was_cmd = e->cmdline;      /* dropped below unless kept */
    e->id = t->id;
    e->tgid = t->tgid;
    e->start = t->start_ticks;
    e->cmd_pending = false;
    if (!same) {
        char *c = strpool_get(src->pool, comm, strlen(comm));
        strpool_unref(e->comm);
        e->comm = c;
    }
    t->comm = strpool_ref(e->comm);
    if (t->kthread) {                /* no memory, no command line */
        e->cmdline = strpool_get(src->pool, "", 0);
        strpool_unref(was_cmd);
        e->read_at = rp->now;
        t->cmdline = e->cmdline;
        return;
    }
    enum taskiter_cmd said = x ? x->cmd : TASKITER_CMD_NONE;
    size_t sent_len = 0;
    const char *sent = x ? taskiter_cmdline(acc, x, &sent_len) : NULL;
    char *cmd = NULL;                /* a new reference; NULL: was_cmd kept */
    if (sent) {
        cmd = sent_cmdline(src, sent, sent_len);
        e->read_at = rp->now;
    } else if (src->threads && rp->group_cmd && rp->group_tgid == t->tgid) {
        cmd = strpool_ref(rp->group_cmd);
        e->read_at = rp->group_read_at;
    } else if (said != TASKITER_CMD_STALE && same && was_cmd && !was_pending &&
               (said == TASKITER_CMD_KEPT ||
                (rp->now - e->read_at < PROCS_NAMES_REFRESH_S && rp->now >= e->read_at))) {
        /* kept, read_at with it */
    } else if (said == TASKITER_CMD_EMPTY) {
        cmd = strpool_get(src->pool, "", 0);
        e->read_at = rp->now;
    } else if (said == TASKITER_CMD_LATER && task_disk_idle(t)) {
        /* idle: the next run sends it (a process whose leader was idle but whose other
         * threads moved bytes is read below, as one the iterator could not send) */
        cmd = strpool_get(src->pool, "", 0);
        e->read_at = rp->now;
        e->cmd_pending = true;
        t->cmdline_pending = true;
    } else {
        /* a thread reads its own: the same memory, and there even when the leader
         * has exited */
        pid_t via = t->live_tid ? t->live_tid : t->id != t->tgid ? t->id : 0;
        cmd = read_cmdline(src, rp->proc_fd, t->tgid, via);
        e->read_at = rp->now;
    }
    if (cmd) {                       /* after the new one is had: it may be the same text */
        strpool_unref(was_cmd);
        e->cmdline = cmd;
    }
    /* the process's for its other threads: its leader's, else the last read */
    if (src->threads && (t->id == t->tgid || rp->group_tgid != t->tgid)) {
        rp->group_cmd = e->cmdline;
        rp->group_tgid = t->tgid;
        rp->group_read_at = e->read_at;
    }
    t->cmdline = strpool_ref(e->cmdline);
}

/* path holds the task's directory below /proc (len bytes, room for PATH_ROOM): append
 * "/name" to it. */
#define PATH_ROOM 64
static const char *task_file(char *path, size_t len, const char *name)
{
    size_t nl = strlen(name);
    path[len] = '/';
    memcpy(path + len + 1, name, nl + 1);
    return path;
}

static uint64_t mix64(uint64_t x)
{
    x ^= x >> 30;                    /* splitmix64's finalizer */
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

/* The four counters nothing shows, as one value that changes when one of them does. */
static uint64_t io_other_sig(uint64_t rchar, uint64_t wchar, uint64_t syscr, uint64_t syscw)
{
    return mix64(mix64(mix64(mix64(rchar) ^ wchar) ^ syscr) ^ syscw);
}

static void read_io(int proc_fd, char *path, size_t len, struct task_sample *t)
{
    char buf[IO_BUF];
    ssize_t n = read_once_at(proc_fd, task_file(path, len, "io"), buf, sizeof(buf));
    path[len] = '\0';
    struct proc_io io;
    if (n < 0) {
        t->io_err = (int)n;
    } else if (procio_parse(buf, (size_t)n, &io) < 0) {
        t->io_err = n == 0 ? -ESRCH : -EINVAL; /* an empty io file: the task is exiting */
    } else {
        t->io.read_bytes = io.read_bytes;
        t->io.write_bytes = io.write_bytes;
        t->io.cancelled_write_bytes = io.cancelled_write_bytes;
        t->io.other_sig = io_other_sig(io.rchar, io.wchar, io.syscr, io.syscw);
    }
}

static pid_t pid_name(const char *s);

static int cmp_pid(const void *a, const void *b)
{
    pid_t x = *(const pid_t *)a, y = *(const pid_t *)b;
    return (x > y) - (x < y);
}

/* A leader that exited while threads of its group live (its stat says Z or X, and more
 * than one thread): the live thread of lowest tid, with its stat in *ps, or 0 (none, or
 * not readable). One readdir of /proc/TGID/task and a stat read per thread tried. */
static pid_t live_thread(int proc_fd, pid_t tgid, struct proc_stat *ps)
{
    char path[PATH_ROOM];
    snprintf(path, sizeof(path), "%d/task", (int)tgid);
    DIR *d = opendir_at(proc_fd, path);
    if (!d)
        return 0;
    pid_t *tids = NULL;
    size_t n = 0, cap = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        pid_t tid = pid_name(e->d_name);
        if (tid <= 0 || tid == tgid)
            continue;
        if (n == cap) {
            cap = cap ? 2 * cap : 16;
            tids = xreallocarray(tids, cap, sizeof(tids[0]));
        }
        tids[n++] = tid;
    }
    closedir(d);
    qsort(tids, n, sizeof(tids[0]), cmp_pid);
    pid_t live = 0;
    char buf[STAT_BUF];
    for (size_t i = 0; i < n && !live; i++) {
        snprintf(path, sizeof(path), "%d/task/%d/stat", (int)tgid, (int)tids[i]);
        ssize_t r = read_once_at(proc_fd, path, buf, sizeof(buf));
        if (r > 0 && procstat_parse(buf, (size_t)r, ps) == 0 && ps->state != 'Z' && ps->state != 'X')
            live = tids[i];
    }
    free(tids);
    return live;
}

/* One task, whose directory below /proc is path[0, len) ("PID" or "TGID/task/TID"; the
 * buffer has PATH_ROOM bytes). A task that exited meanwhile is left out. */
static void read_task(struct reap *rp, pid_t tgid, pid_t id, char *path, size_t len)
{
    struct stat st;
    if (fstatat(rp->proc_fd, path, &st, 0) != 0)
        return;
    char buf[STAT_BUF];
    ssize_t n = read_once_at(rp->proc_fd, task_file(path, len, "stat"), buf, sizeof(buf));
    path[len] = '\0';
    struct proc_stat ps;
    if (n <= 0 || procstat_parse(buf, (size_t)n, &ps) != 0)
        return;
    if (rp->n == rp->cap) {
        rp->cap = rp->cap ? 2 * rp->cap : 256;
        rp->out = xreallocarray(rp->out, rp->cap, sizeof(rp->out[0]));
    }
    struct task_sample *t = &rp->out[rp->n];
    memset(t, 0, sizeof(*t));
    t->id = id;
    t->tgid = tgid;
    t->start_ticks = ps.start_ticks;
    t->uid = st.st_uid;
    t->user = strpool_ref(user_of(rp->src, st.st_uid));
    t->nice = task_nice8(ps.nice);
    t->policy = task_policy8(ps.policy);
    t->state = ps.state;
    t->nlwp = rp->src->threads ? 1 : ps.nlwp;
    t->kthread = (ps.flags & PF_KTHREAD) != 0;
    pid_t prio_of = id;
    struct proc_stat lps;
    if (id == tgid && !t->kthread && (ps.state == 'Z' || ps.state == 'X') && ps.nlwp > 1 &&
        (t->live_tid = live_thread(rp->proc_fd, tgid, &lps)) && !rp->src->threads) {
        /* the process's priority is its live threads': the zombie has none */
        t->nice = task_nice8(lps.nice);
        t->policy = task_policy8(lps.policy);
        prio_of = t->live_tid;
    }
    names_of(rp, t, ps.comm, NULL, NULL);
    if (id < rp->last_id)
        rp->unsorted = true;
    rp->last_id = id;
    rp->n++;
    read_io(rp->proc_fd, path, len, t);
    t->ioprio_raw = ioprio_read(prio_of);
}

/* A /proc entry that is a pid: digits only, no leading zero. */
static pid_t pid_name(const char *s)
{
    if (*s < '1' || *s > '9')
        return 0;
    long v = 0;
    for (; *s; s++) {
        if (*s < '0' || *s > '9' || v > 100000000)
            return 0;
        v = v * 10 + (*s - '0');
    }
    return (pid_t)v;
}

/* A task listed by the readdir, before it is read. */
struct listed {
    pid_t id, tgid;
};

struct list {
    struct listed *v;
    size_t n, cap;
};

static void list_push(struct list *l, pid_t tgid, pid_t id)
{
    if (l->n == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 1024;
        l->v = xreallocarray(l->v, l->cap, sizeof(*l->v));
    }
    l->v[l->n].id = id;
    l->v[l->n].tgid = tgid;
    l->n++;
}

static void list_threads(struct list *l, int proc_fd, pid_t tgid, const pid_t *only, size_t nonly)
{
    char path[PATH_ROOM];
    snprintf(path, sizeof(path), "%d/task", (int)tgid);
    DIR *d = opendir_at(proc_fd, path);
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d))) {
        pid_t tid = pid_name(e->d_name);
        if (tid > 0 && selected(tid, tgid, only, nonly))
            list_push(l, tgid, tid);
    }
    closedir(d);
}

/* The pid the kernel allocated last, from the last field of /proc/loadavg ("0.10 0.20
 * 0.30 2/123 4567"), or -1 when unknown. It counts in the reader's pid namespace, so it
 * is trusted only for a /proc whose "self" is our own pid (not a fixture tree, not the
 * /proc of another namespace) and whose loadavg procfs itself serves. */
static pid_t last_pid_now(struct procs_src *src, int proc_fd)
{
    if (!src->ns_checked) {
        src->ns_checked = true;
        char self[32];
        ssize_t l = readlinkat(proc_fd, "self", self, sizeof(self) - 1);
        if (l > 0) {
            self[l] = '\0';
            if (pid_name(self) == getpid())
                src->loadavg_fd = openat(proc_fd, "loadavg", O_RDONLY | O_CLOEXEC);
            /* lxcfs (FUSE) can stand in for it in a container, with a field of its own */
            struct statfs fs;
            if (src->loadavg_fd >= 0 &&
                (fstatfs(src->loadavg_fd, &fs) != 0 || fs.f_type != PROC_SUPER_MAGIC)) {
                close(src->loadavg_fd);
                src->loadavg_fd = -1;
            }
        }
    }
    if (src->loadavg_fd < 0)
        return -1;
    char buf[128];
    ssize_t n = pread(src->loadavg_fd, buf, sizeof(buf) - 1, 0);
    if (n <= 0)
        return -1;
    while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
        n--;
    buf[n] = '\0';
    const char *sp = strrchr(buf, ' ');
    pid_t p = sp ? pid_name(sp + 1) : 0;
    return p > 0 ? p : -1;
}

/* Every process (or thread) below proc_fd. Learns tgid_offset on the way: readdir gives
 * each entry the position of the next one, which for /proc is the next pid plus a
 * constant (fs/proc/base.c: TGID_OFFSET); it must be the same for every pair. */
static int list_all(struct procs_src *src, int proc_fd, const pid_t *only, size_t nonly,
                    struct list *l)
{
    DIR *d = opendir_at(proc_fd, ".");
    if (!d)
        return errno ? -errno : -EIO;
    struct dirent *e;
    pid_t prev = 0;
    long prev_off = 0, offset = 0;
    bool steady = true;
    while ((e = readdir(d))) {
        pid_t pid = pid_name(e->d_name);     /* at most 9 digits */
        if (pid <= 0)
            continue;
        if (prev > 0) {
            long o = prev_off - (long)pid;
            if (offset == 0)
                offset = o;
            else if (o != offset)
                steady = false;
        }
        prev = pid;
        prev_off = (long)e->d_off;
        if (src->threads)
            list_threads(l, proc_fd, pid, only, nonly);
        else if (selected(pid, pid, only, nonly))
            list_push(l, pid, pid);
    }
    closedir(d);
    src->tgid_offset = steady && offset > 0 ? offset : 0;
    return 0;
}

/* The processes with a pid in [from, to]: a readdir of /proc from the position of pid
 * `from` on, which the kernel starts at the first process at or above it. Returns false
 * when /proc did not answer as expected (then the caller lists it whole). */
static bool list_range(struct procs_src *src, int proc_fd, pid_t from, pid_t to,
                       const pid_t *only, size_t nonly, struct list *l)
{
    DIR *d = opendir_at(proc_fd, ".");
    if (!d)
        return false;
    seekdir(d, (long)from + src->tgid_offset);
    struct dirent *e;
    bool ok = true;
    while ((e = readdir(d))) {
        pid_t pid = pid_name(e->d_name);
        if (pid < from) {                    /* not a pid, or the position meant otherwise */
            ok = false;
            break;
        }
        if (pid > to)
            break;
        if (selected(pid, pid, only, nonly))
            list_push(l, pid, pid);
    }
    closedir(d);
    return ok;
}

pid_t procs_tgid_of(int proc_fd, pid_t id)
{
    char path[PATH_ROOM], buf[1024];
    snprintf(path, sizeof(path), "%d/status", (int)id);
    ssize_t n = read_once_at(proc_fd, path, buf, sizeof(buf));
    const char *f = n > 0 ? strstr(buf, "\nTgid:") : NULL;
    long tgid = f ? strtol(f + 6, NULL, 10) : 0;
    return tgid > 0 && tgid <= INT_MAX ? (pid_t)tgid : 0;
}

/* Threads mode: the tasks with an id in [from, to], each asked for its thread group in
 * ID/status (readdir of /proc lists no thread but a thread's directory opens all the
 * same; status escapes a newline in the name, so "\nTgid:" is the field). A pid of the
 * range that fails to open exited, or was never a task. Returns false when the range is
 * too wide for one read per pid to be the cheaper way. */
#define PROBE_MAX 64
#define RANGE_BACK 32                /* pids before the counter looked at again after a
                                      * whole listing */
static bool probe_range(struct procs_src *src, int proc_fd, pid_t from, pid_t to,
                        const pid_t *only, size_t nonly, struct list *l)
{
    size_t width = (size_t)(to - from) + 1;
    if (width > PROBE_MAX && width > src->nnames / 16)
        return false;
    for (pid_t p = from; p <= to; p++) {
        pid_t tgid = procs_tgid_of(proc_fd, p);
        if (tgid > 0 && selected(p, tgid, only, nonly))
            list_push(l, tgid, p);
    }
    return true;
}

/* The tasks to read this refresh (procs.h: how tasks are listed). */
static int make_list(struct procs_src *src, int proc_fd, const pid_t *only, size_t nonly,
                     double now, struct list *l)
{
    pid_t last = last_pid_now(src, proc_fd), prev = src->last_pid;
    /* A pid is handed out (the counter moves) a little before its task can be found
     * (kernel/fork.c: copy_process attaches it after cgroup_can_fork): a fork under way
     * when the counter was read shows only later. So each range starts where the one
     * before the last started: every pid is looked for in two refreshes. */
    pid_t from = src->range_from > 0 ? src->range_from : prev + 1;
    uint64_t sig = nonly;            /* the last list holds only what the filter then chose */
    for (size_t i = 0; i < nonly; i++)
        sig = mix64(sig ^ (uint64_t)only[i]);
    bool refiltered = sig != src->only_sig;
    src->only_sig = sig;
    bool whole = last <= 0 || prev <= 0 || last < prev || src->tgid_offset == 0 || refiltered ||
                 !(now - src->full_at < PROCS_FULL_LIST_S);
    struct list fresh = { 0 };
    if (!whole && from <= last &&
        !(src->threads ? probe_range(src, proc_fd, from, last, only, nonly, &fresh)
                       : list_range(src, proc_fd, from, last, only, nonly, &fresh))) {
        free(fresh.v);
        fresh = (struct list){ 0 };
        whole = true;
    }
    src->last_pid = 0;               /* until this listing has worked */
    if (whole) {
        int rc = list_all(src, proc_fd, only, nonly, l);
        if (rc < 0)
            return rc;
        src->full_at = now;
        /* a fork under way during this listing: looked for again next time */
        src->range_from = last > RANGE_BACK ? last - RANGE_BACK : 1;
        src->last_pid = last > 0 ? last : 0;
        return 0;
    }
    /* The last list, with what was allocated since in place of what it held in that range:
     * a pid there was free when it was allocated, so whatever the list had there is gone.
     * Tasks that exited elsewhere fall out when they cannot be read. */
    size_t i = 0;
    for (; i < src->nnames && src->names[i].id < from; i++)
        if (selected(src->names[i].id, src->names[i].tgid, only, nonly))
            list_push(l, src->names[i].tgid, src->names[i].id);
    for (size_t k = 0; k < fresh.n; k++)
        list_push(l, fresh.v[k].tgid, fresh.v[k].id);
    for (; i < src->nnames; i++)
        if (src->names[i].id > last && selected(src->names[i].id, src->names[i].tgid, only, nonly))
            list_push(l, src->names[i].tgid, src->names[i].id);
    free(fresh.v);
    src->range_from = prev + 1;
    src->last_pid = last;
    return 0;
}

/* The scheduling policy and nice of task id: one sched_getattr (Linux 3.14) where it
 * says both, instead of sched_getscheduler and getpriority, two system calls a task and
 * refresh. It leaves the nice out for the real-time and deadline policies, whose nice
 * still sets the I/O priority's level (block/ioprio.c): getpriority then. */
struct sched_attr_v0 {                   /* include/uapi/linux/sched/types.h, SCHED_ATTR_SIZE_VER0 */
    uint32_t size, sched_policy;
    uint64_t sched_flags;
    int32_t  sched_nice;
    uint32_t sched_priority;
    uint64_t sched_runtime, sched_deadline, sched_period;
};

static int policy_nice(pid_t id, int *policy, int *nice)
{
    struct sched_attr_v0 a = { .size = sizeof a };
    if (syscall(SYS_sched_getattr, id, &a, sizeof a, 0) == 0) {
        *policy = (int)a.sched_policy;
        if (*policy == SCHED_OTHER || *policy == SCHED_BATCH || *policy == SCHED_IDLE) {
            *nice = a.sched_nice;
            return 0;
        }
    } else if (errno != ENOSYS) {
        return -errno;
    } else if ((*policy = sched_getscheduler(id)) < 0) {
        return -errno;
    }
    errno = 0;
    *nice = getpriority(PRIO_PROCESS, (id_t)id);
    return errno ? -errno : 0;
}

/* The task as its last full read left it, when the kernel says it has not run since: a
 * task that did not run changed none of what stat, io and the owner of its directory
 * say (its counters move only in its own context; a new thread, an exec, a setuid, a
 * prctl name are its own doing). Nice, policy and the I/O priority can be changed by
 * others without it running: those are asked again (three cheap system calls).
 * Returns false when the task is gone or the cache cannot stand for it. */
static bool carry_task(struct reap *rp, pid_t tgid, pid_t id, struct name_cache *old)
{
    int nice = 0, policy = SCHED_OTHER;
    /* a leader that exited: its live thread's, as the full read took them (that thread
     * gone, the full read finds another) */
    pid_t who = old->live_tid && !rp->src->threads ? old->live_tid : id;
    if (policy_nice(who, &policy, &nice) < 0)
        return false;
    if (rp->n == rp->cap) {
        rp->cap = rp->cap ? 2 * rp->cap : 256;
        rp->out = xreallocarray(rp->out, rp->cap, sizeof(rp->out[0]));
    }
    struct task_sample *t = &rp->out[rp->n];
    const struct name_cache *next = old;   /* kept as it is */
    memset(t, 0, sizeof(*t));
    cache_keep(rp, old);
    t->live_tid = next->live_tid;
    t->id = id;
    t->tgid = tgid;
    t->start_ticks = next->start;
    t->uid = next->uid;
    t->user = strpool_ref(user_of(rp->src, next->uid));
    t->nice = task_nice8(nice);
    t->policy = task_policy8(policy & ~SCHED_RESET_ON_FORK);
    t->state = next->state;
    t->nlwp = next->nlwp;
    t->kthread = next->kthread;
    t->io = next->io;
    t->io_err = next->io_err;
    t->comm = strpool_ref(next->comm);
    t->cmdline = strpool_ref(next->cmdline);
    t->ioprio_raw = ioprio_read(who);
    if (id < rp->last_id)
        rp->unsorted = true;
    rp->last_id = id;
    rp->n++;
    return true;
}

/* Remember in the cache what the full read of out[k] found. */
static void note_full(struct reap *rp, size_t k)
{
    const struct task_sample *t = &rp->out[k];
    struct name_cache *c = rp->cur;  /* out[k] is the task added last */
    c->uid = t->uid;
    c->io = t->io;
    c->io_err = t->io_err;
    c->nlwp = t->nlwp;
    c->state = t->state;
    c->kthread = t->kthread;
    c->live_tid = t->live_tid;
    c->has_run = false;
}

#define GATE_CHUNK 512

static void finish_read(struct reap *rp, struct task_sample **tasks, size_t *n);

/* Whether this run of the iterator showed task id (src->acc, sorted). */
static bool iter_has(const struct procs_src *src, pid_t id)
{
    const struct taskiter_task *v = src->acc.tasks;
    size_t lo = 0, hi = src->acc.n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (v[mid].id < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < src->acc.n && v[lo].id == id;
}

/* The processes /proc lists that the iterator did not show. A kernel may keep a task
 * out of its iterator that /proc shows (seen: a kernel whose init process and its
 * threads never reach task iterators); those few are read from /proc, so that the list
 * is /proc's whatever the iterator skips. Checked every PROCS_FULL_LIST_S (one readdir
 * of /proc); a process started between the run and the readdir is read from /proc
 * until the next check, unless the iterator shows it. */
static void blind_push(struct procs_src *src, pid_t pid)
{
    if (src->nblind == src->blind_cap) {
        src->blind_cap = src->blind_cap ? 2 * src->blind_cap : 16;
        src->blind = xreallocarray(src->blind, src->blind_cap, sizeof(src->blind[0]));
    }
    src->blind[src->nblind++] = pid;
}

/* Whether /proc's readdir would list pid: a thread group leader (status Tgid). */
static bool proc_leader(int proc_fd, pid_t pid)
{
    return procs_tgid_of(proc_fd, pid) == pid;
}

/* /proc's listing for blind_check, made on a thread of its own while the iterator runs
 * (both walk the pid numbers: the kernel for the program, readdir for /proc): at 10,000
 * processes its 14 ms no longer add to a refresh's time, the iterator's run taking 20. */
struct proc_listing {
    int proc_fd;
    pthread_t th;
    bool thread;                     /* th runs list_proc, to be joined */
    bool ok;                         /* /proc was read */
    pid_t *v;
    size_t n, cap;
};

static void *list_proc(void *arg)
{
    struct proc_listing *l = arg;
    DIR *d = opendir_at(l->proc_fd, ".");
    if (!d)
        return NULL;
    struct dirent *e;
    while ((e = readdir(d))) {
        pid_t pid = pid_name(e->d_name);
        if (pid <= 0)
            continue;
        if (l->n == l->cap) {
            l->cap = l->cap ? 2 * l->cap : 1024;
            l->v = xreallocarray(l->v, l->cap, sizeof(l->v[0]));
        }
        l->v[l->n++] = pid;
    }
    closedir(d);
    l->ok = true;
    return NULL;
}

/* The listing done: on its thread if one was started, else here. */
static void listing_wait(struct proc_listing *l)
{
    if (l->thread)
        pthread_join(l->th, NULL);
    else
        list_proc(l);
    l->thread = false;
}

/* A listing not needed after all: its thread joined, its pids freed. */
static void listing_drop(struct proc_listing *l)
{
    if (l->thread)
        pthread_join(l->th, NULL);
    l->thread = false;
    free(l->v);
    l->v = NULL;
}

/* pl: /proc's listing, begun before the iterator's run or (no thread) made here. */
static void blind_check(struct procs_src *src, int proc_fd, const pid_t *only, size_t nonly,
                        struct proc_listing *pl)
{
    if (taskiter_bound(src->ti)) {
        /* bound to the chosen processes: only they can be missing from its runs */
        listing_drop(pl);
        src->nblind = 0;
        for (size_t i = 0; i < nonly; i++)
            if (!iter_has(src, only[i]) && proc_leader(proc_fd, only[i]))
                blind_push(src, only[i]);
        return;
    }
    listing_wait(pl);
    if (pl->ok) {                    /* else the last check's stand */
        src->nblind = 0;
        for (size_t i = 0; i < pl->n; i++)
            if (!iter_has(src, pl->v[i]))
                blind_push(src, pl->v[i]);
    }
    listing_drop(pl);
}

/* Before the first listing (a first frame's run): the init process, the one process seen
 * skipped by an iterator (this VM's, with its threads), when the run did not show it. */
static void blind_first(struct procs_src *src, int proc_fd)
{
    src->nblind = 0;
    if (!iter_has(src, 1) && proc_leader(proc_fd, 1))
        blind_push(src, 1);
}

/* The blind processes (or their threads) from /proc, with taskstats' delays, as the
 * /proc path reads every task. */
static void read_blind(struct reap *rp, const pid_t *only, size_t nonly,
                       procs_stats_fn stats, void *ctx)
{
    struct procs_src *src = rp->src;
    struct list l = { 0 };
    for (size_t i = 0; i < src->nblind; i++) {
        pid_t b = src->blind[i];
        if (iter_has(src, b))
            continue;
        if (src->threads)
            list_threads(&l, rp->proc_fd, b, only, nonly);
        else if (selected(b, b, only, nonly))
            list_push(&l, b, b);
    }
    pid_t ids[GATE_CHUNK];
    struct delay_sample ds[GATE_CHUNK];
    char path[PATH_ROOM];
    for (size_t i0 = 0; i0 < l.n; i0 += GATE_CHUNK) {
        size_t k = l.n - i0 < GATE_CHUNK ? l.n - i0 : GATE_CHUNK;
        for (size_t j = 0; j < k; j++)
            ids[j] = l.v[i0 + j].id;
        if (stats)
            stats(ctx, ids, k, ds);
        for (size_t j = 0; j < k; j++) {
            const struct listed *x = &l.v[i0 + j];
            if (src->threads)
                snprintf(path, sizeof(path), "%d/task/%d", (int)x->tgid, (int)x->id);
            else
                snprintf(path, sizeof(path), "%d", (int)x->id);
            size_t before = rp->n;
            read_task(rp, x->tgid, x->id, path, strlen(path));
            if (rp->n == before)
                continue;
            note_full(rp, before);
            if (stats) {
                struct task_delay *d = &rp->out[before].delay;
                rp->out[before].delay_valid = ds[j].valid;
                d->blkio_count = ds[j].blkio_count;
                d->blkio_delay_ns = ds[j].blkio_delay_ns;
                d->swapin_count = ds[j].swapin_count;
                d->swapin_delay_ns = ds[j].swapin_delay_ns;
            }
        }
    }
    if (l.n)
        rp->unsorted = true;
    free(l.v);
}

/* Every task from one run of the task iterator: no file of /proc and no system call per
 * task; the command lines come with the records (first sight, an exec, and again every
 * TASKS_CMD_RESEND_NS), /proc read only for one the iterator could not send. Returns 0
 * or the iterator's -errno. */
static int read_iter(struct procs_src *src, int proc_fd, const pid_t *only, size_t nonly,
                     procs_stats_fn stats, void *ctx, double now, struct task_sample **tasks,
                     size_t *n)
{
    bool later = src->idle_cmd_later && !src->threads;
    src->idle_cmd_later = false;
    bool check = !(now - src->blind_at < PROCS_FULL_LIST_S);
    /* A first frame's run (later) leaves /proc's listing to the next refresh (blind_at
     * stays, so it is due then): at 10,000 processes the readdir is 15-50 ms of a second
     * CPU beside the run, for the few processes an iterator skips; the one seen skipped,
     * the init process, is looked for by itself (blind_first). */
    bool first = check && later && !taskiter_bound(src->ti);
    if (first)
        check = false;
    struct proc_listing pl = { .proc_fd = proc_fd };
    if (check && !taskiter_bound(src->ti))
        pl.thread = pthread_create(&pl.th, NULL, list_proc, &pl) == 0;
    if (src->acc.cap == 0) {
        /* The first run: room for the kernel's count of threads (an upper bound for
         * processes: what is not touched of it costs no memory), never above the
         * kernel's limit on pids. Later runs find the room the runs before made. */
        long k = read_loadavg_tasks_at(proc_fd, "loadavg");
        size_t expect = k > 0 ? (size_t)k : 0;
        if (expect > PROCS_PID_MAX_LIMIT)
            expect = PROCS_PID_MAX_LIMIT;
        taskiter_acc_reserve(&src->acc, expect + expect / 16 + 16, 16 * expect);
    }
    int rc = taskiter_read(src->ti, src->threads, src->clk_tck, later, &src->acc);
    if (rc < 0) {
        listing_drop(&pl);
        return rc;
    }
    size_t nt = src->acc.n;
    struct reap rp = { .src = src, .proc_fd = proc_fd, .now = now };
    /* room for the processes the iterator does not show (PID 1 here, see blind_check),
     * read from /proc after it: without it every refresh doubled both arrays */
    rp.cap = task_room(nt + src->nblind + 8);
    rp.out = xreallocarray(NULL, rp.cap, sizeof(rp.out[0]));
    reap_begin(&rp);
    for (size_t k = 0; k < nt; k++) {
        const struct taskiter_task *x = &src->acc.tasks[k];
        if (!selected(x->id, x->tgid, only, nonly))
            continue;
        struct task_sample *t = &rp.out[rp.n];
        memset(t, 0, sizeof(*t));
        t->id = x->id;
        t->tgid = x->tgid;
        t->start_ticks = x->start_ticks;
        t->uid = x->uid;
        t->user = strpool_ref(user_of(src, x->uid));
        t->nice = task_nice8(x->nice);
        t->policy = task_policy8(x->policy);
        t->state = x->state;
        t->nlwp = x->nlwp;
        t->kthread = x->kthread;
        t->ioprio_raw = x->ioprio_raw;
        t->live_tid = x->live_tid;
        if (x->io_known) {
            t->io.read_bytes = x->io[TASKS_IO_READ];
            t->io.write_bytes = x->io[TASKS_IO_WRITE];
            t->io.cancelled_write_bytes = x->io[TASKS_IO_CANCELLED];
            t->io.other_sig = io_other_sig(x->io[TASKS_IO_RCHAR], x->io[TASKS_IO_WCHAR],
                                           x->io[TASKS_IO_SYSCR], x->io[TASKS_IO_SYSCW]);
        } else {
            t->io_err = -EOPNOTSUPP;         /* a kernel without I/O accounting: no io file */
        }
        t->delay_valid = x->delays_valid;
        t->delay.blkio_count = x->blkio_count;
        t->delay.blkio_delay_ns = x->blkio_delay_ns;
        t->delay.swapin_count = x->swapin_count;
        t->delay.swapin_delay_ns = x->swapin_delay_ns;
        names_of(&rp, t, taskiter_comm(&src->acc, x), &src->acc, x);
        note_full(&rp, rp.n);
        rp.last_id = t->id;
        rp.n++;
    }
    if (check) {
        blind_check(src, proc_fd, only, nonly, &pl);
        src->blind_at = now;
    } else if (first) {
        blind_first(src, proc_fd);
    }
    read_blind(&rp, only, nonly, stats, ctx);
    /* the /proc path, should it run again, lists /proc whole first */
    src->last_pid = 0;
    src->range_from = 0;
    finish_read(&rp, tasks, n);
    return 0;
}

int procs_read(struct procs_src *src, int proc_fd, const pid_t *only, size_t nonly,
               procs_stats_fn stats, void *ctx, struct task_sample **tasks, size_t *n)
{
    double now = clock_mono();
    /* A run of the iterator that failed leaves this refresh to /proc. */
    src->last_iter = src->ti && read_iter(src, proc_fd, only, nonly, stats, ctx, now, tasks, n) == 0;
    if (src->last_iter)
        return 0;
    /* room for the last refresh's tasks and a few more: the list does not grow by
     * doubling (three copies, and their holes in the heap, at 10,000 tasks) */
    struct list l = { .cap = task_room(src->nnames + 64) };
    l.v = xreallocarray(NULL, l.cap, sizeof(*l.v));
    int rc = make_list(src, proc_fd, only, nonly, now, &l);
    if (rc < 0) {
        free(l.v);
        return rc;
    }

    struct reap rp = { .src = src, .proc_fd = proc_fd, .now = now };
    /* Every task listed, and a few for threads listed late: no array grows by doubling,
     * the first refresh's included (a copy of each, and their holes in the heap). */
    rp.cap = task_room(l.n + 16);
    rp.out = xreallocarray(NULL, rp.cap, sizeof(rp.out[0]));
    reap_begin(&rp);
    pid_t ids[GATE_CHUNK];
    struct delay_sample ds[GATE_CHUNK];
    char path[PATH_ROOM];
    for (size_t i0 = 0; i0 < l.n; i0 += GATE_CHUNK) {
        size_t k = l.n - i0 < GATE_CHUNK ? l.n - i0 : GATE_CHUNK;
        if (stats) {
            for (size_t j = 0; j < k; j++)
                ids[j] = l.v[i0 + j].id;
            stats(ctx, ids, k, ds);
        }
        for (size_t j = 0; j < k; j++) {
            const struct listed *x = &l.v[i0 + j];
            const struct delay_sample *r = stats ? &ds[j] : NULL;
            size_t before = rp.n;
            struct name_cache *old = (struct name_cache *)(uintptr_t)cache_find(src, x->id);
            /* run_ns 0: a kernel that fills it only with delay accounting, or a task not
             * yet run: never a reason to skip */
            bool carried = r && r->valid && r->has_run && r->run_ns != 0 && old && old->has_run &&
                           old->comm && old->run_ns == r->run_ns && carry_task(&rp, x->tgid, x->id, old);
            if (!carried) {
                if (src->threads)
                    snprintf(path, sizeof(path), "%d/task/%d", (int)x->tgid, (int)x->id);
                else
                    snprintf(path, sizeof(path), "%d", (int)x->id);
                read_task(&rp, x->tgid, x->id, path, strlen(path));
                if (rp.n > before)
                    note_full(&rp, before);
            }
            if (rp.n == before)
                continue;                    /* gone */
            struct task_sample *t = &rp.out[before];
            if (r) {
                t->delay_valid = r->valid;
                t->delay.blkio_count = r->blkio_count;
                t->delay.blkio_delay_ns = r->blkio_delay_ns;
                t->delay.swapin_count = r->swapin_count;
                t->delay.swapin_delay_ns = r->swapin_delay_ns;
                rp.cur->run_ns = r->run_ns;
                rp.cur->has_run = r->valid && r->has_run;
            }
        }
    }
    free(l.v);
    finish_read(&rp, tasks, n);
    return 0;
}

/* rp's tasks in id order. They come in order but for a few tasks read after the rest
 * (the iterator's blind ones, a thread listed below its leader after the pids wrapped):
 * each of those is moved to its place, a few memmoves instead of a sort of every task;
 * many out of place, the sort. */
static void sort_by_id(struct reap *rp)
{
    enum { FEW = 32 };
    size_t moved = 0;
    for (size_t i = 1; i < rp->n; i++) {
        if (rp->out[i].id > rp->out[i - 1].id)
            continue;
        if (++moved > FEW) {
            qsort(rp->out, rp->n, sizeof(rp->out[0]), cmp_task);
            return;
        }
        struct task_sample t = rp->out[i];
        size_t j = LOWER_BOUND_ID(rp->out, i, id, t.id);
        memmove(&rp->out[j + 1], &rp->out[j], (i - j) * sizeof(rp->out[0]));
        rp->out[j] = t;
    }
}

/* The cache for the next refresh: the last one's entries this refresh kept (the others
 * are exited tasks: their strings dropped), merged with the ones it added, by id. */
static void cache_finish(struct reap *rp)
{
    struct procs_src *src = rp->src;
    size_t kept = 0;
    for (size_t i = 0; i < src->nnames; i++) {
        struct name_cache *e = &src->names[i];
        if (!(rp->seen[i / 64] >> (i % 64) & 1)) {
            strpool_unref(e->comm);
            strpool_unref(e->cmdline);
        } else if (kept++ != i) {
            src->names[kept - 1] = *e;
        }
    }
    free(rp->seen);
    size_t na = rp->nadded;
    for (size_t i = 1; i < na; i++)
        if (rp->added[i].id < rp->added[i - 1].id) {
            qsort(rp->added, na, sizeof(rp->added[0]), cmp_name);
            break;
        }
    size_t total = kept + na;
    if (kept == 0) {                 /* the first refresh: the added ones are the cache */
        free(src->names);
        src->names = rp->added;
        src->names_cap = rp->added_cap;
        rp->added = NULL;
    } else if (total > src->names_cap) {
        /* a little room over: a few tasks more next time do not move the whole cache */
        src->names_cap = total + total / 64 + 16;
        src->names = xreallocarray(src->names, src->names_cap, sizeof(src->names[0]));
    }
    if (rp->added) {                 /* merged from the end: nothing kept is overwritten */
        size_t i = kept, j = na, k = total;
        while (j > 0) {
            if (i > 0 && src->names[i - 1].id > rp->added[j - 1].id)
                src->names[--k] = src->names[--i];
            else
                src->names[--k] = rp->added[--j];
        }
        free(rp->added);
    }
    src->nnames = total;
    /* many exited: give back the room (a realloc that shrinks does not move) */
    if (src->names_cap > 2 * total + 64) {
        src->names_cap = total + total / 64 + 16;
        src->names = xreallocarray(src->names, src->names_cap, sizeof(src->names[0]));
    }
}

/* The refresh assembled in rp becomes the result, and the cache the next refresh's. */
static void finish_read(struct reap *rp_, struct task_sample **tasks, size_t *n)
{
    struct reap rp = *rp_;
    /* /proc lists pids in order, and a task directory its tids; a thread's tid may still be
     * below its leader's after the pids wrapped. */
    if (rp.unsorted)
        sort_by_id(&rp);
    size_t room = task_room(rp.n ? rp.n : 1);
    if (room < rp.cap)               /* give back what the guess over-reserved */
        rp.out = xreallocarray(rp.out, room, sizeof(rp.out[0]));
    cache_finish(&rp);
    *tasks = rp.out;
    *n = rp.n;
}

void procs_release(struct task_sample *tasks, size_t n)
{
    if (!tasks)
        return;
    for (size_t i = 0; i < n; i++) {
        strpool_unref(tasks[i].comm);
        strpool_unref(tasks[i].cmdline);
        strpool_unref(tasks[i].user);
    }
    free(tasks);
}

void procs_free(struct task_sample *tasks, size_t n)
{
    if (!tasks)
        return;
    for (size_t i = 0; i < n; i++) {   /* malloc'd: not the pool's, ours to free */
        free((char *)(uintptr_t)tasks[i].comm);
        free((char *)(uintptr_t)tasks[i].cmdline);
        free((char *)(uintptr_t)tasks[i].user);
    }
    free(tasks);
}

void procs_close(struct procs_src *src)
{
    if (!src)
        return;
    for (size_t i = 0; i < src->nnames; i++) {
        strpool_unref(src->names[i].comm);
        strpool_unref(src->names[i].cmdline);
    }
    free(src->names);
    for (size_t i = 0; i < src->nusers; i++)
        strpool_unref(src->users[i].name);
    free(src->users);
    /* Snapshots may outlive the sampler: the pool goes with the last string they hold. */
    strpool_close(src->pool);
    free(src->cmdbuf);
    if (src->loadavg_fd >= 0)
        close(src->loadavg_fd);
    taskiter_close(src->ti);
    taskiter_acc_free(&src->acc);
    free(src->blind);
    free(src);
}
