/* SPDX-License-Identifier: GPL-2.0-or-later */
/* tui/dialog_fsfix.c: the dialogs of the space held by a deleted-but-open file (Enter
 * on a holder in the filesystems view), which drive act/fsfix.c and act/fsjob.c: the
 * action, the signal, the truncate with an optional copy first, the wait and the
 * result. */
#define _XOPEN_SOURCE_EXTENDED 1
#include <curses.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>

#include "util/fmt.h"
#include "util.h"
#include "tui/dialog.h"

/* ---- space held by a deleted-but-open file ---- */

#define FS_SIGNAL_WAIT_S 3.0         /* how long the holder is watched after the signal */

static const struct { int sig; const char *what; } fs_signals[] = {
    { SIGHUP,  "the usual signal to reload and reopen log files" },
    { SIGUSR1, "nginx reopens its logs on it; Apache httpd restarts gracefully" },
    { SIGUSR2, "a program's own meaning (dnsmasq reopens its log on it)" },
    { SIGTERM, "asks it to exit: the file is let go when it has" },
};
#define FS_NSIGNALS ((unsigned)ARRAY_SIZE(fs_signals))

static const char *sig_name(char buf[24], int sig)
{
    if (sig >= SIGRTMIN && sig <= SIGRTMAX)
        snprintf(buf, 24, sig == SIGRTMIN ? "SIGRTMIN" : "SIGRTMIN+%d", sig - SIGRTMIN);
    else
        snprintf(buf, 24, "SIG%s", sigabbrev_np(sig) ? sigabbrev_np(sig) : "?");
    return buf;
}

static const char *size_text(char buf[16], uint64_t v)
{
    fmt_size(buf, 16, (double)v);
    return buf;
}

/* "bash[123]" of the target, and "bash[123] fd 3" */
static const char *proc_text(char *buf, size_t n, const struct actions *a)
{
    char name[96];
    snprintf(buf, n, "%s[%d]", safe(name, sizeof(name), a->fs_comm[0] ? a->fs_comm : "?", a->vw), (int)a->fst.pid);
    return buf;
}

static const char *holder_text(char *buf, size_t n, const struct actions *a)
{
    char p[112];
    snprintf(buf, n, "%s fd %d", proc_text(p, sizeof(p), a), a->fst.fd);
    return buf;
}

static const char *append_text(int append, int writes)
{
    if (writes == 0)
        return "only reads it";
    return append == 1 ? "appends (O_APPEND)" : append == 0 ? "does not append (no O_APPEND)" : "append unknown";
}

