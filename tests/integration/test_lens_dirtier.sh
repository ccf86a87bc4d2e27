#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Whose dirty pages the kernel's writeback carries (issue 14): the lens remembers who
# dirtied each inode's pages and charges the flusher's bios to that process and its v2
# cgroup. On an ext4 of our own (a loop device over a file in /dev/shm, so no I/O reaches
# the real disk):
#   two writers, each in a fresh v2 cgroup of its own, write 64 MiB and 32 MiB through
#   the page cache (no fsync: the writer submits nothing itself) and then sleep, and a dd
#   in a third cgroup writes 16 MiB and exits; `sync` hands the pages to the flusher.
#   Over the samples, the loop device's writeback_by charges each writer's pid, comm (dd
#   by the name it had) and cgroup path with its bytes (within 10 %: dd's cgroup, which
#   holds no process once it exited, named from its id), and each living
#   writer's lens_writeback names the loop device;
#   on the screen, the device view's writeback row names the top dirtier, its cgroup and
#   share, while a third writer in the first cgroup writes new files and syncs in a loop;
#   with --no-bpf the split is unknown: writeback_by and lens_writeback null, never [].
# Every mount, loop device, cgroup and process goes on EXIT, also on failure.
. "$(dirname "$0")/lib.sh"
need mkfs.ext4
need losetup
need python3
need jq
SOCK=iotriage-dirtier-$$
. "$(dirname "$0")/lib_tmux.sh"
[ "$(id -u)" = 0 ] || skip "needs root (loop device, mount, cgroups, BPF)"
[ -r /sys/kernel/btf/vmlinux ] || skip "no kernel BTF: the lens cannot load"
[ -x "$IOT" ] || fail "build ./iotriage first"
CG=$(awk '$0 ~ / - cgroup2 / { print $5; exit }' /proc/self/mountinfo)
[ -n "$CG" ] || skip "no cgroup2 mount"

CGA=$CG/iotriage-dirtier-$$-a
CGB=$CG/iotriage-dirtier-$$-b
CGC=$CG/iotriage-dirtier-$$-c
IPID=
cleanup() {
    [ -n "$IPID" ] && kill "$IPID" 2>/dev/null
    it_kill_bg
    local i c
    for c in "$CGA" "$CGB" "$CGC"; do
        [ -d "$c" ] || continue
        # anything left in it (a writer the kill above missed) goes first
        for i in $(cat "$c/cgroup.procs" 2>/dev/null); do kill -9 "$i" 2>/dev/null; done
        for i in $(seq 20); do rmdir "$c" 2>/dev/null && break; sleep 0.2; done
        [ -d "$c" ] && echo "cleanup: $c not removed" >&2
    done
    scratch_fs_down
    it_cleanup
}
trap cleanup EXIT

scratch_fs ext4 512M -F
mkdir "$CGA" "$CGB" "$CGC" || fail "cannot make cgroups under $CG"
sync

# writer FILE MIB: writes through the page cache, says so, sleeps. It is in its cgroup
# from its start (the shell that execs it joins first): iotriage reads a process's cgroup
# when it first sees it, and checks memberships again only every few seconds.
cat >"$TMP/writer.py" <<'PY'
import os, sys, time
path, mib = sys.argv[1], int(sys.argv[2])
buf = b"\xa5" * (1 << 20)
fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
for _ in range(mib):
    os.write(fd, buf)
open(path + ".done", "w").close()       # another file: its pages are tiny
time.sleep(600)                          # alive, so that its comm is known
PY

# The lens first, then the writers: the pages must be dirtied while it watches. It is
# stopped (SIGINT) two samples after the sync; -n only bounds it, and must not end it
# before that on a slow machine (the writers have 30 s, then the sync).
timeout 150 "$IOT" --json -d 1 -n 120 >"$TMP/iot.json" 2>"$TMP/iot.err" &
IPID=$!
for i in $(seq 60); do
    [ -s "$TMP/iot.json" ] && break
    sleep 0.5
done
[ -s "$TMP/iot.json" ] || fail "iotriage wrote nothing: $(head -3 "$TMP/iot.err")"
head -1 "$TMP/iot.json" | jq -e '.lens.on == true' >/dev/null ||
    skip "the lens did not load: $(head -1 "$TMP/iot.json" | jq -r '.lens.reason')"
writer() { # writer CGROUP FILE MIB
    bg bash -c 'echo $$ >"$1/cgroup.procs" && exec python3 "$2" "$3" "$4"' w "$1" "$TMP/writer.py" "$2" "$3"
}
writer "$CGA" "$MNT/a" 64; APID=$BG
writer "$CGB" "$MNT/b" 32; BPID=$BG
# and one that exits before the flusher writes its pages: named as it was when it wrote
bg bash -c 'echo $$ >"$1/cgroup.procs" && exec dd if=/dev/zero of="$2" bs=1M count=16 status=none' \
    w "$CGC" "$MNT/c"
CPID=$BG
for i in $(seq 60); do
    [ -e "$MNT/a.done" ] && [ -e "$MNT/b.done" ] && break
    sleep 0.5
