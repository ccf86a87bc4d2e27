# SPDX-License-Identifier: GPL-2.0-or-later
# shellcheck shell=bash
# Shared by the guest tests of the VM lane (tests/vm/guest/test_*.sh), run by the guest's
# /init under bash (busybox for the tools). Exit 0 pass, 77 skip (the last line says
# why), anything else fail. The guest is the test's alone and dies after the run, but a
# test still removes the devices and cgroups it made: the next test starts clean.
set -u
IOT=/iot/iotriage
fail() { echo "FAIL: $*"; exit 1; }
skip() { echo "skipped: $*"; exit 77; }
ok()   { echo "ok: $*"; }
BG_PIDS=()
FIO_PIDS=()
CLEANUP=()
bg() { "$@" & BG=$!; BG_PIDS+=("$BG"); }
on_exit() {
    local p c
    for p in "${BG_PIDS[@]}"; do kill "$p" 2>/dev/null; done
    for p in "${BG_PIDS[@]}"; do wait "$p" 2>/dev/null; done
    for ((c = ${#CLEANUP[@]} - 1; c >= 0; c--)); do eval "${CLEANUP[c]}" 2>/dev/null; done
}
trap on_exit EXIT
# wait_until SECONDS CMD...: until CMD succeeds (polled every 100 ms); 1 after SECONDS.
wait_until() {
    local end=$((SECONDS + $1)); shift
    until "$@"; do
        [ "$SECONDS" -lt "$end" ] || return 1
        sleep 0.1
    done
}
# sched DEV: the scheduler in use on DEV; set_sched DEV NAME selects one.
sched() { sed 's/.*\[\([^]]*\)\].*/\1/' "/sys/block/$1/queue/scheduler"; }
set_sched() {
    echo "$2" >"/sys/block/$1/queue/scheduler" && [ "$(sched "$1")" = "$2" ] ||
        fail "cannot select $2 on $1: $(cat "/sys/block/$1/queue/scheduler")"
}
# nullb NAME KEY=VAL...: a null_blk disk made through configfs, powered on (softirq
# completions: timer completions soft-lock a TCG guest). No poll queue unless asked:
# 6.1 gives each configfs disk one by default, an hctx of its own.
nullb() {
    local n=$1 kv d=/sys/kernel/config/nullb/$1; shift
    mkdir "$d" || return 1
    echo 0 >"$d/poll_queues" 2>/dev/null
    for kv in "$@"; do echo "${kv#*=}" >"$d/${kv%%=*}" || return 1; done
    echo 1 >"$d/power" || return 1
    CLEANUP+=("nullb_rm $n")
}
nullb_rm() { echo 0 >"/sys/kernel/config/nullb/$1/power"; rmdir "/sys/kernel/config/nullb/$1"; }
# scsi_debug KEY=VAL...: the SCSI disk scsi_debug makes (sdX, named in $SD), with a delay
# per command and a queue depth of its own: a disk with a known latency and parallelism.
scsi_debug() {
    insmod "$(find /lib/modules -name scsi_debug.ko)" "$@" || return 1
    CLEANUP+=("rmmod scsi_debug")
    wait_until 20 eval 'SD=$(ls /sys/bus/pseudo/drivers/scsi_debug/adapter0/host*/target*/*/block 2>/dev/null); [ -n "$SD" ] && [ -b "/dev/$SD" ]' ||
        return 1
}
# dev_json FILE NAME: the device NAME's object in the last sample of FILE.
dev_json() { tail -n 1 "$1" | jq -c --arg d "$2" '.devices[] | select(.name == $d)'; }
# fio_read NAME DEV SECONDS [fio options...]: a 4 KiB random direct reader in the
# background (pid in $BG), its JSON report in /tmp/NAME.json; started through $FIO_PRE
# when set (e.g. "ionice -c3").
fio_read() {
    local name=$1 dev=$2 secs=$3; shift 3
    FIO_DEV=$dev
    bg ${FIO_PRE:-} fio --name="$name" --filename="$dev" --direct=1 --bs=4k --rw=randread --time_based \
        --runtime="$secs" --eta=never --output-format=json --output="/tmp/$name.json" "$@"
    FIO_PIDS+=("$BG")
}
# readers_stop: end the fio readers started with fio_read (SIGINT: each still writes its
# results) and wait for them; fio_iops NAME: that reader's read IOPS (fio puts its
# "terminating on signal" line ahead of the JSON in its output file).
readers_stop() { kill -INT $(pidof fio) 2>/dev/null; wait "${FIO_PIDS[@]}" 2>/dev/null; FIO_PIDS=(); }
fio_iops() { sed -n '/^{/,$p' "/tmp/$1.json" | jq '.jobs[0].read.iops | round'; }
# users DEV N: N fio processes hold DEV open (fio's jobs are forked late).
users() {
    # One ls a fio process: a readlink a descriptor of every process is seconds under TCG.
    local p n=0
    for p in $(pidof fio); do
        ls -l "/proc/$p/fd" 2>/dev/null | grep -q " -> $1\$" && n=$((n + 1))
    done
    [ "$n" -ge "$2" ]
}
# sample_during TAG USERS CMD...: start iotriage (--json, 1.5 s samples), run CMD (which
# starts readers in the background, as fio_read does) once iotriage's first sample is out
# (the lens loaded: seconds under TCG), wait until USERS fio processes hold $FIO_DEV
# open, and keep in /tmp/TAG.json the first sample wholly after that; with SAMPLES=N,
# that one and the N-1 after it in /tmp/TAG.more (a verdict that a loaded TCG guest's
# timing can miss in one 1.5 s sample is looked for in two). Then the readers are
# stopped (readers_stop; KEEP_READERS=1: the caller does it): their SECONDS are an upper
# bound, long enough to outlast the samples however slow the guest (a fixed 5 s run
# ended before the sample judged in a loaded CI guest, which then had no reader).
sample_during() {
    local tag=$1 want=$2 iot n; shift 2
    $IOT --json -d 1.5 -n 40 >"/tmp/$tag.all" 2>"/tmp/$tag.err" &
    iot=$!
    wait_until 60 eval '[ -s "/tmp/$tag.all" ]' || fail "$tag: iotriage wrote nothing in 60 s: $(cat "/tmp/$tag.err")"
    "$@"
    wait_until 30 users "$FIO_DEV" "$want" || { kill "$iot"; fail "$tag: the readers did not start"; }
    n=$(($(wc -l <"/tmp/$tag.all") + 2))
    local last=$((n + ${SAMPLES:-1} - 1))
    wait_until 30 eval '[ "$(wc -l <"/tmp/$tag.all")" -ge "$last" ]' || { kill "$iot"; fail "$tag: no sample $last"; }
    [ -n "${KEEP_READERS:-}" ] || readers_stop
    kill "$iot"; wait "$iot" 2>/dev/null
    sed -n "${n}p" "/tmp/$tag.all" >"/tmp/$tag.json"
    sed -n "${n},${last}p" "/tmp/$tag.all" >"/tmp/$tag.more"
}
# cg_make NAME...: cgroups under the v2 root (io and memory enabled below the root),
# removed at exit; cgin NAME CMD...: exec CMD inside cgroup NAME (for FIO_PRE, or bg).
CG=/sys/fs/cgroup
cg_make() {
    local c
    echo "+io +memory" >"$CG/cgroup.subtree_control" || fail "cannot enable io and memory in v2"
    for c in "$@"; do
        mkdir "$CG/$c" || fail "mkdir $CG/$c"
        CLEANUP+=("cg_rm $c")
    done
}
cg_rm() {
    local p
    for p in $(cat "$CG/$1/cgroup.procs" 2>/dev/null); do kill -9 "$p"; done
    sleep 0.2; rmdir "$CG/$1"
}
cgin() { echo "$BASHPID" >"$CG/$1/cgroup.procs" || exit 1; shift; exec "$@"; }
# cg_codes FILE CGROUP: the codes of the cgroup verdicts about CGROUP (/NAME) in FILE.
cg_codes() {
    jq -r --arg c "$2" '[.cgroups[] | select(.path == $c) | .warnings[].code] | unique | join(",")' "$1"
}
