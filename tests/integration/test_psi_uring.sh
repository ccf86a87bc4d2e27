#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# io pressure that is not block I/O (issue 35): an idle network service on io_uring, a
# receive on a socket nothing sends to (build/tests/uringwait), and no disk I/O at all.
# The kernel counts io_uring's completion wait as iowait, and so in /proc/pressure/io,
# since 6.1.39: the io pressure rises with every disk idle.
#   - the warning io-pressure-not-block names the waiter (pid, comm) in JSON, -b and the
#     recording read back (--record, then --replay), and the exporter counts it; its
#     evidence is `measured` when the lens saw the wait begin (the waiter started after
#     the lens), `sampled` when it did not (asleep since before iotriage, or --no-bpf);
#   - the waiter has no role (no suffer), its IODLY is not the wait (lens: 0), and no
#     device is called saturated;
#   - beside it, a synchronous O_DIRECT reader of the lab disk, in D: its wait is block
#     iowait (io_delay_pct over 50 with the lens, no io_uring wait) and no warning of
#     this code names it.
# And the other kind of io pressure that is not block I/O: a wait on a filesystem with
# no block device. A buffered reader of the lab's slowfs mount (FUSE; $LAB_MNT/cached.img,
# read through the page cache, not through the loop device) sleeps in D for the pages
# FUSE's readahead fills (folio_wait_bit_common -> io_schedule: iowait, PSI io), with no
# block request of its own:
#   - io-pressure-not-block names it too, with the filesystem's type and mount point in
#     the text ("on fuse.slowfs at $LAB_MNT"), in JSON (lens: measured; --no-bpf: sampled
#     thread states), -b, the recording read back, and the exporter's count;
#   - it has no role; the synchronous O_DIRECT reader of the lab disk beside it is not
#     named (its wait is block I/O).
# No time is asserted: thresholds on shares of an interval, and the waiter's wait is
# endless.
. "$(dirname "$0")/lib.sh"
. "$ROOT/tests/lab/lab.sh"
[ "$(id -u)" = 0 ] || skip "needs root (wchan of other processes, the lens, the lab disk)"
[ -r /proc/pressure/io ] || skip "no PSI (/proc/pressure/io)"
dis=$(sysctl -n kernel.io_uring_disabled 2>/dev/null || echo 0)
[ "$dis" = 0 ] || skip "kernel.io_uring_disabled is $dis: io_uring is off for processes"
UW=$ROOT/build/tests/uringwait
[ -x "$UW" ] || fail "make build/tests/uringwait first (liburing-dev: scripts/deps.sh test)"
need jq

