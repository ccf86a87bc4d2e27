#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The wait of an asynchronous reader (issue #35, docs/devices.md "The wait of an
# asynchronous submitter"): a libaio reader does not sleep in iowait while its requests
# are in flight, so its IODLY stays near 0 however long they wait. On a lab disk of
# 1.5 ms a request, 3 at once, under none (strict FIFO):
#  - a 16-deep libaio reader and a 1-deep libaio reader, one process each (fio
#    --thread): in every sample the lens measures the light reader's requests on the
#    disk (requests_wait: in flight half the time or more, each waiting 3 ms or more,
#    behind the deep one's), its io_delay_pct stays under 10 % (IODLY is the synchronous
#    wait), and at the last sample its role is `suffer`, the deep one's `cause`; `-b`
#    shows its INFLT (beside IODLY%) at 0.5 or more, the screen's detail view its
#    `requests on DEV` line;
#  - beside them a 1-deep io_uring reader: its requests measured the same way, at the
#    last sample `suffer` too (io_uring's completion wait may count as iowait: its
#    IODLY is not asserted);
#  - the light reader alone on the free disk: its requests measured too (in flight, at
#    about the service time), and in no sample `suffer`.
. "$(dirname "$0")/lib.sh"
. "$ROOT/tests/lab/lab.sh"
SOCK=iotriage-async-$$
. "$(dirname "$0")/lib_tmux.sh"
need fio
need jq
need tmux
[ "$(id -u)" = 0 ] || skip "needs root (BPF, lab disk)"
[ -r /sys/kernel/btf/vmlinux ] || skip "no kernel BTF at /sys/kernel/btf/vmlinux"
[ -x "$IOT" ] || fail "build ./iotriage first"
lab_up 1500 3 64 || exit $?
trap 'it_kill_bg; lab_down; it_cleanup' EXIT
echo none >"/sys/block/$LAB_NAME/queue/scheduler" || fail "cannot select none"

common=(--thread --filename="$LAB_DEV" --direct=1 --bs=4k --rw=randread --time_based --runtime=60
        --ioengine=libaio)
bg fio --name=deep "${common[@]}" --iodepth=16 >"$TMP/deep.out" 2>&1
DEEP=$BG
bg fio --name=light "${common[@]}" --iodepth=1 >"$TMP/light.out" 2>&1
LIGHT=$BG
bg fio --name=uring "${common[@]}" --ioengine=io_uring --iodepth=1 >"$TMP/uring.out" 2>&1
URING=$BG
lab_wait_users 3 || fail "the three readers did not all start: $(tail -2 "$TMP/deep.out" "$TMP/light.out" "$TMP/uring.out")"

timeout 60 "$IOT" --json -n 3 -d 2 -p "$DEEP" -p "$LIGHT" -p "$URING" >"$TMP/sat.json" 2>"$TMP/iot.err" ||
    fail "iotriage failed: $(head -3 "$TMP/iot.err")"
jq -e 'select(.lens.on == true)' "$TMP/sat.json" >/dev/null ||
    skip "the BPF lens did not load: $(jq -r '.lens.reason' "$TMP/sat.json" | tail -1)"

