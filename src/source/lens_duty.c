/* SPDX-License-Identifier: GPL-2.0-or-later */
/* lens_duty.c: the BPF lens's duty cycle (source/lens.h): the thread that attaches and
 * detaches the per-request programs and the scheduler's in windows when the machine's
 * request rate is high.
 * The loader and the readings are in lens.c. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "bpf/lens_maps.h"            /* the value types, before the skeleton */
#include "iotriage.skel.h"
#include "lens_priv.h"

/* ---- The duty cycle (lens.h) ---- */


/* Attach one request program (again); 0 or -errno. */
static int rqp_attach(struct lens_rqprog *p)
{
    if (p->link_fd) {
        if (*p->link_fd > 0 || p->prog_fd <= 0)
            return 0;
        int fd = bpf_raw_tracepoint_open(NULL, p->prog_fd);
        if (fd < 0)
            return fd;
        *p->link_fd = fd;
        return 0;
    }
    if (*p->link || !p->prog)
        return 0;
    struct bpf_link *k = bpf_program__attach(p->prog);
    if (!k)
        return -errno;
    *p->link = k;
    return 0;
}

/* Closing the link's last fd takes the program off its tracepoint. */
static void rqp_detach(struct lens_rqprog *p)
{
    if (p->link_fd) {
        if (*p->link_fd > 0)
            close(*p->link_fd);
        *p->link_fd = 0;
        return;
    }
    bpf_link__destroy(*p->link);
    *p->link = NULL;
}

/* Requests issued on every device, as the issue program counts them. */
static uint64_t rq_issued_sum(const struct lens *l)
{
    uint64_t n = 0;
    for (size_t i = 0; i < LENS_MAX_DEVS; i++)
        if (__atomic_load_n(&l->devs[i].key, __ATOMIC_RELAXED))
            n += __atomic_load_n(&l->devs[i].issued, __ATOMIC_RELAXED);
    return n;
}

static bool marks_clear(const struct lens *l)
{
    enum { N = sizeof(((struct iotriage_bpf__bss *)0)->lens_marks) / sizeof(__u64) };
    for (size_t i = 0; i < N; i++)
        if (__atomic_load_n(&l->marks[i], __ATOMIC_RELAXED))
            return false;
    return true;
}

/* With every request program detached: what a window left is cleared, so that nothing of
 * it reaches the next one. The requests counted in flight and still there (a completion
 * after the drain's end) leave the count; the scheduler's counts are evened (the lens saw
 * only the window's inserts); the marks and the request cache are emptied (an entry left
 * would time a later request of the same address from this window's stamps); and the
 * programs' start (lens_t0) is taken again, so that a request counts in flight only when
 * the next window saw it allocated after both its issue and its completion programs ran
 * (requests.bpf.c: lens_t0). The device's rate and first completion start again too. */
static void duty_reset(struct lens *l)
{
    for (size_t i = 0; i < LENS_MAX_DEVS; i++) {
        struct lens_dev_val *d = &l->devs_rw[i];
        if (!d->key)
            continue;
        d->lost = d->done - d->issued;       /* in flight: issued - done + lost = 0 */
        memcpy(d->sched_out, d->sched_in, sizeof d->sched_out);
        d->first_done_ns = 0;
        d->rate_ns = 0;
    }
    memset(l->marks, 0, sizeof(((struct iotriage_bpf__bss *)0)->lens_marks));
    *l->issue_seen = 0;
    *l->t0 = 0;
    for (__u32 at = 0; at < l->rq_sets; at += LENS_RQ_CLEAR) {
        for (__u32 k = 0; k < LENS_RQ_CLEAR; k++)
            l->rqs_keys[k] = at + k;
        __u32 n = LENS_RQ_CLEAR;
        if (bpf_map_update_batch(l->rqs_fd, l->rqs_keys, l->rqs_zero, &n, NULL) < 0) {
            for (__u32 k = at; k < at + LENS_RQ_CLEAR; k++) /* kernels without batch ops */
                bpf_map_update_elem(l->rqs_fd, &k, l->rqs_zero, BPF_ANY);
        }
    }
}

/* The detached time's bookkeeping, at the midpoint of the issue program's attach or
 * detach call (the count of requests the window stands for is that program's). */
static void duty_mark(struct lens *l, uint64_t t, bool attached)
{
    pthread_mutex_lock(&l->mu);
    if (attached && l->detached_from) {
        if (t > l->detached_from)
            l->detached_ns += t - l->detached_from;
        l->detached_from = 0;
    } else if (!attached && !l->detached_from) {
        l->detached_from = t;
    }
    pthread_mutex_unlock(&l->mu);
}

/* A window opens: the completion side first, then the issue, then the rest of the
 * submission side. Returns when the issue program was attached (a midpoint). */
static uint64_t duty_open(struct lens *l)
{
    uint64_t at = 0;
    for (int i = 0; i < RQP_N; i++) {
        uint64_t a = mono_ns();
        int rc = rqp_attach(&l->rqp[i]);
        if (i == RQP_ISSUE && rc == 0) {
            at = a + (mono_ns() - a) / 2;
            duty_mark(l, at, true);
            /* Waits start from here (waits.bpf.c): a start from before is stale. */
            __atomic_store_n(l->wait_from, mono_ns(), __ATOMIC_RELAXED);
            __atomic_store_n(l->wait_shut, 0, __ATOMIC_RELEASE);
        }
    }
    return at ? at : mono_ns();
}

