/* SPDX-License-Identifier: GPL-2.0-or-later */
/* source/taskstats: delay accounting over generic netlink (TASKSTATS family), see the contract in
 * include/source/taskstats.h.
 *
 * libnl-genl-3 opens the socket, resolves the family and validates reply attributes. Requests are
 * written by hand into one buffer so that a whole batch goes to the kernel in one sendmsg (an
 * nl_msg holds a single message). Netlink requests to the kernel are handled synchronously
 * inside sendmsg, so when it returns every reply of the batch is either queued on our socket or
 * was dropped (the socket then reports ENOBUFS once); non-blocking reads until EAGAIN therefore
 * see everything the kernel will ever send for that batch.
 */
#include "source/taskstats.h"

#include <assert.h>
#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include <linux/genetlink.h>
#include <linux/netlink.h>
#include <linux/taskstats.h>

#include <netlink/attr.h>
#include <netlink/errno.h>
#include <netlink/genl/ctrl.h>
#include <netlink/genl/genl.h>
#include <netlink/msg.h>
#include <netlink/netlink.h>
#include <netlink/socket.h>

#include "util.h"

/* ---------------------------------------------------------------------------------------------
 * Layout of the fields we read.
 *
 * include/uapi/linux/taskstats.h (the system copy here is v13, the running kernel sends v16):
 *   v1 (2.6.18):  u16 version; u16 padding[3]; then the delay block at offset 8.
 *   v2 .. v14:    u16 version; u32 ac_exitcode; u8 ac_flag; u8 ac_nice;
 *                 u64 cpu_count __attribute__((aligned(8))) at 16, then cpu_delay_total,
 *                 blkio_count, blkio_delay_total, swapin_count, swapin_delay_total (16..63).
 *                 Later versions only appended fields (v2 basic accounting, v3 I/O, ... v13
 *                 wpcopy = 416 bytes, v14 irq = 432 bytes).
 *   v15:          ABI break: 658eb5ab916d/f65c64f311ee inserted <kind>_delay_max and
 *                 <kind>_delay_min after every <kind>_delay_total, so blkio_count moved to 48
 *                 and swapin_count to 80 (560 bytes).
 *   v16:          "taskstats: fix struct taskstats breaks backward compatibility since version
 *                 15" moved all max/min fields to the end: the v2..v14 offsets hold again
 *                 (560 bytes; L: 6.18.44 sends version 16, 560 bytes).
 * The payload sits at a 4-byte-aligned offset inside the netlink message, so every field is
 * copied out with memcpy at its offset; the local structs below only pin the offsets.
 * ------------------------------------------------------------------------------------------- */
struct ts_head_v1 {
    uint16_t version;
    uint16_t padding[3];
    uint64_t cpu_count, cpu_delay_total;
    uint64_t blkio_count, blkio_delay_total;
    uint64_t swapin_count, swapin_delay_total;
};

struct ts_head {                       /* v2 .. v14 and v16 onward */
    uint16_t version;
    uint32_t ac_exitcode;
    uint8_t  ac_flag, ac_nice;
    _Alignas(8) uint64_t cpu_count;
    uint64_t cpu_delay_total;
    uint64_t blkio_count, blkio_delay_total;
    uint64_t swapin_count, swapin_delay_total;
};

struct ts_head_v15 {
    uint16_t version;
    uint32_t ac_exitcode;
    uint8_t  ac_flag, ac_nice;
    _Alignas(8) uint64_t cpu_count;
    uint64_t cpu_delay_total, cpu_delay_max, cpu_delay_min;
    uint64_t blkio_count, blkio_delay_total, blkio_delay_max, blkio_delay_min;
    uint64_t swapin_count, swapin_delay_total, swapin_delay_max, swapin_delay_min;
};

static_assert(offsetof(struct ts_head_v1, cpu_count) == 8, "v1 cpu_count");
static_assert(offsetof(struct ts_head_v1, swapin_delay_total) == 48, "v1 swapin_delay_total");
static_assert(sizeof(struct ts_head_v1) == 56, "v1 head size");

static_assert(offsetof(struct ts_head, ac_exitcode) == 4, "ac_exitcode");
static_assert(offsetof(struct ts_head, ac_flag) == 8, "ac_flag");
static_assert(offsetof(struct ts_head, cpu_count) == 16, "cpu_count");
static_assert(offsetof(struct ts_head, cpu_delay_total) == 24, "cpu_delay_total");
static_assert(offsetof(struct ts_head, blkio_count) == 32, "blkio_count");
static_assert(offsetof(struct ts_head, blkio_delay_total) == 40, "blkio_delay_total");
static_assert(offsetof(struct ts_head, swapin_count) == 48, "swapin_count");
static_assert(offsetof(struct ts_head, swapin_delay_total) == 56, "swapin_delay_total");
static_assert(sizeof(struct ts_head) == 64, "head size");

