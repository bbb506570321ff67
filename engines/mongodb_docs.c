/* The mongodb adapter's documents and reply parsers (engines/mongodb_docs.h says which, and why). Written to
 * MongoDB's documentation: the createSearchIndexes command, the vectorSearch index definition (vector and filter
 * fields, quantization), $listSearchIndexes (status, queryable), $vectorSearch (queryVector, numCandidates,
 * limit, filter, exact) and the BSON binary vector subtype (9; dtype 0x27 float32, padding byte). libbson 1.23
 * (Debian 12) predates the vector helpers, so the payload is built here byte by byte. */
#include "engines/mongodb_docs.h"

#include <stdio.h>
#include <string.h>

_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "mongodb: the float32 vector payload is little-endian");

size_t vb_mongo_vector_bytes(const float *v, size_t dim, uint8_t *buf) {
    buf[0] = VB_MONGO_DTYPE_FLOAT32;
    buf[1] = 0;                           /* padding: unused bits of the last byte, always 0 for float32 */
    memcpy(buf + 2, v, dim * sizeof(float));
    return 2 + dim * sizeof(float);
}

int vb_mongo_append_vector(bson_t *doc, const char *key, const float *v, size_t dim) {
    uint8_t stack[2 + 4 * 256], *buf = dim <= 256 ? stack : bson_malloc(2 + 4 * dim);
    size_t n = vb_mongo_vector_bytes(v, dim, buf);
    bool ok = bson_append_binary(doc, key, -1, (bson_subtype_t)VB_MONGO_VECTOR_SUBTYPE, buf, (uint32_t)n);
    if (buf != stack) bson_free(buf);
    return ok ? 0 : -1;
}

long vb_mongo_vector_decode(const uint8_t *data, uint32_t len, float *out, size_t cap) {
    if (len < 2 || data[0] != VB_MONGO_DTYPE_FLOAT32 || data[1] != 0 || (len - 2) % 4) return -1;
    size_t dim = (len - 2) / 4;
    if (dim > cap) return -1;
    memcpy(out, data + 2, dim * sizeof(float));
    return (long)dim;
}

const char *vb_mongo_similarity(vb_metric m) {
    switch (m) {
    case VB_METRIC_EUCLIDEAN: return "euclidean";
    case VB_METRIC_ANGULAR: return "cosine";
    case VB_METRIC_DOT: return "dotProduct";
    }
    return NULL;
}

void vb_mongo_row(bson_t *doc, int64_t id, const float *v, size_t dim, const int32_t attrs[3], const int32_t *cls) {
    BSON_APPEND_INT64(doc, "_id", id);
    if (attrs) {
        BSON_APPEND_INT32(doc, "tag", attrs[0]);
        BSON_APPEND_INT32(doc, "tag2", attrs[1]);
        BSON_APPEND_INT32(doc, "label", attrs[2]);
    }
    if (cls) BSON_APPEND_INT32(doc, "class", *cls);
    vb_mongo_append_vector(doc, "v", v, dim);
}

void vb_mongo_create_index_cmd(bson_t *cmd, const char *coll, const char *index, size_t dim, vb_metric metric,
                               const char *quantization) {
    bson_t indexes, spec, def, fields, vec, field;
    BSON_APPEND_UTF8(cmd, "createSearchIndexes", coll);
    BSON_APPEND_ARRAY_BEGIN(cmd, "indexes", &indexes);
    BSON_APPEND_DOCUMENT_BEGIN(&indexes, "0", &spec);
    BSON_APPEND_UTF8(&spec, "name", index);
    BSON_APPEND_UTF8(&spec, "type", "vectorSearch");
    BSON_APPEND_DOCUMENT_BEGIN(&spec, "definition", &def);
    BSON_APPEND_ARRAY_BEGIN(&def, "fields", &fields);
    BSON_APPEND_DOCUMENT_BEGIN(&fields, "0", &vec);
    BSON_APPEND_UTF8(&vec, "type", "vector");
    BSON_APPEND_UTF8(&vec, "path", "v");
    BSON_APPEND_INT32(&vec, "numDimensions", (int32_t)dim);
    BSON_APPEND_UTF8(&vec, "similarity", vb_mongo_similarity(metric) ? vb_mongo_similarity(metric) : "euclidean");
    BSON_APPEND_UTF8(&vec, "quantization", quantization);
    bson_append_document_end(&fields, &vec);
    /* the filter columns (engines/engine.h vb_filter), and _id for the catch-up probe */
    static const char *const keys[] = {"1", "2", "3", "4", "5"},
                             *const paths[] = {"tag", "tag2", "label", "class", "_id"};
    for (int i = 0; i < 5; i++) {
        BSON_APPEND_DOCUMENT_BEGIN(&fields, keys[i], &field);
        BSON_APPEND_UTF8(&field, "type", "filter");
        BSON_APPEND_UTF8(&field, "path", paths[i]);
        bson_append_document_end(&fields, &field);
    }
    bson_append_array_end(&def, &fields);
    bson_append_document_end(&spec, &def);
    bson_append_document_end(&indexes, &spec);
    bson_append_array_end(cmd, &indexes);
}

