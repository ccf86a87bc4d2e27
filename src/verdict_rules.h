/* SPDX-License-Identifier: GPL-2.0-or-later */
/* verdict_rules.h: private to verdict.c and its parts (verdict_cgroup.c, verdict_fs.c,
 * verdict_pressure.c): what the rule
 * families share: adding a warning, what a device offers, and each family's entry. */
#ifndef IOTRIAGE_VERDICT_RULES_H
#define IOTRIAGE_VERDICT_RULES_H

#include <stdbool.h>
#include <stddef.h>

#include "verdict.h"

void push(struct verdicts *v, enum warn_code code, int dev, int task, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
bool offers(const struct blockdev_info *b, const char *sched);
/* A scheduler the kernel can load for it, not offered yet (a module never loaded). */
bool loadable(const struct blockdev_info *b, unsigned bit);

/* verdict_cgroup.c: the cgroup rules (cgroups.h; docs/verdicts.md "cgroup controls"). */
void cgroup_findings(const struct result *r, struct verdicts *v);

/* verdict_fs.c: the filesystem rules for r->fss[fi] (docs/verdicts.md "Filesystems"). */
void fs_findings(const struct result *r, size_t fi, struct verdicts *v);

/* verdict_pressure.c: io pressure that is not block I/O, and io pressure that is swap. */
void pressure_findings(const struct result *r, struct verdicts *v);
/* The filesystem with no block device the task r->tasks[ti] waits on (in iowait, no block
 * I/O of its own), or NULL; *ev (when not NULL) says how its wait was known. */
const struct mount_entry *netfs_waiter(const struct result *r, size_t ti, enum evidence *ev);

#endif
