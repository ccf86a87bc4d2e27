#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# bench/run.sh: what one refresh of `iotriage -b` costs, against `iotop-c -b` and the floor
# (bench/floor.c: only the reads the kernel must be asked for the same data).
#
# For each population (idle processes from bench/spawn.c, plus two readers and two
# writers doing a little I/O) the programs run in turn, alternating, each for R refreshes
# at the same interval, every column on, output to /dev/null; the CPU time (user + sys of
# the child, from wait4) is divided by R, nothing subtracted. Also: a 1-refresh run of each
# in every round (start-up plus two samples), peak RSS (ru_maxrss) alone and with the
# locked memory of the BPF maps the run created (the lens's), the slab a run adds (/proc/meminfo
# Slab: highest while it ran minus just before; "warm" after every program has read every
# /proc entry once, "cold" right after dropping the dentry and inode caches), and
# callgrind's instructions per refresh for iotriage at 1,000 processes.
# The method and the latest figures: docs/performance.md.
#
# Usage: bench/run.sh [--smoke] [--sizes "0 1000 10000"] [--threads PROCSxTHREADS]
#                     [-n REFRESHES] [-d SECONDS] [--reps K] [--programs "..."]
#                     [--no-callgrind] [--no-cold] [--no-cgcost] [--out DIR] [--table]
#   programs: iotriage iotop-c floor floor-k floor-lazy (default: the first four);
#     iotriage-nobpf (--no-bpf), iotriage-noiter (IOTRIAGE_TASKITER=0: the lens without
#     the task iterator), iotriage-libbpf (IOTRIAGE_BPF_LOADER=libbpf: both BPF objects
#     loaded by libbpf's skeletons, not the light ones), base and base-nobpf (the binary
#     IOTRIAGE_BASE=PATH, for an A/B interleaved with the others)
#     floor       bench/floor: stat and io opened and read every refresh
#     floor-k     the same with stat and io kept open (pread): less CPU, more slab
#     floor-lazy  a design sketch, not a floor: io (kept open) and taskstats every
#                 refresh, the rest only for tasks whose io moved (floor.c -l -k)
#     floor+X[+Y] the floor plus reads a monitor might do (X: status, comm, cmdline, fd; see
#                 floor.c -x), to price each: e.g. --programs "floor floor+status"
#   --table   only print the table again from DIR/runs.tsv (and DIR/callgrind.*)
#   --no-cgcost  skip the cgroup lens's own figure (bench/cgcost: what the lens adds to a
#             refresh at 10,000 processes in 500 cgroups, run last; not with --smoke)
#   --smoke   a small population, few refreshes: checks that the harness works (every
#             program ran and listed the tasks; the table is complete); measures nothing
# Environment: IOTRIAGE=PATH measures that binary instead of ./iotriage; BENCH_NO_BUILD=1
# builds nothing (make bench has). Needs root (taskstats, every process's io file,
# iotop-c); installs iotop-c with apt-get when missing. Sets kernel.task_delayacct=1
# while it runs and restores it.
# Exit status: 0 done, 77 cannot run here (reason on stderr), 1 failure.
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${BUILD:-build}
BIN="$ROOT/$BUILD/bench"
IOT=${IOTRIAGE:-$ROOT/iotriage}

smoke=0 sizes="0 1000 10000" threads_shape="100x20" R=10 D=1 reps=2 callgrind=1 cold=1 cgcost=1
programs="iotriage iotop-c floor floor-k" out="" table_only=0
while [ $# -gt 0 ]; do
    case $1 in
    --smoke) smoke=1 ;;
    --sizes) sizes=$2; shift ;;
    --threads) threads_shape=$2; shift ;;
    -n) R=$2; shift ;;
    -d) D=$2; shift ;;
    --reps) reps=$2; shift ;;
    --programs) programs=$2; shift ;;
    --no-callgrind) callgrind=0 ;;
    --no-cold) cold=0 ;;
    --no-cgcost) cgcost=0 ;;
    --out) out=$2; shift ;;
    --table) table_only=1 ;;
    -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
    *) echo "bench: unknown argument $1 (try --help)" >&2; exit 2 ;;
    esac
    shift
