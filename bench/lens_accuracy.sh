#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# What the lens's duty cycle costs in accuracy (issue #40; docs/performance.md "Issue
# #40"): on a loop device over tmpfs read at full rate (fio, ENGINE libaio at iodepth 32
# or psync with two readers), two iotriage processes run at once, each with its own lens:
# the default one (the duty cycle watches 50 ms of every 800 ms) and one with
# IOTRIAGE_LENS_DUTY=1 (its request programs always attached). They see the same
# requests in the same intervals, so their ratio interval by interval is the error of
# the cycled figures against the lens watching all the time (which itself times a
# sample of the requests at this rate: sampled timing, lens_maps.h). `iowait`: the fio
# readers' iowait summed (io_delay_pct from the lens), whose scheduler program is cycled
# with the request programs. On the lab disk (slower than the
# threshold) the cycle never engages and nothing changes (test_lens_duty).
#
# Usage (root): bench/lens_accuracy.sh [ENGINE] [SAMPLES]   (libaio, 14 one-second samples)
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
IOT=${IOT:-$ROOT/iotriage}
ENGINE=${1:-libaio}
SAMPLES=${2:-14}
[ "$(id -u)" = 0 ] || { echo "bench/lens_accuracy.sh: needs root" >&2; exit 77; }
for t in fio losetup jq; do
    command -v "$t" >/dev/null || { echo "bench/lens_accuracy.sh: $t missing" >&2; exit 77; }
done
[ -x "$IOT" ] || { echo "bench/lens_accuracy.sh: build ./iotriage first" >&2; exit 1; }
DIR=$(mktemp -d /tmp/iotriage-lensacc.XXXXXX)
LOOP=
PIDS=()
cleanup() {
    local p
    for p in "${PIDS[@]:-}"; do [ -n "$p" ] && kill "$p" 2>/dev/null; done
    wait 2>/dev/null
    [ -n "$LOOP" ] && losetup -d "$LOOP" 2>/dev/null
    mountpoint -q "$DIR/mnt" 2>/dev/null && umount "$DIR/mnt"
    rm -rf "$DIR"
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP
mkdir "$DIR/mnt"
mount -t tmpfs -o size=300m iotriage-lensacc "$DIR/mnt" || exit 1
dd if=/dev/zero of="$DIR/mnt/disk" bs=1M count=256 status=none || exit 1
LOOP=$(losetup -f --show "$DIR/mnt/disk") || exit 1
NAME=${LOOP#/dev/}
echo none >/sys/block/"$NAME"/queue/scheduler || exit 1
if [ "$ENGINE" = libaio ]; then
    args=(--ioengine=libaio --iodepth=32 --numjobs=1)
else
    args=(--ioengine=psync --numjobs=2)
fi
fio --name=lensacc --filename="$LOOP" "${args[@]}" --direct=1 --bs=4k --rw=randread \
    --time_based --runtime="$((SAMPLES + 4))" >/dev/null 2>&1 &
PIDS+=($!)
sleep 1
"$IOT" --json -d 1 -n "$SAMPLES" >"$DIR/cycled.json" 2>/dev/null &
PIDS+=($!)
IOTRIAGE_LENS_DUTY=1 "$IOT" --json -d 1 -n "$SAMPLES" >"$DIR/attached.json" 2>/dev/null &
PIDS+=($!)
wait
PIDS=()
q='. as $s | ([$s.processes[] | select(.comm == "fio" and .io_delay_source == "bpf") |
   .io_delay_pct] | add) as $w | .devices[] | select(.name == $d) | .stages | select(. != null) |
   [.duty, .sampled, .requests, .device_p50_ms, .device_p99_ms, .total_p50_ms, .total_p99_ms,
    .device_ms, .depth, $w] | map(. // "") | @tsv'
jq -r --arg d "$NAME" "$q" "$DIR/cycled.json" >"$DIR/c.tsv"
jq -r --arg d "$NAME" "$q" "$DIR/attached.json" >"$DIR/a.tsv"
# the intervals where the cycle ran (duty under 0.5), both lenses with figures, past the
# first two (the cycle's start, the other lens's load)
paste "$DIR/c.tsv" "$DIR/a.tsv" | awk -F'\t' -v e="$ENGINE" -v la="$(cut -d' ' -f1-3 /proc/loadavg)" '
    NR > 2 && $1 != "" && $1 < 0.5 && $4 != "" && $14 != "" {
        n++
        for (i = 3; i <= 10; i++) {
            if ($(i + 10) <= 0 || $i == "") continue
            r = $i / $(i + 10); c[i]++; s[i] += r; v[i, c[i]] = r
        } }
    END {
        split("duty sampled requests device_p50 device_p99 total_p50 total_p99 device_mean depth iowait", nm, " ")
        printf "%s, %d intervals with the cycle running (load average %s): the cycled lens / the attached lens, interval by interval\n", e, n, la
        for (i = 3; i <= 10; i++) {
            if (!c[i]) continue
            # median and the middle 80 %
            m = c[i]; for (a = 1; a <= m; a++) w[a] = v[i, a]
            for (a = 1; a <= m; a++) for (b = a + 1; b <= m; b++) if (w[b] < w[a]) { t = w[a]; w[a] = w[b]; w[b] = t }
            lo = int(m * 0.1) + 1; hi = int(m * 0.9); if (hi < 1) hi = 1
            printf "  %-12s median %.3f  mean %.3f  10-90 %% %.3f-%.3f  (%d)\n", nm[i], w[int((m + 1) / 2)], s[i] / m,
                   w[lo], w[hi], m
        } }'
