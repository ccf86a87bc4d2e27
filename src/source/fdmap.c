/* SPDX-License-Identifier: GPL-2.0-or-later */
/* source/fdmap.c: process -> block devices, from /proc/PID/fd and sysfs, with two caches:
 * one answer per process (tgid, start), one resolution per dev_t. */
#include "source/fdmap.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "source/blkstack.h"
#include "source/blockdev.h"
#include "util.h"

#include "fdmap_parts.h"

/* ------------------------------------------------------------------------------------------ */
/* Pure parsers                                                                                */
/* ------------------------------------------------------------------------------------------ */

static const char *skip_blanks(const char *p, const char *end)
{
    while (p < end && (*p == ' ' || *p == '\t'))
        p++;
    return p;
}

/* Octal digits in [p, end), then only blanks. */
static int parse_octal_field(const char *p, const char *end, unsigned *out)
{
    p = skip_blanks(p, end);
    if (p == end || *p < '0' || *p > '7')
        return -EINVAL;
    unsigned v = 0;
    for (; p < end && *p >= '0' && *p <= '7'; p++) {
        if (v > (UINT_MAX >> 3))
            return -EINVAL;
        v = v << 3 | (unsigned)(*p - '0');
    }
    if (skip_blanks(p, end) != end)
        return -EINVAL;
    *out = v;
    return 0;
}

int fdinfo_parse_flags(const char *buf, size_t len, unsigned *flags)
{
    static const char key[] = "flags:";
    const size_t klen = sizeof(key) - 1;
    const char *p = buf, *end = buf + len;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *eol = nl ? nl : end;
        if ((size_t)(eol - p) >= klen && memcmp(p, key, klen) == 0)
            return parse_octal_field(p + klen, eol, flags);
        p = nl ? nl + 1 : end;
    }
    return -EINVAL;
}

static int parse_uint(const char **p, const char *end, unsigned *out)
{
    uint64_t v;
    if (parse_u64(p, end, &v) || v > UINT_MAX)
        return -EINVAL;
    *out = (unsigned)v;
    return 0;
}

int parse_majmin(const char *buf, size_t len, unsigned *maj, unsigned *min)
{
    const char *p = buf, *end = buf + len;
    if (len > 0 && end[-1] == '\n')
        end--;
    unsigned a, b;
    if (parse_uint(&p, end, &a) || p == end || *p++ != ':' || parse_uint(&p, end, &b) || p != end)
        return -EINVAL;
    *maj = a;
    *min = b;
    return 0;
}


/* ------------------------------------------------------------------------------------------ */
/* The caches                                                                                  */
/* ------------------------------------------------------------------------------------------ */

struct dev_entry {
    dev_t dev;
    double checked;                 /* when its visits were last found unchanged */
    struct resolution res;
};

/* One process's answer, compact: most processes reach at most two devices, held inline;
 * a larger answer (or one whose buffered set is not within its devices, possible only
 * when truncated, or that reaches its disks through more than one stack's top) is kept
 * whole on the heap. 80 bytes instead of the 544 of a whole struct fd_devs: 1.3 MB
 * instead of 8.9 MB for 16,384 processes (the stack's top, 8 bytes, added in issue 34:
 * on an LVM root every process reaches its disk through the one logical volume). */
#define INLINE_DEVS 2
struct proc_entry {
    pid_t tgid;
    int   err;
    unsigned long long start;
    double scanned, next_scan, seen;
    uint64_t io_sig;                /* the I/O signature at the last scan */
    bool  io_known;                 /* io_sig was known then */
    bool  truncated, buffered_writer, full;
    uint8_t ndevs;                  /* inline */
    uint8_t buffered;               /* inline: bit k, devs[k] is in the buffered set */
    uint8_t via;                    /* inline: bit k, devs[k] is reached through via_top */
    dev_t   via_top;                /* inline: the one stack's top (fd_devs.via_top) */
    union {
        dev_t devs[INLINE_DEVS];
        struct fd_devs *res;        /* full: malloc'd */
    } u;
};

#define DEV_SLOTS (2 * FDMAP_MAX_CACHED_DEVS)   /* power of two, load at most 1/2 */
#define MIN_PROC_CAP 64

/* One open file of a bulk record, as much as a scan needs of it (16 bytes, where a
 * record is 64: 10,000 processes' files must not cost megabytes). A process whose files
 * all reach no block device and none is deleted (pipes, sockets, /dev/null) keeps one
 * entry with fd -1: it was visited, there is nothing to scan. */
