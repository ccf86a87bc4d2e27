/* SPDX-License-Identifier: GPL-2.0-or-later */
/* source/bpfload.h: what loading a BPF object needs, shared by the lens (source/lens.h)
 * and the task iterator (source/taskiter.h).
 *
 * bpfload_check says whether this process may load one here: root or CAP_BPF +
 * CAP_PERFMON in its effective set, and the kernel's BTF at /sys/kernel/btf/vmlinux (the
 * objects are CO-RE: libbpf relocates them against it). Between bpfload_begin and
 * bpfload_end, libbpf's messages are not printed (they would land on the screen): its
 * last warning line is kept, for the caller's reason when the load fails. One load at a
 * time: the line is one static buffer, libbpf's print function one global.
 *
 * Two loaders (issue #19): the light skeleton (bpftool gen skeleton -L), whose loader
 * program the kernel runs, doing the CO-RE relocations and BTF lookups itself (kernel
 * 5.17 and later: BPF_PROG_LOAD's core_relos), so that this process never reads or parses
 * /sys/kernel/btf/vmlinux (about 10 MB and 70-125 ms of CPU a load); and libbpf's normal
 * skeleton, which does that work here and loads on older kernels. bpfload_choice says
 * which to try, from IOTRIAGE_BPF_LOADER: "libbpf" (the normal skeleton only), "light"
 * (the light one only: its failure is the reason), anything else or unset: the light
 * one, then the normal one when the kernel refuses it. (The lens tries its light
 * skeleton from 6.1 on only: source/lens.c, lens_wait_maps_lru.) */
#ifndef IOTRIAGE_SOURCE_BPFLOAD_H
#define IOTRIAGE_SOURCE_BPFLOAD_H

#include <stddef.h>

#include <bpf/libbpf.h>

/* 0, or -errno with the reason in err ("not root and no CAP_BPF+CAP_PERFMON", "no
 * kernel BTF at /sys/kernel/btf/vmlinux: ..."). */
int bpfload_check(char *err, size_t errlen);
/* Keep libbpf's messages from here on; returns the print function to give back. */
libbpf_print_fn_t bpfload_begin(void);
void bpfload_end(libbpf_print_fn_t old);
/* libbpf's last warning line since bpfload_begin; "" when none. */
const char *bpfload_last(void);

enum bpfload_loader {
    BPFLOAD_AUTO,                    /* light, then libbpf */
    BPFLOAD_LIGHT,
    BPFLOAD_LIBBPF,
};
enum bpfload_loader bpfload_choice(void);
/* The names the JSON and the messages use for a loader that ran. */
#define BPFLOAD_NAME_LIGHT  "light"
#define BPFLOAD_NAME_LIBBPF "libbpf"

/* The light skeletons' variants that read kernel structures through untrusted pointers
 * (bpf/kern_types.h: UNTRUSTED; bpf_rdonly_cast, kernel 6.2+), which the kernel verifies
 * several times faster. Each is the same skeleton type as the plain one (the same
 * programs and maps), built from the same source with BPF_UNTRUSTED_READS=1 and
 * compiled in bpfcast.c apart, since both define that type: open with these, set its
 * sizes as for the plain one, load with these, destroy with the plain one's destroy
 * (the same code). A load that fails (a kernel without the kfunc) leaves the plain one
 * to try. */
struct tasks_lskel;
struct files_lskel;
struct iotriage_lskel;
struct tasks_lskel *bpfload_tasks_cast_open(void);
int bpfload_tasks_cast_load(struct tasks_lskel *s);
struct files_lskel *bpfload_files_cast_open(void);
int bpfload_files_cast_load(struct files_lskel *s);
struct iotriage_lskel *bpfload_lens_cast_open(void);
int bpfload_lens_cast_load(struct iotriage_lskel *s);

#endif
