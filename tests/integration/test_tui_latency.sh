#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The latency view (issue #14) on the lab disk under mq-deadline, with a best-effort and
# an idle-class reader (both deep): l in the device view shows, per priority, the last
# interval's histogram and a heat map of the last minutes, measured by the BPF lens.
#  - with --no-bpf the view says why it is empty;
#  - three screens at once, 80x24: colour and UTF-8 (TERM=xterm-256color, block shades,
#    colour codes in the capture), NO_COLOR=1 (the same shades, no colour code at all),
#    and LANG=C (ASCII shades only, not one byte outside ASCII);
#  - rows, labels and shading characters are there once data arrived, and idle's heat
#    sits in higher buckets than be's (the highest row with heat, and the row with the
#    median of the cells with heat, compared in microseconds from their labels);
#  - a switch to none made from the screen: ^ marks it on the time axis with the names,
#    and the device view's before/after gains p50/p99 per priority, idle's p99 falling;
#  - the first screen's recording replayed: the same view from the recorded histograms.
. "$(dirname "$0")/lib.sh"
. "$ROOT/tests/lab/lab.sh"
need fio
need ionice
need tmux
[ "$(id -u)" = 0 ] || skip "needs root (BPF)"
[ -r /sys/kernel/btf/vmlinux ] || skip "no kernel BTF at /sys/kernel/btf/vmlinux"
UTF8=$(locale -a 2>/dev/null | grep -i -m1 -E '^C\.utf-?8$') || skip "no C.UTF-8 locale"
SOCK=iotriage-lat-$$
. "$(dirname "$0")/lib_tmux.sh"
lab_up 2000 4 64 || exit $?
trap 'it_kill_bg; tmux_cleanup; lab_down; it_cleanup' EXIT
vda_before=$(cat /sys/block/vda/queue/scheduler /sys/block/vda/queue/nr_requests 2>/dev/null)
Q=/sys/block/$LAB_NAME/queue
echo mq-deadline >"$Q/scheduler" || fail "cannot select mq-deadline on $LAB_NAME"
grep -q '\[mq-deadline\]' "$Q/scheduler" || fail "mq-deadline not active: $(cat "$Q/scheduler")"

for who in "be -c2 -n4" "idle -c3"; do
    set -- $who
    name=$1; shift
    bg ionice "$@" fio --name="$name" --filename="$LAB_DEV" --direct=1 --rw=randread --bs=4k \
        --ioengine=libaio --iodepth=16 --runtime=600 --time_based --output=/dev/null
done

cap() { T capture-pane -p -t "$1"; }
# wait_in SESSION PATTERN [SECONDS]: until that screen shows PATTERN
wait_in() {
    local i
    for i in $(seq 1 $((${3:-10} * 10))); do
        cap "$1" | grep -Eq -- "$2" && return 0
        sleep 0.1
    done
    echo "--- screen $1:"; cap "$1"; echo "---"
    fail "screen $1 never showed: $2"
}
# The heat map's bucket rows: "MICROSECONDS HEAT" for each row whose label is a bucket's,
# HEAT what follows the first '|' (the histogram is left of it) to the 80th column, whose
# last is never drawn: on an ASCII screen 80 wide, the newest refresh is its last but one.
heat_rows() {
    LC_ALL=C awk '{
        lab = $1; p = index($0, "|")
        if (p == 0 || lab !~ /^(<1us|[0-9.]+(us|ms|s|m))$/) next
        if (lab == "<1us") us = 0
        else if (lab ~ /us$/) us = substr(lab, 1, length(lab) - 2) + 0
        else if (lab ~ /ms$/) us = substr(lab, 1, length(lab) - 2) * 1000
        else if (lab ~ /s$/) us = substr(lab, 1, length(lab) - 1) * 1e6
        else us = substr(lab, 1, length(lab) - 1) * 60e6
        print us "\t" substr(sprintf("%-80s", $0), p + 1)   # the blanks capture-pane trims
    }' "$1"
}
has_heat() { heat_rows "$1" | awk -F'\t' '$2 ~ /[^ ]/ { f = 1 } END { exit !f }'; }
# wait_heat SESSION PRIO: until PRIO is the one shown and its heat map has a cell
wait_heat() {
    local i
    for i in $(seq 1 600); do
        cap "$1" >"$TMP/$1.txt"
        grep -Eq "^> $2 " "$TMP/$1.txt" && has_heat "$TMP/$1.txt" && return 0
        sleep 0.1
    done
    echo "--- screen $1:"; cat "$TMP/$1.txt"; echo "---"
    fail "$1: no heat for $2 after 60 s"
}
open_latency() { # open_latency SESSION "IOTRIAGE ARGS" ENV...
    local s=$1 args=$2; shift 2
    T new-session -d -s "$s" -x 80 -y 24 "env $* TERM=xterm-256color $IOT $args; echo EXITED \$?; sleep 60"
    wait_in "$s" '^DEVICE +SCHED' 20
    T send-keys -t "$s" Tab / "$LAB_NAME" Enter
    wait_in "$s" "^$LAB_NAME +mq-deadline " 20
    T send-keys -t "$s" Enter
    wait_in "$s" "^Device $LAB_NAME"
    wait_in "$s" 'l latency per priority'
    T send-keys -t "$s" l
    wait_in "$s" "^Latency per I/O priority on $LAB_NAME, scheduler mq-deadline"
}

