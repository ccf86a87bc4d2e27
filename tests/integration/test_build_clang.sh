#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The code builds warning-free with clang too (gcc is the default build).
. "$(dirname "$0")/lib.sh"
need clang
make -C "$ROOT" -s -j"$(nproc 2>/dev/null || echo 2)" CC=clang BUILD=build/clang build/clang/iotriage-clang >"$TMP/log" 2>&1 \
    || { cat "$TMP/log"; fail "clang build failed"; }
if grep -q 'warning:' "$TMP/log"; then cat "$TMP/log"; fail "clang warnings"; fi
"$ROOT/build/clang/iotriage-clang" --json -n 1 -d 0.1 -p 1 | jq -e '.devices | length > 0' >/dev/null \
    || fail "clang binary does not run"
ok "clang build clean and runs"
