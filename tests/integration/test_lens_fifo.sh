#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Saturation in steady FIFO, judged by the BPF lens from the first full interval
# (issue #35, docs/devices.md "With the BPF lens"). The same load, a synchronous reader
# and a 16-deep one under none, started before iotriage, on two lab disks of 1.5 ms a
# request:
#  - 3 requests served at once: 17 in flight, each waits for those ahead of it, and the
#    device time grows with the depth a request found at issue: saturated (lens), even
#    when no request ever found the device free to tell its service time;
#  - 32 served at once: the same 17 in flight all served in parallel: never called
#    saturated (the time does not grow with the depth; a flat fit proves nothing either
#    way, so the lens may say null), and no reader is a cause.
. "$(dirname "$0")/lib.sh"
. "$ROOT/tests/lab/lab.sh"
need fio
need jq
[ "$(id -u)" = 0 ] || skip "needs root (BPF)"
[ -r /sys/kernel/btf/vmlinux ] || skip "no kernel BTF at /sys/kernel/btf/vmlinux"
trap 'it_kill_bg; lab_down; it_cleanup' EXIT

SYNC=; DEEP=; SYNCW=; DEEPW=
start_load() {
    fio --name=sync --filename="$LAB_DEV" --ioengine=psync --direct=1 --bs=4k --rw=randread \
        --time_based --runtime=60 >/dev/null &
    SYNC=$!; BG_PIDS+=("$SYNC")
    fio --name=deep --filename="$LAB_DEV" --ioengine=libaio --iodepth=16 --direct=1 --bs=4k \
        --rw=randread --time_based --runtime=60 >/dev/null &
    DEEP=$!; BG_PIDS+=("$DEEP")
    wait_until 20 eval 'SYNCW=$(pgrep -P "$SYNC" -n fio) && proc_holds "$SYNCW" "$LAB_DEV"' ||
        fail "sync reader's job process not found reading: $(proc_state "$SYNC")"
    wait_until 20 eval 'DEEPW=$(pgrep -P "$DEEP" -n fio) && proc_holds "$DEEPW" "$LAB_DEV"' ||
        fail "deep reader's job process not found reading: $(proc_state "$DEEP")"
    lab_wait_users 2 || fail "the two readers do not read"
    sleep 2          # under way before iotriage starts
}
stop_load() {
    kill "$SYNC" "$DEEP" 2>/dev/null
    wait "$SYNC" "$DEEP" 2>/dev/null
}

# One lab disk of $1 threads, the load, and iotriage's first full interval of it, in R
# (from the main shell: lab_up's traps must be this shell's): "saturated source busy_depth depth depth_sd elasticity sync-role deep-role".
run_case() {
    lab_up 1500 "$1" 64 || exit $?
    echo none >"/sys/block/$LAB_NAME/queue/scheduler" || fail "cannot select none"
    start_load
    "$ROOT/iotriage" --json -n 1 -o >"$TMP/s.json" || fail "iotriage failed ($1 threads)"
    stop_load
    R=$(jq -r --arg d "$LAB_NAME" --argjson s "$SYNCW" --argjson p "$DEEPW" '
        [ (.lens.on | tostring), (.devices[] | select(.name == $d) |
            (.saturated | tostring), (.saturated_source | tostring),
            (.stages | .busy_depth, .depth, .depth_sd, .elasticity | tostring)),
          ([.processes[] | select(.pid == $s) | .role] | first | tostring),
          ([.processes[] | select(.pid == $p) | .role] | first | tostring) ] | @tsv' "$TMP/s.json")
    lab_down
}

# ---- FIFO: 3 at once ----
run_case 3; r=$R
IFS=$'\t' read -r on sat src busy depth sd el rs rd <<<"$r"
[ "$on" = true ] || fail "the lens is off: $(jq -r .lens.reason "$TMP/s.json")"
between "$busy" 10 20 || fail "FIFO: $busy at the device on average (want about 17): $r"
[ "$sat $src" = "true lens" ] || fail "FIFO: not saturated by the lens in the first interval: $r"
[ "$rs" = suffer ] || [ "$rs" = both ] || fail "FIFO: sync reader's role $rs (want suffer): $r"
case $rd in cause|both) ;; *) fail "FIFO: deep reader's role $rd (want cause): $r" ;; esac
ok "FIFO, 3 at once: saturated (lens) in the first interval, busy $busy, depth $depth sd $sd, elasticity $el; sync $rs, deep $rd"

# ---- free slots: 32 at once, the same load ----
run_case 32; r=$R
IFS=$'\t' read -r on sat src busy depth sd el rs rd <<<"$r"
between "$busy" 10 20 || fail "free slots: $busy at the device on average (want about 17): $r"
[ "$sat" != true ] || fail "free slots: called saturated ($src) in the first interval: $r"
case $rd in cause|both) fail "free slots: deep reader called a cause: $r" ;; esac
awk -v e="$el" 'BEGIN { exit !(e == "null" || e < 0.25) }' ||
    fail "free slots: the device time grew with the depth (elasticity $el): $r"
ok "free slots, 32 at once: not called saturated ($sat, $src), busy $busy, depth $depth sd $sd, elasticity $el; sync $rs, deep $rd"
