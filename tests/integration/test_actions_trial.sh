#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# A scheduler trial from the screen (t; issue #39), on the lab disk only (never vda),
# starting under none with nr_requests set by hand:
#  - t opens the menu of the schedulers offered; the plan names the phases, the rule, and
#    the idle-class fio whose verdict changes under mq-deadline; - shortens the phases;
#  - y starts it: the live view shows the phase and a countdown; Esc mid-trial (after the
#    switch) puts none and nr_requests back and the report says it was interrupted;
#  - a 3 s trial runs to its end and the report gives the decision and the state after;
#    both trials are in the recorder's trials.jsonl, and in the exporter's page;
#  - kill -9 of the screen mid-trial: the trial (SIGHUP from PR_SET_PDEATHSIG) puts the
#    disk back;
#  - iotriage --read-only: t says why it cannot.
# No time is asserted: phases and states only.
. "$(dirname "$0")/lib.sh"
. "$ROOT/tests/lab/lab.sh"
need fio
need ionice
need jq
need promtool
[ "$(id -u)" = 0 ] || skip "needs root (a scheduler switch)"
SOCK=iotriage-trial-$$
. "$(dirname "$0")/lib_tmux.sh"
lab_up 2000 4 64 || exit $?
trap 'it_kill_bg; lab_down; it_cleanup' EXIT

Q=/sys/block/$LAB_NAME/queue
vda_before=$(cat /sys/block/vda/queue/scheduler /sys/block/vda/queue/nr_requests 2>/dev/null)
sched_now() { sed -n 's/.*\[\(.*\)\].*/\1/p' "$Q/scheduler"; }
depth=$(cat "/sys/block/$LAB_NAME/mq/0/nr_tags")
NR=$((depth / 2))
reset_none() { { echo none >"$Q/scheduler" && echo "$NR" >"$Q/nr_requests"; } || fail "cannot set none/$NR"; }
is_back() { [ "$(sched_now)/$(cat "$Q/nr_requests")" = "none/$NR" ]; }
state() { echo "$(cat "$Q/scheduler"), nr_requests $(cat "$Q/nr_requests") (want [none], $NR)"; }
TO=mq-deadline
sched_offered "$LAB_NAME" "$TO" || fail "$LAB_NAME does not offer $TO: $(cat "$Q/scheduler")"
idx_of() { tr -d '[]' <"$Q/scheduler" | tr ' ' '\n' | grep -n -x "$1" | cut -d: -f1 | awk '{print $1 - 1}'; }
reset_none
# the recorder's directory, where each trial's report is appended (docs/recording.md)
REC=$TMP/rec
mkdir -m 0750 "$REC"

bg ionice -c3 fio --name=idle --filename="$LAB_DEV" --direct=1 --rw=randread --bs=4k --ioengine=psync \
    --runtime=300 --time_based --output=/dev/null
bg ionice -c2 -n4 fio --name=be --filename="$LAB_DEV" --direct=1 --rw=randread --bs=4k --ioengine=psync \
    --runtime=300 --time_based --output=/dev/null

start_ui() {  # start_ui [OPTIONS]: the screen on the lab disk
    local cmd="IOTRIAGE_RECORD_DIR=$REC $IOT -d 0.5 $*; echo EXITED \$?; sleep 60"
    if T has-session -t ui 2>/dev/null; then
        T respawn-pane -k -t ui "$cmd"
    else
        T new-session -d -s ui -x 140 -y 45 "$cmd"
    fi
    wait_for '^DEVICE +SCHED'
    T send-keys -t ui Tab / "$LAB_NAME" Enter
    wait_for "^$LAB_NAME +none "
}
# open_plan: t, the menu, the trial of $TO's plan
open_plan() {
    T send-keys -t ui t
    wait_for "^Trial of a scheduler on $LAB_NAME"
    local k
    T send-keys -t ui Home
    for ((k = 0; k < $(idx_of "$TO"); k++)); do T send-keys -t ui Down; done
    T send-keys -t ui Enter
    wait_for "^Trial: $LAB_NAME from none to $TO"
}

