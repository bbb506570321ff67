/* Servers started by the orchestrator (samples, sizes, state changes) and their CPU profiles. */
#include "store/store_int.h"

#include <stdio.h>
#include <string.h>

/* ---- servers (orchestrator reports) ------------------------------------------------------------------------ */

int vb_store_server_samples(vb_store *s, const char *engine, const char *item_key, Vbench__ServerSample **rows,
                            size_t n, vb_error *err) {
    if (n == 0) return VB_OK;
    if (store_exec(s, "BEGIN IMMEDIATE", err)) return s->last;
    sqlite3_stmt *st = store_prepare(s, "INSERT OR IGNORE INTO server_sample (engine, item_key, t, cgroup_bytes, rss_bytes, "
                                  "cpu_s, pss_bytes) VALUES (?,?,?,?,?,?,?)", err);
    if (!st) {
        store_rollback(s);
        return s->last;
    }
    for (size_t i = 0; i < n; i++) {
        sqlite3_reset(st);
        store_bind_text(st, 1, engine);
        store_bind_text(st, 2, item_key && *item_key ? item_key : NULL);
        sqlite3_bind_double(st, 3, rows[i]->wall);
        sqlite3_bind_int64(st, 4, (sqlite3_int64)rows[i]->cgroup_bytes);
        sqlite3_bind_int64(st, 5, (sqlite3_int64)rows[i]->rss_bytes);
        sqlite3_bind_double(st, 6, (double)rows[i]->cpu_usec / 1e6);
        sqlite3_bind_int64(st, 7, (sqlite3_int64)rows[i]->pss_bytes);
        if (sqlite3_step(st) != SQLITE_DONE) {
            sqlite3_finalize(st);
            store_db_error(s, err, "recording server samples");
            store_rollback(s);
            return s->last;
        }
    }
    sqlite3_finalize(st);
    return store_commit(s, err);
}

int vb_store_server_size(vb_store *s, const char *engine, const char *item_key, const char *path, long long bytes,
                         vb_error *err) {
    char now[40];
    vb_store_now(now, sizeof now);
    sqlite3_stmt *st = store_prepare(s, "INSERT INTO server_size (engine, item_key, path, bytes, recorded_at) VALUES (?,?,?,?,?)", err);
    if (!st) return s->last;
    store_bind_text(st, 1, engine);
    store_bind_text(st, 2, item_key && *item_key ? item_key : NULL);
    store_bind_text(st, 3, path);
    sqlite3_bind_int64(st, 4, bytes);
    store_bind_text(st, 5, now);
    return store_run(s, st, err, "recording a server size");
}

int vb_store_server_log(vb_store *s, const char *engine, const char *unit, const char *state, const char *message,
                        const char *log_tail, vb_error *err) {
    char now[40];
    vb_store_now(now, sizeof now);
    sqlite3_stmt *st = store_prepare(s, "INSERT INTO server_log (engine, unit, state, message, log_tail, recorded_at) "
                                  "VALUES (?,?,?,?,?,?)", err);
    if (!st) return s->last;
    store_bind_text(st, 1, engine);
    store_bind_text(st, 2, unit && *unit ? unit : NULL);
    store_bind_text(st, 3, state);
    store_bind_text(st, 4, message && *message ? message : NULL);
    store_bind_text(st, 5, log_tail && *log_tail ? log_tail : NULL);
    store_bind_text(st, 6, now);
    return store_run(s, st, err, "recording a server event");
}

/* ---- CPU profiles (server_profile) -------------------------------------------------------------------------- */

