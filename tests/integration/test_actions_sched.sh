#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Switching a device's I/O scheduler from the screen, on the lab disk only (never vda):
# y applies and nr_requests ends where the dialog said; n and Esc write nothing; k keeps a
# hand-set nr_requests; u undoes; the dialog names the process whose verdict changes; a
# write the kernel refuses (a read-only sysfs) is reported and changes nothing; a dialog
# the terminal cannot show whole cannot be confirmed.
. "$(dirname "$0")/lib.sh"
. "$ROOT/tests/lab/lab.sh"
need fio
SOCK=iotriage-act-$$
. "$(dirname "$0")/lib_tmux.sh"
lab_up 2000 4 64 || exit $?
FAKE=$TMP/sys
trap 'it_kill_bg; T kill-server 2>/dev/null; tmux -L "$SOCK-ro" kill-server 2>/dev/null;
      mountpoint -q "$FAKE" && umount "$FAKE"; lab_down; it_cleanup' EXIT

Q=/sys/block/$LAB_NAME/queue
vda_before=$(cat /sys/block/vda/queue/scheduler /sys/block/vda/queue/nr_requests 2>/dev/null)
sched_now() { sed -n 's/.*\[\(.*\)\].*/\1/p' "$Q/scheduler"; }
nr_now() { cat "$Q/nr_requests"; }
depth=$(cat "/sys/block/$LAB_NAME/mq/0/nr_tags")

# An idle-class reader on the lab disk: its label is ignored under none, honoured by
# mq-deadline (it reads the class) and by bfq.
bg ionice -c3 fio --name=idle --filename="$LAB_DEV" --direct=1 --rw=randread --bs=4k --ioengine=psync \
    --runtime=120 --time_based --output=/dev/null

T new-session -d -s ui -x 120 -y 40 "$IOT -d 0.5; echo EXITED \$?; sleep 60"
wait_for '^DEVICE +SCHED'
T send-keys -t ui Tab / "$LAB_NAME" Enter
wait_for "^$LAB_NAME +none +$depth "
# The confirmation lists the processes known to use the disk when it opens: wait until the
# idle reader is known there (its open file on the disk; fio may start slower than the
# screen on a loaded machine).
wait_for "ioprio-ignored: fio\[[0-9]+\] idle/[0-7] \(set\) is ignored: $LAB_NAME uses none" 20

# 1. The menu lists what sysfs offers, the current one marked; Esc closes it.
T send-keys -t ui s
wait_for "^I/O scheduler of $LAB_NAME"
for s in $(tr -d '[]' <"$Q/scheduler"); do
    screen | grep -Eq "^[> ] $s " || { screen; fail "menu lacks $s"; }
done
screen | grep -Eq '^> none .*\[current\]' || { screen; fail "current scheduler not marked and selected"; }
T send-keys -t ui Escape
wait_for 'nothing changed'
[ "$(sched_now)/$(nr_now)" = "none/$depth" ] || fail "Esc in the menu changed $(sched_now)/$(nr_now)"
ok "menu lists the offered schedulers, current marked; Esc closes it"

# The switch the dialogs below confirm, cancel and undo: none to mq-deadline, which every
# kernel here offers (bfq is not offered everywhere: its own dialog is checked in 3b,
# where the kernel has it).
TO=mq-deadline
sched_offered "$LAB_NAME" "$TO" || fail "$LAB_NAME does not offer $TO: $(cat "$Q/scheduler")"

# 2. The confirmation: what mq-deadline reads, the process whose verdict changes, nr_requests.
open_confirm() {  # open_confirm N: the Nth entry of the menu (0 = first)
    T send-keys -t ui s
    wait_for "^I/O scheduler of $LAB_NAME"
    local k
    for ((k = 0; k < $1; k++)); do T send-keys -t ui Down; done
    T send-keys -t ui Enter
    wait_for "^Switch $LAB_NAME from"
}
idx_of() { tr -d '[]' <"$Q/scheduler" | tr ' ' '\n' | grep -n -x "$1" | cut -d: -f1 | awk '{print $1 - 1}'; }
open_confirm "$(idx_of "$TO")"
wait_for "^Switch $LAB_NAME from none to $TO\?"
wait_for '^mq-deadline +reads the class \(rt before be before idle\) but not the level'
wait_for '^none +reads no priority.* \(now\)'
wait_for "^ +[0-9]+ +fio +idle/[0-7]: ignored -> honoured"
wait_for "nr_requests: now $depth \(the default\); switching resets it: $TO sets $((2 * (depth < 128 ? depth : 128)))"
ok "confirmation says what $TO reads, that the idle fio goes from ignored to honoured, and the new nr_requests"

