/* The history of measured rates on this host: a small SQLite database under the cache directory
 * (history.sqlite in $VBENCH_CACHE, --cache-dir or /var/cache/vbench), written at the end of each campaign and
 * read by the runtime estimate (coordinator/estimate.c) and the disk preflight (coordinator/preflight.c), so that
 * the second campaign on a host is estimated from what the first one measured instead of from defaults.
 *
 * One row per engine and dataset shape of a finished campaign: rows/s of the bulk load, of the index build and
 * of the churn reinsert, QPS of the recall sweep (normalised to ef_search 100: time per query taken as
 * proportional to ef_search), of filtered search and of one concurrency client, and the server's bytes on disk
 * per row. A value not measured is NULL. */
#ifndef VB_COORDINATOR_HISTORY_H
#define VB_COORDINATOR_HISTORY_H

#include <sqlite3.h>
#include <stddef.h>

#include "config/profile.h"
#include "util/error.h"

typedef struct vb_history_rates {
    int found;                 /* a row matched: the values below are measured (0 where the row had NULL) */
    long dim, rows;            /* the shape they were measured at */
    double load_rows_s, build_rows_s, insert_rows_s, sweep_qps100, filtered_qps, client_qps, bytes_per_row;
    char recorded_at[32], campaign[64];   /* the newest of them */
    int n_runs;                /* how many campaigns the rates are the median of */
} vb_history_rates;

/* Rates are the median of the newest VB_HISTORY_RUNS campaigns at the chosen shape: one campaign that shared its
 * host with other work (rates a tenth of the usual, seen here) does not set the next estimate alone. */
#define VB_HISTORY_RUNS 5

/* The history file: DIR/history.sqlite, DIR = cache_dir, else $VBENCH_CACHE, else /var/cache/vbench. */
void vb_history_path(const char *cache_dir, char *buf, size_t len);
/* The measurements of `engine` at the dimension nearest to dim, then at the corpus size nearest to rows (as a
 * ratio; rows <= 0: any): per rate, the median of the newest VB_HISTORY_RUNS campaigns at that shape. Not found (or no history file): found = 0, VB_OK. A history file that
 * cannot be read is not an error for the estimate: it says so in err and returns VB_ERROR, and the caller goes on
 * with defaults. */
int vb_history_lookup(const char *cache_dir, const char *engine, long dim, long rows, vb_history_rates *out,
                      vb_error *err);
/* Bytes on disk per row as a line in the dimension, fixed + per_dim x dim (tuple headers, ids and graph links
 * do not grow with the dimension; the vector and its copies in the index and the log do), through the two
 * measured dimensions of `engine` nearest to dim (per dimension: the mean of its measurements). Sets dims[0..1]
 * and returns 1 when two dimensions were measured and they give a rising line whose fixed part is not negative;
 * 0 otherwise (the caller scales the nearest measurement by the dimension instead); -1 with err set when the
 * history cannot be read. */
int vb_history_bytes_line(const char *cache_dir, const char *engine, long dim, double *fixed, double *per_dim,
                          long dims[2], vb_error *err);
/* Filtered QPS at ef_search 100 for `engine` at `selectivity` under `predicate` (range when that predicate was
 * never measured), from the newest measurements at the dimension nearest to dim: log(QPS) interpolated linearly in
 * log(selectivity) between the two measured selectivities around it, the nearest one outside them. 1 when found. */
typedef struct vb_history_filtered_rate {
    double qps100;
    long dim, rows;        /* the shape it was measured at */
    double from_s[2];      /* the selectivities it comes from (equal: one measurement) */
} vb_history_filtered_rate;
int vb_history_filtered(const char *cache_dir, const char *engine, long dim, const char *predicate, double selectivity,
                        vb_history_filtered_rate *out);
/* Reads the rates a campaign measured from its results database and appends them (one row per engine and
 * dataset, and one per engine, dataset, predicate and selectivity filtered). cache_dir as above. Returns the number
 * of engine/dataset rows written, or -1 with err set. */
int vb_history_record(const char *cache_dir, sqlite3 *results, const vb_profile *p, vb_error *err);

#endif
