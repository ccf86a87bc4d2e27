/* SPDX-License-Identifier: GPL-2.0-or-later */
/* sample/decode_warn.c: a recorded sample's warnings, notes (the errors the writer turned into text)
 * and the cgroup lens (sample/decode_cgroups.h).
 *
 * Each key is read back into the field src/sample/write.c wrote it from; the comments name
 * what the writer did to a field on its way out (null for -1, a name for a number...)
 * and so what undoing it takes. Everything is checked: this is a file a user hands us.
 */
#include "decode.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sample/decode_cgroups.h"
#include "sample/decode_fs.h"
#include "sample/json.h"
#include "sample/sample.h"
#include "util.h"
#include "util/escape.h"
#include "util/fmt.h"

/* ---- warnings ---------------------------------------------------------------------------- */

/* A warning's evidence (docs/json.md "Warning objects"): absent in recordings made
 * before it, which were all the rule table's. */
static int decode_evidence(struct dec *d, const struct json_value *o, struct warning *w)
{
    w->evidence = EV_RULE;
    w->contradicts = false;
    memset(&w->m, 0, sizeof(w->m));
    if (!json_get(o, "evidence"))
        return 0;
    const char *ev;
    size_t len;
    int rc;
    if ((rc = get_str(d, o, "evidence", false, &ev, &len)) ||
        (rc = get_bool(d, o, "contradicts_rules", &w->contradicts)))
        return rc;
    if (len == 8 && memcmp(ev, "measured", 8) == 0) {
        w->evidence = EV_MEASURED;
    } else if (len == 7 && memcmp(ev, "sampled", 7) == 0) {
        w->evidence = EV_SAMPLED;
    } else if (!(len == 4 && memcmp(ev, "rule", 4) == 0)) {
        char buf[64];
        return dfail(d, "evidence", "\"%s\" is not \"measured\", \"sampled\" nor \"rule\"",
                     shown(buf, ev, len));
    }
    const struct json_value *m = json_get(o, "measured");
    if (!m || json_as_object(m) == JSON_IS_NULL)
        return 0;
    if (w->evidence != EV_MEASURED)
        return dfail(d, "measured", "figures on a warning of the rule table");
    enum json_status st = json_as_object(m);
    if (st != JSON_OK)
        return status_fail(d, "measured", m, st, "an object or null");
    int64_t n, vn;
    size_t old = at_push(d, ".measured");
    unsigned prio;
    if (!(rc = get_fixed(d, m, "prio", false, FIT_EXACT, w->m.prio, sizeof(w->m.prio))) &&
        !(rc = get_num(d, m, "p50_ms", &w->m.p50_ms)) && !(rc = get_int(d, m, "count", 0, INT64_MAX, &n)) &&
        !(rc = get_fixed(d, m, "vs", false, FIT_EXACT, w->m.vs, sizeof(w->m.vs))) &&
        !(rc = get_num(d, m, "vs_p50_ms", &w->m.vs_p50_ms)) &&
        !(rc = get_int(d, m, "vs_count", 0, INT64_MAX, &vn))) {
        w->m.count = (double)n;
        w->m.vs_count = (double)vn;
        if (!prio_of_name(w->m.prio, strlen(w->m.prio), &prio) || !prio_of_name(w->m.vs, strlen(w->m.vs), &prio))
            rc = dfail(d, NULL, "names no I/O priority iotriage prints");
    }
    at_pop(d, old);
    return rc;
}

static int decode_warning(struct dec *d, const struct json_value *o, const struct name_ix *dix,
                          const struct pid_ix *pix, size_t npix, const struct snapshot *snap,
                          struct warning *w)
{
    const char *dev;
    size_t len;
    int code = 0, sev = 0, rc; /* set by get_name() on success; gcc cannot see that
                                 * through the lookup pointer with Debian's flags */
    enum json_status st = json_as_object(o);
    if (st != JSON_OK)
        return status_fail(d, NULL, o, st, "an object");
    if ((rc = get_name(d, o, "code", false, code_lookup, "warning code", &code)) ||
        (rc = get_name(d, o, "severity", false, severity_lookup, "severity", &sev)) ||
        (rc = get_str(d, o, "device", warn_code_may_lack_dev((enum warn_code)code), &dev, &len)) ||
        (rc = get_fixed(d, o, "text", false, FIT_CUT, w->text, sizeof(w->text))))
        return rc;
    if ((rc = decode_evidence(d, o, w)))
        return rc;
    w->code = (enum warn_code)code;
    w->sev = (enum severity)sev;
    w->cgroup = -1;                  /* recordings carry no cgroup index (cgroups.h) */
    /* fs-* warnings (issue #20): about the filesystem at `mount`; tmpfs has no device. */
    w->fs = -1;
    if (warn_code_is_fs(w->code)) {
        const char *mnt;
        size_t mlen;
        if ((rc = get_str(d, o, "mount", false, &mnt, &mlen)))
            return rc;
        if ((w->fs = replay_fs_find(snap, mnt, mlen)) < 0)
            return dfail(d, "mount", "not among the sample's filesystems");
        if (!dev) {
            w->dev = -1;
            w->task = -1;
            return 0;
        }
    }
    w->task = -1;
    if (!dev) {                      /* io-pressure-not-block: a process, no device */
        w->dev = -1;
        if (json_get(o, "pid")) {
            int64_t pid;
            if ((rc = get_int(d, o, "pid", 0, INT_MAX, &pid)))
                return rc;
            long t = pid_find(pix, npix, (pid_t)pid);
            if (t < 0)
                return dfail(d, "pid", "%" PRId64 " has no task", pid);
            w->task = (int)t;
        }
        return 0;
    }
    w->dev = memchr(dev, '\0', len) ? -1 : dev_find(dix, dev);
    if (w->dev < 0) {
        char buf[64];
        return dfail(d, "device", "\"%s\" is not among the sample's devices", shown(buf, dev, len));
    }
    w->task = -1;                    /* a device finding has no pid */
    if (json_get(o, "pid")) {
        int64_t pid;
        if ((rc = get_int(d, o, "pid", 0, INT_MAX, &pid)))
            return rc;
        long t = pid_find(pix, npix, (pid_t)pid);
        if (t < 0)                   /* add_stubs gave every pid a task */
            return dfail(d, "pid", "%" PRId64 " has no task", pid);
        w->task = (int)t;
    }
    return 0;
}

