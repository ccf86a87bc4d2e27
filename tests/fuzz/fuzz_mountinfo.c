/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Fuzz mountinfo_parse and mountinfo_unescape (/proc/self/mountinfo, source/mounts.h). */
#include "fuzz.h"

#include <errno.h>
#include <sys/sysmacros.h>

#include "source/mounts.h"

#define MAX_LEN 65536

static size_t lines_in(const uint8_t *data, size_t size)
{
    size_t n = 0;
    const uint8_t *p = data, *end = data + size;
    while (p < end) {
        const uint8_t *nl = memchr(p, '\n', (size_t)(end - p));
        const uint8_t *eol = nl ? nl : end;
        n += eol > p;
        p = nl ? nl + 1 : end;
    }
    return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > MAX_LEN)
        return 0;
    char *buf = fz_copy(data, size);
    struct mount_entry *v;
    size_t n;
    unsigned bad;
    FZ_CHECK(mountinfo_parse(buf, size, &v, &n, &bad) == 0);
    FZ_CHECK(n + bad == lines_in(data, size));
    for (size_t i = 0; i < n; i++) {
        /* Decoded strings never grow; paths stay absolute. */
        FZ_CHECK(strlen(v[i].root) <= size && strlen(v[i].mount) <= size);
        FZ_CHECK(strlen(v[i].fstype) <= size && strlen(v[i].source) <= size);
        FZ_CHECK(v[i].root[0] == '/' && v[i].mount[0] == '/');
        FZ_CHECK(v[i].id >= 0 && v[i].parent >= 0);
        FZ_CHECK(major(v[i].dev) <= 0xfff && minor(v[i].dev) <= 0xfffff);
    }
    mountinfo_free(v, n);
    /* The unescape alone, on the whole input as one field. */
    char *out = malloc(size + 1);
    FZ_CHECK(out != NULL);
    size_t o = mountinfo_unescape(buf, size, out);
    FZ_CHECK(o <= size && out[o] == '\0');
    free(out);
    free(buf);
    return 0;
}
