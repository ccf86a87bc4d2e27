#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# What the BPF lens costs per I/O and per context switch (issue #13; docs/performance.md).
#
# Devices: the fastest block device this machine can make, a loop device over a file in
# tmpfs (made and removed here), and the lab disk (tests/lab/lab.sh: a loop device over
# slowfs, LAB_US microseconds a request, LAB_THREADS at once). On each, fio runs 4 KiB
# random direct reads at the device's full rate with each engine (psync: one synchronous
# reader per CPU, a context switch per I/O, the lens's worst case; libaio: iodepth 32),
# beside `iotriage -b` (the lens loaded: "on") or `iotriage -b --no-bpf` ("off"). The
# iotriage process's own refresh is in both and cancels out. Off and on alternate
# (off on on off ...), ROUNDS runs each, and the medians are compared: the machine is
# shared and its load moves during a run. "paired": the median of each round's change
# (its on run against its own off run, side by side in time), which a drift of the
# machine between rounds does not move. Per run: IOPS and the CPU the whole machine
# spent per I/O (/proc/stat, all CPUs, user+system+irq+softirq+steal).
#
# Per context switch: `perf bench sched pipe` pinned to one CPU (two tasks ping-pong
# through a pipe, two switches and two wakeups a round trip, none in iowait: the
# path every switch of the machine takes), on and off alternated; the difference of the
# medians over the switches counted in /proc/stat.
#
# Then, once per device and engine, a run with the kernel's BPF statistics held on
# (build/bench/bpfstats, only for that run) reads the run time of each of the lens's
# programs: the lens's own CPU per I/O and per switch, whatever else the machine does.
# Those runs' IOPS do not count (timing every program run costs much more than the
# programs themselves).
#
# At the end: what a run of an attached program costs its caller beyond what the
# statistics see (build/bench/tpcost: the tracepoint's dispatch and the trampoline), and
# the figures as markdown rows for docs/performance.md ("Issue #40"): the IOPS ratio and
# the CPU per I/O added, and the statistics runs' per-program times, each with the load
# average.
#
# Usage (root): bench/lens.sh [ROUNDS] [SECONDS]    (default 5 runs of 6 s per mode; ROUNDS
# 0: the statistics runs alone, which hold under load where the IOPS do not)
# Environment: IOT (the iotriage binary; default ./iotriage), LENS_DEVICES ("tmpfs lab"),
# LENS_ENGINES ("psync libaio"), LENS_SCHED (the devices' scheduler: none, the fastest;
# mq-deadline adds the insert event), LAB_US (500), LAB_THREADS (4), NO_STATS=1 (skip
# the statistics runs), NO_PIPE=1 (skip the context switch runs), LENS_DUTY=1 (the lens
# with its request programs always attached, IOTRIAGE_LENS_DUTY=1: the cost without the
# duty cycle, docs/performance.md).
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
IOT=${IOT:-$ROOT/iotriage}
ROUNDS=${1:-5}
SECS=${2:-6}
DEVICES=${LENS_DEVICES:-tmpfs lab}
ENGINES=${LENS_ENGINES:-psync libaio}
SCHED=${LENS_SCHED:-none}
[ "$(id -u)" = 0 ] || { echo "bench/lens.sh: needs root" >&2; exit 77; }
for t in fio losetup jq bpftool; do
    command -v "$t" >/dev/null || { echo "bench/lens.sh: $t missing" >&2; exit 77; }
done
[ -x "$IOT" ] || { echo "bench/lens.sh: build ./iotriage first" >&2; exit 1; }
[ -n "${LENS_DUTY:-}" ] && export IOTRIAGE_LENS_DUTY=$LENS_DUTY
STATS=$ROOT/build/bench/bpfstats
[ -x "$STATS" ] || { echo "bench/lens.sh: make build/bench/bpfstats first" >&2; exit 1; }

