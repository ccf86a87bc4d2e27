/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Tests for audit/unitfile.c and unitpath.c: the unit file parser (inline texts) and the scanner (fixture
 * trees, a tree built at run time for the limits, and this machine's own root).
 *
 * Fixtures (tests/fixtures, or the directory in IOTRIAGE_FIXTURES; run from the repo root):
 *   units/root    merged /usr: lib is an ABSOLUTE symlink to /usr/lib, so it only works when
 *                 resolved inside the fixture root. /etc masks and overrides /usr/lib units,
 *                 /dev/null masks, an empty file, an alias with drop-ins of its own, a
 *                 linked unit file whose relative symlink climbs above the root, /etc and
 *                 /run drop-ins overriding, resetting and masking each other, a dash-prefix
 *                 drop-in directory, socket, mount, swap, timer and template units.
 *   units/split   /lib and /usr/lib as two directories: the same name in both, a link to the
 *                 same name in the other, two links to one file outside the unit dirs, an
 *                 alias chain, an alias loop and a unit that is a directory.
 *
 * Every expected value below is worked out by hand from the fixture or inline text, and the
 * systemd semantics were checked against systemd 252 itself: `systemd --test --system` (run
 * as an unprivileged user with SYSTEMD_UNIT_PATH at a copy of the fixture) dumps each unit's
 * IOSchedulingClass/IOPriority/Nice/CPUSchedulingPolicy, and `systemd-analyze verify` names
 * the values it rejects. Where we differ from systemd on purpose, the test says so.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "source/ioprio.h"
#include "audit/unitpath.h"

/* ------------------------------------------------------------------------------------------ */
/* Helpers                                                                                     */
/* ------------------------------------------------------------------------------------------ */

static const char *fixture_path(const char *rel)
{
    static char path[4096];
    const char *dir = getenv("IOTRIAGE_FIXTURES");
    if (dir == NULL || *dir == '\0')
        dir = "tests/fixtures";
    snprintf(path, sizeof(path), "%s/%s", dir, rel);
    return path;
}

static int open_fixture_dir(const char *rel)
{
    const char *path = fixture_path(rel);
    int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        fail_msg("cannot open fixture directory %s: %s (run from the repo root or set "
                 "IOTRIAGE_FIXTURES)", path, strerror(errno));
    return fd;
}

/* Parse text as one service unit file named "/t.service"; the caller frees with
 * units_sched_free. Returns units_parse's result. */
static int parse_as(enum unit_type type, const char *text, struct unit_sched *u)
{
    units_sched_init(u, type);
    assert_int_equal(units_set_file(u, "/t.service"), 0);
    return units_parse(text, strlen(text), u);
}

static int parse(const char *text, struct unit_sched *u)
{
    return parse_as(UNIT_SERVICE, text, u);
}

static void assert_eff(const struct unit_sched *u, enum ioprio_class cls, int level,
                       enum ioprio_source src)
{
    struct ioprio_eff e = units_effective(u);
    if (e.cls != cls || e.level != level || e.source != src)
        fail_msg("effective %s/%d (%s), expected %s/%d (%s)", ioprio_class_name(e.cls), e.level,
                 ioprio_source_name(e.source), ioprio_class_name(cls), level,
                 ioprio_source_name(src));
}

/* The invalid entry recorded for line `line`, failing the test when there is none. */
static const struct unit_invalid *invalid_at(const struct unit_sched *u, unsigned line)
{
    for (unsigned i = 0; i < u->ninvalid; i++)
        if (u->invalid[i].at.line == line)
            return &u->invalid[i];
    fail_msg("no invalid entry for line %u (%u entries)", line, u->ninvalid);
    abort(); /* not reached */
}

static const struct unit_entry *find_unit(const struct unit_list *l, const char *name)
{
    for (size_t i = 0; i < l->nunits; i++)
        if (strcmp(l->units[i].name, name) == 0)
            return &l->units[i];
    fail_msg("unit %s not in the scan's list", name);
    abort(); /* not reached */
}

static void assert_where(const struct unit_sched *u, enum unit_key k, const char *file,
                         unsigned line)
{
    const char *f = units_where_file(u, k);
    if (file == NULL) {
        if (f != NULL)
            fail_msg("%s set at %s:%u, expected unset", units_key_name(k), f, u->where[k].line);
        return;
    }
    if (f == NULL)
        fail_msg("%s unset, expected %s:%u", units_key_name(k), file, line);
    assert_string_equal(f, file);
    assert_int_equal(u->where[k].line, line);
}

/* ------------------------------------------------------------------------------------------ */
/* Parser: lines                                                                              */
/* ------------------------------------------------------------------------------------------ */

static void test_comments_whitespace_and_continuations(void **state)
{
    (void)state;
    struct unit_sched u;
    /* A UTF-8 byte order mark, CRLF endings, '#' and ';' comments (also indented), spaces
     * around '=', a continuation whose backslash becomes a space and whose middle has a
     * comment line (skipped, systemd.syntax(7)), and an escaped backslash at the end of a
     * line, which does not continue it. */
    const char *text =
        "\xef\xbb\xbf# comment\r\n"                      /* 1 */
        "[Service]\r\n"                                   /* 2 */
        "   ; indented comment\r\n"                       /* 3 */
        "  Nice   =   -3   \r\n"                          /* 4 */
        "ExecStart=/usr/bin/a \\\n"                       /* 5 */
        "# not part of the command\n"                     /* 6 */
        "  --flag\n"                                      /* 7 */
        "WorkingDirectory=/srv/x\\\\\n"                   /* 8: ends in "\\": no continuation */
        "IOSchedulingClass=idle\n";                       /* 9 */
    assert_int_equal(parse(text, &u), 0);
    assert_true(u.nice_set);
    assert_int_equal(u.nice, -3);
    assert_where(&u, UK_NICE, "/t.service", 4);
    assert_string_equal(u.exec, "/usr/bin/a");
    assert_where(&u, UK_EXEC, "/t.service", 5);   /* the line where the assignment starts */
    /* "/srv/x\\" is an absolute path holding a backslash: systemd takes it as it is */
    assert_string_equal(u.workdir, "/srv/x\\\\");
    assert_true(u.ioclass_set);
    assert_int_equal(u.ioclass, IOC_IDLE);
    assert_where(&u, UK_IOCLASS, "/t.service", 9);
    assert_int_equal(u.ninvalid, 0);
    units_sched_free(&u);

    /* A continuation joins into the value: "Nice=1\" + "0" is "1 0", which is no number
     * (systemd 252: "Failed to parse nice priority '1 0'"). A continuation that reaches the
     * end of the file is still parsed. */
    assert_int_equal(parse("[Service]\nNice=1\\\n0\nIOSchedulingPriority=3\\", &u), 0);
    assert_false(u.nice_set);
    assert_string_equal(invalid_at(&u, 2)->text, "1 0");
    assert_true(u.iolevel_set);
    assert_int_equal(u.iolevel, 3);
    units_sched_free(&u);

    /* A lone "\r" and a NUL also end a line, as in systemd's read_line(). */
    const char nul_text[] = "[Service]\rNice=4\0IOSchedulingClass=realtime\n";
    units_sched_init(&u, UNIT_SERVICE);
    assert_int_equal(units_parse(nul_text, sizeof(nul_text) - 1, &u), 0);
    assert_int_equal(u.nice, 4);
    assert_int_equal(u.ioclass, IOC_RT);
    units_sched_free(&u);
}

static void test_lines_without_assignment_are_recorded(void **state)
{
    (void)state;
    struct unit_sched u;
    assert_int_equal(parse("[Service]\nIOSchedulingClass idle\n=5\n.include /etc/x\nNice=2\n",
                           &u), 0);
    assert_int_equal(u.ninvalid, 3);
    assert_string_equal(invalid_at(&u, 2)->key, "");
    assert_string_equal(invalid_at(&u, 2)->text, "IOSchedulingClass idle");
    assert_false(invalid_at(&u, 2)->fatal);
    assert_string_equal(invalid_at(&u, 3)->text, "=5");
    assert_string_equal(invalid_at(&u, 4)->text, ".include /etc/x");
    assert_int_equal(u.nice, 2);
    units_sched_free(&u);
}

static void test_bad_section_header_makes_the_unit_unloadable(void **state)
{
    (void)state;
    struct unit_sched u;
    /* systemd 252: "Invalid section header '[Service] # x'", load state "error", nothing of
     * the file applies after it. */
    assert_int_equal(parse("[Unit]\nDescription=x\n[Service] # x\nNice=3\n", &u), -EBADMSG);
    assert_int_equal(u.load_error, -EBADMSG);
    assert_int_equal(u.load_error_at.line, 3);
    assert_false(u.nice_set);
    assert_true(invalid_at(&u, 3)->fatal);
    /* A unit that does not load takes no drop-in either. */
    assert_int_equal(units_set_file(&u, "/d.conf"), 1);
    assert_int_equal(units_parse("[Service]\nNice=1\n", 17, &u), -EBADMSG);
    assert_false(u.nice_set);
    units_sched_free(&u);
}

static void test_parser_reads_nothing_past_len(void **state)
{
    (void)state;
    /* The text ends right before a PROT_NONE page, with no NUL: a read past len faults. */
    const char text[] = "[Service]\nNice=7\nExecStart=/bin/x \\";
    size_t len = sizeof(text) - 1;
    long pg = sysconf(_SC_PAGESIZE);
    char *map = mmap(NULL, 2 * (size_t)pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                     -1, 0);
    assert_true(map != MAP_FAILED);
    assert_int_equal(mprotect(map + pg, (size_t)pg, PROT_NONE), 0);
    char *copy = map + pg - len;
    memcpy(copy, text, len);
    struct unit_sched u;
    units_sched_init(&u, UNIT_SERVICE);
    assert_int_equal(units_parse(copy, len, &u), 0);
    assert_int_equal(u.nice, 7);
    assert_string_equal(u.exec, "/bin/x");
    units_sched_free(&u);
    munmap(map, 2 * (size_t)pg);

    assert_int_equal(units_parse(NULL, 1, &u), -EINVAL);
    assert_int_equal(units_parse(NULL, 0, &u), 0);
    assert_int_equal(units_parse("x", 1, NULL), -EINVAL);
}

/* ------------------------------------------------------------------------------------------ */
/* Parser: sections and keys                                                                  */
/* ------------------------------------------------------------------------------------------ */

static void test_only_the_types_exec_section_counts(void **state)
{
    (void)state;
    struct unit_sched u;
    const char *text = "Nice=1\n"                      /* 1: before any section */
                       "[Unit]\nNice=2\n"              /* 3: [Unit] has no Nice= */
                       "[X-Mine]\nNice=3\n"            /* 5: X- sections: silently ignored */
                       "[service]\nNice=4\n"           /* 7: section names are case-sensitive */
                       "[Service]\nNice=5\n"           /* 9 */
                       "[Install]\nNice=6\n";          /* 11 */
    assert_int_equal(parse(text, &u), 0);
    assert_int_equal(u.nice, 5);
    assert_where(&u, UK_NICE, "/t.service", 9);
    assert_int_equal(u.ninvalid, 4);                   /* lines 1, 3, 7 and 11 */
    assert_true(invalid_at(&u, 1)->sched);
    assert_true(invalid_at(&u, 3)->sched);
    assert_true(invalid_at(&u, 7)->sched);
    assert_true(invalid_at(&u, 11)->sched);
    units_sched_free(&u);

    /* A socket's exec settings live in [Socket]; its [Service] is an unknown section, and
     * ExecStart= is no socket key at all (ignored without a word). */
    const char *sock = "[Service]\nNice=1\n[Socket]\nNice=2\nIOSchedulingClass=idle\n"
                       "ExecStart=/bin/x\n";
    assert_int_equal(parse_as(UNIT_SOCKET, sock, &u), 0);
    assert_int_equal(u.nice, 2);
    assert_int_equal(u.ioclass, IOC_IDLE);
    assert_null(u.exec);
    assert_int_equal(u.ninvalid, 1);
    assert_int_equal(invalid_at(&u, 2)->at.line, 2);
    units_sched_free(&u);

    /* UNIT_ANY takes any of the four sections; ExecStart= only from [Service]. */
    assert_int_equal(parse_as(UNIT_ANY, "[Mount]\nNice=2\nExecStart=/bin/m\n[Swap]\n"
                                        "IOSchedulingClass=idle\n[Service]\nExecStart=/bin/s\n",
                              &u), 0);
    assert_int_equal(u.nice, 2);
    assert_int_equal(u.ioclass, IOC_IDLE);
    assert_string_equal(u.exec, "/bin/s");
    units_sched_free(&u);
}

static void test_key_names_are_case_sensitive(void **state)
{
    (void)state;
    struct unit_sched u;
    /* systemd 252: "Unknown key 'nice' in section [Service], ignoring." */
    assert_int_equal(parse("[Service]\nnice=5\nIOSCHEDULINGCLASS=idle\nFoo=bar\n", &u), 0);
    assert_false(units_sets_sched(&u));
    assert_int_equal(u.ninvalid, 2);                   /* Foo= is just another key */
    assert_string_equal(invalid_at(&u, 2)->key, "nice");
    assert_true(invalid_at(&u, 2)->sched);
    assert_string_equal(invalid_at(&u, 3)->text, "idle");
    units_sched_free(&u);
    /* Also outside the exec section: "Unknown key 'nice' in section [Unit], ignoring." and
     * "Assignment outside of section. Ignoring." (systemd 252 --test, measured in
     * tests/integration/test_units_systemd.sh); an X- section stays silent. */
    assert_int_equal(parse("nice=1\n[Unit]\nnice=5\n[X-Mine]\nnice=6\n[Service]\n", &u), 0);
    assert_int_equal(u.ninvalid, 2);
    assert_true(invalid_at(&u, 1)->sched);
    assert_string_equal(invalid_at(&u, 3)->key, "nice");
    assert_true(invalid_at(&u, 3)->sched);
    units_sched_free(&u);
}

/* service_verify(): "Service has no ExecStart=, ExecStop=, or SuccessAction=. Refusing."
 * (load state bad-setting), checked once every file is applied. */
static void test_service_without_a_command_is_refused(void **state)
{
    (void)state;
    struct unit_sched u;
    assert_int_equal(parse("[Service]\nNice=5\n", &u), 0);
    assert_int_equal(units_finish(&u), -ENOEXEC);
    assert_int_equal(u.load_error, -ENOEXEC);
    assert_true(u.invalid[u.ninvalid - 1].fatal);
    assert_int_equal(u.invalid[u.ninvalid - 1].at.file, 0);
    units_sched_free(&u);
    /* An ExecStart= reset by an empty one in a drop-in leaves none. */
    assert_int_equal(parse("[Service]\nExecStart=/bin/true\nExecStart=\n", &u), 0);
    assert_int_equal(units_finish(&u), -ENOEXEC);
    units_sched_free(&u);
    const char *fine[] = {
        "[Service]\nExecStart=/bin/true\n",
        "[Service]\nExecStop=/bin/true\n",
        "[Unit]\nSuccessAction=reboot\n[Service]\n",
    };
    for (size_t i = 0; i < sizeof(fine) / sizeof(fine[0]); i++) {
        assert_int_equal(parse(fine[i], &u), 0);
        assert_int_equal(units_finish(&u), 0);
        units_sched_free(&u);
    }
    const char *refused[] = {
        "[Service]\nExecStop=/bin/true\nExecStop=\n",
        "[Unit]\nSuccessAction=none\n[Service]\n",
        "[Service]\nSuccessAction=reboot\n",          /* a [Unit] key: not here */
    };
    for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
        assert_int_equal(parse(refused[i], &u), 0);
        assert_int_equal(units_finish(&u), -ENOEXEC);
        units_sched_free(&u);
    }
    /* Sockets need no command. */
    assert_int_equal(parse_as(UNIT_SOCKET, "[Socket]\nNice=5\n", &u), 0);
    assert_int_equal(units_finish(&u), 0);
    units_sched_free(&u);
}

