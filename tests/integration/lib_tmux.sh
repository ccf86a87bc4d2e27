# shellcheck shell=bash
# Screen tests: the real binary in a tmux server of the test's own (set SOCK first),
# keys sent with send-keys, the screen read with capture-pane. Source after lib.sh.
T() { tmux -L "$SOCK" "$@"; }
screen() { T capture-pane -p -t ui; }
# wait_for PATTERN [SECONDS]: until the screen shows PATTERN (a grep -E expression)
wait_for() {
    local i
    for i in $(seq 1 $((${2:-5} * 10))); do
        screen | grep -Eq -- "$1" && return 0
        sleep 0.1
    done
    echo "--- screen:"; screen; echo "---"
    fail "screen never showed: $1"
}
# wait_gone PATTERN [SECONDS]: until the screen no longer shows it
wait_gone() {
    local i
    for i in $(seq 1 $((${2:-5} * 10))); do
        screen | grep -Eq -- "$1" || return 0
        sleep 0.1
    done
    echo "--- screen:"; screen; echo "---"
    fail "screen still shows: $1"
}
need tmux
