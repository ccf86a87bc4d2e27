# SPDX-License-Identifier: GPL-2.0-or-later
# Stacked block devices on Debian's kernel, as iotriage reads them: device mapper linear
# and crypt (dm-crypt over dm-linear), md RAID 1 and RAID 0 over null_blk disks. They are
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
# the uuid's prefix as cryptsetup gives it (CRYPT-<type>-...): the layer's kind in sysfs
dmsetup --noudevsync --noudevrules create iotcrypt --uuid CRYPT-PLAIN-iotcrypt --table "0 $sectors crypt aes-xts-plain64 $key 0 $(cat "/sys/block/$lin/dev") 0" ||
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
    # 6.1 accepts the write and does nothing (elv_iosched_store(): no elevator support);
    # newer kernels (6.12, 6.18) have no scheduler file for a bio-based device
    f=/sys/block/$d/queue/scheduler
    if [ -e "$f" ]; then
        echo mq-deadline >"$f" 2>/dev/null
        [ "$(cat "$f")" = none ] || fail "$d took a scheduler: $(cat "$f")"
    fi
done
ok "$crypt (crypt) -> $lin (linear) -> nb0, md0 (raid1) -> nb1: bio-based, no scheduler, no hw queues"
# Each device's stack in the JSON is its slaves/ and holders/ in sysfs, by name (sorted).
for d in "$lin" "$crypt" md0 nb0 nb1; do
    j=$(dev_json /tmp/s.json "$d")
    for l in slaves holders; do
        want=$(ls "/sys/block/$d/$l" | jq -R . | jq -cs 'sort')
        got=$(jq -c ".$l" <<<"$j")
        [ "$got" = "$want" ] || fail "$d: $l $got, sysfs $want"
    done
done
[ "$(jq -c .holders <<<"$(dev_json /tmp/s.json nb0)")" = "[\"$lin\"]" ] &&
    [ "$(jq -c .slaves <<<"$(dev_json /tmp/s.json "$crypt")")" = "[\"$lin\"]" ] ||
    fail "the JSON's stacks: nb0 held by $(jq -c .holders <<<"$(dev_json /tmp/s.json nb0)"), $crypt on $(jq -c .slaves <<<"$(dev_json /tmp/s.json "$crypt")")"
ok "slaves and holders in the JSON as in sysfs: $crypt -> $lin -> nb0, md0 -> nb1"
# Each layer counts its own reads since boot (diskstats), as iostat shows them.
for d in "$crypt:300" "md0:200"; do
    n=$(awk -v d="${d%%:*}" '$3 == d { print $4 }' /proc/diskstats)
    [ "$n" -ge "${d##*:}" ] || fail "${d%%:*}: $n reads in diskstats"
done
ok "each layer keeps its own counters"

