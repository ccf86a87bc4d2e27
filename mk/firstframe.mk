# SPDX-License-Identifier: GPL-2.0-or-later
# The first screen and the growth of a refresh's cost with the number of tasks (issue 19),
# both part of `make bench` (they run before its other parts).
bench: bench-firstframe bench-growth

# Time from start to the first frame with the process table, against iotop-c and htop,
# at 1,000 and 10,000 idle processes (bench/firstframe.sh; a few minutes, tmux and root;
# part of `make bench`).
.PHONY: bench-firstframe
bench-firstframe: iotriage $(BENCH_BINS)
	bench/firstframe.sh

# Steady CPU per refresh against 0, 1,000, 10,000, 30,000 processes and 100 x 100
# threads, with and without the BPF lens: a table and build/bench/growth/growth.svg
# (bench/growth.sh, gnuplot; about 15 minutes, root; part of `make bench`).
.PHONY: bench-growth
bench-growth: iotriage $(BENCH_BINS)
	BENCH_NO_BUILD=1 bench/growth.sh

