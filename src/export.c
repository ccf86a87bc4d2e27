/* SPDX-License-Identifier: GPL-2.0-or-later */
/* export.c: `iotriage export`: the sampling loop, the page swap, HTTP and the textfile. */
#include "export.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <netdb.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <microhttpd.h>

#include "act/act.h"
#include "export_trials.h"
#include "out/metrics.h"
#include "pipeline.h"
#include "util.h"
#include "verdict.h"

/* Defaults of the HTTP bounds. Prometheus keeps one connection per target; 64 leaves
 * room for a few servers, curl and the node's own checks. A request is a few hundred
 * bytes of header: 16 KiB of connection memory holds any real one and answers a huge
 * header with 431. 10 s closes an idle or silent client's connection; one that drips its
 * header stays until the header fills those 16 KiB, which the per-address limit bounds
 * (docs/metrics.md). */
#define CONN_LIMIT_DEFAULT    64
#define PER_IP_LIMIT_DEFAULT  16
#define TIMEOUT_S_DEFAULT     10
#define CONN_MEMORY_DEFAULT   (16 * 1024)

/* libmicrohttpd is loaded with dlopen when the HTTP endpoint starts: linked, it and what
 * it pulls in (GnuTLS, p11-kit, nettle, gmp and others) cost every run of iotriage,
 * the screen and batch ones included, about 3 MB of resident memory and 8 ms of CPU at
 * start (docs/performance.md). The pointers keep the library's own prototypes. */
#define MHD_SONAME "libmicrohttpd.so.12"
static struct {
    void *lib;
    __typeof__(MHD_start_daemon) *start_daemon;
    __typeof__(MHD_stop_daemon) *stop_daemon;
    __typeof__(MHD_get_daemon_info) *get_daemon_info;
    __typeof__(MHD_create_response_from_buffer) *response_from_buffer;
    __typeof__(MHD_create_response_from_buffer_with_free_callback_cls) *response_with_free;
    __typeof__(MHD_add_response_header) *add_header;
    __typeof__(MHD_queue_response) *queue_response;
    __typeof__(MHD_destroy_response) *destroy_response;
    __typeof__(MHD_lookup_connection_value) *lookup_value;
    __typeof__(MHD_http_unescape) *http_unescape;
} mhd;

static int mhd_load(char *err, size_t errlen)
{
    static const struct dl_sym syms[] = {
        { "MHD_start_daemon", offsetof(__typeof__(mhd), start_daemon) },
        { "MHD_stop_daemon", offsetof(__typeof__(mhd), stop_daemon) },
        { "MHD_get_daemon_info", offsetof(__typeof__(mhd), get_daemon_info) },
        { "MHD_create_response_from_buffer", offsetof(__typeof__(mhd), response_from_buffer) },
        { "MHD_create_response_from_buffer_with_free_callback_cls", offsetof(__typeof__(mhd), response_with_free) },
        { "MHD_add_response_header", offsetof(__typeof__(mhd), add_header) },
        { "MHD_queue_response", offsetof(__typeof__(mhd), queue_response) },
        { "MHD_destroy_response", offsetof(__typeof__(mhd), destroy_response) },
        { "MHD_lookup_connection_value", offsetof(__typeof__(mhd), lookup_value) },
        { "MHD_http_unescape", offsetof(__typeof__(mhd), http_unescape) },
    };
    int rc = 0;
    if (!mhd.lib)
        mhd.lib = dl_load(MHD_SONAME, "the HTTP endpoint", "libmicrohttpd12", &mhd, sizeof(mhd), syms,
                          sizeof(syms) / sizeof(syms[0]), &rc, err, errlen);
    return rc;
}

static volatile sig_atomic_t export_stop;

static void on_signal(int sig)
{
    (void)sig;
    export_stop = 1;
}

/* ---- The page, swapped under a mutex held for a pointer --------------------------------- */

struct page {
    atomic_uint refs;
    char  *text[2];                  /* by enum metrics_fmt */
    size_t len[2];
};

struct pages {
    pthread_mutex_t lock;
    struct page *cur;                /* NULL before the first sample */
};

static void page_unref(struct page *p)
{
    if (p && atomic_fetch_sub(&p->refs, 1) == 1) {
        free(p->text[0]);
        free(p->text[1]);
        free(p);
    }
}

