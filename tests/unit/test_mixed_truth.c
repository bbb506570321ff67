/* Unit tests of the mixed phase's ground truth (agent/mixed_truth.h, issue 38) against the real exact engine: the
 * state the acknowledged writes leave, the exact top-k over it, and the scoring of answers. Writes (updates, deletes,
 * inserts) go to the engine and to the state; every exact answer then scores recall 1 with no ghost and no stale
 * answer. Mutations of the ground truth are caught: one delete not applied to it (recall falls below 1 for the
 * queries whose neighbour it was), one delete not applied to the engine (a ghost, named), one update not applied
 * to the engine (stale answers). Rows written during a window are scored by any vector they held then. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "agent/mixed_truth.h"
#include "engines/engine.h"
#include "util/mix.h"
#include "tests/tap.h"

#define N 600          /* dataset rows: ids [0, CORPUS) loaded, [CORPUS, N) the pool */
#define CORPUS 500
#define DIM 8
#define NQ 40
#define K 10

static float vecs[N * DIM], queries[NQ * DIM];

static void make_data(void) {
    uint64_t rng = 42;
    for (size_t i = 0; i < N * DIM; i++) vecs[i] = (float)((double)(vb_splitmix64(&rng) >> 11) / 9007199254740992.0);
    /* each query near a corpus row, so that its neighbours are rows the writes touch */
    for (size_t q = 0; q < NQ; q++)
        for (size_t d = 0; d < DIM; d++)
            queries[q * DIM + d] = vecs[(q * 7) * DIM + d] + (float)((double)(vb_splitmix64(&rng) >> 11) / 9007199254740992.0 * 0.01);
}

/* The engine and the state, both with ids [0, CORPUS) holding their own rows. */
typedef struct world {
    vb_engine *e;
    vb_conn *c;
    vb_mixed_state st;
} world;

static void world_open(world *w) {
    vb_error err = {0};
    vb_engine_config cfg = {0};
    ok(vb_engine_open("exact", &cfg, &w->e, &err) == VB_OK, "open exact: %s", err.message);
    vb_table_spec spec = {DIM, VB_METRIC_EUCLIDEAN, N, 16, 100, 0};
    ok(vb_engine_create(w->e, &spec, &err) == VB_OK, "create");
    ok(vb_engine_connect(w->e, &w->c, &err) == VB_OK, "connect");
    int64_t ids[CORPUS];
    for (int i = 0; i < CORPUS; i++) ids[i] = i;
    ok(vb_conn_load(w->c, ids, vecs, NULL, NULL, CORPUS, &err) == VB_OK, "load the corpus");
    ok(vb_mixed_state_init(&w->st, N, CORPUS, &err) == VB_OK, "state");
}

static void world_close(world *w) {
    vb_conn_close(&w->c);
    vb_engine_close(&w->e);
    vb_mixed_state_free(&w->st);
}

/* A write to the engine (engine != 0) and to the state (state != 0). */
static void put(world *w, int op, int64_t id, int32_t src, int engine, int state) {
    vb_error err = {0};
    if (engine) {
        int rc = op == VB_MIXED_DELETE ? vb_conn_remove(w->c, &id, 1, &err)
                                       : vb_conn_insert(w->c, &id, vecs + (size_t)src * DIM, NULL, NULL, 1, &err);
        if (rc != VB_OK) ok(0, "write %d of id %lld: %s", op, (long long)id, err.message);
    }
    if (state) vb_mixed_apply(&w->st, op, id, src);
}

typedef struct totals {
    double recall_min, recall_sum;
    int ghosts, stale;
    int64_t first_ghost;
} totals;

