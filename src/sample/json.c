/* SPDX-License-Identifier: GPL-2.0-or-later */
/* sample/json.c: a strict recursive-descent JSON reader into a small DOM (sample/json.h). */
#include "sample/json.h"

#include <errno.h>
#include <locale.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/escape.h"
#include "util.h"

struct json_value {
    uint8_t  type;                   /* enum json_type */
    bool     is_int;                 /* number: an integer literal within int64 (u.i) */
    bool     neg_zero;               /* number "-0": the integer 0, the double -0.0 */
    uint32_t n;                      /* string: length; array/object: members */
    uint32_t keylen;
    const char *key;                 /* member of an object: its key, else NULL */
    union {
        bool b;
        int64_t i;                   /* is_int */
        double d;                    /* !is_int */
        const char *s;
        const struct json_value **kids;   /* n in document order; objects: n more, by key */
    } u;
};

/* Values and member lists come from a bump arena: pointers never move while parsing, and
 * json_free() is a walk over a few blocks. */
struct arena_blk {
    struct arena_blk *next;
    size_t used, cap;
    max_align_t data[];
};

#define ARENA_BLOCK (64u << 10)
/* Each level of nesting is two stack frames of the parser: keep the recursion shallow
 * whatever the caller asks. */
#define JSON_MAX_DEPTH_CAP 512u

struct json_doc {
    struct arena_blk *blocks;
    char *strs;                      /* decoded strings: never longer than the input */
    const struct json_value *root;
};

static void *arena_alloc(struct json_doc *d, size_t n)
{
    n = (n + sizeof(max_align_t) - 1) / sizeof(max_align_t) * sizeof(max_align_t);
    struct arena_blk *b = d->blocks;
    if (!b || b->cap - b->used < n) {
        size_t cap = n > ARENA_BLOCK ? n : ARENA_BLOCK;
        b = xmalloc(sizeof(*b) + cap);
        b->used = 0;
        b->cap = cap;
        b->next = d->blocks;
        d->blocks = b;
    }
    void *p = (char *)b->data + b->used;
    b->used += n;
    return p;
}

void json_free(struct json_doc *doc)
{
    if (!doc)
        return;
    for (struct arena_blk *b = doc->blocks, *next; b; b = next) {
        next = b->next;
        free(b);
    }
    free(doc->strs);
    free(doc);
}

/* ---- parsing ------------------------------------------------------------------------- */

struct parser {
    const unsigned char *start, *p, *end;
    struct json_doc *doc;
    char *sp;                        /* next free byte of doc->strs */
    const struct json_value **stack; /* members of the containers being read */
    size_t nstack, capstack;
    size_t nvalues, max_values;
    unsigned max_depth;
    bool ufffd_byte;                 /* json_opts.ufffd_escape_as_byte */
    struct json_error *err;
    int rc;
};

#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
static void *fail(struct parser *ps, int rc, const char *fmt, ...)
{
    if (ps->rc)
        return NULL;                 /* keep the first, innermost reason */
    ps->rc = rc;
    if (ps->err) {
        ps->err->offset = (size_t)(ps->p - ps->start);
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(ps->err->msg, sizeof(ps->err->msg), fmt, ap);
        va_end(ap);
    }
    return NULL;
}

/* "unexpected X" for the byte at p, or the end of input. */
static void *fail_unexpected(struct parser *ps, const char *wanted)
{
    if (ps->p >= ps->end)
        return fail(ps, -EINVAL, "unexpected end of input, expected %s", wanted);
    unsigned c = *ps->p;
    if (c > 0x20 && c < 0x7f)
        return fail(ps, -EINVAL, "unexpected '%c', expected %s", (char)c, wanted);
    return fail(ps, -EINVAL, "unexpected byte 0x%02x, expected %s", c, wanted);
}

