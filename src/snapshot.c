/* SPDX-License-Identifier: GPL-2.0-or-later */
/* snapshot.c: assemble one immutable snapshot from every source. */
#include "snapshot.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "source/cgroups.h"
#include "source/fdmap.h"
#include "source/taskiter.h"
#include "source/threadstate.h"
#include "source/taskstats.h"
#include "util.h"
#include "snapshot_parts.h"

/* Serial numbers of snapshots, across samplers: a snapshot freed (zeroed) or filled again
 * by someone else no longer carries the one its sampler remembers. */

struct dev_handle {
    char name[BD_NAME_MAX];
    struct blockdev_handle *h;
};

/* Files the device handles may hold open in all (about six a device under none, up to
 * BD_HANDLE_FILES_MAX with a scheduler's tunables): the rest of the fd table, whose soft
 * limit is often 1,024, stays for /proc. Devices past the budget (a machine of a hundred
 * disks and more) are read from scratch every refresh, as before. */
#define DEV_FILES_MAX 512

static int open_dir(const char *path)
{
    int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    return fd < 0 ? -errno : fd;
}

static bool cmdline_has_delayacct(int proc_fd)
{
    char buf[4096];
    if (read_file_at(proc_fd, "cmdline", buf, sizeof(buf)) <= 0)
        return false;
    for (char *tok = strtok(buf, " \n"); tok; tok = strtok(NULL, " \n"))
        if (strcmp(tok, "delayacct") == 0)
            return true;
    return false;
}

static void sampler_load_lens_now(struct sampler *s)
{
    char why[128];
    if (lens_open(&s->lens, why, sizeof(why)) < 0)
        snprintf(s->lens_msg, sizeof(s->lens_msg), "off: %s", why);
}

bool sampler_lens_deferred(const struct sampler *s)
{
    return s->lens_deferred;
}

void sampler_load_lens(struct sampler *s)
{
    if (!s->lens_deferred)
        return;
    s->lens_deferred = false;
    s->lens_msg[0] = '\0';
    sampler_load_lens_now(s);
    if (!s->lens)
        return;
    /* Nothing was submitted under the lens before its attachment: each process's bytes
     * of the next interval count from there (task_devs_lens). */
    free(s->subs_prev.subs);
    s->subs_prev = (struct lens_reading){ .mono = lens_since(s->lens), .since = lens_since(s->lens) };
    s->have_subs = true;
}

/* fdmap's bulk source: the task iterator's open-files pass. */
static void bulk_add(void *m, const struct tasks_file_rec *v, size_t n)
{
    fdmap_bulk_add(m, v, n);
}

static int bulk_files(void *ti, struct fdmap *m)
{
    return taskiter_files(ti, bulk_add, m);
}

