# SPDX-License-Identifier: GPL-2.0-or-later
# The fault-injection library for tests (tests/fault/fault.c): an LD_PRELOAD object that
# makes chosen reads, opens, writes and netlink calls fail (docs/reliability.md). Built
# for tests only; never linked into iotriage.
FAULT_SO := $(BUILD)/tests/fault.so

$(FAULT_SO): tests/fault/fault.c mk/fault.mk
	@mkdir -p $(dir $@)
	$(CC) -std=c11 -D_GNU_SOURCE $(WARN) $(CFLAGS) -fPIC -shared -o $@ $< -ldl -lpthread

.PHONY: fault
fault: $(FAULT_SO)

CHECK_HELPERS += $(FAULT_SO)
