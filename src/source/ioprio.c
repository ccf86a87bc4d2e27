/* SPDX-License-Identifier: GPL-2.0-or-later */
/* source/ioprio.c: raw ioprio via the syscall, effective ioprio from nice and policy. */
#include "source/ioprio.h"

#include <errno.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef SCHED_DEADLINE
#define SCHED_DEADLINE 6
#endif
#define IOPRIO_WHO_PROCESS 1

struct ioprio_eff ioprio_effective(int raw, int nice, int policy)
{
    struct ioprio_eff e;
    unsigned cls = IOPRIO_CLASS_OF(raw);
    if (raw >= 0 && cls >= IOC_RT && cls <= IOC_IDLE) {
        e.cls = (enum ioprio_class)cls;
        e.level = (int)IOPRIO_LEVEL_OF(raw);
        e.source = IOS_EXPLICIT;
        return e;
    }
    /* task_nice_ioprio(): (nice + 20) / 5, nice clamped to the kernel's range. */
    if (nice < -20)
        nice = -20;
    if (nice > 19)
        nice = 19;
    e.level = (nice + 20) / 5;
    /* task_nice_ioclass() */
    switch (policy) {
    case SCHED_IDLE:
        e.cls = IOC_IDLE;
        e.source = IOS_POLICY;
        break;
    case SCHED_FIFO:
    case SCHED_RR:
    case SCHED_DEADLINE:
        e.cls = IOC_RT;
        e.source = IOS_POLICY;
        break;
    default:
        e.cls = IOC_BE;
        e.source = IOS_NICE;
        break;
    }
    return e;
}

bool ioprio_is_default(struct ioprio_eff e)
{
    return e.cls == IOC_BE && e.level == 4;
}

int ioprio_read(pid_t tid)
{
    long r = syscall(SYS_ioprio_get, IOPRIO_WHO_PROCESS, (int)tid);
    return r < 0 ? -errno : (int)r;
}

const char *ioprio_class_name(enum ioprio_class c)
{
    static const char *const names[] = { "none", "rt", "be", "idle" };
    return (unsigned)c < 4 ? names[c] : "invalid";
}

const char *ioprio_source_name(enum ioprio_source s)
{
    static const char *const names[] = { "explicit", "nice", "policy", "cgroup" };
    return (unsigned)s < 4 ? names[s] : "?";
}
