#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Delay accounting from the screen: A asks, n writes nothing, y turns it on; a reader
# started before shows no taskstats delay (unknown, or the BPF lens's), one started after a
# number from taskstats; on q
# iotriage asks whether to turn it off again (y: off; n: left on, and said so on exit).
# The sysctl is put back as it was, whatever happens.
. "$(dirname "$0")/lib.sh"
. "$ROOT/tests/lab/lab.sh"
SOCK=iotriage-da-$$
. "$(dirname "$0")/lib_tmux.sh"
[ -w /proc/sys/kernel/task_delayacct ] || skip "kernel.task_delayacct not writable here"
orig=$(cat /proc/sys/kernel/task_delayacct)
lab_up 2000 4 64 || exit $?
trap 'it_kill_bg; T kill-server 2>/dev/null; echo "$orig" >/proc/sys/kernel/task_delayacct; lab_down; it_cleanup' EXIT
da() { cat /proc/sys/kernel/task_delayacct; }

echo 0 >/proc/sys/kernel/task_delayacct
# A reader forked while delay accounting is off: the kernel keeps no delays for it.
bg "$HELPER" dread "$LAB_DEV" 120; old=$BG

T new-session -d -s ui -x 120 -y 40 "$IOT -d 0.5 --record $TMP/rec.jsonl 2>$TMP/err; echo EXITED \$?; sleep 60"
wait_for 'delays off: A turns on'
T send-keys -t ui A
wait_for '^Turn on delay accounting \(sysctl kernel.task_delayacct=1\)\?'
wait_for "Only tasks started from now on carry delay data"
T send-keys -t ui n
wait_for 'nothing changed'
[ "$(da)" = 0 ] || fail "n turned it on"
T send-keys -t ui A
wait_for '^Turn on delay accounting'
T send-keys -t ui y
wait_for 'kernel.task_delayacct is now 1'
[ "$(da)" = 1 ] || fail "y left task_delayacct at $(da)"
T send-keys -t ui x
wait_for '^iotriage - .*delays on'
ok "A: n writes nothing, y turns kernel.task_delayacct on"

# A reader started now has delays; the old one stays unknown, not 0.
bg "$HELPER" dread "$LAB_DEV" 120; new=$BG
for i in $(seq 1 150); do
    last_record "$TMP/rec.jsonl" | jq -e --argjson n "$new" \
        '.processes[] | select(.pid == $n) | .io_delay_pct != null and .io_delay_pct > 10' >/dev/null 2>&1 && break
    sleep 0.2
done
last=$(last_record "$TMP/rec.jsonl")
echo "$last" | jq -e --argjson n "$new" '.processes[] | select(.pid == $n) | .io_delay_pct > 10' >/dev/null ||
    fail "the reader started after has no delay: $(echo "$last" | jq -c --argjson n "$new" '.processes[] | select(.pid == $n)')"
# The reader started before carries no delay data from taskstats: unknown, or measured by
# the BPF lens when it runs, never taskstats' zero.
echo "$last" | jq -e --argjson o "$old" '.processes[] | select(.pid == $o) | .read_bps > 0 and
        ((.io_delay_pct == null and .io_delay_source == null) or .io_delay_source == "bpf")' \
    >/dev/null || fail "the reader started before: $(echo "$last" | jq -c --argjson o "$old" '.processes[] | select(.pid == $o)')"
ok "reader started after: $(echo "$last" | jq --argjson n "$new" '.processes[] | select(.pid == $n) | .io_delay_pct')% delay (taskstats); started before: $(echo "$last" | jq -c --argjson o "$old" '.processes[] | select(.pid == $o) | [.io_delay_pct, .io_delay_source]')"

# q asks; y turns it off and quits.
T send-keys -t ui q
wait_for '^Turn delay accounting off before quitting\?'
[ "$(da)" = 1 ] || fail "asking changed it"
T send-keys -t ui Escape
wait_for '^iotriage - '
T send-keys -t ui q
wait_for '^Turn delay accounting off before quitting\?'
T send-keys -t ui y
wait_for '^EXITED 0'
[ "$(da)" = 0 ] || fail "y on quit left task_delayacct at $(da)"
ok "q asks first (Esc stays); y turns it off and quits with 0"
T kill-server

# n leaves it on, and says so when the screen is gone.
SOCK=$SOCK-2
T new-session -d -s ui -x 120 -y 40 "$IOT -d 0.5 2>$TMP/err2; echo EXITED \$?; sleep 60"
wait_for 'delays off: A turns on'
T send-keys -t ui A
wait_for '^Turn on delay accounting'
T send-keys -t ui y
wait_for 'kernel.task_delayacct is now 1'
T send-keys -t ui x q
wait_for '^Turn delay accounting off before quitting\?'
T send-keys -t ui n
wait_for '^EXITED 0'
[ "$(da)" = 1 ] || fail "n on quit turned it off"
grep -q 'delay accounting is still on (turned on by iotriage); sysctl -w kernel.task_delayacct=0' "$TMP/err2" ||
    fail "no note on exit: $(cat "$TMP/err2")"
ok "n leaves it on and says how to turn it off"

# Already on, not by us: A explains and leaves it; q asks nothing.
T kill-server
SOCK=$SOCK-3
T new-session -d -s ui -x 120 -y 40 "$IOT -d 0.5; echo EXITED \$?; sleep 60"
wait_for '^iotriage - .*delays on'
T send-keys -t ui A
wait_for 'already on \(not by iotriage'
T send-keys -t ui q
wait_for '^EXITED 0'
[ "$(da)" = 1 ] || fail "changed a setting it did not make"
ok "on before iotriage started: left alone, nothing asked"
