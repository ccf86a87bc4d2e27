/* source/procs.c: the task list through libproc2, I/O counters through our own parser. */
#include "source/procs.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libproc2/pids.h>

#include "source/ioprio.h"
#include "util.h"

/* The items we ask libproc2 for; the order is the index into each stack. */
/* Names and command lines are not taken from libproc2: it replaces control bytes with
 * '?', and the operator should see exactly which bytes a hostile name holds (escaped at
 * output time, out/escape.h). */
enum {
    IT_TID, IT_TGID, IT_BEGAN, IT_CMD, IT_EUID, IT_EUSER, IT_NICE, IT_POLICY, IT_STATE,
    IT_NLWP, IT_FLAGS, IT_COUNT
};
static enum pids_item items[IT_COUNT] = {
    [IT_TID] = PIDS_ID_TID,          [IT_TGID] = PIDS_ID_TGID,
    [IT_BEGAN] = PIDS_TICS_BEGAN,    [IT_CMD] = PIDS_CMD,
    [IT_EUID] = PIDS_ID_EUID,        [IT_EUSER] = PIDS_ID_EUSER,
    [IT_NICE] = PIDS_NICE,           [IT_POLICY] = PIDS_SCHED_CLASS,
    [IT_STATE] = PIDS_STATE,         [IT_NLWP] = PIDS_NLWP,
    [IT_FLAGS] = PIDS_FLAGS,
};

#define CMDLINE_MAX (64 * 1024)
#define PF_KTHREAD  0x00200000   /* include/linux/sched.h: the task is a kernel thread */

/* Names and command lines change rarely (exec, prctl, a daemon rewriting its argv), but
 * reading them cost 10-12 us per task per refresh, a fifth of the whole. They are kept
 * per (id, start) and read again when libproc2's cheap name (from stat, which it reads
 * anyway) changes, which an exec does, or after NAMES_REFRESH_S. */
#define NAMES_REFRESH_S 10.0

struct name_cache {
    pid_t id;
    unsigned long long start;
    char  lp_comm[TASK_COMM_MAX];    /* libproc2's escaped name: the change detector */
    char  comm[TASK_COMM_MAX];       /* the raw name we read */
    char *cmdline;                   /* owned */
    double read_at;
};

struct procs_src {
    struct pids_info *info;
    bool threads;
    struct name_cache *names;         /* the last refresh's, sorted by id */
    size_t nnames;
};

int procio_parse(const char *buf, size_t len, struct proc_io *out)
{
    static const struct {
        const char *key;
        size_t off;
    } keys[] = {
        { "rchar", offsetof(struct proc_io, rchar) },
        { "wchar", offsetof(struct proc_io, wchar) },
        { "syscr", offsetof(struct proc_io, syscr) },
        { "syscw", offsetof(struct proc_io, syscw) },
        { "read_bytes", offsetof(struct proc_io, read_bytes) },
        { "write_bytes", offsetof(struct proc_io, write_bytes) },
        { "cancelled_write_bytes", offsetof(struct proc_io, cancelled_write_bytes) },
    };
    unsigned seen = 0;
    memset(out, 0, sizeof(*out));
    const char *p = buf, *end = buf + len;
    while (p < end) {
        const char *eol = memchr(p, '\n', (size_t)(end - p));
        if (!eol)
            eol = end;
        const char *colon = memchr(p, ':', (size_t)(eol - p));
        if (colon) {
            size_t kl = (size_t)(colon - p);
            for (size_t i = 0; i < ARRAY_SIZE(keys); i++) {
                if (strlen(keys[i].key) != kl || memcmp(p, keys[i].key, kl) != 0)
                    continue;
                const char *v = colon + 1;
                while (v < eol && *v == ' ')
                    v++;
                uint64_t val;
                /* the value must end at the line's end: a cut-off number is no number */
                if (eol == end || parse_u64(&v, eol, &val) || v != eol)
                    return -EINVAL;
                memcpy((char *)out + keys[i].off, &val, sizeof(val));
                seen |= 1u << i;
            }
        }
        p = eol + 1;
    }
    return seen == (1u << ARRAY_SIZE(keys)) - 1 ? 0 : -EINVAL;
}

