/* SPDX-License-Identifier: GPL-2.0-or-later */
/* store/state.h: the devices' quiet-time levels remembered from one run to the next.
 *
 * A live run learns each device's quiet-time await (delta.h, the `saturated` verdict)
 * only when it sees the device quiet; a run started in the middle of an incident sees no
 * quiet moment. So every run keeps what it learned in a small state file and the next
 * one starts from it (docs/devices.md "Remembered across runs").
 *
 * Where: $IOTRIAGE_STATE_FILE when set ("" turns remembering off); else, for root,
 * /var/lib/iotriage/baselines (the FHS state directory, beside the recorder's files);
 * for anyone else $XDG_STATE_HOME/iotriage/baselines, $XDG_STATE_HOME being
 * ~/.local/state when unset (XDG Base Directory).
 *
 * Which device: an entry holds the device's name, its major:minor and a stable identity
 * read from sysfs (state_device_ident): its wwid, else its serial, else a device-mapper
 * uuid, else a loop device's backing file. A level is used only for the device with the
 * same name, numbers and identity; a device that has none of these (zram, a loop device
 * without a file) is matched on its name and numbers alone.
 *
 * The file: text, one device a line,
 *     iotriage-baselines 1
 *     NAME MAJOR MINOR IDENT QUIET_AWAIT_MS SAVED_EPOCH_S
 * IDENT is "-" or KIND:HEX (wwid, serial, dmuuid, loop: the FNV-1a 64-bit hash of the
 * text, so that no path or serial needs quoting). At most STATE_FILE_MAX bytes and
 * STATE_ENTRIES_MAX lines; entries older than STATE_MAX_AGE_S are dropped.
 *
 * Contract
 * - state_parse() is pure and takes any bytes (no terminator needed): a file that is not
 *   exactly this format (a bad line, a field out of range, too big) is refused as a
 *   whole with one line in err. It never crashes.
 * - state_read() returns 0 with nothing for a missing file; -errno with one line in err
 *   for a file that cannot be read or does not parse (the caller ignores it). It does
 *   not follow a symbolic link, and reads only a regular file of at most STATE_FILE_MAX.
 * - state_write() writes a temporary file beside it and renames it over the old one, so
 *   a reader sees the old file or the new one, never half of one; it creates the file's
 *   directory (and, for the XDG path, its parents) when missing.
 */
#ifndef IOTRIAGE_STORE_STATE_H
#define IOTRIAGE_STORE_STATE_H

#include <stddef.h>

#include "source/diskstats.h"

#define STATE_FILE_MAX    65536
#define STATE_ENTRIES_MAX 256
#define STATE_MAX_AGE_S   (30.0 * 86400.0)
#define STATE_IDENT_MAX   32
#define STATE_SAVE_S      300.0      /* a live run writes it this often, and at exit */

struct state_entry {
    char     name[DS_NAME_MAX];
    unsigned major, minor;
    char     ident[STATE_IDENT_MAX];   /* "-" or KIND:HEX */
    double   quiet_await;              /* ms, > 0 */
    double   saved;                    /* epoch seconds */
};

/* The path to use, into buf; NULL when remembering is off ($IOTRIAGE_STATE_FILE="", or
 * no home directory to put it in). */
const char *state_default_path(char *buf, size_t len);

/* Pure: parse a state file's bytes into out[0..max). Returns the entries, or -EINVAL. */
int state_parse(const char *buf, size_t len, struct state_entry *out, size_t max,
                char *err, size_t errlen);

/* Read path into *out (malloc'd, *n entries). */
int state_read(const char *path, struct state_entry **out, size_t *n, char *err, size_t errlen);

/* Write v[0..n) to path (at most STATE_ENTRIES_MAX: the first ones). 0 or -errno. */
int state_write(const char *path, const struct state_entry *v, size_t n, char *err, size_t errlen);

/* The stable identity of block device `name` under the sysfs root sys_root (NULL: /sys),
 * into out ("-" when it has none). */
void state_device_ident(const char *sys_root, const char *name, char out[STATE_IDENT_MAX]);

#endif
