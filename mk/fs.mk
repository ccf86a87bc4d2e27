# SPDX-License-Identifier: GPL-2.0-or-later
# mk/fs.mk: the filesystems lens (issue #20): its test driver for the space actions.
# tests/integration/test_fs_deleted.sh runs it; `make check` builds it.
FSFIX_OBJS := $(LIBOBJS)
CHECK_HELPERS += $(BUILD)/tests/fsfix
$(BUILD)/tests/fsfix: tests/helpers/fsfix.c $(FSFIX_OBJS)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -o $@ $< $(FSFIX_OBJS) $(LDLIBS_ALL)

# What the lens adds to a refresh, measured alone (docs/performance.md "Filesystems").
$(BUILD)/tests/fs_cost: tests/helpers/fs_cost.c $(FSFIX_OBJS)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -o $@ $< $(FSFIX_OBJS) $(LDLIBS_ALL)
