/* SPDX-License-Identifier: GPL-2.0-or-later */
/* export.h: `iotriage export`, the Prometheus exporter (docs/metrics.md).
 *
 * One sampling loop (the main thread) takes a snapshot every interval, computes rates and
 * verdicts and formats them as a page in both exposition formats (out/metrics.h). The
 * page goes two ways:
 *   --listen ADDR:PORT  served over HTTP by libmicrohttpd's own thread (epoll). Each
 *       finished page replaces the one before under a mutex held only for a pointer swap;
 *       a scrape takes a reference to the current page and never waits for a refresh in
 *       progress, and a refresh never waits for a slow client (the client holds the old
 *       page until it is done). Read-only: GET or HEAD of /metrics (and of / for a link);
 *       404 for any other path (one holding a NUL, "%00" or raw, too), 405 for any other
 *       method (and a target that is no path: "OPTIONS *", CONNECT); a request with a
 *       body is answered from its header, the body never read. Bounded: connections in all
 *       and per client address, a timeout for idle or slow clients, a memory limit per
 *       connection (which bounds the request header).
 *   --textfile PATH     for node_exporter's textfile collector: written to
 *       PATH.tmp.PID in the same directory, fsync'd and renamed over PATH, so the
 *       collector never reads half a file. That file is made anew (O_EXCL): a name
 *       already taken is left alone and another tried. PATH must end in .prom (the collector reads
 *       nothing else).
 * With neither, it listens on EXPORT_DEFAULT_LISTEN (loopback only): a non-loopback
 * address is only ever used when given. Nothing in the exporter changes the machine.
 *
 * export_run() returns when SIGINT, SIGTERM or SIGHUP arrives (or after `iterations`
 * samples): 0, or 1 on an error that stopped it (a message on stderr), 2 when it
 * cannot start (address in use, textfile directory missing).
 */
#ifndef IOTRIAGE_EXPORT_H
#define IOTRIAGE_EXPORT_H

#include <stdbool.h>
#include <stddef.h>

#include "delta.h"
#include "verdict.h"

/* 9100-9999, Prometheus's range of exporter ports, has been fully allocated since 2023:
 * any default there collides on paper with some registered exporter. */
#define EXPORT_DEFAULT_PORT   "9851"
#define EXPORT_DEFAULT_LISTEN "127.0.0.1:" EXPORT_DEFAULT_PORT
#define EXPORT_DEFAULT_DELAY  5.0

struct export_opts {
    const char *listen;              /* "ADDR:PORT", "[V6ADDR]:PORT"; port 0 picks a free one
                                      * (printed on stderr); NULL: see above */
    const char *textfile;            /* PATH ending in .prom, or NULL */
    double delay_s;                  /* seconds between samples */
    long iterations;                 /* stop after this many samples; 0: until a signal */
    const char *proc_root, *sys_root;
    const char *version;             /* for iotriage_build_info */
    /* Bounds of the HTTP side; 0 takes the default in export.c. */
    unsigned conn_limit, per_ip_limit, timeout_s;
    size_t conn_memory;
};

int export_run(const struct export_opts *o);

/* The exporter as a sink of the pipeline (include/pipeline.h): export_run() is a sampling
 * loop around these three, and a caller that samples itself uses them alone.
 *   export_sink_open   starts HTTP (o->listen, or the default when there is no textfile)
 *                      and opens the textfile's directory; o->delay_s and iterations are
 *                      not read. 0, or -errno with one line in err. Call it from the
 *                      thread that should receive SIGINT/SIGTERM/SIGHUP: the HTTP thread
 *                      blocks them.
 *   export_sink_emit   the sink callback (ctx: the export_sink): formats r and v as a page
 *                      in both formats, writes the textfile, then makes the page the one
 *                      scrapes get. r and v are only read, and not kept. Returns 0, or
 *                      -errno when the textfile could not be written (the page is served
 *                      all the same).
 *   export_sink_close  stops HTTP (waiting for responses in flight) and frees everything.
 * Lenses (out/metrics.h) are added before the first emit; up to 8. */
struct export_sink;
struct metrics_lens;
int  export_sink_open(struct export_sink **out, const struct export_opts *o, char *err, size_t errlen);
int  export_sink_add_lens(struct export_sink *k, const struct metrics_lens *lens);
int  export_sink_emit(void *ctx, const struct result *r, const struct verdicts *v,
                      char *err, size_t errlen);
void export_sink_close(struct export_sink *k);

/* `iotriage export [options]`: argv[0] is "export". Parses, then export_run(). */
int export_main(int argc, char **argv, const char *version);

/* Pure: split "ADDR:PORT" / "[ADDR]:PORT" into host and port. Returns 0 or -EINVAL
 * (no port, no address: an empty address would mean every interface, which must be
 * asked for as 0.0.0.0 or [::]). */
int export_split_listen(const char *s, char *host, size_t hostlen, char *port, size_t portlen);

#endif
