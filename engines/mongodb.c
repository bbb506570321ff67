/* The "mongodb" engine: Percona Search for MongoDB (mongod as a single-node replica set plus its search process)
 * through libmongoc (Debian's 1.23). WRITTEN FROM THE DOCUMENTATION: no MongoDB server can run here (none in
 * Debian, no network), so every document it sends is built by engines/mongodb_docs.c and compared with the
 * documentation's examples by tests/unit/test_mongodb.c, and the replies it parses are the documentation's
 * shapes. `vbench engines` says so.
 *
 * Rows are documents {_id: id, tag: t, tag2: t2, label: l, class: c, v: BinData(9, float32 vector)} in DATABASE.COLLECTION, loaded with
 * insertMany (unordered) on each loader's own client. build creates the vectorSearch index (createSearchIndexes:
 * vector field v with numDimensions, similarity and quantization scalar|none; filter fields tag, tag2, label, class and _id) and polls
 * $listSearchIndexes until it is READY and queryable: the search process builds it asynchronously, and that wait
 * is the build time. A search is the aggregation [{$vectorSearch: {index, path, queryVector, numCandidates,
 * limit: k, filter: {tag: {$lt: N}} (or {label: {$eq: L}}, {$and: [...]})}}, {$project: {_id: 1}}]; numCandidates is the profile parameter
 * num_candidates, by default 20 x k as MongoDB advises, and ef_search (set_search) overrides it when the profile
 * sweeps it (num_candidates_from: ef_search, the default). Churn: deleteMany {_id: {$in}} and replaceOne upserts;
 * since the search index follows the collection asynchronously, both then wait until an exact $vectorSearch
 * restricted to the ids written ({_id: {$in}} is a filter field for this) answers with all of them (insert) or
 * none (remove). Sizes: collStats (size of the documents, count); the search index lives in the search process's
 * own files, which the recipe's sizes measure on disk, so index_bytes is -1 here.
 *
 * Errors: the server's words plus what they mean (mongodb_docs.c: no search on this mongod, the search process
 * unreachable, quantization not supported, no such index, index not READY). Network errors and "not primary"
 * are VB_RETRY. */
#include <mongoc/mongoc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engines/engine.h"
#include "datasets/dataset.h"
#include "engines/mongodb_docs.h"

#define MG_DOMAIN "mongodb"
#define MG_POLL_MS 500

static const char *const mg_params[] = {"uri", "database", "collection", "index", "quantization", "num_candidates",
                                        "num_candidates_from", "insert_batch", "catch_up_timeout_s", NULL};

typedef struct mg_state {
    char *uri, database[64], collection[64], index[64], quantization[8];
    long num_candidates;         /* 0: 20 x k */
    int from_ef;                 /* ef_search sets numCandidates */
    long insert_batch, catch_up_timeout_s;
    long io_timeout_s;           /* socketTimeoutMS and connectTimeoutMS of every client; 0: the driver's */
    size_t dim, capacity;
    vb_metric metric;
    int ready;
    pthread_mutex_t lock;        /* the administrative client */
    mongoc_client_t *admin;
} mg_state;

typedef struct mg_conn {
    mg_state *s;
    mongoc_client_t *client;
    mongoc_collection_t *coll;
    int ef_search;
} mg_conn;

static pthread_once_t mg_once = PTHREAD_ONCE_INIT;
static void mg_init(void) { mongoc_init(); }   /* once per process; mongoc_cleanup is left to exit */

static int mg_fail(const bson_error_t *e, vb_error *err, const char *what) {
    char line[1024];
    int transient = 0;
    vb_mongo_explain_error(e->domain, e->code, e->message, what, line, sizeof line, &transient);
    vb_error_set(err, MG_DOMAIN, (int)e->code, "%s", line);
    return transient ? VB_RETRY : VB_ERROR;
}

