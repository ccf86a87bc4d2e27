#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The scheduler switch on a bio-based device offers the disks below it, never the device
# itself: on a made-up /proc and /sys (--proc-root, --sys-root; the host kernel has no
# device mapper), dm-0 over sda goes straight to sda's menu, md0 over sdb and sdc asks
# which disk first, then opens that disk's menu. Nothing is confirmed: no file changes.
. "$(dirname "$0")/lib.sh"
SOCK=iotriage-stackswitch-$$
. "$(dirname "$0")/lib_tmux.sh"
trap 'it_cleanup' EXIT

P=$TMP/proc S=$TMP/sys
mkdir -p "$P" "$S/class/block"
: >"$P/diskstats"
disk() {   # disk NAME MINOR
    printf '%4d %7d %s 10 0 80 5 0 0 0 0 0 5 5 0 0 0 0 0 0\n' 8 "$2" "$1" >>"$P/diskstats"
    local d=$S/class/block/$1
    mkdir -p "$d/queue" "$d/mq/0" "$d/holders" "$d/slaves"
    echo "[mq-deadline] none bfq" >"$d/queue/scheduler"
    echo 64 >"$d/queue/nr_requests"
    echo 0 >"$d/queue/rotational"
    echo "       0        0" >"$d/inflight"
}
bio() {    # bio NAME MINOR SLAVE...
    local n=$1 m=$2 s; shift 2
    printf '%4d %7d %s 10 0 80 5 0 0 0 0 0 5 5 0 0 0 0 0 0\n' 253 "$m" "$n" >>"$P/diskstats"
    local d=$S/class/block/$n
    mkdir -p "$d/queue" "$d/holders" "$d/slaves"
    echo 0 >"$d/queue/rotational"
    echo "       0        0" >"$d/inflight"
    for s in "$@"; do
        mkdir "$d/slaves/$s" "$S/class/block/$s/holders/$n"
    done
}
disk sda 0; disk sdb 16; disk sdc 32
bio dm-0 0 sda
bio md0 1 sdb sdc
cp -a "$S" "$TMP/sys.before"

T new-session -d -s ui -x 140 -y 40 "$IOT --proc-root $P --sys-root $S -d 0.5; echo EXITED \$?; sleep 60"
wait_for 'sda'
T send-keys -t ui Tab Home
# open_dev NAME: the device view of NAME, stepping down the device rows
open_dev() {
    local i
    T send-keys -t ui Home
    for i in 1 2 3 4 5 6; do
        T send-keys -t ui Enter
        wait_for '^Device '
        screen | grep -q "^Device $1 " && return 0
        T send-keys -t ui Escape Down
        wait_gone '^Device '
    done
    fail "no device view of $1: $(screen)"
}
open_dev dm-0
wait_for '^stack \[dm-0\] (->|→) sda  \(bio-based: served by the disks below\)'
T send-keys -t ui s
wait_for 'I/O scheduler of sda \(below dm-0, which has none of its own\)'
wait_for 'mq-deadline .*\[current\]'
screen | grep -q 'I/O scheduler of dm-0' && fail "a switch of dm-0 itself offered"
T send-keys -t ui Escape
wait_gone 'I/O scheduler of'
T send-keys -t ui Escape
ok "dm-0: the switch offered is sda's"

open_dev md0
T send-keys -t ui s
wait_for 'md0 has no I/O scheduler: the disks below it serve its I/O'
wait_for '^.*sdb +mq-deadline'
wait_for '^.*sdc +mq-deadline'
T send-keys -t ui Down Enter
wait_for 'I/O scheduler of sdc \(below md0, which has none of its own\)'
T send-keys -t ui Escape
wait_gone 'I/O scheduler of'
ok "md0: a choice of sdb and sdc, then the chosen disk's menu"
diff -r "$TMP/sys.before" "$S" >/dev/null || fail "the made-up sysfs changed: $(diff -r "$TMP/sys.before" "$S")"
T send-keys -t ui q
