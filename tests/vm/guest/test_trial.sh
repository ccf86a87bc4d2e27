# SPDX-License-Identifier: GPL-2.0-or-later
# A scheduler trial of bfq on Debian's kernel (the host's has no bfq): the SCSI disk
# (scsi_debug, 4 commands at once, 20 ms each) under none (nr_requests: the 4 tags), a
# best-effort synchronous reader (two psync jobs) beside an idle-class reader of 16
# synchronous jobs (one libaio process 16 deep sleeps in io_submit on its first request
# that finds no tag: under none only one of its requests would wait beside the others).
# Under none the two are served alike; bfq serves the idle class only when nothing else
# waits (given room: --nr-requests): the trial measures, per priority, the idle class
# held back and the best-effort latency lower (p50 or p99, beyond the noise), and the
# state after is the decision's.
# 20 ms a command (ndelay, a timer in the guest): the disk, not the emulated CPU, sets
# the pace. With a jiffy each (4 ms) the effect was not steady in CI runs, where the
# guest's CPU is shared with the host's tests (docs/trial.md). Then the same trial stopped by SIGTERM
# after the switch: none and nr_requests are back. Directions only, no time asserted.
. /iot/tests/vm/guest/lib.sh
scsi_debug dev_size_mb=64 max_queue=4 ndelay=20000000 || fail "scsi_debug did not make a disk"
D=/dev/$SD Q=/sys/block/$SD/queue
set_sched "$SD" none
NR=$(cat "$Q/nr_requests")
FIO_PRE="" fio_read a "$D" 120 --ioengine=psync --numjobs=2 --group_reporting
FIO_PRE="ionice -c3" fio_read b "$D" 120 --ioengine=psync --numjobs=16 --group_reporting
wait_until 60 users "$D" 18 || fail "the readers did not start"
diff_of() { jq -r --arg s "$1" --arg f "$2" '.compare[] | select(.subject == $s and .figure == $f) | .difference' /tmp/trial.json; }
# --nr-requests 64: room in bfq for all 18 requests (its default, twice the 4 tags, holds
# 8: the rest would wait for a scheduler tag in arrival order, a lottery where no
# scheduler can order anything; a lane run saw the best-effort p50 move -3 % so)
$IOT trial "$SD" bfq --seconds 20 --nr-requests 64 --yes --json >/tmp/trial.json 2>/tmp/trial.err
rc=$?
figs=$(jq -r '[.compare[] | select(.subject == "be" or .subject == "idle")
    | "\(.subject) \(.figure) \(.before) -> \(.after) (\(.difference))"] | join(", ")' /tmp/trial.json 2>/dev/null)
noise=$(jq -r '[.compare[] | select(.subject == "be" or .subject == "idle")
    | "\(.subject) \(.figure) \(.change_pct|floor)% [\(.noise_lo_pct|floor)..\(.noise_hi_pct|floor)]"] | join(", ")' /tmp/trial.json 2>/dev/null)
why="rc $rc; $figs; noise: $noise; $(jq -c '{decision, reason, source}' /tmp/trial.json 2>/dev/null); $(tail -n 3 /tmp/trial.err)"
[ "$(jq -r .source /tmp/trial.json)" = lens ] || fail "the trial was not measured by the lens: $why"
# bfq serves best-effort first: its latency falls (p50 or p99), and the idle class is
# held back: its latency rises or its requests a second fall (under TCG one of these may
# stay within the noise alone: a reader's think time leaves bfq gaps to serve idle in)
[ "$(diff_of be p99)" != higher ] && [ "$(diff_of be p50)" != higher ] || fail "be latency rose under bfq: $why"
[ "$(diff_of be p99)" = lower ] || [ "$(diff_of be p50)" = lower ] || fail "be latency did not fall under bfq: $why"
[ "$(diff_of idle p99)" = higher ] || [ "$(diff_of idle p50)" = higher ] || [ "$(diff_of idle iops)" = lower ] ||
    fail "the idle class was not held back under bfq: $why"
dec=$(jq -r .decision /tmp/trial.json)
case $rc/$dec in
0/keep)   [ "$(sched "$SD")" = bfq ] || fail "kept, yet $SD runs $(sched "$SD"): $why" ;;
3/revert) [ "$(sched "$SD")/$(cat "$Q/nr_requests")" = "none/$NR" ] || fail "put back, yet $SD runs $(sched "$SD"), nr_requests $(cat "$Q/nr_requests"): $why" ;;
*)        fail "exit $rc with decision $dec: $why" ;;
esac
ok "trial of bfq: $figs; $dec, $SD under $(sched "$SD"), nr_requests $(cat "$Q/nr_requests")"

# The same trial stopped after the switch: put back.
set_sched "$SD" none
echo "$NR" >"$Q/nr_requests"
$IOT trial "$SD" bfq --seconds 20 --yes --json >/tmp/stop.json 2>/tmp/stop.err &
t=$!
wait_until 60 eval '[ "$(sched "$SD")" = bfq ]' || { kill "$t"; fail "the trial did not switch: $(cat /tmp/stop.err)"; }
kill -TERM "$t"
wait "$t"
[ "$(sched "$SD")/$(cat "$Q/nr_requests")" = "none/$NR" ] ||
    fail "SIGTERM mid-trial left $(sched "$SD"), nr_requests $(cat "$Q/nr_requests") (want none/$NR)"
ok "SIGTERM after the switch: none and nr_requests $NR back"
readers_stop
