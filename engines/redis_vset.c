/* Redis 8 vector set commands and replies, without a server (see engines/redis_vset.h). */
#include "engines/redis_vset.h"
#include "engines/filter.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* FP32 is a little-endian blob: the host's own layout on x86 and ARM. */
_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "redis: the vector bytes are written as the host stores them");

static const char *const quant_words[] = {"q8", "noquant", "bin"};
static const char *const quant_options[] = {"Q8", "NOQUANT", "BIN"};
static const char *const quant_types[] = {"int8", "f32", "bin"};

int vb_vset_quant_parse(const char *word, vb_vset_quant *out, vb_error *err) {
    for (int i = 0; i < 3; i++)
        if (strcmp(word, quant_words[i]) == 0) {
            *out = (vb_vset_quant)i;
            return VB_OK;
        }
    return vb_error_set(err, "config", 1, "redis: quantization '%s': expected q8, noquant or bin", word);
}

const char *vb_vset_quant_word(vb_vset_quant q) { return (unsigned)q < 3 ? quant_words[q] : "?"; }
const char *vb_vset_quant_option(vb_vset_quant q) { return (unsigned)q < 3 ? quant_options[q] : "?"; }
const char *vb_vset_quant_type(vb_vset_quant q) { return (unsigned)q < 3 ? quant_types[q] : "?"; }

const char *vb_vset_element(int64_t id, char *buf, size_t len) {
    snprintf(buf, len, "%" PRId64, id);
    return buf;
}

void vb_vset_add_cmd(vb_resp_argv *a, const char *key, const float *v, size_t dim, const char *element,
                     const vb_vset_add_opts *o, const int32_t attrs[3], const int32_t *cls) {
    vb_resp_argv_init(a);
    vb_resp_arg(a, "VADD");
    vb_resp_arg(a, key);
    vb_resp_arg(a, "FP32");
    vb_resp_arg_bin(a, v, dim * sizeof(float));
    vb_resp_arg(a, element);
    if (o->cas) vb_resp_arg(a, "CAS");
    vb_resp_arg(a, vb_vset_quant_option(o->quant));
    if (o->ef_construction > 0) {
        vb_resp_arg(a, "EF");
        vb_resp_argf(a, "%d", o->ef_construction);
    }
    if (o->m > 0) {
        vb_resp_arg(a, "M");
        vb_resp_argf(a, "%d", o->m);
    }
    if (attrs && cls) {
        vb_resp_arg(a, "SETATTR");
        vb_resp_argf(a, "{\"tag\":%" PRId32 ",\"tag2\":%" PRId32 ",\"label\":%" PRId32 ",\"class\":%" PRId32 "}",
                     attrs[0], attrs[1], attrs[2], *cls);
    } else if (attrs) {
        vb_resp_arg(a, "SETATTR");
        vb_resp_argf(a, "{\"tag\":%" PRId32 ",\"tag2\":%" PRId32 ",\"label\":%" PRId32 "}", attrs[0], attrs[1],
                     attrs[2]);
    } else if (cls) {
        vb_resp_arg(a, "SETATTR");
        vb_resp_argf(a, "{\"class\":%" PRId32 "}", *cls);
    }
}

void vb_vset_untag_cmd(vb_resp_argv *a, const char *key, const char *element) {
    vb_resp_argv_init(a);
    vb_resp_arg(a, "VSETATTR");
    vb_resp_arg(a, key);
    vb_resp_arg(a, element);
    vb_resp_arg(a, "");
}

void vb_vset_rem_cmd(vb_resp_argv *a, const char *key, const char *element) {
    vb_resp_argv_init(a);
    vb_resp_arg(a, "VREM");
    vb_resp_arg(a, key);
    vb_resp_arg(a, element);
}

