/* tui/tui.h: the interactive screen.
 *
 * tui_run() owns the terminal from initscr() to endwin(); it samples like the batch loop
 * (source -> snapshot -> delta -> verdict) and only reads the result to draw. It restores
 * the terminal on q, on SIGINT/SIGTERM/SIGHUP and when stdin goes away.
 */
#ifndef IOTRIAGE_TUI_TUI_H
#define IOTRIAGE_TUI_TUI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/types.h>

struct tui_opts {
    double delay_s;
    bool threads, only_active;
    const pid_t *pids;
    size_t npids;
    const char *proc_root, *sys_root;
    FILE *record;                    /* every sample as a JSON line, or NULL */
    const char *replay;              /* drive the screen from this recording instead */
    bool no_bpf;                     /* --no-bpf: the sampler loads no BPF lens */
};

/* Returns the process exit status. */
int tui_run(const struct tui_opts *o);

/* Set by the signal handlers main installs; the loop polls it. */
extern volatile int tui_stop_signal;

#endif
