/* The "redis" engine: Redis 8 vector sets (an HNSW graph per key, built into the server) through hiredis (RESP2:
 * Debian 12's 0.14). Verified against Debian's redis-server 8.0.2 (trixie) and 8.0.6 (unstable): docs/redis.md.
 *
 * One key per configuration (the `table` parameter, which a matrix gives each configuration its own of), one
 * element per row named by its id in decimal, the tag as a JSON attribute. The commands (engines/redis_vset.h
 * builds them, tests/unit/test_redis.c checks their shape):
 *     load     VADD KEY FP32 <blob> <id> [CAS] Q8|NOQUANT|BIN EF efc M m [SETATTR {"tag":N,"tag2":M,"label":L,
 *              "class":C}]
 *              pipelined (`pipeline` commands deep) on each loader connection: the graph grows on insert, so there
 *              is no separate build (VB_ENGINE_BUILD_ON_INSERT); CAS moves the candidate search into a thread
 *     search   VSIM KEY FP32 <blob> COUNT k EF ef [FILTER ".tag < N" | ".label == L" | ".tag < A and .tag2 < B"
 *              | ".class == C" [FILTER-EF f]] [NOTHREAD]
 *              EF is part of each query, so ef_search belongs to the connection by construction; NOTHREAD runs
 *              the search in the server's main thread (VSIM is threaded by default)
 *     churn    VREM KEY <id> (an absent id answers 0: skipped) and VADD again (an upsert: a live element gets the
 *              new vector and attribute; a row inserted without a tag or class has its old attribute dropped by
 *              VSETATTR KEY <id> ""); both are synchronous, so a removed row is never found once remove returns
 *     sizes    MEMORY USAGE KEY as the index (graph, vectors and attributes live in the one key), the rest of
 *              INFO memory's used_memory as the table, VCARD as the rows
 *     version  INFO server's redis_version, and VINFO's quant-type and hnsw-m once the key exists
 *     rows     VCARD, VRANDMEMBER KEY <VCARD> (every element once), and under NOQUANT VEMB per element (the
 *              quantised storages give back an approximation: ids only, their vectors not checked)
 *     counters INFO commandstats: calls of VSIM and VADD (cmdstat_VSIM, cmdstat_VADD), for the validity check
 *              that the server ran exactly the searches and writes vbench sent
 *     server time  INFO commandstats: cmdstat_VSIM's calls and usec (the server's time per query, per window)
 * Vector sets compare by cosine similarity only (VADD normalises every vector): the ops table says angular, so a
 * campaign refuses a euclidean or dot dataset before anything starts, and create refuses it too. vbench recomputes
 * every distance itself from the returned ids.
 *
 * Parameters: quantization q8 (the server's default: int8) | noquant (float32) | bin (1 bit per dimension); m
 * and ef_construction (0: the table spec's, which is the profile's); cas (0/1: VADD's CAS); nothread (0/1: VSIM's
 * NOTHREAD); filter_ef (0: the server's default, COUNT x 100); pipeline (commands in flight per connection).
 * The quantization and M are fixed per key by the server (a VADD with another one is refused): create deletes the
 * key first, and attach only takes a key with the same ones.
 *
 * Errors carry the server's words (engines/resp_common.h): a lost connection and the server's LOADING, BUSY,
 * TRYAGAIN and MASTERDOWN replies return VB_RETRY; the next call on that connection dials again. The engine keeps
 * one administrative connection (engines/adapter_common.h's admin) for create, sizes, version, attach and counters;
 * every vb_conn owns its own. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engines/engine.h"
#include "datasets/dataset.h"
#include "engines/redis_vset.h"
#include "engines/resp_common.h"
#include "engines/adapter_common.h"

#define RS_DOMAIN "redis"
#define RS_KEY_MAX 64
#define RS_EF_MAX 1000000          /* VADD refuses EF above 1000000 (8.0.2) */
#define RS_M_MIN 4                 /* VADD refuses M below 4 (8.0.2) */
#define RS_M_MAX 4096

