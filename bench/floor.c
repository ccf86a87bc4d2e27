/* SPDX-License-Identifier: GPL-2.0-or-later */
/* floor: the least a monitor must ask the kernel for iotriage's per-task data, and
 * nothing else: no formatting, no rates, no verdicts. What iotriage costs above this
 * program is what its own design costs.
 *
 *   floor [-b] [-P] [-k] [-l] [-n N] [-d SECONDS] [-x EXTRA[,EXTRA...]]
 *
 * Every refresh, like iotriage -b, after one sample taken at start:
 *   - /proc/diskstats (kept open, pread), /proc/pressure/{cpu,io,memory};
 *   - the task list: getdents64 of /proc (and of /proc/PID/task with -P);
 *   - per task: /proc/PID/stat (start time, state, nice, policy, flags, threads, the
 *     name) and /proc/PID/io, opened and read each time (-k: kept open and re-read with
 *     pread, which returns fresh data but pins kernel memory per open file);
 *     the owner of /proc/PID (the effective uid) with one fstatat;
 *     ioprio_get(); the command line only for a task not seen before (same pid and
 *     start time);
 *   - delay accounting: one taskstats request per task (TGID for processes, PID with -P),
 *     64 requests per sendmsg on a raw netlink socket.
 * -l (lazy) is not a floor but a design sketch: io and taskstats every refresh, the
 * rest (stat, owner, ioprio, command line) only for tasks that are new, whose io file
 * changed, or whose turn it is (one in 5 each refresh); with -k only io stays open.
 * It prices a monitor that re-reads only what moved, at the cost of showing the state,
 * nice and priority of an idle task up to 5 refreshes late.
 * -x adds reads a monitor might do and this floor does not, to price each of them:
 *   status   /proc/PID/status every refresh (iotriage does not: the owner of /proc/PID
 *            is the effective uid)
 *   comm     /proc/PID/comm every refresh
 *   cmdline  /proc/PID/cmdline every refresh (not only for new tasks)
 *   fd       readdir /proc/PID/fd and fstatat each entry, every refresh (uncached)
 * Output: one line per refresh, "refresh K tasks N delays M" (M: tasks the taskstats
 * query answered), so a harness can check that it saw what the others saw.
 * -b is accepted and ignored, for a command line like the other programs'. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <linux/genetlink.h>
#include <linux/netlink.h>
#include <linux/taskstats.h>

#define BATCH 64
#define X_STATUS  1u
#define X_COMM    2u
#define X_CMDLINE 4u
#define X_FD      8u

struct task {
    int tgid, id;
    unsigned long long start;
    int stat_fd, io_fd;             /* -k only; -1 otherwise */
    char *cmdline;
    uint64_t read_bytes, write_bytes, blkio_delay;
    uint64_t io_hash;               /* -l: the io file's text last time */
    bool delay_ok;
    int ioprio, state, nice, policy;
    unsigned uid;
};

struct list {
    struct task *t;
    size_t n, cap;
};

static bool threads, keep_open, lazy;
static unsigned long refresh_no;
static unsigned extras;
static int proc_fd;
static uint64_t checksum;           /* keeps the reads from being optimised away */

/* ---- netlink ------------------------------------------------------------------------- */

static int nl_fd = -1;
static uint16_t ts_family;
static uint32_t nl_seq;

struct req {
    struct nlmsghdr nh;
    struct genlmsghdr gh;
    struct nlattr na;
    uint32_t id;
};

