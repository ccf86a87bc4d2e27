/* SPDX-License-Identifier: GPL-2.0-or-later */
/* source/cgroupfs.c: readers and pure parsers of cgroup membership and I/O controls
 * (formats: Documentation/admin-guide/cgroup-v2.rst, "IO"; see source/cgroupfs.h). */
#include "source/cgroupfs.h"

#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util.h"

/* ---- tokens ------------------------------------------------------------------------ */

/* The next line of [*p, end): [*ls, *le) without its newline. false at the end. */
static bool next_line(const char **p, const char *end, const char **ls, const char **le)
{
    if (*p >= end)
        return false;
    const char *nl = memchr(*p, '\n', (size_t)(end - *p));
    *ls = *p;
    *le = nl ? nl : end;
    *p = nl ? nl + 1 : end;
    return true;
}

/* The next token separated by spaces or tabs. */
static bool next_tok(const char **p, const char *end, const char **ts, const char **te)
{
    const char *s = *p;
    while (s < end && (*s == ' ' || *s == '\t'))
        s++;
    if (s >= end)
        return false;
    const char *e = s;
    while (e < end && *e != ' ' && *e != '\t')
        e++;
    *ts = s;
    *te = e;
    *p = e;
    return true;
}

static bool tok_is(const char *s, const char *e, const char *word)
{
    size_t n = strlen(word);
    return (size_t)(e - s) == n && memcmp(s, word, n) == 0;
}

/* A whole token that is an unsigned decimal. */
static int tok_u64(const char *s, const char *e, uint64_t *out)
{
    const char *p = s;
    if (parse_u64(&p, e, out) || p != e)
        return -EINVAL;
    return 0;
}

static int tok_u64_or_max(const char *s, const char *e, uint64_t *out)
{
    if (tok_is(s, e, "max")) {
        *out = CG_UNLIMITED;
        return 0;
    }
    return tok_u64(s, e, out);
}

static int tok_double(const char *s, const char *e, double *out)
{
    const char *p = s;
    if (parse_udouble(&p, e, out) || p != e)
        return -EINVAL;
    return 0;
}

/* "MAJ:MIN" */
static int tok_majmin(const char *s, const char *e, unsigned *maj, unsigned *min)
{
    const char *colon = memchr(s, ':', (size_t)(e - s));
    uint64_t a, b;
    if (!colon || tok_u64(s, colon, &a) || tok_u64(colon + 1, e, &b) || a > 0xfff ||
        b > 0xfffff)   /* MINORBITS 20, 12 bits of major: what dev_t holds */
        return -EINVAL;
    *maj = (unsigned)a;
    *min = (unsigned)b;
    return 0;
}

/* "key=value": the value's range, when the key matches. */
static bool tok_kv(const char *s, const char *e, const char *key, const char **vs)
{
    size_t n = strlen(key);
    if ((size_t)(e - s) <= n || memcmp(s, key, n) != 0 || s[n] != '=')
        return false;
    *vs = s + n + 1;
    return true;
}

/* ---- mountinfo --------------------------------------------------------------------- */

/* Copy a mountinfo field, undoing the kernel's octal escapes (\040 for a space,
 * fs/proc_namespace.c: mangle). false when it does not fit. */
static bool unescape(const char *s, const char *e, char *out, size_t cap)
{
    size_t n = 0;
    while (s < e) {
        char c = *s++;
        if (c == '\\' && e - s >= 3 && s[0] >= '0' && s[0] <= '3' && s[1] >= '0' && s[1] <= '7' &&
            s[2] >= '0' && s[2] <= '7') {
            c = (char)((s[0] - '0') * 64 + (s[1] - '0') * 8 + (s[2] - '0'));
            s += 3;
        }
        if (c == '\0' || n + 1 >= cap)
            return false;
        out[n++] = c;
    }
    out[n] = '\0';
    return true;
}

/* Does the comma-separated list [s, e) hold `word`? */
static bool list_has(const char *s, const char *e, const char *word)
{
    size_t n = strlen(word);
    while (s < e) {
        const char *c = memchr(s, ',', (size_t)(e - s));
        const char *ie = c ? c : e;
        if ((size_t)(ie - s) == n && memcmp(s, word, n) == 0)
            return true;
        s = c ? c + 1 : e;
    }
    return false;
}

