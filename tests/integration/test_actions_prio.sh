#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Setting a process's I/O priority from the screen: every thread set and read back
# (checked here with ionice, i.e. ioprio_get, per thread); Esc writes nothing; per-thread
# failures are reported (an unprivileged user asking for realtime); --read-only and a
# READ_ONLY=1 build refuse every action and change nothing.
. "$(dirname "$0")/lib.sh"
need ionice
need setpriv
SOCK=iotriage-prio-$$
. "$(dirname "$0")/lib_tmux.sh"
trap 'it_kill_bg; for s in "" -nobody -ro -built; do tmux -L "$SOCK$s" kill-server 2>/dev/null; done; it_cleanup' EXIT

# A process of 6 threads (main included), all at the default priority.
bg "$HELPER" threads 6 300; p=$BG
wait_threads "$p" 6
prios() { for t in /proc/$p/task/*; do ionice -p "${t##*/}"; done | sort | uniq -c | sed 's/^ *//'; }
[ "$(prios)" = "6 none: prio 0" ] || fail "helper threads start as: $(prios)"

T new-session -d -s ui -x 120 -y 40 "$IOT -d 0.5; echo EXITED \$?; sleep 60"
wait_for '^ +PID USER +PRIO'
T send-keys -t ui / "threads 6 300" Enter
wait_for "^ +$p root +be/4~"

# Esc in the chooser and n in the confirmation write nothing.
T send-keys -t ui i
wait_for "^I/O priority of process $p \(taskhelper\)"
wait_for 'set on every thread \(6\)'
T send-keys -t ui Escape
wait_for 'nothing changed'
T send-keys -t ui i Down Down 7 Enter
wait_for "^Set be/7 on every thread of process $p \(taskhelper\)\?"
T send-keys -t ui n
wait_for 'nothing changed'
[ "$(prios)" = "6 none: prio 0" ] || fail "cancel changed: $(prios)"
ok "Esc and n write nothing"

# best-effort 7 on all six threads, each read back with ioprio_get.
T send-keys -t ui i Down Down
wait_for '^> best-effort'
T send-keys -t ui 7
wait_for '^level 7 '
wait_for 'The kernel would apply be/7'
T send-keys -t ui Enter
wait_for "^Set be/7 on every thread of process $p"
T send-keys -t ui y
wait_for "process $p: be/7 set on all 6 threads, each read back"
[ "$(prios)" = "6 best-effort: prio 7" ] || fail "after y: $(prios)"
T send-keys -t ui x
wait_for "^ +$p root +be/7 "
ok "be/7 set on all 6 threads (ionice -p on each: best-effort: prio 7); the row shows be/7"

# Back to none (follow nice): the class none with level 0, on every thread.
T send-keys -t ui i Up Up Up Enter
wait_for "^Set none \(follows nice\) on every thread"
T send-keys -t ui y
wait_for "set on all 6 threads"
[ "$(prios)" = "6 none: prio 0" ] || fail "back to none: $(prios)"
T send-keys -t ui x
ok "none again on all threads"

# In thread mode (P) a thread's row stands for its whole process.
T send-keys -t ui P
wait_for '^ +TID USER'
T send-keys -t ui End i Home Down
wait_for "^I/O priority of process $p "
T send-keys -t ui Enter
wait_for "^Set rt/[0-7] on every thread of process $p"
T send-keys -t ui y
wait_for "set on all 6 threads"
[ "$(prios | sed 's/: prio [0-7]//')" = "6 realtime" ] || fail "thread mode: $(prios)"
T send-keys -t ui x i Home Enter
wait_for "^Set none \(follows nice\) on every thread of process $p"
T send-keys -t ui y
wait_for "set on all 6 threads"
[ "$(prios)" = "6 none: prio 0" ] || fail "thread mode, back to none: $(prios)"
T send-keys -t ui x q
wait_for '^EXITED 0'
ok "thread mode: i on a thread row sets the whole process (realtime, then none)"

