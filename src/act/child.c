/* SPDX-License-Identifier: GPL-2.0-or-later */
/* act/child.c: an action in a child process, its one report back through a pipe.
 *
 * A write to a device whose requests are stuck (a scheduler switch freezes the queue
 * until it drains), a copy to a slow disk, a truncate that waits on the journal: each can
 * leave the writer in D state for as long as the disk wants. The screen must not be that
 * writer, so the work runs in a child and the screen polls the read end. */
#include "act/act.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "util.h"

/* The child: nothing of the parent's screen or streams may be touched, and a closed
 * terminal must not kill it between two steps the operator confirmed together. */
static _Noreturn void child_run(int wfd, act_child_fn fn, void *ctx, size_t size)
{
    signal(SIGINT, SIG_IGN);
    signal(SIGQUIT, SIG_IGN);
    signal(SIGHUP, SIG_IGN);
    signal(SIGPIPE, SIG_IGN);        /* the parent quit: the report is lost, the work is not */
    signal(SIGTERM, SIG_DFL);
    /* not holding the terminal or a pipe open after the parent is gone */
    int nul = open("/dev/null", O_RDWR | O_CLOEXEC);
    if (nul >= 0) {
        dup2(nul, STDIN_FILENO);
        dup2(nul, STDOUT_FILENO);
        dup2(nul, STDERR_FILENO);
        if (nul > STDERR_FILENO)
            close(nul);
    }
    char report[PIPE_BUF];
    memset(report, 0, size);
    fn(ctx, report);
    /* one write below PIPE_BUF: the parent reads all of it or nothing */
    ssize_t w;
    do
        w = write(wfd, report, size);
    while (w < 0 && errno == EINTR);
    _exit(w == (ssize_t)size ? 0 : 1);
}

int act_child_start(struct act_child *c, act_child_fn fn, void *ctx, size_t size)
{
    memset(c, 0, sizeof(*c));
    c->fd = -1;
    if (size == 0 || size > PIPE_BUF)
        return -EINVAL;
    int p[2];
    if (pipe2(p, O_CLOEXEC) < 0)
        return -errno;
    fflush(NULL);                    /* nothing buffered is written twice */
    pid_t pid = fork();
    if (pid < 0) {
        int e = errno;
        close(p[0]);
        close(p[1]);
        return -e;
    }
    if (pid == 0) {
        close(p[0]);
        child_run(p[1], fn, ctx, size);
    }
    close(p[1]);
    fcntl(p[0], F_SETFL, fcntl(p[0], F_GETFL) | O_NONBLOCK);
    c->pid = pid;
    c->fd = p[0];
    c->started = clock_mono();
    return 0;
}

void act_child_end(struct act_child *c)
{
    if (c->fd >= 0)
        close(c->fd);
    c->fd = -1;
    c->pid = 0;
}

int act_child_collect(struct act_child *c, void *report, size_t size, char *how, size_t howlen)
{
    if (c->pid <= 0 || c->fd < 0)
        return -ECHILD;
    ssize_t n;
    do
        n = read(c->fd, report, size);
    while (n < 0 && errno == EINTR);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
        return 0;
    int e = n < 0 ? errno : 0;
    /* The report is the child's last act before _exit: this wait is over at once. */
    int st = 0;
    pid_t w;
    do
        w = waitpid(c->pid, &st, 0);
    while (w < 0 && errno == EINTR);
    if (n == (ssize_t)size) {
        act_child_end(c);
        return 1;
    }
    if (n < 0)
        snprintf(how, howlen, "reading its report failed: %s", strerror(e));
    else if (w == c->pid && WIFSIGNALED(st))
        snprintf(how, howlen, "it was killed by signal %d", WTERMSIG(st));
    else
        snprintf(how, howlen, "it ended without a report");
    memset(report, 0, size);
    act_child_end(c);
    return e ? -e : -ECHILD;
}
