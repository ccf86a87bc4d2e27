# SPDX-License-Identifier: GPL-2.0-or-later
# iotriage: see README.md. `make` builds ./iotriage; `sudo make run` installs what is
# missing, builds and starts it; `sudo make check` installs, builds and runs every test.

CC      ?= cc
PKGS    := ncursesw libproc2 libnl-3.0 libnl-genl-3.0
# libproc2 is not linked: source/procinfo.c loads it when the process view opens.
LIBPKGS := ncursesw libnl-3.0 libnl-genl-3.0
OPT     ?= -O2
WARN    := -Wall -Wextra -Werror -Wshadow -Wformat=2 \
           -Wpointer-arith -Wstrict-prototypes -Wmissing-prototypes \
           -Wcast-qual -Wwrite-strings -Wvla -Wundef -Wnull-dereference \
           -Wdouble-promotion -Wimplicit-fallthrough
# clang warns about gcc-only warning names unless told not to.
ifneq ($(findstring clang,$(shell $(CC) --version 2>/dev/null)),)
WARN    += -Wno-unknown-warning-option
endif
PKG_CFLAGS = $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
# The libraries every run needs (ncursesw, libnl, libbpf with libelf and zlib) are linked
# from their static archives (Debian's -dev packages ship them): a shared object costs
# every run its own mappings, relocations and fault-around pages, about 0.5 MB resident
# and 1.5 ms at start for these; linked in, only the objects called are, and the dynamic
# loader maps libc alone. STATIC_LIBS=0 links them as shared objects.
STATIC_LIBS ?= 1
ifeq ($(STATIC_LIBS),1)
PKG_LIBS   = -Wl,-Bstatic $(filter-out -ldl -lpthread -lm -lc,$(shell pkg-config --static --libs $(LIBPKGS) 2>/dev/null)) -Wl,-Bdynamic
else
PKG_LIBS   = $(shell pkg-config --libs $(LIBPKGS) 2>/dev/null)
endif
CFLAGS  ?= $(OPT) -g
# READ_ONLY=1 builds an iotriage that never changes anything, whatever its options say
# (for shared boxes): every action is refused, as with --read-only.
READ_ONLY ?= 0
# `make check` builds with a job per CPU (CI calls plain `make check`).
NPROC   := $(shell nproc 2>/dev/null || echo 2)
# libm is linked only into what calls it, the unit test of util/num.h (which says why):
# sqrt without errno is an instruction, and --as-needed drops libm from the rest.
ALL_CFLAGS = -std=c11 -D_GNU_SOURCE $(WARN) -fno-math-errno -Iinclude -DIOTRIAGE_READ_ONLY=$(READ_ONLY) $(PKG_CFLAGS) $(CFLAGS) $(EXTRA_CFLAGS)
LDLIBS_ALL = $(PKG_LIBS) -Wl,--push-state,--as-needed -lm -Wl,--pop-state $(LDLIBS)


BUILD   ?= build
# The objects that embed the BPF programs (0.77 MB of bytecode in .rodata) link last:
# their bytes then sit together at the end of .rodata, not between the constants every
# run reads, whose pages would bring theirs in too (the kernel maps a file's pages
# around the one touched, and whole large folios of the page cache): the resident
# part of the binary without the lens is smaller (docs/performance.md, memory).
BPF_BLOB_SRCS := src/source/bpfcast.c src/source/lens.c src/source/taskiter.c
SRCS    := $(filter-out $(BPF_BLOB_SRCS),$(sort $(wildcard src/*.c src/*/*.c))) $(BPF_BLOB_SRCS)
LIBSRCS := $(filter-out src/main.c,$(SRCS))
OBJS    := $(SRCS:%.c=$(BUILD)/%.o)
LIBOBJS := $(LIBSRCS:%.c=$(BUILD)/%.o)

# The version is debian/changelog's first line: one source of truth for the package and
# `iotriage --version` (a new version is a new changelog entry, `dch -v`). Only
# src/main.c reads it.
# Bare `make` builds the program (the main.o rule below would otherwise be the first).
.DEFAULT_GOAL := all

VERSION := $(shell awk -F'[()]' 'NR == 1 { print $$2 }' debian/changelog)
$(BUILD)/src/main.o: ALL_CFLAGS += -DIOTRIAGE_VERSION='"$(VERSION)"'
$(BUILD)/src/main.o: debian/changelog

UNIT_SRCS := $(sort $(wildcard tests/unit/test_*.c))
# Helpers of the integration tests that a lens's mk/NAME.mk builds (CHECK_HELPERS += ...).
CHECK_HELPERS :=
UNIT_BINS := $(UNIT_SRCS:tests/unit/%.c=$(BUILD)/tests/%)

