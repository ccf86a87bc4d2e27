#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# bench/firstframe.sh: how long after its start a monitor's screen shows the process
# table, at N idle processes (bench/spawn.c), for iotriage (with the BPF lens and with
# --no-bpf), iotop-c and htop, each on a 200x50 terminal in a tmux server of its own.
#
# Method. The pane runs `bash -c 'echo $EPOCHREALTIME >START; exec PROGRAM'`: the start
# is taken right before the exec, so the shell's own start is not counted. The screen is
# read with `capture-pane` in a loop, sent through one tmux control-mode client (no fork
# per poll: a few ms a poll on a loaded machine instead of 100-200 ms with a tmux client
# and a grep per poll); the first frame is the first capture that holds
# a header line with PID (TID: iotop-c) and USER followed by at least 3 rows that begin
# with a number.
# Its time is taken when that capture's reply began (its %begin line): an upper bound,
# since tmux ran the capture before it replied, late by at most one poll period
# (printed: the mean time between two captures, a few ms). Not when the reply was read
# to its end: bash reads a pipe a byte at a time, and a full 200x50 screen took 20-65 ms
# to read here, which a test program that writes one frame and sleeps showed as that much
# lag after its write(). The programs run in
# turn within one population (A B C D, A B C D, ...), ROUNDS rounds; the median is
# printed, with the smallest and the largest, and the median of the program's own CPU
# time up to that capture (/proc/PID/task/*/schedstat: what the first frame cost it,
# whatever the load of the machine made it wait; read when the capture returned, so
# it may hold a little work after the frame). Each run is ended as soon as its frame is
# seen.
#
# Usage: bench/firstframe.sh [--sizes "1000 10000"] [--rounds 5] [--programs LIST]
#        [--smoke]   (root, tmux; about a minute at the defaults)
# LIST: any of iotriage iotriage-nobpf iotriage-noiter (IOTRIAGE_TASKITER=0)
# iotriage-libbpf (IOTRIAGE_BPF_LOADER=libbpf: libbpf's skeletons, not the light ones) iotop-c htop
# (those not installed are left out),
# and base base-nobpf: the binary IOTRIAGE_BASE=PATH, for an A/B interleaved with the
# others. IOTRIAGE=PATH measures another binary. The table goes to stdout and to
# $BENCH_OUT/firstframe.txt (build/bench/results by default), every run to firstframe.tsv.
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN=$ROOT/${BUILD:-build}/bench
IOT=${IOTRIAGE:-$ROOT/iotriage}
SIZES="1000 10000" ROUNDS=5 PROGRAMS="iotriage iotriage-nobpf iotop-c htop" TIMEOUT=30
while [ $# -gt 0 ]; do
    case $1 in
    --sizes) SIZES=$2; shift ;;
    --rounds) ROUNDS=$2; shift ;;
    --programs) PROGRAMS=$2; shift ;;
    --smoke) SIZES=50 ROUNDS=1 TIMEOUT=20 ;;
    -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
    *) echo "firstframe.sh: unknown argument $1" >&2; exit 2 ;;
    esac
    shift
done
die() { echo "firstframe.sh: $*" >&2; exit 1; }
[ "$(id -u)" = 0 ] || { echo "firstframe.sh: needs root" >&2; exit 77; }
command -v tmux >/dev/null || { echo "firstframe.sh: tmux not installed" >&2; exit 77; }
for b in "$IOT" "$BIN/spawn"; do [ -x "$b" ] || die "$b missing (make bench builds it)"; done
RES=${BENCH_OUT:-$ROOT/${BUILD:-build}/bench/results}
mkdir -p "$RES" || die "cannot make $RES"

OUT=$(mktemp -d /tmp/iotriage-firstframe.XXXXXX)
SOCK=iotriage-firstframe-$$
cleanup() {
    tmux -L "$SOCK" kill-server 2>/dev/null
    rm -f "${TMUX_TMPDIR:-/tmp}/tmux-$(id -u)/$SOCK"     # kill-server leaves the socket file
    [ -n "$SPAWN_PID" ] && { kill -TERM "$SPAWN_PID" 2>/dev/null; wait "$SPAWN_PID" 2>/dev/null; }
    rm -rf "$OUT"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
export IOTRIAGE_RECORD_DIR=          # no baselines from a recorder: the same work every run

. "$ROOT/bench/lib.sh"

command_of() {
    case $1 in
    iotriage) echo "$IOT" ;;
    iotriage-nobpf) echo "$IOT --no-bpf" ;;
    iotriage-noiter) echo "env IOTRIAGE_TASKITER=0 $IOT" ;;
    iotriage-libbpf) echo "env IOTRIAGE_BPF_LOADER=libbpf $IOT" ;;
    base) [ -n "${IOTRIAGE_BASE:-}" ] && echo "$IOTRIAGE_BASE" ;;
    base-nobpf) [ -n "${IOTRIAGE_BASE:-}" ] && echo "$IOTRIAGE_BASE --no-bpf" ;;
    iotop-c) command -v iotop-c >/dev/null && echo "iotop-c -P" ;;
    htop) command -v htop >/dev/null && echo "htop" ;;
    esac
}

# shown LINES...: the capture holds the process table, a header with PID (TID) and USER
# and 3 numbered rows under it. Pure bash: no fork per poll.
shown() {
    local l h=0 n=0
    for l in "$@"; do
        if [ $h = 0 ]; then
            [[ $l =~ (PID|TID) && $l =~ USER ]] && h=1
        elif [[ $l =~ ^\ *[0-9]+\  ]]; then
            n=$((n + 1))
            [ $n -ge 3 ] && return 0
        fi
    done
    return 1
}

