/* The campaign row and its plan: the checkpoint of a run (items and their attempts), the checkpoints a resumed
 * build or churn continues from, the plan's tally. */
#include "store/store_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
    if (store_exec(s, "BEGIN IMMEDIATE", err)) return s->last;
    sqlite3_stmt *st = store_prepare(s, "INSERT INTO campaign (id, name, profile_source, profile_yaml, engines, status, "
                                  "runs, created_at, updated_at) VALUES (1, ?, ?, ?, ?, 'running', 0, ?, ?)", err);
    if (!st) goto fail;
    store_bind_text(st, 1, p->name);
    store_bind_text(st, 2, p->source);
    store_bind_text(st, 3, p->yaml);
    store_bind_text(st, 4, engines_csv);
    store_bind_text(st, 5, now);
    store_bind_text(st, 6, now);
    if (store_run(s, st, err, "recording the campaign")) goto fail;
    for (size_t i = 0; i < plan->n_items; i++) {
        const vb_plan_item *it = &plan->items[i];
        char point[512];
        point_text(it, point, sizeof point);
        st = store_prepare(s, "INSERT INTO plan (key, seq, phase, engine, dataset, point, build) VALUES (?, ?, ?, ?, ?, ?, ?)",
                     err);
        if (!st) goto fail;
        store_bind_text(st, 1, it->key);
        sqlite3_bind_int(st, 2, it->seq);
        store_bind_text(st, 3, vb_phase_name(it->kind));
        store_bind_text(st, 4, p->engines[it->engine].name);
        store_bind_text(st, 5, p->datasets[it->dataset].name);
        store_bind_text(st, 6, point);
        sqlite3_bind_int64(st, 7, it->p.build > 0 ? it->p.build : 1);
        if (store_run(s, st, err, "recording the plan")) goto fail;
    }
    return store_commit(s, err);
fail:
    store_rollback(s);
    return s->last;
}

static char *column_dup(sqlite3_stmt *st, int i) {
    const unsigned char *t = sqlite3_column_text(st, i);
    return t ? strdup((const char *)t) : NULL;
}

int vb_store_load_campaign(vb_store *s, char **yaml, char **source, char **engines, char **status, vb_error *err) {
    sqlite3_stmt *st = store_prepare(s, "SELECT profile_yaml, profile_source, engines, status FROM campaign WHERE id = 1", err);
    if (!st) return s->last;
    if (sqlite3_step(st) != SQLITE_ROW) {
        sqlite3_finalize(st);
        return vb_error_set(err, "results", 0, "%s holds no campaign (its creation did not finish): remove it and "
                                               "start again with `vbench run --out %s`", s->path, s->path);
    }
    *yaml = column_dup(st, 0);
    *source = column_dup(st, 1);
    *engines = column_dup(st, 2);
    *status = column_dup(st, 3);
    sqlite3_finalize(st);
    return VB_OK;
}

int vb_store_check_plan(vb_store *s, const vb_plan *plan, vb_error *err) {
    sqlite3_stmt *st = store_prepare(s, "SELECT key, seq FROM plan ORDER BY seq", err);
    if (!st) return s->last;
    size_t n = 0;
    int rc = VB_OK;
    while (sqlite3_step(st) == SQLITE_ROW) {
        const char *key = (const char *)sqlite3_column_text(st, 0);
        if (n >= plan->n_items || strcmp(plan->items[n].key, key) != 0) {
            rc = vb_error_set(err, "results", 0, "%s: stored plan item %zu (%s) does not match the profile's plan",
                              s->path, n, key);
            break;
        }
        n++;
    }
    sqlite3_finalize(st);
    if (rc == VB_OK && n != plan->n_items)
        rc = vb_error_set(err, "results", 0, "%s: stored plan has %zu items, the profile gives %zu", s->path, n,
                          plan->n_items);
    return rc;
}

