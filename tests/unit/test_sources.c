/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Tests for the pure parsers and fixture readers of src/source/: diskstats, psi, blockdev,
 * procio (source/procs.h) and ioprio.
 *
 * Fixtures (tests/fixtures, or the directory in IOTRIAGE_FIXTURES; run from the repo root):
 *   root1/proc/diskstats            real capture, 6.18, 17 counters per line
 *   root1/proc/pressure/{io,cpu,memory}   real captures, 6.18
 *   root1/proc/self/io              real capture of a shell after a dd
 *   root1/sys/                      a sysfs tree: each class/block entry is a relative symlink into
 *                                   devices/, as on a real machine
 *   diskstats/v4.14-11fields, diskstats/v4.19-15fields   older kernels' formats
 *   psi/cpu-some-only               a cpu file from a kernel without the cpu "full" line
 *
 * Every expected value is written out by hand from the fixture text, never recomputed with
 * the code under test.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "source/blockdev.h"
#include "source/diskstats.h"
#include "source/ioprio.h"
#include "source/procs.h"
#include "source/psi.h"
#include "source/swaps.h"
#include "util.h"

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

/* The whole fixture file, malloc'd and NUL-terminated; fails the test when it is missing. */
static char *slurp(const char *rel, size_t *len)
{
    const char *path = fixture_path(rel);
    FILE *f = fopen(path, "rb");
    if (!f)
    {
        fail_msg("cannot open fixture %s: %s (run from the repo root or set IOTRIAGE_FIXTURES)",
                 path, strerror(errno));
        abort(); /* not reached */
    }
    char *buf = NULL;
    size_t cap = 0, n = 0;
    for (;;) {
        if (n + 4096 + 1 > cap) {
            cap = cap ? cap * 2 : 8192;
            buf = realloc(buf, cap);
            assert_non_null(buf);
        }
        size_t r = fread(buf + n, 1, cap - n - 1, f);
        n += r;
        if (r == 0)
            break;
    }
    fclose(f);
    buf[n] = '\0';
    *len = n;
    return buf;
}

static int open_fixture_dir(const char *rel)
{
    const char *path = fixture_path(rel);
    int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        fail_msg("cannot open fixture directory %s: %s", path, strerror(errno));
    return fd;
}

/* A copy of s[0..len) that ends exactly at a PROT_NONE page, with no NUL after it: a parser
 * that reads one byte past len dies with SIGSEGV (cmocka reports the test as failed).
 * Release with guarded_free. */
static char *guarded_copy(const char *s, size_t len)
{
    long pg = sysconf(_SC_PAGESIZE);
    assert_true(pg > 0 && len <= (size_t)pg);
    char *map = mmap(NULL, 2 * (size_t)pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                     -1, 0);
    assert_true(map != MAP_FAILED);
    assert_int_equal(mprotect(map + pg, (size_t)pg, PROT_NONE), 0);
    char *p = map + pg - len;
    memcpy(p, s, len);
    return p;
}

static void guarded_free(char *p, size_t len)
{
    long pg = sysconf(_SC_PAGESIZE);
    munmap(p + len - pg, 2 * (size_t)pg);
}

#define assert_double_eq(a, b)                                                                \
    do {                                                                                      \
        double a_ = (a), b_ = (b);                                                            \
        if (!(fabs(a_ - b_) <= 1e-9 * fmax(1.0, fabs(b_))))                                   \
            fail_msg("%s == %.12g, expected %.12g", #a, a_, b_);                             \
    } while (0)

static const struct diskstats_row *find_row(const struct diskstats_row *rows, size_t n,
                                            const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(rows[i].name, name) == 0)
            return &rows[i];
    fail_msg("no row named %s", name);
    abort(); /* not reached: fail_msg jumps out of the test */
}

static void assert_fields(const struct diskstats_row *r, const uint64_t *want, unsigned n)
{
    assert_int_equal(r->nfields, n);
    for (unsigned i = 0; i < n; i++)
        if (r->f[i] != want[i])
            fail_msg("%s field %u: %llu, expected %llu", r->name, i + 1,
                     (unsigned long long)r->f[i], (unsigned long long)want[i]);
}

/* Parse an inline string; returns the parser's result. */
static int ds_parse_str(const char *s, struct diskstats_row **rows, size_t *n, unsigned *bad)
{
    return diskstats_parse(s, strlen(s), rows, n, bad);
}

/* A well-formed 6.18 line, reused by the damage tests. */
#define VDA_LINE " 254       0 vda 36410 7169 3555586 10201 5641 5945 603904 1667 0 3248 12113 4467 31 178968 217 907 26"

/* ------------------------------------------------------------------------------------------ */
/* diskstats                                                                                   */
/* ------------------------------------------------------------------------------------------ */

static void test_diskstats_real_capture_gives_every_line_with_17_fields(void **state)
{
    (void)state;
    size_t len;
    char *buf = slurp("root1/proc/diskstats", &len);
    struct diskstats_row *rows = NULL;
    size_t n = 99;
    unsigned bad = 99;
    assert_int_equal(diskstats_parse(buf, len, &rows, &n, &bad), 0);
    /* loop0..loop7, vda, zram0 */
    assert_int_equal(n, 10);
    assert_int_equal(bad, 0);
    for (size_t i = 0; i < n; i++)
        assert_int_equal(rows[i].nfields, 17);
    assert_string_equal(rows[0].name, "loop0");
    assert_string_equal(rows[9].name, "zram0");

    const struct diskstats_row *vda = find_row(rows, n, "vda");
    assert_int_equal(vda->major, 254);
    assert_int_equal(vda->minor, 0);
    static const uint64_t want_vda[17] = { 36410, 7169, 3555586, 10201, 5641, 5945, 603904, 1667,
                                           0, 3248, 12113, 4467, 31, 178968, 217, 907, 26 };
    assert_fields(vda, want_vda, 17);

    const struct diskstats_row *loop0 = find_row(rows, n, "loop0");
    assert_int_equal(loop0->major, 7);
    assert_int_equal(loop0->minor, 0);
    static const uint64_t want_loop0[17] = { 225058, 0, 2269184, 1083690, 4851, 0, 38808, 17909,
                                             0, 143484, 1101600, 0, 0, 0, 0, 0, 0 };
    assert_fields(loop0, want_loop0, 17);

    const struct diskstats_row *zram0 = find_row(rows, n, "zram0");
    assert_int_equal(zram0->major, 253);
    static const uint64_t zero[17] = { 0 };
    assert_fields(zram0, zero, 17);
    free(rows);
    free(buf);
}

static void test_diskstats_read_opens_diskstats_below_proc_fd(void **state)
{
    (void)state;
    int fd = open_fixture_dir("root1/proc");
    struct diskstats_row *rows = NULL;
    size_t n = 0;
    unsigned bad = 99;
    assert_int_equal(diskstats_read(fd, &rows, &n, &bad), 0);
    assert_int_equal(n, 10);
    assert_int_equal(bad, 0);
    assert_int_equal(find_row(rows, n, "vda")->f[DS_RD_SECT], 3555586);
    free(rows);
    close(fd);

    /* A proc root without diskstats: the errno comes back. */
    fd = open_fixture_dir("root1/sys");
    rows = NULL;
    assert_int_equal(diskstats_read(fd, &rows, &n, &bad), -ENOENT);
    close(fd);
}

static void test_diskstats_old_kernel_gives_11_fields(void **state)
{
    (void)state;
    size_t len;
    char *buf = slurp("diskstats/v4.14-11fields", &len);
    struct diskstats_row *rows = NULL;
    size_t n = 0;
    unsigned bad = 99;
    assert_int_equal(diskstats_parse(buf, len, &rows, &n, &bad), 0);
    assert_int_equal(n, 5);
    assert_int_equal(bad, 0);
    static const uint64_t want_sda[11] = { 182634, 9120, 8734512, 203118, 95521, 103337,
                                           4926744, 482260, 0, 181016, 685548 };
    assert_fields(find_row(rows, n, "sda"), want_sda, 11);
    static const uint64_t want_dm0[11] = { 190312, 0, 8711674, 212508, 198864, 0, 4926744,
                                           1402028, 0, 181224, 1614536 };
    const struct diskstats_row *dm0 = find_row(rows, n, "dm-0");
    assert_int_equal(dm0->major, 253);
    assert_fields(dm0, want_dm0, 11);
    assert_int_equal(find_row(rows, n, "sr0")->nfields, 11);
    free(rows);
    free(buf);
}

