/* Self-test of the filtered phase (agent/phase_filtered.c), run through its real code path: vb_phase_filtered
 * with a vb_phase_ctx whose `out` is an inproc PUSH socket; the test reads every message back from a PULL socket.
 *
 * Engines: the built-in exact (recall must be exactly 1) and hnswlib (high recall, no row outside the filter),
 * plus three registered here, each a thin wrapper around the exact engine:
 *   test-postfilter  what pgvector 0.8 does without iterative scan: take the ef_search nearest rows ignoring the
 *                    filter, then drop those that fail it; full speed, no error, and at 1 % mostly short answers;
 *   test-leaky       claims filter support but ignores the filter: the phase must fail naming a row;
 *   test-nofilter    exact without VB_ENGINE_FILTER: the phase must refuse it with a clear message;
 *   test-dup         exact, but every third answer of a connection returns its 8th row again on the 10th (what
 *                    MariaDB 11.8.9 did in some filtered answers): the item must succeed, score each repeat as a
 *                    miss and count the answers with one (duplicate_answers, and the first as an example).
 * The class predicates (label_own, label_other, class = L) run on the same synthetic corpus, whose 32 clusters are
 * its classes: exact must score exactly 1 on each, the ground truth must hold only rows of each query's class, and
 * the post-filtering engine shows what another class does to a search that filters after its scan. */
#include <ftw.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <math.h>

#include "agent/phase.h"
#include "datasets/distance.h"
#include "engines/filter.h"
#include "datasets/groundtruth.h"
#include "proto/wire.h"
#include "tests/tap.h"

#define ROWS "20000"
#define QUERIES "300"
#define K 10

static char tmpdir[256], cache_dir[512], work_dir[512];

