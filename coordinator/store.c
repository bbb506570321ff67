/* SQLite results store. Statements are prepared per call: the write rate is a few per second at most, and
 * keeping no cached statements keeps every function self-contained. */
#include "coordinator/store.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>

#include "metrics/histogram.h"
#include "coordinator/views.h"
#include "util/embedded.h"

struct vb_store {
    sqlite3 *db;
    char path[1024];
};

static int db_error(vb_store *s, vb_error *err, const char *what) {
    return vb_error_set(err, "results", sqlite3_errcode(s->db), "%s: %s: %s", s->path, what, sqlite3_errmsg(s->db));
}

static int exec(vb_store *s, const char *sql, vb_error *err) {
    char *msg = NULL;
    if (sqlite3_exec(s->db, sql, NULL, NULL, &msg) != SQLITE_OK) {
        vb_error_set(err, "results", 1, "%s: %s", s->path, msg ? msg : "error");
        sqlite3_free(msg);
        return VB_ERROR;
    }
    return VB_OK;
}

void vb_store_now(char *buf, size_t len) {
    struct timeval tv;
    gettimeofday(&tv, NULL);
    struct tm tm;
    gmtime_r(&tv.tv_sec, &tm);
    char base[32];
    strftime(base, sizeof base, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(buf, len, "%s.%03dZ", base, (int)(tv.tv_usec / 1000));
}

/* Columns added to a table after it first shipped: CREATE TABLE IF NOT EXISTS leaves an older file's table as it
 * was, so each is added here when missing. Append to this list whenever schema.sql gains a column. */
static const struct {
    const char *table, *column, *type;
} added_columns[] = {
    {"churn_result", "rows_from", "INTEGER"},
    {"sweep_result", "index_used", "INTEGER"},
    {"sweep_result", "plan", "TEXT"},
    {"filtered_result", "index_used", "INTEGER"},
    {"filtered_result", "plan", "TEXT"},
    {"server_sample", "pss_bytes", "INTEGER"},
    {"sweep_result", "duplicate_answers", "INTEGER NOT NULL DEFAULT 0"},
    {"sweep_result", "duplicate_example", "TEXT"},
    {"filtered_result", "duplicate_answers", "INTEGER NOT NULL DEFAULT 0"},
    {"filtered_result", "duplicate_example", "TEXT"},
    {"churn_result", "duplicate_answers", "INTEGER NOT NULL DEFAULT 0"},
    {"churn_result", "duplicate_example", "TEXT"},
};

static int add_missing_columns(vb_store *s, vb_error *err) {
    for (size_t i = 0; i < sizeof added_columns / sizeof added_columns[0]; i++) {
        char sql[256];
        snprintf(sql, sizeof sql, "SELECT 1 FROM pragma_table_info('%s') WHERE name = '%s'", added_columns[i].table,
                 added_columns[i].column);
        sqlite3_stmt *st = NULL;
        if (sqlite3_prepare_v2(s->db, sql, -1, &st, NULL) != SQLITE_OK) return db_error(s, err, "reading the schema");
        int present = sqlite3_step(st) == SQLITE_ROW;
        sqlite3_finalize(st);
        if (present) continue;
        snprintf(sql, sizeof sql, "ALTER TABLE %s ADD COLUMN %s %s", added_columns[i].table, added_columns[i].column,
                 added_columns[i].type);
        if (exec(s, sql, err)) return VB_ERROR;
    }
    return VB_OK;
}

int vb_store_open(const char *path, int create, vb_store **out, vb_error *err) {
    struct stat st;
    int exists = stat(path, &st) == 0;
    if (create && exists)
        return vb_error_set(err, "results", 2, "%s already exists: choose another --out, or continue it with "
                                               "`vbench resume --out %s`", path, path);
    if (!create && !exists)
        return vb_error_set(err, "results", 3, "%s: no such results database", path);
    vb_store *s = calloc(1, sizeof *s);
    snprintf(s->path, sizeof s->path, "%s", path);
    int flags = SQLITE_OPEN_READWRITE | (create ? SQLITE_OPEN_CREATE : 0);
    if (sqlite3_open_v2(path, &s->db, flags, NULL) != SQLITE_OK) {
        db_error(s, err, "open");
        vb_store_close(&s);
        return VB_ERROR;
    }
    sqlite3_busy_timeout(s->db, 10000);
    const vb_embedded_file *schema = vb_embedded_find("results.db/schema.sql");
    if (exec(s, "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL; PRAGMA foreign_keys=ON;", err) ||
        !schema || exec(s, schema->data, err) || add_missing_columns(s, err) || vb_views_install(s->db, 0, err)) {
        if (!schema) vb_error_set(err, "results", 4, "the results schema is missing from this binary");
        vb_store_close(&s);
        return VB_ERROR;
    }
    *out = s;
    return VB_OK;
}

void vb_store_close(vb_store **s) {
    if (!s || !*s) return;
    if ((*s)->db) sqlite3_close((*s)->db);
    free(*s);
    *s = NULL;
}

sqlite3 *vb_store_db(vb_store *s) { return s->db; }

static sqlite3_stmt *prepare(vb_store *s, const char *sql, vb_error *err) {
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(s->db, sql, -1, &st, NULL) != SQLITE_OK) {
        db_error(s, err, "prepare");
        return NULL;
    }
    return st;
}

/* Steps a statement to completion and finalizes it. */
static int run(vb_store *s, sqlite3_stmt *st, vb_error *err, const char *what) {
    int rc = sqlite3_step(st);
    while (rc == SQLITE_ROW) rc = sqlite3_step(st);
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? VB_OK : db_error(s, err, what);
}

