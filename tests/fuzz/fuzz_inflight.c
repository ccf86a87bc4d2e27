/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Fuzz blockdev_parse_inflight (sysfs `inflight`, "reads writes"). C-string contract, as
 * for the scheduler: one NUL after the bytes. */
#include "fuzz.h"

#include <errno.h>

#include "source/blockdev.h"

#define MAX_LEN 256

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > MAX_LEN)
        return 0;
    char *buf = fz_cstr(data, size);
    long r = -7, w = -7;
    int ret = blockdev_parse_inflight(buf, &r, &w);
    FZ_CHECK(ret == 0 || ret == -EINVAL);
    if (ret == 0)
        FZ_CHECK(r >= 0 && w >= 0);
    else
        FZ_CHECK(r == -7 && w == -7);       /* untouched on failure */
    free(buf);
    return 0;
}
