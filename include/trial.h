/* SPDX-License-Identifier: GPL-2.0-or-later */
/* trial.h: `iotriage trial DEVICE SCHEDULER` (issue #39; docs/trial.md).
 *
 * Measures the disk for --seconds under its scheduler, switches to SCHEDULER in a child
 * (act.h sched_start: the write can sleep in D until the requests in flight drain), lets
 * it settle TRIAL_SETTLE_S, measures again, compares per I/O priority with the noise
 * stated, and keeps the new scheduler or puts the old one (and its nr_requests) back on
 * the rule (act/trial.h). A guardian (act/trial.h guard_start) puts the device back if
 * iotriage dies mid-trial; SIGINT, SIGTERM and SIGHUP put it back at once.
 *
 * Exit status: 0 kept, 3 put back by the rule, 1 the trial could not run or was
 * interrupted (the device put back, or the guardian doing it), 2 a bad command line or
 * a refusal (read-only, a replay, no privilege, a partition, a bio-based device, a
 * scheduler the kernel does not have, no terminal to ask on without --yes).
 */
#ifndef IOTRIAGE_TRIAL_H
#define IOTRIAGE_TRIAL_H

int trial_main(int argc, char **argv);

#endif