.PHONY: all run check unit lab deps deps-test clean clang tidy san readonly layers
all: iotriage

# Each lens or service that needs its own libraries, helpers or generated files keeps its
# rules in mk/NAME.mk (PKGS/LIBPKGS additions, generated headers, test helpers); they are
# read here, after BUILD, LIBOBJS and the default goal.
-include $(sort $(wildcard mk/*.mk))

# One link rule for every variant of the program: the default build, the sanitized and
# clang builds and the read-only one differ only in their BUILD directory and flags.
iotriage $(BUILD)/iotriage $(BUILD)/iotriage-clang: $(OBJS)
	$(CC) $(ALL_CFLAGS) $(LDFLAGS) -o $@ $(OBJS) $(LDLIBS_ALL)

# Header dependencies come from the compiler (-MMD -MP): a changed header rebuilds exactly
# the objects that include it.
$(BUILD)/%.o: %.c Makefile
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -MMD -MP -c -o $@ $<

-include $(wildcard $(BUILD)/src/*.d $(BUILD)/src/*/*.d $(BUILD)/tests/*.d)

$(BUILD)/tests/test_%: tests/unit/test_%.c $(LIBOBJS)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -MMD -MP -Itests/unit -o $@ $< $(LIBOBJS) $(LDLIBS_ALL) $(shell pkg-config --libs cmocka)

$(BUILD)/tests/slowfs: tests/lab/slowfs.c
	@mkdir -p $(dir $@)
	$(CC) -std=c11 -D_GNU_SOURCE $(WARN) $(CFLAGS) $(shell pkg-config --cflags fuse3) -o $@ $< $(shell pkg-config --libs fuse3)

$(BUILD)/tests/taskhelper: tests/helpers/taskhelper.c
	@mkdir -p $(dir $@)
	$(CC) -std=c11 -D_GNU_SOURCE $(WARN) $(CFLAGS) -o $@ $< -lpthread

deps:
	@scripts/deps.sh build

deps-test:
	@scripts/deps.sh test

run: deps
	$(MAKE) iotriage
	./iotriage

# The whole suite: unit tests on fixtures, then integration tests on real processes and
# the lab disk. tests/run.sh prints one line per test and the summary line last.
check: deps-test
	$(MAKE) -j$(NPROC) iotriage $(UNIT_BINS) $(BUILD)/tests/slowfs $(BUILD)/tests/taskhelper $(CHECK_HELPERS)
	tests/run.sh

unit: $(UNIT_BINS)
	tests/run.sh unit

# The same build with clang, warnings as errors (part of `make check` via tests/run.sh).
clang:
	$(MAKE) CC=clang BUILD=build/clang build/clang/iotriage-clang

# The build-time read-only variant, in its own directory (tests/integration/test_actions_ro.sh).
readonly: build/ro/iotriage-ro

# Only src/act/act.c reads READ_ONLY: the variant is the default build's objects with an
# act.o of its own (one file compiled, not the whole program again).
RO_OBJS := $(patsubst $(BUILD)/src/act/act.o,build/ro/src/act/act.o,$(OBJS))
build/ro/src/act/act.o: READ_ONLY = 1
build/ro/src/act/act.o: src/act/act.c Makefile
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -MMD -MP -c -o $@ $<
-include $(wildcard build/ro/src/act/act.d)
build/ro/iotriage-ro: $(RO_OBJS)
	$(CC) $(ALL_CFLAGS) $(LDFLAGS) -o $@ $(RO_OBJS) $(LDLIBS_ALL)


clean:
	rm -rf build iotriage

# ---- Install --------------------------------------------------------------------------
# make install [PREFIX=/usr/local] [DESTDIR=staging]: the program, its man page, the bash
# completion, and what the services and exporters ship (unit files, alert rules) when the
# tree has them. Unit files are installed, never enabled. make uninstall removes the same.
PREFIX  ?= /usr/local
BINDIR  ?= $(PREFIX)/bin
MANDIR  ?= $(PREFIX)/share/man
DATADIR ?= $(PREFIX)/share
UNITDIR ?= $(PREFIX)/lib/systemd/system
COMPDIR ?= $(DATADIR)/bash-completion/completions
UNITS   := $(wildcard contrib/systemd/*.service)
RULES   := $(wildcard contrib/prometheus/*.yml)

# ---- Debian package (debian/, README.md Install) ----------------------------------------
# make deb: iotriage_VERSION_ARCH.deb in $(BUILD)/deb/, built by dpkg-buildpackage from
# a clean export of the committed tree (git archive HEAD): the working tree is neither
# read nor dirtied. make check-deb: tests/integration/test_deb.sh (lintian, contents,
# install/upgrade/purge in a throw-away root, debian/tests; not part of make check)
# with what make check leaves out: a second build that must be byte-identical and the
# packaged binary booted in the VM lane on Debian 12's kernel (about 2 minutes more
# here); .ci/run runs it before make check.
.PHONY: deb check-deb
deb:
	scripts/deb.sh $(BUILD)/deb

check-deb: deps-test
	$(MAKE) -j$(NPROC) iotriage $(BUILD)/tests/taskhelper $(BUILD)/tests/slowfs $(BUILD)/tests/loopctl
	IOTRIAGE_DEB_REPRO=1 IOTRIAGE_DEB_VM=1 tests/run.sh integration test_deb

.PHONY: install uninstall
install: iotriage
	install -D -m 0755 iotriage $(DESTDIR)$(BINDIR)/iotriage
	install -D -m 0644 docs/iotriage.8 $(DESTDIR)$(MANDIR)/man8/iotriage.8
	@if [ -f contrib/bash-completion/iotriage ]; then \
	    echo install -D -m 0644 contrib/bash-completion/iotriage $(DESTDIR)$(COMPDIR)/iotriage; \
	    install -D -m 0644 contrib/bash-completion/iotriage $(DESTDIR)$(COMPDIR)/iotriage; fi
	@for u in $(UNITS); do \
	    echo "install $$u -> $(DESTDIR)$(UNITDIR)/$$(basename $$u) (ExecStart in $(BINDIR))"; \
	    install -d $(DESTDIR)$(UNITDIR) && \
	    sed 's#/usr/local/bin/iotriage#$(BINDIR)/iotriage#g' $$u >$(DESTDIR)$(UNITDIR)/$$(basename $$u) && \
	    chmod 0644 $(DESTDIR)$(UNITDIR)/$$(basename $$u) || exit 1; done
	@for r in $(RULES); do \
	    install -D -m 0644 $$r $(DESTDIR)$(DATADIR)/iotriage/$$(basename $$r) || exit 1; done

uninstall:
	rm -f $(DESTDIR)$(BINDIR)/iotriage $(DESTDIR)$(MANDIR)/man8/iotriage.8 $(DESTDIR)$(COMPDIR)/iotriage
	@for u in $(UNITS); do rm -f $(DESTDIR)$(UNITDIR)/$$(basename $$u); done
	@for r in $(RULES); do rm -f $(DESTDIR)$(DATADIR)/iotriage/$$(basename $$r); done
	-rmdir $(DESTDIR)$(DATADIR)/iotriage 2>/dev/null

# The include graph against the layer order in README.md (part of `make check` through
# tests/integration/test_layers.sh).
layers:
	@scripts/layers.sh

# ---- Reliability: fuzzing, sanitizers, soak (docs/reliability.md) ----------------------
# fuzz-smoke and the sanitizer build are driven by `make check` through
# tests/integration/test_fuzz_smoke.sh, test_san_*.sh and test_soak_smoke.sh.
.PHONY: fuzz fuzz-smoke fuzz-build soak
SAN_FLAGS    := -fsanitize=address,undefined -fno-omit-frame-pointer
FUZZ_FLAGS   := $(SAN_FLAGS) -fno-sanitize-recover=undefined -fsanitize=fuzzer-no-link
FUZZ_NAMES   := $(sort $(patsubst tests/fuzz/fuzz_%.c,%,$(wildcard tests/fuzz/fuzz_*.c)))
FUZZ_SECONDS ?= 60
SOAK_SECONDS ?= 600

# libFuzzer harnesses (clang), one per parser, into build/fuzz/fuzz/.
fuzz-build:
	$(MAKE) CC=clang BUILD=build/fuzz OPT=-O1 EXTRA_CFLAGS="$(FUZZ_FLAGS)" \
	    $(FUZZ_NAMES:%=build/fuzz/fuzz/fuzz_%)

# The parsers and what they call: nothing else of the program is linked in.
FUZZ_SRCS    := src/util/util.c src/util/escape.c src/util/fmt.c src/util/strpool.c $(addprefix src/source/,$(addsuffix .c, \
                blkstack blockdev diskstats fdmap fdmap_resolve ioprio procs procs_list procs_iter mounts psi swaps taskstats)) src/audit/unitfile.c src/audit/unitpath.c \
                src/store/replay.c src/sample/decode_fs.c \
                $(addprefix src/sample/,$(addsuffix .c,decode decode_lens decode_devices decode_procs decode_warn)) \
                src/sample/json.c src/sample/write.c src/verdict.c src/verdict_cgroup.c src/verdict_fs.c src/verdict_pressure.c src/delta.c src/snapshot.c src/snapshot_taskdevs.c src/snapshot_fs.c \
                src/out/metrics.c src/store/store.c src/store/store_write.c src/store/store_read.c \
                src/source/cgroups.c src/source/cgroupfs.c src/source/cgname.c src/sample/decode_cgroups.c \
                src/source/bpfload.c src/source/bpfcast.c src/source/lens.c src/source/lens_calc.c src/source/threadstate.c src/store/state.c \
                src/source/lens_duty.c src/source/lens_waits.c src/source/lens_requests.c src/source/lens_writeback.c \
                src/source/taskiter.c src/act/trial_calc.c src/export_trials.c
FUZZ_OBJS    = $(FUZZ_SRCS:%.c=$(BUILD)/%.o)

$(BUILD)/fuzz/fuzz_%: tests/fuzz/fuzz_%.c tests/fuzz/fuzz.h $(FUZZ_OBJS)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -fsanitize=fuzzer -o $@ $< $(FUZZ_OBJS) $(LDLIBS_ALL)

fuzz: fuzz-build
	tests/fuzz/run.sh $(FUZZ_SECONDS)

fuzz-smoke: fuzz-build
	tests/fuzz/run.sh 1

# The binary and the unit tests under ASan+UBSan, into build/san/.
san:
	$(MAKE) BUILD=build/san EXTRA_CFLAGS="$(SAN_FLAGS)" LDFLAGS="$(SAN_FLAGS)" \
	    build/san/iotriage $(UNIT_SRCS:tests/unit/%.c=build/san/tests/%) \
	    build/san/tests/churn build/san/tests/loopctl

# Helpers of the soak and device tests (tests/soak/).
$(BUILD)/tests/churn: tests/soak/churn.c
	@mkdir -p $(dir $@)
	$(CC) -std=c11 -D_GNU_SOURCE $(WARN) $(CFLAGS) -o $@ $< -lpthread

$(BUILD)/tests/loopctl: tests/soak/loopctl.c
	@mkdir -p $(dir $@)
	$(CC) -std=c11 -D_GNU_SOURCE $(WARN) $(CFLAGS) -o $@ $<

# Process churn against the sanitized binary for SOAK_SECONDS (10 minutes by default).
soak: san
	tests/soak/churn.sh $(SOAK_SECONDS)

# Benchmarks (bench/run.sh, method in docs/performance.md): CPU per refresh, peak RSS and
# slab of `iotriage -b` against `iotop-c -b` and bench/floor.c, the least the kernel must
# be asked for the same data. `make bench` takes about 7 minutes and prints the table;
# `make bench-smoke` runs a small population for a few seconds (part of `make check`
# through tests/integration/test_bench_smoke.sh). Both need root.
BENCH_BINS := $(BUILD)/bench/spawn $(BUILD)/bench/floor $(BUILD)/bench/measure

$(BUILD)/bench/%: bench/%.c
	@mkdir -p $(dir $@)
	$(CC) -std=c11 -D_GNU_SOURCE $(WARN) $(CFLAGS) -o $@ $< -lpthread

.PHONY: bench bench-smoke bench-draw
bench: iotriage $(BENCH_BINS) $(BUILD)/tests/fs_cost $(BUILD)/bench/tscost
	BENCH_NO_BUILD=1 bench/run.sh
	bench/record.sh
	$(MAKE) bench-lens
	bench/threadview.sh
	@echo "filesystems lens alone (docs/performance.md, Filesystems):"
	$(BUILD)/tests/fs_cost 2000
	@echo "sampled thread states alone (docs/performance.md, Sampled thread states):"
	$(BUILD)/bench/tscost

# The always-on recorder's CPU and disk a day at 1,000 processes (bench/record.sh, about
# 3 minutes) and the BPF lens's cost per I/O and per context switch on a loop device over
# tmpfs (bench/lens.sh); both are part of `make bench`.
.PHONY: bench-record bench-lens
bench-record: iotriage $(BENCH_BINS) $(BUILD)/tests/recorder $(BUILD)/tests/storewriter
	bench/record.sh

bench-lens: iotriage $(BUILD)/bench/bpfstats
	bench/lens.sh

# The process view of one process with 5,000 threads against the main table's cost per
# task (bench/threadview.sh; about two minutes, needs tmux and root; part of `make bench`).
.PHONY: bench-threads
bench-threads: iotriage $(BENCH_BINS)
	bench/threadview.sh

# What the screen adds on top of sampling: batch, live screen and replay at 1,000
# processes (bench/draw.sh; about 40 s, needs tmux and root).
bench-draw: iotriage $(BENCH_BINS)
	bench/draw.sh

bench-smoke: iotriage $(BENCH_BINS)
	BENCH_NO_BUILD=1 bench/run.sh --smoke
