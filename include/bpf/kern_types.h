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
#define PF_WQ_WORKER 0x00000020     /* a workqueue worker */
#define PF_KTHREAD   0x00200000     /* a kernel thread */

#endif
