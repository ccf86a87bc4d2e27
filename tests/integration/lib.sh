# SPDX-License-Identifier: GPL-2.0-or-later
# shellcheck shell=bash
# Shared by the integration tests: paths, assertions, background-process cleanup.
# Source it first: . "$(dirname "$0")/lib.sh"
set -u
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
IOT="$ROOT/iotriage"
# Tests judge saturation from what they see, not from a recorder's levels on this machine.
export IOTRIAGE_RECORD_DIR=
# ... nor from the levels earlier runs remembered (store/state.h): "" turns that off, so
# no test reads or writes the real state file; a test that needs one names its own.
export IOTRIAGE_STATE_FILE=
HELPER="$ROOT/build/tests/taskhelper"
TMP=$(mktemp -d /tmp/iotriage-test.XXXXXX)
BG_PIDS=()

# Stop what the test started in the background (before unmounting or detaching what
# those processes may still use), then remove the scratch directory.
it_kill_bg() {
    local p
    # Their children first: a `bash -c 'sleep 120; :'` helper forks its sleep, which
    # killing the shell alone left running, adopted by init, past the test's end.
    for p in "${BG_PIDS[@]:-}"; do
        [ -n "$p" ] && pkill -P "$p" 2>/dev/null
        [ -n "$p" ] && kill "$p" 2>/dev/null
    done
    for p in "${BG_PIDS[@]:-}"; do [ -n "$p" ] && wait "$p" 2>/dev/null; done
    BG_PIDS=()
}
it_cleanup() {
    it_kill_bg
    rm -rf "$TMP"
}
trap it_cleanup EXIT

fail() { echo "FAIL: $*" >&2; exit 1; }
skip() { echo "skipped: $*" >&2; exit 77; }
ok()   { echo "ok: $*"; }

# Start a command in the background, remember it for cleanup; its pid is in $BG.
bg() { "$@" & BG=$!; BG_PIDS+=("$BG"); }

