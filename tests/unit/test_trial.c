/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Unit tests of the scheduler trial (act/trial.h): the rule's grammar and parser, the
 * comparison of two phases with its bootstrap interval, the rule's decision, and the
 * guardian on a tree of plain files standing in for sysfs (the kernel itself:
 * tests/integration/test_trial.sh). */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "act/trial.h"
#include "util.h"

static int parse(const char *text, struct trial_rule *r, char *err, size_t n)
{
    return trial_rule_parse(text, strlen(text), r, err, n);
}

static void test_rule_default(void **state)
{
    (void)state;
    struct trial_rule r;
    char err[200] = "", txt[1024], txt2[1024];
    assert_int_equal(parse(TRIAL_RULE_DEFAULT, &r, err, sizeof(err)), 0);
    trial_rule_text(&r, txt, sizeof(txt));
    assert_string_equal(txt, TRIAL_RULE_DEFAULT);     /* written as the parser reads it */
    /* and the text reads back to the same rule */
    struct trial_rule r2;
    assert_int_equal(parse(txt, &r2, err, sizeof(err)), 0);
    trial_rule_text(&r2, txt2, sizeof(txt2));
    assert_string_equal(txt, txt2);
    /* spaces are free */
    assert_int_equal(parse("  be.p99<=noise   and(total.throughput>-10%)", &r, err, sizeof(err)), 0);
    trial_rule_text(&r, txt, sizeof(txt));
    assert_string_equal(txt, "be.p99 <= noise and total.throughput > -10%");
    assert_int_equal(parse("idle.iops >= +2.5%", &r, err, sizeof(err)), 0);
    assert_int_equal(r.n[r.root].kind, TN_COND);
    assert_int_equal(r.n[r.root].classes, 1u << TRIAL_IDLE);
    assert_int_equal(r.n[r.root].fig, TF_IOPS);
    assert_int_equal(r.n[r.root].op, TOP_GE);
    assert_true(r.n[r.root].pct == 2.5);
    /* classes together, written in one order */
    assert_int_equal(parse("be + rt.throughput > -10%", &r, err, sizeof(err)), 0);
    assert_int_equal(r.n[r.root].classes, (1u << TRIAL_RT) | (1u << TRIAL_BE));
    trial_rule_text(&r, txt, sizeof(txt));
    assert_string_equal(txt, "rt+be.throughput > -10%");
    assert_int_equal(trial_classes_slots(r.n[r.root].classes),
                     trial_class_slots(TRIAL_RT) | trial_class_slots(TRIAL_BE));
    /* limits written in plain decimals, as the grammar reads them (fuzz_rule found
     * "total.await <0.000005%" written as 5e-06%, which did not parse back) */
    static const char *const limits[][2] = {
        { "total.await <0.000005%", "total.await < 0.000005%" },
        { "be.p99 > 1000000%", "be.p99 > 1000000%" },
        { "be.p99 > 123456.5%", "be.p99 > 123456.5%" },
        { "be.p99 > -0%", "be.p99 > 0%" },
        { "be.p99 > 0.00000001%", "be.p99 > 0%" },
    };
    for (size_t i = 0; i < sizeof(limits) / sizeof(limits[0]); i++) {
        assert_int_equal(parse(limits[i][0], &r, err, sizeof(err)), 0);
        trial_rule_text(&r, txt, sizeof(txt));
        assert_string_equal(txt, limits[i][1]);
        assert_int_equal(parse(txt, &r2, err, sizeof(err)), 0);
        trial_rule_text(&r2, txt2, sizeof(txt2));
        assert_string_equal(txt, txt2);
    }
}

/* "and" binds tighter than "or", as in C and SQL */
static void test_rule_precedence(void **state)
{
    (void)state;
    struct trial_rule r;
    char err[200], txt[512];
    assert_int_equal(parse("be.p50 < noise or be.p99 < noise and total.iops > -5%", &r, err, sizeof(err)), 0);
    assert_int_equal(r.n[r.root].kind, TN_OR);
    assert_int_equal(r.n[r.n[r.root].right].kind, TN_AND);
    assert_int_equal(parse("(be.p50 < noise or be.p99 < noise) and total.iops > -5%", &r, err, sizeof(err)), 0);
    assert_int_equal(r.n[r.root].kind, TN_AND);
    trial_rule_text(&r, txt, sizeof(txt));
    assert_string_equal(txt, "(be.p50 < noise or be.p99 < noise) and total.iops > -5%");
}

