#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The Debian package (debian/, `make deb`, issue #38), built from the committed HEAD as
# scripts/deb.sh does (git archive: uncommitted changes are not in it):
#  - debian/control's Build-Depends are all in scripts/deps.sh's build list;
#  - lintian: no error, no warning (infos kept are overridden, with their reason);
#  - contents: /usr/sbin/iotriage printing the package's version, PIE with relro and
#    now binding, the shared libraries linked; man page, completion, alert rules,
#    example drop-in, both units with ExecStart in /usr/sbin; nothing under /etc;
#  - install of a previous build (this one repacked with a lower version), upgrade to
#    this one, debian/tests run against it, purge: in a throw-away root (an overlay of /
#    in a private mount namespace, chroot; upper layer on tmpfs), so the machine is not
#    touched. No enablement symlink, no iotriage process started by dpkg, and after purge
#    nothing named iotriage left (dpkg's own records and logs aside);
#  - with IOTRIAGE_DEB_REPRO=1 (make check-deb, run by .ci/run): a second build from
#    another directory, byte-identical (cmp);
#  - with IOTRIAGE_DEB_VM=1 (make check-deb): the packaged binary boots in the VM lane
#    on Debian 12's kernel 6.1 (tests/vm/guest/test_boot.sh, lens on).
. "$(dirname "$0")/lib.sh"
for t in git dpkg-buildpackage dh lintian dpkg-deb readelf unshare chroot jq curl; do need "$t"; done
git -C "$ROOT" rev-parse --verify -q HEAD >/dev/null || skip "not a git checkout (scripts/deb.sh exports HEAD)"
[ "$(id -u)" = 0 ] || skip "needs root (the install check mounts an overlay in a namespace)"

# Build-Depends against scripts/deps.sh: the packages it installs for `build`.
deps=$(sed -n 's/^pkgs="\(.*\)"$/\1/p' "$ROOT/scripts/deps.sh" | head -n 1)
[ -n "$deps" ] || fail "no build list in scripts/deps.sh"
bdeps=$(sed -n '/^Build-Depends:/,/^[A-Z]/p' "$ROOT/debian/control" | sed 's/^Build-Depends://; /^[A-Z]/d' |
        tr ',' '\n' | sed 's/(.*//; s/|.*//; s/[[:space:]]//g' | grep .)
for b in $bdeps; do
    [ "$b" = debhelper-compat ] && continue
    [[ " $deps " == *" $b "* ]] || fail "Build-Depends $b is not installed by scripts/deps.sh build"
done
ok "Build-Depends ($(echo $bdeps | wc -w)) all in scripts/deps.sh"

version=$(git -C "$ROOT" show HEAD:debian/changelog | awk -F'[()]' 'NR == 1 { print $2 }')
[ -n "$version" ] || fail "no version in HEAD's debian/changelog"
"$ROOT/scripts/deb.sh" "$TMP/b1" >"$TMP/b1.out" 2>&1 || { cat "$TMP/b1.out"; fail "make deb failed"; }
deb=$TMP/b1/iotriage_${version}_amd64.deb
[ -f "$deb" ] || fail "no $deb: $(ls "$TMP/b1")"
ok "built $(basename "$deb") ($(stat -c %s "$deb") bytes)"

# lintian: exit status 0 with --fail-on error,warning; print what it said.
lintian --fail-on error,warning -I "$deb" >"$TMP/lintian.out" 2>&1 || { cat "$TMP/lintian.out"; fail "lintian: errors or warnings"; }
ok "lintian: no error or warning ($(grep -c '^[EWIP]:' "$TMP/lintian.out") other tags)"

# Contents.
dpkg-deb -c "$deb" | awk '{ print $1, $6 }' >"$TMP/list"
for p in ./usr/sbin/iotriage ./usr/share/man/man8/iotriage.8.gz ./usr/share/bash-completion/completions/iotriage \
         ./lib/systemd/system/iotriage-record.service ./lib/systemd/system/iotriage-export.service \
         ./usr/share/iotriage/iotriage-rules.yml ./usr/share/doc/iotriage/copyright \
         ./usr/share/doc/iotriage/examples/iotriage-export-listen.conf; do
    grep -q " $p\$" "$TMP/list" || fail "$p not in the package"
