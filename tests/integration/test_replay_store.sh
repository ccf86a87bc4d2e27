#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# `iotriage --replay` of a recorder's files (store/store.h) from the command line, on
# hourly files made here: real samples (tests/fixtures/replay/rec.jsonl with new times),
# one zstd frame each, as `iotriage record` writes them.
#   Damage: a torn frame in the middle of two hours' files. -b and --json, of the
#   directory (with and without --from/--to, and a --from past the damage, which only the
#   seek meets) and of one file: every good sample printed, every damaged file and frame
#   named on stderr (two torn frames in one file: both), exit status 1 after the printing.
#   --at: the sample shown says how far it is from the moment asked (-b's "At:" line,
#   --json's "at", the screen's header), and says so when nothing came at or after it:
#   `--at now` on a recording that stopped minutes ago shows its last sample.
#   The header of a replay whose IODLY% is the BPF lens's names that source.
. "$(dirname "$0")/lib.sh"
need zstd
need tmux
SOCK=iotriage-replaystore-$$
. "$(dirname "$0")/lib_tmux.sh"
export TZ=UTC
FIX=$ROOT/tests/fixtures/replay/rec.jsonl
mapfile -t LINES <"$FIX"

# Append sample number N (a fixture line) with ts T as one frame to the hour's file in DIR;
# with "torn", only the frame's first 20 bytes (a crash in the middle of a write), and
# TORN[file] is where it starts.
declare -A TORN
frame() { # DIR T N [torn]
    local f
    f=$1/$(date -u -d "@$2" +%Y-%m-%dT%H).iotr.zst
    mkdir -p "$1"
    if [ "${4:-}" = torn ]; then
        TORN[$f]=$(stat -c %s "$f" 2>/dev/null || echo 0)
        jq -c --argjson t "$2" '.ts = $t' <<<"${LINES[$3 % ${#LINES[@]}]}" | zstd -q -c --check | head -c 20 >>"$f"
    else
        jq -c --argjson t "$2" '.ts = $t' <<<"${LINES[$3 % ${#LINES[@]}]}" | zstd -q -c --check >>"$f"
    fi
}

# Two hours, 2026-12-01T03 and T04 (UTC): three samples a minute apart in each, with a
# torn frame after the first sample of each hour.
H3=1796094000 H4=1796097600
D=$TMP/rec
for h in $H3 $H4; do
    frame "$D" $((h + 60)) 0
    frame "$D" $((h + 90)) 1 torn
    frame "$D" $((h + 120)) 1
    frame "$D" $((h + 180)) 2
done
F3=$D/2026-12-01T03.iotr.zst F4=$D/2026-12-01T04.iotr.zst

# run NAME WANT-SAMPLES WANT-DAMAGED-FILES... -- IOTRIAGE-ARGS: exit 1, the samples on
# stdout, one stderr line naming each damaged file (at its torn frame's byte), nothing else.
run() {
    local name=$1 want=$2 rc n f; shift 2
    local files=()
    while [ "$1" != -- ]; do files+=("$1"); shift; done
    shift
    "$IOT" "$@" >"$TMP/$name.out" 2>"$TMP/$name.err"; rc=$?
    [ "$rc" = 1 ] || fail "$name: exit $rc, expected 1 after printing (stderr: $(head -n 3 "$TMP/$name.err"))"
    if [[ " $* " == *" --json "* ]]; then
        n=$(jq -s length "$TMP/$name.out") || fail "$name: stdout is not JSON lines"
    else
        n=$(grep -c '^iotriage - ' "$TMP/$name.out")
    fi
    [ "$n" = "$want" ] || fail "$name: $n samples printed, expected $want"
    for f in "${files[@]}"; do
        grep -q "^iotriage: $f: damaged at byte ${TORN[$f]}: .*(read up to the damage and on after it)$" \
            "$TMP/$name.err" || { cat "$TMP/$name.err" >&2; fail "$name: $f not named as damaged"; }
    done
    [ "$(wc -l <"$TMP/$name.err")" = "${#files[@]}" ] ||
        { cat "$TMP/$name.err" >&2; fail "$name: expected ${#files[@]} lines on stderr"; }
    ok "$name: $n samples, exit 1, damaged: $(sed -E 's/^iotriage: .*\/([^/]*): damaged at byte ([0-9]+).*/\1@\2/' "$TMP/$name.err" | tr '\n' ' ')"
}

