/* SPDX-License-Identifier: GPL-2.0-or-later */
/* audit/unitfile.c: the systemd unit-file parser: the text of one unit file or drop-in
 * applied to the scheduling settings of a unit (pure: no file is opened here). The rules
 * followed are in the header. */
#include "audit/unitfile.h"

#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

#define LOGICAL_LINE_MAX (1u << 20)   /* systemd's LONG_LINE_MAX */
#define WS " \t\n\r"                  /* systemd's WHITESPACE */


static const char *const key_names[UK_NKEYS] = {
    [UK_IOCLASS] = "IOSchedulingClass",    [UK_IOPRIO] = "IOSchedulingPriority",
    [UK_NICE] = "Nice",                    [UK_POLICY] = "CPUSchedulingPolicy",
    [UK_WORKDIR] = "WorkingDirectory",     [UK_ROOTDIR] = "RootDirectory",
    [UK_EXEC] = "ExecStart",
};

/* The section that carries exec settings, per unit type. */
static const char *const exec_sections[] = {
    [UNIT_SERVICE] = "Service", [UNIT_SOCKET] = "Socket",
    [UNIT_MOUNT] = "Mount",     [UNIT_SWAP] = "Swap",
};

/* SEC_NONE: before any header; SEC_OTHER: a section whose keys we flag as misplaced;
 * SEC_SILENT: an "X-" section, which systemd ignores without a word. */
enum section { SEC_NONE, SEC_EXEC, SEC_OTHER, SEC_SILENT };

struct parser {
    struct unit_sched *u;
    enum section sec;
    bool service;                 /* the current exec section is [Service] */
    bool unit;                    /* the current section is [Unit] */
};

static const struct unit_where NOWHERE = { -1, 0 };

static bool is_sched_key(int k)
{
    return k >= UK_IOCLASS && k <= UK_POLICY;
}

static int key_index(const char *key, bool icase)
{
    for (int k = 0; k < UK_NKEYS; k++)
        if ((icase ? strcasecmp(key, key_names[k]) : strcmp(key, key_names[k])) == 0)
            return k;
    return -1;
}

/* In place: drop leading and trailing whitespace. */
static char *strip(char *s)
{
    s += strspn(s, WS);
    size_t l = strlen(s);
    while (l && strchr(WS, s[l - 1]))
        s[--l] = '\0';
    return s;
}

static void add_invalid(struct parser *ps, const char *key, const char *text, const char *why,
                        unsigned line, bool fatal)
{
    struct unit_sched *u = ps->u;
    if (u->ninvalid >= UNITS_INVALID_MAX) {
        u->ninvalid_lost++;
        return;
    }
    if (u->ninvalid % 4 == 0)
        u->invalid = xreallocarray(u->invalid, u->ninvalid + 4, sizeof(*u->invalid));
    struct unit_invalid *iv = &u->invalid[u->ninvalid++];
    memset(iv, 0, sizeof(*iv));
    str_copy(iv->key, key, sizeof(iv->key));
    str_copy(iv->text, text, sizeof(iv->text));
    iv->why = why;
    iv->at.file = u->cur_file;
    iv->at.line = line;
    iv->fatal = fatal;
    iv->sched = is_sched_key(key_index(key, true));
}

/* Record an error that makes systemd refuse the unit; returns err for the caller to pass up. */
static int load_fail(struct parser *ps, const char *key, const char *text, const char *why,
                     unsigned line, int err)
{
    add_invalid(ps, key, text, why, line, true);
    ps->u->load_error = err;
    ps->u->load_error_at.file = ps->u->cur_file;
    ps->u->load_error_at.line = line;
    return err;
}

static void set_where(struct parser *ps, enum unit_key k, unsigned line)
{
    ps->u->where[k].file = ps->u->cur_file;
    ps->u->where[k].line = line;
}

/* ---- numbers, as systemd reads them ------------------------------------------------- */

/* Skip systemd's Python-style "0b"/"0o" prefixes (parse-util.c:mangle_base); otherwise base
 * 0, so strtol's own "0x" hex and C's leading-zero octal apply, as in safe_atoi(). */
