/* The "valkey" engine: Valkey + the valkey-search module (1.0.2, HNSW) through hiredis (RESP2: Debian 12's 0.14).
 *
 * A row is a HASH at PREFIX<id> with two members: "v", the vector as little-endian float32 bytes (the module's
 * FLOAT32 format), and "tag", the filter tag as a decimal number (absent for a row without a tag). The index is
 *     FT.CREATE IDX ON HASH PREFIX 1 PREFIX SCHEMA tag NUMERIC
 *         v VECTOR HNSW 12 TYPE FLOAT32 DIM d DISTANCE_METRIC L2|COSINE|IP M m EF_CONSTRUCTION efc INITIAL_CAP n
 * made by build, after the load: the rows go in as pipelined HSETs with no index over them (fast), then FT.CREATE
 * starts the module's backfill, and build returns only when FT.INFO says it is finished (state "ready",
 * backfill_in_progress 0, mutation_queue_size 0) and every key of the prefix is in the index, so build_s and
 * first_query_s mean what they mean for the other engines. A search is
 *     FT.SEARCH IDX "*=>[KNN k @v $q EF_RUNTIME ef]" PARAMS 2 q BLOB NOCONTENT LIMIT 0 k DIALECT 2
 * with "(@tag:[-inf (N])" in place of "*" for the filter tag < N (a row without the member never passes it).
 * NOCONTENT answers are the keys, closest first. EF_RUNTIME is part of each query, so ef_search belongs to the
 * connection by construction. Churn is DEL (absent keys are no error) and HSET (an upsert by nature; a row
 * inserted without a tag loses its old "tag" member by HDEL first); both wait until the index has caught up
 * (mutation_queue_size 0), so a removed row is never found once remove returns. This is exactly the syntax
 * COMMANDS.md of 1.0.2 documents; docs/valkey.md says where the reference run's Valkey 9.1.1 differs.
 *
 * Checks that fail the phase rather than report a wrong number: evicted_keys > 0 (the server dropped rows under
 * maxmemory), hash_indexing_failures > 0 (rows the module could not index), and an index that holds fewer keys
 * than the prefix after its backfill. Sizes: the module's own memory (INFO search, *used_memory_bytes) as the
 * index, the rest of used_memory (INFO memory) as the table, num_docs (FT.INFO) as the rows; the module's count
 * misses what the shared gRPC/Protobuf/Abseil libraries allocate, so the server's RSS and cgroup memory (the
 * sampler) are the cost to compare.
 *
 * Errors carry the server's words. A lost connection (hiredis I/O or EOF) and the server's LOADING, BUSY,
 * TRYAGAIN and MASTERDOWN replies return VB_RETRY; the next call on that connection dials again. The engine keeps
 * one administrative connection (engines/sql_common.h's admin: dialled on first use, serialised, dialled again
 * after a loss) for create, build, maintain, sizes, version and attach; every vb_conn owns its own. */
#include <hiredis/hiredis.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "engines/engine.h"
#include "engines/sql_common.h"

#define VK_DOMAIN "valkey"
#define VK_NAME_MAX 64
#define VK_POLL_MS 100

static const char *const vk_params[] = {"socket", "host", "port", "password", "index", "prefix", "m",
                                        "ef_construction", "timeout_s", "pipeline", NULL};

typedef struct vk_state {
    char socket[256], host[256], password[128];
    long port, timeout_s, pipeline;
    char index[VK_NAME_MAX + 1], prefix[VK_NAME_MAX + 1];
    long m, ef_construction;           /* 0 = the table spec's */
    int ready;                         /* create or attach has run */
    size_t dim, capacity;
    vb_metric metric;
    int spec_m, spec_efc;
    vb_sql_admin admin;                /* a redisContext */
} vk_state;

static const vb_sql_admin_ops vk_admin_ops;

typedef struct vk_conn {
    vk_state *s;
    redisContext *rc;
    int ef_search;                     /* 0 = never set: the index's default EF_RUNTIME */
} vk_conn;

/* ---- errors and commands ------------------------------------------------------------------------------ */

/* A reply the server sends while it cannot serve yet, or a transient condition: the same call may succeed later. */
static int transient_reply(const char *text) {
    static const char *const words[] = {"LOADING", "BUSY", "TRYAGAIN", "MASTERDOWN", NULL};
    for (int i = 0; words[i]; i++)
        if (strncmp(text, words[i], strlen(words[i])) == 0) return 1;
    return 0;
}

