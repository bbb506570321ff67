/* The engine registry and the wrappers every phase calls instead of the ops.
 *
 * The registry is a small fixed table of ops found by name (built-ins added on first use, more through
 * vb_engine_register). The wrappers are where optional ops are checked and where every failure is made to
 * carry a message: an op that fails with an empty message gets one naming the engine and the op, so the
 * results database never holds a bare "error". vb_conn_search is the hot path and stays a direct call plus
 * one predictable branch on each side. */
#include "engines/engine.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define VB_ENGINE_MAX 32

static const vb_engine_ops *registry[VB_ENGINE_MAX];
static size_t n_registry;
static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t builtins_once = PTHREAD_ONCE_INIT;

struct vb_engine {
    const vb_engine_ops *ops;
    void *state;
    /* What vbench sent through this engine (vb_engine_sent): searches of closed connections, rows written. */
    atomic_uint_fast64_t sent_searches, sent_writes;
};

/* The search op and flags are copied next to the handle so the hot path touches one cache line. */
struct vb_conn {
    int (*search)(void *conn, const float *query, int k, const vb_filter *filter, int64_t *ids_out, int *n_out,
                  vb_error *err);
    void *conn;
    unsigned flags;
    const vb_engine_ops *ops;
    uint64_t searches;      /* search calls on this connection: owned by its thread, added to the engine's at close */
    vb_engine *engine;
};

/* ---- registry ---------------------------------------------------------------------------------------- */

/* An ops table is usable only with every required op: checked once here rather than at each call. */
static int ops_complete(const vb_engine_ops *o) {
    return o && o->name && o->name[0] && o->open && o->close && o->create && o->connect && o->disconnect &&
           o->load && o->set_search && o->search && o->version;
}

/* Adds ops to the table; the caller holds registry_lock. */
static int registry_add_locked(const vb_engine_ops *ops) {
    if (!ops_complete(ops) || n_registry == VB_ENGINE_MAX) return VB_ERROR;
    for (size_t i = 0; i < n_registry; i++)
        if (strcmp(registry[i]->name, ops->name) == 0) return VB_ERROR;
    registry[n_registry++] = ops;
    return VB_OK;
}

static void register_builtins(void) {
    pthread_mutex_lock(&registry_lock);
    registry_add_locked(&vb_engine_hnswlib);
    registry_add_locked(&vb_engine_exact);
    registry_add_locked(&vb_engine_null);
    registry_add_locked(&vb_engine_sleep);
    registry_add_locked(&vb_engine_mariadb), registry_add_locked(&vb_engine_alisql), registry_add_locked(&vb_engine_doris);
    registry_add_locked(&vb_engine_pgvector);
    registry_add_locked(&vb_engine_valkey);
    registry_add_locked(&vb_engine_mongodb);
    registry_add_locked(&vb_engine_redis);
    pthread_mutex_unlock(&registry_lock);
}

/* Registers an engine family. VB_ERROR when a required op is missing, the name is taken, or the table is full.
 * ops must outlive the process's use of the registry (a static table). */
int vb_engine_register(const vb_engine_ops *ops) {
    pthread_once(&builtins_once, register_builtins);
    pthread_mutex_lock(&registry_lock);
    int rc = registry_add_locked(ops);
    pthread_mutex_unlock(&registry_lock);
    return rc;
}

const vb_engine_ops *vb_engine_find(const char *name) {
    pthread_once(&builtins_once, register_builtins);
    const vb_engine_ops *found = NULL;
    if (!name) return NULL;
    pthread_mutex_lock(&registry_lock);
    for (size_t i = 0; i < n_registry && !found; i++)
        if (strcmp(registry[i]->name, name) == 0) found = registry[i];
    pthread_mutex_unlock(&registry_lock);
    return found;
}

/* names[] points into the static ops tables: nothing to free. */
size_t vb_engine_list(const char **names, size_t cap) {
    pthread_once(&builtins_once, register_builtins);
    pthread_mutex_lock(&registry_lock);
    size_t n = n_registry;
    for (size_t i = 0; i < n && i < cap && names; i++) names[i] = registry[i]->name;
    pthread_mutex_unlock(&registry_lock);
    return n;
}

