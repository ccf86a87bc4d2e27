/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Fuzz blockdev_parse_scheduler (sysfs queue/scheduler). Its contract takes a C string
 * (blockdev_read NUL-terminates what it read), so the input gets one NUL and nothing more. */
#include "fuzz.h"

#include <errno.h>

#include "source/blockdev.h"

#define MAX_LEN 4096

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > MAX_LEN)
        return 0;
    char *buf = fz_cstr(data, size);
    char active[BD_SCHED_MAX];
    char list[BD_NSCHED][BD_SCHED_MAX];
    memset(active, 0x7f, sizeof(active));
    memset(list, 0x7f, sizeof(list));
    int n = blockdev_parse_scheduler(buf, active, list);
    FZ_CHECK(n == -EINVAL || (n >= 0 && n <= BD_NSCHED));
    FZ_CHECK(fz_terminated(active, sizeof(active)));
    FZ_CHECK(strpbrk(active, " \t\n") == NULL);
    for (int i = 0; i < n; i++) {
        FZ_CHECK(fz_terminated(list[i], BD_SCHED_MAX));
        FZ_CHECK(list[i][0] != '\0');
        FZ_CHECK(strpbrk(list[i], " \t\n") == NULL);
    }
    if (n > 0 && n < BD_NSCHED && active[0]) {
        int found = 0;                       /* the active one is among those offered */
        for (int i = 0; i < n; i++)
            found |= strcmp(list[i], active) == 0;
        FZ_CHECK(found);
    }
    free(buf);
    return 0;
}
