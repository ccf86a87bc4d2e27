#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Never silent, never stuck (issue 18): each case failed before its fix.
#  1. A write that fails stops a batch run with one line naming the file and the reason,
#     exit 1: stdout on a full device, --record on a full device, --record on a tmpfs
#     that fills up (the recording is never cut mid-line without a word). On the screen
#     the header says RECORDING STOPPED and the reason is shown.
#  7. A paused replay sleeps until a key, even with a recorded interval of 1e-300.
# 10. A terminal curses cannot drive is refused with one line that points to -b/--json.
# 11. q quits from the help and detail views; the d prompt takes the interval iotriage
#     was started with.
. "$(dirname "$0")/lib.sh"
need tmux
need strace
SOCK=iotriage-silent-$$
. "$(dirname "$0")/lib_tmux.sh"
MNT=
trap 'it_kill_bg; [ -n "$MNT" ] && umount "$MNT" 2>/dev/null; it_cleanup' EXIT

# 1a. stdout on a full device: stops at once, says so.
timeout 10 "$IOT" --json -d 0.1 >/dev/full 2>"$TMP/err"; rc=$?
[ "$rc" = 1 ] || fail "--json >/dev/full: exit $rc (124: it ran on silently)"
grep -qx 'iotriage: writing stdout: No space left on device' "$TMP/err" || fail "--json >/dev/full said: $(cat "$TMP/err")"
timeout 10 "$IOT" -b -d 0.1 >/dev/full 2>"$TMP/err"; rc=$?
[ "$rc" = 1 ] && grep -q 'writing stdout: No space left' "$TMP/err" || fail "-b >/dev/full: exit $rc: $(cat "$TMP/err")"
ok "stdout on a full device: one line, exit 1"

# 1b. --record on a full device.
timeout 10 "$IOT" --json -n 3 -d 0.1 --record /dev/full >/dev/null 2>"$TMP/err"; rc=$?
[ "$rc" = 1 ] && grep -qx 'iotriage: writing /dev/full: No space left on device' "$TMP/err" \
    || fail "--record /dev/full: exit $rc: $(cat "$TMP/err")"
ok "--record /dev/full: one line, exit 1"

# 1c. --record on a tmpfs that fills up: the run stops with the reason, every line
#     written before is whole.
MNT=$TMP/small; mkdir -p "$MNT"
mount -t tmpfs -o size=64k tmpfs "$MNT" || fail "cannot mount a tmpfs"
bg sleep 300                # one small process a sample: many whole samples before it fills
timeout 60 "$IOT" --json -d 0.05 -p "$BG" --record "$MNT/rec.jsonl" >/dev/null 2>"$TMP/err"; rc=$?
[ "$rc" = 1 ] && grep -q "writing $MNT/rec.jsonl: No space left on device" "$TMP/err" \
    || fail "full tmpfs: exit $rc: $(cat "$TMP/err")"
n=$(wc -l <"$MNT/rec.jsonl")
[ "$n" -ge 2 ] || fail "only $n samples in 64 KiB"
if [ -s "$MNT/rec.jsonl" ]; then
    [ "$(tail -c 1 "$MNT/rec.jsonl" | od -An -c | tr -d ' ')" = '\n' ] || fail "the recording ends mid-line"
    jq -e . "$MNT/rec.jsonl" >/dev/null || fail "a line of the recording does not parse"
fi
ok "full tmpfs: stopped after $n whole samples with: $(cat "$TMP/err")"

# 1d. The screen: the recording stops, the screen goes on and says so.
T new-session -d -s ui -x 120 -y 30 "$IOT -d 0.2 --record /dev/full; echo EXITED \$?; sleep 60"
wait_for 'RECORDING STOPPED'
wait_for 'recording stopped: writing /dev/full: No space left'
T send-keys -t ui q
wait_for '^EXITED 0'
ok "screen: RECORDING STOPPED and the reason"

# 7. A paused replay does not wake: poll() calls over 2 s while paused.
printf '%s\n' "$(sed -n 1p "$ROOT/tests/fixtures/replay/rec.jsonl" | sed 's/"interval_s":[0-9.]*/"interval_s":1e-300/')" \
    "$(sed -n 2p "$ROOT/tests/fixtures/replay/rec.jsonl" | sed 's/"interval_s":[0-9.]*/"interval_s":1e-300/')" >"$TMP/tiny.jsonl"
T new-session -d -s tiny -x 120 -y 30 "$IOT --replay $TMP/tiny.jsonl; echo EXITED \$?; sleep 60"
# Traced once it is paused: the screen says so (a fixed wait could trace it still
# starting, or still playing, and count those wake-ups).
tiny() { T capture-pane -p -t tiny; }
wait_until 20 eval 'tiny | grep -q "^iotriage - .*REPLAY"' || fail "the replay never drew: $(tiny | head -n 3)"
pid=$(pgrep -f "iotriage --replay $TMP/tiny.jsonl" | head -n 1)
[ -n "$pid" ] || fail "replay not running"
T send-keys -t tiny p
wait_until 20 eval 'tiny | grep -q "^iotriage - .*PAUSED"' || fail "p did not pause the replay: $(tiny | head -n 1)"
timeout 2 strace -f -c -e trace=poll,ppoll,select,pselect6,epoll_wait -p "$pid" 2>"$TMP/strace" >/dev/null
calls=$(awk '$NF ~ /poll|select|epoll/ { s += $4 } END { print s + 0 }' "$TMP/strace")
[ "$calls" -le 3 ] || { cat "$TMP/strace"; fail "a paused replay woke $calls times in 2 s"; }
T send-keys -t tiny q
ok "paused replay with interval 1e-300: $calls wake-ups in 2 s"

