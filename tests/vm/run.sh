#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The VM lane: boots a Debian kernel under qemu with an initramfs made from this build
# and runs the guest tests (tests/vm/guest/test_*.sh) in it. Nothing on the host changes:
# the guest's disks are files under a scratch directory, its devices, schedulers,
# cgroups and sysctls are its own.
#   tests/vm/run.sh [TEST,...]        default: every guest test
# Environment:
#   KVER        a kernel package or release (default linux-image-cloud-amd64, Debian 12's;
#               backports: bookworm-backports' newest cloud kernel, tests/vm/kernel.sh)
#   VM_ACCEL    kvm or tcg (default: kvm where the CPU exposes vmx/svm and /dev/kvm opens,
#               else tcg; a KVM guest that does not boot is retried under tcg)
#   VM_TIMEOUT  seconds a guest may run in all (default 900)
#   VM_SILENCE  seconds a guest may say nothing on its result port (default 60; a live
#               guest ticks every 10 s, and each test has 300 s of its own in the guest)
#   VM_KEEP     where a failed boot's console and result port are kept (build/vm/last)
#   VM_BIN      the iotriage to put in the guest (default ./iotriage)
#   VM_QEMU     the qemu to run (default qemu-system-x86_64)
#   VM_CPU      the guest's CPU under TCG (default max; max,cx16=off after 6.1, below)
#   VM_QUICK    1: the guest tests that can run their kernel-specific part alone
# A guest that hangs or dies is killed and booted once more with the tests it did not
# finish; a second failure fails the lane with the console's last lines. A lane that
# cannot run (no qemu, no kernel package) fails: it never passes silently.
# Output: a line per guest test (PASS/FAIL/SKIP vm/NAME), then "vm: N passed, N failed,
# N skipped"; exit 0 only when every test passed or skipped with a reason.
set -u
cd "$(dirname "$0")/../.." || exit 2
want=${1:-all}
timeout_s=${VM_TIMEOUT:-900}
silence_s=${VM_SILENCE:-60}
keep=${VM_KEEP:-build/vm/last}
bin=${VM_BIN:-./iotriage}
qemu=${VM_QEMU:-qemu-system-x86_64}
say() { echo "vm: $*"; }

command -v "$qemu" >/dev/null || { say "$qemu is missing (scripts/deps.sh test installs qemu-system-x86)"; exit 1; }
[ -x /bin/busybox ] || { say "busybox is missing (busybox-static)"; exit 1; }
kver=$(tests/vm/kernel.sh "${KVER:-linux-image-cloud-amd64}") || { say "no kernel to boot"; exit 1; }
kdir=build/vm/$kver
work=$(mktemp -d /tmp/iotriage-vm.XXXXXX)
qpid=
cleanup() { [ -n "$qpid" ] && kill -9 "$qpid" 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT
trap 'exit 130' INT TERM
tests/vm/initramfs.sh "$kver" "$work/initrd.cpio" "$bin" || { say "cannot make the initramfs"; exit 1; }

accel=${VM_ACCEL:-}
if [ -z "$accel" ]; then
    if grep -qwE 'vmx|svm' /proc/cpuinfo && [ -w /dev/kvm ]; then accel=kvm; else accel=tcg; fi
fi
case $accel in
kvm) say "booting $kver under KVM" ;;
*)   accel=tcg; say "booting $kver under TCG (software emulation: this machine's CPU exposes no vmx/svm to a guest)" ;;
esac

# The guest's CPU under TCG: all QEMU can emulate, but for kernels after 6.1 without
# cmpxchg16b: QEMU 7.2's TCG double-faults in 6.12's SLUB fast path (kmem_cache_alloc,
# a gs-relative cmpxchg16b: this_cpu_cmpxchg128) within seconds of boot; without cx16
# the kernel takes its locked path. 6.1 keeps the CPU its lane's timings were tuned on.
case $kver in
6.1.*|5.*|4.*) tcg_cpu=max ;;
*) tcg_cpu=max,cx16=off ;;
esac

