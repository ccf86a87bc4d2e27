#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# Check the include graph of src/ and include/ against the layer order written in the
# README's layout section (the line that starts with "Layers, lowest first:"): a file may
# include headers of its own layer and of the layers below it, never of one above.
# And no file over 1,000 lines (a .bpf.c over 800): a room too big to live in.
# Usage: scripts/layers.sh [ROOT]   (ROOT: a checkout; default: this one). Exit 1 on an
# upward include or a file no layer owns. A top-level file STEM_PART.c (a part of a split
# STEM.c) belongs to layer STEM.
set -eu
root=${1:-$(dirname "$0")/..}
cd "$root"
order=$(sed -n 's/^ *Layers, lowest first: *//p' README.md | head -n 1 | tr -d '`.')
[ -n "$order" ] || { echo "layers: README.md has no 'Layers, lowest first:' line" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
find src include \( -name '*.c' -o -name '*.h' \) ! -name '*.bpf.c' | sort >"$tmp/files"
# Every header that exists, so that generated or system headers are left out.
find include -name '*.h' | sed 's#^include/##' | sort >"$tmp/hdrs"
awk -v order="$order" '
function layer_of(p) {
    sub(/^src\//, "", p); sub(/^include\//, "", p)
    if (p == "util.h" || p ~ /^util\//) return "util"
    if (p == "main.c") return "main"
    if (p ~ /\//) { sub(/\/.*/, "", p); return p }
    sub(/\.[ch]$/, "", p)
    # A top-level file split in parts (verdict_cgroup.c) belongs to the layer of its stem.
    if (!(p in rank) && p ~ /_/) { q = p; sub(/_.*/, "", q); if (q in rank) return q }
    return p
}
BEGIN { n = split(order, L, " "); for (i = 1; i <= n; i++) rank[L[i]] = i; bad = 0 }
FNR == NR { hdr[$0] = 1; next }
{ files[++nf] = $0 }
END {
    for (k = 1; k <= nf; k++) {
        f = files[k]; fl = layer_of(f)
        if (!(fl in rank)) { printf "layers: %s: layer '\''%s'\'' is not in the README'\''s order (%s)\n", f, fl, order > "/dev/stderr"; bad = 1; continue }
        while ((getline line < f) > 0) {
            if (line !~ /^[ \t]*#[ \t]*include[ \t]*"/) continue
            inc = line; sub(/^[^"]*"/, "", inc); sub(/".*/, "", inc)
            if (!(inc in hdr)) continue
            il = layer_of(inc)
            if (!(il in rank) || rank[il] > rank[fl]) {
                printf "layers: %s (%s) includes %s (%s): upward\n", f, fl, inc, il > "/dev/stderr"; bad = 1
            }
        }
        close(f)
    }
    if (!bad) printf "layers: %d files, no upward include (%s)\n", nf, order
    exit bad
}' "$tmp/hdrs" "$tmp/files"
# Rooms of a size one can live in (issue #37): no source or header over 1,000 lines, no
# BPF program file over 800.
big=$(find src include \( -name '*.c' -o -name '*.h' \) -exec wc -l {} + | awk '
    $2 == "total" { next }
    $2 ~ /\.bpf\.c$/ && $1 > 800 { printf "%s has %d lines (a .bpf.c: at most 800)\n", $2, $1; next }
    $1 > 1000 { printf "%s has %d lines (at most 1,000)\n", $2, $1 }')
[ -z "$big" ] || { printf 'layers: %s\n' "$big" >&2; exit 1; }
echo "layers: every file within 1,000 lines (a .bpf.c within 800)"
