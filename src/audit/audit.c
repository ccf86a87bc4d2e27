/* SPDX-License-Identifier: GPL-2.0-or-later */
/* audit/audit.c: `iotriage audit`: running processes and unit files, their labels, verdicts,
 * and the report (every cgroup's I/O controls: audit/cgroup_controls.c). */
#include "audit/audit.h"

#include <errno.h>
#include <fcntl.h>
#include <langinfo.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "audit/cgroup_controls.h"
#include "util/escape.h"
#include "snapshot.h"
#include "source/fdmap.h"
#include "audit/unitpath.h"
#include "util.h"
#include "verdict.h"

/* One label on one device, judged. */
struct finding {
    char dev[BD_NAME_MAX];
    char sched[BD_SCHED_MAX];
    const char *from;                /* units: which path led to the device */
    enum sched_reading reading;
    char path[160];                  /* through a stack of bio-based devices: from the
                                      * top down to dev ("dm-1 -> dm-0 -> nb0"); "" */
};

#define AUDIT_MAX_FINDINGS 16

struct audited {
    struct ioprio_eff prio;
    struct finding f[AUDIT_MAX_FINDINGS];
    unsigned nf;
    int err;                         /* devices unknown (-errno) */
};

struct tally {
    unsigned ignored, honoured, undecided;
    unsigned rejected;               /* of ignored: settings systemd drops when it loads */
};

/* Text from outside (unit and file names, values, device names, command lines) is shown
 * through esc_display: whoever built the audited image must not reach the terminal. */
static bool utf8_out;

void put_disp(const char *s, int width)
{
    size_t l = strlen(s), cap = 4 * l + 1;   /* an escape is at most 4 bytes per byte */
    char stackbuf[512];
    char *buf = cap <= sizeof(stackbuf) ? stackbuf : xmalloc(cap);
    size_t n = esc_display(buf, cap, s, l, utf8_out);
    fputs(buf, stdout);
    for (int i = (int)n; i < width; i++)
        putchar(' ');
    if (buf != stackbuf)
        free(buf);
}

static const char *reading_name(enum sched_reading r)
{
    switch (r) {
    case SR_DEFAULT: return "default";
    case SR_HONOURED: return "honoured";
    case SR_LEVEL_IGNORED: return "level-ignored";
    case SR_IGNORED: return "ignored";
    case SR_UNKNOWN_SCHED: return "unknown-scheduler";
    }
    return "?";
}

static void count(struct tally *t, const struct audited *a)
{
    for (unsigned i = 0; i < a->nf; i++) {
        if (a->f[i].reading == SR_IGNORED || a->f[i].reading == SR_LEVEL_IGNORED)
            t->ignored++;
        else if (a->f[i].reading == SR_HONOURED || a->f[i].reading == SR_DEFAULT)
            t->honoured++;
        else
            t->undecided++;
    }
    if (a->nf == 0)
        t->undecided++;
}

static void add_finding(struct audited *a, int sys_fd, const char *name, const char *from)
{
    for (unsigned i = 0; i < a->nf; i++)
        if (strcmp(a->f[i].dev, name) == 0)
            return;
    if (a->nf == AUDIT_MAX_FINDINGS)
        return;
    struct finding *f = &a->f[a->nf++];
    struct blockdev_info bd;
    str_copy(f->dev, name, sizeof(f->dev));
    f->from = from;
    f->sched[0] = '\0';
    if (blockdev_read(sys_fd, name, &bd) == 0)
        str_copy(f->sched, bd.scheduler, sizeof(f->sched));
    f->reading = verdict_sched_reading(f->sched, a->prio);
}

/* The kernel's name of block device dev: the last part of /sys/dev/block/MAJ:MIN. */
static int dev_name(int sys_fd, dev_t dev, char *out, size_t n)
{
    char path[64], link[512];
    snprintf(path, sizeof(path), "dev/block/%u:%u", major(dev), minor(dev));
    ssize_t l = readlinkat(sys_fd, path, link, sizeof(link) - 1);
    if (l < 0)
        return -errno;
    link[l] = '\0';
    const char *slash = strrchr(link, '/');
    str_copy(out, slash ? slash + 1 : link, n);
    return 0;
}

