/* SPDX-License-Identifier: GPL-2.0-or-later */
/* act/guard.c: the trial's guardian, which puts the device back when the trial dies
 * (act/trial.h). */
#include "act/trial.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <syslog.h>
#include <unistd.h>

#include "util.h"

bool guard_should_restore(const struct sched_state *now, const struct sched_state *orig,
                          const char *trial_sched)
{
    if (strcmp(now->sched, trial_sched) == 0)
        return strcmp(now->sched, orig->sched) != 0 || now->nr_requests != orig->nr_requests;
    /* the original scheduler with another depth: the trial's own --nr-requests, or a
     * switch back whose second write never came */
    if (strcmp(now->sched, orig->sched) == 0)
        return orig->nr_requests > 0 && now->nr_requests != orig->nr_requests;
    return false;                    /* a third scheduler: someone else's choice since */
}

static _Noreturn void guard_run(int rfd, const char *sys_root, const char *disk,
                                const struct sched_state *orig, const char *trial_sched)
{
    setsid();                        /* no SIGHUP when the trial's terminal goes */
    signal(SIGINT, SIG_IGN);
    signal(SIGQUIT, SIG_IGN);
    signal(SIGHUP, SIG_IGN);
    signal(SIGTERM, SIG_IGN);        /* it ends when the trial has: at end of file */
    signal(SIGPIPE, SIG_IGN);
    signal(SIGTTOU, SIG_IGN);
    signal(SIGTTIN, SIG_IGN);
    int nul = open("/dev/null", O_RDWR | O_CLOEXEC);
    if (nul >= 0) {
        dup2(nul, STDIN_FILENO);
        dup2(nul, STDOUT_FILENO);
        dup2(nul, STDERR_FILENO);
        if (nul > STDERR_FILENO && nul != rfd)
            close(nul);
    }
    /* Nothing else of the trial's held open (a pipe a test reads to its end, the lens) */
    if (rfd != 3) {
        dup2(rfd, 3);
        rfd = 3;
    }
    syscall(SYS_close_range, 4u, ~0u, 0u);
    openlog("iotriage-trial", LOG_PID, LOG_DAEMON);
    bool kept = false, done = false;
    for (;;) {
        char c;
        ssize_t n = read(rfd, &c, 1);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        if (c == GUARD_KEEP)
            kept = true;
        else if (c == GUARD_DONE)
            done = true;
    }
    if (kept || done)
        _exit(0);
    struct sched_state now;
    int rc = sched_read(sys_root, disk, &now);
    if (rc < 0) {
        syslog(LOG_WARNING, "the trial on %s ended without a word; %s cannot be read (%s): nothing put back",
               disk, disk, strerror(-rc));
        _exit(1);
    }
    if (!guard_should_restore(&now, orig, trial_sched)) {
        if (strcmp(now.sched, orig->sched) != 0)
            syslog(LOG_WARNING, "the trial on %s ended without a word; %s now uses %s, neither %s (the trial's) nor %s: "
                   "left as it is", disk, disk, now.sched, trial_sched, orig->sched);
        _exit(0);
    }
    rc = sched_restore(sys_root, disk, orig);
    struct sched_state after;
    sched_read(sys_root, disk, &after);
    syslog(rc < 0 ? LOG_ERR : LOG_NOTICE, "the trial on %s ended without a word: %s %s (now %s, nr_requests %ld)",
           disk, rc < 0 ? "putting it back failed:" : "put back to", rc < 0 ? strerror(-rc) : orig->sched,
           after.sched, after.nr_requests);
    _exit(rc < 0 ? 1 : 0);
}

int guard_start(struct guard *g, const char *sys_root, const char *disk,
                const struct sched_state *orig, const char *trial_sched)
{
    g->pid = 0;
    g->fd = -1;
    int p[2];
    if (pipe2(p, O_CLOEXEC) < 0)
        return -errno;
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        int e = errno;
        close(p[0]);
        close(p[1]);
        return -e;
    }
    if (pid == 0) {
        close(p[1]);
        guard_run(p[0], sys_root, disk, orig, trial_sched);
    }
    close(p[0]);
    g->pid = pid;
    g->fd = p[1];
    return 0;
}

void guard_tell(struct guard *g, char what)
{
    if (g->fd < 0)
        return;
    ssize_t w;
    do
        w = write(g->fd, &what, 1);
    while (w < 0 && errno == EINTR);
    close(g->fd);
    g->fd = -1;
}