int vb_vset_sim_cmd(vb_resp_argv *a, const char *key, const float *q, size_t dim, int k, const vb_vset_sim_opts *o,
                    vb_error *err) {
    char expr[128];
    int filtered = o->filter && o->filter->kind != VB_FILTER_NONE;
    if (filtered && vb_filter_redis_expr(o->filter, expr, sizeof expr))
        return vb_error_set(err, "redis", 1, "redis: the filter does not fit its expression");
    vb_resp_argv_init(a);
    vb_resp_arg(a, "VSIM");
    vb_resp_arg(a, key);
    vb_resp_arg(a, "FP32");
    vb_resp_arg_bin(a, q, dim * sizeof(float));
    vb_resp_arg(a, "COUNT");
    vb_resp_argf(a, "%d", k);
    if (o->ef_search > 0) {
        vb_resp_arg(a, "EF");
        vb_resp_argf(a, "%d", o->ef_search);
    }
    if (filtered) {
        vb_resp_arg(a, "FILTER");
        vb_resp_argf(a, "%s", expr);
        if (o->filter_ef > 0) {
            vb_resp_arg(a, "FILTER-EF");
            vb_resp_argf(a, "%d", o->filter_ef);
        }
    }
    if (o->nothread) vb_resp_arg(a, "NOTHREAD");
    return VB_OK;
}

void vb_vset_info_cmd(vb_resp_argv *a, const char *key) {
    vb_resp_argv_init(a);
    vb_resp_arg(a, "VINFO");
    vb_resp_arg(a, key);
}

void vb_vset_members_cmd(vb_resp_argv *a, const char *key, long long count) {
    vb_resp_argv_init(a);
    vb_resp_arg(a, "VRANDMEMBER");
    vb_resp_arg(a, key);
    vb_resp_argf(a, "%lld", count);
}

void vb_vset_emb_cmd(vb_resp_argv *a, const char *key, const char *element) {
    vb_resp_argv_init(a);
    vb_resp_arg(a, "VEMB");
    vb_resp_arg(a, key);
    vb_resp_arg(a, element);
}

int vb_vset_emb_parse(const redisReply *r, const char *element, float *out, size_t dim, vb_error *err) {
    if (!r || r->type != REDIS_REPLY_ARRAY || r->elements != dim)
        return vb_error_set(err, "redis", 1, "redis: VEMB %s: unexpected reply (%s%zu values, want %zu)", element,
                            r && r->type == REDIS_REPLY_ARRAY ? "" : "not an array, ",
                            r && r->type == REDIS_REPLY_ARRAY ? r->elements : 0, dim);
    for (size_t j = 0; j < dim; j++) {
        const redisReply *e = r->element[j];
        char *end = NULL;
        float v = e->type == REDIS_REPLY_STRING ? strtof(e->str, &end) : 0;
        if (e->type != REDIS_REPLY_STRING || !e->len || !end || *end != '\0')
            return vb_error_set(err, "redis", 1, "redis: VEMB %s: value %zu is not a number (%.40s)", element, j,
                                e->type == REDIS_REPLY_STRING ? e->str : "not a string");
        out[j] = v;
    }
    return VB_OK;
}

int vb_vset_sim_ids(const redisReply *r, int k, int64_t *ids, int *n, vb_error *err) {
    *n = 0;
    if (!r || r->type != REDIS_REPLY_ARRAY)
        return vb_error_set(err, "redis", 1, "redis: VSIM: unexpected reply shape (not an array of elements)");
    for (size_t i = 0; i < r->elements && *n < k; i++) {
        const redisReply *e = r->element[i];
        char *end = NULL;
        long long id = e->type == REDIS_REPLY_STRING ? strtoll(e->str, &end, 10) : 0;
        if (e->type != REDIS_REPLY_STRING || !e->len || !end || *end != '\0')
            return vb_error_set(err, "redis", 1, "redis: VSIM: element %zu of the reply is not a row id (%.40s)", i,
                                e->type == REDIS_REPLY_STRING ? e->str : "not a string");
        ids[(*n)++] = id;
    }
    return VB_OK;
}

void vb_vset_info_parse(const redisReply *r, vb_vset_info *out) {
    memset(out, 0, sizeof *out);
    out->m = out->dim = out->size = -1;
    out->exists = r && r->type == REDIS_REPLY_ARRAY && r->elements >= 2;
    if (!out->exists) return;
    snprintf(out->quant_type, sizeof out->quant_type, "%s", vb_resp_pair_str(r, "quant-type"));
    out->m = (long long)vb_resp_pair_num(r, "hnsw-m", -1);
    out->dim = (long long)vb_resp_pair_num(r, "vector-dim", -1);
    out->size = (long long)vb_resp_pair_num(r, "size", -1);
}
