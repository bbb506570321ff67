/* The table of result kinds (store_result_kinds, at the end): for each kind of Result, its table, its columns as
 * (name, value) pairs, the checks and computations before the row, the rows beside it, and the lines the
 * coordinator's terminal shows. results.c commits a result through its kind's entry; nothing else lists kinds.
 *
 * Adding a kind (docs/design.md, "Adding a result kind"): a column list (NAME_COLUMNS below, one C(kind, column,
 * value) per column of the table, P(kind, column, plan column) for one read from the plan item), its getters and
 * entries made by COLUMNS(), an entry in store_result_kinds, the CREATE TABLE in schema.sql and a view in
 * views.sql. tests/unit/test_result_kinds.c holds every list to its table and every oneof case to an entry. */
#include "store/store_int.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/wire.h"

/* ---- values ------------------------------------------------------------------------------------------------ */

static store_value v_null(void) { return (store_value){.type = STORE_NULL}; }
static store_value v_int(sqlite3_int64 i) { return (store_value){.type = STORE_INT, .i = i}; }
static store_value v_real(double d) { return (store_value){.type = STORE_REAL, .d = d}; }
/* NULL for a NULL pointer */
static store_value v_text(const char *s) { return s ? (store_value){.type = STORE_TEXT, .p = s} : v_null(); }
/* NULL for "" too: a string field the peer did not send */
static store_value v_text_set(const char *s) { return s && *s ? v_text(s) : v_null(); }
static store_value v_blob(const void *p, size_t n) { return (store_value){.type = STORE_BLOB, .p = p, .n = n}; }
static store_value v_int_or_null(int null, sqlite3_int64 i) { return null ? v_null() : v_int(i); }
static store_value v_real_or_null(int null, double d) { return null ? v_null() : v_real(d); }

/* The getters read the row w; R is its Result, M its Measurement (an empty one when it has none). */
#define R (w->r)
#define M (w->m)

/* Makes, from a kind's list, a getter per column (kind__column) and the kind's column table (kind_columns). */
#define GETTER(kind, col, expr) \
    static store_value kind##__##col(const store_row *w) { (void)w; return expr; }
#define NO_GETTER(kind, col, plan_col)
#define ENTRY(kind, col, expr) {#col, kind##__##col, NULL},
#define PLAN_ENTRY(kind, col, plan_col) {#col, NULL, #plan_col},
#define COLUMNS(kind, LIST)                                                                                         \
    LIST(kind, GETTER, NO_GETTER)                                                                                   \
    static const store_column kind##_columns[] = {LIST(kind, ENTRY, PLAN_ENTRY)};

/* ---- column groups several kinds share --------------------------------------------------------------------- */

/* result_key, item_key, the adapter, the configuration's label (its plan item's engine: the adapter may run
 * several configurations), the dataset. */
#define KEY_COLUMNS(k, C, P)                                                                                        \
    C(k, result_key, v_text(R->result_key))                                                                         \
    C(k, item_key, v_text(R->item_key))                                                                             \
    C(k, engine, v_text(w->engine))                                                                                 \
    P(k, config, engine)                                                                                            \
    C(k, dataset, v_text(w->dataset))
#define AGENT_COLUMNS(k, C)                                                                                         \
    C(k, agent, v_text(w->agent))                                                                                   \
    C(k, recorded_at, v_text(w->now))
/* mean, p50, p95, p99, p99.9, max in ms of a decoded histogram L */
#define LATENCY_COLUMNS(k, C, L)                                                                                    \
    C(k, mean_ms, v_real_or_null(w->L.empty, w->L.mean))                                                            \
    C(k, p50_ms, v_real_or_null(w->L.empty, w->L.p50))                                                              \
    C(k, p95_ms, v_real_or_null(w->L.empty, w->L.p95))                                                              \
    C(k, p99_ms, v_real_or_null(w->L.empty, w->L.p99))                                                              \
    C(k, p999_ms, v_real_or_null(w->L.empty, w->L.p999))                                                            \
    C(k, max_ms, v_real_or_null(w->L.empty, w->L.max))
/* The one place a one-client Measurement (sweep point, filtered point) becomes columns; the wire's index_used
 * 0 / 1 / 2 (unknown / uses the index / does not) is NULL / 1 / 0. */
#define MEASURE_COLUMNS(k, C)                                                                                       \
    C(k, queries, v_int((sqlite3_int64)M->queries))                                                                 \
    C(k, recall, v_real(M->recall))                                                                                 \
    C(k, id_overlap, v_real(M->id_overlap))                                                                         \
    C(k, short_answers, v_int((sqlite3_int64)M->short_answers))                                                     \
    C(k, duplicate_answers, v_int((sqlite3_int64)M->duplicate_answers))                                             \
    C(k, duplicate_example, v_text_set(M->duplicate_example))                                                       \
    C(k, errors, v_int((sqlite3_int64)M->errors))                                                                   \
    C(k, elapsed_s, v_real(M->elapsed_s))                                                                           \
    C(k, qps, v_real(M->qps))                                                                                       \
    LATENCY_COLUMNS(k, C, lat)                                                                                      \
    C(k, client_cpu_s, v_real(M->client_cpu_s))                                                                     \
    C(k, latency_hist, v_blob(w->lat.blob, w->lat.blob_len))                                                        \
    C(k, index_used, v_int_or_null(M->index_used != 1 && M->index_used != 2, M->index_used == 1))                   \
    C(k, plan, v_text_set(M->plan))

/* The row's Measurement's latency histogram as lat: the prepare of every kind with a Measurement. */
static int decode_measurement(vb_store *s, store_row *w, vb_error *err) {
    return store_latency_decode(s, M->latency, R->result_key, &w->lat, err);
}

/* ---- what the terminal shows ------------------------------------------------------------------------------- */

/* Appends a line to buf. */
static void say(char *buf, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void say(char *buf, size_t len, const char *fmt, ...) {
    size_t used = strlen(buf);
    if (used && used + 1 < len) buf[used++] = '\n', buf[used] = '\0';
    if (used + 1 >= len) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf + used, len - used, fmt, ap);
    va_end(ap);
}

/* An engine that returned the same id twice in an answer: scored with the repeats as misses and kept as a
 * validity finding (v_validity), said as it happens. */
static void say_duplicates(char *buf, size_t len, const char *item, const Vbench__Measurement *m) {
    if (m->duplicate_answers == 0) return;
    say(buf, len, "%s: %llu of %llu answers repeated an id (first: %s); the repeats count as misses", item,
        (unsigned long long)m->duplicate_answers, (unsigned long long)m->queries,
        m->duplicate_example && *m->duplicate_example ? m->duplicate_example : "not recorded");
}

/* Queries with nothing right behind a mean (docs/metrics.md "Recall distribution"): said as they happen, with the
 * command that names them. */
static void say_zero_recall(char *buf, size_t len, const char *item, const Vbench__Measurement *m) {
    if (m->recall_queries == 0 || m->recall_zero_share <= 0) return;
    say(buf, len, "%s: %.0f of %llu queries at recall 0 behind the mean %.4f (p10 %.4f; vbench show --worst N names "
        "them)", item, m->recall_zero_share * (double)m->recall_queries, (unsigned long long)m->recall_queries,
        m->recall, m->recall_p10);
}

/* ---- build ------------------------------------------------------------------------------------------------- */

#define BUILD_COLUMNS(k, C, P)                                                                                      \
    KEY_COLUMNS(k, C, P)                                                                                            \
    C(k, rows, v_int((sqlite3_int64)R->build->rows))                                                                \
    C(k, load_s, v_real(R->build->load_s))                                                                          \
    C(k, build_s, v_real(R->build->build_s))                                                                        \
    C(k, first_query_s, v_real(R->build->first_query_s))                                                            \
    C(k, rows_per_s, v_real(R->build->rows_per_s))                                                                  \
    C(k, index_bytes, v_int_or_null(R->build->index_bytes < 0, R->build->index_bytes))                              \
    C(k, table_bytes, v_int_or_null(R->build->table_bytes < 0, R->build->table_bytes))                              \
    C(k, client_cpu_s, v_real(R->build->client_cpu_s))                                                              \
    C(k, load_connections, v_int(R->build->load_connections))                                                       \
    C(k, engine_version, v_text(R->build->engine_version))                                                          \
    C(k, dataset_hash, v_text(R->build->dataset_hash))                                                              \
    AGENT_COLUMNS(k, C)                                                                                             \
    C(k, attempts, v_int(R->build->attempts > 0 ? R->build->attempts : 1))                                          \
    P(k, build, build)
