/* Charts drawn by gnuplot: a chart is a generated gnuplot script plus a data file, written side by side into the
 * report's charts/ folder and run through gnuplot as a child process, once for an SVG and once for a PNG. Nothing
 * here draws: the caller says what to plot in gnuplot's own words, this module only keeps the data, the script
 * and the child. The .gp and .dat files stay beside the images, so anyone can redraw or restyle a chart. */
#ifndef VB_REPORT_CHARTS_H
#define VB_REPORT_CHARTS_H

#include <stddef.h>

#include "util/error.h"

typedef struct vb_chart vb_chart;

/* A chart named NAME (file stem: letters, digits, '-'), with a title (first line) and caption (second line). */
vb_chart *vb_chart_new(const char *name, const char *title, const char *caption);
void vb_chart_free(vb_chart *c);
/* One gnuplot command before the plot, e.g. vb_chart_cmd(c, "set logscale y"). */
void vb_chart_cmd(vb_chart *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Starts a new data block in the data file and returns its index (gnuplot's `index N`). */
int vb_chart_block(vb_chart *c);
/* One line of the current block: numbers (NaN for missing) and "quoted strings". */
void vb_chart_row(vb_chart *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* One plot clause; the data file is the gnuplot variable `data`, e.g. "data index 0 using 1:2 with lines". */
void vb_chart_plot(vb_chart *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Plot clauses so far (a chart with none is not drawn). */
size_t vb_chart_clauses(const vb_chart *c);
const char *vb_chart_name(const vb_chart *c);
const char *vb_chart_title(const vb_chart *c);
const char *vb_chart_caption(const vb_chart *c);

/* Writes DIR/NAME.dat and DIR/NAME.gp and runs gnuplot in DIR, which writes NAME.svg and NAME.png. The error
 * names the script and quotes gnuplot's own message; a missing gnuplot says which package to install. */
int vb_chart_render(const vb_chart *c, const char *dir, vb_error *err);
/* A gnuplot single-quoted string body: ' doubled. Returns out. */
char *vb_chart_quote(const char *s, char *out, size_t len);

#endif
