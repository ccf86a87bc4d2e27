/* SPDX-License-Identifier: GPL-2.0-or-later */
/* sample/decode_devices.c: a recorded sample's devices (block devices, rates, stacks) and the index of
 * them by name that processes and warnings resolve names with.
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

#include "sample/json.h"
#include "sample/sample.h"
#include "util.h"
#include "util/escape.h"
#include "util/fmt.h"

/* ---- devices ------------------------------------------------------------------------------- */

/* Member i of list (the value of key), a string that fits dst with no NUL in it. */
static int list_string(struct dec *d, const struct json_value *list, const char *key, unsigned i,
                       const char *what, char *dst, size_t cap)
{
    const char *s;
    size_t len;
    enum json_status st = json_as_string(json_at(list, i), &s, &len);
    char k[48], buf[64];
    snprintf(k, sizeof(k), "%s[%u]", key, i);
    if (st != JSON_OK)
        return status_fail(d, k, json_at(list, i), st, "a string");
    if (len >= cap || memchr(s, '\0', len))
        return dfail(d, k, "\"%s\" is no %s", shown(buf, s, len), what);
    copy_cut(dst, cap, s, len);
    return 0;
}

static int decode_schedulers(struct dec *d, const struct json_value *o, struct blockdev_info *b)
{
    const struct json_value *list;
    int rc = get_fixed(d, o, "scheduler", true, FIT_EXACT, b->scheduler, sizeof(b->scheduler));
    if (!rc)
        rc = get_list(d, o, "schedulers", false, BD_NSCHED, &list);
    if (rc)
        return rc;
    b->nsched = (unsigned)json_len(list);
    for (unsigned i = 0; i < b->nsched; i++)
        if ((rc = list_string(d, list, "schedulers", i, "scheduler name", b->schedulers[i], BD_SCHED_MAX)))
            return rc;
    return 0;
}

static int decode_tunables(struct dec *d, const struct json_value *o, struct blockdev_info *b)
{
    const struct json_value *t;
    int rc = get_list(d, o, "tunables", true, BD_NTUNABLES, &t);
    if (rc)
        return rc;
    b->ntunables = (unsigned)json_len(t);
    for (unsigned i = 0; i < b->ntunables; i++) {
        struct bd_tunable *x = &b->tunables[i];
        size_t klen, vlen;
        const char *key = json_key(json_at(t, i), &klen), *val;
        char buf[64];
        enum json_status st = json_as_string(json_at(t, i), &val, &vlen);
        if (st != JSON_OK)
            return status_fail(d, "tunables", json_at(t, i), st, "string values");
        if (klen >= sizeof(x->name) || vlen >= sizeof(x->value) || memchr(key, '\0', klen) ||
            memchr(val, '\0', vlen))
            return dfail(d, "tunables", "\"%s\": name or value too long (%zu bytes at most)",
                         shown(buf, key, klen), sizeof(x->name) - 1);
        copy_cut(x->name, sizeof(x->name), key, klen);
        copy_cut(x->value, sizeof(x->value), val, vlen);
    }
    return 0;
}

/* The device's sysfs part (blockdev_info). */
static int decode_bd(struct dec *d, const struct json_value *o, struct blockdev_info *b)
{
    long rot, hwq;
    int rc;
    if ((rc = get_bool(d, o, "partition", &b->partition)) ||
        (rc = get_fixed(d, o, "disk", false, FIT_EXACT, b->disk, sizeof(b->disk))) ||
        (rc = decode_schedulers(d, o, b)) ||
        (rc = get_known(d, o, "nr_requests", LONG_MAX, &b->nr_requests)) ||
        (rc = get_known(d, o, "rotational", INT_MAX, &rot)) ||
        (rc = get_known(d, o, "hw_queues", INT_MAX, &hwq)) ||
        (rc = get_known(d, o, "inflight", LONG_MAX, &b->inflight_r)) ||
        (rc = decode_tunables(d, o, b)))
        return rc;
    b->rotational = (int)rot;
    b->hw_queues = (int)hwq;
    /* the writer printed reads + writes: all of it goes to reads; unknown stays -1 */
    b->inflight_w = b->inflight_r < 0 ? -1 : 0;
    /* not recorded: a queue/ directory is what gives any of these */
    b->has_queue = b->nsched > 0 || b->nr_requests >= 0 || b->rotational >= 0;
    return 0;
}