static_assert(offsetof(struct ts_head_v15, blkio_count) == 48, "v15 blkio_count");
static_assert(offsetof(struct ts_head_v15, blkio_delay_total) == 56, "v15 blkio_delay_total");
static_assert(offsetof(struct ts_head_v15, swapin_count) == 80, "v15 swapin_count");
static_assert(offsetof(struct ts_head_v15, swapin_delay_total) == 88, "v15 swapin_delay_total");
static_assert(sizeof(struct ts_head_v15) == 112, "v15 head size");

/* The installed header (older than the kernel) must agree on the shared prefix. */
static_assert(offsetof(struct taskstats, cpu_run_virtual_total) ==
              offsetof(struct ts_head, swapin_delay_total) + 2 * sizeof(uint64_t),
              "cpu_run_virtual_total follows cpu_run_real_total after the delays");
static_assert(offsetof(struct taskstats, cpu_count) == offsetof(struct ts_head, cpu_count),
              "system header cpu_count");
static_assert(offsetof(struct taskstats, blkio_delay_total) ==
              offsetof(struct ts_head, blkio_delay_total), "system header blkio_delay_total");
static_assert(offsetof(struct taskstats, swapin_delay_total) ==
              offsetof(struct ts_head, swapin_delay_total), "system header swapin_delay_total");

/* The netlink ABI numbers we use (include/uapi/linux/taskstats.h); they never change. */
static_assert(TASKSTATS_CMD_GET == 1 && TASKSTATS_CMD_NEW == 2, "taskstats commands");
static_assert(TASKSTATS_CMD_ATTR_PID == 1 && TASKSTATS_CMD_ATTR_TGID == 2, "request attrs");
static_assert(TASKSTATS_TYPE_PID == 1 && TASKSTATS_TYPE_TGID == 2 && TASKSTATS_TYPE_STATS == 3 &&
              TASKSTATS_TYPE_AGGR_PID == 4 && TASKSTATS_TYPE_AGGR_TGID == 5 &&
              TASKSTATS_TYPE_NULL == 6, "reply attrs");

/* Bytes a payload needs for the fields we read (they end with swapin_delay_total). */
#define TS_NEED(T) (offsetof(T, swapin_delay_total) + sizeof(uint64_t))
static_assert(TS_NEED(struct ts_head_v1) == 56 && TS_NEED(struct ts_head) == 64 &&
              TS_NEED(struct ts_head_v15) == 96, "bytes needed");

#define TS_SIZE_V13 416u   /* sizeof(struct taskstats) on 64-bit for each version we can name */
#define TS_SIZE_V14 432u
#define TS_SIZE_V15 560u
#define TS_SIZE_V16 560u
#define TS_VERSION_PLAUSIBLE_MAX 255u   /* a byte-swapped or misplaced version reads as >= 256 */

static uint64_t rd_u64(const unsigned char *p, size_t off)
{
    uint64_t v;
    memcpy(&v, p + off, sizeof v);
    return v;
}

static int parse_fail(struct delay_sample *out, int rc)
{
    out->valid = false;
    out->error = rc;
    return rc;
}

