/* SPDX-License-Identifier: GPL-2.0-or-later */
/* out/sink.h: a stream as a pipeline sink (pipeline.h): every frame as text or as a JSON
 * line, to stdout or to a recording file.
 *
 * stream_sink_emit() writes one frame and flushes; when the stream fails (a full disk, a
 * closed pipe) it returns -errno with "writing NAME: reason" in err, so the batch loop
 * stops with that line and the screen says the recording stopped, and a regular file is
 * cut back to the end of the last whole sample. The sink does not own the stream.
 */
#ifndef IOTRIAGE_OUT_SINK_H
#define IOTRIAGE_OUT_SINK_H

#include <stdbool.h>
#include <stdio.h>

#include "pipeline.h"

enum stream_format { STREAM_TEXT, STREAM_JSON };

struct stream_sink {
    FILE *f;
    const char *name;                /* "stdout" or the file's path, for messages */
    enum stream_format format;
    bool only_active;                /* -o */
    bool utf8;                       /* text: the locale takes UTF-8 */
};

int stream_sink_emit(void *ctx, const struct frame *f, char *err, size_t errlen);

/* The sink of a stream_sink (which must outlive the pipeline). */
struct sink stream_sink(struct stream_sink *s);

#endif
