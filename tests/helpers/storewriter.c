/* SPDX-License-Identifier: GPL-2.0-or-later */
/* storewriter: drives store/store*.c from tests/integration/test_store_faults.sh.
 *
 *   storewriter write DIR COUNT SLEEP_MS FLUSH_EVERY PAD_BYTES [RETRY_S]
 *       Append COUNT samples (0: until SIGTERM), one every SLEEP_MS, wall = the clock,
 *       flushing every FLUSH_EVERY samples. Each sample is a JSON line with "n" (its number)
 *       and PAD_BYTES of pseudo-random hex, so that it compresses badly and fills a disk.
 *       stdout, line by line: "stored N" when append took sample N, "flushed N" when every
 *       stored sample up to N is in the file. stderr: what a recorder would tell the
 *       journal: one line when the disk fills, one when recording resumes.
 *   storewriter read PATH
 *       stdout: "sample N TS" per sample, "damage TEXT" per damage, "end" at the end.
 *   storewriter at PATH TIME
 *       TIME as the CLI takes it (store_parse_time: "03:10", "-2h", "@EPOCH"); prints the
 *       first sample at or after it, whole, or "none" (exit 1). Damages on the way to it
 *       go to stderr.
 *   storewriter import DIR FILE EVERY [LEVEL]
 *       Store the JSON lines of FILE (a plain recording) with their own `ts` as wall,
 *       a frame every EVERY lines: what the recorder's files would weigh with that many
 *       samples per frame (bench/record.sh). Prints "samples N".
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "store/store.h"
#include "util.h"

static volatile sig_atomic_t stop;

static void on_term(int sig)
{
    (void)sig;
    stop = 1;
}

static int do_write(int argc, char **argv)
{
    if (argc < 7)
        return 2;
    const char *dir = argv[2];
    long count = atol(argv[3]), sleep_ms = atol(argv[4]), every = atol(argv[5]);
    long pad = atol(argv[6]);
    struct store_opts o = { .retry_s = argc > 7 ? atof(argv[7]) : 0.2 };
    if (every < 1 || pad < 0 || pad > 1 << 20)
        return 2;
    struct sigaction sa = { .sa_handler = on_term };
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    setvbuf(stdout, NULL, _IOLBF, 0);

    char err[512];
    struct store_writer *w;
    if (store_open_writer(&w, dir, &o, err, sizeof(err)) < 0) {
        fprintf(stderr, "storewriter: %s\n", err);
        return 1;
    }
    char *line = xmalloc((size_t)pad + 128);
    unsigned x = 2463534242u;
    long last_stored = -1;
    bool paused = false;
    int rc = 0;
    for (long i = 0; (count == 0 || i < count) && !stop; i++) {
        double wall = clock_wall();
        int k = snprintf(line, 128, "{\"version\":1,\"ts\":%.3f,\"n\":%ld,\"pad\":\"", wall, i);
        for (long j = 0; j < pad; j++) {
            x ^= x << 13, x ^= x >> 17, x ^= x << 5;
            line[k++] = "0123456789abcdef"[x & 15];
        }
        line[k++] = '"';
        line[k++] = '}';
        int a = store_append(w, wall, line, (size_t)k, err, sizeof(err));
        if (a == 0) {
            if (paused) {
                struct store_stats st;
                store_writer_stats(w, &st);
                fprintf(stderr, "storewriter: recording resumed, %llu samples dropped\n",
                        (unsigned long long)st.dropped);
                paused = false;
            }
            printf("stored %ld\n", i);
            last_stored = i;
        } else if (a == -ENOSPC || a == -EDQUOT) {
            fprintf(stderr, "storewriter: %s\n", err);     /* once: on the way in */
            paused = true;
        } else if (a != -EAGAIN) {
            fprintf(stderr, "storewriter: %s\n", err);
            rc = 1;
            break;
        }
        if ((i + 1) % every == 0) {
            int f = store_flush(w, wall, err, sizeof(err));
            if (f == 0 && !paused) {
                printf("flushed %ld\n", last_stored);
            } else if (f == -ENOSPC || f == -EDQUOT) {
                fprintf(stderr, "storewriter: %s\n", err);
                paused = true;
            } else if (f == 0 && paused) {
                struct store_stats st;
                store_writer_stats(w, &st);
                fprintf(stderr, "storewriter: recording resumed, %llu samples dropped\n",
                        (unsigned long long)st.dropped);
                paused = false;
                printf("flushed %ld\n", last_stored);
            } else if (f != -EAGAIN) {
                fprintf(stderr, "storewriter: %s\n", err);
                rc = 1;
                break;
            }
        }
        if (sleep_ms)
            nanosleep(&(struct timespec){ sleep_ms / 1000, (sleep_ms % 1000) * 1000000 }, NULL);
    }
    free(line);
    int c = store_close(w, err, sizeof(err));
    if (c < 0) {
        fprintf(stderr, "storewriter: close: %s\n", err);
        return 1;
    }
    printf("flushed %ld\nclosed\n", last_stored);
    return rc;
}

