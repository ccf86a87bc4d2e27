/* SPDX-License-Identifier: GPL-2.0-or-later */
/* lens.bpf.h: what the BPF lens's objects share (src/bpf/kern/waits.bpf.c,
 * requests.bpf.c, requests_tables.bpf.c, writeback.bpf.c). mk/bpf.mk compiles each into
 * an object of its own and links them (bpftool gen object) into one, build/bpf/
 * iotriage.bpf.o, from which the skeletons are made: one object loaded, as before the
 * split. Here: the kernel structures read, the maps and globals one file defines and
 * others use (declared extern; the linker resolves them to the one definition), the
 * global functions of requests_tables.bpf.c, and the inline helpers several files use
 * (inlined where they are used, as in one file).
 *
 * No vmlinux.h: the few kernel structures read are declared below with
 * preserve_access_index, so libbpf relocates each field against the running kernel's
 * BTF (CO-RE) and the object needs no BTF of the build machine.
 */
#ifndef IOTRIAGE_LENS_BPF_H
#define IOTRIAGE_LENS_BPF_H

#include "bpf/kern_types.h"

#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

#include "bpf/waits.h"
#include "bpf/requests.h"
#include "bpf/writeback.h"

/* ---- The kernel structures read, only the fields used (CO-RE relocates them). ----
 * tp_btf arguments are typed kernel pointers: fields are read with plain loads (the
 * verifier follows the types; a fault reads 0), not bpf_probe_read_kernel calls, which
 * cost a helper call each. Only the old kernels' flavours below use BPF_CORE_READ. */
struct signal_struct {
    struct {
        int counter;
    } live;                     /* atomic_t: the group's threads not yet in do_exit's end */
} __attribute__((preserve_access_index));

struct task_struct {
    unsigned int __state;       /* at sched_switch, the state prev sleeps in (5.14 on) */
    unsigned int flags;
    unsigned int in_iowait : 1;
    int pid;
    int tgid;
    struct signal_struct *signal;
} __attribute__((preserve_access_index));

/* Before 5.14 the state was `volatile long state`. */
struct task_struct___pre514 {
    long state;
} __attribute__((preserve_access_index));

/* include/linux/sched.h: the bit every interruptible sleep has (TASK_INTERRUPTIBLE);
 * an uninterruptible one (TASK_UNINTERRUPTIBLE, KILLABLE, IDLE) has 2 and not this. */
#define TASK_INTERRUPTIBLE 0x1

struct blk_mq_ops;
struct request_queue;

struct gendisk {
    int major;
    int first_minor;
    struct request_queue *queue;
} __attribute__((preserve_access_index));

struct request_queue {
    const struct blk_mq_ops *mq_ops;
    struct gendisk *disk;
} __attribute__((preserve_access_index));

struct block_device {
    __u32 bd_dev;
    struct gendisk *bd_disk;
} __attribute__((preserve_access_index));

struct bvec_iter {
    __u64 bi_sector;
    unsigned int bi_size;
    unsigned int bi_idx;        /* the entry of bi_io_vec the bio starts at */
} __attribute__((preserve_access_index));

struct address_space;

struct page {
    struct address_space *mapping;  /* low bits set: anonymous or movable, no inode */
} __attribute__((preserve_access_index));

struct bio_vec {
    struct page *bv_page;
} __attribute__((preserve_access_index));

struct super_block {
    __u32 s_dev;
} __attribute__((preserve_access_index));

struct inode {
    unsigned long i_ino;
    struct super_block *i_sb;
} __attribute__((preserve_access_index));

struct address_space {
    struct inode *host;
} __attribute__((preserve_access_index));

/* The cgroup the kernel charged a bio to: bio->bi_blkg->blkcg->css.cgroup (only with
 * CONFIG_BLK_CGROUP: bpf_core_field_exists guards it). */
struct kernfs_node {
    __u64 id;                   /* a v2 cgroup's id: its directory's inode number */
} __attribute__((preserve_access_index));

struct cgroup_root {
    int hierarchy_id;           /* 0: the v2 (default) hierarchy */
} __attribute__((preserve_access_index));

struct cgroup {
    int level;                  /* 0: a hierarchy's root */
    struct kernfs_node *kn;
    struct cgroup_root *root;
} __attribute__((preserve_access_index));

struct cgroup_subsys_state {
    struct cgroup *cgroup;
} __attribute__((preserve_access_index));

struct blkcg {
    struct cgroup_subsys_state css;
} __attribute__((preserve_access_index));

struct blkcg_gq {
    struct blkcg *blkcg;
} __attribute__((preserve_access_index));

struct bio {
    struct bio *bi_next;
    struct block_device *bi_bdev;
    unsigned short bi_ioprio;
    unsigned short bi_vcnt;
    struct bvec_iter bi_iter;
    struct blkcg_gq *bi_blkg;
    struct bio_vec *bi_io_vec;
} __attribute__((preserve_access_index));

