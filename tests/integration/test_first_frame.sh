#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The first screen comes before the first interval ends: `iotriage -d 5` in a tmux server
# of its own. Must hold, in this order: a full process table drawn from the first sample
# (the header, a marker sleeper's row with its PID, USER, PRIO and COMMAND), its rates and
# delays shown pending ("..", never 0), the devices' scheduler and nr_requests already
# there with their figures pending; where the task iterator runs, the idle sleepers named
# by their name (sleep) until their command lines come with the second sample, and a
# sleeper that wrote to a disk named by its command line from the first; then, after the
# first interval, the same row with real figures, every command line, and nothing pending
# anywhere on the screen; and the first JSON sample has the
# sleeper's device set (scanned by the second snapshot, not left pending). Asserts the order of events, not a
# time: the screen is polled every 50 ms; on a machine so loaded that the pending frame
# came and went between two polls, the bytes the program wrote to the terminal
# (pipe-pane) are the witness instead: the PSI line's "some ..% full ..%" is drawn by the
# first frame only.
. "$(dirname "$0")/lib.sh"
SOCK=iotriage-first-$$
. "$(dirname "$0")/lib_tmux.sh"
trap 'it_kill_bg; it_cleanup' EXIT

# Three sleepers, the table limited to them (-p) so that their rows are on the screen
# whatever else the machine runs. What they exec is read once first: a sleeper that
# reads bash, sleep or a library from the disk as it starts has moved bytes, and is
# rightly named by its command line from the first sample (each is classed below by
# its io file).
bash -c 'exec -a iotriage-first-warm sleep 0'
pids=() sleepers=() markers=()
for _ in 1 2 3; do
    bg bash -c 'exec -a iotriage-first-marker sleep 300'; pids+=("-p" "$BG"); sleepers+=("$BG"); markers+=("$BG")
done
# A fourth that moved bytes to a disk before it slept (bash's own write: a builtin;
# /tmp is on the machine's disk here, a filesystem with writeback): its command line is
# read at the first sample, the idle ones' at the second.
bg bash -c 'printf "%65536s" x >"$1"; exec -a iotriage-first-writer sleep 300' _ "$TMP/written"
writer=$BG; pids+=("-p" "$writer"); sleepers+=("$writer")
# Each row must name the marker from the first sample on: not before bash has exec'd
# sleep under it (until then the pid is a fork of this script, with its command line).
wait_sleep "${sleepers[@]}"
wb=$(awk '/^write_bytes/ { print $2 }' "/proc/$writer/io")
[ "${wb:-0}" -gt 0 ] || fail "the writer has no write_bytes in /proc/$writer/io ($wb): no idle/busy contrast to test"
# idle: read, write and cancelled bytes all 0 in the io file (as the sampler reads it)
moved() { awk '/^(read_bytes|write_bytes|cancelled_write_bytes):/ { s += $2 } END { exit !(s > 0) }' "/proc/$1/io"; }
idle=() busy=("$writer")
for p in "${markers[@]}"; do
    if moved "$p"; then busy+=("$p"); else idle+=("$p"); fi