static struct page *pages_get(struct pages *ps)
{
    pthread_mutex_lock(&ps->lock);
    struct page *p = ps->cur;
    if (p)
        atomic_fetch_add(&p->refs, 1);
    pthread_mutex_unlock(&ps->lock);
    return p;
}

static void pages_publish(struct pages *ps, struct page *p)
{
    pthread_mutex_lock(&ps->lock);
    struct page *old = ps->cur;
    ps->cur = p;
    pthread_mutex_unlock(&ps->lock);
    page_unref(old);                 /* freed here or by the last scrape still sending it */
}

/* ---- HTTP ------------------------------------------------------------------------------- */

static const char index_html[] =
    "<!DOCTYPE html>\n<html><head><title>iotriage export</title></head><body>\n"
    "<h1>iotriage export</h1>\n<p><a href=\"/metrics\">Metrics</a></p>\n</body></html>\n";

static enum MHD_Result reply_static(struct MHD_Connection *c, unsigned status,
                                    const char *ctype, const char *body, const char *allow)
{
    struct MHD_Response *r = mhd.response_from_buffer(strlen(body), (void *)(uintptr_t)body,
                                                             MHD_RESPMEM_PERSISTENT);
    if (!r)
        return MHD_NO;
    mhd.add_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, ctype);
    if (allow)
        mhd.add_header(r, MHD_HTTP_HEADER_ALLOW, allow);
    enum MHD_Result ret = mhd.queue_response(c, status, r);
    mhd.destroy_response(r);
    return ret;
}

static void page_release(void *cls)
{
    page_unref(cls);
}

static enum MHD_Result reply_page(struct MHD_Connection *c, struct pages *ps)
{
    struct page *p = pages_get(ps);
    if (!p)
        return reply_static(c, MHD_HTTP_SERVICE_UNAVAILABLE, "text/plain; charset=utf-8",
                            "no sample taken yet\n", NULL);
    enum metrics_fmt fmt = metrics_negotiate(
        mhd.lookup_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_ACCEPT));
    /* The response borrows the page's text and drops its reference when MHD is done with
     * it, however the connection ends. */
    struct MHD_Response *r = mhd.response_with_free(
        p->len[fmt], p->text[fmt], page_release, p);
    if (!r) {
        page_unref(p);
        return MHD_NO;
    }
    mhd.add_header(r, MHD_HTTP_HEADER_CONTENT_TYPE,
                            fmt == METRICS_OPENMETRICS ? METRICS_CTYPE_OPENMETRICS : METRICS_CTYPE_TEXT);
    mhd.add_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
    enum MHD_Result ret = mhd.queue_response(c, MHD_HTTP_OK, r);
    mhd.destroy_response(r);
    return ret;
}

/* A request target that held a NUL must not pass for the path before it: decoded, or
 * as a C string, "/metrics%00.txt" and "/metrics<NUL>.txt" both read "/metrics".
 *
 * "%00" is left as it came: percent-decoding is libmicrohttpd's own otherwise. No path
 * served here has a '%', so such a target is a 404. (This also decodes the query's
 * arguments, which nothing here reads.) */
static size_t http_unescape(void *cls, struct MHD_Connection *c, char *s)
{
    (void)cls, (void)c;
    if (strstr(s, "%00"))
        return strlen(s);
    return mhd.http_unescape(s);
}

/* A raw NUL byte: libmicrohttpd 0.9 lets it through (1.0 refuses the request itself). The
 * URI logger sees the target as received, where it stays, in the buffer of the request
 * line, followed by one blank and the version (in 1.0 as in 0.9): the logger keeps where
 * the target's C string ends, as the request's context, and the handler compares that
 * with where the version begins. Anything but blanks between the two went past a NUL. */
#define TARGET_SPAN_MAX (1u << 20)

static void *uri_seen(void *cls, const char *uri, struct MHD_Connection *c)
{
    (void)cls, (void)c;
    return uri ? (void *)(uintptr_t)(uri + strlen(uri)) : NULL;
}

static bool target_cut(const char *url, const char *version, const void *raw_end)
{
    uintptr_t u = (uintptr_t)url, v = (uintptr_t)version, e = (uintptr_t)raw_end;
    if (!raw_end || e < u || v <= e + 1 || v - u > TARGET_SPAN_MAX)
        return false;                /* not that layout: nothing to say */
    for (const char *p = (const char *)raw_end + 1; p < version; p++)
        if (*p != ' ' && *p != '\t')
            return true;
    return false;
}

