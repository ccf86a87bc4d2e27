/* SPDX-License-Identifier: GPL-2.0-or-later */
/* sample/decode_lens.c: the BPF lens's keys (docs/json.md): absent in recordings made before the
 * lens, which then read as "no lens".
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

/* ---- The BPF lens's keys (docs/json.md): absent in recordings made before the lens,
 * which then read as "no lens". ---- */
static int class_of_name(const char *s, size_t len)
{
    static const char *const names[] = { "none", "rt", "be", "idle" };
    for (int c = 0; c < 4; c++)
        if (s && strlen(names[c]) == len && memcmp(s, names[c], len) == 0)
            return c;
    return -1;
}

int decode_lens_head(struct dec *d, const struct json_value *root, struct snapshot *s)
{
    const struct json_value *l = json_get(root, "lens");
    if (!l)
        return 0;
    enum json_status st = json_as_object(l);
    if (st != JSON_OK)
        return status_fail(d, "lens", l, st, "an object");
    const char *why;
    size_t len;
    int rc;
    if ((rc = get_bool(d, l, "on", &s->lens_on)) || (rc = get_str(d, l, "reason", true, &why, &len)))
        return rc;
    if (why)
        snprintf(s->lens_msg, sizeof(s->lens_msg), "%.*s", (int)len, why);
    /* which loader loaded it: absent in recordings made before the key */
    const char *ld = NULL;
    if (json_get(l, "loader") && (rc = get_str(d, l, "loader", true, &ld, &len)))
        return rc;
    if (ld && !(len == 5 && memcmp(ld, "light", 5) == 0) && !(len == 6 && memcmp(ld, "libbpf", 6) == 0))
        return dfail(d, "loader", "not \"light\", \"libbpf\" nor null");
    if (ld && !s->lens_on)
        return dfail(d, "loader", "a loader for a lens that is off");
    if (ld)
        snprintf(s->lens_loader, sizeof(s->lens_loader), "%.*s", (int)len, ld);
    return 0;
}