/* Fills err for a failed command: the connection's error (VB_RETRY: lost) or the server's error reply. */
static int vk_fail(redisContext *rc, const redisReply *r, vb_error *err, const char *what) {
    if (!r || rc->err)
        return vb_sql_fail(err, VK_DOMAIN, what, rc->err ? rc->errstr : "no reply", "connection lost", 2, 1);
    if (r->type == REDIS_REPLY_ERROR) {
        const char *hint = strncmp(r->str, "OOM", 3) == 0 ? "maxmemory reached: give the server more memory"
                                                          : NULL;
        return vb_sql_fail(err, VK_DOMAIN, what, r->str, hint, 1, transient_reply(r->str));
    }
    return vb_sql_fail(err, VK_DOMAIN, what, "unexpected reply type", NULL, 1, 0);
}

/* One command (argv with lengths; argvlen NULL: C strings). *out gets the reply (freed by the caller) when it is
 * not an error. */
static int vk_command(redisContext *rc, int argc, const char **argv, const size_t *argvlen, redisReply **out,
                      vb_error *err, const char *what) {
    redisReply *r = redisCommandArgv(rc, argc, argv, argvlen);
    *out = NULL;
    if (!r || r->type == REDIS_REPLY_ERROR) {
        int st = vk_fail(rc, r, err, what);
        if (r) freeReplyObject(r);
        return st;
    }
    *out = r;
    return VB_OK;
}

/* A command whose reply is not needed. */
static int vk_do(redisContext *rc, int argc, const char **argv, vb_error *err, const char *what) {
    redisReply *r = NULL;
    int st = vk_command(rc, argc, argv, NULL, &r, err, what);
    if (r) freeReplyObject(r);
    return st;
}

/* Reads n pipelined replies; the first failure is reported (the rest are still read, so the connection stays in
 * step). */
static int vk_drain(redisContext *rc, size_t n, vb_error *err, const char *what) {
    int st = VB_OK;
    for (size_t i = 0; i < n; i++) {
        redisReply *r = NULL;
        if (redisGetReply(rc, (void **)&r) != REDIS_OK || !r) return vk_fail(rc, NULL, err, what);
        if (r->type == REDIS_REPLY_ERROR && st == VB_OK) st = vk_fail(rc, r, err, what);
        freeReplyObject(r);
    }
    return st;
}

