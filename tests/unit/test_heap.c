/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Tests for util/heap.h: the parsers of the kernel's files on made-up texts and, in a
 * process of its own (the test binary exec'd again: the placement is done once, before
 * anything else is allocated), the placement on this machine: when the kernel allows huge
 * pages and has free ones, the allocations after heap_settle land in a huge page
 * (/proc/self/smaps: AnonHugePages), and the part of the heap skipped to reach its
 * boundary costs no memory. And heap_prefault: in a thread of that process, the blocks a
 * thread takes after it are in pages already resident (mincore), where in a thread
 * without it they are not. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "util.h"
#include "util/heap.h"

static void test_thp_allowed(void **state)
{
    (void)state;
    assert_true(heap_thp_allowed("always [madvise] never\n"));
    assert_true(heap_thp_allowed("[always] madvise never\n"));
    assert_false(heap_thp_allowed("always madvise [never]\n"));
    assert_false(heap_thp_allowed("always madvise never\n"));    /* no mode: not ours to guess */
    assert_false(heap_thp_allowed(""));
    assert_false(heap_thp_allowed("[madvis] x"));
    assert_false(heap_thp_allowed("[madvise"));
}

static const char BUDDY[] =
    "Node 0, zone      DMA      0      0      0      0      0      0      0      0      1      1      3 \n"
    "Node 0, zone    DMA32      5      4      3      2      1      0      0      0      0      2      1 \n"
    "Node 0, zone   Normal    100     50     20     10      5      3      2      1      7      4     10 \n";

static void test_free_huge(void **state)
{
    (void)state;
    /* order 9 and above, DMA left out: DMA32 2 + 1*2, Normal 4 + 10*2 */
    assert_int_equal(heap_free_huge(BUDDY, 9), 2 + 2 + 4 + 20);
    /* order 10 alone: 1 + 10 */
    assert_int_equal(heap_free_huge(BUDDY, 10), 11);
    /* order 8: DMA32 0 + 2*2 + 1*4, Normal 7 + 4*2 + 10*4 */
    assert_int_equal(heap_free_huge(BUDDY, 8), 8 + 55);
    assert_int_equal(heap_free_huge("Node 0, zone   Normal      1      0 \n", 9), 0);
    assert_int_equal(heap_free_huge("", 9), -1);
    assert_int_equal(heap_free_huge("garbage\nmore\n", 9), -1);
    /* a line cut short, and one without its newline */
    assert_int_equal(heap_free_huge("Node 0, zone   Normal 0 0 0 0 0 0 0 0 0 3", 9), 3);
}

/* In smaps, the mapping holding addr: its Rss and AnonHugePages in kB (-1: not found). */
static void smaps_of(uintptr_t addr, long *rss, long *huge)
{
    *rss = *huge = -1;
    FILE *f = fopen("/proc/self/smaps", "r");
    assert_non_null(f);
    char line[512];
    bool in = false;
    while (fgets(line, sizeof(line), f)) {
        unsigned long lo, hi;
        if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2 && strchr(line, '-') < strchr(line, ' ')) {
            in = addr >= lo && addr < hi;
            continue;
        }
        if (in && strncmp(line, "Rss:", 4) == 0)
            *rss = strtol(line + 4, NULL, 10);
        if (in && strncmp(line, "AnonHugePages:", 14) == 0)
            *huge = strtol(line + 14, NULL, 10);
    }
    fclose(f);
}

/* Where the heap begins: its first mapping in /proc/self/maps (0: none). */
static uintptr_t heap_start(void)
{
    FILE *f = fopen("/proc/self/maps", "r");
    if (!f)
        return 0;
    char line[512];
    unsigned long lo = 0;
    while (fgets(line, sizeof(line), f))
        if (strstr(line, "[heap]") && sscanf(line, "%lx-", &lo) == 1)
            break;
    fclose(f);
    return lo;
}