/* Whether more than the header is to come: a body (a Content-Length other than 0, or
 * Transfer-Encoding) or a client waiting for "100 Continue" to send one. */
static bool request_has_more(struct MHD_Connection *c)
{
    const char *len = mhd.lookup_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
    return (len && len[strspn(len, "0")] != '\0') ||
           mhd.lookup_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_TRANSFER_ENCODING) ||
           mhd.lookup_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_EXPECT);
}

static int header_seen;              /* *con_cls once the header has been judged */

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version,
                                  const char *upload_data, size_t *upload_data_size, void **con_cls)
{
    (void)upload_data, (void)upload_data_size;
    /* MHD calls once when the header is in and again when the (empty) body is: answering
     * on the second call lets it keep the connection alive for the next scrape. Only a
     * request judged fine on the first call gets a second one. */
    if (*con_cls == &header_seen) {
        if (strcmp(url, "/") == 0)
            return reply_static(c, MHD_HTTP_OK, "text/html; charset=utf-8", index_html, NULL);
        return reply_page(c, cls);
    }
    bool cut = target_cut(url, version, *con_cls);
    bool metrics = !cut && strcmp(url, "/metrics") == 0, index = !cut && strcmp(url, "/") == 0;
    /* Nothing can be triggered over HTTP: GET and HEAD only. A target that is no path
     * ("OPTIONS *", "CONNECT host:port") is judged by its method alone. */
    bool readonly = strcmp(method, MHD_HTTP_METHOD_GET) == 0 ||
                    strcmp(method, MHD_HTTP_METHOD_HEAD) == 0;
    if (!metrics && !index && (url[0] == '/' || readonly))
        return reply_static(c, MHD_HTTP_NOT_FOUND, "text/plain; charset=utf-8",
                            "not found: this exporter serves /metrics only\n", NULL);
    if (!readonly)
        return reply_static(c, MHD_HTTP_METHOD_NOT_ALLOWED, "text/plain; charset=utf-8",
                            "method not allowed: GET or HEAD only\n", "GET, HEAD");
    /* A body is never read, nor asked for: answered now, from the header alone (MHD
     * then closes the connection, the body unread). Queued later, once MHD is reading
     * the body, the answer would be refused and the client left with nothing. */
    if (request_has_more(c)) {
        if (index)
            return reply_static(c, MHD_HTTP_OK, "text/html; charset=utf-8", index_html, NULL);
        return reply_page(c, cls);
    }
    *con_cls = &header_seen;
    return MHD_YES;
}

/* MHD's complaints about clients (a header too large, a connection cut) arrive once per
 * bad request: a flood of bad clients must not become a flood on stderr. */
__attribute__((format(printf, 2, 0)))
static void http_log(void *cls, const char *fmt, va_list ap);
static void http_log(void *cls, const char *fmt, va_list ap)
{
    (void)cls;
    static atomic_uint logged;
    static _Atomic double window;
    double now = clock_mono();
    if (now - atomic_load(&window) > 60.0) {
        atomic_store(&window, now);
        atomic_store(&logged, 0);
    }
    unsigned n = atomic_fetch_add(&logged, 1);
    if (n < 10) {
        fputs("iotriage export: http: ", stderr);
        vfprintf(stderr, fmt, ap);
    } else if (n == 10) {
        fputs("iotriage export: http: more messages this minute suppressed\n", stderr);
    }
}

int export_split_listen(const char *s, char *host, size_t hostlen, char *port, size_t portlen)
{
    const char *colon, *h = s;
    size_t hl;
    if (*s == '[') {
        const char *close = strchr(s, ']');
        if (!close || close[1] != ':')
            return -EINVAL;
        h = s + 1;
        hl = (size_t)(close - h);
        colon = close + 1;
    } else {
        colon = strrchr(s, ':');
        if (!colon || memchr(s, ':', (size_t)(colon - s)))
            return -EINVAL;              /* bare IPv6 must be bracketed */
        hl = (size_t)(colon - s);
    }
    const char *pt = colon + 1;
    if (hl == 0 || hl >= hostlen || !*pt || strlen(pt) >= portlen || strspn(pt, "0123456789") != strlen(pt))
        return -EINVAL;
    long pn = strtol(pt, NULL, 10);
    if (pn < 0 || pn > 65535)
        return -EINVAL;
    memcpy(host, h, hl);
    host[hl] = '\0';
    str_copy(port, pt, portlen);
    return 0;
}

