/* The "valkey" engine: Valkey + the valkey-search module (HNSW) through hiredis (RESP2: Debian 12's 0.14).
 *
 * Written from the documentation: Debian ships Valkey without the search module, so no server with it runs on
 * this machine. Every command below is built by engines/valkey_docs.c and compared with valkey-search's documented
 * syntax by tests/unit/test_valkey.c, which also feeds the parsers replies shaped like the documentation's; the
 * connection, error and pipeline code is engines/resp_common.c, shared with the redis adapter and exercised against
 * a real Redis 8 there.
 *
 * A row is a HASH at PREFIX<id> with five members: "v", the vector as little-endian float32 bytes (the module's
 * FLOAT32 format), and "tag", "tag2", "label" and "class", the filter columns (engines/engine.h vb_filter) as
 * decimal numbers (the first three absent for a row without a tag, class for a row without a class). The index is
 *     FT.CREATE IDX ON HASH PREFIX 1 PREFIX SCHEMA tag NUMERIC tag2 NUMERIC label NUMERIC class NUMERIC
 *         v VECTOR HNSW 12 TYPE FLOAT32 DIM d DISTANCE_METRIC L2|COSINE|IP M m EF_CONSTRUCTION efc INITIAL_CAP n
 * made by build, after the load: the rows go in as pipelined HSETs with no index over them (fast), then FT.CREATE
 * starts the module's backfill, and build returns only when FT.INFO says it is finished (state "ready",
 * backfill_in_progress 0, mutation_queue_size 0) and every key of the prefix is in the index, so build_s and
 * first_query_s mean what they mean for the other engines. A search is
 *     FT.SEARCH IDX "*=>[KNN k @v $q EF_RUNTIME ef]" PARAMS 2 q BLOB NOCONTENT LIMIT 0 k DIALECT 2
 * with the filter in parentheses in place of "*" (vb_filter_valkey_query: "(@tag:[-inf (N])", "(@label:[L L])",
 * "(@tag:[-inf (A] @tag2:[-inf (B])", "(@class:[C C])"; a row without the members never passes one).
 * NOCONTENT answers are the keys, closest first. EF_RUNTIME is part of each query, so ef_search belongs to the
 * connection by construction. Churn is DEL (absent keys are no error) and HSET (an upsert by nature; a row
 * inserted without a tag loses its old attribute members by HDEL first); both wait until the index has caught up
 * (mutation_queue_size 0), so a removed row is never found once remove returns. docs/valkey.md says which
 * documentation each command follows.
 *
 * Checks that fail the phase rather than report a wrong number: evicted_keys > 0 (the server dropped rows under
 * maxmemory), hash_indexing_failures > 0 (rows the module could not index), and an index that holds fewer keys
 * than the prefix after its backfill. Sizes: the module's own memory (INFO search, *used_memory_bytes) as the
 * index, the rest of used_memory (INFO memory) as the table, num_docs (FT.INFO) as the rows; the module's count
 * misses what the shared gRPC/Protobuf/Abseil libraries allocate, so the server's RSS and cgroup memory (the
 * sampler) are the cost to compare.
 *
 * Errors carry the server's words (engines/resp_common.h): a lost connection and the server's LOADING, BUSY,
 * TRYAGAIN and MASTERDOWN replies return VB_RETRY; the next call on that connection dials again. The engine keeps
 * one administrative connection (engines/adapter_common.h's admin: dialled on first use, serialised, dialled again
 * after a loss) for create, build, maintain, sizes, version and attach; every vb_conn owns its own. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "datasets/dataset.h"
#include "engines/engine.h"
#include "engines/resp_common.h"
#include "engines/adapter_common.h"
#include "engines/valkey_docs.h"

#define VK_DOMAIN "valkey"
#define VK_NAME_MAX 64
#define VK_POLL_MS 100

static const char *const vk_params[] = {VB_RESP_ADDR_PARAMS, "index", "prefix", "m", "ef_construction", "pipeline",
                                        NULL};

typedef struct vk_state {
    vb_resp_addr addr;
    long pipeline;
    char index[VK_NAME_MAX + 1], prefix[VK_NAME_MAX + 1];
    long m, ef_construction;           /* 0 = the table spec's */
    int ready;                         /* create or attach has run */
    size_t dim, capacity;
    vb_metric metric;
    int spec_m, spec_efc;
    vb_admin admin;                /* a redisContext */
} vk_state;

