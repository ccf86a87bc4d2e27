/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Fuzz the recorder's reader (src/store/store_read.c): any bytes as a recording file, read
 * once as a .zst (by name: every frame decoded and checked) and once under a neutral name
 * (zstd or plain JSON lines by the first bytes). Every damage must be reported in one
 * line, every sample returned must lie inside what was decoded (ASan) and hold no
 * newline, a seek must agree with a scan, and a sample's position must bring it back.
 * The first byte picks the seek target. The bytes go through a memfd because the reader
 * reads files.
 *
 * Then the writer's restart on the same bytes as the hour's file (its frame walk, which
 * cuts a torn tail off before appending): nothing the reader read before may be lost.
 * The file less the frame the writer appended must read exactly as before, sample for
 * sample; and when the bytes read without damage, the appended sample comes last. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fuzz.h"
#include "store/store.h"

/* What a reading of path gave: the samples (count and a hash of their bytes, in order),
 * the damages, and the last sample's bytes' hash. */
struct sum {
    size_t samples, damages;
    uint64_t hash, last;
};

#define FNV0 14695981039346656037ull

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 1099511628211ull;
    return h;
}

static void sum_line(struct sum *s, const struct store_line *l)
{
    s->samples++;
    s->hash = fnv(fnv(s->hash, &l->len, sizeof(l->len)), l->text, l->len);
    s->last = fnv(FNV0, l->text, l->len);
}

static void sum_of(const char *path, struct sum *s)
{
    char err[512];
    struct store_reader *r;
    memset(s, 0, sizeof(*s));
    s->hash = FNV0;
    FZ_CHECK(store_open_reader(&r, path, err, sizeof(err)) == 0);
    for (int guard = 0; guard < 100000; guard++) {
        struct store_line l;
        int rc = store_next(r, &l, err, sizeof(err));
        if (rc == 0)
            break;
        if (rc < 0) {
            s->damages++;
            continue;
        }
        sum_line(s, &l);
    }
    store_close_reader(r);
}

/* Read path through; what it gave in *s. */
static void read_through(const char *path, double target, struct sum *out)
{
    char err[512];
    struct store_reader *r;
    memset(out, 0, sizeof(*out));
    out->hash = FNV0;
    if (store_open_reader(&r, path, err, sizeof(err)) < 0) {
        FZ_CHECK(err[0] != '\0');
        return;
    }
    size_t samples = 0, damages = 0, first_at = (size_t)-1, last_len = 0;
    struct store_pos last = { 0 };
    for (int guard = 0; guard < 100000; guard++) {
        struct store_line l;
        err[0] = '\0';
        int rc = store_next(r, &l, err, sizeof(err));
        if (rc == 0)
            break;
        if (rc < 0) {
            FZ_CHECK(err[0] != '\0' && strchr(err, '\n') == NULL);
            damages++;
            out->damages++;
            continue;
        }
        FZ_CHECK(rc == 1 && l.len > 0);
        FZ_CHECK(memchr(l.text, '\n', l.len) == NULL);
        sum_line(out, &l);
        volatile char sum = 0;
        for (size_t i = 0; i < l.len; i++)       /* ASan: every byte is readable */
            sum ^= l.text[i];
        (void)sum;
        last = l.pos;
        last_len = l.len;
        if (first_at == (size_t)-1 && !isnan(l.ts) && l.ts >= target)
            first_at = samples;
        samples++;
    }
    /* A seek finds the first sample at or after target, as the scan did. */
    int s = store_seek(r, target);
    FZ_CHECK((s == 0) == (first_at != (size_t)-1));
    if (s == 0) {
        struct store_line l;
        int rc;
        while ((rc = store_next(r, &l, err, sizeof(err))) < 0)
            ;
        FZ_CHECK(rc == 1 && l.ts >= target);
    }
    /* The last sample's position brings it back. */
    if (samples) {
        struct store_line l;
        FZ_CHECK(store_goto(r, &last, err, sizeof(err)) == 0);
        FZ_CHECK(store_next(r, &l, err, sizeof(err)) == 1 && l.len == last_len);
    }
    store_close_reader(r);
}

/* The bytes as the hour's file of a recording directory, and a writer restarted on it.
 * The directory is on tmpfs when there is one: the writer syncs the file at close, and a
 * fuzzer must not sync a real disk hundreds of times a second. */
static void restart(const uint8_t *data, size_t size, const struct sum *before)
{
    char dir[64], path[128], err[512];
    snprintf(dir, sizeof(dir), "%s/fuzz_store_w.XXXXXX",
             access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp");
    if (!mkdtemp(dir))
        abort();
    snprintf(path, sizeof(path), "%s/2026-12-01T03.iotr.zst", dir);
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0 || (size && write(fd, data, size) != (ssize_t)size))
        abort();
    close(fd);
    struct sum after, kept;

    static const char line[] = "{\"version\":1,\"ts\":1796094030.000,\"n\":-1}";
    struct store_writer *w;
    FZ_CHECK(store_open_writer(&w, dir, NULL, err, sizeof(err)) == 0);
    FZ_CHECK(store_append(w, 1796094030.0, line, sizeof(line) - 1, err, sizeof(err)) == 0);
    FZ_CHECK(store_flush(w, 1796094030.0, err, sizeof(err)) == 0);
    struct store_stats st;
    store_writer_stats(w, &st);
    FZ_CHECK(store_close(w, err, sizeof(err)) == 0);
    FZ_CHECK(st.frames == 1 && st.bytes > 0);

    struct stat sb;
    FZ_CHECK(stat(path, &sb) == 0 && (uint64_t)sb.st_size >= st.bytes);
    uint64_t base = (uint64_t)sb.st_size - st.bytes;
    FZ_CHECK(base <= size);
    /* Only a tail was cut, and what stayed is the bytes as they were. */
    unsigned char *now = malloc(base ? base : 1);
    fd = open(path, O_RDONLY | O_CLOEXEC);
    FZ_CHECK(fd >= 0 && read(fd, now, base) == (ssize_t)base);
    close(fd);
    FZ_CHECK(base == 0 || memcmp(now, data, base) == 0);
    free(now);
    if (before->damages == 0) {
        sum_of(path, &after);
        FZ_CHECK(after.samples == before->samples + 1 && after.damages == 0);
        FZ_CHECK(after.last == fnv(FNV0, line, sizeof(line) - 1));
    }
    /* Nothing readable was cut off. */
    FZ_CHECK(truncate(path, (off_t)base) == 0);
    sum_of(path, &kept);
    FZ_CHECK(kept.samples == before->samples && kept.hash == before->hash);
    FZ_CHECK(kept.damages <= before->damages);
    unlink(path);
    rmdir(dir);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1 || size > (1u << 16))
        return 0;
    double target = data[0] * 4.0;
    data++, size--;
    int fd = memfd_create("2026-12-01T03.iotr.zst", MFD_CLOEXEC);
    if (fd < 0)
        abort();
    if (size && write(fd, data, size) != (ssize_t)size)
        abort();
    char path[64], zpath[128];
    snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
    struct sum plain, named;
    read_through(path, target, &plain);
    /* The same bytes under a .zst name: the reader takes them as zstd whatever they are. */
    char dir[] = "/tmp/fuzz_store.XXXXXX";
    if (!mkdtemp(dir))
        abort();
    snprintf(zpath, sizeof(zpath), "%s/2026-12-01T03.iotr.zst", dir);
    if (symlink(path, zpath) < 0)
        abort();
    read_through(zpath, target, &named);
    unlink(zpath);
    rmdir(dir);
    close(fd);
    restart(data, size, &named);
    return 0;
}