# 1. The menu and the plan; Esc writes nothing.
start_ui
wait_for "ioprio-ignored: .*fio\[[0-9]+\] idle/[0-7] \(set\) is ignored: $LAB_NAME uses none" 20
open_plan
wait_for "1\. 10 s measured under none +2\. switch to $TO"
wait_for "keep $TO if the rule holds, else put none \(nr_requests $NR\) back"
wait_for 'be\.p50 < noise'
wait_for "^ +[0-9]+ +fio +idle/[0-7]: ignored -> honoured"
T send-keys -t ui - -
wait_for "1\. 8 s measured under none"
T send-keys -t ui + +
wait_for "1\. 10 s measured under none"
T send-keys -t ui Escape
wait_for "nothing changed: $LAB_NAME still uses none"
is_back || fail "Esc on the plan changed the disk: $(state)"
ok "t: the menu, the plan (phases, rule, the idle fio ignored -> honoured), +/- seconds; Esc writes nothing"

# 2. y, the live view, Esc after the switch: none and nr_requests back at once.
open_plan
T send-keys -t ui y
wait_for "^Trial of $TO on $LAB_NAME"
wait_for "phase: before, measuring under none: [0-9]+ s left of 10"
wait_for "about [0-9]+ s to the decision"
wait_for "phase: (settle|after)" 40
[ "$(sched_now)" = "$TO" ] || fail "the trial's phase after the switch, yet the disk shows $(cat "$Q/scheduler")"
T send-keys -t ui Escape
wait_for "Trial of $TO on $LAB_NAME: not completed" 30
wait_for "interrupted by Interrupt"
is_back || fail "Esc mid-trial left $(state)"
T send-keys -t ui x
ok "y: live phase and countdown; Esc mid-trial: none and nr_requests $NR back, 'interrupted'"

# 3. A 3 s trial to its end: the decision and the state after.
open_plan
for k in 1 2 3 4 5 6 7; do T send-keys -t ui -; done
wait_for "1\. 3 s measured under none"
T send-keys -t ui y
wait_for "phase: before, measuring under none: [0-9]+ s left of 3"
wait_for "Trial of $TO on $LAB_NAME: (kept|put back)" 60
wait_for "decision: (keep|revert) \($LAB_NAME now (none|$TO), nr_requests [0-9]+\)"
wait_for "^why:"
if screen | grep -q "decision: keep"; then
    [ "$(sched_now)" = "$TO" ] || fail "kept, yet $(state)"
else
    is_back || fail "put back, yet $(state)"
fi
decision=$(screen | grep -Eo 'decision: [a-z]+' | head -1)
T send-keys -t ui x
ok "a 3 s trial runs to its $decision, the disk as it says"

# 3b. Both trials are in the recorder's directory, one JSON report a line: the one Esc
#     stopped, then the 3 s one, with the decision the screen showed.
F=$REC/trials.jsonl
[ -f "$F" ] || fail "no $F after two trials"
[ "$(wc -l <"$F")" = 2 ] || { cat "$F"; fail "$F holds $(wc -l <"$F") lines, not 2"; }
jq -e . "$F" >/dev/null || fail "$F: not JSON lines"
[ "$(sed -n 1p "$F" | jq -r '.reason | test("interrupted by Interrupt")')" = true ] ||
    fail "first record: $(sed -n 1p "$F" | jq -c '{decision, reason}')"
[ "$(sed -n 2p "$F" | jq -r '"decision: " + .decision + " " + .device + " " + (.seconds|tostring)')" = \
  "$decision $LAB_NAME 3" ] || fail "second record: $(sed -n 2p "$F" | jq -c '{decision, device, seconds}')"
[ "$(stat -c %a "$F")" = 640 ] || fail "$F mode $(stat -c %a "$F"), not 640"
ok "both trials recorded in $F (the interrupted one, then the $decision), mode 0640"

# 3c. The exporter reads them (iotriage_trial_*): the counts by decision, the last
#     trial's facts and figures as the report has them; the page passes promtool.
mkdir "$TMP/prom"
t0=$(date +%s)
IOTRIAGE_RECORD_DIR=$REC "$IOT" export --textfile "$TMP/prom/iotriage.prom" -n 1 2>"$TMP/export.err" ||
    fail "export: $(cat "$TMP/export.err")"