done
[ ${#idle[@]} -gt 0 ] || fail "every sleeper read from the disk as it started (the page cache dropped meanwhile?): no idle one to test"
marker=${idle[0]}
# Whether the task iterator loads here (root, kernel BTF): only its first run leaves
# command lines for later; /proc's reads them all.
iter=proc
if [ "$(id -u)" = 0 ] && [ -r /sys/kernel/btf/vmlinux ]; then
    [ -x "$ROOT/build/tests/taskiter_dump" ] || fail "build first: make build/tests/taskiter_dump"
    "$ROOT/build/tests/taskiter_dump" -l $$ >/dev/null 2>&1 && iter=bpf
fi
sched=$(sed -n 's/.*\[\(.*\)\].*/\1/p' /sys/block/vda/queue/scheduler 2>/dev/null)
[ -n "$sched" ] || sched='[a-z-]+'
stream=$TMP/terminal-output

# The program starts on Enter, once the pane's output is piped to the witness file.
T new-session -d -s ui -x 200 -y 50 "read go; $IOT -d 5 ${pids[*]}; echo EXITED \$?; sleep 60"
T pipe-pane -t ui "cat >> $stream"
T send-keys -t ui Enter

if [ "$iter" = bpf ]; then first_name='sleep *$'; else first_name='iotriage-first-marker'; fi
pending_row="^ +$marker +[a-z0-9_?-]+ +[a-z]+/[0-9]~? +[a-z]+ +\.\. +\.\. +\.\. +\.\. +\.\. +\.\. .*$first_name"
real_row="^ +$marker +[a-z0-9_?-]+ +[a-z]+/[0-9]~? +[a-z]+ +[0-9][0-9.]*[BKMGT]? +[0-9][0-9.]*[BKMGT]? +([0-9][0-9.]*!?|-) .*iotriage-first-marker"
seen_pending=""
seen_real=""
for _ in $(seq 1 400); do                      # 20 s: the start under load, then 1 s
    s=$(screen)
    if printf '%s\n' "$s" | grep -Eq -- "$real_row"; then
        seen_real="$s"
        break
    fi
    # The first screen with the marker's row before the real figures is the first frame:
    # it must be the pending one (a frame missed between two polls leaves none).
    if [ -z "$seen_pending" ] && printf '%s\n' "$s" | grep -Eq -- "^ +$marker "; then
        printf '%s\n' "$s" | grep -Eq -- "$pending_row" \
            || { printf '%s\n' "$s"; fail "the first frame's row of the marker is not the pending one ($iter: rates .., named /$first_name/)"; }
        seen_pending="$s"
    fi
    sleep 0.05
done
[ -n "$seen_real" ] || { screen; fail "the marker's row never showed real figures"; }

if [ -n "$seen_pending" ]; then
    printf '%s\n' "$seen_pending" | grep -Eq '^ +PID USER +PRIO' || fail "pending frame without the table header"
    printf '%s\n' "$seen_pending" | grep -Eq "^vda +$sched +[0-9]+ +\.\. +\.\. " \
        || { printf '%s\n' "$seen_pending"; fail "pending frame: vda's scheduler, nr_requests or pending figures missing"; }
    printf '%s\n' "$seen_pending" | grep -Eq '^PSI io some \.\.% full \.\.% \(10s [0-9.]+ ' \
        || { printf '%s\n' "$seen_pending"; fail "pending frame: PSI line not pending with its averages"; }
    for p in "${idle[@]}"; do
        printf '%s\n' "$seen_pending" | grep -Eq "^ +$p +[a-z0-9_?-]+ +[a-z]+/[0-9].*$first_name" \
            || { printf '%s\n' "$seen_pending"; fail "pending frame: idle sleeper $p not named /$first_name/"; }
    done
    for p in "${busy[@]}"; do
        printf '%s\n' "$seen_pending" | grep -Eq "^ +$p .*iotriage-first-(marker|writer) 300 *\$" \
            || { printf '%s\n' "$seen_pending"; fail "pending frame: $p, which moved bytes, is not named by its command line"; }
    done
    ok "first frame ($iter): ${#idle[@]} idle sleepers named /$first_name/, ${#busy[@]} that moved bytes (the writer among them) by their command line, rates pending: $(printf '%s\n' "$seen_pending" | grep -E -- "$pending_row" | cut -c1-90)"
else
    # Missed between two polls: the terminal's bytes must hold the pending mark and the
    # table header, and only the first frame draws "..".
    grep -aq 'PID USER' "$stream" || fail "no table header in the terminal output"
    grep -aq 'some \.\.% full \.\.%' "$stream" || fail "the first frame never drew pending figures (none in the terminal output)"
    ok "first frame seen in the terminal output only (the machine is loaded): pending marks present"
fi

printf '%s\n' "$seen_real" | grep -Eq '^vda .*\.\.' && fail "vda still pending after the first interval"
rows=$(printf '%s\n' "$seen_real" | grep -cE "^ +[0-9]+ .*iotriage-first-marker 300 *\$")
[ "$rows" -eq 3 ] || { printf '%s\n' "$seen_real"; fail "after the first interval $rows of the 3 sleepers show their command line"; }
printf '%s\n' "$seen_real" | grep -Eq '^PSI .*\.\.%' && fail "PSI still pending after the first interval"
ok "after the first interval: $(printf '%s\n' "$seen_real" | grep -E -- "$real_row" | cut -c1-90)"

# The first sample leaves out the fd scans of processes that never moved a byte to or
# from a disk (the sleepers); the first printed JSON sample (the second snapshot) has
# scanned them: devices is an array, not null.
"$IOT" --json -n 1 -d 0.2 -p "$marker" >"$TMP/first.json" || fail "--json run failed"
jq -e --argjson p "$marker" '.processes[] | select(.pid == $p) | .devices | type == "array"' \
    "$TMP/first.json" >/dev/null || { cat "$TMP/first.json" | head -c 2000; fail "the first JSON sample has no device set for the sleeper"; }
ok "first JSON sample: the sleeper's devices are known ($(jq -c --argjson p "$marker" '.processes[] | select(.pid == $p) | .devices' "$TMP/first.json"))"

T send-keys -t ui q
wait_for '^EXITED 0' 10
ok "quit with status 0"

# A run over every process: its first frame leaves /proc's listing (which finds what the
# iterator skips) to the next refresh and looks for the init process alone, the one seen
# skipped. Where the iterator does skip PID 1 (taskiter_dump does not list it), its row
# must be in the first frame: paused at once (p), filtered on its name, shown pending.
if [ "$iter" = bpf ] && ! "$ROOT/build/tests/taskiter_dump" 2>/dev/null | awk '$1 == 1 { f = 1 } END { exit !f }'; then
    comm1=$(cat /proc/1/comm)
    scr2() { T capture-pane -p -t ui2; }
    T new-session -d -s ui2 -x 200 -y 50 "$IOT -d 5; echo EXITED \$?; sleep 60"
    for _ in $(seq 1 150); do scr2 | grep -Eq '^ +PID USER' && break; sleep 0.1; done
    T send-keys -t ui2 p
    T send-keys -t ui2 /
    T send-keys -t ui2 -l "$comm1"
    T send-keys -t ui2 Enter
    row1=""
    for _ in $(seq 1 100); do
        row1=$(scr2 | grep -E '^ +1 ' | head -1)
        [ -n "$row1" ] && break
        sleep 0.1
    done
    [ -n "$row1" ] || { scr2; fail "the first frame of a run over every process has no row for PID 1 ($comm1), which the iterator skips"; }
    printf '%s\n' "$row1" | grep -Eq -- '^ +1 +[a-z0-9_?-]+ +[a-z]+/[0-9]~? +[a-z]+ +\.\. +\.\. ' \
        || { scr2; fail "PID 1's row is not the first frame's (rates not pending): the pause came after the second sample"; }
    T send-keys -t ui2 q
    for _ in $(seq 1 100); do scr2 | grep -q '^EXITED 0' && break; sleep 0.1; done
    scr2 | grep -q '^EXITED 0' || { scr2; fail "the second run did not quit with status 0"; }
    ok "first frame over every process: PID 1, which the iterator skips, is in it: $(printf '%s' "$row1" | cut -c1-90)"
else
    ok "the iterator lists PID 1 here (or does not run): no skipped process to look for in the first frame"
fi
