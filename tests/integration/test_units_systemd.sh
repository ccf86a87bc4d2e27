#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The unit-file parser checked against systemd itself. Real unit files in a temp root
# (drop-ins, aliases, templates, masks, invalid values, Nice=, IOSchedulingClass=,
# IOSchedulingPriority=, CPUSchedulingPolicy=); what `iotriage audit --units-only --json`
# derived is compared with what systemd's own parser makes of the same files.
#
# systemd is installed but not PID 1 here, so `systemctl show` and `systemd-analyze dump`
# cannot answer. What does answer offline (measured on systemd 252):
#  - `systemd --test --system` (as a non-root user: "Don't run test mode as root"), with
#    $SYSTEMD_UNIT_PATH set to the root's unit directories: loads the units in a test
#    manager and dumps every loaded unit: load state, Fragment Path, DropIn Path, and the
#    parsed Nice, IOSchedulingClass/IOPriority and CPUSchedulingPolicy (printed only when
#    set), plus its warnings with file and line ("Failed to parse IO scheduling class,
#    ignoring: Idle"). This is the reference used below.
#  - `systemd-analyze verify --root=DIR`: the same warnings, no values.
#  - `systemctl --root=DIR list-unit-files`: alias, masked and static states.
#  - not offline: `systemctl --root=DIR cat` ("cannot be used with --root="),
#    `systemd-analyze unit-paths --root`, `systemd-analyze dump` (needs PID 1).
# Where systemd and iotriage disagree, the test fails: systemd is right.
. "$(dirname "$0")/lib.sh"
need setpriv
need systemd-analyze
need systemctl
[ "$(id -u)" = 0 ] || skip "needs root to run systemd's test mode as another user"
SD=
for c in /lib/systemd/systemd /usr/lib/systemd/systemd; do [ -x "$c" ] && SD=$c && break; done
[ -n "$SD" ] || skip "systemd binary not found"
chmod 755 "$TMP"
R=$TMP/root
E=$R/etc/systemd/system
L=$R/lib/systemd/system
mkdir -p "$E" "$L"
chmod -R 755 "$R"

svc() { # svc FILE LINE...: a service with the lines, and a command so systemd takes it
    local f=$1; shift
    { echo "[Service]"; printf '%s\n' "$@"; echo "ExecStart=/bin/true"; } >"$f"
}
WANTS=()
want() { WANTS+=("$@"); }

# ---- values, numbers, names --------------------------------------------------------
svc "$E/idle.service" "IOSchedulingClass=idle"                          ; want idle.service
svc "$E/level.service" "IOSchedulingPriority=2"                         ; want level.service
svc "$E/rt.service" "IOSchedulingClass=realtime" "IOSchedulingPriority=1"  ; want rt.service
svc "$E/none.service" "IOSchedulingClass=none"                          ; want none.service
svc "$E/nums.service" "IOSchedulingPriority=0x3" "Nice=010" "IOSchedulingClass=2"; want nums.service
svc "$E/signs.service" "Nice=+5" "CPUSchedulingPolicy=3" "IOSchedulingClass=0b11"; want signs.service
svc "$E/neg.service" "Nice=-0x5" "IOSchedulingClass=-0" "CPUSchedulingPolicy=0"; want neg.service
svc "$E/pols.service" "CPUSchedulingPolicy=fifo" "CPUSchedulingPolicy=rr" "Nice= -20 "; want pols.service
svc "$E/spaces.service" "Nice =6" "IOSchedulingPriority=7  " "IOSchedulingClass= idle "; want spaces.service
printf '[Service]\r\nNice=4\r\nIOSchedulingClass=best-effort\r\nExecStart=/bin/true\r\n' >"$E/crlf.service"; want crlf.service
printf '\xef\xbb\xbf[Service]\nNice=1\nExecStart=/bin/true\n' >"$E/bom.service"; want bom.service
printf '[Service]\nNice=\\\n# a comment inside the continuation\n 7\nExecStart=/bin/true\n' >"$E/cont.service"; want cont.service
printf '[Socket]\nListenStream=/run/iotriage-test.sock\nNice=5\nIOSchedulingPriority=1\n' >"$E/sock.socket"; want sock.socket
# An empty assignment to either I/O key unsets both.
svc "$E/reset.service" "IOSchedulingClass=idle" "IOSchedulingPriority=" "Nice=3" ; want reset.service
svc "$E/reset2.service" "IOSchedulingClass=idle" "IOSchedulingClass=" "IOSchedulingPriority=5"; want reset2.service