static int nl_open(void)
{
    nl_fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_GENERIC);
    if (nl_fd < 0)
        return -errno;
    int sz = 1 << 20;
    if (setsockopt(nl_fd, SOL_SOCKET, SO_RCVBUFFORCE, &sz, sizeof(sz)) < 0)
        setsockopt(nl_fd, SOL_SOCKET, SO_RCVBUF, &sz, sizeof(sz));
    struct sockaddr_nl sa = { .nl_family = AF_NETLINK };
    if (bind(nl_fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
        return -errno;
    /* CTRL_CMD_GETFAMILY "TASKSTATS" */
    struct {
        struct nlmsghdr nh;
        struct genlmsghdr gh;
        struct nlattr na;
        char name[16];
    } q = {
        .nh = { .nlmsg_len = sizeof(q), .nlmsg_type = GENL_ID_CTRL, .nlmsg_flags = NLM_F_REQUEST },
        .gh = { .cmd = CTRL_CMD_GETFAMILY, .version = 1 },
        .na = { .nla_len = NLA_HDRLEN + sizeof(TASKSTATS_GENL_NAME), .nla_type = CTRL_ATTR_FAMILY_NAME },
    };
    memcpy(q.name, TASKSTATS_GENL_NAME, sizeof(TASKSTATS_GENL_NAME));
    if (send(nl_fd, &q, sizeof(q), 0) < 0)
        return -errno;
    char buf[4096];
    ssize_t r = recv(nl_fd, buf, sizeof(buf), 0);
    if (r < 0)
        return -errno;
    struct nlmsghdr *nh = (struct nlmsghdr *)(void *)buf;
    if (!NLMSG_OK(nh, r) || nh->nlmsg_type == NLMSG_ERROR)
        return -ENOENT;
    char *p = (char *)NLMSG_DATA(nh) + GENL_HDRLEN, *end = (char *)nh + nh->nlmsg_len;
    while (p + NLA_HDRLEN <= end) {
        struct nlattr *a = (struct nlattr *)(void *)p;
        if (a->nla_len < NLA_HDRLEN)
            break;
        if (a->nla_type == CTRL_ATTR_FAMILY_ID)
            memcpy(&ts_family, p + NLA_HDRLEN, sizeof(ts_family));
        p += NLA_ALIGN(a->nla_len);
    }
    return ts_family ? 0 : -ENOENT;
}

/* blkio_delay_total out of one TASKSTATS_CMD_NEW reply: AGGR_* { PID/TGID, STATS }. */
static bool reply_delay(const struct nlmsghdr *nh, uint64_t *out)
{
    const char *p = (const char *)nh + NLMSG_HDRLEN + GENL_HDRLEN, *end = (const char *)nh + nh->nlmsg_len;
    if (p + NLA_HDRLEN > end)
        return false;
    const struct nlattr *aggr = (const void *)p;
    const char *q = p + NLA_HDRLEN, *qend = p + aggr->nla_len;
    if (qend > end)
        return false;
    while (q + NLA_HDRLEN <= qend) {
        const struct nlattr *a = (const void *)q;
        if (a->nla_len < NLA_HDRLEN)
            return false;
        if (a->nla_type == TASKSTATS_TYPE_STATS && a->nla_len >= NLA_HDRLEN + 96) {
            uint16_t v;
            memcpy(&v, q + NLA_HDRLEN, sizeof(v));
            memcpy(out, q + NLA_HDRLEN + (v == 15 ? 56 : 40), sizeof(*out));
            return true;
        }
        q += NLA_ALIGN(a->nla_len);
    }
    return false;
}

static void taskstats_all(struct list *l)
{
    struct req reqs[BATCH];
    static char buf[64 * 1024];
    for (size_t i0 = 0; i0 < l->n; i0 += BATCH) {
        size_t k = l->n - i0 < BATCH ? l->n - i0 : BATCH;
        uint32_t seq0 = nl_seq;
        for (size_t j = 0; j < k; j++) {
            reqs[j] = (struct req){
                .nh = { .nlmsg_len = sizeof(struct req), .nlmsg_type = ts_family,
                        .nlmsg_flags = NLM_F_REQUEST, .nlmsg_seq = nl_seq++ },
                .gh = { .cmd = TASKSTATS_CMD_GET, .version = 1 },
                .na = { .nla_len = NLA_HDRLEN + 4,
                        .nla_type = threads ? TASKSTATS_CMD_ATTR_PID : TASKSTATS_CMD_ATTR_TGID },
                .id = (uint32_t)(threads ? l->t[i0 + j].id : l->t[i0 + j].tgid),
            };
        }
        struct sockaddr_nl kernel = { .nl_family = AF_NETLINK };
        if (sendto(nl_fd, reqs, k * sizeof(reqs[0]), 0, (struct sockaddr *)&kernel, sizeof(kernel)) < 0)
            return;
        /* The kernel answers inside sendmsg: every reply is queued by now. */
        size_t got = 0;
        while (got < k) {
            ssize_t r = recv(nl_fd, buf, sizeof(buf), MSG_DONTWAIT);
            if (r < 0 && errno == EINTR)
                continue;
            if (r <= 0)
                break;
            for (size_t off = 0; off + NLMSG_HDRLEN <= (size_t)r;) {
                struct nlmsghdr *nh = (struct nlmsghdr *)(void *)(buf + off);
                if (nh->nlmsg_len < NLMSG_HDRLEN || off + nh->nlmsg_len > (size_t)r)
                    break;
                off += NLMSG_ALIGN(nh->nlmsg_len);
                got++;
                uint32_t j = nh->nlmsg_seq - seq0;
                if (j < k && nh->nlmsg_type == ts_family)
                    l->t[i0 + j].delay_ok = reply_delay(nh, &l->t[i0 + j].blkio_delay);
            }
        }
    }
}

/* ---- /proc ----------------------------------------------------------------------------- */

static ssize_t read_at(int dir, const char *path, char *buf, size_t cap)
{
    int fd = openat(dir, path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    ssize_t n = read(fd, buf, cap - 1);
    close(fd);
    if (n >= 0)
        buf[n] = '\0';
    return n;
}

static ssize_t reread(int fd, char *buf, size_t cap)
{
    ssize_t n = pread(fd, buf, cap - 1, 0);
    if (n >= 0)
        buf[n] = '\0';
    return n;
}

static void task_file(char *path, size_t n, const struct task *t, const char *file)
{
    if (threads)
        snprintf(path, n, "%d/task/%d/%s", t->tgid, t->id, file);
    else
        snprintf(path, n, "%d/%s", t->id, file);
}

/* Fields (proc(5)): 3 state, 9 flags, 19 nice, 20 threads, 22 start time, 41 policy. */
static void parse_stat(const char *buf, struct task *t)
{
    const char *p = strrchr(buf, ')');
    if (!p)
        return;
    t->state = p[2];
    p += 2;
    unsigned long long v[44] = { 0 };
    for (int f = 3; f <= 41 && *p; f++) {
        while (*p == ' ')
            p++;
        char *e;
        v[f] = strtoull(p, &e, 10);
        p = e;
        if (f == 3) {               /* the state letter, not a number */
            while (*p && *p != ' ')
                p++;
        }
    }
    t->nice = (int)(long long)v[19];
    t->start = v[22];
    t->policy = (int)v[41];
    checksum += v[9] + v[20];
}

static void parse_io(const char *buf, struct task *t)
{
    const char *p = strstr(buf, "read_bytes: ");
    if (p)
        t->read_bytes = strtoull(p + 12, NULL, 10);
    p = strstr(buf, "\nwrite_bytes: ");
    if (p)
        t->write_bytes = strtoull(p + 14, NULL, 10);
}

static void read_cmdline(struct task *t)
{
    char path[64], buf[4096];
    snprintf(path, sizeof(path), "%d/cmdline", t->tgid);
    ssize_t n = read_at(proc_fd, path, buf, sizeof(buf));
    free(t->cmdline);
    t->cmdline = strndup(buf, n > 0 ? (size_t)n : 0);
}

static void read_extras(struct task *t)
{
    char path[64], buf[4096];
    if (extras & X_STATUS) {
        task_file(path, sizeof(path), t, "status");
        checksum += (uint64_t)read_at(proc_fd, path, buf, sizeof(buf));
    }
    if (extras & X_COMM) {
        task_file(path, sizeof(path), t, "comm");
        checksum += (uint64_t)read_at(proc_fd, path, buf, sizeof(buf));
    }
    if (extras & X_CMDLINE)
        read_cmdline(t);
    if (extras & X_FD) {
        snprintf(path, sizeof(path), "%d/fd", t->tgid);
        int fd = openat(proc_fd, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
        if (d) {
            struct dirent *e;
            struct stat st;
            while ((e = readdir(d)))
                if (e->d_name[0] != '.' && fstatat(dirfd(d), e->d_name, &st, 0) == 0)
                    checksum += st.st_dev;
            closedir(d);
        } else if (fd >= 0) {
            close(fd);
        }
    }
}

static uint64_t hash_bytes(const char *p, size_t n)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)p[i]) * 1099511628211ull;
    return h;
}