static int mangle_base(const char **s)
{
    const char *p = *s;
    if (p[0] == '0' && (p[1] == 'b' || p[1] == 'B')) {
        *s = p + 2;
        return 2;
    }
    if (p[0] == '0' && (p[1] == 'o' || p[1] == 'O')) {
        *s = p + 2;
        return 8;
    }
    return 0;
}

/* systemd's safe_atoi(): the whole text is one int ("+5", "-0x3" and "010" == 8 included). */
static int parse_int_sd(const char *s, int *out)
{
    s += strspn(s, WS);
    int base = mangle_base(&s);
    char *end;
    errno = 0;
    long v = strtol(s, &end, base);
    if (errno)
        return -errno;
    if (end == s || *end)
        return -EINVAL;
    if (v < INT_MIN || v > INT_MAX)
        return -ERANGE;
    *out = (int)v;
    return 0;
}

/* systemd's safe_atou(): as above, unsigned; a negative number is refused, not wrapped. */
static int parse_uint_sd(const char *s, unsigned *out)
{
    s += strspn(s, WS);
    int base = mangle_base(&s);
    char *end;
    errno = 0;
    unsigned long v = strtoul(s, &end, base);
    if (errno)
        return -errno;
    if (end == s || *end)
        return -EINVAL;
    if ((v != 0 && s[0] == '-') || v > UINT_MAX)
        return -ERANGE;
    *out = (unsigned)v;
    return 0;
}

/* ---- the scheduling keys ------------------------------------------------------------ */

/* systemd's ioprio_normalize(): class NONE means what the kernel does with it, be/4. */
static int ioprio_normalize(int v)
{
    return IOPRIO_CLASS_OF(v) == IOC_NONE ? IOPRIO_MAKE(IOC_BE, 4) : v;
}

static void io_reset(struct unit_sched *u)
{
    u->ioclass_set = u->iolevel_set = false;
    u->ioclass = IOC_NONE;
    u->iolevel = 0;
    u->ioprio = IOPRIO_MAKE(IOC_BE, 4);
    u->where[UK_IOCLASS] = NOWHERE;
    u->where[UK_IOPRIO] = NOWHERE;
}

/* ioprio_class_from_string(): the names, else a number up to IOPRIO_N_CLASSES (8). */
static int parse_ioclass(const char *s)
{
    static const char *const names[] = { "none", "realtime", "best-effort", "idle" };
    for (int i = 0; i < (int)ARRAY_SIZE(names); i++)
        if (strcmp(s, names[i]) == 0)
            return i;
    unsigned v;
    if (parse_uint_sd(s, &v) < 0 || v > 8)
        return -EINVAL;
    return (int)v;
}

static int set_ioclass(struct parser *ps, const char *val, unsigned line)
{
    struct unit_sched *u = ps->u;
    if (!*val) {                                  /* unsets the class AND the priority */
        io_reset(u);
        return 0;
    }
    int c = parse_ioclass(val);
    if (c < 0) {
        add_invalid(ps, key_names[UK_IOCLASS], val,
                    "not realtime, best-effort, idle, none or 0-3 (names are lower case)",
                    line, false);
        return 0;
    }
    if (c > IOC_IDLE) {
        /* systemd accepts 4..8 here, then ioprio_set() fails with EINVAL at every start. */
        add_invalid(ps, key_names[UK_IOCLASS], val,
                    "no such I/O class: systemd accepts it but the kernel refuses it, so "
                    "the service fails to start", line, false);
        return 0;
    }
    u->ioclass = (enum ioprio_class)c;
    u->ioclass_set = true;
    u->ioprio = ioprio_normalize(IOPRIO_MAKE(c, IOPRIO_LEVEL_OF(u->ioprio)));
    set_where(ps, UK_IOCLASS, line);
    return 0;
}

static int set_iolevel(struct parser *ps, const char *val, unsigned line)
{
    struct unit_sched *u = ps->u;
    if (!*val) {
        io_reset(u);
        return 0;
    }
    int v;
    if (parse_int_sd(val, &v) < 0 || v < 0 || v > 7) {
        add_invalid(ps, key_names[UK_IOPRIO], val, "not an integer from 0 to 7", line, false);
        return 0;
    }
    u->iolevel = v;
    u->iolevel_set = true;
    u->ioprio = ioprio_normalize(IOPRIO_MAKE(IOPRIO_CLASS_OF(u->ioprio), v));
    set_where(ps, UK_IOPRIO, line);
    return 0;
}

