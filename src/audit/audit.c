/* SPDX-License-Identifier: GPL-2.0-or-later */
/* audit/audit.c: `iotriage audit`: running processes and unit files, their labels, verdicts;
 * every cgroup's I/O controls against the devices. */
#include "audit/audit.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <langinfo.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "util/escape.h"
#include "snapshot.h"
#include "source/fdmap.h"
#include "audit/unitpath.h"
#include "util.h"
#include "verdict.h"

/* One label on one device, judged. */
struct finding {
    char dev[BD_NAME_MAX];
    char sched[BD_SCHED_MAX];
    const char *from;                /* units: which path led to the device */
    enum sched_reading reading;
    char path[160];                  /* through a stack of bio-based devices: from the
                                      * top down to dev ("dm-1 -> dm-0 -> nb0"); "" */
};

#define AUDIT_MAX_FINDINGS 16

struct audited {
    struct ioprio_eff prio;
    struct finding f[AUDIT_MAX_FINDINGS];
    unsigned nf;
    int err;                         /* devices unknown (-errno) */
};

struct tally {
    unsigned ignored, honoured, undecided;
    unsigned rejected;               /* of ignored: settings systemd drops when it loads */
};

/* Text from outside (unit and file names, values, device names, command lines) is shown
 * through esc_display: whoever built the audited image must not reach the terminal. */
static bool utf8_out;

static void put_disp(const char *s, int width)
{
    size_t l = strlen(s), cap = 4 * l + 1;   /* an escape is at most 4 bytes per byte */
    char stackbuf[512];
    char *buf = cap <= sizeof(stackbuf) ? stackbuf : xmalloc(cap);
    size_t n = esc_display(buf, cap, s, l, utf8_out);
    fputs(buf, stdout);
    for (int i = (int)n; i < width; i++)
        putchar(' ');
    if (buf != stackbuf)
        free(buf);
}

static const char *reading_name(enum sched_reading r)
{
    switch (r) {
    case SR_DEFAULT: return "default";
    case SR_HONOURED: return "honoured";
    case SR_LEVEL_IGNORED: return "level-ignored";
    case SR_IGNORED: return "ignored";
    case SR_UNKNOWN_SCHED: return "unknown-scheduler";
    }
    return "?";
}

static void count(struct tally *t, const struct audited *a)
{
    for (unsigned i = 0; i < a->nf; i++) {
        if (a->f[i].reading == SR_IGNORED || a->f[i].reading == SR_LEVEL_IGNORED)
            t->ignored++;
        else if (a->f[i].reading == SR_HONOURED || a->f[i].reading == SR_DEFAULT)
            t->honoured++;
        else
            t->undecided++;
    }
    if (a->nf == 0)
        t->undecided++;
}

static void add_finding(struct audited *a, int sys_fd, const char *name, const char *from)
{
    for (unsigned i = 0; i < a->nf; i++)
        if (strcmp(a->f[i].dev, name) == 0)
            return;
    if (a->nf == AUDIT_MAX_FINDINGS)
        return;
    struct finding *f = &a->f[a->nf++];
    struct blockdev_info bd;
    str_copy(f->dev, name, sizeof(f->dev));
    f->from = from;
    f->sched[0] = '\0';
    if (blockdev_read(sys_fd, name, &bd) == 0)
        str_copy(f->sched, bd.scheduler, sizeof(f->sched));
    f->reading = verdict_sched_reading(f->sched, a->prio);
}

/* The kernel's name of block device dev: the last part of /sys/dev/block/MAJ:MIN. */
static int dev_name(int sys_fd, dev_t dev, char *out, size_t n)
{
    char path[64], link[512];
    snprintf(path, sizeof(path), "dev/block/%u:%u", major(dev), minor(dev));
    ssize_t l = readlinkat(sys_fd, path, link, sizeof(link) - 1);
    if (l < 0)
        return -errno;
    link[l] = '\0';
    const char *slash = strrchr(link, '/');
    str_copy(out, slash ? slash + 1 : link, n);
    return 0;
}

/* The devices under an absolute path of the audited root, through stacking. The path is
 * resolved inside root_fd as systemd would inside that image (an absolute symlink starts
 * again at the root, ".." stops there): never on the host's own disks. Returns how many,
 * or -errno. */
static int devices_of_path(int root_fd, int sys_fd, const char *path, struct audited *a, const char *from)
{
    struct stat st;
    char rel[PATH_MAX];
    int r = units_resolve_in_root(root_fd, path, rel, &st);
    if (r < 0)
        return r;
    dev_t devs[FDMAP_MAX_DEVS];
    bool trunc = false;
    int n = fdmap_resolve(sys_fd, S_ISBLK(st.st_mode) ? st.st_rdev : st.st_dev, devs, FDMAP_MAX_DEVS, &trunc);
    for (int i = 0; i < n; i++) {
        char name[BD_NAME_MAX];
        if (dev_name(sys_fd, devs[i], name, sizeof(name)) == 0)
            add_finding(a, sys_fd, name, from);
    }
    return n;
}

static void audit_unit(int root_fd, int sys_fd, const struct unit_entry *u, struct audited *a)
{
    memset(a, 0, sizeof(*a));
    a->prio = units_effective(&u->s);
    int n = 0;
    if (u->s.workdir && u->s.workdir[0] == '/')
        n += devices_of_path(root_fd, sys_fd, u->s.workdir, a, "WorkingDirectory") > 0;
    if (u->s.exec && u->s.exec[0] == '/')
        n += devices_of_path(root_fd, sys_fd, u->s.exec, a, "ExecStart") > 0;
    int r = n ? 0 : devices_of_path(root_fd, sys_fd, "/", a, "root filesystem");
    if (r < 0)
        a->err = r;
}

/* prio: the task's effective priority, io.prio.class applied (then bfq, which reads the
 * task's own and not the request's, is judged on the task's own). */
static void audit_task(const struct snapshot *s, size_t i, struct ioprio_eff prio, struct audited *a)
{
    const struct task_sample *t = &s->tasks[i];
    const struct task_devs *td = s->tdevs ? &s->tdevs[i] : NULL;
    memset(a, 0, sizeof(*a));
    a->prio = prio;
    struct ioprio_eff own = ioprio_effective(t->ioprio_raw, t->nice, t->policy);
    if (!td || td->err) {
        a->err = td ? td->err : -ENOSYS;
        return;
    }
    for (unsigned k = 0; k < td->n && a->nf < AUDIT_MAX_FINDINGS; k++) {
        const struct dev_sample *d = &s->devs[td->idx[k]];
        struct finding *f = &a->f[a->nf++];
        str_copy(f->dev, d->ds.name, sizeof(f->dev));
        str_copy(f->sched, d->bd.scheduler, sizeof(f->sched));
        f->from = "open files";
        f->path[0] = '\0';
        if (td->via_top && td->via_top <= s->ndevs && (td->via >> k & 1) &&
            !verdict_dev_path(s, s->devs[td->via_top - 1].ds.name, d->ds.name, f->path, sizeof(f->path)))
            f->path[0] = '\0';
        bool own_read = prio.source == IOS_CGROUP && !verdict_sched_reads_request_prio(d->bd.scheduler);
        f->reading = verdict_sched_reading(d->bd.scheduler, own_read ? own : prio);
    }
}