win=(--from "@$H3" --to "@$((H4 + 3599))")
run dir-b 6 "$F3" "$F4" -- -b --replay "$D" "${win[@]}"
run dir-json 6 "$F3" "$F4" -- --json --replay "$D" "${win[@]}"
run dir-from-b 5 "$F3" "$F4" -- -b --replay "$D" --from "@$((H3 + 100))" --to "@$((H4 + 3599))"
run file-b 3 "$F3" -- -b --replay "$F3"
run file-json 3 "$F4" -- --json --replay "$F4"
run file-window-json 2 "$F4" -- --json --replay "$F4" --from "@$((H4 + 100))"
# The damage before --from in the file the seek starts from: met by the seek alone.
run seek-only-json 1 "$F4" -- --json --replay "$D" --from "@$((H4 + 150))" --to "@$((H4 + 3599))"

# Two torn frames in one file: each named with its byte.
M=$TMP/two
frame "$M" $((H3 + 60)) 0
frame "$M" $((H3 + 90)) 1 torn
first=${TORN[$M/2026-12-01T03.iotr.zst]}
frame "$M" $((H3 + 120)) 1
frame "$M" $((H3 + 150)) 2 torn
frame "$M" $((H3 + 180)) 2
"$IOT" --json --replay "$M" --from "@$H3" >"$TMP/two.out" 2>"$TMP/two.err"; rc=$?
[ "$rc" = 1 ] || fail "two torn frames: exit $rc"
[ "$(wc -l <"$TMP/two.out")" = 3 ] || fail "two torn frames: $(wc -l <"$TMP/two.out") samples, expected 3"
for b in "$first" "${TORN[$M/2026-12-01T03.iotr.zst]}"; do
    grep -q "T03.iotr.zst: damaged at byte $b: " "$TMP/two.err" ||
        { cat "$TMP/two.err" >&2; fail "two torn frames: the one at byte $b not named"; }
done
[ "$(wc -l <"$TMP/two.err")" = 2 ] || { cat "$TMP/two.err" >&2; fail "two torn frames: expected 2 lines"; }
ok "two torn frames in one file: both named (bytes $first and ${TORN[$M/2026-12-01T03.iotr.zst]}), exit 1"

