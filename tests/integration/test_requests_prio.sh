#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The priority the requests carried (issue #35): io_uring and libaio give each request
# its own priority (sqe->ioprio, IOCB_FLAG_IOPRIO; fio's cmdprio_* options), which the
# task's priority does not show. On the lab disk (2 ms a request, 4 at once) under
# mq-deadline, which orders by the request's class:
#  - a libaio reader, task be/4, every request idle (--cmdprio_percentage=100
#    --cmdprio_class=3), 8 deep, and an io_uring reader the same (sqe->ioprio), 4 deep;
#  - a plain synchronous best-effort reader at 100 requests a second (so that it leaves
#    the idle reader gaps: mq-deadline serves idle only while no best-effort request is
#    queued or in flight).
# Each is one process (fio --thread: its job is a thread of the process iotriage lists).
# From `iotriage --json`: the first reader's task priority is be/4 (the premise), and in
# every sample where the lens counted bytes of both to the lab disk, its
# requests_by_prio there is at least 95 % idle and the other's at least 95 % be/4 (an
# attribution by the task's priority, or mixing the two readers, fails both).
# The verdicts are judged on the requests' class: under none, the same two readers, the
# first gets `ioprio-ignored` for its idle requests (its task, be/4, would get nothing),
# the other nothing; and its detail view on the screen (tmux) says its requests are idle.
. "$(dirname "$0")/lib.sh"
. "$ROOT/tests/lab/lab.sh"
SOCK=iotriage-reqprio-$$
. "$(dirname "$0")/lib_tmux.sh"
need fio
need jq
need tmux
[ "$(id -u)" = 0 ] || skip "needs root (BPF, lab disk)"
[ -r /sys/kernel/btf/vmlinux ] || skip "no kernel BTF at /sys/kernel/btf/vmlinux"
[ -x "$IOT" ] || fail "build ./iotriage first"
lab_up 2000 4 64 || exit $?
trap 'it_kill_bg; lab_down; it_cleanup' EXIT
Q=/sys/block/$LAB_NAME/queue
sched_offered "$LAB_NAME" mq-deadline || skip "mq-deadline not offered: $(cat "$Q/scheduler")"
echo mq-deadline >"$Q/scheduler" || fail "cannot select mq-deadline"

common=(--thread --filename="$LAB_DEV" --direct=1 --bs=4k --rw=randread --time_based --runtime=60)
bg fio --name=idlereq "${common[@]}" --ioengine=libaio --iodepth=8 \
    --cmdprio_percentage=100 --cmdprio_class=3 >"$TMP/idle.out" 2>&1
IDLE=$BG
bg fio --name=uringreq "${common[@]}" --ioengine=io_uring --iodepth=4 \
    --cmdprio_percentage=100 --cmdprio_class=3 >"$TMP/uring.out" 2>&1
URING=$BG
bg fio --name=be "${common[@]}" --ioengine=psync --rate_iops=100 >"$TMP/be.out" 2>&1
BE=$BG
lab_wait_users 3 || fail "the three readers did not all start: $(tail -2 "$TMP/idle.out" "$TMP/uring.out" "$TMP/be.out")"

timeout 60 "$IOT" --json -n 4 -d 2 -p "$IDLE" -p "$URING" -p "$BE" >"$TMP/iot.json" 2>"$TMP/iot.err" ||
    fail "iotriage failed: $(head -3 "$TMP/iot.err")"
kill -0 "$IDLE" 2>/dev/null || fail "the cmdprio reader died: $(tail -3 "$TMP/idle.out")"
kill -0 "$URING" 2>/dev/null || fail "the io_uring cmdprio reader died: $(tail -3 "$TMP/uring.out")"
jq -e 'select(.lens.on == true)' "$TMP/iot.json" >/dev/null ||
    skip "the BPF lens did not load: $(jq -r '.lens.reason' "$TMP/iot.json" | tail -1)"