struct bulk_file {
    uint32_t task;                  /* the task whose file table it is in: a leader's
                                     * tgid, or a thread's own tid (a thread with a table
                                     * of its own, or a live thread of a group whose
                                     * leader exited) */
    int32_t  fd;                    /* -1: the visited marker */
    uint32_t dev;                   /* the kernel's dev_t its I/O reaches: a block device
                                     * file's own number, else its filesystem's */
    uint32_t type : 4;              /* S_IFMT >> 12 */
    uint32_t buffered : 1;          /* open for writing without O_DIRECT */
    uint32_t del : 27;              /* 1 + index into bdel[] for a deleted regular file */
};

struct fdmap {
    int proc_fd, sys_fd;
    double rescan_s;
    double idle_rescan_s;           /* for processes whose I/O signature has not moved */
    size_t max_procs;

    /* Device cache: open addressing on dev_t, slots hold entry index + 1 (0: empty).
     * Entries are never removed one by one (a stale one is redone in place), only all
     * at once, so probing needs no tombstones. */
    uint16_t dev_slots[DEV_SLOTS];
    struct dev_entry *dents;
    size_t ndents, dents_cap;

    /* Process cache: a dense array and an open-addressing index rebuilt whenever the
     * array is resized or compacted by a prune. */
    struct proc_entry *pents;
    size_t npents, pents_cap;
    uint32_t *proc_slots;           /* index + 1 */
    size_t proc_nslots;             /* a power of two, at least 2 * pents_cap */

    /* Deleted-but-open files as of each process's latest scan, in scan order. */
    struct fd_deleted *deleted;
    size_t ndeleted, deleted_cap;

    /* Every process's open files at once (fdmap_set_bulk), asked for once a refresh has
     * scanned bulk_after processes from /proc; valid until fdmap_begin_refresh. */
    fdmap_bulk_fn bulk;
    void *bulk_ctx;
    struct bulk_file *recs;         /* what matters of the records, by task then fd */
    size_t nrecs, recs_cap;
    struct tasks_file_rec *bdel;    /* the deleted files among them, whole */
    size_t nbdel, bdel_cap;
    bool recs_sorted;
    unsigned bulk_after;            /* /proc scans in a refresh before it is asked */
    /* fdmap_set_netfs: the filesystems with no block device whose files are noted */
    dev_t watch[FDMAP_MAX_WATCH];
    unsigned nwatch;
    unsigned refresh_scans;         /* /proc scans since fdmap_begin_refresh */
    bool recs_taken;                /* the bulk source was asked this refresh */

    struct fdmap_stats stats;
};

static size_t hash_u64(uint64_t k, size_t nslots)
{
    return (size_t)((k * 0x9E3779B97F4A7C15ull) >> 32) & (nslots - 1);
}

static size_t dev_slot(const struct fdmap *m, dev_t dev)
{
    size_t i = hash_u64((uint64_t)dev, DEV_SLOTS);
    while (m->dev_slots[i] && m->dents[m->dev_slots[i] - 1].dev != dev)
        i = (i + 1) & (DEV_SLOTS - 1);
    return i;
}

static void dev_clear(struct fdmap *m)
{
    memset(m->dev_slots, 0, sizeof(m->dev_slots));
    m->ndents = 0;
}

/* The resolution of dev, cached. The pointer is valid until the next call. */
static const struct resolution *dev_lookup(struct fdmap *m, dev_t dev, double now)
{
    size_t slot = dev_slot(m, dev);
    if (m->dev_slots[slot]) {
        struct dev_entry *e = &m->dents[m->dev_slots[slot] - 1];
        if (now - e->checked >= m->rescan_s || now < e->checked) {
            m->stats.dev_checks++;
            if (visits_changed(m->sys_fd, &e->res)) {
                m->stats.dev_drops++;
                m->stats.resolves++;
                resolve(m->sys_fd, dev, &e->res);
            }
            e->checked = now;
        }
        return &e->res;
    }
    /* More distinct devices than expected on any machine: start over rather than grow. */
    if (m->ndents == FDMAP_MAX_CACHED_DEVS) {
        dev_clear(m);
        slot = dev_slot(m, dev);
    }
    if (m->ndents == m->dents_cap) {
        m->dents_cap = m->dents_cap ? 2 * m->dents_cap : 8;
        m->dents = xreallocarray(m->dents, m->dents_cap, sizeof(m->dents[0]));
    }
    struct dev_entry *e = &m->dents[m->ndents++];
    e->dev = dev;
    e->checked = now;
    resolve(m->sys_fd, dev, &e->res);
    m->stats.resolves++;
    m->dev_slots[slot] = (uint16_t)m->ndents;
    return &e->res;
}