static void prio_str(char *buf, size_t n, struct ioprio_eff e)
{
    snprintf(buf, n, "%s/%d", ioprio_class_name(e.cls), e.level);
}

/* --- text ------------------------------------------------------------------------- */

static void text_findings(const struct audited *a)
{
    if (a->err) {
        printf("    devices unknown: %s\n", strerror(-a->err));
        return;
    }
    if (a->nf == 0)
        printf("    no block device found\n");
    for (unsigned i = 0; i < a->nf; i++) {
        fputs("    ", stdout);
        put_disp(a->f[i].dev, 10);
        putchar(' ');
        put_disp(a->f[i].sched[0] ? a->f[i].sched : "-", 12);
        printf(" %-14s (%s", reading_name(a->f[i].reading), a->f[i].from);
        if (a->f[i].path[0]) {
            fputs(": ", stdout);
            put_disp(a->f[i].path, 0);
        }
        puts(")");
    }
}

/* --- json ------------------------------------------------------------------------- */

static void json_str(const char *s)
{
    if (s)
        esc_json(stdout, s, strlen(s));
    else
        fputs("null", stdout);
}

static void json_findings(const struct audited *a)
{
    printf("\"effective_class\":\"%s\",\"effective_level\":%d,\"source\":\"%s\",\"devices\":",
           ioprio_class_name(a->prio.cls), a->prio.level, ioprio_source_name(a->prio.source));
    if (a->err) {
        printf("null,\"devices_error\":");
        json_str(strerror(-a->err));
        return;
    }
    putchar('[');
    for (unsigned i = 0; i < a->nf; i++) {
        printf("%s{\"device\":", i ? "," : "");
        json_str(a->f[i].dev);
        printf(",\"scheduler\":");
        json_str(a->f[i].sched[0] ? a->f[i].sched : NULL);
        printf(",\"from\":");
        json_str(a->f[i].from);
        printf(",\"path\":");
        json_str(a->f[i].path[0] ? a->f[i].path : NULL);
        printf(",\"verdict\":\"%s\"}", reading_name(a->f[i].reading));
    }
    putchar(']');
}

/* ---- labels systemd rejects ----------------------------------------------------------- */

/* The scheduling key an invalid entry is about (case-insensitively: "nice=" in [Service]
 * is Nice= written wrong), or -1. */
static int sched_key_of(const struct unit_invalid *iv)
{
    for (int k = UK_IOCLASS; k <= UK_POLICY; k++)
        if (strcasecmp(iv->key, units_key_name((enum unit_key)k)) == 0)
            return k;
    return -1;
}

/* A rejected value no longer matters when a later file or line set the same key (the
 * I/O class and level share one value in systemd, so either counts for both). */
static bool superseded(const struct unit_sched *s, const struct unit_invalid *iv)
{
    int k = sched_key_of(iv);
    const struct unit_where *w[2] = { &s->where[k], NULL };
    if (k == UK_IOCLASS || k == UK_IOPRIO)
        w[1] = &s->where[k == UK_IOCLASS ? UK_IOPRIO : UK_IOCLASS];
    for (int i = 0; i < 2 && w[i]; i++)
        if (w[i]->file >= 0 && (w[i]->file > iv->at.file ||
                                (w[i]->file == iv->at.file && w[i]->line > iv->at.line)))
            return true;
    return false;
}

static bool is_rejected_label(const struct unit_invalid *iv)
{
    return iv->sched && !iv->fatal && sched_key_of(iv) >= 0;
}

static const char *invalid_file(const struct unit_sched *s, const struct unit_invalid *iv)
{
    return iv->at.file >= 0 && (unsigned)iv->at.file < s->nfiles ? s->files[iv->at.file] : NULL;
}

static void count_rejected(struct tally *t, const struct unit_sched *s)
{
    for (unsigned i = 0; i < s->ninvalid; i++)
        if (is_rejected_label(&s->invalid[i]) && !superseded(s, &s->invalid[i])) {
            t->ignored++;
            t->rejected++;
        }
}

static void text_rejected(const struct unit_sched *s)
{
    for (unsigned i = 0; i < s->ninvalid; i++) {
        const struct unit_invalid *iv = &s->invalid[i];
        if (iv->fatal) {             /* the unit never runs: said here, with its unit */
            const char *f = invalid_file(s, iv);
            fputs("    refused: systemd does not load this unit: ", stdout);
            put_disp(f ? f : "?", 0);
            if (iv->at.line)
                printf(":%u", iv->at.line);
            if (iv->key[0] || iv->text[0]) {
                fputs(": ", stdout);
                put_disp(iv->key, 0);
                fputs(iv->key[0] ? "=" : "", stdout);
                put_disp(iv->text, 0);
            }
            printf(" (%s)\n", iv->why);
            continue;
        }
        if (!is_rejected_label(iv))
            continue;
        const char *f = invalid_file(s, iv);
        printf("    %s ", superseded(s, iv) ? "rejected (later overridden)" : "rejected");
        put_disp(iv->key, 0);
        putchar('=');
        put_disp(iv->text, 0);
        fputs(" at ", stdout);
        put_disp(f ? f : "?", 0);
        printf(":%u: %s\n", iv->at.line, iv->why);
    }
    if (s->ninvalid_lost)
        printf("    (%u more invalid settings not kept)\n", s->ninvalid_lost);
}

static void json_rejected(const struct unit_sched *s)
{
    printf(",\"rejected\":[");
    unsigned n = 0;
    for (unsigned i = 0; i < s->ninvalid; i++) {
        const struct unit_invalid *iv = &s->invalid[i];
        if (!is_rejected_label(iv))
            continue;
        printf("%s{\"key\":", n++ ? "," : "");
        json_str(units_key_name((enum unit_key)sched_key_of(iv)));
        printf(",\"as_written\":");
        json_str(iv->key);
        printf(",\"value\":");
        json_str(iv->text);
        printf(",\"file\":");
        json_str(invalid_file(s, iv));
        printf(",\"line\":%u,\"why\":", iv->at.line);
        json_str(iv->why);
        printf(",\"superseded\":%s}", superseded(s, iv) ? "true" : "false");
    }
    putchar(']');
}

/* What systemd makes of the four keys, null when unset: the value it hands to
 * ioprio_set() (class and level), setpriority() and sched_setscheduler(). */
static void json_unit_values(const struct unit_sched *s)
{
    bool io = s->ioclass_set || s->iolevel_set;
    if (io)
        printf(",\"io_class\":\"%s\",\"io_level\":%u",
               ioprio_class_name((enum ioprio_class)IOPRIO_CLASS_OF(s->ioprio)),
               IOPRIO_LEVEL_OF(s->ioprio));
    else
        printf(",\"io_class\":null,\"io_level\":null");
    if (s->nice_set)
        printf(",\"nice\":%d", s->nice);
    else
        printf(",\"nice\":null");
    printf(",\"cpu_policy\":");
    json_str(s->policy_set ? units_policy_name(s->policy) : NULL);
}

