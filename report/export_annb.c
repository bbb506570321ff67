/* ann-benchmarks export (export_annb.h).
 *
 * One HDF5 file per recall-sweep row that kept its answers: DIR/results/DATASET/K/ALGO/NAME.hdf5, where DATASET is
 * the dataset's name, ALGO the series label (engine, and configuration where the database has one; a '/' in either
 * becomes '_') and NAME the engine's parameters and ef_search (and the build, for a configuration built several
 * times: build_repeats, each build its own file, so ann-benchmarks' plot shows the spread across builds), reduced to
 * [A-Za-z0-9_] as ann-benchmarks names its files. What ann-benchmarks reads (its
 * results.py load_all_results, plotting/utils.py compute_metrics*, plotting/metrics.py), with its types:
 *   datasets  times (float32, queries): seconds per query; neighbors (int32, queries x k), -1 where the answer was
 *             short; distances (float32, queries x k) in the dataset's metric, +inf where short;
 *   attrs     algo, name, dataset, distance (UTF-8 strings), count, run_count (integers), build_time,
 *             best_search_time, candidates, index_size (floats), batch_mode, expect_extra (booleans, stored as
 *             h5py stores numpy bools: an enum of int8 FALSE = 0, TRUE = 1, so `batch_mode != False` is False).
 * Mapping from vbench: build_time = load_s + build_s of the engine's build (an engine that builds while rows
 * arrive spends its build in load_s); index_size = index_bytes / 1024 (ann-benchmarks plots kB), absent when the
 * engine cannot say; best_search_time = the mean of the per-query times (ann-benchmarks' definition: the sum of
 * query times / queries, one run), so 1 / best_search_time may differ from vbench's qps, which is queries over the
 * wall time of the run; candidates = mean rows returned. vbench's own numbers ride along as vbench_* attributes.
 * Distances are the ones vbench recomputed (datasets/distance.h: angular is 1 - cos, euclidean is not squared,
 * as ann-benchmarks' distance functions). */
#include "report/export_annb.h"

#include <errno.h>
#include <hdf5.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "report/report_runs.h"
#include "datasets/distance.h"
#include "util/fs.h"

int vb_export_annb_available(sqlite3 *db) {
    sqlite3_stmt *st;
    int have = 0;
    if (sqlite3_prepare_v2(db, "SELECT COUNT(*) FROM sweep_result WHERE answers IS NOT NULL", -1, &st, NULL) == SQLITE_OK) {
        if (sqlite3_step(st) == SQLITE_ROW) have = sqlite3_column_int(st, 0) > 0;
        sqlite3_finalize(st);
    }
    return have;
}

static uint32_t get_u32(const unsigned char *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static float get_f32(const unsigned char *p) {
    uint32_t v = get_u32(p);
    float f;
    memcpy(&f, &v, sizeof f);
    return f;
}

/* A path component: every run of characters outside [A-Za-z0-9_] becomes one '_', none at either end. */
static void sanitize(const char *in, char *out, size_t len) {
    size_t o = 0;
    int gap = 0;
    for (const char *p = in; *p && o + 2 < len; p++) {
        int word = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '_';
        if (!word) {
            gap = 1;
            continue;
        }
        if (gap && o > 0) out[o++] = '_';
        gap = 0;
        out[o++] = *p;
    }
    out[o] = '\0';
    if (o == 0) snprintf(out, len, "run");
}

/* A folder name as given (ann-benchmarks' results/glove-100-angular/10/hnswlib), except '/' (and a leading '.',
 * which would make "." or ".."), which become '_'. */
static void path_part(const char *in, char *out, size_t len) {
    snprintf(out, len, "%s", in && *in ? in : "unnamed");
    for (char *p = out; *p; p++)
        if (*p == '/' || (p == out && *p == '.')) *p = '_';
}

/* The engine's parameters from the resolved profile, "m=16,ef_construction=128" ("" when it has none). */
static void engine_params(sqlite3 *db, const char *engine, char *out, size_t len) {
    out[0] = '\0';
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db,
            "SELECT p.key, p.value FROM manifest AS m, json_each(m.value, '$.engines') AS e, "
            "json_each(e.value, '$.params') AS p WHERE m.key = 'profile.resolved' AND e.value ->> '$.name' = ?1 "
            "ORDER BY p.id", -1, &st, NULL) != SQLITE_OK)
        return;
    sqlite3_bind_text(st, 1, engine, -1, SQLITE_STATIC);
    size_t o = 0;
    while (sqlite3_step(st) == SQLITE_ROW && o < len) {
        int n = snprintf(out + o, len - o, "%s%s=%s", o ? "," : "", (const char *)sqlite3_column_text(st, 0),
                         sqlite3_column_text(st, 1) ? (const char *)sqlite3_column_text(st, 1) : "");
        if (n < 0 || (size_t)n >= len - o) break;
        o += (size_t)n;
    }
    sqlite3_finalize(st);
}

