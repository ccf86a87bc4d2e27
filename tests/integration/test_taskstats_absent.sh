#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# iotriage on a kernel without the TASKSTATS generic-netlink family (CONFIG_TASKSTATS off):
# delays must read as unavailable, with the reason, per-task delays null (never 0), and
# everything else (device rows, rates, PSI, I/O priorities) must go on working.
#
# How the family is made absent: a preload library renames the family in iotriage's one
# CTRL_CMD_GETFAMILY request to "TASKSTATZ", a name no kernel has. The kernel then answers
# the request with NLMSG_ERROR -ENOENT, exactly what a kernel built without
# CONFIG_TASKSTATS answers; libnl and iotriage see that real answer (checked with strace
# when it is installed). A new network namespace (`unshare -n`) is no substitute on this
# kernel: 6.18 resolves TASKSTATS and answers its GET requests there (the test notes what
# the namespace did, without depending on it).
#
# Known truth: a synchronous O_DIRECT reader (taskhelper dread, ionice -c2 -n5) on the lab
# disk, started after delay accounting was switched on. Control run without the preload:
# its delay is known and positive, so the nulls below are the family's absence, nothing
# else. Delay accounting is switched on for the test and put back as it was, even on
# failure.
. "$(dirname "$0")/lib.sh"
. "$ROOT/tests/lab/lab.sh"
need cc
need ionice
need sysctl
[ "$(id -u)" = 0 ] || skip "needs root (taskstats, sysctl, the lab disk)"
[ -x "$HELPER" ] || fail "$HELPER not built (make build/tests/taskhelper)"
old_da=$(sysctl -n kernel.task_delayacct 2>/dev/null) || skip "kernel without kernel.task_delayacct"
restore_da() { sysctl -q -w kernel.task_delayacct="$old_da" >/dev/null; }
SOCK=iotriage-tsabsent-$$
. "$(dirname "$0")/lib_tmux.sh"
lab_up 2000 4 64 || exit $?
# lab.sh owns the EXIT trap: stop the workload, the tmux server and the sysctl from there.
# (tmux leaves its socket file behind after kill-server: remove ours.)
trap 'it_kill_bg; T kill-server 2>/dev/null; rm -f "${TMUX_TMPDIR:-/tmp}/tmux-$(id -u)/$SOCK"; restore_da; lab_down; it_cleanup' EXIT
sysctl -q -w kernel.task_delayacct=1 >/dev/null || fail "cannot switch delay accounting on"

# The preload: rewrites only a CTRL_CMD_GETFAMILY request naming TASKSTATS; logs each.
cat >"$TMP/nots.c" <<'EOF'
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <linux/genetlink.h>
#include <linux/netlink.h>