struct request {
    struct request_queue *q;
    unsigned int cmd_flags;     /* the op in its low 8 bits (REQ_OP_MASK) */
    __u64 __sector;             /* its first bio's sector until a completion advances it */
    struct bio *bio;
    __u64 start_time_ns;        /* allocated (blk_mq_rq_ctx_init); 0 without iostats,
                                 * a scheduler or the queue's statistics */
} __attribute__((preserve_access_index));

/* Before 6.12 the request carried its own copy of the priority (6975c1a486a4 removed
 * it), and before 5.14 its disk (rq_disk; then q->disk); the flavours let one object
 * read whichever the running kernel has. */
struct request___old {
    unsigned short ioprio;
    struct gendisk *rq_disk;
} __attribute__((preserve_access_index));

/* Before 5.12 a bio named its disk and partition (bi_disk, bi_partno), not a bdev. */
struct bio___old {
    struct gendisk *bi_disk;
    unsigned char bi_partno;
} __attribute__((preserve_access_index));

/* ---- Maps and globals defined in one file, used in others. ----
 * The maps' types are named here, so that the file defining one (struct lens_..._map
 * NAME SEC(".maps")) and the others (extern) agree; the linker makes them one map. */
/* One word per program and CPU (see ptr_bits). */
enum { SL_QUEUE, SL_GETRQ, SL_MERGE, SL_INSERT, SL_ISSUE, SL_RQMERGE, SL_REQUEUE,
       SL_COMPLETE, SL_WB, SL_N };

/* requests_tables.bpf.c */
struct lens_rqs_map {
    __uint(type, BPF_MAP_TYPE_ARRAY);
    __uint(max_entries, LENS_RQ_SETS);
    __type(key, __u32);
    __type(value, struct lens_rq_set);
};
extern struct lens_rqs_map rqs SEC(".maps");
struct lens_devprio_map {
    __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
    __uint(max_entries, LENS_MAX_DEVPRIO);
    __type(key, __u32);
    __type(value, struct lens_dp_val);
};
extern struct lens_devprio_map devprio SEC(".maps");
struct lens_scratch_map {
    __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
    __uint(max_entries, SL_N);
    __type(key, __u32);
    __type(value, __u64);
};
extern struct lens_scratch_map scratch SEC(".maps");
extern const volatile __u32 rq_set_shift;
extern struct lens_dev_val lens_devs[LENS_MAX_DEVS];
extern __u64 lens_dropped;

/* writeback.bpf.c */
struct lens_dirtiers_map {
    __uint(type, BPF_MAP_TYPE_LRU_HASH);
    __uint(max_entries, LENS_MAX_DIRTY);
    __type(key, struct lens_dirty_key);
    __type(value, struct lens_dirty_val);
};
extern struct lens_dirtiers_map dirtiers SEC(".maps");
struct lens_wbs_map {
    __uint(type, BPF_MAP_TYPE_LRU_PERCPU_HASH);
    __uint(max_entries, LENS_MAX_WB);
    __type(key, struct lens_wb_key);
    __type(value, struct lens_count_val);
};
extern struct lens_wbs_map wbs SEC(".maps");
extern const volatile bool lens_wb_split;

/* ---- The global functions of the tables (requests_tables.bpf.c). ---- */
int dev_index(__u32 dev);
int dev_claim(__u32 dev);
int dev_rate_tick(__u32 di);
int dp_index(__u32 dev, __u32 prio);
int rq_index(__u64 key);
int rq_drop(int way);
int rq_claim_index(__u64 key, __u64 now, __u32 shift, __u32 dev);
int rq_take(int way, __u64 key, __u64 now, __u32 shift, __u32 dev);

/* ---- Inline helpers of several files. ---- */
/* 1 when a > b, else 0, without a branch, for a and b under 2^63 (then b - a wraps
 * exactly when a > b). The verifier walks straight-line code once: a branch per
 * comparison would double the paths after it. (The barrier keeps clang from turning
 * the subtraction back into a comparison, which BPF makes with a branch.) */
static __always_inline __u64 gt_bit(__u64 a, __u64 b)
{
    __u64 d = b - a;
    barrier_var(d);
    return d >> 63;
}

/* 1 when a >= b, else 0 (a and b under 2^63, as gt_bit). */
static __always_inline __u64 ge_bit(__u64 a, __u64 b)
{
    return 1 - gt_bit(b, a);
}

/* 1 when a != 0, else 0 (a under 2^63). */
static __always_inline __u64 nz_bit(__u64 a)
{
    return gt_bit(a, 0);
}

/* A key's home slot, before the table's mask: the high half of its Fibonacci hash. */
static __always_inline __u32 slot_hash(__u64 key)
{
    return (__u32)((key * 0x9E3779B97F4A7C15ULL) >> 32);
}

static __always_inline struct lens_dev_val *dev_at(int i)
{
    return i < 0 ? NULL : &lens_devs[i & (LENS_MAX_DEVS - 1)];
}

