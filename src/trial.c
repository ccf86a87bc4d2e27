/* SPDX-License-Identifier: GPL-2.0-or-later */
/* trial.c: `iotriage trial DEVICE SCHEDULER`: measure, switch, measure, keep or put back
 * (trial.h, act/trial.h, docs/trial.md). */
#include "trial.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "act/act.h"
#include "act/trial.h"
#include "pipeline.h"
#include "store/store.h"
#include "source/fdmap.h"
#include "util.h"
#include "util/escape.h"
#include "util/fmt.h"

static volatile sig_atomic_t trial_signal;

static void on_trial_signal(int sig)
{
    if (!trial_signal)
        trial_signal = sig;
}

struct topts {
    const char *dev, *to, *rule_text;
    long seconds, nr;
    int progress_fd;                 /* --progress-fd: one line a second and a phase; -1 none */
    bool yes, json, read_only, no_bpf;
    const char *replay;
};

static void trial_usage(FILE *f)
{
    fprintf(f,
            "Usage: iotriage trial DEVICE SCHEDULER [--seconds N] [--nr-requests N] [--keep-if RULE]\n"
            "                      [--yes] [--json]\n"
            "Measures DEVICE for N seconds under its scheduler, switches it to SCHEDULER, lets it\n"
            "settle %g s, measures N seconds again and compares, per I/O priority (the BPF lens's\n"
            "latency per priority; without the lens, the device's await): requests, throughput,\n"
            "p50 and p99, each change with its noise (a bootstrap interval over the seconds). Then\n"
            "keeps SCHEDULER or puts the old scheduler and nr_requests back, as RULE says. Killed\n"
            "or interrupted mid-trial, the device is put back (a guardian process outlives it).\n"
            "\n"
            "  --seconds N        seconds measured before and after (default %d, %d to %d)\n"
            "  --nr-requests N    nr_requests under SCHEDULER (default: the one the switch sets)\n"
            "  --keep-if RULE     when to keep SCHEDULER (default below; grammar: docs/trial.md)\n"
            "  --yes              do not ask (without it, asks on the terminal)\n"
            "  --json             the report as one JSON object (docs/trial.md)\n"
            "  --no-bpf           measure without the BPF lens (the device's await)\n"
            "  --progress-fd N    progress, one line a second and a phase, on descriptor N\n"
            "                     (docs/trial.md; the screen's t dialog reads it)\n"
            "  --read-only, --replay  refused, saying why: a trial changes a live device\n"
            "\n"
            "Default rule: keep when best-effort or realtime p50 or p99 falls beyond the noise,\n"
            "neither class's p99 rises beyond it, and total throughput falls by less than 10 %%;\n"
            "the idle class's slow-down does not count against it:\n"
            "  %s\n"
            "Exit status: 0 kept, 3 put back by the rule, 1 not run or interrupted (put back),\n"
            "2 a bad command line or a refusal.\n",
            TRIAL_SETTLE_S, TRIAL_SECONDS_DEFAULT, TRIAL_SECONDS_MIN, TRIAL_SECONDS_MAX, TRIAL_RULE_DEFAULT);
}

#define refuse(...) exit_usage("iotriage trial", false, __VA_ARGS__)

static long num_arg(const char *s, const char *opt, long lo, long hi)
{
    long v;
    if (parse_long_in(s, lo, hi, &v) < 0)
        refuse("invalid value '%s' for %s (%ld to %ld) (try --help)", s, opt, lo, hi);
    return v;
}

static void parse(int argc, char **argv, struct topts *o)
{
    enum { O_SECONDS = 256, O_NR, O_KEEP, O_YES, O_JSON, O_RO, O_REPLAY, O_NO_BPF, O_PROGRESS };
    static const struct option longopts[] = {
        { "seconds", required_argument, NULL, O_SECONDS },
        { "nr-requests", required_argument, NULL, O_NR },
        { "keep-if", required_argument, NULL, O_KEEP },
        { "yes", no_argument, NULL, O_YES },
        { "json", no_argument, NULL, O_JSON },
        { "read-only", no_argument, NULL, O_RO },
        { "replay", required_argument, NULL, O_REPLAY },
        { "no-bpf", no_argument, NULL, O_NO_BPF },
        { "progress-fd", required_argument, NULL, O_PROGRESS },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    memset(o, 0, sizeof(*o));
    o->seconds = TRIAL_SECONDS_DEFAULT;
    o->rule_text = TRIAL_RULE_DEFAULT;
    o->progress_fd = -1;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
        switch (c) {
        case O_SECONDS: o->seconds = num_arg(optarg, "--seconds", TRIAL_SECONDS_MIN, TRIAL_SECONDS_MAX); break;
        case O_NR: o->nr = num_arg(optarg, "--nr-requests", 4, 1000000); break;
        case O_KEEP: o->rule_text = optarg; break;
        case O_YES: o->yes = true; break;
        case O_JSON: o->json = true; break;
        case O_RO: o->read_only = true; break;
        case O_REPLAY: o->replay = optarg; break;
        case O_NO_BPF: o->no_bpf = true; break;
        case O_PROGRESS:
            o->progress_fd = (int)num_arg(optarg, "--progress-fd", 3, 1023);
            if (fcntl(o->progress_fd, F_GETFD) < 0)
                refuse("--progress-fd %d: not an open descriptor", o->progress_fd);
            break;
        case 'h': trial_usage(stdout); exit(0);
        case ':': refuse("option %s needs a value (try --help)", argv[optind - 1]);
        default: refuse("unknown trial option %s (try --help)", argv[optind - 1]);
        }
    }
    if (argc - optind != 2)
        refuse("give a DEVICE and a SCHEDULER: iotriage trial sdb mq-deadline (try --help)");
    o->dev = argv[optind];
    o->to = argv[optind + 1];
}