# lens_once TAG DISK...: the lens's bytes for the reader at the disks, summed, are its
# read rate (read_bytes, counted once at submission), not once a level of its stack (its
# bios pass dm-1, dm-0 and nb0 in its own context: three times the rate if added up);
# over several disks (a RAID 0, 5 or 6 stripe) each has a share (within half of an even
# one either way), not one of them the whole.
# (RW=write: the writer's, against its write rate)
rw_who() { local v=${RW:-read}; echo "${v%e}er"; }
lens_once() {
    local tag=$1 j=/tmp/$1.json rate=${RW:-read}_bps; shift
    local d=$(printf '%s\n' "$@" | jq -R . | jq -sc .)
    local f=$(jq -c --argjson d "$d" --arg rate "$rate" '[.processes[] | select(.comm == "fio" and .[$rate] > 0)
        | {r: .[$rate], l: [.lens_bytes[$d[]] // 0]}]' "$j")
    jq -e 'length == 1 and (.[0] | (.l | add) as $s | (.l | length) as $n
        | $s > 0.5 * .r and $s < 1.5 * .r and ($n == 1 or all(.l[]; . > 0.5 * $s / $n and . < 1.5 * $s / $n)))' \
        <<<"$f" >/dev/null || fail "$tag: the $(rw_who)'s bytes at $* (lens) against its ${RW:-read} rate: $f"
    ok "$tag: the $(rw_who)'s bytes at $* counted once: $f"
}
# judged TAG MD DISKS [CODE DISK TEXT]...: in sample TAG, the reader of MD lists DISKS (a
# JSON array) as its devices; for each triple, one CODE warning on DISK, its text holding
# TEXT; every warning on one of DISKS, none on MD itself; ioprio-dropped only where a
# triple names it (md passes a reader's bios on in its context, a share to each disk of a
# stripe). RW=write: the writer's. The warnings in $w.
judged() {
    local tag=$1 md=$2 disks=$3 j=/tmp/$1.json rate=${RW:-read}_bps dropped=; shift 3
    w=$(jq -c --arg rate "$rate" '[.processes[] | select(.comm == "fio" and .[$rate] > 0) | {devices, w: [.warnings[] | [.code, .device, .text]]}]' "$j")
    jq -e --argjson d "$disks" 'length == 1 and .[0].devices == $d' <<<"$w" >/dev/null || fail "$tag: the $(rw_who)'s devices: $w"
    while [ $# -ge 3 ]; do
        jq -e --arg c "$1" --arg k "$2" --arg t "$3" '[.[].w[] | select(.[0] == $c and .[1] == $k)] | length == 1 and
            (.[0] | .[2] | contains($t))' <<<"$w" >/dev/null || fail "$tag: want one $1 on $2 ($3): $w"
        [ "$1" = ioprio-dropped ] && dropped="$dropped $2"
        shift 3
    done
    jq -e --argjson d "$disks" 'all(.[].w[]; .[1] as $x | $d | index($x) != null)' <<<"$w" >/dev/null ||
        fail "$tag: a warning names a layer: $w"
    jq -e --arg k "$dropped" 'all(.[].w[]; .[0] != "ioprio-dropped" or ($k | split(" ") | index(.[1]) != null))' \
        <<<"$w" >/dev/null || fail "$tag: a label called dropped: $w"
    [ "$(jq -c --arg m "$md" '[.devices[] | select(.name == $m) | .warnings[]] | length' "$j")" = 0 ] ||
        fail "$tag: $md has warnings of its own: $(jq -c --arg m "$md" '.devices[] | select(.name == $m) | .warnings' "$j")"
}
# An idle-class reader on the crypt device is judged where its I/O is served: nb0. Under
# bfq its label is read (no ignored warning, and no "dm-N uses none"); under none it is
# ignored once, on nb0, never on a layer above.
# Paced (200 reads a second): an unpaced reader through dm-crypt soft-locks a TCG guest.
reader() { FIO_PRE="ionice -c3" fio_read idle "/dev/$crypt" 60 --ioengine=psync --rate_iops=200; }
for s in bfq none; do
    set_sched nb0 "$s"
    sample_during "stack-$s" 1 reader
    wait
    w=$(jq -c '[.processes[] | select(.comm == "fio" and .read_bps > 0) | {devices, w: [.warnings[] | [.code, .device, .text]]}]' "/tmp/stack-$s.json")
    jq -e '.[0].devices == ["nb0"]' <<<"$w" >/dev/null || fail "$s: the reader's devices: $w"
    jq -e 'all(.[].w[]; .[1] == "nb0")' <<<"$w" >/dev/null || fail "$s: a warning names a layer: $w"
    # every priority verdict names the path the reader's I/O takes, from the device it opened
    jq -e --arg p "$crypt -> $lin -> nb0" 'all(.[].w[] | select(.[0] | startswith("ioprio")); .[2] | contains($p))' \
        <<<"$w" >/dev/null ||
        fail "$s: a verdict without the path $crypt -> $lin -> nb0: $w"
    case $s in
    bfq)  jq -e 'all(.[].w[]; .[0] | test("ignored|dropped") | not)' <<<"$w" >/dev/null || fail "bfq: $w" ;;
    none) jq -e --arg p "is ignored: $crypt -> $lin -> nb0 uses none" \
              '[.[].w[] | select(.[0] == "ioprio-ignored" and (.[2] | contains($p)))] | length == 1' <<<"$w" >/dev/null ||
              fail "none: $w" ;;
    esac
    ok "idle reader on $crypt over nb0 under $s: $w"
    lens_once "stack-$s" nb0
    # the layers are saturated as their disk is (their own await is nb0's seen from above)
    sat=$(jq -c --arg c "$crypt" --arg l "$lin" '[.devices[] | select(.name == "nb0" or .name == $l or .name == $c)
        | [.name, .saturated, .saturated_source]]' "/tmp/stack-$s.json")
    jq -e '(map(select(.[0] == "nb0"))[0][1]) as $d | ($d != null) and
        all(.[] | select(.[0] != "nb0"); .[1] == $d and .[2] == "disks")' <<<"$sat" >/dev/null ||
        fail "$s: the layers' saturation is not their disk's: $sat"
done
# What reaches the disk from an idle-class task through dm-crypt, as the lens sees it at
# nb0: its reads keep the class (cloned bios copy it); its writes, encrypted and
# submitted by dm-crypt's own workers, carry none before 6.9 (KERNEL-FACTS 14), and the
# lens still gives them to the writer (attribution at submission, through the stack).
set_sched nb0 bfq
writer() { FIO_PRE="ionice -c3" fio_read wr "/dev/$crypt" 60 --ioengine=psync --rate_iops=200 --rw=randwrite; }
sample_during stack-write 1 writer
lp=$(dev_json /tmp/stack-write.json nb0 | jq -c '.latency_by_prio | map_values(.count)')
lb=$(jq -c '[.processes[] | select(.comm == "fio" and .write_bps > 0) | .lens_bytes.nb0 // 0 | round]' /tmp/stack-write.json)
# from 6.9 the encrypted clone keeps the class: idle at nb0, still sent by dm-crypt's
# threads, whose io_context bfq reads (measured on the backports' 6.12: test_vm_backports)
IFS=. read -r kmaj kmin _ <<<"$(uname -r)"
if [ "$kmaj" -gt 6 ] || { [ "$kmaj" = 6 ] && [ "${kmin%%[!0-9]*}" -ge 9 ]; }; then
    want_w='has("idle") and (has("none") | not)' at_disk=idle
else
    want_w='has("none") and (has("idle") | not)' at_disk=none
fi
jq -e "$want_w" <<<"$lp" >/dev/null || fail "dm-crypt writes at nb0 by priority: $lp (want $want_w, on $(uname -r))"
jq -e 'length == 1 and .[0] > 0' <<<"$lb" >/dev/null || fail "the writer's bytes at nb0 (lens): $lb"
rp=$(dev_json /tmp/stack-bfq.json nb0 | jq -c '.latency_by_prio | map_values(.count)')
jq -e 'has("idle") and (has("none") | not)' <<<"$rp" >/dev/null || fail "the idle reader's reads at nb0 by priority: $rp"
ok "through dm-crypt on $(uname -r): the idle reader's reads reach nb0 as $rp, the idle writer's writes as $lp, given to the writer ($lb B/s)"
# The lens saw the writer's bios carry its label at the crypt device and not below it:
# the verdict names the layer (its kind from dm/uuid, its name) and what nb0 received,
# and no verdict on the label it lost (the reader's, kept at every level, has none).
w=$(jq -c '[.processes[] | select(.comm == "fio" and .write_bps > 0) | [.warnings[] | [.code, .device, .text]]]' /tmp/stack-write.json)
jq -e --arg p "$crypt (crypt, iotcrypt) dropped fio[" --arg n "label on $crypt -> $lin -> nb0: " \
    --arg r "reach nb0 as $at_disk" \
    '[.[][] | select(.[0] == "ioprio-dropped" and .[1] == "nb0" and (.[2] | contains($p) and contains($n) and contains($r)))] | length == 1' \
    <<<"$w" >/dev/null || fail "the writer's label dropped by $crypt: $w"
jq -e 'all(.[][]; .[0] | test("^ioprio-(ignored|level-ignored|honoured|held|lottery|unsaturated)$") | not)' <<<"$w" >/dev/null ||
    fail "a verdict on the label nb0 did not receive: $w"
ok "the idle writer's label dropped by $crypt (crypt): $w"
# The same through md RAID 1: an idle reader of md0 with nb1 under none is ignored on
# nb1, and the verdict names md0 -> nb1; md0 gets none of its own.
reader() { FIO_PRE="ionice -c3" fio_read idlemd /dev/md0 60 --ioengine=psync --rate_iops=200; }
set_sched nb1 none
sample_during stack-md 1 reader
wait
judged stack-md md0 '["nb1"]' ioprio-ignored nb1 "is ignored: md0 -> nb1 uses none"
ok "idle reader on md0 over nb1 under none: $w"
lens_once stack-md nb1

# md RAID 0 over two disks under different schedulers (nb2 bfq, nb3 none): a striped
# idle reader of md1 meets both; its label is read on nb2 and ignored on nb3, and the
# one verdict says so on nb3 alone, naming md1 -> nb3.
nullb nb2 submit_queues=1 size=64 memory_backed=1 || fail "null_blk nb2"
nullb nb3 submit_queues=1 size=64 memory_backed=1 || fail "null_blk nb3"
mdadm --create /dev/md1 --run --quiet --level=0 --chunk=64 --raid-devices=2 --metadata=1.2 /dev/nb2 /dev/nb3 \
    >/tmp/md1.err 2>&1 || fail "md RAID 0 over nb2 nb3: $(cat /tmp/md1.err)"
CLEANUP+=("mdadm --stop /dev/md1")
[ "$(ls /sys/block/md1/slaves | tr '\n' ' ')" = "nb2 nb3 " ] || fail "md1's slaves: $(ls /sys/block/md1/slaves)"
set_sched nb2 bfq
set_sched nb3 none
reader() { FIO_PRE="ionice -c3" fio_read idle0 /dev/md1 60 --ioengine=psync --rate_iops=200; }
sample_during stack-raid0 1 reader
judged stack-raid0 md1 '["nb2","nb3"]' ioprio-ignored nb3 "is ignored: md1 -> nb3 uses none"
# both halves of the stripe served the reader (diskstats of each disk)
for d in nb2 nb3; do
    n=$(dev_json /tmp/stack-raid0.json "$d" | jq '.r_s // 0 | round')
    [ "$n" -gt 0 ] || fail "raid0: $d read nothing in the sample ($n/s)"
done
ok "idle reader on md1 (raid0) over nb2 (bfq) and nb3 (none): ignored on nb3 alone: $w"
lens_once stack-raid0 nb2 nb3

# The same stripe under the two other schedulers (nb2 mq-deadline, nb3 kyber) and a be/7
# reader: mq-deadline reads its class but not its level (ioprio-level-ignored on nb2),
# kyber reads nothing (ioprio-ignored on nb3); each names its path, md1 none of its own.
set_sched nb2 mq-deadline
set_sched nb3 kyber
reader() { FIO_PRE="ionice -c2 -n7" fio_read be7 /dev/md1 60 --ioengine=psync --rate_iops=200; }
sample_during stack-raid0-dk 1 reader
judged stack-raid0-dk md1 '["nb2","nb3"]' \
    ioprio-level-ignored nb2 "md1 -> nb2 uses mq-deadline, which reads the class but not the level, so be/7" \
    ioprio-ignored nb3 "is ignored: md1 -> nb3 uses kyber"
ok "be/7 reader on md1 (raid0) over nb2 (mq-deadline) and nb3 (kyber): level ignored on nb2, ignored on nb3: $w"

# md RAID 5 over three disks under three schedulers (nb5 bfq, nb6 none, nb7 mq-deadline):
# an idle reader's 4 KiB reads go to one disk each, in its own context (a read within a
# chunk: raid5's aligned read); its label is read on nb5 and nb7 and ignored on nb6, the
# one ioprio-ignored says so on nb6, naming md5 -> nb6; md5 gets none of its own, and its
# bytes at the three disks add up to its read rate once. (--assume-clean: no resync.)
for d in nb5 nb6 nb7; do nullb "$d" submit_queues=1 size=32 memory_backed=1 || fail "null_blk $d"; done
mdadm --create /dev/md5 --run --quiet --assume-clean --level=5 --chunk=64 --raid-devices=3 --metadata=1.2 \
    /dev/nb5 /dev/nb6 /dev/nb7 >/tmp/md5.err 2>&1 || fail "md RAID 5 over nb5 nb6 nb7: $(cat /tmp/md5.err)"
CLEANUP+=("mdadm --stop /dev/md5")
[ "$(cat /sys/block/md5/md/level)" = raid5 ] || fail "md5's level: $(cat /sys/block/md5/md/level)"
set_sched nb5 bfq
set_sched nb6 none
set_sched nb7 mq-deadline
reader() { FIO_PRE="ionice -c3" fio_read idle5 /dev/md5 60 --ioengine=psync --rate_iops=200; }
sample_during stack-raid5 1 reader
judged stack-raid5 md5 '["nb5","nb6","nb7"]' ioprio-ignored nb6 "is ignored: md5 -> nb6 uses none"
ok "idle reader on md5 (raid5) over nb5 (bfq), nb6 (none), nb7 (mq-deadline): ignored on nb6 alone: $w"
lens_once stack-raid5 nb5 nb6 nb7
# An idle writer of md5: raid5 computes parity and submits every write to the disks from
# its own thread (raid5d, a kernel thread: the stripe cache), with no priority: under bfq
# (nb5) and mq-deadline (nb7) md5 dropped its label (the disks received `none`), under
# none (nb6) it is ignored as ever; its bytes, seen at md5 alone, a share at each disk.
writer() { FIO_PRE="ionice -c3" fio_read wr5 /dev/md5 60 --ioengine=psync --rate_iops=200 --rw=randwrite; }
RW=write SAMPLES=1 sample_during stack-raid5w 1 writer
lp=$(for d in nb5 nb6 nb7; do dev_json /tmp/stack-raid5w.json "$d" | jq -c '.latency_by_prio | map_values(.count)'; done | jq -sc .)
jq -e 'length == 3 and all(.[]; has("none") and (has("idle") | not))' <<<"$lp" >/dev/null ||
    fail "raid5 write: the disks' requests by priority: $lp (want none, no idle: raid5d's)"
RW=write judged stack-raid5w md5 '["nb5","nb6","nb7"]' \
    ioprio-dropped nb5 "md5 (raid5) dropped fio[" \
    ioprio-ignored nb6 "is ignored: md5 -> nb6 uses none" \
    ioprio-dropped nb7 "reach nb7 as none, which mq-deadline serves as best-effort"
ok "idle writer on md5 (raid5): the disks' requests $lp; dropped on nb5 and nb7, ignored on nb6: $w"
RW=write lens_once stack-raid5w nb5 nb6 nb7

# md RAID 6 over four disks under the four schedulers (nb8 bfq, nb9 none, nb10
# mq-deadline, nb11 kyber): an idle reader's label read on nb8 and nb10, ignored on nb9
# and nb11; an idle writer's dropped by md6 on nb8 and nb10 (raid6 writes: raid5d again).
for d in nb8 nb9 nb10 nb11; do nullb "$d" submit_queues=1 size=32 memory_backed=1 || fail "null_blk $d"; done
mdadm --create /dev/md6 --run --quiet --assume-clean --level=6 --chunk=64 --raid-devices=4 --metadata=1.2 \
    /dev/nb8 /dev/nb9 /dev/nb10 /dev/nb11 >/tmp/md6.err 2>&1 || fail "md RAID 6 over nb8..nb11: $(cat /tmp/md6.err)"
CLEANUP+=("mdadm --stop /dev/md6")
[ "$(cat /sys/block/md6/md/level)" = raid6 ] || fail "md6's level: $(cat /sys/block/md6/md/level)"
set_sched nb8 bfq
set_sched nb9 none
set_sched nb10 mq-deadline
set_sched nb11 kyber
reader() { FIO_PRE="ionice -c3" fio_read idle6 /dev/md6 60 --ioengine=psync --rate_iops=200; }
sample_during stack-raid6 1 reader
judged stack-raid6 md6 '["nb8","nb9","nb10","nb11"]' \
    ioprio-ignored nb9 "is ignored: md6 -> nb9 uses none" \
    ioprio-ignored nb11 "is ignored: md6 -> nb11 uses kyber"
ok "idle reader on md6 (raid6) over nb8 (bfq), nb9 (none), nb10 (mq-deadline), nb11 (kyber): ignored on nb9 and nb11: $w"
lens_once stack-raid6 nb8 nb9 nb10 nb11
writer() { FIO_PRE="ionice -c3" fio_read wr6 /dev/md6 60 --ioengine=psync --rate_iops=200 --rw=randwrite; }
RW=write sample_during stack-raid6w 1 writer
RW=write judged stack-raid6w md6 '["nb8","nb9","nb10","nb11"]' \
    ioprio-dropped nb8 "md6 (raid6) dropped fio[" \
    ioprio-ignored nb9 "is ignored: md6 -> nb9 uses none" \
    ioprio-dropped nb10 "reach nb10 as none, which mq-deadline serves as best-effort" \
    ioprio-ignored nb11 "is ignored: md6 -> nb11 uses kyber"
ok "idle writer on md6 (raid6): dropped on nb8 and nb10, ignored on nb9 and nb11: $w"
RW=write lens_once stack-raid6w nb8 nb9 nb10 nb11

# A filesystem on an LV (ext4 on dm-linear over nb4, bfq) and an idle-class writer through
# the page cache: its file's device is the disk below the layer, the flusher writes its
# pages back there at be/4 (ioprio-writeback on nb4, naming the path), and the lens gives
# that writeback to the writer at the disk (writeback_by). Writeback every second, so
# that it falls in the samples.
nullb nb4 submit_queues=1 size=128 memory_backed=1 || fail "null_blk nb4"
dmsetup --noudevsync --noudevrules create iotlv --table "0 $(cat /sys/block/nb4/size) linear /dev/nb4 0" ||
    fail "dm-linear over nb4"
CLEANUP+=("dmsetup --noudevsync remove iotlv")
lv=$(dm_dev iotlv)
mke2fs -q "/dev/$lv" >/dev/null 2>&1 || fail "mke2fs /dev/$lv"
mkdir -p /mnt/lv && mount -t ext4 "/dev/$lv" /mnt/lv || fail "mount /dev/$lv"
CLEANUP+=("umount /mnt/lv")
set_sched nb4 bfq
echo 100 >/proc/sys/vm/dirty_writeback_centisecs
echo 100 >/proc/sys/vm/dirty_expire_centisecs
writer() { FIO_PRE="ionice -c3" fio_read wb /mnt/lv/f 60 --rw=write --direct=0 --bs=64k --size=32m --rate=2m; }
SAMPLES=3 sample_during stack-wb 1 writer
w=$(jq -c '[.processes[] | select(.comm == "fio" and .write_bps > 0) | {devices, w: [.warnings[] | [.code, .device, .text]]}]' /tmp/stack-wb.json)
jq -e 'length == 1 and .[0].devices == ["nb4"]' <<<"$w" >/dev/null || fail "wb: the writer's devices: $w"
jq -s -e --arg p "writes through the page cache to $lv -> nb4" '[.[].processes[] | select(.comm == "fio")
    | .warnings[] | select(.code == "ioprio-writeback" and .device == "nb4" and (.text | contains($p)))] | length > 0' \
    /tmp/stack-wb.more >/dev/null ||
    fail "wb: no ioprio-writeback on nb4 through $lv: $(jq -c '[.processes[] | select(.comm == "fio") | .warnings[] | [.code, .device]]' /tmp/stack-wb.more | tr '\n' ' ')"
wb=$(jq -c '[.devices[] | select(.name == "nb4") | .writeback_by[]? | select(.comm == "fio") | .bps | round]' /tmp/stack-wb.more | tr '\n' ' ')
[[ $wb == *[1-9]* ]] || fail "wb: no writeback given to the writer at nb4: $wb; all: $(jq -c '.devices[] | select(.name == "nb4") | .writeback_by' /tmp/stack-wb.more | tr '\n' ' ')"
ok "an idle writer on ext4 on $lv (linear) over nb4: devices [nb4], ioprio-writeback naming $lv -> nb4, its writeback at nb4 $wb B/s"
