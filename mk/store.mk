# SPDX-License-Identifier: GPL-2.0-or-later
# The recorder's storage (src/store/store*.c): zstd-compressed hourly files.
PKGS    += libzstd
# linked no more: store.c loads it with dlopen when a store is opened

# tests/helpers/storewriter.c: a tiny writer driven by tests/integration/test_store_faults.sh
# (kill -9 mid-write, full disk). Linked with the storage module and util only.
$(BUILD)/tests/storewriter: tests/helpers/storewriter.c $(BUILD)/src/store/store.o $(BUILD)/src/store/store_write.o $(BUILD)/src/store/store_read.o $(BUILD)/src/util/util.o
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -o $@ $^ $(LDLIBS_ALL)

# tests/helpers/recorder.c: record_run() as a program of its own (tests, bench).
$(BUILD)/tests/recorder: tests/helpers/recorder.c $(LIBOBJS)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -o $@ $^ $(LDLIBS_ALL)

CHECK_HELPERS += $(BUILD)/tests/storewriter $(BUILD)/tests/recorder
