#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# How tasks are listed (source/procs.h, "How tasks are listed"): /proc is read whole once,
# then only from the pid the kernel allocated last, the rest of the list carried over.
# Nothing may be missed or kept: a process started between two samples is in the first
# sample taken after it, one that exited is gone from the first sample after its exit, and
# the processes that were there all along are in every sample. And the saving must be
# real: after the first sample, the readdirs of /proc return fewer entries in all than
# one whole listing does. In threads mode the same for a new thread, found by asking the
# new ids for their thread group, and the task directories are not read every time.
. "$(dirname "$0")/lib.sh"
need strace
# The /proc path's listing: the BPF task iterator (source/taskiter.h), where it loads,
# reads no directory (test_taskiter.sh covers it).
export IOTRIAGE_TASKITER=0

# The kernel's pid counter must not wrap while the sampling runs: a wrap is one of the
# times /proc is rightly read whole again (and pid_max is 32,768 on some machines, where
# a test suite goes round it in minutes). When fewer than 6,000 pids are left before
# it, go round it first (about 5 s of short processes).
pid_max=$(cat /proc/sys/kernel/pid_max)
last_pid() { awk '{ print $5 }' /proc/loadavg; }
if [ $((pid_max - $(last_pid))) -lt 6000 ]; then
    start=$(last_pid) rounds=0
    while [ "$(last_pid)" -ge "$start" ] && [ $((rounds += 1)) -le 100 ]; do
        for _ in $(seq 200); do /bin/true; done
    done
fi
pid0=$(last_pid)
# Enough processes that a whole listing and a range listing cannot be confused.
N=300
olds=()
for _ in $(seq "$N"); do bg sleep 600; olds+=("$BG"); done

strace -qq -f -y --seccomp-bpf -e trace=getdents64 -o "$TMP/trace" \
    "$IOT" --json -d 0.3 -n 14 >"$TMP/l.json" 2>"$TMP/err" &
iot=$!
# Paced by the samples written, not by the clock: start-up takes longer on a slow machine.
OUT=$TMP/l.json
samples() { wc -l <"$OUT"; }
until_samples() {
    local i
    for i in $(seq 300); do [ "$(samples)" -ge "$1" ] && return; sleep 0.05; done
    fail "iotriage wrote $(samples) samples in 15 s"
}
until_samples 2
news=()
for _ in 1 2 3 4 5; do bg sleep 600; news+=("$BG"); done
t_new=$(date +%s.%N)
until_samples 6
kill "${news[0]}" "${news[1]}"
wait "${news[0]}" "${news[1]}" 2>/dev/null
t_gone=$(date +%s.%N)
wait "$iot" || fail "iotriage failed: $(cat "$TMP/err")"
echo "started at $t_new, killed at $t_gone; samples at $(jq -r .ts "$TMP/l.json" | tr '\n' ' ')"

[ "$(wc -l <"$TMP/l.json")" = 14 ] || fail "$(wc -l <"$TMP/l.json") samples, not 14"
# One jq pass over the samples (a jq a check was 130 runs over 300-process lines): per
# sample its time, how many of the N sleepers it lists, and for each new one (started
# after sample 2, the first two killed after sample 6) whether it is listed: 1 or 0.
jq -r --argjson o "$(printf '%s\n' "${olds[@]}" | jq -s .)" --argjson n "$(printf '%s\n' "${news[@]}" | jq -s .)" \
    '[.processes[].pid] as $ps | "\(.ts) \([$o[] | select(. as $x | $ps | index($x))] | length) \([$n[] | . as $x | if ($ps | index($x)) then 1 else 0 end] | map(tostring) | join(""))"' \
    "$TMP/l.json" >"$TMP/sum" || fail "jq over the samples: $(head -c 300 "$TMP/l.json")"
after_new=0 after_gone=0 i=0
while read -r ts present bits; do
    i=$((i + 1))
    [ "$present" = "$N" ] || fail "sample $i lists $present of the $N sleepers"
    if between "$ts" "$t_new" 1e12; then
        after_new=$((after_new + 1))
        [ "${bits:2:3}" = 111 ] || fail "sample $i (ts $ts) lacks a new sleeper started at $t_new (${news[*]:2}: $bits)"
    fi
    if between "$ts" "$t_gone" 1e12; then
        after_gone=$((after_gone + 1))
        [ "${bits:0:2}" = 00 ] || fail "sample $i (ts $ts) still lists ${news[*]:0:2}, gone at $t_gone ($bits)"
    fi
done <"$TMP/sum"
[ "$i" = 14 ] || fail "$i samples summed, not 14"
[ "$after_new" -ge 3 ] && [ "$after_gone" -ge 3 ] ||
    fail "too few samples after the changes ($after_new, $after_gone): the timing went wrong"
