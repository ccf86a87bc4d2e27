#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# The VM lane's kernel: a Debian kernel package, downloaded with apt and unpacked under
# build/vm/KVER/ (vmlinuz, config, modules with modules.dep). Nothing is installed on the
# host. Prints KVER (e.g. 6.1.0-57-cloud-amd64) on stdout.
#   tests/vm/kernel.sh [PACKAGE-OR-KVER]   default linux-image-cloud-amd64
# A metapackage (linux-image-cloud-amd64) is followed to the image it depends on; a bare
# kernel release (6.1.0-57-cloud-amd64) means linux-image-RELEASE. "backports" means
# bookworm-backports' newest cloud kernel (6.12 in 2026), the lane's second kernel.
# A package the machine's own package lists do not know (a backports kernel) is looked
# up in bookworm-backports through package lists of the lane's own, under build/vm/apt:
# the machine's apt sources stay as they are.
set -eu
spec=${1:-linux-image-cloud-amd64}
APT=
if [ "$spec" = backports ]; then
    spec=linux-image-cloud-amd64 APT=bpo
fi
case $spec in linux-image-*) pkg=$spec ;; *) pkg=linux-image-$spec ;; esac
# bpo_lists: the lane's own package lists of bookworm-backports; $APT then holds the
# options that make apt read them (and no other list).
bpo_lists() {
    a=$PWD/build/vm/apt
    mkdir -p "$a/lists/partial" "$a/cache/archives/partial"
    echo "deb http://deb.debian.org/debian bookworm-backports main" >"$a/sources.list"
    APT="-o Dir::Etc::SourceList=$a/sources.list -o Dir::Etc::SourceParts=/dev/null"
    APT="$APT -o Dir::State::Lists=$a/lists -o Dir::Cache=$a/cache"
    # shellcheck disable=SC2086
    apt-get $APT update -qq >/dev/null 2>&1 || { echo "vm: cannot read bookworm-backports' package lists" >&2; exit 1; }
}
# shellcheck disable=SC2086
image() { apt-cache $APT depends "$1" 2>/dev/null | awk '/Depends: linux-image-[0-9]/ { print $2; exit }'; }
# shellcheck disable=SC2086
known() { apt-cache $APT show "$1" >/dev/null 2>&1; }
if [ "$APT" = bpo ]; then
    bpo_lists
else
    # A machine whose package lists are missing or old knows neither: read them once
    # more; still unknown, it may be a backports kernel.
    known "$pkg" || apt-get update -qq >/dev/null 2>&1
    known "$pkg" || bpo_lists
fi
dep=$(image "$pkg")
[ -n "$dep" ] && pkg=$dep
kver=${pkg#linux-image-}
case $kver in
[0-9]*) ;;
*) echo "vm: $spec: no kernel image package (apt-cache depends $pkg names none)" >&2; exit 1 ;;
esac
dir=build/vm/$kver
if [ ! -f "$dir/vmlinuz" ] || [ ! -f "$dir/lib/modules/$kver/modules.dep" ]; then
    rm -rf "$dir" && mkdir -p "$dir/dl"
    # shellcheck disable=SC2086
    (cd "$dir/dl" && apt-get $APT download "$pkg" >/dev/null 2>dl.err) || {
        [ -n "$APT" ] || apt-get update -qq >/dev/null 2>&1
        # shellcheck disable=SC2086
        (cd "$dir/dl" && apt-get $APT download "$pkg" >/dev/null 2>dl.err) || {
            echo "vm: cannot download $pkg: $(tail -n 1 "$dir/dl/dl.err")" >&2; exit 1; }
    }
    dpkg-deb -x "$dir"/dl/*.deb "$dir/x"
    mv "$dir/x/boot/vmlinuz-$kver" "$dir/vmlinuz"
    mv "$dir/x/boot/config-$kver" "$dir/config"
    mkdir -p "$dir/lib/modules"
    mv "$dir/x/lib/modules/$kver" "$dir/lib/modules/"
    rm -rf "$dir/x" "$dir/dl"
    # Newer kernels' modules come compressed (6.12: .ko.xz); busybox's insmod reads a bare
    # ELF file only, so they are unpacked here, and modules.dep names them as .ko.
    find "$dir/lib/modules" -name '*.ko.xz' -exec xz -d {} +
    find "$dir/lib/modules" -name '*.ko.zst' -exec zstd -q --rm -d {} +
    /sbin/depmod -b "$dir" "$kver"
fi
echo "$kver"