int taskstats_parse(const void *payload, size_t len, struct delay_sample *out)
{
    const unsigned char *p = payload;
    uint16_t version;
    size_t known = 0, run_off = 0;

    memset(out, 0, sizeof *out);
    if (p == NULL || len < sizeof version)
        return parse_fail(out, -EINVAL);
    memcpy(&version, p, sizeof version);
    out->version = version;
    if (version == 0)
        return parse_fail(out, -EINVAL);
    if (version > TS_VERSION_PLAUSIBLE_MAX)
        return parse_fail(out, -EPROTO);

    if (version == 1) {
        if (len < TS_NEED(struct ts_head_v1))
            return parse_fail(out, -EINVAL);
        out->cpu_count       = rd_u64(p, offsetof(struct ts_head_v1, cpu_count));
        out->cpu_delay_ns    = rd_u64(p, offsetof(struct ts_head_v1, cpu_delay_total));
        out->blkio_count     = rd_u64(p, offsetof(struct ts_head_v1, blkio_count));
        out->blkio_delay_ns  = rd_u64(p, offsetof(struct ts_head_v1, blkio_delay_total));
        out->swapin_count    = rd_u64(p, offsetof(struct ts_head_v1, swapin_count));
        out->swapin_delay_ns = rd_u64(p, offsetof(struct ts_head_v1, swapin_delay_total));
    } else if (version == 15) {
        if (len < TS_NEED(struct ts_head_v15))
            return parse_fail(out, -EINVAL);
        known = TS_SIZE_V15;
        out->cpu_count       = rd_u64(p, offsetof(struct ts_head_v15, cpu_count));
        out->cpu_delay_ns    = rd_u64(p, offsetof(struct ts_head_v15, cpu_delay_total));
        out->blkio_count     = rd_u64(p, offsetof(struct ts_head_v15, blkio_count));
        out->blkio_delay_ns  = rd_u64(p, offsetof(struct ts_head_v15, blkio_delay_total));
        out->swapin_count    = rd_u64(p, offsetof(struct ts_head_v15, swapin_count));
        out->swapin_delay_ns = rd_u64(p, offsetof(struct ts_head_v15, swapin_delay_total));
    } else {
        if (len < TS_NEED(struct ts_head))
            return parse_fail(out, -EINVAL);
        /* Versions only grow by appending, so a version we know the size of must be at
         * least that long; a shorter one was cut or is not a struct taskstats. */
        if (version >= 16)
            known = TS_SIZE_V16;
        else if (version == 14)
            known = TS_SIZE_V14;
        else if (version == 13)
            known = TS_SIZE_V13;
        out->cpu_count       = rd_u64(p, offsetof(struct ts_head, cpu_count));
        out->cpu_delay_ns    = rd_u64(p, offsetof(struct ts_head, cpu_delay_total));
        out->blkio_count     = rd_u64(p, offsetof(struct ts_head, blkio_count));
        out->blkio_delay_ns  = rd_u64(p, offsetof(struct ts_head, blkio_delay_total));
        out->swapin_count    = rd_u64(p, offsetof(struct ts_head, swapin_count));
        out->swapin_delay_ns = rd_u64(p, offsetof(struct ts_head, swapin_delay_total));
        run_off = TS_NEED(struct ts_head) + sizeof(uint64_t);    /* after cpu_run_real_total */
    }
    /* The run time, where the layout is the v2..v14 one (v15 moved it): what lets the
     * refresh skip a task that did not run. */
    if (run_off && len >= run_off + sizeof(uint64_t)) {
        out->run_ns = rd_u64(p, run_off);
        out->has_run = true;
    }
    if (len < known) {
        uint16_t v = out->version;
        memset(out, 0, sizeof *out);
        out->version = v;
        return parse_fail(out, -EPROTO);
    }
    out->valid = true;
    out->error = 0;
    return 0;
}

/* ---------------------------------------------------------------------------------------------
 * The netlink side.
 * ------------------------------------------------------------------------------------------- */

/* One GET request: nlmsghdr, genlmsghdr, one u32 attribute (PID or TGID). */
#define REQ_ATTR_OFF (NLMSG_HDRLEN + GENL_HDRLEN)
#define REQ_LEN      (REQ_ATTR_OFF + NLA_HDRLEN + sizeof(uint32_t))
static_assert(REQ_LEN == 28 && NLMSG_ALIGN(REQ_LEN) == REQ_LEN, "request size");

/* One datagram holds one reply (about 620 bytes for v16) or one error; 8 KiB leaves room for
 * much larger future structs. A datagram that does not fit is discarded (MSG_TRUNC), never
 * parsed, and its request is sent again. Replies are taken RECV_BATCH at a time with one
 * recvmmsg: with a reply per task, a recvmsg each was a system call per task and refresh
 * (docs/performance.md). */
#define RBUF_LEN   8192u
#define RECV_BATCH 16u

/* Socket buffers. libnl's nl_connect() sets both to 32 KiB (64 KiB effective, the kernel doubles
 * SO_RCVBUF), which holds only about 50 replies of about 1.3 KB truesize each; 256 KiB holds
 * several batches. The send buffer must take one whole batch of 28-byte requests in one
 * datagram. Both are capped by net.core.rmem_max/wmem_max. */
#define TS_RCVBUF_DEFAULT (256 * 1024)
#define TS_SNDBUF         (128 * 1024)

/* Replies that have not arrived within this long after the batch was sent are treated as lost.
 * The kernel answers inside sendmsg, so this only matters if that ever changes. */
#define LATE_REPLY_WAIT_MS 200
/* Passes over the pending tasks that may bring no new answer before the query gives up. */
#define MAX_STALLED_PASSES 3

#define TS_PENDING 1       /* internal value of delay_sample.error while a task is unanswered */

