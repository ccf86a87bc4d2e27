#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Buffered writes leave the writer's priority behind (flusher threads write them back at
# be/4): an idle-class process appending to a file through the page cache gets
# ioprio-writeback; the same writer with O_DIRECT does not. The lab disk uses
# mq-deadline, which reads the class: there the idle label is honoured when it reaches
# the device, so the writeback is what loses it. (bfq would do as well, but not every
# kernel offers it.)
. "$(dirname "$0")/lib.sh"
. "$ROOT/tests/lab/lab.sh"
need mkfs.ext4
need dd
need ionice
lab_up 2000 4 64 || exit $?
MNT=$TMP/mnt
trap 'it_kill_bg; umount "$MNT" 2>/dev/null; lab_down; it_cleanup' EXIT
mkfs.ext4 -q -F "$LAB_DEV" >/dev/null 2>&1 || fail "mkfs.ext4 on the lab disk"
mkdir -p "$MNT" && mount "$LAB_DEV" "$MNT" || fail "mount the lab disk"
echo mq-deadline >"/sys/block/$LAB_NAME/queue/scheduler" || fail "select mq-deadline"

# bash's printf builtin writes from the shell itself, so the shell is the writer.
bg ionice -c3 bash -c 'exec 3>>"$0"; while :; do printf "%65536s" x >&3; sleep 0.05; done' "$MNT/log"
w=$BG
# Sampled once ionice has exec'd the shell and the shell holds the log.
wait_holds "$w" "$MNT/log"
"$IOT" --json -d 1 -n 1 -p "$w" >"$TMP/w.json" || fail "iotriage failed"
jqf --arg d "$LAB_NAME" '.processes[0] | .write_bps > 0 and (.devices | index($d))
    and any(.warnings[]; .code == "ioprio-writeback" and .device == $d)' "$TMP/w.json" >/dev/null
ok "buffered idle-class writer: $(jq -r '.processes[0].warnings[] | select(.code == "ioprio-writeback") | .text' "$TMP/w.json")"
kill "$w"

# The same priority writing with O_DIRECT carries it to the device itself: no
# writeback warning for the lab disk (its log on the root disk is another matter).
bg ionice -c3 fio --name=direct --filename="$MNT/direct" --size=8m --rw=write --bs=64k \
    --direct=1 --ioengine=psync --time_based --runtime=10 --output-format=json --output=/dev/null
# Sampled once the job writes with O_DIRECT: before, fio lays the file out with buffered
# writes (which writeback would rightly be named for) and then opens it again.
direct_open() { # a process holds $MNT/direct open with O_DIRECT (octal 040000 in fdinfo's flags)
    local fd fl
    for fd in $(find /proc/[0-9]*/fd -maxdepth 1 -lname "$MNT/direct" 2>/dev/null); do
        fl=$(awk '$1 == "flags:" { print $2 }' "${fd/\/fd\//\/fdinfo\/}" 2>/dev/null)
        [ -n "$fl" ] && (( 8#$fl & 8#40000 )) && return 0
    done
    return 1
}
wait_until 20 direct_open || fail "fio never opened $MNT/direct with O_DIRECT"
"$IOT" --json -d 1 -n 1 >"$TMP/d.json" || fail "iotriage failed"
jqf --arg d "$LAB_NAME" '[.processes[] | select(.comm == "fio" and .write_bps > 0)] | length > 0
    and all(.[]; (.devices | index($d)) and all(.warnings[]; .code != "ioprio-writeback" or .device != $d))' \
    "$TMP/d.json" >/dev/null
ok "O_DIRECT writer: no ioprio-writeback on $LAB_NAME"