/* The devices under an absolute path of the audited root, through stacking. The path is
 * resolved inside root_fd as systemd would inside that image (an absolute symlink starts
 * again at the root, ".." stops there): never on the host's own disks. Returns how many,
 * or -errno. */
static int devices_of_path(int root_fd, int sys_fd, const char *path, struct audited *a, const char *from)
{
    struct stat st;
    char rel[PATH_MAX];
    int r = units_resolve_in_root(root_fd, path, rel, &st);
    if (r < 0)
        return r;
    dev_t devs[FDMAP_MAX_DEVS];
    bool trunc = false;
    int n = fdmap_resolve(sys_fd, S_ISBLK(st.st_mode) ? st.st_rdev : st.st_dev, devs, FDMAP_MAX_DEVS, &trunc);
    for (int i = 0; i < n; i++) {
        char name[BD_NAME_MAX];
        if (dev_name(sys_fd, devs[i], name, sizeof(name)) == 0)
            add_finding(a, sys_fd, name, from);
    }
    return n;
}

static void audit_unit(int root_fd, int sys_fd, const struct unit_entry *u, struct audited *a)
{
    memset(a, 0, sizeof(*a));
    a->prio = units_effective(&u->s);
    int n = 0;
    if (u->s.workdir && u->s.workdir[0] == '/')
        n += devices_of_path(root_fd, sys_fd, u->s.workdir, a, "WorkingDirectory") > 0;
    if (u->s.exec && u->s.exec[0] == '/')
        n += devices_of_path(root_fd, sys_fd, u->s.exec, a, "ExecStart") > 0;
    int r = n ? 0 : devices_of_path(root_fd, sys_fd, "/", a, "root filesystem");
    if (r < 0)
        a->err = r;
}

/* prio: the task's effective priority, io.prio.class applied (then bfq, which reads the
 * task's own and not the request's, is judged on the task's own). */
static void audit_task(const struct snapshot *s, size_t i, struct ioprio_eff prio, struct audited *a)
{
    const struct task_sample *t = &s->tasks[i];
    const struct task_devs *td = s->tdevs ? &s->tdevs[i] : NULL;
    memset(a, 0, sizeof(*a));
    a->prio = prio;
    struct ioprio_eff own = ioprio_effective(t->ioprio_raw, t->nice, t->policy);
    if (!td || td->err) {
        a->err = td ? td->err : -ENOSYS;
        return;
    }
    for (unsigned k = 0; k < td->n && a->nf < AUDIT_MAX_FINDINGS; k++) {
        const struct dev_sample *d = &s->devs[td->idx[k]];
        struct finding *f = &a->f[a->nf++];
        str_copy(f->dev, d->ds.name, sizeof(f->dev));
        str_copy(f->sched, d->bd.scheduler, sizeof(f->sched));
        f->from = "open files";
        f->path[0] = '\0';
        if (td->via_top && td->via_top <= s->ndevs && (td->via >> k & 1) &&
            !verdict_dev_path(s, s->devs[td->via_top - 1].ds.name, d->ds.name, f->path, sizeof(f->path)))
            f->path[0] = '\0';
        bool own_read = prio.source == IOS_CGROUP && !verdict_sched_reads_request_prio(d->bd.scheduler);
        f->reading = verdict_sched_reading(d->bd.scheduler, own_read ? own : prio);
    }
}

static void prio_str(char *buf, size_t n, struct ioprio_eff e)
{
    snprintf(buf, n, "%s/%d", ioprio_class_name(e.cls), e.level);
}

/* --- text ------------------------------------------------------------------------- */

static void text_findings(const struct audited *a)
{
    if (a->err) {
        printf("    devices unknown: %s\n", strerror(-a->err));
        return;
    }
    if (a->nf == 0)
        printf("    no block device found\n");
    for (unsigned i = 0; i < a->nf; i++) {
        fputs("    ", stdout);
        put_disp(a->f[i].dev, 10);
        putchar(' ');
        put_disp(a->f[i].sched[0] ? a->f[i].sched : "-", 12);
        printf(" %-14s (%s", reading_name(a->f[i].reading), a->f[i].from);
        if (a->f[i].path[0]) {
            fputs(": ", stdout);
            put_disp(a->f[i].path, 0);
        }
        puts(")");
    }
}

