/* MariaDB MHNSW, AliSQL VIDX and Apache Doris ANN over the MySQL protocol (MariaDB Connector/C).
 *
 * One engine state per instance holds the connection settings and an admin connection (DDL, sizes, version),
 * guarded by a mutex; each client thread owns a connection with its prepared statements. MariaDB and AliSQL grow
 * the graph on INSERT, so build is part of load (VB_ENGINE_BUILD_ON_INSERT, no build op). Vectors travel as
 * binary float32 parameters (MYSQL_TYPE_BLOB holding the little-endian floats, which a VECTOR column accepts);
 * Doris gets array literals in text statements. Where each statement comes from is in docs/mysql-family.md
 * and the comments of the builders.
 *
 * maintain (MariaDB): ALTER TABLE t FORCE, ALGORITHM=COPY, the rebuild of the table and of its MHNSW graph
 * (VB_ENGINE_MAINTAIN_REBUILDS: the mixed phase's after-maintenance window runs it; churn does not, a rebuild being
 * as costly as the build and not the routine upkeep churn's maintenance stands for). A DELETE
 * (and the old vector of an UPDATE) only marks its graph node deleted; the search still walks through it and skips it
 * in the answer, and nothing but a rebuild removes it. OPTIMIZE TABLE, which InnoDB runs as "recreate + analyze"
 * (ALTER TABLE ... FORCE with the default INPLACE algorithm), rebuilds the rows but keeps the graph as it is: on
 * MariaDB 11.8.9, 6,000 rows of 16 dimensions with 4,500 deleted, OPTIMIZE TABLE left the graph's table (t#i#01) with
 * its table_id and its 9.4 MB, and shrank the rows' from 9.4 MB to 0.24 MB; ALGORITHM=COPY rebuilt both (the graph to
 * 0.5 MB). AliSQL and Doris: none (not verified against a server here; Doris compacts on its own).
 * rows (MariaDB, the mixed phase's check against its write log): SELECT id, v, the VECTOR column's float32 bytes.
 *
 * Errors carry the server's own text (mysql_error / mysql_stmt_error); a lost connection (CR_SERVER_GONE_ERROR,
 * CR_SERVER_LOST) or a server that cannot be reached (CR_CONNECTION_ERROR, CR_CONN_HOST_ERROR) is VB_RETRY.
 * Every connection is bounded by vb_engine_config.io_timeout_s (the phase's timeout): MYSQL_OPT_CONNECT_TIMEOUT,
 * MYSQL_OPT_READ_TIMEOUT and MYSQL_OPT_WRITE_TIMEOUT, so a call on a hung server ends with CR_SERVER_LOST (a
 * lost connection: VB_RETRY, the server's silence named) instead of waiting forever.
 * The identifier check, the kNN statement cache and the EXPLAIN collector are engines/sql_common.h's, shared with
 * the pgvector adapter; the administrative connection and the error format are engines/adapter_common.h's, shared
 * with every server adapter. */
#include "engines/mysql_family.h"
#include "datasets/dataset.h"
#include "engines/filter.h"
#include "engines/sql_common.h"
#include "util/clock.h"

#include <errmsg.h>
#include <math.h>
#include <mysql.h>
#include <mysqld_error.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MY_NO_TAG 2147483647   /* rows loaded without a tag never pass a tag filter */
#define MY_NO_CLASS (-1)       /* rows loaded without a class never pass a class filter (classes are >= 0) */
#define DEADLOCK_BUDGET_S 300.0 /* retries of one insert batch after deadlocks before the load fails */
#define MY_MAX_NODES 16         /* node 0 and its read replicas (MariaDB's replicas: R, issue 39) */

/* One server's connect parameters: node 0's (the primary, or the only server), or a read replica's (node.K.KEY). */
typedef struct my_node {
    char host[256], socket[512], user[128], password[128];
    unsigned port;
} my_node;

typedef struct my_state {
    vb_mysql_dialect d;
    const char *name;
    char host[256], socket[512], user[128], password[128], database[128], table[128];
    unsigned port;
    unsigned io_timeout_s;      /* 0: Connector/C's defaults */
    long insert_batch;
    long long cache_bytes;      /* -1: leave the server's setting */
    size_t dim;
    vb_metric metric;
    vb_admin admin;         /* a MYSQL *, in the database */
    int waits_off;              /* wait_profile: off (MariaDB; the instruments' overhead measured against it) */
    struct my_wait_total *waits; /* the wait profile's last reading per instrument (my_wait_sample) */
    size_t n_waits, cap_waits;
    /* Read replicas (MariaDB, replicas: R): nodes 1 .. R replicate node 0 by MariaDB's own replication (the
     * recipe's replica.run seeds each from the primary's dump at its GTID position). Writes, the build and every
     * engine op go to node 0; each connection's searches go to one node, round robin over 0 .. R (next_node). */
    int n_nodes;
    my_node nodes[MY_MAX_NODES];   /* [1 .. n_nodes - 1]; node 0's are the fields above */
    atomic_uint next_node;
} my_state;

typedef struct my_conn {
    my_state *s;
    MYSQL *my;
    vb_sql_knn_cache knn;       /* MYSQL_STMT * per filter mode, for the k it was prepared for */
    MYSQL_STMT *insert;         /* prepared for insert_n rows */
    size_t insert_n;
    MYSQL_BIND *binds;
    size_t n_binds;
    char *text;                 /* Doris statements */
    size_t text_cap;
    long deadlocks;             /* insert batches sent again after a deadlock */
    unsigned jitter;            /* rand_r state of the deadlock back-off, one per connection */
    int read_node;              /* where this connection's searches go (round robin at connect; read_on) */
    struct my_conn *reader;     /* its session on replica read_node, opened at the first search */
    char set_sql[128];          /* the last search setting (SET mhnsw_ef_search), replayed on the reader */
} my_conn;

static const char *const mariadb_params[] = {"host", "port", "socket", "user", "password", "database", "table",
                                             "m", "insert_batch", "mhnsw_max_cache_size", "wait_profile",
                                             "replicas", NULL};
static const char *const alisql_params[] = {"host", "port", "socket", "user", "password", "database", "table",
                                            "m", "ef_construction", "insert_batch", "vidx_hnsw_cache_size", NULL};
/* session variables of the kNN query (SET mhnsw_max_cache_size / vidx_hnsw_cache_size): the index is the same */
static const char *const mariadb_search_params[] = {"mhnsw_max_cache_size", NULL};
static const char *const alisql_search_params[] = {"vidx_hnsw_cache_size", NULL};
static const char *const doris_params[] = {"host", "port", "user", "password", "database", "table", "m",
                                           "ef_construction", "insert_batch", NULL};

static pthread_once_t lib_once = PTHREAD_ONCE_INIT;
static void lib_init(void) { mysql_library_init(0, NULL, NULL); }

/* ---- statement builders (pure) ----------------------------------------------------------------------- */

const char *vb_mysql_dialect_name(vb_mysql_dialect d) {
    return d == VB_MYSQL_MARIADB ? "mariadb" : d == VB_MYSQL_ALISQL ? "alisql" : "doris";
}

/* Appends printf output at *used; VB_ERROR once the buffer is full. */
static int __attribute__((format(printf, 6, 7)))
put(char *buf, size_t len, size_t *used, vb_error *err, const char *what, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int w = *used < len ? vsnprintf(buf + *used, len - *used, fmt, ap) : -1;
    va_end(ap);
    if (w < 0 || (size_t)w >= len - *used)
        return vb_error_set(err, "engine", 1, "statement buffer too small for %s", what);
    *used += (size_t)w;
    return VB_OK;
}

/* MariaDB and AliSQL index only euclidean and cosine; Doris only l2 and inner product (angular is served as
 * inner product over normalised vectors). */
static int metric_check(vb_mysql_dialect d, vb_metric metric, vb_error *err) {
    if (d != VB_MYSQL_DORIS && metric != VB_METRIC_EUCLIDEAN && metric != VB_METRIC_ANGULAR)
        return vb_error_set(err, "engine", 1,
                            "%s: metric %s is not supported (the vector index has DISTANCE=euclidean|cosine only)",
                            vb_mysql_dialect_name(d), vb_metric_name(metric));
    return VB_OK;
}

static const char *distance_fn(vb_mysql_dialect d, vb_metric metric) {
    if (d == VB_MYSQL_DORIS) return metric == VB_METRIC_EUCLIDEAN ? "l2_distance_approximate" : "inner_product_approximate";
    return metric == VB_METRIC_EUCLIDEAN ? "VEC_DISTANCE_EUCLIDEAN" : "VEC_DISTANCE_COSINE";
}

/* MariaDB (Vector Overview): CREATE TABLE t (..., v VECTOR(d) NOT NULL, VECTOR INDEX (v) M=8 DISTANCE=cosine).
 * AliSQL (VIDX docs): the same with a named index, `VECTOR INDEX vi(v) M=6 DISTANCE=cosine`, EF_CONSTRUCTION=N
 * in newer versions. Doris (vector search docs): ARRAY<FLOAT> NOT NULL column, INDEX ... USING ANN
 * PROPERTIES("index_type"="hnsw","metric_type"="l2_distance","dim"="128", ...) on a DUPLICATE KEY table. */
int vb_mysql_sql_create(vb_mysql_dialect d, const char *table, const vb_table_spec *spec, char *buf, size_t len,
                        vb_error *err) {
    size_t u = 0;
    if (metric_check(d, spec->metric, err)) return VB_ERROR;
    if (d == VB_MYSQL_MARIADB)
        return put(buf, len, &u, err, "CREATE TABLE",
                   "CREATE TABLE `%s` (id BIGINT NOT NULL PRIMARY KEY, tag INT NOT NULL, tag2 INT NOT NULL, label INT NOT NULL, "
                   "class INT NOT NULL, "
                   "v VECTOR(%zu) NOT NULL, "
                   "VECTOR INDEX (v) M=%d DISTANCE=%s) ENGINE=InnoDB",
                   table, spec->dim, spec->m, spec->metric == VB_METRIC_EUCLIDEAN ? "euclidean" : "cosine");
    if (d == VB_MYSQL_ALISQL)
        return put(buf, len, &u, err, "CREATE TABLE",
                   "CREATE TABLE `%s` (id BIGINT NOT NULL PRIMARY KEY, tag INT NOT NULL, tag2 INT NOT NULL, label INT NOT NULL, "
                   "class INT NOT NULL, "
                   "v VECTOR(%zu) NOT NULL, "
                   "VECTOR INDEX vi(v) M=%d DISTANCE=%s EF_CONSTRUCTION=%d) ENGINE=InnoDB",
                   table, spec->dim, spec->m, spec->metric == VB_METRIC_EUCLIDEAN ? "euclidean" : "cosine",
                   spec->ef_construction);
    return put(buf, len, &u, err, "CREATE TABLE",
               "CREATE TABLE `%s` (id BIGINT NOT NULL, tag INT NOT NULL, tag2 INT NOT NULL, label INT NOT NULL, "
                   "class INT NOT NULL, "
               "v ARRAY<FLOAT> NOT NULL, "
               "INDEX idx_v (v) USING ANN PROPERTIES(\"index_type\"=\"hnsw\", \"metric_type\"=\"%s\", "
               "\"dim\"=\"%zu\", \"max_degree\"=\"%d\", \"ef_construction\"=\"%d\")) ENGINE=OLAP "
               "DUPLICATE KEY(id) DISTRIBUTED BY HASH(id) BUCKETS 1 PROPERTIES (\"replication_num\"=\"1\")",
               table, spec->metric == VB_METRIC_EUCLIDEAN ? "l2_distance" : "inner_product", spec->dim, spec->m,
               spec->ef_construction);
}

