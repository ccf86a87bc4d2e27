# SPDX-License-Identifier: GPL-2.0-or-later
# The cgroup lens (source/cgroups.h): its benchmark, which links the library objects.
# `make build/bench/cgcost && sudo build/bench/cgcost` (docs/performance.md, "cgroup lens");
# `make bench` builds and runs it last (bench/run.sh).
CGCOST_BUILD := $(BUILD)
CGCOST_OBJS  := $(LIBOBJS)

bench: $(CGCOST_BUILD)/bench/cgcost

$(CGCOST_BUILD)/bench/cgcost: bench/cgcost.c $(CGCOST_OBJS)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -o $@ $< $(CGCOST_OBJS) $(LDLIBS_ALL)

# The cgroup parsers' fuzz harness (`make fuzz-build` builds it through this rule: the
# Makefile's FUZZ_SRCS does not list the cgroup sources). Its objects: the parsers and
# what they call.
CGFUZZ_OBJS := $(addprefix $(CGCOST_BUILD)/,src/util/util.o src/source/psi.o src/source/cgroupfs.o src/source/cgname.o)

$(CGCOST_BUILD)/fuzz/fuzz_cgroup: tests/fuzz/fuzz_cgroup.c tests/fuzz/fuzz.h $(CGFUZZ_OBJS)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -fsanitize=fuzzer -o $@ $< $(CGFUZZ_OBJS) $(LDLIBS_ALL)
