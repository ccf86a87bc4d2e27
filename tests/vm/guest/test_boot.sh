# SPDX-License-Identifier: GPL-2.0-or-later
# The guest is the machine the lane promises: Debian's kernel, cgroup v2 alone with the io
# controller, the drivers' modules, and iotriage running with its BPF lens on it (the
# light loader: 6.1 runs the lens's loader program itself).
. /iot/tests/vm/guest/lib.sh
uname -r | grep -q '^6\.' || fail "kernel $(uname -r)"
grep -qw io /sys/fs/cgroup/cgroup.controllers || fail "no io controller in v2: $(cat /sys/fs/cgroup/cgroup.controllers)"
[ -d /sys/kernel/config/nullb ] || fail "null_blk's configfs is missing"
ls /sys/block | grep -q '^nvme' || fail "no NVMe disk: $(ls /sys/block)"
ls /sys/block | grep -q '^vd' || fail "no virtio disk: $(ls /sys/block)"
$IOT --json -n 2 -d 0.5 >/tmp/boot.json 2>/tmp/boot.err || fail "iotriage --json: $(cat /tmp/boot.err)"
lens=$(tail -n 1 /tmp/boot.json | jq -c .lens)
[ "$lens" = '{"on":true,"reason":null,"loader":"light"}' ] || fail "the lens: $lens $(cat /tmp/boot.err)"
ok "$(uname -r), lens $lens, $(tail -n 1 /tmp/boot.json | jq '.devices | length') devices"