# The state letter of pid $1 (R S D ...), the field after the comm's ')'.
state_of() { local s; s=$(cat "/proc/$1/stat" 2>/dev/null) || return 1; s=${s##*) }; echo "${s%% *}"; }
# uringwait prints "ready PID" once its receive is submitted; then it waits for ever.
start_waiter() {
    bg "$UW" >"$TMP/uw.out"
    WAITER=$BG
    wait_until 10 grep -q '^ready' "$TMP/uw.out" || fail "uringwait did not start: $(cat "$TMP/uw.out")"
    wait_until 10 eval '[ "$(state_of "$WAITER")" = S ] && grep -q io_cqring_wait "/proc/$WAITER/wchan"' ||
        fail "uringwait is not asleep in io_uring's wait: $(state_of "$WAITER") $(cat "/proc/$WAITER/wchan")"
}
# Samples (one per line) naming pid $2 in io-pressure-not-block with evidence $3.
named() { jq -c --argjson p "$2" --arg e "$3" \
    'select(any(.warnings[]; .code == "io-pressure-not-block" and .pid == $p and .evidence == $e))' "$1" | wc -l; }
# The waiter is never a sufferer, and no device is saturated, in any sample of $1.
no_role_no_saturation() {
    local f=$1 what=$2 bad
    bad=$(jq -r --argjson p "$WAITER" '.processes[] | select(.pid == $p and .role != null) | .role' "$f" | sort -u | tr '\n' ' ')
    [ -z "$bad" ] || fail "$what: the io_uring waiter has the role $bad"
    bad=$(jq -r '.devices[] | select(.saturated == true) | .name' "$f" | sort -u | tr '\n' ' ')
    [ -z "$bad" ] || fail "$what: devices called saturated with the waiter alone: $bad"
}

# The lab: its slowfs mount serves the buffered reader's file (1 GiB: the reader never
# reaches its end in this test), its loop device the O_DIRECT reader of part 2.
lab_up 5000 1 1024 || exit $?
trap 'it_kill_bg; lab_down; it_cleanup' EXIT
bg dd if="$LAB_MNT/cached.img" of=/dev/null bs=4k status=none
NETFS=$BG
wait_until 10 eval '[ "$(state_of "$NETFS")" = D ]' || fail "the buffered reader of slowfs never slept in D"
# Samples naming pid $2 in io-pressure-not-block on slowfs at the lab's mount.
named_netfs() { jq -c --argjson p "$2" --arg m "on fuse.slowfs at $LAB_MNT " \
    'select(any(.warnings[]; .code == "io-pressure-not-block" and .pid == $p and .device == null and
        .comm == "dd" and (.text | contains($m))))' "$1" | wc -l; }
# ... and with evidence measured when the lens was on in the sample, sampled when not.
netfs_evidence_ok() { [ "$(jq -s --argjson p "$2" '[.[] | (if .lens.on then "measured" else "sampled" end) as $e |
    .warnings[] | select(.code == "io-pressure-not-block" and .pid == $p) | .evidence == $e] | all' "$1")" = true ]; }
no_role() { jq -e --argjson p "$2" 'any(.processes[]; .pid == $p and .role != null)' "$1" >/dev/null &&
    fail "$3: the buffered reader of slowfs has a role: $(jq -c --argjson p "$2" '.processes[] | select(.pid == $p) | .role' "$1" | sort -u | tr '\n' ' ')"
    return 0; }

# ---- 1. The waiter alone, asleep since before iotriage: sampled evidence ----
start_waiter
for mode in lens no-bpf; do
    opt=(); [ "$mode" = no-bpf ] && opt=(--no-bpf)
    "$IOT" --json "${opt[@]}" -n 4 -d 1 --record "$TMP/rec-$mode.jsonl" >"$TMP/a-$mode.json" 2>"$TMP/a-$mode.err" ||
        fail "$mode: iotriage --json failed: $(cat "$TMP/a-$mode.err")"
    n=$(named "$TMP/a-$mode.json" "$WAITER" sampled)
    [ "$n" -ge 2 ] || fail "$mode: io-pressure-not-block named the waiter in $n of 4 samples: $(jq -c '[.psi.io.some.pct, [.warnings[] | .code]]' "$TMP/a-$mode.json" | tr '\n' ' ')"
    ok "$mode, waiter older than iotriage: io-pressure-not-block names uringwait[$WAITER] (sampled) in $n of 4 samples"
    jq -e --argjson p "$WAITER" 'select(any(.warnings[]; .code == "io-pressure-not-block" and .pid == $p)) |
        .warnings[] | select(.code == "io-pressure-not-block" and .pid == $p) |
        .comm == "uringwait" and .device == null and (.text | test("uringwait\\[[0-9]+\\].*io_uring"))' \
        "$TMP/a-$mode.json" >/dev/null || fail "$mode: the warning does not name uringwait in its text, or names a device"
    no_role_no_saturation "$TMP/a-$mode.json" "$mode"
    ok "$mode: no role for the waiter, no device saturated"
    f=$(named_netfs "$TMP/a-$mode.json" "$NETFS")
    [ "$f" -ge 2 ] || fail "$mode: io-pressure-not-block named the buffered reader of slowfs in $f of 4 samples: $(jq -c --argjson p "$NETFS" '[.psi.io.some.pct, [.warnings[] | select(.code == "io-pressure-not-block") | .text], (.processes[] | select(.pid == $p) | [.io_delay_pct, .io_delay_source, .read_bps])]' "$TMP/a-$mode.json" | tr '\n' ' ')"
    netfs_evidence_ok "$TMP/a-$mode.json" "$NETFS" || fail "$mode: the slowfs reader's evidence is not measured with the lens, sampled without"
    no_role "$TMP/a-$mode.json" "$NETFS" "$mode"
    ok "$mode: io-pressure-not-block names dd[$NETFS] on fuse.slowfs at its mount in $f of 4 samples, no role"
    # The recording read back carries the same warning.
    "$IOT" --json --replay "$TMP/rec-$mode.jsonl" >"$TMP/r-$mode.json" 2>"$TMP/r-$mode.err" ||
        fail "$mode: replay failed: $(cat "$TMP/r-$mode.err")"
    r=$(named "$TMP/r-$mode.json" "$WAITER" sampled)
    [ "$r" = "$n" ] || fail "$mode: the replay names the waiter in $r samples, the live run in $n"
    r=$(named_netfs "$TMP/r-$mode.json" "$NETFS")
    [ "$r" = "$f" ] || fail "$mode: the replay names the slowfs reader in $r samples, the live run in $f"
    ok "$mode: the recording replayed names both in the same samples"
done
"$IOT" -b --no-bpf -n 3 -d 1 >"$TMP/b.txt" 2>&1 || fail "-b failed: $(tail -3 "$TMP/b.txt")"
grep -q "io-pressure-not-block.*uringwait\[$WAITER\].*(sampled" "$TMP/b.txt" ||
    fail "-b: no io-pressure-not-block line naming uringwait[$WAITER]: $(grep -A3 '^Warnings' "$TMP/b.txt")"
grep -q "io-pressure-not-block.*dd\[$NETFS\].*on fuse.slowfs at $LAB_MNT .*(sampled" "$TMP/b.txt" ||
    fail "-b: no io-pressure-not-block line naming dd[$NETFS] on fuse.slowfs: $(grep not-block "$TMP/b.txt")"
ok "-b prints the warning with its evidence, for both waiters"
"$IOT" export --textfile "$TMP/m.prom" -n 3 -d 1 >"$TMP/export.log" 2>&1 || fail "export failed: $(cat "$TMP/export.log")"
v=$(awk '/^iotriage_io_pressure_not_block\{evidence="sampled"\}/ { print $2 }' "$TMP/m.prom")
[ "${v:-0}" -ge 1 ] || fail "exporter: iotriage_io_pressure_not_block{evidence=\"sampled\"} is '${v:-absent}': $(grep not_block "$TMP/m.prom")"
ok "the exporter counts $v process(es) in iotriage_io_pressure_not_block{evidence=\"sampled\"}"
v=$(awk '/^iotriage_io_pressure_not_block\{/ { n += $2 } END { print n + 0 }' "$TMP/m.prom")
[ "$v" -ge 2 ] || fail "exporter: iotriage_io_pressure_not_block counts $v processes, not the waiter and the slowfs reader: $(grep not_block "$TMP/m.prom")"
ok "the exporter counts both waiters ($v)"
kill "$WAITER" 2>/dev/null; wait "$WAITER" 2>/dev/null

# ---- 2. The waiter started under the lens: measured; beside a reader in D ----------
bg dd if="$LAB_DEV" of=/dev/null bs=4k iflag=direct status=none
READER=$BG
wait_until 10 eval '[ "$(state_of "$READER")" = D ]' || fail "the reader never slept in D"
bg "$IOT" --json -n 7 -d 1 >"$TMP/c.json" 2>"$TMP/c.err"
IOTP=$BG
# (jq 1.6 -e exits 0 on no input: test the value read)
lens_on() { [ "$(head -n 1 "$1" 2>/dev/null | jq -r '.lens.on' 2>/dev/null)" = true ]; }
wait_until 30 lens_on "$TMP/c.json" ||
    skip_part "the lens did not load: $(head -c 300 "$TMP/c.err")"
start_waiter
T0=$(date +%s.%N)
wait "$IOTP" || fail "iotriage --json (lens) failed: $(cat "$TMP/c.err")"
if lens_on "$TMP/c.json"; then
    m=$(named "$TMP/c.json" "$WAITER" measured)
    [ "$m" -ge 2 ] || fail "lens: io-pressure-not-block (measured) named the waiter in $m intervals (started at $T0): $(jq -c --argjson p "$WAITER" '[.ts, .lens.on, .psi.io.some.pct, (.processes[] | select(.pid == $p) | [.io_delay_pct, .uring_wait_pct, .uring_wait_source])]' "$TMP/c.json" | tr '\n' ' ')"
    ok "lens, waiter started under it: named with measured evidence in $m intervals"
    # Its IODLY is not the wait: the lens takes the interruptible part out.
    jq -e --argjson p "$WAITER" 'select(any(.warnings[]; .code == "io-pressure-not-block" and .pid == $p)) |
        .processes[] | select(.pid == $p) | .uring_wait_pct >= 50 and .uring_wait_source == "bpf" and .io_delay_pct < 5' \
        "$TMP/c.json" >/dev/null || fail "lens: the waiter's io_delay_pct is not apart from its io_uring wait"
    ok "lens: its io_uring wait is uring_wait_pct, not io_delay_pct"
    # The synchronous reader in D: block iowait, no such warning.
    k=$(jq -c --argjson p "$READER" 'select(any(.processes[]; .pid == $p and .io_delay_pct >= 50 and .io_delay_source == "bpf" and (.uring_wait_pct // 0) < 5))' "$TMP/c.json" | wc -l)
    [ "$k" -ge 3 ] || fail "lens: the reader in D counted as block iowait in $k intervals: $(jq -c --argjson p "$READER" '.processes[] | select(.pid == $p) | [.io_delay_pct, .io_delay_source, .uring_wait_pct]' "$TMP/c.json" | tr '\n' ' ')"
    ok "lens: the reader in D is block iowait (io_delay_pct >= 50, bpf) in $k intervals"
fi
jq -e --argjson p "$READER" 'any(.warnings[]; .code == "io-pressure-not-block" and .pid == $p)' "$TMP/c.json" >/dev/null &&
    fail "lens: io-pressure-not-block names the reader in D"
jq -e --argjson p "$WAITER" 'any(.processes[]; .pid == $p and .role != null)' "$TMP/c.json" >/dev/null &&
    fail "lens: the waiter has a role beside the reader"
"$IOT" --json --no-bpf -n 4 -d 1 >"$TMP/d.json" 2>"$TMP/d.err" || fail "--no-bpf failed: $(cat "$TMP/d.err")"
s=$(named "$TMP/d.json" "$WAITER" sampled)
[ "$s" -ge 2 ] || fail "--no-bpf beside the reader: the waiter named in $s intervals"
jq -e --argjson p "$READER" 'any(.warnings[]; .code == "io-pressure-not-block" and .pid == $p)' "$TMP/d.json" >/dev/null &&
    fail "--no-bpf: io-pressure-not-block names the reader in D"
jq -e --argjson p "$WAITER" 'any(.processes[]; .pid == $p and .role != null)' "$TMP/d.json" >/dev/null &&
    fail "--no-bpf: the waiter has a role beside the reader"
for f in c d; do
    k=$(named_netfs "$TMP/$f.json" "$NETFS")
    [ "$k" -ge 2 ] || fail "$f.json: the slowfs reader named in $k intervals beside the O_DIRECT reader"
    no_role "$TMP/$f.json" "$NETFS" "$f.json"
done
ok "beside a reader in D (lens and --no-bpf): only the waiters are named (io_uring, slowfs), the O_DIRECT reader is not, the waiters have no role"
exit 0