/* ---- error completion -------------------------------------------------------------------------------- */

/* Makes sure a failed op leaves a usable error: a status other than VB_ERROR / VB_RETRY is reported as an
 * error, an empty message becomes one naming the engine and the op, an empty domain becomes "engine".
 * Kept out of line so the success path of every wrapper is a compare and a return. */
static int __attribute__((noinline, cold)) complete_error(int rc, vb_error *err, const vb_engine_ops *ops,
                                                           const char *op) {
    if (rc != VB_ERROR && rc != VB_RETRY) {
        vb_error_set(err, "engine", rc, "engine %s: %s returned the unknown status %d", ops->name, op, rc);
        return VB_ERROR;
    }
    if (!err) return rc;
    if (!err->message[0])
        vb_error_set(err, "engine", err->code, "engine %s: %s failed without a message", ops->name, op);
    else if (!err->domain[0])
        snprintf(err->domain, sizeof err->domain, "engine");
    return rc;
}

/* Clears the message before an op so "empty" means "this op wrote nothing", not "nothing since last time". */
static inline void error_reset(vb_error *err) {
    if (err) {
        err->message[0] = '\0';
        err->domain[0] = '\0';
        err->code = 0;
    }
}

static inline int finish(int rc, vb_error *err, const vb_engine_ops *ops, const char *op) {
    return __builtin_expect(rc == VB_OK, 1) ? VB_OK : complete_error(rc, err, ops, op);
}

/* ---- engine wrappers --------------------------------------------------------------------------------- */

/* The unknown-name error lists what is registered, so a typo in a profile is fixed from the message alone. */
static int unknown_engine(const char *name, vb_error *err) {
    const char *names[VB_ENGINE_MAX];
    size_t n = vb_engine_list(names, VB_ENGINE_MAX);
    char list[512] = "";
    size_t used = 0;
    for (size_t i = 0; i < n && i < VB_ENGINE_MAX && used < sizeof list; i++) {
        int w = snprintf(list + used, sizeof list - used, "%s%s", i ? ", " : "", names[i]);
        if (w < 0) break;
        used += (size_t)w;
    }
    return vb_error_set(err, "engine", 1, "unknown engine \"%s\" (known engines: %s)", name ? name : "(null)",
                        list);
}

/* Params are checked here, once for every engine, against the ops' own list; the message names the key, the
 * engine and what it accepts. */
static int check_params(const vb_engine_ops *ops, const vb_engine_config *cfg, vb_error *err) {
    static const char *const none[] = {NULL};
    const char *const *allowed = ops->param_names ? ops->param_names : none;
    for (size_t i = 0; i < cfg->n_params; i++) {
        const char *key = cfg->params[i].key;
        int known = 0;
        /* node.K.KEY: node K's connect parameter, for an engine of several servers (VB_ENGINE_SHARDS, _REPLICAS) */
        const char *bare = key;
        if (key && strncmp(key, "node.", 5) == 0 && (ops->flags & (VB_ENGINE_SHARDS | VB_ENGINE_REPLICAS)) &&
            strchr(key + 5, '.'))
            bare = strchr(key + 5, '.') + 1;
        for (const char *const *a = allowed; *a && !known && bare; a++) known = strcmp(*a, bare) == 0;
        if (known) continue;
        char list[512] = "";
        size_t used = 0;
        for (const char *const *a = allowed; *a && used < sizeof list; a++) {
            int w = snprintf(list + used, sizeof list - used, "%s%s", a == allowed ? "" : ", ", *a);
            if (w < 0) break;
            used += (size_t)w;
        }
        return vb_error_set(err, "config", 1, "engine %s: unknown parameter \"%s\" (accepted: %s)", ops->name,
                            key ? key : "(null)", allowed[0] ? list : "none");
    }
    return VB_OK;
}

