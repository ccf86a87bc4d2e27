#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Giving back the space of a deleted-but-open file from the screen (issue #20), on a small
# ext4 of our own (a file in the scratch directory on a free loop device, mounted; all of
# it undone on EXIT: writers first, then umount, then detach), checked against df:
#
#   cancel     Esc in the action menu and n in the truncate confirmation change nothing.
#   too small  a confirmation the terminal cannot show whole is not taken.
#   copy first a shell appends 40 MiB to app.log, a child inherits the descriptor, the
#              file is deleted under both: both holders are listed; the truncate dialog
#              says the contents are lost; the copy path refuses an existing file and a
#              path on the same filesystem (with why), takes one on another; after y the
#              copy equals what was written, df's avail grew by ~40 MiB and the result
#              shows avail before/after and the file's blocks 40M -> 0B; the writer's next
#              1 MiB lands at offset 0.
#   no append  a writer opened with > (no O_APPEND): the dialog warns of the sparse file;
#              after y df's avail grew, and the next 1 MiB lands at the old offset: size
#              9 MiB, blocks ~1 MiB.
#   signal     a shell that reopens its log on HUP: its handler is seen, HUP is the
#              default, after y it lets go and df shows the space back; the child of the
#              first writer has no handler: the dialog says HUP's default action ends it.
#   another    a shell that reopens on USR1 and USR2: USR1 from the menu, then USR2 typed
#              (a name that is no signal is refused first): each time the file is let go.
#   slow copy  the copy goes to an ext4 on the lab disk (120 ms a request, one at a time):
#              while the child copies, the screen goes on (the waiting dialog's seconds
#              grow), Esc hides it, another action is refused (one at a time), and the
#              result opens by itself when the copy and the truncate are done. Left out,
#              and said so, when this machine cannot have a lab disk.
#   read-only  --read-only refuses the action with the reason, and nothing changes.
. "$(dirname "$0")/lib.sh"
need mkfs.ext4
need losetup
need df
need cmp
[ "$(id -u)" = 0 ] || skip "needs root (loop device, mount)"
SOCK=iotriage-fsact-$$
. "$(dirname "$0")/lib_tmux.sh"

MNT="$TMP/mnt"
SLOW="$TMP/slow"
LOOP=""
CHILDREN=()
teardown() {
    local p
    tmux_cleanup
    for p in "${CHILDREN[@]:-}"; do [ -n "$p" ] && kill "$p" 2>/dev/null; done
    it_kill_bg
    # the lab disk's own trap (lab.sh) detaches it after this
    mountpoint -q "$SLOW" && { umount "$SLOW" || umount -l "$SLOW"; }
    if [ -n "$LOOP" ]; then
        mountpoint -q "$MNT" && { umount "$MNT" || umount -l "$MNT"; }
        losetup -d "$LOOP" 2>/dev/null
    fi
    it_cleanup
}
trap teardown EXIT

mkdir -p "$MNT" "$SLOW"
truncate -s 160M "$TMP/fs.img"
mkfs.ext4 -q -F -m 0 "$TMP/fs.img" || fail "mkfs.ext4"
LOOP=$(losetup -f --show "$TMP/fs.img") || fail "losetup"
mount "$LOOP" "$MNT" || fail "mount $LOOP"
head -c 40M /dev/urandom >"$TMP/data" || fail "random data"
MIB=1048576
avail() { sync; df -B1 --output=avail "$MNT" | tail -n 1 | tr -d ' '; }
blocks() { stat -Lc %b "/proc/$1/fd/3"; }      # 512-byte blocks the holder's fd 3 holds
size() { stat -Lc %s "/proc/$1/fd/3"; }

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
# reopener NAME SIGNALS...: a shell holding NAME on fd 3 (4 MiB written) that reopens it
# on each of SIGNALS; its sleeps do not inherit fd 3.
reopener() {
    local name=$1
    shift
    bg bash -c 'f=$1 data=$2 st=$3; shift 3
        exec 3>>"$f"; head -c 4M "$data" >&3
        for s in "$@"; do trap "exec 3>>\"\$f\"; echo reopened >>\"\$st\"" "$s"; done
        echo ready >>"$st"
        while :; do sleep 0.1 3>&-; done' _ "$MNT/$name" "$TMP/data" "$TMP/$name.st" "$@"
    RPID=$BG
    wait_until 20 test -s "$TMP/$name.st"
    [ -s "$TMP/$name.st" ] || fail "reopener $name did not start"
}

