/* SPDX-License-Identifier: GPL-2.0-or-later */
/* sample/decode_procs.c: a recorded sample's processes, and the stubs added for tasks only warnings
 * name; the frame's task arrays laid out.
 *
 * Each key is read back into the field src/sample/write.c wrote it from; the comments name
 * what the writer did to a field on its way out (null for -1, a name for a number...)
 * and so what undoing it takes. Everything is checked: this is a file a user hands us.
 */
#include "decode.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sample/decode_fs.h"
#include "sample/json.h"
#include "sample/sample.h"
#include "util.h"
#include "util/escape.h"
#include "util/fmt.h"

/* ---- processes --------------------------------------------------------------------------- */

void ptasks_free(struct ptasks *p)
{
    for (size_t i = 0; i < p->n; i++) {
        free((char *)(uintptr_t)p->v[i].s.comm);
        free((char *)(uintptr_t)p->v[i].s.user);
        free((char *)(uintptr_t)p->v[i].s.cmdline);
        free(p->v[i].prios);
    }
    free(p->v);
    memset(p, 0, sizeof(*p));
}

static struct ptask *ptasks_add(struct ptasks *p)
{
    if (p->n == p->cap) {
        p->cap = p->cap ? 2 * p->cap : 64;
        p->v = xreallocarray(p->v, p->cap, sizeof(*p->v));
    }
    struct ptask *t = &p->v[p->n++];
    memset(t, 0, sizeof(*t));
    return t;
}

static int decode_ioprio_fields(struct dec *d, const struct json_value *o, struct ptask *p)
{
    int cls = -1, ecls, src, rc;   /* -1: quiets a false maybe-uninitialized once inlined */
    int64_t level, raw, elevel;
    rc = get_name(d, o, "class", true, class_lookup, "I/O priority class", &cls);
    if (rc < 0)
        return rc;
    if (rc == 1) {
        /* ioprio_get failed; the writer printed level and raw as null too, and not why */
        if (!is_null(o, "level") || !is_null(o, "raw"))
            return dfail(d, "raw", "expected null with class null");
        p->s.ioprio_raw = -ENODATA;
    } else {
        if ((rc = get_int(d, o, "level", 0, 7, &level)) ||
            (rc = get_int(d, o, "raw", 0, UINT16_MAX, &raw)))
            return rc;
        /* class and level are the raw value's two parts: they must agree */
        if ((int)IOPRIO_CLASS_OF(raw) != cls || (int64_t)IOPRIO_LEVEL_OF(raw) != level)
            return dfail(d, "raw", "%" PRId64 " is %s/%u, not %s/%" PRId64, raw,
                         ioprio_class_name((enum ioprio_class)IOPRIO_CLASS_OF(raw)),
                         IOPRIO_LEVEL_OF(raw), ioprio_class_name((enum ioprio_class)cls), level);
        p->s.ioprio_raw = (int)raw;
    }
    if ((rc = get_name(d, o, "effective_class", false, eff_class_lookup,
                       "effective I/O priority class", &ecls)) ||
        (rc = get_int(d, o, "effective_level", 0, 7, &elevel)) ||
        (rc = get_name(d, o, "source", false, source_lookup, "I/O priority source", &src)))
        return rc;
    p->r.prio.cls = (enum ioprio_class)ecls;
    p->r.prio.level = (int)elevel;
    p->r.prio.source = (enum ioprio_source)src;
    return 0;
}

static int decode_ioprio(struct dec *d, const struct json_value *t, struct ptask *p)
{
    const struct json_value *o = json_get(t, "ioprio");
    enum json_status st = json_as_object(o);
    if (st != JSON_OK)
        return status_fail(d, "ioprio", o, st, "an object");
    size_t old = at_push(d, ".ioprio");
    int rc = decode_ioprio_fields(d, o, p);
    at_pop(d, old);
    return rc;
}

