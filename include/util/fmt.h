/* SPDX-License-Identifier: GPL-2.0-or-later */
/* util/fmt.h: numbers and errors as the outputs print them, without printf's machinery
 * where a refresh prints thousands of them. Pure: no state, no allocation. */
#ifndef IOTRIAGE_UTIL_FMT_H
#define IOTRIAGE_UTIL_FMT_H

#include <stddef.h>

/* printf's "%.*f" of v (the same text), without its machinery for prec 0 to 3 and
 * |v| x 10^prec below 1e15: the batch output formats a dozen numbers per task per refresh. Returns
 * the length written (buf holds at least 24 bytes for the fast path). */
size_t fmt_fixed(char *buf, size_t n, double v, int prec);

/* printf's "%lld" of v into buf (at most 20 characters and a NUL). Returns the length. */
size_t fmt_int(char buf[24], long long v);

/* Bytes per second the iotop way: 512B, 4.00K, 12.3M ("-" when unknown). */
void fmt_rate(char *buf, size_t n, double bps);
/* The same for a rate that may be negative (a filesystem emptying): "-2.7M". */
void fmt_signed_rate(char *buf, size_t n, double bps);

/* Bytes as "12.3G", binary units like df -h (a size, not a rate). */
void fmt_size(char *buf, size_t n, double v);

/* A span of seconds (s >= 0), rounded to the second: "52s", "3m10s", "2h05m". */
void fmt_span(char *buf, size_t n, double s);

/* One short human reason for an -errno from a source ("permission denied", "exited"). */
const char *source_err_text(int err);

#endif
