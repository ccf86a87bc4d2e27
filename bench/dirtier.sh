#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# What the lens's writeback split costs (issue 14; docs/performance.md "Whose pages the
# flusher writes"): the page-dirtying program per dirtied page, and the kernel-thread
# bio's extra lookup in block_bio_queue.
#
# On an ext4 over a loop device in tmpfs (made and removed here), beside `iotriage -b`
# (the lens loaded), with the kernel's BPF statistics on (build/bench/bpfstats) for the
# run only, as bench/lens.sh does: fio writes SIZE of new file through the page cache
# (4 KiB psync writes, no fsync: every page goes from clean to dirty once), then `sync`
# hands it to the flusher. Per program: runs and ns a run over the write, and over the
# sync. The write's own CPU per page (fio's usr+sys over the pages) is the yardstick.
#
# Usage (root): bench/dirtier.sh [ROUNDS] [SIZE_MB]     (default 3 rounds of 256 MB)
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
IOT=${IOT:-$ROOT/iotriage}
ROUNDS=${1:-3}
MB=${2:-256}
[ "$(id -u)" = 0 ] || { echo "bench/dirtier.sh: needs root" >&2; exit 77; }
for t in fio losetup jq bpftool mkfs.ext4; do
    command -v "$t" >/dev/null || { echo "bench/dirtier.sh: $t missing" >&2; exit 77; }
done
[ -x "$IOT" ] || { echo "bench/dirtier.sh: build ./iotriage first" >&2; exit 1; }
STATS=$ROOT/build/bench/bpfstats
[ -x "$STATS" ] || { echo "bench/dirtier.sh: make build/bench/bpfstats first" >&2; exit 1; }

DIR=$(mktemp -d /dev/shm/iotriage-dirtbench.XXXXXX)
LOOP=
IOTPID=
STATSPID=
cleanup() {
    [ -n "$STATSPID" ] && kill "$STATSPID" 2>/dev/null && wait "$STATSPID" 2>/dev/null
    [ -n "$IOTPID" ] && kill "$IOTPID" 2>/dev/null && wait "$IOTPID" 2>/dev/null
    mountpoint -q "$DIR/mnt" 2>/dev/null && umount "$DIR/mnt"
    [ -n "$LOOP" ] && losetup -d "$LOOP" 2>/dev/null
    rm -rf "$DIR"
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

truncate -s $((MB * 2 + 128))M "$DIR/disk"
LOOP=$(losetup -f --show "$DIR/disk") || exit 77
mkfs.ext4 -q -F "$LOOP" >/dev/null 2>&1 || { echo "mkfs.ext4 failed" >&2; exit 1; }
mkdir "$DIR/mnt" && mount "$LOOP" "$DIR/mnt" || exit 1

"$IOT" -b -d 1 >/dev/null 2>&1 &
IOTPID=$!
for i in $(seq 100); do
    grep -qs '^link_id:' /proc/"$IOTPID"/fdinfo/* && break
    sleep 0.1
done
sleep 1

prog_stats() {  # "name run_time_ns run_cnt" of each BPF program iotriage holds
    local id
    for id in $(cat /proc/"$IOTPID"/fdinfo/* 2>/dev/null | awk '$1 == "prog_id:" { print $2 }' | sort -un); do
        bpftool -j prog show id "$id" 2>/dev/null | jq -r '"\(.name) \(.run_time_ns // 0) \(.run_cnt // 0)"'
    done | sort
}
# report A B LABEL: per program that ran between the two readings, runs and ns a run
report() {
    join "$1" "$2" | awk -v l="$3" '$5 > $3 {
        printf "  %-6s %-18s %9d runs %7.0f ns a run\n", l, $1, $5 - $3, ($4 - $2) / ($5 - $3) }'
}

"$STATS" >/dev/null & STATSPID=$!
sleep 0.2
for r in $(seq "$ROUNDS"); do
    rm -f "$DIR/mnt/f"
    sync
    prog_stats >"$DIR/p0"
    fio --name=dirty --filename="$DIR/mnt/f" --rw=write --bs=4k --size="${MB}M" \
        --ioengine=psync --end_fsync=0 --output-format=json >"$DIR/fio.json" 2>/dev/null
    prog_stats >"$DIR/p1"
    sync
    prog_stats >"$DIR/p2"
    pages=$((MB * 256))
    cpu=$(jq -r '.jobs[0] | (.usr_cpu + .sys_cpu) / 100 * .elapsed * 1e9' "$DIR/fio.json")
    echo "round $r: $pages pages; fio's CPU per page $(awk -v c="$cpu" -v p="$pages" 'BEGIN { printf "%.0f", c / p }') ns"
    report "$DIR/p0" "$DIR/p1" write
    report "$DIR/p1" "$DIR/p2" sync
done
