/* SPDX-License-Identifier: GPL-2.0-or-later */
/* recorder.c: `iotriage record`; contract in include/recorder.h. The pipeline's frames
 * (pipeline.h), each as one sample line (sample/sample.h), into the recorder's files
 * (store/store*.c). */
#include "recorder.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "pipeline.h"
#include "sample/json.h"
#include "sample/sample.h"
#include "store/store.h"
#include "util.h"

static bool stopped(const struct record_opts *o)
{
    return o->stop && *o->stop;
}

static void sleep_until(const struct record_opts *o, double deadline)
{
    struct timespec ts = { .tv_sec = (time_t)deadline };
    ts.tv_nsec = (long)((deadline - (double)ts.tv_sec) * 1e9);
    while (!stopped(o) && clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
        ;
}

/* systemd's readiness protocol (Type=notify), without libsystemd: one datagram of
 * "KEY=value" lines to the socket named by $NOTIFY_SOCKET ('@' for the abstract
 * namespace). Nothing happens when it is unset (not under systemd). */
static void notify(const char *msg)
{
    const char *path = getenv("NOTIFY_SOCKET");
    if (!path || (path[0] != '/' && path[0] != '@'))
        return;
    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    size_t n = strlen(path);
    if (n >= sizeof(sa.sun_path))
        return;
    memcpy(sa.sun_path, path, n);
    if (path[0] == '@')
        sa.sun_path[0] = '\0';
    int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return;
    sendto(fd, msg, strlen(msg), MSG_NOSIGNAL, (const struct sockaddr *)&sa,
           (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n));
    close(fd);
}

/* What the journal hears about the store: each state change once. */
struct reporter {
    FILE *log;
    bool full;                       /* a full disk was reported, no resume yet */
    int last_err;                    /* another errno already reported */
};

static void report(struct reporter *rp, struct store_writer *w, int rc, const char *err)
{
    if (rc == 0) {
        if (rp->full) {
            struct store_stats st;
            store_writer_stats(w, &st);
            fprintf(rp->log, "iotriage record: space is back, recording resumed "
                    "(%llu samples dropped in all)\n", (unsigned long long)st.dropped);
            fflush(rp->log);
            rp->full = false;
            notify("STATUS=recording");
        }
        rp->last_err = 0;
        return;
    }
    if (rc == -EAGAIN)
        return;                      /* still paused: said once already */
    if (rc == -ENOSPC || rc == -EDQUOT) {
        if (!rp->full) {
            fprintf(rp->log, "iotriage record: %s\n", err);
            notify("STATUS=paused: disk full, retrying");
        }
        rp->full = true;
    } else if (rc != rp->last_err) {
        fprintf(rp->log, "iotriage record: %s\n", err);
        rp->last_err = rc;
    }
    fflush(rp->log);
}

static struct dev_baseline *baseline_add(struct baselines *b, const char *name,
                                         unsigned major, unsigned minor)
{
    for (size_t i = 0; i < b->n; i++)
        if (b->v[i].major == major && b->v[i].minor == minor && strcmp(b->v[i].name, name) == 0)
            return &b->v[i];
    if (b->n == b->cap) {
        b->cap = b->cap ? b->cap * 2 : 16;
        b->v = xreallocarray(b->v, b->cap, sizeof(*b->v));
    }
    struct dev_baseline *n = &b->v[b->n++];
    memset(n, 0, sizeof(*n));
    str_copy(n->name, name, sizeof(n->name));
    n->major = major;
    n->minor = minor;
    n->quiet_await = n->ceiling = (double)NAN;
    return n;
}

int record_baselines_load(const char *dir, double now, double max_age_s, struct baselines *hist,
                          char *err, size_t errlen)
{
    struct store_reader *r;
    int rc = store_open_reader(&r, dir, err, errlen);
    if (rc < 0)
        return rc;
    size_t nf = store_reader_files(r);
    double hour;
    char *last = NULL;
    size_t last_len = 0;
    /* Only the newest file: its last readable sample is the newest there is. */
    if (nf && store_name_parse(strrchr(store_reader_file(r, nf - 1), '/') + 1, &hour) &&
        store_seek(r, hour) == 0) {
        struct store_line l;
        char e2[256];
        int k;
        while ((k = store_next(r, &l, e2, sizeof(e2))) != 0) {
            if (k < 0 || isnan(l.ts) || l.ts < now - max_age_s || l.ts > now + 60)
                continue;
            free(last);
            last = xstrndup(l.text, l.len);
            last_len = l.len;
        }
    }
    store_close_reader(r);
    if (!last)
        return 0;
    struct json_doc *doc;
    struct json_error je;
    rc = json_parse(&doc, last, last_len, NULL, &je);
    free(last);
    if (rc < 0) {
        snprintf(err, errlen, "%s: newest sample: byte %zu: %s", dir, je.offset, je.msg);
        return rc;
    }
    const struct json_value *devs = json_get(json_root(doc), "devices");
    int seeded = 0;
    for (size_t i = 0; i < json_len(devs); i++) {
        const struct json_value *d = json_at(devs, i);
        const char *name;
        size_t nlen;
        int64_t maj, min;
        double q;
        if (json_as_string(json_get(d, "name"), &name, &nlen) != JSON_OK || nlen == 0 ||
            nlen >= DS_NAME_MAX || memchr(name, '\0', nlen) ||
            json_as_int(json_get(d, "major"), 0, UINT32_MAX, &maj) != JSON_OK ||
            json_as_int(json_get(d, "minor"), 0, UINT32_MAX, &min) != JSON_OK ||
            json_as_double(json_get(d, "quiet_await"), &q) != JSON_OK || !(q > 0) || !isfinite(q))
            continue;
        struct dev_baseline *b = baseline_add(hist, name, (unsigned)maj, (unsigned)min);
        b->quiet_await = q;
        seeded++;
    }
    json_free(doc);
    return seeded;
}

/* The sink: each frame as one line into the store, a frame (of zstd) every flush_s. A
 * store that fails (a full disk) is reported, never fatal: recording pauses and resumes. */
struct store_sink {
    struct store_writer *w;
    struct reporter *rp;
    double flush_s, last_flush;
};

static int store_emit(void *ctx, const struct frame *f, char *err, size_t errlen)
{
    struct store_sink *k = ctx;
    (void)err;
    (void)errlen;
    /* Only active processes: a sample keeps who did I/O or waited on it (and, through the
     * warnings, who a verdict names), not the hundreds of sleepers a box always has. */
    struct sample_opts oo = { .hostname = f->host, .only_active = true };
    char *buf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);
    if (!m) {
        fputs("iotriage: out of memory\n", stderr);
        abort();
    }
    sample_write(m, f->res, f->ver, &oo);
    if (fclose(m) != 0) {
        fputs("iotriage: out of memory\n", stderr);
        abort();
    }
    char why[512] = "";
    double wall = f->snap->wall;
    int rc = store_append(k->w, wall, buf, len, why, sizeof(why));
    report(k->rp, k->w, rc, why);
    free(buf);
    if (f->snap->mono - k->last_flush >= k->flush_s) {
        k->last_flush = f->snap->mono;
        rc = store_flush(k->w, wall, why, sizeof(why));
        report(k->rp, k->w, rc, why);
    }
    return 0;
}