/* --- json ------------------------------------------------------------------------- */

void json_str(const char *s)
{
    if (s)
        esc_json(stdout, s, strlen(s));
    else
        fputs("null", stdout);
}

static void json_findings(const struct audited *a)
{
    printf("\"effective_class\":\"%s\",\"effective_level\":%d,\"source\":\"%s\",\"devices\":",
           ioprio_class_name(a->prio.cls), a->prio.level, ioprio_source_name(a->prio.source));
    if (a->err) {
        printf("null,\"devices_error\":");
        json_str(strerror(-a->err));
        return;
    }
    putchar('[');
    for (unsigned i = 0; i < a->nf; i++) {
        printf("%s{\"device\":", i ? "," : "");
        json_str(a->f[i].dev);
        printf(",\"scheduler\":");
        json_str(a->f[i].sched[0] ? a->f[i].sched : NULL);
        printf(",\"from\":");
        json_str(a->f[i].from);
        printf(",\"path\":");
        json_str(a->f[i].path[0] ? a->f[i].path : NULL);
        printf(",\"verdict\":\"%s\"}", reading_name(a->f[i].reading));
    }
    putchar(']');
}

/* ---- labels systemd rejects ----------------------------------------------------------- */

/* The scheduling key an invalid entry is about (case-insensitively: "nice=" in [Service]
 * is Nice= written wrong), or -1. */
static int sched_key_of(const struct unit_invalid *iv)
{
    for (int k = UK_IOCLASS; k <= UK_POLICY; k++)
        if (strcasecmp(iv->key, units_key_name((enum unit_key)k)) == 0)
            return k;
    return -1;
}

/* A rejected value no longer matters when a later file or line set the same key (the
 * I/O class and level share one value in systemd, so either counts for both). */
static bool superseded(const struct unit_sched *s, const struct unit_invalid *iv)
{
    int k = sched_key_of(iv);
    const struct unit_where *w[2] = { &s->where[k], NULL };
    if (k == UK_IOCLASS || k == UK_IOPRIO)
        w[1] = &s->where[k == UK_IOCLASS ? UK_IOPRIO : UK_IOCLASS];
    for (int i = 0; i < 2 && w[i]; i++)
        if (w[i]->file >= 0 && (w[i]->file > iv->at.file ||
                                (w[i]->file == iv->at.file && w[i]->line > iv->at.line)))
            return true;
    return false;
}

static bool is_rejected_label(const struct unit_invalid *iv)
{
    return iv->sched && !iv->fatal && sched_key_of(iv) >= 0;
}

static const char *invalid_file(const struct unit_sched *s, const struct unit_invalid *iv)
{
    return iv->at.file >= 0 && (unsigned)iv->at.file < s->nfiles ? s->files[iv->at.file] : NULL;
}

static void count_rejected(struct tally *t, const struct unit_sched *s)
{
    for (unsigned i = 0; i < s->ninvalid; i++)
        if (is_rejected_label(&s->invalid[i]) && !superseded(s, &s->invalid[i])) {
            t->ignored++;
            t->rejected++;
        }
}

static void text_rejected(const struct unit_sched *s)
{
    for (unsigned i = 0; i < s->ninvalid; i++) {
        const struct unit_invalid *iv = &s->invalid[i];
        if (iv->fatal) {             /* the unit never runs: said here, with its unit */
            const char *f = invalid_file(s, iv);
            fputs("    refused: systemd does not load this unit: ", stdout);
            put_disp(f ? f : "?", 0);
            if (iv->at.line)
                printf(":%u", iv->at.line);
            if (iv->key[0] || iv->text[0]) {
                fputs(": ", stdout);
                put_disp(iv->key, 0);
                fputs(iv->key[0] ? "=" : "", stdout);
                put_disp(iv->text, 0);
            }
            printf(" (%s)\n", iv->why);
            continue;
        }
        if (!is_rejected_label(iv))
            continue;
        const char *f = invalid_file(s, iv);
        printf("    %s ", superseded(s, iv) ? "rejected (later overridden)" : "rejected");
        put_disp(iv->key, 0);
        putchar('=');
        put_disp(iv->text, 0);
        fputs(" at ", stdout);
        put_disp(f ? f : "?", 0);
        printf(":%u: %s\n", iv->at.line, iv->why);
    }
    if (s->ninvalid_lost)
        printf("    (%u more invalid settings not kept)\n", s->ninvalid_lost);
}