static size_t proc_slot(const struct fdmap *m, pid_t tgid)
{
    size_t nslots = m->proc_nslots;
    size_t i = hash_u64((uint64_t)(uint32_t)tgid, nslots);
    while (m->proc_slots[i] && m->pents[m->proc_slots[i] - 1].tgid != tgid)
        i = (i + 1) & (nslots - 1);
    return i;
}

static void proc_reindex(struct fdmap *m)
{
    memset(m->proc_slots, 0, m->proc_nslots * sizeof(m->proc_slots[0]));
    for (size_t k = 0; k < m->npents; k++)
        m->proc_slots[proc_slot(m, m->pents[k].tgid)] = (uint32_t)(k + 1);
}

static void proc_resize(struct fdmap *m, size_t cap)
{
    m->pents_cap = cap;
    m->pents = xreallocarray(m->pents, cap, sizeof(m->pents[0]));
    /* max_procs need not be a power of two; the slot count must. */
    for (m->proc_nslots = 2 * MIN_PROC_CAP; m->proc_nslots < 2 * cap;)
        m->proc_nslots *= 2;
    m->proc_slots = xreallocarray(m->proc_slots, m->proc_nslots, sizeof(m->proc_slots[0]));
    proc_reindex(m);
}

static struct proc_entry *proc_find(struct fdmap *m, pid_t tgid)
{
    if (!m->pents_cap)
        return NULL;
    uint32_t k = m->proc_slots[proc_slot(m, tgid)];
    return k ? &m->pents[k - 1] : NULL;
}

void fdmap_reserve(struct fdmap *m, size_t procs)
{
    if (m->npents)
        return;                      /* sized already: fdmap_prune keeps it fitting */
    if (procs > m->max_procs)
        procs = m->max_procs;
    if (procs > m->pents_cap)
        proc_resize(m, procs);
}

/* A new entry for tgid, or NULL when the table is at max_procs. */
static struct proc_entry *proc_insert(struct fdmap *m, pid_t tgid)
{
    if (m->npents == m->max_procs)
        return NULL;
    if (m->npents == m->pents_cap) {
        size_t cap = m->pents_cap ? 2 * m->pents_cap : MIN_PROC_CAP;
        proc_resize(m, cap < m->max_procs ? cap : m->max_procs);
    }
    struct proc_entry *e = &m->pents[m->npents++];
    memset(e, 0, sizeof(*e));
    e->tgid = tgid;
    m->proc_slots[proc_slot(m, tgid)] = (uint32_t)m->npents;
    return e;
}

static void entry_clear(struct proc_entry *e)
{
    if (e->full)
        free(e->u.res);
    e->full = false;
    e->u.res = NULL;
}

static void entry_store(struct proc_entry *e, const struct fd_devs *r)
{
    entry_clear(e);
    e->err = r->err;
    e->truncated = r->truncated;
    e->buffered_writer = r->buffered_writer;
    e->ndevs = 0;
    e->buffered = 0;
    bool fits = r->ndevs <= INLINE_DEVS && r->nnetfs == 0;   /* netfs: rare, kept whole */
    unsigned mask = 0;
    for (unsigned b = 0; fits && b < r->nbuffered; b++) {
        unsigned k = 0;
        while (k < r->ndevs && r->devs[k] != r->buffered_devs[b])
            k++;
        if (k == r->ndevs)
            fits = false;
        else
            mask |= 1u << k;
    }
    /* inline: one stack's top at most (LVM's root: every process reaches its disk
     * through the one logical volume) */
    unsigned via = 0;
    for (unsigned v = 0; fits && v < r->nvia; v++) {
        unsigned k = 0;
        while (k < r->ndevs && r->devs[k] != r->via_disk[v])
            k++;
        if (k == r->ndevs || r->via_top[v] != r->via_top[0])
            fits = false;
        else
            via |= 1u << k;
    }
    if (!fits) {
        e->full = true;
        e->u.res = xmalloc(sizeof(*r));
        *e->u.res = *r;
        return;
    }
    e->ndevs = (uint8_t)r->ndevs;
    e->buffered = (uint8_t)mask;
    e->via = (uint8_t)via;
    e->via_top = r->nvia ? r->via_top[0] : 0;
    memcpy(e->u.devs, r->devs, r->ndevs * sizeof(r->devs[0]));
}

