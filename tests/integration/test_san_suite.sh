#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The suite again under AddressSanitizer + UndefinedBehaviorSanitizer (leaks included):
# every unit test binary, built into build/san/ by `make san`, and a representative set of
# runs of the sanitized iotriage (the list is in docs/reliability.md). Any sanitizer
# report fails the test, whatever the exit status; so does an unexpected exit status.
. "$(dirname "$0")/lib.sh"
. "$ROOT/tests/soak/san.sh"

san_build || fail "sanitizer build failed"
SIOT=$SAN_IOT
# Every finding is listed, not only the first: a report in one run does not hide others.
problems=()
bad() { echo "BAD: $*" >&2; problems+=("$1"); }

# 1. Every unit test, sanitized. A unit test source without its binary is a failure.
n=0
for src in "$ROOT"/tests/unit/test_*.c; do
    name=$(basename "$src" .c)
    bin=$ROOT/build/san/tests/$name
    [ -x "$bin" ] || fail "$bin not built"
    (cd "$ROOT" && "$bin") >"$TMP/$name.log" 2>&1
    rc=$?
    n=$((n + 1))
    if san_report "$TMP/$name.log"; then
        bad "unit/$name" "sanitizer report: $(san_excerpt "$TMP/$name.log")"
    elif [ "$rc" != 0 ]; then
        tail -n 30 "$TMP/$name.log" >&2
        bad "unit/$name" "exit $rc under sanitizers"
    fi
done
[ "$n" -gt 0 ] || fail "no unit test found"
ok "$n unit test binaries run under ASan+UBSan+LSan"

# run NAME RCS CMD...: run CMD with the sanitizer options, stdout to $TMP/NAME.out, stderr
# to $TMP/NAME.err; fail on a sanitizer report or an exit status not in RCS ("0", "0 1").
run() {
    local name=$1 rcs=$2 rc; shift 2
    "$@" >"$TMP/$name.out" 2>"$TMP/$name.err"
    rc=$?
    if san_report "$TMP/$name.err"; then
        bad "$name" "sanitizer report: $(san_excerpt "$TMP/$name.err")"
        return 1
    fi
    if [[ " $rcs " != *" $rc "* ]]; then
        tail -n 20 "$TMP/$name.err" >&2
        bad "$name" "exit $rc (want $rcs)"
        return 1
    fi
    ok "$name: exit $rc, no report"
}

# 2. The sampling loop, JSON and text, processes and threads.
if run json 0 "$SIOT" --json -n 3 -d 0.2; then
    [ "$(wc -l <"$TMP/json.out")" = 3 ] || fail "--json -n 3 printed $(wc -l <"$TMP/json.out") lines"
    jqf -s 'length == 3 and all(.[]; (.processes | length) > 0 and (.devices | length) > 0)' \
        "$TMP/json.out" >/dev/null
fi
run batch-threads 0 "$SIOT" -b -P -n 2 -d 0.2 &&
    { grep -q . "$TMP/batch-threads.out" || fail "-b -P printed nothing"; }
run json-only-threads 0 "$SIOT" --json -o -P -n 2 -d 0.2 &&
    jqf -s 'length == 2 and .[1].threads == true' "$TMP/json-only-threads.out" >/dev/null

# 3. audit: exit 1 means "a label is ignored", 3 "some could not be judged": findings, not errors.
run audit-json "0 1 3" "$SIOT" audit --json &&
    jqf . "$TMP/audit-json.out" >/dev/null
run audit-fixture "0 1 3" "$SIOT" audit --json --root "$ROOT/tests/fixtures/units/root" &&
    jqf . "$TMP/audit-fixture.out" >/dev/null
# every cgroup verdict of the audit (tests/fixtures/cgroup/audit, test_audit_cgroups)
run audit-cgroups "1" "$SIOT" audit --json --root "$ROOT/tests/fixtures/units/root" \
    --proc-root "$ROOT/tests/fixtures/cgroup/audit/proc" --sys-root "$ROOT/tests/fixtures/cgroup/audit/sys" &&
    jqf '.cgroup_ignored == 7' "$TMP/audit-cgroups.out" >/dev/null

# 4. -p on processes with hostile names (escape sequences, invalid UTF-8, bidi override).
evil=$(printf 'x\033]0;pwned\007\377\342\200\256gnp.exe\\')
bg bash -c 'exec -a "$0" sleep 30' "$evil"; p1=$BG
bg bash -c 'printf "\033[31m\342\200\256\001" >/proc/$$/comm && sleep 30; true'; p2=$BG
wait_sleep "$p1"
wait_until 20 pgrep -P "$p2" >/dev/null || fail "the comm-setting shell $p2 never forked its sleep: $(proc_state "$p2")"
run hostile-json 0 "$SIOT" --json -n 2 -d 0.1 -p "$p1" -p "$p2" &&
    jqf -s --argjson p "$p1" 'all(.[]; any(.processes[]; .pid == $p))' "$TMP/hostile-json.out" >/dev/null