static struct MHD_Daemon *http_start(const struct export_opts *o, struct pages *ps,
                                     char *err, size_t errlen)
{
    const char *listen = o->listen ? o->listen : EXPORT_DEFAULT_LISTEN;
    char host[256], port[8];
    if (export_split_listen(listen, host, sizeof(host), port, sizeof(port)) < 0) {
        snprintf(err, errlen, "--listen %s: expected ADDR:PORT or [V6ADDR]:PORT "
                 "(0.0.0.0:%s for every interface)", listen, EXPORT_DEFAULT_PORT);
        return NULL;
    }
    struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
                              .ai_flags = AI_PASSIVE | AI_NUMERICSERV };
    struct addrinfo *ai;
    int rc = getaddrinfo(host, port, &hints, &ai);
    if (rc != 0) {
        snprintf(err, errlen, "--listen %s: %s", listen, gai_strerror(rc));
        return NULL;
    }
    if (mhd_load(err, errlen) < 0) {
        freeaddrinfo(ai);
        return NULL;
    }
    unsigned flags = MHD_USE_EPOLL_INTERNAL_THREAD | MHD_USE_ERROR_LOG;
    if (ai->ai_family == AF_INET6)
        flags |= MHD_USE_IPv6;
    struct MHD_Daemon *d = mhd.start_daemon(
        flags, 0, NULL, NULL, on_request, ps,
        MHD_OPTION_EXTERNAL_LOGGER, http_log, NULL,   /* first, or MHD logs before it */
        MHD_OPTION_URI_LOG_CALLBACK, uri_seen, NULL,
        MHD_OPTION_UNESCAPE_CALLBACK, http_unescape, NULL,
        MHD_OPTION_SOCK_ADDR, ai->ai_addr,
        MHD_OPTION_CONNECTION_LIMIT, o->conn_limit ? o->conn_limit : CONN_LIMIT_DEFAULT,
        MHD_OPTION_PER_IP_CONNECTION_LIMIT, o->per_ip_limit ? o->per_ip_limit : PER_IP_LIMIT_DEFAULT,
        MHD_OPTION_CONNECTION_TIMEOUT, o->timeout_s ? o->timeout_s : TIMEOUT_S_DEFAULT,
        MHD_OPTION_CONNECTION_MEMORY_LIMIT, o->conn_memory ? o->conn_memory : (size_t)CONN_MEMORY_DEFAULT,
        MHD_OPTION_LISTEN_BACKLOG_SIZE, 128u,
        MHD_OPTION_STRICT_FOR_CLIENT, 1,
        MHD_OPTION_END);
    if (!d) {
        snprintf(err, errlen, "cannot listen on %s (in use, or not an address of this machine)", listen);
        freeaddrinfo(ai);
        return NULL;
    }
    const union MHD_DaemonInfo *info = mhd.get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
    char shown[300];
    if (ai->ai_family == AF_INET6)
        snprintf(shown, sizeof(shown), "[%s]", host);
    else
        str_copy(shown, host, sizeof(shown));
    /* The bound port on its own line, so that a caller that asked for port 0 can read it. */
    fprintf(stderr, "iotriage export: listening on http://%s:%u/metrics\n", shown,
            info ? (unsigned)info->port : 0u);
    freeaddrinfo(ai);
    return d;
}

/* ---- The textfile ------------------------------------------------------------------------ */

#define TMP_TRIES 8

struct textfile {
    const char *path;                /* as given, for messages */
    char *name;                      /* its last component, in dirfd */
    char *tmp;                       /* NAME.tmp.PID[.RANDOM]: never ends in .prom, never read */
    size_t tmpcap;
    int dirfd;
};

static int textfile_open(struct textfile *t, const char *path, char *err, size_t errlen)
{
    size_t n = strlen(path);
    if (n < 6 || strcmp(path + n - 5, ".prom") != 0 || path[n - 6] == '/') {
        snprintf(err, errlen, "--textfile %s: the name must end in .prom (node_exporter's "
                 "textfile collector reads nothing else)", path);
        return -EINVAL;
    }
    char *dir = xstrdup(path);
    char *slash = strrchr(dir, '/');
    if (slash == dir)
        dir[1] = '\0';
    else if (slash)
        *slash = '\0';
    else
        str_copy(dir, ".", n + 1);
    t->dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    int e = errno;
    if (t->dirfd < 0) {
        snprintf(err, errlen, "--textfile %s: directory %s: %s", path, dir, strerror(e));
        free(dir);
        return -e;
    }
    free(dir);
    t->path = path;
    slash = strrchr(path, '/');
    t->name = xstrdup(slash ? slash + 1 : path);
    t->tmpcap = strlen(t->name) + 48;
    t->tmp = xmalloc(t->tmpcap);
    return 0;
}

