/* Tests of the engine registry and wrappers, the exact engine against a naive scan, and the hnswlib engine:
 * recall on clustered data, filters, remove/insert churn, persist/attach, and concurrent searches. */
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "datasets/distance.h"
#include "engines/conformance.h"
#include "engines/engine.h"
#include "tests/tap.h"

#define K 10

/* ---- data ------------------------------------------------------------------------------------------------ */

static uint64_t rng_state = 42;

static uint64_t rng_next(void) {
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static double rng_uniform(void) { return ((rng_next() >> 11) + 0.5) * (1.0 / 9007199254740992.0); }

static double rng_normal(void) { return sqrt(-2.0 * log(rng_uniform())) * cos(6.283185307179586 * rng_uniform()); }

/* n x dim points around `clusters` centres (spread 0.3 around centres in [-1, 1]); caller frees. */
static float *clustered(size_t n, size_t dim, size_t clusters) {
    float *centres = malloc(clusters * dim * sizeof *centres);
    float *v = malloc(n * dim * sizeof *v);
    for (size_t i = 0; i < clusters * dim; i++) centres[i] = (float)(2.0 * rng_uniform() - 1.0);
    for (size_t i = 0; i < n; i++) {
        const float *c = centres + (rng_next() % clusters) * dim;
        for (size_t j = 0; j < dim; j++) v[i * dim + j] = c[j] + (float)(0.3 * rng_normal());
    }
    free(centres);
    return v;
}

static int32_t tag_of(int64_t id) { return (int32_t)(((uint64_t)id * 2654435761u) % 10000u); }

typedef struct corpus {
    size_t n, dim;
    vb_metric metric;
    int64_t *ids;
    int32_t *tags;
    float *vecs;
    uint8_t *alive;
} corpus;

/* ids 0..n-1, tags, clustered vectors, all alive; freed with corpus_free. */
static corpus corpus_new(size_t n, size_t dim, vb_metric metric) {
    corpus c = {n, dim, metric, malloc(n * sizeof(int64_t)), malloc(n * sizeof(int32_t)), clustered(n, dim, 20),
                malloc(n)};
    for (size_t i = 0; i < n; i++) {
        c.ids[i] = (int64_t)i;
        c.tags[i] = tag_of((int64_t)i);
        c.alive[i] = 1;
    }
    return c;
}

static void corpus_free(corpus *c) {
    free(c->ids);
    free(c->tags);
    free(c->vecs);
    free(c->alive);
}

/* The true top-k by vb_distance over live rows passing the filter (tag_below < 0: none), ties by id. */
typedef struct hit {
    double d;
    int64_t id;
} hit;

static int hit_before(const hit *x, const hit *y) { return x->d < y->d || (x->d == y->d && x->id < y->id); }

static int naive_knn(const corpus *c, const float *q, int k, int32_t tag_below, int64_t *out, double *dist) {
    hit best[64];   /* sorted, insertion: k is small */
    int m = 0;
    if (k > 64) k = 64;
    for (size_t i = 0; i < c->n; i++) {
        if (!c->alive[i] || (tag_below >= 0 && c->tags[i] >= tag_below)) continue;
        hit h = {vb_distance(c->metric, q, c->vecs + i * c->dim, c->dim), c->ids[i]};
        if (m == k && !hit_before(&h, &best[m - 1])) continue;
        int j = m < k ? m++ : m - 1;
        for (; j > 0 && hit_before(&h, &best[j - 1]); j--) best[j] = best[j - 1];
        best[j] = h;
    }
    for (int i = 0; i < m; i++) {
        out[i] = best[i].id;
        if (dist) dist[i] = best[i].d;
    }
    return m;
}

/* |got ∩ truth| / k */
static double overlap(const int64_t *got, int n_got, const int64_t *truth, int n_truth) {
    int hits = 0;
    for (int i = 0; i < n_got; i++)
        for (int j = 0; j < n_truth; j++)
            if (got[i] == truth[j]) {
                hits++;
                break;
            }
    return n_truth ? (double)hits / n_truth : 1.0;
}

static int has_duplicates(const int64_t *ids, int n) {
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++)
            if (ids[i] == ids[j]) return 1;
    return 0;
}

static vb_table_spec spec_of(const corpus *c, size_t capacity) {
    vb_table_spec s = {c->dim, c->metric, capacity, 16, 200, 0};
    return s;
}

/* ---- registry and wrappers --------------------------------------------------------------------------- */

