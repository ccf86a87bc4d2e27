/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Fuzz esc_json. The output must be one JSON string (RFC 8259 section 7) and nothing else:
 * quoted, no raw control character, valid UTF-8, only the escapes JSON has, surrogates in
 * pairs. It must also be exact: decoded, it gives the input with every byte that is not
 * part of valid UTF-8 replaced by U+FFFD; and the characters that could fool a reader
 * (U+2028/9, bidi controls, C1) are escaped, not raw. */
#include "fuzz.h"

#include <stdbool.h>

#include "util/escape.h"

#define MAX_LEN 4096

static int hexv(int c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

static size_t put_utf8(unsigned cp, unsigned char *o)
{
    if (cp < 0x80) { o[0] = (unsigned char)cp; return 1; }
    if (cp < 0x800) { o[0] = (unsigned char)(0xc0 | cp >> 6); o[1] = (unsigned char)(0x80 | (cp & 0x3f)); return 2; }
    if (cp < 0x10000) {
        o[0] = (unsigned char)(0xe0 | cp >> 12); o[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3f));
        o[2] = (unsigned char)(0x80 | (cp & 0x3f)); return 3;
    }
    o[0] = (unsigned char)(0xf0 | cp >> 18); o[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3f));
    o[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3f)); o[3] = (unsigned char)(0x80 | (cp & 0x3f));
    return 4;
}

/* Strict UTF-8 decoding, independent of the code under test (Unicode table 3-7). */
static size_t u8dec(const unsigned char *s, size_t n, unsigned *cp)
{
    unsigned c = s[0];
    if (c < 0x80) { *cp = c; return 1; }
    size_t len;
    unsigned lo = 0x80, hi = 0xbf;
    if (c >= 0xc2 && c <= 0xdf) len = 2, c &= 0x1f;
    else if (c == 0xe0) len = 3, lo = 0xa0, c &= 0x0f;
    else if (c == 0xed) len = 3, hi = 0x9f, c &= 0x0f;
    else if (c >= 0xe1 && c <= 0xef) len = 3, c &= 0x0f;
    else if (c == 0xf0) len = 4, lo = 0x90, c &= 0x07;
    else if (c == 0xf4) len = 4, hi = 0x8f, c &= 0x07;
    else if (c >= 0xf1 && c <= 0xf3) len = 4, c &= 0x07;
    else return 0;
    if (n < len || s[1] < lo || s[1] > hi)
        return 0;
    c = c << 6 | (s[1] & 0x3f);
    for (size_t i = 2; i < len; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return 0;
        c = c << 6 | (s[i] & 0x3f);
    }
    *cp = c;
    return len;
}

static bool must_escape(unsigned cp)
{
    return cp < 0x20 || cp == 0x7f || (cp >= 0x80 && cp <= 0x9f) || cp == 0x2028 ||
           cp == 0x2029 || (cp >= 0x202a && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069) ||
           cp == 0x200e || cp == 0x200f || cp == 0x061c;
}

/* Parse the JSON string at j[0, n) strictly; its decoded UTF-8 goes to out. */
static size_t parse_json_string(const unsigned char *j, size_t n, unsigned char *out)
{
    FZ_CHECK(n >= 2 && j[0] == '"' && j[n - 1] == '"');
    size_t o = 0;
    for (size_t i = 1; i < n - 1;) {
        unsigned c = j[i];
        FZ_CHECK(c >= 0x20 && c != '"');
        if (c != '\\') {
            unsigned cp;
            size_t l = u8dec(j + i, n - 1 - i, &cp);
            FZ_CHECK(l > 0);
            FZ_CHECK(!must_escape(cp));
            memcpy(out + o, j + i, l);
            o += l, i += l;
            continue;
        }
        FZ_CHECK(i + 1 < n - 1);
        unsigned char e = j[i + 1];
        i += 2;
        switch (e) {
        case '"': case '\\': case '/': out[o++] = e; break;
        case 'b': out[o++] = '\b'; break;
        case 'f': out[o++] = '\f'; break;
        case 'n': out[o++] = '\n'; break;
        case 'r': out[o++] = '\r'; break;
        case 't': out[o++] = '\t'; break;
        case 'u': {
            unsigned u = 0;
            FZ_CHECK(i + 4 <= n - 1);
            for (int k = 0; k < 4; k++) {
                int h = hexv(j[i + (size_t)k]);
                FZ_CHECK(h >= 0);
                u = u << 4 | (unsigned)h;
            }
            i += 4;
            if (u >= 0xd800 && u <= 0xdbff) {     /* a high surrogate: its low one follows */
                FZ_CHECK(i + 6 <= n - 1 && j[i] == '\\' && j[i + 1] == 'u');
                unsigned lo = 0;
                for (int k = 0; k < 4; k++) {
                    int h = hexv(j[i + 2 + (size_t)k]);
                    FZ_CHECK(h >= 0);
                    lo = lo << 4 | (unsigned)h;
                }
                FZ_CHECK(lo >= 0xdc00 && lo <= 0xdfff);
                i += 6;
                u = 0x10000 + ((u - 0xd800) << 10) + (lo - 0xdc00);
            } else {
                FZ_CHECK(u < 0xdc00 || u > 0xdfff);   /* no lone low surrogate */
            }
            o += put_utf8(u, out + o);
            break;
        }
        default:
            FZ_CHECK(!"escape JSON does not have");
        }
    }
    return o;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > MAX_LEN)
        return 0;
    char *src = fz_copy(data, size);
    char *json = NULL;
    size_t jl = 0;
    FILE *f = open_memstream(&json, &jl);
    if (!f)
        abort();
    esc_json(f, src, size);
    FZ_CHECK(fclose(f) == 0);

    /* What it should mean: valid UTF-8 kept, each other byte one U+FFFD. */
    unsigned char *want = malloc(3 * size + 1), *got = malloc(3 * size + 1);
    if (!want || !got)
        abort();
    size_t wl = 0;
    for (size_t i = 0; i < size;) {
        unsigned cp;
        size_t l = u8dec(data + i, size - i, &cp);
        if (l == 0) {
            memcpy(want + wl, "\xef\xbf\xbd", 3);
            wl += 3, i++;
        } else {
            memcpy(want + wl, data + i, l);
            wl += l, i += l;
        }
    }
    FZ_CHECK(jl == strlen(json));                 /* no NUL inside */
    size_t gl = parse_json_string((const unsigned char *)json, jl, got);
    FZ_CHECK(gl == wl && memcmp(got, want, wl) == 0);

    free(got);
    free(want);
    free(json);
    free(src);
    return 0;
}
