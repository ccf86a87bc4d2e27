#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The process view of a process with more threads than it shows: every thread counted,
# the leader first, and the thread waiting on I/O shown even though 100 threads have
# lower ids, because the BPF lens saw it wait; with --no-bpf, nothing tells which thread
# waits, and the lowest ids are shown.
. "$(dirname "$0")/lib.sh"
. "$ROOT/tests/lab/lab.sh"
need tmux
need python3
SOCK=iotriage-threads-$$
. "$(dirname "$0")/lib_tmux.sh"
lab_up 2000 4 64 || exit $?
trap 'it_kill_bg; T kill-server 2>/dev/null; lab_down; it_cleanup' EXIT

# 100 sleeping threads, then one that reads the lab disk with O_DIRECT (each read waits
# 2 ms in the lab's FUSE handler: the thread is in iowait nearly all the time). Its tid
# is written to a file once it runs.
cat >"$TMP/many.py" <<'EOF'
import mmap, os, sys, threading, time
dev, tidfile = sys.argv[1], sys.argv[2]
stop = threading.Event()
for _ in range(100):
    threading.Thread(target=stop.wait, daemon=True).start()
def reader():
    with open(tidfile + ".tmp", "w") as f:
        f.write(str(threading.get_native_id()))
    os.rename(tidfile + ".tmp", tidfile)
    fd = os.open(dev, os.O_RDONLY | os.O_DIRECT)
    buf = mmap.mmap(-1, 4096)
    size = os.lseek(fd, 0, os.SEEK_END) // 4096
    i = 0
    while True:
        os.preadv(fd, [buf], (i * 7919 % size) * 4096)
        i += 1
threading.Thread(target=reader, daemon=True).start()
time.sleep(600)
EOF
bg python3 "$TMP/many.py" "$LAB_DEV" "$TMP/tid"
PY=$BG
for _ in $(seq 1 100); do [ -s "$TMP/tid" ] && break; sleep 0.1; done
[ -s "$TMP/tid" ] || fail "the reader thread never started"
RT=$(cat "$TMP/tid")
nthreads=$(ls "/proc/$PY/task" | wc -l)
[ "$nthreads" = 102 ] || fail "python has $nthreads threads, want 102"
# the reader's tid is above the 63 lowest: only a ranking can bring it into view
below=$(ls "/proc/$PY/task" | awk -v t="$RT" '$1 < t' | wc -l)
[ "$below" -ge 64 ] || fail "only $below threads below the reader's tid $RT"

# open_view ARGS: the screen on the python process, its process view open
open_view() {
    T new-session -d -s ui -x 130 -y 110 "$IOT -d 0.5 -p $PY $*; echo EXITED \$?; sleep 60"
    wait_for '^ +PID USER' 10
    wait_for "^ +$PY " 10
    T send-keys -t ui Enter
    wait_for "^Threads \\(102\\)" 10
    wait_for "^  \\.\\.\\. and 38 more"
}

# 1. The lens on: the reader is listed (it waited on I/O), right after the leader.
open_view
wait_for "^Threads \\(102\\)"
screen | grep -A1 '^Threads (102)' | grep -Eq "^ +$PY " || { screen; fail "the leader is not first"; }
wait_for "^ +$RT .* D |^ +$RT " 15
screen | grep -A2 '^Threads (102)' | tail -1 | grep -Eq "^ +$RT " || { screen; fail "the I/O thread $RT is not right after the leader"; }
ok "lens on: 102 threads counted, 64 shown, the leader then the I/O thread $RT (tid above 64 others)"

# 2. --no-bpf: nothing says who waits; the lowest ids are shown and the reader is not.
#    A server of its own: a new session on a server that is still shutting down fails.
T kill-server 2>/dev/null
SOCK=$SOCK_BASE-nobpf
open_view --no-bpf
sleep 2
screen | grep -Eq "^ +$RT " && { screen; fail "without the lens the reader $RT is shown: the order is not by tid"; }
first_two=$(screen | grep -A2 '^Threads (102)' | tail -2 | awk '{ print $1 }' | tr '\n' ' ')
want=$(ls "/proc/$PY/task" | sort -n | head -2 | tr '\n' ' ')
[ "$first_two" = "$want" ] || { screen; fail "without the lens the first threads are '$first_two', want '$want'"; }
ok "--no-bpf: the leader then the lowest ids; the reader is among the 38 not shown"
T send-keys -t ui q