# Per-thread failures: nobody may not ask for realtime. Its own 3-thread process.
chmod 755 "$TMP"
bg setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all "$HELPER" threads 3 300; q=$BG
wait_threads "$q" 3
SOCK0=$SOCK; SOCK=$SOCK0-nobody
T new-session -d -s ui -x 120 -y 40 "setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all $IOT -d 0.5; echo EXITED \$?; sleep 60"
wait_for '^ +PID USER +PRIO'
T send-keys -t ui / "threads 3 300" Enter
wait_for "^ +$q nobody +be/4~"
T send-keys -t ui i Down
wait_for '^> realtime'
T send-keys -t ui Enter
wait_for "^Set rt/[0-7] on every thread of process $q"
T send-keys -t ui y
wait_for "^Priority partly changed|^Priority not changed"
# the dialog wraps the long line: read the screen as one line
screen | tr '\n' ' ' | grep -Eq "FAILED: process $q: rt/[0-7] set on 0 of 3 threads; failed: [0-9]+ \(Operation not permitted\) [0-9]+ \(Operation not permitted\) [0-9]+ \(Operation not permitted\)" ||
    { screen; fail "per-thread failures not listed"; }
for t in /proc/$q/task/*; do ionice -p "${t##*/}" | grep -q '^none' || fail "thread ${t##*/} changed"; done
T send-keys -t ui x q
wait_for '^EXITED 0'
ok "unprivileged realtime: each of 3 threads reported failed (EPERM), none changed"
SOCK=$SOCK0

# --read-only: every action refused, nothing changed.
da=$(cat /proc/sys/kernel/task_delayacct)
vda=$(cat /sys/block/vda/queue/scheduler)
check_refusals() {  # $1: the expected refusal text
    wait_for '^iotriage - .*READ-ONLY'
    T send-keys -t ui / "threads 6 300" Enter
    wait_for "^ +$p root "
    T send-keys -t ui i
    wait_for "$1"
    T send-keys -t ui A
    wait_for "$1"
    T send-keys -t ui Tab s
    wait_for "$1"
    T send-keys -t ui u
    wait_for "$1"
    screen | grep -Eq '^(I/O|Set|Switch|Turn|Undo)' && fail "a dialog opened in read-only mode"
    [ "$(prios)" = "6 none: prio 0" ] || fail "read-only changed the priority: $(prios)"
    [ "$(cat /proc/sys/kernel/task_delayacct)" = "$da" ] || fail "read-only changed task_delayacct"
    [ "$(cat /sys/block/vda/queue/scheduler)" = "$vda" ] || fail "vda changed"
    T send-keys -t ui q
    wait_for '^EXITED 0'
}
SOCK=$SOCK0-ro
T new-session -d -s ui -x 120 -y 40 "$IOT -d 0.5 --read-only; echo EXITED \$?; sleep 60"
check_refusals 'read-only: started with --read-only, iotriage changes nothing'
ok "--read-only: i, A, s and u refused with a message, nothing changed"

# Built read-only: no option lifts it.
# (under build/.ro.lock: tests/run.sh's background lane makes the same build ahead of it)
flock "$ROOT/build/.ro.lock" make -C "$ROOT" -s -j"$(nproc 2>/dev/null || echo 2)" readonly >"$TMP/ro.log" 2>&1 ||
    { cat "$TMP/ro.log"; fail "make readonly failed"; }
RO=$ROOT/build/ro/iotriage-ro
"$RO" -V | grep -q 'built read-only' || fail "-V does not say built read-only"
SOCK=$SOCK0-built
T new-session -d -s ui -x 120 -y 40 "$RO -d 0.5; echo EXITED \$?; sleep 60"
check_refusals 'read-only: this iotriage was built read-only and changes nothing'
ok "READ_ONLY=1 build: every action refused without any option"