int cgroup_mounts_parse(const char *buf, size_t len, struct cgroup_mounts *out)
{
    memset(out, 0, sizeof(*out));
    const char *p = buf, *end = buf + len, *ls, *le;
    while (next_line(&p, end, &ls, &le)) {
        /* id parent maj:min root mountpoint options [optional...] - fstype source super */
        const char *t[6][2];
        const char *q = ls;
        int nt = 0;
        while (nt < 6 && next_tok(&q, le, &t[nt][0], &t[nt][1]))
            nt++;
        if (nt < 6)
            continue;
        const char *ts, *te;
        bool sep = false;
        while (next_tok(&q, le, &ts, &te))
            if (tok_is(ts, te, "-")) {
                sep = true;
                break;
            }
        const char *fs, *fse, *src, *srce, *sup = NULL, *supe = NULL;
        if (!sep || !next_tok(&q, le, &fs, &fse) || !next_tok(&q, le, &src, &srce))
            continue;
        if (!next_tok(&q, le, &sup, &supe))
            sup = supe = NULL;
        unsigned maj, min;
        if (tok_majmin(t[2][0], t[2][1], &maj, &min))
            continue;
        if (tok_is(fs, fse, "cgroup2") && !out->has_v2) {
            if (unescape(t[4][0], t[4][1], out->v2, sizeof(out->v2)) &&
                unescape(t[3][0], t[3][1], out->v2_root, sizeof(out->v2_root)))
                out->has_v2 = true;
        } else if (tok_is(fs, fse, "cgroup") && sup && list_has(sup, supe, "blkio") && !out->has_blkio) {
            if (unescape(t[4][0], t[4][1], out->blkio, sizeof(out->blkio)) &&
                unescape(t[3][0], t[3][1], out->blkio_root, sizeof(out->blkio_root)))
                out->has_blkio = true;
        } else if (maj != 0 && (size_t)(fse - fs) < sizeof(out->block[0].fstype)) {
            /* Major 0 is the anonymous block devices of virtual file systems. */
            bool dup = false;
            for (unsigned i = 0; i < out->nblock; i++)
                if (out->block[i].major == maj && out->block[i].minor == min &&
                    strlen(out->block[i].fstype) == (size_t)(fse - fs) &&
                    memcmp(out->block[i].fstype, fs, (size_t)(fse - fs)) == 0)
                    dup = true;
            if (dup)
                continue;
            if (out->nblock == CG_MOUNTS_MAX) {
                out->block_truncated = true;
                continue;
            }
            struct cg_mount *m = &out->block[out->nblock++];
            m->major = maj;
            m->minor = min;
            memcpy(m->fstype, fs, (size_t)(fse - fs));
            m->fstype[fse - fs] = '\0';
        }
    }
    return 0;
}

int cgroup_mounts_read(int proc_fd, struct cgroup_mounts *out)
{
    char *buf = NULL;
    ssize_t n = read_file_alloc_at(proc_fd, "self/mountinfo", &buf, 4u << 20);
    if (n < 0) {
        memset(out, 0, sizeof(*out));
        return (int)n;
    }
    cgroup_mounts_parse(buf, (size_t)n, out);
    free(buf);
    return 0;
}

