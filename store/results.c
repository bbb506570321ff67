/* Committing results (vb_store_commit_result): one transaction per result, with the item it completes. */
#include "store/store_int.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "metrics/coldstart.h"
#include "metrics/histogram.h"
#include "proto/wire.h"

/* Latency columns come from the merged histogram, here, so every percentile in the database has one
 * definition whatever agent produced it. */
typedef struct latency_cols {
    int empty;
    double mean, p50, p95, p99, p999, max;
    unsigned char *blob;   /* (u32 bucket, u64 count) little-endian pairs; malloc'd */
    size_t blob_len;
} latency_cols;

static int latency_decode(vb_store *s, const Vbench__Histogram *lat, const char *result_key, latency_cols *out, vb_error *err) {
    memset(out, 0, sizeof *out);
    out->empty = 1;
    if (lat && lat->n_idx != lat->n_counts)
        return store_poison(s, err, "result %s: latency histogram has %zu buckets but %zu counts",
                            result_key, lat->n_idx, lat->n_counts);
    char why[256];
    if (lat && vb_histogram_decode_check(lat->idx, lat->counts, lat->n_idx, lat->out_of_range, lat->min_ns,
                                         lat->max_ns, why, sizeof why) != 0)
        return store_poison(s, err, "result %s: latency histogram: %s", result_key, why);
    vb_histogram *h = vb_histogram_new();
    if (!h) return store_fail(s, err, VB_STORE_RETRY, "%s: out of memory", s->path);
    if (lat && vb_histogram_decode_add(h, lat->idx, lat->counts, lat->n_idx) != 0) {
        vb_histogram_destroy(&h);
        return store_poison(s, err, "result %s: latency histogram has a bucket out of range", result_key);
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
    store_bind_text(st, (*i)++, r->result_key);
    store_bind_text(st, (*i)++, r->item_key);
    store_bind_text(st, (*i)++, engine);
    store_bind_text(st, (*i)++, dataset);
}

/* A result's Measurement, or an empty one when the peer sent none (every field reads 0 / empty, as a field a
 * peer does not send does). */
static const Vbench__Measurement *measure_of(const Vbench__Measurement *m) {
    static const Vbench__Measurement none = VBENCH__MEASUREMENT__INIT;
    return m ? m : &none;
}

/* The wire's 0 / 1 / 2 (unknown / uses the index / does not) as NULL / 1 / 0, and the plan text. */
static void bind_index_used(sqlite3_stmt *st, int *i, const Vbench__Measurement *m) {
    if (m->index_used == 1 || m->index_used == 2) sqlite3_bind_int(st, (*i)++, m->index_used == 1);
    else sqlite3_bind_null(st, (*i)++);
    store_bind_text(st, (*i)++, m->plan && *m->plan ? m->plan : NULL);
}

/* The one place a Measurement (proto/vbench.proto) becomes columns: a one-client measurement (sweep point,
 * filtered point) has the same columns in both tables, in this order: queries, recall, id_overlap,
 * short_answers, duplicate_answers, duplicate_example, errors, elapsed_s, qps, the six latency columns,
 * client_cpu_s, latency_hist (then, after the agent and time columns, bind_index_used's two). lat is
 * m->latency decoded. */
static void bind_measure(sqlite3_stmt *st, int *i, const Vbench__Measurement *m, const latency_cols *lat) {
    sqlite3_bind_int64(st, (*i)++, (sqlite3_int64)m->queries);
    sqlite3_bind_double(st, (*i)++, m->recall);
    sqlite3_bind_double(st, (*i)++, m->id_overlap);
    sqlite3_bind_int64(st, (*i)++, (sqlite3_int64)m->short_answers);
    sqlite3_bind_int64(st, (*i)++, (sqlite3_int64)m->duplicate_answers);
    store_bind_text(st, (*i)++, m->duplicate_example && *m->duplicate_example ? m->duplicate_example : NULL);
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
    const Vbench__Measurement *m = measure_of(w->m);
    latency_cols lat;
    int lrc = latency_decode(s, m->latency, r->result_key, &lat, err);
    if (lrc) return lrc;
    sqlite3_stmt *st = store_prepare(s,
        "INSERT INTO sweep_result (result_key, item_key, engine, dataset, ef_search, clients, queries, recall, "
        "id_overlap, short_answers, duplicate_answers, duplicate_example, errors, elapsed_s, qps, mean_ms, p50_ms, "
        "p95_ms, p99_ms, p999_ms, max_ms, client_cpu_s, latency_hist, agent, recorded_at, index_used, plan, "
        "answers, warmup_queries, warmup_s) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)", err);
    int rc = st ? VB_STORE_OK : s->last;
    if (st) {
        int i = 1;
        bind_keys(st, &i, r, engine, dataset);
        sqlite3_bind_int(st, i++, w->ef_search);
        sqlite3_bind_int(st, i++, (int)(w->clients ? w->clients : 1));
        bind_measure(st, &i, m, &lat);
        store_bind_text(st, i++, agent);
        store_bind_text(st, i++, now);
        bind_index_used(st, &i, m);
        /* Kept as the agent sent it; report/export_annb.c checks its shape when it reads it. */
        if (w->answers.len > 0) sqlite3_bind_blob(st, i++, w->answers.data, (int)w->answers.len, SQLITE_STATIC);
        else sqlite3_bind_null(st, i++);
        if (w->warmup_queries > 0) {
            sqlite3_bind_int64(st, i++, (sqlite3_int64)w->warmup_queries);
            sqlite3_bind_double(st, i++, w->warmup_s);
        } else {
            sqlite3_bind_null(st, i++);
            sqlite3_bind_null(st, i++);
        }
        rc = store_run(s, st, err, "recording a recall sweep result");
    }
    free(lat.blob);
    return rc;
}

static int insert_window(vb_store *s, const Vbench__Result *r, const char *engine, const char *dataset,
                         const char *agent, const char *now, vb_error *err) {
    const Vbench__WindowResult *w = r->window;
    latency_cols lat, lag;
    int lrc = latency_decode(s, w->latency, r->result_key, &lat, err);
    if (lrc) return lrc;
    if ((lrc = latency_decode(s, w->lag, r->result_key, &lag, err))) {
        free(lat.blob);
        return lrc;
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
    sqlite3_stmt *st = store_prepare(s,
        "INSERT INTO window_result (result_key, item_key, engine, dataset, clients, repeat, ef_search, window_s, "
        "queries, errors, qps, mean_ms, p50_ms, p95_ms, p99_ms, p999_ms, max_ms, in_call_s, in_flight, qps_x_p50, "
        "fraction_in_call_min, fraction_in_call_mean, fraction_in_call, client_cpu_s, warmup_queries, edge_queries, "
        "server_calls, server_exec_s, window_start, wait_rounds, wait_unit, server_window_calls, server_window_exec_s, "
        "target_rate, late_starts, lag_p99_ms, clients_lost, latency_hist, agent, recorded_at) VALUES "
        "(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)", err);
    int rc = st ? VB_STORE_OK : s->last;
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
        store_bind_text(st, i++, fjson);
        sqlite3_bind_double(st, i++, w->client_cpu_s);
        sqlite3_bind_int64(st, i++, (sqlite3_int64)w->warmup_queries);
        sqlite3_bind_int64(st, i++, (sqlite3_int64)w->edge_queries);
        if (w->server_stats) sqlite3_bind_int64(st, i++, (sqlite3_int64)w->server_calls);
        else sqlite3_bind_null(st, i++);
        bind_double_or_null(st, i++, !w->server_stats, w->server_exec_s);
        bind_double_or_null(st, i++, !(w->window_start > 0), w->window_start);
        if (w->wait_rounds) sqlite3_bind_int64(st, i++, (sqlite3_int64)w->wait_rounds);
        else sqlite3_bind_null(st, i++);
        if (w->wait_rounds && w->wait_unit && w->wait_unit[0]) store_bind_text(st, i++, w->wait_unit);
        else sqlite3_bind_null(st, i++);
        if (w->server_window_calls > 0) sqlite3_bind_int64(st, i++, (sqlite3_int64)w->server_window_calls);
        else sqlite3_bind_null(st, i++);
        bind_double_or_null(st, i++, w->server_window_calls <= 0, w->server_window_exec_s);
        bind_double_or_null(st, i++, w->target_rate <= 0, w->target_rate);
        sqlite3_bind_int64(st, i++, (sqlite3_int64)w->late_starts);
        bind_double_or_null(st, i++, lag.empty, lag.p99);
        sqlite3_bind_int64(st, i++, (sqlite3_int64)w->clients_lost);
        sqlite3_bind_blob(st, i++, lat.blob, (int)lat.blob_len, SQLITE_TRANSIENT);
        store_bind_text(st, i++, agent);
        store_bind_text(st, i++, now);
        rc = store_run(s, st, err, "recording a concurrency window");
    }
    free(fjson);
    free(lat.blob);
    free(lag.blob);
    return rc;
}

static int insert_filtered(vb_store *s, const Vbench__Result *r, const char *engine, const char *dataset,
                           const char *agent, const char *now, vb_error *err) {
    const Vbench__FilteredResult *w = r->filtered;
    const Vbench__Measurement *m = measure_of(w->m);
    latency_cols lat;
    int lrc = latency_decode(s, m->latency, r->result_key, &lat, err);
    if (lrc) return lrc;
    sqlite3_stmt *st = store_prepare(s,
        "INSERT INTO filtered_result (result_key, item_key, engine, dataset, selectivity, passing_rows, filter, "
        "ef_search, queries, recall, id_overlap, short_answers, duplicate_answers, duplicate_example, errors, "
        "elapsed_s, qps, mean_ms, p50_ms, p95_ms, p99_ms, p999_ms, max_ms, client_cpu_s, latency_hist, agent, "
        "recorded_at, index_used, plan, predicate, passed_share) "
        "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
        err);
    int rc = st ? VB_STORE_OK : s->last;
    if (st) {
        int i = 1;
        bind_keys(st, &i, r, engine, dataset);
        sqlite3_bind_double(st, i++, w->selectivity);
        sqlite3_bind_int64(st, i++, (sqlite3_int64)w->passing_rows);
        store_bind_text(st, i++, w->filter);
        sqlite3_bind_int(st, i++, w->ef_search);
        bind_measure(st, &i, m, &lat);
        store_bind_text(st, i++, agent);
        store_bind_text(st, i++, now);
        bind_index_used(st, &i, m);
        store_bind_text(st, i++, w->predicate && w->predicate[0] ? w->predicate : "range");
        if (w->passed_share > 0) sqlite3_bind_double(st, i++, w->passed_share);
        else sqlite3_bind_null(st, i++);   /* an older agent's result: not sent */
        rc = store_run(s, st, err, "recording a filtered result");
    }
    free(lat.blob);
    return rc;
}

static int insert_churn(vb_store *s, const Vbench__Result *r, const char *engine, const char *dataset,
                        const char *agent, const char *now, vb_error *err) {
    const Vbench__ChurnResult *c = r->churn;
    const Vbench__Measurement *m = measure_of(c->m);
    if (c->stage < VBENCH__CHURN_STAGE__CHURN_BEFORE || c->stage > VBENCH__CHURN_STAGE__CHURN_CHECKPOINT)
        return store_poison(s, err, "result %s: churn stage %d is not one of this coordinator's", r->result_key, (int)c->stage);
    latency_cols lat;
    int lrc = latency_decode(s, m->latency, r->result_key, &lat, err);
    if (lrc) return lrc;
    int measured = c->stage == VBENCH__CHURN_STAGE__CHURN_BEFORE || c->stage == VBENCH__CHURN_STAGE__CHURN_AFTER;
    int rows = !measured && c->stage != VBENCH__CHURN_STAGE__CHURN_MAINTAIN;
    int reinsert = c->stage == VBENCH__CHURN_STAGE__CHURN_REINSERT;
    sqlite3_stmt *st = store_prepare(s,
        "INSERT INTO churn_result (result_key, item_key, engine, dataset, stage, qps, recall, p50_ms, p99_ms, "
        "queries, short_answers, errors, rows_planned, rows_done, rows_from, seconds, rows_per_s, completed, "
        "ids_reused, agent, recorded_at, duplicate_answers, duplicate_example, repeat) VALUES "
        "(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)", err);
    int rc = st ? VB_STORE_OK : s->last;
    if (st) {
        int i = 1;
        bind_keys(st, &i, r, engine, dataset);
        store_bind_text(st, i++, vb_wire_churn_stage_name(c->stage));
        bind_double_or_null(st, i++, !measured, m->qps);
        bind_double_or_null(st, i++, !measured, m->recall);
        bind_double_or_null(st, i++, !measured || lat.empty, lat.p50);
        bind_double_or_null(st, i++, !measured || lat.empty, lat.p99);
        if (measured) {
            sqlite3_bind_int64(st, i++, (sqlite3_int64)m->queries);
            sqlite3_bind_int64(st, i++, (sqlite3_int64)m->short_answers);
            sqlite3_bind_int64(st, i++, (sqlite3_int64)m->errors);
        } else {
            for (int j = 0; j < 3; j++) sqlite3_bind_null(st, i++);
        }
        sqlite3_bind_int64(st, i++, (sqlite3_int64)c->rows_planned);
        if (rows) sqlite3_bind_int64(st, i++, (sqlite3_int64)c->rows_done);
        else sqlite3_bind_null(st, i++);
        int attempt = reinsert || c->stage == VBENCH__CHURN_STAGE__CHURN_CHECKPOINT;
        if (attempt) sqlite3_bind_int64(st, i++, (sqlite3_int64)c->rows_from);
        else sqlite3_bind_null(st, i++);
        sqlite3_bind_double(st, i++, c->seconds);
        bind_double_or_null(st, i++, !rows, c->rows_per_s);
        if (reinsert) sqlite3_bind_int(st, i++, c->completed);
        else sqlite3_bind_null(st, i++);
        if (reinsert) sqlite3_bind_int(st, i++, c->ids_reused);
        else sqlite3_bind_null(st, i++);
        store_bind_text(st, i++, agent);
        store_bind_text(st, i++, now);
        /* before / after only; 0 (the column's default) for the stages that run no queries */
        sqlite3_bind_int64(st, i++, measured ? (sqlite3_int64)m->duplicate_answers : 0);
        store_bind_text(st, i++, measured && m->duplicate_example && *m->duplicate_example ? m->duplicate_example : NULL);
        if (measured) sqlite3_bind_int(st, i++, c->repeat > 0 ? (int)c->repeat : 1);   /* 0: an older agent */
        else sqlite3_bind_null(st, i++);
        rc = store_run(s, st, err, "recording a churn result");
    }
    free(lat.blob);
    return rc;
}

static int insert_load_checkpoint(vb_store *s, const Vbench__Result *r, const char *agent, const char *now,
                                  vb_error *err) {
    const Vbench__BuildResult *b = r->build;
    sqlite3_stmt *st = store_prepare(s,
        "INSERT INTO load_checkpoint (result_key, item_key, attempt, connections, slice_rows, rows, load_s, attempts, "
        "agent, recorded_at) VALUES (?,?,?,?,?,?,?,?,?,?)", err);
    if (!st) return s->last;
    store_bind_text(st, 1, r->result_key);
    store_bind_text(st, 2, r->item_key);
    sqlite3_bind_int(st, 3, (int)r->attempt);
    sqlite3_bind_int(st, 4, (int)b->load_connections);
    sqlite3_bind_int64(st, 5, (sqlite3_int64)b->slice_rows);
    sqlite3_bind_int64(st, 6, (sqlite3_int64)b->rows);
    sqlite3_bind_double(st, 7, b->load_s);
    sqlite3_bind_int(st, 8, (int)b->attempts);
    store_bind_text(st, 9, agent);
    store_bind_text(st, 10, now);
    return store_run(s, st, err, "recording a load checkpoint");
}

/* p50 and p99 of a wire histogram in ms, NULL columns when it is empty (or absent). */
static int bind_hist_p50_p99(vb_store *s, sqlite3_stmt *st, int *i, const Vbench__Histogram *h, const char *key,
                             vb_error *err) {
    latency_cols c;
    int rc = latency_decode(s, h, key, &c, err);
    if (rc) return rc;
    bind_double_or_null(st, (*i)++, c.empty, c.p50);
    bind_double_or_null(st, (*i)++, c.empty, c.p99);
    free(c.blob);
    return VB_STORE_OK;
}

static int insert_streaming(vb_store *s, const Vbench__Result *r, const char *engine, const char *dataset,
                            const char *agent, const char *now, vb_error *err) {
    const Vbench__StreamingResult *w = r->streaming;
    const Vbench__Measurement *m = measure_of(w->m);
    latency_cols lat;
    int lrc = latency_decode(s, m->latency, r->result_key, &lat, err);
    if (lrc) return lrc;
    sqlite3_stmt *st = store_prepare(s,
        "INSERT INTO streaming_result (result_key, item_key, engine, dataset, attempt, stage_index, stage, at_rest, "
        "insert_rate, clients, rows_total, rows_initial, rows_visible, queries, recall, short_answers, errors, "
        "elapsed_s, qps, mean_ms, p50_ms, p95_ms, p99_ms, p999_ms, max_ms, latency_hist, fresh_rows_found, "
        "rows_during_window, rows_scheduled, rows_inserted, interval_s, offered_rows_s, achieved_rows_s, "
        "insert_p50_ms, insert_p99_ms, max_lag_s, fresh_probes, fresh_never, fresh_p50_ms, fresh_p99_ms, "
        "insert_errors, rows_inserted_total, rows_scheduled_total, recall_full, rows_scheduled_window_end, "
        "fresh_row_max, interval_max_lag_s, agent, recorded_at) VALUES "
        "(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)", err);
    int rc = st ? VB_STORE_OK : s->last;
    if (st) {
        int i = 1;
        bind_keys(st, &i, r, engine, dataset);
        sqlite3_bind_int64(st, i++, r->attempt);
        sqlite3_bind_int64(st, i++, w->stage_index);
        sqlite3_bind_double(st, i++, w->stage);
        sqlite3_bind_int(st, i++, w->at_rest);
        sqlite3_bind_double(st, i++, w->insert_rate);
        sqlite3_bind_int64(st, i++, w->clients);
        sqlite3_bind_int64(st, i++, (sqlite3_int64)w->rows_total);
        sqlite3_bind_int64(st, i++, (sqlite3_int64)w->rows_initial);
        sqlite3_bind_int64(st, i++, (sqlite3_int64)w->rows_visible);
        sqlite3_bind_int64(st, i++, (sqlite3_int64)m->queries);
        bind_double_or_null(st, i++, m->queries == 0, m->recall);
        sqlite3_bind_int64(st, i++, (sqlite3_int64)m->short_answers);
        sqlite3_bind_int64(st, i++, (sqlite3_int64)m->errors);
        sqlite3_bind_double(st, i++, m->elapsed_s);
        sqlite3_bind_double(st, i++, m->qps);
        bind_latency(st, &i, &lat);
        sqlite3_bind_blob(st, i++, lat.blob, (int)lat.blob_len, SQLITE_TRANSIENT);
        sqlite3_bind_int64(st, i++, (sqlite3_int64)w->fresh_rows_found);
        sqlite3_bind_int64(st, i++, (sqlite3_int64)w->rows_during_window);
        sqlite3_bind_int64(st, i++, (sqlite3_int64)w->rows_scheduled);
        sqlite3_bind_int64(st, i++, (sqlite3_int64)w->rows_inserted);
        sqlite3_bind_double(st, i++, w->interval_s);
        bind_double_or_null(st, i++, w->at_rest, w->offered_rows_s);
        bind_double_or_null(st, i++, w->at_rest, w->achieved_rows_s);
        rc = bind_hist_p50_p99(s, st, &i, w->insert_latency, r->result_key, err);
        if (rc == VB_STORE_OK) {
            sqlite3_bind_double(st, i++, w->max_lag_s);
            sqlite3_bind_int64(st, i++, (sqlite3_int64)w->fresh_probes);
            sqlite3_bind_int64(st, i++, (sqlite3_int64)w->fresh_never);
            rc = bind_hist_p50_p99(s, st, &i, w->freshness, r->result_key, err);
        }
        if (rc == VB_STORE_OK) {
            sqlite3_bind_int64(st, i++, (sqlite3_int64)w->insert_errors);
            sqlite3_bind_int64(st, i++, (sqlite3_int64)w->rows_inserted_total);
            sqlite3_bind_int64(st, i++, (sqlite3_int64)w->rows_scheduled_total);
            bind_double_or_null(st, i++, w->recall_full < 0, w->recall_full);
            /* 0 from an agent before issue 36.1, which did not send them */
            if (w->rows_scheduled_window_end > 0)
                sqlite3_bind_int64(st, i++, (sqlite3_int64)w->rows_scheduled_window_end);
            else
                sqlite3_bind_null(st, i++);
            if (w->fresh_rows_found > 0 && w->fresh_row_max > 0)
                sqlite3_bind_int64(st, i++, (sqlite3_int64)w->fresh_row_max);
            else
                sqlite3_bind_null(st, i++);
            bind_double_or_null(st, i++, w->rows_scheduled_window_end == 0, w->interval_max_lag_s);
            store_bind_text(st, i++, agent);
            store_bind_text(st, i++, now);
            rc = store_run(s, st, err, "recording a streaming window");
        } else
            sqlite3_finalize(st);
    }
    free(lat.blob);
    return rc;
}

/* A pass's failed queries as a mask over its n queries; POISON for an index out of range. *mask is malloc'd. */
static int failed_mask(vb_store *s, const Vbench__Result *r, const char *pass, const uint32_t *idx, size_t n_idx,
                       size_t n, uint8_t **mask, vb_error *err) {
    *mask = calloc(n ? n : 1, 1);
    if (!*mask) return store_fail(s, err, VB_STORE_RETRY, "%s: out of memory", s->path);
    for (size_t i = 0; i < n_idx; i++) {
        if (idx[i] >= n) {
            free(*mask);
            *mask = NULL;
            return store_poison(s, err, "result %s: failed %s query %u of %zu", r->result_key, pass, idx[i], n);
        }
        (*mask)[idx[i]] = 1;
    }
    return VB_STORE_OK;
}

/* The rows of one pass in cold_start_query, through one statement; rolling: the cold pass's rolling medians (NULL
 * for warm). */
static int insert_cold_queries(vb_store *s, const Vbench__Result *r, const char *pass, const uint64_t *ns, size_t n,
                               const uint8_t *failed, const double *rolling, vb_error *err) {
    sqlite3_stmt *st = store_prepare(s, "INSERT INTO cold_start_query (result_key, pass, n, latency_ms, ok, rolling_p50_ms) "
                                  "VALUES (?, ?, ?, ?, ?, ?)", err);
    if (!st) return s->last;
    store_bind_text(st, 1, r->result_key);
    store_bind_text(st, 2, pass);
    int rc = SQLITE_DONE;
    for (size_t i = 0; i < n && rc == SQLITE_DONE; i++) {
        sqlite3_bind_int64(st, 3, (sqlite3_int64)(i + 1));
        sqlite3_bind_double(st, 4, (double)ns[i] / 1e6);
        sqlite3_bind_int(st, 5, !failed[i]);
        bind_double_or_null(st, 6, !rolling || isnan(rolling[i]), rolling ? rolling[i] : 0);
        rc = sqlite3_step(st);
        sqlite3_reset(st);
    }
    vb_store_class cls = VB_STORE_OK;
    if (rc != SQLITE_DONE)
        cls = store_fail(s, err, store_classify(rc), "%s: recording a cold start's query: %s", s->path, sqlite3_errmsg(s->db));
    sqlite3_finalize(st);
    return cls;
}

/* A cold start: the summary computed here from the queries (metrics/coldstart.h), the queries beside it. */
static int insert_cold_start(vb_store *s, const Vbench__Result *r, const char *engine, const char *dataset,
                             const char *agent, const char *now, vb_error *err) {
    const Vbench__ColdStartResult *c = r->cold_start;
    uint8_t *cf = NULL, *wf = NULL;
    double *rolling = NULL;
    vb_coldstart sum;
    int rc = VB_STORE_OK;
    if (c->applicable) {
        if (c->n_cold_ns == 0 || c->n_warm_ns == 0)
            return store_poison(s, err, "result %s: a cold start with %zu cold and %zu warm queries", r->result_key,
                          c->n_cold_ns, c->n_warm_ns);
        if ((rc = failed_mask(s, r, "cold", c->cold_failed, c->n_cold_failed, c->n_cold_ns, &cf, err)) ||
            (rc = failed_mask(s, r, "warm", c->warm_failed, c->n_warm_failed, c->n_warm_ns, &wf, err)))
            goto out;
        if (!(rolling = malloc(c->n_cold_ns * sizeof *rolling))) {
            rc = store_fail(s, err, VB_STORE_RETRY, "%s: out of memory", s->path);
            goto out;
        }
        if (vb_coldstart_summarize(c->cold_ns, cf, c->n_cold_ns, c->warm_ns, wf, c->n_warm_ns, rolling, &sum) != 0) {
            rc = store_poison(s, err, "result %s: a cold start whose every cold or every warm query failed (%s)",
                        r->result_key, c->first_error && *c->first_error ? c->first_error : "no message");
            goto out;
        }
    }
    sqlite3_stmt *st = store_prepare(s,
        "INSERT INTO cold_start_result (result_key, item_key, engine, dataset, applicable, reason, ef_search, queries, "
        "errors, rolling_window, tolerance, evicted_files, evicted_bytes, restart_s, first_ms, cold_mean_ms, "
        "cold_p50_ms, cold_max_ms, warm_first_ms, warm_mean_ms, warm_p50_ms, ratio_first, ratio_mean, ratio_p50, "
        "warm_after, warm_after_s, session_reopened, first_error, agent, recorded_at) "
        "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)", err);
    if (!st) {
        rc = s->last;
        goto out;
    }
    int i = 1, na = !c->applicable;
    bind_keys(st, &i, r, engine, dataset);
    sqlite3_bind_int(st, i++, c->applicable);
    store_bind_text(st, i++, c->reason && *c->reason ? c->reason : NULL);
    if (na) {
        for (int j = 0; j < 21; j++) sqlite3_bind_null(st, i++);   /* ef_search .. session_reopened */
    } else {
        sqlite3_bind_int(st, i++, c->ef_search);
        sqlite3_bind_int64(st, i++, (sqlite3_int64)c->n_cold_ns);
        sqlite3_bind_int64(st, i++, (sqlite3_int64)(c->n_cold_failed + c->n_warm_failed));
        sqlite3_bind_int(st, i++, VB_COLDSTART_WINDOW);
        sqlite3_bind_double(st, i++, VB_COLDSTART_TOLERANCE);
        sqlite3_bind_int64(st, i++, (sqlite3_int64)c->evicted_files);
        sqlite3_bind_int64(st, i++, (sqlite3_int64)c->evicted_bytes);
        sqlite3_bind_double(st, i++, c->restart_s);
        double v[] = {sum.first_ms, sum.cold_mean_ms, sum.cold_p50_ms, sum.cold_max_ms, sum.warm_first_ms,
                      sum.warm_mean_ms, sum.warm_p50_ms, sum.ratio_first, sum.ratio_mean, sum.ratio_p50};
        for (size_t j = 0; j < sizeof v / sizeof v[0]; j++) bind_double_or_null(st, i++, !isfinite(v[j]), v[j]);
        if (sum.warm_after > 0) {
            sqlite3_bind_int64(st, i++, sum.warm_after);
            sqlite3_bind_double(st, i++, sum.warm_after_s);
        } else {
            sqlite3_bind_null(st, i++);
            sqlite3_bind_null(st, i++);
        }
        sqlite3_bind_int(st, i++, c->session_reopened);
    }
    store_bind_text(st, i++, c->first_error && *c->first_error ? c->first_error : NULL);
    store_bind_text(st, i++, agent);
    store_bind_text(st, i++, now);
    rc = store_run(s, st, err, "recording a cold start");
    if (rc == VB_STORE_OK && c->applicable)
        rc = insert_cold_queries(s, r, "cold", c->cold_ns, c->n_cold_ns, cf, rolling, err);
    if (rc == VB_STORE_OK && c->applicable)
        rc = insert_cold_queries(s, r, "warm", c->warm_ns, c->n_warm_ns, wf, NULL, err);
out:
    free(cf), free(wf), free(rolling);
    return rc;
}

static int insert_build(vb_store *s, const Vbench__Result *r, const char *engine, const char *dataset,
                        const char *agent, const char *now, vb_error *err) {
    const Vbench__BuildResult *b = r->build;
    if (b->checkpoint) return insert_load_checkpoint(s, r, agent, now, err);
    sqlite3_stmt *st = store_prepare(s,
        "INSERT INTO build_result (result_key, item_key, engine, dataset, rows, load_s, build_s, first_query_s, "
        "rows_per_s, index_bytes, table_bytes, client_cpu_s, load_connections, engine_version, dataset_hash, agent, "
        "recorded_at, attempts) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)", err);
    if (!st) return s->last;
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
    store_bind_text(st, i++, b->engine_version);
    store_bind_text(st, i++, b->dataset_hash);
    store_bind_text(st, i++, agent);
    store_bind_text(st, i++, now);
    sqlite3_bind_int(st, i++, b->attempts > 0 ? (int)b->attempts : 1);
    return store_run(s, st, err, "recording a build result");
}

static int result_known(vb_store *s, const char *key, int *known, vb_error *err) {
    sqlite3_stmt *st = store_prepare(s, "SELECT 1 FROM build_result WHERE result_key = ?1 UNION ALL "
                                  "SELECT 1 FROM sweep_result WHERE result_key = ?1 UNION ALL "
                                  "SELECT 1 FROM window_result WHERE result_key = ?1 UNION ALL "
                                  "SELECT 1 FROM filtered_result WHERE result_key = ?1 UNION ALL "
                                  "SELECT 1 FROM churn_result WHERE result_key = ?1 UNION ALL "
                                  "SELECT 1 FROM load_checkpoint WHERE result_key = ?1 UNION ALL "
                                  "SELECT 1 FROM streaming_result WHERE result_key = ?1 UNION ALL "
                                  "SELECT 1 FROM cold_start_result WHERE result_key = ?1", err);
    if (!st) return s->last;
    store_bind_text(st, 1, key);
    int rc = sqlite3_step(st);
    *known = rc == SQLITE_ROW;
    vb_store_class cls = VB_STORE_OK;
    if (rc != SQLITE_ROW && rc != SQLITE_DONE) cls = store_db_error(s, err, "looking up a result key");
    sqlite3_finalize(st);
    return cls;
}

/* The result's Measurement, when it has one that scored recall with its distribution (an older agent sends none):
 * a sweep or filtered point, churn before / after, a streaming window. */
static const Vbench__Measurement *measured_recall(const Vbench__Result *r) {
    const Vbench__Measurement *m = NULL;
    switch (r->body_case) {
    case VBENCH__RESULT__BODY_SWEEP: m = r->sweep->m; break;
    case VBENCH__RESULT__BODY_FILTERED: m = r->filtered->m; break;
    case VBENCH__RESULT__BODY_CHURN: m = r->churn->m; break;
    case VBENCH__RESULT__BODY_STREAMING: m = r->streaming->m; break;
    default: break;
    }
    return m && m->recall_queries > 0 ? m : NULL;
}

/* The one place a Measurement's recall distribution becomes a row (table recall_dist), for every kind of result.
 * The per-query values are kept as sent when their length is whole floats; a blob of another length is a bad
 * result and poisons it. */
static int insert_recall_dist(vb_store *s, const Vbench__Result *r, const Vbench__Measurement *m, vb_error *err) {
    if (m->query_recall.len % 4 != 0)
        return store_poison(s, err, "result %s: query_recall of %zu bytes is not whole float32 values", r->result_key,
                      m->query_recall.len);
    sqlite3_stmt *st = store_prepare(s,
        "INSERT INTO recall_dist (result_key, item_key, queries, recall_min, recall_p1, recall_p10, recall_p50, "
        "zero_share, below_half_share, query_recall) VALUES (?,?,?,?,?,?,?,?,?,?)", err);
    if (!st) return s->last;
    store_bind_text(st, 1, r->result_key);
    store_bind_text(st, 2, r->item_key);
    sqlite3_bind_int64(st, 3, (sqlite3_int64)m->recall_queries);
    sqlite3_bind_double(st, 4, m->recall_min);
    sqlite3_bind_double(st, 5, m->recall_p1);
    sqlite3_bind_double(st, 6, m->recall_p10);
    sqlite3_bind_double(st, 7, m->recall_p50);
    sqlite3_bind_double(st, 8, m->recall_zero_share);
    sqlite3_bind_double(st, 9, m->recall_below_half_share);
    if (m->query_recall.len > 0) sqlite3_bind_blob(st, 10, m->query_recall.data, (int)m->query_recall.len, SQLITE_STATIC);
    else sqlite3_bind_null(st, 10);
    return store_run(s, st, err, "recording a recall distribution");
}

int vb_store_commit_result(vb_store *s, const Vbench__Result *r, const char *engine, const char *dataset,
                           const char *agent, int *duplicate, vb_error *err) {
    char now[40];
    vb_store_now(now, sizeof now);
    *duplicate = 0;
    switch (r->body_case) {
    case VBENCH__RESULT__BODY_BUILD:
    case VBENCH__RESULT__BODY_SWEEP:
    case VBENCH__RESULT__BODY_WINDOW:
    case VBENCH__RESULT__BODY_FILTERED:
    case VBENCH__RESULT__BODY_CHURN:
    case VBENCH__RESULT__BODY_STREAMING:
    case VBENCH__RESULT__BODY_COLD_START: break;
    default: return store_poison(s, err, "result %s has no body (nothing to record)", r->result_key);
    }
    if (store_exec(s, "BEGIN IMMEDIATE", err)) return s->last;
    int known = 0;
    if (result_known(s, r->result_key, &known, err)) {
        store_rollback(s);
        return s->last;
    }
    if (known) {
        *duplicate = 1;
        return store_commit(s, err);
    }
    int rc = VB_STORE_OK;
    switch (r->body_case) {
    case VBENCH__RESULT__BODY_BUILD: rc = insert_build(s, r, engine, dataset, agent, now, err); break;
    case VBENCH__RESULT__BODY_SWEEP: rc = insert_sweep(s, r, engine, dataset, agent, now, err); break;
    case VBENCH__RESULT__BODY_WINDOW: rc = insert_window(s, r, engine, dataset, agent, now, err); break;
    case VBENCH__RESULT__BODY_FILTERED: rc = insert_filtered(s, r, engine, dataset, agent, now, err); break;
    case VBENCH__RESULT__BODY_CHURN: rc = insert_churn(s, r, engine, dataset, agent, now, err); break;
    case VBENCH__RESULT__BODY_STREAMING: rc = insert_streaming(s, r, engine, dataset, agent, now, err); break;
    case VBENCH__RESULT__BODY_COLD_START: rc = insert_cold_start(s, r, engine, dataset, agent, now, err); break;
    default: break;
    }
    if (rc == VB_STORE_OK && !(r->body_case == VBENCH__RESULT__BODY_BUILD && r->build->checkpoint)) {
        /* the configuration's label is its plan item's engine (the adapter may run several configurations); a build
         * and a sweep point name the build of the index they are (build_repeats), their item's */
        const char *table = r->body_case == VBENCH__RESULT__BODY_BUILD      ? "build_result"
                          : r->body_case == VBENCH__RESULT__BODY_SWEEP      ? "sweep_result"
                          : r->body_case == VBENCH__RESULT__BODY_WINDOW     ? "window_result"
                          : r->body_case == VBENCH__RESULT__BODY_FILTERED   ? "filtered_result"
                          : r->body_case == VBENCH__RESULT__BODY_STREAMING  ? "streaming_result"
                          : r->body_case == VBENCH__RESULT__BODY_COLD_START ? "cold_start_result"
                                                                            : "churn_result";
        int builds = r->body_case == VBENCH__RESULT__BODY_BUILD || r->body_case == VBENCH__RESULT__BODY_SWEEP;
        char sql[200];
        snprintf(sql, sizeof sql, "UPDATE %s SET (config%s) = (SELECT engine%s FROM plan WHERE key = ?) WHERE "
                 "result_key = ?", table, builds ? ", build" : "", builds ? ", build" : "");
        sqlite3_stmt *st = store_prepare(s, sql, err);
        if (!st) rc = s->last;
        else {
            store_bind_text(st, 1, r->item_key);
            store_bind_text(st, 2, r->result_key);
            rc = store_run(s, st, err, "recording the configuration");
        }
    }
    const Vbench__Measurement *mr = rc == VB_STORE_OK ? measured_recall(r) : NULL;
    if (mr) rc = insert_recall_dist(s, r, mr, err);
    /* the window's wait profile (proto WaitCount), one row per class and event */
    for (size_t i = 0; rc == VB_STORE_OK && r->body_case == VBENCH__RESULT__BODY_WINDOW && i < r->window->n_waits; i++) {
        const Vbench__WaitCount *wc = r->window->waits[i];
        sqlite3_stmt *st = store_prepare(s, "INSERT OR REPLACE INTO window_wait (result_key, item_key, wait_class, event, "
                                      "samples, rounds) VALUES (?, ?, ?, ?, ?, ?)", err);
        if (!st) rc = s->last;
        else {
            store_bind_text(st, 1, r->result_key);
            store_bind_text(st, 2, r->item_key);
            store_bind_text(st, 3, wc->wait_class ? wc->wait_class : "");
            store_bind_text(st, 4, wc->event ? wc->event : "");
            sqlite3_bind_int64(st, 5, (sqlite3_int64)wc->samples);
            sqlite3_bind_int64(st, 6, (sqlite3_int64)r->window->wait_rounds);
            rc = store_run(s, st, err, "recording a window's wait profile");
        }
    }
    for (size_t i = 0; rc == VB_STORE_OK && i < r->n_server_counts; i++) {
        const Vbench__ServerCount *sc = r->server_counts[i];
        sqlite3_stmt *st = store_prepare(s, "INSERT OR REPLACE INTO server_count (result_key, item_key, command, sent, server) "
                                      "VALUES (?, ?, ?, ?, ?)", err);
        if (!st) rc = s->last;
        else {
            store_bind_text(st, 1, r->result_key);
            store_bind_text(st, 2, r->item_key);
            store_bind_text(st, 3, sc->command);
            sqlite3_bind_int64(st, 4, (sqlite3_int64)sc->sent);
            if (sc->server >= 0) sqlite3_bind_int64(st, 5, sc->server);
            else sqlite3_bind_null(st, 5);
            rc = store_run(s, st, err, "recording the server's command counts");
        }
    }
    if (rc == VB_STORE_OK && r->completes_item) {
        sqlite3_stmt *st = store_prepare(s, "UPDATE plan SET status = 'done', finished_at = ?, error = NULL WHERE key = ?", err);
        if (!st) rc = s->last;
        else {
            store_bind_text(st, 1, now);
            store_bind_text(st, 2, r->item_key);
            rc = store_run(s, st, err, "marking an item done");
        }
    }
    if (rc != VB_STORE_OK) {
        store_rollback(s);
        return rc;
    }
    return store_commit(s, err);
}