static void unit_sets(char *buf, size_t n, const struct unit_sched *s)
{
    size_t o = 0;
    buf[0] = '\0';
#define ADD(...) do { int w_ = snprintf(buf + o, n - o, __VA_ARGS__); if (w_ > 0 && (size_t)w_ < n - o) o += (size_t)w_; } while (0)
    if (s->ioclass_set)
        ADD("%sIOSchedulingClass=%s", o ? " " : "", ioprio_class_name(s->ioclass));
    if (s->iolevel_set)
        ADD("%sIOSchedulingPriority=%d", o ? " " : "", s->iolevel);
    if (s->nice_set)
        ADD("%sNice=%d", o ? " " : "", s->nice);
    if (s->policy_set)
        ADD("%sCPUSchedulingPolicy=%s", o ? " " : "", units_policy_name(s->policy));
#undef ADD
}

/* ---- cgroups: every cgroup's I/O controls against the devices -------------------------- */

/* A walk of a hierarchy someone else shaped (a delegated subtree, a container's image)
 * is bounded: at most this many cgroups, this deep. */
#define AUDIT_CG_MAX   20000
#define AUDIT_CG_DEPTH 64

struct cg_tally {
    unsigned ignored, honoured, undecided;
};

/* One setting of one cgroup on one device, judged. */
struct cg_finding {
    const char *setting;             /* "io.weight", "io.max"... */
    char dev[BD_NAME_MAX];           /* the device's name, or "MAJ:MIN" when not listed */
    char sched[BD_SCHED_MAX];
    char value[96];                  /* the setting's value on that device */
    enum cg_judgement j;
    bool counted;                    /* in the tally (a state such as io.latency's depth is not) */
    int code;                        /* a warning code, or -1 */
    char text[WARN_TEXT_MAX];        /* why, when there is something to say */
};

struct cg_audit {
    bool json;
    const struct snapshot *snap;
    const struct cgroup_set *set;
    size_t *by_path;                 /* set->v indices sorted by path */
    unsigned *nprocs;                /* per set entry: snapshot processes directly in it */
    int *owner;                      /* per snapshot task: cgroups_prio_owner, or -1 */
    struct cg_tally tally;
    unsigned walked, listed;
    bool truncated;
    char path[CG_PATH_MAX];          /* of the cgroup being visited */
    struct cg_finding *f;
    size_t nf, capf;
};

/* A finding's text: a long cgroup path is cut at WARN_TEXT_MAX like every warning's. */
static void textf(char *buf, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void textf(char *buf, size_t n, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, n, fmt, ap);
    va_end(ap);
}

static const char *judgement_name(enum cg_judgement j)
{
    switch (j) {
    case CGJ_NONE: return "default";
    case CGJ_HONOURED: return "honoured";
    case CGJ_IGNORED: return "ignored";
    case CGJ_UNKNOWN: return "undecided";
    }
    return "?";
}

static int cmp_set_path(const void *a, const void *b, void *ctx)
{
    const struct cgroup_set *s = ctx;
    return strcmp(s->v[*(const size_t *)a].path, s->v[*(const size_t *)b].path);
}

