/* SPDX-License-Identifier: GPL-2.0-or-later */
/* act/trial_calc.c: the pure part of a scheduler trial: figures of a phase, comparison
 * with a bootstrap interval, the rule's parser and evaluation (act/trial.h). */
#include "act/trial.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "source/ioprio.h"
#include "source/lens.h"
#include "util.h"
#include "util/num.h"

/* ---- slots and names ---- */

int trial_slot(unsigned prio)
{
    unsigned cls = IOPRIO_CLASS_OF(prio), level = IOPRIO_LEVEL_OF(prio) & 7u;
    switch (cls) {
    case IOC_RT: return (int)level;
    case IOC_BE: return 8 + (int)level;
    case IOC_IDLE: return TRIAL_SLOT_IDLE;
    case IOC_NONE: return TRIAL_SLOT_NONE;
    default: return -1;
    }
}

const char *trial_slot_name(int slot)
{
    static const char *const names[TRIAL_SLOTS] = {
        "rt/0", "rt/1", "rt/2", "rt/3", "rt/4", "rt/5", "rt/6", "rt/7",
        "be/0", "be/1", "be/2", "be/3", "be/4", "be/5", "be/6", "be/7", "idle", "none",
    };
    return slot >= 0 && slot < TRIAL_SLOTS ? names[slot] : "?";
}

const char *trial_class_name(enum trial_class c)
{
    static const char *const names[TRIAL_NCLASS] = { "rt", "be", "idle", "total" };
    return (unsigned)c < TRIAL_NCLASS ? names[c] : "?";
}

uint32_t trial_class_slots(enum trial_class c)
{
    switch (c) {
    case TRIAL_RT: return 0xffu;
    case TRIAL_BE: return 0xff00u | (1u << TRIAL_SLOT_NONE);
    case TRIAL_IDLE: return 1u << TRIAL_SLOT_IDLE;
    default: return 0;
    }
}

uint32_t trial_classes_slots(unsigned classes)
{
    uint32_t m = 0;
    for (int c = TRIAL_RT; c < TRIAL_TOTAL; c++)
        if (classes & (1u << c))
            m |= trial_class_slots((enum trial_class)c);
    return m;
}

const char *trial_figure_name(enum trial_figure f)
{
    static const char *const names[TF_N] = { "p50", "p99", "iops", "throughput", "await" };
    return (unsigned)f < TF_N ? names[f] : "?";
}

bool trial_figure_valid(enum trial_class c, enum trial_figure f)
{
    if (c == TRIAL_TOTAL)
        return f == TF_IOPS || f == TF_THROUGHPUT || f == TF_AWAIT;
    return f == TF_P50 || f == TF_P99 || f == TF_IOPS || f == TF_THROUGHPUT;
}

/* ---- phases ---- */

void trial_phase_add(struct trial_phase *p, const struct trial_second *s)
{
    if (p->n == p->cap) {
        p->cap = p->cap ? 2 * p->cap : 16;
        p->s = xreallocarray(p->s, p->cap, sizeof(*p->s));
    }
    p->s[p->n++] = *s;
}

void trial_phase_free(struct trial_phase *p)
{
    free(p->s);
    memset(p, 0, sizeof(*p));
}

bool trial_phase_lens(const struct trial_phase *p)
{
    if (p->n == 0)
        return false;
    for (size_t i = 0; i < p->n; i++)
        if (!p->s[i].lens)
            return false;
    return true;
}