# The line the screen shows selected (reverse video), without its escapes.
selected() { T capture-pane -p -e -t ui | grep $'\e\\[7m' | sed 's/\x1b\[[0-9;]*m//g'; }
# press KEY: send it and wait until another line is selected (a loaded machine may draw
# late, and a second key sent before would skip a line). A line is known by its first 40
# columns: a row's mount, device and scheduler, a holder's name, pid and fd; the figures
# after them change with every refresh.
press() {
    local before i
    before=$(selected | cut -c1-40)
    T send-keys -t ui "$1"
    for i in $(seq 1 30); do
        [ "$(selected | cut -c1-40)" != "$before" ] && return 0
        sleep 0.1
    done
    return 1                         # nothing moved: the end of the list
}
# select_holder COMM PID: in the filesystems view, select our filesystem (its row starts
# with the mount point cut to 22 columns and the device), wait until the holder is listed
# there with its open flags, then move the selection to the holder's line.
select_holder() {
    local i row
    row=$(printf '%-22.22s %-8.8s' "$MNT" "${LOOP#/dev/}")
    # From the last filesystem up: Up moves from row to row (Down walks the holders too).
    press End
    for i in $(seq 1 100); do
        selected | grep -qF "$row" && break
        press Up || break
    done
    selected | grep -qF "$row" || { screen; fail "could not select $MNT"; }
    wait_for "held by $1\\[$2\\] fd 3 (append|no-append)" 20
    for i in $(seq 1 100); do
        selected | grep -q "held by $1\\[$2\\] fd 3" && return 0
        press Down || break
    done
    screen
    fail "could not select the holder $1[$2]"
}
# The dialog reads as one line (long lines wrap).
dialog() { screen | tr '\n' ' ' | tr -s ' '; }

# ---- the files --------------------------------------------------------------------------------
writer app.log append 40
APP=$WPID APPCHILD=$CHILD
writer plain.log trunc 8
PLAIN=$WPID
reopener hup.log HUP
HUP=$RPID
reopener usr.log USR1 USR2
USR=$RPID
writer slow.log append 24
SLOWW=$WPID
rm "$MNT/app.log" "$MNT/plain.log" "$MNT/hup.log" "$MNT/usr.log" "$MNT/slow.log"
# A slow filesystem for the copy: ext4 on the lab disk.
HAVE_LAB=0
. "$(dirname "$0")/../lab/lab.sh"
if [ -x "$ROOT/build/tests/slowfs" ] || make -s -C "$ROOT" build/tests/slowfs >/dev/null 2>&1; then
    lab_up 120000 1 96
    rc=$?
    [ $rc = 0 ] || [ $rc = 77 ] || fail "lab_up failed"
    if [ $rc = 0 ]; then
        mkfs.ext4 -q -F -m 0 -E nodiscard,lazy_itable_init=1,lazy_journal_init=1 "$LAB_DEV" || fail "mkfs.ext4 on $LAB_DEV"
        mount "$LAB_DEV" "$SLOW" || fail "mount $LAB_DEV"
        HAVE_LAB=1
    fi
fi

T new-session -d -s ui -x 150 -y 45 "$IOT -d 0.5; echo EXITED \$?; sleep 60"
wait_for '^ +PID '
# the banner: deleted files still open hold more than a tenth of the filesystem's used space
wait_for "^! +fs-deleted-open: $MNT: [0-9.]+M \\([0-9]+% of used\\) held by [0-9]+ deleted files? still open" 20
ok "banner: fs-deleted-open on $MNT"
T send-keys -t ui F
wait_for '^Filesystems'

