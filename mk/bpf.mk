# SPDX-License-Identifier: GPL-2.0-or-later
# The BPF lens (src/bpf/kern/: one level below src/*/ so that the Makefile's glob of host
# sources does not pick it up): one object per concern, waits.bpf.c (read by
# src/source/lens_waits.c), requests.bpf.c and requests_tables.bpf.c (lens_requests.c),
# writeback.bpf.c (lens_writeback.c), sharing src/bpf/kern/lens.bpf.h. clang compiles each
# into a BPF object, bpftool links them (gen object: BPF static linking, the maps and
# globals several use defined once and declared extern in the others) into one object,
# iotriage.bpf.o, and turns that into a skeleton header (the object embedded) under
# $(BUILD)/bpf, never committed: one object loaded and one skeleton, as before the
# split. The object carries CO-RE relocations against declarations of its own, so
# building needs no kernel BTF and it runs on other kernels.
PKGS    += libbpf
LIBPKGS += libbpf

BPF_CLANG   ?= clang
BPFTOOL     ?= bpftool
BPF_ARCH    := $(shell uname -m | sed -e 's/x86_64/x86/' -e 's/aarch64/arm64/' -e 's/ppc64le/powerpc/' -e 's/s390x/s390/')
# -ffile-prefix-map: the objects' BTF and DWARF name the source as ./src/bpf/kern/...,
# not by the build directory's absolute path, so the binary that embeds them does not
# depend on where it was built (the Debian package is reproducible, test_deb.sh).
BPF_CFLAGS  := -target bpf -g -O2 -mcpu=v3 -D__TARGET_ARCH_$(BPF_ARCH) -Wall -Werror -Iinclude \
               -ffile-prefix-map=$(CURDIR)=. $(shell pkg-config --cflags libbpf 2>/dev/null)
BPF_SKEL    := $(BUILD)/bpf/iotriage.skel.h

# Linked in this order: a file defining a map others declare extern comes before them
# (Debian 12's bpftool 7.1, libbpf 1.1, gives a map declared extern before its definition
# the wrong offset in the .maps section's BTF, and the skeleton then fails to load it).
LENS_BPF    := waits requests_tables writeback requests
LENS_BPF_H  := src/bpf/kern/lens.bpf.h include/bpf/waits.h include/bpf/requests.h include/bpf/writeback.h \
               include/bpf/kern_types.h mk/bpf.mk

$(BUILD)/bpf/lens/%.bpf.o: src/bpf/kern/%.bpf.c $(LENS_BPF_H)
	@mkdir -p $(dir $@)
	$(BPF_CLANG) $(BPF_CFLAGS) -c -o $@ $<

$(BUILD)/bpf/iotriage.bpf.o: $(LENS_BPF:%=$(BUILD)/bpf/lens/%.bpf.o)
	$(BPFTOOL) gen object $@ $^

$(BPF_SKEL): $(BUILD)/bpf/iotriage.bpf.o
	$(BPFTOOL) gen skeleton $< name iotriage_bpf > $@.tmp && mv $@.tmp $@

# The light skeleton of each object (bpftool gen skeleton -L; runtime in libbpf's
# skel_internal.h): a loader program the kernel runs, which does the CO-RE relocations
# and BTF lookups itself, so that user space never parses /sys/kernel/btf/vmlinux.
# source/lens.c and source/taskiter.c load through it first and fall back to the normal
# skeleton above when the kernel refuses it.
BPF_LSKEL   := $(BUILD)/bpf/iotriage.lskel.h

$(BPF_LSKEL): $(BUILD)/bpf/iotriage.bpf.o
	$(BPFTOOL) gen skeleton -L $< name iotriage_lskel > $@.tmp && mv $@.tmp $@

# The task source (src/bpf/kern/taskiter.bpf.c, read by src/source/taskiter.c): a second,
# small object, so that it loads before the first sample while the lens loads apart.
# (Its skeletons keep the names tasks_bpf and tasks_lskel, the open-files pass's below
# files_bpf and files_lskel: tasks.skel.h, files.skel.h and their light ones.)
TASKS_SKEL  := $(BUILD)/bpf/tasks.skel.h

