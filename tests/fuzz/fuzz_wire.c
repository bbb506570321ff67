/* Fuzz target: a ZeroMQ message body as the coordinator and the agents receive it.
 *
 * The bytes go through vb_wire_decode (protobuf-c unpack plus the envelope checks), then through what the
 * receiving side does with a decoded message before any engine is involved: the coordinator records a Hello in
 * the agent table and commits a Result into the results store (histogram decoding, percentiles, the JSON and
 * blob columns), the agent turns an Assign's key/value lists into vb_kv views. The store is an in-memory SQLite
 * database holding the plan of the built-in dev profile; a result for an item outside the plan is recorded
 * against the plan's first item (the coordinator drops such results before the store, so this only widens what
 * the store sees), and the result tables are emptied after every input so each input starts from the same state.
 *
 * Invariants checked beyond the sanitizers: a rejected message always says why; a committed latency histogram
 * has ordered percentiles that lie inside its own range; the JSON columns are valid JSON; a committed sweep or
 * filtered result whose answers repeated an id is exactly one "duplicate ids" row of the validity view; a committed
 * cold start keeps a row per query and a summary inside its own latencies. */
#include <math.h>
#include <sqlite3.h>
#include <stdint.h>

#include "config/plan.h"
#include "config/profile.h"
#include "store/store.h"
#include "proto/wire.h"
#include "tests/fuzz/fuzz_util.h"

static vb_profile *g_profile;
static vb_plan *g_plan;
static vb_store *g_store;

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc, (void)argv;
    vb_error err = {0};
    if (vb_profile_load("dev", &g_profile, &err) != VB_OK || vb_plan_build(g_profile, &g_plan, &err) != VB_OK ||
        vb_store_open(":memory:", 1, &g_store, &err) != VB_OK ||
        vb_store_init_campaign(g_store, g_profile, NULL, g_plan, &err) != VB_OK) {
        fprintf(stderr, "fuzz_wire: setup failed: %s\n", err.message);
        abort();
    }
    return 0;
}

static void sql(const char *text) {
    char *msg = NULL;
    if (sqlite3_exec(vb_store_db(g_store), text, NULL, NULL, &msg) != SQLITE_OK) {
        fprintf(stderr, "fuzz_wire: %s: %s\n", text, msg ? msg : "?");
        abort();
    }
}

/* One row of a query as doubles (NULL -> NAN); returns the number of columns, 0 when there is no row. */
static int row(const char *query, const char *key, double *out, int cap) {
    sqlite3_stmt *st = NULL;
    FZ_CHECK(sqlite3_prepare_v2(vb_store_db(g_store), query, -1, &st, NULL) == SQLITE_OK, "%s",
             sqlite3_errmsg(vb_store_db(g_store)));
    sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
    int n = 0;
    if (sqlite3_step(st) == SQLITE_ROW) {
        n = sqlite3_column_count(st) < cap ? sqlite3_column_count(st) : cap;
        for (int i = 0; i < n; i++)
            out[i] = sqlite3_column_type(st, i) == SQLITE_NULL ? NAN : sqlite3_column_double(st, i);
    }
    sqlite3_finalize(st);
    return n;
}

/* mean, p50, p95, p99, p99.9, max of a committed result: NULL all together, or ordered and inside the range the
 * buckets can hold (a percentile is a bucket midpoint, at most 1/256 above the largest value recorded). */
static void check_latency(const char *table, const char *key) {
    char q[256];
    snprintf(q, sizeof q, "SELECT mean_ms, p50_ms, p95_ms, p99_ms, p999_ms, max_ms FROM %s WHERE result_key = ?1",
             table);
    double v[6];
    FZ_CHECK(row(q, key, v, 6) == 6, "committed result %s is not in %s", key, table);
    int nulls = 0;
    for (int i = 0; i < 6; i++) nulls += isnan(v[i]);
    FZ_CHECK(nulls == 0 || nulls == 6, "%s: %d of the 6 latency columns are NULL", table, nulls);
    if (nulls) return;
    const double lo = 1e-3, hi = 1e5 * (1 + 1.0 / 128);   /* ms: the histogram's range, 1 us .. 100 s */
    for (int i = 0; i < 5; i++) FZ_CHECK(v[i] >= lo && v[i] <= hi, "%s: latency column %d = %g ms", table, i, v[i]);
    FZ_CHECK(v[1] <= v[2] && v[2] <= v[3] && v[3] <= v[4], "%s: percentiles out of order: %g %g %g %g", table, v[1],
             v[2], v[3], v[4]);
    FZ_CHECK(v[4] <= v[5] * (1 + 1.0 / 128) && v[0] <= v[5] * (1 + 1.0 / 128),
             "%s: p99.9 %g ms or mean %g ms above max %g ms", table, v[4], v[0], v[5]);
}

/* The validity view has one "duplicate ids" row for a committed result with duplicate_answers > 0 (as SQLite
 * stores it: a count above INT64_MAX reads negative and is no finding), none otherwise. */
static void check_duplicates(const char *table, const char *key, uint64_t answers) {
    char q[256];
    snprintf(q, sizeof q, "SELECT COUNT(*) FROM v_validity AS v JOIN %s AS t ON t.item_key = v.item "
             "WHERE t.result_key = ?1 AND v.\"check\" = 'duplicate ids'", table);
    double v[1];
    FZ_CHECK(row(q, key, v, 1) == 1, "%s: the validity view cannot be read", table);
    double want = answers > 0 && answers <= INT64_MAX ? 1 : 0;
    FZ_CHECK(v[0] == want, "%s: %g 'duplicate ids' findings for %llu duplicate answers", table, v[0],
             (unsigned long long)answers);
}

