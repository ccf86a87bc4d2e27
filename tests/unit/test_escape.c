/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Tests for util/escape.c: untrusted bytes (process names, command lines) made safe for the
 * terminal (esc_display) and for JSON (esc_json).
 *
 * The JSON output is checked three ways: exact strings for the cases the header names, a
 * small strict JSON-string parser in this file that also decodes the string and compares it
 * with what the input should mean (valid UTF-8 kept, every invalid byte one U+FFFD, by a
 * UTF-8 table written here independently of the code under test), and jq as an outside
 * opinion when it is installed.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/wait.h>
#include <unistd.h>

#include "util/escape.h"

/* ------------------------------------------------------------------------------------------ */
/* Helpers                                                                                     */
/* ------------------------------------------------------------------------------------------ */

/* esc_display into a roomy buffer; checks the returned length against the string. */
static const char *disp_n(const char *src, size_t len, bool utf8)
{
    static char out[1024];
    size_t n = esc_display(out, sizeof(out), src, len, utf8);
    assert_int_equal(n, strlen(out));
    return out;
}

static const char *disp(const char *src, bool utf8)
{
    return disp_n(src, strlen(src), utf8);
}

/* esc_json's whole output as a malloc'd string. */
static char *json_n(const char *src, size_t len, size_t *outlen)
{
    char *buf = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&buf, &n);
    assert_non_null(f);
    esc_json(f, src, len);
    assert_int_equal(fclose(f), 0);
    if (outlen)
        *outlen = n;
    return buf;
}

static void assert_json(const char *src, size_t len, const char *want)
{
    size_t n;
    char *got = json_n(src, len, &n);
    if (strlen(got) != n || strcasecmp(got, want) != 0)
        fail_msg("esc_json gave %s, expected %s", got, want);
    free(got);
}

/* Deterministic bytes for the property tests (xorshift64). */
static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint64_t rng(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

/* Random bytes biased toward what breaks escapers: controls, lead and continuation bytes,
 * pieces of bidi overrides, backslashes and quotes. */
static size_t random_bytes(unsigned char *buf, size_t max)
{
    static const unsigned char interesting[] = { 0x00, 0x07, 0x1b, '\\', '"', '[', 0x7f, 0x80,
                                                 0xbf, 0xc0, 0xc2, 0xc3, 0xa9, 0xe2, 0x80, 0xae,
                                                 0xed, 0xa0, 0xef, 0xbb, 0xf0, 0xf4, 0x8f, 0xff,
                                                 0x9f, 0x98, 'a', 'Z', ' ', '\n' };
    size_t len = (size_t)(rng() % (max + 1));
    for (size_t i = 0; i < len; i++) {
        uint64_t r = rng();
        buf[i] = (r & 1) ? interesting[(r >> 8) % sizeof(interesting)] : (unsigned char)(r >> 16);
    }
    return len;
}

/* Reference UTF-8: length of the well-formed sequence at s (RFC 3629, table 3-7 of the
 * Unicode standard), or 0. Written from the table, not from the code under test. */
static size_t ref_utf8_len(const unsigned char *s, size_t n)
{
    if (n == 0)
        return 0;
    unsigned char c = s[0];
#define IN(x, lo, hi) ((x) >= (lo) && (x) <= (hi))
    if (c <= 0x7f)
        return 1;
    if (IN(c, 0xc2, 0xdf))
        return n >= 2 && IN(s[1], 0x80, 0xbf) ? 2 : 0;
    if (IN(c, 0xe0, 0xef)) {
        unsigned char lo = c == 0xe0 ? 0xa0 : 0x80, hi = c == 0xed ? 0x9f : 0xbf;
        return n >= 3 && IN(s[1], lo, hi) && IN(s[2], 0x80, 0xbf) ? 3 : 0;
    }
    if (IN(c, 0xf0, 0xf4)) {
        unsigned char lo = c == 0xf0 ? 0x90 : 0x80, hi = c == 0xf4 ? 0x8f : 0xbf;
        return n >= 4 && IN(s[1], lo, hi) && IN(s[2], 0x80, 0xbf) && IN(s[3], 0x80, 0xbf) ? 4
                                                                                           : 0;
    }
    return 0;
#undef IN
}

static size_t put_utf8(unsigned char *o, unsigned cp)
{
    if (cp < 0x80) {
        o[0] = (unsigned char)cp;
        return 1;
    }
    if (cp < 0x800) {
        o[0] = (unsigned char)(0xc0 | cp >> 6);
        o[1] = (unsigned char)(0x80 | (cp & 0x3f));
        return 2;
    }
    if (cp < 0x10000) {
        o[0] = (unsigned char)(0xe0 | cp >> 12);
        o[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3f));
        o[2] = (unsigned char)(0x80 | (cp & 0x3f));
        return 3;
    }
    o[0] = (unsigned char)(0xf0 | cp >> 18);
    o[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3f));
    o[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3f));
    o[3] = (unsigned char)(0x80 | (cp & 0x3f));
    return 4;
}

