/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Fuzz psi_parse (/proc/pressure/{io,cpu,memory} text). */
#include "fuzz.h"

#include <errno.h>
#include <math.h>

#include "source/psi.h"

#define MAX_LEN 4096

static void check_line(const struct psi_line *l)
{
    if (!l->valid) {
        FZ_CHECK(l->avg10 == 0 && l->avg60 == 0 && l->avg300 == 0 && l->total_us == 0);
        return;
    }
    FZ_CHECK(isfinite(l->avg10) && l->avg10 >= 0);
    FZ_CHECK(isfinite(l->avg60) && l->avg60 >= 0);
    FZ_CHECK(isfinite(l->avg300) && l->avg300 >= 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > MAX_LEN)
        return 0;
    char *buf = fz_copy(data, size);
    struct psi_sample s;
    memset(&s, 0xa5, sizeof(s));
    int r = psi_parse(buf, size, &s);
    FZ_CHECK(r == 0 || r == -EINVAL);
    FZ_CHECK((r == 0) == (s.some.valid || s.full.valid));
    FZ_CHECK(s.err == r);
    check_line(&s.some);
    check_line(&s.full);
    free(buf);
    return 0;
}