/* The lens's entry for the cgroup being visited (its tasks are the snapshot's), or -1. */
static long set_index(const struct cg_audit *c)
{
    const struct cgroup_set *s = c->set;
    size_t lo = 0, hi = s->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int r = strcmp(s->v[c->by_path[mid]].path, c->path);
        if (r == 0)
            return (long)c->by_path[mid];
        if (r < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return -1;
}

static long dev_index(const struct snapshot *s, unsigned major, unsigned minor)
{
    for (size_t i = 0; i < s->ndevs; i++)
        if (s->devs[i].ds.major == major && s->devs[i].ds.minor == minor)
            return (long)i;
    return -1;
}

/* A whole disk that has done I/O since boot: where a setting for every device (a default
 * weight, io.prio.class) is judged. Unused loop devices and partitions are not. */
static bool dev_in_use(const struct dev_sample *d)
{
    return !d->bd.partition && d->ds.nfields >= 8 && d->ds.f[0] + d->ds.f[4] > 0;
}

static struct cg_finding *cg_add(struct cg_audit *c, const char *setting, long di, unsigned major,
                                 unsigned minor, enum cg_judgement j)
{
    if (c->nf == c->capf) {
        c->capf = c->capf ? 2 * c->capf : 16;
        c->f = xreallocarray(c->f, c->capf, sizeof(*c->f));
    }
    struct cg_finding *f = &c->f[c->nf++];
    memset(f, 0, sizeof(*f));
    f->setting = setting;
    f->j = j;
    f->counted = true;
    f->code = -1;
    if (di >= 0) {
        const struct dev_sample *d = &c->snap->devs[di];
        str_copy(f->dev, d->ds.name, sizeof(f->dev));
        str_copy(f->sched, d->bd.scheduler, sizeof(f->sched));
    } else {
        snprintf(f->dev, sizeof(f->dev), "%u:%u", major, minor);
        f->j = CGJ_UNKNOWN;
        snprintf(f->text, sizeof(f->text), "device %u:%u is not in /proc/diskstats: no scheduler to judge",
                 major, minor);
    }
    return f;
}

static void cg_weights(struct cg_audit *c, const struct cgroup_settings *st)
{
    if (st->weight_err)
        return;
    const struct snapshot *s = c->snap;
    for (size_t di = 0; di < s->ndevs; di++) {
        const struct dev_sample *d = &s->devs[di];
        bool named = false;
        for (unsigned i = 0; i < st->weight.n; i++)
            named |= st->weight.row[i].major == d->ds.major && st->weight.row[i].minor == d->ds.minor;
        if (d->bd.partition || (!named && !dev_in_use(d)))
            continue;
        char text[WARN_TEXT_MAX];
        enum cg_judgement j = verdict_cg_weight(c->path, st, &c->set->costqos, c->set->costqos_err, d,
                                                text, sizeof(text));
        if (j == CGJ_NONE)
            continue;
        struct cg_finding *f = cg_add(c, "io.weight", (long)di, 0, 0, j);
        int w = cgroup_weight_for(&st->weight, d->ds.major, d->ds.minor);
        snprintf(f->value, sizeof(f->value), "%d", w);
        if (j == CGJ_IGNORED) {
            f->code = W_CG_WEIGHT_IGNORED;
            str_copy(f->text, text, sizeof(f->text));
        } else if (j == CGJ_UNKNOWN) {
            snprintf(f->text, sizeof(f->text), "io.cost.qos of the root could not be read (%s)",
                     strerror(-c->set->costqos_err));
        } else if (cgroup_cost_enabled(&c->set->costqos, c->set->costqos_err, d->ds.major, d->ds.minor) > 0) {
            str_copy(f->text, "io.cost is enabled for it", sizeof(f->text));
        } else {
            snprintf(f->text, sizeof(f->text), "bfq reads io.bfq.weight %d of it instead",
                     cgroup_weight_for(&st->bfq_weight, d->ds.major, d->ds.minor));
        }
    }
    /* Rows for devices that are not listed (removed since): said, not judged. */
    for (unsigned i = 0; i < st->weight.n; i++)
        if (dev_index(s, st->weight.row[i].major, st->weight.row[i].minor) < 0) {
            struct cg_finding *f = cg_add(c, "io.weight", -1, st->weight.row[i].major,
                                          st->weight.row[i].minor, CGJ_UNKNOWN);
            snprintf(f->value, sizeof(f->value), "%d", st->weight.row[i].weight);
        }
}

static void cg_limits(struct cg_audit *c, const struct cgroup_settings *st, bool is_root)
{
    if (st->iomax_err)
        return;
    const char *setting = st->v1 ? "blkio.throttle" : "io.max";
    for (unsigned i = 0; i < st->iomax.n; i++) {
        const struct cg_limit_row *l = &st->iomax.row[i];
        if (l->rbps == CG_UNLIMITED && l->wbps == CG_UNLIMITED && l->riops == CG_UNLIMITED &&
            l->wiops == CG_UNLIMITED)
            continue;                /* a row of "max" is no limit */
        long di = dev_index(c->snap, l->major, l->minor);
        struct cg_finding *f = cg_add(c, setting, di, l->major, l->minor, CGJ_HONOURED);
        cgroup_limit_text(f->value, sizeof(f->value), l, st->v1);
        if (di < 0)
            continue;
        /* blk-throttle sits above every scheduler: the limit holds whatever the device
         * uses, and its tasks wait in the throttle, not in the device. */
        str_copy(f->text, "blk-throttle holds bios above the limit before any scheduler sees them, "
                 "whatever the device uses: its tasks wait in the throttle, not in the device",
                 sizeof(f->text));
        if (is_root || (l->wbps == CG_UNLIMITED && l->wiops == CG_UNLIMITED))
            continue;
        char why[128];
        const char *reason = verdict_cg_writeback_reason(c->set, c->snap->devs, c->snap->ndevs,
                                                         c->snap->devs[di].ds.name, why, sizeof(why));
        if (!reason)
            continue;
        struct cg_finding *w = cg_add(c, setting, di, 0, 0, CGJ_IGNORED);
        cgroup_limit_text(w->value, sizeof(w->value), &(struct cg_limit_row){ .rbps = CG_UNLIMITED,
                   .riops = CG_UNLIMITED, .wbps = l->wbps, .wiops = l->wiops }, st->v1);
        w->code = W_CG_WRITEBACK_ROOT;
        textf(w->text, sizeof(w->text),
                 "%s: its write limit on %s does not hold for buffered writes: their writeback is "
                 "charged to the root cgroup: %s", c->path, w->dev, reason);
    }
}

/* The class io.prio.class imposes (blk-ioprio.c): promote-to-rt lifts to rt/4; the others
 * lower to (class, 0). */
static struct ioprio_eff prio_imposed(enum cg_prio_policy p)
{
    bool up = p == CGP_PROMOTE_TO_RT || p == CGP_NONE_TO_RT;
    int v = cgroup_prio_apply(p, up ? IOPRIO_MAKE(IOC_BE, 4) : IOPRIO_MAKE(IOC_RT, 0));
    return (struct ioprio_eff){ .cls = (enum ioprio_class)IOPRIO_CLASS_OF(v),
                                .level = (int)IOPRIO_LEVEL_OF(v), .source = IOS_CGROUP };
}

static void cg_prio(struct cg_audit *c, const struct cgroup_settings *st, long k)
{
    if (st->prio_err || st->prio == CGP_NO_CHANGE)
        return;
    const struct snapshot *s = c->snap;
    struct ioprio_eff imp = prio_imposed(st->prio);
    char cls[24];
    snprintf(cls, sizeof(cls), "%s (%s/%d)", cgroup_prio_name(st->prio), ioprio_class_name(imp.cls), imp.level);
    for (size_t di = 0; di < s->ndevs; di++) {
        const struct dev_sample *d = &s->devs[di];
        if (!dev_in_use(d))
            continue;
        enum cg_judgement j;
        const char *why;
        if (!verdict_sched_reads_request_prio(d->bd.scheduler)) {
            j = CGJ_IGNORED;
            why = "bfq reads the task's own priority, not the request's";
        } else {
            switch (verdict_sched_reading(d->bd.scheduler, imp)) {
            case SR_IGNORED:
                j = CGJ_IGNORED;
                why = "the scheduler reads no I/O priority";
                break;
            case SR_UNKNOWN_SCHED:
                j = CGJ_UNKNOWN;
                why = "a scheduler whose reading is not known";
                break;
            default:
                j = CGJ_HONOURED;
                why = "the scheduler reads the request's class";
                break;
            }
        }
        struct cg_finding *f = cg_add(c, "io.prio.class", (long)di, 0, 0, j);
        str_copy(f->value, cls, sizeof(f->value));
        textf(f->text, sizeof(f->text), "%s: io.prio.class %s on %s: %s", c->path,
                 cgroup_prio_name(st->prio), d->ds.name, why);
    }
    /* The processes whose priority it rewrites, on each device they have files on. */
    for (size_t ti = 0; k >= 0 && c->owner && ti < s->ntasks; ti++) {
        if (c->owner[ti] != k)
            continue;
        const struct task_sample *t = &s->tasks[ti];
        struct ioprio_eff own = ioprio_effective(t->ioprio_raw, t->nice, t->policy);
        int nv = cgroup_prio_apply(st->prio, IOPRIO_MAKE(own.cls, own.level));
        struct ioprio_eff now = { .cls = (enum ioprio_class)IOPRIO_CLASS_OF(nv),
                                  .level = (int)IOPRIO_LEVEL_OF(nv), .source = IOS_CGROUP };
        if (now.cls == own.cls && now.level == own.level)
            continue;
        const struct task_devs *td = s->tdevs ? &s->tdevs[ti] : NULL;
        if (!td || td->err || td->n == 0) {
            /* Its devices are not known: whom the setting reaches is still worth saying. */
            struct cg_finding *f = cg_add(c, "io.prio.class", -1, 0, 0, CGJ_HONOURED);
            str_copy(f->dev, "-", sizeof(f->dev));
            f->j = CGJ_HONOURED;
            f->counted = false;
            f->code = W_CG_PRIO_CLASS;
            snprintf(f->value, sizeof(f->value), "pid %d", (int)t->id);
            verdict_cg_prio_text(f->text, sizeof(f->text), t->comm, (int)t->id, own, now,
                                 "devices not known", "", st->prio, c->path);
        }
        for (unsigned j = 0; td && !td->err && j < td->n; j++) {
            const struct dev_sample *d = &s->devs[td->idx[j]];
            struct cg_finding *f = cg_add(c, "io.prio.class", (long)td->idx[j], 0, 0, CGJ_HONOURED);
            f->counted = false;      /* the setting is judged above; this says whom it reaches */
            f->code = W_CG_PRIO_CLASS;
            snprintf(f->value, sizeof(f->value), "pid %d", (int)t->id);
            verdict_cg_prio_text(f->text, sizeof(f->text), t->comm, (int)t->id, own, now, d->ds.name,
                                 d->bd.scheduler, st->prio, c->path);
        }
    }
}

static void cg_latency(struct cg_audit *c, int dfd, bool v2_child, struct cg_latency *lat, int *lat_err)
{
    *lat_err = v2_child ? cgroup_latency_read(dfd, lat) : -ENOENT;
    for (unsigned i = 0; !*lat_err && i < lat->n; i++) {
        long di = dev_index(c->snap, lat->row[i].major, lat->row[i].minor);
        struct cg_finding *f = cg_add(c, "io.latency", di, lat->row[i].major, lat->row[i].minor, CGJ_HONOURED);
        snprintf(f->value, sizeof(f->value), "target=%llu", (unsigned long long)lat->row[i].target_us);
        if (di >= 0)
            str_copy(f->text, "blk-iolatency holds its siblings back when it misses the target, "
                     "whatever the scheduler", sizeof(f->text));
    }
    /* Held back now: io.stat's depth (the same rule as the live verdicts). */
    struct cg_iostat ios;
    if (!v2_child || cgroup_iostat_read(dfd, &ios))
        return;
    for (unsigned i = 0; i < ios.n; i++) {
        const struct cg_iostat_row *r = &ios.row[i];
        long di = dev_index(c->snap, r->major, r->minor);
        char name[32], text[WARN_TEXT_MAX];
        snprintf(name, sizeof(name), "%u:%u", r->major, r->minor);
        if (!verdict_cg_latency(c->path, r->has_lat, r->lat_depth, di >= 0 ? c->snap->devs[di].ds.name : name,
                                text, sizeof(text)))
            continue;
        struct cg_finding *f = cg_add(c, "io.latency", di, r->major, r->minor, CGJ_HONOURED);
        f->counted = false;
        f->code = W_CG_IOLATENCY_THROTTLED;
        snprintf(f->value, sizeof(f->value), "depth=%ld", r->lat_depth);
        str_copy(f->text, text, sizeof(f->text));
    }
}

/* --- output of one cgroup --- */

static void json_limit(const char *key, uint64_t v)
{
    if (v == CG_UNLIMITED)
        printf(",\"%s\":null", key);
    else
        printf(",\"%s\":%llu", key, (unsigned long long)v);
}

static void json_dev(const struct cg_audit *c, unsigned major, unsigned minor)
{
    long di = dev_index(c->snap, major, minor);
    char buf[32];
    snprintf(buf, sizeof(buf), "%u:%u", major, minor);
    json_str(di >= 0 ? c->snap->devs[di].ds.name : buf);
}

static void json_weight(const struct cg_audit *c, const char *key, int err, const struct cg_weight *w)
{
    printf(",\"%s\":", key);
    if (err) {
        fputs("null", stdout);
        return;
    }
    if (w->dflt >= 0)
        printf("{\"default\":%d,\"devices\":[", w->dflt);
    else
        printf("{\"default\":null,\"devices\":[");
    for (unsigned i = 0; i < w->n; i++) {
        printf("%s{\"device\":", i ? "," : "");
        json_dev(c, w->row[i].major, w->row[i].minor);
        printf(",\"weight\":%d}", w->row[i].weight);
    }
    fputs("]}", stdout);
}

/* The same keys as a sample's cgroups[].settings (docs/json.md), plus io_latency. */
static void json_cg_settings(const struct cg_audit *c, const struct cgroup_settings *st, bool is_root,
                             const struct cg_latency *lat, int lat_err, const char *unavailable)
{
    printf(",\"settings\":{\"hierarchy\":\"%s\",\"io_max\":", st->v1 ? "v1-blkio" : "v2");
    if (st->iomax_err) {
        fputs("null", stdout);
    } else {
        putchar('[');
        for (unsigned i = 0; i < st->iomax.n; i++) {
            const struct cg_limit_row *l = &st->iomax.row[i];
            printf("%s{\"device\":", i ? "," : "");
            json_dev(c, l->major, l->minor);
            json_limit("rbps", l->rbps);
            json_limit("wbps", l->wbps);
            json_limit("riops", l->riops);
            json_limit("wiops", l->wiops);
            putchar('}');
        }
        putchar(']');
    }
    json_weight(c, "io_weight", st->weight_err, &st->weight);
    json_weight(c, "io_bfq_weight", st->bfq_weight_err, &st->bfq_weight);
    printf(",\"io_prio_class\":");
    json_str(st->prio_err ? NULL : cgroup_prio_name(st->prio));
    printf(",\"io_latency\":");
    if (lat_err) {
        fputs("null", stdout);
    } else {
        putchar('[');
        for (unsigned i = 0; i < lat->n; i++) {
            printf("%s{\"device\":", i ? "," : "");
            json_dev(c, lat->row[i].major, lat->row[i].minor);
            printf(",\"target_us\":%llu}", (unsigned long long)lat->row[i].target_us);
        }
        putchar(']');
    }
    const char *why = unavailable;
    if (!why && st->iomax_err == -ENOENT && is_root && !st->v1)
        why = "the root cgroup has no io controls";
    else if (!why && st->iomax_err == -ENOENT)
        why = st->v1 ? "no blkio.throttle files" : "the io controller is not enabled for this cgroup";
    else if (!why && st->iomax_err)
        why = strerror(-st->iomax_err);
    printf(",\"unavailable\":");
    json_str(why);
    putchar('}');
}

static void cg_emit(struct cg_audit *c, const struct cgroup_names *nm, long nprocs,
                    const struct cgroup_settings *st, bool is_root, const struct cg_latency *lat,
                    int lat_err, const char *unavailable)
{
    for (size_t i = 0; i < c->nf; i++) {
        const struct cg_finding *f = &c->f[i];
        if (!f->counted)
            continue;
        if (f->j == CGJ_IGNORED)
            c->tally.ignored++;
        else if (f->j == CGJ_HONOURED)
            c->tally.honoured++;
        else if (f->j == CGJ_UNKNOWN)
            c->tally.undecided++;
    }
    if (c->json) {
        printf("%s{\"path\":", c->listed ? "," : "");
        json_str(c->path);
        printf(",\"unit\":");
        json_str(nm->unit[0] ? nm->unit : NULL);
        printf(",\"container\":");
        if (nm->runtime[0]) {
            printf("{\"runtime\":");
            json_str(nm->runtime);
            printf(",\"id\":");
            json_str(nm->id);
            printf(",\"short_id\":");
            json_str(nm->short_id);
            putchar('}');
        } else {
            fputs("null", stdout);
        }
        printf(",\"pod\":");
        if (nm->pod_uid[0]) {
            printf("{\"uid\":");
            json_str(nm->pod_uid);
            printf(",\"qos\":");
            json_str(nm->qos);
            putchar('}');
        } else {
            fputs("null", stdout);
        }
        if (nprocs >= 0)
            printf(",\"processes\":%ld", nprocs);
        else
            printf(",\"processes\":null");
        json_cg_settings(c, st, is_root, lat, lat_err, unavailable);
        printf(",\"findings\":[");
        for (size_t i = 0; i < c->nf; i++) {
            const struct cg_finding *f = &c->f[i];
            printf("%s{\"setting\":", i ? "," : "");
            json_str(f->setting);
            printf(",\"device\":");
            json_str(f->dev);
            printf(",\"scheduler\":");
            json_str(f->sched[0] ? f->sched : NULL);
            printf(",\"value\":");
            json_str(f->value);
            printf(",\"verdict\":\"%s\",\"counted\":%s,\"code\":", judgement_name(f->j),
                   f->counted ? "true" : "false");
            json_str(f->code >= 0 ? warn_code_name((enum warn_code)f->code) : NULL);
            printf(",\"text\":");
            json_str(f->text[0] ? f->text : NULL);
            putchar('}');
        }
        fputs("]}", stdout);
        c->listed++;
        return;
    }
    /* Text: the cgroups that hold processes or have something set; the others are only
     * counted (a machine has hundreds of empty slices and scopes). */
    if (c->nf == 0 && nprocs <= 0)
        return;
    fputs("  ", stdout);
    put_disp(c->path, 0);
    /* Who it is, when its last path component does not say it already. */
    const char *last = strrchr(c->path, '/');
    last = last ? last + 1 : c->path;
    char name[CG_UNIT_MAX + 64] = "";
    if (nm->runtime[0])
        snprintf(name, sizeof(name), "%s %s", nm->runtime, nm->short_id);
    else if (nm->pod_uid[0])
        snprintf(name, sizeof(name), "pod %s, %s", nm->pod_uid, nm->qos);
    else if (nm->unit[0] && strcmp(last, nm->unit) != 0)
        snprintf(name, sizeof(name), "in %s", nm->unit);
    if (name[0]) {
        fputs("  (", stdout);
        put_disp(name, 0);
        putchar(')');
    }
    if (nprocs >= 0)
        printf("  %ld process%s\n", nprocs, nprocs == 1 ? "" : "es");
    else
        putchar('\n');
    for (size_t i = 0; i < c->nf; i++) {
        const struct cg_finding *f = &c->f[i];
        fputs("    ", stdout);
        put_disp(f->dev, 10);
        putchar(' ');
        put_disp(f->sched[0] ? f->sched : "-", 12);
        printf(" %-14s %s ", f->counted ? judgement_name(f->j) : "-", f->setting);
        put_disp(f->value, 0);
        putchar('\n');
        if (f->text[0]) {
            printf("      %s%s", f->code >= 0 ? warn_code_name((enum warn_code)f->code) : "",
                   f->code >= 0 ? ": " : "");
            put_disp(f->text, 0);
            putchar('\n');
        }
    }
    c->listed++;
}

/* Judge the cgroup whose directory is dfd (c->path set). */
static void cg_visit(struct cg_audit *c, int dfd, bool is_root)
{
    const struct cgroup_set *set = c->set;
    struct cgroup_names nm;
    cgroup_names_of(c->path, &nm);
    long k = set_index(c);
    long nprocs = k >= 0 ? (long)c->nprocs[k] : 0;
    struct cgroup_settings st;
    const char *unavailable = NULL;
    bool v2 = !set->v1_only;
    if (v2 && set->io_on_v2 == 0) {
        memset(&st, 0, sizeof(st));
        st.iomax_err = st.weight_err = st.bfq_weight_err = st.prio_err = -ENOENT;
        unavailable = "the v2 hierarchy has no io controller (it is bound to a v1 hierarchy)";
    } else if (v2 && is_root) {
        memset(&st, 0, sizeof(st));
        st.iomax_err = st.weight_err = st.bfq_weight_err = st.prio_err = -ENOENT;
    } else if (v2) {
        cgroup_settings_read(dfd, &st);
    } else {
        cgroup_settings_read_v1(dfd, &st);
        unavailable = "no cgroup v2 hierarchy: only the v1 blkio throttle limits are known";
    }
    c->nf = 0;
    cg_weights(c, &st);
    cg_limits(c, &st, is_root);
    cg_prio(c, &st, k);
    struct cg_latency lat;
    int lat_err;
    cg_latency(c, dfd, v2 && !is_root && set->io_on_v2 != 0, &lat, &lat_err);
    cg_emit(c, &nm, nprocs, &st, is_root, &lat, lat_err, unavailable);
}

static int cmp_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Depth first, children in name order; directories only, never through a symlink. */
static void cg_walk(struct cg_audit *c, int dfd, size_t plen, int depth)
{
    c->walked++;
    cg_visit(c, dfd, depth == 0);
    if (depth >= AUDIT_CG_DEPTH) {
        c->truncated = true;
        return;
    }
    int fd2 = dup(dfd);
    DIR *d = fd2 >= 0 ? fdopendir(fd2) : NULL;
    if (!d) {
        if (fd2 >= 0)
            close(fd2);
        return;
    }
    char **names = NULL;
    size_t n = 0, cap = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (de->d_name[0] == '.' && (!de->d_name[1] || (de->d_name[1] == '.' && !de->d_name[2])))
            continue;
        bool dir = de->d_type == DT_DIR;
        if (de->d_type == DT_UNKNOWN) {
            struct stat st;
            dir = fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode);
        }
        if (!dir)
            continue;
        if (n == cap) {
            cap = cap ? 2 * cap : 16;
            names = xreallocarray(names, cap, sizeof(*names));
        }
        names[n++] = xstrdup(de->d_name);
    }
    closedir(d);
    if (n)
        qsort(names, n, sizeof(*names), cmp_name);
    for (size_t i = 0; i < n; i++) {
        if (c->walked >= AUDIT_CG_MAX) {
            c->truncated = true;
            break;
        }
        size_t l = strlen(names[i]);
        bool top = plen == 1;        /* the path is "/" */
        if (plen + (top ? 0 : 1) + l >= sizeof(c->path)) {
            c->truncated = true;     /* a path longer than CG_PATH_MAX is not followed */
            continue;
        }
        int sub = openat(dfd, names[i], O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (sub < 0)
            continue;                /* removed meanwhile, or a symlink */
        size_t nl = plen;
        if (!top)
            c->path[nl++] = '/';
        memcpy(c->path + nl, names[i], l + 1);
        cg_walk(c, sub, nl + l, depth + 1);
        close(sub);
        c->path[plen] = '\0';
    }
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
}