/* The rates of one device, in the writer's order. */
static int decode_dev_rates(struct dec *d, const struct json_value *o, struct dev_rates *r)
{
    static const struct { const char *key; size_t off; } nums[] = {
#define R(k) { #k, offsetof(struct dev_rates, k) }
        R(r_s), R(w_s), R(d_s), R(f_s), R(rkb_s), R(wkb_s), R(dkb_s),
        R(rrqm_s), R(wrqm_s), R(drqm_s), R(rrqm_pct), R(wrqm_pct), R(drqm_pct),
        R(r_await), R(w_await), R(d_await), R(f_await),
        R(rareq_sz), R(wareq_sz), R(dareq_sz), R(aqu_sz), R(util), R(quiet_await),
#undef R
    };
    for (size_t i = 0; i < ARRAY_SIZE(nums); i++) {
        double v;
        int rc = get_num(d, o, nums[i].key, &v);
        if (rc)
            return rc;
        memcpy((char *)r + nums[i].off, &v, sizeof(v));
    }
    int rc = get_tri(d, o, "saturated", &r->saturated);
    if (!rc)
        rc = get_bool(d, o, "reset", &r->reset);
    if (!rc)
        rc = decode_lens_stages(d, o, r);
    if (!rc)
        rc = decode_lens_lat(d, o, r);
    r->kernel_bps = (double)NAN;     /* absent in recordings made before it */
    if (!rc && json_get(o, "writeback_bps"))
        rc = get_num(d, o, "writeback_bps", &r->kernel_bps);
    if (!rc)
        rc = decode_writeback_by(d, o, r);
    if (rc)
        return rc;
    /* The delta's own flags, from what it left null: r_s is null exactly when there was
     * no previous sample or a counter reset; discard and flush rates exist only when the
     * kernel gives those fields. */
    r->valid = !isnan(r->r_s);
    r->has_discard = !isnan(r->d_s);
    r->has_flush = !isnan(r->f_s);
    /* Not recorded: the await of reads and writes together, rebuilt from its halves
     * (to the three decimals they were printed with). */
    double rt = r->r_s > 0 ? r->r_await * r->r_s : 0, wt = r->w_s > 0 ? r->w_await * r->w_s : 0;
    double ios = r->r_s + r->w_s;
    r->await = ios > 0 ? (rt + wt) / ios : (double)NAN;
    return 0;
}

/* slaves or holders: absent or null (a recording made before they were kept) is
 * unknown, never empty; a name that is no device's fails the recording. */
static int decode_stack_list(struct dec *d, const struct json_value *o, const char *key,
                             struct blkstack_list *l)
{
    memset(l, 0, sizeof(*l));
    const struct json_value *v = json_get(o, key), *list;
    if (!v || json_type(v) == JSON_NULL)
        return 0;
    int rc = get_list(d, o, key, false, BLKSTACK_MAX, &list);
    if (rc)
        return rc;
    l->known = true;
    l->n = (uint8_t)json_len(list);
    for (unsigned i = 0; i < l->n; i++) {
        if ((rc = list_string(d, list, key, i, "device name", l->name[i], BD_NAME_MAX)))
            return rc;
        if (!blkstack_name_ok(l->name[i])) {
            char k[48], buf[64];
            snprintf(k, sizeof(k), "%s[%u]", key, i);
            return dfail(d, k, "\"%s\" is no device name", shown(buf, l->name[i], strlen(l->name[i])));
        }
    }
    return 0;
}