static const char *const rs_params[] = {VB_RESP_ADDR_PARAMS, "table", "quantization", "m", "ef_construction",
                                        "cas", "nothread", "filter_ef", "pipeline", NULL};
/* VSIM's own arguments (NOTHREAD, FILTER-EF): the vector set is the same */
static const char *const rs_search_params[] = {"nothread", "filter_ef", NULL};

#define RS_LAT_BUCKETS 40              /* LATENCY HISTOGRAM: at most 30 buckets (1 us .. 1 s, then +Inf) */

typedef struct rs_state {
    vb_resp_addr addr;
    char key[RS_KEY_MAX + 1];
    vb_vset_quant quant;
    long m, ef_construction;           /* 0 = the table spec's */
    long cas, nothread, filter_ef, pipeline;
    int ready;                         /* create or attach has run */
    size_t dim, capacity;
    vb_vset_add_opts add;              /* what every VADD of this key carries */
    vb_admin admin;                /* a redisContext */
    /* the wait profile's last reading of LATENCY HISTOGRAM VSIM: calls per bucket (its upper bound in us) */
    long long lat_bound[RS_LAT_BUCKETS], lat_calls[RS_LAT_BUCKETS];
    int lat_n;
} rs_state;

_Static_assert(offsetof(rs_state, addr) == 0, "vb_resp_connect finds the address first in the state");

typedef vb_resp_conn rs_conn;          /* engines/resp_common.h: rc, ef_search (EF, 0: the server's default) */
#define RS_OF(c) ((rs_state *)(c)->state)

/* ---- parameters and connections ----------------------------------------------------------------------- */

static void rs_close(void *state) {
    rs_state *s = state;
    if (!s) return;
    vb_admin_destroy(&s->admin);
    free(s);
}

