/* SPDX-License-Identifier: GPL-2.0-or-later */
/* audit/unitpath.c: the systemd unit load path under a root: unit directories, aliases,
 * masks, linked unit files, templates and drop-in directories; each file found is handed
 * to the parser (audit/unitfile.c). The rules followed are in the header. */
#include "audit/unitpath.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "util.h"

/* systemd's system unit load path (systemd-analyze unit-paths), highest precedence first,
 * without the runtime-only control, transient and generator directories. */
static const char *const unit_dirs[] = {
    "/etc/systemd/system",
    "/run/systemd/system",
    "/usr/local/lib/systemd/system",
    "/lib/systemd/system",
    "/usr/lib/systemd/system",
};
#define NDIRS       ARRAY_SIZE(unit_dirs)
#define ALIAS_HOPS  8
#define SYMLINK_MAX 40              /* the kernel's limit on links in one lookup */
#define EXPAND_MAX  32              /* drop-in directory names derived from one unit name */
#define DROPINS_SEEN_MAX (UNITS_DROPINS_MAX * 16)   /* drop-in names looked at per unit */

enum ent_kind { E_FILE, E_MASK, E_ALIAS, E_LINK, E_DROPDIR };

/* One directory entry of interest. */
struct ent {
    char         *name;             /* unit name; for E_DROPDIR the name without ".d" */
    unsigned      dir;              /* index into unit_dirs */
    enum ent_kind kind;
    char         *target;           /* E_ALIAS: the aliased name; E_LINK: the path to follow */
    long          canon;            /* index into scan.canon, or -1 */
};

/* A unit backed by a file: an E_FILE or E_LINK entry, with the names that reach it. */
struct canon {
    struct ent *e;
    char      **names;              /* e->name first, then aliases in name order */
    unsigned    nnames;
    char       *path;               /* the main file, as the load path names it */
    dev_t       dev;
    ino_t       ino;
    bool        skip;               /* masked, unreadable, or merged into another */
};

struct conf {
    char *name;                     /* file name: the order and the override key */
    char *path;
    bool  mask;                     /* symlink to /dev/null: hides the name, applies nothing */
};

struct scan {
    int              root;
    DIR             *dirs[NDIRS];   /* NULL: absent, or the same directory as an earlier one */
    struct ent      *units, *drops;
    size_t           nunits, ndrops, capu, capd;
    struct canon    *canon;
    size_t           ncanon, capc;
    size_t           nentries;
    size_t           capunits, capmasked, capproblems;
    struct unit_list *out;
};

static void *grow(void *p, size_t n, size_t *cap, size_t size)
{
    if (n < *cap)
        return p;
    *cap = *cap ? *cap * 2 : 16;
    return xreallocarray(p, *cap, size);
}

static char *join(const char *a, const char *b, const char *c)
{
    size_t la = strlen(a), lb = strlen(b), lc = strlen(c);
    char *s = xmalloc(la + 1 + lb + lc + 1);
    memcpy(s, a, la);
    s[la] = '/';
    memcpy(s + la + 1, b, lb);
    memcpy(s + la + 1 + lb, c, lc + 1);
    return s;
}

static void problem(struct scan *sc, const char *path, unsigned line, int err, const char *what)
{
    struct unit_list *o = sc->out;
    if (o->nproblems >= UNITS_PROBLEMS_MAX) {
        o->nproblems_lost++;
        return;
    }
    o->problems = grow(o->problems, o->nproblems, &sc->capproblems, sizeof(*o->problems));
    o->problems[o->nproblems++] = (struct unit_problem){ xstrdup(path), line, err, what,
                                                         NULL, NULL };
}

/* A unit systemd refuses to load: the problem names the line at fault and why, so the
 * report is complete where it is printed. */
static void problem_refused(struct scan *sc, const struct unit_sched *s, const char *path)
{
    struct unit_list *o = sc->out;
    size_t before = o->nproblems;
    problem(sc, path, s->load_error_at.line, s->load_error, "systemd refuses to load this unit");
    if (o->nproblems == before)
        return;
    for (unsigned i = 0; i < s->ninvalid; i++) {
        const struct unit_invalid *iv = &s->invalid[i];
        if (!iv->fatal)
            continue;
        struct unit_problem *p = &o->problems[before];
        p->why = iv->why;
        if (!iv->key[0] && !iv->text[0])
            break;                  /* about the whole unit: the reason says it all */
        size_t n = strlen(iv->key) + 1 + strlen(iv->text) + 1;
        p->setting = xmalloc(n);
        snprintf(p->setting, n, "%s%s%s", iv->key, iv->key[0] ? "=" : "", iv->text);
        break;
    }
}

