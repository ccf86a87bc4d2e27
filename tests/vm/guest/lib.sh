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

# ---- Stacks (test_stack, test_stack_md) ----
# dm_dev NAME: the dm-N block device of the mapped device NAME (its /dev/mapper node may be
# missing: no udev here).
dm_dev() { grep -lx "$1" /sys/block/dm-*/dm/name | cut -d/ -f4; }
# bio_based FILE DEV...: each DEV listed in sample FILE with no scheduler, no hardware
# queues, no nr_requests; a scheduler written to it changes nothing.
bio_based() {
    local s=$1 d j f; shift
    for d in "$@"; do
        j=$(dev_json "$s" "$d")
        [ -n "$j" ] || fail "$d is not listed"
        [ "$(jq -c '[.scheduler, .hw_queues, .nr_requests]' <<<"$j")" = '[null,0,null]' ] ||
            fail "$d (bio-based): $(jq -c '[.scheduler, .hw_queues, .nr_requests]' <<<"$j"); sysfs: $(cat "/sys/block/$d/queue/scheduler")"
        # 6.1 accepts the write and does nothing (elv_iosched_store(): no elevator
        # support); newer kernels (6.12, 6.18) have no scheduler file for it
        f=/sys/block/$d/queue/scheduler
        if [ -e "$f" ]; then
            echo mq-deadline >"$f" 2>/dev/null
            [ "$(cat "$f")" = none ] || fail "$d took a scheduler: $(cat "$f")"
        fi
    done
}
# stacks_as_sysfs FILE DEV...: each DEV's slaves and holders in sample FILE are its sysfs
# lists, by name (sorted).
stacks_as_sysfs() {
    local s=$1 d j l want got; shift
    for d in "$@"; do
        j=$(dev_json "$s" "$d")
        for l in slaves holders; do
            want=$(ls "/sys/block/$d/$l" | jq -R . | jq -cs 'sort')
            got=$(jq -c ".$l" <<<"$j")
            [ "$got" = "$want" ] || fail "$d: $l $got, sysfs $want"
        done
    done
}
# reads_at_least DEV N: DEV counted N reads or more since boot (diskstats).
reads_at_least() {
    local n
    n=$(awk -v d="$1" '$3 == d { print $4 }' /proc/diskstats)
    [ "$n" -ge "$2" ] || fail "$1: $n reads in diskstats"
}
# lens_once TAG DISK...: the lens's bytes for the reader at the disks, summed, are its
# read rate (read_bytes, counted once at submission), not once a level of its stack (its
# bios pass dm-1, dm-0 and nb0 in its own context: three times the rate if added up);
# over several disks (a RAID 0, 5 or 6 stripe) each has a share (within half of an even
# one either way), not one of them the whole.
# (RW=write: the writer's, against its write rate)
rw_who() { local v=${RW:-read}; echo "${v%e}er"; }
lens_once() {
    local tag=$1 j=/tmp/$1.json rate=${RW:-read}_bps; shift
    local d=$(printf '%s\n' "$@" | jq -R . | jq -sc .)
    local f=$(jq -c --argjson d "$d" --arg rate "$rate" '[.processes[] | select(.comm == "fio" and .[$rate] > 0)
        | {r: .[$rate], l: [.lens_bytes[$d[]] // 0]}]' "$j")
    jq -e 'length == 1 and (.[0] | (.l | add) as $s | (.l | length) as $n
        | $s > 0.5 * .r and $s < 1.5 * .r and ($n == 1 or all(.l[]; . > 0.5 * $s / $n and . < 1.5 * $s / $n)))' \
        <<<"$f" >/dev/null || fail "$tag: the $(rw_who)'s bytes at $* (lens) against its ${RW:-read} rate: $f"
    ok "$tag: the $(rw_who)'s bytes at $* counted once: $f"
}
# judged TAG MD DISKS [CODE DISK TEXT]...: in sample TAG, the reader of MD lists DISKS (a
# JSON array) as its devices; for each triple, one CODE warning on DISK, its text holding
# TEXT; every warning on one of DISKS, none on MD itself; ioprio-dropped only where a
# triple names it (md passes a reader's bios on in its context, a share to each disk of a
# stripe). RW=write: the writer's. The warnings in $w.
judged() {
    local tag=$1 md=$2 disks=$3 j=/tmp/$1.json rate=${RW:-read}_bps dropped=; shift 3
    w=$(jq -c --arg rate "$rate" '[.processes[] | select(.comm == "fio" and .[$rate] > 0) | {devices, w: [.warnings[] | [.code, .device, .text]]}]' "$j")
    # (as a set: their order is the order they were found in, open files or the lens)
    jq -e --argjson d "$disks" 'length == 1 and (.[0].devices | sort) == ($d | sort)' <<<"$w" >/dev/null ||
        fail "$tag: the $(rw_who)'s devices: $w"
    while [ $# -ge 3 ]; do
        jq -e --arg c "$1" --arg k "$2" --arg t "$3" '[.[].w[] | select(.[0] == $c and .[1] == $k)] | length == 1 and
            (.[0] | .[2] | contains($t))' <<<"$w" >/dev/null || fail "$tag: want one $1 on $2 ($3): $w"
        [ "$1" = ioprio-dropped ] && dropped="$dropped $2"
        shift 3
    done
    jq -e --argjson d "$disks" 'all(.[].w[]; .[1] as $x | $d | index($x) != null)' <<<"$w" >/dev/null ||
        fail "$tag: a warning names a layer: $w"
    jq -e --arg k "$dropped" 'all(.[].w[]; .[0] != "ioprio-dropped" or ($k | split(" ") | index(.[1]) != null))' \
        <<<"$w" >/dev/null || fail "$tag: a label called dropped: $w"
    [ "$(jq -c --arg m "$md" '[.devices[] | select(.name == $m) | .warnings[]] | length' "$j")" = 0 ] ||
        fail "$tag: $md has warnings of its own: $(jq -c --arg m "$md" '.devices[] | select(.name == $m) | .warnings' "$j")"
}
