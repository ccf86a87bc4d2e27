/* SPDX-License-Identifier: GPL-2.0-or-later */
/* source/cgroups.c: task -> cgroup membership on a slow cadence, the set of cgroups a snapshot
 * shows, and their rates (cgroups.h). */
#include "source/cgroups.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util.h"

/* A cgroup the sampler has met: its path, its place in the tree and the controls last
 * read (they change rarely; read every rescan_s). */
struct cg_known {
    char *path;
    char *rel;                       /* relative to the hierarchy's root directory */
    int   parent;                    /* index in known[]; -1 for the root */
    int   depth;
    uint64_t id;                     /* cgroup_entry.id, read on the settings cadence */
    struct cgroup_names names;
    struct cgroup_settings settings;
    double settings_due;
    bool  iostat_absent;             /* io.stat was ENOENT: not asked again before settings_due */
    unsigned long used_gen;
    int   set_idx;                   /* index in the set being built */
    unsigned holds;                  /* listed tasks directly in it at the last take */
    struct psi_sample pressure;      /* io.pressure as last read or carried forward */
    unsigned long pressure_gen;      /* the take that set it */
    bool  quiet;                     /* its "some" total did not move in that take */
    int   fd[2];                     /* io.pressure and io.stat kept open (-1: not) */
};

/* Files kept open for the cgroups read every refresh: one pread instead of openat, read
 * and close, each a costly system call on a paravirtualised machine (bench/cgcost).
 * At most this many, and a quarter of the soft fd limit: the rest of the fd table is
 * the device handles' and /proc's. */
#define CG_FILES_MAX 512

/* A task's membership, in an array sorted by pid like the snapshot's tasks. */
struct task_cg {
    pid_t id;
    unsigned long long start_ticks;
    int   known;                     /* index into known[], -1 unknown */
    int   err;
};

struct cgroup_src {
    int proc_fd, sys_fd;
    double rescan_s;
    double hier_due;
    int   hier_err;                  /* no hierarchy: why */
    bool  v1_only;
    char  mount_root[CG_PATH_MAX];   /* mountinfo root field of the hierarchy shown */
    struct cgroup_mounts mounts;
    int   root_fd;                   /* the hierarchy shown */
    int   io_on_v2, memory_on_v2;
    int   costqos_err;
    struct cg_costqos costqos;
    struct cg_known *known;
    size_t nknown, capknown;
    size_t *slots;                   /* open addressing on path: index + 1, 0 empty */
    size_t nslots;
    struct task_cg *tasks;           /* by id, as the last take's tasks */
    size_t ntasks, tasks_cap;
    unsigned long gen;
    double verify_due;               /* next check of every membership (cgroup.procs) */
    int   nfiles, files_max;
};

/* A pid and the known[] cgroup whose listing holds it. */
struct listed {
    pid_t id;
    int   known;
};

static void rehash(struct cgroup_src *s)
{
    free(s->slots);
    s->nslots = 64;
    while (s->nslots < 2 * s->nknown + 2)
        s->nslots *= 2;
    s->slots = xcalloc(s->nslots, sizeof(*s->slots));
    for (size_t i = 0; i < s->nknown; i++) {
        size_t h = (size_t)hash_str(s->known[i].path) & (s->nslots - 1);
        while (s->slots[h])
            h = (h + 1) & (s->nslots - 1);
        s->slots[h] = i + 1;
    }
}

/* The known[] index of path, added (with its ancestors) when new; -1 when it cannot be
 * placed in the hierarchy shown. */
static int intern(struct cgroup_src *s, const char *path, double mono)
{
    if (!s->slots || 2 * (s->nknown + 1) > s->nslots)
        rehash(s);
    size_t h = (size_t)hash_str(path) & (s->nslots - 1);
    while (s->slots[h]) {
        if (strcmp(s->known[s->slots[h] - 1].path, path) == 0)
            return (int)(s->slots[h] - 1);
        h = (h + 1) & (s->nslots - 1);
    }
    char rel[CG_PATH_MAX];
    if (cgroup_rel_path(s->mount_root, path, rel, sizeof(rel)))
        return -1;
    int parent = -1;
    if (strcmp(path, "/") != 0) {
        char up[CG_PATH_MAX];
        str_copy(up, path, sizeof(up));
        char *slash = strrchr(up, '/');
        if (slash == up)
            up[1] = '\0';
        else if (slash)
            *slash = '\0';
        /* At the top of a subtree mounted in a namespace, the mount's root is the root. */
        if (cgroup_rel_path(s->mount_root, up, rel, sizeof(rel)) == 0) {
            parent = intern(s, up, mono);
            if (parent < 0)
                return -1;
        }
        cgroup_rel_path(s->mount_root, path, rel, sizeof(rel));
    }
    if (s->nknown == s->capknown) {
        s->capknown = s->capknown ? s->capknown * 2 : 64;
        s->known = xreallocarray(s->known, s->capknown, sizeof(*s->known));
    }
    struct cg_known *k = &s->known[s->nknown];
    memset(k, 0, sizeof(*k));
    k->path = xstrdup(path);
    k->rel = xstrdup(rel);
    k->parent = parent;
    k->depth = parent < 0 ? 0 : s->known[parent].depth + 1;
    cgroup_names_of(path, &k->names);
    k->settings_due = mono;          /* read at its first use */
    k->fd[0] = k->fd[1] = -1;
    s->nknown++;
    if (2 * s->nknown > s->nslots) {
        rehash(s);
    } else {
        h = (size_t)hash_str(path) & (s->nslots - 1);
        while (s->slots[h])
            h = (h + 1) & (s->nslots - 1);
        s->slots[h] = s->nknown;
    }
    return (int)(s->nknown - 1);
}