/* A fake engine whose ops fail without a message, and with only the required ops. */
static int mute_open(const vb_engine_config *cfg, void **state, vb_error *err) {
    (void)cfg;
    (void)err;
    *state = NULL;
    return VB_OK;
}
static void mute_close(void *state) { (void)state; }
static int mute_create(void *state, const vb_table_spec *spec, vb_error *err) {
    (void)state;
    (void)spec;
    (void)err;
    return VB_ERROR;
}
static int mute_connect(void *state, void **conn, vb_error *err) {
    (void)state;
    (void)err;
    *conn = NULL;
    return VB_OK;
}
static void mute_disconnect(void *conn) { (void)conn; }
static int mute_load(void *conn, const int64_t *ids, const float *vecs, const int32_t *tags, const int32_t *classes,
                     size_t n, vb_error *err) {
    (void)conn;
    (void)ids;
    (void)vecs;
    (void)tags, (void)classes;
    (void)n;
    return vb_error_set(err, "mute", 7, "disk on fire");
}
static int mute_set_search(void *conn, const vb_search_params *p, vb_error *err) {
    (void)conn;
    (void)p;
    (void)err;
    return 42;
}
static int mute_search(void *conn, const float *q, int k, const vb_filter *f, int64_t *ids, int *n, vb_error *err) {
    (void)conn;
    (void)q;
    (void)k;
    (void)f;
    (void)ids;
    (void)n;
    (void)err;
    return VB_RETRY;
}
static int mute_version(void *state, char *buf, size_t len, vb_error *err) {
    (void)state;
    (void)err;
    snprintf(buf, len, "mute 0");
    return VB_OK;
}
static const char *const mute_params[] = {"volume", NULL};
static const vb_engine_ops mute_ops = {
    .name = "mute", .description = "fails quietly", .flags = 0, .param_names = mute_params,
    .open = mute_open, .close = mute_close, .create = mute_create, .connect = mute_connect,
    .disconnect = mute_disconnect, .load = mute_load, .set_search = mute_set_search, .search = mute_search,
    .version = mute_version,
};
static const vb_engine_ops incomplete_ops = {.name = "incomplete", .open = mute_open};

static void test_registry(void) {
    vb_error err;
    vb_engine *e = NULL;
    const char *names[16];
    size_t n = vb_engine_list(names, 16);
    int seen_h = 0, seen_x = 0;
    for (size_t i = 0; i < n && i < 16; i++) {
        seen_h |= strcmp(names[i], "hnswlib") == 0;
        seen_x |= strcmp(names[i], "exact") == 0;
    }
    ok(seen_h && seen_x, "built-ins hnswlib and exact are listed");
    ok(vb_engine_find("hnswlib") == &vb_engine_hnswlib, "find hnswlib");
    ok(vb_engine_find("nope") == NULL, "find of an unknown name is NULL");

    vb_error_clear(&err);
    is_int(vb_engine_open("nope", NULL, &e, &err), VB_ERROR, "open of an unknown engine fails");
    ok(e == NULL, "no engine returned");
    contains(err.message, "\"nope\"", "message names the unknown engine");
    contains(err.message, "hnswlib", "message lists hnswlib");
    contains(err.message, "exact", "message lists exact");

    vb_kv bad[] = {{"m", "16"}, {"bogus", "1"}};
    vb_engine_config cfg = {bad, 2, NULL, 0};
    is_int(vb_engine_open("hnswlib", &cfg, &e, &err), VB_ERROR, "unknown parameter refused");
    contains(err.message, "bogus", "message names the key");
    contains(err.message, "hnswlib", "message names the engine");
    contains(err.message, "ef_construction", "message lists accepted parameters");

    vb_kv bad_value[] = {{"m", "sixteen"}};
    vb_engine_config cfg2 = {bad_value, 1, NULL, 0};
    is_int(vb_engine_open("hnswlib", &cfg2, &e, &err), VB_ERROR, "malformed parameter refused");
    contains(err.message, "m: expected an integer", "message names the malformed key");

    vb_kv any[] = {{"anything", "1"}};
    vb_engine_config cfg3 = {any, 1, NULL, 0};
    is_int(vb_engine_open("exact", &cfg3, &e, &err), VB_ERROR, "exact accepts no parameters");
    contains(err.message, "accepted: none", "and says so");

    is_int(vb_engine_register(&mute_ops), VB_OK, "register a test engine");
    is_int(vb_engine_register(&mute_ops), VB_ERROR, "same name twice refused");
    is_int(vb_engine_register(&incomplete_ops), VB_ERROR, "ops without required methods refused");
    is_int(vb_engine_list(NULL, 0), n + 1, "list counts the new engine");

    vb_kv vol[] = {{"volume", "0"}};
    vb_engine_config cfg4 = {vol, 1, NULL, 0};
    is_int(vb_engine_open("mute", &cfg4, &e, &err), VB_OK, "open the test engine with its parameter");
    vb_table_spec spec = {4, VB_METRIC_EUCLIDEAN, 10, 16, 200, 0};
    strcpy(err.message, "stale message from before");
    is_int(vb_engine_create(e, &spec, &err), VB_ERROR, "create fails");
    contains(err.message, "mute", "empty message replaced: names the engine");
    contains(err.message, "create", "and the op");
    int found = 7;
    is_int(vb_engine_attach(e, &spec, &found, &err), VB_OK, "attach without the op is OK");
    is_int(found, 0, "and finds nothing");
    is_int(vb_engine_build(e, &err), VB_OK, "build without the op is OK");
    is_int(vb_engine_persist(e, &err), VB_OK, "persist without the op is OK");
    is_int(vb_engine_maintain(e, &err), VB_OK, "maintain without the op is OK");
    vb_sizes sz = {1, 1, 1};
    is_int(vb_engine_sizes(e, &sz, &err), VB_OK, "sizes without the op is OK");
    ok(sz.index_bytes == -1 && sz.table_bytes == -1 && sz.rows == -1, "and reports -1");
    char ver[64];
    is_int(vb_engine_version(e, ver, sizeof ver, &err), VB_OK, "version");
    is_str(ver, "mute 0", "version text");

    vb_conn *c = NULL;
    is_int(vb_engine_connect(e, &c, &err), VB_OK, "connect");
    int64_t ids[K];
    int got = -1;
    float q[4] = {0};
    is_int(vb_conn_search(c, q, K, NULL, ids, &got, &err), VB_RETRY, "RETRY passes through");
    contains(err.message, "search", "RETRY with an empty message gets one naming the op");
    vb_filter f = {.kind = VB_FILTER_TAG_BELOW, .tag_below = 100};
    is_int(vb_conn_search(c, q, K, &f, ids, &got, &err), VB_ERROR, "filter refused by an engine without FILTER");
    contains(err.message, "filtered search", "message says why");
    is_int(vb_conn_load(c, ids, q, NULL, NULL, 0, &err), VB_ERROR, "load fails");
    is_str(err.message, "disk on fire", "the engine's own message is kept");
    is_str(err.domain, "mute", "and its domain");
    vb_search_params sp = {10};
    is_int(vb_conn_set_search(c, &sp, &err), VB_ERROR, "an unknown status becomes VB_ERROR");
    contains(err.message, "unknown status 42", "and says so");
    is_int(vb_conn_remove(c, ids, 1, &err), VB_ERROR, "remove without the op fails");
    contains(err.message, "does not support remove", "and says so");
    is_int(vb_conn_insert(c, ids, q, NULL, NULL, 1, &err), VB_ERROR, "insert without the op fails");
    vb_conn_close(&c);
    ok(c == NULL, "conn_close nulls the pointer");
    vb_engine_close(&e);
    ok(e == NULL, "engine_close nulls the pointer");
    vb_engine_close(&e);   /* NULL-safe */
}