_Static_assert(offsetof(vk_state, addr) == 0, "vb_resp_connect finds the address first in the state");

typedef vb_resp_conn vk_conn;          /* engines/resp_common.h: rc, ef_search (EF_RUNTIME, 0: the index's default) */
#define VK_OF(c) ((vk_state *)(c)->state)

static void sleep_ms(int ms) {
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* ---- parameters and connections ----------------------------------------------------------------------- */

static void vk_close(void *state) {
    vk_state *s = state;
    if (!s) return;
    vb_admin_destroy(&s->admin);
    free(s);
}

/* Index names and prefixes are written into commands and into SCAN's pattern: letters, digits, _ : . - only. */
static int name_check(const char *param, const char *v, vb_error *err) {
    size_t n = strlen(v);
    if (n == 0 || n > VK_NAME_MAX || strspn(v, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_:.-") != n)
        return vb_error_set(err, "config", 1, "valkey: %s '%s': use 1..%d letters, digits, _ : . or -", param, v,
                            VK_NAME_MAX);
    return VB_OK;
}

/* Validates the profile parameters; connects nothing (the first operation does). Freed by vk_close. */
static int vk_open(const vb_engine_config *cfg, void **state, vb_error *err) {
    const vb_kv *kv = cfg->params;
    size_t n = cfg->n_params;
    if (vb_kv_check_keys(kv, n, vk_params, "valkey engine", err) != VB_OK) return VB_ERROR;
    vk_state *s = calloc(1, sizeof *s);
    if (!s) return vb_error_set(err, VK_DOMAIN, 1, "valkey: out of memory");
    vb_admin_init(&s->admin, &vb_resp_admin_ops, &s->addr);
    if (vb_resp_addr_read(&s->addr, VK_DOMAIN, cfg, err) != VB_OK) goto fail;
    const char *index = vb_kv_get(kv, n, "index", "vbench_idx"), *prefix = vb_kv_get(kv, n, "prefix", "vbench:");
    if (name_check("index", index, err) || name_check("prefix", prefix, err)) goto fail;
    snprintf(s->index, sizeof s->index, "%s", index);
    snprintf(s->prefix, sizeof s->prefix, "%s", prefix);
    if (vb_kv_get_long(kv, n, "pipeline", 1000, 1, 1000000, &s->pipeline, err) ||
        vb_kv_get_long(kv, n, "m", 0, 2, VB_VALKEY_M_MAX, &s->m, err) ||
        vb_kv_get_long(kv, n, "ef_construction", 0, 1, VB_VALKEY_EF_MAX, &s->ef_construction, err)) {
        vb_error_prefix(err, "valkey");
        goto fail;
    }
    *state = s;
    return VB_OK;
fail:
    vk_close(s);
    return VB_ERROR;
}

/* ---- the index's state -------------------------------------------------------------------------------- */

/* FT.INFO of the index into *out (freed by the caller); *exists = 0 (and VB_OK) when there is no such index. */
static int ft_info(vk_state *s, redisContext *rc, redisReply **out, int *exists, vb_error *err) {
    vb_resp_argv a;
    vb_valkey_info_cmd(&a, s->index);
    redisReply *r = redisCommandArgv(rc, a.argc, a.argv, a.len);
    *out = NULL;
    *exists = 0;
    if (!r) return vb_resp_fail(VK_DOMAIN, rc, NULL, err, "FT.INFO");
    if (r->type == REDIS_REPLY_ERROR) {
        /* an unknown command means the module is not loaded */
        int missing = vb_valkey_index_missing(r->str);
        int st = missing ? VB_OK : vb_resp_fail(VK_DOMAIN, rc, r, err, "FT.INFO");
        if (!missing && strstr(r->str, "unknown command"))
            vb_error_prefix(err, "the valkey-search module is not loaded (start the server with --loadmodule)");
        freeReplyObject(r);
        return st;
    }
    *exists = 1;
    *out = r;
    return VB_OK;
}

/* What FT.INFO and INFO stats say about the index's health, for the wait below and the progress op. */
typedef struct index_status {
    int exists;
    vb_valkey_index_status x;
    long long evicted;
} index_status;

typedef struct status_arg {
    vk_state *s;
    index_status *x;
} status_arg;

static int status_on(void *conn, void *arg, vb_error *err) {
    index_status *x = ((status_arg *)arg)->x;
    vk_state *s = ((status_arg *)arg)->s;
    redisContext *rc = conn;
    redisReply *info = NULL;
    int st = ft_info(s, rc, &info, &x->exists, err);
    if (st != VB_OK) return st;
    if (x->exists) vb_valkey_index_status_parse(info, &x->x);
    if (info) freeReplyObject(info);
    char text[8192];
    if ((st = vb_resp_info(VK_DOMAIN, rc, "stats", text, sizeof text, err)) != VB_OK) return st;
    x->evicted = vb_resp_info_field(text, "evicted_keys", NULL);
    return VB_OK;
}

/* The index's status on the administrative connection (or on rc when given: a connection of the caller's). */
static int vk_index_status(vk_state *s, redisContext *rc, index_status *x, vb_error *err) {
    memset(x, 0, sizeof *x);
    status_arg a = {s, x};
    return rc ? status_on(rc, &a, err) : vb_admin_run(&s->admin, status_on, &a, err);
}

/* The checks that fail a phase rather than let it report a wrong number. */
static int health_check(const vk_state *s, const index_status *x, vb_error *err) {
    if (x->evicted > 0)
        return vb_error_set(err, VK_DOMAIN, 1, "valkey: the server evicted %lld keys (evicted_keys): rows are missing; "
                            "run it with maxmemory-policy noeviction and enough maxmemory", x->evicted);
    if (x->x.failures > 0)
        return vb_error_set(err, VK_DOMAIN, 1, "valkey: index %s: %lld rows could not be indexed "
                            "(hash_indexing_failures): the answers would miss them", s->index, x->x.failures);
    return VB_OK;
}

/* Polls until the index is ready (backfill done, mutation queue empty) and healthy. On the administrative
 * connection (rc NULL) or the caller's. */
static int wait_caught_up(vk_state *s, redisContext *rc, vb_error *err) {
    index_status x;
    for (;;) {
        int st = vk_index_status(s, rc, &x, err);
        if (st != VB_OK) return st;
        if (!x.exists) return vb_error_set(err, VK_DOMAIN, 1, "valkey: index %s does not exist (dropped by "
                                           "someone else?): create and build again", s->index);
        if ((st = health_check(s, &x, err)) != VB_OK) return st;
        if (x.x.ready) return VB_OK;
        sleep_ms(VK_POLL_MS);
    }
}

/* ---- the table ---------------------------------------------------------------------------------------- */

static int check_spec(vk_state *s, const vb_table_spec *spec, vb_error *err) {
    if (!vb_valkey_metric(spec->metric))
        return vb_error_set(err, VK_DOMAIN, 1, "valkey: metric %d is not supported (euclidean L2, angular COSINE, "
                            "dot IP are)", (int)spec->metric);
    if (spec->dim == 0 || spec->dim > VB_VALKEY_DIM_MAX)
        return vb_error_set(err, VK_DOMAIN, 1, "valkey: dimension %zu is outside 1..%d", spec->dim, VB_VALKEY_DIM_MAX);
    s->dim = spec->dim;
    s->metric = spec->metric;
    s->capacity = spec->capacity;
    s->spec_m = s->m ? (int)s->m : (spec->m ? spec->m : 16);
    s->spec_efc = s->ef_construction ? (int)s->ef_construction : (spec->ef_construction ? spec->ef_construction : 200);
    return VB_OK;
}

/* Every key of the prefix, counted (counting = 1) or unlinked (counting = 0), by SCAN MATCH PREFIX*. */
static int scan_prefix(vk_state *s, redisContext *rc, int counting, long long *count, vb_error *err) {
    char pattern[VK_NAME_MAX + 2], cursor[32] = "0";
    snprintf(pattern, sizeof pattern, "%s*", s->prefix);
    *count = 0;
    do {
        vb_resp_argv a;
        vb_resp_argv_init(&a);
        vb_resp_arg(&a, "SCAN");
        vb_resp_arg(&a, cursor);
        vb_resp_arg(&a, "MATCH");
        vb_resp_arg(&a, pattern);
        vb_resp_arg(&a, "COUNT");
        vb_resp_arg(&a, "10000");
        redisReply *r = NULL;
        int st = vb_resp_run(VK_DOMAIN, rc, &a, &r, err, "SCAN");
        if (st != VB_OK) return st;
        if (r->type != REDIS_REPLY_ARRAY || r->elements != 2 || r->element[1]->type != REDIS_REPLY_ARRAY) {
            freeReplyObject(r);
            return vb_error_set(err, VK_DOMAIN, 1, "valkey: SCAN: unexpected reply shape");
        }
        snprintf(cursor, sizeof cursor, "%s", r->element[0]->str);
        const redisReply *keys = r->element[1];
        *count += (long long)keys->elements;
        if (!counting && keys->elements) {
            const char **argv2 = malloc((keys->elements + 1) * sizeof *argv2);
            size_t *lens = malloc((keys->elements + 1) * sizeof *lens);
            if (!argv2 || !lens) st = vb_error_set(err, VK_DOMAIN, 1, "valkey: out of memory");
            else {
                argv2[0] = "UNLINK", lens[0] = 6;
                for (size_t i = 0; i < keys->elements; i++)
                    argv2[i + 1] = keys->element[i]->str, lens[i + 1] = keys->element[i]->len;
                redisReply *u = redisCommandArgv(rc, (int)keys->elements + 1, argv2, lens);
                if (!u || u->type == REDIS_REPLY_ERROR) st = vb_resp_fail(VK_DOMAIN, rc, u, err, "UNLINK");
                if (u) freeReplyObject(u);
            }
            free(argv2);
            free(lens);
        }
        freeReplyObject(r);
        if (st != VB_OK) return st;
    } while (strcmp(cursor, "0") != 0);
    return VB_OK;
}

/* FT.DROPINDEX of the index when it exists (the keys stay): a fresh table, or a build cut short, starts clean. */
static int drop_index(vk_state *s, redisContext *rc, vb_error *err) {
    redisReply *info = NULL;
    int exists = 0;
    int st = ft_info(s, rc, &info, &exists, err);
    if (info) freeReplyObject(info);
    if (st != VB_OK || !exists) return st;
    vb_resp_argv a;
    vb_valkey_drop_cmd(&a, s->index);
    return vb_resp_do(VK_DOMAIN, rc, &a, err, "FT.DROPINDEX");
}

/* Drops the index (when there is one) and every key of the prefix: an empty table without an index. */
static int create_on(void *conn, void *arg, vb_error *err) {
    vk_state *s = arg;
    int st = drop_index(s, conn, err);
    if (st != VB_OK) return st;
    long long n = 0;
    return scan_prefix(s, conn, 0, &n, err);
}

static int vk_create(void *state, const vb_table_spec *spec, vb_error *err) {
    vk_state *s = state;
    if (check_spec(s, spec, err) != VB_OK) return VB_ERROR;
    s->ready = 0;
    int st = vb_admin_run(&s->admin, create_on, s, err);
    s->ready = st == VB_OK;
    return st;
}

typedef struct attach_arg {
    vk_state *s;
    size_t missing;   /* keys that may be absent (spec->attach_missing: a churn in progress) */
    int found;
} attach_arg;

/* The index exists with this dimension, is ready, and holds capacity keys (or up to `missing` fewer): a finished
 * build that the running server still holds (a resumed campaign that adopted the unit). */
static int attach_on(void *conn, void *arg, vb_error *err) {
    attach_arg *a = arg;
    redisReply *info = NULL;
    int exists = 0;
    a->found = 0;
    int st = ft_info(a->s, conn, &info, &exists, err);
    if (st != VB_OK || !exists) return st;
    vb_valkey_index_status x;
    vb_valkey_index_status_parse(info, &x);
    a->found = x.dims == (long long)a->s->dim && strcmp(x.state, "ready") == 0 &&
               x.num_docs <= (long long)a->s->capacity && x.num_docs + (long long)a->missing >= (long long)a->s->capacity;
    freeReplyObject(info);
    return VB_OK;
}

static int vk_attach(void *state, const vb_table_spec *spec, int *found, vb_error *err) {
    vk_state *s = state;
    *found = 0;
    if (check_spec(s, spec, err) != VB_OK) return VB_ERROR;
    attach_arg a = {s, spec->attach_missing, 0};
    int st = vb_admin_run(&s->admin, attach_on, &a, err);
    *found = st == VB_OK && a.found;
    s->ready = *found;
    return st;
}

/* FT.CREATE over the loaded keys: the module starts its backfill. An index left by a build that was cut short is
 * dropped first, so this is safe to run again. */
static int build_on(void *conn, void *arg, vb_error *err) {
    vk_state *s = arg;
    int st = drop_index(s, conn, err);
    if (st != VB_OK) return st;
    vb_resp_argv a;
    vb_valkey_create_cmd(&a, s->index, s->prefix, s->dim, s->metric, s->spec_m, s->spec_efc,
                         s->capacity ? s->capacity : 1024);
    return vb_resp_do(VK_DOMAIN, conn, &a, err, "FT.CREATE");
}

typedef struct count_arg {
    vk_state *s;
    long long keys;
} count_arg;

static int count_on(void *conn, void *arg, vb_error *err) {
    count_arg *a = arg;
    return scan_prefix(a->s, conn, 1, &a->keys, err);
}

static int vk_build(void *state, vb_error *err) {
    vk_state *s = state;
    if (!s->ready) return vb_error_set(err, VK_DOMAIN, 1, "valkey: build before create or attach");
    int st = vb_admin_run(&s->admin, build_on, s, err);
    if (st == VB_OK) st = wait_caught_up(s, NULL, err);
    if (st != VB_OK) return st;
    /* A partial backfill: the index must hold every key of the prefix. */
    index_status x;
    count_arg c = {s, 0};
    if ((st = vk_index_status(s, NULL, &x, err)) != VB_OK || (st = vb_admin_run(&s->admin, count_on, &c, err)))
        return st;
    if (x.x.num_docs != c.keys)
        return vb_error_set(err, VK_DOMAIN, 1, "valkey: index %s holds %lld keys after its backfill, the prefix '%s' "
                            "has %lld: a partial backfill (see the server's log)", s->index, x.x.num_docs, s->prefix,
                            c.keys);
    return VB_OK;
}

/* After churn: the index has caught up with every write, and nothing was evicted or failed. */
static int vk_maintain(void *state, vb_error *err) { return wait_caught_up(state, NULL, err); }

/* While build waits: backfill_complete_percent of FT.INFO, on a connection of its own. */
static int vk_build_progress(void *state, uint64_t *done, uint64_t *total, char *stage, size_t stage_len,
                             vb_error *err) {
    vk_state *s = state;
    redisContext *rc = NULL;
    int st = vb_resp_dial(&s->addr, &rc, err);
    if (st != VB_OK) return st;
    index_status x;
    st = vk_index_status(s, rc, &x, err);
    redisFree(rc);
    if (st != VB_OK) return st;
    if (!x.exists) return vb_error_set(err, VK_DOMAIN, 1, "valkey: no index yet");
    if (x.x.percent < 1.0) {
        snprintf(stage, stage_len, "backfill (per mille of the keys scanned)");
        *done = (uint64_t)(x.x.percent * 1000.0);
        *total = 1000;
    } else {
        snprintf(stage, stage_len, "indexing the backfilled keys (keys indexed of the table's capacity)");
        *done = (uint64_t)x.x.num_docs;
        *total = s->capacity ? s->capacity : (uint64_t)x.x.num_docs;
    }
    return VB_OK;
}

/* The module's memory from INFO search: 1.0 writes it as search_used_memory_bytes (the field's name ends so). */
static long long info_suffix(const char *text, const char *suffix, int *found) {
    size_t n = strlen(suffix);
    for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
        const char *colon = strchr(p, ':'), *eol = strchr(p, '\n');
        if (!colon || (eol && colon > eol) || (size_t)(colon - p) < n) continue;
        if (strncmp(colon - n, suffix, n) == 0) {
            *found = 1;
            return strtoll(colon + 1, NULL, 10);
        }
    }
    *found = 0;
    return 0;
}

typedef struct sizes_arg {
    vk_state *s;
    vb_sizes *out;
} sizes_arg;

static int sizes_on(void *conn, void *arg, vb_error *err) {
    sizes_arg *a = arg;
    redisContext *rc = conn;
    char text[8192];
    int found = 0;
    int st = vb_resp_info(VK_DOMAIN, rc, "memory", text, sizeof text, err);
    if (st != VB_OK) return st;
    long long used = vb_resp_info_field(text, "used_memory", &found);
    if (!found) used = -1;
    if ((st = vb_resp_info(VK_DOMAIN, rc, "search", text, sizeof text, err)) != VB_OK) return st;
    long long module = info_suffix(text, "used_memory_bytes", &found);
    a->out->index_bytes = found ? module : -1;
    a->out->table_bytes = used >= 0 && found && used > module ? used - module : used;
    redisReply *info = NULL;
    int exists = 0;
    if ((st = ft_info(a->s, rc, &info, &exists, err)) != VB_OK) return st;
    a->out->rows = exists ? (int64_t)vb_resp_pair_num(info, "num_docs", -1) : 0;
    if (info) freeReplyObject(info);
    return VB_OK;
}

/* Index bytes: the module's own memory (INFO search); table bytes: the rest of used_memory (the hashes, the
 * server's overhead); rows: num_docs of the index. The module's memory is global: one index per server assumed. */
static int vk_sizes(void *state, vb_sizes *out, vb_error *err) {
    sizes_arg a = {state, out};
    out->index_bytes = out->table_bytes = out->rows = -1;
    return vb_admin_run(&((vk_state *)state)->admin, sizes_on, &a, err);
}

typedef struct version_arg {
    char *buf;
    size_t len;
} version_arg;

/* "Valkey 8.1.1, valkey-search 1.0.0": INFO server's valkey_version (redis_version on older servers) and the
 * module's version from MODULE LIST (an integer, major*10000 + minor*100 + patch), as the server reports them. */
static int version_on(void *conn, void *arg, vb_error *err) {
    version_arg *a = arg;
    redisContext *rc = conn;
    char text[8192], server[64] = "unknown", module[64] = "not loaded";
    int st = vb_resp_info(VK_DOMAIN, rc, "server", text, sizeof text, err);
    if (st != VB_OK) return st;
    if (!vb_resp_info_text(text, "valkey_version", server, sizeof server) &&
        !vb_resp_info_text(text, "redis_version", server, sizeof server))
        snprintf(server, sizeof server, "unknown");
    vb_resp_argv c;
    vb_resp_argv_init(&c);
    vb_resp_arg(&c, "MODULE");
    vb_resp_arg(&c, "LIST");
    redisReply *r = NULL;
    if ((st = vb_resp_run(VK_DOMAIN, rc, &c, &r, err, "MODULE LIST")) != VB_OK) return st;
    for (size_t i = 0; r->type == REDIS_REPLY_ARRAY && i < r->elements; i++) {
        if (strcmp(vb_resp_pair_str(r->element[i], "name"), "search") != 0) continue;
        long long v = (long long)vb_resp_pair_num(r->element[i], "ver", -1);
        if (v >= 0) snprintf(module, sizeof module, "%lld.%lld.%lld", v / 10000, v / 100 % 100, v % 100);
    }
    freeReplyObject(r);
    snprintf(a->buf, a->len, "Valkey %s, valkey-search %s", server, module);
    return VB_OK;
}

static int vk_version(void *state, char *buf, size_t len, vb_error *err) {
    version_arg a = {buf, len};
    return vb_admin_run(&((vk_state *)state)->admin, version_on, &a, err);
}

/* ---- writes ------------------------------------------------------------------------------------------- */

/* Pipelines the rows (engines/resp_common.h's pipe, `pipeline` commands deep): HSET PREFIX<id> v BLOB [tag T ...]
 * [class C], preceded by HDEL ... tag ... class when replace_tag is set and the row lacks a tag or a class (an
 * upsert must not keep an old one). */
static int write_rows(vk_conn *c, const int64_t *ids, const float *vecs, const int32_t *tags, const int32_t *classes,
                      size_t n, int replace_tag, vb_error *err) {
    vk_state *s = VK_OF(c);
    vb_resp_pipe p;
    vb_resp_pipe_init(&p, VK_DOMAIN, c->rc, (size_t)s->pipeline);
    for (size_t i = 0; i < n && p.status != VB_RETRY; i++) {
        char key[VK_NAME_MAX + 24];
        vb_resp_argv a;
        vb_valkey_key(s->prefix, ids[i], key, sizeof key);
        if ((!tags || !classes) && replace_tag) {
            vb_valkey_untag_cmd(&a, key);
            vb_resp_pipe_add(&p, &a, err);
        }
        int32_t attrs[3] = {tags ? tags[i] : 0, vb_dataset_tag2(ids[i]), vb_dataset_label(ids[i])};
        vb_valkey_hset_cmd(&a, key, vecs + i * s->dim, s->dim, tags ? attrs : NULL, classes ? classes + i : NULL);
        vb_resp_pipe_add(&p, &a, err);
    }
    return vb_resp_pipe_finish(&p, err);
}

static int vk_load(void *conn, const int64_t *ids, const float *vecs, const int32_t *tags, const int32_t *classes,
                   size_t n, vb_error *err) {
    vk_conn *c = conn;
    if (!VK_OF(c)->ready) return vb_error_set(err, VK_DOMAIN, 1, "valkey: no table: create or attach first");
    int st = vb_resp_ready(c->addr, &c->rc, err);
    return st == VB_OK ? write_rows(c, ids, vecs, tags, classes, n, 0, err) : st;
}

/* The wait after churn, on this connection: once it returns the index answers with the new rows. Before build
 * (no index yet) there is nothing to wait for. */
static int churn_wait(vk_conn *c, vb_error *err) {
    index_status x;
    int st = vk_index_status(VK_OF(c), c->rc, &x, err);
    if (st != VB_OK || !x.exists) return st;
    return wait_caught_up(VK_OF(c), c->rc, err);
}

/* HSET replaces the members of a live key and makes a new or removed one: an upsert. */
static int vk_insert(void *conn, const int64_t *ids, const float *vecs, const int32_t *tags, const int32_t *classes,
                     size_t n, vb_error *err) {
    vk_conn *c = conn;
    if (!VK_OF(c)->ready) return vb_error_set(err, VK_DOMAIN, 1, "valkey: no table: create or attach first");
    int st = vb_resp_ready(c->addr, &c->rc, err);
    if (st == VB_OK) st = write_rows(c, ids, vecs, tags, classes, n, 1, err);
    return st == VB_OK ? churn_wait(c, err) : st;
}

/* DEL of the keys, pipelined; an absent key is no error. */
static int vk_remove(void *conn, const int64_t *ids, size_t n, vb_error *err) {
    vk_conn *c = conn;
    vk_state *s = VK_OF(c);
    if (!s->ready) return vb_error_set(err, VK_DOMAIN, 1, "valkey: no table: create or attach first");
    int st = vb_resp_ready(&s->addr, &c->rc, err);
    if (st != VB_OK) return st;
    vb_resp_pipe p;
    vb_resp_pipe_init(&p, VK_DOMAIN, c->rc, (size_t)s->pipeline);
    for (size_t i = 0; i < n && p.status != VB_RETRY; i++) {
        char key[VK_NAME_MAX + 24];
        vb_resp_argv a;
        vb_valkey_del_cmd(&a, vb_valkey_key(s->prefix, ids[i], key, sizeof key));
        vb_resp_pipe_add(&p, &a, err);
    }
    st = vb_resp_pipe_finish(&p, err);
    return st == VB_OK ? churn_wait(c, err) : st;
}

/* ---- search ------------------------------------------------------------------------------------------- */

static int vk_set_search(void *conn, const vb_search_params *p, vb_error *err) {
    vk_conn *c = conn;
    if (p->ef_search < 1 || p->ef_search > VB_VALKEY_EF_MAX)
        return vb_error_set(err, VK_DOMAIN, 1, "valkey: ef_search %d is outside valkey-search's EF_RUNTIME 1..%d",
                            p->ef_search, VB_VALKEY_EF_MAX);
    c->ef_search = p->ef_search;   /* sent with every query: a setting of this connection by construction */
    return VB_OK;
}

static int vk_search(void *conn, const float *query, int k, const vb_filter *filter, int64_t *ids_out, int *n_out,
                     vb_error *err) {
    vk_conn *c = conn;
    vk_state *s = VK_OF(c);
    *n_out = 0;
    if (k <= 0) return VB_OK;
    if (!s->ready) return vb_error_set(err, VK_DOMAIN, 1, "valkey: no table: create or attach first");
    if (filter && (unsigned)filter->kind >= VB_FILTER_KINDS)
        return vb_error_set(err, VK_DOMAIN, 1, "valkey: unknown filter kind %d", (int)filter->kind);
    int st = vb_resp_ready(&s->addr, &c->rc, err);
    if (st != VB_OK) return st;
    vb_resp_argv a;
    if (vb_valkey_search_cmd(&a, s->index, query, s->dim, k, c->ef_search, filter, err)) return VB_ERROR;
    redisReply *r = NULL;
    if ((st = vb_resp_run(VK_DOMAIN, c->rc, &a, &r, err, "FT.SEARCH")) != VB_OK) return st;
    st = vb_valkey_search_ids(r, s->prefix, k, ids_out, n_out, err);
    freeReplyObject(r);
    return st;
}

const vb_engine_ops vb_engine_valkey = {
    .name = "valkey",
    .description = "Valkey + valkey-search HNSW over hiredis (HASH rows, FT.CREATE after the load, FT.SEARCH KNN); "
                   "written from the documentation; no server with the search module on this machine",
    .flags = VB_ENGINE_FILTER | VB_ENGINE_FILTER_EQ | VB_ENGINE_FILTER_AND | VB_ENGINE_FILTER_CLASS,
    .param_names = vk_params,
    /* keeps everything in memory (the recipe: save "", appendonly no): nothing on disk grows with the rows */
    .estimate = {.load_rows_s = 5000, .insert_rows_s = 1500, .qps100 = 1500, .filtered_qps = 800,
                 .no_disk = "the data is in the server's memory"},
    .open = vk_open,
    .close = vk_close,
    .create = vk_create,
    .connect = vb_resp_connect,
    .disconnect = vb_resp_disconnect,
    .load = vk_load,
    .set_search = vk_set_search,
    .search = vk_search,
    .version = vk_version,
    .attach = vk_attach,
    .build = vk_build,
    .remove = vk_remove,
    .insert = vk_insert,
    .maintain = vk_maintain,
    .maintenance = "wait until the index has caught up",
    .sizes = vk_sizes,
    .build_progress = vk_build_progress,
};
