#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Without the lens (issue #13, --no-bpf), on the lab disk (2 ms per request, 4 at once),
# the load started before iotriage and delay accounting off (this test never changes it;
# when someone else has it on, the readers' delays may come from taskstats and the
# sampled-source checks are left out, said so):
#  - the synchronous reader's IODLY comes from sampled thread states: JSON
#    io_delay_source "sampled", a high share, '~' after it in the text;
#  - a device with no quiet moment since it appeared (a loop device of the test's own over
#    the lab's file, counters from zero), no state file: saturation unknown in the first
#    full interval;
#  - a run that saw it quiet writes its level to the state file ($IOTRIAGE_STATE_FILE,
#    this test's own), and the next run, started mid-incident, judges the device
#    saturated from the first full interval with it; the synchronous reader suffers,
#    on its sampled delay;
#  - a state file that is garbage: one line on stderr, the run goes on.
. "$(dirname "$0")/lib.sh"
. "$ROOT/tests/lab/lab.sh"
need fio
need ionice
[ "$(id -u)" = 0 ] || skip "needs root (the lab disk)"
da=$(sysctl -n kernel.task_delayacct 2>/dev/null) || da=0
DA_OFF=false
[ "$da" = 0 ] && DA_OFF=true
lab_up 2000 4 64 || exit $?
# A loop device keeps its counters from earlier attachments (other tests of this
# machine), and a lifetime mean await far below today's judges saturation alone
# (docs/devices.md): "unknown" could not be shown. So the test adds a loop device of its
# own over the lab's file, with counters that start at zero, and removes it at the end.
FRESH=
fresh_down() {
    [ -n "$FRESH" ] || return 0
    losetup -d "/dev/loop$FRESH" 2>/dev/null
    local i
    for i in $(seq 50); do
        "$ROOT/build/tests/loopctl" remove "$FRESH" 2>/dev/null && break
        sleep 0.1
    done
    FRESH=
}
trap 'it_kill_bg; fresh_down; lab_down; it_cleanup' EXIT
if [ -x "$ROOT/build/tests/loopctl" ]; then
    for m in $(seq 200 263); do
        [ -e "/sys/block/loop$m" ] && continue
        "$ROOT/build/tests/loopctl" add "$m" 2>/dev/null || continue
        FRESH=$m
        break
    done
fi
if [ -n "$FRESH" ]; then
    losetup --direct-io=on "/dev/loop$FRESH" "$LAB_MNT/disk.img" || fail "cannot attach /dev/loop$FRESH"
    [ "$(cat "/sys/block/loop$FRESH/loop/dio" 2>/dev/null)" = 1 ] || fail "/dev/loop$FRESH without direct I/O"
    DEV=/dev/loop$FRESH
    NAME=loop$FRESH
else
    DEV=$LAB_DEV
    NAME=$LAB_NAME
    echo "note: no loop device of our own (build/tests/loopctl missing, or none free): the lab's, with its past"
fi
echo none >"/sys/block/$NAME/queue/scheduler" || fail "cannot select none"
STATE=$TMP/state/baselines

DB=; BACKUP=; DBW=; BKW=
start_db() {
    fio --name=db --filename="$DEV" --ioengine=psync --direct=1 --bs=4k --rw=randread \
        --time_based --runtime="$1" >/dev/null &
    DB=$!; BG_PIDS+=("$DB")
}
start_backup() {
    ionice -c3 fio --name=backup --filename="$DEV" --ioengine=libaio --iodepth=16 \
        --direct=1 --bs=4k --rw=randread --time_based --runtime="$1" >/dev/null &
    BACKUP=$!; BG_PIDS+=("$BACKUP")
}
# fio runs each job in a child process: that one does the I/O. Returned once it holds
# the device (forked is not yet reading: a sample before would see no load).
job_of() { # job_of PID NAME
    local j= parent=$1
    wait_until 20 eval 'j=$(pgrep -P "$parent" -n fio) && proc_holds "$j" "$DEV"' ||
        fail "$2 reader's job process not found reading $DEV: $(proc_state "$parent")"
    echo "$j"
}
stop_load() {
    kill $DB $BACKUP 2>/dev/null
    wait $DB $BACKUP 2>/dev/null
    DB=; BACKUP=
}
# jq on sample $1 (1: the first full interval) of file $2.
nth() { sed -n "$1p" "$2" | jq -r --arg d "$NAME" --argjson db "${DBW:-0}" --argjson bk "${BKW:-0}" "$3"; }