static void sleep_ms(int ms) {
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* ---- parameters and connections ----------------------------------------------------------------------- */

static void vk_close(void *state) {
    vk_state *s = state;
    if (!s) return;
    vb_sql_admin_destroy(&s->admin);
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
    vb_sql_admin_init(&s->admin, &vk_admin_ops, s);
    snprintf(s->socket, sizeof s->socket, "%s", vb_kv_get(kv, n, "socket", ""));
    snprintf(s->host, sizeof s->host, "%s", vb_kv_get(kv, n, "host", "127.0.0.1"));
    snprintf(s->password, sizeof s->password, "%s", vb_kv_get(kv, n, "password", ""));
    const char *index = vb_kv_get(kv, n, "index", "vbench_idx"), *prefix = vb_kv_get(kv, n, "prefix", "vbench:");
    if (name_check("index", index, err) || name_check("prefix", prefix, err)) goto fail;
    snprintf(s->index, sizeof s->index, "%s", index);
    snprintf(s->prefix, sizeof s->prefix, "%s", prefix);
    if (vb_kv_get_long(kv, n, "port", 6379, 1, 65535, &s->port, err) ||
        vb_kv_get_long(kv, n, "timeout_s", 600, 1, 86400, &s->timeout_s, err) ||
        vb_kv_get_long(kv, n, "pipeline", 1000, 1, 1000000, &s->pipeline, err) ||
        vb_kv_get_long(kv, n, "m", 0, 2, 512, &s->m, err) ||
        vb_kv_get_long(kv, n, "ef_construction", 0, 1, 4096, &s->ef_construction, err)) {
        vb_error_prefix(err, "valkey");
        goto fail;
    }
    *state = s;
    return VB_OK;
fail:
    vk_close(s);
    return VB_ERROR;
}

/* A new connection (Unix socket when the socket parameter is set, else TCP), authenticated when a password is
 * given; VB_RETRY when the server cannot be reached. */
static int vk_dial(vk_state *s, redisContext **out, vb_error *err) {
    struct timeval tv = {s->timeout_s, 0}, ctv = {10, 0};
    redisContext *rc = s->socket[0] ? redisConnectUnixWithTimeout(s->socket, ctv)
                                    : redisConnectWithTimeout(s->host, (int)s->port, ctv);
    if (!rc) return vb_error_set(err, VK_DOMAIN, 1, "valkey: out of memory for a connection");
    if (rc->err) {
        int st = vb_sql_fail(err, VK_DOMAIN, s->socket[0] ? "connecting to the socket" : "connecting", rc->errstr,
                             s->socket[0] ? s->socket : s->host, 2, 1);
        redisFree(rc);
        return st;
    }
    redisSetTimeout(rc, tv);
    if (s->password[0]) {
        const char *argv[] = {"AUTH", s->password};
        redisReply *r = NULL;
        int st = vk_command(rc, 2, argv, NULL, &r, err, "AUTH");
        if (r) freeReplyObject(r);
        if (st != VB_OK) {
            redisFree(rc);
            return st;
        }
    }
    *out = rc;
    return VB_OK;
}

static int admin_dial(void *owner, void **conn, vb_error *err) {
    redisContext *rc = NULL;
    int st = vk_dial(owner, &rc, err);
    *conn = rc;
    return st;
}

static void admin_hangup(void *conn) { redisFree(conn); }

static const vb_sql_admin_ops vk_admin_ops = {admin_dial, admin_hangup};

/* The connection is up: one lost earlier (the call that saw it returned VB_RETRY) is dialled again here. */
static int conn_ready(vk_conn *c, vb_error *err) {
    if (c->rc && !c->rc->err) return VB_OK;
    if (c->rc) redisFree(c->rc);
    c->rc = NULL;
    return vk_dial(c->s, &c->rc, err);
}

static void vk_disconnect(void *conn) {
    vk_conn *c = conn;
    if (!c) return;
    if (c->rc) redisFree(c->rc);
    free(c);
}

static int vk_connect(void *state, void **conn, vb_error *err) {
    vk_conn *c = calloc(1, sizeof *c);
    if (!c) return vb_error_set(err, VK_DOMAIN, 1, "valkey: out of memory");
    c->s = state;
    int st = conn_ready(c, err);
    if (st != VB_OK) {
        vk_disconnect(c);
        return st;
    }
    *conn = c;
    return VB_OK;
}

/* ---- replies ------------------------------------------------------------------------------------------ */

/* The value after the member name key in a flat [name, value, ...] array (FT.INFO), or NULL. */
static const redisReply *pair_get(const redisReply *r, const char *key) {
    if (!r || r->type != REDIS_REPLY_ARRAY) return NULL;
    for (size_t i = 0; i + 1 < r->elements; i += 2) {
        const redisReply *k = r->element[i];
        if ((k->type == REDIS_REPLY_STRING || k->type == REDIS_REPLY_STATUS) && strcmp(k->str, key) == 0)
            return r->element[i + 1];
    }
    return NULL;
}

/* A number from a reply that may be an integer or a string ("0", "1.000000"); def when absent. */
static double pair_num(const redisReply *r, const char *key, double def) {
    const redisReply *v = pair_get(r, key);
    if (!v) return def;
    if (v->type == REDIS_REPLY_INTEGER) return (double)v->integer;
    if (v->type == REDIS_REPLY_STRING || v->type == REDIS_REPLY_STATUS) return strtod(v->str, NULL);
    return def;
}

static const char *pair_str(const redisReply *r, const char *key) {
    const redisReply *v = pair_get(r, key);
    return v && (v->type == REDIS_REPLY_STRING || v->type == REDIS_REPLY_STATUS) ? v->str : "";
}

/* A field of an INFO section ("evicted_keys"), matched as a whole name at the start of a line; found = 0 when
 * the text has no such line. */
static long long info_field(const char *text, const char *name, int *found) {
    size_t n = strlen(name);
    for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
        if (strncmp(p, name, n) == 0 && p[n] == ':') {
            if (found) *found = 1;
            return strtoll(p + n + 1, NULL, 10);
        }
    if (found) *found = 0;
    return 0;
}

/* The module's memory from INFO search: 1.0.2 writes it as search_used_memory_bytes. */
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

/* INFO SECTION's text into buf. */
static int info_text(redisContext *rc, const char *section, char *buf, size_t len, vb_error *err) {
    const char *argv[] = {"INFO", section};
    redisReply *r = NULL;
    int st = vk_command(rc, 2, argv, NULL, &r, err, "INFO");
    if (st != VB_OK) return st;
    snprintf(buf, len, "%s", r->type == REDIS_REPLY_STRING ? r->str : "");
    freeReplyObject(r);
    return VB_OK;
}

/* FT.INFO of the index into *out (freed by the caller); *exists = 0 (and VB_OK) when there is no such index. */
static int ft_info(vk_state *s, redisContext *rc, redisReply **out, int *exists, vb_error *err) {
    const char *argv[] = {"FT.INFO", s->index};
    redisReply *r = redisCommandArgv(rc, 2, argv, NULL);
    *out = NULL;
    *exists = 0;
    if (!r) return vk_fail(rc, NULL, err, "FT.INFO");
    if (r->type == REDIS_REPLY_ERROR) {
        /* 1.0.2: "Index with name '...' not found"; an unknown command means the module is not loaded. */
        int missing = strstr(r->str, "not found") != NULL;
        int st = missing ? VB_OK : vk_fail(rc, r, err, "FT.INFO");
        if (!missing && strstr(r->str, "unknown command"))
            vb_error_prefix(err, "the valkey-search module is not loaded (start the server with --loadmodule)");
        freeReplyObject(r);
        return st;
    }
    *exists = 1;
    *out = r;
    return VB_OK;
}

/* ---- the table ---------------------------------------------------------------------------------------- */

static const char *metric_name(vb_metric m) {
    switch (m) {
    case VB_METRIC_EUCLIDEAN: return "L2";
    case VB_METRIC_ANGULAR: return "COSINE";
    case VB_METRIC_DOT: return "IP";
    }
    return NULL;
}

static int check_spec(vk_state *s, const vb_table_spec *spec, vb_error *err) {
    if (!metric_name(spec->metric))
        return vb_error_set(err, VK_DOMAIN, 1, "valkey: metric %d is not supported (euclidean L2, angular COSINE, "
                            "dot IP are)", (int)spec->metric);
    if (spec->dim == 0 || spec->dim > 32768)
        return vb_error_set(err, VK_DOMAIN, 1, "valkey: dimension %zu is outside 1..32768", spec->dim);
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
        const char *argv[] = {"SCAN", cursor, "MATCH", pattern, "COUNT", "10000"};
        redisReply *r = NULL;
        int st = vk_command(rc, 6, argv, NULL, &r, err, "SCAN");
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
            argv2[0] = "UNLINK", lens[0] = 6;
            for (size_t i = 0; i < keys->elements; i++) argv2[i + 1] = keys->element[i]->str, lens[i + 1] = keys->element[i]->len;
            redisReply *u = NULL;
            st = vk_command(rc, (int)keys->elements + 1, argv2, lens, &u, err, "UNLINK");
            if (u) freeReplyObject(u);
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
    const char *argv[] = {"FT.DROPINDEX", s->index};
    return vk_do(rc, 2, argv, err, "FT.DROPINDEX");
}

/* Drops the index (when there is one) and every key of the prefix: an empty table without an index. */
static int create_on(void *conn, void *arg, vb_error *err) {
    vk_state *s = arg;
    redisContext *rc = conn;
    int st = drop_index(s, rc, err);
    if (st != VB_OK) return st;
    long long n = 0;
    return scan_prefix(s, rc, 0, &n, err);
}

static int vk_create(void *state, const vb_table_spec *spec, vb_error *err) {
    vk_state *s = state;
    if (check_spec(s, spec, err) != VB_OK) return VB_ERROR;
    s->ready = 0;
    int st = vb_sql_admin_run(&s->admin, create_on, s, err);
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
    long long dims = -1;
    const redisReply *attrs = pair_get(pair_get(info, "index_definition"), "attributes");
    if (!attrs) attrs = pair_get(info, "attributes");
    for (size_t i = 0; attrs && attrs->type == REDIS_REPLY_ARRAY && i < attrs->elements; i++) {
        const redisReply *idx = pair_get(attrs->element[i], "index");
        if (idx && pair_get(idx, "dimensions")) dims = (long long)pair_num(idx, "dimensions", -1);
    }
    long long docs = (long long)pair_num(info, "num_docs", -1);
    a->found = dims == (long long)a->s->dim && strcmp(pair_str(info, "state"), "ready") == 0 &&
               docs <= (long long)a->s->capacity && docs + (long long)a->missing >= (long long)a->s->capacity;
    freeReplyObject(info);
    return VB_OK;
}

static int vk_attach(void *state, const vb_table_spec *spec, int *found, vb_error *err) {
    vk_state *s = state;
    *found = 0;
    if (check_spec(s, spec, err) != VB_OK) return VB_ERROR;
    attach_arg a = {s, spec->attach_missing, 0};
    int st = vb_sql_admin_run(&s->admin, attach_on, &a, err);
    *found = st == VB_OK && a.found;
    s->ready = *found;
    return st;
}

/* FT.CREATE over the loaded keys: the module starts its backfill. An index left by a build that was cut short is
 * dropped first, so this is safe to run again. */
static int build_on(void *conn, void *arg, vb_error *err) {
    vk_state *s = arg;
    redisContext *rc = conn;
    int st = drop_index(s, rc, err);
    if (st != VB_OK) return st;
    char dim[24], m[24], efc[24], cap[24];
    snprintf(dim, sizeof dim, "%zu", s->dim);
    snprintf(m, sizeof m, "%d", s->spec_m);
    snprintf(efc, sizeof efc, "%d", s->spec_efc);
    snprintf(cap, sizeof cap, "%zu", s->capacity ? s->capacity : 1024);
    const char *argv[] = {"FT.CREATE", s->index, "ON", "HASH", "PREFIX", "1", s->prefix, "SCHEMA",
                          "tag", "NUMERIC",
                          "v", "VECTOR", "HNSW", "12", "TYPE", "FLOAT32", "DIM", dim, "DISTANCE_METRIC",
                          metric_name(s->metric), "M", m, "EF_CONSTRUCTION", efc, "INITIAL_CAP", cap};
    return vk_do(rc, (int)(sizeof argv / sizeof *argv), argv, err, "FT.CREATE");
}

/* What FT.INFO and INFO stats say about the index's health, for the wait below and the progress op. */
typedef struct index_status {
    int exists, ready;                 /* state "ready", no backfill, empty mutation queue */
    long long num_docs, failures, queue, evicted;
    double percent;                    /* backfill_complete_percent, 0..1 */
    char state[32];
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
    if (x->exists) {
        snprintf(x->state, sizeof x->state, "%s", pair_str(info, "state"));
        x->num_docs = (long long)pair_num(info, "num_docs", 0);
        x->failures = (long long)pair_num(info, "hash_indexing_failures", 0);
        x->queue = (long long)pair_num(info, "mutation_queue_size", 0);
        x->percent = pair_num(info, "backfill_complete_percent", 0);
        x->ready = strcmp(x->state, "ready") == 0 && pair_num(info, "backfill_in_progress", 0) == 0 && x->queue == 0;
        freeReplyObject(info);
    }
    char text[8192];
    if ((st = info_text(rc, "stats", text, sizeof text, err)) != VB_OK) return st;
    x->evicted = info_field(text, "evicted_keys", NULL);
    return VB_OK;
}

/* The index's status on the administrative connection (or on rc when given: a connection of the caller's). */
static int vk_index_status(vk_state *s, redisContext *rc, index_status *x, vb_error *err) {
    memset(x, 0, sizeof *x);
    status_arg a = {s, x};
    return rc ? status_on(rc, &a, err) : vb_sql_admin_run(&s->admin, status_on, &a, err);
}

/* The checks that fail a phase rather than let it report a wrong number. */
static int health_check(const vk_state *s, const index_status *x, vb_error *err) {
    if (x->evicted > 0)
        return vb_error_set(err, VK_DOMAIN, 1, "valkey: the server evicted %lld keys (evicted_keys): rows are missing; "
                            "run it with maxmemory-policy noeviction and enough maxmemory", x->evicted);
    if (x->failures > 0)
        return vb_error_set(err, VK_DOMAIN, 1, "valkey: index %s: %lld rows could not be indexed "
                            "(hash_indexing_failures): the answers would miss them", s->index, x->failures);
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
        if (x.ready) return VB_OK;
        sleep_ms(VK_POLL_MS);
    }
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
    int st = vb_sql_admin_run(&s->admin, build_on, s, err);
    if (st == VB_OK) st = wait_caught_up(s, NULL, err);
    if (st != VB_OK) return st;
    /* A partial backfill: the index must hold every key of the prefix. */
    index_status x;
    count_arg c = {s, 0};
    if ((st = vk_index_status(s, NULL, &x, err)) != VB_OK || (st = vb_sql_admin_run(&s->admin, count_on, &c, err)))
        return st;
    if (x.num_docs != c.keys)
        return vb_error_set(err, VK_DOMAIN, 1, "valkey: index %s holds %lld keys after its backfill, the prefix '%s' "
                            "has %lld: a partial backfill (see the server's log)", s->index, x.num_docs, s->prefix,
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
    int st = vk_dial(s, &rc, err);
    if (st != VB_OK) return st;
    index_status x;
    st = vk_index_status(s, rc, &x, err);
    redisFree(rc);
    if (st != VB_OK) return st;
    if (!x.exists) return vb_error_set(err, VK_DOMAIN, 1, "valkey: no index yet");
    if (x.percent < 1.0) {
        snprintf(stage, stage_len, "backfill (per mille of the keys scanned)");
        *done = (uint64_t)(x.percent * 1000.0);
        *total = 1000;
    } else {
        snprintf(stage, stage_len, "indexing the backfilled keys (keys indexed of the table's capacity)");
        *done = (uint64_t)x.num_docs;
        *total = s->capacity ? s->capacity : (uint64_t)x.num_docs;
    }
    return VB_OK;
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
    int st = info_text(rc, "memory", text, sizeof text, err);
    if (st != VB_OK) return st;
    long long used = info_field(text, "used_memory", &found);
    if (!found) used = -1;
    if ((st = info_text(rc, "search", text, sizeof text, err)) != VB_OK) return st;
    long long module = info_suffix(text, "used_memory_bytes", &found);
    a->out->index_bytes = found ? module : -1;
    a->out->table_bytes = used >= 0 && found && used > module ? used - module : used;
    redisReply *info = NULL;
    int exists = 0;
    if ((st = ft_info(a->s, rc, &info, &exists, err)) != VB_OK) return st;
    a->out->rows = exists ? (int64_t)pair_num(info, "num_docs", -1) : 0;
    if (info) freeReplyObject(info);
    return VB_OK;
}

/* Index bytes: the module's own memory (INFO search); table bytes: the rest of used_memory (the hashes, the
 * server's overhead); rows: num_docs of the index. Memory is global in 1.0.2: one index per server is assumed. */
static int vk_sizes(void *state, vb_sizes *out, vb_error *err) {
    sizes_arg a = {state, out};
    out->index_bytes = out->table_bytes = out->rows = -1;
    return vb_sql_admin_run(&((vk_state *)state)->admin, sizes_on, &a, err);
}

typedef struct version_arg {
    char *buf;
    size_t len;
} version_arg;

/* "Valkey 8.1.1, valkey-search 1.0.0": INFO server's valkey_version (redis_version on older servers) and the
 * module's version from MODULE LIST (an integer, major*10000 + minor*100 + patch), as the server reports them.
 * The 1.0.2 release still registers itself as 10000 (MODULE_VERSION in its module_loader.cc): the version of
 * the source is the manifest's server.valkey.provenance.version, from the image layer. */
static int version_on(void *conn, void *arg, vb_error *err) {
    version_arg *a = arg;
    redisContext *rc = conn;
    char text[8192], server[64] = "unknown", module[64] = "not loaded";
    int st = info_text(rc, "server", text, sizeof text, err);
    if (st != VB_OK) return st;
    for (const char *key = "valkey_version:"; key; key = strcmp(key, "redis_version:") ? "redis_version:" : NULL) {
        const char *p = strstr(text, key);
        if (p) {
            sscanf(p + strlen(key), "%63[^\r\n]", server);
            break;
        }
    }
    const char *argv[] = {"MODULE", "LIST"};
    redisReply *r = NULL;
    if ((st = vk_command(rc, 2, argv, NULL, &r, err, "MODULE LIST")) != VB_OK) return st;
    for (size_t i = 0; r->type == REDIS_REPLY_ARRAY && i < r->elements; i++) {
        const char *name = pair_str(r->element[i], "name");
        if (strcmp(name, "search") != 0) continue;
        long long v = (long long)pair_num(r->element[i], "ver", -1);
        if (v >= 0) snprintf(module, sizeof module, "%lld.%lld.%lld", v / 10000, v / 100 % 100, v % 100);
    }
    freeReplyObject(r);
    snprintf(a->buf, a->len, "Valkey %s, valkey-search %s", server, module);
    return VB_OK;
}

static int vk_version(void *state, char *buf, size_t len, vb_error *err) {
    version_arg a = {buf, len};
    return vb_sql_admin_run(&((vk_state *)state)->admin, version_on, &a, err);
}

/* ---- writes ------------------------------------------------------------------------------------------- */

/* Pipelines the rows in groups of `pipeline` commands: HSET PREFIX<id> v BLOB [tag T], preceded by HDEL ... tag
 * when replace_tag is set and the row has no tag (an upsert must not keep an old tag). */
static int write_rows(vk_conn *c, const int64_t *ids, const float *vecs, const int32_t *tags, size_t n,
                      int replace_tag, vb_error *err) {
    vk_state *s = c->s;
    size_t sent = 0;
    int st = VB_OK;
    for (size_t i = 0; i < n; i++) {
        char key[VK_NAME_MAX + 24], tag[16];
        snprintf(key, sizeof key, "%s%" PRId64, s->prefix, ids[i]);
        if (!tags && replace_tag) {
            const char *argv[] = {"HDEL", key, "tag"};
            if (redisAppendCommandArgv(c->rc, 3, argv, NULL) != REDIS_OK) return vk_fail(c->rc, NULL, err, "HDEL");
            sent++;
        }
        const char *argv[] = {"HSET", key, "v", (const char *)(vecs + i * s->dim), "tag", tag};
        size_t lens[] = {4, strlen(key), 1, s->dim * sizeof(float), 3, 0};
        if (tags) lens[5] = (size_t)snprintf(tag, sizeof tag, "%" PRId32, tags[i]);
        if (redisAppendCommandArgv(c->rc, tags ? 6 : 4, argv, lens) != REDIS_OK) return vk_fail(c->rc, NULL, err, "HSET");
        if (++sent >= (size_t)s->pipeline) {
            int d = vk_drain(c->rc, sent, err, "HSET");
            sent = 0;
            if (d != VB_OK && st == VB_OK) st = d;
            if (d == VB_RETRY) return d;
        }
    }
    int d = vk_drain(c->rc, sent, err, "HSET");
    return st != VB_OK ? st : d;
}

/* Little-endian float32 is the module's FLOAT32 format: x86 and ARM hosts store floats that way already. */
_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "valkey: the vector bytes are written as the host stores them");