static int decode_device(struct dec *d, const struct json_value *o, struct dev_sample *s,
                         struct dev_rates *r)
{
    int64_t major, minor;
    int rc;
    enum json_status st = json_as_object(o);
    if (st != JSON_OK)
        return status_fail(d, NULL, o, st, "an object");
    if ((rc = get_fixed(d, o, "name", false, FIT_EXACT, s->ds.name, sizeof(s->ds.name))) ||
        (rc = get_int(d, o, "major", 0, UINT_MAX, &major)) ||
        (rc = get_int(d, o, "minor", 0, UINT_MAX, &minor)) ||
        (rc = decode_bd(d, o, &s->bd)) || (rc = decode_dev_rates(d, o, r)) ||
        (rc = decode_stack_list(d, o, "slaves", &s->stack.slaves)) ||
        (rc = decode_stack_list(d, o, "holders", &s->stack.holders)))
        return rc;
    if (!s->ds.name[0])
        return dfail(d, "name", "empty");
    s->ds.major = (unsigned)major;
    s->ds.minor = (unsigned)minor;
    /* The counters are not recorded (f[] stays 0); how many the kernel gave shows in
     * which rates it could compute. */
    s->ds.nfields = r->has_flush ? 17 : r->has_discard ? 15 : 11;
    return 0;
}

int dev_find(const struct name_ix *ix, const char *name)
{
    size_t lo = 0, hi = ix->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(ix->devs[ix->order[mid]].ds.name, name);
        if (c == 0)
            return (int)ix->order[mid];
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return -1;
}

static int cmp_dev_name(const void *a, const void *b, void *ctx)
{
    const struct dev_sample *devs = ctx;
    return strcmp(devs[*(const size_t *)a].ds.name, devs[*(const size_t *)b].ds.name);
}

/* Names must be unique, or a lookup would have two answers. */
int build_dev_index(struct dec *d, struct name_ix *ix, const struct dev_sample *devs,
                    size_t n)
{
    ix->devs = devs;
    ix->n = n;
    ix->order = xcalloc(n ? n : 1, sizeof(size_t));
    for (size_t i = 0; i < n; i++)
        ix->order[i] = i;
    qsort_r(ix->order, n, sizeof(size_t), cmp_dev_name, (void *)(uintptr_t)devs);
    for (size_t i = 1; i < n; i++) {
        size_t a = ix->order[i - 1], b = ix->order[i];
        if (strcmp(devs[a].ds.name, devs[b].ds.name) == 0) {
            char buf[64];
            return dfail(d, NULL, "devices[%zu] and devices[%zu] are both \"%s\"",
                         a < b ? a : b, a < b ? b : a,
                         shown(buf, devs[a].ds.name, strlen(devs[a].ds.name)));
        }
    }
    return 0;
}

int decode_devices(struct dec *d, const struct json_value *root, struct replay_frame *f)
{
    const struct json_value *list;
    int rc = get_list(d, root, "devices", false, REPLAY_DEVS_MAX, &list);
    if (rc)
        return rc;
    size_t n = json_len(list), cap = 0;
    for (size_t i = 0; i < n; i++) {
        if (i == cap) {              /* grown as decoded: memory follows what is valid */
            cap = cap ? 2 * cap : 16;
            f->snap.devs = xreallocarray(f->snap.devs, cap, sizeof(*f->snap.devs));
            f->res.devs = xreallocarray(f->res.devs, cap, sizeof(*f->res.devs));
        }
        memset(&f->snap.devs[i], 0, sizeof(f->snap.devs[i]));
        memset(&f->res.devs[i], 0, sizeof(f->res.devs[i]));
        size_t old = at_push(d, "devices[%zu]", i);
        rc = decode_device(d, json_at(list, i), &f->snap.devs[i], &f->res.devs[i]);
        at_pop(d, old);
        if (rc) {
            free(f->res.devs[i].lat);    /* not yet counted in ndevs: result_free misses it */
            return rc;
        }
        f->snap.ndevs = f->res.ndevs = i + 1;
    }
    for (size_t i = 0; i < n; i++)
        f->res.devs[i].dev = &f->snap.devs[i];
    return 0;
}
