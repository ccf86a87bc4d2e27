/* SPDX-License-Identifier: GPL-2.0-or-later */
/* sample/decode_fs.c: a recorded sample's `filesystems` back into a frame
 * (sample/decode_fs.h). */
#include "sample/decode_fs.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/escape.h"
#include "util.h"

/* Where the decoder is, for the message: "filesystems[2].deleted_open[0]". */
struct fsdec {
    char at[128];
    char *err;
    size_t errlen;
};

static int fail(struct fsdec *d, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int fail(struct fsdec *d, const char *key, const char *fmt, ...)
{
    char msg[160];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    snprintf(d->err, d->errlen, "%s.%s: %s", d->at, key, msg);
    return -EINVAL;
}

static int st_fail(struct fsdec *d, const char *key, enum json_status st, const char *want)
{
    return fail(d, key, "%s, not %s", want, json_status_text(st));
}

/* A string (NULL for null when nullable), as a malloc'd C string. */
static int dup_str(struct fsdec *d, const struct json_value *o, const char *key, bool nullable,
                   char **out)
{
    const char *s;
    size_t len;
    enum json_status st = json_as_string(json_get(o, key), &s, &len);
    *out = NULL;
    if (st == JSON_IS_NULL && nullable)
        return 0;
    if (st != JSON_OK)
        return st_fail(d, key, st, nullable ? "a string or null" : "a string");
    if (memchr(s, '\0', len))
        return fail(d, key, "holds a NUL character");
    *out = xstrndup(s, len);
    return 0;
}

/* A non-negative integer, or -1 for null. */
static int get_known(struct fsdec *d, const struct json_value *o, const char *key, int64_t *out)
{
    enum json_status st = json_as_int(json_get(o, key), 0, INT64_MAX, out);
    if (st == JSON_IS_NULL) {
        *out = -1;
        return 0;
    }
    return st == JSON_OK ? 0 : st_fail(d, key, st, "an integer >= 0 or null");
}

static int get_int(struct fsdec *d, const struct json_value *o, const char *key, int64_t lo,
                   int64_t hi, int64_t *out)
{
    enum json_status st = json_as_int(json_get(o, key), lo, hi, out);
    return st == JSON_OK ? 0 : st_fail(d, key, st, "an integer in range");
}

static int get_num(struct fsdec *d, const struct json_value *o, const char *key, double *out)
{
    enum json_status st = json_as_double(json_get(o, key), out);
    if (st == JSON_IS_NULL) {
        *out = (double)NAN;
        return 0;
    }
    return st == JSON_OK ? 0 : st_fail(d, key, st, "a number or null");
}

static int get_tri(struct fsdec *d, const struct json_value *o, const char *key, int *out)
{
    bool b;
    enum json_status st = json_as_bool(json_get(o, key), &b);
    if (st == JSON_IS_NULL) {
        *out = -1;
        return 0;
    }
    if (st != JSON_OK)
        return st_fail(d, key, st, "true, false or null");
    *out = b;
    return 0;
}

/* A device name of the sample, or null: its index, -1 for null. */
static int get_dev(struct fsdec *d, const struct json_value *o, const char *key,
                   const struct snapshot *s, int *out)
{
    char *name;
    int rc = dup_str(d, o, key, true, &name);
    *out = -1;
    if (rc || !name)
        return rc;
    for (size_t i = 0; i < s->ndevs && *out < 0; i++)
        if (strcmp(s->devs[i].ds.name, name) == 0)
            *out = (int)i;
    if (*out < 0) {
        char shown[64];
        esc_display(shown, sizeof(shown), name, strlen(name), true);   /* untrusted */
        rc = fail(d, key, "\"%s\" is not among the sample's devices", shown);
    }
    free(name);
    return rc;
}

static int decode_holder(struct fsdec *d, const struct json_value *o, struct fs_holder *h)
{
    int64_t pid, fd;
    int append, rc;
    char *comm;
    if (json_as_object(o) != JSON_OK)
        return fail(d, "holders", "an object expected");
    if ((rc = get_int(d, o, "pid", 1, INT_MAX, &pid)) || (rc = get_int(d, o, "fd", 0, INT_MAX, &fd)) ||
        (rc = get_tri(d, o, "append", &append)) || (rc = dup_str(d, o, "comm", true, &comm)))
        return rc;
    h->pid = (pid_t)pid;
    h->fd = (int)fd;
    h->flags_known = append >= 0;
    h->append = append == 1;
    h->flags = h->append ? O_APPEND : 0;
    if (comm) {
        if (strlen(comm) >= sizeof(h->comm))
            rc = fail(d, "comm", "longer than a task name");
        else
            str_copy(h->comm, comm, sizeof(h->comm));
        free(comm);
    }
    return rc;
}

static int decode_deleted(struct fsdec *d, const struct json_value *o, struct fs_deleted_file *f)
{
    int64_t size, blocks;
    int rc;
    if (json_as_object(o) != JSON_OK)
        return fail(d, "deleted_open", "an object expected");
    if ((rc = dup_str(d, o, "path", true, &f->path)) ||
        (rc = get_int(d, o, "size_bytes", 0, INT64_MAX, &size)) ||
        (rc = get_int(d, o, "blocks_bytes", 0, INT64_MAX, &blocks)))
        return rc;
    f->size = (uint64_t)size;
    f->blocks_bytes = (uint64_t)blocks;
    const struct json_value *hl = json_get(o, "holders");
    if (json_as_array(hl) != JSON_OK)
        return fail(d, "holders", "an array expected");
    size_t n = json_len(hl);
    f->holders = xcalloc(n ? n : 1, sizeof(*f->holders));
    size_t base = strlen(d->at);
    for (size_t k = 0; k < n; k++) {
        snprintf(d->at + base, sizeof(d->at) - base, ".holders[%zu]", k);
        if ((rc = decode_holder(d, json_at(hl, k), &f->holders[k])))
            return rc;
        f->nholders++;
    }
    d->at[base] = '\0';
    return 0;
}

static int decode_fs(struct fsdec *d, const struct json_value *o, const struct snapshot *s,
                     struct fs_sample *fs, struct fs_rates *fr)
{
    int64_t size, used, avail, iu, it, del;
    int ro, complete, rc;
    fs->dev_idx = fs->disk_idx = -1;
    if (json_as_object(o) != JSON_OK)
        return fail(d, "filesystems", "an object expected");
    if ((rc = dup_str(d, o, "mount", false, &fs->fs.m.mount)) ||
        (rc = dup_str(d, o, "fstype", false, &fs->fs.m.fstype)) ||
        (rc = dup_str(d, o, "source", false, &fs->fs.m.source)) ||
        (rc = get_dev(d, o, "device", s, &fs->dev_idx)) ||
        (rc = get_dev(d, o, "disk", s, &fs->disk_idx)) ||
        (rc = get_tri(d, o, "read_only", &ro)) ||
        (rc = get_known(d, o, "size_bytes", &size)) || (rc = get_known(d, o, "used_bytes", &used)) ||
        (rc = get_known(d, o, "avail_bytes", &avail)) ||
        (rc = get_known(d, o, "inodes_used", &iu)) || (rc = get_known(d, o, "inodes_total", &it)) ||
        (rc = get_num(d, o, "used_pct", &fr->used_pct)) ||
        (rc = get_num(d, o, "write_bps", &fr->write_bps)) ||
        (rc = get_num(d, o, "fill_bps", &fr->fill_bps)) ||
        (rc = get_num(d, o, "full_in_s", &fr->full_in_s)) ||
        (rc = get_known(d, o, "deleted_open_bytes", &del)) ||
        (rc = get_tri(d, o, "deleted_open_complete", &complete)))
        return rc;
    fs->fs.m.root = xstrdup("/");
    fs->fs.read_only = ro == 1;
    /* The writer prints the three figures together, all null after a statvfs error. */
    if ((size < 0) != (used < 0) || (size < 0) != (avail < 0))
        return fail(d, "size_bytes", "size, used and avail must be all null or all numbers");
    if (size < 0) {
        fs->fs.statfs_err = -EIO;
        fs->fs.inodes_used = fs->fs.inodes_total = -1;
    } else {
        fs->fs.size = (uint64_t)size;
        fs->fs.used = (uint64_t)used;
        fs->fs.avail = (uint64_t)avail;
        fs->fs.inodes_used = iu;
        fs->fs.inodes_total = it;
    }
    fs->deleted_known = del >= 0;
    fs->deleted_complete = complete == 1;
    fs->deleted_bytes = del >= 0 ? (uint64_t)del : 0;
    const struct json_value *dl = json_get(o, "deleted_open");
    if (!fs->deleted_known)
        return dl && json_type(dl) == JSON_NULL ? 0 : fail(d, "deleted_open", "null expected");
    if (json_as_array(dl) != JSON_OK)
        return fail(d, "deleted_open", "an array expected");
    size_t n = json_len(dl);
    fs->del = xcalloc(n ? n : 1, sizeof(*fs->del));
    size_t base = strlen(d->at);
    for (size_t k = 0; k < n; k++) {
        snprintf(d->at + base, sizeof(d->at) - base, ".deleted_open[%zu]", k);
        rc = decode_deleted(d, json_at(dl, k), &fs->del[k]);
        fs->ndel++;                  /* freed with the rest even when half decoded */
        if (rc)
            return rc;
    }
    d->at[base] = '\0';
    fr->fs = fs;
    return 0;
}

int replay_fs_decode(const struct json_value *root, struct snapshot *s, struct result *r,
                     char *err, size_t errlen)
{
    const struct json_value *list = json_get(root, "filesystems");
    if (!list)
        return 0;
    struct fsdec d = { .at = "filesystems", .err = err, .errlen = errlen };
    if (json_as_array(list) != JSON_OK) {
        snprintf(err, errlen, "filesystems: an array expected");
        return -EINVAL;
    }
    size_t n = json_len(list);
    struct fs_sample *fss = xcalloc(n ? n : 1, sizeof(*fss));
    struct fs_rates *frs = xcalloc(n ? n : 1, sizeof(*frs));
    int rc = 0;
    size_t done = 0;
    for (; done < n && !rc; done++) {
        snprintf(d.at, sizeof(d.at), "filesystems[%zu]", done);
        rc = decode_fs(&d, json_at(list, done), s, &fss[done], &frs[done]);
    }
    if (rc) {
        fs_samples_free(fss, done);
        free(frs);
        return rc;
    }
    s->fs_taken = true;
    s->fss = fss;
    s->nfss = n;
    r->fss = frs;
    r->nfss = n;
    return 0;
}

int replay_fs_find(const struct snapshot *s, const char *mount, size_t len)
{
    for (size_t i = 0; i < s->nfss; i++)
        if (strlen(s->fss[i].fs.m.mount) == len && memcmp(s->fss[i].fs.m.mount, mount, len) == 0)
            return (int)i;
    return -1;
}
