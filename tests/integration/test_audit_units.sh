#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# `iotriage audit --units-only` on unit trees built here (no device needed):
#  - a label systemd rejects (IOSchedulingClass=Idle, IOSchedulingPriority=9, Nice=50)
#    is listed as ignored ("rejected"), with file and line, and counted in the exit status;
#  - a unit file named with an OSC sequence and a bidi override never reaches the
#    terminal raw;
#  - labels that cannot be judged (no device known) give exit 3, not 0;
#  - a unit systemd refuses to load is reported with the setting at fault;
#  - the paths units name are resolved inside the root: symlinks and ".." never lead
#    to the host's own files (a made-up /sys tells the two devices apart).
. "$(dirname "$0")/lib.sh"

U=$TMP/root/etc/systemd/system
mkdir -p "$U"
run_audit() { "$IOT" audit --units-only --root "$TMP/root" "$@"; }

# ---- 1. rejected labels ------------------------------------------------------------
cat >"$U/rej.service" <<'UNIT'
[Service]
IOSchedulingClass=Idle
IOSchedulingPriority=9
Nice=50
ExecStart=/bin/true
UNIT
run_audit --json >"$TMP/r.json"; rc=$?
[ "$rc" = 1 ] || fail "three rejected labels: exit $rc, expected 1"
jqf --arg f /etc/systemd/system/rej.service '.units | length == 1 and (.[0] | .unit == "rej.service"
    and (.rejected | length == 3)
    and (.rejected[0] | .key == "IOSchedulingClass" and .value == "Idle" and .file == $f and .line == 2)
    and (.rejected[1] | .key == "IOSchedulingPriority" and .value == "9" and .line == 3)
    and (.rejected[2] | .key == "Nice" and .value == "50" and .line == 4)
    and all(.rejected[]; .superseded == false and (.why | length > 0))
    and .io_class == null and .nice == null)' "$TMP/r.json" >/dev/null
jqf '.ignored == 3 and .rejected == 3' "$TMP/r.json" >/dev/null
run_audit >"$TMP/r.txt"; rc=$?
[ "$rc" = 1 ] || fail "text: exit $rc"
grep -q "rejected IOSchedulingClass=Idle at /etc/systemd/system/rej.service:2" "$TMP/r.txt" ||
    fail "text lacks the rejected line: $(cat "$TMP/r.txt")"
grep -q "^3 label(s) ignored" "$TMP/r.txt" || fail "summary: $(tail -1 "$TMP/r.txt")"
grep -q "see its invalid settings" "$TMP/r.txt" && fail "message points to output that does not exist"
ok "Idle, 9 and 50: listed as rejected with file and line, 3 ignored, exit 1"

# A rejected value overridden by a valid one in a drop-in is shown but not counted.
rm "$U/rej.service"
printf '[Service]\nNice=50\nExecStart=/bin/true\n' >"$U/over.service"
mkdir -p "$U/over.service.d"
printf '[Service]\nNice=5\n' >"$U/over.service.d/fix.conf"
run_audit --json >"$TMP/o.json"
jqf '.units[0] | .nice == 5 and (.rejected | length == 1) and .rejected[0].superseded == true' "$TMP/o.json" >/dev/null
jqf '.rejected == 0' "$TMP/o.json" >/dev/null
ok "a rejected Nice=50 that a drop-in overrides: shown as superseded, not counted"
rm -r "$U/over.service" "$U/over.service.d"

# ---- 2. a unit systemd refuses: the setting at fault, not a pointer elsewhere -------
printf '[Service]\nNice=5\nWorkingDirectory=relative/dir\nExecStart=/bin/true\n' >"$U/bad.service"
run_audit >"$TMP/b.txt"
grep -q "bad.service:3: systemd refuses to load this unit: WorkingDirectory=relative/dir" "$TMP/b.txt" ||
    fail "refused unit without its setting: $(cat "$TMP/b.txt")"
grep -A3 '^  bad.service' "$TMP/b.txt" | grep -q "refused: systemd does not load this unit: /etc/systemd/system/bad.service:3" ||
    fail "the refusal is not said under the unit: $(cat "$TMP/b.txt")"
run_audit --json | jqf '.problems[0] | .line == 3 and .setting == "WorkingDirectory=relative/dir"' >/dev/null
ok "refused unit: the file, line and setting at fault"
rm "$U/bad.service"

