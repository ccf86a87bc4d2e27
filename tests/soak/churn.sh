#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/soak/churn.sh SECONDS: process and thread churn under the sanitized iotriage.
#   make soak                             SECONDS=600 (SOAK_SECONDS)
#   tests/integration/test_soak_smoke.sh  SECONDS=20, in `make check`
# build/san/tests/churn forks 400 short-lived processes a second (every 10th living up to
# 4 s, every 4th writing 64 KiB to a file it unlinks, at a random moment of its life) and
# runs a process that creates and joins threads without pause, so pids come round every
# second or two (pid_max is not touched). Meanwhile two sanitized iotriage sample every
# 0.1 s: `--json -d 0.1` (processes) and `--json -P -d 0.1` (threads, where the pids of
# exited kids come back as thread ids). Each one's output is checked line by line by
# tests/soak/churn.jq. Fails (exit 1) when, for either:
#   - the sanitized binary reports anything (ASan, UBSan, LSan at exit) or does not exit 0
#     on SIGTERM;
#   - a line is not one JSON object, or fewer than one sample per 4 s came out (a loaded
#     machine with thousands of tasks slows a sanitized sample to seconds);
#   - a rate is negative; a churn process, or a task met under a reused pid, has a rate
#     above 1 GB/s; a churn kid moved more bytes in one interval than twice what it writes
#     in its life (64 KiB of data, plus the directory and inode blocks charged to it); a
#     task under a reused pid (another start time than in the previous sample) has rates:
#     a new task starts without;
#   - no churn kid was ever seen with a rate (the test would have seen nothing);
#   - VmRSS grew after warm-up by more than SOAK_RSS_SLACK_KB (default 3072) plus 10 %:
#     state of dead tasks must be freed. Compared: the highest once-a-second reading in
#     the 3 s that end the warm-up (the first fifth of the run, at least 5 s) with the
#     lowest reading in the last quarter (at least 5 s) taken while the machine held no
#     more than 25 % (+50) more tasks than during the warm-up: what a sample holds grows
#     with the tasks on the machine, and someone else's workload must not decide. Without
#     such a reading, RSS is not judged and a note says so. ASan's quarantine is cut to
#     4 MB and it returns freed memory to the system every 0.5 s (ASAN_OPTIONS
#     quarantine_size_mb, allocator_release_to_os_interval_ms), so that RSS follows what
#     is held rather than the most ever held. The quarantine (freed memory kept poisoned
#     to catch a use after free) is RSS until it is full, and it fills at the rate the
#     sampler frees: 16 MB took longer than the warm-up once a refresh freed less (no DIR
#     buffer per fd scan, no mountinfo text per refresh) and read as 12 MB of growth; 4
#     MB fills within the warm-up and still holds the last second or so of frees.
# Exit 77 (skip) when jq is missing. SOAK_KEEP=1 keeps the scratch directory (raw output
# of runs up to 120 s). Figures go to stdout and build/soak/summary.txt.
set -u
. "$(dirname "$0")/san.sh"
secs=${1:?usage: tests/soak/churn.sh SECONDS}
ROOT=$SAN_ROOT
command -v jq >/dev/null || { echo "skipped: jq not installed" >&2; exit 77; }
TMP=$(mktemp -d /tmp/iotriage-soak.XXXXXX)
MONS=(proc thr)
declare -A IOT=() READER=() ARGS=([proc]="--json -d 0.1" [thr]="--json -P -d 0.1")
churn=
cleanup() {
    local m
    [ -n "$churn" ] && kill -TERM -- "-$churn" 2>/dev/null
    for m in "${!IOT[@]}"; do kill -TERM "${IOT[$m]}" 2>/dev/null; done
    wait 2>/dev/null
    if [ "${SOAK_KEEP:-0}" = 1 ]; then echo "kept: $TMP" >&2; else rm -rf "$TMP"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP
die() { echo "FAIL: $*" >&2; exit 1; }

if [ "${SOAK_NO_BUILD:-0}" != 1 ]; then
    san_build || die "sanitizer build failed"
fi
[ -x "$SAN_IOT" ] && [ -x "$SAN_CHURN" ] || die "build/san not built (make san)"
export ASAN_OPTIONS=$ASAN_OPTIONS:quarantine_size_mb=4:allocator_release_to_os_interval_ms=500
kidmax=65536
warm=$((secs / 5))
[ "$warm" -lt 5 ] && warm=5
tail_s=$((secs / 4))
[ "$tail_s" -lt 5 ] && tail_s=5
slack_kb=${SOAK_RSS_SLACK_KB:-3072}
mkdir "$TMP/w"

# iotriage -> fifo -> (a copy of the raw output for short runs) -> churn.jq -> summaries.
for m in "${MONS[@]}"; do
    mkfifo "$TMP/$m.fifo"
    if [ "$secs" -le 120 ]; then keep=(tee "$TMP/$m.raw"); else keep=(cat); fi
    "${keep[@]}" <"$TMP/$m.fifo" |
        jq -R -n -c --unbuffered --argjson kidmax "$kidmax" -f "$ROOT/tests/soak/churn.jq" \
            >"$TMP/$m.summary" 2>"$TMP/$m.jq.err" &
    READER[$m]=$!
    # shellcheck disable=SC2086
    "$SAN_IOT" ${ARGS[$m]} >"$TMP/$m.fifo" 2>"$TMP/$m.err" &
    IOT[$m]=$!
    : >"$TMP/$m.rss"
done
sleep 1
"$SAN_CHURN" -s "$secs" -d "$TMP/w" >"$TMP/churn.txt" 2>&1 &
churn=$!

# Once a second: wall-clock second, VmRSS, VmHWM (kB) of each sampler.
rss_of() { awk -v k="$2:" '$1 == k { print $2 }' "/proc/$1/status" 2>/dev/null; }
t0=$(date +%s)
while kill -0 "$churn" 2>/dev/null; do
    sleep 1
    now=$(date +%s)
    for m in "${MONS[@]}"; do
        r=$(rss_of "${IOT[$m]}" VmRSS)
        [ -n "$r" ] || die "iotriage ($m) died during the churn: $(tail -n 20 "$TMP/$m.err")"
        printf '%s\t%s\t%s\n' "$now" "$r" "$(rss_of "${IOT[$m]}" VmHWM)" >>"$TMP/$m.rss"
    done
done
wait "$churn"
crc=$?
churn=
t1=$(date +%s)
[ "$crc" = 0 ] || die "churn failed: $(cat "$TMP/churn.txt")"
echo "churn: $(cat "$TMP/churn.txt")"
sleep 0.5

mkdir -p "$ROOT/build/soak"
report=$ROOT/build/soak/summary.txt
{
    echo "# $(date -u +%Y-%m-%dT%H:%M:%SZ) tests/soak/churn.sh $secs"
    echo "churn: $(cat "$TMP/churn.txt")"
} >"$report"
failed=0
for m in "${MONS[@]}"; do
    hwm=$(rss_of "${IOT[$m]}" VmHWM)
    kill -TERM "${IOT[$m]}"
    wait "${IOT[$m]}"
    irc=$?
    unset "IOT[$m]"
    wait "${READER[$m]}"
    jrc=$?
    name="iotriage ${ARGS[$m]}"
    bad() { echo "FAIL ($name): $*" >&2; failed=1; }

    # The sanitizer first: a report explains everything after it.
    if san_report "$TMP/$m.err"; then
        san_excerpt "$TMP/$m.err" >&2
        bad "sanitizer report"
        continue
    fi
    [ "$irc" = 0 ] || { bad "exit $irc on SIGTERM: $(tail -n 5 "$TMP/$m.err")"; continue; }
    [ "$jrc" = 0 ] || { bad "output is not one JSON object per line: $(head -c 300 "$TMP/$m.jq.err")"; continue; }

    agg=$(jq -s -c '{
        n: length,
        reused: (map(.reused) | add), reused_with_rate: (map(.reused_with_rate) | add),
        max_bps: (map(.max_bps) | max), min_bps: (map(.min_bps) | min),
        max_proc: (max_by(.max_bps) | .max_proc),
        kid_max_bytes: (map(.kid_max_bytes) | max), kid_over: (map(.kid_over[]) | .[:3]),
        kids_rated: (map(.kids_rated) | add), kids_writing: (map(.kids_writing) | add),
        max_nproc: (map(.nproc) | max), dev_neg: (map(.dev_neg) | add),
        max_interval: (map(.interval_s) | max)}' "$TMP/$m.summary") || { bad "summaries unreadable"; continue; }
    get() { jq -r -c ".$1" <<<"$agg"; }
    # RSS: each reading with the most tasks sampled within 3 s of it; warm-up against the
    # last quarter's readings at a comparable task count.
    read -r rwarm twarm rend nend < <(jq -n -r --slurpfile s "$TMP/$m.summary" \
        --rawfile r "$TMP/$m.rss" --argjson lo $((t0 + warm - 2)) --argjson hi $((t0 + warm)) \
        --argjson from $((t1 - tail_s)) '
        [ $r | split("\n")[] | select(length > 0) | split("\t") | map(tonumber)
          | . as [$t, $rss] | {t: $t, rss: $rss,
              tasks: ([ $s[] | select(.t >= $t - 3 and .t <= $t + 3) | .nproc ] | max // 0)} ] as $rs
        | [ $rs[] | select(.t >= $lo and .t <= $hi) ] as $w
        | ($w | map(.tasks) | max // 0) as $tw
        | [ $rs[] | select(.t >= $from and .tasks <= $tw * 1.25 + 50) ] as $e
        | "\($w | map(.rss) | max // "-") \($tw) \($e | map(.rss) | min // "-") \($e | length)"')
    n=$(get n)
    {
        echo "== $name"
        echo "samples: $n (longest interval $(get max_interval) s, up to $(get max_nproc) tasks)"
        echo "pid reuses between consecutive samples: $(get reused), with rates: $(get reused_with_rate)"
        echo "largest churn rate: $(get max_bps) B/s ($(get max_proc)); most bytes by one kid in one interval: $(get kid_max_bytes) (it writes $kidmax)"
        echo "kid samples with rates: $(get kids_rated), writing: $(get kids_writing)"
        echo "RSS kB: after warm-up (${warm} s, $twarm tasks) $rwarm, in the last ${tail_s} s at a comparable task count $rend ($nend readings), peak (VmHWM) $hwm"
    } | tee -a "$report"

    [ "$n" -ge $((secs / 4)) ] || bad "only $n samples in $secs s"
    [ "$(get reused_with_rate)" = 0 ] || bad "a task under a reused pid has rates"
    awk -v v="$(get max_bps)" 'BEGIN { exit !(v <= 1e9) }' || bad "rate above 1 GB/s: $(get max_proc)"
    awk -v v="$(get min_bps)" 'BEGIN { exit !(v >= 0) }' || bad "negative rate: $(get min_bps)"
    [ "$(get kid_over)" = "[]" ] || bad "a kid moved more in one interval than twice what it writes: $(get kid_over)"
    [ "$(get dev_neg)" = 0 ] || bad "negative device figures"
    [ "$(get kids_rated)" -gt 0 ] || bad "no churn kid was ever seen with rates: the test saw nothing"
    if [ "$rwarm" = - ]; then
        bad "no RSS reading during the warm-up"
    elif [ "$nend" = 0 ]; then
        echo "note: RSS not judged: no reading in the last $tail_s s with at most 25 % more tasks than the $twarm of the warm-up" |
            tee -a "$report"
    else
        limit=$(awk -v w="$rwarm" -v s="$slack_kb" 'BEGIN { printf "%d", w * 1.10 + s }')
        if [ "$rend" -gt "$limit" ]; then
            cat "$TMP/$m.rss" >&2
            bad "RSS grew from $rwarm kB after warm-up to $rend kB (limit $limit kB)"
        fi
    fi
    printf 'rss %s (epoch second, VmRSS kB, VmHWM kB)\n' "$m" >>"$report"
    cat "$TMP/$m.rss" >>"$report"
done
[ "$failed" = 0 ] || exit 1
echo "ok: $secs s of churn: no report, valid JSON, no bogus rate, RSS flat"