static herr_t attr_write(hid_t f, const char *name, hid_t type, const void *v) {
    hid_t sp = H5Screate(H5S_SCALAR);
    hid_t a = sp >= 0 ? H5Acreate2(f, name, type, sp, H5P_DEFAULT, H5P_DEFAULT) : -1;
    herr_t rc = a >= 0 ? H5Awrite(a, type, v) : -1;
    if (a >= 0) H5Aclose(a);
    if (sp >= 0) H5Sclose(sp);
    return rc;
}

static herr_t attr_str(hid_t f, const char *name, const char *s) {
    hid_t t = H5Tcopy(H5T_C_S1);   /* variable-length UTF-8: h5py reads it as str, not bytes */
    H5Tset_size(t, H5T_VARIABLE);
    H5Tset_cset(t, H5T_CSET_UTF8);
    herr_t rc = attr_write(f, name, t, &s);
    H5Tclose(t);
    return rc;
}

static herr_t attr_bool(hid_t f, const char *name, int v) {
    hid_t t = H5Tenum_create(H5T_NATIVE_INT8);   /* h5py's numpy.bool_ */
    int8_t no = 0, yes = 1, val = v ? 1 : 0;
    H5Tenum_insert(t, "FALSE", &no);
    H5Tenum_insert(t, "TRUE", &yes);
    herr_t rc = attr_write(f, name, t, &val);
    H5Tclose(t);
    return rc;
}

static herr_t dataset_write(hid_t f, const char *name, hid_t file_type, hid_t mem_type, int rank,
                            const hsize_t *dims, const void *data) {
    hid_t sp = H5Screate_simple(rank, dims, NULL);
    hid_t d = sp >= 0 ? H5Dcreate2(f, name, file_type, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT) : -1;
    herr_t rc = d >= 0 ? H5Dwrite(d, mem_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data) : -1;
    if (d >= 0) H5Dclose(d);
    if (sp >= 0) H5Sclose(sp);
    return rc;
}

typedef struct annb_row {
    const char *result_key, *dataset, *label, *engine;
    int ef_search;
    int build;                      /* the build the row searched; 0: the configuration was built once */
    long long queries;
    double recall, qps, build_time; /* build_time < 0: no build recorded */
    long long index_bytes;          /* < 0: unknown */
    const unsigned char *blob;
    size_t blob_len;
} annb_row;