# ---- values systemd rejects (the unit loads, the setting is dropped) -----------------
svc "$E/rejected.service" "IOSchedulingClass=Idle" "IOSchedulingPriority=9" "Nice=50"; want rejected.service
svc "$E/rejected2.service" "Nice=-21" "IOSchedulingPriority=-1" "CPUSchedulingPolicy=FIFO" 'Nice="5"' "Nice=5x"; want rejected2.service
svc "$E/caps.service" "nice=5" "IOSCHEDULINGCLASS=idle"                 ; want caps.service
printf '[Unit]\nNice=5\nnice=6\n[X-Mine]\nNice=7\n[Service]\nIOSchedulingPriority=3\nExecStart=/bin/true\n' >"$E/sections.service"; want sections.service
printf 'Nice=5\n[Service]\nIOSchedulingPriority=3\nExecStart=/bin/true\n' >"$E/outside.service"; want outside.service
# A rejected value that a drop-in then sets properly.
svc "$E/fixed.service" "Nice=50"; mkdir -p "$E/fixed.service.d"
printf '[Service]\nNice=5\n' >"$E/fixed.service.d/fix.conf"              ; want fixed.service

# ---- values systemd takes but the kernel refuses at every start ----------------------
svc "$E/kclass.service" "IOSchedulingClass=8"                           ; want kclass.service
svc "$E/kpolicy.service" "CPUSchedulingPolicy=6"                        ; want kpolicy.service

# ---- the load path: drop-ins, aliases, templates, dash prefixes, masks ---------------
svc "$L/dropin.service" "Nice=5"
mkdir -p "$E/dropin.service.d" "$L/dropin.service.d"
printf '[Service]\nNice=10\n' >"$L/dropin.service.d/10-a.conf"          # hidden by /etc's
printf '[Service]\nNice=11\n' >"$E/dropin.service.d/10-a.conf"
printf '[Service]\nIOSchedulingClass=idle\n' >"$L/dropin.service.d/20-b.conf"
printf '[Service]\nCPUSchedulingPolicy=batch\n' >"$L/dropin.service.d/30-c.conf"
ln -s /dev/null "$E/dropin.service.d/30-c.conf"                         # masks that one
want dropin.service
svc "$L/real.service" "Nice=3"
ln -s real.service "$L/alias.service"                                   # an alias
mkdir -p "$E/alias.service.d"
printf '[Service]\nIOSchedulingPriority=6\n' >"$E/alias.service.d/p.conf"
want alias.service real.service
ln -s alias.service "$E/alias-of-alias.service"                          # a chain of two
want alias-of-alias.service
mkdir -p "$R/opt/app"
svc "$R/opt/app/linked.service" "Nice=12" "IOSchedulingClass=best-effort"
ln -s ../../../opt/app/linked.service "$E/linked.service"              # a linked unit file
mkdir -p "$L/linked.service.d"
printf '[Service]\nIOSchedulingPriority=0\n' >"$L/linked.service.d/p.conf"
want linked.service
svc "$L/tmpl@.service" "IOSchedulingClass=idle"
mkdir -p "$E/tmpl@.service.d"
printf '[Service]\nNice=2\n' >"$E/tmpl@.service.d/n.conf"
want tmpl@a.service
svc "$L/foo-bar.service" "Nice=1"
mkdir -p "$E/foo-.service.d"
printf '[Service]\nIOSchedulingClass=realtime\n' >"$E/foo-.service.d/rt.conf"
want foo-bar.service
svc "$L/masked.service" "Nice=9"
ln -s /dev/null "$E/masked.service"                                     ; want masked.service
svc "$L/over.service" "Nice=9"
svc "$E/over.service" "Nice=8"                                          ; want over.service