static __always_inline __u32 rq_set_index(__u64 key)
{
    /* Fibonacci hashing: the top bits of key times 2^64 / golden ratio. */
    __u32 shift = rq_set_shift & 63;
    return (__u32)((key * 0x9E3779B97F4A7C15ULL) >> shift) & (LENS_RQ_SETS - 1);
}

static __always_inline struct lens_rq *rq_at(int i)
{
    if (i < 0)
        return NULL;
    __u32 set = (__u32)i >> 1;
    struct lens_rq_set *s = bpf_map_lookup_elem(&rqs, &set);
    if (!s)
        return NULL;
    barrier_var(s);             /* clang would add the offset before the test */
    return &s->way[i & 1];
}

#define RQ_TAKE_CLAIM 0x100         /* rq_take's shift: may claim a way */

/* A kernel pointer's bits as a number, for hashing: the verifier forbids arithmetic on
 * pointers, but a word read back from a map value is a number. A program never runs
 * nested in itself on one CPU, so its own per-CPU word is not overwritten between the
 * two accesses. 0 when the scratch map is missing (never). */
static __always_inline __u64 ptr_bits(const void *p, __u32 slot)
{
    volatile __u64 *w = bpf_map_lookup_elem(&scratch, &slot);
    if (!w)
        return 0;
    *w = (__u64)p;
    return *w;
}

/* An inode's key; false for a mapping without one (anonymous, swap, movable: low bits).
 * Probe reads: the mapping comes from a tracepoint's argument or from a bio's vector, read
 * by one (bio_first_mapping); a helper call per field, once per page dirtied or bio. */
static __always_inline bool dirty_key(const struct address_space *m, struct lens_dirty_key *k)
{
    if (!m || (ptr_bits(m, SL_WB) & 3))
        return false;
    const struct inode *ino = BPF_CORE_READ(m, host);
    if (!ino)
        return false;
    k->ino = BPF_CORE_READ(ino, i_ino);
    k->sdev = BPF_CORE_READ(ino, i_sb, s_dev);
    k->pad = 0;
    return true;
}

/* The v2 cgroup (not the root) the kernel charged the bio to, else 0: on v2 with io and
 * memory, cgroup writeback tags the flusher's bios with the dirtying cgroup; with io on
 * v1, or without cgroup writeback, they carry the root. */
static __always_inline __u64 bio_blkcg(struct bio *bio)
{
    if (!bpf_core_field_exists(bio->bi_blkg))
        return 0;
    struct blkcg_gq *g = bio->bi_blkg;
    struct blkcg *c = g ? g->blkcg : NULL;
    struct cgroup *cg = c ? c->css.cgroup : NULL;
    if (!cg || cg->level == 0)
        return 0;
    struct cgroup_root *root = cg->root;
    if (!root || root->hierarchy_id != 0)
        return 0;
    struct kernfs_node *kn = cg->kn;
    return kn ? kn->id : 0;
}

/* A kernel thread's bio, charged to the last dirtier of the inode of its first page: a
 * writeback bio carries pages of one inode (a filesystem writes back inode by inode). */
/* The mapping of the page a bio's data starts at: its vector's entry bi_iter.bi_idx. A
 * clone (a layer's bio below dm or md: bi_vcnt 0) shares its parent's vector from there,
 * so the disk below an LV sees whose pages the flusher writes, as the LV does. Probe reads:
 * an index into the vector is a variable offset, which the verifier refuses on a BTF
 * pointer. */
static __always_inline const struct address_space *bio_first_mapping(struct bio *bio)
{
    __u64 vec = ptr_bits(bio->bi_io_vec, SL_WB);
    if (!vec)
        return NULL;
    __u32 idx = bio->bi_iter.bi_idx;
    struct page *pg = NULL;
    if (bpf_probe_read_kernel(&pg, sizeof(pg), (const void *)(vec + (__u64)idx * bpf_core_type_size(struct bio_vec) +
                                                         bpf_core_field_offset(struct bio_vec, bv_page))) || !pg)
        return NULL;
    return BPF_CORE_READ(pg, mapping);
}

static __always_inline void wb_charge(struct bio *bio, __u32 part, __u64 bytes)
{
    struct lens_wb_key k = { .blkcg = bio_blkcg(bio), .dev = part };
    struct lens_dirty_key dk;
    if (dirty_key(bio_first_mapping(bio), &dk)) {
        struct lens_dirty_val *dv = bpf_map_lookup_elem(&dirtiers, &dk);
        if (dv) {
            k.tgid = dv->tgid;
            k.cgid = dv->cgid;
            __builtin_memcpy(k.comm, dv->comm, sizeof(k.comm));
        }
    }
    struct lens_count_val *v = bpf_map_lookup_elem(&wbs, &k);
    if (v) {
        v->bytes += bytes;      /* this CPU's copy, as in submits */
        v->bios += 1;
    } else {
        struct lens_count_val nv = { .bytes = bytes, .bios = 1 };
        bpf_map_update_elem(&wbs, &k, &nv, BPF_NOEXIST);
    }
}

#endif