/* devices_from and lens_bytes (docs/json.md): absent in recordings made before them (the
 * devices then came from open files). A device in lens_bytes was seen by the lens; the
 * others came from files, and under "both" with every device in lens_bytes, all did. */
static int decode_task_lens(struct dec *d, const struct json_value *o, const struct name_ix *ix,
                            struct task_devs *td, double *lens_bps)
{
    uint16_t all = (uint16_t)((1u << td->n) - 1);
    const char *from = NULL;
    size_t len = 0;
    int rc;
    if (json_get(o, "devices_from") && (rc = get_str(d, o, "devices_from", true, &from, &len)))
        return rc;
    const struct json_value *v = json_get(o, "lens_bytes");
    if (v && json_type(v) != JSON_NULL) {
        enum json_status st = json_as_object(v);
        if (st != JSON_OK)
            return status_fail(d, "lens_bytes", v, st, "an object or null");
        td->lens = true;
        for (unsigned k = 0; k < td->n; k++) {
            const char *name = ix->devs[td->idx[k]].ds.name;
            if (!json_get(v, name))
                continue;
            size_t old = at_push(d, ".lens_bytes");
            rc = get_num(d, v, name, &lens_bps[k]);
            at_pop(d, old);
            if (rc)
                return rc;
            td->from_lens |= (uint16_t)(1u << k);
        }
    }
    bool lens_only = from && len == 4 && memcmp(from, "lens", 4) == 0;
    bool both = from && len == 4 && memcmp(from, "both", 4) == 0;
    if (from && !lens_only && !both && !(len == 5 && memcmp(from, "files", 5) == 0))
        return dfail(d, "devices_from", "not \"files\", \"lens\" nor \"both\"");
    if (lens_only && (td->from_lens & all) != all)
        return dfail(d, "devices_from", "\"lens\", but lens_bytes lacks some of the devices");
    td->from_files = lens_only ? 0 : (uint16_t)(all & ~td->from_lens);
    if (both && !td->from_files)
        td->from_files = all;
    if (both && !td->from_lens)
        return dfail(d, "devices_from", "\"both\", but lens_bytes names none of the devices");
    return 0;
}

/* requests_by_prio (docs/json.md): absent in recordings made before it (issue #35); per
 * device of lens_bytes, priority names as lens_prio_name prints them. */
static int decode_task_prios(struct dec *d, const struct json_value *o,
                             const struct name_ix *ix, struct ptask *p)
{
    const struct json_value *v = json_get(o, "requests_by_prio");
    if (!v || json_type(v) == JSON_NULL)
        return 0;
    enum json_status st = json_as_object(v);
    if (st != JSON_OK)
        return status_fail(d, "requests_by_prio", v, st, "an object or null");
    if (!p->td.lens)
        return dfail(d, "requests_by_prio", "an object, but lens_bytes is null");
    p->td.lens_prio = true;
    int rc = 0;
    for (unsigned k = 0; !rc && k < p->td.n; k++) {
        const char *name = ix->devs[p->td.idx[k]].ds.name;
        const struct json_value *dv = json_get(v, name);
        if (!dv)
            continue;
        size_t old = at_push(d, ".requests_by_prio.%s", name);
        if ((st = json_as_object(dv)) != JSON_OK)
            rc = status_fail(d, NULL, dv, st, "an object");
        else if (!(p->td.from_lens >> k & 1))
            rc = dfail(d, NULL, "a device lens_bytes does not name");
        for (size_t i = 0; !rc && i < json_len(dv); i++) {
            const struct json_value *m = json_at(dv, i);
            size_t klen;
            const char *key = json_key(m, &klen);
            char buf[64];
            unsigned prio;
            double bps;
            if (!prio_of_name(key, klen, &prio)) {
                rc = dfail(d, NULL, "\"%s\" is no I/O priority iotriage prints",
                           shown(buf, key, klen));
                break;
            }
            if ((st = json_as_double(m, &bps)) != JSON_OK) {
                rc = status_fail(d, shown(buf, key, klen), m, st, "a number");
                break;
            }
            if ((p->nprios & (p->nprios - 1)) == 0)
                p->prios = xreallocarray(p->prios, p->nprios ? 2 * p->nprios : 4,
                                         sizeof(*p->prios));
            p->prios[p->nprios++] = (struct task_prio_bps){
                .k = (uint8_t)k, .prio = (uint16_t)prio, .bps = bps };
        }
        at_pop(d, old);
    }
    return rc;
}

