#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Space held by deleted-but-open files, and a filesystem filling up (issue #20), on a
# small ext4 of our own: a file in the scratch directory, attached to a free loop device
# and mounted; all of it undone on EXIT (writers first, then umount, then detach).
#
#   append     a shell opens app.log with >> (O_APPEND), writes 40 MiB, starts a child
#              that inherits the descriptor, and the file is deleted under both:
#              `iotriage --json` lists it under our mount with both holders (pid, comm,
#              fd 3, append true), size 40 MiB and deleted_open_bytes what df's used
#              grew by (df minus du, which is ~0 here), and the fs-deleted-open warning.
#   refusals   the truncate action (tests/helpers/fsfix, act/act.h) in read-only mode
#              (EROFS), with a stale inode (ESTALE), copying onto an existing path
#              (EEXIST): each leaves the file's blocks as they were.
#   truncate   with a copy first: the copy equals what was written; df's avail grows by
#              the file's blocks and fsfix reports that figure; iotriage then shows the
#              file holding 0 bytes; the writer's next 1 MiB lands at offset 0 (size 1 MiB).
#   no append  a writer opened with > (no O_APPEND): append false; after the truncate its
#              next 1 MiB lands at its old offset: size 9 MiB, blocks ~1 MiB (sparse), and
#              the action's message says so.
#   signal     a shell that reopens its log on HUP: the signal action sees it let go and
#              the space come back; a signal it ignores (WINCH) is reported as not
#              released.
#   filling    a writer at a steady ~4 MiB/s with O_DIRECT: full_in_s is a number below an
#              hour and fs-filling is raised; on the idle filesystem before, full_in_s
#              is null.
#   full       a file fallocate'd to fill 95 %, and a 4 MiB tmpfs filled: fs-full for both
#              (the tmpfs one with device null).
#   replay     that sample recorded (--record) and decoded again (test_replay through
#              IOTRIAGE_REPLAY_FILE): written again byte for byte, filesystems, deleted
#              files and fs-* warnings included.
. "$(dirname "$0")/lib.sh"
need mkfs.ext4
need losetup
need df
need du
need fallocate
[ "$(id -u)" = 0 ] || skip "needs root (loop device, mount)"
FSFIX="$ROOT/build/tests/fsfix"
[ -x "$FSFIX" ] || make -s -C "$ROOT" build/tests/fsfix >/dev/null || fail "cannot build $FSFIX"

MNT="$TMP/mnt"
SHM="$TMP/shm"
LOOP=""
CHILDREN=()
FILL=""
teardown() {
    local p
    for p in "${CHILDREN[@]:-}"; do [ -n "$p" ] && kill "$p" 2>/dev/null; done
    [ -n "$FILL" ] && kill -- "-$FILL" 2>/dev/null
    it_kill_bg
    mountpoint -q "$SHM" && umount "$SHM"
    if [ -n "$LOOP" ]; then
        mountpoint -q "$MNT" && { umount "$MNT" || umount -l "$MNT"; }
        losetup -d "$LOOP" 2>/dev/null
    fi
    it_cleanup
}
trap teardown EXIT

mkdir -p "$MNT" "$SHM"
truncate -s 160M "$TMP/fs.img"
mkfs.ext4 -q -F -m 0 "$TMP/fs.img" || fail "mkfs.ext4"
LOOP=$(losetup -f --show "$TMP/fs.img") || fail "losetup"
mount "$LOOP" "$MNT" || fail "mount $LOOP"
head -c 40M /dev/urandom >"$TMP/data" || fail "random data"

used() { df -B1 --output=used "$MNT" | tail -n 1 | tr -d ' '; }
avail() { df -B1 --output=avail "$MNT" | tail -n 1 | tr -d ' '; }
# The JSON of our filesystem in the last sample.
ourfs() { tail -n 1 "$TMP/out.json" | jq -c --arg m "$MNT" '.filesystems[] | select(.mount == $m)'; }
MIB=1048576