void vb_mongo_drop_index_cmd(bson_t *cmd, const char *coll, const char *index) {
    BSON_APPEND_UTF8(cmd, "dropSearchIndex", coll);
    BSON_APPEND_UTF8(cmd, "name", index);
}

void vb_mongo_list_indexes_pipeline(bson_t *pipeline, const char *index) {
    bson_t stage, list;
    BSON_APPEND_DOCUMENT_BEGIN(pipeline, "0", &stage);
    BSON_APPEND_DOCUMENT_BEGIN(&stage, "$listSearchIndexes", &list);
    BSON_APPEND_UTF8(&list, "name", index);
    bson_append_document_end(&stage, &list);
    bson_append_document_end(pipeline, &stage);
}

void vb_mongo_ids_filter(bson_t *filter, const int64_t *ids, size_t n) {
    bson_t id, in;
    BSON_APPEND_DOCUMENT_BEGIN(filter, "_id", &id);
    BSON_APPEND_ARRAY_BEGIN(&id, "$in", &in);
    for (size_t i = 0; i < n; i++) {
        char key[24];
        const char *k;
        bson_uint32_to_string((uint32_t)i, &k, key, sizeof key);
        BSON_APPEND_INT64(&in, k, ids[i]);
    }
    bson_append_array_end(&id, &in);
    bson_append_document_end(filter, &id);
}

void vb_mongo_id_selector(bson_t *sel, int64_t id) { BSON_APPEND_INT64(sel, "_id", id); }

/* {path: {op: value}} into doc. */
static void compare(bson_t *doc, const char *path, const char *op, int32_t value) {
    bson_t c;
    BSON_APPEND_DOCUMENT_BEGIN(doc, path, &c);
    BSON_APPEND_INT32(&c, op, value);
    bson_append_document_end(doc, &c);
}

void vb_mongo_filter(bson_t *doc, const vb_filter *f) {
    bson_t all, one;
    switch (f ? f->kind : VB_FILTER_NONE) {
    case VB_FILTER_TAG_BELOW: compare(doc, "tag", "$lt", f->tag_below); break;
    case VB_FILTER_LABEL_EQ: compare(doc, "label", "$eq", f->label); break;
    case VB_FILTER_CLASS_EQ: compare(doc, "class", "$eq", f->cls); break;
    case VB_FILTER_AND:
        BSON_APPEND_ARRAY_BEGIN(doc, "$and", &all);
        BSON_APPEND_DOCUMENT_BEGIN(&all, "0", &one);
        compare(&one, "tag", "$lt", f->tag_below);
        bson_append_document_end(&all, &one);
        BSON_APPEND_DOCUMENT_BEGIN(&all, "1", &one);
        compare(&one, "tag2", "$lt", f->tag2_below);
        bson_append_document_end(&all, &one);
        bson_append_array_end(doc, &all);
        break;
    default: break;
    }
}

/* [{$vectorSearch: {...}}, {$project: {_id: 1}}]; exact_ids non-NULL makes it the catch-up probe. */
static void vector_search(bson_t *pipeline, const char *index, const float *q, size_t dim, int limit,
                          int num_candidates, const vb_filter *flt, const int64_t *exact_ids, size_t n_ids) {
    bson_t stage, vs, filter, project, fields;
    BSON_APPEND_DOCUMENT_BEGIN(pipeline, "0", &stage);
    BSON_APPEND_DOCUMENT_BEGIN(&stage, "$vectorSearch", &vs);
    BSON_APPEND_UTF8(&vs, "index", index);
    BSON_APPEND_UTF8(&vs, "path", "v");
    vb_mongo_append_vector(&vs, "queryVector", q, dim);
    if (exact_ids) {
        BSON_APPEND_BOOL(&vs, "exact", true);   /* ENN: every indexed row that passes the filter, no candidates */
    } else {
        BSON_APPEND_INT32(&vs, "numCandidates", num_candidates);
    }
    BSON_APPEND_INT32(&vs, "limit", limit);
    if (exact_ids) {
        BSON_APPEND_DOCUMENT_BEGIN(&vs, "filter", &filter);
        vb_mongo_ids_filter(&filter, exact_ids, n_ids);
        bson_append_document_end(&vs, &filter);
    } else if (flt && flt->kind != VB_FILTER_NONE) {
        BSON_APPEND_DOCUMENT_BEGIN(&vs, "filter", &filter);
        vb_mongo_filter(&filter, flt);
        bson_append_document_end(&vs, &filter);
    }
    bson_append_document_end(&stage, &vs);
    bson_append_document_end(pipeline, &stage);
    BSON_APPEND_DOCUMENT_BEGIN(pipeline, "1", &project);
    BSON_APPEND_DOCUMENT_BEGIN(&project, "$project", &fields);
    BSON_APPEND_INT32(&fields, "_id", 1);
    bson_append_document_end(&project, &fields);
    bson_append_document_end(pipeline, &project);
}

void vb_mongo_search_pipeline(bson_t *pipeline, const char *index, const float *q, size_t dim, int k,
                              int num_candidates, const vb_filter *filter) {
    vector_search(pipeline, index, q, dim, k, num_candidates, filter, NULL, 0);
}