static int set_nice(struct parser *ps, const char *val, unsigned line)
{
    struct unit_sched *u = ps->u;
    if (!*val) {
        u->nice_set = false;
        u->nice = 0;
        u->where[UK_NICE] = NOWHERE;
        return 0;
    }
    int v;
    if (parse_int_sd(val, &v) < 0 || v < -20 || v > 19) {
        add_invalid(ps, key_names[UK_NICE], val, "not an integer from -20 to 19", line, false);
        return 0;
    }
    u->nice = v;
    u->nice_set = true;
    set_where(ps, UK_NICE, line);
    return 0;
}

static const char *const policy_names[] = {
    [SCHED_OTHER] = "other", [SCHED_FIFO] = "fifo", [SCHED_RR] = "rr",
    [SCHED_BATCH] = "batch", [SCHED_IDLE] = "idle",
};

static bool policy_known(int p)
{
    return p >= 0 && p < (int)ARRAY_SIZE(policy_names) && policy_names[p] != NULL;
}

/* sched_policy_from_string(): the names, else any number up to INT_MAX. */
static int parse_policy(const char *s)
{
    for (int i = 0; i < (int)ARRAY_SIZE(policy_names); i++)
        if (policy_names[i] && strcmp(s, policy_names[i]) == 0)
            return i;
    unsigned v;
    if (parse_uint_sd(s, &v) < 0 || v > INT_MAX)
        return -EINVAL;
    return (int)v;
}

static int set_policy(struct parser *ps, const char *val, unsigned line)
{
    struct unit_sched *u = ps->u;
    if (!*val) {
        u->policy_set = false;
        u->policy = SCHED_OTHER;
        u->where[UK_POLICY] = NOWHERE;
        return 0;
    }
    int p = parse_policy(val);
    if (p < 0) {
        add_invalid(ps, key_names[UK_POLICY], val,
                    "not other, batch, idle, fifo or rr (names are lower case)", line, false);
        return 0;
    }
    if (!policy_known(p)) {
        /* A number systemd takes, but sched_setscheduler() refuses (6 is SCHED_DEADLINE,
         * which needs sched_setattr): every start fails. */
        add_invalid(ps, key_names[UK_POLICY], val,
                    "not a policy sched_setscheduler() accepts, so the service fails to "
                    "start", line, false);
        return 0;
    }
    u->policy = p;
    u->policy_set = true;
    set_where(ps, UK_POLICY, line);
    return 0;
}

/* ---- paths ------------------------------------------------------------------------- */

/* systemd's path_simplify(), in place: drop "." components and repeated or trailing
 * slashes. ".." is kept (it is not resolved lexically). */
static void path_simplify(char *p)
{
    bool abs = p[0] == '/';
    char *w = p;
    const char *r = p;
    if (abs)
        *w++ = '/';
    while (*r) {
        r += strspn(r, "/");
        size_t n = strcspn(r, "/");
        if (n == 0)
            break;
        if (!(n == 1 && r[0] == '.')) {
            if (w > p && w[-1] != '/')
                *w++ = '/';
            memmove(w, r, n);
            w += n;
        }
        r += n;
    }
    if (w == p && !abs)
        *w++ = '.';
    *w = '\0';
}

/* path_is_valid() and path_is_normalized() after simplification: sane lengths and no "..". */
static bool path_valid_normalized(const char *p, bool allow_dotdot)
{
    if (!*p || strlen(p) >= PATH_MAX)
        return false;
    for (const char *c = p; *c;) {
        c += strspn(c, "/");
        size_t n = strcspn(c, "/");
        if (n > NAME_MAX)
            return false;
        if (!allow_dotdot && n == 2 && c[0] == '.' && c[1] == '.')
            return false;
        c += n;
    }
    return true;
}

/* WorkingDirectory= and RootDirectory= values: absolute and normalized, or holding a
 * specifier we do not expand. Simplifies in place. */