void actions_fs(struct actions *a, size_t fsi, size_t file, size_t holder)
{
    const char *no = refusal(a);
    if (no) {
        say(a, "%s", no);
        return;
    }
    if (fsi >= a->r->nfss || file >= a->r->fss[fsi].fs->ndel || holder >= a->r->fss[fsi].fs->del[file].nholders) {
        say(a, "select a holder of a deleted file (Down below its filesystem), then Enter");
        return;
    }
    const struct fs_sample *fs = a->r->fss[fsi].fs;
    const struct fs_deleted_file *d = &fs->del[file];
    const struct fs_holder *h = &d->holders[holder];
    str_copy(a->fs_mount, fs->fs.m.mount, sizeof(a->fs_mount));
    str_copy(a->fs_dev, fs->dev_idx >= 0 ? a->r->cur->devs[fs->dev_idx].ds.name : fs->fs.m.fstype, sizeof(a->fs_dev));
    str_copy(a->fs_path, d->path ? d->path : "?", sizeof(a->fs_path));
    str_copy(a->fs_comm, h->comm, sizeof(a->fs_comm));
    a->fst = (struct fsfix_target){ .pid = h->pid, .fd = h->fd, .dev = d->dev, .ino = d->ino,
                                    .start_ticks = h->start_ticks, .mount = a->fs_mount };
    a->fs_size = d->size;
    a->fs_blocks = d->blocks_bytes;
    a->fs_space_known = fs->fs.statfs_err == 0;
    a->fs_avail = fs->fs.avail;
    a->fs_append = h->flags_known ? h->append : -1;
    a->fs_writes = h->flags_known ? (h->flags & O_ACCMODE) != O_RDONLY : -1;
    a->fs_nothers = a->fs_noappend = 0;
    for (size_t j = 0; j < d->nholders; j++) {
        const struct fs_holder *o = &d->holders[j];
        a->fs_noappend += o->flags_known && !o->append && (o->flags & O_ACCMODE) != O_RDONLY;
        if (j == holder)
            continue;
        if (a->fs_nothers < ARRAY_SIZE(a->fs_others)) {
            char name[64];
            snprintf(a->fs_others[a->fs_nothers], sizeof(a->fs_others[0]), "%.40s[%d] fd %d, %s",
                     safe(name, sizeof(name), o->comm[0] ? o->comm : "?", a->vw), (int)o->pid, o->fd,
                     fs_holder_mode(o));
        }
        a->fs_nothers++;
    }
    a->fs_copy[0] = '\0';
    a->fs_sig = SIGHUP;
    char path[DLG_LINE_MAX], ht[128];
    dlg_open(a, DLG_FS_MENU, "A deleted file still open: give its space back?");
    struct dialog *g = &a->vw->dlg;
    char sz[16], bl[16];
    dlg_line(g, "file: %s", safe(path, sizeof(path), a->fs_path, a->vw));
    char dev[96];
    dlg_line(g, "on:   %s (%s)", safe(ht, sizeof(ht), a->fs_mount, a->vw), safe(dev, sizeof(dev), a->fs_dev, a->vw));
    dlg_line(g, "size %s, %s allocated; held by %s, which %s%s", size_text(sz, a->fs_size),
             size_text(bl, a->fs_blocks), holder_text(ht, sizeof(ht), a), append_text(a->fs_append, a->fs_writes),
             a->fs_nothers ? "" : " (the only holder)");
    for (unsigned k = 0; k < a->fs_nothers && k < ARRAY_SIZE(a->fs_others); k++)
        dlg_line(g, "also held by %s", a->fs_others[k]);
    if (a->fs_nothers > ARRAY_SIZE(a->fs_others))
        dlg_line(g, "... and %u more holders", a->fs_nothers - (unsigned)ARRAY_SIZE(a->fs_others));
    dlg_line(g, "%s", "");
    g->first_item = g->nlines;
    dlg_line(g, "signal    ask %s to reopen its log (SIGHUP, or another signal)", proc_text(ht, sizeof(ht), a));
    dlg_line(g, "truncate  empty the file through its descriptor: the space comes back at once");
    g->nitems = 2;
    dlg_keys(g, "Up/Down choose   Enter review   s signal   t truncate   Esc cancel");
}

/* What sending sig does to the holder, as a dialog line. */
static void sig_effect(struct actions *a, int sig)
{
    struct dialog *g = &a->vw->dlg;
    bool blocked;
    char sn[24], ht[128];
    enum fsfix_disp d = fsfix_sig_disposition(a->proc_root, a->fst.pid, sig, &blocked);
    proc_text(ht, sizeof(ht), a);
    sig_name(sn, sig);
    if (sig == SIGKILL || sig == SIGSTOP)
        dlg_line(g, "%s cannot be caught: it %s.", sn, fsfix_sig_default(sig));
    else if (d == FSD_CAUGHT)
        dlg_line(g, "%s has a handler for %s (as a program that reopens its log on it has)%s.", ht, sn,
                 blocked ? ", but blocks it now: it runs when unblocked" : "");
    else if (d == FSD_IGNORED)
        dlg_line(g, "%s ignores %s: sending it does nothing.", ht, sn);
    else if (d == FSD_DEFAULT)
        dlg_line(g, "%s%s has no handler for %s: without one the kernel %s.",
                 strncmp(fsfix_sig_default(sig), "terminates", 10) == 0 || strcmp(fsfix_sig_default(sig), "stops it") == 0
                     ? "WARNING: " : "", ht, sn, fsfix_sig_default(sig));
    else
        dlg_line(g, "How %s handles %s is unknown (its status is not readable).", ht, sn);
}