/* Every query searched on the engine and scored against the truth of the state, during = the window's writes. */
static totals score_all(world *w, const vb_mixed_touched *during) {
    vb_error err = {0};
    vb_mixed_truth t;
    totals r = {1, 0, 0, 0, -1};
    if (vb_mixed_truth_make(&w->st, vecs, DIM, VB_METRIC_EUCLIDEAN, queries, NQ, K, &t, &err) != VB_OK) {
        ok(0, "truth: %s", err.message);
        return r;
    }
    for (size_t q = 0; q < NQ; q++) {
        int64_t got[K];
        int n = 0;
        vb_conn_search(w->c, queries + q * DIM, K, NULL, got, &n, &err);
        vb_mixed_score sc;
        vb_mixed_score_answer(&t, &w->st, during, vecs, DIM, VB_METRIC_EUCLIDEAN, queries + q * DIM, q, got, n, &sc);
        r.recall_sum += sc.recall;
        if (sc.recall < r.recall_min) r.recall_min = sc.recall;
        r.ghosts += sc.ghosts, r.stale += sc.stale;
        if (sc.first_ghost >= 0 && r.first_ghost < 0) r.first_ghost = sc.first_ghost;
    }
    vb_mixed_truth_free(&t);
    return r;
}

/* The top-1 row of query q over the state now. */
static int64_t top1(const world *w, size_t q) {
    vb_error err = {0};
    vb_mixed_truth t;
    vb_mixed_truth_make(&w->st, vecs, DIM, VB_METRIC_EUCLIDEAN, queries, NQ, K, &t, &err);
    int64_t id = t.ids[q * t.k2];
    vb_mixed_truth_free(&t);
    return id;
}

/* Updates, deletes and inserts on the engine and the state alike, chosen uniform and zipf: every answer exact. */
static void test_exact_stays_exact(double zipf) {
    world w;
    world_open(&w);
    vb_mixed_touched none = {0};
    double *cdf = zipf > 0 ? vb_mixed_zipf_cdf(CORPUS, zipf) : NULL;
    uint64_t rng = 7;
    size_t next_insert = 0, next_pool = 0;
    for (int i = 0; i < 400; i++) {
        double u = (double)(vb_splitmix64(&rng) >> 11) / 9007199254740992.0;
        int64_t id = (int64_t)vb_mixed_pick(cdf, CORPUS, (double)(vb_splitmix64(&rng) >> 11) / 9007199254740992.0);
        if (u < 0.5) put(&w, VB_MIXED_UPDATE, id, (int32_t)(CORPUS + next_pool++ % (N - CORPUS)), 1, 1);
        else if (u < 0.8) put(&w, VB_MIXED_DELETE, id, -1, 1, 1);
        else if (next_insert < N - CORPUS) {
            int64_t nid = (int64_t)(CORPUS + next_insert++);
            put(&w, VB_MIXED_INSERT, nid, (int32_t)nid, 1, 1);
        }
    }
    ok(w.st.live < CORPUS + next_insert, "%s: rows were deleted (%zu live)", zipf > 0 ? "zipf" : "uniform", w.st.live);
    totals r = score_all(&w, &none);
    is_double(r.recall_min, 1.0, 0, "%s: exact scores recall 1 on every query after 400 writes",
              zipf > 0 ? "zipf(1.1)" : "uniform");
    is_int(r.ghosts, 0, "%s: no ghost answer", zipf > 0 ? "zipf" : "uniform");
    is_int(r.stale, 0, "%s: no stale answer", zipf > 0 ? "zipf" : "uniform");
    free(cdf);
    world_close(&w);
}

/* One delete applied to the engine but not to the ground truth: the queries whose neighbour it was score below 1. */
static void test_missed_delete_caught(void) {
    world w;
    world_open(&w);
    vb_mixed_touched none = {0};
    int64_t victim = top1(&w, 3);
    put(&w, VB_MIXED_DELETE, victim, -1, 1, 0);   /* the mutation: the truth never hears of it */
    totals r = score_all(&w, &none);
    ok(r.recall_min < 1.0, "a delete missing from the ground truth is caught: recall %.2f on a query whose top row "
       "(id %lld) is gone", r.recall_min, (long long)victim);
    /* applied to both, all is exact again */
    put(&w, VB_MIXED_DELETE, victim, -1, 0, 1);
    r = score_all(&w, &none);
    is_double(r.recall_min, 1.0, 0, "the same delete applied to the truth: recall 1 again");
    world_close(&w);
}