# 3. n cancels: nothing written.
T send-keys -t ui n
wait_for "nothing changed: $LAB_NAME still uses none"
[ "$(sched_now)/$(nr_now)" = "none/$depth" ] || fail "n changed $(sched_now)/$(nr_now)"
# Esc in the confirmation too.
open_confirm "$(idx_of "$TO")"
T send-keys -t ui Escape
wait_for "nothing changed: $LAB_NAME still uses none"
[ "$(sched_now)/$(nr_now)" = "none/$depth" ] || fail "Esc changed $(sched_now)/$(nr_now)"
ok "n and Esc write nothing (still none, nr_requests $depth)"

# 3b. bfq's confirmation, where the kernel offers bfq: class and level read, the idle fio
#     honoured, the nr_requests bfq sets; n writes nothing.
if sched_offered "$LAB_NAME" bfq; then
    open_confirm "$(idx_of bfq)"
    wait_for "^Switch $LAB_NAME from none to bfq\?"
    wait_for '^bfq +reads class and level'
    wait_for "^ +[0-9]+ +fio +idle/[0-7]: ignored -> honoured"
    wait_for "nr_requests: now $depth \(the default\); switching resets it: bfq sets $((2 * (depth < 128 ? depth : 128)))"
    T send-keys -t ui n
    wait_for "nothing changed: $LAB_NAME still uses none"
    [ "$(sched_now)/$(nr_now)" = "none/$depth" ] || fail "n on bfq's dialog changed $(sched_now)/$(nr_now)"
    ok "bfq's confirmation: class and level read, the idle fio ignored -> honoured, nr_requests; n writes nothing"
else
    skip_part "the confirmation of a switch to bfq: $NO_BFQ"
fi

# 4. y applies: sysfs shows mq-deadline and the promised nr_requests; the verdict banner follows.
promised=$((2 * (depth < 128 ? depth : 128)))
open_confirm "$(idx_of "$TO")"
T send-keys -t ui y
wait_for "^Switch done"
wait_for "$LAB_NAME: scheduler $TO \(was none\), nr_requests $promised \(was $depth\)"
[ "$(sched_now)" = "$TO" ] || fail "y: scheduler is $(sched_now)"
[ "$(nr_now)" = "$promised" ] || fail "y: nr_requests $(nr_now), promised $promised"
# The rule is one line for udev; the dialog wraps it at the terminal's width, at a space
# (in 120 columns it does with mq-deadline): the screen's lines are joined to find it.
rule="ACTION==\"add|change\", SUBSYSTEM==\"block\", KERNEL==\"$LAB_NAME\", ATTR{queue/scheduler}=\"$TO\", ATTR{queue/nr_requests}=\"$promised\""
wait_until 15 eval 'screen | tr "\n" " " | grep -qF -- "$rule"' || { screen; fail "the udev rule is not shown: $rule"; }
[ ! -e /etc/udev/rules.d/60-io-scheduler.rules ] || fail "a udev rule file was written"
T send-keys -t ui x
wait_gone '^Switch done'
ok "y: $LAB_NAME now $TO, nr_requests $promised as promised; udev rule shown, no file written"

# 5. The device view shows before/after figures.
T send-keys -t ui Enter
wait_for "^Device $LAB_NAME"
wait_for "^Switched from none to $TO [0-9]+ s ago"
wait_for '^ +IOPS +[0-9.]+ +[0-9.]+$' 8
T send-keys -t ui Escape
ok "device view: before/after figures after the switch"

# 6. u undoes (with its own confirmation): back to none and the old nr_requests.
T send-keys -t ui u
wait_for "^Undo the switch of $LAB_NAME"
wait_for "^scheduler +$TO -> none"
T send-keys -t ui n
wait_for 'nothing changed'
[ "$(sched_now)" = "$TO" ] || fail "n on undo changed the scheduler"
T send-keys -t ui u
wait_for "^Undo the switch of $LAB_NAME"
T send-keys -t ui y
wait_for '^Undo done'
[ "$(sched_now)/$(nr_now)" = "none/$depth" ] || fail "undo left $(sched_now)/$(nr_now)"
T send-keys -t ui x
T send-keys -t ui u
wait_for 'nothing to undo'
ok "u: confirmed undo restores none/$depth; n on it writes nothing"

