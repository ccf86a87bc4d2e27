#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Golden output over stored data, in the manner of sysstat's tests: the recordings in
# tests/fixtures/replay/ are printed with `iotriage -b --replay` and `--json --replay`
# (and -o, and ASCII) and the text is compared, byte for byte, with the expected files in
# tests/fixtures/golden/. A change to the text or JSON writers, the column table or the
# sample decoder shows here as a diff. GOLDEN_UPDATE=1 writes the expected files anew
# (then read the diff before committing it).
. "$(dirname "$0")/lib.sh"
export TZ=UTC
gold=$ROOT/tests/fixtures/golden
mkdir -p "$gold"
n=0
for f in rec rec-only rec-threads rec-unpriv handmade rec-lens; do
    in=$ROOT/tests/fixtures/replay/$f.jsonl
    for variant in txt txt-only txt-ascii json-only; do
        case $variant in
        txt)       LC_ALL=C.UTF-8 "$IOT" -b --replay "$in" ;;
        txt-only)  LC_ALL=C.UTF-8 "$IOT" -b -o --replay "$in" ;;
        txt-ascii) LC_ALL=C "$IOT" -b --replay "$in" ;;
        json-only) LC_ALL=C.UTF-8 "$IOT" --json -o --replay "$in" ;;
        esac >"$TMP/out" 2>"$TMP/err"
        rc=$?
        [ "$rc" = 0 ] || fail "$f $variant: exit $rc: $(head -n 3 "$TMP/err")"
        [ -s "$TMP/err" ] && fail "$f $variant: stderr: $(head -n 3 "$TMP/err")"
        want=$gold/$f.$variant
        if [ "${GOLDEN_UPDATE:-0}" = 1 ]; then
            cp "$TMP/out" "$want"
        elif ! diff -u "$want" "$TMP/out" >"$TMP/diff"; then
            head -n 40 "$TMP/diff"
            fail "$f $variant differs from $(basename "$want") (GOLDEN_UPDATE=1 rewrites it)"
        fi
        n=$((n + 1))
    done
    # A recording written again with --json --replay is the recording itself.
    LC_ALL=C.UTF-8 "$IOT" --json --replay "$in" | cmp -s - "$in" || fail "$f: --json --replay is not the recording"
done
ok "$n outputs of 6 recordings as expected; every recording written again byte for byte"

# The test can fail: a changed sample must show as a diff.
sed '1s/"interval_s":0.3[0-9]*/"interval_s":9.999/' "$ROOT/tests/fixtures/replay/rec.jsonl" >"$TMP/changed.jsonl"
LC_ALL=C.UTF-8 "$IOT" -b --replay "$TMP/changed.jsonl" | cmp -s - "$gold/rec.txt" && fail "a changed recording printed the golden text"
ok "a changed recording gives another text"

# The Delays line names the source of IODLY% and what is unavailable: never "unavailable"
# while the column carries the lens's figures (issue 36). The sources come from the
# recording: lens.on and each process's io_delay_source.
fx=$ROOT/tests/fixtures/replay
delays() { LC_ALL=C.UTF-8 "$IOT" -b --replay "$1" | grep '^Delays' | sort -u; }
want='Delays: IODLY% from the BPF lens; swap-in delay (SWAP%) unavailable: delay accounting is off'
got=$(delays "$fx/rec-lens.jsonl")
[ "$(wc -l <<<"$got")" = 1 ] && [[ $got == "$want"* ]] || fail "rec-lens: Delays line: $got"
jq -c '.delayacct = false | .processes |= map(if .io_delay_source then .io_delay_source = "sampled" else . end)' \
    "$fx/rec.jsonl" >"$TMP/sampled.jsonl"
got=$(delays "$TMP/sampled.jsonl")
[[ $got == 'Delays: IODLY% from sampled thread states (marked ~); swap-in delay (SWAP%) unavailable: '* ]] ||
    fail "sampled estimates: Delays line: $got"
jq -c '.processes |= map(if .io_delay_source then .io_delay_source = "bpf" else . end)' \
    "$fx/rec.jsonl" >"$TMP/mixed.jsonl"
got=$(delays "$TMP/mixed.jsonl")
[[ $got == "Delays: on (taskstats); IODLY% of the tasks it has no figures for from the BPF lens, their SWAP% '-'" ]] ||
    fail "taskstats and the lens: Delays line: $got"
got=$(delays "$fx/rec.jsonl")
[[ $got == "Delays: on (tasks started before it was switched on show '-')" ]] || fail "taskstats: Delays line: $got"
ok "the Delays line names the source: lens, sampled, taskstats + lens, taskstats"

# INFLT, five wide, from requests_wait: a deep submitter's 140 whole, 12.5 with one
# decimal, 0.25 with two; the JSON carries them as recorded (the recording has none: set
# here on three of its processes).
jq -c '.processes |= map(
    if .pid == 6090 then .lens_bytes = {"loop1": 1000} | .requests_wait = {"loop1": {"in_flight": 140.26, "await_ms": 9.7}}
    elif .pid == 6091 then .lens_bytes = {"loop1": 1000} | .requests_wait = {"loop1": {"in_flight": 12.54, "await_ms": 9.7}}
    elif .pid == 6111 then .lens_bytes = {"loop1": 1000} | .requests_wait = {"loop1": {"in_flight": 0.254, "await_ms": 9.7}}
    else . end)' "$fx/rec-lens.jsonl" >"$TMP/inflt.jsonl"
out=$(COLUMNS=200 LC_ALL=C.UTF-8 "$IOT" -b --replay "$TMP/inflt.jsonl")
col=$(grep -m1 ' INFLT ' <<<"$out" | awk '{for (i = 1; i <= NF; i++) if ($i == "INFLT") print i}')
[ -n "$col" ] || fail "no INFLT column: $(grep -m1 PID <<<"$out")"
inflt() { awk -v p="$1" -v c="$col" '$1 == p { print $c; exit }' <<<"$out"; }
[ "$(inflt 6090)/$(inflt 6091)/$(inflt 6111)" = "140/12.5/0.25" ] ||
    fail "INFLT: $(inflt 6090)/$(inflt 6091)/$(inflt 6111) (want 140/12.5/0.25)"
got=$(LC_ALL=C.UTF-8 "$IOT" --json --replay "$TMP/inflt.jsonl" | head -n 1 |
    jq -c '[.processes[] | select(.pid == 6090) | .requests_wait.loop1.in_flight][0]')
[ "$got" = 140.26 ] || fail "requests_wait written again: $got"
ok "INFLT fits five wide: 140, 12.5, 0.25; requests_wait read and written again"