static bool dir_value_ok(char *p)
{
    if (strchr(p, '%'))
        return true;
    if (p[0] != '/')
        return false;
    path_simplify(p);
    return path_valid_normalized(p, false);
}

static void replace_str(char **dst, const char *src)
{
    free(*dst);
    *dst = src ? xstrdup(src) : NULL;
}

static int set_workdir(struct parser *ps, char *val, unsigned line)
{
    struct unit_sched *u = ps->u;
    if (!*val) {
        replace_str(&u->workdir, NULL);
        u->workdir_missing_ok = false;
        u->where[UK_WORKDIR] = NOWHERE;
        return 0;
    }
    char text[UNITS_TEXT_MAX];
    str_copy(text, val, sizeof(text));
    bool missing_ok = val[0] == '-';
    if (missing_ok)
        val++;
    /* No unquoting: systemd takes the value as it is, so quotes make it "not absolute". */
    if (strcmp(val, "~") != 0 && !dir_value_ok(val)) {
        if (!missing_ok)
            return load_fail(ps, key_names[UK_WORKDIR], text,
                             "not an absolute, normalized path or \"~\": systemd refuses the unit",
                             line, -ENOEXEC);
        add_invalid(ps, key_names[UK_WORKDIR], text,
                    "not an absolute, normalized path or \"~\": ignored ('-' prefix)", line,
                    false);
        return 0;
    }
    replace_str(&u->workdir, val);
    u->workdir_missing_ok = missing_ok;
    set_where(ps, UK_WORKDIR, line);
    return 0;
}

static int set_rootdir(struct parser *ps, char *val, unsigned line)
{
    struct unit_sched *u = ps->u;
    if (!*val) {
        replace_str(&u->rootdir, NULL);
        u->where[UK_ROOTDIR] = NOWHERE;
        return 0;
    }
    char text[UNITS_TEXT_MAX];
    str_copy(text, val, sizeof(text));
    if (!dir_value_ok(val))
        return load_fail(ps, key_names[UK_ROOTDIR], text,
                         "not an absolute, normalized path: systemd refuses the unit", line,
                         -ENOEXEC);
    replace_str(&u->rootdir, val);
    set_where(ps, UK_ROOTDIR, line);
    return 0;
}

/* ---- ExecStart= --------------------------------------------------------------------- */

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* systemd's unichar_is_valid(), and NUL refused as cunescape does without accept_nul. */
static bool unichar_ok(uint32_t c)
{
    return c != 0 && c < 0x110000 && (c & 0xFFFFF800u) != 0xD800 &&
           !(c >= 0xFDD0 && c <= 0xFDEF) && (c & 0xFFFEu) != 0xFFFE;
}

static size_t utf8_put(uint32_t c, char *o)
{
    if (c < 0x80) {
        o[0] = (char)c;
        return 1;
    }
    if (c < 0x800) {
        o[0] = (char)(0xC0 | (c >> 6));
        o[1] = (char)(0x80 | (c & 0x3F));
        return 2;
    }
    if (c < 0x10000) {
        o[0] = (char)(0xE0 | (c >> 12));
        o[1] = (char)(0x80 | ((c >> 6) & 0x3F));
        o[2] = (char)(0x80 | (c & 0x3F));
        return 3;
    }
    o[0] = (char)(0xF0 | (c >> 18));
    o[1] = (char)(0x80 | ((c >> 12) & 0x3F));
    o[2] = (char)(0x80 | ((c >> 6) & 0x3F));
    o[3] = (char)(0x80 | (c & 0x3F));
    return 4;
}

/* One C escape as systemd.syntax(7) lists them; p points after the backslash. Writes the
 * bytes to o (at most 4) and returns how many characters of p it used, or -EINVAL. */
