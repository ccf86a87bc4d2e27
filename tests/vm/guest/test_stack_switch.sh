# SPDX-License-Identifier: GPL-2.0-or-later
# The scheduler switch offered on a bio-based device, on Debian's kernel, on the screen
# (tmux): an LV (dm-linear over nb0, none) has no scheduler of its own, so s in its device
# view opens the menu of nb0 below it; the confirmation names the disk, y switches nb0
# (sysfs says mq-deadline, the LV's queue has no scheduler written), the result gives the
# udev rule for nb0, and u (confirmed) puts none back. An idle-class reader of the LV is
# the process whose verdict the confirmation says changes. Then md RAID 0 over nb1 and nb2
# (both none): s on md0 offers the choice of its disks, the second's menu switches nb2
# alone (its confirmation names md0's idle reader, ignored -> honoured there), u puts it
# back.
. /iot/tests/vm/guest/lib.sh
nullb nb0 submit_queues=1 size=64 memory_backed=1 || fail "null_blk nb0"
dmsetup --noudevsync --noudevrules create iotlv --table "0 $(cat /sys/block/nb0/size) linear /dev/nb0 0" ||
    fail "dm-linear over nb0"
CLEANUP+=("dmsetup --noudevsync remove iotlv")
lv=$(grep -lx iotlv /sys/block/dm-*/dm/name | cut -d/ -f4)
set_sched nb0 none
lv_sched_before=$(cat "/sys/block/$lv/queue/scheduler" 2>/dev/null)
FIO_PRE="ionice -c3" fio_read idle "/dev/$lv" 120 --ioengine=psync --rate_iops=100

# The host's screen helpers (T, screen, wait_for, wait_gone: tests/integration/lib_tmux.sh),
# with what they expect of the host's lib.sh; a TCG guest's refreshes take seconds, so the
# waits name their bounds.
need() { command -v "$1" >/dev/null || skip "no $1 in the guest"; }
it_cleanup() { :; }
SOCK=iot
. /iot/tests/integration/lib_tmux.sh
CLEANUP+=("it_cleanup")
export TERM=xterm-256color LANG=C.UTF-8
T new-session -d -s ui -x 140 -y 40 "$IOT -d 1; echo EXITED \$?; sleep 60" || fail "tmux: no session"
wait_for '^DEVICE +SCHED' 120
wait_until 30 users "/dev/$lv" 1 || fail "the reader did not start"
T send-keys -t ui Tab / "$lv" Enter
wait_for "^$lv " 60
T send-keys -t ui Enter
wait_for "^Device $lv " 60
T send-keys -t ui s
wait_for "I/O scheduler of nb0 \(below $lv, which has none of its own\)" 60
screen | grep -q "I/O scheduler of $lv" && fail "a switch of $lv itself offered"
# the menu's entries in the order of nb0's scheduler file
idx=$(tr -d '[]' </sys/block/nb0/queue/scheduler | tr ' ' '\n' | grep -n -x mq-deadline | cut -d: -f1)
for ((k = 1; k < idx; k++)); do T send-keys -t ui Down; done
T send-keys -t ui Enter
wait_for "^Switch nb0 from none to mq-deadline\?" 60
wait_for "fio +idle/[0-7]: ignored -> honoured" 60
ok "s on $lv: nb0's menu, the confirmation for nb0, the idle reader of $lv from ignored to honoured"
T send-keys -t ui y
wait_for "^Switch done" 60
[ "$(sched nb0)" = mq-deadline ] || fail "nb0 after y: $(cat /sys/block/nb0/queue/scheduler)"
[ "$(cat "/sys/block/$lv/queue/scheduler" 2>/dev/null)" = "$lv_sched_before" ] ||
    fail "$lv's queue changed: $(cat "/sys/block/$lv/queue/scheduler")"
