/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Fuzz esc_display. The input's first byte chooses the mode (bit 0: utf8) and the output
 * capacity (1..256 from the second byte); the rest is the untrusted text. Checked:
 *  - the output is NUL-terminated at the returned length, within cap;
 *  - it holds no C0 control, no DEL; without utf8 no byte >= 0x80; with utf8 only valid
 *    UTF-8 and no C1 control, bidi or other format character among the characters passed;
 *  - it is exact: un-escaping it (\\ \n \t \r \e \xNN \u{X}) gives back a prefix of the
 *    input, the whole input when the capacity was large enough (never an escape or a
 *    character cut in half, since a cut one would not un-escape);
 *  - a smaller capacity gives a prefix of the larger one's output. */
#include "fuzz.h"

#include <stdbool.h>

#include "util/escape.h"

#define MAX_LEN 1024

/* Format characters esc_display must not pass raw: C1, the bidi embeddings, overrides,
 * isolates and marks, line/paragraph separators, zero-width ones and the BOM (a subset of
 * its table, written here independently). */
static bool must_escape(unsigned cp)
{
    return (cp >= 0x80 && cp <= 0x9f) || cp == 0x200e || cp == 0x200f || cp == 0x061c ||
           (cp >= 0x2028 && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069) ||
           (cp >= 0x200b && cp <= 0x200d) || cp == 0xfeff || cp == 0xad ||
           cp == 0xe0001 || (cp >= 0xe0020 && cp <= 0xe007f);
}

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

/* Un-escape s[0, n) into out (room for n bytes at least); returns the length. Aborts on
 * anything esc_display should never write. */
static size_t unescape(const char *s, size_t n, unsigned char *out)
{
    size_t o = 0;
    for (size_t i = 0; i < n;) {
        unsigned char c = (unsigned char)s[i];
        if (c != '\\') {
            out[o++] = c;
            i++;
            continue;
        }
        FZ_CHECK(i + 1 < n);
        char e = s[i + 1];
        i += 2;
        switch (e) {
        case '\\': out[o++] = '\\'; break;
        case 'n': out[o++] = '\n'; break;
        case 't': out[o++] = '\t'; break;
        case 'r': out[o++] = '\r'; break;
        case 'e': out[o++] = 0x1b; break;
        case 'x': {
            FZ_CHECK(i + 2 <= n);
            int h = hexv(s[i]), l = hexv(s[i + 1]);
            FZ_CHECK(h >= 0 && l >= 0);
            out[o++] = (unsigned char)(h << 4 | l);
            i += 2;
            break;
        }
        case 'u': {
            FZ_CHECK(i < n && s[i] == '{');
            i++;
            unsigned cp = 0;
            size_t digits = 0;
            while (i < n && s[i] != '}') {
                int h = hexv(s[i]);
                FZ_CHECK(h >= 0 && digits < 6);
                cp = cp << 4 | (unsigned)h;
                digits++, i++;
            }
            FZ_CHECK(i < n && digits > 0 && cp <= 0x10ffff);
            i++;
            o += put_utf8(cp, out + o);
            break;
        }
        default:
            FZ_CHECK(!"unknown escape");
        }
    }
    return o;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2 || size > MAX_LEN)
        return 0;
    bool utf8 = data[0] & 1;
    size_t cap = (size_t)data[1] + 1;
    data += 2, size -= 2;
    char *src = fz_copy(data, size);

    /* Large enough for anything: an input byte becomes at most 4 output bytes ("\xff"),
     * a character of n bytes at most 10 ("\u{10ffff}"). */
    size_t bigcap = 4 * size + 1;
    char *big = malloc(bigcap);
    char *small = malloc(cap);
    unsigned char *back = malloc(bigcap);
    if (!big || !small || !back)
        abort();

    size_t n = esc_display(big, bigcap, src, size, utf8);
    FZ_CHECK(n < bigcap && big[n] == '\0' && strlen(big) == n);
    size_t m = esc_display(small, cap, src, size, utf8);
    FZ_CHECK(m < cap && small[m] == '\0' && strlen(small) == m);
    FZ_CHECK(m <= n && memcmp(small, big, m) == 0);

    for (size_t i = 0; i < n;) {
        unsigned char c = (unsigned char)big[i];
        FZ_CHECK(c >= 0x20 && c != 0x7f);
        if (c < 0x80) {
            i++;
            continue;
        }
        FZ_CHECK(utf8);
        unsigned cp;
        size_t l = utf8_decode((const unsigned char *)big + i, n - i, &cp);
        FZ_CHECK(l > 1);
        FZ_CHECK(!must_escape(cp));
        i += l;
    }

    size_t bl = unescape(big, n, back);
    FZ_CHECK(bl == size && memcmp(back, data, size) == 0);
    size_t sl = unescape(small, m, back);
    FZ_CHECK(sl <= size && memcmp(back, data, sl) == 0);

    free(back);
    free(small);
    free(big);
    free(src);
    return 0;
}