/* Writes one file; err names the result and the file. */
static int write_one(sqlite3 *db, const char *dir, const annb_row *r, int quiet, vb_error *err) {
    const unsigned char *b = r->blob;
    if (r->blob_len < 16 || memcmp(b, "VBA1", 4) != 0)
        return vb_error_set(err, "export", 1, "sweep_result %s: answers are not a vbench answers blob (%zu bytes, "
                            "no 'VBA1' header)", r->result_key, r->blob_len);
    uint32_t nq = get_u32(b + 4), k = get_u32(b + 8), metric = get_u32(b + 12);
    if (k == 0 || k > 100000 || nq == 0 || (uint64_t)r->blob_len != 16 + (uint64_t)nq * (4 + 8 * (uint64_t)k) ||
        metric > VB_METRIC_DOT)
        return vb_error_set(err, "export", 1, "sweep_result %s: answers blob of %zu bytes does not match its header "
                            "(%u queries, k %u, metric %u)", r->result_key, r->blob_len, nq, k, metric);
    if (r->queries >= 0 && (long long)nq != r->queries)
        return vb_error_set(err, "export", 1, "sweep_result %s: answers for %u queries, the row says %lld",
                            r->result_key, nq, r->queries);

    char params[1024], name[1300], file_name[200], ds[200], algo[200], path[PATH_MAX], folder[PATH_MAX - 256];
    engine_params(db, r->engine, params, sizeof params);
    char build[32] = "";
    if (r->build > 0) snprintf(build, sizeof build, ",build=%d", r->build);
    snprintf(name, sizeof name, "%s(%s%sef_search=%d%s)", r->label, params, *params ? "," : "", r->ef_search, build);
    char stem[1300];
    snprintf(stem, sizeof stem, "%s,ef_search=%d%s", params, r->ef_search, build);
    sanitize(stem, file_name, sizeof file_name);
    path_part(r->dataset, ds, sizeof ds);
    path_part(r->label, algo, sizeof algo);
    if ((size_t)snprintf(folder, sizeof folder, "%s/results/%s/%u/%s", dir, ds, k, algo) >= sizeof folder)
        return vb_error_set(err, "export", ENAMETOOLONG, "%s: the output folder's path is too long", dir);
    if (vb_mkdirs(folder, 0755, err)) return VB_ERROR;
    snprintf(path, sizeof path, "%s/%s.hdf5", folder, file_name);

    float *times = malloc(nq * sizeof *times);
    int32_t *ids = malloc((size_t)nq * k * sizeof *ids);
    float *dist = malloc((size_t)nq * k * sizeof *dist);
    if (!times || !ids || !dist) {
        free(times), free(ids), free(dist);
        return vb_error_set(err, "export", ENOMEM, "out of memory for %u x %u answers of %s", nq, k, r->result_key);
    }
    double time_sum = 0, returned = 0;
    const unsigned char *p = b + 16;
    int rc = VB_OK;
    for (uint32_t i = 0; i < nq && rc == VB_OK; i++) {
        times[i] = get_f32(p);
        time_sum += times[i];
        p += 4;
        for (uint32_t j = 0; j < k; j++, p += 8) {
            uint32_t id = get_u32(p);
            size_t at = (size_t)i * k + j;
            if (id == UINT32_MAX) {
                ids[at] = -1;
                dist[at] = INFINITY;
                continue;
            }
            if (id > INT32_MAX) {
                rc = vb_error_set(err, "export", 1, "sweep_result %s: query %u returned row %u, beyond ann-benchmarks' "
                                  "int32 neighbors", r->result_key, i, id);
                break;
            }
            ids[at] = (int32_t)id;
            dist[at] = get_f32(p + 4);
            returned++;
        }
    }
    hid_t f = rc == VB_OK ? H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT) : -1;
    if (rc == VB_OK && f < 0) rc = vb_error_set(err, "export", 1, "cannot create %s (HDF5)", path);
    if (rc == VB_OK) {
        hsize_t d1[1] = {nq}, d2[2] = {nq, k};
        long long count = k, run_count = 1;
        double best = time_sum / nq, cand = returned / nq, kb = r->index_bytes >= 0 ? r->index_bytes / 1024.0 : 0;
        double build = r->build_time >= 0 ? r->build_time : 0;
        herr_t h = 0;
        h |= dataset_write(f, "times", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, 1, d1, times);
        h |= dataset_write(f, "neighbors", H5T_STD_I32LE, H5T_NATIVE_INT32, 2, d2, ids);
        h |= dataset_write(f, "distances", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, 2, d2, dist);
        h |= attr_str(f, "algo", algo);
        h |= attr_str(f, "name", name);
        h |= attr_str(f, "dataset", r->dataset);
        h |= attr_str(f, "distance", vb_metric_name((vb_metric)metric));
        h |= attr_write(f, "count", H5T_NATIVE_LLONG, &count);
        h |= attr_write(f, "run_count", H5T_NATIVE_LLONG, &run_count);
        h |= attr_write(f, "build_time", H5T_NATIVE_DOUBLE, &build);
        if (r->index_bytes >= 0) h |= attr_write(f, "index_size", H5T_NATIVE_DOUBLE, &kb);
        h |= attr_write(f, "best_search_time", H5T_NATIVE_DOUBLE, &best);
        h |= attr_write(f, "candidates", H5T_NATIVE_DOUBLE, &cand);
        h |= attr_bool(f, "batch_mode", 0);
        h |= attr_bool(f, "expect_extra", 0);
        h |= attr_str(f, "vbench_result_key", r->result_key);
        h |= attr_write(f, "vbench_recall", H5T_NATIVE_DOUBLE, &r->recall);
        h |= attr_write(f, "vbench_qps", H5T_NATIVE_DOUBLE, &r->qps);
        h |= attr_write(f, "ef_search", H5T_NATIVE_INT, &r->ef_search);
        if (h < 0) rc = vb_error_set(err, "export", 1, "writing %s (HDF5) failed", path);
        if (H5Fclose(f) < 0 && rc == VB_OK) rc = vb_error_set(err, "export", 1, "closing %s (HDF5) failed", path);
    }
    free(times), free(ids), free(dist);
    if (rc == VB_OK && !quiet) fprintf(stderr, "export: %s\n", path);
    return rc;
}

