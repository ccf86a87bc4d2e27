#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Partitions appearing and disappearing while iotriage samples (--json -d 0.2), with I/O on
# them. This kernel parses no partition table (CONFIG_MSDOS_PARTITION and
# CONFIG_EFI_PARTITION off), so the partitions are made with BLKPG ioctls (util-linux
# addpart/delpart), which need no table and work on a loop device attached without
# partition scanning.
#
# The disk is the lab's (2 ms per request, 4 at once: at most 2,000 requests a second), so
# a rate above that is a miscomputation, not load. Thrown at it, on that disk:
#   steady    p1 and p2 made, a synchronous O_DIRECT reader on p1 and a writer on p2;
#   re-made   p1 deleted and made again eight times (0.05 s apart, so the kernel hands the
#             same major:minor back), each new p1 read at once (5 reads, then 200, in
#             turn), a writer on p2 meanwhile, the samplers held (SIGSTOP in their sleep)
#             across each re-make, so that exactly one sample of each spans it;
#   churn     p3 made and deleted 30 times, 20 ms apart (minors cycle);
#   tight     p4 made and deleted without a pause for 8 s, a sampler at -d 0.05 too;
#   end       every partition deleted.
# Must hold: exit 0, one JSON object per line; every entry of our partitions is a
# partition of the lab disk, with the major:minor the kernel gave it; no rate negative or
# above the disk's capacity; the partitions' rates add up to no more than the disk's (the
# kernel counts a partition's I/O on its disk too); a partition is listed while it exists
# and not once it was deleted; a sample whose interval spans a re-make of p1 gives p1 no
# rate at all (null: the counters belong to another device, whichever way they moved);
# the reads and writes were seen. When the sanitized build is there (make san), a second
# sampler runs it on the same events: no sanitizer report, exit 0.
# Only the lab's own loop device is touched; its partitions are deleted in the EXIT trap
# before it is detached (a loop device without partition scanning keeps BLKPG partitions
# after it is detached).
. "$(dirname "$0")/lib.sh"
. "$ROOT/tests/lab/lab.sh"
. "$ROOT/tests/soak/san.sh"
need addpart
need delpart
need dd
[ "$(id -u)" = 0 ] || skip "needs root (loop devices, BLKPG)"
[ -x "$HELPER" ] || fail "$HELPER not built (make build/tests/taskhelper)"

lab_up 2000 4 64 || exit $?
NAME=$LAB_NAME DEV=$LAB_DEV
CAP=2500          # requests/s: the lab's 2,000 and a quarter for the sampling moments

