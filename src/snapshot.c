/* snapshot.c: assemble one immutable snapshot from every source. */
#include "snapshot.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "source/fdmap.h"
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
    size_t ndevh;
    struct snapshot *last;           /* the snapshot taken last, to reduce at the next take */
    unsigned long last_serial;
    const struct task_sample *last_tasks;
    struct lens *lens;               /* the BPF lens; NULL when off (lens_msg says why) */
    char lens_msg[160];
};

/* Serial numbers of snapshots, across samplers: a snapshot freed (zeroed) or filled again
 * by someone else no longer carries the one its sampler remembers. */
static unsigned long snapshot_serial;

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
    s->sys_fd = open_dir(sys);
    if (s->sys_fd < 0) {
        snprintf(err, errlen, "cannot open %s: %s", sys, strerror(-s->sys_fd));
        close(s->proc_fd);
        free(s->pids);
        free(s);
        return -EIO;
    }
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
    }
    /* The lens is part of the live machine: not loaded for a test's fixture tree. */
    if (opts->no_bpf)
        str_copy(s->lens_msg, "off: --no-bpf", sizeof(s->lens_msg));
    else if (opts->proc_root || opts->sys_root)
        str_copy(s->lens_msg, "off: not the live /proc and /sys", sizeof(s->lens_msg));
    else {
        char why[128];
        if (lens_open(&s->lens, why, sizeof(why)) < 0)
            snprintf(s->lens_msg, sizeof(s->lens_msg), "off: %s", why);
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
    lens_close(s->lens);
    if (s->ts)
        taskstats_close(s->ts);
    if (s->proc_fd >= 0)
        close(s->proc_fd);
    if (s->sys_fd >= 0)
        close(s->sys_fd);
    for (size_t i = 0; i < s->ndevh; i++)
        blockdev_handle_free(s->devh[i].h);
    free(s->devh);
    free(s->pids);
    free(s);
}

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
    free(rows);
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
    if (out->taskstats_err)
        for (size_t i = 0; i < out->ntasks; i++)
            memset(&out->tasks[i].delay, 0, sizeof(out->tasks[i].delay));
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
    size_t lo = 0, hi = out->ntasks;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (out->tasks[mid].id < t->tgid)
            lo = mid + 1;
        else
            hi = mid;
    }
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

/* Which devices each process does I/O to, from its open files (source/fdmap.h). */
static void take_task_devs(struct sampler *s, struct snapshot *out)
{
    if (!s->fdmap || out->ntasks == 0)
        return;
    struct group_sig *groups = NULL;
    size_t ngroups = 0;
    if (out->threads)
        group_sigs(out, &groups, &ngroups);
    out->tdevs = xcalloc(out->ntasks, sizeof(*out->tdevs));
    for (size_t i = 0; i < out->ntasks; i++) {
        const struct task_sample *t = &out->tasks[i];
        struct task_devs *td = &out->tdevs[i];
        td->known = true;
        if (t->kthread)
            continue;             /* no files of its own: an empty set, at no cost */
        bool known = t->io_err == 0;
        uint64_t sig = known ? io_sig(t) : 0;
        if (groups) {
            const struct group_sig *g = group_find(groups, ngroups, t->tgid);
            known = g->known;
            sig = g->sig;
        }
        struct fd_devs fd;
        fdmap_get_io(s->fdmap, t->tgid, process_start(out, t), out->mono, known, sig, &fd);
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
            td->idx[td->n++] = (uint16_t)idx;
        }
    }
    free(groups);
    fdmap_prune(s->fdmap, out->mono, 0);
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
        .delay_valid = t->delay.valid,
    };
}

/* The previous snapshot, once the next one is being taken: only what delta_compute reads
 * of it stays (snapshot.h). */
static void reduce_prev(struct snapshot *p)
{
    if (!p->tasks)
        return;
    struct task_hist *h = xreallocarray(NULL, p->ntasks ? p->ntasks : 1, sizeof(*h));
    for (size_t i = 0; i < p->ntasks; i++) {
        h[i] = task_hist_of(&p->tasks[i]);
    }
    procs_release(p->tasks, p->ntasks);
    free(p->tdevs);
    p->hist = h;
    p->nhist = p->ntasks;
    p->tasks = NULL;
    p->tdevs = NULL;
    p->ntasks = 0;
}

/* Read before the tasks: a task listed has had its waits counted up to about now. */
static void take_lens(struct sampler *s, struct snapshot *out)
{
    if (!s->lens) {
        str_copy(out->lens_msg, s->lens_msg, sizeof(out->lens_msg));
        return;
    }
    int rc = lens_read(s->lens, &out->lens);
    if (rc < 0) {
        snprintf(out->lens_msg, sizeof(out->lens_msg), "off this sample: reading the maps failed: %s",
                 strerror(-rc));
        return;
    }
    out->lens_on = true;
}

void sampler_take(struct sampler *s, struct snapshot *out)
{
    /* Still the snapshot this sampler filled last (not freed, not filled again): the
     * caller keeps it only for the deltas. */
    if (s->last && s->last != out && s->last->serial == s->last_serial &&
        s->last->tasks == s->last_tasks && s->last->tasks_shared)
        reduce_prev(s->last);
    memset(out, 0, sizeof(*out));
    out->serial = ++snapshot_serial;
    out->threads = s->opts.threads;
    out->clk_tck = s->clk_tck;
    out->mono = clock_mono();
    out->wall = clock_wall();
    take_devices(s, out);
    for (int r = 0; r < PSI_NRES; r++)
        psi_read(s->proc_fd, (enum psi_resource)r, &out->psi[r]);
    take_delayacct(s, out);
    take_lens(s, out);
    if (s->procs) {
        take_tasks(s, out);
        take_task_devs(s, out);
    }
    s->last = out;
    s->last_serial = out->serial;
    s->last_tasks = out->tasks;
}

void snapshot_free(struct snapshot *snap)
{
    free(snap->devs);
    if (snap->tasks_shared)
        procs_release(snap->tasks, snap->ntasks);
    else
        procs_free(snap->tasks, snap->ntasks);
    free(snap->tdevs);
    free(snap->hist);
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