/* -l: io every refresh (kept open with -k); stat, owner, ioprio and the command line
 * only for a task that is new, whose io counters moved, or whose turn it is (one task
 * in LAZY_EVERY each refresh), else carried over from the last refresh. */
#define LAZY_EVERY 5
static bool sample_task_lazy(struct task *t, struct task *old)
{
    char path[64], buf[1024];
    if (old) {
        int tgid = t->tgid, id = t->id;
        *t = *old;
        t->tgid = tgid;
        t->id = id;
        old->stat_fd = old->io_fd = -1;
        old->cmdline = NULL;
    } else if (keep_open) {
        task_file(path, sizeof(path), t, "io");
        t->io_fd = openat(proc_fd, path, O_RDONLY | O_CLOEXEC);
    }
    ssize_t n;
    if (t->io_fd >= 0) {
        n = reread(t->io_fd, buf, sizeof(buf));
    } else {
        task_file(path, sizeof(path), t, "io");
        n = read_at(proc_fd, path, buf, sizeof(buf));
    }
    if (n == 0 || n == -ESRCH || n == -ENOENT)
        return false;               /* gone */
    uint64_t h = n > 0 ? hash_bytes(buf, (size_t)n) : 0;
    bool full = !old || n < 0 || h != t->io_hash ||
                ((unsigned long)t->id + refresh_no) % LAZY_EVERY == 0;
    t->io_hash = h;
    if (n > 0)
        parse_io(buf, t);
    if (!full)
        return true;
    unsigned long long start = t->start;
    task_file(path, sizeof(path), t, "stat");
    if (read_at(proc_fd, path, buf, sizeof(buf)) <= 0)
        return false;
    parse_stat(buf, t);
    struct stat st;
    if (threads)
        snprintf(path, sizeof(path), "%d/task/%d", t->tgid, t->id);
    else
        snprintf(path, sizeof(path), "%d", t->id);
    if (fstatat(proc_fd, path, &st, AT_SYMLINK_NOFOLLOW) == 0)
        t->uid = st.st_uid;
    t->ioprio = (int)syscall(SYS_ioprio_get, 1 /* IOPRIO_WHO_PROCESS */, t->id);
    if (!t->cmdline || !old || start != t->start)
        read_cmdline(t);
    checksum += t->read_bytes + t->write_bytes + (uint64_t)t->ioprio + t->uid;
    return true;
}

