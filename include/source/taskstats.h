/* SPDX-License-Identifier: GPL-2.0-or-later */
/* source/taskstats: per-task delay accounting from the kernel's TASKSTATS generic netlink family.
 *
 * Contract
 * - taskstats_parse() is pure: it decodes the payload of one TASKSTATS_TYPE_STATS attribute,
 *   checking the length and the struct version before it reads any field. It never reads past
 *   len and never requires the payload to be aligned.
 * - taskstats_open() resolves the family (this works without privileges); taskstats_query()
 *   sends TASKSTATS_CMD_GET requests, which need CAP_NET_ADMIN in the initial user namespace.
 * - Call order: open, then any number of query/fetch_raw/set_batch/set_rcvbuf calls, then close.
 *   A struct taskstats_src is not thread-safe: use one per thread.
 * - Errors are negative errno values. Every function that takes err/errlen writes one line of
 *   human text there on failure (never a trailing newline) and leaves it untouched on success.
 *   Nothing here prints, exits or raises signals.
 * - Ownership: the caller owns ids[] and out[]; out[] is fully overwritten by a query, even on
 *   failure (entries not answered then have valid=false, error=-ECANCELED).
 * - Delay accounting is off by default since Linux 5.14 (sysctl kernel.task_delayacct). Tasks
 *   forked while it was off have no delay record: their blkio and swapin figures stay 0 forever,
 *   which means "unknown", not "no waiting". cpu_* are filled either way (KERNEL-FACTS.md
 *   section 6).
 * - What the kernel answers (observed on 6.18, pinned by tests/unit/test_taskstats.c):
 *   a PID query covers one thread and accepts any TID; a TGID query sums the live threads plus
 *   threads that already exited, and also accepts a non-leader TID (it answers for the group).
 *   For a single-threaded process the two agree exactly. A zombie (exited, not yet reaped)
 *   still answers: PID with its final figures, TGID with all delays 0 (exited threads are
 *   skipped): a TGID figure falling to 0 means the process is exiting, not that its counters
 *   were reset. After the reap: ESRCH.
 * - Cost on this 2-vCPU VM: about 2.0 us per task for PID queries and 1.75 us for TGID queries
 *   in batches of 64, against 3.2 / 2.8 us one request per round trip (batch 1).
 */
#ifndef IOTRIAGE_SOURCE_TASKSTATS_H
#define IOTRIAGE_SOURCE_TASKSTATS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Delay accounting figures for one task or thread group, as the kernel keeps them. */
struct delay_sample {
    bool     valid;            /* a reply arrived and passed the length/version checks */
    uint16_t version;          /* struct taskstats version of the reply */
    int32_t  error;            /* 0 when valid; else -ESRCH (task gone), -EINVAL (id refused or
                                * not positive), -EPROTO/-EINVAL (reply failed the checks),
                                * -ECANCELED (query aborted before this task was answered) */
    uint64_t cpu_count, cpu_delay_ns;
    uint64_t blkio_count, blkio_delay_ns;    /* synchronous block I/O waits */
    uint64_t swapin_count, swapin_delay_ns;
    /* cpu_run_virtual_total: the task's exact run time (se.sum_exec_runtime, ns, summed
     * over the threads for a TGID reply). Filled with or without delay accounting; it
     * moves whenever the task runs, so a task whose run time did not move did no I/O. */
    uint64_t run_ns;
    bool     has_run;          /* the reply carried it (the v2..v14 and v16+ layouts) */
};

/* Pure: check and decode the payload of one TASKSTATS_TYPE_STATS attribute.
 * Returns 0, -EINVAL when too short for the fields we read or version 0, -EPROTO otherwise bad
 * (a version whose struct is known to be longer than len, or an implausible version > 255).
 * On error *out is zeroed with valid=false and error set to the return value. */
int taskstats_parse(const void *payload, size_t len, struct delay_sample *out);

/* Requests per sendmsg. Replies that do not fit in the socket's receive buffer are dropped by
 * the kernel, which reports ENOBUFS; the query recovers by resending the missing ones with a
 * smaller batch. taskstats_open() sizes the buffer (256 KiB requested) for several batches. */
#define TASKSTATS_BATCH_DEFAULT 64u
#define TASKSTATS_BATCH_MAX     4096u

struct taskstats_src;

/* Counters since open, for tests and for the monitor's own health display. */
struct taskstats_counters {
    uint64_t requests;         /* GET requests sent (resends included) */
    uint64_t replies;          /* stats replies accepted */
    uint64_t gone;             /* per-task ESRCH/EINVAL answers */
    uint64_t bad_replies;      /* replies that failed a check (length, version, id, truncation) */
    uint64_t enobufs;          /* times the kernel reported dropped replies */
    uint64_t resent;           /* requests sent again because their reply was dropped */
};

/* Resolve the TASKSTATS family. Returns 0 or -errno; on failure writes a one-line human reason to
 * err (e.g. "taskstats: family TASKSTATS not found (kernel without CONFIG_TASKSTATS)"). */
int  taskstats_open(struct taskstats_src **out, char *err, size_t errlen);

/* Ask for n tasks at once (ids are TIDs when tgid is false, TGIDs when true), pipelined in batches.
 * out[i] corresponds to ids[i]; a task that has exited gets valid=false. Returns 0, or -errno for a
 * failure of the whole query: -EPERM means no CAP_NET_ADMIN (say so in err). */
int  taskstats_query(struct taskstats_src *src, const pid_t *ids, size_t n, bool tgid,
                     struct delay_sample *out, char *err, size_t errlen);

/* Set the number of requests per sendmsg (1 = one synchronous round trip per task).
 * Returns 0 or -EINVAL when batch is 0 or above TASKSTATS_BATCH_MAX. */
int  taskstats_set_batch(struct taskstats_src *src, size_t batch);

/* Set SO_RCVBUF (the kernel doubles it and caps it at net.core.rmem_max; open sets 256 KiB).
 * A smaller buffer makes the kernel drop replies sooner; the query then resends. 0 or -errno. */
int  taskstats_set_rcvbuf(struct taskstats_src *src, int bytes);

void taskstats_get_counters(const struct taskstats_src *src, struct taskstats_counters *out);

/* Fetch the raw TASKSTATS_TYPE_STATS payload for one task (for fixtures and debugging).
 * On success returns 0 and sets *len to the payload length (copied up to cap bytes; a payload
 * longer than cap gives -EMSGSIZE with *len set to the full length). -ESRCH when the task is
 * gone, other -errno as for taskstats_query. */
int  taskstats_fetch_raw(struct taskstats_src *src, pid_t id, bool tgid, void *buf, size_t cap,
                         size_t *len, char *err, size_t errlen);

void taskstats_close(struct taskstats_src *src);

#endif /* IOTRIAGE_SOURCE_TASKSTATS_H */
