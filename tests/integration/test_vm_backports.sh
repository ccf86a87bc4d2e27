#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The VM lane's second kernel (docs/vm.md): bookworm-backports' cloud kernel (6.12 in
# 2026), the newest a Debian 12 machine can run, with the stack tests (verdicts, bytes
# and the switch dialog through dm and md). What changed between it and 6.1 that
# iotriage must follow is measured here, not only read from the source: dm-crypt's
# encrypted writes keep the writer's priority from 6.9 (test_stack: idle at the disk on
# 6.12, none on 6.1, and the layer still named under bfq, which reads the submitting
# thread's), a bio-based device has no scheduler file, mq-deadline is a module. Fails
# like test_vm when it cannot run (the kernel package not reachable).
. "$(dirname "$0")/lib.sh"
[ "$(id -u)" = 0 ] || skip "needs root (insmod, configfs, cgroups inside the guest are root's; apt-get download)"
cd "$ROOT" || exit 2
# VM_QUICK: test_stack's crypt reader under bfq and none only (all four on 6.1)
KVER=backports VM_QUICK=1 tests/vm/run.sh test_boot,test_stack,test_stack_switch || exit 1