done
if [ "$smoke" = 1 ]; then
    sizes="50" threads_shape="5x4" R=2 D=0.3 reps=1 callgrind=0 cold=0 cgcost=0
fi
out=${out:-$ROOT/$BUILD/bench/results}

cannot() { echo "bench: cannot run: $*" >&2; exit 77; }
die() { echo "bench: $*" >&2; exit 1; }

# --- the table, from runs.tsv ----------------------------------------------------------------
# One row per population and program: medians of the rounds; the ratios on the rows of
# iotriage and floor-lazy. Exit 1 when a program of a population has no run.
print_table() {
    awk -F'\t' -v outdir="$out" '
    function median(key,   n, i, j, t, a) {
        n = cnt[key]
        for (i = 1; i <= n; i++) a[i] = val[key, i]
        for (i = 2; i <= n; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] > t; j--) a[j + 1] = a[j]; a[j + 1] = t }
        return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
    }
    function add(key, v) { cnt[key]++; val[key, cnt[key]] = v }
    function fmt(key, scale, f) { return cnt[key] ? sprintf(f, median(key) * scale) : "-" }
    NR == 1 { next }
    {
        sc = $1; p = $3; k = sc SUBSEP p
        if (!(sc in seen)) { seen[sc] = 1; order[++nsc] = sc; tasks[sc] = $2 }
        if (!(p in pseen)) { pseen[p] = 1; progs[++np] = p }
        cpu = $7 + $8
        if ($5 == "run") {
            add(k SUBSEP "cpu", cpu / $4)
            refreshes = $4
            if ($9 > rss[k]) rss[k] = $9
            # -1: the maps could not be listed (measure.c): +maps unknown, not the RSS alone
            if ($13 < 0) mapsunk[k] = 1
            else if ($13 > maps[k]) maps[k] = $13
            # Slab: the smallest of the rounds, since the rest of the machine only adds.
            sl = ($12 - $11) / 1024
            if (!(k in slab) || sl < slab[k]) slab[k] = sl
        } else if ($5 == "1-refresh") {
            add(k SUBSEP "start", cpu)
        } else if ($5 == "cold") {
            add(k SUBSEP "cold", ($12 - $11) / 1024)
        }
    }
    END {
        hdr = "%-16s %6s %-15s %8s %7s %8s %7s %6s %6s %6s %8s %7s %7s %7s %8s\n"
        printf hdr, "population", "tasks", "program", "CPU/ref", "us/task", "1-ref", "peakRSS",
            "+maps", "slab+", "slab+", "x", "x", "x", "steady", "x iotop-c"
        printf hdr, "", "", "", "ms", "", "CPU ms", "MB", "MB", "warm", "cold", "iotop-c", "floor", "floor-k",
            "ms/ref", "steady"
        for (i = 1; i <= nsc; i++) {
            sc = order[i]
            delete c
            delete st
            for (j = 1; j <= np; j++) {
                k = sc SUBSEP progs[j]
                if (cnt[k SUBSEP "cpu"]) c[progs[j]] = median(k SUBSEP "cpu")
                # steady: what one more refresh costs, start-up and first sample taken out
                if (cnt[k SUBSEP "cpu"] && cnt[k SUBSEP "start"] && refreshes > 1)
                    st[progs[j]] = (c[progs[j]] * refreshes - median(k SUBSEP "start")) / (refreshes - 1)
            }
            for (j = 1; j <= np; j++) {
                p = progs[j]; k = sc SUBSEP p
                if (!(p in c)) { printf "%-16s %6d %-15s  (did not run)\n", sc, tasks[sc], p; missing++; continue }
                r1 = r2 = r3 = r4 = ""
                if (p ~ /^(iotriage|base)/ || p == "floor-lazy") {
                    r4 = st["iotop-c"] > 0 && (p in st) ? sprintf("%.2f", st[p] / st["iotop-c"]) : "-"
                    r1 = c["iotop-c"] > 0 ? sprintf("%.2f", c[p] / c["iotop-c"]) : "-"
                    r2 = c["floor"] > 0 ? sprintf("%.2f", c[p] / c["floor"]) : "-"
                    r3 = c["floor-k"] > 0 ? sprintf("%.2f", c[p] / c["floor-k"]) : "-"
                }
                printf "%-16s %6d %-15s %8.2f %7.2f %8s %7.1f %6s %6.1f %6s %8s %7s %7s %7s %8s\n", sc, tasks[sc], p,
                    c[p] * 1000, c[p] * 1e6 / tasks[sc], fmt(k SUBSEP "start", 1000, "%.2f"),
                    rss[k] / 1024, (k in mapsunk) ? "-" : sprintf("%.1f", (rss[k] + maps[k]) / 1024), slab[k], fmt(k SUBSEP "cold", 1, "%.1f"), r1, r2, r3,
                    (p in st) ? sprintf("%.2f", st[p] * 1000) : "-", r4
            }
        }
        printf "\nCPU/ref: user + sys of a whole run (wait4) / its %d refreshes, median of the rounds.\n", refreshes
        print "1-ref: CPU of a whole run with one refresh (start-up and two samples), median of the rounds. peakRSS: ru_maxrss."
        print "+maps: peakRSS plus the locked memory of the BPF maps the run created (their highest sum, measure.c)."
        printf "steady: (CPU of the %d-refresh run - 1-ref) / %d: one more refresh once running.\n", refreshes, refreshes - 1
        print "slab+: /proc/meminfo Slab, highest during a run minus just before it, MB; warm: the"
        print "smallest of the rounds; cold: a 1-refresh run right after drop_caches=2."
        if ((getline t < (outdir "/callgrind.tasks")) > 0) {
            cmd = "sed -n \"s/^summary: //p\" " outdir "/callgrind.n1"; cmd | getline ir1; close(cmd)
            cmd = "sed -n \"s/^summary: //p\" " outdir "/callgrind.n4"; cmd | getline ir4; close(cmd)
            if (ir1 > 0 && ir4 > 0)
                printf "callgrind, iotriage -b at %d processes: %.2f M instructions per refresh (%.0f per process); %.2f M for start-up and the first sample\n",
                    t, (ir4 - ir1) / 3 / 1e6, (ir4 - ir1) / 3 / t, (ir1 - (ir4 - ir1) / 3) / 1e6
            else { print "callgrind: no summary"; missing++ }
        }
        exit missing ? 1 : 0
    }' "$out/runs.tsv" | tee "$out/table.txt"
    [ "${PIPESTATUS[0]}" = 0 ] || die "incomplete results: see $out/runs.tsv"
}

