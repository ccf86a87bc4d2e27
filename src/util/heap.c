/* SPDX-License-Identifier: GPL-2.0-or-later */
/* util/heap.c: the allocator's settings and the heap's first 2 MB in a huge page
 * (util/heap.h says why). */
#include "util/heap.h"

#include <fcntl.h>
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "util.h"

bool heap_thp_allowed(const char *enabled)
{
    char mode[16];
    return sysfs_choices(enabled, mode, sizeof(mode), NULL, 0) > 0 &&
           (strcmp(mode, "always") == 0 || strcmp(mode, "madvise") == 0);
}

long heap_free_huge(const char *buddyinfo, int order)
{
    long blocks = 0;
    bool any = false;
    for (const char *l = buddyinfo; l && *l; l = strchr(l, '\n'), l = l ? l + 1 : NULL) {
        /* "Node 0, zone   Normal  c0 c1 ... c10" */
        const char *z = strstr(l, "zone");
        const char *eol = strchr(l, '\n');
        if (!z || (eol && z > eol))
            continue;
        z += 4;
        while (*z == ' ')
            z++;
        const char *name = z;
        while (*z && *z != ' ' && *z != '\n')
            z++;
        bool dma = (size_t)(z - name) == 3 && strncmp(name, "DMA", 3) == 0;
        any = true;
        char *end;
        for (int o = 0;; o++) {
            long v = strtol(z, &end, 10);
            if (end == z || (eol && end > eol))
                break;
            z = end;
            if (!dma && o >= order && v > 0 && o - order < 20)
                blocks += v << (o - order);
        }
    }
    return any ? blocks : -1;
}

static size_t huge_asked;
static const char *huge_why = "not tried";
/* The heap below the boundary, taken once and kept: reachable (no leak to report), and
 * never touched past its header, so it costs address space, not memory. */
static void *heap_pad;

/* glibc's chunk header before each block (malloc/malloc.c: two size_t), and the unit of
 * chunk sizes. */
#define CHUNK_HDR (2 * sizeof(size_t))
#define CHUNK_ALIGN 16

static size_t thp_pmd_size(void)
{
    long v = read_long_at(AT_FDCWD, "/sys/kernel/mm/transparent_hugepage/hpage_pmd_size");
    return v > 0 ? (size_t)v : 0;
}

static void huge_start(void)
{
    char text[4096];
    if (read_file_at(AT_FDCWD, "/sys/kernel/mm/transparent_hugepage/enabled", text, sizeof(text)) <= 0 ||
        !heap_thp_allowed(text)) {
        huge_why = "transparent huge pages off";
        return;
    }
    size_t huge = thp_pmd_size();
    long page = sysconf(_SC_PAGESIZE);
    if (page <= 0 || huge < (size_t)page || huge > ((size_t)2 << 20) || (huge & (huge - 1))) {
        huge_why = "no 2 MB huge page size";          /* 32 MB or 512 MB ones are no help */
        return;
    }
    int order = 0;
    while (((size_t)page << order) < huge)
        order++;
    size_t want = HEAP_HUGE_FIRST * huge;
    long free_blocks = read_file_at(AT_FDCWD, "/proc/buddyinfo", text, sizeof(text)) > 0
                       ? heap_free_huge(text, order) : -1;
    if (free_blocks < (long)(HEAP_SPARE * HEAP_HUGE_FIRST)) {
        huge_why = "too few free huge blocks";
        return;
    }
    /* Where the heap's top chunk begins: below the break by its size (glibc's keepcost),
     * read without allocating past the heap's first page, so no page of the part skipped
     * below is touched. The heap may not be made yet (nothing allocated before main): one
     * small block makes it, so that the top is a chunk of the heap (volatile: a compiler
     * may drop a malloc freed unused). */
    void *volatile first = malloc(1);
    free(first);
    struct mallinfo2 mi = mallinfo2();
    uintptr_t brk_now = (uintptr_t)sbrk(0);
    uintptr_t top = brk_now - mi.keepcost;
    uintptr_t start = (top + huge - 1) & ~(uintptr_t)(huge - 1);
    if (start - top < 4 * CHUNK_ALIGN)
        start += huge;
    /* One block from the top to the region's end first, so that the heap reaches past
     * it and nothing is written in it yet: a page written there before the madvise
     * would be a small page, and a huge one cannot be made around it at a fault. (glibc
     * writes a chunk's header, and the top chunk's after it, at the ends of a block.) */
    char *block = malloc(start + want - top - sizeof(size_t));   /* a chunk to start + want */
    if (block && (uintptr_t)block != top + CHUNK_HDR) {
        free(block);                 /* not glibc's heap (a sanitizer's allocator) */
        huge_why = "not glibc's heap";
        return;
    }
    if (!block || (uintptr_t)sbrk(0) < start + want) {
        free(block);
        huge_why = "the heap is not where expected";
        return;
    }
    int rc = madvise((void *)start, want, MADV_HUGEPAGE);
    /* Then cut down to the part below the boundary, kept: the rest goes back to the top,
     * whose header is written on the boundary (the region's first fault, a huge page),
     * and the next blocks begin there. */
    heap_pad = realloc(block, start - top - sizeof(size_t));
    if (heap_pad != block) {
        huge_why = "the heap is not where expected";
        return;
    }
    if (rc != 0) {
        huge_why = "madvise refused";
        return;
    }
    huge_asked = want;
    huge_why = "";
}

void heap_settle(void)
{
    /* Every refresh frees and allocates again a few arrays sized to the tasks (at 10,000
     * processes 0.5-1.5 MB each). glibc's default serves a block above its mmap threshold
     * with fresh pages, then raises the threshold to the size of the block freed, so the
     * same arrays go to the heap one refresh and to mmap the next, and the heap's top is
     * trimmed and grown again: fresh pages each time and a peak that depends on the order
     * they came in (9.6-11.6 MB at 10,000 processes). With the threshold fixed above
     * them, they come from the heap, whose free blocks the next refresh reuses, and the
     * heap's top is given back only past 8 MB free (docs/performance.md, Memory at
     * 10,000 processes); the huge region is under that, so it stays until it is used. */
    mallopt(M_MMAP_THRESHOLD, 32 * 1024 * 1024);
    mallopt(M_TRIM_THRESHOLD, 8 * 1024 * 1024);
    huge_start();
}

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23       /* Linux 5.14 */
#endif

void heap_prefault(size_t bytes)
{
    if (bytes > HEAP_PREFAULT_MAX)
        bytes = HEAP_PREFAULT_MAX;
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    char *block = bytes >= 2 * page ? malloc(bytes) : NULL;
    if (!block)
        return;
    uintptr_t start = ((uintptr_t)block + page - 1) & ~(page - 1);
    uintptr_t end = ((uintptr_t)block + bytes) & ~(page - 1);
    if (end > start)
        (void)madvise((void *)start, end - start, MADV_POPULATE_WRITE);
    free(block);
}

size_t heap_huge_asked(const char **why)
{
    if (why)
        *why = huge_why;
    return huge_asked;
}