static void close_files(struct cgroup_src *s, struct cg_known *k)
{
    for (int f = 0; f < 2; f++)
        if (k->fd[f] >= 0) {
            close(k->fd[f]);
            k->fd[f] = -1;
            s->nfiles--;
        }
}

static void forget_known(struct cgroup_src *s)
{
    for (size_t i = 0; i < s->nknown; i++) {
        close_files(s, &s->known[i]);
        free(s->known[i].path);
        free(s->known[i].rel);
    }
    s->nknown = 0;
    free(s->slots);
    s->slots = NULL;
    s->nslots = 0;
}

/* Cgroups come and go (every container start makes some): drop those no listed task
 * was in for a while, keeping the indices the task cache holds valid. */
static void compact_known(struct cgroup_src *s)
{
    if (s->nknown < 1024)
        return;
    size_t used = 0;
    for (size_t i = 0; i < s->nknown; i++)
        used += s->known[i].used_gen == s->gen;
    if (s->nknown < 4 * used)
        return;
    int *map = xcalloc(s->nknown, sizeof(int));
    size_t n = 0;
    for (size_t i = 0; i < s->nknown; i++) {
        if (s->known[i].used_gen == s->gen) {
            map[i] = (int)n;
            s->known[n++] = s->known[i];   /* parents come first: already moved */
        } else {
            map[i] = -1;
            close_files(s, &s->known[i]);
            free(s->known[i].path);
            free(s->known[i].rel);
        }
    }
    for (size_t i = 0; i < n; i++)
        if (s->known[i].parent >= 0)
            s->known[i].parent = map[s->known[i].parent];
    for (size_t i = 0; i < s->ntasks; i++)
        if (s->tasks[i].known >= 0)
            s->tasks[i].known = map[s->tasks[i].known];
    s->nknown = n;
    free(map);
    rehash(s);
}

/* Mount table, the hierarchy shown and its root's files: on the slow cadence. */
static void read_hierarchy(struct cgroup_src *s, double mono)
{
    s->hier_due = mono + s->rescan_s;
    struct cgroup_mounts m;
    int err = cgroup_mounts_read(s->proc_fd, &m);
    const char *mp = NULL, *root = NULL;
    bool v1 = false;
    if (!err && m.has_v2) {
        mp = m.v2;
        root = m.v2_root;
    } else if (!err && m.has_blkio) {
        mp = m.blkio;
        root = m.blkio_root;
        v1 = true;
    }
    bool same = s->root_fd >= 0 && mp && strcmp(mp, s->mounts.has_v2 ? s->mounts.v2 : s->mounts.blkio) == 0 &&
                v1 == s->v1_only && strcmp(root, s->mount_root) == 0;
    s->mounts = m;
    if (!same) {
        /* Another hierarchy: every path and task membership read so far is void. */
        if (s->root_fd >= 0)
            close(s->root_fd);
        s->root_fd = -1;
        forget_known(s);
        for (size_t i = 0; i < s->ntasks; i++) {
            s->tasks[i].known = -1;
            s->tasks[i].err = 0;     /* read again at next sight */
        }
        s->hier_err = err ? err : mp ? 0 : -ENOENT;
        if (mp) {
            int fd = cgroup_open_mount(s->sys_fd, mp);
            if (fd < 0)
                s->hier_err = fd;
            else
                s->root_fd = fd;
            str_copy(s->mount_root, root, sizeof(s->mount_root));
        }
        s->v1_only = v1;
    }
    if (s->root_fd < 0 || v1) {
        s->io_on_v2 = s->memory_on_v2 = v1 ? 0 : -1;
        s->costqos_err = -ENOENT;
        memset(&s->costqos, 0, sizeof(s->costqos));
        return;
    }
    int io = cgroup_has_controller(s->root_fd, "io");
    int mem = cgroup_has_controller(s->root_fd, "memory");
    s->io_on_v2 = io < 0 ? -1 : io;
    s->memory_on_v2 = mem < 0 ? -1 : mem;
    s->costqos_err = cgroup_costqos_read(s->root_fd, &s->costqos);
}

