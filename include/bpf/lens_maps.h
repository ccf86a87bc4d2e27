/* SPDX-License-Identifier: GPL-2.0-or-later */
/* lens_maps.h: the layout of the BPF lens's maps, shared by the BPF objects
 * (src/bpf/kern/waits.bpf.c, requests.bpf.c, requests_tables.bpf.c, writeback.bpf.c)
 * and their readers (src/source/lens*.c): one header per concern, all three here.
 *
 * Contract: only fixed-width __u* types, no pointers, explicit padding, so that the
 * BPF object (compiled with -target bpf) and the host compiler agree byte for byte.
 * Every counter is cumulative since the lens was loaded; readers take differences.
 * Times are CLOCK_MONOTONIC nanoseconds (bpf_ktime_get_ns). Device numbers are the
 * kernel's internal dev_t: major << 20 | minor.
 */
#ifndef IOTRIAGE_LENS_MAPS_H
#define IOTRIAGE_LENS_MAPS_H

#include "bpf/waits.h"
#include "bpf/requests.h"
#include "bpf/writeback.h"

#endif
