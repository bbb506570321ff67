/* The documents the mongodb adapter (engines/mongodb.c) sends to Percona Search for MongoDB (mongod + its
 * search process) and the replies it reads, built and parsed here without a server, so that
 * tests/unit/test_mongodb.c can compare every one of them with MongoDB's documentation (as canonical extended
 * JSON through libbson) and feed the parsers replies shaped like the documentation's.
 *
 *   vector       BSON binary subtype 9 ("vector"), dtype byte 0x27 (float32), padding byte 0, then the floats
 *                little-endian: the packed form the documentation recommends for ingest and for queryVector
 *   row          {_id: <int64 id>, tag: <int32>, tag2: <int32>, label: <int32> (absent for a row without a tag),
 *                class: <int32> (absent for a row without a class), v: <vector>}
 *   index        {createSearchIndexes: COLL, indexes: [{name: INDEX, type: "vectorSearch", definition: {fields: [
 *                  {type: "vector", path: "v", numDimensions: d, similarity: euclidean|cosine|dotProduct,
 *                   quantization: scalar|none}, {type: "filter", path: "tag"}, {type: "filter", path: "tag2"},
 *                   {type: "filter", path: "label"}, {type: "filter", path: "class"}, {type: "filter", path: "_id"}]}}]}
 *                (_id is a filter field so that the adapter can ask which of the rows it just wrote the index
 *                answers for: its wait for the search index to catch up after churn)
 *   list         [{$listSearchIndexes: {name: INDEX}}]: status (PENDING, BUILDING, READY, FAILED, STALE,
 *                DOES_NOT_EXIST) and queryable
 *   search       [{$vectorSearch: {index, path: "v", queryVector: <vector>, numCandidates, limit: k,
 *                  filter: {tag: {$lt: N}} | {label: {$eq: L}} | {$and: [{tag: {$lt: A}}, {tag2: {$lt: B}}]}
 *                          | {class: {$eq: C}}}},
 *                 {$project: {_id: 1}}]
 *   probe        the same stage with exact: true and filter {_id: {$in: ids}}: which of ids the index holds
 *   delete       filter {_id: {$in: ids}}
 *   upsert       replaceOne {_id: id} with the row, upsert: true
 *   drop         {dropSearchIndex: COLL, name: INDEX}
 *   errors       the server's words turned into what to do next (no search on this server, no such index,
 *                the index not READY, quantization not supported) */
#ifndef VB_ENGINES_MONGODB_DOCS_H
#define VB_ENGINES_MONGODB_DOCS_H

#include <bson/bson.h>
#include <stddef.h>
#include <stdint.h>

#include "datasets/distance.h"
#include "engines/engine.h"

#define VB_MONGO_VECTOR_SUBTYPE 9      /* BSON binary subtype "vector" */
#define VB_MONGO_DTYPE_FLOAT32 0x27

/* The vector's binary payload into buf (2 + 4 * dim bytes); returns its length. */
size_t vb_mongo_vector_bytes(const float *v, size_t dim, uint8_t *buf);
/* Appends key: Binary(subtype 9, float32 vector). */
int vb_mongo_append_vector(bson_t *doc, const char *key, const float *v, size_t dim);
/* Decodes a float32 vector binary (subtype 9, dtype 0x27, padding 0) into out (cap floats); returns the
 * dimension, or -1 when it is not one. For the tests and for replies. */
long vb_mongo_vector_decode(const uint8_t *data, uint32_t len, float *out, size_t cap);

/* "euclidean", "cosine", "dotProduct", or NULL for a metric vector search has no similarity for. */
const char *vb_mongo_similarity(vb_metric m);

/* The row document (doc initialised by the caller). attrs: the row's tag, tag2 and label; NULL: no such members.
 * cls: its class; NULL: no class member. */
void vb_mongo_row(bson_t *doc, int64_t id, const float *v, size_t dim, const int32_t attrs[3], const int32_t *cls);
/* The createSearchIndexes command. quantization: "scalar" or "none". */
void vb_mongo_create_index_cmd(bson_t *cmd, const char *coll, const char *index, size_t dim, vb_metric metric,
                               const char *quantization);
void vb_mongo_drop_index_cmd(bson_t *cmd, const char *coll, const char *index);
void vb_mongo_list_indexes_pipeline(bson_t *pipeline, const char *index);
/* The $vectorSearch filter of f into doc (MQL on filter fields): range {tag: {$lt: N}}, equality
 * {label: {$eq: L}}, and {$and: [{tag: {$lt: A}}, {tag2: {$lt: B}}]}, class {class: {$eq: C}}; nothing for NULL or
 * VB_FILTER_NONE. */
void vb_mongo_filter(bson_t *doc, const vb_filter *f);
/* The kNN pipeline; filter NULL or VB_FILTER_NONE: no filter. */
void vb_mongo_search_pipeline(bson_t *pipeline, const char *index, const float *q, size_t dim, int k,
                              int num_candidates, const vb_filter *filter);
/* The catch-up probe: exact search restricted to ids, limit n. */
void vb_mongo_probe_pipeline(bson_t *pipeline, const char *index, const float *q, size_t dim, const int64_t *ids,
                             size_t n);
/* {_id: {$in: ids}} */
void vb_mongo_ids_filter(bson_t *filter, const int64_t *ids, size_t n);
/* {_id: id} */
void vb_mongo_id_selector(bson_t *sel, int64_t id);

/* The state of a search index as $listSearchIndexes reports it. */
typedef enum {
    VB_MONGO_INDEX_MISSING = 0,   /* no document for it, or status DOES_NOT_EXIST */
    VB_MONGO_INDEX_BUILDING,      /* PENDING, BUILDING, or READY but not yet queryable */
    VB_MONGO_INDEX_READY,         /* READY and queryable */
    VB_MONGO_INDEX_FAILED,        /* FAILED */
    VB_MONGO_INDEX_STALE,         /* STALE: queryable, but the search process stopped following the writes */
} vb_mongo_index_state;

/* One document of $listSearchIndexes' cursor: when its name is index, *state (and its status word in status,
 * and the server's message, if any, in message) are filled and 1 is returned; 0 for another index. */
int vb_mongo_index_doc(const bson_t *doc, const char *index, vb_mongo_index_state *state, char *status,
                       size_t status_len, char *message, size_t message_len);
/* The _id of one result document (int64, int32 or double); 0 when it has none. */
int vb_mongo_result_id(const bson_t *doc, int64_t *id);

/* The server's error (its code and message) as one line saying what it means for vbench and what to do next;
 * *transient = 1 for errors the same call may get past later (network, not primary, shutting down). */
void vb_mongo_explain_error(uint32_t domain, uint32_t code, const char *message, const char *what, char *buf,
                            size_t len, int *transient);

#endif
