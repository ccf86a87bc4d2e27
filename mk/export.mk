# SPDX-License-Identifier: GPL-2.0-or-later
# `iotriage export` (src/export.c): HTTP through libmicrohttpd (Debian libmicrohttpd-dev),
# a small, long-maintained server library, rather than an HTTP parser of our own.
# Not linked: export.c loads it with dlopen when the endpoint starts (with GnuTLS and the
# rest it pulls in, it cost every run ~3 MB of resident memory and ~8 ms at start).
PKGS    += libmicrohttpd
# Its unit file and alert rules are installed by `make install` (Makefile).
