# Stacked block devices on Debian's kernel, as iotriage reads them: device mapper linear
# and crypt (dm-crypt over dm-linear) and md RAID 1 over null_blk disks. They are
# bio-based: no scheduler of their own (6.1's sysfs shows a bare "none" and ignores
# another), no hardware queues, no nr_requests; each layer keeps its own iostat
# counters. (The disks keep what is written, memory_backed: md reads back the superblock
# it wrote.)
. /iot/tests/vm/guest/lib.sh
nullb nb0 submit_queues=1 size=64 memory_backed=1 || fail "null_blk nb0"
nullb nb1 submit_queues=1 size=64 memory_backed=1 || fail "null_blk nb1"
sectors=$(cat /sys/block/nb0/size)
dmsetup --noudevsync --noudevrules create iotlin --table "0 $sectors linear /dev/nb0 0" || fail "dm-linear"
CLEANUP+=("dmsetup --noudevsync remove iotlin")
# dm_dev NAME: the dm-N block device of the mapped device NAME (its /dev/mapper node may be
# missing: no udev here).
dm_dev() { grep -lx "$1" /sys/block/dm-*/dm/name | cut -d/ -f4; }
lin=$(dm_dev iotlin)
key=$(printf '%064d' 7)
dmsetup --noudevsync --noudevrules create iotcrypt --table "0 $sectors crypt aes-xts-plain64 $key 0 $(cat "/sys/block/$lin/dev") 0" ||
    fail "dm-crypt over dm-linear"
CLEANUP+=("dmsetup --noudevsync remove iotcrypt")
crypt=$(dm_dev iotcrypt)
[ -b "/dev/$crypt" ] || fail "no /dev/$crypt"
mdadm --create /dev/md0 --run --quiet --level=1 --raid-devices=2 --metadata=1.2 /dev/nb1 missing >/tmp/md.err 2>&1 ||
    fail "md RAID 1 over nb1: $(cat /tmp/md.err)"
CLEANUP+=("mdadm --stop /dev/md0")
[ "$(ls "/sys/block/$crypt/slaves")" = "$lin" ] && [ "$(ls "/sys/block/$lin/slaves")" = nb0 ] &&
    [ "$(ls /sys/block/md0/slaves)" = nb1 ] ||
    fail "the stacks in sysfs: $crypt -> $(ls "/sys/block/$crypt/slaves"), $lin -> $(ls "/sys/block/$lin/slaves"), md0 -> $(ls /sys/block/md0/slaves)"
# 300 direct reads through the whole crypt stack, and 200 from the mirror.
dd if="/dev/$crypt" of=/dev/null bs=4k count=300 iflag=direct 2>/dev/null || fail "dd crypt"
dd if=/dev/md0 of=/dev/null bs=4k count=200 iflag=direct 2>/dev/null || fail "dd md0"
$IOT --json -n 1 >/tmp/s.json 2>/tmp/s.err || fail "iotriage: $(cat /tmp/s.err)"
for d in "$lin" "$crypt" md0; do
    j=$(dev_json /tmp/s.json "$d")
    [ -n "$j" ] || fail "$d is not listed"
    [ "$(jq -c '[.scheduler, .hw_queues, .nr_requests]' <<<"$j")" = '[null,0,null]' ] ||
        fail "$d (bio-based): $(jq -c '[.scheduler, .hw_queues, .nr_requests]' <<<"$j"); sysfs: $(cat "/sys/block/$d/queue/scheduler")"
    # 6.1 accepts the write and does nothing (elv_iosched_store(): no elevator support)
    echo mq-deadline >"/sys/block/$d/queue/scheduler" 2>/dev/null
    [ "$(cat "/sys/block/$d/queue/scheduler")" = none ] || fail "$d took a scheduler: $(cat "/sys/block/$d/queue/scheduler")"
done
ok "$crypt (crypt) -> $lin (linear) -> nb0, md0 (raid1) -> nb1: bio-based, no scheduler, no hw queues"
# Each layer counts its own reads since boot (diskstats), as iostat shows them.
for d in "$crypt:300" "md0:200"; do
    n=$(awk -v d="${d%%:*}" '$3 == d { print $4 }' /proc/diskstats)
    [ "$n" -ge "${d##*:}" ] || fail "${d%%:*}: $n reads in diskstats"
done
ok "each layer keeps its own counters"

# An idle-class reader on the crypt device is judged where its I/O is served: nb0. Under
# bfq its label is read (no ignored warning, and no "dm-N uses none"); under none it is
# ignored once, on nb0, never on a layer above.
# Paced (200 reads a second): an unpaced reader through dm-crypt soft-locks a TCG guest.
reader() { FIO_PRE="ionice -c3" fio_read idle "/dev/$crypt" 5 --ioengine=psync --rate_iops=200; }
for s in bfq none; do
    set_sched nb0 "$s"
    sample_during "stack-$s" 1 reader
    wait
    w=$(jq -c '[.processes[] | select(.comm == "fio" and .read_bps > 0) | {devices, w: [.warnings[] | [.code, .device]]}]' "/tmp/stack-$s.json")
    jq -e '.[0].devices == ["nb0"]' <<<"$w" >/dev/null || fail "$s: the reader's devices: $w"
    jq -e 'all(.[].w[]; .[1] == "nb0")' <<<"$w" >/dev/null || fail "$s: a warning names a layer: $w"
    case $s in
    bfq)  jq -e 'all(.[].w[]; .[0] | test("ignored") | not)' <<<"$w" >/dev/null || fail "bfq: $w" ;;
    none) jq -e '[.[].w[] | select(.[0] == "ioprio-ignored")] | length == 1' <<<"$w" >/dev/null || fail "none: $w" ;;
    esac
    ok "idle reader on $crypt over nb0 under $s: $w"
done
