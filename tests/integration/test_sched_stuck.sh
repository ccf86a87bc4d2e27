#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# A scheduler switch on a device with stuck requests (issue #18, item 2). The lab disk
# serves one request at a time, each taking 3 s; a direct-I/O reader keeps 4 in flight.
# Writing queue/scheduler then waits in D state until all of them have completed (up to
# 12 s), and no signal ends the wait. iotriage must not be the one waiting:
#   - before y, the dialog warns that nothing has completed for seconds;
#   - after y, the screen keeps refreshing (the clock in the header changes), says it
#     waits for N requests in flight, and iotriage's main thread is never in D state,
#     while the process that writes is (so the test did meet a stuck write);
#   - the result is read back once the request completes, and undo still works;
#   - q while a switch waits quits at once (before the device drains), saying on stderr
#     that the switch goes on alone; the child then finishes it.
# Run it against another binary with IOTRIAGE_BIN=path (it fails on the one before the fix).
. "$(dirname "$0")/lib.sh"
. "$ROOT/tests/lab/lab.sh"
need fio
IOT=${IOTRIAGE_BIN:-$IOT}
SOCK=iotriage-stuck-$$
. "$(dirname "$0")/lib_tmux.sh"
LAT_US=3000000
DEPTH=4
lab_up "$LAT_US" 1 16 || exit $?
Q=/sys/block/$LAB_NAME/queue
vda_before=$(cat /sys/block/vda/queue/scheduler /sys/block/vda/queue/nr_requests 2>/dev/null)
READER=
# Cleanup, in order: the screen, the reader, then every request in flight (a detached
# loop device with a request in flight, or a switch still frozen, must not be left
# behind), the scheduler back to none, then the lab (lab.sh's trap runs lab_down after).
drain() {
    local i
    for ((i = 0; i < 200; i++)); do
        [ "$(tr -s ' ' <"/sys/block/$LAB_NAME/inflight" 2>/dev/null)" = " 0 0" ] &&
            ! pgrep -f "^$IOT" >/dev/null && return 0
        sleep 0.1
    done
    return 1
}
cleanup() {
    T kill-server 2>/dev/null
    [ -n "$READER" ] && kill "$READER" 2>/dev/null
    drain
    [ -e "$Q/scheduler" ] && echo none >"$Q/scheduler" 2>/dev/null
    it_cleanup
    lab_down
}
trap cleanup EXIT

sched_now() { sed -n 's/.*\[\(.*\)\].*/\1/p' "$Q/scheduler"; }
state_of() { awk '{ sub(/^.*\) /, ""); print $1 }' "/proc/$1/stat" 2>/dev/null; }   # R S D Z; "" gone
clock() { screen | head -n 1 | grep -Eo '[0-9]{2}:[0-9]{2}:[0-9]{2}' | head -n 1; }
# Until one of the reader's requests completes: the next completes LAT_US later.
next_request() {
    local r0 i
    r0=$(awk '{ print $1 }' "/sys/block/$LAB_NAME/stat")
    for ((i = 0; i < 100; i++)); do
        [ "$(awk '{ print $1 }' "/sys/block/$LAB_NAME/stat")" != "$r0" ] && return 0
        sleep 0.1
    done
    fail "the reader completed nothing in 10 s"
}
idx_of() { tr -d '[]' <"$Q/scheduler" | tr ' ' '\n' | grep -n -x "$1" | cut -d: -f1 | awk '{print $1 - 1}'; }

# DEPTH requests in flight at all times, served one by one: a switch waits for all of them.
fio --name=stuck --filename="$LAB_DEV" --direct=1 --rw=randread --bs=4k --ioengine=libaio \
    --iodepth="$DEPTH" --runtime=600 --time_based --output=/dev/null &
READER=$!

T new-session -d -s ui -x 120 -y 40 "$IOT -d 0.5 2>$TMP/stderr; echo EXITED \$?; sleep 60"
wait_for '^DEVICE +SCHED'
PID=$(pgrep -f "^$IOT -d 0.5" | head -n 1)
[ -n "$PID" ] || fail "no iotriage process"
T send-keys -t ui Tab / "$LAB_NAME" Enter
wait_for "^$LAB_NAME +none "

