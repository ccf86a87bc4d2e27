#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# `iotriage audit`: unit files and running processes with a label, the devices behind
# the paths they name, and whether those devices' schedulers read the label. Exit 1
# when any label is ignored, 0 when all are honoured, 2 on error.
. "$(dirname "$0")/lib.sh"
. "$ROOT/tests/lab/lab.sh"
need mkfs.ext4
need ionice
lab_up 2000 4 64 || exit $?
# Paths in unit files are read inside --root (an image or container tree): the lab
# disk is mounted at /srv of that root.
MNT=$TMP/root/srv
trap 'it_kill_bg; umount "$MNT" 2>/dev/null; lab_down; it_cleanup' EXIT
mkfs.ext4 -q -F "$LAB_DEV" >/dev/null 2>&1 || fail "mkfs.ext4 on the lab disk"
mkdir -p "$MNT" && mount "$LAB_DEV" "$MNT" || fail "mount the lab disk"
mkdir -p "$MNT/work" && echo data >"$MNT/work/file"
Q=/sys/block/$LAB_NAME/queue

# A root with one unit whose working directory is on the lab disk.
U=$TMP/root/etc/systemd/system
mkdir -p "$U"
cat >"$U/scrub.service" <<UNIT
[Unit]
Description=a background job that asks to be idle
[Service]
# idle: only when the disk has nothing else to do
IOSchedulingClass=idle
WorkingDirectory=/srv/work
ExecStart=/bin/true
UNIT

run_audit() { "$IOT" audit --units-only --root "$TMP/root" "$@"; }

echo none >"$Q/scheduler"
run_audit --json >"$TMP/a.json"; rc=$?
[ "$rc" = 1 ] || fail "an idle unit on a 'none' device: exit $rc, expected 1"
jqf --arg d "$LAB_NAME" '.units[0] | .unit == "scrub.service" and .effective_class == "idle"
    and (.devices | length == 1) and .devices[0].device == $d and .devices[0].verdict == "ignored"
    and .devices[0].from == "WorkingDirectory" and .devices[0].scheduler == "none"' "$TMP/a.json" >/dev/null
jqf '.ignored == 1 and .honoured == 0' "$TMP/a.json" >/dev/null
run_audit | grep -Eq "$LAB_NAME +none +ignored +\(WorkingDirectory\)" || fail "text audit lacks the verdict line"
ok "idle unit on $LAB_NAME under none: ignored, exit 1"

# Under a scheduler that reads the class, the same unit is honoured: mq-deadline (the
# class alone: idle is a class), and bfq where the kernel offers it.
for s in mq-deadline bfq; do
    if ! sched_offered "$LAB_NAME" "$s"; then
        [ "$s" = bfq ] || fail "$LAB_NAME does not offer $s: $(cat "$Q/scheduler")"
        skip_part "the idle unit under bfq: $NO_BFQ"
        continue
    fi
    echo "$s" >"$Q/scheduler" || fail "cannot select $s"
    run_audit --json >"$TMP/b.json"; rc=$?
    [ "$rc" = 0 ] || fail "the same unit under $s: exit $rc, expected 0"
    jqf --arg s "$s" '.units[0].devices[0] | .verdict == "honoured" and .scheduler == $s' "$TMP/b.json" >/dev/null
    jqf '.ignored == 0 and .honoured == 1' "$TMP/b.json" >/dev/null
    run_audit | grep -Eq "$LAB_NAME +$s +honoured +\(WorkingDirectory\)" || fail "text audit under $s lacks the verdict line"
    ok "under $s: honoured, exit 0"
done

# A second unit with Nice=19 whose binary is not in this root: the root filesystem's
# disk decides, by its scheduler, and the audit says so.
cat >"$U/report.service" <<'UNIT'
[Service]
Nice=19
ExecStart=/bin/true
UNIT
rootdisk=$(jq -r '.units[] | select(.unit == "report.service") | .devices[0].device' <(run_audit --json))
sched=$(sed -n 's/.*\[\(.*\)\].*/\1/p' "/sys/block/$rootdisk/queue/scheduler" 2>/dev/null)
case $sched in
mq-deadline) want=level-ignored want_rc=1 ;;
bfq) want=honoured want_rc=0 ;;
*) want=ignored want_rc=1 ;;
esac
run_audit --json >"$TMP/c.json"; rc=$?
[ "$rc" = "$want_rc" ] || fail "Nice=19 unit on $rootdisk ($sched): exit $rc, expected $want_rc"
jqf --arg w "$want" '.units[] | select(.unit == "report.service") | .effective_class == "be"
    and .effective_level == 7 and .source == "nice" and .devices[0].verdict == $w
    and .devices[0].from == "root filesystem"' "$TMP/c.json" >/dev/null
ok "Nice=19 unit: be/7 from nice, $rootdisk ($sched): $want, exit $rc"

# A running process with a label and a file open on the lab disk.
echo none >"$Q/scheduler"
# (a background job's stdin is /dev/null unless redirected inside it)
bg ionice -c3 sh -c 'exec sleep 60 <"$0"' "$MNT/work/file"; p=$BG
# Audited once it holds the file at the idle class: after ionice, sh and the redirection.
wait_holds "$p" "$MNT/work/file"
wait_sleep "$p"
"$IOT" audit --json --root "$TMP/root" >"$TMP/p.json"; rc=$?
[ "$rc" = 1 ] || fail "audit with an ignored running label: exit $rc"
jqf --argjson p "$p" --arg d "$LAB_NAME" '.processes[] | select(.pid == $p) | .effective_class == "idle"
    and any(.devices[]; .device == $d and .verdict == "ignored" and .from == "open files")' "$TMP/p.json" >/dev/null
ok "running ionice -c3 process with a file on $LAB_NAME: ignored"
kill "$p"

# Errors: exit 2 with one line.
"$IOT" audit --root "$TMP/nonexistent" >/dev/null 2>"$TMP/err"; rc=$?
[ "$rc" = 2 ] || fail "audit of a missing root: exit $rc"
[ "$(wc -l <"$TMP/err")" = 1 ] || fail "expected one error line: $(cat "$TMP/err")"
"$IOT" audit --bogus >/dev/null 2>&1; rc=$?
[ "$rc" = 2 ] || fail "audit --bogus: exit $rc"
ok "errors: exit 2"