static void fs_signal_menu(struct actions *a, unsigned sel)
{
    char title[200], ht[128];
    snprintf(title, sizeof(title), "Which signal for %s?", proc_text(ht, sizeof(ht), a));
    dlg_open(a, DLG_FS_SIGNAL_MENU, title);
    struct dialog *g = &a->vw->dlg;
    g->first_item = 0;
    for (unsigned i = 0; i < FS_NSIGNALS; i++) {
        char sn[24];
        dlg_line(g, "%-9s %s", sig_name(sn, fs_signals[i].sig), fs_signals[i].what);
    }
    dlg_line(g, "%-9s type a signal's name or number", "other");
    g->nitems = FS_NSIGNALS + 1;
    g->sel = sel < g->nitems ? sel : 0;
    dlg_line(g, "%s", "");
    if (g->sel < FS_NSIGNALS)
        sig_effect(a, fs_signals[g->sel].sig);
    dlg_keys(g, "Up/Down choose   Enter review   Esc cancel");
}

static void fs_signal_type(struct actions *a)
{
    char ht[128];
    char title[200];
    snprintf(title, sizeof(title), "Which signal for %s? Type its name or number", proc_text(ht, sizeof(ht), a));
    dlg_open(a, DLG_FS_SIGNAL_TYPE, title);
    struct dialog *g = &a->vw->dlg;
    char in[DLG_LINE_MAX];
    dlg_line(g, "signal: %s_", safe(in, sizeof(in), a->fs_input, a->vw));
    dlg_line(g, "%s", "");
    dlg_line(g, "e.g. HUP, USR1, SIGUSR2, 10, RTMIN+1");
    if (a->fs_error[0])
        dlg_line(g, "%s", a->fs_error);
    dlg_keys(g, "Enter review   Backspace ^U edit   Esc back");
}

static void fs_signal_confirm(struct actions *a)
{
    char title[DLG_LINE_MAX], sn[24], ht[128], path[DLG_LINE_MAX], mnt[128], bl[16];
    sig_name(sn, a->fs_sig);
    snprintf(title, sizeof(title), "Send %s to %s?", sn, proc_text(ht, sizeof(ht), a));
    dlg_open(a, DLG_FS_SIGNAL_CONFIRM, title);
    struct dialog *g = &a->vw->dlg;
    dlg_line(g, "It holds %s (no name left): %s allocated on %s.", safe(path, sizeof(path), a->fs_path, a->vw),
             size_text(bl, a->fs_blocks), safe(mnt, sizeof(mnt), a->fs_mount, a->vw));
    sig_effect(a, a->fs_sig);
    dlg_line(g, "%s", "");
    dlg_line(g, "iotriage then watches its fd %d for %.0f s: when it lets go (reopens or exits), the", a->fst.fd,
             FS_SIGNAL_WAIT_S);
    dlg_line(g, "space comes back, %s.", a->fs_nothers ? "but only once every other holder lets go too" : "as it is the only holder");
    for (unsigned k = 0; k < a->fs_nothers && k < ARRAY_SIZE(a->fs_others); k++)
        dlg_line(g, "  also held by %s", a->fs_others[k]);
    if (a->fs_nothers)
        dlg_line(g, "(a child that inherited the descriptor holds the file until it closes it or exits)");
    char keys[96];
    snprintf(keys, sizeof(keys), "y send %s   n/Esc cancel", sn);
    dlg_keys(g, keys);
}

