#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The screen loads the BPF lens after its first frame (sampler_opts.defer_lens), so the
# verifier's 100-300 ms do not hold up the first screen, and the first interval still has
# the lens's figures, counted from the lens's attachment. A synchronous reader of the lab
# disk, started before iotriage with delay accounting off (no taskstats delay for it,
# ever): in the first frame its IODLY is pending (".."); in the first frame with figures,
# after one interval (-d 3), it is a number from the lens, not "-" (unknown) or the
# estimate from sampled thread states ("N~") as it would be if that interval had no lens
# figures. The header says "lens loading" in the first frame
# when the poll catches it, and "lens off" never appears.
. "$(dirname "$0")/lib.sh"
. "$ROOT/tests/lab/lab.sh"
SOCK=iotriage-lenslate-$$
. "$(dirname "$0")/lib_tmux.sh"
need tmux
[ "$(id -u)" = 0 ] || skip "needs root (BPF)"
[ -r /sys/kernel/btf/vmlinux ] || skip "no kernel BTF at /sys/kernel/btf/vmlinux"
[ -w /proc/sys/kernel/task_delayacct ] || skip "kernel.task_delayacct not writable here"
orig=$(cat /proc/sys/kernel/task_delayacct)
lab_up 2000 4 64 || exit $?
trap 'it_kill_bg; echo "$orig" >/proc/sys/kernel/task_delayacct; lab_down; it_cleanup' EXIT
echo 0 >/proc/sys/kernel/task_delayacct
bg "$HELPER" dread "$LAB_DEV" 120; reader=$BG
# Started before iotriage means reading before it: its whole first interval waits.
wait_holds "$reader" "$LAB_DEV"
lab_wait_users 1 || fail "the reader did not start"
sleep 0.5

T new-session -d -s ui -x 200 -y 40 "$IOT -d 3 -p $reader 2>$TMP/err; echo EXITED \$?; sleep 60"
row="^ +$reader +[a-z0-9_?-]+ +[a-z]+/[0-9]~? +[a-z]+ "
first="" real=""
for _ in $(seq 1 400); do                     # 20 s: the start under load, then 3 s
    s=$(screen)
    line=$(printf '%s\n' "$s" | grep -E -- "$row" | head -n 1)
    if [ -n "$line" ]; then
        iodly=$(printf '%s\n' "$line" | awk '{ print $7 }')     # PID USER PRIO FROM READ WRITE IODLY
        if [ "$iodly" = ".." ]; then
            [ -n "$first" ] || first=$s
        else
            real=$s
            break
        fi
    fi
    sleep 0.05
done
[ -n "$real" ] || { screen; fail "the reader's row never showed figures"; }
printf '%s\n' "$real" | grep -q 'lens off' && { printf '%s\n' "$real"; fail "lens off on the first frame with figures: $(cat "$TMP/err")"; }
# A number, not "-" (unknown) nor "N~" (the estimate sampled from thread states, which
# stands in where the lens has no figure).
[[ $iodly =~ ^[0-9][0-9.]*!?$ ]] || { printf '%s\n' "$real"; fail "IODLY of the reader started before is '$iodly' in the first interval: the lens's figures missing"; }
awk -v v="${iodly%%[!0-9.]*}" 'BEGIN { exit !(v >= 10) }' || fail "the synchronous reader waits only $iodly % (want >= 10)"
ok "first interval: reader IODLY $iodly (from the lens, loaded after the first frame)"
if [ -n "$first" ]; then
    printf '%s\n' "$first" | grep -q 'lens off' && fail "the first frame says lens off"
    printf '%s\n' "$first" | grep -q 'lens loading' || { printf '%s\n' "$first"; fail "the first frame does not say lens loading"; }
    ok "first frame: IODLY pending, 'lens loading' in the header"
else
    ok "first frame missed between two polls (a loaded machine)"
fi
T send-keys -t ui q
wait_for '^EXITED 0' 10
ok "quit with status 0"
