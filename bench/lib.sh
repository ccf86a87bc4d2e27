# shellcheck shell=bash
# bench/lib.sh: what the benchmark scripts share. Source it after setting BIN (the bench
# binaries), OUT (a scratch directory) and die().
SPAWN_PID=

# spawn_up ARGS...: start bench/spawn with ARGS, wait (up to 120 s) for its "ready" line;
# sets SPAWN_PID. The population is what the benchmark measures against.
spawn_up() {
    "$BIN/spawn" "$@" >"$OUT/spawn" &
    SPAWN_PID=$!
    local i
    for i in $(seq 1 1200); do
        grep -q '^ready' "$OUT/spawn" && return 0
        kill -0 "$SPAWN_PID" 2>/dev/null || die "spawn exited"
        sleep 0.1
    done
    die "spawn never ready"
}
spawn_down() { kill -TERM "$SPAWN_PID" 2>/dev/null; wait "$SPAWN_PID" 2>/dev/null; SPAWN_PID=; }
