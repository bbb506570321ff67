/* The "pgvector" engine: PostgreSQL + pgvector 0.8 through libpq.
 *
 * The table is (id bigint primary key, tag integer, tag2 integer, label integer, class integer, embedding
 * vector(d)) or halfvec(d) (param variant): the attribute columns of engines/engine.h vb_filter, NULL for a row
 * loaded without tags (tag, tag2, label) or without classes (class). Loading
 * is binary COPY on each loader connection, so several loaders run in parallel; the HNSW index is built after the
 * load (CREATE INDEX ... USING hnsw (embedding <opclass>) WITH (m, ef_construction)) under the profile's
 * maintenance_work_mem and max_parallel_maintenance_workers, then the table is analysed so the planner has
 * statistics. A search is one prepared statement per connection, executed with the query vector as a binary
 * parameter and binary results:
 *     SELECT id FROM t ORDER BY embedding <op> $1 LIMIT k             (filter: WHERE tag < $2, class = $2, ...)
 * with <op> <-> (euclidean, vector_l2_ops), <=> (angular, vector_cosine_ops), <#> (dot: the negative inner
 * product, vector_ip_ops); halfvec_* opclasses for the halfvec variant. hnsw.ef_search, hnsw.iterative_scan and
 * hnsw.max_scan_tuples are session settings applied on every connection. Churn is DELETE ... WHERE id = ANY($1)
 * and the upsert below; maintenance is VACUUM (ANALYZE).
 *
 * Binary formats (pgvector src/vector.c vector_recv / src/halfvec.c halfvec_recv): int16 dim, int16 unused (0),
 * then dim float4 (vector) or dim IEEE half floats (halfvec), all big-endian. The COPY stream is PostgreSQL's
 * binary COPY format: the 19-byte header, per row an int16 field count and per field an int32 length (-1 for
 * NULL) and the value, then an int16 -1 trailer.
 *
 * Every call is bounded by vb_engine_config.io_timeout_s (the phase's timeout): connect_timeout, TCP keepalives and
 * tcp_user_timeout in the connection string, statement_timeout SET for the session (the options keyword), and,
 * because none of those helps against a server that is alive to the kernel but never answers (SIGSTOPped, or a
 * Unix socket), every statement is sent asynchronously and its answer waited for with poll() up to the bound:
 * on expiry the connection is shut (a lost connection, VB_RETRY) and the error names the bound. A COPY's rows
 * are written in nonblocking mode, each write waiting for the socket with poll() up to the same bound (pg_flush):
 * a stopped server that no longer reads (its Unix socket full) fails the COPY at the bound instead of blocking
 * it for good.
 *
 * Errors carry the server's own message. A lost connection (or SQLSTATE class 08, 57P01-57P03, 40001, 40P01)
 * returns VB_RETRY; the next call on that connection reconnects it and restores its settings.
 *
 * A load continues after a restart (VB_ENGINE_LOAD_RESUMES): each COPY is its own transaction, so the batches
 * committed before a kill stay in the table (a COPY cut off by its client's death is rolled back whole), the index
 * comes only after the load, and attach for a load in progress (attach_missing >= capacity) finds the table by its
 * schema without its index; the rows after the checkpoint go in again with insert, the upsert below. The build
 * first cancels an earlier attempt's CREATE INDEX that still runs (its agent outlives a killed coordinator until
 * the statement returns).
 *
 * insert is an upsert (the engine contract): the rows go by binary COPY into a temporary staging table of the
 * connection, then INSERT ... SELECT ... ON CONFLICT (id) DO UPDATE moves them into the table, in one
 * transaction. load stays a plain COPY (new ids into an empty table: the bulk path).
 *
 * The engine instance keeps one administrative connection (create, build, maintain, sizes, version, attach;
 * engines/adapter_common.h: opened on first use, serialised, dialled again after a loss); every vb_conn owns its own
 * connection.
 *
 * Topology (issue 39): `replicas: R` reads from hot standbys of the primary (pg_state); `shards: N` splits the rows
 * over N shard servers behind a postgres_fdw router, where the administrative connection and every search go to the
 * router and writes straight to the shards (the section "shards" below). */
#include <arpa/inet.h>
#include <errno.h>
#include <libpq-fe.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "engines/engine.h"
#include "datasets/dataset.h"
#include "util/clock.h"
#include "engines/sql_common.h"

#define PG_DOMAIN "pgvector"
#define PG_NAME_MAX 48
#define PG_MAX_NODES 16   /* node 0 and its read replicas (replicas: R) or shards (shards: N), issue 39 */

static const char *const pg_params[] = {"host", "port", "user", "password", "dbname", "table", "variant",
                                        "iterative_scan", "max_scan_tuples", "maintenance_work_mem",
                                        "max_parallel_maintenance_workers", "m", "ef_construction", "wait_profile",
                                        "replicas", "shards", "router_form", "peer_host", NULL};
/* session settings of the kNN query (SET hnsw.iterative_scan, hnsw.max_scan_tuples): the index is the same */
static const char *const pg_search_params[] = {"iterative_scan", "max_scan_tuples", NULL};

typedef struct pg_state {
    /* libpq connection keywords/values, NULL-terminated: node 0's (the primary) */
    const char *keys[16];
    char *vals[16];
    /* Read replicas (replicas: R): nodes 1 .. R, hot standbys of node 0 that the orchestrator made (its recipe's
     * replica.run: pg_basebackup) and whose connect parameters are node.K.KEY. Writes, the build and every engine
     * op go to node 0; each connection reads from one node, round robin over 0 .. R (next_node). */
    int n_nodes;
    const char *node_keys[PG_MAX_NODES][16];
    char *node_vals[PG_MAX_NODES][16];
    atomic_uint next_node;
    /* Shards (shards: N > 1, the section "shards" below): node 0 the router, nodes 1 .. N the shard servers; a row
     * lives on node 1 + id % N. peer_host[K]: where the router's postgres_fdw reaches node K: a node whose host is a
     * socket directory at node.K.peer_host (the recipe's path of it as the router's unit sees it), else at its host
     * (a network address: another host, with node.K.port). */
    int n_shards;                      /* 0: one server, or replicas */
    int router_cte;                    /* router_form: cte (1, the default) or plain (0) */
    char *peer_host[PG_MAX_NODES];
    int64_t build_ms[PG_MAX_NODES];    /* each shard's own index build, ms (-1 before a build by this process) */
    char table[PG_NAME_MAX + 1];
    int waits_off;          /* wait_profile: off (the sampler's overhead measured against it) */
    char index[PG_NAME_MAX + 8];
    int halfvec;                       /* variant: 0 vector, 1 halfvec */
    char iterative_scan[16];           /* "" = server default */
    long max_scan_tuples;              /* 0 = server default */
    char maintenance_work_mem[32];     /* "" = server default */
    long parallel_workers;             /* -1 = server default */
    long m, ef_construction;           /* 0 = the table spec's */
    /* The table, once create or attach has run. */
    int ready;
    size_t dim;
    vb_metric metric;
    int spec_m, spec_efc;
    vb_admin admin;                /* a PGconn */
} pg_state;

static const vb_admin_ops pg_admin_ops;

typedef struct pg_conn {
    pg_state *s;
    int node;                          /* the server it talks to: 0 the primary, K a replica */
    struct pg_conn *reader;            /* a connection whose searches go to replica K: its own session there */
    struct pg_conn *shard[PG_MAX_NODES];   /* shards: its sessions on shard K (writes go straight there) */
    int read_node;                     /* where this connection's searches go (round robin at connect) */
    PGconn *pg;
    int ef_search;                     /* 0 = never set */
    vb_sql_knn_cache knn;              /* statement names, per filter mode, for the LIMIT they were made for */
    int staged;                        /* the upsert's staging table exists on this connection */
    char *buf;                         /* COPY stream, query parameter */
    size_t cap;
} pg_conn;

/* ---- bounded calls ------------------------------------------------------------------------------------- */

/* The bound of one wait for an answer, in ms (0: none): io_timeout_s of the newest pg_open in this process. An
 * agent runs one campaign, whose phases share limits.phase_timeout_s, so one value per process is enough. */
static _Atomic long pg_io_ms;
/* Set when this thread's last wait gave up (seconds waited): pg_fail says so instead of libpq's "connection lost". */
static __thread long pg_gave_up_s;

/* Waits until pg holds a whole result, at most pg_io_ms. On expiry the socket is shut down, so libpq sees the
 * connection lost (CONNECTION_BAD: the caller's next call reconnects) and pg_fail names the bound. */
static void pg_wait(PGconn *pg) {
    long ms = atomic_load(&pg_io_ms);
    if (!ms) return;
    uint64_t deadline = vb_now_ns() + (uint64_t)ms * 1000000ull;
    while (PQisBusy(pg)) {
        uint64_t now = vb_now_ns();
        int left = now >= deadline ? 0 : (int)((deadline - now) / 1000000ull) + 1;
        struct pollfd pfd = {.fd = PQsocket(pg), .events = POLLIN};
        if (pfd.fd < 0) return;
        int n = left ? poll(&pfd, 1, left) : 0;
        if (n < 0 && errno == EINTR) continue;
        if (n == 0) {
            pg_gave_up_s = (ms + 999) / 1000;
            shutdown(pfd.fd, SHUT_RDWR);
            PQconsumeInput(pg);
            return;
        }
        if (!PQconsumeInput(pg)) return;   /* the error is in the next result */
    }
}

/* Sends what libpq holds for pg (nonblocking mode), at most pg_io_ms: a COPY's rows into a server that stopped
 * reading (SIGSTOPped: over a Unix socket, or TCP whose kernel still acknowledges) would otherwise block the write
 * for good. Answers that arrive meanwhile are read, so a server that refuses the COPY is heard. 0 when all is sent;
 * -1 on a failure or at the bound (the socket shut, pg_gave_up_s set: pg_fail names the bound). */
static int pg_flush(PGconn *pg) {
    long ms = atomic_load(&pg_io_ms);
    uint64_t deadline = vb_now_ns() + (uint64_t)ms * 1000000ull;
    int f;
    while ((f = PQflush(pg)) == 1) {
        uint64_t now = vb_now_ns();
        int left = !ms ? -1 : now >= deadline ? 0 : (int)((deadline - now) / 1000000ull) + 1;
        struct pollfd pfd = {.fd = PQsocket(pg), .events = POLLOUT | POLLIN};
        if (pfd.fd < 0) return -1;
        int n = left ? poll(&pfd, 1, left) : 0;
        if (n < 0 && errno == EINTR) continue;
        if (n == 0) {
            pg_gave_up_s = (ms + 999) / 1000;
            shutdown(pfd.fd, SHUT_RDWR);
            PQconsumeInput(pg);
            return -1;
        }
        if ((pfd.revents & POLLIN) && !PQconsumeInput(pg)) return -1;
    }
    return f;
}

/* PQputCopyData / PQputCopyEnd in nonblocking mode, each write bounded by pg_flush. */
static int pg_copy_data(PGconn *pg, const char *buf, int len) {
    int k;
    while ((k = PQputCopyData(pg, buf, len)) == 0)
        if (pg_flush(pg) < 0) return -1;
    return k == 1 && pg_flush(pg) == 0 ? 0 : -1;
}

static int pg_copy_end(PGconn *pg, const char *why) {
    int k;
    while ((k = PQputCopyEnd(pg, why)) == 0)
        if (pg_flush(pg) < 0) return -1;
    return k == 1 && pg_flush(pg) == 0 ? 0 : -1;
}

/* PQexec's contract for a statement already sent: its last result (a COPY's first), every wait bounded. */
static PGresult *pg_collect(PGconn *pg) {
    PGresult *last = NULL, *r;
    for (;;) {
        pg_wait(pg);
        if (!(r = PQgetResult(pg))) break;
        ExecStatusType st = PQresultStatus(r);
        PQclear(last);
        last = r;
        if (st == PGRES_COPY_IN || st == PGRES_COPY_OUT || st == PGRES_COPY_BOTH || PQstatus(pg) == CONNECTION_BAD)
            break;
    }
    return last;
}

static PGresult *pg_exec(PGconn *pg, const char *sql) {
    pg_gave_up_s = 0;
    return PQsendQuery(pg, sql) ? pg_collect(pg) : NULL;
}

static PGresult *pg_exec_params(PGconn *pg, const char *sql, int n, const char *const *values, const int *lengths,
                                const int *formats, int result_format) {
    pg_gave_up_s = 0;
    return PQsendQueryParams(pg, sql, n, NULL, values, lengths, formats, result_format) ? pg_collect(pg) : NULL;
}

static PGresult *pg_exec_prepared(PGconn *pg, const char *name, int n, const char *const *values, const int *lengths,
                                  const int *formats, int result_format) {
    pg_gave_up_s = 0;
    return PQsendQueryPrepared(pg, name, n, values, lengths, formats, result_format) ? pg_collect(pg) : NULL;
}

static PGresult *pg_prepare(PGconn *pg, const char *name, const char *sql) {
    pg_gave_up_s = 0;
    return PQsendPrepare(pg, name, sql, 0, NULL) ? pg_collect(pg) : NULL;
}

/* ---- errors ------------------------------------------------------------------------------------------ */

/* Server notices (NOTICE: table does not exist, skipping) are expected chatter, not output. */
static void ignore_notice(void *arg, const char *message) {
    (void)arg;
    (void)message;
}

/* Fills err with what failed and the server's message; VB_RETRY when the failure is transient (connection
 * lost, server shutting down, serialisation failure, deadlock), VB_ERROR otherwise. r may be NULL. */
