#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# A frame goes to the terminal in a few write()s, not one per cursor move: over ssh each
# write wakes sshd and often becomes a packet of its own, and on a slow link hundreds of
# them a refresh make the screen crawl. (ncurses 6.4 flushes at every cursor move until the
# screen was left and resumed once: some 800 writes for a 200x50 frame; tui.c does that
# once before the first frame.) `iotriage -d 0.25` on a 200x50 tmux screen under strace:
#  - the first full frame, from its header line to its key bar, is at most 3 writes;
#  - over the whole run, at most 4 writes a refresh on average (the refreshes counted from
#    the run's length), with room for the start and the exit.
. "$(dirname "$0")/lib.sh"
need strace
SOCK=iotriage-writes-$$
. "$(dirname "$0")/lib_tmux.sh"
trap 'it_cleanup' EXIT

st=$TMP/writes.st
T new-session -d -s ui -x 200 -y 50 \
    "strace -f -qq -s 65536 -e trace=write -e signal=none -o $st $IOT -d 0.25; echo EXITED \$?; sleep 60"
wait_for '^ +PID +USER +PRIO' 20
wait_for '^q quit'
start=$(date +%s.%N)
sleep 3
T send-keys -t ui q
wait_for '^EXITED 0' 10
end=$(date +%s.%N)
[ -s "$st" ] || fail "strace wrote nothing"

# The terminal's writes, one a line: "BYTES CONTENT" (strace -f: PID first).
awk '{ sub(/^[0-9]+ +/, "") } /^write\(1, / { n = $NF; print n, $0 }' "$st" >"$TMP/w1"
nw=$(wc -l <"$TMP/w1")
[ "$nw" -gt 0 ] || fail "no write to the terminal in the trace: $(head -3 "$st")"
first=$(grep -n 'iotriage - ' "$TMP/w1" | head -1 | cut -d: -f1)
[ -n "$first" ] || fail "no write holds the header line"
bar=$(awk -v f="$first" 'NR >= f && /q quit/ { print NR; exit }' "$TMP/w1")
[ -n "$bar" ] || fail "no write after the header holds the key bar"
span=$((bar - first + 1))
[ "$span" -le 3 ] || fail "the first frame took $span writes (header in write $first, key bar in write $bar)"
bytes=$(awk -v f="$first" -v b="$bar" 'NR >= f && NR <= b { s += $1 } END { print s }' "$TMP/w1")
ok "the first frame: $span write(s), $bytes bytes"

refreshes=$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%d", (b - a) / 0.25 }')
limit=$((4 * (refreshes + 4) + 10))
[ "$nw" -le "$limit" ] || fail "$nw writes to the terminal in about $refreshes refreshes (limit $limit)"
ok "$nw writes to the terminal over the run (about $refreshes refreshes after the first frame; limit $limit)"
