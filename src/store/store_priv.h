/* SPDX-License-Identifier: GPL-2.0-or-later */
/* src/store/store_priv.h: private to store.c, store_write.c and store_read.c: libzstd's
 * functions as loaded (zstd_load), the frame magic, and the frame checks the writer and
 * the reader share. The contract is include/store/store.h's.
 */
#ifndef IOTRIAGE_STORE_PRIV_H
#define IOTRIAGE_STORE_PRIV_H

#include <stdbool.h>
#include <stddef.h>

#include <zstd.h>
#include <zstd_errors.h>

struct zstd_lib {
    void *lib;
    __typeof__(ZSTD_CCtx_reset) *CCtx_reset;
    __typeof__(ZSTD_CCtx_setParameter) *CCtx_setParameter;
    __typeof__(ZSTD_CStreamOutSize) *CStreamOutSize;
    __typeof__(ZSTD_compressStream2) *compressStream2;
    __typeof__(ZSTD_createCCtx) *createCCtx;
    __typeof__(ZSTD_createDCtx) *createDCtx;
    __typeof__(ZSTD_decompressDCtx) *decompressDCtx;
    __typeof__(ZSTD_findFrameCompressedSize) *findFrameCompressedSize;
    __typeof__(ZSTD_freeCCtx) *freeCCtx;
    __typeof__(ZSTD_freeDCtx) *freeDCtx;
    __typeof__(ZSTD_getErrorCode) *getErrorCode;
    __typeof__(ZSTD_getErrorName) *getErrorName;
    __typeof__(ZSTD_isError) *isError;
};
extern struct zstd_lib zs;

extern const unsigned char zmagic[4];

/* What frame_check found at a frame start. */
struct frame_info {
    size_t n;                    /* its compressed length (when it has one) */
    size_t dlen;                 /* its decoded length, in the buffer */
    bool skip;                   /* a whole skippable frame: nothing to decode */
    bool unsure;                 /* whole by its block headers but not decoded here: over
                                  * STORE_FRAME_MAX, or no memory for it */
    char why[160];
};

int zstd_load(char *err, size_t errlen);
bool is_full(int e);
bool is_skippable(const unsigned char *p);
const char *frame_check(ZSTD_DCtx *dctx, const unsigned char *p, size_t left,
                        char **buf, size_t *cap, struct frame_info *fi);
size_t readable_end(ZSTD_DCtx *dctx, const unsigned char *b, size_t len);

#endif
