#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The lab disk (tests/lab) must behave as built: 2 ms per request, at most 4 at
# once. One synchronous reader then sees ~1/latency IOPS at ~2 ms; eight see
# ~threads/latency IOPS in total at ~twice the latency (they queue for the 4
# slots). And every I/O scheduler can be set on it: none, mq-deadline and kyber
# always; bfq where the kernel offers it (the VM lane's kernel; this one may not).
# What is asserted is what no load can change: the disk is never faster than built
# (a request takes at least its latency; at most `slots` run at once), and eight
# readers get more done than one (it has parallelism). How close to the built figures
# a run comes depends on the machine's load: printed here, measured in `make bench`
# terms, never a pass/fail bound.
# Exit 0 = pass, 77 = skipped (reason on stderr), anything else = fail.
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"

LAT_US=2000
THREADS=4

# shellcheck source-path=SCRIPTDIR source=../lab/lab.sh
. "$(dirname "$0")/../lab/lab.sh"

for t in fio jq; do
    command -v "$t" >/dev/null || { echo "test_labdisk: $t not installed" >&2; exit 77; }
done
# Our own cleanup, set before lab_up so it runs first on exit: stop a running
# fio (it keeps the device busy), then lab.sh takes the lab down.
fio_pid=
fio_out=$TMP/fio.json
trap '[ -z "$fio_pid" ] || { kill "$fio_pid"; wait "$fio_pid"; } 2>/dev/null; it_cleanup' EXIT

lab_up "$LAT_US" "$THREADS" 64
rc=$?
[ "$rc" = 77 ] && { echo "test_labdisk: skipped, no lab disk here" >&2; exit 77; }
[ "$rc" = 0 ] || { echo "test_labdisk: FAIL: lab_up failed" >&2; exit 1; }
echo "lab disk $LAB_DEV: latency ${LAB_LATENCY_US} us, ${LAB_THREADS} slots (capacity $((LAB_THREADS * 1000000 / LAB_LATENCY_US)) IOPS)"

failed=0
# check WHAT VALUE LO HI: a line for the log, and a failure if VALUE is outside.
check() {
    if awk -v v="$2" -v lo="$3" -v hi="$4" 'BEGIN { exit !(v >= lo && v <= hi) }'; then
        printf '  ok    %-48s %9.1f  (accept %s..%s)\n' "$1" "$2" "$3" "$4"
    else
        printf '  FAIL  %-48s %9.1f  (accept %s..%s)\n' "$1" "$2" "$3" "$4"
        failed=1
    fi
}

# randread JOBS SECONDS: JOBS psync 4 KiB random readers; sets iops and lat (mean
# completion latency, us), 0 when fio failed. fio runs in the background so
# that a signal is handled at once, not when fio is done.
randread() {
    iops=0 lat=0
    fio --name=labdisk --filename="$LAB_DEV" --ioengine=psync --direct=1 \
        --bs=4k --rw=randread --numjobs="$1" --group_reporting \
        --time_based --ramp_time=500ms --runtime="$2" \
        --output-format=json --output="$fio_out" >/dev/null &
    fio_pid=$!
    wait "$fio_pid" || { fio_pid=; return 1; }
    fio_pid=
    read -r iops lat < <(jq -r '.jobs[0] | select(.error == 0) | .read |
                                "\(.iops) \(.clat_ns.mean / 1000)"' "$fio_out")
    : "${iops:=0}" "${lat:=0}"
}

echo none >"/sys/block/$LAB_NAME/queue/scheduler"

# At most: 1/latency IOPS for one reader, slots/latency for many (5 % for fio's
# rounding and the ramp's edge); at least the latency per request.
one_max=$(( 1000000 * 105 / 100 / LAT_US )) many_max=$(( THREADS * 1000000 * 105 / 100 / LAT_US ))
lat_min=$(( LAT_US * 97 / 100 ))

randread 1 3
printf '1 reader:  %.1f IOPS, mean completion latency %.1f us (built: %d IOPS, %d us)\n' \
    "$iops" "$lat" $(( 1000000 / LAT_US )) "$LAT_US"
check "1 reader IOPS, at most 1/latency" "$iops" 1 "$one_max"
check "1 reader mean clat us, at least the latency" "$lat" "$lat_min" 1e9
one=$iops

randread 8 3
printf '8 readers: %.1f IOPS, mean completion latency %.1f us (built: %d IOPS, ~%d us)\n' \
    "$iops" "$lat" $(( THREADS * 1000000 / LAT_US )) $(( 2 * LAT_US ))
check "8 readers IOPS, at most slots/latency" "$iops" 1 "$many_max"
check "8 readers mean clat us, at least the latency" "$lat" "$lat_min" 1e9
# Parallelism: four slots serve eight readers more than one slot-time apart.
check "8 readers IOPS over 1 reader's (slots > 1)" \
    "$(awk -v a="$iops" -v b="$one" 'BEGIN { print (b > 0 ? a / b : 0) }')" 1.5 1e9

# Each scheduler: set it, read it back as the active one ([name]), do some I/O.
for s in none mq-deadline kyber bfq; do
    f=/sys/block/$LAB_NAME/queue/scheduler
    if [ "$s" = bfq ] && ! sched_offered "$LAB_NAME" bfq; then
        skip_part "scheduler bfq on the lab disk (it offers: $(tr -d '[]' <"$f" | xargs)): $NO_BFQ"
        continue
    fi
    if ! echo "$s" >"$f" 2>/dev/null; then
        echo "  FAIL  scheduler $s: cannot be set (available: $(cat "$f"))"
        failed=1
        continue
    fi
    if ! grep -q "\[$s\]" "$f"; then
        echo "  FAIL  scheduler $s: not active after setting it: $(cat "$f")"
        failed=1
        continue
    fi
    randread 4 1
    check "scheduler $s active, 4 readers IOPS" "$iops" 1 "$many_max"
done

if [ "$failed" != 0 ]; then
    echo "test_labdisk: FAIL" >&2
    exit 1
fi
echo "test_labdisk: pass"
