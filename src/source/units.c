/* source/units.c: systemd unit files: a pure parser of one file's text, and a scanner of
 * the unit directories under a root. The rules followed are in the header. */
#include "source/units.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "util.h"

#define LOGICAL_LINE_MAX (1u << 20)   /* systemd's LONG_LINE_MAX */
#define WS " \t\n\r"                  /* systemd's WHITESPACE */

/* ========================================================================================
 * Parser
 * ======================================================================================== */

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

static int assign(struct parser *ps, const char *key, char *val, unsigned line)
{
    int k = key_index(key, false);
    if (k < 0) {
        if (ps->sec == SEC_EXEC && key_index(key, true) >= 0)
            add_invalid(ps, key, val, "key names are case-sensitive: systemd ignores this one",
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

/* ========================================================================================
 * Scanner
 * ======================================================================================== */

/* systemd's system unit load path (systemd-analyze unit-paths), highest precedence first,
 * without the runtime-only control, transient and generator directories. */
static const char *const unit_dirs[] = {
    "/etc/systemd/system",
    "/run/systemd/system",
    "/usr/local/lib/systemd/system",
    "/lib/systemd/system",
    "/usr/lib/systemd/system",
};
#define NDIRS       ARRAY_SIZE(unit_dirs)
#define ALIAS_HOPS  8
#define SYMLINK_MAX 40              /* the kernel's limit on links in one lookup */
#define EXPAND_MAX  32              /* drop-in directory names derived from one unit name */
#define DROPINS_SEEN_MAX (UNITS_DROPINS_MAX * 16)   /* drop-in names looked at per unit */

enum ent_kind { E_FILE, E_MASK, E_ALIAS, E_LINK, E_DROPDIR };

/* One directory entry of interest. */
struct ent {
    char         *name;             /* unit name; for E_DROPDIR the name without ".d" */
    unsigned      dir;              /* index into unit_dirs */
    enum ent_kind kind;
    char         *target;           /* E_ALIAS: the aliased name; E_LINK: the path to follow */
    long          canon;            /* index into scan.canon, or -1 */
};

/* A unit backed by a file: an E_FILE or E_LINK entry, with the names that reach it. */
struct canon {
    struct ent *e;
    char      **names;              /* e->name first, then aliases in name order */
    unsigned    nnames;
    char       *path;               /* the main file, as the load path names it */
    dev_t       dev;
    ino_t       ino;
    bool        skip;               /* masked, unreadable, or merged into another */
};

struct conf {
    char *name;                     /* file name: the order and the override key */
    char *path;
    bool  mask;                     /* symlink to /dev/null: hides the name, applies nothing */
};

struct scan {
    int              root;
    DIR             *dirs[NDIRS];   /* NULL: absent, or the same directory as an earlier one */
    struct ent      *units, *drops;
    size_t           nunits, ndrops, capu, capd;
    struct canon    *canon;
    size_t           ncanon, capc;
    size_t           nentries;
    size_t           capunits, capmasked, capproblems;
    struct unit_list *out;
};

static void *grow(void *p, size_t n, size_t *cap, size_t size)
{
    if (n < *cap)
        return p;
    *cap = *cap ? *cap * 2 : 16;
    return xreallocarray(p, *cap, size);
}

static char *join(const char *a, const char *b, const char *c)
{
    size_t la = strlen(a), lb = strlen(b), lc = strlen(c);
    char *s = xmalloc(la + 1 + lb + lc + 1);
    memcpy(s, a, la);
    s[la] = '/';
    memcpy(s + la + 1, b, lb);
    memcpy(s + la + 1 + lb, c, lc + 1);
    return s;
}

static void problem(struct scan *sc, const char *path, unsigned line, int err, const char *what)
{
    struct unit_list *o = sc->out;
    if (o->nproblems >= UNITS_PROBLEMS_MAX) {
        o->nproblems_lost++;
        return;
    }
    o->problems = grow(o->problems, o->nproblems, &sc->capproblems, sizeof(*o->problems));
    o->problems[o->nproblems++] = (struct unit_problem){ xstrdup(path), line, err, what };
}

static void add_masked(struct scan *sc, const char *name, const char *path)
{
    struct unit_list *o = sc->out;
    o->masked = grow(o->masked, o->nmasked, &sc->capmasked, sizeof(*o->masked));
    o->masked[o->nmasked++] = (struct unit_masked){ xstrdup(name), xstrdup(path) };
}

/* ---- paths inside the root ------------------------------------------------------------ */

/* Textual "." and ".." resolution of an absolute path, never above "/". In place. */
static void normalize_abs(char *p)
{
    char *w = p;                    /* p[0] == '/'; w ends the output, without a slash */
    const char *r = p;
    while (*r) {
        r += strspn(r, "/");
        size_t n = strcspn(r, "/");
        if (n == 0 || (n == 1 && r[0] == '.')) {
            r += n;
            continue;
        }
        if (n == 2 && r[0] == '.' && r[1] == '.') {
            while (w > p && *--w != '/')
                ;
            r += n;
            continue;
        }
        *w++ = '/';
        memmove(w, r, n);
        w += n;
        r += n;
    }
    if (w == p)
        *w++ = '/';
    *w = '\0';
}

/* The target of the symlink at rel (inside root) followed by "/" and rest: what remains to
 * walk after meeting the link. NULL with errno set when the link cannot be read. */
static char *splice_link(int root, const char *rel, const char *rest, bool *absolute)
{
    char target[PATH_MAX];
    ssize_t tl = readlinkat(root, rel, target, sizeof(target) - 1);
    if (tl <= 0) {
        if (tl == 0)
            errno = ENOENT;
        return NULL;
    }
    size_t rl = strlen(rest);
    char *next = xmalloc((size_t)tl + 1 + rl + 1);
    memcpy(next, target, (size_t)tl);
    next[tl] = '/';
    memcpy(next + tl + 1, rest, rl + 1);
    *absolute = target[0] == '/';
    return next;
}

/* Resolve an absolute path inside root: every symlink is followed with an absolute target
 * starting again at root and ".." stopping there, the rule of openat2(RESOLVE_IN_ROOT),
 * done by hand because valgrind and kernels before 5.6 lack that call. At most SYMLINK_MAX
 * links. Leaves the path relative to root in out ("" for the root itself) and its lstat in
 * *st. Returns 0, -errno, or 1 when the path leads to the root's /dev/null. */
static int resolve_in_root(int root, const char *path, char out[PATH_MAX], struct stat *st)
{
    char *todo = xstrdup(path);
    const char *p = todo;
    size_t dn = 0;
    int links = 0, r = 0;
    out[0] = '\0';
    for (;;) {
        p += strspn(p, "/");
        if (!*p)
            break;
        size_t n = strcspn(p, "/");
        if (n == 1 && p[0] == '.') {
            p += n;
            continue;
        }
        if (n == 2 && p[0] == '.' && p[1] == '.') {
            while (dn && out[dn - 1] != '/')
                dn--;
            if (dn)
                dn--;
            out[dn] = '\0';
            p += n;
            continue;
        }
        size_t before = dn;
        if (dn + 1 + n >= PATH_MAX) {
            r = -ENAMETOOLONG;
            break;
        }
        if (dn)
            out[dn++] = '/';
        memcpy(out + dn, p, n);
        dn += n;
        out[dn] = '\0';
        p += n;
        if (strcmp(out, "dev/null") == 0) {
            r = 1;                  /* a mask, whether or not the root has a /dev */
            break;
        }
        if (fstatat(root, out, st, AT_SYMLINK_NOFOLLOW) < 0) {
            r = -errno;
            break;
        }
        if (!S_ISLNK(st->st_mode))
            continue;
        bool absolute;
        char *next = ++links > SYMLINK_MAX ? NULL : splice_link(root, out, p, &absolute);
        if (!next) {
            r = links > SYMLINK_MAX ? -ELOOP : -errno;
            break;
        }
        free(todo);
        todo = next;
        p = todo;
        dn = absolute ? 0 : before;
        out[dn] = '\0';
    }
    free(todo);
    if (r == 0 && fstatat(root, dn ? out : ".", st, AT_SYMLINK_NOFOLLOW) < 0)
        r = -errno;
    return r;
}

/* Open a directory or regular file at an absolute path inside root (see resolve_in_root).
 * Returns the fd, -errno (-ENOTDIR or -EINVAL when it is not what was asked for, so no
 * FIFO or device is ever opened), or -ENODEV for the root's /dev/null. */
static int open_in_root(int root, const char *path, bool dir)
{
    char rel[PATH_MAX];
    struct stat st;
    int r = resolve_in_root(root, path, rel, &st);
    if (r == 1)
        return -ENODEV;
    if (r < 0)
        return r;
    if (dir ? !S_ISDIR(st.st_mode) : !S_ISREG(st.st_mode))
        return dir ? -ENOTDIR : S_ISCHR(st.st_mode) && st.st_rdev == makedev(1, 3) ? -ENODEV
                                                                                 : -EINVAL;
    int fd = openat(root, rel[0] ? rel : ".",
                    O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NOFOLLOW | O_NONBLOCK |
                        (dir ? O_DIRECTORY : 0));
    return fd < 0 ? -errno : fd;
}

/* The whole file, NUL-terminated, refusing more than UNITS_FILE_MAX bytes. */
static ssize_t read_all(int fd, char **out)
{
    struct stat st;
    if (fstat(fd, &st) < 0)
        return -errno;
    if (st.st_size > (off_t)UNITS_FILE_MAX)
        return -EFBIG;
    size_t cap = (size_t)st.st_size + 1, len = 0;
    char *buf = xmalloc(cap);
    for (;;) {
        if (len + 1 == cap) {
            if (cap > UNITS_FILE_MAX) {         /* it grew past the limit while we read */
                free(buf);
                return -EFBIG;
            }
            cap = cap * 2 > UNITS_FILE_MAX + 1 ? UNITS_FILE_MAX + 2 : cap * 2;
            buf = xrealloc(buf, cap);
        }
        ssize_t r = read(fd, buf + len, cap - 1 - len);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            int e = errno;
            free(buf);
            return -e;
        }
        if (r == 0)
            break;
        len += (size_t)r;
    }
    buf[len] = '\0';
    *out = buf;
    return (ssize_t)len;
}

/* ---- listing the unit directories ------------------------------------------------------ */

static void add_ent(struct scan *sc, bool drop, char *name, unsigned d, enum ent_kind kind,
                    char *target)
{
    struct ent e = { name, d, kind, target, -1 };
    if (drop) {
        sc->drops = grow(sc->drops, sc->ndrops, &sc->capd, sizeof(*sc->drops));
        sc->drops[sc->ndrops++] = e;
    } else {
        sc->units = grow(sc->units, sc->nunits, &sc->capu, sizeof(*sc->units));
        sc->units[sc->nunits++] = e;
    }
}

static bool in_unit_dir(const char *abs_dir)
{
    for (size_t i = 0; i < NDIRS; i++)
        if (strcmp(abs_dir, unit_dirs[i]) == 0)
            return true;
    return false;
}

/* A symlink named like a unit: a mask, an alias (target in a unit directory under another
 * name, systemd.unit(5) "UNIT FILE LOAD PATH") or a linked unit file to follow. */
static void classify_link(struct scan *sc, unsigned d, int dfd, const char *name)
{
    char t[PATH_MAX];
    ssize_t l = readlinkat(dfd, name, t, sizeof(t) - 1);
    if (l < 0) {
        char *path = join(unit_dirs[d], name, "");
        problem(sc, path, 0, -errno, "cannot read the symlink");
        free(path);
        return;
    }
    t[l] = '\0';
    char *abs = t[0] == '/' ? xstrdup(t) : join(unit_dirs[d], t, "");
    normalize_abs(abs);
    if (strcmp(abs, "/dev/null") == 0) {
        free(abs);
        add_ent(sc, false, xstrdup(name), d, E_MASK, NULL);
        return;
    }
    char *slash = strrchr(abs, '/');
    *slash = '\0';
    bool alias = in_unit_dir(abs) && strcmp(slash + 1, name) != 0;
    *slash = '/';
    if (alias && units_type_of(slash + 1) != units_type_of(name)) {
        char *path = join(unit_dirs[d], name, "");
        problem(sc, path, 0, -EINVAL, "alias to a unit of another type: ignored");
        free(path);
        free(abs);
        return;
    }
    if (alias) {
        add_ent(sc, false, xstrdup(name), d, E_ALIAS, xstrdup(slash + 1));
        free(abs);
    } else {
        add_ent(sc, false, xstrdup(name), d, E_LINK, abs);
    }
}

static unsigned char entry_type(int dfd, const struct dirent *de)
{
    if (de->d_type != DT_UNKNOWN)
        return de->d_type;
    struct stat st;
    if (fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
        return DT_UNKNOWN;
    return S_ISDIR(st.st_mode) ? DT_DIR : S_ISLNK(st.st_mode) ? DT_LNK
                                        : S_ISREG(st.st_mode) ? DT_REG : DT_UNKNOWN;
}

static void list_unit_dir(struct scan *sc, unsigned d)
{
    int dfd = dirfd(sc->dirs[d]);
    struct dirent *de;
    while ((de = readdir(sc->dirs[d]))) {
        const char *n = de->d_name;
        size_t l = strlen(n);
        if (n[0] == '.' || l > NAME_MAX)
            continue;
        if (++sc->nentries > UNITS_NAMES_MAX) {
            sc->out->truncated = true;
            problem(sc, unit_dirs[d], 0, -E2BIG,
                    "too many entries in the unit directories: the rest is not read");
            return;
        }
        unsigned char type = entry_type(dfd, de);
        if (l > 2 && strcmp(n + l - 2, ".d") == 0) {          /* NAME.d drop-in directory */
            char *base = xstrndup(n, l - 2);
            if (units_type_of(base) >= 0 && (type == DT_DIR || type == DT_LNK))
                add_ent(sc, true, base, d, E_DROPDIR, NULL);
            else
                free(base);
            continue;
        }
        if (units_type_of(n) < 0)
            continue;
        if (type == DT_REG)
            add_ent(sc, false, xstrdup(n), d, E_FILE, NULL);
        else if (type == DT_LNK)
            classify_link(sc, d, dfd, n);
    }
}

/* Open the unit directories; one that is the same directory as an earlier one (/lib and
 * /usr/lib on merged-/usr systems) is left out, so nothing is read twice. */
static unsigned open_unit_dirs(struct scan *sc)
{
    struct stat seen[NDIRS];
    unsigned n = 0;
    for (unsigned d = 0; d < NDIRS; d++) {
        int fd = open_in_root(sc->root, unit_dirs[d], true);
        if (fd < 0) {
            if (fd != -ENOENT && fd != -ENOTDIR)
                problem(sc, unit_dirs[d], 0, fd, "cannot open the unit directory");
            continue;
        }
        struct stat st;
        bool dup = fstat(fd, &st) < 0;
        for (unsigned i = 0; i < n && !dup; i++)
            dup = seen[i].st_dev == st.st_dev && seen[i].st_ino == st.st_ino;
        if (dup || !(sc->dirs[d] = fdopendir(fd))) {
            close(fd);
            continue;
        }
        seen[n++] = st;
    }
    return n;
}

static int cmp_ent(const void *a, const void *b)
{
    const struct ent *x = a, *y = b;
    int c = strcmp(x->name, y->name);
    return c ? c : (x->dir > y->dir) - (x->dir < y->dir);
}

static int cmp_name(const void *key, const void *b)
{
    return strcmp(key, ((const struct ent *)b)->name);
}

/* Sort by name then precedence, and keep the first of each name: a higher-precedence
 * directory hides the same name lower down. */
static void sort_units(struct scan *sc)
{
    if (sc->nunits)
        qsort(sc->units, sc->nunits, sizeof(*sc->units), cmp_ent);
    if (sc->ndrops)
        qsort(sc->drops, sc->ndrops, sizeof(*sc->drops), cmp_ent);
    size_t w = 0;
    for (size_t i = 0; i < sc->nunits; i++) {
        if (w && strcmp(sc->units[w - 1].name, sc->units[i].name) == 0) {
            free(sc->units[i].name);
            free(sc->units[i].target);
            continue;
        }
        sc->units[w++] = sc->units[i];
    }
    sc->nunits = w;
}

static struct ent *find_unit(struct scan *sc, const char *name)
{
    return sc->nunits ? bsearch(name, sc->units, sc->nunits, sizeof(*sc->units), cmp_name)
                      : NULL;
}

static bool has_dropdir(struct scan *sc, const char *name, unsigned d)
{
    struct ent key = { .name = (char *)(uintptr_t)name, .dir = d };
    return sc->ndrops && bsearch(&key, sc->drops, sc->ndrops, sizeof(*sc->drops), cmp_ent);
}

/* ---- names: aliases, masks, real files ------------------------------------------------- */

static void canon_add_name(struct canon *c, const char *name)
{
    c->names = xreallocarray(c->names, c->nnames + 1, sizeof(*c->names));
    c->names[c->nnames++] = xstrdup(name);
}

/* Follow an alias to the entry that ends the chain, or NULL (dangling: systemd allows it;
 * a loop or a chain too long: reported). */
static struct ent *follow_alias(struct scan *sc, struct ent *e)
{
    struct ent *cur = e;
    for (int hop = 0; hop < ALIAS_HOPS; hop++) {
        struct ent *t = find_unit(sc, cur->target);
        if (!t || t->kind != E_ALIAS)
            return t;
        cur = t;
    }
    char *path = join(unit_dirs[e->dir], e->name, "");
    problem(sc, path, 0, -ELOOP, "alias chain longer than 8 links, or a loop: ignored");
    free(path);
    return NULL;
}

/* The name systemd gives a unit's file ("Fragment Path"): the entry itself, except for a
 * link to the same name in another unit directory, which is named by its target. */
static char *main_path(const struct ent *e)
{
    if (e->kind == E_LINK) {
        const char *slash = strrchr(e->target, '/');
        char *dir = xstrndup(e->target, (size_t)(slash - e->target));
        bool same_name_elsewhere = in_unit_dir(dir);
        free(dir);
        if (same_name_elsewhere)
            return xstrdup(e->target);
    }
    return join(unit_dirs[e->dir], e->name, "");
}

static void resolve_names(struct scan *sc)
{
    for (size_t i = 0; i < sc->nunits; i++) {
        struct ent *e = &sc->units[i];
        if (e->kind != E_FILE && e->kind != E_LINK)
            continue;
        sc->canon = grow(sc->canon, sc->ncanon, &sc->capc, sizeof(*sc->canon));
        struct canon *c = &sc->canon[sc->ncanon];
        memset(c, 0, sizeof(*c));
        c->e = e;
        c->path = main_path(e);
        canon_add_name(c, e->name);
        e->canon = (long)sc->ncanon++;
    }
    for (size_t i = 0; i < sc->nunits; i++) {
        struct ent *e = &sc->units[i];
        struct ent *t = e->kind == E_ALIAS ? follow_alias(sc, e) : e->kind == E_MASK ? e : NULL;
        if (!t)
            continue;
        if (t->kind == E_MASK) {
            char *path = join(unit_dirs[t->dir], t->name, "");
            add_masked(sc, e->name, path);
            free(path);
        } else if (e != t) {
            canon_add_name(&sc->canon[t->canon], e->name);
        }
    }
}

/* Find each unit's real file; an empty file or a link ending at /dev/null masks it. */
static void stat_canon(struct scan *sc, struct canon *c)
{
    int fd = open_in_root(sc->root, c->path, false);
    struct stat st;
    if (fd >= 0 && fstat(fd, &st) < 0)
        st.st_size = -1;
    if (fd >= 0)
        close(fd);
    if (fd == -ENODEV || (fd >= 0 && st.st_size == 0)) {
        for (unsigned i = 0; i < c->nnames; i++)
            add_masked(sc, c->names[i], c->path);
        c->skip = true;
        return;
    }
    if (fd < 0 || st.st_size < 0) {
        problem(sc, c->path, 0, fd < 0 ? fd : -EIO,
                fd == -EINVAL ? "unit file is not a regular file" : "cannot open the unit file");
        c->skip = true;
        return;
    }
    c->dev = st.st_dev;
    c->ino = st.st_ino;
}

static int cmp_canon_inode(const void *a, const void *b)
{
    const struct canon *x = *(struct canon *const *)a, *y = *(struct canon *const *)b;
    if (x->dev != y->dev)
        return x->dev < y->dev ? -1 : 1;
    if (x->ino != y->ino)
        return x->ino < y->ino ? -1 : 1;
    return x < y ? -1 : x > y;      /* canon is in name order: the first name keeps it */
}

/* Two names that reach one real file are one unit: the later names join the first. */
static void merge_same_files(struct scan *sc)
{
    struct canon **by = xcalloc(sc->ncanon, sizeof(*by));
    size_t n = 0;
    for (size_t i = 0; i < sc->ncanon; i++)
        if (!sc->canon[i].skip)
            by[n++] = &sc->canon[i];
    if (n)
        qsort(by, n, sizeof(*by), cmp_canon_inode);
    for (size_t i = 1; i < n; i++) {
        struct canon *keep = by[i - 1], *c = by[i];
        if (c->dev != keep->dev || c->ino != keep->ino)
            continue;
        for (unsigned k = 0; k < c->nnames; k++)
            canon_add_name(keep, c->names[k]);
        c->skip = true;
        by[i] = keep;               /* a third name joins the same one */
    }
    free(by);
}

/* ---- drop-ins ------------------------------------------------------------------------- */

/* The unit names whose NAME.d directories apply, most specific first, as systemd's
 * unit_file_expand_dropin_names(): the name, its template when it is an instance, and the
 * names cut after each dash ("a-b-c.service": "a-b-.service", "a-.service"). */
static void expand_names(const char *name, char **v, size_t *n)
{
    if (*n >= EXPAND_MAX)
        return;
    v[(*n)++] = xstrdup(name);
    const char *dot = strrchr(name, '.'), *at = strchr(name, '@');
    if (!dot || (at && at > dot))
        return;
    bool instance = at && at + 1 < dot;
    if (instance) {                                  /* "a@x.service" -> "a@.service" */
        char *tmpl = xmalloc(strlen(name) + 1);
        size_t pl = (size_t)(at - name) + 1;
        memcpy(tmpl, name, pl);
        strcpy(tmpl + pl, dot);
        expand_names(tmpl, v, n);
        free(tmpl);
    }
    size_t plen = (size_t)((at ? at : dot) - name);
    char *prefix = xstrndup(name, plen);
    bool chopped = false, found = false;
    for (;;) {
        char *dash = strrchr(prefix, '-');
        if (!dash || dash == prefix)
            break;
        if (dash[1] != '\0' || chopped) {            /* keep up to and with the dash */
            dash[1] = '\0';
            found = true;
            break;
        }
        *dash = '\0';                                /* a trailing dash: cut it, once */
        chopped = true;
    }
    if (found) {
        const char *inst = instance ? at : "";
        size_t il = instance ? (size_t)(dot - at) : 0;
        char *built = xmalloc(strlen(prefix) + il + strlen(dot) + 1);
        strcpy(built, prefix);
        memcpy(built + strlen(prefix), inst, il);
        strcpy(built + strlen(prefix) + il, dot);
        expand_names(built, v, n);
        free(built);
    }
    free(prefix);
}

static bool conf_seen(const struct conf *confs, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(confs[i].name, name) == 0)
            return true;
    return false;
}

static bool is_devnull_link(int dfd, const char *name)
{
    char t[16];
    ssize_t l = readlinkat(dfd, name, t, sizeof(t) - 1);
    if (l <= 0)
        return false;
    t[l] = '\0';
    return strcmp(t, "/dev/null") == 0;
}

/* Add the .conf files of one drop-in directory whose names are not taken yet. */
static void list_confs(struct scan *sc, const char *dpath, struct conf **confs, size_t *n)
{
    int fd = open_in_root(sc->root, dpath, true);
    if (fd < 0) {
        if (fd != -ENOENT && fd != -ENOTDIR)
            problem(sc, dpath, 0, fd, "cannot open the drop-in directory");
        return;
    }
    DIR *dir = fdopendir(fd);
    if (!dir) {
        close(fd);
        return;
    }
    struct dirent *de;
    while ((de = readdir(dir))) {
        const char *name = de->d_name;
        size_t l = strlen(name);
        if (name[0] == '.' || l <= 5 || strcmp(name + l - 5, ".conf") != 0 ||
            conf_seen(*confs, *n, name) || entry_type(fd, de) == DT_DIR)
            continue;
        if (*n >= DROPINS_SEEN_MAX) {
            sc->out->truncated = true;
            problem(sc, dpath, 0, -E2BIG, "too many drop-ins: the rest is not read");
            break;
        }
        *confs = xreallocarray(*confs, *n + 1, sizeof(**confs));
        (*confs)[(*n)++] = (struct conf){ xstrdup(name), join(dpath, name, ""),
                                          is_devnull_link(fd, name) };
    }
    closedir(dir);
}

static int cmp_conf(const void *a, const void *b)
{
    return strcmp(((const struct conf *)a)->name, ((const struct conf *)b)->name);
}

/* The drop-ins of a unit, in the order systemd reads the directories (each name, every
 * unit directory by precedence, every derived name), the first of each file name kept;
 * then sorted by file name. */
static size_t collect_dropins(struct scan *sc, const struct canon *c, struct conf **confs)
{
    size_t n = 0;
    for (unsigned k = 0; k < c->nnames; k++) {
        char *names[EXPAND_MAX];
        size_t nn = 0;
        expand_names(c->names[k], names, &nn);
        for (unsigned d = 0; d < NDIRS; d++) {
            for (size_t j = 0; j < nn && sc->dirs[d]; j++) {
                if (!has_dropdir(sc, names[j], d))
                    continue;
                char *dpath = join(unit_dirs[d], names[j], ".d");
                list_confs(sc, dpath, confs, &n);
                free(dpath);
            }
        }
        for (size_t j = 0; j < nn; j++)
            free(names[j]);
    }
    if (n)
        qsort(*confs, n, sizeof(**confs), cmp_conf);
    if (n > UNITS_DROPINS_MAX) {            /* the first ones by name are applied */
        sc->out->truncated = true;
        problem(sc, (*confs)[UNITS_DROPINS_MAX].path, 0, -E2BIG,
                "more than 64 drop-ins: this one and the later ones are not applied");
        for (size_t i = UNITS_DROPINS_MAX; i < n; i++) {
            free((*confs)[i].name);
            free((*confs)[i].path);
        }
        n = UNITS_DROPINS_MAX;
    }
    return n;
}

/* ---- parsing each unit ------------------------------------------------------------------ */

static void apply_file(struct scan *sc, struct unit_sched *s, const char *path)
{
    int fd = open_in_root(sc->root, path, false);
    if (fd == -ENODEV)
        return;                     /* a drop-in masked through a chain of links */
    char *buf = NULL;
    ssize_t len = fd < 0 ? fd : read_all(fd, &buf);
    if (fd >= 0)
        close(fd);
    if (len < 0) {
        problem(sc, path, 0, (int)len,
                len == -EFBIG ? "file larger than 1 MiB: not read" : "cannot read the file");
        return;
    }
    sc->out->nparsed++;
    if (units_set_file(s, path) >= 0)
        units_parse(buf, (size_t)len, s);
    free(buf);
}

static bool sched_invalid(const struct unit_sched *s)
{
    for (unsigned i = 0; i < s->ninvalid; i++)
        if (s->invalid[i].sched)
            return true;
    return false;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void keep_unit(struct scan *sc, struct canon *c, struct unit_sched *s)
{
    struct unit_list *o = sc->out;
    o->units = grow(o->units, o->nunits, &sc->capunits, sizeof(*o->units));
    struct unit_entry *u = &o->units[o->nunits++];
    u->name = c->names[0];
    u->naliases = c->nnames - 1;
    u->aliases = u->naliases ? xcalloc(u->naliases, sizeof(*u->aliases)) : NULL;
    for (unsigned i = 1; i < c->nnames; i++)
        u->aliases[i - 1] = c->names[i];
    if (u->naliases > 1)
        qsort(u->aliases, u->naliases, sizeof(*u->aliases), cmp_str);
    free(c->names);
    c->names = NULL;
    c->nnames = 0;
    u->s = *s;
}

static void parse_unit(struct scan *sc, struct canon *c)
{
    struct unit_sched s;
    units_sched_init(&s, (enum unit_type)units_type_of(c->e->name));
    apply_file(sc, &s, c->path);
    if (s.nfiles == 0) {                          /* unreadable: already reported */
        units_sched_free(&s);
        return;
    }
    struct conf *confs = NULL;
    size_t n = collect_dropins(sc, c, &confs);
    for (size_t i = 0; i < n; i++) {
        if (!confs[i].mask && !s.load_error)
            apply_file(sc, &s, confs[i].path);
        free(confs[i].name);
        free(confs[i].path);
    }
    free(confs);
    if (s.load_error) {
        const char *f = s.load_error_at.file >= 0 ? s.files[s.load_error_at.file] : c->path;
        problem(sc, f, s.load_error_at.line, s.load_error,
                "systemd refuses to load this unit (see its invalid settings)");
    }
    if (units_sets_sched(&s) || sched_invalid(&s))
        keep_unit(sc, c, &s);
    else
        units_sched_free(&s);
}

/* ---- the scan ------------------------------------------------------------------------- */

static void scan_free(struct scan *sc)
{
    for (size_t i = 0; i < sc->nunits; i++) {
        free(sc->units[i].name);
        free(sc->units[i].target);
    }
    for (size_t i = 0; i < sc->ndrops; i++)
        free(sc->drops[i].name);
    for (size_t i = 0; i < sc->ncanon; i++) {
        for (unsigned k = 0; k < sc->canon[i].nnames; k++)
            free(sc->canon[i].names[k]);
        free(sc->canon[i].names);
        free(sc->canon[i].path);
    }
    for (size_t d = 0; d < NDIRS; d++)
        if (sc->dirs[d])
            closedir(sc->dirs[d]);
    free(sc->units);
    free(sc->drops);
    free(sc->canon);
}

static int cmp_masked(const void *a, const void *b)
{
    return strcmp(((const struct unit_masked *)a)->name, ((const struct unit_masked *)b)->name);
}

int units_scan(int root_fd, struct unit_list *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof(*out));
    if (errlen)
        err[0] = '\0';
    if (root_fd < 0) {
        if (errlen)
            snprintf(err, errlen, "bad root directory fd");
        return -EBADF;
    }
    struct scan sc = { .root = root_fd, .out = out };
    out->ndirs = open_unit_dirs(&sc);
    if (out->ndirs == 0) {
        if (errlen)
            snprintf(err, errlen, "no systemd unit directory under this root (looked for "
                                  "/etc/systemd/system, /run/systemd/system, "
                                  "/usr/local/lib/systemd/system, /lib/systemd/system and "
                                  "/usr/lib/systemd/system)");
        scan_free(&sc);
        return -ENOENT;
    }
    for (unsigned d = 0; d < NDIRS && !out->truncated; d++)
        if (sc.dirs[d])
            list_unit_dir(&sc, d);
    sort_units(&sc);
    resolve_names(&sc);
    for (size_t i = 0; i < sc.ncanon; i++)
        stat_canon(&sc, &sc.canon[i]);
    merge_same_files(&sc);
    for (size_t i = 0; i < sc.ncanon; i++)
        if (!sc.canon[i].skip)
            parse_unit(&sc, &sc.canon[i]);
    if (out->nmasked > 1)
        qsort(out->masked, out->nmasked, sizeof(*out->masked), cmp_masked);
    scan_free(&sc);
    return 0;
}

void units_list_free(struct unit_list *l)
{
    if (!l)
        return;
    for (size_t i = 0; i < l->nunits; i++) {
        struct unit_entry *u = &l->units[i];
        free(u->name);
        for (unsigned k = 0; k < u->naliases; k++)
            free(u->aliases[k]);
        free(u->aliases);
        units_sched_free(&u->s);
    }
    for (size_t i = 0; i < l->nmasked; i++) {
        free(l->masked[i].name);
        free(l->masked[i].path);
    }
    for (size_t i = 0; i < l->nproblems; i++)
        free(l->problems[i].path);
    free(l->units);
    free(l->masked);
    free(l->problems);
    memset(l, 0, sizeof(*l));
}
