/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Fuzz the parsers of the sampled I/O wait and of the remembered levels: state_parse
 * (store/state.h: a file anyone who can write the state directory may have made) and
 * the /proc/.../stat and wchan texts of the thread states (source/threadstate.h). The first byte
 * chooses which. */
#include "fuzz.h"

#include <errno.h>
#include <math.h>

#include "store/state.h"
#include "source/threadstate.h"

#define MAX_LEN (STATE_FILE_MAX + 64)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1 || size > MAX_LEN)
        return 0;
    uint8_t mode = data[0];
    data++;
    size--;
    char *buf = fz_copy(data, size);
    if (mode & 1) {
        static struct state_entry v[STATE_ENTRIES_MAX];
        char err[160] = "";
        size_t max = (mode >> 1) % 4 == 0 ? 1 : STATE_ENTRIES_MAX;
        int n = state_parse(buf, size, v, max, err, sizeof(err));
        FZ_CHECK(n == -EINVAL || (n >= 0 && (size_t)n <= max));
        if (n < 0)
            FZ_CHECK(err[0] != '\0');
        for (int i = 0; i < n; i++) {
            FZ_CHECK(memchr(v[i].name, '\0', sizeof(v[i].name)) && v[i].name[0]);
            FZ_CHECK(memchr(v[i].ident, '\0', sizeof(v[i].ident)));
            FZ_CHECK(isfinite(v[i].quiet_await) && v[i].quiet_await > 0);
            FZ_CHECK(isfinite(v[i].saved) && v[i].saved >= 0);
        }
        FZ_CHECK(size <= STATE_FILE_MAX || n < 0);
    } else {
        char st = taskstate_parse_state(buf, size);
        FZ_CHECK(st == 0 || (st >= 'A' && st <= 'z'));
        FZ_CHECK(st == 0 || memchr(data, ')', size));
        enum ts_class c = taskstate_classify(st ? st : 'D', buf, size);
        FZ_CHECK(c == TS_NOT_WAITING || c == TS_IO_WAIT || c == TS_OTHER_WAIT);
        FZ_CHECK(st == 'D' || !st || taskstate_classify(st, buf, size) == TS_NOT_WAITING);
        (void)taskstate_wchan_is_io(buf, size);
    }
    free(buf);
    return 0;
}
