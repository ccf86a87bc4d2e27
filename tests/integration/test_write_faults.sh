#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Write errors must not be silent (issue #18 item 1), through the fault-injection library
# (tests/fault/): the cases a real full device cannot make, such as a disk that fills up
# after some bytes, through stdio or write(2).
#
# What must hold: a batch run whose output or recording cannot be written stops with one
# line `iotriage: writing FILE: No space left on device` on stderr and exit status 1,
# whether the kernel refuses at once (/dev/full) or after some bytes (a disk filling up:
# the fault library's bytes=), whether through stdio or write(2).
. "$(dirname "$0")/lib.sh"
. "$ROOT/tests/fault/lib_fault.sh"
fault_build || fail "cannot build $FAULT_SO"

# wcase NAME WANT_FILE CMD...: CMD must end (within 120 s) with status 1 and the one line.
wcase() {
    local name=$1 file=$2 rc; shift 2
    if [ "$1" = fault_run ]; then
        # a shell function: timeout runs the env line it stands for
        local spec=$2 log=$3; shift 3
        timeout 120 env LD_PRELOAD="$FAULT_SO" IOTRIAGE_FAULT="$spec" IOTRIAGE_FAULT_LOG="$log" "$@" 2>"$TMP/$name.err"
    else
        timeout 120 "$@" 2>"$TMP/$name.err"
    fi
    rc=$?
    [ "$rc" != 124 ] || fail "$name: still running after 120 s (a write error ignored?)"
    [ "$rc" = 1 ] || { cat "$TMP/$name.err"; fail "$name: exit $rc, want 1"; }
    grep -Fxq "iotriage: writing $file: No space left on device" "$TMP/$name.err" ||
        { cat "$TMP/$name.err"; fail "$name: no 'iotriage: writing $file: No space left on device' on stderr"; }
    ok "$name: exit 1, one line on stderr"
}

# 1. The recording on a device that refuses every write.
wcase record-devfull /dev/full "$IOT" --json -n 3 -d 0.1 --record /dev/full >/dev/null
# 2. stdout refusing every write: must stop, not run forever.
wcase stdout-devfull stdout sh -c "exec '$IOT' --json -d 0.1 >/dev/full"
# 3. stdout filling up after 4 kB (through stdio or write(2), whichever the output uses).
wcase stdout-fills stdout fault_run 'write:fd=1:bytes=4096' "$TMP/w3.log" "$IOT" --json -d 0.1 -n 50 \
    >"$TMP/out3"
[ -s "$TMP/w3.log" ] || fail "stdout-fills: the fault was never met"
# 4. The recording filling up after 3000 bytes, stdout fine.
wcase record-fills "$TMP/rec.ndjson" fault_run "write:path=$TMP/rec.ndjson:bytes=3000" "$TMP/w4.log" \
    "$IOT" --json -d 0.1 -n 50 --record "$TMP/rec.ndjson" >/dev/null
[ -s "$TMP/w4.log" ] || fail "record-fills: the fault was never met"
# 5. Text output (-b) too.
wcase batch-fills stdout fault_run 'write:fd=1:bytes=2048' "$TMP/w5.log" "$IOT" -b -d 0.1 -n 50 >"$TMP/out5"
