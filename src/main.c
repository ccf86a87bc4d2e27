/* main.c: arguments, then the sampling loop: source -> snapshot -> delta -> output. */
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

#include "act/act.h"
#include "audit.h"
#include "delta.h"
#include "out/output.h"
#include "snapshot.h"
#include "tui/tui.h"
#include "verdict.h"
#include "util.h"

#define IOTRIAGE_VERSION "0.1.0"
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
    bool read_only;
    bool no_bpf;
};

static void usage(FILE *f)
{
    fputs("Usage: iotriage [options]\n"
          "       iotriage audit [--json] [--root DIR] [--units-only]\n"
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
          "      --replay FILE      show a recording on the screen (step, pause, speed)\n"
          "      --read-only        refuse every action (scheduler switch, ionice, delay\n"
          "                         accounting); the screen shows READ-ONLY\n"
          "      --no-bpf           do not load the BPF lens (iowait per task, request\n"
          "                         stages per device); iotriage says it is off\n"
          "  -h, --help             this help\n"
          "  -V, --version          version\n",
          f);
}

/* A one-line complaint and exit status 2, for anything wrong on the command line. */
__attribute__((format(printf, 1, 2), noreturn))
static void bad_usage(const char *fmt, ...);
static void bad_usage(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("iotriage: ", stderr);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputs(" (try --help)\n", stderr);
    exit(2);
}

static long parse_long_arg(const char *s, const char *opt, long min, long max)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (*s == '\0' || *end != '\0' || errno || v < min || v > max)
        bad_usage("invalid value for %s", opt);
    return v;
}

static void parse_args(int argc, char **argv, struct args *a)
{
    enum { OPT_JSON = 256, OPT_PROC_ROOT, OPT_SYS_ROOT, OPT_RECORD, OPT_REPLAY, OPT_READ_ONLY, OPT_NO_BPF };
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
        { "no-bpf", no_argument, NULL, OPT_NO_BPF },
        { NULL, 0, NULL, 0 },
    };
    memset(a, 0, sizeof(*a));
    a->delay_s = 1.0;
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
            if (*optarg == '\0' || *end != '\0' || errno || !(d >= 0.05 && d <= 86400.0))
                bad_usage("invalid delay '%s' (seconds, 0.05 to 86400)", optarg);
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
    if (a->replay && (a->batch || a->record))
        bad_usage("%s", "--replay drives the screen: not with -b, --json or --record");
}

static void sleep_until(double deadline)
{
    struct timespec ts = { .tv_sec = (time_t)deadline };
    ts.tv_nsec = (long)((deadline - (double)ts.tv_sec) * 1e9);
    while (!stop_requested && clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
        ;
}

static int run_batch(const struct args *a, FILE *record)
{
    struct sampler_opts so = {
        .threads = a->threads, .pids = a->pids, .npids = a->npids,
        .proc_root = a->proc_root, .sys_root = a->sys_root, .no_bpf = a->no_bpf,
    };
    char err[256] = "";
    struct sampler *s;
    if (sampler_open(&s, &so, err, sizeof(err)) < 0) {
        fprintf(stderr, "iotriage: %s\n", err);
        return 1;
    }
    char host[256] = "?";
    gethostname(host, sizeof(host) - 1);
    struct out_opts oo = { .hostname = host, .only_active = a->only_active };
    const char *cs = nl_langinfo(CODESET);
    oo.utf8 = cs && strcmp(cs, "UTF-8") == 0;

    /* Two snapshot slots, alternating: the previous one is kept for the deltas. */
    struct snapshot snaps[2];
    struct baselines hist = { 0 };
    int cur = 0;
    sampler_take(s, &snaps[cur]);
    double next = snaps[cur].mono;
    for (long i = 0; (a->iterations == 0 || i < a->iterations) && !stop_requested; i++) {
        next += a->delay_s;
        sleep_until(next);
        if (stop_requested)
            break;
        int prev = cur;
        cur ^= 1;
        sampler_take(s, &snaps[cur]);
        struct result r;
        struct verdicts v;
        delta_compute(&snaps[prev], &snaps[cur], &hist, &r);
        verdict_compute(&r, &v);
        if (a->json)
            out_json_sample(stdout, &r, &v, &oo);
        else
            out_text_sample(stdout, &r, &v, &oo);
        fflush(stdout);
        if (record) {
            out_json_sample(record, &r, &v, &oo);
            fflush(record);
        }
        verdicts_free(&v);
        result_free(&r);
        snapshot_free(&snaps[prev]);
        /* A machine too slow to keep up: start the next interval from now, not in the past. */
        double now = clock_mono();
        if (next < now - a->delay_s)
            next = now;
    }
    snapshot_free(&snaps[cur]);
    baselines_free(&hist);
    sampler_close(s);
    return ferror(stdout) ? 1 : 0;
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
                 "Exit status: 1 when any label is ignored, 0 when all are honoured, 2 on error.");
            exit(0);
        case ':': bad_usage("option %s needs a value", argv[optind - 1]); break;
        default: bad_usage("unknown audit option %s", argv[optind - 1]); break;
        }
    }
    if (optind < argc)
        bad_usage("unexpected argument '%s'", argv[optind]);
    return audit_run(&o);
}

int main(int argc, char **argv)
{
    setlocale(LC_ALL, "");
    /* Numbers are read and written the C way whatever the locale: JSON needs a decimal
     * point, and -d 0.5 must mean half a second everywhere. */
    setlocale(LC_NUMERIC, "C");
    if (argc > 1 && strcmp(argv[1], "audit") == 0)
        return main_audit(argc - 1, argv + 1);
    struct args a;
    parse_args(argc, argv, &a);
    if (a.read_only)
        act_set_read_only();

    struct sigaction sa = { .sa_handler = on_signal };
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);

    FILE *record = NULL;
    if (a.record) {
        record = fopen(a.record, "w");
        if (!record) {
            fprintf(stderr, "iotriage: cannot write %s: %s\n", a.record, strerror(errno));
            return 2;
        }
    }
    int rc;
    if (a.batch) {
        rc = run_batch(&a, record);
    } else {
        struct tui_opts to = {
            .delay_s = a.delay_s, .threads = a.threads, .only_active = a.only_active,
            .pids = a.pids, .npids = a.npids, .proc_root = a.proc_root, .sys_root = a.sys_root,
            .record = record, .replay = a.replay, .no_bpf = a.no_bpf,
        };
        rc = tui_run(&to);
    }
    if (record && fclose(record) != 0 && rc == 0)
        rc = 1;
    return rc;
}
