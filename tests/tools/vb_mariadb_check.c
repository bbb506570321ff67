/* The mariadb engine against a real MariaDB 11.8 (driven by tests/e2e/61-mariadb.t, which starts the server).
 *
 *   vb_mariadb_check SOCKET
 *
 * Prints TAP: create / parallel load / search recall against a brute-force scan on small synthetic euclidean and
 * angular data, mhnsw_ef_search changing the answers, the tag filter respected, remove / insert, sizes, the
 * version, EXPLAIN using the vector index, and clear errors (with the server's text) for a wrong password and an
 * unsupported metric. Measured numbers go out as '#' lines. */
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "datasets/dataset.h"
#include "datasets/distance.h"
#include "engines/engine.h"
#include "engines/mysql_family.h"
#include "tests/tap.h"

#include <mysql.h>

#define K 10
#define N 4000
#define DIM 48
#define NQ 100
#define LOADERS 4

static uint64_t rng_state = 7;
static uint64_t rng_next(void) {
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
static float rng_unit(void) { return (float)((double)(rng_next() >> 11) / 9007199254740992.0) * 2.0f - 1.0f; }

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* Clustered data: 16 centres (made once), points spread around them. */
static float centres[16][DIM];
static void make_data(float *v, size_t n) {
    for (size_t i = 0; i < n; i++) {
        int c = (int)(rng_next() % 16);
        for (int j = 0; j < DIM; j++) v[i * DIM + j] = centres[c][j] + rng_unit();
    }
}

static int64_t ids[N];
static int32_t tags[N];
static float base[N * DIM], queries[NQ * DIM];
static int alive[N];

/* The exact top-k over the live rows passing tag < tag_below (INT32_MAX: no filter). */
static int exact_topk(vb_metric m, const float *q, int32_t tag_below, int64_t *out) {
    double best[K];
    int n = 0;
    for (size_t i = 0; i < N; i++) {
        if (!alive[i] || tags[i] >= tag_below) continue;
        double d = vb_distance(m, q, base + i * DIM, DIM);
        if (n < K || d < best[n - 1]) {
            int at = n < K ? n++ : K - 1;
            while (at > 0 && best[at - 1] > d) {
                best[at] = best[at - 1];
                out[at] = out[at - 1];
                at--;
            }
            best[at] = d;
            out[at] = ids[i];
        }
    }
    return n;
}

typedef struct run_stats {
    double recall, qps;
    int bad_filter, short_answers, errors, duplicate_answers;
    char first_error[1100];
} run_stats;

/* Runs every query once on conn; recall as id overlap with the exact answer, each distinct id counted once (an
 * id the answer repeats is a miss, as in metrics/recall.h: MariaDB 11.8.9 repeats one now and then). */
static run_stats run_queries(const vb_engine_ops *ops, void *conn, vb_metric m, const vb_filter *f) {
    run_stats r = {0};
    int64_t got[K], want[K];
    double hits = 0, total = 0, t0 = now_s();
    for (int qi = 0; qi < NQ; qi++) {
        int n = 0;
        vb_error err = {0};
        if (ops->search(conn, queries + qi * DIM, K, f, got, &n, &err) != VB_OK) {
            if (!r.errors++) snprintf(r.first_error, sizeof r.first_error, "%s", err.message);
            continue;
        }
        int nw = exact_topk(m, queries + qi * DIM, f && f->kind ? f->tag_below : INT32_MAX, want);
        int distinct = 0;
        for (int a = 0; a < n; a++) {
            if (f && f->kind && vb_dataset_tag(got[a]) >= f->tag_below) r.bad_filter++;
            int seen = 0;
            for (int b = 0; b < a && !seen; b++) seen = got[b] == got[a];
            if (seen) continue;
            distinct++;
            for (int b = 0; b < nw; b++)
                if (got[a] == want[b]) hits++;
        }
        if (distinct < n) r.duplicate_answers++;
        if (distinct < nw) r.short_answers++;
        total += nw;
    }
    r.qps = NQ / (now_s() - t0);
    r.recall = total > 0 ? hits / total : 0;
    return r;
}

typedef struct loader {
    const vb_engine_ops *ops;
    void *state;
    size_t from, to;
    int rc;
    vb_error err;
} loader;

static void *load_slice(void *arg) {
    loader *l = arg;
    void *conn = NULL;
    l->rc = l->ops->connect(l->state, &conn, &l->err);
    if (l->rc == VB_OK) l->rc = l->ops->load(conn, ids + l->from, base + l->from * DIM, tags + l->from,
                                             l->to - l->from, &l->err);
    if (conn) l->ops->disconnect(conn);
    return NULL;
}

static void check_metric(const char *sock, vb_metric m) {
    const vb_engine_ops *ops = &vb_engine_mariadb;
    const char *mn = vb_metric_name(m);
    vb_kv params[] = {{"socket", sock}, {"database", "vbcheck"}, {"insert_batch", "200"},
                      {"mhnsw_max_cache_size", "67108864"}};
    vb_engine_config cfg = {params, 4, NULL};
    void *state = NULL;
    vb_error err = {0};
    if (!ok(ops->open(&cfg, &state, &err) == VB_OK, "%s: open over the socket", mn)) {
        printf("#   %s\n", err.message);
        return;
    }
    vb_table_spec spec = {.dim = DIM, .metric = m, .capacity = N, .m = 8, .ef_construction = 128};
    if (!ok(ops->create(state, &spec, &err) == VB_OK, "%s: create (VECTOR(%d), VECTOR INDEX M=8)", mn, DIM)) printf("#   %s\n", err.message);
    for (size_t i = 0; i < N; i++) alive[i] = 1;

    double t0 = now_s();
    pthread_t th[LOADERS];
    loader ls[LOADERS];
    for (int t = 0; t < LOADERS; t++) {
        ls[t] = (loader){ops, state, (size_t)t * N / LOADERS, (size_t)(t + 1) * N / LOADERS, 0, {{0}, 0, {0}}};
        pthread_create(&th[t], NULL, load_slice, &ls[t]);
    }
    int load_ok = 1;
    for (int t = 0; t < LOADERS; t++) {
        pthread_join(th[t], NULL);
        if (ls[t].rc != VB_OK) {
            load_ok = 0;
            printf("#   loader %d: %s\n", t, ls[t].err.message);
        }
    }
    double load_s = now_s() - t0;
    ok(load_ok, "%s: %d rows loaded on %d connections in parallel", mn, N, LOADERS);
    printf("# %s: load of %d x %d on %d connections: %.2f s (%.0f rows/s, graph built on insert)\n", mn, N, DIM,
           LOADERS, load_s, N / load_s);

    /* attach: a second engine state finds the finished table (a resumed campaign), but not with another shape. */
    if (ops->attach) {
        void *other = NULL;
        int found = -1;
        ops->open(&cfg, &other, &err);
        ok(other && ops->attach(other, &spec, &found, &err) == VB_OK && found == 1,
           "%s: attach finds the loaded table and its vector index", mn);
        vb_table_spec fewer = spec, wider = spec, other_m = spec;
        fewer.capacity = N - 1;
        wider.dim = DIM + 1;
        other_m.m = 16;
        ok(other && ops->attach(other, &fewer, &found, &err) == VB_OK && found == 0, "%s: not with another row count", mn);
        ok(other && ops->attach(other, &wider, &found, &err) == VB_OK && found == 0, "%s: not with another dimension", mn);
        ok(other && ops->attach(other, &other_m, &found, &err) == VB_OK && found == 0, "%s: not with another M", mn);
        if (other) ops->close(other);
    }

    void *conn = NULL;
    if (!ok(ops->connect(state, &conn, &err) == VB_OK, "%s: connect a client", mn)) printf("#   %s\n", err.message);
    if (!conn) {
        ops->close(state);
        return;
    }
    double recall_at[3];
    int efs[3] = {10, 40, 400};
    int64_t first_low[K] = {0}, first_high[K] = {0};
    int n_low = 0, n_high = 0;
    for (int e = 0; e < 3; e++) {
        vb_search_params sp = {efs[e]};
        if (!ok(ops->set_search(conn, &sp, &err) == VB_OK, "%s: SET mhnsw_ef_search = %d", mn, efs[e])) printf("#   %s\n", err.message);
        run_stats r = run_queries(ops, conn, m, NULL);
        recall_at[e] = r.recall;
        if (!ok(r.errors == 0, "%s: ef_search %d: every query answered", mn, efs[e])) printf("#   %s\n", r.first_error);
        printf("# %s: ef_search %3d: recall@%d %.4f, %.0f QPS (1 client, %d queries)\n", mn, efs[e], K, r.recall,
               r.qps, NQ);
        /* Answers of a hard query at the lowest and highest ef, to see the setting act. */
        if (e == 0) ops->search(conn, queries, K, NULL, first_low, &n_low, &err);
        if (e == 2) ops->search(conn, queries, K, NULL, first_high, &n_high, &err);
    }
    ok(recall_at[2] >= 0.95, "%s: recall@10 >= 0.95 at ef_search 400 (%.4f)", mn, recall_at[2]);
    ok(recall_at[2] > recall_at[0] || recall_at[0] >= 0.999,
       "%s: mhnsw_ef_search changes the results (recall %.4f at 10 -> %.4f at 400)", mn, recall_at[0], recall_at[2]);

    /* Filter: tag < 1000 passes about 10 %, tag < 100 about 1 %. */
    vb_search_params sp = {400};
    ops->set_search(conn, &sp, &err);
    int32_t belows[2] = {1000, 100};
    for (int b = 0; b < 2; b++) {
        vb_filter f = {VB_FILTER_TAG_BELOW, belows[b]};
        run_stats r = run_queries(ops, conn, m, &f);
        if (!ok(r.errors == 0 && r.bad_filter == 0, "%s: filter tag < %d respected (no row fails it)", mn, belows[b])) printf("#   %d errors (%s), %d rows failing the filter\n", r.errors, r.first_error, r.bad_filter);
        printf("# %s: filter tag < %d: recall@%d %.4f, %d short answers of %d, %d repeating an id, %.0f QPS\n", mn,
               belows[b], K, r.recall, r.short_answers, NQ, r.duplicate_answers, r.qps);
    }

    /* EXPLAIN: the plan reads the vector index. */
    char plan[2048];
    int uses = 0;
    if (!ok(vb_mysql_explain(conn, K, 0, &uses, plan, sizeof plan, &err) == VB_OK && uses,
       "%s: EXPLAIN shows the vector index in use", mn)) printf("#   %s\n#   %s\n", err.message, plan);
    printf("# %s: EXPLAIN: %s", mn, plan);
    if (!ok(vb_mysql_explain(conn, K, 1, &uses, plan, sizeof plan, &err) == VB_OK && uses,
            "%s: EXPLAIN of the filtered query shows the vector index in use", mn))
        printf("#   %s\n#   %s\n", err.message, plan);
    printf("# %s: EXPLAIN (filtered): %s", mn, plan);

    /* Churn: remove 10 %, they are gone; insert them again, they come back. */
    int64_t gone[N / 10];
    for (size_t i = 0; i < N / 10; i++) {
        gone[i] = ids[i * 10];
        alive[i * 10] = 0;
    }
    if (!ok(ops->remove(conn, gone, N / 10, &err) == VB_OK, "%s: remove %d rows (DELETE ... WHERE id IN)", mn, N / 10)) printf("#   %s\n", err.message);
    run_stats r = run_queries(ops, conn, m, NULL);
    int64_t got[K];
    int n = 0, found_gone = 0;
    for (int qi = 0; qi < NQ; qi++) {
        ops->search(conn, queries + qi * DIM, K, NULL, got, &n, &err);
        for (int a = 0; a < n; a++) found_gone += got[a] % 10 == 0;
    }
    if (!ok(found_gone == 0, "%s: removed rows are never returned", mn)) printf("#   %d returned\n", found_gone);
    printf("# %s: after removing 10 %%: recall@%d %.4f\n", mn, K, r.recall);
    vb_sizes sz = {-1, -1, -1};
    int rc;
    rc = ops->sizes(state, &sz, &err);
    if (!ok(rc == VB_OK && sz.rows == N - N / 10, "%s: sizes: %lld rows after the delete", mn,
       (long long)sz.rows)) printf("#   %s\n", err.message);
    float *gv = malloc((N / 10) * DIM * sizeof *gv);
    int32_t gt[N / 10];
    for (size_t i = 0; i < N / 10; i++) {
        memcpy(gv + i * DIM, base + i * 10 * DIM, DIM * sizeof *gv);
        gt[i] = tags[i * 10];
        alive[i * 10] = 1;
    }
    if (!ok(ops->insert(conn, gone, gv, gt, N / 10, &err) == VB_OK, "%s: insert them again", mn)) printf("#   %s\n", err.message);
    if (!ok(ops->insert(conn, gone, gv, gt, 10, &err) == VB_OK, "%s: inserting a live id updates it (no duplicate key)",
       mn)) printf("#   %s\n", err.message);
    free(gv);
    r = run_queries(ops, conn, m, NULL);
    ok(r.recall >= 0.9, "%s: recall after remove + insert %.4f", mn, r.recall);
    rc = ops->sizes(state, &sz, &err);
    if (!ok(rc == VB_OK && sz.rows == N && sz.table_bytes > 0 && sz.index_bytes > 0,
       "%s: sizes: %lld rows, table %lld B, index %lld B", mn, (long long)sz.rows, (long long)sz.table_bytes,
       (long long)sz.index_bytes)) printf("#   %s\n", err.message);

    char ver[256];
    rc = ops->version(state, ver, sizeof ver, &err);
    ok(rc == VB_OK && strstr(ver, "11.8"), "%s: version \"%s\" has 11.8",
       mn, ver);
    ops->disconnect(conn);
    ops->close(state);
}

static void check_errors(const char *sock) {
    const vb_engine_ops *ops = &vb_engine_mariadb;
    vb_kv params[] = {{"socket", sock}, {"password", "not-the-password"}};
    vb_engine_config cfg = {params, 2, NULL};
    void *state = NULL;
    vb_error err = {0};
    int rc = ops->open(&cfg, &state, &err);
    ok(rc == VB_ERROR, "a wrong password fails at open");
    contains(err.message, "Access denied for user 'root'@'localhost'", "its error carries the server's text");
    printf("#   %s\n", err.message);
    if (state) ops->close(state);

    vb_engine_config good = {params, 1, NULL};
    state = NULL;
    if (ops->open(&good, &state, &err) != VB_OK) {
        ok(0, "open for the metric check: %s", err.message);
        return;
    }
    vb_table_spec spec = {.dim = 8, .metric = VB_METRIC_DOT, .capacity = 10, .m = 16, .ef_construction = 64};
    ok(ops->create(state, &spec, &err) == VB_ERROR, "an unsupported metric (dot) is refused at create");
    contains(err.message, "metric dot is not supported", "with a message naming the metric");
    /* And a statement the server refuses: its own text comes back. */
    vb_table_spec big = {.dim = 70000, .metric = VB_METRIC_EUCLIDEAN, .capacity = 10, .m = 16, .ef_construction = 64};
    ok(ops->create(state, &big, &err) == VB_ERROR && strstr(err.message, "mariadb: CREATE TABLE"),
       "a server-side refusal (VECTOR(70000)) carries the statement and the server's text");
    printf("#   %s\n", err.message);
    ops->close(state);
}

/* A connection killed by the server: the next call says VB_RETRY (the caller reconnects). */
static void check_lost(const char *sock) {
    const vb_engine_ops *ops = &vb_engine_mariadb;
    vb_kv params[] = {{"socket", sock}, {"database", "vbcheck"}};
    vb_engine_config cfg = {params, 2, NULL};
    void *state = NULL, *conn = NULL;
    vb_error err = {0};
    vb_table_spec spec = {.dim = DIM, .metric = VB_METRIC_EUCLIDEAN, .capacity = 10, .m = 8, .ef_construction = 64};
    if (ops->open(&cfg, &state, &err) || ops->create(state, &spec, &err) || ops->connect(state, &conn, &err)) {
        ok(0, "setup for the lost-connection check: %s", err.message);
        if (state) ops->close(state);
        return;
    }
    MYSQL *my = mysql_init(NULL);
    int killed = 0;
    if (mysql_real_connect(my, NULL, "root", NULL, NULL, 0, sock, 0) &&
        !mysql_query(my, "SELECT ID FROM information_schema.PROCESSLIST WHERE DB = 'vbcheck' AND ID <> "
                         "CONNECTION_ID()")) {
        MYSQL_RES *r = mysql_store_result(my);
        MYSQL_ROW row;
        char sql[64];
        while (r && (row = mysql_fetch_row(r))) {
            snprintf(sql, sizeof sql, "KILL %s", row[0]);
            killed += mysql_query(my, sql) == 0;
        }
        if (r) mysql_free_result(r);
    }
    mysql_close(my);
    ok(killed >= 1, "the server killed %d adapter connections", killed);
    int64_t got[K];
    int n = 0;
    int rc = ops->search(conn, queries, K, NULL, got, &n, &err);
    ok(rc == VB_RETRY, "a search on a killed connection returns VB_RETRY (transient)");
    printf("#   %s\n", err.message);
    ops->disconnect(conn);
    ok(ops->connect(state, &conn, &err) == VB_OK, "a new connection works after it");
    ops->disconnect(conn);
    ops->close(state);
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: vb_mariadb_check SOCKET\n");
        return 2;
    }
    for (size_t i = 0; i < N; i++) {
        ids[i] = (int64_t)i;
        tags[i] = vb_dataset_tag((int64_t)i);
    }
    for (int c = 0; c < 16; c++)
        for (int j = 0; j < DIM; j++) centres[c][j] = rng_unit() * 1.0f;
    make_data(base, N);
    make_data(queries, NQ);   /* other points around the same centres */
    check_metric(argv[1], VB_METRIC_EUCLIDEAN);
    check_metric(argv[1], VB_METRIC_ANGULAR);
    check_errors(argv[1]);
    check_lost(argv[1]);
    return done_testing();
}
