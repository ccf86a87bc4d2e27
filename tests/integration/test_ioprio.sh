#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Effective I/O priority of real processes, as the kernel will apply it
# (KERNEL-FACTS sections 1 and 2): class none follows nice (level (nice+20)/5) and the
# scheduling policy (idle -> idle, fifo/rr -> realtime); an explicit ionice wins.
. "$(dirname "$0")/lib.sh"
need ionice
need chrt

# The pid bg gives is nice's (ionice's, chrt's) until it execs sleep, and at nice 0 until
# nice has set it: judged only once it is sleep, asleep.
check() { # check DESC PID CLASS EFF_CLASS EFF_LEVEL SOURCE
    local desc=$1 pid=$2
    wait_sleep "$pid"
    "$IOT" --json -n 1 -d 0.1 -p "$pid" >"$TMP/p.json" || fail "$desc: run failed"
    local got
    got=$(jq -r '.processes[0] | "\(.ioprio.class) \(.ioprio.effective_class) \(.ioprio.effective_level) \(.ioprio.source)"' "$TMP/p.json")
    [ "$got" = "$3 $4 $5 $6" ] || fail "$desc: got '$got', expected '$3 $4 $5 $6'"
    ok "$desc -> $got"
}

bg sleep 30;                      check "plain"            "$BG" none be   4 nice
bg nice -n 19 sleep 30;           check "nice -n 19"       "$BG" none be   7 nice
bg nice -n -20 sleep 30;          check "nice -n -20"      "$BG" none be   0 nice
bg nice -n 10 sleep 30;           check "nice -n 10"       "$BG" none be   6 nice
bg chrt --idle 0 sleep 30;        check "chrt --idle 0"    "$BG" none idle 4 policy
bg chrt --fifo 10 sleep 30;       check "chrt --fifo 10"   "$BG" none rt   4 policy
bg ionice -c2 -n3 sleep 30;       check "ionice -c2 -n3"   "$BG" be   be   3 explicit
bg ionice -c3 sleep 30;           check "ionice -c3"       "$BG" idle idle 7 explicit
bg ionice -c1 -n2 sleep 30;       check "ionice -c1 -n2"   "$BG" rt   rt   2 explicit
# explicit wins over nice and policy
bg nice -n 19 ionice -c2 -n0 sleep 30; check "nice 19 + ionice -c2 -n0" "$BG" be be 0 explicit

# The raw value is the kernel's own: compare with ionice -p for the idle one.
bg ionice -c3 sleep 30
wait_sleep "$BG"
"$IOT" --json -n 1 -d 0.1 -p "$BG" >"$TMP/r.json"
raw=$(jq '.processes[0].ioprio.raw' "$TMP/r.json")
[ "$raw" = $(( (3 << 13) | 7 )) ] || fail "raw ioprio of ionice -c3 is $raw, expected 24583"
ionice -p "$BG" | grep -q idle || fail "ionice -p disagrees"
ok "raw value 0x6007 for ionice -c3"

# Text output names the class, level and where it came from.
bg nice -n 19 sleep 30
wait_sleep "$BG"
"$IOT" -b -n 1 -d 0.1 -p "$BG" >"$TMP/t.txt"
grep -Eq "^ *$BG +[^ ]+ +be/7~ +nice " "$TMP/t.txt" || fail "text line for nice 19: $(grep " $BG " "$TMP/t.txt")"
ok "text shows be/7 nice"