static void refused(const char *text, const char *want)
{
    struct trial_rule r;
    char err[200] = "";
    assert_int_equal(parse(text, &r, err, sizeof(err)), -EINVAL);
    if (!strstr(err, want))
        fail_msg("rule '%s': error '%s' lacks '%s'", text, err, want);
    assert_int_equal(r.root, -1);
}

static void test_rule_errors(void **state)
{
    (void)state;
    refused("", "at its end: expected a class");
    refused("be.p99 << noise", "at character 9 ('<'): expected 'noise' or a percentage");
    refused("be.p98 < noise", "at character 4 ('p'): expected a figure of a class");
    refused("total.p99 < noise", "expected a figure of total");
    refused("be.await < noise", "expected a figure of a class");
    refused("total+be.iops < noise", "expected '.'");
    refused("be+total.iops < noise", "a class after '+'");
    refused("be+.iops < noise", "a class after '+'");
    refused("be.p99 < 10", "expected '%' after the number");
    refused("be.p99 = noise", "expected a comparison");
    refused("be p99 < noise", "expected '.'");
    refused("(be.p99 < noise", "at its end: expected ')'");
    refused("be.p99 < noise and", "at its end: expected a class");
    refused("be.p99 < noise andbe.p50 < noise", "expected 'and', 'or' or the end");
    refused("BE.p99 < noise", "expected a class");
    refused("be.p99 < noisy", "at character 10 ('n'): expected 'noise' or a percentage");
    refused("be.p99 < 1e3%", "expected '%'");
    refused("be.p99 < 2000000%", "at most 1000000");
    refused("((((((((((be.p99 < noise))))))))))", "nested more than 8 deep");
    char many[TRIAL_RULE_MAX + 1] = "";
    for (int i = 0; i < 20; i++)
        strcat(many, i ? " or be.p99<noise" : "be.p99<noise");
    refused(many, "more than 32 conditions");
    char longer[TRIAL_RULE_MAX + 2];
    memset(longer, ' ', sizeof(longer));
    longer[sizeof(longer) - 1] = '\0';
    refused(longer, "longer than");
    struct trial_rule r;
    char err[200];
    assert_int_equal(trial_rule_parse("be.p99 < noise\0x", 16, &r, err, sizeof(err)), -EINVAL);
    assert_non_null(strstr(err, "NUL byte at character 15"));
    /* the length is the rule's end, not the NUL: a rule cut by len parses as cut */
    assert_int_equal(trial_rule_parse("be.p99 < noise and junk", 14, &r, err, sizeof(err)), 0);
}

/* ---- phases ---- */

/* A second with n requests of slot sl in log2 bucket b, and the device's figures. */
static void second(struct trial_phase *p, int sl, double n, int b, int sl2, double n2, int b2, double bytes)
{
    struct trial_second s;
    memset(&s, 0, sizeof(s));
    s.secs = 1.0;
    s.lens = true;
    s.count[sl] = n;
    s.hist[sl][b] = (uint64_t)n;
    if (sl2 >= 0) {
        s.count[sl2] += n2;
        s.hist[sl2][b2] += (uint64_t)n2;
    }
    s.ios = n + n2;
    s.bytes = bytes;
    s.await_ms = (double)(1u << b) / 1000.0;
    trial_phase_add(p, &s);
}

#define BE4 12

/* be falls from 8-16 ms to 1-2 ms, idle rises: lower and higher beyond the noise; the
 * same seconds again: no difference, the interval holding 0. */
