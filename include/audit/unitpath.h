/* SPDX-License-Identifier: GPL-2.0-or-later */
/* audit/unitpath.h: the systemd unit load path under a root directory: which files make
 * up each unit (main file, aliases, masks, templates, drop-ins), each parsed with
 * audit/unitfile.h. No function prints or exits; nothing talks to systemd.
 *
 * Scanning (units_scan) walks, relative to a root directory fd, the system unit load path
 * in systemd's precedence: /etc/systemd/system, /run/systemd/system,
 * /usr/local/lib/systemd/system, /lib/systemd/system, /usr/lib/systemd/system. Every path
 * is resolved inside that root (an absolute symlink target restarts at the root, ".." never
 * climbs above it). Details are with units_scan below.
 */
#ifndef IOTRIAGE_AUDIT_UNITPATH_H
#define IOTRIAGE_AUDIT_UNITPATH_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>

#include "audit/unitfile.h"

#define UNITS_NAMES_MAX    50000       /* directory entries considered across the unit dirs */
#define UNITS_PROBLEMS_MAX 256         /* problems remembered per scan */

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
    char       *setting;      /* NULL, or the line at fault as written ("Key=value"), for a
                               * unit systemd refuses to load */
    const char *why;          /* NULL, or static text: why that line is refused */
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

/* Resolve an absolute path (a unit's ExecStart= or WorkingDirectory=) inside root_fd, as
 * systemd would inside that image, with the scan's own resolver: every symlink followed,
 * an absolute target starting again at root_fd, ".." never climbing above it, at most 40
 * links. Nothing on the host outside root_fd is ever looked at. Leaves in rel the path
 * relative to root_fd ("" for the root itself) and in *st the stat of what it names, never
 * a symlink. Returns 0, or -errno: -EINVAL for a relative path, -ELOOP for too many links,
 * -ENAMETOOLONG, or what fstatat or readlinkat said of a component (-ENOENT...). */
int  units_resolve_in_root(int root_fd, const char *path, char rel[PATH_MAX], struct stat *st);

#endif