# ---- cancel: Esc and n change nothing ----------------------------------------------------------
B0=$(blocks "$APP")
select_holder bash "$APP"
wait_for "deleted +40M +$MNT/app.log \\(deleted\\)"
wait_for "held by sleep\\[$APPCHILD\\] fd 3 append"
T send-keys -t ui Enter
wait_for '^A deleted file still open: give its space back\?'
wait_for "held by bash\\[$APP\\] fd 3, which appends \\(O_APPEND\\)"
wait_for "also held by sleep\\[$APPCHILD\\] fd 3, append, write-only"
T send-keys -t ui Escape
wait_for 'nothing changed'
T send-keys -t ui Enter
wait_for '^A deleted file still open'
T send-keys -t ui t
wait_for "^Truncate the deleted file to 0 bytes through bash\\[$APP\\] fd 3\\?"
T send-keys -t ui n
wait_for "nothing changed: bash still holds the file"
[ "$(blocks "$APP")" = "$B0" ] || fail "cancel changed the file: $(blocks "$APP") blocks, was $B0"
ok "cancel: Esc in the menu and n in the confirmation leave app.log's $((B0 / 2048)) MiB held"

# ---- a confirmation the terminal cannot show whole is not taken --------------------------------
T resize-window -t ui -x 150 -y 9
T send-keys -t ui Enter t
wait_for '^Truncate the deleted file'
T send-keys -t ui y
wait_for 'the terminal is too small to show the whole dialog'
T send-keys -t ui Escape
T resize-window -t ui -x 150 -y 45
wait_for 'nothing changed'
[ "$(blocks "$APP")" = "$B0" ] || fail "a dialog shown in part truncated the file"
ok "too small: y refused on a 9-line terminal, the file untouched"

# ---- truncate with a copy first, O_APPEND -------------------------------------------------------
: >"$TMP/exists"
A0=$(avail)
T send-keys -t ui Enter t
wait_for "^Truncate the deleted file to 0 bytes through bash\\[$APP\\] fd 3\\?"
dialog | grep -q "Its contents are lost: 40M (40M allocated on $MNT, which has [0-9.]*M available). Nothing brings them back." ||
    { screen; fail "the truncate dialog does not say the contents are lost"; }
wait_for "bash\\[$APP\\] fd 3 appends \\(O_APPEND\\)"
screen | grep -q 'WARNING' && fail "a warning for an appending writer"
T send-keys -t ui c
wait_for '^Copy the file first: to which path\?'
T send-keys -t ui "$TMP/exists" Enter
wait_for "refused: $TMP/exists exists: iotriage never overwrites a file"
T send-keys -t ui C-u "$MNT/copy.log" Enter
wait_for "refused: $MNT is on the same filesystem as the file"
T send-keys -t ui C-u "relative.log" Enter
wait_for 'refused: give an absolute path'
T send-keys -t ui C-u "$TMP/copy.log" Enter
wait_for "It is copied first to $TMP/copy.log \\(40M\\)"
wait_for 'y copy, then truncate'
[ -e "$MNT/copy.log" ] && fail "a refused copy path was created"
T send-keys -t ui y
wait_for '^Truncated' 20
A1=$(avail)
cmp -s "$TMP/copy.log" "$TMP/data" || fail "the copy differs from what was written"
between $((A1 - A0)) $((39 * MIB)) $((42 * MIB)) || fail "df avail grew $((A1 - A0)), not ~40 MiB"
dialog | grep -Eq "Available on $MNT: [0-9.]+M before, [0-9.]+M after: (39|40|41)(\\.[0-9])?M came back" ||
    { screen; fail "the result does not show the space that came back"; }
dialog | grep -q 'The file: 40M allocated before, 0B after; size 40M before, 0B after' ||
    { screen; fail "the result does not show the file's blocks"; }
[ "$(blocks "$APP")" = 0 ] || fail "app.log still holds $(blocks "$APP") blocks"
T send-keys -t ui x
write_more app.log 1
[ "$(size "$APP")" = "$MIB" ] || fail "appending writer: size $(size "$APP") after 1 MiB more"
ok "copy first: existing, same-filesystem and relative paths refused; copy identical; df avail +$((A1 - A0)); writer restarts at 0"