static void test_diskstats_kernel_4_19_gives_15_fields(void **state)
{
    (void)state;
    size_t len;
    char *buf = slurp("diskstats/v4.19-15fields", &len);
    struct diskstats_row *rows = NULL;
    size_t n = 0;
    unsigned bad = 99;
    assert_int_equal(diskstats_parse(buf, len, &rows, &n, &bad), 0);
    assert_int_equal(n, 4);
    assert_int_equal(bad, 0);
    static const uint64_t want[15] = { 1204073, 310, 61231336, 355852, 2981172, 1544320,
                                       129339487, 5106244, 0, 1350524, 5208944, 7733, 0,
                                       118112432, 3432 };
    const struct diskstats_row *p2 = find_row(rows, n, "nvme0n1p2");
    assert_int_equal(p2->major, 259);
    assert_int_equal(p2->minor, 2);
    assert_fields(p2, want, 15);
    free(rows);
    free(buf);
}

static void test_diskstats_line_with_16_numbers_is_rejected_and_counted(void **state)
{
    (void)state;
    /* 16 counters: no kernel prints that, so the line is damaged. */
    const char *in = VDA_LINE "\n"
                     "   8       0 sda 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16\n";
    struct diskstats_row *rows = NULL;
    size_t n = 0;
    unsigned bad = 0;
    assert_int_equal(ds_parse_str(in, &rows, &n, &bad), 0);
    assert_int_equal(n, 1);
    assert_int_equal(bad, 1);
    assert_string_equal(rows[0].name, "vda");
    free(rows);
}

static void test_diskstats_other_wrong_counts_are_rejected(void **state)
{
    (void)state;
    /* 10, 12 and 14 counters, and a line with no counters at all. */
    const char *in = "8 0 sda 1 2 3 4 5 6 7 8 9 10\n"
                     "8 1 sda1 1 2 3 4 5 6 7 8 9 10 11 12\n"
                     "8 2 sda2 1 2 3 4 5 6 7 8 9 10 11 12 13 14\n"
                     "8 3 sda3\n" VDA_LINE "\n";
    struct diskstats_row *rows = NULL;
    size_t n = 0;
    unsigned bad = 0;
    assert_int_equal(ds_parse_str(in, &rows, &n, &bad), 0);
    assert_int_equal(n, 1);
    assert_int_equal(bad, 4);
    free(rows);
}

static void test_diskstats_final_line_without_newline_still_parses(void **state)
{
    (void)state;
    const char *in = "   8       0 sda 1 2 3 4 5 6 7 8 9 10 11\n" VDA_LINE; /* no '\n' at the end */
    struct diskstats_row *rows = NULL;
    size_t n = 0;
    unsigned bad = 99;
    assert_int_equal(ds_parse_str(in, &rows, &n, &bad), 0);
    assert_int_equal(n, 2);
    assert_int_equal(bad, 0);
    assert_string_equal(rows[1].name, "vda");
    assert_int_equal(rows[1].nfields, 17);
    assert_int_equal(rows[1].f[DS_FL_TICKS], 26);
    free(rows);
}

static void test_diskstats_final_line_cut_mid_fields_is_rejected(void **state)
{
    (void)state;
    /* The vda line cut after its 6th counter (a read that stopped short). */
    const char *in = "   8       0 sda 1 2 3 4 5 6 7 8 9 10 11\n"
                     " 254       0 vda 36410 7169 3555586 10201 5641 594";
    struct diskstats_row *rows = NULL;
    size_t n = 0;
    unsigned bad = 0;
    assert_int_equal(ds_parse_str(in, &rows, &n, &bad), 0);
    assert_int_equal(n, 1);
    assert_int_equal(bad, 1);
    assert_string_equal(rows[0].name, "sda");
    free(rows);
}

static void test_diskstats_only_reads_len_bytes(void **state)
{
    (void)state;
    /* len stops after the first line: the second must not be seen. Then len stops inside
     * the vda line after "... 907 2": 17 counters with the last one "2". */
    const char *in = "   8       0 sda 1 2 3 4 5 6 7 8 9 10 11\n" VDA_LINE "\n";
    struct diskstats_row *rows = NULL;
    size_t n = 0;
    unsigned bad = 99;
    size_t first = strlen("   8       0 sda 1 2 3 4 5 6 7 8 9 10 11\n");
    assert_int_equal(diskstats_parse(in, first, &rows, &n, &bad), 0);
    assert_int_equal(n, 1);
    assert_int_equal(bad, 0);
    free(rows);

    rows = NULL;
    assert_int_equal(diskstats_parse(in, strlen(in) - 2, &rows, &n, &bad), 0);
    assert_int_equal(n, 2);
    assert_int_equal(rows[1].f[DS_FL_TICKS], 2);
    free(rows);
}

static void test_diskstats_never_reads_past_len(void **state)
{
    (void)state;
    /* The final line without a newline, at the very end of readable memory. */
    const char *in = "   8       0 sda 1 2 3 4 5 6 7 8 9 10 11";
    size_t len = strlen(in);
    char *g = guarded_copy(in, len);
    struct diskstats_row *rows = NULL;
    size_t n = 0;
    assert_int_equal(diskstats_parse(g, len, &rows, &n, NULL), 0);
    assert_int_equal(n, 1);
    assert_int_equal(rows[0].f[DS_QUEUE_TICKS], 11);
    free(rows);
    guarded_free(g, len);
}

static void test_diskstats_garbage_gives_einval_and_no_rows(void **state)
{
    (void)state;
    const char *in = "hello world\n"
                     "major minor name\n"
                     "8 0 sda 1 2 3 4 5 6 7 8 9 10 x1\n"      /* a counter that is no number */
                     "8 0 sda 1 2 3 4 5 6 7 8 9 10 11x\n"     /* junk glued to a counter */
                     "4294967296 0 sda 1 2 3 4 5 6 7 8 9 10 11\n"; /* major above 32 bits */
    struct diskstats_row *rows = (struct diskstats_row *)&rows;
    size_t n = 99;
    unsigned bad = 0;
    assert_int_equal(ds_parse_str(in, &rows, &n, &bad), -EINVAL);
    assert_null(rows);
    assert_int_equal(n, 0);
    assert_int_equal(bad, 5);
}

static void test_diskstats_empty_input_is_zero_rows_not_an_error(void **state)
{
    (void)state;
    struct diskstats_row *rows = NULL;
    size_t n = 99;
    unsigned bad = 99;
    assert_int_equal(diskstats_parse("", 0, &rows, &n, &bad), 0);
    assert_int_equal(n, 0);
    assert_int_equal(bad, 0);
    free(rows);

    /* Blank lines are not lines at all: not counted as bad. */
    rows = NULL;
    assert_int_equal(ds_parse_str("\n   \n\t\n", &rows, &n, &bad), 0);
    assert_int_equal(n, 0);
    assert_int_equal(bad, 0);
    free(rows);

    /* bad may be NULL */
    rows = NULL;
    assert_int_equal(ds_parse_str(VDA_LINE "\n", &rows, &n, NULL), 0);
    assert_int_equal(n, 1);
    free(rows);
}

static void test_diskstats_name_of_64_chars_is_rejected_63_kept(void **state)
{
    (void)state;
    char name63[64], name64[65], in[512];
    memset(name63, 'a', 63);
    name63[63] = '\0';
    memset(name64, 'b', 64);
    name64[64] = '\0';
    snprintf(in, sizeof(in), "8 0 %s 1 2 3 4 5 6 7 8 9 10 11\n8 1 %s 1 2 3 4 5 6 7 8 9 10 11\n",
             name63, name64);
    struct diskstats_row *rows = NULL;
    size_t n = 0;
    unsigned bad = 0;
    assert_int_equal(ds_parse_str(in, &rows, &n, &bad), 0);
    assert_int_equal(n, 1);
    assert_int_equal(bad, 1);
    assert_string_equal(rows[0].name, name63);
    free(rows);
}