/* One task, fresh or known from the last refresh (old, or NULL). */
static bool sample_task(struct task *t, struct task *old)
{
    char path[64], buf[1024];
    if (lazy)
        return sample_task_lazy(t, old);
    if (old) {
        t->stat_fd = old->stat_fd;
        t->io_fd = old->io_fd;
        t->cmdline = old->cmdline;
        old->stat_fd = old->io_fd = -1;
        old->cmdline = NULL;
    } else {
        t->stat_fd = t->io_fd = -1;
        if (keep_open) {
            task_file(path, sizeof(path), t, "stat");
            t->stat_fd = openat(proc_fd, path, O_RDONLY | O_CLOEXEC);
            task_file(path, sizeof(path), t, "io");
            t->io_fd = openat(proc_fd, path, O_RDONLY | O_CLOEXEC);
        }
    }
    ssize_t n;
    if (keep_open) {
        n = t->stat_fd >= 0 ? reread(t->stat_fd, buf, sizeof(buf)) : -1;
    } else {
        task_file(path, sizeof(path), t, "stat");
        n = read_at(proc_fd, path, buf, sizeof(buf));
    }
    if (n <= 0)
        return false;               /* gone */
    parse_stat(buf, t);
    if (keep_open) {
        n = t->io_fd >= 0 ? reread(t->io_fd, buf, sizeof(buf)) : -1;
    } else {
        task_file(path, sizeof(path), t, "io");
        n = read_at(proc_fd, path, buf, sizeof(buf));
    }
    if (n > 0)
        parse_io(buf, t);
    struct stat st;
    if (threads)
        snprintf(path, sizeof(path), "%d/task/%d", t->tgid, t->id);
    else
        snprintf(path, sizeof(path), "%d", t->id);
    if (fstatat(proc_fd, path, &st, AT_SYMLINK_NOFOLLOW) == 0)
        t->uid = st.st_uid;
    t->ioprio = (int)syscall(SYS_ioprio_get, 1 /* IOPRIO_WHO_PROCESS */, t->id);
    if (!t->cmdline || !old || old->start != t->start)
        read_cmdline(t);
    read_extras(t);
    checksum += t->read_bytes + t->write_bytes + (uint64_t)t->ioprio + t->uid;
    return true;
}