static void add_masked(struct scan *sc, const char *name, const char *path)
{
    struct unit_list *o = sc->out;
    o->masked = grow(o->masked, o->nmasked, &sc->capmasked, sizeof(*o->masked));
    o->masked[o->nmasked++] = (struct unit_masked){ xstrdup(name), xstrdup(path) };
}

/* ---- paths inside the root ------------------------------------------------------------ */

/* Textual "." and ".." resolution of an absolute path, never above "/". In place. */
static void normalize_abs(char *p)
{
    char *w = p;                    /* p[0] == '/'; w ends the output, without a slash */
    const char *r = p;
    while (*r) {
        r += strspn(r, "/");
        size_t n = strcspn(r, "/");
        if (n == 0 || (n == 1 && r[0] == '.')) {
            r += n;
            continue;
        }
        if (n == 2 && r[0] == '.' && r[1] == '.') {
            while (w > p && *--w != '/')
                ;
            r += n;
            continue;
        }
        *w++ = '/';
        memmove(w, r, n);
        w += n;
        r += n;
    }
    if (w == p)
        *w++ = '/';
    *w = '\0';
}

/* The target of the symlink at rel (inside root) followed by "/" and rest: what remains to
 * walk after meeting the link. NULL with errno set when the link cannot be read. */
static char *splice_link(int root, const char *rel, const char *rest, bool *absolute)
{
    char target[PATH_MAX];
    ssize_t tl = readlinkat(root, rel, target, sizeof(target) - 1);
    if (tl <= 0) {
        if (tl == 0)
            errno = ENOENT;
        return NULL;
    }
    size_t rl = strlen(rest);
    char *next = xmalloc((size_t)tl + 1 + rl + 1);
    memcpy(next, target, (size_t)tl);
    next[tl] = '/';
    memcpy(next + tl + 1, rest, rl + 1);
    *absolute = target[0] == '/';
    return next;
}

/* Resolve an absolute path inside root: every symlink is followed with an absolute target
 * starting again at root and ".." stopping there, the rule of openat2(RESOLVE_IN_ROOT),
 * done by hand because valgrind and kernels before 5.6 lack that call. At most SYMLINK_MAX
 * links. Leaves the path relative to root in out ("" for the root itself) and its lstat in
 * *st. Returns 0, -errno, or, when masks is set, 1 as soon as the path reaches the root's
 * /dev/null. */
static int resolve_in_root(int root, const char *path, char out[PATH_MAX], struct stat *st,
                           bool masks)
{
    char *todo = xstrdup(path);
    const char *p = todo;
    size_t dn = 0;
    int links = 0, r = 0;
    out[0] = '\0';
    for (;;) {
        p += strspn(p, "/");
        if (!*p)
            break;
        size_t n = strcspn(p, "/");
        if (n == 1 && p[0] == '.') {
            p += n;
            continue;
        }
        if (n == 2 && p[0] == '.' && p[1] == '.') {
            while (dn && out[dn - 1] != '/')
                dn--;
            if (dn)
                dn--;
            out[dn] = '\0';
            p += n;
            continue;
        }
        size_t before = dn;
        if (dn + 1 + n >= PATH_MAX) {
            r = -ENAMETOOLONG;
            break;
        }
        if (dn)
            out[dn++] = '/';
        memcpy(out + dn, p, n);
        dn += n;
        out[dn] = '\0';
        p += n;
        if (masks && strcmp(out, "dev/null") == 0) {
            r = 1;                  /* a mask, whether or not the root has a /dev */
            break;
        }
        if (fstatat(root, out, st, AT_SYMLINK_NOFOLLOW) < 0) {
            r = -errno;
            break;
        }
        if (!S_ISLNK(st->st_mode))
            continue;
        bool absolute;
        char *next = ++links > SYMLINK_MAX ? NULL : splice_link(root, out, p, &absolute);
        if (!next) {
            r = links > SYMLINK_MAX ? -ELOOP : -errno;
            break;
        }
        free(todo);
        todo = next;
        p = todo;
        dn = absolute ? 0 : before;
        out[dn] = '\0';
    }
    free(todo);
    if (r == 0 && fstatat(root, dn ? out : ".", st, AT_SYMLINK_NOFOLLOW) < 0)
        r = -errno;
    return r;
}

