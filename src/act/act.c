/* SPDX-License-Identifier: GPL-2.0-or-later */
/* act/act.c: the read-only gate and the one function that writes. */
#include "act/act.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#ifndef IOTRIAGE_READ_ONLY
#define IOTRIAGE_READ_ONLY 0
#endif

static bool read_only = IOTRIAGE_READ_ONLY;

bool act_built_read_only(void)
{
    return IOTRIAGE_READ_ONLY;
}

void act_set_read_only(void)
{
    read_only = true;
}

bool act_read_only(void)
{
    return read_only;
}

int act_write_at(int dirfd, const char *path, const char *text)
{
    if (read_only)
        return -EROFS;
    /* O_TRUNC as a shell redirection does: sysfs and procfs ignore it */
    int fd = openat(dirfd, path, O_WRONLY | O_TRUNC | O_CLOEXEC | O_NOCTTY);
    if (fd < 0)
        return -errno;
    size_t len = strlen(text);
    ssize_t w;
    do
        w = write(fd, text, len);
    while (w < 0 && errno == EINTR);
    int e = w < 0 ? errno : (size_t)w != len ? EIO : 0;
    /* sysfs reports some errors only when the file is closed */
    if (close(fd) < 0 && e == 0 && errno != EINTR)
        e = errno;
    return -e;
}