int vb_store_server_profile(vb_store *s, const char *engine, const char *config, const char *dataset,
                            const vb_store_profile_window *w, const Vbench__ServerProfile *pr, vb_error *err) {
    char now[40];
    vb_store_now(now, sizeof now);
    if (store_exec(s, "BEGIN IMMEDIATE", err)) return s->last;
    sqlite3_stmt *st = store_prepare(s, "INSERT OR REPLACE INTO server_profile (item_key, engine, config, dataset, clients, "
                                  "efficiency, window_start, window_end, samples, malformed, dropped, folded, "
                                  "recorded_at) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)", err);
    if (!st) return store_rollback(s), s->last;
    store_bind_text(st, 1, pr->item_key);
    store_bind_text(st, 2, engine);
    store_bind_text(st, 3, config);
    store_bind_text(st, 4, dataset);
    sqlite3_bind_int(st, 5, w->clients);
    if (w->has_efficiency) sqlite3_bind_double(st, 6, w->efficiency);
    sqlite3_bind_double(st, 7, pr->window_start);
    sqlite3_bind_double(st, 8, pr->window_end);
    sqlite3_bind_int64(st, 9, (sqlite3_int64)pr->samples);
    sqlite3_bind_int64(st, 10, (sqlite3_int64)pr->malformed);
    sqlite3_bind_int64(st, 11, (sqlite3_int64)pr->dropped);
    store_bind_text(st, 12, pr->folded ? pr->folded : "");
    store_bind_text(st, 13, now);
    if (store_run(s, st, err, "recording a server profile")) return store_rollback(s), s->last;
    if (!(st = store_prepare(s, "DELETE FROM server_profile_function WHERE item_key = ?", err))) return store_rollback(s), s->last;
    store_bind_text(st, 1, pr->item_key);
    if (store_run(s, st, err, "recording a server profile")) return store_rollback(s), s->last;
    for (size_t i = 0; i < pr->n_top; i++) {
        if (!(st = store_prepare(s, "INSERT INTO server_profile_function (item_key, rank, function, samples) VALUES (?,?,?,?)",
                           err)))
            return store_rollback(s), s->last;
        store_bind_text(st, 1, pr->item_key);
        sqlite3_bind_int(st, 2, (int)i + 1);
        store_bind_text(st, 3, pr->top[i]->name);
        sqlite3_bind_int64(st, 4, (sqlite3_int64)pr->top[i]->samples);
        if (store_run(s, st, err, "recording a server profile")) return store_rollback(s), s->last;
    }
    return store_commit(s, err);
}

int vb_store_has_server_profile(vb_store *s, const char *config, const char *dataset) {
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(s->db, "SELECT 1 FROM server_profile WHERE config = ? AND dataset = ?", -1, &st, NULL) != SQLITE_OK)
        return 0;
    store_bind_text(st, 1, config);
    store_bind_text(st, 2, dataset);
    int found = sqlite3_step(st) == SQLITE_ROW;
    sqlite3_finalize(st);
    return found;
}

int vb_store_window_for_profile(vb_store *s, const char *item_key, vb_store_profile_window *w) {
    memset(w, 0, sizeof *w);
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(s->db,
                           "SELECT w.clients, w.window_start, w.window_s, v.efficiency FROM window_result AS w "
                           "LEFT JOIN v_concurrency AS v ON v.engine = COALESCE(w.config, w.engine) AND v.dataset = "
                           "w.dataset AND v.clients = w.clients AND v.repeat = w.repeat AND v.qps = w.qps "
                           "AND v.target_rate IS w.target_rate WHERE w.item_key = ? AND w.window_start > 0 LIMIT 1",
                           -1, &st, NULL) != SQLITE_OK)
        return 0;
    store_bind_text(st, 1, item_key);
    int found = sqlite3_step(st) == SQLITE_ROW;
    if (found) {
        w->clients = sqlite3_column_int(st, 0);
        w->start = sqlite3_column_double(st, 1);
        w->end = w->start + sqlite3_column_double(st, 2);
        w->has_efficiency = sqlite3_column_type(st, 3) != SQLITE_NULL;
        w->efficiency = sqlite3_column_double(st, 3);
    }
    sqlite3_finalize(st);
    return found;
}