static void bind_text(sqlite3_stmt *st, int i, const char *v) {
    if (v) sqlite3_bind_text(st, i, v, -1, SQLITE_TRANSIENT);
    else sqlite3_bind_null(st, i);
}

static void point_text(const vb_plan_item *it, char *buf, size_t len) {
    buf[0] = '\0';
    size_t used = 0;
    for (size_t i = 0; i < it->n_point && used < len; i++)
        used += (size_t)snprintf(buf + used, len - used, "%s%s=%s", i ? "," : "", it->point[i].key, it->point[i].value);
}

int vb_store_init_campaign(vb_store *s, const vb_profile *p, const char *engines_csv, const vb_plan *plan,
                           vb_error *err) {
    char now[40];
    vb_store_now(now, sizeof now);
    if (exec(s, "BEGIN IMMEDIATE", err)) return VB_ERROR;
    sqlite3_stmt *st = prepare(s, "INSERT INTO campaign (id, name, profile_source, profile_yaml, engines, status, "
                                  "runs, created_at, updated_at) VALUES (1, ?, ?, ?, ?, 'running', 0, ?, ?)", err);
    if (!st) goto fail;
    bind_text(st, 1, p->name);
    bind_text(st, 2, p->source);
    bind_text(st, 3, p->yaml);
    bind_text(st, 4, engines_csv);
    bind_text(st, 5, now);
    bind_text(st, 6, now);
    if (run(s, st, err, "recording the campaign")) goto fail;
    for (size_t i = 0; i < plan->n_items; i++) {
        const vb_plan_item *it = &plan->items[i];
        char point[512];
        point_text(it, point, sizeof point);
        st = prepare(s, "INSERT INTO plan (key, seq, phase, engine, dataset, point) VALUES (?, ?, ?, ?, ?, ?)", err);
        if (!st) goto fail;
        bind_text(st, 1, it->key);
        sqlite3_bind_int(st, 2, it->seq);
        bind_text(st, 3, vb_phase_name(it->kind));
        bind_text(st, 4, p->engines[it->engine].name);
        bind_text(st, 5, p->datasets[it->dataset].name);
        bind_text(st, 6, point);
        if (run(s, st, err, "recording the plan")) goto fail;
    }
    return exec(s, "COMMIT", err);
fail:
    exec(s, "ROLLBACK", NULL);
    return VB_ERROR;
}

static char *column_dup(sqlite3_stmt *st, int i) {
    const unsigned char *t = sqlite3_column_text(st, i);
    return t ? strdup((const char *)t) : NULL;
}

int vb_store_load_campaign(vb_store *s, char **yaml, char **source, char **engines, char **status, vb_error *err) {
    sqlite3_stmt *st = prepare(s, "SELECT profile_yaml, profile_source, engines, status FROM campaign WHERE id = 1", err);
    if (!st) return VB_ERROR;
    if (sqlite3_step(st) != SQLITE_ROW) {
        sqlite3_finalize(st);
        return vb_error_set(err, "results", 5, "%s holds no campaign", s->path);
    }
    *yaml = column_dup(st, 0);
    *source = column_dup(st, 1);
    *engines = column_dup(st, 2);
    *status = column_dup(st, 3);
    sqlite3_finalize(st);
    return VB_OK;
}

int vb_store_check_plan(vb_store *s, const vb_plan *plan, vb_error *err) {
    sqlite3_stmt *st = prepare(s, "SELECT key, seq FROM plan ORDER BY seq", err);
    if (!st) return VB_ERROR;
    size_t n = 0;
    int rc = VB_OK;
    while (sqlite3_step(st) == SQLITE_ROW) {
        const char *key = (const char *)sqlite3_column_text(st, 0);
        if (n >= plan->n_items || strcmp(plan->items[n].key, key) != 0) {
            rc = vb_error_set(err, "results", 6, "%s: stored plan item %zu (%s) does not match the profile's plan",
                              s->path, n, key);
            break;
        }
        n++;
    }
    sqlite3_finalize(st);
    if (rc == VB_OK && n != plan->n_items)
        rc = vb_error_set(err, "results", 6, "%s: stored plan has %zu items, the profile gives %zu", s->path, n,
                          plan->n_items);
    return rc;
}

int vb_store_begin_run(vb_store *s, int retry_failed, vb_error *err) {
    char now[40];
    vb_store_now(now, sizeof now);
    if (exec(s, "BEGIN IMMEDIATE", err)) return VB_ERROR;
    char sql[1024];
    snprintf(sql, sizeof sql,
             "INSERT INTO event (at, level, item_key, source, message) SELECT '%s', 'warn', key, 'coordinator', "
             "'item was running when the coordinator stopped; it runs again unless its agent comes back with it' "
             "FROM plan WHERE status = 'running';"
             "UPDATE plan SET status = 'interrupted' WHERE status = 'running';"
             "UPDATE plan SET status = 'pending' WHERE status = 'expired';"
             "UPDATE campaign SET runs = runs + 1, status = 'running', updated_at = '%s', finished_at = NULL;",
             now, now);
    if (exec(s, sql, err)) goto fail;
    if (retry_failed && exec(s, "UPDATE plan SET status = 'pending', error = NULL WHERE status IN ('failed', 'skipped')", err))
        goto fail;
    return exec(s, "COMMIT", err);
fail:
    exec(s, "ROLLBACK", NULL);
    return VB_ERROR;
}

