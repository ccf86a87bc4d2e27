#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# `iotriage record` (src/recorder.c) on this machine with one process writing synchronously: the store
# holds one sample per interval, in a file named by the UTC hour; each sample lists only
# processes that did I/O or waited on it (the writer among them, with its write rate);
# zstd -dc gives JSON lines that replay decodes and writes again byte for byte
# (tests/unit/test_replay.c's round trip); a SIGTERM stops it cleanly.
. "$(dirname "$0")/lib.sh"

rec() { # DIR INTERVAL N FLUSH: `iotriage record` (N 0: until it is stopped)
    local n=()
    [ "$3" != 0 ] && n=(-n "$3")
    "$IOT" record --dir "$1" -d "$2" "${n[@]}" --flush "$4"
}
SW="$ROOT/build/tests/storewriter"
RT="$ROOT/build/tests/test_replay"
for b in "$SW" "$RT"; do [ -x "$b" ] || fail "$b not built"; done
need zstd

# A long-lived writer: 4 KiB synchronous writes to a scratch file, writing before the
# recorder starts (then every interval has its writes).
bg dd if=/dev/zero of="$TMP/busy" bs=4k count=200000 oflag=dsync status=none
writer=$BG
wait_until 20 test -s "$TMP/busy" || fail "the writer wrote nothing: $(proc_state "$writer")"