# 7. A hand-set nr_requests: k keeps it across the switch, u restores it.
echo 64 >"$Q/nr_requests"
open_confirm "$(idx_of mq-deadline)"
wait_for "nr_requests: now 64 \(set by hand"
wait_for 'k switch, keep nr_requests 64'
T send-keys -t ui k
wait_for "^Switch done"
[ "$(sched_now)/$(nr_now)" = "mq-deadline/64" ] || fail "k left $(sched_now)/$(nr_now)"
T send-keys -t ui x u
wait_for "^nr_requests 64 -> 64"
T send-keys -t ui y
wait_for '^Undo done'
[ "$(sched_now)/$(nr_now)" = "none/64" ] || fail "undo after k left $(sched_now)/$(nr_now)"
echo "$depth" >"$Q/nr_requests"
T send-keys -t ui x
ok "k keeps a hand-set nr_requests (64) under mq-deadline; undo gives none/64 back"

# 7b. Two switches in a row (as the disks below a stack are switched, one by one): u
#     undoes the last, then the one before it, then there is nothing to undo.
sched_offered "$LAB_NAME" kyber || fail "$LAB_NAME does not offer kyber: $(cat "$Q/scheduler")"
open_confirm "$(idx_of mq-deadline)"
T send-keys -t ui y
wait_for "^Switch done"
T send-keys -t ui x
open_confirm "$(idx_of kyber)"
wait_for "^Switch $LAB_NAME from mq-deadline to kyber\?"
T send-keys -t ui y
wait_for "^Switch done"
T send-keys -t ui x u
wait_for "^scheduler +kyber -> mq-deadline"
wait_for "the last of 2 switches in this run"
T send-keys -t ui y
wait_for '^Undo done'
wait_for "u undoes the switch before it, of $LAB_NAME"
[ "$(sched_now)" = mq-deadline ] || fail "the first undo left $(sched_now)"
T send-keys -t ui x u
wait_for "^scheduler +mq-deadline -> none"
T send-keys -t ui y
wait_for '^Undo done'
[ "$(sched_now)/$(nr_now)" = "none/$depth" ] || fail "the second undo left $(sched_now)/$(nr_now)"
T send-keys -t ui x u
wait_for 'nothing to undo'
ok "two switches undone in turn, the last first: kyber -> mq-deadline -> none/$depth"

# 8. A dialog the terminal cannot show whole is not confirmed.
T resize-window -t ui -x 60 -y 9
open_confirm "$(idx_of "$TO")"
T send-keys -t ui y
wait_for 'too small to show the whole dialog'
[ "$(sched_now)" = none ] || fail "y on a clipped dialog switched to $(sched_now)"
T send-keys -t ui Escape
T resize-window -t ui -x 120 -y 40
ok "y refused while the confirmation does not fit the terminal"
T send-keys -t ui q
wait_for '^EXITED 0'

# 9. A write the kernel refuses: a read-only sysfs (a tmpfs copy of the device's queue
#    files, remounted read-only, given with --sys-root). Reported with the errno text;
#    nothing changes, in the copy or in the real sysfs.
mkdir -p "$FAKE"
mount -t tmpfs -o size=1m iotriage-fakesys "$FAKE"
mkdir -p "$FAKE/class/block/$LAB_NAME/queue" "$FAKE/class/block/$LAB_NAME/mq/0"
cp "$Q/scheduler" "$Q/nr_requests" "$FAKE/class/block/$LAB_NAME/queue/"
cp "/sys/block/$LAB_NAME/mq/0/nr_tags" "$FAKE/class/block/$LAB_NAME/mq/0/"
mount -o remount,ro "$FAKE"
SOCK=$SOCK-ro
T new-session -d -s ui -x 120 -y 40 "$IOT -d 0.5 --sys-root $FAKE; echo EXITED \$?; sleep 60"
wait_for '^DEVICE +SCHED'
T send-keys -t ui Tab / "$LAB_NAME" Enter
wait_for "^$LAB_NAME +none "
open_confirm "$(idx_of mq-deadline)"
T send-keys -t ui y
wait_for "^Switch failed"
wait_for "FAILED: $LAB_NAME: writing scheduler 'mq-deadline' failed: Read-only file system; still none"
grep -q '\[none\]' "$FAKE/class/block/$LAB_NAME/queue/scheduler" || fail "the read-only copy changed"
[ "$(sched_now)/$(nr_now)" = "none/$depth" ] || fail "the real device changed: $(sched_now)/$(nr_now)"
T send-keys -t ui x u
wait_for 'nothing to undo'
T send-keys -t ui q
wait_for '^EXITED 0'
ok "a refused write (EROFS) is reported with its reason; nothing changed, no undo recorded"

[ "$(cat /sys/block/vda/queue/scheduler /sys/block/vda/queue/nr_requests 2>/dev/null)" = "$vda_before" ] ||
    fail "vda's queue changed"
ok "vda untouched"