int vb_mysql_sql_drop(vb_mysql_dialect d, const char *table, char *buf, size_t len, vb_error *err) {
    size_t u = 0;
    (void)d;
    return put(buf, len, &u, err, "DROP TABLE", "DROP TABLE IF EXISTS `%s`", table);
}

/* Writes [x,y,...] (normalised when unit is set) at *u. %.9g round-trips a float. */
static int put_array(char *buf, size_t len, size_t *u, const float *v, size_t dim, int unit, vb_error *err) {
    double norm = 1.0;
    if (unit) {
        double nn = 0.0;
        for (size_t j = 0; j < dim; j++) nn += (double)v[j] * (double)v[j];
        norm = nn > 0.0 ? sqrt(nn) : 1.0;
    }
    if (put(buf, len, u, err, "array", "[")) return VB_ERROR;
    for (size_t j = 0; j < dim; j++)
        if (put(buf, len, u, err, "array", "%s%.9g", j ? "," : "", (double)(float)(v[j] / norm))) return VB_ERROR;
    return put(buf, len, u, err, "array", "]");
}

/* The WHERE of a prepared kNN statement per filter mode (0 none, else the vb_filter_kind), the bounds as `?`
 * before the vector's: range tag < ?, equality label = ?, and tag < ? AND tag2 < ?, class class = ?. */
static const char *const knn_where[VB_FILTER_KINDS] = {"", " WHERE tag < ?", " WHERE label = ?",
                                                       " WHERE tag < ? AND tag2 < ?", " WHERE class = ?"};

static int filter_mode(const vb_filter *f) {
    return f && f->kind > VB_FILTER_NONE && (unsigned)f->kind < VB_FILTER_KINDS ? (int)f->kind : 0;
}

/* MariaDB: SELECT ... ORDER BY VEC_DISTANCE_EUCLIDEAN(v, ?) LIMIT k (the index is used for ORDER BY distance
 * LIMIT; a WHERE is applied to the rows the index walk yields). AliSQL: the same functions (VEC_DISTANCE,
 * VEC_DISTANCE_EUCLIDEAN, VEC_DISTANCE_COSINE). Doris: ORDER BY l2_distance_approximate(v, [..]) LIMIT k, or
 * inner_product_approximate(...) DESC, the filter as a literal WHERE (engines/filter.h vb_filter_sql). */
int vb_mysql_sql_search(vb_mysql_dialect d, const char *table, vb_metric metric, int k, const vb_filter *filter,
                        const float *query, size_t dim, char *buf, size_t len, vb_error *err) {
    size_t u = 0;
    int mode = filter_mode(filter);
    if (metric_check(d, metric, err)) return VB_ERROR;
    if (d != VB_MYSQL_DORIS)
        return put(buf, len, &u, err, "search", "SELECT id FROM `%s`%s ORDER BY %s(v, ?) LIMIT %d", table,
                   knn_where[mode], distance_fn(d, metric), k);
    if (!query) return vb_error_set(err, "engine", 1, "doris: the search statement needs the query vector");
    if (put(buf, len, &u, err, "search", "SELECT id FROM `%s`", table)) return VB_ERROR;
    if (mode) {
        char where[128];
        if (vb_filter_sql(filter, where, sizeof where) || put(buf, len, &u, err, "search", " WHERE %s", where))
            return vb_error_set(err, "engine", 1, "doris: the filter does not fit the statement");
    }
    if (put(buf, len, &u, err, "search", " ORDER BY %s(v, ", distance_fn(d, metric)) ||
        put_array(buf, len, &u, query, dim, metric == VB_METRIC_ANGULAR, err))
        return VB_ERROR;
    return put(buf, len, &u, err, "search", ")%s LIMIT %d", metric == VB_METRIC_EUCLIDEAN ? "" : " DESC", k);
}

/* The filter's bound values in the order of knn_where's placeholders; returns how many (0..2). */
static int filter_bounds(const vb_filter *f, int32_t out[2]) {
    switch (filter_mode(f)) {
    case VB_FILTER_TAG_BELOW: out[0] = f->tag_below; return 1;
    case VB_FILTER_LABEL_EQ: out[0] = f->label; return 1;
    case VB_FILTER_AND: out[0] = f->tag_below, out[1] = f->tag2_below; return 2;
    case VB_FILTER_CLASS_EQ: out[0] = f->cls; return 1;
    default: return 0;
    }
}

/* MariaDB: mhnsw_ef_search (session). AliSQL: SET SESSION vidx_hnsw_ef_search = N. Doris: hnsw_ef_search. */
int vb_mysql_sql_set_ef(vb_mysql_dialect d, int ef, char *buf, size_t len, vb_error *err) {
    size_t u = 0;
    const char *var = d == VB_MYSQL_MARIADB ? "mhnsw_ef_search" : d == VB_MYSQL_ALISQL ? "vidx_hnsw_ef_search"
                                                                                      : "hnsw_ef_search";
    return put(buf, len, &u, err, "SET", "SET SESSION %s = %d", var, ef);
}

/* MariaDB: mhnsw_max_cache_size (global). AliSQL: vidx_hnsw_cache_size (global). */
int vb_mysql_sql_set_cache(vb_mysql_dialect d, long long bytes, char *buf, size_t len, vb_error *err) {
    size_t u = 0;
    if (d == VB_MYSQL_DORIS) return vb_error_set(err, "engine", 1, "doris: no vector cache setting");
    return put(buf, len, &u, err, "SET", "SET GLOBAL %s = %lld",
               d == VB_MYSQL_MARIADB ? "mhnsw_max_cache_size" : "vidx_hnsw_cache_size", bytes);
}

int vb_mysql_sql_delete(vb_mysql_dialect d, const char *table, const int64_t *ids, size_t n, char *buf,
                        size_t len, vb_error *err) {
    size_t u = 0;
    if (d == VB_MYSQL_DORIS && !ids) return vb_error_set(err, "engine", 1, "doris: DELETE needs the ids");
    if (put(buf, len, &u, err, "DELETE", "DELETE FROM `%s` WHERE id IN (", table)) return VB_ERROR;
    for (size_t i = 0; i < n; i++) {
        int rc = d == VB_MYSQL_DORIS ? put(buf, len, &u, err, "DELETE", "%s%lld", i ? ", " : "", (long long)ids[i])
                                     : put(buf, len, &u, err, "DELETE", "%s?", i ? ", " : "");
        if (rc) return VB_ERROR;
    }
    return put(buf, len, &u, err, "DELETE", ")");
}

/* An insert of a live id updates it (churn restarts rely on it): ON DUPLICATE KEY UPDATE. */
int vb_mysql_sql_insert(vb_mysql_dialect d, const char *table, size_t n, char *buf, size_t len, vb_error *err) {
    size_t u = 0;
    if (d == VB_MYSQL_DORIS) return vb_error_set(err, "engine", 1, "doris: rows are inserted as literals");
    if (put(buf, len, &u, err, "INSERT", "INSERT INTO `%s` (id, tag, tag2, label, class, v) VALUES ", table))
        return VB_ERROR;
    for (size_t i = 0; i < n; i++)
        if (put(buf, len, &u, err, "INSERT", "%s(?, ?, ?, ?, ?, ?)", i ? ", " : "")) return VB_ERROR;
    return put(buf, len, &u, err, "INSERT", " ON DUPLICATE KEY UPDATE tag = VALUES(tag), tag2 = VALUES(tag2), "
               "label = VALUES(label), class = VALUES(class), v = VALUES(v)");
}

/* ---- errors and connections ------------------------------------------------------------------------ */

/* Transient: the connection is gone, or the server cannot be reached (yet). */
static int is_lost(unsigned e) {
    return e == CR_SERVER_GONE_ERROR || e == CR_SERVER_LOST || e == CR_CONNECTION_ERROR || e == CR_CONN_HOST_ERROR;
}

/* The server's text, prefixed with the dialect and what was being done. */
static int my_fail(const my_state *s, MYSQL *my, const char *what, vb_error *err) {
    unsigned e = mysql_errno(my);
    char detail[32];
    snprintf(detail, sizeof detail, "error %u", e);
    return vb_adapter_fail(err, s->name, what, mysql_error(my), detail, (int)e, is_lost(e));
}

static int stmt_fail(const my_state *s, MYSQL_STMT *st, const char *what, vb_error *err) {
    unsigned e = mysql_stmt_errno(st);
    char detail[32];
    snprintf(detail, sizeof detail, "error %u", e);
    return vb_adapter_fail(err, s->name, what, mysql_stmt_error(st), detail, (int)e, is_lost(e));
}

static int run(const my_state *s, MYSQL *my, const char *sql, vb_error *err) {
    if (mysql_real_query(my, sql, strlen(sql))) return my_fail(s, my, sql, err);
    MYSQL_RES *r = mysql_store_result(my);
    if (r) mysql_free_result(r);
    return VB_OK;
}

/* A new connection to node (0: the primary or only server, K: a read replica); with use_db, in the database
 * (created when missing by open on the primary, replicated to the replicas). */
