/* SPDX-License-Identifier: GPL-2.0-or-later */
/* taskiter_files.bpf.c: the open-files pass of the task source (issue #19). A BPF iterator over
 * every open file of every thread group (iter/task_file): reading its file runs the
 * program once per open file, and each run writes one record (include/bpf/taskiter.h:
 * struct tasks_file_rec) with what fdmap.c would otherwise learn with an open and a
 * getdents64 of /proc/PID/fd and a statx per fd, for each process.
 *
 * An object of its own, apart from taskiter.bpf.c's: the task iterator loads before the
 * first frame, and this one when a refresh first asks for every process's open files
 * (source/taskiter.c: taskiter_files), which the first frame's seldom does (it leaves
 * idle processes' scans to the second; threads mode, or 32 processes that ever did disk
 * I/O, do ask): its load (a loader program, its verification, the CO-RE searches for its
 * four types, the attach target's lookup) is mostly out of the first frame's way. Built by mk/bpf.mk like taskiter.bpf.c, read through untrusted pointers
 * where the kernel has bpf_rdonly_cast (kern_types.h: UNTRUSTED).
 */
#include "bpf/kern_types.h"

#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>

#include "bpf/taskiter.h"

/* ---- The kernel structures read, only the fields used (CO-RE relocates them). ---- */
struct task_struct {
    int pid;
    int tgid;
} __attribute__((preserve_access_index));

struct super_block {
    __u32 s_dev;
} __attribute__((preserve_access_index));

struct inode {
    unsigned short i_mode;
    struct super_block *i_sb;
    unsigned long i_ino;
    __u32 i_rdev;
    long long i_size;
    __u64 i_blocks;
    unsigned int __i_nlink;
} __attribute__((preserve_access_index));

struct file {
    struct inode *f_inode;
    unsigned int f_flags;
    unsigned int f_mode;
} __attribute__((preserve_access_index));

/* The iterator's context, without CO-RE (as in taskiter.bpf.c: its layout is the
 * iterator's contract, the verifier checks each access by offset). */
struct seq_file;

struct bpf_iter_meta {
    struct seq_file *seq;
};

struct bpf_iter__task_file {
    struct bpf_iter_meta *meta;
    struct task_struct *task;
    __u32 fd;
    struct file *file;
};

char LICENSE[] SEC("license") = "GPL";

SEC("iter/task_file")
int files_dump(struct bpf_iter__task_file *ctx)
{
    struct seq_file *seq = ctx->meta->seq;
    struct task_struct *t = ctx->task;
    struct file *f = ctx->file;
    if (!t || !f)
        return 0;
    struct file *uf = UNTRUSTED(struct file, f);
    struct inode *ino = uf->f_inode;
    if (!ino)
        return 0;
    struct tasks_file_rec r;
    __builtin_memset(&r, 0, sizeof(r));
    struct task_struct *ut = UNTRUSTED(struct task_struct, t);
    r.tid = (__u32)ut->pid;
    r.tgid = (__u32)ut->tgid;
    r.fd = ctx->fd;
    r.flags = uf->f_flags;
    r.fmode = uf->f_mode;
    r.mode = ino->i_mode;
    r.nlink = ino->__i_nlink;
    r.rdev = ino->i_rdev;
    r.ino = ino->i_ino;
    r.size = (__u64)ino->i_size;
    r.blocks = ino->i_blocks;
    struct super_block *sb = ino->i_sb;
    r.dev = sb ? sb->s_dev : 0;
    bpf_seq_write(seq, &r, sizeof(r));
    return 0;
}
