#!/usr/bin/env bash
# The run-time gate (source/procs.h): a task the kernel says has not run since its last
# full read is taken from the cache. Nothing it shows may go stale: what others can
# change without the task running (nice, policy, I/O priority) shows at once, and a task
# that wakes up and reads shows its rate in the first interval it reads in.
. "$(dirname "$0")/lib.sh"
need ionice
need chrt
[ "$(id -u)" = 0 ] || skip "needs root (taskstats)"

bg sleep 300; a=$BG
bg sleep 300; b=$BG
bg sleep 300; c=$BG
# A reader that sleeps first, then reads its file with O_DIRECT for 1.5 s.
dd if=/dev/urandom of="$TMP/f" bs=1M count=16 status=none
bg bash -c 'sleep 2.2; exec "$0" dread "$1" 1.5' "$HELPER" "$TMP/f"; r=$BG

"$IOT" --json -d 0.4 -n 10 -p "$a" -p "$b" -p "$c" -p "$r" >"$TMP/g.json" &
iot=$!
sleep 1.3                              # a few samples: the sleepers are carried by now
renice -n 7 -p "$a" >/dev/null
chrt --idle -p 0 "$b"
ionice -c3 -p "$c"
wait "$iot" || fail "iotriage failed"

nsamples=$(wc -l <"$TMP/g.json")
[ "$nsamples" = 10 ] || fail "$nsamples samples"
pick() { jq -c --argjson p "$1" "$2" "$TMP/g.json"; }
# Each change shows within one interval of it (samples 4.. are after 1.3 s + 0.4 s).
last() { tail -n 1 "$TMP/g.json" | jq -r --argjson p "$1" ".processes[] | select(.pid == \$p) | $2"; }
[ "$(last "$a" .nice)" = 7 ] || fail "renice not seen: $(pick "$a" '.processes[] | select(.pid == $p) | .nice')"
[ "$(last "$a" '.ioprio.effective_class + "/" + (.ioprio.effective_level|tostring)')" = be/5 ] ||
    fail "nice 7 should give be/5: $(last "$a" .ioprio)"
[ "$(last "$b" .policy)" = idle ] || fail "chrt --idle not seen: $(last "$b" .policy)"
[ "$(last "$b" .ioprio.effective_class)" = idle ] || fail "SCHED_IDLE should give the idle class"
[ "$(last "$c" .ioprio.class)" = idle ] || fail "ionice -c3 not seen: $(last "$c" .ioprio)"
for p in "$a" "$b" "$c"; do
    first_seen=$(jq -r --argjson p "$p" '[.processes[] | select(.pid == $p)] | length' "$TMP/g.json" | grep -c 1)
    [ "$first_seen" = 10 ] || fail "process $p missing from some samples"
done
# the changes show in the first sample taken after them (renice at ~1.3 s: sample 4 of
# 0.4 s each ends at ~1.6 s plus the start-up)
n_before=$(jq -r --argjson p "$a" '.processes[] | select(.pid == $p) | .nice' "$TMP/g.json" | grep -c '^0$')
n_after=$(jq -r --argjson p "$a" '.processes[] | select(.pid == $p) | .nice' "$TMP/g.json" | grep -c '^7$')
[ $((n_before + n_after)) = 10 ] || fail "nice took values other than 0 and 7"
[ "$n_after" -ge 5 ] || fail "renice seen in only $n_after of 10 samples"
ok "renice, chrt --idle and ionice -c3 of sleeping processes show at once (nice 7 in $n_after samples)"

# The reader: no rate while it sleeps, then a rate in every sample it reads in.
rates=$(jq -r --argjson p "$r" '.processes[] | select(.pid == $p) | .read_bps' "$TMP/g.json" | tr '\n' ' ')
zeros=$(jq -r --argjson p "$r" '.processes[] | select(.pid == $p) | .read_bps' "$TMP/g.json" | head -n 3 | grep -c '^0$')
[ "$zeros" = 3 ] || fail "the reader shows a rate while asleep: $rates"
busy=$(jq -r --argjson p "$r" '.processes[] | select(.pid == $p) | .read_bps' "$TMP/g.json" |
       awk '$1 > 100000' | wc -l)
[ "$busy" -ge 3 ] || fail "the reader's rate in only $busy samples: $rates"
ok "a sleeper that starts reading: 0 while asleep, then a rate in $busy samples ($rates)"