struct taskstats_src {
    struct nl_sock *sk;
    int             fd;
    uint16_t        family;
    uint32_t        port;
    uint32_t        seq;           /* next sequence number to use */
    size_t          batch;
    size_t          send_max;      /* requests that fit in one datagram given SO_SNDBUF */
    size_t          batch_cap;     /* capacity of sbuf (in requests) and idx */
    unsigned char  *sbuf;
    size_t         *idx;           /* request j of the current batch answers ids[idx[j]] */
    unsigned char  *rbuf;          /* RECV_BATCH buffers of RBUF_LEN */
    struct mmsghdr  rmsg[RECV_BATCH];
    struct iovec    riov[RECV_BATCH];
    struct sockaddr_nl rsa[RECV_BATCH];
    unsigned        rnext, rcount; /* rmsg[rnext..rcount) received, not yet taken */
    struct taskstats_counters c;
};

/* Raw payload capture for taskstats_fetch_raw(). */
struct raw_sink {
    void   *buf;
    size_t  cap;
    size_t  len;
    bool    got;
};

static int nlerr_to_errno(int nlerr)
{
    switch (nlerr < 0 ? -nlerr : nlerr) {
    case NLE_NOMEM:          return ENOMEM;
    case NLE_PERM:           return EPERM;
    case NLE_NOACCESS:       return EACCES;
    case NLE_OBJ_NOTFOUND:   return ENOENT;
    case NLE_AF_NOSUPPORT:   return EAFNOSUPPORT;
    case NLE_PROTO_MISMATCH: return EPROTONOSUPPORT;
    case NLE_BAD_SOCK:       return EBADF;
    case NLE_INTR:           return EINTR;
    case NLE_AGAIN:          return EAGAIN;
    default:                 return EIO;
    }
}

int taskstats_set_batch(struct taskstats_src *src, size_t batch)
{
    if (src == NULL || batch == 0 || batch > TASKSTATS_BATCH_MAX)
        return -EINVAL;
    if (batch > src->batch_cap) {
        unsigned char *sbuf = realloc(src->sbuf, batch * REQ_LEN);
        if (sbuf == NULL)
            return -ENOMEM;
        src->sbuf = sbuf;
        size_t *idx = realloc(src->idx, batch * sizeof *idx);
        if (idx == NULL)
            return -ENOMEM;
        src->idx = idx;
        src->batch_cap = batch;
    }
    src->batch = batch;
    return 0;
}

int taskstats_set_rcvbuf(struct taskstats_src *src, int bytes)
{
    int sndbuf = 0;
    socklen_t sl = sizeof sndbuf;

    if (src == NULL || src->sk == NULL || bytes < 1024)
        return -EINVAL;
    int rc = nl_socket_set_buffer_size(src->sk, bytes, TS_SNDBUF);
    if (rc < 0)
        return -nlerr_to_errno(rc);
    /* The kernel refuses a datagram longer than SO_SNDBUF - 32 (net/netlink/af_netlink.c:
     * netlink_sendmsg); keep batches below that whatever wmem_max allowed. */
    if (getsockopt(src->fd, SOL_SOCKET, SO_SNDBUF, &sndbuf, &sl) < 0)
        return -errno;
    src->send_max = sndbuf > 64 + (int)REQ_LEN ? ((size_t)sndbuf - 64) / REQ_LEN : 1;
    return 0;
}

void taskstats_get_counters(const struct taskstats_src *src, struct taskstats_counters *out)
{
    if (src == NULL) {
        memset(out, 0, sizeof *out);
        return;
    }
    *out = src->c;
}

void taskstats_close(struct taskstats_src *src)
{
    if (src == NULL)
        return;
    if (src->sk != NULL)
        nl_socket_free(src->sk);       /* closes the fd */
    free(src->sbuf);
    free(src->idx);
    free(src->rbuf);
    free(src);
}