static void cg_hierarchy_text(const struct cgroup_set *set, const struct snapshot *s)
{
    if (set->v1_only) {
        fputs("Cgroups (no v2 hierarchy; the v1 blkio hierarchy at ", stdout);
        put_disp(set->mount, 0);
        printf("):\n  the v2 controls (io.max, io.weight, io.prio.class, io.latency, io.cost) are "
               "unavailable; blkio throttle limits are shown\n");
        return;
    }
    fputs("Cgroups (v2 hierarchy at ", stdout);
    put_disp(set->mount, 0);
    printf("):\n");
    if (set->io_on_v2 == 0)
        printf("  the io controller is not in the v2 hierarchy (bound to a v1 hierarchy): io.max, "
               "io.weight, io.prio.class, io.latency and io.cost are unavailable\n");
    if (set->costqos_err == 0) {
        for (unsigned i = 0; i < set->costqos.n; i++) {
            const struct cg_costqos_row *q = &set->costqos.row[i];
            long di = dev_index(s, q->major, q->minor);
            char dev[32];
            snprintf(dev, sizeof(dev), "%u:%u", q->major, q->minor);
            fputs("  io.cost on ", stdout);
            put_disp(di >= 0 ? s->devs[di].ds.name : dev, 0);
            printf(": %s (ctrl %s)\n", q->enable ? "enabled" : "not enabled", q->ctrl_user ? "user" : "auto");
        }
    }
}