void vb_mongo_probe_pipeline(bson_t *pipeline, const char *index, const float *q, size_t dim, const int64_t *ids,
                             size_t n) {
    vector_search(pipeline, index, q, dim, (int)n, 0, NULL, ids, n);
}

int vb_mongo_index_doc(const bson_t *doc, const char *index, vb_mongo_index_state *state, char *status,
                       size_t status_len, char *message, size_t message_len) {
    bson_iter_t it;
    if (!bson_iter_init_find(&it, doc, "name") || !BSON_ITER_HOLDS_UTF8(&it) ||
        strcmp(bson_iter_utf8(&it, NULL), index) != 0)
        return 0;
    const char *st = "";
    int queryable = 0;
    if (bson_iter_init_find(&it, doc, "status") && BSON_ITER_HOLDS_UTF8(&it)) st = bson_iter_utf8(&it, NULL);
    if (bson_iter_init_find(&it, doc, "queryable") && BSON_ITER_HOLDS_BOOL(&it)) queryable = bson_iter_bool(&it);
    snprintf(status, status_len, "%s", st[0] ? st : "(no status)");
    if (message_len) message[0] = '\0';
    if (message_len && bson_iter_init_find(&it, doc, "message") && BSON_ITER_HOLDS_UTF8(&it))
        snprintf(message, message_len, "%s", bson_iter_utf8(&it, NULL));
    if (strcmp(st, "FAILED") == 0) *state = VB_MONGO_INDEX_FAILED;
    else if (strcmp(st, "DOES_NOT_EXIST") == 0) *state = VB_MONGO_INDEX_MISSING;
    else if (strcmp(st, "STALE") == 0) *state = VB_MONGO_INDEX_STALE;
    else if (strcmp(st, "READY") == 0 && queryable) *state = VB_MONGO_INDEX_READY;
    else *state = VB_MONGO_INDEX_BUILDING;
    return 1;
}

int vb_mongo_result_id(const bson_t *doc, int64_t *id) {
    bson_iter_t it;
    if (!bson_iter_init_find(&it, doc, "_id")) return 0;
    if (BSON_ITER_HOLDS_INT64(&it)) *id = bson_iter_int64(&it);
    else if (BSON_ITER_HOLDS_INT32(&it)) *id = bson_iter_int32(&it);
    else if (BSON_ITER_HOLDS_DOUBLE(&it)) *id = (int64_t)bson_iter_double(&it);
    else return 0;
    return 1;
}

static int has(const char *s, const char *needle) { return s && strstr(s, needle) != NULL; }

void vb_mongo_explain_error(uint32_t domain, uint32_t code, const char *message, const char *what, char *buf,
                            size_t len, int *transient) {
    const char *m = message && message[0] ? message : "(no message from the server)";
    const char *hint = NULL;
    *transient = 0;
    /* The driver's own network and selection errors (mongoc's MONGOC_ERROR_STREAM = 2, _SERVER_SELECTION = 13),
     * and the server's "not primary", "shutting down" and "interrupted" codes: the server may answer later. */
    if (domain == 2 || domain == 13 || code == 91 || code == 189 || code == 10107 || code == 11600 ||
        code == 11602 || code == 13435 || code == 13436 || code == 6) {
        *transient = 1;
        hint = "the server cannot be reached or is not primary now";
    } else if (code == 59 || has(m, "no such command") || has(m, "Unrecognized pipeline stage name") ||
               has(m, "only allowed on MongoDB Atlas") || has(m, "not supported on this deployment") ||
               has(m, "requires additional configuration")) {
        hint = "this mongod has no search: it needs Percona Search (the search process, and mongod's "
               "mongotHost / searchIndexManagementHostAndPort parameters pointing at it; see "
               "deploy/engines/mongodb.yml)";
    } else if (has(m, "Error connecting to Search Index Management service") || has(m, "mongot") ||
               has(m, "search index management")) {
        *transient = 1;
        hint = "mongod cannot reach the search process: is it running, and do mongotHost and "
               "searchIndexManagementHostAndPort name its address?";
    } else if (has(m, "quantization")) {
        hint = "this search server does not support the quantization asked for: set the profile's mongodb "
               "parameter quantization: none (the reference numbers come from scalar)";
    } else if (code == 27 || has(m, "index not found") || has(m, "no such index") || has(m, "does not exist")) {
        hint = "the search index does not exist: run the build phase (createSearchIndexes) first";
    } else if (has(m, "not queryable") || has(m, "not ready") || has(m, "NOT_STARTED") || has(m, "BUILDING")) {
        *transient = 1;
        hint = "the search index is not READY yet: wait for $listSearchIndexes to say READY";
    } else if (code == 18 || code == 13 || has(m, "Authentication failed") || has(m, "requires authentication")) {
        hint = "wrong or missing credentials: give the uri parameter a user and password";
    }
    snprintf(buf, len, "mongodb: %s: %s (code %u)%s%s", what, m, code, hint ? ": " : "", hint ? hint : "");
}
