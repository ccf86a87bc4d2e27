/* SPDX-License-Identifier: GPL-2.0-or-later */
/* bpfstats: keep the kernel's BPF run-time statistics on (BPF_ENABLE_STATS) for as long
 * as this process lives, so that `bpftool prog show` reports run_time_ns and run_cnt per
 * program; they go off again when it exits, however it exits (the kernel counts the
 * holders of the returned fd). Used by bench/lens.sh to time the lens's programs. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>

int main(void)
{
    int fd = bpf_enable_stats(BPF_STATS_RUN_TIME);
    if (fd < 0) {
        fprintf(stderr, "bpfstats: BPF_ENABLE_STATS: %s\n", strerror(errno));
        return 1;
    }
    printf("on\n");
    fflush(stdout);
    pause();                     /* until a signal ends us; the fd closes with us */
    return 0;
}