# the premise: the task itself is best-effort 4
for pid in "$IDLE" "$URING"; do
    cls=$(jq -rs --argjson p "$pid" '[.[].processes[]? | select(.pid == $p) | .ioprio
          | "\(.effective_class)/\(.effective_level)"] | last' "$TMP/iot.json")
    [ "$cls" = be/4 ] || fail "the cmdprio reader $pid's task priority is $cls, not be/4"
done

# share PID PRIO: per sample where the lens counted bytes of PID to the lab disk, the
# share of them at PRIO (requests_by_prio), one a line
share() {
    jq -r --argjson p "$1" --arg d "$LAB_NAME" --arg k "$2" '
        .processes[]? | select(.pid == $p) | .requests_by_prio[$d]? // empty
        | ([.[]] | add) as $t | select($t > 0) | (.[$k] // 0) / $t' "$TMP/iot.json"
}
figs() {
    jq -c --argjson p "$1" --arg d "$LAB_NAME" '.processes[]? | select(.pid == $p)
        | {lens_bytes: .lens_bytes[$d]?, requests_by_prio: .requests_by_prio[$d]?}' "$TMP/iot.json" | tr '\n' ' '
}
for who in "$IDLE:idle:libaio cmdprio idle" "$URING:idle:io_uring cmdprio idle" "$BE:be/4:best-effort"; do
    IFS=: read -r pid prio what <<<"$who"
    s=$(share "$pid" "$prio")
    [ -n "$s" ] || fail "$what reader $pid: no sample with its requests_by_prio on $LAB_NAME: $(figs "$pid")"
    while read -r v; do
        between "$v" 0.95 1 || fail "$what reader $pid: $prio share $v on $LAB_NAME: $(figs "$pid")"
    done <<<"$s"
    ok "$what reader: $(wc -l <<<"$s") samples, $prio shares $(tr '\n' ' ' <<<"$s")on $LAB_NAME"
done

# ---- the verdicts and the screen, under none (reads no priority: idle is ignored) ----
echo none >"$Q/scheduler" || fail "cannot select none"
timeout 60 "$IOT" --json -n 3 -d 2 -p "$IDLE" -p "$BE" >"$TMP/none.json" 2>"$TMP/iot.err" ||
    fail "iotriage failed under none: $(head -3 "$TMP/iot.err")"
# codes PID: the codes of its warnings on the lab disk in the last sample
codes() {
    tail -n 1 "$TMP/none.json" | jq -r --argjson p "$1" --arg d "$LAB_NAME" \
        '[.processes[] | select(.pid == $p) | .warnings[] | select(.device == $d) | .code] | unique | join(",")'
}
c=$(codes "$IDLE")
[[ ,$c, == *,ioprio-ignored,* ]] || fail "none: the cmdprio reader's codes: ${c:-none} ($(figs "$IDLE"))"
txt=$(tail -n 1 "$TMP/none.json" | jq -r --argjson p "$IDLE" '.processes[] | select(.pid == $p)
      | .warnings[] | select(.code == "ioprio-ignored") | .text')
grep -q "idle (its requests'; task be/4) is ignored" <<<"$txt" || fail "none: the text: $txt"
[ -z "$(codes "$BE")" ] || fail "none: the best-effort reader got $(codes "$BE")"
ok "none: ioprio-ignored for the idle requests of a be/4 task: $txt"

T new-session -d -s ui -x 200 -y 50 "$IOT -d 1; echo EXITED \$?; sleep 60"
wait_for '^ +PID ' 20
T send-keys -t ui / idlereq Enter
wait_for 'filter: idlereq'
T send-keys -t ui Enter
wait_for "^Process $IDLE" 10
wait_for "^requests +idle on $LAB_NAME, not the task's be/4" 20
ok "screen: $(screen | grep -m1 '^requests ')"
T send-keys -t ui Escape q
wait_for '^EXITED 0' 10
