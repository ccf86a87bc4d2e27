/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Fuzz procio_parse (/proc/PID/io text). */
#include "fuzz.h"

#include <errno.h>

#include "source/procs.h"

#define MAX_LEN 4096

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > MAX_LEN)
        return 0;
    char *buf = fz_copy(data, size);
    struct proc_io a, b;
    memset(&a, 0xa5, sizeof(a));
    int r = procio_parse(buf, size, &a);
    FZ_CHECK(r == 0 || r == -EINVAL);
    /* Pure: the same bytes give the same answer. */
    int r2 = procio_parse(buf, size, &b);
    FZ_CHECK(r2 == r);
    if (r == 0) {
        FZ_CHECK(memcmp(&a, &b, sizeof(a)) == 0);
        /* Seven keys, each "key: digits\n": at least 7 newlines in the input. */
        size_t nl = 0;
        for (size_t i = 0; i < size; i++)
            nl += data[i] == '\n';
        FZ_CHECK(nl >= 7);
    }
    free(buf);
    return 0;
}
