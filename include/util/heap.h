/* util/heap.h: the process's heap, set up first thing in main.
 *
 * Two settings and one placement. The settings: every block below 32 MB from the heap, and
 * its top given back only past 8 MB free (a refresh frees and allocates again arrays sized
 * to the tasks; see heap_settle). The placement: the first sample touches about a
 * kilobyte of fresh memory per task (the task arrays, the name cache, the iterator's
 * records), and on a virtual machine a fresh 4 KB page costs 15-30 us (a fault that the
 * hypervisor serves too) where a fresh 2 MB page costs about as much as one of them and its
 * zeroing: at 1,000 processes some 300 faults before the first frame, 4-5 ms of it. So the
 * heap's next few megabytes are asked for as transparent huge pages (madvise), from a
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

/* Pure: the bytes to ask for as huge pages of huge bytes each, for tasks tasks (the
 * kernel's count of threads; -1 unknown): about what the first sample will touch
 * (HEAP_FIRST_PER_TASK a task), in whole huge pages, one at least, HEAP_FIRST_MAX at most
 * (under the trim threshold: the region is never given back before it is used). */
#define HEAP_FIRST_PER_TASK 640
#define HEAP_FIRST_MAX ((size_t)6 << 20)
size_t heap_first_bytes(long tasks, size_t huge);

/* Sets the allocator up (the settings above) and, where the kernel allows it and has
 * HEAP_SPARE times the huge blocks asked for free, places the heap's next allocations on
 * a huge page boundary and madvises the region. Before any other allocation of note: first
 * thing in main. Nothing else changes where the allocator is not glibc's heap (a
 * sanitizer's). */
#define HEAP_SPARE 8
void heap_settle(void);

/* The bytes heap_settle asked for as huge pages; 0 when it did not (and why, in a few
 * words, when why is not NULL). For tests and the bench. */
size_t heap_huge_asked(const char **why);

#endif
