#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The VM lane's reader of a guest's result port never counts what the guest did not say:
# directed cases (a test forging another's end, an end twice or without a begin, CRLF, a
# torn line) and 300 mutations of a well-formed port (tests/vm/protocol_fuzz.py; `make
# fuzz` runs 20,000).
. "$(dirname "$0")/lib.sh"
need python3
cd "$ROOT" || exit 2
python3 tests/vm/protocol_fuzz.py 300 "$(date +%j)" || fail "the result port's reader"
