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

struct sampler {
    struct sampler_opts opts;
    pid_t *pids;
    int proc_fd, sys_fd;
    struct procs_src *procs;
    struct taskstats_src *ts;
    struct fdmap *fdmap;
    int ts_open_err;
    char ts_open_msg[192];
    enum delayacct_state last_da;
    bool boot_delayacct;             /* "delayacct" on the kernel command line */
    long long da_since;              /* see snapshot.delayacct_since_ticks */
    long clk_tck;
    struct dev_handle *devh;         /* each listed device's open sysfs files, in the order
                                      * /proc/diskstats listed them last */
    unsigned sched_mods;             /* blockdev_sched_modules of the running kernel; 0
                                      * with --sys-root (the tree is not this kernel's) */
    size_t ndevh;
    struct cgroup_src *cg;           /* task -> cgroup on the fd rescan cadence (cgroups.h) */
    struct mounts_src *mnt;          /* the mount table, read again when it changes */
    struct fs_track *fst;            /* per filesystem, its used-bytes history */
    size_t nfst;
    struct lens *lens;               /* the BPF lens; NULL when off (lens_msg says why) */
    bool lens_deferred;              /* to be loaded by sampler_load_lens */
    char tasks_msg[160];             /* why the task iterator is off; "" when it loaded */
    char lens_msg[160];
    unsigned long takes;             /* snapshots taken: the first one scans no fds */
    /* The lens's submitted bytes at the previous snapshot (sorted; lens_submit_cmp), for
     * each process's devices over the interval; have_subs false before the first. */
    struct lens_reading subs_prev;
    bool have_subs;
};

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

/* Which tasks sleep in io_uring's completion wait now (source/taskstate.h: an
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

/* Index of the device major:minor in the snapshot, or -1. */
static int dev_index(const struct snapshot *snap, dev_t dev)
{
    for (size_t i = 0; i < snap->ndevs; i++)
        if (snap->devs[i].ds.major == major(dev) && snap->devs[i].ds.minor == minor(dev))
            return (int)i;
    return -1;
}

/* The start time of thread t's process: its leader's entry, when listed. */
static unsigned long long process_start(const struct snapshot *out, const struct task_sample *t)
{
    if (!out->threads || t->id == t->tgid)
        return t->start_ticks;
    size_t lo = LOWER_BOUND_ID(out->tasks, out->ntasks, id, t->tgid);
    return lo < out->ntasks && out->tasks[lo].id == t->tgid ? out->tasks[lo].start_ticks : t->start_ticks;
}

