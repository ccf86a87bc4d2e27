#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# `iotriage export` at its edges, with no root, lab disk or Prometheus (test_export.sh is
# the run against the real engines):
#  - the textfile's temporary name already taken, by a hard link or a symlink to another
#    file (a shared directory): that file is left as it was, the name too, and the page
#    is published all the same;
#  - raw HTTP requests over loopback (tests/helpers/http_abuse.py raw), each answered
#    whole: a GET with a body (Content-Length, chunked) or waiting on "Expect:
#    100-continue" gets its page; a target holding an encoded or a raw NUL is a 404, not
#    /metrics; "OPTIONS *" and CONNECT are 405 with Allow; plain scrapes keep their
#    connection alive; libmicrohttpd never reports an internal error.
. "$(dirname "$0")/lib.sh"
need python3
ABUSE="$ROOT/tests/helpers/http_abuse.py"

# ---- The textfile's temporary name, planted ---------------------------------------------
TF=$TMP/tf
mkdir -p "$TF"
echo "someone else's file" >"$TMP/victim"
# plant KIND: run the exporter with PATH.tmp.PID (the first name it tries) already there,
# a link to the victim made by the shell that then becomes the exporter (same pid).
plant() {
    rm -f "$TF"/*
    bg sh -c 'if [ "$1" = hard ]; then ln "$2" "$3.tmp.$$"; else ln -s "$2" "$3.tmp.$$"; fi &&
              exec "$4" export --textfile "$3" -n 2 -d 0.1' sh "$1" "$TMP/victim" "$TF/io.prom" "$IOT"
    local pid=$BG
    wait "$pid" || fail "$1 link planted: the exporter failed"
    [ "$(cat "$TMP/victim")" = "someone else's file" ] ||
        fail "$1 link planted: the file it points to was written: $(head -c 200 "$TMP/victim")"
    [ "$TMP/victim" -ef "$TF/io.prom.tmp.$pid" ] || fail "$1 link planted: the link was removed or replaced"
    grep -q '^iotriage_refreshes_total 2$' "$TF/io.prom" ||
        fail "$1 link planted: no page published: $(ls -l "$TF")"
    [ "$(find "$TF" -name '*.tmp.*' | wc -l)" = 1 ] || fail "$1 link planted: temporary files left: $(ls "$TF")"
}
plant hard
[ "$(stat -c %h "$TMP/victim")" = 2 ] || fail "hard link: link count $(stat -c %h "$TMP/victim")"
ok "a hard link at the textfile's temporary name: its file untouched, the page published"
plant sym
ok "a symlink at the textfile's temporary name: its target untouched, the page published"

# ---- HTTP requests at the edges -----------------------------------------------------------
bg "$IOT" export --listen 127.0.0.1:0 -d 0.5 2>"$TMP/export.err"
port_known() {
    EP=$(sed -n 's|.*listening on http://127.0.0.1:\([0-9]*\)/metrics|\1|p' "$TMP/export.err")
    [ -n "$EP" ]
}
wait_until 30 port_known || fail "the exporter did not start: $(cat "$TMP/export.err")"
# ask REQUEST...: the helper's line for each request, sent in turn on one connection
ask() { python3 "$ABUSE" raw 127.0.0.1 "$EP" "$@"; }
H='Host: x\r\n'
has_page() { [ "$(ask "GET /metrics HTTP/1.1\r\n$H\r\n")" = 'status=200 body=complete allow="" interim=-' ]; }
wait_until 60 has_page || fail "no page served: $(ask "GET /metrics HTTP/1.1\r\n$H\r\n")"

# expect WHAT WANT REQUEST: the one answer to REQUEST is WANT (status and a whole body)
expect() {
    local got
    got=$(ask "$3")
    [ "$got" = "$2" ] || fail "$1: got '$got', expected '$2'"
}
page='status=200 body=complete allow="" interim=-'
expect "GET with a Content-Length body" "$page" "GET /metrics HTTP/1.1\r\n${H}Content-Length: 5\r\n\r\nhello"
expect "GET with a chunked body" "$page" \
    "GET /metrics HTTP/1.1\r\n${H}Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n"
expect "GET with Expect: 100-continue and a body" "$page" \
    "GET /metrics HTTP/1.1\r\n${H}Expect: 100-continue\r\nContent-Length: 3\r\n\r\nabc"
expect "GET with Expect: 100-continue alone" "$page" "GET /metrics HTTP/1.1\r\n${H}Expect: 100-continue\r\n\r\n"
expect "GET / with a body" 'status=200 body=complete allow="" interim=-' "GET / HTTP/1.1\r\n${H}Content-Length: 3\r\n\r\nabc"
ok "GET with a body (length, chunked, Expect: 100-continue): the page, whole, no 100"

nf='status=404 body=complete allow="" interim=-'
expect "/metrics%00.txt" "$nf" "GET /metrics%00.txt HTTP/1.1\r\n$H\r\n"
expect "/metrics%00" "$nf" "GET /metrics%00 HTTP/1.1\r\n$H\r\n"
expect "/metrics<NUL>.txt" "$nf" "GET /metrics\x00.txt HTTP/1.1\r\n$H\r\n"
expect "/metrics<NUL>" "$nf" "GET /metrics\x00 HTTP/1.1\r\n$H\r\n"
expect "/<NUL>" "$nf" "GET /\x00index.html HTTP/1.1\r\n$H\r\n"
ok "a target with an encoded or raw NUL: 404"

na='status=405 body=complete allow="GET, HEAD" interim=-'
expect "OPTIONS *" "$na" "OPTIONS * HTTP/1.1\r\n$H\r\n"
expect "CONNECT" "$na" "CONNECT 127.0.0.1:$EP HTTP/1.1\r\n$H\r\n"
expect "POST /metrics with a body" "$na" "POST /metrics HTTP/1.1\r\n${H}Content-Length: 1\r\n\r\nx"
expect "GET *" "$nf" "GET * HTTP/1.1\r\n$H\r\n"
ok "OPTIONS * and CONNECT: 405 with Allow: GET, HEAD"

# Plain scrapes share one connection: answered when the header is in, the connection kept.
out=$(ask "GET /metrics HTTP/1.1\r\n$H\r\n" "HEAD /metrics HTTP/1.1\r\n$H\r\n" "GET / HTTP/1.1\r\n$H\r\n")
[ "$(grep -c '^status=200 body=complete' <<<"$out")" = 3 ] || fail "three requests on one connection: $out"
ok "three plain requests on one kept-alive connection"

kill -0 "$BG" 2>/dev/null || fail "the exporter died: $(cat "$TMP/export.err")"
grep -q "internal error" "$TMP/export.err" && fail "libmicrohttpd reported an internal error: $(cat "$TMP/export.err")"
ok "no internal error reported"
