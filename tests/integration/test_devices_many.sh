#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Devices kept open (source/blockdev.h, snapshot.c: DEV_FILES_MAX) on a machine of many
# disks, made up: a /proc and /sys tree of 200 block devices under mq-deadline (eleven
# files each kept open), given with --proc-root and --sys-root. Must hold: every device
# in every sample with what its files say; a value changed between samples shows in the
# next one, for a device whose files are held and for one past the budget; the files
# held stay within the budget, so the fd table keeps room for /proc.
. "$(dirname "$0")/lib.sh"

N=200
P=$TMP/proc S=$TMP/sys
mkdir -p "$P" "$S/class/block"
: >"$P/diskstats"
for i in $(seq 0 $((N - 1))); do
    printf '%4d %7d disk%d 10 0 80 5 0 0 0 0 0 5 5 0 0 0 0 0 0\n' 8 "$i" "$i" >>"$P/diskstats"
    d=$S/class/block/disk$i
    mkdir -p "$d/queue/iosched" "$d/mq/0"
    echo "       0        0" >"$d/inflight"
    echo "none [mq-deadline] kyber bfq" >"$d/queue/scheduler"
    echo 64 >"$d/queue/nr_requests"
    echo 0 >"$d/queue/rotational"
    for t in read_expire write_expire fifo_batch front_merges writes_starved async_depth; do
        echo 7 >"$d/queue/iosched/$t"
    done
done

"$IOT" --json --proc-root "$P" --sys-root "$S" -d 0.3 -n 8 >"$TMP/m.json" 2>"$TMP/err" &
iot=$!
# (20 s: a first sample of 200 devices' files on a loaded machine can take longer than 5)
wait_until 20 eval '[ "$(wc -l <"$TMP/m.json")" -ge 2 ]' || fail "no samples: $(cat "$TMP/err")"
fds=$(ls "/proc/$iot/fd" | wc -l)
# Change a device early in the list (its files held) and the last one (past the budget),
# in place, as sysfs does.
echo 128 >"$S/class/block/disk0/queue/nr_requests"
echo 9 >"$S/class/block/disk0/queue/iosched/fifo_batch"
echo 32 >"$S/class/block/disk$((N - 1))/queue/nr_requests"
t_change=$(date +%s.%N)
wait "$iot" || fail "iotriage failed: $(cat "$TMP/err")"

[ "$fds" -le 560 ] || fail "$fds files open with $N devices: the budget is 512 for the devices"
[ "$fds" -ge 100 ] || fail "only $fds files open: the devices' files are not kept"
lines=$(wc -l <"$TMP/m.json")
[ "$lines" = 8 ] || fail "$lines samples"
after=0
for i in $(seq "$lines"); do
    line=$(sed -n "${i}p" "$TMP/m.json")
    n=$(jq '[.devices[] | select(.scheduler == "mq-deadline" and .hw_queues == 1)] | length' <<<"$line")
    [ "$n" = "$N" ] || fail "sample $i shows $n of the $N devices as they are"
    ts=$(jq -r .ts <<<"$line")
    between "$ts" "$t_change" 1e12 || continue
    after=$((after + 1))
    got=$(jq -c --arg l "disk$((N - 1))" '[.devices[] | select(.name == "disk0" or .name == $l) | .nr_requests] + [.devices[] | select(.name == "disk0") | .tunables.fifo_batch]' <<<"$line")
    [ "$got" = '[128,32,"9"]' ] || fail "sample $i (ts $ts), after the change: $got"
done
[ "$after" -ge 3 ] || fail "only $after samples after the change"
ok "$N devices in every sample, $fds files open (budget 512 for the devices), changes seen in the $after samples after them"
