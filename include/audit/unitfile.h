/* SPDX-License-Identifier: GPL-2.0-or-later */
/* audit/unitfile.h: the systemd unit-file parser: the text of a unit file and its
 * drop-ins -> the I/O and CPU scheduling settings they give (and the paths they name).
 *
 * Pure: text in, settings out; no file is opened, nothing prints or exits. The load path
 * (which files make up a unit) is audit/unitpath.h. `iotriage audit` lists the units that
 * set IOSchedulingClass=, IOSchedulingPriority=, Nice= or CPUSchedulingPolicy=, the
 * effective I/O priority that results, and where their processes run; nothing talks to
 * systemd, so a stopped system, an image or a fixture tree is audited the same way.
 *
 * Parsing follows systemd 252 (systemd.syntax(7), systemd.unit(5), systemd.exec(5) and the
 * behaviour of src/core/load-fragment.c), quirks included:
 *  - '#' and ';' start a comment line, also in the middle of a continuation; a trailing
 *    unescaped backslash joins the next line (it becomes a space); whitespace around key
 *    and value is dropped; section names, key names and keyword values are case-sensitive
 *    ("Idle" is invalid). Only the unit type's own section counts ([Service], [Socket],
 *    [Mount] or [Swap]); a tracked key elsewhere, or written in another case ("nice="),
 *    is recorded as invalid ("ignored"), except in an X- section, which systemd skips
 *    without a word.
 *  - IOSchedulingClass= and IOSchedulingPriority= edit ONE value, like systemd's
 *    ExecContext.ioprio: it starts as best-effort/4, a class keeps the level, a level keeps
 *    the class, class "none" (or 0) turns the value back into best-effort/4, and an empty
 *    assignment to EITHER key unsets both. So Priority=2 alone gives be/2, Class=idle alone
 *    idle/4 (the kernel stores level 4; schedulers ignore an idle task's level) and
 *    Class=realtime alone rt/4. systemd <= 249 started from level 0 and did not normalize
 *    "none"; we model 250 and later (Debian 12 ships 252).
 *  - A value systemd rejects is recorded (key, text, file, line, why) and not applied: the
 *    earlier value stays, as in systemd. Some errors make systemd refuse the whole unit
 *    (load state "error" or "bad-setting"): a section header without ']', a logical line
 *    over 1 MiB, an invalid WorkingDirectory= or RootDirectory=, an invalid ExecStart= path
 *    without the '-' prefix. Parsing of that file stops there, load_error says so, and units_parse()
 *    returns it.
 *  - Specifiers (%h, %i, ...) are not expanded: a path holding '%' is kept as written.
 *  - Lines are reported by the line where the assignment starts (systemd's own messages
 *    name the last line of a continued assignment).
 *  - Checked against systemd 252 itself (its `systemd --test` dump of the parsed units and
 *    its warnings): tests/integration/test_units_systemd.sh.
 */
#ifndef IOTRIAGE_AUDIT_UNITFILE_H
#define IOTRIAGE_AUDIT_UNITFILE_H

#include <stdbool.h>
#include <stddef.h>

#include "source/ioprio.h"

#define UNITS_FILE_MAX     (1u << 20)  /* bytes of one unit file or drop-in we read */
#define UNITS_DROPINS_MAX  64          /* drop-ins applied to one unit */
#define UNITS_INVALID_MAX  16          /* invalid assignments remembered per unit */
#define UNITS_TEXT_MAX     96          /* bytes kept of an invalid value */

/* The unit types whose files carry exec settings. UNIT_ANY accepts all four sections
 * (for callers that parse text with no unit name). */
enum unit_type { UNIT_ANY = 0, UNIT_SERVICE, UNIT_SOCKET, UNIT_MOUNT, UNIT_SWAP };

/* The settings tracked; index of unit_sched.where[]. The first four are "scheduling". */
enum unit_key {
    UK_IOCLASS, UK_IOPRIO, UK_NICE, UK_POLICY, UK_WORKDIR, UK_ROOTDIR, UK_EXEC, UK_NKEYS
};

/* Where a setting got its current value: files[file] of the unit_sched, 1-based line.
 * file is -1 when the setting is unset (or no file name was given, see units_set_file). */
struct unit_where {
    int      file;
    unsigned line;
};

