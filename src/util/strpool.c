/* SPDX-License-Identifier: GPL-2.0-or-later */
/* util/strpool.c: reference-counted shared strings (util/strpool.h). */
#include "util/strpool.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

/* A string knows its pool, so that the last reference, which may be dropped after the
 * pool was closed, takes it out and frees a closed pool with its last string. empty_str
 * ("") is never counted. */
struct pstr {
    struct strpool *pool;
    uint32_t refs;
    uint32_t hash;
    char s[];
};

struct strpool {
    struct pstr **slot;              /* open addressing, linear probing; cap a power of 2 */
    size_t cap, n;
    bool closed;                     /* procs_close ran: free the pool with its last string */
};

static char empty_str[1];

static struct pstr *str_hdr(const char *s)
{
    return (struct pstr *)(uintptr_t)(s - offsetof(struct pstr, s));
}

static uint32_t hash_bytes(const char *s, size_t len)
{
    uint64_t h = 0xcbf29ce484222325ull;         /* FNV-1a */
    for (size_t i = 0; i < len; i++)
        h = (h ^ (unsigned char)s[i]) * 0x100000001b3ull;
    return (uint32_t)(h ^ (h >> 32));
}

static void pool_grow(struct strpool *p)
{
    size_t cap = p->cap ? 2 * p->cap : 256;
    struct pstr **slot = xcalloc(cap, sizeof(*slot));
    for (size_t i = 0; i < p->cap; i++) {
        struct pstr *e = p->slot[i];
        if (!e)
            continue;
        size_t h = e->hash & (cap - 1);
        while (slot[h])
            h = (h + 1) & (cap - 1);
        slot[h] = e;
    }
    free(p->slot);
    p->slot = slot;
    p->cap = cap;
}

/* s[0, len) (no NUL inside) as a shared string: a new reference. */
char *strpool_get(struct strpool *p, const char *s, size_t len)
{
    if (len == 0)
        return empty_str;
    if (2 * (p->n + 1) > p->cap)
        pool_grow(p);
    uint32_t hash = hash_bytes(s, len);
    size_t h = hash & (p->cap - 1);
    for (struct pstr *e; (e = p->slot[h]); h = (h + 1) & (p->cap - 1))
        if (e->hash == hash && memcmp(e->s, s, len) == 0 && e->s[len] == '\0') {
            e->refs++;
            return e->s;
        }
    struct pstr *e = xmalloc(sizeof(*e) + len + 1);
    e->pool = p;
    e->refs = 1;
    e->hash = hash;
    memcpy(e->s, s, len);
    e->s[len] = '\0';
    p->slot[h] = e;
    p->n++;
    return e->s;
}

char *strpool_ref(char *s)
{
    if (s != empty_str)
        str_hdr(s)->refs++;
    return s;
}

static void pool_free(struct strpool *p)
{
    free(p->slot);
    free(p);
}

void strpool_unref(const char *s)
{
    if (!s || s == empty_str)
        return;
    struct pstr *e = str_hdr(s);
    if (--e->refs)
        return;
    struct strpool *p = e->pool;
    size_t mask = p->cap - 1, i = e->hash & mask;
    while (p->slot[i] != e)
        i = (i + 1) & mask;
    /* backward-shift deletion: move up every later entry of the run that may sit here */
    for (size_t j = (i + 1) & mask; p->slot[j]; j = (j + 1) & mask) {
        size_t home = p->slot[j]->hash & mask;
        if (((j - home) & mask) >= ((j - i) & mask)) {
            p->slot[i] = p->slot[j];
            i = j;
        }
    }
    p->slot[i] = NULL;
    p->n--;
    free(e);
    if (p->closed && p->n == 0)
        pool_free(p);
}

struct strpool *strpool_new(void)
{
    return xcalloc(1, sizeof(struct strpool));
}

void strpool_close(struct strpool *p)
{
    if (!p)
        return;
    if (p->n == 0)
        pool_free(p);
    else
        p->closed = true;
}