# ---- the trouble under way since the device appeared; nothing remembered ----
start_db 60
start_backup 60
DBW=$(job_of "$DB" db)
BKW=$(job_of "$BACKUP" backup)
# (without a device of our own, the lab's past may judge it: the test says so)
life=$(awk -v d="$NAME" '$3 == d { ios = $4 + $8; print (ios >= 1000) ? ($7 + $11) / ios : "nan" }' /proc/diskstats)
IOTRIAGE_STATE_FILE=$STATE "$IOT" --json --no-bpf -d 1 -n 3 -o >"$TMP/a.json" 2>"$TMP/a.err" ||
    fail "iotriage failed: $(cat "$TMP/a.err")"
[ "$(nth 1 "$TMP/a.json" '.lens.on')" = false ] || fail "--no-bpf: lens on"
dev=$(nth 1 "$TMP/a.json" '.devices[] | select(.name == $d) | [.saturated, .quiet_await, .r_await, .aqu_sz] | map(tostring) | @tsv')
[ "$(cut -f2 <<<"$dev")" = null ] || fail "no state file, no quiet moment: a quiet level is known: $dev"
if [ "$life" = nan ] || ! awk -v a="$(cut -f3 <<<"$dev")" -v l="$life" 'BEGIN { exit !(a >= 1.6 * l * 0.95) }'; then
    [ "$(cut -f1 <<<"$dev")" = null ] ||
        fail "no quiet history, no state: saturation should be unknown in the first interval: $dev (lifetime mean $life ms)"
    ok "no state file, no quiet moment: saturated null in the first full interval ($dev)"
else
    ok "no state file: no quiet level ($dev); the loop device's lifetime mean from earlier tests ($life ms) judged it, so 'unknown' is not shown here"
fi

if $DA_OFF; then
    [ "$(nth 1 "$TMP/a.json" '.delayacct')" = false ] || fail "delay accounting reported on, sysctl says 0"
    # the reader is sampled from the first interval when it was in D at the start, else
    # from the second: look at the last sample
    db=$(nth 3 "$TMP/a.json" '.processes[] | select(.pid == $db) | [.io_delay_source, .io_delay_pct, .swapin_delay_pct] | map(tostring) | @tsv')
    [ "$(cut -f1 <<<"$db")" = sampled ] || fail "synchronous reader: io_delay_source not sampled: $db"
    between "$(cut -f2 <<<"$db")" 50 100 || fail "synchronous reader: sampled IODLY out of 50-100: $db"
    [ "$(cut -f3 <<<"$db")" = null ] || fail "sampled: swap-in delay should stay unknown: $db"
    ok "synchronous reader, delay accounting off, no lens: IODLY $(cut -f2 <<<"$db") % from sampled states"
    # a recording carries the source: replayed, the figure is still an estimate
    "$IOT" --replay "$TMP/a.json" --json >"$TMP/a-replay.json" 2>"$TMP/a-replay.err" ||
        fail "replay of the JSON failed: $(cat "$TMP/a-replay.err")"
    rp=$(nth 3 "$TMP/a-replay.json" '.processes[] | select(.pid == $db) | [.io_delay_source, .io_delay_pct] | map(tostring) | @tsv')
    [ "$rp" = "$(cut -f1-2 <<<"$db")" ] || fail "replayed: $rp, recorded: $db"
    ok "replayed: $rp"
    # the text marks the estimate
    "$IOT" -b --no-bpf -d 1 -n 3 -p "$DBW" >"$TMP/a.txt" 2>&1 || fail "iotriage -b failed"
    grep -Eq "^ *$DBW .*[0-9]\.[0-9]~" "$TMP/a.txt" || fail "no ~ after the sampled IODLY in the text: $(cat "$TMP/a.txt")"
    ok "text: the sampled IODLY ends in ~"
else
    ok "delay accounting is on ($da): the sampled-source checks are left out"
