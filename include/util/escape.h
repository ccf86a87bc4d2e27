/* SPDX-License-Identifier: GPL-2.0-or-later */
/* util/escape.h: make untrusted bytes (process names, command lines) safe to show.
 *
 * Any local user chooses their process's name and command line, so these bytes must never
 * reach a terminal raw: an escape sequence could rewrite the screen or the title, a bidi
 * override could reverse what the operator reads. Everything that is not printable,
 * valid UTF-8 of a harmless kind is written as a visible escape.
 */
#ifndef IOTRIAGE_UTIL_ESCAPE_H
#define IOTRIAGE_UTIL_ESCAPE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* For the terminal and text output: control bytes as \n \t \e-style or \xNN, invalid
 * UTF-8 bytes as \xNN, bidi and other format characters as \u{XXXX}, a backslash as \\.
 * Valid printable UTF-8 passes through when utf8 is true, else non-ASCII is escaped too.
 * Writes at most cap-1 bytes and a NUL; never cuts an escape or a character in half.
 * Returns the length written. */
size_t esc_display(char *dst, size_t cap, const char *src, size_t srclen, bool utf8);

/* For JSON: writes a quoted JSON string to f. Control characters and U+2028/9 and bidi
 * controls become \uXXXX (exact), invalid UTF-8 bytes become U+FFFD (JSON has no way to
 * carry a byte that is not a character). The output is always valid JSON. */
void esc_json(FILE *f, const char *src, size_t srclen);

/* Decode one UTF-8 character at s (at most n bytes). Returns its length (1..4) and the code
 * point in *cp, or 0 when the bytes there are not valid UTF-8 (overlong, surrogate, cut). */
size_t utf8_decode(const unsigned char *s, size_t n, unsigned *cp);

#endif
