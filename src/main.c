/* SPDX-License-Identifier: GPL-2.0-or-later */
/* main.c: arguments, then one of: the screen, batch text or JSON, audit. Every one of
 * them reads the frames of one pipeline (pipeline.h): source -> snapshot -> delta ->
 * verdict -> sinks. */
#include <errno.h>
#include <getopt.h>
#include <locale.h>
#include <langinfo.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "sample/sample.h"
#include "act/act.h"
#include "audit/audit.h"
#include "out/columns.h"
#include "out/sink.h"
#include "pipeline.h"
#include "export.h"
#include "store/state.h"
#include "store/store.h"
#include "recorder.h"
#include "trial.h"
#include "tui/tui.h"
#include "util.h"
#include "util/heap.h"

/* The version comes from debian/changelog through the Makefile (one source of truth). */
#ifndef IOTRIAGE_VERSION
#error "IOTRIAGE_VERSION is defined by the Makefile from debian/changelog"
#endif
#define MAX_PIDS 256

static volatile sig_atomic_t stop_requested;

static void on_signal(int sig)
{
    (void)sig;
    stop_requested = 1;
    tui_stop_signal = 1;
}

struct args {
    bool batch, json, only_active, threads;
    long iterations;                 /* 0: until interrupted */
    double delay_s;
    pid_t pids[MAX_PIDS];
    size_t npids;
    const char *proc_root, *sys_root;
    const char *record;
    const char *replay;
    double at, from, to;             /* --at, --from, --to: epoch seconds, NAN when not given */
    bool read_only;
    bool no_bpf;
};

static void usage(FILE *f)
{
    fputs("Usage: iotriage [options]\n"
          "       iotriage audit [--json] [--root DIR] [--units-only]\n"
          "       iotriage export [--listen ADDR:PORT] [--textfile PATH.prom] [-d SECONDS]\n"
          "       iotriage record [--dir DIR] [-d SECONDS] [--max-age DAYS] [--max-size MB]\n"
          "       iotriage trial DEVICE SCHEDULER [--seconds N] [--nr-requests N] [--keep-if RULE]\n"
          "                      [--yes] [--json]\n"
          "Shows block devices (iostat -x columns, scheduler, nr_requests), pressure stall\n"
          "information and per-process I/O rates, delays and effective I/O priority.\n"
          "\n"
          "  -b, --batch            text samples on stdout, like top -b\n"
          "      --json             one JSON object per sample per line (see docs/json.md)\n"
          "  -n, --iterations N     stop after N samples\n"
          "  -d, --delay SECONDS    time between samples (fractional, default 1)\n"
          "  -p, --pid PID          only this process (repeatable)\n"
          "  -o, --only             only processes doing I/O or waiting on it\n"
          "  -P, --threads          one line per thread instead of per process\n"
          "      --record FILE      also write every sample to FILE as JSON lines\n"
          "      --replay FILE      show a recording on the screen (step, pause, speed);\n"
          "                         with -b or --json, print its samples\n"
          "      --at TIME          with --replay: start at that moment (03:10, -2h, @EPOCH)\n"
          "      --from TIME, --to TIME  with --replay: only the samples between\n"
          "      --list-columns     the process table's columns, and what each shows\n"
          "      --read-only        refuse every action (scheduler switch, ionice, delay\n"
          "                         accounting); the screen shows READ-ONLY\n"
          "      --no-bpf           do not load the BPF lens (iowait per task, request\n"
          "                         stages per device); iotriage says it is off\n"
          "  -h, --help             this help\n"
          "  -V, --version          version\n",
          f);
}

/* A one-line complaint and exit status 2, for anything wrong on the command line. */
#define bad_usage(...) exit_usage("iotriage", true, __VA_ARGS__)

static long parse_long_arg(const char *s, const char *opt, long min, long max)
{
    long v;
    if (parse_long_in(s, min, max, &v) < 0)
        bad_usage("invalid value for %s", opt);
    return v;
}

