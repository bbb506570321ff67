/* The commands the redis adapter (engines/redis.c) sends to a Redis 8 vector set and the replies it reads,
 * built and parsed here without a server, so that tests/unit/test_redis.c checks their exact shape (the syntax of
 * redis.io's VADD / VSIM / VREM / VINFO pages, checked against trixie's redis-server 8.0.2) and the e2e tests run
 * the same bytes against the real server.
 *
 *   add      VADD KEY FP32 <blob> <id> [CAS] Q8|NOQUANT|BIN EF <ef_construction> M <m>
 *            [SETATTR {"tag":N,"tag2":M,"label":L,"class":C}]   (the attribute columns of engines/engine.h vb_filter)
 *            (the element is the row id in decimal; the vector little-endian float32, as FP32 wants it)
 *   untag    VSETATTR KEY <id> ""        (an upsert of a row without a tag or class drops its old attribute)
 *   remove   VREM KEY <id>               (1 removed, 0 absent)
 *   search   VSIM KEY FP32 <blob> COUNT k [EF ef] [FILTER <expr> [FILTER-EF f]] [NOTHREAD]
 *            (expr from engines/filter.h vb_filter_redis_expr: ".tag < N", ".label == L", ".tag < A and .tag2 < B", ".class == C")
 *            (the reply: the elements, most similar first)
 *   info     VINFO KEY: quant-type (int8, f32, bin), hnsw-m, vector-dim, size
 *   members  VRANDMEMBER KEY <count>     (count >= VCARD: every element once, in no order)
 *   vector   VEMB KEY <id>               (the vector de-normalised, and de-quantised: exact only under NOQUANT)
 *
 * Vector sets compare by cosine similarity only (VADD normalises every vector): the metric vbench calls angular. */
#ifndef VB_ENGINES_REDIS_VSET_H
#define VB_ENGINES_REDIS_VSET_H

#include <stddef.h>
#include <stdint.h>

#include "engines/engine.h"
#include "engines/resp_common.h"

typedef enum { VB_VSET_Q8 = 0, VB_VSET_NOQUANT = 1, VB_VSET_BIN = 2 } vb_vset_quant;

/* The profile's words q8 / noquant / bin; VB_ERROR (domain "config") naming the accepted ones. */
int vb_vset_quant_parse(const char *word, vb_vset_quant *out, vb_error *err);
const char *vb_vset_quant_word(vb_vset_quant q);      /* "q8", "noquant", "bin" */
const char *vb_vset_quant_option(vb_vset_quant q);    /* VADD's option: "Q8", "NOQUANT", "BIN" */
const char *vb_vset_quant_type(vb_vset_quant q);      /* VINFO's quant-type: "int8", "f32", "bin" */

/* A row id as an element name, into buf; returns buf. */
const char *vb_vset_element(int64_t id, char *buf, size_t len);

typedef struct vb_vset_add_opts {
    vb_vset_quant quant;
    int ef_construction, m;            /* 0: the server's default (not sent) */
    int cas;
} vb_vset_add_opts;

/* The commands, into a (initialised here). Strings passed in are borrowed by a until it is sent. attrs: the row's
 * tag, tag2 and label, or NULL for a row without them; cls: its class, or NULL for a row without one. SETATTR
 * carries the ones given ({"tag":N,"tag2":M,"label":L,"class":C}); neither: no SETATTR. */
void vb_vset_add_cmd(vb_resp_argv *a, const char *key, const float *v, size_t dim, const char *element,
                     const vb_vset_add_opts *o, const int32_t attrs[3], const int32_t *cls);
void vb_vset_untag_cmd(vb_resp_argv *a, const char *key, const char *element);
void vb_vset_rem_cmd(vb_resp_argv *a, const char *key, const char *element);

typedef struct vb_vset_sim_opts {
    int ef_search;                     /* 0: not sent */
    const vb_filter *filter;           /* NULL or VB_FILTER_NONE: no filter */
    int filter_ef;                     /* 0: not sent (the server's default, COUNT x 100) */
    int nothread;
} vb_vset_sim_opts;

/* VB_ERROR when the filter's expression does not fit (err filled). */
int vb_vset_sim_cmd(vb_resp_argv *a, const char *key, const float *q, size_t dim, int k, const vb_vset_sim_opts *o,
                    vb_error *err);
void vb_vset_info_cmd(vb_resp_argv *a, const char *key);
void vb_vset_members_cmd(vb_resp_argv *a, const char *key, long long count);
void vb_vset_emb_cmd(vb_resp_argv *a, const char *key, const char *element);

/* VEMB's reply (an array of dim numbers as bulk strings) into out. VB_ERROR (err filled) naming the element for
 * any other shape: not an array, another length, a value that is not a number. */
int vb_vset_emb_parse(const redisReply *r, const char *element, float *out, size_t dim, vb_error *err);

/* The ids of VSIM's reply (an array of element names): at most k into ids, their count in *n. VB_ERROR (err
 * filled) when the reply is not an array of decimal ids. */
int vb_vset_sim_ids(const redisReply *r, int k, int64_t *ids, int *n, vb_error *err);

typedef struct vb_vset_info {
    int exists;                        /* VINFO answered with fields (nil: no such key) */
    char quant_type[16];
    long long m, dim, size;            /* -1 when not said */
} vb_vset_info;

void vb_vset_info_parse(const redisReply *r, vb_vset_info *out);

#endif