static void test_compare(void **state)
{
    (void)state;
    struct trial_phase b = { 0 }, a = { 0 }, same = { 0 };
    for (int i = 0; i < 10; i++) {
        /* a few seconds land a bucket higher, before and after alike: noise */
        second(&b, BE4, 100 + i, i % 4 == 1 ? 15 : 14, TRIAL_SLOT_IDLE, 100 - i, 14, 4e6);
        second(&a, BE4, 300 + i, 11, TRIAL_SLOT_IDLE, 10 + i % 3, 17, 4e6 + 1e4 * i);
        second(&same, BE4, 100 + i, i % 4 == 0 ? 15 : 14, TRIAL_SLOT_IDLE, 100 - i, 14, 4e6);
    }
    struct trial_diff d;
    trial_compare(&b, &a, 1u << BE4, TF_P99, &d);
    assert_true(d.known);
    assert_true(d.after < d.before);
    assert_int_equal(d.dir, -1);
    assert_true(d.hi_pct < 0);
    trial_compare(&b, &a, trial_class_slots(TRIAL_IDLE), TF_P50, &d);
    assert_int_equal(d.dir, 1);
    assert_true(d.lo_pct > 0);
    trial_compare(&b, &same, trial_class_slots(TRIAL_BE), TF_P50, &d);
    assert_int_equal(d.dir, 0);
    assert_true(d.lo_pct <= 0 && d.hi_pct >= 0);
    /* the device's throughput: 4 MB/s both times, +1 % within its noise */
    trial_compare(&b, &a, 0, TF_THROUGHPUT, &d);
    /* it rose through the after phase: that drift widens the interval past 0 */
    assert_true(d.drift_pct > 0.5);
    assert_true(d.lo_pct <= 0);
    assert_int_equal(d.dir, 0);
    trial_compare(&b, &same, 0, TF_THROUGHPUT, &d);
    assert_int_equal(d.dir, 0);
    assert_true(d.change_pct == 0);
    /* rt: no request either time: absent, no change */
    trial_compare(&b, &a, trial_class_slots(TRIAL_RT), TF_P99, &d);
    assert_true(d.absent && d.known);
    assert_int_equal(d.dir, 0);
    /* a load that changed halfway through a phase: its drift is noise, not the scheduler */
    struct trial_phase steady = { 0 }, drifting = { 0 };
    for (int i = 0; i < 10; i++) {
        second(&steady, BE4, 100, 14, -1, 0, 0, 4e6);
        second(&drifting, BE4, 100, i < 5 ? 13 : 15, -1, 0, 0, 4e6);
    }
    trial_compare(&steady, &drifting, 1u << BE4, TF_P99, &d);
    assert_true(d.drift_pct > 50);
    assert_int_equal(d.dir, 0);
    /* the same drift before, and a fall far past it after (a tail cut by a factor of 8 to
     * 16, as bfq cut a best-effort p99 beside idle readers): the drift and the draws'
     * spread add as independent errors (in quadrature, as factors), so it is a fall */
    struct trial_phase fast = { 0 };
    for (int i = 0; i < 10; i++)
        second(&fast, BE4, 100, 11, -1, 0, 0, 4e6);
    trial_compare(&drifting, &fast, 1u << BE4, TF_P99, &d);
    assert_true(d.drift_pct > 50);
    assert_true(d.change_pct < -80);
    assert_true(d.lo_pct < d.change_pct && d.hi_pct > d.change_pct);
    assert_int_equal(d.dir, -1);
    /* and the interval is the drift's at least: nothing narrower than an A/A change */
    assert_true(log1p(d.hi_pct / 100) - log1p(d.change_pct / 100) >= log1p(d.drift_pct / 100) - 1e-9);
    trial_phase_free(&fast);
    trial_phase_free(&steady);
    trial_phase_free(&drifting);
    /* the same inputs, the same interval: the draws come from a fixed seed */
    struct trial_diff d1, d2;
    trial_compare(&b, &same, trial_class_slots(TRIAL_BE), TF_P99, &d1);
    trial_compare(&b, &same, trial_class_slots(TRIAL_BE), TF_P99, &d2);
    assert_true(d1.lo_pct == d2.lo_pct && d1.hi_pct == d2.hi_pct);
    trial_phase_free(&b);
    trial_phase_free(&a);
    trial_phase_free(&same);
}

