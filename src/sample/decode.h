/* SPDX-License-Identifier: GPL-2.0-or-later */
/* src/sample/decode.h: private to the decoders of a recorded sample (sample/decode*.c):
 * the decoding context, the types the parts share, and the functions one part defines and
 * another calls. The contract is sample/frame.h's (and store/replay.h's).
 */
#ifndef IOTRIAGE_SAMPLE_DECODE_H
#define IOTRIAGE_SAMPLE_DECODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "delta.h"
#include "sample/frame.h"
#include "sample/json.h"
#include "snapshot.h"
#include "verdict.h"

/* Devices are indexed by task_devs.idx, a uint16_t. */
#define REPLAY_DEVS_MAX ((size_t)UINT16_MAX + 1)


struct dec {
    const char *path;                /* the recording, for messages */
    size_t line;
    char *err;
    size_t errlen;
    char at[200];                    /* the value being read: "processes[3].ioprio" */
    size_t atlen;
};

/* Into a fixed field: see get_fixed(). */
enum fit { FIT_EXACT, FIT_CUT };

/* Device index by name, for processes' device lists and warnings. */
struct name_ix {
    const struct dev_sample *devs;
    size_t *order;                   /* indices into devs, sorted by name */
    size_t n;
};

/* One task as decoded, before the frame's arrays are laid out (stubs may join it). */
struct ptask {
    struct task_sample s;
    struct task_rates r;
    struct task_devs td;
    double lens_bps[TASK_DEVS_MAX];  /* to the frame's snapshot rows (layout_tasks) */
    struct task_async async[TASK_DEVS_MAX];  /* requests_wait, when has_async */
    bool has_async;
    /* requests_by_prio, row 0 (layout_tasks gives them the task's row); malloc'd */
    struct task_prio_bps *prios;
    size_t nprios;
    enum role role;
    bool stub;
};

struct ptasks {
    struct ptask *v;
    size_t n, cap;
};

/* Tasks by pid. */
struct pid_ix {
    pid_t pid;
    size_t idx;
};

/* decode.c */
#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
int dfail(struct dec *d, const char *key, const char *fmt, ...);
const char *shown(char buf[64], const char *s, size_t len);
#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
size_t at_push(struct dec *d, const char *fmt, ...);
void at_pop(struct dec *d, size_t old);
int status_fail(struct dec *d, const char *key, const struct json_value *v,
                enum json_status st, const char *want);
int get_num(struct dec *d, const struct json_value *o, const char *key, double *out);
int get_int(struct dec *d, const struct json_value *o, const char *key,
            int64_t lo, int64_t hi, int64_t *out);
int get_known(struct dec *d, const struct json_value *o, const char *key, int64_t hi,
              long *out);
int get_bool(struct dec *d, const struct json_value *o, const char *key, bool *out);
int get_tri(struct dec *d, const struct json_value *o, const char *key, int *out);
int get_str(struct dec *d, const struct json_value *o, const char *key, bool nullable,
            const char **s, size_t *len);
void copy_cut(char *dst, size_t cap, const char *s, size_t len);
int get_fixed(struct dec *d, const struct json_value *o, const char *key, bool nullable,
              enum fit fit, char *dst, size_t cap);
int get_list(struct dec *d, const struct json_value *o, const char *key, bool object,
             size_t max, const struct json_value **out);
int err_from_text(const char *s);
bool policy_lookup(const char *s, int *out);
bool code_lookup(const char *s, int *out);
bool severity_lookup(const char *s, int *out);
bool role_lookup(const char *s, int *out);
bool class_lookup(const char *s, int *out);
bool eff_class_lookup(const char *s, int *out);
bool source_lookup(const char *s, int *out);
int get_name(struct dec *d, const struct json_value *o, const char *key, bool nullable,
             bool (*lookup)(const char *, int *), const char *what, int *out);
bool is_null(const struct json_value *o, const char *key);

/* decode_lens.c */
int decode_lens_head(struct dec *d, const struct json_value *root, struct snapshot *s);
int decode_lens_stages(struct dec *d, const struct json_value *o, struct dev_rates *r);
bool prio_of_name(const char *s, size_t len, unsigned *out);
int decode_lens_lat(struct dec *d, const struct json_value *o, struct dev_rates *r);
int decode_writeback_by(struct dec *d, const struct json_value *o, struct dev_rates *r);
int decode_lens_task(struct dec *d, const struct json_value *o, struct task_rates *r);

/* decode_devices.c */
int dev_find(const struct name_ix *ix, const char *name);
int build_dev_index(struct dec *d, struct name_ix *ix, const struct dev_sample *devs,
                    size_t n);
int decode_devices(struct dec *d, const struct json_value *root, struct replay_frame *f);

/* decode_procs.c */
void ptasks_free(struct ptasks *p);
int decode_processes(struct dec *d, const struct json_value *root, bool threads,
                     const struct name_ix *ix, struct ptasks *pt);
int cmp_pid(const void *a, const void *b);
long pid_find(const struct pid_ix *ix, size_t n, pid_t pid);
int add_stubs(struct dec *d, const struct json_value *warnings, bool threads,
              struct ptasks *pt, size_t *nstubs);
void layout_tasks(struct replay_frame *f, struct ptasks *pt);

/* decode_warn.c */
int decode_warnings(struct dec *d, const struct json_value *list, const struct name_ix *dix,
                    struct replay_frame *f);
int decode_notes(struct dec *d, const struct json_value *root, struct snapshot *s);
int decode_cgroups(struct dec *d, const struct json_value *root, struct replay_frame *f);

#endif
