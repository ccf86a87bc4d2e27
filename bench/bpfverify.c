/* SPDX-License-Identifier: GPL-2.0-or-later */
/* bpfverify: what the kernel's verifier spends on each program of a BPF object. Loads
 * the object with libbpf at log level 4 (the verifier's statistics only) and prints, per
 * program, the instructions it processed, its states and its verification time, then
 * the totals and the wall time of the whole load. The programs are loaded and closed
 * again: nothing is attached.
 *
 *   bpfverify OBJ [NAME=VALUE ...] [-v PROG]
 *
 * NAME=VALUE sets a read-only global (a const volatile of the object's .rodata) before
 * the load, as the program's loader does (src/source/lens.c sets lens_submits and
 * lens_wb_split: code behind them that is off is dead to the verifier and costs
 * nothing). -v PROG prints that program's whole verifier log at level 2 (every state it
 * verified, for finding which paths multiply) to stderr. Programs whose autoload is off
 * (SEC("?...")) are left out, as by the loader. Exit 0 when every program loaded.
 * Needs root (or CAP_BPF and CAP_PERFMON). Used by `make bench-verify` (mk/bpf.mk) and
 * tests/integration/test_bpfverify.sh. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <bpf/btf.h>
#include <bpf/libbpf.h>

#define MAX_PROGS 64
#define STATS_LOG (64u << 10)        /* level 4: a few lines */
#define FULL_LOG  (256u << 20)       /* level 2: a line per state and instruction */

struct prog_stats {
    long insns, states, peak, per_insn, verify_us;
};

static double mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* A read-only global by name, in the .rodata map's initial value (writable until the
 * load); its size decides how many bytes of the value are written. */
static int rodata_set(struct bpf_object *obj, const char *name, long long value)
{
    const struct btf *btf = bpf_object__btf(obj);
    struct bpf_map *map;
    bpf_object__for_each_map(map, obj) {
        const char *mn = bpf_map__name(map);
        size_t ml = strlen(mn);
        if (!bpf_map__is_internal(map) || ml < 7 || strcmp(mn + ml - 7, ".rodata"))
            continue;
        size_t sz = 0;
        const void *init = bpf_map__initial_value(map, &sz);
        const struct btf_type *sec = btf ? btf__type_by_id(btf, bpf_map__btf_value_type_id(map)) : NULL;
        if (!init || !sec || !btf_is_datasec(sec))
            return -ENOENT;
        const struct btf_var_secinfo *vs = btf_var_secinfos(sec);
        for (unsigned i = 0; i < btf_vlen(sec); i++, vs++) {
            const struct btf_type *var = btf__type_by_id(btf, vs->type);
            if (strcmp(btf__name_by_offset(btf, var->name_off), name))
                continue;
            if ((size_t)vs->offset + vs->size > sz || vs->size > sizeof(value))
                return -ERANGE;
            char *data = malloc(sz);
            if (!data)
                return -ENOMEM;
            memcpy(data, init, sz);
            /* little- or big-endian alike: the low bytes of the value */
            for (unsigned b = 0; b < vs->size; b++) {
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
                data[vs->offset + b] = (char)(value >> (8 * b));
#else
                data[vs->offset + b] = (char)(value >> (8 * (vs->size - 1 - b)));
#endif
            }
            int rc = bpf_map__set_initial_value(map, data, sz);
            free(data);
            return rc;
        }
    }
    return -ENOENT;
}

/* The statistics lines of a level-4 log (the last lines of any level's log). */
static void stats_parse(const char *log, struct prog_stats *s)
{
    *s = (struct prog_stats){ -1, -1, -1, -1, -1 };
    const char *p = strstr(log, "processed ");
    if (p)
        sscanf(p, "processed %ld insns (limit %*d) max_states_per_insn %ld total_states %ld peak_states %ld",
               &s->insns, &s->per_insn, &s->states, &s->peak);
    p = strstr(log, "verification time ");
    if (p)
        sscanf(p, "verification time %ld usec", &s->verify_us);
}

