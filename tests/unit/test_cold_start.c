/* Self-test of the cold start (issue 26) without servers: the summary's arithmetic (metrics/coldstart.h), the
 * profile's cold_start phase (its defaults, its errors naming the field, its place in the plan, before churn), the
 * Point's cold facts on the wire, and the store / show / report path: a measured result and a not-applicable one
 * committed as the phase sends them, a second copy ignored (the item is done once), the numbers read back through
 * v_cold_start, `show --json`, `show` and the report, and a result that cannot be stored refused as POISON.
 * tests/e2e/54-cold-start-servers.t runs it on real pgvector and MariaDB servers. */
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config/plan.h"
#include "config/profile.h"
#include "metrics/coldstart.h"
#include "proto/wire.h"
#include "report/report_html.h"
#include "report/show.h"
#include "store/store.h"
#include "tests/tap.h"

#define MS 1000000ull   /* ns */

/* ---- the summary --------------------------------------------------------------------------------------------- */

/* Cold: 50 ms, then nine of 2 ms, then 1 ms from query 11 on; warm: 1 ms throughout (its first 3 ms). The rolling
 * median of 10 is 2 ms at queries 10 .. 14, 1.5 ms at query 15 (five of each) and reaches 1 ms, within 10 % of the
 * warm 1 ms, at query 16 (six of the ten are 1 ms). */
static void test_summary(void) {
    enum { N = 40 };
    uint64_t cold[N], warm[N];
    for (int i = 0; i < N; i++) {
        cold[i] = i == 0 ? 50 * MS : i < 10 ? 2 * MS : 1 * MS;
        warm[i] = i == 0 ? 3 * MS : 1 * MS;
    }
    double rolling[N];
    vb_coldstart s;
    is_int(vb_coldstart_summarize(cold, NULL, N, warm, NULL, N, rolling, &s), 0, "summary: computed");
    is_double(s.first_ms, 50, 1e-12, "summary: the first cold query");
    is_double(s.cold_mean_ms, (50 + 9 * 2 + 30 * 1) / 40.0, 1e-12, "summary: the cold mean");
    is_double(s.cold_p50_ms, 1, 1e-12, "summary: the cold median");
    is_double(s.cold_max_ms, 50, 1e-12, "summary: the cold maximum");
    is_double(s.warm_first_ms, 3, 1e-12, "summary: the warm pass's first query");
    is_double(s.warm_mean_ms, (3 + 39) / 40.0, 1e-12, "summary: the warm mean");
    is_double(s.warm_p50_ms, 1, 1e-12, "summary: the warm median");
    is_double(s.ratio_first, 50, 1e-12, "summary: ratio_first = first / warm median");
    is_double(s.ratio_mean, (98 / 40.0) / (42 / 40.0), 1e-12, "summary: ratio_mean = cold mean / warm mean");
    is_double(s.ratio_p50, 1, 1e-12, "summary: ratio_p50");
    is_int(s.warm_after, 16, "summary: warm again at query 16 (the rolling median of 10 reaches 1 ms)");
    is_double(s.warm_after_s, (50 + 9 * 2 + 6 * 1) / 1e3, 1e-12, "summary: in the time of those 16 queries");
    ok(isnan(rolling[8]) && !isnan(rolling[9]), "summary: no rolling median before the window is full");
    is_double(rolling[9], 2, 1e-12, "summary: the rolling median at query 10 (50, then nine of 2 ms)");
    is_double(rolling[14], 1.5, 1e-12, "summary: at query 15 the mean of the two middle values (five of each)");
    is_double(rolling[15], 1, 1e-12, "summary: and at query 16 (four of 2 ms, six of 1 ms)");

    /* never within 10 %: the cold queries stay at 1.2 ms */
    for (int i = 1; i < N; i++) cold[i] = 1200000;
    is_int(vb_coldstart_summarize(cold, NULL, N, warm, NULL, N, NULL, &s), 0, "summary: a slow server");
    is_int(s.warm_after, -1, "summary: not warm within the cold queries (1.2 ms > 1.1 x 1 ms)");
    is_double(s.warm_after_s, 0, 0, "summary: and no time to warm");

    /* failed queries are left out of every number but the time to warm */
    for (int i = 1; i < N; i++) cold[i] = 1 * MS;
    uint8_t failed[N] = {0};
    failed[0] = 1;   /* the 50 ms query failed */
    is_int(vb_coldstart_summarize(cold, failed, N, warm, NULL, N, rolling, &s), 0, "summary: with a failed query");
    is_int(s.cold_n, N - 1, "summary: the failed query is not counted");
    is_double(s.first_ms, 1, 1e-12, "summary: the first successful one is the first query");
    is_int(s.warm_after, 11, "summary: the window of ten successful ones ends at query 11");
    is_double(s.warm_after_s, (50 + 10) / 1e3, 1e-12, "summary: the failed query's time passed too");
    ok(isnan(rolling[0]), "summary: no rolling median for a failed query");
    memset(failed, 1, sizeof failed);
    is_int(vb_coldstart_summarize(cold, failed, N, warm, NULL, N, NULL, &s), -1, "summary: every cold query failed");
    double v[4] = {3, 1, 4, 2};
    is_double(vb_coldstart_median(v, 4), 2.5, 1e-12, "median of four");
    ok(isnan(vb_coldstart_median(v, 0)), "median of none is NAN");
}