/* ---- what may be tried ---- */

/* The disks with a scheduler below a bio-based device, as "sdb, sdc" (dm, md, multipath). */
static void disks_below(int sys_fd, const char *dev, char *buf, size_t n)
{
    buf[0] = '\0';
    char path[BD_NAME_MAX + 32], txt[32];
    snprintf(path, sizeof(path), "class/block/%s/dev", dev);
    unsigned maj, min;
    if (read_file_at(sys_fd, path, txt, sizeof(txt)) <= 0 || parse_majmin(txt, strlen(txt), &maj, &min) < 0)
        return;
    dev_t below[16];
    int k = fdmap_resolve(sys_fd, makedev(maj, min), below, 16, NULL);
    for (int i = 0; i < k; i++) {
        char link[64], target[256];
        snprintf(link, sizeof(link), "dev/block/%u:%u", major(below[i]), minor(below[i]));
        ssize_t len = readlinkat(sys_fd, link, target, sizeof(target) - 1);
        if (len <= 0)
            continue;
        target[len] = '\0';
        const char *name = strrchr(target, '/');
        name = name ? name + 1 : target;
        size_t used = strlen(buf);
        if (used + strlen(name) + 3 > n)
            break;
        if (used)
            strcat(buf, ", ");
        strcat(buf, name);
    }
}

static bool offered(const struct sched_state *s, const char *name)
{
    for (unsigned i = 0; i < s->nsched; i++)
        if (strcmp(s->list[i], name) == 0)
            return true;
    return false;
}

static bool loadable(const char *name)
{
    struct utsname u;
    if (uname(&u) < 0)
        return false;
    char mdir[64 + sizeof(u.release)];
    snprintf(mdir, sizeof(mdir), "/lib/modules/%s", u.release);
    unsigned m = blockdev_sched_modules(mdir);
    return (strcmp(name, "bfq") == 0 && (m & BD_LOAD_BFQ)) ||
           (strcmp(name, "mq-deadline") == 0 && (m & BD_LOAD_DEADLINE)) ||
           (strcmp(name, "kyber") == 0 && (m & BD_LOAD_KYBER));
}

static void list_text(const struct sched_state *s, char *buf, size_t n)
{
    buf[0] = '\0';
    for (unsigned i = 0; i < s->nsched; i++) {
        size_t used = strlen(buf);
        snprintf(buf + used, n - used, "%s%s", i ? ", " : "", s->list[i]);
    }
}