run hostile-text 0 "$SIOT" -b -n 2 -d 0.1 -p "$p1" -p "$p2"
if LC_ALL=C grep -q "$(printf '\033')" "$TMP/hostile-text.out"; then fail "raw ESC in text"; fi
run hostile-threads 0 "$SIOT" -b -P -n 1 -d 0.1 -p "$p1"

# 5. Unprivileged: taskstats refused, other users' io files unreadable.
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null; then
    chmod 755 "$TMP"
    run nobody 0 setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all \
        "$SIOT" --json -n 2 -d 0.2 &&
        jqf -s 'length == 2' "$TMP/nobody.out" >/dev/null
else
    echo "note: not root or no setpriv: unprivileged run left out"
fi

# 6. Roots that hold nothing, or fixtures: errors are reported, not crashed on.
mkdir -p "$TMP/empty"
run empty-proc "0 1" "$SIOT" --json -n 1 -d 0.1 --proc-root "$TMP/empty"
run empty-sys "0 1" "$SIOT" --json -n 1 -d 0.1 --sys-root "$TMP/empty"
run fixture-root "0 1" "$SIOT" --json -n 2 -d 0.1 --proc-root "$ROOT/tests/fixtures/root1/proc" \
    --sys-root "$ROOT/tests/fixtures/root1/sys"
run audit-empty "0 1 2 3" "$SIOT" audit --json --root "$TMP/empty"

# 7. The interactive screen in tmux, every view and toggle, a resize, then q.
if command -v tmux >/dev/null; then
    SOCK=iotriage-san-$$
    T() { tmux -L "$SOCK" "$@"; }
    tmux_gone() { T kill-server 2>/dev/null; rm -f "${TMUX_TMPDIR:-/tmp}/tmux-$(id -u)/$SOCK"; }
    machine() { grep -H . /sys/block/*/queue/scheduler /sys/block/*/queue/nr_requests /proc/sys/kernel/task_delayacct 2>/dev/null; }
    before=$(machine)
    trap 'tmux_gone; it_cleanup' EXIT
    T new-session -d -s ui -x 120 -y 40 \
        "ASAN_OPTIONS=$ASAN_OPTIONS UBSAN_OPTIONS=$UBSAN_OPTIONS ${LSAN_OPTIONS:+LSAN_OPTIONS=$LSAN_OPTIONS} \
         '$SIOT' -d 0.2 2>'$TMP/tui.err'; echo \$? >'$TMP/tui.rc'; sleep 30"
    # Keys only once the screen is up: typed before, they reach a terminal still in
    # line mode, and the q at the end may never be read (a sanitized start is slow).
    wait_until 30 eval 'T capture-pane -p -t ui | grep -q "^iotriage - "' ||
        bad tui "the screen never came up: $(T capture-pane -p -t ui | head -n 3)"
    for k in j j Enter Escape Tab j k Tab '>' '>' '<' r o o a a D D P; do
        T send-keys -t ui "$k"; sleep 0.15
    done
    sleep 1
    for k in P / p w n e d Enter / C-u Enter h Escape p p Space End Home NPage PPage; do
        T send-keys -t ui "$k"; sleep 0.1
    done
    # the action dialogs, opened and cancelled (n, Esc): nothing is ever confirmed here
    for k in Escape Tab Home s Down Enter n s Escape u Tab i Down Enter n i Escape A n; do
        T send-keys -t ui "$k"; sleep 0.15
    done
    T resize-window -t ui -x 60 -y 15 2>/dev/null; sleep 0.5
    T resize-window -t ui -x 200 -y 50 2>/dev/null; sleep 0.5
    T send-keys -t ui q
    wait_until 20 test -s "$TMP/tui.rc"
    tmux_gone
    if [ ! -s "$TMP/tui.rc" ]; then
        bad tui "the screen did not quit on q"
    elif [ "$(machine)" != "$before" ]; then
        bad tui "a cancelled dialog changed a scheduler, nr_requests or task_delayacct: $(diff <(echo "$before") <(machine) | grep '^[<>]' | tr '\n' ' ')"
    elif san_report "$TMP/tui.err"; then
        bad tui "sanitizer report: $(san_excerpt "$TMP/tui.err")"
    elif [ "$(cat "$TMP/tui.rc")" != 0 ]; then
        bad tui "exit $(cat "$TMP/tui.rc"): $(tail -n 5 "$TMP/tui.err")"
    else
        ok "tui: views, toggles, filter, action dialogs cancelled, resize, quit: exit 0, no report"
    fi
else
    echo "note: tmux not installed: the screen is left out"
fi

# 8. Bad usage goes through the error paths.
run bad-delay "1 2" "$SIOT" -d 0
run bad-pid "1 2" "$SIOT" -p abc
[ ${#problems[@]} -eq 0 ] || fail "${#problems[@]} failed under sanitizers: ${problems[*]}"
ok "all runs clean under ASan+UBSan+LSan"
