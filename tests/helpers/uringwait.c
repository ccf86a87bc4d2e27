/* SPDX-License-Identifier: GPL-2.0-or-later */
/* uringwait: an idle network service on io_uring, for test_psi_uring (issue #35).
 *
 * It submits one receive on a socket nothing ever sends to (one end of a socketpair; the
 * other end stays open and silent) and waits for its completion in io_uring_enter, for
 * ever. No disk I/O at all. Since 6.1.39 (and 6.5) the kernel counts that wait as iowait
 * while any request is pending (io_uring/io_uring.c io_cqring_wait: TASK_INTERRUPTIBLE
 * with in_iowait set), so /proc/pressure/io rises to about 100 % with every disk idle.
 *
 * Usage: uringwait          prints "ready PID" on stdout once the receive is submitted,
 *                           then waits until killed.
 */
#include <errno.h>
#include <liburing.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

int main(void)
{
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) < 0) {
        perror("uringwait: socketpair");
        return 1;
    }
    struct io_uring ring;
    int rc = io_uring_queue_init(4, &ring, 0);
    if (rc < 0) {
        fprintf(stderr, "uringwait: io_uring_queue_init: %s\n", strerror(-rc));
        return rc == -EPERM || rc == -ENOSYS ? 77 : 1;
    }
    static char buf[4096];
    struct io_uring_sqe *sqe = io_uring_get_sqe(&ring);
    if (!sqe) {
        fputs("uringwait: no submission entry\n", stderr);
        return 1;
    }
    io_uring_prep_recv(sqe, sv[0], buf, sizeof buf, 0);
    rc = io_uring_submit(&ring);
    if (rc != 1) {
        fprintf(stderr, "uringwait: io_uring_submit: %s\n", strerror(rc < 0 ? -rc : EIO));
        return 1;
    }
    printf("ready %d\n", (int)getpid());
    fflush(stdout);
    for (;;) {
        struct io_uring_cqe *cqe;
        rc = io_uring_wait_cqe(&ring, &cqe);
        if (rc == -EINTR)
            continue;
        /* Nothing is ever sent: a completion is an error of the test's setup. */
        fprintf(stderr, "uringwait: the receive completed (%d, res %d)\n", rc,
                rc == 0 ? cqe->res : 0);
        return 1;
    }
}