static int unescape_one(const char *p, char *o, size_t *nout)
{
    static const char simple_in[] = "abfnrtv\\\"'s";
    static const char simple_out[] = "\a\b\f\n\r\t\v\\\"' ";
    const char *s = *p ? strchr(simple_in, *p) : NULL;
    if (s) {
        *o = simple_out[s - simple_in];
        *nout = 1;
        return 1;
    }
    if (*p == 'x') {                      /* \xHH: one byte, not NUL */
        int a = hexval(p[1]), b = a < 0 ? -1 : hexval(p[2]);
        if (b < 0 || (a | b) == 0)
            return -EINVAL;
        *o = (char)(a << 4 | b);
        *nout = 1;
        return 3;
    }
    if (*p == 'u' || *p == 'U') {         /* \uXXXX, \UXXXXXXXX: a code point, as UTF-8 */
        int digits = *p == 'u' ? 4 : 8;
        uint32_t c = 0;
        for (int i = 1; i <= digits; i++) {
            int h = hexval(p[i]);
            if (h < 0)
                return -EINVAL;
            c = c << 4 | (uint32_t)h;
        }
        if (!unichar_ok(c))
            return -EINVAL;
        *nout = utf8_put(c, o);
        return digits + 1;
    }
    if (*p >= '0' && *p <= '7') {         /* \NNN: one byte, octal, not NUL, not over 255 */
        int v = 0;
        for (int i = 0; i < 3; i++) {
            if (p[i] < '0' || p[i] > '7')
                return -EINVAL;
            v = v * 8 + (p[i] - '0');
        }
        if (v == 0 || v > 255)
            return -EINVAL;
        *o = (char)v;
        *nout = 1;
        return 3;
    }
    return -EINVAL;
}

/* The next word of a command line, as systemd's extract_first_word() with UNQUOTE and
 * CUNESCAPE: whitespace separates words, quotes may open anywhere in a word, and escapes
 * are decoded inside and outside quotes. out has room for strlen(*s) + 1 bytes (decoding
 * never lengthens). Returns 1 with a word, 0 at the end, -EINVAL on an unterminated quote
 * or an unknown escape. */
static int next_word(const char **s, char *out)
{
    const char *p = *s + strspn(*s, WS);
    if (!*p) {
        *s = p;
        return 0;
    }
    char quote = 0;
    size_t n = 0;
    for (;;) {
        char c = *p;
        if (!c) {
            if (quote)
                return -EINVAL;
            break;
        }
        if (!quote && strchr(WS, c))
            break;
        if (c == '\\') {
            size_t k;
            int used = unescape_one(p + 1, out + n, &k);
            if (used < 0)
                return -EINVAL;
            n += k;
            p += 1 + used;
            continue;
        }
        if (quote && c == quote)
            quote = 0;
        else if (!quote && (c == '\'' || c == '"'))
            quote = c;
        else
            out[n++] = c;
        p++;
    }
    out[n] = '\0';
    *s = p;
    return 1;
}

/* systemd's string_is_safe(): no control characters, quotes or backslashes. */
static bool string_safe(const char *s)
{
    for (; *s; s++)
        if ((unsigned char)*s < ' ' || *s == 0x7f || *s == '\\' || *s == '"' || *s == '\'')
            return false;
    return true;
}

static bool filename_valid(const char *s)
{
    return *s && strlen(s) <= NAME_MAX && !strchr(s, '/') && strcmp(s, ".") != 0 &&
           strcmp(s, "..") != 0;
}

/* The prefixes systemd accepts before the executable, each at most once: '-' (failure is
 * fine), '@' (argv[0] separate), ':' (no variable expansion), and one of '+', '!' or "!!"
 * (privileges). Returns how many characters of f they take. */
static size_t exec_prefixes(const char *f, bool *ignore)
{
    bool dash = false, at = false, colon = false;
    int priv = 0;                          /* 0 none, 1 "+", 2 "!", 3 "!!" */
    size_t i = 0;
    for (;; i++) {
        char c = f[i];
        if (c == '-' && !dash)
            dash = true;
        else if (c == '@' && !at)
            at = true;
        else if (c == ':' && !colon)
            colon = true;
        else if (c == '+' && priv == 0)
            priv = 1;
        else if (c == '!' && (priv == 0 || priv == 2))
            priv = priv == 0 ? 2 : 3;
        else
            break;
    }
    *ignore = dash;
    return i;
}

