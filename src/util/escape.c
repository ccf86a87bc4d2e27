/* SPDX-License-Identifier: GPL-2.0-or-later */
/* util/escape.c: escaping of untrusted text for the terminal and for JSON. */
#include "util/escape.h"

#include <string.h>

size_t utf8_decode(const unsigned char *s, size_t n, unsigned *cp)
{
    if (n == 0)
        return 0;
    unsigned c = s[0];
    size_t len;
    unsigned min;
    if (c < 0x80) {
        *cp = c;
        return 1;
    } else if ((c & 0xe0) == 0xc0) {
        len = 2, min = 0x80, c &= 0x1f;
    } else if ((c & 0xf0) == 0xe0) {
        len = 3, min = 0x800, c &= 0x0f;
    } else if ((c & 0xf8) == 0xf0) {
        len = 4, min = 0x10000, c &= 0x07;
    } else {
        return 0;
    }
    if (n < len)
        return 0;
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return 0;
        c = (c << 6) | (s[i] & 0x3f);
    }
    if (c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
        return 0;
    *cp = c;
    return len;
}

/* Characters that are valid but invisible or that change how the text around them is
 * shown: C1 controls, line/paragraph separators, and Unicode's format characters
 * (category Cf: bidi embeddings, overrides and isolates, zero-width characters, the BOM,
 * tag characters that can hide text inside text). */
static bool is_format_char(unsigned cp)
{
    static const unsigned ranges[][2] = {
        { 0x80, 0x9f },       { 0xad, 0xad },       { 0x600, 0x605 },     { 0x61c, 0x61c },
        { 0x6dd, 0x6dd },     { 0x70f, 0x70f },     { 0x890, 0x891 },     { 0x8e2, 0x8e2 },
        { 0x180e, 0x180e },   { 0x200b, 0x200f },   { 0x2028, 0x202e },   { 0x2060, 0x206f },
        { 0xfeff, 0xfeff },   { 0xfff9, 0xfffb },   { 0x110bd, 0x110bd }, { 0x110cd, 0x110cd },
        { 0x13430, 0x1343f }, { 0x1bca0, 0x1bca3 }, { 0x1d173, 0x1d17a }, { 0xe0001, 0xe0001 },
        { 0xe0020, 0xe007f },
    };
    for (size_t i = 0; i < sizeof(ranges) / sizeof(ranges[0]); i++)
        if (cp >= ranges[i][0] && cp <= ranges[i][1])
            return true;
    return false;
}

static void json_u16(FILE *f, unsigned u)
{
    static const char hex[] = "0123456789abcdef";
    fprintf(f, "\\u%c%c%c%c", hex[(u >> 12) & 15], hex[(u >> 8) & 15], hex[(u >> 4) & 15], hex[u & 15]);
}

size_t esc_display(char *dst, size_t cap, const char *src, size_t srclen, bool utf8)
{
    static const char hex[] = "0123456789abcdef";
    size_t o = 0;
    const unsigned char *s = (const unsigned char *)src;
    if (cap == 0)
        return 0;
    /* Most names are plain ASCII: copied as they are, up to the first byte to look at. */
    size_t i = 0;
    while (i < srclen && i + 1 < cap && s[i] >= 0x20 && s[i] < 0x7f && s[i] != '\\')
        i++;
    memcpy(dst, src, i);
    o = i;
    while (i < srclen) {
        char tmp[16];
        size_t tl = 0, adv = 1;
        unsigned cp;
        size_t l = utf8_decode(s + i, srclen - i, &cp);
        if (l == 1 && cp >= 0x20 && cp < 0x7f) {
            if (cp == '\\')
                tmp[tl++] = '\\';
            tmp[tl++] = (char)cp;
        } else if (l == 1) {
            const char *named = cp == '\n' ? "\\n" : cp == '\t' ? "\\t" : cp == '\r' ? "\\r" : cp == 0x1b ? "\\e" : NULL;
            if (named) {
                tl = strlen(named);
                memcpy(tmp, named, tl);
            } else {
                tmp[tl++] = '\\', tmp[tl++] = 'x', tmp[tl++] = hex[cp >> 4], tmp[tl++] = hex[cp & 15];
            }
        } else if (l == 0) {
            tmp[tl++] = '\\', tmp[tl++] = 'x', tmp[tl++] = hex[s[i] >> 4], tmp[tl++] = hex[s[i] & 15];
        } else if (utf8 && !is_format_char(cp)) {
            memcpy(tmp, s + i, l);
            tl = l;
            adv = l;
        } else {
            adv = l;
            tl = (size_t)snprintf(tmp, sizeof(tmp), "\\u{%x}", cp);
        }
        if (o + tl >= cap)
            break;
        memcpy(dst + o, tmp, tl);
        o += tl;
        i += adv;
    }
    dst[o] = '\0';
    return o;
}

void esc_json(FILE *f, const char *src, size_t srclen)
{
    const unsigned char *s = (const unsigned char *)src;
    putc('"', f);
    for (size_t i = 0; i < srclen;) {
        /* A run of plain ASCII goes out in one write: a key, a name, most command lines. */
        size_t run = i;
        while (run < srclen && s[run] >= 0x20 && s[run] < 0x7f && s[run] != '"' && s[run] != '\\')
            run++;
        if (run > i) {
            fwrite(s + i, 1, run - i, f);
            i = run;
            continue;
        }
        unsigned cp;
        size_t l = utf8_decode(s + i, srclen - i, &cp);
        if (l == 0) {
            fputs("\\ufffd", f);
            i++;
            continue;
        }
        if (cp == '"' || cp == '\\') {
            putc('\\', f);
            putc((int)cp, f);
        } else if (cp < 0x20 || cp == 0x7f || is_format_char(cp)) {
            if (cp > 0xffff) {          /* beyond the BMP: a UTF-16 surrogate pair */
                json_u16(f, 0xd800 + ((cp - 0x10000) >> 10));
                json_u16(f, 0xdc00 + ((cp - 0x10000) & 0x3ff));
            } else {
                json_u16(f, cp);
            }
        } else {
            fwrite(s + i, 1, l, f);
        }
        i += l;
    }
    putc('"', f);
}
