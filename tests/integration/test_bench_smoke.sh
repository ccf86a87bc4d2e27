#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The benchmark harness still works: bench/run.sh --smoke spawns a small population,
# runs iotriage -b, iotop-c -b and the two floor programs a few refreshes each (processes,
# then threads), and prints the table. Asserts nothing about time: only that every
# program ran, printed the samples asked for and listed the spawned tasks, and that the
# table is complete and well-formed (with +maps above the peak RSS where the lens loads:
# its BPF maps are counted). Skips (77) where the bench cannot run (not root,
# iotop-c not installable).
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT" || exit 1
out=$(mktemp -d /tmp/iotriage-bench-smoke.XXXXXX)
trap 'rm -rf "$out"' EXIT
[ -x "$ROOT/iotriage" ] || { echo "FAIL: $ROOT/iotriage not built (make)" >&2; exit 1; }

bench/run.sh --smoke --out "$out" >"$out/stdout" 2>"$out/stderr"
rc=$?
cat "$out/stderr" "$out/stdout"
if [ "$rc" = 77 ]; then
    echo "skipped: $(grep 'cannot run' "$out/stderr" | tail -n 1)" >&2
    exit 77
fi
[ "$rc" = 0 ] || { echo "FAIL: bench/run.sh --smoke exited $rc" >&2; exit 1; }

# Two populations x four programs (iotriage, iotop-c, floor, floor-k): eight rows with
# numbers where numbers belong and the three ratios filled on iotriage's rows.
rows=$(grep -E '^(procs|threads)-' "$out/stdout")
[ "$(printf '%s\n' "$rows" | grep -c .)" = 8 ] || { echo "FAIL: expected 8 table rows" >&2; exit 1; }
for p in iotriage iotop-c floor floor-k; do
    [ "$(printf '%s\n' "$rows" | awk -v p="$p" '$3 == p' | wc -l)" = 2 ] ||
        { echo "FAIL: $p is missing from the table" >&2; exit 1; }
done
# Whether the lens loads here (its maps then count in +maps): what iotriage itself says.
lens=0
[ "$("$ROOT/iotriage" --json -n 1 -d 0.1 2>/dev/null | jq -r '.lens.on')" = true ] && lens=1
printf '%s\n' "$rows" | awk -v lens="$lens" '
    function num(x) { return x ~ /^[0-9]+(\.[0-9]+)?$/ }
    # steady is a difference of two runs: on a few tasks noise can make it negative
    function snum(x) { return x ~ /^-?[0-9]+(\.[0-9]+)?$/ || x == "-" }
    { for (i = 4; i <= 9; i++) if (!num($i)) bad = bad "\n" $0 }
    $8 < $7 { bad = bad "\n" $0 " (+maps below peakRSS)" }
    # the lens loads here: its maps count in +maps (measure.c), above the peak RSS alone
    lens && $3 == "iotriage" && !($8 > $7) { bad = bad "\n" $0 " (the lens'"'"'s maps not counted)" }
    $3 == "iotriage" && (NF != 15 || !num($11) || !num($12) || !num($13) || !snum($14) || !snum($15)) { bad = bad "\n" $0 }
    $3 != "iotriage" && (NF != 11 || !snum($11)) { bad = bad "\n" $0 }
    $2 !~ /^[0-9]+$/ || $2 < 20 { bad = bad "\n" $0 }
    $4 <= 0 { bad = bad "\n" $0 " (no CPU time)" }
    END { if (bad != "") { print "FAIL: malformed rows:" bad > "/dev/stderr"; exit 1 } }' || exit 1
# 2 populations x 4 programs x (1 round + 1 one-refresh run)
[ "$(awk -F'\t' 'NR > 1' "$out/runs.tsv" | wc -l)" = 16 ] || { echo "FAIL: runs.tsv has not 16 runs" >&2; exit 1; }
echo "ok: bench smoke table well-formed, every program ran"

# bench/firstframe.sh --smoke: every installed program's screen showed its process table
# (a time in every row, no NA), the table printed. Nothing about how long it took.
BENCH_OUT="$out/ff" bench/firstframe.sh --smoke >"$out/ff.stdout" 2>"$out/ff.stderr"
rc=$?
cat "$out/ff.stderr" "$out/ff.stdout"
[ "$rc" = 77 ] && { echo "skipped: firstframe: $(tail -n 1 "$out/ff.stderr")" >&2; exit 77; }
[ "$rc" = 0 ] || { echo "FAIL: bench/firstframe.sh --smoke exited $rc" >&2; exit 1; }
ffrows=$(grep -E '^procs-50 ' "$out/ff.stdout")
for p in iotriage iotriage-nobpf; do
    printf '%s\n' "$ffrows" | awk -v p="$p" '$3 == p && $4 ~ /^[0-9]+(\.[0-9]+)?$/ { f = 1 } END { exit !f }' ||
        { echo "FAIL: firstframe: no first frame for $p" >&2; exit 1; }
done
printf '%s\n' "$ffrows" | grep -q ' NA ' && { echo "FAIL: firstframe: a program never showed its table" >&2; exit 1; }
echo "ok: first-frame smoke: $(printf '%s\n' "$ffrows" | wc -l) programs showed their table"