/* Why systemd refuses the path of a command, or NULL when it takes it. */
static const char *exec_path_problem(const char *path)
{
    if (!*path)
        return "empty executable path after the prefixes";
    if (!string_safe(path))
        return "executable path holds control characters, quotes or backslashes";
    if (path[strlen(path) - 1] == '/')
        return "executable path names a directory";
    if (strchr(path, '%'))
        return NULL;                       /* a specifier: not ours to judge */
    if (path[0] == '/' ? !path_valid_normalized(path, true) : !filename_valid(path))
        return "neither an absolute path nor a plain executable name";
    return NULL;
}

static int set_exec(struct parser *ps, const char *val, unsigned line)
{
    struct unit_sched *u = ps->u;
    if (!*val) {                           /* an empty assignment resets the list */
        replace_str(&u->exec, NULL);
        u->exec_prefix[0] = '\0';
        u->nexec = 0;
        u->where[UK_EXEC] = NOWHERE;
        return 0;
    }
    char *word = xmalloc(strlen(val) + 1);
    const char *p = val;
    int r;
    while ((r = next_word(&p, word)) > 0 && strcmp(word, ";") == 0)
        ;                                  /* a lone ";" separates commands */
    if (r <= 0) {
        if (r < 0)
            add_invalid(ps, key_names[UK_EXEC], val,
                        "unbalanced quotes or an unknown escape: ignored", line, false);
        free(word);
        return 0;
    }
    bool ignore;
    size_t np = exec_prefixes(word, &ignore);
    char *path = word + np;
    const char *why = exec_path_problem(path);
    if (why) {
        free(word);
        if (!ignore)
            return load_fail(ps, key_names[UK_EXEC], val, why, line, -ENOEXEC);
        add_invalid(ps, key_names[UK_EXEC], val, why, line, false);
        return 0;
    }
    if (u->nexec++ == 0) {                 /* the first command is the main process */
        if (path[0] == '/')
            path_simplify(path);
        replace_str(&u->exec, path);
        str_copy(u->exec_prefix, word, np + 1 < sizeof(u->exec_prefix) ? np + 1 : 1);
        set_where(ps, UK_EXEC, line);
    }
    free(word);
    return 0;
}

/* ---- lines ------------------------------------------------------------------------- */

/* The keys that only decide whether systemd accepts a service at all: it refuses one
 * with no ExecStart=, no ExecStop= and no SuccessAction= (service_verify()). */
static void track_verify_keys(struct parser *ps, const char *key, const char *val)
{
    struct unit_sched *u = ps->u;
    if (ps->sec == SEC_EXEC && ps->service && strcmp(key, "ExecStop") == 0)
        u->exec_stop = *val != '\0';                 /* empty: the list is reset */
    else if (ps->unit && strcmp(key, "SuccessAction") == 0)
        u->success_action = *val && strcmp(val, "none") != 0;
}

static int assign(struct parser *ps, const char *key, char *val, unsigned line)
{
    int k = key_index(key, false);
    if (k < 0) {
        track_verify_keys(ps, key, val);
        /* systemd warns about an unknown key in any section but an X- one ("Unknown key
         * 'nice' in section [Unit]", "Assignment outside of section"). */
        if (ps->sec == SEC_SILENT || key_index(key, true) < 0)
            return 0;
        add_invalid(ps, key, val,
                    ps->sec == SEC_EXEC ? "key names are case-sensitive: systemd ignores this one"
                    : ps->sec == SEC_NONE ? "assignment before any section (and key names are "
                                            "case-sensitive): ignored"
                                          : "key names are case-sensitive, and this is not the "
                                            "unit's [Service], [Socket], [Mount] or [Swap] "
                                            "section: ignored",
                    line, false);
        return 0;
    }
    if (k == UK_EXEC && ps->u->type != UNIT_ANY && ps->u->type != UNIT_SERVICE)
        return 0;                          /* not a key of sockets, mounts or swaps */
    if (ps->sec == SEC_SILENT)
        return 0;
    if (ps->sec != SEC_EXEC) {
        add_invalid(ps, key, val,
                    ps->sec == SEC_NONE ? "assignment before any section: ignored"
                                        : "not in the unit's [Service], [Socket], [Mount] or "
                                          "[Swap] section: ignored",
                    line, false);
        return 0;
    }
    switch ((enum unit_key)k) {
    case UK_IOCLASS: return set_ioclass(ps, val, line);
    case UK_IOPRIO:  return set_iolevel(ps, val, line);
    case UK_NICE:    return set_nice(ps, val, line);
    case UK_POLICY:  return set_policy(ps, val, line);
    case UK_WORKDIR: return set_workdir(ps, val, line);
    case UK_ROOTDIR: return set_rootdir(ps, val, line);
    case UK_EXEC:    return ps->service ? set_exec(ps, val, line) : 0;
    case UK_NKEYS:   break;
    }
    return 0;
}

