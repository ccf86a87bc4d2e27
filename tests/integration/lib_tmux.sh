# SPDX-License-Identifier: GPL-2.0-or-later
# shellcheck shell=bash
# Screen tests: the real binary in a tmux server of the test's own (set SOCK first),
# keys sent with send-keys, the screen read with capture-pane. Source after lib.sh.
T() { tmux -L "$SOCK" "$@"; }

# Every server the test started ($SOCK as first set, or $SOCK-anything after it) is
# killed and its socket file removed when the test cleans up, whatever path it took:
# it_cleanup (lib.sh), which every test's EXIT trap calls, does this first.
SOCK_BASE=$SOCK
tmux_cleanup() {
    local s
    for s in "${TMUX_TMPDIR:-/tmp}/tmux-$(id -u)/$SOCK_BASE" "${TMUX_TMPDIR:-/tmp}/tmux-$(id -u)/$SOCK_BASE"-*; do
        [ -S "$s" ] || continue
        tmux -S "$s" kill-server 2>/dev/null
        rm -f "$s"
    done
}
eval "$(declare -f it_cleanup | sed '1s/^it_cleanup/_it_cleanup_files/')"
it_cleanup() { tmux_cleanup; _it_cleanup_files; }
screen() { T capture-pane -p -t ui; }
# wait_for PATTERN [SECONDS]: until the screen shows PATTERN (a grep -E expression).
# SECONDS is 15 unless given: a wait ends as soon as the screen shows it, so the bound
# only matters on a machine slow enough to need it (CI: 2 loaded cores, sanitizer builds
# beside), where a refresh, a key's effect or a child's start took over 5 s.
wait_for() {
    local i
    for i in $(seq 1 $((${2:-15} * 10))); do
        screen | grep -Eq -- "$1" && return 0
        sleep 0.1
    done
    echo "--- screen:"; screen; echo "---"
    fail "screen never showed: $1"
}
# wait_gone PATTERN [SECONDS]: until the screen no longer shows it (15 s unless given)
wait_gone() {
    local i
    for i in $(seq 1 $((${2:-15} * 10))); do
        screen | grep -Eq -- "$1" || return 0
        sleep 0.1
    done
    echo "--- screen:"; screen; echo "---"
    fail "screen still shows: $1"
}
need tmux
