#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The VM lane (tests/vm/run.sh, docs/vm.md): Debian 12's own kernel under qemu with real
# drivers (null_blk, scsi_debug, NVMe, virtio-blk, device mapper, md) and the cgroup v2
# io controller, each guest test against its known truth. It fails when it cannot run:
# no qemu, no kernel package, a guest that hangs twice. KVER picks another kernel package.
. "$(dirname "$0")/lib.sh"
[ "$(id -u)" = 0 ] || skip "needs root (insmod, configfs, cgroups inside the guest are root's; apt-get download)"
cd "$ROOT" || exit 2
tests/vm/run.sh