static void enter_section(struct parser *ps, const char *name)
{
    ps->sec = strncmp(name, "X-", 2) == 0 ? SEC_SILENT : SEC_OTHER;
    ps->service = false;
    ps->unit = strcmp(name, "Unit") == 0;
    enum unit_type type = ps->u->type;
    for (enum unit_type t = UNIT_SERVICE; t <= UNIT_SWAP; t++)
        if (strcmp(name, exec_sections[t]) == 0 && (type == UNIT_ANY || type == t)) {
            ps->sec = SEC_EXEC;
            ps->service = t == UNIT_SERVICE;
        }
}

/* One logical line (continuations joined), NUL-terminated and writable. */
static int parse_logical(struct parser *ps, char *l, unsigned line)
{
    l = strip(l);
    if (!*l || *l == '#' || *l == ';')
        return 0;
    if (*l == '[') {
        size_t n = strlen(l);
        if (l[n - 1] != ']')
            return load_fail(ps, "", l, "section header without ']': systemd refuses the unit",
                             line, -EBADMSG);
        l[n - 1] = '\0';
        enter_section(ps, l + 1);
        return 0;
    }
    char *eq = strchr(l, '=');
    if (!eq || eq == l) {
        add_invalid(ps, "", l, eq ? "no key name before '=': ignored" : "no '=': ignored", line,
                    false);
        return 0;
    }
    *eq = '\0';
    return assign(ps, strip(l), strip(eq + 1), line);
}

/* Length of the physical line at p and where the next one starts: "\n", "\r\n", "\r" and
 * NUL end a line, as systemd's read_line() has it. */
static size_t line_span(const char *p, const char *end, const char **next)
{
    const char *e = p;
    while (e < end && *e != '\n' && *e != '\r' && *e != '\0')
        e++;
    const char *n = e;
    if (n < end) {
        if (*n == '\r' && n + 1 < end && n[1] == '\n')
            n += 2;
        else
            n++;
    }
    *next = n;
    return (size_t)(e - p);
}

static bool comment_line(const char *p, size_t n)
{
    size_t i = 0;
    while (i < n && strchr(WS, p[i]))
        i++;
    return i < n && (p[i] == '#' || p[i] == ';');
}

/* A logical line ends in a backslash that is not itself escaped: an odd run of them. */
static bool continues(const char *s, size_t n)
{
    size_t k = 0;
    while (k < n && s[n - 1 - k] == '\\')
        k++;
    return k % 2 == 1;
}

int units_parse(const char *buf, size_t len, struct unit_sched *u)
{
    if (!u || (!buf && len))
        return -EINVAL;
    if (u->load_error)
        return u->load_error;
    if (len == 0)
        return 0;                          /* nothing to apply; buf may be NULL */
    struct parser ps = { .u = u, .sec = SEC_NONE };
    const char *p = buf, *end = buf + len;
    if (len >= 3 && memcmp(p, "\xef\xbb\xbf", 3) == 0)
        p += 3;                                          /* UTF-8 byte order mark */
    char *lb = NULL;
    size_t n = 0, cap = 0;
    unsigned lineno = 0, start = 0;
    bool pending = false;
    int r = 0;
    while (p < end && r == 0) {
        const char *next;
        size_t ll = line_span(p, end, &next);
        const char *line = p;
        p = next;
        lineno++;
        if (comment_line(line, ll))
            continue;                      /* also inside a continuation (systemd.syntax) */
        if (!pending) {
            n = 0;
            start = lineno;
        }
        if (n + ll > LOGICAL_LINE_MAX) {
            r = load_fail(&ps, "", "", "line longer than 1 MiB: systemd refuses the unit",
                          start, -ENOBUFS);
            break;
        }
        if (n + ll + 1 > cap) {
            cap = (n + ll + 1) * 2;
            lb = xrealloc(lb, cap);
        }
        memcpy(lb + n, line, ll);
        n += ll;
        lb[n] = '\0';
        pending = continues(lb, n);
        if (pending) {
            lb[n - 1] = ' ';
            continue;
        }
        r = parse_logical(&ps, lb, start);
    }
    if (r == 0 && pending)                 /* a continuation running into the end of file */
        r = parse_logical(&ps, lb, start);
    free(lb);
    return r;
}