static void parse_args(int argc, char **argv, struct args *a)
{
    enum { OPT_JSON = 256, OPT_PROC_ROOT, OPT_SYS_ROOT, OPT_RECORD, OPT_REPLAY, OPT_READ_ONLY,
           OPT_LIST_COLUMNS, OPT_AT, OPT_FROM, OPT_TO, OPT_NO_BPF };
    static const struct option longopts[] = {
        { "batch", no_argument, NULL, 'b' },
        { "json", no_argument, NULL, OPT_JSON },
        { "iterations", required_argument, NULL, 'n' },
        { "delay", required_argument, NULL, 'd' },
        { "pid", required_argument, NULL, 'p' },
        { "only", no_argument, NULL, 'o' },
        { "threads", no_argument, NULL, 'P' },
        { "help", no_argument, NULL, 'h' },
        { "version", no_argument, NULL, 'V' },
        { "proc-root", required_argument, NULL, OPT_PROC_ROOT },
        { "sys-root", required_argument, NULL, OPT_SYS_ROOT },
        { "record", required_argument, NULL, OPT_RECORD },
        { "replay", required_argument, NULL, OPT_REPLAY },
        { "read-only", no_argument, NULL, OPT_READ_ONLY },
        { "list-columns", no_argument, NULL, OPT_LIST_COLUMNS },
        { "at", required_argument, NULL, OPT_AT },
        { "from", required_argument, NULL, OPT_FROM },
        { "to", required_argument, NULL, OPT_TO },
        { "no-bpf", no_argument, NULL, OPT_NO_BPF },
        { NULL, 0, NULL, 0 },
    };
    memset(a, 0, sizeof(*a));
    a->delay_s = 1.0;
    a->at = a->from = a->to = (double)NAN;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, ":bn:d:p:oPhV", longopts, NULL)) != -1) {
        switch (c) {
        case 'b': a->batch = true; break;
        case OPT_JSON: a->json = a->batch = true; break;
        case 'n': a->iterations = parse_long_arg(optarg, "-n", 1, 1000000000L); break;
        case 'd': {
            char *end;
            errno = 0;
            double d = strtod(optarg, &end);
            if (*optarg == '\0' || *end != '\0' || errno || !(d >= DELAY_MIN_S && d <= DELAY_MAX_S))
                bad_usage("invalid delay '%s' (seconds, %g to %g)", optarg, DELAY_MIN_S, DELAY_MAX_S);
            a->delay_s = d;
            break;
        }
        case 'p':
            if (a->npids == MAX_PIDS)
                bad_usage("%s", "too many -p options");
            a->pids[a->npids++] = (pid_t)parse_long_arg(optarg, "-p", 1, 0x3fffffff);
            break;
        case 'o': a->only_active = true; break;
        case 'P': a->threads = true; break;
        case OPT_PROC_ROOT: a->proc_root = optarg; break;
        case OPT_SYS_ROOT: a->sys_root = optarg; break;
        case OPT_RECORD: a->record = optarg; break;
        case OPT_REPLAY: a->replay = optarg; break;
        case OPT_READ_ONLY: a->read_only = true; break;
        case OPT_AT: case OPT_FROM: case OPT_TO: {
            double t;
            if (store_parse_time(optarg, clock_wall(), &t) < 0)
                bad_usage("invalid time '%s' (03:10, 2026-12-01 03:10, -2h, @EPOCH)", optarg);
            *(c == OPT_AT ? &a->at : c == OPT_FROM ? &a->from : &a->to) = t;
            break;
        }
        case OPT_LIST_COLUMNS:
            for (int k = 0; k < COL_N; k++)
                printf("%-8s %s\n", col_table[k].title, col_table[k].help);
            exit(0);
        case OPT_NO_BPF: a->no_bpf = true; break;
        case 'h': usage(stdout); exit(0);
        case 'V':
            printf("iotriage %s%s\n", IOTRIAGE_VERSION, act_built_read_only() ? " (built read-only)" : "");
            exit(0);
        case ':': bad_usage("option %s needs a value", argv[optind - 1]); break;
        default: bad_usage("unknown option %s", argv[optind - 1]); break;
        }
    }
    if (optind < argc)
        bad_usage("unexpected argument '%s'", argv[optind]);
    if (!a->replay && (!isnan(a->at) || !isnan(a->from) || !isnan(a->to)))
        bad_usage("%s", "--at, --from and --to choose a moment of a recording: give --replay");
    if (a->replay && (a->npids || a->threads || a->proc_root || a->sys_root))
        bad_usage("%s", "--replay shows what was recorded: not with -p, -P, --proc-root or --sys-root");
}

