#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Who submitted the I/O (issue 14): the BPF lens charges each bio to the process that
# submitted it, where open files cannot tell. On a btrfs of our own (a loop device over a
# file in /dev/shm, so no I/O reaches the real disk), whose files have an anonymous
# st_dev, so that the open-file attribution finds no device for them:
#   direct   a reader of a file with O_DIRECT: with the lens, its devices list the loop
#            device, lens_bytes names it with bytes a second and devices_from says the
#            lens ("lens", or "both" when open files name another device: python's own
#            files on the root disk);
#            with --no-bpf the loop device is not in its list (unknown, as before).
#   mmap     a reader through a memory map, its pages dropped after each pass (madvise
#            then posix_fadvise DONTNEED), so every pass faults them in again: the same.
#   writeback  a shell writing new files through the page cache and calling sync: the
#            flusher's kworker submits the data, and the loop device's writeback_bps is
#            at least half of what it wrote (wkb_s) in some interval.
# Every mount, loop device and process goes on EXIT, also on failure.
. "$(dirname "$0")/lib.sh"
need mkfs.btrfs
need losetup
need python3
need jq
need tmux
SOCK=iotriage-attrib-$$
. "$(dirname "$0")/lib_tmux.sh"
[ "$(id -u)" = 0 ] || skip "needs root (loop device, mount, BPF)"
[ -r /sys/kernel/btf/vmlinux ] || skip "no kernel BTF: the lens cannot load"
[ -x "$IOT" ] || fail "build ./iotriage first"

WGRP=
cleanup() {
    # the writer's whole process group: a dd or sync left running keeps the mount busy
    [ -n "$WGRP" ] && kill -- -"$WGRP" 2>/dev/null
    it_kill_bg
    scratch_fs_down
    it_cleanup
}
trap cleanup EXIT

scratch_fs btrfs 256M -f
dd if=/dev/urandom of="$MNT/data" bs=1M count=32 status=none || fail "write data"
sync
# the premise: btrfs gives its files an st_dev that is not the loop device's
fdev=$(stat -c '%Hd:%Ld' "$MNT/data")
ldev=$(stat -Lc '%Hr:%Lr' "$LOOP")
[ "$fdev" != "$ldev" ] || skip "btrfs gave the file the loop device's st_dev ($fdev): nothing to prove"

cat >"$TMP/direct.py" <<'PY'
import mmap, os, sys
fd = os.open(sys.argv[1], os.O_RDONLY | os.O_DIRECT)
buf = mmap.mmap(-1, 65536)               # page aligned, as O_DIRECT needs
while True:
    off = 0
    while os.preadv(fd, [buf], off) > 0:
        off += 65536
PY
cat >"$TMP/mapped.py" <<'PY'
import mmap, os, sys, time
fd = os.open(sys.argv[1], os.O_RDONLY)
size = os.fstat(fd).st_size
m = mmap.mmap(fd, size, prot=mmap.PROT_READ)
while True:
    s = 0
    for off in range(0, size, 4096):
        s += m[off]                      # a page fault: the read is submitted here
    m.madvise(mmap.MADV_DONTNEED)        # unmap, so the pages can be dropped
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    time.sleep(0.05)
PY
bg python3 "$TMP/direct.py" "$MNT/data"; DPID=$BG
bg python3 "$TMP/mapped.py" "$MNT/data"; MPID=$BG
sleep 1
kill -0 "$DPID" 2>/dev/null || fail "the O_DIRECT reader died (O_DIRECT on btrfs?)"
kill -0 "$MPID" 2>/dev/null || fail "the mmap reader died"

# run_iot ARGS...: samples of both readers, one JSON object a line
run_iot() {
    timeout 60 "$IOT" --json -d 1 -n "$1" -p "$DPID" -p "$MPID" "${@:2}" 2>"$TMP/iot.err" >"$TMP/iot.json"
    [ -s "$TMP/iot.json" ] || fail "iotriage wrote nothing: $(head -3 "$TMP/iot.err")"
}

