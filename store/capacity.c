/* The capacity phase's reads of the results store (store/capacity.h). */
#include "store/capacity.h"

#include <sqlite3.h>
#include <stdio.h>
#include <string.h>

int vb_store_capacity_op(vb_store *s, const char *config, const char *dataset, double recall_target,
                         vb_capacity_op *out, vb_error *err) {
    memset(out, 0, sizeof *out);
    sqlite3 *db = vb_store_db(s);
    sqlite3_stmt *st = NULL;
    /* the one-client sweep's points (a sweep at several client counts scores windows, not the query set once) */
    const char *sql = "SELECT ef_search, recall FROM v_recall_sweep WHERE engine = ?1 AND dataset = ?2 "
                      "AND COALESCE(clients, 1) = 1 AND recall IS NOT NULL ORDER BY ef_search";
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
        vb_error_set(err, "store", VB_STORE_RETRY, "reading the recall sweep for the capacity phase: %s",
                     sqlite3_errmsg(db));
        return VB_STORE_RETRY;
    }
    sqlite3_bind_text(st, 1, config, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 2, dataset, -1, SQLITE_TRANSIENT);
    int rc;
    out->best_recall = -1;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        long ef = (long)sqlite3_column_int64(st, 0);
        double recall = sqlite3_column_double(st, 1);
        out->points++;
        if (recall > out->best_recall) out->best_recall = recall, out->best_ef = ef;
        if (!out->ef_search && recall >= recall_target) out->ef_search = ef, out->recall = recall;
    }
    int cls = VB_STORE_OK;
    if (rc != SQLITE_DONE) {
        vb_error_set(err, "store", VB_STORE_RETRY, "reading the recall sweep for the capacity phase: %s",
                     sqlite3_errmsg(db));
        cls = VB_STORE_RETRY;
    }
    sqlite3_finalize(st);
    return cls;
}

static const char *const stage_names[] = {"grow", "bisect", "descend", "confirm", "knee"};
static const char *const status_names[] = {"found", "recall_unreachable", "client_limit", "target_unreachable",
                                           "not_converged"};
static const char *const source_names[] = {"probe", "given", "sweep", "unreachable"};
#define NAME_OF(a, v) ((unsigned)(v) < sizeof(a) / sizeof(a[0]) ? (a)[v] : NULL)

static void bind_text_or_null(sqlite3_stmt *st, int i, const char *v) {
    if (v) sqlite3_bind_text(st, i, v, -1, SQLITE_TRANSIENT);
    else sqlite3_bind_null(st, i);
}

static int step_done(sqlite3 *db, sqlite3_stmt *st, const char *what, vb_error *err) {
    int rc = sqlite3_step(st);
    int cls = VB_STORE_OK;
    if (rc != SQLITE_DONE) {
        int code = sqlite3_extended_errcode(db) & 0xff;
        cls = code == SQLITE_CONSTRAINT || code == SQLITE_MISMATCH || code == SQLITE_TOOBIG ? VB_STORE_POISON
                                                                                             : VB_STORE_RETRY;
        vb_error_set(err, "store", cls, "%s: %s", what, sqlite3_errmsg(db));
    }
    sqlite3_finalize(st);
    return cls;
}

static sqlite3_stmt *prep(sqlite3 *db, const char *sql, vb_error *err) {
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
        vb_error_set(err, "store", VB_STORE_RETRY, "preparing a capacity insert: %s", sqlite3_errmsg(db));
        return NULL;
    }
    return st;
}