static int my_connect_node(const my_state *s, int node, int use_db, MYSQL **out, vb_error *err) {
    *out = NULL;
    const my_node n0 = {.port = s->port}, *nd = node > 0 ? &s->nodes[node] : &n0;
    const char *host = node > 0 ? nd->host : s->host, *sock = node > 0 ? nd->socket : s->socket;
    const char *user = node > 0 ? nd->user : s->user, *pw = node > 0 ? nd->password : s->password;
    MYSQL *my = mysql_init(NULL);
    if (!my) return vb_error_set(err, "engine", 1, "%s: out of memory", s->name);
    if (s->io_timeout_s) {
        unsigned t = s->io_timeout_s, ct = t < 60 ? t : 60;
        mysql_options(my, MYSQL_OPT_CONNECT_TIMEOUT, &ct);
        mysql_options(my, MYSQL_OPT_READ_TIMEOUT, &t);
        mysql_options(my, MYSQL_OPT_WRITE_TIMEOUT, &t);
    }
    /* a host other than localhost: TCP at host:port (a node placed on another orchestrator host, whose socket path
     * is that host's), else the socket */
    if (host[0] && strcmp(host, "localhost") != 0) sock = "";
    if (!mysql_real_connect(my, host[0] ? host : NULL, user, pw[0] ? pw : NULL, use_db ? s->database : NULL,
                            nd->port, sock[0] ? sock : NULL, 0)) {
        char where[800];
        snprintf(where, sizeof where, "connect to %s%s%s%.0u as %s", node > 0 ? "replica " : "",
                 sock[0] ? sock : host[0] ? host : "localhost", sock[0] ? "" : ":", sock[0] ? 0 : nd->port, user);
        int rc = my_fail(s, my, where, err);   /* VB_RETRY when no server answers there */
        mysql_close(my);
        return rc;
    }
    /* AliSQL's vector indexes require READ COMMITTED. */
    if (s->d == VB_MYSQL_ALISQL && run(s, my, "SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED", err)) {
        mysql_close(my);
        return VB_ERROR;
    }
    *out = my;
    return VB_OK;
}

static int my_connect(const my_state *s, int use_db, MYSQL **out, vb_error *err) {
    return my_connect_node(s, 0, use_db, out, err);
}

/* ---- lifecycle ------------------------------------------------------------------------------------- */

static int copy_param(const vb_engine_config *cfg, const char *key, const char *def, char *dst, size_t len,
                      vb_error *err) {
    const char *v = vb_kv_get(cfg->params, cfg->n_params, key, def);
    if ((size_t)snprintf(dst, len, "%s", v) >= len)
        return vb_error_set(err, "config", 1, "parameter %s is too long", key);
    return VB_OK;
}

/* The administrative connection (adapter_common's dial): in the database, created when missing. */
static int admin_dial(void *owner, void **conn, vb_error *err) {
    my_state *s = owner;
    MYSQL *my = NULL;
    char sql[512];
    int rc = my_connect(s, 0, &my, err);
    if (rc == VB_OK) {
        snprintf(sql, sizeof sql, "CREATE DATABASE IF NOT EXISTS `%s`", s->database);
        rc = run(s, my, sql, err);
    }
    if (rc == VB_OK && mysql_select_db(my, s->database)) rc = my_fail(s, my, "USE", err);
    if (rc != VB_OK && my) mysql_close(my);
    *conn = rc == VB_OK ? my : NULL;
    return rc;
}

static void admin_hangup(void *conn) { mysql_close(conn); }

static const vb_admin_ops my_admin_ops = {admin_dial, admin_hangup};

/* One statement on the administrative connection (its result, if any, discarded). */
static int run_on(void *conn, void *arg, vb_error *err) {
    const my_state *s = ((const void **)arg)[0];
    return run(s, conn, ((const void **)arg)[1], err);
}

/* Nothing to run: vb_admin_run has dialled by the time it calls this. */
static int dialled(void *conn, void *arg, vb_error *err) {
    (void)conn, (void)arg, (void)err;
    return VB_OK;
}

static int admin_run(my_state *s, const char *sql, vb_error *err) {
    const void *arg[2] = {s, sql};
    return vb_admin_run(&s->admin, run_on, arg, err);
}

/* The wait instruments the profile reads and the recipe enables (deploy/engines/mariadb.yml: wait/synch and
 * wait/lock/metadata; MariaDB times wait/io/file and wait/lock/table by default). wait/io/table is left out of the
 * profile: it times whole storage-engine row calls, CPU included, and the waits above nest inside it. wait/io/socket
 * stays off: a client thread's socket wait is the idle time between its statements. */
#define MY_WAIT_SWITCHED "(NAME LIKE 'wait/synch/%' OR NAME LIKE 'wait/lock/metadata/%')"
#define MY_WAIT_PROFILED_W "(w.EVENT_NAME LIKE 'wait/synch/%' OR w.EVENT_NAME LIKE 'wait/lock/%' OR w.EVENT_NAME LIKE 'wait/io/file/%')"

/* wait_profile on: the switched instruments enabled and timed (a server started without them, or left off by an
 * earlier configuration of the same run, gets them now); off: disabled, so an off configuration measures the
 * server without their cost. */
static int my_waits_switch(my_state *s, vb_error *err) {
    const char *yes = s->waits_off ? "NO" : "YES";
    char sql[256];
    snprintf(sql, sizeof sql, "UPDATE performance_schema.setup_instruments SET ENABLED = '%s', TIMED = '%s' WHERE %s",
             yes, yes, MY_WAIT_SWITCHED);
    return admin_run(s, sql, err);
}

static int family_open(vb_mysql_dialect d, const vb_engine_config *cfg, void **state, vb_error *err) {
    pthread_once(&lib_once, lib_init);
    my_state *s = calloc(1, sizeof *s);
    if (!s) return vb_error_set(err, "engine", 1, "%s: out of memory", vb_mysql_dialect_name(d));
    s->d = d;
    s->name = vb_mysql_dialect_name(d);
    long port, batch, cache = -1;
    const char *cache_key = d == VB_MYSQL_MARIADB ? "mhnsw_max_cache_size" : "vidx_hnsw_cache_size";
    if (copy_param(cfg, "host", "", s->host, sizeof s->host, err) ||
        copy_param(cfg, "socket", "", s->socket, sizeof s->socket, err) ||
        copy_param(cfg, "user", "root", s->user, sizeof s->user, err) ||
        copy_param(cfg, "password", "", s->password, sizeof s->password, err) ||
        copy_param(cfg, "database", "vbench", s->database, sizeof s->database, err) ||
        copy_param(cfg, "table", "vb_items", s->table, sizeof s->table, err) ||
        vb_sql_ident_check(s->name, "database", s->database, 64, VB_SQL_IDENT_QUOTED, err) ||
        vb_sql_ident_check(s->name, "table", s->table, 64, VB_SQL_IDENT_QUOTED, err) ||
        vb_kv_get_long(cfg->params, cfg->n_params, "port", d == VB_MYSQL_DORIS ? 9030 : 3306, 0, 65535, &port,
                       err) ||
        vb_kv_get_long(cfg->params, cfg->n_params, "insert_batch", 500, 1, 20000, &batch, err) ||
        (d != VB_MYSQL_DORIS &&
         vb_kv_get_long(cfg->params, cfg->n_params, cache_key, -1, -1, 1L << 50, &cache, err))) {
        free(s);
        return vb_error_prefix(err, "%s", vb_mysql_dialect_name(d));
    }
    const char *wp = d == VB_MYSQL_MARIADB ? vb_kv_get(cfg->params, cfg->n_params, "wait_profile", "on") : "off";
    if (strcmp(wp, "on") != 0 && strcmp(wp, "off") != 0) {
        free(s);
        return vb_error_set(err, "engine", 1, "%s: wait_profile '%s': expected on or off", vb_mysql_dialect_name(d), wp);
    }
    s->waits_off = strcmp(wp, "off") == 0;
    s->port = (unsigned)port;
    long replicas = 0;
    if (vb_kv_get_long(cfg->params, cfg->n_params, "replicas", 0, 0, MY_MAX_NODES - 1, &replicas, err)) {
        free(s);
        return vb_error_prefix(err, "%s", vb_mysql_dialect_name(d));
    }
    s->n_nodes = 1 + (int)replicas;
    for (int k = 1; k < s->n_nodes; k++) {
        /* node K's connect parameters (node.K.KEY), node 0's where it has none */
        my_node *nd = &s->nodes[k];
        char key[5][48];
        const char *names[] = {"host", "socket", "user", "password", "port"};
        for (int i = 0; i < 5; i++) snprintf(key[i], sizeof key[i], "node.%d.%s", k, names[i]);
        snprintf(nd->host, sizeof nd->host, "%s", vb_kv_get(cfg->params, cfg->n_params, key[0], s->host));
        snprintf(nd->socket, sizeof nd->socket, "%s", vb_kv_get(cfg->params, cfg->n_params, key[1], ""));
        snprintf(nd->user, sizeof nd->user, "%s", vb_kv_get(cfg->params, cfg->n_params, key[2], s->user));
        snprintf(nd->password, sizeof nd->password, "%s", vb_kv_get(cfg->params, cfg->n_params, key[3], s->password));
        nd->port = (unsigned)atoi(vb_kv_get(cfg->params, cfg->n_params, key[4], "3306"));
        if (!nd->socket[0] && !vb_kv_get(cfg->params, cfg->n_params, key[0], NULL)) {
            free(s);
            return vb_error_set(err, "engine", 1, "%s: replicas: %ld without their servers (no node.%d.socket or "
                                "node.%d.host): the orchestrator starts them for an entry with a recipe",
                                vb_mysql_dialect_name(d), replicas, k, k);
        }
    }
    s->io_timeout_s = cfg->io_timeout_s > 0 ? (unsigned)cfg->io_timeout_s : 0;
    s->insert_batch = batch;
    s->cache_bytes = cache;
    vb_admin_init(&s->admin, &my_admin_ops, s);
    /* Connect now (the dial makes the database), so wrong credentials fail at open with the server's text. */
    char sql[512];
    int rc = VB_OK;
    if (cache >= 0 && (rc = vb_mysql_sql_set_cache(d, cache, sql, sizeof sql, err)) == VB_OK)
        rc = admin_run(s, sql, err);
    else if (rc == VB_OK)
        rc = vb_admin_run(&s->admin, dialled, NULL, err);
    if (rc == VB_OK && d == VB_MYSQL_MARIADB) rc = my_waits_switch(s, err);
    if (rc != VB_OK) {
        vb_admin_destroy(&s->admin);
        free(s);
        return rc;
    }
    *state = s;
    return VB_OK;
}