static void fs_truncate_confirm(struct actions *a)
{
    char title[200], ht[128], path[DLG_LINE_MAX], mnt[128], sz[16], bl[16], av[16];
    snprintf(title, sizeof(title), "Truncate the deleted file to 0 bytes through %s?", holder_text(ht, sizeof(ht), a));
    dlg_open(a, DLG_FS_TRUNCATE_CONFIRM, title);
    struct dialog *g = &a->vw->dlg;
    dlg_line(g, "file: %s", safe(path, sizeof(path), a->fs_path, a->vw));
    safe(mnt, sizeof(mnt), a->fs_mount, a->vw);
    dlg_line(g, "Its contents are lost: %s (%s allocated on %s%s%s%s). Nothing brings them back.",
             size_text(sz, a->fs_size), size_text(bl, a->fs_blocks), mnt, a->fs_space_known ? ", which has " : "",
             a->fs_space_known ? size_text(av, a->fs_avail) : "", a->fs_space_known ? " available" : "");
    if (a->fs_copy[0]) {
        char cp[DLG_LINE_MAX];
        dlg_line(g, "It is copied first to %s (%s); a copy that fails truncates nothing.",
                 safe(cp, sizeof(cp), a->fs_copy, a->vw), sz);
    } else {
        dlg_line(g, "c copies it first to a path you type (on another filesystem).");
    }
    dlg_line(g, "%s", "");
    if (a->fs_writes == 0) {
        dlg_line(g, "%s only reads the file: after the truncate its reads find nothing more.", ht);
    } else if (a->fs_append == 0) {
        dlg_line(g, "WARNING: %s does not append (no O_APPEND): it writes on at its old offset, so the", ht);
        dlg_line(g, "file becomes sparse at its old size (%s): the space comes back, the size does not.", sz);
    } else if (a->fs_append == 1) {
        dlg_line(g, "%s appends (O_APPEND): its next write lands at the new end, from 0.", ht);
    } else {
        dlg_line(g, "Whether %s appends is unknown: without O_APPEND the file turns sparse at its old size.", ht);
    }
    if (a->fs_nothers && a->fs_noappend && !(a->fs_append == 0 && a->fs_writes != 0))
        dlg_line(g, "WARNING: %u other writer%s without O_APPEND (below): the file turns sparse at its old size when %s "
                 "writes.", a->fs_noappend, a->fs_noappend == 1 ? "" : "s", a->fs_noappend == 1 ? "it" : "one");
    for (unsigned k = 0; k < a->fs_nothers && k < ARRAY_SIZE(a->fs_others); k++)
        dlg_line(g, "  also held by %s", a->fs_others[k]);
    dlg_keys(g, a->fs_copy[0] ? "y copy, then truncate   c change the copy path   n/Esc cancel"
                              : "y truncate   c copy first   n/Esc cancel");
}

static void fs_copy_prompt(struct actions *a)
{
    dlg_open(a, DLG_FS_COPY_PATH, "Copy the file first: to which path?");
    struct dialog *g = &a->vw->dlg;
    char in[DLG_LINE_MAX], sz[16];
    dlg_line(g, "copy to: %s_", safe(in, sizeof(in), a->fs_input, a->vw));
    dlg_line(g, "%s", "");
    dlg_line(g, "An absolute path to a new file (never overwritten) on another filesystem with room for");
    dlg_line(g, "%s: a copy on the same one would take back the space the truncate gives.", size_text(sz, a->fs_size));
    if (a->fs_error[0])
        dlg_line(g, "%s", a->fs_error);
    dlg_keys(g, "Enter accept   Backspace ^U edit   Esc back (no copy)");
}

