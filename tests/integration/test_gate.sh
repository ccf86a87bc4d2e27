#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The run-time gate (source/procs.h): a task the kernel says has not run since its last
# full read is taken from the cache. Nothing it shows may go stale: what others can
# change without the task running (nice, policy, I/O priority) shows at once, and a task
# that wakes up and reads shows its rate in the first interval it reads in.
. "$(dirname "$0")/lib.sh"
need ionice
need chrt
[ "$(id -u)" = 0 ] || skip "needs root (taskstats)"

# Paced by the samples written, not by the clock (a loaded machine starts late and
# samples late): the sleepers asleep before iotriage starts, the changes made once three
# samples are out, and the reader woken then too. It sleeps in the open of a FIFO (not
# running, as the gate needs) until the test opens the other end, then reads for 3 s:
# a reader gone before the next sample is in none, so 3 s leaves several intervals
# however late the samples come.
N=14
bg sleep 300; a=$BG
bg sleep 300; b=$BG
bg sleep 300; c=$BG
wait_sleep "$a" "$b" "$c"
dd if=/dev/urandom of="$TMP/f" bs=1M count=16 status=none
mkfifo "$TMP/go"
bg bash -c 'read -r _ <"$2"; exec "$0" dread "$1" 3' "$HELPER" "$TMP/f" "$TMP/go"; r=$BG
wait_until 20 grep -q wait_for_partner "/proc/$r/wchan" || fail "the reader never waited on its FIFO: $(proc_state "$r")"

"$IOT" --json -d 0.4 -n "$N" -p "$a" -p "$b" -p "$c" -p "$r" >"$TMP/g.json" &
iot=$!
wait_until 30 eval '[ "$(wc -l <"$TMP/g.json")" -ge 3 ]' ||
    fail "iotriage wrote $(wc -l <"$TMP/g.json") samples in 30 s"
renice -n 7 -p "$a" >/dev/null
chrt --idle -p 0 "$b"
ionice -c3 -p "$c"
# Samples up to $done were written before the changes; the next may have started before
# them; every one after it started after them.
done=$(wc -l <"$TMP/g.json")
echo go >"$TMP/go"
wait "$iot" || fail "iotriage failed"

nsamples=$(wc -l <"$TMP/g.json")
[ "$nsamples" = "$N" ] || fail "$nsamples samples"
[ "$done" -le $((N - 4)) ] || fail "the changes came after sample $done of $N: too few left to judge"
pick() { jq -c --argjson p "$1" "$2" "$TMP/g.json"; }
# Each change shows in the first sample taken after it.
last() { tail -n 1 "$TMP/g.json" | jq -r --argjson p "$1" ".processes[] | select(.pid == \$p) | $2"; }
[ "$(last "$a" .nice)" = 7 ] || fail "renice not seen: $(pick "$a" '.processes[] | select(.pid == $p) | .nice')"
[ "$(last "$a" '.ioprio.effective_class + "/" + (.ioprio.effective_level|tostring)')" = be/5 ] ||
    fail "nice 7 should give be/5: $(last "$a" .ioprio)"
[ "$(last "$b" .policy)" = idle ] || fail "chrt --idle not seen: $(last "$b" .policy)"
[ "$(last "$b" .ioprio.effective_class)" = idle ] || fail "SCHED_IDLE should give the idle class"
[ "$(last "$c" .ioprio.class)" = idle ] || fail "ionice -c3 not seen: $(last "$c" .ioprio)"
for p in "$a" "$b" "$c"; do
    first_seen=$(jq -r --argjson p "$p" '[.processes[] | select(.pid == $p)] | length' "$TMP/g.json" | grep -c 1)
    [ "$first_seen" = "$N" ] || fail "process $p missing from some samples"
done
# the changes show in the first sample taken after them: from sample done+2 on, in all
nices=$(jq -r --argjson p "$a" '.processes[] | select(.pid == $p) | .nice' "$TMP/g.json" | tr '\n' ' ')
n_before=$(jq -r --argjson p "$a" '.processes[] | select(.pid == $p) | .nice' "$TMP/g.json" | head -n "$done" | grep -c '^0$')
[ "$n_before" = "$done" ] || fail "nice 7 before renice, or another value: $nices"
after=$(jq -r --argjson p "$a" '.processes[] | select(.pid == $p) | .nice' "$TMP/g.json" | tail -n +$((done + 2)))
n_after=$(grep -c '^7$' <<<"$after")
[ "$n_after" = $((N - done - 1)) ] || fail "renice (after sample $done) not seen in every sample from $((done + 2)) on: $nices"
for p in "$b:.policy:idle" "$c:.ioprio.class:idle"; do
    IFS=: read -r pid key want <<<"$p"
    got=$(jq -r --argjson p "$pid" ".processes[] | select(.pid == \$p) | $key" "$TMP/g.json" | tail -n +$((done + 2)) | sort -u)
    [ "$got" = "$want" ] || fail "$key of $pid from sample $((done + 2)) on: $(echo $got)"
done
ok "renice, chrt --idle and ionice -c3 of sleeping processes show at once (changed after sample $done; nice 7 in all $n_after samples from $((done + 2)) on)"

# The reader: no rate while it sleeps, then a rate in every sample it reads in.
rates=$(jq -r --argjson p "$r" '.processes[] | select(.pid == $p) | .read_bps' "$TMP/g.json" | tr '\n' ' ')
zeros=$(jq -r --argjson p "$r" '.processes[] | select(.pid == $p) | .read_bps' "$TMP/g.json" | head -n "$done" | grep -c '^0$')
[ "$zeros" = "$done" ] || fail "the reader shows a rate while asleep (woken after sample $done): $rates"
busy=$(jq -r --argjson p "$r" '.processes[] | select(.pid == $p) | .read_bps' "$TMP/g.json" |
       awk '$1 > 100000' | wc -l)
[ "$busy" -ge 3 ] || fail "the reader's rate in only $busy samples: $rates"
ok "a sleeper that starts reading: 0 while asleep, then a rate in $busy samples ($rates)"