# figs FILE PID: per sample, "in_flight await_ms io_delay_pct role" of PID on the lab disk
figs() {
    jq -r --argjson p "$2" --arg d "$LAB_NAME" '.processes[]? | select(.pid == $p)
        | [(.requests_wait[$d]? // {} | .in_flight, .await_ms), .io_delay_pct, .role]
        | map(tostring) | join(" ")' "$1"
}
n=0
while read -r inf aw dly role; do
    n=$((n + 1))
    [ "$inf" != null ] && [ "$aw" != null ] ||
        fail "saturated: sample $n without the light reader's requests_wait: $(figs "$TMP/sat.json" "$LIGHT" | tr '\n' ';')"
    between "$inf" 0.5 2 || fail "saturated: light reader in flight $inf (sample $n)"
    between "$aw" 3 1000 || fail "saturated: light reader's requests waited $aw ms (sample $n)"
    between "$dly" 0 10 || fail "saturated: light reader's io_delay_pct $dly (sample $n): not the synchronous wait"
done < <(figs "$TMP/sat.json" "$LIGHT")
[ "$n" -ge 2 ] || fail "saturated: $n samples of the light reader"
last() { tail -n 1 "$TMP/sat.json" | jq -r --argjson p "$1" '[.processes[] | select(.pid == $p) | .role] | first | tostring'; }
sat=$(tail -n 1 "$TMP/sat.json" | jq -r --arg d "$LAB_NAME" '.devices[] | select(.name == $d) | "\(.saturated) \(.saturated_source) aqu \(.aqu_sz)"')
[ "$(last "$LIGHT")" = suffer ] ||
    fail "saturated: the light reader's role $(last "$LIGHT") (want suffer; device: $sat; $(figs "$TMP/sat.json" "$LIGHT" | tail -1))"
[ "$(last "$DEEP")" = cause ] ||
    fail "saturated: the deep reader's role $(last "$DEEP") (want cause; device: $sat; $(figs "$TMP/sat.json" "$DEEP" | tail -1))"
while read -r inf aw _ _; do
    [ "$inf" != null ] && [ "$aw" != null ] && between "$inf" 0.5 2 && between "$aw" 3 1000 ||
        fail "saturated: the io_uring reader's requests_wait: $(figs "$TMP/sat.json" "$URING" | tr '\n' ';')"
done < <(figs "$TMP/sat.json" "$URING")
[ "$(last "$URING")" = suffer ] ||
    fail "saturated: the io_uring reader's role $(last "$URING") (want suffer; device: $sat; $(figs "$TMP/sat.json" "$URING" | tail -1))"
ok "saturated: io_uring reader (in_flight await_ms io_delay_pct role) $(figs "$TMP/sat.json" "$URING" | tr '\n' ';')"
ok "saturated ($sat): light reader (in_flight await_ms io_delay_pct role) $(figs "$TMP/sat.json" "$LIGHT" | tr '\n' ';') deep $(last "$DEEP")"

# -b: INFLT beside IODLY% (the header's columns: PID USER PRIO FROM READ/s WRITE/s IODLY% INFLT)
timeout 60 "$IOT" -b -n 2 -d 2 -p "$LIGHT" >"$TMP/b.txt" 2>"$TMP/iot.err" || fail "-b failed: $(head -3 "$TMP/iot.err")"
grep -qE '^ +PID +USER +PRIO +FROM +READ/s +WRITE/s +IODLY% +INFLT ' "$TMP/b.txt" ||
    fail "-b: no INFLT beside IODLY%: $(grep -m1 -E '^ +PID ' "$TMP/b.txt")"
row=$(awk -v p="$LIGHT" '$1 == p' "$TMP/b.txt" | tail -n 1)
read -r _ _ _ _ _ _ dly inflt _ <<<"$row"
between "$inflt" 0.5 2 || fail "-b: the light reader's INFLT $inflt (IODLY% $dly): $row"
ok "-b: light reader IODLY% $dly INFLT $inflt"

# the screen's detail view: its requests' wait on the lab disk
T new-session -d -s ui -x 200 -y 50 "$IOT -d 1; echo EXITED \$?; sleep 60"
wait_for '^ +PID ' 20
T send-keys -t ui / light Enter
wait_for 'filter: light'
T send-keys -t ui Enter
wait_for "^Process $LIGHT" 10
wait_for "^requests +on $LAB_NAME: [0-9.]+ in flight on average, [0-9.]+ ms each" 20
ok "screen: $(screen | grep -m1 "^requests  *on $LAB_NAME")"
T send-keys -t ui Escape q
wait_for '^EXITED 0' 10

# ---- the light reader alone on the free disk ----
kill "$DEEP" "$URING" 2>/dev/null
wait "$DEEP" "$URING" 2>/dev/null
timeout 60 "$IOT" --json -n 3 -d 2 -p "$LIGHT" >"$TMP/free.json" 2>"$TMP/iot.err" ||
    fail "iotriage failed alone: $(head -3 "$TMP/iot.err")"
kill -0 "$LIGHT" 2>/dev/null || fail "the light reader died: $(tail -3 "$TMP/light.out")"
n=0
while read -r inf aw dly role; do
    n=$((n + 1))
    [ "$inf" != null ] && [ "$aw" != null ] || fail "free: sample $n without requests_wait"
    between "$aw" 0.5 3 || fail "free: the light reader's requests waited $aw ms alone (sample $n)"
    [ "$role" != suffer ] && [ "$role" != both ] || fail "free: the light reader alone is $role (sample $n: $inf $aw)"
done < <(figs "$TMP/free.json" "$LIGHT")
[ "$n" -ge 2 ] || fail "free: $n samples of the light reader"
ok "free: light reader alone (in_flight await_ms io_delay_pct role) $(figs "$TMP/free.json" "$LIGHT" | tr '\n' ';')"