static unsigned tmp_suffix(void)
{
    unsigned v;
    if (getrandom(&v, sizeof(v), GRND_NONBLOCK) == (ssize_t)sizeof(v))
        return v;
    return (unsigned)(clock_mono() * 1e9);
}

/* A temporary file made here and now (O_EXCL), in the textfile's directory: a name
 * already there, a file or a link anyone may have planted in a shared directory, is
 * never opened, truncated or removed; another name is tried. Returns the fd or -errno. */
static int textfile_create(struct textfile *t)
{
    for (int i = 0; i < TMP_TRIES; i++) {
        if (i == 0)
            snprintf(t->tmp, t->tmpcap, "%s.tmp.%ld", t->name, (long)getpid());
        else
            snprintf(t->tmp, t->tmpcap, "%s.tmp.%ld.%08x", t->name, (long)getpid(),
                     tmp_suffix());
        int fd = openat(t->dirfd, t->tmp,
                        O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
        if (fd >= 0)
            return fd;
        if (errno != EEXIST)
            return -errno;
    }
    return -EEXIST;
}

static int write_all(int fd, const char *p, size_t n)
{
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        p += w, n -= (size_t)w;
    }
    return 0;
}

/* Write, fsync, rename: the collector sees the old page or the new one, whole, also
 * after a crash. The directory is fsync'd so the rename itself survives one. */
static int textfile_write(struct textfile *t, const char *text, size_t len)
{
    int fd = textfile_create(t);
    if (fd < 0)
        return fd;
    int rc = write_all(fd, text, len);
    if (rc == 0 && fsync(fd) < 0)
        rc = -errno;
    if (close(fd) < 0 && rc == 0)
        rc = -errno;
    if (rc == 0 && renameat(t->dirfd, t->tmp, t->dirfd, t->name) < 0)
        rc = -errno;
    if (rc < 0) {
        unlinkat(t->dirfd, t->tmp, 0);   /* the file made above, nothing else */
        return rc;
    }
    fsync(t->dirfd);
    return 0;
}

static void textfile_close(struct textfile *t)
{
    if (t->dirfd >= 0)
        close(t->dirfd);
    free(t->name);
    free(t->tmp);
    t->name = t->tmp = NULL;
    t->dirfd = -1;
}

/* ---- The sampling loop --------------------------------------------------------------------- */

