#!/usr/bin/env bash
# What the BPF lens costs per I/O and per context switch (issue #13; docs/performance.md).
#
# On the fastest block device this machine can make, a loop device over a file in tmpfs,
# fio runs a 4 KiB random read load at full rate, alternately with iotriage running
# (`iotriage -b`, so the lens is loaded) and with `iotriage -b --no-bpf`, ROUNDS times
# each. Per run: IOPS, context switches per second, and the CPU the whole machine spent
# per I/O (from /proc/stat, all CPUs, user+system+irq+softirq), so the lens's share is
# the difference between the two modes. The iotriage process's own refresh cost is in
# both modes and cancels out. On a shared machine that difference drowns in the noise, so
# one more run, `stats`, holds the kernel's BPF statistics on (BPF_ENABLE_STATS, held by
# build/bench/bpfstats only for that run) and reads the run time of each of the lens's
# programs: the lens's own CPU per I/O and per context switch. That run's IOPS are not
# comparable: timing every program run costs far more than the programs (seen: -35 %).
#
# Usage (root): bench/lens.sh [ROUNDS] [SECONDS] [ENGINE]
#   ROUNDS   runs per mode (default 3), SECONDS per run (default 8),
#   ENGINE   psync (one synchronous reader per CPU: a context switch per I/O, the
#            lens's worst case) or libaio (iodepth 32; default psync)
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
IOT=$ROOT/iotriage
ROUNDS=${1:-3}
SECS=${2:-8}
ENGINE=${3:-psync}
[ "$(id -u)" = 0 ] || { echo "bench/lens.sh: needs root" >&2; exit 77; }
for t in fio losetup jq; do
    command -v "$t" >/dev/null || { echo "bench/lens.sh: $t missing" >&2; exit 77; }
done
[ -x "$IOT" ] || { echo "bench/lens.sh: build ./iotriage first" >&2; exit 1; }