static uint64_t mix64(uint64_t x)
{
    x ^= x >> 30;                    /* splitmix64's finalizer */
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

/* A value that changes whenever one of the task's I/O counters does. */
static uint64_t io_sig(const struct task_sample *t)
{
    const struct task_io *io = &t->io;      /* other_sig: rchar, wchar, syscr, syscw */
    const uint64_t v[] = { io->other_sig, io->read_bytes, io->write_bytes,
                           io->cancelled_write_bytes };
    uint64_t h = mix64((uint64_t)(uint32_t)t->id);
    for (size_t i = 0; i < ARRAY_SIZE(v); i++)
        h = mix64(h ^ v[i]);
    return h;
}

/* Threads: the signature of each thread's process, the sum of its threads' (any thread's
 * counter moving, or a thread coming or going, changes it); sig_known false when one of
 * them could not be read. An open-addressing table on tgid. */
struct group_sig {
    pid_t tgid;
    pid_t live_tid;                  /* its leader's row's task_sample.live_tid */
    bool known;
    uint64_t sig;
};

static void group_sigs(const struct snapshot *out, struct group_sig **tab, size_t *nslots)
{
    size_t n = 64;
    while (n < 2 * out->ntasks)
        n *= 2;
    struct group_sig *g = xcalloc(n, sizeof(*g));
    for (size_t i = 0; i < out->ntasks; i++) {
        const struct task_sample *t = &out->tasks[i];
        size_t h = (size_t)mix64((uint64_t)(uint32_t)t->tgid) & (n - 1);
        while (g[h].tgid && g[h].tgid != t->tgid)
            h = (h + 1) & (n - 1);
        if (!g[h].tgid) {
            g[h].tgid = t->tgid;
            g[h].known = true;
        }
        if (t->io_err)
            g[h].known = false;
        else
            g[h].sig += io_sig(t);
        if (t->live_tid)
            g[h].live_tid = t->live_tid;
    }
    *tab = g;
    *nslots = n;
}

static const struct group_sig *group_find(const struct group_sig *g, size_t n, pid_t tgid)
{
    size_t h = (size_t)mix64((uint64_t)(uint32_t)tgid) & (n - 1);
    while (g[h].tgid && g[h].tgid != tgid)
        h = (h + 1) & (n - 1);
    return &g[h];
}

/* The first snapshot leaves out the scans of the processes that never moved a byte to or
 * from a disk (read, write and cancelled bytes all 0 in their io file: most idle ones):
 * the scans are about a quarter of that snapshot (docs/performance.md), which the first
 * screen waits for, and such a process has no rate or verdict yet for its devices to
 * matter to. Their set is pending: not known and no error, so unknown in every output
 * ("..": on the first screen); the next snapshot scans them (fdmap has no answer for
 * them yet). In threads mode a thread's counters say nothing of its siblings': no
 * scan is left out there. */
static bool scan_deferred(const struct sampler *s, const struct snapshot *out,
                          const struct task_sample *t)
{
    return s->opts.defer_idle_scans && s->takes == 0 && !out->threads && task_disk_idle(t);
}


static int disk_index_of(const struct sampler *s, const struct snapshot *snap, int idx);

const char *task_devs_source(const struct task_devs *td)
{
    if (!td || !td->known || td->err || td->n == 0)
        return NULL;
    uint16_t all = (uint16_t)((1u << td->n) - 1);
    if ((td->from_lens & all) == 0)
        return "files";
    if ((td->from_files & all) == 0)
        return "lens";
    return "both";
}

double task_lens_bps(const struct snapshot *s, const struct task_devs *td, unsigned k)
{
    if (!td->lens_row || td->lens_row > s->nlens_bps || k >= TASK_DEVS_MAX)
        return 0;
    return s->lens_bps[td->lens_row - 1][k];
}

double *task_lens_row(struct snapshot *s, struct task_devs *td)
{
    if (!td->lens_row) {
        /* Grown by doubling: few tasks submit in an interval. */
        if ((s->nlens_bps & (s->nlens_bps - 1)) == 0)
            s->lens_bps = xreallocarray(s->lens_bps, s->nlens_bps ? 2 * s->nlens_bps : 8,
                                        sizeof(*s->lens_bps));
        memset(s->lens_bps[s->nlens_bps], 0, sizeof(s->lens_bps[0]));
        td->lens_row = (uint32_t)++s->nlens_bps;
    }
    return s->lens_bps[td->lens_row - 1];
}

/* The devices the lens saw process t submit bios to over the interval, added to its set
 * (partitions and stacked devices as the disk whose scheduler meets them, as for open
 * files). Open files miss a filesystem with an anonymous st_dev (btrfs, overlayfs), reads
 * through a memory map, and hold a device a process opened but does not use; the lens
 * sees what was submitted. Processes only: the lens counts by thread group. */
static void task_devs_lens(const struct sampler *s, struct snapshot *out,
                           const struct task_sample *t, struct task_devs *td)
{
    double itv = out->lens.mono - s->subs_prev.mono;
    if (!out->lens_on || !s->have_subs || out->threads || itv <= 0)
        return;
    /* With the duty cycle (lens.h), the bios of its windows: scaled to the interval, an
     * estimate (docs/json.md lens_bytes) */
    double duty = lens_duty(&s->subs_prev, &out->lens);
    if (duty > 0 && duty < 1)
        itv *= duty;
    td->lens = true;
    struct lens_submit_row rows[TASK_DEVS_MAX];
    size_t n = lens_submit_interval(&s->subs_prev, &out->lens, t->tgid, rows, TASK_DEVS_MAX);
    for (size_t i = 0; i < n && i < TASK_DEVS_MAX; i++) {
        int sub = dev_index(out, makedev(rows[i].major, rows[i].minor));
        int idx = disk_index_of(s, out, sub);
        if (idx < 0)
            continue;
        unsigned k = 0;
        while (k < td->n && td->idx[k] != idx)
            k++;
        if (k == td->n) {
            if (td->n >= TASK_DEVS_MAX) {
                td->truncated = true;
                continue;
            }
            td->idx[td->n++] = (uint16_t)idx;
        }
        td->from_lens |= (uint16_t)(1u << k);
        /* submitted to a stacked device above the disk: the top of its path */
        if (sub != idx && !out->devs[sub].bd.partition && !(td->via >> k & 1) &&
            (!td->via_top || td->via_top == sub + 1)) {
            td->via_top = (uint16_t)(sub + 1);
            td->via |= (uint16_t)(1u << k);
        }
        task_lens_row(out, td)[k] += (double)rows[i].bytes / itv;
    }
    if (n > TASK_DEVS_MAX)
        td->truncated = true;
}

/* Remember this reading's submitted bytes for the next interval. */
static void subs_keep(struct sampler *s, const struct snapshot *out)
{
    if (!out->lens_on) {
        s->have_subs = false;
        return;
    }
    struct lens_submit_row *p = NULL;
    if (out->lens.nsubs && !(p = malloc(out->lens.nsubs * sizeof(*p)))) {
        s->have_subs = false;
        return;
    }
    if (p)
        memcpy(p, out->lens.subs, out->lens.nsubs * sizeof(*p));
    free(s->subs_prev.subs);
    s->subs_prev.subs = p;
    s->subs_prev.nsubs = out->lens.nsubs;
    s->subs_prev.mono = out->lens.mono;
    s->subs_prev.since = out->lens.since;
    s->subs_prev.detached_s = out->lens.detached_s;
    s->have_subs = true;
}

/* Which devices each process does I/O to, from its open files (source/fdmap.h) and, when
 * the lens runs, from the bios it submitted. */
static void take_task_devs(struct sampler *s, struct snapshot *out)
{
    if (!s->fdmap || out->ntasks == 0)
        return;
    struct group_sig *groups = NULL;
    size_t ngroups = 0;
    if (out->threads)
        group_sigs(out, &groups, &ngroups);
    out->tdevs = xcalloc(task_room(out->ntasks), sizeof(*out->tdevs));
    fdmap_reserve(s->fdmap, groups ? ngroups : out->ntasks);   /* kernel threads included */
    fdmap_begin_refresh(s->fdmap);
    for (size_t i = 0; i < out->ntasks; i++) {
        const struct task_sample *t = &out->tasks[i];
        struct task_devs *td = &out->tdevs[i];
        td->known = true;
        if (t->kthread)
            continue;             /* no files of its own: an empty set, at no cost */
        if (scan_deferred(s, out, t)) {
            td->known = false;
            continue;
        }
        bool known = t->io_err == 0;
        uint64_t sig = known ? io_sig(t) : 0;
        pid_t live = t->live_tid;    /* the leader exited: a live thread's open files */
        if (groups) {
            const struct group_sig *g = group_find(groups, ngroups, t->tgid);
            known = g->known;
            sig = g->sig;
            live = g->live_tid;
        }
        struct fd_devs fd;
        fdmap_get_io(s->fdmap, t->tgid, live, process_start(out, t), out->mono, known, sig, &fd);
        td->err = fd.err;
        td->truncated = fd.truncated;
        td->buffered_writer = fd.buffered_writer;
        for (unsigned k = 0; k < fd.ndevs && td->n < TASK_DEVS_MAX; k++) {
            int idx = dev_index(out, fd.devs[k]);
            if (idx < 0)
                continue;
            for (unsigned b = 0; b < fd.nbuffered; b++)
                if (fd.buffered_devs[b] == fd.devs[k])
                    td->buffered |= (uint16_t)(1u << td->n);
            td->from_files |= (uint16_t)(1u << td->n);
            for (unsigned v = 0; v < fd.nvia; v++) {
                int top = fd.via_disk[v] == fd.devs[k] ? dev_index(out, fd.via_top[v]) : -1;
                if (top >= 0 && (!td->via_top || td->via_top == top + 1)) {
                    td->via_top = (uint16_t)(top + 1);
                    td->via |= (uint16_t)(1u << td->n);
                }
            }
            td->idx[td->n++] = (uint16_t)idx;
        }
        task_devs_lens(s, out, t, td);
    }
    free(groups);
    fdmap_prune(s->fdmap, out->mono, 0);
    subs_keep(s, out);
}

/* ---- Filesystems ---------------------------------------------------------------------- */

/* What the sampler remembers of a filesystem between snapshots. */
struct fs_track {
    dev_t dev;
    unsigned n;
    double mono[FS_HIST];
    uint64_t used[FS_HIST];
};

static int dev_index_of(const struct snapshot *snap, dev_t dev)
{
    return dev ? dev_index(snap, dev) : -1;
}

/* The device whose scheduler the filesystem's I/O meets: a partition's disk; the device
 * itself when it has a scheduler (a disk, a loop device, request-based dm); for a
 * bio-based dm or md device, the first queue-owning device below it (source/fdmap.h:
 * fdmap_resolve, a few sysfs reads, only for those). */
static int disk_index_of(const struct sampler *s, const struct snapshot *snap, int idx)
{
    if (idx < 0)
        return -1;
    const struct dev_sample *d = &snap->devs[idx];
    if (d->bd.partition) {
        const struct dev_sample *disk = d->bd.disk[0] ? snapshot_dev(snap, d->bd.disk) : NULL;
        return disk ? (int)(disk - snap->devs) : -1;
    }
    if (d->bd.scheduler[0])
        return idx;
    dev_t below[FDMAP_MAX_DEVS];
    int n = fdmap_resolve(s->sys_fd, makedev(d->ds.major, d->ds.minor), below, FDMAP_MAX_DEVS, NULL);
    for (int i = 0; i < n; i++) {
        int k = dev_index(snap, below[i]);
        if (k >= 0)
            return k;
    }
    return -1;
}

/* Append this snapshot's used bytes to the filesystem's history; carry it into fs. */
static void fs_history(struct sampler *s, struct fs_track *old, size_t nold, struct fs_sample *fs,
                       double mono)
{
    struct fs_track t = { .dev = fs->fs.m.dev };
    for (size_t i = 0; i < nold; i++)
        if (old[i].dev == t.dev) {
            t = old[i];
            break;
        }
    if (fs->fs.statfs_err) {
        t.n = 0;                     /* no figure: the history starts again */
    } else {
        if (t.n == FS_HIST) {
            memmove(t.mono, t.mono + 1, (FS_HIST - 1) * sizeof(t.mono[0]));
            memmove(t.used, t.used + 1, (FS_HIST - 1) * sizeof(t.used[0]));
            t.n--;
        }
        t.mono[t.n] = mono;
        t.used[t.n] = fs->fs.used;
        t.n++;
    }
    fs->nhist = t.n;
    memcpy(fs->hist_mono, t.mono, sizeof(t.mono));
    memcpy(fs->hist_used, t.used, sizeof(t.used));
    s->fst[s->nfst++] = t;
}

static int cmp_deleted_ent(const void *a, const void *b)
{
    const struct fd_deleted *x = *(const struct fd_deleted *const *)a;
    const struct fd_deleted *y = *(const struct fd_deleted *const *)b;
    if (x->dev != y->dev)
        return x->dev < y->dev ? -1 : 1;
    if (x->ino != y->ino)
        return x->ino < y->ino ? -1 : 1;
    if (x->tgid != y->tgid)
        return x->tgid < y->tgid ? -1 : 1;
    return x->fd < y->fd ? -1 : x->fd > y->fd;
}

static int cmp_deleted_file(const void *a, const void *b)
{
    const struct fs_deleted_file *x = a, *y = b;
    if (x->blocks_bytes != y->blocks_bytes)
        return x->blocks_bytes > y->blocks_bytes ? -1 : 1;
    return x->ino < y->ino ? -1 : x->ino > y->ino;
}

static const struct task_sample *task_by_id(const struct snapshot *out, pid_t id)
{
    size_t lo = LOWER_BOUND_ID(out->tasks, out->ntasks, id, id);
    return lo < out->ntasks && out->tasks[lo].id == id ? &out->tasks[lo] : NULL;
}

/* The open flags of fd of pid (fdinfo), 0 or -errno. */
static int fd_flags(int proc_fd, pid_t pid, int fd, unsigned *flags)
{
    char path[48], buf[256];
    snprintf(path, sizeof(path), "%d/fdinfo/%d", (int)pid, fd);
    ssize_t n = read_file_at(proc_fd, path, buf, sizeof(buf));
    if (n < 0)
        return (int)n;
    return fdinfo_parse_flags(buf, (size_t)n, flags);
}

/* The fd's name: readlink of /proc/PID/fd/FD ("... (deleted)"); NULL when closed. */
static char *fd_name(int proc_fd, pid_t pid, int fd)
{
    char path[48], name[PATH_MAX];
    snprintf(path, sizeof(path), "%d/fd/%d", (int)pid, fd);
    ssize_t n = readlinkat(proc_fd, path, name, sizeof(name) - 1);
    if (n < 0)
        return NULL;
    name[n] = '\0';
    return xstrdup(name);
}

/* Is fd of pid still the file (dev, ino), still without a name? Its size and blocks now.
 * One statx through the /proc link: the fd scan that found it may be seconds old. */
static bool deleted_recheck(int proc_fd, pid_t pid, int fd, dev_t dev, ino_t ino,
                            struct fs_deleted_file *f)
{
    char path[48];
    snprintf(path, sizeof(path), "%d/fd/%d", (int)pid, fd);
    struct statx stx;
    if (statx(proc_fd, path, AT_STATX_DONT_SYNC | AT_NO_AUTOMOUNT,
              STATX_TYPE | STATX_NLINK | STATX_INO | STATX_SIZE | STATX_BLOCKS, &stx) != 0)
        return false;
    if (makedev(stx.stx_dev_major, stx.stx_dev_minor) != dev || stx.stx_ino != ino ||
        !(stx.stx_mask & STATX_NLINK) || stx.stx_nlink != 0)
        return false;
    f->size = stx.stx_size;
    f->blocks_bytes = (stx.stx_mask & STATX_BLOCKS) ? stx.stx_blocks * 512 : stx.stx_size;
    return true;
}

/* The deleted-but-open files the fd scan noted, grouped by (dev, ino) onto the
 * filesystem holding them, each holder checked again now (a statx), with its open flags
 * (an fdinfo read) and the file's name (one readlink): about 10 us a holder a refresh,
 * only for files on a filesystem listed. */
static void take_deleted(struct sampler *s, struct snapshot *out)
{
    const struct fd_deleted *ents;
    size_t n = fdmap_deleted(s->fdmap, &ents);
    bool complete = s->opts.npids == 0;
    for (size_t i = 0; complete && out->tdevs && i < out->ntasks; i++)
        complete = out->tdevs[i].err != -EACCES && out->tdevs[i].err != -EPERM;
    for (size_t i = 0; i < out->nfss; i++) {
        out->fss[i].deleted_known = s->takes > 0 || !s->opts.defer_idle_scans;   /* scan_deferred */
        out->fss[i].deleted_complete = complete;
    }
    if (n == 0)
        return;
    const struct fd_deleted **ord = xcalloc(n, sizeof(*ord));
    for (size_t i = 0; i < n; i++)
        ord[i] = &ents[i];
    qsort(ord, n, sizeof(*ord), cmp_deleted_ent);
    for (size_t i = 0; i < n;) {
        size_t j = i;
        while (j < n && ord[j]->dev == ord[i]->dev && ord[j]->ino == ord[i]->ino)
            j++;
        struct fs_sample *fs = NULL;
        for (size_t k = 0; k < out->nfss && !fs; k++)
            if (out->fss[k].fs.m.dev == ord[i]->dev)
                fs = &out->fss[k];
        if (!fs) {                   /* a memfd, or on a filesystem not watched */
            i = j;
            continue;
        }
        struct fs_deleted_file f = { .dev = ord[i]->dev, .ino = ord[i]->ino };
        f.holders = xcalloc(j - i, sizeof(*f.holders));
        bool sized = false;
        for (size_t k = i; k < j; k++) {
            const struct fd_deleted *e = ord[k];
            struct fs_deleted_file now;
            if (!deleted_recheck(s->proc_fd, e->tgid, e->fd, e->dev, e->ino, &now))
                continue;            /* closed, or another file on that fd since the scan */
            if (!sized) {
                f.size = now.size;
                f.blocks_bytes = now.blocks_bytes;
                f.path = fd_name(s->proc_fd, e->tgid, e->fd);
                sized = true;
            }
            struct fs_holder *h = &f.holders[f.nholders++];
            h->pid = e->tgid;
            h->fd = e->fd;
            h->flags_known = fd_flags(s->proc_fd, e->tgid, e->fd, &h->flags) == 0;
            h->append = h->flags_known && (h->flags & O_APPEND);
            const struct task_sample *t = task_by_id(out, e->tgid);
            if (t) {
                str_copy(h->comm, t->comm, sizeof(h->comm));
                h->start_ticks = t->start_ticks;
            }
        }
        i = j;
        if (!f.nholders) {
            free(f.holders);
            continue;
        }
        fs->del = xreallocarray(fs->del, fs->ndel + 1, sizeof(*fs->del));
        fs->del[fs->ndel++] = f;
        fs->deleted_bytes += f.blocks_bytes;
    }
    free(ord);
    for (size_t k = 0; k < out->nfss; k++)
        if (out->fss[k].ndel > 1)
            qsort(out->fss[k].del, out->fss[k].ndel, sizeof(out->fss[k].del[0]), cmp_deleted_file);
}

static void take_filesystems(struct sampler *s, struct snapshot *out)
{
    struct fs_mount *mv;
    size_t n;
    out->fs_taken = true;
    out->mounts_err = mounts_src_read(s->mnt, &mv, &n);
    struct fs_track *old = s->fst;
    size_t nold = s->nfst;
    s->fst = xcalloc(n ? n : 1, sizeof(*s->fst));
    s->nfst = 0;
    if (out->mounts_err) {
        free(old);
        return;
    }
    out->fss = xcalloc(n ? n : 1, sizeof(*out->fss));
    out->nfss = n;
    for (size_t i = 0; i < n; i++) {
        struct fs_sample *fs = &out->fss[i];
        fs->fs = mv[i];
        fs->dev_idx = dev_index_of(out, mv[i].bdev);
        fs->disk_idx = disk_index_of(s, out, fs->dev_idx);
        fs_history(s, old, nold, fs, out->mono);
    }
    free(mv);                        /* the strings now belong to out->fss */
    free(old);
    if (s->fdmap)
        take_deleted(s, out);
}

void fs_samples_free(struct fs_sample *v, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        mount_entry_free(&v[i].fs.m);
        for (size_t k = 0; k < v[i].ndel; k++) {
            free(v[i].del[k].path);
            free(v[i].del[k].holders);
        }
        free(v[i].del);
    }
    free(v);
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
    p->nlens_bps = 0;
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
    free(snap->hist);
    cgroups_free(snap->cgroups);
    fs_samples_free(snap->fss, snap->nfss);
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