static int mariadb_open(const vb_engine_config *c, void **st, vb_error *e) { return family_open(VB_MYSQL_MARIADB, c, st, e); }
static int alisql_open(const vb_engine_config *c, void **st, vb_error *e) { return family_open(VB_MYSQL_ALISQL, c, st, e); }
static int doris_open(const vb_engine_config *c, void **st, vb_error *e) { return family_open(VB_MYSQL_DORIS, c, st, e); }

static void family_close(void *state) {
    my_state *s = state;
    vb_admin_destroy(&s->admin);
    free(s->waits);
    free(s);
}

static int family_create(void *state, const vb_table_spec *spec, vb_error *err) {
    my_state *s = state;
    char sql[2048];
    if (spec->dim == 0) return vb_error_set(err, "engine", 1, "%s: dim 0", s->name);
    if (vb_mysql_sql_create(s->d, s->table, spec, sql, sizeof sql, err)) return VB_ERROR;
    char drop[256];
    if (vb_mysql_sql_drop(s->d, s->table, drop, sizeof drop, err) || admin_run(s, drop, err) ||
        admin_run(s, sql, err))
        return VB_ERROR;
    s->dim = spec->dim;
    s->metric = spec->metric;
    return VB_OK;
}

static int family_connect(void *state, void **conn, vb_error *err) {
    my_state *s = state;
    my_conn *c = calloc(1, sizeof *c);
    if (!c) return vb_error_set(err, "engine", 1, "%s: out of memory", s->name);
    c->s = s;
    c->jitter = (unsigned)(uintptr_t)c ^ (unsigned)time(NULL);
    c->read_node = (int)(atomic_fetch_add(&s->next_node, 1) % (unsigned)s->n_nodes);
    int rc = my_connect(s, 1, &c->my, err);
    if (rc != VB_OK) {
        free(c);
        return rc;
    }
    *conn = c;
    return VB_OK;
}

/* sql_common's release callback for the kNN cache. */
static void stmt_close(void *ctx, void *stmt) {
    (void)ctx;
    mysql_stmt_close(stmt);
}

static void family_disconnect(void *conn) {
    my_conn *c = conn;
    if (!c) return;
    family_disconnect(c->reader);
    vb_sql_knn_clear(&c->knn, stmt_close, NULL);
    if (c->insert) mysql_stmt_close(c->insert);
    if (c->my) mysql_close(c->my);
    free(c->binds);
    free(c->text);
    free(c);
}

static int binds_reserve(my_conn *c, size_t n, vb_error *err) {
    if (n <= c->n_binds) {
        memset(c->binds, 0, n * sizeof *c->binds);
        return VB_OK;
    }
    MYSQL_BIND *b = realloc(c->binds, n * sizeof *b);
    if (!b) return vb_error_set(err, "engine", 1, "%s: out of memory", c->s->name);
    c->binds = b;
    c->n_binds = n;
    memset(b, 0, n * sizeof *b);
    return VB_OK;
}

static int text_reserve(my_conn *c, size_t n, vb_error *err) {
    return vb_sql_reserve(&c->text, &c->text_cap, n, c->s->name, err);
}

/* Prepares sql on the connection; *st is replaced. */
static int prepare(my_conn *c, MYSQL_STMT **st, const char *sql, vb_error *err) {
    if (*st) mysql_stmt_close(*st);
    *st = mysql_stmt_init(c->my);
    if (!*st) return my_fail(c->s, c->my, "mysql_stmt_init", err);
    if (mysql_stmt_prepare(*st, sql, strlen(sql))) {
        int rc = stmt_fail(c->s, *st, "prepare", err);
        mysql_stmt_close(*st);
        *st = NULL;
        return rc;
    }
    return VB_OK;
}

/* ---- load / insert / remove ------------------------------------------------------------------------ */

static int32_t tag_of(const int32_t *tags, size_t i) { return tags ? tags[i] : MY_NO_TAG; }

/* A row's four attribute columns (engines/engine.h vb_filter): tag from the array, tag2 and label from the id,
 * class from the classes; a row loaded without tags gets MY_NO_TAG in the first three and passes none of their
 * filters, a row without a class MY_NO_CLASS. */
#define MY_ATTRS 4
static void attrs_of(const int64_t *ids, const int32_t *tags, const int32_t *classes, size_t i, int32_t out[MY_ATTRS]) {
    out[0] = tag_of(tags, i);
    out[1] = tags ? vb_dataset_tag2(ids[i]) : MY_NO_TAG;
    out[2] = tags ? vb_dataset_label(ids[i]) : MY_NO_TAG;
    out[3] = classes ? classes[i] : MY_NO_CLASS;
}

/* One prepared multi-row upsert of n rows. */
static int insert_prepared(my_conn *c, const int64_t *ids, const float *vecs, const int32_t *tags,
                           const int32_t *classes, size_t n, vb_error *err) {
    my_state *s = c->s;
    if (!c->insert || c->insert_n != n) {
        size_t len = 192 + 24 * n + strlen(s->table);
        if (text_reserve(c, len, err) || vb_mysql_sql_insert(s->d, s->table, n, c->text, len, err) ||
            prepare(c, &c->insert, c->text, err))
            return VB_ERROR;
        c->insert_n = n;
    }
    if (binds_reserve(c, (2 + MY_ATTRS) * n, err)) return VB_ERROR;
    int32_t *attrs = malloc(MY_ATTRS * n * sizeof *attrs);
    if (!attrs) return vb_error_set(err, "engine", 1, "%s: out of memory", s->name);
    for (size_t i = 0; i < n; i++) {
        MYSQL_BIND *b = c->binds + (2 + MY_ATTRS) * i;
        attrs_of(ids, tags, classes, i, attrs + MY_ATTRS * i);
        b[0].buffer_type = MYSQL_TYPE_LONGLONG;
        b[0].buffer = (void *)(ids + i);
        for (int j = 0; j < MY_ATTRS; j++) {
            b[1 + j].buffer_type = MYSQL_TYPE_LONG;
            b[1 + j].buffer = attrs + MY_ATTRS * i + j;
        }
        b[1 + MY_ATTRS].buffer_type = MYSQL_TYPE_BLOB;
        b[1 + MY_ATTRS].buffer = (void *)(vecs + i * s->dim);
        b[1 + MY_ATTRS].buffer_length = (unsigned long)(s->dim * sizeof(float));
    }
    int rc = VB_OK;
    if (mysql_stmt_bind_param(c->insert, c->binds)) rc = stmt_fail(s, c->insert, "bind INSERT", err);
    else if (mysql_stmt_execute(c->insert)) rc = stmt_fail(s, c->insert, "INSERT", err);
    free(attrs);
    return rc;
}

/* Doris: a text multi-row INSERT with array literals (stream load, an HTTP PUT, is not implemented). */
static int insert_doris(my_conn *c, const int64_t *ids, const float *vecs, const int32_t *tags,
                        const int32_t *classes, size_t n, vb_error *err) {
    my_state *s = c->s;
    size_t len = 256 + n * (84 + s->dim * 18), u = 0;
    if (text_reserve(c, len, err)) return VB_ERROR;
    if (put(c->text, len, &u, err, "INSERT", "INSERT INTO `%s` (id, tag, tag2, label, class, v) VALUES ", s->table))
        return VB_ERROR;
    int32_t a[MY_ATTRS];
    for (size_t i = 0; i < n; i++)
        if ((attrs_of(ids, tags, classes, i, a), 0) ||
            put(c->text, len, &u, err, "INSERT", "%s(%lld, %d, %d, %d, %d, ", i ? ", " : "", (long long)ids[i],
                (int)a[0], (int)a[1], (int)a[2], (int)a[3]) ||
            put_array(c->text, len, &u, vecs + i * s->dim, s->dim, s->metric == VB_METRIC_ANGULAR, err) ||
            put(c->text, len, &u, err, "INSERT", ")"))
            return VB_ERROR;
    return run(s, c->my, c->text, err);
}

static int family_load(void *conn, const int64_t *ids, const float *vecs, const int32_t *tags,
                       const int32_t *classes, size_t n, vb_error *err) {
    my_conn *c = conn;
    if (!c->s->dim) return vb_error_set(err, "engine", 1, "%s: load before create", c->s->name);
    for (size_t at = 0; at < n;) {
        size_t m = n - at < (size_t)c->s->insert_batch ? n - at : (size_t)c->s->insert_batch;
        const int32_t *t = tags ? tags + at : NULL, *cl = classes ? classes + at : NULL;
        int rc;
        /* Concurrent inserts into one MHNSW graph deadlock (error 1213, the statement rolled back whole under
         * autocommit): the batch is sent again, as the server asks. With 8 load connections on 100k rows they
         * deadlock each other again and again if they all retry at once (a smoke run failed after 100 quick
         * retries), so the wait doubles from 1 ms to 1 s with a random spread that pulls the connections apart,
         * for up to DEADLOCK_BUDGET_S of retries of one batch. */
        unsigned backoff_ms = 1;
        double waited = 0;
        for (int attempt = 0;; attempt++) {
            rc = c->s->d == VB_MYSQL_DORIS ? insert_doris(c, ids + at, vecs + at * c->s->dim, t, cl, m, err)
                                           : insert_prepared(c, ids + at, vecs + at * c->s->dim, t, cl, m, err);
            if (rc != VB_ERROR || (err->code != ER_LOCK_DEADLOCK && err->code != ER_LOCK_WAIT_TIMEOUT)) break;
            if (waited >= DEADLOCK_BUDGET_S) {
                vb_error_prefix(err, "an insert batch deadlocked %d times in %.0f s of retries", attempt + 1, waited);
                break;
            }
            c->deadlocks++;
            unsigned ms = backoff_ms / 2 + (unsigned)(rand_r(&c->jitter) % (backoff_ms + 1));
            usleep(1000u * ms);
            waited += ms / 1000.0;
            if (backoff_ms < 1000) backoff_ms *= 2;
        }
        if (rc != VB_OK) return rc;
        at += m;
    }
    return VB_OK;
}

static int family_remove(void *conn, const int64_t *ids, size_t n, vb_error *err) {
    my_conn *c = conn;
    my_state *s = c->s;
    for (size_t at = 0; at < n;) {
        size_t m = n - at < 1000 ? n - at : 1000;
        size_t len = 128 + 24 * m;
        if (text_reserve(c, len, err) || vb_mysql_sql_delete(s->d, s->table, ids + at, m, c->text, len, err))
            return VB_ERROR;
        int rc;
        if (s->d == VB_MYSQL_DORIS) {
            rc = run(s, c->my, c->text, err);
        } else {
            MYSQL_STMT *st = NULL;
            rc = prepare(c, &st, c->text, err);
            if (rc == VB_OK && binds_reserve(c, m, err)) rc = VB_ERROR;
            for (size_t i = 0; rc == VB_OK && i < m; i++) {
                c->binds[i].buffer_type = MYSQL_TYPE_LONGLONG;
                c->binds[i].buffer = (void *)(ids + at + i);
            }
            if (rc == VB_OK && mysql_stmt_bind_param(st, c->binds)) rc = stmt_fail(s, st, "bind DELETE", err);
            if (rc == VB_OK && mysql_stmt_execute(st)) rc = stmt_fail(s, st, "DELETE", err);
            if (st) mysql_stmt_close(st);
        }
        if (rc != VB_OK) return rc;
        at += m;
    }
    return VB_OK;
}