/* Is path a place the copy may go? Else why not, in a->fs_error. */
static bool fs_copy_ok(struct actions *a, const char *path)
{
    char *e = a->fs_error, sz[16], av[16];
    size_t n = sizeof(a->fs_error);
    struct stat st;
    if (path[0] != '/') {
        snprintf(e, n, "refused: give an absolute path (from /)");
        return false;
    }
    if (lstat(path, &st) == 0) {
        snprintf(e, n, "refused: %.200s exists: iotriage never overwrites a file", path);
        return false;
    }
    if (errno != ENOENT) {
        snprintf(e, n, "refused: %.200s: %s", path, strerror(errno));
        return false;
    }
    if (path[strlen(path) - 1] == '/') {
        snprintf(e, n, "refused: %.200s names a directory: add a file name", path);
        return false;
    }
    char dir[sizeof(a->fs_input)];
    str_copy(dir, path, sizeof(dir));
    char *slash = strrchr(dir, '/');
    slash[slash == dir ? 1 : 0] = '\0';
    if (stat(dir, &st) != 0) {
        snprintf(e, n, "refused: the directory %.200s: %s", dir, strerror(errno));
        return false;
    }
    if (!S_ISDIR(st.st_mode)) {
        snprintf(e, n, "refused: %.200s is not a directory", dir);
        return false;
    }
    if (st.st_dev == a->fst.dev) {
        snprintf(e, n, "refused: %.160s is on the same filesystem as the file (%.40s): the copy would take the space back",
                 dir, a->fs_mount);
        return false;
    }
    struct statvfs sv;
    if (statvfs(dir, &sv) == 0) {
        uint64_t avail = (uint64_t)sv.f_bavail * (sv.f_frsize ? sv.f_frsize : sv.f_bsize);
        if (avail < a->fs_size) {
            snprintf(e, n, "refused: %.200s has %s available, the copy needs %s", dir, size_text(av, avail),
                     size_text(sz, a->fs_size));
            return false;
        }
    }
    e[0] = '\0';
    return true;
}

/* The dialog while the child works. */
static void fs_wait_dialog(struct actions *a)
{
    dlg_open(a, DLG_FS_WAIT, a->fs_job_what);
    struct dialog *g = &a->vw->dlg;
    dlg_line(g, "For %.1f s. It runs in process %d, not in iotriage: the screen goes on, and q quits", 
             clock_mono() - a->fs_job.child.started, (int)a->fs_job.child.pid);
    dlg_line(g, "without waiting (that process then finishes what was confirmed alone).");
    dlg_keys(g, "q quit   Esc hide (the result opens when it is done)");
}

static void fs_do(struct actions *a, enum fsfix_kind kind)
{
    char ht[128], pt[128], sn[24], cp[DLG_LINE_MAX];
    holder_text(ht, sizeof(ht), a);
    proc_text(pt, sizeof(pt), a);
    if (kind == FSFIX_SIGNAL)
        snprintf(a->fs_job_what, sizeof(a->fs_job_what), "Sent %s to %.100s: waiting up to %.0f s for it to let go",
                 sig_name(sn, a->fs_sig), pt, FS_SIGNAL_WAIT_S);
    else if (a->fs_copy[0])
        snprintf(a->fs_job_what, sizeof(a->fs_job_what), "Copying the file to %.100s, then truncating it",
                 safe(cp, sizeof(cp), a->fs_copy, a->vw));
    else
        snprintf(a->fs_job_what, sizeof(a->fs_job_what), "Truncating the file through %s", ht);
    int rc = fsfix_start(&a->fs_job, kind, a->proc_root, &a->fst, a->fs_sig, FS_SIGNAL_WAIT_S,
                         a->fs_copy[0] ? a->fs_copy : NULL);
    if (rc < 0) {
        char msg[200];
        snprintf(msg, sizeof(msg), "could not start the process that acts: %s; nothing done", strerror(-rc));
        result_dialog(a, kind == FSFIX_SIGNAL ? "Signal not sent" : "Nothing truncated", msg, false);
        dlg_keys(&a->vw->dlg, "any key: close");
        return;
    }
    fs_wait_dialog(a);
    /* A quick action shows its result at once; the wait is poll(2), never the work. */
    struct pollfd p = { .fd = a->fs_job.child.fd, .events = POLLIN };
    if (poll(&p, 1, kind == FSFIX_SIGNAL ? 400 : 200) > 0)
        actions_poll(a);
}

