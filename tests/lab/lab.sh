# SPDX-License-Identifier: GPL-2.0-or-later
# shellcheck shell=bash
# The "known-truth lab disk": a loop block device with direct I/O on top of one
# file of slowfs (tests/lab/slowfs.c), a FUSE filesystem whose every request takes
# a fixed latency and of which at most THREADS run at once. So the device serves
# at most THREADS requests in parallel, each taking LATENCY_US: capacity is
# THREADS / LATENCY_US requests per second.
#
# Usage (bash, as root, after `make build/tests/slowfs`):
#
#   . "$(dirname "$0")/../lab/lab.sh"
#   lab_up 2000 4 64 || exit $?   # LATENCY_US THREADS SIZE_MB (these are the defaults)
#   fio --filename="$LAB_DEV" ...; echo mq-deadline > "/sys/block/$LAB_NAME/queue/scheduler"
#   lab_down                     # optional: it also runs when the script exits
#
# lab_up returns 0 when the disk is up, 77 when this machine cannot have one (not
# root, no /dev/fuse, no loop devices, slowfs not built, a tool missing) so a test
# can `exit 77` (skip), and 1 on any other failure (also when the loop device
# would not do direct I/O). It exports LAB_DEV (/dev/loopN), LAB_NAME (loopN),
# LAB_MNT (the slowfs mount point; the file is $LAB_MNT/disk.img, and $LAB_MNT/cached.img
# the same bytes read through FUSE's page cache: a buffered reader of a filesystem with
# no block device, as on NFS), LAB_LATENCY_US
# and LAB_THREADS. One lab at a time per shell.
#
# Cleanup contract: the first lab_up installs traps so that lab_down runs however
# the script ends. On EXIT, whatever EXIT trap was set before lab_up runs first
# (so it can stop workloads that keep the disk busy), then lab_down; the exit
# status is kept. On INT, TERM and HUP, the trap set before (if any) runs, then
# the script exits with 128+signal, which runs the EXIT trap. A trap you set
# *after* lab_up replaces ours: call lab_down from it. Only SIGKILL of the test
# shell leaves a lab behind. Call lab_up from the script's main shell, not from a
# $(...) or ( ... ) subshell, whose traps die with it. slowfs is started
# disowned, so a bare `wait` in your cleanup does not wait for it.
#
# lab_down is idempotent and only ever detaches the loop device whose backing
# file is this lab's disk.img and unmounts this lab's mount point.

LAB_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
LAB_SLOWFS=$LAB_ROOT/build/tests/slowfs
LAB_LOOPCTL=$LAB_ROOT/build/tests/loopctl

_lab_err() { echo "lab: $*" >&2; }

# The command of the trap currently set for signal $1 (empty when none).
_lab_trap_cmd() {
    local t
    t=$(trap -p "$1")
    [ -n "$t" ] || return 0
    eval "set -- $t"      # trap -p quotes for reuse: trap -- 'CMD' SIG
    printf '%s' "$3"
}

_lab_install_traps() {
    [ -z "${_LAB_TRAPS:-}" ] || return 0
    _LAB_TRAPS=1
    _LAB_PREV_EXIT=$(_lab_trap_cmd EXIT)
    _LAB_PREV_INT=$(_lab_trap_cmd INT)
    _LAB_PREV_TERM=$(_lab_trap_cmd TERM)
    _LAB_PREV_HUP=$(_lab_trap_cmd HUP)
    trap '_lab_on_exit' EXIT
    trap '_lab_on_signal INT 130' INT
    trap '_lab_on_signal TERM 143' TERM
    trap '_lab_on_signal HUP 129' HUP
}

_lab_on_exit() {
    local rc=$?
    set +e                # the shell is exiting: clean up as much as we can
    if [ -n "$_LAB_PREV_EXIT" ]; then
        (exit "$rc")      # the previous trap sees the exit status in $?
        eval "$_LAB_PREV_EXIT"
    fi
    lab_down
}

_lab_on_signal() {
    local prev_var=_LAB_PREV_$1
    _lab_err "caught SIG$1, cleaning up"
    [ -z "${!prev_var}" ] || eval "${!prev_var}"
    exit "$2"
}

# True when $1 is a mount point listed in /proc/self/mounts (no stat: a
# broken FUSE mount must not make us hang or fail).
_lab_mounted() {
    awk -v m="$1" '$2 == m { f = 1 } END { exit !f }' /proc/self/mounts
}

# True while our slowfs runs: not gone, not a zombie, and (against a reused
# pid) still called slowfs.
_lab_slowfs_alive() {
    local comm state
    [ -n "${_LAB_PID:-}" ] || return 1
    read -r _ comm state _ 2>/dev/null <"/proc/$_LAB_PID/stat" || return 1
    [ "$comm" = "(slowfs)" ] && [ "$state" != Z ]
}

