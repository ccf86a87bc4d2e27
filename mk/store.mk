# The recorder's storage (src/record/store.c): zstd-compressed hourly files.
# The Makefile reads mk/*.mk before it sets BUILD and before its first rule: give BUILD its
# default here too (same value, ?=) and keep `all` the default goal.
BUILD ?= build
ifeq ($(.DEFAULT_GOAL),)
.DEFAULT_GOAL := all
endif
PKGS    += libzstd
LIBPKGS += libzstd

# tests/helpers/storewriter.c: a tiny writer driven by tests/integration/test_store_faults.sh
# (kill -9 mid-write, full disk). Linked with the storage module and util only.
$(BUILD)/tests/storewriter: tests/helpers/storewriter.c $(BUILD)/src/record/store.o $(BUILD)/src/util.o
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -o $@ $^ $(LDLIBS_ALL)

# The recorder's unit file, installed and never enabled (`make install` should depend on
# install-record-unit). UNITDIR: systemd's system unit directory for locally built software.
UNITDIR ?= /etc/systemd/system
.PHONY: install-record-unit
install-record-unit:
	install -D -m 0644 contrib/systemd/iotriage-record.service $(DESTDIR)$(UNITDIR)/iotriage-record.service

# tests/helpers/recorder.c: record_run() as a program (tests, bench) until main.c has
# `iotriage record`. The Makefile's LIBOBJS is not defined yet when this file is read.
STORE_LIBOBJS := $(patsubst %.c,$(BUILD)/%.o,$(filter-out src/main.c,$(sort $(wildcard src/*.c src/*/*.c))))
$(BUILD)/tests/recorder: tests/helpers/recorder.c $(STORE_LIBOBJS)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -o $@ $^ $(LDLIBS_ALL)