static void sleep_until(double deadline)
{
    struct timespec ts = { .tv_sec = (time_t)deadline };
    ts.tv_nsec = (long)((deadline - (double)ts.tv_sec) * 1e9);
    while (!stop_requested && clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
        ;
}

/* Batch: every frame to stdout, one interval apart (a recording: as fast as it reads). */
static int run_batch(const struct args *a, struct pipeline *p)
{
    const char *cs = nl_langinfo(CODESET);
    struct stream_sink out = {
        .f = stdout, .name = "stdout", .format = a->json ? STREAM_JSON : STREAM_TEXT,
        .only_active = a->only_active, .utf8 = cs && strcmp(cs, "UTF-8") == 0,
    };
    struct sink os = stream_sink(&out);
    pipeline_add_sink(p, &os);
    bool replay = pipeline_is_replay(p);
    double next = clock_mono();
    int status = 0;
    for (long i = 0; (a->iterations == 0 || i < a->iterations) && !stop_requested; i++) {
        if (!replay) {
            next += a->delay_s;
            sleep_until(next);
            if (stop_requested)
                break;
        }
        char err[320] = "";
        int rc = pipeline_step(p, err, sizeof(err));
        if (rc == 0)
            break;                       /* the end of the recording */
        if (rc < 0) {
            fprintf(stderr, "iotriage: %s\n", err);
            if (pipeline_sink_failed(p))
                return 1;                /* nothing is written silently, nor lost silently */
            status = 1;                  /* a damaged recorded sample: said, and skipped */
            i--;
            continue;
        }
        /* A machine too slow to keep up: start the next interval from now, not in the past. */
        double now = clock_mono();
        if (next < now - a->delay_s)
            next = now;
    }
    return status;
}

/* Every damage the recorder's reader met in a replay's files, one line each. */
static void print_damages(const struct pipeline *p)
{
    size_t n = pipeline_replay_damages(p);
    for (size_t i = 0; i < n; i++)
        fprintf(stderr, "iotriage: %s (read up to the damage and on after it)\n",
                pipeline_replay_damage(p, i));
}

static int main_audit(int argc, char **argv)
{
    enum { OPT_ROOT = 256, OPT_UNITS_ONLY, OPT_PROC_ROOT, OPT_SYS_ROOT };
    static const struct option longopts[] = {
        { "json", no_argument, NULL, 'j' },
        { "root", required_argument, NULL, OPT_ROOT },
        { "units-only", no_argument, NULL, OPT_UNITS_ONLY },
        { "proc-root", required_argument, NULL, OPT_PROC_ROOT },
        { "sys-root", required_argument, NULL, OPT_SYS_ROOT },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    struct audit_opts o = { 0 };
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
        switch (c) {
        case 'j': o.json = true; break;
        case OPT_ROOT: o.root = optarg; break;
        case OPT_UNITS_ONLY: o.no_processes = true; break;
        case OPT_PROC_ROOT: o.proc_root = optarg; break;
        case OPT_SYS_ROOT: o.sys_root = optarg; break;
        case 'h':
            puts("Usage: iotriage audit [--json] [--root DIR] [--units-only]\n"
                 "Lists running processes and systemd unit files that set an I/O or CPU\n"
                 "scheduling label, and whether the schedulers of their devices read it.\n"
                 "A label systemd rejects (IOSchedulingClass=Idle, Nice=50) is ignored too.\n"
                 "Then every cgroup's io.weight, io.max, io.prio.class and io.latency against\n"
                 "the devices (not with --units-only).\n"
                 "Exit status: 0 every label honoured (or none), 1 any label or cgroup setting\n"
                 "ignored, 2 error, 3 none ignored but some could not be judged (no device known).");
            exit(0);
        case ':': bad_usage("option %s needs a value", argv[optind - 1]); break;
        default: bad_usage("unknown audit option %s", argv[optind - 1]); break;
        }
    }
    if (optind < argc)
        bad_usage("unexpected argument '%s'", argv[optind]);
    return audit_run(&o);
}

/* `iotriage record`: the always-on recorder (recorder.h), in the foreground for systemd. */
static int main_record(int argc, char **argv)
{
    enum { OPT_DIR = 256, OPT_MAX_AGE, OPT_MAX_SIZE, OPT_FLUSH, OPT_PROC_ROOT, OPT_SYS_ROOT };
    static const struct option longopts[] = {
        { "dir", required_argument, NULL, OPT_DIR },
        { "delay", required_argument, NULL, 'd' },
        { "iterations", required_argument, NULL, 'n' },
        { "max-age", required_argument, NULL, OPT_MAX_AGE },
        { "max-size", required_argument, NULL, OPT_MAX_SIZE },
        { "flush", required_argument, NULL, OPT_FLUSH },
        { "proc-root", required_argument, NULL, OPT_PROC_ROOT },
        { "sys-root", required_argument, NULL, OPT_SYS_ROOT },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    struct record_opts o = { .stop = &stop_requested };
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, ":d:n:h", longopts, NULL)) != -1) {
        char *end;
        double v;
        switch (c) {
        case OPT_DIR: o.dir = optarg; break;
        case 'n': o.iterations = parse_long_arg(optarg, "-n", 1, 1000000000L); break;
        case 'd': case OPT_MAX_AGE: case OPT_MAX_SIZE: case OPT_FLUSH:
            errno = 0;
            v = strtod(optarg, &end);
            if (*optarg == '\0' || *end != '\0' || errno || !(v > 0 && v < 1e9))
                bad_usage("invalid value '%s' for %s", optarg, argv[optind - 1]);
            if (c == 'd') {
                if (!(v >= DELAY_MIN_S && v <= DELAY_MAX_S))
                    bad_usage("invalid delay '%s' (seconds, %g to %g)", optarg, DELAY_MIN_S, DELAY_MAX_S);
                o.interval_s = v;
            } else if (c == OPT_MAX_AGE) {
                o.max_age_s = v * 86400.0;
            } else if (c == OPT_MAX_SIZE) {
                o.max_bytes = (uint64_t)(v * 1024 * 1024);
            } else {
                o.flush_s = v;
            }
            break;
        case OPT_PROC_ROOT: o.proc_root = optarg; break;
        case OPT_SYS_ROOT: o.sys_root = optarg; break;
        case 'h':
            printf("Usage: iotriage record [--dir DIR] [-d SECONDS] [--max-age DAYS] [--max-size MB]\n"
                   "Records a sample every interval to hourly zstd files in DIR (default %s),\n"
                   "for `iotriage --replay DIR` to look back at. Runs in the foreground (for systemd).\n"
                   "\n"
                   "  --dir DIR          the recording directory\n"
                   "  -d, --delay SECS   between samples (default %g)\n"
                   "  -n N               stop after N samples\n"
                   "  --flush SECS       end a compressed frame this often: what a crash may lose\n"
                   "                     (default %g)\n"
                   "  --max-age DAYS     delete its own files older than this (default %g)\n"
                   "  --max-size MB      keep its own files under this in all (default %llu)\n",
                   STORE_DEFAULT_DIR, RECORD_DEFAULT_INTERVAL_S, RECORD_DEFAULT_FLUSH_S,
                   RECORD_DEFAULT_AGE_S / 86400, (unsigned long long)(RECORD_DEFAULT_BYTES >> 20));
            exit(0);
        case ':': bad_usage("option %s needs a value", argv[optind - 1]); break;
        default: bad_usage("unknown record option %s", argv[optind - 1]); break;
        }
    }
    if (optind < argc)
        bad_usage("unexpected argument '%s'", argv[optind]);
    act_set_read_only();                 /* a recorder never acts */
    struct sigaction sa = { .sa_handler = on_signal };
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    return record_run(&o);
}

