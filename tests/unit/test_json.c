/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Tests for json.c, the strict reader behind --replay.
 *
 * Every input is copied into a heap buffer of exactly its length (no NUL after it), so a
 * read past the end shows under valgrind or ASan, and some tests put a byte right after
 * the given length that would change the answer if the reader looked at it.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <locale.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sample/json.h"

/* ---- helpers ----------------------------------------------------------------------- */

static char *exact_copy(const char *text, size_t len)
{
    char *b = malloc(len ? len : 1);
    assert_non_null(b);
    memcpy(b, text, len);
    return b;
}

/* Parse text[0, len) from a buffer of exactly len bytes; *doc set on success. */
static int parse_n(const char *text, size_t len, const struct json_opts *lim,
                   struct json_doc **doc, struct json_error *err)
{
    char *b = exact_copy(text, len);
    int rc = json_parse(doc, b, len, lim, err);
    free(b);
    if (rc == 0)
        assert_non_null(*doc);
    else
        assert_null(*doc);
    return rc;
}

static struct json_doc *ok(const char *text)
{
    struct json_doc *doc;
    struct json_error err;
    int rc = parse_n(text, strlen(text), NULL, &doc, &err);
    if (rc != 0)
        fail_msg("%s: rejected at byte %zu: %s", text, err.offset, err.msg);
    return doc;
}

/* Rejected with rc at byte offset, with msg containing want. */
static void bad_n(const char *text, size_t len, int want_rc, size_t offset, const char *want)
{
    struct json_doc *doc;
    struct json_error err;
    int rc = parse_n(text, len, NULL, &doc, &err);
    if (rc != want_rc)
        fail_msg("%.*s: rc %d, expected %d (%s)", (int)len, text, rc, want_rc, err.msg);
    if (err.offset != offset || !strstr(err.msg, want))
        fail_msg("%.*s: error at %zu \"%s\", expected at %zu \"%s\"", (int)len, text,
                 err.offset, err.msg, offset, want);
    assert_null(strchr(err.msg, '\n'));
}

static void bad(const char *text, size_t offset, const char *want)
{
    bad_n(text, strlen(text), -EINVAL, offset, want);
}

static double num_of(const char *text)
{
    struct json_doc *doc = ok(text);
    double d = (double)NAN;
    assert_int_equal(json_as_double(json_root(doc), &d), JSON_OK);
    json_free(doc);
    return d;
}

/* The decoded string of a one-string document, compared with want[0, wantlen). */
static void assert_string(const char *text, const char *want, size_t wantlen)
{
    struct json_doc *doc = ok(text);
    const char *s;
    size_t n;
    assert_int_equal(json_as_string(json_root(doc), &s, &n), JSON_OK);
    if (n != wantlen || memcmp(s, want, n) != 0)
        fail_msg("%s decoded to %zu bytes \"%.*s\", expected %zu", text, n, (int)n, s, wantlen);
    assert_int_equal(s[n], '\0');
    json_free(doc);
}

/* ---- values ------------------------------------------------------------------------ */

static void test_literals(void **state)
{
    (void)state;
    struct json_doc *d = ok(" \t\r\n true \n");
    bool b = false;
    assert_int_equal(json_type(json_root(d)), JSON_BOOL);
    assert_int_equal(json_as_bool(json_root(d), &b), JSON_OK);
    assert_true(b);
    json_free(d);
    d = ok("false");
    assert_int_equal(json_as_bool(json_root(d), &b), JSON_OK);
    assert_false(b);
    json_free(d);
    d = ok("null");
    assert_int_equal(json_type(json_root(d)), JSON_NULL);
    assert_int_equal(json_as_bool(json_root(d), &b), JSON_IS_NULL);
    json_free(d);
    bad("tru", 0, "expected a value");
    bad("nul", 0, "expected a value");
    bad("True", 0, "unexpected 'T'");
    bad("truex", 4, "trailing garbage");
}

