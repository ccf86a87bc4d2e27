#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Every libFuzzer harness (tests/fuzz/) built and run for 1 s (its seeds, then
# mutations): no crash, no sanitizer report, no failed invariant, no hang (make
# fuzz-smoke; `make fuzz` runs them longer).
. "$(dirname "$0")/lib.sh"
need clang
ls /usr/lib/llvm-*/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a >/dev/null 2>&1 ||
    skip "no libFuzzer runtime (apt-get install libclang-rt-14-dev)"
make -C "$ROOT" -s -j"$(nproc 2>/dev/null || echo 2)" fuzz-smoke || fail "fuzz-smoke failed (inputs in build/fuzz/artifacts/)"
