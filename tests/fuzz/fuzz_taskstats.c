/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Fuzz taskstats_parse (the payload of a TASKSTATS_TYPE_STATS netlink attribute). The copy
 * is at an odd address half of the time: the contract says it needs no alignment. */
#include "fuzz.h"

#include <errno.h>

#include "source/taskstats.h"

#define MAX_LEN 2048

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1 || size > MAX_LEN)
        return 0;
    size_t skew = data[0] & 1;           /* the first byte only chooses the alignment */
    data++, size--;
    char *raw = malloc(size + skew);
    if (!raw)
        abort();
    if (size)
        memcpy(raw + skew, data, size);
    struct delay_sample s;
    memset(&s, 0xa5, sizeof(s));
    int r = taskstats_parse(raw + skew, size, &s);
    FZ_CHECK(r == 0 || r == -EINVAL || r == -EPROTO);
    FZ_CHECK(s.valid == (r == 0));
    FZ_CHECK(s.error == r);
    if (r != 0) {
        FZ_CHECK(s.cpu_count == 0 && s.cpu_delay_ns == 0 && s.blkio_count == 0 &&
                 s.blkio_delay_ns == 0 && s.swapin_count == 0 && s.swapin_delay_ns == 0);
    } else {
        uint16_t v;
        memcpy(&v, data, sizeof(v));
        FZ_CHECK(s.version == v && v != 0);
    }
    free(raw);
    return 0;
}
