#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The tree shows the flow: no file includes a header of a layer above its own, in the
# order the README's layout section writes down (scripts/layers.sh). The check itself must
# be able to fail: a copy of the tree with one upward include, and one with a file in a
# folder no layer owns, are refused; and a file over 1,000 lines (a .bpf.c over 800).
. "$(dirname "$0")/lib.sh"
out=$("$ROOT/scripts/layers.sh" "$ROOT" 2>&1) || fail "$out"
ok "$out"

mkdir -p "$TMP/tree"
cp -r "$ROOT/src" "$ROOT/include" "$ROOT/README.md" "$TMP/tree/"
printf '#include "pipeline.h"\n' >>"$TMP/tree/src/source/psi.c"
out=$("$ROOT/scripts/layers.sh" "$TMP/tree" 2>&1) && fail "an upward include passed: $out"
grep -q 'src/source/psi.c (source) includes pipeline.h (pipeline): upward' <<<"$out" || fail "wrong report: $out"
ok "an upward include is refused: $out"

# The sample format sits below the recorder's files: a sample header that reaches up into
# the store (record/ held both once) is refused.
rm -rf "$TMP/tree"; mkdir -p "$TMP/tree"
cp -r "$ROOT/src" "$ROOT/include" "$ROOT/README.md" "$TMP/tree/"
printf '#include "store/replay.h"\n' >>"$TMP/tree/include/sample/sample.h"
out=$("$ROOT/scripts/layers.sh" "$TMP/tree" 2>&1) && fail "sample including store passed: $out"
grep -q 'include/sample/sample.h (sample) includes store/replay.h (store): upward' <<<"$out" ||
    fail "wrong report: $out"
ok "the sample format including the store is refused"

rm -rf "$TMP/tree"; mkdir -p "$TMP/tree"
cp -r "$ROOT/src" "$ROOT/include" "$ROOT/README.md" "$TMP/tree/"
mkdir -p "$TMP/tree/src/stray"; printf 'int x;\n' >"$TMP/tree/src/stray/x.c"
out=$("$ROOT/scripts/layers.sh" "$TMP/tree" 2>&1) && fail "a file of no layer passed: $out"
ok "a file in a folder no layer owns is refused"

rm -rf "$TMP/tree"; mkdir -p "$TMP/tree"
cp -r "$ROOT/src" "$ROOT/include" "$ROOT/README.md" "$TMP/tree/"
printf 'int x;\n' >"$TMP/tree/src/stray_x.c"
out=$("$ROOT/scripts/layers.sh" "$TMP/tree" 2>&1) && fail "a part of no layer's stem passed: $out"
ok "a top-level part of a stem no layer owns is refused"

rm -rf "$TMP/tree"; mkdir -p "$TMP/tree"
cp -r "$ROOT/src" "$ROOT/include" "$ROOT/README.md" "$TMP/tree/"
seq 1 1001 | sed 's#.*#/* & */#' >>"$TMP/tree/src/delta.c"
out=$("$ROOT/scripts/layers.sh" "$TMP/tree" 2>&1) && fail "a file over 1,000 lines passed: $out"
grep -q 'src/delta.c has [0-9]* lines (at most 1,000)' <<<"$out" || fail "wrong report: $out"
rm -rf "$TMP/tree"; mkdir -p "$TMP/tree"
cp -r "$ROOT/src" "$ROOT/include" "$ROOT/README.md" "$TMP/tree/"
seq 1 801 | sed 's#.*#/* & */#' >>"$(ls "$TMP"/tree/src/bpf/kern/*.bpf.c | head -n 1)"
out=$("$ROOT/scripts/layers.sh" "$TMP/tree" 2>&1) && fail "a .bpf.c over 800 lines passed: $out"
grep -q 'bpf.c has [0-9]* lines (a .bpf.c: at most 800)' <<<"$out" || fail "wrong report: $out"
ok "a file over 1,000 lines, and a .bpf.c over 800, are refused"