static void test_numbers(void **state)
{
    (void)state;
    assert_true(num_of("0") == 0.0);
    assert_true(num_of("1.5") == 1.5);
    assert_true(num_of("-1.5e3") == -1500.0);
    assert_true(num_of("1E+2") == 100.0);
    assert_true(num_of("25e-2") == 0.25);
    assert_true(num_of("0.1") == 0.1);
    assert_true(num_of("1796006088.225") == 1796006088.225);
    assert_true(num_of("1e-400") == 0.0);            /* underflow is a tiny number, fine */
    /* -0 keeps its sign as a double, also as an integer literal */
    double z = num_of("-0");
    assert_true(z == 0.0 && signbit(z));
    z = num_of("-0.000");
    assert_true(z == 0.0 && signbit(z));
    z = num_of("0.000");
    assert_true(z == 0.0 && !signbit(z));

    /* integers: exact within int64, and only literals without fraction or exponent */
    struct json_doc *d = ok("[9223372036854775807,-9223372036854775808,9223372036854775808,"
                            "5.0,1e3,-0,42]");
    const struct json_value *a = json_root(d);
    int64_t i = 0;
    assert_int_equal(json_len(a), 7);
    assert_int_equal(json_as_int(json_at(a, 0), INT64_MIN, INT64_MAX, &i), JSON_OK);
    assert_true(i == INT64_MAX);
    assert_int_equal(json_as_int(json_at(a, 1), INT64_MIN, INT64_MAX, &i), JSON_OK);
    assert_true(i == INT64_MIN);
    assert_int_equal(json_as_int(json_at(a, 2), INT64_MIN, INT64_MAX, &i), JSON_OUT_OF_RANGE);
    double dd = 0;
    assert_int_equal(json_as_double(json_at(a, 2), &dd), JSON_OK);
    assert_true(dd == 9223372036854775808.0);
    assert_int_equal(json_as_int(json_at(a, 3), INT64_MIN, INT64_MAX, &i), JSON_OUT_OF_RANGE);
    assert_int_equal(json_as_int(json_at(a, 4), INT64_MIN, INT64_MAX, &i), JSON_OUT_OF_RANGE);
    assert_int_equal(json_as_int(json_at(a, 5), INT64_MIN, INT64_MAX, &i), JSON_OK);
    assert_true(i == 0);
    assert_int_equal(json_as_int(json_at(a, 6), 0, 41, &i), JSON_OUT_OF_RANGE);
    assert_int_equal(json_as_int(json_at(a, 6), 42, 42, &i), JSON_OK);
    assert_int_equal(i, 42);
    json_free(d);

    bad("01", 1, "leading zero");
    bad("-01", 2, "leading zero");
    bad("1.", 2, "digit expected after '.'");
    bad("1.e5", 2, "digit expected after '.'");
    bad("1e", 2, "digit expected in an exponent");
    bad("1e+", 3, "digit expected in an exponent");
    bad(".5", 0, "unexpected '.'");
    bad("+1", 0, "unexpected '+'");
    bad("-", 0, "unexpected '-'");
    bad("- 1", 0, "unexpected '-'");
    bad("NaN", 0, "unexpected 'N'");
    bad("Infinity", 0, "unexpected 'I'");
    bad("-Infinity", 0, "unexpected '-'");
    bad("0x10", 1, "trailing garbage");
    bad("1e400", 0, "out of range");
    bad("-1e400", 0, "out of range");
    char longnum[600];
    memset(longnum, '1', sizeof(longnum) - 1);
    longnum[sizeof(longnum) - 1] = '\0';
    bad(longnum, 0, "too long");
}