struct unit_invalid {
    char        key[32];               /* as written; "" when the line is no assignment */
    char        text[UNITS_TEXT_MAX];  /* the value (or the whole line), truncated */
    const char *why;                   /* static English text */
    struct unit_where at;
    bool        fatal;                 /* systemd refuses to load the unit because of it */
    bool        sched;                 /* about one of the four scheduling keys */
};

struct unit_sched {
    enum unit_type type;
    /* I/O priority: what the file said, and the value systemd hands to ioprio_set(). */
    bool     ioclass_set, iolevel_set;
    enum ioprio_class ioclass;         /* as written (IOC_NONE for "none" or 0) */
    int      iolevel;                  /* as written, 0..7 */
    int      ioprio;                   /* IOPRIO_MAKE(class, level), used when either is set */
    bool     nice_set;
    int      nice;                     /* -20..19 */
    bool     policy_set;
    int      policy;                   /* SCHED_OTHER, _BATCH, _IDLE, _FIFO or _RR */
    char    *workdir;                  /* NULL unset; "~" the user's home; else absolute */
    bool     workdir_missing_ok;       /* written with the '-' prefix */
    char    *rootdir;                  /* NULL unset */
    char    *exec;                     /* main binary: first ExecStart= command since the
                                        * last reset, prefixes and quotes removed */
    char     exec_prefix[8];           /* the prefixes it had, e.g. "-@" or "!!" */
    unsigned nexec;                    /* commands in the ExecStart= list */
    bool     exec_stop;                /* ExecStop= holds a command (not checked further) */
    bool     success_action;           /* SuccessAction= set, and not "none" */
    struct unit_where where[UK_NKEYS];
    char   **files;                    /* paths given to units_set_file, in order */
    unsigned nfiles;
    int      cur_file;                 /* index the next units_parse records, or -1 */
    struct unit_invalid *invalid;
    unsigned ninvalid, ninvalid_lost;  /* kept, and dropped past UNITS_INVALID_MAX */
    int      load_error;               /* 0, or -errno: systemd would not load the unit (the
                                        * values above are what came before the error) */
    struct unit_where load_error_at;
};

void units_sched_init(struct unit_sched *u, enum unit_type type);
void units_sched_free(struct unit_sched *u);

/* Name the file whose text the next units_parse() calls apply (kept in u->files). Returns
 * its index or -E2BIG past 1 + UNITS_DROPINS_MAX files. */
int units_set_file(struct unit_sched *u, const char *path);

/* Pure: apply one file's text (main file, then each drop-in in order) to *u. Invalid
 * values are recorded in u->invalid and skipped. Returns 0, -EINVAL for bad arguments, or
 * the -errno of an error that makes systemd refuse the unit (-EBADMSG: bad section header;
 * -ENOEXEC: bad setting; -ENOBUFS: line too long), also stored in u->load_error. A unit
 * with load_error set is left alone: later calls return it again without parsing. */
int units_parse(const char *buf, size_t len, struct unit_sched *u);

/* After the main file and every drop-in: the checks systemd makes of the whole unit
 * (service_verify()). A service with no ExecStart=, ExecStop= or SuccessAction= is refused:
 * load_error becomes -ENOEXEC, with a fatal invalid entry at line 0 of the main file.
 * (Not modelled: several ExecStart= outside Type=oneshot, Restart= with oneshot.) Returns
 * load_error. */
int units_finish(struct unit_sched *u);

/* true when one of the four scheduling keys is set */
bool units_sets_sched(const struct unit_sched *u);

/* The I/O priority the unit's processes get, by the kernel's rule (ioprio_effective): the
 * value systemd passes to ioprio_set() when IOSchedulingClass/Priority is set, otherwise
 * derived from Nice= and CPUSchedulingPolicy= (unset: nice 0 and SCHED_OTHER, inherited
 * from PID 1). */
struct ioprio_eff units_effective(const struct unit_sched *u);

/* The type of a unit name from its suffix, or -EINVAL for other types and non-names. */
int units_type_of(const char *name);

const char *units_key_name(enum unit_key k);   /* "IOSchedulingClass", ... */
const char *units_policy_name(int policy);     /* "other" "batch" "idle" "fifo" "rr" */
/* The file that set key k, or NULL when unset or unnamed. */
const char *units_where_file(const struct unit_sched *u, enum unit_key k);

#endif