int vb_store_item_status(vb_store *s, const char *key, char *buf, size_t len, vb_error *err) {
    sqlite3_stmt *st = prepare(s, "SELECT status FROM plan WHERE key = ?", err);
    if (!st) return VB_ERROR;
    bind_text(st, 1, key);
    int rc = VB_OK;
    if (sqlite3_step(st) == SQLITE_ROW) snprintf(buf, len, "%s", sqlite3_column_text(st, 0));
    else rc = vb_error_set(err, "results", 7, "unknown plan item %s", key);
    sqlite3_finalize(st);
    return rc;
}

int vb_store_item_start(vb_store *s, const char *key, const char *agent, vb_error *err) {
    char now[40];
    vb_store_now(now, sizeof now);
    sqlite3_stmt *st = prepare(s, "UPDATE plan SET status = 'running', attempts = attempts + 1, agent = ?, "
                                  "started_at = ?, finished_at = NULL, error = NULL WHERE key = ?", err);
    if (!st) return VB_ERROR;
    bind_text(st, 1, agent);
    bind_text(st, 2, now);
    bind_text(st, 3, key);
    return run(s, st, err, "starting a plan item");
}

int vb_store_item_info(vb_store *s, const char *key, char *status, size_t status_len, int *attempts, char *agent,
                       size_t agent_len, vb_error *err) {
    sqlite3_stmt *st = prepare(s, "SELECT status, attempts, COALESCE(agent, '') FROM plan WHERE key = ?", err);
    if (!st) return VB_ERROR;
    bind_text(st, 1, key);
    int rc = VB_OK;
    if (sqlite3_step(st) == SQLITE_ROW) {
        snprintf(status, status_len, "%s", sqlite3_column_text(st, 0));
        *attempts = sqlite3_column_int(st, 1);
        snprintf(agent, agent_len, "%s", sqlite3_column_text(st, 2));
    } else {
        rc = vb_error_set(err, "results", 7, "unknown plan item %s", key);
    }
    sqlite3_finalize(st);
    return rc;
}

int vb_store_item_orphan(vb_store *s, char *key, size_t key_len, char *agent, size_t agent_len, vb_error *err) {
    sqlite3_stmt *st = prepare(s, "SELECT key, agent FROM plan WHERE attempts > 0 AND agent IS NOT NULL AND "
                                  "(status = 'running' OR (status = 'interrupted' AND error IS NULL)) "
                                  "ORDER BY started_at DESC LIMIT 1", err);
    if (!st) return VB_ERROR;
    key[0] = agent[0] = '\0';
    if (sqlite3_step(st) == SQLITE_ROW) {
        snprintf(key, key_len, "%s", sqlite3_column_text(st, 0));
        snprintf(agent, agent_len, "%s", sqlite3_column_text(st, 1));
    }
    sqlite3_finalize(st);
    return VB_OK;
}

int vb_store_item_adopt(vb_store *s, const char *key, const char *agent, vb_error *err) {
    sqlite3_stmt *st = prepare(s, "UPDATE plan SET status = 'running', agent = ?, finished_at = NULL, error = NULL "
                                  "WHERE key = ?", err);
    if (!st) return VB_ERROR;
    bind_text(st, 1, agent);
    bind_text(st, 2, key);
    return run(s, st, err, "taking over a plan item");
}

int vb_store_item_finish(vb_store *s, const char *key, const char *status, const char *error, vb_error *err) {
    char now[40];
    vb_store_now(now, sizeof now);
    sqlite3_stmt *st = prepare(s, "UPDATE plan SET status = ?, finished_at = ?, error = ? WHERE key = ?", err);
    if (!st) return VB_ERROR;
    bind_text(st, 1, status);
    bind_text(st, 2, now);
    bind_text(st, 3, error);
    bind_text(st, 4, key);
    return run(s, st, err, "finishing a plan item");
}

/* Latency columns come from the merged histogram, here, so every percentile in the database has one
 * definition whatever agent produced it. */
typedef struct latency_cols {
    int empty;
    double mean, p50, p95, p99, p999, max;
    unsigned char *blob;   /* (u32 bucket, u64 count) little-endian pairs; malloc'd */
    size_t blob_len;
} latency_cols;

static int latency_decode(const Vbench__Histogram *lat, const char *result_key, latency_cols *out, vb_error *err) {
    memset(out, 0, sizeof *out);
    out->empty = 1;
    if (lat && lat->n_idx != lat->n_counts)
        return vb_error_set(err, "results", 9, "result %s: latency histogram has %zu buckets but %zu counts",
                            result_key, lat->n_idx, lat->n_counts);
    char why[256];
    if (lat && vb_histogram_decode_check(lat->idx, lat->counts, lat->n_idx, lat->out_of_range, lat->min_ns,
                                         lat->max_ns, why, sizeof why) != 0)
        return vb_error_set(err, "results", 9, "result %s: latency histogram: %s", result_key, why);
    vb_histogram *h = vb_histogram_new();
    if (!h) return vb_error_set(err, "results", 8, "out of memory");
    if (lat && vb_histogram_decode_add(h, lat->idx, lat->counts, lat->n_idx) != 0) {
        vb_histogram_destroy(&h);
        return vb_error_set(err, "results", 9, "result %s: latency histogram has a bucket out of range", result_key);
    }
    if (lat) vb_histogram_decode_summary(h, lat->out_of_range, lat->min_ns, lat->max_ns);
    out->empty = vb_histogram_count(h) == 0;
    if (!out->empty) {
        out->mean = vb_histogram_mean(h) / 1e6;
        out->p50 = (double)vb_histogram_value_at_percentile(h, 50) / 1e6;
        out->p95 = (double)vb_histogram_value_at_percentile(h, 95) / 1e6;
        out->p99 = (double)vb_histogram_value_at_percentile(h, 99) / 1e6;
        out->p999 = (double)vb_histogram_value_at_percentile(h, 99.9) / 1e6;
        out->max = (double)vb_histogram_max(h) / 1e6;
    }
    vb_histogram_destroy(&h);
    size_t nb = lat ? lat->n_idx : 0;
    out->blob = malloc(nb * 12 + 1);
    out->blob_len = nb * 12;
    for (size_t i = 0; i < nb; i++) {
        uint32_t ix = lat->idx[i];
        uint64_t c = lat->counts[i];
        for (int b = 0; b < 4; b++) out->blob[i * 12 + b] = (unsigned char)(ix >> (8 * b));
        for (int b = 0; b < 8; b++) out->blob[i * 12 + 4 + b] = (unsigned char)(c >> (8 * b));
    }
    return VB_OK;
}

