/* `vbench report`: one self-contained report.html (charts inlined as PNG, no network fetch, a responsive page
 * that reads on a phone) and report.md (the same tables, the charts as files in charts/) from one or several
 * results databases, sections in the order of issue 15. */
#ifndef VB_REPORT_REPORT_HTML_H
#define VB_REPORT_REPORT_HTML_H

#include <stddef.h>

#include "util/error.h"

/* Reads the databases (read-only), writes DIR/report.html, DIR/report.md and DIR/charts/; progress on stderr
 * unless quiet. */
int vb_report_write(const char *const *paths, size_t n, const char *dir, int quiet, vb_error *err);

#endif
