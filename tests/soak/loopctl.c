/* SPDX-License-Identifier: GPL-2.0-or-later */
/* tests/soak/loopctl.c: add or remove one loop device through /dev/loop-control, which
 * losetup cannot do. Used by tests/integration/test_san_devices.sh to make a loop device
 * vanish and come back under the same name with fresh (lower) disk counters.
 *
 *   loopctl add N        create /dev/loopN (EEXIST is an error)
 *   loopctl remove N     delete /dev/loopN; the kernel refuses (EBUSY) while it is bound
 *                        to a file or open, so another user's device is never removed
 *   loopctl recreate N   remove then add at once: the device is gone for microseconds
 * Exit 0 on success, 1 with a message on failure, 2 on bad usage.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/loop.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: loopctl add|remove|recreate N\n");
        return 2;
    }
    char *end;
    long n = strtol(argv[2], &end, 10);
    if (*end || n < 0 || n > 1048575) {
        fprintf(stderr, "loopctl: bad device number '%s'\n", argv[2]);
        return 2;
    }
    int fd = open("/dev/loop-control", O_RDWR | O_CLOEXEC);
    if (fd < 0) {
        fprintf(stderr, "loopctl: /dev/loop-control: %s\n", strerror(errno));
        return 1;
    }
    int rm = strcmp(argv[1], "remove") == 0 || strcmp(argv[1], "recreate") == 0;
    int add = strcmp(argv[1], "add") == 0 || strcmp(argv[1], "recreate") == 0;
    if (!rm && !add) {
        fprintf(stderr, "loopctl: unknown command '%s'\n", argv[1]);
        return 2;
    }
    if (rm && ioctl(fd, LOOP_CTL_REMOVE, n) < 0) {
        fprintf(stderr, "loopctl: remove loop%ld: %s\n", n, strerror(errno));
        return 1;
    }
    if (add && ioctl(fd, LOOP_CTL_ADD, n) < 0) {
        fprintf(stderr, "loopctl: add loop%ld: %s\n", n, strerror(errno));
        return 1;
    }
    close(fd);
    return 0;
}