/* *out is set to a new engine the caller closes with vb_engine_close; NULL on failure. cfg may be NULL. */
int vb_engine_open(const char *name, const vb_engine_config *cfg, vb_engine **out, vb_error *err) {
    static const vb_engine_config empty = {NULL, 0, NULL, 0};
    *out = NULL;
    if (!cfg) cfg = &empty;
    const vb_engine_ops *ops = vb_engine_find(name);
    if (!ops) return unknown_engine(name, err);
    if (check_params(ops, cfg, err) != VB_OK) return VB_ERROR;
    vb_engine *e = calloc(1, sizeof *e);
    if (!e) return vb_error_set(err, "engine", 1, "engine %s: out of memory", ops->name);
    e->ops = ops;
    error_reset(err);
    int rc = ops->open(cfg, &e->state, err);
    if (rc != VB_OK) {
        free(e);
        return complete_error(rc, err, ops, "open");
    }
    *out = e;
    return VB_OK;
}

/* Closes the engine and sets *e = NULL; NULL-safe. Every connection must be closed first. */
void vb_engine_close(vb_engine **e) {
    if (!e || !*e) return;
    (*e)->ops->close((*e)->state);
    free(*e);
    *e = NULL;
}

const vb_engine_ops *vb_engine_ops_of(const vb_engine *e) { return e ? e->ops : NULL; }

int vb_engine_create(vb_engine *e, const vb_table_spec *spec, vb_error *err) {
    error_reset(err);
    return finish(e->ops->create(e->state, spec, err), err, e->ops, "create");
}

/* No attach op: nothing to reuse, found = 0. */
int vb_engine_attach(vb_engine *e, const vb_table_spec *spec, int *found, vb_error *err) {
    *found = 0;
    if (!e->ops->attach) return VB_OK;
    error_reset(err);
    return finish(e->ops->attach(e->state, spec, found, err), err, e->ops, "attach");
}

/* Optional ops with nothing to do when absent: build (the graph grew during load), persist (the server's
 * data is durable on its own), maintain (no maintenance exists). */
int vb_engine_build(vb_engine *e, vb_error *err) {
    if (!e->ops->build) return VB_OK;
    error_reset(err);
    return finish(e->ops->build(e->state, err), err, e->ops, "build");
}

int vb_engine_persist(vb_engine *e, vb_error *err) {
    if (!e->ops->persist) return VB_OK;
    error_reset(err);
    return finish(e->ops->persist(e->state, err), err, e->ops, "persist");
}

int vb_engine_maintain(vb_engine *e, vb_error *err) {
    if (!e->ops->maintain) return VB_OK;
    error_reset(err);
    return finish(e->ops->maintain(e->state, err), err, e->ops, "maintain");
}

int vb_engine_rows(vb_engine *e, vb_row_fn fn, void *arg, int *listed, vb_error *err) {
    *listed = e->ops->rows != NULL;
    if (!e->ops->rows) return VB_OK;
    error_reset(err);
    return finish(e->ops->rows(e->state, fn, arg, err), err, e->ops, "rows");
}

int vb_engine_rows_node(vb_engine *e, int node, vb_row_fn fn, void *arg, int *listed, vb_error *err) {
    *listed = 0;
    if (!e->ops->rows_node) return VB_OK;
    error_reset(err);
    return finish(e->ops->rows_node(e->state, node, fn, arg, listed, err), err, e->ops, "rows_node");
}

const char *vb_engine_maintenance(const vb_engine *e) {
    if (!e->ops->maintain) return "none";
    return e->ops->maintenance ? e->ops->maintenance : "the engine's maintain";
}

int vb_engine_sizes(vb_engine *e, vb_sizes *out, vb_error *err) {
    out->index_bytes = out->table_bytes = out->rows = -1;
    if (!e->ops->sizes) return VB_OK;
    error_reset(err);
    return finish(e->ops->sizes(e->state, out, err), err, e->ops, "sizes");
}

int vb_engine_version(vb_engine *e, char *buf, size_t len, vb_error *err) {
    if (len) buf[0] = '\0';
    error_reset(err);
    return finish(e->ops->version(e->state, buf, len, err), err, e->ops, "version");
}

int vb_engine_server_stats(vb_engine *e, vb_server_stats *out, vb_error *err) {
    out->calls = -1;
    out->exec_s = -1;
    if (!e->ops->server_stats) return VB_OK;
    error_reset(err);
    return finish(e->ops->server_stats(e->state, out, err), err, e->ops, "server_stats");
}