open_confirm() {  # open_confirm SCHED
    local k
    T send-keys -t ui s
    wait_for "^I/O scheduler of $LAB_NAME"
    for ((k = 0; k < $(idx_of "$1"); k++)); do T send-keys -t ui Down; done
    T send-keys -t ui Enter
    wait_for "^Switch $LAB_NAME from none to $1\?"
}

# Is iotriage's main thread stuck in D state? A D reading alone is not: any task sleeps
# uninterruptibly for a moment now and then (a page fault, a lock; seen once in 300
# readings around the fork). Stuck is D with a stack in the queue freeze or the elevator
# (the issue's blk_mq_freeze_queue_wait), or D in three readings in a row, 0.1 s apart.
DRUN=0
not_stuck() {  # not_stuck WHEN
    local st stack
    st=$(state_of "$PID")
    if [ "$st" != D ]; then DRUN=0; return 0; fi
    stack=$(cat "/proc/$PID/stack" 2>/dev/null)
    DRUN=$((DRUN + 1))
    if grep -Eq 'freeze|elevator|elv_|queue_attr|blk_mq' <<<"$stack"; then
        fail "iotriage's main thread is in D state in the block layer $1: $(tr '\n' ' ' <<<"$stack")"
    fi
    [ "$DRUN" -lt 3 ] || fail "iotriage's main thread is in D state $1, three readings in a row ($(cat "/proc/$PID/wchan"))"
    echo "note: a passing D reading $1 (stack: $(head -n 1 <<<"$stack"))"
}

# While the switch waits: the screen lives, iotriage's main thread is not stuck in D,
# the writer (the pid the dialog names) is. Sets WRITER.
check_waiting() {
    local w c1 c2 i
    DRUN=0
    for ((i = 0; i < 10; i++)); do   # from the moment y was sent
        not_stuck "after y"
        sleep 0.1
    done
    # (the switch waits for DEPTH requests of 3 s: 6 s to show the dialog still leaves the
    # checks below time to run before it completes, and a loaded machine that time to fork)
    wait_for "^Waiting [0-9.]+ s for [1-9][0-9]* requests? in flight on $LAB_NAME to complete" 6
    WRITER=$(screen | sed -n 's/.*The write runs in process \([0-9]*\).*/\1/p' | head -n 1)
    [ -n "$WRITER" ] || { screen; fail "the dialog names no writing process"; }
    for ((i = 0; i < 10; i++)); do
        w=$(state_of "$WRITER")
        [ "$w" = D ] && break
        sleep 0.1
    done
    [ "$w" = D ] || fail "the writing process $WRITER is in state '$w', not D: no stuck write was met"
    grep -q blk_mq_freeze_queue_wait "/proc/$WRITER/wchan" 2>/dev/null || \
        echo "note: writer waits in $(cat "/proc/$WRITER/wchan" 2>/dev/null)"
    c1=$(clock)
    for ((i = 0; i < 12; i++)); do
        not_stuck "while the switch waits"
        sleep 0.1
    done
    c2=$(clock)
    [ -n "$c1" ] && [ "$c1" != "$c2" ] || { screen; fail "the clock stood still ($c1 -> $c2) while the switch waited"; }
    [ "$(state_of "$WRITER")" = D ] || fail "the switch completed before the checks ended: nothing was shown stuck"
    screen | grep -Eq '^Waiting [0-9.]+ s' || fail "the waiting dialog went away"
    ok "waiting: the clock moves ($c1 -> $c2), iotriage ($PID) never stuck in D, the writer ($WRITER) in D"
}

# The scheduler switched to in 1-3: any but none will do (the kernel freezes the queue
# for every switch). kyber, not bfq, which a kernel may lack. 4 switches to mq-deadline.
TARGET=kyber
sched_offered "$LAB_NAME" "$TARGET" || fail "$LAB_NAME does not offer $TARGET: $(cat "$Q/scheduler")"