int vb_store_begin_run(vb_store *s, int retry_failed, const char *resumed_by, vb_error *err) {
    char now[40];
    vb_store_now(now, sizeof now);
    if (store_exec(s, "BEGIN IMMEDIATE", err)) return s->last;
    char sql[1024];
    snprintf(sql, sizeof sql,
             "INSERT INTO event (at, level, item_key, source, message, kind) SELECT '%s', 'warn', key, 'coordinator', "
             "'item was running when the coordinator stopped; it runs again unless its agent comes back with it', "
             "'item_orphaned' "
             "FROM plan WHERE status = 'running';"
             "UPDATE plan SET status = 'interrupted' WHERE status = 'running';"
             "UPDATE plan SET status = 'pending' WHERE status = 'expired';"
             "UPDATE campaign SET runs = runs + 1, status = 'running', updated_at = '%s', finished_at = NULL;"
             /* a server whose last row says ready went down with a coordinator that could not say so (killed):
              * its row is closed here, so every server start has its end row */
             "INSERT INTO server_log (engine, unit, state, message, recorded_at) SELECT engine, unit, 'lost', "
             "'the coordinator stopped without recording this server''s end (killed?); closed when the campaign "
             "resumed', '%s' FROM server_log AS l WHERE state = 'ready' AND rowid = "
             "(SELECT MAX(rowid) FROM server_log WHERE engine = l.engine);",
             now, now, now);
    if (store_exec(s, sql, err)) goto fail;
    if (retry_failed && store_exec(s, "UPDATE plan SET status = 'pending', error = NULL WHERE status IN ('failed', 'skipped')", err))
        goto fail;
    if (resumed_by) {
        sqlite3_stmt *st = store_prepare(s, "INSERT INTO event (at, level, item_key, source, message, kind) "
                                      "VALUES (?, 'info', NULL, 'coordinator', 'resumed: ' || ?, 'resumed')", err);
        if (!st) goto fail;
        store_bind_text(st, 1, now);
        store_bind_text(st, 2, resumed_by);
        if (store_run(s, st, err, "recording the resume")) goto fail;
    }
    return store_commit(s, err);
fail:
    store_rollback(s);
    return s->last;
}

int vb_store_item_status(vb_store *s, const char *key, char *buf, size_t len, vb_error *err) {
    sqlite3_stmt *st = store_prepare(s, "SELECT status FROM plan WHERE key = ?", err);
    if (!st) return s->last;
    store_bind_text(st, 1, key);
    int rc = VB_OK;
    if (sqlite3_step(st) == SQLITE_ROW) snprintf(buf, len, "%s", sqlite3_column_text(st, 0));
    else rc = store_poison(s, err, "unknown plan item %s", key);
    sqlite3_finalize(st);
    return rc;
}

int vb_store_item_start(vb_store *s, const char *key, const char *agent, vb_error *err) {
    char now[40];
    vb_store_now(now, sizeof now);
    sqlite3_stmt *st = store_prepare(s, "UPDATE plan SET status = 'running', attempts = attempts + 1, agent = ?, "
                                  "started_at = ?, finished_at = NULL, error = NULL WHERE key = ?", err);
    if (!st) return s->last;
    store_bind_text(st, 1, agent);
    store_bind_text(st, 2, now);
    store_bind_text(st, 3, key);
    return store_run(s, st, err, "starting a plan item");
}

int vb_store_item_info(vb_store *s, const char *key, char *status, size_t status_len, int *attempts, char *agent,
                       size_t agent_len, vb_error *err) {
    sqlite3_stmt *st = store_prepare(s, "SELECT status, attempts, COALESCE(agent, '') FROM plan WHERE key = ?", err);
    if (!st) return s->last;
    store_bind_text(st, 1, key);
    int rc = VB_OK;
    if (sqlite3_step(st) == SQLITE_ROW) {
        snprintf(status, status_len, "%s", sqlite3_column_text(st, 0));
        *attempts = sqlite3_column_int(st, 1);
        snprintf(agent, agent_len, "%s", sqlite3_column_text(st, 2));
    } else {
        rc = store_poison(s, err, "unknown plan item %s", key);
    }
    sqlite3_finalize(st);
    return rc;
}

int vb_store_item_orphan(vb_store *s, char *key, size_t key_len, char *agent, size_t agent_len, vb_error *err) {
    sqlite3_stmt *st = store_prepare(s, "SELECT key, agent FROM plan WHERE attempts > 0 AND agent IS NOT NULL AND "
                                  "(status = 'running' OR (status = 'interrupted' AND error IS NULL)) "
                                  "ORDER BY started_at DESC LIMIT 1", err);
    if (!st) return s->last;
    key[0] = agent[0] = '\0';
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        snprintf(key, key_len, "%s", sqlite3_column_text(st, 0));
        snprintf(agent, agent_len, "%s", sqlite3_column_text(st, 1));
    }
    vb_store_class cls = VB_STORE_OK;
    if (rc != SQLITE_ROW && rc != SQLITE_DONE) cls = store_db_error(s, err, "reading the plan");
    sqlite3_finalize(st);
    return cls;
}

int vb_store_item_adopt(vb_store *s, const char *key, const char *agent, vb_error *err) {
    sqlite3_stmt *st = store_prepare(s, "UPDATE plan SET status = 'running', agent = ?, finished_at = NULL, error = NULL "
                                  "WHERE key = ?", err);
    if (!st) return s->last;
    store_bind_text(st, 1, agent);
    store_bind_text(st, 2, key);
    return store_run(s, st, err, "taking over a plan item");
}

