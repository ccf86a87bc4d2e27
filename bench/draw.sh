#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# bench/draw.sh: what the screen adds on top of sampling.
#
# With N idle processes (bench/spawn.c, plus two readers and two writers), three runs of
# R refreshes at D seconds, each measured by bench/measure (CPU from wait4):
#   batch   iotriage -b, text to /dev/null: sampling, deltas, verdicts, text output
#   screen  iotriage on a 120x40 terminal (tmux): the same sampling, plus rows, sorting
#           and drawing each refresh
#   replay  iotriage --replay of the batch run's recording at 64x: no sampling at all;
#           each frame is parsed from its JSON line, then drawn (an upper bound on what
#           drawing costs, since parsing 1,000 processes' JSON is in it)
# and prints CPU per refresh (or per frame) for each, and screen - batch.
#
# Usage: bench/draw.sh [-N PROCS] [-n REFRESHES] [-d SECONDS]   (root; about a minute)
# Environment: IOTRIAGE=PATH measures another binary.
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN=$ROOT/${BUILD:-build}/bench
IOT=${IOTRIAGE:-$ROOT/iotriage}
N=1000 R=50 D=0.2
while [ $# -gt 0 ]; do
    case $1 in
    -N) N=$2; shift ;;
    -n) R=$2; shift ;;
    -d) D=$2; shift ;;
    -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
    *) echo "draw.sh: unknown argument $1" >&2; exit 2 ;;
    esac
    shift
done
die() { echo "draw.sh: $*" >&2; exit 1; }
[ "$(id -u)" = 0 ] || { echo "draw.sh: needs root" >&2; exit 77; }
command -v tmux >/dev/null || { echo "draw.sh: tmux not installed" >&2; exit 77; }
for b in "$IOT" "$BIN/spawn" "$BIN/measure"; do [ -x "$b" ] || die "$b missing (make bench builds it)"; done

OUT=$(mktemp -d /tmp/iotriage-draw.XXXXXX)
SOCK=iotriage-draw-$$
SPAWN_PID=
cleanup() {
    tmux -L "$SOCK" kill-server 2>/dev/null
    [ -n "$SPAWN_PID" ] && kill -- -"$SPAWN_PID" 2>/dev/null
    rm -rf "$OUT"
}
trap cleanup EXIT
T() { tmux -L "$SOCK" "$@"; }

iofile=$(mktemp /var/tmp/iotriage-draw.XXXXXX)
setsid "$BIN/spawn" -r 2 -w 2 -f "$iofile" "$N" >"$OUT/ready" &
SPAWN_PID=$!
for i in $(seq 1 600); do [ -s "$OUT/ready" ] && break; sleep 0.1; done
[ -s "$OUT/ready" ] || die "spawn did not come up"

cpu() { # the measure line -> user+sys seconds
    awk '{ for (i = 1; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] } }
         END { printf "%.4f", v["user_s"] + v["sys_s"] }' "$1"
}

# batch, with a recording for the replay
"$BIN/measure" -- "$IOT" -b -n "$R" -d "$D" --record "$OUT/rec.jsonl" >"$OUT/batch.m" || die "batch run failed"
# batch again without recording: the figure compared
"$BIN/measure" -- "$IOT" -b -n "$R" -d "$D" >"$OUT/batch2.m" || die "batch run failed"

# screen: R refreshes' worth of time, then q
T new-session -d -s ui -x 120 -y 40 "$BIN/measure -o /dev/tty -- $IOT -d $D >$OUT/screen.m; sleep 30"
sleep 1
secs=$(awk -v r="$R" -v d="$D" 'BEGIN { printf "%.2f", r * d }')
sleep "$secs"
T send-keys -t ui q
for i in $(seq 1 100); do [ -s "$OUT/screen.m" ] && break; sleep 0.1; done
[ -s "$OUT/screen.m" ] || die "the screen run did not end"

# replay at 64x to the end, then q
frames=$(wc -l <"$OUT/rec.jsonl")
T new-session -d -s rp -x 120 -y 40 "$BIN/measure -o /dev/tty -- $IOT --replay $OUT/rec.jsonl >$OUT/replay.m; sleep 30"
sleep 0.5
T send-keys -t rp + + + + + +
for i in $(seq 1 600); do
    T capture-pane -p -t rp | grep -q 'end of the recording' && break
    sleep 0.1
done
T send-keys -t rp q
for i in $(seq 1 100); do [ -s "$OUT/replay.m" ] && break; sleep 0.1; done
[ -s "$OUT/replay.m" ] || die "the replay run did not end"

b=$(cpu "$OUT/batch2.m") s=$(cpu "$OUT/screen.m") r=$(cpu "$OUT/replay.m")
# the screen ran secs + 1 s: its refreshes are (secs + 1) / D plus the first sample
sref=$(awk -v s="$secs" -v d="$D" 'BEGIN { printf "%d", (s + 1) / d }')
tasks=$(ls -d /proc/[0-9]* | wc -l)
printf 'tasks %s, %s refreshes at %s s\n' "$tasks" "$R" "$D"
printf '%-8s %10s %10s %14s\n' run cpu_s refreshes ms_per_refresh
awk -v c="$b" -v n="$R" 'BEGIN { printf "%-8s %10.3f %10d %14.2f\n", "batch", c, n, c / n * 1000 }'
awk -v c="$s" -v n="$sref" 'BEGIN { printf "%-8s %10.3f %10d %14.2f\n", "screen", c, n, c / n * 1000 }'
awk -v c="$r" -v n="$frames" 'BEGIN { printf "%-8s %10.3f %10d %14.2f\n", "replay", c, n, c / n * 1000 }'
awk -v b="$b" -v bn="$R" -v s="$s" -v sn="$sref" 'BEGIN {
    x = s / sn - b / bn; printf "screen - batch: %.2f ms per refresh (%.0f%% of batch)\n", x * 1000, x / (b / bn) * 100 }'
rm -f "$iofile"
