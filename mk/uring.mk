# SPDX-License-Identifier: GPL-2.0-or-later
# mk/uring.mk: the io_uring helper of the integration tests (issue #35): an idle network
# service waiting on a socket receive through io_uring, whose wait the kernel counts as
# iowait and PSI io. tests/integration/test_psi_uring.sh runs it; `make check` builds it.
# liburing (Debian's liburing-dev, scripts/deps.sh test) is the tests' need only.
CHECK_HELPERS += $(BUILD)/tests/uringwait
$(BUILD)/tests/uringwait: tests/helpers/uringwait.c
	@mkdir -p $(dir $@)
	$(CC) -std=c11 -D_GNU_SOURCE $(WARN) $(CFLAGS) -o $@ $< -luring