int taskstats_open(struct taskstats_src **out, char *err, size_t errlen)
{
    struct taskstats_src *src;
    int rc;

    if (out == NULL)
        return -EINVAL;
    *out = NULL;
    src = calloc(1, sizeof *src);
    if (src == NULL) {
        err_set(err, errlen, "taskstats: out of memory");
        return -ENOMEM;
    }
    src->fd = -1;
    src->rbuf = malloc((size_t)RBUF_LEN * RECV_BATCH);
    if (src->rbuf == NULL || taskstats_set_batch(src, TASKSTATS_BATCH_DEFAULT) < 0) {
        taskstats_close(src);
        err_set(err, errlen, "taskstats: out of memory");
        return -ENOMEM;
    }
    src->sk = nl_socket_alloc();
    if (src->sk == NULL) {
        taskstats_close(src);
        err_set(err, errlen, "taskstats: out of memory for a netlink socket");
        return -ENOMEM;
    }
    rc = genl_connect(src->sk);
    if (rc < 0) {
        int e = nlerr_to_errno(rc);
        err_set(err, errlen, "taskstats: cannot open a generic netlink socket: %s",
                nl_geterror(rc));
        taskstats_close(src);
        return -e;
    }
    rc = genl_ctrl_resolve(src->sk, TASKSTATS_GENL_NAME);
    if (rc < 0 && nlerr_to_errno(rc) == ENOENT) {
        /* libnl answers "not found" for any lookup that failed, a netlink error on the
         * way included: that must not read as a kernel without TASKSTATS. Ask for
         * nlctrl, which every kernel with generic netlink has, then once more. */
        /* A fresh socket: the failed lookup's answer may still be queued on the old one,
         * and read as the answer to the next question (seen: a lookup retried on the same
         * socket took nlctrl's id for TASKSTATS, and every query was refused). */
        nl_socket_free(src->sk);
        src->sk = nl_socket_alloc();
        rc = src->sk ? genl_connect(src->sk) : -NLE_NOMEM;
        if (rc < 0) {
            err_set(err, errlen, "taskstats: cannot open a generic netlink socket: %s", nl_geterror(rc));
            taskstats_close(src);
            return -nlerr_to_errno(rc);
        }
        int ctl = genl_ctrl_resolve(src->sk, "nlctrl");
        if (ctl < 0) {
            err_set(err, errlen, "taskstats: generic netlink lookups fail (even of nlctrl: %s)",
                    nl_geterror(ctl));
            taskstats_close(src);
            return -EIO;
        }
        rc = genl_ctrl_resolve(src->sk, TASKSTATS_GENL_NAME);
    }
    if (rc < 0) {
        int e = nlerr_to_errno(rc);
        if (e == ENOENT)
            err_set(err, errlen, "taskstats: family " TASKSTATS_GENL_NAME
                    " not found (kernel without CONFIG_TASKSTATS)");
        else
            err_set(err, errlen, "taskstats: cannot resolve family " TASKSTATS_GENL_NAME ": %s",
                    nl_geterror(rc));
        taskstats_close(src);
        return -e;
    }
    if (rc == 0 || rc > UINT16_MAX) {
        err_set(err, errlen, "taskstats: family " TASKSTATS_GENL_NAME " resolved to id %d", rc);
        taskstats_close(src);
        return -EPROTO;
    }
    src->family = (uint16_t)rc;
    src->fd = nl_socket_get_fd(src->sk);
    rc = taskstats_set_rcvbuf(src, TS_RCVBUF_DEFAULT);
    if (rc < 0) {
        err_set(err, errlen, "taskstats: cannot size the socket buffers: %s", strerror(-rc));
        taskstats_close(src);
        return rc;
    }
    src->port = nl_socket_get_local_port(src->sk);
    /* Continue libnl's sequence so nothing it sent during the lookup can be taken for ours. */
    src->seq = nl_socket_use_seq(src->sk) + 1;
    *out = src;
    return 0;
}

/* Take one datagram without blocking: the next of those the last recvmmsg brought, or a
 * new batch. Returns its length with *data pointing at it, 0 when the queue is empty, or
 * -errno. *skip is set when the datagram must be ignored (truncated, or not from the
 * kernel). */
static ssize_t recv_one(struct taskstats_src *src, bool *dropped, bool *skip,
                        const unsigned char **data)
{
    *skip = false;
    while (src->rnext == src->rcount) {
        src->rnext = src->rcount = 0;
        for (unsigned i = 0; i < RECV_BATCH; i++) {
            src->riov[i] = (struct iovec){ .iov_base = src->rbuf + (size_t)i * RBUF_LEN,
                                           .iov_len = RBUF_LEN };
            memset(&src->rsa[i], 0, sizeof src->rsa[i]);
            src->rmsg[i] = (struct mmsghdr){ .msg_hdr = {
                .msg_name = &src->rsa[i], .msg_namelen = sizeof src->rsa[i],
                .msg_iov = &src->riov[i], .msg_iovlen = 1 } };
        }
        int n = recvmmsg(src->fd, src->rmsg, RECV_BATCH, MSG_DONTWAIT, NULL);
        if (n > 0) {                   /* netlink never sends an empty datagram */
            src->rcount = (unsigned)n;
            break;
        }
        if (n == 0 || errno == EAGAIN || errno == EWOULDBLOCK)
            return 0;
        if (errno == EINTR)
            continue;
        if (errno == ENOBUFS) {
            /* The kernel dropped replies because our receive queue was full. The queued ones
             * are still readable; the missing ones are sent again by the caller. */
            *dropped = true;
            src->c.enobufs++;
            continue;
        }
        return -errno;
    }
    unsigned i = src->rnext++;
    const struct msghdr *mh = &src->rmsg[i].msg_hdr;
    const struct sockaddr_nl *sa = &src->rsa[i];
    if ((mh->msg_flags & MSG_TRUNC) || mh->msg_namelen < sizeof *sa ||
        sa->nl_family != AF_NETLINK || sa->nl_pid != 0) {
        src->c.bad_replies++;
        *skip = true;
    }
    *data = src->riov[i].iov_base;
    return (ssize_t)src->rmsg[i].msg_len;
}