static int warn_only(enum libbpf_print_level level, const char *fmt, va_list ap)
{
    return level == LIBBPF_WARN ? vfprintf(stderr, fmt, ap) : 0;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: bpfverify OBJ [NAME=VALUE ...] [-v PROG]\n");
        return 2;
    }
    const char *verbose = NULL;
    libbpf_set_print(warn_only);     /* which program failed; the logs are ours */
    struct bpf_object *obj = bpf_object__open_file(argv[1], NULL);
    if (!obj) {
        fprintf(stderr, "bpfverify: %s: %s\n", argv[1], strerror(errno));
        return 1;
    }
    for (int i = 2; i < argc; i++) {
        if (!strcmp(argv[i], "-v") && i + 1 < argc) {
            verbose = argv[++i];
            continue;
        }
        char *eq = strchr(argv[i], '=');
        if (!eq) {
            fprintf(stderr, "bpfverify: %s: not NAME=VALUE\n", argv[i]);
            return 2;
        }
        *eq = '\0';
        int rc = rodata_set(obj, argv[i], strtoll(eq + 1, NULL, 0));
        if (rc < 0) {
            fprintf(stderr, "bpfverify: %s: %s\n", argv[i], strerror(-rc));
            return 2;
        }
    }

    struct bpf_program *prog;
    struct bpf_program *progs[MAX_PROGS];
    char *logs[MAX_PROGS];
    int n = 0;
    bpf_object__for_each_program(prog, obj) {
        if (!bpf_program__autoload(prog))
            continue;
        if (n == MAX_PROGS) {
            fprintf(stderr, "bpfverify: more than %d programs\n", MAX_PROGS);
            return 1;
        }
        bool full = verbose && !strcmp(verbose, bpf_program__name(prog));
        size_t sz = full ? FULL_LOG : STATS_LOG;
        logs[n] = calloc(1, sz);
        if (!logs[n]) {
            perror("bpfverify");
            return 1;
        }
        bpf_program__set_log_level(prog, full ? 2 : 4);
        bpf_program__set_log_buf(prog, logs[n], sz);
        progs[n++] = prog;
    }

    double t0 = mono_ms();
    int err = bpf_object__load(obj);
    double load_ms = mono_ms() - t0;

    /* libbpf loads the programs in this order and stops at the first one refused: on a
     * failed load that is the last one with statistics in its log. */
    int culprit = -1;
    struct prog_stats st[MAX_PROGS];
    for (int i = 0; i < n; i++) {
        stats_parse(logs[i], &st[i]);
        if (err && st[i].insns >= 0)
            culprit = i;
    }
    printf("%-22s %10s %8s %6s %9s %11s\n", "program", "insns", "states", "peak",
           "max/insn", "verify_ms");
    long tot_insns = 0, tot_states = 0, tot_us = 0;
    int failed = 0;
    for (int i = 0; i < n; i++) {
        const struct prog_stats *s = &st[i];
        if (s->insns < 0 || i == culprit) {
            failed++;
            printf("%-22s not loaded\n", bpf_program__name(progs[i]));
            if (i == culprit)       /* its log says why */
                fprintf(stderr, "--- %s log:\n%s\n", bpf_program__name(progs[i]), logs[i]);
            continue;
        }
        printf("%-22s %10ld %8ld %6ld %9ld %11.1f\n", bpf_program__name(progs[i]), s->insns,
               s->states, s->peak, s->per_insn, (double)s->verify_us / 1e3);
        tot_insns += s->insns;
        tot_states += s->states;
        tot_us += s->verify_us;
        if (verbose && !strcmp(verbose, bpf_program__name(progs[i])))
            fputs(logs[i], stderr);
    }
    printf("%-22s %10ld %8ld %6s %9s %11.1f\n", "total", tot_insns, tot_states, "", "",
           (double)tot_us / 1e3);
    printf("programs %d  loaded %d  whole load %.1f ms (wall)\n", n, n - failed, load_ms);
    bpf_object__close(obj);
    for (int i = 0; i < n; i++)
        free(logs[i]);
    if (err || failed) {
        fprintf(stderr, "bpfverify: load: %s\n", strerror(err ? -err : EINVAL));
        return 1;
    }
    return 0;
}
