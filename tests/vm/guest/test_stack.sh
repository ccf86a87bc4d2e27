# SPDX-License-Identifier: GPL-2.0-or-later
# Stacked block devices on Debian's kernel, as iotriage reads them: device mapper linear
# and crypt (dm-crypt over dm-linear) over a null_blk disk, and ext4 on an LV (md RAID:
# test_stack_md). They are bio-based: no scheduler of their own (6.1's sysfs shows a
# bare "none" and ignores another; 6.12 has no file), no hardware queues, no nr_requests;
# each layer keeps its own iostat counters. Run on both kernels of the lane: dm-crypt's
# writes carry the writer's priority from 6.9 (test_vm_backports).
. /iot/tests/vm/guest/lib.sh
nullb nb0 submit_queues=1 size=64 memory_backed=1 || fail "null_blk nb0"
sectors=$(cat /sys/block/nb0/size)
dmsetup --noudevsync --noudevrules create iotlin --table "0 $sectors linear /dev/nb0 0" || fail "dm-linear"
CLEANUP+=("dmsetup --noudevsync remove iotlin")
lin=$(dm_dev iotlin)
key=$(printf '%064d' 7)
# the uuid's prefix as cryptsetup gives it (CRYPT-<type>-...): the layer's kind in sysfs
dmsetup --noudevsync --noudevrules create iotcrypt --uuid CRYPT-PLAIN-iotcrypt --table "0 $sectors crypt aes-xts-plain64 $key 0 $(cat "/sys/block/$lin/dev") 0" ||
    fail "dm-crypt over dm-linear"
CLEANUP+=("dmsetup --noudevsync remove iotcrypt")
crypt=$(dm_dev iotcrypt)
[ -b "/dev/$crypt" ] || fail "no /dev/$crypt"
[ "$(ls "/sys/block/$crypt/slaves")" = "$lin" ] && [ "$(ls "/sys/block/$lin/slaves")" = nb0 ] ||
    fail "the stacks in sysfs: $crypt -> $(ls "/sys/block/$crypt/slaves"), $lin -> $(ls "/sys/block/$lin/slaves")"
# 300 direct reads through the whole crypt stack.
dd if="/dev/$crypt" of=/dev/null bs=4k count=300 iflag=direct 2>/dev/null || fail "dd crypt"
$IOT --json -n 1 >/tmp/s.json 2>/tmp/s.err || fail "iotriage: $(cat /tmp/s.err)"
bio_based /tmp/s.json "$lin" "$crypt"
ok "$crypt (crypt) -> $lin (linear) -> nb0: bio-based, no scheduler, no hw queues"
stacks_as_sysfs /tmp/s.json "$lin" "$crypt" nb0
[ "$(jq -c .holders <<<"$(dev_json /tmp/s.json nb0)")" = "[\"$lin\"]" ] &&
    [ "$(jq -c .slaves <<<"$(dev_json /tmp/s.json "$crypt")")" = "[\"$lin\"]" ] ||
    fail "the JSON's stacks: nb0 held by $(jq -c .holders <<<"$(dev_json /tmp/s.json nb0)"), $crypt on $(jq -c .slaves <<<"$(dev_json /tmp/s.json "$crypt")")"
ok "slaves and holders in the JSON as in sysfs: $crypt -> $lin -> nb0"
# Each layer counts its own reads since boot (diskstats), as iostat shows them.
reads_at_least "$crypt" 300
ok "each layer keeps its own counters"

# An idle-class reader on the crypt device is judged where its I/O is served: nb0, under
# each scheduler in turn. Under bfq and mq-deadline its label is read (no ignored
# warning, and no "dm-N uses none"); under none and kyber it is ignored once, on nb0,
# never on a layer above.
# Paced (200 reads a second): an unpaced reader through dm-crypt soft-locks a TCG guest.
reader() { FIO_PRE="ionice -c3" fio_read idle "/dev/$crypt" 60 --ioengine=psync --rate_iops=200; }
scheds="bfq none mq-deadline kyber"
[ "${VM_QUICK:-0}" = 1 ] && scheds="bfq none"     # (the lane's second kernel: init)
for s in $scheds; do
    set_sched nb0 "$s"
    KEEP_READERS=1 sample_during "stack-$s" 1 reader
    # iotriage audit judges the running reader's label where its I/O is served, the same
    # path named: nb0 alone, never a layer
    $IOT audit --json >"/tmp/audit-$s.json" 2>/tmp/audit.err
    readers_stop
    wait
    case $s in bfq|mq-deadline) v=honoured ;; *) v=ignored ;; esac
    # (fio's parent process holds no file of the disk: no devices)
    a=$(jq -c '[.processes[] | select(.comm == "fio" and (.devices | length) > 0) | .devices]' "/tmp/audit-$s.json")
    jq -e --arg p "$crypt -> $lin -> nb0" --arg v "$v" 'length == 1 and (.[0] | length == 1 and
        (.[0] | .device == "nb0" and .path == $p and .verdict == $v))' <<<"$a" >/dev/null ||
        fail "audit under $s: the reader's devices $a (want nb0 via $crypt -> $lin -> nb0, $v): $(head -c 300 /tmp/audit.err)"
    w=$(jq -c '[.processes[] | select(.comm == "fio" and .read_bps > 0) | {devices, w: [.warnings[] | [.code, .device, .text]]}]' "/tmp/stack-$s.json")
    jq -e '.[0].devices == ["nb0"]' <<<"$w" >/dev/null || fail "$s: the reader's devices: $w"
    jq -e 'all(.[].w[]; .[1] == "nb0")' <<<"$w" >/dev/null || fail "$s: a warning names a layer: $w"
    # every priority verdict names the path the reader's I/O takes, from the device it opened
    jq -e --arg p "$crypt -> $lin -> nb0" 'all(.[].w[] | select(.[0] | startswith("ioprio")); .[2] | contains($p))' \
        <<<"$w" >/dev/null ||
        fail "$s: a verdict without the path $crypt -> $lin -> nb0: $w"
    case $s in
    bfq|mq-deadline) jq -e 'all(.[].w[]; .[0] | test("ignored|dropped") | not)' <<<"$w" >/dev/null || fail "$s: $w" ;;
    *) jq -e --arg p "is ignored: $crypt -> $lin -> nb0 uses $s" \
           '[.[].w[] | select(.[0] == "ioprio-ignored" and (.[2] | contains($p)))] | length == 1' <<<"$w" >/dev/null ||
           fail "$s: $w" ;;
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