P=$TMP/prom/iotriage.prom
promtool check metrics <"$P" >"$TMP/promtool.log" 2>&1 || fail "promtool check metrics: $(cat "$TMP/promtool.log")"
want_total() {  # want_total DECISION N
    grep -qx "iotriage_trials_total{device=\"$LAB_NAME\",scheduler=\"$TO\",decision=\"$1\"} $2" "$P" ||
        fail "no $2 $1 trials in the page: $(grep '^iotriage_trials_total' "$P")"
}
d2=${decision#decision: }
if [ "$d2" = revert ]; then want_total revert 2; else want_total revert 1; want_total keep 1; fi
L2=$(sed -n 2p "$F")
info="iotriage_trial_last_info{device=\"$LAB_NAME\",scheduler_before=\"none\",scheduler=\"$TO\",decision=\"$d2\",source=\"$(jq -r .source <<<"$L2")\",restored=\"$(jq -r .restored <<<"$L2")\"} 1"
grep -qxF "$info" "$P" || fail "want $info; page: $(grep '^iotriage_trial_last_info' "$P")"
end=$(sed -n "s/^iotriage_trial_last_end_time_seconds{device=\"$LAB_NAME\"} //p" "$P")
awk -v e="$end" -v a="$(jq .end_time <<<"$L2")" -v t="$t0" 'BEGIN { exit !(e == a && e > t - 600 && e <= t + 1) }' ||
    fail "end time $end (report $(jq .end_time <<<"$L2"), now $t0)"
for ph in before after; do
    got=$(sed -n "s/^iotriage_trial_last_throughput_bytes_per_second{device=\"$LAB_NAME\",phase=\"$ph\"} //p" "$P")
    awk -v g="$got" -v w="$(jq ".$ph.throughput_bps" <<<"$L2")" 'BEGIN { exit !(g == w && g > 0) }' ||
        fail "$ph throughput: page $got, report $(jq ".$ph.throughput_bps" <<<"$L2")"
done
if [ "$(jq -r .source <<<"$L2")" = lens ]; then
    got=$(sed -n "s/^iotriage_trial_last_p99_seconds{device=\"$LAB_NAME\",phase=\"after\",prio=\"idle\"} //p" "$P")
    awk -v g="$got" -v w="$(jq '.after.latency_by_prio.idle.p99_ms' <<<"$L2")" 'BEGIN { exit !(g * 1000 - w < 1e-6 && w - g * 1000 < 1e-6 && g > 0) }' ||
        fail "idle p99 after: page $got s, report $(jq '.after.latency_by_prio.idle.p99_ms' <<<"$L2") ms"
fi
ok "the exporter's iotriage_trial_*: $(grep -c '^iotriage_trial' "$P") series from $F, as the reports say; promtool passes"

# 4. kill -9 of the screen mid-trial: the trial puts the disk back.
# A 20 s trial: killed once it has switched (settling or after), it would go on for
# longer than the wait below if nothing stopped it (its own end would put none back too).
reset_none
start_ui
open_plan
T send-keys -t ui + + + + + + + + + +
wait_for "1\. 20 s measured under none"
T send-keys -t ui y
wait_for "phase: (settle|after)" 60
ui_pid=$(pgrep -f "^$IOT -d 0.5" | head -1)
[ -n "$ui_pid" ] || fail "no screen process"
kill -9 "$ui_pid"
wait_until 15 is_back || fail "the screen killed mid-trial left $(state)"
ok "kill -9 of the screen mid-trial: none and nr_requests $NR back"

# 5. --read-only: t says why.
reset_none
start_ui --read-only
T send-keys -t ui t
wait_for "read-only: started with --read-only"
is_back || fail "read-only changed $(state)"
ok "--read-only: t refused, saying why"

[ "$vda_before" = "$(cat /sys/block/vda/queue/scheduler /sys/block/vda/queue/nr_requests 2>/dev/null)" ] ||
    fail "vda changed"
ok "vda untouched"