rec "$TMP/rec" 0.5 6 1 2>"$TMP/rec.err" || { cat "$TMP/rec.err" >&2; fail "recorder failed"; }
[ ! -s "$TMP/rec.err" ] || { cat "$TMP/rec.err" >&2; fail "recorder printed messages"; }
files=("$TMP"/rec/*)
[ ${#files[@]} -ge 1 ] && [ ${#files[@]} -le 2 ] || fail "expected 1 or 2 hour files, got ${#files[@]}"
for f in "${files[@]}"; do
    [[ $(basename "$f") =~ ^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}\.iotr\.zst$ ]] || fail "unexpected file $f"
done
"$SW" read "$TMP/rec" >"$TMP/read.out"
grep -q '^damage' "$TMP/read.out" && { cat "$TMP/read.out" >&2; fail "damage in a fresh recording"; }
[ "$(grep -c '^sample' "$TMP/read.out")" = 6 ] || fail "expected 6 samples, got $(grep -c '^sample' "$TMP/read.out")"

cat "${files[@]}" | zstd -q -dc >"$TMP/rec.jsonl" || fail "zstd -dc"
jqf -s 'length == 6 and all(.[]; .version == 1 and (.devices | length > 0))' "$TMP/rec.jsonl" >/dev/null
# Only active processes (or stubs named by a warning, which replay marks), and the writer is one.
jqf -s --argjson w "$writer" '[.[].processes[] | select(.pid == $w and .write_bps > 0)] | length >= 1' \
    "$TMP/rec.jsonl" >/dev/null
idle=$(jq -s '[.[] | .warnings as $ws | .processes[]
        | select(((.read_bps // 0) > 0 or (.write_bps // 0) > 0 or (.io_delay_pct // 0) > 0.05) | not)
        | select(.pid as $p | [$ws[] | select(.pid == $p)] | length == 0)] | length' "$TMP/rec.jsonl")
[ "$idle" = 0 ] || fail "$idle idle processes recorded (only active ones should be)"
total=$(jq -s '[.[].processes | length] | add' "$TMP/rec.jsonl")
out=$(IOTRIAGE_REPLAY_FILE="$TMP/rec.jsonl" "$RT" 2>&1) || { printf '%s\n' "$out" >&2; fail "replay round trip"; }
grep -q ": 6 samples written again byte for byte" <<<"$out" || { printf '%s\n' "$out" >&2; fail "round trip did not run"; }
ok "6 samples, $total process entries (all active, writer $writer among them), replayed byte for byte"

# SIGTERM mid-run: a clean stop, everything up to it readable.
bg "$IOT" record --dir "$TMP/rec2" -d 0.2 --flush 5
r=$BG
# libzstd is loaded when a store is opened (store.c, dlopen, before the store's directory
# is made): the recorder maps it, a batch run that opens no store does not
# (IOTRIAGE_RECORD_DIR empty: no baselines read). Each is looked at once it is past that
# point, not after a fixed time: the recorder once its directory exists, the batch run
# once it has printed a sample (and while it still runs).
wait_until 20 test -d "$TMP/rec2" || fail "the recorder made no store directory: $(proc_state "$r")"
sleep 1.5      # then it records a while: at least 3 samples before its SIGTERM below
grep -q libzstd "/proc/$r/maps" || fail "the recorder has no libzstd mapped"
IOTRIAGE_RECORD_DIR= "$IOT" -b -d 0.2 >"$TMP/batch.txt" 2>&1 &
b=$!; BG_PIDS+=("$b")          # it runs until stopped: stopped by the cleanup on a failure too
wait_until 20 grep -q '^iotriage - ' "$TMP/batch.txt" || fail "the batch run printed no sample: $(head -n 3 "$TMP/batch.txt")"
[ -r "/proc/$b/maps" ] || fail "the batch run ended early: $(tail -n 3 "$TMP/batch.txt")"
! grep -q libzstd "/proc/$b/maps" || fail "a batch run mapped libzstd"
kill -TERM "$b"
wait "$b" || fail "the batch run failed: $(tail -n 3 "$TMP/batch.txt")"
# Without the library (bound over by an empty file): the recorder says so, a batch run works.
lib=$(awk '/libzstd/ { print $6; exit }' "/proc/$r/maps")
if [ -n "$lib" ] && command -v unshare >/dev/null; then
    without_lib "$lib" "$IOT" record --dir "$TMP/nolib" -n 1 -d 0.1 >/dev/null 2>"$TMP/nolib.err" &&
        fail "the recorder ran without libzstd"
    grep -q "libzstd" "$TMP/nolib.err" || fail "no word of the missing library: $(cat "$TMP/nolib.err")"
    without_lib "$lib" "$IOT" -b -n 1 -d 0.1 >/dev/null 2>&1 || fail "a batch run failed without libzstd"
    ok "without libzstd: $(head -c 160 "$TMP/nolib.err"); a batch run works"
fi
kill -TERM "$r"
wait "$r" || fail "recorder exited $? on SIGTERM"
BG_PIDS=("$writer")
"$SW" read "$TMP/rec2" >"$TMP/read2.out"
n=$(grep -c '^sample' "$TMP/read2.out")
grep -q '^damage' "$TMP/read2.out" && fail "damage after SIGTERM"
[ "$n" -ge 3 ] || fail "only $n samples after 1.5 s at 0.2 s"
ok "SIGTERM: clean stop, $n samples readable; libzstd mapped by the recorder, not by a batch run"

# Type=notify: with $NOTIFY_SOCKET set, READY=1 arrives before the first sample is due and
# STOPPING=1 on the way out (a datagram socket here stands in for systemd).
command -v python3 >/dev/null || skip "python3 not installed (for the notify socket)"
python3 - "$TMP/notify.sock" "$TMP/notify.log" <<'PY' &
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
s.settimeout(20)
with open(sys.argv[2], "w") as log:
    try:
        while True:
            m = s.recv(4096).decode()
            log.write(m.replace("\n", " ") + "\n")
            log.flush()
            if "STOPPING=1" in m:
                break
    except socket.timeout:
        pass
PY
listener=$!
BG_PIDS+=("$listener")
for ((i = 0; i < 100; i++)); do [ -S "$TMP/notify.sock" ] && break; sleep 0.05; done
NOTIFY_SOCKET="$TMP/notify.sock" rec "$TMP/rec3" 0.3 3 1 || fail "recorder under NOTIFY_SOCKET"
wait "$listener" || fail "notify listener"
grep -q '^READY=1 STATUS=recording' "$TMP/notify.log" || { cat "$TMP/notify.log" >&2; fail "no READY=1"; }
[ "$(tail -n 1 "$TMP/notify.log")" = "STOPPING=1" ] || { cat "$TMP/notify.log" >&2; fail "no STOPPING=1 last"; }
ok "sd_notify: $(tr '\n' '|' <"$TMP/notify.log")"