int decode_lens_stages(struct dec *d, const struct json_value *o, struct dev_rates *r)
{
    struct lens_dev_interval *l = &r->lens;
    memset(l, 0, sizeof(*l));
    l->saturated = l->top_class = l->held_class = -1;
    const char *src;
    size_t len;
    int rc;
    /* before the lens, the baseline was the only rule */
    r->sat_source = r->saturated >= 0 ? SAT_SRC_BASELINE : SAT_SRC_NONE;
    if (json_get(o, "saturated_source")) {
        if ((rc = get_str(d, o, "saturated_source", true, &src, &len)))
            return rc;
        r->sat_source = !src ? SAT_SRC_NONE
                      : len == 4 && memcmp(src, "lens", 4) == 0 ? SAT_SRC_LENS
                      : len == 5 && memcmp(src, "disks", 5) == 0 ? SAT_SRC_DISKS
                                                                : SAT_SRC_BASELINE;
    }
    const struct json_value *v = json_get(o, "stages");
    if (!v || json_as_object(v) == JSON_IS_NULL)
        return 0;
    enum json_status st = json_as_object(v);
    if (st != JSON_OK)
        return status_fail(d, "stages", v, st, "an object or null");
    static const struct { const char *key; size_t off; } nums[] = {
#define L(k, f) { k, offsetof(struct lens_dev_interval, f) }
        L("requests", requests), L("tag_ms", tag_ms), L("sched_ms", sched_ms),
        L("device_ms", device_ms), L("total_ms", total_ms), L("device_p50_ms", device_p50_ms),
        L("device_p99_ms", device_p99_ms), L("total_p50_ms", total_p50_ms),
        L("total_p99_ms", total_p99_ms), L("depth", fit.depth), L("busy_depth", busy_depth),
        L("service_ms", service_ms), L("growth", growth), L("sched_queue", sched_queue),
        L("held_sched_ms", held_sched_ms),
#undef L
    };
    for (size_t i = 0; i < ARRAY_SIZE(nums); i++) {
        double x;
        if ((rc = get_num(d, v, nums[i].key, &x)))
            return rc;
        memcpy((char *)l + nums[i].off, &x, sizeof(x));
    }
    /* A recording made before sampled timing has no share: unknown. */
    l->sampled = (double)NAN;
    if (json_get(v, "sampled") && (rc = get_num(d, v, "sampled", &l->sampled)))
        return rc;
    /* Recordings made before the depth fit was written: unknown. */
    l->fit.depth_sd = l->fit.elasticity = (double)NAN;
    if (json_get(v, "depth_sd") && (rc = get_num(d, v, "depth_sd", &l->fit.depth_sd)))
        return rc;
    if (json_get(v, "elasticity") && (rc = get_num(d, v, "elasticity", &l->fit.elasticity)))
        return rc;
    /* Before the duty cycle the request programs were always attached. */
    l->duty = 1;
    if (json_get(v, "duty") && (rc = get_num(d, v, "duty", &l->duty)))
        return rc;
    const char *served, *held;
    size_t slen, hlen;
    int64_t now = 0;
    /* null: the duty cycle ran (lens.h LENS_HELD_UNKNOWN) */
    const struct json_value *hn = json_get(v, "held_now");
    bool held_null = hn && json_as_object(hn) == JSON_IS_NULL;
    if ((rc = get_str(d, v, "served_class", true, &served, &slen)) ||
        (rc = get_bool(d, v, "held_back", &l->held_back)) ||
        (rc = get_str(d, v, "held_class", true, &held, &hlen)) ||
        (!held_null && (rc = get_int(d, v, "held_now", 0, INT64_MAX, &now))) ||
        (rc = get_tri(d, v, "saturated", &l->saturated)))
        return rc;
    l->top_class = class_of_name(served, slen);
    l->held_class = class_of_name(held, hlen);
    l->held_now = held_null ? LENS_HELD_UNKNOWN : (uint64_t)now;
    l->valid = true;
    return 0;
}

/* A priority as lens_prio_name() prints it, back to its number; the lowest of those
 * that print alike (idle at any level: delta.c keeps the lowest too). */
bool prio_of_name(const char *s, size_t len, unsigned *out)
{
    for (unsigned cls = 0; cls < 8; cls++)
        for (unsigned level = 0; level < 8; level++) {
            char buf[sizeof(((struct prio_latency *)0)->name)];
            unsigned prio = cls << 13 | level;
            lens_prio_name(prio, buf, sizeof(buf));
            if (strlen(buf) == len && memcmp(buf, s, len) == 0) {
                *out = prio;
                return true;
            }
        }
    return false;
}

/* One stage as json_prio_stage (write.c) wrote it. Its buckets must add up to its count:
 * anything else is damage, not a measurement. */
static int decode_prio_stage(struct dec *d, const struct json_value *o, struct prio_stage *s)
{
    enum json_status st = json_as_object(o);
    if (st != JSON_OK)
        return status_fail(d, NULL, o, st, "an object");
    int64_t count;
    const struct json_value *hist;
    int rc;
    if ((rc = get_int(d, o, "count", 0, INT64_MAX, &count)) ||
        (rc = get_num(d, o, "p50_ms", &s->p50_ms)) || (rc = get_num(d, o, "p90_ms", &s->p90_ms)) ||
        (rc = get_num(d, o, "p99_ms", &s->p99_ms)) || (rc = get_num(d, o, "mean_ms", &s->mean_ms)) ||
        (rc = get_list(d, o, "hist", false, LENS_HIST, &hist)))
        return rc;
    s->count = (double)count;
    uint64_t sum = 0;
    for (size_t k = 0; k < json_len(hist); k++) {
        int64_t n;
        st = json_as_int(json_at(hist, k), 0, INT64_MAX, &n);
        if (st != JSON_OK)
            return dfail(d, "hist", "[%zu] is not a count (an integer of at least 0)", k);
        s->hist[k] = (uint64_t)n;
        sum += (uint64_t)n;
    }
    if (json_len(hist) && s->hist[json_len(hist) - 1] == 0)
        return dfail(d, "hist", "ends with an empty bucket (the writer trims them)");
    if (sum != (uint64_t)count)
        return dfail(d, "hist", "holds %" PRIu64 " requests, count says %" PRId64, sum, count);
    return 0;
}

