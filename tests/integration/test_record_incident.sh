#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# A recording with a known incident in the middle, looked up by time: record_run()
# (tests/helpers/recorder) records the lab disk under `none` while, after a quiet spell,
# a default-priority reader and an `ionice -c3` backup job hit it for 10 s. Seeking the
# recording (store_seek, with the time given as the CLI takes it) to the middle of the
# incident finds the sample that shows it: the lab disk busy, the backup's label
# reported ignored on it (ioprio-ignored), the backup among the processes with its
# devices; seeking to the quiet spell finds a sample without it.
# (When main.c has `iotriage --replay DIR --at`, the same check belongs on its output.)
. "$(dirname "$0")/lib.sh"
. "$ROOT/tests/lab/lab.sh"
need fio
need ionice
[ "$(id -u)" = 0 ] || skip "needs root"
# The real command line: `iotriage record` writes, `iotriage --replay DIR --at T` looks back.
at() { "$IOT" --json --replay "$1" --at "$2" -n 1; }
lab_up 2000 4 64 || exit $?
trap 'it_kill_bg; lab_down; it_cleanup' EXIT
echo none >"/sys/block/$LAB_NAME/queue/scheduler" || fail "cannot select none on $LAB_NAME"

bg "$IOT" record --dir "$TMP/rec" -d 0.5 --flush 1
rec=$BG
# The quiet spell is marked once the recorder has samples on disk (its first flush), not
# 2.5 s after its fork: a recorder that started late had no sample between the mark and
# the incident, and the look-up of the quiet spell found the incident instead.
wait_until 30 eval '[ -n "$(find "$TMP/rec" -name "*.zst" -size +0 2>/dev/null)" ]' ||
    fail "the recorder flushed nothing in 30 s: $(proc_state "$rec")"
quiet=$(date +%s.%N)
sleep 1
start=$(date +%s.%N)
job() { # NAME [prefix...]
    local name=$1; shift
    "$@" fio --name="$name" --filename="$LAB_DEV" --ioengine=libaio --iodepth=16 --direct=1 \
        --bs=4k --rw=randread --time_based --runtime=10 --output-format=json \
        --output="$TMP/$name.json" &
    BG_PIDS+=("$!")
}
job db
job backup ionice -c3
# The incident starts when the lab disk's read count moves (fio may start late on a busy
# machine). fio runs 10 s; the moment looked up is 7 s in: a process's devices come from
# its open files, rescanned every 5 s (source/fdmap.h), and fio's job process may have
# been scanned before it opened the disk.
reads() { awk '{ print $1 }' "/sys/block/$LAB_NAME/stat"; }
r0=$(reads)
busy=
for ((i = 0; i < 300; i++)); do
    [ $(($(reads) - r0)) -gt 500 ] && { busy=$(date +%s.%N); break; }
    sleep 0.05
done
[ -n "$busy" ] || fail "fio never got going on $LAB_DEV"
wait "${BG_PIDS[@]:1}" || fail "fio failed"
sleep 1.5
kill -TERM "$rec"
wait "$rec" || fail "recorder exited $?"
BG_PIDS=()

mid=$(awk -v s="$busy" 'BEGIN { printf "%.3f", s + 7 }')
at "$TMP/rec" "@$mid" >"$TMP/at.json" 2>"$TMP/at.err" || fail "no sample at the incident"
[ ! -s "$TMP/at.err" ] || { cat "$TMP/at.err" >&2; fail "damage on the way"; }
jqf --argjson t "$mid" '.ts >= $t and .ts < $t + 1' "$TMP/at.json" >/dev/null
# On the lab disk (2 ms, 4 slots) two 16-deep readers make thousands of reads a second;
# quiet, it makes none. (Not a %util threshold: on a loaded box fio may start late.)
jq -e --arg d "$LAB_NAME" '.devices[] | select(.name == $d) | .r_s > 200 and .scheduler == "none"' \
    "$TMP/at.json" >/dev/null || { jq -c --arg d "$LAB_NAME" '.devices[] | select(.name == $d)' "$TMP/at.json" >&2
                                   fail "the lab disk is not busy in the sample at the incident"; }
jq -e --arg d "$LAB_NAME" '[.warnings[] | select(.code == "ioprio-ignored" and .device == $d and .comm == "fio")] | length >= 1' \
    "$TMP/at.json" >/dev/null || {
    jq -c '[.ts, .warnings, [.processes[] | select(.comm == "fio") | {pid, read_bps, ioprio, devices, role}]]' "$TMP/at.json" >&2
    fail "no ioprio-ignored for fio on $LAB_NAME at the incident"; }
jqf --arg d "$LAB_NAME" '[.processes[] | select(.comm == "fio" and .ioprio.effective_class == "idle"
    and (.devices | index($d)) and .read_bps > 0)] | length == 1' "$TMP/at.json" >/dev/null
roles=$(jq -r '[.processes[] | select(.comm == "fio") | .role // "none"] | join(",")' "$TMP/at.json")
util=$(jq --arg d "$LAB_NAME" '.devices[] | select(.name == $d) | .util' "$TMP/at.json")
r_s=$(jq --arg d "$LAB_NAME" '.devices[] | select(.name == $d) | .r_s' "$TMP/at.json")
ok "at the incident (7 s in): $LAB_NAME $r_s reads/s, util $util under none, ioprio-ignored for the idle backup; fio roles: $roles"

"$IOT" --json --replay "$TMP/rec" --from "@$quiet" -n 1 >"$TMP/quiet.json" || fail "no sample in the quiet spell"
jqf '.ts < '"$start" "$TMP/quiet.json" >/dev/null
# (Other sessions on this machine may run their own fio on their own lab disks: look at ours.)
jqf --arg d "$LAB_NAME" '[.warnings[] | select(.device == $d)] | length == 0' "$TMP/quiet.json" >/dev/null
jqf --arg d "$LAB_NAME" '.devices[] | select(.name == $d) | .r_s == 0' "$TMP/quiet.json" >/dev/null
ok "in the quiet spell before it: $LAB_NAME idle, no warning about it"
"$IOT" --json --replay "$TMP/rec" --from "@$(awk -v s="$start" 'BEGIN { printf "%.3f", s + 3600 }')" -n 1 >/dev/null 2>&1 && fail "a sample an hour after the end?"
ok "after the end: none"
