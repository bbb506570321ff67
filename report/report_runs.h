/* The runs one report covers (one results database each) and what every part of the report shares about them:
 * the label that names a series, and the comparison of runs before they are drawn side by side. */
#ifndef VB_REPORT_REPORT_RUNS_H
#define VB_REPORT_REPORT_RUNS_H

#include <limits.h>
#include <sqlite3.h>
#include <stddef.h>

#include "report/charts.h"
#include "store/store.h"
#include "util/error.h"

typedef struct vb_report_run {
    char name[128]; /* the campaign's name, made unique across the runs ("dev", "dev#2") */
    char path[PATH_MAX];
    vb_store *store;
    sqlite3 *db;
} vb_report_run;

typedef struct vb_report_set {
    vb_report_run *runs;
    size_t n;
    char mismatch[4096]; /* "" when the runs are comparable; else what differs, one clause per difference */
    char mismatch_what[256]; /* the same, short: "dataset content hash, k" */
    const char *dir;     /* the report folder; charts go to DIR/charts */
    int quiet;
    vb_chart **charts; /* drawn so far, in order */
    size_t n_charts;
} vb_report_set;

/* The columns that name a series, in order: the first that exist in a table are joined with '/'. This is the one
 * place to add a configuration label (issue 14): results are grouped by every one of them, never by engine alone. */
#define VB_REPORT_LABEL_COLUMNS {"engine", "config", "variant"}

/* SQL with every "{label}" replaced by the label expression for TABLE (a table or view) in DB; malloc'd. */
char *vb_report_sql(sqlite3 *db, const char *table, const char *sql);
/* A series' name: the label, prefixed by the run's name when the report has several runs. */
void vb_report_series(const vb_report_set *rs, size_t run, const char *label, char *out, size_t len);
/* Fills rs->mismatch: dataset content hash, k, budget and engine versions compared against the first run. */
void vb_report_compare(vb_report_set *rs);

/* The charts of one section ("recall", "build", "concurrency", "filtered", "churn", "server"), drawn into
 * DIR/charts and appended to rs->charts; *first is the index of the section's first chart. */
int vb_report_charts(vb_report_set *rs, const char *section, size_t *first, vb_error *err);

#endif
