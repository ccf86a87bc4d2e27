/* SPDX-License-Identifier: GPL-2.0-or-later */
/* store/state.c: the devices' quiet-time levels across runs (store/state.h). */
#include "store/state.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "store/store.h"
#include "util.h"

#define STATE_MAGIC "iotriage-baselines 1"

const char *state_default_path(char *buf, size_t len)
{
    const char *env = getenv("IOTRIAGE_STATE_FILE");
    if (env)
        return env[0] && snprintf(buf, len, "%s", env) < (int)len ? buf : NULL;
    int n;
    if (geteuid() == 0) {
        n = snprintf(buf, len, "%s/baselines", STORE_DEFAULT_DIR);
    } else {
        const char *x = getenv("XDG_STATE_HOME");
        const char *home = getenv("HOME");
        /* XDG: a relative path in the variable is invalid and is ignored. */
        if (x && x[0] == '/')
            n = snprintf(buf, len, "%s/iotriage/baselines", x);
        else if (home && home[0] == '/')
            n = snprintf(buf, len, "%s/.local/state/iotriage/baselines", home);
        else
            return NULL;
    }
    return n > 0 && (size_t)n < len ? buf : NULL;
}

/* ---- the parser ---- */

static bool ident_ok(const char *s, size_t n)
{
    if (n == 1 && s[0] == '-')
        return true;
    static const char *const kinds[] = { "wwid:", "serial:", "dmuuid:", "loop:" };
    for (size_t k = 0; k < ARRAY_SIZE(kinds); k++) {
        size_t kl = strlen(kinds[k]);
        if (n != kl + 16 || memcmp(s, kinds[k], kl) != 0)
            continue;
        for (size_t i = kl; i < n; i++)
            if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
                return false;
        return true;
    }
    return false;
}

static bool name_ok(const char *s, size_t n)
{
    if (n == 0 || n >= DS_NAME_MAX)
        return false;
    for (size_t i = 0; i < n; i++)
        if (s[i] <= ' ' || s[i] > '~' || s[i] == '/')
            return false;
    return true;
}

/* A decimal field into v, at most max. */
static bool uint_ok(const char *s, size_t n, unsigned long long max, unsigned long long *v)
{
    if (n == 0 || n > 20)
        return false;
    unsigned long long x = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return false;
        x = x * 10 + (unsigned)(s[i] - '0');
        if (x > max)
            return false;
    }
    *v = x;
    return true;
}

/* A plain decimal number ("0.512", "1796000000.5"), no exponent, NAN or sign. */
static bool num_ok(const char *s, size_t n, double lo, double hi, double *v)
{
    char tmp[40];
    if (n == 0 || n >= sizeof(tmp))
        return false;
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || s[i] == '.'))
            return false;
    memcpy(tmp, s, n);
    tmp[n] = '\0';
    char *end;
    double x = strtod(tmp, &end);
    if (*end || !isfinite(x) || x < lo || x > hi)
        return false;
    *v = x;
    return true;
}

int state_parse(const char *buf, size_t len, struct state_entry *out, size_t max,
                char *err, size_t errlen)
{
    if (len > STATE_FILE_MAX) {
        err_set(err, errlen, "larger than %d bytes", STATE_FILE_MAX);
        return -EINVAL;
    }
    size_t ml = strlen(STATE_MAGIC);
    if (len < ml + 1 || memcmp(buf, STATE_MAGIC, ml) != 0 || buf[ml] != '\n') {
        err_set(err, errlen, "not an iotriage baselines file (first line)");
        return -EINVAL;
    }
    size_t pos = ml + 1, line = 1;
    int n = 0;
    while (pos < len) {
        line++;
        const char *l = buf + pos;
        const char *nl = memchr(l, '\n', len - pos);
        if (!nl) {
            err_set(err, errlen, "line %zu: no end of line", line);
            return -EINVAL;
        }
        size_t ll = (size_t)(nl - l);
        pos += ll + 1;
        const char *f[6];
        size_t fl[6], nf = 0, i = 0;
        while (i <= ll && nf < 6) {
            size_t j = i;
            while (j < ll && l[j] != ' ')
                j++;
            f[nf] = l + i;
            fl[nf++] = j - i;
            i = j + 1;
        }
        unsigned long long maj, min;
        struct state_entry e;
        if (nf != 6 || i <= ll || !name_ok(f[0], fl[0]) || !uint_ok(f[1], fl[1], UINT32_MAX, &maj) ||
            !uint_ok(f[2], fl[2], UINT32_MAX, &min) || !ident_ok(f[3], fl[3]) ||
            !num_ok(f[4], fl[4], 1e-6, 1e7, &e.quiet_await) || !num_ok(f[5], fl[5], 0, 1e11, &e.saved)) {
            err_set(err, errlen, "line %zu: not NAME MAJOR MINOR IDENT QUIET_MS SAVED", line);
            return -EINVAL;
        }
        if ((size_t)n >= max || n >= STATE_ENTRIES_MAX) {
            err_set(err, errlen, "more than %zu devices", max < STATE_ENTRIES_MAX ? max : (size_t)STATE_ENTRIES_MAX);
            return -EINVAL;
        }
        memcpy(e.name, f[0], fl[0]);
        e.name[fl[0]] = '\0';
        memcpy(e.ident, f[3], fl[3]);
        e.ident[fl[3]] = '\0';
        e.major = (unsigned)maj;
        e.minor = (unsigned)min;
        out[n++] = e;
    }
    return n;
}

