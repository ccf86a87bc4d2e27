/* SPDX-License-Identifier: GPL-2.0-or-later */
/* sample/decode_cgroups.c: "cgroups" and each process's "cgroup" of a recorded sample back
 * into a frame (sample/decode_cgroups.h), the inverse of out/json.c's cgroup part. */
#include "sample/decode_cgroups.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "source/cgroups.h"
#include "util.h"
#include "verdict.h"

struct cdec {
    struct replay_frame *f;
    char *err;
    size_t errlen;
    char at[64];                     /* "cgroups[3]" */
    struct cgroup_dev_rates *rows;   /* the next free device row of the rates' block */
};

__attribute__((format(printf, 3, 4)))
static int cfail(struct cdec *d, const char *key, const char *fmt, ...)
{
    char msg[200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    snprintf(d->err, d->errlen, "%s%s%s: %s", d->at, key ? "." : "", key ? key : "", msg);
    return -EINVAL;
}

/* A string member (NULL for null when nullable). */
static int get_s(struct cdec *d, const struct json_value *o, const char *key, bool nullable, const char **out)
{
    const struct json_value *v = json_get(o, key);
    if (nullable && v && json_type(v) == JSON_NULL) {
        *out = NULL;
        return 0;
    }
    enum json_status st = json_as_string(v, out, NULL);
    return st == JSON_OK ? 0 : cfail(d, key, "%s, not a string", json_status_text(st));
}

static int get_d(struct cdec *d, const struct json_value *o, const char *key, double *out)
{
    const struct json_value *v = json_get(o, key);
    if (v && json_type(v) == JSON_NULL) {
        *out = (double)NAN;
        return 0;
    }
    enum json_status st = json_as_double(v, out);
    return st == JSON_OK ? 0 : cfail(d, key, "%s, not a number", json_status_text(st));
}

/* An integer in [lo, hi]; null gives `null_as` when nullable. */
static int get_i(struct cdec *d, const struct json_value *o, const char *key, int64_t lo, int64_t hi,
                 bool nullable, int64_t null_as, int64_t *out)
{
    const struct json_value *v = json_get(o, key);
    if (nullable && v && json_type(v) == JSON_NULL) {
        *out = null_as;
        return 0;
    }
    enum json_status st = json_as_int(v, lo, hi, out);
    return st == JSON_OK ? 0 : cfail(d, key, "%s", json_status_text(st));
}

static void cut_copy(char *dst, size_t cap, const char *s)
{
    str_copy(dst, s ? s : "", cap);
}

/* A device as out/json.c names it: a listed device's name, else "MAJ:MIN". */
static int get_dev(struct cdec *d, const struct json_value *o, unsigned *major, unsigned *minor, int *idx)
{
    const char *name;
    int rc = get_s(d, o, "device", false, &name);
    if (rc)
        return rc;
    const struct snapshot *s = &d->f->snap;
    for (size_t i = 0; i < s->ndevs; i++)
        if (strcmp(s->devs[i].ds.name, name) == 0) {
            *major = s->devs[i].ds.major;
            *minor = s->devs[i].ds.minor;
            *idx = (int)i;
            return 0;
        }
    unsigned a, b;
    char tail;
    if (sscanf(name, "%u:%u%c", &a, &b, &tail) != 2)
        return cfail(d, "device", "not among the sample's devices, nor MAJ:MIN");
    *major = a;
    *minor = b;
    *idx = -1;
    return 0;
}

static int get_weight(struct cdec *d, const struct json_value *o, const char *key, struct cg_weight *w,
                      int *err)
{
    const struct json_value *v = json_get(o, key);
    memset(w, 0, sizeof(*w));
    w->dflt = -1;
    if (!v || json_type(v) == JSON_NULL) {
        *err = -ENOENT;
        return 0;
    }
    *err = 0;
    int64_t x;
    int rc = get_i(d, v, "default", 1, 10000, true, -1, &x);
    if (rc)
        return rc;
    w->dflt = (int)x;
    const struct json_value *rows = json_get(v, "devices");
    if (json_as_array(rows) != JSON_OK || json_len(rows) > CG_DEVS_MAX)
        return cfail(d, key, "devices: not an array of at most %d", CG_DEVS_MAX);
    for (size_t i = 0; i < json_len(rows); i++) {
        const struct json_value *r = json_at(rows, i);
        int idx;
        if ((rc = get_dev(d, r, &w->row[i].major, &w->row[i].minor, &idx)) ||
            (rc = get_i(d, r, "weight", 1, 10000, false, 0, &x)))
            return rc;
        w->row[i].weight = (int)x;
        w->n++;
    }
    return 0;
}

static int get_limit(struct cdec *d, const struct json_value *o, const char *key, uint64_t *out)
{
    int64_t x;
    int rc = get_i(d, o, key, 0, INT64_MAX, true, -1, &x);
    if (!rc)
        *out = x < 0 ? CG_UNLIMITED : (uint64_t)x;
    return rc;
}

/* out/json.c's "unavailable" texts backwards. */
static int unavailable_err(const char *why)
{
    if (!why || strncmp(why, "the root cgroup", 15) == 0 || strncmp(why, "the io controller", 17) == 0 ||
        strncmp(why, "no cgroup v2", 12) == 0)
        return -ENOENT;
    if (strcmp(why, "permission denied") == 0)
        return -EACCES;
    if (strcmp(why, "malformed") == 0)
        return -EINVAL;
    for (int e = 1; e < 256; e++)
        if (strcmp(why, strerror(e)) == 0)
            return -e;
    return -EIO;
}

static int decode_settings(struct cdec *d, const struct json_value *o, struct cgroup_settings *s)
{
    const struct json_value *v = json_get(o, "settings");
    if (json_as_object(v) != JSON_OK)
        return cfail(d, "settings", "not an object");
    const char *h, *why, *prio;
    int rc;
    if ((rc = get_s(d, v, "hierarchy", false, &h)) || (rc = get_s(d, v, "unavailable", true, &why)) ||
        (rc = get_s(d, v, "io_prio_class", true, &prio)))
        return rc;
    if (strcmp(h, "v2") != 0 && strcmp(h, "v1-blkio") != 0)
        return cfail(d, "settings.hierarchy", "neither v2 nor v1-blkio");
    s->v1 = h[1] == '1';
    const struct json_value *m = json_get(v, "io_max");
    if (!m || json_type(m) == JSON_NULL) {
        s->iomax_err = unavailable_err(why);
    } else {
        if (json_as_array(m) != JSON_OK || json_len(m) > CG_DEVS_MAX)
            return cfail(d, "settings.io_max", "not an array of at most %d", CG_DEVS_MAX);
        for (size_t i = 0; i < json_len(m); i++) {
            const struct json_value *r = json_at(m, i);
            struct cg_limit_row *l = &s->iomax.row[i];
            int idx;
            if ((rc = get_dev(d, r, &l->major, &l->minor, &idx)) || (rc = get_limit(d, r, "rbps", &l->rbps)) ||
                (rc = get_limit(d, r, "wbps", &l->wbps)) || (rc = get_limit(d, r, "riops", &l->riops)) ||
                (rc = get_limit(d, r, "wiops", &l->wiops)))
                return rc;
            s->iomax.n++;
        }
    }
    if ((rc = get_weight(d, v, "io_weight", &s->weight, &s->weight_err)) ||
        (rc = get_weight(d, v, "io_bfq_weight", &s->bfq_weight, &s->bfq_weight_err)))
        return rc;
    s->prio_err = -ENOENT;
    if (prio) {
        if (cgroup_prio_parse(prio, strlen(prio), &s->prio))
            return cfail(d, "settings.io_prio_class", "not a policy name");
        s->prio_err = 0;
    }
    return 0;
}

static int decode_stat(struct cdec *d, const struct json_value *o, struct cgroup_entry *e, struct cgroup_rates *c)
{
    const struct json_value *v = json_get(o, "io_stat");
    if (!v || json_type(v) == JSON_NULL) {
        e->iostat_err = -ENOENT;
        return 0;
    }
    if (json_as_array(v) != JSON_OK || json_len(v) > CG_DEVS_MAX)
        return cfail(d, "io_stat", "not an array of at most %d", CG_DEVS_MAX);
    c->dev = d->rows;
    d->rows += json_len(v);
    if (json_len(v))
        e->iostat_row = xcalloc(json_len(v), sizeof(*e->iostat_row));
    for (size_t i = 0; i < json_len(v); i++) {
        const struct json_value *r = json_at(v, i);
        struct cgroup_dev_rates *x = &c->dev[i];
        int64_t depth;
        int rc;
        if ((rc = get_dev(d, r, &x->major, &x->minor, &x->dev)) || (rc = get_d(d, r, "rbps", &x->rbps)) ||
            (rc = get_d(d, r, "wbps", &x->wbps)) || (rc = get_d(d, r, "riops", &x->riops)) ||
            (rc = get_d(d, r, "wiops", &x->wiops)) || (rc = get_d(d, r, "cost_wait_pct", &x->cost_wait_pct)) ||
            (rc = get_d(d, r, "cost_indelay_pct", &x->cost_indelay_pct)) ||
            (rc = get_i(d, r, "latency_depth", 0, 1 << 30, true, -1, &depth)))
            return rc;
        x->has_cost = !isnan(x->cost_wait_pct);
        x->has_lat = depth >= 0;
        x->lat_depth = (long)depth;
        e->iostat_row[i].major = x->major;
        e->iostat_row[i].minor = x->minor;
        c->ndev++;
        e->niostat++;
    }
    return 0;
}

static int decode_names(struct cdec *d, const struct json_value *o, struct cgroup_names *n)
{
    const char *unit, *s1, *s2, *s3;
    int rc = get_s(d, o, "unit", true, &unit);
    if (rc)
        return rc;
    cut_copy(n->unit, sizeof(n->unit), unit);
    const struct json_value *c = json_get(o, "container");
    if (c && json_type(c) != JSON_NULL) {
        if ((rc = get_s(d, c, "runtime", false, &s1)) || (rc = get_s(d, c, "id", false, &s2)) ||
            (rc = get_s(d, c, "short_id", false, &s3)))
            return rc;
        cut_copy(n->runtime, sizeof(n->runtime), s1);
        cut_copy(n->id, sizeof(n->id), s2);
        cut_copy(n->short_id, sizeof(n->short_id), s3);
    }
    const struct json_value *p = json_get(o, "pod");
    if (p && json_type(p) != JSON_NULL) {
        if ((rc = get_s(d, p, "uid", false, &s1)) || (rc = get_s(d, p, "qos", false, &s2)))
            return rc;
        cut_copy(n->pod_uid, sizeof(n->pod_uid), s1);
        cut_copy(n->qos, sizeof(n->qos), s2);
    }
    return 0;
}

/* Mark the frame's warning that this cgroup's list repeats. */
static int claim_warning(struct cdec *d, const struct json_value *o, int k)
{
    const char *code, *dev, *text;
    int rc;
    if ((rc = get_s(d, o, "code", false, &code)) || (rc = get_s(d, o, "device", false, &dev)) ||
        (rc = get_s(d, o, "text", false, &text)))
        return rc;
    int64_t pid = -1;
    if (json_get(o, "pid") && (rc = get_i(d, o, "pid", 0, INT32_MAX, false, 0, &pid)))
        return rc;
    struct verdicts *v = &d->f->ver;
    const struct result *r = &d->f->res;
    for (size_t i = 0; i < v->n; i++) {
        struct warning *w = &v->w[i];
        if (w->cgroup >= 0 || strcmp(warn_code_name(w->code), code) != 0 || strcmp(w->text, text) != 0 ||
            w->dev < 0 || strcmp(r->devs[w->dev].dev->ds.name, dev) != 0)
            continue;
        if ((w->task < 0) != (pid < 0) || (w->task >= 0 && r->tasks[w->task].task->id != (pid_t)pid))
            continue;
        w->cgroup = k;
        return 0;
    }
    return cfail(d, "warnings", "a warning that the sample's list does not hold");
}

static int decode_one(struct cdec *d, const struct json_value *o, struct cgroup_set *set,
                      struct cgroup_rates *rates, size_t k)
{
    struct cgroup_entry *e = &set->v[k];
    struct cgroup_rates *c = &rates[k];
    c->cg = e;
    if (json_as_object(o) != JSON_OK)
        return cfail(d, NULL, "not an object");
    const char *path, *parent, *perr;
    int64_t x;
    int rc;
    if ((rc = get_s(d, o, "path", false, &path)) || (rc = get_s(d, o, "parent", true, &parent)))
        return rc;
    e->path = xstrdup(path);
    e->parent = -1;
    if (parent) {
        for (size_t i = 0; i < k; i++)
            if (strcmp(set->v[i].path, parent) == 0)
                e->parent = (int)i;
        if (e->parent < 0)
            return cfail(d, "parent", "not a cgroup listed before it");
        e->depth = set->v[e->parent].depth + 1;
    }
    if ((rc = decode_names(d, o, &e->names)))
        return rc;
    if ((rc = get_i(d, o, "tasks", 0, INT32_MAX, false, 0, &x)))
        return rc;
    e->ntasks = (unsigned)x;
    if ((rc = get_i(d, o, "tasks_below", 0, INT32_MAX, false, 0, &x)))
        return rc;
    c->ntasks = (unsigned)x;
    if ((rc = get_i(d, o, "io_unknown", 0, INT32_MAX, false, 0, &x)))
        return rc;
    c->io_unknown = (unsigned)x;
    if ((rc = get_d(d, o, "read_bps", &c->read_bps)) || (rc = get_d(d, o, "write_bps", &c->write_bps)) ||
        (rc = get_d(d, o, "io_delay_pct", &c->io_delay_pct)))
        return rc;
    const struct json_value *p = json_get(o, "io_pressure");
    if (json_as_object(p) != JSON_OK)
        return cfail(d, "io_pressure", "not an object");
    if ((rc = get_d(d, p, "some_pct", &c->some_pct)) || (rc = get_d(d, p, "full_pct", &c->full_pct)) ||
        (rc = get_s(d, p, "error", true, &perr)))
        return rc;
    e->pressure.err = !perr ? 0 : strcmp(perr, "absent") == 0 ? -ENOENT : unavailable_err(perr);
    if ((rc = decode_stat(d, o, e, c)) || (rc = decode_settings(d, o, &e->settings)))
        return rc;
    const struct json_value *ws = json_get(o, "warnings");
    if (json_as_array(ws) != JSON_OK)
        return cfail(d, "warnings", "not an array");
    for (size_t i = 0; i < json_len(ws); i++)
        if ((rc = claim_warning(d, json_at(ws, i), (int)k)))
            return rc;
    return 0;
}

static int cmp_path_ix(const void *a, const void *b, void *ctx)
{
    const struct cgroup_set *s = ctx;
    return strcmp(s->v[*(const int *)a].path, s->v[*(const int *)b].path);
}

/* Each listed process's "cgroup" path into set->task_cg. */
static int decode_members(struct cdec *d, const struct json_value *root, struct cgroup_set *set)
{
    const struct snapshot *snap = &d->f->snap;
    int *order = xcalloc(set->n ? set->n : 1, sizeof(int));
    for (size_t i = 0; i < set->n; i++)
        order[i] = (int)i;
    qsort_r(order, set->n, sizeof(int), cmp_path_ix, set);
    const struct json_value *procs = json_get(root, "processes");
    int rc = 0;
    for (size_t i = 0; !rc && i < json_len(procs); i++) {
        const struct json_value *o = json_at(procs, i);
        snprintf(d->at, sizeof(d->at), "processes[%zu]", i);
        int64_t pid;
        const char *path;
        if ((rc = get_i(d, o, "pid", 0, INT32_MAX, false, 0, &pid)) || (rc = get_s(d, o, "cgroup", true, &path)))
            break;
        size_t lo = LOWER_BOUND_ID(snap->tasks, snap->ntasks, id, (pid_t)pid);
        if (lo == snap->ntasks || snap->tasks[lo].id != (pid_t)pid) {
            rc = cfail(d, "pid", "not among the sample's tasks");
            break;
        }
        if (!path)
            continue;
        size_t a = 0, b = set->n;
        while (a < b) {
            size_t mid = a + (b - a) / 2;
            if (strcmp(set->v[order[mid]].path, path) < 0)
                a = mid + 1;
            else
                b = mid;
        }
        if (a == set->n || strcmp(set->v[order[a]].path, path) != 0) {
            rc = cfail(d, "cgroup", "not among the sample's cgroups");
            break;
        }
        set->task_cg[lo] = order[a];
    }
    free(order);
    return rc;
}

int replay_cgroups_decode(const struct json_value *root, struct replay_frame *f, char *err, size_t errlen)
{
    struct cdec d = { .f = f, .err = err, .errlen = errlen };
    const struct json_value *list = json_get(root, "cgroups");
    if (!list)
        return 0;                    /* a recording made before the cgroup lens */
    if (json_as_array(list) != JSON_OK) {
        snprintf(err, errlen, "cgroups: not an array");
        return -EINVAL;
    }
    size_t n = json_len(list);
    struct cgroup_set *set = xcalloc(1, sizeof(*set));
    set->n = n;
    set->v = xcalloc(n ? n : 1, sizeof(*set->v));
    set->ntasks = f->snap.ntasks;
    set->task_cg = xcalloc(set->ntasks ? set->ntasks : 1, sizeof(int));
    set->task_err = xcalloc(set->ntasks ? set->ntasks : 1, sizeof(int));
    for (size_t i = 0; i < set->ntasks; i++)
        set->task_cg[i] = -1;
    /* the rates and their device rows in one block, as cgroups_delta makes it */
    size_t nrows = 0;
    for (size_t k = 0; k < n; k++) {
        const struct json_value *st = json_get(json_at(list, k), "io_stat");
        size_t m = json_as_array(st) == JSON_OK ? json_len(st) : 0;
        nrows += m <= CG_DEVS_MAX ? m : 0;
    }
    struct cgroup_rates *rates = cgroups_rates_alloc(n, nrows);
    d.rows = (struct cgroup_dev_rates *)(rates + n);
    int rc = 0;
    for (size_t k = 0; !rc && k < n; k++) {
        snprintf(d.at, sizeof(d.at), "cgroups[%zu]", k);
        rc = decode_one(&d, json_at(list, k), set, rates, k);
    }
    if (!rc)
        rc = decode_members(&d, root, set);
    if (rc) {
        for (size_t i = 0; i < f->ver.n; i++)
            f->ver.w[i].cgroup = -1;
        cgroups_free(set);
        free(rates);
        return rc;
    }
    f->snap.cgroups = set;
    f->res.cgroups = rates;
    f->res.ncgroups = n;
    return 0;
}
