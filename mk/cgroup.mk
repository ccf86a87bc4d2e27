# The cgroup lens (include/cgroups.h): its benchmark, which links the library objects.
# `make build/bench/cgcost && sudo build/bench/cgcost` (docs/performance.md, "cgroup lens").
# The objects are listed here because this file is read before the Makefile defines
# LIBOBJS and BUILD.
CGCOST_BUILD := $(or $(BUILD),build)
CGCOST_OBJS  := $(patsubst %.c,$(CGCOST_BUILD)/%.o,$(filter-out src/main.c,$(sort $(wildcard src/*.c src/*/*.c))))

$(CGCOST_BUILD)/bench/cgcost: bench/cgcost.c $(CGCOST_OBJS)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -o $@ $< $(CGCOST_OBJS) $(LDLIBS_ALL)