# ---- no O_APPEND: the sparse-file warning -------------------------------------------------------
A0=$(avail)
select_holder bash "$PLAIN"
T send-keys -t ui Enter t
wait_for "^Truncate the deleted file to 0 bytes through bash\\[$PLAIN\\] fd 3\\?"
dialog | grep -q "WARNING: bash\\[$PLAIN\\] fd 3 does not append (no O_APPEND): it writes on at its old offset, so the file becomes sparse at its old size (8.0M): the space comes back, the size does not." ||
    { screen; fail "no sparse-file warning"; }
T send-keys -t ui y
wait_for '^Truncated' 20
A1=$(avail)
between $((A1 - A0)) $((7 * MIB)) $((9 * MIB)) || fail "df avail grew $((A1 - A0)), not ~8 MiB"
dialog | grep -q "WARNING: it does not append: it writes on at offset 8.0M, the file stays sparse at that size." ||
    { screen; fail "the result does not repeat the warning"; }
T send-keys -t ui x
write_more plain.log 1
[ "$(size "$PLAIN")" = $((9 * MIB)) ] || fail "non-append writer: size $(size "$PLAIN"), not 9 MiB"
between "$(blocks "$PLAIN")" 2048 4096 || fail "non-append writer: $(blocks "$PLAIN") blocks, not ~1 MiB"
ok "no append: warned; df avail +$((A1 - A0)); then size 9 MiB with $(( $(blocks "$PLAIN") / 2 )) KiB of blocks"

# ---- signal: HUP, the default, to a holder that reopens on it ----------------------------------
# The first writer's child has no handler: the dialog says HUP would end it (and sends nothing).
select_holder sleep "$APPCHILD"
T send-keys -t ui Enter s
wait_for "^Which signal for sleep\\[$APPCHILD\\]\\?"
wait_for "WARNING: sleep\\[$APPCHILD\\] has no handler for SIGHUP: without one the kernel terminates it."
T send-keys -t ui Escape
wait_for 'nothing changed'
kill -0 "$APPCHILD" || fail "the child was signalled"
A0=$(avail)
select_holder bash "$HUP"
T send-keys -t ui Enter s
wait_for "^> SIGHUP"
wait_for "bash\\[$HUP\\] has a handler for SIGHUP"
T send-keys -t ui Enter
wait_for "^Send SIGHUP to bash\\[$HUP\\]\\?"
# (a sleep it forks holds fd 3 for an instant before closing it: then it is listed too)
wait_for 'space comes back, (as it is the only holder|but only once every other holder lets go too)'
T send-keys -t ui y
wait_for '^Signal sent: the file was let go' 20
A1=$(avail)
between $((A1 - A0)) $((3 * MIB)) $((5 * MIB)) || fail "df avail grew $((A1 - A0)) after HUP, not ~4 MiB"
grep -q reopened "$TMP/hup.log.st" || fail "the holder did not reopen"
[ -e "$MNT/hup.log" ] || fail "no new hup.log"
[ "$(stat -Lc %i "/proc/$HUP/fd/3")" = "$(stat -c %i "$MNT/hup.log")" ] || fail "fd 3 is not the new hup.log"
dialog | grep -Eq "Available on $MNT: [0-9.]+M before, [0-9.]+M after: [0-9.]+M came back" ||
    { screen; fail "no space figures after the signal"; }
T send-keys -t ui x
ok "signal: HUP by default, handler seen, the file let go, df avail +$((A1 - A0)); no-handler warning for sleep"