/* Open a directory or regular file at an absolute path inside root (see resolve_in_root).
 * Returns the fd, -errno (-ENOTDIR or -EINVAL when it is not what was asked for, so no
 * FIFO or device is ever opened), or -ENODEV for the root's /dev/null. */
static int open_in_root(int root, const char *path, bool dir)
{
    char rel[PATH_MAX];
    struct stat st;
    int r = resolve_in_root(root, path, rel, &st, true);
    if (r == 1)
        return -ENODEV;
    if (r < 0)
        return r;
    if (dir ? !S_ISDIR(st.st_mode) : !S_ISREG(st.st_mode))
        return dir ? -ENOTDIR : S_ISCHR(st.st_mode) && st.st_rdev == makedev(1, 3) ? -ENODEV
                                                                                 : -EINVAL;
    int fd = openat(root, rel[0] ? rel : ".",
                    O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NOFOLLOW | O_NONBLOCK |
                        (dir ? O_DIRECTORY : 0));
    return fd < 0 ? -errno : fd;
}

/* The whole file, NUL-terminated, refusing more than UNITS_FILE_MAX bytes. */
static ssize_t read_all(int fd, char **out)
{
    struct stat st;
    if (fstat(fd, &st) < 0)
        return -errno;
    if (st.st_size > (off_t)UNITS_FILE_MAX)
        return -EFBIG;
    size_t cap = (size_t)st.st_size + 1, len = 0;
    char *buf = xmalloc(cap);
    for (;;) {
        if (len + 1 == cap) {
            if (cap > UNITS_FILE_MAX) {         /* it grew past the limit while we read */
                free(buf);
                return -EFBIG;
            }
            cap = cap * 2 > UNITS_FILE_MAX + 1 ? UNITS_FILE_MAX + 2 : cap * 2;
            buf = xrealloc(buf, cap);
        }
        ssize_t r = read(fd, buf + len, cap - 1 - len);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
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

/* ---- listing the unit directories ------------------------------------------------------ */

static void add_ent(struct scan *sc, bool drop, char *name, unsigned d, enum ent_kind kind,
                    char *target)
{
    struct ent e = { name, d, kind, target, -1 };
    if (drop) {
        sc->drops = grow(sc->drops, sc->ndrops, &sc->capd, sizeof(*sc->drops));
        sc->drops[sc->ndrops++] = e;
    } else {
        sc->units = grow(sc->units, sc->nunits, &sc->capu, sizeof(*sc->units));
        sc->units[sc->nunits++] = e;
    }
}

static bool in_unit_dir(const char *abs_dir)
{
    for (size_t i = 0; i < NDIRS; i++)
        if (strcmp(abs_dir, unit_dirs[i]) == 0)
            return true;
    return false;
}

/* A symlink named like a unit: a mask, an alias (target in a unit directory under another
 * name, systemd.unit(5) "UNIT FILE LOAD PATH") or a linked unit file to follow. */
static void classify_link(struct scan *sc, unsigned d, int dfd, const char *name)
{
    char t[PATH_MAX];
    ssize_t l = readlinkat(dfd, name, t, sizeof(t) - 1);
    if (l < 0) {
        char *path = join(unit_dirs[d], name, "");
        problem(sc, path, 0, -errno, "cannot read the symlink");
        free(path);
        return;
    }
    t[l] = '\0';
    char *abs = t[0] == '/' ? xstrdup(t) : join(unit_dirs[d], t, "");
    normalize_abs(abs);
    if (strcmp(abs, "/dev/null") == 0) {
        free(abs);
        add_ent(sc, false, xstrdup(name), d, E_MASK, NULL);
        return;
    }
    char *slash = strrchr(abs, '/');
    *slash = '\0';
    bool alias = in_unit_dir(abs) && strcmp(slash + 1, name) != 0;
    *slash = '/';
    if (alias && units_type_of(slash + 1) != units_type_of(name)) {
        char *path = join(unit_dirs[d], name, "");
        problem(sc, path, 0, -EINVAL, "alias to a unit of another type: ignored");
        free(path);
        free(abs);
        return;
    }
    if (alias) {
        add_ent(sc, false, xstrdup(name), d, E_ALIAS, xstrdup(slash + 1));
        free(abs);
    } else {
        add_ent(sc, false, xstrdup(name), d, E_LINK, abs);
    }
}

static unsigned char entry_type(int dfd, const struct dirent *de)
{
    if (de->d_type != DT_UNKNOWN)
        return de->d_type;
    struct stat st;
    if (fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
        return DT_UNKNOWN;
    return S_ISDIR(st.st_mode) ? DT_DIR : S_ISLNK(st.st_mode) ? DT_LNK
                                        : S_ISREG(st.st_mode) ? DT_REG : DT_UNKNOWN;
}

static void list_unit_dir(struct scan *sc, unsigned d)
{
    int dfd = dirfd(sc->dirs[d]);
    struct dirent *de;
    while ((de = readdir(sc->dirs[d]))) {
        const char *n = de->d_name;
        size_t l = strlen(n);
        if (n[0] == '.' || l > NAME_MAX)
            continue;
        if (++sc->nentries > UNITS_NAMES_MAX) {
            sc->out->truncated = true;
            problem(sc, unit_dirs[d], 0, -E2BIG,
                    "too many entries in the unit directories: the rest is not read");
            return;
        }
        unsigned char type = entry_type(dfd, de);
        if (l > 2 && strcmp(n + l - 2, ".d") == 0) {          /* NAME.d drop-in directory */
            char *base = xstrndup(n, l - 2);
            if (units_type_of(base) >= 0 && (type == DT_DIR || type == DT_LNK))
                add_ent(sc, true, base, d, E_DROPDIR, NULL);
            else
                free(base);
            continue;
        }
        if (units_type_of(n) < 0)
            continue;
        if (type == DT_REG)
            add_ent(sc, false, xstrdup(n), d, E_FILE, NULL);
        else if (type == DT_LNK)
            classify_link(sc, d, dfd, n);
    }
}

/* Open the unit directories; one that is the same directory as an earlier one (/lib and
 * /usr/lib on merged-/usr systems) is left out, so nothing is read twice. */
static unsigned open_unit_dirs(struct scan *sc)
{
    struct stat seen[NDIRS];
    unsigned n = 0;
    for (unsigned d = 0; d < NDIRS; d++) {
        int fd = open_in_root(sc->root, unit_dirs[d], true);
        if (fd < 0) {
            if (fd != -ENOENT && fd != -ENOTDIR)
                problem(sc, unit_dirs[d], 0, fd, "cannot open the unit directory");
            continue;
        }
        struct stat st;
        bool dup = fstat(fd, &st) < 0;
        for (unsigned i = 0; i < n && !dup; i++)
            dup = seen[i].st_dev == st.st_dev && seen[i].st_ino == st.st_ino;
        if (dup || !(sc->dirs[d] = fdopendir(fd))) {
            close(fd);
            continue;
        }
        seen[n++] = st;
    }
    return n;
}

static int cmp_ent(const void *a, const void *b)
{
    const struct ent *x = a, *y = b;
    int c = strcmp(x->name, y->name);
    return c ? c : (x->dir > y->dir) - (x->dir < y->dir);
}

static int cmp_name(const void *key, const void *b)
{
    return strcmp(key, ((const struct ent *)b)->name);
}

/* Sort by name then precedence, and keep the first of each name: a higher-precedence
 * directory hides the same name lower down. */
static void sort_units(struct scan *sc)
{
    if (sc->nunits)
        qsort(sc->units, sc->nunits, sizeof(*sc->units), cmp_ent);
    if (sc->ndrops)
        qsort(sc->drops, sc->ndrops, sizeof(*sc->drops), cmp_ent);
    size_t w = 0;
    for (size_t i = 0; i < sc->nunits; i++) {
        if (w && strcmp(sc->units[w - 1].name, sc->units[i].name) == 0) {
            free(sc->units[i].name);
            free(sc->units[i].target);
            continue;
        }
        sc->units[w++] = sc->units[i];
    }
    sc->nunits = w;
}

static struct ent *find_unit(struct scan *sc, const char *name)
{
    return sc->nunits ? bsearch(name, sc->units, sc->nunits, sizeof(*sc->units), cmp_name)
                      : NULL;
}

static bool has_dropdir(struct scan *sc, const char *name, unsigned d)
{
    struct ent key = { .name = (char *)(uintptr_t)name, .dir = d };
    return sc->ndrops && bsearch(&key, sc->drops, sc->ndrops, sizeof(*sc->drops), cmp_ent);
}

/* ---- names: aliases, masks, real files ------------------------------------------------- */

static void canon_add_name(struct canon *c, const char *name)
{
    c->names = xreallocarray(c->names, c->nnames + 1, sizeof(*c->names));
    c->names[c->nnames++] = xstrdup(name);
}

/* Follow an alias to the entry that ends the chain, or NULL (dangling: systemd allows it;
 * a loop or a chain too long: reported). */
static struct ent *follow_alias(struct scan *sc, struct ent *e)
{
    struct ent *cur = e;
    for (int hop = 0; hop < ALIAS_HOPS; hop++) {
        struct ent *t = find_unit(sc, cur->target);
        if (!t || t->kind != E_ALIAS)
            return t;
        cur = t;
    }
    char *path = join(unit_dirs[e->dir], e->name, "");
    problem(sc, path, 0, -ELOOP, "alias chain longer than 8 links, or a loop: ignored");
    free(path);
    return NULL;
}

/* The name systemd gives a unit's file ("Fragment Path"): the entry itself, except for a
 * link to the same name in another unit directory, which is named by its target. */
static char *main_path(const struct ent *e)
{
    if (e->kind == E_LINK) {
        const char *slash = strrchr(e->target, '/');
        char *dir = xstrndup(e->target, (size_t)(slash - e->target));
        bool same_name_elsewhere = in_unit_dir(dir);
        free(dir);
        if (same_name_elsewhere)
            return xstrdup(e->target);
    }
    return join(unit_dirs[e->dir], e->name, "");
}

static void resolve_names(struct scan *sc)
{
    for (size_t i = 0; i < sc->nunits; i++) {
        struct ent *e = &sc->units[i];
        if (e->kind != E_FILE && e->kind != E_LINK)
            continue;
        sc->canon = grow(sc->canon, sc->ncanon, &sc->capc, sizeof(*sc->canon));
        struct canon *c = &sc->canon[sc->ncanon];
        memset(c, 0, sizeof(*c));
        c->e = e;
        c->path = main_path(e);
        canon_add_name(c, e->name);
        e->canon = (long)sc->ncanon++;
    }
    for (size_t i = 0; i < sc->nunits; i++) {
        struct ent *e = &sc->units[i];
        struct ent *t = e->kind == E_ALIAS ? follow_alias(sc, e) : e->kind == E_MASK ? e : NULL;
        if (!t)
            continue;
        if (t->kind == E_MASK) {
            char *path = join(unit_dirs[t->dir], t->name, "");
            add_masked(sc, e->name, path);
            free(path);
        } else if (e != t) {
            canon_add_name(&sc->canon[t->canon], e->name);
        }
    }
}

/* Find each unit's real file; an empty file or a link ending at /dev/null masks it. */
static void stat_canon(struct scan *sc, struct canon *c)
{
    int fd = open_in_root(sc->root, c->path, false);
    struct stat st;
    if (fd >= 0 && fstat(fd, &st) < 0)
        st.st_size = -1;
    if (fd >= 0)
        close(fd);
    if (fd == -ENODEV || (fd >= 0 && st.st_size == 0)) {
        for (unsigned i = 0; i < c->nnames; i++)
            add_masked(sc, c->names[i], c->path);
        c->skip = true;
        return;
    }
    if (fd < 0 || st.st_size < 0) {
        problem(sc, c->path, 0, fd < 0 ? fd : -EIO,
                fd == -EINVAL ? "unit file is not a regular file" : "cannot open the unit file");
        c->skip = true;
        return;
    }
    c->dev = st.st_dev;
    c->ino = st.st_ino;
}

static int cmp_canon_inode(const void *a, const void *b)
{
    const struct canon *x = *(struct canon *const *)a, *y = *(struct canon *const *)b;
    if (x->dev != y->dev)
        return x->dev < y->dev ? -1 : 1;
    if (x->ino != y->ino)
        return x->ino < y->ino ? -1 : 1;
    return x < y ? -1 : x > y;      /* canon is in name order: the first name keeps it */
}

/* Two names that reach one real file are one unit: the later names join the first. */
static void merge_same_files(struct scan *sc)
{
    struct canon **by = xcalloc(sc->ncanon, sizeof(*by));
    size_t n = 0;
    for (size_t i = 0; i < sc->ncanon; i++)
        if (!sc->canon[i].skip)
            by[n++] = &sc->canon[i];
    if (n)
        qsort(by, n, sizeof(*by), cmp_canon_inode);
    for (size_t i = 1; i < n; i++) {
        struct canon *keep = by[i - 1], *c = by[i];
        if (c->dev != keep->dev || c->ino != keep->ino)
            continue;
        for (unsigned k = 0; k < c->nnames; k++)
            canon_add_name(keep, c->names[k]);
        c->skip = true;
        by[i] = keep;               /* a third name joins the same one */
    }
    free(by);
}

/* ---- drop-ins ------------------------------------------------------------------------- */

/* The unit names whose NAME.d directories apply, most specific first, as systemd's
 * unit_file_expand_dropin_names(): the name, its template when it is an instance, and the
 * names cut after each dash ("a-b-c.service": "a-b-.service", "a-.service"). */
static void expand_names(const char *name, char **v, size_t *n)
{
    if (*n >= EXPAND_MAX)
        return;
    v[(*n)++] = xstrdup(name);
    const char *dot = strrchr(name, '.'), *at = strchr(name, '@');
    if (!dot || (at && at > dot))
        return;
    bool instance = at && at + 1 < dot;
    if (instance) {                                  /* "a@x.service" -> "a@.service" */
        char *tmpl = xmalloc(strlen(name) + 1);
        size_t pl = (size_t)(at - name) + 1;
        memcpy(tmpl, name, pl);
        strcpy(tmpl + pl, dot);
        expand_names(tmpl, v, n);
        free(tmpl);
    }
    size_t plen = (size_t)((at ? at : dot) - name);
    char *prefix = xstrndup(name, plen);
    bool chopped = false, found = false;
    for (;;) {
        char *dash = strrchr(prefix, '-');
        if (!dash || dash == prefix)
            break;
        if (dash[1] != '\0' || chopped) {            /* keep up to and with the dash */
            dash[1] = '\0';
            found = true;
            break;
        }
        *dash = '\0';                                /* a trailing dash: cut it, once */
        chopped = true;
    }
    if (found) {
        const char *inst = instance ? at : "";
        size_t il = instance ? (size_t)(dot - at) : 0;
        char *built = xmalloc(strlen(prefix) + il + strlen(dot) + 1);
        strcpy(built, prefix);
        memcpy(built + strlen(prefix), inst, il);
        strcpy(built + strlen(prefix) + il, dot);
        expand_names(built, v, n);
        free(built);
    }
    free(prefix);
}

static bool conf_seen(const struct conf *confs, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(confs[i].name, name) == 0)
            return true;
    return false;
}

static bool is_devnull_link(int dfd, const char *name)
{
    char t[16];
    ssize_t l = readlinkat(dfd, name, t, sizeof(t) - 1);
    if (l <= 0)
        return false;
    t[l] = '\0';
    return strcmp(t, "/dev/null") == 0;
}

/* Add the .conf files of one drop-in directory whose names are not taken yet. */
static void list_confs(struct scan *sc, const char *dpath, struct conf **confs, size_t *n)
{
    int fd = open_in_root(sc->root, dpath, true);
    if (fd < 0) {
        if (fd != -ENOENT && fd != -ENOTDIR)
            problem(sc, dpath, 0, fd, "cannot open the drop-in directory");
        return;
    }
    DIR *dir = fdopendir(fd);
    if (!dir) {
        close(fd);
        return;
    }
    struct dirent *de;
    while ((de = readdir(dir))) {
        const char *name = de->d_name;
        size_t l = strlen(name);
        if (name[0] == '.' || l <= 5 || strcmp(name + l - 5, ".conf") != 0 ||
            conf_seen(*confs, *n, name) || entry_type(fd, de) == DT_DIR)
            continue;
        if (*n >= DROPINS_SEEN_MAX) {
            sc->out->truncated = true;
            problem(sc, dpath, 0, -E2BIG, "too many drop-ins: the rest is not read");
            break;
        }
        *confs = xreallocarray(*confs, *n + 1, sizeof(**confs));
        (*confs)[(*n)++] = (struct conf){ xstrdup(name), join(dpath, name, ""),
                                          is_devnull_link(fd, name) };
    }
    closedir(dir);
}

static int cmp_conf(const void *a, const void *b)
{
    return strcmp(((const struct conf *)a)->name, ((const struct conf *)b)->name);
}

/* The drop-ins of a unit, in the order systemd reads the directories (each name, every
 * unit directory by precedence, every derived name), the first of each file name kept;
 * then sorted by file name. */
static size_t collect_dropins(struct scan *sc, const struct canon *c, struct conf **confs)
{
    size_t n = 0;
    for (unsigned k = 0; k < c->nnames; k++) {
        char *names[EXPAND_MAX];
        size_t nn = 0;
        expand_names(c->names[k], names, &nn);
        for (unsigned d = 0; d < NDIRS; d++) {
            for (size_t j = 0; j < nn && sc->dirs[d]; j++) {
                if (!has_dropdir(sc, names[j], d))
                    continue;
                char *dpath = join(unit_dirs[d], names[j], ".d");
                list_confs(sc, dpath, confs, &n);
                free(dpath);
            }
        }
        for (size_t j = 0; j < nn; j++)
            free(names[j]);
    }
    if (n)
        qsort(*confs, n, sizeof(**confs), cmp_conf);
    if (n > UNITS_DROPINS_MAX) {            /* the first ones by name are applied */
        sc->out->truncated = true;
        problem(sc, (*confs)[UNITS_DROPINS_MAX].path, 0, -E2BIG,
                "more than 64 drop-ins: this one and the later ones are not applied");
        for (size_t i = UNITS_DROPINS_MAX; i < n; i++) {
            free((*confs)[i].name);
            free((*confs)[i].path);
        }
        n = UNITS_DROPINS_MAX;
    }
    return n;
}

/* ---- parsing each unit ------------------------------------------------------------------ */

static void apply_file(struct scan *sc, struct unit_sched *s, const char *path)
{
    int fd = open_in_root(sc->root, path, false);
    if (fd == -ENODEV)
        return;                     /* a drop-in masked through a chain of links */
    char *buf = NULL;
    ssize_t len = fd < 0 ? fd : read_all(fd, &buf);
    if (fd >= 0)
        close(fd);
    if (len < 0) {
        problem(sc, path, 0, (int)len,
                len == -EFBIG ? "file larger than 1 MiB: not read" : "cannot read the file");
        return;
    }
    sc->out->nparsed++;
    if (units_set_file(s, path) >= 0)
        units_parse(buf, (size_t)len, s);
    free(buf);
}

static bool sched_invalid(const struct unit_sched *s)
{
    for (unsigned i = 0; i < s->ninvalid; i++)
        if (s->invalid[i].sched)
            return true;
    return false;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void keep_unit(struct scan *sc, struct canon *c, struct unit_sched *s)
{
    struct unit_list *o = sc->out;
    o->units = grow(o->units, o->nunits, &sc->capunits, sizeof(*o->units));
    struct unit_entry *u = &o->units[o->nunits++];
    u->name = c->names[0];
    u->naliases = c->nnames - 1;
    u->aliases = u->naliases ? xcalloc(u->naliases, sizeof(*u->aliases)) : NULL;
    for (unsigned i = 1; i < c->nnames; i++)
        u->aliases[i - 1] = c->names[i];
    if (u->naliases > 1)
        qsort(u->aliases, u->naliases, sizeof(*u->aliases), cmp_str);
    free(c->names);
    c->names = NULL;
    c->nnames = 0;
    u->s = *s;
}

static void parse_unit(struct scan *sc, struct canon *c)
{
    struct unit_sched s;
    units_sched_init(&s, (enum unit_type)units_type_of(c->e->name));
    apply_file(sc, &s, c->path);
    if (s.nfiles == 0) {                          /* unreadable: already reported */
        units_sched_free(&s);
        return;
    }
    struct conf *confs = NULL;
    size_t n = collect_dropins(sc, c, &confs);
    for (size_t i = 0; i < n; i++) {
        if (!confs[i].mask && !s.load_error)
            apply_file(sc, &s, confs[i].path);
        free(confs[i].name);
        free(confs[i].path);
    }
    free(confs);
    units_finish(&s);
    if (s.load_error) {
        const char *f = s.load_error_at.file >= 0 ? s.files[s.load_error_at.file] : c->path;
        problem_refused(sc, &s, f);
    }
    if (units_sets_sched(&s) || sched_invalid(&s))
        keep_unit(sc, c, &s);
    else
        units_sched_free(&s);
}

/* ---- the scan ------------------------------------------------------------------------- */

int units_resolve_in_root(int root_fd, const char *path, char rel[PATH_MAX], struct stat *st)
{
    if (path[0] != '/')
        return -EINVAL;
    return resolve_in_root(root_fd, path, rel, st, false);
}

static void scan_free(struct scan *sc)
{
    for (size_t i = 0; i < sc->nunits; i++) {
        free(sc->units[i].name);
        free(sc->units[i].target);
    }
    for (size_t i = 0; i < sc->ndrops; i++)
        free(sc->drops[i].name);
    for (size_t i = 0; i < sc->ncanon; i++) {
        for (unsigned k = 0; k < sc->canon[i].nnames; k++)
            free(sc->canon[i].names[k]);
        free(sc->canon[i].names);
        free(sc->canon[i].path);
    }
    for (size_t d = 0; d < NDIRS; d++)
        if (sc->dirs[d])
            closedir(sc->dirs[d]);
    free(sc->units);
    free(sc->drops);
    free(sc->canon);
}

static int cmp_masked(const void *a, const void *b)
{
    return strcmp(((const struct unit_masked *)a)->name, ((const struct unit_masked *)b)->name);
}

int units_scan(int root_fd, struct unit_list *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof(*out));
    if (errlen)
        err[0] = '\0';
    if (root_fd < 0) {
        if (errlen)
            snprintf(err, errlen, "bad root directory fd");
        return -EBADF;
    }
    struct scan sc = { .root = root_fd, .out = out };
    out->ndirs = open_unit_dirs(&sc);
    if (out->ndirs == 0) {
        if (errlen)
            snprintf(err, errlen, "no systemd unit directory under this root (looked for "
                                  "/etc/systemd/system, /run/systemd/system, "
                                  "/usr/local/lib/systemd/system, /lib/systemd/system and "
                                  "/usr/lib/systemd/system)");
        scan_free(&sc);
        return -ENOENT;
    }
    for (unsigned d = 0; d < NDIRS && !out->truncated; d++)
        if (sc.dirs[d])
            list_unit_dir(&sc, d);
    sort_units(&sc);
    resolve_names(&sc);
    for (size_t i = 0; i < sc.ncanon; i++)
        stat_canon(&sc, &sc.canon[i]);
    merge_same_files(&sc);
    for (size_t i = 0; i < sc.ncanon; i++)
        if (!sc.canon[i].skip)
            parse_unit(&sc, &sc.canon[i]);
    if (out->nmasked > 1)
        qsort(out->masked, out->nmasked, sizeof(*out->masked), cmp_masked);
    scan_free(&sc);
    return 0;
}

void units_list_free(struct unit_list *l)
{
    if (!l)
        return;
    for (size_t i = 0; i < l->nunits; i++) {
        struct unit_entry *u = &l->units[i];
        free(u->name);
        for (unsigned k = 0; k < u->naliases; k++)
            free(u->aliases[k]);
        free(u->aliases);
        units_sched_free(&u->s);
    }
    for (size_t i = 0; i < l->nmasked; i++) {
        free(l->masked[i].name);
        free(l->masked[i].path);
    }
    for (size_t i = 0; i < l->nproblems; i++) {
        free(l->problems[i].path);
        free(l->problems[i].setting);
    }
    free(l->units);
    free(l->masked);
    free(l->problems);
    memset(l, 0, sizeof(*l));
}
