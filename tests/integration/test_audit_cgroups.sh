#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# `iotriage audit`'s cgroup section: every cgroup of the hierarchy the cgroup lens shows,
# its I/O controls judged against the devices with the live verdicts' rules.
#  1. a v2 fixture tree (tests/fixtures/cgroup/audit, the kernel documentation's
#     formats) through --proc-root/--sys-root: every control verdict the audit gives, in
#     text and JSON: io.weight ignored (none, kyber), honoured (io.cost enabled; bfq
#     with its own io.bfq.weight), undecided (a device not listed); io.max honoured and
#     its write limit not holding for buffered writes on a file system without cgroup
#     writeback; io.prio.class read (mq-deadline), ignored (none, kyber, bfq) and the
#     process it rewrites (also in the process list: idle/0 from "cgroup"); io.latency's target and its held-back depth; io.cost per
#     device; the summary counts and exit status 1;
#  2. exit 3 when the only cgroup setting cannot be judged (io.cost.qos a FIFO: not
#     opened, so unknown, and no hang);
#  3. v1 only (tests/fixtures/cgroup/audit-legacy): the v2 controls said unavailable,
#     the blkio throttle limits shown;
#  4. hostile trees: a cgroup named with an OSC sequence and a bidi override (escaped in
#     text, exact in JSON), a symlink out of the tree (not followed), a FIFO as io.max
#     (not opened: no hang); and the v2 tree with an LV (dm-0 over sdb1): a weight set for
#     the LV itself read by nothing, no other finding on the layer;
#  5. live: cgroups made in the machine's v2 hierarchy, named like a docker container
#     and a systemd service, each with a real process moved in: listed with their names
#     and process counts. Removed on exit, also on failure.
. "$(dirname "$0")/lib.sh"
need jq

FX=$ROOT/tests/fixtures/cgroup
mkdir -p "$TMP/root/etc/systemd/system"    # no unit files: the cgroup section alone
audit_fx() { # audit_fx TREE ARGS...: the audit of a fixture tree, bounded in time
    local t=$1
    shift
    timeout 20 "$IOT" audit --root "$TMP/root" --proc-root "$t/proc" --sys-root "$t/sys" "$@"
}
cgq() { jq -e --arg p "$1" ".cgroups[] | select(.path == \$p) | $2" "$TMP/a.json" >/dev/null ||
        fail "cgroup $1: $2 is false: $(jq -c --arg p "$1" '.cgroups[] | select(.path == $p)' "$TMP/a.json")"; }

# ---- 1. every verdict on a v2 tree ---------------------------------------------------
audit_fx "$FX/audit" --json >"$TMP/a.json"; rc=$?
[ "$rc" = 1 ] || fail "v2 fixture: exit $rc, expected 1 (cgroup settings without effect)"
jqf '.cgroup_hierarchy | .version == "v2" and .mount == "/sys/fs/cgroup" and .io_controller == true
     and .memory_controller == true and .error == null
     and (.io_cost | length == 2) and .io_cost[0].device == "sda" and .io_cost[0].enabled == true
     and .io_cost[1].device == "sdb" and .io_cost[1].enabled == false' "$TMP/a.json" >/dev/null
jqf '.cgroups_walked == 8 and .cgroups_truncated == false and (.cgroups | length == 8)
     and .cgroups[0].path == "/" and .cgroups[0].settings.unavailable == "the root cgroup has no io controls"' \
    "$TMP/a.json" >/dev/null