struct cgroup_src *cgroups_open(int proc_fd, int sys_fd, double rescan_s)
{
    struct cgroup_src *s = xcalloc(1, sizeof(*s));
    s->proc_fd = proc_fd;
    s->sys_fd = sys_fd;
    s->rescan_s = rescan_s > 0 ? rescan_s : 5.0;
    s->root_fd = -1;
    s->hier_due = -1e300;
    s->verify_due = -1e300;
    struct rlimit rl;
    s->files_max = CG_FILES_MAX;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur / 4 < CG_FILES_MAX)
        s->files_max = (int)(rl.rlim_cur / 4);
    return s;
}

void cgroups_close(struct cgroup_src *s)
{
    if (!s)
        return;
    forget_known(s);
    free(s->known);
    free(s->tasks);
    if (s->root_fd >= 0)
        close(s->root_fd);
    free(s);
}

static void read_task(struct cgroup_src *s, const struct task_sample *t, double mono, struct task_cg *c)
{
    c->id = t->id;
    c->start_ticks = t->start_ticks;
    c->known = -1;
    struct cgroup_membership m;
    c->err = cgroup_proc_read(s->proc_fd, t->id, &m);
    if (c->err)
        return;
    const char *path = s->v1_only ? (m.has_blkio ? m.blkio : NULL) : (m.has_v2 ? m.v2 : NULL);
    if (!path) {
        c->err = -ENOENT;
        return;
    }
    c->known = intern(s, path, mono);
    if (c->known < 0)
        c->err = -ENOENT;       /* outside the subtree this namespace mounted */
}

static void join_path(char *out, size_t n, const char *rel, const char *file)
{
    snprintf(out, n, "%s/%s", rel, file);
}

/* Read file `name` of cgroup k through its kept-open fd (slot), opening it when the
 * budget allows. A kept fd of a cgroup removed meanwhile fails (ENODEV): it is closed
 * and the file read by path, which says what is there now. */
