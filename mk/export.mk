# `iotriage export` (src/export.c): HTTP through libmicrohttpd (Debian libmicrohttpd-dev),
# a small, long-maintained server library, rather than an HTTP parser of our own.
PKGS    += libmicrohttpd
LIBPKGS += libmicrohttpd
# Its unit file and alert rules are installed by `make install` (Makefile).
