#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# What the always-on recorder costs (issue #16: at most 0.5 % of one core on average and
# 50 MB of disk a day, at 1,000 processes with a few doing I/O). Needs root (taskstats).
#
# Method. bench/spawn makes the population: N idle processes plus 2 readers and 2 writers
# (40 small requests a second each) on a scratch file. record_run() runs through
# tests/helpers/recorder (the same loop `iotriage record` will run):
#   CPU: two runs at a 1 s interval, R1 and R2 samples; the steady cost of one sample is
#        (CPU(R2) - CPU(R1)) / (R2 - R1), user + system from /usr/bin/time, which leaves
#        out the start (the first sample reads every task in full). CPU share at interval
#        I is that cost / I. A run at the default interval then checks it whole, start
#        included.
#   Disk: the R2 run's samples, decompressed, are stored again with 1, 2 and 6 samples per
#        zstd frame (storewriter import): at the default interval and flush period a frame
#        holds flush/interval samples. MB a day = bytes per sample x samples a day. The
#        lines are those of a 1 s interval; a longer interval averages over more time but
#        lists about the same active processes, so the line size carries over (checked by
#        the direct run).
# Usage: bench/record.sh [N]   (RECORD_BENCH_DIRECT=0 skips the 2-minute direct run)
set -u
cd "$(dirname "$0")/.." || exit 2
N=${1:-1000}
BUILD=${BUILD:-build}
make -s iotriage "$BUILD/bench/spawn" "$BUILD/tests/recorder" "$BUILD/tests/storewriter" >/dev/null || exit 2
[ "$(id -u)" = 0 ] || { echo "record bench: needs root (taskstats)" >&2; exit 2; }
command -v zstd >/dev/null || { echo "record bench: needs the zstd tool" >&2; exit 2; }
out=$(mktemp -d /tmp/iotriage-benchrec.XXXXXX)
SPAWN_PID=
cleanup() {
    [ -n "$SPAWN_PID" ] && kill -TERM -- "-$SPAWN_PID" 2>/dev/null && wait "$SPAWN_PID" 2>/dev/null
    rm -rf "$out"
}
trap cleanup EXIT
die() { echo "record bench: $*" >&2; exit 1; }

"$BUILD/bench/spawn" -r 2 -w 2 -f "$out/io.dat" "$N" >"$out/ready" &
SPAWN_PID=$!
for ((i = 0; i < 600; i++)); do
    grep -q '^ready' "$out/ready" && break
    kill -0 "$SPAWN_PID" 2>/dev/null || die "spawn failed"
    sleep 0.1
done
grep -q '^ready' "$out/ready" || die "spawn did not come up"
procs=$(find /proc -maxdepth 1 -name '[0-9]*' | wc -l)

cpu_of() { # DIR INTERVAL SAMPLES FLUSH -> seconds of user+system
    /usr/bin/time -f '%U %S' -o "$out/time" "$BUILD/tests/recorder" "$1" "$2" "$3" "$4" ||
        die "recorder $*"
    awk '{ printf "%.3f", $1 + $2 }' "$out/time"
}
R1=5 R2=65
c1=$(cpu_of "$out/r1" 1 $R1 10)
c2=$(cpu_of "$out/r2" 1 $R2 10)
steady=$(awk -v a="$c1" -v b="$c2" -v r1=$R1 -v r2=$R2 'BEGIN { printf "%.5f", (b - a) / (r2 - r1) }')
cat "$out"/r2/*.iotr.zst | zstd -q -dc >"$out/r2.jsonl" || die "zstd -dc"
lines=$(wc -l <"$out/r2.jsonl")
[ "$lines" = $R2 ] || die "expected $R2 samples, got $lines"
active=$(jq -s '[.[].processes | length] | add / length' "$out/r2.jsonl")
raw=$(awk '{ n += length($0) + 1 } END { printf "%.0f", n / NR }' "$out/r2.jsonl")

echo "# record bench $(date -u +%Y-%m-%dT%H:%M:%SZ): $procs processes ($N idle + 2 readers + 2 writers), $(nproc) CPUs"
printf 'steady CPU per sample: %.2f ms (R1=%d: %.2f s, R2=%d: %.2f s)\n' \
    "$(awk -v s="$steady" 'BEGIN { print s * 1000 }')" $R1 "$c1" $R2 "$c2"
printf 'per sample: %.1f processes listed, %d bytes of JSON\n' "$active" "$raw"
printf '%-10s %10s\n' interval 'CPU %'
for iv in 1 2 5 10; do
    printf '%-10s %10.3f\n' "${iv} s" "$(awk -v s="$steady" -v i="$iv" 'BEGIN { print s / i * 100 }')"
done
printf '%-18s %14s %14s %14s\n' 'samples/frame' 'bytes/sample' 'MB/day @1 s' 'MB/day @5 s'
for k in 1 2 6; do
    rm -rf "$out/imp"
    "$BUILD/tests/storewriter" import "$out/imp" "$out/r2.jsonl" "$k" >/dev/null || die import
    b=$(cat "$out"/imp/*.iotr.zst | wc -c)
    awk -v b="$b" -v n="$lines" -v k="$k" 'BEGIN { s = b / n;
        printf "%-18s %14.0f %14.1f %14.1f\n", k, s, s * 86400 / 1e6, s * 86400 / 5 / 1e6 }'
done
if [ "${RECORD_BENCH_DIRECT:-1}" = 1 ]; then
    D=24
    cd_=$(cpu_of "$out/rd" 5 $D 10)
    bd=$(cat "$out"/rd/*.iotr.zst | wc -c)
    awk -v c="$cd_" -v b="$bd" -v d=$D 'BEGIN {
        printf "direct run at the default (5 s, flush 10 s), %d samples, start included: CPU %.3f %% of one core, %.0f bytes/sample = %.1f MB/day\n",
            d, c / (d * 5) * 100, b / d, b / d * 86400 / 5 / 1e6 }'
fi
