#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# A restricted /proc or a missing /sys is said as such (issue #18 item 5), in a mount
# namespace of the test's own (unshare -m: the mounts vanish with it, private to it).
#   - /proc mounted subset=pid: diskstats, pressure/ and sys/ are absent from the mount,
#     not from the kernel. Before: "exited" (diskstats), "kernel without PSI" and
#     "kernel without delay accounting", all false.
#   - an empty /sys (a tmpfs over it): no class/block. Before: no note, and
#     `scheduler: null`, which the JSON contract reads as "the device has no scheduler".
. "$(dirname "$0")/lib.sh"
[ "$(id -u)" = 0 ] || skip "needs root (mount namespaces)"
need unshare
unshare -m true 2>/dev/null || skip "unshare -m not permitted here"

# 1. /proc with processes only.
unshare -m sh -c 'mount -t proc -o subset=pid proc /proc && exec "$0" --json -n 2 -d 0.2' "$IOT" \
    >"$TMP/subset.out" 2>"$TMP/subset.err" || { cat "$TMP/subset.err"; fail "subset=pid: exit $?"; }
grep -q 'subset=pid' /proc/self/mountinfo && fail "the subset=pid mount leaked out of the namespace"
[ "$(wc -l <"$TMP/subset.out")" = 2 ] || fail "subset=pid: $(wc -l <"$TMP/subset.out") samples"
last=$TMP/subset.last
tail -n 1 "$TMP/subset.out" >"$last"
jqf '[.notes[] | select(.source == "procfs")] | length == 1' "$last" >/dev/null
jqf '[.notes[] | select(.source == "procfs") | .text | test("shows processes only \\(a procfs mounted subset=pid\\)")] | all' \
    "$last" >/dev/null
for false_note in 'exited' 'kernel without PSI' 'without delay accounting' 'not found'; do
    if jq -e --arg t "$false_note" '[.notes[] | .text | contains($t)] | any' "$last" >/dev/null; then
        jq -c .notes "$last"
        fail "subset=pid: a note says '$false_note'"
    fi
done
jqf '.psi.io == null and .psi.cpu == null and (.devices | length) == 0 and (.processes | length) > 1' \
    "$last" >/dev/null
ok "subset=pid: one note says /proc shows processes only; no 'exited', no 'kernel without'"

# 2. The full /proc: no such note.
"$IOT" --json -n 2 -d 0.2 | tail -n 1 >"$TMP/full.last"
jqf '[.notes[] | select(.source == "procfs" or .source == "sysfs")] | length == 0' "$TMP/full.last" >/dev/null
ok "the full /proc and /sys: no procfs or sysfs note"

# 3. An empty /sys.
unshare -m sh -c 'mount -t tmpfs -o size=1m iotriage-empty /sys && exec "$0" --json -n 2 -d 0.2' "$IOT" \
    >"$TMP/nosys.out" 2>"$TMP/nosys.err" || { cat "$TMP/nosys.err"; fail "empty /sys: exit $?"; }
grep -q iotriage-empty /proc/self/mountinfo && fail "the tmpfs over /sys leaked out of the namespace"
tail -n 1 "$TMP/nosys.out" >"$TMP/nosys.last"
jqf '(.devices | length) > 0 and ([.devices[] | select(.scheduler != null)] | length) == 0' "$TMP/nosys.last" >/dev/null
n=$(jq -r '[.notes[] | select(.source == "sysfs") | .text] | join(" | ")' "$TMP/nosys.last")
grep -q 'no class/block under the sysfs root.*unknown (null), not absent' <<<"$n" ||
    { jq -c .notes "$TMP/nosys.last"; fail "empty /sys: note '$n'"; }
ok "empty /sys: schedulers null, and the note says why: $n"
