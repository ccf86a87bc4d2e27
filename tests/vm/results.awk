# The VM lane's reader of a guest's result port (tests/vm/guest/init writes it; run.sh
# reads it with this). Input: the port's lines. Variables: want (the tests asked for,
# comma-separated), tag (said after each test's line). Output: a line per test that
# ended (PASS/FAIL/SKIP vm/NAME TAG), its own output below it (at most 200 lines,
# unprintable bytes as '?'), and last "@counts PASS FAIL SKIP ENDED,... FAILED,...".
# Only a well-formed protocol line counts: "@vm end NAME STATUS" for a test asked for,
# begun, and not ended yet; any other line is the running test's output (a test cannot
# end another, nor end twice). Hostile or torn input never counts a pass.
BEGIN {
    n = split(want, w, ",")
    for (i = 1; i <= n; i++) asked[w[i]] = 1
    cur = ""; p = f = s = 0; ended = failed = ""
}
function flush(name, st) {
    printf "%s  vm/%-36s %s\n", (st == "pass" ? "PASS" : st == "skip" ? "SKIP" : "FAIL"), name, tag
    printf "%s", buf
    if (lines > 200) printf "      | (%d more lines)\n", lines - 200
}
{
    sub(/\r$/, "")
    line = $0
    if (line ~ /^@vm begin [A-Za-z0-9_]+$/ && ($3 in asked) && !($3 in done_)) {
        cur = $3; buf = ""; lines = 0; next
    }
    if (line ~ /^@vm end [A-Za-z0-9_]+ (pass|fail|skip)$/ && $3 == cur && cur != "") {
        done_[cur] = 1
        flush(cur, $4)
        if ($4 == "pass") p++; else if ($4 == "skip") s++; else { f++; failed = failed (failed == "" ? "" : ",") cur }
        ended = ended (ended == "" ? "" : ",") cur
        cur = ""; next
    }
    if (line ~ /^@vm (boot [^ ]+ [0-9]+|done|tick)$/) next
    if (cur == "") next
    lines++
    if (lines <= 200) {
        gsub(/[^[:print:]\t]/, "?", line)
        buf = buf "      | " substr(line, 1, 400) "\n"
    }
}
END { printf "@counts %d %d %d %s %s\n", p, f, s, (ended == "" ? "-" : ended), (failed == "" ? "-" : failed) }