# 1. Before y: the warning that nothing has completed for seconds.
# The dialog is filled when it opens, from the samples so far: opened just after a
# completion it rightly has less to say, so it is opened again (up to 4 times).
WARN="^WARNING: (no request on $LAB_NAME has completed for|requests on $LAB_NAME take) [0-9.]+ s.*; $DEPTH in flight now"
for ((try = 1; ; try++)); do
    next_request
    sleep 2                    # nothing completes for 3 s: 2 s, then the dialog
    open_confirm "$TARGET"
    sleep 0.3
    screen | grep -Eq -- "$WARN" && break
    [ "$try" -lt 4 ] || { screen; fail "no warning before y on a device with $DEPTH requests stuck"; }
    echo "note: no warning on try $try: $(screen | grep -E '^WARNING' || echo none)"
    T send-keys -t ui Escape
    wait_for 'nothing changed'
done
ok "before y: the dialog warns that nothing completed for seconds, $DEPTH requests in flight"

# 2. y: the switch waits in a child; the screen does not.
T send-keys -t ui y
check_waiting
wait_for "^Switch done" $((DEPTH * LAT_US / 1000000 + 4))
wait_for "$LAB_NAME: scheduler $TARGET \(was none\)"
wait_for '^It took [0-9.]+ s: the kernel switches only once'
[ "$(sched_now)" = "$TARGET" ] || fail "after the switch: $(sched_now)"
[ -z "$(state_of "$WRITER")" ] || fail "the writer $WRITER was not reaped ($(state_of "$WRITER"))"
ok "the result is read back once the request completed ($(screen | grep -Eo 'It took [0-9.]+ s')): $LAB_NAME now $TARGET"

# 3. Undo, on the same stuck device.
T send-keys -t ui x u
wait_for "^Undo the switch of $LAB_NAME"
next_request
T send-keys -t ui y
check_waiting
wait_for '^Undo done' $((DEPTH * LAT_US / 1000000 + 4))
[ "$(sched_now)" = none ] || fail "after the undo: $(sched_now)"
ok "undo works on the stuck device: back to none"

# 4. q while the switch waits: iotriage ends before the device drains; the child finishes.
T send-keys -t ui x
open_confirm mq-deadline
next_request
T send-keys -t ui y
check_waiting
t0=$(date +%s.%N)
T send-keys -t ui q
for ((i = 0; i < 100; i++)); do
    [ -z "$(state_of "$PID")" ] || [ "$(state_of "$PID")" = Z ] || { sleep 0.05; continue; }
    break
done
t1=$(date +%s.%N)
s=$(state_of "$PID")
[ -z "$s" ] || [ "$s" = Z ] || fail "iotriage still running ($s) after q while a switch waits"
[ "$(state_of "$WRITER")" = D ] || fail "the device drained before iotriage ended: quitting was not shown independent of it"
wait_for '^EXITED 0'
grep -q "the switch of $LAB_NAME to mq-deadline was still waiting.*process $WRITER finishes it alone" "$TMP/stderr" ||
    { cat "$TMP/stderr"; fail "no note on stderr about the switch left to finish"; }
ok "q quit in $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }') s while the writer was still in D; stderr says it goes on"
for ((i = 0; i < 200; i++)); do [ -z "$(state_of "$WRITER")" ] && break; sleep 0.1; done
[ -z "$(state_of "$WRITER")" ] || fail "the orphaned writer $WRITER never ended"
[ "$(sched_now)" = mq-deadline ] || fail "the orphaned writer left $(sched_now)"
ok "the child finished the switch alone: $LAB_NAME now mq-deadline"
kill "$READER" 2>/dev/null      # no more 3 s requests for the cleanup's drain to wait for

[ "$(cat /sys/block/vda/queue/scheduler /sys/block/vda/queue/nr_requests 2>/dev/null)" = "$vda_before" ] ||
    fail "vda's queue changed"
ok "vda untouched"
