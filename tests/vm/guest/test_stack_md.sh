# SPDX-License-Identifier: GPL-2.0-or-later
# md RAID on Debian's kernel, as iotriage reads it: RAID 1, 0, 5 and 6 over null_blk
# disks under each scheduler (device mapper: test_stack). md devices are bio-based: no
# scheduler of their own, no hardware queues; a reader's bios pass md in its own
# context (a share to each disk of a stripe), RAID 5 and 6 writes are submitted by
# raid5d. (The disks keep what is written, memory_backed: md reads back the superblock
# it wrote.)
. /iot/tests/vm/guest/lib.sh
nullb nb1 submit_queues=1 size=64 memory_backed=1 || fail "null_blk nb1"
mdadm --create /dev/md0 --run --quiet --level=1 --raid-devices=2 --metadata=1.2 /dev/nb1 missing >/tmp/md.err 2>&1 ||
    fail "md RAID 1 over nb1: $(cat /tmp/md.err)"
CLEANUP+=("mdadm --stop /dev/md0")
[ "$(ls /sys/block/md0/slaves)" = nb1 ] || fail "the stack in sysfs: md0 -> $(ls /sys/block/md0/slaves)"
# 200 direct reads from the mirror.
dd if=/dev/md0 of=/dev/null bs=4k count=200 iflag=direct 2>/dev/null || fail "dd md0"
$IOT --json -n 1 >/tmp/s.json 2>/tmp/s.err || fail "iotriage: $(cat /tmp/s.err)"
bio_based /tmp/s.json md0
ok "md0 (raid1) -> nb1: bio-based, no scheduler, no hw queues"
stacks_as_sysfs /tmp/s.json md0 nb1
ok "slaves and holders in the JSON as in sysfs: md0 -> nb1"
reads_at_least md0 200
ok "md0 keeps its own counters"

# md RAID 1, its disk under each scheduler in turn: an idle reader of
# md0 is ignored on nb1 under none and kyber, the verdict naming md0 -> nb1, and read
# under bfq and mq-deadline (no ignored or dropped verdict); md0 gets none of its own.
reader() { FIO_PRE="ionice -c3" fio_read idlemd /dev/md0 60 --ioengine=psync --rate_iops=200; }
for s in none kyber bfq mq-deadline; do
    set_sched nb1 "$s"
    sample_during "stack-md-$s" 1 reader
    wait
    case $s in
    none|kyber) judged "stack-md-$s" md0 '["nb1"]' ioprio-ignored nb1 "is ignored: md0 -> nb1 uses $s" ;;
    *) judged "stack-md-$s" md0 '["nb1"]'
       jq -e 'all(.[].w[]; .[0] | test("ignored|dropped") | not)' <<<"$w" >/dev/null || fail "md0 over nb1 under $s: $w" ;;
    esac
    ok "idle reader on md0 over nb1 under $s: $w"
done
lens_once stack-md-none nb1

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

