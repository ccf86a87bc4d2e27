/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Tests for store/store*.c: the recorder's hourly zstd files, in temporary directories.
 *
 * Sample lines are made up here ({"version":1,"ts":T,"n":N}); the store does not decode
 * JSON, it only reads `ts`. Wall times are injected, so hours, retention ages and seeks
 * are exact. Damage is made by hand: a file cut inside its last frame, a byte flipped
 * inside a middle frame (the frame's checksum or its block structure catches it), garbage.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "delta.h"
#include "recorder.h"
#include "store/store.h"

/* 2026-12-01T00:00:00Z */
#define T0 1796083200.0

static char tmpdir[256];

static int rm_one(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb, (void)flag, (void)ftw;
    return remove(p);
}

static int setup(void **state)
{
    (void)state;
    snprintf(tmpdir, sizeof(tmpdir), "/tmp/test_store.XXXXXX");
    assert_non_null(mkdtemp(tmpdir));
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    nftw(tmpdir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
    return 0;
}

static const char *path_in(const char *name)
{
    static char p[2][512];
    static int k;
    k ^= 1;
    snprintf(p[k], sizeof(p[k]), "%s/%s", tmpdir, name);
    return p[k];
}

static size_t sample(char *buf, size_t n, double ts, int i)
{
    /* Some repetition and some noise, like real samples, so frames have several blocks. */
    int k = snprintf(buf, n, "{\"version\":1,\"ts\":%.3f,\"n\":%d,\"pad\":\"%0*d\"}", ts, i,
                     40 + i % 50, i * 7919);
    return (size_t)k;
}

static struct store_writer *writer(const struct store_opts *o)
{
    struct store_writer *w;
    char err[256] = "";
    int rc = store_open_writer(&w, tmpdir, o, err, sizeof(err));
    if (rc)
        fail_msg("open writer: %s", err);
    return w;
}

/* Append n samples from wall t, dt apart, flushing every `every` samples. */
static void put(struct store_writer *w, double t, double dt, int n, int every, int first)
{
    char line[256], err[256];
    for (int i = 0; i < n; i++) {
        double ts = t + dt * i;
        size_t len = sample(line, sizeof(line), ts, first + i);
        int rc = store_append(w, ts, line, len, err, sizeof(err));
        if (rc)
            fail_msg("append %d: %s", i, err);
        if (every && (i + 1) % every == 0 && store_flush(w, ts, err, sizeof(err)))
            fail_msg("flush: %s", err);
    }
}

static void close_writer(struct store_writer *w)
{
    char err[256] = "";
    if (store_close(w, err, sizeof(err)))
        fail_msg("close: %s", err);
}

struct got {
    int n;                      /* samples */
    int ids[4096];
    double ts[4096];
    uint64_t offs[4096];
    char files[4096][16];       /* last 16 bytes of the file name */
    int damages;
    char damage[4][512];
};

/* The "n" of a sample line, which is not NUL-terminated (the reader's buffer). */
static int n_of(const char *text, size_t len)
{
    const char *p = memmem(text, len, "\"n\":", 4);
    int v = 0;
    if (!p)
        return -1;
    for (p += 4; p < text + len && *p >= '0' && *p <= '9'; p++)
        v = v * 10 + (*p - '0');
    return v;
}

static void read_all(struct store_reader *r, struct got *g)
{
    memset(g, 0, sizeof(*g));
    for (;;) {
        struct store_line l;
        char err[512] = "";
        int rc = store_next(r, &l, err, sizeof(err));
        if (rc == 0)
            break;
        if (rc < 0) {
            assert_true(err[0] != '\0');
            assert_null(strchr(err, '\n'));
            if (g->damages < 4)
                snprintf(g->damage[g->damages], sizeof(g->damage[0]), "%s", err);
            g->damages++;
            assert_true(g->damages < 100);
            continue;
        }
        assert_true(g->n < 4096);
        g->ids[g->n] = n_of(l.text, l.len);
        g->ts[g->n] = l.ts;
        g->offs[g->n] = l.offset;
        size_t fl = strlen(l.file);
        snprintf(g->files[g->n], sizeof(g->files[0]), "%s", l.file + (fl > 15 ? fl - 15 : 0));
        g->n++;
    }
}

static void read_path(const char *path, struct got *g)
{
    struct store_reader *r;
    char err[256] = "";
    if (store_open_reader(&r, path, err, sizeof(err)))
        fail_msg("open reader: %s", err);
    read_all(r, g);
    store_close_reader(r);
}

static off_t size_of(const char *p)
{
    struct stat st;
    assert_int_equal(lstat(p, &st), 0);
    return st.st_size;
}

/* ---- names and times --------------------------------------------------------------- */

static void test_names(void **state)
{
    (void)state;
    char name[32];
    double h;
    assert_int_equal(store_file_name(name, sizeof(name), T0 + 3 * 3600 + 1799.5), 0);
    assert_string_equal(name, "2026-12-01T03.iotr.zst");
    assert_true(store_name_parse(name, &h));
    assert_true(h == T0 + 3 * 3600);
    assert_true(store_name_parse("2024-02-29T23.iotr.zst", &h));       /* leap day */
    assert_true(h == 1709247600.0);
    static const char *bad[] = {
        "2025-02-29T00.iotr.zst", "2026-13-01T03.iotr.zst", "2026-12-01T24.iotr.zst",
        "2026-12-00T03.iotr.zst", "2026-12-01T03.iotr.zst.bak", "x2026-12-01T03.iotr.zst",
        "2026-12-01 03.iotr.zst", "2026-12-01T3.iotr.zst", "2026-12-01T03.iotr",
        "1969-12-31T23.iotr.zst", "2026-1a-01T03.iotr.zst", "", ".iotr.zst",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        if (store_name_parse(bad[i], &h))
            fail_msg("accepted %s", bad[i]);
    assert_int_equal(store_file_name(name, sizeof(name), -1), -ERANGE);
    assert_int_equal(store_file_name(name, sizeof(name), (double)NAN), -ERANGE);
}

static void test_parse_time(void **state)
{
    (void)state;
    double now = T0 + 12 * 3600 + 34 * 60 + 56;      /* 2026-12-01 12:34:56Z */
    double t;
    setenv("TZ", "UTC0", 1);
    tzset();
    assert_int_equal(store_parse_time("03:10", now, &t), 0);
    assert_true(t == T0 + 3 * 3600 + 600);
    assert_int_equal(store_parse_time("03:10:30", now, &t), 0);
    assert_true(t == T0 + 3 * 3600 + 630);
    assert_int_equal(store_parse_time("2026-11-30 23:59", now, &t), 0);
    assert_true(t == T0 - 60);
    assert_int_equal(store_parse_time("2026-12-01T03:10", now, &t), 0);
    assert_true(t == T0 + 3 * 3600 + 600);
    assert_int_equal(store_parse_time("2026-12-01", now, &t), 0);
    assert_true(t == T0);
    assert_int_equal(store_parse_time("-2h", now, &t), 0);
    assert_true(t == now - 7200);
    assert_int_equal(store_parse_time("-30m", now, &t), 0);
    assert_true(t == now - 1800);
    assert_int_equal(store_parse_time("-1h30m", now, &t), 0);
    assert_true(t == now - 5400);
    assert_int_equal(store_parse_time("-1d", now, &t), 0);
    assert_true(t == now - 86400);
    assert_int_equal(store_parse_time("-45s", now, &t), 0);
    assert_true(t == now - 45);
    assert_int_equal(store_parse_time("now", now, &t), 0);
    assert_true(t == now);
    assert_int_equal(store_parse_time("@1764558600.5", now, &t), 0);
    assert_true(t == 1764558600.5);

    /* Central European time: 03:10 local is 02:10Z in winter; the day is local too. */
    setenv("TZ", "CET-1CEST,M3.5.0,M10.5.0/3", 1);
    tzset();
    assert_int_equal(store_parse_time("03:10", now, &t), 0);
    assert_true(t == T0 + 2 * 3600 + 600);
    assert_int_equal(store_parse_time("2026-07-01 03:10", now, &t), 0);
    assert_true(t == 1782868200.0);                   /* 01:10Z: summer time */
    /* 23:30Z on Nov 30 is already Dec 1 00:30 local: "01:00" is that local day. */
    assert_int_equal(store_parse_time("01:00", T0 - 1800, &t), 0);
    assert_true(t == T0);
    /* 02:30 on the last Sunday of March does not exist there. */
    assert_int_equal(store_parse_time("2026-03-29 02:30", now, &t), -EINVAL);

    static const char *bad[] = {
        "", "3:10", "25:00", "03:60", "03:10:", "03:10:5", "2026-02-30 01:00",
        "2026-12-01 03", "2026-12-01x03:10", "-", "-2", "-2x", "-h", "+2h", "@", "@x",
        "@-5", "yesterday", "03:10 ", " 03:10", "-2h ", "2026-12-1 03:10",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        if (store_parse_time(bad[i], now, &t) != -EINVAL)
            fail_msg("accepted \"%s\"", bad[i]);
    setenv("TZ", "UTC0", 1);
    tzset();
}

/* ---- round trips ------------------------------------------------------------------- */

static void test_roundtrip(void **state)
{
    (void)state;
    struct store_writer *w = writer(NULL);
    double t = T0 + 3600 + 5;
    put(w, t, 1.0, 300, 7, 0);                 /* 300 samples in one hour, 43 frames */
    struct store_stats st;
    store_writer_stats(w, &st);
    assert_int_equal(st.appended, 300);
    assert_int_equal(st.frames, 42);           /* the last 6 are still in memory */
    close_writer(w);
    assert_true(size_of(path_in("2026-12-01T01.iotr.zst")) > 0);

    static struct got g;
    read_path(tmpdir, &g);
    assert_int_equal(g.damages, 0);
    assert_int_equal(g.n, 300);
    for (int i = 0; i < 300; i++) {
        assert_int_equal(g.ids[i], i);
        assert_true(fabs(g.ts[i] - (t + i)) < 1e-6);
    }
    /* The single file reads the same; so does a plain JSON-lines file. */
    read_path(path_in("2026-12-01T01.iotr.zst"), &g);
    assert_int_equal(g.n, 300);
    assert_int_equal(g.damages, 0);

    FILE *f = fopen(path_in("plain.jsonl"), "w");
    assert_non_null(f);
    char line[256];
    for (int i = 0; i < 5; i++) {
        sample(line, sizeof(line), t + i, i);
        fprintf(f, "%s\n%s", line, i == 2 ? "\n  \n" : "");   /* blank lines are not samples */
    }
    fclose(f);
    read_path(path_in("plain.jsonl"), &g);
    assert_int_equal(g.n, 5);
    assert_int_equal(g.damages, 0);
    assert_int_equal(g.ids[4], 4);

    /* Lines are one line each. One writer per directory. */
    w = writer(NULL);
    char err[256];
    struct store_writer *w2;
    assert_int_equal(store_open_writer(&w2, tmpdir, NULL, err, sizeof(err)), -EBUSY);
    assert_non_null(strstr(err, "another recorder"));
    assert_int_equal(store_append(w, t, "{\"a\":1}\n{\"b\":2}", 15, err, sizeof(err)), -EINVAL);
    assert_int_equal(store_append(w, t, "\n", 1, err, sizeof(err)), -EINVAL);
    assert_int_equal(store_append(w, (double)NAN, "{}", 2, err, sizeof(err)), -ERANGE);
    /* Big samples: frames end by themselves, so none decodes past the reader's bound. */
    size_t big = 3u << 20;
    char *b = malloc(STORE_LINE_MAX + 2);
    assert_non_null(b);
    for (int i = 0; i < 6; i++) {
        int k = snprintf(b, 64, "{\"ts\":%.3f,\"n\":%d,\"x\":\"", t + 7200 + i, 7000 + i);
        memset(b + k, 'a' + i, big - (size_t)k - 2);
        memcpy(b + big - 2, "\"}", 2);
        assert_int_equal(store_append(w, t + 7200 + i, b, big, err, sizeof(err)), 0);
    }
    memset(b, 'x', STORE_LINE_MAX + 1);
    assert_int_equal(store_append(w, t + 7300, b, STORE_LINE_MAX + 1, err, sizeof(err)), -E2BIG);
    free(b);
    struct store_stats bs;
    store_writer_stats(w, &bs);
    assert_int_equal(bs.frames, 3);           /* 2 samples (6 MiB) each: past 4 MiB */
    close_writer(w);
    read_path(path_in("2026-12-01T03.iotr.zst"), &g);
    assert_int_equal(g.n, 6);
    assert_int_equal(g.damages, 0);
    assert_int_equal(g.ids[5], 7005);
}

static void test_hours(void **state)
{
    (void)state;
    struct store_writer *w = writer(NULL);
    /* 02:59:00 to 05:58:30, every 30 s: four hours touched, files 02 03 04 05. */
    double t = T0 + 2 * 3600 + 59 * 60;
    put(w, t, 30.0, 360, 10, 0);
    close_writer(w);
    static const char *names[] = { "2026-12-01T02.iotr.zst", "2026-12-01T03.iotr.zst",
                                   "2026-12-01T04.iotr.zst", "2026-12-01T05.iotr.zst" };
    for (int i = 0; i < 4; i++)
        assert_true(size_of(path_in(names[i])) > 0);

    struct store_reader *r;
    char err[256];
    assert_int_equal(store_open_reader(&r, tmpdir, err, sizeof(err)), 0);
    assert_int_equal(store_reader_files(r), 4);
    assert_string_equal(store_reader_file(r, 0), path_in(names[0]));
    static struct got g;
    read_all(r, &g);
    store_close_reader(r);
    assert_int_equal(g.damages, 0);
    assert_int_equal(g.n, 360);
    for (int i = 0; i < 360; i++) {
        assert_int_equal(g.ids[i], i);
        /* Each sample is in the file of its own hour. */
        char want[32];
        store_file_name(want, sizeof(want), t + 30.0 * i);
        assert_non_null(strstr(want, g.files[i]));
    }
    /* Every sample's position brings the reader back to it, stepping backwards across
     * files and frames, and reading on from there continues in order. */
    static struct store_pos pos[360];
    assert_int_equal(store_open_reader(&r, tmpdir, err, sizeof(err)), 0);
    struct store_line l;
    for (int i = 0; i < 360; i++) {
        assert_int_equal(store_next(r, &l, err, sizeof(err)), 1);
        pos[i] = l.pos;
    }
    for (int i = 359; i >= 0; i -= 7) {
        if (store_goto(r, &pos[i], err, sizeof(err)))
            fail_msg("goto %d: %s", i, err);
        assert_int_equal(store_next(r, &l, err, sizeof(err)), 1);
        assert_int_equal(n_of(l.text, l.len), i);
        if (i < 359) {
            assert_int_equal(store_next(r, &l, err, sizeof(err)), 1);
            assert_int_equal(n_of(l.text, l.len), i + 1);
        }
    }
    struct store_pos bad = pos[5];
    bad.file = 99;
    assert_int_equal(store_goto(r, &bad, err, sizeof(err)), -ERANGE);
    bad = pos[5];
    bad.line = 1u << 30;
    assert_int_equal(store_goto(r, &bad, err, sizeof(err)), -ERANGE);
    store_close_reader(r);

    assert_int_equal(g.ids[1], 1);
    assert_non_null(strstr(names[0], g.files[1]));
    assert_non_null(strstr(names[1], g.files[2]));      /* 03:00:00 */

    /* A second writer on the same hour appends to its file. */
    w = writer(NULL);
    put(w, T0 + 5 * 3600 + 3599, 1.0, 1, 0, 1000);
    close_writer(w);
    read_path(tmpdir, &g);
    assert_int_equal(g.n, 361);
    assert_int_equal(g.ids[360], 1000);
    assert_int_equal(g.damages, 0);
}

static void test_seek(void **state)
{
    (void)state;
    struct store_writer *w = writer(NULL);
    double t = T0 + 2 * 3600 + 59 * 60;         /* samples every 30 s for 3 hours */
    put(w, t, 30.0, 360, 10, 0);
    close_writer(w);
    struct store_reader *r;
    char err[256];
    assert_int_equal(store_open_reader(&r, tmpdir, err, sizeof(err)), 0);
    struct store_line l;

    /* 03:10:00 exactly: sample 22 (02:59 + 11 minutes). */
    assert_int_equal(store_seek(r, T0 + 3 * 3600 + 600), 0);
    assert_int_equal(store_next(r, &l, err, sizeof(err)), 1);
    assert_int_equal(n_of(l.text, l.len), 22);
    assert_int_equal(store_next(r, &l, err, sizeof(err)), 1);
    assert_int_equal(n_of(l.text, l.len), 23);
    /* 03:10:01: the next one at or after it. */
    assert_int_equal(store_seek(r, T0 + 3 * 3600 + 601), 0);
    assert_int_equal(store_next(r, &l, err, sizeof(err)), 1);
    assert_int_equal(n_of(l.text, l.len), 23);
    /* Back to an earlier hour, then across the 04:00 boundary by iterating. */
    assert_int_equal(store_seek(r, T0 + 3 * 3600 + 3599), 0);
    assert_int_equal(store_next(r, &l, err, sizeof(err)), 1);
    assert_int_equal(n_of(l.text, l.len), 122);        /* 04:00:00 */
    assert_non_null(strstr(l.file, "T04.iotr.zst"));
    /* Before everything: the first sample; after everything: none. */
    assert_int_equal(store_seek(r, T0), 0);
    assert_int_equal(store_next(r, &l, err, sizeof(err)), 1);
    assert_int_equal(n_of(l.text, l.len), 0);
    assert_int_equal(store_seek(r, T0 + 6 * 3600), -ENOENT);
    assert_int_equal(store_next(r, &l, err, sizeof(err)), 0);
    /* In the gap between the last sample of an hour's file and the next file. */
    assert_int_equal(store_seek(r, T0 + 5 * 3600 + 58 * 60 + 31), -ENOENT);
    assert_int_equal(store_seek(r, T0 + 5 * 3600 + 58 * 60 + 30), 0);
    assert_int_equal(store_next(r, &l, err, sizeof(err)), 1);
    assert_int_equal(n_of(l.text, l.len), 359);
    store_close_reader(r);

    /* A single file is scanned from its start. */
    assert_int_equal(store_open_reader(&r, path_in("2026-12-01T04.iotr.zst"), err, sizeof(err)), 0);
    assert_int_equal(store_seek(r, T0 + 4 * 3600 + 1800), 0);
    assert_int_equal(store_next(r, &l, err, sizeof(err)), 1);
    assert_int_equal(n_of(l.text, l.len), 182);
    store_close_reader(r);

    /* A damage on the way to the sample is reported before it. */
    int fd = open(path_in("2026-12-01T03.iotr.zst"), O_WRONLY);
    assert_true(fd >= 0);
    assert_int_equal(pwrite(fd, "garbage!", 8, 0), 8);
    close(fd);
    assert_int_equal(store_open_reader(&r, tmpdir, err, sizeof(err)), 0);
    assert_int_equal(store_seek(r, T0 + 3 * 3600 + 600), 0);
    err[0] = '\0';
    assert_int_equal(store_next(r, &l, err, sizeof(err)), -EBADMSG);
    assert_non_null(strstr(err, "T03.iotr.zst: damaged at byte 0"));
    assert_int_equal(store_next(r, &l, err, sizeof(err)), 1);
    assert_true(l.ts >= T0 + 3 * 3600 + 600);
    store_close_reader(r);
}

/* ---- damage ------------------------------------------------------------------------ */

/* Write 3 hours x 4 frames of 10 samples; return the frame offsets of hour 01 in offs[]. */
static void three_hours(uint64_t offs[4])
{
    struct store_writer *w = writer(NULL);
    for (int h = 0; h < 3; h++)
        put(w, T0 + (1 + h) * 3600, 1.0, 40, 10, h * 100);
    close_writer(w);
    static struct got g;
    read_path(path_in("2026-12-01T01.iotr.zst"), &g);
    assert_int_equal(g.n, 40);
    for (int i = 0; i < 4; i++)
        offs[i] = g.offs[i * 10];
    assert_int_equal(offs[0], 0);
    assert_true(offs[1] > 0 && offs[2] > offs[1] && offs[3] > offs[2]);
}

static void test_truncated(void **state)
{
    (void)state;
    uint64_t offs[4];
    three_hours(offs);
    /* Cut hour 02 inside its third frame, as a crash in the middle of a write would. */
    static struct got g;
    read_path(path_in("2026-12-01T02.iotr.zst"), &g);
    uint64_t f3 = g.offs[20];
    assert_int_equal(truncate(path_in("2026-12-01T02.iotr.zst"), (off_t)f3 + 9), 0);

    read_path(tmpdir, &g);
    assert_int_equal(g.damages, 1);
    char want[128];
    snprintf(want, sizeof(want), "T02.iotr.zst: damaged at byte %llu: frame cut short",
             (unsigned long long)f3);
    if (!strstr(g.damage[0], want))
        fail_msg("damage \"%s\", want \"%s\"", g.damage[0], want);
    /* Hour 01 whole, hour 02's first two frames, then hour 03 whole. */
    assert_int_equal(g.n, 40 + 20 + 40);
    assert_int_equal(g.ids[59], 119);
    assert_int_equal(g.ids[60], 200);
    assert_int_equal(g.ids[99], 239);

    /* A writer reopening that hour cuts the torn bytes off before appending. */
    struct store_writer *w = writer(NULL);
    put(w, T0 + 2 * 3600 + 100, 1.0, 3, 0, 500);
    close_writer(w);
    read_path(path_in("2026-12-01T02.iotr.zst"), &g);
    assert_int_equal(g.damages, 0);
    assert_int_equal(g.n, 23);
    assert_int_equal(g.ids[20], 500);

    /* A plain recording whose last line was cut: read up to it, the cut reported. */
    FILE *f = fopen(path_in("plain.jsonl"), "w");
    assert_non_null(f);
    fputs("{\"ts\":1}\n{\"ts\":2}\n{\"ts\":3,\"dev", f);
    fclose(f);
    read_path(path_in("plain.jsonl"), &g);
    assert_int_equal(g.n, 2);
    assert_int_equal(g.damages, 1);
    assert_non_null(strstr(g.damage[0], "plain.jsonl: damaged at byte 18: last line cut short"));
    assert_true(g.ts[1] == 2.0);
}

/* Write bytes to name, replacing it. */
static void put_file(const char *name, const unsigned char *b, size_t n)
{
    FILE *f = fopen(path_in(name), "w");
    assert_non_null(f);
    assert_int_equal(fwrite(b, 1, n, f), n);
    assert_int_equal(fclose(f), 0);
}

/* A torn frame with whole frames after it (a crash, then a restart that appended): a new
 * restart must keep what follows it. The torn frame's block headers go on into the next
 * frame and may "end" inside it; the trim must not take that for the file's end. Every
 * cut of the middle frame is tried, with and without a torn frame at the very end too
 * (which alone is cut off). */
static void test_torn_middle(void **state)
{
    (void)state;
    const char *name = "2026-12-01T01.iotr.zst";
    struct store_writer *w = writer(NULL);
    put(w, T0 + 3600, 1.0, 2, 2, 0);          /* frame A: samples 0, 1 */
    put(w, T0 + 3602, 1.0, 2, 2, 10);         /* frame B: 10, 11 */
    put(w, T0 + 3604, 1.0, 6, 6, 20);         /* frame C: 20..25, longer than B */
    close_writer(w);
    static struct got g;
    read_path(path_in(name), &g);
    assert_int_equal(g.n, 10);
    size_t la = (size_t)g.offs[2], lb = (size_t)(g.offs[4] - g.offs[2]);
    size_t all = (size_t)size_of(path_in(name)), lc = all - la - lb;
    unsigned char *orig = malloc(all), *buf = malloc(all + lb);
    FILE *f = fopen(path_in(name), "r");
    assert_int_equal(fread(orig, 1, all, f), all);
    fclose(f);
    static const int want[] = { 0, 1, 20, 21, 22, 23, 24, 25, 90 };
    int lost = 0;
    for (int tail = 0; tail < 2; tail++) {
        for (size_t k = 1; k < lb; k++) {
            /* A, then B cut after k bytes, then C (then B cut again: a torn tail). */
            memcpy(buf, orig, la + k);
            memcpy(buf + la + k, orig + la + lb, lc);
            size_t n = la + k + lc;
            if (tail) {
                memcpy(buf + n, orig + la, k);
                n += k;
            }
            put_file(name, buf, n);
            w = writer(NULL);
            put(w, T0 + 3700, 1.0, 1, 0, 90);
            close_writer(w);
            read_path(path_in(name), &g);
            bool whole = g.n == 9 && g.damages == 1;
            for (int i = 0; whole && i < 9; i++)
                whole = g.ids[i] == want[i];
            if (!whole) {
                if (lost++ < 3)
                    print_message("tail %d, B cut at %zu of %zu: %d samples, %d damages (%s)\n",
                                  tail, k, lb, g.n, g.damages, g.damage[0]);
                continue;
            }
            char at[64];
            snprintf(at, sizeof(at), "damaged at byte %zu: ", la);
            assert_non_null(strstr(g.damage[0], at));
            /* The torn middle stays on disk; a torn tail is cut off. */
            assert_true((size_t)size_of(path_in(name)) > la + k + lc);
            if (tail)
                assert_true((size_t)size_of(path_in(name)) < n + lc);
        }
    }
    free(orig);
    free(buf);
    if (lost)
        fail_msg("%d of %zu cuts of a middle frame lost samples after a restart", lost, 2 * (lb - 1));
}

static void test_corrupt_middle(void **state)
{
    (void)state;
    uint64_t offs[4];
    three_hours(offs);
    const char *p = path_in("2026-12-01T01.iotr.zst");
    /* Flip one byte in the middle of frame 2 (of 4): its lines must not come out. */
    int fd = open(p, O_RDWR);
    assert_true(fd >= 0);
    off_t at = (off_t)(offs[1] + (offs[2] - offs[1]) / 2);
    unsigned char b;
    assert_int_equal(pread(fd, &b, 1, at), 1);
    b ^= 0x5a;
    assert_int_equal(pwrite(fd, &b, 1, at), 1);
    close(fd);

    static struct got g;
    read_path(tmpdir, &g);
    assert_int_equal(g.damages, 1);
    char want[96];
    snprintf(want, sizeof(want), "T01.iotr.zst: damaged at byte %llu: ", (unsigned long long)offs[1]);
    if (!strstr(g.damage[0], want))
        fail_msg("damage \"%s\", want \"%s\"", g.damage[0], want);
    /* Frames 1, 3, 4 of hour 01 (the reader finds the frame after the damage), then 02, 03. */
    assert_int_equal(g.n, 30 + 40 + 40);
    assert_int_equal(g.ids[9], 9);
    assert_int_equal(g.ids[10], 20);
    assert_int_equal(g.ids[29], 39);
    assert_int_equal(g.ids[30], 100);
    for (int i = 0; i < g.n; i++)
        assert_true(g.ids[i] < 10 || g.ids[i] >= 20);

    /* Garbage in front of a file and between frames: skipped to the next frame. */
    const char *p2 = path_in("2026-12-01T02.iotr.zst");
    off_t sz = size_of(p2);
    char *buf = malloc((size_t)sz);
    fd = open(p2, O_RDWR);
    assert_int_equal(pread(fd, buf, (size_t)sz, 0), sz);
    assert_int_equal(ftruncate(fd, 0), 0);
    assert_int_equal(pwrite(fd, "\x28\xb5\x2f\xfd junk", 9, 0), 9);  /* a false magic */
    assert_int_equal(pwrite(fd, buf, (size_t)sz, 9), sz);
    close(fd);
    free(buf);
    read_path(p2, &g);
    assert_int_equal(g.n, 40);
    assert_int_equal(g.damages, 1);
    assert_non_null(strstr(g.damage[0], "damaged at byte 0"));

    /* An unreadable file in the directory: reported, the next file read. */
    assert_int_equal(chmod(p2, 0), 0);
    if (geteuid() != 0) {
        read_path(tmpdir, &g);
        assert_int_equal(g.n, 30 + 40);
        assert_int_equal(g.damages, 2);
    }
    chmod(p2, 0644);

    /* Random bytes as a .zst: a damage, never a sample, never a crash. */
    const char *p3 = path_in("2026-12-01T03.iotr.zst");
    fd = open(p3, O_WRONLY | O_TRUNC);
    unsigned char junk[4096];
    unsigned x = 12345;
    memcpy(junk, "\x28\xb5\x2f\xfd", 4);
    for (size_t i = 4; i < sizeof(junk); i++)
        junk[i] = (unsigned char)((x = x * 1103515245u + 12345u) >> 16);
    assert_int_equal(write(fd, junk, sizeof(junk)), (ssize_t)sizeof(junk));
    close(fd);
    read_path(p3, &g);
    assert_int_equal(g.n, 0);
    assert_true(g.damages >= 1);
}

/* Every damage a seek steps over is returned after it, in order, before the sample. */
static void test_seek_damages(void **state)
{
    (void)state;
    uint64_t offs[4];
    three_hours(offs);
    int fd = open(path_in("2026-12-01T01.iotr.zst"), O_RDWR);
    assert_true(fd >= 0);
    for (int k = 1; k <= 2; k++) {           /* frames 2 and 3 of 4: a flipped byte each */
        off_t at = (off_t)(offs[k] + (offs[k + 1] - offs[k]) / 2);
        unsigned char b;
        assert_int_equal(pread(fd, &b, 1, at), 1);
        b ^= 0x5a;
        assert_int_equal(pwrite(fd, &b, 1, at), 1);
    }
    close(fd);
    struct store_reader *r;
    char err[512] = "";
    assert_int_equal(store_open_reader(&r, tmpdir, err, sizeof(err)), 0);
    assert_int_equal(store_seek(r, T0 + 3600 + 35), 0);    /* in frame 4 */
    for (int k = 1; k <= 2; k++) {
        struct store_line l;
        err[0] = '\0';
        assert_int_equal(store_next(r, &l, err, sizeof(err)), -EBADMSG);
        char want[96];
        snprintf(want, sizeof(want), "T01.iotr.zst: damaged at byte %llu: ", (unsigned long long)offs[k]);
        if (!strstr(err, want))
            fail_msg("damage %d: \"%s\", want \"%s\"", k, err, want);
    }
    struct store_line l;
    assert_int_equal(store_next(r, &l, err, sizeof(err)), 1);
    assert_int_equal(n_of(l.text, l.len), 35);
    /* A seek past the end: the damages it met, then the end. It starts in hour 03: a
     * flipped byte in its second frame. */
    static struct got g;
    read_path(path_in("2026-12-01T03.iotr.zst"), &g);
    fd = open(path_in("2026-12-01T03.iotr.zst"), O_RDWR);
    off_t at = (off_t)(g.offs[10] + (g.offs[20] - g.offs[10]) / 2);
    unsigned char b;
    assert_int_equal(pread(fd, &b, 1, at), 1);
    b ^= 0x5a;
    assert_int_equal(pwrite(fd, &b, 1, at), 1);
    close(fd);
    assert_int_equal(store_seek(r, T0 + 1e6), -ENOENT);
    assert_int_equal(store_next(r, &l, err, sizeof(err)), -EBADMSG);
    assert_non_null(strstr(err, "T03.iotr.zst: damaged at byte "));
    assert_int_equal(store_next(r, &l, err, sizeof(err)), 0);
    store_close_reader(r);
}

/* ---- retention --------------------------------------------------------------------- */

static void make_foreign(void)
{
    /* Things that are not the recorder's, some with its very name. */
    FILE *f = fopen(path_in("notes.txt"), "w");
    assert_non_null(f);
    fputs("not ours\n", f);
    fclose(f);
    assert_int_equal(symlink("notes.txt", path_in("2020-01-01T00.iotr.zst")), 0);
    assert_int_equal(mkdir(path_in("2020-01-01T01.iotr.zst"), 0755), 0);
    f = fopen(path_in("2020-01-01T02.iotr.zst.bak"), "w");
    assert_non_null(f);
    fclose(f);
    f = fopen(path_in("2020-01-01T03.IOTR.ZST"), "w");
    assert_non_null(f);
    fclose(f);
}

static void check_foreign(void)
{
    struct stat st;
    assert_int_equal(lstat(path_in("notes.txt"), &st), 0);
    assert_int_equal(lstat(path_in("2020-01-01T00.iotr.zst"), &st), 0);
    assert_true(S_ISLNK(st.st_mode));
    assert_int_equal(lstat(path_in("2020-01-01T01.iotr.zst"), &st), 0);
    assert_true(S_ISDIR(st.st_mode));
    assert_int_equal(lstat(path_in("2020-01-01T02.iotr.zst.bak"), &st), 0);
    assert_int_equal(lstat(path_in("2020-01-01T03.IOTR.ZST"), &st), 0);
}

static int own_files(void)
{
    struct store_reader *r;
    char err[256];
    assert_int_equal(store_open_reader(&r, tmpdir, err, sizeof(err)), 0);
    int n = (int)store_reader_files(r);
    store_close_reader(r);
    return n;
}

static void test_retention_age(void **state)
{
    (void)state;
    make_foreign();
    /* 50 hours of samples, one file each, with no retention. */
    struct store_writer *w = writer(NULL);
    for (int h = 0; h < 50; h++)
        put(w, T0 + h * 3600 + 10, 60.0, 3, 0, h * 10);
    close_writer(w);
    assert_int_equal(own_files(), 50);

    /* Keep 24 hours: at 49:30, hours whose end is more than 24 h ago go (00 .. 24). */
    struct store_opts o = { .max_age_s = 24 * 3600 };
    w = writer(&o);
    char err[256];
    int k = store_retain(w, T0 + 49 * 3600 + 1800, err, sizeof(err));
    assert_int_equal(k, 25);
    close_writer(w);
    assert_int_equal(own_files(), 25);
    struct stat st;
    assert_int_equal(stat(path_in("2026-12-02T00.iotr.zst"), &st), -1);
    assert_int_equal(stat(path_in("2026-12-02T01.iotr.zst"), &st), 0);
    check_foreign();
    /* The symlink with our name still points at the foreign file, which is intact. */
    assert_int_equal(size_of(path_in("notes.txt")), 9);

    /* The writer applies it by itself when the hour rolls over. */
    w = writer(&o);
    put(w, T0 + 80 * 3600, 1.0, 2, 0, 900);
    close_writer(w);
    assert_int_equal(own_files(), 1);
    check_foreign();
}

static void test_retention_size(void **state)
{
    (void)state;
    make_foreign();
    struct store_writer *w = writer(NULL);
    for (int h = 0; h < 10; h++)
        put(w, T0 + h * 3600, 1.0, 200, 20, h * 1000);
    close_writer(w);
    off_t one = size_of(path_in("2026-12-01T00.iotr.zst"));
    off_t total = 0;
    for (int h = 0; h < 10; h++) {
        char n[32];
        store_file_name(n, sizeof(n), T0 + h * 3600);
        total += size_of(path_in(n));
    }
    /* Room for about 4 files: the 6 oldest go, the newest 4 stay. */
    struct store_opts o = { .max_bytes = (uint64_t)(total - 6 * one + one / 2) };
    w = writer(&o);
    char err[256];
    assert_int_equal(store_retain(w, T0 + 10 * 3600, err, sizeof(err)), 6);
    close_writer(w);
    assert_int_equal(own_files(), 4);
    static struct got g;
    read_path(tmpdir, &g);
    assert_int_equal(g.n, 800);
    assert_int_equal(g.ids[0], 6000);
    check_foreign();

    /* The file being written is never deleted, even alone over the limit. */
    o.max_bytes = 1;
    w = writer(&o);
    put(w, T0 + 20 * 3600, 1.0, 50, 10, 50000);
    assert_true(store_retain(w, T0 + 20 * 3600 + 60, err, sizeof(err)) >= 0);
    close_writer(w);
    assert_int_equal(own_files(), 1);
    assert_true(size_of(path_in("2026-12-01T20.iotr.zst")) > 1);
    check_foreign();
}

static void test_symlink_refused(void **state)
{
    (void)state;
    /* A symlink planted under the hour's name is never written through. */
    FILE *f = fopen(path_in("victim"), "w");
    assert_non_null(f);
    fputs("keep", f);
    fclose(f);
    assert_int_equal(symlink("victim", path_in("2026-12-01T07.iotr.zst")), 0);
    struct store_writer *w = writer(NULL);
    char err[256] = "", line[128];
    size_t len = sample(line, sizeof(line), T0 + 7 * 3600, 1);
    int rc = store_append(w, T0 + 7 * 3600, line, len, err, sizeof(err));
    assert_int_equal(rc, -ELOOP);
    assert_non_null(strstr(err, "2026-12-01T07.iotr.zst"));
    store_close(w, NULL, 0);
    assert_int_equal(size_of(path_in("victim")), 4);

    /* An empty directory is an empty recording. */
    unlink(path_in("2026-12-01T07.iotr.zst"));
    static struct got g;
    read_path(tmpdir, &g);
    assert_int_equal(g.n, 0);
    assert_int_equal(g.damages, 0);
}

/* A sample with three devices: vda with quiet-time level q, loop0 without one, and one
 * whose major is out of range (skipped). broken: a line cut inside its devices. */
static void put_line(struct store_writer *w, double ts, double q, bool broken)
{
    char line[512], err[256];
    int k = broken ? snprintf(line, sizeof(line), "{\"ts\":%.3f,\"devices\":[", ts)
                   : snprintf(line, sizeof(line), "{\"version\":1,\"ts\":%.3f,\"devices\":["
                              "{\"name\":\"vda\",\"major\":254,\"minor\":0,\"quiet_await\":%.3f},"
                              "{\"name\":\"loop0\",\"major\":7,\"minor\":0,\"quiet_await\":null},"
                              "{\"name\":\"bad\",\"major\":-1,\"minor\":0,\"quiet_await\":1.0}]}",
                              ts, q);
    if (store_append(w, ts, line, (size_t)k, err, sizeof(err)))
        fail_msg("append: %s", err);
}

static void test_baselines(void **state)
{
    (void)state;
    struct store_writer *w = writer(NULL);
    put_line(w, T0 + 3600, 0.9, false);
    put_line(w, T0 + 7200, 0.7, false);
    put_line(w, T0 + 7205, 0.512, false);           /* the newest */
    close_writer(w);

    struct baselines h = { 0 };
    char err[256];
    /* A baseline the live run already has is overwritten; others are added. */
    assert_int_equal(record_baselines_load(tmpdir, T0 + 7300, 86400, &h, err, sizeof(err)), 1);
    assert_int_equal(h.n, 1);
    assert_string_equal(h.v[0].name, "vda");
    assert_int_equal(h.v[0].major, 254);
    assert_true(fabs(h.v[0].quiet_await - 0.512) < 1e-9);
    assert_true(isnan(h.v[0].ceiling));
    h.v[0].quiet_await = 5;
    assert_int_equal(record_baselines_load(tmpdir, T0 + 7300, 86400, &h, err, sizeof(err)), 1);
    assert_int_equal(h.n, 1);
    assert_true(fabs(h.v[0].quiet_await - 0.512) < 1e-9);
    baselines_free(&h);

    /* Too old for max_age: nothing. */
    assert_int_equal(record_baselines_load(tmpdir, T0 + 7205 + 3601, 3600, &h, err, sizeof(err)), 0);
    assert_int_equal(h.n, 0);
    /* The newest sample is not JSON: an error with the offset. */
    w = writer(NULL);
    put_line(w, T0 + 7210, 0, true);
    close_writer(w);
    assert_int_equal(record_baselines_load(tmpdir, T0 + 7300, 86400, &h, err, sizeof(err)), -EINVAL);
    assert_non_null(strstr(err, "newest sample: byte"));
    baselines_free(&h);
}

int main(void)
{
    setenv("TZ", "UTC0", 1);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_names),
        cmocka_unit_test(test_parse_time),
        cmocka_unit_test_setup_teardown(test_roundtrip, setup, teardown),
        cmocka_unit_test_setup_teardown(test_hours, setup, teardown),
        cmocka_unit_test_setup_teardown(test_seek, setup, teardown),
        cmocka_unit_test_setup_teardown(test_truncated, setup, teardown),
        cmocka_unit_test_setup_teardown(test_torn_middle, setup, teardown),
        cmocka_unit_test_setup_teardown(test_corrupt_middle, setup, teardown),
        cmocka_unit_test_setup_teardown(test_seek_damages, setup, teardown),
        cmocka_unit_test_setup_teardown(test_retention_age, setup, teardown),
        cmocka_unit_test_setup_teardown(test_retention_size, setup, teardown),
        cmocka_unit_test_setup_teardown(test_symlink_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_baselines, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
