#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Run the libFuzzer harnesses built by `make fuzz-build` (build/fuzz/fuzz/fuzz_NAME).
# Usage: tests/fuzz/run.sh SECONDS [NAME...]    (all harnesses when no NAME is given)
#   make fuzz-smoke   SECONDS=3: every harness, part of `make check` (test_fuzz_smoke.sh)
#   make fuzz         SECONDS=$(FUZZ_SECONDS), 60 by default
# Each harness runs for SECONDS (two at a time on two CPUs: FUZZ_JOBS), with a 5 s
# per-input timeout and a 2 GB memory limit, on the corpus build/fuzz/corpus/NAME (kept
# between runs, so it grows), seeded from tests/fuzz/seeds/NAME and from the fixtures under
# tests/fixtures/ that are inputs of that parser. A crash, a sanitizer report, a failed
# invariant, a timeout or running out of memory fails the run; the input is saved as
# build/fuzz/artifacts/NAME-crash-* (or -timeout-, -oom-) and its log is printed.
# Figures per harness (executions, coverage, corpus) go to build/fuzz/summary.txt.
set -u
cd "$(dirname "$0")/../.." || exit 2
secs=${1:?usage: tests/fuzz/run.sh SECONDS [NAME...]}
shift
work=build/fuzz
bin=$work/fuzz
jobs=${FUZZ_JOBS:-$(nproc 2>/dev/null || echo 2)}
names=("$@")
if [ ${#names[@]} -eq 0 ]; then
    for f in tests/fuzz/fuzz_*.c; do
        n=${f#tests/fuzz/fuzz_}
        names+=("${n%.c}")
    done
fi
mkdir -p "$work/artifacts" "$work/logs"

# Copy fixture files into corpus dir $1, each prefixed with the bytes $2 (printf format:
# the harnesses whose first bytes choose a mode).
seed_from() {
    local dir=$1 prefix=$2 f; shift 2
    for f in "$@"; do
        [ -f "$f" ] || continue
        { printf '%b' "$prefix"; cat "$f"; } >"$dir/fixture-$(printf '%s %s' "$prefix" "$f" | cksum | cut -d' ' -f1)"
    done
}

prepare() {
    local name=$1 c=$work/corpus/$1
    mkdir -p "$c"
    case $name in
    diskstats) seed_from "$c" '' tests/fixtures/diskstats/* tests/fixtures/root1/proc/diskstats ;;
    psi)       seed_from "$c" '' tests/fixtures/psi/* tests/fixtures/root1/proc/pressure/* ;;
    procio)    seed_from "$c" '' tests/fixtures/root1/proc/self/io ;;
    procstat)  mapfile -t fs < <(find tests/fixtures -type f -name stat -path '*/proc/*')
               seed_from "$c" '' "${fs[@]}" ;;
    sched)     mapfile -t fs < <(find tests/fixtures -type f -name scheduler)
               seed_from "$c" '' "${fs[@]}" ;;
    inflight)  mapfile -t fs < <(find tests/fixtures -type f -name inflight)
               seed_from "$c" '' "${fs[@]}" ;;
    majmin)    mapfile -t fs < <(find tests/fixtures -type f -name dev)
               seed_from "$c" '' "${fs[@]}" ;;
    taskstats) seed_from "$c" '\000' tests/fixtures/taskstats/*.bin
               seed_from "$c" '\001' tests/fixtures/taskstats/*.bin ;;
    replay)    seed_from "$c" '' tests/fixtures/replay/*.jsonl ;;
    trials)    seed_from "$c" '\000' tests/fixtures/trials/*.jsonl
               seed_from "$c" '\200' tests/fixtures/trials/*.jsonl ;;
    json)      seed_from "$c" '\000' tests/fixtures/replay/*.jsonl
               seed_from "$c" '\001' tests/fixtures/replay/*.jsonl ;;
    cgroup)    seed_from "$c" '\000' $(find tests/fixtures/cgroup -name mountinfo)
               seed_from "$c" '\001' $(find tests/fixtures/cgroup -name cgroup -path '*/proc/*')
               seed_from "$c" '\002' $(find tests/fixtures/cgroup -name io.stat)
               seed_from "$c" '\003' $(find tests/fixtures/cgroup -name io.max)
               seed_from "$c" '\004\001' $(find tests/fixtures/cgroup -name 'blkio.throttle.*')
               seed_from "$c" '\005' $(find tests/fixtures/cgroup -name 'io*weight')
               seed_from "$c" '\006' $(find tests/fixtures/cgroup -name io.cost.qos)
               seed_from "$c" '\007' $(find tests/fixtures/cgroup -name io.prio.class) ;;
    units)     mapfile -t fs < <(find tests/fixtures/units -type f)
               seed_from "$c" '\000' "${fs[@]}"
               seed_from "$c" '\001' "${fs[@]}" ;;
    esac
}

dict_of() {
    case $1 in
    esc_display|esc_json) echo tests/fuzz/esc.dict ;;
    *) [ -f "tests/fuzz/$1.dict" ] && echo "tests/fuzz/$1.dict" ;;
    esac
}

maxlen_of() {
    case $1 in
    diskstats|units) echo 16384 ;;
    replay|json|trials) echo 65536 ;;
    majmin) echo 128 ;;
    inflight) echo 256 ;;
    *) echo 4096 ;;
    esac
}

# Run one harness; its exit status says whether it found anything.
run_one() {
    local name=$1 exe=$bin/fuzz_$1 log=$work/logs/$1.log dict args=()
    [ -x "$exe" ] || { echo "fuzz: $exe not built (make fuzz-build)" >"$log"; return 2; }
    prepare "$name"
    dict=$(dict_of "$name")
    [ -n "$dict" ] && args+=("-dict=$dict")
    ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:symbolize=1 \
    UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
        "$exe" "${args[@]}" -max_total_time="$secs" -timeout=5 -rss_limit_mb=2048 \
        -max_len="$(maxlen_of "$name")" -error_exitcode=1 -timeout_exitcode=1 \
        -print_final_stats=1 -artifact_prefix="$work/artifacts/$name-" \
        "$work/corpus/$name" "tests/fuzz/seeds/$name" >"$log" 2>&1
}

pids=() pnames=()
rc=0
reap() {     # wait for the oldest running harness
    local p=${pids[0]} n=${pnames[0]}
    pids=("${pids[@]:1}") pnames=("${pnames[@]:1}")
    if wait "$p"; then
        :
    else
        rc=1
        echo "FUZZ FAIL $n (log $work/logs/$n.log)"
        grep -E 'ERROR|runtime error|invariant failed|Test unit written|SUMMARY' \
            "$work/logs/$n.log" | head -n 20 | sed 's/^/    | /'
    fi
}
for n in "${names[@]}"; do
    [ ${#pids[@]} -ge "$jobs" ] && reap
    run_one "$n" &
    pids+=($!) pnames+=("$n")
done
while [ ${#pids[@]} -gt 0 ]; do reap; done

# Figures: executions, coverage, corpus size.
{
    printf '# %s, %s s per harness\n' "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$secs"
    printf '%-12s %12s %10s %8s %8s\n' harness execs exec/s cov corpus
    for n in "${names[@]}"; do
        l=$work/logs/$n.log
        ex=$(sed -n 's/^stat::number_of_executed_units: *//p' "$l" | tail -n 1)
        es=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$l" | tail -n 1)
        cov=$(grep -Eo 'cov: [0-9]+' "$l" | tail -n 1 | cut -d' ' -f2)
        corp=$(grep -Eo 'corp: [0-9]+' "$l" | tail -n 1 | cut -d' ' -f2)
        printf '%-12s %12s %10s %8s %8s\n' "$n" "${ex:--}" "${es:--}" "${cov:--}" "${corp:--}"
    done
} >"$work/summary.txt"
cat "$work/summary.txt"
[ "$rc" -eq 0 ] && echo "fuzz: ${#names[@]} harnesses, ${secs} s each: no crash, no report, no hang"
exit "$rc"
