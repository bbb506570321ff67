/* The mongodb adapter without a server (engines/mongodb_docs.c): every document it sends, as canonical extended
 * JSON through libbson, compared with the shape of MongoDB's documentation examples (the documentation's field
 * names and nesting, with vbench's names and values put in); the BSON binary vector against the BSON spec's own
 * float32 test vector; replies shaped like the documentation's ($listSearchIndexes, aggregation results) parsed;
 * and server errors turned into messages that say what to do. No MongoDB can run here: these are the checks. */
#include <bson/bson.h>
#include <string.h>

#include "engines/engine.h"
#include "engines/mongodb_docs.h"
#include "tests/tap.h"

/* Canonical extended JSON of a document. */
static char *canon(const bson_t *b) { return bson_as_canonical_extended_json(b, NULL); }

/* The documentation's example (relaxed JSON text) through libbson, in canonical form: numbers that fit are
 * int32 there, as the adapter appends them (int64 is written {"$numberLong": ...} in the text). */
static char *canon_json(const char *json) {
    bson_error_t e;
    bson_t b;
    if (!bson_init_from_json(&b, json, -1, &e)) {
        printf("# bad JSON in the test: %s: %s\n", e.message, json);
        return bson_strdup("(bad JSON)");
    }
    char *s = canon(&b);
    bson_destroy(&b);
    return s;
}

static void same(const bson_t *got, const char *want_json, const char *name) {
    char *g = canon(got), *w = canon_json(want_json);
    if (!is_str(g, w, "%s", name)) printf("#   got:  %s\n#   want: %s\n", g, w);
    bson_free(g);
    bson_free(w);
}

