#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The VM lane never passes silently: no qemu, no kernel package and a guest that stops
# answering each fail it, the last after one more boot and with the console's tail.
. "$(dirname "$0")/lib.sh"
[ "$(id -u)" = 0 ] || skip "needs root"
cd "$ROOT" || exit 2
VM_QEMU=/nonexistent/qemu tests/vm/run.sh >"$TMP/noqemu" 2>&1 && fail "the lane passed without qemu: $(cat "$TMP/noqemu")"
grep -q 'qemu is missing' "$TMP/noqemu" || fail "no qemu, yet: $(cat "$TMP/noqemu")"
ok "no qemu: the lane fails and says so"
KVER=linux-image-0.0.0-none-amd64 tests/vm/run.sh >"$TMP/nokernel" 2>&1 && fail "the lane passed without a kernel"
grep -q 'no kernel to boot' "$TMP/nokernel" || fail "no kernel package, yet: $(cat "$TMP/nokernel")"
ok "no kernel package: the lane fails and says so"
VM_KEEP=$TMP/keep VM_SILENCE=10 tests/vm/run.sh selftest_hang >"$TMP/hang" 2>&1 && fail "a silent guest passed: $(cat "$TMP/hang")"
for want in 'guest killed after' 'booting once more for: selftest_hang' 'the guest failed again' \
            'console|' 'results| selftest: going quiet' '0 passed, 1 failed'; do
    grep -qF "$want" "$TMP/hang" || fail "a silent guest: no '$want' in: $(cat "$TMP/hang")"
done
[ "$(grep -c 'guest killed after' "$TMP/hang")" = 2 ] || fail "not killed twice: $(cat "$TMP/hang")"
ok "a silent guest: killed, booted once more, killed again, failed with its console's tail"
