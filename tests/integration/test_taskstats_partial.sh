#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# A taskstats query that fails for one chunk of a sample's tasks leaves those tasks'
# delays unknown; the tasks of the chunks that were answered must not carry counters of
# 0 marked valid into the next sample, or that sample shows their whole lifetime's
# waiting as one interval's (a reader at 1,000 % or more, capped and marked overcount).
# Found in review: the sample zeroed every task's counters on any query error but kept
# their valid flag (snapshot.c, take_tasks).
#
# How: delay accounting on; more than GATE_CHUNK (512, source/procs_parts.h) idle processes so
# that a sample asks taskstats in two chunks; a synchronous O_DIRECT reader started after
# them (the highest pid: the second chunk) with seconds of block I/O wait behind it; the
# first recvmmsg of the run (the first sample's first chunk) fails with EIO
# (tests/fault/fault.c). The /proc path (IOTRIAGE_TASKITER=0): the task iterator carries
# the delays itself and asks no taskstats.
. "$(dirname "$0")/lib.sh"
. "$ROOT/tests/fault/lib_fault.sh"
export IOTRIAGE_TASKITER=0
[ -w /proc/sys/kernel/task_delayacct ] || skip "kernel.task_delayacct not writable here"
[ -x "$HELPER" ] || fail "build first: make build/tests/taskhelper"
need jq
fault_build || fail "cannot build $FAULT_SO"
orig=$(cat /proc/sys/kernel/task_delayacct)
trap 'it_kill_bg; echo "$orig" >/proc/sys/kernel/task_delayacct; it_cleanup' EXIT
echo 1 >/proc/sys/kernel/task_delayacct

# 600 sleepers, one process each (a pid each, below the reader's).
bg bash -c 'for i in $(seq 600); do sleep 300 & done; wait'
wait_until 30 eval '[ "$(pgrep -c -P '"$BG"' -x sleep)" -ge 600 ]' ||
    fail "600 sleepers did not start"
ntasks=$(awk '{ split($4, a, "/"); print a[2] }' /proc/loadavg)
[ "$ntasks" -gt 520 ] || fail "only $ntasks tasks: the sample would take one chunk"

# The reader: 4 KiB O_DIRECT reads of a file on the root filesystem, its delay accounting
# started with it (delay accounting was off for tasks started before).
file=/var/tmp/iotriage-partial.$$
dd if=/dev/urandom of="$file" bs=1M count=16 status=none || fail "cannot write $file"
trap 'it_kill_bg; rm -f "$file"; echo "$orig" >/proc/sys/kernel/task_delayacct; it_cleanup' EXIT
bg "$HELPER" dread "$file" 60
reader=$BG
# Wait until it has waited for its disk a good while: its lifetime blkio delay above 1 s
# (taskstats through iotriage itself would be circular; /proc/PID/stat field 42 is the
# same counter, delayacct_blkio_ticks, in clock ticks).
hz=$(getconf CLK_TCK)
blkio_s() { awk -v hz="$hz" '{ sub(/.*\) /, ""); print $40 / hz }' "/proc/$reader/stat" 2>/dev/null; }
wait_until 30 eval 'awk -v s="$(blkio_s)" "BEGIN { exit !(s > 1) }"' ||
    fail "the reader's block I/O delay stayed at $(blkio_s) s"
ok "reader $reader: $(blkio_s) s of block I/O wait so far, $ntasks tasks"

# 0.5 s intervals: a lifetime of more than 1 s shown as one interval's is over 200 %.
# (At 0.2 s, a CI run's loaded machine put the reader, waiting all the time, past the
# 3 % slack of the overcount flag in an answered sample: 6 ms between the taskstats
# reading and the sample's clock.)
log=$TMP/fault.log
fault_run 'recvmmsg:errno=EIO:count=1' "$log" "$IOT" --json -n 3 -d 0.5 \
    >"$TMP/out.jsonl" 2>"$TMP/err" || { cat "$TMP/err" >&2; fail "iotriage failed"; }
[ "$(fault_hits "$log")" = 1 ] || fail "the fault was met $(fault_hits "$log") times, not once"
[ "$(wc -l <"$TMP/out.jsonl")" = 3 ] || fail "$(wc -l <"$TMP/out.jsonl") samples, not 3"
# Every sample: the reader's share at most 100 % (one thread), never an overcount.
n=0
while read -r line; do
    n=$((n + 1))
    row=$(jq -c --argjson p "$reader" '[.processes[] | select(.pid == $p)][0] // empty' <<<"$line")
    [ -n "$row" ] || fail "sample $n: no row for the reader $reader"
    echo "sample $n: $row" | cut -c1-200
    jq -e '.delay_overcount != true' <<<"$row" >/dev/null ||
        fail "sample $n: the reader's lifetime delay shown as one interval's (overcount): $row"
    jq -e '.io_delay_pct == null or .io_delay_pct <= 100' <<<"$row" >/dev/null ||
        fail "sample $n: the reader at $(jq .io_delay_pct <<<"$row") % of one thread: $row"
done <"$TMP/out.jsonl"
# The last sample follows two answered ones: the reader's share is known there.
jq -e --argjson p "$reader" '[.processes[] | select(.pid == $p)][0].io_delay_pct > 0' \
    <(tail -n 1 "$TMP/out.jsonl") >/dev/null || fail "the last sample shows no delay for the reader"
ok "one failed taskstats chunk: the other chunk's tasks carried no zeros as valid into the next sample"