/* A delete the engine did not apply: its answers name a deleted row, a ghost, by id. */
static void test_ghost(void) {
    world w;
    world_open(&w);
    vb_mixed_touched none = {0};
    int64_t victim = top1(&w, 5);
    put(&w, VB_MIXED_DELETE, victim, -1, 0, 1);
    totals r = score_all(&w, &none);
    ok(r.ghosts >= 1, "an engine that keeps a deleted row returns ghosts: %d", r.ghosts);
    is_int(r.first_ghost, victim, "the ghost is the deleted row");
    /* the same row deleted during the window: not a ghost (the window may have searched before the delete) */
    vb_mixed_touched during = {0};
    vb_mixed_touched_add(&during, victim, -1);
    vb_mixed_touched_sort(&during);
    vb_mixed_state before;
    vb_error err = {0};
    vb_mixed_state_copy(&w.st, &before, &err);
    before.src[victim] = (int32_t)victim;   /* the state before the window: the row still there */
    before.live++;
    vb_mixed_state_free(&w.st);
    w.st = before;
    r = score_all(&w, &during);
    is_int(r.ghosts, 0, "a row deleted during the window is not a ghost");
    vb_mixed_touched_free(&during);
    world_close(&w);
}

/* An update the engine did not apply (it answers from the row's old vector): stale answers. */
static void test_stale(void) {
    world w;
    world_open(&w);
    vb_mixed_touched none = {0};
    int64_t row = top1(&w, 9);
    put(&w, VB_MIXED_UPDATE, row, CORPUS + 50, 0, 1);   /* moved in the truth only */
    totals r = score_all(&w, &none);
    ok(r.stale >= 1, "an engine answering from a row's old vector gives stale answers: %d", r.stale);
    is_int(r.ghosts, 0, "no ghost: the row exists");
    ok(r.recall_min < 1.0, "and the stale row is a miss");
    /* the engine catches up: exact again */
    put(&w, VB_MIXED_UPDATE, row, CORPUS + 50, 1, 0);
    r = score_all(&w, &none);
    is_double(r.recall_min, 1.0, 0, "the update applied by the engine: recall 1");
    is_int(r.stale, 0, "and nothing stale");
    world_close(&w);
}

/* A row updated during the window into a query's neighbourhood: the engine returns it at its new position, a hit. */
static void test_written_during_window(void) {
    world w;
    world_open(&w);
    vb_error err = {0};
    vb_mixed_state before;
    vb_mixed_state_copy(&w.st, &before, &err);
    /* row 400 takes the vector of query 11's top row's twin: the query's own vector, nearest of all */
    int64_t row = 400;
    memcpy(vecs + (size_t)(CORPUS + 60) * DIM, queries + 11 * DIM, DIM * sizeof *vecs);
    put(&w, VB_MIXED_UPDATE, row, CORPUS + 60, 1, 0);
    vb_mixed_touched during = {0};
    vb_mixed_touched_add(&during, row, CORPUS + 60);
    vb_mixed_touched_sort(&during);
    vb_mixed_state_free(&w.st);
    w.st = before;
    totals r = score_all(&w, &during);
    is_double(r.recall_min, 1.0, 0, "a row written during the window counts by its new vector");
    vb_mixed_touched none = {0};
    r = score_all(&w, &none);
    ok(r.recall_min < 1.0, "without the window's log, the same answer is a miss (the log is what makes it right)");
    vb_mixed_touched_free(&during);
    world_close(&w);
}

