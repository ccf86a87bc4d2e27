/* SPDX-License-Identifier: GPL-2.0-or-later */
/* tpcost.bpf.c: the cheapest tp_btf program the lens could leave attached (bench/tpcost.c):
 * one load of a global and a return, as a paused request program would be (issue #40).
 * signal_generate fires on every kill(2), even of an ignored signal. */
#include "bpf/kern_types.h"

#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

char LICENSE[] SEC("license") = "GPL";

__u32 tpcost_pause = 1;
__u64 tpcost_hits = 0;

SEC("tp_btf/signal_generate")
int BPF_PROG(tpcost_paused)
{
    if (tpcost_pause & 1)
        return 0;
    __sync_fetch_and_add(&tpcost_hits, 1);
    return 0;
}

/* The same on a block tracepoint: attached and detached, as the duty cycle does. */
SEC("tp_btf/block_rq_issue")
int BPF_PROG(tpcost_block)
{
    return 0;
}
