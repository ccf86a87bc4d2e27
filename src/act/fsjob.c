/* SPDX-License-Identifier: GPL-2.0-or-later */
/* act/fsjob.c: the space actions (fsfix.c) in a child process (act/child.c), so that a
 * copy to a slow disk or a stalled truncate never freezes the screen; and what a signal will do to the
 * process it is sent to, for the confirmation that says so. */
#include "act/act.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/wait.h>
#include <unistd.h>

#include "util.h"

_Static_assert(sizeof(struct fsfix_outcome) <= PIPE_BUF, "the report must be one atomic pipe write");

struct fsfix_work {
    enum fsfix_kind kind;
    const char *proc_root, *copy_to;
    const struct fsfix_target *t;
    int sig;
    double wait_s;
};

static void fsfix_work_run(void *ctx, void *report)
{
    const struct fsfix_work *wk = ctx;
    if (wk->kind == FSFIX_SIGNAL)
        fsfix_signal(wk->proc_root, wk->t, wk->sig, wk->wait_s, report);
    else
        fsfix_truncate(wk->proc_root, wk->t, wk->copy_to, report);
}

int fsfix_start(struct fsfix_job *job, enum fsfix_kind kind, const char *proc_root,
                const struct fsfix_target *t, int sig, double wait_s, const char *copy_to)
{
    memset(job, 0, sizeof(*job));
    struct fsfix_work wk = { kind, proc_root, copy_to, t, sig, wait_s };
    int rc = act_child_start(&job->child, fsfix_work_run, &wk, sizeof(struct fsfix_outcome));
    if (rc < 0)
        return rc;
    job->kind = kind;
    return 0;
}

int fsfix_collect(struct fsfix_job *job, struct fsfix_outcome *out)
{
    pid_t pid = job->child.pid;
    char how[64];
    int rc = act_child_collect(&job->child, out, sizeof(*out), how, sizeof(how));
    if (rc == 1)
        out->msg[sizeof(out->msg) - 1] = '\0';
    if (rc >= 0 || pid <= 0)
        return rc;
    out->err = -ECHILD;
    out->append = out->writes = -1;
    snprintf(out->msg, sizeof(out->msg), "the process that %s (pid %d) failed: %s; what it did is unknown",
             job->kind == FSFIX_SIGNAL ? "sends the signal" : "truncates", (int)pid, how);
    return rc;
}

void fsfix_abandon(struct fsfix_job *job)
{
    act_child_end(&job->child);
}

/* ---- signals ---- */

int fsfix_sig_parse(const char *s)
{
    while (isspace((unsigned char)*s))
        s++;
    char buf[32];
    size_t n = strlen(s);
    while (n && isspace((unsigned char)s[n - 1]))
        n--;
    if (n == 0 || n >= sizeof(buf))
        return 0;
    memcpy(buf, s, n);
    buf[n] = '\0';
    if (isdigit((unsigned char)buf[0])) {
        char *end;
        long v = strtol(buf, &end, 10);
        return *end == '\0' && v > 0 && v < NSIG ? (int)v : 0;
    }
    const char *name = strncasecmp(buf, "SIG", 3) == 0 ? buf + 3 : buf;
    /* RTMIN+k and RTMAX-k: the numbers depend on the C library's reserved signals */
    if (strncasecmp(name, "RTMIN", 5) == 0 || strncasecmp(name, "RTMAX", 5) == 0) {
        bool min = strncasecmp(name, "RTMIN", 5) == 0;
        long k = 0;
        if (name[5]) {
            char *end;
            if (name[5] != (min ? '+' : '-') || !isdigit((unsigned char)name[6]))
                return 0;
            k = strtol(name + 6, &end, 10);
            if (*end)
                return 0;
        }
        long v = min ? SIGRTMIN + k : SIGRTMAX - k;
        return v >= SIGRTMIN && v <= SIGRTMAX ? (int)v : 0;
    }
    for (int sig = 1; sig < SIGRTMIN; sig++) {
        const char *a = sigabbrev_np(sig);
        if (a && strcasecmp(a, name) == 0)
            return sig;
    }
    return 0;
}

const char *fsfix_sig_default(int sig)
{
    switch (sig) {
    case SIGQUIT: case SIGILL: case SIGABRT: case SIGFPE: case SIGSEGV: case SIGBUS: case SIGSYS:
    case SIGTRAP: case SIGXCPU: case SIGXFSZ:
        return "terminates it (and dumps core)";
    case SIGCHLD: case SIGURG: case SIGWINCH:
        return "ignores it";
    case SIGCONT:
        return "continues it";
    case SIGSTOP: case SIGTSTP: case SIGTTIN: case SIGTTOU:
        return "stops it";
    default:
        return "terminates it";
    }
}

int fsfix_status_mask(const char *buf, size_t len, const char *key, uint64_t *mask)
{
    size_t kl = strlen(key);
    for (size_t i = 0; i + kl <= len;) {
        const char *nl = memchr(buf + i, '\n', len - i);
        size_t end = nl ? (size_t)(nl - buf) : len;
        if (end - i > kl && memcmp(buf + i, key, kl) == 0) {
            size_t k = i + kl;
            while (k < end && (buf[k] == ' ' || buf[k] == '\t'))
                k++;
            uint64_t v = 0;
            unsigned digits = 0;
            for (; k < end && isxdigit((unsigned char)buf[k]); k++, digits++) {
                if (digits >= 16)
                    return -EINVAL;
                int c = tolower((unsigned char)buf[k]);
                v = v << 4 | (uint64_t)(c <= '9' ? c - '0' : c - 'a' + 10);
            }
            if (digits == 0 || k != end)
                return -EINVAL;
            *mask = v;
            return 0;
        }
        i = end + 1;
    }
    return -EINVAL;
}

enum fsfix_disp fsfix_sig_disposition(const char *proc_root, pid_t pid, int sig, bool *blocked)
{
    char path[96], buf[4096];
    *blocked = false;
    snprintf(path, sizeof(path), "%s/%d/status", proc_root ? proc_root : "/proc", (int)pid);
    ssize_t n = read_file_at(AT_FDCWD, path, buf, sizeof(buf));
    uint64_t blk, ign, cgt;
    if (n <= 0 || sig < 1 || sig > 64 || fsfix_status_mask(buf, (size_t)n, "SigIgn:", &ign) ||
        fsfix_status_mask(buf, (size_t)n, "SigCgt:", &cgt))
        return FSD_UNKNOWN;
    uint64_t bit = 1ULL << (sig - 1);
    if (fsfix_status_mask(buf, (size_t)n, "SigBlk:", &blk) == 0)
        *blocked = (blk & bit) != 0;
    return cgt & bit ? FSD_CAUGHT : ign & bit ? FSD_IGNORED : FSD_DEFAULT;
}