static void bind_double_or_null(sqlite3_stmt *st, int i, int null, double v) {
    if (null) sqlite3_bind_null(st, i);
    else sqlite3_bind_double(st, i, v);
}

/* Binds mean, p50, p95, p99, p99.9, max at *i onwards (6 columns). */
static void bind_latency(sqlite3_stmt *st, int *i, const latency_cols *l) {
    double v[] = {l->mean, l->p50, l->p95, l->p99, l->p999, l->max};
    for (int j = 0; j < 6; j++) bind_double_or_null(st, (*i)++, l->empty, v[j]);
}

/* The four columns every result row starts with. */
static void bind_keys(sqlite3_stmt *st, int *i, const Vbench__Result *r, const char *engine, const char *dataset) {
    bind_text(st, (*i)++, r->result_key);
    bind_text(st, (*i)++, r->item_key);
    bind_text(st, (*i)++, engine);
    bind_text(st, (*i)++, dataset);
}

/* A one-client measurement (sweep point, filtered point): the same columns in both tables, in this order:
 * queries, recall, id_overlap, short_answers, duplicate_answers, duplicate_example, errors, elapsed_s, qps, the
 * six latency columns, client_cpu_s, latency_hist. */
typedef struct measure_cols {
    uint64_t queries, short_answers, duplicate_answers, errors;
    double recall, id_overlap, elapsed_s, qps, client_cpu_s;
    const char *duplicate_example;   /* NULL or empty: stored as NULL */
} measure_cols;

/* The wire's 0 / 1 / 2 (unknown / uses the index / does not) as NULL / 1 / 0, and the plan text. */
static void bind_index_used(sqlite3_stmt *st, int *i, uint32_t index_used, const char *plan) {
    if (index_used == 1 || index_used == 2) sqlite3_bind_int(st, (*i)++, index_used == 1);
    else sqlite3_bind_null(st, (*i)++);
    bind_text(st, (*i)++, plan && *plan ? plan : NULL);
}

static void bind_measure(sqlite3_stmt *st, int *i, const measure_cols *m, const latency_cols *lat) {
    sqlite3_bind_int64(st, (*i)++, (sqlite3_int64)m->queries);
    sqlite3_bind_double(st, (*i)++, m->recall);
    sqlite3_bind_double(st, (*i)++, m->id_overlap);
    sqlite3_bind_int64(st, (*i)++, (sqlite3_int64)m->short_answers);
    sqlite3_bind_int64(st, (*i)++, (sqlite3_int64)m->duplicate_answers);
    bind_text(st, (*i)++, m->duplicate_example && *m->duplicate_example ? m->duplicate_example : NULL);
    sqlite3_bind_int64(st, (*i)++, (sqlite3_int64)m->errors);
    sqlite3_bind_double(st, (*i)++, m->elapsed_s);
    sqlite3_bind_double(st, (*i)++, m->qps);
    bind_latency(st, i, lat);
    sqlite3_bind_double(st, (*i)++, m->client_cpu_s);
    sqlite3_bind_blob(st, (*i)++, lat->blob, (int)lat->blob_len, SQLITE_TRANSIENT);
}

static int insert_sweep(vb_store *s, const Vbench__Result *r, const char *engine, const char *dataset,
                        const char *agent, const char *now, vb_error *err) {
    const Vbench__SweepResult *w = r->sweep;
    latency_cols lat;
    if (latency_decode(w->latency, r->result_key, &lat, err)) return VB_ERROR;
    sqlite3_stmt *st = prepare(s,
        "INSERT INTO sweep_result (result_key, item_key, engine, dataset, ef_search, clients, queries, recall, "
        "id_overlap, short_answers, duplicate_answers, duplicate_example, errors, elapsed_s, qps, mean_ms, p50_ms, "
        "p95_ms, p99_ms, p999_ms, max_ms, client_cpu_s, latency_hist, agent, recorded_at, index_used, plan) VALUES "
        "(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)", err);
    int rc = VB_ERROR;
    if (st) {
        int i = 1;
        measure_cols m = {.queries = w->queries, .short_answers = w->short_answers,
                          .duplicate_answers = w->duplicate_answers, .errors = w->errors, .recall = w->recall,
                          .id_overlap = w->id_overlap, .elapsed_s = w->elapsed_s, .qps = w->qps,
                          .client_cpu_s = w->client_cpu_s, .duplicate_example = w->duplicate_example};
        bind_keys(st, &i, r, engine, dataset);
        sqlite3_bind_int(st, i++, w->ef_search);
        sqlite3_bind_int(st, i++, (int)(w->clients ? w->clients : 1));
        bind_measure(st, &i, &m, &lat);
        bind_text(st, i++, agent);
        bind_text(st, i++, now);
        bind_index_used(st, &i, w->index_used, w->plan);
        rc = run(s, st, err, "recording a recall sweep result");
    }
    free(lat.blob);
    return rc;
}