int cgroup_open_mount(int sys_fd, const char *mountpoint)
{
    int fd;
    if (strncmp(mountpoint, "/sys/", 5) == 0)
        fd = openat(sys_fd, mountpoint + 5, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    else if (strcmp(mountpoint, "/sys") == 0)
        fd = dup(sys_fd);
    else
        fd = open(mountpoint, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    return fd < 0 ? -errno : fd;
}

/* ---- /proc/PID/cgroup -------------------------------------------------------------- */

int cgroup_proc_parse(const char *buf, size_t len, struct cgroup_membership *out)
{
    memset(out, 0, sizeof(*out));
    const char *p = buf, *end = buf + len, *ls, *le;
    bool any = false;
    while (next_line(&p, end, &ls, &le)) {
        /* hierarchy-id:controllers:path; the path may itself hold ':' */
        const char *c1 = memchr(ls, ':', (size_t)(le - ls));
        if (!c1)
            continue;
        const char *c2 = memchr(c1 + 1, ':', (size_t)(le - c1 - 1));
        if (!c2)
            continue;
        const char *path = c2 + 1;
        size_t plen = (size_t)(le - path);
        if (plen == 0 || path[0] != '/' || plen >= CG_PATH_MAX || memchr(path, '\0', plen))
            continue;
        uint64_t id;
        if (tok_u64(ls, c1, &id))
            continue;
        if (id == 0 && c2 == c1 + 1) {
            if (!out->has_v2) {
                memcpy(out->v2, path, plen);
                out->v2[plen] = '\0';
                out->has_v2 = any = true;
            }
        } else if (list_has(c1 + 1, c2, "blkio") && !out->has_blkio) {
            memcpy(out->blkio, path, plen);
            out->blkio[plen] = '\0';
            out->has_blkio = any = true;
        }
    }
    return any ? 0 : -EINVAL;
}

int cgroup_proc_read(int proc_fd, pid_t pid, struct cgroup_membership *out)
{
    char path[32];
    char buf[4096];
    snprintf(path, sizeof(path), "%d/cgroup", (int)pid);
    ssize_t n = read_file_at(proc_fd, path, buf, sizeof(buf));
    if (n < 0) {
        memset(out, 0, sizeof(*out));
        return (int)n;
    }
    return cgroup_proc_parse(buf, (size_t)n, out);
}

int cgroup_rel_path(const char *root, const char *path, char *out, size_t outlen)
{
    size_t rl = strlen(root);
    while (rl > 0 && root[rl - 1] == '/')
        rl--;
    if (strncmp(path, root, rl) != 0 || (path[rl] != '/' && path[rl] != '\0'))
        return -ENOENT;
    const char *rest = path + rl;
    while (*rest == '/')
        rest++;
    /* ".." would leave the hierarchy: the kernel never prints one, a fixture might. */
    for (const char *c = rest; *c;) {
        const char *slash = strchr(c, '/');
        size_t cl = slash ? (size_t)(slash - c) : strlen(c);
        if (cl == 2 && c[0] == '.' && c[1] == '.')
            return -EINVAL;
        c += cl;
        while (*c == '/')
            c++;
    }
    int n = snprintf(out, outlen, "%s", *rest ? rest : ".");
    if (n < 0 || (size_t)n >= outlen)
        return -ENAMETOOLONG;
    return 0;
}

/* ---- io.stat ----------------------------------------------------------------------- */

int cgroup_iostat_parse(const char *buf, size_t len, struct cg_iostat *out)
{
    memset(out, 0, sizeof(*out));
    const char *p = buf, *end = buf + len, *ls, *le;
    while (next_line(&p, end, &ls, &le)) {
        const char *q = ls, *ts, *te, *v;
        struct cg_iostat_row r;
        memset(&r, 0, sizeof(r));
        r.lat_depth = -1;
        if (!next_tok(&q, le, &ts, &te) || tok_majmin(ts, te, &r.major, &r.minor))
            continue;
        bool bad = false, have_r = false;
        while (!bad && next_tok(&q, le, &ts, &te)) {
            static const struct { const char *k; size_t off; int kind; } keys[] = {
                /* kind 0: counter; 1: io.cost counter; 2: io.latency value */
                { "rbytes", offsetof(struct cg_iostat_row, rbytes), 0 },
                { "wbytes", offsetof(struct cg_iostat_row, wbytes), 0 },
                { "rios", offsetof(struct cg_iostat_row, rios), 0 },
                { "wios", offsetof(struct cg_iostat_row, wios), 0 },
                { "dbytes", offsetof(struct cg_iostat_row, dbytes), 0 },
                { "dios", offsetof(struct cg_iostat_row, dios), 0 },
                { "cost.usage", offsetof(struct cg_iostat_row, cost_usage_us), 1 },
                { "cost.wait", offsetof(struct cg_iostat_row, cost_wait_us), 1 },
                { "cost.indebt", offsetof(struct cg_iostat_row, cost_indebt_us), 1 },
                { "cost.indelay", offsetof(struct cg_iostat_row, cost_indelay_us), 1 },
                { "avg_lat", offsetof(struct cg_iostat_row, lat_avg_us), 2 },
            };
            bool known = false;
            for (size_t i = 0; i < ARRAY_SIZE(keys) && !known; i++) {
                if (!tok_kv(ts, te, keys[i].k, &v))
                    continue;
                known = true;
                uint64_t x;
                if (tok_u64(v, te, &x)) {
                    bad = true;
                    break;
                }
                memcpy((char *)&r + keys[i].off, &x, sizeof(x));
                if (keys[i].kind == 0)
                    have_r = true;
                else if (keys[i].kind == 1)
                    r.has_cost = true;
                else
                    r.has_lat = true;
            }
            if (known)
                continue;
            if (tok_kv(ts, te, "depth", &v)) {
                uint64_t x;
                r.has_lat = true;
                if (tok_is(v, te, "max"))
                    r.lat_depth = -1;
                else if (tok_u64(v, te, &x) == 0 && x < 1u << 30)
                    r.lat_depth = (long)x;
                else
                    bad = true;
            }
            /* cost.vrate (root only), win=, use_delay=, delay_nsec=, ...: not used */
        }
        if (bad || !have_r)
            continue;
        if (out->n == CG_DEVS_MAX) {
            out->truncated = true;
            continue;
        }
        out->row[out->n++] = r;
    }
    return 0;
}

/* ---- io.max and the v1 throttle files ---------------------------------------------- */

static struct cg_limit_row *limit_row(struct cg_iomax *m, unsigned maj, unsigned min)
{
    for (unsigned i = 0; i < m->n; i++)
        if (m->row[i].major == maj && m->row[i].minor == min)
            return &m->row[i];
    if (m->n == CG_DEVS_MAX) {
        m->truncated = true;
        return NULL;
    }
    struct cg_limit_row *r = &m->row[m->n++];
    r->major = maj;
    r->minor = min;
    r->rbps = r->wbps = r->riops = r->wiops = CG_UNLIMITED;
    return r;
}

int cgroup_iomax_parse(const char *buf, size_t len, struct cg_iomax *out)
{
    memset(out, 0, sizeof(*out));
    const char *p = buf, *end = buf + len, *ls, *le;
    while (next_line(&p, end, &ls, &le)) {
        const char *q = ls, *ts, *te, *v;
        unsigned maj, min;
        if (!next_tok(&q, le, &ts, &te) || tok_majmin(ts, te, &maj, &min))
            continue;
        uint64_t val[4] = { CG_UNLIMITED, CG_UNLIMITED, CG_UNLIMITED, CG_UNLIMITED };
        static const char *const keys[4] = { "rbps", "wbps", "riops", "wiops" };
        bool bad = false;
        while (!bad && next_tok(&q, le, &ts, &te))
            for (int k = 0; k < 4; k++)
                if (tok_kv(ts, te, keys[k], &v) && tok_u64_or_max(v, te, &val[k]))
                    bad = true;
        if (bad)
            continue;
        struct cg_limit_row *r = limit_row(out, maj, min);
        if (!r)
            continue;
        r->rbps = val[0];
        r->wbps = val[1];
        r->riops = val[2];
        r->wiops = val[3];
    }
    return 0;
}

int cgroup_blkio_throttle_parse(const char *buf, size_t len, int field, struct cg_iomax *out)
{
    if (field < 0 || field > 3)
        return -EINVAL;
    const char *p = buf, *end = buf + len, *ls, *le;
    while (next_line(&p, end, &ls, &le)) {
        const char *q = ls, *ts, *te, *vs, *ve;
        unsigned maj, min;
        uint64_t x;
        if (!next_tok(&q, le, &ts, &te) || tok_majmin(ts, te, &maj, &min) ||
            !next_tok(&q, le, &vs, &ve) || tok_u64(vs, ve, &x))
            continue;
        struct cg_limit_row *r = limit_row(out, maj, min);
        if (!r)
            continue;
        uint64_t *f[4] = { &r->rbps, &r->wbps, &r->riops, &r->wiops };
        *f[field] = x;
    }
    return 0;
}

/* ---- io.weight ---------------------------------------------------------------------- */

int cgroup_weight_parse(const char *buf, size_t len, struct cg_weight *out)
{
    memset(out, 0, sizeof(*out));
    out->dflt = -1;
    const char *p = buf, *end = buf + len, *ls, *le;
    while (next_line(&p, end, &ls, &le)) {
        const char *q = ls, *ts, *te, *vs, *ve;
        uint64_t x;
        if (!next_tok(&q, le, &ts, &te) || !next_tok(&q, le, &vs, &ve) || tok_u64(vs, ve, &x) ||
            x < 1 || x > 10000)   /* CGROUP_WEIGHT_MIN..MAX */
            continue;
        if (tok_is(ts, te, "default")) {
            out->dflt = (int)x;
            continue;
        }
        unsigned maj, min;
        if (tok_majmin(ts, te, &maj, &min))
            continue;
        if (out->n == CG_DEVS_MAX) {
            out->truncated = true;
            continue;
        }
        out->row[out->n].major = maj;
        out->row[out->n].minor = min;
        out->row[out->n].weight = (int)x;
        out->n++;
    }
    return 0;
}

int cgroup_weight_for(const struct cg_weight *w, unsigned major, unsigned minor)
{
    for (unsigned i = 0; i < w->n; i++)
        if (w->row[i].major == major && w->row[i].minor == minor)
            return w->row[i].weight;
    return w->dflt > 0 ? w->dflt : CG_WEIGHT_DEFAULT;
}

/* ---- io.cost.qos -------------------------------------------------------------------- */

int cgroup_costqos_parse(const char *buf, size_t len, struct cg_costqos *out)
{
    memset(out, 0, sizeof(*out));
    const char *p = buf, *end = buf + len, *ls, *le;
    while (next_line(&p, end, &ls, &le)) {
        const char *q = ls, *ts, *te, *v;
        struct cg_costqos_row r;
        memset(&r, 0, sizeof(r));
        if (!next_tok(&q, le, &ts, &te) || tok_majmin(ts, te, &r.major, &r.minor))
            continue;
        bool bad = false, have_enable = false;
        while (!bad && next_tok(&q, le, &ts, &te)) {
            uint64_t x;
            if (tok_kv(ts, te, "enable", &v)) {
                bad = tok_u64(v, te, &x) != 0 || x > 1;
                r.enable = x == 1;
                have_enable = true;
            } else if (tok_kv(ts, te, "ctrl", &v)) {
                if (tok_is(v, te, "user"))
                    r.ctrl_user = true;
                else
                    bad = !tok_is(v, te, "auto");
            } else if (tok_kv(ts, te, "rpct", &v)) {
                bad = tok_double(v, te, &r.rpct) != 0;
            } else if (tok_kv(ts, te, "wpct", &v)) {
                bad = tok_double(v, te, &r.wpct) != 0;
            } else if (tok_kv(ts, te, "min", &v)) {
                bad = tok_double(v, te, &r.min) != 0;
            } else if (tok_kv(ts, te, "max", &v)) {
                bad = tok_double(v, te, &r.max) != 0;
            } else if (tok_kv(ts, te, "rlat", &v)) {
                bad = tok_u64(v, te, &r.rlat) != 0;
            } else if (tok_kv(ts, te, "wlat", &v)) {
                bad = tok_u64(v, te, &r.wlat) != 0;
            }
        }
        if (bad || !have_enable)
            continue;
        if (out->n == CG_DEVS_MAX) {
            out->truncated = true;
            continue;
        }
        out->row[out->n++] = r;
    }
    return 0;
}

int cgroup_cost_enabled(const struct cg_costqos *q, int err, unsigned major, unsigned minor)
{
    if (err == -ENOENT)
        return 0;        /* no io.cost.qos at all: the kernel lacks io.cost, or no io here */
    if (err)
        return -1;
    for (unsigned i = 0; i < q->n; i++)
        if (q->row[i].major == major && q->row[i].minor == minor)
            return q->row[i].enable ? 1 : 0;
    return q->truncated ? -1 : 0;
}

/* ---- io.prio.class ------------------------------------------------------------------ */

static const char *const prio_names[] = {
    [CGP_NO_CHANGE] = "no-change",
    [CGP_PROMOTE_TO_RT] = "promote-to-rt",
    [CGP_RESTRICT_TO_BE] = "restrict-to-be",
    [CGP_IDLE] = "idle",
    [CGP_NONE_TO_RT] = "none-to-rt",
};

int cgroup_prio_parse(const char *buf, size_t len, enum cg_prio_policy *out)
{
    const char *q = buf, *end = buf + len, *ts, *te;
    while (end > buf && (end[-1] == '\n' || end[-1] == ' '))
        end--;
    if (!next_tok(&q, end, &ts, &te) || te != end)
        return -EINVAL;
    for (size_t i = 0; i < ARRAY_SIZE(prio_names); i++)
        if (tok_is(ts, te, prio_names[i])) {
            *out = (enum cg_prio_policy)i;
            return 0;
        }
    return -EINVAL;
}

const char *cgroup_prio_name(enum cg_prio_policy p)
{
    return (unsigned)p < ARRAY_SIZE(prio_names) ? prio_names[p] : "?";
}

int cgroup_prio_apply(enum cg_prio_policy p, int ioprio)
{
    unsigned v = (unsigned)ioprio & 0xffff;
    switch (p) {
    case CGP_PROMOTE_TO_RT:
    case CGP_NONE_TO_RT:
        return ((v >> 13) & 7) == 1 ? (int)v : (int)((1u << 13) | 4u);
    case CGP_RESTRICT_TO_BE:
    case CGP_IDLE: {
        unsigned floor = (unsigned)p << 13;  /* IOPRIO_PRIO_VALUE(policy, 0) */
        return (int)(v > floor ? v : floor);
    }
    default:
        return (int)v;
    }
}

/* ---- io.latency ---------------------------------------------------------------------- */

int cgroup_latency_parse(const char *buf, size_t len, struct cg_latency *out)
{
    memset(out, 0, sizeof(*out));
    const char *p = buf, *end = buf + len, *ls, *le;
    while (next_line(&p, end, &ls, &le)) {
        const char *q = ls, *ts, *te, *v;
        unsigned maj, min;
        uint64_t target;
        if (!next_tok(&q, le, &ts, &te) || tok_majmin(ts, te, &maj, &min))
            continue;
        if (!next_tok(&q, le, &ts, &te) || !tok_kv(ts, te, "target", &v) || tok_u64(v, te, &target))
            continue;
        if (out->n == CG_DEVS_MAX) {
            out->truncated = true;
            continue;
        }
        out->row[out->n].major = maj;
        out->row[out->n].minor = min;
        out->row[out->n].target_us = target;
        out->n++;
    }
    return 0;
}

/* ---- readers ------------------------------------------------------------------------ */

/* A cgroup file of dirfd, into buf (NUL-terminated). Only a regular file is read, and a
 * symlink never followed: a fixture tree or an image given with --sys-root may hold a
 * FIFO (which would block the read) or a link out of the tree where cgroupfs never does. */
static ssize_t cg_read_at(int dirfd, const char *name, char *buf, size_t cap)
{
    int fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NOFOLLOW | O_NONBLOCK);
    if (fd < 0)
        return -errno;
    struct stat st;
    int e = fstat(fd, &st) < 0 ? errno : !S_ISREG(st.st_mode) ? EINVAL : 0;
    ssize_t n = e ? -e : read_fd_into(fd, buf, cap);
    close(fd);
    return n;
}

void cgroup_settings_read(int dirfd, struct cgroup_settings *out)
{
    memset(out, 0, sizeof(*out));
    char buf[4096];
    ssize_t n = cg_read_at(dirfd, "io.max", buf, sizeof(buf));
    out->iomax_err = n < 0 ? (int)n : cgroup_iomax_parse(buf, (size_t)n, &out->iomax);
    n = cg_read_at(dirfd, "io.weight", buf, sizeof(buf));
    out->weight_err = n < 0 ? (int)n : cgroup_weight_parse(buf, (size_t)n, &out->weight);
    n = cg_read_at(dirfd, "io.bfq.weight", buf, sizeof(buf));
    out->bfq_weight_err = n < 0 ? (int)n : cgroup_weight_parse(buf, (size_t)n, &out->bfq_weight);
    n = cg_read_at(dirfd, "io.prio.class", buf, sizeof(buf));
    out->prio_err = n < 0 ? (int)n : cgroup_prio_parse(buf, (size_t)n, &out->prio);
}

void cgroup_settings_read_v1(int dirfd, struct cgroup_settings *out)
{
    memset(out, 0, sizeof(*out));
    out->v1 = true;
    out->weight_err = out->bfq_weight_err = out->prio_err = -ENOENT;
    static const char *const files[4] = {
        "blkio.throttle.read_bps_device", "blkio.throttle.write_bps_device",
        "blkio.throttle.read_iops_device", "blkio.throttle.write_iops_device",
    };
    char buf[4096];
    for (int f = 0; f < 4; f++) {
        ssize_t n = cg_read_at(dirfd, files[f], buf, sizeof(buf));
        if (n < 0) {
            out->iomax_err = (int)n;
            return;
        }
        cgroup_blkio_throttle_parse(buf, (size_t)n, f, &out->iomax);
    }
}

int cgroup_iostat_read(int dirfd, struct cg_iostat *out)
{
    char buf[8192];
    ssize_t n = cg_read_at(dirfd, "io.stat", buf, sizeof(buf));
    if (n < 0) {
        memset(out, 0, sizeof(*out));
        return (int)n;
    }
    return cgroup_iostat_parse(buf, (size_t)n, out);
}

void cgroup_pressure_read(int dirfd, struct psi_sample *out)
{
    char buf[512];
    ssize_t n = cg_read_at(dirfd, "io.pressure", buf, sizeof(buf));
    if (n < 0) {
        memset(out, 0, sizeof(*out));
        out->err = (int)n;
        return;
    }
    psi_parse(buf, (size_t)n, out);
}

int cgroup_costqos_read(int rootfd, struct cg_costqos *out)
{
    char buf[4096];
    ssize_t n = cg_read_at(rootfd, "io.cost.qos", buf, sizeof(buf));
    if (n < 0) {
        memset(out, 0, sizeof(*out));
        return (int)n;
    }
    return cgroup_costqos_parse(buf, (size_t)n, out);
}

int cgroup_has_controller(int rootfd, const char *name)
{
    char buf[512];
    ssize_t n = cg_read_at(rootfd, "cgroup.controllers", buf, sizeof(buf));
    if (n < 0)
        return (int)n;
    const char *q = buf, *end = buf + n, *ts, *te;
    while (end > buf && end[-1] == '\n')
        end--;
    while (next_tok(&q, end, &ts, &te))
        if (tok_is(ts, te, name))
            return 1;
    return 0;
}

int cgroup_latency_read(int dirfd, struct cg_latency *out)
{
    char buf[4096];
    ssize_t n = cg_read_at(dirfd, "io.latency", buf, sizeof(buf));
    if (n < 0) {
        memset(out, 0, sizeof(*out));
        return (int)n;
    }
    return cgroup_latency_parse(buf, (size_t)n, out);
}

void cgroup_limit_text(char *buf, size_t n, const struct cg_limit_row *l, bool v1)
{
    static const char *const v2k[4] = { "rbps", "wbps", "riops", "wiops" };
    static const char *const v1k[4] = { "read_bps", "write_bps", "read_iops", "write_iops" };
    const uint64_t v[4] = { l->rbps, l->wbps, l->riops, l->wiops };
    size_t o = 0;
    if (n == 0)
        return;
    buf[0] = '\0';
    for (int q = 0; q < 4; q++) {
        if (v[q] == CG_UNLIMITED)
            continue;
        int w = snprintf(buf + o, n - o, "%s%s=%llu", o ? " " : "", v1 ? v1k[q] : v2k[q],
                         (unsigned long long)v[q]);
        if (w < 0 || (size_t)w >= n - o)
            break;
        o += (size_t)w;
    }
}
