#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# What --record writes, --replay reads: fresh live recordings (processes, threads with -P,
# only active ones with -o) are decoded by sample/decode*.c and written again with
# sample_write, and must come out byte for byte, notes included. The decoding and the
# comparison are tests/unit/test_replay.c's, run on each file through IOTRIAGE_REPLAY_FILE.
. "$(dirname "$0")/lib.sh"

RT="$ROOT/build/tests/test_replay"
[ -x "$RT" ] || fail "$RT not built (make unit)"

# A labelled process with a file open on the root file system's disk, so that the
# recordings are likely to hold warnings too (ioprio-level-ignored under mq-deadline,
# ioprio-unsaturated elsewhere); the round trip holds either way.
bg nice -n 19 sleep 60 </etc/hostname

roundtrip() { # NAME IOTRIAGE-OPTIONS...
    local name=$1; shift
    local rec="$TMP/$name.jsonl" out
    "$IOT" --json -n 5 -d 0.2 "$@" --record "$rec" >"$TMP/$name.stdout" ||
        fail "iotriage --json $* --record failed"
    [ "$(wc -l <"$rec")" = 5 ] || fail "$name: expected 5 recorded lines, got $(wc -l <"$rec")"
    cmp -s "$rec" "$TMP/$name.stdout" || fail "$name: --record and stdout differ"
    jqf -s 'length == 5 and all(.[]; .version == 1)' "$rec" >/dev/null
    out=$(IOTRIAGE_REPLAY_FILE="$rec" "$RT" 2>&1) || { printf '%s\n' "$out" >&2; fail "$name: round trip"; }
    grep -q ": 5 samples written again byte for byte" <<<"$out" ||
        { printf '%s\n' "$out" >&2; fail "$name: the round trip did not run"; }
    ok "$name: 5 samples, $(jq -s '[.[].processes | length] | add' "$rec") process entries," \
       "$(jq -s '[.[].warnings | length] | add' "$rec") warnings, written again byte for byte"
}

roundtrip processes
roundtrip threads -P
roundtrip only-active -o
