/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Fuzz fdinfo_parse_flags (/proc/PID/fdinfo/N, the octal `flags:` line). */
#include "fuzz.h"

#include <errno.h>

#include "source/fdmap.h"

#define MAX_LEN 4096

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > MAX_LEN)
        return 0;
    char *buf = fz_copy(data, size);
    unsigned flags = 0xdeadbeef;
    int r = fdinfo_parse_flags(buf, size, &flags);
    FZ_CHECK(r == 0 || r == -EINVAL);
    if (r == 0) {
        FZ_CHECK(memmem(data, size, "flags:", 6) != NULL);
    } else {
        FZ_CHECK(flags == 0xdeadbeef);
    }
    free(buf);
    return 0;
}