static void sleep_ms(int ms) {
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* ---- parameters and clients -------------------------------------------------------------------------- */

static void mg_close(void *state) {
    mg_state *s = state;
    if (!s) return;
    if (s->admin) mongoc_client_destroy(s->admin);
    pthread_mutex_destroy(&s->lock);
    free(s->uri);
    free(s);
}

static int name_ok(const char *v) {
    size_t n = strlen(v);
    return n > 0 && n < 64 && strspn(v, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") == n;
}

static int mg_open(const vb_engine_config *cfg, void **state, vb_error *err) {
    const vb_kv *kv = cfg->params;
    size_t n = cfg->n_params;
    if (vb_kv_check_keys(kv, n, mg_params, "mongodb engine", err) != VB_OK) return VB_ERROR;
    pthread_once(&mg_once, mg_init);
    mg_state *s = calloc(1, sizeof *s);
    if (!s) return vb_error_set(err, MG_DOMAIN, 1, "mongodb: out of memory");
    pthread_mutex_init(&s->lock, NULL);
    s->uri = strdup(vb_kv_get(kv, n, "uri", "mongodb://127.0.0.1:27017/?directConnection=true"));
    const char *names[3][2] = {{"database", "vbench"}, {"collection", "vbench_items"}, {"index", "vbench_vector"}};
    char *dst[3] = {s->database, s->collection, s->index};
    for (int i = 0; i < 3; i++) {
        const char *v = vb_kv_get(kv, n, names[i][0], names[i][1]);
        if (!name_ok(v)) {
            vb_error_set(err, "config", 1, "mongodb: %s '%s': use 1..63 letters, digits, _ or -", names[i][0], v);
            goto fail;
        }
        snprintf(dst[i], 64, "%s", v);
    }
    const char *q = vb_kv_get(kv, n, "quantization", "scalar");
    if (strcmp(q, "scalar") && strcmp(q, "none")) {
        vb_error_set(err, "config", 1, "mongodb: quantization '%s': expected scalar or none", q);
        goto fail;
    }
    snprintf(s->quantization, sizeof s->quantization, "%s", q);
    const char *from = vb_kv_get(kv, n, "num_candidates_from", "ef_search");
    if (strcmp(from, "ef_search") && strcmp(from, "fixed")) {
        vb_error_set(err, "config", 1, "mongodb: num_candidates_from '%s': expected ef_search or fixed", from);
        goto fail;
    }
    s->from_ef = strcmp(from, "ef_search") == 0;
    if (vb_kv_get_long(kv, n, "num_candidates", 0, 1, 10000, &s->num_candidates, err) ||
        vb_kv_get_long(kv, n, "insert_batch", 1000, 1, 100000, &s->insert_batch, err) ||
        vb_kv_get_long(kv, n, "catch_up_timeout_s", 600, 1, 86400, &s->catch_up_timeout_s, err)) {
        vb_error_prefix(err, "mongodb");
        goto fail;
    }
    bson_error_t be;
    mongoc_uri_t *u = mongoc_uri_new_with_error(s->uri, &be);
    if (!u) {
        vb_error_set(err, "config", 1, "mongodb: uri '%s': %s", s->uri, be.message);
        goto fail;
    }
    mongoc_uri_destroy(u);
    s->io_timeout_s = cfg->io_timeout_s;
    *state = s;
    return VB_OK;
fail:
    mg_close(s);
    return VB_ERROR;
}

static int new_client(mg_state *s, mongoc_client_t **out, vb_error *err) {
    bson_error_t be;
    mongoc_uri_t *u = mongoc_uri_new_with_error(s->uri, &be);
    if (u && s->io_timeout_s > 0) {   /* the phase's bound on every call (limits.phase_timeout_s) */
        int32_t ms = (int32_t)(s->io_timeout_s < 2000000 ? s->io_timeout_s * 1000 : 2000000000);
        mongoc_uri_set_option_as_int32(u, MONGOC_URI_SOCKETTIMEOUTMS, ms);
        mongoc_uri_set_option_as_int32(u, MONGOC_URI_CONNECTTIMEOUTMS, ms < 60000 ? ms : 60000);
        mongoc_uri_set_option_as_int32(u, MONGOC_URI_SERVERSELECTIONTIMEOUTMS, ms < 60000 ? ms : 60000);
    }
    mongoc_client_t *c = u ? mongoc_client_new_from_uri_with_error(u, &be) : NULL;
    if (u) mongoc_uri_destroy(u);
    if (!c) return mg_fail(&be, err, "connecting");
    mongoc_client_set_appname(c, "vbench");
    *out = c;
    return VB_OK;
}

/* A command on the admin client (database s->database), reply into *reply when non-NULL. */
static int admin_command(mg_state *s, const bson_t *cmd, bson_t *reply, vb_error *err, const char *what) {
    pthread_mutex_lock(&s->lock);
    int rc = VB_OK;
    if (!s->admin) rc = new_client(s, &s->admin, err);
    if (rc == VB_OK) {
        bson_error_t be;
        bson_t local;
        if (!mongoc_client_command_simple(s->admin, s->database, cmd, NULL, reply ? reply : &local, &be))
            rc = mg_fail(&be, err, what);
        if (!reply) bson_destroy(&local);
    }
    pthread_mutex_unlock(&s->lock);
    return rc;
}

/* Runs an aggregation pipeline on the admin client; each document goes to fn (stop when it returns 0). */
static int admin_aggregate(mg_state *s, const bson_t *pipeline, int (*fn)(const bson_t *doc, void *arg), void *arg,
                           vb_error *err, const char *what) {
    pthread_mutex_lock(&s->lock);
    int rc = VB_OK;
    if (!s->admin) rc = new_client(s, &s->admin, err);
    if (rc == VB_OK) {
        mongoc_collection_t *coll = mongoc_client_get_collection(s->admin, s->database, s->collection);
        mongoc_cursor_t *cur = mongoc_collection_aggregate(coll, MONGOC_QUERY_NONE, pipeline, NULL, NULL);
        const bson_t *doc;
        while (mongoc_cursor_next(cur, &doc) && fn(doc, arg)) {}
        bson_error_t be;
        if (mongoc_cursor_error(cur, &be)) rc = mg_fail(&be, err, what);
        mongoc_cursor_destroy(cur);
        mongoc_collection_destroy(coll);
    }
    pthread_mutex_unlock(&s->lock);
    return rc;
}

static void mg_disconnect(void *conn) {
    mg_conn *c = conn;
    if (!c) return;
    if (c->coll) mongoc_collection_destroy(c->coll);
    if (c->client) mongoc_client_destroy(c->client);
    free(c);
}

static int mg_connect(void *state, void **conn, vb_error *err) {
    mg_state *s = state;
    mg_conn *c = calloc(1, sizeof *c);
    if (!c) return vb_error_set(err, MG_DOMAIN, 1, "mongodb: out of memory");
    c->s = s;
    int rc = new_client(s, &c->client, err);
    if (rc == VB_OK) {
        /* mongoc connects lazily: a ping makes an unreachable server VB_RETRY here, as the contract wants. */
        bson_t ping = BSON_INITIALIZER;
        bson_error_t be;
        BSON_APPEND_INT32(&ping, "ping", 1);
        if (!mongoc_client_command_simple(c->client, "admin", &ping, NULL, NULL, &be)) rc = mg_fail(&be, err, "ping");
        bson_destroy(&ping);
    }
    if (rc != VB_OK) {
        mg_disconnect(c);
        return rc;
    }
    c->coll = mongoc_client_get_collection(c->client, s->database, s->collection);
    *conn = c;
    return VB_OK;
}

/* ---- the collection and its search index -------------------------------------------------------------- */

static int check_spec(mg_state *s, const vb_table_spec *spec, vb_error *err) {
    if (!vb_mongo_similarity(spec->metric))
        return vb_error_set(err, MG_DOMAIN, 1, "mongodb: metric %d is not supported", (int)spec->metric);
    if (spec->dim == 0 || spec->dim > 8192)
        return vb_error_set(err, MG_DOMAIN, 1, "mongodb: dimension %zu is outside vector search's 1..8192", spec->dim);
    s->dim = spec->dim;
    s->metric = spec->metric;
    s->capacity = spec->capacity;
    return VB_OK;
}

/* Drops the collection (its search indexes go with it) and makes it again, empty. */
static int mg_create(void *state, const vb_table_spec *spec, vb_error *err) {
    mg_state *s = state;
    if (check_spec(s, spec, err) != VB_OK) return VB_ERROR;
    s->ready = 0;
    bson_t cmd = BSON_INITIALIZER;
    BSON_APPEND_UTF8(&cmd, "drop", s->collection);
    int rc = admin_command(s, &cmd, NULL, err, "drop");
    bson_destroy(&cmd);
    if (rc == VB_ERROR && strstr(err->message, "ns not found")) rc = VB_OK;   /* nothing to drop */
    if (rc != VB_OK) return rc;
    bson_init(&cmd);
    BSON_APPEND_UTF8(&cmd, "create", s->collection);
    rc = admin_command(s, &cmd, NULL, err, "create");
    bson_destroy(&cmd);
    s->ready = rc == VB_OK;
    return rc;
}

typedef struct index_arg {
    const char *index;
    vb_mongo_index_state state;
    char status[32], message[512];
    int seen;
} index_arg;

static int index_doc(const bson_t *doc, void *arg) {
    index_arg *a = arg;
    if (vb_mongo_index_doc(doc, a->index, &a->state, a->status, sizeof a->status, a->message, sizeof a->message))
        a->seen = 1;
    return !a->seen;
}

static int index_state(mg_state *s, index_arg *a, vb_error *err) {
    memset(a, 0, sizeof *a);
    a->index = s->index;
    bson_t pipeline = BSON_INITIALIZER;
    vb_mongo_list_indexes_pipeline(&pipeline, s->index);
    int rc = admin_aggregate(s, &pipeline, index_doc, a, err, "$listSearchIndexes");
    bson_destroy(&pipeline);
    if (!a->seen) a->state = VB_MONGO_INDEX_MISSING;
    return rc;
}

/* Polls $listSearchIndexes until the index is READY and queryable; FAILED or missing is an error. */
static int wait_ready(mg_state *s, vb_error *err) {
    for (;;) {
        index_arg a;
        int rc = index_state(s, &a, err);
        if (rc != VB_OK) return rc;
        switch (a.state) {
        case VB_MONGO_INDEX_READY: return VB_OK;
        case VB_MONGO_INDEX_FAILED:
            return vb_error_set(err, MG_DOMAIN, 1, "mongodb: search index %s: status FAILED: %s", s->index,
                                a.message[0] ? a.message : "(no message)");
        case VB_MONGO_INDEX_MISSING:
            return vb_error_set(err, MG_DOMAIN, 1, "mongodb: search index %s does not exist (%s): run the build "
                                "phase (createSearchIndexes) first", s->index, a.status);
        case VB_MONGO_INDEX_STALE:
            return vb_error_set(err, MG_DOMAIN, 1, "mongodb: search index %s is STALE: the search process stopped "
                                "following the collection (%s)", s->index, a.message);
        case VB_MONGO_INDEX_BUILDING: break;
        }
        sleep_ms(MG_POLL_MS);
    }
}

/* createSearchIndexes, then the wait until READY: the asynchronous build is the build time. */
static int mg_build(void *state, vb_error *err) {
    mg_state *s = state;
    if (!s->ready) return vb_error_set(err, MG_DOMAIN, 1, "mongodb: build before create or attach");
    bson_t cmd = BSON_INITIALIZER;
    vb_mongo_create_index_cmd(&cmd, s->collection, s->index, s->dim, s->metric, s->quantization);
    int rc = admin_command(s, &cmd, NULL, err, "createSearchIndexes");
    bson_destroy(&cmd);
    return rc == VB_OK ? wait_ready(s, err) : rc;
}

static int mg_maintain(void *state, vb_error *err) { return wait_ready(state, err); }

/* collStats: the documents' size and count; the search index is in the search process's files (the recipe's
 * sizes measure them), so index_bytes stays -1. */
static int mg_sizes(void *state, vb_sizes *out, vb_error *err) {
    mg_state *s = state;
    out->index_bytes = out->table_bytes = out->rows = -1;
    bson_t cmd = BSON_INITIALIZER, reply;
    BSON_APPEND_UTF8(&cmd, "collStats", s->collection);
    int rc = admin_command(s, &cmd, &reply, err, "collStats");
    bson_destroy(&cmd);
    if (rc == VB_OK) {
        bson_iter_t it;
        if (bson_iter_init_find(&it, &reply, "size") && BSON_ITER_HOLDS_NUMBER(&it)) out->table_bytes = bson_iter_as_int64(&it);
        if (bson_iter_init_find(&it, &reply, "count") && BSON_ITER_HOLDS_NUMBER(&it)) out->rows = bson_iter_as_int64(&it);
    }
    bson_destroy(&reply);
    return rc;
}

static int mg_version(void *state, char *buf, size_t len, vb_error *err) {
    mg_state *s = state;
    bson_t cmd = BSON_INITIALIZER, reply;
    BSON_APPEND_INT32(&cmd, "buildInfo", 1);
    int rc = admin_command(s, &cmd, &reply, err, "buildInfo");
    bson_destroy(&cmd);
    if (rc == VB_OK) {
        bson_iter_t it;
        const char *v = bson_iter_init_find(&it, &reply, "version") && BSON_ITER_HOLDS_UTF8(&it) ? bson_iter_utf8(&it, NULL) : "unknown";
        snprintf(buf, len, "MongoDB %s", v);
    }
    bson_destroy(&reply);
    return rc;
}

/* ---- writes ------------------------------------------------------------------------------------------ */

static int mg_load(void *conn, const int64_t *ids, const float *vecs, const int32_t *tags, const int32_t *classes,
                   size_t n, vb_error *err) {
    mg_conn *c = conn;
    mg_state *s = c->s;
    if (!s->ready) return vb_error_set(err, MG_DOMAIN, 1, "mongodb: no collection: create first");
    int rc = VB_OK;
    for (size_t at = 0; rc == VB_OK && at < n; at += (size_t)s->insert_batch) {
        size_t m = n - at < (size_t)s->insert_batch ? n - at : (size_t)s->insert_batch;
        bson_t *docs = bson_malloc(m * sizeof *docs);
        const bson_t **ptrs = bson_malloc(m * sizeof *ptrs);
        for (size_t i = 0; i < m; i++) {
            bson_init(&docs[i]);
            int32_t attrs[3] = {tags ? tags[at + i] : 0, vb_dataset_tag2(ids[at + i]), vb_dataset_label(ids[at + i])};
            vb_mongo_row(&docs[i], ids[at + i], vecs + (at + i) * s->dim, s->dim, tags ? attrs : NULL,
                         classes ? classes + at + i : NULL);
            ptrs[i] = &docs[i];
        }
        bson_t opts = BSON_INITIALIZER;
        BSON_APPEND_BOOL(&opts, "ordered", false);
        bson_error_t be;
        if (!mongoc_collection_insert_many(c->coll, ptrs, m, &opts, NULL, &be)) rc = mg_fail(&be, err, "insertMany");
        bson_destroy(&opts);
        for (size_t i = 0; i < m; i++) bson_destroy(&docs[i]);
        bson_free(docs);
        bson_free(ptrs);
    }
    return rc;
}

typedef struct count_arg {
    size_t n;
} count_arg;

static int count_doc(const bson_t *doc, void *arg) {
    (void)doc;
    ((count_arg *)arg)->n++;
    return 1;
}

/* Until the search index answers an exact query restricted to ids with want of them (n after an insert, 0 after
 * a remove). The query vector is any vector (the first row's for an insert, ones otherwise): the filter decides. */
static int wait_caught_up(mg_conn *c, const int64_t *ids, const float *q, size_t n, size_t want, vb_error *err) {
    mg_state *s = c->s;
    float *ones = NULL;
    if (!q) {
        ones = malloc(s->dim * sizeof *ones);
        if (!ones) return vb_error_set(err, MG_DOMAIN, 1, "mongodb: out of memory");
        for (size_t i = 0; i < s->dim; i++) ones[i] = 1.0f;
        q = ones;
    }
    int rc = VB_OK;
    struct timespec t0, now;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (;;) {
        bson_t pipeline = BSON_INITIALIZER;
        vb_mongo_probe_pipeline(&pipeline, s->index, q, s->dim, ids, n);
        count_arg a = {0};
        rc = admin_aggregate(s, &pipeline, count_doc, &a, err, "$vectorSearch (catch-up probe)");
        bson_destroy(&pipeline);
        if (rc != VB_OK || a.n == want) break;
        clock_gettime(CLOCK_MONOTONIC, &now);
        if (now.tv_sec - t0.tv_sec > s->catch_up_timeout_s) {
            rc = vb_error_set(err, MG_DOMAIN, 1, "mongodb: the search index did not catch up with %zu written rows "
                              "within catch_up_timeout_s = %ld s (it answers for %zu, want %zu)", n,
                              s->catch_up_timeout_s, a.n, want);
            break;
        }
        sleep_ms(100);
    }
    free(ones);
    return rc;
}

/* replaceOne {_id} upsert per row, one unordered bulk: live ids are replaced (tag and vector), others added. */
static int mg_insert(void *conn, const int64_t *ids, const float *vecs, const int32_t *tags, const int32_t *classes,
                     size_t n, vb_error *err) {
    mg_conn *c = conn;
    mg_state *s = c->s;
    if (!s->ready) return vb_error_set(err, MG_DOMAIN, 1, "mongodb: no collection: create first");
    if (n == 0) return VB_OK;
    bson_t bopts = BSON_INITIALIZER, upsert = BSON_INITIALIZER;
    BSON_APPEND_BOOL(&bopts, "ordered", false);
    BSON_APPEND_BOOL(&upsert, "upsert", true);
    mongoc_bulk_operation_t *bulk = mongoc_collection_create_bulk_operation_with_opts(c->coll, &bopts);
    bson_error_t be;
    int rc = VB_OK;
    for (size_t i = 0; rc == VB_OK && i < n; i++) {
        bson_t sel = BSON_INITIALIZER, doc = BSON_INITIALIZER;
        vb_mongo_id_selector(&sel, ids[i]);
        int32_t attrs[3] = {tags ? tags[i] : 0, vb_dataset_tag2(ids[i]), vb_dataset_label(ids[i])};
        vb_mongo_row(&doc, ids[i], vecs + i * s->dim, s->dim, tags ? attrs : NULL, classes ? classes + i : NULL);
        if (!mongoc_bulk_operation_replace_one_with_opts(bulk, &sel, &doc, &upsert, &be)) rc = mg_fail(&be, err, "replaceOne");
        bson_destroy(&sel);
        bson_destroy(&doc);
    }
    if (rc == VB_OK && !mongoc_bulk_operation_execute(bulk, NULL, &be)) rc = mg_fail(&be, err, "bulk upsert");
    mongoc_bulk_operation_destroy(bulk);
    bson_destroy(&bopts);
    bson_destroy(&upsert);
    return rc == VB_OK ? wait_caught_up(c, ids, vecs, n, n, err) : rc;
}

static int mg_remove(void *conn, const int64_t *ids, size_t n, vb_error *err) {
    mg_conn *c = conn;
    if (!c->s->ready) return vb_error_set(err, MG_DOMAIN, 1, "mongodb: no collection: create first");
    if (n == 0) return VB_OK;
    bson_t filter = BSON_INITIALIZER;
    vb_mongo_ids_filter(&filter, ids, n);
    bson_error_t be;
    int rc = mongoc_collection_delete_many(c->coll, &filter, NULL, NULL, &be) ? VB_OK : mg_fail(&be, err, "deleteMany");
    bson_destroy(&filter);
    return rc == VB_OK ? wait_caught_up(c, ids, NULL, n, 0, err) : rc;
}

/* ---- search ------------------------------------------------------------------------------------------ */

static int mg_set_search(void *conn, const vb_search_params *p, vb_error *err) {
    mg_conn *c = conn;
    if (p->ef_search < 1 || p->ef_search > 10000)
        return vb_error_set(err, MG_DOMAIN, 1, "mongodb: ef_search (numCandidates) %d is outside 1..10000", p->ef_search);
    c->ef_search = p->ef_search;
    return VB_OK;
}

/* numCandidates: ef_search when the profile sweeps it (never below k), else num_candidates, else 20 x k. */
static int num_candidates(const mg_conn *c, int k) {
    const mg_state *s = c->s;
    long n = s->from_ef && c->ef_search > 0 ? c->ef_search : s->num_candidates ? s->num_candidates : 20L * k;
    if (n < k) n = k;
    return n > 10000 ? 10000 : (int)n;
}

static int mg_search(void *conn, const float *query, int k, const vb_filter *filter, int64_t *ids_out, int *n_out,
                     vb_error *err) {
    mg_conn *c = conn;
    mg_state *s = c->s;
    *n_out = 0;
    if (k <= 0) return VB_OK;
    if (!s->ready) return vb_error_set(err, MG_DOMAIN, 1, "mongodb: no collection: create first");
    if (filter && (unsigned)filter->kind >= VB_FILTER_KINDS)
        return vb_error_set(err, MG_DOMAIN, 1, "mongodb: unknown filter kind %d", (int)filter->kind);
    bson_t pipeline = BSON_INITIALIZER;
    vb_mongo_search_pipeline(&pipeline, s->index, query, s->dim, k, num_candidates(c, k), filter);
    mongoc_cursor_t *cur = mongoc_collection_aggregate(c->coll, MONGOC_QUERY_NONE, &pipeline, NULL, NULL);
    const bson_t *doc;
    int n = 0;
    while (n < k && mongoc_cursor_next(cur, &doc))
        if (vb_mongo_result_id(doc, &ids_out[n])) n++;
    bson_error_t be;
    int rc = mongoc_cursor_error(cur, &be) ? mg_fail(&be, err, "$vectorSearch") : VB_OK;
    mongoc_cursor_destroy(cur);
    bson_destroy(&pipeline);
    *n_out = rc == VB_OK ? n : 0;
    return rc;
}

const vb_engine_ops vb_engine_mongodb = {
    .name = "mongodb",
    .description = "Percona Search for MongoDB ($vectorSearch, scalar quantization) over libmongoc (written from "
                   "the documentation; not verified against a server here)",
    .flags = VB_ENGINE_FILTER | VB_ENGINE_FILTER_EQ | VB_ENGINE_FILTER_AND | VB_ENGINE_FILTER_CLASS,
    .param_names = mg_params,
    .open = mg_open,
    .close = mg_close,
    .create = mg_create,
    .connect = mg_connect,
    .disconnect = mg_disconnect,
    .load = mg_load,
    .set_search = mg_set_search,
    .search = mg_search,
    .version = mg_version,
    .build = mg_build,
    .remove = mg_remove,
    .insert = mg_insert,
    .maintain = mg_maintain,
    .maintenance = "wait until the search index is ready",
    .sizes = mg_sizes,
};