static void test_pick(void) {
    double *cdf = vb_mixed_zipf_cdf(1000, 1.1);
    ok(cdf != NULL, "zipf cdf");
    is_int(vb_mixed_pick(cdf, 1000, 0.0), 0, "u = 0: the hottest row, 0");
    is_int(vb_mixed_pick(cdf, 1000, 0.9999999), 999, "u near 1: the coldest row");
    /* rank 1's share under zipf(1.1) over 1000: 1 / H(1000, 1.1) */
    double h = 0;
    for (int r = 1; r <= 1000; r++) h += pow(r, -1.1);
    is_int(vb_mixed_pick(cdf, 1000, 1 / h - 1e-9), 0, "row 0 holds the first 1/H of the draws");
    is_int(vb_mixed_pick(cdf, 1000, 1 / h + 1e-9), 1, "then row 1");
    is_int(vb_mixed_pick(NULL, 1000, 0.5), 500, "uniform: u x n");
    free(cdf);
}

/* The engine's rows against the log id by id (vb_mixed_check through vb_engine_rows). */
static vb_mixed_check check(world *w) {
    vb_error err = {0};
    vb_mixed_check c;
    int listed = 0;
    ok(vb_mixed_check_begin(&c, &w->st, vecs, DIM, VB_METRIC_EUCLIDEAN, &err) == VB_OK, "check begins");
    ok(vb_engine_rows(w->e, vb_mixed_check_row, &c, &listed, &err) == VB_OK && listed, "exact lists its rows: %s",
       err.message);
    vb_mixed_check_end(&c);
    return c;
}

/* After writes applied to both, the rows agree; each write applied to one side only is named by the check. */
static void test_rows_check(void) {
    world w;
    world_open(&w);
    put(&w, VB_MIXED_UPDATE, 3, CORPUS + 1, 1, 1);
    put(&w, VB_MIXED_DELETE, 4, -1, 1, 1);
    put(&w, VB_MIXED_INSERT, CORPUS + 2, CORPUS + 2, 1, 1);
    vb_mixed_check c = check(&w);
    is_int((long long)c.differ, 0, "writes applied to both: no row differs");
    is_int((long long)c.checked, (long long)w.st.live, "every live id compared");
    is_int((long long)c.vectors, (long long)w.st.live, "and every vector");
    put(&w, VB_MIXED_UPDATE, 7, CORPUS + 3, 0, 1);   /* the mutations: logged, not applied */
    c = check(&w);
    is_int((long long)c.differ, 1, "an update logged but not applied: one row differs");
    is_str(c.example, "id 7: the vector before its last update (the update not applied)", "named, with why");
    put(&w, VB_MIXED_UPDATE, 7, CORPUS + 3, 1, 0);
    put(&w, VB_MIXED_DELETE, 9, -1, 0, 1);
    c = check(&w);
    is_str(c.example, "id 9: absent in the log (deleted or never inserted), on the engine", "a delete not applied");
    put(&w, VB_MIXED_DELETE, 9, -1, 1, 0);
    put(&w, VB_MIXED_INSERT, CORPUS + 5, CORPUS + 5, 0, 1);
    c = check(&w);
    is_str(c.example, "id 505: live in the log, not on the engine", "an insert not applied");
    put(&w, VB_MIXED_INSERT, CORPUS + 5, CORPUS + 5, 1, 0);
    put(&w, VB_MIXED_UPDATE, 11, CORPUS + 6, 1, 1);
    put(&w, VB_MIXED_UPDATE, 11, CORPUS + 7, 1, 0);   /* applied twice on the engine's side: the wrong vector */
    c = check(&w);
    is_str(c.example, "id 11: another vector than the log's", "a write the log does not hold");
    world_close(&w);
}

int main(void) {
    make_data();
    test_exact_stays_exact(0);
    test_exact_stays_exact(1.1);
    test_missed_delete_caught();
    test_ghost();
    test_stale();
    test_written_during_window();
    test_pick();
    test_rows_check();
    return done_testing();
}