double trial_figure(const struct trial_phase *p, uint32_t slots, enum trial_figure f,
                    const size_t *idx, size_t n)
{
    if (!idx)
        n = p->n;
    double secs = 0, ios = 0, bytes = 0, await_w = 0, await_sum = 0, count = 0, sel_bytes = 0;
    uint64_t hist[LENS_HIST] = { 0 };
    for (size_t k = 0; k < n; k++) {
        const struct trial_second *s = &p->s[idx ? idx[k] : k];
        secs += s->secs;
        ios += s->ios;
        bytes += s->bytes;
        if (!isnan(s->await_ms) && s->ios > 0)
            await_sum += s->await_ms * s->ios, await_w += s->ios;
        double per_req = s->ios > 0 ? s->bytes / s->ios : 0;
        for (int sl = 0; slots && sl < TRIAL_SLOTS; sl++) {
            if (!(slots & (1u << sl)))
                continue;
            count += s->count[sl];
            sel_bytes += s->count[sl] * per_req;
            for (int b = 0; b < LENS_HIST; b++)
                hist[b] += s->hist[sl][b];
        }
    }
    if (secs <= 0)
        return (double)NAN;
    switch (f) {
    case TF_P50: return slots ? lens_hist_quantile(hist, LENS_HIST, 0.50) : (double)NAN;
    case TF_P99: return slots ? lens_hist_quantile(hist, LENS_HIST, 0.99) : (double)NAN;
    case TF_IOPS: return (slots ? count : ios) / secs;
    case TF_THROUGHPUT: return (slots ? sel_bytes : bytes) / secs;
    case TF_AWAIT: return await_w > 0 ? await_sum / await_w : (double)NAN;
    default: return (double)NAN;
    }
}

/* The change in percent; counts and rates from or to 0 are +-infinite (or 0). */
static double change_pct(double b, double a)
{
    if (isnan(b) || isnan(a))
        return (double)NAN;
    if (b == 0)
        return a == 0 ? 0 : a > 0 ? (double)INFINITY : -(double)INFINITY;
    return (a / b - 1.0) * 100.0;
}

/* xorshift64*: the bootstrap's draws, from a fixed seed. */
static uint64_t rng_next(uint64_t *x)
{
    *x ^= *x >> 12;
    *x ^= *x << 25;
    *x ^= *x >> 27;
    return *x * 0x2545F4914F6CDD1Dull;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y ? 1 : 0;
}

/* The figure is the lens's for a class, the device's for total. */
static bool slots_absent(const struct trial_phase *p, uint32_t slots)
{
    for (size_t i = 0; i < p->n; i++)
        for (int sl = 0; sl < TRIAL_SLOTS; sl++)
            if ((slots & (1u << sl)) && p->s[i].count[sl] > 0)
                return false;
    return true;
}

/* How far the figure moved between the first and the second half of one phase, under one
 * scheduler (an A/A comparison), as a factor's logarithm, |ln(second / first)|: the drift
 * of the load and the machine, which draws within a phase cannot see. A ratio, so that a
 * halving and a doubling are the same drift (in percent, -50 % and +100 %). NAN when
 * unknown (fewer than 4 seconds, or the figure 0 or unknown in a half). */
static double phase_drift(const struct trial_phase *p, uint32_t slots, enum trial_figure f)
{
    if (p->n < 4)
        return (double)NAN;
    struct trial_phase h1 = { .s = p->s, .n = p->n / 2 }, h2 = { .s = p->s + p->n / 2, .n = p->n - p->n / 2 };
    double x = trial_figure(&h1, slots, f, NULL, 0), y = trial_figure(&h2, slots, f, NULL, 0);
    if (!(x > 0) || !(y > 0) || isinf(x) || isinf(y))
        return (double)NAN;
    return y > x ? num_ln(y / x) : num_ln(x / y);
}

/* An end c of the bootstrap's interval of the change x (both in percent), moved away from
 * x by the drift k (a logarithm): as factors, its distance from x and the drift added in
 * quadrature (two sources of error, independent). side is -1 for the lower end, +1 for
 * the upper. An end at -100 % or +infinity stays; so does one of a change that is. */
static double widen(double x, double c, double k, int side)
{
    double lx = num_ln(1.0 + x / 100.0), lc = num_ln(1.0 + c / 100.0);
    if (!(k > 0) || isinf(lc) || isnan(lc))
        return c;
    if (isinf(lx) || isnan(lx))
        return (num_exp(lc + side * k) - 1.0) * 100.0;
    double dist = side * (lc - lx);
    if (dist < 0)
        dist = 0;
    return (num_exp(lx + side * num_sqrt(dist * dist + k * k)) - 1.0) * 100.0;
}