# True while the child started for slowfs exists and is not a zombie, whatever its name:
# between the fork and the exec it is still called bash, and on a loaded machine the
# first look can come before the exec (seen: 28 of 40 lab_up calls failed with "slowfs
# did not mount" while two CPU hogs ran). Only for the start-up wait; lab_down keeps
# the stricter _lab_slowfs_alive against a reused pid.
_lab_child_running() {
    local stat
    [ -n "${_LAB_PID:-}" ] || return 1
    read -r stat 2>/dev/null <"/proc/$_LAB_PID/stat" || return 1
    stat=${stat##*) }
    [ -n "$stat" ] && [ "${stat%% *}" != Z ]
}

# True when the loop device $1 (loopN) is still backed by our disk.img.
_lab_loop_is_ours() {
    local bf
    bf=$(cat "/sys/block/$1/loop/backing_file" 2>/dev/null) || return 1
    [ "$bf" = "$LAB_MNT/disk.img" ]
}

lab_up() {
    local lat=${1:-2000} thr=${2:-4} size=${3:-64} i dio

    if [ -n "${LAB_DEV:-}" ] || [ -n "${_LAB_DIR:-}" ]; then
        _lab_err "lab_up: a lab is already up ($LAB_DEV); call lab_down first"
        return 1
    fi
    [ "$(id -u)" = 0 ] || { _lab_err "lab_up: needs root"; return 77; }
    [ -c /dev/fuse ] || { _lab_err "lab_up: no /dev/fuse"; return 77; }
    [ -e /dev/loop-control ] || modprobe loop 2>/dev/null || :
    [ -e /dev/loop-control ] || { _lab_err "lab_up: no loop devices"; return 77; }
    for i in losetup fusermount3 awk; do
        command -v "$i" >/dev/null || { _lab_err "lab_up: $i not installed"; return 77; }
    done
    [ -x "$LAB_SLOWFS" ] || {
        _lab_err "lab_up: $LAB_SLOWFS missing (make build/tests/slowfs)"; return 77; }

    _lab_install_traps
    _LAB_DIR=$(mktemp -d "${TMPDIR:-/tmp}/iotriage-lab.XXXXXX") || return 1
    LAB_MNT=$_LAB_DIR/mnt
    mkdir "$LAB_MNT" || { lab_down; return 1; }

    # Foreground (-f) in the background, so we know its pid and the shell still
    # reaps it; disowned, so that a test's bare `wait` does not wait for it.
    # (As a background job of a script it also ignores SIGINT: Ctrl-C reaches
    # the test, whose trap unmounts it in order.)
    "$LAB_SLOWFS" "$LAB_MNT" --latency-us "$lat" --threads "$thr" --size-mb "$size" \
        -f </dev/null >/dev/null 2>"$_LAB_DIR/slowfs.log" &
    _LAB_PID=$!
    disown "$_LAB_PID"
    for ((i = 0; i < 300; i++)); do          # up to 15 s: a loaded machine is slow to fork
        _lab_mounted "$LAB_MNT" && break
        _lab_child_running || break
        sleep 0.05
    done
    if ! _lab_mounted "$LAB_MNT"; then
        _lab_err "lab_up: slowfs did not mount: $(cat "$_LAB_DIR/slowfs.log")"
        lab_down
        return 1
    fi

    # Fresh disk counters: a loop device keeps its diskstats across detach and attach, so
    # a lab disk given a number a fast device had before would carry that device's
    # lifetime mean await (the ceiling saturation is judged against with no quiet level
    # seen: delta.c). The free device is made anew first; the kernel refuses while another
    # binds or opens it (the old counters then stay).
    local free
    free=$(losetup -f 2>/dev/null) && [ -x "$LAB_LOOPCTL" ] &&
        "$LAB_LOOPCTL" recreate "${free#/dev/loop}" >/dev/null 2>&1
    for _ in 1 2 3 4 5 6 7 8 9 10; do [ -z "$free" ] || [ -b "$free" ] && break; sleep 0.1; done
    LAB_DEV=$(losetup --direct-io=on --find --show "$LAB_MNT/disk.img") || {
        _lab_err "lab_up: losetup failed"; LAB_DEV=; lab_down; return 1; }
    LAB_NAME=${LAB_DEV#/dev/}
    # losetup quietly falls back to buffered I/O when the kernel refuses direct
    # I/O; then the page cache would hide the latency we built.
    dio=$(cat "/sys/block/$LAB_NAME/loop/dio" 2>/dev/null) || dio=
    if [ "$dio" != 1 ]; then
        _lab_err "lab_up: $LAB_DEV has direct I/O off (dio='$dio'): refusing a cached lab disk"
        lab_down
        return 1
    fi
    # A loop device keeps its queue settings across detach and attach: a test that left
    # nr_requests at 4 would hand the next one a disk with a hidden queue. Back to the
    # loop driver's defaults: scheduler none, nr_requests = the tag depth. The switch
    # alone is not enough (seen on 6.18: after nr_requests 4 under none, a switch to
    # mq-deadline and back shows nr_requests 128 while the queue still behaves as 4
    # deep); writing the depth explicitly is, but writing the value it already shows is
    # a no-op, so write another value first.
    local q=/sys/block/$LAB_NAME/queue depth
    depth=$(cat "/sys/block/$LAB_NAME/mq/0/nr_tags" 2>/dev/null) || depth=128
    if ! { echo mq-deadline >"$q/scheduler" && echo none >"$q/scheduler" &&
           echo $((depth / 2)) >"$q/nr_requests" && echo "$depth" >"$q/nr_requests"; } 2>/dev/null ||
        ! grep -q '\[none\]' "$q/scheduler"; then
        _lab_err "lab_up: cannot reset the queue of $LAB_NAME: $(cat "$q/scheduler") nr_requests $(cat "$q/nr_requests")"
        lab_down
        return 1
    fi
    LAB_LATENCY_US=$lat
    LAB_THREADS=$thr
    export LAB_DEV LAB_NAME LAB_MNT LAB_LATENCY_US LAB_THREADS
}

# lab_users: how many processes hold the lab disk open now (fio's job processes,
# taskhelper's readers...).
lab_users() {
    find /proc/[0-9]*/fd -maxdepth 1 -lname "$LAB_DEV" 2>/dev/null | cut -d/ -f3 | sort -u | wc -l
}

# lab_wait_users N [SECONDS]: until N processes hold the lab disk open and its request
# count has moved since then: the workload a check is about is under way. A reader forked
# is not yet reading (fio forks its jobs, lays out, then opens the device; ionice and
# nice exec it late), and a fixed sleep before the check was a race on a loaded machine.
# Returns 1 after SECONDS (20) with a line on stderr saying what was seen.
lab_wait_users() {
    local want=$1 secs=${2:-20} end n ios
    end=$((SECONDS + secs))
    _lab_ios() { awk '{ print $1 + $5 }' "/sys/block/$LAB_NAME/stat"; }
    until [ "$(lab_users)" -ge "$want" ]; do
        [ "$SECONDS" -lt "$end" ] || { _lab_err "lab_wait_users: $(lab_users) of $want users of $LAB_DEV after $secs s"; return 1; }
        sleep 0.05
    done
    ios=$(_lab_ios)
    until [ "$(_lab_ios)" -gt "$ios" ]; do
        [ "$SECONDS" -lt "$end" ] || { _lab_err "lab_wait_users: no request completed on $LAB_DEV in $secs s"; return 1; }
        sleep 0.05
    done
}

lab_down() {
    local i

    # 1. The loop device, only if it is still ours. A device still open (say by
    #    a fio being killed) is detached when its last user closes it.
    if [ -n "${LAB_NAME:-}" ] && _lab_loop_is_ours "$LAB_NAME"; then
        losetup -d "$LAB_DEV" 2>/dev/null || :
        for ((i = 0; i < 100; i++)); do
            _lab_loop_is_ours "$LAB_NAME" || break
            sleep 0.1
        done
        ! _lab_loop_is_ours "$LAB_NAME" || _lab_err "lab_down: $LAB_DEV still attached"
    fi

    # 2. The mount; a lazy unmount as a last resort (slowfs is killed below).
    if [ -n "${LAB_MNT:-}" ] && _lab_mounted "$LAB_MNT"; then
        for ((i = 0; i < 20; i++)); do
            fusermount3 -u "$LAB_MNT" 2>/dev/null || umount "$LAB_MNT" 2>/dev/null || :
            _lab_mounted "$LAB_MNT" || break
            sleep 0.1
        done
        if _lab_mounted "$LAB_MNT"; then
            _lab_err "lab_down: $LAB_MNT busy, unmounting lazily"
            umount -l "$LAB_MNT" 2>/dev/null || :
        fi
    fi

    # 3. slowfs exits by itself once unmounted; otherwise TERM, then KILL.
    for ((i = 0; i < 50; i++)); do
        _lab_slowfs_alive || break
        [ "$i" != 20 ] || kill -TERM "$_LAB_PID" 2>/dev/null || :
        sleep 0.1
    done
    ! _lab_slowfs_alive || kill -KILL "$_LAB_PID" 2>/dev/null || :

    # 4. The temp dir: never rm -r, in case something is still mounted there.
    if [ -n "${_LAB_DIR:-}" ]; then
        rm -f "$_LAB_DIR/slowfs.log"
        rmdir "$_LAB_DIR/mnt" 2>/dev/null || :
        rmdir "$_LAB_DIR" 2>/dev/null || _lab_err "lab_down: could not remove $_LAB_DIR"
    fi

    unset LAB_DEV LAB_NAME LAB_MNT LAB_LATENCY_US LAB_THREADS _LAB_DIR _LAB_PID
    return 0
}
