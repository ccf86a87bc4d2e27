#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The project can be shipped: a LICENSE with the GPL version 2's text, an SPDX line in the
# first two lines of every source, header, script and makefile git tracks (the same
# identifier everywhere, compatible with the "GPL" the BPF programs declare to the
# kernel), and debian/copyright and the README naming it. And commit subjects after
# 9ca89cb (issue #37's "from now on") fit in 72 characters, the why in the body.
# Each check must be able to fail: a copy of a file without its line is refused.
. "$(dirname "$0")/lib.sh"
need git
cd "$ROOT" || fail "no $ROOT"
git rev-parse --git-dir >/dev/null 2>&1 || skip "not a git checkout (a release tarball): the file list comes from git"
ID=GPL-2.0-or-later

head -n 4 LICENSE | grep -q 'GNU GENERAL PUBLIC LICENSE' && grep -q '^ *Version 2, June 1991' LICENSE ||
    fail "LICENSE is not the GPL version 2's text"
grep -q "^License: GPL-2+" debian/copyright || fail "debian/copyright does not say GPL-2+"
grep -q "$ID" README.md || fail "the README does not name the licence ($ID)"
grep -q 'SEC("license") = "GPL"' src/bpf/kern/*.bpf.c || fail "the BPF programs no longer declare GPL"
ok "LICENSE is the GPL version 2, debian/copyright and the README say $ID, the BPF programs GPL"

# sources FILE...: the tracked files that must carry the line
sources() {
    git ls-files | grep -E '\.(c|h|sh|mk|py)$|(^|/)Makefile$|^\.ci/run$|^debian/(rules|iotriage\.(postinst|postrm|prerm)|tests/[a-z]+)$|^contrib/bash-completion/' |
        grep -v '^debian/tests/control$' | grep -v '^tests/fixtures/.*\.[ch]$'
}
# lacking DIR: the files under DIR (a checkout) without the line in their first two
lacking() {
    local f
    while read -r f; do
        head -n 2 "$1/$f" | grep -q "SPDX-License-Identifier: $ID\b" || echo "$f"
    done < <(sources)
}
n=$(sources | wc -l)
[ "$n" -gt 300 ] || fail "only $n sources listed: the list is wrong"
miss=$(lacking .)
[ -z "$miss" ] || fail "without an SPDX line ($ID) in their first two lines: $(echo "$miss" | tr '\n' ' ')"
ok "$n sources, each with its SPDX line"

mkdir -p "$TMP/tree/src"
git ls-files -z | xargs -0 cp --parents -t "$TMP/tree" 2>/dev/null
sed -i 1d "$TMP/tree/src/delta.c"
miss=$(lacking "$TMP/tree")
[ "$miss" = src/delta.c ] || fail "a file without its line passed: '$miss'"
ok "a source without its line is found ($miss)"

long=$(git log --format='%s' 9ca89cb..HEAD | awk 'length($0) > 72')
[ -z "$long" ] || fail "commit subjects over 72 characters: $long"
ok "$(git rev-list --count 9ca89cb..HEAD) commits since 9ca89cb, every subject within 72 characters"