int vb_store_insert_capacity_window(vb_store *s, const Vbench__Result *r, const char *engine, const char *dataset,
                                    const char *agent, const char *now, vb_error *err) {
    sqlite3 *db = vb_store_db(s);
    const Vbench__CapacityWindow *c = r->capacity_window;
    const Vbench__WindowResult *w = c->w;
    const char *stage = NAME_OF(stage_names, c->stage);
    if (!w || !stage) {
        vb_error_set(err, "store", VB_STORE_POISON, "result %s: a capacity window without its window or with stage %d",
                     r->result_key, (int)c->stage);
        return VB_STORE_POISON;
    }
    char targets[512] = "";
    size_t used = 0;
    for (size_t i = 0; i < c->n_targets_ms && used < sizeof targets - 32; i++)
        used += (size_t)snprintf(targets + used, sizeof targets - used, "%s%g", i ? "," : "", c->targets_ms[i]);
    sqlite3_stmt *st = prep(db,
        "INSERT INTO capacity_window (result_key, item_key, engine, config, dataset, attempt, step, stage, target_ms, "
        "targets, met, offered_rate, achieved_rate, scheduled, started, clients, ef_search, recall, start_rate, window_s, "
        "window_start, queries, errors, p50_ms, p99_ms, p999_ms, late_starts, in_flight, client_cores, client_cpus, "
        "client_limited, client_reason, server_calls, server_exec_s, server_window_calls, server_window_exec_s, "
        "wait_rounds, wait_unit, agent, recorded_at) VALUES (?1, ?2, ?3, (SELECT engine FROM plan WHERE key = ?2), ?4, "
        "?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21, ?22, ?23, ?24, ?25, ?26, ?27, "
        "?28, ?29, ?30, ?31, ?32, ?33, ?34, ?35, ?36, ?37, ?38, ?39)", err);
    if (!st) return VB_STORE_RETRY;
    sqlite3_bind_text(st, 1, r->result_key, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 2, r->item_key, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 3, engine, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 4, dataset, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(st, 5, r->attempt);
    sqlite3_bind_int64(st, 6, c->step);
    sqlite3_bind_text(st, 7, stage, -1, SQLITE_STATIC);
    if (c->target_ms > 0) sqlite3_bind_double(st, 8, c->target_ms);
    else sqlite3_bind_null(st, 8);
    sqlite3_bind_text(st, 9, targets, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(st, 10, c->met);
    sqlite3_bind_double(st, 11, c->offered_rate);
    sqlite3_bind_double(st, 12, c->achieved_rate);
    sqlite3_bind_int64(st, 13, (sqlite3_int64)c->scheduled);
    sqlite3_bind_int64(st, 14, (sqlite3_int64)c->started);
    sqlite3_bind_int64(st, 15, w->clients);
    sqlite3_bind_int64(st, 16, c->ef_search);
    if (c->recall >= 0) sqlite3_bind_double(st, 17, c->recall);
    else sqlite3_bind_null(st, 17);
    sqlite3_bind_double(st, 18, c->start_rate);
    sqlite3_bind_double(st, 19, w->window_s);
    if (w->window_start > 0) sqlite3_bind_double(st, 20, w->window_start);
    else sqlite3_bind_null(st, 20);
    sqlite3_bind_int64(st, 21, (sqlite3_int64)w->queries);
    sqlite3_bind_int64(st, 22, (sqlite3_int64)w->errors);
    sqlite3_bind_double(st, 23, c->p50_ms);
    sqlite3_bind_double(st, 24, c->p99_ms);
    sqlite3_bind_double(st, 25, c->p999_ms);
    sqlite3_bind_int64(st, 26, (sqlite3_int64)w->late_starts);
    sqlite3_bind_double(st, 27, w->window_s > 0 ? w->in_call_s / w->window_s : 0);
    sqlite3_bind_double(st, 28, c->client_cores);
    sqlite3_bind_int64(st, 29, c->client_cpus);
    sqlite3_bind_int(st, 30, c->client_limited != 0);
    bind_text_or_null(st, 31, c->client_limited && c->client_reason ? c->client_reason : NULL);
    if (w->server_stats) {
        sqlite3_bind_int64(st, 32, (sqlite3_int64)w->server_calls);
        sqlite3_bind_double(st, 33, w->server_exec_s);
    } else {
        sqlite3_bind_null(st, 32);
        sqlite3_bind_null(st, 33);
    }
    if (w->server_window_calls > 0) {
        sqlite3_bind_int64(st, 34, (sqlite3_int64)w->server_window_calls);
        sqlite3_bind_double(st, 35, w->server_window_exec_s);
    } else {
        sqlite3_bind_null(st, 34);
        sqlite3_bind_null(st, 35);
    }
    if (w->wait_rounds) {
        sqlite3_bind_int64(st, 36, (sqlite3_int64)w->wait_rounds);
        bind_text_or_null(st, 37, w->wait_unit && w->wait_unit[0] ? w->wait_unit : NULL);
    } else {
        sqlite3_bind_null(st, 36);
        sqlite3_bind_null(st, 37);
    }
    bind_text_or_null(st, 38, agent);
    sqlite3_bind_text(st, 39, now, -1, SQLITE_TRANSIENT);
    int rc = step_done(db, st, "recording a capacity window", err);
    /* its wait profile, as a concurrency window's (window_wait under the same result key) */
    for (size_t i = 0; rc == VB_STORE_OK && i < w->n_waits; i++) {
        const Vbench__WaitCount *wc = w->waits[i];
        if (!(st = prep(db, "INSERT OR REPLACE INTO window_wait (result_key, item_key, wait_class, event, samples, rounds) "
                            "VALUES (?, ?, ?, ?, ?, ?)", err)))
            return VB_STORE_RETRY;
        sqlite3_bind_text(st, 1, r->result_key, -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(st, 2, r->item_key, -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(st, 3, wc->wait_class ? wc->wait_class : "", -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(st, 4, wc->event ? wc->event : "", -1, SQLITE_TRANSIENT);
        sqlite3_bind_int64(st, 5, (sqlite3_int64)wc->samples);
        sqlite3_bind_int64(st, 6, (sqlite3_int64)w->wait_rounds);
        rc = step_done(db, st, "recording a capacity window's wait profile", err);
    }
    return rc;
}

int vb_store_insert_capacity(vb_store *s, const Vbench__Result *r, const char *engine, const char *dataset,
                             const char *agent, const char *now, vb_error *err) {
    sqlite3 *db = vb_store_db(s);
    const Vbench__CapacitySummary *m = r->capacity;
    const char *status = NAME_OF(status_names, m->status), *source = NAME_OF(source_names, m->op_source);
    if (!status || !source) {
        vb_error_set(err, "store", VB_STORE_POISON, "result %s: capacity status %d or operating point source %d unknown",
                     r->result_key, (int)m->status, (int)m->op_source);
        return VB_STORE_POISON;
    }
    int found = m->status == VBENCH__CAPACITY_STATUS__CAPACITY_FOUND;
    sqlite3_stmt *st = prep(db,
        "INSERT INTO capacity_result (result_key, item_key, engine, config, dataset, attempt, target_ms, recall_target, "
        "status, reason, ef_search, recall, op_source, rate, fail_rate, p50_ms, p99_ms, p999_ms, repeats, repeats_met, "
        "knee_rate, knee_p99_ms, knee_failed, windows, start_rate, client_max_rate, agent, recorded_at) VALUES (?1, ?2, "
        "?3, (SELECT engine FROM plan WHERE key = ?2), ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, "
        "?18, ?19, ?20, ?21, ?22, ?23, ?24, ?25, ?26, ?27)", err);
    if (!st) return VB_STORE_RETRY;
    sqlite3_bind_text(st, 1, r->result_key, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 2, r->item_key, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 3, engine, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 4, dataset, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(st, 5, r->attempt);
    sqlite3_bind_double(st, 6, m->target_ms);
    sqlite3_bind_double(st, 7, m->recall_target);
    sqlite3_bind_text(st, 8, status, -1, SQLITE_STATIC);
    bind_text_or_null(st, 9, m->reason && m->reason[0] ? m->reason : NULL);
    sqlite3_bind_int64(st, 10, m->ef_search);
    if (m->recall >= 0) sqlite3_bind_double(st, 11, m->recall);
    else sqlite3_bind_null(st, 11);
    sqlite3_bind_text(st, 12, source, -1, SQLITE_STATIC);
    /* the rate is the capacity only when found; the other statuses keep what the search saw */
    if (found || m->rate > 0) sqlite3_bind_double(st, 13, m->rate);
    else sqlite3_bind_null(st, 13);
    if (m->fail_rate > 0) sqlite3_bind_double(st, 14, m->fail_rate);
    else sqlite3_bind_null(st, 14);
    int lat = m->repeats > 0 || found;
    for (int i = 0; i < 3; i++) {
        double v = i == 0 ? m->p50_ms : i == 1 ? m->p99_ms : m->p999_ms;
        if (lat && v > 0) sqlite3_bind_double(st, 15 + i, v);
        else sqlite3_bind_null(st, 15 + i);
    }
    sqlite3_bind_int64(st, 18, m->repeats);
    sqlite3_bind_int64(st, 19, m->repeats_met);
    if (m->knee_rate > 0) {
        sqlite3_bind_double(st, 20, m->knee_rate);
        sqlite3_bind_double(st, 21, m->knee_p99_ms);
        sqlite3_bind_int(st, 22, m->knee_failed != 0);
    } else {
        sqlite3_bind_null(st, 20);
        sqlite3_bind_null(st, 21);
        sqlite3_bind_null(st, 22);
    }
    sqlite3_bind_int64(st, 23, m->windows);
    sqlite3_bind_double(st, 24, m->start_rate);
    if (m->client_max_rate > 0) sqlite3_bind_double(st, 25, m->client_max_rate);
    else sqlite3_bind_null(st, 25);
    bind_text_or_null(st, 26, agent);
    sqlite3_bind_text(st, 27, now, -1, SQLITE_TRANSIENT);
    return step_done(db, st, "recording a capacity summary", err);
}
