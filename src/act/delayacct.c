/* SPDX-License-Identifier: GPL-2.0-or-later */
/* act/delayacct.c: kernel.task_delayacct, read and written through procfs. */
#include "act/act.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>

#include "util.h"

int delayacct_get(const char *proc_root)
{
    char path[512], buf[16];
    snprintf(path, sizeof(path), "%s/sys/kernel/task_delayacct", proc_root ? proc_root : "/proc");
    ssize_t l = read_file_at(AT_FDCWD, path, buf, sizeof(buf));
    if (l < 0)
        return (int)l;
    return buf[0] == '1' ? 1 : buf[0] == '0' ? 0 : -EINVAL;
}

int delayacct_set(const char *proc_root, bool on)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/sys/kernel/task_delayacct", proc_root ? proc_root : "/proc");
    int rc = act_write_at(AT_FDCWD, path, on ? "1\n" : "0\n");
    if (rc < 0)
        return rc;
    int now = delayacct_get(proc_root);
    if (now < 0)
        return now;
    return now == (on ? 1 : 0) ? 0 : -EIO;
}
