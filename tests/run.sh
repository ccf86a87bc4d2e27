#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The test runner behind `make check`. Runs, in order:
#   unit         build/tests/test_*          cmocka unit tests on fixtures (tests/unit/)
#   integration  tests/integration/test_*.sh real processes, the lab disk, the binary
# Protocol of every test: exit 0 pass, 77 skipped (it says why), anything else fail.
# A skipped test is reported as skipped, never as passed. The last line is the summary.
# Usage: tests/run.sh [unit|integration|all] [NAME-FILTER]
#
# The background lane. The integration tests in LANE are builds, CPU work and the VM lane
# (its guest's devices, cgroups and sysctls are the guest's own) that share no machine
# state with the others (no loop device, tmux server, sysctl or /proc count
# they depend on; their compilers do show in the process lists the others' screens
# draw, as ordinary be/4 processes): they run one after the other in a subshell while the
# other tests run in order in the foreground. Their lines are printed, in LANE's order,
# after the last foreground line, and counted in the summary like the others; a lane that
# did not report counts as a failure. On a full run (no NAME-FILTER) the lane first
# builds, for the tests that build them, build/ro (make readonly) and build/san (make
# san); those tests take the same lock (build/.NAME.lock) and find them made.
set -u
cd "$(dirname "$0")/.." || exit 2
# No test reads or writes the devices' levels remembered on this machine (store/state.h);
# a test that needs the file names its own.
export IOTRIAGE_STATE_FILE=
what=${1:-all}
filter=${2:-}
pass=0 fail=0 skip=0
failed=()
logdir=build/test-logs
mkdir -p "$logdir"
# test_deb runs in make check-deb only (below); not in the lane either, though it builds
# in its own directory and installs only in a throw-away root: its debian/tests validate samples of the whole machine, and next to other tests'
# processes they twice met a sample jq refused ("Invalid escape", not reproduced alone
# since; docs/reliability.md, the Debian package). In the foreground (about 45 s) the
# processes it sees are its own and the lane's.
# After the VM and the builds, the tests that read only their own files and runs (the
# tree, the binary's links, replays and recordings of their own, an exporter on a port of
# its own): none changes a device, a sysctl or delay accounting, or counts processes.
# Not test_san_suite: its screen checks that a cancelled dialog changed no device's
# scheduler, and beside the foreground's lab disks one did (a rehearsal). test_taskiter
# last: its processes and its own are the only ones it judges, their labels have no file
# on a disk (no verdict on the foreground's screens), and it never runs beside
# test_soak_smoke's pid churn (churn_lock, lib.sh).
LANE=(test_vm test_vm_backports test_vm_selftest test_build_clang test_fuzz_smoke
      test_licence test_libs test_docs_perf test_bash_completion test_export_edges test_record_run
      test_cli test_store_faults test_replay_roundtrip test_replay_store test_gate test_taskiter)
in_lane() { local l; for l in "${LANE[@]}"; do [ "$l" = "$1" ] && return 0; done; return 1; }

run_one() {
    local name=$1; shift
    [ -n "$filter" ] && [[ $name != *"$filter"* ]] && return
    local log="$logdir/${name//\//_}.log" start end rc
    start=$(date +%s.%N)
    # Every test starts with the default signal dispositions, whatever its caller ignored:
    # run under nohup, the helpers that tests send SIGHUP to ignored it, and the fs
    # actions rightly said "ignores SIGHUP" where the tests wait for a handler or a kill.
    env --default-signal "$@" >"$log" 2>&1
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

lane_pid=
if [ "$what" = integration ] || [ "$what" = all ]; then
    lane_out=$logdir/lane.out lane_status=$logdir/lane.status
    rm -f "$lane_out" "$lane_status"
    (
        # Not niced: a nice 10 process has I/O priority be/6, and the screens of the
        # foreground tests then list the lane's compilers with ioprio warnings on vda
        # (test_actions_sched waited in vain behind them for its own fio's warning).
        pass=0 fail=0 skip=0 failed=()
        if [ -z "$filter" ]; then
            flock build/.ro.lock make -s -j"$(nproc 2>/dev/null || echo 2)" readonly \
                >"$logdir/lane-prebuild-ro.log" 2>&1
            flock build/.san.lock make -s -j"$(nproc 2>/dev/null || echo 2)" san \
                >"$logdir/lane-prebuild-san.log" 2>&1
        fi
        for n in "${LANE[@]}"; do
            t=tests/integration/$n.sh
            [ -x "$t" ] || continue
            run_one "integration/$n" "$t"
        done
        echo "$pass $fail $skip ${failed[*]}" >"$lane_status"
    ) </dev/null >"$lane_out" 2>&1 &
    lane_pid=$!
    # An interrupted run takes the lane down with it (its commands ignore SIGINT, as a
    # non-interactive shell's background commands do): the whole tree, children first.
    kill_tree() { local c; for c in $(pgrep -P "$1"); do kill_tree "$c"; done; kill "$1" 2>/dev/null; }
    trap 'kill_tree "$lane_pid"; exit 130' INT TERM
fi

if [ "$what" = unit ] || [ "$what" = all ]; then
    for t in build/tests/test_*; do
        [ -x "$t" ] || continue
        run_one "unit/$(basename "$t")" "$t"
    done
fi
if [ "$what" = integration ] || [ "$what" = all ]; then
    for t in tests/integration/test_*.sh; do
        [ -x "$t" ] || continue
        in_lane "$(basename "$t" .sh)" && continue
        # The package's test is make check-deb's (first in .ci/run, with nothing else
        # running): its build would share the CPUs with the VM lane here, and make check
        # keeps within its time (issue #38 allows either). Named, it runs.
        [ "$(basename "$t" .sh)" = test_deb ] && [ -z "$filter" ] && continue
        run_one "integration/$(basename "$t" .sh)" "$t"
    done
fi
if [ -n "$lane_pid" ]; then
    wait "$lane_pid"
    trap - INT TERM
    cat "$lane_out"
    if read -r lp lf ls lfailed 2>/dev/null <"$lane_status"; then
        pass=$((pass + lp)) fail=$((fail + lf)) skip=$((skip + ls))
        # shellcheck disable=SC2206  # test names have no blanks
        [ -n "$lfailed" ] && failed+=($lfailed)
    else
        fail=$((fail + 1)); failed+=("background-lane")
        echo "FAIL  the background lane (${LANE[*]}) did not report (log $lane_out)"
    fi
fi

echo
[ ${#failed[@]} -gt 0 ] && echo "failed: ${failed[*]}"
echo "$pass passed, $fail failed, $skip skipped"
[ "$fail" -eq 0 ]
