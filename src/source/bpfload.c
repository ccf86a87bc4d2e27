/* SPDX-License-Identifier: GPL-2.0-or-later */
/* bpfload.c: privileges, BTF and libbpf's messages for loading a BPF object
 * (source/bpfload.h). */
#include "source/bpfload.h"

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CAP_PERFMON_BIT 38
#define CAP_BPF_BIT     39

static char last_libbpf[160];

__attribute__((format(printf, 2, 0)))
static int keep_print(enum libbpf_print_level level, const char *fmt, va_list ap);
static int keep_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
    if (level != LIBBPF_WARN)
        return 0;
    char line[sizeof last_libbpf];
    vsnprintf(line, sizeof line, fmt, ap);
    size_t n = strlen(line);
    while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == ' '))
        line[--n] = '\0';
    if (n > 0)
        memcpy(last_libbpf, line, n + 1);
    return 0;
}

/* Whether the effective capability set holds both bits (/proc/self/status CapEff). */
static bool have_caps(void)
{
    FILE *f = fopen("/proc/self/status", "re");
    if (!f)
        return false;
    char line[256];
    unsigned long long eff = 0;
    bool found = false;
    while (!found && fgets(line, sizeof line, f))
        found = sscanf(line, "CapEff: %llx", &eff) == 1;
    fclose(f);
    return found && (eff >> CAP_BPF_BIT & 1) && (eff >> CAP_PERFMON_BIT & 1);
}

int bpfload_check(char *err, size_t errlen)
{
    if (geteuid() != 0 && !have_caps()) {
        snprintf(err, errlen, "not root and no CAP_BPF+CAP_PERFMON");
        return -EPERM;
    }
    if (access("/sys/kernel/btf/vmlinux", R_OK) != 0) {
        int e = errno;
        snprintf(err, errlen, "no kernel BTF at /sys/kernel/btf/vmlinux: %s", strerror(e));
        return -e;
    }
    return 0;
}

libbpf_print_fn_t bpfload_begin(void)
{
    last_libbpf[0] = '\0';
    return libbpf_set_print(keep_print);
}

void bpfload_end(libbpf_print_fn_t old)
{
    libbpf_set_print(old);
}

const char *bpfload_last(void)
{
    return last_libbpf;
}

enum bpfload_loader bpfload_choice(void)
{
    const char *v = getenv("IOTRIAGE_BPF_LOADER");
    if (v && strcmp(v, "libbpf") == 0)
        return BPFLOAD_LIBBPF;
    if (v && strcmp(v, "light") == 0)
        return BPFLOAD_LIGHT;
    return BPFLOAD_AUTO;
}