/* ---- the unit_sched object ---------------------------------------------------------- */

void units_sched_init(struct unit_sched *u, enum unit_type type)
{
    memset(u, 0, sizeof(*u));
    u->type = type;
    u->policy = SCHED_OTHER;
    io_reset(u);
    for (int k = 0; k < UK_NKEYS; k++)
        u->where[k] = NOWHERE;
    u->cur_file = -1;
    u->load_error_at = NOWHERE;
}

void units_sched_free(struct unit_sched *u)
{
    if (!u)
        return;
    free(u->workdir);
    free(u->rootdir);
    free(u->exec);
    for (unsigned i = 0; i < u->nfiles; i++)
        free(u->files[i]);
    free(u->files);
    free(u->invalid);
    units_sched_init(u, u->type);
}

int units_set_file(struct unit_sched *u, const char *path)
{
    if (u->nfiles >= 1 + UNITS_DROPINS_MAX)
        return -E2BIG;
    u->files = xreallocarray(u->files, u->nfiles + 1, sizeof(*u->files));
    u->files[u->nfiles] = xstrdup(path);
    u->cur_file = (int)u->nfiles;
    return (int)u->nfiles++;
}

int units_finish(struct unit_sched *u)
{
    if (!u)
        return -EINVAL;
    if (u->load_error)
        return u->load_error;
    if (u->type == UNIT_SERVICE && u->nexec == 0 && !u->exec_stop && !u->success_action) {
        struct parser ps = { .u = u, .sec = SEC_NONE };
        int cur = u->cur_file;
        u->cur_file = u->nfiles ? 0 : -1;            /* about the unit: named by its main file */
        int r = load_fail(&ps, "", "",
                          "service has no ExecStart=, ExecStop= or SuccessAction=: systemd "
                          "refuses the unit", 0, -ENOEXEC);
        u->cur_file = cur;
        return r;
    }
    return 0;
}

bool units_sets_sched(const struct unit_sched *u)
{
    return u->ioclass_set || u->iolevel_set || u->nice_set || u->policy_set;
}

struct ioprio_eff units_effective(const struct unit_sched *u)
{
    /* Unset: systemd makes no ioprio_set() call, so the class stays NONE (raw 0) and the
     * kernel derives the priority from nice and policy. */
    int raw = (u->ioclass_set || u->iolevel_set) ? u->ioprio : 0;
    return ioprio_effective(raw, u->nice_set ? u->nice : 0,
                            u->policy_set ? u->policy : SCHED_OTHER);
}

int units_type_of(const char *name)
{
    static const char *const suffixes[] = {
        [UNIT_SERVICE] = "service", [UNIT_SOCKET] = "socket",
        [UNIT_MOUNT] = "mount",     [UNIT_SWAP] = "swap",
    };
    const char *dot = name ? strrchr(name, '.') : NULL;
    if (!dot || dot == name)
        return -EINVAL;
    for (int t = UNIT_SERVICE; t <= UNIT_SWAP; t++)
        if (strcmp(dot + 1, suffixes[t]) == 0)
            return t;
    return -EINVAL;
}

const char *units_key_name(enum unit_key k)
{
    return (unsigned)k < UK_NKEYS ? key_names[k] : "?";
}

const char *units_policy_name(int policy)
{
    return policy_known(policy) ? policy_names[policy] : "?";
}

const char *units_where_file(const struct unit_sched *u, enum unit_key k)
{
    if ((unsigned)k >= UK_NKEYS)
        return NULL;
    int f = u->where[k].file;
    return f >= 0 && (unsigned)f < u->nfiles ? u->files[f] : NULL;
}
