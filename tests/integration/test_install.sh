#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# make install and make uninstall into a staging directory (DESTDIR) with a PREFIX: the
# program runs from there, the man page renders, the completion and unit files land where
# their tools look (unit files with ExecStart in the PREFIX); uninstall leaves nothing.
. "$(dirname "$0")/lib.sh"
dest=$TMP/stage
make -s -C "$ROOT" install DESTDIR="$dest" PREFIX=/opt/iot >"$TMP/log" 2>&1 || fail "make install: $(tail -n 5 "$TMP/log")"
bin=$dest/opt/iot/bin/iotriage
[ -x "$bin" ] || fail "no binary at $bin"
"$bin" --version | grep -q '^iotriage ' || fail "installed binary does not run"
[ -f "$dest/opt/iot/share/man/man8/iotriage.8" ] || fail "no man page"
if command -v man >/dev/null 2>&1; then
    MANWIDTH=80 man -l "$dest/opt/iot/share/man/man8/iotriage.8" 2>/dev/null | grep -q 'iotriage' || fail "man page does not render"
fi
for u in "$ROOT"/contrib/systemd/*.service; do
    [ -f "$u" ] || continue
    got=$dest/opt/iot/lib/systemd/system/$(basename "$u")
    [ -f "$got" ] || fail "unit $(basename "$u") not installed"
    grep -q '^ExecStart=/opt/iot/bin/iotriage' "$got" || fail "$(basename "$u"): ExecStart not in the PREFIX: $(grep ExecStart "$got")"
done
[ ! -f "$ROOT/contrib/bash-completion/iotriage" ] || [ -f "$dest/opt/iot/share/bash-completion/completions/iotriage" ] \
    || fail "completion not installed"
ok "installed: $(cd "$dest" && find . -type f | sort | tr '\n' ' ')"
make -s -C "$ROOT" uninstall DESTDIR="$dest" PREFIX=/opt/iot >"$TMP/log" 2>&1 || fail "make uninstall: $(tail -n 5 "$TMP/log")"
left=$(find "$dest" -type f)
[ -z "$left" ] || fail "uninstall left: $left"
ok "uninstalled: no file left"
