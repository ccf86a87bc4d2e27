/* SPDX-License-Identifier: GPL-2.0-or-later */
/* writeback.bpf.c: the BPF lens's writeback (issue #14), read by
 * src/source/lens_writeback.c. Per inode: the last process (and its v2 cgroup) that
 * dirtied one of its pages; per (device, dirtier, cgroup): the bytes kernel threads
 * submitted for it (writeback charged to whoever dirtied the pages, and the cgroup the
 * kernel itself charged), added by lens_bio_queue (requests.bpf.c, through wb_charge in
 * lens.bpf.h). One of the objects linked into the lens (mk/bpf.mk).
 */
#include "lens.bpf.h"

/* Each inode's last dirtier (bpf/writeback.h: struct lens_dirty_key). LRU: an inode whose
 * pages were dirtied long ago and not since makes room; its writeback is then unknown. */
struct lens_dirtiers_map dirtiers SEC(".maps");     /* the type: lens.bpf.h */

/* Kernel threads' bytes by dirtier, per CPU like submits. */
struct lens_wbs_map wbs SEC(".maps");     /* the type: lens.bpf.h */

/* Split the kernel threads' bytes by dirtier (the wbs map): on when a page-dirtying
 * tracepoint is attached (lens.c), so that without one no bio pays for the lookups. */
const volatile bool lens_wb_split = false;

/* ---- Writeback: who dirtied the pages a kernel thread writes. ---- */

/* Runs when a page (folio) goes from clean to dirty, in the dirtier's context (a write(2)
 * or a fault on a shared writable map): once per page, so an unchanged dirtier costs one
 * lookup and no write. A kernel thread's dirtying (a filesystem's metadata, a loop
 * device's worker) leaves the inode's last process dirtier as it was. */
static __always_inline int dirty_note(struct address_space *m)
{
    struct task_struct *cur = bpf_get_current_task_btf();
    if (cur->flags & PF_KTHREAD)
        return 0;
    struct lens_dirty_key k;
    if (!dirty_key(m, &k))
        return 0;
    __u32 tgid = (__u32)cur->tgid;
    __u64 cg = bpf_get_current_cgroup_id();
    struct lens_dirty_val *v = bpf_map_lookup_elem(&dirtiers, &k);
    if (v && v->tgid == tgid && v->cgid == cg)
        return 0;
    struct lens_dirty_val n = { .cgid = cg, .tgid = tgid };
    bpf_get_current_comm(n.comm, sizeof(n.comm));
    bpf_map_update_elem(&dirtiers, &k, &n, BPF_ANY);
    return 0;
}

/* mm/page-writeback.c folio_account_dirtied (5.17+); before, account_page_dirtied with
 * writeback_dirty_page. Both pass the mapping second. lens.c loads whichever the running
 * kernel has (neither: no split of the writeback, the rest of the lens unchanged). */
SEC("tp_btf/writeback_dirty_folio")
int BPF_PROG(lens_dirty_folio, void *folio, struct address_space *mapping)
{
    return dirty_note(mapping);
}

SEC("?tp_btf/writeback_dirty_page")
int BPF_PROG(lens_dirty_page, void *page, struct address_space *mapping)
{
    return dirty_note(mapping);
}