done
! grep -q ' \./etc/' "$TMP/list" || fail "the package ships under /etc: $(grep ' ./etc/' "$TMP/list")"
! grep -q '^l' "$TMP/list" || fail "the package ships a symlink: $(grep '^l' "$TMP/list")"
dpkg-deb -x "$deb" "$TMP/x"
got=$("$TMP/x/usr/sbin/iotriage" --version) || fail "the packaged binary does not run"
[ "$got" = "iotriage $version" ] || fail "--version says '$got', the package is $version"
[ "$(dpkg-deb -f "$deb" Version)" = "$version" ] || fail "control Version is not $version"
readelf -h "$TMP/x/usr/sbin/iotriage" | grep -q 'Type:.*DYN' || fail "not PIE"
readelf -lW "$TMP/x/usr/sbin/iotriage" | grep -q GNU_RELRO || fail "no relro"
readelf -dW "$TMP/x/usr/sbin/iotriage" | grep -q 'FLAGS.*BIND_NOW' || fail "no -z now"
readelf -dW "$TMP/x/usr/sbin/iotriage" | grep -q 'NEEDED.*libbpf\.so' || fail "libbpf not linked as a shared library"
for u in iotriage-record iotriage-export; do
    grep -q '^ExecStart=/usr/sbin/iotriage ' "$TMP/x/lib/systemd/system/$u.service" || fail "$u: ExecStart not in /usr/sbin"
done
ok "contents: paths, version $version, PIE+relro+now, shared libbpf, units in /usr/sbin"

# A previous build: this one with a lower version, to upgrade from.
dpkg-deb -R "$deb" "$TMP/prev"
sed -i "s/^Version: .*/Version: ${version}~prev/" "$TMP/prev/DEBIAN/control"
dpkg-deb -b "$TMP/prev" "$TMP/prev.deb" >/dev/null || fail "could not repack the previous build"

