#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# contrib/systemd/iotriage-record.service passes `systemd-analyze verify` offline (PID 1
# need not be systemd) with no message at all: systemd loads a unit with a bad setting and
# only says "..., ignoring", so any output is a failure. ExecStart points at a copy of the
# built binary and MANPATH at the man page, so that verify checks both for real. A broken
# copy (an out-of-range Nice, a misspelt I/O class) must make the same check fail.
# `systemd-analyze security --offline` must keep rating the unit's exposure "OK" or better
# (at most 5.0) and see the capability bounding set the unit's comment justifies.
. "$(dirname "$0")/lib.sh"

need systemd-analyze
UNIT="$ROOT/contrib/systemd/iotriage-record.service"
[ -f "$UNIT" ] || fail "$UNIT missing"
mkdir -p "$TMP/units" "$TMP/bin" "$TMP/man/man8"
cp "$IOT" "$TMP/bin/iotriage"
cp "$ROOT/docs/iotriage.8" "$TMP/man/man8/iotriage.8"
U="$TMP/units/iotriage-record.service"
grep -q '^ExecStart=/usr/local/bin/iotriage record$' "$UNIT" || fail "ExecStart is not /usr/local/bin/iotriage record"
sed "s|^ExecStart=/usr/local/bin/iotriage|ExecStart=$TMP/bin/iotriage|" "$UNIT" >"$U"

verify() { # UNIT-FILE -> output in $TMP/verify.out, status returned
    MANPATH="$TMP/man" SYSTEMD_LOG_COLOR=0 systemd-analyze verify "$1" >"$TMP/verify.out" 2>&1
}
verify "$U" || { cat "$TMP/verify.out" >&2; fail "systemd-analyze verify failed"; }
[ ! -s "$TMP/verify.out" ] || { cat "$TMP/verify.out" >&2; fail "systemd-analyze verify printed messages"; }
ok "systemd-analyze verify: no message"

# The check can fail: a setting systemd ignores is caught.
sed 's/^Nice=10$/Nice=50/; s/^IOSchedulingClass=best-effort$/IOSchedulingClass=Idle/' "$U" >"$TMP/units/broken.service"
cmp -s "$U" "$TMP/units/broken.service" && fail "could not make the broken copy (Nice/IOSchedulingClass lines changed?)"
verify "$TMP/units/broken.service"
grep -q 'ignoring' "$TMP/verify.out" || { cat "$TMP/verify.out" >&2; fail "verify did not catch a broken copy"; }
ok "a broken copy is caught: $(head -n 1 "$TMP/verify.out" | sed 's|.*service:||')"

if systemd-analyze security --offline=yes "$U" >"$TMP/sec.out" 2>&1; then
    score=$(sed -n 's/.*Overall exposure level for [^:]*: \([0-9.]*\).*/\1/p' "$TMP/sec.out")
    [ -n "$score" ] || { tail -n 5 "$TMP/sec.out" >&2; fail "no exposure level in systemd-analyze security"; }
    awk -v s="$score" 'BEGIN { exit !(s <= 5.0) }' || fail "exposure $score, above 5.0"
    # What it may keep: exactly the five capabilities of the comment.
    caps=$(sed -n 's/^CapabilityBoundingSet=//p' "$UNIT")
    [ "$caps" = "CAP_DAC_READ_SEARCH CAP_SYS_PTRACE CAP_NET_ADMIN CAP_BPF CAP_PERFMON" ] ||
        fail "capability bounding set changed: $caps (update the comment and this test)"
    grep -q '✗ CapabilityBoundingSet=~CAP_SYS_ADMIN' "$TMP/sec.out" && fail "CAP_SYS_ADMIN is kept"
    ok "systemd-analyze security --offline: exposure $score"
else
    ok "systemd-analyze security --offline not supported here; skipped that part"
fi