/* strtod follows LC_NUMERIC; the reader must not (main calls setlocale(LC_ALL, "")). */
static void test_numbers_locale(void **state)
{
    (void)state;
    static const char *const comma[] = { "de_DE.UTF-8", "fr_FR.UTF-8", "de_DE.utf8", "ru_RU.UTF-8" };
    const char *got = NULL;
    for (size_t i = 0; i < sizeof(comma) / sizeof(comma[0]) && !got; i++)
        got = setlocale(LC_NUMERIC, comma[i]);
    if (!got) {
        setlocale(LC_NUMERIC, "C");
        skip();                      /* no locale with a decimal comma installed */
    }
    double d = num_of("2.5");
    setlocale(LC_NUMERIC, "C");
    assert_true(d == 2.5);
}

static void test_strings(void **state)
{
    (void)state;
    assert_string("\"\"", "", 0);
    assert_string("\"plain\"", "plain", 5);
    assert_string("\"\\\"\\\\\\/\\b\\f\\n\\r\\t\"", "\"\\/\b\f\n\r\t", 8);
    assert_string("\"\\u0041\\u00e9\\u20AC\"", "A\xc3\xa9\xe2\x82\xac", 6);
    assert_string("\"a\\u0000b\"", "a\0b", 3);                /* NUL kept, length says */
    assert_string("\"\\ud83d\\ude00\"", "\xf0\x9f\x98\x80", 4);  /* U+1F600 */
    assert_string("\"\\uDBFF\\uDFFF\"", "\xf4\x8f\xbf\xbf", 4);  /* U+10FFFF */
    assert_string("\"\xc3\xa9\xe2\x80\xae\xf0\x9f\x98\x80\"", "\xc3\xa9\xe2\x80\xae\xf0\x9f\x98\x80", 9);
    assert_string("\"\\ufffd\"", "\xef\xbf\xbd", 3);

    bad("\"abc", 4, "unterminated string");
    bad("\"abc\\", 4, "unterminated string");
    bad("\"\\x\"", 1, "invalid escape \\x");
    bad("\"\\'\"", 1, "invalid escape \\'");
    bad("\"\\u12\"", 1, "four hex digits");
    bad("\"\\u12g4\"", 1, "four hex digits");
    bad("\"\\u123", 1, "four hex digits");
    bad("\"\\udc00\"", 1, "lone low surrogate");
    bad("\"x\\ud800\"", 2, "without its low half");
    bad("\"\\ud800\\u0041\"", 1, "without its low half");
    bad("\"\\ud800\\ud800\"", 1, "without its low half");
    bad("\"\\ud800\\n\"", 1, "without its low half");
    bad("\"a\nb\"", 2, "control character 0x0a");
    bad("\"a\tb\"", 2, "control character 0x09");
    bad("\"\xff\"", 1, "invalid UTF-8");
    bad("\"\xc0\x80\"", 1, "invalid UTF-8");                   /* overlong NUL */
    bad("\"\xed\xa0\x80\"", 1, "invalid UTF-8");               /* raw surrogate */
    bad("\"\xe2\x82\"", 1, "invalid UTF-8");                   /* cut */
    bad("'single'", 0, "unexpected");

    /* esc_json's mark for a byte that was not UTF-8, decoded back to such a byte on request */
    struct json_opts mark = { .ufffd_escape_as_byte = true };
    struct json_doc *d;
    struct json_error err;
    const char *t = "\"a\\ufffd\\uFFFD\xef\xbf\xbd\"";
    assert_int_equal(parse_n(t, strlen(t), &mark, &d, &err), 0);
    const char *s;
    size_t n;
    assert_int_equal(json_as_string(json_root(d), &s, &n), JSON_OK);
    assert_int_equal(n, 6);
    assert_memory_equal(s, "a\xff\xff\xef\xbf\xbd", 6);   /* a raw U+FFFD stays itself */
    json_free(d);
    assert_string(t, "a\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd", 10);   /* by default: U+FFFD */
    bad("\xef\xbb\xbf" "1", 0, "unexpected byte 0xef");         /* BOM */
}

/* ---- structure --------------------------------------------------------------------- */