/* ---- exact ------------------------------------------------------------------------------------------- */

/* Every query's answer equals the naive one (ids, or the same distance where the naive list has a near tie). */
static int exact_matches(vb_conn *c, const corpus *cp, const float *qs, size_t nq, int32_t tag_below, int *short_n) {
    vb_error err;
    vb_filter f = {.kind = tag_below >= 0 ? VB_FILTER_TAG_BELOW : VB_FILTER_NONE, .tag_below = tag_below};
    int bad = 0;
    for (size_t i = 0; i < nq; i++) {
        const float *q = qs + i * cp->dim;
        int64_t got[K], want[K];
        double wd[K];
        int n = 0;
        if (vb_conn_search(c, q, K, &f, got, &n, &err) != VB_OK) return 0;
        int m = naive_knn(cp, q, K, tag_below, want, wd);
        if (n != m) return 0;
        if (short_n && n < K) (*short_n)++;
        for (int j = 0; j < n; j++)
            if (got[j] != want[j] &&
                fabs(vb_distance(cp->metric, q, cp->vecs + got[j] * cp->dim, cp->dim) - wd[j]) > 1e-12)
                bad++;
    }
    return bad == 0;
}

static void test_exact_metric(vb_metric metric) {
    const char *mn = vb_metric_name(metric);
    vb_error err;
    vb_engine *e = NULL;
    vb_conn *c = NULL;
    corpus cp = corpus_new(2000, 16, metric);
    float *qs = clustered(40, 16, 20);
    vb_table_spec spec = spec_of(&cp, 500);   /* capacity below the row count: it must grow */
    ok(vb_engine_open("exact", NULL, &e, &err) == VB_OK && vb_engine_create(e, &spec, &err) == VB_OK &&
           vb_engine_connect(e, &c, &err) == VB_OK,
       "exact %s: open, create, connect", mn);
    ok(vb_conn_load(c, cp.ids, cp.vecs, cp.tags, NULL, 1000, &err) == VB_OK &&
           vb_conn_load(c, cp.ids + 1000, cp.vecs + 1000 * 16, cp.tags + 1000, NULL, 1000, &err) == VB_OK,
       "exact %s: load in two batches", mn);
    ok(exact_matches(c, &cp, qs, 40, -1, NULL), "exact %s: answers equal the naive scan", mn);
    int short_n = 0;
    ok(exact_matches(c, &cp, qs, 40, 30, &short_n), "exact %s: filtered answers (tag < 30) equal the naive scan",
       mn);
    ok(short_n > 0, "exact %s: a filter passing ~0.3 %% of rows returns short answers", mn);
    ok(exact_matches(c, &cp, qs, 40, 3000, NULL), "exact %s: filtered answers (tag < 3000) equal the naive scan",
       mn);

    int64_t rm[200];
    for (int i = 0; i < 200; i++) {
        rm[i] = i * 10;
        cp.alive[i * 10] = 0;
    }
    is_int(vb_conn_remove(c, rm, 200, &err), VB_OK, nm("exact %s: remove 200 rows", mn));
    is_int(vb_conn_remove(c, rm, 200, &err), VB_OK, nm("exact %s: removing them again is not an error", mn));
    ok(exact_matches(c, &cp, qs, 40, -1, NULL), "exact %s: answers after remove equal the naive scan", mn);
    vb_sizes sz;
    vb_engine_sizes(e, &sz, &err);
    is_int(sz.rows, 1800, nm("exact %s: sizes count live rows", mn));
    is_int(sz.table_bytes, 1800 * 16 * 4, nm("exact %s: table bytes", mn));

    float *rv = malloc(200 * 16 * sizeof *rv);
    int32_t rt[200];
    for (int i = 0; i < 200; i++) {
        memcpy(rv + i * 16, cp.vecs + rm[i] * 16, 16 * sizeof *rv);
        rt[i] = cp.tags[rm[i]];
        cp.alive[rm[i]] = 1;
    }
    is_int(vb_conn_insert(c, rm, rv, rt, NULL, 200, &err), VB_OK, nm("exact %s: insert them back", mn));
    ok(exact_matches(c, &cp, qs, 40, -1, NULL), "exact %s: answers after insert equal the naive scan", mn);
    vb_engine_sizes(e, &sz, &err);
    is_int(sz.rows, 2000, nm("exact %s: all rows live again", mn));
    free(rv);
    free(qs);
    vb_conn_close(&c);
    vb_engine_close(&e);
    corpus_free(&cp);
}

