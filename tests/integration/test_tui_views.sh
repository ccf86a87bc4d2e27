#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The cgroup and filesystem views of the screen, driven through tmux: c lists the cgroups
# as a tree with the names a person knows (a made docker cgroup shows as docker:<id>),
# Enter on one shows only its processes, C lifts that; F lists the filesystems with their
# use and the space deleted-but-open files hold, and the selected one's holders. A
# cgroup with a hostile name (escape sequences, RTL overrides, invalid UTF-8) is shown
# escaped, its row's columns under the header's on a 120-column screen, WARN on it.
. "$(dirname "$0")/lib.sh"
need tmux
SOCK=iotriage-views-$$
. "$(dirname "$0")/lib_tmux.sh"
CG=$(awk '$9 == "cgroup2" { print $5; exit }' /proc/self/mountinfo)
[ -n "$CG" ] && [ -w "$CG" ] || skip "no writable cgroup v2 hierarchy"
ID=$(echo "iotriage $$" | sha256sum | cut -c1-64)
TOP=$CG/iotriage-views-$$
CGD=$TOP/docker-$ID.scope
# A name as hostile as a cgroup name can be (any byte but '/', NUL and newline): escape
# sequences, two RTL overrides (U+202E) and invalid UTF-8. Escaped it takes 18 columns
# more than its bytes.
EVIL=$CG/$(printf 'iot-%d-\033[7m\342\200\256evil\377\376\342\200\256\033' $$)
cleanup_cg() {
    local d
    for d in "$CGD" "$EVIL"; do
        for p in $(cat "$d/cgroup.procs" 2>/dev/null); do echo "$p" >"$CG/cgroup.procs" 2>/dev/null; done
    done
    rmdir "$CGD" "$TOP" "$EVIL" 2>/dev/null
}
trap 'it_kill_bg; cleanup_cg; it_cleanup' EXIT
mkdir -p "$CGD" || fail "cannot make $CGD"
bg bash -c 'exec -a iotriage-view-marker sleep 300'; in_cg=$BG
echo "$in_cg" >"$CGD/cgroup.procs" || fail "cannot move $in_cg into $CGD"
bg bash -c 'exec -a iotriage-view-other sleep 300'
# A deleted file held open on the filesystem of this test's directory.
head -c 3M /dev/zero >"$TMP/held.log"
bg bash -c "exec 3<'$TMP/held.log'; exec sleep 300"
# Deleted only once it is held: removed before bash has opened it, the open fails and the
# holder is a plain sleep with nothing deleted to show.
wait_holds "$BG" "$TMP/held.log"
rm "$TMP/held.log"

T new-session -d -s ui -x 150 -y 45 "$IOT -d 0.5; echo EXITED \$?; sleep 60"
wait_for '^ +PID '
T send-keys -t ui c
wait_for '^Cgroups'
wait_for "docker:${ID:0:12}"
ok "c: the made cgroup is listed as docker:${ID:0:12}"
# Select it: the rows start on the 4th line, the first one selected (the selected one's
# settings and warnings are on lines of their own below it: not rows).
row=$(screen | awk -v id="docker:${ID:0:12}" '/^    (settings:|! )/ { skip++ } index($0, id) { print NR - skip; exit }')
for ((i = 4; i < row; i++)); do T send-keys -t ui Down; done
wait_for "^    settings: "
T send-keys -t ui Enter
wait_for "cgroup: /iotriage-views"
wait_for 'iotriage-view-marker'
screen | grep -q 'iotriage-view-other' && fail "a process outside the cgroup is listed under its filter"
ok "Enter: only the cgroup's processes"
T send-keys -t ui C / iotriage-view Enter
wait_for 'iotriage-view-other'
wait_for 'iotriage-view-marker'
ok "C: all processes again"
T send-keys -t ui / C-u Enter

T send-keys -t ui F
wait_for '^Filesystems'
wait_for '^/ +[a-z0-9]+ '
# Select the filesystem of the held file and look for its holder.
mnt=$(df --output=target "$TMP" | tail -n 1)
row=$(screen | awk -v m="$mnt" '$1 == m { print NR; exit }')
[ -n "$row" ] || { screen; fail "no row for $mnt"; }
for ((i = 4; i < row; i++)); do T send-keys -t ui Down; done
wait_for 'deleted .*held.log \(deleted\)'
wait_for '^ +held by sleep\[[0-9]+\] fd 3 '
ok "F: filesystems, and the deleted file on $mnt with its holder"
T send-keys -t ui q
wait_for '^EXITED 0'

