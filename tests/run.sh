#!/usr/bin/env bash
# The test runner behind `make check`. Runs, in order:
#   unit         build/tests/test_*          cmocka unit tests on fixtures (tests/unit/)
#   integration  tests/integration/test_*.sh real processes, the lab disk, the binary
# Protocol of every test: exit 0 pass, 77 skipped (it says why), anything else fail.
# A skipped test is reported as skipped, never as passed. The last line is the summary.
# Usage: tests/run.sh [unit|integration|all] [NAME-FILTER]
set -u
cd "$(dirname "$0")/.." || exit 2
# No test reads or writes the devices' levels remembered on this machine (record/state.h);
# a test that needs the file names its own.
export IOTRIAGE_STATE_FILE=
what=${1:-all}
filter=${2:-}
pass=0 fail=0 skip=0
failed=()
logdir=build/test-logs
mkdir -p "$logdir"

run_one() {
    local name=$1; shift
    [ -n "$filter" ] && [[ $name != *"$filter"* ]] && return
    local log="$logdir/${name//\//_}.log" start end rc
    start=$(date +%s.%N)
    "$@" >"$log" 2>&1
    rc=$?
    end=$(date +%s.%N)
    local secs
    secs=$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.1f", b - a }')
    case $rc in
    0)  pass=$((pass + 1)); printf 'PASS  %-40s %6ss\n' "$name" "$secs" ;;
    77) skip=$((skip + 1)); printf 'SKIP  %-40s %6ss  %s\n' "$name" "$secs" "$(tail -n 1 "$log")" ;;
    *)  fail=$((fail + 1)); failed+=("$name")
        printf 'FAIL  %-40s %6ss  (exit %d; log %s)\n' "$name" "$secs" "$rc" "$log"
        sed 's/^/      | /' "$log" | tail -n 40 ;;
    esac
}

if [ "$what" = unit ] || [ "$what" = all ]; then
    for t in build/tests/test_*; do
        [ -x "$t" ] || continue
        run_one "unit/$(basename "$t")" "$t"
    done
fi
if [ "$what" = integration ] || [ "$what" = all ]; then
    for t in tests/integration/test_*.sh; do
        [ -x "$t" ] || continue
        run_one "integration/$(basename "$t" .sh)" "$t"
    done
fi

echo
[ ${#failed[@]} -gt 0 ] && echo "failed: ${failed[*]}"
echo "$pass passed, $fail failed, $skip skipped"
[ "$fail" -eq 0 ]