int sampler_open(struct sampler **out, const struct sampler_opts *opts, char *err, size_t errlen)
{
    struct sampler *s = xcalloc(1, sizeof(*s));
    s->opts = *opts;
    if (opts->npids) {
        s->pids = xcalloc(opts->npids, sizeof(pid_t));
        memcpy(s->pids, opts->pids, opts->npids * sizeof(pid_t));
        s->opts.pids = s->pids;
    }
    const char *proc = opts->proc_root ? opts->proc_root : "/proc";
    const char *sys = opts->sys_root ? opts->sys_root : "/sys";
    s->proc_fd = open_dir(proc);
    if (s->proc_fd < 0) {
        snprintf(err, errlen, "cannot open %s: %s", proc, strerror(-s->proc_fd));
        free(s->pids);
        free(s);
        return -EIO;
    }
    if (!opts->sys_root) {
        struct utsname u;
        char mdir[64 + sizeof(u.release)];
        if (uname(&u) == 0) {
            snprintf(mdir, sizeof(mdir), "/lib/modules/%s", u.release);
            s->sched_mods = blockdev_sched_modules(mdir);
        }
    }
    s->sys_fd = open_dir(sys);
    if (s->sys_fd < 0) {
        snprintf(err, errlen, "cannot open %s: %s", sys, strerror(-s->sys_fd));
        close(s->proc_fd);
        free(s->pids);
        free(s);
        return -EIO;
    }
    s->mnt = mounts_src_new(s->proc_fd, s->sys_fd);
    s->clk_tck = sysconf(_SC_CLK_TCK);
    if (s->clk_tck <= 0)
        s->clk_tck = 100;
    if (!opts->no_tasks) {
        int r = procs_open(&s->procs, opts->threads, err, errlen);
        if (r < 0) {
            sampler_close(s);
            return r;
        }
        s->ts_open_err = taskstats_open(&s->ts, s->ts_open_msg, sizeof(s->ts_open_msg));
        /* A process's open files change slowly: rescan each one every few seconds. */
        if (fdmap_new(&s->fdmap, s->proc_fd, s->sys_fd, FDMAP_RESCAN_S, 0) < 0)
            s->fdmap = NULL;
        else
            fdmap_set_idle_rescan(s->fdmap, FDMAP_IDLE_RESCAN_S);
        s->cg = cgroups_open(s->proc_fd, s->sys_fd, FDMAP_RESCAN_S);
    }
    /* The task iterator (source/taskiter.h) stands for /proc's per-task files and taskstats
     * where it loads; like the lens, not with --no-bpf nor for a fixture tree.
     * IOTRIAGE_TASKITER=0 turns it off alone (tests and benchmarks compare the two). */
    const char *ti_env = getenv("IOTRIAGE_TASKITER");
    if (!s->procs)
        s->tasks_msg[0] = '\0';             /* no tasks sampled: nothing to say */
    else if (opts->no_bpf)
        str_copy(s->tasks_msg, "off: --no-bpf", sizeof(s->tasks_msg));
    else if (opts->proc_root || opts->sys_root)
        str_copy(s->tasks_msg, "off: not the live /proc and /sys", sizeof(s->tasks_msg));
    else if (ti_env && strcmp(ti_env, "0") == 0)
        str_copy(s->tasks_msg, "off: IOTRIAGE_TASKITER=0", sizeof(s->tasks_msg));
    else {
        struct taskiter *ti;
        char why[128];
        if (taskiter_open(&ti, s->proc_fd, why, sizeof(why)) == 0) {
            /* -p: a run over the chosen processes' tasks alone where the kernel binds
             * the iterator to a process (6.1+); else over every task, as /proc's list.
             * A link binds a thread group: a thread id (-P -p TID) binds its process. */
            pid_t *groups = xcalloc(s->opts.npids ? s->opts.npids : 1, sizeof(pid_t));
            for (size_t i = 0; i < s->opts.npids; i++) {
                pid_t g = procs_tgid_of(s->proc_fd, s->pids[i]);
                groups[i] = g > 0 ? g : s->pids[i];
            }
            taskiter_only(ti, groups, s->opts.npids);
            free(groups);
            procs_set_taskiter(s->procs, ti);
            /* The open files of every process in one pass where many are to be scanned
             * (fdmap.h: fdmap_set_bulk); IOTRIAGE_FILEITER=0 leaves them to /proc. */
            const char *fi_env = getenv("IOTRIAGE_FILEITER");
            if (s->fdmap && taskiter_has_files(ti) && !(fi_env && strcmp(fi_env, "0") == 0))
                fdmap_set_bulk(s->fdmap, bulk_files, ti, FDMAP_BULK_AFTER);
            /* A first frame's run leaves idle processes' command lines to the second
             * (their names meanwhile), as it leaves their open-file scans. */
            if (opts->defer_idle_scans)
                procs_defer_idle_cmdlines(s->procs);
        }
        else
            snprintf(s->tasks_msg, sizeof(s->tasks_msg), "off: %s", why);
    }
    /* The lens is part of the live machine: not loaded for a test's fixture tree. */
    if (opts->no_bpf)
        str_copy(s->lens_msg, "off: --no-bpf", sizeof(s->lens_msg));
    else if (opts->proc_root || opts->sys_root)
        str_copy(s->lens_msg, "off: not the live /proc and /sys", sizeof(s->lens_msg));
    else if (opts->defer_lens) {
        s->lens_deferred = true;
        str_copy(s->lens_msg, "loading", sizeof(s->lens_msg));
    } else {
        sampler_load_lens_now(s);
    }
    s->boot_delayacct = cmdline_has_delayacct(s->proc_fd);
    s->last_da = DA_UNKNOWN;
    s->da_since = s->boot_delayacct ? 0 : -1;
    *out = s;
    return 0;
}

