#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Block devices appearing and disappearing under a running sanitized iotriage
# (build/san/iotriage --json -d 0.1): a loop device of our own (a number from 240 up that
# does not exist yet, over a file in /dev/shm with an MBR of two partitions) is attached
# with partition scanning, written and read with O_DIRECT while its scheduler is switched
# through mq-deadline, kyber, bfq (where the kernel offers it) and none, detached, and
# then removed and created again at once through /dev/loop-control, so that the same
# name comes back with counters lower than the previous sample's; once it is also gone
# for half a second. Must hold: no
# sanitizer report and exit 0 on SIGTERM; every line one JSON object; for the loop device
# and its partitions no negative rate and none beyond 20 GB/s or 5 M requests/s,
# util <= 100; an interval whose counters went down is `reset` with every rate null, and
# there is at least one; the partitions were seen as partitions of the disk. Only the
# loop device this test created is ever detached or removed; vda is not touched.
. "$(dirname "$0")/lib.sh"
. "$ROOT/tests/soak/san.sh"
[ "$(id -u)" = 0 ] || skip "needs root (loop devices)"
[ -e /dev/loop-control ] || modprobe loop 2>/dev/null || :
[ -e /dev/loop-control ] || skip "no loop devices (/dev/loop-control)"
need losetup
san_build || fail "sanitizer build failed"

N=
for i in $(seq 240 255); do
    [ -e "/sys/block/loop$i" ] || { N=$i; break; }
done
[ -n "$N" ] || skip "loop240..loop255 all exist already"
NAME=loop$N DEV=/dev/loop$N
IMG=$(mktemp /dev/shm/iotriage-devtest.XXXXXX)
CREATED=0 IOT_PID=
q=/sys/block/$NAME/queue/scheduler

ours() { [ "$(cat "/sys/block/$NAME/loop/backing_file" 2>/dev/null)" = "$IMG" ]; }
dev_cleanup() {
    it_kill_bg
    if ours; then losetup -d "$DEV" 2>/dev/null; fi
    if [ "$CREATED" = 1 ] && [ -e "/sys/block/$NAME" ]; then
        for _ in 1 2 3 4 5 6 7 8 9 10; do
            "$SAN_LOOPCTL" remove "$N" 2>/dev/null && break
            sleep 0.2
        done
    fi
    rm -f "$IMG"
    it_cleanup
}
trap dev_cleanup EXIT

# 64 MiB with an MBR: partition 1 at sector 2048, partition 2 at 34816, 16 MiB each.
truncate -s 64M "$IMG"
printf '\x00\x00\x00\x00\x83\x00\x00\x00\x00\x08\x00\x00\x00\x80\x00\x00\x00\x00\x00\x00\x83\x00\x00\x00\x00\x88\x00\x00\x00\x80\x00\x00' |
    dd of="$IMG" bs=1 seek=446 conv=notrunc status=none
printf '\x55\xaa' | dd of="$IMG" bs=1 seek=510 conv=notrunc status=none

"$SAN_LOOPCTL" add "$N" || fail "cannot create $NAME"
CREATED=1
for _ in $(seq 50); do [ -b "$DEV" ] && break; sleep 0.1; done
[ -b "$DEV" ] || fail "$DEV did not appear"
# The schedulers switched through while the device is loaded; bfq where it is offered.
SCHEDS="mq-deadline kyber bfq none"
if ! sched_offered "$NAME" bfq; then
    SCHEDS="mq-deadline kyber none"
    skip_part "switching $NAME to bfq under load: $NO_BFQ"
fi

"$SAN_IOT" --json -d 0.1 >"$TMP/out.json" 2>"$TMP/err" &
IOT_PID=$!
BG_PIDS+=("$IOT_PID")
# Counted once the first sample is out: before it, the BPF objects are still being
# loaded (their maps, programs and links are descriptors too; slow under ASan).
for _ in $(seq 300); do [ -s "$TMP/out.json" ] && break; sleep 0.1; done
[ -s "$TMP/out.json" ] || fail "no sample in 30 s: $(head -c 300 "$TMP/err")"
# Each listed device's sysfs files stay open (source/blockdev.h): a device that goes
# must take its files with it.
fds0=$(ls "/proc/$IOT_PID/fd" | wc -l)

attach_and_load() {
    losetup -P "$DEV" "$IMG" || fail "losetup -P $DEV failed"
    for _ in $(seq 20); do [ -e "/sys/block/$NAME/${NAME}p1" ] && break; sleep 0.05; done
    [ -e "/sys/block/$NAME/${NAME}p1" ] && touch "$TMP/had_partitions"
    dd if=/dev/zero of="$DEV" bs=64k count=256 oflag=direct status=none & local w=$!
    local r=
    if [ -b "${DEV}p1" ]; then
        dd if="${DEV}p1" of=/dev/null bs=16k count=1024 iflag=direct status=none & r=$!
    fi
    local s
    for s in $SCHEDS; do
        echo "$s" >"$q" 2>/dev/null || echo "note: $NAME refused scheduler $s"
        sleep 0.4
    done
    wait "$w" || fail "write to $DEV failed"
    [ -z "$r" ] || wait "$r" || fail "read of ${DEV}p1 failed"
}