static void on_result(Vbench__Result *r) {
    const vb_plan_item *it = vb_plan_find(g_plan, r->item_key);
    char *key = r->item_key;
    if (!it) {
        it = &g_plan->items[0];
        r->item_key = (char *)it->key;
    }
    int dup = 0;
    vb_error err = {0};
    int rc = vb_store_commit_result(g_store, r, g_profile->engines[it->engine].name,
                                    g_profile->datasets[it->dataset].name, "fuzz-agent", &dup, &err);
    FZ_CHECK(rc == VB_OK || err.message[0], "result refused without a message");
    FZ_SAY("result %s: %s", r->result_key, rc == VB_OK ? "committed" : err.message);
    if (rc == VB_OK) {
        FZ_CHECK(!dup, "a result key seen twice in one input");
        switch (r->body_case) {
        case VBENCH__RESULT__BODY_SWEEP:
            check_latency("sweep_result", r->result_key);
            check_duplicates("sweep_result", r->result_key, r->sweep->m ? r->sweep->m->duplicate_answers : 0);
            break;
        case VBENCH__RESULT__BODY_FILTERED:
            check_latency("filtered_result", r->result_key);
            check_duplicates("filtered_result", r->result_key, r->filtered->m ? r->filtered->m->duplicate_answers : 0);
            break;
        case VBENCH__RESULT__BODY_WINDOW: {
            check_latency("window_result", r->result_key);
            double v[1];
            row("SELECT json_valid(fraction_in_call) FROM window_result WHERE result_key = ?1", r->result_key, v, 1);
            FZ_CHECK(v[0] == 1, "window_result.fraction_in_call is not JSON");
            break;
        }
        case VBENCH__RESULT__BODY_COLD_START: {
            /* every query of a measured one is a row; its summary lies inside the latencies it came from */
            const Vbench__ColdStartResult *c = r->cold_start;
            double v[4];
            row("SELECT (SELECT COUNT(*) FROM cold_start_query WHERE result_key = ?1), first_ms, cold_max_ms, "
                "cold_p50_ms FROM cold_start_result WHERE result_key = ?1", r->result_key, v, 4);
            FZ_CHECK(v[0] == (c->applicable ? (double)(c->n_cold_ns + c->n_warm_ns) : 0),
                     "cold start: %g query rows for %zu + %zu queries", v[0], c->n_cold_ns, c->n_warm_ns);
            FZ_CHECK(!c->applicable || (v[1] <= v[2] && v[3] <= v[2]), "cold start: first %g or median %g above max %g",
                     v[1], v[3], v[2]);
            break;
        }
        default: break;
        }
    }
    r->item_key = key;
    /* the rows beside a result first (cold_start_query refers to its cold start), then every result kind's table
     * (store/result_kinds.c) */
    sql("DELETE FROM cold_start_query; DELETE FROM recall_dist; DELETE FROM window_wait; DELETE FROM server_count; "
        "UPDATE plan SET status = 'pending'");
    for (size_t i = 0; vb_result_table(i); i++) {
        char del[128];
        snprintf(del, sizeof del, "DELETE FROM %s", vb_result_table(i));
        sql(del);
    }
}

static void on_hello(const Vbench__Hello *h) {
    vb_error err = {0};
    FZ_CHECK(vb_store_agent_seen(g_store, h, &err) == VB_OK, "%s", err.message);
    double v[1] = {0};
    FZ_CHECK(row("SELECT json_valid(versions) FROM agent WHERE id = ?1", h->agent_id, v, 1) == 1 && v[0] == 1,
             "agent.versions is not JSON");
    sql("DELETE FROM agent");
}

/* The agent's side: vb_kv views over an Assign's lists and its typed point (agent/main.c), every string readable. */
static void on_assign(const Vbench__Assign *a) {
    vb_point p;
    vb_wire_point_read(a->point, &p);
    fz_touch(&p, sizeof p);
    Vbench__KV **lists[] = {a->engine_params, a->dataset_params};
    size_t lens[] = {a->n_engine_params, a->n_dataset_params};
    for (int l = 0; l < 2; l++) {
        vb_kv *kv = vb_wire_kv_view(lists[l], lens[l]);
        FZ_CHECK(kv != NULL, "no view");
        for (size_t i = 0; i < lens[l]; i++) {
            fz_touch(kv[i].key, strlen(kv[i].key) + 1);
            fz_touch(kv[i].value, strlen(kv[i].value) + 1);
        }
        free(kv);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    vb_error err = {0};
    Vbench__Envelope *env = vb_wire_decode(data, size, &err);
    if (!env) {
        FZ_CHECK(err.message[0], "message refused without a reason");
        FZ_SAY("refused: %s", err.message);
        return 0;
    }
    FZ_CHECK(strcmp(vb_wire_body_name(env), "none") != 0, "a decoded envelope without a body");
    FZ_SAY("decoded: %s", vb_wire_body_name(env));
    switch (env->body_case) {
    case VBENCH__ENVELOPE__BODY_HELLO: on_hello(env->hello); break;
    case VBENCH__ENVELOPE__BODY_RESULT: on_result(env->result); break;
    case VBENCH__ENVELOPE__BODY_ASSIGN: on_assign(env->assign); break;
    default: break;
    }
    vb_wire_free(env);
    return 0;
}