/* requests_wait (docs/json.md): absent in recordings made before it (issue #35); per
 * device of lens_bytes, {in_flight, await_ms (null: none completed)}. */
static int decode_task_async(struct dec *d, const struct json_value *o,
                             const struct name_ix *ix, struct ptask *p)
{
    const struct json_value *v = json_get(o, "requests_wait");
    if (!v || json_type(v) == JSON_NULL)
        return 0;
    enum json_status st = json_as_object(v);
    if (st != JSON_OK)
        return status_fail(d, "requests_wait", v, st, "an object or null");
    if (!p->td.lens)
        return dfail(d, "requests_wait", "an object, but lens_bytes is null");
    for (unsigned k = 0; k < TASK_DEVS_MAX; k++)
        p->async[k] = (struct task_async){ 0, (double)NAN };
    p->has_async = p->td.lens_wait = true;
    int rc = 0;
    for (unsigned k = 0; !rc && k < p->td.n; k++) {
        const char *name = ix->devs[p->td.idx[k]].ds.name;
        const struct json_value *dv = json_get(v, name);
        if (!dv)
            continue;
        size_t old = at_push(d, ".requests_wait.%s", name);
        if ((st = json_as_object(dv)) != JSON_OK)
            rc = status_fail(d, NULL, dv, st, "an object");
        else if (!(p->td.from_lens >> k & 1))
            rc = dfail(d, NULL, "a device lens_bytes does not name");
        else if (!(rc = get_num(d, dv, "in_flight", &p->async[k].in_flight)))
            rc = get_num(d, dv, "await_ms", &p->async[k].await_ms);
        at_pop(d, old);
    }
    return rc;
}

/* devices: names into snap.devs indices; null with devices_error when unknown. */
static int decode_task_devs(struct dec *d, const struct json_value *o, const struct name_ix *ix,
                            struct task_devs *td, double *lens_bps)
{
    const struct json_value *v = json_get(o, "devices");
    const char *s;
    size_t len;
    int rc;
    if (v && json_type(v) == JSON_NULL) {
        if ((rc = get_str(d, o, "devices_error", true, &s, &len)))
            return rc;
        /* null and no error: attribution did not run for it (known stays false) */
        td->known = s != NULL;
        td->err = s ? err_from_text(s) : 0;
        return 0;
    }
    if ((rc = get_list(d, o, "devices", false, TASK_DEVS_MAX, &v)))
        return rc;
    td->known = true;
    td->n = (uint8_t)json_len(v);
    for (unsigned k = 0; k < td->n; k++) {
        char key[32], buf[64];
        snprintf(key, sizeof(key), "devices[%u]", k);
        enum json_status st = json_as_string(json_at(v, k), &s, &len);
        if (st != JSON_OK)
            return status_fail(d, key, json_at(v, k), st, "a device name");
        int di = memchr(s, '\0', len) ? -1 : dev_find(ix, s);
        if (di < 0)
            return dfail(d, key, "\"%s\" is not among the sample's devices", shown(buf, s, len));
        td->idx[k] = (uint16_t)di;
    }
    return decode_task_lens(d, o, ix, td, lens_bps);
}

