/* SPDX-License-Identifier: GPL-2.0-or-later */
/* bpfcast.c: the light skeletons that read through untrusted pointers (source/bpfload.h).
 * Built with -isystem $(BUILD)/bpf/cast, where mk/bpf.mk puts them under the plain ones'
 * names: this file alone includes them, so that each type is defined once a file. */
#include "source/bpfload.h"

#include <errno.h>

#include "bpf/lens_maps.h"            /* the value types, before the lens's skeleton */
#include "tasks.lskel.h"
#include "files.lskel.h"
#include "iotriage.lskel.h"

struct tasks_lskel *bpfload_tasks_cast_open(void)
{
    return tasks_lskel__open();
}

int bpfload_tasks_cast_load(struct tasks_lskel *s)
{
    return tasks_lskel__load(s);
}

struct files_lskel *bpfload_files_cast_open(void)
{
    return files_lskel__open();
}

int bpfload_files_cast_load(struct files_lskel *s)
{
    return files_lskel__load(s);
}

struct iotriage_lskel *bpfload_lens_cast_open(void)
{
    return iotriage_lskel__open();
}

int bpfload_lens_cast_load(struct iotriage_lskel *s)
{
    return iotriage_lskel__load(s);
}
