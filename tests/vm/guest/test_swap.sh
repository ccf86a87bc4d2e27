# SPDX-License-Identifier: GPL-2.0-or-later
# io pressure that is swap (issue #35): a process short of memory reads its pages back from
# swap in its own context, sleeping in iowait on them: to PSI and IODLY it looks like a
# reader of a slow disk. Swap on the SCSI disk (scsi_debug, 4 commands at once, 2 ms each),
# a process (taskhelper touch) going round 96 MB in a cgroup whose memory.max is 24M: in
# one of three samples, io-pressure-swap names it and the disk, measured (the lens saw
# its bytes go there), and the disk is in /proc/swaps. Nothing else on the machine swaps.
. /iot/tests/vm/guest/lib.sh
scsi_debug dev_size_mb=256 max_queue=4 ndelay=2000000 || fail "scsi_debug did not make a disk"
mkswap "/dev/$SD" >/dev/null || fail "mkswap /dev/$SD"
swapon "/dev/$SD" || fail "swapon /dev/$SD"
CLEANUP+=("swapoff /dev/$SD")
cg_make sw
echo 24M >"$CG/sw/memory.max" || fail "memory.max"
bg sh -c "echo \$\$ >$CG/sw/cgroup.procs && exec /iot/build/tests/taskhelper touch 96 120"
T=$BG
wait_until 60 eval '[ "$(awk "/^pswpin/ {print \$2}" /proc/vmstat)" -gt 1000 ]' ||
    fail "no swap-in: $(grep pswp /proc/vmstat | tr '\n' ' ')"
$IOT --json -d 2 -n 4 >/tmp/swap.all 2>/tmp/swap.err || fail "iotriage: $(head -3 /tmp/swap.err)"
kill "$T"
# every io-pressure-swap of the samples after the first: "pid device evidence text"
got=$(tail -n 3 /tmp/swap.all | jq -r '.processes[] | .pid as $p | .warnings[]
    | select(.code == "io-pressure-swap") | "\($p) \(.device) \(.evidence) \(.text)"')
figs=$(tail -n 3 /tmp/swap.all | jq -c --argjson p "$T" '[.psi.io.some.pct, (.processes[] | select(.pid == $p)
    | {io_delay_pct, io_delay_source, read_bps, devices, lens_bytes})]' | tr '\n' ' ')
line=$(grep -m1 "^$T $SD measured " <<<"$got") ||
    fail "no io-pressure-swap naming taskhelper[$T] on $SD: ${got:-none}; (psi io, the process) $figs"
[[ $line == *"is swap: taskhelper[$T]"*"to $SD, where swap lives"* ]] || fail "its text: $line"
[ -z "$(grep -v "^$T " <<<"$got")" ] || fail "another process named: $got"
ok "${line#* * * }"