static ssize_t read_kept(struct cgroup_src *s, struct cg_known *k, int slot, const char *name,
                         char *buf, size_t cap)
{
    if (k->fd[slot] >= 0) {
        ssize_t n = pread(k->fd[slot], buf, cap - 1, 0);
        if (n >= 0) {
            buf[n] = '\0';
            return n;
        }
        close(k->fd[slot]);
        k->fd[slot] = -1;
        s->nfiles--;
    }
    char path[CG_PATH_MAX + 32];
    join_path(path, sizeof(path), k->rel, name);
    if (s->nfiles < s->files_max) {
        int fd = openat(s->root_fd, path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
            return -errno;
        ssize_t n = pread(fd, buf, cap - 1, 0);
        if (n < 0) {
            n = -errno;
            close(fd);
            return n;
        }
        buf[n] = '\0';
        k->fd[slot] = fd;
        s->nfiles++;
        return n;
    }
    return read_file_at(s->root_fd, path, buf, cap);
}

/* Read what changes every refresh (pressure, io.stat), and the controls when due. */
static void read_cgroup(struct cgroup_src *s, struct cg_known *k, double mono, struct cgroup_entry *e)
{
    char buf[8192];
    bool root = k->parent < 0;
    if (mono >= k->settings_due) {
        k->settings_due = mono + s->rescan_s;
        k->iostat_absent = false;
        /* The id the BPF lens names a cgroup by: a path removed and made again is another
         * cgroup, so read again on this cadence. */
        struct stat st;
        k->id = !s->v1_only && fstatat(s->root_fd, k->rel, &st, 0) == 0 ? (uint64_t)st.st_ino : 0;
        /* Without the io controller in the hierarchy no cgroup has its files (only
         * io.pressure, which is PSI's): not asked, as on this project's test machines. */
        bool no_io = !s->v1_only && s->io_on_v2 == 0;
        bool v2_root = root && !s->v1_only;     /* the root has none of the controls */
        int dfd = no_io || v2_root ? -ENOENT : openat(s->root_fd, k->rel, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (no_io || v2_root) {
            memset(&k->settings, 0, sizeof(k->settings));
            k->settings.iomax_err = k->settings.weight_err = k->settings.bfq_weight_err =
                k->settings.prio_err = -ENOENT;
            k->iostat_absent = no_io;
        } else if (dfd < 0) {
            memset(&k->settings, 0, sizeof(k->settings));
            k->settings.iomax_err = k->settings.weight_err = k->settings.bfq_weight_err =
                k->settings.prio_err = -errno;
        } else {
            if (s->v1_only)
                cgroup_settings_read_v1(dfd, &k->settings);
            else
                cgroup_settings_read(dfd, &k->settings);
            close(dfd);
        }
    }
    e->settings = k->settings;
    if (s->v1_only) {
        e->pressure.err = -ENOENT;   /* PSI files exist in v2 only */
        e->iostat_err = -ENOENT;
        return;
    }
    /* PSI is hierarchical: a task stalled anywhere below a cgroup makes the cgroup's own
     * "some" state active (kernel/sched/psi.c updates every ancestor's group). So when a
     * parent's "some" total did not move since the last take, no task below it stalled,
     * and its children's totals are where they were: carried forward, not read. On a
     * machine of 500 mostly quiet services only the stalling branches are read. */
    ssize_t n;
    const struct cg_known *pk = k->parent >= 0 ? &s->known[k->parent] : NULL;
    if (pk && pk->quiet && pk->pressure_gen == s->gen && k->pressure_gen == s->gen - 1 &&
        !k->pressure.err) {
        e->pressure = k->pressure;
        k->quiet = true;
    } else {
        n = read_kept(s, k, 0, "io.pressure", buf, sizeof(buf));
        if (n < 0) {
            memset(&e->pressure, 0, sizeof(e->pressure));
            e->pressure.err = (int)n;
        } else {
            psi_parse(buf, (size_t)n, &e->pressure);
        }
        k->quiet = k->pressure_gen == s->gen - 1 && !k->pressure.err && !e->pressure.err &&
                   e->pressure.some.valid && k->pressure.some.valid &&
                   e->pressure.some.total_us == k->pressure.some.total_us;
    }
    k->pressure = e->pressure;
    k->pressure_gen = s->gen;
    if (k->iostat_absent) {
        e->iostat_err = -ENOENT;
        return;
    }
    n = read_kept(s, k, 1, "io.stat", buf, sizeof(buf));
    if (n < 0) {
        e->iostat_err = (int)n;
        if (n == -ENOENT)
            k->iostat_absent = true;
    } else {
        struct cg_iostat st;
        e->iostat_err = cgroup_iostat_parse(buf, (size_t)n, &st);
        if (!e->iostat_err && st.n) {
            e->niostat = st.n;
            e->iostat_row = xreallocarray(NULL, st.n, sizeof(*e->iostat_row));
            memcpy(e->iostat_row, st.row, st.n * sizeof(*e->iostat_row));
        }
    }
}

/* Children in path order, after their parent: the tree as a list. */
static int cmp_known_path(const void *a, const void *b, void *ctx)
{
    const struct cgroup_src *s = ctx;
    const struct cg_known *x = &s->known[*(const int *)a], *y = &s->known[*(const int *)b];
    return strcmp(x->path, y->path);
}

static void tree_order(struct cgroup_src *s, int *used, size_t nused, int *out)
{
    /* Sort by path, then emit depth-first: each node's children are the used nodes whose
     * parent it is, linked in path order (positions in used[] + 1; 0 ends a list). */
    qsort_r(used, nused, sizeof(int), cmp_known_path, s);
    size_t *first = xcalloc(s->nknown + 1, sizeof(size_t));
    size_t *last = xcalloc(s->nknown + 1, sizeof(size_t));
    size_t *next = xcalloc(nused ? nused : 1, sizeof(size_t));
    size_t *cursor = xcalloc(nused ? nused : 1, sizeof(size_t));
    size_t *stack = xcalloc(nused ? nused : 1, sizeof(size_t));
    for (size_t i = 0; i < nused; i++) {
        int p = s->known[used[i]].parent;
        if (p < 0 || s->known[p].used_gen != s->gen)
            continue;
        if (!first[p])
            first[p] = i + 1;
        else
            next[last[p] - 1] = i + 1;
        last[p] = i + 1;
    }
    size_t k = 0;
    for (size_t r = 0; r < nused; r++) {
        int p = s->known[used[r]].parent;
        if (p >= 0 && s->known[p].used_gen == s->gen)
            continue;                 /* not a root of the listed tree */
        size_t sp = 0;
        out[k++] = used[r];
        cursor[r] = first[used[r]];
        stack[sp++] = r;
        while (sp) {
            size_t top = stack[sp - 1];
            size_t c = cursor[top];
            if (!c) {
                sp--;
                continue;
            }
            cursor[top] = next[c - 1];
            out[k++] = used[c - 1];
            cursor[c - 1] = first[used[c - 1]];
            stack[sp++] = c - 1;
        }
    }
    free(first);
    free(last);
    free(next);
    free(cursor);
    free(stack);
}

static int cmp_listed(const void *a, const void *b)
{
    const struct listed *x = a, *y = b;
    return (x->id > y->id) - (x->id < y->id);
}

/* The ids of one listing (cgroup.procs, cgroup.threads or v1's tasks), each put in
 * known[] cgroup k, appended to *v. */
static void add_listed(const char *buf, size_t len, int k, struct listed **v, size_t *n, size_t *cap)
{
    const char *p = buf, *end = buf + len;
    while (p < end) {
        uint64_t id;
        if (parse_u64(&p, end, &id) == 0 && id > 0 && id <= INT32_MAX) {
            if (*n == *cap) {
                *cap = *cap ? 2 * *cap : 1024;
                *v = xreallocarray(*v, *cap, sizeof(**v));
            }
            (*v)[(*n)++] = (struct listed){ (pid_t)id, k };
        }
        while (p < end && *p != '\n')
            p++;
        p++;
    }
}

static const char *listing_file(const struct cgroup_src *s, bool threads)
{
    return !threads ? "cgroup.procs" : s->v1_only ? "tasks" : "cgroup.threads";
}

/* Every member of the cgroups that held a task at the last take, from their listings
 * (cgroup.procs; cgroup.threads, or v1's tasks, for threads): one read per cgroup
 * instead of one /proc/PID/cgroup per task. Sorted by pid. */
static size_t list_members(struct cgroup_src *s, bool threads, struct listed **out)
{
    const char *file = listing_file(s, threads);
    struct listed *v = NULL;
    size_t n = 0, cap = 0;
    char path[CG_PATH_MAX + 32];
    for (size_t k = 0; k < s->nknown; k++) {
        if (!s->known[k].holds)
            continue;
        join_path(path, sizeof(path), s->known[k].rel, file);
        char *buf = NULL;
        ssize_t len = read_file_alloc_at(s->root_fd, path, &buf, 64u << 20);
        if (len < 0)
            continue;                /* gone: its tasks are read again one by one */
        add_listed(buf, (size_t)len, (int)k, &v, &n, &cap);
        free(buf);
    }
    if (n)
        qsort(v, n, sizeof(*v), cmp_listed);
    *out = v;
    return n;
}

/* ---- the whole tree's listings, for many new tasks at once ------------------------------ */

/* At the first take every task is new, and reading each one's /proc/PID/cgroup is the
 * largest per-task cost of the first sample (three or four system calls a task: at
 * 10,000 processes, tens of milliseconds). The hierarchy's own listings name the same
 * memberships at one read per cgroup: walked when at least CG_WALK_MIN tasks are new,
 * visiting at most one directory per two new tasks (a tree larger than that costs more
 * than the tasks' files) and CG_WALK_DEPTH levels. A task the walk did not list, or
 * listed twice (it moved during the walk), is read from its file as before. */
#define CG_WALK_MIN   64
#define CG_WALK_DEPTH 32

struct cg_walk {
    struct cgroup_src *s;
    const char *file;
    double mono;
    size_t dirs, max_dirs;
    struct listed *v;
    size_t n, cap;
};

/* The cgroup path (as /proc/PID/cgroup prints it) of directory rel below the mount. */
static void walk_path(const struct cgroup_src *s, const char *rel, char *out, size_t n)
{
    size_t rl = strlen(s->mount_root);
    while (rl > 0 && s->mount_root[rl - 1] == '/')
        rl--;
    if (strcmp(rel, ".") == 0)
        snprintf(out, n, "%.*s", rl ? (int)rl : 1, rl ? s->mount_root : "/");
    else
        snprintf(out, n, "%.*s/%s", (int)rl, s->mount_root, rel);
}

static void walk_dir(struct cg_walk *w, int fd, const char *rel, int depth)
{
    if (w->dirs++ >= w->max_dirs) {
        close(fd);
        return;
    }
    char *buf = NULL;
    ssize_t len = read_file_alloc_at(fd, w->file, &buf, 64u << 20);
    if (len > 0) {
        char path[CG_PATH_MAX];
        walk_path(w->s, rel, path, sizeof(path));
        int k = intern(w->s, path, w->mono);
        if (k >= 0)
            add_listed(buf, (size_t)len, k, &w->v, &w->n, &w->cap);
    }
    free(buf);
    DIR *d = depth < CG_WALK_DEPTH ? fdopendir(fd) : NULL;
    if (!d) {
        close(fd);
        return;
    }
    struct dirent *e;
    while ((e = readdir(d)) && w->dirs < w->max_dirs) {
        if (e->d_type != DT_DIR || e->d_name[0] == '.')
            continue;
        char sub[CG_PATH_MAX];
        int r = strcmp(rel, ".") == 0 ? snprintf(sub, sizeof(sub), "%s", e->d_name)
                                      : snprintf(sub, sizeof(sub), "%s/%s", rel, e->d_name);
        if (r < 0 || (size_t)r >= sizeof(sub))
            continue;
        int cfd = openat(dirfd(d), e->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (cfd >= 0)
            walk_dir(w, cfd, sub, depth + 1);
    }
    closedir(d);
}

/* Every member of the hierarchy's cgroups, sorted by pid, at most max_dirs of them read. */
static size_t walk_members(struct cgroup_src *s, bool threads, double mono, size_t max_dirs,
                           struct listed **out)
{
    struct cg_walk w = { .s = s, .file = listing_file(s, threads), .mono = mono, .max_dirs = max_dirs };
    int fd = openat(s->root_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0)
        walk_dir(&w, fd, ".", 0);
    if (w.n)
        qsort(w.v, w.n, sizeof(*w.v), cmp_listed);
    *out = w.v;
    return w.n;
}

/* The cgroup the walk's listing (sorted by pid) puts task id in; -1 when none, or more
 * than one (the task moved while the tree was read). */
static int walked_in(const struct listed *v, size_t n, pid_t id)
{
    size_t lo = LOWER_BOUND_ID(v, n, id, id);
    if (lo >= n || v[lo].id != id || (lo + 1 < n && v[lo + 1].id == id))
        return -1;
    return v[lo].known;
}

/* Does the listing put task id in cgroup k? */
static bool listed_in(const struct listed *v, size_t n, pid_t id, int k)
{
    size_t lo = LOWER_BOUND_ID(v, n, id, id);
    return lo < n && v[lo].id == id && v[lo].known == k;
}

struct cgroup_set *cgroups_take(struct cgroup_src *s, double mono_now, bool threads,
                                const struct task_sample *tasks, size_t ntasks)
{
    struct cgroup_set *set = xcalloc(1, sizeof(*set));
    double mono = mono_now;
    s->gen++;
    if (mono >= s->hier_due)
        read_hierarchy(s, mono);
    set->err = s->hier_err;
    set->v1_only = s->v1_only;
    str_copy(set->mount, s->mounts.has_v2 && !s->v1_only ? s->mounts.v2 : s->mounts.blkio, sizeof(set->mount));
    set->io_on_v2 = s->io_on_v2;
    set->memory_on_v2 = s->memory_on_v2;
    set->costqos_err = s->costqos_err;
    set->costqos = s->costqos;
    set->nmounts = s->mounts.nblock;
    set->mounts_truncated = s->mounts.block_truncated;
    memcpy(set->mounts, s->mounts.block, sizeof(set->mounts));
    set->ntasks = ntasks;
    set->task_cg = xcalloc(task_room(ntasks ? ntasks : 1), sizeof(int));
    set->task_err = xcalloc(task_room(ntasks ? ntasks : 1), sizeof(int));

    /* A task's cgroup is read from /proc/PID/cgroup when the task is new. Tasks rarely
     * move (a runtime or systemd moves one once, at its start), so every rescan_s the
     * listings of the cgroups that hold tasks are read instead, and only a task missing
     * from its cgroup's listing (it moved, or the cgroup went) is read again: at 10,000
     * tasks in 500 cgroups, 500 reads every rescan_s instead of 10,000 (bench/cgcost). */
    struct listed *lst = NULL;
    size_t nlst = 0;
    bool verify = s->root_fd >= 0 && mono >= s->verify_due;
    if (verify) {
        s->verify_due = mono + s->rescan_s;
        nlst = list_members(s, threads, &lst);
    }
    /* Many new tasks (the first take): their memberships from the tree's listings. */
    struct listed *walked = NULL;
    size_t nwalked = 0, nnew = 0;
    for (size_t i = 0, j = 0; s->root_fd >= 0 && i < ntasks; i++) {
        while (j < s->ntasks && s->tasks[j].id < tasks[i].id)
            j++;
        nnew += !(j < s->ntasks && s->tasks[j].id == tasks[i].id &&
                  s->tasks[j].start_ticks == tasks[i].start_ticks);
    }
    if (nnew >= CG_WALK_MIN)
        nwalked = walk_members(s, threads, mono, nnew / 2, &walked);
    /* The cache is updated in place, not copied: a second one while the tasks are walked
     * was 24 bytes a task more, and the two took turns with the result's block in the
     * heap, which grew to hold both. First the entries of the tasks still listed are
     * packed, in order, at the end of the room for this take's tasks; then each task's
     * entry is written from the start, never past the next packed one to read (the tasks
     * written so far are the packed ones read and at most the new ones). */
    size_t kept = 0;
    for (size_t i = 0, j = 0; j < s->ntasks; j++) {
        while (i < ntasks && tasks[i].id < s->tasks[j].id)
            i++;
        if (i < ntasks && tasks[i].id == s->tasks[j].id &&
            tasks[i].start_ticks == s->tasks[j].start_ticks) {
            s->tasks[kept++] = s->tasks[j];
            i++;
        }
    }
    size_t room = task_room(ntasks ? ntasks : 1);
    if (room > s->tasks_cap) {
        s->tasks = xreallocarray(s->tasks, room, sizeof(*s->tasks));
        s->tasks_cap = room;
    }
    struct task_cg *nt = s->tasks;
    memmove(&nt[ntasks - kept], nt, kept * sizeof(*nt));
    size_t j = ntasks - kept;        /* the next packed entry */
    for (size_t i = 0; i < ntasks; i++) {
        const struct task_sample *t = &tasks[i];
        struct task_cg cg = { 0 }, *c = &cg;     /* nt[i] once decided: o may be nt[i] */
        const struct task_cg *o = j < ntasks && nt[j].id == t->id &&
                                  nt[j].start_ticks == t->start_ticks ? &nt[j] : NULL;
        j += o != NULL;
        if (o && o->known >= 0 && (!verify || listed_in(lst, nlst, t->id, o->known)))
            *c = *o;
        else if (o && o->known < 0 && o->err && !verify)
            *c = *o;                 /* unreadable: tried again at the next check */
        else if (!o && (c->known = walked_in(walked, nwalked, t->id)) >= 0)
            *c = (struct task_cg){ .id = t->id, .start_ticks = t->start_ticks, .known = c->known };
        else if (s->root_fd >= 0)
            read_task(s, t, mono, c);
        else
            *c = (struct task_cg){ .id = t->id, .start_ticks = t->start_ticks, .known = -1,
                                   .err = s->hier_err };
        nt[i] = cg;
        set->task_err[i] = c->err;
        set->task_cg[i] = c->known;
        for (int k = c->known; k >= 0 && s->known[k].used_gen != s->gen; k = s->known[k].parent)
            s->known[k].used_gen = s->gen;
    }
    free(lst);
    free(walked);
    s->ntasks = ntasks;
    if (room < s->tasks_cap) {       /* fewer tasks: the room over is given back */
        s->tasks = xreallocarray(s->tasks, room, sizeof(*s->tasks));
        s->tasks_cap = room;
        nt = s->tasks;
    }
    for (size_t k = 0; k < s->nknown; k++)
        s->known[k].holds = 0;
    for (size_t i = 0; i < s->ntasks; i++)
        if (nt[i].known >= 0)
            s->known[nt[i].known].holds++;

    size_t nused = 0;
    for (size_t k = 0; k < s->nknown; k++)
        nused += s->known[k].used_gen == s->gen;
    int *used = xcalloc(nused ? nused : 1, sizeof(int));
    int *order = xcalloc(nused ? nused : 1, sizeof(int));
    nused = 0;
    for (size_t k = 0; k < s->nknown; k++)
        if (s->known[k].used_gen == s->gen)
            used[nused++] = (int)k;
    tree_order(s, used, nused, order);
    set->n = nused;
    set->v = xcalloc(nused ? nused : 1, sizeof(*set->v));
    for (size_t i = 0; i < nused; i++)
        s->known[order[i]].set_idx = (int)i;
    for (size_t i = 0; i < nused; i++) {
        struct cg_known *k = &s->known[order[i]];
        struct cgroup_entry *e = &set->v[i];
        e->path = xstrdup(k->path);
        e->parent = k->parent >= 0 && s->known[k->parent].used_gen == s->gen ? s->known[k->parent].set_idx : -1;
        e->depth = k->depth;
        e->names = k->names;
        read_cgroup(s, k, mono, e);
        e->id = k->id;
    }
    for (size_t i = 0; i < ntasks; i++) {
        if (set->task_cg[i] >= 0) {
            set->task_cg[i] = s->known[set->task_cg[i]].set_idx;
            set->v[set->task_cg[i]].ntasks++;
        }
    }
    free(used);
    free(order);
    /* Files of cgroups no longer shown are closed: the budget goes to those that are. */
    for (size_t k = 0; k < s->nknown; k++)
        if (s->known[k].used_gen != s->gen)
            close_files(s, &s->known[k]);
    compact_known(s);
    return set;
}

void cgroups_free(struct cgroup_set *set)
{
    if (!set)
        return;
    for (size_t i = 0; i < set->n; i++) {
        free(set->v[i].path);
        free(set->v[i].iostat_row);
    }
    free(set->v);
    free(set->named);
    free(set->task_cg);
    free(set->task_err);
    free(set);
}

/* ---- rates ----------------------------------------------------------------------------- */

int cgroups_prio_owner(const struct cgroup_set *set, size_t ti)
{
    if (!set || ti >= set->ntasks)
        return -1;
    /* The file exists where the io controller is enabled; a task's io state is that of
     * its nearest such ancestor. */
    int k = set->task_cg[ti];
    while (k >= 0 && set->v[k].settings.prio_err)
        k = set->v[k].parent;
    if (k < 0 || set->v[k].settings.prio == CGP_NO_CHANGE)
        return -1;
    return k;
}

bool cgroups_prio_effective(const struct cgroup_set *set, size_t ti, struct ioprio_eff *e)
{
    int k = cgroups_prio_owner(set, ti);
    if (k < 0)
        return false;
    int before = IOPRIO_MAKE(e->cls, e->level);
    int after = cgroup_prio_apply(set->v[k].settings.prio, before);
    if (after == before)
        return false;
    e->cls = (enum ioprio_class)IOPRIO_CLASS_OF(after);
    e->level = (int)IOPRIO_LEVEL_OF(after);
    e->source = IOS_CGROUP;
    return true;
}

/* The directory of cgroup `id` below the hierarchy's mount, as a path relative to it
 * (rel "." for the root). -errno when the kernel has no such directory, or it is not
 * below the mount this source reads. */
static int rel_of_id(const struct cgroup_src *s, uint64_t id, char *rel, size_t n)
{
    union {
        struct file_handle h;
        char room[sizeof(struct file_handle) + sizeof(uint64_t)];
    } u;
    memset(&u, 0, sizeof(u));
    u.h.handle_bytes = sizeof(uint64_t);
    u.h.handle_type = 0xfe;                      /* FILEID_KERNFS (include/linux/exportfs.h) */
    memcpy(u.h.f_handle, &id, sizeof(id));
    int fd = open_by_handle_at(s->root_fd, &u.h, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    char link[32], mnt[CG_PATH_MAX], dir[CG_PATH_MAX];
    snprintf(link, sizeof(link), "self/fd/%d", s->root_fd);
    ssize_t ml = readlinkat(s->proc_fd, link, mnt, sizeof(mnt) - 1);
    snprintf(link, sizeof(link), "self/fd/%d", fd);
    ssize_t dl = readlinkat(s->proc_fd, link, dir, sizeof(dir) - 1);
    int err = errno;
    close(fd);
    if (ml <= 0 || dl <= 0)
        return ml < 0 || dl < 0 ? -err : -ENOENT;
    if ((size_t)ml >= sizeof(mnt) - 1 || (size_t)dl >= sizeof(dir) - 1)
        return -ENAMETOOLONG;
    mnt[ml] = dir[dl] = '\0';
    size_t m = (size_t)ml;
    if (m == 1 && mnt[0] == '/')
        m = 0;                                   /* mounted at / (a container's view) */
    if (strncmp(dir, mnt, m) != 0 || (dir[m] != '/' && dir[m] != '\0'))
        return -EXDEV;
    /* a directory removed since reads "... (deleted)": gone */
    const char *del = " (deleted)";
    size_t dn = (size_t)dl, k = strlen(del);
    if (dn >= k && strcmp(dir + dn - k, del) == 0)
        return -ENOENT;
    const char *r = dir[m] ? dir + m + 1 : ".";
    if (!*r)
        r = ".";
    if (strlen(r) >= n)
        return -ENAMETOOLONG;
    snprintf(rel, n, "%s", r);
    return 0;
}

void cgroups_name_ids(const struct cgroup_src *src, struct cgroup_set *set, const uint64_t *ids,
                      size_t n)
{
    if (!src || !set || set->v1_only || src->v1_only || src->root_fd < 0)
        return;
    for (size_t i = 0; i < n && set->nnamed < CG_NAMED_MAX; i++) {
        uint64_t id = ids[i];
        if (!id || cgroups_path_of(set, id))
            continue;
        bool tried = false;              /* an id asked twice in one take: once */
        for (size_t j = 0; j < i && !tried; j++)
            tried = ids[j] == id;
        char rel[CG_PATH_MAX];
        if (tried || rel_of_id(src, id, rel, sizeof(rel)) < 0)
            continue;
        set->named = xreallocarray(set->named, set->nnamed + 1, sizeof(*set->named));
        struct cg_named *c = &set->named[set->nnamed++];
        c->id = id;
        walk_path(src, rel, c->path, sizeof(c->path));
    }
}

const char *cgroups_path_of(const struct cgroup_set *set, uint64_t id)
{
    int k = cgroups_find_id(set, id);
    if (k >= 0)
        return set->v[k].path;
    for (size_t i = 0; id && set && i < set->nnamed; i++)
        if (set->named[i].id == id)
            return set->named[i].path;
    return NULL;
}

int cgroups_find_id(const struct cgroup_set *set, uint64_t id)
{
    for (size_t i = 0; id && set && i < set->n; i++)
        if (set->v[i].id == id)
            return (int)i;
    return -1;
}