static int do_read(const char *path)
{
    char err[512];
    struct store_reader *r;
    if (store_open_reader(&r, path, err, sizeof(err)) < 0) {
        fprintf(stderr, "storewriter: %s\n", err);
        return 1;
    }
    for (;;) {
        struct store_line l;
        int rc = store_next(r, &l, err, sizeof(err));
        if (rc == 0)
            break;
        if (rc < 0) {
            printf("damage %s\n", err);
            continue;
        }
        const char *n = memmem(l.text, l.len < 200 ? l.len : 200, "\"n\":", 4);
        printf("sample %ld %.3f\n", n ? atol(n + 4) : -1L, l.ts);
    }
    printf("end\n");
    store_close_reader(r);
    return 0;
}

static int do_import(int argc, char **argv)
{
    long every = atol(argv[4]);
    struct store_opts o = { .level = argc > 5 ? atoi(argv[5]) : 0 };
    char err[512];
    struct store_writer *w;
    if (every < 1 || store_open_writer(&w, argv[2], &o, err, sizeof(err)) < 0) {
        fprintf(stderr, "storewriter: %s\n", every < 1 ? "EVERY < 1" : err);
        return 1;
    }
    FILE *f = fopen(argv[3], "r");
    if (!f) {
        perror(argv[3]);
        return 1;
    }
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    long n = 0;
    double wall = 0;
    while ((len = getline(&line, &cap, f)) > 0) {
        const char *t = strstr(line, "\"ts\":");
        wall = t ? atof(t + 5) : wall;
        if (store_append(w, wall, line, (size_t)len, err, sizeof(err)) < 0 ||
            (++n % every == 0 && store_flush(w, wall, err, sizeof(err)) < 0)) {
            fprintf(stderr, "storewriter: %s\n", err);
            return 1;
        }
    }
    free(line);
    fclose(f);
    if (store_close(w, err, sizeof(err)) < 0) {
        fprintf(stderr, "storewriter: %s\n", err);
        return 1;
    }
    return printf("samples %ld\n", n) < 0;
}

static int do_at(const char *path, const char *when)
{
    double t;
    if (store_parse_time(when, clock_wall(), &t) < 0) {
        fprintf(stderr, "storewriter: bad time %s\n", when);
        return 2;
    }
    char err[512];
    struct store_reader *r;
    if (store_open_reader(&r, path, err, sizeof(err)) < 0) {
        fprintf(stderr, "storewriter: %s\n", err);
        return 2;
    }
    int rc = 1;
    if (store_seek(r, t) == 0) {
        struct store_line l;
        int k;
        while ((k = store_next(r, &l, err, sizeof(err))) < 0)
            fprintf(stderr, "damage %s\n", err);
        if (k == 1) {
            fwrite(l.text, 1, l.len, stdout);
            putchar('\n');
            rc = 0;
        }
    }
    if (rc)
        puts("none");
    store_close_reader(r);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc == 4 && strcmp(argv[1], "at") == 0)
        return do_at(argv[2], argv[3]);
    if (argc >= 5 && strcmp(argv[1], "import") == 0)
        return do_import(argc, argv);
    if (argc >= 3 && strcmp(argv[1], "write") == 0)
        return do_write(argc, argv);
    if (argc == 3 && strcmp(argv[1], "read") == 0)
        return do_read(argv[2]);
    fprintf(stderr, "usage: storewriter write DIR COUNT SLEEP_MS FLUSH_EVERY PAD [RETRY_S]\n"
                    "       storewriter read PATH\n");
    return 2;
}