# ---- units systemd refuses to load ---------------------------------------------------
svc "$E/badwd.service" "Nice=4" "WorkingDirectory=relative"             ; want badwd.service
printf '[Service]\nNice=4\n' >"$E/nocmd.service"                        ; want nocmd.service
printf '[Service]\nNice=4\nExecStart=bin/true\n' >"$E/badexec.service"  ; want badexec.service
printf '[Service\nNice=4\nExecStart=/bin/true\n' >"$E/badhdr.service"   ; want badhdr.service

printf '[Unit]\nDescription=stub\n' >"$E/sysinit.target"
printf '[Unit]\nDescription=what the test loads\nWants=%s\n' "${WANTS[*]}" >"$E/iotriage-test.target"
chmod -R go+rX "$R"

# ---- systemd's view --------------------------------------------------------------------
UP=$E:$R/run/systemd/system:$R/usr/local/lib/systemd/system:$L:$R/usr/lib/systemd/system
setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all \
    env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin SYSTEMD_UNIT_PATH="$UP" SYSTEMD_LOG_TARGET=console \
    SYSTEMD_LOG_COLOR=0 SYSTEMD_LOG_LOCATION=0 "$SD" --test --system --unit=iotriage-test.target \
    --no-pager >"$TMP/dump" 2>&1
grep -q "running in test system mode" "$TMP/dump" ||
    skip "systemd --test does not run here: $(head -3 "$TMP/dump" | tr '\n' ' ')"
grep -q -- "-> Unit iotriage-test.target:" "$TMP/dump" || fail "systemd loaded nothing: $(tail -5 "$TMP/dump")"
sdver=$("$SD" --version | head -1)

# One line per unit: NAME LOAD io=CLASS/LEVEL nice=N policy=P files=MAIN,DROPIN...
# systemd lists a drop-in masked by a link to /dev/null among its DropIn Paths; it applies
# nothing, and iotriage lists only the files it applies: left out here.
masks=" $(cd "$R" && find . -name '*.conf' -lname /dev/null | sed 's|^\.||' | tr '\n' ' ') "
awk -v root="$R" -v masks="$masks" '
function flush() {
    if (u == "") return
    printf "%s %s io=%s nice=%s policy=%s files=%s\n", u, load, io, nice, pol, files
}
function cls(c) { return c == "best-effort" ? "be" : c == "realtime" ? "rt" : c }
/^\t-> Unit / { flush(); u = $3; sub(/:$/, "", u); load = "?"; io = "-"; ioc = ""; nice = "-"; pol = "-"; files = ""; next }
/^\t\tUnit Load State: / { load = $NF }
/^\t\tFragment Path: / { p = $0; sub(/^\t\tFragment Path: /, "", p); sub("^" root, "", p); files = p }
/^\t\tDropIn Path: / { p = $0; sub(/^\t\tDropIn Path: /, "", p); sub("^" root, "", p); if (!index(masks, " " p " ")) files = files "," p }
/^\t\tNice: / { nice = $NF }
/^\t\tIOSchedulingClass: / { ioc = cls($NF) }
/^\t\tIOPriority: / { io = ioc "/" $NF }
/^\t\tCPUSchedulingPolicy: / { pol = $NF }
END { flush() }' "$TMP/dump" | sort >"$TMP/sd.all"
names=" ${WANTS[*]} "
awk -v names="$names" 'index(names, " " $1 " ")' "$TMP/sd.all" >"$TMP/sd.units"
[ "$(wc -l <"$TMP/sd.units")" -ge 30 ] || fail "systemd dumped too few of the test units: $(cat "$TMP/sd.units")"

