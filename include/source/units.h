/* source/units.h: systemd unit files, read for the I/O and CPU scheduling they give.
 *
 * `iotriage audit` lists the units that set IOSchedulingClass=, IOSchedulingPriority=,
 * Nice= or CPUSchedulingPolicy=, the effective I/O priority that results, and where their
 * processes run. Nothing here talks to systemd: files are read, so a stopped system, an
 * image or a fixture tree is audited the same way. No function prints or exits.
 *
 * Parsing follows systemd 252 (systemd.syntax(7), systemd.unit(5), systemd.exec(5) and the
 * behaviour of src/core/load-fragment.c), quirks included:
 *  - '#' and ';' start a comment line, also in the middle of a continuation; a trailing
 *    unescaped backslash joins the next line (it becomes a space); whitespace around key
 *    and value is dropped; section names, key names and keyword values are case-sensitive
 *    ("Idle" is invalid). Only the unit type's own section counts ([Service], [Socket],
 *    [Mount] or [Swap]); a tracked key elsewhere is recorded as invalid ("ignored").
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
 *
 * Scanning (units_scan) walks, relative to a root directory fd, the system unit load path
 * in systemd's precedence: /etc/systemd/system, /run/systemd/system,
 * /usr/local/lib/systemd/system, /lib/systemd/system, /usr/lib/systemd/system. Every path
 * is resolved inside that root (an absolute symlink target restarts at the root, ".." never
 * climbs above it). Details are with units_scan below.
 */
#ifndef IOTRIAGE_SOURCE_UNITS_H
#define IOTRIAGE_SOURCE_UNITS_H

#include <stdbool.h>
#include <stddef.h>

#include "source/ioprio.h"

#define UNITS_FILE_MAX     (1u << 20)  /* bytes of one unit file or drop-in we read */
#define UNITS_NAMES_MAX    50000       /* directory entries considered across the unit dirs */
#define UNITS_DROPINS_MAX  64          /* drop-ins applied to one unit */
#define UNITS_INVALID_MAX  16          /* invalid assignments remembered per unit */
#define UNITS_PROBLEMS_MAX 256         /* problems remembered per scan */
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

/* ---- scanning ---------------------------------------------------------------------- */

struct unit_entry {
    char    *name;            /* the unit's name, e.g. "foo.service" */
    char   **aliases;         /* its other names (alias symlinks, other names of the same
                               * real file), sorted */
    unsigned naliases;
    struct unit_sched s;      /* after drop-ins; s.files[0] is the main file */
};

struct unit_masked {
    char *name;
    char *path;               /* the mask: a symlink to /dev/null or an empty file */
};

struct unit_problem {
    char       *path;
    unsigned    line;         /* 0 when not about a line */
    int         err;          /* -errno */
    const char *what;         /* static English text */
};

struct unit_list {
    struct unit_entry   *units;     /* sorted by name */
    size_t               nunits;
    struct unit_masked  *masked;    /* sorted by name */
    size_t               nmasked;
    struct unit_problem *problems;  /* in the order met */
    size_t               nproblems, nproblems_lost;
    unsigned             ndirs;     /* distinct unit directories found */
    size_t               nparsed;   /* unit files and drop-ins parsed */
    bool                 truncated; /* a count limit was hit: the lists may be incomplete */
};

/* Read every service, socket, mount and swap unit under root_fd (the filesystem root, or a
 * fixture tree) with its drop-ins, and return in out->units those that set one of the four
 * scheduling keys or hold an invalid value for one.
 *  - A name in a higher-precedence directory hides the same name lower down. /lib and
 *    /usr/lib being one directory (merged /usr) is noticed by inode and read once.
 *  - A symlink to /dev/null, or an empty file, masks the unit: listed in out->masked.
 *  - A symlink to a file in one of the unit directories under another name is an alias:
 *    the unit is listed once, under the target's name, with the alias among its names
 *    (chains of up to 8 aliases are followed). A symlink elsewhere (or to the same name in
 *    another unit directory) is a linked unit file: followed, inside the root. Two names
 *    reaching the same real file are one unit. A unit's main file is named as systemd
 *    names it (its "Fragment Path"): the symlink for a linked unit file, the target for a
 *    link to the same name in another unit directory.
 *  - Drop-ins: the .conf files of every NAME.d directory, for each of the unit's names,
 *    for the template of an instance, and for each dash prefix ("foo-bar-baz.service" also
 *    reads "foo-bar-.service.d" and "foo-.service.d"), from every unit directory. The same
 *    file name in several places: the higher-precedence directory, then the more specific
 *    name, wins; a drop-in that is a symlink to /dev/null (or empty) only hides the
 *    others. Applied in file-name order after the main file. Type-wide drop-ins
 *    (service.d/) are not read.
 *  - Bounded: files over UNITS_FILE_MAX, more than UNITS_NAMES_MAX entries or more than
 *    UNITS_DROPINS_MAX drop-ins are skipped and reported. Unreadable files and units that
 *    systemd would refuse to load are reported in out->problems; the scan goes on.
 * Returns 0; -EBADF for a bad root_fd; -ENOENT when no unit directory exists under the root
 * (with a reason in err). *out is always initialised: free it with units_list_free. */
int  units_scan(int root_fd, struct unit_list *out, char *err, size_t errlen);
void units_list_free(struct unit_list *l);

#endif
