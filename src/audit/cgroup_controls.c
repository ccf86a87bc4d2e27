/* SPDX-License-Identifier: GPL-2.0-or-later */
/* audit/cgroup_controls.c: `iotriage audit`'s cgroup section: every cgroup of the
 * hierarchy walked, its I/O controls judged against the devices (audit/cgroup_controls.h). */
#include "audit/cgroup_controls.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "snapshot.h"
#include "util.h"
#include "verdict.h"

/* ---- cgroups: every cgroup's I/O controls against the devices -------------------------- */

/* A walk of a hierarchy someone else shaped (a delegated subtree, a container's image)
 * is bounded: at most this many cgroups, this deep. */
#define AUDIT_CG_MAX   20000
#define AUDIT_CG_DEPTH 64

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
 * weight, io.prio.class) is judged. Unused loop devices and partitions are not, nor a
 * layer (dm, md: its I/O is served, and the setting read or not, at the disks below it,
 * which are judged themselves). */
static bool dev_in_use(const struct snapshot *s, const struct dev_sample *d)
{
    return !d->bd.partition && d->ds.nfields >= 8 && d->ds.f[0] + d->ds.f[4] > 0 &&
           !snapshot_dev_is_layer(s, d);
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
        if (d->bd.partition || (!named && !dev_in_use(s, d)))
            continue;
        char text[WARN_TEXT_MAX];
        if (snapshot_dev_is_layer(s, d)) {
            /* a row for the layer itself: read by nothing (verdict_cg_layer_weight) */
            if (verdict_cg_layer_weight(s, c->path, &st->weight, d, text, sizeof(text))) {
                struct cg_finding *f = cg_add(c, "io.weight", (long)di, 0, 0, CGJ_IGNORED);
                snprintf(f->value, sizeof(f->value), "%d", cgroup_weight_for(&st->weight, d->ds.major, d->ds.minor));
                f->code = W_CG_WEIGHT_IGNORED;
                str_copy(f->text, text, sizeof(f->text));
            }
            continue;
        }
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
        if (!dev_in_use(s, d))
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
void audit_cgroups(const struct audit_opts *o, const struct snapshot *s, int proc_fd, int sys_fd,
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