/* Discard whatever an earlier, aborted query left queued, including a pending ENOBUFS. */
static int drain(struct taskstats_src *src)
{
    bool dropped = false, skip;
    const unsigned char *data;
    ssize_t r;

    while ((r = recv_one(src, &dropped, &skip, &data)) > 0)
        ;
    return r < 0 ? (int)r : 0;
}

static const struct nla_policy top_policy[TASKSTATS_TYPE_MAX + 1] = {
    [TASKSTATS_TYPE_AGGR_PID]  = { .type = NLA_NESTED },
    [TASKSTATS_TYPE_AGGR_TGID] = { .type = NLA_NESTED },
};

/* STATS has no fixed length (it grows with the version): taskstats_parse() checks it. */
static const struct nla_policy aggr_policy[TASKSTATS_TYPE_MAX + 1] = {
    [TASKSTATS_TYPE_PID]   = { .type = NLA_U32, .maxlen = sizeof(uint32_t) },
    [TASKSTATS_TYPE_TGID]  = { .type = NLA_U32, .maxlen = sizeof(uint32_t) },
};

/* Decode one TASKSTATS_CMD_NEW reply for the task whose id is `id` into *out. Returns 0 or a
 * negative errno (-EPROTO for a malformed reply, or taskstats_parse's result), which is then also
 * in out->error with valid=false. */
static int decode_reply(struct nlmsghdr *nlh, bool tgid, uint32_t id, struct delay_sample *out,
                        struct raw_sink *sink)
{
    struct nlattr *tb[TASKSTATS_TYPE_MAX + 1];
    struct nlattr *ab[TASKSTATS_TYPE_MAX + 1];
    const int aggr = tgid ? TASKSTATS_TYPE_AGGR_TGID : TASKSTATS_TYPE_AGGR_PID;
    const int idattr = tgid ? TASKSTATS_TYPE_TGID : TASKSTATS_TYPE_PID;
    const struct genlmsghdr *gh;
    uint32_t got;

    memset(out, 0, sizeof *out);
    out->error = -EPROTO;              /* until taskstats_parse() says otherwise */
    if (!genlmsg_valid_hdr(nlh, 0))
        return -EPROTO;
    gh = nlmsg_data(nlh);
    if (gh->cmd != TASKSTATS_CMD_NEW)
        return -EPROTO;
    if (genlmsg_parse(nlh, 0, tb, TASKSTATS_TYPE_MAX, top_policy) < 0 || tb[aggr] == NULL)
        return -EPROTO;
    if (nla_parse_nested(ab, TASKSTATS_TYPE_MAX, tb[aggr], aggr_policy) < 0 ||
        ab[idattr] == NULL || ab[TASKSTATS_TYPE_STATS] == NULL)
        return -EPROTO;
    got = nla_get_u32(ab[idattr]);
    if (got != id)
        return -EPROTO;
    const struct nlattr *st = ab[TASKSTATS_TYPE_STATS];
    int plen = nla_len(st);
    if (plen < 0)
        return -EPROTO;
    if (sink != NULL) {
        sink->got = true;
        sink->len = (size_t)plen;
        if (sink->cap > 0)
            memcpy(sink->buf, nla_data(st), (size_t)plen < sink->cap ? (size_t)plen : sink->cap);
    }
    return taskstats_parse(nla_data(st), (size_t)plen, out);
}

/* Send requests for ids[idx[0..k-1]] in one sendmsg and read every reply that arrives.
 * Answered entries of out[] leave TS_PENDING; dropped ones stay pending. Returns 0, or -errno
 * for a failure of the whole query (with err written). */