static bool decide(const char *rule, const struct trial_phase *b, const struct trial_phase *a, bool lens,
                   struct trial_cond_result *res, size_t *n)
{
    struct trial_rule r;
    char err[200];
    assert_int_equal(parse(rule, &r, err, sizeof(err)), 0);
    return trial_rule_eval(&r, b, a, lens, res, n);
}

static void test_default_rule_decides(void **state)
{
    (void)state;
    struct trial_phase b = { 0 }, better = { 0 }, same = { 0 }, slower = { 0 }, starved = { 0 };
    for (int i = 0; i < 10; i++) {
        second(&b, BE4, 100 + i, i % 4 == 1 ? 15 : 14, TRIAL_SLOT_IDLE, 100 - i, 14, 4e6);
        /* be faster, idle far slower (the point of an idle class), throughput the same */
        second(&better, BE4, 150 + i, 11, TRIAL_SLOT_IDLE, 50 - i, 18, 4e6);
        second(&same, BE4, 100 + i, i % 4 == 0 ? 15 : 14, TRIAL_SLOT_IDLE, 100 - i, 14, 4e6);
        /* be faster but served less: its share of the device's bytes falls by 23 % */
        second(&slower, BE4, 80, 11, TRIAL_SLOT_IDLE, 120, 14, 4e6);
        /* be gone entirely after: cannot be judged */
        second(&starved, TRIAL_SLOT_IDLE, 100, 14, -1, 0, 0, 4e6);
    }
    struct trial_cond_result res[TRIAL_CONDS_MAX];
    size_t n;
    char line[400];
    struct trial_rule r;
    char err[200];
    assert_int_equal(parse(TRIAL_RULE_DEFAULT, &r, err, sizeof(err)), 0);

    assert_true(trial_rule_eval(&r, &b, &better, true, res, &n));
    assert_int_equal(n, 7);                          /* every condition reported */
    trial_cond_text(&r, &res[1], line, sizeof(line));   /* be.p99 < noise */
    assert_non_null(strstr(line, "be.p99 < noise: "));
    assert_non_null(strstr(line, "lower): holds"));
    trial_cond_text(&r, &res[2], line, sizeof(line));   /* rt.p50 < noise: no rt */
    assert_non_null(strstr(line, "no rt request before or after: no change: fails"));
    trial_cond_text(&r, &res[5], line, sizeof(line));   /* rt.p99 <= noise */
    assert_non_null(strstr(line, "holds"));

    /* no effect: nothing improved beyond the noise, so nothing to keep */
    assert_false(trial_rule_eval(&r, &b, &same, true, res, &n));
    trial_cond_text(&r, &res[1], line, sizeof(line));
    assert_non_null(strstr(line, "no difference): fails"));
    assert_true(res[4].holds);                       /* be.p99 <= noise: not worse */

    assert_false(trial_rule_eval(&r, &b, &slower, true, res, &n));
    assert_false(res[6].holds);                      /* rt+be.throughput > -10% */
    trial_cond_text(&r, &res[6], line, sizeof(line));
    assert_non_null(strstr(line, "-23 %"));
    /* in the better case, idle's throughput fell by far more: it does not count */
    assert_true(trial_rule_eval(&r, &b, &better, true, res, &n));
    struct trial_diff d;
    trial_compare(&b, &better, trial_class_slots(TRIAL_IDLE), TF_THROUGHPUT, &d);
    assert_true(d.change_pct < -40);

    assert_false(trial_rule_eval(&r, &b, &starved, true, res, &n));
    trial_cond_text(&r, &res[4], line, sizeof(line));
    assert_non_null(strstr(line, "cannot be judged"));

    /* a rule of one's own: keep unless idle gets more than 10x slower */
    assert_false(decide("idle.p50 < 1000%", &b, &better, true, res, &n));
    assert_true(decide("idle.p50 < 2000%", &b, &better, true, res, &n));
    trial_phase_free(&b);
    trial_phase_free(&better);
    trial_phase_free(&same);
    trial_phase_free(&slower);
    trial_phase_free(&starved);
}