/* ---- search ---------------------------------------------------------------------------------------- */

/* The connection c's searches use: c itself, or its session on replica read_node, opened at the first search (a
 * load connection never reads there) with the search setting made so far. */
static int reader_of(my_conn *c, my_conn **out, vb_error *err) {
    *out = c;
    if (c->read_node == 0) return VB_OK;
    if (!c->reader) {
        my_conn *r = calloc(1, sizeof *r);
        if (!r) return vb_error_set(err, "engine", 1, "%s: out of memory", c->s->name);
        r->s = c->s;
        r->read_node = c->read_node;
        int rc = my_connect_node(c->s, c->read_node, 1, &r->my, err);
        if (rc == VB_OK && c->set_sql[0]) rc = run(c->s, r->my, c->set_sql, err);
        if (rc != VB_OK) {
            family_disconnect(r);
            return rc;
        }
        c->reader = r;
    }
    *out = c->reader;
    return VB_OK;
}

static int family_set_search(void *conn, const vb_search_params *p, vb_error *err) {
    my_conn *c = conn;
    char sql[128];
    if (vb_mysql_sql_set_ef(c->s->d, p->ef_search, sql, sizeof sql, err)) return VB_ERROR;
    int rc = run(c->s, c->my, sql, err);
    if (rc == VB_OK) snprintf(c->set_sql, sizeof c->set_sql, "%s", sql);
    if (rc == VB_OK && c->reader) rc = run(c->s, c->reader->my, sql, err);   /* its replica session, if open */
    return rc;
}

/* Searches of conn go to node from now on (0 the primary, K a replica, -1 the last replica): the streaming
 * phase's freshness probe reads on a replica, so that the freshness it measures counts the replication lag. */
static int family_read_on(void *conn, int node, int *chosen, vb_error *err) {
    my_conn *c = conn;
    if (node < 0) node = c->s->n_nodes - 1;
    if (node >= c->s->n_nodes) return vb_error_set(err, "engine", 1, "%s: no node %d (%d servers)", c->s->name, node, c->s->n_nodes);
    if (node != c->read_node) {
        family_disconnect(c->reader);
        c->reader = NULL;
        c->read_node = node;
    }
    *chosen = node;
    return VB_OK;
}

static int search_doris(my_conn *c, const float *query, int k, const vb_filter *filter, int64_t *ids_out,
                        int *n_out, vb_error *err) {
    my_state *s = c->s;
    size_t len = 256 + s->dim * 18;
    if (text_reserve(c, len, err) ||
        vb_mysql_sql_search(s->d, s->table, s->metric, k, filter, query, s->dim, c->text, len, err))
        return VB_ERROR;
    if (mysql_real_query(c->my, c->text, strlen(c->text))) return my_fail(s, c->my, "search", err);
    MYSQL_RES *r = mysql_store_result(c->my);
    if (!r) return my_fail(s, c->my, "search result", err);
    MYSQL_ROW row;
    int n = 0;
    while ((row = mysql_fetch_row(r)) && n < k) ids_out[n++] = row[0] ? strtoll(row[0], NULL, 10) : -1;
    mysql_free_result(r);
    *n_out = n;
    return VB_OK;
}

/* Prepared statements are kept per connection for the k they were made for. */
static int family_search(void *conn, const float *query, int k, const vb_filter *filter, int64_t *ids_out,
                         int *n_out, vb_error *err) {
    my_conn *c = conn;
    my_state *s = c->s;
    *n_out = 0;
    int rrc = reader_of(conn, &c, err);
    if (rrc != VB_OK) return rrc;
    if (s->d == VB_MYSQL_DORIS) return search_doris(c, query, k, filter, ids_out, n_out, err);
    if (filter && (unsigned)filter->kind >= VB_FILTER_KINDS)
        return vb_error_set(err, "engine", 1, "%s: unknown filter kind %d", s->name, (int)filter->kind);
    int mode = filter_mode(filter);
    MYSQL_STMT *stmt = vb_sql_knn_get(&c->knn, mode, k, stmt_close, NULL), **st = &stmt;
    if (!stmt) {
        char sql[512];
        if (vb_mysql_sql_search(s->d, s->table, s->metric, k, filter, NULL, s->dim, sql, sizeof sql, err))
            return VB_ERROR;
        int rc = prepare(c, st, sql, err);
        if (rc != VB_OK) return rc;
        vb_sql_knn_put(&c->knn, mode, k, stmt);
    }
    MYSQL_BIND in[3];
    memset(in, 0, sizeof in);
    int32_t bounds[2] = {0, 0};
    int at = 0, nb = filter_bounds(filter, bounds);
    for (; at < nb; at++) {
        in[at].buffer_type = MYSQL_TYPE_LONG;
        in[at].buffer = bounds + at;
    }
    in[at].buffer_type = MYSQL_TYPE_BLOB;
    in[at].buffer = (void *)query;
    in[at].buffer_length = (unsigned long)(s->dim * sizeof(float));
    if (mysql_stmt_bind_param(*st, in)) return stmt_fail(s, *st, "bind search", err);
    if (mysql_stmt_execute(*st)) return stmt_fail(s, *st, "search", err);
    long long id = 0;
    my_bool is_null = 0;
    MYSQL_BIND out;
    memset(&out, 0, sizeof out);
    out.buffer_type = MYSQL_TYPE_LONGLONG;
    out.buffer = &id;
    out.is_null = &is_null;
    if (mysql_stmt_bind_result(*st, &out)) return stmt_fail(s, *st, "bind result", err);
    int n = 0, f;
    while ((f = mysql_stmt_fetch(*st)) == 0 || f == MYSQL_DATA_TRUNCATED)
        if (n < k) ids_out[n++] = is_null ? -1 : (int64_t)id;
    if (f != MYSQL_NO_DATA) {
        int rc = stmt_fail(s, *st, "fetch", err);
        mysql_stmt_free_result(*st);
        return rc;
    }
    mysql_stmt_free_result(*st);
    *n_out = n;
    return VB_OK;
}

static int family_catch_up(void *state, vb_error *err);

/* The rebuild of the rows and the MHNSW graph without the deleted nodes (the head of this file says why not OPTIMIZE). */
static int family_maintain(void *state, vb_error *err) {
    my_state *s = state;
    char sql[512];
    snprintf(sql, sizeof sql, "ALTER TABLE `%s` FORCE, ALGORITHM=COPY", s->table);
    if (admin_run(s, sql, err)) return VB_ERROR;
    return family_catch_up(s, err);   /* the replicas rebuilt it too before anything is measured */
}

/* Every row with its vector as stored (SELECT id, v: the VECTOR column's little-endian float32 bytes), MariaDB. The
 * whole table in one result: for the mixed phase's check of a test-sized table. */
typedef struct rows_arg {
    my_state *s;
    vb_row_fn fn;
    void *arg;
} rows_arg;

static int rows_on(void *conn, void *arg, vb_error *err) {
    rows_arg *a = arg;
    char sql[512];
    snprintf(sql, sizeof sql, "SELECT id, v FROM `%s`", a->s->table);
    if (mysql_real_query(conn, sql, strlen(sql))) return my_fail(a->s, conn, sql, err);
    MYSQL_RES *r = mysql_store_result(conn);
    if (!r) return my_fail(a->s, conn, sql, err);
    float *v = malloc(a->s->dim * sizeof *v);
    int rc = v ? VB_OK : vb_error_set(err, a->s->name, 1, "%s: out of memory", a->s->name);
    MYSQL_ROW row;
    while (rc == VB_OK && (row = mysql_fetch_row(r))) {
        unsigned long *len = mysql_fetch_lengths(r);
        if (!row[0] || !row[1] || len[1] != a->s->dim * sizeof *v)
            rc = vb_error_set(err, a->s->name, 1, "%s: rows: id %s holds %lu bytes, not %zu floats", a->s->name,
                              row[0] ? row[0] : "NULL", len[1], a->s->dim);
        else {
            memcpy(v, row[1], len[1]);   /* little-endian float32, as this host's */
            if (a->fn(a->arg, strtoll(row[0], NULL, 10), v))
                rc = vb_error_set(err, a->s->name, 1, "%s: the listing of the rows was stopped", a->s->name);
        }
    }
    free(v);
    mysql_free_result(r);
    return rc;
}

static int family_rows(void *state, vb_row_fn fn, void *arg, vb_error *err) {
    rows_arg a = {state, fn, arg};
    return vb_admin_run(&((my_state *)state)->admin, rows_on, &a, err);
}

/* A replica's rows, on a connection of its own to that node (the same SELECT as the primary's). */
static int family_rows_node(void *state, int node, vb_row_fn fn, void *arg, int *listed, vb_error *err) {
    my_state *s = state;
    *listed = 0;
    if (node < 1 || node >= s->n_nodes) return VB_OK;
    MYSQL *my = NULL;
    if (my_connect_node(s, node, 1, &my, err) != VB_OK) return vb_error_prefix(err, "replica %d", node), VB_ERROR;
    rows_arg a = {s, fn, arg};
    int rc = rows_on(my, &a, err);
    mysql_close(my);
    if (rc != VB_OK) return vb_error_prefix(err, "replica %d", node), rc;
    *listed = 1;
    return VB_OK;
}

/* ---- sizes, version, EXPLAIN ----------------------------------------------------------------------- */

/* A one-row query on the administrative connection: the first n values as strings, or NULL (no row, NULL). */
typedef struct row_arg {
    my_state *s;
    const char *sql;
    int n;
    char *vals[3];
} row_arg;