int vb_engine_node_stats(vb_engine *e, vb_node_stats *out, size_t cap, size_t *n, vb_error *err) {
    *n = 0;
    if (!e->ops->node_stats) return VB_OK;
    error_reset(err);
    return finish(e->ops->node_stats(e->state, out, cap, n, err), err, e->ops, "node_stats");
}

int vb_engine_node_lag(vb_engine *e, int64_t *lag, size_t cap, size_t *n, vb_error *err) {
    *n = 0;
    if (!e->ops->node_lag) return VB_OK;
    error_reset(err);
    return finish(e->ops->node_lag(e->state, lag, cap, n, err), err, e->ops, "node_lag");
}

int vb_engine_catch_up(vb_engine *e, vb_error *err) {
    if (!e->ops->catch_up) return VB_OK;
    error_reset(err);
    return finish(e->ops->catch_up(e->state, err), err, e->ops, "catch_up");
}

int vb_engine_wait_sample(vb_engine *e, vb_wait_profile *acc, vb_error *err) {
    error_reset(err);
    if (!e->ops->wait_sample) return vb_error_set(err, e->ops->name, 1, "%s has no wait profile", e->ops->name);
    int rc = finish(e->ops->wait_sample(e->state, acc, err), err, e->ops, "wait_sample");
    if (rc == VB_OK && acc) acc->rounds++;
    return rc;
}

void vb_wait_profile_add(vb_wait_profile *p, const char *cls, const char *event, uint64_t samples) {
    size_t i = 0;
    while (i < p->n && (strcmp(p->ev[i].wait_class, cls) || strcmp(p->ev[i].event, event))) i++;
    if (i == p->n) {
        if (p->n == VB_WAIT_EVENTS_MAX) {
            i = VB_WAIT_EVENTS_MAX - 1;
            snprintf(p->ev[i].wait_class, sizeof p->ev[i].wait_class, "other");
            snprintf(p->ev[i].event, sizeof p->ev[i].event, "other");
        } else {
            snprintf(p->ev[i].wait_class, sizeof p->ev[i].wait_class, "%s", cls);
            snprintf(p->ev[i].event, sizeof p->ev[i].event, "%s", event);
            p->ev[i].samples = 0;
            p->n++;
        }
    }
    p->ev[i].samples += samples;
}

int vb_engine_supports_metric(const vb_engine_ops *ops, vb_metric m) {
    return ops && (!ops->metrics || (ops->metrics & VB_METRIC_BIT(m)));
}

int vb_engine_counters(vb_engine *e, vb_counters *out, vb_error *err) {
    out->searches = out->writes = -1;
    if (!e->ops->counters) return VB_OK;
    error_reset(err);
    return finish(e->ops->counters(e->state, out, err), err, e->ops, "counters");
}

void vb_engine_sent(vb_engine *e, uint64_t *searches, uint64_t *writes) {
    *searches = atomic_load_explicit(&e->sent_searches, memory_order_relaxed);
    *writes = atomic_load_explicit(&e->sent_writes, memory_order_relaxed);
}

int vb_engine_build_progress(vb_engine *e, uint64_t *done, uint64_t *total, char *stage, size_t stage_len,
                             vb_error *err) {
    *done = *total = 0;
    if (stage_len) stage[0] = '\0';
    if (!e->ops->build_progress) return VB_RETRY;
    return e->ops->build_progress(e->state, done, total, stage, stage_len, err);
}

int vb_engine_explain(vb_engine *e, const vb_table_spec *spec, int ef_search, int k, const vb_filter *filter,
                      int *uses_index, char *plan, size_t plan_len, vb_error *err) {
    *uses_index = -1;
    if (plan && plan_len) plan[0] = '\0';
    error_reset(err);
    if (!e->ops->explain) return VB_OK;
    return finish(e->ops->explain(e->state, spec, ef_search, k, filter, uses_index, plan, plan_len, err), err,
                  e->ops, "explain");
}

/* ---- connection wrappers ----------------------------------------------------------------------------- */

