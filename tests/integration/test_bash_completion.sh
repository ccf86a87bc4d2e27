#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# contrib/bash-completion/iotriage: sourced in a plain bash (no bash-completion package),
# it completes subcommands, options and their values; and it knows every option that
# `iotriage --help` and `iotriage audit --help` print, so it cannot fall behind them.
. "$(dirname "$0")/lib.sh"
COMP=$ROOT/contrib/bash-completion/iotriage
[ -r "$COMP" ] || fail "$COMP missing"
bash -n "$COMP" || fail "$COMP: syntax error"

# complete WORD...: the completions bash would offer for the command line "WORD... |",
# sorted, one line.
complete_line() {
    bash --norc --noprofile -c '
        . "$1"; shift
        COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1))
        COMP_LINE="$*"; COMP_POINT=${#COMP_LINE}
        spec=$(complete -p iotriage) || exit 3
        _iotriage iotriage "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD - 1]}"
        printf "%s\n" "${COMPREPLY[@]}" | sort | tr "\n" " "' _ "$COMP" "$@"
}
expect() { # expect "WANTED" WORD...
    local want=$1; shift
    local got
    got=$(complete_line "$@")
    [ "${got% }" = "$want" ] || fail "completion of '$*': got '${got% }', expected '$want'"
}

expect "--read-only --record --replay" iotriage --re
expect "export" iotriage ex
expect "--textfile" iotriage export --text
expect "audit" iotriage au
expect "audit export record trial" iotriage ""
expect "--root" iotriage audit --ro
expect "--json" iotriage audit --units-only --j
expect "--iterations" iotriage -b --it
# no subcommand after the first argument, and audit's options only under audit
expect "" iotriage -b au
expect "" iotriage audit --batch
expect "--keep-if" iotriage trial --ke
expect "kyber" iotriage trial loop0 ky
expect "kyber" iotriage trial --seconds 4 loop0 ky
ok "options and subcommands: --re, au, audit --ro, audit --units-only --j, trial's arguments"

# Values: files after --record/--replay, directories after --root, pids after -p,
# nothing after -n (a number).
mkdir -p "$TMP/w/recdir" && : >"$TMP/w/rec.ndjson" && : >"$TMP/w/other"
cd "$TMP/w" || fail "cd"
expect "rec.ndjson recdir" iotriage --replay re
expect "rec.ndjson recdir" iotriage --record=re
expect "recdir" iotriage audit --root re
expect "" iotriage -n 1
got=$(complete_line iotriage -p $$)
[[ " $got " == *" $$ "* ]] || fail "-p $$ does not complete to this shell's pid: '$got'"
ok "values: files, directories, pids"

# Every option the binary documents is completed (a new option needs a line here).
for sub in "" audit export record trial; do
    # shellcheck disable=SC2086
    # the option table (lines starting with an option) and, for a subcommand, the
    # [--options] of its usage line (the monitor's help shows audit's usage line too:
    # those are audit's)
    opts=$({ "$IOT" $sub --help | grep -E '^ +-' | sed -E 's/^ +//; s/  .*//'
             [ -z "$sub" ] || "$IOT" $sub --help | grep -E "^ *(Usage: )?iotriage $sub " |
                 grep -oE '\[--?[A-Za-z][-A-Za-z]*' | tr -d '['
           } | grep -oE -- '--?[A-Za-z][-A-Za-z]*' | sort -u)
    [ -n "$opts" ] || fail "no options found in iotriage $sub --help"
    # one bash for all of them: each completes "iotriage [SUB] OPTION" and must offer it
    # shellcheck disable=SC2086
    missing=$(bash --norc --noprofile -c '
        . "$1"; sub=$2; shift 2
        for o in "$@"; do
            if [ -n "$sub" ]; then COMP_WORDS=(iotriage "$sub" "$o"); COMP_CWORD=2
            else COMP_WORDS=(iotriage "$o"); COMP_CWORD=1; fi
            _iotriage
            [[ " ${COMPREPLY[*]} " == *" $o "* ]] || echo "$o"
        done' _ "$COMP" "$sub" $opts)
    [ -z "$missing" ] || fail "iotriage ${sub:+$sub }--help lists $(echo $missing), the completion does not know"
    ok "iotriage ${sub:-(monitor)}: all $(echo $opts | wc -w) options of --help complete"
done
