/* SPDX-License-Identifier: GPL-2.0-or-later */
/* source/ioprio.h: a task's I/O priority, raw and as the block layer will apply it.
 *
 * ioprio_get(IOPRIO_WHO_PROCESS) returns the raw stored value, class NONE for most tasks.
 * The block layer then derives the class from the scheduling policy and the level from
 * nice (include/linux/ioprio.h:__get_task_ioprio, applied in block/blk-core.c:
 * bio_set_ioprio). We compute that effective value and record where it came from.
 */
#ifndef IOTRIAGE_SOURCE_IOPRIO_H
#define IOTRIAGE_SOURCE_IOPRIO_H

#include <stdbool.h>
#include <sys/types.h>

enum ioprio_class { IOC_NONE = 0, IOC_RT = 1, IOC_BE = 2, IOC_IDLE = 3 };
/* IOS_CGROUP: the cgroup's io.prio.class rewrote the task's value in the block layer
 * (cgroups.h fills it; every reader of the request's priority sees it, bfq does not). */
enum ioprio_source { IOS_EXPLICIT, IOS_NICE, IOS_POLICY, IOS_CGROUP };

#define IOPRIO_CLASS_OF(v) (((unsigned)(v) >> 13) & 0x7)
#define IOPRIO_LEVEL_OF(v) ((unsigned)(v) & 0x7)
#define IOPRIO_MAKE(c, l)  ((int)(((unsigned)(c) << 13) | ((unsigned)(l) & 0x7)))

struct ioprio_eff {
    enum ioprio_class  cls;     /* never IOC_NONE */
    int                level;   /* 0 (highest) .. 7 */
    enum ioprio_source source;
};

/* Pure: the effective priority of a task with raw value `raw` (from ioprio_get), nice
 * value and scheduling policy (SCHED_* number). Class NONE follows nice and policy:
 * level (nice+20)/5; class idle for SCHED_IDLE, realtime for FIFO/RR/DEADLINE, else
 * best-effort. Source is IOS_POLICY when the policy, not nice, decided the class. */
struct ioprio_eff ioprio_effective(int raw, int nice, int policy);

/* true for the kernel's default treatment: best-effort level 4 */
bool ioprio_is_default(struct ioprio_eff e);

/* ioprio_get(IOPRIO_WHO_PROCESS, tid): raw value or -errno. */
int ioprio_read(pid_t tid);

const char *ioprio_class_name(enum ioprio_class c);    /* "none" "rt" "be" "idle" */
const char *ioprio_source_name(enum ioprio_source s);  /* "explicit" "nice" "policy" "cgroup" */

#endif
