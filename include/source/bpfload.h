/* source/bpfload.h: what loading a BPF object needs, shared by the lens (source/lens.h)
 * and the task iterator (source/taskiter.h).
 *
 * bpfload_check says whether this process may load one here: root or CAP_BPF +
 * CAP_PERFMON in its effective set, and the kernel's BTF at /sys/kernel/btf/vmlinux (the
 * objects are CO-RE: libbpf relocates them against it). Between bpfload_begin and
 * bpfload_end, libbpf's messages are not printed (they would land on the screen): its
 * last warning line is kept, for the caller's reason when the load fails. One load at a
 * time: the line is one static buffer, libbpf's print function one global. */
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

#endif
