#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# Install the Debian packages iotriage needs to build and test, only those missing.
# Needs root (apt-get). Set IOTRIAGE_NO_APT=1 to skip (you install them yourself).
#   scripts/deps.sh build   libraries and tools to build ./iotriage
#   scripts/deps.sh test    the above plus what the test suite and `make bench` drive
#                           (iotop-c and htop to compare with, gnuplot-nox for the plot,
#                           btrfs-progs for test_lens_attrib's btrfs over a loop device,
#                           liburing-dev for test_psi_uring's idle io_uring service;
#                           for the VM lane, tests/vm/: qemu-system-x86 to boot Debian's
#                           kernel, busybox-static as the guest's tools, kmod's depmod and
#                           modprobe to order its modules, cpio for the initramfs, mdadm
#                           for md RAID in the guest; and what `scripts/deps.sh deb`
#                           adds, since make check builds the package too)
#   scripts/deps.sh deb     the build packages plus the Debian packaging tools: debhelper
#                           and dpkg-dev (dpkg-buildpackage), lintian, autopkgtest, and jq
#                           and curl that debian/tests use (make deb, make check-deb)
# The build packages are debian/control's Build-Depends (tests/integration/test_deb.sh
# checks that every one of them is in this list).
set -eu
what=${1:-build}
pkgs="gcc make pkg-config libncurses-dev libproc2-dev libnl-3-dev libnl-genl-3-dev libmicrohttpd-dev libzstd-dev clang libbpf-dev libelf-dev zlib1g-dev bpftool"
debpkgs="debhelper dpkg-dev lintian autopkgtest jq curl"
if [ "$what" = deb ]; then
    pkgs="$pkgs $debpkgs"
fi
if [ "$what" = test ]; then
    pkgs="$pkgs clang libcmocka-dev libfuse3-dev fuse3 fio sysstat tmux util-linux procps jq strace libclang-rt-14-dev prometheus prometheus-node-exporter curl python3 systemd zstd iotop-c htop gnuplot-nox btrfs-progs liburing-dev qemu-system-x86 busybox-static kmod cpio mdadm xz-utils $debpkgs"
fi
missing=""
for p in $pkgs; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
if [ "${IOTRIAGE_NO_APT:-0}" = 1 ]; then
    echo "deps: missing packages:$missing (IOTRIAGE_NO_APT=1, not installing)" >&2
    exit 1
fi
if [ "$(id -u)" != 0 ]; then
    echo "deps: missing packages:$missing; run as root (sudo) to install them" >&2
    exit 1
fi
echo "deps: installing$missing" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >/dev/null || apt-get update
# shellcheck disable=SC2086
apt-get install -y -qq --no-install-recommends $missing >/dev/null
