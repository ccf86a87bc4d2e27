#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The interactive screen, driven like a person would: the real binary in tmux, keys sent
# with send-keys, the screen read with capture-pane, at several sizes.
. "$(dirname "$0")/lib.sh"
. "$ROOT/tests/lab/lab.sh"
need ionice
need fio
SOCK=iotriage-test-$$
. "$(dirname "$0")/lib_tmux.sh"
lab_up 2000 4 64 || exit $?
trap 'it_kill_bg; for s in "" -TERM -HUP -INT -nocolor -ascii; do tmux -L "iotriage-test-$$$s" kill-server 2>/dev/null; done; lab_down; it_cleanup' EXIT

# A marked idle process and a hostile command line to look for.
bg bash -c 'exec -a iotriage-tui-marker sleep 300'; marker=$BG
evil=$(printf 'x\033]0;pwned\007evil')
bg bash -c 'exec -a "$0" sleep 300' "$evil"

T new-session -d -s ui -x 140 -y 40 "$IOT -d 0.3 --record $TMP/rec.jsonl; echo EXITED \$?; sleep 60"
wait_for '^iotriage - '
wait_for '^DEVICE +SCHED'
sched=$(sed -n 's/.*\[\(.*\)\].*/\1/p' /sys/block/vda/queue/scheduler)
wait_for "^vda +$sched "
wait_for '^ +PID USER +PRIO'
ok "main screen: header, devices (vda $sched), processes"

# Hostile names are shown escaped (filtered to it, so it is on screen).
clear_filter() { T send-keys -t ui / C-u Enter; wait_gone 'filter: '; }
T send-keys -t ui / pwned Enter
wait_for 'x\\e\]0;pwned\\x07evil'
clear_filter
ok "hostile command line shown escaped"

# Help, and back.
T send-keys -t ui h
wait_for 'iotriage keys'
T send-keys -t ui Escape
wait_for '^ +PID USER'
ok "help opens and closes"

# Sorting: > moves to the next column, r reverses.
T send-keys -t ui '>'
wait_for 'sort: INFLT  '
T send-keys -t ui '<' '<' 
wait_for 'sort: WRITE  '
T send-keys -t ui r
wait_for 'sort: WRITE asc'
T send-keys -t ui r '>'
ok "sort column and order"

# Filter: only the marker is left, then its details.
T send-keys -t ui / iotriage-tui-marker Enter
wait_for 'filter: iotriage-tui'
rows=$(screen | grep -E '^ +[0-9]+ ' | grep -vc ' tmux -L ')   # the send-keys that typed it may still be alive
[ "$rows" = 1 ] || { screen; fail "filter left $rows rows"; }
screen | grep -Eq "^ +$marker .*iotriage-tui-marker" || { screen; fail "marker row missing"; }
T send-keys -t ui Enter
wait_for "^Process $marker"
wait_for 'ioprio +be/4'
wait_for 'Threads \(1\): each has its own I/O priority'
wait_for "^ +$marker be/4~ +nice +0 +S [a-z_]+ +sleep"
# what libproc2 says of it: asleep in the kernel's nanosleep; its v2 cgroup as
# /proc/PID/cgroup's "0::" line has it (or blkio: and the v1 path without one)
wait_for '^now +S in [a-z_]*sleep[a-z_]* +up [0-9]+m[0-9]+s +rss [0-9.]+[KM] '
cg=$(screen | sed -n 's/^cgroup    //p')
want=$(sed -n 's/^0:://p' "/proc/$marker/cgroup")
[ -n "$want" ] || want=blkio:$(sed -n 's/^[0-9]*:blkio://p' "/proc/$marker/cgroup")
[ "$cg" = "$want" ] || { screen; fail "cgroup line '$cg', want '$want'"; }
T send-keys -t ui Escape
clear_filter
ok "filter and process details"

# A process whose threads carry different labels: the detail view lists each.
bg "$HELPER" threads 3 300; mt=$BG
wait_threads "$mt" 3      # (0.3 s was not always enough: no thread to ionice)
tid=$(ls "/proc/$mt/task" | grep -v "^$mt\$" | head -n 1)
ionice -c3 -p "$tid" || fail "ionice on thread $tid"
T send-keys -t ui / "threads 3 300" Enter
wait_for 'filter: threads 3 300'
wait_for "^ +$mt "
T send-keys -t ui Home Enter
wait_for "^Process $mt"
wait_for 'Threads \(3\)'
wait_for "^ +$tid idle/7 "
wait_for "^ +$mt be/4~"
T send-keys -t ui Escape
clear_filter
ok "per-thread priorities in the process view (thread $tid idle/7)"

# Device details: Tab to the devices, Enter.
T send-keys -t ui Tab Home Enter
wait_for '^Device '
wait_for 'scheduler .*nr_requests'
T send-keys -t ui Escape
T send-keys -t ui Tab
ok "device details"

# The banner: an ionice -c3 reader on a device whose scheduler ignores it.
echo none >"/sys/block/$LAB_NAME/queue/scheduler"
bg ionice -c3 fio --name=idle --filename="$LAB_DEV" --ioengine=libaio --iodepth=16 --direct=1 \
    --bs=4k --rw=randread --time_based --runtime=60 --output=/dev/null
