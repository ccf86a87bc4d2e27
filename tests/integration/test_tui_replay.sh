#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# --replay drives the same screen from a recording: the banner recorded on the lab disk
# is there, keys step forward and back, change the speed and jump; a frame looks the
# same however it is reached; a damaged line is reported with its line number.
. "$(dirname "$0")/lib.sh"
. "$ROOT/tests/lab/lab.sh"
need fio
need ionice
SOCK=iotriage-replay-$$
. "$(dirname "$0")/lib_tmux.sh"
lab_up 2000 4 64 || exit $?
trap 'it_kill_bg; tmux -L "$SOCK" kill-server 2>/dev/null; tmux -L "$SOCK-bad" kill-server 2>/dev/null; lab_down; it_cleanup' EXIT

# A recording with something to see: an idle-class reader on a device under none.
echo none >"/sys/block/$LAB_NAME/queue/scheduler"
bg ionice -c3 fio --name=idle --filename="$LAB_DEV" --ioengine=libaio --iodepth=16 --direct=1 \
    --bs=4k --rw=randread --time_based --runtime=30 --output=/dev/null
lab_wait_users 1 || fail "the idle reader did not start"
sleep 1   # a moment of steady load before the recording
"$IOT" --json -n 5 -d 0.5 -o >"$TMP/rec.jsonl" || fail "recording failed"
it_kill_bg
jq -e -s 'length == 5 and any(.[].warnings[]; .code == "ioprio-ignored")' "$TMP/rec.jsonl" >/dev/null \
    || fail "the recording has no ioprio-ignored warning"

T new-session -d -s ui -x 110 -y 30 "$IOT --replay $TMP/rec.jsonl; echo EXITED \$?; sleep 60"
wait_for 'REPLAY [0-9]/5'
T send-keys -t ui p g
wait_for 'REPLAY 1/5 x1 PAUSED'
wait_for "ioprio-ignored: fio\[[0-9]+\] idle/7 \(set\) is ignored: $LAB_NAME uses none"
wait_for "^$LAB_NAME +none"
ok "frame 1: the recorded banner and the lab disk"

T send-keys -t ui Right Right
wait_for 'REPLAY 3/5'
screen >"$TMP/f3a"
T send-keys -t ui Left
wait_for 'REPLAY 2/5'
T send-keys -t ui + +
wait_for 'REPLAY 2/5 x4'
T send-keys -t ui - -
wait_for 'REPLAY 2/5 x1'
T send-keys -t ui G
wait_for 'REPLAY 5/5'
T send-keys -t ui Right
wait_for 'end of the recording'
ok "step forward and back, speed, last frame, end"

# The same frame, reached the same way again, is the same screen.
T send-keys -t ui g Right Right
wait_for 'REPLAY 3/5'
screen >"$TMP/f3b"
diff "$TMP/f3a" "$TMP/f3b" >/dev/null || { diff "$TMP/f3a" "$TMP/f3b"; fail "frame 3 drawn differently"; }
ok "deterministic: frame 3 twice, identical"
T send-keys -t ui q
wait_for '^EXITED 0'

# A damaged recording: the good frames show, the bad ones say what and where.
head -n 2 "$TMP/rec.jsonl" >"$TMP/bad.jsonl"
sed -n 3p "$TMP/rec.jsonl" | sed 's/"version":1,/"version":99,/' >>"$TMP/bad.jsonl"
echo 'this is not json' >>"$TMP/bad.jsonl"
T kill-server 2>/dev/null
SOCK=$SOCK-bad         # a fresh server: a killed one may still be going away
T new-session -d -s ui -x 140 -y 30 "$IOT --replay $TMP/bad.jsonl; echo EXITED \$?; sleep 60"
wait_for 'REPLAY [0-9]/4'
T send-keys -t ui p g Right Right
wait_for 'bad.jsonl:3: sample from the future: format version 99'
T send-keys -t ui Right
wait_for 'bad.jsonl:4: not JSON'
T send-keys -t ui q
wait_for '^EXITED 0'
ok "damaged lines reported with their line numbers; no crash"

# A missing file: one line, exit 1; a file of which no sample decodes: refused at the
# start with the first error, exit 2, before the screen opens; -p with --replay: a usage
# error; -b with --replay prints the recording.
"$IOT" --replay "$TMP/nonexistent" </dev/null >/dev/null 2>"$TMP/err"; rc=$?
[ "$rc" = 1 ] && [ "$(wc -l <"$TMP/err")" = 1 ] || fail "missing recording: exit $rc, $(cat "$TMP/err")"
printf 'not json\n{"version":99}\n' >"$TMP/none.jsonl"
"$IOT" --replay "$TMP/none.jsonl" </dev/null >/dev/null 2>"$TMP/err"; rc=$?
[ "$rc" = 2 ] && [ "$(wc -l <"$TMP/err")" = 1 ] && grep -q 'none.jsonl:1: not JSON' "$TMP/err" \
    || fail "nothing decodes: exit $rc, $(cat "$TMP/err")"
"$IOT" --replay "$TMP/rec.jsonl" -p 1 >/dev/null 2>&1; rc=$?
[ "$rc" = 2 ] || fail "--replay -p: exit $rc"
"$IOT" --replay "$TMP/rec.jsonl" -b >"$TMP/b.txt" 2>&1; rc=$?
[ "$rc" = 0 ] && [ "$(grep -c '^iotriage - ' "$TMP/b.txt")" = "$(grep -c . "$TMP/rec.jsonl")" ] \
    || fail "--replay -b: exit $rc, $(head -n 3 "$TMP/b.txt")"
ok "missing file, undecodable file and bad combination refused; -b prints every sample"