/* The child: 0 when what it saw agrees with what heap_settle says it did. */
static int placement_child(void)
{
    heap_settle();
    const char *why = NULL;
    size_t asked = heap_huge_asked(&why);
    char enabled[256] = "", buddy[4096] = "";
    (void)read_file_at(AT_FDCWD, "/sys/kernel/mm/transparent_hugepage/enabled", enabled, sizeof(enabled));
    (void)read_file_at(AT_FDCWD, "/proc/buddyinfo", buddy, sizeof(buddy));
    long hpage = read_long_at(AT_FDCWD, "/sys/kernel/mm/transparent_hugepage/hpage_pmd_size");
    printf("heap_settle: %zu bytes asked in huge pages (%s); enabled: %.40s", asked,
           asked ? "" : why, enabled);
    if (asked == 0) {
#ifdef __SANITIZE_ADDRESS__
        /* a sanitizer's allocator: no heap of glibc's to place */
        return strcmp(why, "not glibc's heap") == 0 ? 0 : 1;
#else
        /* It may decline only for a reason the kernel's files show. */
        if (!heap_thp_allowed(enabled))
            return strcmp(why, "transparent huge pages off") == 0 ? 0 : 2;
        if (hpage != 2 << 20)
            return strcmp(why, "no 2 MB huge page size") == 0 ? 0 : 3;
        if (heap_free_huge(buddy, 9) < HEAP_SPARE * HEAP_HUGE_FIRST)
            return 0;                /* too few here (the count may have moved since) */
        fprintf(stderr, "declined (%s) on a machine that allows it\n", why);
        return 4;
#endif
    }
    if (asked != HEAP_HUGE_FIRST * (size_t)hpage)
        return 5;
    /* The next allocations come from the region: a few task arrays' worth, touched. */
    size_t n = asked / 2;
    char *a = malloc(n);
    if (!a)
        return 6;
    memset(a, 1, n);
    long rss, huge;
    smaps_of((uintptr_t)a, &rss, &huge);
    printf("region: Rss %ld kB, AnonHugePages %ld kB\n", rss, huge);
    /* Every huge page the block touches is one (a small page written in the region
     * before the madvise, or a placement off the boundary, leaves one small). */
    uintptr_t h = (uintptr_t)hpage;
    long touched = (long)((((uintptr_t)a + n - 1) & ~(h - 1)) - ((uintptr_t)a & ~(h - 1))) / hpage + 1;
    if (huge < touched * (hpage >> 10))
        return 7;
    if (((uintptr_t)a & ((uintptr_t)hpage - 1)) > 64 * 1024)
        return 8;                    /* the block does not begin at the boundary (past
                                      * stdout's buffer, allocated by the printf above) */
    /* The heap skipped below the boundary: address space only, not one page of it
     * resident past the page of its header. */
    long page = sysconf(_SC_PAGESIZE);
    uintptr_t from = heap_start() + 2 * (uintptr_t)page;   /* past the first block */
    uintptr_t to = (uintptr_t)a & ~((uintptr_t)hpage - 1);
    if (from > 2 * (uintptr_t)page && to > from) {
        size_t pages = (to - from) / (size_t)page;
        unsigned char *vec = calloc(pages, 1);
        if (!vec || mincore((void *)from, to - from, vec) != 0)
            return 9;
        size_t resident = 0;
        for (size_t i = 0; i < pages; i++)
            resident += vec[i] & 1;
        free(vec);
        printf("below the boundary: %zu of %zu pages resident\n", resident, pages);
        if (resident != 0)
            return 10;
    }
    free(a);
    return 0;
}

/* In a new thread (a fresh arena of its own): a block of PREFAULT_BLOCK taken after
 * heap_prefault(bytes) when bytes > 0, written nowhere; the share of its pages already
 * resident, in percent, or -1. */
#define PREFAULT_BLOCK (512u << 10)
struct prefault_run {
    size_t bytes;
    int resident_pct;
};