int procs_open(struct procs_src **out, bool threads, char *err, size_t errlen)
{
    struct procs_src *s = xcalloc(1, sizeof(*s));
    int r = procps_pids_new(&s->info, items, IT_COUNT);
    if (r < 0) {
        snprintf(err, errlen, "libproc2: procps_pids_new failed: %s", strerror(-r));
        free(s);
        return r;
    }
    s->threads = threads;
    *out = s;
    return 0;
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

/* "PID/file" for a process, "TGID/task/TID/file" for a thread. */
static void task_path(char *path, size_t n, bool threads, const struct task_sample *t, const char *file)
{
    if (threads)
        snprintf(path, n, "%d/task/%d/%s", (int)t->tgid, (int)t->id, file);
    else
        snprintf(path, n, "%d/%s", (int)t->id, file);
}

/* The raw name (the kernel keeps at most 15 bytes plus newline) and command line
 * (arguments separated by NULs, shown separated by spaces). */
static void read_names(int proc_fd, bool threads, struct task_sample *t, const char *fallback)
{
    char path[64], buf[TASK_COMM_MAX];
    task_path(path, sizeof(path), threads, t, "comm");
    ssize_t len = read_file_at(proc_fd, path, buf, sizeof(buf));
    if (len > 0 && buf[len - 1] == '\n')
        buf[--len] = '\0';
    str_copy(t->comm, len > 0 ? buf : fallback, sizeof(t->comm));

    char *cl = NULL;
    snprintf(path, sizeof(path), "%d/cmdline", (int)t->tgid);
    len = read_file_alloc_at(proc_fd, path, &cl, CMDLINE_MAX);
    if (len <= 0) {
        free(cl);
        t->cmdline = xstrdup("");
        return;
    }
    while (len > 0 && cl[len - 1] == '\0')
        len--;
    for (ssize_t i = 0; i < len; i++)
        if (cl[i] == '\0')
            cl[i] = ' ';
    cl[len] = '\0';
    /* read_file_alloc_at reads into 4 KiB and more; keep only what the line needs (two
     * snapshots of 10,000 tasks held 80 MB of slack otherwise) */
    t->cmdline = xrealloc(cl, (size_t)len + 1);
}

static struct name_cache *cache_find(const struct procs_src *src, pid_t id)
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

static int cmp_name(const void *a, const void *b)
{
    const struct name_cache *x = a, *y = b;
    return (x->id > y->id) - (x->id < y->id);
}

/* The task's name and command line, from the cache when still good, else read; either
 * way recorded in next[]. */
static void names_of(struct procs_src *src, int proc_fd, struct task_sample *t, const char *lp_comm,
                     double now, struct name_cache *next)
{
    struct name_cache *old = cache_find(src, t->id);
    if (old && old->cmdline && old->start == t->start_ticks && strcmp(old->lp_comm, lp_comm) == 0 &&
        now - old->read_at < NAMES_REFRESH_S) {
        *next = *old;
        old->cmdline = NULL;         /* moved */
        str_copy(t->comm, next->comm, sizeof(t->comm));
        t->cmdline = xstrdup(next->cmdline);
        return;
    }
    read_names(proc_fd, src->threads, t, lp_comm);
    next->id = t->id;
    next->start = t->start_ticks;
    str_copy(next->lp_comm, lp_comm, sizeof(next->lp_comm));
    str_copy(next->comm, t->comm, sizeof(next->comm));
    next->cmdline = xstrdup(t->cmdline);
    next->read_at = now;
}

static void names_free(struct name_cache *v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(v[i].cmdline);
    free(v);
}

static void read_io(int proc_fd, bool threads, struct task_sample *t)
{
    char path[64], buf[512];
    task_path(path, sizeof(path), threads, t, "io");
    ssize_t len = read_file_at(proc_fd, path, buf, sizeof(buf));
    if (len < 0)
        t->io_err = (int)len;
    else if (procio_parse(buf, (size_t)len, &t->io) < 0)
        t->io_err = len == 0 ? -ESRCH : -EINVAL; /* an empty io file: the task is exiting */
}

int procs_read(struct procs_src *src, int proc_fd, const pid_t *only, size_t nonly,
               struct task_sample **tasks, size_t *n)
{
    struct pids_fetch *f = procps_pids_reap(src->info,
                                            src->threads ? PIDS_FETCH_THREADS_TOO : PIDS_FETCH_TASKS_ONLY);
    if (!f)
        return -errno ? -errno : -EIO;
    int total = f->counts->total;
    struct task_sample *out = xcalloc((size_t)(total > 0 ? total : 1), sizeof(*out));
    struct name_cache *next = xcalloc((size_t)(total > 0 ? total : 1), sizeof(*next));
    double now = clock_mono();
    size_t cnt = 0;
    for (int i = 0; i < total; i++) {
        struct pids_stack *st = f->stacks[i];
        struct pids_result *h = st->head;
        pid_t tid = h[IT_TID].result.s_int;
        pid_t tgid = h[IT_TGID].result.s_int;
        /* libproc2 gives TID == PID for the process entries in tasks-only mode */
        pid_t id = src->threads ? tid : tgid;
        if (id <= 0 || !selected(id, tgid, only, nonly))
            continue;
        struct task_sample *t = &out[cnt++];
        t->id = id;
        t->tgid = tgid;
        t->start_ticks = h[IT_BEGAN].result.ull_int;
        names_of(src, proc_fd, t, h[IT_CMD].result.str ? h[IT_CMD].result.str : "", now, &next[cnt - 1]);
        t->uid = h[IT_EUID].result.u_int;
        str_copy(t->user, h[IT_EUSER].result.str ? h[IT_EUSER].result.str : "", sizeof(t->user));
        t->nice = h[IT_NICE].result.s_int;
        t->policy = h[IT_POLICY].result.s_int;
        t->state = h[IT_STATE].result.s_ch;
        t->nlwp = src->threads ? 1 : h[IT_NLWP].result.s_int;
        t->kthread = (h[IT_FLAGS].result.ul_int & PF_KTHREAD) != 0;
        read_io(proc_fd, src->threads, t);
        t->ioprio_raw = ioprio_read(id);
    }
    qsort(out, cnt, sizeof(*out), cmp_task);
    qsort(next, cnt, sizeof(*next), cmp_name);
    names_free(src->names, src->nnames);   /* what was not carried over: exited tasks */
    src->names = next;
    src->nnames = cnt;
    *tasks = out;
    *n = cnt;
    return 0;
}

void procs_free(struct task_sample *tasks, size_t n)
{
    if (!tasks)
        return;
    for (size_t i = 0; i < n; i++)
        free(tasks[i].cmdline);
    free(tasks);
}

void procs_close(struct procs_src *src)
{
    if (!src)
        return;
    procps_pids_unref(&src->info);
    names_free(src->names, src->nnames);
    free(src);
}