/* ------------------------------------------------------------------------------------------ */
/* Parser: the scheduling values                                                              */
/* ------------------------------------------------------------------------------------------ */

/* How systemd (250 and later; Debian 12 has 252) turns IOSchedulingClass= and
 * IOSchedulingPriority= into the one value it passes to ioprio_set(IOPRIO_WHO_PROCESS):
 * load-fragment.c keeps ExecContext.ioprio, initialised to IOPRIO_DEFAULT_CLASS_AND_PRIO
 * (best-effort, 4). Class= replaces the class and keeps the level; Priority= replaces the
 * level and keeps the class; both pass the result through ioprio_normalize(), which turns
 * class NONE into best-effort/4; an empty value of either resets both. So:
 *   Class=idle alone       -> IOPRIO_PRIO_VALUE(IDLE, 4): idle/4. The kernel stores level 4
 *                             (ioprio_get() shows it); BFQ treats every idle task alike, so
 *                             the level does not matter, but idle/7 would be wrong as a
 *                             report of what the task holds.
 *   Priority=2 alone       -> best-effort/2 (the class stays the initial best-effort).
 *   Class=realtime alone   -> rt/4.
 *   Class=none             -> best-effort/4, explicit: nice no longer moves it.
 * systemd <= 249 started from IOPRIO_PRIO_VALUE(BE, 0) or class NONE with level 0 and did
 * not normalize (Class=idle gave idle/0; Priority= alone gave class NONE with a level, which
 * failed at start), systemd issue #29173. Each line below was checked with systemd 252. */
