/* SPDX-License-Identifier: GPL-2.0-or-later */
/* out/sink.c: a stream as a pipeline sink (out/sink.h). */
#include "out/sink.h"

#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "out/output.h"
#include "sample/sample.h"
#include "util.h"

int stream_sink_emit(void *ctx, const struct frame *f, char *err, size_t errlen)
{
    struct stream_sink *s = ctx;
    /* A replayed frame with stubs came from a recording made with -o: writing it with
     * only_active gives the recorded line again. */
    struct sample_opts o = {
        .hostname = f->host, .only_active = s->only_active || f->nunlisted > 0, .utf8 = s->utf8,
        .has_at = f->has_at, .at_missed = f->at_missed, .at = f->at,
    };
    off_t start = ftello(s->f);
    errno = 0;                       /* so that a failed write's reason is the one given */
    int rc = s->format == STREAM_JSON ? sample_write(s->f, f->res, f->ver, &o)
                                      : out_text_sample(s->f, f->res, f->ver, &o);
    if (rc < 0) {
        snprintf(err, errlen, "writing %s: %s", s->name, strerror(-rc));
        /* A file that filled up in the middle of a sample ends with the last whole one,
         * so that every line of a recording still reads (a pipe or a device: nothing to
         * take back). */
        struct stat st;
        if (start >= 0 && fstat(fileno(s->f), &st) == 0 && S_ISREG(st.st_mode))
            (void)!ftruncate(fileno(s->f), start);
    }
    return rc;
}

struct sink stream_sink(struct stream_sink *s)
{
    return (struct sink){ .name = s->name, .emit = stream_sink_emit, .ctx = s };
}
