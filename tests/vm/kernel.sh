#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# The VM lane's kernel: a Debian kernel package, downloaded with apt and unpacked under
# build/vm/KVER/ (vmlinuz, config, modules with modules.dep). Nothing is installed on the
# host. Prints KVER (e.g. 6.1.0-57-cloud-amd64) on stdout.
#   tests/vm/kernel.sh [PACKAGE-OR-KVER]   default linux-image-cloud-amd64
# A metapackage (linux-image-cloud-amd64) is followed to the image it depends on; a bare
# kernel release (6.1.0-57-cloud-amd64) means linux-image-RELEASE.
set -eu
spec=${1:-linux-image-cloud-amd64}
case $spec in linux-image-*) pkg=$spec ;; *) pkg=linux-image-$spec ;; esac
image() { apt-cache depends "$1" 2>/dev/null | awk '/Depends: linux-image-[0-9]/ { print $2; exit }'; }
known() { apt-cache show "$1" >/dev/null 2>&1; }
# A machine whose package lists are missing or old knows neither: read them once more.
known "$pkg" || apt-get update -qq >/dev/null 2>&1
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
    (cd "$dir/dl" && apt-get download "$pkg" >/dev/null 2>dl.err) || {
        apt-get update -qq >/dev/null 2>&1
        (cd "$dir/dl" && apt-get download "$pkg" >/dev/null 2>dl.err) || {
            echo "vm: cannot download $pkg: $(tail -n 1 "$dir/dl/dl.err")" >&2; exit 1; }
    }
    dpkg-deb -x "$dir"/dl/*.deb "$dir/x"
    mv "$dir/x/boot/vmlinuz-$kver" "$dir/vmlinuz"
    mv "$dir/x/boot/config-$kver" "$dir/config"
    mkdir -p "$dir/lib/modules"
    mv "$dir/x/lib/modules/$kver" "$dir/lib/modules/"
    rm -rf "$dir/x" "$dir/dl"
    /sbin/depmod -b "$dir" "$kver"
fi
echo "$kver"
