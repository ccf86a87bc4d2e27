/* SPDX-License-Identifier: GPL-2.0-or-later */
/* devs_fixture.h: the devices several unit tests share: a disk sdb (8:16), its
 * partition sdb1 (8:17) and another disk sdc (8:32), in diskstats' order. */
#ifndef IOTRIAGE_TEST_DEVS_FIXTURE_H
#define IOTRIAGE_TEST_DEVS_FIXTURE_H

#include <stdio.h>
#include <string.h>

#include "snapshot.h"

static inline void devs_fixture(struct dev_sample dv[3])
{
    memset(dv, 0, 3 * sizeof(*dv));
    snprintf(dv[0].ds.name, sizeof(dv[0].ds.name), "sdb");
    dv[0].ds.major = 8, dv[0].ds.minor = 16;
    snprintf(dv[1].ds.name, sizeof(dv[1].ds.name), "sdb1");
    dv[1].ds.major = 8, dv[1].ds.minor = 17;
    dv[1].bd.partition = true;
    snprintf(dv[1].bd.disk, sizeof(dv[1].bd.disk), "sdb");
    snprintf(dv[2].ds.name, sizeof(dv[2].ds.name), "sdc");
    dv[2].ds.major = 8, dv[2].ds.minor = 32;
}

#endif
