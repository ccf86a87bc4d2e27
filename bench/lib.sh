# SPDX-License-Identifier: GPL-2.0-or-later
# shellcheck shell=bash
# bench/lib.sh: what the benchmark scripts share. Source it after setting BIN (the bench
# binaries), OUT (a scratch directory) and die().
SPAWN_PID=

# spawn_up ARGS...: start bench/spawn with ARGS, wait for its "ready" line (120 s, and a
# second more for every 50 processes: 30,000 took 327 s to fork here under load); sets
# SPAWN_PID. The population is what the benchmark measures against.
spawn_up() {
    "$BIN/spawn" "$@" >"$OUT/spawn" &
    SPAWN_PID=$!
    local i n=${*: -1} tenths=1200
    case $n in ''|*[!0-9]*) ;; *) tenths=$((1200 + n / 5)) ;; esac
    for i in $(seq 1 "$tenths"); do
        grep -q '^ready' "$OUT/spawn" && return 0
        kill -0 "$SPAWN_PID" 2>/dev/null || die "spawn exited"
        sleep 0.1
    done
    die "spawn never ready"
}
spawn_down() { kill -TERM "$SPAWN_PID" 2>/dev/null; wait "$SPAWN_PID" 2>/dev/null; SPAWN_PID=; }
