#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# `iotriage trial` on a stuck disk (issue #39): the lab disk serves one request at a time,
# each taking 6 s, and a direct-I/O reader keeps 4 in flight, so writing queue/scheduler
# waits in D state for up to 24 s, longer than the trial's bound on a switch (15 s,
# TRIAL_SWITCH_WAIT_S). The trial must not hang with it:
#   - it ends by itself (well within 60 s), exit 1, saying that the switch still waits
#     and that the guardian will put the disk back;
#   - once the reader is gone and the requests have drained, the switch's child has
#     finished and the guardian has put `none` and nr_requests back.
. "$(dirname "$0")/lib.sh"
. "$ROOT/tests/lab/lab.sh"
need fio
[ "$(id -u)" = 0 ] || skip "needs root (a scheduler switch)"
LAT_US=6000000
DEPTH=4
lab_up "$LAT_US" 1 16 || exit $?
Q=/sys/block/$LAB_NAME/queue
READER=
# Cleanup, in order: the reader, every request in flight and every switch still frozen
# (a guardian or a switch child still writing), the scheduler back to none, the lab.
drain() {
    local i
    for ((i = 0; i < 600; i++)); do
        [ "$(tr -s ' ' <"/sys/block/$LAB_NAME/inflight" 2>/dev/null)" = " 0 0" ] &&
            ! pgrep -f "^$IOT trial" >/dev/null && return 0
        sleep 0.1
    done
    return 1
}
cleanup() {
    [ -n "$READER" ] && kill "$READER" 2>/dev/null
    drain
    [ -e "$Q/scheduler" ] && echo none >"$Q/scheduler" 2>/dev/null
    it_cleanup
    lab_down
}
trap cleanup EXIT

echo none >"$Q/scheduler" || fail "cannot select none"
NR=$(cat "$Q/nr_requests")
is_back() { grep -q '^\[none\]' "$Q/scheduler" && [ "$(cat "$Q/nr_requests")" = "$NR" ]; }
state() { echo "$(cat "$Q/scheduler"), nr_requests $(cat "$Q/nr_requests") (want [none], $NR)"; }

fio --name=stuck --filename="$LAB_DEV" --direct=1 --rw=randread --bs=4k --ioengine=libaio \
    --iodepth="$DEPTH" --runtime=600 --time_based --output=/dev/null &
READER=$!
full() { [ "$(awk '{ print $1 + $2 }' "/sys/block/$LAB_NAME/inflight")" -ge "$DEPTH" ]; }
wait_until 30 full || fail "the reader never had $DEPTH requests in flight"

timeout 60 "$IOT" trial "$LAB_NAME" mq-deadline --seconds 3 --yes >"$TMP/out" 2>"$TMP/err"
rc=$?
[ "$rc" != 124 ] || fail "the trial hung with the disk (still running after 60 s): $(cat "$TMP/err")"
[ "$rc" = 1 ] || fail "exit $rc, not 1: $(cat "$TMP/out" "$TMP/err")"
grep -q "the switch to mq-deadline still waits for $LAB_NAME's requests after 15 s" "$TMP/out" ||
    fail "the wait not said: $(cat "$TMP/out")"
grep -q "then the guardian (process [0-9]*) puts none back" "$TMP/out" ||
    fail "the guardian not named: $(cat "$TMP/out")"
ok "the trial ended by itself while the switch waited: $(grep -o 'decision: .*' "$TMP/out" | cut -c1-120)"

# The reader goes; its requests drain; the switch's child completes (the disk on
# mq-deadline), then the guardian, which the child's copy of the pipe held back, undoes
# it. Only once both are gone is the state final: before the switch lands it still reads
# none.
kill "$READER"
wait "$READER" 2>/dev/null
READER=
gone() { ! pgrep -f "^$IOT trial" >/dev/null; }
wait_until 120 gone || fail "the switch's child or the guardian still runs after 120 s: $(pgrep -af "^$IOT trial")"
is_back || fail "not put back after the switch landed: $(state)"
drain || fail "a request still in flight after the disk drained"
ok "put back once the disk drained and the switch landed: $(state)"
