# shellcheck shell=bash
# Shared by the integration tests: paths, assertions, background-process cleanup.
# Source it first: . "$(dirname "$0")/lib.sh"
set -u
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
IOT="$ROOT/iotriage"
# Tests judge saturation from what they see, not from a recorder's levels on this machine.
export IOTRIAGE_RECORD_DIR=
# ... nor from the levels earlier runs remembered (record/state.h): "" turns that off, so
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

need() { command -v "$1" >/dev/null 2>&1 || skip "$1 not installed (scripts/deps.sh test)"; }

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
