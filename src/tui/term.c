/* SPDX-License-Identifier: GPL-2.0-or-later */
/* tui/term.c: whether curses can drive the terminal at all (tui/tui.h). Apart from the
 * rest of the screen code because <term.h> defines macros (lines, columns...) that would
 * leak into it. */
#define _XOPEN_SOURCE_EXTENDED 1
#include <curses.h>
#include <stdio.h>
#include <stdlib.h>
#include <term.h>
#include <unistd.h>

#include "tui/tui.h"

/* Can curses drive this terminal? newterm() instead of initscr(), which would print its
 * own message and exit; a terminal without cursor addressing (TERM=dumb) cannot show a
 * screen at all. */
bool term_usable(char *why, size_t n)
{
    const char *term = getenv("TERM");
    if (!term || !term[0]) {
        snprintf(why, n, "TERM is not set");
        return false;
    }
    int err = 0;
    if (setupterm(term, STDOUT_FILENO, &err) != OK) {
        snprintf(why, n, "the terminal type '%.40s' is unknown here", term);
        return false;
    }
    bool ok = tigetstr("cup") != NULL && tigetstr("cup") != (char *)-1;
    del_curterm(cur_term);
    if (!ok)
        snprintf(why, n, "the terminal type '%.40s' cannot move the cursor", term);
    return ok;
}