void sampler_close(struct sampler *s)
{
    if (!s)
        return;
    procs_close(s->procs);
    fdmap_free(s->fdmap);
    cgroups_close(s->cg);
    lens_close(s->lens);
    free(s->subs_prev.subs);
    if (s->ts)
        taskstats_close(s->ts);
    if (s->proc_fd >= 0)
        close(s->proc_fd);
    if (s->sys_fd >= 0)
        close(s->sys_fd);
    for (size_t i = 0; i < s->ndevh; i++)
        blockdev_handle_free(s->devh[i].h);
    free(s->devh);
    free(s->fst);
    mounts_src_free(s->mnt);
    free(s->pids);
    free(s);
}

static void sys_note(struct sampler *s, struct snapshot *out);
static void proc_note(struct sampler *s, struct snapshot *out);
static void hidden_note(struct sampler *s, struct snapshot *out);

static void take_devices(struct sampler *s, struct snapshot *out)
{
    struct diskstats_row *rows = NULL;
    size_t n = 0;
    out->diskstats_err = diskstats_read(s->proc_fd, &rows, &n, &out->diskstats_bad);
    if (out->diskstats_err < 0)
        return;
    out->devs = xcalloc(n ? n : 1, sizeof(*out->devs));
    /* The handles follow the rows: taken over by name (diskstats keeps its order, so
     * the same index first), the rest closed. */
    struct dev_handle *devh = xcalloc(n ? n : 1, sizeof(*devh));
    for (size_t i = 0; i < n; i++) {
        str_copy(devh[i].name, rows[i].name, sizeof(devh[i].name));
        for (size_t j = 0; j < s->ndevh; j++) {
            size_t o = (i + j) % s->ndevh;
            if (s->devh[o].h && strcmp(s->devh[o].name, rows[i].name) == 0) {
                devh[i].h = s->devh[o].h;
                s->devh[o].h = NULL;
                break;
            }
        }
    }
    for (size_t j = 0; j < s->ndevh; j++)
        blockdev_handle_free(s->devh[j].h);
    free(s->devh);
    s->devh = devh;
    s->ndevh = n;
    int real_sysfs = -1;
    size_t k = 0, held = 0;
    for (size_t i = 0; i < n; i++)
        held += blockdev_handle_files(devh[i].h);
    for (size_t i = 0; i < n; i++) {
        struct dev_sample *d = &out->devs[k];
        d->ds = rows[i];
        size_t had = blockdev_handle_files(devh[i].h);   /* a handle opened anew counts again */
        d->bd_err = blockdev_refresh(s->sys_fd, rows[i].name, &devh[i].h,
                                     held - had + BD_HANDLE_FILES_MAX <= DEV_FILES_MAX, &d->bd);
        d->bd.sched_loadable = s->sched_mods;
        (void)blkstack_read(s->sys_fd, rows[i].name, &d->stack);
        held = held - had + blockdev_handle_files(devh[i].h);
        /* Listed by /proc/diskstats, unknown to sysfs a moment later: deleted between the
         * two reads (a partition deleted with BLKPG while we sample: 11 of 125 sightings of
         * a partition made and deleted back to back, at -d 0.05). Without its sysfs entry
         * it would pass for a whole disk of its own: leave it out, it is gone. Only on a
         * real sysfs (it has dev/block): a --sys-root tree for tests may hold fewer devices
         * than its diskstats lists, and those rows stay. */
        if (d->bd_err == -ENOENT) {
            if (real_sysfs < 0)
                real_sysfs = faccessat(s->sys_fd, "dev/block", F_OK, 0) == 0;
            if (real_sysfs)
                continue;
        }
        k++;
    }
    out->ndevs = k;
    sys_note(s, out);
    free(rows);
}

/* Say when sysfs failed to describe the devices: a JSON null or an empty SCHED column
 * means "no scheduler" only when sysfs was read and had none. */
