/* SPDX-License-Identifier: GPL-2.0-or-later */
/* recorder: record_run() as a program of its own, for tests and `make bench` (the same
 * `iotriage record`.
 *   recorder DIR INTERVAL_S ITERATIONS [FLUSH_S]
 * SIGTERM/SIGINT stop it cleanly (the store is flushed and closed). */
#include <signal.h>
#include <stdlib.h>

#include "recorder.h"

static volatile sig_atomic_t stop;

static void on_term(int sig)
{
    (void)sig;
    stop = 1;
}

int main(int argc, char **argv)
{
    if (argc < 4)
        return 2;
    struct sigaction sa = { .sa_handler = on_term };
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    struct record_opts o = {
        .dir = argv[1], .interval_s = atof(argv[2]), .iterations = atol(argv[3]),
        .flush_s = argc > 4 ? atof(argv[4]) : 0, .stop = &stop,
    };
    return record_run(&o);
}
