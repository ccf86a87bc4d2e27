#!/usr/bin/env bash
# The lens's duty cycle pauses its per-request programs without detaching them (issue
# #40: the lens must not slow the disk it watches; source/lens.h, docs/performance.md
# "The duty cycle"). Attaching and detaching a program patches the tracepoint's call
# sites on every CPU (IPIs) each window; a paused program stays attached and returns at
# its first instruction.
#  - on a tmpfs loop device read at full rate (fio libaio, iodepth 32), with the cycle
#    running (stages.duty below 1 in a sample), the BPF links iotriage holds are the same
#    set of link ids from the moment the cycle engaged to the end: no window attached or
#    detached anything;
#  - the per-request programs ran while paused and watching (the kernel's run counts of
#    block_rq_issue and block_rq_complete grew, BPF statistics held on for the run by
#    build/bench/bpfstats, off again after it);
#  - with the light loader and with libbpf's.
. "$(dirname "$0")/lib.sh"
need fio
need jq
need losetup
need bpftool
[ "$(id -u)" = 0 ] || skip "needs root (BPF)"
[ -r /sys/kernel/btf/vmlinux ] || skip "no kernel BTF at /sys/kernel/btf/vmlinux"
STATS=$ROOT/build/bench/bpfstats
[ -x "$STATS" ] || fail "make build/bench/bpfstats first"

DIR=$(mktemp -d /tmp/iotriage-pause.XXXXXX)
LOOP=
cleanup() {
    it_kill_bg
    [ -n "$LOOP" ] && losetup -d "$LOOP" 2>/dev/null
    mountpoint -q "$DIR/mnt" 2>/dev/null && umount "$DIR/mnt"
    rm -rf "$DIR"
    it_cleanup
}
trap cleanup EXIT

mkdir "$DIR/mnt"
mount -t tmpfs -o size=300m iotriage-pause "$DIR/mnt" || fail "cannot mount a tmpfs"
dd if=/dev/zero of="$DIR/mnt/disk" bs=1M count=256 status=none || fail "cannot fill the tmpfs file"
LOOP=$(losetup -f --show "$DIR/mnt/disk") || fail "no loop device"
NAME=${LOOP#/dev/}
echo none >/sys/block/"$NAME"/queue/scheduler || fail "cannot select none on $NAME"

# The link ids a process holds, one line, sorted.
links_of() { grep -hs '^link_id:' /proc/"$1"/fdinfo/* | awk '{ print $2 }' | sort -n | tr '\n' ' '; }
# "run_cnt" of the lens program NAME held by process PID (0 when not found).
runs_of() {
    local id
    for id in $(grep -hs '^prog_id:' /proc/"$1"/fdinfo/* | awk '{ print $2 }' | sort -un); do
        bpftool -j prog show id "$id" 2>/dev/null | jq -r --arg n "$2" 'select(.name == $n) | .run_cnt // 0'
    done | awk '{ s += $1 } END { print s + 0 }'
}

check_loader() {
    local label=$1
    shift
    fio --name=pause --filename="$LOOP" --ioengine=libaio --iodepth=32 --direct=1 --bs=4k \
        --rw=randread --time_based --runtime=25 >/dev/null 2>&1 &
    local fio=$!
    BG_PIDS+=("$fio")
    wait_until 20 eval '[ -n "$(find /proc/[0-9]*/fd -maxdepth 1 -lname "$LOOP" 2>/dev/null)" ]' ||
        fail "$label: fio never opened $LOOP"
    env "$@" "$IOT" --json -d 1 -n 14 >"$DIR/out.json" 2>"$DIR/out.err" &
    local iot=$!
    BG_PIDS+=("$iot")
    # until a sample says the cycle ran (duty below 1), then the links of that moment
    # (jq -s: an empty file is no match, where jq -e alone says 0)
    wait_until 30 eval 'jq -s -e --arg d "$NAME" "any(.[].devices[]? | select(.name == \$d); (.stages.duty // 1) < 1)" "$DIR/out.json" >/dev/null 2>&1' ||
        fail "$label: the duty cycle never engaged at full rate: $(jq -c --arg d "$NAME" '.devices[]? | select(.name == $d) | .stages.duty' "$DIR/out.json" 2>/dev/null | tr '\n' ' ')"
    local first now n=0 changed=0
    first=$(links_of "$iot")
    [ -n "$first" ] || fail "$label: iotriage holds no BPF link"
    "$STATS" >/dev/null &
    local stats=$!
    BG_PIDS+=("$stats")
    sleep 0.2
    local issue0 complete0
    issue0=$(runs_of "$iot" lens_rq_issue)
    complete0=$(runs_of "$iot" lens_rq_complete)
    # three seconds: three to four windows of the cycle (100 ms every 800 ms)
    for _ in $(seq 60); do
        sleep 0.05
        kill -0 "$iot" 2>/dev/null || break
        now=$(links_of "$iot")
        n=$((n + 1))
        [ "$now" = "$first" ] || { changed=$((changed + 1)); echo "links now: $now"; }
    done
    local issue1 complete1
    issue1=$(runs_of "$iot" lens_rq_issue)
    complete1=$(runs_of "$iot" lens_rq_complete)
    kill "$stats"; wait "$stats" 2>/dev/null
    wait "$iot" || fail "$label: iotriage --json failed: $(tail -n 3 "$DIR/out.err")"
    kill "$fio" 2>/dev/null; wait "$fio" 2>/dev/null
    [ "$n" -ge 40 ] || fail "$label: iotriage ended after $n of 60 looks at its links"
    [ "$changed" = 0 ] ||
        fail "$label: the links changed in $changed of $n looks while the duty cycle ran (first: $first)"
    ok "$label: the same $(echo "$first" | wc -w) links in $n looks over 3 s of the duty cycle"
    [ "$issue1" -gt "$issue0" ] && [ "$complete1" -gt "$complete0" ] ||
        fail "$label: the request programs did not run: issue $issue0 -> $issue1, complete $complete0 -> $complete1"
    ok "$label: block_rq_issue ran $((issue1 - issue0)) times, block_rq_complete $((complete1 - complete0)) (BPF statistics)"
}

check_loader "default loader"
check_loader "libbpf loader" IOTRIAGE_BPF_LOADER=libbpf
[ "$(sysctl -n kernel.bpf_stats_enabled)" = 0 ] || echo "note: kernel.bpf_stats_enabled is on (another holder)"
echo "PASS"