/* Without the lens, a class's figures are the device's await and requests. */
static void test_rule_without_lens(void **state)
{
    (void)state;
    struct trial_phase b = { 0 }, a = { 0 };
    for (int i = 0; i < 10; i++) {
        second(&b, BE4, 100, 14, -1, 0, 0, 4e6);     /* await 16.384 ms */
        second(&a, BE4, 100, 12, -1, 0, 0, 4e6);     /* 4.096 ms */
    }
    for (size_t i = 0; i < b.n; i++)
        b.s[i].lens = a.s[i].lens = false;
    assert_false(trial_phase_lens(&b));
    struct trial_cond_result res[TRIAL_CONDS_MAX];
    size_t n;
    assert_true(decide("be.p99 < -50%", &b, &a, false, res, &n));
    assert_true(res[0].d.before > 16 && res[0].d.after < 4.2);
    /* rt has no request of its own, but without the lens the device's await stands for it */
    assert_true(decide("rt.p50 < noise", &b, &a, false, res, &n));
    trial_phase_free(&b);
    trial_phase_free(&a);
}

/* ---- the guardian, on plain files ---- */

static char root[64];

static void put(const char *rel, const char *text)
{
    char p[256];
    snprintf(p, sizeof(p), "%s/%s", root, rel);
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static void get(const char *rel, char *buf, size_t n)
{
    char p[256];
    snprintf(p, sizeof(p), "%s/%s", root, rel);
    assert_true(read_file_at(AT_FDCWD, p, buf, n) >= 0);
    str_chomp(buf);
}

static int tree_setup(void **state)
{
    (void)state;
    strcpy(root, "/tmp/iotriage-trial.XXXXXX");
    assert_non_null(mkdtemp(root));
    char p[256];
    const char *dirs[] = { "class", "class/block", "class/block/sdz", "class/block/sdz/queue",
                           "class/block/sdz/mq", "class/block/sdz/mq/0" };
    for (size_t i = 0; i < ARRAY_SIZE(dirs); i++) {
        snprintf(p, sizeof(p), "%s/%s", root, dirs[i]);
        assert_int_equal(mkdir(p, 0755), 0);
    }
    put("class/block/sdz/mq/0/nr_tags", "128\n");
    return 0;
}

static int tree_teardown(void **state)
{
    (void)state;
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
    return system(cmd) == 0 ? 0 : -1;
}

/* Start a guardian for sdz (none, 64) under trial of mq-deadline; the device then shows
 * `now`, nr; the trial ends with `word` (0: none, as when it is killed). Returns the
 * guardian's exit status. */
static int guard_case(const char *now, const char *nr, char word)
{
    put("class/block/sdz/queue/scheduler", "[none] mq-deadline kyber\n");
    put("class/block/sdz/queue/nr_requests", "64\n");
    struct sched_state orig;
    assert_int_equal(sched_read(root, "sdz", &orig), 0);
    struct guard g;
    assert_int_equal(guard_start(&g, root, "sdz", &orig, "mq-deadline"), 0);
    put("class/block/sdz/queue/scheduler", now);
    put("class/block/sdz/queue/nr_requests", nr);
    if (word)
        guard_tell(&g, word);
    else
        close(g.fd);                 /* the trial died: end of file without a word */
    int st = 0;
    assert_int_equal(waitpid(g.pid, &st, 0), g.pid);
    assert_true(WIFEXITED(st));
    return WEXITSTATUS(st);
}

static void test_guardian(void **state)
{
    (void)state;
    char sched[64], nr[32];
    /* killed mid-trial: put back, scheduler first, then nr_requests */
    assert_int_equal(guard_case("none [mq-deadline] kyber\n", "256\n", 0), 0);
    get("class/block/sdz/queue/scheduler", sched, sizeof(sched));
    get("class/block/sdz/queue/nr_requests", nr, sizeof(nr));
    assert_string_equal(sched, "none");
    assert_string_equal(nr, "64");
    /* kept: left as it is */
    assert_int_equal(guard_case("none [mq-deadline] kyber\n", "256\n", GUARD_KEEP), 0);
    get("class/block/sdz/queue/scheduler", sched, sizeof(sched));
    assert_string_equal(sched, "none [mq-deadline] kyber");
    /* put back by the trial itself: nothing to do */
    assert_int_equal(guard_case("[none] mq-deadline kyber\n", "64\n", GUARD_DONE), 0);
    /* someone chose kyber since: not the guardian's to undo */
    assert_int_equal(guard_case("none mq-deadline [kyber]\n", "256\n", 0), 0);
    get("class/block/sdz/queue/scheduler", sched, sizeof(sched));
    assert_string_equal(sched, "none mq-deadline [kyber]");
    /* the original scheduler with the trial's depth (a switch back cut short) */
    assert_int_equal(guard_case("[none] mq-deadline kyber\n", "32\n", 0), 0);
    get("class/block/sdz/queue/nr_requests", nr, sizeof(nr));
    assert_string_equal(nr, "64");
}

static void test_guard_should_restore(void **state)
{
    (void)state;
    struct sched_state orig = { .sched = "none", .nr_requests = 64 }, now = orig;
    assert_false(guard_should_restore(&now, &orig, "mq-deadline"));
    str_copy(now.sched, "mq-deadline", sizeof(now.sched));
    assert_true(guard_should_restore(&now, &orig, "mq-deadline"));
    str_copy(now.sched, "bfq", sizeof(now.sched));
    assert_false(guard_should_restore(&now, &orig, "mq-deadline"));
    str_copy(now.sched, "none", sizeof(now.sched));
    now.nr_requests = 32;
    assert_true(guard_should_restore(&now, &orig, "mq-deadline"));
}

/* The progress the screen reads (act/trial_run.c): phases, the end, and garbage ignored. */
static void test_progress_lines(void **state)
{
    (void)state;
    struct trial_run t;
    memset(&t, 0, sizeof(t));
    trial_progress_line(&t, "before 7 10");
    assert_string_equal(t.phase, "before");
    assert_true(t.remain == 7 && t.total == 10);
    trial_progress_line(&t, "switching");
    assert_string_equal(t.phase, "switching");
    assert_true(t.remain == 0 && t.total == 0);
    trial_progress_line(&t, "settle 2 2");
    trial_progress_line(&t, "after 3 x");        /* a bad number: no countdown */
    assert_string_equal(t.phase, "after");
    assert_true(t.remain == 0);
    trial_progress_line(&t, "after nan inf");
    assert_true(t.remain == 0 && t.total == 0);
    trial_progress_line(&t, "nonsense 1 2");     /* unknown words change nothing */
    trial_progress_line(&t, "");
    trial_progress_line(&t, "averyveryverylongword 1 2");
    assert_string_equal(t.phase, "after");
    assert_false(t.done);
    trial_progress_line(&t, "final mq-deadline 128");
    assert_string_equal(t.final_sched, "mq-deadline");
    assert_int_equal(t.final_nr, 128);
    for (int i = 0; i < 12; i++)
        trial_progress_line(&t, "change be p99 -45 lower");
    assert_int_equal(t.nchanges, 8);                 /* at most what it holds */
    assert_string_equal(t.changes[0], "be p99 -45 lower");
    trial_progress_line(&t, "reason the rule holds; be.p99 < noise");
    assert_string_equal(t.reason, "the rule holds; be.p99 < noise");
    trial_progress_line(&t, "done 0 keep");
    assert_true(t.done);
    assert_int_equal(t.status, 0);
    assert_string_equal(t.decision, "keep");
    assert_string_equal(t.phase, "done");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rule_default),
        cmocka_unit_test(test_rule_precedence),
        cmocka_unit_test(test_rule_errors),
        cmocka_unit_test(test_compare),
        cmocka_unit_test(test_default_rule_decides),
        cmocka_unit_test(test_rule_without_lens),
        cmocka_unit_test(test_guard_should_restore),
        cmocka_unit_test(test_progress_lines),
        cmocka_unit_test_setup_teardown(test_guardian, tree_setup, tree_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