int main(int argc, char **argv)
{
    heap_settle();                       /* first: util/heap.h */
    /* The user's locale for characters alone (names, the screen's wide characters and
     * line drawing). The rest stays C's: numbers are read and written the C way (JSON
     * needs a decimal point, -d 0.5 must mean half a second everywhere), times are
     * printed as digits, messages are in the screen's language; and each category
     * loaded is files opened and mapped at every start, before the first frame. */
    setlocale(LC_CTYPE, "");
    if (argc > 1 && strcmp(argv[1], "audit") == 0)
        return main_audit(argc - 1, argv + 1);
    if (argc > 1 && strcmp(argv[1], "record") == 0)
        return main_record(argc - 1, argv + 1);
    if (argc > 1 && strcmp(argv[1], "trial") == 0)
        return trial_main(argc - 1, argv + 1);
    if (argc > 1 && strcmp(argv[1], "export") == 0)
        return export_main(argc - 1, argv + 1, IOTRIAGE_VERSION);
    struct args a;
    parse_args(argc, argv, &a);
    if (a.read_only)
        act_set_read_only();

    struct sigaction sa = { .sa_handler = on_signal };
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);

    struct pipeline_opts po = {
        .sampler = { .threads = a.threads, .pids = a.pids, .npids = a.npids,
                     .proc_root = a.proc_root, .sys_root = a.sys_root, .no_bpf = a.no_bpf,
                     .defer_idle_scans = !a.batch, .defer_lens = !a.batch },
        .replay = a.replay, .replay_from = a.from, .replay_to = a.to, .replay_at = a.at,
        .interval_s = a.delay_s,
    };
    /* The devices' quiet-time levels of earlier runs (store/state.h): this machine's,
     * not those of a tree given with --proc-root or --sys-root. */
    char state_path[4096];
    if (!a.replay && !a.proc_root && !a.sys_root)
        po.state_path = state_default_path(state_path, sizeof(state_path));
    char err[320] = "";
    struct pipeline *p;
    /* The screen's terminal is set up while the first sample is taken. */
    if (!a.batch)
        tui_prepare();
    int orc = pipeline_open(&p, &po, err, sizeof(err));
    if (orc < 0) {
        tui_pause();
        fprintf(stderr, "iotriage: %s\n", err);
        /* A file that is no recording at all (not one sample decodes) is a bad argument,
         * like a bad option; one that cannot be read is an error like any other. */
        return a.replay && (orc == -EINVAL || orc == -EPROTO) ? 2 : 1;
    }
    /* A machine the recorder watches: its quiet-time levels judge saturation from the
     * first refresh (recorder.h). $IOTRIAGE_RECORD_DIR names another directory, or none
     * ("" turns it off). */
    if (!a.replay) {
        const char *rdir = store_record_dir();
        if (rdir && access(rdir, R_OK | X_OK) == 0) {
            char berr[256];
            (void)record_baselines_load(rdir, clock_wall(), 86400, pipeline_baselines(p), berr, sizeof(berr));
        }
    }
    if (pipeline_state_note(p) || (a.batch && pipeline_replay_damages(p)))
        tui_pause();
    if (pipeline_state_note(p))
        fprintf(stderr, "iotriage: %s\n", pipeline_state_note(p));
    /* Printed samples: the damages first, on stderr, and exit status 1 after the rest. */
    if (a.batch)
        print_damages(p);
    FILE *record = NULL;
    struct stream_sink rec = { .name = a.record, .format = STREAM_JSON, .only_active = a.only_active };
    if (a.record) {
        record = fopen(a.record, "w");
        if (!record) {
            int e = errno;
            tui_pause();
            fprintf(stderr, "iotriage: cannot write %s: %s\n", a.record, strerror(e));
            pipeline_close(p);
            return 1;
        }
        rec.f = record;
        struct sink rs = stream_sink(&rec);
        pipeline_add_sink(p, &rs);
    }
    int rc;
    if (a.batch) {
        rc = run_batch(&a, p);
    } else {
        struct tui_opts to = {
            .delay_s = a.delay_s, .threads = a.threads, .only_active = a.only_active,
            .proc_root = a.proc_root, .sys_root = a.sys_root, .recording = a.record,
        };
        rc = tui_run(p, &to);
    }
    /* The screen's terminal is its own again: what it could not show of the files. */
    if (!a.batch)
        print_damages(p);
    else if (pipeline_replay_damages(p) && rc == 0)
        rc = 1;
    pipeline_close(p);
    if (record && fclose(record) != 0 && rc == 0) {
        fprintf(stderr, "iotriage: writing %s: %s\n", a.record, strerror(errno));
        rc = 1;
    }
    return rc;
}