/* The top-level list is every verdict in the verdicts' order; the per-device and
 * per-process lists repeat parts of it and are not read. */
int decode_warnings(struct dec *d, const struct json_value *list, const struct name_ix *dix,
                    struct replay_frame *f)
{
    size_t nt = f->snap.ntasks;
    struct pid_ix *pix = xcalloc(nt ? nt : 1, sizeof(*pix));
    for (size_t i = 0; i < nt; i++)
        pix[i] = (struct pid_ix){ f->snap.tasks[i].id, i };
    qsort(pix, nt, sizeof(*pix), cmp_pid);
    int rc = 0;
    for (size_t i = 0; !rc && i < json_len(list); i++) {
        if (f->ver.n == f->ver.cap) {
            f->ver.cap = f->ver.cap ? 2 * f->ver.cap : 16;
            f->ver.w = xreallocarray(f->ver.w, f->ver.cap, sizeof(*f->ver.w));
        }
        struct warning *w = &f->ver.w[f->ver.n];
        memset(w, 0, sizeof(*w));
        size_t old = at_push(d, "warnings[%zu]", i);
        rc = decode_warning(d, json_at(list, i), dix, pix, nt, &f->snap, w);
        at_pop(d, old);
        f->ver.n += !rc;
    }
    free(pix);
    return rc;
}

/* ---- notes: the errors the writer turned into text ------------------------------------- */

/* The writer's fixed texts (src/sample/write.c); the round-trip test fails if they drift. */
/* NOTE_* texts: sample/sample.h, shared with the writer */

static void note_psi(struct snapshot *s, const char *text)
{
    for (int k = 0; k < PSI_NRES; k++) {
        char prefix[64];
        int n = snprintf(prefix, sizeof(prefix), "pressure/%s unavailable: ", psi_resource_name[k]);
        if (strncmp(text, prefix, (size_t)n) != 0 || !s->psi[k].err)
            continue;                /* a note about a resource the sample has is noise */
        const char *why = text + n;
        s->psi[k].err = strcmp(why, NOTE_PSI_ENOENT) == 0 ? -ENOENT : err_from_text(why);
    }
}

static void note_delayacct(struct snapshot *s, const char *text)
{
    if ((s->delayacct == DA_OFF && strcmp(text, NOTE_DA_OFF) == 0) ||
        (s->delayacct == DA_UNKNOWN && strcmp(text, NOTE_DA_MISSING) == 0))
        return;                      /* the sysctl's state, not a taskstats failure */
    /* taskstats' own message; the screen tells "need CAP_NET_ADMIN" by EPERM */
    s->taskstats_err = strstr(text, "permission denied") ? -EPERM : -EIO;
    copy_cut(s->taskstats_msg, sizeof(s->taskstats_msg), text, strlen(text));
}

int decode_notes(struct dec *d, const struct json_value *root, struct snapshot *s)
{
    const struct json_value *list;
    int rc = get_list(d, root, "notes", false, SIZE_MAX, &list);
    for (size_t i = 0; !rc && i < json_len(list); i++) {
        const struct json_value *o = json_at(list, i);
        const char *src, *text;
        size_t slen, tlen;
        size_t old = at_push(d, "notes[%zu]", i);
        enum json_status st = json_as_object(o);
        if (st != JSON_OK)
            rc = status_fail(d, NULL, o, st, "an object");
        else if (!(rc = get_str(d, o, "source", false, &src, &slen)) &&
                 !(rc = get_str(d, o, "text", false, &text, &tlen))) {
            if (strcmp(src, "diskstats") == 0)
                s->diskstats_err = err_from_text(text);
            else if (strcmp(src, "psi") == 0)
                note_psi(s, text);
            else if (strcmp(src, "delayacct") == 0)
                note_delayacct(s, text);
            else if (strcmp(src, "procfs") == 0)
                copy_cut(s->proc_note, sizeof(s->proc_note), text, tlen);
            else if (strcmp(src, "procs") == 0)
                copy_cut(s->hidden_note, sizeof(s->hidden_note), text, tlen);
            else if (strcmp(src, "sysfs") == 0)
                copy_cut(s->sys_note, sizeof(s->sys_note), text, tlen);
            else if (strcmp(src, "pids") == 0 && s->npids_missing < SNAP_PIDS_MISSING_MAX &&
                     snapshot_pid_note_parse(text, &s->pids_missing[s->npids_missing]))
                s->npids_missing++;
            /* other sources: a newer writer's notes, nothing to restore */
        }
        at_pop(d, old);
    }
    return rc;
}

/* ---- the cgroup lens (sample/decode_cgroups.h) ------------------------------------------ */

int decode_cgroups(struct dec *d, const struct json_value *root, struct replay_frame *f)
{
    char msg[256];
    if (replay_cgroups_decode(root, f, msg, sizeof(msg)) == 0)
        return 0;
    return dfail(d, NULL, "%s", msg);
}