static int insert_window(vb_store *s, const Vbench__Result *r, const char *engine, const char *dataset,
                         const char *agent, const char *now, vb_error *err) {
    const Vbench__WindowResult *w = r->window;
    latency_cols lat, lag;
    if (latency_decode(w->latency, r->result_key, &lat, err)) return VB_ERROR;
    if (latency_decode(w->lag, r->result_key, &lag, err)) {
        free(lat.blob);
        return VB_ERROR;
    }
    double fmin = 0, fsum = 0;
    char *fjson = NULL;
    size_t flen;
    FILE *f = open_memstream(&fjson, &flen);
    fputc('[', f);
    for (size_t j = 0; j < w->n_fraction_in_call; j++) {
        double v = w->fraction_in_call[j];
        /* printf writes NaN and infinity as "nan" and "inf", which are not JSON (found by tests/fuzz/fuzz_wire.c) */
        if (isfinite(v)) fprintf(f, "%s%.4f", j ? "," : "", v);
        else fprintf(f, "%snull", j ? "," : "");
        fsum += v;
        if (j == 0 || v < fmin) fmin = v;
    }
    fputc(']', f);
    fclose(f);
    sqlite3_stmt *st = prepare(s,
        "INSERT INTO window_result (result_key, item_key, engine, dataset, clients, repeat, ef_search, window_s, "
        "queries, errors, qps, mean_ms, p50_ms, p95_ms, p99_ms, p999_ms, max_ms, in_call_s, in_flight, qps_x_p50, "
        "fraction_in_call_min, fraction_in_call_mean, fraction_in_call, client_cpu_s, warmup_queries, target_rate, "
        "late_starts, lag_p99_ms, clients_lost, latency_hist, agent, recorded_at) VALUES "
        "(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)", err);
    int rc = VB_ERROR;
    if (st) {
        int i = 1, nf = (int)w->n_fraction_in_call;
        bind_keys(st, &i, r, engine, dataset);
        sqlite3_bind_int(st, i++, (int)w->clients);
        sqlite3_bind_int(st, i++, (int)w->repeat);
        sqlite3_bind_int(st, i++, w->ef_search);
        sqlite3_bind_double(st, i++, w->window_s);
        sqlite3_bind_int64(st, i++, (sqlite3_int64)w->queries);
        sqlite3_bind_int64(st, i++, (sqlite3_int64)w->errors);
        sqlite3_bind_double(st, i++, w->qps);
        bind_latency(st, &i, &lat);
        sqlite3_bind_double(st, i++, w->in_call_s);
        sqlite3_bind_double(st, i++, w->window_s > 0 ? w->in_call_s / w->window_s : 0);
        bind_double_or_null(st, i++, lat.empty, w->qps * lat.p50 / 1e3);
        bind_double_or_null(st, i++, nf == 0, fmin);
        bind_double_or_null(st, i++, nf == 0, nf ? fsum / nf : 0);
        bind_text(st, i++, fjson);
        sqlite3_bind_double(st, i++, w->client_cpu_s);
        sqlite3_bind_int64(st, i++, (sqlite3_int64)w->warmup_queries);
        bind_double_or_null(st, i++, w->target_rate <= 0, w->target_rate);
        sqlite3_bind_int64(st, i++, (sqlite3_int64)w->late_starts);
        bind_double_or_null(st, i++, lag.empty, lag.p99);
        sqlite3_bind_int64(st, i++, (sqlite3_int64)w->clients_lost);
        sqlite3_bind_blob(st, i++, lat.blob, (int)lat.blob_len, SQLITE_TRANSIENT);
        bind_text(st, i++, agent);
        bind_text(st, i++, now);
        rc = run(s, st, err, "recording a concurrency window");
    }
    free(fjson);
    free(lat.blob);
    free(lag.blob);
    return rc;
}

static int insert_filtered(vb_store *s, const Vbench__Result *r, const char *engine, const char *dataset,
                           const char *agent, const char *now, vb_error *err) {
    const Vbench__FilteredResult *w = r->filtered;
    latency_cols lat;
    if (latency_decode(w->latency, r->result_key, &lat, err)) return VB_ERROR;
    sqlite3_stmt *st = prepare(s,
        "INSERT INTO filtered_result (result_key, item_key, engine, dataset, selectivity, passing_rows, filter, "
        "ef_search, queries, recall, id_overlap, short_answers, duplicate_answers, duplicate_example, errors, "
        "elapsed_s, qps, mean_ms, p50_ms, p95_ms, p99_ms, p999_ms, max_ms, client_cpu_s, latency_hist, agent, "
        "recorded_at, index_used, plan) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)", err);
    int rc = VB_ERROR;
    if (st) {
        int i = 1;
        measure_cols m = {.queries = w->queries, .short_answers = w->short_answers,
                          .duplicate_answers = w->duplicate_answers, .errors = w->errors, .recall = w->recall,
                          .id_overlap = w->id_overlap, .elapsed_s = w->elapsed_s, .qps = w->qps,
                          .client_cpu_s = w->client_cpu_s, .duplicate_example = w->duplicate_example};
        bind_keys(st, &i, r, engine, dataset);
        sqlite3_bind_double(st, i++, w->selectivity);
        sqlite3_bind_int64(st, i++, (sqlite3_int64)w->passing_rows);
        bind_text(st, i++, w->filter);
        sqlite3_bind_int(st, i++, w->ef_search);
        bind_measure(st, &i, &m, &lat);
        bind_text(st, i++, agent);
        bind_text(st, i++, now);
        bind_index_used(st, &i, w->index_used, w->plan);
        rc = run(s, st, err, "recording a filtered result");
    }
    free(lat.blob);
    return rc;
}