# The three screens, started together: each needs a minute of the readers for idle's waits.
# The first records what it shows, for the replay at the end.
open_latency ui "-d 1 --record $TMP/rec.jsonl" "LC_ALL=$UTF8"
open_latency nc "-d 1" "LC_ALL=$UTF8" NO_COLOR=1
open_latency asc "-d 1" LC_ALL=C LANG=C

# Without the lens the view says why it is empty.
open_latency nobpf "-d 1 --no-bpf" "LC_ALL=$UTF8"
wait_in nobpf '^Nothing measured in this frame: lens off: --no-bpf'
cap nobpf | grep -Eq '^  PRIO ' && { cap nobpf; fail "--no-bpf: a latency table without a lens"; }
T kill-session -t nobpf
ok "--no-bpf: the latency view says the lens is off"

for s in ui nc asc; do
    wait_in "$s" '^  PRIO +REQ +p50 +p90 +p99 +tag +sched +device' 15
    wait_in "$s" '^> be/4 +[0-9]+ ' 30
    wait_in "$s" '^  idle ' 60
    wait_in "$s" '^ +-[0-9]+s \.\. now +-+$' 15
    wait_heat "$s" be/4
done
ok "be/4 and idle listed with count, p50/p90/p99 and stage means; be/4's heat map and time axis drawn"

# UTF-8 and colour: block shades in the heat, colour codes in the capture.
heat_rows "$TMP/ui.txt" | cut -f2 | LC_ALL=$UTF8 grep -q '[░▒▓█]' || { cat "$TMP/ui.txt"; fail "ui: no block shade"; }
heat_rows "$TMP/ui.txt" | cut -f2 | LC_ALL=$UTF8 grep -q '[^ ░▒▓█]' && { cat "$TMP/ui.txt"; fail "ui: a heat cell not a block shade"; }
T capture-pane -e -p -t ui >"$TMP/ui.esc"
grep -Eq $'\e\\[([0-9;]*;)?3[1-7](;[0-9]+)*m' "$TMP/ui.esc" || { cat -v "$TMP/ui.esc"; fail "ui: no colour in the capture"; }
ok "colour and UTF-8: the heat map in ░▒▓█, coloured"

# NO_COLOR: the same shading, not one colour code.
heat_rows "$TMP/nc.txt" | cut -f2 | LC_ALL=$UTF8 grep -q '[░▒▓█]' || { cat "$TMP/nc.txt"; fail "nc: no block shade"; }
T capture-pane -e -p -t nc >"$TMP/nc.esc"
if grep -Eq $'\e\\[([0-9;]*;)?(3[0-7]|9[0-7]|38;5;[0-9]+)(;[0-9]+)*m' "$TMP/nc.esc"; then
    cat -v "$TMP/nc.esc"; fail "NO_COLOR: colour codes on the screen"
fi
ok "NO_COLOR=1: shading alone, no colour code"

# LANG=C: ASCII shading, nothing outside ASCII anywhere on the screen.
heat_rows "$TMP/asc.txt" | cut -f2 | grep -q '[^ .:=+*#%@-]' && { cat "$TMP/asc.txt"; fail "asc: a heat cell not an ASCII shade"; }
LC_ALL=C grep -q $'[\x80-\xff]' "$TMP/asc.txt" && { cat -v "$TMP/asc.txt"; fail "asc: a byte outside ASCII"; }
ok "LANG=C: the heat map in \" .:-=+*#%@\", pure ASCII"

