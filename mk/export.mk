# `iotriage export` (src/export.c): HTTP through libmicrohttpd (Debian libmicrohttpd-dev),
# a small, long-maintained server library, rather than an HTTP parser of our own.
PKGS    += libmicrohttpd
LIBPKGS += libmicrohttpd

# The exporter's files: the binary, its unit and its alert rules. (`make install`, when
# the Makefile gets one, can depend on this.) DESTDIR for packaging and tests.
PREFIX  ?= /usr/local
UNITDIR ?= /etc/systemd/system
.PHONY: install-export
install-export: iotriage
	install -D -m 0755 iotriage $(DESTDIR)$(PREFIX)/bin/iotriage
	@mkdir -p $(DESTDIR)$(UNITDIR)
	sed 's|/usr/local/bin/iotriage|$(PREFIX)/bin/iotriage|' contrib/systemd/iotriage-export.service \
	    >$(DESTDIR)$(UNITDIR)/iotriage-export.service
	chmod 0644 $(DESTDIR)$(UNITDIR)/iotriage-export.service
	install -D -m 0644 contrib/prometheus/iotriage-rules.yml \
	    $(DESTDIR)$(PREFIX)/share/iotriage/prometheus/iotriage-rules.yml
