#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Abusive HTTP clients for tests/integration/test_export.sh (loopback only).

Each mode connects from a source address of its own (127.0.0.2 by default), so the
exporter's per-address limit applies to the abuser and not to the scraper on 127.0.0.1,
and prints one line of `key=value` counts for the test to check:

  slowloris HOST PORT N SECONDS [drip]  N connections that send half a request header and
      then nothing (or, with `drip`, one more header line a second, never finishing):
      counts how many the server closed (refused at once, or timed out)
  bigheader HOST PORT BYTES             one request with a header of BYTES bytes: the
      status line the server answered, or `closed`
  flood HOST PORT N SECONDS             N connections at once, held open: counts how many
      the server closed
  raw HOST PORT REQUEST...              each REQUEST (Python escapes: \\r, \\n, \\x00) sent
      whole on one connection, the next once the answer to the previous one is read:
      one line per request, `status=CODE body=complete|short|none allow=... interim=...`
      (status=none: the connection closed, or 5 s passed, before a final status line;
      body=short: fewer bytes than its Content-Length; interim: 1xx codes before it)
"""
import resource
import select
import socket
import sys
import time

SRC = "127.0.0.2"


def loopback_only(host):
    if not host.startswith("127."):
        sys.exit("http_abuse: loopback targets only")


def raise_nofile(n):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = min(hard, max(soft, n + 64))
    resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))


def connect(host, port, blocking=True):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind((SRC, 0))
    if blocking:
        s.settimeout(5)
        s.connect((host, port))
    else:
        s.setblocking(False)
        s.connect_ex((host, port))
    return s


def closed_by_peer(s):
    """True when the server closed (or reset) the connection; never blocks."""
    try:
        p = select.poll()           # select() stops at fd 1023
        p.register(s, select.POLLIN)
        if not p.poll(0):
            return False
        return s.recv(65536, socket.MSG_DONTWAIT) == b""
    except BlockingIOError:
        return False
    except OSError:
        return True


def hold(socks, seconds, drip):
    """Keep the connections for `seconds` at most (until the server closed them all),
    dripping a header line a second if asked; returns how many the server closed."""
    closed = set()
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        for i, s in enumerate(socks):
            if i in closed:
                continue
            if closed_by_peer(s):
                closed.add(i)
                continue
            if drip:
                try:
                    s.send(b"X-Drip: a\r\n")
                except OSError:
                    closed.add(i)
        if len(closed) == len(socks):
            break                       # all closed: nothing more to hold
        time.sleep(1)
    for i, s in enumerate(socks):
        if i not in closed and closed_by_peer(s):
            closed.add(i)
    return len(closed)


def slowloris(host, port, n, seconds, drip=False):
    socks, failed = [], 0
    for _ in range(n):
        try:
            s = connect(host, port)
            s.send(b"GET /metrics HTTP/1.1\r\nHost: x\r\nUser-Agent: slow")
            socks.append(s)
        except OSError:
            failed += 1
    closed = hold(socks, seconds, drip)
    print(f"opened={len(socks)} connect_failed={failed} server_closed={closed}")
    for s in socks:
        s.close()


def bigheader(host, port, nbytes):
    s = connect(host, port)
    status = "closed"
    try:
        s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * nbytes + b"\r\n\r\n")
    except OSError:
        pass            # the server may close before reading it all
    try:
        s.settimeout(10)
        data = s.recv(4096)
        if data:
            status = data.split(b"\r\n", 1)[0].decode("latin-1").replace(" ", "_")
    except OSError:
        pass
    print(f"status={status}")
    s.close()


def flood(host, port, n, seconds):
    raise_nofile(n)
    socks = []
    for _ in range(n):
        try:
            socks.append(connect(host, port, blocking=False))
        except OSError:
            break
    closed = hold(socks, seconds, False)
    print(f"opened={len(socks)} server_closed={closed}")
    for s in socks:
        s.close()


def read_response(s, buf, head):
    """One response from s (buf: bytes already read): (fields, rest of buf)."""
    interim = []
    while True:
        while b"\r\n\r\n" not in buf:
            chunk = s.recv(65536)
            if not chunk:
                return {"status": "none", "body": "none", "interim": interim}, b""
            buf += chunk
        header, buf = buf.split(b"\r\n\r\n", 1)
        lines = header.decode("latin-1").split("\r\n")
        code = lines[0].split(" ")[1] if len(lines[0].split(" ")) > 1 else "?"
        fields = {k.strip().lower(): v.strip() for k, _, v in (l.partition(":") for l in lines[1:])}
        if code.startswith("1"):
            interim.append(code)
            continue
        want = 0 if head else int(fields.get("content-length", "0"))
        while len(buf) < want:
            chunk = s.recv(65536)
            if not chunk:
                break
            buf += chunk
        body = "complete" if len(buf) >= want else "short"
        return {"status": code, "body": body, "allow": fields.get("allow", ""),
                "interim": interim}, buf[want:]


def raw(host, port, requests):
    s = connect(host, port)
    buf = b""
    for r in requests:
        req = r.encode("latin-1").decode("unicode_escape").encode("latin-1")
        try:
            s.sendall(req)
            res, buf = read_response(s, buf, req.startswith(b"HEAD "))
        except OSError:            # a reset, or the 5 s timeout
            res = {"status": "none", "body": "none", "interim": []}
        print(f"status={res['status']} body={res['body']} allow=\"{res.get('allow', '')}\" "
              f"interim={','.join(res['interim']) or '-'}")
        if res["status"] == "none":
            break
    s.close()


def main():
    mode, host, port = sys.argv[1], sys.argv[2], int(sys.argv[3])
    loopback_only(host)
    if mode == "slowloris":
        slowloris(host, port, int(sys.argv[4]), float(sys.argv[5]),
                  len(sys.argv) > 6 and sys.argv[6] == "drip")
    elif mode == "bigheader":
        bigheader(host, port, int(sys.argv[4]))
    elif mode == "flood":
        flood(host, port, int(sys.argv[4]), float(sys.argv[5]))
    elif mode == "raw":
        raw(host, port, sys.argv[4:])
    else:
        sys.exit("http_abuse: unknown mode " + mode)


if __name__ == "__main__":
    main()
