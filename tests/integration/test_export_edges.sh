#!/usr/bin/env bash
# `iotriage export` at its edges, with no root, lab disk or Prometheus (test_export.sh is
# the run against the real engines):
#  - the textfile's temporary name already taken, by a hard link or a symlink to another
#    file (a shared directory): that file is left as it was, the name too, and the page
#    is published all the same.
. "$(dirname "$0")/lib.sh"

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