static void sys_note(struct sampler *s, struct snapshot *out)
{
    out->sys_note[0] = '\0';
    size_t bad = 0, gone = 0;
    const struct dev_sample *first = NULL;
    for (size_t i = 0; i < out->ndevs; i++) {
        const struct dev_sample *d = &out->devs[i];
        /* the device's directory itself unreadable (EACCES...), or one of its attributes */
        if (((d->bd_err && d->bd_err != -ENOENT) || d->bd.attr_err) && !bad++)
            first = d;
        gone += d->bd_err == -ENOENT;
    }
    if (first) {
        bool dir = first->bd_err && first->bd_err != -ENOENT;
        snprintf(out->sys_note, sizeof(out->sys_note), NOTE_SYS_ATTR, first->ds.name,
                 dir ? "class/block entry" : first->bd.attr_err_name,
                 strerror(dir ? -first->bd_err : -first->bd.attr_err), bad - 1);
    } else if (out->ndevs && gone == out->ndevs && faccessat(s->sys_fd, "class/block", F_OK, 0) != 0) {
        snprintf(out->sys_note, sizeof(out->sys_note), NOTE_SYS_EMPTY, strerror(errno));
    }
}

/* A procfs without its system files (mounted subset=pid) answers ENOENT for diskstats,
 * pressure/ and sys/: absent from this mount, not from the kernel. Told by the files
 * every procfs of a full mount has (stat) while its processes are there (self). */
static void proc_note(struct sampler *s, struct snapshot *out)
{
    out->proc_note[0] = '\0';
    bool missing = out->diskstats_err == -ENOENT || out->delayacct == DA_UNKNOWN;
    for (int r = 0; r < PSI_NRES; r++)
        missing |= out->psi[r].err == -ENOENT;
    if (!missing || faccessat(s->proc_fd, "stat", F_OK, 0) == 0 || errno != ENOENT ||
        faccessat(s->proc_fd, "self", F_OK, 0) != 0)
        return;
    snprintf(out->proc_note, sizeof(out->proc_note), NOTE_PROC_SUBSET,
             s->opts.proc_root ? s->opts.proc_root : "/proc");
}

/* The hidepid= option of the procfs mounted at the proc root ("" when none or off), from
 * self/mountinfo: "ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTS [TAGS] - FSTYPE SOURCE SUPER".
 * The last mount on that point is the one seen. */
static void procfs_hidepid(struct sampler *s, char *out, size_t n)
{
    out[0] = '\0';
    char root[PATH_MAX], *text = NULL;
    if (!realpath(s->opts.proc_root ? s->opts.proc_root : "/proc", root) ||
        read_file_alloc_at(s->proc_fd, "self/mountinfo", &text, 1 << 22) <= 0) {
        free(text);
        return;
    }
    for (char *save = NULL, *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        char mnt[PATH_MAX], fstype[64], super[512];
        const char *dash = strstr(line, " - ");
        if (!dash || sscanf(line, "%*s %*s %*s %*s %4095s", mnt) != 1 ||
            sscanf(dash + 3, "%63s %*s %511s", fstype, super) != 2 ||
            strcmp(mnt, root) != 0 || strcmp(fstype, "proc") != 0)
            continue;
        out[0] = '\0';
        const char *h = strstr(super, "hidepid=");
        if (h) {
            size_t k = strcspn(h + 8, ",");
            if (k < n && strncmp(h + 8, "0", k) != 0 && strncmp(h + 8, "off", k) != 0) {
                memcpy(out, h + 8, k);
                out[k] = '\0';
            }
        }
    }
    free(text);
}

/* hidepid= hides other users' processes: from /proc/PID (hidepid=1, "noaccess": listed,
 * unreadable) or from the listing too (2, "invisible"). The list would look complete.
 * The kernel's task count (loadavg's 4th field, all threads) against the threads the
 * list holds says how many are missing; compared only under hidepid, where the gap is
 * not the few tasks that came and went between the two reads. */
static void hidden_note(struct sampler *s, struct snapshot *out)
{
    out->hidden_note[0] = '\0';
    if (s->opts.npids || !s->procs || out->procs_err)
        return;
    /* The gap first (a number read), the mount options only when there is one: the
     * mount table, read and parsed, was a twentieth of a refresh at 100 processes. */
    long total = read_loadavg_tasks_at(s->proc_fd, "loadavg");
    if (total < 0)
        return;
    long seen = 0;
    for (size_t i = 0; i < out->ntasks; i++)
        seen += out->tasks[i].nlwp > 0 ? out->tasks[i].nlwp : 1;
    long hidden = total - seen;
    /* We see through it (root, the gid= group): then the gap is only what started
     * between the two reads, a few tasks; hidden ones are most of a machine's. */
    if (hidden < 3 || hidden * 50 < total)
        return;
    char hp[32];
    procfs_hidepid(s, hp, sizeof(hp));
    if (!hp[0])
        return;
    snprintf(out->hidden_note, sizeof(out->hidden_note), NOTE_HIDEPID, hidden, total, hp, (unsigned)geteuid());
}

