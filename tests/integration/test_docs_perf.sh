#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# docs/performance.md stays a reference (issue #37): at most 400 lines (the rounds that
# made its figures are in git history), and every pointer into it from the tree still
# finds its section. A pointer is the text after the file's name: a quoted name
# (, "NAME"  or  : "NAME"  or  ("NAME") , a quote that runs onto the next line included),
# an unquoted one up to the closing parenthesis (, NAME)  or  : NAME) ), or an anchor
# (#anchor); a name must be part of a heading (any case), an anchor a heading's
# GitHub anchor; the page's own [..](#anchor) links count as anchors. Each check must be
# able to fail: a copy of the tree with a broken pointer, a broken link and a page grown
# past the limit is refused.
. "$(dirname "$0")/lib.sh"
cd "$ROOT" || fail "no $ROOT"
DOC=docs/performance.md
MAX=400
[ -f "$DOC" ] || fail "no $DOC"

# pointers DIR: "FILE:LINE<TAB>name<TAB>TEXT" or "FILE:LINE<TAB>anchor<TAB>SLUG", one a line
pointers() {
    local d=$1 f
    while read -r f; do
        case $f in */tests/integration/test_docs_perf.sh) continue ;; esac
        awk -v F="${f#"$d"/}" -v SELF="$([ "${f#"$d"/}" = "$DOC" ] && echo 1)" '
        { line[NR] = $0 }
        function lead(s) { sub(/^[ \t]*(#|\*|\/\/)?[ \t]*/, "", s); return s }
        END {
            for (i = 1; i <= NR; i++) {
                s = line[i]
                if (SELF) {
                    while (match(s, /\]\(#[^)]*\)/)) {
                        printf "%s:%d\tanchor\t%s\n", F, i, substr(s, RSTART + 3, RLENGTH - 4)
                        s = substr(s, RSTART + RLENGTH)
                    }
                    continue
                }
                while ((p = index(s, "performance.md")) > 0) {
                    s = substr(s, p + 14)
                    if (match(s, /^#[A-Za-z0-9_-]+/)) {
                        printf "%s:%d\tanchor\t%s\n", F, i, substr(s, 2, RLENGTH - 1)
                    } else if (match(s, /^(,|:)? ?\(?"/)) {
                        t = substr(s, RLENGTH + 1)
                        if (index(t, "\"") == 0 && i < NR) t = t " " lead(line[i + 1])
                        q = index(t, "\""); if (q > 0) t = substr(t, 1, q - 1)
                        printf "%s:%d\tname\t%s\n", F, i, t
                    } else if (match(s, /^(,|:) [^"]/)) {
                        t = substr(s, 3)
                        if (t !~ /[);]/ && i < NR) t = t " " lead(line[i + 1])
                        if (match(t, /[);]/)) t = substr(t, 1, RSTART - 1)
                        printf "%s:%d\tname\t%s\n", F, i, t
                    }
                }
            }
        }' "$f"
    done < <(grep -rlI --exclude-dir=build --exclude-dir=.git 'performance\.md' \
                 "$d/src" "$d/include" "$d/mk" "$d/bench" "$d/tests" "$d/docs" \
                 "$d/scripts" "$d/README.md" "$d/Makefile" 2>/dev/null | sort)
}

# broken DIR: the pointers of the tree under DIR that find no heading, and the page's
# length past the limit; nothing when all is well
broken() {
    local d=$1 n
    n=$(wc -l < "$d/$DOC")
    [ "$n" -le "$MAX" ] || echo "$DOC: $n lines (at most $MAX)"
    pointers "$d" | awk -F'\t' -v DOC="$d/$DOC" '
        BEGIN {
            while ((getline h < DOC) > 0) {
                if (h !~ /^#+ /) continue
                sub(/^#+ +/, "", h)
                heads[tolower(h)] = 1
                g = tolower(h); gsub(/[^a-z0-9 _-]/, "", g); gsub(/ /, "-", g)
                slug[g] = 1
            }
        }
        {
            if ($2 == "anchor") { if (!($3 in slug)) print $1 ": no heading for #" $3; next }
            t = tolower($3); gsub(/^[ \t]+|[ \t.,:]+$/, "", t)
            if (length(t) < 3) { print $1 ": pointer too short to check: \"" $3 "\""; next }
            ok = 0
            for (h in heads) if (index(h, t) > 0) { ok = 1; break }
            if (!ok) print $1 ": no heading holds \"" $3 "\""
        }'
}

n=$(pointers . | wc -l)
[ "$n" -ge 20 ] || fail "only $n pointers found: the search is wrong"$'\n'"$(pointers .)"
bad=$(broken .)
[ -z "$bad" ] || fail "$bad"
ok "$DOC: $(wc -l < "$DOC") lines (at most $MAX); $n pointers into it, each finds its heading"

# The checks can fail: a copy with a pointer whose section is renamed, a link to a
# missing anchor, and the page grown past the limit.
mkdir -p "$TMP/tree"
for p in src include mk bench tests docs scripts README.md Makefile; do
    [ -e "$p" ] && cp -r "$p" "$TMP/tree/"
done
rm -rf "$TMP/tree/tests/integration/test_docs_perf.sh"
sed -i 's/^## Sampled thread states$/## Thread states, sampled/' "$TMP/tree/$DOC"
echo 'See [nowhere](#no-such-section).' >> "$TMP/tree/$DOC"
bad=$(broken "$TMP/tree")
echo "$bad" | grep -q 'mk/threadstate.mk:7: no heading holds "Sampled thread states"' ||
    fail "a pointer to a renamed section passed: '$bad'"
echo "$bad" | grep -q 'no heading for #no-such-section' || fail "a broken link passed: '$bad'"
ok "a pointer to a renamed section and a broken link are refused"
yes 'filler' | head -n "$MAX" >> "$TMP/tree/$DOC"
bad=$(broken "$TMP/tree")
echo "$bad" | grep -q "^$DOC: [0-9]* lines (at most $MAX)" || fail "a page past $MAX lines passed: '$bad'"
ok "a page past $MAX lines is refused"
