# SPDX-License-Identifier: GPL-2.0-or-later
# shellcheck shell=bash
# Shared by the sanitizer tests (tests/integration/test_san_*.sh, test_soak_smoke.sh) and
# tests/soak/churn.sh: the sanitized build, the sanitizer options, and how a report is
# recognised. Source it; it sets SAN_IOT and exports the options.
SAN_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck disable=SC2034  # used by the scripts that source this
SAN_IOT=$SAN_ROOT/build/san/iotriage
# shellcheck disable=SC2034
SAN_CHURN=$SAN_ROOT/build/san/tests/churn
# shellcheck disable=SC2034
SAN_LOOPCTL=$SAN_ROOT/build/san/tests/loopctl
# Leaks are checked at exit; any report aborts (ASan) or halts (UBSan) the process.
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
if [ -s "$SAN_ROOT/tests/soak/lsan.supp" ]; then
    export LSAN_OPTIONS=suppressions=$SAN_ROOT/tests/soak/lsan.supp:print_suppressions=0
fi

# make san: build/san/iotriage, the unit tests and the soak helpers. Quiet unless it fails.
# Under build/.san.lock, which tests/run.sh's background lane holds while it makes the
# same build ahead of the tests: one make at a time in build/san, the second finds it done.
san_build() {
    local log
    log=$(mktemp "${TMPDIR:-/tmp}/iotriage-san-build.XXXXXX")
    mkdir -p "$SAN_ROOT/build"
    if ! flock "$SAN_ROOT/build/.san.lock" make -C "$SAN_ROOT" -s -j"$(nproc 2>/dev/null || echo 2)" san >"$log" 2>&1; then
        tail -n 40 "$log" >&2
        rm -f "$log"
        return 1
    fi
    rm -f "$log"
}

# True when file $1 holds a sanitizer report of any kind.
san_report() {
    grep -qE 'ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:|SUMMARY: (Address|UndefinedBehavior|Leak)Sanitizer|LeakSanitizer has encountered' "$1"
}

# The first lines of the report in $1, for a failure message.
san_excerpt() {
    grep -m 12 -E 'ERROR:|runtime error:|SUMMARY:|^    #[0-9]+ ' "$1" | head -n 12
}
