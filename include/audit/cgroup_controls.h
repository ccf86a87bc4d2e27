/* SPDX-License-Identifier: GPL-2.0-or-later */
/* audit/cgroup_controls.h: the cgroup section of `iotriage audit` (audit/audit.h says what
 * it judges and how the exit status counts it).
 *
 * audit_cgroups walks the hierarchy the snapshot's cgroup lens shows (s->cgroups: the v2
 * one, else the v1 blkio one) depth first, bounded, without following a symlink, and
 * prints, as text or inside the report's JSON object (o->json), the hierarchy and every
 * cgroup that holds processes or has a setting, each setting judged on the snapshot's
 * devices by verdict.h's cgroup rules. proc_fd and sys_fd are the /proc and /sys
 * directories read. The counts of its judgements are written to *out.
 */
#ifndef IOTRIAGE_AUDIT_CGROUP_CONTROLS_H
#define IOTRIAGE_AUDIT_CGROUP_CONTROLS_H

#include "audit/audit.h"

struct snapshot;

struct cg_tally {
    unsigned ignored, honoured, undecided;
};

void audit_cgroups(const struct audit_opts *o, const struct snapshot *s, int proc_fd, int sys_fd,
                   struct cg_tally *out);

#endif