static void entry_load(const struct proc_entry *e, struct fd_devs *out)
{
    if (e->full) {
        *out = *e->u.res;
        return;
    }
    memset(out, 0, sizeof(*out));
    out->err = e->err;
    out->truncated = e->truncated;
    out->buffered_writer = e->buffered_writer;
    out->ndevs = e->ndevs;
    for (unsigned k = 0; k < e->ndevs; k++) {
        out->devs[k] = e->u.devs[k];
        if (e->buffered & (1u << k))
            out->buffered_devs[out->nbuffered++] = e->u.devs[k];
        if (e->via & (1u << k)) {
            out->via_disk[out->nvia] = e->u.devs[k];
            out->via_top[out->nvia++] = e->via_top;
        }
    }
}

/* ------------------------------------------------------------------------------------------ */
/* Scanning one process                                                                        */
/* ------------------------------------------------------------------------------------------ */

struct scan {
    struct fdmap *m;
    pid_t tgid;
    pid_t tid;                      /* 0, or the thread whose table is read (fdmap_get_io) */
    double now;
    int fdinfo_fd;                  /* /proc/PID/fdinfo, opened on first need */
    struct fd_devs *out;
};

/* The directory `name` (fd, fdinfo) of process tgid below /proc, or of its thread tid
 * (0: the process's). */
static void task_dir(char *path, size_t room, pid_t tgid, pid_t tid, const char *name)
{
    if (tid)
        snprintf(path, room, "%d/task/%d/%s", (int)tgid, (int)tid, name);
    else
        snprintf(path, room, "%d/%s", (int)tgid, name);
}

/* Writes through the page cache: open for writing, and not O_DIRECT. procfs gives each
 * /proc/PID/fd link the permission bits of the open file's mode (w when open for
 * writing): an lstat (about 1 us) spares the fdinfo read (about 4.4 us) for read-only
 * files. fdinfo's flags are the file's f_flags, so an O_DIRECT set later with fcntl
 * shows too. */
