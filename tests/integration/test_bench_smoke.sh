#!/usr/bin/env bash
# The benchmark harness still works: bench/run.sh --smoke spawns a small population,
# runs iotriage -b, iotop-c -b and the floor program a few refreshes each (processes,
# then threads), and prints the table. Asserts nothing about time: only that every
# program ran, printed the samples asked for and listed the spawned tasks, and that the
# table is complete and well-formed. Skips (77) where the bench cannot run (not root,
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

# Two populations x three programs: six rows of ten columns with numbers where numbers
# belong, and the two ratio columns filled on iotriage's rows.
rows=$(grep -E '^(procs|threads)-' "$out/stdout")
[ "$(printf '%s\n' "$rows" | grep -c .)" = 6 ] || { echo "FAIL: expected 6 table rows" >&2; exit 1; }
for p in iotriage iotop-c floor; do
    [ "$(printf '%s\n' "$rows" | awk -v p="$p" '$3 == p' | wc -l)" = 2 ] ||
        { echo "FAIL: $p is missing from the table" >&2; exit 1; }
done
printf '%s\n' "$rows" | awk '
    { for (i = 4; i <= 8; i++) if ($i !~ /^-?[0-9]+(\.[0-9]+)?$/) bad = bad "\n" $0 }
    $3 == "iotriage" && (NF != 10 || $9 !~ /^[0-9.]+$/ || $10 !~ /^[0-9.]+$/) { bad = bad "\n" $0 }
    $3 != "iotriage" && NF != 8 { bad = bad "\n" $0 }
    $2 !~ /^[0-9]+$/ || $2 < 20 { bad = bad "\n" $0 }
    END { if (bad != "") { print "FAIL: malformed rows:" bad > "/dev/stderr"; exit 1 } }' || exit 1
# Each program's CPU time was measured (a zero would mean the run was not accounted).
printf '%s\n' "$rows" | awk '$4 <= 0 { print "FAIL: no CPU time for " $1 " " $3 > "/dev/stderr"; exit 1 }' || exit 1
[ "$(awk -F'\t' 'NR > 1' "$out/runs.tsv" | wc -l)" -ge 12 ] || { echo "FAIL: runs.tsv is short" >&2; exit 1; }
echo "ok: bench smoke table well-formed, every program ran"