static void test_exact_misc(const char *dir) {
    vb_error err;
    vb_engine *e = NULL, *e2 = NULL;
    vb_conn *c = NULL, *c2 = NULL;
    vb_engine_config cfg = {NULL, 0, dir, 0};
    vb_table_spec spec = {3, VB_METRIC_EUCLIDEAN, 8, 16, 200, 0};
    vb_engine_open("exact", &cfg, &e, &err);
    int64_t ids[K];
    int n = -1;
    float q[3] = {1, 2, 3};
    ok(vb_engine_connect(e, &c, &err) == VB_OK, "exact: connect before create");
    is_int(vb_conn_search(c, q, K, NULL, ids, &n, &err), VB_ERROR, "exact: search before create fails");
    contains(err.message, "create", "and says what is missing");
    vb_engine_create(e, &spec, &err);

    /* Equal distances: the same vector under ids 9, 3, 5, and a farther one. */
    float v[4 * 3] = {1, 2, 3, 1, 2, 3, 1, 2, 3, 1, 2, 4};
    int64_t vid[4] = {9, 3, 5, 1};
    vb_conn_load(c, vid, v, NULL, NULL, 4, &err);
    is_int(vb_conn_search(c, q, K, NULL, ids, &n, &err), VB_OK, "exact: search with k > rows");
    is_int(n, 4, "exact: returns every row");
    ok(ids[0] == 3 && ids[1] == 5 && ids[2] == 9 && ids[3] == 1, "exact: ties broken by id (3 5 9, then 1)");
    /* vb_engine_sent: a connection's searches join at close, or at vb_conn_sent_flush (then counted from 0) */
    uint64_t s0, w0, s1, w1;
    vb_conn_sent_flush(c);   /* the searches above */
    vb_engine_sent(e, &s0, &w0);
    vb_conn_search(c, q, K, NULL, ids, &n, &err);
    vb_conn_search(c, q, K, NULL, ids, &n, &err);
    vb_engine_sent(e, &s1, &w1);
    ok(s1 == s0 && w1 == w0, "sent: an open connection's searches are not counted yet (%llu -> %llu)",
       (unsigned long long)s0, (unsigned long long)s1);
    vb_conn_sent_flush(c);
    vb_engine_sent(e, &s1, &w1);
    is_int((long long)(s1 - s0), 2, "sent: vb_conn_sent_flush adds the connection's 2 searches now");
    vb_conn_sent_flush(c);
    vb_engine_sent(e, &s1, &w1);
    is_int((long long)(s1 - s0), 2, "sent: a second flush adds nothing (the connection counts from 0 again)");
    vb_filter f = {.kind = VB_FILTER_TAG_BELOW, .tag_below = 10000};
    vb_conn_search(c, q, K, &f, ids, &n, &err);
    is_int(n, 0, "exact: rows loaded without tags never pass a filter");
    is_int(vb_conn_search(c, q, 0, NULL, ids, &n, &err), VB_OK, "exact: k = 0 is fine");
    is_int(n, 0, "exact: and returns nothing");

    is_int(vb_engine_persist(e, &err), VB_OK, "exact: persist");
    vb_engine_open("exact", &cfg, &e2, &err);
    int found = 0;
    is_int(vb_engine_attach(e2, &spec, &found, &err), VB_OK, "exact: attach in a new instance");
    is_int(found, 1, "exact: finds the rows");
    vb_engine_connect(e2, &c2, &err);
    vb_conn_search(c2, q, K, NULL, ids, &n, &err);
    ok(n == 4 && ids[0] == 3 && ids[1] == 5 && ids[2] == 9 && ids[3] == 1, "exact: same answer after attach");
    vb_table_spec other = spec;
    other.dim = 4;
    found = 1;
    is_int(vb_engine_attach(e2, &other, &found, &err), VB_OK, "exact: attach with another dim");
    is_int(found, 0, "exact: finds nothing to reuse");
    vb_engine_create(e, &spec, &err);
    found = 1;
    vb_engine_attach(e2, &spec, &found, &err);
    is_int(found, 0, "exact: create removed the persisted rows");
    char ver[128];
    vb_engine_version(e, ver, sizeof ver, &err);
    contains(ver, "exact", "exact: version");
    vb_conn_close(&c);
    vb_conn_close(&c2);
    vb_engine_close(&e);
    vb_engine_close(&e2);
}