static int pg_fail(PGconn *pg, const PGresult *r, vb_error *err, const char *what) {
    const char *state = r ? PQresultErrorField(r, PG_DIAG_SQLSTATE) : NULL;
    const char *text = r && PQresultErrorMessage(r)[0] ? PQresultErrorMessage(r) : PQerrorMessage(pg);
    int retry = PQstatus(pg) == CONNECTION_BAD ||
                (state && (strncmp(state, "08", 2) == 0 || strcmp(state, "57P01") == 0 ||
                           strcmp(state, "57P02") == 0 || strcmp(state, "57P03") == 0 ||
                           strcmp(state, "40001") == 0 || strcmp(state, "40P01") == 0));
    char detail[32], waited[200];
    snprintf(detail, sizeof detail, "SQLSTATE %s", state ? state : "");
    if (pg_gave_up_s) {   /* our bound, not the server's words: say which */
        snprintf(waited, sizeof waited, "no answer from the server within %ld s (io_timeout_s, from "
                 "limits.phase_timeout_s): connection closed", pg_gave_up_s);
        pg_gave_up_s = 0;
        return vb_adapter_fail(err, PG_DOMAIN, what, waited, NULL, 2, 1);
    }
    return vb_adapter_fail(err, PG_DOMAIN, what, text, state ? detail : NULL, retry ? 2 : 1, retry);
}

/* Runs one statement that returns no rows. */
static int pg_command(PGconn *pg, const char *sql, vb_error *err) {
    PGresult *r = pg_exec(pg, sql);
    int rc = VB_OK;
    if (PQresultStatus(r) != PGRES_COMMAND_OK && PQresultStatus(r) != PGRES_TUPLES_OK) rc = pg_fail(pg, r, err, sql);
    PQclear(r);
    return rc;
}

/* Runs one query that must return exactly one row: VB_OK with the result in *out (PQclear by the caller), else
 * the failure named by what. */
static int pg_row(PGconn *pg, const char *sql, const char *what, PGresult **out, vb_error *err) {
    PGresult *r = pg_exec(pg, sql);
    if (PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1) {
        *out = r;
        return VB_OK;
    }
    int rc = pg_fail(pg, r, err, what);
    PQclear(r);
    return rc;
}

/* ---- parameters and connections ------------------------------------------------------------------------ */

static void pg_close(void *state) {
    pg_state *s = state;
    if (!s) return;
    vb_admin_destroy(&s->admin);
    for (size_t i = 0; s->keys[i]; i++) free(s->vals[i]);
    for (int k = 1; k < s->n_nodes; k++)
        for (size_t i = 0; s->node_keys[k][i]; i++) free(s->node_vals[k][i]);
    for (int k = 0; k < PG_MAX_NODES; k++) free(s->peer_host[k]);
    free(s);
}

