/* tui/tui.h: the interactive screen.
 *
 * tui_run() owns the terminal from initscr() to endwin(); it steps the pipeline it is
 * given (the machine or a recording: pipeline.h) on time and only reads its frames to
 * draw. It restores the terminal on q, on SIGINT/SIGTERM/SIGHUP and when stdin goes away.
 * A terminal curses cannot drive (no TERM, an unknown one, TERM=dumb) is refused before
 * anything is drawn, with one line on stderr and exit status 2.
 */
#ifndef IOTRIAGE_TUI_TUI_H
#define IOTRIAGE_TUI_TUI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/types.h>

struct pipeline;

struct tui_opts {
    double delay_s;
    bool threads, only_active;       /* as the pipeline was opened */
    const char *proc_root, *sys_root;
    const char *recording;           /* the file a sink records to, or NULL (for the header) */
};

/* The range of -d and of the screen's `d` prompt, in seconds. */
#define DELAY_MIN_S 0.05
#define DELAY_MAX_S 86400.0

/* Can curses drive the terminal TERM names? false with the reason in why. */
bool term_usable(char *why, size_t n);

/* Returns the process exit status. */
int tui_run(struct pipeline *p, const struct tui_opts *o);

/* Set by the signal handlers main installs; the loop polls it. */
extern volatile int tui_stop_signal;

#endif