/* Seconds since boot, in clock ticks, from /proc/uptime (the clock start_time counts in). */
static long long boot_ticks_now(struct sampler *s)
{
    char buf[128];
    if (read_file_at(s->proc_fd, "uptime", buf, sizeof(buf)) <= 0)
        return -1;
    double up = strtod(buf, NULL);
    return (long long)(up * (double)s->clk_tck);
}

static void take_delayacct(struct sampler *s, struct snapshot *out)
{
    char buf[16];
    ssize_t l = read_file_at(s->proc_fd, "sys/kernel/task_delayacct", buf, sizeof(buf));
    if (l <= 0)
        out->delayacct = DA_UNKNOWN;
    else
        out->delayacct = buf[0] == '1' ? DA_ON : DA_OFF;
    /* Seen switching on while we watch: every task started from now on carries data. */
    if (out->delayacct == DA_ON && s->last_da == DA_OFF && !s->boot_delayacct)
        s->da_since = boot_ticks_now(s);
    if (out->delayacct == DA_OFF && !s->boot_delayacct)
        s->da_since = -1;
    s->last_da = out->delayacct;
    out->delayacct_since_ticks = s->da_since;
}

/* In chunks, so that the request and reply arrays stay small next to the task array
 * (64 bytes a task for the replies: 640 KB at 10,000 tasks otherwise). */

/* procs_read's taskstats: each chunk of listed tasks asked at once. A failure of the whole
 * query leaves that chunk without delays and is recorded; take_tasks then drops every
 * task's delays, as if all had been asked at once. */
struct stats_ctx {
    struct sampler *s;
    struct snapshot *out;
};

static void ask_stats(void *ctx, const pid_t *ids, size_t n, struct delay_sample *ds)
{
    struct stats_ctx *c = ctx;
    int rc = taskstats_query(c->s->ts, ids, n, !c->out->threads, ds, c->out->taskstats_msg,
                             sizeof(c->out->taskstats_msg));
    if (rc != 0) {
        memset(ds, 0, n * sizeof(*ds));
        if (!c->out->taskstats_err)
            c->out->taskstats_err = rc;
    }
}

/* -p ids that match no listed task: gone, or a thread's id without -P (snapshot.h). */
static void take_pids_missing(struct sampler *s, struct snapshot *out)
{
    out->npids_missing = 0;
    for (size_t k = 0; k < s->opts.npids && out->npids_missing < SNAP_PIDS_MISSING_MAX; k++) {
        pid_t id = s->opts.pids[k];
        bool found = false;
        for (size_t i = 0; i < out->ntasks && !found; i++)
            found = out->tasks[i].id == id || out->tasks[i].tgid == id;
        if (found)
            continue;
        struct pid_missing *m = &out->pids_missing[out->npids_missing++];
        m->id = id;
        pid_t tg = s->opts.threads ? 0 : procs_tgid_of(s->proc_fd, id);
        m->tgid = tg != id ? tg : 0;
    }
}

static void take_tasks(struct sampler *s, struct snapshot *out)
{
    struct stats_ctx c = { s, out };
    if (!s->ts) {
        out->taskstats_err = s->ts_open_err ? s->ts_open_err : -ENOSYS;
        str_copy(out->taskstats_msg, s->ts_open_msg, sizeof(out->taskstats_msg));
    }
    out->procs_err = procs_read(s->procs, s->proc_fd, s->opts.pids, s->opts.npids, s->ts ? ask_stats : NULL, &c,
                                &out->tasks, &out->ntasks);
    out->tasks_shared = true;
    if (procs_from_taskiter(s->procs)) {     /* its records carried the delays */
        out->taskstats_err = 0;
        out->taskstats_msg[0] = '\0';
        str_copy(out->tasks_from, "bpf", sizeof(out->tasks_from));
    } else {
        str_copy(out->tasks_from, "proc", sizeof(out->tasks_from));
        str_copy(out->tasks_msg, s->tasks_msg[0] ? s->tasks_msg : "off this sample: the iterator's run failed",
                 sizeof(out->tasks_msg));
    }
    if (out->taskstats_err)
        for (size_t i = 0; i < out->ntasks; i++) {
            memset(&out->tasks[i].delay, 0, sizeof(out->tasks[i].delay));
            out->tasks[i].delay_valid = false;
        }
    take_pids_missing(s, out);
}

