/* out/output.h: batch outputs. Each reads one result (and the snapshot it points to) and
 * writes one sample; none of them changes anything it is given.
 *   out_text_sample: human text, like `top -b` / `iotop -b` with iostat's device columns.
 *   out_json_sample: one JSON object on one line (NDJSON); keys documented in docs/json.md.
 */
#ifndef IOTRIAGE_OUT_OUTPUT_H
#define IOTRIAGE_OUT_OUTPUT_H

#include <stdbool.h>
#include <stdio.h>

#include "delta.h"
#include "verdict.h"

/* The JSON sample format's version: raised when a key changes meaning or goes away
 * (adding keys does not raise it). A replay refuses samples from a newer version. */
#define IOTRIAGE_JSON_VERSION 1

/* The texts of the JSON `notes` (and what a replay maps back to source errors). */
#define NOTE_PSI_ENOENT "kernel without PSI or booted with psi=0"
#define NOTE_DA_OFF     "kernel.task_delayacct is 0: delays unavailable; after enabling it only tasks started later carry data"
#define NOTE_DA_MISSING "kernel.task_delayacct not found: kernel without delay accounting"

/* harden (issue #18): sysfs that could not describe the devices (snapshot.sys_note,
 * filled by src/snapshot.c): printf formats. */
#define NOTE_SYS_ATTR   "%s %s unreadable (%s), and %zu more devices: their scheduler, nr_requests " \
                        "or inflight are unknown (null), not absent"
#define NOTE_PROC_SUBSET "%s shows processes only (a procfs mounted subset=pid): /proc/diskstats, " \
                         "pressure/ and kernel.task_delayacct cannot be read there; devices, PSI " \
                         "and delay accounting are unknown, not missing from the kernel"
#define NOTE_HIDEPID    "%ld of the kernel's %ld tasks are hidden: /proc is mounted hidepid=%s and " \
                        "uid %u may not see other users' processes (root or the gid= group can)"
#define NOTE_SYS_EMPTY  "no class/block under the sysfs root (%s: empty or not mounted?): schedulers " \
                        "and nr_requests are unknown (null), not absent"

struct out_opts {
    const char *hostname;
    bool only_active;       /* -o: only tasks that moved bytes or waited on I/O */
    bool utf8;              /* the terminal/locale takes UTF-8 (text output only) */
};

/* Is this task doing I/O this interval (reads, writes or block-I/O waits)? */
bool task_is_active(const struct task_rates *t);

/* printf's "%.*f" of v (the same text), without its machinery for prec 0 to 3 and
 * |v| x 10^prec below 1e15: the batch output formats a dozen numbers per task per refresh. Returns
 * the length written (buf holds at least 24 bytes for the fast path). */
size_t fmt_fixed(char *buf, size_t n, double v, int prec);

/* printf's "%lld" of v into buf (at most 20 characters and a NUL). Returns the length. */
size_t fmt_int(char buf[24], long long v);

/* Bytes per second the iotop way: 512B, 4.00K, 12.3M ("-" when unknown). */
void fmt_rate(char *buf, size_t n, double bps);

/* The devices task ti does I/O to, "vda,loop0"; unknown (unreadable fds) as `unknown`. */
void fmt_task_devs(char *buf, size_t n, const struct result *r, size_t ti, const char *unknown);

/* One short human reason for an -errno from a source ("permission denied", "exited"). */
const char *source_err_text(int err);

void out_text_sample(FILE *f, const struct result *r, const struct verdicts *v,
                     const struct out_opts *o);
void out_json_sample(FILE *f, const struct result *r, const struct verdicts *v,
                     const struct out_opts *o);

/* Warnings of one task, in the verdicts' order: index lists built once per sample so
 * outputs need not scan every warning for every task. first[t]..first[t+1] index into
 * order[]. Free with warn_index_free. */
struct warn_index {
    size_t *first;                   /* ntasks + 1 entries */
    size_t *order;                   /* indices into v->w, grouped by task */
};
void warn_index_build(struct warn_index *ix, const struct verdicts *v, size_t ntasks);
void warn_index_free(struct warn_index *ix);

#endif