# boot TESTS: one guest run; its result port in $work/results, console in $work/console.
# Returns 0 when the guest said "done", 1 when it hung (killed) or died before.
boot() {
    local list=$1 start last size lastsize=-1 now
    : >"$work/results"; : >"$work/console"
    # The disks qemu gives the guest: sparse files, made anew each boot.
    truncate -s 0 "$work/nvme.img" "$work/vd.img" 2>/dev/null
    truncate -s 512M "$work/nvme.img"; truncate -s 256M "$work/vd.img"
    local cpu=${VM_CPU:-$tcg_cpu} accel_opt=tcg,thread=single
    # One host thread runs both vCPUs in turn under TCG: with a thread each (MTTCG), the
    # host descheduling one that held a guest spinlock left the other spinning, and the
    # guest soft-locked (2 of 2 full runs beside the host tests, "CPU#0 stuck for 49s").
    [ "$accel" = kvm ] && cpu=host accel_opt=kvm
    # Nice 10, so that the host's own tests beside the lane keep the CPUs they need (the
    # lane waits on its guest's conditions, not the clock); its I/O priority set to the
    # default be/4, so that their screens give it no verdict on the host's disk (a nice
    # 10 task's priority would be be/6).
    ionice -c2 -n4 nice -n 10 "$qemu" -accel "$accel_opt" -cpu "$cpu" -smp 2 -m 2048 \
        -display none -nodefaults -no-reboot \
        -kernel "$kdir/vmlinuz" -initrd "$work/initrd.cpio" \
        -append "console=ttyS0 quiet loglevel=4 panic=-1 rdinit=/init vmtests=$list vmtimeout=300 vmquick=${VM_QUICK:-0}" \
        -serial "file:$work/console" -serial "file:$work/results" \
        -drive "file=$work/nvme.img,if=none,id=nv0,format=raw,cache=unsafe" \
        -device nvme,serial=iotvm-nvme0,drive=nv0 \
        -drive "file=$work/vd.img,if=virtio,format=raw,cache=unsafe" \
        </dev/null >"$work/qemu.out" 2>&1 &
    qpid=$!
    start=$SECONDS last=$SECONDS
    while kill -0 "$qpid" 2>/dev/null; do
        sleep 0.5
        now=$SECONDS
        size=$(stat -c %s "$work/results" 2>/dev/null || echo 0)
        [ "$size" != "$lastsize" ] && { lastsize=$size last=$now; }
        if [ $((now - last)) -ge "$silence_s" ] || [ $((now - start)) -ge "$timeout_s" ]; then
            say "guest killed after $((now - start)) s ($((now - last)) s without a word)"
            kill -9 "$qpid" 2>/dev/null; wait "$qpid" 2>/dev/null; qpid=
            sed -i 's/\r$//' "$work/results"
            return 1
        fi
    done
    wait "$qpid" 2>/dev/null; qpid=
    sed -i 's/\r$//' "$work/results"
    grep -q '^@vm done' "$work/results"
}