ssize_t sendmsg(int fd, const struct msghdr *msg, int flags)
{
    static ssize_t (*real)(int, const struct msghdr *, int);
    if (!real)
        real = (ssize_t (*)(int, const struct msghdr *, int))dlsym(RTLD_NEXT, "sendmsg");
    if (!msg || msg->msg_iovlen != 1 || msg->msg_iov[0].iov_len < NLMSG_HDRLEN + GENL_HDRLEN)
        return real(fd, msg, flags);
    const unsigned char *b = msg->msg_iov[0].iov_base;
    size_t len = msg->msg_iov[0].iov_len;
    const struct nlmsghdr *nh = (const void *)b;
    const struct genlmsghdr *gh = (const void *)(b + NLMSG_HDRLEN);
    if (nh->nlmsg_type != GENL_ID_CTRL || gh->cmd != CTRL_CMD_GETFAMILY)
        return real(fd, msg, flags);
    for (size_t off = NLMSG_HDRLEN + GENL_HDRLEN; off + NLA_HDRLEN <= len;) {
        const struct nlattr *a = (const void *)(b + off);
        if (a->nla_len < NLA_HDRLEN || off + a->nla_len > len)
            break;
        if ((a->nla_type & NLA_TYPE_MASK) == CTRL_ATTR_FAMILY_NAME &&
            a->nla_len >= NLA_HDRLEN + 10 && memcmp(b + off + NLA_HDRLEN, "TASKSTATS", 10) == 0) {
            unsigned char *copy = malloc(len);
            if (!copy)
                break;
            memcpy(copy, b, len);
            copy[off + NLA_HDRLEN + 8] = 'Z';
            struct iovec iov = { copy, len };
            struct msghdr m = *msg;
            m.msg_iov = &iov;
            ssize_t r = real(fd, &m, flags);
            free(copy);
            const char *log = getenv("NOTS_LOG");
            int lfd = log ? open(log, O_WRONLY | O_CREAT | O_APPEND, 0644) : -1;
            if (lfd >= 0) {
                (void)!write(lfd, "renamed\n", 8);
                close(lfd);
            }
            return r;
        }
        off += NLA_ALIGN(a->nla_len);
    }
    return real(fd, msg, flags);
}
EOF
cc -O2 -Wall -shared -fPIC -o "$TMP/nots.so" "$TMP/nots.c" -ldl 2>"$TMP/cc.err" ||
    fail "cannot build the preload: $(cat "$TMP/cc.err")"
absent() { NOTS_LOG=$TMP/nots.log LD_PRELOAD=$TMP/nots.so "$@"; }
# The runs without taskstats also go without the BPF lens (--no-bpf), which would give
# the delays another way (tests/integration/test_lens.sh covers that).

# The known-truth reader, started after delay accounting was switched on.
bg ionice -c2 -n5 "$HELPER" dread "$LAB_DEV" 60; rd=$BG
# Every sample of the control must show its delay: sampled once it reads (after ionice's
# exec of the helper and the helper's open of the disk).
wait_holds "$rd" "$LAB_DEV"
lab_wait_users 1 || fail "the reader did not start"

# 0. Control: the family is there, the reader's delay is known and positive.
"$IOT" --json -n 2 -d 0.5 -p "$rd" >"$TMP/ctl.json" 2>"$TMP/ctl.err" || fail "control run failed: $(cat "$TMP/ctl.err")"
jqf -s --argjson p "$rd" 'all(.[]; (.notes | all(.source != "delayacct"))
    and (.processes[] | select(.pid == $p) | .io_delay_pct != null and .io_delay_pct > 0))' \
    "$TMP/ctl.json" >/dev/null
ok "control: reader $rd io_delay_pct $(jq -r '.processes[0].io_delay_pct' <(tail -n 1 "$TMP/ctl.json")), no delayacct note"

# What a new network namespace does here (a note, not a condition).
if command -v unshare >/dev/null && unshare -n true 2>/dev/null; then
    ns=$(unshare -n "$IOT" --json -n 1 -d 0.3 -p "$rd" 2>/dev/null |
         jq -r '[.notes[] | select(.source == "delayacct") | .text][0] //
                "family found, reader io_delay_pct \(.processes[0].io_delay_pct)"') || ns="?"
    echo "note: in a new network namespace (unshare -n): $ns"
fi

# 1. The kernel's own answer to the renamed request: ENOENT (when strace is there).
if command -v strace >/dev/null; then
    absent strace -f -e trace=sendmsg,recvmsg -s 64 -o "$TMP/strace.txt" \
        "$IOT" --json -n 1 -d 0.2 -p "$rd" >/dev/null 2>&1 || fail "iotriage under strace failed"
    # strace prints the echoed request's name in hex: TASKSTATZ.
    grep -F 'NLMSG_ERROR' "$TMP/strace.txt" | grep -F 'error=-ENOENT' |
        grep -qF '\x54\x41\x53\x4b\x53\x54\x41\x54\x5a\x00' ||
        { grep -m 4 'nlctrl\|NLMSG_ERROR' "$TMP/strace.txt"; fail "the kernel did not answer the family lookup with ENOENT"; }
    grep -q 'nlmsg_type=TASKSTATS' "$TMP/strace.txt" && fail "a TASKSTATS request went out although the family was not found"
    ok "kernel answered the lookup with NLMSG_ERROR -ENOENT; no TASKSTATS request sent"
else
    echo "note: strace not installed, the kernel's ENOENT is not looked at"
fi
rm -f "$TMP/nots.log"

# 2. JSON: two samples, the reason in notes, every delay null or estimated, the rest as usual.
absent "$IOT" --json -n 2 -d 0.5 --no-bpf >"$TMP/abs.json" 2>"$TMP/abs.err" || fail "--json run failed: $(cat "$TMP/abs.err")"
[ -s "$TMP/nots.log" ] || fail "the preload never saw the family lookup: nothing was tested"
[ "$(wc -l <"$TMP/abs.json")" = 2 ] || fail "expected 2 samples, got $(wc -l <"$TMP/abs.json")"
jqf -s 'all(.[]; [.notes[] | select(.source == "delayacct")] | length == 1 and
        (.[0].text | test("TASKSTATS not found.*CONFIG_TASKSTATS")))' "$TMP/abs.json" >/dev/null
