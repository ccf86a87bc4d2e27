/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Fuzz parse_majmin (sysfs `dev`, "MAJ:MIN\n"). Two properties: what it accepts is only
 * digits, one colon and an optional final newline; and any pair it is shown printed
 * canonically parses back to itself. */
#include "fuzz.h"

#include <errno.h>

#include "source/fdmap.h"

#define MAX_LEN 128

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > MAX_LEN)
        return 0;
    char *buf = fz_copy(data, size);
    unsigned a = 7, b = 7;
    int r = parse_majmin(buf, size, &a, &b);
    FZ_CHECK(r == 0 || r == -EINVAL);
    if (r == 0) {
        size_t l = size;
        if (l && data[l - 1] == '\n')
            l--;
        unsigned colons = 0;
        for (size_t i = 0; i < l; i++) {
            FZ_CHECK((data[i] >= '0' && data[i] <= '9') || data[i] == ':');
            colons += data[i] == ':';
        }
        FZ_CHECK(colons == 1);
    } else {
        FZ_CHECK(a == 7 && b == 7);
    }
    free(buf);

    if (size >= 8) {
        unsigned x, y, px, py;
        memcpy(&x, data, 4);
        memcpy(&y, data + 4, 4);
        char txt[32];
        int l = snprintf(txt, sizeof(txt), "%u:%u%s", x, y, (data[0] & 1) ? "\n" : "");
        char *c = fz_copy((const uint8_t *)txt, (size_t)l);
        FZ_CHECK(parse_majmin(c, (size_t)l, &px, &py) == 0 && px == x && py == y);
        free(c);
    }
    return 0;
}