static int vk_load(void *conn, const int64_t *ids, const float *vecs, const int32_t *tags, size_t n, vb_error *err) {
    vk_conn *c = conn;
    if (!c->s->ready) return vb_error_set(err, VK_DOMAIN, 1, "valkey: no table: create or attach first");
    int st = conn_ready(c, err);
    return st == VB_OK ? write_rows(c, ids, vecs, tags, n, 0, err) : st;
}

/* The wait after churn, on this connection: once it returns the index answers with the new rows. Before build
 * (no index yet) there is nothing to wait for. */
static int churn_wait(vk_conn *c, vb_error *err) {
    index_status x;
    int st = vk_index_status(c->s, c->rc, &x, err);
    if (st != VB_OK || !x.exists) return st;
    return wait_caught_up(c->s, c->rc, err);
}

/* HSET replaces the members of a live key and makes a new or removed one: an upsert. */
static int vk_insert(void *conn, const int64_t *ids, const float *vecs, const int32_t *tags, size_t n,
                     vb_error *err) {
    vk_conn *c = conn;
    if (!c->s->ready) return vb_error_set(err, VK_DOMAIN, 1, "valkey: no table: create or attach first");
    int st = conn_ready(c, err);
    if (st == VB_OK) st = write_rows(c, ids, vecs, tags, n, 1, err);
    return st == VB_OK ? churn_wait(c, err) : st;
}