/* ---- the profile and the plan ----------------------------------------------------------------------------------- */

#define PROFILE_HEAD                                                                                               \
    "name: cs\n"                                                                                                   \
    "datasets:\n"                                                                                                  \
    "  - {name: d1, source: synthetic, rows: 1000, queries: 100}\n"                                                \
    "engines:\n"                                                                                                   \
    "  - {name: pgvector, recipe: pgvector}\n"                                                                     \
    "  - {name: hnswlib}\n"                                                                                        \
    "phases:\n"

static void expect_error(const char *what, const char *text, const char *frag) {
    vb_profile *p = NULL;
    vb_error err = {0};
    int rc = vb_profile_parse(text, strlen(text), "cs.yml", &p, &err);
    ok(rc != VB_OK && p == NULL, "profile: %s is refused", what);
    contains(err.message, frag, nm("profile: %s: the error names it", what));
    vb_profile_destroy(&p);
}

static void test_profile(void) {
    const char *text = PROFILE_HEAD "  churn: {fraction: 0.1}\n  cold_start:\n  build:\n";
    vb_profile *p = NULL;
    vb_plan *plan = NULL;
    vb_error err = {0};
    ok(vb_profile_parse(text, strlen(text), "cs.yml", &p, &err) == VB_OK, "profile: cold_start parses (%s)", err.message);
    if (!p) return;
    is_str(vb_profile_phase_value(p, "cold_start", "queries"), "200", "profile: queries defaults to 200");
    is_str(vb_profile_phase_value(p, "cold_start", "ef_search"), "100", "profile: ef_search defaults to 100");
    ok(vb_plan_build(p, &plan, &err) == VB_OK, "plan: built (%s)", err.message);
    if (plan) {
        is_int(plan->n_items, 6, "plan: build, cold_start and churn for each engine");
        const vb_plan_item *it = &plan->items[1];
        is_str(it->key, "cs/pgvector/d1/cold_start", "plan: the cold start's key");
        ok(it->kind == VB_PHASE_COLD_START && it->p.queries == 200 && it->p.ef_search == 100 && !it->p.cold,
           "plan: its point (queries 200, ef_search 100; cold is the coordinator's, per attempt)");
        ok(plan->items[2].kind == VB_PHASE_CHURN, "plan: cold_start runs before churn, whatever the file's order");
    }
    vb_plan_destroy(&plan);
    char *json = vb_profile_to_json(p);
    ok(json && strstr(json, "\"cold_start\""), "profile: the manifest's resolved profile has the phase");
    free(json);
    vb_profile_destroy(&p);
    is_str(vb_phase_name(VB_PHASE_COLD_START), "cold_start", "phase name");
    is_int(vb_phase_order(5), VB_PHASE_COLD_START, "execution order: cold_start sixth (after capacity and filtered)");
    is_int(vb_phase_order(6), VB_PHASE_CHURN, "execution order: churn after it");

    expect_error("queries below the window", PROFILE_HEAD "  build:\n  cold_start: {queries: 5}\n",
                 "cs.yml:9: key 'phases.cold_start.queries'");
    expect_error("queries above 10,000", PROFILE_HEAD "  build:\n  cold_start: {queries: 20000}\n",
                 "key 'phases.cold_start.queries'");
    expect_error("ef_search 0", PROFILE_HEAD "  build:\n  cold_start: {ef_search: 0}\n",
                 "key 'phases.cold_start.ef_search'");
    expect_error("an unknown key", PROFILE_HEAD "  build:\n  cold_start: {window: 20}\n",
                 "unknown key 'phases.cold_start.window'");
}