/* ---- hnswlib ----------------------------------------------------------------------------------------- */

/* Mean id-overlap recall@K of the engine's answers against the naive scan; *bad counts answers with
 * duplicate ids, an id the corpus does not hold live, or a tag that fails the filter. */
static double recall_of(vb_conn *c, const corpus *cp, const float *qs, size_t nq, int32_t tag_below, int *bad) {
    vb_error err;
    vb_filter f = {.kind = tag_below >= 0 ? VB_FILTER_TAG_BELOW : VB_FILTER_NONE, .tag_below = tag_below};
    double sum = 0.0;
    for (size_t i = 0; i < nq; i++) {
        int64_t got[K], want[K];
        int n = 0;
        if (vb_conn_search(c, qs + i * cp->dim, K, &f, got, &n, &err) != VB_OK) {
            (*bad)++;
            continue;
        }
        int m = naive_knn(cp, qs + i * cp->dim, K, tag_below, want, NULL);
        if (has_duplicates(got, n)) (*bad)++;
        for (int j = 0; j < n; j++)
            if (got[j] < 0 || (size_t)got[j] >= cp->n || !cp->alive[got[j]] ||
                (tag_below >= 0 && cp->tags[got[j]] >= tag_below))
                (*bad)++;
        sum += overlap(got, n, want, m);
    }
    return sum / (double)nq;
}

static int set_ef(vb_conn *c, int ef) {
    vb_error err;
    vb_search_params p = {ef};
    return vb_conn_set_search(c, &p, &err);
}

/* All answers of a connection at the current ef, nq x K, -1 padded; caller frees. */
static int64_t *answers_of(vb_conn *c, const float *qs, size_t nq, size_t dim, const vb_filter *f) {
    vb_error err;
    int64_t *a = malloc(nq * K * sizeof *a);
    for (size_t i = 0; i < nq; i++) {
        int n = 0;
        for (int j = 0; j < K; j++) a[i * K + j] = -1;
        if (vb_conn_search(c, qs + i * dim, K, f, a + i * K, &n, &err) != VB_OK) a[i * K] = -2;
    }
    return a;
}

typedef struct search_job {
    vb_engine *e;
    const float *qs;
    size_t nq, dim;
    int64_t *answers;
    int rc;
} search_job;

static void *search_thread(void *arg) {
    search_job *j = arg;
    vb_error err;
    vb_conn *c = NULL;
    j->rc = vb_engine_connect(j->e, &c, &err);
    if (j->rc != VB_OK) return NULL;
    set_ef(c, 200);   /* ef belongs to the connection (engine contract) */
    for (int round = 0; round < 3; round++) {   /* overlap the threads' searches */
        free(j->answers);
        j->answers = answers_of(c, j->qs, j->nq, j->dim, NULL);
    }
    vb_conn_close(&c);
    return NULL;
}

typedef struct load_job {
    vb_engine *e;
    const corpus *cp;
    size_t from, to;
    int rc;
} load_job;

static void *load_thread(void *arg) {
    load_job *j = arg;
    vb_error err;
    vb_conn *c = NULL;
    j->rc = vb_engine_connect(j->e, &c, &err);
    for (size_t i = j->from; j->rc == VB_OK && i < j->to; i += 100) {
        size_t n = j->to - i < 100 ? j->to - i : 100;
        j->rc = vb_conn_load(c, j->cp->ids + i, j->cp->vecs + i * j->cp->dim, j->cp->tags + i, NULL, n, &err);
    }
    vb_conn_close(&c);
    return NULL;
}