COLUMNS(build, BUILD_COLUMNS)

static int is_checkpoint(const Vbench__Result *r) { return r->build->checkpoint; }
static int is_build(const Vbench__Result *r) { return !r->build->checkpoint; }

static void describe_build(const Vbench__Result *r, char *buf, size_t len) {
    const Vbench__BuildResult *b = r->build;
    say(buf, len, "%s: %llu rows, load %.2fs, build %.2fs, first query after %.2fs, %.0f rows/s, index %.1f MiB",
        r->item_key, (unsigned long long)b->rows, b->load_s, b->build_s, b->first_query_s, b->rows_per_s,
        b->index_bytes >= 0 ? (double)b->index_bytes / 1048576.0 : -1.0);
    if (b->attempts > 1)
        say(buf, len, "%s: the load continued from its checkpoint: %.2fs of load over %u attempts", r->item_key,
            b->load_s, b->attempts);
}

/* A build's load checkpoint: the progress line says how far the load is, so nothing is said. */
#define LOAD_CHECKPOINT_COLUMNS(k, C, P)                                                                            \
    C(k, result_key, v_text(R->result_key))                                                                         \
    C(k, item_key, v_text(R->item_key))                                                                             \
    C(k, attempt, v_int(R->attempt))                                                                                \
    C(k, connections, v_int(R->build->load_connections))                                                            \
    C(k, slice_rows, v_int((sqlite3_int64)R->build->slice_rows))                                                    \
    C(k, rows, v_int((sqlite3_int64)R->build->rows))                                                                \
    C(k, load_s, v_real(R->build->load_s))                                                                          \
    C(k, attempts, v_int(R->build->attempts))                                                                       \
    AGENT_COLUMNS(k, C)
COLUMNS(load_checkpoint, LOAD_CHECKPOINT_COLUMNS)

/* ---- recall sweep ------------------------------------------------------------------------------------------ */

#define SWEEP_COLUMNS(k, C, P)                                                                                      \
    KEY_COLUMNS(k, C, P)                                                                                            \
    C(k, ef_search, v_int(R->sweep->ef_search))                                                                     \
    C(k, clients, v_int(R->sweep->clients ? R->sweep->clients : 1))                                                 \
    MEASURE_COLUMNS(k, C)                                                                                           \
    AGENT_COLUMNS(k, C)                                                                                             \
    /* kept as the agent sent it; report/export_annb.c checks its shape when it reads it */                        \
    C(k, answers, R->sweep->answers.len ? v_blob(R->sweep->answers.data, R->sweep->answers.len) : v_null())         \
    C(k, warmup_queries, v_int_or_null(R->sweep->warmup_queries <= 0, (sqlite3_int64)R->sweep->warmup_queries))     \
    C(k, warmup_s, v_real_or_null(R->sweep->warmup_queries <= 0, R->sweep->warmup_s))                               \
    P(k, build, build)
COLUMNS(sweep, SWEEP_COLUMNS)

static const Vbench__Measurement *sweep_measurement(const Vbench__Result *r) { return r->sweep->m; }

static void describe_sweep(const Vbench__Result *r, char *buf, size_t len) {
    const Vbench__Measurement *m = r->sweep->m;
    if (!m) return;
    say(buf, len, "%s: recall %.4f, %.0f QPS, %llu short answers, %llu errors", r->item_key, m->recall, m->qps,
        (unsigned long long)m->short_answers, (unsigned long long)m->errors);
    say_duplicates(buf, len, r->item_key, m);
    say_zero_recall(buf, len, r->item_key, m);
}

/* ---- concurrency window ------------------------------------------------------------------------------------ */

#define WINDOW_COLUMNS(k, C, P)                                                                                     \
    KEY_COLUMNS(k, C, P)                                                                                            \
    C(k, clients, v_int(R->window->clients))                                                                        \
    C(k, repeat, v_int(R->window->repeat))                                                                          \
    C(k, ef_search, v_int(R->window->ef_search))                                                                    \
    C(k, window_s, v_real(R->window->window_s))                                                                     \
    C(k, queries, v_int((sqlite3_int64)R->window->queries))                                                         \
    C(k, errors, v_int((sqlite3_int64)R->window->errors))                                                           \
    C(k, qps, v_real(R->window->qps))                                                                               \
    LATENCY_COLUMNS(k, C, lat)                                                                                      \
    C(k, in_call_s, v_real(R->window->in_call_s))                                                                   \
    C(k, in_flight, v_real(R->window->window_s > 0 ? R->window->in_call_s / R->window->window_s : 0))               \
    C(k, qps_x_p50, v_real_or_null(w->lat.empty, R->window->qps * w->lat.p50 / 1e3))                                \
    C(k, fraction_in_call_min, v_real_or_null(w->nf == 0, w->fmin))                                                 \
    C(k, fraction_in_call_mean, v_real_or_null(w->nf == 0, w->fmean))                                               \
    C(k, fraction_in_call, v_text(w->text))                                                                         \
    C(k, client_cpu_s, v_real(R->window->client_cpu_s))                                                             \
    C(k, warmup_queries, v_int((sqlite3_int64)R->window->warmup_queries))                                           \
    C(k, edge_queries, v_int((sqlite3_int64)R->window->edge_queries))                                               \
    C(k, server_calls, v_int_or_null(!R->window->server_stats, (sqlite3_int64)R->window->server_calls))             \
    C(k, server_exec_s, v_real_or_null(!R->window->server_stats, R->window->server_exec_s))                         \
    C(k, window_start, v_real_or_null(!(R->window->window_start > 0), R->window->window_start))                     \
    C(k, wait_rounds, v_int_or_null(!R->window->wait_rounds, (sqlite3_int64)R->window->wait_rounds))                \
    C(k, wait_unit, R->window->wait_rounds ? v_text_set(R->window->wait_unit) : v_null())                           \
    C(k, server_window_calls,                                                                                       \
      v_int_or_null(R->window->server_window_calls <= 0, (sqlite3_int64)R->window->server_window_calls))            \
    C(k, server_window_exec_s, v_real_or_null(R->window->server_window_calls <= 0, R->window->server_window_exec_s))\
    C(k, target_rate, v_real_or_null(R->window->target_rate <= 0, R->window->target_rate))                          \
    C(k, late_starts, v_int((sqlite3_int64)R->window->late_starts))                                                 \
    C(k, lag_p99_ms, v_real_or_null(w->lat2.empty, w->lat2.p99))                                                    \
    C(k, clients_lost, v_int((sqlite3_int64)R->window->clients_lost))                                               \
    C(k, latency_hist, v_blob(w->lat.blob, w->lat.blob_len))                                                        \
    AGENT_COLUMNS(k, C)
COLUMNS(window, WINDOW_COLUMNS)

/* The latency and lag histograms, and fraction_in_call as JSON with its smallest and mean. */
static int prepare_window(vb_store *s, store_row *w, vb_error *err) {
    const Vbench__WindowResult *win = R->window;
    int rc = store_latency_decode(s, win->latency, R->result_key, &w->lat, err);
    if (rc || (rc = store_latency_decode(s, win->lag, R->result_key, &w->lat2, err))) return rc;
    double sum = 0;
    size_t flen;
    FILE *f = open_memstream(&w->text, &flen);
    if (!f) return store_fail(s, err, VB_STORE_RETRY, ENOMEM, "%s: out of memory", s->path);
    fputc('[', f);
    for (size_t j = 0; j < win->n_fraction_in_call; j++) {
        double v = win->fraction_in_call[j];
        /* printf writes NaN and infinity as "nan" and "inf", which are not JSON (found by tests/fuzz/fuzz_wire.c) */
        if (isfinite(v)) fprintf(f, "%s%.4f", j ? "," : "", v);
        else fprintf(f, "%snull", j ? "," : "");
        sum += v;
        if (j == 0 || v < w->fmin) w->fmin = v;
    }
    fputc(']', f);
    fclose(f);
    w->nf = win->n_fraction_in_call;
    w->fmean = w->nf ? sum / (double)w->nf : 0;
    return VB_STORE_OK;
}