DB=/system.slice/db.service
WEB=/system.slice/web.service
DOCKER=/system.slice/docker-3f2a9c1be0d4c8a7f6e5d4c3b2a1908f7e6d5c4b3a29180f7e6d5c4b3a291807.scope
POD=/kubepods.slice/kubepods-pod8d5ad1c8_64f3_4b1f_9e2a_0c1e4b6a7d21.slice
# names and membership
cgq "$DB" '.unit == "db.service" and .container == null and .processes == 1'
cgq "$DOCKER" '.container.runtime == "docker" and .container.short_id == "3f2a9c1be0d4" and .processes == 0'
cgq "$POD" '.pod.uid == "8d5ad1c8-64f3-4b1f-9e2a-0c1e4b6a7d21" and .pod.qos == "guaranteed"'
# settings, as a sample's cgroups[].settings
cgq "$DB" '.settings | .hierarchy == "v2" and .io_prio_class == "idle" and .io_weight.default == 100
    and .io_weight.devices == [{"device":"sdb","weight":500}]
    and .io_max == [{"device":"sdb","rbps":2097152,"wbps":null,"riops":null,"wiops":120}]
    and .io_latency == [] and .unavailable == null'
cgq "$WEB" '.settings.io_weight | .default == 300 and .devices == [{"device":"8:99","weight":200}]'
cgq "$POD" '.settings.io_latency == [{"device":"sda","target_us":10000}]'
f() { jq -c --arg p "$1" --arg s "$2" --arg d "$3" \
      '[.cgroups[] | select(.path == $p) | .findings[] | select(.setting == $s and .device == $d)]' "$TMP/a.json"; }
fv() { # fv PATH SETTING DEVICE JQ: the findings of that setting on that device satisfy JQ
    echo "$(f "$1" "$2" "$3")" | jq -e "$4" >/dev/null || fail "$1 $2 on $3: $(f "$1" "$2" "$3") fails $4"; }
# io.weight: ignored where nothing reads it, honoured where io.cost or bfq does
fv "$DB" io.weight sdb 'length == 1 and .[0].verdict == "ignored" and .[0].code == "cgroup-weight-ignored"
    and .[0].scheduler == "none" and .[0].value == "500" and (.[0].text | test("io.weight 500 on sdb does nothing"))'
fv "$DB" io.weight sda 'length == 0'                       # its weight there is the default
fv "$WEB" io.weight sda '.[0].verdict == "honoured" and .[0].code == null and (.[0].text | test("io.cost is enabled"))'
fv "$WEB" io.weight sdb '.[0].verdict == "ignored" and .[0].code == "cgroup-weight-ignored"'
fv "$WEB" io.weight sdc '.[0].verdict == "ignored" and (.[0].text | test("kyber reads no cgroup weight"))'
fv "$WEB" io.weight sdd '.[0].verdict == "honoured" and (.[0].text | test("bfq reads io.bfq.weight 300"))'
fv "$WEB" io.weight 8:99 '.[0].verdict == "undecided" and .[0].scheduler == null'
fv "$WEB" io.weight loop0 'length == 0'                    # never used: a default is not judged there
# io.max: enforced whatever the scheduler; a write limit on a vfat-only disk does not
# hold for buffered writes; one on an xfs disk does
fv "$DB" io.max sdb 'length == 1 and .[0].verdict == "honoured" and .[0].value == "rbps=2097152 wiops=120"'
fv "$WEB" io.max sdc 'length == 2 and .[0].verdict == "honoured" and .[1].verdict == "ignored"
    and .[1].code == "cgroup-writeback-root" and (.[1].text | test("vfat does not do cgroup writeback"))'
fv "$WEB" io.max sda 'length == 0'                         # a row of "max" is no limit
# io.prio.class idle: read by mq-deadline, ignored by none and kyber, no effect under bfq
fv "$DB" io.prio.class sda '.[0].verdict == "honoured" and .[0].value == "idle (idle/0)"'
fv "$DB" io.prio.class sdb '.[0].verdict == "ignored" and (.[0].text | test("reads no I/O priority"))'
fv "$DB" io.prio.class sdc '.[0].verdict == "ignored"'
fv "$DB" io.prio.class sdd '.[0].verdict == "ignored" and (.[0].text | test("bfq reads the task.s own priority"))'
# ... and the process it rewrites (nice 10: be/6), named, not counted
fv "$DB" io.prio.class - 'length == 1 and .[0].code == "cgroup-prio-class" and .[0].counted == false
    and .[0].value == "pid 4194303" and (.[0].text | test("^postgres\\[4194303\\] be/6 becomes idle/0"))'