static int insert_churn(vb_store *s, const Vbench__Result *r, const char *engine, const char *dataset,
                        const char *agent, const char *now, vb_error *err) {
    const Vbench__ChurnResult *c = r->churn;
    latency_cols lat;
    if (latency_decode(c->latency, r->result_key, &lat, err)) return VB_ERROR;
    int measured = strcmp(c->stage, "before") == 0 || strcmp(c->stage, "after") == 0;
    int rows = !measured && strcmp(c->stage, "maintain") != 0;
    sqlite3_stmt *st = prepare(s,
        "INSERT INTO churn_result (result_key, item_key, engine, dataset, stage, qps, recall, p50_ms, p99_ms, "
        "queries, short_answers, errors, rows_planned, rows_done, rows_from, seconds, rows_per_s, completed, "
        "ids_reused, agent, recorded_at, duplicate_answers, duplicate_example) VALUES "
        "(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)", err);
    int rc = VB_ERROR;
    if (st) {
        int i = 1;
        bind_keys(st, &i, r, engine, dataset);
        bind_text(st, i++, c->stage);
        bind_double_or_null(st, i++, !measured, c->qps);
        bind_double_or_null(st, i++, !measured, c->recall);
        bind_double_or_null(st, i++, !measured || lat.empty, lat.p50);
        bind_double_or_null(st, i++, !measured || lat.empty, lat.p99);
        if (measured) {
            sqlite3_bind_int64(st, i++, (sqlite3_int64)c->queries);
            sqlite3_bind_int64(st, i++, (sqlite3_int64)c->short_answers);
            sqlite3_bind_int64(st, i++, (sqlite3_int64)c->errors);
        } else {
            for (int j = 0; j < 3; j++) sqlite3_bind_null(st, i++);
        }
        sqlite3_bind_int64(st, i++, (sqlite3_int64)c->rows_planned);
        if (rows) sqlite3_bind_int64(st, i++, (sqlite3_int64)c->rows_done);
        else sqlite3_bind_null(st, i++);
        int attempt = strcmp(c->stage, "reinsert") == 0 || strcmp(c->stage, "checkpoint") == 0;
        if (attempt) sqlite3_bind_int64(st, i++, (sqlite3_int64)c->rows_from);
        else sqlite3_bind_null(st, i++);
        sqlite3_bind_double(st, i++, c->seconds);
        bind_double_or_null(st, i++, !rows, c->rows_per_s);
        if (strcmp(c->stage, "reinsert") == 0) sqlite3_bind_int(st, i++, c->completed);
        else sqlite3_bind_null(st, i++);
        if (strcmp(c->stage, "reinsert") == 0) sqlite3_bind_int(st, i++, c->ids_reused);
        else sqlite3_bind_null(st, i++);
        bind_text(st, i++, agent);
        bind_text(st, i++, now);
        /* before / after only; 0 (the column's default) for the stages that run no queries */
        sqlite3_bind_int64(st, i++, measured ? (sqlite3_int64)c->duplicate_answers : 0);
        bind_text(st, i++, measured && c->duplicate_example && *c->duplicate_example ? c->duplicate_example : NULL);
        rc = run(s, st, err, "recording a churn result");
    }
    free(lat.blob);
    return rc;
}

static int insert_build(vb_store *s, const Vbench__Result *r, const char *engine, const char *dataset,
                        const char *agent, const char *now, vb_error *err) {
    const Vbench__BuildResult *b = r->build;
    sqlite3_stmt *st = prepare(s,
        "INSERT INTO build_result (result_key, item_key, engine, dataset, rows, load_s, build_s, first_query_s, "
        "rows_per_s, index_bytes, table_bytes, client_cpu_s, load_connections, engine_version, dataset_hash, agent, "
        "recorded_at) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)", err);
    if (!st) return VB_ERROR;
    int i = 1;
    bind_keys(st, &i, r, engine, dataset);
    sqlite3_bind_int64(st, i++, (sqlite3_int64)b->rows);
    sqlite3_bind_double(st, i++, b->load_s);
    sqlite3_bind_double(st, i++, b->build_s);
    sqlite3_bind_double(st, i++, b->first_query_s);
    sqlite3_bind_double(st, i++, b->rows_per_s);
    if (b->index_bytes >= 0) sqlite3_bind_int64(st, i++, b->index_bytes);
    else sqlite3_bind_null(st, i++);
    if (b->table_bytes >= 0) sqlite3_bind_int64(st, i++, b->table_bytes);
    else sqlite3_bind_null(st, i++);
    sqlite3_bind_double(st, i++, b->client_cpu_s);
    sqlite3_bind_int(st, i++, (int)b->load_connections);
    bind_text(st, i++, b->engine_version);
    bind_text(st, i++, b->dataset_hash);
    bind_text(st, i++, agent);
    bind_text(st, i++, now);
    return run(s, st, err, "recording a build result");
}