/* ---- the file ---- */

int state_read(const char *path, struct state_entry **out, size_t *n, char *err, size_t errlen)
{
    *out = NULL;
    *n = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    if (fd < 0) {
        if (errno == ENOENT)
            return 0;
        int e = errno;
        err_set(err, errlen, "%s: %s", path, strerror(e));
        return -e;
    }
    struct stat st;
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size > STATE_FILE_MAX) {
        close(fd);
        err_set(err, errlen, "%s: not a regular file of at most %d bytes", path, STATE_FILE_MAX);
        return -EINVAL;
    }
    char *buf = xmalloc(STATE_FILE_MAX + 1);
    size_t len = 0;
    ssize_t r;
    /* Read one byte past the limit: a file that grew since fstat is refused too. */
    while (len <= STATE_FILE_MAX && (r = read(fd, buf + len, STATE_FILE_MAX + 1 - len)) > 0)
        len += (size_t)r;
    close(fd);
    struct state_entry *v = xcalloc(STATE_ENTRIES_MAX, sizeof(*v));
    char why[160];
    int k = state_parse(buf, len, v, STATE_ENTRIES_MAX, why, sizeof(why));
    free(buf);
    if (k < 0) {
        free(v);
        err_set(err, errlen, "%s: %s", path, why);
        return k;
    }
    *out = v;
    *n = (size_t)k;
    return 0;
}

/* mkdir -p of path's directory, the last one with mode. */
static int make_parent(const char *path, mode_t mode)
{
    char dir[4096];
    if (snprintf(dir, sizeof(dir), "%s", path) >= (int)sizeof(dir))
        return -ENAMETOOLONG;
    char *slash = strrchr(dir, '/');
    if (!slash || slash == dir)
        return 0;
    *slash = '\0';
    for (char *p = dir + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(dir, 0700) < 0 && errno != EEXIST)
            return -errno;
        *p = '/';
    }
    if (mkdir(dir, mode) < 0 && errno != EEXIST)
        return -errno;
    return 0;
}

int state_write(const char *path, const struct state_entry *v, size_t n, char *err, size_t errlen)
{
    if (n > STATE_ENTRIES_MAX)
        n = STATE_ENTRIES_MAX;
    int rc = make_parent(path, geteuid() == 0 ? 0750 : 0700);
    if (rc < 0) {
        err_set(err, errlen, "%s: cannot make its directory: %s", path, strerror(-rc));
        return rc;
    }
    char tmp[4200];
    if (snprintf(tmp, sizeof(tmp), "%s.%ld.tmp", path, (long)getpid()) >= (int)sizeof(tmp)) {
        err_set(err, errlen, "%s: path too long", path);
        return -ENAMETOOLONG;
    }
    /* A new file, never one found there (a link planted under that name): a leftover of
     * a crashed run of the same pid is removed first. */
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (fd < 0 && errno == EEXIST && unlink(tmp) == 0)
        fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (fd < 0) {
        int e = errno;
        err_set(err, errlen, "%s: %s", tmp, strerror(e));
        return -e;
    }
    FILE *f = fdopen(fd, "w");
    if (!f) {
        int e = errno;
        close(fd);
        unlink(tmp);
        err_set(err, errlen, "%s: %s", tmp, strerror(e));
        return -e;
    }
    fprintf(f, "%s\n", STATE_MAGIC);
    for (size_t i = 0; i < n; i++)
        fprintf(f, "%s %u %u %s %.6f %.0f\n", v[i].name, v[i].major, v[i].minor, v[i].ident,
                v[i].quiet_await, v[i].saved);
    int e = 0;
    if (fflush(f) != 0 || fsync(fileno(f)) < 0)
        e = errno;
    if (fclose(f) != 0 && !e)
        e = errno;
    if (!e && rename(tmp, path) < 0)
        e = errno;
    if (e) {
        unlink(tmp);
        err_set(err, errlen, "%s: %s", path, strerror(e));
        return -e;
    }
    return 0;
}

/* ---- identity ---- */

static uint64_t fnv1a(const char *s, size_t n)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)s[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

void state_device_ident(const char *sys_root, const char *name, char out[STATE_IDENT_MAX])
{
    static const struct { const char *file, *kind; } where[] = {
        { "wwid", "wwid" }, { "device/wwid", "wwid" },
        { "serial", "serial" }, { "device/serial", "serial" },
        { "dm/uuid", "dmuuid" }, { "loop/backing_file", "loop" },
    };
    /* A loop device is its backing file, a device-mapper one its uuid: only that file is
     * read for them (a machine may have a hundred unbound loop devices). */
    size_t from = 0, to = ARRAY_SIZE(where);
    if (strncmp(name, "loop", 4) == 0)
        from = to - 1;
    else if (strncmp(name, "dm-", 3) == 0)
        from = to - 2, to = to - 1;
    for (size_t i = from; i < to; i++) {
        char path[512], buf[1024];
        if (snprintf(path, sizeof(path), "%s/class/block/%s/%s", sys_root ? sys_root : "/sys",
                     name, where[i].file) >= (int)sizeof(path))
            break;
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
            continue;
        ssize_t n = read(fd, buf, sizeof(buf));
        close(fd);
        while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
            n--;
        if (n <= 0)
            continue;
        snprintf(out, STATE_IDENT_MAX, "%s:%016" PRIx64, where[i].kind, fnv1a(buf, (size_t)n));
        return;
    }
    str_copy(out, "-", STATE_IDENT_MAX);
}