int record_run(const struct record_opts *in)
{
    struct record_opts o = *in;
    if (!o.dir)
        o.dir = STORE_DEFAULT_DIR;
    if (!(o.interval_s > 0))
        o.interval_s = RECORD_DEFAULT_INTERVAL_S;
    if (!(o.flush_s > 0))
        o.flush_s = RECORD_DEFAULT_FLUSH_S;
    if (o.max_age_s == 0)
        o.max_age_s = RECORD_DEFAULT_AGE_S;
    if (o.max_bytes == 0)
        o.max_bytes = RECORD_DEFAULT_BYTES;
    if (!o.log)
        o.log = stderr;

    char err[512] = "";
    struct store_opts so = {
        .max_age_s = o.max_age_s > 0 ? o.max_age_s : 0,
        .max_bytes = o.max_bytes == UINT64_MAX ? 0 : o.max_bytes,
        .level = o.level,
    };
    struct store_writer *w;
    if (store_open_writer(&w, o.dir, &so, err, sizeof(err)) < 0) {
        fprintf(o.log, "iotriage record: %s\n", err);
        return 1;
    }
    struct pipeline_opts po = { .sampler = { .proc_root = o.proc_root, .sys_root = o.sys_root } };
    struct pipeline *p;
    if (pipeline_open(&p, &po, err, sizeof(err)) < 0) {
        fprintf(o.log, "iotriage record: %s\n", err);
        store_close(w, NULL, 0);
        return 1;
    }
    if (record_baselines_load(o.dir, clock_wall(), 86400, pipeline_baselines(p), err, sizeof(err)) < 0)
        fprintf(o.log, "iotriage record: device baselines not restored: %s\n", err);
    struct reporter rp = { .log = o.log };
    double next = clock_mono();
    struct store_sink k = { .w = w, .rp = &rp, .flush_s = o.flush_s, .last_flush = next };
    struct sink ks = { .name = o.dir, .emit = store_emit, .ctx = &k };
    pipeline_add_sink(p, &ks);
    /* Ready: the sources are open and the first snapshot taken; samples follow. */
    notify("READY=1\nSTATUS=recording");
    for (long i = 0; (o.iterations == 0 || i < o.iterations) && !stopped(&o); i++) {
        next += o.interval_s;
        sleep_until(&o, next);
        if (stopped(&o))
            break;
        pipeline_step(p, err, sizeof(err));
        double now = clock_mono();
        if (next < now - o.interval_s)
            next = now;
    }
    notify("STOPPING=1");
    pipeline_close(p);
    int rc = store_close(w, err, sizeof(err));
    if (rc < 0)
        fprintf(o.log, "iotriage record: %s\n", err);
    return 0;
}