static void json_rejected(const struct unit_sched *s)
{
    printf(",\"rejected\":[");
    unsigned n = 0;
    for (unsigned i = 0; i < s->ninvalid; i++) {
        const struct unit_invalid *iv = &s->invalid[i];
        if (!is_rejected_label(iv))
            continue;
        printf("%s{\"key\":", n++ ? "," : "");
        json_str(units_key_name((enum unit_key)sched_key_of(iv)));
        printf(",\"as_written\":");
        json_str(iv->key);
        printf(",\"value\":");
        json_str(iv->text);
        printf(",\"file\":");
        json_str(invalid_file(s, iv));
        printf(",\"line\":%u,\"why\":", iv->at.line);
        json_str(iv->why);
        printf(",\"superseded\":%s}", superseded(s, iv) ? "true" : "false");
    }
    putchar(']');
}

/* What systemd makes of the four keys, null when unset: the value it hands to
 * ioprio_set() (class and level), setpriority() and sched_setscheduler(). */
static void json_unit_values(const struct unit_sched *s)
{
    bool io = s->ioclass_set || s->iolevel_set;
    if (io)
        printf(",\"io_class\":\"%s\",\"io_level\":%u",
               ioprio_class_name((enum ioprio_class)IOPRIO_CLASS_OF(s->ioprio)),
               IOPRIO_LEVEL_OF(s->ioprio));
    else
        printf(",\"io_class\":null,\"io_level\":null");
    if (s->nice_set)
        printf(",\"nice\":%d", s->nice);
    else
        printf(",\"nice\":null");
    printf(",\"cpu_policy\":");
    json_str(s->policy_set ? units_policy_name(s->policy) : NULL);
}

static void unit_sets(char *buf, size_t n, const struct unit_sched *s)
{
    size_t o = 0;
    buf[0] = '\0';
#define ADD(...) do { int w_ = snprintf(buf + o, n - o, __VA_ARGS__); if (w_ > 0 && (size_t)w_ < n - o) o += (size_t)w_; } while (0)
    if (s->ioclass_set)
        ADD("%sIOSchedulingClass=%s", o ? " " : "", ioprio_class_name(s->ioclass));
    if (s->iolevel_set)
        ADD("%sIOSchedulingPriority=%d", o ? " " : "", s->iolevel);
    if (s->nice_set)
        ADD("%sNice=%d", o ? " " : "", s->nice);
    if (s->policy_set)
        ADD("%sCPUSchedulingPolicy=%s", o ? " " : "", units_policy_name(s->policy));
#undef ADD
}