static void cg_hierarchy_json(const struct cgroup_set *set, const struct snapshot *s)
{
    printf(",\"cgroup_hierarchy\":{\"version\":");
    if (set->err) {
        printf("null,\"mount\":null,\"io_controller\":null,\"memory_controller\":null,\"io_cost\":null,"
               "\"error\":");
        json_str(strerror(-set->err));
        putchar('}');
        return;
    }
    printf("\"%s\",\"mount\":", set->v1_only ? "v1-blkio" : "v2");
    json_str(set->mount);
    printf(",\"io_controller\":%s,\"memory_controller\":%s,\"io_cost\":",
           set->io_on_v2 < 0 ? "null" : set->io_on_v2 ? "true" : "false",
           set->memory_on_v2 < 0 ? "null" : set->memory_on_v2 ? "true" : "false");
    if (set->costqos_err) {
        fputs("null", stdout);
    } else {
        putchar('[');
        for (unsigned i = 0; i < set->costqos.n; i++) {
            const struct cg_costqos_row *q = &set->costqos.row[i];
            long di = dev_index(s, q->major, q->minor);
            char dev[32];
            snprintf(dev, sizeof(dev), "%u:%u", q->major, q->minor);
            printf("%s{\"device\":", i ? "," : "");
            json_str(di >= 0 ? s->devs[di].ds.name : dev);
            printf(",\"enabled\":%s,\"ctrl\":\"%s\"}", q->enable ? "true" : "false",
                   q->ctrl_user ? "user" : "auto");
        }
        putchar(']');
    }
    printf(",\"error\":null}");
}

