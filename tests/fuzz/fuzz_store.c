/* Fuzz the recorder's reader (src/record/store.c): any bytes as a recording file, read
 * once as a .zst (by name: every frame decoded and checked) and once under a neutral name
 * (zstd or plain JSON lines by the first bytes). Every damage must be reported in one
 * line, every sample returned must lie inside what was decoded (ASan) and hold no
 * newline, a seek must agree with a scan, and a sample's position must bring it back.
 * The first byte picks the seek target. The bytes go through a memfd because the reader
 * reads files. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fuzz.h"
#include "record/store.h"

static void read_through(const char *path, double target)
{
    char err[512];
    struct store_reader *r;
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
            continue;
        }
        FZ_CHECK(rc == 1 && l.len > 0);
        FZ_CHECK(memchr(l.text, '\n', l.len) == NULL);
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
    read_through(path, target);
    /* The same bytes under a .zst name: the reader takes them as zstd whatever they are. */
    char dir[] = "/tmp/fuzz_store.XXXXXX";
    if (!mkdtemp(dir))
        abort();
    snprintf(zpath, sizeof(zpath), "%s/2026-12-01T03.iotr.zst", dir);
    if (symlink(path, zpath) < 0)
        abort();
    read_through(zpath, target);
    unlink(zpath);
    rmdir(dir);
    close(fd);
    return 0;
}