$(BUILD)/bpf/taskiter.bpf.o: src/bpf/kern/taskiter.bpf.c include/bpf/taskiter.h include/bpf/kern_types.h mk/bpf.mk
	@mkdir -p $(dir $@)
	$(BPF_CLANG) $(BPF_CFLAGS) -c -o $@ $<

$(TASKS_SKEL): $(BUILD)/bpf/taskiter.bpf.o
	$(BPFTOOL) gen skeleton $< name tasks_bpf > $@.tmp && mv $@.tmp $@

TASKS_LSKEL := $(BUILD)/bpf/tasks.lskel.h

$(TASKS_LSKEL): $(BUILD)/bpf/taskiter.bpf.o
	$(BPFTOOL) gen skeleton -L $< name tasks_lskel > $@.tmp && mv $@.tmp $@

# The open-files pass (src/bpf/kern/taskiter_files.bpf.c, read by src/source/taskiter.c):
# a third object, loaded when a refresh first asks for every process's open files, not before
# the first frame as the task iterator is.
FILES_SKEL  := $(BUILD)/bpf/files.skel.h
FILES_LSKEL := $(BUILD)/bpf/files.lskel.h

$(BUILD)/bpf/taskiter_files.bpf.o: src/bpf/kern/taskiter_files.bpf.c include/bpf/taskiter.h include/bpf/kern_types.h mk/bpf.mk
	@mkdir -p $(dir $@)
	$(BPF_CLANG) $(BPF_CFLAGS) -c -o $@ $<

$(FILES_SKEL): $(BUILD)/bpf/taskiter_files.bpf.o
	$(BPFTOOL) gen skeleton $< name files_bpf > $@.tmp && mv $@.tmp $@

$(FILES_LSKEL): $(BUILD)/bpf/taskiter_files.bpf.o
	$(BPFTOOL) gen skeleton -L $< name files_lskel > $@.tmp && mv $@.tmp $@

# Each object again, reading kernel structures through untrusted pointers (kern_types.h:
# UNTRUSTED; bpf_rdonly_cast, kernel 6.2+), which the kernel verifies several times
# faster: light skeletons under the plain ones' names in $(BUILD)/bpf/cast, which
# src/source/bpfcast.c alone includes. Tried first; the plain ones where the kernel
# lacks the kfunc.
$(BUILD)/bpf/cast/%.bpf.o: src/bpf/kern/%.bpf.c include/bpf/taskiter.h include/bpf/kern_types.h mk/bpf.mk
	@mkdir -p $(dir $@)
	$(BPF_CLANG) $(BPF_CFLAGS) -DBPF_UNTRUSTED_READS=1 -c -o $@ $<

$(BUILD)/bpf/cast/lens/%.bpf.o: src/bpf/kern/%.bpf.c $(LENS_BPF_H)
	@mkdir -p $(dir $@)
	$(BPF_CLANG) $(BPF_CFLAGS) -DBPF_UNTRUSTED_READS=1 -c -o $@ $<

$(BUILD)/bpf/cast/iotriage.bpf.o: $(LENS_BPF:%=$(BUILD)/bpf/cast/lens/%.bpf.o)
	$(BPFTOOL) gen object $@ $^

$(BUILD)/bpf/cast/tasks.lskel.h: $(BUILD)/bpf/cast/taskiter.bpf.o
	$(BPFTOOL) gen skeleton -L $< name tasks_lskel > $@.tmp && mv $@.tmp $@

$(BUILD)/bpf/cast/iotriage.lskel.h: $(BUILD)/bpf/cast/iotriage.bpf.o
	$(BPFTOOL) gen skeleton -L $< name iotriage_lskel > $@.tmp && mv $@.tmp $@

$(BUILD)/bpf/cast/files.lskel.h: $(BUILD)/bpf/cast/taskiter_files.bpf.o
	$(BPFTOOL) gen skeleton -L $< name files_lskel > $@.tmp && mv $@.tmp $@

$(BUILD)/src/source/bpfcast.o: $(BUILD)/bpf/cast/tasks.lskel.h $(BUILD)/bpf/cast/iotriage.lskel.h \
                               $(BUILD)/bpf/cast/files.lskel.h