/* DEL of the keys, pipelined; an absent key is no error. */
static int vk_remove(void *conn, const int64_t *ids, size_t n, vb_error *err) {
    vk_conn *c = conn;
    vk_state *s = c->s;
    if (!s->ready) return vb_error_set(err, VK_DOMAIN, 1, "valkey: no table: create or attach first");
    int st = conn_ready(c, err);
    size_t sent = 0;
    for (size_t i = 0; st == VB_OK && i < n; i++) {
        char key[VK_NAME_MAX + 24];
        snprintf(key, sizeof key, "%s%" PRId64, s->prefix, ids[i]);
        const char *argv[] = {"DEL", key};
        if (redisAppendCommandArgv(c->rc, 2, argv, NULL) != REDIS_OK) return vk_fail(c->rc, NULL, err, "DEL");
        if (++sent >= (size_t)s->pipeline || i + 1 == n) {
            st = vk_drain(c->rc, sent, err, "DEL");
            sent = 0;
        }
    }
    return st == VB_OK ? churn_wait(c, err) : st;
}

/* ---- search ------------------------------------------------------------------------------------------- */

static int vk_set_search(void *conn, const vb_search_params *p, vb_error *err) {
    vk_conn *c = conn;
    if (p->ef_search < 1 || p->ef_search > 4096)
        return vb_error_set(err, VK_DOMAIN, 1, "valkey: ef_search %d is outside valkey-search's EF_RUNTIME 1..4096",
                            p->ef_search);
    c->ef_search = p->ef_search;   /* sent with every query: a setting of this connection by construction */
    return VB_OK;
}

