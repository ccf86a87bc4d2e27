#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Latency per I/O priority, measured by the BPF lens (issue #14), on the lab disk (2 ms a
# request, 4 at once), under each scheduler the device offers (bfq only where the kernel
# has it; the VM lane's does):
#  - an idle-class reader with 16 requests in flight beside a synchronous best-effort
#    one (a backup beside a database);
#  - a be/0 and a be/7 reader with 8 requests in flight each.
# From `iotriage --json`'s latency_by_prio and warnings, ratios only (no time in ms is
# asserted):
#  - none, kyber: idle and best-effort wait alike, be/0 and be/7 too (p50s within
#    LAT_ALIKE = 1.5 of each other; the lab gave them within 2 %), and the ignored
#    verdicts are `measured`, not contradicted;
#  - mq-deadline: idle waits at least LAT_DIFFER = 3 times longer than best-effort (the
#    lab: 9 to 23 times), be/0 and be/7 alike, ioprio-level-ignored `measured`;
#  - the screen's banner leads a measured verdict with its figures ("measured: idle p50
#    X ms vs be/4 Y ms"), in tmux;
#  - bfq (low_latency off: no weight raising): be/7 waits longer than be/0, by at least
#    1.25 (far outside the 1 % the alike pairs show; the lab gave 1.6 to 12 times, bfq's
#    budgets on a loaded 2-core machine vary): be/0 is served ahead, and no verdict about
#    them contradicts the table. Idle beside best-effort is only reported (see below).
# The factors are the verdicts' own (include/verdict.h, docs/verdicts.md "Evidence").
. "$(dirname "$0")/lib.sh"
. "$ROOT/tests/lab/lab.sh"
SOCK=iotriage-latprio-$$
. "$(dirname "$0")/lib_tmux.sh"
need fio
need tmux
need ionice
need jq
[ "$(id -u)" = 0 ] || skip "needs root (BPF)"
[ -r /sys/kernel/btf/vmlinux ] || skip "no kernel BTF at /sys/kernel/btf/vmlinux"
lab_up 2000 4 64 || exit $?
trap 'it_kill_bg; lab_down; it_cleanup' EXIT
Q=/sys/block/$LAB_NAME/queue

# reader CLASS LEVEL DEPTH ENGINE: a 4 KiB random O_DIRECT reader of the lab disk
reader() {
    ionice -c"$1" ${2:+-n"$2"} fio --name=r --filename="$LAB_DEV" --ioengine="$4" --iodepth="$3" \
        --direct=1 --bs=4k --rw=randread --time_based --runtime=60 >/dev/null &
    BG_PIDS+=($!)
}

# measure SCHED PHASE: start the phase's readers, let them run, two 2 s samples (one of
# 8 s for mq-deadline's idle phase); the last one (a whole interval of steady load) is
# $TMP/SCHED-PHASE.json.
measure() {
    if [ "$2" = A ]; then
        reader 2 4 1 psync
        reader 3 "" 16 libaio
    else
        reader 2 0 8 libaio
        reader 2 7 8 libaio
    fi
    # 2 s of both together before the sample judged, counted from when both read (fio's
    # start on a loaded machine can take longer than that by itself): the first of two
    # 2 s samples, or a sleep before the one sample
    lab_wait_users 2 || fail "$1 $2: the two readers did not both start"
    # mq-deadline serves idle only when best-effort leaves a gap, or after its aging limit
    # (prio_aging_expire, 10 s): a 2 s window can hold too few idle completions to measure
    # (16 seen on a loaded machine). One 8 s interval there.
    if [ "$1" = mq-deadline ] && [ "$2" = A ]; then
        sleep 2
        "$IOT" --json -n 1 -d 8 -o >"$TMP/all.json" || fail "$1 $2: iotriage failed"
    else
        "$IOT" --json -n 2 -d 2 -o >"$TMP/all.json" || fail "$1 $2: iotriage failed"
    fi
    it_kill_bg
    tail -n 1 "$TMP/all.json" >"$TMP/$1-$2.json"
    [ "$(jq -r .lens.on "$TMP/$1-$2.json")" = true ] ||
        skip "the BPF lens is off: $(jq -r .lens.reason "$TMP/$1-$2.json")"
}

