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

#include "procs_parts.h"

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
ssize_t read_once_at(int dirfd, const char *path, char *buf, size_t cap)
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

bool selected(pid_t id, pid_t tgid, const pid_t *only, size_t nonly)
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
char *user_of(struct procs_src *src, uid_t uid)
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
void reap_begin(struct reap *rp)
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
void names_of(struct reap *rp, struct task_sample *t, const char *comm,
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
static const char *task_file(char *path, size_t len, const char *name)
{
    size_t nl = strlen(name);
    path[len] = '/';
    memcpy(path + len + 1, name, nl + 1);
    return path;
}

uint64_t mix64(uint64_t x)
{
    x ^= x >> 30;                    /* splitmix64's finalizer */
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

/* The four counters nothing shows, as one value that changes when one of them does. */
uint64_t io_other_sig(uint64_t rchar, uint64_t wchar, uint64_t syscr, uint64_t syscw)
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
void read_task(struct reap *rp, pid_t tgid, pid_t id, char *path, size_t len)
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
void note_full(struct reap *rp, size_t k)
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
        double at = stats ? clock_mono() : 0;
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
                t->delay.at_s = at;
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
void finish_read(struct reap *rp_, struct task_sample **tasks, size_t *n)
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