static void drop(struct task *t)
{
    if (t->stat_fd >= 0)
        close(t->stat_fd);
    if (t->io_fd >= 0)
        close(t->io_fd);
    free(t->cmdline);
}

static void push(struct list *l, int tgid, int id)
{
    if (l->n == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 1024;
        l->t = realloc(l->t, l->cap * sizeof(l->t[0]));
        if (!l->t) {
            perror("floor");
            exit(1);
        }
    }
    l->t[l->n++] = (struct task){ .tgid = tgid, .id = id, .stat_fd = -1, .io_fd = -1 };
}

/* Numeric entries of a directory, in the order the kernel gives (ascending ids). */
static void list_dir(int dir, int tgid, struct list *l)
{
    static char buf[64 * 1024];
    lseek(dir, 0, SEEK_SET);
    for (;;) {
        long n = syscall(SYS_getdents64, dir, buf, sizeof(buf));
        if (n <= 0)
            break;
        for (long off = 0; off < n;) {
            struct { uint64_t ino; int64_t off; unsigned short reclen; unsigned char type; char name[]; } *d =
                (void *)(buf + off);
            off += d->reclen;
            if (d->name[0] < '1' || d->name[0] > '9')
                continue;
            int id = atoi(d->name);
            if (!threads) {
                push(l, id, id);
            } else if (tgid) {
                push(l, tgid, id);
            } else {
                char path[32];
                snprintf(path, sizeof(path), "%d/task", id);
                int td = openat(proc_fd, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                if (td >= 0) {
                    list_dir(td, id, l);
                    close(td);
                }
            }
        }
    }
}

static int cmp_key(const struct task *a, const struct task *b)
{
    if (a->tgid != b->tgid)
        return a->tgid < b->tgid ? -1 : 1;
    return (a->id > b->id) - (a->id < b->id);
}

/* Returns how many tasks got delay figures. */
static size_t refresh(struct list *old, struct list *cur, int diskstats_fd, const int *psi_fd)
{
    char buf[16384];
    checksum += (uint64_t)reread(diskstats_fd, buf, sizeof(buf));
    for (int i = 0; i < 3; i++)
        if (psi_fd[i] >= 0)
            checksum += (uint64_t)reread(psi_fd[i], buf, sizeof(buf));
    cur->n = 0;
    refresh_no++;
    list_dir(proc_fd, 0, cur);
    /* Both lists ascend by (tgid, id): one merge pairs each task with its last sample. */
    size_t j = 0, k = 0;
    for (size_t i = 0; i < cur->n; i++) {
        struct task *t = &cur->t[i];
        while (j < old->n && cmp_key(&old->t[j], t) < 0)
            drop(&old->t[j++]);
        struct task *o = j < old->n && cmp_key(&old->t[j], t) == 0 ? &old->t[j++] : NULL;
        if (sample_task(t, o))
            cur->t[k++] = *t;
        else
            drop(t);
    }
    while (j < old->n)
        drop(&old->t[j++]);
    old->n = 0;
    cur->n = k;
    taskstats_all(cur);
    size_t with_delay = 0;
    for (size_t i = 0; i < cur->n; i++) {
        checksum += cur->t[i].blkio_delay;
        with_delay += cur->t[i].delay_ok;
    }
    return with_delay;
}

static double mono(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
    long iterations = 1;
    double delay = 1.0;
    int c;
    while ((c = getopt(argc, argv, "bPkln:d:x:")) != -1) {
        switch (c) {
        case 'b': break;
        case 'P': threads = true; break;
        case 'k': keep_open = true; break;
        case 'l': lazy = true; break;
        case 'n': iterations = strtol(optarg, NULL, 10); break;
        case 'd': delay = strtod(optarg, NULL); break;
        case 'x':
            for (char *tok = strtok(optarg, ","); tok; tok = strtok(NULL, ",")) {
                if (!strcmp(tok, "status")) extras |= X_STATUS;
                else if (!strcmp(tok, "comm")) extras |= X_COMM;
                else if (!strcmp(tok, "cmdline")) extras |= X_CMDLINE;
                else if (!strcmp(tok, "fd")) extras |= X_FD;
                else { fprintf(stderr, "floor: unknown extra %s\n", tok); return 2; }
            }
            break;
        default:
            fputs("usage: floor [-b] [-P] [-k] [-l] [-n N] [-d SECONDS] [-x status,comm,cmdline,fd]\n", stderr);
            return 2;
        }
    }
    if (keep_open) {                 /* two files per task: ask for the hard limit */
        struct rlimit rl;
        if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
            rl.rlim_cur = rl.rlim_max;
            setrlimit(RLIMIT_NOFILE, &rl);
        }
    }
    proc_fd = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    int diskstats_fd = open("/proc/diskstats", O_RDONLY | O_CLOEXEC);
    int psi_fd[3] = {
        open("/proc/pressure/cpu", O_RDONLY | O_CLOEXEC),
        open("/proc/pressure/io", O_RDONLY | O_CLOEXEC),
        open("/proc/pressure/memory", O_RDONLY | O_CLOEXEC),
    };
    if (proc_fd < 0 || diskstats_fd < 0) {
        perror("floor: /proc");
        return 1;
    }
    int r = nl_open();
    if (r < 0) {
        fprintf(stderr, "floor: taskstats: %s\n", strerror(-r));
        return 1;
    }
    struct list a = { 0 }, b = { 0 }, *old = &a, *cur = &b;
    refresh(old, cur, diskstats_fd, psi_fd);
    double next = mono();
    for (long i = 1; i <= iterations; i++) {
        struct list *tmp = old;
        old = cur;
        cur = tmp;
        next += delay;
        struct timespec ts = { .tv_sec = (time_t)next, .tv_nsec = (long)((next - (double)(time_t)next) * 1e9) };
        while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
            ;
        size_t nd = refresh(old, cur, diskstats_fd, psi_fd);
        printf("refresh %ld tasks %zu delays %zu\n", i, cur->n, nd);
    }
    printf("checksum %llu\n", (unsigned long long)checksum);
    return 0;
}