/* Which tasks sleep in io_uring's completion wait now (source/threadstate.h: an
 * interruptible sleep the kernel counts as iowait): the wait channel of each task in S,
 * read only while the io pressure is up, since every task idle in a poll sleeps in S too.
 * With the lens, only of the tasks it has no wait row for: one asleep since before the
 * lens started (an idle service's single endless wait) is a switch it never saw. In
 * process mode the leader's (/proc/PID/wchan): a service whose waiting thread is not its
 * leader is seen in threads mode (-H), or by the lens once it waits again. */
static bool lens_has_row(const struct snapshot *out, const struct task_sample *t)
{
    const struct lens_reading *l = &out->lens;
    return out->threads ? lens_wait_find(l->tids, l->ntids, t->id) != NULL
                        : lens_wait_find(l->tgids, l->ntgids, t->id) != NULL;
}

static void read_async_wait(struct sampler *s, const struct snapshot *out, struct task_sample *t)
{
    char path[64], buf[128];
    if (out->threads)
        snprintf(path, sizeof(path), "%d/task/%d/wchan", (int)t->tgid, (int)t->id);
    else
        snprintf(path, sizeof(path), "%d/wchan", (int)t->id);
    ssize_t n = read_file_at(s->proc_fd, path, buf, sizeof(buf));
    if (n < 0)
        return;
    t->uring_read = true;
    t->uring_wait = n > 0 && taskstate_wchan_is_uring(buf, (size_t)n);
    t->aio_wait = n > 0 && taskstate_wchan_is_aio(buf, (size_t)n);
}

static unsigned take_uring_waits(struct sampler *s, struct snapshot *out)
{
    for (size_t i = 0; i < out->ntasks; i++)
        out->tasks[i].uring_read = out->tasks[i].uring_wait = out->tasks[i].aio_wait = false;
    const struct psi_sample *p = &out->psi[PSI_IO];
    if (p->err || !p->some.valid || !(p->some.avg10 >= URING_READ_PSI_MIN))
        return 0;
    unsigned reads = 0;
    for (size_t i = 0; i < out->ntasks && reads < URING_READS_MAX; i++) {
        struct task_sample *t = &out->tasks[i];
        if (t->state != 'S' || t->kthread || (out->lens_on && lens_has_row(out, t)))
            continue;
        reads++;
        read_async_wait(s, out, t);
    }
    return reads;
}

/* Does cgroup c, or one of its ancestors, limit a rate with io.max (v1: blkio.throttle)? */
static bool cg_limited(const struct cgroup_set *set, int c)
{
    for (; c >= 0; c = set->v[c].parent) {
        const struct cgroup_settings *st = &set->v[c].settings;
        if (st->iomax_err)
            continue;
        for (unsigned i = 0; i < st->iomax.n; i++) {
            const struct cg_limit_row *l = &st->iomax.row[i];
            if (l->rbps != CG_UNLIMITED || l->wbps != CG_UNLIMITED || l->riops != CG_UNLIMITED ||
                l->wiops != CG_UNLIMITED)
                return true;
        }
    }
    return false;
}

/* The tasks in S of cgroups held by io.max, whatever the io pressure (verdict.c
 * cg_limit_rule): an asynchronous reader held at its limit waits for completions, which
 * for libaio is no iowait at all, so neither PSI nor the delays see it. Each task once a
 * refresh (those read above are not read again), within the same URING_READS_MAX. */
static void take_limited_waits(struct sampler *s, struct snapshot *out, unsigned reads)
{
    const struct cgroup_set *set = out->cgroups;
    if (!set || set->err || !set->task_cg || set->ntasks != out->ntasks)
        return;
    for (size_t i = 0; i < out->ntasks && reads < URING_READS_MAX; i++) {
        struct task_sample *t = &out->tasks[i];
        if (t->state != 'S' || t->kthread || t->uring_read || set->task_cg[i] < 0 ||
            !cg_limited(set, set->task_cg[i]))
            continue;
        reads++;
        read_async_wait(s, out, t);
    }
}