# 10. Terminals curses cannot drive.
k=0
for term in dumb unknown-term-xyz ""; do
    k=$((k + 1))
    T new-session -d -s "term$k" -x 220 -y 20 "env TERM='$term' $IOT; echo EXITED \$?; sleep 30"
done
for s in term1 term2 term3; do
    wait_until 20 eval 'T capture-pane -p -t "$s" | grep -q EXITED'
    out=$(T capture-pane -p -t "$s")
    grep -q 'EXITED 2' <<<"$out" || fail "terminal case: $out"
    grep -q 'cannot drive this terminal (.*); -b and --json work without one' <<<"$out" || fail "terminal message: $out"
    T kill-session -t "$s"
done
ok "TERM=dumb, unknown or unset: one line, exit 2"

# 9. A device name from a recording (or a captured tree) with a bidi override reaches
#    neither the device list nor the device view raw.
sed 's/"vda"/"vd\\u202ea"/g' "$ROOT/tests/fixtures/replay/rec.jsonl" >"$TMP/bidi.jsonl"
"$IOT" --json --replay "$TMP/bidi.jsonl" -n 1 | grep -q 'vd\\u202ea' || fail "the bidi recording does not decode"
T new-session -d -s bidi -x 160 -y 40 "LC_ALL=C.UTF-8 $IOT --replay $TMP/bidi.jsonl; sleep 60"
wait_until 20 eval 'T capture-pane -p -t bidi | grep -q "^DEVICE"' || fail "the bidi replay never drew its devices"
T send-keys -t bidi p Tab Enter
# The view is judged once it is open: a capture 0.5 s after the keys could come before.
wait_until 20 eval 'T capture-pane -p -t bidi | grep -q "^Device "'
T capture-pane -p -t bidi >"$TMP/bidi.txt"
grep -q '^Device ' "$TMP/bidi.txt" || fail "the device view did not open: $(head -n 5 "$TMP/bidi.txt")"
grep -q "$(printf '\xe2\x80\xae')" "$TMP/bidi.txt" && fail "a raw U+202E reached the screen"
grep -q 'vd.*202e' "$TMP/bidi.txt" || fail "the escaped name is not shown: $(grep -m2 'Device\|major' "$TMP/bidi.txt")"
T kill-session -t bidi
ok "a device name with U+202E is shown escaped: $(grep -m1 '^Device ' "$TMP/bidi.txt")"

# 11. A -p naming no live process, or a thread id without -P, says so (text and JSON).
"$IOT" -b -n 1 -d 0.1 -p 4194000 | grep -qx 'Processes: -p 4194000: no such process' || fail "-p of no process: no note"
"$IOT" --json -n 1 -d 0.1 -p 4194000 | jq -e '.notes | any(.source == "pids" and .text == "-p 4194000: no such process")' >/dev/null \
    || fail "-p of no process: no JSON note"
head -c 1M /dev/zero >"$TMP/f.bin"
bg "$HELPER" dreadt 3 "$TMP/f.bin" 30; tp=$BG
wait_threads "$tp" 4
tid=$(ls "/proc/$tp/task" | grep -vx "$tp" | head -n 1)
"$IOT" -b -n 1 -d 0.1 -p "$tid" | grep -qx "Processes: -p $tid: a thread of process $tp: use -P, or -p $tp" \
    || fail "-p of a thread id: no note"
"$IOT" -b -P -n 1 -d 0.1 -p "$tid" | grep -q '^Processes: ' && fail "-P -p TID: a note although the thread is listed"
ok "-p of no process and of a thread id say so"

# 11. q from the help and from a detail view; the start interval is taken by d.
T new-session -d -s q1 -x 120 -y 30 "$IOT -d 0.05; echo EXITED \$?; sleep 30"
SESSION=q1
screenq() { T capture-pane -p -t q1; }
wait_until 20 eval 'screenq | grep -q "^iotriage - "' || fail "the screen never came up: $(screenq | head -n 3)"
# The prompt's answer is judged once the prompt has come and gone (keys may be read late).
T send-keys -t q1 d
wait_until 20 eval 'screenq | grep -q "^interval in seconds: "' || fail "d opened no prompt: $(screenq | tail -n 3)"
T send-keys -t q1 Enter
wait_until 20 eval '! screenq | grep -q "^interval in seconds: "' || fail "Enter did not close the d prompt"
screenq | grep -q 'interval not changed' && fail "d refused the start interval 0.05"
T send-keys -t q1 h
wait_until 20 eval 'screenq | grep -q "^iotriage keys"' || fail "h opened no help: $(screenq | head -n 3)"
T send-keys -t q1 q
wait_until 20 eval 'screenq | grep -q "EXITED 0"'
screenq | grep -q 'EXITED 0' || fail "q in the help view did not quit: $(screenq | tail -n 3)"
T new-session -d -s q2 -x 120 -y 30 "$IOT -d 0.3; echo EXITED \$?; sleep 30"
screenq2() { T capture-pane -p -t q2; }
wait_until 20 eval 'screenq2 | grep -Eq "^ +PID USER"' || fail "the process table never came up: $(screenq2 | head -n 3)"
T send-keys -t q2 Enter
wait_until 20 eval 'screenq2 | grep -q "^Threads ("' || fail "Enter opened no process view: $(screenq2 | head -n 5)"
T send-keys -t q2 q
wait_until 20 eval 'screenq2 | grep -q "EXITED 0"'
T capture-pane -p -t q2 | grep -q 'EXITED 0' || fail "q in the process view did not quit"
ok "q quits from help and detail views; d takes -d 0.05"
