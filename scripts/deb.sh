#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# Build the Debian package from a clean export of the committed tree (make deb).
#   scripts/deb.sh OUTDIR
# The committed HEAD (git archive, so neither uncommitted changes nor build products get
# in, and the working tree is not touched) is unpacked in OUTDIR/iotriage-VERSION and
# built there with `dpkg-buildpackage -us -uc -b`; the .deb, .buildinfo and .changes land
# in OUTDIR. The export's path is the same on every build, and dpkg-buildpackage sets
# SOURCE_DATE_EPOCH from debian/changelog: two builds of one commit give the same bytes.
set -eu
out=${1:?usage: scripts/deb.sh OUTDIR}
cd "$(dirname "$0")/.."
command -v dpkg-buildpackage >/dev/null 2>&1 && command -v dh >/dev/null 2>&1 ||
    { echo "deb: dpkg-buildpackage and debhelper missing (scripts/deps.sh deb)" >&2; exit 1; }
git rev-parse --verify -q HEAD >/dev/null ||
    { echo "deb: not a git checkout: run dpkg-buildpackage -us -uc -b in the tree itself" >&2; exit 1; }
version=$(git show HEAD:debian/changelog | sed -n '1s/^iotriage (\([^)]*\)).*/\1/p')
[ -n "$version" ] || { echo "deb: no version in debian/changelog" >&2; exit 1; }
mkdir -p "$out"
out=$(cd "$out" && pwd)
src=$out/iotriage-$version
rm -rf "$src"
mkdir -p "$src"
git archive --format=tar HEAD | tar -x -C "$src"
rm -f "$out"/iotriage_"$version"_*.deb "$out"/iotriage-dbgsym_"$version"_*.deb \
      "$out"/iotriage_"$version"_*.buildinfo "$out"/iotriage_"$version"_*.changes
(cd "$src" && DEB_BUILD_OPTIONS="parallel=${DEB_JOBS:-2} ${DEB_BUILD_OPTIONS:-}" \
    dpkg-buildpackage -us -uc -b) >"$out/build.log" 2>&1 ||
    { tail -n 30 "$out/build.log" >&2; echo "deb: dpkg-buildpackage failed (log $out/build.log)" >&2; exit 1; }
rm -rf "$src"
ls "$out"/iotriage_"$version"_*.deb