# ... and the process list shows the priority its requests carry, as the screen does
jqf '.processes[] | select(.pid == 4194303) | .effective_class == "idle" and .effective_level == 0
     and .source == "cgroup"' "$TMP/a.json" >/dev/null
# io.latency: a target, and a cgroup io.latency holds back now (io.stat depth=2)
fv "$POD" io.latency sda '.[0].verdict == "honoured" and .[0].value == "target=10000"'
fv "$DOCKER" io.latency sda '.[0].code == "cgroup-iolatency-throttled" and .[0].counted == false
    and .[0].value == "depth=2" and (.[0].text | test("limits it to 2 requests in flight on sda"))'
jqf '.cgroup_ignored == 7 and .cgroup_honoured == 6 and .cgroup_undecided == 1
     and .ignored == 0' "$TMP/a.json" >/dev/null
ok "v2 fixture JSON: weight ignored/honoured/undecided, io.max and writeback, io.prio.class and whom it rewrites, io.latency; 7 without effect, 6 in effect, 1 undecided, exit 1"

audit_fx "$FX/audit" >"$TMP/a.txt"; rc=$?
[ "$rc" = 1 ] || fail "v2 fixture text: exit $rc"
grep -q "^Cgroups (v2 hierarchy at /sys/fs/cgroup):" "$TMP/a.txt" || fail "no cgroup heading: $(cat "$TMP/a.txt")"
grep -q "^  io.cost on sda: enabled (ctrl auto)" "$TMP/a.txt" || fail "io.cost per device not shown"
grep -q "^  $DB  1 process$" "$TMP/a.txt" || fail "db.service line: $(grep db.service "$TMP/a.txt")"
grep -q "^  $DOCKER  (docker 3f2a9c1be0d4)  0 processes$" "$TMP/a.txt" || fail "docker line: $(grep docker "$TMP/a.txt")"
grep -A1 "^    sdb        none         ignored        io.weight 500$" "$TMP/a.txt" |
    grep -q "^      cgroup-weight-ignored: $DB: io.weight 500 on sdb does nothing" || fail "weight verdict text: $(cat "$TMP/a.txt")"
grep -q "^    sdc        kyber        ignored        io.max wbps=1048576$" "$TMP/a.txt" || fail "writeback line"
grep -q "^      cgroup-prio-class: postgres\[4194303\] be/6 becomes idle/0" "$TMP/a.txt" || fail "override line"
grep -q "^7 cgroup setting(s) without effect, 6 in effect, 1 undecided.$" "$TMP/a.txt" ||
    fail "summary: $(tail -3 "$TMP/a.txt")"
grep -q "user.slice" "$TMP/a.txt" && fail "an empty cgroup with nothing set is listed in the text"
ok "v2 fixture text: heading, io.cost, names, verdict lines with codes, summary"