q() { jq -r --arg d "$LAB_NAME" "$2" "$TMP/$1.json"; }
# p50 of priority $2 in sample $1, failing when it was not measured
p50() {
    local v
    v=$(q "$1" ".devices[] | select(.name == \$d) | .latency_by_prio[\"$2\"] | select(. != null and .count >= 20) | .p50_ms")
    [ -n "$v" ] && [ "$v" != null ] || fail "$1: $2 not measured: $(q "$1" '.devices[] | select(.name == $d) | .latency_by_prio | map_values(.count)' | tr -d ' \n')"
    echo "$v"
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
alike() { between "$(ratio "$1" "$2")" 0.667 1.5; }
# the process warnings with code $2 about priority $3 on the lab disk: "evidence contradicts"
verdict() {
    q "$1" "[.warnings[] | select(.device == \$d and .code == \"$2\" and .measured.prio == \"$3\")] | first | if . == null then \"none\" else \"\(.evidence) \(.contradicts_rules)\" end"
}
no_contradiction() {
    local n
    n=$(q "$1" '[.warnings[] | select(.device == $d and .contradicts_rules)] | length')
    [ "$n" = 0 ] || fail "$1: $n verdicts contradict the table: $(q "$1" '[.warnings[] | select(.device == $d and .contradicts_rules) | .text]')"
}

for s in none mq-deadline bfq kyber; do
    if ! sched_offered "$LAB_NAME" "$s"; then
        if [ "$s" = bfq ]; then skip_part "bfq's level weights (be/0 served ahead of be/7): $NO_BFQ"
        else skip_part "$s: not offered by this kernel ($(cat "$Q/scheduler"))"; fi
        continue
    fi
    echo "$s" >"$Q/scheduler" || fail "cannot select $s"
    grep -q "\[$s\]" "$Q/scheduler" || fail "$s not active: $(cat "$Q/scheduler")"
    # bfq raises the weight of a queue it takes for interactive (a reader just started)
    # for seconds, whatever its priority: seen here as be/0 and be/7 alike in one run of
    # three. The weights from the levels are what is measured: off on this lab disk.
    [ "$s" = bfq ] && { echo 0 >"$Q/iosched/low_latency" || fail "cannot turn bfq's low_latency off"; }
    measure "$s" A
    measure "$s" B
    idle=$(p50 "$s-A" idle) be=$(p50 "$s-A" be/4) be0=$(p50 "$s-B" be/0) be7=$(p50 "$s-B" be/7)
    fig="idle/be $(ratio "$idle" "$be"), be7/be0 $(ratio "$be7" "$be0")"
    case $s in
    none|kyber)
        alike "$idle" "$be" || fail "$s: idle p50 $idle ms vs be/4 $be ms: not alike"
        alike "$be0" "$be7" || fail "$s: be/0 p50 $be0 ms vs be/7 $be7 ms: not alike"
        v=$(verdict "$s-A" ioprio-ignored idle)
        [ "$v" = "measured false" ] || fail "$s: the idle reader's ioprio-ignored: $v (want measured, not contradicted)"
        v=$(verdict "$s-B" ioprio-ignored be/0)
        [ "$v" = "measured false" ] || fail "$s: the be/0 reader's ioprio-ignored: $v (want measured, not contradicted)"
        ;;
    mq-deadline)
        between "$(ratio "$idle" "$be")" 3 1e9 || fail "$s: idle p50 $idle ms vs be/4 $be ms: idle not held back"
        alike "$be0" "$be7" || fail "$s: be/0 p50 $be0 ms vs be/7 $be7 ms: the level read?"
        v=$(verdict "$s-B" ioprio-level-ignored be/7)
        [ "$v" = "measured false" ] || fail "$s: the be/7 reader's ioprio-level-ignored: $v (want measured, not contradicted)"
        [ "$(verdict "$s-A" ioprio-ignored idle)" = none ] || fail "$s: idle called ignored"
        ;;
    bfq)
        between "$(ratio "$be7" "$be0")" 1.25 1e9 || fail "$s: be/0 p50 $be0 ms vs be/7 $be7 ms: be/0 not served ahead"
        [ "$(verdict "$s-B" ioprio-level-ignored be/7)" = none ] || fail "$s: be/7 called level-ignored"
        ;;
    esac
    if [ "$s" = bfq ]; then
        # Not asserted: bfq serves the idle reader in the best-effort reader's think time
        # on this non-rotational device (no idling), so the two may wait alike and the
        # measurement overrule the table (seen: idle/be 1.2, `ioprio-ignored`,
        # contradicts_rules). Said, for the record.
        echo "note: bfq, idle beside a synchronous best-effort reader: idle/be $(ratio "$idle" "$be"), the idle reader's verdict: $(q "$s-A" '[.warnings[] | select(.device == $d and .measured.prio == "idle") | "\(.code) \(.evidence) contradicts=\(.contradicts_rules)"] | join(", ")')"
    else
        no_contradiction "$s-A"
    fi
    no_contradiction "$s-B"
    ok "$s: $fig (p50 ratios), verdicts$([ "$s" = bfq ] && echo " on be/0 and be/7") as the table says, measured"
done

# ---- the screen: a measured verdict says so first in the banner ----
echo none >"$Q/scheduler" || fail "cannot select none"
reader 2 4 1 psync
reader 3 "" 16 libaio
T new-session -d -s ui -x 200 -y 40 "$IOT -d 1; echo EXITED \$?; sleep 60"
wait_for "ioprio-ignored: measured: idle p50 [0-9.]+ ms vs be/4 [0-9.]+ ms: fio\[[0-9]+\] idle/[0-7] \(set\) is ignored" 20
ok "banner: $(screen | grep -m1 -o 'ioprio-ignored: measured: [^:]*')"
T send-keys -t ui q
wait_for '^EXITED 0' 10
it_kill_bg