static int cmp_lat_prio(const void *a, const void *b)
{
    unsigned x = ((const struct prio_latency *)a)->prio, y = ((const struct prio_latency *)b)->prio;
    return x < y ? -1 : x > y;
}

/* devices[].latency_by_prio (docs/json.md): absent in recordings made before it, null
 * without the lens. r->lat is set only when the whole object decoded. */
int decode_lens_lat(struct dec *d, const struct json_value *o, struct dev_rates *r)
{
    r->lat = NULL;
    r->nlat = 0;
    const struct json_value *v = json_get(o, "latency_by_prio");
    if (!v || json_as_object(v) == JSON_IS_NULL)
        return 0;
    const struct json_value *list;
    int rc = get_list(d, o, "latency_by_prio", true, LENS_MAX_DEVPRIO, &list);
    if (rc)
        return rc;
    size_t n = json_len(list);
    if (!n)
        return 0;
    static const char *const stage_key[] = { [LENS_ST_TAG] = "tag", [LENS_ST_SCHED] = "sched",
                                              [LENS_ST_DEVICE] = "device" };
    struct prio_latency *rows = xcalloc(n, sizeof(*rows));
    for (size_t i = 0; !rc && i < n; i++) {
        const struct json_value *m = json_at(list, i);
        size_t klen;
        const char *key = json_key(m, &klen);
        char buf[64];
        if (!prio_of_name(key, klen, &rows[i].prio)) {
            rc = dfail(d, "latency_by_prio", "\"%s\" is no I/O priority iotriage prints",
                       shown(buf, key, klen));
            break;
        }
        memcpy(rows[i].name, key, klen);
        size_t old = at_push(d, ".latency_by_prio.%s", rows[i].name);
        const struct json_value *stages = json_get(m, "stages");
        enum json_status st = json_as_object(stages);
        rc = decode_prio_stage(d, m, &rows[i].st[LENS_ST_TOTAL]);
        if (!rc && st != JSON_OK)
            rc = status_fail(d, "stages", stages, st, "an object");
        for (int k = LENS_ST_TAG; !rc && k <= LENS_ST_DEVICE; k++) {
            size_t old2 = at_push(d, ".stages.%s", stage_key[k]);
            const struct json_value *sv = json_get(stages, stage_key[k]);
            rc = sv ? decode_prio_stage(d, sv, &rows[i].st[k]) : dfail(d, NULL, "missing");
            at_pop(d, old2);
        }
        at_pop(d, old);
    }
    if (rc) {
        free(rows);
        return rc;
    }
    qsort(rows, n, sizeof(*rows), cmp_lat_prio);
    r->lat = rows;
    r->nlat = n;
    return 0;
}

/* writeback_by (docs/json.md): absent in recordings made before it, null when the split
 * was not known; r->wb is set only when the whole array decoded. */