/* The action is over: what it did, the space before and after, the file afterwards. */
static void fs_finish(struct actions *a, const struct fsfix_outcome *o)
{
    bool signal = a->fs_job.kind == FSFIX_SIGNAL;
    const char *title = o->err ? (signal ? "Signal failed" : "Truncate failed")
                        : signal ? (o->released ? "Signal sent: the file was let go" : "Signal sent: the file is still held")
                                 : "Truncated";
    bool show = a->vw->dlg.kind == DLG_NONE || a->vw->dlg.kind == DLG_FS_WAIT;
    if (!show) {
        say(a, "%s: %s", title, o->msg);
        return;
    }
    result_dialog(a, title, o->msg, o->err == 0);
    struct dialog *g = &a->vw->dlg;
    char b1[16], b2[16], b3[16], b4[16], mnt[128], ht[128];
    safe(mnt, sizeof(mnt), a->fs_mount, a->vw);
    holder_text(ht, sizeof(ht), a);
    if (!o->err) {
        dlg_line(g, "%s", "");
        if (o->space_known)
            dlg_line(g, "Available on %s: %s before, %s after: %s%s came back", mnt, size_text(b1, o->avail_before),
                     size_text(b2, o->avail_after), o->freed < 0 ? "-" : "",
                     size_text(b3, (uint64_t)(o->freed < 0 ? -o->freed : o->freed)));
        else
            dlg_line(g, "The space available on %s could not be measured.", mnt);
        if (o->after_known)
            dlg_line(g, "The file: %s allocated before, %s after; size %s before, %s after", size_text(b1, o->blocks_before),
                     size_text(b2, o->blocks_after), size_text(b3, o->size_before), size_text(b4, o->size_after));
        else if (signal && o->released)
            dlg_line(g, "%s no longer holds the file (it had %s allocated).", ht, size_text(b1, o->blocks_before));
        if (!signal && o->append == 0 && o->writes != 0)
            dlg_line(g, "WARNING: it does not append: it writes on at offset %s, the file stays sparse at that size.",
                     size_text(b1, o->size_before));
        if (signal && o->released && a->fs_nothers)
            dlg_line(g, "The space comes back only when the other holders let go too (they held it when the dialog opened):");
        for (unsigned k = 0; signal && o->released && k < a->fs_nothers && k < ARRAY_SIZE(a->fs_others); k++)
            dlg_line(g, "  %s", a->fs_others[k]);
        if (a->fs_copy[0] && !signal) {
            char cp[DLG_LINE_MAX];
            dlg_line(g, "The copy: %s, %s.", safe(cp, sizeof(cp), a->fs_copy, a->vw), size_text(b1, o->copied));
        }
        dlg_line(g, "%s", "");
        dlg_line(g, "The filesystems view shows the figures of the next refresh.");
    }
    dlg_keys(g, "any key: close");
}

/* A line typed in a dialog: true when ch was an editing key. */
static bool fs_edit(struct actions *a, int ch)
{
    size_t l = strlen(a->fs_input);
    if (ch == 21) {                  /* ^U */
        a->fs_input[0] = '\0';
    } else if (ch == KEY_BACKSPACE || ch == 127 || ch == 8) {
        if (l)
            a->fs_input[l - 1] = '\0';
    } else if (ch >= 32 && ch < 127) {
        if (l + 1 < sizeof(a->fs_input)) {
            a->fs_input[l] = (char)ch;
            a->fs_input[l + 1] = '\0';
        }
    } else {
        return false;
    }
    a->fs_error[0] = '\0';
    return true;
}