/* Identity, owner and scheduling. */
static int decode_task_ident(struct dec *d, const struct json_value *o, bool threads,
                             struct task_sample *s)
{
    int64_t pid, tgid, uid, nice, start;
    int policy, rc;
    char comm[TASK_COMM_MAX], user[TASK_USER_MAX];
    if ((rc = get_int(d, o, "pid", 0, INT_MAX, &pid)))
        return rc;
    tgid = pid;                      /* written with -P only; a process is its own group */
    if ((threads || json_get(o, "tgid")) && (rc = get_int(d, o, "tgid", 0, INT_MAX, &tgid)))
        return rc;
    if ((rc = get_fixed(d, o, "comm", false, FIT_CUT, comm, sizeof(comm))) ||
        (rc = get_fixed(d, o, "user", true, FIT_CUT, user, sizeof(user))) ||
        (rc = get_int(d, o, "uid", 0, UINT32_MAX, &uid)) ||
        (rc = get_int(d, o, "nice", -20, 19, &nice)) ||
        (rc = get_name(d, o, "policy", false, policy_lookup, "scheduling policy", &policy)) ||
        (rc = get_int(d, o, "start_ticks", 0, INT64_MAX, &start)))
        return rc;
    s->id = (pid_t)pid;
    s->tgid = (pid_t)tgid;
    s->uid = (uid_t)uid;
    s->nice = (int)nice;
    s->policy = policy;
    s->start_ticks = (unsigned long long)start;
    s->nlwp = threads ? 1 : 0;       /* not recorded for processes: 0 says unknown */
    s->comm = xstrdup(comm);         /* freed with the task (procs_free, ptasks_free) */
    s->user = xstrdup(user);
    return 0;
}

/* The rates and what the delta decided about them. */
static int decode_task_rates(struct dec *d, const struct json_value *o, struct ptask *p)
{
    struct task_rates *r = &p->r;
    const char *ioerr;
    size_t len;
    int rc;
    if ((rc = get_num(d, o, "read_bps", &r->read_bps)) ||
        (rc = get_num(d, o, "write_bps", &r->write_bps)) ||
        (rc = get_num(d, o, "cancelled_write_bps", &r->cancelled_write_bps)) ||
        (rc = get_str(d, o, "io_error", true, &ioerr, &len)) ||
        (rc = get_num(d, o, "io_delay_pct", &r->io_delay_pct)) ||
        (rc = get_num(d, o, "swapin_delay_pct", &r->swapin_delay_pct)) ||
        (rc = get_num(d, o, "blkio_avg_ms", &r->blkio_avg_ms)) ||
        (rc = get_bool(d, o, "delay_overcount", &r->delay_overcount)) ||
        (rc = decode_lens_task(d, o, r)))
        return rc;
    p->s.io_err = ioerr ? err_from_text(ioerr) : 0;
    /* delta.h's validity flags, from what the writer left null */
    r->io_valid = !isnan(r->read_bps);
    r->delay_valid = !isnan(r->io_delay_pct);
    p->s.delay_valid = r->delay_valid;   /* the delay counters themselves are not recorded */
    return 0;
}

static int decode_task(struct dec *d, const struct json_value *o, bool threads,
                       const struct name_ix *ix, struct ptask *p)
{
    const char *cmd;
    size_t cmdlen;
    int role = ROLE_NONE, rc;
    enum json_status st = json_as_object(o);
    if (st != JSON_OK)
        return status_fail(d, NULL, o, st, "an object");
    if ((rc = decode_task_ident(d, o, threads, &p->s)) ||
        (rc = get_str(d, o, "cmdline", false, &cmd, &cmdlen)) ||
        (rc = decode_task_rates(d, o, p)) || (rc = decode_ioprio(d, o, p)) ||
        (rc = decode_task_devs(d, o, ix, &p->td, p->lens_bps)) ||
        (rc = decode_task_prios(d, o, ix, p)) || (rc = decode_task_async(d, o, ix, p)))
        return rc;
    rc = get_name(d, o, "role", true, role_lookup, "role", &role);
    if (rc < 0)
        return rc;
    p->role = (enum role)role;
    p->s.cmdline = xstrndup(cmd, cmdlen);    /* last: nothing can fail after it */
    return 0;
}

