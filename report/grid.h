/* A table read into memory, and what a reader does not need of it (`vbench show`'s text tables and the report's
 * tables). Reading a table before printing it lets the printer leave out the columns that carry nothing for this
 * campaign, each named in a note (vb_grid_fit):
 *   - a column with no value in any row ('-' everywhere);
 *   - X_min, X_max, X_ci_lo, X_ci_hi equal to X (or '-') in every row: a point run once, an interval not computed;
 *   - errors, short_answers, late_starts, shortfall_rows, fresh_never, zero_share at 0 in every row; repeats,
 *     builds and build (build_repeats) at 1;
 *   - dataset, clients, ef_search, queries or predicate with one value in every row: said once, in the context
 *     line (the title), instead of on every row;
 * and shortens a few long headers (short_answers -> short, ...). Cells are formatted by vb_report_cell. */
#ifndef VB_REPORT_GRID_H
#define VB_REPORT_GRID_H

#include <sqlite3.h>
#include <stddef.h>

typedef struct vb_grid {
    int cols, rows;
    char **name;          /* cols: the column names (shortened by vb_grid_fit) */
    char **cell;          /* rows x cols, formatted */
    unsigned char *num;   /* rows x cols: the value is a number */
    unsigned char *keep;  /* cols: shown (all 1 until vb_grid_fit) */
    int *w;               /* cols: the printer's widths (zero here) */
    size_t cap;
} vb_grid;

/* The columns of st, after a leading column named lead (NULL: none), and no rows yet. 0, or -1 out of memory. */
int vb_grid_begin(vb_grid *g, sqlite3_stmt *st, const char *lead);
/* Steps st to its end, adding a row per result row (lead_value in the leading column, when there is one). Returns
 * SQLITE_DONE, another SQLite code when a step failed, or -1 out of memory. */
int vb_grid_add_rows(vb_grid *g, sqlite3_stmt *st, const char *lead_value);
/* Both, without a leading column: 0, or -1 (out of memory or a failed step). */
int vb_grid_read(vb_grid *g, sqlite3_stmt *st, const char *unused);
const char *vb_grid_at(const vb_grid *g, int row, int col);
/* Leaves out and renames as the head of this file says; notes gets what was left out and why ("0 in every row:
 * errors; ..."), context what every row shares ("dataset synth, clients 1"). Both NUL-terminated, "" if none. */
void vb_grid_fit(vb_grid *g, char *notes, size_t notes_len, char *context, size_t context_len);
/* The shown columns in parts of at most `budget` wide (w[c] + gap per column, in the caller's units: characters for
 * show, estimated pixels for the report), each part beginning with the row's key: the first shown column (the
 * series) and what tells rows apart that follows it (run, clients, ef_search, selectivity, predicate, ...). Calls
 * part(mask, arg) per part, mask[c] set for its columns; returns the number of parts. One part when it all fits. */
int vb_grid_parts(const vb_grid *g, const int *w, int gap, int budget, void (*part)(const unsigned char *mask, void *arg),
                  void *arg);
void vb_grid_free(vb_grid *g);

#endif
