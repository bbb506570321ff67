/* valkey-search's commands and replies, without a server (see engines/valkey_docs.h). */
#include "engines/valkey_docs.h"
#include "engines/filter.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Little-endian float32 is the module's FLOAT32 format: x86 and ARM hosts store floats that way already. */
_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "valkey: the vector bytes are written as the host stores them");

const char *vb_valkey_metric(vb_metric m) {
    switch (m) {
    case VB_METRIC_EUCLIDEAN: return "L2";
    case VB_METRIC_ANGULAR: return "COSINE";
    case VB_METRIC_DOT: return "IP";
    }
    return NULL;
}

const char *vb_valkey_key(const char *prefix, int64_t id, char *buf, size_t len) {
    snprintf(buf, len, "%s%" PRId64, prefix, id);
    return buf;
}

void vb_valkey_create_cmd(vb_resp_argv *a, const char *index, const char *prefix, size_t dim, vb_metric metric, int m,
                          int ef_construction, size_t initial_cap) {
    static const char *const head[] = {"ON", "HASH", "PREFIX", "1"};
    vb_resp_argv_init(a);
    vb_resp_arg(a, "FT.CREATE");
    vb_resp_arg(a, index);
    for (size_t i = 0; i < sizeof head / sizeof *head; i++) vb_resp_arg(a, head[i]);
    vb_resp_arg(a, prefix);
    vb_resp_arg(a, "SCHEMA");
    static const char *const attrs[] = {"tag", "tag2", "label", "class"};   /* engines/engine.h vb_filter's columns */
    for (int i = 0; i < 4; i++) {
        vb_resp_arg(a, attrs[i]);
        vb_resp_arg(a, "NUMERIC");
    }
    vb_resp_arg(a, "v");
    vb_resp_arg(a, "VECTOR");
    vb_resp_arg(a, "HNSW");
    vb_resp_arg(a, "12");                 /* attr_count: the six name/value pairs below */
    vb_resp_arg(a, "TYPE");
    vb_resp_arg(a, "FLOAT32");
    vb_resp_arg(a, "DIM");
    vb_resp_argf(a, "%zu", dim);
    vb_resp_arg(a, "DISTANCE_METRIC");
    vb_resp_arg(a, vb_valkey_metric(metric) ? vb_valkey_metric(metric) : "?");
    vb_resp_arg(a, "M");
    vb_resp_argf(a, "%d", m);
    vb_resp_arg(a, "EF_CONSTRUCTION");
    vb_resp_argf(a, "%d", ef_construction);
    vb_resp_arg(a, "INITIAL_CAP");
    vb_resp_argf(a, "%zu", initial_cap);
}

static void two(vb_resp_argv *a, const char *cmd, const char *arg) {
    vb_resp_argv_init(a);
    vb_resp_arg(a, cmd);
    vb_resp_arg(a, arg);
}

void vb_valkey_drop_cmd(vb_resp_argv *a, const char *index) { two(a, "FT.DROPINDEX", index); }
void vb_valkey_info_cmd(vb_resp_argv *a, const char *index) { two(a, "FT.INFO", index); }
void vb_valkey_del_cmd(vb_resp_argv *a, const char *key) { two(a, "DEL", key); }

void vb_valkey_hset_cmd(vb_resp_argv *a, const char *key, const float *v, size_t dim, const int32_t attrs[3],
                        const int32_t *cls) {
    two(a, "HSET", key);
    vb_resp_arg(a, "v");
    vb_resp_arg_bin(a, v, dim * sizeof(float));
    if (attrs) {
        vb_resp_arg(a, "tag");
        vb_resp_argf(a, "%" PRId32, attrs[0]);
        vb_resp_arg(a, "tag2");
        vb_resp_argf(a, "%" PRId32, attrs[1]);
        vb_resp_arg(a, "label");
        vb_resp_argf(a, "%" PRId32, attrs[2]);
    }
    if (cls) {
        vb_resp_arg(a, "class");
        vb_resp_argf(a, "%" PRId32, *cls);
    }
}