# Waiting for a background process to be what a check needs. The pid bg gives is first a
# fork of the test's own shell (its comm and command line, nice 0, no files of its own),
# then each program it execs in turn (nice, ionice, chrt, bash -c ... exec -a, then the
# last one): its name, priority and open files are settled only once the last exec is
# done and the program has got where it stays. On a loaded machine that can take
# seconds; a fixed sleep before the check is a race.
# wait_until SECONDS CMD...: until CMD succeeds (polled every 50 ms); 1 after SECONDS, so
# that the caller fails with what it saw: `wait_until 20 cond || fail "...$(state)"`.
# CMD runs inside this function: an `eval '...'` there sees the caller's variables (its
# locals too) but not the caller's $1, $2...: copy those into variables first.
wait_until() {
    local _wu_end=$((SECONDS + $1)); shift
    until "$@"; do
        [ "$SECONDS" -lt "$_wu_end" ] || return 1
        sleep 0.05
    done
}
# proc_is_sleep PID: PID is sleep(1), asleep in its nanosleep: every exec before it done,
# and its start-up over (the dynamic loader and setlocale hold files open for a moment).
proc_is_sleep() {
    [ "$(cat "/proc/$1/comm" 2>/dev/null)" = sleep ] && grep -q nanosleep "/proc/$1/wchan" 2>/dev/null
}
# proc_holds PID PATH: one of PID's open files is PATH (as /proc/PID/fd links name it).
proc_holds() {
    local f
    for f in /proc/"$1"/fd/*; do
        [ "$(readlink "$f" 2>/dev/null)" = "$2" ] && return 0
    done
    return 1
}
# proc_threads PID N: PID has N threads.
proc_threads() { [ "$(ls "/proc/$1/task" 2>/dev/null | wc -l)" = "$2" ]; }
# proc_state PID: "comm, wchan, threads, cmdline" for a message when a wait times out.
proc_state() {
    printf '%s, wchan %s, %s threads, cmdline %s' "$(cat "/proc/$1/comm" 2>/dev/null || echo gone)" \
        "$(cat "/proc/$1/wchan" 2>/dev/null)" "$(ls "/proc/$1/task" 2>/dev/null | wc -l)" \
        "$(tr '\0' ' ' <"/proc/$1/cmdline" 2>/dev/null | cut -c1-120)"
}
# wait_sleep PID...: each PID is a sleep(1) asleep (20 s at most, then the test fails).
wait_sleep() {
    local p
    for p; do
        wait_until 20 proc_is_sleep "$p" || fail "process $p never settled in sleep(1): $(proc_state "$p")"
    done
}
# wait_holds PID PATH: PID has PATH open (20 s at most, then the test fails).
wait_holds() {
    wait_until 20 proc_holds "$1" "$2" ||
        fail "process $1 never opened $2: $(proc_state "$1"); fds: $(ls -l "/proc/$1/fd" 2>/dev/null | awk 'NR > 1 { print $NF }' | tr '\n' ' ')"
}
# wait_threads PID N: PID runs N threads (20 s at most, then the test fails).
wait_threads() {
    wait_until 20 proc_threads "$1" "$2" || fail "process $1 never had $2 threads: $(proc_state "$1")"
}

need() { command -v "$1" >/dev/null 2>&1 || skip "$1 not installed (scripts/deps.sh test)"; }
# churn_lock: held until the test exits, by the tests that churn pids (test_soak_smoke:
# 400 forks a second, pids coming round every second or two) and those a reused pid
# would fool (test_taskiter, in the background lane: "every process /proc listed before
# and after a sample is in it"). The two never run at once, whichever lane they are in.
churn_lock() {
    exec {CHURN_FD}>"$ROOT/build/.churn.lock" && flock "$CHURN_FD"
}

# sched_offered DEV NAME: the queue of block device DEV (loop0, not /dev/loop0) offers
# the I/O scheduler NAME (/sys/block/DEV/queue/scheduler lists it, active or not). bfq is
# not offered everywhere: a kernel without it (CONFIG_IOSCHED_BFQ off, no module) lists
# "none mq-deadline kyber", and writing bfq there fails with EINVAL. A test's bfq cases
# run only where it is offered; where it is not, the test says so with skip_part and
# goes on with its other cases (a test that is all bfq skips: exit 77). The VM lane (a
# kernel that has bfq) runs them.
sched_offered() {
    local s
    for s in $(tr -d '[]' 2>/dev/null <"/sys/block/$1/queue/scheduler"); do
        [ "$s" = "$2" ] && return 0
    done
    return 1
}
NO_BFQ="bfq not offered by this kernel (the VM lane covers it)"
# skip_part WHAT: one line saying that part of the test did not run here, and why
# (WHAT ends with the reason, e.g. "bfq's level weights: $NO_BFQ").
skip_part() { echo "skipped part: $*"; }

# without_lib LIB CMD...: CMD in a mount namespace of its own where the shared library LIB
# is bound over by an empty file, as on a machine without it.
without_lib() { local lib=$1; shift; unshare -m sh -c 'mount --bind /dev/null "$0" && exec "$@"' "$lib" "$@"; }

# A copy of an executable that an unprivileged user can run, wherever the checkout is:
# a clone in /root or in a Debian home directory (mode 0700) cannot be entered by nobody.
# Prints the copy's path ($TMP/for-nobody/NAME; $TMP is opened to others for it).
for_nobody() { # for_nobody FILE
    local d="$TMP/for-nobody"
    mkdir -p "$d" && chmod 755 "$TMP" "$d" && cp "$1" "$d/" && chmod 755 "$d/$(basename "$1")" ||
        fail "cannot copy $1 for the unprivileged user"
    echo "$d/$(basename "$1")"
}

# jq on a file, failing the test on a jq error (invalid JSON is a failure, not a skip).
jqf() { jq -e "$@" || fail "jq $* returned false/invalid"; }
# scratch_fs TYPE SIZE [MKFS-OPTION...]: a new TYPE filesystem of SIZE (truncate's units)
# on a loop device over a file in /dev/shm, mounted on $TMP/mnt; sets MNT, LOOP, LNAME.
# scratch_fs_down, from the test's EXIT trap, unmounts (retrying while a writer lets
# go), detaches and removes whatever of it was made.
scratch_fs() {
    SCRATCH=$(mktemp -d /dev/shm/iotriage-scratch.XXXXXX) || fail "no /dev/shm"
    MNT=$TMP/mnt
    truncate -s "$2" "$SCRATCH/disk" || fail "no room in /dev/shm"
    LOOP=$(losetup -f --show "$SCRATCH/disk") || skip "no free loop device"
    LNAME=${LOOP#/dev/}
    "mkfs.$1" -q "${@:3}" "$LOOP" >/dev/null 2>&1 || fail "mkfs.$1 $LOOP"
    mkdir -p "$MNT"
    mount "$LOOP" "$MNT" || fail "mount $1"
}
scratch_fs_down() {
    local i
    if [ -n "${MNT:-}" ]; then
        for i in $(seq 20); do
            mountpoint -q "$MNT" 2>/dev/null || break
            umount "$MNT" 2>/dev/null && break
            sleep 0.5
        done
        mountpoint -q "$MNT" 2>/dev/null && echo "cleanup: $MNT still mounted" >&2
    fi
    [ -n "${LOOP:-}" ] && losetup -d "$LOOP" 2>/dev/null
    [ -n "${SCRATCH:-}" ] && rm -rf "$SCRATCH"
}
# last_record FILE: the last whole JSON line of a recording or --json output still being
# written (its last line may be cut where the writer is; empty when none is whole yet).
last_record() { tail -n 3 "$1" 2>/dev/null | jq -cR 'fromjson? // empty' 2>/dev/null | tail -n 1; }

# Float comparison: within REL (fraction) of EXPECTED.
near() { # near VALUE EXPECTED REL
    awk -v v="$1" -v e="$2" -v r="$3" 'BEGIN { d = v - e; if (d < 0) d = -d; exit !(d <= r * (e < 0 ? -e : e)) }'
}
# between VALUE LO HI
between() { awk -v v="$1" -v lo="$2" -v hi="$3" 'BEGIN { exit !(v >= lo && v <= hi) }'; }

[ -x "$IOT" ] || fail "$IOT not built (make)"
need jq
