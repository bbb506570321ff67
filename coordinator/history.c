/* The history database of measured rates (coordinator/history.h). */
#include "coordinator/history.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "datasets/shape.h"
#include "util/fs.h"

static const char *const schema =
    "CREATE TABLE IF NOT EXISTS measured ("
    " engine TEXT NOT NULL, dataset TEXT NOT NULL, dim INTEGER NOT NULL, rows INTEGER NOT NULL,"
    " campaign TEXT, recorded_at TEXT NOT NULL,"
    " load_rows_s REAL, build_rows_s REAL, insert_rows_s REAL, sweep_qps100 REAL, filtered_qps REAL,"
    " client_qps REAL, bytes_per_row REAL);"
    /* filtered QPS per predicate and selectivity: it falls steeply with the selectivity on an engine whose search
     * goes on until it has enough rows (MariaDB at 1 %: 16x the estimate from one rate, coordinator/calibrate.h) */
    "CREATE TABLE IF NOT EXISTS measured_filtered ("
    " engine TEXT NOT NULL, dataset TEXT NOT NULL, dim INTEGER NOT NULL, rows INTEGER NOT NULL,"
    " campaign TEXT, recorded_at TEXT NOT NULL, predicate TEXT NOT NULL, selectivity REAL NOT NULL,"
    " qps100 REAL NOT NULL);";

void vb_history_path(const char *cache_dir, char *buf, size_t len) {
    const char *env = getenv("VBENCH_CACHE");
    const char *dir = cache_dir && *cache_dir ? cache_dir : env && *env ? env : "/var/cache/vbench";
    snprintf(buf, len, "%s/history.sqlite", dir);
}