static void test_containers(void **state)
{
    (void)state;
    struct json_doc *d = ok("{\"b\":[1,\"two\",null,{},[]],\"a\":{\"x\":true},\"\":0,"
                            "\"\\u00e9\":1}");
    const struct json_value *r = json_root(d);
    assert_int_equal(json_type(r), JSON_OBJECT);
    assert_int_equal(json_len(r), 4);
    /* document order by index, any order by key */
    size_t kl;
    assert_string_equal(json_key(json_at(r, 0), &kl), "b");
    assert_int_equal(kl, 1);
    assert_string_equal(json_key(json_at(r, 1), NULL), "a");
    assert_string_equal(json_key(json_at(r, 2), &kl), "");
    assert_int_equal(kl, 0);
    assert_null(json_at(r, 4));
    assert_non_null(json_get(r, "\xc3\xa9"));
    assert_null(json_get(r, "c"));
    assert_null(json_get(json_get(r, "c"), "x"));         /* chains need one check */
    const struct json_value *b = json_get(r, "b");
    assert_int_equal(json_as_array(b), JSON_OK);
    assert_int_equal(json_len(b), 5);
    assert_null(json_key(json_at(b, 0), NULL));                 /* array elements have none */
    const char *s;
    assert_int_equal(json_as_string(json_at(b, 1), &s, NULL), JSON_OK);
    assert_string_equal(s, "two");
    assert_int_equal(json_as_object(json_at(b, 3)), JSON_OK);
    assert_int_equal(json_len(json_at(b, 3)), 0);
    assert_int_equal(json_len(json_at(b, 4)), 0);
    bool t = false;
    assert_int_equal(json_as_bool(json_get(json_get(r, "a"), "x"), &t), JSON_OK);
    assert_true(t);
    json_free(d);

    bad("[1,]", 3, "expected a value");
    bad("[1 2]", 3, "expected ',' or ']'");
    bad("[", 1, "unexpected end of input");
    bad("[1", 2, "unexpected end of input, expected ',' or ']'");
    bad("{\"a\":1,}", 7, "expected a string key");
    bad("{\"a\" 1}", 5, "expected ':'");
    bad("{a:1}", 1, "expected a string key");
    bad("{\"a\":}", 5, "expected a value");
    bad("{\"a\":1", 6, "expected ',' or '}'");
    bad("{\"a\":1,\"b\":2,\"a\":3}", 19, "duplicate key \"a\"");
    /* a key in a message is shown escaped: it is bound for a terminal */
    bad("{\"\\u001b[2J\":1,\"\\u001b[2J\":2}", 29, "duplicate key \"\\e[2J\"");
    bad("[1]]", 3, "trailing garbage");
    bad("{} x", 3, "trailing garbage");
    bad("1 2", 2, "trailing garbage");
    bad("", 0, "unexpected end of input");
    bad("  \n", 3, "unexpected end of input");
    bad("/* c */ 1", 0, "unexpected '/'");
}