/* *out is set to a new connection the caller closes with vb_conn_close; NULL on failure. */
int vb_engine_connect(vb_engine *e, vb_conn **out, vb_error *err) {
    *out = NULL;
    vb_conn *c = calloc(1, sizeof *c);
    if (!c) return vb_error_set(err, "engine", 1, "engine %s: out of memory", e->ops->name);
    c->search = e->ops->search;
    c->flags = e->ops->flags;
    c->ops = e->ops;
    c->engine = e;
    error_reset(err);
    int rc = e->ops->connect(e->state, &c->conn, err);
    if (rc != VB_OK) {
        free(c);
        return complete_error(rc, err, e->ops, "connect");
    }
    *out = c;
    return VB_OK;
}

/* Disconnects and sets *c = NULL; NULL-safe. */
void vb_conn_close(vb_conn **c) {
    if (!c || !*c) return;
    atomic_fetch_add_explicit(&(*c)->engine->sent_searches, (*c)->searches, memory_order_relaxed);
    (*c)->ops->disconnect((*c)->conn);
    free(*c);
    *c = NULL;
}

void vb_conn_sent_flush(vb_conn *c) {
    atomic_fetch_add_explicit(&c->engine->sent_searches, c->searches, memory_order_relaxed);
    c->searches = 0;
}

int vb_conn_load(vb_conn *c, const int64_t *ids, const float *vecs, const int32_t *tags, const int32_t *classes,
                 size_t n, vb_error *err) {
    error_reset(err);
    atomic_fetch_add_explicit(&c->engine->sent_writes, n, memory_order_relaxed);
    return finish(c->ops->load(c->conn, ids, vecs, tags, classes, n, err), err, c->ops, "load");
}

int vb_conn_set_search(vb_conn *c, const vb_search_params *p, vb_error *err) {
    error_reset(err);
    return finish(c->ops->set_search(c->conn, p, err), err, c->ops, "set_search");
}

int vb_conn_read_on(vb_conn *c, int node, int *chosen, vb_error *err) {
    *chosen = 0;
    if (!c->ops->read_on) return VB_OK;
    error_reset(err);
    return finish(c->ops->read_on(c->conn, node, chosen, err), err, c->ops, "read_on");
}

/* A filter given to an engine that cannot apply it would silently return unfiltered rows: refused instead. */
static int __attribute__((noinline, cold)) no_filter(const vb_conn *c, vb_error *err) {
    return vb_error_set(err, "engine", 1, "engine %s does not support filtered search", c->ops->name);
}

/* The hot path: one capability branch, the op, one branch on its status. */
int vb_conn_search(vb_conn *c, const float *query, int k, const vb_filter *filter, int64_t *ids_out, int *n_out,
                   vb_error *err) {
    static const unsigned kind_flag[VB_FILTER_KINDS] = {0, VB_ENGINE_FILTER, VB_ENGINE_FILTER_EQ, VB_ENGINE_FILTER_AND,
                                                        VB_ENGINE_FILTER_CLASS};
    if (__builtin_expect(filter && filter->kind != VB_FILTER_NONE &&
                             ((unsigned)filter->kind >= VB_FILTER_KINDS || !(c->flags & kind_flag[filter->kind])), 0))
        return no_filter(c, err);
    if (err) err->message[0] = err->domain[0] = '\0';
    c->searches++;
    int rc = c->search(c->conn, query, k, filter, ids_out, n_out, err);
    return __builtin_expect(rc == VB_OK, 1) ? VB_OK : complete_error(rc, err, c->ops, "search");
}

int vb_conn_remove(vb_conn *c, const int64_t *ids, size_t n, vb_error *err) {
    if (!c->ops->remove) return vb_error_set(err, "engine", 1, "engine %s does not support remove", c->ops->name);
    error_reset(err);
    return finish(c->ops->remove(c->conn, ids, n, err), err, c->ops, "remove");
}

int vb_conn_insert(vb_conn *c, const int64_t *ids, const float *vecs, const int32_t *tags, const int32_t *classes,
                   size_t n, vb_error *err) {
    if (!c->ops->insert) return vb_error_set(err, "engine", 1, "engine %s does not support insert", c->ops->name);
    error_reset(err);
    atomic_fetch_add_explicit(&c->engine->sent_writes, n, memory_order_relaxed);
    return finish(c->ops->insert(c->conn, ids, vecs, tags, classes, n, err), err, c->ops, "insert");
}
