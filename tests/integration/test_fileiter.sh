#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The open-files iterator (source/fdmap.h: fdmap_set_bulk; source/taskiter.h:
# taskiter_files). Where the BPF task iterator loads, a sample that scans many processes
# (a first sample) asks it once for every open file of the machine instead of opening
# each process's /proc/PID/fd and statx'ing every fd. Must hold, with 120 processes
# holding files on the root disk (read, appended to, deleted while open) and the same
# population read with IOTRIAGE_FILEITER=0 (the /proc scans): every process's devices,
# their source and their error are the same; so are the deleted-but-open files listed on
# the root filesystem; and the saving is real: the run opens far fewer fd directories.
. "$(dirname "$0")/lib.sh"
need strace
need jq
[ "$(id -u)" = 0 ] || skip "needs root (the BPF task iterator)"
DUMP="$ROOT/build/tests/taskiter_dump"
[ -x "$DUMP" ] || fail "build first: make build/tests/taskiter_dump"
"$DUMP" -f $$ >/dev/null 2>"$TMP/probe.err"
rc=$?
[ $rc = 77 ] && skip "no open-files iterator here: $(cat "$TMP/probe.err")"
[ $rc = 0 ] || fail "taskiter_dump -f: $(cat "$TMP/probe.err")"

# On the root disk (the scratch directory is on it: /var/tmp), not on a tmpfs.
D=$(mktemp -d /var/tmp/iotriage-fileiter.XXXXXX)
trap 'rm -rf "$D"; it_cleanup' EXIT
echo data >"$D/r.dat"
: >"$D/w.dat"
echo "deleted while open" >"$D/gone.dat"
N=120
holders=()
for i in $(seq "$N"); do
    case $((i % 3)) in
    0) bg sh -c 'exec 3<"$1"; exec sleep 600' sh "$D/r.dat" ;;
    1) bg sh -c 'exec 3>>"$1"; exec sleep 600' sh "$D/w.dat" ;;
    2) bg sh -c 'exec 3>>"$1"; exec sleep 600' sh "$D/gone.dat" ;;
    esac
    holders+=("$BG")
done
for p in "${holders[@]}"; do
    wait_until 20 proc_is_sleep "$p" || fail "holder $p: $(proc_state "$p")"
done
rm "$D/gone.dat"

run() { # run NAME [ENV...]: one-refresh JSON run, its opens of fd directories traced
    env "${@:2}" strace -qq -f --seccomp-bpf -e trace=openat -o "$TMP/$1.trace" \
        "$IOT" --json -n 1 -d 0.5 >"$TMP/$1.json" 2>"$TMP/$1.err" || fail "$1 run: $(cat "$TMP/$1.err")"
}
run iter
run proc IOTRIAGE_FILEITER=0
ids=$(printf '%s\n' "${holders[@]}" | jq -s -c .)
view() { # the holders' devices as each run saw them, and the root filesystem's deleted files
    jq -c --argjson ids "$ids" '
        ([.processes[] | select(.pid as $p | $ids | index($p)) |
          {pid, devices, devices_error, devices_from}] | sort_by(.pid)),
        ([.filesystems[]? | select(.mount == "/") | .deleted_open[]? |
          {path, holders: ([.holders[]?.pid] | sort)}] | sort_by(.path))' "$TMP/$1.json"
}
view iter >"$TMP/iter.view"
view proc >"$TMP/proc.view"
seen=$(head -1 "$TMP/iter.view" | jq length)
[ "$seen" = "$N" ] || fail "the iterator's run lists $seen of the $N holders"
head -1 "$TMP/iter.view" | jq -e 'all(.[]; .devices != null and (.devices | length) >= 1)' >/dev/null ||
    fail "a holder without its device: $(head -1 "$TMP/iter.view" | jq -c '[.[] | select(.devices == null or (.devices | length) == 0)][0]')"
tail -1 "$TMP/iter.view" | jq -e --argjson n $((N / 3)) 'any(.[]; (.holders | length) == $n)' >/dev/null ||
    fail "the deleted file's $((N / 3)) holders not listed: $(tail -1 "$TMP/iter.view" | cut -c1-300)"
cmp -s "$TMP/iter.view" "$TMP/proc.view" ||
    fail "the iterator's answers differ from /proc's: $(diff "$TMP/proc.view" "$TMP/iter.view" | head -5 | cut -c1-300)"
ok "$N holders: the same devices and deleted files from the iterator as from /proc"

fd_opens() { grep -cE 'openat\([0-9]+, "[0-9]+/fd",' "$TMP/$1.trace"; }
a=$(fd_opens iter) b=$(fd_opens proc)
echo "fd directories opened: $a with the iterator, $b without"
[ "$b" -ge "$N" ] || fail "the /proc run opened $b fd directories for $N holders"
[ "$a" -lt $((b / 2)) ] || fail "the iterator's run opened $a fd directories, the /proc run $b"
ok "the first sample read $a fd directories instead of $b"