/* Validates the profile parameters; connects nothing (the first operation does). *state is freed by pg_close. */
static int pg_open(const vb_engine_config *cfg, void **state, vb_error *err) {
    const vb_kv *kv = cfg->params;
    size_t n = cfg->n_params;
    for (size_t i = 0; i < n; i++) {   /* node.K.KEY: a replica's connect parameter (engine.c checked KEY) */
        if (strncmp(kv[i].key, "node.", 5) == 0) continue;
        if (vb_kv_check_keys(kv + i, 1, pg_params, "pgvector engine", err) != VB_OK) return VB_ERROR;
    }
    pg_state *s = calloc(1, sizeof *s);
    if (!s) return vb_error_set(err, PG_DOMAIN, 1, "pgvector: out of memory");
    vb_admin_init(&s->admin, &pg_admin_ops, s);
    static const char *const conn_keys[] = {"host", "port", "user", "password", "dbname"};
    size_t nk = 0;
    for (size_t i = 0; i < sizeof conn_keys / sizeof *conn_keys; i++) {
        const char *v = vb_kv_get(kv, n, conn_keys[i], NULL);
        if (!v || !v[0]) continue;
        s->keys[nk] = conn_keys[i];
        if (!(s->vals[nk++] = strdup(v))) goto oom;
    }
    s->keys[nk] = "application_name";
    if (!(s->vals[nk++] = strdup("vbench"))) goto oom;
    if (cfg->io_timeout_s > 0) {
        /* The phase's bound on every call (see the header): the connection's own timeouts, then pg_wait. */
        long t = cfg->io_timeout_s, idle = t / 3 > 1 ? (t / 3 < 60 ? t / 3 : 60) : 1;
        char v[5][64];
        snprintf(v[0], sizeof v[0], "%ld", t < 60 ? t : 60);
        snprintf(v[1], sizeof v[1], "%ld", idle);
        snprintf(v[2], sizeof v[2], "%ld", idle);
        snprintf(v[3], sizeof v[3], "%lld", (long long)t * 1000);
        snprintf(v[4], sizeof v[4], "-c statement_timeout=%lld", (long long)t * 1000);
        static const char *const bound_keys[] = {"connect_timeout", "keepalives_idle", "keepalives_interval",
                                                 "tcp_user_timeout", "options"};
        for (int i = 0; i < 5; i++) {
            s->keys[nk] = bound_keys[i];
            if (!(s->vals[nk++] = strdup(v[i]))) goto oom;
        }
        s->keys[nk] = "keepalives";
        if (!(s->vals[nk++] = strdup("1"))) goto oom;
        atomic_store(&pg_io_ms, t * 1000);
    }
    s->keys[nk] = NULL;
    long replicas = 0, shards = 1;
    if (vb_kv_get_long(kv, n, "replicas", 0, 0, PG_MAX_NODES - 1, &replicas, err) ||
        vb_kv_get_long(kv, n, "shards", 1, 1, PG_MAX_NODES - 1, &shards, err)) {
        vb_error_prefix(err, "pgvector");
        goto fail;
    }
    if (shards > 1 && replicas > 0) {
        vb_error_set(err, PG_DOMAIN, 1, "pgvector: shards: %ld and replicas: %ld: an entry has one or the other", shards,
                     replicas);
        goto fail;
    }
    const char *form = vb_kv_get(kv, n, "router_form", "cte");
    if (strcmp(form, "cte") && strcmp(form, "plain")) {
        vb_error_set(err, PG_DOMAIN, 1, "pgvector: router_form '%s': expected cte (a MATERIALIZED union of per-shard "
                     "ORDER BY ... LIMIT k) or plain (SELECT ... FROM the partitioned table ORDER BY ... LIMIT k)", form);
        goto fail;
    }
    s->router_cte = strcmp(form, "cte") == 0;
    s->n_shards = shards > 1 ? (int)shards : 0;
    s->n_nodes = 1 + (shards > 1 ? (int)shards : (int)replicas);
    for (int k = 0; k < PG_MAX_NODES; k++) s->build_ms[k] = -1;
    for (int k = 1; k < s->n_nodes; k++) {
        /* a node reached by a socket directory (host a path: on this host) is reached by the router at peer_host; a
         * node at a network address (another host) at that same address */
        char key[64];
        snprintf(key, sizeof key, "node.%d.host", k);
        const char *host = vb_kv_get(kv, n, key, "");
        snprintf(key, sizeof key, "node.%d.peer_host", k);
        const char *v = host[0] == '/' ? vb_kv_get(kv, n, key, host) : host;
        if (!(s->peer_host[k] = strdup(v))) goto oom;
    }
    for (int k = 1; k < s->n_nodes; k++) {
        /* node K's own connect keys (host, password, ...), then node 0's other keys (application name, bounds) */
        size_t m = 0;
        for (size_t i = 0; s->keys[i]; i++) {
            char key[64];
            snprintf(key, sizeof key, "node.%d.%s", k, s->keys[i]);
            const char *v = vb_kv_get(kv, n, key, NULL);
            int conn_key = 0;
            for (size_t j = 0; j < sizeof conn_keys / sizeof *conn_keys; j++) conn_key |= strcmp(s->keys[i], conn_keys[j]) == 0;
            if (conn_key && !v) continue;
            s->node_keys[k][m] = s->keys[i];
            if (!(s->node_vals[k][m++] = strdup(conn_key ? v : s->vals[i]))) goto oom;
        }
        for (size_t j = 0; j < sizeof conn_keys / sizeof *conn_keys; j++) {   /* a key node 0 lacks */
            char key[64];
            snprintf(key, sizeof key, "node.%d.%s", k, conn_keys[j]);
            const char *v = vb_kv_get(kv, n, key, NULL);
            if (!v || vb_kv_get(kv, n, conn_keys[j], NULL)) continue;
            s->node_keys[k][m] = conn_keys[j];
            if (!(s->node_vals[k][m++] = strdup(v))) goto oom;
        }
        s->node_keys[k][m] = NULL;
        if (!vb_kv_get(kv, n, "node.1.host", NULL) && k == 1) {
            vb_error_set(err, PG_DOMAIN, 1, "pgvector: %s: %ld without their servers (no node.1.host): the "
                         "orchestrator starts them for an entry with a recipe", shards > 1 ? "shards" : "replicas",
                         shards > 1 ? shards : replicas);
            goto fail;
        }
    }

    const char *table = vb_kv_get(kv, n, "table", "vbench_items");
    if (vb_sql_ident_check(PG_DOMAIN, "table", table, PG_NAME_MAX, VB_SQL_IDENT_PLAIN, err) != VB_OK) goto fail;
    snprintf(s->table, sizeof s->table, "%s", table);
    snprintf(s->index, sizeof s->index, "%s_hnsw", table);

    const char *variant = vb_kv_get(kv, n, "variant", "vector");
    if (strcmp(variant, "vector") && strcmp(variant, "halfvec")) {
        vb_error_set(err, PG_DOMAIN, 1, "pgvector: variant '%s': expected vector or halfvec", variant);
        goto fail;
    }
    s->halfvec = strcmp(variant, "halfvec") == 0;

    const char *wp = vb_kv_get(kv, n, "wait_profile", "on");
    if (strcmp(wp, "on") && strcmp(wp, "off")) {
        vb_error_set(err, PG_DOMAIN, 1, "pgvector: wait_profile '%s': expected on or off", wp);
        goto fail;
    }
    s->waits_off = strcmp(wp, "off") == 0;

    const char *it = vb_kv_get(kv, n, "iterative_scan", "");
    if (it[0] && strcmp(it, "off") && strcmp(it, "relaxed_order") && strcmp(it, "strict_order")) {
        vb_error_set(err, PG_DOMAIN, 1, "pgvector: iterative_scan '%s': expected off, relaxed_order or strict_order",
                     it);
        goto fail;
    }
    snprintf(s->iterative_scan, sizeof s->iterative_scan, "%s", it);

    const char *mwm = vb_kv_get(kv, n, "maintenance_work_mem", "");
    for (const char *p = mwm; *p; p++)
        if (!((*p >= '0' && *p <= '9') || (*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') || *p == ' ') ||
            p - mwm >= 30) {
            vb_error_set(err, PG_DOMAIN, 1, "pgvector: maintenance_work_mem '%s': expected a size such as 1GB", mwm);
            goto fail;
        }
    snprintf(s->maintenance_work_mem, sizeof s->maintenance_work_mem, "%s", mwm);

    if (vb_kv_get_long(kv, n, "max_scan_tuples", 0, 1, 2147483647L, &s->max_scan_tuples, err) ||
        vb_kv_get_long(kv, n, "max_parallel_maintenance_workers", -1, 0, 1024, &s->parallel_workers, err) ||
        vb_kv_get_long(kv, n, "m", 0, 2, 100, &s->m, err) ||
        vb_kv_get_long(kv, n, "ef_construction", 0, 4, 1000, &s->ef_construction, err)) {
        vb_error_prefix(err, "pgvector");
        goto fail;
    }
    *state = s;
    return VB_OK;
oom:
    vb_error_set(err, PG_DOMAIN, 1, "pgvector: out of memory");
fail:
    pg_close(s);
    return VB_ERROR;
}

/* A new connection to node (0 the primary, K a replica); VB_RETRY when it cannot be made (the server's words). */
static int pg_dial_node(pg_state *s, int node, PGconn **out, vb_error *err) {
    PGconn *pg = node > 0 ? PQconnectdbParams(s->node_keys[node], (const char *const *)s->node_vals[node], 0)
                          : PQconnectdbParams(s->keys, (const char *const *)s->vals, 0);
    if (!pg) return vb_error_set(err, PG_DOMAIN, 1, "pgvector: out of memory for a connection");
    if (PQstatus(pg) != CONNECTION_OK) {
        const char *msg = PQerrorMessage(pg);
        /* Authentication and a missing database are not transient: the profile is wrong. */
        int fatal = strstr(msg, "authentication failed") || strstr(msg, "does not exist") ||
                    strstr(msg, "password") || strstr(msg, "no pg_hba.conf entry");
        int rc = vb_adapter_fail(err, PG_DOMAIN, "connecting", msg, NULL, fatal ? 1 : 2, !fatal);
        PQfinish(pg);
        return rc;
    }
    PQsetNoticeProcessor(pg, ignore_notice, NULL);
    *out = pg;
    return VB_OK;
}

static int pg_dial(pg_state *s, PGconn **out, vb_error *err) { return pg_dial_node(s, 0, out, err); }

static int admin_dial(void *owner, void **conn, vb_error *err) {
    PGconn *pg = NULL;
    int rc = pg_dial(owner, &pg, err);
    *conn = pg;
    return rc;
}

static void admin_hangup(void *conn) { PQfinish(conn); }

static const vb_admin_ops pg_admin_ops = {admin_dial, admin_hangup};

/* ---- SQL text ---------------------------------------------------------------------------------------- */

static const char *metric_op(vb_metric m) {
    switch (m) {
    case VB_METRIC_EUCLIDEAN: return "<->";
    case VB_METRIC_ANGULAR: return "<=>";
    case VB_METRIC_DOT: return "<#>";
    }
    return NULL;
}

static const char *metric_opclass(vb_metric m) {
    switch (m) {
    case VB_METRIC_EUCLIDEAN: return "l2_ops";
    case VB_METRIC_ANGULAR: return "cosine_ops";
    case VB_METRIC_DOT: return "ip_ops";
    }
    return NULL;
}

static int check_metric(vb_metric m, vb_error *err) {
    if (!metric_op(m))
        return vb_error_set(err, PG_DOMAIN, 1,
                            "pgvector: metric %d is not supported (euclidean <->, angular <=>, dot <#> are)", (int)m);
    return VB_OK;
}

/* The kNN query text for the connection's table; the filter mode (0, or a vb_filter_kind) adds its WHERE with
 * the bounds as parameters: range WHERE tag < $2, equality WHERE label = $2, and WHERE tag < $2 AND tag2 < $3,
 * class WHERE class = $2. */
static const char *const knn_where[VB_FILTER_KINDS] = {"", " WHERE tag < $2", " WHERE label = $2",
                                                       " WHERE tag < $2 AND tag2 < $3", " WHERE class = $2"};
static const char *const knn_names[VB_FILTER_KINDS] = {"vb_knn", "vb_knn_filter", "vb_knn_label", "vb_knn_and",
                                                       "vb_knn_class"};
static void knn_sql(const pg_state *s, int k, int filtered, char *buf, size_t len) {
    const char *where = knn_where[filtered >= 0 && filtered < VB_FILTER_KINDS ? filtered : 0], *op = metric_op(s->metric);
    if (!s->n_shards || !s->router_cte) {   /* one server, or the router's plain form over its partitioned table */
        snprintf(buf, len, "SELECT id FROM %s%s ORDER BY embedding %s $1 LIMIT %d", s->table, where, op, k);
        return;
    }
    /* The router's cte form (the section "shards" below): each shard's foreign table its own ORDER BY ... LIMIT k,
     * the union materialised, then the k nearest of the N x k. */
    size_t used = (size_t)snprintf(buf, len, "WITH vb_knn AS MATERIALIZED (");
    for (int K = 1; K <= s->n_shards && used < len; K++)
        used += (size_t)snprintf(buf + used, len - used, "%s(SELECT id, embedding %s $1 AS d FROM %s_p%d%s ORDER BY "
                                 "embedding %s $1 LIMIT %d)", K > 1 ? " UNION ALL " : "", op, s->table, K, where, op, k);
    if (used < len) snprintf(buf + used, len - used, ") SELECT id FROM vb_knn ORDER BY d LIMIT %d", k);
}

/* The LIKE pattern of the kNN statement as pg_stat_statements and pg_stat_activity show it (constants as $n). */
static void knn_like(const pg_state *s, char *buf, size_t len) {
    if (s->n_shards && s->router_cte) snprintf(buf, len, "WITH vb_knn AS MATERIALIZED ((SELECT id, embedding %% FROM %s_p1 %%", s->table);
    else snprintf(buf, len, "SELECT id FROM %s %%ORDER BY embedding %%", s->table);
}


/* ---- binary encoding ----------------------------------------------------------------------------------- */

static int grow(pg_conn *c, size_t want, vb_error *err) { return vb_sql_reserve(&c->buf, &c->cap, want, PG_DOMAIN, err); }

static char *put16(char *p, uint16_t v) {
    v = htons(v);
    memcpy(p, &v, 2);
    return p + 2;
}

static char *put32(char *p, uint32_t v) {
    v = htonl(v);
    memcpy(p, &v, 4);
    return p + 4;
}

static char *put64(char *p, uint64_t v) {
    p = put32(p, (uint32_t)(v >> 32));
    return put32(p, (uint32_t)v);
}

/* Bytes of one vector value in the binary format. */
static size_t vec_bytes(const pg_state *s) { return 4 + s->dim * (s->halfvec ? 2 : 4); }

/* A vector or halfvec value in pgvector's binary format (vector_recv / halfvec_recv). */
static char *put_vec(const pg_state *s, char *p, const float *v) {
    p = put16(p, (uint16_t)s->dim);
    p = put16(p, 0);
    for (size_t j = 0; j < s->dim; j++) {
        if (s->halfvec) {
            _Float16 h = (_Float16)v[j];   /* IEEE binary16, round to nearest even */
            uint16_t u;
            memcpy(&u, &h, 2);
            p = put16(p, u);
        } else {
            uint32_t u;
            memcpy(&u, &v[j], 4);
            p = put32(p, u);
        }
    }
    return p;
}

/* ---- connections ------------------------------------------------------------------------------------- */

/* Session settings of a search connection. plan_cache_mode = force_generic_plan keeps one plan for every
 * execution of the prepared kNN statement: by default PostgreSQL plans the first five executions with the
 * parameter values (at 1 % selectivity on a small table: a sequential scan and a sort, exact answers) and then
 * switches to the generic plan (the HNSW index), which would change the plan in the middle of a measurement.
 * The explain op shows that same generic plan. Loads the extension's library first (any use of the type does), so
 * that SET hnsw.* is checked by pgvector itself instead of being kept as an unchecked placeholder. */
static int apply_settings(pg_conn *c, vb_error *err) {
    pg_state *s = c->s;
    char sql[256];
    int rc = pg_command(c->pg, "SELECT '[1]'::vector", err);
    if (rc == VB_OK) rc = pg_command(c->pg, "SET plan_cache_mode = force_generic_plan", err);
    if (rc == VB_OK && s->iterative_scan[0]) {
        snprintf(sql, sizeof sql, "SET hnsw.iterative_scan = %s", s->iterative_scan);
        rc = pg_command(c->pg, sql, err);
    }
    if (rc == VB_OK && s->max_scan_tuples > 0) {
        snprintf(sql, sizeof sql, "SET hnsw.max_scan_tuples = %ld", s->max_scan_tuples);
        rc = pg_command(c->pg, sql, err);
    }
    if (rc == VB_OK && c->ef_search > 0) {
        snprintf(sql, sizeof sql, "SET hnsw.ef_search = %d", c->ef_search);
        rc = pg_command(c->pg, sql, err);
    }
    return rc;
}

/* Makes sure the connection is up: a connection lost earlier (the call that saw it returned VB_RETRY) is
 * reopened here, and its prepared statements and settings restored lazily. */
static int conn_ready(pg_conn *c, vb_error *err) {
    if (c->pg && PQstatus(c->pg) == CONNECTION_OK) return VB_OK;
    if (c->pg) PQfinish(c->pg);
    c->pg = NULL;
    vb_sql_knn_clear(&c->knn, NULL, NULL);   /* they went with the old connection */
    c->staged = 0;
    int rc = pg_dial_node(c->s, c->node, &c->pg, err);
    if (rc == VB_OK) rc = apply_settings(c, err);
    return rc;
}

static void pg_disconnect(void *conn) {
    pg_conn *c = conn;
    if (!c) return;
    pg_disconnect(c->reader);
    for (int k = 1; k < PG_MAX_NODES; k++) pg_disconnect(c->shard[k]);
    if (c->pg) PQfinish(c->pg);
    free(c->buf);
    free(c);
}

/* *conn is freed by pg_disconnect. */
static int pg_connect(void *state, void **conn, vb_error *err) {
    pg_conn *c = calloc(1, sizeof *c);
    if (!c) return vb_error_set(err, PG_DOMAIN, 1, "pgvector: out of memory");
    c->s = state;
    /* replicas: round robin; shards: every search goes to the router (node 0) */
    c->read_node = c->s->n_shards ? 0 : (int)(atomic_fetch_add(&c->s->next_node, 1) % (unsigned)c->s->n_nodes);
    int rc = conn_ready(c, err);
    if (rc != VB_OK) {
        pg_disconnect(c);
        return rc;
    }
    *conn = c;
    return VB_OK;
}

/* The connection c's searches use: c itself, or its session on replica read_node, opened at the first search (a
 * load connection never reads, and a replica has the extension only once the primary's build replayed there). */
static int reader_of(pg_conn *c, pg_conn **out, vb_error *err) {
    *out = c;
    if (c->read_node == 0) return VB_OK;
    if (!c->reader) {
        if (!(c->reader = calloc(1, sizeof *c->reader))) return vb_error_set(err, PG_DOMAIN, 1, "pgvector: out of memory");
        c->reader->s = c->s;
        c->reader->node = c->reader->read_node = c->read_node;
        c->reader->ef_search = c->ef_search;
    }
    *out = c->reader;
    return VB_OK;
}

/* ---- table ------------------------------------------------------------------------------------------- */

static int check_spec(pg_state *s, const vb_table_spec *spec, vb_error *err) {
    if (check_metric(spec->metric, err) != VB_OK) return VB_ERROR;
    if (spec->dim == 0 || spec->dim > 16000)
        return vb_error_set(err, PG_DOMAIN, 1, "pgvector: dimension %zu is outside 1..16000", spec->dim);
    s->dim = spec->dim;
    s->metric = spec->metric;
    s->spec_m = s->m ? (int)s->m : (spec->m ? spec->m : 16);
    s->spec_efc = s->ef_construction ? (int)s->ef_construction : (spec->ef_construction ? spec->ef_construction : 64);
    return VB_OK;
}

/* Each engine op below is a function of the administrative connection run by vb_admin_run, which runs it
 * once more on a fresh connection after a loss: every one of them is safe to repeat. */

/* Drops the table and makes it again, empty, without an index. Makes sure the extension exists first, so a
 * server without pgvector fails here with its own message. */
static int create_on(void *conn, void *arg, vb_error *err) {
    pg_state *s = arg;
    char sql[512];
    int rc = pg_command(conn, "CREATE EXTENSION IF NOT EXISTS vector", err);
    if (rc != VB_OK) {
        if (rc == VB_ERROR) vb_error_prefix(err, "the pgvector extension is missing or cannot be created");
        return rc;
    }
    snprintf(sql, sizeof sql, "DROP TABLE IF EXISTS %s", s->table);
    if ((rc = pg_command(conn, sql, err)) != VB_OK) return rc;
    snprintf(sql, sizeof sql, "CREATE TABLE %s (id bigint PRIMARY KEY, tag integer, tag2 integer, label integer, "
             "class integer, embedding %s(%zu))", s->table,
             s->halfvec ? "halfvec" : "vector", s->dim);
    return pg_command(conn, sql, err);
}

/* shards: N (the section "shards" below) */
static int on_node(pg_state *s, int k, int (*fn)(void *conn, void *arg, vb_error *err), void *arg, vb_error *err);
static int shard_create(pg_state *s, vb_error *err);
static int shard_build(pg_state *s, vb_error *err);
static int shard_sizes(pg_state *s, vb_sizes *out, vb_error *err);
static int shard_node_stats(pg_state *s, vb_node_stats *out, size_t cap, size_t *n, vb_error *err);
static int shard_set_ef(pg_conn *c, int ef, vb_error *err);
static int shard_explain(pg_conn *c, int ef, int k, int filtered, int *uses_index, vb_sql_plan *out, vb_error *err);
typedef struct index_arg {   /* attach: is the shard's index there */
    pg_state *s;
    int there;
} index_arg;
static int index_on(void *conn, void *arg, vb_error *err);

static int pg_create(void *state, const vb_table_spec *spec, vb_error *err) {
    pg_state *s = state;
    if (check_spec(s, spec, err) != VB_OK) return VB_ERROR;
    s->ready = 0;
    int rc = s->n_shards ? shard_create(s, err) : vb_admin_run(&s->admin, create_on, s, err);
    s->ready = rc == VB_OK;
    return rc;
}

/* One value of the first row of a query, copied into buf ("" for NULL). */
static int query_value(PGconn *pg, const char *sql, const char *param, char *buf, size_t len, vb_error *err) {
    PGresult *r = pg_exec_params(pg, sql, param ? 1 : 0, param ? &param : NULL, NULL, NULL, 0);
    int rc = VB_OK;
    if (PQresultStatus(r) != PGRES_TUPLES_OK) rc = pg_fail(pg, r, err, sql);
    else snprintf(buf, len, "%s", PQntuples(r) > 0 && !PQgetisnull(r, 0, 0) ? PQgetvalue(r, 0, 0) : "");
    PQclear(r);
    return rc;
}

typedef struct attach_arg {
    pg_state *s;
    size_t capacity;
    size_t missing;   /* rows that may be absent (spec->attach_missing) */
    int found;
} attach_arg;

static int attach_on(void *conn, void *arg, vb_error *err) {
    attach_arg *a = arg;
    pg_state *s = a->s;
    char want[64], got[64], idx[8], count[32];
    snprintf(want, sizeof want, "%s(%zu)", s->halfvec ? "halfvec" : "vector", s->dim);
    a->found = 0;
    int rc = query_value(conn,
                         "SELECT format_type(atttypid, atttypmod) FROM pg_attribute "
                         "WHERE attrelid = to_regclass($1) AND attname = 'embedding' AND NOT attisdropped",
                         s->table, got, sizeof got, err);
    if (rc != VB_OK || strcmp(got, want) != 0) return rc;
    /* A table made before the class column (issue 35) is another schema: not ours to reuse. */
    char has_class[8];
    if ((rc = query_value(conn, "SELECT count(*) FROM pg_attribute WHERE attrelid = to_regclass($1) AND "
                          "attname = 'class' AND NOT attisdropped", s->table, has_class, sizeof has_class, err)) != VB_OK ||
        strcmp(has_class, "1") != 0)
        return rc;
    /* A load in progress (attach_missing >= capacity) has no index yet: the build makes it after the load. */
    if (a->missing < a->capacity && !s->n_shards &&   /* shards: each shard's index, pg_attach */
        ((rc = query_value(conn, "SELECT to_regclass($1) IS NOT NULL", s->index, idx, sizeof idx, err)) != VB_OK ||
         strcmp(idx, "t") != 0))
        return rc;
    char sql[256];
    snprintf(sql, sizeof sql, "SELECT count(*) FROM %s", s->table);
    rc = query_value(conn, sql, NULL, count, sizeof count, err);
    long long n = strtoll(count, NULL, 10);
    if (rc == VB_OK && n <= (long long)a->capacity && n + (long long)a->missing >= (long long)a->capacity) a->found = 1;
    return rc;
}

/* found = 1 when the table exists with an embedding column of the right type and dimension, its HNSW index
 * exists, and it holds spec->capacity rows (or up to spec->attach_missing fewer, in a churn): a finished build
 * from an earlier run (a resumed campaign). With attach_missing >= capacity, a load in progress: the table with
 * any number of rows, with or without its index (VB_ENGINE_LOAD_RESUMES; the build drops an index it finds). */
static int replicas_catch_up(pg_state *s, vb_error *err);

static int pg_attach(void *state, const vb_table_spec *spec, int *found, vb_error *err) {
    pg_state *s = state;
    *found = 0;
    if (check_spec(s, spec, err) != VB_OK) return VB_ERROR;
    attach_arg a = {s, spec->capacity, spec->attach_missing, 0};
    int rc = vb_admin_run(&s->admin, attach_on, &a, err);
    for (int K = 1; K <= s->n_shards && rc == VB_OK && a.found && spec->attach_missing < spec->capacity; K++) {
        index_arg ia = {s, 0};
        if ((rc = on_node(s, K, index_on, &ia, err)) == VB_OK && !ia.there) a.found = 0;
    }
    *found = rc == VB_OK && a.found;
    s->ready = *found;
    if (*found) rc = replicas_catch_up(s, err);   /* an item on an existing build measures caught-up replicas */
    return rc;
}

/* An earlier attempt's CREATE INDEX of this index that still runs is cancelled, and waited for (up to 30 s): an
 * agent outlives its SIGKILLed coordinator until the statement it waits for returns, and its CREATE INDEX,
 * committed in the middle of this build's, would fail this one ("already exists"). Matched by the statement's
 * text (build_on's own, on the same index and table), never this connection. */
static int cancel_earlier_build(PGconn *pg, const pg_state *s, vb_error *err) {
    char like[160], n[32];
    snprintf(like, sizeof like, "CREATE INDEX %s ON %s %%", s->index, s->table);
    static const char *const active = "FROM pg_stat_activity WHERE pid <> pg_backend_pid() AND "
                                      "datname = current_database() AND state = 'active' AND query LIKE $1";
    char sql[256];
    snprintf(sql, sizeof sql, "SELECT count(pg_cancel_backend(pid)) %s", active);
    int rc = query_value(pg, sql, like, n, sizeof n, err);
    if (rc != VB_OK || atoi(n) == 0) return rc;
    snprintf(sql, sizeof sql, "SELECT count(*) %s", active);
    for (int i = 0; i < 300 && rc == VB_OK && atoi(n) > 0; i++) {
        vb_sleep_ns(100000000ull);
        rc = query_value(pg, sql, like, n, sizeof n, err);
    }
    return rc;
}

/* SET maintenance_work_mem / max_parallel_maintenance_workers, VACUUM (ANALYZE), CREATE INDEX ... USING hnsw. */
static int build_on(void *conn, void *arg, vb_error *err) {
    pg_state *s = arg;
    char sql[512];
    int rc = cancel_earlier_build(conn, s, err);
    if (rc == VB_OK && s->maintenance_work_mem[0]) {
        snprintf(sql, sizeof sql, "SET maintenance_work_mem = '%s'", s->maintenance_work_mem);
        rc = pg_command(conn, sql, err);
    }
    if (rc == VB_OK && s->parallel_workers >= 0) {
        snprintf(sql, sizeof sql, "SET max_parallel_maintenance_workers = %ld", s->parallel_workers);
        rc = pg_command(conn, sql, err);
    }
    if (rc == VB_OK) {
        snprintf(sql, sizeof sql, "DROP INDEX IF EXISTS %s", s->index);
        rc = pg_command(conn, sql, err);
    }
    /* The bulk-load recipe: VACUUM (ANALYZE) after COPY and before CREATE INDEX. It sets the hint bits and the
     * visibility map on a heap without indexes (cheap), and it resets the insert count, so autovacuum does not
     * wake a minute later and vacuum the loaded table in the middle of the first measured window. */
    if (rc == VB_OK) {
        snprintf(sql, sizeof sql, "VACUUM (ANALYZE) %s", s->table);
        rc = pg_command(conn, sql, err);
    }
    if (rc == VB_OK) {
        snprintf(sql, sizeof sql,
                 "CREATE INDEX %s ON %s USING hnsw (embedding %s_%s) WITH (m = %d, ef_construction = %d)", s->index,
                 s->table, s->halfvec ? "halfvec" : "vector", metric_opclass(s->metric), s->spec_m, s->spec_efc);
        rc = pg_command(conn, sql, err);
    }
    return rc;
}

/* Replay lag 0 before a measurement (replicas: R): the primary's WAL position now, then each replica polled until
 * it has replayed up to it (pg_last_wal_replay_lsn), at most the phase's bound (10 minutes without one). A replica
 * that does not get there fails the op with how far behind it stayed: no window measures a replica that lags. */
static int replicas_catch_up(pg_state *s, vb_error *err) {
    if (s->n_nodes <= 1 || s->n_shards) return VB_OK;
    PGconn *pg = NULL;
    char lsn[64], behind[64] = "";
    int rc = pg_dial_node(s, 0, &pg, err);
    if (rc == VB_OK) rc = query_value(pg, "SELECT pg_current_wal_lsn()::text", NULL, lsn, sizeof lsn, err);
    if (pg) PQfinish(pg);
    if (rc != VB_OK) return rc;
    long ms = atomic_load(&pg_io_ms);
    uint64_t t0 = vb_now_ns(), bound = (uint64_t)(ms > 0 ? ms : 600000) * 1000000ull;
    for (int k = 1; k < s->n_nodes && rc == VB_OK; k++) {
        pg = NULL;
        if ((rc = pg_dial_node(s, k, &pg, err)) != VB_OK) break;
        for (;;) {
            rc = query_value(pg, "SELECT pg_wal_lsn_diff($1::pg_lsn, coalesce(pg_last_wal_replay_lsn(), '0/0'))::bigint",
                             lsn, behind, sizeof behind, err);
            if (rc != VB_OK || atoll(behind) <= 0) break;
            if (vb_now_ns() - t0 > bound) {
                rc = vb_error_set(err, PG_DOMAIN, 1, "pgvector: replica %d did not replay the primary's WAL up to %s "
                                  "within %.0f s (%s bytes behind): its measurement would read old rows", k, lsn,
                                  (double)bound / 1e9, behind);
                break;
            }
            vb_sleep_ns(20000000ull);
        }
        PQfinish(pg);
    }
    return rc;
}

static int pg_build(void *state, vb_error *err) {
    pg_state *s = state;
    if (!s->ready) return vb_error_set(err, PG_DOMAIN, 1, "pgvector: build before create or attach");
    if (s->n_shards) return shard_build(s, err);
    int rc = vb_admin_run(&s->admin, build_on, s, err);
    return rc == VB_OK ? replicas_catch_up(s, err) : rc;
}

static int maintain_on(void *conn, void *arg, vb_error *err) {
    char sql[256];
    snprintf(sql, sizeof sql, "VACUUM (ANALYZE) %s", ((pg_state *)arg)->table);
    return pg_command(conn, sql, err);
}

static int pg_maintain(void *state, vb_error *err) {
    pg_state *s = state;
    for (int K = 1; K <= s->n_shards; K++)   /* shards: each its own VACUUM (ANALYZE) */
        if (on_node(s, K, maintain_on, s, err) != VB_OK) return VB_ERROR;
    if (s->n_shards) return VB_OK;
    int rc = vb_admin_run(&s->admin, maintain_on, s, err);
    return rc == VB_OK ? replicas_catch_up(s, err) : rc;
}

typedef struct sizes_arg {
    pg_state *s;
    vb_sizes *out;
} sizes_arg;

static int sizes_on(void *conn, void *arg, vb_error *err) {
    sizes_arg *a = arg;
    char sql[512];
    snprintf(sql, sizeof sql,
             "SELECT coalesce(pg_relation_size(to_regclass('%s')), -1), pg_table_size('%s'), "
             "(SELECT count(*) FROM %s)",
             a->s->index, a->s->table, a->s->table);
    PGresult *r;
    int rc = pg_row(conn, sql, "sizes", &r, err);
    if (rc != VB_OK) return rc;
    a->out->index_bytes = strtoll(PQgetvalue(r, 0, 0), NULL, 10);
    a->out->table_bytes = strtoll(PQgetvalue(r, 0, 1), NULL, 10);
    a->out->rows = strtoll(PQgetvalue(r, 0, 2), NULL, 10);
    PQclear(r);
    return VB_OK;
}

/* Index bytes (pg_relation_size of the HNSW index, -1 without one), table bytes (pg_table_size: heap, TOAST,
 * free space and visibility maps, no indexes) and the row count. */
static int pg_sizes(void *state, vb_sizes *out, vb_error *err) {
    if (((pg_state *)state)->n_shards) return shard_sizes(state, out, err);
    sizes_arg a = {state, out};
    return vb_admin_run(&((pg_state *)state)->admin, sizes_on, &a, err);
}

/* Every row with its vector as text ("[1,2.5,...]", pgvector's shortest round-trip floats), parsed. The whole table
 * in one result: for the mixed phase's check of a test-sized table, not for a corpus of millions. */
typedef struct rows_arg {
    pg_state *s;
    vb_row_fn fn;
    void *arg;
} rows_arg;

static int rows_on(void *conn, void *arg, vb_error *err) {
    rows_arg *a = arg;
    char sql[512];
    snprintf(sql, sizeof sql, "SELECT id, embedding::text FROM %s", a->s->table);
    PGresult *r = pg_exec(conn, sql);
    if (PQresultStatus(r) != PGRES_TUPLES_OK) {
        int rc = pg_fail(conn, r, err, "rows");
        PQclear(r);
        return rc;
    }
    float *v = malloc(a->s->dim * sizeof *v);
    int rc = v ? VB_OK : vb_error_set(err, PG_DOMAIN, 1, "pgvector: out of memory");
    for (int i = 0; rc == VB_OK && i < PQntuples(r); i++) {
        const char *p = PQgetvalue(r, i, 1);
        size_t j = 0;
        if (*p == '[') p++;
        for (char *end; j < a->s->dim; j++, p = end + (*end == ',')) {
            v[j] = strtof(p, &end);
            if (end == p) break;
        }
        if (j != a->s->dim) rc = vb_error_set(err, PG_DOMAIN, 1, "pgvector: rows: id %s holds '%.40s', not %zu numbers",
                                              PQgetvalue(r, i, 0), PQgetvalue(r, i, 1), a->s->dim);
        else if (a->fn(a->arg, strtoll(PQgetvalue(r, i, 0), NULL, 10), v))
            rc = vb_error_set(err, PG_DOMAIN, 1, "pgvector: the listing of the rows was stopped");
    }
    free(v);
    PQclear(r);
    return rc;
}

static int pg_rows(void *state, vb_row_fn fn, void *arg, vb_error *err) {
    rows_arg a = {state, fn, arg};
    return vb_admin_run(&((pg_state *)state)->admin, rows_on, &a, err);
}

/* A hot standby's rows, on a connection of its own (shards each hold a part: not listed here). */
static int pg_rows_node(void *state, int node, vb_row_fn fn, void *arg, int *listed, vb_error *err) {
    pg_state *s = state;
    *listed = 0;
    if (s->n_shards || node < 1 || node >= s->n_nodes) return VB_OK;
    PGconn *pg = NULL;
    int rc = pg_dial_node(s, node, &pg, err);
    rows_arg a = {s, fn, arg};
    if (rc == VB_OK) rc = rows_on(pg, &a, err);
    if (pg) PQfinish(pg);
    if (rc != VB_OK) return vb_error_prefix(err, "replica %d", node), rc;
    *listed = 1;
    return VB_OK;
}

typedef struct stats_arg {
    pg_state *s;
    vb_server_stats *out;
    int replica;
} stats_arg;

/* The kNN statements of the table as pg_stat_statements normalises them ("SELECT id FROM t ORDER BY embedding <=>
 * $1 LIMIT $2", with or without a WHERE): their calls and total_exec_time (ms) summed. The extension is created on
 * first use; the recipe preloads it (shared_preload_libraries). */
static int stats_on(void *conn, void *arg, vb_error *err) {
    stats_arg *a = arg;
    /* a replica is read-only: the primary's CREATE EXTENSION reaches it by replay */
    int rc = a->replica ? VB_OK : pg_command(conn, "CREATE EXTENSION IF NOT EXISTS pg_stat_statements", err);
    if (rc != VB_OK) return rc;
    char sql[512];
    if (a->replica) {
        char there[8];
        if ((rc = query_value(conn, "SELECT to_regclass('pg_stat_statements') IS NOT NULL", NULL, there, sizeof there,
                              err)) != VB_OK)
            return rc;
        if (strcmp(there, "t") != 0) return VB_OK;   /* not replayed yet: nothing ran there */
    }
    char like[PG_NAME_MAX + 96];
    knn_like(a->s, like, sizeof like);
    snprintf(sql, sizeof sql,
             "SELECT coalesce(sum(calls), 0), coalesce(sum(total_exec_time), 0) FROM pg_stat_statements "
             "WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database()) "
             "AND query LIKE '%s'", like);
    PGresult *r;
    if ((rc = pg_row(conn, sql, "pg_stat_statements", &r, err)) != VB_OK) return rc;
    a->out->calls += strtoll(PQgetvalue(r, 0, 0), NULL, 10);
    a->out->exec_s += strtod(PQgetvalue(r, 0, 1), NULL) / 1e3;
    PQclear(r);
    return VB_OK;
}

typedef struct wait_arg {
    pg_state *s;
    vb_wait_profile *acc;
} wait_arg;

/* pg_stat_activity's active sessions running the table's kNN statement (the other sessions excluded): their
 * wait_event_type / wait_event, NULL meaning on CPU. */
static int wait_on(void *conn, void *arg, vb_error *err) {
    wait_arg *a = arg;
    char sql[640], like[PG_NAME_MAX + 96];
    knn_like(a->s, like, sizeof like);
    snprintf(sql, sizeof sql,
             "SELECT coalesce(wait_event_type, 'CPU'), coalesce(wait_event, 'CPU'), count(*) FROM pg_stat_activity "
             "WHERE state = 'active' AND pid <> pg_backend_pid() AND query LIKE '%s' GROUP BY 1, 2", like);
    PGresult *r = pg_exec(conn, sql);
    int rc = VB_OK;
    if (PQresultStatus(r) != PGRES_TUPLES_OK) rc = pg_fail(conn, r, err, "pg_stat_activity");
    else
        for (int i = 0; i < PQntuples(r); i++)
            vb_wait_profile_add(a->acc, PQgetvalue(r, i, 0), PQgetvalue(r, i, 1),
                                strtoull(PQgetvalue(r, i, 2), NULL, 10));
    PQclear(r);
    return rc;
}

static int pg_wait_sample(void *state, vb_wait_profile *acc, vb_error *err) {
    if (((pg_state *)state)->waits_off)
        return vb_error_set(err, PG_DOMAIN, 1, "pgvector: the configuration sets wait_profile: off");
    if (!acc) return VB_OK;
    wait_arg a = {state, acc};
    return vb_admin_run(&((pg_state *)state)->admin, wait_on, &a, err);
}

/* Each node's own rows, index and table sizes, kNN statement count and replay lag (vb_node_stats), on a connection of
 * its own per node. */
static int pg_node_stats(void *state, vb_node_stats *out, size_t cap, size_t *n, vb_error *err) {
    pg_state *s = state;
    char lsn[64] = "", v[64];
    *n = 0;
    if (s->n_nodes <= 1) return VB_OK;
    if (s->n_shards) return shard_node_stats(s, out, cap, n, err);
    for (int k = 0; k < s->n_nodes && (size_t)k < cap; k++) {
        PGconn *pg = NULL;
        vb_node_stats *o = &out[k];
        *o = (vb_node_stats){.node = k, .rows = -1, .index_bytes = -1, .table_bytes = -1, .searches = -1, .lag_bytes = 0,
                             .build_ms = -1};
        snprintf(o->role, sizeof o->role, "%s", k ? "replica" : "primary");
        int rc = pg_dial_node(s, k, &pg, err);
        if (rc == VB_OK && k == 0) rc = query_value(pg, "SELECT pg_current_wal_lsn()::text", NULL, lsn, sizeof lsn, err);
        if (rc == VB_OK && k > 0) {
            rc = query_value(pg, "SELECT pg_wal_lsn_diff($1::pg_lsn, coalesce(pg_last_wal_replay_lsn(), '0/0'))::bigint",
                             lsn, v, sizeof v, err);
            o->lag_bytes = atoll(v) > 0 ? atoll(v) : 0;
        }
        vb_sizes sz;
        sizes_arg sa = {s, &sz};
        if (rc == VB_OK && s->ready && (rc = sizes_on(pg, &sa, err)) == VB_OK)
            o->rows = sz.rows, o->index_bytes = sz.index_bytes, o->table_bytes = sz.table_bytes;
        vb_server_stats st = {0};
        stats_arg ta = {s, &st, 1};
        if (rc == VB_OK && stats_on(pg, &ta, err) == VB_OK) o->searches = st.calls;
        if (pg) PQfinish(pg);
        if (rc != VB_OK) return vb_error_prefix(err, "node %d", k), rc;
        (*n)++;
    }
    return VB_OK;
}

/* Each replica's replay lag now (bytes of WAL behind the primary's current position; node 0: 0), on connections of
 * its own: sampled while writes run. */
static int pg_node_lag(void *state, int64_t *lag, size_t cap, size_t *n, vb_error *err) {
    pg_state *s = state;
    char lsn[64] = "", v[64];
    *n = 0;
    if (s->n_nodes <= 1 || s->n_shards) return VB_OK;   /* shards replicate nothing: no lag to sample */
    for (int k = 0; k < s->n_nodes && (size_t)k < cap; k++) {
        PGconn *pg = NULL;
        lag[k] = 0;
        int rc = pg_dial_node(s, k, &pg, err);
        if (rc == VB_OK && k == 0) rc = query_value(pg, "SELECT pg_current_wal_lsn()::text", NULL, lsn, sizeof lsn, err);
        if (rc == VB_OK && k > 0 &&
            (rc = query_value(pg, "SELECT pg_wal_lsn_diff($1::pg_lsn, coalesce(pg_last_wal_replay_lsn(), '0/0'))::bigint",
                              lsn, v, sizeof v, err)) == VB_OK)
            lag[k] = atoll(v) > 0 ? atoll(v) : 0;
        if (pg) PQfinish(pg);
        if (rc != VB_OK) return vb_error_prefix(err, "node %d", k), rc;
        (*n)++;
    }
    return VB_OK;
}

static int pg_catch_up(void *state, vb_error *err) { return replicas_catch_up(state, err); }

/* Searches of conn go to node from now on (0 the primary, K a replica, -1 the last replica): the streaming phase's
 * freshness probe reads on a replica. */
static int pg_read_on(void *conn, int node, int *chosen, vb_error *err) {
    pg_conn *c = conn;
    if (c->s->n_shards) node = 0;   /* shards: every search is the router's */
    else if (node < 0) node = c->s->n_nodes - 1;
    if (node >= c->s->n_nodes) return vb_error_set(err, PG_DOMAIN, 1, "pgvector: no node %d (%d servers)", node, c->s->n_nodes);
    if (node != c->read_node) {
        pg_disconnect(c->reader);
        c->reader = NULL;
        c->read_node = node;
    }
    *chosen = node;
    return VB_OK;
}

/* Summed over the primary and every replica (each server counts the searches it ran): with replicas the sum is what
 * the window's validity check compares with the searches vbench sent. */
static int pg_server_stats(void *state, vb_server_stats *out, vb_error *err) {
    pg_state *s = state;
    stats_arg a = {state, out, 0};
    out->calls = 0, out->exec_s = 0;
    int rc = vb_admin_run(&s->admin, stats_on, &a, err);
    for (int k = 1; rc == VB_OK && !s->n_shards && k < s->n_nodes; k++) {   /* a router counts them all */
        PGconn *pg = NULL;
        a.replica = 1;
        if ((rc = pg_dial_node(s, k, &pg, err)) == VB_OK) rc = stats_on(pg, &a, err);
        if (pg) PQfinish(pg);
        if (rc != VB_OK) vb_error_prefix(err, "replica %d", k);
    }
    return rc;
}

typedef struct version_arg {
    char *buf;
    size_t len;
} version_arg;

static int version_on(void *conn, void *arg, vb_error *err) {
    version_arg *a = arg;
    PGresult *r;
    int rc = pg_row(conn, "SELECT current_setting('server_version'), "
                          "(SELECT extversion FROM pg_extension WHERE extname = 'vector'), "
                          "(SELECT default_version FROM pg_available_extensions WHERE name = 'vector')", "version", &r,
                    err);
    if (rc != VB_OK) return rc;
    /* before the build's CREATE EXTENSION (the orchestrator's readiness probe) the installed package's version */
    if (!PQgetisnull(r, 0, 1))
        snprintf(a->buf, a->len, "PostgreSQL %s, pgvector %s", PQgetvalue(r, 0, 0), PQgetvalue(r, 0, 1));
    else if (!PQgetisnull(r, 0, 2))
        snprintf(a->buf, a->len, "PostgreSQL %s, pgvector %s (installed, extension not created yet)",
                 PQgetvalue(r, 0, 0), PQgetvalue(r, 0, 2));
    else
        snprintf(a->buf, a->len, "PostgreSQL %s, pgvector (not installed)", PQgetvalue(r, 0, 0));
    PQclear(r);
    return VB_OK;
}

/* "PostgreSQL 17.x (...), pgvector 0.8.0" (the extension version installed in the database). */
static int pg_version(void *state, char *buf, size_t len, vb_error *err) {
    version_arg a = {buf, len};
    return vb_admin_run(&((pg_state *)state)->admin, version_on, &a, err);
}

/* The filter's parameters after the vector ($2, $3), in network order at p; returns how many (0..2). */
static int put_bounds(char *p, const vb_filter *f) {
    if (!f || f->kind == VB_FILTER_NONE) return 0;
    put32(p, (uint32_t)(f->kind == VB_FILTER_LABEL_EQ ? f->label : f->kind == VB_FILTER_CLASS_EQ ? f->cls : f->tag_below));
    if (f->kind != VB_FILTER_AND) return 1;
    put32(p + 4, (uint32_t)f->tag2_below);
    return 2;
}

/* ---- shards (shards: N, issue 39) -------------------------------------------------------------------------
 *
 * N shard servers (nodes 1 .. N) behind a router (node 0), each a PostgreSQL server of the recipe. The rule: the row
 * with id i lives on node 1 + i % N. Each shard holds the table as one server does (same name and columns, its own
 * HNSW index made by its own CREATE INDEX: the N builds run at once, a connection each) and the view
 * <table>_settings, which says the session's hnsw.ef_search. The router holds no rows: for each shard a postgres_fdw
 * foreign server <table>_srvK (the shard's host, port and dbname as the router reaches it: node.K.peer_host, else
 * node.K.host; extensions 'vector', so pgvector's operators are shipped and ORDER BY embedding <op> $1 runs on the
 * shard; async_capable 'true', so the shards' scans run at once; options '-c hnsw.ef_search=E ...' for the shard
 * sessions) with a user mapping (the shard's user and password), and the table partitioned BY LIST ((id % N)) with
 * the foreign tables <table>_pK FOR VALUES IN (K - 1). A search is one statement to the router, in the form
 * router_form names (knn_sql):
 *   cte (default): WITH vb_knn AS MATERIALIZED ((SELECT id, embedding <op> $1 AS d FROM t_p1 [WHERE ...] ORDER BY
 *                  embedding <op> $1 LIMIT k) UNION ALL ... t_pN ...) SELECT id FROM vb_knn ORDER BY d LIMIT k
 *                  PostgreSQL 17 plans an Append of Async Foreign Scans, each shard receiving ORDER BY ... LIMIT k;
 *   plain:         SELECT id FROM t [WHERE ...] ORDER BY embedding <op> $1 LIMIT k
 *                  the query an application would write: a Merge Append whose shards get the ORDER BY without the
 *                  LIMIT, one after the other (measured as such; the explain op says index_used 0).
 * The build checks the router's plan (EXPLAIN VERBOSE, generic): with cte, every shard's scan must be an Async
 * Foreign Scan whose remote SQL has the ORDER BY and the LIMIT, or the build fails with the plan. The explain op
 * records the router's plan with each shard's remote SQL, what each shard's session says of hnsw.ef_search, and each
 * shard's own plan of that remote query.
 * ef_search: postgres_fdw opens its own session on each shard and carries none of the router session's hnsw.*
 * settings; the foreign server's `options` is applied when it connects, and an ALTER SERVER makes every router
 * session connect again at its next statement. So set_search sets the servers' options (only when the value
 * changes, under an advisory lock) and reads <table>_setK through the router session, which must say the value.
 * Writes go straight to the shards by the rule (shard_write). */

/* Node k's value of a libpq connect key; NULL when it has none. */
static const char *node_val(const pg_state *s, int k, const char *key) {
    const char *const *keys = k ? s->node_keys[k] : s->keys;
    char *const *vals = k ? s->node_vals[k] : s->vals;
    for (size_t i = 0; keys[i]; i++)
        if (strcmp(keys[i], key) == 0) return vals[i];
    return NULL;
}

/* The `options` of the shards' sessions: the search settings and node 0's statement_timeout. */
static void shard_session_options(const pg_state *s, int ef, char *buf, size_t len) {
    const char *bound = node_val(s, 0, "options");
    char it[64] = "", mst[64] = "";
    if (s->iterative_scan[0]) snprintf(it, sizeof it, " -c hnsw.iterative_scan=%s", s->iterative_scan);
    if (s->max_scan_tuples > 0) snprintf(mst, sizeof mst, " -c hnsw.max_scan_tuples=%ld", s->max_scan_tuples);
    snprintf(buf, len, "-c hnsw.ef_search=%d%s%s%s%s", ef, it, mst, bound ? " " : "", bound ? bound : "");
}

/* Appends ", NAME 'VALUE'" (the value escaped for pg) to sql; -1 when it does not fit or cannot be escaped. */
static int add_option(PGconn *pg, char *sql, size_t len, const char *name, const char *value) {
    if (!value) return 0;
    char *lit = PQescapeLiteral(pg, value, strlen(value));
    if (!lit) return -1;
    size_t used = strlen(sql);
    int n = snprintf(sql + used, len - used, "%s%s %s", sql[used - 1] == '(' ? "" : ", ", name, lit);
    PQfreemem(lit);
    return n < 0 || (size_t)n >= len - used ? -1 : 0;
}

/* fn on a connection of its own to node k (a shard), its failure named by the node. */
static int on_node(pg_state *s, int k, int (*fn)(void *conn, void *arg, vb_error *err), void *arg, vb_error *err) {
    PGconn *pg = NULL;
    int rc = pg_dial_node(s, k, &pg, err);
    if (rc == VB_OK) rc = fn(pg, arg, err);
    if (pg) PQfinish(pg);
    if (rc != VB_OK) vb_error_prefix(err, "shard %d (node %d)", k, k);
    return rc;
}

/* A shard's table (create_on) and its settings view. */
static int shard_create_on(void *conn, void *arg, vb_error *err) {
    pg_state *s = arg;
    char sql[512];
    int rc = create_on(conn, arg, err);
    if (rc == VB_OK) {
        snprintf(sql, sizeof sql, "CREATE OR REPLACE VIEW %s_settings AS SELECT current_setting('hnsw.ef_search', "
                 "true) AS ef_search", s->table);
        rc = pg_command(conn, sql, err);
    }
    return rc;
}

/* The router: the extensions, a foreign server and user mapping per shard, the partitioned table of foreign tables,
 * and a foreign table per shard on its settings view. Safe to repeat (drops first). */
static int router_create_on(void *conn, void *arg, vb_error *err) {
    pg_state *s = arg;
    PGconn *pg = conn;
    char sql[2048], opts[512];
    int rc = pg_command(pg, "CREATE EXTENSION IF NOT EXISTS vector", err);
    if (rc == VB_OK) rc = pg_command(pg, "CREATE EXTENSION IF NOT EXISTS postgres_fdw", err);
    if (rc == VB_OK) {
        snprintf(sql, sizeof sql, "DROP TABLE IF EXISTS %s", s->table);
        rc = pg_command(pg, sql, err);
    }
    shard_session_options(s, 40, opts, sizeof opts);   /* pgvector's default until set_search */
    for (int K = 1; K <= s->n_shards && rc == VB_OK; K++) {
        snprintf(sql, sizeof sql, "DROP SERVER IF EXISTS %s_srv%d CASCADE", s->table, K);
        if ((rc = pg_command(pg, sql, err)) != VB_OK) break;
        snprintf(sql, sizeof sql, "CREATE SERVER %s_srv%d FOREIGN DATA WRAPPER postgres_fdw OPTIONS (", s->table, K);
        if (add_option(pg, sql, sizeof sql, "host", s->peer_host[K][0] ? s->peer_host[K] : NULL) ||
            add_option(pg, sql, sizeof sql, "port", node_val(s, K, "port")) ||
            add_option(pg, sql, sizeof sql, "dbname", node_val(s, K, "dbname")) ||
            add_option(pg, sql, sizeof sql, "extensions", "vector") ||
            add_option(pg, sql, sizeof sql, "async_capable", "true") ||
            add_option(pg, sql, sizeof sql, "options", opts) || strlen(sql) + 2 > sizeof sql) {
            rc = vb_error_set(err, PG_DOMAIN, 1, "pgvector: shard %d's connect parameters do not fit a CREATE SERVER", K);
            break;
        }
        strcat(sql, ")");
        if ((rc = pg_command(pg, sql, err)) != VB_OK) break;
        snprintf(sql, sizeof sql, "CREATE USER MAPPING FOR CURRENT_USER SERVER %s_srv%d OPTIONS (", s->table, K);
        if (add_option(pg, sql, sizeof sql, "user", node_val(s, K, "user")) ||
            add_option(pg, sql, sizeof sql, "password", node_val(s, K, "password")) || strlen(sql) + 2 > sizeof sql) {
            rc = vb_error_set(err, PG_DOMAIN, 1, "pgvector: shard %d's user and password do not fit", K);
            break;
        }
        if (sql[strlen(sql) - 1] == '(') sql[strlen(sql) - strlen(" OPTIONS (")] = '\0';
        else strcat(sql, ")");
        rc = pg_command(pg, sql, err);
    }
    if (rc == VB_OK) {
        snprintf(sql, sizeof sql, "CREATE TABLE %s (id bigint NOT NULL, tag integer, tag2 integer, label integer, "
                 "class integer, embedding %s(%zu)) PARTITION BY LIST ((id %% %d))", s->table,
                 s->halfvec ? "halfvec" : "vector", s->dim, s->n_shards);
        rc = pg_command(pg, sql, err);
    }
    for (int K = 1; K <= s->n_shards && rc == VB_OK; K++) {
        snprintf(sql, sizeof sql, "CREATE FOREIGN TABLE %s_p%d PARTITION OF %s FOR VALUES IN (%d) SERVER %s_srv%d "
                 "OPTIONS (table_name '%s')", s->table, K, s->table, K - 1, s->table, K, s->table);
        if ((rc = pg_command(pg, sql, err)) != VB_OK) break;
        snprintf(sql, sizeof sql, "CREATE FOREIGN TABLE %s_set%d (ef_search text) SERVER %s_srv%d OPTIONS (table_name "
                 "'%s_settings')", s->table, K, s->table, K, s->table);
        if ((rc = pg_command(pg, sql, err)) != VB_OK) break;
        /* the router reaches the shard now, or the create fails naming it (not every search after the build) */
        snprintf(sql, sizeof sql, "SELECT count(*) FROM %s_set%d", s->table, K);
        if ((rc = pg_command(pg, sql, err)) != VB_OK)
            vb_error_prefix(err, "the router cannot reach shard %d through postgres_fdw at host '%s' (node.%d.host, or "
                            "node.%d.peer_host for a socket directory)", K, s->peer_host[K], K, K);
    }
    if (rc == VB_OK && PQserverVersion(pg) < 160000)
        rc = vb_error_set(err, PG_DOMAIN, 1, "pgvector: shards need PostgreSQL 16 or later on the router (its plan is "
                          "checked with EXPLAIN (GENERIC_PLAN)); this one is %d", PQserverVersion(pg));
    return rc;
}

static int shard_create(pg_state *s, vb_error *err) {
    int rc = VB_OK;
    for (int K = 1; K <= s->n_shards && rc == VB_OK; K++) rc = on_node(s, K, shard_create_on, s, err);
    if (rc == VB_OK && (rc = vb_admin_run(&s->admin, router_create_on, s, err)) != VB_OK)
        vb_error_prefix(err, "the router (node 0)");
    return rc;
}

/* attach: the shard's index is there. */
static int index_on(void *conn, void *arg, vb_error *err) {
    index_arg *a = arg;
    char v[8];
    int rc = query_value(conn, "SELECT to_regclass($1) IS NOT NULL", a->s->index, v, sizeof v, err);
    a->there = rc == VB_OK && strcmp(v, "t") == 0;
    return rc;
}

/* Each shard's index build, at once (a thread and a connection each), each timed (build_ms). */
typedef struct shard_job {
    pg_state *s;
    int k, rc;
    vb_error err;
} shard_job;

static void *shard_build_thread(void *arg) {
    shard_job *j = arg;
    uint64_t t0 = vb_now_ns();
    j->rc = on_node(j->s, j->k, build_on, j->s, &j->err);
    if (j->rc == VB_OK) j->s->build_ms[j->k] = (int64_t)((vb_now_ns() - t0) / 1000000ull);
    return NULL;
}

/* The router's generic plan of the kNN statement (EXPLAIN VERBOSE): its lines into out (when not NULL), how many
 * shard scans are Async Foreign Scans and how many shards receive the ORDER BY and the LIMIT (their Remote SQL). */
static int router_plan(PGconn *pg, const pg_state *s, int k, int filtered, vb_sql_plan *out, int *async, int *pushed,
                       vb_error *err) {
    char sql[4096];
    snprintf(sql, sizeof sql, "EXPLAIN (VERBOSE, COSTS OFF, GENERIC_PLAN) ");
    knn_sql(s, k, filtered, sql + strlen(sql), sizeof sql - strlen(sql));
    PGresult *r = pg_exec(pg, sql);
    *async = *pushed = 0;
    int rc = VB_OK;
    if (PQresultStatus(r) != PGRES_TUPLES_OK) rc = pg_fail(pg, r, err, "EXPLAIN on the router");
    for (int i = 0; rc == VB_OK && i < PQntuples(r); i++) {
        const char *line = PQgetvalue(r, i, 0);
        *async += strstr(line, "Async Foreign Scan") != NULL;
        *pushed += strstr(line, "Remote SQL:") && strstr(line, " ORDER BY ") && strstr(line, " LIMIT ");
        if (out) vb_sql_plan_add(out, "%s\n", line);
    }
    PQclear(r);
    return rc;
}

typedef struct plan_arg {
    pg_state *s;
    char plan[4096];
    int async, pushed;
} plan_arg;

static int plan_check_on(void *conn, void *arg, vb_error *err) {
    plan_arg *a = arg;
    vb_sql_plan out;
    vb_sql_plan_init(&out, a->plan, sizeof a->plan);
    return router_plan(conn, a->s, 10, 0, &out, &a->async, &a->pushed, err);
}

static int shard_build(pg_state *s, vb_error *err) {
    pthread_t th[PG_MAX_NODES];
    shard_job jobs[PG_MAX_NODES];
    int started[PG_MAX_NODES] = {0}, rc = VB_OK;
    for (int K = 1; K <= s->n_shards; K++) {
        jobs[K] = (shard_job){.s = s, .k = K, .rc = VB_OK};
        vb_error_clear(&jobs[K].err);
        started[K] = pthread_create(&th[K], NULL, shard_build_thread, &jobs[K]) == 0;
        if (!started[K]) shard_build_thread(&jobs[K]);
    }
    for (int K = 1; K <= s->n_shards; K++) {
        if (started[K]) pthread_join(th[K], NULL);
        if (jobs[K].rc != VB_OK && rc == VB_OK) *err = jobs[K].err, rc = jobs[K].rc;
    }
    if (rc != VB_OK) return rc;
    plan_arg *a = calloc(1, sizeof *a);
    if (!a) return vb_error_set(err, PG_DOMAIN, 1, "pgvector: out of memory");
    a->s = s;
    rc = vb_admin_run(&s->admin, plan_check_on, a, err);
    if (rc == VB_OK && s->router_cte && (a->async != s->n_shards || a->pushed != s->n_shards))
        rc = vb_error_set(err, PG_DOMAIN, 1, "pgvector: the router's plan (router_form: cte) does not send every shard "
                          "its ORDER BY ... LIMIT at once: %d of %d scans async, %d of %d with ORDER BY and LIMIT in "
                          "their remote SQL; its plan: %s", a->async, s->n_shards, a->pushed, s->n_shards, a->plan);
    free(a);
    return rc;
}

/* set_search on a router session: the shards' sessions get ef through their foreign servers' options (set when the
 * value changes, under an advisory lock, so sessions setting the same value at once alter nothing twice), then each
 * shard's session, read through this router session, must say it. */
static int shard_set_ef(pg_conn *c, int ef, vb_error *err) {
    pg_state *s = c->s;
    char opts[512], want[528], sql[1024], srv[PG_NAME_MAX + 16], v[32];
    shard_session_options(s, ef, opts, sizeof opts);
    snprintf(want, sizeof want, "options=%s", opts);
    int rc = pg_command(c->pg, "BEGIN", err);
    if (rc == VB_OK) {
        snprintf(sql, sizeof sql, "SELECT pg_advisory_xact_lock(hashtext('vbench shards %s'))", s->table);
        rc = pg_command(c->pg, sql, err);
    }
    for (int K = 1; K <= s->n_shards && rc == VB_OK; K++) {
        snprintf(srv, sizeof srv, "%s_srv%d", s->table, K);
        const char *params[2] = {srv, want};
        PGresult *r = pg_exec_params(c->pg, "SELECT count(*) FROM pg_foreign_server WHERE srvname = $1 AND "
                                            "$2 = ANY(srvoptions)", 2, params, NULL, NULL, 0);
        if (PQresultStatus(r) != PGRES_TUPLES_OK || PQntuples(r) != 1) rc = pg_fail(c->pg, r, err, "pg_foreign_server");
        int same = rc == VB_OK && strcmp(PQgetvalue(r, 0, 0), "1") == 0;
        PQclear(r);
        if (rc != VB_OK || same) continue;
        char *lit = PQescapeLiteral(c->pg, opts, strlen(opts));
        if (!lit) rc = pg_fail(c->pg, NULL, err, "escaping the shard options");
        else {
            snprintf(sql, sizeof sql, "ALTER SERVER %s OPTIONS (SET options %s)", srv, lit);
            PQfreemem(lit);
            rc = pg_command(c->pg, sql, err);
        }
    }
    if (rc == VB_OK) rc = pg_command(c->pg, "COMMIT", err);
    else if (PQstatus(c->pg) == CONNECTION_OK) PQclear(pg_exec(c->pg, "ROLLBACK"));
    for (int K = 1; K <= s->n_shards && rc == VB_OK; K++) {
        snprintf(sql, sizeof sql, "SELECT ef_search FROM %s_set%d", s->table, K);
        if ((rc = query_value(c->pg, sql, NULL, v, sizeof v, err)) == VB_OK && atoi(v) != ef)
            rc = vb_error_set(err, PG_DOMAIN, 1, "pgvector: shard %d's session through the router says hnsw.ef_search "
                              "= '%s', not %d: its foreign server's options did not reach it", K, v, ef);
    }
    return rc;
}

/* The explain op on a router session c (ef_search set): the rule and the form, the router's plan with each
 * shard's remote SQL, what each shard's session says of hnsw.ef_search, and each shard's own plan of that query.
 * *uses_index: every shard's scan async with the ORDER BY and LIMIT pushed, and every shard on its HNSW index. */
static int shard_explain(pg_conn *c, int ef, int k, int filtered, int *uses_index, vb_sql_plan *out, vb_error *err) {
    pg_state *s = c->s;
    int async = 0, pushed = 0, indexed = 0;
    vb_sql_plan_add(out, "router node 0, shards nodes 1..%d, row id on node 1 + id %% %d, router_form: %s\n",
                    s->n_shards, s->n_shards, s->router_cte ? "cte" : "plain");
    int rc = router_plan(c->pg, s, k, filtered, out, &async, &pushed, err);
    char sql[1024], needle[PG_NAME_MAX + 16], v[32];
    snprintf(needle, sizeof needle, "using %s ", s->index);
    for (int K = 1; K <= s->n_shards && rc == VB_OK; K++) {
        snprintf(sql, sizeof sql, "SELECT ef_search FROM %s_set%d", s->table, K);
        if ((rc = query_value(c->pg, sql, NULL, v, sizeof v, err)) != VB_OK) break;
        vb_sql_plan_add(out, "shard %d: its session from the router has hnsw.ef_search = %s\n", K, v);
        pg_conn *sc = calloc(1, sizeof *sc);
        if (!sc) {
            rc = vb_error_set(err, PG_DOMAIN, 1, "pgvector: out of memory");
            break;
        }
        sc->s = s, sc->node = sc->read_node = K, sc->ef_search = ef;
        if ((rc = conn_ready(sc, err)) == VB_OK) {
            /* the shard's query as the router sends it: the plain form's carries no LIMIT */
            char limit[32] = "";
            if (s->router_cte) snprintf(limit, sizeof limit, " LIMIT %d", k);
            snprintf(sql, sizeof sql, "EXPLAIN (COSTS OFF, GENERIC_PLAN) SELECT id FROM %s%s ORDER BY embedding %s $1%s",
                     s->table, knn_where[filtered], metric_op(s->metric), limit);
            PGresult *r = pg_exec(sc->pg, sql);
            if (PQresultStatus(r) != PGRES_TUPLES_OK) rc = pg_fail(sc->pg, r, err, "EXPLAIN on a shard");
            int uses = 0;
            for (int i = 0; rc == VB_OK && i < PQntuples(r); i++) {
                char padded[1024];
                snprintf(padded, sizeof padded, "%s ", PQgetvalue(r, i, 0));
                uses |= strstr(padded, needle) != NULL;
                vb_sql_plan_add(out, "shard %d: %s\n", K, PQgetvalue(r, i, 0));
            }
            indexed += uses;
            PQclear(r);
        }
        if (rc != VB_OK) vb_error_prefix(err, "shard %d (node %d)", K, K);
        pg_disconnect(sc);
    }
    *uses_index = rc == VB_OK && async == s->n_shards && pushed == s->n_shards && indexed == s->n_shards;
    return rc;
}

/* Each node as it says of itself: the router its kNN statement count (pg_stat_statements), each shard its rows,
 * sizes, index scans (pg_stat_user_indexes.idx_scan of its HNSW index: one per search the router sent it, as the
 * server's statistics have flushed them) and the build time of its index. */
static int shard_node_stats(pg_state *s, vb_node_stats *out, size_t cap, size_t *n, vb_error *err) {
    for (int k = 0; k <= s->n_shards && (size_t)k < cap; k++) {
        PGconn *pg = NULL;
        vb_node_stats *o = &out[k];
        *o = (vb_node_stats){.node = k, .rows = -1, .index_bytes = -1, .table_bytes = -1, .searches = -1,
                             .lag_bytes = 0, .build_ms = k ? s->build_ms[k] : -1};
        snprintf(o->role, sizeof o->role, "%s", k ? "shard" : "router");
        int rc = pg_dial_node(s, k, &pg, err);
        if (rc == VB_OK && k == 0) {
            vb_server_stats st = {0};
            stats_arg ta = {s, &st, 0};
            if ((rc = stats_on(pg, &ta, err)) == VB_OK) o->searches = st.calls;
        } else if (rc == VB_OK) {
            vb_sizes sz;
            sizes_arg sa = {s, &sz};
            char v[32];
            if (s->ready && (rc = sizes_on(pg, &sa, err)) == VB_OK)
                o->rows = sz.rows, o->index_bytes = sz.index_bytes, o->table_bytes = sz.table_bytes;
            if (rc == VB_OK && (rc = query_value(pg, "SELECT coalesce(sum(idx_scan), 0) FROM pg_stat_user_indexes WHERE "
                                                 "indexrelname = $1", s->index, v, sizeof v, err)) == VB_OK)
                o->searches = atoll(v);
        }
        if (pg) PQfinish(pg);
        if (rc != VB_OK) return vb_error_prefix(err, "node %d", k), rc;
        (*n)++;
    }
    return VB_OK;
}

/* The engine's sizes: the shards' summed. */
static int shard_sizes(pg_state *s, vb_sizes *out, vb_error *err) {
    *out = (vb_sizes){0, 0, 0};
    int rc = VB_OK;
    for (int K = 1; K <= s->n_shards && rc == VB_OK; K++) {
        vb_sizes sz;
        sizes_arg sa = {s, &sz};
        if ((rc = on_node(s, K, sizes_on, &sa, err)) != VB_OK) break;
        out->index_bytes = out->index_bytes < 0 || sz.index_bytes < 0 ? -1 : out->index_bytes + sz.index_bytes;
        out->table_bytes += sz.table_bytes;
        out->rows += sz.rows;
    }
    return rc;
}

/* ---- writes ------------------------------------------------------------------------------------------ */

/* Binary COPY of n rows into table; the whole batch is one COPY statement. The connection is ready. */
static int copy_rows(pg_conn *c, const char *table, const int64_t *ids, const float *vecs, const int32_t *tags,
                     const int32_t *classes, size_t n, vb_error *err) {
    pg_state *s = c->s;
    int rc = VB_OK;
    size_t row = 2 + 4 + 8 + 4 * (4 + 4) + 4 + vec_bytes(s);
    if (grow(c, 19 + n * row + 2, err) != VB_OK) return VB_ERROR;
    char *p = c->buf;
    memcpy(p, "PGCOPY\n\377\r\n\0", 11);
    p = put32(p + 11, 0);   /* flags */
    p = put32(p, 0);        /* header extension length */
    for (size_t i = 0; i < n; i++) {
        p = put16(p, 6);
        p = put32(p, 8);
        p = put64(p, (uint64_t)ids[i]);
        if (tags) { /* tag from the array; tag2 and label from the id (engines/engine.h vb_filter) */
            p = put32(p, 4), p = put32(p, (uint32_t)tags[i]);
            p = put32(p, 4), p = put32(p, (uint32_t)vb_dataset_tag2(ids[i]));
            p = put32(p, 4), p = put32(p, (uint32_t)vb_dataset_label(ids[i]));
        } else {
            /* NULL attributes: never pass a filter */
            p = put32(p, 0xffffffffu), p = put32(p, 0xffffffffu), p = put32(p, 0xffffffffu);
        }
        if (classes)
            p = put32(p, 4), p = put32(p, (uint32_t)classes[i]);
        else
            p = put32(p, 0xffffffffu);   /* NULL: no class */
        p = put32(p, (uint32_t)vec_bytes(s));
        p = put_vec(s, p, vecs + i * s->dim);
    }
    p = put16(p, 0xffff);
    char sql[256];
    snprintf(sql, sizeof sql, "COPY %s (id, tag, tag2, label, class, embedding) FROM STDIN WITH (FORMAT binary)", table);
    PGresult *r = pg_exec(c->pg, sql);
    if (PQresultStatus(r) != PGRES_COPY_IN) {
        rc = pg_fail(c->pg, r, err, "COPY");
        PQclear(r);
        return rc;
    }
    PQclear(r);
    /* The rows are written in nonblocking mode, every write bounded (pg_flush), then the connection goes back to
     * blocking mode for the statements, whose answers pg_wait bounds. */
    PQsetnonblocking(c->pg, 1);
    for (const char *q = c->buf; rc == VB_OK && q < p; q += 1 << 20) {   /* 1 MB pieces: PQputCopyData takes an int */
        int piece = p - q < (1 << 20) ? (int)(p - q) : 1 << 20;
        if (pg_copy_data(c->pg, q, piece) != 0) rc = pg_fail(c->pg, NULL, err, "COPY data");
    }
    if (PQstatus(c->pg) != CONNECTION_BAD && pg_copy_end(c->pg, rc == VB_OK ? NULL : "vbench: sending the rows failed") != 0 &&
        rc == VB_OK)
        rc = pg_fail(c->pg, NULL, err, "COPY end");
    PQsetnonblocking(c->pg, 0);
    for (;;) {
        pg_wait(c->pg);
        if (!(r = PQgetResult(c->pg))) break;
        if (rc == VB_OK && PQresultStatus(r) != PGRES_COMMAND_OK) rc = pg_fail(c->pg, r, err, "COPY");
        PQclear(r);
    }
    return rc;
}

/* One write of rows on one server's session (load_rows, upsert_rows, delete_rows; vecs, tags, classes NULL for a
 * delete). */
typedef int (*pg_rows_fn)(pg_conn *c, const int64_t *ids, const float *vecs, const int32_t *tags,
                          const int32_t *classes, size_t n, vb_error *err);

/* A write on a sharded table (shards: N): the rows split by the rule, node 1 + id % N, and each shard's part written
 * straight on this connection's own session there (c->shard[K], opened on first use), shard after shard: a batch
 * over several shards is one transaction per shard, not one for all. The router's partitioned table is not in the
 * path: postgres_fdw takes no INSERT ... ON CONFLICT DO UPDATE, and a COPY through it would cross two servers. */
static int shard_write(pg_conn *c, pg_rows_fn fn, const int64_t *ids, const float *vecs, const int32_t *tags,
                       const int32_t *classes, size_t n, vb_error *err) {
    pg_state *s = c->s;
    size_t dim = s->dim;
    int64_t *sid = malloc((n ? n : 1) * sizeof *sid);
    float *sv = vecs ? malloc((n ? n : 1) * dim * sizeof *sv) : NULL;
    int32_t *st = tags ? malloc((n ? n : 1) * sizeof *st) : NULL, *sc = classes ? malloc((n ? n : 1) * sizeof *sc) : NULL;
    int rc = !sid || (vecs && !sv) || (tags && !st) || (classes && !sc)
                 ? vb_error_set(err, PG_DOMAIN, 1, "pgvector: out of memory splitting %zu rows over the shards", n)
                 : VB_OK;
    for (int K = 1; K <= s->n_shards && rc == VB_OK; K++) {
        size_t m = 0;
        for (size_t i = 0; i < n; i++) {
            if (ids[i] < 0 || 1 + ids[i] % s->n_shards != K) continue;
            sid[m] = ids[i];
            if (sv) memcpy(sv + m * dim, vecs + i * dim, dim * sizeof *sv);
            if (st) st[m] = tags[i];
            if (sc) sc[m] = classes[i];
            m++;
        }
        if (!m) continue;
        if (!c->shard[K]) {
            if (!(c->shard[K] = calloc(1, sizeof *c->shard[K]))) {
                rc = vb_error_set(err, PG_DOMAIN, 1, "pgvector: out of memory");
                break;
            }
            c->shard[K]->s = s;
            c->shard[K]->node = c->shard[K]->read_node = K;
        }
        if ((rc = conn_ready(c->shard[K], err)) == VB_OK) rc = fn(c->shard[K], sid, sv, st, sc, m, err);
        if (rc != VB_OK) vb_error_prefix(err, "shard %d (node %d)", K, K);
    }
    free(sid), free(sv), free(st), free(sc);
    return rc;
}

/* The write on c's own server, or split over the shards. */
static int write_rows(pg_conn *c, pg_rows_fn fn, const int64_t *ids, const float *vecs, const int32_t *tags,
                      const int32_t *classes, size_t n, vb_error *err) {
    if (!c->s->ready) return vb_error_set(err, PG_DOMAIN, 1, "pgvector: no table: create or attach first");
    if (c->s->n_shards) return shard_write(c, fn, ids, vecs, tags, classes, n, err);
    int rc = conn_ready(c, err);
    return rc == VB_OK ? fn(c, ids, vecs, tags, classes, n, err) : rc;
}

static int load_rows(pg_conn *c, const int64_t *ids, const float *vecs, const int32_t *tags, const int32_t *classes,
                     size_t n, vb_error *err) {
    return copy_rows(c, c->s->table, ids, vecs, tags, classes, n, err);
}

/* New ids, straight into the table (the bulk path). */
static int pg_load(void *conn, const int64_t *ids, const float *vecs, const int32_t *tags, const int32_t *classes,
                   size_t n, vb_error *err) {
    return write_rows(conn, load_rows, ids, vecs, tags, classes, n, err);
}

/* The upsert of the engine contract: COPY into the connection's staging table, then one INSERT ... ON CONFLICT
 * into the table, in one transaction (the staging rows go at COMMIT). A live id gets the new vector and tag, a
 * removed or new id is added. */
static int upsert_rows(pg_conn *c, const int64_t *ids, const float *vecs, const int32_t *tags, const int32_t *classes,
                       size_t n, vb_error *err) {
    pg_state *s = c->s;
    int rc = VB_OK;
    char sql[512];
    if (!c->staged) {
        snprintf(sql, sizeof sql,
                 "CREATE TEMP TABLE vb_stage (id bigint, tag integer, tag2 integer, label integer, class integer, embedding %s(%zu)) "
                 "ON COMMIT DELETE ROWS",
                 s->halfvec ? "halfvec" : "vector", s->dim);
        if ((rc = pg_command(c->pg, sql, err)) == VB_OK) c->staged = 1;
    }
    if (rc != VB_OK) return rc;
    if ((rc = pg_command(c->pg, "BEGIN", err)) != VB_OK) return rc;
    rc = copy_rows(c, "vb_stage", ids, vecs, tags, classes, n, err);
    if (rc == VB_OK) {
        snprintf(sql, sizeof sql,
                 "INSERT INTO %s (id, tag, tag2, label, class, embedding) SELECT id, tag, tag2, label, class, "
                 "embedding FROM vb_stage ON CONFLICT (id) DO UPDATE SET tag = EXCLUDED.tag, tag2 = EXCLUDED.tag2, "
                 "label = EXCLUDED.label, class = EXCLUDED.class, embedding = EXCLUDED.embedding",
                 s->table);
        rc = pg_command(c->pg, sql, err);
    }
    if (rc == VB_OK) return pg_command(c->pg, "COMMIT", err);
    if (PQstatus(c->pg) == CONNECTION_OK) PQclear(pg_exec(c->pg, "ROLLBACK"));   /* err keeps the first failure */
    return rc;
}

static int pg_insert(void *conn, const int64_t *ids, const float *vecs, const int32_t *tags, const int32_t *classes,
                     size_t n, vb_error *err) {
    return write_rows(conn, upsert_rows, ids, vecs, tags, classes, n, err);
}

/* DELETE ... WHERE id = ANY($1) with the ids as a text array; absent ids are not an error. */
static int delete_rows(pg_conn *c, const int64_t *ids, const float *vecs, const int32_t *tags, const int32_t *classes,
                       size_t n, vb_error *err) {
    (void)vecs, (void)tags, (void)classes;
    pg_state *s = c->s;
    int rc = VB_OK;
    if (grow(c, 3 + n * 21, err) != VB_OK) return VB_ERROR;
    char *p = c->buf;
    *p++ = '{';
    for (size_t i = 0; i < n; i++) p += sprintf(p, "%s%lld", i ? "," : "", (long long)ids[i]);
    *p++ = '}';
    *p = '\0';
    char sql[256];
    snprintf(sql, sizeof sql, "DELETE FROM %s WHERE id = ANY($1::bigint[])", s->table);
    const char *param = c->buf;
    PGresult *r = pg_exec_params(c->pg, sql, 1, &param, NULL, NULL, 0);
    if (PQresultStatus(r) != PGRES_COMMAND_OK) rc = pg_fail(c->pg, r, err, "DELETE");
    PQclear(r);
    return rc;
}

static int pg_remove(void *conn, const int64_t *ids, size_t n, vb_error *err) {
    return write_rows(conn, delete_rows, ids, NULL, NULL, NULL, n, err);
}

/* ---- search ------------------------------------------------------------------------------------------ */

static int pg_set_search(void *conn, const vb_search_params *p, vb_error *err) {
    pg_conn *c = conn;
    if (p->ef_search < 1 || p->ef_search > 1000)
        return vb_error_set(err, PG_DOMAIN, 1, "pgvector: ef_search %d is outside pgvector's 1..1000",
                            p->ef_search);
    int rc = conn_ready(c, err);
    if (rc != VB_OK) return rc;
    char sql[64];
    snprintf(sql, sizeof sql, "SET hnsw.ef_search = %d", p->ef_search);
    if ((rc = pg_command(c->pg, sql, err)) == VB_OK) c->ef_search = p->ef_search;
    if (rc == VB_OK && c->s->n_shards) rc = shard_set_ef(c, p->ef_search, err);
    if (rc == VB_OK && c->reader) {   /* its replica session: set now if open, else when it opens */
        c->reader->ef_search = p->ef_search;
        if (c->reader->pg && PQstatus(c->reader->pg) == CONNECTION_OK) rc = pg_command(c->reader->pg, sql, err);
    }
    return rc;
}

/* DEALLOCATE of a cached statement (sql_common's release callback); a failure shows at the next PREPARE. */
static void deallocate(void *ctx, void *stmt) {
    char sql[64];
    snprintf(sql, sizeof sql, "DEALLOCATE %s", (const char *)stmt);
    PQclear(pg_exec(((pg_conn *)ctx)->pg, sql));
}

/* Prepares the kNN statement for k once per connection (again when k changes). */
static int prepare_knn(pg_conn *c, int k, int filtered, vb_error *err) {
    if (vb_sql_knn_get(&c->knn, filtered, k, deallocate, c)) return VB_OK;
    char sql[4096];
    knn_sql(c->s, k, filtered, sql, sizeof sql);
    PGresult *r = pg_prepare(c->pg, knn_names[filtered], sql);
    int rc = VB_OK;
    if (PQresultStatus(r) != PGRES_COMMAND_OK) rc = pg_fail(c->pg, r, err, "PREPARE");
    else vb_sql_knn_put(&c->knn, filtered, k, (void *)knn_names[filtered]);
    PQclear(r);
    return rc;
}

static int pg_search(void *conn, const float *query, int k, const vb_filter *filter, int64_t *ids_out, int *n_out,
                     vb_error *err) {
    pg_conn *c = conn;
    pg_state *s = c->s;
    *n_out = 0;
    if (reader_of(conn, &c, err) != VB_OK) return VB_ERROR;
    if (k <= 0) return VB_OK;
    if (!s->ready) return vb_error_set(err, PG_DOMAIN, 1, "pgvector: no table: create or attach first");
    int filtered = filter ? (int)filter->kind : 0;
    if (filtered < 0 || filtered >= VB_FILTER_KINDS)
        return vb_error_set(err, PG_DOMAIN, 1, "pgvector: unknown filter kind %d", (int)filter->kind);
    int rc = conn_ready(c, err);
    if (rc == VB_OK) rc = prepare_knn(c, k, filtered, err);
    if (rc != VB_OK) return rc;
    if (grow(c, vec_bytes(s) + 8, err) != VB_OK) return VB_ERROR;
    char *tag = put_vec(s, c->buf, query);
    int nb = put_bounds(tag, filter);
    const char *values[3] = {c->buf, tag, tag + 4};
    int lengths[3] = {(int)vec_bytes(s), 4, 4}, formats[3] = {1, 1, 1};
    PGresult *r = pg_exec_prepared(c->pg, knn_names[filtered], 1 + nb, values, lengths, formats, 1);
    if (PQresultStatus(r) != PGRES_TUPLES_OK) {
        rc = pg_fail(c->pg, r, err, "kNN query");
    } else {
        int n = PQntuples(r);
        if (n > k) n = k;
        for (int i = 0; i < n; i++) {
            const unsigned char *v = (const unsigned char *)PQgetvalue(r, i, 0);
            uint64_t id = 0;
            for (int b = 0; b < 8; b++) id = id << 8 | v[b];
            ids_out[i] = (int64_t)id;
        }
        *n_out = n;
    }
    PQclear(r);
    return rc;
}

/* ---- build progress --------------------------------------------------------------------------------- */

/* pg_stat_progress_create_index for our table, on a connection of its own (the build holds the admin one):
 * pgvector's HNSW build reports "building index: loading tuples" with tuples_done of tuples_total. */
static int pg_build_progress(void *state, uint64_t *done, uint64_t *total, char *stage, size_t stage_len,
                             vb_error *err) {
    pg_state *s = state;
    PGconn *pg = NULL;
    int rc = pg_dial_node(s, s->n_shards ? 1 : 0, &pg, err);   /* shards: the first shard's build stands for all */
    if (rc != VB_OK) return rc;
    char sql[512];
    snprintf(sql, sizeof sql,
             "SELECT phase, tuples_done, tuples_total, blocks_done, blocks_total FROM pg_stat_progress_create_index "
             "WHERE relid = '%s'::regclass", s->table);
    PGresult *r = pg_exec(pg, sql);
    rc = VB_RETRY;
    if (PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1) {
        uint64_t td = strtoull(PQgetvalue(r, 0, 1), NULL, 10), tt = strtoull(PQgetvalue(r, 0, 2), NULL, 10);
        uint64_t bd = strtoull(PQgetvalue(r, 0, 3), NULL, 10), bt = strtoull(PQgetvalue(r, 0, 4), NULL, 10);
        snprintf(stage, stage_len, "%s", PQgetvalue(r, 0, 0));
        *done = tt ? td : bd;
        *total = tt ? tt : bt;
        rc = *total ? VB_OK : VB_RETRY;
    }
    PQclear(r);
    PQfinish(pg);
    return rc;
}

/* ---- EXPLAIN ----------------------------------------------------------------------------------------- */

/* The engine op: a connection of its own from the open engine, so the plan is the one its clients get
 * (its settings, force_generic_plan, ef_search). */
static int pg_explain(void *state, const vb_table_spec *spec, int ef_search, int k, const vb_filter *filter,
                      int *uses_index, char *plan, size_t plan_len, vb_error *err) {
    void *conn = NULL;
    pg_state *s = state;
    vb_sql_plan out;
    vb_sql_plan_init(&out, plan, plan_len);
    *uses_index = 0;
    int rc;
    if ((rc = check_spec(s, spec, err)) != VB_OK || (rc = pg_connect(s, &conn, err)) != VB_OK) return rc;
    pg_conn *c = conn;
    vb_search_params sp = {ef_search};
    int filtered = filter && (unsigned)filter->kind < VB_FILTER_KINDS ? (int)filter->kind : 0;
    float *ones = vb_sql_ones(s->dim);
    if (!ones) rc = vb_error_set(err, PG_DOMAIN, 1, "pgvector: out of memory");
    if (rc == VB_OK && s->n_shards) {
        if ((rc = pg_set_search(c, &sp, err)) == VB_OK) rc = shard_explain(c, ef_search, k, filtered, uses_index, &out, err);
    } else if (rc == VB_OK && (rc = pg_set_search(c, &sp, err)) == VB_OK && (rc = grow(c, vec_bytes(s) + 8, err)) == VB_OK) {
        char *tag = put_vec(s, c->buf, ones);
        int nb = put_bounds(tag, filtered ? filter : NULL);
        /* EXPLAIN (GENERIC_PLAN) (PostgreSQL 16+) plans with $n unbound: the plan the prepared statement runs
         * under force_generic_plan. Older servers get the plan for a query of ones. */
        int generic = PQserverVersion(c->pg) >= 160000;
        char sql[600];
        snprintf(sql, sizeof sql, "EXPLAIN (COSTS OFF%s) ", generic ? ", GENERIC_PLAN" : "");
        knn_sql(s, k, filtered, sql + strlen(sql), sizeof sql - strlen(sql));
        const char *values[3] = {c->buf, tag, tag + 4};
        int lengths[3] = {(int)vec_bytes(s), 4, 4}, formats[3] = {1, 1, 1};
        PGresult *r = generic ? pg_exec(c->pg, sql)   /* simple protocol: $n stay unbound */
                              : pg_exec_params(c->pg, sql, 1 + nb, values, lengths, formats, 0);
        if (PQresultStatus(r) != PGRES_TUPLES_OK) {
            rc = pg_fail(c->pg, r, err, "EXPLAIN");
        } else {
            char needle[PG_NAME_MAX + 16];
            snprintf(needle, sizeof needle, "using %s ", s->index);
            for (int i = 0; i < PQntuples(r); i++) {
                const char *line = PQgetvalue(r, i, 0);
                char padded[1024];
                snprintf(padded, sizeof padded, "%s ", line);
                if (strstr(padded, needle)) *uses_index = 1;
                vb_sql_plan_add(&out, "%s\n", line);
            }
        }
        PQclear(r);
    }
    free(ones);
    pg_disconnect(c);
    return rc;
}

const vb_engine_ops vb_engine_pgvector = {
    .name = "pgvector",
    .description = "PostgreSQL + pgvector HNSW over libpq (vector or halfvec; binary COPY, prepared binary kNN)",
    .flags = VB_ENGINE_FILTER | VB_ENGINE_FILTER_EQ | VB_ENGINE_FILTER_AND | VB_ENGINE_FILTER_CLASS |
             VB_ENGINE_LOAD_RESUMES | VB_ENGINE_REPLICAS | VB_ENGINE_SHARDS,
    .param_names = pg_params,
    .search_params = pg_search_params,
    /* heap tuple + HNSW element (the vector again, 2 x M neighbour TIDs) + WAL of the load: ~2.3 copies */
    .estimate = {.load_rows_s = 20000, .build_rows_s = 1500, .insert_rows_s = 800, .qps100 = 800,
                 .filtered_qps = 300, .copies = 2.3, .row_overhead = 400},
    .open = pg_open,
    .close = pg_close,
    .explain = pg_explain,
    .node_stats = pg_node_stats,
    .node_lag = pg_node_lag,
    .catch_up = pg_catch_up,
    .read_on = pg_read_on,
    .build_progress = pg_build_progress,
    .create = pg_create,
    .connect = pg_connect,
    .disconnect = pg_disconnect,
    .load = pg_load,
    .set_search = pg_set_search,
    .search = pg_search,
    .version = pg_version,
    .server_stats = pg_server_stats,
    .wait_sample = pg_wait_sample,
    .attach = pg_attach,
    .build = pg_build,
    .remove = pg_remove,
    .insert = pg_insert,
    .maintain = pg_maintain,
    .maintenance = "VACUUM (ANALYZE)",
    .rows = pg_rows,
    .rows_node = pg_rows_node,
    .sizes = pg_sizes,
};
