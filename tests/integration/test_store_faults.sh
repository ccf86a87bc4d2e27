#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The recorder's storage (store/store*.c) under the faults issue #16 names, with a real
# writer process (tests/helpers/storewriter.c) and a real file system:
#   1. kill -9 mid-write: every sample the writer had flushed reads back, in order, with
#      no gap; a damage, if the kill cut a frame, is only at the very end; a new writer on
#      the same hour cuts the torn bytes off, and then nothing is damaged at all.
#   2. full disk: a 256 KiB tmpfs filled up -> the writer says once that recording is
#      paused, drops samples without another word, and resumes by itself when space is
#      freed; every sample it took (before, and kept in memory during, the pause) reads
#      back and nothing is damaged.
# The files are also read by the zstd tool itself (concatenated frames are one stream)
# and every line by jq, as far as those tools are installed.
. "$(dirname "$0")/lib.sh"

SW="$ROOT/build/tests/storewriter"
[ -x "$SW" ] || fail "$SW not built (make build/tests/storewriter)"
[ "$(id -u)" = 0 ] || skip "needs root to mount a tmpfs"

MNT="$TMP/mnt"
mkdir -p "$MNT"
cleanup_mnt() {
    it_kill_bg
    mountpoint -q "$MNT" && umount "$MNT"
    it_cleanup
}
trap cleanup_mnt EXIT

# Wait until FILE has a line matching RE (at most SECS seconds).
wait_for() { # FILE RE SECS
    local i
    for ((i = 0; i < $3 * 20; i++)); do
        grep -qE "$2" "$1" 2>/dev/null && return 0
        sleep 0.05
    done
    return 1
}

# The sample numbers read back from DIR, one per line, into FILE; damages into FILE.dmg.
read_back() { # DIR FILE
    "$SW" read "$1" >"$2.raw" || fail "storewriter read $1"
    tail -n 1 "$2.raw" | grep -qx end || fail "read of $1 did not reach its end"
    awk '$1 == "sample" { print $2 }' "$2.raw" >"$2"
    grep '^damage ' "$2.raw" >"$2.dmg" || true
}

# ---- 1. kill -9 mid-write -----------------------------------------------------------------
REC="$TMP/rec"
# Big samples (8 KiB of hex) and frames of 20 of them: the kill often lands inside a write.
bg "$SW" write "$REC" 0 1 20 8192 >"$TMP/w1.out" 2>"$TMP/w1.err"
w1=$BG
wait_for "$TMP/w1.out" '^flushed (9|[1-9][0-9])[0-9]$' 20 || fail "writer flushed nothing in 20 s"
sleep 0.$((RANDOM % 9 + 1))
kill -9 "$w1"
wait "$w1" 2>/dev/null
BG_PIDS=()
last=$(awk '$1 == "flushed" { n = $2 } END { print n + 0 }' "$TMP/w1.out")
stored=$(awk '$1 == "stored" { n = $2 } END { print n + 0 }' "$TMP/w1.out")
read_back "$REC" "$TMP/r1"
got=$(wc -l <"$TMP/r1")
# In order, no gap, no duplicate: sample i is on line i+1.
awk '$1 != NR - 1 { exit 1 }' "$TMP/r1" || fail "samples out of order or missing after kill -9"
[ "$got" -ge $((last + 1)) ] ||
    fail "kill -9: $got samples read back, but the writer had flushed 0..$last"
[ "$got" -le $((stored + 1)) ] || fail "kill -9: read back more ($got) than stored ($stored)"
ndmg=$(wc -l <"$TMP/r1.dmg")
[ "$ndmg" -le 1 ] || { cat "$TMP/r1.dmg" >&2; fail "kill -9: $ndmg damages, at most the last frame may be cut"; }
if [ "$ndmg" = 1 ]; then
    # The damage must be the end: nothing read after it.
    tail -n 2 "$TMP/r1.raw" | head -n 1 | grep -q '^damage .*frame cut short' ||
        { cat "$TMP/r1.dmg" >&2; fail "kill -9: the damage is not a cut at the end"; }
fi
ok "kill -9 after $((stored + 1)) stored, $((last + 1)) flushed: $got read back in order ($ndmg cut frame at the end)"

