/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Unit tests of the remembered quiet-time levels (store/state.h): the parser on good
 * and hostile files, the atomic write and the read back, the identity from sysfs, and
 * where the file goes. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "store/state.h"

#define S(x) x, sizeof(x) - 1
#define HDR "iotriage-baselines 1\n"

static void test_parse_good(void **st)
{
    (void)st;
    struct state_entry v[4];
    char err[160];
    int n = state_parse(S(HDR "vda 254 0 serial:00000000deadbeef 0.512000 1796000000\n"
                              "loop3 7 3 loop:0123456789abcdef 2.1 1796000001\n"
                              "zram0 253 0 - 0.01 0\n"), v, 4, err, sizeof(err));
    assert_int_equal(n, 3);
    assert_string_equal(v[0].name, "vda");
    assert_int_equal(v[0].major, 254);
    assert_int_equal(v[0].minor, 0);
    assert_string_equal(v[0].ident, "serial:00000000deadbeef");
    assert_true(fabs(v[0].quiet_await - 0.512) < 1e-9);
    assert_true(fabs(v[0].saved - 1796000000.0) < 1e-3);
    assert_string_equal(v[2].ident, "-");
    /* an empty file after the header: no devices */
    assert_int_equal(state_parse(S(HDR), v, 4, err, sizeof(err)), 0);
}

static void test_parse_hostile(void **st)
{
    (void)st;
    struct state_entry v[4];
    char err[160];
    static const char *const bad[] = {
        "",
        "iotriage-baselines 2\n",
        "iotriage-baselines 1",                                      /* no newline */
        HDR "vda 254 0 - 0.5 1\nvdb 254 16 - 0.5 1",                 /* last line cut */
        HDR "vda 254 0 - 0.5\n",                                     /* a field missing */
        HDR "vda 254 0 - 0.5 1 extra\n",
        HDR "vda  254 0 - 0.5 1\n",                                  /* two spaces */
        HDR "vda 254 0 - 0.5 1 \n",
        HDR "vda 254 0 - nan 1\n",
        HDR "vda 254 0 - inf 1\n",
        HDR "vda 254 0 - -1 1\n",
        HDR "vda 254 0 - 0 1\n",                                     /* not > 0 */
        HDR "vda 254 0 - 1e3 1\n",                                   /* no exponents */
        HDR "vda 254 0 - 99999999 1\n",                              /* above 1e7 ms */
        HDR "vda 4294967296 0 - 0.5 1\n",                            /* major > 32 bits */
        HDR "vda -1 0 - 0.5 1\n",
        HDR "vda 254 0 serial:xyz 0.5 1\n",
        HDR "vda 254 0 serial:00000000DEADBEEF 0.5 1\n",             /* upper-case hex */
        HDR "vda 254 0 uuid:00000000deadbeef 0.5 1\n",               /* unknown kind */
        HDR "../x 254 0 - 0.5 1\n",
        HDR "a\x01 254 0 - 0.5 1\n",
        HDR "vda 254 0 - 0.5 1\n\n",                                 /* an empty line */
        HDR "vda 254 0 - 0.5 1\r\n",
        HDR "0123456789012345678901234567890123456789012345678901234567890123 1 1 - 1 1\n",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        err[0] = '\0';
        int n = state_parse(bad[i], strlen(bad[i]), v, 4, err, sizeof(err));
        if (n != -EINVAL)
            fail_msg("case %zu accepted (%d): %s", i, n, bad[i]);
        assert_true(err[0] != '\0');
    }
    /* a NUL inside a line */
    static const char nul[] = HDR "vda 254 0 - 0.5 1\0\n";
    assert_int_equal(state_parse(nul, sizeof(nul) - 1, v, 4, err, sizeof(err)), -EINVAL);
    /* more lines than room */
    assert_int_equal(state_parse(S(HDR "a 1 1 - 1 1\nb 1 2 - 1 1\nc 1 3 - 1 1\n"), v, 2, err, sizeof(err)),
                     -EINVAL);
    /* larger than the limit, even when made of good lines */
    size_t big = STATE_FILE_MAX + 32;
    char *buf = malloc(big);
    assert_non_null(buf);
    memcpy(buf, HDR, strlen(HDR));
    for (size_t i = strlen(HDR); i < big; i++)
        buf[i] = '\n';
    assert_int_equal(state_parse(buf, big, v, 4, err, sizeof(err)), -EINVAL);
    free(buf);
}

static char dir[] = "/tmp/iotriage-state.XXXXXX";