# The selected cgroup's I/O settings, from a fixture tree written in the kernel
# documentation's formats (tests/fixtures/cgroup/audit: this machine's v2 hierarchy has
# no io controller, so no live cgroup has these files).
FIX=$ROOT/tests/fixtures/cgroup/audit
T kill-server 2>/dev/null
SOCK=$SOCK_BASE-fixture     # a fresh server: a killed one may still be going away
T new-session -d -s ui -x 160 -y 45 "$IOT -d 0.5 --no-bpf --proc-root $FIX/proc --sys-root $FIX/sys; echo EXITED \$?; sleep 60"
wait_for '^ +PID '
T send-keys -t ui c
wait_for '^Cgroups'
wait_for '^    settings: no io\.\* files here'
row=$(screen | awk '/^    (settings:|! )/ { skip++ } $1 == "db.service" { print NR - skip; exit }')
[ -n "$row" ] || { screen; fail "no db.service row in the fixture's cgroups"; }
for ((i = 4; i < row; i++)); do T send-keys -t ui Down; done
wait_for '^    settings: io\.max sdb rbps=2097152 wiops=120; io\.weight default 100, sdb 500; io\.bfq\.weight default 100; io\.prio\.class idle$'
ok "c: the selected cgroup's io.max, io.weight, io.bfq.weight and io.prio.class as its files say"
T send-keys -t ui q
wait_for '^EXITED 0'

# The hostile cgroup, one process in it, on a 120-column screen.
T kill-server 2>/dev/null
mkdir "$EVIL" || fail "cannot make a cgroup with a hostile name under $CG"
bg bash -c 'exec -a iotriage-view-evil sleep 300'
echo "$BG" >"$EVIL/cgroup.procs" || fail "cannot move $BG into the hostile cgroup"
SOCK=$SOCK_BASE-evil
T new-session -d -s ui -x 120 -y 45 "$IOT -d 0.5 --no-bpf; echo EXITED \$?; sleep 60"
wait_for '^ +PID '
T send-keys -t ui c
wait_for '^Cgroups'
wait_for "iot-$$-"
screen >"$TMP/evil.screen"
# escaped, whichever the terminal's locale: \e for ESC, \xff and \xfe for the invalid
# bytes, and U+202E as \u{202E} (as \xe2\x80\xae where the locale is not UTF-8)
grep -Eiq "iot-$$-\\\\e\\[7m(\\\\u\\{202E\\}|\\\\xe2\\\\x80\\\\xae)evil\\\\xff\\\\xfe" "$TMP/evil.screen" ||
    { cat "$TMP/evil.screen"; fail "the hostile cgroup name is not shown escaped"; }
# Each right-aligned column of the row ends where its header ends: READ/s, TASKS (1: the
# sleep) and WARN (0), all within the 120 columns.
verdict=$(awk -v tag="iot-$$-" '
    /^CGROUP +UNIT / { h = $0 }
    index($0, tag) && !r { r = $0 }
    function ends(name) { return index(h, name) + length(name) - 1 }
    function cell(name, w) { v = substr(r, ends(name) - w + 1, w); gsub(/ /, "", v); return v }
    END {
        if (!h || !r) { print "no header or no row"; exit }
        sub(/ +$/, "", r)
        if (length(r) != ends("WARN")) { printf "row ends at column %d, WARN at %d\n", length(r), ends("WARN"); exit }
        if (substr(r, ends("READ/s"), 1) == " " || substr(r, ends("READ/s") + 1, 1) != " ") { print "READ/s not under its header"; exit }
        if (cell("TASKS", 5) != "1") { printf "TASKS reads \"%s\"\n", cell("TASKS", 5); exit }
        if (cell("WARN", 4) != "0") { printf "WARN reads \"%s\"\n", cell("WARN", 4); exit }
        print "ok"
    }' "$TMP/evil.screen")
[ "$verdict" = ok ] || { cat "$TMP/evil.screen"; fail "the hostile cgroup's row: $verdict"; }
ok "c: a hostile cgroup name escaped, its row's columns under the header's at 120 columns: $(grep -F "iot-$$-" "$TMP/evil.screen" | tr -s ' ')"
T send-keys -t ui q
wait_for '^EXITED 0'