all_tests=$(cd tests/vm/guest && ls test_*.sh | sed 's/\.sh$//' | tr '\n' ' ')
[ "$want" = all ] && want=${all_tests// /,} && want=${want%,}

# report LIST TAG: a line per test of LIST that the last boot ended (tests/vm/results.awk
# reads the result port: a torn or hostile line never counts), added to the counts; the
# tests it ended in $ENDED (comma-separated).
pass=0 fail=0 skip=0 failed=() ENDED=
report() {
    local out c
    out=$(LC_ALL=C awk -v want="$1" -v tag="$2" -f tests/vm/results.awk "$work/results")
    printf '%s\n' "$out" | sed '$d'
    read -r _ c[0] c[1] c[2] c[3] c[4] <<<"$(printf '%s\n' "$out" | tail -n 1)"
    pass=$((pass + c[0])) fail=$((fail + c[1])) skip=$((skip + c[2]))
    ENDED=${c[3]#-}
    [ "${c[4]}" = - ] || failed+=(${c[4]//,/ })
}
# rest LIST: the tests of LIST the last boot did not end, comma-separated.
rest() { comm -23 <(tr , '\n' <<<"$1" | sort) <(tr , '\n' <<<"$ENDED" | sort) | paste -sd, -; }

# keep_hang N: a failed boot's console and result port, kept in $keep/hang-N, their
# tails shown.
keep_hang() {
    rm -rf "$keep/hang-$1" && mkdir -p "$keep/hang-$1" &&
        cp "$work/console" "$work/results" "$work/qemu.out" "$keep/hang-$1/"
    tail -n 30 "$work/console" | sed 's/^/      console| /'
    grep -v '^@vm tick$' "$work/results" | tail -n 10 | sed 's/^/      results| /'
    sed 's/^/      qemu| /' "$work/qemu.out"
}

t0=$SECONDS
rm -rf "$keep/hang-1" "$keep/hang-2" "$keep/hang-3"
boot "$want"; rc=$?
if [ $rc -ne 0 ] && [ "$accel" = kvm ] && ! grep -q '^@vm boot' "$work/results"; then
    say "the KVM guest did not boot; again under TCG"; accel=tcg
    boot "$want"; rc=$?
fi
head -n 1 "$work/results" | grep '^@vm boot' | sed 's/^@vm boot /vm: guest up: kernel /; s/ \([0-9]*\)$/, \1 CPUs/'
report "$want" "(boot 1)"
left=$(rest "$want")
# A guest that hung, died, or said done without ending every test asked for: once more,
# for the tests it did not end; a second time fails the lane.
if [ $rc -ne 0 ] || [ -n "$left" ]; then
    say "the guest did not finish (its last lines below; all in $keep/hang-1); booting once more for: ${left:-nothing}"
    keep_hang 1
    if [ -n "$left" ]; then
        boot "$left"; rc=$?
        report "$left" "(boot 2)"
        if [ $rc -ne 0 ] || [ -n "$(rest "$left")" ]; then
            say "the guest failed again (all in $keep/hang-2); not run: $(rest "$left")"
            keep_hang 2
            fail=$((fail + 1)); failed+=("guest-hang")
        fi
    fi
fi
# A test that failed: once more, in a fresh guest. Under TCG a loaded host can slow the
# guest to half its speed (CI rehearsals: 113 against 217 IOPS for the same reader), and
# a premise of a test (a reader keeping a queue full, bfq idling for a reader's next
# request) can miss in one run; a test fails the lane when it fails in both. Both runs'
# lines are printed, and the summary names the tests that passed only on the retry.
retry=() again=()
for t in "${failed[@]}"; do [ "$t" = guest-hang ] && again+=("$t") || retry+=("$t"); done
retried=
if [ ${#retry[@]} -gt 0 ]; then
    list=$(IFS=,; echo "${retry[*]}")
    say "failed in the first guest: $list; once more in a fresh one (a test fails when it fails twice)"
    fail=$((fail - ${#retry[@]})) failed=("${again[@]}")
    boot "$list"; rc=$?
    report "$list" "(retry)"
    if [ $rc -ne 0 ] || [ -n "$(rest "$list")" ]; then
        say "the retry's guest did not finish (all in $keep/hang-3): $(rest "$list")"
        keep_hang 3
        fail=$((fail + 1)); failed+=("retry-hang")
    fi
    for t in "${retry[@]}"; do
        [[ " ${failed[*]} " == *" $t "* ]] || retried=${retried:+$retried, }$t
    done
fi
say "$accel, $((SECONDS - t0)) s; $pass passed, $fail failed, $skip skipped${failed[*]:+ (failed: ${failed[*]})}${retried:+ (passed on the retry: $retried)}"
[ "$fail" -eq 0 ] && [ $((pass + skip)) -gt 0 ]
