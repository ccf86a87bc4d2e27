#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Process names and command lines are chosen by any local user: escape sequences, BEL,
# invalid UTF-8 and bidi overrides must never reach the terminal raw, and JSON must stay
# valid and exact.
. "$(dirname "$0")/lib.sh"

# A command line with an OSC title sequence, BEL, invalid UTF-8 and a bidi override.
evil_arg=$(printf 'x\033]0;pwned\007\377\342\200\256gnp.exe')
bg bash -c 'exec -a "$0" sleep 30' "$evil_arg"; p1=$BG
# A comm (15 bytes max) with a colour sequence; only the process itself may set it,
# and the trailing `true` keeps bash from exec'ing sleep (which would reset the name).
bg bash -c 'printf "\033[31mred\001" >/proc/$$/comm && sleep 30; true'; p2=$BG
# Checked once each name is set: p1's by the exec of sleep, p2's before it forks its sleep.
wait_sleep "$p1"
wait_until 20 pgrep -P "$p2" >/dev/null || fail "the comm-setting shell $p2 never forked its sleep: $(proc_state "$p2")"

"$IOT" -b -n 1 -d 0.1 -p "$p1" -p "$p2" >"$TMP/t.txt" || fail "text run failed"
if LC_ALL=C grep -q "$(printf '\033')" "$TMP/t.txt"; then fail "raw ESC in text output"; fi
if LC_ALL=C grep -q "$(printf '\007')" "$TMP/t.txt"; then fail "raw BEL in text output"; fi
if LC_ALL=C grep -q "$(printf '\342\200\256')" "$TMP/t.txt"; then fail "raw bidi override in text output"; fi
grep -qF 'x\e]0;pwned\x07\xff' "$TMP/t.txt" || fail "escaped cmdline not found: $(grep " $p1 " "$TMP/t.txt")"
ok "text: $(grep " $p1 " "$TMP/t.txt" | sed 's/.*  //')"

"$IOT" --json -n 1 -d 0.1 -p "$p1" -p "$p2" >"$TMP/j.json" || fail "json run failed"
jqf . "$TMP/j.json" >/dev/null
if LC_ALL=C grep -q "$(printf '\033')" "$TMP/j.json"; then fail "raw ESC in JSON"; fi
# exact round trip of what is representable: the ESC and BEL survive as characters
jqf --argjson p "$p1" '.processes[] | select(.pid == $p) | .cmdline | startswith("x\u001b]0;pwned\u0007\ufffd\u202egnp.exe")' \
    "$TMP/j.json" >/dev/null
jqf --argjson p "$p2" '.processes[] | select(.pid == $p) | .comm == "\u001b[31mred\u0001"' "$TMP/j.json" >/dev/null
ok "json: valid, control characters exact, invalid byte as U+FFFD"
