#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# hidepid hides processes, and iotriage says so (issue #18 item 6). In a mount namespace
# of the test's own, a procfs mounted hidepid=2 (invisible) or hidepid=1 (noaccess) over
# /proc; iotriage run as nobody sees its own process only. Before: "1 process" and no
# note, as if the machine ran nothing else. Now a note says how many of the kernel's
# tasks are hidden and why; root, who sees through it, gets no such note.
. "$(dirname "$0")/lib.sh"
[ "$(id -u)" = 0 ] || skip "needs root (mount namespaces, setpriv)"
need unshare
need setpriv
unshare -m true 2>/dev/null || skip "unshare -m not permitted here"
# nobody must be able to run the binary: a copy in a directory it may enter
chmod 755 "$TMP"
cp "$IOT" "$TMP/iotriage"
chmod 755 "$TMP/iotriage"
total=$(awk '{ split($4, a, "/"); print a[2] }' /proc/loadavg)

for hp in 2 1; do
    unshare -m sh -c "mount -t proc -o hidepid=$hp proc /proc &&
        exec setpriv --reuid=nobody --regid=nogroup --clear-groups '$TMP/iotriage' --json -n 2 -d 0.2" \
        >"$TMP/hp$hp.out" 2>"$TMP/hp$hp.err" || { cat "$TMP/hp$hp.err"; fail "hidepid=$hp: exit $?"; }
    grep -q 'hidepid=' /proc/self/mountinfo && fail "the hidepid mount leaked out of the namespace"
    tail -n 1 "$TMP/hp$hp.out" >"$TMP/hp$hp.last"
    np=$(jq '.processes | length' "$TMP/hp$hp.last")
    n=$(jq -r '[.notes[] | select(.source == "procs") | .text] | join(" | ")' "$TMP/hp$hp.last")
    [ -n "$n" ] || { jq -c .notes "$TMP/hp$hp.last"; fail "hidepid=$hp: $np processes shown and no note"; }
    hidden=$(sed -n "s/^\([0-9]*\) of the kernel's \([0-9]*\) tasks are hidden: \/proc is mounted hidepid=.* uid 65534 .*/\1/p" <<<"$n")
    [ -n "$hidden" ] || fail "hidepid=$hp: note '$n'"
    # most of the machine is hidden: all but nobody's own (this iotriage's threads)
    [ "$hidden" -gt $((total / 2)) ] || fail "hidepid=$hp: only $hidden hidden of about $total tasks"
    ok "hidepid=$hp as nobody: $np process(es) shown, note: $n"
done

# root sees through hidepid: no note
unshare -m sh -c "mount -t proc -o hidepid=2 proc /proc && exec '$TMP/iotriage' --json -n 2 -d 0.2" \
    >"$TMP/root.out" 2>"$TMP/root.err" || { cat "$TMP/root.err"; fail "root under hidepid=2: exit $?"; }
tail -n 1 "$TMP/root.out" >"$TMP/root.last"
jqf '([.notes[] | select(.source == "procs")] | length == 0) and (.processes | length) > 5' "$TMP/root.last" >/dev/null
ok "root under hidepid=2: $(jq '.processes | length' "$TMP/root.last") processes, no hidden-process note"