static void sleep_until(double deadline)
{
    struct timespec ts = { .tv_sec = (time_t)deadline };
    ts.tv_nsec = (long)((deadline - (double)ts.tv_sec) * 1e9);
    while (!export_stop && clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
        ;
}

/* ---- The sink: one finished sample in, a page out ------------------------------------------ */

#define LENSES_MAX 8

struct export_sink {
    struct pages pages;
    struct MHD_Daemon *http;         /* NULL: no --listen */
    struct textfile tf;
    struct metrics_meta meta;
    struct metrics_lens lenses[LENSES_MAX];
    size_t nlenses;
};

static struct page *page_build(const struct export_sink *k, const struct result *r,
                               const struct verdicts *v)
{
    struct page *p = xcalloc(1, sizeof(*p));
    atomic_init(&p->refs, 1);
    for (int fmt = 0; fmt < 2; fmt++) {
        FILE *f = open_memstream(&p->text[fmt], &p->len[fmt]);
        if (!f) {
            fprintf(stderr, "iotriage export: open_memstream: %s\n", strerror(errno));
            abort();                 /* out of memory, as xmalloc would */
        }
        metrics_format(f, r, v, (enum metrics_fmt)fmt, &k->meta, k->lenses, k->nlenses);
        if (fclose(f) != 0) {
            fputs("iotriage export: out of memory formatting a page\n", stderr);
            abort();
        }
    }
    return p;
}

int export_sink_open(struct export_sink **out, const struct export_opts *o, char *err, size_t errlen)
{
    struct export_sink *k = xcalloc(1, sizeof(*k));
    k->tf.dirfd = -1;
    pthread_mutex_init(&k->pages.lock, NULL);
    k->meta = (struct metrics_meta){ .version = o->version, .refresh_seconds = (double)NAN,
                                     .start_time = clock_wall() };
    int rc = 0;
    if (o->textfile && (rc = textfile_open(&k->tf, o->textfile, err, errlen)) < 0)
        goto fail;
    if (o->listen || !o->textfile) {
        /* The HTTP thread inherits this mask: signals go to the caller's thread (the
         * sampling loop), whose sleep they cut short. */
        sigset_t block, old;
        sigemptyset(&block);
        sigaddset(&block, SIGINT);
        sigaddset(&block, SIGTERM);
        sigaddset(&block, SIGHUP);
        pthread_sigmask(SIG_BLOCK, &block, &old);
        k->http = http_start(o, &k->pages, err, errlen);
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        if (!k->http) {
            rc = -EADDRNOTAVAIL;
            goto fail;
        }
    }
    *out = k;
    return 0;
fail:
    export_sink_close(k);
    *out = NULL;
    return rc;
}

int export_sink_add_lens(struct export_sink *k, const struct metrics_lens *lens)
{
    if (k->nlenses == LENSES_MAX)
        return -ENOSPC;
    k->lenses[k->nlenses++] = *lens;
    return 0;
}

int export_sink_emit(void *ctx, const struct result *r, const struct verdicts *v,
                     char *err, size_t errlen)
{
    struct export_sink *k = ctx;
    k->meta.refreshes++;
    /* The snapshot's clock was read when its sampling began: from there to here is
     * sampling, rates and verdicts. */
    k->meta.refresh_seconds = clock_mono() - r->cur->mono;
    struct page *p = page_build(k, r, v);
    int rc = 0;
    if (k->tf.tmp) {
        rc = textfile_write(&k->tf, p->text[METRICS_PROM_TEXT], p->len[METRICS_PROM_TEXT]);
        if (rc < 0)
            snprintf(err, errlen, "writing %s: %s", k->tf.path, strerror(-rc));
    }
    pages_publish(&k->pages, p);     /* served even when the textfile failed */
    return rc;
}

void export_sink_close(struct export_sink *k)
{
    if (!k)
        return;
    if (k->http)
        mhd.stop_daemon(k->http);    /* joins the HTTP thread: no scrape holds a page after */
    pages_publish(&k->pages, NULL);
    pthread_mutex_destroy(&k->pages.lock);
    textfile_close(&k->tf);
    free(k);
}

/* ---- The sampling loop: the pipeline's frames, each to the exporter's sink ------------------ */

static int frame_emit(void *ctx, const struct frame *f, char *err, size_t errlen)
{
    return export_sink_emit(ctx, f->res, f->ver, err, errlen);
}

int export_run(const struct export_opts *o)
{
    char err[512] = "";
    act_set_read_only();             /* nothing here acts; make sure nothing can */
    export_stop = 0;

    struct sigaction sa = { .sa_handler = on_signal };
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);

    struct pipeline_opts po = { .sampler = { .proc_root = o->proc_root, .sys_root = o->sys_root,
                                             .defer_idle_scans = true, .defer_lens = true } };
    struct pipeline *p;
    if (pipeline_open(&p, &po, err, sizeof(err)) < 0) {
        fprintf(stderr, "iotriage export: %s\n", err);
        return 2;
    }
    struct export_sink *k;
    if (export_sink_open(&k, o, err, sizeof(err)) < 0) {
        fprintf(stderr, "iotriage export: %s\n", err);
        pipeline_close(p);
        return 2;
    }
    /* The scheduler trials recorded on this machine (export_trials.h) */
    char tpath[PATH_MAX];
    struct trials *tr = trials_new(trials_default_path(tpath, sizeof(tpath)));
    struct metrics_lens tl = { .name = "trials", .write = trials_write, .ctx = tr };
    export_sink_add_lens(k, &tl);
    struct sink ks = { .name = "exporter", .emit = frame_emit, .ctx = k };
    struct sink *kp = &ks;

    double delay = o->delay_s > 0 ? o->delay_s : EXPORT_DEFAULT_DELAY;
    char last_err[512] = "";
    double next = clock_mono();
    for (long i = 0; (o->iterations == 0 || i < o->iterations) && !export_stop; i++) {
        err[0] = '\0';
        char terr[PATH_MAX + 128] = "";
        if (trials_refresh(tr, terr, sizeof(terr)) < 0)
            fprintf(stderr, "iotriage export: %s\n", terr);
        int rc;
        if (i == 0) {
            /* The first page has what needs no interval (schedulers, nr_requests, the
             * labels ignored outright), so a scrape right after the start finds a page. */
            pipeline_add_sink(p, kp);
            rc = pipeline_first(p, err, sizeof(err));
        } else {
            next += delay;
            sleep_until(next);
            if (export_stop)
                break;
            rc = pipeline_step(p, err, sizeof(err));
        }
        if (rc < 0) {
            /* A failing textfile (disk full) is said once, not every refresh; the sink
             * goes back on so that the next write may succeed, and HTTP still serves. */
            if (strcmp(err, last_err) != 0)
                fprintf(stderr, "iotriage export: %s\n", err);
            str_copy(last_err, err, sizeof(last_err));
            pipeline_add_sink(p, kp);
        } else {
            last_err[0] = '\0';
        }
        /* A machine too slow to keep up: start the next interval from now, not in the past. */
        double now = clock_mono();
        if (next < now - delay)
            next = now;
    }
    pipeline_close(p);
    export_sink_close(k);
    trials_free(tr);
    return 0;
}