static int row_on(void *conn, void *arg, vb_error *err) {
    row_arg *a = arg;
    for (int i = 0; i < a->n; i++) free(a->vals[i]), a->vals[i] = NULL;
    if (mysql_real_query(conn, a->sql, strlen(a->sql))) return my_fail(a->s, conn, a->sql, err);
    MYSQL_RES *r = mysql_store_result(conn);
    if (!r) return mysql_field_count(conn) ? my_fail(a->s, conn, a->sql, err) : VB_OK;
    MYSQL_ROW row = mysql_fetch_row(r);
    for (int i = 0; row && i < a->n && i < (int)mysql_num_fields(r); i++)
        if (row[i]) a->vals[i] = strdup(row[i]);
    mysql_free_result(r);
    return VB_OK;
}

static void row_free(row_arg *a) {
    for (int i = 0; i < a->n; i++) free(a->vals[i]);
}

/* The row's values as integers (-1 for NULL / no row). */
static int admin_ints(my_state *s, const char *sql, long long *vals, int n, vb_error *err) {
    row_arg a = {s, sql, n, {NULL, NULL, NULL}};
    int rc = vb_admin_run(&s->admin, row_on, &a, err);
    for (int i = 0; i < n; i++) vals[i] = a.vals[i] ? strtoll(a.vals[i], NULL, 10) : -1;
    row_free(&a);
    return rc;
}

/* found = 1 when the table holds spec->capacity rows (or up to spec->attach_missing fewer, in a churn) and SHOW
 * CREATE TABLE has the class column, the vector column of spec's dimension and a vector index with spec's M and distance: a finished build from an earlier run (a resumed
 * campaign, or an agent whose session was closed). MariaDB and AliSQL; Doris always rebuilds. */
static int family_attach(void *state, const vb_table_spec *spec, int *found, vb_error *err) {
    my_state *s = state;
    *found = 0;
    if (s->d == VB_MYSQL_DORIS) return VB_OK;
    char sql[512], *create = NULL;
    snprintf(sql, sizeof sql, "SHOW CREATE TABLE `%s`", s->table);
    row_arg a = {s, sql, 2, {NULL, NULL, NULL}};
    vb_error ignored;
    int rc = vb_admin_run(&s->admin, row_on, &a, &ignored);
    if (rc == VB_RETRY) {   /* no server: not "no table" */
        *err = ignored;
        row_free(&a);
        return rc;
    }
    create = a.vals[1];   /* no table: nothing to attach (the error is expected) */
    a.vals[1] = NULL;
    row_free(&a);
    if (!create) return VB_OK;
    /* Lower case, quotes dropped: MariaDB 11.8 prints VECTOR KEY `v` (`v`) `M`='16' `DISTANCE`='cosine'. */
    char *w = create;
    for (char *p = create; *p; p++)
        if (*p != '`' && *p != '\'') *w++ = *p >= 'A' && *p <= 'Z' ? (char)(*p - 'A' + 'a') : *p;
    *w = '\0';
    char col[64], m[32], dist[48];
    snprintf(col, sizeof col, "vector(%zu)", spec->dim);
    snprintf(m, sizeof m, "m=%d", spec->m);
    snprintf(dist, sizeof dist, "distance=%s", spec->metric == VB_METRIC_EUCLIDEAN ? "euclidean" : "cosine");
    /* a table made before the class column (issue 35) is another schema */
    int match = strstr(create, col) && strstr(create, "vector key") && strstr(create, m) && strstr(create, dist) &&
                strstr(create, " class int");
    free(create);
    if (!match) return VB_OK;
    long long rows = -1;
    snprintf(sql, sizeof sql, "SELECT COUNT(*) FROM `%s`", s->table);
    if (admin_ints(s, sql, &rows, 1, err) != VB_OK) return VB_ERROR;
    if (rows > (long long)spec->capacity || rows + (long long)spec->attach_missing < (long long)spec->capacity)
        return VB_OK;
    s->dim = spec->dim;
    s->metric = spec->metric;
    *found = 1;
    return family_catch_up(s, err);   /* an item on an existing build measures caught-up replicas */
}

/* information_schema.TABLES (DATA_LENGTH, INDEX_LENGTH) after ANALYZE; for MHNSW the graph lives in a hidden
 * InnoDB table <table>#i#01 that information_schema.TABLES does not list, but INNODB_SYS_TABLESPACES does:
 * its allocated size is the vector index, added to INDEX_LENGTH (the primary key is in the table). */
static int family_sizes(void *state, vb_sizes *out, vb_error *err) {
    my_state *s = state;
    char sql[768];
    long long v[3], hidden = -1, rows = -1;
    if (s->d != VB_MYSQL_DORIS) {
        snprintf(sql, sizeof sql, "ANALYZE TABLE `%s`", s->table);
        if (admin_run(s, sql, err)) return VB_ERROR;
    }
    snprintf(sql, sizeof sql,
             "SELECT DATA_LENGTH, INDEX_LENGTH, TABLE_ROWS FROM information_schema.TABLES WHERE TABLE_SCHEMA = '%s' "
             "AND TABLE_NAME = '%s'", s->database, s->table);
    if (admin_ints(s, sql, v, 3, err)) return VB_ERROR;
    snprintf(sql, sizeof sql, "SELECT COUNT(*) FROM `%s`", s->table);
    if (admin_ints(s, sql, &rows, 1, err)) return VB_ERROR;
    if (s->d == VB_MYSQL_MARIADB) {
        snprintf(sql, sizeof sql,
                 "SELECT SUM(ALLOCATED_SIZE) FROM information_schema.INNODB_SYS_TABLESPACES WHERE NAME LIKE "
                 "'%s/%s#i#%%'", s->database, s->table);
        vb_error ignored;
        if (admin_ints(s, sql, &hidden, 1, &ignored)) hidden = -1;   /* not reachable: index_bytes from TABLES */
    }
    out->table_bytes = v[0];
    out->index_bytes = hidden >= 0 ? hidden + (v[1] > 0 ? v[1] : 0) : v[1];
    out->rows = rows;
    return VB_OK;
}

/* EXPLAIN of the kNN query with a literal query vector of ones on a connection of its own, at ef_search. MariaDB
 * names an unnamed vector index after its column (v), AliSQL's is vi: the plan uses the index when the key
 * column names it. Doris prints a plan tree: its text is kept, index use is not judged (-1). */
static int family_explain(void *state, const vb_table_spec *spec, int ef_search, int k, const vb_filter *filter,
                          int *uses_index, char *plan, size_t plan_len, vb_error *err) {
    my_state *s = state;
    *uses_index = s->d == VB_MYSQL_DORIS ? -1 : 0;
    vb_sql_plan out;
    vb_sql_plan_init(&out, plan, plan_len);
    int32_t bounds[2] = {0, 0};
    int nb = filter_bounds(filter, bounds);
    size_t len = 512 + spec->dim * 4;
    char *sql = malloc(len), *q = malloc(len), set[128];
    float *ones = vb_sql_ones(spec->dim);
    MYSQL *my = NULL;
    int rc = !sql || !q || !ones ? vb_error_set(err, "engine", 1, "%s: out of memory", s->name) : VB_OK;
    if (rc == VB_OK)
        rc = vb_mysql_sql_search(s->d, s->table, spec->metric, k, filter, ones, spec->dim, q, len, err);
    if (rc == VB_OK && s->d != VB_MYSQL_DORIS) {
        /* the placeholders of the prepared statement, as literals */
        char lit[64], *out = sql;
        size_t u = (size_t)snprintf(out, len, "EXPLAIN ");
        int nth = 0;
        for (const char *p = q; *p && u + 1 < len; p++) {
            if (*p != '?') {
                out[u++] = *p;
                continue;
            }
            if (nth < nb) {
                snprintf(lit, sizeof lit, "%d", (int)bounds[nth++]);
                u += (size_t)snprintf(out + u, len - u, "%s", lit);
                continue;
            }
            u += (size_t)snprintf(out + u, len - u, "VEC_FromText('[");
            for (size_t j = 0; j < spec->dim && u + 8 < len; j++) u += (size_t)snprintf(out + u, len - u, "%s1", j ? "," : "");
            u += (size_t)snprintf(out + u, len - u, "]')");
        }
        out[u < len ? u : len - 1] = '\0';
    } else if (rc == VB_OK) {
        snprintf(sql, len, "EXPLAIN %s", q);
    }
    if (rc == VB_OK) rc = my_connect(s, 1, &my, err);
    if (rc == VB_OK && vb_mysql_sql_set_ef(s->d, ef_search, set, sizeof set, err) == VB_OK) rc = run(s, my, set, err);
    if (rc == VB_OK && mysql_real_query(my, sql, strlen(sql))) rc = my_fail(s, my, "EXPLAIN", err);
    if (rc == VB_OK) {
        MYSQL_RES *r = mysql_store_result(my);
        unsigned nf = r ? mysql_num_fields(r) : 0;
        MYSQL_FIELD *f = r ? mysql_fetch_fields(r) : NULL;
        int key_col = -1;
        for (unsigned i = 0; i < nf; i++)
            if (strcmp(f[i].name, "key") == 0) key_col = (int)i;
        const char *vindex = s->d == VB_MYSQL_ALISQL ? "vi" : "v";
        for (MYSQL_ROW row; r && (row = mysql_fetch_row(r));) {
            if (key_col >= 0 && row[key_col] && strcmp(row[key_col], vindex) == 0) *uses_index = 1;
            for (unsigned i = 0; i < nf; i++)
                vb_sql_plan_add(&out, "%s%s=%s", i ? " " : "", f[i].name, row[i] ? row[i] : "NULL");
            vb_sql_plan_add(&out, "\n");
        }
        if (r) mysql_free_result(r);
    }
    if (my) mysql_close(my);
    free(sql), free(q), free(ones);
    return rc;
}

static int family_version(void *state, char *buf, size_t len, vb_error *err) {
    my_state *s = state;
    row_arg a = {s, "SELECT VERSION()", 1, {NULL, NULL, NULL}};
    int rc = vb_admin_run(&s->admin, row_on, &a, err);
    if (rc == VB_OK) snprintf(buf, len, "%s %s", s->name, a.vals[0] ? a.vals[0] : "?");
    row_free(&a);
    return rc;
}

/* performance_schema's statement/com/Execute on one connection: every prepared execution, the searches among them;
 * SUM_TIMER_WAIT is in picoseconds. VB_ERROR naming the setting when performance_schema is off. */
#define MY_EXECUTE_SQL "SELECT COUNT_STAR, SUM_TIMER_WAIT FROM performance_schema.events_statements_summary_global_by_event_name " \
                       "WHERE EVENT_NAME = 'statement/com/Execute'"
