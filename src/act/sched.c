/* SPDX-License-Identifier: GPL-2.0-or-later */
/* act/sched.c: switch a device's I/O scheduler, keep or reset nr_requests, undo on failure. */
#include "act/act.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "util.h"

#define MAX_SCHED_RQ 2048            /* block/blk-sysfs.c: the most a scheduler may hold */
#define SCHED_BUSY_PCT 99.0          /* %util from which an interval counts as busy throughout */

static int open_queue_dir(const char *sys_root, const char *disk, const char *sub)
{
    if (!disk[0] || strchr(disk, '/') || strcmp(disk, ".") == 0 || strcmp(disk, "..") == 0)
        return -EINVAL;
    char path[512];
    snprintf(path, sizeof(path), "%s/class/block/%s/%s", sys_root ? sys_root : "/sys", disk, sub);
    int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    return fd < 0 ? -errno : fd;
}

int sched_read(const char *sys_root, const char *disk, struct sched_state *out)
{
    memset(out, 0, sizeof(*out));
    out->nr_requests = out->queue_depth = -1;
    if (!disk[0] || strchr(disk, '/') || strcmp(disk, ".") == 0 || strcmp(disk, "..") == 0)
        return -EINVAL;
    int sys_fd = open(sys_root ? sys_root : "/sys", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (sys_fd < 0)
        return -errno;
    struct blockdev_info b;
    int rc = blockdev_read(sys_fd, disk, &b);
    if (rc == 0 && !b.has_queue)
        rc = -ENOENT;
    if (rc == 0) {
        str_copy(out->sched, b.scheduler, sizeof(out->sched));
        memcpy(out->list, b.schedulers, sizeof(out->list));
        out->nsched = b.nsched;
        out->nr_requests = b.nr_requests;
        char path[BD_NAME_MAX + 32];
        snprintf(path, sizeof(path), "class/block/%s/mq/0/nr_tags", disk);
        out->queue_depth = read_long_at(sys_fd, path);
    }
    close(sys_fd);
    return rc;
}

static bool is_none(const char *sched)
{
    return !sched || !sched[0] || strcmp(sched, "none") == 0;
}

long sched_default_nr_requests(const char *sched, long queue_depth)
{
    if (queue_depth <= 0)
        return -1;
    if (is_none(sched))
        return queue_depth;
    return 2 * (queue_depth < 128 ? queue_depth : 128);
}

bool sched_nr_requests_valid(const char *sched, long nr, long queue_depth)
{
    if (nr < 4)                      /* the kernel raises smaller values to 4 */
        return false;
    if (is_none(sched))
        return queue_depth > 0 && nr <= queue_depth;
    return nr <= MAX_SCHED_RQ;
}

static int write_queue(const char *sys_root, const char *disk, const char *attr, const char *text)
{
    int qfd = open_queue_dir(sys_root, disk, "queue");
    if (qfd < 0)
        return qfd;
    int rc = act_write_at(qfd, attr, text);
    close(qfd);
    return rc;
}

static int write_nr(const char *sys_root, const char *disk, long nr)
{
    char v[32];
    snprintf(v, sizeof(v), "%ld", nr);
    return write_queue(sys_root, disk, "nr_requests", v);
}

/* Put the device back as `b` shows it: the scheduler first (which resets nr_requests),
 * then nr_requests. */
static int restore(const char *sys_root, const char *disk, const struct sched_state *b)
{
    int rc = 0;
    struct sched_state now;
    if (sched_read(sys_root, disk, &now) == 0 && strcmp(now.sched, b->sched) != 0)
        rc = write_queue(sys_root, disk, "scheduler", b->sched);
    if (rc == 0 && b->nr_requests > 0 && sched_read(sys_root, disk, &now) == 0 &&
        now.nr_requests != b->nr_requests)
        rc = write_nr(sys_root, disk, b->nr_requests);
    return rc;
}

int sched_restore(const char *sys_root, const char *disk, const struct sched_state *b)
{
    if (act_read_only())
        return -EROFS;
    return restore(sys_root, disk, b);
}

int sched_apply(const char *sys_root, const char *disk, const struct sched_state *expect,
                const char *to, long keep_nr, struct sched_outcome *out)
{
    memset(out, 0, sizeof(*out));
    if (act_read_only()) {
        out->err = -EROFS;
        snprintf(out->msg, sizeof(out->msg), "read-only mode: nothing written");
        return out->err;
    }
    int rc = sched_read(sys_root, disk, &out->before);
    if (rc < 0) {
        out->err = rc;
        snprintf(out->msg, sizeof(out->msg), "cannot read %s's queue: %s; nothing written", disk, strerror(-rc));
        return rc;
    }
    if (expect && (strcmp(expect->sched, out->before.sched) != 0 || expect->nr_requests != out->before.nr_requests)) {
        out->err = -ESTALE;
        out->after = out->before;
        snprintf(out->msg, sizeof(out->msg),
                 "%s changed since you looked (now %s, nr_requests %ld): nothing written; look again", disk,
                 out->before.sched, out->before.nr_requests);
        return out->err;
    }
    rc = write_queue(sys_root, disk, "scheduler", to);
    if (rc < 0) {
        out->err = rc;
        sched_read(sys_root, disk, &out->after);
        snprintf(out->msg, sizeof(out->msg), "%s: writing scheduler '%s' failed: %s; still %s, nr_requests %ld",
                 disk, to, strerror(-rc), out->after.sched[0] ? out->after.sched : "?", out->after.nr_requests);
        return rc;
    }
    if (keep_nr > 0) {
        rc = write_nr(sys_root, disk, keep_nr);
        if (rc < 0) {
            int rb = restore(sys_root, disk, &out->before);
            out->err = rc;
            out->rolled_back = rb == 0;
            sched_read(sys_root, disk, &out->after);
            snprintf(out->msg, sizeof(out->msg), "%s: nr_requests %ld refused under %s: %s; %s (now %s, nr_requests %ld)",
                     disk, keep_nr, to, strerror(-rc), rb == 0 ? "switched back" : "could not switch back",
                     out->after.sched, out->after.nr_requests);
            return rc;
        }
    }
    rc = sched_read(sys_root, disk, &out->after);
    if (rc < 0) {
        out->err = rc;
        snprintf(out->msg, sizeof(out->msg), "%s: written, but reading it back failed: %s", disk, strerror(-rc));
        return rc;
    }
    if (strcmp(out->after.sched, to) != 0) {
        out->err = -EIO;
        snprintf(out->msg, sizeof(out->msg), "%s: the kernel accepted '%s' but shows '%s'", disk, to, out->after.sched);
        return out->err;
    }
    snprintf(out->msg, sizeof(out->msg), "%s: scheduler %s (was %s), nr_requests %ld (was %ld)", disk, out->after.sched,
             out->before.sched, out->after.nr_requests, out->before.nr_requests);
    return 0;
}

/* ---- the switch in a child process (act/child.c) ---- */

struct sched_work {
    const char *sys_root, *disk, *to;
    const struct sched_state *expect;
    long keep_nr;
};

_Static_assert(sizeof(struct sched_outcome) <= PIPE_BUF, "the report must be one atomic pipe write");

static void sched_work_run(void *ctx, void *report)
{
    const struct sched_work *wk = ctx;
    sched_apply(wk->sys_root, wk->disk, wk->expect, wk->to, wk->keep_nr, report);
}

int sched_start(struct sched_job *job, const char *sys_root, const char *disk, const struct sched_state *expect,
                const char *to, long keep_nr)
{
    memset(job, 0, sizeof(*job));
    struct sched_work wk = { sys_root, disk, to, expect, keep_nr };
    int rc = act_child_start(&job->child, sched_work_run, &wk, sizeof(struct sched_outcome));
    if (rc < 0)
        return rc;
    str_copy(job->disk, disk, sizeof(job->disk));
    str_copy(job->to, to, sizeof(job->to));
    return 0;
}

int sched_collect(struct sched_job *job, const char *sys_root, struct sched_outcome *out)
{
    pid_t pid = job->child.pid;
    char how[64];
    int rc = act_child_collect(&job->child, out, sizeof(*out), how, sizeof(how));
    if (rc == 1)
        out->msg[sizeof(out->msg) - 1] = '\0';
    if (rc >= 0 || pid <= 0)
        return rc;
    out->err = -ECHILD;
    sched_read(sys_root, job->disk, &out->after);
    snprintf(out->msg, sizeof(out->msg), "%s: the process switching to %s (pid %d) failed: %s; now %s, nr_requests %ld",
             job->disk, job->to, (int)pid, how, out->after.sched[0] ? out->after.sched : "?",
             out->after.nr_requests);
    return rc;
}

void sched_abandon(struct sched_job *job)
{
    act_child_end(&job->child);
}

double sched_stalled_s(const struct sched_interval *hist, size_t n)
{
    if (n == 0 || isnan(hist[n - 1].completions) || isnan(hist[n - 1].util))
        return (double)NAN;
    double s = 0;
    for (size_t k = n; k-- > 0;) {
        const struct sched_interval *h = &hist[k];
        if (isnan(h->completions) || isnan(h->util) || h->completions > 0 || h->util <= 0 || h->secs <= 0)
            break;
        /* Nothing completing, the device once busy stays busy: the busy part of an
         * interval is its end, and the request that made it busy is still in flight. */
        s += (h->util >= 100.0 ? 1.0 : h->util / 100.0) * h->secs;
        /* a busy interval reads 99.7 to 100 %util: its two clocks are read apart */
        if (h->util < SCHED_BUSY_PCT)
            break;                   /* idle before that: what came earlier is not in flight now */
    }
    return s;
}

/* A value udev may be given between quotes: the kernel's names and wwids are printable,
 * but a file is a file; anything else is left out rather than quoted wrong. */
static bool udev_safe(const char *s)
{
    if (!*s)
        return false;
    for (; *s; s++)
        if (*s < 0x21 || *s > 0x7e || *s == '"' || *s == '\\' || *s == '*' || *s == '?' || *s == '[')
            return false;
    return true;
}

void sched_udev_rule(char *buf, size_t n, const char *sys_root, const char *disk, const char *sched,
                     long nr_requests)
{
    char wwid[160] = "";
    int dfd = open_queue_dir(sys_root, disk, ".");
    if (dfd >= 0) {
        if (read_file_at(dfd, "wwid", wwid, sizeof(wwid)) <= 0 && read_file_at(dfd, "device/wwid", wwid, sizeof(wwid)) <= 0)
            wwid[0] = '\0';
        str_chomp(wwid);
        close(dfd);
    }
    char nr[64] = "";
    if (nr_requests > 0)
        snprintf(nr, sizeof(nr), ", ATTR{queue/nr_requests}=\"%ld\"", nr_requests);
    if (!udev_safe(disk) || !udev_safe(sched)) {
        snprintf(buf, n, "(no rule: the device or scheduler name cannot be matched safely)");
        return;
    }
    if (udev_safe(wwid))
        snprintf(buf, n, "ACTION==\"add|change\", SUBSYSTEM==\"block\", ATTR{wwid}==\"%s\", "
                         "ATTR{queue/scheduler}=\"%s\"%s", wwid, sched, nr);
    else
        snprintf(buf, n, "ACTION==\"add|change\", SUBSYSTEM==\"block\", KERNEL==\"%s\", "
                         "ATTR{queue/scheduler}=\"%s\"%s", disk, sched, nr);
}