fi
stop_load
[ ! -e "$STATE" ] || ! grep -q "^$NAME " "$STATE" ||
    fail "a run that never saw the lab disk quiet remembered a level for it: $(cat "$STATE")"

# ---- a quiet run: one synchronous reader, one request at a time ----
start_db 60
DBW=$(job_of "$DB" db)
# (the level is the lowest await of the quiet intervals: a few of them, so that one slowed
# by a busy machine does not set it)
IOTRIAGE_STATE_FILE=$STATE "$IOT" --json --no-bpf -d 1 -n 5 -o >"$TMP/b.json" 2>"$TMP/b.err" ||
    fail "iotriage failed: $(cat "$TMP/b.err")"
q=$(nth 5 "$TMP/b.json" '.devices[] | select(.name == $d) | .quiet_await')
between "$q" 0.1 1000 || fail "a quiet run should learn the lab disk's level: quiet_await $q"
[ -f "$STATE" ] || fail "no state file written at exit ($STATE)"
line=$(grep "^$NAME " "$STATE") || fail "no line for $NAME in the state file: $(cat "$STATE")"
grep -Eq "^$NAME [0-9]+ [0-9]+ loop:[0-9a-f]{16} [0-9.]+ [0-9]+$" <<<"$line" ||
    fail "state line not NAME MAJOR MINOR loop:HASH QUIET SAVED: $line"
saved_q=$(awk '{ print $5 }' <<<"$line")
near "$saved_q" "$q" 0.05 || fail "the state file holds $saved_q ms, the run learned $q"
[ -z "$(find "$TMP/state" -name '*.tmp')" ] || fail "a temporary file was left beside the state file"
ok "quiet run: level $q ms learned and remembered ($line)"
stop_load

# ---- the trouble again; a new run starts in the middle of it, with the state file ----
start_db 60
start_backup 60
DBW=$(job_of "$DB" db)
BKW=$(job_of "$BACKUP" backup)
IOTRIAGE_STATE_FILE=$STATE "$IOT" --json --no-bpf -d 1 -n 3 -o >"$TMP/c.json" 2>"$TMP/c.err" ||
    fail "iotriage failed: $(cat "$TMP/c.err")"
dev=$(nth 1 "$TMP/c.json" '.devices[] | select(.name == $d) | [.saturated, .saturated_source, .quiet_await, .r_await, .aqu_sz] | map(tostring) | @tsv')
near "$(cut -f3 <<<"$dev")" "$saved_q" 0.05 || fail "the remembered level ($saved_q) is not the first interval's quiet_await: $dev"
[ "$(cut -f1-2 <<<"$dev")" = "$(printf 'true\tbaseline')" ] ||
    fail "with the remembered level: not saturated in the first full interval: $dev"
ok "remembered level: saturated from the first full interval ($dev)"
bk=$(nth 1 "$TMP/c.json" '.processes[] | select(.pid == $bk) | .role')
[ "$bk" = cause ] || fail "the deep reader should cause on the saturated disk from the first full interval: role $bk"
ok "deep reader: cause from the first full interval"
if $DA_OFF; then
    role=$(nth 3 "$TMP/c.json" '.processes[] | select(.pid == $db) | [.role, .io_delay_source, .io_delay_pct] | map(tostring) | @tsv')
    [ "$(cut -f1-2 <<<"$role")" = "$(printf 'suffer\tsampled')" ] ||
        fail "synchronous reader on the saturated disk should suffer on its sampled delay: $role"
    ok "synchronous reader: $role"
fi

# ---- a hostile state file: ignored with one line, the run goes on ----
head -c 70000 /dev/urandom >"$STATE"
IOTRIAGE_STATE_FILE=$STATE "$IOT" --json --no-bpf -d 0.3 -n 1 >/dev/null 2>"$TMP/d.err" ||
    fail "iotriage failed on a garbage state file: $(cat "$TMP/d.err")"
[ "$(grep -c 'remembered device levels ignored' "$TMP/d.err")" = 1 ] ||
    fail "a garbage state file should give one line on stderr: $(cat "$TMP/d.err")"
ok "garbage state file: $(cat "$TMP/d.err")"
stop_load