static int execute_count(const my_state *s, MYSQL *my, long long *calls, double *exec_s, vb_error *err) {
    row_arg a = {(my_state *)s, MY_EXECUTE_SQL, 2, {NULL, NULL, NULL}};
    int rc = row_on(my, &a, err);
    if (rc == VB_OK && !a.vals[0])
        rc = vb_error_set(err, s->name, 1, "%s: performance_schema has no statement/com/Execute row (is the server "
                          "started with --performance-schema=ON?)", s->name);
    if (rc == VB_OK) {
        *calls = strtoll(a.vals[0], NULL, 10);
        *exec_s = a.vals[1] ? strtod(a.vals[1], NULL) / 1e12 : 0;
    }
    row_free(&a);
    return rc;
}

static int execute_count_on(void *conn, void *arg, vb_error *err) {
    void **a = arg;
    return execute_count(a[0], conn, a[1], a[2], err);
}

/* The engine's server_stats (engine.h vb_server_stats): statement/com/Execute summed over the primary and every read
 * replica (each server counts the searches it ran), so with replicas the sum is what the window's validity check
 * compares with the searches vbench sent. */
static int family_server_stats(void *state, vb_server_stats *out, vb_error *err) {
    my_state *s = state;
    long long calls = 0;
    double exec_s = 0;
    void *arg[3] = {s, &calls, &exec_s};
    int rc = vb_admin_run(&s->admin, execute_count_on, arg, err);
    out->calls = calls, out->exec_s = exec_s;
    for (int k = 1; rc == VB_OK && k < s->n_nodes; k++) {
        MYSQL *my = NULL;
        if ((rc = my_connect_node(s, k, 0, &my, err)) == VB_OK && (rc = execute_count(s, my, &calls, &exec_s, err)) == VB_OK)
            out->calls += calls, out->exec_s += exec_s;
        if (my) mysql_close(my);
        if (rc != VB_OK) vb_error_prefix(err, "replica %d", k);
    }
    return rc;
}

/* ---- read replicas (MariaDB replication, replicas: R) ----------------------------------------------------------- */

/* SHOW SLAVE STATUS's columns by name, from the replica my (NULL where the replica has none: not a replica). */
enum { SS_IO, SS_SQL, SS_IO_ERR, SS_SQL_ERR, SS_FILE, SS_POS, SS_N };
static int slave_status(const my_state *s, MYSQL *my, char *vals[SS_N], vb_error *err) {
    static const char *const names[SS_N] = {"Slave_IO_Running", "Slave_SQL_Running", "Last_IO_Error",
                                            "Last_SQL_Error", "Relay_Master_Log_File", "Exec_Master_Log_Pos"};
    for (int i = 0; i < SS_N; i++) vals[i] = NULL;
    if (mysql_real_query(my, "SHOW SLAVE STATUS", 17)) return my_fail(s, my, "SHOW SLAVE STATUS", err);
    MYSQL_RES *r = mysql_store_result(my);
    if (!r) return my_fail(s, my, "SHOW SLAVE STATUS", err);
    MYSQL_ROW row = mysql_fetch_row(r);
    MYSQL_FIELD *f = mysql_fetch_fields(r);
    for (unsigned j = 0; row && j < mysql_num_fields(r); j++)
        for (int i = 0; i < SS_N; i++)
            if (strcmp(f[j].name, names[i]) == 0 && row[j]) vals[i] = strdup(row[j]);
    mysql_free_result(r);
    return VB_OK;
}

static void slave_status_free(char *vals[SS_N]) {
    for (int i = 0; i < SS_N; i++) free(vals[i]), vals[i] = NULL;
}

/* The primary's binary log position now: SHOW MASTER STATUS's file and position, and @@gtid_binlog_pos. */
typedef struct binlog_pos {
    char file[256], gtid[1024];
    long long pos;
} binlog_pos;

static int primary_pos(const my_state *s, MYSQL *my, binlog_pos *p, vb_error *err) {
    memset(p, 0, sizeof *p);
    p->pos = -1;
    row_arg a = {(my_state *)s, "SHOW MASTER STATUS", 2, {NULL, NULL, NULL}};
    int rc = row_on(my, &a, err);
    if (rc == VB_OK && (!a.vals[0] || !a.vals[1]))
        rc = vb_error_set(err, s->name, 1, "%s: the primary has no binary log (SHOW MASTER STATUS is empty): its "
                          "replicas cannot follow it (the recipe's replica.primary_args turn it on)", s->name);
    if (rc == VB_OK) snprintf(p->file, sizeof p->file, "%s", a.vals[0]), p->pos = strtoll(a.vals[1], NULL, 10);
    row_free(&a);
    row_arg g = {(my_state *)s, "SELECT @@gtid_binlog_pos", 1, {NULL, NULL, NULL}};
    if (rc == VB_OK) rc = row_on(my, &g, err);
    if (rc == VB_OK) snprintf(p->gtid, sizeof p->gtid, "%s", g.vals[0] ? g.vals[0] : "");
    row_free(&g);
    return rc;
}

/* Bytes of the primary's binary log (at p) that the replica has not executed yet: the same file's position minus
 * Exec_Master_Log_Pos; in an earlier file, at least the primary's position in its current one. */
static long long lag_bytes(const binlog_pos *p, char *ss[SS_N]) {
    if (!ss[SS_FILE] || !ss[SS_POS]) return p->pos;
    if (strcmp(ss[SS_FILE], p->file) != 0) return p->pos;
    long long d = p->pos - strtoll(ss[SS_POS], NULL, 10);
    return d > 0 ? d : 0;
}

/* Replay lag 0 before a measurement: the primary's GTID position now, then on each replica MASTER_GTID_WAIT for it,
 * a second at a time, at most the phase's bound (10 minutes without one). A replica whose replication stopped fails
 * at once with the replica's own error; one that does not get there in time fails with how far behind it stayed: no
 * window measures a replica that lags. */
static int family_catch_up(void *state, vb_error *err) {
    my_state *s = state;
    if (s->n_nodes <= 1) return VB_OK;
    MYSQL *pm = NULL, *my = NULL;
    binlog_pos p;
    int rc = my_connect_node(s, 0, 0, &pm, err);
    if (rc == VB_OK) rc = primary_pos(s, pm, &p, err);
    uint64_t t0 = vb_now_ns(), bound = (uint64_t)(s->io_timeout_s ? s->io_timeout_s : 600) * 1000000000ull;
    size_t len = strlen(p.gtid) * 2 + 64;
    char *sql = rc == VB_OK ? malloc(len) : NULL, *ss[SS_N] = {NULL};
    if (rc == VB_OK && !sql) rc = vb_error_set(err, s->name, 1, "%s: out of memory", s->name);
    for (int k = 1; rc == VB_OK && k < s->n_nodes; k++) {
        if ((rc = my_connect_node(s, k, 0, &my, err)) != VB_OK) break;
        size_t u = (size_t)snprintf(sql, len, "SELECT MASTER_GTID_WAIT('");
        u += mysql_real_escape_string(my, sql + u, p.gtid, strlen(p.gtid));
        snprintf(sql + u, len - u, "', 1)");
        for (;;) {
            row_arg a = {s, sql, 1, {NULL, NULL, NULL}};
            rc = row_on(my, &a, err);
            int reached = rc == VB_OK && a.vals[0] && strcmp(a.vals[0], "0") == 0;
            row_free(&a);
            if (rc != VB_OK || reached) break;
            if ((rc = slave_status(s, my, ss, err)) != VB_OK) break;
            if (!ss[SS_SQL] || strcmp(ss[SS_SQL], "Yes") != 0 || !ss[SS_IO] || strcmp(ss[SS_IO], "No") == 0) {
                rc = vb_error_set(err, s->name, 1, "%s: replica %d does not replicate (SQL thread %s, I/O thread %s): "
                                  "%s%s; its log says more", s->name, k, ss[SS_SQL] ? ss[SS_SQL] : "absent",
                                  ss[SS_IO] ? ss[SS_IO] : "absent", ss[SS_SQL_ERR] && ss[SS_SQL_ERR][0] ? ss[SS_SQL_ERR] : "",
                                  ss[SS_IO_ERR] && ss[SS_IO_ERR][0] ? ss[SS_IO_ERR] : "");
                break;
            }
            if (vb_now_ns() - t0 > bound) {
                rc = vb_error_set(err, s->name, 1, "%s: replica %d did not apply the primary's binary log up to GTID %s "
                                  "within %.0f s (%lld bytes behind): its measurement would read old rows", s->name, k,
                                  p.gtid, (double)bound / 1e9, lag_bytes(&p, ss));
                break;
            }
            slave_status_free(ss);
        }
        slave_status_free(ss);
        mysql_close(my);
        my = NULL;
    }
    free(sql);
    if (pm) mysql_close(pm);
    return rc;
}

/* Each replica's lag now (bytes of the primary's binary log not executed there; node 0: 0), on connections of its
 * own: sampled while writes run. */
static int family_node_lag(void *state, int64_t *lag, size_t cap, size_t *n, vb_error *err) {
    my_state *s = state;
    *n = 0;
    if (s->n_nodes <= 1) return VB_OK;
    MYSQL *my = NULL;
    binlog_pos p;
    char *ss[SS_N] = {NULL};
    int rc = my_connect_node(s, 0, 0, &my, err);
    if (rc == VB_OK) rc = primary_pos(s, my, &p, err);
    if (my) mysql_close(my);
    for (int k = 0; rc == VB_OK && k < s->n_nodes && (size_t)k < cap; k++) {
        lag[k] = 0;
        if (k > 0) {
            my = NULL;
            if ((rc = my_connect_node(s, k, 0, &my, err)) == VB_OK && (rc = slave_status(s, my, ss, err)) == VB_OK)
                lag[k] = lag_bytes(&p, ss);
            slave_status_free(ss);
            if (my) mysql_close(my);
            if (rc != VB_OK) return vb_error_prefix(err, "replica %d", k), rc;
        }
        (*n)++;
    }
    return rc;
}

/* Each node's own rows, index and table sizes (information_schema, the MHNSW graph's hidden table included, as
 * family_sizes reads them but without ANALYZE, which the primary would write to its binary log), statement/com/Execute
 * count and lag (vb_node_stats), on a connection of its own per node. */