# The throw-away root. The script below runs in it (as /cycle.sh), after the mounts.
mkdir -p "$TMP/ov"
# HEAD's debian/tests, as the package is HEAD's.
git -C "$ROOT" archive HEAD debian/tests | tar -x -C "$TMP" && mv "$TMP/debian/tests" "$TMP/tests"
cat >"$TMP/cycle.sh" <<'EOF'
#!/bin/bash
set -u
fail() { echo "FAIL: $*"; exit 1; }
me=$(stat -c %d:%i /)
started() { # iotriage processes whose root is this one (not the machine's, whose
    local p    # iotriage runs are other tests')
    for p in /proc/[0-9]*; do
        [ "$(cat "$p/comm" 2>/dev/null)" = iotriage ] && [ "$(stat -L -c %d:%i "$p/root/" 2>/dev/null)" = "$me" ] &&
            echo "${p#/proc/}"
    done
}
links() { find /etc/systemd -lname '*iotriage*' 2>/dev/null; }
cd /
dpkg -i /debs/prev.deb >/tmp/dpkg.out 2>&1 || { cat /tmp/dpkg.out; fail "install of the previous build"; }
[ -z "$(links)" ] || fail "enabled on install: $(links)"
[ -z "$(started)" ] || fail "started on install: $(started)"
[ "$(dpkg-query -W -f='${Version}' iotriage)" = "$1~prev" ] || fail "previous build not installed"
echo "installed $1~prev"
dpkg -i /debs/new.deb >/tmp/dpkg.out 2>&1 || { cat /tmp/dpkg.out; fail "upgrade"; }
[ "$(dpkg-query -W -f='${Version}' iotriage)" = "$1" ] || fail "not upgraded"
[ -z "$(links)" ] || fail "enabled on upgrade: $(links)"
[ -z "$(started)" ] || fail "started on upgrade: $(started)"
echo "upgraded to $1"
# debian/tests against the installed package (autopkgtest's protocol: 0 pass, 77 skip
# for the skippable ones), as root, with the package's own defaults.
mkdir -p /tmp/apt
for t in batch json audit exporter lens units; do
    rm -rf /tmp/apt/*
    env -u IOTRIAGE_STATE_FILE -u IOTRIAGE_RECORD_DIR AUTOPKGTEST_TMP=/tmp/apt \
        PATH=/usr/sbin:/usr/bin:/sbin:/bin /tests/"$t" >/tmp/t.out 2>&1; rc=$?
    if [ $rc = 0 ]; then echo "autopkgtest $t: pass: $(tail -n 1 /tmp/t.out)"
    elif [ $rc = 77 ] && [ "$t" = lens ]; then echo "autopkgtest $t: skipped: $(tail -n 1 /tmp/t.out)"
    else cat /tmp/t.out; fail "autopkgtest $t exited $rc"; fi
done
[ -z "$(started)" ] || fail "an iotriage left running by the tests: $(started)"
# Recordings and baselines as a recorder and root's runs leave them.
mkdir -p /var/lib/iotriage && echo x >/var/lib/iotriage/2026-01-01T00.zst
dpkg --purge iotriage >/tmp/dpkg.out 2>&1 || { cat /tmp/dpkg.out; fail "purge"; }
dpkg-query -W iotriage >/dev/null 2>&1 && fail "still known to dpkg after purge"
echo "purged"
EOF
chmod +x "$TMP/cycle.sh"
# shellcheck disable=SC2016
unshare -m --propagation private bash -c '
    set -e
    ov=$1 tmp=$2
    mount -t tmpfs -o size=512m tmpfs "$ov"
    mkdir "$ov/up" "$ov/work" "$ov/root"
    mount -t overlay overlay -o "lowerdir=/,upperdir=$ov/up,workdir=$ov/work" "$ov/root"
    m=$ov/root
    mount -t proc proc "$m/proc"
    mount --rbind /sys "$m/sys"
    mount --rbind /dev "$m/dev"
    mount -t tmpfs tmpfs "$m/tmp"
    mount -t tmpfs tmpfs "$m/run"
    # man-db'"'"'s trigger would rebuild the whole index: not what is tested here.
    rm -f "$m/var/lib/man-db/auto-update"
    mkdir -p "$m/debs" "$m/tests"
    cp "$tmp/prev.deb" "$m/debs/prev.deb"; cp "$3" "$m/debs/new.deb"
    cp "$tmp"/tests/* "$m/tests/"; cp "$tmp/cycle.sh" "$m/cycle.sh"
    rc=0; chroot "$m" /cycle.sh "$4" || rc=$?
    # What the cycle left in the root, but dpkg'"'"'s own records and logs, what this
    # script itself put there, and man'"'"'s cache of formatted pages (systemd-analyze
    # verify in debian/tests/units runs man for the units'"'"' Documentation=, and man
    # keeps a formatted copy where /var/cache/man/cat8 exists: man-db'"'"'s, not ours).
    (cd "$ov/up" && find . -mindepth 1 \( -path ./var/lib/dpkg -o -path ./var/log -o -path ./var/cache/debconf \
        -o -path ./var/cache/man \
        -o -path ./debs -o -path ./tests -o -path ./cycle.sh -o -path ./var/lib/man-db/auto-update \) -prune \
        -o ! -type c -print) >"$tmp/left"    # (a character device there is a whiteout: removed)
    exit $rc
' cycle "$TMP/ov" "$TMP" "$deb" "$version" >"$TMP/cycle.out" 2>&1
rc=$?
cat "$TMP/cycle.out"
[ $rc = 0 ] || fail "install/upgrade/tests/purge cycle failed"
# In the upper layer, a directory the machine has too is only there because dpkg
# touched it; anything else was left behind.
left=
while IFS= read -r p; do
    if [ -d "/${p#./}" ] && [ ! -L "/${p#./}" ]; then
        case $p in *iotriage*) left="$left $p" ;; esac
    else
        left="$left $p"
    fi
done <"$TMP/left"
[ -z "$left" ] || fail "left after purge:$left"
ok "install, upgrade, debian/tests, purge in a throw-away root: nothing left but dpkg's records"

if [ "${IOTRIAGE_DEB_REPRO:-0}" = 1 ]; then
    "$ROOT/scripts/deb.sh" "$TMP/b2" >"$TMP/b2.out" 2>&1 || { cat "$TMP/b2.out"; fail "second build failed"; }
    if ! cmp "$deb" "$TMP/b2/iotriage_${version}_amd64.deb"; then
        dpkg-deb -x "$TMP/b2/iotriage_${version}_amd64.deb" "$TMP/x2"
        diff -r "$TMP/x" "$TMP/x2" | head -n 5
        fail "two builds of one commit differ"
    fi
    ok "reproducible: a second build from $TMP/b2 is byte-identical"
else
    ok "reproducibility not checked here (make check-deb sets IOTRIAGE_DEB_REPRO=1)"
fi

# With IOTRIAGE_DEB_VM=1 (make check-deb): the packaged binary on Debian 12's own kernel,
# the VM lane's boot test (tests/vm/run.sh with VM_BIN; it needs the helpers built).
if [ "${IOTRIAGE_DEB_VM:-0}" = 1 ]; then
    (cd "$ROOT" && VM_BIN="$TMP/x/usr/sbin/iotriage" tests/vm/run.sh test_boot) >"$TMP/vm.out" 2>&1 ||
        { cat "$TMP/vm.out"; fail "the VM lane's test_boot with the packaged binary"; }
    ok "VM lane: $(grep -m1 '^      | ok:' "$TMP/vm.out" | sed 's/^ *| ok: //')"
fi