/* The cgroup section: the hierarchy the cgroup lens shows (the v2 one found through
 * mountinfo, else the v1 blkio one), every cgroup in it. */
static void audit_cgroups(const struct audit_opts *o, const struct snapshot *s, int proc_fd, int sys_fd,
                          struct cg_tally *out)
{
    const struct cgroup_set *set = s->cgroups;
    memset(out, 0, sizeof(*out));
    if (o->json)
        cg_hierarchy_json(set, s);
    if (set->err) {
        if (o->json)
            printf(",\"cgroups\":[],\"cgroups_walked\":0,\"cgroups_truncated\":false");
        else
            printf("\nCgroups: no cgroup hierarchy could be read (%s)\n", strerror(-set->err));
        return;
    }
    if (!o->json) {
        putchar('\n');
        cg_hierarchy_text(set, s);
    }
    struct cgroup_mounts m;
    const char *mroot = "/";
    if (cgroup_mounts_read(proc_fd, &m) == 0)
        mroot = set->v1_only ? m.blkio_root : m.v2_root;
    struct cg_audit c = { .json = o->json, .snap = s, .set = set };
    /* The lens's cgroups by path, and the snapshot's processes in each. */
    c.by_path = xcalloc(set->n ? set->n : 1, sizeof(size_t));
    for (size_t i = 0; i < set->n; i++)
        c.by_path[i] = i;
    if (set->n)
        qsort_r(c.by_path, set->n, sizeof(size_t), cmp_set_path, (void *)(uintptr_t)set);
    c.nprocs = xcalloc(set->n ? set->n : 1, sizeof(unsigned));
    c.owner = xcalloc(set->ntasks ? set->ntasks : 1, sizeof(int));
    for (size_t ti = 0; ti < set->ntasks && ti < s->ntasks; ti++) {
        c.owner[ti] = cgroups_prio_owner(set, ti);
        if (set->task_cg[ti] >= 0 && !s->tasks[ti].kthread)
            c.nprocs[set->task_cg[ti]]++;
    }
    if (o->json)
        printf(",\"cgroups\":[");
    int fd = cgroup_open_mount(sys_fd, set->mount);
    if (fd >= 0) {
        str_copy(c.path, mroot, sizeof(c.path));
        cg_walk(&c, fd, strlen(c.path), 0);
        close(fd);
    }
    if (o->json) {
        printf("],\"cgroups_walked\":%u,\"cgroups_truncated\":%s", c.walked, c.truncated ? "true" : "false");
    } else {
        if (fd < 0)
            printf("  cannot open %s: %s\n", set->mount, strerror(-fd));
        printf("  (%u cgroup(s) examined, %u listed: those holding processes or with a setting%s)\n",
               c.walked, c.listed, c.truncated ? "; the walk stopped at its bound" : "");
    }
    *out = c.tally;
    free(c.by_path);
    free(c.nprocs);
    free(c.owner);
    free(c.f);
}