/* A window's wait profile (proto WaitCount), one row per class and event, under the result's key: a concurrency
 * window's, and a capacity window's (its WindowResult). */
static int insert_waits(vb_store *s, const Vbench__Result *r, const Vbench__WindowResult *win, vb_error *err) {
    int rc = VB_STORE_OK;
    for (size_t i = 0; rc == VB_STORE_OK && i < win->n_waits; i++) {
        const Vbench__WaitCount *wc = win->waits[i];
        sqlite3_stmt *st = store_prepare(s, "INSERT OR REPLACE INTO window_wait (result_key, item_key, wait_class, "
                                            "event, samples, rounds) VALUES (?, ?, ?, ?, ?, ?)", err);
        if (!st) return s->last;
        store_bind_text(st, 1, r->result_key);
        store_bind_text(st, 2, r->item_key);
        store_bind_text(st, 3, wc->wait_class ? wc->wait_class : "");
        store_bind_text(st, 4, wc->event ? wc->event : "");
        sqlite3_bind_int64(st, 5, (sqlite3_int64)wc->samples);
        sqlite3_bind_int64(st, 6, (sqlite3_int64)win->wait_rounds);
        rc = store_run(s, st, err, "recording a window's wait profile");
    }
    return rc;
}

static int after_window(vb_store *s, store_row *w, vb_error *err) { return insert_waits(s, R, R->window, err); }

static void describe_window(const Vbench__Result *r, char *buf, size_t len) {
    const Vbench__WindowResult *w = r->window;
    say(buf, len, "%s: %.0f QPS, in flight %.2f of %u clients, %llu errors, client CPU %.2fs", r->item_key, w->qps,
        w->window_s > 0 ? w->in_call_s / w->window_s : 0, w->clients, (unsigned long long)w->errors,
        w->client_cpu_s);
}

/* ---- filtered search --------------------------------------------------------------------------------------- */

#define FILTERED_COLUMNS(k, C, P)                                                                                   \
    KEY_COLUMNS(k, C, P)                                                                                            \
    C(k, selectivity, v_real(R->filtered->selectivity))                                                             \
    C(k, passing_rows, v_int((sqlite3_int64)R->filtered->passing_rows))                                             \
    C(k, filter, v_text(R->filtered->filter))                                                                       \
    C(k, ef_search, v_int(R->filtered->ef_search))                                                                  \
    MEASURE_COLUMNS(k, C)                                                                                           \
    AGENT_COLUMNS(k, C)                                                                                             \
    C(k, predicate, v_text(R->filtered->predicate && R->filtered->predicate[0] ? R->filtered->predicate : "range"))  \
    /* NULL: an older agent's result, which did not send it */                                                     \
    C(k, passed_share, v_real_or_null(!(R->filtered->passed_share > 0), R->filtered->passed_share))
COLUMNS(filtered, FILTERED_COLUMNS)

static const Vbench__Measurement *filtered_measurement(const Vbench__Result *r) { return r->filtered->m; }

static void describe_filtered(const Vbench__Result *r, char *buf, size_t len) {
    const Vbench__FilteredResult *f = r->filtered;
    const Vbench__Measurement *m = f->m;
    if (!m) return;
    say(buf, len, "%s: %s (%llu rows pass), recall %.4f, %.0f QPS, %llu short answers of %llu", r->item_key,
        f->filter, (unsigned long long)f->passing_rows, m->recall, m->qps, (unsigned long long)m->short_answers,
        (unsigned long long)m->queries);
    say_duplicates(buf, len, r->item_key, m);
    say_zero_recall(buf, len, r->item_key, m);
}

/* ---- churn ------------------------------------------------------------------------------------------------- */

/* before / after run queries; delete, reinsert and checkpoint count rows; a reinsert and its checkpoint are of an
 * attempt (rows_from). */
static int churn_measured(const Vbench__Result *r) {
    return r->churn->stage == VBENCH__CHURN_STAGE__CHURN_BEFORE || r->churn->stage == VBENCH__CHURN_STAGE__CHURN_AFTER;
}
static int churn_rows(const Vbench__Result *r) {
    return !churn_measured(r) && r->churn->stage != VBENCH__CHURN_STAGE__CHURN_MAINTAIN;
}
static int churn_reinsert(const Vbench__Result *r) { return r->churn->stage == VBENCH__CHURN_STAGE__CHURN_REINSERT; }
static int churn_attempt(const Vbench__Result *r) {
    return churn_reinsert(r) || r->churn->stage == VBENCH__CHURN_STAGE__CHURN_CHECKPOINT;
}

#define CHURN_COLUMNS(k, C, P)                                                                                      \
    KEY_COLUMNS(k, C, P)                                                                                            \
    C(k, stage, v_text(vb_wire_churn_stage_name(R->churn->stage)))                                                  \
    C(k, qps, v_real_or_null(!churn_measured(R), M->qps))                                                           \
    C(k, recall, v_real_or_null(!churn_measured(R), M->recall))                                                     \
    C(k, p50_ms, v_real_or_null(!churn_measured(R) || w->lat.empty, w->lat.p50))                                    \
    C(k, p99_ms, v_real_or_null(!churn_measured(R) || w->lat.empty, w->lat.p99))                                    \
    C(k, queries, v_int_or_null(!churn_measured(R), (sqlite3_int64)M->queries))                                     \
    C(k, short_answers, v_int_or_null(!churn_measured(R), (sqlite3_int64)M->short_answers))                         \
    C(k, errors, v_int_or_null(!churn_measured(R), (sqlite3_int64)M->errors))                                       \
    C(k, rows_planned, v_int((sqlite3_int64)R->churn->rows_planned))                                                \
    C(k, rows_done, v_int_or_null(!churn_rows(R), (sqlite3_int64)R->churn->rows_done))                              \
    C(k, rows_from, v_int_or_null(!churn_attempt(R), (sqlite3_int64)R->churn->rows_from))                           \
    C(k, seconds, v_real(R->churn->seconds))                                                                        \
    C(k, rows_per_s, v_real_or_null(!churn_rows(R), R->churn->rows_per_s))                                          \
    C(k, completed, v_int_or_null(!churn_reinsert(R), R->churn->completed))                                         \
    C(k, ids_reused, v_int_or_null(!churn_reinsert(R), R->churn->ids_reused))                                       \
    AGENT_COLUMNS(k, C)                                                                                             \
    /* before / after only; 0 (the column's default) for the stages that run no queries */                         \
    C(k, duplicate_answers, v_int(churn_measured(R) ? (sqlite3_int64)M->duplicate_answers : 0))                     \
    C(k, duplicate_example, churn_measured(R) ? v_text_set(M->duplicate_example) : v_null())                        \
    /* 0: an older agent */                                                                                         \
    C(k, repeat, v_int_or_null(!churn_measured(R), R->churn->repeat > 0 ? R->churn->repeat : 1))
COLUMNS(churn, CHURN_COLUMNS)

static const Vbench__Measurement *churn_measurement(const Vbench__Result *r) { return r->churn->m; }

static int prepare_churn(vb_store *s, store_row *w, vb_error *err) {
    const Vbench__ChurnResult *c = R->churn;
    if (c->stage < VBENCH__CHURN_STAGE__CHURN_BEFORE || c->stage > VBENCH__CHURN_STAGE__CHURN_CHECKPOINT)
        return store_poison(s, err, "result %s: churn stage %d is not one of this coordinator's", R->result_key,
                            (int)c->stage);
    return decode_measurement(s, w, err);
}

