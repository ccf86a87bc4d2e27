#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# No merge-conflict markers left in the tree's text files: a marker in a doc or a script
# is silently wrong; this catches it whatever file it is in.
. "$(dirname "$0")/lib.sh"
cd "$ROOT" || fail "no $ROOT"
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    hits=$(git grep -n -I -E '^(<<<<<<< |>>>>>>> |=======$)' -- . ':!tests/fixtures' || true)
else
    hits=$(grep -rn -I -E '^(<<<<<<< |>>>>>>> |=======$)' --exclude-dir=build --exclude-dir=fixtures . || true)
fi
[ -z "$hits" ] || fail "merge-conflict markers: $hits"
ok "no merge-conflict markers in the tree"