struct io_case {
    const char *text;
    bool class_set, level_set;
    enum ioprio_class cls;
    int level;
    enum ioprio_source src;
};

static void test_io_class_and_priority_edit_one_value(void **state)
{
    (void)state;
    static const struct io_case cases[] = {
        { "IOSchedulingClass=idle",                           1, 0, IOC_IDLE, 4, IOS_EXPLICIT },
        { "IOSchedulingPriority=2",                           0, 1, IOC_BE,   2, IOS_EXPLICIT },
        { "IOSchedulingClass=realtime",                       1, 0, IOC_RT,   4, IOS_EXPLICIT },
        { "IOSchedulingClass=best-effort",                    1, 0, IOC_BE,   4, IOS_EXPLICIT },
        { "IOSchedulingClass=none",                           1, 0, IOC_BE,   4, IOS_EXPLICIT },
        { "IOSchedulingPriority=7\nIOSchedulingClass=idle",   1, 1, IOC_IDLE, 7, IOS_EXPLICIT },
        { "IOSchedulingClass=idle\nIOSchedulingPriority=7",   1, 1, IOC_IDLE, 7, IOS_EXPLICIT },
        /* none keeps no level: be/2 becomes be/4 */
        { "IOSchedulingPriority=2\nIOSchedulingClass=none",   1, 1, IOC_BE,   4, IOS_EXPLICIT },
        /* numbers 0-3 name the classes; systemd's safe_atoi reads 0x.. and C octal */
        { "IOSchedulingClass=1",                              1, 0, IOC_RT,   4, IOS_EXPLICIT },
        { "IOSchedulingClass=3\nIOSchedulingPriority=0x5",    1, 1, IOC_IDLE, 5, IOS_EXPLICIT },
        { "IOSchedulingPriority=0o6",                         0, 1, IOC_BE,   6, IOS_EXPLICIT },
        /* an empty value of either key unsets both: the kernel derives from nice */
        { "IOSchedulingClass=idle\nIOSchedulingPriority=",    0, 0, IOC_BE,   4, IOS_NICE },
        { "IOSchedulingPriority=1\nIOSchedulingClass=",       0, 0, IOC_BE,   4, IOS_NICE },
        { "IOSchedulingClass=idle\nIOSchedulingClass=\nIOSchedulingPriority=3",
                                                              0, 1, IOC_BE,   3, IOS_EXPLICIT },
        /* no I/O keys: the kernel's rule, level (nice + 20) / 5, class from the policy */
        { "Nice=19",                                          0, 0, IOC_BE,   7, IOS_NICE },
        { "Nice=-20",                                         0, 0, IOC_BE,   0, IOS_NICE },
        { "Nice=-1",                                          0, 0, IOC_BE,   3, IOS_NICE },
        { "Nice=010",                                         0, 0, IOC_BE,   5, IOS_NICE },
        { "CPUSchedulingPolicy=idle",                         0, 0, IOC_IDLE, 4, IOS_POLICY },
        { "CPUSchedulingPolicy=fifo\nNice=-10",               0, 0, IOC_RT,   2, IOS_POLICY },
        { "CPUSchedulingPolicy=rr",                           0, 0, IOC_RT,   4, IOS_POLICY },
        { "CPUSchedulingPolicy=batch\nNice=10",               0, 0, IOC_BE,   6, IOS_NICE },
        { "CPUSchedulingPolicy=5",                            0, 0, IOC_IDLE, 4, IOS_POLICY },
        /* an explicit class wins over nice and policy */
        { "IOSchedulingClass=best-effort\nCPUSchedulingPolicy=idle\nNice=19",
                                                              1, 0, IOC_BE,   4, IOS_EXPLICIT },
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const struct io_case *c = &cases[i];
        char text[256];
        snprintf(text, sizeof(text), "[Service]\n%s\n", c->text);
        struct unit_sched u;
        assert_int_equal(parse(text, &u), 0);
        if (u.ninvalid || u.ioclass_set != c->class_set || u.iolevel_set != c->level_set)
            fail_msg("case %zu (%s): class_set %d level_set %d invalid %u", i, c->text,
                     u.ioclass_set, u.iolevel_set, u.ninvalid);
        struct ioprio_eff e = units_effective(&u);
        if (e.cls != c->cls || e.level != c->level || e.source != c->src)
            fail_msg("case %zu (%s): %s/%d (%s), expected %s/%d (%s)", i, c->text,
                     ioprio_class_name(e.cls), e.level, ioprio_source_name(e.source),
                     ioprio_class_name(c->cls), c->level, ioprio_source_name(c->src));
        if (c->class_set || c->level_set)
            assert_int_equal(u.ioprio, IOPRIO_MAKE(c->cls, c->level));
        units_sched_free(&u);
    }
}

