/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Fuzz the replay reader (src/sample/json.c, src/store/replay.c, src/sample/decode*.c):
 * any bytes as a recording.
 * Every sample that decodes must write out again (sample_write) without a report; a
 * sample that does not must say why in one line. The bytes go through a memfd because
 * replay_open reads a file. */
#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "sample/sample.h"
#include "fuzz.h"
#include "out/output.h"
#include "store/replay.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > (1u << 16))
        return 0;
    int fd = memfd_create("recording", MFD_CLOEXEC);
    if (fd < 0)
        abort();
    if (size && write(fd, data, size) != (ssize_t)size)
        abort();
    char path[64], err[256];
    snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
    struct replay *r;
    if (replay_open(&r, path, err, sizeof(err)) == 0) {
        FILE *sink = fopen("/dev/null", "w");
        if (!sink)
            abort();
        size_t n = replay_count(r);
        FZ_CHECK(n > 0);
        struct replay_frame f = { 0 };
        for (size_t i = 0; i < n && i < 64; i++) {
            err[0] = '\0';
            if (replay_load(r, i, &f, err, sizeof(err)) == 0) {
                struct sample_opts oo = { .hostname = f.host, .only_active = f.nunlisted > 0 };
                sample_write(sink, &f.res, &f.ver, &oo);
            } else {
                FZ_CHECK(err[0] != '\0' && strchr(err, '\n') == NULL);
            }
        }
        replay_frame_free(&f);
        replay_close(r);
        fclose(sink);
    } else {
        FZ_CHECK(err[0] != '\0');
    }
    close(fd);
    return 0;
}