struct task_hist task_hist_of(const struct task_sample *t)
{
    return (struct task_hist){
        .start_ticks = t->start_ticks,
        .read_bytes = t->io.read_bytes,
        .write_bytes = t->io.write_bytes,
        .cancelled_write_bytes = t->io.cancelled_write_bytes,
        .blkio_delay_ns = t->delay.blkio_delay_ns,
        .swapin_delay_ns = t->delay.swapin_delay_ns,
        .blkio_count = t->delay.blkio_count,
        .delay_at_s = t->delay.at_s,
        .id = t->id,
        .io_ok = t->io_err == 0,
        .delay_valid = t->delay_valid,
    };
}

void snapshot_reduce(struct snapshot *p)
{
    /* Tasks built elsewhere (a replay) are the caller's to keep whole. */
    if (!p->tasks || !p->tasks_shared)
        return;
    struct task_hist *h = xreallocarray(NULL, task_room(p->ntasks ? p->ntasks : 1), sizeof(*h));
    for (size_t i = 0; i < p->ntasks; i++) {
        h[i] = task_hist_of(&p->tasks[i]);
    }
    procs_release(p->tasks, p->ntasks);
    free(p->tdevs);
    free(p->lens_bps);
    p->lens_bps = NULL;
    free(p->lens_async);
    p->lens_async = NULL;
    p->nlens_bps = 0;
    free(p->lens_prio);
    p->lens_prio = NULL;
    p->nlens_prio = 0;
    p->hist = h;
    p->nhist = p->ntasks;
    p->tasks = NULL;
    p->tdevs = NULL;
    p->ntasks = 0;
}

/* Read before the tasks: a task listed has had its waits counted up to about now. */
/* The cgroups the lens's writeback rows name that hold no listed task (the writer
 * exited, or -p/-o left it out): named by id, so that writeback_by says whose it was. */
static void name_wb_cgroups(struct sampler *s, struct snapshot *out)
{
    uint64_t ids[CG_NAMED_MAX];
    size_t n = 0;
    for (size_t i = 0; i < out->lens.nwbs && n < CG_NAMED_MAX; i++) {
        const struct lens_wb_row *w = &out->lens.wbs[i];
        uint64_t id = w->blkcg ? w->blkcg : w->cgid;
        if (id && !cgroups_path_of(out->cgroups, id))
            ids[n++] = id;
    }
    cgroups_name_ids(s->cg, out->cgroups, ids, n);
}

static void take_lens(struct sampler *s, struct snapshot *out)
{
    if (!s->lens) {
        str_copy(out->lens_msg, s->lens_msg, sizeof(out->lens_msg));
        out->lens_pending = s->lens_deferred;
        return;
    }
    int rc = lens_read(s->lens, &out->lens);
    if (rc < 0) {
        snprintf(out->lens_msg, sizeof(out->lens_msg), "off this sample: reading the maps failed: %s",
                 strerror(-rc));
        return;
    }
    out->lens_on = true;
    str_copy(out->lens_loader, lens_loader(s->lens), sizeof(out->lens_loader));
}

void sampler_take(struct sampler *s, struct snapshot *out)
{
    memset(out, 0, sizeof(*out));
    out->threads = s->opts.threads;
    out->clk_tck = s->clk_tck;
    out->mono = clock_mono();
    out->wall = clock_wall();
    take_devices(s, out);
    for (int r = 0; r < PSI_NRES; r++)
        psi_read(s->proc_fd, (enum psi_resource)r, &out->psi[r]);
    if (!s->opts.proc_root)
        out->nswaps = (unsigned)swaps_read(s->proc_fd, out->swaps, SWAPS_MAX);
    take_delayacct(s, out);
    proc_note(s, out);
    take_lens(s, out);
    if (s->procs) {
        take_tasks(s, out);
        unsigned reads = take_uring_waits(s, out);
        take_task_devs(s, out);
        if (s->cg) {
            out->cgroups = cgroups_take(s->cg, out->mono, out->threads, out->tasks, out->ntasks);
            name_wb_cgroups(s, out);
            take_limited_waits(s, out, reads);
        }
    }
    hidden_note(s, out);
    take_filesystems(s, out);
    s->takes++;
}