# writer NAME MODE(append|trunc) MB: a shell holding NAME on fd 3 that writes MB MiB, starts
# a child inheriting fd 3 (CHILD), then writes N MiB more each time N is written to
# $TMP/NAME.fifo. $TMP/NAME.st gets a line after each write.
writer() {
    mkfifo "$TMP/$1.fifo"
    bg bash -c '
        if [ "$2" = append ]; then exec 3>>"$1"; else exec 3>"$1"; fi
        head -c "$3"M "$4" >&3
        sleep 1000 &
        echo "child $!"
        while :; do
            read -r n <"$5" || continue
            head -c "$n"M "$4" >&3
            echo wrote
        done' _ "$MNT/$1" "$2" "$3" "$TMP/data" "$TMP/$1.fifo" >"$TMP/$1.st"
    WPID=$BG
    # (20 s: the first write is tens of MiB, slow on a loaded machine)
    wait_until 20 grep -q '^child' "$TMP/$1.st"
    CHILD=$(awk '/^child/ { print $2 }' "$TMP/$1.st")
    [ -n "$CHILD" ] || fail "writer $1 did not start"
    CHILDREN+=("$CHILD")
}
write_more() { # write_more NAME MB: and wait until written
    local before st=$TMP/$1.st
    before=$(grep -c wrote "$st")
    echo "$2" >"$TMP/$1.fifo"
    wait_until 20 eval '[ "$(grep -c wrote "$st")" -gt "$before" ]' && return
    fail "writer $1 did not write"
}

# ---- append: 40 MiB held by a shell and its child ---------------------------------------------
sync
U0=$(used)
writer app.log append 40
APP=$WPID APPCHILD=$CHILD
rm "$MNT/app.log"
sync
U1=$(used)
DU=$(du -sB1 "$MNT" | awk '{ print $1 }')
grew=$((U1 - U0))
"$IOT" --json -n 1 -d 0.3 -p "$APP" -p "$APPCHILD" >"$TMP/out.json" || fail "iotriage"
F=$(ourfs)
[ -n "$F" ] || fail "no filesystem $MNT in the JSON: $(tail -n 1 "$TMP/out.json" | jq -c '[.filesystems[].mount]')"
echo "$F" | jq -e '.fstype == "ext4" and (.device | startswith("loop")) and .size_bytes > 0' >/dev/null ||
    fail "mount entry: $F"
D=$(echo "$F" | jq -c '.deleted_open[] | select(.path | endswith("app.log (deleted)"))')
[ -n "$D" ] || fail "app.log not among deleted_open: $F"
echo "$D" | jq -e --argjson a "$APP" --argjson c "$APPCHILD" '
    .size_bytes == 41943040 and
    ([.holders[] | select(.fd == 3 and .append == true) | .pid] | sort) == ([$a, $c] | sort) and
    ([.holders[] | select(.pid == $a) | .comm] == ["bash"]) and
    ([.holders[] | select(.pid == $c) | .comm] == ["sleep"])' >/dev/null ||
    fail "holders/size of app.log: $D"
DB=$(echo "$F" | jq '.deleted_open_bytes')
BLK=$(echo "$D" | jq '.blocks_bytes')
between "$BLK" $((40 * MIB)) $((41 * MIB)) || fail "blocks_bytes $BLK not ~40 MiB"
[ "$DB" = "$BLK" ] || fail "deleted_open_bytes $DB != the one file's blocks $BLK"
# df minus du: what the file holds (du sees only lost+found and the root directory).
between "$DB" $(( (grew - DU) * 97 / 100 )) $(( (grew - DU) * 103 / 100 + 65536 )) ||
    fail "deleted_open_bytes $DB vs df growth $grew minus du $DU"
tail -n 1 "$TMP/out.json" | jq -e --arg m "$MNT" \
    '[.warnings[] | select(.code == "fs-deleted-open" and .mount == $m)] | length == 1' >/dev/null ||
    fail "no fs-deleted-open warning for $MNT: $(tail -n 1 "$TMP/out.json" | jq -c .warnings)"
ok "append: 40 MiB held by bash[$APP] and sleep[$APPCHILD] (append), df grew $grew, du $DU, iotriage $DB"

