#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# bench/threadview.sh: what the process view costs for a process with many threads,
# against what the main table costs per task.
#
#   view     iotriage -p PID on a 120x40 terminal (tmux) with the process view of PID
#            open: PID has T threads (bench/spawn.c -t T), all asleep
#   table    the same, the process view closed (the main table of that one process)
#   per-task iotriage -b over N idle single-thread processes, steady refreshes (12 less
#            2): the main table's cost per task, the yardstick the view's cost per thread
#            is held to
# CPU is read from /proc/PID/stat (utime + stime) over W seconds of refreshes at D
# seconds, for the screen runs; from wait4 (bench/measure) for the batch run.
#
# Usage: bench/threadview.sh [-t THREADS] [-N PROCS] [-d SECONDS] [-w SECONDS]
#        (root, tmux; about a minute). IOTRIAGE=PATH measures another binary.
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN=$ROOT/${BUILD:-build}/bench
IOT=${IOTRIAGE:-$ROOT/iotriage}
T=5000 N=5000 D=0.2 W=10
while [ $# -gt 0 ]; do
    case $1 in
    -t) T=$2; shift ;;
    -N) N=$2; shift ;;
    -d) D=$2; shift ;;
    -w) W=$2; shift ;;
    -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
    *) echo "threadview.sh: unknown argument $1" >&2; exit 2 ;;
    esac
    shift
done
die() { echo "threadview.sh: $*" >&2; exit 1; }
[ "$(id -u)" = 0 ] || { echo "threadview.sh: needs root" >&2; exit 77; }
command -v tmux >/dev/null || { echo "threadview.sh: tmux not installed" >&2; exit 77; }
for b in "$IOT" "$BIN/spawn" "$BIN/measure"; do [ -x "$b" ] || die "$b missing (make bench builds it)"; done

OUT=$(mktemp -d /tmp/iotriage-threadview.XXXXXX)
SOCK=iotriage-threadview-$$
cleanup() {
    tmux -L "$SOCK" kill-server 2>/dev/null
    [ -n "$SPAWN_PID" ] && { kill -TERM "$SPAWN_PID" 2>/dev/null; wait "$SPAWN_PID" 2>/dev/null; }
    rm -rf "$OUT"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
export IOTRIAGE_RECORD_DIR=          # no baselines from a recorder: the same work every run

. "$ROOT/bench/lib.sh"
ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }

# screen_cpu VIEW: ms of CPU per refresh of the screen on the many-threaded process
screen_cpu() {
    tmux -L "$SOCK" kill-server 2>/dev/null
    tmux -L "$SOCK" new-session -d -s ui -x 120 -y 40 "exec $IOT -d $D -p $TARGET --no-bpf"
    local ipid i
    for i in $(seq 1 50); do
        ipid=$(tmux -L "$SOCK" list-panes -t ui -F '#{pane_pid}' 2>/dev/null)
        tmux -L "$SOCK" capture-pane -p -t ui | grep -q "PID USER" && break
        sleep 0.1
    done
    if [ "$1" = view ]; then
        tmux -L "$SOCK" send-keys -t ui Enter
        for i in $(seq 1 50); do
            tmux -L "$SOCK" capture-pane -p -t ui | grep -q "^Threads ($T)" && break
            sleep 0.1
        done
        tmux -L "$SOCK" capture-pane -p -t ui | grep -q "^Threads ($T)" || die "process view never showed $T threads"
    fi
    sleep 1
    local t0 t1
    t0=$(ticks "$ipid")
    sleep "$W"
    t1=$(ticks "$ipid")
    tmux -L "$SOCK" kill-server 2>/dev/null
    local hz
    hz=$(getconf CLK_TCK)
    awk -v a="$t0" -v b="$t1" -v hz="$hz" -v w="$W" -v d="$D" 'BEGIN { printf "%.2f", (b - a) * 1000 / hz / (w / d) }'
}

spawn_up -t "$T" 1
TARGET=$(pgrep -P "$SPAWN_PID" | head -1)
[ -n "$TARGET" ] || die "no spawned process"
[ "$(ls "/proc/$TARGET/task" | wc -l)" -ge "$T" ] || die "process $TARGET has fewer than $T threads"
table=$(screen_cpu table)
view=$(screen_cpu view)
spawn_down

# The main table's steady cost per task: batch runs of 2 and 12 refreshes over N idle
# processes; their difference is ten steady refreshes, start-up left out.
spawn_up "$N"
cpu_of() {
    "$BIN/measure" -- "$IOT" -b -n "$1" -d "$D" --no-bpf >"$OUT/m" || die "batch run failed"
    sed -n 's/.*user_s=\([0-9.]*\) sys_s=\([0-9.]*\).*/\1 \2/p' "$OUT/m" | awk '{ printf "%.4f", $1 + $2 }'
}
c2=$(cpu_of 2)
c12=$(cpu_of 12)
tasks=$(ls /proc | grep -c '^[0-9]')
spawn_down
batch_ms=$(awk -v a="$c2" -v b="$c12" 'BEGIN { printf "%.2f", (b - a) * 1000 / 10 }')

awk -v t="$T" -v n="$tasks" -v table="$table" -v view="$view" -v batch="$batch_ms" 'BEGIN {
    per_thread = (view - table) * 1000 / t
    per_task = batch * 1000 / n
    printf "process view of one process with %d threads (screen, -d, CPU per refresh)\n", t
    printf "  table only      %8.2f ms\n", table
    printf "  process view    %8.2f ms\n", view
    printf "  per thread      %8.2f us   (view - table) / threads\n", per_thread
    printf "main table, batch, steady, %d tasks: %.2f ms a refresh, %.2f us a task\n", n, batch, per_task
}'