static int family_node_stats(void *state, vb_node_stats *out, size_t cap, size_t *n, vb_error *err) {
    my_state *s = state;
    *n = 0;
    if (s->n_nodes <= 1) return VB_OK;
    int64_t lag[MY_MAX_NODES];
    size_t nl = 0;
    int rc = family_node_lag(s, lag, MY_MAX_NODES, &nl, err);
    for (int k = 0; rc == VB_OK && k < s->n_nodes && (size_t)k < cap; k++) {
        vb_node_stats *o = &out[k];
        *o = (vb_node_stats){.node = k, .rows = -1, .index_bytes = -1, .table_bytes = -1, .searches = -1,
                             .lag_bytes = (size_t)k < nl ? lag[k] : -1};
        snprintf(o->role, sizeof o->role, "%s", k ? "replica" : "primary");
        MYSQL *my = NULL;
        char sql[768];
        if ((rc = my_connect_node(s, k, 1, &my, err)) != VB_OK) return vb_error_prefix(err, "node %d", k), rc;
        snprintf(sql, sizeof sql, "SELECT COUNT(*) FROM `%s`", s->table);
        row_arg a = {s, sql, 1, {NULL, NULL, NULL}};
        vb_error ignored;
        if (row_on(my, &a, &ignored) == VB_OK && a.vals[0]) o->rows = strtoll(a.vals[0], NULL, 10);   /* no table: -1 */
        row_free(&a);
        snprintf(sql, sizeof sql,
                 "SELECT t.DATA_LENGTH, t.INDEX_LENGTH + COALESCE((SELECT SUM(ALLOCATED_SIZE) FROM "
                 "information_schema.INNODB_SYS_TABLESPACES WHERE NAME LIKE '%s/%s#i#%%'), 0) FROM "
                 "information_schema.TABLES t WHERE t.TABLE_SCHEMA = '%s' AND t.TABLE_NAME = '%s'",
                 s->database, s->table, s->database, s->table);
        row_arg z = {s, sql, 2, {NULL, NULL, NULL}};
        if (row_on(my, &z, &ignored) == VB_OK && z.vals[0] && z.vals[1])
            o->table_bytes = strtoll(z.vals[0], NULL, 10), o->index_bytes = strtoll(z.vals[1], NULL, 10);
        row_free(&z);
        long long calls = 0;
        double exec_s = 0;
        if (execute_count(s, my, &calls, &exec_s, &ignored) == VB_OK) o->searches = calls;
        mysql_close(my);
        (*n)++;
    }
    return rc;
}

/* ---- the wait profile (MariaDB) ----------------------------------------------------------------------- */

/* One instrument's total wait of the benchmark's sessions at the last reading, in picoseconds. */
typedef struct my_wait_total {
    char name[128];
    unsigned long long ps;
    int seen;
} my_wait_total;

typedef struct wait_read {
    my_state *s;
    vb_wait_profile *acc;   /* NULL: a baseline only */
} wait_read;

static my_wait_total *wait_slot(my_state *s, const char *name) {
    for (size_t i = 0; i < s->n_waits; i++)
        if (strcmp(s->waits[i].name, name) == 0) return &s->waits[i];
    if (s->n_waits == s->cap_waits) {
        size_t cap = s->cap_waits ? 2 * s->cap_waits : 64;
        my_wait_total *w = realloc(s->waits, cap * sizeof *w);
        if (!w) return NULL;
        s->waits = w, s->cap_waits = cap;
    }
    my_wait_total *w = &s->waits[s->n_waits++];
    memset(w, 0, sizeof *w);
    snprintf(w->name, sizeof w->name, "%s", name);
    return w;
}

/* "wait/synch/mutex/innodb/buf_pool_mutex" -> class "synch/mutex", event "innodb/buf_pool_mutex". */
static void wait_split(const char *name, char *cls, size_t cls_len, const char **event) {
    const char *p = strncmp(name, "wait/", 5) == 0 ? name + 5 : name;
    const char *slash = strchr(p, '/');
    slash = slash ? strchr(slash + 1, '/') : NULL;
    size_t n = slash ? (size_t)(slash - p) : strlen(p);
    snprintf(cls, cls_len, "%.*s", (int)n, p);
    *event = slash ? slash + 1 : p;
}

/* Reads the waits of the sessions in this database other than the admin connection's own (the benchmark's clients)
 * per instrument; adds what grew since the last reading into a->acc, in microseconds. A total that shrank (a
 * session ended) restarts that instrument's baseline. */
static int wait_read_on(void *conn, void *arg, vb_error *err) {
    wait_read *a = arg;
    my_state *s = a->s;
    char sql[1024];
    snprintf(sql, sizeof sql,
             "SELECT w.EVENT_NAME, SUM(w.SUM_TIMER_WAIT) FROM performance_schema.events_waits_summary_by_thread_by_event_name AS w "
             "JOIN performance_schema.threads AS t ON t.THREAD_ID = w.THREAD_ID WHERE t.PROCESSLIST_DB = '%s' AND "
             "t.PROCESSLIST_ID <> CONNECTION_ID() AND w.SUM_TIMER_WAIT > 0 AND %s GROUP BY w.EVENT_NAME", s->database,
             MY_WAIT_PROFILED_W);
    if (mysql_real_query(conn, sql, strlen(sql))) return my_fail(s, conn, "the wait profile's query", err);
    MYSQL_RES *r = mysql_store_result(conn);
    if (!r) return my_fail(s, conn, "the wait profile's query", err);
    for (size_t i = 0; i < s->n_waits; i++) s->waits[i].seen = 0;
    for (MYSQL_ROW row; (row = mysql_fetch_row(r));) {
        if (!row[0] || !row[1]) continue;
        my_wait_total *w = wait_slot(s, row[0]);
        if (!w) break;
        unsigned long long now = strtoull(row[1], NULL, 10);
        if (a->acc && now > w->ps && (now - w->ps) / 1000000ull > 0) {
            char cls[48];
            const char *event;
            wait_split(w->name, cls, sizeof cls, &event);
            vb_wait_profile_add(a->acc, cls, event, (now - w->ps) / 1000000ull);
        }
        w->ps = now;
        w->seen = 1;
    }
    mysql_free_result(r);
    for (size_t i = 0; i < s->n_waits; i++)
        if (!s->waits[i].seen) s->waits[i].ps = 0;   /* no session has it now: a new one starts from 0 */
    return VB_OK;
}

/* engine.h wait_sample, for MariaDB: not a sample of what sessions do now but the delta of performance_schema's
 * own timing of their waits since the last call (events_waits_summary_by_thread_by_event_name, picoseconds), in
 * microseconds waited (acc->timed). The probe (acc NULL) checks that the instruments are on and takes the baseline.
 * On CPU is what remains of the statements' time (the agent: server_stats' exec time less the waits). */
static int my_wait_sample(void *state, vb_wait_profile *acc, vb_error *err) {
    my_state *s = state;
    if (s->waits_off) return vb_error_set(err, s->name, 1, "%s: the configuration sets wait_profile: off", s->name);
    if (!acc) {
        long long on = -1;
        int rc = admin_ints(s, "SELECT COUNT(*) FROM performance_schema.setup_instruments WHERE ENABLED = 'YES' AND "
                               "TIMED = 'YES' AND " MY_WAIT_SWITCHED, &on, 1, err);
        if (rc != VB_OK) return rc;
        if (on <= 0)
            return vb_error_set(err, s->name, 1, "%s: no wait/synch instrument is enabled and timed (is the server "
                                "started with --performance-schema=ON?)", s->name);
        s->n_waits = 0;
    } else {
        acc->timed = 1;
    }
    wait_read a = {s, acc};
    return vb_admin_run(&s->admin, wait_read_on, &a, err);
}

/* ---- ops tables ------------------------------------------------------------------------------------ */

#define FAMILY_OPS(NAME, DESC, FLAGS, PARAMS, SEARCH_PARAMS, OPEN, WAITS, MAINTAIN, MAINTENANCE, ROWS, ...)                                \
    {                                                                                                          \
        .name = NAME, .description = DESC, .flags = FLAGS, .param_names = PARAMS, .open = OPEN,               \
        .search_params = SEARCH_PARAMS, .estimate = {__VA_ARGS__},                                             \
        .close = family_close, .create = family_create, .connect = family_connect,                            \
        .disconnect = family_disconnect, .load = family_load, .set_search = family_set_search,                \
        .search = family_search, .version = family_version, .remove = family_remove, .insert = family_load,   \
        .sizes = family_sizes, .explain = family_explain, .attach = family_attach,                            \
        .server_stats = family_server_stats, .wait_sample = WAITS, .maintain = MAINTAIN,                      \
        .maintenance = MAINTENANCE, .rows = ROWS, .rows_node = family_rows_node,                             \
        .node_stats = family_node_stats,                                                                      \
        .node_lag = family_node_lag, .catch_up = family_catch_up, .read_on = family_read_on,                  \
    }

const vb_engine_ops vb_engine_mariadb =
    FAMILY_OPS("mariadb", "MariaDB 11.8+ MHNSW vector index over Connector/C (VECTOR(d), mhnsw_ef_search)",
               VB_ENGINE_BUILD_ON_INSERT | VB_ENGINE_FILTER | VB_ENGINE_FILTER_EQ | VB_ENGINE_FILTER_AND |
                   VB_ENGINE_FILTER_CLASS | VB_ENGINE_MAINTAIN_REBUILDS | VB_ENGINE_REPLICAS, mariadb_params, mariadb_search_params,
               mariadb_open, my_wait_sample, family_maintain, "ALTER TABLE FORCE, ALGORITHM=COPY", family_rows,
               /* InnoDB row + MHNSW graph table + the binary log of the load: ~2.5 copies */
               .load_rows_s = 1000, .insert_rows_s = 800, .qps100 = 600, .filtered_qps = 200, .copies = 2.5,
               .row_overhead = 500);
const vb_engine_ops vb_engine_alisql =
    FAMILY_OPS("alisql", "AliSQL 8.0 VIDX HNSW over Connector/C (statements from the documentation; not verified "
               "against a server here)",
               VB_ENGINE_BUILD_ON_INSERT | VB_ENGINE_FILTER | VB_ENGINE_FILTER_EQ | VB_ENGINE_FILTER_AND |
                   VB_ENGINE_FILTER_CLASS, alisql_params, alisql_search_params, alisql_open, NULL, NULL, NULL, NULL, 0);
const vb_engine_ops vb_engine_doris =
    FAMILY_OPS("doris", "Apache Doris 4.0 ANN index over the MySQL protocol, INSERT for bulk data (statements from "
               "the documentation; not verified against a server here)",
               VB_ENGINE_BUILD_ON_INSERT | VB_ENGINE_FILTER | VB_ENGINE_FILTER_EQ | VB_ENGINE_FILTER_AND |
                   VB_ENGINE_FILTER_CLASS, doris_params, NULL, doris_open, NULL, NULL, NULL, NULL, 0);
