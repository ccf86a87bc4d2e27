/* SPDX-License-Identifier: GPL-2.0-or-later */
/* kern_types.h: what a BPF program of iotriage (src/bpf/kern/) needs before libbpf's
 * headers, since none includes vmlinux.h: the kernel's fixed-width types, bool, the map
 * types and update flags used, and the task flags read. Each program declares the few
 * kernel structures it reads itself, with preserve_access_index (CO-RE). For the BPF
 * target only: user space takes these from <linux/types.h> and <bpf/bpf.h>. */
#ifndef IOTRIAGE_BPF_KERN_TYPES_H
#define IOTRIAGE_BPF_KERN_TYPES_H

typedef unsigned char __u8;
typedef unsigned short __u16;
typedef unsigned int __u32;
typedef unsigned long long __u64;
typedef signed char __s8;
typedef short __s16;
typedef int __s32;
typedef long long __s64;
typedef __u16 __be16;
typedef __u32 __be32;
typedef __u32 __wsum;
typedef _Bool bool;
#define true 1
#define false 0

/* include/uapi/linux/bpf.h */
enum bpf_map_type {
    BPF_MAP_TYPE_HASH = 1,
    BPF_MAP_TYPE_ARRAY = 2,
    BPF_MAP_TYPE_PERCPU_HASH = 5,
    BPF_MAP_TYPE_PERCPU_ARRAY = 6,
    BPF_MAP_TYPE_LRU_HASH = 9,
    BPF_MAP_TYPE_LRU_PERCPU_HASH = 10,
    BPF_MAP_TYPE_TASK_STORAGE = 29,
};
#define BPF_ANY     0
#define BPF_NOEXIST 1
#define BPF_F_NO_PREALLOC 1                 /* map_flags; local storage requires it */
#define BPF_LOCAL_STORAGE_GET_F_CREATE 1

/* include/linux/sched.h */
#define PF_EXITING   0x00000004     /* in do_exit, from exit_signals on */
#define PF_WQ_WORKER 0x00000020     /* a workqueue worker */
#define PF_KTHREAD   0x00200000     /* a kernel thread */

/* UNTRUSTED(T, p): p, a trusted pointer to kernel struct T, as an untrusted one, for
 * reading fields only. Why: on every path it verifies, the verifier checks each pointer
 * field loaded from a TRUSTED pointer for inherited trust, looking "T__safe_trusted" and
 * its siblings up by name in the kernel's BTF: a linear search of some 100,000 types per
 * load (kernel/bpf/verifier.c: check_ptr_to_btf_access, btf_nested_type_is_trusted), most
 * of a program's verification time. Through an untrusted pointer the same loads (a fault
 * reads 0) skip it; the verifier turns the kfunc call into a register move, so it costs
 * nothing at run time. Helpers that need a trusted pointer (task storage,
 * bpf_copy_from_user_task) keep the original. bpf_rdonly_cast came with 6.2: mk/bpf.mk
 * builds each object twice, with it (BPF_UNTRUSTED_READS=1, tried first) and without. */
#if defined(BPF_UNTRUSTED_READS) && BPF_UNTRUSTED_READS
extern void *bpf_rdonly_cast(const void *obj, __u32 btf_id) __attribute__((section(".ksyms")));
#define UNTRUSTED(T, p) ((T *)bpf_rdonly_cast((p), bpf_core_type_id_kernel(T)))
#else
#define UNTRUSTED(T, p) (p)
#endif

#endif