for _ in 1 2 3; do
    attach_and_load
    losetup -d "$DEV" || fail "detach $DEV failed"
    sleep 0.3
    # Gone and back within one interval: the same name, counters from zero.
    for _ in $(seq 20); do "$SAN_LOOPCTL" recreate "$N" 2>/dev/null && break; sleep 0.1; done
    [ -e "/sys/block/$NAME" ] || fail "$NAME did not come back"
    sleep 0.4
done
# Gone for several samples, then back.
attach_and_load
losetup -d "$DEV" || fail "detach $DEV failed"
for _ in $(seq 20); do "$SAN_LOOPCTL" remove "$N" 2>/dev/null && break; sleep 0.1; done
sleep 0.5
"$SAN_LOOPCTL" add "$N" || fail "cannot create $NAME again"
attach_and_load
sleep 0.3
fds1=$(ls "/proc/$IOT_PID/fd" | wc -l)

kill -TERM "$IOT_PID"
wait "$IOT_PID"
rc=$?
if san_report "$TMP/err"; then
    san_excerpt "$TMP/err" >&2
    fail "sanitizer report while devices came and went"
fi
[ "$rc" = 0 ] || fail "iotriage exit $rc on SIGTERM: $(tail -n 5 "$TMP/err")"

# One JSON object per line; keep this device's entries (and its partitions').
jq -R -c --arg n "$NAME" 'fromjson | {interval_s, d: [.devices[] | select(.name == $n or .disk == $n)]}' \
    "$TMP/out.json" >"$TMP/dev.ndjson" || fail "a line of output is not JSON"
nsamples=$(wc -l <"$TMP/dev.ndjson")
[ "$nsamples" -ge 20 ] || fail "only $nsamples samples"

parts=0
[ -e "$TMP/had_partitions" ] && parts=1
jqf -s -r --arg n "$NAME" --argjson haveparts "$parts" '
  def rates: [.r_s, .w_s, .rkb_s, .wkb_s, .rrqm_s, .wrqm_s, .aqu_sz, .util, .r_await, .w_await];
  [ .[].d[] ] as $all
  | [ $all[] | select(.reset == true) ] as $resets
  | [ $all[] | select(.reset == true and (rates | any(. != null))) ] as $reset_rated
  | [ $all[] | select(rates | any(type == "number" and . < 0)) ] as $neg
  | [ $all[] | select((.rkb_s // 0) > 2e7 or (.wkb_s // 0) > 2e7 or (.r_s // 0) > 5e6
                      or (.w_s // 0) > 5e6 or (.util // 0) > 100.0001) ] as $huge
  | [ $all[] | select(.name == $n and (.w_s // 0) > 0) ] as $writes
  | [ $all[] | select(.name == $n + "p1" and .partition == true and .disk == $n) ] as $parts
  | [ $all[] | select(.name == $n) | .scheduler ] | unique as $scheds
  | "resets: \($resets | length) (with a rate: \($reset_rated | length)); negative: \($neg | length); huge: \($huge | length); samples writing: \($writes | length); partition seen: \($parts | length); schedulers seen: \($scheds)",
    (if ($reset_rated | length) > 0 then "BAD reset with rates: \($reset_rated[0])" else empty end),
    (if ($neg | length) > 0 then "BAD negative: \($neg[0])" else empty end),
    (if ($huge | length) > 0 then "BAD huge: \($huge[0])" else empty end),
    (if ($resets | length) == 0 then "BAD no interval with reset although counters went down" else empty end),
    (if ($writes | length) == 0 then "BAD the writes to the device were never seen" else empty end),
    (if $haveparts == 1 and ($parts | length) == 0 then "BAD partition p1 never seen as a partition of the disk" else empty end),
    (if ($scheds - ["none", "mq-deadline", "kyber", "bfq", null] | length) > 0 then "BAD unknown scheduler \($scheds)" else empty end),
    (if ($scheds - [null] | length) < 2 then "BAD fewer than two schedulers seen: \($scheds)" else empty end)
' "$TMP/dev.ndjson" >"$TMP/verdict.txt"
cat "$TMP/verdict.txt"
if grep -q '^BAD' "$TMP/verdict.txt"; then fail "$(grep '^BAD' "$TMP/verdict.txt" | head -n 3)"; fi
# At the end the disk and its two partitions are listed again: three handles of at most
# six files each (under none, no iosched tunables) more than at the start, whereas five
# registrations leaked would be fifteen.
[ $((fds1 - fds0)) -le 20 ] || fail "open files grew from $fds0 to $fds1 while $NAME came and went"
[ "$parts" = 1 ] || echo "note: the kernel made no partitions of $NAME (no partition table support?): partitions not exercised"
ok "$nsamples samples while $NAME came and went 5 times: no report, valid JSON, no bogus rate, open files $fds0 -> $fds1"