/* ---- Arguments ------------------------------------------------------------------------------ */

static void export_usage(FILE *f)
{
    fputs("Usage: iotriage export [--listen ADDR:PORT] [--textfile PATH.prom] [-d SECONDS]\n"
          "Serves what iotriage knows and node_exporter does not (schedulers, nr_requests,\n"
          "saturation, ignored I/O priorities) as Prometheus metrics (docs/metrics.md).\n"
          "\n"
          "  -l, --listen ADDR:PORT  serve GET /metrics over HTTP (default " EXPORT_DEFAULT_LISTEN
          ";\n"
          "                          other interfaces only when given: 0.0.0.0:" EXPORT_DEFAULT_PORT ")\n"
          "  -t, --textfile PATH     write PATH (ending in .prom) for node_exporter's textfile\n"
          "                          collector after every sample; alone, no HTTP\n"
          "  -d, --delay SECONDS     time between samples, fractional (default 5)\n"
          "  -n, --iterations N      stop after N samples\n"
          "  -h, --help              this help\n", f);
}

__attribute__((format(printf, 1, 2), noreturn))
static void export_bad_usage(const char *fmt, ...);
static void export_bad_usage(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("iotriage export: ", stderr);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputs(" (try iotriage export --help)\n", stderr);
    exit(2);
}

int export_main(int argc, char **argv, const char *version)
{
    enum { OPT_PROC_ROOT = 256, OPT_SYS_ROOT };
    static const struct option longopts[] = {
        { "listen", required_argument, NULL, 'l' },
        { "textfile", required_argument, NULL, 't' },
        { "delay", required_argument, NULL, 'd' },
        { "iterations", required_argument, NULL, 'n' },
        { "proc-root", required_argument, NULL, OPT_PROC_ROOT },
        { "sys-root", required_argument, NULL, OPT_SYS_ROOT },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    struct export_opts o = { .delay_s = EXPORT_DEFAULT_DELAY, .version = version };
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, ":l:t:d:n:h", longopts, NULL)) != -1) {
        switch (c) {
        case 'l': o.listen = optarg; break;
        case 't': o.textfile = optarg; break;
        case 'd': {
            char *end;
            errno = 0;
            double x = strtod(optarg, &end);
            if (*optarg == '\0' || *end != '\0' || errno || !(x >= 0.05 && x <= 86400.0))
                export_bad_usage("invalid delay '%s' (seconds, 0.05 to 86400)", optarg);
            o.delay_s = x;
            break;
        }
        case 'n': {
            char *end;
            errno = 0;
            long x = strtol(optarg, &end, 10);
            if (*optarg == '\0' || *end != '\0' || errno || x < 1)
                export_bad_usage("invalid value for -n: '%s'", optarg);
            o.iterations = x;
            break;
        }
        case OPT_PROC_ROOT: o.proc_root = optarg; break;
        case OPT_SYS_ROOT: o.sys_root = optarg; break;
        case 'h': export_usage(stdout); return 0;
        case ':': export_bad_usage("option %s needs a value", argv[optind - 1]); break;
        default: export_bad_usage("unknown option %s", argv[optind - 1]); break;
        }
    }
    if (optind < argc)
        export_bad_usage("unexpected argument '%s'", argv[optind]);
    return export_run(&o);
}