static void test_diskstats_counter_above_u64_is_rejected_u64_max_kept(void **state)
{
    (void)state;
    /* UINT64_MAX = 18446744073709551615; one more does not fit. */
    const char *in = "8 0 sda 18446744073709551615 2 3 4 5 6 7 8 9 10 11\n"
                     "8 1 sdb 18446744073709551616 2 3 4 5 6 7 8 9 10 11\n"
                     "8 2 sdc 1 2 3 4 5 6 7 8 9 10 99999999999999999999999\n";
    struct diskstats_row *rows = NULL;
    size_t n = 0;
    unsigned bad = 0;
    assert_int_equal(ds_parse_str(in, &rows, &n, &bad), 0);
    assert_int_equal(n, 1);
    assert_int_equal(bad, 2);
    assert_string_equal(rows[0].name, "sda");
    assert_true(rows[0].f[DS_RD_IOS] == UINT64_MAX);
    free(rows);
}

static void test_diskstats_future_kernel_extra_counters_are_ignored(void **state)
{
    (void)state;
    /* 19 counters: the first 17 are today's, the rest a later kernel's additions. */
    const char *in = "8 0 sda 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19\n";
    struct diskstats_row *rows = NULL;
    size_t n = 0;
    unsigned bad = 99;
    assert_int_equal(ds_parse_str(in, &rows, &n, &bad), 0);
    assert_int_equal(n, 1);
    assert_int_equal(bad, 0);
    static const uint64_t want[17] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17 };
    assert_fields(&rows[0], want, 17);
    free(rows);
}

static void test_diskstats_many_lines_grow_the_array(void **state)
{
    (void)state;
    /* 40 lines: past the parser's first allocation of 16 rows. */
    char *in = malloc(40 * 64);
    assert_non_null(in);
    size_t o = 0;
    for (int i = 0; i < 40; i++)
        o += (size_t)sprintf(in + o, "7 %d loop%d %d 0 0 0 0 0 0 0 0 0 0\n", i, i, i * 3);
    struct diskstats_row *rows = NULL;
    size_t n = 0;
    unsigned bad = 99;
    assert_int_equal(diskstats_parse(in, o, &rows, &n, &bad), 0);
    assert_int_equal(n, 40);
    assert_int_equal(bad, 0);
    assert_string_equal(rows[39].name, "loop39");
    assert_int_equal(rows[39].minor, 39);
    assert_int_equal(rows[39].f[DS_RD_IOS], 117);
    free(rows);
    free(in);
}

/* ------------------------------------------------------------------------------------------ */
/* psi                                                                                         */
/* ------------------------------------------------------------------------------------------ */

static void assert_psi_line(const struct psi_line *l, double a10, double a60, double a300,
                            uint64_t total)
{
    assert_true(l->valid);
    assert_double_eq(l->avg10, a10);
    assert_double_eq(l->avg60, a60);
    assert_double_eq(l->avg300, a300);
    assert_true(l->total_us == total);
}