static bool fd_writes_buffered(struct scan *s, int fd_dir, const char *name)
{
    struct stat st;
    if (fstatat(fd_dir, name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !(st.st_mode & S_IWUSR))
        return false;
    if (s->fdinfo_fd < 0) {
        char path[48];
        task_dir(path, sizeof(path), s->tgid, s->tid, "fdinfo");
        s->fdinfo_fd = openat(s->m->proc_fd, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (s->fdinfo_fd < 0)
            return false;
    }
    char buf[256];
    ssize_t n = read_file_at(s->fdinfo_fd, name, buf, sizeof(buf));
    s->m->stats.fdinfo_reads++;
    unsigned flags;
    if (n <= 0 || fdinfo_parse_flags(buf, (size_t)n, &flags))
        return false;
    unsigned acc = flags & O_ACCMODE;
    return (acc == O_WRONLY || acc == O_RDWR) && !(flags & O_DIRECT);
}

/* Are all devices of resolution r already known to receive buffered writes? */
static bool all_buffered(const struct fd_devs *out, const struct resolution *r)
{
    for (unsigned i = 0; i < r->n; i++) {
        bool found = false;
        for (unsigned k = 0; k < out->nbuffered && !found; k++)
            found = out->buffered_devs[k] == r->devs[i];
        if (!found)
            return false;
    }
    return true;
}

/* A regular file with no name left, open as fd `name`: noted from the statx the scan
 * made anyway, at no extra system call. Its open flags and name are read later, and only
 * for files on a filesystem the caller watches (memfds, the usual nameless files, live on
 * an internal tmpfs no mount shows). */
static void note_deleted(struct scan *s, const struct fd_facts *f)
{
    struct fdmap *m = s->m;
    if (f->fd < 0)
        return;
    if (m->ndeleted == m->deleted_cap) {
        m->deleted_cap = m->deleted_cap ? 2 * m->deleted_cap : 16;
        m->deleted = xreallocarray(m->deleted, m->deleted_cap, sizeof(m->deleted[0]));
    }
    struct fd_deleted *d = &m->deleted[m->ndeleted++];
    d->tgid = s->tgid;
    d->fd = f->fd;
    d->dev = f->dev;
    d->ino = f->ino;
    d->size = f->size;
    d->blocks_bytes = f->blocks_bytes;
    m->stats.deleted++;
}

/* Forget the deleted files noted for tgid (before it is scanned again, or gone). */
static void drop_deleted(struct fdmap *m, pid_t tgid)
{
    size_t k = 0;
    for (size_t i = 0; i < m->ndeleted; i++) {
        if (m->deleted[i].tgid != tgid)
            m->deleted[k++] = m->deleted[i];
    }
    m->ndeleted = k;
}

/* disk is reached through the stack whose top is top: the first such file names it. */
static void via_add(struct fd_devs *out, dev_t disk, dev_t top)
{
    for (unsigned k = 0; k < out->nvia; k++)
        if (out->via_disk[k] == disk)
            return;
    if (out->nvia < FDMAP_MAX_DEVS) {
        out->via_disk[out->nvia] = disk;
        out->via_top[out->nvia++] = top;
    }
}

/* One /proc/PID/fd entry. Returns -EACCES when we may not look (then the whole answer is
 * unknown); an fd closed since readdir, or of no block device, is simply skipped. */
static void account_fd(struct scan *s, const struct fd_facts *f, int fd_dir, const char *name);

static int scan_fd(struct scan *s, int fd_dir, const char *name)
{
    struct statx stx;
    s->m->stats.fds++;
    int err = statx_cached(fd_dir, name, &stx);
    if (err)
        return err == -EACCES || err == -EPERM ? -EACCES : 0;
    const char *p = name, *end = name + strlen(name);
    uint64_t fd;
    struct fd_facts f;
    facts_of_statx(&stx, parse_u64(&p, end, &fd) || p != end || fd > INT_MAX ? -1 : (int)fd, &f);
    account_fd(s, &f, fd_dir, name);
    return 0;
}

static bool watched(const struct fdmap *m, dev_t dev)
{
    for (unsigned i = 0; i < m->nwatch; i++)
        if (m->watch[i] == dev)
            return true;
    return false;
}

/* A regular file or directory on a watched filesystem (fdmap_set_netfs). */
static bool on_netfs(const struct fdmap *m, const struct fd_facts *f)
{
    return m->nwatch && (f->type == 0 || f->type == S_IFREG || f->type == S_IFDIR) &&
           major(f->dev) == 0 && watched(m, f->dev);
}

/* One open file into the scan's answer. fd_dir and name: its /proc/PID/fd entry, for
 * the flags when f does not carry them (fd_dir -1: it does). */
static void account_fd(struct scan *s, const struct fd_facts *f, int fd_dir, const char *name)
{
    if (f->type == S_IFREG && f->nlink_known && f->nlink == 0)
        note_deleted(s, f);
    if (on_netfs(s->m, f)) {
        struct fd_devs *o = s->out;
        unsigned k = 0;
        while (k < o->nnetfs && o->netfs[k] != f->dev)
            k++;
        if (k == o->nnetfs && k < FDMAP_MAX_NETFS)
            o->netfs[o->nnetfs++] = f->dev;
        return;
    }
    dev_t dev;
    bool may_write;
    if (!facts_device(f, &dev, &may_write))
        return;
    const struct resolution *r = dev_lookup(s->m, dev, s->now);
    bool reaches = r->n > 0;
    for (unsigned i = 0; i < r->n; i++) {
        set_add(s->out->devs, &s->out->ndevs, &s->out->truncated, r->devs[i]);
        if (r->devs[i] != dev && !r->partition)
            via_add(s->out, r->devs[i], dev);
    }
    s->out->truncated |= r->truncated;
    /* fdinfo costs a read: only for a file whose writes could reach a scheduler we
     * report, and only while it could add a device to the buffered set. */
    if (reaches && may_write && !all_buffered(s->out, r) &&
        (f->buffered >= 0 ? f->buffered == 1 : fd_dir >= 0 && fd_writes_buffered(s, fd_dir, name))) {
        bool full = false;
        for (unsigned i = 0; i < r->n; i++)
            set_add(s->out->buffered_devs, &s->out->nbuffered, &full, r->devs[i]);
        s->out->buffered_writer = true;
    }
}

static int cmp_bulk(const void *a, const void *b)
{
    const struct bulk_file *x = a, *y = b;
    if (x->task != y->task)
        return x->task < y->task ? -1 : 1;
    return x->fd < y->fd ? -1 : x->fd > y->fd;
}

void fdmap_bulk_add(struct fdmap *m, const struct tasks_file_rec *v, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        const struct tasks_file_rec *r = &v[i];
        mode_t type = (mode_t)(r->mode & S_IFMT);
        uint32_t dev = type == S_IFBLK ? r->rdev : r->dev;
        bool reaches = (type == S_IFREG || type == S_IFDIR || type == S_IFBLK) &&
                       ((dev >> 20) != 0 || (type != S_IFBLK && m->nwatch && watched(m, kdev(dev))));
        bool deleted = type == S_IFREG && r->nlink == 0;
        bool first = m->nrecs == 0 || m->recs[m->nrecs - 1].task != r->tid;
        if (!reaches && !deleted && !first)
            continue;                /* nothing to scan, and the process is already marked */
        if (m->nrecs == m->recs_cap) {
            m->recs_cap = m->recs_cap ? 2 * m->recs_cap : 1024;
            m->recs = xreallocarray(m->recs, m->recs_cap, sizeof(*m->recs));
        }
        if (!first && m->recs[m->nrecs - 1].fd < 0)
            m->nrecs--;              /* the marker gives way to a file that counts */
        struct bulk_file *b = &m->recs[m->nrecs++];
        *b = (struct bulk_file){ .task = r->tid, .fd = -1 };
        if (!reaches && !deleted)
            continue;
        if (m->nrecs > 1 && cmp_bulk(&m->recs[m->nrecs - 2], b) > 0)
            m->recs_sorted = false;
        b->fd = (int32_t)r->fd;
        b->dev = dev;
        b->type = (type >> 12) & 0xfu;
        b->buffered = (r->fmode & TASKS_FILE_FMODE_WRITE) && !(r->flags & O_DIRECT);
        if (deleted) {
            if (m->nbdel == m->bdel_cap) {
                m->bdel_cap = m->bdel_cap ? 2 * m->bdel_cap : 16;
                m->bdel = xreallocarray(m->bdel, m->bdel_cap, sizeof(*m->bdel));
            }
            m->bdel[m->nbdel++] = *r;
            b->del = (uint32_t)m->nbdel & ((1u << 27) - 1);
        }
    }
}

/* The entries of task among the bulk source's, or NULL: a binary search on the array,
 * sorted by task then fd. */
static const struct bulk_file *recs_of(const struct fdmap *m, pid_t task, size_t *n)
{
    size_t lo = 0, hi = m->nrecs;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (m->recs[mid].task < (uint32_t)task)
            lo = mid + 1;
        else
            hi = mid;
    }
    size_t end = lo;
    while (end < m->nrecs && m->recs[end].task == (uint32_t)task)
        end++;
    *n = end - lo;
    return *n ? &m->recs[lo] : NULL;
}

