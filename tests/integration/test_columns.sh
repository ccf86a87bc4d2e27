#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# One column table (out/columns.h) for every output: each column `iotriage --list-columns`
# names appears in the header of the -b process table and on a 120-column screen, in the
# same order; the help screen lists each with its text; sorting by each works on the
# screen (its name shows in the header). A column added to the table and forgotten by an
# output fails here.
. "$(dirname "$0")/lib.sh"
need tmux
SOCK=iotriage-cols-$$
. "$(dirname "$0")/lib_tmux.sh"
trap 'it_kill_bg; it_cleanup' EXIT

"$IOT" --list-columns >"$TMP/cols" || fail "--list-columns failed"
mapfile -t titles < <(awk '{ print $1 }' "$TMP/cols")
[ "${#titles[@]}" -ge 10 ] || fail "only ${#titles[@]} columns listed"

bg sleep 300
"$IOT" -b -n 1 -d 0.2 -p "$BG" >"$TMP/b.txt" || fail "-b failed"
hdr=$(grep -E '^ +PID ' "$TMP/b.txt" | head -n 1)
[ -n "$hdr" ] || fail "no process header in -b output"
read -r -a got <<<"$hdr"
[ "${got[*]}" = "${titles[*]}" ] || fail "-b header '${got[*]}' is not the table '${titles[*]}'"
ok "-b: ${#titles[@]} columns, in table order"

T new-session -d -s ui -x 120 -y 50 "LC_ALL=C.UTF-8 $IOT -d 0.3 -p $BG; sleep 60"
wait_for '^ +PID '
line=$(screen | grep -E '^ +PID ' | head -n 1)
read -r -a shown <<<"$line"
[ "${shown[*]}" = "${titles[*]}" ] || fail "screen header '${shown[*]}' is not the table '${titles[*]}'"
ok "120-column screen: every column, in table order"

# Sorting walks the table: > from the default (IODLY) reaches each sortable column. One
# key at a time, each waited for until the screen shows its column (keys sent together
# may be handled between two frames, and a column never shown would look skipped).
sortkey() { screen | grep -Eo 'sort: [A-Z/%]+' | head -n 1; }
wait_for 'sort: [A-Z/%]+'
prev=$(sortkey)
for _ in "${titles[@]}"; do
    T send-keys -t ui '>'
    for _ in $(seq 100); do
        cur=$(sortkey)
        [ -n "$cur" ] && [ "$cur" != "$prev" ] && break
        sleep 0.05
    done
    echo "$cur"
    prev=$cur
done | sort -u >"$TMP/sorts"
[ "$(wc -l <"$TMP/sorts")" = "${#titles[@]}" ] || fail "sort keys seen: $(tr '\n' ' ' <"$TMP/sorts")"
ok "every column is a sort key: $(tr '\n' ' ' <"$TMP/sorts")"

# The help lists each column with its text.
T send-keys -t ui h
wait_for 'Process columns'
for t in "${titles[@]}"; do
    text=$(awk -v t="$t" '$1 == t { $1 = ""; print substr($0, 2); exit }' "$TMP/cols")
    screen | grep -qF -- "$t" || fail "help does not list $t"
    screen | grep -qF -- "${text:0:40}" || fail "help has not the text of $t: ${text:0:40}"
done
ok "help lists every column with its text"
T send-keys -t ui q
