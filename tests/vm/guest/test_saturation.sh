# SPDX-License-Identifier: GPL-2.0-or-later
# Saturation, roles and queues on a real driver under Debian's kernel: the SCSI disk
# (scsi_debug, 4 commands at once, a jiffy each). A light synchronous reader alone
# saturates nothing and has no role; a 32-deep reader joining saturates the disk (judged
# by the lens from where requests wait), and the light one suffers while the heavy one
# causes it. Under none, 16 synchronous readers wait for the 4 tags before their requests
# exist: a hidden queue the device's own statistics cannot show, measured by the lens.
. /iot/tests/vm/guest/lib.sh
scsi_debug dev_size_mb=64 max_queue=4 delay=1 || fail "scsi_debug did not make a disk"
D=/dev/$SD
set_sched "$SD" mq-deadline
echo 64 >"/sys/block/$SD/queue/nr_requests"
role() { jq -r --arg j "$2" '[.processes[] | select(.comm == "fio" and .read_bps > 0 and (.cmdline | contains("--name=" + $j)))][0].role' "$1"; }
sat() { dev_json "$1" "$SD" | jq -c '[.saturated, .saturated_source]'; }

light() { fio_read light "$D" 60 --ioengine=psync --rate_iops=50; }
sample_during alone 1 light
wait
[ "$(role /tmp/alone.json light)" = null ] || fail "a light reader alone: role $(role /tmp/alone.json light)"
[ "$(sat /tmp/alone.json)" = '[false,"lens"]' ] || fail "a light reader alone: saturated $(sat /tmp/alone.json)"
ok "a light reader alone: not saturated (lens), no role"

both() {
    fio_read light "$D" 60 --ioengine=psync
    fio_read heavy "$D" 60 --ioengine=libaio --iodepth=32
}
sample_during both 2 both
wait
[ "$(sat /tmp/both.json)" = '[true,"lens"]' ] || fail "with a 32-deep reader: saturated $(sat /tmp/both.json); $(dev_json /tmp/both.json "$SD" | jq -c '[.aqu_sz, .r_await, .stages.tag_ms, .stages.sched_ms, .stages.device_ms]')"
l=$(role /tmp/both.json light) h=$(role /tmp/both.json heavy)
[ "$l" = suffer ] || fail "the light reader beside the heavy one: role $l"
case $h in cause|both) ;; *) fail "the heavy reader: role $h" ;; esac
ok "with a 32-deep reader: saturated (lens); light $l, heavy $h"

# The hidden queue: under none, nr_requests is the 4 tags; 16 synchronous readers.
set_sched "$SD" none
many() { fio_read many "$D" 60 --ioengine=psync --numjobs=16 --group_reporting; }
sample_during hidden 16 many
wait
hq=$(dev_json /tmp/hidden.json "$SD" | jq -c '[.warnings[] | select(.code == "hidden-queue") | .evidence]')
[ "$hq" = '["measured"]' ] || fail "16 readers, 4 tags: hidden-queue $hq; stages $(dev_json /tmp/hidden.json "$SD" | jq -c '.stages | {tag_ms, device_ms, requests}')"
ok "16 readers on 4 tags: hidden-queue, measured ($(dev_json /tmp/hidden.json "$SD" | jq -c '.stages | {tag_ms, device_ms}'))"