void vb_valkey_untag_cmd(vb_resp_argv *a, const char *key) {
    two(a, "HDEL", key);
    vb_resp_arg(a, "tag");
    vb_resp_arg(a, "tag2");
    vb_resp_arg(a, "label");
    vb_resp_arg(a, "class");
}

int vb_valkey_search_cmd(vb_resp_argv *a, const char *index, const float *q, size_t dim, int k, int ef_search,
                         const vb_filter *filter, vb_error *err) {
    char where[160] = "*", ef[32] = "", query[140];
    if (filter && filter->kind != VB_FILTER_NONE) {
        if (vb_filter_valkey_query(filter, query, sizeof query))
            return vb_error_set(err, "valkey", 1, "valkey: the filter does not fit its query");
        snprintf(where, sizeof where, "(%s)", query);
    }
    if (ef_search > 0) snprintf(ef, sizeof ef, " EF_RUNTIME %d", ef_search);
    two(a, "FT.SEARCH", index);
    vb_resp_argf(a, "%s=>[KNN %d @v $q%s]", where, k, ef);
    vb_resp_arg(a, "PARAMS");
    vb_resp_arg(a, "2");
    vb_resp_arg(a, "q");
    vb_resp_arg_bin(a, q, dim * sizeof(float));
    vb_resp_arg(a, "NOCONTENT");
    vb_resp_arg(a, "LIMIT");
    vb_resp_arg(a, "0");
    vb_resp_argf(a, "%d", k);
    vb_resp_arg(a, "DIALECT");
    vb_resp_arg(a, "2");
    return VB_OK;
}

int vb_valkey_search_ids(const redisReply *r, const char *prefix, int k, int64_t *ids, int *n, vb_error *err) {
    *n = 0;
    if (!r || r->type != REDIS_REPLY_ARRAY || r->elements < 1 || r->element[0]->type != REDIS_REPLY_INTEGER)
        return vb_error_set(err, "valkey", 1, "valkey: FT.SEARCH: unexpected reply shape (not [total, key, ...])");
    size_t plen = strlen(prefix);
    for (size_t i = 1; i < r->elements && *n < k; i++) {
        const redisReply *e = r->element[i];
        if (e->type != REDIS_REPLY_STRING || e->len <= plen || strncmp(e->str, prefix, plen) != 0) continue;
        char *end = NULL;
        long long id = strtoll(e->str + plen, &end, 10);
        if (end && *end == '\0') ids[(*n)++] = id;
    }
    return VB_OK;
}

void vb_valkey_index_status_parse(const redisReply *info, vb_valkey_index_status *x) {
    memset(x, 0, sizeof *x);
    snprintf(x->state, sizeof x->state, "%s", vb_resp_pair_str(info, "state"));
    x->num_docs = (long long)vb_resp_pair_num(info, "num_docs", 0);
    x->failures = (long long)vb_resp_pair_num(info, "hash_indexing_failures", 0);
    x->queue = (long long)vb_resp_pair_num(info, "mutation_queue_size", 0);
    x->percent = vb_resp_pair_num(info, "backfill_complete_percent", 0);
    x->ready = strcmp(x->state, "ready") == 0 && vb_resp_pair_num(info, "backfill_in_progress", 0) == 0 && x->queue == 0;
    x->dims = -1;
    /* 1.0: attributes at the top level; later releases nest them in index_definition */
    const redisReply *attrs = vb_resp_pair_get(vb_resp_pair_get(info, "index_definition"), "attributes");
    if (!attrs) attrs = vb_resp_pair_get(info, "attributes");
    for (size_t i = 0; attrs && attrs->type == REDIS_REPLY_ARRAY && i < attrs->elements; i++) {
        const redisReply *idx = vb_resp_pair_get(attrs->element[i], "index");
        if (idx && vb_resp_pair_get(idx, "dimensions")) x->dims = (long long)vb_resp_pair_num(idx, "dimensions", -1);
    }
}

int vb_valkey_index_missing(const char *error_text) { return error_text && strstr(error_text, "not found") != NULL; }
