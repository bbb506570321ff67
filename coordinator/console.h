/* What the coordinator says on the terminal: sentences (say) and the running item's progress line, which a
 * sentence clears first so the two never interleave. On a terminal the progress line is rewritten in place at
 * most five times a second; elsewhere (a log, CI) a new line at most every ten seconds. --quiet silences both.
 * Every part of the run (agents, intake, limits, servers, plan state) speaks through one vb_console, so none of
 * them calls back into the event loop to print. Everything goes to stderr: stdout is for the result tables. */
#ifndef VB_COORDINATOR_CONSOLE_H
#define VB_COORDINATOR_CONSOLE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef struct vb_console {
    FILE *out;
    int quiet, tty;
    uint64_t last_print_ns;
    int active;                 /* an item runs: the progress line has something to say */
    char item[320];             /* "[3/36] dev/pgvector/synth/build" */
    char stage[64];
    uint64_t done, total;
    double rate;                /* the agent's: done over the stage's seconds so far */
    /* The stage's recent progress, one sample a second at most: the line shows the rate over the last minute, so a
     * rate that falls as the work goes on (a graph that grows on insert) is not hidden by its average since the
     * start, and neither is the ETA made from it. */
    struct { uint64_t t_ns, done; } recent[64];
    int n_recent, first_recent;
} vb_console;

/* Writes to out (stderr for the coordinator); tty: out is a terminal. */
void vb_console_init(vb_console *k, FILE *out, int quiet, int tty);
/* A sentence on a line of its own (a newline is added). */
void vb_console_say(vb_console *k, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Clears the progress line, before something else writes to the terminal. */
void vb_console_clear(vb_console *k);
/* Item seq (0-based) of n starts: the progress line names it, with no stage yet, and is printed at once. */
void vb_console_item(vb_console *k, int seq, size_t n, const char *key);
/* The running item's stage and counts (a Progress message); printed when due. */
void vb_console_progress(vb_console *k, const char *stage, uint64_t done, uint64_t total, double rate);
/* The same at time now_ns (vb_now_ns; tests give their own). */
void vb_console_progress_at(vb_console *k, const char *stage, uint64_t done, uint64_t total, double rate, uint64_t now_ns);
/* The rate the line shows: done per second over the last 60 s of the stage's samples, once they span 10 s;
 * before that, the agent's rate. */
double vb_console_rate(const vb_console *k);
/* No item runs: nothing more to show until the next vb_console_item. */
void vb_console_idle(vb_console *k);
/* Prints the progress line if an item runs and it is due (force: now). */
void vb_console_print_progress(vb_console *k, int force);

#endif
