/* The commands the valkey adapter (engines/valkey.c) sends to Valkey + valkey-search and the replies it reads,
 * built and parsed here without a server, so that tests/unit/test_valkey.c can compare every one of them with
 * valkey-search's documented syntax and feed the parsers replies shaped like the documentation's. No Valkey with
 * the search module runs on this machine (Debian ships Valkey without it): these are the checks.
 *
 *   row          HSET PREFIX<id> v <FLOAT32 blob> [tag <N> tag2 <M> label <L>] [class <C>]   (the vector as
 *                little-endian float32 bytes; the attribute columns of engines/engine.h vb_filter)
 *   untag        HDEL PREFIX<id> tag tag2 label class           (an upsert of a row without a tag or a class)
 *   remove       DEL PREFIX<id>
 *   index        FT.CREATE IDX ON HASH PREFIX 1 PREFIX SCHEMA tag NUMERIC tag2 NUMERIC label NUMERIC
 *                    class NUMERIC v VECTOR HNSW 12 TYPE FLOAT32 DIM d DISTANCE_METRIC L2|COSINE|IP M m EF_CONSTRUCTION e
 *                    INITIAL_CAP n
 *   drop         FT.DROPINDEX IDX
 *   info         FT.INFO IDX: state, num_docs, hash_indexing_failures, mutation_queue_size,
 *                backfill_in_progress, backfill_complete_percent, and the vector attribute's dimensions
 *   search       FT.SEARCH IDX "*=>[KNN k @v $q EF_RUNTIME ef]" PARAMS 2 q <blob> NOCONTENT LIMIT 0 k DIALECT 2
 *                with the filter in parentheses in place of "*" (engines/filter.h vb_filter_valkey_query): range
 *                "(@tag:[-inf (N])" (an exclusive bound), equality "(@label:[L L])", and the two ranges separated by a
 *                space (an intersection) "(@tag:[-inf (A] @tag2:[-inf (B])", class "(@class:[C C])"; the reply
 *                of NOCONTENT is [total, key, key, ...], closest first */
#ifndef VB_ENGINES_VALKEY_DOCS_H
#define VB_ENGINES_VALKEY_DOCS_H

#include <stddef.h>
#include <stdint.h>

#include "datasets/distance.h"
#include "engines/engine.h"
#include "engines/resp_common.h"

#define VB_VALKEY_EF_MAX 4096          /* EF_RUNTIME and EF_CONSTRUCTION: at most 4096 */
#define VB_VALKEY_M_MAX 512
#define VB_VALKEY_DIM_MAX 32768

/* "L2", "COSINE", "IP", or NULL for a metric valkey-search has no DISTANCE_METRIC for. */
const char *vb_valkey_metric(vb_metric m);

/* PREFIX<id> into buf; returns buf. */
const char *vb_valkey_key(const char *prefix, int64_t id, char *buf, size_t len);

/* The commands, into a (initialised here). Strings passed in are borrowed by a until it is sent. */
void vb_valkey_create_cmd(vb_resp_argv *a, const char *index, const char *prefix, size_t dim, vb_metric metric, int m,
                          int ef_construction, size_t initial_cap);
void vb_valkey_drop_cmd(vb_resp_argv *a, const char *index);
void vb_valkey_info_cmd(vb_resp_argv *a, const char *index);
/* attrs: the row's tag, tag2 and label, or NULL: no such members; cls: its class, or NULL: no class member. */
void vb_valkey_hset_cmd(vb_resp_argv *a, const char *key, const float *v, size_t dim, const int32_t attrs[3],
                        const int32_t *cls);
void vb_valkey_untag_cmd(vb_resp_argv *a, const char *key);
void vb_valkey_del_cmd(vb_resp_argv *a, const char *key);
/* ef_search 0: no EF_RUNTIME (the index's default); filter NULL or VB_FILTER_NONE: no filter. VB_ERROR when the
 * filter's query does not fit (err filled). */
int vb_valkey_search_cmd(vb_resp_argv *a, const char *index, const float *q, size_t dim, int k, int ef_search,
                         const vb_filter *filter, vb_error *err);

/* The ids of a NOCONTENT FT.SEARCH reply ([total, PREFIX<id>, ...]): at most k into ids, their count in *n; keys
 * without the prefix are skipped. VB_ERROR (err filled) when the reply is not such an array. */
int vb_valkey_search_ids(const redisReply *r, const char *prefix, int k, int64_t *ids, int *n, vb_error *err);

/* What FT.INFO says about the index's health. */
typedef struct vb_valkey_index_status {
    int ready;                         /* state "ready", no backfill in progress, an empty mutation queue */
    long long num_docs, failures, queue, dims;   /* dims: the vector attribute's dimensions, -1 when not said */
    double percent;                    /* backfill_complete_percent, 0..1 */
    char state[32];
} vb_valkey_index_status;

void vb_valkey_index_status_parse(const redisReply *info, vb_valkey_index_status *x);
/* 1 when FT.INFO's error reply says the index does not exist ("Index with name '...' not found"), so that the
 * adapter treats it as "no index" rather than as a failure. */
int vb_valkey_index_missing(const char *error_text);

#endif
