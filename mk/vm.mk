# SPDX-License-Identifier: GPL-2.0-or-later
# The VM lane (tests/vm/, docs/vm.md): Debian 12's own kernel under qemu, with an
# initramfs made from this build. `make check` runs it (tests/integration/test_vm.sh, in
# the background lane of tests/run.sh); `make check-vm` runs it alone. KVER names another
# Debian kernel package (linux-image-cloud-amd64 by default) or a kernel release.
.PHONY: check-vm
VM_NEEDS := iotriage $(BUILD)/tests/taskhelper $(BUILD)/tests/slowfs $(BUILD)/tests/loopctl

check-vm: deps-test
	$(MAKE) -j$(NPROC) $(VM_NEEDS)
	KVER="$(KVER)" tests/vm/run.sh

# The lane's reader of a guest's result port, fuzzed at length (test_vm_protocol runs 300
# mutations in make check).
.PHONY: fuzz-vm-protocol
fuzz: fuzz-vm-protocol
fuzz-vm-protocol:
	python3 tests/vm/protocol_fuzz.py 20000 "$$(date +%s)"