# A new writer on the same directory (same hour, most likely) appends after a clean cut.
"$SW" write "$REC" 30 0 10 64 >"$TMP/w2.out" 2>"$TMP/w2.err" || { cat "$TMP/w2.err" >&2; fail "second writer"; }
read_back "$REC" "$TMP/r2"
[ ! -s "$TMP/r2.dmg" ] || { cat "$TMP/r2.dmg" >&2; fail "after a restart the recording is still damaged"; }
[ "$(wc -l <"$TMP/r2")" = $((got + 30)) ] || fail "restart: expected $((got + 30)) samples, got $(wc -l <"$TMP/r2")"
ok "restarted writer: the cut frame trimmed, $((got + 30)) samples, no damage"

if command -v zstd >/dev/null 2>&1; then
    n=0
    for f in "$REC"/*.iotr.zst; do
        zstd -q -dc "$f" >"$TMP/plain" || fail "zstd -dc $f failed"
        jq -c '.n' "$TMP/plain" >/dev/null || fail "jq: $f holds a line that is not JSON"
        n=$((n + $(wc -l <"$TMP/plain")))
    done
    [ "$n" = $((got + 30)) ] || fail "zstd -dc gives $n lines, the reader $((got + 30))"
    ok "zstd -dc reads the same $n lines, each valid JSON"
fi

# ---- 2. full disk -------------------------------------------------------------------------
mount -t tmpfs -o size=256k,mode=0755 iotriage-store-test "$MNT" || skip "cannot mount a tmpfs"
bg "$SW" write "$MNT/rec" 0 5 5 1024 0.2 >"$TMP/w3.out" 2>"$TMP/w3.err"
w3=$BG
wait_for "$TMP/w3.out" '^flushed (1[0-9]|[2-9][0-9])$' 20 || fail "writer on tmpfs flushed nothing"
# Fill what is left. dd stops at ENOSPC.
dd if=/dev/zero of="$MNT/filler" bs=4k 2>/dev/null
wait_for "$TMP/w3.err" 'recording paused' 20 || { cat "$TMP/w3.err" >&2; fail "no pause message on a full disk"; }
grep -q 'No space left on device' "$TMP/w3.err" || fail "the pause message does not say why"
# The writer keeps appending (dropping) for a while: still one message.
sleep 2
[ "$(grep -c 'recording paused' "$TMP/w3.err")" = 1 ] ||
    { cat "$TMP/w3.err" >&2; fail "the full disk was reported more than once"; }
stored_full=$(awk '$1 == "stored" { n = $2 } END { print n + 0 }' "$TMP/w3.out")
rm -f "$MNT/filler"
wait_for "$TMP/w3.err" 'recording resumed' 20 || { cat "$TMP/w3.err" >&2; fail "did not resume after space came back"; }
# A few more frames after the resume, then a clean stop.
n0=$(grep -c '^flushed' "$TMP/w3.out")
for ((i = 0; i < 200; i++)); do
    [ "$(grep -c '^flushed' "$TMP/w3.out")" -ge $((n0 + 3)) ] && break
    sleep 0.05
done
kill -TERM "$w3"
wait "$w3" || { cat "$TMP/w3.err" >&2; fail "writer exited with an error after the resume"; }
BG_PIDS=()
grep -qx closed "$TMP/w3.out" || fail "writer did not close cleanly"
dropped=$(sed -n 's/.*resumed, \([0-9]*\) samples dropped/\1/p' "$TMP/w3.err")
[ "${dropped:-0}" -gt 0 ] || fail "nothing was dropped while the disk was full: the test did not fill it"
# Every sample the writer said it stored is read back, and nothing else; no damage.
awk '$1 == "stored" { print $2 }' "$TMP/w3.out" >"$TMP/stored3"
read_back "$MNT/rec" "$TMP/r3"
[ ! -s "$TMP/r3.dmg" ] || { cat "$TMP/r3.dmg" >&2; fail "full disk left a damaged file"; }
cmp -s "$TMP/stored3" "$TMP/r3" ||
    { diff "$TMP/stored3" "$TMP/r3" | head >&2; fail "samples read back differ from those stored"; }
ok "full disk at sample $stored_full: one message, $dropped dropped, resumed; all $(wc -l <"$TMP/r3") stored samples read back, no damage"
umount "$MNT"
