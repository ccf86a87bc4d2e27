# The cgroup lens (include/cgroups.h): its benchmark, which links the library objects.
# `make build/bench/cgcost && sudo build/bench/cgcost` (docs/performance.md, "cgroup lens").
# The objects are listed here because this file is read before the Makefile defines
# LIBOBJS and BUILD.
CGCOST_BUILD := $(or $(BUILD),build)
CGCOST_OBJS  := $(patsubst %.c,$(CGCOST_BUILD)/%.o,$(filter-out src/main.c,$(sort $(wildcard src/*.c src/*/*.c))))

$(CGCOST_BUILD)/bench/cgcost: bench/cgcost.c $(CGCOST_OBJS)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -o $@ $< $(CGCOST_OBJS) $(LDLIBS_ALL)

# The cgroup parsers' fuzz harness (`make fuzz-build` builds it through this rule: the
# Makefile's FUZZ_SRCS does not list the cgroup sources). Its objects: the parsers and
# what they call.
CGFUZZ_OBJS := $(addprefix $(CGCOST_BUILD)/,src/util/util.o src/source/psi.o src/source/cgroup.o src/source/cgname.o)

$(CGCOST_BUILD)/fuzz/fuzz_cgroup: tests/fuzz/fuzz_cgroup.c tests/fuzz/fuzz.h $(CGFUZZ_OBJS)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -fsanitize=fuzzer -o $@ $< $(CGFUZZ_OBJS) $(LDLIBS_ALL)

# Every harness links FUZZ_SRCS, whose delta.c, snapshot.c, verdict.c, out/json.c and
# source/replay.c now call the cgroup lens: its sources are linked into each harness too,
# until FUZZ_SRCS lists them (then nothing is added twice: the filter-out below runs at
# link time, when FUZZ_SRCS is known).
CGLENS_SRCS      := src/source/cgroups.c src/source/cgroup.c src/source/cgname.c src/record/replay_cgroups.c
CGLENS_FUZZ_OBJS := $(CGLENS_SRCS:%.c=$(CGCOST_BUILD)/%.o)
CGLENS_FUZZERS   := $(filter-out %/fuzz_cgroup,$(patsubst tests/fuzz/fuzz_%.c,$(CGCOST_BUILD)/fuzz/fuzz_%,$(wildcard tests/fuzz/fuzz_*.c)))
$(CGLENS_FUZZERS): $(CGLENS_FUZZ_OBJS)
$(CGLENS_FUZZERS): FUZZ_OBJS += $(filter-out $(FUZZ_SRCS:%.c=$(BUILD)/%.o),$(CGLENS_FUZZ_OBJS))