/* Everything that makes the trial impossible, refused before anything starts. */
static void check(const struct topts *o, char *disk, size_t disklen, struct sched_state *orig)
{
    if (act_built_read_only())
        refuse("this iotriage was built read-only (READ_ONLY=1): it changes no scheduler");
    if (o->read_only)
        refuse("--read-only: a trial switches the scheduler, which read-only mode forbids");
    if (o->replay)
        refuse("a replay shows a recording: there is no device to try a scheduler on (run the trial on the machine)");
    char dev[BD_NAME_MAX];
    esc_display(dev, sizeof(dev), o->dev, strlen(o->dev), false);
    if (!o->dev[0] || strchr(o->dev, '/') || strcmp(o->dev, ".") == 0 || strcmp(o->dev, "..") == 0 ||
        strlen(o->dev) >= BD_NAME_MAX)
        refuse("'%s' is no block device name (sda, nvme0n1, loop3: a name under /sys/class/block)", dev);
    int sys_fd = open("/sys", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (sys_fd < 0)
        refuse("cannot open /sys: %s", strerror(errno));
    struct blockdev_info b;
    int rc = blockdev_read(sys_fd, o->dev, &b);
    if (rc < 0)
        refuse("no block device %s: %s", dev, strerror(-rc));
    if (b.partition)
        refuse("%s is a partition: its scheduler is its disk's; try iotriage trial %s %s", dev, b.disk, o->to);
    if (!b.has_queue || b.nsched == 0) {
        char below[256];
        disks_below(sys_fd, o->dev, below, sizeof(below));
        close(sys_fd);
        if (below[0])
            refuse("%s is bio-based and has no I/O scheduler; the disks below it have one: %s", dev, below);
        refuse("%s is bio-based and has no I/O scheduler, nor a disk below it that has one", dev);
    }
    close(sys_fd);
    str_copy(disk, b.disk, disklen);
    rc = sched_read(NULL, disk, orig);
    if (rc < 0)
        refuse("cannot read %s's queue: %s", dev, strerror(-rc));
    char to[BD_SCHED_MAX * 2], list[BD_NSCHED * BD_SCHED_MAX];
    esc_display(to, sizeof(to), o->to, strlen(o->to), false);
    list_text(orig, list, sizeof(list));
    if (strcmp(o->to, orig->sched) == 0)
        refuse("%s already uses %s: nothing to try", dev, to);
    if (!offered(orig, o->to) && !loadable(o->to))
        refuse("%s offers %s, and this kernel has no module for %s", dev, list, to);
    if (o->nr > 0 && !sched_nr_requests_valid(o->to, o->nr, orig->queue_depth))
        refuse("nr_requests %ld cannot be set under %s (%s)", o->nr, to,
               strcmp(o->to, "none") == 0 ? "at most the hardware queue depth" : "4 to 2048");
    char path[BD_NAME_MAX + 48];
    snprintf(path, sizeof(path), "/sys/class/block/%s/queue/scheduler", disk);
    if (faccessat(AT_FDCWD, path, W_OK, AT_EACCESS) < 0)
        refuse("%s cannot be written by this user (%s): a trial switches the scheduler, which needs root",
               path, strerror(errno));
}

/* ---- measuring ---- */

struct run {
    const struct topts *o;
    char disk[BD_NAME_MAX];
    struct sched_state orig;
    struct pipeline *p;
    char lens_note[200];             /* why the lens is off: "" when on */
    struct trial_phase before, after;
    char failure[400];
};

static void sleep_to(double deadline)
{
    struct timespec ts = { .tv_sec = (time_t)deadline };
    ts.tv_nsec = (long)((deadline - (double)ts.tv_sec) * 1e9);
    while (!trial_signal && clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
        ;
}

/* A line of progress on --progress-fd (docs/trial.md): "PHASE REMAINING TOTAL" for the
 * phases measured, "PHASE" for the others, "done STATUS DECISION" last. A reader gone
 * (EPIPE, SIGPIPE ignored) does not stop the trial. */
static void progress(const struct topts *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void progress(const struct topts *o, const char *fmt, ...)
{
    if (o->progress_fd < 0)
        return;
    char line[2048];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof(line) - 1, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if ((size_t)n > sizeof(line) - 2)
        n = (int)sizeof(line) - 2;
    line[n++] = '\n';
    if (write(o->progress_fd, line, (size_t)n) < 0)
        return;                      /* the reader went away: the trial goes on */
}

/* One refresh; the disk's second into *s. 0, -EINTR on a signal, -ENODEV when the disk is
 * gone or re-registered. */
static int take_second(struct run *r, double *next, struct trial_second *s)
{
    *next += 1.0;
    sleep_to(*next);
    if (trial_signal)
        return -EINTR;
    char err[320];
    if (pipeline_step(r->p, err, sizeof(err)) < 0) {
        snprintf(r->failure, sizeof(r->failure), "sampling failed: %s", err);
        return -EIO;
    }
    double now = clock_mono();
    if (*next < now - 1.0)
        *next = now;
    const struct frame *f = pipeline_frame(r->p);
    const struct dev_rates *d = NULL;
    for (size_t i = 0; f && i < f->res->ndevs; i++)
        if (strcmp(f->res->devs[i].dev->ds.name, r->disk) == 0)
            d = &f->res->devs[i];
    if (!d || d->reset) {
        snprintf(r->failure, sizeof(r->failure), "%s %s mid-trial", r->disk, d ? "was re-registered" : "went away");
        return -ENODEV;
    }
    if (!s)
        return 0;
    memset(s, 0, sizeof(*s));
    const struct snapshot *c = f->snap;
    if (!c->lens_on)
        snprintf(r->lens_note, sizeof(r->lens_note), "%s", c->lens_msg[0] ? c->lens_msg : "the BPF lens is off");
    if (!d->valid)
        return 0;
    s->secs = f->res->interval_s;
    s->ios = (d->r_s + d->w_s) * s->secs;
    s->bytes = (d->rkb_s + d->wkb_s) * 1024.0 * s->secs;
    s->await_ms = d->await;
    s->lens = d->lens.valid;
    for (size_t i = 0; s->lens && i < d->nlat; i++) {
        int sl = trial_slot(d->lat[i].prio);
        if (sl < 0)
            continue;
        const struct prio_stage *t = &d->lat[i].st[LENS_ST_TOTAL];
        s->count[sl] += t->count;
        for (int k = 0; k < LENS_HIST; k++)
            s->hist[sl][k] += t->hist[k];
    }
    return 0;
}

/* A phase of n seconds, after one refresh that starts it clean. */
static int measure(struct run *r, struct trial_phase *ph, const char *what)
{
    double next = clock_mono();
    int rc = take_second(r, &next, NULL);
    if (!r->o->json)
        fprintf(stderr, "iotriage trial: measuring %ld s under %s...\n", r->o->seconds, what);
    for (long i = 0; rc == 0 && i < r->o->seconds; i++) {
        progress(r->o, "%s %ld %ld", ph == &r->after ? "after" : "before",
                 r->o->seconds - i, r->o->seconds);
        struct trial_second s;
        rc = take_second(r, &next, &s);
        if (rc == 0 && s.secs > 0)
            trial_phase_add(ph, &s);
    }
    return rc;
}

/* ---- switching, with a bounded wait ---- */

/* Switch disk to `to` (nr: nr_requests, 0 the switch's), in a child. 1 done, 0 the child
 * still waits after TRIAL_SWITCH_WAIT_S (abandoned: it finishes alone), -errno failed. */
static int do_switch(struct run *r, const struct sched_state *expect, const char *to, long nr,
                     struct sched_outcome *out, pid_t *waiting)
{
    struct sched_job job;
    memset(out, 0, sizeof(*out));
    int rc = sched_start(&job, NULL, r->disk, expect, to, nr);
    if (rc < 0) {
        snprintf(out->msg, sizeof(out->msg), "no process could be started for the switch: %s", strerror(-rc));
        out->err = rc;
        return rc;
    }
    double end = clock_mono() + TRIAL_SWITCH_WAIT_S;
    for (;;) {
        rc = sched_collect(&job, NULL, out);
        if (rc == 1)
            return out->err < 0 ? out->err : 1;
        if (rc < 0)
            return rc;
        if (clock_mono() >= end) {
            *waiting = job.child.pid;
            sched_abandon(&job);
            return 0;
        }
        /* signals wait: a switch under way is finished (or undone) before anything else */
        struct pollfd pf = { .fd = job.child.fd, .events = POLLIN };
        poll(&pf, 1, 100);
    }
}

/* ---- the report ---- */

static void jnum(FILE *f, const char *key, double v, bool comma)
{
    char b[40];
    if (isnan(v) || isinf(v))
        snprintf(b, sizeof(b), "null");
    else
        fmt_fixed(b, sizeof(b), v, 3);
    fprintf(f, "\"%s\":%s%s", key, b, comma ? "," : "");
}

static void jstr(FILE *f, const char *key, const char *s, bool comma)
{
    fprintf(f, "\"%s\":", key);
    if (!s)
        fputs("null", f);
    else
        esc_json(f, s, strlen(s));          /* quotes included */
    if (comma)
        fputc(',', f);
}

static void json_phase(FILE *f, const char *key, const struct trial_phase *ph, const struct sched_state *st, bool lens)
{
    fprintf(f, "\"%s\":{", key);
    jstr(f, "scheduler", st->sched, true);
    fprintf(f, "\"nr_requests\":%ld,\"seconds\":%zu,", st->nr_requests, ph->n);
    jnum(f, "throughput_bps", trial_figure(ph, 0, TF_THROUGHPUT, NULL, 0), true);
    jnum(f, "iops", trial_figure(ph, 0, TF_IOPS, NULL, 0), true);
    jnum(f, "await_ms", trial_figure(ph, 0, TF_AWAIT, NULL, 0), true);
    fputs("\"latency_by_prio\":", f);
    if (!lens) {
        fputs("null}", f);
        return;
    }
    fputc('{', f);
    bool first = true;
    for (int sl = 0; sl < TRIAL_SLOTS; sl++) {
        uint32_t m = 1u << sl;
        double n = 0;
        for (size_t i = 0; i < ph->n; i++)
            n += ph->s[i].count[sl];
        if (n <= 0)
            continue;
        fprintf(f, "%s\"%s\":{\"count\":%.0f,", first ? "" : ",", trial_slot_name(sl), n);
        jnum(f, "iops", trial_figure(ph, m, TF_IOPS, NULL, 0), true);
        jnum(f, "p50_ms", trial_figure(ph, m, TF_P50, NULL, 0), true);
        jnum(f, "p99_ms", trial_figure(ph, m, TF_P99, NULL, 0), false);
        fputc('}', f);
        first = false;
    }
    fputs("}}", f);
}

static const char *diff_word(const struct trial_diff *d)
{
    if (!d->known)
        return NULL;
    return d->dir < 0 ? "lower" : d->dir > 0 ? "higher" : "none";
}

/* The comparisons every report carries: each priority seen and each class (p50, p99,
 * iops) with the lens, the device's (iops, throughput, await) always. */
struct cmp_row { char subject[8]; enum trial_figure fig; struct trial_diff d; };

static size_t compare_all(const struct trial_phase *b, const struct trial_phase *a, bool lens,
                          struct cmp_row *rows, size_t max)
{
    size_t n = 0;
    static const enum trial_figure cfig[] = { TF_IOPS, TF_P50, TF_P99 };
    for (int sl = 0; lens && sl < TRIAL_SLOTS; sl++) {
        uint32_t m = 1u << sl;
        double c = 0;
        for (size_t i = 0; i < b->n; i++)
            c += b->s[i].count[sl];
        for (size_t i = 0; i < a->n; i++)
            c += a->s[i].count[sl];
        if (c <= 0)
            continue;
        for (size_t k = 0; k < ARRAY_SIZE(cfig) && n < max; k++, n++) {
            str_copy(rows[n].subject, trial_slot_name(sl), sizeof(rows[n].subject));
            rows[n].fig = cfig[k];
            trial_compare(b, a, m, cfig[k], &rows[n].d);
        }
    }
    /* the classes, every level together (idle has one row already: it has no levels) */
    for (int c = TRIAL_RT; lens && c <= TRIAL_BE; c++)
        for (size_t k = 0; k < ARRAY_SIZE(cfig) && n < max; k++) {
            struct trial_diff d;
            trial_compare(b, a, trial_class_slots((enum trial_class)c), cfig[k], &d);
            if (d.absent)
                break;
            str_copy(rows[n].subject, trial_class_name((enum trial_class)c), sizeof(rows[n].subject));
            rows[n].fig = cfig[k];
            rows[n++].d = d;
        }
    static const enum trial_figure tfig[] = { TF_IOPS, TF_THROUGHPUT, TF_AWAIT };
    for (size_t k = 0; k < ARRAY_SIZE(tfig) && n < max; k++, n++) {
        str_copy(rows[n].subject, "total", sizeof(rows[n].subject));
        rows[n].fig = tfig[k];
        trial_compare(b, a, 0, tfig[k], &rows[n].d);
    }
    return n;
}

static void fig_text(char *buf, size_t n, enum trial_figure f, double v)
{
    if (isnan(v))
        snprintf(buf, n, "-");
    else if (f == TF_THROUGHPUT)
        snprintf(buf, n, "%.2f MB/s", v / 1e6);
    else if (f == TF_IOPS)
        snprintf(buf, n, "%.1f/s", v);
    else
        snprintf(buf, n, "%.2f ms", v);
}

struct outcome {
    bool  ran;                       /* both phases measured */
    bool  keep;
    bool  restored;                  /* the device is as it was */
    bool  lens;
    int   status;
    char  decision[16];              /* "keep" "revert" */
    char  reason[1600];
    struct sched_state trial, final;
    struct trial_cond_result conds[TRIAL_CONDS_MAX];
    size_t nconds;
};

static void report_text(const struct run *r, const struct trial_rule *rule, const struct outcome *oc)
{
    printf("trial of %s on %s: %s, nr_requests %ld -> %s, nr_requests %ld; %zu s and %zu s measured, %g s to settle\n",
           r->o->to, r->disk, r->orig.sched, r->orig.nr_requests, oc->trial.sched, oc->trial.nr_requests,
           r->before.n, r->after.n, TRIAL_SETTLE_S);
    if (oc->ran) {
        printf("measured by %s\n", oc->lens ? "the BPF lens: latency per I/O priority (submission to completion)"
                                            : "the device's await (no per-priority split)");
        if (!oc->lens && r->lens_note[0])
            printf("  the BPF lens: %s\n", r->lens_note);
        struct cmp_row rows[96];
        size_t n = compare_all(&r->before, &r->after, oc->lens, rows, ARRAY_SIZE(rows));
        printf("  %-6s %-10s %12s %12s %8s %16s  %s\n", "", "", "before", "after", "change", "noise", "difference");
        for (size_t i = 0; i < n; i++) {
            const struct trial_diff *d = &rows[i].d;
            char bv[32], av[32], ch[16] = "-", nz[32] = "-";
            fig_text(bv, sizeof(bv), rows[i].fig, d->before);
            fig_text(av, sizeof(av), rows[i].fig, d->after);
            if (!isnan(d->change_pct))
                snprintf(ch, sizeof(ch), "%+.0f %%", d->change_pct);
            if (!isnan(d->lo_pct))
                snprintf(nz, sizeof(nz), "%+.0f..%+.0f %%", d->lo_pct, d->hi_pct);
            const char *w = diff_word(d);
            printf("  %-6s %-10s %12s %12s %8s %16s  %s\n", rows[i].subject, trial_figure_name(rows[i].fig), bv, av, ch,
                   nz, !w ? "cannot say" : strcmp(w, "none") == 0 ? "no difference" : w);
        }
        char rt[TRIAL_RULE_MAX * 2];
        trial_rule_text(rule, rt, sizeof(rt));
        printf("rule: keep if %s\n", rt);
        for (size_t i = 0; i < oc->nconds; i++) {
            char line[400];
            trial_cond_text(rule, &oc->conds[i], line, sizeof(line));
            printf("  %s\n", line);
        }
    }
    printf("decision: %s: %s\n", oc->decision, oc->reason);
    printf("%s now: %s, nr_requests %ld\n", r->disk, oc->final.sched[0] ? oc->final.sched : "?", oc->final.nr_requests);
    if (oc->keep) {
        char rule_line[320];
        sched_udev_rule(rule_line, sizeof(rule_line), NULL, r->disk, oc->final.sched, oc->final.nr_requests);
        printf("to keep it after a reboot, /etc/udev/rules.d/60-io-scheduler.rules:\n  %s\n", rule_line);
    }
}

static void report_json(FILE *f, const struct run *r, const struct trial_rule *rule, const struct outcome *oc)
{
    fputs("{\"version\":1,", f);
    jnum(f, "end_time", clock_wall(), true);
    jstr(f, "device", r->disk, true);
    jstr(f, "scheduler", r->o->to, true);
    fprintf(f, "\"seconds\":%ld,", r->o->seconds);
    jnum(f, "settle_s", TRIAL_SETTLE_S, true);
    jstr(f, "source", oc->lens ? "lens" : "await", true);
    jstr(f, "lens_off", oc->lens ? NULL : r->lens_note[0] ? r->lens_note : NULL, true);
    char rt[TRIAL_RULE_MAX * 2];
    trial_rule_text(rule, rt, sizeof(rt));
    jstr(f, "rule", rt, true);
    json_phase(f, "before", &r->before, &r->orig, oc->lens);
    fputc(',', f);
    json_phase(f, "after", &r->after, &oc->trial, oc->lens);
    fputs(",\"compare\":[", f);
    if (oc->ran) {
        struct cmp_row rows[96];
        size_t n = compare_all(&r->before, &r->after, oc->lens, rows, ARRAY_SIZE(rows));
        for (size_t i = 0; i < n; i++) {
            const struct trial_diff *d = &rows[i].d;
            fprintf(f, "%s{", i ? "," : "");
            jstr(f, "subject", rows[i].subject, true);
            jstr(f, "figure", trial_figure_name(rows[i].fig), true);
            jnum(f, "before", d->before, true);
            jnum(f, "after", d->after, true);
            jnum(f, "change_pct", d->change_pct, true);
            jnum(f, "noise_lo_pct", d->lo_pct, true);
            jnum(f, "noise_hi_pct", d->hi_pct, true);
            jstr(f, "difference", diff_word(d), false);
            fputc('}', f);
        }
    }
    fputs("],\"conditions\":[", f);
    for (size_t i = 0; i < oc->nconds; i++) {
        char line[400];
        trial_cond_text(rule, &oc->conds[i], line, sizeof(line));
        fprintf(f, "%s{\"holds\":%s,", i ? "," : "", oc->conds[i].holds ? "true" : "false");
        jstr(f, "text", line, false);
        fputc('}', f);
    }
    fputs("],", f);
    jstr(f, "decision", oc->decision, true);
    jstr(f, "reason", oc->reason, true);
    fprintf(f, "\"restored\":%s,\"final\":{", oc->restored ? "true" : "false");
    jstr(f, "scheduler", oc->final.sched[0] ? oc->final.sched : NULL, true);
    fprintf(f, "\"nr_requests\":%ld}}\n", oc->final.nr_requests);
    fflush(f);
}

/* The end of the progress (docs/trial.md): the final state, the changes beyond the noise
 * of the classes and the device, the reason; "done" follows. */
static void progress_report(const struct run *r, const struct outcome *oc)
{
    const struct topts *o = r->o;
    if (o->progress_fd < 0)
        return;
    progress(o, "final %s %ld", oc->final.sched[0] ? oc->final.sched : "?", oc->final.nr_requests);
    if (oc->ran) {
        struct cmp_row rows[96];
        size_t n = compare_all(&r->before, &r->after, oc->lens, rows, ARRAY_SIZE(rows));
        for (size_t i = 0; i < n; i++) {
            const struct trial_diff *d = &rows[i].d;
            bool cls = !strchr(rows[i].subject, '/') && strcmp(rows[i].subject, "none") != 0;
            if (cls && d->known && d->dir != 0 && isfinite(d->change_pct))
                progress(o, "change %s %s %+.0f %s", rows[i].subject, trial_figure_name(rows[i].fig),
                         d->change_pct, diff_word(d));
        }
    }
    progress(o, "reason %s", oc->reason);
}

static void append(char *buf, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void append(char *buf, size_t n, const char *fmt, ...)
{
    size_t used = strlen(buf);
    if (used + 1 >= n)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf + used, n - used, fmt, ap);
    va_end(ap);
}

/* ---- the trial ---- */

static bool ask(const struct run *r, const char *rule_text)
{
    const struct topts *o = r->o;
    char nr[64];
    if (o->nr > 0)
        snprintf(nr, sizeof(nr), "%ld (--nr-requests)", o->nr);
    else {
        long d = sched_default_nr_requests(o->to, r->orig.queue_depth);
        snprintf(nr, sizeof(nr), d > 0 ? "%ld (the switch resets it)" : "its default", d);
    }
    fprintf(stderr,
            "Trial on %s: %s (nr_requests %ld) -> %s (nr_requests %s).\n"
            "  %ld s measured under %s; the switch (it waits for the requests in flight, at most %g s);\n"
            "  %g s to settle; %ld s measured under %s; then keep %s or put back %s, nr_requests %ld.\n"
            "  Measured by %s.\n"
            "  Keep if: %s\n"
            "  Interrupted (Ctrl-C, a lost terminal) or killed, %s is put back.\n"
            "Start the trial? [y/N] ",
            r->disk, r->orig.sched, r->orig.nr_requests, o->to, nr, o->seconds, r->orig.sched, TRIAL_SWITCH_WAIT_S,
            TRIAL_SETTLE_S, o->seconds, o->to, o->to, r->orig.sched, r->orig.nr_requests,
            r->lens_note[0] ? "the device's await (no split per priority: the BPF lens is off)"
                            : "the BPF lens, per I/O priority",
            rule_text, r->disk);
    fflush(stderr);
    char line[32];
    if (!fgets(line, sizeof(line), stdin))
        return false;
    return line[0] == 'y' || line[0] == 'Y';
}

/* Put the device back; the outcome's restored and final say how it went. */
static void put_back(struct run *r, struct outcome *oc, struct guard *g)
{
    struct sched_outcome so;
    pid_t waiting = 0;
    int rc = do_switch(r, NULL, r->orig.sched, r->orig.nr_requests, &so, &waiting);
    sched_read(NULL, r->disk, &oc->final);
    if (rc == 1) {
        oc->restored = true;
        guard_tell(g, GUARD_DONE);
    } else if (rc == 0) {
        append(oc->reason, sizeof(oc->reason), "; putting %s back still waits for its requests after %g s: "
               "process %d finishes it, and the guardian (process %d) checks it after", r->disk,
               TRIAL_SWITCH_WAIT_S, (int)waiting, (int)g->pid);
    } else {
        append(oc->reason, sizeof(oc->reason), "; putting %s back failed: %s; the guardian (process %d) tries again when "
               "iotriage exits", r->disk, so.msg, (int)g->pid);
    }
}

/* The report appended to the recorder's directory (docs/recording.md, "Trials"):
 * $IOTRIAGE_RECORD_DIR, else /var/lib/iotriage; "" none. Only when the directory is there
 * (a machine that records): a trial creates no directory. One write(2) of one line with
 * O_APPEND: two trials' lines never interleave. A failure is said, the trial stands. */
static void record_trial(const char *line, size_t len, bool quiet)
{
    const char *dir = store_record_dir();
    if (!dir || access(dir, W_OK | X_OK) < 0)
        return;
    char path[PATH_MAX];
    snprintf(path, sizeof(path), "%s/%s", dir, TRIAL_RECORD_FILE);
    int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0640);
    ssize_t n = fd < 0 ? -1 : write(fd, line, len);
    int e = errno;
    if (fd >= 0 && close(fd) < 0 && n >= 0)
        n = -1, e = errno;
    if (n != (ssize_t)len && !quiet)
        fprintf(stderr, "iotriage trial: %s: %s: the report is not recorded\n", path,
                n < 0 ? strerror(e) : "short write");
}

int trial_main(int argc, char **argv)
{
    struct topts o;
    parse(argc, argv, &o);
    struct trial_rule rule;
    char err[320];
    if (trial_rule_parse(o.rule_text, strlen(o.rule_text), &rule, err, sizeof(err)) < 0)
        refuse("--keep-if: %s (grammar: docs/trial.md)", err);
    if (!o.yes && !isatty(STDIN_FILENO))
        refuse("stdin is not a terminal to ask on: give --yes to start the trial without asking");
    static struct run r;
    r.o = &o;
    check(&o, r.disk, sizeof(r.disk), &r.orig);

    struct sigaction sa = { .sa_handler = on_trial_signal };
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);

    /* first, while this process has no thread: the guardian forks from a plain process */
    struct guard g;
    int rc = guard_start(&g, NULL, r.disk, &r.orig, o.to);
    if (rc < 0) {
        fprintf(stderr, "iotriage trial: no guardian could be started (%s): nothing changed\n", strerror(-rc));
        return 1;
    }
    struct pipeline_opts po = {
        .sampler = { .no_tasks = true, .no_bpf = o.no_bpf },
        .interval_s = 1.0,
    };
    if (pipeline_open(&r.p, &po, err, sizeof(err)) < 0) {
        guard_tell(&g, GUARD_DONE);
        fprintf(stderr, "iotriage trial: %s: nothing changed\n", err);
        return 1;
    }
    struct outcome oc;
    memset(&oc, 0, sizeof(oc));
    oc.trial = r.orig;
    oc.final = r.orig;
    oc.status = 1;
    /* the lens's state is known from the first refresh on */
    double next = clock_mono();
    rc = take_second(&r, &next, NULL);
    if (rc == 0 && !o.yes && !ask(&r, o.rule_text)) {
        guard_tell(&g, GUARD_DONE);
        pipeline_close(r.p);
        fprintf(stderr, "iotriage trial: not started: nothing changed\n");
        return 1;
    }
    if (rc == 0)
        rc = measure(&r, &r.before, r.orig.sched);
    bool switched = false;
    if (rc == 0) {
        struct sched_outcome so;
        pid_t waiting = 0;
        if (!o.json)
            fprintf(stderr, "iotriage trial: switching %s to %s...\n", r.disk, o.to);
        progress(&o, "switching");
        int s = do_switch(&r, &r.orig, o.to, o.nr, &so, &waiting);
        sched_read(NULL, r.disk, &oc.final);
        oc.trial = so.after;
        if (s == 1) {
            switched = true;
        } else if (s == 0) {
            /* what the child will set once the disk drains */
            str_copy(oc.trial.sched, o.to, sizeof(oc.trial.sched));
            oc.trial.nr_requests = o.nr > 0 ? o.nr : sched_default_nr_requests(o.to, r.orig.queue_depth);
            snprintf(oc.reason, sizeof(oc.reason), "the switch to %s still waits for %s's requests after %g s (a stuck "
                     "disk?): process %d finishes it, then the guardian (process %d) puts %s back", o.to, r.disk,
                     TRIAL_SWITCH_WAIT_S, (int)waiting, (int)g.pid, r.orig.sched);
            rc = -ETIMEDOUT;
        } else {
            snprintf(oc.reason, sizeof(oc.reason), "%s cannot be set: %s", o.to, so.msg);
            oc.restored = strcmp(oc.final.sched, r.orig.sched) == 0 && oc.final.nr_requests == r.orig.nr_requests;
            if (oc.restored)
                guard_tell(&g, GUARD_DONE);
            rc = s;
        }
    }
    if (rc == 0) {
        /* The requests that waited out the switch (the queue frozen) finish first, with
         * the freeze in their time; then the new scheduler's queues fill afresh. */
        double until = clock_mono() + TRIAL_SETTLE_S;
        if (!o.json)
            fprintf(stderr, "iotriage trial: %g s to settle...\n", TRIAL_SETTLE_S);
        progress(&o, "settle %g %g", TRIAL_SETTLE_S, TRIAL_SETTLE_S);
        sleep_to(until);
        rc = trial_signal ? -EINTR : measure(&r, &r.after, o.to);
    }
    if (rc == 0) {
        oc.ran = true;
        oc.lens = trial_phase_lens(&r.before) && trial_phase_lens(&r.after);
        oc.keep = trial_rule_eval(&rule, &r.before, &r.after, oc.lens, oc.conds, &oc.nconds);
        snprintf(oc.reason, sizeof(oc.reason), "%s%s", oc.keep ? "the rule holds" : "the rule does not hold",
                 oc.lens ? "" : " (no lens: the device's await stands for every class)");
        /* the conditions that decided: those that hold for a keep, those that fail else */
        for (size_t i = 0; i < oc.nconds; i++) {
            if (oc.conds[i].holds != oc.keep)
                continue;
            char line[400];
            trial_cond_text(&rule, &oc.conds[i], line, sizeof(line));
            append(oc.reason, sizeof(oc.reason), "; %s", line);
        }
    } else if (rc == -EINTR) {
        snprintf(oc.reason, sizeof(oc.reason), "interrupted by %s", strsignal(trial_signal));
    } else if (rc == -ENODEV || rc == -EIO) {
        snprintf(oc.reason, sizeof(oc.reason), "%s", r.failure);
    }
    if (oc.ran && oc.keep) {
        guard_tell(&g, GUARD_KEEP);
        str_copy(oc.decision, "keep", sizeof(oc.decision));
        sched_read(NULL, r.disk, &oc.final);
        oc.status = 0;
    } else {
        str_copy(oc.decision, "revert", sizeof(oc.decision));
        if (switched && rc != -ENODEV) {
            progress(&o, "putting-back");
            put_back(&r, &oc, &g);
        }
        else if (rc == -ENODEV)
            guard_tell(&g, GUARD_DONE);     /* nothing left to put back */
        else if (!switched && rc != -ETIMEDOUT && !oc.restored) {
            sched_read(NULL, r.disk, &oc.final);
            oc.restored = strcmp(oc.final.sched, r.orig.sched) == 0 && oc.final.nr_requests == r.orig.nr_requests;
            if (oc.restored)
                guard_tell(&g, GUARD_DONE);
        }
        oc.status = oc.ran ? 3 : 1;
    }
    pipeline_close(r.p);
    /* the JSON report, one line: on stdout with --json, and in the recorder's directory */
    char *line = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&line, &len);
    if (m) {
        report_json(m, &r, &rule, &oc);
        if (fclose(m) != 0)
            len = 0;
    }
    if (o.json && line)
        fwrite(line, 1, len, stdout);
    else if (!o.json)
        report_text(&r, &rule, &oc);
    if (line && len)
        record_trial(line, len, o.json);
    free(line);
    if (fflush(stdout) != 0 && oc.status == 0)
        oc.status = 1;
    progress_report(&r, &oc);
    progress(&o, "done %d %s", oc.status, oc.decision);
    /* the guardian, told, is gone in a moment; one that still works is left to finish */
    for (int i = 0; i < 20 && g.pid > 0; i++) {
        if (waitpid(g.pid, NULL, WNOHANG) != 0)
            break;
        struct timespec ts = { 0, 10000000 };
        nanosleep(&ts, NULL);
    }
    trial_phase_free(&r.before);
    trial_phase_free(&r.after);
    return oc.status;
}
