#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# The VM lane's initramfs: busybox-static as the shell and tools, the built iotriage and
# the test helpers, fio, dmsetup, mdadm, jq and tmux with the libraries ldd names, the guest
# scripts (tests/vm/guest/) and the modules the guest tests load, each with the modules it
# depends on (in insmod order, from the kernel's own modules.dep). An uncompressed cpio:
# under TCG the kernel copies it faster than it would inflate it.
#   tests/vm/initramfs.sh KVER OUT.cpio [BINARY]   (BINARY: the iotriage to test, ./iotriage)
set -eu
kver=$1 out=$2 bin=${3:-./iotriage}
kdir=build/vm/$kver
stage=$(mktemp -d "${TMPDIR:-/tmp}/iotriage-vm-initrd.XXXXXX")
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/bin" "$stage/lib" "$stage/lib64" "$stage/etc" "$stage/iot/build/tests" \
    "$stage/iot/tests/lab" "$stage/iot/tests/vm/guest" \
    "$stage/proc" "$stage/sys" "$stage/dev" "$stage/tmp" "$stage/run" "$stage/mnt"

# Programs (each with what the dynamic loader needs) and busybox for everything else.
add_prog() {
    [ -x "$1" ] || { echo "vm: $1 is missing (scripts/deps.sh test installs it)" >&2; exit 1; }
    cp -L "$1" "$stage/bin/${2:-$(basename "$1")}"
    ldd "$1" 2>/dev/null | awk '$3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }' |
    while read -r lib; do
        case $lib in
        /lib64/*) cp -Ln "$lib" "$stage/lib64/" ;;
        *) cp -Ln "$lib" "$stage/lib/" ;;
        esac
    done
}
cp /bin/busybox "$stage/bin/busybox"
# The project's tree as the tests know it, under /iot: the binary at its root, the
# helpers in build/tests/, the lab disk's script in tests/lab/ (the guest tests source it).
add_prog "$bin" iotriage
mv "$stage/bin/iotriage" "$stage/iot/iotriage"
for h in taskhelper slowfs loopctl; do
    add_prog "build/tests/$h"; mv "$stage/bin/$h" "$stage/iot/build/tests/$h"
done
cp tests/lab/lab.sh "$stage/iot/tests/lab/"
mkdir -p "$stage/iot/tests/integration"
cp tests/integration/lib_tmux.sh "$stage/iot/tests/integration/"
add_prog /bin/bash
add_prog /sbin/losetup
add_prog /bin/fusermount3
add_prog /usr/bin/fio
add_prog /usr/sbin/dmsetup
add_prog /usr/sbin/mdadm
add_prog /usr/bin/jq
# tmux for the screen's tests (test_stack_switch), with the terminal descriptions it and
# iotriage (ncurses) look up: the pane's (tmux's default, screen) and the outer one's
for t in s/screen s/screen-256color t/tmux t/tmux-256color x/xterm x/xterm-256color; do
    mkdir -p "$stage/lib/terminfo/${t%/*}"
    cp "/lib/terminfo/$t" "$stage/lib/terminfo/$t"
done
add_prog /usr/bin/tmux
# tmux runs only in a UTF-8 locale: glibc's C.UTF-8 (libc-bin's, 400 KB)
mkdir -p "$stage/usr/lib/locale"
cp -r /usr/lib/locale/C.utf8 "$stage/usr/lib/locale/"
printf '/lib\n' >"$stage/etc/ld.so.conf"
# The lens and the task iterator need nothing else: BTF is the kernel's own.

# Modules, in insmod order, each once; built-in ones are skipped (modprobe says "builtin").
: >"$stage/etc/modules.order"
for m in configfs null_blk scsi_debug sd_mod virtio_blk virtio_pci nvme dm-mod dm-crypt xts \
         aesni-intel raid0 raid1 raid456 mq-deadline bfq kyber-iosched loop fuse; do
    /sbin/modprobe -d "$kdir" -S "$kver" --show-depends "$m" 2>/dev/null |
    awk '$1 == "insmod" { print $2 }'
done | awk '!seen[$0]++' | while read -r ko; do
    rel=${ko#"$PWD/$kdir"}
    rel=${rel#"$kdir"}
    mkdir -p "$stage$(dirname "$rel")"
    cp "$ko" "$stage$rel"
    echo "$rel" >>"$stage/etc/modules.order"
done
[ -s "$stage/etc/modules.order" ] || { echo "vm: no modules found for $kver" >&2; exit 1; }

cp tests/vm/guest/init "$stage/init"
cp tests/vm/guest/*.sh "$stage/iot/tests/vm/guest/"
chmod 0755 "$stage/init" "$stage"/iot/tests/vm/guest/*.sh
(cd "$stage" && find . | LC_ALL=C sort | cpio -o -H newc --quiet) >"$out.tmp"
mv "$out.tmp" "$out"