int decode_writeback_by(struct dec *d, const struct json_value *o, struct dev_rates *r)
{
    r->wb = NULL;
    r->nwb = 0;
    r->wb_valid = false;
    const struct json_value *v = json_get(o, "writeback_by");
    if (!v || json_as_array(v) == JSON_IS_NULL)
        return 0;
    const struct json_value *list;
    int rc = get_list(d, o, "writeback_by", false, LENS_MAX_WB, &list);
    if (rc)
        return rc;
    size_t n = json_len(list);
    struct wb_share *rows = n ? xcalloc(n, sizeof(*rows)) : NULL;
    for (size_t i = 0; !rc && i < n; i++) {
        const struct json_value *m = json_at(list, i);
        struct wb_share *w = &rows[i];
        size_t old = at_push(d, ".writeback_by[%zu]", i);
        enum json_status st = json_as_object(m);
        int64_t pid = 0, cgid = 0;
        const char *from;
        size_t len;
        if (st != JSON_OK)
            rc = status_fail(d, NULL, m, st, "an object");
        if (!rc && json_as_int(json_get(m, "pid"), 0, 0, &pid) != JSON_IS_NULL)
            rc = get_int(d, m, "pid", 1, INT32_MAX, &pid);
        if (!rc && json_as_int(json_get(m, "cgroup_id"), 0, 0, &cgid) != JSON_IS_NULL)
            rc = get_int(d, m, "cgroup_id", 1, INT64_MAX, &cgid);
        if (!rc)
            rc = get_fixed(d, m, "comm", true, FIT_CUT, w->comm, sizeof(w->comm));
        if (!rc)
            rc = get_fixed(d, m, "cgroup", true, FIT_CUT, w->cgroup, sizeof(w->cgroup));
        if (!rc)
            rc = get_num(d, m, "bps", &w->bps);
        if (!rc)
            rc = get_str(d, m, "cgroup_from", true, &from, &len);
        if (!rc) {
            w->pid = (pid_t)pid;
            w->cgid = (uint64_t)cgid;
            w->from = !from ? WB_FROM_NONE
                    : len == 4 && memcmp(from, "lens", 4) == 0 ? WB_FROM_LENS
                    : len == 5 && memcmp(from, "blkcg", 5) == 0 ? WB_FROM_BLKCG : 255;
            if (w->from == 255)
                rc = dfail(d, "cgroup_from", "not \"lens\", \"blkcg\" nor null");
        }
        at_pop(d, old);
    }
    if (rc) {
        free(rows);
        return rc;
    }
    r->wb = rows;
    r->nwb = n;
    r->wb_valid = true;
    return 0;
}

/* The source names of delay_source_name: "bpf", "sampled", anything else taskstats. */
static unsigned char source_from(const char *src, size_t len)
{
    return !src ? DELAY_SRC_UNKNOWN
         : len == 3 && memcmp(src, "bpf", 3) == 0 ? DELAY_SRC_BPF
         : len == 7 && memcmp(src, "sampled", 7) == 0 ? DELAY_SRC_SAMPLED
         : DELAY_SRC_TASKSTATS;
}

/* io_uring's completion wait (issue #35; recordings before it have no key: unknown). */
static int decode_uring_task(struct dec *d, const struct json_value *o, struct task_rates *r)
{
    r->uring_wait_pct = (double)NAN;
    r->uring_source = DELAY_SRC_UNKNOWN;
    if (!json_get(o, "uring_wait_pct"))
        return 0;
    const char *src;
    size_t len;
    int rc;
    if ((rc = get_num(d, o, "uring_wait_pct", &r->uring_wait_pct)) ||
        (rc = get_str(d, o, "uring_wait_source", true, &src, &len)))
        return rc;
    r->uring_source = isnan(r->uring_wait_pct) ? DELAY_SRC_UNKNOWN : source_from(src, len);
    return 0;
}

int decode_lens_task(struct dec *d, const struct json_value *o, struct task_rates *r)
{
    int rc = decode_uring_task(d, o, r);
    if (rc)
        return rc;
    /* before the lens, a known delay came from taskstats */
    r->io_delay_source = isnan(r->io_delay_pct) ? DELAY_SRC_UNKNOWN : DELAY_SRC_TASKSTATS;
    if (!json_get(o, "io_delay_source"))
        return 0;
    const char *src;
    size_t len;
    if ((rc = get_str(d, o, "io_delay_source", true, &src, &len)))
        return rc;
    r->io_delay_source = source_from(src, len);
    return 0;
}
/* ---- end of the lens's keys ---- */
