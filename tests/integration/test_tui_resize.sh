#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Resize storms and tiny terminals: the interactive screen in a tmux server of its own,
# its window resized hundreds of times back to back through 10x3, 1x1, 20x5, 200x60,
# 120x40 and sizes on either side of the 30x8 minimum, with keys sent in between.
# Must hold: the process lives through it; its CPU time over the storm stays far below
# the wall time (a generous guard against a spin), and so does its CPU time while it sits
# at a too-small size; at 10x3 and 20x5 the screen holds only the clipped "terminal too
# small" notice (printable ASCII, nothing wider than the terminal); at 1x1 nothing wider
# than one column; back at 120x40 and 200x60 the whole screen is drawn again (header,
# PSI, the device panel with vda, the process panel with its row, the key bar on the
# last line) with nothing left over from the notice; keys still work; q exits with
# status 0 and gives the terminal back.
. "$(dirname "$0")/lib.sh"
SOCK=iotriage-resize-$$
. "$(dirname "$0")/lib_tmux.sh"
# (tmux leaves its socket file behind after kill-server: remove ours.)
trap 'it_kill_bg; T kill-server 2>/dev/null; rm -f "${TMUX_TMPDIR:-/tmp}/tmux-$(id -u)/$SOCK"; it_cleanup' EXIT

bg bash -c 'exec -a iotriage-resize-marker sleep 300'; marker=$BG
sched=$(sed -n 's/.*\[\(.*\)\].*/\1/p' /sys/block/vda/queue/scheduler 2>/dev/null)
[ -n "$sched" ] || sched='[a-z-]+'

T new-session -d -s ui -x 120 -y 40 "$IOT -d 0.3 -p $marker; echo EXITED \$?; sleep 60"
wait_for '^iotriage - '
wait_for "^ +$marker .*iotriage-re"
pane=$(T display -p -t ui '#{pane_pid}')
pid=$(pgrep -P "$pane" -x iotriage) || fail "no iotriage process under the pane ($pane)"
ok "iotriage $pid on a 120x40 screen"

ticks() { awk '{ print $14 + $15 }' "/proc/$pid/stat" 2>/dev/null; }
hz=$(getconf CLK_TCK)
alive() { kill -0 "$pid" 2>/dev/null && [ "$(awk '{ print $3 }' "/proc/$pid/stat")" != Z ] || {
    screen; fail "iotriage $pid died $1"; }; }
size_is() { [ "$(T display -p -t ui '#{pane_width}x#{pane_height}')" = "$1" ]; }
# No line wider than W characters, no more than H lines, no control character; with
# "ascii", nothing but printable ASCII (the too-small notice; the full screen may draw
# its sparkline in UTF-8).
check_screen() { # check_screen W H WHAT [ascii]
    local line n=0 wide=0
    while IFS= read -r line; do
        n=$((n + 1))
        [ "$(LC_ALL=C.UTF-8 bash -c 'printf %s "${#1}"' _ "$line")" -le "$1" ] || wide=$((wide + 1))
    done < <(screen)
    [ "$wide" = 0 ] || { screen; fail "$3: $wide lines wider than $1 columns"; }
    [ "$n" -le "$2" ] || fail "$3: $n lines on a $2-line screen"
    if screen | LC_ALL=C grep -q '[[:cntrl:]]'; then
        screen | cat -A | head -5; fail "$3: control characters on the screen"; fi
    if [ "${4:-}" = ascii ] && screen | LC_ALL=C grep -q '[^ -~]'; then
        screen | LC_ALL=C grep -n '[^ -~]' | cat -A | head -3; fail "$3: bytes other than printable ASCII"; fi
    return 0
}
# check_screen once the screen has settled: a capture can land in the middle of a redraw
# (once seen at 1x1: a byte of the screen before); a fault that stays fails after 2 s.
settled_screen() { # settled_screen W H WHAT [ascii]
    for _ in $(seq 20); do
        (check_screen "$@") >/dev/null 2>&1 && return 0
        sleep 0.1
    done
    check_screen "$@"
}
# The whole screen at W x H: every panel, the key bar on the last line.
full_screen() { # full_screen W H
    # tmux keeps the old content, cut to the new size: first wait for the key bar on the
    # new last line, which only a redraw at this size puts there.
    local last
    for _ in $(seq 50); do
        last=$(screen | sed -n "${2}p")
        [[ $last == "q quit"* ]] && break
        sleep 0.1
    done
    [[ $last == "q quit"* ]] || { screen; fail "$1x$2: line $2 is not the key bar after 5 s: '$last'"; }
    wait_for '^iotriage - .*every 0.3s'
    wait_for '^PSI '
    wait_for '^DEVICE +SCHED +NR'
    wait_for "^vda +$sched "
    wait_for '^ +PID USER +PRIO'
    wait_for "^ +$marker .*iotriage-re"
    wait_gone 'terminal too small|need 30x8'
    # (a capture can land in the middle of a redraw on a loaded machine: look again)
    for i in $(seq 1 20); do
        [ "$(screen | grep -c '^q quit')" = 1 ] && break
        sleep 0.1
    done
    [ "$(screen | grep -c '^q quit')" = 1 ] || { screen; fail "$1x$2: the key bar not exactly once"; }
    settled_screen "$1" "$2" "$1x$2"
}

# The storm: every size of the list, back to back, ten rounds; keys in between.
sizes="10x3 1x1 20x5 200x60 120x40 29x8 30x7 30x8 31x9 2x1 80x24 1x50 250x2 10x3 120x40"
storm_start=$(date +%s.%N); t0=$(ticks); n=0
for round in 1 2 3 4 5 6 7 8 9 10; do
    for s in $sizes; do
        T resize-window -t ui -x "${s%x*}" -y "${s#*x}" || fail "tmux refused $s"
        n=$((n + 1))
    done
    case $round in
        3) T send-keys -t ui Tab ;;
        5) T send-keys -t ui '>' ;;
        7) T send-keys -t ui '<' Tab ;;
    esac
    alive "in round $round of the storm"
    sleep 0.05
