/* Reading a results database back for people (`vbench show`, `vbench status`) and for programs (`show --json`).
 * The tables are SQL over the views in store/schema.sql: one query per table, the same rows in both forms. */
#ifndef VB_REPORT_SHOW_H
#define VB_REPORT_SHOW_H

#include <sqlite3.h>
#include <stdio.h>

#include "store/lock.h"
#include "util/error.h"

/* All tables: human-readable text, or one JSON object with an array per table. */
int vb_report_show(sqlite3 *db, FILE *out, int json, vb_error *err);
/* The same, and with windows != 0 every concurrency window too (`show --windows`: table concurrency_windows,
 * one row per repeat; the concurrency tables give one row per point, the median over its repeats). */
int vb_report_show_with(sqlite3 *db, FILE *out, int json, int windows, vb_error *err);
/* The same with every option: wide != 0 shows every column of the text tables as it is; by default they fit 120
 * columns, the columns that carry nothing for this campaign named in a note under each table (show.c). recall: the
 * table recall_distribution in text too (show --json always has it: every measured point's mean, min, p1, p10, p50,
 * zero and below-0.5 shares of per-query recall); worst > 0: the `worst` hardest queries of every measured point by
 * query index and recall (table worst_queries), saying which points kept no per-query answers. */
typedef struct vb_show_opts {
    int json, windows, wide, recall;
    long worst;
} vb_show_opts;
int vb_report_show_opts(sqlite3 *db, FILE *out, const vb_show_opts *o, vb_error *err);
/* Campaign state: status, items per status, running item, failures, the last events. holder (lock.h, from
 * vb_lock_probe of path) says whether a coordinator runs it: a campaign whose status says running but whose
 * lock nobody holds stopped without finishing, and is shown so, with the resume command. */
int vb_report_status(sqlite3 *db, const char *path, const vb_lock_holder *holder, FILE *out, vb_error *err);

/* One cell as the tables show it: NULL as '-', rates whole, recall with 4 decimals, other reals with 3. */
void vb_report_cell(sqlite3_stmt *st, int i, char *buf, size_t len);

#endif
