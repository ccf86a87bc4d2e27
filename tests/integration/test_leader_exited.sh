#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# A process whose main thread exited first (pthread_exit in main): its leader is a zombie,
# whose /proc/PID reads no command line, no open files and (no I/O context) the default
# priority, while its threads go on reading the lab disk at idle priority (ionice -c3,
# inherited by each thread). The process must still be shown as it is, from a live
# thread's /proc/PID/task/TID (procs.h: task_sample.live_tid):
#  - its row: the threads' priority (idle/7, set), its real command line (not a kernel
#    thread's bracketed name), the lab disk among its devices from its open files, and
#    the verdict (ioprio-ignored: the loop device's scheduler is none), in --json and -b,
#    with the BPF task iterator (as root by default) and with --no-bpf (/proc only);
#  - the thread view (-P): each live thread with its command line and the lab disk;
#  - iotriage audit lists it, with the lab disk judged.
. "$(dirname "$0")/lib.sh"
. "$ROOT/tests/lab/lab.sh"
need ionice
[ "$(id -u)" = 0 ] || skip "needs root (lab disk)"
[ -x "$HELPER" ] || fail "build $HELPER first (make check)"
lab_up 2000 4 64 || exit $?
trap 'it_kill_bg; lab_down; it_cleanup' EXIT
grep -q '\[none\]' "/sys/block/$LAB_NAME/queue/scheduler" ||
    fail "the lab disk's scheduler is not none: $(cat "/sys/block/$LAB_NAME/queue/scheduler")"

ionice -c3 "$HELPER" dreadt-noleader 4 "$LAB_DEV" 120 &
H=$!; BG_PIDS+=("$H")
CMD="$HELPER dreadt-noleader 4 $LAB_DEV 120"
wait_until 20 eval 'grep -q "^State:.*Z" /proc/$H/status 2>/dev/null' ||
    fail "the helper's leader never exited: $(proc_state "$H")"
TIDS=$(ls /proc/"$H"/task | grep -vx "$H" | tr '\n' ' ')
[ "$(echo $TIDS | wc -w)" = 4 ] || fail "process $H has threads '$TIDS', expected 4 besides its leader"
for t in $TIDS; do
    ionice -p "$t" | grep -q '^idle' || fail "thread $t is not idle: $(ionice -p "$t")"
done
[ -z "$(tr -d '\0' </proc/"$H"/cmdline)" ] || fail "the zombie leader's cmdline is not empty here"

for mode in bpf no-bpf; do
    opt=()
    [ "$mode" = no-bpf ] && opt=(--no-bpf)
    # --json: the process row
    "$IOT" --json -n 2 -d 1 -p "$H" "${opt[@]}" >"$TMP/p.json" || fail "$mode: iotriage --json failed"
    last_record "$TMP/p.json" | jq -c --argjson h "$H" '.processes[] | select(.pid == $h)' >"$TMP/row.json"
    [ -s "$TMP/row.json" ] || fail "$mode: no row for process $H: $(tail -c 400 "$TMP/p.json")"
    row=$(cat "$TMP/row.json")
    jq -e '.ioprio.class == "idle" and .ioprio.effective_class == "idle" and .ioprio.source == "explicit"' \
        <<<"$row" >/dev/null || fail "$mode: process $H's priority is not its threads' idle: $(jq -c .ioprio <<<"$row")"
    jq -e --arg c "$CMD" '.comm == "taskhelper" and .cmdline == $c' <<<"$row" >/dev/null ||
        fail "$mode: process $H's command: $(jq -c '[.comm, .cmdline]' <<<"$row"), expected $CMD"
    jq -e --arg d "$LAB_NAME" '(.devices // []) | index($d) != null' <<<"$row" >/dev/null ||
        fail "$mode: process $H's devices $(jq -c .devices <<<"$row") miss $LAB_NAME"
    jq -e '.devices_from == "files" or .devices_from == "both"' <<<"$row" >/dev/null ||
        fail "$mode: process $H's devices are not from its open files: $(jq -c .devices_from <<<"$row")"
    jq -e --arg d "$LAB_NAME" '[.warnings[] | select(.code == "ioprio-ignored" and .device == $d)] | length == 1' \
        <<<"$row" >/dev/null || fail "$mode: no ioprio-ignored verdict on $LAB_NAME: $(jq -c .warnings <<<"$row")"
    ok "$mode --json: $(jq -c '[.ioprio.class, .ioprio.level, .cmdline, .devices, .devices_from, [.warnings[].code]]' <<<"$row")"

    # -b, every process (with the iterator, the open files then come from its records
    # once 32 processes were read from /proc): the same row and verdict in text
    "$IOT" -b -n 2 -d 1 "${opt[@]}" >"$TMP/t.txt" || fail "$mode: iotriage -b failed"
    line=$(grep -E "^ *$H +" "$TMP/t.txt" | tail -n 1)
    grep -Eq "^ *$H +root +idle/7 +set .*[ ,]$LAB_NAME[ ,].* $CMD\$" <<<"$line" ||
        fail "$mode -b: row of $H: '$line'"
    grep -Eq "ioprio-ignored +taskhelper\[$H\] idle/7 .*$LAB_NAME uses none" "$TMP/t.txt" ||
        fail "$mode -b: no ioprio-ignored verdict for $H: $(grep -A4 Warnings "$TMP/t.txt")"
    ok "$mode -b: $line"

    # -P: each live thread with the command line and the lab disk
    "$IOT" --json -P -n 2 -d 1 -p "$H" "${opt[@]}" >"$TMP/th.json" || fail "$mode: iotriage -P failed"
    last_record "$TMP/th.json" | jq -c --argjson h "$H" '.processes[] | select(.tgid == $h)' >"$TMP/th.rows"
    for t in $TIDS; do
        r=$(jq -c --argjson t "$t" 'select(.pid == $t)' "$TMP/th.rows")
        jq -e --arg c "$CMD" --arg d "$LAB_NAME" \
            '.ioprio.class == "idle" and .cmdline == $c and ((.devices // []) | index($d) != null)' \
            <<<"$r" >/dev/null || fail "$mode -P: thread $t: $(jq -c '[.ioprio.class, .cmdline, .devices]' <<<"$r")"
    done
    ok "$mode -P: every live thread idle, with its command line and $LAB_NAME"
done

# audit: the process is listed with its label, and the lab disk judged
"$IOT" audit >"$TMP/audit.txt" 2>&1
grep -A4 -E "^ +$H +idle/7 +explicit +$CMD\$" "$TMP/audit.txt" >"$TMP/audit.row" ||
    fail "audit does not list process $H: $(sed -n '/non-default/,/^$/p' "$TMP/audit.txt")"
grep -Eq "^ +$LAB_NAME +none +ignored " "$TMP/audit.row" ||
    fail "audit does not judge $LAB_NAME for process $H: $(cat "$TMP/audit.row")"
ok "audit lists $H: $(head -n 1 "$TMP/audit.row" | tr -s ' ')"