static void test_values_as_written_and_where_they_came_from(void **state)
{
    (void)state;
    struct unit_sched u;
    units_sched_init(&u, UNIT_SERVICE);
    assert_int_equal(units_set_file(&u, "/usr/lib/systemd/system/a.service"), 0);
    const char *main_text = "[Service]\nIOSchedulingClass=none\nNice=4\n"
                            "CPUSchedulingPolicy=batch\n";
    assert_int_equal(units_parse(main_text, strlen(main_text), &u), 0);
    assert_int_equal(units_set_file(&u, "/etc/systemd/system/a.service.d/x.conf"), 1);
    const char *dropin = "[Service]\n\nNice=-2\nIOSchedulingPriority=1\n";
    assert_int_equal(units_parse(dropin, strlen(dropin), &u), 0);
    assert_int_equal(u.ioclass, IOC_NONE);             /* as written */
    assert_int_equal(u.iolevel, 1);
    assert_int_equal(u.ioprio, IOPRIO_MAKE(IOC_BE, 1));
    assert_int_equal(u.nice, -2);
    assert_int_equal(u.policy, SCHED_BATCH);
    assert_where(&u, UK_IOCLASS, "/usr/lib/systemd/system/a.service", 2);
    assert_where(&u, UK_IOPRIO, "/etc/systemd/system/a.service.d/x.conf", 4);
    assert_where(&u, UK_NICE, "/etc/systemd/system/a.service.d/x.conf", 3);
    assert_where(&u, UK_POLICY, "/usr/lib/systemd/system/a.service", 4);
    assert_where(&u, UK_EXEC, NULL, 0);
    assert_eff(&u, IOC_BE, 1, IOS_EXPLICIT);
    assert_string_equal(units_policy_name(u.policy), "batch");
    assert_string_equal(units_key_name(UK_POLICY), "CPUSchedulingPolicy");
    units_sched_free(&u);

    /* Empty assignments unset, and forget where the value came from. */
    assert_int_equal(parse("[Service]\nNice=5\nCPUSchedulingPolicy=idle\nNice=\n"
                           "CPUSchedulingPolicy=\n", &u), 0);
    assert_false(units_sets_sched(&u));
    assert_where(&u, UK_NICE, NULL, 0);
    assert_where(&u, UK_POLICY, NULL, 0);
    units_sched_free(&u);
}

static void test_invalid_values_are_recorded_not_applied(void **state)
{
    (void)state;
    struct unit_sched u;
    /* Each rejected value leaves the earlier one in place (systemd logs "..., ignoring"). */
    const char *text = "[Service]\n"
                       "IOSchedulingClass=realtime\n"  /* 2 */
                       "IOSchedulingClass=Idle\n"      /* 3: values are case-sensitive */
                       "IOSchedulingClass=4\n"         /* 4: systemd takes 0-8; the kernel */
                                                       /*    refuses 4-8 at every start */
                       "IOSchedulingPriority=3\n"      /* 5 */
                       "IOSchedulingPriority=8\n"      /* 6 */
                       "IOSchedulingPriority=08\n"     /* 7: octal: '8' is no digit */
                       "Nice=7\n"                      /* 8 */
                       "Nice=-21\n"                    /* 9 */
                       "Nice=abc\n"                    /* 10 */
                       "Nice=1.5\n"                    /* 11 */
                       "CPUSchedulingPolicy=rr\n"      /* 12 */
                       "CPUSchedulingPolicy=FIFO\n"    /* 13 */
                       "CPUSchedulingPolicy=deadline\n"/* 14 */
                       "CPUSchedulingPolicy=6\n"       /* 15: SCHED_DEADLINE, refused at start */
                       "IOSchedulingClass=-1\n";       /* 16 */
    assert_int_equal(parse(text, &u), 0);
    assert_int_equal(u.ioclass, IOC_RT);
    assert_int_equal(u.iolevel, 3);
    assert_int_equal(u.nice, 7);
    assert_int_equal(u.policy, SCHED_RR);
    assert_where(&u, UK_IOCLASS, "/t.service", 2);
    assert_where(&u, UK_IOPRIO, "/t.service", 5);
    assert_where(&u, UK_NICE, "/t.service", 8);
    assert_where(&u, UK_POLICY, "/t.service", 12);
    static const unsigned bad[] = { 3, 4, 6, 7, 9, 10, 11, 13, 14, 15, 16 };
    assert_int_equal(u.ninvalid, sizeof(bad) / sizeof(bad[0]));
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        const struct unit_invalid *iv = invalid_at(&u, bad[i]);
        assert_true(iv->sched);
        assert_false(iv->fatal);
        assert_int_equal(iv->at.file, 0);
        assert_non_null(iv->why);
    }
    assert_string_equal(invalid_at(&u, 3)->key, "IOSchedulingClass");
    assert_string_equal(invalid_at(&u, 3)->text, "Idle");
    assert_string_equal(invalid_at(&u, 15)->text, "6");
    assert_eff(&u, IOC_RT, 3, IOS_EXPLICIT);
    units_sched_free(&u);

    /* Past UNITS_INVALID_MAX entries, further ones are counted, not kept. */
    char many[4096] = "[Service]\n";
    for (int i = 0; i < UNITS_INVALID_MAX + 5; i++)
        strcat(many, "Nice=x\n");
    assert_int_equal(parse(many, &u), 0);
    assert_int_equal(u.ninvalid, UNITS_INVALID_MAX);
    assert_int_equal(u.ninvalid_lost, 5);
    units_sched_free(&u);

    /* An over-long value is kept truncated, NUL-terminated. */
    char longv[512];
    snprintf(longv, sizeof(longv), "[Service]\nNice=%0300d\n", 1);
    longv[20] = 'x';
    assert_int_equal(parse(longv, &u), 0);
    assert_int_equal(strlen(invalid_at(&u, 2)->text), UNITS_TEXT_MAX - 1);
    units_sched_free(&u);
}

/* ------------------------------------------------------------------------------------------ */
/* Parser: ExecStart=, WorkingDirectory=, RootDirectory=                                      */
/* ------------------------------------------------------------------------------------------ */

struct exec_case {
    const char *value;
    const char *path;
    const char *prefix;
};

static void test_execstart_prefixes_quotes_and_escapes(void **state)
{
    (void)state;
    static const struct exec_case cases[] = {
        { "/usr/bin/a -x",                    "/usr/bin/a",        "" },
        { "-/usr/bin/a",                      "/usr/bin/a",        "-" },
        { "@/usr/bin/a argv0 x",              "/usr/bin/a",        "@" },
        { ":/usr/bin/a $X",                   "/usr/bin/a",        ":" },
        { "+/usr/bin/a",                      "/usr/bin/a",        "+" },
        { "!/usr/bin/a",                      "/usr/bin/a",        "!" },
        { "!!/usr/bin/a",                     "/usr/bin/a",        "!!" },
        { "-@:+/usr/bin/a",                   "/usr/bin/a",        "-@:+" },
        { "@-!!/usr/bin/a a0",                "/usr/bin/a",        "@-!!" },
        /* quotes may open anywhere in the word, prefixes included */
        { "\"/opt/my app/run\" --x",          "/opt/my app/run",   "" },
        { "-\"/opt/q\"",                      "/opt/q",            "-" },
        { "\"-@/opt/in quotes\" a0",          "/opt/in quotes",    "-@" },
        { "'/opt/single'",                    "/opt/single",       "" },
        { "/opt/a\"b c\"d",                   "/opt/ab cd",        "" },
        /* C escapes (systemd.syntax(7)), decoded outside and inside quotes */
        { "/opt/\\x41\\101\\s\\u00e9",         "/opt/AA \xc3\xa9",  "" },
        { "'/opt/it''s'",                     "/opt/its",          "" },
        /* path_simplify(): duplicate slashes and "." go, ".." stays */
        { "//usr/./bin//a",                   "/usr/bin/a",        "" },
        { "/usr/../bin/a",                    "/usr/../bin/a",     "" },
        /* a plain name is searched for in a fixed PATH at start (systemd >= 239) */
        { "sleep 1",                          "sleep",             "" },
        /* specifiers are not ours to expand */
        { "%h/bin/tool",                      "%h/bin/tool",       "" },
        /* a lone ";" separates commands */
        { "; /usr/bin/after",                 "/usr/bin/after",    "" },
        { "   /usr/bin/padded   ",            "/usr/bin/padded",   "" },
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char text[256];
        snprintf(text, sizeof(text), "[Service]\nExecStart=%s\n", cases[i].value);
        struct unit_sched u;
        assert_int_equal(parse(text, &u), 0);
        if (!u.exec || strcmp(u.exec, cases[i].path) != 0 ||
            strcmp(u.exec_prefix, cases[i].prefix) != 0 || u.ninvalid)
            fail_msg("case %zu (%s): got \"%s\" prefix \"%s\" invalid %u", i, cases[i].value,
                     u.exec ? u.exec : "(null)", u.exec_prefix, u.ninvalid);
        units_sched_free(&u);
    }
}

