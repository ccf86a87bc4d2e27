/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Fuzz trial_rule_parse (the --keep-if rule of `iotriage trial`, act/trial.h): exactly
 * the fuzzer's bytes, no terminator. A rule that parses has its root in range, every
 * operator's children before it, and its text (trial_rule_text) parses again to the same
 * text; one that does not leaves no rule and says why in one line. */
#include "fuzz.h"

#include <errno.h>

#include "act/trial.h"

#define MAX_LEN (TRIAL_RULE_MAX + 16)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > MAX_LEN)
        return 0;
    char *buf = fz_copy(data, size);
    struct trial_rule r;
    char err[256];
    memset(err, 0x7f, sizeof(err));
    int rc = trial_rule_parse(buf, size, &r, err, sizeof(err));
    FZ_CHECK(rc == 0 || rc == -EINVAL);
    if (rc < 0) {
        FZ_CHECK(fz_terminated(err, sizeof(err)));
        FZ_CHECK(strncmp(err, "rule: ", 6) == 0);
        FZ_CHECK(strchr(err, '\n') == NULL);
        FZ_CHECK(r.root == -1);
    } else {
        FZ_CHECK(r.root >= 0 && r.root < r.nn && r.nn <= TRIAL_RULE_NODES);
        for (int i = 0; i < r.nn; i++)
            if (r.n[i].kind != TN_COND)
                FZ_CHECK(r.n[i].left >= 0 && r.n[i].left < i && r.n[i].right >= 0 && r.n[i].right < i);
        char t1[4 * TRIAL_RULE_MAX], t2[4 * TRIAL_RULE_MAX];
        trial_rule_text(&r, t1, sizeof(t1));
        struct trial_rule r2;
        FZ_CHECK(trial_rule_parse(t1, strlen(t1), &r2, err, sizeof(err)) == 0);
        trial_rule_text(&r2, t2, sizeof(t2));
        FZ_CHECK(strcmp(t1, t2) == 0);
    }
    free(buf);
    return 0;
}
