/* SPDX-License-Identifier: GPL-2.0-or-later */
/* out/text_fs.h: the filesystems section of the batch text output (-b), issue #20.
 *
 * out_text_filesystems writes, for every filesystem of r->cur (docs/json.md
 * "filesystems" has the same figures): mount point, device and its disk's scheduler,
 * size, used, available, df's Use%, inodes used, the write rate into its device, the fill
 * rate, the time to full ("-" unless filling is steady: delta.h), and the bytes held by
 * deleted-but-open files; below a filesystem, one line per such file with its holders
 * (pid, command, fd, "append" or "no-append"). Nothing when the frame carries no
 * filesystems (a replay of an older recording). Untrusted bytes (paths, commands) go
 * through esc_display. Reads only; writes only to f.
 */
#ifndef IOTRIAGE_OUT_TEXT_FS_H
#define IOTRIAGE_OUT_TEXT_FS_H

#include <stdbool.h>
#include <stdio.h>

#include "delta.h"

void out_text_filesystems(FILE *f, const struct result *r, bool utf8);

#endif
