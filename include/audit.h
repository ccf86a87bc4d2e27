/* audit.h: `iotriage audit`, a one-shot report for fleets and CI.
 *
 * Lists every running process whose effective I/O priority is not the default, and every
 * systemd unit file that sets IOSchedulingClass=, IOSchedulingPriority=, Nice= or
 * CPUSchedulingPolicy=, with the effective priority each produces, the devices involved
 * and whether their schedulers read it (verdict.h's rule table). Reads files only: no
 * systemd needs to be running.
 *
 * A label systemd rejects when it loads the unit (IOSchedulingClass=Idle, Nice=50: the
 * unit runs without it) is one more way a label is ignored, reported with file and line.
 * Text from outside (unit and file names, values, device names) goes through esc_display.
 *
 * Exit status: 1 when any label is ignored (wholly, its level, or rejected by systemd);
 * 3 when none is ignored but some could not be judged (no device found, unknown
 * scheduler); 0 when every label is honoured, or there is none; 2 on error.
 */
#ifndef IOTRIAGE_AUDIT_H
#define IOTRIAGE_AUDIT_H

#include <stdbool.h>

struct audit_opts {
    bool json;
    bool no_processes;               /* units only (tests on a fixture root) */
    const char *root;                /* where unit files are read: "/" unless testing */
    const char *proc_root, *sys_root;
};

int audit_run(const struct audit_opts *o);

#endif
