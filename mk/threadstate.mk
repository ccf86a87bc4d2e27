# SPDX-License-Identifier: GPL-2.0-or-later
# The sampling of thread states between refreshes runs in a thread of the pipeline
# (src/pipeline.c, source/threadstate.h): glibc 2.34+ has it in libc, older ones need it.
LDLIBS += -pthread

# Its benchmark, which links the library objects: `make build/bench/tscost &&
# build/bench/tscost` (docs/performance.md, "Sampled thread states").
$(BUILD)/bench/tscost: bench/tscost.c $(LIBOBJS)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -o $@ $< $(LIBOBJS) $(LDLIBS_ALL)

# test_lab_fallback adds a loop device of its own (fresh counters) with it.
CHECK_HELPERS += $(BUILD)/tests/loopctl