static void *prefault_thread(void *arg)
{
    struct prefault_run *r = arg;
    r->resident_pct = -1;
    if (r->bytes)
        heap_prefault(r->bytes);
    char *b = malloc(PREFAULT_BLOCK);
    if (!b)
        return NULL;
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    /* the block's pages past its first and before its last (glibc writes a header at
     * each end) */
    uintptr_t from = ((uintptr_t)b + page - 1) & ~(page - 1);
    uintptr_t to = ((uintptr_t)b + PREFAULT_BLOCK - page) & ~(page - 1);
    size_t pages = (to - from) / page;
    unsigned char *vec = calloc(pages ? pages : 1, 1);
    if (vec && pages && mincore((void *)from, to - from, vec) == 0) {
        size_t resident = 0;
        for (size_t i = 0; i < pages; i++)
            resident += vec[i] & 1;
        r->resident_pct = (int)(resident * 100 / pages);
    }
    free(vec);
    free(b);
    return NULL;
}

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif
#define PREFAULT_UNSUPPORTED 77      /* the child's status: no MADV_POPULATE_WRITE (< 5.14) */

static int prefault_child(void)
{
    long pg = sysconf(_SC_PAGESIZE);
    void *probe = mmap(NULL, (size_t)pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (probe == MAP_FAILED)
        return 25;
    int prc = madvise(probe, (size_t)pg, MADV_POPULATE_WRITE);
    munmap(probe, (size_t)pg);
    if (prc != 0 && errno == EINVAL) {
        printf("no MADV_POPULATE_WRITE here: heap_prefault does nothing\n");
        return PREFAULT_UNSUPPORTED;
    }
    heap_settle();
    struct prefault_run with = { .bytes = 2 * PREFAULT_BLOCK }, without = { 0 };
    pthread_t th;
    if (pthread_create(&th, NULL, prefault_thread, &without) != 0 || pthread_join(th, NULL) != 0)
        return 20;
    if (pthread_create(&th, NULL, prefault_thread, &with) != 0 || pthread_join(th, NULL) != 0)
        return 21;
    printf("resident before written: %d %% without heap_prefault, %d %% after it\n",
           without.resident_pct, with.resident_pct);
#ifdef __SANITIZE_ADDRESS__
    return 0;                        /* a sanitizer's allocator: blocks are not reused */
#else
    if (without.resident_pct < 0 || with.resident_pct < 0)
        return 22;
    if (without.resident_pct > 10)
        return 23;                   /* the check would not tell the two apart */
    return with.resident_pct == 100 ? 0 : 24;
#endif
}

static int run_child_status(const char *mode)
{
    fflush(stdout);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        execl("/proc/self/exe", "test_heap", mode, (char *)NULL);
        _exit(127);
    }
    int st;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFEXITED(st));
    return WEXITSTATUS(st);
}

static void run_child(const char *mode)
{
    assert_int_equal(run_child_status(mode), 0);
}

/* In a process of its own, exec'd, so that heap_settle comes first in a fresh heap as in
 * iotriage's main (where nothing may have been allocated yet). */
static void test_placement(void **state)
{
    (void)state;
    run_child("--placement");
}

/* The same, for the thresholds heap_prefault relies on (set by heap_settle). */
static void test_prefault(void **state)
{
    (void)state;
    int rc = run_child_status("--prefault");
    if (rc == PREFAULT_UNSUPPORTED)
        skip();
    assert_int_equal(rc, 0);
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "--placement") == 0) {
        int rc = placement_child();
        fflush(stdout);
        return rc;
    }
    if (argc > 1 && strcmp(argv[1], "--prefault") == 0) {
        int rc = prefault_child();
        fflush(stdout);
        return rc;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_thp_allowed),
        cmocka_unit_test(test_free_huge),
        cmocka_unit_test(test_placement),
        cmocka_unit_test(test_prefault),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