int fs_key(struct actions *a, int ch)
{
    struct dialog *g = &a->vw->dlg;
    switch (g->kind) {
    case DLG_FS_MENU:
        if (ch == 27 || ch == 'q' || ch == 'n') {
            dlg_close(a);
            say(a, "nothing changed");
        } else if (ch == 's' || (is_enter(ch) && g->sel == 0)) {
            fs_signal_menu(a, 0);
        } else if (ch == 't' || (is_enter(ch) && g->sel == 1)) {
            fs_truncate_confirm(a);
        } else {
            menu_move(g, ch);
        }
        return 0;
    case DLG_FS_SIGNAL_MENU:
        if (ch == 27 || ch == 'q' || ch == 'n') {
            dlg_close(a);
            say(a, "nothing changed");
        } else if (is_enter(ch) && g->sel < FS_NSIGNALS) {
            a->fs_sig = fs_signals[g->sel].sig;
            fs_signal_confirm(a);
        } else if (is_enter(ch)) {
            a->fs_input[0] = a->fs_error[0] = '\0';
            fs_signal_type(a);
        } else {
            menu_move(g, ch);
            fs_signal_menu(a, g->sel);
        }
        return 0;
    case DLG_FS_SIGNAL_TYPE:
        if (ch == 27) {
            fs_signal_menu(a, FS_NSIGNALS);
        } else if (is_enter(ch)) {
            int sig = fsfix_sig_parse(a->fs_input);
            if (sig > 0) {
                a->fs_sig = sig;
                fs_signal_confirm(a);
                return 0;
            }
            snprintf(a->fs_error, sizeof(a->fs_error), "refused: no signal is called '%.60s'", a->fs_input);
            fs_signal_type(a);
        } else if (fs_edit(a, ch)) {
            fs_signal_type(a);
        }
        return 0;
    case DLG_FS_SIGNAL_CONFIRM:
    case DLG_FS_TRUNCATE_CONFIRM:
        if (is_cancel(ch)) {
            dlg_close(a);
            say(a, "nothing changed: %s still holds the file", a->fs_comm[0] ? a->fs_comm : "its holder");
        } else if (ch == 'c' && g->kind == DLG_FS_TRUNCATE_CONFIRM) {
            str_copy(a->fs_input, a->fs_copy, sizeof(a->fs_input));
            a->fs_error[0] = '\0';
            fs_copy_prompt(a);
        } else if ((ch == 'y' || ch == 'Y') && confirm_ok(a)) {
            fs_do(a, g->kind == DLG_FS_SIGNAL_CONFIRM ? FSFIX_SIGNAL : FSFIX_TRUNCATE);
        }
        return 0;
    case DLG_FS_COPY_PATH:
        if (ch == 27) {
            a->fs_copy[0] = '\0';
            fs_truncate_confirm(a);
        } else if (is_enter(ch)) {
            if (!a->fs_input[0]) {
                a->fs_copy[0] = '\0';
                fs_truncate_confirm(a);
            } else if (fs_copy_ok(a, a->fs_input)) {
                str_copy(a->fs_copy, a->fs_input, sizeof(a->fs_copy));
                fs_truncate_confirm(a);
            } else {
                fs_copy_prompt(a);
            }
        } else if (fs_edit(a, ch)) {
            fs_copy_prompt(a);
        }
        return 0;
    case DLG_FS_WAIT:
        if (ch == 'q' || ch == 'Q')
            return actions_quit(a) ? 1 : 0;
        if (ch == 27) {
            dlg_close(a);
            say(a, "%s goes on: its result opens when it is done", a->fs_job.kind == FSFIX_SIGNAL ? "the signal" : "the truncate");
        }
        return 0;
    default:
        return 0;
    }
}

bool fs_poll(struct actions *a)
{
    struct fsfix_outcome o;
    if (fsfix_collect(&a->fs_job, &o) == 0) {
        if (a->vw->dlg.kind != DLG_FS_WAIT)
            return false;
        fs_wait_dialog(a);           /* the seconds, afresh */
        return true;
    }
    fs_finish(a, &o);
    return true;
}