static int result_known(vb_store *s, const char *key, int *known, vb_error *err) {
    sqlite3_stmt *st = prepare(s, "SELECT 1 FROM build_result WHERE result_key = ?1 UNION ALL "
                                  "SELECT 1 FROM sweep_result WHERE result_key = ?1 UNION ALL "
                                  "SELECT 1 FROM window_result WHERE result_key = ?1 UNION ALL "
                                  "SELECT 1 FROM filtered_result WHERE result_key = ?1 UNION ALL "
                                  "SELECT 1 FROM churn_result WHERE result_key = ?1", err);
    if (!st) return VB_ERROR;
    bind_text(st, 1, key);
    *known = sqlite3_step(st) == SQLITE_ROW;
    sqlite3_finalize(st);
    return VB_OK;
}

int vb_store_commit_result(vb_store *s, const Vbench__Result *r, const char *engine, const char *dataset,
                           const char *agent, int *duplicate, vb_error *err) {
    char now[40];
    vb_store_now(now, sizeof now);
    *duplicate = 0;
    if (exec(s, "BEGIN IMMEDIATE", err)) return VB_ERROR;
    int known = 0;
    if (result_known(s, r->result_key, &known, err)) goto fail;
    if (known) {
        *duplicate = 1;
        return exec(s, "COMMIT", err);
    }
    int rc;
    switch (r->body_case) {
    case VBENCH__RESULT__BODY_BUILD: rc = insert_build(s, r, engine, dataset, agent, now, err); break;
    case VBENCH__RESULT__BODY_SWEEP: rc = insert_sweep(s, r, engine, dataset, agent, now, err); break;
    case VBENCH__RESULT__BODY_WINDOW: rc = insert_window(s, r, engine, dataset, agent, now, err); break;
    case VBENCH__RESULT__BODY_FILTERED: rc = insert_filtered(s, r, engine, dataset, agent, now, err); break;
    case VBENCH__RESULT__BODY_CHURN: rc = insert_churn(s, r, engine, dataset, agent, now, err); break;
    default: rc = vb_error_set(err, "results", 10, "result %s has no body", r->result_key);
    }
    if (rc) goto fail;
    if (r->completes_item) {
        sqlite3_stmt *st = prepare(s, "UPDATE plan SET status = 'done', finished_at = ?, error = NULL WHERE key = ?", err);
        if (!st) goto fail;
        bind_text(st, 1, now);
        bind_text(st, 2, r->item_key);
        if (run(s, st, err, "marking an item done")) goto fail;
    }
    return exec(s, "COMMIT", err);
fail:
    exec(s, "ROLLBACK", NULL);
    return VB_ERROR;
}

int vb_store_event(vb_store *s, const char *level, const char *item_key, const char *source, const char *fmt, ...) {
    char msg[4096], now[40];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    vb_store_now(now, sizeof now);
    sqlite3_stmt *st = prepare(s, "INSERT INTO event (at, level, item_key, source, message) VALUES (?,?,?,?,?)", NULL);
    if (!st) return VB_ERROR;
    bind_text(st, 1, now);
    bind_text(st, 2, level);
    bind_text(st, 3, item_key);
    bind_text(st, 4, source);
    bind_text(st, 5, msg);
    return run(s, st, NULL, "recording an event");
}

int vb_store_manifest_set(vb_store *s, const char *key, const char *value, vb_error *err) {
    char now[40];
    vb_store_now(now, sizeof now);
    sqlite3_stmt *st = prepare(s, "INSERT INTO manifest (key, value, recorded_at) VALUES (?,?,?) "
                                  "ON CONFLICT(key) DO UPDATE SET value = excluded.value, recorded_at = excluded.recorded_at", err);
    if (!st) return VB_ERROR;
    bind_text(st, 1, key);
    bind_text(st, 2, value ? value : "");
    bind_text(st, 3, now);
    return run(s, st, err, "recording the manifest");
}

/* Minimal JSON string escaping for the versions column. */
static void json_str(FILE *f, const char *v) {
    fputc('"', f);
    for (const unsigned char *c = (const unsigned char *)v; *c; c++) {
        if (*c == '"' || *c == '\\') fprintf(f, "\\%c", *c);
        else if (*c < 0x20) fprintf(f, "\\u%04x", *c);
        else fputc(*c, f);
    }
    fputc('"', f);
}

int vb_store_agent_seen(vb_store *s, const Vbench__Hello *h, vb_error *err) {
    char now[40];
    vb_store_now(now, sizeof now);
    char *roles = NULL, *cpus = NULL, *versions = NULL;
    size_t lr, lc, lv;
    FILE *fr = open_memstream(&roles, &lr), *fc = open_memstream(&cpus, &lc), *fv = open_memstream(&versions, &lv);
    for (size_t i = 0; i < h->n_roles; i++) fprintf(fr, "%s%s", i ? "," : "", h->roles[i]);
    for (size_t i = 0; i < h->n_cpus; i++) fprintf(fc, "%s%d", i ? "," : "", h->cpus[i]);
    fputc('{', fv);
    for (size_t i = 0; i < h->n_versions; i++) {
        if (i) fputc(',', fv);
        json_str(fv, h->versions[i]->key);
        fputc(':', fv);
        json_str(fv, h->versions[i]->value);
    }
    fputc('}', fv);
    fclose(fr);
    fclose(fc);
    fclose(fv);
    sqlite3_stmt *st = prepare(s, "INSERT INTO agent (id, host, roles, cores, cpus, memory_bytes, versions, first_seen, last_seen) "
                                  "VALUES (?,?,?,?,?,?,?,?,?) ON CONFLICT(id) DO UPDATE SET host = excluded.host, "
                                  "roles = excluded.roles, cores = excluded.cores, cpus = excluded.cpus, "
                                  "memory_bytes = excluded.memory_bytes, versions = excluded.versions, last_seen = excluded.last_seen", err);
    int rc = VB_ERROR;
    if (st) {
        bind_text(st, 1, h->agent_id);
        bind_text(st, 2, h->host);
        bind_text(st, 3, roles);
        sqlite3_bind_int(st, 4, (int)h->cores);
        bind_text(st, 5, cpus);
        sqlite3_bind_int64(st, 6, (sqlite3_int64)h->memory_bytes);
        bind_text(st, 7, versions);
        bind_text(st, 8, now);
        bind_text(st, 9, now);
        rc = run(s, st, err, "recording an agent");
    }
    free(roles);
    free(cpus);
    free(versions);
    return rc;
}