# ---- 3. hostile unit names ----------------------------------------------------------
osc=$'\e]0;pwned\a'
bidi=$'\u202e'
name="x${osc}${bidi}gpj.service"
printf '[Service]\nNice=50\n' >"$U/$name"
LC_ALL=C.UTF-8 run_audit >"$TMP/h.txt"
grep -q "pwned" "$TMP/h.txt" || fail "the hostile unit is not listed at all"
if LC_ALL=C grep -q $'\e' "$TMP/h.txt"; then fail "an ESC byte reached the text output"; fi
if grep -q "$bidi" "$TMP/h.txt"; then fail "U+202E reached the text output"; fi
grep -qiF '\u{202e}' "$TMP/h.txt" || fail "bidi override not shown as \\u{202e}"
run_audit --json >"$TMP/h.json"
jqf --arg n "$name" '.units[0].unit == $n' "$TMP/h.json" >/dev/null
if LC_ALL=C grep -q $'\e' "$TMP/h.json"; then fail "an ESC byte in the JSON"; fi
ok "a unit named with OSC and U+202E: escaped in text, exact in JSON"
rm "$U/$name"

# ---- 4. undecided labels ------------------------------------------------------------
# An empty /sys: no device can be named, so no verdict: that is not "all honoured".
mkdir -p "$TMP/sys"
printf '[Service]\nNice=5\nExecStart=/bin/true\n' >"$U/n.service"
run_audit --sys-root "$TMP/sys" --json >"$TMP/u.json"; rc=$?
[ "$rc" = 3 ] || fail "every label undecided: exit $rc, expected 3"
jqf '.ignored == 0 and .honoured == 0 and .undecided == 1' "$TMP/u.json" >/dev/null
ok "every label undecided: exit 3"
# No labels at all: nothing to judge, exit 0.
rm "$U/n.service"
run_audit >/dev/null; rc=$?
[ "$rc" = 0 ] || fail "no labels: exit $rc, expected 0"
ok "no labels: exit 0"

# ---- 5. paths resolved inside the root, never on the host ---------------------------
# Units whose paths leave the root when resolved from the host: an absolute symlink
# (usr/bin/abs -> /proc/version), ".." in ExecStart=, a directory symlink climbing out
# with ".." (srv -> ../../../../../../../../proc) and an absolute one (data -> /proc) in
# WorkingDirectory=. systemd, inside that image, ends each at a file or directory of the
# root's own (proc/version, proc/sys), on the root's disk; from the host they end in the
# host's /proc, another device. A made-up /sys names the root's device "imgdisk" (bfq:
# the idle class honoured) and the host /proc's "hostdisk" (none: ignored).
R=$TMP/root
mkdir -p "$R/proc/sys" "$R/usr/bin"
echo "the image's own file" >"$R/proc/version"
ln -s /proc/version "$R/usr/bin/abs"
ln -s ../../../../../../../../proc "$R/srv"
ln -s /proc "$R/data"
unit() { printf '[Service]\nIOSchedulingClass=idle\n%s\n' "$2" >"$U/$1.service"; }
unit abs 'ExecStart=/usr/bin/abs'
unit up 'ExecStart=/../../../../../../../../proc/version'
unit climb $'WorkingDirectory=/srv/sys\nExecStart=/bin/true'
unit absdir $'WorkingDirectory=/data/sys\nExecStart=/bin/true'
S=$TMP/sys2
fake_disk() {  # fake_disk NAME MAJ:MIN SCHEDULER-LINE
    mkdir -p "$S/devices/virtual/block/$1/queue" "$S/dev/block" "$S/class/block"
    echo "$2" >"$S/devices/virtual/block/$1/dev"
    echo "$3" >"$S/devices/virtual/block/$1/queue/scheduler"
    ln -sfn "../../devices/virtual/block/$1" "$S/dev/block/$2"
    ln -sfn "../../devices/virtual/block/$1" "$S/class/block/$1"
}
img=$(stat -c '%Hd:%Ld' "$R")
host=$(stat -c '%Hd:%Ld' /proc/version)
[ "$img" != "$host" ] || skip "the test root and /proc on one device ($img)"
[ "$host" = "$(stat -c '%Hd:%Ld' /proc/sys)" ] || skip "/proc/sys on a device of its own"
fake_disk imgdisk "$img" '[bfq] none'
fake_disk hostdisk "$host" '[none] bfq'
run_audit --sys-root "$S" --json >"$TMP/r5.json"; rc=$?
jq -c '.units[] | {unit, devices: [.devices[] | [.device, .from, .verdict]]}' "$TMP/r5.json" >"$TMP/r5.txt"
grep -q hostdisk "$TMP/r5.txt" && fail "a unit judged on the host's disk: $(cat "$TMP/r5.txt")"
want() { # want UNIT FROM
    jqf --arg u "$1.service" --arg f "$2" '[.units[] | select(.unit == $u)] | length == 1 and
        (.[0].devices | length == 1 and .[0].device == "imgdisk" and .[0].from == $f
         and .[0].verdict == "honoured")' "$TMP/r5.json" >/dev/null
}
want abs ExecStart
want up ExecStart
want climb WorkingDirectory
want absdir WorkingDirectory
[ "$rc" = 0 ] || fail "every label on the image's bfq disk: exit $rc, expected 0: $(cat "$TMP/r5.txt")"
ok "an absolute symlink, '..' and symlinked directories: resolved inside the root, judged on its disk"