static void test_write_read(void **st)
{
    (void)st;
    char path[256], err[320];
    snprintf(path, sizeof(path), "%s/sub/deeper/baselines", dir);
    struct state_entry v[2] = {
        { .name = "vda", .major = 254, .minor = 0, .ident = "serial:00000000deadbeef",
          .quiet_await = 0.4375, .saved = 1796000000 },
        { .name = "loop0", .major = 7, .minor = 0, .ident = "-", .quiet_await = 2.25, .saved = 1796000005 },
    };
    assert_int_equal(state_write(path, v, 2, err, sizeof(err)), 0);
    struct state_entry *r;
    size_t n;
    assert_int_equal(state_read(path, &r, &n, err, sizeof(err)), 0);
    assert_int_equal(n, 2);
    assert_string_equal(r[0].ident, v[0].ident);
    assert_true(fabs(r[0].quiet_await - 0.4375) < 1e-6);
    assert_true(fabs(r[1].quiet_await - 2.25) < 1e-6);
    assert_true(fabs(r[1].saved - 1796000005.0) < 1e-3);
    free(r);
    /* no temporary left beside it */
    char tmp[300];
    snprintf(tmp, sizeof(tmp), "%s.%ld.tmp", path, (long)getpid());
    assert_int_equal(access(tmp, F_OK), -1);

    /* a missing file: nothing, no error */
    snprintf(tmp, sizeof(tmp), "%s/none", dir);
    assert_int_equal(state_read(tmp, &r, &n, err, sizeof(err)), 0);
    assert_int_equal(n, 0);
    assert_null(r);

    /* garbage: refused with one line naming the file */
    snprintf(tmp, sizeof(tmp), "%s/garbage", dir);
    FILE *f = fopen(tmp, "w");
    assert_non_null(f);
    fputs("\x7f" "ELF garbage\n", f);
    fclose(f);
    assert_int_equal(state_read(tmp, &r, &n, err, sizeof(err)), -EINVAL);
    assert_non_null(strstr(err, "garbage"));

    /* too big: refused before it is read */
    assert_int_equal(truncate(tmp, STATE_FILE_MAX + 1), 0);
    assert_int_equal(state_read(tmp, &r, &n, err, sizeof(err)), -EINVAL);

    /* a symbolic link is not followed, a directory is not a file */
    char link[300];
    snprintf(link, sizeof(link), "%s/link", dir);
    assert_int_equal(symlink(path, link), 0);
    assert_true(state_read(link, &r, &n, err, sizeof(err)) < 0);
    snprintf(tmp, sizeof(tmp), "%s/sub", dir);
    assert_true(state_read(tmp, &r, &n, err, sizeof(err)) < 0);
}

static void test_ident(void **st)
{
    (void)st;
    char p[512], id[STATE_IDENT_MAX], id2[STATE_IDENT_MAX];
    snprintf(p, sizeof(p), "mkdir -p %s/sys/class/block/loop9/loop %s/sys/class/block/vdz "
             "%s/sys/class/block/zram7", dir, dir, dir);
    assert_int_equal(system(p), 0);
    snprintf(p, sizeof(p), "%s/sys/class/block/loop9/loop/backing_file", dir);
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    fputs("/srv/disk one.img\n", f);
    fclose(f);
    snprintf(p, sizeof(p), "%s/sys/class/block/vdz/serial", dir);
    f = fopen(p, "w");
    assert_non_null(f);
    fputs("1736632178450877", f);
    fclose(f);
    snprintf(p, sizeof(p), "%s/sys", dir);
    state_device_ident(p, "loop9", id);
    assert_int_equal(strncmp(id, "loop:", 5), 0);
    assert_int_equal(strlen(id), 5 + 16);
    state_device_ident(p, "vdz", id2);
    assert_int_equal(strncmp(id2, "serial:", 7), 0);
    assert_string_not_equal(id + 5, id2 + 7);
    state_device_ident(p, "zram7", id);
    assert_string_equal(id, "-");
    /* a loop device is its backing file alone, a device-mapper one its uuid alone */
    snprintf(p, sizeof(p), "mkdir -p %s/sys/class/block/dm-3/dm && echo 1736 >%s/sys/class/block/loop9/serial && "
             "echo CRYPT-LUKS2-x >%s/sys/class/block/dm-3/dm/uuid && echo 99 >%s/sys/class/block/dm-3/serial",
             dir, dir, dir, dir);
    assert_int_equal(system(p), 0);
    snprintf(p, sizeof(p), "%s/sys", dir);
    state_device_ident(p, "loop9", id);
    assert_int_equal(strncmp(id, "loop:", 5), 0);
    state_device_ident(p, "dm-3", id);
    assert_int_equal(strncmp(id, "dmuuid:", 7), 0);
    state_device_ident(p, "absent", id);
    assert_string_equal(id, "-");
    /* what it writes, it reads */
    struct state_entry v;
    char line[160], err[160];
    snprintf(line, sizeof(line), HDR "vdz 254 0 %s 1 1\n", id2);
    assert_int_equal(state_parse(line, strlen(line), &v, 1, err, sizeof(err)), 1);
}

static void test_default_path(void **st)
{
    (void)st;
    char buf[512];
    setenv("IOTRIAGE_STATE_FILE", "", 1);
    assert_null(state_default_path(buf, sizeof(buf)));
    setenv("IOTRIAGE_STATE_FILE", "/x/y", 1);
    assert_string_equal(state_default_path(buf, sizeof(buf)), "/x/y");
    unsetenv("IOTRIAGE_STATE_FILE");
    if (geteuid() == 0) {
        assert_string_equal(state_default_path(buf, sizeof(buf)), "/var/lib/iotriage/baselines");
    } else {
        setenv("XDG_STATE_HOME", "/xdg", 1);
        assert_string_equal(state_default_path(buf, sizeof(buf)), "/xdg/iotriage/baselines");
        setenv("XDG_STATE_HOME", "relative", 1);
        setenv("HOME", "/home/u", 1);
        assert_string_equal(state_default_path(buf, sizeof(buf)), "/home/u/.local/state/iotriage/baselines");
    }
}

static int setup(void **st)
{
    (void)st;
    return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **st)
{
    (void)st;
    char cmd[300];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : -1;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_good),
        cmocka_unit_test(test_parse_hostile),
        cmocka_unit_test(test_write_read),
        cmocka_unit_test(test_ident),
        cmocka_unit_test(test_default_path),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
