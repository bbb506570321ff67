/* The results store's failure classes (issue 12), on a real SQLite file: a record that can never be stored is
 * POISON (a constraint: NaN in a NOT NULL column, an item not in the plan; an inconsistent histogram; a Result
 * with no body); a store that cannot write is RETRY (full: max_page_count reached; read-only: query_only), is
 * remembered by vb_store_failure, leaves nothing half-written, and the same record commits once the cause is
 * gone. The class is the returned status of util/error.h (RETRY is VB_RETRY, POISON VB_ERROR); err.code is never
 * the class: SQLite's extended result code when SQLite refused, 0 for a record refused before SQLite saw it.
 * vb_store_plan_tally reads the plan rows. */
#include <math.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config/plan.h"
#include "config/profile.h"
#include "store/store.h"
#include "tests/tap.h"

static const char *const PROFILE =
    "name: store\n"
    "datasets:\n"
    "  - {name: d1, source: synthetic, rows: 1000}\n"
    "engines:\n"
    "  - name: exact\n"
    "phases:\n"
    "  build: {}\n"
    "  recall_sweep: {ef_search: [10, 20]}\n";

static long long count(vb_store *s, const char *sql) {
    sqlite3_stmt *st = NULL;
    long long n = -1;
    if (sqlite3_prepare_v2(vb_store_db(s), sql, -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
        n = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return n;
}

/* A sweep result for item `key`, as the agent sends it (no histogram: an empty latency). */
static void sweep(Vbench__Result *r, Vbench__SweepResult *w, const char *result_key, const char *key, double recall) {
    vbench__result__init(r);
    vbench__sweep_result__init(w);
    static Vbench__Measurement m;   /* one result at a time: each call starts it again */
    vbench__measurement__init(&m);
    w->ef_search = 10;
    w->m = &m;
    m.queries = 100;
    m.recall = recall;
    m.id_overlap = 0.9;
    m.qps = 1000;
    m.elapsed_s = 0.1;
    r->result_key = (char *)result_key;
    r->item_key = (char *)key;
    r->attempt = 1;
    r->completes_item = 1;
    r->body_case = VBENCH__RESULT__BODY_SWEEP;
    r->sweep = w;
}

static void exec_sql(vb_store *s, const char *sql) { sqlite3_exec(vb_store_db(s), sql, NULL, NULL, NULL); }

int main(void) {
    char dir[] = "/tmp/vbench-store.XXXXXX", path[128];
    if (!mkdtemp(dir)) return 1;
    snprintf(path, sizeof path, "%s/r.sqlite", dir);
    vb_error err = {0};
    vb_profile *p = NULL;
    vb_plan *plan = NULL;
    vb_store *s = NULL;
    int rc = vb_profile_parse(PROFILE, strlen(PROFILE), "store.yml", &p, &err);
    if (rc == VB_OK) rc = vb_plan_build(p, &plan, &err);
    if (rc == VB_OK) rc = vb_store_open(path, 1, &s, &err);
    if (rc == VB_OK) rc = vb_store_init_campaign(s, p, NULL, plan, &err);
    if (!ok(rc == VB_OK && plan->n_items == 3, "a results database with a plan of 3 items (%s; %zu)", err.message, plan ? plan->n_items : 0))
        return done_testing();
    const char *k1 = plan->items[1].key, *k2 = plan->items[2].key;
    Vbench__Result r;
    Vbench__SweepResult w;
    int dup = 0;

    /* ---- a backup that cannot be written says whether an earlier one exists (issue 28) ---- */
    {
        char bak[200], inside[240];
        snprintf(bak, sizeof bak, "%s.bak", path);
        snprintf(inside, sizeof inside, "%s/x", bak);
        mkdir(bak, 0700);   /* the rename over FILE.bak fails: a directory that is not empty is there */
        FILE *f = fopen(inside, "w");
        if (f) fclose(f);
        vb_error berr = {0};
        int brc = vb_store_backup(s, &berr);
        ok(brc != VB_OK && strstr(berr.message, "no backup") && !strstr(berr.message, "is kept"),
           "before any backup: not written, and none is said to be kept (%s)", berr.message);
        unlink(inside);
        rmdir(bak);
        ok(vb_store_backup(s, &berr) == VB_OK, "then a backup is written (%s)", berr.message);
        unlink(bak);
    }

    /* ---- load checkpoints (issue 28): the next attempt goes by the latest attempt that sent one ---- */
    {
        const char *kb = plan->items[0].key;
        vb_load_checkpoint ck;
        ok(vb_store_load_checkpoint(s, kb, &ck, &err) == VB_OK && ck.rows == 0, "no checkpoint: rows 0");
        struct { const char *key; unsigned attempt; uint64_t slice, rows; double load_s; uint32_t attempts; } c[] = {
            {"b#load-1@400", 1, 200, 400, 2.0, 1}, {"b#load-1@800", 1, 400, 800, 4.0, 1},
            {"b#load-2@1200", 2, 600, 1200, 6.5, 2}, {"b#load-2@1000", 2, 500, 1000, 5.5, 2}};
        for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
            Vbench__BuildResult b = VBENCH__BUILD_RESULT__INIT;
            b.checkpoint = 1;
            b.rows = c[i].rows;
            b.slice_rows = c[i].slice;
            b.load_s = c[i].load_s;
            b.load_connections = 2;
            b.attempts = c[i].attempts;
            Vbench__Result cr = VBENCH__RESULT__INIT;
            cr.result_key = (char *)c[i].key;
            cr.item_key = (char *)kb;
            cr.attempt = c[i].attempt;
            cr.body_case = VBENCH__RESULT__BODY_BUILD;
            cr.build = &b;
            is_int(vb_store_commit_result(s, &cr, "exact", "d1", "a", &dup, &err), VB_STORE_OK, "a checkpoint commits");
        }
        int lrc = vb_store_load_checkpoint(s, kb, &ck, &err);
        ok(lrc == VB_OK && ck.rows == 1200 && ck.slice_rows == 600 &&
           ck.connections == 2 && ck.attempts == 2 && ck.load_s == 6.5,
           "the largest of the latest attempt: 1200 rows, 600 a slice, 6.5 s over 2 attempts (%ld, %ld)", ck.rows, ck.slice_rows);
        is_int(count(s, "SELECT COUNT(*) FROM build_result"), 0, "checkpoints are not build rows");
        is_int(count(s, "SELECT COUNT(*) FROM plan WHERE status = 'done'"), 0, "and complete no item");
        /* an attempt that loads from the first row says so with a checkpoint of 0 rows: the older ones no longer hold */
        Vbench__BuildResult b = VBENCH__BUILD_RESULT__INIT;
        b.checkpoint = 1;
        b.load_connections = 2;
        b.attempts = 1;
        Vbench__Result cr = VBENCH__RESULT__INIT;
        cr.result_key = "b#load-3@0";
        cr.item_key = (char *)kb;
        cr.attempt = 3;
        cr.body_case = VBENCH__RESULT__BODY_BUILD;
        cr.build = &b;
        vb_store_commit_result(s, &cr, "exact", "d1", "a", &dup, &err);
        lrc = vb_store_load_checkpoint(s, kb, &ck, &err);
        ok(lrc == VB_OK && ck.rows == 0,
           "after a restart from the first row the checkpoint is 0 rows (%ld)", ck.rows);
        exec_sql(s, "DELETE FROM load_checkpoint");
    }

    /* ---- a server that went down with a killed coordinator gets its end row at resume (issue 28) ---- */
    {
        vb_store_server_log(s, "pg", "vbench-pg.service", "ready", "answers", NULL, NULL);
        vb_store_server_log(s, "my", "vbench-my.service", "ready", "answers", NULL, NULL);
        vb_store_server_log(s, "my", "vbench-my.service", "stopped", "stopped", NULL, NULL);
        is_int(vb_store_begin_run(s, 0, "vbench resume (test)", &err), VB_STORE_OK, "a resume begins");
        is_int(count(s, "SELECT COUNT(*) FROM server_log WHERE engine = 'pg' AND state = 'lost' AND unit = 'vbench-pg.service' "
                        "AND message LIKE '%without recording this server''s end%'"), 1,
               "the server left ready gets its end row, state lost, with its unit");
        is_int(count(s, "SELECT COUNT(*) FROM server_log WHERE engine = 'my' AND state = 'lost'"), 0,
               "a server whose end is recorded gets none");
        is_int(vb_store_begin_run(s, 0, "vbench resume (test)", &err), VB_STORE_OK, "a second resume begins");
        is_int(count(s, "SELECT COUNT(*) FROM server_log WHERE state = 'lost'"), 1, "and closes nothing twice");
        exec_sql(s, "DELETE FROM server_log; DELETE FROM event; UPDATE campaign SET runs = 1");
    }

    /* ---- event kinds: a stable word per event, what tests and tools match ---- */
    is_int(vb_store_event(s, VB_EVENT_AGENT_LOST, "error", NULL, "coordinator", "agent x silent"), VB_STORE_OK,
           "an event is recorded with its kind");
    is_int(count(s, "SELECT COUNT(*) FROM event WHERE kind = 'agent_lost' AND message = 'agent x silent'"), 1,
           "its kind column says agent_lost");
    is_str(vb_event_kind_name(VB_EVENT_ITEM_INTERRUPTED), "item_interrupted", "kinds have stable names");
    is_str(vb_event_kind_name((vb_event_kind)9999), "note", "an unknown kind reads as note");
    for (int k = 0; k < VB_EVENT__COUNT; k++)
        for (int j = k + 1; j < VB_EVENT__COUNT; j++)
            if (strcmp(vb_event_kind_name((vb_event_kind)k), vb_event_kind_name((vb_event_kind)j)) == 0)
                ok(0, "kinds %d and %d share the name %s", k, j, vb_event_kind_name((vb_event_kind)k));

    /* ---- POISON: the record, whatever the store's state ---- */
    sweep(&r, &w, "nan#1", k1, NAN);
    is_int(vb_store_commit_result(s, &r, "exact", "d1", "a", &dup, &err), VB_STORE_POISON,
           "a NaN recall (NULL in a NOT NULL column: a constraint) is POISON");
    is_int(err.code, SQLITE_CONSTRAINT_NOTNULL, "err.code is SQLite's extended result code, not the class");
    is_int(VB_STORE_POISON, VB_ERROR, "POISON is util/error.h's VB_ERROR (cannot succeed as given)");
    is_int(VB_STORE_RETRY, VB_RETRY, "RETRY is util/error.h's VB_RETRY: one retry number");
    contains(err.message, path, "the message names the database");
    sweep(&r, &w, "orphan#1", "no/such/item", 0.5);
    is_int(vb_store_commit_result(s, &r, "exact", "d1", "a", &dup, &err), VB_STORE_POISON,
           "a result for an item not in the plan (foreign key) is POISON");
    Vbench__Histogram h = VBENCH__HISTOGRAM__INIT;
    uint32_t idx[2] = {1, 2};
    uint64_t counts[1] = {5};
    h.n_idx = 2;
    h.idx = idx;
    h.n_counts = 1;
    h.counts = counts;
    sweep(&r, &w, "hist#1", k1, 0.5);
    w.m->latency = &h;
    is_int(vb_store_commit_result(s, &r, "exact", "d1", "a", &dup, &err), VB_STORE_POISON,
           "an inconsistent latency histogram is POISON");
    is_int(err.code, 0, "refused before SQLite saw it: err.code 0, not the class");
    sweep(&r, &w, "qrecall#1", k1, 0.5);   /* per-query recall that is not whole float32 values */
    uint8_t five[5] = {0};
    w.m->recall_queries = 1;
    w.m->query_recall.data = five;
    w.m->query_recall.len = sizeof five;
    is_int(vb_store_commit_result(s, &r, "exact", "d1", "a", &dup, &err), VB_STORE_POISON,
           "per-query recall of 5 bytes (not whole float32 values) is POISON");
    contains(err.message, "query_recall of 5 bytes", "the message says what is wrong");
    Vbench__Result empty = VBENCH__RESULT__INIT;
    empty.result_key = "empty#1";
    empty.item_key = (char *)k1;
    is_int(vb_store_commit_result(s, &empty, "exact", "d1", "a", &dup, &err), VB_STORE_POISON,
           "a Result with no body is POISON (acknowledged, not resent forever)");
    ok(vb_store_failure(s) == NULL, "POISON is about the record: the store is not failing");
    is_int(count(s, "SELECT COUNT(*) FROM sweep_result"), 0, "nothing of the poison records was written");
    is_int(count(s, "SELECT COUNT(*) FROM plan WHERE status = 'done'"), 0, "no item done by them");

    /* ---- a good one ---- */
    sweep(&r, &w, "good#1", k1, 0.5);
    is_int(vb_store_commit_result(s, &r, "exact", "d1", "a", &dup, &err), VB_STORE_OK, "a good result commits");
    is_int(vb_store_commit_result(s, &r, "exact", "d1", "a", &dup, &err), VB_STORE_OK, "its copy is OK");
    is_int(dup, 1, "and is a duplicate");
    is_int(count(s, "SELECT COUNT(*) FROM recall_dist"), 0, "a measurement without a distribution (an older agent) has "
           "no recall_dist row");

    /* ---- the recall distribution: its row beside the result, the per-query values as sent ---- */
    sweep(&r, &w, "dist#1", k1, 0.75);
    float per[4] = {1.0f, 0.5f, 0.0f, NAN};   /* float32 little-endian on this (x86-64) host, as the wire's */
    w.m->recall_queries = 3;
    w.m->recall_min = 0, w.m->recall_p1 = 0, w.m->recall_p10 = 0, w.m->recall_p50 = 0.5;
    w.m->recall_zero_share = 1.0 / 3, w.m->recall_below_half_share = 1.0 / 3;
    w.m->query_recall.data = (uint8_t *)per;
    w.m->query_recall.len = sizeof per;
    is_int(vb_store_commit_result(s, &r, "exact", "d1", "a", &dup, &err), VB_STORE_OK, "a result with its distribution commits");
    is_int(count(s, "SELECT COUNT(*) FROM recall_dist WHERE result_key = 'dist#1' AND queries = 3 AND recall_p50 = 0.5 "
                    "AND abs(zero_share - 1.0 / 3) < 1e-15 AND length(query_recall) = 16"), 1,
           "recall_dist has its row: the summary and the 4 per-query values");
    is_int(count(s, "SELECT COUNT(*) FROM v_recall_dist WHERE phase = 'recall_sweep' AND recall = 0.75 AND per_query = 1 "
                    "AND answers = 0"), 1, "v_recall_dist shows it beside the mean, no answers kept");

    /* ---- RETRY: the store is full ---- */
    long long pages = count(s, "PRAGMA page_count");
    char sql[128];
    snprintf(sql, sizeof sql, "PRAGMA max_page_count = %lld", pages);
    sqlite3_exec(vb_store_db(s), sql, NULL, NULL, NULL);
    /* fill the last free pages, so that the next insert needs a new one */
    char big[3000];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    for (int i = 0; i < 200 && vb_store_event(s, VB_EVENT_NOTE, "info", NULL, "test", "%s", big) == VB_STORE_OK; i++) {
    }
    ok(vb_store_failure(s) != NULL, "a failing event write (err NULL) is remembered: %s",
       vb_store_failure(s) ? vb_store_failure(s) : "(none)");
    sweep(&r, &w, "good#2", k2, 0.6);
    static char example[8192];   /* overflow pages: a row that cannot fit in what is left of a page */
    memset(example, 'e', sizeof example - 1);
    w.m->duplicate_example = example;
    is_int(vb_store_commit_result(s, &r, "exact", "d1", "a", &dup, &err), VB_STORE_RETRY,
           "a result on a full database is RETRY");
    is_int(err.code & 0xff, SQLITE_FULL, "err.code is SQLite's SQLITE_FULL, not the class");
    contains(err.message, path, "the message names the database");
    contains(vb_store_failure(s), path, "vb_store_failure names the database");
    is_int(vb_store_item_start(s, k2, "a", &err), VB_STORE_OK, "an update that needs no new page still works");
    is_int(count(s, "SELECT COUNT(*) FROM sweep_result WHERE result_key = 'good#2'"), 0,
           "nothing of the failed commit is in the database");
    is_str(sqlite3_get_autocommit(vb_store_db(s)) ? "closed" : "open", "closed", "no transaction left open");
    sqlite3_exec(vb_store_db(s), "PRAGMA max_page_count = 1073741823", NULL, NULL, NULL);
    is_int(vb_store_commit_result(s, &r, "exact", "d1", "a", &dup, &err), VB_STORE_OK,
           "the same record commits once there is space");

    /* ---- RETRY: read-only ---- */
    sqlite3_exec(vb_store_db(s), "PRAGMA query_only = 1", NULL, NULL, NULL);
    is_int(vb_store_item_finish(s, k1, "failed", "x", &err), VB_STORE_RETRY, "a write to a read-only store is RETRY");
    is_int(vb_store_set_status(s, "finished", &err), VB_STORE_RETRY, "so is the campaign status");
    is_int(vb_store_manifest_set(s, "k", "v", &err), VB_STORE_RETRY, "and the manifest");
    sqlite3_exec(vb_store_db(s), "PRAGMA query_only = 0", NULL, NULL, NULL);

    /* ---- the tally is the database's ---- */
    size_t done = 0, failed = 0, expired = 0, rest = 0;
    char list[512];
    is_int(vb_store_plan_tally(s, &done, &failed, &expired, &rest, list, sizeof list, &err), VB_STORE_OK, "tally");
    is_int(done, 2, "2 items done (the two committed results)");
    is_int(rest, 1, "1 item not done");
    contains(list, plan->items[0].key, "the list names the item not done");
    contains(list, "(pending)", "with its status");

    vb_store_close(&s);
    vb_plan_destroy(&plan);
    vb_profile_destroy(&p);
    char cmd[256];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0) return 1;
    return done_testing();
}