# ---- refusals ----------------------------------------------------------------------------------
out=$("$FSFIX" -r truncate "$APP" 3 "$MNT") && fail "read-only truncate succeeded: $out"
echo "$out" | grep -q '^err=EROFS$' || fail "read-only: $out"
out=$("$FSFIX" -r signal "$APP" 3 "$MNT") && fail "read-only signal succeeded: $out"
echo "$out" | grep -q '^err=EROFS$' || fail "read-only signal: $out"
out=$("$FSFIX" -i 12345 truncate "$APP" 3 "$MNT") && fail "stale truncate succeeded: $out"
echo "$out" | grep -q '^err=ESTALE$' || fail "stale: $out"
: >"$TMP/exists"
out=$("$FSFIX" truncate "$APP" 3 "$MNT" "$TMP/exists") && fail "copy over an existing file succeeded"
echo "$out" | grep -q '^err=EEXIST$' || fail "existing copy target: $out"
[ ! -s "$TMP/exists" ] || fail "the existing copy target was written"
[ "$(stat -Lc %b "/proc/$APP/fd/3")" -ge $((40 * 2048)) ] || fail "a refused action changed the file"
ok "refusals: read-only EROFS, stale ESTALE, existing copy target EEXIST, file intact"

# ---- truncate, copy first -----------------------------------------------------------------------
A0=$(avail)
out=$("$FSFIX" truncate "$APP" 3 "$MNT" "$TMP/copy.log") || fail "truncate: $out"
A1=$(avail)
cmp -s "$TMP/copy.log" "$TMP/data" || fail "the copy differs from what was written"
freed=$(echo "$out" | sed -n 's/^freed=//p')
between $((A1 - A0)) $((39 * MIB)) $((42 * MIB)) || fail "df avail grew $((A1 - A0)), not ~40 MiB"
between "$freed" $(( (A1 - A0) - MIB )) $(( (A1 - A0) + MIB )) || fail "fsfix freed=$freed vs df $((A1 - A0))"
echo "$out" | grep -q '^append=1$' || fail "append not seen: $out"
"$IOT" --json -n 1 -d 0.3 -p "$APP" >"$TMP/out.json" || fail "iotriage"
ourfs | jq -e '.deleted_open_bytes == 0 and ([.deleted_open[] | select(.path | endswith("app.log (deleted)")) | .size_bytes] == [0])' >/dev/null ||
    fail "after truncate: $(ourfs)"
write_more app.log 1
[ "$(stat -Lc %s "/proc/$APP/fd/3")" = "$MIB" ] || fail "append writer: size $(stat -Lc %s "/proc/$APP/fd/3") after 1 MiB more"
ok "truncate: copy identical, df avail +$((A1 - A0)), fsfix freed $freed; appending writer restarts at 0"

# ---- a writer without O_APPEND -----------------------------------------------------------------
writer plain.log trunc 8
PLAIN=$WPID
CHILDREN+=("$CHILD")
rm "$MNT/plain.log"
"$IOT" --json -n 1 -d 0.3 -p "$PLAIN" >"$TMP/out.json" || fail "iotriage"
ourfs | jq -e '[.deleted_open[] | select(.path | endswith("plain.log (deleted)")) | .holders[] | select(.fd == 3) | .append] == [false]' >/dev/null ||
    fail "plain.log append flag: $(ourfs)"
out=$("$FSFIX" truncate "$PLAIN" 3 "$MNT") || fail "truncate plain: $out"
echo "$out" | grep -q '^append=0$' || fail "append=0 expected: $out"
echo "$out" | grep -q 'sparse' || fail "no sparse-file warning: $out"
write_more plain.log 1
"$IOT" --json -n 1 -d 0.3 -p "$PLAIN" >"$TMP/out.json" || fail "iotriage"
P=$(ourfs | jq -c '.deleted_open[] | select(.path | endswith("plain.log (deleted)"))')
echo "$P" | jq -e --argjson m $MIB '.size_bytes == 9 * $m and .blocks_bytes >= $m and .blocks_bytes < 2 * $m' >/dev/null ||
    fail "non-append writer after truncate: $P"
ok "no append: append false, message warns, then size 9 MiB with $(echo "$P" | jq .blocks_bytes) bytes of blocks"

# ---- signal: a holder that reopens on HUP ------------------------------------------------------
bg bash -c 'exec 3>>"$1"; head -c 4M "$2" >&3
            trap "exec 3>>\"\$1\"" HUP
            echo ready >"$3"
            while :; do sleep 0.1 3>&-; done' _ "$MNT/hup.log" "$TMP/data" "$TMP/hup.st"
HUP=$BG
wait_until 20 test -s "$TMP/hup.st" || fail "the HUP holder never got ready: $(proc_state "$HUP")"
rm "$MNT/hup.log"
out=$("$FSFIX" signal "$HUP" 3 "$MNT" 28 0.3) && echo "$out" | grep -q '^released=0$' ||
    fail "a signal it ignores (WINCH) should leave the file held: $out"
