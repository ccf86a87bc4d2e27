#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Fuzz the VM lane's reader of a guest's result port (tests/vm/results.awk).

Directed cases (a test's output forging another's end, an end twice, an end without a
begin, a test not asked for, CRLF, a torn last line) with their expected counts, then
N mutations of a well-formed port (lines dropped, doubled, swapped, truncated, bytes
flipped, forged protocol lines, binary noise) checked against invariants that hold for
any input: the reader exits 0 and ends on its counts line; every test it counts was
asked for, counted once, and has its exact begin and end lines in the input, in that
order; a pass needs the exact "@vm end NAME pass" line; its output stays bounded.
Usage: protocol_fuzz.py [N] [SEED]   (exit 0 when every case holds)
"""
import random, re, subprocess, sys

AWK = "tests/vm/results.awk"

def run(data, want):
    r = subprocess.run(["awk", "-v", "want=" + ",".join(want), "-v", "tag=(t)", "-f", AWK],
                       input=data, capture_output=True, env={"LC_ALL": "C"})
    if r.returncode != 0:
        raise AssertionError("awk exit %d: %r" % (r.returncode, r.stderr[:200]))
    out = r.stdout.decode("latin-1").splitlines()
    m = re.fullmatch(r"@counts (\d+) (\d+) (\d+) (\S+) (\S+)", out[-1] if out else "")
    if not m:
        raise AssertionError("no counts line: %r" % out[-3:])
    p, f, s = int(m[1]), int(m[2]), int(m[3])
    ended = [] if m[4] == "-" else m[4].split(",")
    failed = [] if m[5] == "-" else m[5].split(",")
    return p, f, s, ended, failed, out[:-1]

def good(names, status):
    lines = [b"@vm boot 6.1.0-57-cloud-amd64 2"]
    for n in names:
        lines += [b"@vm begin " + n.encode(), b"ok: something about " + n.encode(),
                  b"@vm end " + n.encode() + b" " + status.get(n, "pass").encode()]
    lines.append(b"@vm done")
    return b"\n".join(lines) + b"\n"

def check_invariants(data, want, res):
    p, f, s, ended, failed, out = res
    assert p + f + s == len(ended), (p, f, s, ended)
    assert len(set(ended)) == len(ended), ended
    assert set(ended) <= set(want), (ended, want)
    assert set(failed) <= set(ended), (failed, ended)
    lines = [l.rstrip(b"\r") for l in data.split(b"\n")]
    for n in ended:
        ends = [i for i, l in enumerate(lines) if re.fullmatch(rb"@vm end " + re.escape(n.encode()) + rb" (pass|fail|skip)", l)]
        begins = [i for i, l in enumerate(lines) if l == b"@vm begin " + n.encode()]
        assert ends and begins and min(begins) < max(ends), (n, begins, ends)
    for n in ended:  # a counted pass has its exact pass line
        if n not in failed and not any(l == b"@vm end " + n.encode() + b" pass" for l in lines):
            assert any(l == b"@vm end " + n.encode() + b" skip" for l in lines), ("pass without its line", n)
    shown = [l for l in out if l.startswith(("PASS ", "FAIL ", "SKIP "))]
    assert len(shown) == len(ended), (shown, ended)
    assert len(out) <= len(ended) * 203 + 1, len(out)

def directed():
    W = ["test_a", "test_b"]
    cases = [
        ("well-formed", good(W, {}), W, (2, 0, 0)),
        ("a fail", good(W, {"test_b": "fail"}), W, (1, 1, 0)),
        ("ticks between a test's lines", good(W, {}).replace(b"ok: something", b"@vm tick\nok: something"), W, (2, 0, 0)),
        ("forged end of another test", b"@vm begin test_a\n@vm end test_b pass\n@vm end test_a fail\n", W, (0, 1, 0)),
        ("an end twice", b"@vm begin test_a\n@vm end test_a pass\n@vm end test_a pass\n", W, (1, 0, 0)),
        ("an end without a begin", b"@vm end test_a pass\n@vm done\n", W, (0, 0, 0)),
        ("a test not asked for", b"@vm begin test_z\n@vm end test_z pass\n", W, (0, 0, 0)),
        ("CRLF", good(W, {}).replace(b"\n", b"\r\n"), W, (2, 0, 0)),
        ("a torn last line", good(W, {})[:-14], W, (1, 0, 0)),
        ("a status with trailing words", b"@vm begin test_a\n@vm end test_a pass now\n", W, (0, 0, 0)),
        ("a name with a slash", b"@vm begin test/a\n@vm end test/a pass\n", ["test/a"], (0, 0, 0)),
        ("begin again before an end", b"@vm begin test_a\n@vm begin test_b\n@vm end test_a pass\n@vm end test_b pass\n", W, (1, 0, 0)),
        ("noise", bytes(range(256)) * 20, W, (0, 0, 0)),
    ]
    for name, data, want, exp in cases:
        res = run(data, want)
        check_invariants(data, want, res)
        if res[:3] != exp:
            raise AssertionError("%s: counts %s, expected %s" % (name, res[:3], exp))
    return len(cases)

def mutate(rng, data):
    lines = data.split(b"\n")
    for _ in range(rng.randint(1, 6)):
        op = rng.randrange(8)
        i = rng.randrange(len(lines)) if lines else 0
        if op == 0 and lines: del lines[i]
        elif op == 1 and lines: lines.insert(i, lines[i])
        elif op == 2 and len(lines) > 1:
            j = rng.randrange(len(lines)); lines[i], lines[j] = lines[j], lines[i]
        elif op == 3 and lines: lines[i] = lines[i][:rng.randrange(len(lines[i]) + 1)]
        elif op == 4 and lines and lines[i]:
            b = bytearray(lines[i]); b[rng.randrange(len(b))] = rng.randrange(256); lines[i] = bytes(b)
        elif op == 5:
            lines.insert(i, rng.choice([b"@vm end test_b pass", b"@vm end test_c pass", b"@vm done",
                                        b"@vm begin test_b", b"@vm end test_a skip", b"@vm end  pass",
                                        b"@vm tick", b"@vm tick now"]))
        elif op == 6: lines.insert(i, bytes(rng.randrange(256) for _ in range(rng.randrange(300))))
        else: lines.insert(i, b"x" * rng.randrange(5000))
    return b"\n".join(lines)

def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 300
    seed = int(sys.argv[2]) if len(sys.argv) > 2 else 1
    rng = random.Random(seed)
    d = directed()
    W = ["test_a", "test_b", "test_c"]
    base = good(W, {"test_b": "fail"})
    for k in range(n):
        data = mutate(rng, base)
        try:
            check_invariants(data, W, run(data, W))
        except AssertionError as e:
            sys.stderr.write("case %d (seed %d): %s\ninput: %r\n" % (k, seed, e, data[:600]))
            return 1
    print("ok: %d directed cases and %d mutations (seed %d) held" % (d, n, seed))
    return 0

sys.exit(main())