/* What the JSON string must decode to: the input with every byte that does not start a
 * well-formed sequence replaced by U+FFFD. Returns the length in out (cap >= 3 * len). */
static size_t expected_text(const unsigned char *s, size_t len, unsigned char *out)
{
    size_t o = 0;
    for (size_t i = 0; i < len;) {
        size_t l = ref_utf8_len(s + i, len - i);
        if (l == 0) {
            o += put_utf8(out + o, 0xfffd);
            i++;
        } else {
            memcpy(out + o, s + i, l);
            o += l;
            i += l;
        }
    }
    return o;
}

static int hexval(unsigned char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

static bool read_u4(const unsigned char *p, const unsigned char *end, unsigned *v)
{
    if (end - p < 4)
        return false;
    *v = 0;
    for (int i = 0; i < 4; i++) {
        int h = hexval(p[i]);
        if (h < 0)
            return false;
        *v = *v << 4 | (unsigned)h;
    }
    return true;
}

/* Strict RFC 8259 string parser: the whole of [s, s+n) must be one JSON string, with raw
 * bytes forming well-formed UTF-8 and \u escapes forming scalar values (surrogates only
 * in pairs). Decodes into out (cap >= n). Returns the decoded length or -1 with *why set. */
static long json_string_decode(const char *js, size_t n, unsigned char *out, const char **why)
{
    const unsigned char *p = (const unsigned char *)js, *end = p + n;
    size_t o = 0;
    if (p == end || *p != '"') {
        *why = "no opening quote";
        return -1;
    }
    p++;
    for (;;) {
        if (p == end) {
            *why = "no closing quote";
            return -1;
        }
        unsigned char c = *p;
        if (c == '"') {
            p++;
            break;
        }
        if (c < 0x20) {
            *why = "raw control character";
            return -1;
        }
        if (c != '\\') {
            size_t l = ref_utf8_len(p, (size_t)(end - p));
            if (l == 0) {
                *why = "raw bytes that are not UTF-8";
                return -1;
            }
            memcpy(out + o, p, l);
            o += l;
            p += l;
            continue;
        }
        if (end - p < 2) {
            *why = "backslash at the end";
            return -1;
        }
        unsigned char e = p[1];
        p += 2;
        const char *simple = strchr("\"\\/bfnrt", e);
        if (e != 0 && simple) {
            static const char map[] = "\"\\/\b\f\n\r\t";
            out[o++] = (unsigned char)map[simple - "\"\\/bfnrt"];
            continue;
        }
        if (e != 'u') {
            *why = "unknown escape";
            return -1;
        }
        unsigned cp;
        if (!read_u4(p, end, &cp)) {
            *why = "bad \\u escape";
            return -1;
        }
        p += 4;
        if (cp >= 0xdc00 && cp <= 0xdfff) {
            *why = "lone low surrogate";
            return -1;
        }
        if (cp >= 0xd800 && cp <= 0xdbff) {
            unsigned lo;
            if (end - p < 6 || p[0] != '\\' || p[1] != 'u' || !read_u4(p + 2, end, &lo) ||
                lo < 0xdc00 || lo > 0xdfff) {
                *why = "high surrogate without its pair";
                return -1;
            }
            p += 6;
            cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
        }
        o += put_utf8(out + o, cp);
    }
    if (p != end) {
        *why = "bytes after the string";
        return -1;
    }
    return (long)o;
}

/* esc_json of src must be a valid JSON string that means src (invalid bytes as U+FFFD). */
static void assert_json_roundtrip(const unsigned char *src, size_t len)
{
    size_t n;
    char *js = json_n((const char *)src, len, &n);
    unsigned char *dec = malloc(n + 1), *want = malloc(3 * len + 1);
    assert_non_null(dec);
    assert_non_null(want);
    const char *why = "";
    long dl = json_string_decode(js, n, dec, &why);
    if (dl < 0) {
        char hex[3 * 256 + 1] = "";
        for (size_t i = 0; i < len && i < 256; i++)
            snprintf(hex + 3 * i, 4, "%02x ", src[i]);
        fail_msg("esc_json of [%s] is not a valid JSON string (%s): %s", hex, why, js);
    }
    size_t wl = expected_text(src, len, want);
    if ((size_t)dl != wl || memcmp(dec, want, wl) != 0)
        fail_msg("esc_json output %s decodes to something else than its input", js);
    free(dec);
    free(want);
    free(js);
}

/* ------------------------------------------------------------------------------------------ */
/* esc_display                                                                                 */
/* ------------------------------------------------------------------------------------------ */

static void test_display_escape_sequence_becomes_visible(void **state)
{
    (void)state;
    assert_string_equal(disp("\x1b[31m", true), "\\e[31m");
    assert_string_equal(disp("\x1b]0;owned\x07red\x1b[0m", true), "\\e]0;owned\\x07red\\e[0m");
    assert_string_equal(disp("\x1b[31m", false), "\\e[31m");
}

static void test_display_control_bytes_named_or_hex(void **state)
{
    (void)state;
    assert_string_equal(disp("\a", true), "\\x07");       /* BEL */
    assert_string_equal(disp("\x01", true), "\\x01");
    assert_string_equal(disp("\x1f", true), "\\x1f");
    assert_string_equal(disp("\x7f", true), "\\x7f");     /* DEL */
    assert_string_equal(disp("a\nb", true), "a\\nb");
    assert_string_equal(disp("a\tb", true), "a\\tb");
    assert_string_equal(disp("a\rb", true), "a\\rb");
    assert_string_equal(disp("\b", false), "\\x08");
}

static void test_display_nul_inside_srclen_is_escaped_not_the_end(void **state)
{
    (void)state;
    /* a command line: arguments separated by NULs */
    assert_string_equal(disp_n("ls\0-l\0", 6, true), "ls\\x00-l\\x00");
    assert_string_equal(disp_n("\0", 1, false), "\\x00");
}

static void test_display_invalid_utf8_bytes_as_hex(void **state)
{
    (void)state;
    for (int u = 0; u < 2; u++) {
        bool utf8 = u == 1;
        assert_string_equal(disp("\xff", utf8), "\\xff");                 /* never a lead */
        assert_string_equal(disp("\xc0\x80", utf8), "\\xc0\\x80");        /* overlong NUL */
        assert_string_equal(disp("\xe0\x80\xaf", utf8), "\\xe0\\x80\\xaf"); /* overlong '/' */
        assert_string_equal(disp("\xed\xa0\x80", utf8), "\\xed\\xa0\\x80"); /* surrogate D800 */
        assert_string_equal(disp("\xe2\x82", utf8), "\\xe2\\x82");        /* cut at the end */
        assert_string_equal(disp("\xe2\x82z", utf8), "\\xe2\\x82z");      /* cut mid-text */
        assert_string_equal(disp("\x80", utf8), "\\x80");                 /* lone continuation */
        assert_string_equal(disp("\xf4\x90\x80\x80", utf8), "\\xf4\\x90\\x80\\x80"); /* > 10FFFF */
        assert_string_equal(disp("\x9b" "31m", utf8), "\\x9b31m");        /* 8-bit CSI */
    }
}

static void test_display_valid_utf8_passes_only_in_utf8_mode(void **state)
{
    (void)state;
    assert_string_equal(disp("caf\xc3\xa9", true), "caf\xc3\xa9");
    assert_string_equal(disp("\xe6\x97\xa5\xe6\x9c\xac", true), "\xe6\x97\xa5\xe6\x9c\xac");
    assert_string_equal(disp("\xf0\x9f\x98\x80", true), "\xf0\x9f\x98\x80"); /* U+1F600 */
    assert_string_equal(disp("caf\xc3\xa9", false), "caf\\u{e9}");
    assert_string_equal(disp("\xe6\x97\xa5", false), "\\u{65e5}");
    assert_string_equal(disp("\xf0\x9f\x98\x80", false), "\\u{1f600}");
}

static void test_display_bidi_and_format_characters_escaped(void **state)
{
    (void)state;
    for (int u = 0; u < 2; u++) {
        bool utf8 = u == 1;
        /* "evil" + RLO + "gnp.exe": shows as "evilexe.png" when passed raw */
        assert_string_equal(disp("evil\xe2\x80\xaegnp.exe", utf8), "evil\\u{202e}gnp.exe");
        assert_string_equal(disp("\xe2\x80\xaa", utf8), "\\u{202a}");  /* LRE */
        assert_string_equal(disp("\xe2\x81\xa6", utf8), "\\u{2066}");  /* LRI */
        assert_string_equal(disp("\xe2\x81\xa9", utf8), "\\u{2069}");  /* PDI */
        assert_string_equal(disp("\xe2\x80\x8f", utf8), "\\u{200f}");  /* RLM */
        assert_string_equal(disp("\xd8\x9c", utf8), "\\u{61c}");       /* ALM */
        assert_string_equal(disp("\xe2\x80\x8b", utf8), "\\u{200b}");  /* zero width space */
        assert_string_equal(disp("\xe2\x81\xa0", utf8), "\\u{2060}");  /* word joiner */
        assert_string_equal(disp("\xe2\x80\xa8", utf8), "\\u{2028}");  /* line separator */
        assert_string_equal(disp("\xef\xbb\xbf", utf8), "\\u{feff}");  /* BOM */
        assert_string_equal(disp("\xc2\xad", utf8), "\\u{ad}");        /* soft hyphen */
        assert_string_equal(disp("\xc2\x85", utf8), "\\u{85}");        /* C1 NEL */
        assert_string_equal(disp("\xc2\x9b", utf8), "\\u{9b}");        /* C1 CSI */
    }
}

static void test_display_invisible_tag_and_separator_characters_escaped(void **state)
{
    (void)state;
    /* Also format characters (Unicode category Cf) that terminals draw as nothing: the
     * language tag and tag letters (U+E0001, U+E0020..E007F, used to hide text inside
     * visible text) and the Mongolian vowel separator U+180E. "not printable ... is written
     * as a visible escape" (util/escape.h). */
    assert_string_equal(disp("ok\xf3\xa0\x81\x81\xf3\xa0\x81\x82", true),
                        "ok\\u{e0041}\\u{e0042}");            /* tag A, tag B */
    assert_string_equal(disp("\xf3\xa0\x80\x81", true), "\\u{e0001}");  /* language tag */
    assert_string_equal(disp("\xe1\xa0\x8e", true), "\\u{180e}");
}

static void test_display_backslash_is_doubled(void **state)
{
    (void)state;
    assert_string_equal(disp("a\\b", true), "a\\\\b");
    /* a name that spells an escape must not read as one */
    assert_string_equal(disp("\\e[31m\\x41", false), "\\\\e[31m\\\\x41");
}

static void test_display_empty_input(void **state)
{
    (void)state;
    char out[4] = "xyz";
    assert_int_equal(esc_display(out, sizeof(out), "", 0, true), 0);
    assert_string_equal(out, "");
}

static void test_display_cap_never_splits_an_escape(void **state)
{
    (void)state;
    char out[32];
    /* "ab" then ESC as "\e": 4 bytes need cap 5 */
    assert_int_equal(esc_display(out, 5, "ab\x1b", 3, true), 4);
    assert_string_equal(out, "ab\\e");
    assert_int_equal(esc_display(out, 4, "ab\x1b", 3, true), 2);
    assert_string_equal(out, "ab");
    assert_int_equal(esc_display(out, 3, "ab\x1b", 3, true), 2);
    assert_string_equal(out, "ab");
    /* "\xff" is 4 bytes */
    assert_int_equal(esc_display(out, 4, "\xff", 1, true), 0);
    assert_string_equal(out, "");
    assert_int_equal(esc_display(out, 5, "\xff", 1, true), 4);
    /* a 2-byte character is copied whole or not at all */
    assert_int_equal(esc_display(out, 2, "\xc3\xa9", 2, true), 0);
    assert_string_equal(out, "");
    assert_int_equal(esc_display(out, 3, "\xc3\xa9", 2, true), 2);
    assert_string_equal(out, "\xc3\xa9");
    /* "\u{202e}" is 8 bytes */
    assert_int_equal(esc_display(out, 8, "\xe2\x80\xae", 3, true), 0);
    assert_int_equal(esc_display(out, 9, "\xe2\x80\xae", 3, true), 8);
    assert_string_equal(out, "\\u{202e}");
    /* once something does not fit, nothing after it is written: no silent gaps */
    assert_int_equal(esc_display(out, 3, "a\x1" "b", 3, true), 1);
    assert_string_equal(out, "a");
    /* cap 1: only the NUL */
    assert_int_equal(esc_display(out, 1, "abc", 3, true), 0);
    assert_string_equal(out, "");
}

static void test_display_cap_zero_writes_nothing(void **state)
{
    (void)state;
    char out[4] = "xyz";
    assert_int_equal(esc_display(out, 0, "abc", 3, true), 0);
    assert_string_equal(out, "xyz");
}

static void test_display_cap_gives_longest_whole_prefix_on_random_input(void **state)
{
    (void)state;
    /* For any cap, the output is the uncapped output cut at the last place where some
     * prefix of the input ends (a unit boundary) that still fits with the NUL. */
    unsigned char src[48];
    static char full[48 * 12], pre[48 * 12], capped[48 * 12 + 8];
    for (int iter = 0; iter < 400; iter++) {
        size_t len = random_bytes(src, sizeof(src));
        bool utf8 = iter & 1;
        size_t fl = esc_display(full, sizeof(full), (const char *)src, len, utf8);
        assert_int_equal(fl, strlen(full));
        bool boundary[sizeof(full) + 1] = { false };
        for (size_t k = 0; k <= len; k++) {
            size_t pl = esc_display(pre, sizeof(pre), (const char *)src, k, utf8);
            if (memcmp(pre, full, pl) == 0)
                boundary[pl] = true;
        }
        for (size_t cap = 1; cap <= fl + 2; cap++) {
            memset(capped, 'Z', sizeof(capped));
            size_t cl = esc_display(capped, cap, (const char *)src, len, utf8);
            size_t want = 0;
            for (size_t b = 0; b < cap && b <= fl; b++)
                if (boundary[b])
                    want = b;
            if (cl != want || capped[cl] != '\0' || memcmp(capped, full, cl) != 0)
                fail_msg("iteration %d cap %zu: %zu bytes, expected %zu", iter, cap, cl, want);
            assert_true(capped[cap] == 'Z'); /* nothing written past cap */
        }
    }
}

/* ------------------------------------------------------------------------------------------ */
/* esc_json                                                                                    */
/* ------------------------------------------------------------------------------------------ */

static void test_json_control_characters_are_u00xx_exactly(void **state)
{
    (void)state;
    for (unsigned c = 0; c < 0x20; c++) {
        char in[1] = { (char)c }, want[16];
        snprintf(want, sizeof(want), "\"\\u%04x\"", c);
        assert_json(in, 1, want);
    }
    assert_json("\x7f", 1, "\"\\u007f\"");
    assert_json("a\nb", 3, "\"a\\u000ab\"");
    assert_json("\x1b[31m", 5, "\"\\u001b[31m\"");
}

static void test_json_quote_and_backslash_escaped(void **state)
{
    (void)state;
    assert_json("a\"b\\c", 5, "\"a\\\"b\\\\c\"");
    assert_json("", 0, "\"\"");
    assert_json("/", 1, "\"/\"");
}

static void test_json_invalid_utf8_becomes_replacement_character(void **state)
{
    (void)state;
    assert_json("\xff", 1, "\"\\ufffd\"");
    assert_json("\xc0\x80", 2, "\"\\ufffd\\ufffd\"");
    assert_json("\xed\xa0\x80", 3, "\"\\ufffd\\ufffd\\ufffd\"");
    assert_json("\xe2\x82", 2, "\"\\ufffd\\ufffd\"");
    assert_json("x\x80y", 3, "\"x\\ufffdy\"");
}

static void test_json_valid_utf8_passes_and_separators_escaped(void **state)
{
    (void)state;
    assert_json("caf\xc3\xa9", 5, "\"caf\xc3\xa9\"");
    assert_json("\xf0\x9f\x98\x80", 4, "\"\xf0\x9f\x98\x80\"");
    assert_json("\xe2\x80\xa8", 3, "\"\\u2028\"");
    assert_json("\xe2\x80\xa9", 3, "\"\\u2029\"");
    assert_json("\xe2\x80\xae", 3, "\"\\u202e\"");
    assert_json("\xe2\x81\xa6", 3, "\"\\u2066\"");
    assert_json("\xc2\x85", 2, "\"\\u0085\"");
}

static void test_json_supplementary_characters_keep_their_value(void **state)
{
    (void)state;
    /* Characters above U+FFFF, raw or as a surrogate pair, must decode to themselves: a
     * 16-bit \uXXXX of U+E0041 would read as "A". */
    static const char *const cases[] = {
        "\xf0\x9f\x98\x80",          /* U+1F600 */
        "\xf3\xa0\x81\x81",          /* U+E0041 TAG LATIN CAPITAL LETTER A */
        "\xf3\xa0\x80\x81",          /* U+E0001 LANGUAGE TAG */
        "\xf4\x8f\xbf\xbf",          /* U+10FFFF */
        "\xe1\xa0\x8e",              /* U+180E */
        "\xef\xbf\xbd",              /* U+FFFD itself */
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        assert_json_roundtrip((const unsigned char *)cases[i], strlen(cases[i]));
}

static void test_json_every_single_byte_is_valid_json(void **state)
{
    (void)state;
    for (unsigned b = 0; b < 256; b++) {
        unsigned char in[1] = { (unsigned char)b };
        assert_json_roundtrip(in, 1);
    }
}

static void test_json_random_byte_strings_are_valid_json(void **state)
{
    (void)state;
    unsigned char buf[96];
    for (int i = 0; i < 5000; i++) {
        size_t len = random_bytes(buf, sizeof(buf));
        assert_json_roundtrip(buf, len);
    }
    /* every two-byte string whose first byte is a lead or continuation byte */
    for (unsigned a = 0x80; a < 0x100; a++)
        for (unsigned b = 0; b < 0x100; b += 3) {
            unsigned char in[2] = { (unsigned char)a, (unsigned char)b };
            assert_json_roundtrip(in, 2);
        }
}

static void test_json_accepted_by_jq(void **state)
{
    (void)state;
    if (system("command -v jq >/dev/null 2>&1") != 0)
        skip();
    /* 256 single bytes and 500 random strings as a stream of JSON values; jq must read all
     * of them as strings. jq 1.6 is lenient (it takes invalid UTF-8 and a raw 0x1f), so
     * this is a second opinion on the syntax; the strict check is json_string_decode. */
    enum { NRAND = 500, TOTAL = 256 + NRAND };
    char cmd[160];
    snprintf(cmd, sizeof(cmd),
             "jq -e -n '[inputs] | length == %d and all(.[]; type == \"string\")' >/dev/null",
             TOTAL);
    FILE *p = popen(cmd, "w");
    assert_non_null(p);
    for (unsigned b = 0; b < 256; b++) {
        char in[1] = { (char)b };
        esc_json(p, in, 1);
        fputc('\n', p);
    }
    unsigned char buf[96];
    for (int i = 0; i < NRAND; i++) {
        size_t len = random_bytes(buf, sizeof(buf));
        esc_json(p, (const char *)buf, len);
        fputc('\n', p);
    }
    int st = pclose(p);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 0);
}

/* ------------------------------------------------------------------------------------------ */
/* utf8_decode                                                                                 */
/* ------------------------------------------------------------------------------------------ */

static void test_utf8_decode_boundaries(void **state)
{
    (void)state;
    unsigned cp = 0;
    assert_int_equal(utf8_decode((const unsigned char *)"A", 1, &cp), 1);
    assert_int_equal(cp, 0x41);
    assert_int_equal(utf8_decode((const unsigned char *)"\xc2\x80", 2, &cp), 2);
    assert_int_equal(cp, 0x80);
    assert_int_equal(utf8_decode((const unsigned char *)"\xdf\xbf", 2, &cp), 2);
    assert_int_equal(cp, 0x7ff);
    assert_int_equal(utf8_decode((const unsigned char *)"\xe0\xa0\x80", 3, &cp), 3);
    assert_int_equal(cp, 0x800);
    assert_int_equal(utf8_decode((const unsigned char *)"\xed\x9f\xbf", 3, &cp), 3);
    assert_int_equal(cp, 0xd7ff);
    assert_int_equal(utf8_decode((const unsigned char *)"\xee\x80\x80", 3, &cp), 3);
    assert_int_equal(cp, 0xe000);
    assert_int_equal(utf8_decode((const unsigned char *)"\xf0\x90\x80\x80", 4, &cp), 4);
    assert_int_equal(cp, 0x10000);
    assert_int_equal(utf8_decode((const unsigned char *)"\xf4\x8f\xbf\xbf", 4, &cp), 4);
    assert_int_equal(cp, 0x10ffff);
    /* rejected */
    assert_int_equal(utf8_decode((const unsigned char *)"\xc1\xbf", 2, &cp), 0);      /* overlong */
    assert_int_equal(utf8_decode((const unsigned char *)"\xe0\x9f\xbf", 3, &cp), 0);  /* overlong */
    assert_int_equal(utf8_decode((const unsigned char *)"\xf0\x8f\xbf\xbf", 4, &cp), 0);
    assert_int_equal(utf8_decode((const unsigned char *)"\xed\xbf\xbf", 3, &cp), 0);  /* DFFF */
    assert_int_equal(utf8_decode((const unsigned char *)"\xf4\x90\x80\x80", 4, &cp), 0);
    assert_int_equal(utf8_decode((const unsigned char *)"\xf8\x88\x80\x80\x80", 5, &cp), 0);
    assert_int_equal(utf8_decode((const unsigned char *)"\xc3\xa9", 1, &cp), 0);      /* n short */
    assert_int_equal(utf8_decode((const unsigned char *)"\xc3" "A", 2, &cp), 0);
    assert_int_equal(utf8_decode((const unsigned char *)"", 0, &cp), 0);
}

static void test_utf8_decode_agrees_with_reference_on_random_bytes(void **state)
{
    (void)state;
    unsigned char buf[8];
    for (int i = 0; i < 200000; i++) {
        uint64_t r = rng();
        memcpy(buf, &r, sizeof(buf));
        size_t n = 1 + (size_t)(rng() % 4);
        unsigned cp;
        size_t got = utf8_decode(buf, n, &cp);
        size_t want = ref_utf8_len(buf, n);
        if (got != want)
            fail_msg("%02x %02x %02x %02x (n %zu): length %zu, expected %zu", buf[0], buf[1],
                     buf[2], buf[3], n, got, want);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_display_escape_sequence_becomes_visible),
        cmocka_unit_test(test_display_control_bytes_named_or_hex),
        cmocka_unit_test(test_display_nul_inside_srclen_is_escaped_not_the_end),
        cmocka_unit_test(test_display_invalid_utf8_bytes_as_hex),
        cmocka_unit_test(test_display_valid_utf8_passes_only_in_utf8_mode),
        cmocka_unit_test(test_display_bidi_and_format_characters_escaped),
        cmocka_unit_test(test_display_invisible_tag_and_separator_characters_escaped),
        cmocka_unit_test(test_display_backslash_is_doubled),
        cmocka_unit_test(test_display_empty_input),
        cmocka_unit_test(test_display_cap_never_splits_an_escape),
        cmocka_unit_test(test_display_cap_zero_writes_nothing),
        cmocka_unit_test(test_display_cap_gives_longest_whole_prefix_on_random_input),

        cmocka_unit_test(test_json_control_characters_are_u00xx_exactly),
        cmocka_unit_test(test_json_quote_and_backslash_escaped),
        cmocka_unit_test(test_json_invalid_utf8_becomes_replacement_character),
        cmocka_unit_test(test_json_valid_utf8_passes_and_separators_escaped),
        cmocka_unit_test(test_json_supplementary_characters_keep_their_value),
        cmocka_unit_test(test_json_every_single_byte_is_valid_json),
        cmocka_unit_test(test_json_random_byte_strings_are_valid_json),
        cmocka_unit_test(test_json_accepted_by_jq),

        cmocka_unit_test(test_utf8_decode_boundaries),
        cmocka_unit_test(test_utf8_decode_agrees_with_reference_on_random_bytes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
