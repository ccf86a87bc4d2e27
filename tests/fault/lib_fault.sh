# SPDX-License-Identifier: GPL-2.0-or-later
# shellcheck shell=bash
# Test-script functions for the fault-injection library (tests/fault/fault.c). Source
# after tests/integration/lib.sh (it uses ROOT).
#
#   fault_build                       make build/tests/fault.so (quiet unless it fails)
#   fault_run SPEC LOG CMD [ARGS...]  run CMD with the library preloaded, IOTRIAGE_FAULT
#                                     set to SPEC and every injection logged to LOG;
#                                     returns CMD's exit status. Works for the sanitized
#                                     binary too (ASan then need not come first).
#   fault_hits LOG                    how many injections LOG holds
FAULT_SO=$ROOT/build/tests/fault.so

fault_build() {
    local log
    log=$(mktemp "${TMPDIR:-/tmp}/iotriage-fault-build.XXXXXX")
    if ! make -C "$ROOT" -s build/tests/fault.so >"$log" 2>&1; then
        tail -n 20 "$log" >&2
        rm -f "$log"
        return 1
    fi
    rm -f "$log"
}

fault_run() {
    local spec=$1 log=$2; shift 2
    env LD_PRELOAD="$FAULT_SO" IOTRIAGE_FAULT="$spec" IOTRIAGE_FAULT_LOG="$log" \
        ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0" "$@"
}

fault_hits() {
    [ -f "$1" ] && wc -l <"$1" || echo 0
}