static void describe_churn(const Vbench__Result *r, char *buf, size_t len) {
    const Vbench__ChurnResult *ch = r->churn;
    const char *stage = vb_wire_churn_stage_name(ch->stage);
    if (ch->stage == VBENCH__CHURN_STAGE__CHURN_CHECKPOINT) return;   /* progress, said by the progress line */
    if (ch->m && churn_measured(r)) {
        say(buf, len, "%s %s: recall %.4f, %.0f QPS", r->item_key, stage, ch->m->recall, ch->m->qps);
        say_duplicates(buf, len, r->item_key, ch->m);
        say_zero_recall(buf, len, r->item_key, ch->m);
    } else if (ch->stage == VBENCH__CHURN_STAGE__CHURN_MAINTAIN) {
        if (ch->rows_done == 0) say(buf, len, "%s maintain: none, the engine has no maintenance step", r->item_key);
        else say(buf, len, "%s maintain: %.2fs", r->item_key, ch->seconds);
    } else if (ch->rows_done <= ch->rows_from) {
        say(buf, len, "%s %s: no rows in this attempt (%llu of %llu done before it)", r->item_key, stage,
            (unsigned long long)ch->rows_done, (unsigned long long)ch->rows_planned);
    } else {
        say(buf, len, "%s %s: %llu of %llu rows in %.2fs (%.0f rows/s)", r->item_key, stage,
            (unsigned long long)ch->rows_done, (unsigned long long)ch->rows_planned, ch->seconds, ch->rows_per_s);
    }
}

/* ---- streaming --------------------------------------------------------------------------------------------- */

#define STREAMING_COLUMNS(k, C, P)                                                                                  \
    KEY_COLUMNS(k, C, P)                                                                                            \
    C(k, attempt, v_int(R->attempt))                                                                                \
    C(k, stage_index, v_int(R->streaming->stage_index))                                                             \
    C(k, stage, v_real(R->streaming->stage))                                                                        \
    C(k, at_rest, v_int(R->streaming->at_rest))                                                                     \
    C(k, insert_rate, v_real(R->streaming->insert_rate))                                                            \
    C(k, clients, v_int(R->streaming->clients))                                                                     \
    C(k, rows_total, v_int((sqlite3_int64)R->streaming->rows_total))                                                \
    C(k, rows_initial, v_int((sqlite3_int64)R->streaming->rows_initial))                                            \
    C(k, rows_visible, v_int((sqlite3_int64)R->streaming->rows_visible))                                            \
    C(k, queries, v_int((sqlite3_int64)M->queries))                                                                 \
    C(k, recall, v_real_or_null(M->queries == 0, M->recall))                                                        \
    C(k, short_answers, v_int((sqlite3_int64)M->short_answers))                                                     \
    C(k, errors, v_int((sqlite3_int64)M->errors))                                                                   \
    C(k, elapsed_s, v_real(M->elapsed_s))                                                                           \
    C(k, qps, v_real(M->qps))                                                                                       \
    LATENCY_COLUMNS(k, C, lat)                                                                                      \
    C(k, latency_hist, v_blob(w->lat.blob, w->lat.blob_len))                                                        \
    C(k, fresh_rows_found, v_int((sqlite3_int64)R->streaming->fresh_rows_found))                                    \
    C(k, rows_during_window, v_int((sqlite3_int64)R->streaming->rows_during_window))                                \
    C(k, rows_scheduled, v_int((sqlite3_int64)R->streaming->rows_scheduled))                                        \
    C(k, rows_inserted, v_int((sqlite3_int64)R->streaming->rows_inserted))                                          \
    C(k, interval_s, v_real(R->streaming->interval_s))                                                              \
    C(k, offered_rows_s, v_real_or_null(R->streaming->at_rest, R->streaming->offered_rows_s))                       \
    C(k, achieved_rows_s, v_real_or_null(R->streaming->at_rest, R->streaming->achieved_rows_s))                     \
    C(k, insert_p50_ms, v_real_or_null(w->lat2.empty, w->lat2.p50))                                                 \
    C(k, insert_p99_ms, v_real_or_null(w->lat2.empty, w->lat2.p99))                                                 \
    C(k, max_lag_s, v_real(R->streaming->max_lag_s))                                                                \
    C(k, fresh_probes, v_int((sqlite3_int64)R->streaming->fresh_probes))                                            \
    C(k, fresh_never, v_int((sqlite3_int64)R->streaming->fresh_never))                                              \
    C(k, fresh_p50_ms, v_real_or_null(w->lat3.empty, w->lat3.p50))                                                  \
    C(k, fresh_p99_ms, v_real_or_null(w->lat3.empty, w->lat3.p99))                                                  \
    C(k, insert_errors, v_int((sqlite3_int64)R->streaming->insert_errors))                                          \
    C(k, rows_inserted_total, v_int((sqlite3_int64)R->streaming->rows_inserted_total))                              \
    C(k, rows_scheduled_total, v_int((sqlite3_int64)R->streaming->rows_scheduled_total))                            \
    C(k, recall_full, v_real_or_null(R->streaming->recall_full < 0, R->streaming->recall_full))                     \
    /* 0 from an agent before issue 36.1, which did not send them */                                                \
    C(k, rows_scheduled_window_end, v_int_or_null(!(R->streaming->rows_scheduled_window_end > 0),                   \
                                                  (sqlite3_int64)R->streaming->rows_scheduled_window_end))          \
    C(k, fresh_row_max, v_int_or_null(!(R->streaming->fresh_rows_found > 0 && R->streaming->fresh_row_max > 0),     \
                                      (sqlite3_int64)R->streaming->fresh_row_max))                                  \
    C(k, interval_max_lag_s,                                                                                        \
      v_real_or_null(R->streaming->rows_scheduled_window_end == 0, R->streaming->interval_max_lag_s))               \
    C(k, fresh_node, v_int_or_null(R->streaming->fresh_node < 0, R->streaming->fresh_node))                        \
    AGENT_COLUMNS(k, C)
COLUMNS(streaming, STREAMING_COLUMNS)

static const Vbench__Measurement *streaming_measurement(const Vbench__Result *r) { return r->streaming->m; }

/* The latency, insert latency and freshness histograms. */
static int prepare_streaming(vb_store *s, store_row *w, vb_error *err) {
    int rc = decode_measurement(s, w, err);
    if (rc || (rc = store_latency_decode(s, R->streaming->insert_latency, R->result_key, &w->lat2, err))) return rc;
    return store_latency_decode(s, R->streaming->freshness, R->result_key, &w->lat3, err);
}

static void describe_streaming(const Vbench__Result *r, char *buf, size_t len) {
    const Vbench__StreamingResult *w = r->streaming;
    const Vbench__Measurement *m = w->m;
    char stage[32];
    if (w->at_rest) snprintf(stage, sizeof stage, "at rest");
    else snprintf(stage, sizeof stage, "stage %g", w->stage);
    say(buf, len, "%s %s: %llu rows visible, recall %.4f, %.0f QPS; inserts %.0f rows/s of %.0f offered, largest "
        "lag %.3fs", r->item_key, stage, (unsigned long long)w->rows_visible, m ? m->recall : 0, m ? m->qps : 0,
        w->achieved_rows_s, w->offered_rows_s, w->max_lag_s);
}

/* ---- mixed (issue 38) --------------------------------------------------------------------------------------- */

