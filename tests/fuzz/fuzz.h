/* SPDX-License-Identifier: GPL-2.0-or-later */
/* tests/fuzz/fuzz.h: shared by the libFuzzer harnesses (tests/fuzz/fuzz_*.c).
 *
 * Every harness hands the parser a heap copy of exactly the fuzzer's bytes, with no
 * terminator after them (fz_copy): AddressSanitizer then reports any read past len, which
 * is what a parser fed a file it did not NUL-terminate, or a length shorter than its
 * buffer, would do. The two sysfs parsers whose contract is a C string get one NUL after
 * the bytes (fz_cstr) and nothing more.
 *
 * FZ_CHECK(cond) is an invariant of the parser's contract (include/source/ *.h): when it
 * does not hold the harness prints where and aborts, which libFuzzer reports as a crash
 * and saves the input under build/fuzz/artifacts/.
 *
 * Build and run: make fuzz-smoke (a few seconds each), make fuzz (FUZZ_SECONDS each).
 */
#ifndef IOTRIAGE_FUZZ_H
#define IOTRIAGE_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FZ_CHECK(cond)                                                                  \
    do {                                                                                \
        if (!(cond)) {                                                                  \
            fprintf(stderr, "%s:%d: invariant failed: %s\n", __FILE__, __LINE__, #cond); \
            abort();                                                                    \
        }                                                                               \
    } while (0)

/* Exactly len bytes on the heap, no terminator (len 0: a zero-size allocation that must not
 * be read at all). Free with free(). */
static inline char *fz_copy(const uint8_t *data, size_t len)
{
    char *p = malloc(len);      /* ASan: malloc(0) is a valid, unreadable pointer */
    if (!p)
        abort();
    if (len)
        memcpy(p, data, len);
    return p;
}

/* The bytes as a C string: len bytes and one NUL, nothing after it. */
static inline char *fz_cstr(const uint8_t *data, size_t len)
{
    char *p = malloc(len + 1);
    if (!p)
        abort();
    if (len)
        memcpy(p, data, len);
    p[len] = '\0';
    return p;
}

/* Is s[0, cap) NUL-terminated? */
static inline int fz_terminated(const char *s, size_t cap)
{
    return memchr(s, '\0', cap) != NULL;
}

#endif