static int open_history(const char *cache_dir, int create, sqlite3 **db, vb_error *err) {
    char path[PATH_MAX];
    vb_history_path(cache_dir, path, sizeof path);
    if (create) {
        char dir[PATH_MAX];
        snprintf(dir, sizeof dir, "%s", path);
        char *slash = strrchr(dir, '/');
        if (slash) *slash = '\0';
        vb_error mk;   /* a directory that cannot be made: the open below names the file */
        vb_mkdirs(dir, 0755, &mk);
    }
    int flags = create ? SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE : SQLITE_OPEN_READONLY;
    if (sqlite3_open_v2(path, db, flags, NULL) != SQLITE_OK) {
        vb_error_set(err, "history", 1, "%s: %s", path, *db ? sqlite3_errmsg(*db) : "cannot open");
        sqlite3_close(*db);
        *db = NULL;
        return VB_ERROR;
    }
    sqlite3_busy_timeout(*db, 5000);
    char *msg = NULL;
    if (create && sqlite3_exec(*db, schema, NULL, NULL, &msg) != SQLITE_OK) {
        vb_error_set(err, "history", 1, "%s: %s", path, msg ? msg : "schema");
        sqlite3_free(msg);
        sqlite3_close(*db);
        *db = NULL;
        return VB_ERROR;
    }
    return VB_OK;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* The median of n values (sorted in place); 0 when n = 0. */
static double median(double *v, int n) {
    if (n <= 0) return 0;
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int vb_history_lookup(const char *cache_dir, const char *engine, long dim, long rows, vb_history_rates *out,
                      vb_error *err) {
    memset(out, 0, sizeof *out);
    char path[PATH_MAX];
    vb_history_path(cache_dir, path, sizeof path);
    struct stat st;
    if (stat(path, &st) != 0) return VB_OK;   /* no campaign recorded on this host yet */
    sqlite3 *db = NULL;
    if (open_history(cache_dir, 0, &db, err)) return VB_ERROR;
    sqlite3_stmt *q = NULL;
    int rc = sqlite3_prepare_v2(db,
                                "SELECT dim, rows, load_rows_s, build_rows_s, insert_rows_s, sweep_qps100, filtered_qps,"
                                " client_qps, bytes_per_row, recorded_at, campaign FROM measured WHERE engine = ?"
                                " ORDER BY abs(dim - ?2), CASE WHEN ?3 <= 0 OR rows <= 0 THEN 0 WHEN rows > ?3"
                                " THEN rows * 1.0 / ?3 ELSE ?3 * 1.0 / rows END, recorded_at DESC, rowid DESC"
                                " LIMIT 64",
                                -1, &q, NULL);
    if (rc != SQLITE_OK) {
        vb_error_set(err, "history", 1, "%s: %s", path, sqlite3_errmsg(db));
        sqlite3_close(db);
        return VB_ERROR;
    }
    sqlite3_bind_text(q, 1, engine, -1, SQLITE_STATIC);
    sqlite3_bind_int64(q, 2, dim);
    sqlite3_bind_int64(q, 3, rows);
    /* The newest VB_HISTORY_RUNS campaigns at the best shape: per rate, the median of those that measured it */
    double vals[7][VB_HISTORY_RUNS];
    int nv[7] = {0};
    while (out->n_runs < VB_HISTORY_RUNS && sqlite3_step(q) == SQLITE_ROW) {
        if (!out->found) {
            out->found = 1;
            out->dim = sqlite3_column_int64(q, 0);
            out->rows = sqlite3_column_int64(q, 1);
            snprintf(out->recorded_at, sizeof out->recorded_at, "%s", (const char *)sqlite3_column_text(q, 9));
            const unsigned char *c = sqlite3_column_text(q, 10);
            snprintf(out->campaign, sizeof out->campaign, "%s", c ? (const char *)c : "");
        } else if (sqlite3_column_int64(q, 0) != out->dim || sqlite3_column_int64(q, 1) != out->rows) {
            break;   /* the next shape: farther away */
        }
        out->n_runs++;
        for (int i = 0; i < 7; i++)
            if (sqlite3_column_double(q, 2 + i) > 0) vals[i][nv[i]++] = sqlite3_column_double(q, 2 + i);
    }
    double *v[] = {&out->load_rows_s, &out->build_rows_s, &out->insert_rows_s, &out->sweep_qps100,
                   &out->filtered_qps, &out->client_qps, &out->bytes_per_row};
    for (int i = 0; i < 7; i++) *v[i] = median(vals[i], nv[i]);
    sqlite3_finalize(q);
    sqlite3_close(db);
    return VB_OK;
}

int vb_history_filtered(const char *cache_dir, const char *engine, long dim, const char *predicate, double selectivity,
                        vb_history_filtered_rate *out) {
    memset(out, 0, sizeof *out);
    char path[PATH_MAX];
    vb_history_path(cache_dir, path, sizeof path);
    struct stat st;
    vb_error err;
    sqlite3 *db = NULL;
    if (selectivity <= 0 || stat(path, &st) != 0 || open_history(cache_dir, 0, &db, &err)) return 0;
    /* the newest measurement of each selectivity at the nearest dimension, the predicate's own first */
    sqlite3_stmt *q = NULL;
    if (sqlite3_prepare_v2(db,
                           "SELECT dim, rows, selectivity, qps100 FROM measured_filtered AS m WHERE engine = ?1"
                           " AND dim = (SELECT dim FROM measured_filtered WHERE engine = ?1 ORDER BY abs(dim - ?2) LIMIT 1)"
                           " AND predicate = COALESCE((SELECT predicate FROM measured_filtered WHERE engine = ?1"
                           "   AND predicate = ?3 LIMIT 1), 'range')"
                           " AND rowid = (SELECT rowid FROM measured_filtered AS n WHERE n.engine = m.engine"
                           "   AND n.dim = m.dim AND n.predicate = m.predicate AND n.selectivity = m.selectivity"
                           "   ORDER BY recorded_at DESC, rowid DESC LIMIT 1)"
                           " ORDER BY selectivity",
                           -1, &q, NULL) != SQLITE_OK) {
        sqlite3_close(db);
        return 0;
    }
    sqlite3_bind_text(q, 1, engine, -1, SQLITE_STATIC);
    sqlite3_bind_int64(q, 2, dim);
    sqlite3_bind_text(q, 3, predicate ? predicate : "range", -1, SQLITE_STATIC);
    /* the two measured selectivities around the wanted one: log(QPS) linear in log(selectivity) between them;
     * outside the measured range, the nearest */
    double lo_s = 0, lo_q = 0, hi_s = 0, hi_q = 0;
    long d = 0, rows = 0;
    while (sqlite3_step(q) == SQLITE_ROW) {
        double s = sqlite3_column_double(q, 2), v = sqlite3_column_double(q, 3);
        if (v <= 0 || s <= 0) continue;
        d = sqlite3_column_int64(q, 0), rows = sqlite3_column_int64(q, 1);
        if (s <= selectivity) lo_s = s, lo_q = v;
        else if (hi_s == 0) hi_s = s, hi_q = v;
    }
    sqlite3_finalize(q);
    sqlite3_close(db);
    if (lo_s == 0 && hi_s == 0) return 0;
    out->dim = d, out->rows = rows;
    if (lo_s > 0 && hi_s > 0 && hi_s > lo_s) {
        double t = (log(selectivity) - log(lo_s)) / (log(hi_s) - log(lo_s));
        out->qps100 = exp(log(lo_q) + t * (log(hi_q) - log(lo_q)));
        out->from_s[0] = lo_s, out->from_s[1] = hi_s;
    } else {
        out->qps100 = lo_s > 0 ? lo_q : hi_q;
        out->from_s[0] = out->from_s[1] = lo_s > 0 ? lo_s : hi_s;
    }
    return 1;
}

int vb_history_bytes_line(const char *cache_dir, const char *engine, long dim, double *fixed, double *per_dim,
                          long dims[2], vb_error *err) {
    *fixed = *per_dim = 0;
    dims[0] = dims[1] = 0;
    char path[PATH_MAX];
    vb_history_path(cache_dir, path, sizeof path);
    struct stat st;
    if (stat(path, &st) != 0) return 0;
    sqlite3 *db = NULL;
    if (open_history(cache_dir, 0, &db, err)) return -1;
    sqlite3_stmt *q = NULL;
    if (sqlite3_prepare_v2(db,
                           "SELECT dim, avg(bytes_per_row) FROM measured WHERE engine = ?1 AND bytes_per_row > 0"
                           " GROUP BY dim ORDER BY abs(dim - ?2), dim LIMIT 2",
                           -1, &q, NULL) != SQLITE_OK) {
        vb_error_set(err, "history", 1, "%s: %s", path, sqlite3_errmsg(db));
        sqlite3_close(db);
        return -1;
    }
    sqlite3_bind_text(q, 1, engine, -1, SQLITE_STATIC);
    sqlite3_bind_int64(q, 2, dim);
    double bytes[2];
    int n = 0;
    while (n < 2 && sqlite3_step(q) == SQLITE_ROW) {
        dims[n] = sqlite3_column_int64(q, 0);
        bytes[n++] = sqlite3_column_double(q, 1);
    }
    sqlite3_finalize(q);
    sqlite3_close(db);
    if (n < 2) return 0;
    *per_dim = (bytes[1] - bytes[0]) / (double)(dims[1] - dims[0]);
    *fixed = bytes[0] - *per_dim * (double)dims[0];
    return *per_dim > 0 && *fixed >= 0;
}

/* Only the results of items that finished as planned go into the history: a failed item (its server hung or died,
 * its numbers are about a dying server) or one stopped at a limit other than the reinsert's would teach the next
 * estimate a rate nobody can expect. The reinsert's own limit (expired) is a measurement of its rate. */
#define DONE " AND item_key IN (SELECT key FROM plan WHERE status = 'done')"
#define DONE_OR_LIMIT " AND item_key IN (SELECT key FROM plan WHERE status IN ('done', 'expired'))"

/* One value from the results database for (engine, dataset); 0 when NULL or absent. A result row names its
 * configuration in config ("pgvector[variant=halfvec]"; NULL in an older file) and its adapter in engine: a
 * matrix's configurations were never recorded when the queries below matched engine alone. */
static double one(sqlite3 *r, const char *sql, const char *engine, const char *dataset) {
    sqlite3_stmt *q = NULL;
    double v = 0;
    if (sqlite3_prepare_v2(r, sql, -1, &q, NULL) != SQLITE_OK) return 0;
    sqlite3_bind_text(q, 1, engine, -1, SQLITE_STATIC);
    sqlite3_bind_text(q, 2, dataset, -1, SQLITE_STATIC);
    if (sqlite3_step(q) == SQLITE_ROW) v = sqlite3_column_double(q, 0);
    sqlite3_finalize(q);
    return v;
}

/* The six columns measured and measured_filtered begin with (the schema above): what was measured at which shape,
 * by which campaign, when. */
typedef struct measured_key {
    const char *engine, *dataset;
    sqlite3_int64 dim, rows;
    const char *campaign, *recorded_at;
} measured_key;

/* Binds k to ?1 .. ?6 of s (reset first); a table's own columns follow from ?7. */
static void bind_key(sqlite3_stmt *s, const measured_key *k) {
    sqlite3_reset(s);
    sqlite3_bind_text(s, 1, k->engine, -1, SQLITE_STATIC);
    sqlite3_bind_text(s, 2, k->dataset, -1, SQLITE_STATIC);
    sqlite3_bind_int64(s, 3, k->dim);
    sqlite3_bind_int64(s, 4, k->rows);
    sqlite3_bind_text(s, 5, k->campaign, -1, SQLITE_STATIC);
    sqlite3_bind_text(s, 6, k->recorded_at, -1, SQLITE_STATIC);
}

int vb_history_record(const char *cache_dir, sqlite3 *r, const vb_profile *p, vb_error *err) {
    sqlite3 *db = NULL;
    if (open_history(cache_dir, 1, &db, err)) return -1;
    sqlite3_stmt *ins = NULL, *fi = NULL;
    if (sqlite3_prepare_v2(db, "INSERT INTO measured VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)", -1, &ins, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(db, "INSERT INTO measured_filtered VALUES (?,?,?,?,?,?,?,?,?)", -1, &fi, NULL) != SQLITE_OK) {
        vb_error_set(err, "history", 1, "%s", sqlite3_errmsg(db));
        sqlite3_finalize(ins);
        sqlite3_close(db);
        return -1;
    }
    char now[32];
    time_t t = time(NULL);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(now, sizeof now, "%Y-%m-%dT%H:%M:%SZ", &tm);
    int written = 0;
    sqlite3_exec(db, "BEGIN", NULL, NULL, NULL);
    for (size_t d = 0; d < p->n_datasets; d++) {
        vb_dataset_shape sh;
        vb_error serr;
        if (vb_dataset_shape_of(p->datasets[d].params, p->datasets[d].n_params, cache_dir, &sh, &serr)) continue;
        for (size_t e = 0; e < p->n_engines; e++) {
            const char *en = p->engines[e].name, *ds = p->datasets[d].name;
            double rows = one(r, "SELECT max(rows) FROM build_result WHERE COALESCE(config, engine) = ?1 AND dataset = ?2" DONE, en, ds);
            if (rows <= 0) continue;   /* this engine did not build here: nothing measured */
            double load_s = one(r, "SELECT avg(load_s) FROM build_result WHERE COALESCE(config, engine) = ?1 AND dataset = ?2" DONE, en, ds);
            double build_s = one(r, "SELECT avg(build_s) FROM build_result WHERE COALESCE(config, engine) = ?1 AND dataset = ?2" DONE, en, ds);
            double v[7] = {
                load_s > 0 ? rows / load_s : 0,
                build_s > 0 ? rows / build_s : 0,
                one(r, "SELECT sum(rows_done - coalesce(rows_from, 0)) / sum(seconds) FROM churn_result"
                       " WHERE COALESCE(config, engine) = ?1 AND dataset = ?2 AND stage = 'reinsert' AND seconds > 0" DONE_OR_LIMIT, en, ds),
                one(r, "SELECT avg(qps * ef_search / 100.0) FROM sweep_result WHERE COALESCE(config, engine) = ?1 AND dataset = ?2 AND clients = 1"
                       " AND qps > 0" DONE, en, ds),
                one(r, "SELECT avg(qps) FROM filtered_result WHERE COALESCE(config, engine) = ?1 AND dataset = ?2 AND qps > 0" DONE, en, ds),
                one(r, "SELECT avg(qps) FROM window_result WHERE COALESCE(config, engine) = ?1 AND dataset = ?2 AND clients = 1" DONE, en,
                    ds),
                0,
            };
            /* Bytes per row of the data itself: the engine's table and index after the build. The server's whole
             * data directory also holds a part that does not grow with the rows (PostgreSQL's WAL up to
             * max_wal_size, catalogs: 196 of 338 MB after smoke's 100k x 128 build), which preflight adds once
             * (VB_ESTIMATE_SERVER_FIXED_BYTES); divided by the rows and scaled to dbpedia's 1536 dimensions it
             * made pgvector's 990k rows need 42 GiB instead of about 18. A server whose directory stays smaller
             * than its table and index keeps them in memory (Valkey: 0 bytes on disk, 226 MB in memory): the
             * directory then. The server is named after the entry: a matrix's configurations share it. */
            double data = one(r, "SELECT max(coalesce(index_bytes, 0) + coalesce(table_bytes, 0)) FROM build_result"
                                  " WHERE COALESCE(config, engine) = ?1 AND dataset = ?2" DONE, en, ds);
            /* -1: no data directory measured (an engine without a server) */
            double dir = one(r, "SELECT coalesce(max(bytes), -1) FROM server_size WHERE engine = ?1 AND path = 'total'",
                             p->engines[e].entry, ds);
            if (dir >= 0 && (data <= 0 || dir < data)) data = dir;
            v[6] = data / rows;
            const measured_key key = {en, ds, (sqlite3_int64)sh.dim, (sqlite3_int64)rows, p->name, now};
            bind_key(ins, &key);
            for (int i = 0; i < 7; i++) {
                if (v[i] > 0) sqlite3_bind_double(ins, 7 + i, v[i]);
                else sqlite3_bind_null(ins, 7 + i);
            }
            if (sqlite3_step(ins) == SQLITE_DONE) written++;
            /* per predicate and selectivity, normalised to ef_search 100 as the sweep's rate is */
            sqlite3_stmt *fq = NULL;
            if (sqlite3_prepare_v2(r, "SELECT COALESCE(predicate, 'range'), selectivity, avg(qps * ef_search / 100.0)"
                                      " FROM filtered_result WHERE COALESCE(config, engine) = ?1 AND dataset = ?2"
                                      " AND qps > 0" DONE " GROUP BY 1, 2", -1, &fq, NULL) == SQLITE_OK) {
                sqlite3_bind_text(fq, 1, en, -1, SQLITE_STATIC);
                sqlite3_bind_text(fq, 2, ds, -1, SQLITE_STATIC);
                while (sqlite3_step(fq) == SQLITE_ROW) {
                    bind_key(fi, &key);
                    sqlite3_bind_text(fi, 7, (const char *)sqlite3_column_text(fq, 0), -1, SQLITE_TRANSIENT);
                    sqlite3_bind_double(fi, 8, sqlite3_column_double(fq, 1));
                    sqlite3_bind_double(fi, 9, sqlite3_column_double(fq, 2));
                    sqlite3_step(fi);
                }
            }
            sqlite3_finalize(fq);
        }
    }
    sqlite3_exec(db, "COMMIT", NULL, NULL, NULL);
    sqlite3_finalize(ins);
    sqlite3_finalize(fi);
    sqlite3_close(db);
    return written;
}