/* The write operation named op of a mixed window (NULL when the agent sent none). */
static const Vbench__MixedOp *mixed_op(const Vbench__Result *r, const char *op) {
    for (size_t i = 0; i < r->mixed->n_ops; i++)
        if (r->mixed->ops[i]->op && strcmp(r->mixed->ops[i]->op, op) == 0) return r->mixed->ops[i];
    return NULL;
}
static const Vbench__MixedOp mixed_no_op = VBENCH__MIXED_OP__INIT;
#define MOP(op) (mixed_op(R, #op) ? mixed_op(R, #op) : &mixed_no_op)
/* done, offered (NULL at rest: nothing was offered), errors, mean / p50 / p99 / max ms (NULL when none ran) */
#define MIXED_OP_COLUMNS(k, C, op)                                                                                  \
    C(k, op##_done, v_int((sqlite3_int64)MOP(op)->done))                                                            \
    C(k, op##_offered, v_int_or_null(strcmp(R->mixed->phase, "write") != 0, (sqlite3_int64)MOP(op)->offered))     \
    C(k, op##_errors, v_int((sqlite3_int64)MOP(op)->errors))                                                        \
    C(k, op##_mean_ms, v_real_or_null(MOP(op)->done == 0, MOP(op)->mean_ms))                                        \
    C(k, op##_p50_ms, v_real_or_null(MOP(op)->done == 0, MOP(op)->p50_ms))                                          \
    C(k, op##_p99_ms, v_real_or_null(MOP(op)->done == 0, MOP(op)->p99_ms))                                          \
    C(k, op##_max_ms, v_real_or_null(MOP(op)->done == 0, MOP(op)->max_ms))

#define MIXED_COLUMNS(k, C, P)                                                                                      \
    KEY_COLUMNS(k, C, P)                                                                                            \
    C(k, attempt, v_int(R->attempt))                                                                                \
    C(k, window_index, v_int(R->mixed->window_index))                                                               \
    C(k, phase, v_text(R->mixed->phase))                                                                            \
    C(k, zipf_s, v_real(R->mixed->zipf_s))                                                                          \
    C(k, rate, v_real(R->mixed->rate))                                                                              \
    C(k, clients, v_int(R->mixed->clients))                                                                         \
    C(k, rows_live, v_int((sqlite3_int64)R->mixed->rows_live))                                                      \
    C(k, queries, v_int((sqlite3_int64)M->queries))                                                                 \
    C(k, recall, v_real_or_null(M->queries == 0, M->recall))                                                        \
    C(k, answers_scored, v_int((sqlite3_int64)R->mixed->answers_scored))                                            \
    C(k, ghost_answers, v_int((sqlite3_int64)R->mixed->ghost_answers))                                              \
    C(k, ghost_example, v_text_set(R->mixed->ghost_example))                                                        \
    C(k, stale_answers, v_int((sqlite3_int64)R->mixed->stale_answers))                                              \
    C(k, short_answers, v_int((sqlite3_int64)M->short_answers))                                                     \
    C(k, errors, v_int((sqlite3_int64)M->errors))                                                                   \
    C(k, elapsed_s, v_real(M->elapsed_s))                                                                           \
    C(k, qps, v_real(M->qps))                                                                                       \
    LATENCY_COLUMNS(k, C, lat)                                                                                      \
    C(k, latency_hist, v_blob(w->lat.blob, w->lat.blob_len))                                                        \
    C(k, interval_s, v_real(MOP(update)->interval_s))                                                               \
    MIXED_OP_COLUMNS(k, C, update)                                                                                  \
    MIXED_OP_COLUMNS(k, C, delete)                                                                                  \
    MIXED_OP_COLUMNS(k, C, insert)                                                                                  \
    C(k, writes_total, v_int((sqlite3_int64)R->mixed->writes_total))                                               \
    C(k, fresh_probes, v_int((sqlite3_int64)R->mixed->fresh_probes))                                                \
    C(k, fresh_never, v_int((sqlite3_int64)R->mixed->fresh_never))                                                  \
    C(k, fresh_p50_ms, v_real_or_null(w->lat2.empty, w->lat2.p50))                                                  \
    C(k, fresh_p99_ms, v_real_or_null(w->lat2.empty, w->lat2.p99))                                                  \
    C(k, maintain_s, v_real_or_null(strcmp(R->mixed->phase, "maintained") != 0, R->mixed->maintain_s))            \
    C(k, live_id_sum, v_int((sqlite3_int64)R->mixed->live_id_sum))                                                  \
    C(k, live_id_sumsq, v_int((sqlite3_int64)R->mixed->live_id_sumsq))                                              \
    C(k, rows_engine, v_int_or_null(R->mixed->rows_engine < 0 || !strcmp(R->mixed->phase, "write"),                 \
                                    R->mixed->rows_engine))                                                         \
    C(k, maintenance, v_text_set(strcmp(R->mixed->phase, "maintained") ? NULL : R->mixed->maintenance))             \
    C(k, rows_checked, v_int_or_null(MIXED_UNCHECKED(R), (sqlite3_int64)R->mixed->rows_checked))                    \
    C(k, rows_vectors_checked, v_int_or_null(MIXED_UNCHECKED(R), (sqlite3_int64)R->mixed->rows_vectors_checked))    \
    C(k, rows_differ, v_int_or_null(MIXED_UNCHECKED(R), (sqlite3_int64)R->mixed->rows_differ))                      \
    C(k, rows_diff_example, v_text_set(R->mixed->rows_diff_example))                                                \
    AGENT_COLUMNS(k, C)
/* the row check runs in the windows at rest and after maintenance, on an engine that lists its rows */
#define MIXED_UNCHECKED(R) (strcmp((R)->mixed->phase, "write") == 0 || (R)->mixed->rows_checked == 0)
COLUMNS(mixed, MIXED_COLUMNS)

static const Vbench__Measurement *mixed_measurement(const Vbench__Result *r) { return r->mixed->m; }

/* The search latency and the freshness histograms; a window of another phase is refused. */
static int prepare_mixed(vb_store *s, store_row *w, vb_error *err) {
    const char *ph = R->mixed->phase;
    if (!ph || (strcmp(ph, "write") && strcmp(ph, "rest") && strcmp(ph, "maintained")))
        return store_poison(s, err, "result %s: a mixed window of phase '%s' (write, rest or maintained)", R->result_key,
                            ph ? ph : "");
    int rc = decode_measurement(s, w, err);
    return rc ? rc : store_latency_decode(s, R->mixed->freshness, R->result_key, &w->lat2, err);
}

static void describe_mixed(const Vbench__Result *r, char *buf, size_t len) {
    const Vbench__MixedResult *x = r->mixed;
    const Vbench__Measurement *m = x->m;
    say(buf, len, "%s window %u (%s): %llu rows live, recall %.4f, %.0f QPS, %llu ghost and %llu stale answers; "
        "%llu writes so far", r->item_key, x->window_index, x->phase, (unsigned long long)x->rows_live,
        m ? m->recall : 0, m ? m->qps : 0, (unsigned long long)x->ghost_answers, (unsigned long long)x->stale_answers,
        (unsigned long long)x->writes_total);
}

/* ---- cold start -------------------------------------------------------------------------------------------- */

/* A cold start's measured columns: NULL when the cold start does not apply; NULL too for a value that is not a
 * number (no warm query to divide by). */
#define CS(v) (R->cold_start->applicable ? (v) : v_null())
#define CS_REAL(x) CS(v_real_or_null(!isfinite(w->cold.x), w->cold.x))

#define COLD_START_COLUMNS(k, C, P)                                                                                 \
    KEY_COLUMNS(k, C, P)                                                                                            \
    C(k, applicable, v_int(R->cold_start->applicable))                                                              \
    C(k, reason, v_text_set(R->cold_start->reason))                                                                 \
    C(k, ef_search, CS(v_int(R->cold_start->ef_search)))                                                            \
    C(k, queries, CS(v_int((sqlite3_int64)R->cold_start->n_cold_ns)))                                               \
    C(k, errors, CS(v_int((sqlite3_int64)(R->cold_start->n_cold_failed + R->cold_start->n_warm_failed))))           \
    C(k, rolling_window, CS(v_int(VB_COLDSTART_WINDOW)))                                                            \
    C(k, tolerance, CS(v_real(VB_COLDSTART_TOLERANCE)))                                                             \
    C(k, evicted_files, CS(v_int((sqlite3_int64)R->cold_start->evicted_files)))                                     \
    C(k, evicted_bytes, CS(v_int((sqlite3_int64)R->cold_start->evicted_bytes)))                                     \
    C(k, restart_s, CS(v_real(R->cold_start->restart_s)))                                                           \
    C(k, first_ms, CS_REAL(first_ms))                                                                               \
    C(k, cold_mean_ms, CS_REAL(cold_mean_ms))                                                                       \
    C(k, cold_p50_ms, CS_REAL(cold_p50_ms))                                                                         \
    C(k, cold_max_ms, CS_REAL(cold_max_ms))                                                                         \
    C(k, warm_first_ms, CS_REAL(warm_first_ms))                                                                     \
    C(k, warm_mean_ms, CS_REAL(warm_mean_ms))                                                                       \
    C(k, warm_p50_ms, CS_REAL(warm_p50_ms))                                                                         \
    C(k, ratio_first, CS_REAL(ratio_first))                                                                         \
    C(k, ratio_mean, CS_REAL(ratio_mean))                                                                           \
    C(k, ratio_p50, CS_REAL(ratio_p50))                                                                             \
    C(k, warm_after, CS(v_int_or_null(!(w->cold.warm_after > 0), w->cold.warm_after)))                              \
    C(k, warm_after_s, CS(v_real_or_null(!(w->cold.warm_after > 0), w->cold.warm_after_s)))                         \
    C(k, session_reopened, CS(v_int(R->cold_start->session_reopened)))                                              \
    C(k, first_error, v_text_set(R->cold_start->first_error))                                                       \
    AGENT_COLUMNS(k, C)
COLUMNS(cold_start, COLD_START_COLUMNS)

/* A pass's failed queries as a mask over its n queries; POISON for an index out of range. *mask is malloc'd. */
static int failed_mask(vb_store *s, const Vbench__Result *r, const char *pass, const uint32_t *idx, size_t n_idx,
                       size_t n, uint8_t **mask, vb_error *err) {
    *mask = calloc(n ? n : 1, 1);
    if (!*mask) return store_fail(s, err, VB_STORE_RETRY, ENOMEM, "%s: out of memory", s->path);
    for (size_t i = 0; i < n_idx; i++) {
        if (idx[i] >= n) return store_poison(s, err, "result %s: failed %s query %u of %zu", r->result_key, pass,
                                             idx[i], n);
        (*mask)[idx[i]] = 1;
    }
    return VB_STORE_OK;
}

/* The summary, computed here from the queries (metrics/coldstart.h). */
static int prepare_cold_start(vb_store *s, store_row *w, vb_error *err) {
    const Vbench__ColdStartResult *c = R->cold_start;
    if (!c->applicable) return VB_STORE_OK;
    if (c->n_cold_ns == 0 || c->n_warm_ns == 0)
        return store_poison(s, err, "result %s: a cold start with %zu cold and %zu warm queries", R->result_key,
                            c->n_cold_ns, c->n_warm_ns);
    int rc;
    if ((rc = failed_mask(s, R, "cold", c->cold_failed, c->n_cold_failed, c->n_cold_ns, &w->cold_failed, err)) ||
        (rc = failed_mask(s, R, "warm", c->warm_failed, c->n_warm_failed, c->n_warm_ns, &w->warm_failed, err)))
        return rc;
    if (!(w->rolling = malloc(c->n_cold_ns * sizeof *w->rolling)))
        return store_fail(s, err, VB_STORE_RETRY, ENOMEM, "%s: out of memory", s->path);
    if (vb_coldstart_summarize(c->cold_ns, w->cold_failed, c->n_cold_ns, c->warm_ns, w->warm_failed, c->n_warm_ns,
                               w->rolling, &w->cold) != 0)
        return store_poison(s, err, "result %s: a cold start whose every cold or every warm query failed (%s)",
                            R->result_key, c->first_error && *c->first_error ? c->first_error : "no message");
    return VB_STORE_OK;
}

/* The rows of one pass in cold_start_query, through one statement; rolling: the cold pass's rolling medians (NULL
 * for warm). */
static int insert_cold_queries(vb_store *s, const Vbench__Result *r, const char *pass, const uint64_t *ns, size_t n,
                               const uint8_t *failed, const double *rolling, vb_error *err) {
    sqlite3_stmt *st = store_prepare(s, "INSERT INTO cold_start_query (result_key, pass, n, latency_ms, ok, "
                                        "rolling_p50_ms) VALUES (?, ?, ?, ?, ?, ?)", err);
    if (!st) return s->last;
    store_bind_text(st, 1, r->result_key);
    store_bind_text(st, 2, pass);
    int rc = SQLITE_DONE;
    for (size_t i = 0; i < n && rc == SQLITE_DONE; i++) {
        sqlite3_bind_int64(st, 3, (sqlite3_int64)(i + 1));
        sqlite3_bind_double(st, 4, (double)ns[i] / 1e6);
        sqlite3_bind_int(st, 5, !failed[i]);
        if (!rolling || isnan(rolling[i])) sqlite3_bind_null(st, 6);
        else sqlite3_bind_double(st, 6, rolling[i]);
        rc = sqlite3_step(st);
        sqlite3_reset(st);
    }
    vb_store_class cls = VB_STORE_OK;
    if (rc != SQLITE_DONE)
        cls = store_fail(s, err, store_classify(rc), sqlite3_extended_errcode(s->db), "%s: recording a cold start's query: %s", s->path,
                         sqlite3_errmsg(s->db));
    sqlite3_finalize(st);
    return cls;
}

/* The queries beside the summary. */
static int after_cold_start(vb_store *s, store_row *w, vb_error *err) {
    const Vbench__ColdStartResult *c = R->cold_start;
    if (!c->applicable) return VB_STORE_OK;
    int rc = insert_cold_queries(s, R, "cold", c->cold_ns, c->n_cold_ns, w->cold_failed, w->rolling, err);
    return rc ? rc : insert_cold_queries(s, R, "warm", c->warm_ns, c->n_warm_ns, w->warm_failed, NULL, err);
}

/* The raw times only: the summary (ratios, time to warm) is the store's, in show and the report. */
static void describe_cold_start(const Vbench__Result *r, char *buf, size_t len) {
    const Vbench__ColdStartResult *cs = r->cold_start;
    if (!cs->applicable)
        say(buf, len, "%s: not applicable (%s)", r->item_key, cs->reason);
    else if (cs->n_cold_ns && cs->n_warm_ns)
        say(buf, len, "%s: first query after the cold restart %.3f ms (the warm pass's first %.3f ms), %zu queries "
            "each pass, %zu failed", r->item_key, (double)cs->cold_ns[0] / 1e6, (double)cs->warm_ns[0] / 1e6,
            cs->n_cold_ns, cs->n_cold_failed + cs->n_warm_failed);
}

/* ---- nodes (topology, issue 39) ------------------------------------------------------------------------------ */

/* A lag sample (agent/phase.c vb_lag_sampler: read replicas while a churn, a stream or a mixed phase writes), not a
 * reading after a step: it has a time (at_s) and no row counts. */
static int is_lag_sample(const char *after) {
    return strcmp(after, "churn") == 0 || strcmp(after, "streaming") == 0 || strcmp(after, "mixed") == 0;
}

/* One reading of an engine's servers: its row in node_reading, a row per node in node_result. */
#define NODES_COLUMNS(k, C, P)                                                                                      \
    KEY_COLUMNS(k, C, P)                                                                                            \
    C(k, after, v_text(R->nodes->after))                                                                            \
    C(k, nodes, v_int((sqlite3_int64)R->nodes->n_nodes))                                                            \
    C(k, at_s, v_real_or_null(!is_lag_sample(R->nodes->after), R->nodes->at_s))                                    \
    AGENT_COLUMNS(k, C)
COLUMNS(nodes, NODES_COLUMNS)

static store_value int_or_null(int64_t v) { return v < 0 ? v_null() : v_int(v); }


static int after_nodes(vb_store *s, store_row *w, vb_error *err) {
    sqlite3_stmt *st = store_prepare(s, "INSERT INTO node_result (result_key, node, role, rows, index_bytes, "
                                        "table_bytes, searches, lag_bytes, build_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                                     err);
    if (!st) return s->last;
    int rc = SQLITE_DONE;
    for (size_t i = 0; i < R->nodes->n_nodes && rc == SQLITE_DONE; i++) {
        const Vbench__NodeStats *n = R->nodes->nodes[i];
        store_value v[] = {int_or_null(n->rows), int_or_null(n->index_bytes), int_or_null(n->table_bytes),
                           int_or_null(n->searches), int_or_null(n->lag_bytes),
                           n->build_ms > 0 ? v_int(n->build_ms) : v_null()};   /* 0: a sender that did not measure */
        store_bind_text(st, 1, R->result_key);
        sqlite3_bind_int(st, 2, (int)n->node);
        store_bind_text(st, 3, n->role);
        for (int j = 0; j < 6; j++)
            if (v[j].type == STORE_NULL) sqlite3_bind_null(st, 4 + j);
            else sqlite3_bind_int64(st, 4 + j, v[j].i);
        rc = sqlite3_step(st);
        sqlite3_reset(st);
    }
    vb_store_class cls = VB_STORE_OK;
    if (rc != SQLITE_DONE)
        cls = store_fail(s, err, store_classify(rc), sqlite3_extended_errcode(s->db), "%s: recording a node's reading: %s",
                         s->path, sqlite3_errmsg(s->db));
    sqlite3_finalize(st);
    return cls;
}

static void describe_nodes(const Vbench__Result *r, char *buf, size_t len) {
    for (size_t i = 0; i < r->nodes->n_nodes; i++) {
        const Vbench__NodeStats *n = r->nodes->nodes[i];
        /* a lag sample (five a second while a churn or a stream writes) says nothing: v_nodes has them */
        if (is_lag_sample(r->nodes->after)) continue;
        say(buf, len, "%s: node %u (%s) after the %s: %lld rows, %lld searches, replay lag %lld bytes", r->item_key,
            n->node, n->role, r->nodes->after, (long long)n->rows, (long long)n->searches, (long long)n->lag_bytes);
    }
}

/* ---- capacity ---------------------------------------------------------------------------------------------- */

/* The wire's CapacityStage, CapacityStatus and CapacityOpSource as the words the tables hold (docs/metrics.md
 * "Capacity"); NULL for a value this store does not know (the result is refused). */
static const char *const capacity_stages[] = {"grow", "bisect", "descend", "confirm", "knee"};
static const char *const capacity_statuses[] = {"found", "recall_unreachable", "client_limit", "target_unreachable",
                                                "not_converged"};
static const char *const capacity_sources[] = {"probe", "given", "sweep", "unreachable"};
#define WORD_OF(words, v) ((unsigned)(v) < sizeof words / sizeof words[0] ? words[v] : NULL)

/* One window of a capacity item's search: the search's fields, and its WindowResult as a concurrency window's (the
 * latency from the intended start decoded here, the server's accounting, the wait profile beside it). */
#define CW (R->capacity_window)
#define CWW (R->capacity_window->w)
#define CAPACITY_WINDOW_COLUMNS(k, C, P)                                                                            \
    KEY_COLUMNS(k, C, P)                                                                                            \
    C(k, attempt, v_int(R->attempt))                                                                                \
    C(k, step, v_int(CW->step))                                                                                     \
    C(k, stage, v_text(WORD_OF(capacity_stages, CW->stage)))                                                        \
    C(k, target_ms, v_real_or_null(!(CW->target_ms > 0), CW->target_ms))                                            \
    C(k, targets, v_text(w->text))                                                                                  \
    C(k, met, v_int(CW->met))                                                                                       \
    C(k, offered_rate, v_real(CW->offered_rate))                                                                    \
    C(k, achieved_rate, v_real(CW->achieved_rate))                                                                  \
    C(k, scheduled, v_int((sqlite3_int64)CW->scheduled))                                                            \
    C(k, started, v_int((sqlite3_int64)CW->started))                                                                \
    C(k, clients, v_int(CWW->clients))                                                                              \
    C(k, ef_search, v_int(CW->ef_search))                                                                           \
    C(k, recall, v_real_or_null(CW->recall < 0, CW->recall))                                                        \
    C(k, start_rate, v_real(CW->start_rate))                                                                        \
    C(k, window_s, v_real(CWW->window_s))                                                                           \
    C(k, window_start, v_real_or_null(!(CWW->window_start > 0), CWW->window_start))                                 \
    C(k, queries, v_int((sqlite3_int64)CWW->queries))                                                               \
    C(k, errors, v_int((sqlite3_int64)CWW->errors))                                                                 \
    C(k, p50_ms, v_real_or_null(w->lat.empty, w->lat.p50))                                                          \
    C(k, p99_ms, v_real_or_null(w->lat.empty, w->lat.p99))                                                          \
    C(k, p999_ms, v_real_or_null(w->lat.empty, w->lat.p999))                                                        \
    C(k, latency_hist, v_blob(w->lat.blob, w->lat.blob_len))                                                        \
    C(k, own_p99_ms, v_real(CW->own_p99_ms))                                                                        \
    C(k, uncorrected_p99_ms, v_real(CW->uncorrected_p99_ms))                                                        \
    C(k, host_pause_ms, v_real_or_null(!(CW->host_pause_ms > 0), CW->host_pause_ms))                                \
    C(k, discounted, v_int(CW->discounted))                                                                         \
    C(k, late_starts, v_int((sqlite3_int64)CWW->late_starts))                                                       \
    C(k, in_flight, v_real(CWW->window_s > 0 ? CWW->in_call_s / CWW->window_s : 0))                                 \
    C(k, client_cores, v_real(CW->client_cores))                                                                    \
    C(k, client_cpus, v_int(CW->client_cpus))                                                                       \
    C(k, client_limited, v_int(CW->client_limited != 0))                                                            \
    C(k, client_reason, CW->client_limited ? v_text_set(CW->client_reason) : v_null())                              \
    C(k, server_calls, v_int_or_null(!CWW->server_stats, CWW->server_calls))                                        \
    C(k, server_exec_s, v_real_or_null(!CWW->server_stats, CWW->server_exec_s))                                     \
    C(k, server_window_calls, v_int_or_null(!(CWW->server_window_calls > 0), CWW->server_window_calls))            \
    C(k, server_window_exec_s, v_real_or_null(!(CWW->server_window_calls > 0), CWW->server_window_exec_s))         \
    C(k, wait_rounds, v_int_or_null(!CWW->wait_rounds, (sqlite3_int64)CWW->wait_rounds))                           \
    C(k, wait_unit, CWW->wait_rounds ? v_text_set(CWW->wait_unit) : v_null())                                       \
    AGENT_COLUMNS(k, C)                                                                                             \
    C(k, agents, v_int_or_null(!CW->agents, CW->agents))
COLUMNS(capacity_window, CAPACITY_WINDOW_COLUMNS)

/* Its window and a stage this store knows, the latency histogram decoded, the targets as text ("5,10,50"). */
static int prepare_capacity_window(vb_store *s, store_row *w, vb_error *err) {
    if (!CWW || !WORD_OF(capacity_stages, CW->stage))
        return store_poison(s, err, "result %s: a capacity window %s", R->result_key,
                            !CWW ? "without its window" : "of an unknown stage");
    int rc = store_latency_decode(s, CWW->latency, R->result_key, &w->lat, err);
    if (rc) return rc;
    size_t flen;
    FILE *f = open_memstream(&w->text, &flen);
    if (!f) return store_fail(s, err, VB_STORE_RETRY, ENOMEM, "%s: out of memory", s->path);
    for (size_t i = 0; i < CW->n_targets_ms; i++) fprintf(f, "%s%g", i ? "," : "", CW->targets_ms[i]);
    fclose(f);
    return VB_STORE_OK;
}

/* Its wait profile, and each client agent's share of it (capacity_window_share). */
static int after_capacity_window(vb_store *s, store_row *w, vb_error *err) {
    int rc = insert_waits(s, R, CWW, err);
    for (size_t i = 0; rc == VB_STORE_OK && i < CW->n_shares; i++) {
        const Vbench__CapacityShare *sh = CW->shares[i];
        sqlite3_stmt *st = store_prepare(s, "INSERT OR REPLACE INTO capacity_window_share (result_key, item_key, share, "
                                            "agent, offered_rate, scheduled, started, errors, p99_ms, client_limited, "
                                            "client_cores, window_start) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", err);
        if (!st) return s->last;
        store_bind_text(st, 1, R->result_key);
        store_bind_text(st, 2, R->item_key);
        sqlite3_bind_int64(st, 3, (sqlite3_int64)i + 1);
        store_bind_text(st, 4, sh->agent ? sh->agent : "");
        sqlite3_bind_double(st, 5, sh->offered_rate);
        sqlite3_bind_int64(st, 6, (sqlite3_int64)sh->scheduled);
        sqlite3_bind_int64(st, 7, (sqlite3_int64)sh->started);
        sqlite3_bind_int64(st, 8, (sqlite3_int64)sh->errors);
        sqlite3_bind_double(st, 9, sh->p99_ms);
        sqlite3_bind_int(st, 10, sh->client_limited != 0);
        sqlite3_bind_double(st, 11, sh->client_cores);
        if (sh->window_start > 0) sqlite3_bind_double(st, 12, sh->window_start);
        else sqlite3_bind_null(st, 12);
        rc = store_run(s, st, err, "recording a capacity window's share of a client agent");
    }
    return rc;
}

static void describe_capacity_window(const Vbench__Result *r, char *buf, size_t len) {
    const Vbench__CapacityWindow *c = r->capacity_window;
    say(buf, len, "%s: window %u (%s) at %.1f/s offered, %.1f/s achieved, p99 %.3f ms%s%s", r->item_key, c->step,
        WORD_OF(capacity_stages, c->stage) ? WORD_OF(capacity_stages, c->stage) : "?", c->offered_rate,
        c->achieved_rate, c->p99_ms, c->client_limited ? "; client-limited: " : "",
        c->client_limited && c->client_reason ? c->client_reason : "");
}

/* A capacity item's answer for one p99 target. rate is NULL when nothing met the target; the latencies at the rate
 * and the knee's columns NULL when they were not measured. */
#define CAP (R->capacity)
#define CAPACITY_COLUMNS(k, C, P)                                                                                   \
    KEY_COLUMNS(k, C, P)                                                                                            \
    C(k, attempt, v_int(R->attempt))                                                                                \
    C(k, target_ms, v_real(CAP->target_ms))                                                                         \
    C(k, recall_target, v_real(CAP->recall_target))                                                                 \
    C(k, status, v_text(WORD_OF(capacity_statuses, CAP->status)))                                                   \
    C(k, reason, v_text_set(CAP->reason))                                                                           \
    C(k, ef_search, v_int(CAP->ef_search))                                                                          \
    C(k, recall, v_real_or_null(CAP->recall < 0, CAP->recall))                                                      \
    C(k, op_source, v_text(WORD_OF(capacity_sources, CAP->op_source)))                                              \
    C(k, rate, v_real_or_null(!(CAP->rate > 0), CAP->rate))                                                         \
    C(k, fail_rate, v_real_or_null(!(CAP->fail_rate > 0), CAP->fail_rate))                                          \
    C(k, p50_ms, v_real_or_null(!(CAP->p50_ms > 0), CAP->p50_ms))                                                   \
    C(k, p99_ms, v_real_or_null(!(CAP->p99_ms > 0), CAP->p99_ms))                                                   \
    C(k, p999_ms, v_real_or_null(!(CAP->p999_ms > 0), CAP->p999_ms))                                                \
    C(k, repeats, v_int(CAP->repeats))                                                                              \
    C(k, repeats_met, v_int(CAP->repeats_met))                                                                      \
    C(k, knee_rate, v_real_or_null(!(CAP->knee_rate > 0), CAP->knee_rate))                                          \
    C(k, knee_p99_ms, v_real_or_null(!(CAP->knee_rate > 0), CAP->knee_p99_ms))                                      \
    C(k, knee_failed, v_int_or_null(!(CAP->knee_rate > 0), CAP->knee_failed))                                       \
    C(k, windows, v_int(CAP->windows))                                                                              \
    C(k, start_rate, v_real(CAP->start_rate))                                                                       \
    C(k, client_max_rate, v_real_or_null(!(CAP->client_max_rate > 0), CAP->client_max_rate))                        \
    AGENT_COLUMNS(k, C)
COLUMNS(capacity, CAPACITY_COLUMNS)

static int prepare_capacity(vb_store *s, store_row *w, vb_error *err) {
    (void)w;
    if (!WORD_OF(capacity_statuses, CAP->status) || !WORD_OF(capacity_sources, CAP->op_source))
        return store_poison(s, err, "result %s: capacity status %d or operating point source %d unknown",
                            R->result_key, (int)CAP->status, (int)CAP->op_source);
    return VB_STORE_OK;
}

static void describe_capacity(const Vbench__Result *r, char *buf, size_t len) {
    const Vbench__CapacitySummary *m = r->capacity;
    if (m->status == VBENCH__CAPACITY_STATUS__CAPACITY_FOUND)
        say(buf, len, "%s: %.1f queries/s at p99 <= %g ms (ef_search %d, recall %.4f; p99 there %.3f ms; %u of %u "
            "confirmations met it; the knee at %.1f/s %s)", r->item_key, m->rate, m->target_ms, m->ef_search, m->recall,
            m->p99_ms, m->repeats_met, m->repeats, m->knee_rate, m->knee_failed ? "failed it" : "did not fail it");
    else
        say(buf, len, "%s: no capacity at p99 <= %g ms: %s", r->item_key, m->target_ms, m->reason ? m->reason : "");
}

/* ---- the table --------------------------------------------------------------------------------------------- */

#define KIND_COLUMNS(kind) kind##_columns, sizeof kind##_columns / sizeof kind##_columns[0]

const vb_result_kind store_result_kinds[] = {
    {VBENCH__RESULT__BODY_BUILD, is_checkpoint, "load_checkpoint", "load_checkpoint", "a load checkpoint",
     KIND_COLUMNS(load_checkpoint), NULL, NULL, NULL, NULL},
    {VBENCH__RESULT__BODY_BUILD, is_build, "build", "build_result", "a build result", KIND_COLUMNS(build), NULL, NULL,
     NULL, describe_build},
    {VBENCH__RESULT__BODY_SWEEP, NULL, "sweep", "sweep_result", "a recall sweep result", KIND_COLUMNS(sweep),
     sweep_measurement, decode_measurement, NULL, describe_sweep},
    {VBENCH__RESULT__BODY_WINDOW, NULL, "window", "window_result", "a concurrency window", KIND_COLUMNS(window), NULL,
     prepare_window, after_window, describe_window},
    {VBENCH__RESULT__BODY_FILTERED, NULL, "filtered", "filtered_result", "a filtered result", KIND_COLUMNS(filtered),
     filtered_measurement, decode_measurement, NULL, describe_filtered},
    {VBENCH__RESULT__BODY_CHURN, NULL, "churn", "churn_result", "a churn result", KIND_COLUMNS(churn),
     churn_measurement, prepare_churn, NULL, describe_churn},
    {VBENCH__RESULT__BODY_STREAMING, NULL, "streaming", "streaming_result", "a streaming window",
     KIND_COLUMNS(streaming), streaming_measurement, prepare_streaming, NULL, describe_streaming},
    {VBENCH__RESULT__BODY_COLD_START, NULL, "cold_start", "cold_start_result", "a cold start",
     KIND_COLUMNS(cold_start), NULL, prepare_cold_start, after_cold_start, describe_cold_start},
    {VBENCH__RESULT__BODY_CAPACITY_WINDOW, NULL, "capacity_window", "capacity_window", "a capacity window",
     KIND_COLUMNS(capacity_window), NULL, prepare_capacity_window, after_capacity_window, describe_capacity_window},
    {VBENCH__RESULT__BODY_CAPACITY, NULL, "capacity", "capacity_result", "a capacity summary", KIND_COLUMNS(capacity),
     NULL, prepare_capacity, NULL, describe_capacity},
    {VBENCH__RESULT__BODY_MIXED, NULL, "mixed", "mixed_result", "a mixed window", KIND_COLUMNS(mixed),
     mixed_measurement, prepare_mixed, NULL, describe_mixed},
    {VBENCH__RESULT__BODY_NODES, NULL, "nodes", "node_reading", "a reading of an engine's servers",
     KIND_COLUMNS(nodes), NULL, NULL, after_nodes, describe_nodes},
};
const size_t store_n_result_kinds = sizeof store_result_kinds / sizeof store_result_kinds[0];

const vb_result_kind *vb_result_kind_of(const Vbench__Result *r) {
    for (size_t i = 0; i < store_n_result_kinds; i++) {
        const vb_result_kind *k = &store_result_kinds[i];
        if (k->body == r->body_case && (!k->is || k->is(r))) return k;
    }
    return NULL;
}

const char *vb_result_kind_name(const vb_result_kind *k) { return k ? k->name : "none"; }

const char *vb_result_table(size_t i) { return i < store_n_result_kinds ? store_result_kinds[i].table : NULL; }

void vb_result_describe(const vb_result_kind *k, const Vbench__Result *r, char *buf, size_t len) {
    if (len) buf[0] = '\0';
    if (k && k->describe && len) k->describe(r, buf, len);
}
