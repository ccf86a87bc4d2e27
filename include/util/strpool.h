/* SPDX-License-Identifier: GPL-2.0-or-later */
/* util/strpool.h: shared strings, one copy of each distinct text, reference-counted.
 *
 * The task list keeps names, command lines and user names here: the caches and every
 * snapshot that lists a task hold references to one copy, so that 10,000 processes do not
 * cost 10,000 copies of "sleep" per snapshot.
 *
 * Contract
 * - strpool_get() returns a reference to the pool's copy of s[0, len) (no NUL inside),
 *   made on first use; strpool_ref() adds a reference to a string the pool gave;
 *   strpool_unref() drops one (NULL is ignored), and the last one frees the copy.
 * - The empty string is a shared constant that is never counted.
 * - strpool_close() ends the owner's use: the pool goes now if it holds no string, else
 *   with its last string, so that snapshots may outlive the sampler that made them.
 * - Single-threaded: the counts need no atomics. Allocation failure aborts (util.h).
 */
#ifndef IOTRIAGE_UTIL_STRPOOL_H
#define IOTRIAGE_UTIL_STRPOOL_H

#include <stddef.h>

struct strpool;

struct strpool *strpool_new(void);
void  strpool_close(struct strpool *p);
char *strpool_get(struct strpool *p, const char *s, size_t len);
char *strpool_ref(char *s);
void  strpool_unref(const char *s);

#endif