static int run_batch(struct taskstats_src *src, const pid_t *ids, size_t k, bool tgid,
                     struct delay_sample *out, struct raw_sink *sink, bool *dropped,
                     size_t *answered, char *err, size_t errlen)
{
    const uint32_t seq0 = src->seq;
    struct sockaddr_nl kernel = { .nl_family = AF_NETLINK };
    size_t outstanding = k;
    int fatal = 0;
    pid_t fatal_id = 0;
    bool waited = false;

    src->seq += (uint32_t)k;
    for (size_t j = 0; j < k; j++) {
        unsigned char *p = src->sbuf + j * REQ_LEN;
        struct nlmsghdr nh = {
            .nlmsg_len = (uint32_t)REQ_LEN,
            .nlmsg_type = src->family,
            .nlmsg_flags = NLM_F_REQUEST,
            .nlmsg_seq = seq0 + (uint32_t)j,
            .nlmsg_pid = src->port,
        };
        struct genlmsghdr gh = { .cmd = TASKSTATS_CMD_GET, .version = TASKSTATS_GENL_VERSION };
        struct nlattr na = {
            .nla_len = (uint16_t)(NLA_HDRLEN + sizeof(uint32_t)),
            .nla_type = tgid ? TASKSTATS_CMD_ATTR_TGID : TASKSTATS_CMD_ATTR_PID,
        };
        uint32_t id = (uint32_t)ids[src->idx[j]];

        memcpy(p, &nh, sizeof nh);
        memcpy(p + NLMSG_HDRLEN, &gh, sizeof gh);
        memcpy(p + REQ_ATTR_OFF, &na, sizeof na);
        memcpy(p + REQ_ATTR_OFF + NLA_HDRLEN, &id, sizeof id);
    }
    for (;;) {
        ssize_t w = sendto(src->fd, src->sbuf, k * REQ_LEN, 0,
                           (const struct sockaddr *)&kernel, sizeof kernel);
        if (w >= 0)
            break;
        if (errno == EINTR)
            continue;
        int e = errno;
        err_set(err, errlen, "taskstats: sending %zu requests failed: %s", k, strerror(e));
        return -e;
    }
    src->c.requests += k;

    while (outstanding > 0) {
        bool skip;
        const unsigned char *data = NULL;
        ssize_t r = recv_one(src, dropped, &skip, &data);

        if (r < 0) {
            err_set(err, errlen, "taskstats: receiving replies failed: %s", strerror((int)-r));
            return (int)r;
        }
        if (r == 0) {
            if (*dropped || waited)
                break;
            struct pollfd pfd = { .fd = src->fd, .events = POLLIN };
            waited = true;
            if (poll(&pfd, 1, LATE_REPLY_WAIT_MS) <= 0)
                break;
            continue;
        }
        if (skip)
            continue;

        int rem = (int)r;
        for (struct nlmsghdr *nlh = (struct nlmsghdr *)(uintptr_t)data; nlmsg_ok(nlh, rem);
             nlh = nlmsg_next(nlh, &rem)) {
            uint32_t j = nlh->nlmsg_seq - seq0;

            if (nlh->nlmsg_type == NLMSG_NOOP || nlh->nlmsg_type == NLMSG_DONE ||
                nlh->nlmsg_type == NLMSG_OVERRUN)
                continue;
            if (j >= k) {                      /* not one of this batch's requests */
                src->c.bad_replies++;
                continue;
            }
            size_t i = src->idx[j];
            struct delay_sample *o = &out[i];
            if (o->error != TS_PENDING)        /* duplicate */
                continue;

            if (nlh->nlmsg_type == NLMSG_ERROR) {
                int e;
                if (nlh->nlmsg_len < NLMSG_LENGTH(sizeof(int))) {
                    src->c.bad_replies++;
                    continue;
                }
                memcpy(&e, nlmsg_data(nlh), sizeof e);
                e = -e;
                if (e == 0)                    /* an ack we did not ask for */
                    continue;
                outstanding--;
                switch (e) {
                case ESRCH:                    /* the task exited */
                case EINVAL:                   /* id refused (e.g. not in our pid namespace) */
                    memset(o, 0, sizeof *o);
                    o->error = -e;
                    src->c.gone++;
                    break;
                case EAGAIN:                   /* the reply could not be queued: resend */
                case ENOBUFS:
                case ENOMEM:
                    *dropped = true;
                    break;
                default:                       /* EPERM and anything unexpected */
                    if (fatal == 0) {
                        fatal = -e;
                        fatal_id = ids[i];
                    }
                    break;
                }
                continue;
            }
            if (nlh->nlmsg_type != src->family) {
                src->c.bad_replies++;
                continue;
            }
            outstanding--;
            int rc = decode_reply(nlh, tgid, (uint32_t)ids[i], o, sink);
            if (rc == 0)
                src->c.replies++;
            else
                src->c.bad_replies++;
            /* On failure decode_reply left o with valid=false and error=rc. */
        }
    }

    *answered = k - outstanding;
    if (fatal == -EPERM || fatal == -EACCES) {
        err_set(err, errlen, "taskstats: permission denied: TASKSTATS_CMD_GET needs CAP_NET_ADMIN "
                "in the initial user namespace (run as root)");
        return -EPERM;
    }
    if (fatal != 0) {
        err_set(err, errlen, "taskstats: the kernel refused the request for %s %d: %s",
                tgid ? "tgid" : "pid", (int)fatal_id, strerror(-fatal));
        return fatal;
    }
    return 0;
}

