#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Run as an unprivileged user: what is missing is said (taskstats needs CAP_NET_ADMIN,
# other users' io files are EACCES), the rest keeps working, nothing is reported as 0.
. "$(dirname "$0")/lib.sh"
need setpriv
[ "$(id -u)" = 0 ] || skip "needs root to drop privileges"
# nobody runs a copy: the checkout may sit where nobody cannot enter (/root, a 0700 home).
IOT=$(for_nobody "$IOT")
cd "$TMP" || fail "cd $TMP"
run_nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all "$@"; }
# (through a shell: setpriv itself manages to exec a file nobody cannot reach, a shell
# run as nobody does not)
run_nobody sh -c '"$0" --version' "$IOT" >/dev/null 2>"$TMP/v.err" ||
    fail "nobody cannot run $IOT: $(cat "$TMP/v.err")"

# A process of root's: its io file is not readable by nobody.
bg sleep 30; p=$BG
run_nobody "$IOT" --json -n 1 -d 0.2 >"$TMP/n.json" 2>"$TMP/n.err" || fail "unprivileged run failed: $(cat "$TMP/n.err")"
jqf . "$TMP/n.json" >/dev/null
jqf --argjson p "$p" '.processes[] | select(.pid == $p) | .read_bps == null and .io_error == "permission denied"' \
    "$TMP/n.json" >/dev/null
ok "root's process: read_bps null, io_error 'permission denied'"
jqf '[.devices[] | select(.name == "vda")] | length == 1' "$TMP/n.json" >/dev/null
jqf '.processes | length > 1' "$TMP/n.json" >/dev/null
ok "devices and process list still there"
# No taskstats (CAP_NET_ADMIN) and no lens: no delay is measured. The estimate sampled
# from thread states (io_delay_source "sampled") needs no privilege and is given to a task
# found in D state by the first sample, so it may appear; nothing else may.
jqf 'all(.processes[]; .io_delay_pct == null or .io_delay_source == "sampled")' "$TMP/n.json" >/dev/null
jqf 'any(.notes[]; .source == "delayacct" and (.text | test("CAP_NET_ADMIN|delay accounting is off|task_delayacct")))' \
    "$TMP/n.json" >/dev/null
ok "delays null (or sampled), with a note: $(jq -r '.notes[] | select(.source=="delayacct") | .text' "$TMP/n.json")"
# Its own processes' io is readable.
run_nobody bash -c "\"$IOT\" --json -n 1 -d 0.2 -p \$\$" >"$TMP/own.json" || fail "own run failed"
jqf '.processes[0].read_bps != null and .processes[0].io_error == null' "$TMP/own.json" >/dev/null
ok "own process: rates known"
