#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Baselines from the record (issue 16): the recorder keeps each device's quiet-time level
# in its samples, and a live run on a machine it records starts from them, so that a run
# started in the middle of an incident judges saturation from its first refresh. Here,
# without the BPF lens (which judges from the first interval by itself): the lab disk is
# recorded while lightly used, then saturated; a run that may not read the recording says
# "unknown", one that may says saturated.
. "$(dirname "$0")/lib.sh"
. "$ROOT/tests/lab/lab.sh"
need fio
lab_up 2000 4 64 || exit $?
trap 'it_kill_bg; lab_down; it_cleanup' EXIT
echo none >"/sys/block/$LAB_NAME/queue/scheduler" || fail "cannot select none on $LAB_NAME"
reader() { # NAME SECONDS
    fio --name="$1" --filename="$LAB_DEV" --ioengine=psync --direct=1 --bs=4k --rw=randread \
        --time_based --runtime="$2" --output=/dev/null
}

# A quiet spell the recorder learns from: one synchronous reader (a queue of one).
bg "$IOT" record --dir "$TMP/rec" -d 0.5 --flush 0.5
rec=$BG
reader light 4
kill -TERM "$rec"; wait "$rec" || fail "recorder exited $?"
BG_PIDS=()
q=$("$IOT" --json --replay "$TMP/rec" | jq -s --arg d "$LAB_NAME" \
    '[.[].devices[] | select(.name == $d) | .quiet_await | numbers] | last')
[ -n "$q" ] && [ "$q" != null ] || fail "the recording holds no quiet-time level for $LAB_NAME"
ok "recorded quiet-time await of $LAB_NAME: $q ms"

# The incident: eight synchronous readers, started before iotriage.
for i in 1 2 3 4 5 6 7 8; do bg reader "sat$i" 20; done
lab_wait_users 8 || fail "the eight readers did not all start"
sleep 1   # the incident under way: the queue has filled
sat() { jq -r --arg d "$LAB_NAME" '.devices[] | select(.name == $d) | "\(.saturated) \(.quiet_await) \(.aqu_sz)"' "$1"; }
IOTRIAGE_RECORD_DIR= "$IOT" --json --no-bpf -n 1 -d 0.5 >"$TMP/cold.json" || fail "cold run failed"
read -r s_cold q_cold aqu <<<"$(sat "$TMP/cold.json")"
[ "$s_cold" = null ] || fail "without the record: saturated $s_cold (quiet $q_cold, aqu-sz $aqu), expected unknown"
IOTRIAGE_RECORD_DIR=$TMP/rec "$IOT" --json --no-bpf -n 1 -d 0.5 >"$TMP/warm.json" || fail "warm run failed"
read -r s_warm q_warm aqu <<<"$(sat "$TMP/warm.json")"
[ "$s_warm" = true ] || fail "with the record: saturated $s_warm (quiet $q_warm, aqu-sz $aqu), expected true"
ok "first refresh mid-incident: unknown without the record, saturated with it (quiet $q_warm ms, aqu-sz $aqu)"