int vb_store_item_finish(vb_store *s, const char *key, const char *status, const char *error, vb_error *err) {
    char now[40];
    vb_store_now(now, sizeof now);
    sqlite3_stmt *st = store_prepare(s, "UPDATE plan SET status = ?, finished_at = ?, error = ? WHERE key = ?", err);
    if (!st) return s->last;
    store_bind_text(st, 1, status);
    store_bind_text(st, 2, now);
    store_bind_text(st, 3, error);
    store_bind_text(st, 4, key);
    return store_run(s, st, err, "finishing a plan item");
}

int vb_store_set_status(vb_store *s, const char *status, vb_error *err) {
    char now[40];
    vb_store_now(now, sizeof now);
    int fin = strcmp(status, "finished") == 0;
    sqlite3_stmt *st = store_prepare(s, "UPDATE campaign SET status = ?, updated_at = ?, finished_at = ? WHERE id = 1", err);
    if (!st) return s->last;
    store_bind_text(st, 1, status);
    store_bind_text(st, 2, now);
    store_bind_text(st, 3, fin ? now : NULL);
    return store_run(s, st, err, "updating the campaign status");
}

int vb_store_churn_checkpoint(vb_store *s, const char *item_key, long *rows, vb_error *err) {
    sqlite3_stmt *st = store_prepare(s, "SELECT MAX(rows_done) FROM churn_result WHERE item_key = ? "
                                  "AND stage IN ('reinsert', 'checkpoint')", err);
    if (!st) return s->last;
    store_bind_text(st, 1, item_key);
    *rows = -1;
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL) *rows = (long)sqlite3_column_int64(st, 0);
    vb_store_class cls = VB_STORE_OK;
    if (rc != SQLITE_ROW && rc != SQLITE_DONE) cls = store_db_error(s, err, "reading a churn checkpoint");
    sqlite3_finalize(st);
    return cls;
}

int vb_store_load_checkpoint(vb_store *s, const char *item_key, vb_load_checkpoint *out, vb_error *err) {
    sqlite3_stmt *st = store_prepare(s, "SELECT connections, slice_rows, rows, load_s, attempts FROM load_checkpoint "
                                  "WHERE item_key = ? ORDER BY attempt DESC, rows DESC LIMIT 1", err);
    if (!st) return s->last;
    store_bind_text(st, 1, item_key);
    memset(out, 0, sizeof *out);
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        out->connections = sqlite3_column_int64(st, 0);
        out->slice_rows = sqlite3_column_int64(st, 1);
        out->rows = sqlite3_column_int64(st, 2);
        out->load_s = sqlite3_column_double(st, 3);
        out->attempts = sqlite3_column_int64(st, 4);
    }
    vb_store_class cls = VB_STORE_OK;
    if (rc != SQLITE_ROW && rc != SQLITE_DONE) cls = store_db_error(s, err, "reading a load checkpoint");
    sqlite3_finalize(st);
    return cls;
}

int vb_store_churn_reset(vb_store *s, const char *item_key, vb_error *err) {
    sqlite3_stmt *st = store_prepare(s, "DELETE FROM churn_result WHERE item_key = ?", err);
    if (!st) return s->last;
    store_bind_text(st, 1, item_key);
    if (store_run(s, st, err, "resetting a churn checkpoint")) return s->last;
    vb_store_event(s, VB_EVENT_CHURN_RESTARTED, "warn", item_key, "coordinator", "churn restarts from the beginning (on_resume: restart); "
                                                        "the earlier attempt's rows are discarded");
    return VB_OK;
}

int vb_store_plan_tally(vb_store *s, size_t *done, size_t *failed, size_t *expired, size_t *rest, char *not_done,
                        size_t len, vb_error *err) {
    *done = *failed = *expired = *rest = 0;
    if (not_done && len) not_done[0] = '\0';
    sqlite3_stmt *st = store_prepare(s, "SELECT key, status FROM plan ORDER BY seq", err);
    if (!st) return s->last;
    size_t used = 0;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        const char *key = (const char *)sqlite3_column_text(st, 0), *status = (const char *)sqlite3_column_text(st, 1);
        if (status && strcmp(status, "done") == 0) {
            (*done)++;
            continue;
        }
        if (status && (strcmp(status, "failed") == 0 || strcmp(status, "skipped") == 0)) (*failed)++;
        else if (status && strcmp(status, "expired") == 0) (*expired)++;
        else (*rest)++;
        if (not_done && used + 1 < len)
            used += (size_t)snprintf(not_done + used, len - used, "%s%s (%s)", used ? ", " : "", key ? key : "?",
                                     status ? status : "?");
        if (not_done && used >= len && len > 4) snprintf(not_done + len - 4, 4, "...");
    }
    vb_store_class cls = VB_STORE_OK;
    if (rc != SQLITE_DONE) cls = store_db_error(s, err, "reading the plan");
    sqlite3_finalize(st);
    return cls;
}