wait_for "ioprio-ignored: fio\[[0-9]+\] idle/7 \(set\) is ignored: $LAB_NAME uses none" 20   # fio starts late under load
wait_for "^$LAB_NAME +none "
ok "banner: $(screen | grep -m1 'ioprio-ignored' | cut -c1-100)"
# mq-deadline reads the class, so idle is honoured there (so is it under bfq, which not
# every kernel offers).
echo mq-deadline >"/sys/block/$LAB_NAME/queue/scheduler" || fail "cannot select mq-deadline"
wait_gone "ioprio-ignored: fio" 8
ok "banner gone once $LAB_NAME uses mq-deadline"

# Resize to 40x12 and back; far too small says so.
T resize-window -t ui -x 40 -y 12
sleep 0.5
wait_for '^iotriage - '
width=$(screen | awk '{ if (length($0) > m) m = length($0) } END { print m + 0 }')
[ "$width" -le 40 ] || fail "lines of $width columns on a 40-column screen"
wait_for '^ +PID'
T resize-window -t ui -x 20 -y 5
wait_for 'terminal too small'
T resize-window -t ui -x 120 -y 40
wait_for '^DEVICE +SCHED'
ok "resize to 40x12, to 20x5 (too small) and back"

# Stray Escapes do nothing, and the screen still answers.
T send-keys -t ui Escape Escape Escape
T send-keys -t ui h
wait_for 'iotriage keys'
T send-keys -t ui Escape
wait_for '^ +PID USER'
ok "stray Esc ignored"

# Pause: the clock stops.
T send-keys -t ui p
wait_for 'PAUSED'
T send-keys -t ui p
wait_gone 'PAUSED'
ok "pause"

# Quit: the program ends with status 0 and the terminal is given back.
T send-keys -t ui q
wait_for '^EXITED 0'
screen | grep -q '^iotriage - ' && fail "the screen was not restored after quitting"
ok "q quits with status 0 and restores the screen"

# The terminal goes away without a SIGHUP (reads then fail with EIO): leave, don't spin.
# -p 1: sampling one process costs next to nothing whatever else runs on the machine,
# so CPU here is the loop itself
out=$(TERM=xterm "$HELPER" ptyclose 1.5 "$IOT" -d 0.3 -p 1) || fail "iotriage kept running after its terminal closed: $out"
case $out in "exit 0 cpu "*) ;; *) fail "after the terminal closed: $out" ;; esac
cpu=${out##* }
between "$cpu" 0 1.0 || fail "CPU $cpu s: spinning on a dead terminal?"
ok "terminal closed under it: $out"

# The recording holds one valid JSON sample per refresh.
n=$(wc -l <"$TMP/rec.jsonl")
[ "$n" -ge 3 ] || fail "recording has $n samples"
jq -e -s 'all(.[]; has("devices") and has("processes") and has("warnings"))' "$TMP/rec.jsonl" >/dev/null \
    || fail "recording is not valid JSON samples"
ok "--record wrote $n samples"

# SIGTERM and SIGHUP end it cleanly too.
base=$SOCK
for sig in TERM HUP INT; do
    T kill-server 2>/dev/null
    SOCK=$base-$sig    # a fresh server: a killed one may still be going away
    T new-session -d -s ui -x 100 -y 30 "$IOT -d 0.3; echo EXITED \$?; sleep 60"
    wait_for '^iotriage - '
    pid=$(pgrep -n -f "^$IOT -d 0.3") || fail "no iotriage process"
    kill -"$sig" "$pid"
    wait_for '^EXITED 0'
    screen | grep -q '^iotriage - ' && fail "SIG$sig left the screen unrestored"
    ok "SIG$sig: exit 0, screen restored"
done

# NO_COLOR: no colour escapes at all; with colour there are some.
T kill-server 2>/dev/null
SOCK=$base-nocolor
T new-session -d -s ui -x 100 -y 30 "NO_COLOR=1 $IOT -d 0.3; sleep 60"
wait_for '^iotriage - '
T capture-pane -e -p -t ui | grep -Eq $'\e\\[[0-9;]*3[0-7]m' && fail "colours despite NO_COLOR"
ok "NO_COLOR honoured"

# Without a UTF-8 locale: plain ASCII on screen (the sparkline too), nothing else.
T kill-server 2>/dev/null
SOCK=$base-ascii
T new-session -d -s ui -x 120 -y 30 "LANG=C LC_ALL=C $IOT -d 0.3; sleep 60"
wait_for '^iotriage - '
sleep 1.5
T capture-pane -p -t ui | LC_ALL=C grep -q '[^ -~]' && { T capture-pane -p -t ui | LC_ALL=C grep -n '[^ -~]' | head -3; fail "non-ASCII on a C-locale screen"; }
ok "C locale: ASCII only"

# An error after the terminal's set-up began (it runs beside the first sample) and before
# the first frame: the line is on the normal screen, the alternate one left, status 1.
for case in record replay; do
    T kill-server 2>/dev/null
    SOCK=$base-err-$case
    if [ $case = record ]; then args="--record $TMP/no-such-dir/rec.jsonl"; want='cannot write .*no-such-dir'
    else args="--replay $TMP/no-such-recording"; want='.*no-such-recording: No such file'; fi
    T new-session -d -s ui -x 100 -y 30 "$IOT -d 0.3 $args; echo EXITED \$?; sleep 60"
    wait_for '^EXITED 1'
    screen | grep -Eq "^iotriage: $want" || { screen; fail "$case error: the message is not on the screen"; }
    [ "$(T display -p -t ui '#{alternate_on}')" = 0 ] || fail "$case error: the alternate screen was not left"
    ok "$case error before the first frame: '$(screen | grep -m1 '^iotriage: ')', normal screen, exit 1"
done