done
[ -e "$MNT/a.done" ] && [ -e "$MNT/b.done" ] || fail "the writers did not finish"
wait "$CPID" || fail "dd failed"
sync
# Two whole samples after the sync has written every page, then iotriage stops (SIGINT:
# it ends after the sample it is in, its output whole).
n0=$(wc -l <"$TMP/iot.json")
for i in $(seq 60); do
    [ "$(wc -l <"$TMP/iot.json")" -ge $((n0 + 3)) ] && break
    kill -0 "$IPID" 2>/dev/null || break
    sleep 0.5
done
kill -INT "$IPID" 2>/dev/null
wait "$IPID"
IPID=
jq -e . "$TMP/iot.json" >/dev/null || fail "iotriage's output is no JSON: $(tail -2 "$TMP/iot.err")"

# The bytes charged to a writer on the loop device over every sample (bps x interval).
charged() { # charged PID
    jq -s --argjson p "$1" --arg d "$LNAME" '
        [.[] | .interval_s as $i | .devices[] | select(.name == $d) | .writeback_by // [] | .[]
         | select(.pid == $p) | .bps * $i] | add // 0' "$TMP/iot.json"
}
paths() { # paths PID: the cgroup paths its rows name
    jq -rs --argjson p "$1" --arg d "$LNAME" '
        [.[] | .devices[] | select(.name == $d) | .writeback_by // [] | .[] | select(.pid == $p)
         | "\(.cgroup)|\(.cgroup_from)|\(.comm)"] | unique | join(" ")' "$TMP/iot.json"
}
rel=${CG%/}
for w in "$APID:$CGA:64:python3" "$BPID:$CGB:32:python3" "$CPID:$CGC:16:dd"; do
    IFS=: read -r pid cgdir mib comm <<<"$w"
    want=$((mib << 20))
    got=$(charged "$pid")
    near "$got" "$want" 0.10 ||
        fail "writer $pid: $got B of writeback charged to it on $LNAME, wrote $want: $(jq -c --arg d "$LNAME" '.devices[] | select(.name == $d) | [.writeback_bps, .writeback_by]' "$TMP/iot.json" | grep -v '\[0,\[\]\]' | tail -5)"
    path=/${cgdir#"$rel"/}
    [ "$(paths "$pid")" = "$path|lens|$comm" ] ||
        fail "writer $pid: its rows name $(paths "$pid"), not $path (from the lens, comm $comm)"
    [ "$comm" = dd ] ||        # dd has exited: no process row to carry it
        jq -se --argjson p "$pid" --arg d "$LNAME" '[.[] | .processes[]? | select(.pid == $p)
            | .lens_writeback[$d] // 0] | add > 0' "$TMP/iot.json" >/dev/null ||
        fail "writer $pid: lens_writeback never names $LNAME"
    ok "writer $pid in $path: $got of its $want bytes written back by kernel threads charged to it"
done
# the two writers' rows are distinct: neither got the other's bytes (checked above within
# 10 %), and the unknown share, if any, is a row of nulls
jq -se --arg d "$LNAME" '[.[] | .devices[] | select(.name == $d) | .writeback_by // [] | .[]
    | select(.pid == null) | (.cgroup == null and .comm == null and .cgroup_from == null)] | all' \
    "$TMP/iot.json" >/dev/null || fail "an unknown row names a cgroup or comm"
ok "the unknown share is a row of nulls"

# The screen: a writer that keeps dirtying new files (a new file each time: see
# test_lens_attrib.sh) and syncs; the device view names it under the writeback row.
cat >"$TMP/looper.py" <<'PY'
import os, sys, time
d, buf, i = sys.argv[1], b"\x5a" * (1 << 20), 0
while True:
    i += 1
    with open(f"{d}/l{i}", "wb") as f:
        for _ in range(8):
            f.write(buf)
    os.sync()
    if i > 3:
        os.unlink(f"{d}/l{i - 3}")
    time.sleep(0.2)
PY
bg bash -c 'echo $$ >"$1/cgroup.procs" && exec python3 "$2" "$3"' w "$CGA" "$TMP/looper.py" "$MNT"
LPID=$BG
T new-session -d -s ui -x 160 -y 50 "$IOT -d 1; echo EXITED \$?; sleep 60"
wait_for '^DEVICE +SCHED' 20
T send-keys -t ui Tab / "$LNAME" Enter
wait_for "^$LNAME " 10
T send-keys -t ui Enter
wait_for "^Device $LNAME" 10
pat="^ +[0-9 ]{3}% dirtied by python3\\[$LPID\\] in /${CGA#"$rel"/} \\(cgroup from the lens\\)"
wait_for "$pat" 20
ok "screen: $(screen | grep -E 'kernel threads: writeback|dirtied by|dirtier unknown' | tr -s ' ' | tr '\n' '/')"
T send-keys -t ui q
kill "$LPID" 2>/dev/null

# Without the lens: unknown, not zero.
timeout 30 "$IOT" --json --no-bpf -d 1 -n 2 >"$TMP/nobpf.json" 2>/dev/null
jq -se 'length == 2 and all(.[]; all(.devices[]; .writeback_by == null)
        and all(.processes[]?; .lens_writeback == null))' "$TMP/nobpf.json" >/dev/null ||
    fail "--no-bpf: writeback_by or lens_writeback not null: $(jq -c '[.devices[].writeback_by]' "$TMP/nobpf.json" | tail -1)"
ok "--no-bpf: writeback_by and lens_writeback are null"
exit 0
