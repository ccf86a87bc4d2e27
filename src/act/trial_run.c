/* SPDX-License-Identifier: GPL-2.0-or-later */
/* act/trial_run.c: a scheduler trial run for the screen, as a child `iotriage trial`
 * whose progress comes back one line at a time (act/trial.h). The screen never waits
 * for it: a trial lasts tens of seconds and its switch may wait on a stuck disk. */
#include "act/trial.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "util.h"

#define PROGRESS_FD 3

void trial_progress_line(struct trial_run *t, const char *line)
{
    char word[16];
    size_t w = strcspn(line, " ");
    if (w == 0 || w >= sizeof(word))
        return;
    memcpy(word, line, w);
    word[w] = '\0';
    const char *rest = line[w] ? line + w + 1 : "";
    if (strcmp(word, "before") == 0 || strcmp(word, "after") == 0 || strcmp(word, "settle") == 0 ||
        strcmp(word, "switching") == 0 || strcmp(word, "putting-back") == 0) {
        double rem = 0, tot = 0;
        if (sscanf(rest, "%lf %lf", &rem, &tot) != 2 || !(rem >= 0 && rem <= 1e6) || !(tot >= 0 && tot <= 1e6))
            rem = tot = 0;
        str_copy(t->phase, word, sizeof(t->phase));
        t->remain = rem, t->total = tot;
        t->phase_mono = clock_mono();
    } else if (strcmp(word, "final") == 0) {
        char s[BD_SCHED_MAX];
        long nr;
        if (sscanf(rest, "%15s %ld", s, &nr) == 2) {
            str_copy(t->final_sched, s, sizeof(t->final_sched));
            t->final_nr = nr;
        }
    } else if (strcmp(word, "change") == 0) {
        if (t->nchanges < ARRAY_SIZE(t->changes))
            str_copy(t->changes[t->nchanges++], rest, sizeof(t->changes[0]));
    } else if (strcmp(word, "reason") == 0) {
        str_copy(t->reason, rest, sizeof(t->reason));
    } else if (strcmp(word, "done") == 0) {
        int st;
        char d[16];
        if (sscanf(rest, "%d %15s", &st, d) == 2) {
            t->status = st;
            str_copy(t->decision, d, sizeof(t->decision));
        }
        t->done = true;
        str_copy(t->phase, "done", sizeof(t->phase));
        t->remain = t->total = 0;
    }
}

static _Noreturn void child(char *disk, char *to, long seconds, int wfd, int efd)
{
    prctl(PR_SET_PDEATHSIG, SIGHUP); /* the screen died: the trial puts the device back */
    setpgid(0, 0);                   /* no key of the terminal reaches it */
    signal(SIGPIPE, SIG_DFL);
    int nul = open("/dev/null", O_RDWR);
    if (nul >= 0) {
        dup2(nul, STDIN_FILENO);
        dup2(nul, STDOUT_FILENO);
    }
    dup2(efd, STDERR_FILENO);
    dup2(wfd, PROGRESS_FD);
    for (int fd = PROGRESS_FD + 1; fd < 1024; fd++)
        close(fd);
    char secs[24];
    snprintf(secs, sizeof(secs), "%ld", seconds);
    char a0[] = "iotriage", a1[] = "trial", yes[] = "--yes", json[] = "--json", so[] = "--seconds",
         po[] = "--progress-fd", pfd[] = "3";
    char *argv[] = { a0, a1, disk, to, yes, json, so, secs, po, pfd, NULL };
    execv("/proc/self/exe", argv);
    dprintf(STDERR_FILENO, "iotriage trial could not be started: %s\n", strerror(errno));
    _exit(2);
}

int trial_run_start(struct trial_run *t, const char *disk, const char *to, long seconds)
{
    memset(t, 0, sizeof(*t));
    t->fd = t->err_fd = -1;
    int p[2];
    if (pipe2(p, O_CLOEXEC) < 0)
        return -errno;
    int efd = memfd_create("iotriage-trial-stderr", MFD_CLOEXEC);
    if (efd < 0) {
        int e = -errno;
        close(p[0]), close(p[1]);
        return e;
    }
    str_copy(t->disk, disk, sizeof(t->disk));
    str_copy(t->to, to, sizeof(t->to));
    t->seconds = seconds;
    pid_t pid = fork();
    if (pid < 0) {
        int e = -errno;
        close(p[0]), close(p[1]), close(efd);
        return e;
    }
    if (pid == 0)
        child(t->disk, t->to, seconds, p[1], efd);
    close(p[1]);
    fcntl(p[0], F_SETFL, O_NONBLOCK);
    t->pid = pid;
    t->fd = p[0];
    t->err_fd = efd;
    t->start_mono = t->phase_mono = clock_mono();
    str_copy(t->phase, "starting", sizeof(t->phase));
    return 0;
}

/* The last non-empty line of the child's stderr into t->err. */
static void read_err(struct trial_run *t)
{
    char buf[4096];
    ssize_t n = pread(t->err_fd, buf, sizeof(buf) - 1, 0);
    if (n <= 0)
        return;
    buf[n] = '\0';
    while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r'))
        buf[--n] = '\0';
    const char *last = strrchr(buf, '\n');
    str_copy(t->err, last ? last + 1 : buf, sizeof(t->err));
}

int trial_run_poll(struct trial_run *t)
{
    if (t->pid <= 0)
        return 1;
    for (;;) {
        if (t->blen >= sizeof(t->buf) - 1)
            t->blen = 0;             /* a line this long is no progress line: dropped */
        ssize_t n = read(t->fd, t->buf + t->blen, sizeof(t->buf) - 1 - t->blen);
        if (n <= 0)
            break;
        t->blen += (size_t)n;
        char *nl;
        while ((nl = memchr(t->buf, '\n', t->blen)) != NULL) {
            *nl = '\0';
            trial_progress_line(t, t->buf);
            size_t used = (size_t)(nl - t->buf) + 1;
            memmove(t->buf, nl + 1, t->blen - used);
            t->blen -= used;
        }
    }
    /* A switch child abandoned on a stuck disk holds the pipe after the trial exits:
     * the end is the trial's exit, not the end of file. */
    int st;
    pid_t w = waitpid(t->pid, &st, WNOHANG);
    if (w == 0 || (w < 0 && errno == EINTR))
        return 0;
    if (w > 0 && !t->done)
        t->status = WIFEXITED(st) ? WEXITSTATUS(st) : 1;
    read_err(t);
    close(t->fd);
    close(t->err_fd);
    t->fd = t->err_fd = -1;
    t->pid = 0;
    if (!t->done)
        str_copy(t->phase, "failed", sizeof(t->phase));
    return 1;
}

void trial_run_stop(struct trial_run *t)
{
    if (t->pid > 0 && !t->stopping) {
        kill(t->pid, SIGINT);
        t->stopping = true;
    }
}

int trial_run_finish(struct trial_run *t, double max_s)
{
    trial_run_stop(t);
    double end = clock_mono() + max_s;
    while (t->pid > 0 && clock_mono() < end) {
        if (trial_run_poll(t))
            return 1;
        struct pollfd p = { .fd = t->fd, .events = POLLIN };
        poll(&p, 1, 100);
    }
    return t->pid > 0 ? 0 : 1;
}
