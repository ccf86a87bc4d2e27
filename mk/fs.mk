# mk/fs.mk: the filesystems lens (issue #20): its test driver for the space actions.
# tests/integration/test_fs_deleted.sh runs it; `make check` should build it with the
# other helpers. Read before the Makefile defines LIBOBJS (and BUILD), so the object list
# is computed here the same way.
BUILD ?= build
# This file is read before the Makefile's `all`: without this, the rule below would be the
# first one and so what a bare `make` builds.
.DEFAULT_GOAL := all
FSFIX_OBJS := $(patsubst %.c,$(BUILD)/%.o,$(filter-out src/main.c,$(sort $(wildcard src/*.c src/*/*.c))))
$(BUILD)/tests/fsfix: tests/helpers/fsfix.c $(FSFIX_OBJS)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -o $@ $< $(FSFIX_OBJS) $(LDLIBS_ALL)

# What the lens adds to a refresh, measured alone (docs/performance.md "Filesystems").
$(BUILD)/tests/fs_cost: tests/helpers/fs_cost.c $(FSFIX_OBJS)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -o $@ $< $(FSFIX_OBJS) $(LDLIBS_ALL)