static int query_core(struct taskstats_src *src, const pid_t *ids, size_t n, bool tgid,
                      struct delay_sample *out, struct raw_sink *sink, char *err, size_t errlen)
{
    size_t pending = 0, batch, stalled = 0;
    int rc = 0;

    for (size_t i = 0; i < n; i++) {
        memset(&out[i], 0, sizeof out[i]);
        if (ids[i] <= 0) {
            out[i].error = -EINVAL;
        } else {
            out[i].error = TS_PENDING;
            pending++;
        }
    }
    rc = drain(src);
    if (rc < 0) {
        err_set(err, errlen, "taskstats: reading the socket failed: %s", strerror(-rc));
        goto out;
    }

    batch = src->batch < src->send_max ? src->batch : src->send_max;
    while (pending > 0) {
        size_t before = pending;
        bool dropped_pass = false;

        for (size_t i = 0; i < n;) {
            size_t k = 0;
            bool dropped = false;
            size_t answered = 0;

            while (i < n && k < batch) {
                if (out[i].error == TS_PENDING)
                    src->idx[k++] = i;
                i++;
            }
            if (k == 0)
                break;
            rc = run_batch(src, ids, k, tgid, out, sink, &dropped, &answered, err, errlen);
            if (rc < 0)
                goto out;
            if (dropped) {
                dropped_pass = true;
                /* The receive buffer held `answered` replies: send at most that many (and at
                 * least one fewer than this time) until the query ends. */
                size_t next = answered < batch / 2 ? answered : batch / 2;
                batch = next > 0 ? next : 1;
            }
        }
        pending = 0;
        for (size_t i = 0; i < n; i++)
            pending += out[i].error == TS_PENDING;
        if (pending == 0)
            break;
        src->c.resent += pending;
        if (pending == before && ++stalled >= MAX_STALLED_PASSES) {
            rc = dropped_pass ? -ENOBUFS : -ETIMEDOUT;
            err_set(err, errlen, "taskstats: %zu of %zu requests got no reply after %d tries "
                    "(%s)", pending, n, MAX_STALLED_PASSES + 1,
                    dropped_pass ? "replies dropped: ENOBUFS" : "no answer");
            goto out;
        }
        if (pending != before)
            stalled = 0;
    }
    rc = 0;
out:
    for (size_t i = 0; i < n; i++) {
        if (out[i].error == TS_PENDING) {
            out[i].valid = false;
            out[i].error = -ECANCELED;
        }
    }
    return rc;
}

int taskstats_query(struct taskstats_src *src, const pid_t *ids, size_t n, bool tgid,
                    struct delay_sample *out, char *err, size_t errlen)
{
    if (src == NULL || (n > 0 && (ids == NULL || out == NULL))) {
        err_set(err, errlen, "taskstats: invalid arguments");
        return -EINVAL;
    }
    return query_core(src, ids, n, tgid, out, NULL, err, errlen);
}

int taskstats_fetch_raw(struct taskstats_src *src, pid_t id, bool tgid, void *buf, size_t cap,
                        size_t *len, char *err, size_t errlen)
{
    struct raw_sink sink = { .buf = buf, .cap = cap };
    struct delay_sample s;
    int rc;

    if (src == NULL || len == NULL || (buf == NULL && cap > 0)) {
        err_set(err, errlen, "taskstats: invalid arguments");
        return -EINVAL;
    }
    *len = 0;
    rc = query_core(src, &id, 1, tgid, &s, &sink, err, errlen);
    if (rc < 0)
        return rc;
    if (!sink.got) {
        rc = s.error < 0 ? s.error : -EIO;
        err_set(err, errlen, "taskstats: no stats for %s %d: %s", tgid ? "tgid" : "pid",
                (int)id, strerror(-rc));
        return rc;
    }
    *len = sink.len;
    if (sink.len > cap) {
        err_set(err, errlen, "taskstats: stats payload of %zu bytes does not fit in %zu",
                sink.len, cap);
        return -EMSGSIZE;
    }
    return 0;
}
