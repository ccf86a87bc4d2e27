#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The device view shows a device's stack, above and below, on one line: from a recording
# whose devices carry slaves and holders (docs/json.md), as dm-crypt over dm-linear over
# a disk would: loop2 -> loop1 -> vda. UTF-8 arrows on a UTF-8 terminal, ASCII in the C
# locale; a device that stacks on nothing and carries nothing shows no stack line.
. "$(dirname "$0")/lib.sh"
SOCK=iotriage-stack-$$
. "$(dirname "$0")/lib_tmux.sh"
trap 'it_cleanup' EXIT

jq -c '.devices |= map(
    if .name == "vda" then . + {slaves: [], holders: ["loop1"]}
    elif .name == "loop1" then . + {slaves: ["vda"], holders: ["loop2"]}
    elif .name == "loop2" then . + {slaves: ["loop1"], holders: []}
    else . end)' "$ROOT/tests/fixtures/replay/rec.jsonl" >"$TMP/stack.jsonl" || fail "jq"

# open_vda LOCALE: the replay, paused, on the device view of vda (the first device listed)
# Each screen in a server of its own ($SOCK-N): a new session started just as the last
# server exits after kill-server can find it still there ("server exited unexpectedly").
OPENS=0
open_vda() {
    T kill-server 2>/dev/null
    OPENS=$((OPENS + 1))
    SOCK=$SOCK_BASE-$OPENS
    T new-session -d -s ui -x 120 -y 30 "LC_ALL=$1 $IOT --replay $TMP/stack.jsonl; echo EXITED \$?; sleep 60"
    wait_for 'REPLAY [0-9]/3'
    T send-keys -t ui p
    wait_for 'PAUSED'
    T send-keys -t ui Tab Home Enter
    wait_for '^Device vda '
}
open_vda C.UTF-8
wait_for '^stack loop2 → loop1 → \[vda\]$'
ok "the stack above a disk, UTF-8"
open_vda C
wait_for '^stack loop2 -> loop1 -> \[vda\]$'
ok "the stack above a disk, ASCII in the C locale"

# A recording without the keys (made before them): no stack line, nothing invented.
jq -c '.devices |= map(del(.slaves, .holders))' "$TMP/stack.jsonl" >"$TMP/old.jsonl"
cp "$TMP/old.jsonl" "$TMP/stack.jsonl"
open_vda C.UTF-8
wait_for 'scheduler .*nr_requests'
screen | grep -q '^stack ' && fail "a stack shown for a recording without one: $(screen | grep '^stack ')"
ok "no stack line for a recording made before stacks were kept"