int main(void) {
    /* ---- the vector: the BSON binary vector spec's "Simple Vector FLOAT32" case: [127.0, 7.0] is
     * 27 00 | 00 00 FE 42 | 00 00 E0 40 (dtype float32, padding 0, two little-endian floats) */
    float v2[2] = {127.0f, 7.0f};
    uint8_t buf[64];
    size_t n = vb_mongo_vector_bytes(v2, 2, buf);
    static const uint8_t spec_bytes[] = {0x27, 0x00, 0x00, 0x00, 0xFE, 0x42, 0x00, 0x00, 0xE0, 0x40};
    ok(n == sizeof spec_bytes && memcmp(buf, spec_bytes, n) == 0, "vector payload is the spec's bytes for [127.0, 7.0]");
    bson_t d = BSON_INITIALIZER;
    vb_mongo_append_vector(&d, "vector", v2, 2);
    same(&d, "{\"vector\": {\"$binary\": {\"base64\": \"JwAAAP5CAADgQA==\", \"subType\": \"09\"}}}",
         "vector: Binary subtype 9 (\"vector\"), as the spec's canonical extended JSON");
    bson_destroy(&d);
    float back[4];
    is_int(vb_mongo_vector_decode(spec_bytes, sizeof spec_bytes, back, 4), 2, "decode: dimension 2");
    ok(back[0] == 127.0f && back[1] == 7.0f, "decode: the same floats");
    static const uint8_t int8_vec[] = {0x03, 0x00, 0x7F, 0x07};
    is_int(vb_mongo_vector_decode(int8_vec, sizeof int8_vec, back, 4), -1, "decode: an int8 vector (dtype 0x03) is not float32");

    /* ---- rows: insertMany documents and the upsert's selector */
    float v3[3] = {1.0f, 2.0f, 3.0f};
    int32_t attrs[3] = {42, 17, 3};
    bson_t row = BSON_INITIALIZER;
    vb_mongo_row(&row, 7, v3, 3, attrs, NULL);
    same(&row, "{\"_id\": {\"$numberLong\": \"7\"}, \"tag\": 42, \"tag2\": 17, \"label\": 3, \"v\": {\"$binary\": "
               "{\"base64\": \"JwAAAIA/AAAAQAAAQEA=\", \"subType\": \"09\"}}}",
         "row: {_id: int64, tag, tag2, label: int32, v: BinData(9, float32)}");
    bson_destroy(&row);
    bson_init(&row);
    vb_mongo_row(&row, 8, v3, 3, NULL, NULL);
    same(&row, "{\"_id\": {\"$numberLong\": \"8\"}, \"v\": {\"$binary\": {\"base64\": \"JwAAAIA/AAAAQAAAQEA=\", "
               "\"subType\": \"09\"}}}",
         "row without a tag: no tag member (never passes a tag filter)");
    bson_destroy(&row);
    bson_init(&row);
    int32_t cls = 5;
    vb_mongo_row(&row, 9, v3, 3, attrs, &cls);
    same(&row, "{\"_id\": {\"$numberLong\": \"9\"}, \"tag\": 42, \"tag2\": 17, \"label\": 3, \"class\": 5, \"v\": "
               "{\"$binary\": {\"base64\": \"JwAAAIA/AAAAQAAAQEA=\", \"subType\": \"09\"}}}",
         "row with a class: class: int32 after the tag columns");
    bson_destroy(&row);
    bson_t sel = BSON_INITIALIZER;
    vb_mongo_id_selector(&sel, 9);
    same(&sel, "{\"_id\": {\"$numberLong\": \"9\"}}", "upsert selector {_id: id} (replaceOne, upsert: true)");
    bson_destroy(&sel);
    int64_t ids[3] = {1, 2, 3};
    bson_t del = BSON_INITIALIZER;
    vb_mongo_ids_filter(&del, ids, 3);
    same(&del, "{\"_id\": {\"$in\": [{\"$numberLong\": \"1\"}, {\"$numberLong\": \"2\"}, {\"$numberLong\": \"3\"}]}}",
         "deleteMany filter {_id: {$in: [...]}}");
    bson_destroy(&del);

    /* ---- createSearchIndexes: the command's syntax (createSearchIndexes, indexes[{name, type, definition}]) with
     * the vectorSearch definition's fields (type vector: path, numDimensions, similarity, quantization; type
     * filter: path) */
    const struct { vb_metric m; const char *sim, *q; } idx[] = {
        {VB_METRIC_EUCLIDEAN, "euclidean", "scalar"}, {VB_METRIC_ANGULAR, "cosine", "none"}, {VB_METRIC_DOT, "dotProduct", "scalar"}};
    for (int i = 0; i < 3; i++) {
        bson_t cmd = BSON_INITIALIZER;
        vb_mongo_create_index_cmd(&cmd, "vbench_items", "vbench_vector", 768, idx[i].m, idx[i].q);
        char want[1024];
        snprintf(want, sizeof want,
                 "{\"createSearchIndexes\": \"vbench_items\", \"indexes\": [{\"name\": \"vbench_vector\", "
                 "\"type\": \"vectorSearch\", \"definition\": {\"fields\": [{\"type\": \"vector\", \"path\": \"v\", "
                 "\"numDimensions\": 768, \"similarity\": \"%s\", \"quantization\": \"%s\"}, "
                 "{\"type\": \"filter\", \"path\": \"tag\"}, {\"type\": \"filter\", \"path\": \"tag2\"}, "
                 "{\"type\": \"filter\", \"path\": \"label\"}, {\"type\": \"filter\", \"path\": \"class\"}, "
                 "{\"type\": \"filter\", \"path\": \"_id\"}]}}]}",
                 idx[i].sim, idx[i].q);
        same(&cmd, want, idx[i].sim);
        bson_destroy(&cmd);
    }
    bson_t drop = BSON_INITIALIZER;
    vb_mongo_drop_index_cmd(&drop, "vbench_items", "vbench_vector");
    same(&drop, "{\"dropSearchIndex\": \"vbench_items\", \"name\": \"vbench_vector\"}", "dropSearchIndex command");
    bson_destroy(&drop);
    bson_t list = BSON_INITIALIZER;
    vb_mongo_list_indexes_pipeline(&list, "vbench_vector");
    same(&list, "{\"0\": {\"$listSearchIndexes\": {\"name\": \"vbench_vector\"}}}", "$listSearchIndexes {name}");
    bson_destroy(&list);

    /* ---- $vectorSearch: the stage's fields (index, path, queryVector, numCandidates, limit, filter with a
     * comparison on a filter field), then $project of _id */
    bson_t p = BSON_INITIALIZER;
    vb_filter range = {.kind = VB_FILTER_TAG_BELOW, .tag_below = 1000};
    vb_mongo_search_pipeline(&p, "vbench_vector", v3, 3, 10, 200, &range);
    same(&p, "{\"0\": {\"$vectorSearch\": {\"index\": \"vbench_vector\", \"path\": \"v\", \"queryVector\": "
             "{\"$binary\": {\"base64\": \"JwAAAIA/AAAAQAAAQEA=\", \"subType\": \"09\"}}, \"numCandidates\": 200, "
             "\"limit\": 10, \"filter\": {\"tag\": {\"$lt\": 1000}}}}, \"1\": {\"$project\": {\"_id\": 1}}}",
         "$vectorSearch with numCandidates, limit and the tag filter");
    bson_destroy(&p);
    bson_init(&p);
    vb_mongo_search_pipeline(&p, "vbench_vector", v3, 3, 10, 200, NULL);
    char *s = canon(&p);
    ok(!strstr(s, "filter"), "$vectorSearch without a filter has no filter member");
    bson_free(s);
    bson_destroy(&p);
    /* the $vectorSearch filter's MQL operators on indexed filter fields: $eq, $lt, $and of an array of clauses */
    vb_filter eq = {.kind = VB_FILTER_LABEL_EQ, .label = 3}, both = {.kind = VB_FILTER_AND, .tag_below = 316, .tag2_below = 317};
    bson_t f = BSON_INITIALIZER;
    vb_filter own = {.kind = VB_FILTER_CLASS_EQ, .cls = 4};
    vb_mongo_filter(&f, &own);
    same(&f, "{\"class\": {\"$eq\": 4}}", "class: {class: {$eq: C}}");
    bson_destroy(&f);
    bson_init(&f);
    vb_mongo_filter(&f, &eq);
    same(&f, "{\"label\": {\"$eq\": 3}}", "equality: {label: {$eq: L}}");
    bson_destroy(&f);
    bson_init(&f);
    vb_mongo_filter(&f, &both);
    same(&f, "{\"$and\": [{\"tag\": {\"$lt\": 316}}, {\"tag2\": {\"$lt\": 317}}]}",
         "and: {$and: [{tag: {$lt: A}}, {tag2: {$lt: B}}]}");
    bson_destroy(&f);
    bson_init(&p);
    vb_mongo_search_pipeline(&p, "vbench_vector", v3, 3, 10, 200, &eq);
    s = canon(&p);
    ok(strstr(s, "\"filter\" : { \"label\" : { \"$eq\" : ") != NULL, "the pipeline carries the equality filter (%s)", s);
    bson_free(s);
    bson_destroy(&p);
    bson_init(&p);
    vb_mongo_probe_pipeline(&p, "vbench_vector", v3, 3, ids, 3);
    same(&p, "{\"0\": {\"$vectorSearch\": {\"index\": \"vbench_vector\", \"path\": \"v\", \"queryVector\": "
             "{\"$binary\": {\"base64\": \"JwAAAIA/AAAAQAAAQEA=\", \"subType\": \"09\"}}, \"exact\": true, "
             "\"limit\": 3, \"filter\": {\"_id\": {\"$in\": [{\"$numberLong\": \"1\"}, {\"$numberLong\": \"2\"}, "
             "{\"$numberLong\": \"3\"}]}}}}, \"1\": {\"$project\": {\"_id\": 1}}}",
         "catch-up probe: exact (ENN) $vectorSearch restricted to the written ids, no numCandidates");
    bson_destroy(&p);

    /* ---- replies: $listSearchIndexes documents as the documentation shows them (id, name, status, queryable,
     * latestDefinition ...) */
    const struct { const char *json; vb_mongo_index_state want; const char *name; } replies[] = {
        {"{\"id\": \"6524096020da840844a4c4a7\", \"name\": \"vbench_vector\", \"type\": \"vectorSearch\", "
         "\"status\": \"BUILDING\", \"queryable\": false, \"latestDefinitionVersion\": {\"version\": 0, "
         "\"createdAt\": {\"$date\": \"2024-10-01T00:00:00Z\"}}, \"latestDefinition\": {\"fields\": []}}",
         VB_MONGO_INDEX_BUILDING, "BUILDING, not queryable: building"},
        {"{\"id\": \"1\", \"name\": \"vbench_vector\", \"status\": \"PENDING\", \"queryable\": false}",
         VB_MONGO_INDEX_BUILDING, "PENDING: building"},
        {"{\"id\": \"1\", \"name\": \"vbench_vector\", \"status\": \"READY\", \"queryable\": false}",
         VB_MONGO_INDEX_BUILDING, "READY but not yet queryable: still waiting"},
        {"{\"id\": \"1\", \"name\": \"vbench_vector\", \"type\": \"vectorSearch\", \"status\": \"READY\", "
         "\"queryable\": true, \"latestDefinition\": {\"fields\": [{\"type\": \"vector\"}]}}",
         VB_MONGO_INDEX_READY, "READY and queryable: ready"},
        {"{\"id\": \"1\", \"name\": \"vbench_vector\", \"status\": \"FAILED\", \"queryable\": false, "
         "\"message\": \"numDimensions must be less than or equal to 8192\"}",
         VB_MONGO_INDEX_FAILED, "FAILED: failed, with the server's message"},
        {"{\"id\": \"1\", \"name\": \"vbench_vector\", \"status\": \"STALE\", \"queryable\": true}",
         VB_MONGO_INDEX_STALE, "STALE: stale"},
        {"{\"id\": \"1\", \"name\": \"vbench_vector\", \"status\": \"DOES_NOT_EXIST\", \"queryable\": false}",
         VB_MONGO_INDEX_MISSING, "DOES_NOT_EXIST: missing"},
    };
    for (size_t i = 0; i < sizeof replies / sizeof *replies; i++) {
        bson_t r;
        bson_error_t e;
        bson_init_from_json(&r, replies[i].json, -1, &e);
        vb_mongo_index_state st = VB_MONGO_INDEX_MISSING;
        char status[32], msg[256];
        int found = vb_mongo_index_doc(&r, "vbench_vector", &st, status, sizeof status, msg, sizeof msg);
        ok(found && st == replies[i].want, "$listSearchIndexes %s (status %s)", replies[i].name, status);
        if (replies[i].want == VB_MONGO_INDEX_FAILED) contains(msg, "numDimensions", "the FAILED message is kept");
        ok(vb_mongo_index_doc(&r, "another_index", &st, status, sizeof status, msg, sizeof msg) == 0,
           "another index's document is not taken for ours (%s)", replies[i].name);
        bson_destroy(&r);
    }
    const char *results[] = {"{\"_id\": {\"$numberLong\": \"123456789012\"}}", "{\"_id\": 5}", "{\"_id\": 6.0}"};
    int64_t want_ids[] = {123456789012LL, 5, 6};
    for (int i = 0; i < 3; i++) {
        bson_t r;
        bson_error_t e;
        bson_init_from_json(&r, results[i], -1, &e);
        int64_t id = -1;
        ok(vb_mongo_result_id(&r, &id) && id == want_ids[i], "result document %s: _id %lld", results[i], (long long)id);
        bson_destroy(&r);
    }
    bson_t noid;
    bson_error_t e;
    bson_init_from_json(&noid, "{\"score\": 0.9}", -1, &e);
    int64_t id;
    ok(!vb_mongo_result_id(&noid, &id), "a result without _id is skipped");
    bson_destroy(&noid);

    /* ---- server errors: the server's own text kept, what it means added */
    char line[1024];
    int transient = -1;
    vb_mongo_explain_error(1, 59, "no such command: 'createSearchIndexes'", "createSearchIndexes", line, sizeof line, &transient);
    contains(line, "no such command: 'createSearchIndexes'", "no search: the server's words are kept");
    contains(line, "this mongod has no search", "no search: what it means");
    ok(transient == 0, "no search: VB_ERROR (calling again changes nothing)");
    vb_mongo_explain_error(1, 31082, "Using $vectorSearch requires additional configuration. Please connect to Atlas "
                           "or an AtlasCLI local deployment to enable.", "$vectorSearch", line, sizeof line, &transient);
    contains(line, "this mongod has no search", "a community mongod without the search process: no search");
    vb_mongo_explain_error(1, 8, "Error connecting to Search Index Management service.", "createSearchIndexes",
                           line, sizeof line, &transient);
    contains(line, "cannot reach the search process", "search process down: says so");
    ok(transient == 1, "search process down: VB_RETRY");
    vb_mongo_explain_error(1, 2, "\"quantization\" is not supported: scalar", "createSearchIndexes", line, sizeof line, &transient);
    contains(line, "quantization: none", "quantization not supported: says to set quantization none");
    vb_mongo_explain_error(1, 27, "Search index vbench_vector not found", "$vectorSearch", line, sizeof line, &transient);
    contains(line, "run the build phase", "no search index: says to build it");
    vb_mongo_explain_error(1, 8, "Index vbench_vector is not queryable", "$vectorSearch", line, sizeof line, &transient);
    contains(line, "not READY yet", "index not READY: says to wait");
    ok(transient == 1, "index not READY: VB_RETRY");
    vb_mongo_explain_error(2, 2, "Failed to read 4 bytes: socket error or timeout", "$vectorSearch", line, sizeof line,
                           &transient);
    ok(transient == 1, "a socket error from the driver (MONGOC_ERROR_STREAM): VB_RETRY");
    vb_mongo_explain_error(1, 18, "Authentication failed.", "ping", line, sizeof line, &transient);
    ok(transient == 0 && strstr(line, "credentials"), "authentication failed: VB_ERROR naming the credentials");

    /* ---- the registry: the adapter says it is written from the documentation */
    const vb_engine_ops *ops = vb_engine_find("mongodb");
    ok(ops && (ops->flags & VB_ENGINE_FILTER_EQ) && (ops->flags & VB_ENGINE_FILTER_AND), "mongodb runs equality and and");
    ok(ops && strstr(ops->description, "written from the documentation") && !(ops->flags & VB_ENGINE_EMBEDDED),
       "mongodb is registered as a server engine written from the documentation");
    ops = vb_engine_find("valkey");
    ok(ops && strstr(ops->description, "written from the documentation; no server with the search module on this machine"),
       "valkey says it is written from the documentation, with no server for it here");
    vb_kv bad[] = {{"quantization", "binary"}};
    vb_engine_config cfg = {bad, 1, NULL, 0};
    vb_engine *eng = NULL;
    vb_error err = {0};
    ok(vb_engine_open("mongodb", &cfg, &eng, &err) == VB_ERROR && strstr(err.message, "scalar or none"),
       "quantization other than scalar|none is refused at open: %s", err.message);
    return done_testing();
}
