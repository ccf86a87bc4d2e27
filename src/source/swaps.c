/* SPDX-License-Identifier: GPL-2.0-or-later */
/* source/swaps.c: /proc/swaps, as the block devices that serve each swap area.
 * The format (mm/swapfile.c: swap_show()): a header line, then per area its path
 * (seq_file_path: space, tab, newline and backslash as \ooo), its type ("partition" or
 * "file"), size, used and priority, separated by blanks. */
#include "source/swaps.h"

#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "util.h"

static bool is_octal(char c)
{
    return c >= '0' && c <= '7';
}

/* The path at p, unescaped into out (cap bytes); the end of its field in *endp. False
 * when it does not fit. */
static bool take_name(const char *p, const char *end, char *out, size_t cap, const char **endp)
{
    size_t n = 0;
    while (p < end && *p != ' ' && *p != '\t') {
        char c = *p++;
        if (c == '\\' && end - p >= 3 && is_octal(p[0]) && is_octal(p[1]) && is_octal(p[2])) {
            c = (char)((p[0] - '0') << 6 | (p[1] - '0') << 3 | (p[2] - '0'));
            p += 3;
        }
        if (n + 1 >= cap)
            return false;
        out[n++] = c;
    }
    out[n] = '\0';
    *endp = p;
    return n > 0;
}

size_t swaps_parse(const char *buf, size_t len, char (*names)[SWAP_NAME_MAX], bool *file, size_t max)
{
    const char *p = buf, *end = buf + len;
    size_t n = 0;
    bool header = true;
    while (p < end && n < max) {
        const char *eol = memchr(p, '\n', (size_t)(end - p));
        if (!eol)
            eol = end;
        const char *q;
        if (header)
            header = false;
        else if (take_name(p, eol, names[n], SWAP_NAME_MAX, &q)) {
            while (q < eol && (*q == ' ' || *q == '\t'))
                q++;
            size_t tl = 0;
            while (q + tl < eol && q[tl] != ' ' && q[tl] != '\t')
                tl++;
            if (tl == 4 && memcmp(q, "file", 4) == 0)
                file[n++] = true;
            else if (tl == 9 && memcmp(q, "partition", 9) == 0)
                file[n++] = false;
        }
        p = eol + 1;
    }
    return n;
}

size_t swaps_read(int proc_fd, struct swap_area *out, size_t max)
{
    char buf[4096];
    ssize_t len = read_file_at(proc_fd, "swaps", buf, sizeof(buf));
    if (len <= 0)
        return 0;
    char names[SWAPS_MAX][SWAP_NAME_MAX];
    bool file[SWAPS_MAX];
    size_t k = swaps_parse(buf, (size_t)len, names, file, max < SWAPS_MAX ? max : SWAPS_MAX);
    size_t n = 0;
    for (size_t i = 0; i < k; i++) {
        struct stat st;
        if (stat(names[i], &st) != 0)
            continue;
        dev_t d = file[i] ? st.st_dev : S_ISBLK(st.st_mode) ? st.st_rdev : 0;
        if (!d || major(d) == 0)     /* no block device (an anonymous one: btrfs, tmpfs) */
            continue;
        out[n++] = (struct swap_area){ major(d), minor(d), file[i] };
    }
    return n;
}