# task_cpu_ms PID: the CPU time the process has run, every thread (schedstat, in ns),
# read without a fork.
task_cpu_ms() {
    local f ns total=0
    for f in /proc/"$1"/task/*/schedstat; do
        read -r ns _ <"$f" 2>/dev/null && total=$((total + ns))
    done
    echo $((total / 1000)) | awk '{ printf "%.1f", $1 / 1000 }'
}

# first_frame PROGRAM: prints "ms polls poll_ms cpu_ms": ms from the exec to the capture
# that showed the table, the captures taken, the mean time between two, the program's CPU
# time when that capture returned (schedstat); "NA" when none did
# within TIMEOUT. The captures go through one control-mode client (tmux -C, pane output
# not sent to it), so a poll forks nothing.
first_frame() {
    local cmd=$1 start now t0 polls=0 found=0 line ppid cpu=NA
    local -a cap
    rm -f "$OUT/start"
    tmux -L "$SOCK" kill-server 2>/dev/null
    # The pane waits for a line on its fifo, so that the poller is attached first.
    rm -f "$OUT/go"; mkfifo "$OUT/go"
    TERM=xterm-256color tmux -L "$SOCK" new-session -d -s ui -x 200 -y 50 \
        "bash -c 'read -r _ <$OUT/go; echo \$EPOCHREALTIME >$OUT/start; exec $cmd'"
    coproc TM { tmux -L "$SOCK" -C attach -t ui -f no-output,read-only 2>/dev/null; }
    local tm_pid=$TM_PID
    ppid=$(tmux -L "$SOCK" display -p -t ui '#{pane_pid}')
    echo go >"$OUT/go"
    t0=$EPOCHREALTIME
    while :; do
        polls=$((polls + 1))
        echo "capture-pane -p -t ui" >&"${TM[1]}"
        cap=()
        while IFS= read -r -t 5 line <&"${TM[0]}"; do
            line=${line%$'\r'}
            case $line in
            %begin*) cap=(); now=$EPOCHREALTIME ;;
            %end*|%error*) break ;;
            %*) ;;
            *) cap+=("$line") ;;
            esac
        done
        if shown "${cap[@]}"; then
            found=1
            cpu=$(task_cpu_ms "$ppid")
            break
        fi
        now=$EPOCHREALTIME
        (( ${now%.*} - ${t0%.*} > TIMEOUT )) && break
    done
    tmux -L "$SOCK" kill-server 2>/dev/null
    wait "$tm_pid" 2>/dev/null
    start=$(cat "$OUT/start" 2>/dev/null)
    # A start not before the frame's capture would be a broken run (a reply read late
    # after a stall), not a fast one: NA.
    if [ "$found" = 1 ] && [ -n "$start" ] && awk -v a="$start" -v b="$now" 'BEGIN { exit !(b > a) }'; then
        awk -v a="$start" -v b="$now" -v p="$polls" -v t0="$t0" -v c="$cpu" \
            'BEGIN { printf "%.1f %d %.2f %s\n", (b - a) * 1000, p, (b - t0) * 1000 / p, c }'
    else
        echo "NA $polls 0 NA"
    fi
}

echo "population	tasks	program	round	ms	polls	poll_ms	cpu_ms" >"$RES/firstframe.tsv"
for n in $SIZES; do
    spawn_up "$n"
    tasks=$(ls /proc | grep -c '^[0-9]')
    for r in $(seq 1 "$ROUNDS"); do
        for prog in $PROGRAMS; do
            cmd=$(command_of "$prog")
            [ -n "$cmd" ] || continue
            read -r ms polls pms cpu < <(first_frame "$cmd")
            printf 'procs-%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$n" "$tasks" "$prog" "$r" "$ms" "$polls" "$pms" "$cpu" \
                >>"$RES/firstframe.tsv"
        done
    done
    spawn_down
done

awk -F'\t' 'NR > 1 { k = $1 "\t" $2 "\t" $3; if (!(k in seen)) { seen[k] = 1; order[++no] = k }
                     if ($5 != "NA") { v[k, ++c[k]] = $5 + 0; u[k, c[k]] = $8 + 0; pm[k] += $7; } else na[k]++ }
    function cmedian(k,   i, j, t, m, a) {
        m = c[k]; for (i = 1; i <= m; i++) a[i] = u[k, i]
        for (i = 1; i <= m; i++) for (j = i + 1; j <= m; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
        return m % 2 ? a[(m + 1) / 2] : (a[m / 2] + a[m / 2 + 1]) / 2
    }
    function median(k,   i, j, t, m, a) {
        m = c[k]; for (i = 1; i <= m; i++) a[i] = v[k, i]
        for (i = 1; i <= m; i++) for (j = i + 1; j <= m; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
        lo = a[1]; hi = a[m]
        return m % 2 ? a[(m + 1) / 2] : (a[m / 2] + a[m / 2 + 1]) / 2
    }
    END {
        printf "time from start to the first frame with the process table (ms; median, min, max)\n"
        printf "%-12s %6s %-15s %8s %8s %8s %5s %7s %8s\n", "population", "tasks", "program", "median", "min", "max", "runs", "poll ms", "CPU ms"
        for (i = 1; i <= no; i++) {
            k = order[i]; split(k, f, "\t")
            if (!c[k]) { printf "%-12s %6s %-15s %8s %8s %8s %5d %7s\n", f[1], f[2], f[3], "NA", "", "", 0, ""; continue }
            md = median(k)
            printf "%-12s %6s %-15s %8.1f %8.1f %8.1f %5d %7.2f %8.1f\n", f[1], f[2], f[3], md, lo, hi, c[k], pm[k] / c[k], cmedian(k)
        }
    }' "$RES/firstframe.tsv" | tee "$RES/firstframe.txt"