static int vk_search(void *conn, const float *query, int k, const vb_filter *filter, int64_t *ids_out, int *n_out,
                     vb_error *err) {
    vk_conn *c = conn;
    vk_state *s = c->s;
    *n_out = 0;
    if (k <= 0) return VB_OK;
    if (!s->ready) return vb_error_set(err, VK_DOMAIN, 1, "valkey: no table: create or attach first");
    int filtered = filter && filter->kind != VB_FILTER_NONE;
    if (filtered && filter->kind != VB_FILTER_TAG_BELOW)
        return vb_error_set(err, VK_DOMAIN, 1, "valkey: unknown filter kind %d", (int)filter->kind);
    int st = conn_ready(c, err);
    if (st != VB_OK) return st;
    char q[160], ef[32] = "", limit[16];
    if (c->ef_search > 0) snprintf(ef, sizeof ef, " EF_RUNTIME %d", c->ef_search);
    char where[48] = "*";
    if (filtered) snprintf(where, sizeof where, "(@tag:[-inf (%" PRId32 "])", filter->tag_below);
    snprintf(q, sizeof q, "%s=>[KNN %d @v $q%s]", where, k, ef);
    snprintf(limit, sizeof limit, "%d", k);
    const char *argv[] = {"FT.SEARCH", s->index, q, "PARAMS", "2", "q", (const char *)query, "NOCONTENT",
                          "LIMIT", "0", limit, "DIALECT", "2"};
    size_t lens[13];
    for (int i = 0; i < 13; i++) lens[i] = i == 6 ? s->dim * sizeof(float) : strlen(argv[i]);
    redisReply *r = NULL;
    if ((st = vk_command(c->rc, 13, argv, lens, &r, err, "FT.SEARCH")) != VB_OK) return st;
    if (r->type != REDIS_REPLY_ARRAY || r->elements < 1) {
        freeReplyObject(r);
        return vb_error_set(err, VK_DOMAIN, 1, "valkey: FT.SEARCH: unexpected reply shape");
    }
    size_t plen = strlen(s->prefix);
    int n = 0;
    for (size_t i = 1; i < r->elements && n < k; i++) {
        const redisReply *e = r->element[i];
        if (e->type != REDIS_REPLY_STRING || e->len <= plen || strncmp(e->str, s->prefix, plen) != 0) continue;
        ids_out[n++] = strtoll(e->str + plen, NULL, 10);
    }
    freeReplyObject(r);
    *n_out = n;
    return VB_OK;
}

const vb_engine_ops vb_engine_valkey = {
    .name = "valkey",
    .description = "Valkey + valkey-search 1.0.2 HNSW over hiredis (HASH rows, FT.CREATE after the load, "
                   "FT.SEARCH KNN; verified against a server built here)",
    .flags = VB_ENGINE_FILTER,
    .param_names = vk_params,
    .open = vk_open,
    .close = vk_close,
    .create = vk_create,
    .connect = vk_connect,
    .disconnect = vk_disconnect,
    .load = vk_load,
    .set_search = vk_set_search,
    .search = vk_search,
    .version = vk_version,
    .attach = vk_attach,
    .build = vk_build,
    .remove = vk_remove,
    .insert = vk_insert,
    .maintain = vk_maintain,
    .sizes = vk_sizes,
    .build_progress = vk_build_progress,
};