DIR=$(mktemp -d /tmp/iotriage-lensbench.XXXXXX)
LOOP=
IOTPID=
STATSPID=
STATS=$ROOT/build/bench/bpfstats
[ -x "$STATS" ] || { echo "bench/lens.sh: make build/bench/bpfstats first" >&2; exit 1; }
cleanup() {
    [ -n "$IOTPID" ] && kill "$IOTPID" 2>/dev/null && wait "$IOTPID" 2>/dev/null
    [ -n "$STATSPID" ] && kill "$STATSPID" 2>/dev/null && wait "$STATSPID" 2>/dev/null
    [ -n "$LOOP" ] && losetup -d "$LOOP" 2>/dev/null
    mountpoint -q "$DIR" && umount "$DIR"
    rmdir "$DIR" 2>/dev/null
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP
mount -t tmpfs -o size=300m iotriage-lensbench "$DIR" || exit 1
dd if=/dev/zero of="$DIR/disk" bs=1M count=256 status=none || exit 1
LOOP=$(losetup -f --show "$DIR/disk") || exit 1
NAME=${LOOP#/dev/}
NCPU=$(nproc)
if [ "$ENGINE" = libaio ]; then
    FIO_ARGS=(--ioengine=libaio --iodepth=32 --numjobs=1)
else
    FIO_ARGS=(--ioengine=psync --numjobs="$NCPU")
fi

# cpu_ticks: busy ticks of all CPUs (user nice system irq softirq steal)
cpu_ticks() { awk '$1 == "cpu" { print $2 + $3 + $4 + $7 + $8 + $9 }' /proc/stat; }
ctxt() { awk '$1 == "ctxt" { print $2 }' /proc/stat; }

# prog_stats PID: "name run_time_ns run_cnt" of each BPF program process PID holds
prog_stats() {
    local id
    # a program's id is in its own fd's fdinfo and in its link's: each once
    for id in $(cat /proc/"$1"/fdinfo/* 2>/dev/null | awk '$1 == "prog_id:" { print $2 }' | sort -un); do
        bpftool -j prog show id "$id" 2>/dev/null |
            jq -r '"\(.name) \(.run_time_ns // 0) \(.run_cnt // 0)"'
    done | sort
}

# run MODE: one fio run beside iotriage in that mode; prints "MODE iops ctxsw/s us/io"
run() {
    local mode=$1
    if [ "$mode" != nobpf ]; then
        "$IOT" -b -d 1 >/dev/null 2>&1 &
    else
        "$IOT" -b -d 1 --no-bpf >/dev/null 2>&1 &
    fi
    IOTPID=$!
    sleep 1                     # the lens is loaded and attached
    local t0 c0 x0 t1 c1 x1
    if [ "$mode" = stats ]; then
        "$STATS" >/dev/null &
        STATSPID=$!
        sleep 0.2
        prog_stats "$IOTPID" >"$DIR/p0"
    fi
    t0=$(date +%s.%N); c0=$(cpu_ticks); x0=$(ctxt)
    fio --name=lensbench --filename="$LOOP" "${FIO_ARGS[@]}" --bs=4k --rw=randread \
        --time_based --runtime="$SECS" --group_reporting --output-format=json \
        --output="$DIR/fio.json" >/dev/null 2>&1
    t1=$(date +%s.%N); c1=$(cpu_ticks); x1=$(ctxt)
    if [ "$mode" = stats ]; then
        prog_stats "$IOTPID" >"$DIR/p1"
        kill "$STATSPID"; wait "$STATSPID" 2>/dev/null; STATSPID=
        # per program: ns per event over the run; per I/O and per context switch
        join "$DIR/p0" "$DIR/p1" | awk -v ios="$(jq '.jobs[0].read.total_ios' "$DIR/fio.json")" \
            -v cs="$(( $(ctxt) - x0 ))" '
            { t = $4 - $2; n = $5 - $3; if (n > 0) printf "  %-16s %9d runs %7.0f ns each\n", $1, n, t / n
              if ($1 ~ /^lens_(switch|wakeup)/) sched += t; else if ($1 != "lens_exit") blk += t }
            END { printf "  lens in the kernel: %.2f us per I/O (block events), %.0f ns per context switch (sched events)\n",
                         blk / 1000 / ios, sched / cs }' >&2
    fi
    kill "$IOTPID"; wait "$IOTPID" 2>/dev/null; IOTPID=
    local iops hz
    iops=$(jq '.jobs[0].read.iops' "$DIR/fio.json")
    hz=$(getconf CLK_TCK)
    awk -v m="$mode" -v iops="$iops" -v s="$SECS" -v dt="$(echo "$t1 - $t0" | bc)" \
        -v c="$((c1 - c0))" -v x="$((x1 - x0))" -v hz="$hz" \
        'BEGIN { printf "%-6s %10.0f IOPS %10.0f ctxsw/s %8.2f us CPU/IO\n", m, iops, x / dt,
                 c / hz * 1e6 / (iops * s) }'
}

echo "loop device $NAME over tmpfs, fio 4k randread ${FIO_ARGS[*]}, ${SECS}s x $ROUNDS per mode, $NCPU CPUs"
for _ in $(seq "$ROUNDS"); do
    run nobpf
    run lens
done | tee "$DIR/runs"
run stats
awk '$1 != "stats" { n[$1]++; iops[$1] += $2; cs[$1] += $4; cpu[$1] += $6 }
     END {
       for (m in n) printf "mean %-6s %10.0f IOPS %10.0f ctxsw/s %8.2f us CPU/IO\n", m, iops[m]/n[m], cs[m]/n[m], cpu[m]/n[m]
       if (n["lens"] && n["nobpf"]) {
         d = (iops["lens"]/n["lens"]) / (iops["nobpf"]/n["nobpf"]) * 100 - 100
         printf "lens: IOPS %+.1f %%, CPU per I/O %+.2f us\n", d, cpu["lens"]/n["lens"] - cpu["nobpf"]/n["nobpf"]
       }
     }' "$DIR/runs"
