/* SPDX-License-Identifier: GPL-2.0-or-later */
/* util/heap.h: the process's heap, set up first thing in main.
 *
 * Two settings and one placement. The settings: every block below 32 MB from the heap, and
 * its top given back only past 8 MB free (a refresh frees and allocates again arrays sized
 * to the tasks; see heap_settle). The placement: the first sample touches about a
 * kilobyte of fresh memory per task (the task arrays, the name cache, the iterator's
 * records), and on a virtual machine a fresh 4 KB page costs 15-30 us (a fault that the
 * hypervisor serves too): at 1,000 processes some 300 faults before the first frame,
 * 4-5 ms of it. A fresh 2 MB page costs one fault and its zeroing: 0.1-0.2 ms where the
 * hypervisor already backs that memory, as much as its 512 small pages where it does not
 * (6 MB touched here: 25-27 ms in small pages; in huge ones 0.4 ms, or 27 the first time).
 * So the heap's next 2 MB are asked for as a transparent huge page (madvise), from a
 * boundary the allocations start at, when the kernel allows it (transparent_hugepage
 * "always" or "madvise") and has free huge blocks to spare: never a compaction or a
 * reclaim for them on a machine short of memory. */
#ifndef IOTRIAGE_UTIL_HEAP_H
#define IOTRIAGE_UTIL_HEAP_H

#include <stdbool.h>
#include <stddef.h>

/* Pure: whether the transparent_hugepage "enabled" file's text lets a madvise'd range
 * have huge pages: its bracketed mode is "always" or "madvise". */
bool heap_thp_allowed(const char *enabled);

/* Pure: free blocks of at least 2^order pages in /proc/buddyinfo's text, counted in
 * blocks of 2^order pages (an order+1 block is two), every zone but DMA (user memory does
 * not come from it); -1 when the text holds no zone line. */
long heap_free_huge(const char *buddyinfo, int order);

/* The huge pages asked for: one, 2 MB, about what the first sample touches at 1,000
 * processes. More would be more memory, not only faster faults: a huge page is resident
 * whole, touched or not, and a refresh's arrays are reserved larger than what it writes
 * (a 6 MB region cost 3 MB of peak RSS at 10,000 processes with the lens, this one 1.7). */
#define HEAP_HUGE_FIRST 1

/* Sets the allocator up (the settings above) and, where the kernel allows it and has
 * HEAP_SPARE times the huge blocks asked for free, places the heap's next allocations on
 * a huge page boundary and madvises the region. Before any other allocation of note: first
 * thing in main. Nothing else changes where the allocator is not glibc's heap (a
 * sanitizer's). */
#define HEAP_SPARE 8
void heap_settle(void);

/* Faults in at once, in one system call, the next `bytes` (up to HEAP_PREFAULT_MAX) of
 * the calling thread's heap: for a thread about to make a burst of small blocks in
 * memory not yet touched (the terminal's set-up: ncurses's screens, some 850 KB on a
 * 200x50 terminal, 230 faults a page at a time, 4-5 ms on a virtual machine; populated
 * together, 0.3-0.5 ms). A block of that size is taken and freed again: after
 * heap_settle it comes from the thread's own heap (under the mmap threshold) and stays
 * there free (under the trim threshold) for the next blocks. Nothing where the kernel
 * lacks MADV_POPULATE_WRITE (5.14). */
#define HEAP_PREFAULT_MAX (4u << 20)
void heap_prefault(size_t bytes);

/* The bytes heap_settle asked for as huge pages; 0 when it did not (and why, in a few
 * words, when why is not NULL). For the tests. */
size_t heap_huge_asked(const char **why);

#endif
