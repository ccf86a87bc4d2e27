#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The libraries every run loads: only those every run needs. libproc2 (the process view),
# libzstd (the recorder) and libmicrohttpd (the exporter) are opened when their feature
# starts, libm not at all (util/num.h), and the rest are linked from their archives: a
# shared object's load costs resident memory and start-up time before a line of it runs. Checked in the binary (what the dynamic
# loader must load) and in a live batch run (what it mapped).
. "$(dirname "$0")/lib.sh"
need readelf

needed=$(readelf -d "$IOT" | awk '/\(NEEDED\)/ { gsub(/[][]/, "", $5); print $5 }')
[ -n "$needed" ] || fail "readelf found no NEEDED entry in $IOT"
for lib in libm.so libproc2.so libzstd.so libmicrohttpd.so; do
    if grep -q "^$lib" <<<"$needed"; then
        fail "$IOT needs $lib at start: $(tr '\n' ' ' <<<"$needed")"
    fi
done
# The default build links ncursesw, libnl, libbpf, libelf and zlib from their archives
# (Makefile: STATIC_LIBS): the dynamic loader has libc alone to map.
if [ "${STATIC_LIBS:-1}" = 1 ]; then
    [ "$needed" = libc.so.6 ] || fail "$IOT needs more than libc at start: $(tr '\n' ' ' <<<"$needed")"
fi
ok "needed at start: $(tr '\n' ' ' <<<"$needed")"

# A batch run, caught while it waits for its second sample.
"$IOT" -b --no-bpf -n 2 -d 3 >"$TMP/out" 2>"$TMP/err" &
BG=$!; BG_PIDS+=("$BG")
for _ in $(seq 100); do
    grep -q "^iotriage - " "$TMP/out" 2>/dev/null && break
    sleep 0.1
done
grep -q "^iotriage - " "$TMP/out" || fail "the batch run printed no first report: $(cat "$TMP/err")"
cp "/proc/$BG/maps" "$TMP/maps" || fail "cannot read the batch run's maps"
for lib in libm.so libproc2.so libzstd.so libmicrohttpd.so libncursesw.so libbpf.so; do
    ! grep -q "/$lib" "$TMP/maps" || fail "a batch run mapped $lib"
done
wait "$BG" || fail "the batch run failed: $(cat "$TMP/err")"
ok "a batch run maps none of libm, libproc2, libzstd, libmicrohttpd, libncursesw, libbpf"