echo "$out" | grep -q 'may not reopen' || fail "message for not released: $out"
out=$("$FSFIX" signal "$HUP" 3 "$MNT") || fail "signal: $out"
echo "$out" | grep -q '^released=1$' || fail "HUP not seen to release: $out"
freed=$(echo "$out" | sed -n 's/^freed=//p')
between "$freed" $((4 * MIB - 65536)) $((5 * MIB)) || fail "space back after HUP: $freed"
[ -e "$MNT/hup.log" ] || fail "the holder did not reopen its log"
ok "signal: WINCH ignored (released=0), HUP reopened, $freed bytes back"

# ---- filling: time to full on a steady writer ----------------------------------------------------
"$IOT" --json -n 1 -d 0.3 -p "$HUP" >"$TMP/out.json" || fail "iotriage"
ourfs | jq -e '.full_in_s == null' >/dev/null || fail "idle filesystem has a time to full: $(ourfs)"
# Its own process group (setsid), so that the whole pipeline can be stopped by its id.
bg setsid bash -c 'while :; do head -c 1M /dev/zero; sleep 0.25; done | dd of="$1" bs=1M iflag=fullblock oflag=direct status=none' _ "$MNT/fill.dat"
FILL=$BG
"$IOT" --json -n 5 -d 1 -p "$FILL" >"$TMP/out.json" || fail "iotriage"
kill -- "-$FILL" 2>/dev/null
wait "$FILL" 2>/dev/null
FILL=""
F=$(ourfs)
echo "$F" | jq -e '.full_in_s != null and .full_in_s > 0 and .full_in_s < 3600 and .fill_bps > 0 and .write_bps > 0' >/dev/null ||
    fail "steady writer: $F"
tail -n 1 "$TMP/out.json" | jq -e --arg m "$MNT" '[.warnings[] | select(.code == "fs-filling" and .mount == $m)] | length == 1' >/dev/null ||
    fail "no fs-filling warning: $(tail -n 1 "$TMP/out.json" | jq -c .warnings)"
ok "filling: full_in_s $(echo "$F" | jq .full_in_s) s, fill $(echo "$F" | jq .fill_bps) B/s, write $(echo "$F" | jq .write_bps) B/s"

# ---- full, then recorded and replayed ----------------------------------------------------------
# The writers above still hold their deleted files: the recording carries them too.
sync
A=$(avail)
fallocate -l $((A / 20 * 19)) "$MNT/big" || fail "fallocate"
mount -t tmpfs -o size=4M tmpfs "$SHM" || fail "mount tmpfs"
head -c 3900K /dev/zero >"$SHM/fill" || fail "fill tmpfs"
"$IOT" --json -n 2 -d 0.3 --record "$TMP/rec.jsonl" >"$TMP/out.json" || fail "iotriage --record"
ourfs | jq -e '.used_pct >= 90' >/dev/null || fail "not full: $(ourfs)"
tail -n 1 "$TMP/out.json" | jq -e --arg m "$MNT" --arg s "$SHM" '
    ([.warnings[] | select(.code == "fs-full" and .mount == $m and (.device | startswith("loop")))] | length == 1) and
    ([.warnings[] | select(.code == "fs-full" and .mount == $s and .device == null)] | length == 1)' >/dev/null ||
    fail "fs-full for the loop ext4 and the tmpfs: $(tail -n 1 "$TMP/out.json" | jq -c .warnings)"
ok "full: $(ourfs | jq .used_pct) % used, fs-full raised (and for a tmpfs, device null)"
jq -e --arg m "$MNT" '.filesystems[] | select(.mount == $m) | .deleted_open | length >= 2' "$TMP/rec.jsonl" >/dev/null ||
    fail "the recording lacks the deleted files"
RT="$ROOT/build/tests/test_replay"
[ -x "$RT" ] || make -s -C "$ROOT" build/tests/test_replay >/dev/null || fail "cannot build $RT"
out=$(IOTRIAGE_REPLAY_FILE="$TMP/rec.jsonl" "$RT" 2>&1) || { printf '%s\n' "$out" >&2; fail "replay round trip"; }
grep -q ": 2 samples written again byte for byte" <<<"$out" || { printf '%s\n' "$out" >&2; fail "round trip did not run"; }
ok "recorded and replayed: filesystems, deleted files and fs-* warnings written again byte for byte"
