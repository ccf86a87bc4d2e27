#!/usr/bin/env bash
# The lens's per-task wait maps hold the tasks that waited on I/O, not the tasks there
# are (issue 19's memory): their kernel memory (the memlock the kernel reports in the
# map's fdinfo, what `make bench` counts) grows by an entry for each thread that blocks
# in iowait and shrinks again when those threads exit. On the lab disk (2 ms a request,
# 4 at once):
#  - while iotriage -P runs with the lens, a fio of 300 threads (one process) reads the
#    disk directly; waits_tid's memlock grows by at least 250 entries' keys and values
#    (a preallocated map would not move), and, with delay accounting off (the lens is
#    then the source), at least 250 of fio's threads read a wait from bpf: the reader
#    takes more entries than its first buffer holds (it grows with the maps' content);
#  - after fio exits, the memlock falls back by at least three quarters of that growth
#    (the exit program deletes a thread's entry).
# Kernels before 6.1 keep preallocated wait maps (lens.c: lens_wait_maps_lru): skipped.
. "$(dirname "$0")/lib.sh"
. "$ROOT/tests/lab/lab.sh"
need fio
need jq
need bpftool
[ "$(id -u)" = 0 ] || skip "needs root (BPF)"
[ -r /sys/kernel/btf/vmlinux ] || skip "no kernel BTF at /sys/kernel/btf/vmlinux"
[ -x "$IOT" ] || fail "build ./iotriage first"
IFS=. read -r KMAJ KMIN _ <<<"$(uname -r)"
[ "$KMAJ" -gt 6 ] || { [ "$KMAJ" = 6 ] && [ "${KMIN%%[!0-9]*}" -ge 1 ]; } ||
    skip "kernel $(uname -r) before 6.1: the wait maps are preallocated there"
DA_OFF=false
[ "$(sysctl -n kernel.task_delayacct 2>/dev/null)" = 0 ] && DA_OFF=true
lab_up 2000 4 64 || exit $?
IPID=
trap '[ -n "$IPID" ] && kill "$IPID" 2>/dev/null; it_kill_bg; lab_down; it_cleanup' EXIT

# The bytes_memlock of map $2 ("waits_tid") among process $1's BPF maps; empty when absent.
map_memlock() {
    local id
    for id in $(cat /proc/"$1"/fdinfo/* 2>/dev/null | awk '$1 == "map_id:" { print $2 }' | sort -u); do
        bpftool map show id "$id" -j 2>/dev/null |
            jq -r --arg n "$2" 'select(.name == $n) | .bytes_memlock'
    done | head -n 1
}
# Its key and value bytes (the least an entry can add).
map_entry_bytes() {
    local id
    for id in $(cat /proc/"$1"/fdinfo/* 2>/dev/null | awk '$1 == "map_id:" { print $2 }' | sort -u); do
        bpftool map show id "$id" -j 2>/dev/null |
            jq -r --arg n "$2" 'select(.name == $n) | .bytes_key + .bytes_value'
    done | head -n 1
}

"$IOT" --json -P -d 0.5 -n 120 >"$TMP/s.json" &
IPID=$!
M0=
wait_until 60 eval 'M0=$(map_memlock "$IPID" waits_tid); [ -n "$M0" ]' ||
    fail "no waits_tid map held by iotriage ($(head -c 300 "$TMP/s.json"))"
ENTRY=$(map_entry_bytes "$IPID" waits_tid)
[ "${ENTRY:-0}" -gt 0 ] || fail "waits_tid's key and value sizes unknown"
sleep 1
M0=$(map_memlock "$IPID" waits_tid)

fio --name=many --thread --numjobs=300 --filename="$LAB_DEV" --ioengine=psync --direct=1 \
    --bs=4k --rw=randread --time_based --runtime=6 --group_reporting >/dev/null &
FIO=$!; BG_PIDS+=("$FIO")
# fio's threads are up and reading once the disk has all 300 as waiters (each blocks in
# its read: the lab serves 4 at once); the memlock then holds them
M1=$M0
grow() { M1=$(map_memlock "$IPID" waits_tid); [ $((M1 - M0)) -ge $((250 * ENTRY)) ]; }
wait_until 30 grow ||
    fail "waits_tid memlock $M0 -> $M1 bytes with 300 threads waiting (want +$((250 * ENTRY)) or more: an entry of $ENTRY bytes each)"
ok "waits_tid: $M0 -> $M1 bytes of memlock with 300 threads waiting ($(( (M1 - M0) / 300 )) a thread)"

if $DA_OFF; then
    FPID=$FIO
    # the samples while fio runs: its threads with a wait from the lens
    want() {
        local n
        n=$(jq -r --argjson f "$FPID" '[.processes[]? | select(.tgid == $f and .io_delay_source == "bpf" and (.io_delay_pct // 0) > 0)] | length' "$TMP/s.json" |
            sort -n | tail -n 1)
        [ "${n:-0}" -ge 250 ]
    }
    wait_until 30 want ||
        fail "fewer than 250 of fio's 300 threads read a lens wait in any sample (most: $(jq -r --argjson f "$FPID" '[.processes[]? | select(.tgid == $f and .io_delay_source == "bpf" and (.io_delay_pct // 0) > 0)] | length' "$TMP/s.json" | sort -n | tail -n 1))"
    ok "250 or more of fio's threads read their wait from the lens in one sample"
else
    echo "note: delay accounting is on (someone else's): the per-thread source check is left out"
fi

wait "$FIO" 2>/dev/null
M2=$M1
shrink() { M2=$(map_memlock "$IPID" waits_tid); [ $((M1 - M2)) -ge $(( (M1 - M0) * 3 / 4 )) ]; }
wait_until 20 shrink ||
    fail "waits_tid memlock stayed at $M2 bytes after fio's threads exited (was $M0 before, $M1 with them)"
ok "waits_tid: back to $M2 bytes after the threads exited"
kill "$IPID" 2>/dev/null
wait "$IPID" 2>/dev/null
IPID=