ok "note: $(jq -r '.notes[] | select(.source == "delayacct") | .text' <(tail -n 1 "$TMP/abs.json"))"
jqf -s 'all(.[]; .processes | length > 10)' "$TMP/abs.json" >/dev/null
# Without taskstats and the lens, a delay is either unknown or the estimate from sampled
# thread states (io_delay_source "sampled", docs/verdicts.md), never a taskstats figure.
jqf -s 'all(.[]; all(.processes[]; (.io_delay_pct == null or .io_delay_source == "sampled")
        and .io_delay_source != "taskstats" and .swapin_delay_pct == null
        and .blkio_avg_ms == null and (.delay_overcount | not)))' "$TMP/abs.json" >/dev/null
ok "every process: swapin_delay_pct, blkio_avg_ms null, io_delay_pct null or sampled ($(jq '.processes | length' <(tail -n 1 "$TMP/abs.json")) processes; $(jq '[.processes[] | select(.io_delay_source == "sampled")] | length' <(tail -n 1 "$TMP/abs.json")) sampled)"
# the reader suffers only on the estimate, never on a figure nothing gave
jqf -s --argjson p "$rd" 'all(.[]; .processes[] | select(.pid == $p) |
        (.role != "suffer" and .role != "both") or .io_delay_source == "sampled")' "$TMP/abs.json" >/dev/null
# The rest: the lab device's row and rates, the reader's rate and priority, PSI, vda.
last=$(tail -n 1 "$TMP/abs.json")
jqf --arg d "$LAB_NAME" '[.devices[] | select(.name == $d)] | length == 1 and
        (.[0] | .r_s > 100 and .rkb_s > 400 and .r_await > 0 and .util > 50 and .scheduler != null
         and .reset == false)' <<<"$last" >/dev/null
ok "device $LAB_NAME: $(jq -c --arg d "$LAB_NAME" '.devices[] | select(.name == $d) | {r_s, r_await, util, scheduler}' <<<"$last")"
jqf '[.devices[] | select(.name == "vda")] | length == 1' <<<"$last" >/dev/null
jqf --argjson p "$rd" '.processes[] | select(.pid == $p) | .read_bps > 100000 and .io_error == null
        and .ioprio.class == "be" and .ioprio.level == 5 and (.devices | index($ENV.LAB_NAME) != null)' \
    <<<"$last" >/dev/null
ok "reader $rd: $(jq -c --argjson p "$rd" '.processes[] | select(.pid == $p) | {read_bps, ioprio: "\(.ioprio.class)/\(.ioprio.level)", devices}' <<<"$last")"
if [ -r /proc/pressure/io ]; then
    jqf '.psi.io != null and .psi.io.some.pct != null and .psi.io.some.pct > 0 and .psi.cpu != null' <<<"$last" >/dev/null
    ok "PSI io some $(jq '.psi.io.some.pct' <<<"$last") % this interval"
