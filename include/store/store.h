/* SPDX-License-Identifier: GPL-2.0-or-later */
/* store/store.h: the always-on recorder's storage. A recording directory holds one file
 * per UTC hour, YYYY-MM-DDTHH.iotr.zst, each a sequence of zstd frames whose decompressed
 * bytes are JSON lines, one sample per line (sample_write, docs/json.md). The reader
 * also takes a single file: such a .zst, or the plain JSON lines of `--record FILE`.
 *
 * Why one file per hour and not per day: retention deletes whole files, so an hour is the
 * granularity of "keep 3 days" and of the size cap (a day at 50 MB would make the cap
 * overshoot by up to 50 MB); seeking to 03:10 opens one small file, not a day's worth; and
 * after a damage only the rest of that hour is at stake. 24 files a day is few enough
 * for a directory listing at every rollover.
 *
 * Contract, writer
 * - store_open_writer() creates the directory (one level, mode 0750: samples hold every
 *   user's command lines) when missing. Files are created 0640. One writer per directory:
 *   it holds flock(LOCK_EX) on the directory; a second gets -EBUSY.
 * - store_append() takes one sample: one JSON line (a trailing '\n' is optional; a '\n'
 *   inside is -EINVAL). wall (seconds since the epoch, the sample's `ts`) picks the file: the
 *   UTC hour of wall. A sample of another hour than the open file's flushes and closes it
 *   and opens (or appends to) that hour's file. Samples are compressed into memory; nothing
 *   reaches the file before a flush.
 * - store_flush() ends the current zstd frame (with its content checksum) and writes it with
 *   one write(): a file is always whole frames, then at most one frame cut short by a crash
 *   or a full disk. A kill -9 loses only the samples appended since the last flush; earlier
 *   frames are never rewritten, so they stay readable. The caller flushes every few
 *   seconds; store_append() flushes by itself when a frame holds 4 MiB of lines, so that no frame decodes to more than STORE_FRAME_MAX (the reader's bound
 *   against decompression bombs). A line over STORE_LINE_MAX is refused (-E2BIG).
 * - fsync policy: fdatasync() when a file is closed (hour rollover, store_close()), and
 *   after every flush only when opts.fsync_each_flush is set. A process crash loses
 *   nothing that was flushed (the page cache outlives it); a power cut may lose what the
 *   kernel had not yet written back (about 30 s with default dirty_expire), and a file cut
 *   there reads up to the cut.
 * - Reopening an hour that a crash left with a torn last frame: the torn bytes are cut off
 *   (ftruncate) before appending, but only when no complete frame follows them (nothing
 *   readable is ever removed): the file is cut at the end of its last frame that decodes
 *   with a good checksum, found by walking it as the reader does. A torn frame in the
 *   middle stays; the reader reports it and goes on after it.
 * - Full disk: a write that fails with ENOSPC or EDQUOT is undone (the file is truncated
 *   back to its last whole frame), the frame is kept in memory, and the writer is paused:
 *   that call returns -ENOSPC or -EDQUOT (report it once). While paused, store_append()
 *   drops the sample and returns -EAGAIN, except that every opts.retry_s seconds (of wall)
 *   it tries again to write the kept frame: when that works, the writer resumes and the
 *   sample is stored (return 0). store_retry() tries at once. store_stats() tells whether
 *   it is paused and how many samples were dropped, for the "resumed" message.
 * - Retention, at the first sample, at every rollover and at most once a minute in
 *   store_flush(), "now" being the sample's wall (the writer never reads the clock): files
 *   whose hour ended more than opts.max_age_s before the newest sample's wall are deleted,
 *   then the oldest files while all files together exceed opts.max_bytes (0: no limit). Only
 *   names matching the pattern exactly, only regular files (never a symlink, never a
 *   directory), only in that directory, never the file being written. Age comes from the
 *   name, not mtime, so a copied or touched file keeps its age.
 * - Errors are -errno with one line of text in err (no newline); nothing here prints or
 *   exits. Allocation failure aborts (util.h).
 *
 * Contract, reader
 * - store_open_reader() takes a directory (its files matching the pattern, regular files,
 *   not symlinks: the same files retention counts as the recorder's; in name order, which
 *   is time order) or one file, which may be a symlink (zstd when its name ends in .zst or
 *   it starts with the zstd magic, else plain JSON lines). A directory with no recording
 *   in it opens and is empty.
 * - store_next() returns the samples one by one across file boundaries. A file is read
 *   into memory (at most STORE_FILE_MAX bytes) when reached. Each zstd frame is decoded
 *   whole and its checksum checked before any of its lines is returned, so a damaged frame
 *   yields no line at all. A damage (frame cut short, checksum wrong, garbage, unreadable
 *   file, plain file whose last line has no newline) is returned once as -EBADMSG (-errno
 *   for an unreadable file) with "FILE: damaged at byte OFFSET: what" in err; the next
 *   call goes on with the next complete frame found after the damage (zstd magic, then a
 *   clean decode), else with the next file.
 * - store_seek() positions the reader so that store_next() returns the first sample whose
 *   `ts` is at or after wall: it starts at the file of wall's hour (by name; a single file
 *   from its start) and scans lines, reading only the `ts` near the start of each line.
 *   Samples without a readable `ts` are skipped by the scan. A damage seen while scanning is
 *   not lost: the next store_next() calls return them first, one a call, in order (the
 *   first 64 with their text, then one that counts the rest), also when the seek found no
 *   sample (-ENOENT): then store_next() returns the damages, then 0.
 * - A store_line points into the reader's buffers: valid until the next call on r. Its
 *   pos brings the reader back to it (store_goto): a frame is decoded again, nothing is
 *   indexed ahead, so stepping back costs one frame's decoding at most.
 *
 * Time parsing (the CLI's --at, --from, --to): store_parse_time() is pure except for the
 * local time zone (TZ), which it reads as date(1) does.
 */