# ---- 2. nothing without effect, something undecided: exit 3 -------------------------
cp -a "$FX/audit" "$TMP/u"
C=$TMP/u/sys/fs/cgroup
rm "$C/io.cost.qos"
mkfifo "$C/io.cost.qos"                       # unreadable (and never opened): io.cost unknown
for d in "$C"/system.slice/*/; do
    printf 'default 100\n' >"$d/io.bfq.weight"
    : >"$d/io.max"
    echo no-change >"$d/io.prio.class"
done
printf 'default 100\n8:0 400\n' >"$C/system.slice/db.service/io.weight"
printf 'default 100\n' >"$C/system.slice/web.service/io.weight"
: >"$C$POD/io.latency"
audit_fx "$TMP/u" --json >"$TMP/u.json"; rc=$?
[ "$rc" = 3 ] || fail "only an undecided weight: exit $rc, expected 3 ($(jq -c '[.cgroup_ignored, .cgroup_honoured, .cgroup_undecided]' "$TMP/u.json"))"
jqf '.cgroup_ignored == 0 and .cgroup_honoured == 0 and .cgroup_undecided == 1 and .cgroup_hierarchy.io_cost == null' "$TMP/u.json" >/dev/null
jqf '[.cgroups[].findings[] | select(.setting == "io.weight")][0] | .device == "sda" and .verdict == "undecided"
     and (.text | test("io.cost.qos of the root could not be read"))' "$TMP/u.json" >/dev/null
ok "io.cost.qos unreadable: the weight undecided, not ignored; exit 3"

# ---- 3. v1 only ------------------------------------------------------------------------
audit_fx "$FX/audit-legacy" --json >"$TMP/l.json"; rc=$?
[ "$rc" = 1 ] || fail "v1 fixture: exit $rc, expected 1 (write limits that buffered writes escape)"
jqf '.cgroup_hierarchy.version == "v1-blkio" and .cgroup_hierarchy.io_controller == false' "$TMP/l.json" >/dev/null
jqf '.cgroups[] | select(.path == "/lxc/web01") | .container.runtime == "lxc" and .processes == 1
     and .settings.hierarchy == "v1-blkio" and .settings.io_weight == null and .settings.io_prio_class == null
     and (.settings.unavailable | test("no cgroup v2 hierarchy"))
     and (.settings.io_max | length == 2)
     and ([.findings[] | select(.verdict == "honoured")] | length == 2)
     and ([.findings[] | select(.code == "cgroup-writeback-root")] | length == 2)
     and (.findings[0] | .device == "sda" and .value == "read_bps=10485760 write_bps=5242880 write_iops=200")' \
    "$TMP/l.json" >/dev/null
audit_fx "$FX/audit-legacy" >"$TMP/l.txt"
grep -q "the v2 controls (io.max, io.weight, io.prio.class, io.latency, io.cost) are unavailable; blkio throttle limits are shown" \
    "$TMP/l.txt" || fail "v1: unavailability not said: $(cat "$TMP/l.txt")"
grep -q "^  /lxc/web01  (lxc web01)  1 process$" "$TMP/l.txt" || fail "v1: the container line"
ok "v1 only: v2 controls unavailable, blkio throttle limits judged (and their writes charged to the root)"

# No cgroup hierarchy at all (a tree without mountinfo): said, nothing counted.
audit_fx "$ROOT/tests/fixtures/root1" --json >"$TMP/n.json"
jqf '.cgroup_hierarchy.version == null and (.cgroup_hierarchy.error | length > 0) and .cgroups == []
     and .cgroups_walked == 0 and .cgroup_undecided == 0' "$TMP/n.json" >/dev/null
audit_fx "$ROOT/tests/fixtures/root1" | grep -q "^Cgroups: no cgroup hierarchy could be read" ||
    fail "no hierarchy: not said in the text"
ok "no cgroup hierarchy: said as such, nothing judged"

# ---- 4. hostile trees --------------------------------------------------------------------
cp -a "$FX/audit" "$TMP/h"
C=$TMP/h/sys/fs/cgroup
osc=$'\e]0;pwned\a'
bidi=$'\u202e'
evil="x${osc}${bidi}gpj.service"
mkdir "$C/system.slice/$evil"
printf 'default 700\n' >"$C/system.slice/$evil/io.weight"
mkfifo "$C/system.slice/$evil/io.max"                     # reading it would block for ever
mkdir "$TMP/outside"
printf 'default 900\n' >"$TMP/outside/io.weight"
ln -s "$TMP/outside" "$C/system.slice/escape.service"      # a directory link out of the tree
ln -sf "$TMP/outside/io.weight" "$C/user.slice/io.weight"  # a file link out of the tree
LC_ALL=C.UTF-8 audit_fx "$TMP/h" >"$TMP/h.txt"; rc=$?
[ "$rc" = 1 ] || fail "hostile tree: exit $rc (124: it hung)"
grep -q "pwned" "$TMP/h.txt" || fail "the hostile cgroup is not listed"
if LC_ALL=C grep -q $'\e' "$TMP/h.txt"; then fail "an ESC byte reached the text output"; fi
if grep -q "$bidi" "$TMP/h.txt"; then fail "U+202E reached the text output"; fi
grep -qF '\u{202e}' "$TMP/h.txt" || fail "bidi override not shown as \\u{202e}"
grep -q "escape.service\|io.weight 900" "$TMP/h.txt" && fail "a symlink out of the tree was followed"
audit_fx "$TMP/h" --json >"$TMP/h.json"; rc=$?
[ "$rc" = 1 ] || fail "hostile tree JSON: exit $rc"
jqf --arg p "/system.slice/$evil" '.cgroups[] | select(.path == $p) | .unit == ($p | ltrimstr("/system.slice/"))
     and .settings.io_max == null and .settings.unavailable == "Invalid argument"
     and ([.findings[] | select(.setting == "io.weight" and .value == "700")] | length > 0)' "$TMP/h.json" >/dev/null
jqf '.cgroups_walked == 9 and ([.cgroups[] | select(.path | test("escape"))] | length == 0)
     and (.cgroups[] | select(.path == "/user.slice") | .settings.io_weight == null)' "$TMP/h.json" >/dev/null
ok "hostile tree: OSC and U+202E escaped in text and exact in JSON, a FIFO not opened, symlinks not followed"

# ---- 4b. a layer: the fixture with an LV (dm-0, dm-linear over sdb1) -----------------
# A weight set for the LV itself is read by nothing: said so, naming the disk to set it
# for; the LV, busy since boot, gets no default-weight or io.prio.class finding of its
# own (sdb below it is judged, as before). The live rule's text (verdict_cg_layer_weight).
LX=$TMP/layer
cp -a "$FX/audit" "$LX"
DM=$LX/sys/devices/virtual/block/dm-0
mkdir -p "$DM/queue" "$DM/slaves" "$DM/holders" "$DM/dm"
echo none >"$DM/queue/scheduler"           # 6.1's bare none: no scheduler of its own
echo 253:0 >"$DM/dev"
echo LVM-iotriageaudittestuuid >"$DM/dm/uuid"
echo vg-data >"$DM/dm/name"
ln -s ../../../../pci0000:00/0000:00:05.0/host0/block/sdb/sdb1 "$DM/slaves/sdb1"
mkdir -p "$LX/sys/devices/pci0000:00/0000:00:05.0/host0/block/sdb/sdb1/holders"
ln -s ../../../../../../../virtual/block/dm-0 "$LX/sys/devices/pci0000:00/0000:00:05.0/host0/block/sdb/sdb1/holders/dm-0"
ln -s ../../devices/virtual/block/dm-0 "$LX/sys/class/block/dm-0"
echo " 253       0 dm-0 480 0 3800 880 340 0 2700 590 0 1180 1470 0 0 0 0 0 0" >>"$LX/proc/diskstats"
printf 'default 300\n8:99 200\n253:0 400\n' >"$LX/sys/fs/cgroup/system.slice/web.service/io.weight"
audit_fx "$LX" --json >"$TMP/a.json"; rc=$?
[ "$rc" = 1 ] || fail "layer fixture: exit $rc, expected 1"
fv "$WEB" io.weight dm-0 'length == 1 and .[0].verdict == "ignored" and .[0].code == "cgroup-weight-ignored"
    and .[0].value == "400" and (.[0].text | test("io.weight 400 on dm-0 does nothing: dm-0 \\(LVM, vg-data\\) is a layer"))
    and (.[0].text | test("weighed at the disks below it \\(sdb\\): set the weight for those"))'
fv "$DB" io.weight dm-0 'length == 0'                      # its default there: judged at sdb
fv "$DB" io.prio.class dm-0 'length == 0'
fv "$DB" io.prio.class sdb '.[0].verdict == "ignored"'
jqf '.cgroup_ignored == 8' "$TMP/a.json" >/dev/null
ok "layer fixture: a weight on the LV itself said to do nothing, naming sdb; no default weight or io.prio.class judged on the LV"

# ---- 5. live: made cgroups with real processes, listed with their names --------------
[ "$(id -u)" = 0 ] || skip "the live part needs root (making cgroups)"
CG=$(awk '$0 ~ / - cgroup2 / { print $5; exit }' /proc/self/mountinfo)
[ -n "$CG" ] || skip "no cgroup v2 hierarchy mounted"
[ -w "$CG/cgroup.procs" ] || skip "cgroup v2 hierarchy at $CG is not writable"
[ "$(sed -n 's/^0:://p' /proc/self/cgroup)" != "" ] || skip "no v2 line in /proc/self/cgroup"
ID=$(printf 'audit-%s' $$ | sha256sum | cut -c1-64)
TOP="iotriage-audit-$$.slice"
C_DOCKER="/$TOP/docker-$ID.scope"
C_SVC="/$TOP/iotriage-audit-$$.service"
MADE=("/$TOP" "$C_DOCKER" "$C_SVC")
cg_cleanup() {
    it_kill_bg
    local i c p
    for ((i = ${#MADE[@]} - 1; i >= 0; i--)); do
        c="$CG${MADE[$i]}"
        [ -d "$c" ] || continue
        while read -r p; do
            [ -n "$p" ] && echo "$p" >"$CG/cgroup.procs" 2>/dev/null
        done <"$c/cgroup.procs"
        rmdir "$c" 2>/dev/null || echo "warning: could not remove $c" >&2
    done
}
trap 'cg_cleanup; it_cleanup' EXIT
for c in "${MADE[@]}"; do
    mkdir "$CG$c" || fail "cannot make cgroup $CG$c"
done
bg sleep 300
echo "$BG" >"$CG$C_DOCKER/cgroup.procs" || fail "cannot move the sleep into $C_DOCKER"
in_docker=$BG
bg sleep 300
echo "$BG" >"$CG$C_SVC/cgroup.procs" || fail "cannot move the sleep into $C_SVC"
in_svc=$BG
grep -qx "$in_docker" "$CG$C_DOCKER/cgroup.procs" || fail "the sleep is not in $C_DOCKER"

timeout 60 "$IOT" audit --root "$TMP/root" --json >"$TMP/live.json"; rc=$?
case $rc in 0|1|3) ;; *) fail "live audit: exit $rc" ;; esac
jqf --arg m "$CG" '.cgroup_hierarchy | .version == "v2" and .mount == $m and .error == null' "$TMP/live.json" >/dev/null
jqf --arg p "$C_DOCKER" --arg id "$ID" '.cgroups[] | select(.path == $p) | .container.runtime == "docker"
     and .container.id == $id and .container.short_id == ($id[0:12]) and .unit == "docker-\($id).scope"
     and .processes == 1' "$TMP/live.json" >/dev/null
jqf --arg p "$C_SVC" --arg u "iotriage-audit-$$.service" '.cgroups[] | select(.path == $p) | .unit == $u
     and .container == null and .processes == 1' "$TMP/live.json" >/dev/null
jqf --arg p "/$TOP" --arg u "$TOP" '.cgroups[] | select(.path == $p) | .unit == $u and .processes == 0' "$TMP/live.json" >/dev/null
# The machine's own settings decide the findings; where the v2 hierarchy lacks the io
# controller (these test machines), every cgroup says so and nothing is judged.
if jq -e '.cgroup_hierarchy.io_controller == false' "$TMP/live.json" >/dev/null; then
    jqf --arg p "$C_DOCKER" '.cgroups[] | select(.path == $p) | .settings.io_max == null and .findings == []
         and (.settings.unavailable | test("no io controller"))' "$TMP/live.json" >/dev/null
fi
timeout 60 "$IOT" audit --root "$TMP/root" >"$TMP/live.txt"
grep -q "^  $C_DOCKER  (docker ${ID:0:12})  1 process$" "$TMP/live.txt" ||
    fail "live text lacks the docker cgroup: $(grep -n "$TOP" "$TMP/live.txt")"
grep -q "^  $C_SVC  1 process$" "$TMP/live.txt" || fail "live text lacks the service cgroup"
ok "live: $C_DOCKER (docker ${ID:0:12}) and $C_SVC listed with their names, one process each"