# With the lens: some sample after it attached (it may take a few on a loaded machine)
# lists the loop device for each reader, from the lens alone. At most 12 samples: the run
# stops once both readers were listed so (SIGTERM: whole lines, status 143).
# listed PID: a sample so far lists the loop device for PID from the lens
listed() {
    jq --argjson p "$1" --arg d "$LNAME" '
        [.processes[]? | select(.pid == $p and .devices != null and (.devices | index($d)) != null
                              and (.devices_from == "lens" or .devices_from == "both")
                              and (.lens_bytes[$d] // 0) > 0)]
        | length > 0' "$TMP/iot.json" 2>/dev/null | grep -qx true
}
timeout 60 "$IOT" --json -d 1 -n 12 -p "$DPID" -p "$MPID" 2>"$TMP/iot.err" >"$TMP/iot.json" &
iotp=$!
while kill -0 "$iotp" 2>/dev/null; do
    listed "$DPID" && listed "$MPID" && { kill -TERM "$iotp"; break; }
    sleep 0.3
done
wait "$iotp"
[ -s "$TMP/iot.json" ] || fail "iotriage wrote nothing: $(head -3 "$TMP/iot.err")"
jq -e 'select(.lens.on == true)' "$TMP/iot.json" >/dev/null || skip "the lens did not load: $(jq -r '.lens.reason' "$TMP/iot.json" | tail -1)"
for who in "$DPID:direct" "$MPID:mmap"; do
    pid=${who%%:*}; what=${who#*:}
    listed "$pid" ||
        fail "$what reader $pid: no sample lists $LNAME from the lens: $(jq -c --argjson p "$pid" '.processes[]? | select(.pid == $p) | {devices, devices_from, lens_bytes}' "$TMP/iot.json" | tail -3)"
    ok "$what reader on btrfs: DEV $LNAME from the lens ($(jq -rs --argjson p "$pid" --arg d "$LNAME" '[.[].processes[]? | select(.pid == $p) | .lens_bytes[$d] // empty] | last' "$TMP/iot.json") B/s)"
done
# Writeback: buffered writes that sync hands to the flusher threads.
# A new file each time: rewriting one file in place would make the filesystem flush it
# at close in the writer's own context (ext4's auto_da_alloc, btrfs's flush on close
# after a truncate), which the lens rightly charges to the writer.
bg setsid bash -c 'i=0; while :; do i=$((i + 1)); dd if=/dev/zero of="$1/w$i" bs=1M count=8 status=none
            sync; rm -f "$1/w$((i - 3))"; sleep 0.2; done' wb "$MNT"
WGRP=$BG                             # setsid made it the leader of its own group
run_iot 6
# and on the screen: the device view lists writeback as a row of its own
T new-session -d -s ui -x 120 -y 50 "$IOT -d 1; echo EXITED \$?; sleep 60"
wait_for '^DEVICE +SCHED' 20
T send-keys -t ui Tab / "$LNAME" Enter
wait_for "^$LNAME " 10
T send-keys -t ui Enter
wait_for "^Device $LNAME" 10
wait_for "^ +- +- +W +[0-9.]+[KMG] +kernel threads: writeback of dirtied pages" 20
ok "screen: $LNAME's device view has the writeback row: $(screen | grep 'kernel threads: writeback' | tr -s ' ')"
T send-keys -t ui q
kill -- -"$WGRP" 2>/dev/null
WGRP=
# some interval where the device wrote over 1 MB/s: at least half of it is the kernel's
jq -se --arg d "$LNAME" '[.[] | .devices[] | select(.name == $d and (.wkb_s // 0) > 1000
                          and (.writeback_bps // 0) >= 0.5 * .wkb_s * 1024)] | length > 0' "$TMP/iot.json" >/dev/null ||
    fail "writeback_bps of $LNAME not half its writes: $(jq -c --arg d "$LNAME" '.devices[] | select(.name == $d) | [.wkb_s, .writeback_bps]' "$TMP/iot.json" | tr '\n' ' ')"
ok "writeback: $LNAME written by kernel threads: $(jq -c --arg d "$LNAME" '.devices[] | select(.name == $d) | [.wkb_s * 1024, .writeback_bps]' "$TMP/iot.json" | tr '\n' ' ') (B/s written, B/s by the flusher)"

# the text view's DEV column too
timeout 30 "$IOT" -b -d 1 -n 3 -p "$DPID" 2>/dev/null | awk -v p="$DPID" '$1 == p' | tail -1 | grep -qw "$LNAME" ||
    fail "batch text: DEV of $DPID lacks $LNAME"
ok "batch text: DEV shows $LNAME"

# Without the lens: the open files name no device (btrfs's anonymous st_dev).
run_iot 3 --no-bpf
jq -e --argjson p "$DPID" --arg d "$LNAME" '
    [.processes[]? | select(.pid == $p)] | length > 0 and
    all(.devices == null or (.devices | index($d)) == null) and all(.lens_bytes == null)' "$TMP/iot.json" >/dev/null ||
    fail "--no-bpf: $LNAME attributed to $DPID without the lens? $(jq -c --argjson p "$DPID" '.processes[]? | select(.pid == $p) | {devices, devices_from}' "$TMP/iot.json" | tail -1)"
ok "--no-bpf: the O_DIRECT reader's DEV stays unknown"
exit 0