int audit_run(const struct audit_opts *o)
{
    const char *root = o->root ? o->root : "/";
    int root_fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (root_fd < 0) {
        fprintf(stderr, "iotriage audit: cannot open %s: %s\n", root, strerror(errno));
        return 2;
    }
    struct sampler_opts so = { .proc_root = o->proc_root, .sys_root = o->sys_root,
                               .no_tasks = o->no_processes,
                               .no_bpf = true };   /* one snapshot: no rates to measure */
    char err[256] = "";
    struct sampler *sm;
    if (sampler_open(&sm, &so, err, sizeof(err)) < 0) {
        fprintf(stderr, "iotriage audit: %s\n", err);
        close(root_fd);
        return 2;
    }
    const char *sys = o->sys_root ? o->sys_root : "/sys";
    int sys_fd = open(sys, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    struct snapshot snap;
    sampler_take(sm, &snap);
    struct unit_list ul;
    /* A machine (or image) without systemd has no unit directory: its processes and
     * cgroups are still audited, and the output says why no unit is. */
    char units_err[256] = "";
    int us = units_scan(root_fd, &ul, err, sizeof(err));
    if (us == -ENOENT) {
        snprintf(units_err, sizeof(units_err), "%s", err);
        us = 0;
    }
    if (us < 0) {
        fprintf(stderr, "iotriage audit: %s\n", err);
        snapshot_free(&snap);
        sampler_close(sm);
        close(root_fd);
        close(sys_fd);
        return 2;
    }
    const char *cs = nl_langinfo(CODESET);
    bool utf8 = cs && strcmp(cs, "UTF-8") == 0;
    utf8_out = utf8;
    char host[256] = "?";
    gethostname(host, sizeof(host) - 1);
    struct tally tally = { 0 };
    struct audited a;
    char prio[24], text[512];

    if (o->json) {
        printf("{\"host\":");
        json_str(host);
        printf(",\"processes\":[");
    } else {
        fputs("iotriage audit - ", stdout);
        put_disp(host, 0);
        printf("\n\nRunning processes with a non-default I/O priority:\n");
    }
    unsigned nproc = 0;
    for (size_t i = 0; i < snap.ntasks; i++) {
        const struct task_sample *t = &snap.tasks[i];
        if (t->kthread)
            continue;   /* kernel threads have no files: nothing the label could reach */
        struct ioprio_eff e = ioprio_effective(t->ioprio_raw, t->nice, t->policy);
        /* Its cgroup's io.prio.class rewrites what its requests carry, as on the screen. */
        if (snap.cgroups && i < snap.cgroups->ntasks)
            cgroups_prio_effective(snap.cgroups, i, &e);
        if (ioprio_is_default(e))
            continue;
        audit_task(&snap, i, e, &a);
        count(&tally, &a);
        prio_str(prio, sizeof(prio), e);
        if (o->json) {
            printf("%s{\"pid\":%d,\"comm\":", nproc ? "," : "", (int)t->id);
            json_str(t->comm);
            printf(",\"cmdline\":");
            json_str(t->cmdline);
            putchar(',');
            json_findings(&a);
            putchar('}');
        } else {
            const char *cl = t->cmdline[0] ? t->cmdline : t->comm;
            esc_display(text, 120, cl, strlen(cl), utf8);
            printf("  %7d %-7s %-8s %s\n", (int)t->id, prio, ioprio_source_name(e.source), text);
            text_findings(&a);
        }
        nproc++;
    }
    if (!o->json && nproc == 0)
        printf("  none%s\n", o->no_processes ? " (not examined)" : "");

    if (o->json) {
        printf("],\"units_error\":");
        json_str(units_err[0] ? units_err : NULL);
        printf(",\"units\":[");
    } else {
        printf("\nUnit files setting IOSchedulingClass=, IOSchedulingPriority=, Nice= or CPUSchedulingPolicy=:\n");
        if (units_err[0])
            printf("  not examined: %s\n", units_err);
    }
    unsigned nunits = 0;
    for (size_t i = 0; i < ul.nunits; i++) {
        const struct unit_entry *u = &ul.units[i];
        /* The scanner also keeps units whose only labels systemd rejected: those labels
         * are ignored as surely as one a scheduler does not read. */
        bool sets = units_sets_sched(&u->s);
        if (sets) {
            audit_unit(root_fd, sys_fd, u, &a);
            count(&tally, &a);
        } else {
            memset(&a, 0, sizeof(a));
            a.prio = units_effective(&u->s);
        }
        count_rejected(&tally, &u->s);
        prio_str(prio, sizeof(prio), a.prio);
        unit_sets(text, sizeof(text), &u->s);
        if (o->json) {
            printf("%s{\"unit\":", nunits ? "," : "");
            json_str(u->name);
            printf(",\"file\":");
            json_str(u->s.nfiles ? u->s.files[0] : NULL);
            printf(",\"files\":[");
            for (unsigned k = 0; k < u->s.nfiles; k++) {
                if (k)
                    putchar(',');
                json_str(u->s.files[k]);
            }
            printf("],\"sets\":");
            json_str(text);
            json_unit_values(&u->s);
            json_rejected(&u->s);
            printf(",\"load_error\":%s,", u->s.load_error ? "true" : "false");
            json_findings(&a);
            putchar('}');
        } else {
            fputs("  ", stdout);
            put_disp(u->name, 32);
            printf(" %-7s %s\n", prio, sets ? text : "(no setting applied)");
            text_rejected(&u->s);
            if (sets)
                text_findings(&a);
        }
        nunits++;
    }
    if (!o->json && nunits == 0 && !units_err[0])
        printf("  none\n");
    if (o->json)
        putchar(']');
    /* Cgroups: with the processes (--units-only audits an image's unit files, not this
     * machine's hierarchy). */
    struct cg_tally cgt = { 0 };
    bool cg_done = false;
    if (!o->no_processes && snap.cgroups) {
        const char *proc = o->proc_root ? o->proc_root : "/proc";
        int proc_fd = open(proc, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (proc_fd >= 0 && sys_fd >= 0) {
            audit_cgroups(o, &snap, proc_fd, sys_fd, &cgt);
            cg_done = true;
        }
        if (proc_fd >= 0)
            close(proc_fd);
    }
    if (o->json && !cg_done)
        printf(",\"cgroup_hierarchy\":null,\"cgroups\":null,\"cgroups_walked\":null,"
               "\"cgroups_truncated\":null");
    if (o->json) {
        printf(",\"problems\":[");
        for (size_t i = 0; i < ul.nproblems; i++) {
            const struct unit_problem *pb = &ul.problems[i];
            printf("%s{\"path\":", i ? "," : "");
            json_str(pb->path);
            if (pb->line)
                printf(",\"line\":%u", pb->line);
            else
                printf(",\"line\":null");
            printf(",\"text\":");
            json_str(pb->what);
            printf(",\"setting\":");
            json_str(pb->setting);
            printf(",\"why\":");
            json_str(pb->why);
            putchar('}');
        }
        printf("],\"ignored\":%u,\"rejected\":%u,\"honoured\":%u,\"undecided\":%u,"
               "\"cgroup_ignored\":%u,\"cgroup_honoured\":%u,\"cgroup_undecided\":%u}\n",
               tally.ignored, tally.rejected, tally.honoured, tally.undecided, cgt.ignored, cgt.honoured,
               cgt.undecided);
    } else {
        for (size_t i = 0; i < ul.nproblems; i++) {
            const struct unit_problem *pb = &ul.problems[i];
            fputs("  problem: ", stdout);
            put_disp(pb->path, 0);
            if (pb->line)
                printf(":%u", pb->line);
            printf(": %s", pb->what);
            if (pb->setting) {
                fputs(": ", stdout);
                put_disp(pb->setting, 0);
            }
            if (pb->why)
                printf(" (%s)", pb->why);
            putchar('\n');
        }
        printf("\n%u label(s) ignored (%u rejected by systemd), %u honoured, %u undecided (no "
               "device or unknown scheduler).\n",
               tally.ignored, tally.rejected, tally.honoured, tally.undecided);
        if (cg_done)
            printf("%u cgroup setting(s) without effect, %u in effect, %u undecided.\n", cgt.ignored,
                   cgt.honoured, cgt.undecided);
        if (tally.undecided && !cgt.undecided && !tally.ignored && !cgt.ignored)
            printf("Nothing found ignored, but %u label(s) could not be judged: exit status 3.\n",
                   tally.undecided);
        else if (cgt.undecided && !tally.ignored && !cgt.ignored)
            printf("Nothing found ignored, but %u label(s) and %u cgroup setting(s) could not be "
                   "judged: exit status 3.\n", tally.undecided, cgt.undecided);
    }
    units_list_free(&ul);
    snapshot_free(&snap);
    sampler_close(sm);
    close(root_fd);
    if (sys_fd >= 0)
        close(sys_fd);
    if (fflush(stdout) != 0 || ferror(stdout))
        return 2;
    /* 0 must mean "every label is read": a label nobody could judge is not that. */
    return tally.ignored || cgt.ignored ? 1 : tally.undecided || cgt.undecided ? 3 : 0;
}