# ---- another signal: USR1 from the menu, USR2 typed ---------------------------------------------
A0=$(avail)
select_holder bash "$USR"
T send-keys -t ui Enter s Down
wait_for '^> SIGUSR1'
wait_for "bash\\[$USR\\] has a handler for SIGUSR1"
T send-keys -t ui Enter
wait_for "^Send SIGUSR1 to bash\\[$USR\\]\\?"
T send-keys -t ui y
wait_for '^Signal sent: the file was let go' 20
A1=$(avail)
between $((A1 - A0)) $((3 * MIB)) $((5 * MIB)) || fail "df avail grew $((A1 - A0)) after USR1, not ~4 MiB"
T send-keys -t ui x
# The reopened file, 2 MiB written into it, deleted again; then USR2 typed.
head -c 2M "$TMP/data" >>"$MNT/usr.log" || fail "cannot write the reopened usr.log"
rm "$MNT/usr.log"
A0=$(avail)
select_holder bash "$USR"
T send-keys -t ui Enter s End Enter
wait_for '^Which signal for .* Type its name or number'
T send-keys -t ui FOO Enter
wait_for "refused: no signal is called 'FOO'"
T send-keys -t ui C-u usr2 Enter
wait_for "^Send SIGUSR2 to bash\\[$USR\\]\\?"
T send-keys -t ui y
wait_for '^Signal sent: the file was let go' 20
A1=$(avail)
between $((A1 - A0)) $((1 * MIB)) $((3 * MIB)) || fail "df avail grew $((A1 - A0)) after USR2, not ~2 MiB"
[ "$(grep -c reopened "$TMP/usr.log.st")" = 2 ] || fail "the holder did not reopen twice"
T send-keys -t ui x
ok "another signal: USR1 from the menu, usr2 typed (FOO refused): both let go"

# ---- a slow copy does not hold the screen ----------------------------------------------------
if [ "$HAVE_LAB" = 1 ]; then
    A0=$(avail)
    select_holder bash "$SLOWW"
    T send-keys -t ui Enter t c "$SLOW/copy.log" Enter
    wait_for "It is copied first to $SLOW/copy.log \\(24M\\)"
    T send-keys -t ui y
    wait_for "^Copying the file to $SLOW/copy.log, then truncating it" 10
    wait_for '^For [0-9.]+ s\. It runs in process [0-9]+, not in iotriage'
    # the dialog is redrawn with each refresh: the seconds grow while the child copies
    wait_for '^For ([1-9]|[1-9][0-9])\.[0-9] s\.' 20
    [ "$(blocks "$SLOWW")" -gt 0 ] || fail "truncated before the copy was done"
    T send-keys -t ui Escape
    wait_for 'the truncate goes on: its result opens when it is done'
    wait_for '^Filesystems'
    T send-keys -t ui Enter
    wait_for 'the truncate is still under way \(process [0-9]+\): one change at a time'
    wait_for '^Truncated' 180
    A1=$(avail)
    cmp -s "$SLOW/copy.log" <(head -c 24M "$TMP/data") || fail "the slow copy differs"
    between $((A1 - A0)) $((23 * MIB)) $((26 * MIB)) || fail "df avail grew $((A1 - A0)) after the slow copy, not ~24 MiB"
    T send-keys -t ui x
    ok "slow copy: the screen went on while the child copied 24 MiB to a 120 ms disk, Esc hid it, another action was refused, the result opened when done"
else
    echo "note: slow copy left out: this machine cannot have a lab disk"
fi
T send-keys -t ui q
wait_for '^EXITED 0'

# ---- --read-only refuses ------------------------------------------------------------------------
T kill-server
B0=$(blocks "$PLAIN")
T new-session -d -s ui -x 150 -y 45 "$IOT -d 0.5 --read-only; echo EXITED \$?; sleep 60"
wait_for '^iotriage - .*READ-ONLY'
T send-keys -t ui F
wait_for '^Filesystems'
select_holder bash "$PLAIN"
T send-keys -t ui Enter
wait_for 'read-only: started with --read-only, iotriage changes nothing'
screen | grep -Eq '^(A deleted file|Truncate|Send|Which signal)' && fail "a dialog opened in read-only mode"
T send-keys -t ui t s y
sleep 0.5
[ "$(blocks "$PLAIN")" = "$B0" ] || fail "read-only changed the file"
kill -0 "$PLAIN" || fail "read-only: the holder is gone"
T send-keys -t ui q
wait_for '^EXITED 0'
ok "--read-only: Enter on a holder refused with the reason, nothing changed"