/* ---- the wire ------------------------------------------------------------------------------------------------ */

static void test_wire(void) {
    vb_point p = {.queries = 200, .ef_search = 40, .cold = 1, .evicted_files = 979, .evicted_bytes = 42358962,
                  .restart_s = 0.4};
    Vbench__Point w;
    vb_wire_point_make(&p, &w);
    vb_point back;
    vb_wire_point_read(&w, &back);
    ok(back.cold == 1 && back.evicted_files == 979 && back.evicted_bytes == 42358962 && back.restart_s == 0.4 &&
       back.queries == 200, "wire: the Point's cold facts travel");
    is_str(vb_wire_server_action_name(VBENCH__SERVER_ACTION__SERVER_COLD_START), "cold start", "wire: action name");

    /* the largest cold start result (10,000 queries, the profile's limit) fits the bound proto/wire.h gives it */
    enum { N = 10000 };
    uint64_t *ns = malloc(N * sizeof *ns);
    uint32_t *idx = malloc(N * sizeof *idx);
    for (uint32_t i = 0; i < N; i++) ns[i] = UINT64_MAX, idx[i] = N - 1;
    char text[1024];
    memset(text, 'x', sizeof text - 1);
    text[sizeof text - 1] = '\0';
    Vbench__ColdStartResult c = VBENCH__COLD_START_RESULT__INIT;
    c.applicable = 1;
    c.n_cold_ns = c.n_warm_ns = c.n_cold_failed = c.n_warm_failed = N;
    c.cold_ns = c.warm_ns = ns;
    c.cold_failed = c.warm_failed = idx;
    c.reason = c.first_error = text;
    c.evicted_files = c.evicted_bytes = UINT64_MAX;
    c.restart_s = 1e300;
    size_t bytes = vbench__cold_start_result__get_packed_size(&c);
    ok(bytes <= 305u * 1024 && bytes < VB_WIRE_MAX_BYTES, "wire: the largest cold start result is %zu bytes (<= 305 KB)",
       bytes);
    free(ns), free(idx);
}

/* ---- the store, show and the report ------------------------------------------------------------------------ */

static int commit(vb_store *st, const char *item, const Vbench__ColdStartResult *c, const char *engine, int *dup,
                  vb_error *err) {
    char key[300];
    snprintf(key, sizeof key, "%s#cold_start", item);
    Vbench__Result r = VBENCH__RESULT__INIT;
    r.result_key = key;
    r.item_key = (char *)item;
    r.completes_item = 1;
    r.body_case = VBENCH__RESULT__BODY_COLD_START;
    r.cold_start = (Vbench__ColdStartResult *)c;
    return vb_store_commit_result(st, &r, engine, "d1", "test", dup, err);
}

static double one(sqlite3 *db, const char *sql) {
    sqlite3_stmt *st = NULL;
    double v = NAN;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW &&
        sqlite3_column_type(st, 0) != SQLITE_NULL)
        v = sqlite3_column_double(st, 0);
    sqlite3_finalize(st);
    return v;
}

static char *show(sqlite3 *db, int json) {
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);
    vb_error err = {0};
    int rc = vb_report_show(db, out, json, &err);
    fclose(out);
    ok(rc == VB_OK, "show%s (%s)", json ? " --json" : "", err.message);
    return text;
}