static void facts_of_bulk(const struct fdmap *m, const struct bulk_file *b, struct fd_facts *f)
{
    memset(f, 0, sizeof(*f));
    f->fd = b->fd;
    f->type = (mode_t)b->type << 12;
    f->nlink_known = true;
    f->nlink = b->del ? 0 : 1;
    f->dev = f->rdev = kdev(b->dev);
    f->buffered = b->buffered;
    if (b->del) {
        const struct tasks_file_rec *r = &m->bdel[b->del - 1];
        f->dev = kdev(r->dev);
        f->ino = (ino_t)r->ino;
        f->size = r->size;
        f->blocks_bytes = r->blocks * 512;
    }
}

/* A process's answer from the bulk source's records, when it has any for it: the same
 * per-file logic as the /proc scan, no system call. */
static bool scan_from_recs(struct fdmap *m, pid_t tgid, pid_t tid, double now, struct fd_devs *out)
{
    if (!m->bulk)
        return false;
    if (!m->recs_taken) {
        if (m->refresh_scans < m->bulk_after)
            return false;
        m->recs_taken = true;
        m->nrecs = m->nbdel = 0;
        m->recs_sorted = true;
        if (m->bulk(m->bulk_ctx, m) < 0)
            m->nrecs = m->nbdel = 0;
        else if (!m->recs_sorted)
            qsort(m->recs, m->nrecs, sizeof(*m->recs), cmp_bulk);
        m->stats.bulk_runs++;
    }
    size_t n;
    const struct bulk_file *r = recs_of(m, tid ? tid : tgid, &n);
    if (!r)
        return false;                /* no open file, or not visited: /proc says */
    memset(out, 0, sizeof(*out));
    m->stats.scans++;
    m->stats.bulk_scans++;
    if (m->ndeleted)
        drop_deleted(m, tgid);
    struct scan s = { .m = m, .tgid = tgid, .tid = tid, .now = now, .fdinfo_fd = -1, .out = out };
    for (size_t i = 0; i < n; i++) {
        if (r[i].fd < 0)
            continue;
        if (i >= FDMAP_MAX_FDS) {
            out->truncated = true;
            break;
        }
        struct fd_facts f;
        facts_of_bulk(m, &r[i], &f);
        m->stats.fds++;
        account_fd(&s, &f, -1, NULL);
    }
    return true;
}