ours() { _lab_loop_is_ours "$NAME"; }
part_exists() { [ -e "/sys/block/$NAME/${NAME}p$1" ]; }
del_parts() {  # delete every partition of our loop device, while it is ours
    local p n
    ours || return 0
    for p in /sys/block/"$NAME"/"$NAME"p*; do
        [ -e "$p" ] || continue
        n=${p##*p}
        for _ in 1 2 3 4 5 6 7 8 9 10; do
            delpart "$DEV" "$n" 2>/dev/null && break
            sleep 0.2
        done
        [ -e "$p" ] && echo "warning: could not delete ${NAME}p$n" >&2
    done
    return 0
}
samplers=()      # the samplers held across a re-make: let go of whatever happens
trap 'kill -CONT "${samplers[@]}" 2>/dev/null; it_kill_bg; del_parts; lab_down; it_cleanup' EXIT

# A loop device without partition scanning keeps BLKPG partitions after a detach: a
# crashed run could have left some on the device we were handed. It is ours now.
for p in /sys/block/"$NAME"/"$NAME"p*; do
    [ -e "$p" ] && { echo "note: stale partition ${p##*/} on $NAME, deleting it"; del_parts; break; }
done

EV=$TMP/events
: >"$EV"
now() { printf '%s' "$EPOCHREALTIME"; }
add() {  # add N START SECTORS: make it, log "add N t0 t1 major:minor"
    local t0 t1
    t0=$(now)
    addpart "$DEV" "$1" "$2" "$3" || fail "addpart $DEV $1 $2 $3"
    t1=$(now)
    part_exists "$1" || fail "${NAME}p$1 not in sysfs after addpart"
    echo "add $1 $t0 $t1 $(cat "/sys/block/$NAME/${NAME}p$1/dev")" >>"$EV"
}
del() {  # del N: delete it (retrying while a reader that was killed still holds it)
    local t0 t1
    for _ in $(seq 20); do
        t0=$(now)
        delpart "$DEV" "$1" 2>/dev/null && break
        sleep 0.05
    done
    t1=$(now)
    part_exists "$1" && fail "${NAME}p$1 still there after delpart"
    echo "del $1 $t0 $t1 -" >>"$EV"
}
stopped() {  # stopped PID: wait (2 s at most) until it is stopped
    local st i
    for i in $(seq 400); do
        st=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
        st=${st##*) }
        [ "${st%% *}" = T ] && return 0
        sleep 0.005
    done
    return 1
}
hold() {  # hold PID...: stop each sampler while it sleeps between two samples
    local p nr i
    for p; do
        for i in $(seq 200); do
            kill -STOP "$p"
            stopped "$p" || fail "sampler $p did not stop"
            read -r nr _ <"/proc/$p/syscall"
            [ "$nr" = "$SLEEP_NR" ] && continue 2
            kill -CONT "$p"
            sleep 0.013
        done
        fail "sampler $p never caught between two samples in 200 tries"
    done
}
rd() { dd if="${DEV}p$1" of=/dev/null bs=4k count="$2" iflag=direct status=none || fail "read of ${DEV}p$1"; }

# Two samplers on the same events: the normal build, and the sanitized one if it builds.
san=0
if [ "${IOT_PARTS_SAN:-1}" = 1 ] && san_build 2>"$TMP/san-build.err"; then san=1; else
    echo "note: no sanitized build (make san failed or IOT_PARTS_SAN=0): one sampler only"; fi
# -p: only this shell's process listing, so that each sample is quick; devices are all there.
bg "$IOT" --json -d 0.2 -p $$ >"$TMP/out.json" 2>"$TMP/err"; iot=$BG
if [ "$san" = 1 ]; then bg "$SAN_IOT" --json -d 0.2 -p $$ >"$TMP/san.json" 2>"$TMP/san.err"; siot=$BG; fi
sleep 0.6

# Steady: p1 (16 MiB from sector 2048) read, p2 (16 MiB from 34816) written.
add 1 2048 32768
add 2 34816 32768
bg "$HELPER" dread "${DEV}p1" 1.5; r=$BG
dd if=/dev/zero of="${DEV}p2" bs=4k count=300 oflag=direct status=none || fail "write to ${DEV}p2"
wait "$r" || fail "reader of ${DEV}p1 failed"
sleep 0.4

# Re-made: p1 deleted and made again, read at once; p2 written all along. Each re-make
# happens while the samplers are held between two samples (stopped in their sleep, the
# last sample written whole): the next sample of each spans it, whatever the machine's
# load does to the timing (left to chance, a loaded run once saw no sample span one).
bg dd if=/dev/zero of="${DEV}p2" bs=4k count=100000 oflag=direct status=none; w=$BG
samplers=("$iot")
[ "$san" = 1 ] && samplers+=("$siot")
# The system call a stopped sleeper is in, as /proc/PID/syscall gives it (the samplers
# wait for their next sample with clock_nanosleep, as sleep(1) does).
sleep 30 & sl=$!
sleep 0.1; kill -STOP "$sl"; stopped "$sl" || fail "sleep(1) did not stop"
read -r SLEEP_NR _ <"/proc/$sl/syscall"
kill -CONT "$sl"; kill "$sl"; wait "$sl" 2>/dev/null
# A life of 5 reads, then one of 200 read at once: the new p1's counters pass the old
# ones within its first interval, so only knowing it is another device keeps its rate out.
for n in 5 200 5 200 5 200 5 200; do
    sleep 0.25
    hold "${samplers[@]}"
    del 1
    sleep 0.05        # the kernel has released the minor by then: p1 gets it back
    add 1 2048 32768
    rd 1 "$n"
    kill -CONT "${samplers[@]}"
done
sleep 0.3
kill "$w" 2>/dev/null; wait "$w" 2>/dev/null

# Churn: p3 (8 MiB from 67584) made and deleted back to back.
for _ in $(seq 30); do
    add 3 67584 16384
    sleep 0.02
    del 3
done
# Tight churn: p4 made and deleted without a pause for 8 s, a third sampler at -d 0.05
# meanwhile. A partition deleted between iotriage's read of /proc/diskstats and its read
# of sysfs must not pass for a whole disk of its own (seen: 3 to 11 of every 100 sightings
# before the fix).
bg "$IOT" --json -d 0.05 -p $$ >"$TMP/fast.json" 2>"$TMP/fast.err"; fast=$BG
sleep 0.2
end=$(( ${EPOCHREALTIME%.*} + 8 )) cycles=0
while (( ${EPOCHREALTIME%.*} < end )); do
    addpart "$DEV" 4 100352 2048 || fail "addpart p4"
    delpart "$DEV" 4 || fail "delpart p4"
    cycles=$((cycles + 1))
done
sleep 0.2
kill -TERM "$fast"; wait "$fast"; rc=$?
[ "$rc" = 0 ] || fail "fast iotriage exit $rc on SIGTERM: $(tail -n 3 "$TMP/fast.err")"
jq -R -c --arg n "${NAME}p4" 'fromjson | .devices[] | select(.name == $n) | {partition, disk}' "$TMP/fast.json" \
    >"$TMP/p4.ndjson" || fail "a line of the fast sampler is not JSON"
seen=$(wc -l <"$TMP/p4.ndjson")
wrong=$(jq -c --arg d "$NAME" 'select(.partition != true or .disk != $d)' "$TMP/p4.ndjson" | wc -l)
echo "tight churn: $cycles times p4 made and deleted; the fast sampler saw it $seen times in $(wc -l <"$TMP/fast.json") samples, $wrong not as a partition of $NAME"
tight_bad=    # judged at the end, after the other checks have had their say
[ "$wrong" = 0 ] || tight_bad="a deleted partition passed for something else $wrong times of $seen: $(jq -c --arg d "$NAME" 'select(.partition != true or .disk != $d)' "$TMP/p4.ndjson" | sort | uniq -c | head -n 2)"
[ "$seen" -ge 10 ] || tight_bad="the fast sampler saw p4 only $seen times: nothing tested"

sleep 0.3
del 1
del 2
sleep 0.8

kill -TERM "$iot"; wait "$iot"; rc=$?
[ "$rc" = 0 ] || fail "iotriage exit $rc on SIGTERM: $(tail -n 3 "$TMP/err")"
if [ "$san" = 1 ]; then
    kill -TERM "$siot"; wait "$siot"; src=$?
    if san_report "$TMP/san.err"; then san_excerpt "$TMP/san.err" >&2; fail "sanitizer report"; fi
    [ "$src" = 0 ] || fail "sanitized iotriage exit $src on SIGTERM: $(tail -n 3 "$TMP/san.err")"
    ok "sanitized sampler: no report, exit 0, $(wc -l <"$TMP/san.json") samples"
fi
BG_PIDS=()

jq -R -s -c 'split("\n") | map(select(length > 0) | split(" ") |
    {k: .[0], n: (.[1] | tonumber), t0: (.[2] | tonumber), t1: (.[3] | tonumber), dev: .[4]})' \
    "$EV" >"$TMP/events.json"

# check FILE: every condition on one sampler's output; prints a summary, BAD lines on failure.
check() {
    jq -R -c --arg d "$NAME" 'fromjson | {ts, interval_s,
        disk: (.devices[] | select(.name == $d)),
        parts: [.devices[] | select(.name | startswith($d + "p"))],
        other: [.devices[] | select(.name != $d and (.name | startswith($d + "p") | not) and .disk == $d)]}' \
        "$1" >"$TMP/s.ndjson" || { echo "BAD a line of output is not JSON, or $NAME missing"; return 0; }
    jq -s -r --arg d "$NAME" --argjson cap "$CAP" --slurpfile ev "$TMP/events.json" '
      def m: 0.01;
      def rates: [.r_s, .w_s, .d_s, .rkb_s, .wkb_s, .dkb_s, .rrqm_s, .wrqm_s, .aqu_sz, .util, .r_await, .w_await];
      def pname($n): $d + "p" + ($n | tostring);
      $ev[0] as $ev
      | [ $ev[] | select(.k == "add") ] as $adds
      | [ .[1:][] ] as $s            # the first sample has no rates at all
      | [ $s[] | . as $x | .parts[] | {ts: $x.ts} + . ] as $pe
      | [ $pe[] | select(.partition != true or .disk != $d) ] as $attr
      | [ $pe[] | select(rates | any(type == "number" and . < 0)) ] as $neg
      | [ $pe[] | select((.r_s // 0) + (.w_s // 0) > $cap or (.util // 0) > 100.0001) ] as $huge
      | [ $pe[] | select(.reset == true and (rates | any(. != null))) ] as $resetrated
      | [ $s[] | select(.disk.r_s != null) | . as $x
          | { ts, r: ([.parts[] | .r_s // 0] | add // 0), w: ([.parts[] | .w_s // 0] | add // 0),
              dr: .disk.r_s, dw: .disk.w_s, slack: (8 / .interval_s) }
          | select(.r > .dr + .slack or .w > .dw + .slack) ] as $sum
      | [ $s[] | select(.other | length > 0) ] as $foreign
      # Each add of p1 after the first: a sample whose interval holds it gives p1 no rate.
      | [ $adds[] | select(.n == 1) ][1:] as $remakes
      | [ $remakes[] as $a | $s[] | select(.ts - .interval_s < $a.t0 - m and .ts > $a.t1 + m)
          | { ts, p1: (.parts[] | select(.name == pname(1))) } ] as $span
      | [ $span[] | select(.p1 == null or (.p1 | rates | any(. != null))) ] as $spanbad
      | [ $span[] | select(.p1.reset == true) ] as $spanreset
      | [ range(1; $adds | map(select(.n == 1)) | length) as $i | $adds | map(select(.n == 1))
          | select(.[$i].dev == .[$i - 1].dev) ] as $samedev
      # Listed while it lives (between its add and the next del of that number), with its
      # major:minor; absent between a del and the next add.
      | [ $ev | to_entries[] | .key as $i | .value | select(.k == "add") | . as $a
          | ([ $ev[$i + 1:][] | select(.n == $a.n and .k == "del") ][0].t0 // 1e18) as $until
          | $s[] | select(.ts > $a.t1 + m and .ts < $until - m)
          | { ts, n: $a.n, dev: $a.dev, e: ([.parts[] | select(.name == pname($a.n))][0]) }
          | select(.e == null or "\(.e.major):\(.e.minor)" != .dev) ] as $missing
      | [ $ev | to_entries[] | .key as $i | .value | select(.k == "del") | . as $x
          | ([ $ev[$i + 1:][] | select(.n == $x.n and .k == "add") ][0].t0 // 1e18) as $next
          | $s[] | select(.ts > $x.t1 + m and .ts < $next - m)
          | select(any(.parts[]; .name == pname($x.n))) | { ts, n: $x.n } ] as $ghost
      | [ $pe[] | select(.name == pname(1) and (.r_s // 0) > 0) ] as $reads
      | [ $pe[] | select(.name == pname(2) and (.w_s // 0) > 0) ] as $writes
      | [ $pe[] | select(.name == pname(3)) ] as $p3
      | "samples \($s | length + 1), partition entries \($pe | length) (p3: \($p3 | length)); re-makes of p1 \($remakes | length), with the same major:minor \($samedev | length), spanned by a sample \($span | length) (reset: \($spanreset | length), the others first seen); max p1 r/s \([$pe[] | select(.name == pname(1)) | .r_s // 0] | max), max p2 w/s \([$pe[] | select(.name == pname(2)) | .w_s // 0] | max), max disk r/s+w/s \([$s[] | (.disk.r_s // 0) + (.disk.w_s // 0)] | max)",
        (if ($attr | length) > 0 then "BAD not a partition of \($d): \($attr[0] | {ts, name, partition, disk})" else empty end),
        (if ($neg | length) > 0 then "BAD negative rate: \($neg[0] | {ts, name, r_s, w_s})" else empty end),
        (if ($huge | length) > 0 then "BAD above the disk capacity: \($huge[0] | {ts, name, r_s, w_s, util})" else empty end),
        (if ($resetrated | length) > 0 then "BAD reset with a rate: \($resetrated[0] | {ts, name, r_s})" else empty end),
        (if ($sum | length) > 0 then "BAD partitions add up to more than the disk: \($sum[0])" else empty end),
        (if ($foreign | length) > 0 then "BAD a device other than our partitions claims \($d) as its disk: \($foreign[0].other[0].name)" else empty end),
        (if ($spanbad | length) > 0 then "BAD a rate across a re-make of p1 (counters of another device): \($spanbad[0] | {ts, p1: (.p1 | {major, minor, r_s, reset})})" else empty end),
        (if ($span | length) != ($remakes | length) then "BAD \($span | length) samples spanned one of the \($remakes | length) re-makes of p1 (each was made while the sampler was held)" else empty end),
        (if ($missing | length) > 0 then "BAD a live partition missing or with another major:minor: \($missing[0] | {ts, n, dev, e: (.e | if . then "\(.major):\(.minor)" else null end)})" else empty end),
        (if ($ghost | length) > 0 then "BAD a deleted partition still listed: \($ghost[0])" else empty end),
        (if ($reads | length) == 0 then "BAD reads of p1 never seen" else empty end),
        (if ($writes | length) == 0 then "BAD writes to p2 never seen" else empty end)
    ' "$TMP/s.ndjson"
}
for f in out san; do
    [ -s "$TMP/$f.json" ] || continue
    check "$TMP/$f.json" >"$TMP/verdict-$f.txt" || fail "$f: the checks did not run (jq)"
    grep -q '^samples ' "$TMP/verdict-$f.txt" || fail "$f: the checks printed no summary"
    sed "s/^/$f: /" "$TMP/verdict-$f.txt"
    if grep -q '^BAD' "$TMP/verdict-$f.txt"; then fail "$f: $(grep '^BAD' "$TMP/verdict-$f.txt" | head -n 3)"; fi
done
[ -z "$tight_bad" ] || fail "tight churn: $tight_bad"
ok "$(grep -c '^add' "$EV") partitions made, $(grep -c '^del' "$EV") deleted on $NAME while sampling: attribution, rates, presence all right"
