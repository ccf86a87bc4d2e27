/* SPDX-License-Identifier: GPL-2.0-or-later */
/* source/procs_parts.h: private to procs.c and its parts (procs_list.c: the task list;
 * procs_iter.c: the task iterator's path): the source, the refresh being assembled and
 * the functions they share. */
#ifndef IOTRIAGE_SOURCE_PROCS_PARTS_H
#define IOTRIAGE_SOURCE_PROCS_PARTS_H

#include "source/procs.h"
#include "source/taskiter.h"

#define PATH_ROOM   64           /* a task's directory below /proc and "/name" */
#define GATE_CHUNK  512
#define CMDLINE_MAX (64 * 1024)
#define PF_KTHREAD  0x00200000   /* include/linux/sched.h: the task is a kernel thread */
#define STAT_BUF    2048         /* /proc/PID/stat: 52 numbers and a name of at most 64 bytes */
#define IO_BUF      512          /* /proc/PID/io: 7 short lines */

/* include/linux/threads.h: PID_MAX_LIMIT on 64-bit, the most tasks a kernel can have */
#define PROCS_PID_MAX_LIMIT ((size_t)4 * 1024 * 1024)

/* A task's command line as last read, by (id, start), and the name it had then: a
 * different name means an exec, and a new command line. Both are references. */
struct name_cache {                  /* 104 bytes: 4 of padding */
    pid_t id;
    pid_t tgid;
    pid_t live_tid;                  /* task_sample.live_tid at the last full read */
    unsigned long long start;
    char *comm;
    char *cmdline;
    double read_at;
    /* What the last full read found, to stand for it while the task does not run (see
     * procs_read: the run-time gate). */
    uint64_t run_ns;
    struct task_io io;
    uid_t uid;
    int  io_err;
    int  nlwp;
    char state;
    bool kthread;
    bool has_run;                    /* run_ns is the task's run time at that read */
    bool cmd_pending;                /* cmdline is "" for now, not read (idle_cmd_later) */
};

struct user_name {
    uid_t uid;
    char *name;                      /* one reference */
};

struct procs_src {
    bool threads;
    struct strpool *pool;
    struct name_cache *names;        /* the last refresh's, sorted by id */
    size_t nnames, names_cap;
    struct user_name *users;         /* every uid seen, never expired (like libproc2) */
    size_t nusers, users_cap, last_user;
    char *cmdbuf;                    /* CMDLINE_MAX, for reading command lines */
    /* The listing (see procs.h: how tasks are listed). */
    int loadavg_fd;                  /* /proc/loadavg, kept open; -1: not ours to trust */
    bool ns_checked;                 /* whether loadavg_fd can be opened was decided */
    pid_t last_pid;                  /* the kernel's last allocated pid when the list was
                                      * last made; 0: unknown */
    long tgid_offset;                /* /proc's directory position of process p is
                                      * p + tgid_offset; 0: not learnt */
    pid_t range_from;                /* where the next range starts: the start of the last
                                      * refresh's own allocations; 0: unknown */
    double full_at;                  /* when /proc was last listed whole */
    uint64_t only_sig;               /* the `only` filter the last list was made with */
    /* The task iterator (procs_set_taskiter): when set, the task list and every per-task
     * figure come from it; NULL: from /proc. */
    struct taskiter *ti;
    struct taskiter_acc acc;         /* its tasks of this refresh, reused */
    long clk_tck;
    bool last_iter;                  /* the last procs_read's tasks came from it */
    bool idle_cmd_later;             /* procs_defer_idle_cmdlines: for the next run only */
    pid_t *blind;                    /* processes /proc listed that the iterator did not
                                      * show at the last check: read from /proc */
    size_t nblind, blind_cap;
    double blind_at;                 /* when /proc was last listed for that check */
};

/* The refresh being assembled. */
struct reap {
    struct procs_src *src;
    int proc_fd;
    double now;
    struct task_sample *out;
    size_t n, cap;
    /* The cache is updated in place, not copied: the last refresh's entry of each task read
     * again is rewritten (and marked in seen, one bit an entry of src->names), a task it
     * did not hold gets one in added; finish_read drops the unmarked, merges in added. */
    uint64_t *seen;
    struct name_cache *added;
    size_t nadded, added_cap;
    struct name_cache *cur;          /* the entry of the task added last */
    char *group_cmd;                 /* threads: the command line of this process as */
    pid_t group_tgid;                /* known this refresh (its leader's, or the last read) */
    double group_read_at;            /* ... and when it was read */
    pid_t last_id;
    bool unsorted;                   /* ids did not come in ascending order */
};

/* A task listed by the readdir, before it is read. */
struct listed {
    pid_t id, tgid;
};

struct list {
    struct listed *v;
    size_t n, cap;
};

/* procs.c */
bool selected(pid_t id, pid_t tgid, const pid_t *only, size_t nonly);

/* procs_list.c: a /proc entry that is a pid; the list of tasks to read. */
pid_t pid_name(const char *s);
int make_list(struct procs_src *src, int proc_fd, const pid_t *only, size_t nonly,
              double now, struct list *l);

/* procs_iter.c: the refresh from the task iterator. */
int read_iter(struct procs_src *src, int proc_fd, const pid_t *only, size_t nonly,
              procs_stats_fn stats, void *ctx, double now, struct task_sample **tasks,
              size_t *n);

/* Shared by the parts, defined where they were. */
void list_threads(struct list *l, int proc_fd, pid_t tgid, const pid_t *only, size_t nonly);
void list_push(struct list *l, pid_t tgid, pid_t id);
void read_task(struct reap *rp, pid_t tgid, pid_t id, char *path, size_t len);
void note_full(struct reap *rp, size_t k);
void reap_begin(struct reap *rp);
char *user_of(struct procs_src *src, uid_t uid);
uint64_t io_other_sig(uint64_t rchar, uint64_t wchar, uint64_t syscr, uint64_t syscw);
void names_of(struct reap *rp, struct task_sample *t, const char *comm,
              const struct taskiter_acc *acc, const struct taskiter_task *x);
void finish_read(struct reap *rp_, struct task_sample **tasks, size_t *n);

ssize_t read_once_at(int dirfd, const char *path, char *buf, size_t cap);
uint64_t mix64(uint64_t x);

#endif