static void test_execstart_list_and_errors(void **state)
{
    (void)state;
    struct unit_sched u;
    /* The first command since the last empty assignment is the main one (systemd 252 runs
     * "/bin/b x" then "/bin/c" here). */
    assert_int_equal(parse("[Service]\nExecStart=/bin/a\nExecStart=\nExecStart=!!/bin/b x\n"
                           "ExecStart=/bin/c\n", &u), 0);
    assert_string_equal(u.exec, "/bin/b");
    assert_string_equal(u.exec_prefix, "!!");
    assert_int_equal(u.nexec, 2);
    assert_where(&u, UK_EXEC, "/t.service", 4);
    units_sched_free(&u);

    assert_int_equal(parse("[Service]\nExecStart=/bin/a\nExecStart=\n", &u), 0);
    assert_null(u.exec);
    assert_int_equal(u.nexec, 0);
    assert_where(&u, UK_EXEC, NULL, 0);
    units_sched_free(&u);

    /* Ignored with a warning, not fatal: bad quoting or escapes (the command is dropped),
     * and path errors under the '-' prefix. */
    static const char *const ignored[] = {
        "\"/bin/unterminated", "/bin/\\q", "-++/bin/x", "-", "-/bin/dir/", "-\"\"",
    };
    for (size_t i = 0; i < sizeof(ignored) / sizeof(ignored[0]); i++) {
        char text[128];
        snprintf(text, sizeof(text), "[Service]\nExecStart=%s\nExecStart=/bin/next\n",
                 ignored[i]);
        assert_int_equal(parse(text, &u), 0);
        if (u.load_error || u.ninvalid != 1 || !u.exec || strcmp(u.exec, "/bin/next") != 0)
            fail_msg("\"%s\": load_error %d invalid %u exec %s", ignored[i], u.load_error,
                     u.ninvalid, u.exec ? u.exec : "(null)");
        assert_false(invalid_at(&u, 2)->fatal);
        units_sched_free(&u);
    }

    /* Fatal without '-': systemd 252 says "bad-setting" and the unit does not load
     * ("++": the second '+' is no prefix, so the path is "+/bin/x"). */
    static const char *const fatal[] = {
        "++/bin/x", "@", "/bin/dir/", "bin/x", "/bin/x\\ty", "\"\"",
    };
    for (size_t i = 0; i < sizeof(fatal) / sizeof(fatal[0]); i++) {
        char text[128];
        snprintf(text, sizeof(text), "[Service]\nExecStart=%s\nNice=1\n", fatal[i]);
        int r = parse(text, &u);
        if (r != -ENOEXEC || u.load_error != -ENOEXEC || u.nice_set)
            fail_msg("\"%s\": r %d load_error %d nice_set %d", fatal[i], r, u.load_error,
                     u.nice_set);
        assert_true(invalid_at(&u, 2)->fatal);
        assert_int_equal(u.load_error_at.line, 2);
        units_sched_free(&u);
    }
}

static void test_working_and_root_directory(void **state)
{
    (void)state;
    struct unit_sched u;
    assert_int_equal(parse("[Service]\nWorkingDirectory=-/srv//web/./\nRootDirectory=/srv/root/\n",
                           &u), 0);
    assert_string_equal(u.workdir, "/srv/web");
    assert_true(u.workdir_missing_ok);
    assert_string_equal(u.rootdir, "/srv/root");
    units_sched_free(&u);

    assert_int_equal(parse("[Service]\nWorkingDirectory=~\n", &u), 0);
    assert_string_equal(u.workdir, "~");
    assert_false(u.workdir_missing_ok);
    units_sched_free(&u);

    assert_int_equal(parse("[Service]\nWorkingDirectory=-~\nRootDirectory=%t/x\n", &u), 0);
    assert_string_equal(u.workdir, "~");
    assert_true(u.workdir_missing_ok);
    assert_string_equal(u.rootdir, "%t/x");
    units_sched_free(&u);

    /* With '-' a bad path is ignored and the earlier value stays ... */
    assert_int_equal(parse("[Service]\nWorkingDirectory=/a\nWorkingDirectory=-rel\n"
                           "WorkingDirectory=-\"/tmp\"\n", &u), 0);
    assert_string_equal(u.workdir, "/a");
    assert_false(u.workdir_missing_ok);
    assert_int_equal(u.ninvalid, 2);
    assert_false(invalid_at(&u, 4)->fatal);
    units_sched_free(&u);

    /* ... without it the unit does not load (systemd 252: "WorkingDirectory= path is not
     * absolute: srv", load state bad-setting). No unquoting: quotes make it relative. */
    static const char *const fatal[] = {
        "WorkingDirectory=srv", "WorkingDirectory=\"/tmp\"", "WorkingDirectory=/a/../b",
        "RootDirectory=rel", "RootDirectory=/x/..",
    };
    for (size_t i = 0; i < sizeof(fatal) / sizeof(fatal[0]); i++) {
        char text[128];
        snprintf(text, sizeof(text), "[Service]\n%s\n", fatal[i]);
        assert_int_equal(parse(text, &u), -ENOEXEC);
        assert_true(invalid_at(&u, 2)->fatal);
        assert_null(u.workdir);
        assert_null(u.rootdir);
        units_sched_free(&u);
    }

    assert_int_equal(parse("[Service]\nWorkingDirectory=-/w\nRootDirectory=/r\n"
                           "WorkingDirectory=\nRootDirectory=\n", &u), 0);
    assert_null(u.workdir);
    assert_false(u.workdir_missing_ok);
    assert_null(u.rootdir);
    assert_where(&u, UK_WORKDIR, NULL, 0);
    units_sched_free(&u);
}

static void test_unit_type_of_name(void **state)
{
    (void)state;
    assert_int_equal(units_type_of("a.service"), UNIT_SERVICE);
    assert_int_equal(units_type_of("getty@.service"), UNIT_SERVICE);
    assert_int_equal(units_type_of("dbus.socket"), UNIT_SOCKET);
    assert_int_equal(units_type_of("-.mount"), UNIT_MOUNT);
    assert_int_equal(units_type_of("dev-sda2.swap"), UNIT_SWAP);
    assert_int_equal(units_type_of("a.timer"), -EINVAL);
    assert_int_equal(units_type_of("a.Service"), -EINVAL);
    assert_int_equal(units_type_of(".service"), -EINVAL);
    assert_int_equal(units_type_of("service"), -EINVAL);
    assert_int_equal(units_type_of(NULL), -EINVAL);
}

