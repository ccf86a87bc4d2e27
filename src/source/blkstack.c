/* SPDX-License-Identifier: GPL-2.0-or-later */
/* source/blkstack.c: the stacks of block devices (slaves/, holders/), read and walked. */
#include "source/blkstack.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util.h"

bool blkstack_name_ok(const char *name)
{
    size_t n = strlen(name);
    if (n == 0 || n >= BD_NAME_MAX || name[0] == '.')
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = name[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              strchr("._-+:!", c)))
            return false;
    }
    return true;
}

int blkstack_each(int devfd, const char *list, int (*fn)(void *ctx, int dirfd, const char *name),
                  void *ctx)
{
    DIR *d = opendir_at(devfd, list);
    if (!d)
        return -errno;
    struct dirent *e;
    int rc = 0;
    while (rc == 0 && (e = readdir(d)))
        if (blkstack_name_ok(e->d_name))
            rc = fn(ctx, dirfd(d), e->d_name);
    closedir(d);
    return rc;
}

static int list_add(void *ctx, int dirfd, const char *name)
{
    (void)dirfd;
    struct blkstack_list *l = ctx;
    if (l->n == BLKSTACK_MAX) {
        l->truncated = true;
        return 0;
    }
    str_copy(l->name[l->n++], name, sizeof(l->name[0]));
    return 0;
}

static int cmp_name(const void *a, const void *b)
{
    return strcmp(a, b);
}

static void read_list(int devfd, const char *list, struct blkstack_list *l)
{
    memset(l, 0, sizeof(*l));
    int rc = blkstack_each(devfd, list, list_add, l);
    l->known = rc == 0 || rc == -ENOENT;
    if (!l->known) {
        l->n = 0;
        return;
    }
    /* readdir's order is the directory's: sorted, the same every refresh */
    qsort(l->name, l->n, sizeof(l->name[0]), cmp_name);
}

int blkstack_read(int sys_fd, const char *name, struct blkstack *out)
{
    memset(out, 0, sizeof(*out));
    if (!blkstack_name_ok(name))
        return -EINVAL;
    char path[BD_NAME_MAX + 16];
    snprintf(path, sizeof(path), "class/block/%s", name);
    int fd = openat(sys_fd, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    read_list(fd, "slaves", &out->slaves);
    read_list(fd, "holders", &out->holders);
    close(fd);
    return 0;
}

size_t blkstack_walk(blkstack_lookup_fn lookup, const void *ctx, const char *start, bool below,
                     struct blkstack_hop *out, size_t max, bool *truncated)
{
    bool trunc = false;
    if (max > BLKSTACK_MAX_HOPS)
        max = BLKSTACK_MAX_HOPS;
    if (max == 0)
        return 0;
    size_t n = 0;
    out[n++] = (struct blkstack_hop){ .name = start, .depth = 0, .parent = -1 };
    for (size_t i = 0; i < n; i++) {
        const struct blkstack *st = lookup(ctx, out[i].name);
        const struct blkstack_list *l = st ? (below ? &st->slaves : &st->holders) : NULL;
        if (!l || !l->known) {
            trunc |= i == 0 || st;   /* a device the walk does not know ends a branch */
            continue;
        }
        trunc |= l->truncated;
        if (l->n && out[i].depth >= BLKSTACK_MAX_DEPTH) {
            trunc = true;
            continue;
        }
        for (unsigned k = 0; k < l->n; k++) {
            const char *nm = l->name[k];
            bool seen = !blkstack_name_ok(nm);
            for (size_t j = 0; j < n && !seen; j++)
                seen = strcmp(out[j].name, nm) == 0;
            if (seen)
                continue;           /* a cycle, or a device reached twice (a diamond) */
            if (n == max) {
                trunc = true;
                break;
            }
            out[n++] = (struct blkstack_hop){ .name = nm, .depth = (uint8_t)(out[i].depth + 1),
                                              .parent = (int8_t)i };
        }
    }
    if (truncated)
        *truncated = trunc;
    return n;
}

size_t blkstack_path(blkstack_lookup_fn lookup, const void *ctx, const char *from, const char *to,
                     const char **out, size_t max)
{
    struct blkstack_hop hops[BLKSTACK_MAX_HOPS];
    size_t n = blkstack_walk(lookup, ctx, from, true, hops, BLKSTACK_MAX_HOPS, NULL);
    for (size_t i = 1; i < n; i++) {
        if (strcmp(hops[i].name, to) != 0)
            continue;
        size_t len = (size_t)hops[i].depth + 1;
        if (len > max)
            return 0;
        for (int j = (int)i; j >= 0; j = hops[j].parent)
            out[hops[j].depth] = hops[j].name;
        return len;
    }
    return 0;
}

/* Append s to buf (length *o), as much as fits. */
static void put(char *buf, size_t n, size_t *o, const char *s)
{
    int w = snprintf(buf + *o, n - *o, "%s", s);
    if (w > 0)
        *o += (size_t)w < n - *o ? (size_t)w : n - *o - 1;
}

/* The levels of one side: deepest first (above) or nearest first (below). */
static void put_side(char *buf, size_t n, size_t *o, const struct blkstack_hop *h, size_t nh,
                     bool trunc, bool reverse, const char *arrow)
{
    unsigned maxd = 0;
    for (size_t i = 0; i < nh; i++)
        maxd = h[i].depth > maxd ? h[i].depth : maxd;
    for (unsigned k = 1; k <= maxd; k++) {
        unsigned d = reverse ? maxd + 1 - k : k;
        if (!reverse && k > 1)
            put(buf, n, o, arrow);
        bool first = true;
        for (size_t i = 0; i < nh; i++) {
            if (h[i].depth != d)
                continue;
            if (!first)
                put(buf, n, o, ",");
            put(buf, n, o, h[i].name);
            first = false;
        }
        if (trunc && ((reverse && k == 1) || (!reverse && k == maxd)))
            put(buf, n, o, ",...");
        if (reverse)
            put(buf, n, o, arrow);
    }
}

void blkstack_line(blkstack_lookup_fn lookup, const void *ctx, const char *name, const char *arrow,
                   char *buf, size_t n)
{
    if (n == 0)
        return;
    buf[0] = '\0';
    const struct blkstack *st = lookup(ctx, name);
    struct blkstack_hop up[BLKSTACK_MAX_HOPS], down[BLKSTACK_MAX_HOPS];
    bool tu = false, td = false;
    size_t nu = blkstack_walk(lookup, ctx, name, false, up, BLKSTACK_MAX_HOPS, &tu);
    size_t nd = blkstack_walk(lookup, ctx, name, true, down, BLKSTACK_MAX_HOPS, &td);
    if (!st || (!st->holders.known && !st->slaves.known))
        return;
    bool up_unknown = !st->holders.known, down_unknown = !st->slaves.known;
    if (nu <= 1 && nd <= 1 && !up_unknown && !down_unknown)
        return;
    size_t o = 0;
    if (up_unknown) {
        put(buf, n, &o, "?");
        put(buf, n, &o, arrow);
    } else {
        put_side(buf, n, &o, up, nu, tu, true, arrow);
    }
    put(buf, n, &o, "[");
    put(buf, n, &o, name);
    put(buf, n, &o, "]");
    if (down_unknown) {
        put(buf, n, &o, arrow);
        put(buf, n, &o, "?");
    } else if (nd > 1) {
        put(buf, n, &o, arrow);
        put_side(buf, n, &o, down, nd, td, false, arrow);
    }
}