#ifndef IOTRIAGE_STORE_STORE_H
#define IOTRIAGE_STORE_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define STORE_SUFFIX     ".iotr.zst"
#define STORE_DEFAULT_DIR "/var/lib/iotriage"
#define STORE_FILE_MAX   (1ull << 30)    /* bytes of one file the reader loads */
#define STORE_LINE_MAX   (8u << 20)      /* bytes of one sample the writer takes */
#define STORE_FRAME_MAX  (16u << 20)     /* decompressed bytes of one frame the reader takes */

struct store_opts {
    double   max_age_s;         /* delete files older than this; 0: keep forever */
    uint64_t max_bytes;         /* total size of the recording; 0: no limit */
    int      level;             /* zstd level; 0: 3 */
    double   retry_s;           /* seconds between retries when the disk is full; 0: 10 */
    bool     fsync_each_flush;  /* fdatasync after every frame, not only at file close */
};

struct store_stats {
    bool     paused;            /* the disk was full at the last try */
    int      pause_err;         /* -ENOSPC or -EDQUOT while paused */
    uint64_t dropped;           /* samples dropped while paused, since open */
    uint64_t appended;          /* samples accepted */
    uint64_t frames;            /* frames written */
    uint64_t bytes;             /* compressed bytes written */
    uint64_t deleted;           /* files deleted by retention */
    uint64_t damages;           /* reader: damages seen (also those found by a seek) */
};

struct store_writer;
struct store_reader;

int  store_open_writer(struct store_writer **out, const char *dir, const struct store_opts *o,
                       char *err, size_t errlen);
/* 0 stored; -ENOSPC/-EDQUOT the disk just filled (now paused); -EAGAIN paused, dropped;
 * -EINVAL not one line; -E2BIG over STORE_LINE_MAX; other -errno: the file could not be opened or written. */
int  store_append(struct store_writer *w, double wall, const char *line, size_t len,
                  char *err, size_t errlen);
/* End the frame and write it (no-op when nothing is pending). Same returns as append. */
int  store_flush(struct store_writer *w, double wall, char *err, size_t errlen);
/* Try to write what a full disk held back now: 0 resumed (or was not paused), else as
 * append. */
int  store_retry(struct store_writer *w, double wall, char *err, size_t errlen);
/* Apply retention now (wall: the time "now" is); returns files deleted or -errno. */
int  store_retain(struct store_writer *w, double wall, char *err, size_t errlen);
void store_writer_stats(const struct store_writer *w, struct store_stats *st);
/* Flush, fdatasync, close. Returns 0 or the flush's error (everything is freed anyway). */
int  store_close(struct store_writer *w, char *err, size_t errlen);

/* Where a sample is, to come back to it (a screen stepping backwards). */
struct store_pos {
    size_t   file;              /* index among store_reader_file() */
    uint64_t frame;             /* byte offset of its frame in the file (plain: 0) */
    size_t   line;              /* byte offset of the line in the frame's decoded bytes */
};

struct store_line {
    struct store_pos pos;
    const char *text;           /* the JSON line, without its '\n' */
    size_t      len;
    double      ts;             /* its `ts`, NAN when none could be read */
    const char *file;           /* the file it came from */
    uint64_t    offset;         /* byte offset in that file of its frame (plain: of the line) */
};

int  store_open_reader(struct store_reader **out, const char *path, char *err, size_t errlen);
/* Files the reader will go through (directory: matching files; else 1). */
size_t store_reader_files(const struct store_reader *r);
const char *store_reader_file(const struct store_reader *r, size_t i);
/* 1 a sample in *l; 0 the end; -EBADMSG (or -errno) a damage, described in err, and
 * reading goes on at the next call. */
int  store_next(struct store_reader *r, struct store_line *l, char *err, size_t errlen);
/* 0 positioned at a sample; -ENOENT none at or after wall (the reader is at its end). */
int  store_seek(struct store_reader *r, double wall);
/* Position the reader so that store_next() returns the sample at pos (a pos from a
 * store_line of this reader). 0, or -ERANGE (no such file or offset), or the damage that
 * now prevents reading it (-EBADMSG, -errno; the reader is then as after a damage). */
int  store_goto(struct store_reader *r, const struct store_pos *pos, char *err, size_t errlen);
void store_reader_stats(const struct store_reader *r, struct store_stats *st);
void store_close_reader(struct store_reader *r);

/* The file name of the hour holding wall: "2026-12-01T03.iotr.zst" (buf >= 32 bytes).
 * Returns 0 or -ERANGE. */
int  store_file_name(char *buf, size_t n, double wall);
/* Is name a recording file's name? On true, *hour is the epoch second its hour starts. */
bool store_name_parse(const char *name, double *hour);

/* The recorder's directory of this machine: $IOTRIAGE_RECORD_DIR when set (NULL when it
 * is "": none), else STORE_DEFAULT_DIR. Whether it exists is the caller's to see. */
const char *store_record_dir(void);

/* "03:10" or "03:10:30" (today, local time), "2026-12-01 03:10[:SS]" (also with 'T'),
 * "-2h", "-30m", "-45s", "-1d", "-1h30m" (before now), "@1764558600" (epoch seconds),
 * "now". Returns 0 with epoch seconds in *out, or -EINVAL. */
int  store_parse_time(const char *s, double now, double *out);

#endif
