#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# bench/growth.sh: the cost of one steady refresh against the number of tasks, with the
# BPF lens (iotriage -b) and without it (--no-bpf), as a table and an SVG plot (gnuplot).
#
# Populations: 0, 1,000, 10,000 and 30,000 idle processes and 100 processes x 100 threads
# (threads mode, -P), each with bench/spawn's two readers and two writers. The runs are
# bench/run.sh's (--programs "iotriage iotriage-nobpf iotop-c"), so its method holds: the
# programs alternate within a population, CPU is user + sys from wait4; its table (whole
# runs, x iotop-c) is kept in DIR/run.txt. iotop-c is in the table, not in the plot. Steady is
# (CPU of the R-refresh run - CPU of the 1-refresh run) / (R - 1): one more refresh once
# running, start-up left out. The per-idle-task slope is the least-squares line through
# the process populations (the threads one is its own point: a thread is a task too).
#
# Usage: bench/growth.sh [--sizes "0 1000 10000 30000"] [--threads 100x100] [-n R]
#                        [--reps K] [--out DIR] [--programs LIST] [--plot-only]
#   --plot-only  only make the table and the plot again from DIR/runs.tsv
# Writes DIR/growth.tsv, DIR/growth.txt and DIR/growth.svg (DIR: build/bench/growth).
# Needs root (bench/run.sh) and gnuplot (gnuplot-nox); about 15 minutes at the defaults.
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
SIZES="0 1000 10000 30000" THREADS=100x100 R=10 REPS=2 PLOT_ONLY=0
PROGRAMS="iotriage iotriage-nobpf iotop-c"
OUT=$ROOT/${BUILD:-build}/bench/growth
while [ $# -gt 0 ]; do
    case $1 in
    --sizes) SIZES=$2; shift ;;
    --threads) THREADS=$2; shift ;;
    -n) R=$2; shift ;;
    --reps) REPS=$2; shift ;;
    --out) OUT=$2; shift ;;
    --programs) PROGRAMS=$2; shift ;;
    --plot-only) PLOT_ONLY=1 ;;
    -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
    *) echo "growth.sh: unknown argument $1" >&2; exit 2 ;;
    esac
    shift
done
die() { echo "growth.sh: $*" >&2; exit 1; }
command -v gnuplot >/dev/null || { echo "growth.sh: gnuplot not installed (scripts/deps.sh bench)" >&2; exit 77; }
mkdir -p "$OUT" || die "cannot make $OUT"

if [ "$PLOT_ONLY" = 0 ]; then
    extra=()        # run.sh's own cgroup-lens figure is not part of this
    "$ROOT/bench/run.sh" --help | grep -q -- --no-cgcost && extra+=(--no-cgcost)
    "$ROOT/bench/run.sh" "${extra[@]}" --sizes "$SIZES" --threads "$THREADS" -n "$R" --reps "$REPS" \
        --programs "$PROGRAMS" --no-callgrind --no-cold --out "$OUT" >"$OUT/run.txt"
    rc=$?
    [ "$rc" = 0 ] || { cat "$OUT/run.txt"; exit "$rc"; }
fi
[ -r "$OUT/runs.tsv" ] || die "no $OUT/runs.tsv"

# growth.tsv: scenario, tasks, program, steady ms per refresh (medians of the rounds).
awk -F'\t' 'NR > 1 && ($5 == "run" || $5 == "1-refresh") {
        k = $1 "\t" $3; t[k] = $2; cpu = ($7 + $8) * 1000
        if ($5 == "run") { r[k] = $4; run[k, ++nr[k]] = cpu } else one[k, ++no[k]] = cpu
        if (!(k in seen)) { seen[k] = 1; order[++n] = k }
    }
    function med(a, k, m,   i, j, x, v) {
        for (i = 1; i <= m; i++) v[i] = a[k, i]
        for (i = 1; i <= m; i++) for (j = i + 1; j <= m; j++) if (v[j] < v[i]) { x = v[i]; v[i] = v[j]; v[j] = x }
        return m % 2 ? v[(m + 1) / 2] : (v[m / 2] + v[m / 2 + 1]) / 2
    }
    BEGIN { OFS = "\t"; print "scenario", "tasks", "program", "steady_ms" }
    END { for (i = 1; i <= n; i++) { k = order[i]; if (!nr[k] || !no[k] || r[k] < 2) continue
            split(k, f, "\t")
            print f[1], t[k], f[2], (med(run, k, nr[k]) - med(one, k, no[k])) / (r[k] - 1) } }' \
    "$OUT/runs.tsv" >"$OUT/growth.tsv"
[ "$(wc -l <"$OUT/growth.tsv")" -gt 1 ] || die "no complete runs in $OUT/runs.tsv"

# The table and the slopes (least squares over the process populations).
awk -F'\t' 'NR > 1 {
        printf "%-16s %7d %-15s %9.2f ms  %7.2f us/task\n", $1, $2, $3, $4, $2 ? $4 * 1000 / $2 : 0
        if ($1 ~ /^procs-/) { p = $3; n[p]++; sx[p] += $2; sy[p] += $4; sxx[p] += $2 * $2; sxy[p] += $2 * $4 }
    }
    BEGIN { print "steady CPU per refresh against tasks (iotriage -b; -nobpf: --no-bpf)" }
    END { for (p in n) if (n[p] >= 2) {
            d = n[p] * sxx[p] - sx[p] * sx[p]; if (d == 0) continue
            b = (n[p] * sxy[p] - sx[p] * sy[p]) / d; a = (sy[p] - b * sx[p]) / n[p]
            printf "slope %-15s %.2f us per idle task, %.2f ms at 0 tasks\n", p, b * 1000, a } }' \
    "$OUT/growth.tsv" | tee "$OUT/growth.txt"

# The plot: steady ms per refresh against tasks, one line per program, the threads
# population as its own points.
awk -F'\t' 'NR > 1 && $1 ~ /^procs-/ { print $2, $4 > (out "/g." $3 ".procs.dat") }
            NR > 1 && $1 ~ /^threads-/ { print $2, $4 > (out "/g." $3 ".threads.dat") }' \
    out="$OUT" "$OUT/growth.tsv"
for p in iotriage iotriage-nobpf; do
    for k in procs threads; do
        [ -s "$OUT/g.$p.$k.dat" ] && sort -n "$OUT/g.$p.$k.dat" -o "$OUT/g.$p.$k.dat"
        [ -s "$OUT/g.$p.$k.dat" ] || echo "NaN NaN" >"$OUT/g.$p.$k.dat"
    done
done
gnuplot <<EOF || die "gnuplot failed"
set terminal svg size 720,440 font "sans,12" background "white"
set output "$OUT/growth.svg"
set title "iotriage: steady CPU per refresh against tasks"
set xlabel "tasks (processes, or threads with -P)"
set ylabel "CPU ms per refresh"
set key top left
set grid
plot "$OUT/g.iotriage.procs.dat" using 1:2 with linespoints pt 7 title "processes, BPF lens", \
     "$OUT/g.iotriage-nobpf.procs.dat" using 1:2 with linespoints pt 5 title "processes, --no-bpf", \
     "$OUT/g.iotriage.threads.dat" using 1:2 with points pt 9 ps 1.5 title "100 x 100 threads (-P), lens", \
     "$OUT/g.iotriage-nobpf.threads.dat" using 1:2 with points pt 11 ps 1.5 title "100 x 100 threads (-P), --no-bpf"
EOF
rm -f "$OUT"/g.*.dat
echo "plot: $OUT/growth.svg"
