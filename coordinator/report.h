/* Reading a results database back for people (`vbench show`, `vbench status`) and for programs (`show --json`).
 * The tables are SQL over the views in results.db/schema.sql: one query per table, the same rows in both forms. */
#ifndef VB_COORDINATOR_REPORT_H
#define VB_COORDINATOR_REPORT_H

#include <sqlite3.h>
#include <stdio.h>

#include "util/error.h"

/* All tables: human-readable text, or one JSON object with an array per table. */
int vb_report_show(sqlite3 *db, FILE *out, int json, vb_error *err);
/* Campaign state: status, items per status, running item, failures, the last events. */
int vb_report_status(sqlite3 *db, FILE *out, vb_error *err);

#endif
