/* SPDX-License-Identifier: GPL-2.0-or-later */
/* tests/helpers/fsfix.c: the space actions (act/act.h fsfix_*) from the command line, for
 * tests/integration/test_fs_deleted.sh until the screen offers them.
 *
 *   fsfix [-r] [-i INO] signal   PID FD MOUNT [SIG [WAIT_S]]
 *   fsfix [-r] [-i INO] truncate PID FD MOUNT [COPY_TO]
 *
 * The file is what /proc/PID/fd/FD is now (its dev and ino), or inode INO with -i (to
 * test the staleness check). -r: read-only mode. Prints the outcome as key=value lines;
 * exits 0 when the action returned 0, 1 otherwise (err= names the errno). */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "act/act.h"

static int usage(void)
{
    fprintf(stderr, "usage: fsfix [-r] [-i INO] signal PID FD MOUNT [SIG [WAIT_S]]\n"
                    "       fsfix [-r] [-i INO] truncate PID FD MOUNT [COPY_TO]\n");
    return 2;
}

int main(int argc, char **argv)
{
    long long ino = -1;
    int opt;
    while ((opt = getopt(argc, argv, "ri:")) != -1) {
        if (opt == 'r')
            act_set_read_only();
        else if (opt == 'i')
            ino = atoll(optarg);
        else
            return usage();
    }
    if (argc - optind < 4)
        return usage();
    const char *what = argv[optind];
    struct fsfix_target t = { .pid = atoi(argv[optind + 1]), .fd = atoi(argv[optind + 2]),
                              .mount = argv[optind + 3] };
    char path[64];
    snprintf(path, sizeof(path), "/proc/%d/fd/%d", (int)t.pid, t.fd);
    struct stat st;
    if (stat(path, &st) != 0) {
        fprintf(stderr, "fsfix: %s: %s\n", path, strerror(errno));
        return 1;
    }
    t.dev = st.st_dev;
    t.ino = ino >= 0 ? (ino_t)ino : st.st_ino;
    if (prio_start_ticks(NULL, t.pid, &t.start_ticks) != 0)
        t.start_ticks = 0;
    struct fsfix_outcome o;
    int rc;
    if (strcmp(what, "signal") == 0) {
        int sig = argc - optind > 4 ? atoi(argv[optind + 4]) : SIGHUP;
        double wait_s = argc - optind > 5 ? atof(argv[optind + 5]) : 2.0;
        rc = fsfix_signal(NULL, &t, sig, wait_s, &o);
    } else if (strcmp(what, "truncate") == 0) {
        rc = fsfix_truncate(NULL, &t, argc - optind > 4 ? argv[optind + 4] : NULL, &o);
    } else {
        return usage();
    }
    printf("rc=%d\nerr=%s\nspace_known=%d\navail_before=%llu\navail_after=%llu\nfreed=%lld\n"
           "size_before=%llu\nblocks_before=%llu\ncopied=%llu\nappend=%d\nreleased=%d\nmsg=%s\n",
           rc, rc ? strerrorname_np(-rc) : "0", o.space_known, (unsigned long long)o.avail_before,
           (unsigned long long)o.avail_after, (long long)o.freed, (unsigned long long)o.size_before,
           (unsigned long long)o.blocks_before, (unsigned long long)o.copied, o.append, o.released,
           o.msg);
    return rc ? 1 : 0;
}