static void test_hnswlib_main(const char *dir) {
    const size_t N = 5000, D = 32, NQ = 200, CAP = 6000;
    vb_error err;
    vb_engine *e = NULL;
    vb_conn *c = NULL;
    corpus cp = corpus_new(CAP, D, VB_METRIC_EUCLIDEAN);   /* rows N..CAP arrive in the churn part */
    for (size_t i = N; i < CAP; i++) cp.alive[i] = 0;
    float *qs = clustered(NQ, D, 20);
    vb_kv params[] = {{"threads", "4"}, {"m", "16"}};
    vb_engine_config cfg = {params, 2, dir, 0};
    vb_table_spec spec = spec_of(&cp, CAP);
    is_int(vb_engine_open("hnswlib", &cfg, &e, &err), VB_OK, "hnswlib: open");
    is_int(vb_engine_create(e, &spec, &err), VB_OK, "hnswlib: create");
    is_int(vb_engine_connect(e, &c, &err), VB_OK, "hnswlib: connect");
    is_int(vb_conn_load(c, cp.ids, cp.vecs, cp.tags, NULL, N, &err), VB_OK, "hnswlib: load 5000 rows on 4 threads");
    char ver[64];
    vb_engine_version(e, ver, sizeof ver, &err);
    is_str(ver, "hnswlib 0.8.0", "hnswlib: version");
    vb_sizes sz;
    vb_engine_sizes(e, &sz, &err);
    is_int(sz.rows, (long long)N, "hnswlib: sizes count rows");
    is_int(sz.table_bytes, (long long)(N * D * 4), "hnswlib: table bytes are the vectors");
    ok(sz.index_bytes > sz.table_bytes, "hnswlib: index bytes include the graph (%lld)", (long long)sz.index_bytes);

    int bad = 0;
    set_ef(c, 10);
    double r10 = recall_of(c, &cp, qs, NQ, -1, &bad);
    set_ef(c, 200);
    double r200 = recall_of(c, &cp, qs, NQ, -1, &bad);
    ok(r200 >= 0.97, "hnswlib: recall at ef 200 is high (%.4f)", r200);
    ok(r200 > r10, "hnswlib: recall at ef 200 (%.4f) > at ef 10 (%.4f)", r200, r10);
    is_int(bad, 0, "hnswlib: no duplicate or unknown ids");

    bad = 0;
    double rf = recall_of(c, &cp, qs, NQ, 1000, &bad);
    is_int(bad, 0, "hnswlib: filter tag < 1000 respected in every answer");
    ok(rf >= 0.9, "hnswlib: filtered recall at ef 200 (%.4f)", rf);
    vb_filter fx = {.kind = (vb_filter_kind)99};
    int64_t one[K];
    int n = 0;
    is_int(vb_conn_search(c, qs, K, &fx, one, &n, &err), VB_ERROR, "hnswlib: unknown filter kind refused");

    /* Persist, then attach in a new instance: identical answers, filters included. */
    vb_filter f10 = {.kind = VB_FILTER_TAG_BELOW, .tag_below = 1000};
    int64_t *before = answers_of(c, qs, NQ, D, NULL), *before_f = answers_of(c, qs, NQ, D, &f10);
    is_int(vb_engine_persist(e, &err), VB_OK, "hnswlib: persist");
    {
        vb_engine *e2 = NULL;
        vb_conn *c2 = NULL;
        int found = 0;
        vb_engine_config cfg2 = {NULL, 0, dir, 0};
        vb_engine_open("hnswlib", &cfg2, &e2, &err);
        is_int(vb_engine_attach(e2, &spec, &found, &err), VB_OK, "hnswlib: attach in a new instance");
        is_int(found, 1, "hnswlib: finds the saved index");
        vb_engine_connect(e2, &c2, &err);
        set_ef(c2, 200);
        int64_t *after = answers_of(c2, qs, NQ, D, NULL), *after_f = answers_of(c2, qs, NQ, D, &f10);
        ok(memcmp(before, after, NQ * K * sizeof *after) == 0, "hnswlib: identical answers after attach");
        ok(memcmp(before_f, after_f, NQ * K * sizeof *after) == 0,
           "hnswlib: identical filtered answers (tags restored)");
        vb_engine_sizes(e2, &sz, &err);
        is_int(sz.rows, (long long)N, "hnswlib: attached index has every row");
        free(after);
        free(after_f);

        vb_table_spec other = spec;
        other.dim = D + 1;
        found = 1;
        int rc = vb_engine_attach(e2, &other, &found, &err);
        ok(rc == VB_OK && found == 0, "hnswlib: attach with another dim finds nothing");
        other = spec;
        other.m = 8;
        found = 1;
        rc = vb_engine_attach(e2, &other, &found, &err);
        ok(rc == VB_OK && found == 0, "hnswlib: attach with another m finds nothing");
        other = spec;
        other.metric = VB_METRIC_DOT;
        found = 1;
        rc = vb_engine_attach(e2, &other, &found, &err);
        ok(rc == VB_OK && found == 0, "hnswlib: attach with another metric finds nothing");
        vb_conn_close(&c2);
        vb_engine_close(&e2);
    }

    /* Several threads on their own connections: the same answers as one. */
    {
        enum { T = 4 };
        search_job jobs[T];
        pthread_t th[T];
        for (int t = 0; t < T; t++) {
            jobs[t] = (search_job){e, qs, NQ, D, NULL, VB_ERROR};
            pthread_create(&th[t], NULL, search_thread, &jobs[t]);
        }
        int same = 1;
        for (int t = 0; t < T; t++) {
            pthread_join(th[t], NULL);
            same &= jobs[t].rc == VB_OK && jobs[t].answers &&
                    memcmp(jobs[t].answers, before, NQ * K * sizeof *before) == 0;
            free(jobs[t].answers);
        }
        ok(same, "hnswlib: %d threads searching at once give the single-threaded answers", T);
    }
    free(before);
    free(before_f);

    /* Churn: remove every 10th id, insert them back, remove them again, fill the slots with new ids. */
    int64_t rm[500];
    for (int i = 0; i < 500; i++) {
        rm[i] = i * 10;
        cp.alive[i * 10] = 0;
    }
    is_int(vb_conn_remove(c, rm, 500, &err), VB_OK, "hnswlib: remove 500 rows");
    is_int(vb_conn_remove(c, rm, 500, &err), VB_OK, "hnswlib: removing them again is not an error");
    bad = 0;
    double rr = recall_of(c, &cp, qs, NQ, -1, &bad);
    is_int(bad, 0, "hnswlib: removed ids never returned");
    ok(rr >= 0.95, "hnswlib: recall after remove (%.4f)", rr);
    vb_engine_sizes(e, &sz, &err);
    is_int(sz.rows, 4500, "hnswlib: sizes after remove");

    float *rv = malloc(500 * D * sizeof *rv);
    int32_t rt[500];
    for (int i = 0; i < 500; i++) {
        memcpy(rv + i * D, cp.vecs + rm[i] * D, D * sizeof *rv);
        rt[i] = cp.tags[rm[i]];
        cp.alive[rm[i]] = 1;
    }
    is_int(vb_conn_insert(c, rm, rv, rt, NULL, 500, &err), VB_OK, "hnswlib: insert the removed rows again");
    vb_engine_sizes(e, &sz, &err);
    is_int(sz.rows, (long long)N, "hnswlib: every row live again");
    bad = 0;
    double ri = recall_of(c, &cp, qs, NQ, -1, &bad);
    ok(bad == 0 && ri >= 0.95, "hnswlib: recall after reinsert (%.4f), no bad ids", ri);
    int self = 0;
    for (int i = 0; i < 500; i++) {
        vb_conn_search(c, rv + i * D, 1, NULL, one, &n, &err);
        self += n == 1 && one[0] == rm[i];
    }
    ok(self >= 495, "hnswlib: a reinserted vector finds itself (%d of 500)", self);

    for (int i = 0; i < 500; i++) cp.alive[rm[i]] = 0;
    vb_conn_remove(c, rm, 500, &err);
    bad = 0;
    recall_of(c, &cp, qs, NQ, -1, &bad);
    vb_engine_sizes(e, &sz, &err);
    ok(bad == 0 && sz.rows == 4500, "hnswlib: removed again: never returned, %lld rows", (long long)sz.rows);

    /* 1000 new ids take the 500 freed slots and 500 new ones; then the 500 removed ids come back once more,
     * now without their old slots (new ids took them): 6000 rows fit the 6000 slots only because of reuse. */
    for (size_t i = N; i < CAP; i++) cp.alive[i] = 1;
    is_int(vb_conn_insert(c, cp.ids + N, cp.vecs + N * D, cp.tags + N, NULL, CAP - N, &err), VB_OK,
           "hnswlib: insert 1000 new ids into 500 freed and 500 unused slots");
    for (int i = 0; i < 500; i++) cp.alive[rm[i]] = 1;
    is_int(vb_conn_insert(c, rm, rv, rt, NULL, 500, &err), VB_OK, "hnswlib: the removed ids again, into the last slots");
    vb_engine_sizes(e, &sz, &err);
    is_int(sz.rows, (long long)CAP, "hnswlib: 6000 live rows in 6000 slots");
    bad = 0;
    double rn = recall_of(c, &cp, qs, NQ, -1, &bad);
    ok(bad == 0 && rn >= 0.95, "hnswlib: recall over new and reinserted rows (%.4f), no bad ids", rn);
    self = 0;
    for (size_t i = 0; i < CAP; i += 10) {
        vb_conn_search(c, cp.vecs + i * D, 1, NULL, one, &n, &err);
        self += n == 1 && one[0] == (int64_t)i;
    }
    ok(self >= 590, "hnswlib: new and reinserted vectors find themselves (%d of 600)", self);

    /* Update in place: a live id given a new vector answers for the new one. */
    int64_t upd = 1;
    float *nv = malloc(D * sizeof *nv);
    for (size_t j = 0; j < D; j++) nv[j] = cp.vecs[2 * D + j] + 0.001f;
    is_int(vb_conn_insert(c, &upd, nv, cp.tags + 1, NULL, 1, &err), VB_OK, "hnswlib: insert of a live id updates it");
    memcpy(cp.vecs + D, nv, D * sizeof *nv);
    vb_conn_search(c, nv, 2, NULL, one, &n, &err);
    ok(n == 2 && (one[0] == 1 || one[1] == 1), "hnswlib: the updated row answers for its new vector");
    vb_engine_sizes(e, &sz, &err);
    is_int(sz.rows, (long long)CAP, "hnswlib: an update adds no row");
    free(nv);

    int64_t extra = (int64_t)CAP;
    is_int(vb_conn_insert(c, &extra, cp.vecs, cp.tags, NULL, 1, &err), VB_ERROR, "hnswlib: id at capacity refused");
    contains(err.message, "6000", "and the message names it");
    contains(err.message, "capacity", "and says why");
    free(rv);
    vb_conn_close(&c);
    vb_engine_close(&e);
    free(qs);
    corpus_free(&cp);
}