/* loadavg's task count (lens map sizes, the hidepid note): the total after the slash. */
static void test_loadavg_tasks(void **state)
{
    (void)state;
    char dir[] = "/tmp/iotriage-loadavg-XXXXXX";
    assert_non_null(mkdtemp(dir));
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    assert_true(dfd >= 0);
    static const struct { const char *text; long want; } cases[] = {
        { "0.10 0.20 0.30 2/123 4567\n", 123 },
        { "5.93 93.20 71.43 4/10090 4251\n", 10090 },
        { "0.00 0.00 0.00 1/1 1", 1 },
        { "0.10 0.20 0.30 2 4567\n", -1 },      /* no running/total field */
        { "", -1 },
        { "garbage\n", -1 },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int fd = openat(dfd, "loadavg", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        assert_true(fd >= 0);
        size_t len = strlen(cases[i].text);
        assert_int_equal(write(fd, cases[i].text, len), (ssize_t)len);
        close(fd);
        assert_int_equal(read_loadavg_tasks_at(dfd, "loadavg"), cases[i].want);
    }
    unlinkat(dfd, "loadavg", 0);
    assert_int_equal(read_loadavg_tasks_at(dfd, "loadavg"), -1);   /* missing */
    close(dfd);
    rmdir(dir);
}

static void test_psi_real_io_capture(void **state)
{
    (void)state;
    size_t len;
    char *buf = slurp("root1/proc/pressure/io", &len);
    struct psi_sample s;
    assert_int_equal(psi_parse(buf, len, &s), 0);
    assert_int_equal(s.err, 0);
    assert_psi_line(&s.some, 0.82, 21.70, 21.43, 106304902);
    assert_psi_line(&s.full, 0.75, 20.17, 20.03, 99628421);
    free(buf);
}

static void test_psi_real_cpu_capture_has_a_zero_full_line(void **state)
{
    (void)state;
    size_t len;
    char *buf = slurp("root1/proc/pressure/cpu", &len);
    struct psi_sample s;
    assert_int_equal(psi_parse(buf, len, &s), 0);
    assert_psi_line(&s.some, 0.43, 1.06, 1.09, 8900720);
    /* system-wide cpu "full" is printed (since 5.13) and always 0: valid, not missing */
    assert_psi_line(&s.full, 0.00, 0.00, 0.00, 0);
    free(buf);
}

static void test_psi_real_memory_capture_zero_pressure_is_valid(void **state)
{
    (void)state;
    size_t len;
    char *buf = slurp("root1/proc/pressure/memory", &len);
    struct psi_sample s;
    assert_int_equal(psi_parse(buf, len, &s), 0);
    assert_int_equal(s.err, 0);
    assert_psi_line(&s.some, 0, 0, 0, 0);
    assert_psi_line(&s.full, 0, 0, 0, 0);
    free(buf);
}

static void test_psi_some_line_only_leaves_full_unavailable(void **state)
{
    (void)state;
    size_t len;
    char *buf = slurp("psi/cpu-some-only", &len);
    struct psi_sample s;
    assert_int_equal(psi_parse(buf, len, &s), 0);
    assert_int_equal(s.err, 0);
    assert_psi_line(&s.some, 12.50, 8.03, 2.71, 458213907);
    assert_false(s.full.valid);
    free(buf);
}

static void test_psi_garbage_is_einval(void **state)
{
    (void)state;
    static const char *const cases[] = {
        "",
        "garbage\n",
        "some\n",
        "some \n",
        "sometimes avg10=1.00 avg60=1.00 avg300=1.00 total=1\n",
        "some avg10 avg60 avg300 total\n",
        "some avg10=x avg60=1.00 avg300=1.00 total=1\n",
        "some avg10=1.00abc avg60=1.00 avg300=1.00 total=1\n",
        "some avg10=1.00 avg60=1.00 avg300=1.00 total=-5\n",
        "some avg10=1.00 avg60=1.00 avg300=1.00 total=18446744073709551616\n",
        "some avg10=1.00 avg60=1.00 avg300=1.00 total=12x\n",
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct psi_sample s;
        memset(&s, 0x55, sizeof(s));
        if (psi_parse(cases[i], strlen(cases[i]), &s) != -EINVAL)
            fail_msg("case %zu \"%s\" was accepted", i, cases[i]);
        assert_int_equal(s.err, -EINVAL);
        assert_false(s.some.valid);
        assert_false(s.full.valid);
    }
}

static void test_psi_line_without_total_is_invalid_alone(void **state)
{
    (void)state;
    struct psi_sample s;
    const char *both = "some avg10=1.00 avg60=2.00 avg300=3.00\n"
                       "full avg10=1.00 avg60=2.00 avg300=3.00\n";
    assert_int_equal(psi_parse(both, strlen(both), &s), -EINVAL);
    assert_false(s.some.valid);
    assert_false(s.full.valid);

    const char *full_only_bad = "some avg10=1.00 avg60=2.00 avg300=3.00 total=400\n"
                                "full avg10=1.00 avg60=2.00 avg300=3.00\n";
    assert_int_equal(psi_parse(full_only_bad, strlen(full_only_bad), &s), 0);
    assert_psi_line(&s.some, 1.0, 2.0, 3.0, 400);
    assert_false(s.full.valid);
}

static void test_psi_negative_average_rejects_the_line(void **state)
{
    (void)state;
    struct psi_sample s;
    const char *in = "some avg10=-1.00 avg60=2.00 avg300=3.00 total=400\n"
                     "full avg10=0.50 avg60=0.25 avg300=0.10 total=300\n";
    assert_int_equal(psi_parse(in, strlen(in), &s), 0);
    assert_false(s.some.valid);
    assert_psi_line(&s.full, 0.50, 0.25, 0.10, 300);
}

static void test_psi_unknown_key_is_skipped(void **state)
{
    (void)state;
    struct psi_sample s;
    const char *in = "some avg10=1.00 avg60=2.00 avg300=3.00 avg900=4.00 total=400\n";
    assert_int_equal(psi_parse(in, strlen(in), &s), 0);
    assert_psi_line(&s.some, 1.0, 2.0, 3.0, 400);
}

static void test_psi_only_reads_len_bytes(void **state)
{
    (void)state;
    /* len ends after "total=12" of "total=12345": the parser may keep 12 or reject the
     * line, but digits beyond len are not its input and must never show up as 12345. */
    const char *in = "some avg10=0.00 avg60=0.00 avg300=0.00 total=12345\n";
    size_t len = strlen("some avg10=0.00 avg60=0.00 avg300=0.00 total=12");
    struct psi_sample s;
    int r = psi_parse(in, len, &s);
    if (r == 0) {
        assert_true(s.some.valid);
        if (s.some.total_us != 12)
            fail_msg("total_us %llu read past len (expected 12 or a rejected line)",
                     (unsigned long long)s.some.total_us);
    } else {
        assert_int_equal(r, -EINVAL);
        assert_false(s.some.valid);
    }

    /* The same for an average cut at "avg300=0.0" of "avg300=0.05 total=1": a cut
     * average followed by the rest of the line must not be read either. */
    const char *in2 = "some avg10=0.00 avg60=0.00 avg300=0.05 total=1\n";
    len = strlen("some avg10=0.00 avg60=0.00 avg300=0.0");
    r = psi_parse(in2, len, &s);
    assert_int_equal(r, -EINVAL); /* no total within len */
}

static void test_psi_never_reads_past_len(void **state)
{
    (void)state;
    /* A buffer that is not NUL-terminated, its last number running into unmapped memory. */
    const char *in = "some avg10=0.00 avg60=0.00 avg300=0.00 total=12";
    size_t len = strlen(in);
    char *g = guarded_copy(in, len);
    struct psi_sample s;
    int r = psi_parse(g, len, &s);
    assert_true(r == 0 || r == -EINVAL);
    if (r == 0)
        assert_true(s.some.total_us == 12);
    guarded_free(g, len);
}

static void test_psi_read_reports_missing_file_as_enoent(void **state)
{
    (void)state;
    int fd = open_fixture_dir("root1/proc");
    struct psi_sample s;
    psi_read(fd, PSI_IO, &s);
    assert_int_equal(s.err, 0);
    assert_psi_line(&s.some, 0.82, 21.70, 21.43, 106304902);
    assert_psi_line(&s.full, 0.75, 20.17, 20.03, 99628421);
    close(fd);

    /* A /proc without pressure/ (PSI compiled out or disabled): unavailable, not zero. */
    fd = open_fixture_dir("diskstats");
    memset(&s, 0x55, sizeof(s));
    psi_read(fd, PSI_IO, &s);
    assert_int_equal(s.err, -ENOENT);
    assert_false(s.some.valid);
    assert_false(s.full.valid);
    close(fd);
    assert_string_equal(psi_resource_name[PSI_IO], "io");
    assert_string_equal(psi_resource_name[PSI_MEMORY], "memory");
}

/* ------------------------------------------------------------------------------------------ */
/* blockdev: parsers                                                                           */
/* ------------------------------------------------------------------------------------------ */

/* A stacked device's kind, from what its tool wrote into dm/uuid, or md's level. */
static void test_layer_text(void **state)
{
    (void)state;
    char b[48];
    blockdev_layer_text("CRYPT-LUKS2-0a1b2c-home", "home", NULL, b, sizeof(b));
    assert_string_equal(b, "crypt, home");
    blockdev_layer_text("LVM-Ab12Cd", "vg0-root", NULL, b, sizeof(b));
    assert_string_equal(b, "LVM, vg0-root");
    blockdev_layer_text("mpath-3600a0b8", "mpatha", NULL, b, sizeof(b));
    assert_string_equal(b, "multipath, mpatha");
    blockdev_layer_text("part1-mpath-3600a0b8", "mpatha1", NULL, b, sizeof(b));
    assert_string_equal(b, "partition, mpatha1");
    blockdev_layer_text("partial-thing", "x", NULL, b, sizeof(b));    /* not kpartx's */
    assert_string_equal(b, "x");
    blockdev_layer_text("", "iotlin", NULL, b, sizeof(b));           /* dmsetup, no uuid */
    assert_string_equal(b, "iotlin");
    blockdev_layer_text(NULL, NULL, "raid1", b, sizeof(b));
    assert_string_equal(b, "raid1");
    blockdev_layer_text("", "", "", b, sizeof(b));
    assert_string_equal(b, "");
}

static void test_scheduler_bracketed_one_is_active(void **state)
{
    (void)state;
    char active[BD_SCHED_MAX], list[BD_NSCHED][BD_SCHED_MAX];
    assert_int_equal(blockdev_parse_scheduler("none [mq-deadline] kyber bfq\n", active, list), 4);
    assert_string_equal(active, "mq-deadline");
    assert_string_equal(list[0], "none");
    assert_string_equal(list[1], "mq-deadline");
    assert_string_equal(list[2], "kyber");
    assert_string_equal(list[3], "bfq");

    assert_int_equal(blockdev_parse_scheduler("[none] mq-deadline", active, list), 2);
    assert_string_equal(active, "none");
    assert_string_equal(list[0], "none");
    assert_string_equal(list[1], "mq-deadline");
}

static void test_scheduler_none_alone_has_no_active(void **state)
{
    (void)state;
    char active[BD_SCHED_MAX], list[BD_NSCHED][BD_SCHED_MAX];
    strcpy(active, "stale");
    assert_int_equal(blockdev_parse_scheduler("none", active, list), 1);
    assert_string_equal(active, "");
    assert_string_equal(list[0], "none");
}

static void test_scheduler_empty_file_offers_nothing(void **state)
{
    (void)state;
    char active[BD_SCHED_MAX], list[BD_NSCHED][BD_SCHED_MAX];
    strcpy(active, "stale");
    assert_int_equal(blockdev_parse_scheduler("", active, list), 0);
    assert_string_equal(active, "");
    assert_int_equal(blockdev_parse_scheduler("\n", active, list), 0);
    assert_string_equal(active, "");
}

static void test_scheduler_name_too_long_is_einval(void **state)
{
    (void)state;
    char active[BD_SCHED_MAX], list[BD_NSCHED][BD_SCHED_MAX];
    char in[64];
    /* BD_SCHED_MAX-1 = 23 characters fit, with the NUL. */
    memset(in, 'k', BD_SCHED_MAX - 1);
    in[BD_SCHED_MAX - 1] = '\0';
    assert_int_equal(blockdev_parse_scheduler(in, active, list), 1);
    assert_int_equal(strlen(list[0]), BD_SCHED_MAX - 1);

    /* 24 characters do not, bracketed or not. */
    memset(in, 'k', BD_SCHED_MAX);
    in[BD_SCHED_MAX] = '\0';
    assert_int_equal(blockdev_parse_scheduler(in, active, list), -EINVAL);
    in[0] = '[';
    memset(in + 1, 'k', BD_SCHED_MAX);
    in[BD_SCHED_MAX + 1] = ']';
    in[BD_SCHED_MAX + 2] = '\0';
    assert_int_equal(blockdev_parse_scheduler(in, active, list), -EINVAL);
    /* "[]" names nothing */
    assert_int_equal(blockdev_parse_scheduler("none []", active, list), -EINVAL);
}

static void test_scheduler_more_than_list_size_keeps_first_and_active(void **state)
{
    (void)state;
    char active[BD_SCHED_MAX], list[BD_NSCHED][BD_SCHED_MAX];
    /* 9 offered with BD_NSCHED 8: the list holds the first 8, the 9th is still active. */
    assert_int_equal(BD_NSCHED, 8);
    assert_int_equal(blockdev_parse_scheduler("a b c d e f g h [i]\n", active, list), 8);
    assert_string_equal(list[7], "h");
    assert_string_equal(active, "i");
}

static void test_inflight_parses_two_counts(void **state)
{
    (void)state;
    long r = -7, w = -7;
    assert_int_equal(blockdev_parse_inflight("       3        4\n", &r, &w), 0);
    assert_int_equal(r, 3);
    assert_int_equal(w, 4);
    assert_int_equal(blockdev_parse_inflight("0 0", &r, &w), 0);
    assert_int_equal(r, 0);
    assert_int_equal(w, 0);
}

static void test_inflight_rejects_malformed(void **state)
{
    (void)state;
    static const char *const cases[] = { "", "\n", "5", "5\n", "abc 1", "1 abc", "-1 2", "1 -2",
                                         "99999999999999999999999 1" };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        long r = -7, w = -7;
        if (blockdev_parse_inflight(cases[i], &r, &w) != -EINVAL)
            fail_msg("case \"%s\" accepted", cases[i]);
        assert_int_equal(r, -7); /* untouched on failure */
        assert_int_equal(w, -7);
    }
}

