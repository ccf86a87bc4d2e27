/* SPDX-License-Identifier: GPL-2.0-or-later */
/* recorder.h: `iotriage record`, the always-on recorder (issue #16).
 *
 * Contract
 * - record_run() samples every interval_s (CLOCK_MONOTONIC deadlines, like the batch
 *   loop) until *stop is set or `iterations` samples were written, and appends each
 *   sample to the store in o->dir as the line sample_write writes with only_active:
 *   devices, PSI, every verdict, and every process that moved bytes or waited on I/O in
 *   that interval (with its priority, devices and role), plus stubs for processes that
 *   only a warning names (replay rebuilds those). That is what the screen needs to say
 *   who suffered, who caused, on which device and scheduler, with which verdicts.
 * - It flushes (ends a zstd frame) every flush_s seconds, so a kill -9 loses at most
 *   that much; retention (max_age_s, max_bytes) runs as store/store.h says.
 * - Messages go to o->log (stderr under systemd: the journal), one line each, never one
 *   per sample: a full disk is reported once when it fills and once when recording
 *   resumes (with the number of samples dropped); any other store error once per errno
 *   until a sample is stored again.
 * - Under systemd (Type=notify: $NOTIFY_SOCKET set) it sends READY=1 once the sources are
 *   open and the first snapshot is taken, STATUS= when recording pauses or resumes, and
 *   STOPPING=1 on the way out.
 * - Returns 0 on a requested stop, 1 when it could not start (the reason logged).
 *   Signals are the caller's: it sets *stop from its handler; sleeps end on EINTR.
 * - The device baselines (quiet-time await) start from the directory's newest sample of
 *   the last day (record_baselines_load), so a restart does not forget them.
 * - Defaults (0 in a field): dir STORE_DEFAULT_DIR, interval RECORD_DEFAULT_INTERVAL_S,
 *   flush RECORD_DEFAULT_FLUSH_S, age RECORD_DEFAULT_AGE_S, size RECORD_DEFAULT_BYTES.
 *   docs/performance.md gives the cost that chose the interval.
 */
#ifndef IOTRIAGE_RECORD_RECORDER_H
#define IOTRIAGE_RECORD_RECORDER_H

#include <signal.h>
#include <stdint.h>
#include <stdio.h>

#define RECORD_DEFAULT_INTERVAL_S 5.0
#define RECORD_DEFAULT_FLUSH_S    10.0
#define RECORD_DEFAULT_AGE_S      (7.0 * 86400)
#define RECORD_DEFAULT_BYTES      (1ull << 30)

struct record_opts {
    const char *dir;                 /* recording directory */
    double interval_s;               /* between samples */
    double flush_s;                  /* between frames (what a kill -9 may lose) */
    double max_age_s;                /* retention by age; < 0: keep forever */
    uint64_t max_bytes;              /* retention by size; UINT64_MAX: no limit */
    int level;                       /* zstd level, 0: the store's default */
    long iterations;                 /* 0: until *stop */
    const char *proc_root, *sys_root;/* NULL: /proc, /sys */
    volatile sig_atomic_t *stop;     /* may be NULL (then only iterations stop it) */
    FILE *log;                       /* NULL: stderr */
};

int record_run(const struct record_opts *o);

struct baselines;

/* Seed a live run's device baselines (delta.h) from a recording, so that saturation is
 * judged from the first refresh instead of after the device's first quiet interval: the
 * newest sample in dir (its last hour's file) no older than max_age_s before now gives each
 * device's `quiet_await` (name and major:minor must match, as delta's own lookup does);
 * devices with a null level are left alone. record_run() seeds itself this way, so a
 * restarted recorder keeps what it learnt. Returns the number of devices seeded (0 when
 * there is no recent sample), or -errno with one line in err (unreadable directory, a
 * newest sample that is not valid JSON). */
int record_baselines_load(const char *dir, double now, double max_age_s, struct baselines *hist,
                          char *err, size_t errlen);

#endif