# ---- iotriage's view -------------------------------------------------------------------
"$IOT" audit --units-only --root "$R" --json >"$TMP/a.json"; rc=$?
[ "$rc" = 1 ] || [ "$rc" = 3 ] || [ "$rc" = 0 ] || fail "audit: exit $rc"
jqf . "$TMP/a.json" >/dev/null
# Templates are listed by iotriage under their own name; systemd loads instance "a".
jq -r '.units[] | (.unit | sub("@\\.service$"; "@a.service")) + " "
    + (if .load_error then "refused" else "loaded" end)
    + " io=" + (if .io_class == null then "-" else .io_class + "/" + (.io_level | tostring) end)
    + " nice=" + (if .nice == null then "-" else (.nice | tostring) end)
    + " policy=" + (.cpu_policy // "-")
    + " files=" + (.files | join(","))' "$TMP/a.json" | sort >"$TMP/iot.units"

# 1. Every unit systemd loads with a scheduling value: iotriage has the same values and
#    the same files (main file and drop-ins, in order). The two whose values the kernel
#    refuses are checked apart (3).
grep ' loaded ' "$TMP/sd.units" | grep -v ' io=- nice=- policy=- ' | grep -v '^k\(class\|policy\)\.service ' >"$TMP/sd.cmp"
grep ' loaded ' "$TMP/iot.units" | grep -v ' io=- nice=- policy=- ' | grep -v '^k\(class\|policy\)\.service ' >"$TMP/iot.cmp"
if ! diff -u "$TMP/sd.cmp" "$TMP/iot.cmp" >"$TMP/diff"; then
    cat "$TMP/diff" >&2
    fail "iotriage and $sdver disagree on the values or files above (- systemd, + iotriage)"
fi
for u in real.service linked.service tmpl@a.service foo-bar.service dropin.service \
    sections.service outside.service; do
    grep -q "^$u " "$TMP/sd.cmp" || fail "$u not compared: systemd: $(grep "^$u " "$TMP/sd.units")"
done
# The alias, the chain and the alias's drop-in all land on real.service.
grep -q '^real.service loaded io=be/6 nice=3 .*files=/lib/systemd/system/real.service,/etc/systemd/system/alias.service.d/p.conf$' \
    "$TMP/sd.cmp" || fail "real.service: $(grep '^real' "$TMP/sd.cmp")"
ok "$(wc -l <"$TMP/sd.cmp") units: values and files as $sdver parses them"

# 2. Units systemd refuses to load (bad-setting, error) are the ones iotriage says
#    systemd refuses; masked units are not listed as running anything.
awk '$2 == "bad-setting" || $2 == "error" { print $1 }' "$TMP/sd.units" >"$TMP/sd.refused"
# (a unit with no scheduling key is only in problems[], named by its file)
jq -r '(.units[] | select(.load_error) | .unit),
       (.problems[] | select(.text | test("refuses")) | .path | split("/") | last)' \
    "$TMP/a.json" | sort -u >"$TMP/iot.refused"
diff -u "$TMP/sd.refused" "$TMP/iot.refused" >&2 || fail "refused units differ (- systemd, + iotriage)"
[ "$(wc -l <"$TMP/sd.refused")" = 4 ] || fail "expected 4 refused units, systemd: $(cat "$TMP/sd.refused")"
grep -q '^masked.service masked ' "$TMP/sd.units" || fail "systemd does not see masked.service masked"
jqf '[.units[].unit] | index("masked.service") == null' "$TMP/a.json" >/dev/null
systemctl --root="$R" list-unit-files --no-legend masked.service alias.service >"$TMP/luf" 2>&1
grep -q '^masked.service *masked' "$TMP/luf" && grep -q '^alias.service *alias' "$TMP/luf" ||
    fail "systemctl --root list-unit-files: $(cat "$TMP/luf")"
jqf '[.units[] | select(.unit == "real.service")] | length == 1' "$TMP/a.json" >/dev/null
ok "refused units ($(tr '\n' ' ' <"$TMP/sd.refused")) and the mask agree"

# 3. Values systemd takes and the kernel refuses (ioprio class 8, policy 6): systemd keeps
#    them (and every start fails); iotriage reports them rejected, saying so.
grep -q '^kclass.service loaded io=8/4 ' "$TMP/sd.units" || fail "systemd: $(grep kclass "$TMP/sd.units")"
grep -q '^kpolicy.service loaded .* policy=6 ' "$TMP/sd.units" || fail "systemd: $(grep kpolicy "$TMP/sd.units")"
jqf '[.units[] | select(.unit == "kclass.service" or .unit == "kpolicy.service")
     | .rejected[0].why | test("fails to start")] == [true, true]' "$TMP/a.json" >/dev/null