void trial_compare(const struct trial_phase *b, const struct trial_phase *a, uint32_t slots,
                   enum trial_figure f, struct trial_diff *out)
{
    memset(out, 0, sizeof(*out));
    out->before = trial_figure(b, slots, f, NULL, 0);
    out->after = trial_figure(a, slots, f, NULL, 0);
    out->change_pct = change_pct(out->before, out->after);
    out->lo_pct = out->hi_pct = out->drift_pct = (double)NAN;
    if (slots && slots_absent(b, slots) && slots_absent(a, slots)) {
        out->absent = out->known = true;
        out->change_pct = out->lo_pct = out->hi_pct = 0;
        return;
    }
    out->known = !isnan(out->change_pct);
    if (!out->known || b->n == 0 || a->n == 0)
        return;
    size_t *ib = xcalloc(b->n, sizeof(*ib)), *ia = xcalloc(a->n, sizeof(*ia));
    double *ch = xcalloc(TRIAL_BOOT, sizeof(*ch));
    size_t m = 0;
    uint64_t x = 0x9E3779B97F4A7C15ull;
    for (int k = 0; k < TRIAL_BOOT; k++) {
        for (size_t i = 0; i < b->n; i++)
            ib[i] = (size_t)(rng_next(&x) % b->n);
        for (size_t i = 0; i < a->n; i++)
            ia[i] = (size_t)(rng_next(&x) % a->n);
        double c = change_pct(trial_figure(b, slots, f, ib, b->n), trial_figure(a, slots, f, ia, a->n));
        if (!isnan(c))
            ch[m++] = c;
    }
    /* a figure unknown in most draws has no interval worth giving */
    if (m >= TRIAL_BOOT / 2) {
        qsort(ch, m, sizeof(*ch), cmp_double);
        double drift = phase_drift(b, slots, f);
        double da = phase_drift(a, slots, f);
        drift = isnan(drift) ? da : isnan(da) ? drift : drift > da ? drift : da;
        out->drift_pct = isnan(drift) ? (double)NAN : (num_exp(drift) - 1.0) * 100.0;
        if (isnan(drift))
            drift = 0;
        /* the bootstrap's interval, each end moved out by the drift */
        out->lo_pct = widen(out->change_pct, ch[(size_t)(0.025 * (double)(m - 1) + 0.5)], drift, -1);
        out->hi_pct = widen(out->change_pct, ch[(size_t)(0.975 * (double)(m - 1) + 0.5)], drift, 1);
        out->dir = out->lo_pct > 0 ? 1 : out->hi_pct < 0 ? -1 : 0;
    } else {
        out->dir = out->change_pct > 0 ? 1 : out->change_pct < 0 ? -1 : 0;
    }
    if (fabs(out->change_pct) < TRIAL_MIN_CHANGE_PCT)
        out->dir = 0;
    free(ib);
    free(ia);
    free(ch);
}

/* ---- the rule ---- */

struct lexer {
    const char *p, *end, *start;
    char *err;
    size_t errlen;
    struct trial_rule *r;
    int depth;
};

static void skip_space(struct lexer *lx)
{
    while (lx->p < lx->end && (*lx->p == ' ' || *lx->p == '\t' || *lx->p == '\n'))
        lx->p++;
}

static int fail_at(struct lexer *lx, const char *what)
{
    skip_space(lx);
    size_t at = (size_t)(lx->p - lx->start);
    if (lx->p >= lx->end)
        err_set(lx->err, lx->errlen, "rule: at its end: expected %s", what);
    else
        err_set(lx->err, lx->errlen, "rule: at character %zu ('%c'): expected %s", at + 1,
                (*lx->p >= 0x20 && *lx->p < 0x7f) ? *lx->p : '?', what);
    return -EINVAL;
}

/* A keyword made of [a-z0-9] at p: true and past it when it is word. */
static bool take_word(struct lexer *lx, const char *word)
{
    skip_space(lx);
    size_t n = strlen(word);
    if ((size_t)(lx->end - lx->p) < n || memcmp(lx->p, word, n) != 0)
        return false;
    const char *q = lx->p + n;
    if (q < lx->end && ((*q >= 'a' && *q <= 'z') || (*q >= '0' && *q <= '9') || *q == '_'))
        return false;
    lx->p = q;
    return true;
}

