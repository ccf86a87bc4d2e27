/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Fuzz the task iterator's stream decoder (taskiter_acc_feed, src/source/taskiter.c): the
 * bytes a read of the BPF task iterator returns, fixed records with a command line after
 * some (include/bpf/taskiter.h: Framing). A damaged or cut stream must not be read past
 * its end nor crash. What must hold: a return of -EPROTO or of a count of bytes taken
 * that is at most len and a whole number of framed records; the same bytes handed in any
 * two pieces (the second with what the first left) give the same tasks; every command
 * line sent lies inside the run's text and is at most TASKS_CMDLINE_MAX bytes. The first
 * byte picks threads mode and where the stream is cut. */
#include <errno.h>

#include "fuzz.h"
#include "source/taskiter.h"

#define MAX_LEN (64 * 1024)

/* Feeds buf[0, len) whole, or in two pieces cut at `cut`, as taskiter_read keeps what a
 * read left; returns the bytes left over or -EPROTO. */
static long feed(struct taskiter_acc *a, const char *buf, size_t len, size_t cut)
{
    if (cut > len)
        cut = len;
    char *pend = malloc(len ? len : 1);
    if (!pend)
        abort();
    memcpy(pend, buf, cut);
    long used = taskiter_acc_feed(a, pend, cut);
    long rc;
    if (used < 0) {
        rc = used;
    } else {
        FZ_CHECK((size_t)used <= cut);
        size_t have = cut - (size_t)used;
        memmove(pend, pend + used, have);
        memcpy(pend + have, buf + cut, len - cut);
        have += len - cut;
        char *exact = fz_copy((const uint8_t *)pend, have);    /* ASan: nothing after */
        long u2 = taskiter_acc_feed(a, exact, have);
        free(exact);
        FZ_CHECK(u2 < 0 || (size_t)u2 <= have);
        rc = u2 < 0 ? u2 : (long)(have - (size_t)u2);
    }
    free(pend);
    return rc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1 || size > MAX_LEN)
        return 0;
    bool threads = data[0] & 1;
    size_t len = size - 1;
    size_t cut = len ? (size_t)data[0] * 37 % (len + 1) : 0;
    char *buf = fz_copy(data + 1, len);
    struct taskiter_acc a = { 0 }, b = { 0 };
    taskiter_acc_begin(&a, threads, 100);
    long left_a = feed(&a, buf, len, len);
    taskiter_acc_end(&a);
    taskiter_acc_begin(&b, threads, 100);
    long left_b = feed(&b, buf, len, cut);
    taskiter_acc_end(&b);
    FZ_CHECK((left_a == -EPROTO) == (left_b == -EPROTO));
    FZ_CHECK(left_a == -EPROTO || left_a >= 0);
    if (left_a >= 0) {
        FZ_CHECK(left_a == left_b);
        FZ_CHECK(a.n == b.n && a.ntext == b.ntext);
        for (size_t i = 0; i < a.n; i++) {
            size_t n1, n2;
            const char *c1 = taskiter_cmdline(&a, &a.tasks[i], &n1);
            const char *c2 = taskiter_cmdline(&b, &b.tasks[i], &n2);
            FZ_CHECK(a.tasks[i].id == b.tasks[i].id && a.tasks[i].cmd == b.tasks[i].cmd);
            FZ_CHECK((c1 == NULL) == (a.tasks[i].cmd != TASKITER_CMD_SENT));
            FZ_CHECK((c1 == NULL) == (c2 == NULL) && n1 == n2);
            FZ_CHECK(n1 <= TASKS_CMDLINE_MAX);
            if (c1) {
                FZ_CHECK(c1 >= a.text && c1 + n1 <= a.text + a.ntext);
                FZ_CHECK(memcmp(c1, c2, n1) == 0);
            }
            /* a name: within the text, NUL-terminated there, under TASKS_COMM_LEN, the
             * same however the reads were cut */
            const char *m1 = taskiter_comm(&a, &a.tasks[i]), *m2 = taskiter_comm(&b, &b.tasks[i]);
            size_t ml = strlen(m1);
            FZ_CHECK(ml < TASKS_COMM_LEN && strcmp(m1, m2) == 0);
            FZ_CHECK(ml == 0 || (m1 >= a.text && m1 + ml < a.text + a.ntext));
            if (i > 0)
                FZ_CHECK(a.tasks[i - 1].id <= a.tasks[i].id);
        }
    }
    taskiter_acc_free(&a);
    taskiter_acc_free(&b);
    free(buf);
    return 0;
}