ok "class 8 and policy 6: systemd keeps them, iotriage says the service fails to start"

# 4. Every warning systemd gives about a scheduling line is a rejected entry in iotriage,
#    at the same file and line; every rejected entry iotriage reports is a line systemd
#    warned about, or one in a section systemd warned is unknown.
grep -E "^$R/[^:]+:[0-9]+: " "$TMP/dump" | sed "s|^$R||" >"$TMP/sd.warn"
: >"$TMP/sd.sched"
while IFS=: read -r f n _; do
    text=$(sed -n "${n}p" "$R$f" | tr -d '\r')
    if printf '%s\n' "$text" | grep -qiE '^[[:space:]]*(IOSchedulingClass|IOSchedulingPriority|Nice|CPUSchedulingPolicy)[[:space:]]*='; then
        echo "$f:$n" >>"$TMP/sd.sched"
    fi
done <"$TMP/sd.warn"
sort -u -o "$TMP/sd.sched" "$TMP/sd.sched"
jq -r '.units[] | .rejected[] | select(.why | test("fails to start") | not) | "\(.file):\(.line)"' \
    "$TMP/a.json" | sort -u >"$TMP/iot.rej"
missing=$(comm -23 "$TMP/sd.sched" "$TMP/iot.rej")
[ -z "$missing" ] || fail "systemd rejects these scheduling lines, iotriage does not say so: $missing"
extra=$(comm -13 "$TMP/sd.sched" "$TMP/iot.rej")
for e in $extra; do
    f=${e%:*} n=${e##*:}
    # systemd said nothing about the line itself: it must be in a section it called unknown.
    awk -F: -v f="$f" -v n="$n" '$1 == f && $2 + 0 < n + 0 && /Unknown section/ { found = 1 } END { exit !found }' \
        "$TMP/sd.warn" || fail "iotriage rejects $e, systemd did not complain: $(sed -n "${n}p" "$R$f")"
done
[ "$(wc -l <"$TMP/sd.sched")" -ge 12 ] || fail "too few warnings from systemd to compare: $(cat "$TMP/sd.sched")"
ok "$(wc -l <"$TMP/sd.sched") rejected scheduling lines: the same files and lines as systemd's warnings"

# 5. The audit counts the labels systemd drops as ignored (not the overridden one).
jqf '.units[] | select(.unit == "fixed.service") | .nice == 5 and .rejected[0].superseded' "$TMP/a.json" >/dev/null
jqf '.units[] | select(.unit == "rejected.service") | (.rejected | length) == 3 and all(.rejected[]; .superseded | not)' "$TMP/a.json" >/dev/null
jqf '.rejected >= 3 and .ignored >= .rejected' "$TMP/a.json" >/dev/null
# And systemd-analyze verify, the tool an operator would reach for, says the same of them.
systemd-analyze verify --man=no --root="$R" rejected.service >"$TMP/verify" 2>&1
grep -q 'rejected.service:2: Failed to parse IO scheduling class, ignoring: Idle' "$TMP/verify" ||
    fail "systemd-analyze verify: $(cat "$TMP/verify")"
ok "rejected labels counted as ignored; systemd-analyze verify agrees on rejected.service"