static bool take_char(struct lexer *lx, char c)
{
    skip_space(lx);
    if (lx->p < lx->end && *lx->p == c) {
        lx->p++;
        return true;
    }
    return false;
}

static int new_node(struct lexer *lx, enum trial_node_kind kind)
{
    if (lx->r->nn >= TRIAL_RULE_NODES) {
        err_set(lx->err, lx->errlen, "rule: more than %d conditions and operators", TRIAL_RULE_NODES);
        return -EINVAL;
    }
    int i = lx->r->nn++;
    memset(&lx->r->n[i], 0, sizeof(lx->r->n[i]));
    lx->r->n[i].kind = kind;
    lx->r->n[i].left = lx->r->n[i].right = -1;
    return i;
}

static int parse_or(struct lexer *lx);

static int parse_cond(struct lexer *lx)
{
    unsigned classes = 0;
    int cls = -1;
    if (take_word(lx, "total")) {
        cls = TRIAL_TOTAL;
        classes = 1u << TRIAL_TOTAL;
    } else {
        do {
            int c = -1;
            for (int k = TRIAL_RT; k < TRIAL_TOTAL; k++)
                if (take_word(lx, trial_class_name((enum trial_class)k))) {
                    c = k;
                    break;
                }
            if (c < 0)
                return fail_at(lx, classes ? "a class after '+': rt, be or idle"
                                           : "a class: rt, be, idle (joined with '+') or total, or '('");
            classes |= 1u << c;
            cls = c;
        } while (take_char(lx, '+'));
    }
    if (!take_char(lx, '.'))
        return fail_at(lx, "'.' and a figure");
    int fig = -1;
    for (int f = 0; f < TF_N; f++)
        if (trial_figure_valid((enum trial_class)cls, (enum trial_figure)f) && take_word(lx, trial_figure_name((enum trial_figure)f))) {
            fig = f;
            break;
        }
    if (fig < 0)
        return fail_at(lx, cls == TRIAL_TOTAL ? "a figure of total: iops, throughput or await"
                                              : "a figure of a class: p50, p99 or iops");
    skip_space(lx);
    enum trial_op op;
    if (take_char(lx, '<'))
        op = take_char(lx, '=') ? TOP_LE : TOP_LT;
    else if (take_char(lx, '>'))
        op = take_char(lx, '=') ? TOP_GE : TOP_GT;
    else
        return fail_at(lx, "a comparison: <, <=, > or >=");
    int i = new_node(lx, TN_COND);
    if (i < 0)
        return i;
    struct trial_node *nd = &lx->r->n[i];
    nd->classes = classes;
    nd->fig = (enum trial_figure)fig;
    nd->op = op;
    if (take_word(lx, "noise")) {
        nd->noise = true;
        return i;
    }
    skip_space(lx);
    const char *q = lx->p;
    bool neg = false;
    if (q < lx->end && (*q == '+' || *q == '-'))
        neg = *q++ == '-';
    const char *num = q;
    double v;
    if (parse_udouble(&q, lx->end, &v) < 0 || q == num)
        return fail_at(lx, "'noise' or a percentage such as -10%");
    if (v > 1e6) {
        lx->p = num;
        return fail_at(lx, "a percentage of at most 1000000");
    }
    lx->p = q;
    if (!take_char(lx, '%'))
        return fail_at(lx, "'%' after the number");
    nd->pct = neg ? -v : v;
    return i;
}

static int parse_unit(struct lexer *lx)
{
    if (take_char(lx, '(')) {
        if (++lx->depth > 8) {
            err_set(lx->err, lx->errlen, "rule: parentheses nested more than 8 deep");
            return -EINVAL;
        }
        int i = parse_or(lx);
        if (i < 0)
            return i;
        if (!take_char(lx, ')'))
            return fail_at(lx, "')' or a joining 'and'/'or'");
        lx->depth--;
        return i;
    }
    return parse_cond(lx);
}

