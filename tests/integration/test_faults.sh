#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Faults injected under the real binary (tests/fault/fault.c, LD_PRELOAD; issue #18):
# EIO, EACCES, EINTR and short reads on /proc and /sys, netlink errors. Each case checks
# that iotriage keeps running (exit 0, every sample printed, valid JSON), that what it
# could not read is unknown (null), never 0 or a false reason, with a note saying what
# failed, and that the fault was really met (the library's log). Every case runs again
# under ASan+UBSan+LSan (build/san/iotriage): no report.
# The write-side cases (ENOSPC on stdout and --record) wait for their fix: see
# tests/fault/write_faults.sh.
. "$(dirname "$0")/lib.sh"
. "$ROOT/tests/soak/san.sh"
. "$ROOT/tests/fault/lib_fault.sh"
# The faults are injected into /proc's per-task files and taskstats: the path without the
# BPF task iterator (source/taskiter.h), which reads neither where it loads.
export IOTRIAGE_TASKITER=0
fault_build || fail "cannot build $FAULT_SO"
san_build || fail "sanitizer build failed"

# fcase NAME SPEC [ARGS...]: run both binaries under SPEC; the normal run's last sample
# is left in $TMP/NAME.last for the checks.
fcase() {
    local name=$1 spec=$2 bin rc tag; shift 2
    for bin in "$IOT" "$SAN_IOT"; do
        tag=$name; [ "$bin" = "$SAN_IOT" ] && tag=$name.san
        rm -f "$TMP/$tag.log"
        fault_run "$spec" "$TMP/$tag.log" "$bin" --json -n 3 -d 0.2 "$@" >"$TMP/$tag.out" 2>"$TMP/$tag.err"
        rc=$?
        if san_report "$TMP/$tag.err"; then
            fail "$tag: sanitizer report: $(san_excerpt "$TMP/$tag.err")"
        fi
        [ "$rc" = 0 ] || { tail -n 5 "$TMP/$tag.err"; fail "$tag: exit $rc under '$spec'"; }
        [ "$(wc -l <"$TMP/$tag.out")" = 3 ] || fail "$tag: $(wc -l <"$TMP/$tag.out") samples, not 3"
        jq -e . "$TMP/$tag.out" >/dev/null || fail "$tag: invalid JSON"
        [ -s "$TMP/$tag.log" ] || fail "$tag: the fault '$spec' was never met"
    done
    tail -n 1 "$TMP/$name.out" >"$TMP/$name.last"
    echo "$name: $(wc -l <"$TMP/$name.log") injections"
}
note_of() { jq -r --arg s "$2" '[.notes[] | select(.source == $s) | .text] | join(" | ")' "$TMP/$1.last"; }

# 1. sysfs reads fail with EIO: scheduler, nr_requests, inflight unknown, and said so
#    (before: no note, and `scheduler: null` reads as "no scheduler").
fcase sys-eio 'read:path=/sys/*:errno=EIO'
jqf '[.devices[] | select(.scheduler != null or .nr_requests != null or .inflight != null)] | length == 0' \
    "$TMP/sys-eio.last" >/dev/null
n=$(note_of sys-eio sysfs)
grep -q 'unreadable (Input/output error).*unknown (null), not absent' <<<"$n" || fail "sys-eio: note '$n'"
ok "sysfs EIO: every device's queue unknown (null), note: $n"

# 2. sysfs opens refused: the same, with the reason.
fcase sys-eacces 'open:path=/sys/*:errno=EACCES'
n=$(note_of sys-eacces sysfs)
grep -q 'Permission denied' <<<"$n" || fail "sys-eacces: note '$n'"
ok "sysfs EACCES: note: $n"

# 3. Short reads of sysfs (3 bytes a call): the values are still the kernel's.
fcase sys-short 'read:path=/sys/*:short=3'
want=$(sed -n 's/.*\[\(.*\)\].*/\1/p' /sys/block/vda/queue/scheduler)
got=$(jq -r '.devices[] | select(.name == "vda") | .scheduler' "$TMP/sys-short.last")
[ "$got" = "$want" ] || fail "sys-short: vda scheduler '$got', the kernel says '$want'"
[ "$(jq -r '.devices[] | select(.name == "vda") | .nr_requests' "$TMP/sys-short.last")" = \
  "$(cat /sys/block/vda/queue/nr_requests)" ] || fail "sys-short: vda nr_requests differs"
