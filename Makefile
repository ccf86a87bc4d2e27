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
PKG_LIBS   = $(shell pkg-config --libs $(LIBPKGS) 2>/dev/null)
CFLAGS  ?= $(OPT) -g
# READ_ONLY=1 builds an iotriage that never changes anything, whatever its options say
# (for shared boxes): every action is refused, as with --read-only.
READ_ONLY ?= 0
ALL_CFLAGS = -std=c11 -D_GNU_SOURCE $(WARN) -Iinclude -DIOTRIAGE_READ_ONLY=$(READ_ONLY) $(PKG_CFLAGS) $(CFLAGS) $(EXTRA_CFLAGS)
LDLIBS_ALL = $(PKG_LIBS) -lm $(LDLIBS)

# Each lens or service that needs its own libraries or generated files keeps its rules in
# mk/NAME.mk (PKGS/LIBPKGS additions, generated headers); they are read here.
-include $(sort $(wildcard mk/*.mk))

BUILD   ?= build
SRCS    := $(sort $(wildcard src/*.c src/*/*.c))
LIBSRCS := $(filter-out src/main.c,$(SRCS))
OBJS    := $(SRCS:%.c=$(BUILD)/%.o)
LIBOBJS := $(LIBSRCS:%.c=$(BUILD)/%.o)

UNIT_SRCS := $(sort $(wildcard tests/unit/test_*.c))
UNIT_BINS := $(UNIT_SRCS:tests/unit/%.c=$(BUILD)/tests/%)

.PHONY: all run check unit lab deps deps-test clean clang tidy san readonly
all: iotriage

iotriage: $(OBJS)
	$(CC) $(ALL_CFLAGS) $(LDFLAGS) -o $@ $(OBJS) $(LDLIBS_ALL)

$(BUILD)/%.o: %.c $(wildcard include/*.h include/*/*.h) Makefile
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -c -o $@ $<

$(BUILD)/tests/test_%: tests/unit/test_%.c $(LIBOBJS)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -Itests/unit -o $@ $< $(LIBOBJS) $(LDLIBS_ALL) $(shell pkg-config --libs cmocka)

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
	$(MAKE) iotriage $(UNIT_BINS) $(BUILD)/tests/slowfs $(BUILD)/tests/taskhelper
	tests/run.sh

unit: $(UNIT_BINS)
	tests/run.sh unit

# The same build with clang, warnings as errors (part of `make check` via tests/run.sh).
clang:
	$(MAKE) CC=clang BUILD=build/clang build/clang/iotriage-clang

$(BUILD)/iotriage-clang: $(OBJS)
	$(CC) $(ALL_CFLAGS) $(LDFLAGS) -o $@ $(OBJS) $(LDLIBS_ALL)

# The build-time read-only variant, in its own directory (tests/integration/test_actions_ro.sh).
readonly:
	$(MAKE) READ_ONLY=1 BUILD=build/ro build/ro/iotriage-ro

$(BUILD)/iotriage-ro: $(OBJS)
	$(CC) $(ALL_CFLAGS) $(LDFLAGS) -o $@ $(OBJS) $(LDLIBS_ALL)

clean:
	rm -rf build iotriage

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
FUZZ_SRCS    := src/util.c src/out/escape.c $(addprefix src/source/,$(addsuffix .c, \
                blockdev diskstats fdmap ioprio mounts procs psi taskstats units replay replay_fs)) \
                src/json.c src/out/json.c src/out/common.c src/verdict.c src/delta.c src/snapshot.c
FUZZ_OBJS    = $(FUZZ_SRCS:%.c=$(BUILD)/%.o)

$(BUILD)/fuzz/fuzz_%: tests/fuzz/fuzz_%.c tests/fuzz/fuzz.h $(FUZZ_OBJS)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -fsanitize=fuzzer -o $@ $< $(FUZZ_OBJS) $(LDLIBS_ALL)

fuzz: fuzz-build
	tests/fuzz/run.sh $(FUZZ_SECONDS)

fuzz-smoke: fuzz-build
	tests/fuzz/run.sh 3

# The binary and the unit tests under ASan+UBSan, into build/san/.
san:
	$(MAKE) BUILD=build/san EXTRA_CFLAGS="$(SAN_FLAGS)" LDFLAGS="$(SAN_FLAGS)" \
	    build/san/iotriage $(UNIT_SRCS:tests/unit/%.c=build/san/tests/%) \
	    build/san/tests/churn build/san/tests/loopctl

$(BUILD)/iotriage: $(OBJS)
	$(CC) $(ALL_CFLAGS) $(LDFLAGS) -o $@ $(OBJS) $(LDLIBS_ALL)

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
bench: iotriage $(BENCH_BINS)
	BENCH_NO_BUILD=1 bench/run.sh

# What the screen adds on top of sampling: batch, live screen and replay at 1,000
# processes (bench/draw.sh; about 40 s, needs tmux and root).
bench-draw: iotriage $(BENCH_BINS)
	bench/draw.sh

bench-smoke: iotriage $(BENCH_BINS)
	BENCH_NO_BUILD=1 bench/run.sh --smoke