done
# And the same sizes slowly enough for a refresh (0.3 s) to land at each.
for s in $sizes; do
    T resize-window -t ui -x "${s%x*}" -y "${s#*x}"; n=$((n + 1))
    sleep 0.35
    alive "at $s"
done
t1=$(ticks); storm_end=$(date +%s.%N)
wall=$(awk -v a="$storm_start" -v b="$storm_end" 'BEGIN { printf "%.2f", b - a }')
cpu=$(awk -v a="$t0" -v b="$t1" -v hz="$hz" 'BEGIN { printf "%.2f", (b - a) / hz }')
between "$cpu" 0 "$(awk -v w="$wall" 'BEGIN { print w * 0.5 }')" || fail "CPU $cpu s over a $wall s storm: spinning?"
ok "$n resizes in $wall s: alive, CPU $cpu s"

# 10x3: the notice, clipped, and nothing else.
T resize-window -t ui -x 10 -y 3
size_is 10x3 || fail "tmux did not make it 10x3: $(T display -p -t ui '#{pane_width}x#{pane_height}')"
wait_for '^terminal t$'
wait_for '^10x3, need$'
settled_screen 10 3 "10x3" ascii
[ "$(screen | grep -c .)" = 2 ] || { screen | cat -A; fail "10x3: more than the notice on the screen"; }
t0=$(ticks); sleep 2; t1=$(ticks)
cpu=$(awk -v a="$t0" -v b="$t1" -v hz="$hz" 'BEGIN { printf "%.2f", (b - a) / hz }')
between "$cpu" 0 0.8 || fail "CPU $cpu s in 2 s at 10x3: spinning?"
ok "10x3: '$(screen | head -n 2 | tr '\n' '|')', CPU $cpu s in 2 s"

# 1x1: alive, quiet, nothing wider than the terminal.
T resize-window -t ui -x 1 -y 1
size_is 1x1 || fail "tmux did not make it 1x1"
t0=$(ticks); sleep 2; t1=$(ticks)
alive "at 1x1"
settled_screen 1 1 "1x1" ascii
cpu=$(awk -v a="$t0" -v b="$t1" -v hz="$hz" 'BEGIN { printf "%.2f", (b - a) / hz }')
between "$cpu" 0 0.8 || fail "CPU $cpu s in 2 s at 1x1: spinning?"
ok "1x1: '$(screen | head -n 1)', CPU $cpu s in 2 s"

# 20x5: the notice whole.
T resize-window -t ui -x 20 -y 5
wait_for '^terminal too small$'
wait_for '^20x5, need 30x8$'
settled_screen 20 5 "20x5" ascii
ok "20x5: the notice"

# Big, then back to 120x40: everything drawn again.
T resize-window -t ui -x 200 -y 60
full_screen 200 60
ok "200x60: full screen"
T resize-window -t ui -x 120 -y 40
full_screen 120 40
ok "120x40: header, PSI, devices (vda $sched), processes, key bar"

# Keys still work after all that.
T send-keys -t ui h
wait_for 'iotriage keys'
T send-keys -t ui Escape
wait_for '^ +PID USER +PRIO'
alive "after the keys"
ok "help opens and closes"

# q: status 0, the terminal given back.
T send-keys -t ui q
wait_for '^EXITED 0'
screen | grep -Eq '^iotriage - |^DEVICE +SCHED' && { screen; fail "the screen was not restored after q"; }
ok "q exits with status 0 and restores the screen"