# idle's heat above be's: the highest row with heat, and the median row of the cells with
# heat, over the last 30 refreshes of at least 45 (the first ones after the lens attached
# mix in requests it saw only in part). The median, not the busiest row: idle is
# bimodal under mq-deadline, a few requests slipping through fast, the rest held.
summary() { # summary FILE -> "HIGHEST_US MEDIAN_US"
    heat_rows "$1" | sort -n | LC_ALL=C awk -F'\t' '{
        h = substr($2, length($2) - 30, 30)                # the newest 30 refreshes
        for (i = 1; i <= 30; i++) if (substr(h, i, 1) != " ") { cell[++n] = $1 + 0; hi = $1 + 0 }
    } END { print hi, cell[int((n + 1) / 2)] }'
}
wait_in asc '^ +-((4[5-9]|[5-9][0-9]|1[0-9][0-9])s|[0-9]+m[0-9]{2}s) \.\. now' 60
wait_heat asc be/4
read -r be_hi be_med < <(summary "$TMP/asc.txt")
T send-keys -t asc Tab
wait_heat asc idle
read -r idle_hi idle_med < <(summary "$TMP/asc.txt")
echo "be/4: highest row with heat ${be_hi} us, median cell ${be_med} us; idle: ${idle_hi} us, ${idle_med} us"
awk -v a="$idle_hi" -v b="$be_hi" 'BEGIN { exit !(a > b) }' ||
    { cat "$TMP/asc.txt"; fail "idle's highest heat ($idle_hi us) not above be's ($be_hi us)"; }
awk -v a="$idle_med" -v b="$be_med" 'BEGIN { exit !(a > b) }' ||
    { cat "$TMP/asc.txt"; fail "idle's median cell ($idle_med us) not above be's ($be_med us)"; }
ok "mq-deadline: idle's heat sits higher than be's (highest $idle_hi > $be_hi us, median cell $idle_med > $be_med us)"
T kill-session -t nc
T kill-session -t asc

# A switch to none from the latency view: marked on the time axis, then before/after.
T resize-window -t ui -x 120 -y 40
T send-keys -t ui s
wait_in ui "^I/O scheduler of $LAB_NAME"
for i in 1 2 3 4 5; do
    cap ui | grep -Eq '^> none ' && break
    T send-keys -t ui Up
    sleep 0.3
done
wait_in ui '^> none ' 15       # (a loaded machine may draw the last Up late; Up stops at the top)
T send-keys -t ui Enter
wait_in ui "^Switch $LAB_NAME from mq-deadline to none\?"
T send-keys -t ui y
wait_in ui '^Switch done' 60
grep -q '\[none\]' "$Q/scheduler" || fail "the switch left $(cat "$Q/scheduler")"
T send-keys -t ui x
wait_in ui "^Latency per I/O priority on $LAB_NAME, scheduler none"
wait_in ui '\^ mq-deadline->none' 20
ok "the switch is marked on the latency view's time axis: ^ mq-deadline->none"

T send-keys -t ui Escape
wait_in ui '^Switched from mq-deadline to none [0-9]+ s ago'
wait_in ui '^  latency p50/p99 ms per I/O priority \(lens\):'
P='[0-9.]+/[0-9.]+'
wait_in ui "^  be/4 +$P +$P\$" 30
wait_in ui "^  idle +$P +$P\$" 30
cap ui >"$TMP/ba.txt"
read -r b99 a99 < <(awk '$1 == "idle" && NF == 3 { split($2, b, "/"); split($3, a, "/"); print b[2], a[2] }' "$TMP/ba.txt")
echo "idle p99 before ${b99} ms, after ${a99} ms"
awk -v b="$b99" -v a="$a99" 'BEGIN { exit !(b > a) }' ||
    { cat "$TMP/ba.txt"; fail "idle's p99 did not fall with none: before $b99, after $a99"; }
ok "device view: p50/p99 per priority before and after; idle's p99 ${b99} -> ${a99} ms"
T send-keys -t ui q
wait_in ui '^EXITED 0'

# The recording replayed: the same view from the recorded histograms, the switch marked.
grep -q '"latency_by_prio"' "$TMP/rec.jsonl" || fail "the recording has no latency_by_prio"
T new-session -d -s rp -x 80 -y 24 "env LC_ALL=C LANG=C TERM=xterm-256color $IOT --replay $TMP/rec.jsonl; echo EXITED \$?; sleep 60"
wait_in rp 'REPLAY [0-9]+/[0-9]+' 20
T send-keys -t rp + + + +
T send-keys -t rp Tab / "$LAB_NAME" Enter
wait_in rp "^$LAB_NAME +(mq-deadline|none) " 20
T send-keys -t rp Enter
wait_in rp "^Device $LAB_NAME"
T send-keys -t rp l
wait_in rp "^Latency per I/O priority on $LAB_NAME"
wait_in rp '^  idle ' 60
wait_in rp '\^ mq-deadline->none' 60
wait_heat rp be/4
T send-keys -t rp Tab
wait_heat rp idle
ok "replay: the latency view from the recording, be/4 and idle with heat, the switch marked"
T send-keys -t rp q
wait_in rp '^EXITED 0'

[ "$(cat /sys/block/vda/queue/scheduler /sys/block/vda/queue/nr_requests 2>/dev/null)" = "$vda_before" ] ||
    fail "vda's queue changed"
ok "vda untouched"