/* ------------------------------------------------------------------------------------------ */
/* Scanner                                                                                    */
/* ------------------------------------------------------------------------------------------ */

#define ULIB "/lib/systemd/system/"   /* /lib is /usr/lib in units/root, found first */
#define ETC  "/etc/systemd/system/"
#define RUN  "/run/systemd/system/"

static void test_scan_fixture_root(void **state)
{
    (void)state;
    int fd = open_fixture_dir("units/root");
    struct unit_list l;
    char err[256] = "unset";
    assert_int_equal(units_scan(fd, &l, err, sizeof(err)), 0);
    close(fd);
    assert_string_equal(err, "");
    /* /etc, /run and /lib; /usr/lib is /lib again (merged /usr) and is not read twice */
    assert_int_equal(l.ndirs, 3);
    assert_false(l.truncated);
    for (size_t i = 0; i < l.nproblems; i++)
        print_message("problem: %s:%u %s\n", l.problems[i].path, l.problems[i].line,
                      l.problems[i].what);
    assert_int_equal(l.nproblems, 0);     /* the dangling alias is not one (systemd agrees) */

    /* Sorted by name. Not listed: plain.service (no key), job.timer (not an exec unit type),
     * /usr/lib's backup.service and masked.service (hidden by /etc), the masked and empty
     * ones, and the dangling alias. */
    static const char *const names[] = {
        "backup.service", "bad.service", "data.mount", "db.service", "foo-bar.service",
        "linked.service", "sock.socket", "swapfile.swap", "web.service", "worker@.service",
    };
    assert_int_equal(l.nunits, sizeof(names) / sizeof(names[0]));
    for (size_t i = 0; i < l.nunits; i++)
        assert_string_equal(l.units[i].name, names[i]);

    assert_int_equal(l.nmasked, 2);
    assert_string_equal(l.masked[0].name, "empty.service");           /* an empty file */
    assert_string_equal(l.masked[0].path, ETC "empty.service");
    assert_string_equal(l.masked[1].name, "masked.service");          /* -> /dev/null */
    assert_string_equal(l.masked[1].path, ETC "masked.service");
    /* 11 unit files of our types are read (10 listed + plain.service), and 6 drop-ins */
    assert_int_equal(l.nparsed, 17);

    /* /etc's copy hides /usr/lib's, which said IOSchedulingClass=idle. */
    const struct unit_entry *u = find_unit(&l, "backup.service");
    assert_int_equal(u->s.nfiles, 1);
    assert_string_equal(u->s.files[0], ETC "backup.service");
    assert_false(u->s.ioclass_set);
    assert_int_equal(u->s.nice, 10);
    assert_eff(&u->s, IOC_BE, 6, IOS_NICE);                  /* (10 + 20) / 5 */
    assert_string_equal(u->s.exec, "/usr/bin/backup");

    /* Main file: comments, a continued description, Nice= in [Unit] (reported), quoting and
     * prefixes, a continued ExecStart= with a comment inside. Drop-ins: /etc's 50-io.conf
     * (best-effort/1) hides /run's (realtime); 60-nice.conf comes from the alias's own
     * directory web-alias.service.d. */
    u = find_unit(&l, "web.service");
    assert_int_equal(u->naliases, 1);
    assert_string_equal(u->aliases[0], "web-alias.service");
    assert_int_equal(u->s.nfiles, 3);
    assert_string_equal(u->s.files[0], ULIB "web.service");
    assert_string_equal(u->s.files[1], ETC "web.service.d/50-io.conf");
    assert_string_equal(u->s.files[2], ETC "web-alias.service.d/60-nice.conf");
    assert_int_equal(u->s.ioclass, IOC_BE);
    assert_int_equal(u->s.iolevel, 1);
    assert_where(&u->s, UK_IOCLASS, ETC "web.service.d/50-io.conf", 3);
    assert_where(&u->s, UK_IOPRIO, ETC "web.service.d/50-io.conf", 4);
    assert_int_equal(u->s.nice, -5);
    assert_where(&u->s, UK_NICE, ETC "web-alias.service.d/60-nice.conf", 3);
    assert_int_equal(u->s.policy, SCHED_BATCH);
    assert_where(&u->s, UK_POLICY, ULIB "web.service", 11);
    assert_eff(&u->s, IOC_BE, 1, IOS_EXPLICIT);
    assert_string_equal(u->s.exec, "/usr/local/bin/web server");
    assert_string_equal(u->s.exec_prefix, "-@");
    assert_int_equal(u->s.nexec, 2);
    assert_where(&u->s, UK_EXEC, ULIB "web.service", 13);
    assert_string_equal(u->s.workdir, "/srv/web");
    assert_true(u->s.workdir_missing_ok);
    assert_where(&u->s, UK_WORKDIR, ULIB "web.service", 17);
    assert_null(u->s.rootdir);
    assert_int_equal(u->s.ninvalid, 1);                      /* Nice=15 in [Unit] */
    assert_int_equal(invalid_at(&u->s, 6)->at.file, 0);

    /* Drop-ins from /etc and /run in file-name order: 10-reset.conf unsets the class and
     * nice, 20-run.conf sets level 6 (class best-effort implied), /etc's 30-masked.conf is
     * a /dev/null symlink that hides /run's (Nice=19) and applies nothing. */
    u = find_unit(&l, "db.service");
    assert_int_equal(u->s.nfiles, 3);
    assert_string_equal(u->s.files[1], ETC "db.service.d/10-reset.conf");
    assert_string_equal(u->s.files[2], RUN "db.service.d/20-run.conf");
    assert_false(u->s.ioclass_set);
    assert_true(u->s.iolevel_set);
    assert_false(u->s.nice_set);
    assert_where(&u->s, UK_NICE, NULL, 0);
    assert_where(&u->s, UK_IOPRIO, RUN "db.service.d/20-run.conf", 2);
    assert_eff(&u->s, IOC_BE, 6, IOS_EXPLICIT);
    assert_string_equal(u->s.exec, "/usr/sbin/dbd");
    assert_string_equal(u->s.exec_prefix, ":");
    assert_string_equal(u->s.rootdir, "/srv/root");
    assert_string_equal(u->s.workdir, "~");

    /* Five rejected values; Nice=-20 and IOSchedulingPriority=0o7 stand. */
    u = find_unit(&l, "bad.service");
    assert_int_equal(u->s.ninvalid, 5);
    assert_int_equal(u->s.nice, -20);
    assert_eff(&u->s, IOC_BE, 7, IOS_EXPLICIT);
    assert_int_equal(u->s.load_error, 0);

    /* [Service] means nothing in a mount unit: its IOSchedulingClass= is reported, and the
     * unit is listed for its Nice=2 in [Mount]. */
    u = find_unit(&l, "data.mount");
    assert_int_equal(u->s.type, UNIT_MOUNT);
    assert_int_equal(u->s.nice, 2);
    assert_false(u->s.ioclass_set);
    assert_true(invalid_at(&u->s, 7)->sched);
    assert_eff(&u->s, IOC_BE, 4, IOS_NICE);
    assert_null(u->s.exec);

    /* foo-.service.d applies to foo-bar.service; for the same file name the more specific
     * foo-bar.service.d wins (idle, not realtime), 20-nice.conf only exists in foo-.service.d */
    u = find_unit(&l, "foo-bar.service");
    assert_int_equal(u->s.nfiles, 3);
    assert_string_equal(u->s.files[1], ULIB "foo-bar.service.d/10-prefix.conf");
    assert_string_equal(u->s.files[2], ULIB "foo-.service.d/20-nice.conf");
    assert_int_equal(u->s.nice, 7);
    assert_eff(&u->s, IOC_IDLE, 4, IOS_EXPLICIT);

    /* A symlink outside the unit directories, "../../../../opt/units/linked.service", whose
     * extra ".." stops at the root: followed inside the fixture, named by the symlink as
     * systemd names it. IOSchedulingClass=2 is best-effort. */
    u = find_unit(&l, "linked.service");
    assert_string_equal(u->s.files[0], ETC "linked.service");
    assert_int_equal(u->s.ioclass, IOC_BE);
    assert_eff(&u->s, IOC_BE, 0, IOS_EXPLICIT);

    u = find_unit(&l, "sock.socket");
    assert_int_equal(u->s.policy, SCHED_FIFO);
    assert_eff(&u->s, IOC_RT, 4, IOS_EXPLICIT);
    assert_null(u->s.exec);

    u = find_unit(&l, "swapfile.swap");
    assert_eff(&u->s, IOC_IDLE, 4, IOS_EXPLICIT);

    u = find_unit(&l, "worker@.service");
    assert_eff(&u->s, IOC_BE, 7, IOS_NICE);
    assert_string_equal(u->s.exec, "/usr/bin/worker");

    units_list_free(&l);
    assert_int_equal(l.nunits, 0);
    units_list_free(&l);                                     /* twice is harmless */
}