int audit_run(const struct audit_opts *o)
{
    const char *root = o->root ? o->root : "/";
    int root_fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (root_fd < 0) {
        fprintf(stderr, "iotriage audit: cannot open %s: %s\n", root, strerror(errno));
        return 2;
    }
    struct sampler_opts so = { .proc_root = o->proc_root, .sys_root = o->sys_root,
                               .no_tasks = o->no_processes,
                               .no_bpf = true };   /* one snapshot: no rates to measure */
    char err[256] = "";
    struct sampler *sm;
    if (sampler_open(&sm, &so, err, sizeof(err)) < 0) {
        fprintf(stderr, "iotriage audit: %s\n", err);
        close(root_fd);
        return 2;
    }
    const char *sys = o->sys_root ? o->sys_root : "/sys";
    int sys_fd = open(sys, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    struct snapshot snap;
    sampler_take(sm, &snap);
    struct unit_list ul;
    /* A machine (or image) without systemd has no unit directory: its processes and
     * cgroups are still audited, and the output says why no unit is. */
    char units_err[256] = "";
    int us = units_scan(root_fd, &ul, err, sizeof(err));
    if (us == -ENOENT) {
        snprintf(units_err, sizeof(units_err), "%s", err);
        us = 0;
    }
    if (us < 0) {
        fprintf(stderr, "iotriage audit: %s\n", err);
        snapshot_free(&snap);
        sampler_close(sm);
        close(root_fd);
        close(sys_fd);
        return 2;
    }
    const char *cs = nl_langinfo(CODESET);
    bool utf8 = cs && strcmp(cs, "UTF-8") == 0;
    utf8_out = utf8;
    char host[256] = "?";
    gethostname(host, sizeof(host) - 1);
    struct tally tally = { 0 };
    struct audited a;
    char prio[24], text[512];

    if (o->json) {
        printf("{\"host\":");
        json_str(host);
        printf(",\"processes\":[");
    } else {
        fputs("iotriage audit - ", stdout);
        put_disp(host, 0);
        printf("\n\nRunning processes with a non-default I/O priority:\n");
    }
    unsigned nproc = 0;
    for (size_t i = 0; i < snap.ntasks; i++) {
        const struct task_sample *t = &snap.tasks[i];
        if (t->kthread)
            continue;   /* kernel threads have no files: nothing the label could reach */
        struct ioprio_eff e = ioprio_effective(t->ioprio_raw, t->nice, t->policy);
        /* Its cgroup's io.prio.class rewrites what its requests carry, as on the screen. */
        if (snap.cgroups && i < snap.cgroups->ntasks)
            cgroups_prio_effective(snap.cgroups, i, &e);
        if (ioprio_is_default(e))
            continue;
        audit_task(&snap, i, e, &a);
        count(&tally, &a);
        prio_str(prio, sizeof(prio), e);
        if (o->json) {
            printf("%s{\"pid\":%d,\"comm\":", nproc ? "," : "", (int)t->id);
            json_str(t->comm);
            printf(",\"cmdline\":");
            json_str(t->cmdline);
            putchar(',');
            json_findings(&a);
            putchar('}');
        } else {
            const char *cl = t->cmdline[0] ? t->cmdline : t->comm;
            esc_display(text, 120, cl, strlen(cl), utf8);
            printf("  %7d %-7s %-8s %s\n", (int)t->id, prio, ioprio_source_name(e.source), text);
            text_findings(&a);
        }
        nproc++;
    }
    if (!o->json && nproc == 0)
        printf("  none%s\n", o->no_processes ? " (not examined)" : "");

    if (o->json) {
        printf("],\"units_error\":");
        json_str(units_err[0] ? units_err : NULL);
        printf(",\"units\":[");
    } else {
        printf("\nUnit files setting IOSchedulingClass=, IOSchedulingPriority=, Nice= or CPUSchedulingPolicy=:\n");
        if (units_err[0])
            printf("  not examined: %s\n", units_err);
    }
    unsigned nunits = 0;
    for (size_t i = 0; i < ul.nunits; i++) {
        const struct unit_entry *u = &ul.units[i];
        /* The scanner also keeps units whose only labels systemd rejected: those labels
         * are ignored as surely as one a scheduler does not read. */
        bool sets = units_sets_sched(&u->s);
        if (sets) {
            audit_unit(root_fd, sys_fd, u, &a);
            count(&tally, &a);
        } else {
            memset(&a, 0, sizeof(a));
            a.prio = units_effective(&u->s);
        }
        count_rejected(&tally, &u->s);
        prio_str(prio, sizeof(prio), a.prio);
        unit_sets(text, sizeof(text), &u->s);
        if (o->json) {
            printf("%s{\"unit\":", nunits ? "," : "");
            json_str(u->name);
            printf(",\"file\":");
            json_str(u->s.nfiles ? u->s.files[0] : NULL);
            printf(",\"files\":[");
            for (unsigned k = 0; k < u->s.nfiles; k++) {
                if (k)
                    putchar(',');
                json_str(u->s.files[k]);
            }
            printf("],\"sets\":");
            json_str(text);
            json_unit_values(&u->s);
            json_rejected(&u->s);
            printf(",\"load_error\":%s,", u->s.load_error ? "true" : "false");
            json_findings(&a);
            putchar('}');
        } else {
            fputs("  ", stdout);
            put_disp(u->name, 32);
            printf(" %-7s %s\n", prio, sets ? text : "(no setting applied)");
            text_rejected(&u->s);
            if (sets)
                text_findings(&a);
        }
        nunits++;
    }
    if (!o->json && nunits == 0 && !units_err[0])
        printf("  none\n");
    if (o->json)
        putchar(']');
    /* Cgroups: with the processes (--units-only audits an image's unit files, not this
     * machine's hierarchy). */
    struct cg_tally cgt = { 0 };
    bool cg_done = false;
    if (!o->no_processes && snap.cgroups) {
        const char *proc = o->proc_root ? o->proc_root : "/proc";
        int proc_fd = open(proc, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (proc_fd >= 0 && sys_fd >= 0) {
            audit_cgroups(o, &snap, proc_fd, sys_fd, &cgt);
            cg_done = true;
        }
        if (proc_fd >= 0)
            close(proc_fd);
    }
    if (o->json && !cg_done)
        printf(",\"cgroup_hierarchy\":null,\"cgroups\":null,\"cgroups_walked\":null,"
               "\"cgroups_truncated\":null");
    if (o->json) {
        printf(",\"problems\":[");
        for (size_t i = 0; i < ul.nproblems; i++) {
            const struct unit_problem *pb = &ul.problems[i];
            printf("%s{\"path\":", i ? "," : "");
            json_str(pb->path);
            if (pb->line)
                printf(",\"line\":%u", pb->line);
            else
                printf(",\"line\":null");
            printf(",\"text\":");
            json_str(pb->what);
            printf(",\"setting\":");
            json_str(pb->setting);
            printf(",\"why\":");
            json_str(pb->why);
            putchar('}');
        }
        printf("],\"ignored\":%u,\"rejected\":%u,\"honoured\":%u,\"undecided\":%u,"
               "\"cgroup_ignored\":%u,\"cgroup_honoured\":%u,\"cgroup_undecided\":%u}\n",
               tally.ignored, tally.rejected, tally.honoured, tally.undecided, cgt.ignored, cgt.honoured,
               cgt.undecided);
    } else {
        for (size_t i = 0; i < ul.nproblems; i++) {
            const struct unit_problem *pb = &ul.problems[i];
            fputs("  problem: ", stdout);
            put_disp(pb->path, 0);
            if (pb->line)
                printf(":%u", pb->line);
            printf(": %s", pb->what);
            if (pb->setting) {
                fputs(": ", stdout);
                put_disp(pb->setting, 0);
            }
            if (pb->why)
                printf(" (%s)", pb->why);
            putchar('\n');
        }
        printf("\n%u label(s) ignored (%u rejected by systemd), %u honoured, %u undecided (no "
               "device or unknown scheduler).\n",
               tally.ignored, tally.rejected, tally.honoured, tally.undecided);
        if (cg_done)
            printf("%u cgroup setting(s) without effect, %u in effect, %u undecided.\n", cgt.ignored,
                   cgt.honoured, cgt.undecided);
        if (tally.undecided && !cgt.undecided && !tally.ignored && !cgt.ignored)
            printf("Nothing found ignored, but %u label(s) could not be judged: exit status 3.\n",
                   tally.undecided);
        else if (cgt.undecided && !tally.ignored && !cgt.ignored)
            printf("Nothing found ignored, but %u label(s) and %u cgroup setting(s) could not be "
                   "judged: exit status 3.\n", tally.undecided, cgt.undecided);
    }
    units_list_free(&ul);
    snapshot_free(&snap);
    sampler_close(sm);
    close(root_fd);
    if (sys_fd >= 0)
        close(sys_fd);
    if (fflush(stdout) != 0 || ferror(stdout))
        return 2;
    /* 0 must mean "every label is read": a label nobody could judge is not that. */
    return tally.ignored || cgt.ignored ? 1 : tally.undecided || cgt.undecided ? 3 : 0;
}