/* is_int / is_str / contains take a plain name: this formats one (valid until the next call). */
static const char *name_of(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static const char *name_of(const char *fmt, ...) {
    static char buf[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    return buf;
}

/* ---- the wrapper engines ------------------------------------------------------------------------------ */

typedef struct wconn {
    void *inner;     /* an exact connection */
    int ef;
    int64_t *cand;   /* ef candidates */
    int cand_cap;
    uint64_t answers;   /* searches answered on this connection (test-dup) */
} wconn;

static int w_connect(void *state, void **conn, vb_error *err) {
    wconn *c = calloc(1, sizeof *c);
    if (!c) return vb_error_set(err, "test", 1, "out of memory");
    c->ef = 40;
    if (vb_engine_exact.connect(state, &c->inner, err) != VB_OK) {
        free(c);
        return VB_ERROR;
    }
    *conn = c;
    return VB_OK;
}
static void w_disconnect(void *conn) {
    wconn *c = conn;
    vb_engine_exact.disconnect(c->inner);
    free(c->cand);
    free(c);
}
static int w_load(void *conn, const int64_t *ids, const float *vecs, const int32_t *tags, const int32_t *classes,
                  size_t n, vb_error *err) {
    return vb_engine_exact.load(((wconn *)conn)->inner, ids, vecs, tags, classes, n, err);
}
static int w_set_search(void *conn, const vb_search_params *p, vb_error *err) {
    (void)err;
    ((wconn *)conn)->ef = p->ef_search;
    return VB_OK;
}
static vb_session *session;   /* the agent's session of the current engine (its dataset: the classes) */

/* Post-filter: the ef_search nearest rows of the whole table, then only those that pass, at most k. */
static int pf_search(void *conn, const float *query, int k, const vb_filter *filter, int64_t *ids_out, int *n_out,
                     vb_error *err) {
    wconn *c = conn;
    int want = c->ef > k ? c->ef : k;
    if (want > c->cand_cap) {
        int64_t *p = realloc(c->cand, (size_t)want * sizeof *p);
        if (!p) return vb_error_set(err, "test", 1, "out of memory");
        c->cand = p;
        c->cand_cap = want;
    }
    int n = 0;
    if (vb_engine_exact.search(c->inner, query, want, NULL, c->cand, &n, err) != VB_OK) return VB_ERROR;
    int m = 0;
    const int32_t *cls = session && session->ds ? session->ds->train_class : NULL;   /* this engine's session */
    for (int i = 0; i < n && m < k; i++)
        if (!filter || filter->kind == VB_FILTER_NONE ||
            (filter->kind == VB_FILTER_CLASS_EQ ? cls && cls[c->cand[i]] == filter->cls
                                                : vb_dataset_tag(c->cand[i]) < filter->tag_below))
            ids_out[m++] = c->cand[i];
    *n_out = m;
    return VB_OK;
}
/* Ignores the filter altogether. */
static int leaky_search(void *conn, const float *query, int k, const vb_filter *filter, int64_t *ids_out,
                        int *n_out, vb_error *err) {
    (void)filter;
    return vb_engine_exact.search(((wconn *)conn)->inner, query, k, NULL, ids_out, n_out, err);
}

/* Exact and filtered, but every DUP_EVERY-th answer of the connection has row DUP_ROW0's id again on row
 * DUP_ROW1 (the last), in place of the 10th neighbour. One client asks queries 0, 1, 2, ... in order, so the
 * answers of queries 2, 5, 8, ... repeat an id. */
#define DUP_EVERY 3
#define DUP_ROW0 7
#define DUP_ROW1 9
static int dup_search(void *conn, const float *query, int k, const vb_filter *filter, int64_t *ids_out, int *n_out,
                      vb_error *err) {
    wconn *c = conn;
    if (vb_engine_exact.search(c->inner, query, k, filter, ids_out, n_out, err) != VB_OK) return VB_ERROR;
    if (++c->answers % DUP_EVERY == 0 && *n_out > DUP_ROW1) ids_out[DUP_ROW1] = ids_out[DUP_ROW0];
    return VB_OK;
}

static vb_engine_ops postfilter_ops, leaky_ops, nofilter_ops, dup_ops;

static void register_engines(void) {
    vb_engine_ops w = vb_engine_exact;
    w.connect = w_connect;
    w.disconnect = w_disconnect;
    w.load = w_load;
    w.insert = w_load;
    w.remove = NULL;
    w.set_search = w_set_search;
    postfilter_ops = w;
    postfilter_ops.name = "test-postfilter";
    postfilter_ops.description = "exact, then filtered after a scan of ef_search candidates (pgvector 0.8, "
                                 "iterative scan off)";
    postfilter_ops.search = pf_search;
    leaky_ops = w;
    leaky_ops.name = "test-leaky";
    leaky_ops.description = "exact that ignores the filter";
    leaky_ops.search = leaky_search;
    nofilter_ops = vb_engine_exact;
    nofilter_ops.name = "test-nofilter";
    nofilter_ops.description = "exact without filter support";
    nofilter_ops.flags = VB_ENGINE_EMBEDDED;
    dup_ops = w;
    dup_ops.name = "test-dup";
    dup_ops.description = "exact that repeats an id in every third answer";
    dup_ops.search = dup_search;
    ok(vb_engine_register(&postfilter_ops) == VB_OK && vb_engine_register(&leaky_ops) == VB_OK &&
           vb_engine_register(&nofilter_ops) == VB_OK && vb_engine_register(&dup_ops) == VB_OK,
       "test engines registered");
}

/* ---- running one item and reading back what it sent ---------------------------------------------------- */

typedef struct item_out {
    int rc;
    vb_error err;
    int results, completes;
    char result_key[256];
    Vbench__FilteredResult f;  /* scalars copied; filter below */
    Vbench__Measurement m;     /* scalars copied; latency and duplicate_example below */
    char filter[64], predicate[32];
    char duplicate_example[128];
    uint64_t hist_total;
    size_t hist_buckets;
    int saw_gt_progress, saw_query_progress;
    char logs[4096];
} item_out;

static zsock_t *pull, *push;
static atomic_int stop_flag;

static const vb_kv dataset_kv[] = {
    {"name", "synth-filtered"}, {"source", "synthetic"}, {"rows", ROWS},   {"queries", QUERIES},
    {"dim", "32"},              {"clusters", "32"},      {"metric", "angular"}, {"seed", "7"},
};
static const vb_kv hnsw_kv[] = {{"m", "16"}, {"ef_construction", "128"}};

/* Runs one filtered item (KEY, POINT) on ENGINE as the agent would, and collects what it sent: its results (a
 * filtered one copied into O, with its filter, predicate, measurement and histogram total), progress stages and logs. */
static void run_point(const char *engine, const char *key, vb_point point, item_out *o) {
    memset(o, 0, sizeof *o);
    Vbench__Assign a = VBENCH__ASSIGN__INIT;
    a.item_key = (char *)key;
    a.phase = VBENCH__PHASE__PHASE_FILTERED;
    a.engine = (char *)engine;
    a.dataset = "synth-filtered";
    a.k = K;
    point.load_connections = 2;   /* the build phase's defaults */
    point.load_batch = 1000;
    int hnsw = strcmp(engine, "hnswlib") == 0;
    vb_phase_ctx ctx = {
        .assign = &a, .point = point,
        .engine_params = hnsw ? (vb_kv *)hnsw_kv : NULL, .n_engine_params = hnsw ? 2 : 0,
        .dataset_params = (vb_kv *)dataset_kv, .n_dataset_params = sizeof dataset_kv / sizeof dataset_kv[0],
        .session = &session, .out = push, .stop = &stop_flag, .agent_id = "test",
        .work_dir = work_dir, .cache_dir = cache_dir,
    };
    vb_error_clear(&o->err);
    vb_phase_fn fn = vb_phase_lookup(VBENCH__PHASE__PHASE_FILTERED);
    o->rc = fn ? fn(&ctx, &o->err) : vb_error_set(&o->err, "test", 1, "vb_phase_lookup(\"filtered\") is NULL");
    if (o->rc != VB_OK) vb_session_close(&session);   /* as the agent does after a failed item */

    vb_error werr;
    Vbench__Envelope *env;
    while ((env = vb_wire_recv(pull, NULL, &werr))) {
        if (env->body_case == VBENCH__ENVELOPE__BODY_RESULT) {
            const Vbench__Result *r = env->result;
            o->results++;
            o->completes += r->completes_item;
            snprintf(o->result_key, sizeof o->result_key, "%s", r->result_key);
            if (r->body_case == VBENCH__RESULT__BODY_FILTERED) {
                const Vbench__FilteredResult *f = r->filtered;
                const Vbench__Measurement *m = f->m;
                o->f = *f;
                o->f.filter = NULL;
                o->f.m = NULL;
                o->f.predicate = NULL;
                snprintf(o->filter, sizeof o->filter, "%s", f->filter);
                snprintf(o->predicate, sizeof o->predicate, "%s", f->predicate ? f->predicate : "");
                if (m) {
                    o->m = *m;
                    o->m.latency = NULL;
                    o->m.plan = NULL;
                    o->m.duplicate_example = NULL;
                    snprintf(o->duplicate_example, sizeof o->duplicate_example, "%s",
                             m->duplicate_example ? m->duplicate_example : "");
                }
                if (m && m->latency) {
                    o->hist_buckets = m->latency->n_counts;
                    for (size_t i = 0; i < m->latency->n_counts; i++) o->hist_total += m->latency->counts[i];
                }
            }
        } else if (env->body_case == VBENCH__ENVELOPE__BODY_PROGRESS) {
            o->saw_gt_progress |= strcmp(env->progress->stage, "ground truth") == 0;
            o->saw_query_progress |= strcmp(env->progress->stage, "queries") == 0;
        } else if (env->body_case == VBENCH__ENVELOPE__BODY_LOG) {
            size_t used = strlen(o->logs);
            snprintf(o->logs + used, sizeof o->logs - used, "%s\n", env->log->message);
        }
        vb_wire_free(env);
    }
}

/* Runs one filtered item; queries NULL sends the profile's default (500), as the plan would. */
static void run_item(const char *engine, const char *selectivity, const char *queries, const char *ef,
                     item_out *o) {
    char key[256];
    snprintf(key, sizeof key, "test/%s/synth-filtered/filtered/selectivity=%s", engine, selectivity);
    run_point(engine, key,
              (vb_point){.selectivity = atof(selectivity), .queries = queries ? atol(queries) : 500, .ef_search = atol(ef)},
              o);
    printf("#   %s at %s: rc %d, passing %llu, recall %.4f, id_overlap %.4f, short %llu, errors %llu, qps %.0f%s%s\n",
           engine, selectivity, o->rc, (unsigned long long)o->f.passing_rows, o->m.recall, o->m.id_overlap,
           (unsigned long long)o->m.short_answers, (unsigned long long)o->m.errors, o->m.qps,
           o->rc ? ", error: " : "", o->rc ? o->err.message : "");
}

/* Runs one item of a class predicate (label_own, label_other, class with cls), as the plan makes it. */
static void run_class_item(const char *engine, int pred, int cls, const char *queries, const char *ef, item_out *o) {
    char key[256];
    snprintf(key, sizeof key, "test/%s/synth-filtered/filtered/predicate=%s", engine, vb_filter_predicate_name(pred));
    run_point(engine, key,
              (vb_point){.predicate = pred, .filter_class = cls, .class_seed = 1, .queries = atol(queries),
                         .ef_search = atol(ef)},
              o);
    printf("#   %s %s: rc %d, passed share %.4f (%llu rows), recall %.4f, short %llu, qps %.0f%s%s\n", engine,
           vb_filter_predicate_name(pred), o->rc, o->f.passed_share, (unsigned long long)o->f.passing_rows,
           o->m.recall, (unsigned long long)o->m.short_answers, o->m.qps, o->rc ? ", error: " : "",
           o->rc ? o->err.message : "");
}

/* Rows passing "tag < below", counted here from vb_dataset_tag, independently of the phase. */
static size_t count_passing(size_t rows, int32_t below, uint8_t *mask) {
    size_t n = 0;
    for (size_t i = 0; i < rows; i++) {
        int pass = vb_dataset_tag((int64_t)i) < below;
        if (mask) mask[i] = (uint8_t)pass;
        n += (size_t)pass;
    }
    return n;
}

/* The cache file the phase uses for "tag < below" on the current session's dataset. */
static int gt_file(int32_t below, char *path, size_t len, struct stat *st) {
    if (!session) return -1;
    uint8_t *mask = malloc(session->ds->n_train);
    count_passing(session->ds->n_train, below, mask);
    char tag[32];
    snprintf(tag, sizeof tag, "tag<%d", (int)below);
    vb_error err;
    int rc = vb_groundtruth_path(session->ds, K, mask, tag, cache_dir, path, len, &err);
    free(mask);
    return rc == VB_OK ? stat(path, st) : -1;
}

/* ---- the checks ---------------------------------------------------------------------------------------- */

static void check_ok_result(const item_out *o, const char *what, const char *selectivity, int32_t below,
                            uint64_t queries) {
    char want_filter[32];
    snprintf(want_filter, sizeof want_filter, "tag < %d", (int)below);
    ok(o->rc == VB_OK, "%s: phase succeeds", what);
    is_int(o->results, 1, name_of("%s: one result", what));
    is_int(o->completes, 1, name_of("%s: the result completes the item", what));
    contains(o->result_key, "#filtered", name_of("%s: result key suffix", what));
    is_double(o->f.selectivity, atof(selectivity), 1e-12, name_of("%s: selectivity", what));
    is_int(o->f.passing_rows, count_passing((size_t)atol(ROWS), below, NULL),
           name_of("%s: passing rows follow the tag rule", what));
    is_str(o->filter, want_filter, name_of("%s: filter text", what));
    is_int(o->m.queries, queries, name_of("%s: queries", what));
    is_int(o->m.errors, 0, name_of("%s: no errors", what));
    is_int(o->hist_total, queries, name_of("%s: latency histogram holds every query", what));
    ok(o->hist_buckets > 0 && o->m.qps > 0 && o->m.elapsed_s > 0, "%s: qps %.0f, elapsed %.4f s", what, o->m.qps,
       o->m.elapsed_s);
    ok(o->saw_gt_progress && o->saw_query_progress, "%s: progress for ground truth and queries", what);
}

static void test_exact(void) {
    item_out o;
    run_item("exact", "0.1", "200", "100", &o);
    check_ok_result(&o, "exact 10 %", "0.1", 1000, 200);
    ok(o.m.recall == 1.0 && o.m.id_overlap == 1.0, "exact 10 %%: recall exactly 1 (%.17g, overlap %.17g)",
       o.m.recall, o.m.id_overlap);
    is_int(o.m.short_answers, 0, "exact 10 %: no short answers");
    contains(o.logs, "computed and cached", "exact 10 %: ground truth computed on first use");
    size_t p10 = (size_t)o.f.passing_rows;
    ok(p10 > 1800 && p10 < 2200, "tag < 1000 passes about 10 %% of the rows (%zu of %s)", p10, ROWS);

    /* The profile's default of 500 queries, capped by the 300 queries of the set. */
    run_item("exact", "0.01", NULL, "100", &o);
    check_ok_result(&o, "exact 1 %", "0.01", 100, 300);
    ok(o.m.recall == 1.0 && o.m.id_overlap == 1.0, "exact 1 %%: recall exactly 1 (%.17g, overlap %.17g)",
       o.m.recall, o.m.id_overlap);
    is_int(o.m.short_answers, 0, "exact 1 %: no short answers");
    size_t p1 = (size_t)o.f.passing_rows;
    ok(p1 > 140 && p1 < 260, "tag < 100 passes about 1 %% of the rows (%zu of %s)", p1, ROWS);
    contains(o.logs, "computed and cached", "exact 1 %: ground truth computed on first use");
}

static void test_hnswlib_and_cache(void) {
    char path[4352];
    struct stat before, after;
    int have = gt_file(100, path, sizeof path, &before) == 0;
    ok(have, "the 1 %% ground truth is in the cache after the exact run");

    item_out o;
    run_item("hnswlib", "0.01", "300", "100", &o);
    check_ok_result(&o, "hnswlib 1 %", "0.01", 100, 300);
    ok(o.m.recall >= 0.9, "hnswlib 1 %%: recall high (%.4f)", o.m.recall);
    is_int(o.m.short_answers, 0, "hnswlib 1 %: no short answers");
    contains(o.logs, "loaded from the cache", "hnswlib 1 %: ground truth reused from the cache (same mask tag)");
    ok(have && gt_file(100, path, sizeof path, &after) == 0 && after.st_ino == before.st_ino &&
           after.st_mtim.tv_sec == before.st_mtim.tv_sec && after.st_mtim.tv_nsec == before.st_mtim.tv_nsec,
       "hnswlib 1 %%: the cache file was not rewritten");

    /* The cached file holds the exact top-k over the passing rows only. */
    if (session) {
        size_t rows = session->ds->n_train;
        uint8_t *mask = malloc(rows);
        count_passing(rows, 100, mask);
        vb_groundtruth gt;
        vb_error err;
        int rc = vb_groundtruth_get(session->ds, K, mask, "tag<100", cache_dir, &gt, &err);
        size_t bad = 0;
        for (size_t i = 0; rc == VB_OK && i < gt.n_queries * gt.k; i++)
            bad += gt.ids[i] < 0 || vb_dataset_tag(gt.ids[i]) >= 100;
        ok(rc == VB_OK && gt.k == K && bad == 0, "filtered ground truth: every true neighbour passes tag < 100 "
                                                 "(%zu do not)", bad);
        if (rc == VB_OK) vb_groundtruth_free(&gt);
        free(mask);
    }

    run_item("hnswlib", "0.1", "300", "100", &o);
    check_ok_result(&o, "hnswlib 10 %", "0.1", 1000, 300);
    ok(o.m.recall >= 0.9, "hnswlib 10 %%: recall high (%.4f)", o.m.recall);
    is_int(o.m.short_answers, 0, "hnswlib 10 %: no short answers");
}

static void test_postfilter(void) {
    item_out o;
    run_item("test-postfilter", "0.01", "300", "40", &o);
    check_ok_result(&o, "post-filter 1 %", "0.01", 100, 300);
    ok(o.m.short_answers >= 250, "post-filter 1 %%: short answers counted (%llu of 300)",
       (unsigned long long)o.m.short_answers);
    ok(o.m.recall < 0.2, "post-filter 1 %%: recall low (%.4f)", o.m.recall);

    /* At 10 % and a scan of 400 candidates the same engine is fine: the count tracks the cause. */
    run_item("test-postfilter", "0.1", "300", "400", &o);
    check_ok_result(&o, "post-filter 10 %, ef 400", "0.1", 1000, 300);
    ok(o.m.short_answers < 10, "post-filter 10 %%, ef 400: few short answers (%llu)",
       (unsigned long long)o.m.short_answers);
    ok(o.m.recall > 0.95, "post-filter 10 %%, ef 400: recall high (%.4f)", o.m.recall);
}

static void test_duplicates(void) {
    item_out o;
    run_item("test-dup", "0.1", "200", "100", &o);
    check_ok_result(&o, "repeated ids 10 %", "0.1", 1000, 200);
    /* Answers 3, 6, ..., 198 (queries 2, 5, ..., 197): 66 of 200 repeat an id, each with 9 distinct true
     * neighbours of 10; the other 134 are exact. Recall (134 + 66 x 0.9) / 200 on both measures. */
    is_int(o.m.duplicate_answers, 66, "repeated ids: 66 of 200 answers counted as duplicate answers");
    is_int(o.m.short_answers, 66, "repeated ids: those answers have 9 distinct ids of 10: short");
    is_double(o.m.recall, (134 + 66 * 0.9) / 200, 1e-9, "repeated ids: recall with each repeat a miss");
    is_double(o.m.id_overlap, (134 + 66 * 0.9) / 200, 1e-9, "repeated ids: id overlap with each repeat a miss");
    contains(o.duplicate_example, "query 2: id ", "repeated ids: the example names the first query (2)");
    contains(o.duplicate_example, " at rows 7 and 9", "repeated ids: and the two rows");
    run_item("exact", "0.1", "200", "100", &o);
    is_int(o.m.duplicate_answers, 0, "exact: no duplicate answers");
    is_str(o.duplicate_example, "", "exact: no example");
}

static void test_refusals(void) {
    item_out o;
    run_item("test-leaky", "0.01", "50", "40", &o);
    ok(o.rc == VB_ERROR && o.results == 0, "leaky engine: item fails, nothing recorded");
    is_str(o.err.domain, "engine", "leaky engine: an engine error");
    contains(o.err.message, "test-leaky returned row ", "leaky engine: message names the engine and the row");
    contains(o.err.message, "fails the filter tag < 100", "leaky engine: message names the filter");

    run_item("test-nofilter", "0.1", "50", "40", &o);
    ok(o.rc == VB_ERROR && o.results == 0, "engine without filter support: item fails");
    contains(o.err.message, "test-nofilter cannot run the range predicate", "no filter support: clear message");
    ok(session == NULL, "no filter support: refused before any index was built");

    run_item("exact", "0", "50", "40", &o);
    ok(o.rc == VB_ERROR, "selectivity 0 refused");
    contains(o.err.message, "selectivity", "selectivity 0: message names the key");
}

/* The class predicates on the synthetic corpus: its clusters are its classes. */
static void test_classes(void) {
    item_out o;
    run_class_item("exact", VB_PRED_LABEL_OWN, 0, "200", "100", &o);
    ok(o.rc == VB_OK && o.results == 1 && o.completes == 1, "exact label_own: one result that completes the item");
    ok(session && session->ds->train_class && session->ds->n_classes == 32,
       "the synthetic corpus has a class per row: its 32 clusters");
    if (!session || !session->ds->train_class) return;
    const vb_dataset *ds = session->ds;
    size_t count[32] = {0};
    for (size_t r = 0; r < ds->n_train; r++) count[ds->train_class[r]]++;
    double own = 0;   /* the mean share over the 200 queries of the rows of each one's class, counted here */
    for (size_t q = 0; q < 200; q++) own += (double)count[ds->test_class[q]] / (double)ds->n_train / 200;
    ok(o.m.recall == 1.0 && o.m.short_answers == 0, "exact label_own: recall exactly 1 (%.17g), no short answers",
       o.m.recall);
    is_str(o.predicate, "label_own", "label_own: the result names its predicate");
    is_str(o.filter, "class = the query's class", "label_own: the filter text says it is per query");
    is_double(o.f.passed_share, own, 1e-12, "label_own: passed_share is the mean share of each query's class");
    is_double(o.f.selectivity, own, 1e-12, "label_own: and the point's selectivity (nothing was asked for)");
    ok(own > 0.03 && own < 0.5, "label_own passes %.3f of the rows on average (32 clusters of power-law sizes)", own);

    run_class_item("exact", VB_PRED_LABEL_OTHER, 0, "200", "100", &o);
    ok(o.rc == VB_OK && o.m.recall == 1.0 && o.m.short_answers == 0,
       "exact label_other: recall exactly 1 (%.17g), no short answers", o.m.recall);
    is_str(o.predicate, "label_other", "label_other: the result names its predicate");
    run_class_item("exact", VB_PRED_CLASS, 3, "200", "100", &o);
    ok(o.rc == VB_OK && o.m.recall == 1.0, "exact class = 3: recall exactly 1 (%.17g)", o.m.recall);
    is_int(o.f.passing_rows, count[3], "class = 3: passing rows are the rows of class 3");
    is_str(o.filter, "class = 3", "class = 3: filter text");

    /* The per-query ground truth: every true neighbour is a row of the class the query filters on, and it is the
     * exact top k over those rows (a brute force over them here agrees on the k-th distance). */
    int32_t *qc = malloc(ds->n_test * sizeof *qc);
    for (size_t q = 0; q < ds->n_test; q++)
        qc[q] = vb_filter_class_for(VB_PRED_LABEL_OTHER, ds->test_class[q], 0, ds->n_classes, q, 1);
    vb_groundtruth gt;
    vb_error err;
    int rc = vb_groundtruth_by_class(ds, K, qc, "label_other", cache_dir, NULL, &gt, &err);
    size_t bad = 0, same = 0, off = 0;
    for (size_t q = 0; rc == VB_OK && q < ds->n_test; q++) {
        same += qc[q] == ds->test_class[q];
        double kth = INFINITY;   /* the k-th distance over the rows of class qc[q], by brute force */
        double best[K];
        int nb = 0;
        for (size_t r = 0; r < ds->n_train; r++) {
            if (ds->train_class[r] != qc[q]) continue;
            double d = vb_distance(ds->metric, ds->test + q * ds->dim, ds->train + r * ds->dim, ds->dim);
            if (nb < K) best[nb++] = d;
            else {
                int w = 0;
                for (int i = 1; i < K; i++) if (best[i] > best[w]) w = i;
                if (d < best[w]) best[w] = d;
            }
        }
        for (int i = 0; i < nb; i++) kth = i == 0 || best[i] > kth ? best[i] : kth;
        for (size_t j = 0; j < K; j++) {
            int64_t id = gt.ids[q * K + j];
            bad += id < 0 || ds->train_class[id] != qc[q];
        }
        off += fabs((double)gt.dists[q * K + K - 1] - kth) > 1e-5 * (1 + fabs(kth));
    }
    ok(rc == VB_OK && bad == 0, "class ground truth: every true neighbour is of the query's filter class (%zu not)", bad);
    is_int(same, 0, "label_other: no query filters on its own class");
    is_int(off, 0, "class ground truth: the k-th distance is the brute force's over the class's rows");
    if (rc == VB_OK) vb_groundtruth_free(&gt);
    free(qc);

    /* hnswlib walks its graph past rows that fail the filter: its own class is near, another class far. */
    run_class_item("hnswlib", VB_PRED_LABEL_OWN, 0, "200", "100", &o);
    ok(o.rc == VB_OK && o.m.recall >= 0.9, "hnswlib label_own: recall high (%.4f)", o.m.recall);
    double hown = o.m.recall;
    run_class_item("hnswlib", VB_PRED_LABEL_OTHER, 0, "200", "100", &o);
    ok(o.rc == VB_OK && o.m.recall >= 0 && o.m.recall <= 1, "hnswlib label_other: recall measured (%.4f; own class "
       "%.4f), every returned row of the other class (checked by the phase)", o.m.recall, hown);

    /* A post-filter after a scan of ef candidates: the own class is among them, another class is not. */
    run_class_item("test-postfilter", VB_PRED_LABEL_OWN, 0, "200", "100", &o);
    ok(o.rc == VB_OK && o.m.recall > 0.9, "post-filter label_own, ef 100: recall high (%.4f)", o.m.recall);
    run_class_item("test-postfilter", VB_PRED_LABEL_OTHER, 0, "200", "100", &o);
    ok(o.rc == VB_OK && o.m.short_answers >= 150 && o.m.recall < 0.3,
       "post-filter label_other, ef 100: mostly short answers (%llu of 200), recall low (%.4f)",
       (unsigned long long)o.m.short_answers, o.m.recall);

    run_class_item("test-leaky", VB_PRED_LABEL_OTHER, 0, "50", "40", &o);
    ok(o.rc == VB_ERROR && o.results == 0, "leaky engine on label_other: the item fails, nothing recorded");
    contains(o.err.message, "which fails the filter class = ", "leaky engine: the message names the class filter");
    run_class_item("exact", VB_PRED_CLASS, 32, "50", "40", &o);
    ok(o.rc == VB_ERROR, "class = 32 refused: the corpus has classes 0 .. 31");
    contains(o.err.message, "class 32 is not a class of synth-filtered (0 .. 31)", "class = 32: message says so");
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
    (void)st, (void)flag, (void)ftw;
    return remove(path);
}

int main(void) {
    snprintf(tmpdir, sizeof tmpdir, "/tmp/vb-test-filtered-XXXXXX");
    if (!mkdtemp(tmpdir)) {
        perror("mkdtemp");
        return 1;
    }
    snprintf(cache_dir, sizeof cache_dir, "%s/cache", tmpdir);
    snprintf(work_dir, sizeof work_dir, "%s/work", tmpdir);
    pull = zsock_new_pull("inproc://test-filtered");
    push = zsock_new_push("inproc://test-filtered");
    if (!pull || !push) {
        printf("Bail out! cannot make the inproc sockets\n");
        return 1;
    }
    zsock_set_rcvtimeo(pull, 200);
    register_engines();
    test_exact();
    test_hnswlib_and_cache();
    test_postfilter();
    test_duplicates();
    test_refusals();
    test_classes();
    vb_session_close(&session);
    zsock_destroy(&push);
    zsock_destroy(&pull);
    nftw(tmpdir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    return done_testing();
}