DIR=$(mktemp -d /tmp/iotriage-lensbench.XXXXXX)
LOOP=
IOTPID=
STATSPID=
cleanup() {
    [ -n "$IOTPID" ] && kill "$IOTPID" 2>/dev/null && wait "$IOTPID" 2>/dev/null
    [ -n "$STATSPID" ] && kill "$STATSPID" 2>/dev/null && wait "$STATSPID" 2>/dev/null
    [ -n "$LOOP" ] && losetup -d "$LOOP" 2>/dev/null
    mountpoint -q "$DIR/mnt" 2>/dev/null && umount "$DIR/mnt"
    rm -rf "$DIR"
}
# Set before lab_up: lab.sh runs this EXIT trap first, then its own lab_down.
trap cleanup EXIT
trap 'exit 130' INT TERM HUP
NCPU=$(nproc)
HZ=$(getconf CLK_TCK)

cpu_ticks() { awk '$1 == "cpu" { print $2 + $3 + $4 + $7 + $8 + $9 }' /proc/stat; }
ctxt() { awk '$1 == "ctxt" { print $2 }' /proc/stat; }
median() { sort -g | awk '{ v[NR] = $1 } END { if (NR == 0) print "nan"; else if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

# iot_start MODE: iotriage beside the load, the lens loaded (on) or not (off); in the
# statistics run its JSON is kept, for the share of the requests the lens timed
iot_start() {
    if [ "$1" = off ]; then
        "$IOT" -b -d 1 --no-bpf >/dev/null 2>&1 &
    elif [ "$1" = stats ]; then
        "$IOT" -b -d 1 --json >"$DIR/iot.json" 2>/dev/null &
    else
        "$IOT" -b -d 1 >/dev/null 2>&1 &
    fi
    IOTPID=$!
    local i n last=-1
    # until the lens is attached (or a second has passed with --no-bpf): its links come
    # one by one, so until their count holds for two polls
    for i in $(seq 100); do
        sleep 0.05
        [ "$1" = off ] && [ "$i" -ge 20 ] && break
        n=$(grep -s '^link_id:' /proc/"$IOTPID"/fdinfo/* | wc -l)
        [ "$n" -gt 0 ] && [ "$n" = "$last" ] && break
        last=$n
    done
}
iot_stop() { kill "$IOTPID"; wait "$IOTPID" 2>/dev/null; IOTPID=; }

# prog_stats: "name run_time_ns run_cnt" of each BPF program iotriage holds
prog_stats() {
    local id
    for id in $(cat /proc/"$IOTPID"/fdinfo/* 2>/dev/null | awk '$1 == "prog_id:" { print $2 }' | sort -un); do
        bpftool -j prog show id "$id" 2>/dev/null |
            jq -r '"\(.name) \(.run_time_ns // 0) \(.run_cnt // 0)"'
    done | LC_ALL=C sort
}
stats_on() { "$STATS" >/dev/null & STATSPID=$!; sleep 0.2; prog_stats >"$DIR/p0"; }
# stats_off SWITCHES LABEL [DUTY IOS]: per program, ns a run. A request the duty cycle
# watches runs bio_queue, getrq, (insert, with a scheduler), issue and complete once
# each: the sum of their means is the lens's time per watched request (the counts are
# machine-wide: other devices' requests are in them too), times DUTY (the share of the
# time they were attached) its time per request of the run. The scheduler programs'
# time over the switches counted in /proc/stat is the lens's time per context switch,
# and over the run's IOS (fio's reads) its time per read (a synchronous reader's
# iowait: a switch out and a wakeup each read). Timing every run adds the statistics'
# own clock reads, and they do not see the tracepoint's dispatch and the trampoline
# (build/bench/tpcost, run last, measures those). A line goes to $DIR/md.stats for
# docs/performance.md.
stats_off() {
    # (taken already when iotriage had to stop first: fio_run)
    if [ -s "$DIR/p1.keep" ]; then mv "$DIR/p1.keep" "$DIR/p1"; else prog_stats >"$DIR/p1"; fi
    kill "$STATSPID"; wait "$STATSPID" 2>/dev/null; STATSPID=
    # a program absent at the start (attached after it) ran only within the run: from 0
    local la
    la=$(cut -d' ' -f1 /proc/loadavg)
    LC_ALL=C join -a 2 -e 0 -o 0,1.2,1.3,2.2,2.3 "$DIR/p0" "$DIR/p1" | awk -v cs="$1" -v label="$2" \
        -v la="$la" -v md="$DIR/md" -v duty="${3:-}" -v ios="${4:-0}" '
        { t = $4 - $2; n = $5 - $3; if (n <= 0) next
          printf "    %-18s %10d runs %6.0f ns each\n", $1, n, t / n
          each[$1] = t / n; runs[$1] = n
          if ($1 ~ /^lens_(switch|wakeup)/) sched += t }
        END {
          rq = each["lens_bio_queue"] + each["lens_getrq"] + each["lens_rq_issue"] + each["lens_rq_complete"]
          if (runs["lens_rq_insert"] * 2 >= runs["lens_rq_issue"]) rq += each["lens_rq_insert"]
          sr = ios > 0 ? sched / ios : 0
          am = duty != "" ? rq * duty : rq
          printf "  %s: lens programs %.0f ns per watched request (%.0f per read at duty %s), %.0f ns per context switch, scheduler programs %.0f ns per read (load average %s)\n",
                 label, rq, am, (duty != "" ? duty : 1), (cs > 0 ? sched / cs : 0), sr, la
          if (ios > 0)
              printf "| %s | %.0f | %.0f | %.0f | %.0f | %.0f | %s | %.0f | %.0f | %s | %.0f | %s |\n", label,
                     each["lens_bio_queue"], each["lens_getrq"], each["lens_rq_issue"], each["lens_rq_complete"],
                     rq, duty, am, each["lens_switch"],
                     ("lens_wakeup" in each ? sprintf("%.0f", each["lens_wakeup"]) : "(none)"), sr, la >> (md ".stats") }'
}

# fio_run DEV ENGINE MODE: one run; prints "MODE IOPS NS_CPU_PER_IO"
fio_run() {
    local dev=$1 engine=$2 mode=$3 args
    if [ "$engine" = libaio ]; then
        args=(--ioengine=libaio --iodepth=32 --numjobs=1)
    else
        args=(--ioengine=psync --numjobs="$PSYNC_JOBS")
    fi
    iot_start "$mode"
    [ "$mode" = stats ] && stats_on
    local c0 x0 c1 x1
    c0=$(cpu_ticks); x0=$(ctxt)
    fio --name=lensbench --filename="$dev" "${args[@]}" --direct=1 --bs=4k --rw=randread \
        --time_based --runtime="$SECS" --group_reporting --output-format=json \
        --output="$DIR/fio.json" >/dev/null 2>&1
    c1=$(cpu_ticks); x1=$(ctxt)
    local ios iops
    ios=$(jq '.jobs[0].read.total_ios' "$DIR/fio.json")
    iops=$(jq '.jobs[0].read.iops' "$DIR/fio.json")
    [ "$mode" = stats ] && prog_stats >"$DIR/p1.keep"
    iot_stop
    # On a fast device the lens times only a sample of the requests (docs/json.md,
    # stages.sampled): the median share over the run's samples.
    [ "$mode" = stats ] && jq -r --arg d "${dev#/dev/}" '.devices[]? | select(.name == $d) |
        .stages.sampled // empty' "$DIR/iot.json" 2>/dev/null | median |
        awk '{ printf "    requests timed: %s of them (stages.sampled, median)\n", $1 }' >&2
    if [ "$mode" = stats ]; then
        local duty
        duty=$(jq -r --arg d "${dev#/dev/}" '.devices[]? | select(.name == $d) |
            .stages.duty // empty' "$DIR/iot.json" 2>/dev/null | median)
        echo "    request programs watching: $duty of the time (stages.duty, median)" >&2
        stats_off "$((x1 - x0))" "$DEVNAME $engine" "$duty" "$ios" >&2
    fi
    awk -v m="$mode" -v iops="$iops" -v ios="$ios" -v c="$((c1 - c0))" -v hz="$HZ" \
        'BEGIN { printf "%s %.0f %.0f\n", m, iops, (ios > 0 ? c / hz * 1e9 / ios : 0) }'
}

# bench_dev DEV NAME: every engine, off and on alternated; one table row each
bench_dev() {
    local dev=$1 engine r m
    DEVNAME=$2
    for engine in $ENGINES; do
        : >"$DIR/runs"
        local la0 la1
        la0=$(cut -d' ' -f1 /proc/loadavg)
        for r in $(seq "$ROUNDS"); do
            # off on, then on off: a drift in the machine's load hits both modes alike
            if [ $((r % 2)) = 1 ]; then set -- off on; else set -- on off; fi
            for m in "$@"; do fio_run "$dev" "$engine" "$m" >>"$DIR/runs"; done
        done
        la1=$(cut -d' ' -f1 /proc/loadavg)
        [ -n "${NO_STATS:-}" ] || fio_run "$dev" "$engine" stats >/dev/null
        [ "$ROUNDS" -gt 0 ] || continue     # the statistics runs alone
        local off_iops on_iops off_cpu on_cpu spread
        off_iops=$(awk '$1 == "off" { print $2 }' "$DIR/runs" | median)
        on_iops=$(awk '$1 == "on" { print $2 }' "$DIR/runs" | median)
        off_cpu=$(awk '$1 == "off" { print $3 }' "$DIR/runs" | median)
        on_cpu=$(awk '$1 == "on" { print $3 }' "$DIR/runs" | median)
        spread=$(awk '$1 == "off" { if (!n++ || $2 < lo) lo = $2; if ($2 > hi) hi = $2 }
                      END { printf "%.0f-%.0f", lo, hi }' "$DIR/runs")
        local change ratio paired
        change=$(echo "($on_iops / $off_iops - 1) * 100" | bc -l)
        ratio=$(echo "$on_iops / $off_iops" | bc -l)
        # each round's on against its own off (the two runs side by side in time: the
        # machine's drift between rounds cancels), the median of those changes
        paired=$(awk '{ v[$1] = $2 } NR % 2 == 0 { print (v["on"] / v["off"] - 1) * 100 }' "$DIR/runs" | median)
        printf '%-12s %-7s %9.0f %9.0f %+7.1f %% %+7.1f %% %6.3f  %8.0f %8.0f %+7.0f  %-15s %s -> %s\n' \
            "$DEVNAME" "$engine" "$off_iops" "$on_iops" "$change" "$paired" "$ratio" "$off_cpu" "$on_cpu" \
            "$(echo "$on_cpu - $off_cpu" | bc -l)" "$spread" "$la0" "$la1" >>"$DIR/table"
        printf '| %s, %s | %s x %s s | %.0f | %.0f | %+.1f %% | %+.1f %% | %.0f | %.0f | %+.0f | %s | %s -> %s |\n' \
            "$DEVNAME" "$engine" "$ROUNDS" "$SECS" "$off_iops" "$on_iops" "$change" "$paired" "$off_cpu" \
            "$on_cpu" "$(echo "$on_cpu - $off_cpu" | bc -l)" "$spread" "$la0" "$la1" >>"$DIR/md"
    done
}

# pipe_run MODE: "MODE ns_per_round_trip switches_per_round_trip"
pipe_run() {
    local loops=50000 x0 x1 us
    iot_start "$1"
    [ "$1" = stats ] && stats_on
    x0=$(ctxt)
    us=$(taskset -c 0 perf bench sched pipe -l "$loops" 2>/dev/null | awk '/usecs\/op/ { print $1 }')
    x1=$(ctxt)
    [ "$1" = stats ] && stats_off "$((x1 - x0))" "pipe ping-pong" >&2
    iot_stop
    awk -v m="$1" -v us="$us" -v x="$((x1 - x0))" -v l="$loops" \
        'BEGIN { printf "%s %.1f %.2f\n", m, us * 1000, x / l }'
}

: >"$DIR/table"
echo "lens cost: $IOT, ${SECS}s runs, $ROUNDS per mode alternated, scheduler $SCHED, $NCPU CPUs, duty cycle ${IOTRIAGE_LENS_DUTY:+off (IOTRIAGE_LENS_DUTY=$IOTRIAGE_LENS_DUTY)}${IOTRIAGE_LENS_DUTY:-on}, load average $(cut -d' ' -f1-3 /proc/loadavg)"
for d in $DEVICES; do
    case $d in
    tmpfs)
        mkdir "$DIR/mnt"
        mount -t tmpfs -o size=300m iotriage-lensbench "$DIR/mnt" || exit 1
        dd if=/dev/zero of="$DIR/mnt/disk" bs=1M count=256 status=none || exit 1
        LOOP=$(losetup -f --show "$DIR/mnt/disk") || exit 1
        # A loop device keeps its queue settings across attachments: choose ours.
        echo "$SCHED" >/sys/block/"${LOOP#/dev/}"/queue/scheduler || exit 1
        PSYNC_JOBS=$NCPU
        bench_dev "$LOOP" tmpfs-loop
        losetup -d "$LOOP"; LOOP=
        umount "$DIR/mnt"
        ;;
    lab)
        . "$ROOT/tests/lab/lab.sh"
        lab_up "${LAB_US:-500}" "${LAB_THREADS:-4}" 64 || { echo "lab disk unavailable (make build/tests/slowfs)" >&2; continue; }
        echo "$SCHED" >/sys/block/"$LAB_NAME"/queue/scheduler || exit 1
        PSYNC_JOBS=${LAB_THREADS:-4}     # as many readers as the disk serves at once
        bench_dev "$LAB_DEV" "lab-${LAB_US:-500}us"
        lab_down
        ;;
    esac
done

if [ -z "${NO_PIPE:-}" ] && command -v perf >/dev/null && command -v taskset >/dev/null; then
    : >"$DIR/pipe"
    for r in $(seq "$ROUNDS"); do
        if [ $((r % 2)) = 1 ]; then set -- off on; else set -- on off; fi
        for m in "$@"; do pipe_run "$m" >>"$DIR/pipe"; done
    done
    [ -n "${NO_STATS:-}" ] || pipe_run stats >/dev/null
fi

echo
echo "device       engine   IOPS off   IOPS on  change  paired  ratio  CPU/IO off  on  added (ns)  off runs (IOPS) load average"
cat "$DIR/table"
if [ -s "$DIR/pipe" ]; then
    off=$(awk '$1 == "off" { print $2 }' "$DIR/pipe" | median)
    on=$(awk '$1 == "on" { print $2 }' "$DIR/pipe" | median)
    sw=$(awk '$1 == "off" { print $3 }' "$DIR/pipe" | median)
    awk -v off="$off" -v on="$on" -v sw="$sw" 'BEGIN {
        printf "context switch (pipe ping-pong on one CPU, %.2f switches a round trip): %.0f ns off, %.0f ns on a round trip: %+.0f ns per switch\n",
               sw, off, on, (on - off) / sw }'
fi
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
# What a run of an attached program costs its caller, dispatch and trampoline included
# (the BPF statistics above see the program's body only): bench/tpcost.c.
if [ -x "$ROOT/build/bench/tpcost" ]; then
    echo
    "$ROOT/build/bench/tpcost"
fi
# The lines docs/performance.md takes ("Issue #40", the figures of the latest bench):
# paste them over the rows there, with the date and the machine.
echo
echo "For docs/performance.md (issue #40's figures; $(date -u +%Y-%m-%d), $NCPU CPUs, $(uname -r)):"
if [ -s "$DIR/md" ]; then
    echo "| device, engine | runs | IOPS off | IOPS on | change | paired | CPU/IO off (ns) | on | added | off runs | load average |"
    echo "|---|---|---:|---:|---:|---:|---:|---:|---:|---|---|"
    cat "$DIR/md"
fi
if [ -s "$DIR/md.stats" ]; then
    echo "| statistics run (ns) | bio_queue | getrq | rq_issue | rq_complete | a watched request | duty | a read | switch | wakeup | scheduler programs a read | load average |"
    echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"
    cat "$DIR/md.stats"
fi