int decode_processes(struct dec *d, const struct json_value *root, bool threads,
                     const struct name_ix *ix, struct ptasks *pt)
{
    const struct json_value *list;
    int rc = get_list(d, root, "processes", false, SIZE_MAX, &list);
    for (size_t i = 0; !rc && i < json_len(list); i++) {
        size_t old = at_push(d, "processes[%zu]", i);
        rc = decode_task(d, json_at(list, i), threads, ix, ptasks_add(pt));
        if (rc) {                    /* of it only its names may have been allocated */
            struct ptask *p = &pt->v[--pt->n];
            free((char *)(uintptr_t)p->s.comm);
            free((char *)(uintptr_t)p->s.user);
            free(p->prios);
        }
        at_pop(d, old);
    }
    return rc;
}

/* ---- tasks by pid, stubs for tasks only warnings name ------------------------------------ */

int cmp_pid(const void *a, const void *b)
{
    const struct pid_ix *x = a, *y = b;
    if (x->pid != y->pid)
        return x->pid < y->pid ? -1 : 1;
    return x->idx < y->idx ? -1 : x->idx > y->idx;
}

static struct pid_ix *pid_index(const struct ptasks *pt)
{
    struct pid_ix *ix = xcalloc(pt->n ? pt->n : 1, sizeof(*ix));
    for (size_t i = 0; i < pt->n; i++)
        ix[i] = (struct pid_ix){ pt->v[i].s.id, i };
    qsort(ix, pt->n, sizeof(*ix), cmp_pid);
    return ix;
}

long pid_find(const struct pid_ix *ix, size_t n, pid_t pid)
{
    size_t lo = LOWER_BOUND_ID(ix, n, pid, pid);
    return lo < n && ix[lo].pid == pid ? (long)ix[lo].idx : -1;
}

static int check_unique_pids(struct dec *d, const struct pid_ix *ix, size_t n)
{
    for (size_t i = 1; i < n; i++)
        if (ix[i].pid == ix[i - 1].pid)
            return dfail(d, NULL, "processes[%zu] and processes[%zu] are both pid %d",
                         ix[i - 1].idx, ix[i].idx, (int)ix[i].pid);
    return 0;
}

/* A task known only from a warning (the recording was made with -o): everything but its
 * pid and comm is unknown, and it is inactive so only_active outputs skip it. */
static void add_stub(struct ptasks *pt, pid_t pid, const char *comm, bool threads)
{
    struct ptask *p = ptasks_add(pt);
    p->stub = true;
    p->s.id = p->s.tgid = pid;      /* a thread's group is not known either */
    p->s.comm = xstrdup(comm);
    p->s.user = xstrdup("");
    p->s.cmdline = xstrdup("");
    p->s.uid = (uid_t)-1;
    p->s.policy = -1;
    p->s.nlwp = threads ? 1 : 0;
    p->s.io_err = -ENODATA;
    p->s.ioprio_raw = -ENODATA;
    p->r.read_bps = p->r.write_bps = p->r.cancelled_write_bps = (double)NAN;
    p->r.io_delay_pct = p->r.swapin_delay_pct = p->r.blkio_avg_ms = p->r.uring_wait_pct = (double)NAN;
    p->r.prio = ioprio_effective(IOPRIO_MAKE(IOC_NONE, 0), 0, SCHED_OTHER);
}

static int cmp_ptask(const void *a, const void *b)
{
    const struct ptask *x = a, *y = b;
    return (x->s.id > y->s.id) - (x->s.id < y->s.id);
}

/* Stubs for warnings whose pid is not listed, one per pid, with the comm of its first
 * warning. The writer listed processes in pid order; when they are, stubs join in that
 * order (which keeps the listed ones in their written order), otherwise they go last. */
