/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Fuzz units_parse (systemd unit files and drop-ins), through units_sched_init/free.
 * Input: the first byte chooses the unit type (UNIT_ANY..UNIT_SWAP); the rest is split at
 * each "\n--8<--\n" into the main file and drop-ins, applied in order as the scanner does. */
#include "fuzz.h"

#include <errno.h>
#include <sched.h>

#include "audit/unitfile.h"

#define MAX_LEN (64 * 1024)
static const char SEP[] = "\n--8<--\n";

static void check(const struct unit_sched *u)
{
    FZ_CHECK(u->ninvalid <= UNITS_INVALID_MAX);
    FZ_CHECK(u->nfiles <= 1 + UNITS_DROPINS_MAX);
    for (unsigned i = 0; i < u->ninvalid; i++) {
        const struct unit_invalid *iv = &u->invalid[i];
        FZ_CHECK(fz_terminated(iv->key, sizeof(iv->key)));
        FZ_CHECK(fz_terminated(iv->text, sizeof(iv->text)));
        FZ_CHECK(iv->why != NULL && iv->why[0] != '\0');
        FZ_CHECK(iv->at.file >= -1 && iv->at.file < (int)u->nfiles);
        /* line 0: only the whole-unit check of units_finish (no key, no text) */
        FZ_CHECK(iv->at.line >= 1 || (iv->fatal && !iv->key[0] && !iv->text[0]));
    }
    for (int k = 0; k < UK_NKEYS; k++) {
        FZ_CHECK(u->where[k].file >= -1 && u->where[k].file < (int)u->nfiles);
        if (u->where[k].file >= 0)
            FZ_CHECK(u->where[k].line >= 1 && units_where_file(u, (enum unit_key)k) != NULL);
    }
    if (u->ioclass_set)
        FZ_CHECK(u->ioclass <= IOC_IDLE);
    FZ_CHECK(u->iolevel >= 0 && u->iolevel <= 7);
    FZ_CHECK(IOPRIO_CLASS_OF(u->ioprio) >= IOC_RT && IOPRIO_CLASS_OF(u->ioprio) <= IOC_IDLE);
    if (u->nice_set)
        FZ_CHECK(u->nice >= -20 && u->nice <= 19);
    if (u->policy_set)
        FZ_CHECK(u->policy == SCHED_OTHER || u->policy == SCHED_BATCH ||
                 u->policy == SCHED_IDLE || u->policy == SCHED_FIFO || u->policy == SCHED_RR);
    FZ_CHECK(strcmp(units_policy_name(u->policy), "?") != 0);
    struct ioprio_eff e = units_effective(u);
    FZ_CHECK(e.cls != IOC_NONE && e.cls <= IOC_IDLE && e.level >= 0 && e.level <= 7);
    FZ_CHECK(fz_terminated(u->exec_prefix, sizeof(u->exec_prefix)));
    if (u->exec)
        FZ_CHECK(u->nexec > 0 && u->where[UK_EXEC].file >= -1);
    if (u->workdir)
        FZ_CHECK(u->workdir[0] == '/' || strcmp(u->workdir, "~") == 0 ||
                 strchr(u->workdir, '%') != NULL);
    FZ_CHECK(u->load_error == 0 || u->load_error == -EBADMSG || u->load_error == -ENOEXEC ||
             u->load_error == -ENOBUFS);
    (void)units_sets_sched(u);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1 || size > MAX_LEN)
        return 0;
    struct unit_sched u;
    units_sched_init(&u, (enum unit_type)(data[0] % 5));
    const uint8_t *p = data + 1, *end = data + size;
    unsigned nfile = 0;
    for (;;) {
        const uint8_t *cut = memmem(p, (size_t)(end - p), SEP, sizeof(SEP) - 1);
        const uint8_t *e = cut ? cut : end;
        char name[32];
        snprintf(name, sizeof(name), nfile ? "/etc/x.d/%u.conf" : "/etc/x", nfile);
        int f = units_set_file(&u, name);
        FZ_CHECK(f == (int)nfile || (f == -E2BIG && nfile > UNITS_DROPINS_MAX));
        int before = u.load_error;
        char *buf = fz_copy(p, (size_t)(e - p));
        int r = units_parse(buf, (size_t)(e - p), &u);
        free(buf);
        FZ_CHECK(r == u.load_error);
        if (before)
            FZ_CHECK(r == before);             /* a refused unit stays refused */
        check(&u);
        nfile++;
        if (!cut)
            break;
        p = cut + sizeof(SEP) - 1;
    }
    /* Empty text, and no text at all, are fine and change nothing. */
    FZ_CHECK(units_parse(NULL, 0, &u) == u.load_error);
    /* The whole-unit checks: a refused unit stays refused, and the result is load_error. */
    int before = u.load_error;
    FZ_CHECK(units_finish(&u) == u.load_error);
    FZ_CHECK(!before || u.load_error == before);
    check(&u);
    units_sched_free(&u);
    FZ_CHECK(u.nfiles == 0 && u.files == NULL && u.invalid == NULL && u.exec == NULL);
    return 0;
}