int vb_export_annb(sqlite3 *db, const char *dir, int quiet, vb_error *err) {
    if (!vb_export_annb_available(db))
        return vb_error_set(err, "export", 1, "this database has no per-query answers in its recall sweep "
                                              "(sweep_result.answers): the annb export needs them. They are kept "
                                              "by default since this version; run the campaign again (the "
                                              "recall_sweep phase's `answers: true`)");
    /* The series label as the report has it (engine, and configuration where the database has one); the build of
     * the same label and dataset gives build_time and index_size: with build_repeats, the build the row searched. */
    char *builds = vb_report_sql(db, "build_result", "SELECT dataset AS bd, {label} AS bl, load_s + build_s AS bt, "
                                                     "index_bytes AS ib, recorded_at AS ra, COALESCE(build, 1) AS bb "
                                                     "FROM build_result");
    char *sweeps = vb_report_sql(db, "sweep_result", "SELECT result_key, engine, dataset, ef_search, queries, recall, "
                                                     "qps, answers, {label} AS label, COALESCE(build, 1) AS sb "
                                                     "FROM sweep_result WHERE answers IS NOT NULL");
    /* the builds of each label and dataset: one (0 below), or several (the file names the build) */
    char *sql = NULL;
    if (asprintf(&sql, "WITH b AS (%s), s AS (%s) SELECT s.result_key, s.engine, s.dataset, s.ef_search, s.queries, "
                       "s.recall, s.qps, s.answers, s.label, (SELECT bt FROM b WHERE bl = s.label AND bd = s.dataset "
                       "AND bb = s.sb ORDER BY ra DESC LIMIT 1), (SELECT ib FROM b WHERE bl = s.label AND bd = "
                       "s.dataset AND bb = s.sb ORDER BY ra DESC LIMIT 1), IIF((SELECT COUNT(DISTINCT x.sb) FROM s "
                       "AS x WHERE x.label = s.label AND x.dataset = s.dataset) > 1, s.sb, 0) FROM s ORDER BY "
                       "s.dataset, s.label, s.ef_search, s.result_key", builds, sweeps) < 0)
        sql = NULL;
    free(builds), free(sweeps);
    sqlite3_stmt *st = NULL;
    if (!sql || sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
        free(sql);
        return vb_error_set(err, "export", 1, "reading the recall sweep: %s", sqlite3_errmsg(db));
    }
    free(sql);
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);   /* errors are reported by file name below, not as HDF5's stack */
    int rc = VB_OK, files = 0;
    while (rc == VB_OK && sqlite3_step(st) == SQLITE_ROW) {
        annb_row r = {
            .result_key = (const char *)sqlite3_column_text(st, 0),
            .engine = (const char *)sqlite3_column_text(st, 1),
            .dataset = (const char *)sqlite3_column_text(st, 2),
            .ef_search = sqlite3_column_int(st, 3),
            .queries = sqlite3_column_int64(st, 4),
            .recall = sqlite3_column_double(st, 5),
            .qps = sqlite3_column_double(st, 6),
            .blob = sqlite3_column_blob(st, 7),
            .blob_len = (size_t)sqlite3_column_bytes(st, 7),
            .label = (const char *)sqlite3_column_text(st, 8),
            .build_time = sqlite3_column_type(st, 9) == SQLITE_NULL ? -1 : sqlite3_column_double(st, 9),
            .index_bytes = sqlite3_column_type(st, 10) == SQLITE_NULL ? -1 : sqlite3_column_int64(st, 10),
            .build = sqlite3_column_int(st, 11),
        };
        if (!r.label) r.label = r.engine;
        rc = write_one(db, dir, &r, quiet, err);
        files += rc == VB_OK;
    }
    sqlite3_finalize(st);
    if (rc == VB_OK && !quiet) fprintf(stderr, "export: %d ann-benchmarks result files under %s/results\n", files, dir);
    return rc;
}