static void test_scan_fixture_split_lib(void **state)
{
    (void)state;
    int fd = open_fixture_dir("units/split");
    struct unit_list l;
    char err[256];
    assert_int_equal(units_scan(fd, &l, err, sizeof(err)), 0);
    close(fd);
    assert_int_equal(l.ndirs, 3);                            /* /etc, /lib, /usr/lib */
    assert_int_equal(l.nunits, 3);
    assert_int_equal(l.nmasked, 0);

    /* Two links to one file outside the unit dirs are one unit, under the first name. */
    assert_string_equal(l.units[0].name, "l1.service");
    assert_int_equal(l.units[0].naliases, 1);
    assert_string_equal(l.units[0].aliases[0], "l2.service");
    assert_string_equal(l.units[0].s.files[0], ETC "l1.service");
    assert_int_equal(l.units[0].s.nice, 4);

    /* /lib's x.service hides /usr/lib's (Nice=2); chain1 -> chain2 -> x are its aliases. */
    assert_string_equal(l.units[1].name, "x.service");
    assert_string_equal(l.units[1].s.files[0], "/lib/systemd/system/x.service");
    assert_int_equal(l.units[1].s.nice, 1);
    assert_int_equal(l.units[1].naliases, 2);
    assert_string_equal(l.units[1].aliases[0], "chain1.service");
    assert_string_equal(l.units[1].aliases[1], "chain2.service");

    /* /lib/systemd/system/y.service -> /usr/lib/systemd/system/y.service: the same name in
     * another unit directory is followed, and the file read once. */
    assert_string_equal(l.units[2].name, "y.service");
    assert_int_equal(l.units[2].naliases, 0);
    assert_int_equal(l.units[2].s.nfiles, 1);
    assert_string_equal(l.units[2].s.files[0], "/usr/lib/systemd/system/y.service");
    assert_int_equal(l.units[2].s.nice, 3);

    /* The alias loop (both names) and the unit that is a directory are reported, the scan
     * goes on. */
    assert_int_equal(l.nproblems, 3);
    int loops = 0, dirs = 0;
    for (size_t i = 0; i < l.nproblems; i++) {
        if (l.problems[i].err == -ELOOP)
            loops++;
        if (l.problems[i].err == -EINVAL &&
            strcmp(l.problems[i].path, ETC "dir.service") == 0)
            dirs++;
    }
    assert_int_equal(loops, 2);
    assert_int_equal(dirs, 1);
    units_list_free(&l);
}

/* A scratch tree for what fixtures in git should not hold: a file over 1 MiB, 70 drop-ins,
 * and a unit systemd would not load. */
static void write_file(const char *path, const char *text, size_t len)
{
    if (len == 0)
        len = strlen(text);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    assert_int_equal(fwrite(text, 1, len, f), len);
    fclose(f);
}

static void test_scan_limits_and_problems(void **state)
{
    (void)state;
    char root[] = "/tmp/iotriage-units-XXXXXX";
    assert_non_null(mkdtemp(root));
    char path[512];
    snprintf(path, sizeof(path), "%s/etc", root);
    assert_int_equal(mkdir(path, 0755), 0);
    snprintf(path, sizeof(path), "%s/etc/systemd", root);
    assert_int_equal(mkdir(path, 0755), 0);
    snprintf(path, sizeof(path), "%s/etc/systemd/system", root);
    assert_int_equal(mkdir(path, 0755), 0);
    snprintf(path, sizeof(path), "%s/etc/systemd/system/many.service.d", root);
    assert_int_equal(mkdir(path, 0755), 0);

    size_t big = UNITS_FILE_MAX + 1;
    char *text = malloc(big);
    assert_non_null(text);
    memset(text, '#', big);
    memcpy(text, "[Service]\nNice=1\n", 17);
    snprintf(path, sizeof(path), "%s/etc/systemd/system/big.service", root);
    write_file(path, text, big);
    free(text);

    snprintf(path, sizeof(path), "%s/etc/systemd/system/many.service", root);
    write_file(path, "[Service]\nNice=19\n", 0);
    for (int i = 0; i < 70; i++) {
        char conf[64];
        snprintf(path, sizeof(path), "%s/etc/systemd/system/many.service.d/%02d.conf", root, i);
        snprintf(conf, sizeof(conf), "[Service]\nNice=%d\n", i % 20);
        write_file(path, conf, 0);
    }

    snprintf(path, sizeof(path), "%s/etc/systemd/system/broken.service", root);
    write_file(path, "[Service]\nNice=3\nWorkingDirectory=relative\n", 0);

    int fd = open(root, O_RDONLY | O_DIRECTORY);
    assert_true(fd >= 0);
    struct unit_list l;
    char err[256];
    assert_int_equal(units_scan(fd, &l, err, sizeof(err)), 0);
    close(fd);
    assert_true(l.truncated);

    /* broken.service is listed (Nice=3 applied before the fatal line) and carries the
     * load error; many.service got drop-ins 00..63 only, the last applied being 63. */
    assert_int_equal(l.nunits, 2);
    const struct unit_entry *u = find_unit(&l, "broken.service");
    assert_int_equal(u->s.load_error, -ENOEXEC);
    assert_int_equal(u->s.load_error_at.line, 3);
    assert_int_equal(u->s.nice, 3);
    u = find_unit(&l, "many.service");
    assert_int_equal(u->s.nfiles, 1 + UNITS_DROPINS_MAX);
    assert_int_equal(u->s.nice, 63 % 20);

    int efbig = 0, e2big = 0, noload = 0;
    for (size_t i = 0; i < l.nproblems; i++) {
        const struct unit_problem *p = &l.problems[i];
        if (p->err == -EFBIG && strstr(p->path, "/big.service"))
            efbig++;
        if (p->err == -E2BIG && strstr(p->path, "many.service.d/64.conf"))
            e2big++;
        if (p->err == -ENOEXEC && strstr(p->path, "/broken.service") && p->line == 3)
            noload++;
    }
    assert_int_equal(efbig, 1);
    assert_int_equal(e2big, 1);
    assert_int_equal(noload, 1);
    units_list_free(&l);

    char cmd[600];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
    assert_int_equal(system(cmd), 0);

    /* No unit directory at all, and a bad fd. */
    fd = open_fixture_dir("units/root/opt");
    assert_int_equal(units_scan(fd, &l, err, sizeof(err)), -ENOENT);
    assert_non_null(strstr(err, "no systemd unit directory"));
    assert_int_equal(l.nunits, 0);
    units_list_free(&l);
    close(fd);
    assert_int_equal(units_scan(-1, &l, err, sizeof(err)), -EBADF);
    units_list_free(&l);
}