static void scan_process(struct fdmap *m, pid_t tgid, pid_t tid, double now, struct fd_devs *out)
{
    if (scan_from_recs(m, tgid, tid, now, out))
        return;
    m->refresh_scans++;
    memset(out, 0, sizeof(*out));
    m->stats.scans++;
    if (m->ndeleted)
        drop_deleted(m, tgid);
    char path[48];
    task_dir(path, sizeof(path), tgid, tid, "fd");
    int dfd = openat(m->proc_fd, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0) {
        out->err = -errno;
        return;
    }
    struct scan s = { .m = m, .tgid = tgid, .tid = tid, .now = now, .fdinfo_fd = -1, .out = out };
    unsigned nfds = 0;
    int err = 0;
    struct dir_reader dr;
    dir_reader_init(&dr, dfd);
    for (;;) {
        const char *name = dir_reader_next(&dr);
        if (!name) {
            err = dr.err;           /* 0 at the end; -ENOENT when the process exited */
            break;
        }
        if (++nfds > FDMAP_MAX_FDS) {
            out->truncated = true;
            break;
        }
        if ((err = scan_fd(&s, dfd, name)))
            break;
    }
    close(dfd);
    if (s.fdinfo_fd >= 0)
        close(s.fdinfo_fd);
    if (err) {
        memset(out, 0, sizeof(*out));
        out->err = err;
        drop_deleted(m, tgid);
    }
}

/* ------------------------------------------------------------------------------------------ */
/* The API                                                                                     */
/* ------------------------------------------------------------------------------------------ */

int fdmap_new(struct fdmap **out, int proc_fd, int sys_fd, double rescan_s, size_t max_procs)
{
    if (!(rescan_s > 0) || proc_fd < 0 || sys_fd < 0 || max_procs > UINT32_MAX / 2)
        return -EINVAL;
    struct fdmap *m = xcalloc(1, sizeof(*m));
    m->proc_fd = proc_fd;
    m->sys_fd = sys_fd;
    m->rescan_s = rescan_s;
    m->idle_rescan_s = rescan_s;
    m->max_procs = max_procs ? max_procs : FDMAP_DEFAULT_MAX_PROCS;
    *out = m;
    return 0;
}

/* The first rescan of a process comes after this fraction of rescan_s, between 0.5 and 1,
 * fixed per pid: processes first seen together (all of them at start-up) then come due
 * over several refreshes instead of all in one, and stay spread. */
static double first_rescan_fraction(pid_t tgid)
{
    uint32_t h = (uint32_t)tgid * 2654435761u;
    return 0.5 + 0.5 * (double)(h >> 16) / 65536.0;
}

void fdmap_get_io(struct fdmap *m, pid_t tgid, pid_t tid, unsigned long long start_ticks, double now,
                  bool io_known, uint64_t io_sig, struct fd_devs *out)
{
    struct proc_entry *e = proc_find(m, tgid);
    bool same = e && e->start == start_ticks;
    if (same && now >= e->scanned) {
        bool due = now >= e->next_scan;
        /* Idle since its last scan: whatever it opened meanwhile carried no I/O. */
        if (due && io_known && e->io_known && io_sig == e->io_sig &&
            now - e->scanned < m->idle_rescan_s) {
            due = false;
            m->stats.idle_skips++;
        }
        if (!due) {
            e->seen = now;
            entry_load(e, out);
            m->stats.hits++;
            return;
        }
    }
    scan_process(m, tgid, tid == tgid ? 0 : tid, now, out);
    if (!e && !(e = proc_insert(m, tgid))) {
        m->stats.uncached++;
        return;
    }
    e->start = start_ticks;
    e->scanned = e->seen = now;
    e->next_scan = now + m->rescan_s * (same ? 1.0 : first_rescan_fraction(tgid));
    e->io_known = io_known;
    e->io_sig = io_sig;
    entry_store(e, out);
}