/* The typed getters say which of missing / null / wrong type it is. */
static void test_getters(void **state)
{
    (void)state;
    struct json_doc *d = ok("{\"n\":null,\"s\":\"x\",\"i\":7,\"f\":2.5,\"b\":false,\"a\":[],\"o\":{}}");
    const struct json_value *r = json_root(d);
    int64_t i;
    double f;
    bool b;
    const char *s;
    assert_int_equal(json_as_int(json_get(r, "zz"), 0, 10, &i), JSON_MISSING);
    assert_int_equal(json_as_int(json_get(r, "n"), 0, 10, &i), JSON_IS_NULL);
    assert_int_equal(json_as_int(json_get(r, "s"), 0, 10, &i), JSON_WRONG_TYPE);
    assert_int_equal(json_as_int(json_get(r, "f"), 0, 10, &i), JSON_OUT_OF_RANGE);
    assert_int_equal(json_as_int(json_get(r, "i"), 0, 10, &i), JSON_OK);
    assert_int_equal(i, 7);
    assert_int_equal(json_as_double(json_get(r, "i"), &f), JSON_OK);
    assert_true(f == 7.0);
    assert_int_equal(json_as_double(json_get(r, "b"), &f), JSON_WRONG_TYPE);
    assert_int_equal(json_as_bool(json_get(r, "i"), &b), JSON_WRONG_TYPE);
    assert_int_equal(json_as_string(json_get(r, "a"), &s, NULL), JSON_WRONG_TYPE);
    assert_int_equal(json_as_string(json_get(r, "n"), &s, NULL), JSON_IS_NULL);
    assert_int_equal(json_as_array(json_get(r, "o")), JSON_WRONG_TYPE);
    assert_int_equal(json_as_object(json_get(r, "o")), JSON_OK);
    assert_int_equal(json_as_object(NULL), JSON_MISSING);
    assert_null(json_get(json_get(r, "a"), "x"));           /* json_get on an array */
    assert_int_equal(json_len(json_get(r, "s")), 0);
    assert_null(json_at(json_get(r, "s"), 0));
    assert_string_equal(json_status_text(JSON_IS_NULL), "null");
    assert_string_equal(json_type_name(JSON_OBJECT), "object");
    json_free(d);
    json_free(NULL);
    assert_null(json_root(NULL));
}

/* ---- limits and bounds ------------------------------------------------------------- */

static char *nested(size_t depth, size_t *len)
{
    char *s = malloc(2 * depth + 1);
    assert_non_null(s);
    for (size_t i = 0; i < 2 * depth; i++)
        s[i] = i < depth ? '[' : ']';
    s[2 * depth] = '\0';
    *len = 2 * depth;
    return s;
}

static void test_depth(void **state)
{
    (void)state;
    size_t len;
    char *s = nested(JSON_DEFAULT_MAX_DEPTH, &len);
    struct json_doc *d = ok(s);
    json_free(d);
    free(s);
    s = nested(JSON_DEFAULT_MAX_DEPTH + 1, &len);
    bad_n(s, len, -E2BIG, JSON_DEFAULT_MAX_DEPTH, "nesting deeper than 32");
    free(s);
    /* a hostile depth fails the same way without recursing through it */
    s = nested(1000000, &len);
    bad_n(s, len, -E2BIG, JSON_DEFAULT_MAX_DEPTH, "nesting deeper than 32");
    free(s);
    /* objects count too; a caller's own limit */
    struct json_opts lim = { .max_depth = 2 };
    const char *t = "{\"a\":{\"b\":{}}}";
    struct json_error err;
    assert_int_equal(parse_n(t, strlen(t), &lim, &d, &err), -E2BIG);
    assert_int_equal(err.offset, 10);
    lim.max_depth = 3;
    assert_int_equal(parse_n(t, strlen(t), &lim, &d, &err), 0);
    json_free(d);
}

static void test_size_limits(void **state)
{
    (void)state;
    struct json_opts lim = { .max_len = 8 };
    struct json_doc *d;
    struct json_error err;
    assert_int_equal(parse_n("[1,2,3]", 7, &lim, &d, &err), 0);
    json_free(d);
    assert_int_equal(parse_n("[1,2,3,4]", 9, &lim, &d, &err), -E2BIG);
    assert_non_null(strstr(err.msg, "9 bytes is over the limit of 8"));

    /* values: a big array is fine by default, refused over the caller's limit */
    size_t n = 200000;
    char *s = malloc(2 * n + 2);
    assert_non_null(s);
    s[0] = '[';
    for (size_t i = 0; i < n; i++) {
        s[1 + 2 * i] = '0';
        s[2 + 2 * i] = i + 1 < n ? ',' : ']';
    }
    assert_int_equal(parse_n(s, 2 * n + 1, NULL, &d, &err), 0);
    assert_int_equal(json_len(json_root(d)), n);
    json_free(d);
    struct json_opts few = { .max_values = 1000 };
    assert_int_equal(parse_n(s, 2 * n + 1, &few, &d, &err), -E2BIG);
    assert_non_null(strstr(err.msg, "more than 1000 values"));
    assert_int_equal(err.offset, 1 + 2 * 999);
    free(s);
}