# A directory without a window shows its last hour: samples of the last minutes.
now=$(date +%s)
R=$TMP/recent
frame "$R" $((now - 300)) 0
frame "$R" $((now - 240)) 1 torn
frame "$R" $((now - 180)) 1
frame "$R" $((now - 120)) 2
rf=$(ls "$R"/*.iotr.zst | head -n 1)
nf=$(ls "$R"/*.iotr.zst | wc -l)
if [ "$nf" = 1 ]; then
    run recent-b 3 "$rf" -- -b --replay "$R"
else
    ok "recent-b: the samples straddle an hour; skipped this once"
fi

# An undamaged recording still exits 0, with nothing on stderr.
G=$TMP/good
frame "$G" $((H3 + 60)) 0
frame "$G" $((H3 + 120)) 1
"$IOT" --json --replay "$G" --from "@$H3" >"$TMP/good.out" 2>"$TMP/good.err" || fail "undamaged: exit $?"
[ ! -s "$TMP/good.err" ] || fail "undamaged: stderr $(cat "$TMP/good.err")"
[ "$(wc -l <"$TMP/good.out")" = 2 ] || fail "undamaged: $(wc -l <"$TMP/good.out") samples"
ok "an undamaged recording: exit 0, silent"

# ---- --at: how far the sample shown is from the moment asked ----------------------------
# A moment inside the recording: the first sample at or after it, 20 s later.
"$IOT" --json --replay "$G" --at "@$((H3 + 100))" -n 1 >"$TMP/at.json" || fail "--at inside: exit $?"
jqf --argjson a $((H3 + 100)) '.at.asked == $a and .at.offset_s == 20 and .at.missed == false' "$TMP/at.json" >/dev/null
"$IOT" -b --replay "$G" --at "@$((H3 + 100))" -n 1 >"$TMP/at.txt" || fail "-b --at inside: exit $?"
grep -qx 'At: 20s after the moment asked (2026-12-01 03:01:40)' "$TMP/at.txt" ||
    { head -n 3 "$TMP/at.txt" >&2; fail "-b --at inside: no At: line"; }
ok "--at inside: $(grep '^At:' "$TMP/at.txt")"
# Without --at: neither.
"$IOT" --json --replay "$G" --from "@$H3" -n 1 | jqf 'has("at") | not' >/dev/null
"$IOT" -b --replay "$G" --from "@$H3" -n 1 | grep -q '^At:' && fail "an At: line without --at"
ok "without --at: no \"at\", no At: line"

# --at now on a recording whose last sample is 11 minutes old: that sample, and how old.
L=$TMP/stopped
now=$(date +%s)
frame "$L" $((now - 900)) 0
frame "$L" $((now - 660)) 1
"$IOT" --json --replay "$L" --at now >"$TMP/now.json" || fail "--at now: exit $?"
[ "$(wc -l <"$TMP/now.json")" = 1 ] || fail "--at now: $(wc -l <"$TMP/now.json") samples, expected the last one"
jqf --argjson n "$now" '.ts == ($n - 660) and .at.missed == true and .at.offset_s <= -660
                        and .at.offset_s > -720 and .at.asked >= $n' "$TMP/now.json" >/dev/null
"$IOT" -b --replay "$L" --at now >"$TMP/now.txt" || fail "-b --at now: exit $?"
grep -Eq '^At: 1[12]m[0-9]{2}s before the moment asked \(.*\): the last sample before it \(none after it in the window\)$' \
    "$TMP/now.txt" || { head -n 3 "$TMP/now.txt" >&2; fail "-b --at now: the At: line does not say how old"; }
ok "--at now, 11 minutes after the last sample: $(grep '^At:' "$TMP/now.txt")"

# The screen's header says it too.
T new-session -d -s ui -x 140 -y 30 "$IOT --replay $L --at now; echo EXITED \$?; sleep 60"
wait_for '^iotriage - .*REPLAY 2/2 x1  1[12]m[0-9]{2}s before --at \(none after\)'
T send-keys -t ui p Left
wait_for '^iotriage - .*REPLAY 1/2 x1 PAUSED  1[56]m[0-9]{2}s before --at \(none after\)'
hdr=$(screen | grep -Eo 'REPLAY [^ ]+ x1.*--at( \(none after\))?' | head -n 1)
T send-keys -t ui q
wait_for '^EXITED 0'
ok "screen: $hdr"

# The header of a replay names the source of IODLY% (the lens, delay accounting off when
# recorded), says swap-in delay is nobody's, and offers no A: a recording's kernel is not
# this one.
T kill-server 2>/dev/null
SOCK=$SOCK-lens
T new-session -d -s ui -x 160 -y 30 "$IOT --replay $ROOT/tests/fixtures/replay/rec-lens.jsonl; echo EXITED \$?; sleep 60"
wait_for '^iotriage - .*REPLAY [0-9]/3 .* procs  IODLY by lens, no swap-in  delays off *$'
screen | grep -q 'A turns on' && fail "a replay's header offers A"
hdr=$(screen | grep -Eo 'procs  IODLY by lens, no swap-in  delays off' | head -n 1)
T send-keys -t ui q
wait_for '^EXITED 0'
ok "replay header: ... $hdr"