fi

# 3. Threads (-P): the same, per thread.
absent "$IOT" --json -P -n 1 -d 0.3 -p "$rd" --no-bpf >"$TMP/thr.json" || fail "--json -P run failed"
jqf --argjson p "$rd" '(.notes | any(.source == "delayacct")) and .threads == true and (.processes | length >= 1)
        and all(.processes[]; (.io_delay_pct == null or .io_delay_source == "sampled")
                              and .swapin_delay_pct == null)' "$TMP/thr.json" >/dev/null
ok "threads: delays null (or sampled) with the note"

# 4. Text (-b): the reason on every sample's header, '-' in the delay columns.
absent "$IOT" -b -n 2 -d 0.5 -p "$rd" --no-bpf >"$TMP/abs.txt" 2>&1 || fail "-b run failed: $(tail -n 3 "$TMP/abs.txt")"
n=$(grep -Ec '^Delays: (unavailable|IODLY% from sampled thread states \(marked ~\); swap-in delay \(SWAP%\) unavailable): taskstats: family TASKSTATS not found' "$TMP/abs.txt")
[ "$n" = 2 ] || { cat "$TMP/abs.txt"; fail "text: the reason on $n of 2 samples"; }
row=$(awk -v p="$rd" '$1 == p' "$TMP/abs.txt" | tail -n 1)
[ -n "$row" ] || { cat "$TMP/abs.txt"; fail "text: no row for the reader"; }
# Columns: PID USER PRIO FROM READ/s WRITE/s IODELAY SWAPIN AVGWAIT ...
read -r _ _ prio _ rbps _ dly swp avg _ <<<"$row"
# IODELAY: '-', or the estimate from sampled thread states, marked with '~'
{ [ "$dly" = - ] || [[ $dly == *"~" ]]; } && [ "$swp" = - ] && [ "$avg" = - ] ||
    fail "text: delay columns '$dly' '$swp' '$avg', expected '-' (or an estimate ending in ~ for IODELAY): $row"
[ "$prio" = be/5 ] || fail "text: priority $prio, expected be/5: $row"
[ "$rbps" != - ] && [ "$rbps" != 0B ] || fail "text: read rate '$rbps': $row"
grep -Eq "^$LAB_NAME +[a-z-]+ +[0-9]+ +[0-9]+\.[0-9]+" "$TMP/abs.txt" || fail "text: no row for $LAB_NAME"
ok "text: reason on each sample; reader row: $(echo "$row" | cut -c1-80)"

# 5. The screen: the header says so, the reader's delay is '-'.
T new-session -d -s ui -x 140 -y 40 \
    "NOTS_LOG=$TMP/nots.log LD_PRELOAD=$TMP/nots.so $IOT -d 0.3 -p $rd --no-bpf; echo EXITED \$?; sleep 60"
wait_for '^iotriage - .*delays: kernel without taskstats'
hdr=$(screen | grep -Eo 'delays: kernel without taskstats' | head -n 1)
wait_for "^ +$rd root +be/5 "
sleep 0.7
row=$(screen | grep -E "^ +$rd root " | head -n 1)
read -r _ _ _ _ rbps _ dly swp _ <<<"$row"
{ [ "$dly" = - ] || [[ $dly == *"~" ]]; } && [ "$swp" = - ] ||
    fail "screen: delay columns '$dly' '$swp', expected '-' (or an estimate ending in ~): $row"
screen | grep -Eq "^$LAB_NAME " || fail "screen: no row for $LAB_NAME"
T send-keys -t ui q
wait_for '^EXITED 0'
ok "screen: header says '$hdr'; reader row: $(echo "$row" | cut -c1-70)"
