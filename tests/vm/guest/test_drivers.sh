# SPDX-License-Identifier: GPL-2.0-or-later
# Real drivers, each with its known truth, as iotriage reads them on Debian's kernel:
# the default scheduler the kernel picks (mq-deadline for one hardware queue, none for
# several), nr_requests (the scheduler's twice the tag depth; under none the tags per
# hardware queue: NVMe 1023), the hardware queues, rotational as set; and a known number
# of reads counted in the device's rates.
. /iot/tests/vm/guest/lib.sh
nullb nb1q submit_queues=1 size=128 hw_queue_depth=32 || fail "null_blk nb1q"
nullb nb2q submit_queues=2 size=128 hw_queue_depth=32 || fail "null_blk nb2q"
scsi_debug dev_size_mb=64 max_queue=4 delay=1 || fail "scsi_debug did not make a disk"
echo 1 >"/sys/block/$SD/queue/rotational" || fail "cannot mark $SD rotational"
$IOT --json -n 1 >/tmp/d.json 2>/tmp/d.err || fail "iotriage: $(cat /tmp/d.err)"
# check NAME SCHED NR HWQ ROT: iotriage's view, the kernel's sysfs and the truth agree
check() {
    local j s nr hw rot
    j=$(dev_json /tmp/d.json "$1")
    [ -n "$j" ] || fail "$1 is not listed: $(tail -n 1 /tmp/d.json | jq -c '[.devices[].name]')"
    s=$(jq -r .scheduler <<<"$j") nr=$(jq -r .nr_requests <<<"$j")
    hw=$(jq -r .hw_queues <<<"$j") rot=$(jq -r .rotational <<<"$j")
    [ "$s" = "$(sched "$1")" ] && [ "$nr" = "$(cat "/sys/block/$1/queue/nr_requests")" ] &&
        [ "$hw" = "$(ls "/sys/block/$1/mq" | wc -l)" ] || fail "$1: iotriage $s/$nr/$hw, sysfs $(sched "$1")/$(cat "/sys/block/$1/queue/nr_requests")/$(ls "/sys/block/$1/mq" | wc -l)"
    [ "$s/$nr/$hw/$rot" = "$2/$3/$4/$5" ] || fail "$1: $s nr_requests $nr, $hw hw queues, rotational $rot; expected $2/$3/$4/$5"
    ok "$1: $s, nr_requests $nr, $hw hw queues, rotational $rot"
}
check nb1q mq-deadline 64 1 0
check nb2q none 32 2 0
check "$SD" mq-deadline 8 1 1
check nvme0n1 none 1023 2 0
vd=$(cd /sys/block && ls -d vd* | head -n 1)
check "$vd" none 256 2 1

# 400 direct reads of 4 KiB while iotriage samples: 400 reads of 4 kB in the device's
# rates (iostat's arithmetic on diskstats), whatever the intervals' lengths.
# (dd starts once iotriage's first sample is out: its baseline is read by then, however
# slow the guest is to start it)
$IOT --json -n 100 -d 1 -o >/tmp/n.json 2>/tmp/n.err &
iot=$!; BG_PIDS+=("$iot")
wait_until 60 eval '[ -s /tmp/n.json ]' || fail "iotriage wrote nothing: $(cat /tmp/n.err)"
dd if=/dev/nb1q of=/dev/null bs=4k count=400 iflag=direct 2>/dev/null || fail "dd"
# and ends with the first sample wholly after dd
n=$(($(wc -l </tmp/n.json) + 2))
wait_until 60 eval '[ "$(wc -l </tmp/n.json)" -ge $n ]' || fail "iotriage stopped: $(cat /tmp/n.err)"
kill "$iot"; wait "$iot" 2>/dev/null
sed -i "$((n + 1)),\$d" /tmp/n.json
# (summed over the samples: dd may run across a boundary on a loaded host; each sample's
# figures are whole counts of that interval, nothing else reads nb1q)
# (rates times the interval as JSON rounds both: within half a read; the size exact)
got=$(jq -s -c '[.[] | .interval_s as $i | .devices[] | select(.name == "nb1q" and .r_s > 0)
      | [(.r_s * $i), .rareq_sz]] | [(map(.[0]) | add | round), (map(.[1]) | unique)]' /tmp/n.json)
[ "$got" = '[400,[4]]' ] || fail "400 reads of 4 KiB, in all [reads, [sizes]]: $got; per sample: $(jq -c '.interval_s as $i | .devices[] | select(.name == "nb1q") | [(.r_s * $i), .rareq_sz]' /tmp/n.json | tr '\n' ' ')"
ok "400 reads of 4 KiB on nb1q: [reads, [kB a read]] $got"
