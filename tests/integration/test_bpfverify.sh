#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# What the verifier does to load the BPF lens (issue 19; docs/performance.md, "The
# lens's load: verification"), through build/bench/bpfverify, which loads the lens object
# at log level 4 and prints per program the instructions the verifier processed.
#   With the read-only globals the loader sets (lens_submits=1 lens_wb_split=1), every
#   program of the object loads, and the total and each program's count of processed
#   instructions stay under a bound: deterministic for one kernel and object, the bound
#   (about twice what the lens takes on 6.18) fails when a change makes the verifier
#   walk the paths again (the lens took 29,759 in all, 13,537 for one program, before
#   its branchy helpers became global functions);
#   with lens_submits=0 the submitter's code is dead to the verifier: lens_bio_queue
#   processes fewer instructions than with it on (the globals reach the kernel);
#   an unknown global is refused (exit 2), and no program is loaded for it.
# No time is asserted (timings go to `make bench-verify`).
. "$(dirname "$0")/lib.sh"
[ "$(id -u)" = 0 ] || skip "needs root (BPF)"
[ -r /sys/kernel/btf/vmlinux ] || skip "no kernel BTF: the lens cannot load"
BV=$ROOT/build/bench/bpfverify
OBJ=$ROOT/build/bpf/iotriage.bpf.o
[ -x "$BV" ] || fail "make build/bench/bpfverify first"
[ -r "$OBJ" ] || fail "build ./iotriage first ($OBJ missing)"
TOTAL_MAX=15000         # processed instructions, all programs
PROG_MAX=4000           # the largest program

"$BV" "$OBJ" lens_submits=1 lens_wb_split=1 >"$TMP/on" 2>"$TMP/on.err" ||
    { cat "$TMP/on" "$TMP/on.err" >&2; fail "bpfverify: the lens did not load"; }
cat "$TMP/on"
grep -q 'not loaded' "$TMP/on" && fail "a program was not loaded"
read -r n loaded < <(awk '$1 == "programs" { print $2, $4 }' "$TMP/on")
[ -n "${n:-}" ] && [ "$n" -ge 10 ] && [ "$n" = "$loaded" ] ||
    fail "programs loaded: ${loaded:-?} of ${n:-?}"
ok "all $n programs of the lens load"

total=$(awk '$1 == "total" { print $2 }' "$TMP/on")
[ -n "$total" ] && [ "$total" -gt 0 ] || fail "no total of processed instructions"
[ "$total" -le "$TOTAL_MAX" ] ||
    fail "the verifier processed $total instructions in all (bound $TOTAL_MAX)"
ok "$total instructions processed in all (bound $TOTAL_MAX)"
big=$(awk 'NR > 1 && $1 ~ /^lens_/ && $2 > max { max = $2; name = $1 } END { print name, max + 0 }' "$TMP/on")
[ "${big##* }" -le "$PROG_MAX" ] || fail "$big instructions processed (bound $PROG_MAX)"
ok "the largest program: $big (bound $PROG_MAX)"

"$BV" "$OBJ" lens_submits=0 lens_wb_split=0 >"$TMP/off" 2>"$TMP/off.err" ||
    { cat "$TMP/off.err" >&2; fail "bpfverify: the lens did not load without submits"; }
q_on=$(awk '$1 == "lens_bio_queue" { print $2 }' "$TMP/on")
q_off=$(awk '$1 == "lens_bio_queue" { print $2 }' "$TMP/off")
[ -n "$q_on" ] && [ -n "$q_off" ] && [ "$q_off" -lt "$q_on" ] ||
    fail "lens_bio_queue: ${q_off:-?} instructions without submits, ${q_on:-?} with them"
ok "lens_bio_queue: $q_off instructions without submits, $q_on with them"

# The object the light loader tries first on 6.2 and later (kern_types.h: UNTRUSTED, the
# block layer read through bpf_rdonly_cast): every program loads, within the same bounds.
CAST=$ROOT/build/bpf/cast/iotriage.bpf.o
IFS=. read -r kmaj kmin _ <<<"$(uname -r)"
if [ "$kmaj" -gt 6 ] || { [ "$kmaj" = 6 ] && [ "${kmin%%[!0-9]*}" -ge 2 ]; }; then
    [ -r "$CAST" ] || fail "build ./iotriage first ($CAST missing)"
    "$BV" "$CAST" lens_submits=1 lens_wb_split=1 >"$TMP/cast" 2>"$TMP/cast.err" ||
        { cat "$TMP/cast" "$TMP/cast.err" >&2; fail "bpfverify: the untrusted-read lens did not load"; }
    grep -q 'not loaded' "$TMP/cast" && fail "an untrusted-read program was not loaded"
    read -r cn cloaded < <(awk '$1 == "programs" { print $2, $4 }' "$TMP/cast")
    [ "${cn:-x}" = "$n" ] && [ "$cn" = "${cloaded:-}" ] || fail "untrusted reads: programs loaded: ${cloaded:-?} of ${cn:-?}"
    ctotal=$(awk '$1 == "total" { print $2 }' "$TMP/cast")
    [ -n "$ctotal" ] && [ "$ctotal" -gt 0 ] && [ "$ctotal" -le "$TOTAL_MAX" ] ||
        fail "untrusted reads: ${ctotal:-?} instructions processed in all (bound $TOTAL_MAX)"
    ok "the untrusted-read lens: all $cn programs load, $ctotal instructions in all"
fi

"$BV" "$OBJ" no_such_global=1 >"$TMP/bad" 2>&1
rc=$?
[ "$rc" = 2 ] || fail "an unknown global: exit $rc, not 2"
grep -q 'total' "$TMP/bad" && fail "an unknown global: programs were loaded"
ok "an unknown global is refused"
exit 0