static int parse_join(struct lexer *lx, enum trial_node_kind kind)
{
    int left = kind == TN_AND ? parse_unit(lx) : parse_join(lx, TN_AND);
    if (left < 0)
        return left;
    while (take_word(lx, kind == TN_AND ? "and" : "or")) {
        int right = kind == TN_AND ? parse_unit(lx) : parse_join(lx, TN_AND);
        if (right < 0)
            return right;
        int i = new_node(lx, kind);
        if (i < 0)
            return i;
        lx->r->n[i].left = left;
        lx->r->n[i].right = right;
        left = i;
    }
    return left;
}

static int parse_or(struct lexer *lx)
{
    return parse_join(lx, TN_OR);
}

int trial_rule_parse(const char *text, size_t len, struct trial_rule *r, char *err, size_t errlen)
{
    memset(r, 0, sizeof(*r));
    r->root = -1;
    if (len > TRIAL_RULE_MAX) {
        err_set(err, errlen, "rule: longer than %d characters", TRIAL_RULE_MAX);
        return -EINVAL;
    }
    for (size_t i = 0; i < len; i++)
        if (text[i] == '\0') {
            err_set(err, errlen, "rule: a NUL byte at character %zu", i + 1);
            return -EINVAL;
        }
    struct lexer lx = { .p = text, .end = text + len, .start = text, .err = err, .errlen = errlen, .r = r };
    int root = parse_or(&lx);
    if (root >= 0) {
        skip_space(&lx);
        if (lx.p < lx.end)
            root = fail_at(&lx, "'and', 'or' or the end of the rule");
    }
    if (root < 0) {
        memset(r, 0, sizeof(*r));
        r->root = -1;
        return root;
    }
    r->root = root;
    return 0;
}

static const char *op_text(enum trial_op op)
{
    return op == TOP_LT ? "<" : op == TOP_LE ? "<=" : op == TOP_GT ? ">" : ">=";
}

/* "rt+be", "total" */
static void subject_text(unsigned classes, char *buf, size_t n)
{
    buf[0] = '\0';
    for (int c = TRIAL_RT; c < TRIAL_NCLASS; c++)
        if (classes & (1u << c)) {
            size_t used = strlen(buf);
            snprintf(buf + used, n - used, "%s%s", used ? "+" : "", trial_class_name((enum trial_class)c));
        }
}

/* A limit as the grammar reads it back: plain decimals (no exponent, which %g gives
 * below 1e-4 and past 6 digits), at most 6 after the point, trailing zeros dropped. */
static void pct_text(double pct, char *buf, size_t n)
{
    snprintf(buf, n, "%.6f", pct);
    char *dot = strchr(buf, '.');
    if (dot) {
        char *e = buf + strlen(buf);
        while (e > dot + 1 && e[-1] == '0')
            *--e = '\0';
        if (e == dot + 1)
            *dot = '\0';
    }
    if (strcmp(buf, "-0") == 0)
        snprintf(buf, n, "0");
}

static void cond_head(const struct trial_node *nd, char *buf, size_t n)
{
    char subj[32];
    subject_text(nd->classes, subj, sizeof(subj));
    if (nd->noise) {
        snprintf(buf, n, "%s.%s %s noise", subj, trial_figure_name(nd->fig), op_text(nd->op));
    } else {
        char num[40];
        pct_text(nd->pct, num, sizeof(num));
        snprintf(buf, n, "%s.%s %s %s%%", subj, trial_figure_name(nd->fig), op_text(nd->op), num);
    }
}

static void node_text(const struct trial_rule *r, int i, enum trial_node_kind parent, char *buf, size_t n)
{
    const struct trial_node *nd = &r->n[i];
    if (nd->kind == TN_COND) {
        cond_head(nd, buf, n);
        return;
    }
    bool paren = parent == TN_AND && nd->kind == TN_OR;
    char l[TRIAL_RULE_MAX * 2], rt[TRIAL_RULE_MAX * 2];
    node_text(r, nd->left, nd->kind, l, sizeof(l));
    node_text(r, nd->right, nd->kind, rt, sizeof(rt));
    snprintf(buf, n, "%s%s %s %s%s", paren ? "(" : "", l, nd->kind == TN_AND ? "and" : "or", rt, paren ? ")" : "");
}