static void skip_ws(struct parser *ps)
{
    while (ps->p < ps->end && (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\n' || *ps->p == '\r'))
        ps->p++;
}

static struct json_value *new_value(struct parser *ps, enum json_type t)
{
    if (ps->nvalues >= ps->max_values)
        return fail(ps, -E2BIG, "more than %zu values", ps->max_values);
    ps->nvalues++;
    struct json_value *v = arena_alloc(ps->doc, sizeof(*v));
    memset(v, 0, sizeof(*v));
    v->type = (uint8_t)t;
    return v;
}

static bool literal(struct parser *ps, const char *word)
{
    size_t n = strlen(word);
    if ((size_t)(ps->end - ps->p) < n || memcmp(ps->p, word, n) != 0)
        return false;
    ps->p += n;
    return true;
}

static int hexval(unsigned c)
{
    if (c >= '0' && c <= '9')
        return (int)(c - '0');
    c |= 0x20;
    return c >= 'a' && c <= 'f' ? (int)(c - 'a' + 10) : -1;
}

/* Four hex digits after "\u" at p; -1 when they are not there. */
static long hex4(const struct parser *ps, const unsigned char *p)
{
    if (ps->end - p < 4)
        return -1;
    long v = 0;
    for (int i = 0; i < 4; i++) {
        int h = hexval(p[i]);
        if (h < 0)
            return -1;
        v = v * 16 + h;
    }
    return v;
}

static char *put_utf8(char *o, unsigned cp)
{
    if (cp < 0x80) {
        *o++ = (char)cp;
    } else if (cp < 0x800) {
        *o++ = (char)(0xc0 | (cp >> 6));
        *o++ = (char)(0x80 | (cp & 0x3f));
    } else if (cp < 0x10000) {
        *o++ = (char)(0xe0 | (cp >> 12));
        *o++ = (char)(0x80 | ((cp >> 6) & 0x3f));
        *o++ = (char)(0x80 | (cp & 0x3f));
    } else {
        *o++ = (char)(0xf0 | (cp >> 18));
        *o++ = (char)(0x80 | ((cp >> 12) & 0x3f));
        *o++ = (char)(0x80 | ((cp >> 6) & 0x3f));
        *o++ = (char)(0x80 | (cp & 0x3f));
    }
    return o;
}

/* "\uXXXX" (and its pair) with p at the backslash; appends UTF-8 at *o. Decoded text is
 * never longer than its escape (6 bytes -> at most 3, 12 -> 4), which keeps strs within
 * the input's length. */
static bool unicode_escape(struct parser *ps, char **o)
{
    long hi = hex4(ps, ps->p + 2);
    if (hi < 0)
        return fail(ps, -EINVAL, "\\u needs four hex digits"), false;
    unsigned cp = (unsigned)hi;
    if (hi >= 0xdc00 && hi <= 0xdfff)
        return fail(ps, -EINVAL, "lone low surrogate \\u%04lx", hi), false;
    if (hi >= 0xd800 && hi <= 0xdbff) {
        const unsigned char *q = ps->p + 6;
        long lo = (ps->end - q >= 2 && q[0] == '\\' && q[1] == 'u') ? hex4(ps, q + 2) : -1;
        if (lo < 0xdc00 || lo > 0xdfff)
            return fail(ps, -EINVAL, "high surrogate \\u%04lx without its low half", hi), false;
        cp = 0x10000 + (((unsigned)hi - 0xd800) << 10) + ((unsigned)lo - 0xdc00);
        ps->p += 6;
    }
    ps->p += 6;
    if (cp == 0xfffd && ps->ufffd_byte)
        *(*o)++ = (char)0xff;
    else
        *o = put_utf8(*o, cp);
    return true;
}

static bool simple_escape(struct parser *ps, char **o)
{
    static const char from[] = "\"\\/bfnrt";
    static const char to[] = "\"\\/\b\f\n\r\t";
    if (ps->end - ps->p < 2)
        return fail(ps, -EINVAL, "unterminated string"), false;
    unsigned c = ps->p[1];
    if (c == 'u')
        return unicode_escape(ps, o);
    const char *k = c ? strchr(from, (int)c) : NULL;
    if (!k) {
        if (c > 0x20 && c < 0x7f)
            return fail(ps, -EINVAL, "invalid escape \\%c", (char)c), false;
        return fail(ps, -EINVAL, "invalid escape: backslash before byte 0x%02x", c), false;
    }
    *(*o)++ = to[k - from];
    ps->p += 2;
    return true;
}

/* A string at p (the opening quote), decoded into strs. */
static bool parse_string(struct parser *ps, const char **s, uint32_t *len)
{
    char *o = ps->sp;
    const char *begin = o;
    ps->p++;
    for (;;) {
        if (ps->p >= ps->end)
            return fail(ps, -EINVAL, "unterminated string"), false;
        unsigned c = *ps->p;
        if (c == '"')
            break;
        if (c == '\\') {
            if (!simple_escape(ps, &o))
                return false;
            continue;
        }
        if (c < 0x20)
            return fail(ps, -EINVAL, "control character 0x%02x in a string", c), false;
        unsigned cp;
        size_t l = utf8_decode(ps->p, (size_t)(ps->end - ps->p), &cp);
        if (l == 0)
            return fail(ps, -EINVAL, "invalid UTF-8 in a string (byte 0x%02x)", c), false;
        memcpy(o, ps->p, l);
        o += l;
        ps->p += l;
    }
    ps->p++;
    *o++ = '\0';
    ps->sp = o;
    *s = begin;
    *len = (uint32_t)(o - 1 - begin);
    return true;
}

/* The locale-independent strtod: LC_NUMERIC may say ',' where a caller set it (main
 * sets LC_CTYPE alone). */
static locale_t c_locale;
static pthread_once_t c_locale_once = PTHREAD_ONCE_INIT;

static void c_locale_init(void)
{
    c_locale = newlocale(LC_NUMERIC_MASK, "C", (locale_t)0);
}

static double c_strtod(const char *s)
{
    pthread_once(&c_locale_once, c_locale_init);
    return c_locale ? strtod_l(s, NULL, c_locale) : strtod(s, NULL);
}

/* -?(0|[1-9][0-9]*), digits only; returns the end, or NULL when there is no digit. */
static const unsigned char *scan_int(struct parser *ps, const unsigned char *p)
{
    if (p < ps->end && *p == '-')
        p++;
    if (p >= ps->end || *p < '0' || *p > '9')
        return NULL;
    if (*p == '0') {
        p++;
        if (p < ps->end && *p >= '0' && *p <= '9') {
            ps->p = p;
            return fail(ps, -EINVAL, "leading zero in a number");
        }
        return p;
    }
    while (p < ps->end && *p >= '0' && *p <= '9')
        p++;
    return p;
}

static const unsigned char *scan_digits(const struct parser *ps, const unsigned char *p)
{
    const unsigned char *q = p;
    while (q < ps->end && *q >= '0' && *q <= '9')
        q++;
    return q > p ? q : NULL;
}

/* Exact int64 of a scanned integer literal; false when it does not fit. */
static bool to_int64(const unsigned char *p, const unsigned char *end, int64_t *out)
{
    bool neg = *p == '-';
    p += neg;
    uint64_t v = 0, lim = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
    for (; p < end; p++) {
        unsigned dg = *p - '0';
        if (v > (lim - dg) / 10)
            return false;
        v = v * 10 + dg;
    }
    *out = neg ? (v == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)v) : (int64_t)v;
    return true;
}

#define NUM_TEXT_MAX 512

static struct json_value *parse_number(struct parser *ps)
{
    const unsigned char *b = ps->p, *q = scan_int(ps, b);
    if (!q)
        return ps->rc ? NULL : fail_unexpected(ps, "a value");
    bool integral = true;
    if (q < ps->end && *q == '.') {
        integral = false;
        const unsigned char *dot = q;
        if (!(q = scan_digits(ps, q + 1))) {
            ps->p = dot + 1;
            return fail(ps, -EINVAL, "digit expected after '.'");
        }
    }
    if (q < ps->end && (*q == 'e' || *q == 'E')) {
        integral = false;
        q++;
        if (q < ps->end && (*q == '+' || *q == '-'))
            q++;
        const unsigned char *digits = q;
        if (!(q = scan_digits(ps, q))) {
            ps->p = digits;
            return fail(ps, -EINVAL, "digit expected in an exponent");
        }
    }
    size_t n = (size_t)(q - b);
    if (n >= NUM_TEXT_MAX)
        return fail(ps, -EINVAL, "number of %zu characters is too long", n);
    struct json_value *v = new_value(ps, JSON_NUMBER);
    if (!v)
        return NULL;
    if (integral && to_int64(b, q, &v->u.i)) {
        v->is_int = true;
        v->neg_zero = *b == '-' && v->u.i == 0;
    } else {
        char text[NUM_TEXT_MAX];
        memcpy(text, b, n);
        text[n] = '\0';
        v->u.d = c_strtod(text);
        if (isinf(v->u.d))
            return fail(ps, -EINVAL, "number out of range");
    }
    ps->p = q;
    return v;
}

static struct json_value *parse_value(struct parser *ps, unsigned depth);

static void push(struct parser *ps, const struct json_value *v)
{
    if (ps->nstack == ps->capstack) {
        ps->capstack = ps->capstack ? 2 * ps->capstack : 64;
        ps->stack = xreallocarray(ps->stack, ps->capstack, sizeof(*ps->stack));
    }
    ps->stack[ps->nstack++] = v;
}

/* Move the members a container collected (the top n of the stack) into the arena. */
static const struct json_value **take_members(struct parser *ps, size_t n, size_t copies)
{
    const struct json_value **k = arena_alloc(ps->doc, (n ? n : 1) * copies * sizeof(*k));
    for (size_t c = 0; n && c < copies; c++)   /* n == 0: the stack may not exist yet */
        memcpy(k + c * n, ps->stack + ps->nstack - n, n * sizeof(*k));
    ps->nstack -= n;
    return k;
}

static int key_cmp(const void *a, const void *b)
{
    const struct json_value *x = *(const struct json_value *const *)a;
    const struct json_value *y = *(const struct json_value *const *)b;
    size_t n = x->keylen < y->keylen ? x->keylen : y->keylen;
    int c = memcmp(x->key, y->key, n);
    if (c)
        return c;
    return x->keylen < y->keylen ? -1 : x->keylen > y->keylen;
}

static struct json_value *parse_array(struct parser *ps, unsigned depth)
{
    struct json_value *arr = new_value(ps, JSON_ARRAY);
    if (!arr)
        return NULL;
    size_t base = ps->nstack;
    ps->p++;
    skip_ws(ps);
    if (ps->p < ps->end && *ps->p == ']') {
        ps->p++;
    } else {
        for (;;) {
            struct json_value *v = parse_value(ps, depth + 1);
            if (!v)
                return NULL;
            push(ps, v);
            skip_ws(ps);
            if (ps->p < ps->end && *ps->p == ',') {
                ps->p++;
                continue;
            }
            if (ps->p < ps->end && *ps->p == ']') {
                ps->p++;
                break;
            }
            return fail_unexpected(ps, "',' or ']'");
        }
    }
    arr->n = (uint32_t)(ps->nstack - base);
    arr->u.kids = take_members(ps, arr->n, 1);
    return arr;
}

static bool parse_member(struct parser *ps, unsigned depth)
{
    const char *key;
    uint32_t keylen;
    skip_ws(ps);
    if (ps->p >= ps->end || *ps->p != '"')
        return fail_unexpected(ps, "a string key"), false;
    if (!parse_string(ps, &key, &keylen))
        return false;
    skip_ws(ps);
    if (ps->p >= ps->end || *ps->p != ':')
        return fail_unexpected(ps, "':'"), false;
    ps->p++;
    struct json_value *v = parse_value(ps, depth + 1);
    if (!v)
        return false;
    v->key = key;
    v->keylen = keylen;
    push(ps, v);
    return true;
}

static struct json_value *parse_object(struct parser *ps, unsigned depth)
{
    struct json_value *obj = new_value(ps, JSON_OBJECT);
    if (!obj)
        return NULL;
    size_t base = ps->nstack;
    ps->p++;
    skip_ws(ps);
    if (ps->p < ps->end && *ps->p == '}') {
        ps->p++;
    } else {
        for (;;) {
            if (!parse_member(ps, depth))
                return NULL;
            skip_ws(ps);
            if (ps->p < ps->end && *ps->p == ',') {
                ps->p++;
                continue;
            }
            if (ps->p < ps->end && *ps->p == '}') {
                ps->p++;
                break;
            }
            return fail_unexpected(ps, "',' or '}'");
        }
    }
    uint32_t n = (uint32_t)(ps->nstack - base);
    obj->n = n;
    obj->u.kids = take_members(ps, n, 2);
    /* The second copy, sorted by key, answers lookups and finds duplicates. */
    const struct json_value **sorted = obj->u.kids + n;
    qsort(sorted, n, sizeof(*sorted), key_cmp);
    for (uint32_t i = 1; i < n; i++) {
        if (key_cmp(&sorted[i - 1], &sorted[i]) == 0) {
            char shown[64];          /* the key is untrusted text bound for a terminal */
            esc_display(shown, sizeof(shown), sorted[i]->key,
                        sorted[i]->keylen > 40 ? 40 : sorted[i]->keylen, true);
            return fail(ps, -EINVAL, "duplicate key \"%s\"", shown);
        }
    }
    return obj;
}

static struct json_value *parse_value(struct parser *ps, unsigned depth)
{
    skip_ws(ps);
    if (ps->p >= ps->end)
        return fail_unexpected(ps, "a value");
    switch (*ps->p) {
    case '{':
    case '[':
        if (depth >= ps->max_depth)
            return fail(ps, -E2BIG, "nesting deeper than %u", ps->max_depth);
        return *ps->p == '{' ? parse_object(ps, depth) : parse_array(ps, depth);
    case '"': {
        struct json_value *v = new_value(ps, JSON_STRING);
        if (v && !parse_string(ps, &v->u.s, &v->n))
            return NULL;
        return v;
    }
    case 't':
    case 'f':
    case 'n': {
        bool t = literal(ps, "true"), f = !t && literal(ps, "false");
        if (!t && !f && !literal(ps, "null"))
            return fail_unexpected(ps, "a value");
        struct json_value *v = new_value(ps, t || f ? JSON_BOOL : JSON_NULL);
        if (v)
            v->u.b = t;
        return v;
    }
    default:
        return parse_number(ps);
    }
}

int json_parse(struct json_doc **out, const char *buf, size_t len,
               const struct json_opts *opts, struct json_error *err)
{
    struct json_opts l = opts ? *opts : (struct json_opts){ 0 };
    size_t max_len = l.max_len ? l.max_len : JSON_DEFAULT_MAX_LEN;
    *out = NULL;
    if (err) {
        err->offset = 0;
        err->msg[0] = '\0';
    }
    struct parser ps = {
        .start = (const unsigned char *)buf, .p = (const unsigned char *)buf,
        .end = (const unsigned char *)buf + len, .err = err,
        .max_values = l.max_values ? l.max_values : JSON_DEFAULT_MAX_VALUES,
        .max_depth = !l.max_depth ? JSON_DEFAULT_MAX_DEPTH
                   : l.max_depth > JSON_MAX_DEPTH_CAP ? JSON_MAX_DEPTH_CAP : l.max_depth,
        .ufffd_byte = l.ufffd_escape_as_byte,
    };
    if (len > max_len || len > UINT32_MAX) {
        fail(&ps, -E2BIG, "input of %zu bytes is over the limit of %zu", len, max_len);
        return ps.rc;
    }
    struct json_doc *doc = xcalloc(1, sizeof(*doc));
    doc->strs = xmalloc(len + 1);
    ps.doc = doc;
    ps.sp = doc->strs;
    const struct json_value *root = parse_value(&ps, 0);
    if (root) {
        skip_ws(&ps);
        if (ps.p < ps.end)
            fail(&ps, -EINVAL, "trailing garbage after the value");
    }
    free(ps.stack);
    if (ps.rc) {
        json_free(doc);
        return ps.rc;
    }
    doc->root = root;
    *out = doc;
    return 0;
}

/* ---- access -------------------------------------------------------------------------- */

const struct json_value *json_root(const struct json_doc *doc)
{
    return doc ? doc->root : NULL;
}

enum json_type json_type(const struct json_value *v)
{
    return (enum json_type)v->type;
}

const char *json_type_name(enum json_type t)
{
    static const char *const names[] = { "null", "bool", "number", "string", "array", "object" };
    return (unsigned)t < ARRAY_SIZE(names) ? names[t] : "?";
}

const char *json_status_text(enum json_status s)
{
    static const char *const names[] = { "ok", "missing", "null", "of the wrong type",
                                         "out of range" };
    return (unsigned)s < ARRAY_SIZE(names) ? names[s] : "?";
}

const struct json_value *json_get(const struct json_value *obj, const char *key)
{
    if (!obj || obj->type != JSON_OBJECT)
        return NULL;
    struct json_value probe = { .key = key, .keylen = (uint32_t)strlen(key) };
    const struct json_value *pp = &probe;
    const struct json_value *const *hit =
        bsearch(&pp, obj->u.kids + obj->n, obj->n, sizeof(pp), key_cmp);
    return hit ? *hit : NULL;
}

size_t json_len(const struct json_value *v)
{
    return v && (v->type == JSON_ARRAY || v->type == JSON_OBJECT) ? v->n : 0;
}

const struct json_value *json_at(const struct json_value *v, size_t i)
{
    return i < json_len(v) ? v->u.kids[i] : NULL;
}

const char *json_key(const struct json_value *v, size_t *len)
{
    if (!v || !v->key)
        return NULL;
    if (len)
        *len = v->keylen;
    return v->key;
}

static enum json_status check(const struct json_value *v, enum json_type t)
{
    if (!v)
        return JSON_MISSING;
    if (v->type == t)
        return JSON_OK;
    return v->type == JSON_NULL ? JSON_IS_NULL : JSON_WRONG_TYPE;
}

enum json_status json_as_bool(const struct json_value *v, bool *out)
{
    enum json_status s = check(v, JSON_BOOL);
    if (s == JSON_OK)
        *out = v->u.b;
    return s;
}

enum json_status json_as_double(const struct json_value *v, double *out)
{
    enum json_status s = check(v, JSON_NUMBER);
    if (s == JSON_OK)
        *out = !v->is_int ? v->u.d : v->neg_zero ? -0.0 : (double)v->u.i;
    return s;
}

enum json_status json_as_int(const struct json_value *v, int64_t lo, int64_t hi, int64_t *out)
{
    enum json_status s = check(v, JSON_NUMBER);
    if (s != JSON_OK)
        return s;
    if (!v->is_int || v->u.i < lo || v->u.i > hi)
        return JSON_OUT_OF_RANGE;
    *out = v->u.i;
    return JSON_OK;
}

enum json_status json_as_string(const struct json_value *v, const char **out, size_t *len)
{
    enum json_status s = check(v, JSON_STRING);
    if (s == JSON_OK) {
        *out = v->u.s;
        if (len)
            *len = v->n;
    }
    return s;
}

enum json_status json_as_array(const struct json_value *v)
{
    return check(v, JSON_ARRAY);
}

enum json_status json_as_object(const struct json_value *v)
{
    return check(v, JSON_OBJECT);
}