int add_stubs(struct dec *d, const struct json_value *warnings, bool threads,
              struct ptasks *pt, size_t *nstubs)
{
    size_t nlisted = pt->n, nw = json_len(warnings), nc = 0;
    struct pid_ix *ix = pid_index(pt);
    struct pid_ix *cand = xcalloc(nw ? nw : 1, sizeof(*cand));   /* pid, warning index */
    int rc = check_unique_pids(d, ix, nlisted);
    for (size_t i = 0; !rc && i < nw; i++) {
        const struct json_value *pv = json_get(json_at(warnings, i), "pid");
        int64_t pid;
        /* no pid: a device finding; a bad one: damage decode_warning reports */
        if (json_as_int(pv, 0, INT_MAX, &pid) == JSON_OK && pid_find(ix, nlisted, (pid_t)pid) < 0)
            cand[nc++] = (struct pid_ix){ (pid_t)pid, i };
    }
    qsort(cand, nc, sizeof(*cand), cmp_pid);
    for (size_t k = 0; !rc && k < nc; k++) {
        if (k > 0 && cand[k].pid == cand[k - 1].pid)
            continue;
        char comm[TASK_COMM_MAX];
        size_t old = at_push(d, "warnings[%zu]", cand[k].idx);
        rc = get_fixed(d, json_at(warnings, cand[k].idx), "comm", false, FIT_CUT, comm,
                       sizeof(comm));
        at_pop(d, old);
        if (!rc)
            add_stub(pt, cand[k].pid, comm, threads);
    }
    free(cand);
    free(ix);
    *nstubs = pt->n - nlisted;
    if (rc || *nstubs == 0)
        return rc;
    bool sorted = true;
    for (size_t i = 1; i < nlisted && sorted; i++)
        sorted = pt->v[i - 1].s.id < pt->v[i].s.id;
    if (sorted)
        qsort(pt->v, pt->n, sizeof(*pt->v), cmp_ptask);
    return 0;
}

/* The decoded tasks into the frame's parallel arrays (snapshot, result, verdict roles). */
void layout_tasks(struct replay_frame *f, struct ptasks *pt)
{
    size_t n = pt->n;
    f->snap.tasks = xcalloc(n ? n : 1, sizeof(*f->snap.tasks));
    f->snap.tdevs = xcalloc(n ? n : 1, sizeof(*f->snap.tdevs));
    f->res.tasks = xcalloc(n ? n : 1, sizeof(*f->res.tasks));
    f->ver.roles = xcalloc(n ? n : 1, sizeof(*f->ver.roles));
    if (f->nunlisted)
        f->unlisted = xcalloc(n, sizeof(*f->unlisted));
    for (size_t i = 0; i < n; i++) {
        f->snap.tasks[i] = pt->v[i].s;   /* the strings change owner */
        f->snap.tdevs[i] = pt->v[i].td;
        if (pt->v[i].td.lens && pt->v[i].td.from_lens)
            memcpy(task_lens_row(&f->snap, &f->snap.tdevs[i]), pt->v[i].lens_bps,
                   sizeof(pt->v[i].lens_bps));
        for (unsigned k = 0; pt->v[i].has_async && k < pt->v[i].td.n; k++)
            if (pt->v[i].td.from_lens >> k & 1)
                *task_lens_async(&f->snap, &f->snap.tdevs[i], k) = pt->v[i].async[k];
        for (size_t j = 0; j < pt->v[i].nprios; j++)
            task_lens_prio_add(&f->snap, &f->snap.tdevs[i], pt->v[i].prios[j].k,
                               pt->v[i].prios[j].prio, pt->v[i].prios[j].bps);
        free(pt->v[i].prios);
        f->res.tasks[i] = pt->v[i].r;
        f->res.tasks[i].task = &f->snap.tasks[i];
        f->ver.roles[i] = pt->v[i].role;
        if (f->unlisted)
            f->unlisted[i] = pt->v[i].stub;
    }
    f->snap.ntasks = f->res.ntasks = f->ver.nroles = n;
    free(pt->v);
    memset(pt, 0, sizeof(*pt));
}