$(BUILD)/src/source/bpfcast.o: ALL_CFLAGS += -isystem $(BUILD)/bpf/cast

$(BUILD)/src/source/taskiter.o: $(TASKS_SKEL) $(TASKS_LSKEL) $(FILES_SKEL) $(FILES_LSKEL)
$(BUILD)/src/source/taskiter.o: ALL_CFLAGS += -isystem $(BUILD)/bpf

# tests/integration/test_taskiter.sh's helper: the iterator's records next to /proc's.
CHECK_HELPERS += $(BUILD)/tests/taskiter_dump
$(BUILD)/tests/taskiter_dump: tests/helpers/taskiter_dump.c $(LIBOBJS)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -o $@ $< $(LIBOBJS) $(LDLIBS_ALL)

# lens.c includes the skeletons, lens_duty.c the normal one (for its .bss layout): build
# them first, and find them.
$(BUILD)/src/source/lens.o: $(BPF_SKEL) $(BPF_LSKEL)
$(BUILD)/src/source/lens_duty.o: $(BPF_SKEL)
# -isystem: the generated skeleton is not held to our warnings (it casts const away).
$(BUILD)/src/source/lens.o $(BUILD)/src/source/lens_duty.o: ALL_CFLAGS += -isystem $(BUILD)/bpf

# bench/lens.sh's helper that turns BPF run-time statistics on while it lives.
$(BUILD)/bench/bpfstats: bench/bpfstats.c
	@mkdir -p $(dir $@)
	$(CC) -std=c11 -D_GNU_SOURCE $(WARN) $(CFLAGS) -o $@ $< $(shell pkg-config --libs libbpf)
# bench/lens.sh also measures on the lab disk (tests/lab/lab.sh), which needs slowfs.
bench-lens: $(BUILD)/tests/slowfs

# What the verifier spends on each lens program at load (bench/bpfverify.c; docs/
# performance.md, "The lens's load: verification"): `make bench-verify` prints it and
# keeps it in $BENCH_OUT/bpfverify.txt; bench-lens runs it first. The read-only globals
# are set as the loader sets them (source/lens.c), since code they switch off is dead to
# the verifier.
BPFVERIFY_SETS := lens_submits=1 lens_wb_split=1
$(BUILD)/bench/bpfverify: bench/bpfverify.c
	@mkdir -p $(dir $@)
	$(CC) -std=c11 -D_GNU_SOURCE $(WARN) $(CFLAGS) -o $@ $< $(shell pkg-config --libs libbpf)
CHECK_HELPERS += $(BUILD)/bench/bpfverify

.PHONY: bench-verify
bench-verify: $(BUILD)/bench/bpfverify $(BUILD)/bpf/iotriage.bpf.o
	@out=$${BENCH_OUT:-$(BUILD)/bench/results}; mkdir -p "$$out" && \
	$(BUILD)/bench/bpfverify $(BUILD)/bpf/iotriage.bpf.o $(BPFVERIFY_SETS) | tee "$$out/bpfverify.txt"
bench-lens: bench-verify

# What an attached program that returns at once costs, against attaching and detaching
# (bench/tpcost.c; docs/performance.md "Issue #40"): `build/bench/tpcost`, root.
$(BUILD)/bpf/tpcost.bpf.o: bench/bpf/tpcost.bpf.c include/bpf/kern_types.h mk/bpf.mk
	@mkdir -p $(dir $@)
	$(BPF_CLANG) $(BPF_CFLAGS) -c -o $@ $<

$(BUILD)/bpf/tpcost.skel.h: $(BUILD)/bpf/tpcost.bpf.o
	$(BPFTOOL) gen skeleton $< name tpcost_bpf > $@.tmp && mv $@.tmp $@

$(BUILD)/bench/tpcost: bench/tpcost.c $(BUILD)/bpf/tpcost.skel.h
	@mkdir -p $(dir $@)
	$(CC) -std=c11 -D_GNU_SOURCE $(WARN) $(CFLAGS) -isystem $(BUILD)/bpf -o $@ $< $(shell pkg-config --libs libbpf)
# bench/lens.sh prints it last.
bench-lens: $(BUILD)/bench/tpcost