void snapshot_free(struct snapshot *snap)
{
    free(snap->devs);
    if (snap->tasks_shared)
        procs_release(snap->tasks, snap->ntasks);
    else
        procs_free(snap->tasks, snap->ntasks);
    free(snap->tdevs);
    free(snap->lens_bps);
    free(snap->lens_async);
    free(snap->lens_prio);
    free(snap->hist);
    cgroups_free(snap->cgroups);
    fs_samples_free(snap->fss, snap->nfss);
    mountinfo_free(snap->netfs, snap->nnetfs);
    lens_reading_free(&snap->lens);
    memset(snap, 0, sizeof(*snap));
}

const struct dev_sample *snapshot_dev(const struct snapshot *snap, const char *name)
{
    for (size_t i = 0; i < snap->ndevs; i++)
        if (strcmp(snap->devs[i].ds.name, name) == 0)
            return &snap->devs[i];
    return NULL;
}

const struct blkstack *snapshot_dev_stack(const void *snap, const char *name)
{
    const struct dev_sample *d = snapshot_dev(snap, name);
    return d ? &d->stack : NULL;
}

const char *snapshot_stack_reach(const struct snapshot *snap, const char *top, const char *disk,
                                 unsigned *depth)
{
    struct blkstack_hop h[BLKSTACK_MAX_HOPS];
    size_t nh = blkstack_walk(snapshot_dev_stack, snap, top, true, h, BLKSTACK_MAX_HOPS, NULL);
    for (size_t i = 1; i < nh; i++) {
        const struct dev_sample *d = snapshot_dev(snap, h[i].name);
        if (strcmp(h[i].name, disk) == 0 || (d && d->bd.partition && strcmp(d->bd.disk, disk) == 0)) {
            *depth = h[i].depth;
            return d ? d->ds.name : h[i].name;
        }
    }
    return NULL;
}

size_t snapshot_disks_below(const struct snapshot *snap, const char *dev, const char **out, size_t max)
{
    struct blkstack_hop h[BLKSTACK_MAX_HOPS];
    size_t nh = blkstack_walk(snapshot_dev_stack, snap, dev, true, h, BLKSTACK_MAX_HOPS, NULL), n = 0;
    for (size_t i = 1; i < nh && n < max; i++) {
        const struct dev_sample *d = snapshot_dev(snap, h[i].name);
        if (d && d->bd.partition)
            d = snapshot_dev(snap, d->bd.disk);
        if (!d || d->bd.partition || d->bd.nsched == 0)
            continue;                /* a layer in between, or a device not listed */
        bool seen = false;
        for (size_t k = 0; k < n && !seen; k++)
            seen = strcmp(out[k], d->ds.name) == 0;
        if (!seen)
            out[n++] = d->ds.name;
    }
    return n;
}

bool snapshot_dev_is_layer(const struct snapshot *snap, const struct dev_sample *d)
{
    const char *below[1];
    return !d->bd.partition && d->bd.nsched == 0 && snapshot_disks_below(snap, d->ds.name, below, 1) > 0;
}

size_t snapshot_pid_note(char *buf, size_t n, const struct pid_missing *m)
{
    int w = m->tgid ? snprintf(buf, n, "-p %d: a thread of process %d: use -P, or -p %d", (int)m->id,
                               (int)m->tgid, (int)m->tgid)
                    : snprintf(buf, n, "-p %d: no such process", (int)m->id);
    return w < 0 ? 0 : (size_t)w < n ? (size_t)w : n ? n - 1 : 0;
}

bool snapshot_pid_note_parse(const char *text, struct pid_missing *m)
{
    int id, tg, tg2, end = 0;
    if (sscanf(text, "-p %d: a thread of process %d: use -P, or -p %d%n", &id, &tg, &tg2, &end) == 3 &&
        text[end] == '\0' && tg == tg2 && id > 0 && tg > 0) {
        *m = (struct pid_missing){ .id = id, .tgid = tg };
        return true;
    }
    end = 0;
    if (sscanf(text, "-p %d: no such process%n", &id, &end) == 1 && end && text[end] == '\0' && id > 0) {
        *m = (struct pid_missing){ .id = id, .tgid = 0 };
        return true;
    }
    return false;
}
