/* The table of result kinds (store/result_kinds.c, issue 40) against the schema of a new results database: every
 * column of a kind's table is in the kind's column list and every listed column is in the table, once (the INSERT
 * and its binds are made from the list, so a column left out of it would be NULL or its default in every row);
 * every case of the Result oneof (proto/vbench.proto) has a kind; one result of each kind commits, lands in its
 * table with the configuration's label read from its plan item, and a resent copy is a duplicate whatever its
 * kind; each kind says something on the terminal (a load checkpoint nothing); status's "last result" reads
 * every kind's table; a file older than a kind's table reads (through a copy in memory that gains it). */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config/plan.h"
#include "config/profile.h"
#include "report/status_eta.h"
#include "store/store_int.h"
#include "tests/tap.h"

/* The table's columns, by PRAGMA table_info, into names (up to cap); their count. */
static size_t table_columns(sqlite3 *db, const char *table, char names[][64], size_t cap) {
    sqlite3_stmt *st = NULL;
    size_t n = 0;
    if (sqlite3_prepare_v2(db, "SELECT name FROM pragma_table_info(?1)", -1, &st, NULL) != SQLITE_OK) return 0;
    sqlite3_bind_text(st, 1, table, -1, SQLITE_STATIC);
    while (sqlite3_step(st) == SQLITE_ROW && n < cap) snprintf(names[n++], 64, "%s", sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
    return n;
}

static int listed(const vb_result_kind *k, const char *name) {
    int n = 0;
    for (size_t i = 0; i < k->n_columns; i++) n += strcmp(k->columns[i].name, name) == 0;
    return n;
}

static void check_columns(sqlite3 *db, const vb_result_kind *k) {
    char cols[128][64], missing[1024] = "", extra[1024] = "", twice[1024] = "";
    size_t n = table_columns(db, k->table, cols, 128);
    for (size_t i = 0; i < n; i++)
        if (!listed(k, cols[i])) snprintf(missing + strlen(missing), sizeof missing - strlen(missing), " %.63s", cols[i]);
    for (size_t i = 0; i < k->n_columns; i++) {
        const char *name = k->columns[i].name;
        int in_table = 0;
        for (size_t j = 0; j < n; j++) in_table |= strcmp(cols[j], name) == 0;
        if (!in_table) snprintf(extra + strlen(extra), sizeof extra - strlen(extra), " %s", name);
        if (listed(k, name) > 1 && !strstr(twice, name))
            snprintf(twice + strlen(twice), sizeof twice - strlen(twice), " %s", name);
        if (!k->columns[i].get == !k->columns[i].plan)
            snprintf(twice + strlen(twice), sizeof twice - strlen(twice), " %s(getter and plan)", name);
    }
    ok(n > 0, "%s: table %s exists in a new database (%zu columns)", k->name, k->table, n);
    is_str(missing, "", nm("%s: every column of %s is in the kind's list (missing:%s)", k->name, k->table, missing));
    is_str(extra, "", nm("%s: every listed column is in %s (not there:%s)", k->name, k->table, extra));
    is_str(twice, "", nm("%s: each column listed once, with a getter or a plan column", k->name));
}

static long long count(sqlite3 *db, const char *sql) {
    sqlite3_stmt *st = NULL;
    long long n = -1;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
        n = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return n;
}

int main(void) {
    char dir[] = "/tmp/vbench-kinds.XXXXXX", path[128];
    if (!mkdtemp(dir)) return 1;
    snprintf(path, sizeof path, "%s/r.sqlite", dir);
    vb_error err = {0};
    vb_profile *p = NULL;
    vb_plan *plan = NULL;
    vb_store *s = NULL;
    int rc = vb_profile_load("dev", &p, &err);
    if (rc == VB_OK) rc = vb_plan_build(p, &plan, &err);
    if (rc == VB_OK) rc = vb_store_open(path, 1, &s, &err);
    if (rc == VB_OK) rc = vb_store_init_campaign(s, p, NULL, plan, &err);
    if (!ok(rc == VB_OK, "a new results database with the dev profile's plan (%s)", err.message)) return done_testing();
    sqlite3 *db = vb_store_db(s);

    /* ---- each kind's column list is its table's columns ---- */
    for (size_t i = 0; i < store_n_result_kinds; i++) check_columns(db, &store_result_kinds[i]);

    /* ---- every case of the Result oneof has a kind ---- */
    const ProtobufCMessageDescriptor *rd = &vbench__result__descriptor;
    char without[512] = "";
    size_t cases = 0;
    for (unsigned i = 0; i < rd->n_fields; i++) {
        const ProtobufCFieldDescriptor *f = &rd->fields[i];
        if (!(f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF)) continue;
        cases++;
        int found = 0;
        for (size_t k = 0; k < store_n_result_kinds; k++) found |= (unsigned)store_result_kinds[k].body == f->id;
        if (!found) snprintf(without + strlen(without), sizeof without - strlen(without), " %s", f->name);
    }
    ok(cases >= 7, "the Result oneof has %zu cases", cases);
    is_str(without, "", nm("every case of the Result oneof has a kind in store_result_kinds (none:%s)", without));

    /* ---- one result of each kind commits into its table, once ---- */
    const vb_plan_item *it = &plan->items[0];
    const char *label = p->engines[it->engine].name;
    Vbench__Result r;
    Vbench__BuildResult b = VBENCH__BUILD_RESULT__INIT, cp = VBENCH__BUILD_RESULT__INIT;
    Vbench__SweepResult sw = VBENCH__SWEEP_RESULT__INIT;
    Vbench__WindowResult win = VBENCH__WINDOW_RESULT__INIT;
    Vbench__FilteredResult fi = VBENCH__FILTERED_RESULT__INIT;
    Vbench__ChurnResult ch = VBENCH__CHURN_RESULT__INIT;
    Vbench__StreamingResult stm = VBENCH__STREAMING_RESULT__INIT;
    Vbench__ColdStartResult cs = VBENCH__COLD_START_RESULT__INIT;
    Vbench__WindowResult cwin = VBENCH__WINDOW_RESULT__INIT;
    Vbench__CapacityWindow cw = VBENCH__CAPACITY_WINDOW__INIT;
    Vbench__CapacitySummary cap = VBENCH__CAPACITY_SUMMARY__INIT;
    Vbench__MixedResult mx = VBENCH__MIXED_RESULT__INIT;
    Vbench__NodeResult nr = VBENCH__NODE_RESULT__INIT;
    Vbench__NodeStats ns[2] = {VBENCH__NODE_STATS__INIT, VBENCH__NODE_STATS__INIT}, *nsp[2] = {&ns[0], &ns[1]};
    Vbench__Measurement m = VBENCH__MEASUREMENT__INIT;
    double targets[2] = {5, 10};
    cw.w = &cwin;
    cw.step = 1;
    cw.offered_rate = 100;
    cw.n_targets_ms = 2;
    cw.targets_ms = targets;
    /* two client agents, 50/s each (capacity_window_share) */
    Vbench__CapacityShare sh1 = VBENCH__CAPACITY_SHARE__INIT, sh2 = VBENCH__CAPACITY_SHARE__INIT, *shs[2] = {&sh1, &sh2};
    sh1.agent = "bench-1", sh2.agent = "bench-2";
    sh1.offered_rate = sh2.offered_rate = 50;
    sh1.scheduled = 100, sh2.scheduled = 98;
    sh1.window_start = 1e9, sh2.window_start = 1e9 + 0.02;
    sh2.client_limited = 1;
    cw.agents = 2;
    cw.n_shares = 2;
    cw.shares = shs;
    cap.target_ms = 10;
    cap.rate = 90;
    b.rows = 1000;
    b.engine_version = "1";
    b.dataset_hash = "h";
    cp.checkpoint = 1;
    cp.rows = 10;
    sw.m = &m;
    fi.m = &m;
    fi.filter = "f";
    ch.stage = VBENCH__CHURN_STAGE__CHURN_BEFORE;
    ch.m = &m;
    stm.m = &m;
    cs.reason = "no server";
    mx.m = &m;
    mx.phase = "write";
    nr.after = "build";
    nr.n_nodes = 2;
    nr.nodes = nsp;
    ns[0].role = "primary", ns[0].rows = 1000, ns[0].searches = 7;
    ns[1].node = 1, ns[1].role = "replica", ns[1].rows = 1000, ns[1].searches = -1, ns[1].lag_bytes = 0;
    m.queries = 10;
    m.recall = 0.5;
    struct {
        Vbench__Result__BodyCase body;
        void *msg;
        const char *kind;
    } one[] = {
        {VBENCH__RESULT__BODY_BUILD, &cp, "load_checkpoint"}, {VBENCH__RESULT__BODY_BUILD, &b, "build"},
        {VBENCH__RESULT__BODY_SWEEP, &sw, "sweep"},           {VBENCH__RESULT__BODY_WINDOW, &win, "window"},
        {VBENCH__RESULT__BODY_FILTERED, &fi, "filtered"},     {VBENCH__RESULT__BODY_CHURN, &ch, "churn"},
        {VBENCH__RESULT__BODY_STREAMING, &stm, "streaming"},  {VBENCH__RESULT__BODY_COLD_START, &cs, "cold_start"},
        {VBENCH__RESULT__BODY_CAPACITY_WINDOW, &cw, "capacity_window"}, {VBENCH__RESULT__BODY_CAPACITY, &cap, "capacity"},
        {VBENCH__RESULT__BODY_MIXED, &mx, "mixed"},           {VBENCH__RESULT__BODY_NODES, &nr, "nodes"},
    };
    size_t n_one = sizeof one / sizeof one[0];
    is_int((int)n_one, (int)store_n_result_kinds, nm("a result for each of the %zu kinds", store_n_result_kinds));
    for (size_t i = 0; i < n_one; i++) {
        char key[64];
        snprintf(key, sizeof key, "k-%s", one[i].kind);
        vbench__result__init(&r);
        r.result_key = key;
        r.item_key = (char *)it->key;
        r.attempt = 1;
        r.body_case = one[i].body;
        r.build = one[i].msg;   /* the oneof's members share their place */
        const vb_result_kind *k = vb_result_kind_of(&r);
        if (!ok(k && strcmp(vb_result_kind_name(k), one[i].kind) == 0, "%s: its kind (%s)", one[i].kind,
                vb_result_kind_name(k)))
            continue;
        int dup = -1;
        rc = vb_store_commit_result(s, &r, "exact", "d1", "a", &dup, &err);
        ok(rc == VB_OK && dup == 0, "%s: commits (%s)", k->name, rc ? err.message : "ok");
        char sql[300];
        int labelled = strcmp(k->name, "load_checkpoint") != 0;
        snprintf(sql, sizeof sql, "SELECT COUNT(*) FROM %s WHERE result_key = '%s'%s%s%s", k->table, key,
                 labelled ? " AND config = '" : "", labelled ? label : "", labelled ? "'" : "");
        is_int((int)count(db, sql), 1, nm("%s: one row in %s%s", k->name, k->table,
                                          labelled ? ", its config the plan item's engine" : ""));
        rc = vb_store_commit_result(s, &r, "exact", "d1", "a", &dup, &err);
        ok(rc == VB_OK && dup == 1, "%s: a resent copy is a duplicate", k->name);
        char lines[2048];
        vb_result_describe(k, &r, lines, sizeof lines);
        if (labelled) ok(strstr(lines, it->key) != NULL, "%s: the terminal line names the item (%s)", k->name, lines);
        else is_str(lines, "", "a load checkpoint says nothing (the progress line does)");
        if (strcmp(k->name, "nodes") == 0) {   /* a row per node beside the reading, -1 as NULL */
            is_int((int)count(db, "SELECT COUNT(*) FROM node_result WHERE result_key = 'k-nodes'"), 2,
                   "nodes: a row per node in node_result");
            is_int((int)count(db, "SELECT COUNT(*) FROM v_nodes WHERE node = 1 AND searches IS NULL AND rows = 1000 "
                                  "AND role = 'replica'"), 1, "nodes: v_nodes shows node 1, its unknown count NULL");
            is_int((int)count(db, "SELECT COUNT(*) FROM v_nodes WHERE at_s IS NULL"), 2,
                   "nodes: a reading after the build has no sample time");
            /* a lag sample taken during a churn's writes (agent/phase.c vb_lag_sampler): its time since they began */
            Vbench__Result lr = r;
            Vbench__NodeResult ln = nr;
            ln.after = "churn", ln.at_s = 0.4;
            ns[1].lag_bytes = 4096;
            lr.nodes = &ln;
            lr.result_key = "k-nodes-lag";
            rc = vb_store_commit_result(s, &lr, "exact", "d1", "a", &dup, &err);
            ok(rc == VB_OK && dup == 0, "nodes: a lag sample commits");
            is_int((int)count(db, "SELECT COUNT(*) FROM v_nodes WHERE after = 'churn' AND at_s = 0.4 AND node = 1 AND "
                                  "lag_bytes = 4096"), 1, "nodes: v_nodes shows the lag sample with its time");
            vb_result_describe(k, &lr, lines, sizeof lines);
            is_str(lines, "", "nodes: a lag sample says nothing on the terminal (five a second)");
            /* the facts are under the server's name (engine.LABEL.server, coordinator/servers.c): here "srv" */
            char msql[400];
            snprintf(msql, sizeof msql, "SELECT engine FROM v_nodes WHERE node = 1");
            sqlite3_stmt *q = NULL;
            char eng[128] = "";
            if (sqlite3_prepare_v2(db, msql, -1, &q, NULL) == SQLITE_OK && sqlite3_step(q) == SQLITE_ROW)
                snprintf(eng, sizeof eng, "%s", (const char *)sqlite3_column_text(q, 0));
            sqlite3_finalize(q);
            char mk[256];
            snprintf(mk, sizeof mk, "engine.%s.server", eng);
            vb_store_manifest_set(s, mk, "srv", NULL);
            vb_store_manifest_set(s, "server.srv.node.1.host", "orch2-host", NULL);
            vb_store_manifest_set(s, "server.srv.node.1.agent", "orch2", NULL);
            vb_store_manifest_set(s, "server.srv.node.1.unit", "u-node1", NULL);
            is_int((int)count(db, "SELECT COUNT(*) FROM v_nodes WHERE node = 1 AND host = 'orch2-host' AND "
                                  "agent = 'orch2' AND unit = 'u-node1' AND at_s IS NULL"),
                   1, "nodes: v_nodes reads node 1's unit, host and agent under the configuration's server's name");
        }
    }
    /* the capacity window's shares, beside it and in its view */
    is_int((int)count(db, "SELECT COUNT(*) FROM capacity_window_share WHERE result_key = 'k-capacity_window' AND "
                          "offered_rate = 50"), 2, "capacity_window: a share row per client agent, 50/s each");
    is_int((int)count(db, "SELECT share FROM capacity_window_share WHERE agent = 'bench-2' AND scheduled = 98 AND "
                          "client_limited = 1"), 2, "... bench-2 the second, its own counts and guard");
    is_int((int)count(db, "SELECT CAST(round(1e3 * (MAX(window_start) - MIN(window_start))) AS INTEGER) FROM "
                          "capacity_window_share WHERE result_key = 'k-capacity_window'"), 20,
           "... each share's window start (20 ms apart)");
    is_int((int)count(db, "SELECT COUNT(*) FROM v_capacity_windows WHERE agents = 2 AND "
                          "shares = 'bench-1 50.0/s, bench-2 50.0/s'"), 1, "v_capacity_windows: agents 2 and the shares");
    /* a sweep point whose answers repeated ids and whose queries include recall-0 ones: three lines */
    m.duplicate_answers = 2;
    m.duplicate_example = "query 3: id 7 at rows 0 and 1";
    m.recall_queries = 10;
    m.recall_zero_share = 0.2;
    vbench__result__init(&r);
    r.result_key = "k-lines";
    r.item_key = (char *)it->key;
    r.body_case = VBENCH__RESULT__BODY_SWEEP;
    r.sweep = &sw;
    char lines[2048];
    vb_result_describe(vb_result_kind_of(&r), &r, lines, sizeof lines);
    int n_lines = 1;
    for (const char *c = lines; *c; c++) n_lines += *c == '\n';
    ok(n_lines == 3 && strstr(lines, "2 of 10 answers repeated an id (first: query 3: id 7 at rows 0 and 1)") &&
       strstr(lines, "2 of 10 queries at recall 0 behind the mean 0.5000"), "a sweep point's lines: the point, the "
       "repeated ids, the recall-0 queries (%d lines)", n_lines);
    vbench__result__init(&r);
    r.result_key = "k-none";
    r.item_key = (char *)it->key;
    ok(vb_result_kind_of(&r) == NULL, "a Result with no body has no kind");
    size_t tables = 0;
    while (vb_result_table(tables) && tables < 100) tables++;
    is_int((int)tables, (int)store_n_result_kinds, "vb_result_table names every kind's table, then NULL");
    is_str(vb_result_table(0), store_result_kinds[0].table, "in the table's order");
    /* status's "last result" reads every kind's table: a campaign whose only results are streaming windows */
    for (size_t i = 0; vb_result_table(i); i++) {
        char sql[200];
        snprintf(sql, sizeof sql, "DELETE FROM %s", vb_result_table(i));
        if (strcmp(vb_result_table(i), "streaming_result") != 0) sqlite3_exec(db, sql, NULL, NULL, NULL);
    }
    char *status = NULL;
    size_t status_len = 0;
    FILE *so = open_memstream(&status, &status_len);
    vb_status_eta_print(db, path, 1, so);
    fclose(so);
    ok(status && strstr(status, "last result"), "status of a campaign with streaming results only: the time since "
       "the last one (%s)", status ? status : "");
    free(status);

    vb_store_close(&s);

    /* ---- a file older than a kind (no cold_start_result) reads ---- */
    sqlite3 *raw = NULL;
    rc = sqlite3_open(path, &raw) == SQLITE_OK && sqlite3_exec(raw, "DROP TABLE cold_start_result", NULL, NULL,
                                                           NULL) == SQLITE_OK;
    sqlite3_close(raw);
    ok(rc, "a file without the cold_start_result table");
    vb_store_opts ro = {.access = VB_STORE_READ};
    rc = vb_store_open_with(path, &ro, &s, &err);
    ok(rc == VB_OK, "it opens read-only (%s)", rc ? err.message : "ok");
    if (rc == VB_OK) {
        is_int((int)count(vb_store_db(s), "SELECT COUNT(*) FROM v_cold_start"), 0,
               "its cold start view reads, empty (a reader gains the kind's table in a copy in memory)");
        is_int((int)count(vb_store_db(s), "SELECT COUNT(*) FROM streaming_result"), 1, "and its other rows are there");
        vb_store_close(&s);
    }
    vb_plan_destroy(&plan);
    vb_profile_destroy(&p);
    char cmd[200];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0) return 1;
    return done_testing();
}
