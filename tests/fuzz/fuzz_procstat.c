/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Fuzz procstat_parse (/proc/PID/stat text: a name of any bytes between parentheses,
 * then numbers). */
#include "fuzz.h"

#include <errno.h>

#include "source/procs.h"

#define MAX_LEN 4096

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > MAX_LEN)
        return 0;
    char *buf = fz_copy(data, size);
    struct proc_stat a, b;
    memset(&a, 0xa5, sizeof(a));
    memset(&b, 0x5a, sizeof(b));
    int r = procstat_parse(buf, size, &a);
    FZ_CHECK(r == 0 || r == -EINVAL);
    /* Pure: the same bytes give the same answer. */
    int r2 = procstat_parse(buf, size, &b);
    FZ_CHECK(r2 == r);
    if (r == 0) {
        FZ_CHECK(memchr(a.comm, '\0', sizeof(a.comm)) != NULL);     /* always terminated */
        FZ_CHECK(strcmp(a.comm, b.comm) == 0 && a.state == b.state && a.nice == b.nice &&
                 a.nlwp == b.nlwp && a.start_ticks == b.start_ticks && a.policy == b.policy &&
                 a.flags == b.flags);
        /* a name needs its parentheses */
        FZ_CHECK(memchr(data, '(', size) != NULL && memchr(data, ')', size) != NULL);
    }
    free(buf);
    return 0;
}