/* The key is written into commands: letters, digits, _ : . - only. */
static int key_check(const char *v, vb_error *err) {
    size_t n = strlen(v);
    if (n == 0 || n > RS_KEY_MAX || strspn(v, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_:.-") != n)
        return vb_error_set(err, "config", 1, "redis: table (the vector set's key) '%s': use 1..%d letters, digits, "
                            "_ : . or -", v, RS_KEY_MAX);
    return VB_OK;
}

/* Validates the profile parameters; connects nothing (the first operation does). Freed by rs_close. */
static int rs_open(const vb_engine_config *cfg, void **state, vb_error *err) {
    const vb_kv *kv = cfg->params;
    size_t n = cfg->n_params;
    if (vb_kv_check_keys(kv, n, rs_params, "redis engine", err) != VB_OK) return VB_ERROR;
    rs_state *s = calloc(1, sizeof *s);
    if (!s) return vb_error_set(err, RS_DOMAIN, 1, "redis: out of memory");
    vb_admin_init(&s->admin, &vb_resp_admin_ops, &s->addr);
    if (vb_resp_addr_read(&s->addr, RS_DOMAIN, cfg, err) != VB_OK) goto fail;
    const char *key = vb_kv_get(kv, n, "table", "vbench_vset");
    if (key_check(key, err) != VB_OK) goto fail;
    snprintf(s->key, sizeof s->key, "%s", key);
    if (vb_vset_quant_parse(vb_kv_get(kv, n, "quantization", "q8"), &s->quant, err) != VB_OK) goto fail;
    if (vb_kv_get_long(kv, n, "m", 0, RS_M_MIN, RS_M_MAX, &s->m, err) ||
        vb_kv_get_long(kv, n, "ef_construction", 0, 1, RS_EF_MAX, &s->ef_construction, err) ||
        vb_kv_get_long(kv, n, "cas", 0, 0, 1, &s->cas, err) ||
        vb_kv_get_long(kv, n, "nothread", 0, 0, 1, &s->nothread, err) ||
        vb_kv_get_long(kv, n, "filter_ef", 0, 1, 100000000L, &s->filter_ef, err) ||
        vb_kv_get_long(kv, n, "pipeline", 1000, 1, 1000000, &s->pipeline, err)) {
        vb_error_prefix(err, "redis");
        goto fail;
    }
    *state = s;
    return VB_OK;
fail:
    rs_close(s);
    return VB_ERROR;
}

/* ---- the key ------------------------------------------------------------------------------------------ */

static int check_spec(rs_state *s, const vb_table_spec *spec, vb_error *err) {
    if (spec->metric != VB_METRIC_ANGULAR)
        return vb_error_set(err, RS_DOMAIN, 1, "redis: vector sets compare by cosine similarity only: metric %s is "
                            "not supported (an angular dataset is)", vb_metric_name(spec->metric));
    if (spec->dim == 0 || spec->dim > 65536)
        return vb_error_set(err, RS_DOMAIN, 1, "redis: dimension %zu is outside 1..65536", spec->dim);
    s->dim = spec->dim;
    s->capacity = spec->capacity;
    s->add.quant = s->quant;
    s->add.m = s->m ? (int)s->m : (spec->m >= RS_M_MIN ? spec->m : 16);
    s->add.ef_construction = s->ef_construction ? (int)s->ef_construction
                                                : (spec->ef_construction > 0 ? spec->ef_construction : 200);
    s->add.cas = (int)s->cas;
    return VB_OK;
}

/* VINFO of the key. */
static int vinfo(rs_state *s, redisContext *rc, vb_vset_info *out, vb_error *err) {
    vb_resp_argv a;
    vb_vset_info_cmd(&a, s->key);
    redisReply *r = NULL;
    int st = vb_resp_run(RS_DOMAIN, rc, &a, &r, err, "VINFO");
    vb_vset_info_parse(st == VB_OK ? r : NULL, out);
    if (r) freeReplyObject(r);
    return st;
}

/* An empty vector set: the key is unlinked (VADD makes it again with this configuration's quantization and M). */
static int create_on(void *conn, void *arg, vb_error *err) {
    rs_state *s = arg;
    vb_resp_argv a;
    vb_resp_argv_init(&a);
    vb_resp_arg(&a, "UNLINK");
    vb_resp_arg(&a, s->key);
    return vb_resp_do(RS_DOMAIN, conn, &a, err, "UNLINK");
}

static int rs_create(void *state, const vb_table_spec *spec, vb_error *err) {
    rs_state *s = state;
    if (check_spec(s, spec, err) != VB_OK) return VB_ERROR;
    s->ready = 0;
    int st = vb_admin_run(&s->admin, create_on, s, err);
    s->ready = st == VB_OK;
    return st;
}

typedef struct attach_arg {
    rs_state *s;
    size_t missing;   /* rows that may be absent (spec->attach_missing: a churn in progress) */
    int found;
} attach_arg;

/* The key holds a vector set of this dimension, quantization and M with capacity rows (or up to `missing`
 * fewer): a finished load the running server still holds (a resumed campaign that adopted the unit). */
static int attach_on(void *conn, void *arg, vb_error *err) {
    attach_arg *a = arg;
    rs_state *s = a->s;
    vb_vset_info x;
    a->found = 0;
    int st = vinfo(s, conn, &x, err);
    if (st != VB_OK || !x.exists) return st;
    a->found = x.dim == (long long)s->dim && strcmp(x.quant_type, vb_vset_quant_type(s->quant)) == 0 &&
               x.m == s->add.m && x.size <= (long long)s->capacity &&
               x.size + (long long)a->missing >= (long long)s->capacity;
    return VB_OK;
}

static int rs_attach(void *state, const vb_table_spec *spec, int *found, vb_error *err) {
    rs_state *s = state;
    *found = 0;
    if (check_spec(s, spec, err) != VB_OK) return VB_ERROR;
    attach_arg a = {s, spec->attach_missing, 0};
    int st = vb_admin_run(&s->admin, attach_on, &a, err);
    *found = st == VB_OK && a.found;
    s->ready = *found;
    return st;
}

typedef struct sizes_arg {
    rs_state *s;
    vb_sizes *out;
} sizes_arg;

static int sizes_on(void *conn, void *arg, vb_error *err) {
    sizes_arg *a = arg;
    redisContext *rc = conn;
    char text[8192];
    int found = 0;
    int st = vb_resp_info(RS_DOMAIN, rc, "memory", text, sizeof text, err);
    if (st != VB_OK) return st;
    long long used = vb_resp_info_field(text, "used_memory", &found);
    if (!found) used = -1;
    vb_resp_argv c;
    vb_resp_argv_init(&c);
    vb_resp_arg(&c, "MEMORY");
    vb_resp_arg(&c, "USAGE");
    vb_resp_arg(&c, a->s->key);
    vb_resp_arg(&c, "SAMPLES");
    vb_resp_arg(&c, "0");              /* every element, not an estimate from five */
    redisReply *r = NULL;
    if ((st = vb_resp_run(RS_DOMAIN, rc, &c, &r, err, "MEMORY USAGE")) != VB_OK) return st;
    long long key = r->type == REDIS_REPLY_INTEGER ? r->integer : 0;   /* nil: no key yet */
    freeReplyObject(r);
    a->out->index_bytes = key;
    a->out->table_bytes = used >= 0 ? (used > key ? used - key : 0) : -1;
    vb_resp_argv_init(&c);
    vb_resp_arg(&c, "VCARD");
    vb_resp_arg(&c, a->s->key);
    if ((st = vb_resp_run(RS_DOMAIN, rc, &c, &r, err, "VCARD")) != VB_OK) return st;
    a->out->rows = r->type == REDIS_REPLY_INTEGER ? r->integer : -1;
    freeReplyObject(r);
    return VB_OK;
}

/* Index bytes: MEMORY USAGE of the key (graph, vectors, attributes); table bytes: the rest of used_memory (the
 * server's own overhead and other keys); rows: VCARD. */
static int rs_sizes(void *state, vb_sizes *out, vb_error *err) {
    sizes_arg a = {state, out};
    out->index_bytes = out->table_bytes = out->rows = -1;
    return vb_admin_run(&((rs_state *)state)->admin, sizes_on, &a, err);
}

typedef struct rows_arg {
    rs_state *s;
    vb_row_fn fn;
    void *arg;
} rows_arg;

static int rows_on(void *conn, void *arg, vb_error *err) {
    rows_arg *a = arg;
    rs_state *s = a->s;
    redisContext *rc = conn;
    vb_resp_argv c;
    vb_resp_argv_init(&c);
    vb_resp_arg(&c, "VCARD");
    vb_resp_arg(&c, s->key);
    redisReply *r = NULL;
    int st = vb_resp_run(RS_DOMAIN, rc, &c, &r, err, "VCARD");
    if (st != VB_OK) return st;
    long long card = r->type == REDIS_REPLY_INTEGER ? r->integer : 0;
    freeReplyObject(r);
    if (card <= 0) return VB_OK;
    vb_vset_members_cmd(&c, s->key, card);
    if ((st = vb_resp_run(RS_DOMAIN, rc, &c, &r, err, "VRANDMEMBER")) != VB_OK) return st;
    int64_t *ids = malloc((size_t)card * sizeof *ids);
    float *v = malloc(s->dim * sizeof *v);
    int n = 0;
    st = ids && v ? vb_vset_sim_ids(r, (int)card, ids, &n, err) : vb_error_set(err, RS_DOMAIN, 1, "redis: out of memory");
    freeReplyObject(r);
    if (st == VB_OK && n != card)
        st = vb_error_set(err, RS_DOMAIN, 1, "redis: VRANDMEMBER %lld listed %d elements of %lld", card, n, card);
    for (int i = 0; st == VB_OK && i < n; i++) {
        const float *vec = NULL;
        char element[24];
        if (s->quant == VB_VSET_NOQUANT) {
            vb_vset_emb_cmd(&c, s->key, vb_vset_element(ids[i], element, sizeof element));
            if ((st = vb_resp_run(RS_DOMAIN, rc, &c, &r, err, "VEMB")) != VB_OK) break;
            st = vb_vset_emb_parse(r, element, v, s->dim, err);
            freeReplyObject(r);
            vec = v;
        }
        if (st == VB_OK && a->fn(a->arg, ids[i], vec))
            st = vb_error_set(err, RS_DOMAIN, 1, "redis: the listing of the rows was stopped");
    }
    free(ids);
    free(v);
    return st;
}

/* Every element of the key; their vectors only where the key stores them as given (NOQUANT). */
static int rs_rows(void *state, vb_row_fn fn, void *arg, vb_error *err) {
    rows_arg a = {state, fn, arg};
    return vb_admin_run(&((rs_state *)state)->admin, rows_on, &a, err);
}

typedef struct version_arg {
    rs_state *s;
    char *buf;
    size_t len;
} version_arg;

/* "Redis 8.0.2, vector set quant-type int8, hnsw-m 16": the server's redis_version and what VINFO says the key
 * holds (the quantization and M the server really uses), once it exists. */
static int version_on(void *conn, void *arg, vb_error *err) {
    version_arg *a = arg;
    char text[8192], server[64];
    int st = vb_resp_info(RS_DOMAIN, conn, "server", text, sizeof text, err);
    if (st != VB_OK) return st;
    if (!vb_resp_info_text(text, "redis_version", server, sizeof server)) snprintf(server, sizeof server, "unknown");
    vb_vset_info x;
    if ((st = vinfo(a->s, conn, &x, err)) != VB_OK) return st;
    if (x.exists)
        snprintf(a->buf, a->len, "Redis %s, vector set quant-type %s, hnsw-m %lld", server, x.quant_type, x.m);
    else
        snprintf(a->buf, a->len, "Redis %s", server);
    return VB_OK;
}

static int rs_version(void *state, char *buf, size_t len, vb_error *err) {
    version_arg a = {state, buf, len};
    return vb_admin_run(&((rs_state *)state)->admin, version_on, &a, err);
}

static int counters_on(void *conn, void *arg, vb_error *err) {
    vb_counters *out = arg;
    char text[16384];
    int st = vb_resp_info(RS_DOMAIN, conn, "commandstats", text, sizeof text, err);
    if (st != VB_OK) return st;
    out->searches = vb_resp_cmdstat_calls(text, "vsim");
    out->writes = vb_resp_cmdstat_calls(text, "vadd");
    return VB_OK;
}

/* INFO commandstats: the calls of VSIM and VADD since the server started (failed calls included: an error
 * reply is a call the server ran). */
static int rs_counters(void *state, vb_counters *out, vb_error *err) {
    out->searches = out->writes = -1;
    return vb_admin_run(&((rs_state *)state)->admin, counters_on, out, err);
}

static int stats_on(void *conn, void *arg, vb_error *err) {
    vb_server_stats *out = arg;
    char text[16384];
    int st = vb_resp_info(RS_DOMAIN, conn, "commandstats", text, sizeof text, err);
    if (st != VB_OK) return st;
    out->calls = vb_resp_cmdstat_calls(text, "vsim");
    out->exec_s = (double)vb_resp_cmdstat_field(text, "vsim", "usec") / 1e6;
    return VB_OK;
}

/* The server's accounting of the searches (engine.h vb_server_stats): INFO commandstats' cmdstat_VSIM calls and
 * usec, cumulative since the server started (CONFIG RESETSTAT clears them; a delta that goes back is unknown). Only
 * vbench's searches run VSIM on the benchmark's server, so over a window the calls delta is its queries, warm-up and
 * edge queries. */
static int rs_server_stats(void *state, vb_server_stats *out, vb_error *err) {
    out->calls = -1, out->exec_s = -1;
    return vb_admin_run(&((rs_state *)state)->admin, stats_on, out, err);
}

/* ---- the latency profile ------------------------------------------------------------------------------- */

/* One reading of LATENCY HISTOGRAM VSIM (RESP2: ["vsim", ["calls", N, "histogram_usec", [b1, c1, b2, c2, ...]]],
 * c the cumulative calls at or below bound b us, empty buckets left out) as calls per bucket; *n 0 when the server
 * has no VSIM histogram yet. VB_ERROR for a reply of another shape. */
static int lat_read(redisContext *rc, long long *bound, long long *calls, int *n, vb_error *err) {
    vb_resp_argv c;
    vb_resp_argv_init(&c);
    vb_resp_arg(&c, "LATENCY");
    vb_resp_arg(&c, "HISTOGRAM");
    vb_resp_arg(&c, "vsim");
    redisReply *r = NULL;
    int st = vb_resp_run(RS_DOMAIN, rc, &c, &r, err, "LATENCY HISTOGRAM");
    if (st != VB_OK) return st;
    *n = 0;
    const redisReply *h = NULL;
    if (r->type == REDIS_REPLY_ARRAY && r->elements == 2 && r->element[1]->type == REDIS_REPLY_ARRAY) {
        const redisReply *m = r->element[1];
        for (size_t i = 0; i + 1 < m->elements; i += 2)
            if (m->element[i]->type == REDIS_REPLY_STRING && strcmp(m->element[i]->str, "histogram_usec") == 0 &&
                m->element[i + 1]->type == REDIS_REPLY_ARRAY)
                h = m->element[i + 1];
        if (!h) st = vb_error_set(err, RS_DOMAIN, 1, "redis: LATENCY HISTOGRAM vsim: no histogram_usec in the reply");
    } else if (!(r->type == REDIS_REPLY_ARRAY && r->elements == 0)) {
        st = vb_error_set(err, RS_DOMAIN, 1, "redis: LATENCY HISTOGRAM vsim: an unexpected reply (type %d, %zu elements)",
                          r->type, r->type == REDIS_REPLY_ARRAY ? r->elements : 0);
    }
    long long below = 0;
    for (size_t i = 0; h && st == VB_OK && i + 1 < h->elements && *n < RS_LAT_BUCKETS; i += 2) {
        if (h->element[i]->type != REDIS_REPLY_INTEGER || h->element[i + 1]->type != REDIS_REPLY_INTEGER) {
            st = vb_error_set(err, RS_DOMAIN, 1, "redis: LATENCY HISTOGRAM vsim: a bucket that is not two integers");
            break;
        }
        bound[*n] = h->element[i]->integer;
        calls[*n] = h->element[i + 1]->integer - below;   /* cumulative -> this bucket's own */
        below = h->element[i + 1]->integer;
        (*n)++;
    }
    freeReplyObject(r);
    return st;
}

typedef struct lat_arg {
    rs_state *s;
    vb_wait_profile *acc;   /* NULL: the baseline only */
} lat_arg;

static int lat_on(void *conn, void *arg, vb_error *err) {
    lat_arg *a = arg;
    rs_state *s = a->s;
    long long bound[RS_LAT_BUCKETS], calls[RS_LAT_BUCKETS];
    int n = 0;
    int st = lat_read(conn, bound, calls, &n, err);
    if (st != VB_OK) return st;
    for (int i = 0; a->acc && i < n; i++) {
        long long before = 0;
        for (int j = 0; j < s->lat_n; j++)
            if (s->lat_bound[j] == bound[i]) before = s->lat_calls[j];
        if (calls[i] > before) {
            char event[48];
            snprintf(event, sizeof event, "<= %lld us", bound[i]);
            vb_wait_profile_add(a->acc, "VSIM latency", event, (uint64_t)(calls[i] - before));
        }
    }
    memcpy(s->lat_bound, bound, sizeof bound);
    memcpy(s->lat_calls, calls, sizeof calls);
    s->lat_n = n;
    return VB_OK;
}

/* engine.h wait_sample, for Redis: a single-threaded server has no waits to name, so its profile is its own latency
 * statistics (the "where the version has them": LATENCY HISTOGRAM, Redis 7+, latency-tracking on by
 * default): the VSIM calls that ended since the last call, per latency bucket (class "VSIM latency", event "<= B us",
 * acc->timed 2: the samples count calls). The probe (acc NULL) takes the baseline. */
static int rs_wait_sample(void *state, vb_wait_profile *acc, vb_error *err) {
    rs_state *s = state;
    if (!acc) s->lat_n = 0;
    else acc->timed = 2;
    lat_arg a = {s, acc};
    return vb_admin_run(&s->admin, lat_on, &a, err);
}

/* ---- writes ------------------------------------------------------------------------------------------- */

/* Pipelines VADD per row (engines/resp_common.h's pipe), followed by VSETATTR "" for a row without a tag or class
 * when untag is set (an upsert must not keep an old attribute). */
static int write_rows(rs_conn *c, const int64_t *ids, const float *vecs, const int32_t *tags, const int32_t *classes,
                      size_t n, int untag, vb_error *err) {
    rs_state *s = RS_OF(c);
    vb_resp_pipe p;
    vb_resp_pipe_init(&p, RS_DOMAIN, c->rc, (size_t)s->pipeline);
    for (size_t i = 0; i < n && p.status != VB_RETRY; i++) {
        char element[24];
        vb_resp_argv a;
        vb_vset_element(ids[i], element, sizeof element);
        int32_t attrs[3] = {tags ? tags[i] : 0, vb_dataset_tag2(ids[i]), vb_dataset_label(ids[i])};
        vb_vset_add_cmd(&a, s->key, vecs + i * s->dim, s->dim, element, &s->add, tags ? attrs : NULL,
                        classes ? classes + i : NULL);
        vb_resp_pipe_add(&p, &a, err);
        if (!tags && !classes && untag) {
            vb_vset_untag_cmd(&a, s->key, element);
            vb_resp_pipe_add(&p, &a, err);
        }
    }
    return vb_resp_pipe_finish(&p, err);
}

static int rs_load(void *conn, const int64_t *ids, const float *vecs, const int32_t *tags, const int32_t *classes,
                   size_t n, vb_error *err) {
    rs_conn *c = conn;
    if (!RS_OF(c)->ready) return vb_error_set(err, RS_DOMAIN, 1, "redis: no vector set: create or attach first");
    int st = vb_resp_ready(c->addr, &c->rc, err);
    return st == VB_OK ? write_rows(c, ids, vecs, tags, classes, n, 0, err) : st;
}

/* VADD of a live element replaces its vector (and, with SETATTR, its attribute); of a removed or new one adds it. */
static int rs_insert(void *conn, const int64_t *ids, const float *vecs, const int32_t *tags, const int32_t *classes,
                     size_t n, vb_error *err) {
    rs_conn *c = conn;
    if (!RS_OF(c)->ready) return vb_error_set(err, RS_DOMAIN, 1, "redis: no vector set: create or attach first");
    int st = vb_resp_ready(c->addr, &c->rc, err);
    return st == VB_OK ? write_rows(c, ids, vecs, tags, classes, n, 1, err) : st;
}

/* VREM of the elements, pipelined; an absent one answers 0 and is skipped. */
static int rs_remove(void *conn, const int64_t *ids, size_t n, vb_error *err) {
    rs_conn *c = conn;
    rs_state *s = RS_OF(c);
    if (!s->ready) return vb_error_set(err, RS_DOMAIN, 1, "redis: no vector set: create or attach first");
    int st = vb_resp_ready(&s->addr, &c->rc, err);
    if (st != VB_OK) return st;
    vb_resp_pipe p;
    vb_resp_pipe_init(&p, RS_DOMAIN, c->rc, (size_t)s->pipeline);
    for (size_t i = 0; i < n && p.status != VB_RETRY; i++) {
        char element[24];
        vb_resp_argv a;
        vb_vset_rem_cmd(&a, s->key, vb_vset_element(ids[i], element, sizeof element));
        vb_resp_pipe_add(&p, &a, err);
    }
    return vb_resp_pipe_finish(&p, err);
}

/* ---- search ------------------------------------------------------------------------------------------- */

static int rs_set_search(void *conn, const vb_search_params *p, vb_error *err) {
    rs_conn *c = conn;
    if (p->ef_search < 1 || p->ef_search > RS_EF_MAX)
        return vb_error_set(err, RS_DOMAIN, 1, "redis: ef_search %d is outside VSIM's EF 1..%d", p->ef_search,
                            RS_EF_MAX);
    c->ef_search = p->ef_search;   /* sent with every query: a setting of this connection by construction */
    return VB_OK;
}

static int rs_search(void *conn, const float *query, int k, const vb_filter *filter, int64_t *ids_out, int *n_out,
                     vb_error *err) {
    rs_conn *c = conn;
    rs_state *s = RS_OF(c);
    *n_out = 0;
    if (k <= 0) return VB_OK;
    if (!s->ready) return vb_error_set(err, RS_DOMAIN, 1, "redis: no vector set: create or attach first");
    if (filter && (unsigned)filter->kind >= VB_FILTER_KINDS)
        return vb_error_set(err, RS_DOMAIN, 1, "redis: unknown filter kind %d", (int)filter->kind);
    int st = vb_resp_ready(&s->addr, &c->rc, err);
    if (st != VB_OK) return st;
    vb_vset_sim_opts o = {.ef_search = c->ef_search, .filter = filter, .filter_ef = (int)s->filter_ef,
                          .nothread = (int)s->nothread};
    vb_resp_argv a;
    if (vb_vset_sim_cmd(&a, s->key, query, s->dim, k, &o, err)) return VB_ERROR;
    redisReply *r = NULL;
    if ((st = vb_resp_run(RS_DOMAIN, c->rc, &a, &r, err, "VSIM")) != VB_OK) return st;
    st = vb_vset_sim_ids(r, k, ids_out, n_out, err);
    freeReplyObject(r);
    return st;
}

const vb_engine_ops vb_engine_redis = {
    .name = "redis",
    .description = "Redis 8 vector sets over hiredis (VADD / VSIM, HNSW per key, int8 / float32 / binary storage, "
                   "cosine only; verified against Debian's redis-server 8.0)",
    .flags = VB_ENGINE_FILTER | VB_ENGINE_FILTER_EQ | VB_ENGINE_FILTER_AND | VB_ENGINE_FILTER_CLASS |
             VB_ENGINE_BUILD_ON_INSERT,
    .param_names = rs_params,
    .search_params = rs_search_params,
    /* Redis 8 vector sets: the graph grows on VADD. From the million-row campaign here (1M x 96 on one server CPU,
     * docs/results-million-96.md): load 1,163 rows/s, reinserts about 890, QPS 561 at ef_search 80 (qps100 449),
     * filtered 60 - 80; taken back to dimension 128 and 20,000 rows (x 0.75 x (1M / 20k)^0.15 = x 1.35). No
     * persistence in the recipe, so nothing on disk grows with the rows. */
    .estimate = {.load_rows_s = 1600, .insert_rows_s = 1200, .qps100 = 600, .filtered_qps = 100,
                 .no_disk = "the data is in the server's memory: the recipe keeps no persistence"},
    .metrics = VB_METRIC_BIT(VB_METRIC_ANGULAR),
    .open = rs_open,
    .close = rs_close,
    .create = rs_create,
    .connect = vb_resp_connect,
    .disconnect = vb_resp_disconnect,
    .load = rs_load,
    .set_search = rs_set_search,
    .search = rs_search,
    .version = rs_version,
    .attach = rs_attach,
    .remove = rs_remove,
    .insert = rs_insert,
    .sizes = rs_sizes,
    .rows = rs_rows,
    .counters = rs_counters,
    .server_stats = rs_server_stats,
    .wait_sample = rs_wait_sample,
};