/* The reader stops at len: what lies after it must not matter. */
static void test_exact_length(void **state)
{
    (void)state;
    struct json_doc *d;
    struct json_error err;
    const char *buf = "1234";
    assert_int_equal(json_parse(&d, buf, 3, NULL, &err), 0);   /* not 1234 */
    int64_t i;
    assert_int_equal(json_as_int(json_root(d), 0, 10000, &i), JSON_OK);
    assert_int_equal(i, 123);
    json_free(d);
    assert_int_equal(json_parse(&d, "true", 3, NULL, &err), -EINVAL);     /* "tru" */
    assert_int_equal(json_parse(&d, "\"ab\"", 3, NULL, &err), -EINVAL);   /* "ab, no quote */
    assert_non_null(strstr(err.msg, "unterminated"));
    assert_int_equal(json_parse(&d, "[1]", 2, NULL, &err), -EINVAL);
    assert_int_equal(json_parse(&d, "\"\\u0041\"", 6, NULL, &err), -EINVAL);
    assert_int_equal(json_parse(&d, "\"\\ud83d\\ude00\"", 12, NULL, &err), -EINVAL);
    assert_int_equal(json_parse(&d, "\"\xc3\xa9\"", 2, NULL, &err), -EINVAL);
    assert_int_equal(json_parse(&d, "1.5e3", 4, NULL, &err), -EINVAL);    /* "1.5e" */
    assert_int_equal(json_parse(&d, "", 0, NULL, &err), -EINVAL);
    /* exactly-sized heap copies of every prefix of a rich document: never a crash, and
     * only the whole of it parses */
    const char *doc = "{\"k\":[1.5e-3,-0,\"\\ud83d\\ude00\\n\xc3\xa9\",true,false,null,{\"x\":{}}]}";
    size_t len = strlen(doc);
    for (size_t l = 0; l < len; l++) {
        int rc = parse_n(doc, l, NULL, &d, &err);
        assert_int_equal(rc, -EINVAL);
        assert_true(err.offset <= l);
    }
    assert_int_equal(parse_n(doc, len, NULL, &d, &err), 0);
    json_free(d);
}

/* Random damage to a valid document: never a crash, an error offset inside the input. */
static void test_mutations(void **state)
{
    (void)state;
    const char *doc = "{\"version\":1,\"a\":[1.25,null,\"x\\u00e9\\ud83d\\ude00\"],\"b\":{\"c\":-0.5e2}}";
    size_t len = strlen(doc);
    uint64_t x = 0x9e3779b97f4a7c15ull;
    static const char pool[] = "{}[]\",:\\u0123456789eE.-+ntfalsrx\xff\xc3\xed\x80\n";
    for (int round = 0; round < 20000; round++) {
        char *b = exact_copy(doc, len);
        for (int k = 0; k < 3; k++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            b[x % len] = pool[(x >> 32) % (sizeof(pool) - 1)];
        }
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        size_t l = x % (len + 1);
        struct json_doc *d;
        struct json_error err;
        int rc = json_parse(&d, b, l, NULL, &err);
        if (rc == 0)
            json_free(d);
        else
            assert_true(err.offset <= l);
        free(b);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_literals),
        cmocka_unit_test(test_numbers),
        cmocka_unit_test(test_numbers_locale),
        cmocka_unit_test(test_strings),
        cmocka_unit_test(test_containers),
        cmocka_unit_test(test_getters),
        cmocka_unit_test(test_depth),
        cmocka_unit_test(test_size_limits),
        cmocka_unit_test(test_exact_length),
        cmocka_unit_test(test_mutations),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
