/* SQL rows as JSON through jansson: the one path by which vbench writes JSON (show --json, export json). */
#ifndef VB_REPORT_JSON_ROWS_H
#define VB_REPORT_JSON_ROWS_H

#include <jansson.h>
#include <sqlite3.h>

/* The current row of st as an object keyed by column name (NULL -> null, integers, reals, text). */
json_t *vb_json_row(sqlite3_stmt *st);
/* Every row of SQL as an array of objects; NULL (with errmsg's text in *why) when SQL cannot be run. */
json_t *vb_json_rows(sqlite3 *db, const char *sql, const char **why);

#endif
