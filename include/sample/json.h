/* SPDX-License-Identifier: GPL-2.0-or-later */
/* sample/json.h: a small, strict JSON reader (RFC 8259) for text users hand us (recordings).
 *
 * Contract
 * - json_parse() reads exactly buf[0, len): the input needs no NUL and no byte at or past
 *   len is ever read. The input must be one value with only whitespace (space, tab, CR,
 *   LF) around it; anything after the value is an error ("trailing garbage").
 * - Strict, because a lenient reader would accept damage silently: no comments, trailing
 *   commas, single quotes, leading zeros, NaN/Infinity, '+' signs, raw control characters
 *   in strings or a byte-order mark; strings must be valid UTF-8; \u escapes are decoded to
 *   UTF-8 and a surrogate must be half of a pair (a lone one is an error); a key twice in
 *   one object is an error (a lookup must have one answer). Decoded strings are valid
 *   UTF-8, except for the one opt-in below (ufffd_escape_as_byte).
 * - Bounded: input length, nesting depth and number of values are capped (json_opts).
 *   Memory is linear in what is held: at most about 48 bytes per value plus len bytes of
 *   decoded strings, allocated as the values are met.
 * - Errors: -EINVAL for malformed input, -E2BIG for a limit exceeded; *err gets the byte
 *   offset where reading stopped and one line of English (no newline). Allocation failure
 *   aborts, as everywhere in iotriage (util.h). Nothing here prints or exits.
 * - The document owns every value and string: they stay valid until json_free(). A
 *   decoded string is NUL-terminated for convenience but may hold NUL bytes (\u0000):
 *   compare lengths when that matters.
 * - Numbers: every number has a double (correctly rounded, independent of the locale);
 *   an integer literal (no fraction, no exponent) within int64 also keeps its exact value.
 * - Accessors accept NULL (a missing value) and answer "missing" rather than crash, so a
 *   chain json_get(json_get(root, "a"), "b") needs one check at the end.
 */
#ifndef IOTRIAGE_SAMPLE_JSON_H
#define IOTRIAGE_SAMPLE_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum json_type { JSON_NULL, JSON_BOOL, JSON_NUMBER, JSON_STRING, JSON_ARRAY, JSON_OBJECT };

/* The answer of a typed getter: the first is success, the others say why not. */
enum json_status {
    JSON_OK,
    JSON_MISSING,                    /* no such value (NULL: key absent, index past end) */
    JSON_IS_NULL,                    /* the value is null */
    JSON_WRONG_TYPE,                 /* a value of another type */
    JSON_OUT_OF_RANGE,               /* a number, but not an integer or outside [lo, hi] */
};

#define JSON_DEFAULT_MAX_LEN    (16u << 20)
#define JSON_DEFAULT_MAX_DEPTH  32u
#define JSON_DEFAULT_MAX_VALUES (1u << 20)

struct json_opts {
    size_t   max_len;                /* bytes of input; 0: JSON_DEFAULT_MAX_LEN */
    unsigned max_depth;              /* arrays/objects inside each other; 0: default;
                                      * at most 512 whatever is asked (recursion) */
    size_t   max_values;             /* values of every kind, keys not counted; 0: default */
    /* For text from esc_json() (util/escape.h), which writes each byte that is not UTF-8 as
     * the escape \ufffd and a real U+FFFD as itself: decode that escape to the single
     * byte 0xFF (never valid UTF-8) instead, so that the string written again reads the
     * same, and a display shows an invalid byte where the original had one. */
    bool     ufffd_escape_as_byte;
};

struct json_error {
    size_t offset;                   /* byte offset into the input where reading stopped */
    char   msg[128];
};

struct json_doc;
struct json_value;

/* Parse buf[0, len). opts may be NULL (defaults). On success *out is the document (free
 * with json_free) and 0 is returned; else *out is NULL and -EINVAL or -E2BIG. err may be
 * NULL. */
int  json_parse(struct json_doc **out, const char *buf, size_t len,
                const struct json_opts *opts, struct json_error *err);
void json_free(struct json_doc *doc);

const struct json_value *json_root(const struct json_doc *doc);

/* The type of v; v must not be NULL. */
enum json_type json_type(const struct json_value *v);
const char    *json_type_name(enum json_type t);      /* "null" "bool" "number"... */
/* Why a getter failed, for messages: "missing", "null", "of the wrong type", ... */
const char    *json_status_text(enum json_status s);

/* Members of an object by key (NULL when v is no object or the key is absent). */
const struct json_value *json_get(const struct json_value *obj, const char *key);
/* Elements of an array, members of an object (in document order); 0 for other values. */
size_t json_len(const struct json_value *v);
const struct json_value *json_at(const struct json_value *v, size_t i);
/* The key of an object member (as returned by json_at on an object), else NULL. */
const char *json_key(const struct json_value *v, size_t *len);

/* Typed reads of one value (v may be NULL: JSON_MISSING). *out is written only on
 * JSON_OK. */
enum json_status json_as_bool(const struct json_value *v, bool *out);
enum json_status json_as_double(const struct json_value *v, double *out);
/* An integer literal within [lo, hi]; 5.0 or 1e3 are not integers here. */
enum json_status json_as_int(const struct json_value *v, int64_t lo, int64_t hi, int64_t *out);
/* *len may be NULL. */
enum json_status json_as_string(const struct json_value *v, const char **out, size_t *len);
enum json_status json_as_array(const struct json_value *v);
enum json_status json_as_object(const struct json_value *v);

#endif