/* units_resolve_in_root, as the audit uses it for ExecStart= and WorkingDirectory=: every
 * path stays inside the root, as systemd would see it inside that image. The host's own
 * files (/etc/passwd, /usr/bin) are never reached through the root's links. */
static void test_resolve_in_root(void **state)
{
    (void)state;
    char root[] = "/tmp/iotriage-resolve-XXXXXX";
    assert_non_null(mkdtemp(root));
    char path[512];
    static const char *const dirs[] = { "usr", "usr/bin", "srv" };
    for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
        snprintf(path, sizeof(path), "%s/%s", root, dirs[i]);
        assert_int_equal(mkdir(path, 0755), 0);
    }
    snprintf(path, sizeof(path), "%s/usr/bin/tool", root);
    write_file(path, "#!/bin/sh\n", 0);
    static const char *const links[][2] = {
        { "bin", "/usr/bin" },                          /* absolute: restarts at the root */
        { "srv/up", "../../../../../../../../usr/bin" }, /* climbs: stops at the root */
        { "srv/passwd", "/etc/passwd" },                /* the host has it, the root not */
        { "srv/self", "self" },                         /* a loop */
        { "srv/tool", "/bin/tool" },                    /* through the link above */
    };
    for (size_t i = 0; i < sizeof(links) / sizeof(links[0]); i++) {
        snprintf(path, sizeof(path), "%s/%s", root, links[i][0]);
        assert_int_equal(symlink(links[i][1], path), 0);
    }
    int fd = open(root, O_RDONLY | O_DIRECTORY);
    assert_true(fd >= 0);
    struct stat tool, rootst, st;
    assert_int_equal(fstatat(fd, "usr/bin/tool", &tool, AT_SYMLINK_NOFOLLOW), 0);
    assert_int_equal(fstat(fd, &rootst), 0);
    char rel[PATH_MAX];
    static const char *const to_tool[] = {
        "/bin/tool", "/srv/up/tool", "/srv/tool", "/../../../usr/bin/tool",
        "/usr/./bin//../bin/tool", "/srv/up/../../usr/bin/tool",
    };
    for (size_t i = 0; i < sizeof(to_tool) / sizeof(to_tool[0]); i++) {
        memset(&st, 0, sizeof(st));
        assert_int_equal(units_resolve_in_root(fd, to_tool[i], rel, &st), 0);
        assert_string_equal(rel, "usr/bin/tool");
        assert_true(st.st_dev == tool.st_dev && st.st_ino == tool.st_ino);
    }
    assert_int_equal(units_resolve_in_root(fd, "/", rel, &st), 0);
    assert_string_equal(rel, "");
    assert_true(st.st_ino == rootst.st_ino);
    assert_int_equal(units_resolve_in_root(fd, "/../..", rel, &st), 0);
    assert_string_equal(rel, "");
    assert_int_equal(units_resolve_in_root(fd, "/bin", rel, &st), 0);
    assert_string_equal(rel, "usr/bin");
    assert_true(S_ISDIR(st.st_mode));
    assert_int_equal(units_resolve_in_root(fd, "/srv/passwd", rel, &st), -ENOENT);
    assert_int_equal(units_resolve_in_root(fd, "/etc/passwd", rel, &st), -ENOENT);
    assert_int_equal(units_resolve_in_root(fd, "/srv/self", rel, &st), -ELOOP);
    assert_int_equal(units_resolve_in_root(fd, "/usr/bin/tool/x", rel, &st), -ENOTDIR);
    /* Not a mask here: the root has no /dev. */
    assert_int_equal(units_resolve_in_root(fd, "/dev/null", rel, &st), -ENOENT);
    assert_int_equal(units_resolve_in_root(fd, "usr/bin/tool", rel, &st), -EINVAL);
    close(fd);
    char cmd[600];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
    assert_int_equal(system(cmd), 0);
}

/* This machine's own unit files: the scan must finish quickly and list only units that do
 * set a scheduling key. What it found is printed for the record. */
static void test_scan_this_machine(void **state)
{
    (void)state;
    int fd = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    assert_true(fd >= 0);
    struct unit_list l;
    char err[256];
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int r = units_scan(fd, &l, err, sizeof(err));
    clock_gettime(CLOCK_MONOTONIC, &t1);
    close(fd);
    double secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    if (r == -ENOENT) {
        print_message("no unit directories here: %s\n", err);
        units_list_free(&l);
        return;
    }
    assert_int_equal(r, 0);
    assert_true(secs < 5.0);
    print_message("this machine: %u unit dirs, %zu files parsed, %zu units set scheduling, "
                  "%zu masked, %zu problems, %.1f ms\n", l.ndirs, l.nparsed, l.nunits,
                  l.nmasked, l.nproblems, secs * 1e3);
    for (size_t i = 0; i < l.nunits; i++) {
        const struct unit_entry *u = &l.units[i];
        assert_true(units_type_of(u->name) >= 0);
        assert_true(u->s.nfiles >= 1);
        assert_true(u->s.files[0][0] == '/');
        bool invalid = false;
        for (unsigned k = 0; k < u->s.ninvalid; k++)
            invalid |= u->s.invalid[k].sched;
        assert_true(units_sets_sched(&u->s) || invalid);
        struct ioprio_eff e = units_effective(&u->s);
        assert_true(e.cls >= IOC_RT && e.cls <= IOC_IDLE && e.level >= 0 && e.level <= 7);
        print_message("  %-36s %s/%d (%s)  from %s\n", u->name, ioprio_class_name(e.cls),
                      e.level, ioprio_source_name(e.source), u->s.files[0]);
    }
    for (size_t i = 0; i < l.nproblems; i++)
        print_message("  problem: %s:%u: %s\n", l.problems[i].path, l.problems[i].line,
                      l.problems[i].what);
    units_list_free(&l);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_comments_whitespace_and_continuations),
        cmocka_unit_test(test_lines_without_assignment_are_recorded),
        cmocka_unit_test(test_bad_section_header_makes_the_unit_unloadable),
        cmocka_unit_test(test_parser_reads_nothing_past_len),
        cmocka_unit_test(test_only_the_types_exec_section_counts),
        cmocka_unit_test(test_key_names_are_case_sensitive),
        cmocka_unit_test(test_service_without_a_command_is_refused),
        cmocka_unit_test(test_io_class_and_priority_edit_one_value),
        cmocka_unit_test(test_values_as_written_and_where_they_came_from),
        cmocka_unit_test(test_invalid_values_are_recorded_not_applied),
        cmocka_unit_test(test_execstart_prefixes_quotes_and_escapes),
        cmocka_unit_test(test_execstart_list_and_errors),
        cmocka_unit_test(test_working_and_root_directory),
        cmocka_unit_test(test_unit_type_of_name),
        cmocka_unit_test(test_scan_fixture_root),
        cmocka_unit_test(test_scan_fixture_split_lib),
        cmocka_unit_test(test_scan_limits_and_problems),
        cmocka_unit_test(test_resolve_in_root),
        cmocka_unit_test(test_scan_this_machine),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