ok "$N sleepers in all 14 samples; 5 new ones in the $after_new samples after their start, 2 killed ones absent from the $after_gone after their exit"

# Entries each readdir of /proc itself returned, in order (strace -y names the fd).
grep -F '</proc>,' "$TMP/trace" | sed -n 's|.*/\* \([0-9]*\) entries \*/.*|\1|p' >"$TMP/counts"
first=$(awk '{ s += $1 } s > 0 && $1 == 0 { print s; exit }' "$TMP/counts")
total=$(awk '{ s += $1 } END { print s }' "$TMP/counts")
[ -n "$first" ] && [ "$first" -gt "$N" ] || fail "the first listing returned ${first:-no} entries"
rest=$((total - first))
[ "$rest" -lt "$first" ] ||
    fail "13 later samples read $rest /proc entries, one whole listing $first: /proc is read whole each time (readdirs: $(tr '\n' ' ' <"$TMP/counts"); last pid $pid0 before the run, $(last_pid) after, pid_max $pid_max)"
ok "/proc entries read: $first for the first sample, $rest for the 13 after it"

# Threads mode: a process of 6 threads started between samples is listed whole (all 6
# tids) in every sample after it; the threads of the sleepers are not read again.
OUT=$TMP/t.json
tpid0=$(last_pid)
strace -qq -f -y --seccomp-bpf -e trace=getdents64 -o "$TMP/ttrace" \
    "$IOT" --json -P -d 0.3 -n 10 >"$OUT" 2>"$TMP/err" &
iot=$!
until_samples 2
bg "$HELPER" threads 6 600; th=$BG
wait_threads "$th" 6      # (was 2 s; with strace'd iotriage beside it)
tids=$(ls "/proc/$th/task" | sort -n | tr '\n' ' ')
[ "$(echo $tids | wc -w)" = 6 ] || fail "the helper has threads $tids"
t_th=$(date +%s.%N)
wait "$iot" || fail "iotriage -P failed: $(cat "$TMP/err")"
tpid1=$(last_pid)
[ "$(samples)" = 10 ] || fail "$(samples) samples in threads mode, not 10"
after=0
for i in $(seq 10); do
    line=$(sed -n "${i}p" "$OUT")
    ts=$(jq -r .ts <<<"$line")
    between "$ts" "$t_th" 1e12 || continue
    after=$((after + 1))
    got=$(jq -r --argjson p "$th" '[.processes[] | select(.tgid == $p) | .pid] | sort | map(tostring) | join(" ")' <<<"$line")
    [ "$got " = "$tids" ] || fail "sample $i (ts $ts) lists threads [$got] of $th, which has [$tids]"
    present=$(jq '[.processes[] | select(.tgid == .pid)] | length' <<<"$line")
    [ "$present" -gt "$N" ] || fail "sample $i lists $present processes"
done
[ "$after" -ge 3 ] || fail "only $after samples after the threads started"
# Task directories read: every process's in the first sample, few or none after it.
# (getdents64 lines of /proc/PID/task; the first whole listing ends with the first empty
# getdents64 of /proc itself)
total_dirs=$(grep -cE '</proc/[0-9]+/task>,' "$TMP/ttrace")
first_dirs=$(awk '/<\/proc>,/ && / 0 entries/ { exit } /<\/proc\/[0-9]+\/task>,/ { n++ } END { print n + 0 }' "$TMP/ttrace")
rest_dirs=$((total_dirs - first_dirs))
[ "$first_dirs" -gt "$N" ] || fail "the first threads-mode listing read $first_dirs task directories"
# A refresh probes the pids allocated since the one before the last (src/source/
# procs_list.c: probe_range, at most PROBE_MAX 64 of them, else one whole listing is the
# cheaper read); the machine's other work may allocate more (a parallel build beside the
# test did, in a CI run: 3094 task directories after a first listing of 774). Each 65
# pids allocated can thus make at most two refreshes list whole: that many are allowed,
# no more. On a quiet machine none is.
moved=$(( ${tpid1:-0} - ${tpid0:-0} ))
[ "$moved" -ge 0 ] || moved=0        # the counter wrapped: no bound from it
wholes=$(( 2 * (moved / 65) ))
[ "$wholes" -le 9 ] || wholes=9
[ "$rest_dirs" -lt $(( (wholes + 1) * first_dirs )) ] ||
    fail "9 later samples read $rest_dirs task directories, the first $first_dirs: listed whole each time ($moved pids allocated meanwhile: at most $wholes whole listings explained)"
ok "threads: the 6 tids of a new process in the $after samples after its start; task directories read $first_dirs times for the first sample, $rest_dirs after ($moved pids allocated meanwhile)"