/* ------------------------------------------------------------------------------------------ */
/* blockdev_read on the fixture sysfs tree                                                     */
/* ------------------------------------------------------------------------------------------ */

static int sys_setup(void **state)
{
    int *fd = malloc(sizeof(int));
    if (!fd)
        return -1;
    *fd = open(fixture_path("root1/sys"), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (*fd < 0) {
        fprintf(stderr, "cannot open %s: %s\n", fixture_path("root1/sys"), strerror(errno));
        free(fd);
        return -1;
    }
    *state = fd;
    return 0;
}

static int sys_teardown(void **state)
{
    int *fd = *state;
    close(*fd);
    free(fd);
    return 0;
}

/* The fixture's mq-deadline tunables, as `ls` sorts them (the C locale: '_' after letters
 * does not matter here since every name differs before it). */
static void assert_vda_queue(const struct blockdev_info *b)
{
    assert_true(b->has_queue);
    assert_string_equal(b->scheduler, "mq-deadline");
    assert_int_equal(b->nsched, 4);
    assert_string_equal(b->schedulers[0], "none");
    assert_string_equal(b->schedulers[1], "mq-deadline");
    assert_string_equal(b->schedulers[2], "kyber");
    assert_string_equal(b->schedulers[3], "bfq");
    assert_int_equal(b->nr_requests, 256);
    assert_int_equal(b->rotational, 1);
    assert_int_equal(b->hw_queues, 1); /* mq/0 */
    static const char *const names[] = { "async_depth", "fifo_batch", "front_merges",
                                         "prio_aging_expire", "read_expire", "write_expire",
                                         "writes_starved" };
    static const char *const values[] = { "256", "16", "1", "10000", "500", "5000", "2" };
    assert_int_equal(b->ntunables, 7);
    for (unsigned i = 0; i < 7; i++) {
        assert_string_equal(b->tunables[i].name, names[i]);
        assert_string_equal(b->tunables[i].value, values[i]); /* newline stripped */
    }
}

static void test_blockdev_read_whole_disk(void **state)
{
    int sys = *(int *)*state;
    struct blockdev_info b;
    assert_int_equal(blockdev_read(sys, "vda", &b), 0);
    assert_false(b.partition);
    assert_string_equal(b.disk, "vda");
    assert_int_equal(b.inflight_r, 3);
    assert_int_equal(b.inflight_w, 4);
    assert_vda_queue(&b);
}

static void test_blockdev_read_partition_maps_to_disk_by_device_path(void **state)
{
    int sys = *(int *)*state;
    struct blockdev_info b;
    assert_int_equal(blockdev_read(sys, "vda1", &b), 0);
    assert_true(b.partition);
    assert_string_equal(b.disk, "vda");
    /* its own inflight, the disk's queue */
    assert_int_equal(b.inflight_r, 1);
    assert_int_equal(b.inflight_w, 2);
    assert_vda_queue(&b);
}

static void test_blockdev_read_empty_scheduler_file_means_none_offered(void **state)
{
    int sys = *(int *)*state;
    struct blockdev_info b;
    /* zram0 as 6.1 shows it: bio-based, queue/scheduler exists and is empty, no mq/ */
    assert_int_equal(blockdev_read(sys, "zram0", &b), 0);
    assert_false(b.partition);
    assert_string_equal(b.disk, "zram0");
    assert_true(b.has_queue);
    assert_string_equal(b.scheduler, "");
    assert_int_equal(b.nsched, 0);
    assert_int_equal(b.nr_requests, -1);
    assert_int_equal(b.rotational, 0);
    assert_int_equal(b.hw_queues, 0);
    assert_int_equal(b.ntunables, 0);
    assert_int_equal(b.inflight_r, 0);
    assert_int_equal(b.inflight_w, 0);
}

static void test_blockdev_read_missing_scheduler_file_means_none_offered(void **state)
{
    int sys = *(int *)*state;
    struct blockdev_info b;
    /* zram1 as 6.18 shows it: no scheduler and no nr_requests file at all */
    assert_int_equal(blockdev_read(sys, "zram1", &b), 0);
    assert_true(b.has_queue);
    assert_string_equal(b.scheduler, "");
    assert_int_equal(b.nsched, 0);
    assert_int_equal(b.nr_requests, -1);
    assert_int_equal(b.rotational, 0);
    assert_int_equal(b.hw_queues, 0);
}

static void test_blockdev_read_none_active_reads_no_tunables(void **state)
{
    int sys = *(int *)*state;
    struct blockdev_info b;
    assert_int_equal(blockdev_read(sys, "loop0", &b), 0);
    assert_string_equal(b.scheduler, "none");
    assert_int_equal(b.nsched, 4);
    assert_int_equal(b.nr_requests, 128);
    assert_int_equal(b.hw_queues, 1);
    assert_int_equal(b.ntunables, 0);
}

static void test_blockdev_read_unbracketed_none_alone_is_bio_based(void **state)
{
    int sys = *(int *)*state;
    struct blockdev_info b;
    /* dm-0 as 6.1 shows it: a bare "none" (no brackets: the queue is not blk-mq),
     * nr_requests 128 that nothing uses, no mq/. No scheduler, none offered. */
    assert_int_equal(blockdev_read(sys, "dm-0", &b), 0);
    assert_true(b.has_queue);
    assert_string_equal(b.scheduler, "");
    assert_int_equal(b.nsched, 0);
    assert_int_equal(b.hw_queues, 0);
    assert_int_equal(b.nr_requests, -1);
}

static void test_blockdev_read_device_without_queue_dir(void **state)
{
    int sys = *(int *)*state;
    struct blockdev_info b;
    assert_int_equal(blockdev_read(sys, "noqueue0", &b), 0);
    assert_false(b.partition);
    assert_false(b.has_queue);
    assert_string_equal(b.scheduler, "");
    assert_int_equal(b.nsched, 0);
    assert_int_equal(b.nr_requests, -1);
    assert_int_equal(b.rotational, -1);
    assert_int_equal(b.ntunables, 0);
    assert_int_equal(b.inflight_r, 5);
    assert_int_equal(b.inflight_w, 6);
}

static void test_blockdev_read_missing_device_is_enoent(void **state)
{
    int sys = *(int *)*state;
    struct blockdev_info b;
    assert_int_equal(blockdev_read(sys, "sdq", &b), -ENOENT);
}

/* A file of a made-up sysfs tree, written in place (O_TRUNC: the inode stays, as sysfs
 * shows a new value through a file already open). */
static void put_at(int dfd, const char *path, const char *text)
{
    int fd = openat(dfd, path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    assert_true(fd >= 0);
    size_t len = strlen(text);
    assert_int_equal(write(fd, text, len), (ssize_t)len);
    close(fd);
}

/* blockdev_refresh keeps a bio-based device's files open (zram, most dm: queue attributes,
 * no scheduler file, no mq/) and reads them again through the handle; a blk-mq disk
 * whose mq/ is not made yet (its scheduler file already is) is read from scratch until
 * it is, then kept too. */
static void test_blockdev_refresh_keeps_bio_based_devices(void **state)
{
    (void)state;
    char dir[] = "/tmp/iotriage-bdh-XXXXXX";
    assert_non_null(mkdtemp(dir));
    int sys = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    assert_true(sys >= 0);
    static const char *const dirs[] = { "class", "class/block", "class/block/bio0",
                                        "class/block/bio0/queue", "class/block/mq0",
                                        "class/block/mq0/queue" };
    for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++)
        assert_int_equal(mkdirat(sys, dirs[i], 0755), 0);
    put_at(sys, "class/block/bio0/inflight", "       1        2\n");
    put_at(sys, "class/block/bio0/queue/rotational", "0\n");
    put_at(sys, "class/block/mq0/inflight", "       0        0\n");
    put_at(sys, "class/block/mq0/queue/scheduler", "[none] mq-deadline\n");
    put_at(sys, "class/block/mq0/queue/nr_requests", "64\n");
    put_at(sys, "class/block/mq0/queue/rotational", "1\n");

    struct blockdev_handle *bio = NULL, *mq = NULL;
    struct blockdev_info b;
    assert_int_equal(blockdev_refresh(sys, "bio0", &bio, true, &b), 0);
    assert_non_null(bio);
    assert_int_equal(blockdev_handle_files(bio), 2);      /* inflight, rotational */
    assert_int_equal(b.inflight_r, 1);
    assert_int_equal(b.inflight_w, 2);
    assert_int_equal(b.hw_queues, 0);
    assert_int_equal(b.nr_requests, -1);
    assert_string_equal(b.scheduler, "");
    put_at(sys, "class/block/bio0/inflight", "       7        8\n");
    put_at(sys, "class/block/bio0/queue/rotational", "1\n");
    struct blockdev_handle *was = bio;
    assert_int_equal(blockdev_refresh(sys, "bio0", &bio, true, &b), 0);
    assert_ptr_equal(bio, was);                              /* through the handle */
    assert_int_equal(b.inflight_r, 7);
    assert_int_equal(b.inflight_w, 8);
    assert_int_equal(b.rotational, 1);
    assert_int_equal(b.hw_queues, 0);

    assert_int_equal(blockdev_refresh(sys, "mq0", &mq, true, &b), 0);
    assert_null(mq);                                         /* mq/ not made yet */
    assert_string_equal(b.scheduler, "none");
    assert_int_equal(b.hw_queues, 0);
    assert_int_equal(mkdirat(sys, "class/block/mq0/mq", 0755), 0);
    assert_int_equal(mkdirat(sys, "class/block/mq0/mq/0", 0755), 0);
    assert_int_equal(blockdev_refresh(sys, "mq0", &mq, true, &b), 0);
    assert_non_null(mq);
    assert_int_equal(b.hw_queues, 1);
    assert_int_equal(blockdev_handle_files(mq), 5);
    blockdev_handle_free(bio);
    blockdev_handle_free(mq);
    close(sys);
    char cmd[64];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    assert_int_equal(system(cmd), 0);
}

/* ------------------------------------------------------------------------------------------ */
/* procstat_parse (/proc/PID/stat)                                                             */
/* ------------------------------------------------------------------------------------------ */

/* A real line (6.18, `cat` from a shell) with the name replaced by NAME. */
#define STAT_LINE(NAME) "977 (" NAME ") R 975 975 368 0 -1 4194304 99 0 0 0 0 0 0 0 20 0 1 0 " \
    "969445 3133440 418 18446744073709551615 94896825851904 94896825871785 140729465705920 0 0 " \
    "0 0 0 0 0 0 0 17 1 0 0 0 0 0 94896825887792 94896825889408 94897135071232 " \
    "140729465706950 140729465706970 140729465706970 140729465708523 0\n"

static void test_procstat_real_line(void **state)
{
    (void)state;
    static const char line[] = STAT_LINE("cat");
    struct proc_stat ps;
    assert_int_equal(procstat_parse(line, sizeof(line) - 1, &ps), 0);
    assert_string_equal(ps.comm, "cat");
    assert_int_equal(ps.state, 'R');
    assert_int_equal(ps.flags, 4194304);
    assert_int_equal(ps.nice, 0);
    assert_int_equal(ps.nlwp, 1);
    assert_int_equal(ps.start_ticks, 969445);
    assert_int_equal(ps.policy, 0);
}

static void test_procstat_hostile_names_end_at_the_last_paren(void **state)
{
    (void)state;
    /* A name may hold ") R 1 (", spaces, a newline: only the last ')' ends it. */
    static const char line[] = STAT_LINE("a) R 1 (b\n c");
    struct proc_stat ps;
    assert_int_equal(procstat_parse(line, sizeof(line) - 1, &ps), 0);
    assert_string_equal(ps.comm, "a) R 1 (b\n c");
    assert_int_equal(ps.start_ticks, 969445);
    /* A kernel thread's name may be longer than 15 bytes; it is cut at 63. */
    static const char lng[] = STAT_LINE("kworker/u8:3-events_unbound-0123456789-0123456789-0123456789-0123456789");
    assert_int_equal(procstat_parse(lng, sizeof(lng) - 1, &ps), 0);
    assert_int_equal(strlen(ps.comm), TASK_COMM_MAX - 1);
    assert_memory_equal(ps.comm, "kworker/u8:3-events_unbound-", 28);
}

static void test_procstat_negative_nice_and_rt_policy(void **state)
{
    (void)state;
    static const char line[] = "15 (migration/0) S 2 0 0 0 -1 69238848 0 0 0 0 0 0 0 0 -100 -5 1 0 "
        "3 0 0 18446744073709551615 0 0 0 0 0 0 0 2147483647 0 0 0 0 17 0 99 1 0 0 0 0 0 0 0 0 0 "
        "0 0\n";
    struct proc_stat ps;
    assert_int_equal(procstat_parse(line, sizeof(line) - 1, &ps), 0);
    assert_int_equal(ps.nice, -5);
    assert_int_equal(ps.policy, 1);           /* SCHED_FIFO */
    assert_true(ps.flags & 0x00200000);       /* PF_KTHREAD */
    assert_int_equal(ps.state, 'S');
}

static void test_procstat_cut_or_malformed_is_einval(void **state)
{
    (void)state;
    static const char line[] = STAT_LINE("cat");
    struct proc_stat ps;
    /* cut before the policy (field 41): no data */
    const char *p = line;
    for (int spaces = 0; spaces < 40; p++)
        spaces += *p == ' ';
    assert_int_equal(procstat_parse(line, (size_t)(p - line), &ps), -EINVAL);
    assert_int_equal(procstat_parse(line, 10, &ps), -EINVAL);
    assert_int_equal(procstat_parse("", 0, &ps), -EINVAL);
    assert_int_equal(procstat_parse("977 cat R 1", 11, &ps), -EINVAL);
    static const char bad[] = "977 (cat) R 975 975 x 0\n";
    assert_int_equal(procstat_parse(bad, sizeof(bad) - 1, &ps), -EINVAL);
}

static void test_procstat_live_self(void **state)
{
    (void)state;
    char buf[2048];
    ssize_t n = read_file_at(AT_FDCWD, "/proc/self/stat", buf, sizeof(buf));
    assert_true(n > 0);
    struct proc_stat ps;
    assert_int_equal(procstat_parse(buf, (size_t)n, &ps), 0);
    assert_string_equal(ps.comm, "test_sources");
    assert_int_equal(ps.state, 'R');
    assert_true(ps.nlwp >= 1);
    assert_true(ps.start_ticks > 0);
}

/* ------------------------------------------------------------------------------------------ */
/* procio_parse (/proc/PID/io)                                                                 */
/* ------------------------------------------------------------------------------------------ */

static void test_procio_real_capture(void **state)
{
    (void)state;
    size_t len;
    char *buf = slurp("root1/proc/self/io", &len);
    struct proc_io io;
    assert_int_equal(procio_parse(buf, len, &io), 0);
    assert_int_equal(io.rchar, 48000);
    assert_int_equal(io.wchar, 12433);
    assert_int_equal(io.syscr, 54);
    assert_int_equal(io.syscw, 10);
    assert_int_equal(io.read_bytes, 4096);
    assert_int_equal(io.write_bytes, 12288);
    assert_int_equal(io.cancelled_write_bytes, 12288);
    free(buf);
}

static void test_procio_cut_mid_number_is_einval(void **state)
{
    (void)state;
    size_t len;
    char *buf = slurp("root1/proc/self/io", &len);
    /* The file ends "cancelled_write_bytes: 12288\n": cut after "122". */
    const char *last = strstr(buf, "cancelled_write_bytes: ");
    assert_non_null(last);
    size_t cut = (size_t)(last - buf) + strlen("cancelled_write_bytes: 122");
    struct proc_io io;
    assert_int_equal(procio_parse(buf, cut, &io), -EINVAL);
    /* Cut right after the complete number but before its newline: still not trusted. */
    cut = (size_t)(last - buf) + strlen("cancelled_write_bytes: 12288");
    assert_int_equal(procio_parse(buf, cut, &io), -EINVAL);
    free(buf);
}

static void test_procio_cut_before_last_field_is_einval(void **state)
{
    (void)state;
    size_t len;
    char *buf = slurp("root1/proc/self/io", &len);
    const char *last = strstr(buf, "cancelled_write_bytes: ");
    assert_non_null(last);
    struct proc_io io;
    assert_int_equal(procio_parse(buf, (size_t)(last - buf), &io), -EINVAL);
    assert_int_equal(procio_parse(buf, 0, &io), -EINVAL);
    free(buf);
}

static void test_procio_unknown_keys_are_ignored(void **state)
{
    (void)state;
    const char *in = "rchar: 1\n"
                     "wchar: 2\n"
                     "future_key: 99\n"
                     "no colon on this line\n"
                     "syscr: 3\n"
                     "syscw: 4\n"
                     "read_bytes: 5\n"
                     "read_bytes_x: 77\n"
                     "write_bytes: 6\n"
                     "cancelled_write_bytes: 7\n"
                     "another: 8\n";
    struct proc_io io;
    assert_int_equal(procio_parse(in, strlen(in), &io), 0);
    assert_int_equal(io.rchar, 1);
    assert_int_equal(io.wchar, 2);
    assert_int_equal(io.syscr, 3);
    assert_int_equal(io.syscw, 4);
    assert_int_equal(io.read_bytes, 5);
    assert_int_equal(io.write_bytes, 6);
    assert_int_equal(io.cancelled_write_bytes, 7);
}

static void test_procio_bad_value_is_einval(void **state)
{
    (void)state;
    const char *in = "rchar: 1\nwchar: 2\nsyscr: 3\nsyscw: 4\nread_bytes: x5\nwrite_bytes: 6\n"
                     "cancelled_write_bytes: 7\n";
    struct proc_io io;
    assert_int_equal(procio_parse(in, strlen(in), &io), -EINVAL);
}

static void test_procio_never_reads_past_len(void **state)
{
    (void)state;
    /* Complete but for the final newline, at the very end of readable memory: rejected
     * (a file cut there may have lost digits), without touching the byte after it. */
    const char *in = "rchar: 1\nwchar: 2\nsyscr: 3\nsyscw: 4\nread_bytes: 5\nwrite_bytes: 6\n"
                     "cancelled_write_bytes: 7";
    size_t len = strlen(in);
    char *g = guarded_copy(in, len);
    struct proc_io io;
    assert_int_equal(procio_parse(g, len, &io), -EINVAL);
    guarded_free(g, len);
}

/* ------------------------------------------------------------------------------------------ */
/* ioprio_effective (KERNEL-FACTS sections 1 and 2)                                            */
/* ------------------------------------------------------------------------------------------ */

static void assert_eff(int raw, int nice, int policy, enum ioprio_class cls, int level,
                       enum ioprio_source src)
{
    struct ioprio_eff e = ioprio_effective(raw, nice, policy);
    if (e.cls != cls || e.level != level || e.source != src)
        fail_msg("raw 0x%x nice %d policy %d: %s/%d %s, expected %s/%d %s", (unsigned)raw, nice,
                 policy, ioprio_class_name(e.cls), e.level, ioprio_source_name(e.source),
                 ioprio_class_name(cls), level, ioprio_source_name(src));
}

static void test_ioprio_none_follows_nice(void **state)
{
    (void)state;
    /* level = (nice + 20) / 5 */
    assert_eff(0, 0, SCHED_OTHER, IOC_BE, 4, IOS_NICE);   /* plain: be/4 */
    assert_eff(0, 19, SCHED_OTHER, IOC_BE, 7, IOS_NICE);  /* nice -n 19: 39/5 = 7 */
    assert_eff(0, -20, SCHED_OTHER, IOC_BE, 0, IOS_NICE); /* nice -n -20: 0 */
    assert_eff(0, -16, SCHED_OTHER, IOC_BE, 0, IOS_NICE); /* 4/5 = 0 */
    assert_eff(0, -15, SCHED_OTHER, IOC_BE, 1, IOS_NICE); /* 5/5 = 1 */
    assert_eff(0, 15, SCHED_OTHER, IOC_BE, 7, IOS_NICE);  /* 35/5 = 7 */
    assert_eff(0, 14, SCHED_OTHER, IOC_BE, 6, IOS_NICE);  /* 34/5 = 6 */
    assert_eff(0, 0, SCHED_BATCH, IOC_BE, 4, IOS_NICE);
}

static void test_ioprio_policy_decides_class(void **state)
{
    (void)state;
    assert_int_equal(SCHED_IDLE, 5);
    assert_eff(0, 0, SCHED_IDLE, IOC_IDLE, 4, IOS_POLICY);  /* chrt --idle 0: idle/4 */
    assert_eff(0, 0, SCHED_FIFO, IOC_RT, 4, IOS_POLICY);    /* chrt --fifo 10: rt/4 */
    assert_eff(0, 0, SCHED_RR, IOC_RT, 4, IOS_POLICY);
    assert_eff(0, 0, 6 /* SCHED_DEADLINE */, IOC_RT, 4, IOS_POLICY);
    assert_eff(0, 19, SCHED_IDLE, IOC_IDLE, 7, IOS_POLICY); /* the level still follows nice */
}

static void test_ioprio_explicit_class_wins(void **state)
{
    (void)state;
    assert_eff(0x6007, 0, SCHED_OTHER, IOC_IDLE, 7, IOS_EXPLICIT); /* ionice -c3 */
    assert_eff(0x4003, 0, SCHED_OTHER, IOC_BE, 3, IOS_EXPLICIT);
    assert_eff(0x4007, -20, SCHED_FIFO, IOC_BE, 7, IOS_EXPLICIT);  /* nor nice nor policy */
    assert_eff(0x2002, 19, SCHED_IDLE, IOC_RT, 2, IOS_EXPLICIT);   /* ionice -c1 -n2 */
}

static void test_ioprio_hint_bits_keep_class_and_level(void **state)
{
    (void)state;
    /* 0x4013: class 2 (bits 15-13), hint 2 (bits 12-3), level 3 */
    assert_eff(0x4013, 0, SCHED_OTHER, IOC_BE, 3, IOS_EXPLICIT);
    /* 0x0008: class NONE plus a hint, accepted by the kernel: still nice-derived */
    assert_eff(0x0008, 10, SCHED_OTHER, IOC_BE, 6, IOS_NICE);
}

static void test_ioprio_error_or_invalid_raw_falls_back_to_nice_and_policy(void **state)
{
    (void)state;
    assert_eff(-EPERM, 0, SCHED_OTHER, IOC_BE, 4, IOS_NICE);
    assert_eff(-ESRCH, 19, SCHED_OTHER, IOC_BE, 7, IOS_NICE);
    assert_eff(-EACCES, 0, SCHED_IDLE, IOC_IDLE, 4, IOS_POLICY);
    assert_eff(0xe000, 0, SCHED_OTHER, IOC_BE, 4, IOS_NICE); /* class 7 = INVALID */
    /* <= 5.14 returned NONE|4 for tasks without io_context: class NONE, so nice decides */
    assert_eff(0x0004, 19, SCHED_OTHER, IOC_BE, 7, IOS_NICE);
}

static void test_ioprio_nice_out_of_range_is_clamped(void **state)
{
    (void)state;
    assert_eff(0, 40, SCHED_OTHER, IOC_BE, 7, IOS_NICE);
    assert_eff(0, -100, SCHED_OTHER, IOC_BE, 0, IOS_NICE);
}

static void test_ioprio_default_and_names(void **state)
{
    (void)state;
    assert_true(ioprio_is_default(ioprio_effective(0, 0, SCHED_OTHER)));
    assert_true(ioprio_is_default(ioprio_effective(0x4004, 0, SCHED_OTHER)));
    assert_false(ioprio_is_default(ioprio_effective(0, 19, SCHED_OTHER)));
    assert_false(ioprio_is_default(ioprio_effective(0, 0, SCHED_IDLE)));
    assert_string_equal(ioprio_class_name(IOC_NONE), "none");
    assert_string_equal(ioprio_class_name(IOC_RT), "rt");
    assert_string_equal(ioprio_class_name(IOC_BE), "be");
    assert_string_equal(ioprio_class_name(IOC_IDLE), "idle");
    assert_string_equal(ioprio_source_name(IOS_EXPLICIT), "explicit");
    assert_string_equal(ioprio_source_name(IOS_NICE), "nice");
    assert_string_equal(ioprio_source_name(IOS_POLICY), "policy");
    assert_int_equal(IOPRIO_MAKE(IOC_IDLE, 7), 0x6007);
    assert_int_equal(IOPRIO_CLASS_OF(0x4013), 2);
    assert_int_equal(IOPRIO_LEVEL_OF(0x4013), 3);
}

/* /proc/swaps (mm/swapfile.c: swap_show()): the header skipped, names unescaped (\040 a
 * space), partitions and files told apart, an unknown type and a name too long left
 * out, at most max. */
static void test_swaps_parse(void **state)
{
    (void)state;
    const char text[] =
        "Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n"
        "/dev/sda2                               partition\t262140\t\t98816\t\t-2\n"
        "/var/swap\\040file                      file\t\t1048572\t\t0\t\t-3\n"
        "/dev/zram0                              weird\t\t100\t\t0\t\t100\n";
    char names[SWAPS_MAX][SWAP_NAME_MAX];
    bool file[SWAPS_MAX];
    assert_int_equal(swaps_parse(text, sizeof(text) - 1, names, file, SWAPS_MAX), 2);
    assert_string_equal(names[0], "/dev/sda2");
    assert_false(file[0]);
    assert_string_equal(names[1], "/var/swap file");
    assert_true(file[1]);
    assert_int_equal(swaps_parse(text, sizeof(text) - 1, names, file, 1), 1);
    /* the header alone: no swap */
    assert_int_equal(swaps_parse(text, 60, names, file, SWAPS_MAX), 0);
    char longer[600];
    int n = snprintf(longer, sizeof(longer), "Filename Type\n/%0300d partition 1 0 -2\n", 0);
    assert_int_equal(swaps_parse(longer, (size_t)n, names, file, SWAPS_MAX), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_swaps_parse),
        cmocka_unit_test(test_diskstats_real_capture_gives_every_line_with_17_fields),
        cmocka_unit_test(test_diskstats_read_opens_diskstats_below_proc_fd),
        cmocka_unit_test(test_diskstats_old_kernel_gives_11_fields),
        cmocka_unit_test(test_diskstats_kernel_4_19_gives_15_fields),
        cmocka_unit_test(test_diskstats_line_with_16_numbers_is_rejected_and_counted),
        cmocka_unit_test(test_diskstats_other_wrong_counts_are_rejected),
        cmocka_unit_test(test_diskstats_final_line_without_newline_still_parses),
        cmocka_unit_test(test_diskstats_final_line_cut_mid_fields_is_rejected),
        cmocka_unit_test(test_diskstats_only_reads_len_bytes),
        cmocka_unit_test(test_diskstats_never_reads_past_len),
        cmocka_unit_test(test_diskstats_garbage_gives_einval_and_no_rows),
        cmocka_unit_test(test_diskstats_empty_input_is_zero_rows_not_an_error),
        cmocka_unit_test(test_diskstats_name_of_64_chars_is_rejected_63_kept),
        cmocka_unit_test(test_diskstats_counter_above_u64_is_rejected_u64_max_kept),
        cmocka_unit_test(test_diskstats_future_kernel_extra_counters_are_ignored),
        cmocka_unit_test(test_diskstats_many_lines_grow_the_array),

        cmocka_unit_test(test_loadavg_tasks),
        cmocka_unit_test(test_psi_real_io_capture),
        cmocka_unit_test(test_psi_real_cpu_capture_has_a_zero_full_line),
        cmocka_unit_test(test_psi_real_memory_capture_zero_pressure_is_valid),
        cmocka_unit_test(test_psi_some_line_only_leaves_full_unavailable),
        cmocka_unit_test(test_psi_garbage_is_einval),
        cmocka_unit_test(test_psi_line_without_total_is_invalid_alone),
        cmocka_unit_test(test_psi_negative_average_rejects_the_line),
        cmocka_unit_test(test_psi_unknown_key_is_skipped),
        cmocka_unit_test(test_psi_only_reads_len_bytes),
        cmocka_unit_test(test_psi_never_reads_past_len),
        cmocka_unit_test(test_psi_read_reports_missing_file_as_enoent),

        cmocka_unit_test(test_layer_text),
        cmocka_unit_test(test_scheduler_bracketed_one_is_active),
        cmocka_unit_test(test_scheduler_none_alone_has_no_active),
        cmocka_unit_test(test_scheduler_empty_file_offers_nothing),
        cmocka_unit_test(test_scheduler_name_too_long_is_einval),
        cmocka_unit_test(test_scheduler_more_than_list_size_keeps_first_and_active),
        cmocka_unit_test(test_inflight_parses_two_counts),
        cmocka_unit_test(test_inflight_rejects_malformed),

        cmocka_unit_test_setup_teardown(test_blockdev_read_whole_disk, sys_setup, sys_teardown),
        cmocka_unit_test_setup_teardown(test_blockdev_read_partition_maps_to_disk_by_device_path,
                                        sys_setup, sys_teardown),
        cmocka_unit_test_setup_teardown(test_blockdev_read_empty_scheduler_file_means_none_offered,
                                        sys_setup, sys_teardown),
        cmocka_unit_test_setup_teardown(test_blockdev_read_missing_scheduler_file_means_none_offered,
                                        sys_setup, sys_teardown),
        cmocka_unit_test_setup_teardown(test_blockdev_read_none_active_reads_no_tunables,
                                        sys_setup, sys_teardown),
        cmocka_unit_test_setup_teardown(test_blockdev_read_unbracketed_none_alone_is_bio_based,
                                        sys_setup, sys_teardown),
        cmocka_unit_test_setup_teardown(test_blockdev_read_device_without_queue_dir,
                                        sys_setup, sys_teardown),
        cmocka_unit_test(test_blockdev_refresh_keeps_bio_based_devices),
        cmocka_unit_test_setup_teardown(test_blockdev_read_missing_device_is_enoent,
                                        sys_setup, sys_teardown),

        cmocka_unit_test(test_procstat_real_line),
        cmocka_unit_test(test_procstat_hostile_names_end_at_the_last_paren),
        cmocka_unit_test(test_procstat_negative_nice_and_rt_policy),
        cmocka_unit_test(test_procstat_cut_or_malformed_is_einval),
        cmocka_unit_test(test_procstat_live_self),
        cmocka_unit_test(test_procio_real_capture),
        cmocka_unit_test(test_procio_cut_mid_number_is_einval),
        cmocka_unit_test(test_procio_cut_before_last_field_is_einval),
        cmocka_unit_test(test_procio_unknown_keys_are_ignored),
        cmocka_unit_test(test_procio_bad_value_is_einval),
        cmocka_unit_test(test_procio_never_reads_past_len),

        cmocka_unit_test(test_ioprio_none_follows_nice),
        cmocka_unit_test(test_ioprio_policy_decides_class),
        cmocka_unit_test(test_ioprio_explicit_class_wins),
        cmocka_unit_test(test_ioprio_hint_bits_keep_class_and_level),
        cmocka_unit_test(test_ioprio_error_or_invalid_raw_falls_back_to_nice_and_policy),
        cmocka_unit_test(test_ioprio_nice_out_of_range_is_clamped),
        cmocka_unit_test(test_ioprio_default_and_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