void fdmap_get(struct fdmap *m, pid_t tgid, unsigned long long start_ticks, double now,
               struct fd_devs *out)
{
    fdmap_get_io(m, tgid, 0, start_ticks, now, false, 0, out);
}

void fdmap_set_idle_rescan(struct fdmap *m, double idle_rescan_s)
{
    m->idle_rescan_s = idle_rescan_s > m->rescan_s ? idle_rescan_s : m->rescan_s;
}

/* Deleted files go with their process: also those of processes scanned but not stored
 * (the table was full), which are scanned again at their next fdmap_get. */
static void drop_unlisted_deleted(struct fdmap *m)
{
    size_t k = 0;
    for (size_t i = 0; i < m->ndeleted; i++)
        if (proc_find(m, m->deleted[i].tgid))
            m->deleted[k++] = m->deleted[i];
    m->ndeleted = k;
}

void fdmap_prune(struct fdmap *m, double now, double max_age_s)
{
    size_t k = 0;
    for (size_t i = 0; i < m->npents; i++) {
        if (m->pents[i].seen >= now - max_age_s)
            m->pents[k++] = m->pents[i];
        else
            entry_clear(&m->pents[i]);
    }
    if (k == m->npents) {
        drop_unlisted_deleted(m);
        return;
    }
    m->npents = k;
    /* Give memory back after a burst of short-lived processes. */
    size_t cap = m->pents_cap;
    while (cap > MIN_PROC_CAP && k < cap / 4)
        cap /= 2;
    if (cap != m->pents_cap)
        proc_resize(m, cap);
    else
        proc_reindex(m);
    drop_unlisted_deleted(m);
}

void fdmap_invalidate_devices(struct fdmap *m)
{
    dev_clear(m);
    for (size_t i = 0; i < m->npents; i++)
        m->pents[i].next_scan = -HUGE_VAL;
}

void fdmap_set_netfs(struct fdmap *m, const dev_t *devs, size_t n)
{
    if (n > FDMAP_MAX_WATCH)
        n = FDMAP_MAX_WATCH;
    bool same = n == m->nwatch;
    for (size_t i = 0; same && i < n; i++)
        same = watched(m, devs[i]);
    if (same)
        return;
    if (n)   /* devs may be NULL for none */
        memcpy(m->watch, devs, n * sizeof(devs[0]));
    m->nwatch = (unsigned)n;
    /* due at once, idle or not: an idle signature says nothing of the new set */
    for (size_t i = 0; i < m->npents; i++)
        m->pents[i].next_scan = m->pents[i].scanned = -HUGE_VAL;
}

void fdmap_get_stats(const struct fdmap *m, struct fdmap_stats *out)
{
    *out = m->stats;
    out->procs = m->npents;
    out->devs = m->ndents;
    out->bytes = sizeof(*m) + m->dents_cap * sizeof(m->dents[0]) +
                 m->pents_cap * sizeof(m->pents[0]) + m->proc_nslots * sizeof(m->proc_slots[0]);
    for (size_t i = 0; i < m->npents; i++)
        if (m->pents[i].full)
            out->bytes += sizeof(struct fd_devs);
    out->bytes += m->deleted_cap * sizeof(m->deleted[0]);
}

size_t fdmap_deleted(const struct fdmap *m, const struct fd_deleted **out)
{
    *out = m->deleted;
    return m->ndeleted;
}

void fdmap_set_bulk(struct fdmap *m, fdmap_bulk_fn fn, void *ctx, unsigned after)
{
    m->bulk = fn;
    m->bulk_ctx = ctx;
    m->bulk_after = after;
    fdmap_begin_refresh(m);
}

void fdmap_begin_refresh(struct fdmap *m)
{
    m->refresh_scans = 0;
    m->recs_taken = false;
    m->nrecs = m->nbdel = 0;
}

void fdmap_free(struct fdmap *m)
{
    if (!m)
        return;
    free(m->recs);
    free(m->bdel);
    free(m->deleted);
    free(m->dents);
    for (size_t i = 0; i < m->npents; i++)
        entry_clear(&m->pents[i]);
    free(m->pents);
    free(m->proc_slots);
    free(m);
}