int vb_store_set_status(vb_store *s, const char *status, vb_error *err) {
    char now[40];
    vb_store_now(now, sizeof now);
    int fin = strcmp(status, "finished") == 0;
    sqlite3_stmt *st = prepare(s, "UPDATE campaign SET status = ?, updated_at = ?, finished_at = ? WHERE id = 1", err);
    if (!st) return VB_ERROR;
    bind_text(st, 1, status);
    bind_text(st, 2, now);
    bind_text(st, 3, fin ? now : NULL);
    return run(s, st, err, "updating the campaign status");
}

int vb_store_churn_checkpoint(vb_store *s, const char *item_key, long *rows, vb_error *err) {
    sqlite3_stmt *st = prepare(s, "SELECT MAX(rows_done) FROM churn_result WHERE item_key = ? "
                                  "AND stage IN ('reinsert', 'checkpoint')", err);
    if (!st) return VB_ERROR;
    bind_text(st, 1, item_key);
    *rows = -1;
    if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL)
        *rows = (long)sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return VB_OK;
}

int vb_store_churn_reset(vb_store *s, const char *item_key, vb_error *err) {
    sqlite3_stmt *st = prepare(s, "DELETE FROM churn_result WHERE item_key = ?", err);
    if (!st) return VB_ERROR;
    bind_text(st, 1, item_key);
    if (run(s, st, err, "resetting a churn checkpoint")) return VB_ERROR;
    vb_store_event(s, "warn", item_key, "coordinator", "churn restarts from the beginning (on_resume: restart); "
                                                        "the earlier attempt's rows are discarded");
    return VB_OK;
}

/* ---- servers (orchestrator reports) ------------------------------------------------------------------------ */

int vb_store_server_samples(vb_store *s, const char *engine, const char *item_key, Vbench__ServerSample **rows,
                            size_t n, vb_error *err) {
    if (n == 0) return VB_OK;
    if (exec(s, "BEGIN IMMEDIATE", err)) return VB_ERROR;
    sqlite3_stmt *st = prepare(s, "INSERT OR IGNORE INTO server_sample (engine, item_key, t, cgroup_bytes, rss_bytes, "
                                  "cpu_s, pss_bytes) VALUES (?,?,?,?,?,?,?)", err);
    if (!st) {
        exec(s, "ROLLBACK", NULL);
        return VB_ERROR;
    }
    for (size_t i = 0; i < n; i++) {
        sqlite3_reset(st);
        bind_text(st, 1, engine);
        bind_text(st, 2, item_key && *item_key ? item_key : NULL);
        sqlite3_bind_double(st, 3, rows[i]->wall);
        sqlite3_bind_int64(st, 4, (sqlite3_int64)rows[i]->cgroup_bytes);
        sqlite3_bind_int64(st, 5, (sqlite3_int64)rows[i]->rss_bytes);
        sqlite3_bind_double(st, 6, (double)rows[i]->cpu_usec / 1e6);
        sqlite3_bind_int64(st, 7, (sqlite3_int64)rows[i]->pss_bytes);
        if (sqlite3_step(st) != SQLITE_DONE) {
            sqlite3_finalize(st);
            db_error(s, err, "recording server samples");
            exec(s, "ROLLBACK", NULL);
            return VB_ERROR;
        }
    }
    sqlite3_finalize(st);
    return exec(s, "COMMIT", err);
}

int vb_store_server_size(vb_store *s, const char *engine, const char *item_key, const char *path, long long bytes,
                         vb_error *err) {
    char now[40];
    vb_store_now(now, sizeof now);
    sqlite3_stmt *st = prepare(s, "INSERT INTO server_size (engine, item_key, path, bytes, recorded_at) VALUES (?,?,?,?,?)", err);
    if (!st) return VB_ERROR;
    bind_text(st, 1, engine);
    bind_text(st, 2, item_key && *item_key ? item_key : NULL);
    bind_text(st, 3, path);
    sqlite3_bind_int64(st, 4, bytes);
    bind_text(st, 5, now);
    return run(s, st, err, "recording a server size");
}

int vb_store_server_log(vb_store *s, const char *engine, const char *unit, const char *state, const char *message,
                        const char *log_tail, vb_error *err) {
    char now[40];
    vb_store_now(now, sizeof now);
    sqlite3_stmt *st = prepare(s, "INSERT INTO server_log (engine, unit, state, message, log_tail, recorded_at) "
                                  "VALUES (?,?,?,?,?,?)", err);
    if (!st) return VB_ERROR;
    bind_text(st, 1, engine);
    bind_text(st, 2, unit && *unit ? unit : NULL);
    bind_text(st, 3, state);
    bind_text(st, 4, message && *message ? message : NULL);
    bind_text(st, 5, log_tail && *log_tail ? log_tail : NULL);
    bind_text(st, 6, now);
    return run(s, st, err, "recording a server event");
}