void trial_rule_text(const struct trial_rule *r, char *buf, size_t n)
{
    if (n == 0)
        return;
    buf[0] = '\0';
    if (r->root >= 0 && r->root < r->nn)
        node_text(r, r->root, TN_OR, buf, n);
}

static bool cond_holds(const struct trial_node *nd, const struct trial_diff *d)
{
    if (!d->known)
        return false;
    if (nd->noise) {
        switch (nd->op) {
        case TOP_LT: return d->dir < 0;
        case TOP_LE: return d->dir <= 0;
        case TOP_GT: return d->dir > 0;
        default: return d->dir >= 0;
        }
    }
    double c = d->change_pct;
    switch (nd->op) {
    case TOP_LT: return c < nd->pct;
    case TOP_LE: return c <= nd->pct;
    case TOP_GT: return c > nd->pct;
    default: return c >= nd->pct;
    }
}

static bool eval_node(const struct trial_rule *r, int i, const struct trial_phase *b,
                      const struct trial_phase *a, bool lens, struct trial_cond_result *res,
                      size_t *nres)
{
    const struct trial_node *nd = &r->n[i];
    if (nd->kind != TN_COND) {
        /* both sides always: every condition is reported, not only the first that decides */
        bool l = eval_node(r, nd->left, b, a, lens, res, nres);
        bool rr = eval_node(r, nd->right, b, a, lens, res, nres);
        return nd->kind == TN_AND ? l && rr : l || rr;
    }
    struct trial_cond_result *c = &res[*nres];
    memset(c, 0, sizeof(*c));
    c->node = i;
    enum trial_figure f = nd->fig;
    uint32_t slots = trial_classes_slots(nd->classes);
    if (!lens && slots) {
        /* no lens: the device's figures stand for every class */
        slots = 0;
        f = f == TF_P50 || f == TF_P99 ? TF_AWAIT : f;
    }
    trial_compare(b, a, slots, f, &c->d);
    c->holds = cond_holds(nd, &c->d);
    if (*nres < TRIAL_CONDS_MAX)
        (*nres)++;
    return c->holds;
}

bool trial_rule_eval(const struct trial_rule *r, const struct trial_phase *b,
                     const struct trial_phase *a, bool lens,
                     struct trial_cond_result *res, size_t *nres)
{
    *nres = 0;
    if (r->root < 0 || r->root >= r->nn)
        return false;
    return eval_node(r, r->root, b, a, lens, res, nres);
}

static void fig_value(char *buf, size_t n, enum trial_figure f, double v)
{
    if (isnan(v))
        snprintf(buf, n, "-");
    else if (f == TF_THROUGHPUT)
        snprintf(buf, n, "%.1f MB/s", v / 1e6);
    else if (f == TF_IOPS)
        snprintf(buf, n, "%.1f/s", v);
    else
        snprintf(buf, n, "%.2f ms", v);
}

void trial_cond_text(const struct trial_rule *r, const struct trial_cond_result *c, char *buf,
                     size_t n)
{
    const struct trial_node *nd = &r->n[c->node];
    char head[96], bv[32], av[32], iv[64] = "";
    cond_head(nd, head, sizeof(head));
    const struct trial_diff *d = &c->d;
    if (d->absent) {
        char subj[32];
        subject_text(nd->classes, subj, sizeof(subj));
        snprintf(buf, n, "%s: no %s request before or after: no change: %s", head, subj, c->holds ? "holds" : "fails");
        return;
    }
    fig_value(bv, sizeof(bv), nd->fig, d->before);
    fig_value(av, sizeof(av), nd->fig, d->after);
    if (!d->known) {
        snprintf(buf, n, "%s: %s -> %s: cannot be judged (no request in one phase): fails", head, bv, av);
        return;
    }
    if (!isnan(d->lo_pct))
        snprintf(iv, sizeof(iv), ", noise %+.0f..%+.0f %%", d->lo_pct, d->hi_pct);
    snprintf(buf, n, "%s: %s -> %s (%+.0f %%%s: %s): %s", head, bv, av, d->change_pct, iv,
             d->dir < 0 ? "lower" : d->dir > 0 ? "higher" : "no difference", c->holds ? "holds" : "fails");
}