/* A window closes: the submission side, the issue last; then the completions of the
 * requests counted in flight are followed (they are marked, requests.bpf.c: lens_marks)
 * for up to LENS_DUTY_DRAIN_NS; then the completion side goes and what is left is
 * cleared. Returns when the issue program was detached. */
static uint64_t duty_close(struct lens *l, uint64_t opened)
{
    uint64_t at = 0;
    for (int i = RQP_N - 1; i >= RQP_SUBMIT_FIRST; i--) {
        uint64_t a = mono_ns();
        if (i == RQP_ISSUE)            /* no wait starts after the window */
            __atomic_store_n(l->wait_shut, 1, __ATOMIC_RELEASE);
        rqp_detach(&l->rqp[i]);
        if (i == RQP_ISSUE) {
            at = a + (mono_ns() - a) / 2;
            duty_mark(l, at, false);
        }
    }
    /* The window's requests are those allocated from lens_t0 on (bpf_ktime_get_ns:
     * CLOCK_MONOTONIC), the first completion after its first issue, which a loaded
     * machine can delay by milliseconds: the time before it counts as not watched. */
    uint64_t t0 = __atomic_load_n(l->t0, __ATOMIC_RELAXED);
    if (opened && t0 > opened && t0 < at) {
        pthread_mutex_lock(&l->mu);
        l->detached_ns += t0 - opened;
        pthread_mutex_unlock(&l->mu);
    }
    while (!marks_clear(l) && mono_ns() - at < LENS_DUTY_DRAIN_NS)
        nanosleep(&(struct timespec){ .tv_nsec = 1000000 }, NULL);
    for (int i = RQP_SUBMIT_FIRST - 1; i >= 0; i--)
        rqp_detach(&l->rqp[i]);
    uint64_t gone = mono_ns();
    /* A program run that began before its detachment may still be finishing on another
     * CPU (the kernel frees the tracepoint's probe list after a grace period, it does not
     * wait for it): a run takes microseconds. */
    nanosleep(&(struct timespec){ .tv_nsec = 1000000 }, NULL);
    duty_reset(l);
    pthread_mutex_lock(&l->rd);
    waits_finish(l, gone);
    pthread_mutex_unlock(&l->rd);
    return at;
}

/* Sleep until CLOCK_MONOTONIC ns `until`; true when lens_close asks the thread to end. */
static bool duty_sleep(struct lens *l, uint64_t until)
{
    struct timespec ts = { .tv_sec = (time_t)(until / 1000000000ull),
                           .tv_nsec = (long)(until % 1000000000ull) };
    pthread_mutex_lock(&l->mu);
    while (!l->stop && mono_ns() < until)
        pthread_cond_timedwait(&l->cv, &l->mu, &ts);
    bool stop = l->stop;
    pthread_mutex_unlock(&l->mu);
    return stop;
}

static void duty_set_cycling(struct lens *l, bool on)
{
    pthread_mutex_lock(&l->mu);
    l->cycling = on;
    pthread_mutex_unlock(&l->mu);
}

/* The thread: every probe, the machine's request rate; above LENS_TIMED_RATE twice in a
 * row, a window each period from then on, until the windows' rate falls under
 * LENS_DUTY_LOW twice in a row (lens_duty_step decides). The phases run from the lens's
 * start, on their own clock: nothing the user does (the refresh interval, a pause)
 * moves them. */
static void *duty_main(void *arg)
{
    struct lens *l = arg;
    struct lens_duty_ctl c = { 0 };
    uint64_t t = mono_ns(), last_t = t, last_n = rq_issued_sum(l);
    for (;;) {
        t += lens_duty_phase_ns(&c);
        if (duty_sleep(l, t))
            break;
        if (!c.cycling) {
            uint64_t now = mono_ns(), n = rq_issued_sum(l);
            bool start = lens_duty_step(&c, now > last_t ? now - last_t : 0, n - last_n);
            last_t = now;
            last_n = n;
            if (start) {
                duty_set_cycling(l, true);
                duty_close(l, 0);
            }
            continue;
        }
        uint64_t n0 = rq_issued_sum(l);
        uint64_t a = duty_open(l);
        if (duty_sleep(l, a + LENS_DUTY_WINDOW_NS))
            break;
        uint64_t n1 = rq_issued_sum(l);
        uint64_t z = duty_close(l, a);
        if (lens_duty_step(&c, z > a ? z - a : 0, n1 - n0)) {
            duty_open(l);
            duty_set_cycling(l, false);
            last_t = mono_ns();
            last_n = rq_issued_sum(l);
        }
    }
    return NULL;
}

/* The thread, unless IOTRIAGE_LENS_DUTY=1 keeps every program attached (an A/B of the
 * duty cycle's cost, bench/lens.sh). Without it (no memory, no thread) the lens runs
 * attached, as it did before the duty cycle. */
void duty_start(struct lens *l)
{
    const char *e = getenv("IOTRIAGE_LENS_DUTY");
    if (e && strcmp(e, "1") == 0)
        return;
    for (int i = 0; i < RQP_N; i++)
        if (!l->rqp[i].link_fd && !l->rqp[i].prog)
            return;                  /* a program not found: it could not be detached */
    l->rqs_zero = calloc(LENS_RQ_CLEAR, sizeof(struct lens_rq_set));
    l->rqs_keys = malloc(LENS_RQ_CLEAR * sizeof(*l->rqs_keys));
    if (!l->rqs_zero || !l->rqs_keys)
        return;
    l->duty_started = pthread_create(&l->duty_thread, NULL, duty_main, l) == 0;
}