/* Angular and dot go through inner product (angular on normalised vectors); several connections load at once. */
static void test_hnswlib_metric(vb_metric metric) {
    const size_t N = 2000, D = 24, NQ = 100;
    const char *mn = vb_metric_name(metric);
    vb_error err;
    vb_engine *e = NULL;
    vb_conn *c = NULL;
    corpus cp = corpus_new(N, D, metric);
    float *qs = clustered(NQ, D, 20);
    /* Scale rows unevenly: angular must not care, dot must. */
    for (size_t i = 0; i < N; i++)
        for (size_t j = 0; j < D; j++) cp.vecs[i * D + j] *= (float)(1.0 + (double)(i % 7));
    vb_table_spec spec = spec_of(&cp, N);
    vb_engine_open("hnswlib", NULL, &e, &err);
    vb_engine_create(e, &spec, &err);
    load_job jobs[2] = {{e, &cp, 0, N / 2, VB_ERROR}, {e, &cp, N / 2, N, VB_ERROR}};
    pthread_t th[2];
    for (int t = 0; t < 2; t++) pthread_create(&th[t], NULL, load_thread, &jobs[t]);
    for (int t = 0; t < 2; t++) pthread_join(th[t], NULL);
    ok(jobs[0].rc == VB_OK && jobs[1].rc == VB_OK, "hnswlib %s: two connections load at once", mn);
    vb_engine_connect(e, &c, &err);
    set_ef(c, 200);
    int bad = 0;
    double r = recall_of(c, &cp, qs, NQ, -1, &bad);
    ok(r >= 0.95, "hnswlib %s: recall at ef 200 (%.4f)", mn, r);
    is_int(bad, 0, nm("hnswlib %s: no bad ids", mn));
    vb_conn_close(&c);
    vb_engine_close(&e);
    free(qs);
    corpus_free(&cp);
}

