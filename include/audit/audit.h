/* SPDX-License-Identifier: GPL-2.0-or-later */
/* audit/audit.h: `iotriage audit`, a one-shot report for fleets and CI.
 *
 * Lists every running process whose effective I/O priority is not the default, and every
 * systemd unit file that sets IOSchedulingClass=, IOSchedulingPriority=, Nice= or
 * CPUSchedulingPolicy=, with the effective priority each produces, the devices involved
 * and whether their schedulers read it (verdict.h's rule table). Reads files only: no
 * systemd needs to be running.
 *
 * A label systemd rejects when it loads the unit (IOSchedulingClass=Idle, Nice=50: the
 * unit runs without it) is one more way a label is ignored, reported with file and line.
 * A process's priority is the one its requests carry, after its cgroup's io.prio.class.
 *
 * Then, with the processes (not with no_processes), every cgroup of the hierarchy the
 * cgroup lens shows (source/cgroups.h: the v2 one through mountinfo, else the v1 blkio
 * one), walked depth first without following a symlink and bounded (20,000 cgroups, 64
 * deep): io.weight, io.max (v1: blkio.throttle), io.prio.class and io.latency judged
 * against the snapshot's devices with verdict.h's cgroup rules (verdict_cg_*), the one
 * logic the live verdicts use. Text from outside (unit, file and cgroup names, values,
 * device names) goes through esc_display.
 *
 * Exit status: 1 when any label is ignored (wholly, its level, or rejected by systemd) or
 * a cgroup setting is without effect on a device; 3 when none is but some could not be
 * judged (no device found, unknown scheduler, io.cost.qos unreadable, a cgroup row for a
 * device not listed); 0 when every label and setting is honoured, or there is none; 2 on
 * error.
 */
#ifndef IOTRIAGE_AUDIT_AUDIT_H
#define IOTRIAGE_AUDIT_AUDIT_H

#include <stdbool.h>

struct audit_opts {
    bool json;
    bool no_processes;               /* units only (tests on a fixture root): no cgroups */
    const char *root;                /* where unit files are read: "/" unless testing */
    const char *proc_root, *sys_root;   /* NULL: /proc, /sys; a captured tree for tests */
};

int audit_run(const struct audit_opts *o);

/* Shared by the audit's files (src/audit/), no part of the command's interface: text from
 * outside written to stdout through esc_display (UTF-8 kept when the locale's codeset is
 * UTF-8), padded with blanks to width columns; a JSON string, or null for NULL. */
void put_disp(const char *s, int width);
void json_str(const char *s);

#endif