[ -z "$(note_of sys-short sysfs)" ] || fail "sys-short: a note although every value was read"
ok "sysfs short reads: vda $got, nr_requests as the kernel says, no note"

# 4. Short reads of /proc/PID/stat (8 bytes a call): the process list stays whole
#    (before: every process was dropped, "0 processes", no note).
fcase stat-short 'read:path=/proc/[0-9]*/stat:short=8'
np=$(jq '.processes | length' "$TMP/stat-short.last")
[ "$np" -gt 5 ] || fail "stat-short: $np processes"
jqf --argjson me $$ '[.processes[] | select(.pid == $me)] | length == 1' "$TMP/stat-short.last" >/dev/null
ok "short reads of /proc/PID/stat: $np processes, this shell among them"

# 5. /proc/PID/io unreadable: rates unknown (null), never 0.
fcase io-eio 'read:path=/proc/[0-9]*/io:errno=EIO'
jqf '[.processes[] | select(.read_bps != null or .write_bps != null)] | length == 0' "$TMP/io-eio.last" >/dev/null
ok "EIO on /proc/PID/io: every process's rates null, none 0"

# 6. EINTR on every /proc read, 200 times: retried, nothing lost.
fcase proc-eintr 'read:path=/proc/*:errno=EINTR:count=200'
[ "$(wc -l <"$TMP/proc-eintr.log")" = 200 ] || fail "proc-eintr: $(wc -l <"$TMP/proc-eintr.log") injections"
jqf '(.processes | length) > 5 and (.devices | length) > 0 and .psi.io != null' "$TMP/proc-eintr.last" >/dev/null
ok "EINTR on /proc reads (200): processes, devices and PSI all there"

# 7. /proc/diskstats and PSI unreadable: no devices / PSI null, each with its reason.
fcase diskstats-eio 'read:path=/proc/diskstats:errno=EIO'
jqf '(.devices | length) == 0' "$TMP/diskstats-eio.last" >/dev/null
n=$(note_of diskstats-eio diskstats)
grep -q 'Input/output error' <<<"$n" || fail "diskstats-eio: note '$n'"
fcase psi-eio 'read:path=/proc/pressure/*:errno=EIO'
jqf '.psi.io == null and .psi.cpu == null and .psi.memory == null' "$TMP/psi-eio.last" >/dev/null
n=$(note_of psi-eio psi)
grep -q 'pressure/io unavailable: Input/output error' <<<"$n" || fail "psi-eio: note '$n'"
ok "EIO on diskstats and PSI: empty/null, each with its reason"

# 8. Netlink errors: never "kernel without TASKSTATS" (before: any failed lookup said so).
fcase nl-recv 'recvmsg:errno=ENOBUFS'
n=$(note_of nl-recv delayacct)
grep -q 'CONFIG_TASKSTATS' <<<"$n" && fail "nl-recv: a netlink error reported as a missing kernel feature: $n"
grep -q 'generic netlink lookups fail' <<<"$n" || fail "nl-recv: note '$n'"
fcase nl-send 'sendmsg:errno=ENOBUFS'
n=$(note_of nl-send delayacct)
grep -q 'CONFIG_TASKSTATS' <<<"$n" && fail "nl-send: a netlink error reported as a missing kernel feature: $n"
jqf '[.processes[] | select(.io_delay_pct != null and .io_delay_pct != 0)] | length >= 0' "$TMP/nl-send.last" >/dev/null
# one failed receive, then the lookup again on a fresh socket: delays as without the fault
fcase nl-recv-once 'recvmsg:errno=ENOBUFS:count=1'
n=$(note_of nl-recv-once delayacct)
clean=$("$IOT" --json -n 2 -d 0.2 | tail -n 1 | jq -r '[.notes[] | select(.source == "delayacct") | .text] | join(" | ")')
[ "$n" = "$clean" ] || fail "nl-recv-once: note '$n', without the fault '$clean'"
ok "netlink errors: said as such, never as a kernel without TASKSTATS; one lost answer is retried"