static void test_hnswlib_errors(void) {
    vb_error err;
    vb_engine *e = NULL;
    vb_conn *c = NULL;
    vb_engine_open("hnswlib", NULL, &e, &err);
    vb_engine_connect(e, &c, &err);
    float q[4] = {0};
    int64_t ids[K];
    int n;
    is_int(vb_conn_search(c, q, K, NULL, ids, &n, &err), VB_ERROR, "hnswlib: search before create fails");
    contains(err.message, "create or attach", "and says what is missing");
    is_int(vb_engine_persist(e, &err), VB_ERROR, "hnswlib: persist before create fails");
    vb_table_spec spec = {4, VB_METRIC_EUCLIDEAN, 10, 16, 200, 0};
    vb_engine_create(e, &spec, &err);
    is_int(vb_engine_persist(e, &err), VB_ERROR, "hnswlib: persist without data_dir fails");
    contains(err.message, "data_dir", "and says why");
    int found = 1;
    ok(vb_engine_attach(e, &spec, &found, &err) == VB_OK && found == 0,
       "hnswlib: attach without data_dir finds nothing");
    is_int(vb_conn_search(c, q, K, NULL, ids, &n, &err), VB_OK, "hnswlib: search on an empty index");
    is_int(n, 0, "hnswlib: returns nothing");
    int64_t neg = -1;
    is_int(vb_conn_load(c, &neg, q, NULL, NULL, 1, &err), VB_ERROR, "hnswlib: negative id refused");
    vb_search_params sp = {0};
    is_int(vb_conn_set_search(c, &sp, &err), VB_ERROR, "hnswlib: ef 0 refused");
    vb_conn_close(&c);
    vb_engine_close(&e);
}

/* ---- the engine contract ------------------------------------------------------------------------------ */

static void conf_check(void *arg, int pass, const char *name) {
    (void)arg;
    ok(pass, "%s", name);
}

static void conf_note(void *arg, const char *text) {
    (void)arg;
    printf("#   %s\n", text);
}

/* The conformance script (engines/conformance.c) on every registered engine that runs in process, for two
 * metrics; the server engines are listed with where they are checked, so a new engine is never left out. */
static void test_contract(void) {
    const char *names[64];
    size_t n = vb_engine_list(names, 64);
    vb_conformance_report rep = {conf_check, conf_note, NULL};
    for (size_t i = 0; i < n && i < 64; i++) {
        const vb_engine_ops *ops = vb_engine_find(names[i]);
        if (!(ops->flags & VB_ENGINE_EMBEDDED) && !(ops->flags & VB_ENGINE_STUB)) {
            printf("# %s: a server engine, its contract is checked by tests/e2e/63-conformance.t against a real "
                   "server (or listed there with why it cannot run here)\n", names[i]);
            continue;
        }
        vb_metric metrics[] = {VB_METRIC_EUCLIDEAN, VB_METRIC_ANGULAR};
        for (int m = 0; m < 2; m++) {
            vb_conformance_opts o = {.engine = names[i], .metric = metrics[m]};
            int failed = vb_conformance_run(&o, &rep);
            is_int(failed, 0, nm("%s (%s): the conformance script passes", names[i], vb_metric_name(metrics[m])));
            if (ops->flags & VB_ENGINE_STUB) break;
        }
    }
}

int main(void) {
    char dir[] = "/tmp/vb-test-engines-XXXXXX";
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    test_registry();
    test_exact_metric(VB_METRIC_EUCLIDEAN);
    test_exact_metric(VB_METRIC_ANGULAR);
    test_exact_metric(VB_METRIC_DOT);
    test_exact_misc(dir);
    test_hnswlib_errors();
    test_hnswlib_main(dir);
    test_hnswlib_metric(VB_METRIC_ANGULAR);
    test_hnswlib_metric(VB_METRIC_DOT);
    test_contract();

    char path[256];
    const char *files[] = {"exact.rows", "hnswlib.index", "hnswlib.meta"};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, files[i]);
        unlink(path);
    }
    rmdir(dir);
    return done_testing();
}