if [ "$table_only" = 1 ]; then
    [ -r "$out/runs.tsv" ] || die "no $out/runs.tsv"
    print_table
    exit 0
fi

[ "$(id -u)" = 0 ] || cannot "needs root (taskstats, every process's io file, iotop-c)"
[ -w /proc/sys/kernel/task_delayacct ] || cannot "no writable kernel.task_delayacct"

# --- what the bench runs -----------------------------------------------------------------
if [ "${BENCH_NO_BUILD:-0}" != 1 ]; then
    targets=("$BUILD/bench/spawn" "$BUILD/bench/floor" "$BUILD/bench/measure")
    [ "$cgcost" = 0 ] || targets+=("$BUILD/bench/cgcost")
    [ -n "${IOTRIAGE:-}" ] || targets+=(iotriage)
    make -C "$ROOT" -s --no-print-directory BUILD="$BUILD" "${targets[@]}" >&2 || die "build failed"
fi
for b in "$IOT" "$BIN/spawn" "$BIN/floor" "$BIN/measure"; do
    [ -x "$b" ] || die "$b not built (make bench)"
done
if ! command -v iotop-c >/dev/null 2>&1; then
    echo "bench: installing iotop-c (Debian package) for the comparison" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y -qq --no-install-recommends iotop-c >/dev/null 2>&1 ||
        { apt-get update -qq >/dev/null 2>&1 &&
          apt-get install -y -qq --no-install-recommends iotop-c >/dev/null 2>&1; }
    command -v iotop-c >/dev/null 2>&1 || cannot "iotop-c is not installed and apt-get could not install it"
