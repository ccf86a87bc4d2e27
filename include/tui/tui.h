/* SPDX-License-Identifier: GPL-2.0-or-later */
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

/* Begins setting the terminal up (the check of the terminal's type, terminfo read;
 * curses' screens: some 200 fresh pages for a 200x50 terminal) on a thread of its own,
 * so that it runs beside the first sample; tui_run waits for it. Nothing set up when
 * there is no terminal curses can drive: tui_run says so. Call it once, before the
 * pipeline is opened. */
void tui_prepare(void);

/* Gives the normal screen back after tui_prepare, for lines on stderr (a note, an error
 * before tui_run): tui_run's first frame takes the screen again. */
void tui_pause(void);

/* Returns the process exit status. */
int tui_run(struct pipeline *p, const struct tui_opts *o);

/* Set by the signal handlers main installs; the loop polls it. */
extern volatile int tui_stop_signal;

#endif