static void test_store(void) {
    char dir[] = "/tmp/vbench-cold.XXXXXX", path[128], rdir[160], cmd[256];
    if (!mkdtemp(dir)) return;
    snprintf(path, sizeof path, "%s/cs.sqlite", dir);
    const char *text = PROFILE_HEAD "  build:\n  cold_start: {queries: 40}\n";
    vb_profile *p = NULL;
    vb_plan *plan = NULL;
    vb_store *st = NULL;
    vb_error err = {0};
    int rc = vb_profile_parse(text, strlen(text), "cs.yml", &p, &err);
    if (rc == VB_OK) rc = vb_plan_build(p, &plan, &err);
    if (rc == VB_OK) rc = vb_store_open(path, 1, &st, &err);
    if (rc == VB_OK) rc = vb_store_init_campaign(st, p, NULL, plan, &err);
    if (!ok(rc == VB_OK, "store: a campaign with two cold_start items (%s)", err.message)) return;

    enum { N = 40 };
    uint64_t cold[N], warm[N];
    for (int i = 0; i < N; i++) {
        cold[i] = i == 0 ? 50 * MS : i < 10 ? 2 * MS : 1 * MS;
        warm[i] = i == 0 ? 3 * MS : 1 * MS;
    }
    uint32_t failed_warm[1] = {7};
    Vbench__ColdStartResult c = VBENCH__COLD_START_RESULT__INIT;
    c.applicable = 1;
    c.ef_search = 100;
    c.n_cold_ns = c.n_warm_ns = N;
    c.cold_ns = cold, c.warm_ns = warm;
    c.n_warm_failed = 1, c.warm_failed = failed_warm;
    c.first_error = "connection reset";
    c.evicted_files = 979, c.evicted_bytes = 42358962, c.restart_s = 0.4;
    int dup = 0;
    is_int(commit(st, "cs/pgvector/d1/cold_start", &c, "pgvector", &dup, &err), VB_STORE_OK,
           nm("store: the measured cold start is committed (%s)", err.message));
    is_int(commit(st, "cs/pgvector/d1/cold_start", &c, "pgvector", &dup, &err), VB_STORE_OK, "store: a second copy");
    is_int(dup, 1, "store: the second copy is a duplicate, nothing written (a resent result after a resume)");
    Vbench__ColdStartResult na = VBENCH__COLD_START_RESULT__INIT;
    na.reason = "hnswlib is an embedded engine: it runs inside the client process";
    is_int(commit(st, "cs/hnswlib/d1/cold_start", &na, "hnswlib", &dup, &err), VB_STORE_OK,
           "store: the not-applicable one is committed");
    sqlite3 *db = vb_store_db(st);
    is_int(one(db, "SELECT COUNT(*) FROM plan WHERE phase = 'cold_start' AND status = 'done'"), 2,
           "store: both items are done");
    is_int(one(db, "SELECT COUNT(*) FROM cold_start_query"), 2 * N, "store: every query once, the copy added none");
    is_int(one(db, "SELECT COUNT(*) FROM cold_start_query WHERE pass = 'warm' AND ok = 0 AND n = 8"), 1,
           "store: the failed warm query is kept, marked");
    is_double(one(db, "SELECT ratio_first FROM v_cold_start WHERE engine = 'pgvector'"), 50, 1e-9,
              "v_cold_start: ratio_first, the store's own summary");
    is_double(one(db, "SELECT warm_mean_ms FROM v_cold_start WHERE engine = 'pgvector'"), (3 + 38) / 39.0, 1e-9,
              "v_cold_start: the warm mean leaves the failed query out");
    is_int(one(db, "SELECT warm_after FROM v_cold_start WHERE engine = 'pgvector'"), 16, "v_cold_start: warm_after");
    is_int(one(db, "SELECT errors FROM v_cold_start WHERE engine = 'pgvector'"), 1, "v_cold_start: one failed query");
    is_double(one(db, "SELECT warm_bound_ms FROM v_cold_start_queries WHERE engine = 'pgvector' LIMIT 1"), 1.1, 1e-9,
              "v_cold_start_queries: the bound for warm again, 1.1 x the warm median");
    is_int(one(db, "SELECT COUNT(*) FROM v_validity WHERE \"check\" = 'failed queries' AND detail LIKE "
                   "'%cold start%connection reset%'"), 1, "v_validity: the failed cold start query, with its message");

    char *json = show(db, 1);
    json_error_t jerr;
    json_t *doc = json_loads(json ? json : "", 0, &jerr);
    json_t *rows = json_object_get(doc, "cold_start");
    is_int(json_array_size(rows), 2, "show --json: a cold_start row per engine");
    json_t *pg = json_array_get(rows, 0), *hn = json_array_get(rows, 1);
    is_str(json_string_value(json_object_get(pg, "engine")), "pgvector", "show --json: pgvector first (plan order)");
    is_double(json_number_value(json_object_get(pg, "ratio_first")), 50, 1e-9, "show --json: its ratio_first");
    ok(json_is_number(json_object_get(pg, "ratio_mean")), "show --json: its ratio_mean");
    is_str(json_string_value(json_object_get(pg, "time_to_warm")), "16 queries, 0.074 s", "show --json: time_to_warm");
    is_int(json_integer_value(json_object_get(pg, "evicted_files")), 979, "show --json: the files evicted");
    is_str(json_string_value(json_object_get(hn, "status")), "not applicable", "show --json: hnswlib not applicable");
    contains(json_string_value(json_object_get(hn, "reason")), "embedded", "show --json: with the reason");
    ok(json_is_null(json_object_get(hn, "ratio_first")), "show --json: and no numbers");
    json_decref(doc);
    free(json);
    char *txt = show(db, 0);
    contains(txt, "Cold start", "show: the cold start table");
    contains(txt, "not applicable", "show: hnswlib's row says not applicable");
    free(txt);

    /* refused as POISON: a failed index past the queries; every cold query failed */
    uint32_t bad[1] = {N};
    c.n_warm_failed = 1, c.warm_failed = bad;
    rc = commit(st, "cs/pgvector/d1/build", &c, "pgvector", &dup, &err);
    is_int(rc, VB_STORE_POISON, "store: a failed query past the end is POISON");
    contains(err.message, "failed warm query 40 of 40", "store: saying which");
    uint32_t all[N];
    for (uint32_t i = 0; i < N; i++) all[i] = i;
    c.n_warm_failed = 0, c.n_cold_failed = N, c.cold_failed = all;
    is_int(commit(st, "cs/hnswlib/d1/build", &c, "hnswlib", &dup, &err), VB_STORE_POISON,
           "store: a cold start whose every cold query failed is POISON");
    vb_store_close(&st);

    snprintf(rdir, sizeof rdir, "%s/report", dir);
    const char *paths[1] = {path};
    rc = vb_report_write(paths, 1, rdir, 1, &err);
    is_int(rc, VB_OK, nm("report written (%s)", err.message));
    char md[200], svg[220], line[8192];
    snprintf(md, sizeof md, "%s/report.md", rdir);
    snprintf(svg, sizeof svg, "%s/charts/cold-start-pgvector.svg", rdir);
    FILE *f = fopen(md, "r");
    /* a table wider than the page is written in parts, each with the row's key (report/grid.h vb_grid_parts): the
     * ratio and the file count may stand in two rows of pgvector's */
    int section = 0, ratio = 0, files = 0, na_row = 0;
    while (f && fgets(line, sizeof line, f)) {
        if (strstr(line, "## Cold start")) section = 1;
        if (section && strstr(line, "| pgvector |") && strstr(line, "| 50.000 |")) ratio = 1;
        if (section && strstr(line, "| pgvector |") && strstr(line, "| 979 |")) files = 1;
        if (section && strstr(line, "| hnswlib |") && strstr(line, "not applicable")) na_row = 1;
    }
    if (f) fclose(f);
    ok(section && ratio && files, "report.md: the cold start section with pgvector's ratio_first 50 and its 979 files");
    ok(na_row, "report.md: hnswlib's row says not applicable");
    ok(access(svg, R_OK) == 0, "report: the chart of latency against query number (%s)", svg);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) printf("# could not remove %s\n", dir);
    vb_plan_destroy(&plan);
    vb_profile_destroy(&p);
}

int main(void) {
    test_summary();
    test_profile();
    test_wire();
    test_store();
    return done_testing();
}