fi
IOTOPC=$(command -v iotop-c)
if [ "$callgrind" = 1 ] && ! command -v valgrind >/dev/null 2>&1; then
    echo "bench: valgrind not installed: no instruction counts (apt-get install valgrind)" >&2
    callgrind=0
fi

mkdir -p "$out" || die "cannot create $out"
rm -f "$out"/callgrind.* "$out"/*.out
raw="$out/runs.tsv"
printf 'scenario\ttasks\tprogram\trefreshes\tkind\trc\tuser_s\tsys_s\tmaxrss_kb\twall_s\tslab0_kb\tslabmax_kb\tbpfmaps_kb\n' >"$raw"

# --- the machine's state, restored whatever happens ----------------------------------------
da_before=$(cat /proc/sys/kernel/task_delayacct)
SPAWN_PID=""
iofile=$(mktemp /var/tmp/iotriage-bench.XXXXXX)
stop_population() {
    [ -n "$SPAWN_PID" ] || return 0
    kill -TERM -- "-$SPAWN_PID" 2>/dev/null
    wait "$SPAWN_PID" 2>/dev/null
    kill -KILL -- "-$SPAWN_PID" 2>/dev/null
    SPAWN_PID=""
}
cleanup() {
    stop_population
    echo "$da_before" >/proc/sys/kernel/task_delayacct 2>/dev/null
    rm -f "$iofile"
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

# The population: N idle processes of T threads each, 2 readers, 2 writers; SPAWN_PID is
# spawn's pid, which is also its process group.
start_population() { # start_population N T
    local n=$1 t=$2 ready line
    local need=$(( n * t + 100 ))
    local have; have=$(awk '{ split($4, a, "/"); print a[2] }' /proc/loadavg)
    [ $(( need + have )) -lt "$(cat /proc/sys/kernel/pid_max)" ] ||
        die "$n x $t tasks do not fit under kernel.pid_max"
    [ $(( need + have )) -lt "$(cat /proc/sys/kernel/threads-max)" ] ||
        die "$n x $t tasks exceed kernel.threads-max"
    local lim; lim=$(ulimit -u)
    [ "$lim" = unlimited ] || [ $(( need + have )) -lt "$lim" ] ||
        die "$n x $t tasks exceed ulimit -u $lim"
    # An idle process costs the kernel about 200 KB here (page tables, stacks, task).
    [ $(( n * 300 + n * t * 40 )) -lt "$(awk '/^MemAvailable:/ { print $2 }' /proc/meminfo)" ] ||
        die "not enough memory for $n processes"
    ready="$out/spawn.ready"
    : >"$ready"
    "$BIN/spawn" -t "$t" -r 2 -w 2 -f "$iofile" "$n" >"$ready" &
    SPAWN_PID=$!
    for _ in $(seq 1 600); do
        line=$(cat "$ready")
        [ -n "$line" ] && break
        kill -0 "$SPAWN_PID" 2>/dev/null || die "spawn $n x $t failed"
        sleep 0.1
    done
    [ -n "$line" ] || die "spawn $n x $t did not come up within 60 s"
    sleep 1                       # let the fork storm's after-effects settle
}

count_tasks() { # count_tasks procs|threads
    if [ "$1" = threads ]; then
        awk '{ split($4, a, "/"); print a[2] }' /proc/loadavg
    else
        find /proc -maxdepth 1 -name '[1-9]*' 2>/dev/null | wc -l
    fi
}

# The command line of PROGRAM for MODE (procs|threads), R refreshes at interval DELAY.
# iotop-c takes whole seconds only (it reads -d 0.5 as 0: no wait at all), so it gets
# DELAY rounded to the nearest second; its CPU per refresh does not depend on the interval
# (it keeps nothing across refreshes that time would expire). iotop-c shows threads
# unless -P; iotriage shows processes unless -P.
cmdline() { # cmdline PROGRAM MODE R DELAY
    local d_int; d_int=$(awk -v d="$4" 'BEGIN { printf "%d", d + 0.5 }')
    local t=""
    [ "$2" = threads ] && t=-P
    case $1 in
    iotriage)   echo "$IOT -b $t -n $3 -d $4" ;;
    iotriage-nobpf) echo "$IOT -b --no-bpf $t -n $3 -d $4" ;;   # also a program: no BPF lens
    iotriage-noiter) echo "env IOTRIAGE_TASKITER=0 $IOT -b $t -n $3 -d $4" ;;   # the lens, not the task iterator
    iotriage-libbpf) echo "env IOTRIAGE_BPF_LOADER=libbpf $IOT -b $t -n $3 -d $4" ;;
    base|base-nobpf)
                [ -n "${IOTRIAGE_BASE:-}" ] || die "$1 needs IOTRIAGE_BASE=PATH"
                if [ "$1" = base ]; then echo "$IOTRIAGE_BASE -b $t -n $3 -d $4"
                else echo "$IOTRIAGE_BASE -b --no-bpf $t -n $3 -d $4"; fi ;;
    iotop-c)    if [ "$2" = threads ]; then echo "$IOTOPC -b -n $3 -d $d_int"
                else echo "$IOTOPC -b -P -n $3 -d $d_int"; fi ;;
    floor)      echo "$BIN/floor -b $t -n $3 -d $4" ;;
    floor-k)    echo "$BIN/floor -b -k $t -n $3 -d $4" ;;
    floor-lazy) echo "$BIN/floor -b -l -k $t -n $3 -d $4" ;;
    floor+*)    local x=${1#floor+}; echo "$BIN/floor -b $t -x ${x//+/,} -n $3 -d $4" ;;
    *)          die "unknown program $1" ;;
    esac
}

# One run of PROGRAM, recorded in runs.tsv as KIND (warmup, cold, 1-refresh, run). In
# smoke mode the output is kept and checked.
run_one() { # run_one SCENARIO TASKS PROGRAM MODE R DELAY KIND
    local sc=$1 tasks=$2 prog=$3 mode=$4 r=$5 delay=$6 kind=$7 res f dest=/dev/null
    [ "$smoke" = 1 ] && dest="$out/$sc.$prog.$kind.out"
    echo 1 >/proc/sys/kernel/task_delayacct
    # shellcheck disable=SC2046
    res=$("$BIN/measure" -o "$dest" -- $(cmdline "$prog" "$mode" "$r" "$delay")) || die "measure failed"
    # rc= user_s= sys_s= maxrss_kb= wall_s= slab0_kb= slabmax_kb= bpfmaps_kb=
    # shellcheck disable=SC2001
    read -r -a f <<<"$(sed 's/[a-z0-9_]*=//g' <<<"$res")"
    [ "${#f[@]}" = 8 ] || die "measure printed: $res"
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$sc" "$tasks" "$prog" "$r" "$kind" \
        "${f[0]}" "${f[1]}" "${f[2]}" "${f[3]}" "${f[4]}" "${f[5]}" "${f[6]}" "${f[7]}" >>"$raw"
    [ "${f[0]}" = 0 ] || die "$prog ($sc, $kind) exited ${f[0]}"
    if [ "$smoke" = 1 ]; then check_output "$prog" "$dest" "$r"; fi
    return 0
}

# Smoke mode: did the program print R samples that list the spawned tasks?
check_output() { # check_output PROGRAM FILE R
    local n
    case $1 in
    iotriage*|base*) n=$(grep -c '^iotriage - ' "$2")
              grep -q 'spawn' "$2" || die "iotriage did not list the spawned processes ($2)" ;;
    iotop-c)  n=$(grep -c 'Total DISK READ' "$2")
              grep -q 'spawn' "$2" || die "iotop-c did not list the spawned processes ($2)" ;;
    floor*)   n=$(grep -c '^refresh ' "$2")
              awk '/^refresh / && ($4 < 10 || $6 < $4 / 2) { bad = 1 } END { exit bad }' "$2" ||
                  die "$1 saw too few tasks or delays ($2)" ;;
    esac
    [ "$n" = "$3" ] || die "$1 printed $n samples, expected $3 ($2)"
}

# --- the populations ------------------------------------------------------------------------
scenarios=()
for n in $sizes; do scenarios+=("procs:$n:1"); done
[ -n "$threads_shape" ] && scenarios+=("threads:${threads_shape%x*}:${threads_shape#*x}")
quick=0.05                        # the interval of the warm-up and 1-refresh runs

echo "bench: ${#scenarios[@]} populations; programs: $programs; $R refreshes at ${D}s," \
     "$reps alternating rounds; raw figures: $raw" >&2
for s in "${scenarios[@]}"; do
    IFS=: read -r mode n t <<<"$s"
    if [ "$mode" = threads ]; then sc="threads-${n}x$t"; else sc="procs-$n"; fi
    echo "bench: $sc: $n processes x $t threads, 2 readers, 2 writers" >&2
    start_population "$n" "$t"
    tasks=$(count_tasks "$mode")
    if [ "$cold" = 1 ]; then
        # Cold: the dentry and inode caches dropped (reclaimable slab only; nothing on
        # disk changes), so the run pays for and keeps every /proc entry it touches.
        for p in $programs; do
            sync; echo 2 >/proc/sys/vm/drop_caches
            run_one "$sc" "$tasks" "$p" "$mode" 1 "$quick" cold
        done
    elif [ "$smoke" = 0 ]; then
        for p in $programs; do run_one "$sc" "$tasks" "$p" "$mode" 1 "$quick" warmup; done
    fi
    # A 1-refresh run of each program in every round, as the R-refresh ones: the steady
    # figure is their difference, and one run alone is noisy enough to turn it negative.
    for _ in $(seq 1 "$reps"); do
        for p in $programs; do run_one "$sc" "$tasks" "$p" "$mode" "$R" "$D" run; done
        for p in $programs; do run_one "$sc" "$tasks" "$p" "$mode" 1 "$quick" 1-refresh; done
    done
    if [ "$callgrind" = 1 ] && [ "$mode" = procs ] && [ "$n" = 1000 ]; then
        # Two runs, 1 and 4 refreshes, short enough (under callgrind too) that no process
        # comes due for its fd rescan: the difference over 3 is one refresh.
        echo "bench: $sc: callgrind" >&2
        for k in 1 4; do
            echo 1 >/proc/sys/kernel/task_delayacct
            valgrind --tool=callgrind --callgrind-out-file="$out/callgrind.n$k" \
                "$IOT" -b -n "$k" -d 0.05 >/dev/null 2>"$out/callgrind.n$k.log" ||
                die "callgrind run failed ($out/callgrind.n$k.log)"
        done
        echo "$tasks" >"$out/callgrind.tasks"
    fi
    stop_population
    sleep 1
done

print_table

# The cgroup lens alone, at 10,000 idle processes in 500 cgroups of the v2 hierarchy
# (docs/performance.md, "The cgroup lens"): its own process, after the populations.
if [ "$cgcost" = 1 ]; then
    if [ -x "$BIN/cgcost" ]; then
        echo "bench: cgroup lens: cgcost -c 500 -n 10000 -r 30" >&2
        "$BIN/cgcost" -c 500 -n 10000 -r 30 | tee "$out/cgcost.txt" ||
            echo "bench: cgcost failed or cannot run here (see above)" >&2
    else
        echo "bench: $BIN/cgcost not built: no cgroup lens figure" >&2
    fi
fi