# the rule, one line for udev, wrapped by the dialog at a space: the lines joined
w=$(cat /sys/block/nb0/wwid 2>/dev/null || cat /sys/block/nb0/device/wwid 2>/dev/null)
if [ -n "$w" ]; then m="ATTR{wwid}==\"$w\""; else m='KERNEL=="nb0"'; fi
rule="ACTION==\"add|change\", SUBSYSTEM==\"block\", $m, ATTR{queue/scheduler}=\"mq-deadline\", ATTR{queue/nr_requests}=\"$(cat /sys/block/nb0/queue/nr_requests)\""
wait_until 30 eval 'screen | tr "\n" " " | tr -s " " | grep -qF -- "$rule"' || { screen; fail "the udev rule for nb0 is not shown: $rule"; }
ok "y: nb0 mq-deadline, $lv untouched, the udev rule for nb0: $rule"
T send-keys -t ui x u
wait_for "^Undo the switch of nb0" 60
wait_for "^scheduler +mq-deadline -> none" 60
T send-keys -t ui y
wait_for '^Undo done' 60
[ "$(sched nb0)" = none ] || fail "nb0 after the undo: $(cat /sys/block/nb0/queue/scheduler)"
T send-keys -t ui x q
wait_for '^EXITED 0' 60
ok "u: nb0 back to none"

nullb nb1 submit_queues=1 size=32 memory_backed=1 || fail "null_blk nb1"
nullb nb2 submit_queues=1 size=32 memory_backed=1 || fail "null_blk nb2"
mdadm --create /dev/md0 --run --quiet --level=0 --chunk=64 --raid-devices=2 --metadata=1.2 /dev/nb1 /dev/nb2 \
    >/tmp/md0.err 2>&1 || fail "md RAID 0 over nb1 nb2: $(cat /tmp/md0.err)"
CLEANUP+=("mdadm --stop /dev/md0")
set_sched nb1 none
set_sched nb2 none
readers_stop
FIO_PRE="ionice -c3" fio_read idlemd /dev/md0 120 --ioengine=psync --rate_iops=100
T kill-session -t ui 2>/dev/null
T new-session -d -s ui -x 140 -y 40 "$IOT -d 1; echo EXITED \$?; sleep 60" || fail "tmux: no session"
wait_for '^DEVICE +SCHED' 120
wait_until 30 users /dev/md0 1 || fail "md0's reader did not start"
T send-keys -t ui Tab / md0 Enter
wait_for "^md0 " 60
T send-keys -t ui Enter
wait_for "^Device md0 " 60
T send-keys -t ui s
wait_for "md0 has no I/O scheduler: the disks below it serve its I/O" 60
wait_for "^.*nb1 +none" 60
wait_for "^.*nb2 +none" 60
T send-keys -t ui Down Enter
wait_for "I/O scheduler of nb2 \(below md0, which has none of its own\)" 60
idx=$(tr -d '[]' </sys/block/nb2/queue/scheduler | tr ' ' '\n' | grep -n -x mq-deadline | cut -d: -f1)
for ((k = 1; k < idx; k++)); do T send-keys -t ui Down; done
T send-keys -t ui Enter
wait_for "^Switch nb2 from none to mq-deadline\?" 60
wait_for "fio +idle/[0-7]: ignored -> honoured" 60
T send-keys -t ui y
wait_for "^Switch done" 60
[ "$(sched nb2)" = mq-deadline ] && [ "$(sched nb1)" = none ] ||
    fail "after y: nb1 $(cat /sys/block/nb1/queue/scheduler), nb2 $(cat /sys/block/nb2/queue/scheduler)"
wait_until 30 eval 'screen | tr "\n" " " | tr -s " " | grep -qF -- "ATTR{queue/scheduler}=\"mq-deadline\""' ||
    { screen; fail "no udev rule shown for nb2"; }
ok "s on md0: the choice of nb1 and nb2, nb2's menu and confirmation (md0's idle reader ignored -> honoured), y: nb2 mq-deadline, nb1 untouched"
T send-keys -t ui x u
wait_for "^Undo the switch of nb2" 60
T send-keys -t ui y
wait_for '^Undo done' 60
[ "$(sched nb2)" = none ] || fail "nb2 after the undo: $(cat /sys/block/nb2/queue/scheduler)"
T send-keys -t ui x q
wait_for '^EXITED 0' 60
ok "u: nb2 back to none"
