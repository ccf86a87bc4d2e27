# iotriage: see README.md. `make` builds ./iotriage; `sudo make run` installs what is
# missing, builds and starts it; `sudo make check` installs, builds and runs every test.

CC      ?= cc
PKGS    := ncursesw libproc2 libnl-3.0 libnl-genl-3.0
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
PKG_LIBS   = $(shell pkg-config --libs $(PKGS) 2>/dev/null)
CFLAGS  ?= $(OPT) -g
ALL_CFLAGS = -std=c11 -D_GNU_SOURCE $(WARN) -Iinclude $(PKG_CFLAGS) $(CFLAGS) $(EXTRA_CFLAGS)
LDLIBS_ALL = $(PKG_LIBS) -lm $(LDLIBS)

BUILD   ?= build
SRCS    := $(sort $(wildcard src/*.c src/*/*.c))
LIBSRCS := $(filter-out src/main.c,$(SRCS))
OBJS    := $(SRCS:%.c=$(BUILD)/%.o)
LIBOBJS := $(LIBSRCS:%.c=$(BUILD)/%.o)

UNIT_SRCS := $(sort $(wildcard tests/unit/test_*.c))
UNIT_BINS := $(UNIT_SRCS:tests/unit/%.c=$(BUILD)/tests/%)

.PHONY: all run check unit lab deps deps-test clean clang tidy san
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

clean:
	rm -rf build iotriage
