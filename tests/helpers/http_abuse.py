#!/usr/bin/env python3
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
    """Keep the connections for `seconds`, dripping a header line a second if asked;
    returns how many the server closed."""
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
    else:
        sys.exit("http_abuse: unknown mode " + mode)


if __name__ == "__main__":
    main()
