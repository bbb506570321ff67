/* The engine interface: one table of function pointers per engine family, registered by name.
 *
 * An engine instance (vb_engine) is the shared side: an embedded index, or the address of a server plus its
 * settings. A connection (vb_conn) is what one client thread owns: a socket to the server, or for embedded
 * engines a handle on the shared index. Phases call the wrappers below, never the ops directly; the wrappers
 * check optional methods in one place and make sure every failure carries a message.
 *
 * THE CONTRACT every adapter keeps. engines/conformance.c checks it, with the same script, against every
 * registered engine that can run (tests/unit/test_engines.c: the embedded ones; tests/e2e/63-conformance.t:
 * the servers through tests/tools/vb_conformance.c). A new adapter is done when that script passes.
 *
 * Status. Every op returns one of three values and nothing else:
 *   VB_OK     done; every out-parameter is filled.
 *   VB_ERROR  the request cannot succeed as given: a bad parameter, an unsupported metric, wrong credentials,
 *             a statement the server refuses. Calling again changes nothing; the item fails with err.
 *   VB_RETRY  transient: the connection was lost, the server is restarting or cannot be reached yet, a
 *             serialisation failure or deadlock the adapter did not absorb. The same call may succeed later.
 *   err.message is the engine's own text (the server's words, and the statement or step that failed), one
 *   line; err.domain names the engine (or "config"); err.code is the engine's own number (SQLSTATE class,
 *   server errno) for the message only. Callers decide on the status, never on the code or the text.
 *
 * Who reconnects after VB_RETRY.
 *   Connection ops (load, insert, remove, set_search, search): the CALLER. A vb_conn whose op returned
 *   VB_RETRY is done for: close it (vb_conn_close), open a new one (vb_engine_connect, which itself returns
 *   VB_RETRY while the server cannot be reached) and set the search parameters again (vb_conn_set_search).
 *   An adapter may also heal a connection on its next call; callers must not count on it.
 *   Engine ops (create, attach, build, maintain, sizes, version, explain): the ENGINE. Its administrative
 *   connection is reopened by the next call (engines/adapter_common.h runs a call once more on a fresh one), so
 *   the caller just calls again; VB_RETRY means the server cannot be reached now.
 *
 * Rows. An id is unique in the table.
 *   load      bulk load, after create, of ids that are not in the table; several connections load at once.
 *   insert    an UPSERT: a live id is replaced (its vector and its tag), a removed id comes back, a new id is
 *             added. Never a duplicate-key error: a churn batch is sent again after a restart or a retry.
 *   remove    ids that are absent (never loaded, or removed already) are skipped, not an error.
 *   tags      tags == NULL means "no tag" for every row of the call: such a row is a real row (unfiltered
 *             searches find it, sizes count it) that never passes a tag filter.
 *   classes   the row's real class (vb_dataset train_class: a label of the data, e.g. Fashion-MNIST's ten), stored
 *             beside the tags and selected on by VB_FILTER_CLASS_EQ; classes == NULL means "no class" for every
 *             row of the call (a dataset without classes): such a row never passes a class filter. An insert
 *             replaces the class with the vector.
 * Search.
 *   search    writes at most k distinct ids into ids_out, closest first for the table's metric (ties in any
 *             order), and their count into *n_out; fewer than k only when fewer rows qualify (or the engine's
 *             search gives up, e.g. a filter its graph walk cannot satisfy). A removed row never appears; with a
 *             filter, only rows that pass it (vb_filter below).
 *   set_search belongs to ITS connection (a session setting, never a global one): two connections search at
 *             different ef_search at the same time, each with its own, until its next set_search.
 *
 * Memory. Ops write results into the caller's buffers (ids_out, buf, plan, stage, out) and never return memory
 *   for the caller to free; the handles made by open and connect are released by close and disconnect (through
 *   vb_engine_close and vb_conn_close, which also null the caller's pointer). Input arrays (ids, vecs, tags,
 *   classes, query) are borrowed for the duration of the call only.
 *
 * Threads. One connection per client thread: a vb_conn is used by one thread at a time and owns everything per
 *   client (socket, prepared statements, ef_search, buffers). Engine ops may run while connections work (the
 *   engine serialises its own administrative connection); build_progress runs in a thread of its own while build
 *   runs. Close every connection before closing the engine. */
#ifndef VB_ENGINES_ENGINE_H
#define VB_ENGINES_ENGINE_H

#include <stddef.h>
#include <stdint.h>

#include "datasets/distance.h"
#include "util/error.h"
#include "util/kv.h"

typedef struct vb_engine_config {
    const vb_kv *params;
    size_t n_params;
    const char *data_dir;   /* a directory the engine may own for files (saved index, sockets); may be NULL */
    /* The bound of one driver call, in seconds (connect, a read, a write, a statement): no call on a connection of
     * this engine blocks longer, whatever the server does (hung, SIGSTOPped, unreachable). The agent sets it from
     * limits.phase_timeout_s (Assign.io_timeout_s); 0 leaves the driver's own defaults. */
    long io_timeout_s;
} vb_engine_config;

/* What the table/index looks like. capacity is the largest row count the phase will hold. */
typedef struct vb_table_spec {
    size_t dim;
    vb_metric metric;
    size_t capacity;
    int m;                  /* HNSW M */
    int ef_construction;
    /* attach only: up to this many rows may be absent (a churn in progress deleted them and has not inserted them
     * all again); 0: the table must hold exactly capacity rows (anything less is a load that did not finish).
     * attach_missing >= capacity: a load in progress, any number of rows in this table's schema (an engine with
     * VB_ENGINE_LOAD_RESUMES finds it without its index, which the build makes after the load). */
    size_t attach_missing;
} vb_table_spec;

typedef struct vb_search_params {
    int ef_search;
} vb_search_params;

/* A row filter over the attribute columns a row carries: the deterministic synthetic columns of every tagged row
 * (datasets/dataset.h): tag (vb_dataset_tag), tag2 (vb_dataset_tag2) and label (vb_dataset_label); and the
 * dataset's real class (the load's classes array). The predicate kinds of the filtered phase (engines/filter.h
 * makes one and writes it in each engine's language):
 *   VB_FILTER_TAG_BELOW  range:    tag < tag_below
 *   VB_FILTER_LABEL_EQ   equality: label = label
 *   VB_FILTER_AND        and:      tag < tag_below AND tag2 < tag2_below (independent columns: shares multiply)
 *   VB_FILTER_CLASS_EQ   class:    class = cls (the predicates label_own, label_other and class = L all search
 *                                  with it; the first two choose cls per query, so the filter differs per call)
 * A row loaded with tags == NULL has none of the three synthetic columns and passes none of their filters. A row
 * loaded with tags has its tag from the array and its tag2 and label from its id (vb_dataset_tag2 /
 * vb_dataset_label): the adapters store all three (they are functions of the id). A row loaded with classes ==
 * NULL has no class and passes no class filter; with classes, its class is the array's (without one the column is
 * NULL in pgvector, -1 in the MySQL family's NOT NULL column, absent from a document or a vector set's
 * attributes). */
typedef enum {
    VB_FILTER_NONE = 0, VB_FILTER_TAG_BELOW = 1, VB_FILTER_LABEL_EQ = 2, VB_FILTER_AND = 3, VB_FILTER_CLASS_EQ = 4
} vb_filter_kind;
#define VB_FILTER_KINDS 5         /* kinds 0 .. VB_FILTER_CLASS_EQ */
typedef struct vb_filter {
    vb_filter_kind kind;
    int32_t tag_below;        /* TAG_BELOW, AND */
    int32_t label;            /* LABEL_EQ */
    int32_t tag2_below;       /* AND */
    int32_t cls;              /* CLASS_EQ */
} vb_filter;

/* The server's own cumulative counts of the commands it ran (since it started, or since its statistics were last
 * reset), read around each window and each load for the validity cross-check: what the server says it ran must
 * equal what vbench sent. -1: the engine cannot say. */
typedef struct vb_counters {
    int64_t searches;       /* kNN commands (Redis: VSIM calls) */
    int64_t writes;         /* row writes (Redis: VADD calls) */
} vb_counters;

/* A snapshot of the server's own accounting of the benchmark's kNN statement, cumulative since the server started
 * (or its statistics were reset): read before a window's warm-up and after its end, the difference is what the
 * server says it did for the window (docs/metrics.md "Server time"). -1 / < 0: the engine cannot say.
 *   pgvector  pg_stat_statements: calls and total_exec_time of the table's kNN statements
 *   MariaDB   performance_schema, events_statements_summary_global_by_event_name, statement/com/Execute:
 *             COUNT_STAR and SUM_TIMER_WAIT (a prepared execution has no digest row; the count equals
 *             Com_stmt_execute, so it counts every prepared execution: the window's are the searches)
 *   Redis     INFO commandstats, cmdstat_VSIM: calls and usec (threaded VSIM: from before its thread starts) */
typedef struct vb_server_stats {
    int64_t calls;          /* executions of the kNN statement */
    double exec_s;          /* the server's execution time of them, seconds */
} vb_server_stats;

/* What the server's sessions running the benchmark's kNN statement wait on, added up over samples (the wait_sample
 * op): per (class, event) the session-samples found in it. A session on CPU (no wait) is class "CPU", event "CPU". */
#define VB_WAIT_EVENTS_MAX 32
typedef struct vb_wait_event {
    char wait_class[48];
    char event[80];
    uint64_t samples;
} vb_wait_event;
typedef struct vb_wait_profile {
    size_t n;
    vb_wait_event ev[VB_WAIT_EVENTS_MAX];   /* beyond the last slot, samples join class "other", event "other" */
    uint64_t rounds;                        /* wait_sample calls that succeeded */
    int timed;                              /* 0: samples are session-samples (what each session did at each call:
                                             * pgvector); 1: microseconds waited, from the server's own timing of its
                                             * waits (MariaDB), to which the agent adds on CPU as class "CPU";
                                             * 2: calls per latency bucket of the server's own statistics (Redis) */
} vb_wait_profile;
/* Adds samples of (cls, event) into p (the slot of the pair, a new one, or the last one as "other"). */
void vb_wait_profile_add(vb_wait_profile *p, const char *cls, const char *event, uint64_t samples);

/* An engine's metrics as a mask of these bits; 0 in the ops table means every metric. */
#define VB_METRIC_BIT(m) (1u << (unsigned)(m))

/* One server of an engine's topology (issue 39; engines/engine.h VB_ENGINE_REPLICAS), as the node_stats op reads
 * it from the server itself: node 0 the primary, K a replica; -1 where the engine cannot say. */
typedef struct vb_node_stats {
    int node;
    char role[16];          /* "primary", "replica" */
    int64_t rows;           /* rows of the table on that server */
    int64_t index_bytes;
    int64_t table_bytes;
    int64_t searches;       /* the server's own count of kNN statements since it started (pg_stat_statements) */
    int64_t lag_bytes;      /* a replica's WAL not yet replayed, against the primary's position now; 0 the primary */
    int64_t build_ms;       /* a shard's own index build, ms; <= 0: not measured (a router, a replica) */
} vb_node_stats;
#define VB_ENGINE_MAX_NODES 16

typedef struct vb_sizes {
    int64_t index_bytes;    /* -1 when the engine cannot say */
    int64_t table_bytes;
    int64_t rows;
} vb_sizes;

enum {
    VB_ENGINE_EMBEDDED = 1u << 0,         /* runs inside the agent process: no server, no orchestrator */
    VB_ENGINE_BUILD_ON_INSERT = 1u << 1,  /* the graph grows on insert: build is part of load */
    VB_ENGINE_FILTER = 1u << 2,           /* search honours vb_filter: the range kind (VB_FILTER_TAG_BELOW) */
    VB_ENGINE_FILTER_EQ = 1u << 8,        /* and the equality kind (VB_FILTER_LABEL_EQ) */
    VB_ENGINE_FILTER_AND = 1u << 9,       /* and the and kind (VB_FILTER_AND) */
    VB_ENGINE_FILTER_CLASS = 1u << 13,    /* stores the load's classes and honours VB_FILTER_CLASS_EQ */
    VB_ENGINE_LOAD_RESUMES = 1u << 12,    /* a server engine whose index is built after the load (build): the
                                           * load's committed batches stay in the table over a restart, and a
                                           * load can continue into it with insert (upserts) before the build;
                                           * attach with attach_missing >= capacity finds such a table without
                                           * its index (agent/phase_build.c load_resume) */
    /* Topology (issue 39; config/profile.h vb_profile_engine_nodes): the orchestrator starts several servers of the
     * recipe and gives the adapter each node's connect parameters as node.K.KEY (node 0's as today's KEY). */
    VB_ENGINE_SHARDS = 1u << 14,          /* takes `shards: N`: the rows split over N shard servers behind a router
                                           * (node 0), each shard with its own index */
    VB_ENGINE_REPLICAS = 1u << 15,        /* takes `replicas: R`: R read replicas of the primary (node 0), made from it
                                           * when the servers start (they replay the build), caught up before a
                                           * measurement; reads spread over all */
    VB_ENGINE_STUB = 1u << 3,             /* a stand-in for measuring the client (engines/testing.c): its answers
                                           * are not nearest neighbours, so the contract's search rules do not
                                           * apply and the conformance script skips it */
    VB_ENGINE_MAINTAIN_REBUILDS = 1u << 16, /* maintain is a rebuild of the table and its index (as costly as a
                                           * build), not routine upkeep: the mixed phase's after-maintenance
                                           * window runs it, churn does not (the reference campaign maintained
                                           * only PostgreSQL after its rewrite, with VACUUM (ANALYZE)) */
};

/* What the runtime estimate (coordinator/estimate.c) takes for an engine on a host where nothing was measured yet:
 * rates at dimension 128 and 20,000 rows (the estimate scales them to the dataset's), order-of-magnitude figures
 * from this project's runs on a small machine (2 cores), not a promise. load_rows_s 0 (a zeroed struct): the
 * estimate's rates for an engine it knows nothing of. */
typedef struct vb_engine_estimate {
    double load_rows_s;     /* bulk load, rows/s (of one loader) */
    double build_rows_s;    /* index build after the load, rows/s; 0: no such step (the graph grows on insert) */
    double insert_rows_s;   /* upserts (churn, streaming), rows/s */
    double qps100;          /* one client's queries/s at ef_search 100 */
    double filtered_qps;    /* one client's filtered queries/s at ef_search 100 */
    double copies;          /* a server's data on disk: copies x 4 x dim + row_overhead bytes per row; 0: none grows */
    double row_overhead;
    const char *no_disk;    /* copies 0 for a server: why nothing on disk grows with the rows (the preflight says it) */
    int brute_force;        /* 1: every query scans every row: queries/s is 2e9 / (rows x dim), whatever ef_search,
                             * and no rate is scaled by the rows' graph (exact) */
} vb_engine_estimate;

/* One row of vb_engine_rows: non-zero stops the listing. */
typedef int (*vb_row_fn)(void *arg, int64_t id, const float *vec);

typedef struct vb_engine_ops {
    const char *name;
    const char *description;
    unsigned flags;
    const char *const *param_names; /* NULL-terminated list of the profile parameters it accepts */
    unsigned metrics;               /* the metrics it compares by (VB_METRIC_BIT); 0: all. A campaign refuses a
                                     * dataset of another metric before anything starts (config/profile_engines.c) */
    /* The subset of param_names that change only how queries run (a session setting per query), not the index:
     * configurations of one entry that differ only in them search one build (config/profile.c share_builds,
     * through vb_profile_check_engines). NULL: every parameter shapes the index. */
    const char *const *search_params;
    vb_engine_estimate estimate;    /* the runtime estimate's defaults (above); zero: the unknown engine's */

    /* Required. The contract above applies to every op; the notes here are what is particular to each. */
    int (*open)(const vb_engine_config *cfg, void **state, vb_error *err);
    void (*close)(void *state);
    int (*create)(void *state, const vb_table_spec *spec, vb_error *err);   /* drop anything old, make empty */
    /* A new connection for one client thread; VB_RETRY while the server cannot be reached. */
    int (*connect)(void *state, void **conn, vb_error *err);
    void (*disconnect)(void *conn);
    /* New ids only (bulk); tags may be NULL (rows without a tag), classes too (rows without a class). */
    int (*load)(void *conn, const int64_t *ids, const float *vecs, const int32_t *tags, const int32_t *classes,
                size_t n, vb_error *err);
    /* This connection's search parameters, kept until its next set_search. */
    int (*set_search)(void *conn, const vb_search_params *p, vb_error *err);
    /* Writes up to k distinct ids, closest first, into ids_out and their count into *n_out. */
    int (*search)(void *conn, const float *query, int k, const vb_filter *filter, int64_t *ids_out, int *n_out,
                  vb_error *err);
    int (*version)(void *state, char *buf, size_t len, vb_error *err);

    /* Optional (NULL = not supported / nothing to do). */
    int (*attach)(void *state, const vb_table_spec *spec, int *found, vb_error *err); /* reuse existing data */
    int (*build)(void *state, vb_error *err);                   /* index build after bulk load */
    int (*persist)(void *state, vb_error *err);                 /* make state durable for attach */
    int (*remove)(void *conn, const int64_t *ids, size_t n, vb_error *err);          /* absent ids: skipped */
    /* An upsert: live ids are replaced, removed ids come back, new ids are added. */
    int (*insert)(void *conn, const int64_t *ids, const float *vecs, const int32_t *tags, const int32_t *classes,
                  size_t n, vb_error *err);
    int (*maintain)(void *state, vb_error *err);               /* VACUUM and the like, after churn and mixed */
    const char *maintenance;    /* what maintain runs, as a result names it ("VACUUM (ANALYZE)"); NULL: none */
    int (*sizes)(void *state, vb_sizes *out, vb_error *err);
    /* Every row the engine holds, fn(arg, id, vec) once per row in any order: vec its dim floats as stored (valid
     * during the call), NULL where the engine cannot return them. For a check after the writes (the mixed phase
     * holds the rows against its write log), with no write in flight. fn returns non-zero to stop (an error). */
    int (*rows)(void *state, vb_row_fn fn, void *arg, vb_error *err);
    /* Read replicas: the rows of replica node (1 .. nodes - 1) as rows lists the primary's, on a connection of its
     * own; *listed = 0 (VB_OK) when there is no such replica (or the nodes each hold a part: shards). After
     * catch_up, each replica's rows are the primary's: the mixed phase holds every node against its write log. */
    int (*rows_node)(void *state, int node, vb_row_fn fn, void *arg, int *listed, vb_error *err);
    /* The query plan the server uses for the kNN query at ef_search with filter (may be NULL): *uses_index = 1
     * when it scans the vector index, plan (may be NULL) gets its text. Servers only; embedded engines have no
     * planner. */
    int (*explain)(void *state, const vb_table_spec *spec, int ef_search, int k, const vb_filter *filter,
                   int *uses_index, char *plan, size_t plan_len, vb_error *err);
    /* While build runs in another thread: how far it is (*done of *total, in the unit stage names, e.g.
     * "tuples loaded into the graph"). Called from a thread of its own; must not use the build's connection. */
    int (*build_progress)(void *state, uint64_t *done, uint64_t *total, char *stage, size_t stage_len, vb_error *err);
    /* Per node of a topology (vb_node_stats), up to cap into out, *n of them; engines of one server: NULL. */
    int (*node_stats)(void *state, vb_node_stats *out, size_t cap, size_t *n, vb_error *err);
    /* Read replicas (VB_ENGINE_REPLICAS): each node's replication lag now, lag[K] in bytes of the primary's log not yet
     * applied on replica K (0 for node 0), up to cap, *n of them; cheap enough to sample a few times a second while
     * writes run, from a thread of its own (connections of its own). NULL, or *n = 0: one server. */
    int (*node_lag)(void *state, int64_t *lag, size_t cap, size_t *n, vb_error *err);
    /* Read replicas: waits until every replica has applied the primary's log as it is now (replay lag 0), at most
     * the phase's bound, failing with the replica and how far behind it stayed; called before a measurement that
     * follows writes (build, churn's after, streaming at rest). NULL or VB_OK at once: one server. */
    int (*catch_up)(void *state, vb_error *err);
    /* Read replicas: conn's searches go to node from now on (0 the primary, K a replica, -1 the last replica),
     * *chosen the node; the streaming phase's freshness probe reads on a replica. NULL: one server. */
    int (*read_on)(void *conn, int node, int *chosen, vb_error *err);
    /* The server's command counts (vb_counters), on the administrative connection. */
    int (*counters)(void *state, vb_counters *out, vb_error *err);
    /* The server's own accounting of the kNN statement (vb_server_stats), on the administrative connection. */
    int (*server_stats)(void *state, vb_server_stats *out, vb_error *err);
    /* One sample of the server's sessions that are running the kNN statement now, added into acc (one per session,
     * vb_wait_profile). Called every few milliseconds from a thread of its own while a window runs, on a
     * connection of its own (not the clients'). acc NULL: a probe, samples nothing: VB_OK when sampling is on,
     * VB_ERROR with the reason when it is not (a configuration that turns it off). */
    int (*wait_sample)(void *state, vb_wait_profile *acc, vb_error *err);
    /* Embedded engines: the bytes the engine keeps in the client agent's own memory (anonymous: it cannot be paged
     * out) for rows x dim under the profile's parameters, for the preflight. NULL: nothing that grows with the rows
     * (the test engines). The memory-mapped corpus is not counted: it is page cache, which the kernel reclaims and
     * the agent reads through once (docs/benchmarks.md "The stand at scale"). */
    double (*client_bytes)(const vb_kv *params, size_t n_params, double rows, double dim);
    /* What client_bytes counts, as the preflight names it ("its graph, with a copy of each vector"). */
    const char *client_keeps;
} vb_engine_ops;

typedef struct vb_engine vb_engine;
typedef struct vb_conn vb_conn;

/* Registry. Built-in engines are registered on first use; vb_engine_register adds more (tests). */
const vb_engine_ops *vb_engine_find(const char *name);
int vb_engine_register(const vb_engine_ops *ops);
/* Fills names[] with up to cap registered engine names; returns the total count. */
size_t vb_engine_list(const char **names, size_t cap);

/* 1 when the engine compares by metric m (its ops' metrics mask, 0 = all). */
int vb_engine_supports_metric(const vb_engine_ops *ops, vb_metric m);

/* Wrappers. open returns VB_ERROR for an unknown name, listing the known ones. */
int vb_engine_open(const char *name, const vb_engine_config *cfg, vb_engine **out, vb_error *err);
void vb_engine_close(vb_engine **e);
const vb_engine_ops *vb_engine_ops_of(const vb_engine *e);
int vb_engine_create(vb_engine *e, const vb_table_spec *spec, vb_error *err);
int vb_engine_attach(vb_engine *e, const vb_table_spec *spec, int *found, vb_error *err); /* found=0 if no op */
int vb_engine_build(vb_engine *e, vb_error *err);
int vb_engine_persist(vb_engine *e, vb_error *err);
int vb_engine_maintain(vb_engine *e, vb_error *err);
/* Lists the engine's rows (the ops' rows); *listed = 0, VB_OK, when the engine has no rows op. */
int vb_engine_rows(vb_engine *e, vb_row_fn fn, void *arg, int *listed, vb_error *err);
/* Lists replica node's rows (the ops' rows_node); *listed = 0, VB_OK, without the op or without that replica. */
int vb_engine_rows_node(vb_engine *e, int node, vb_row_fn fn, void *arg, int *listed, vb_error *err);
/* What vb_engine_maintain runs (the ops' maintenance): "none" without a maintain op. Static text. */
const char *vb_engine_maintenance(const vb_engine *e);
int vb_engine_sizes(vb_engine *e, vb_sizes *out, vb_error *err);      /* -1 fields when no op */
int vb_engine_version(vb_engine *e, char *buf, size_t len, vb_error *err);
/* VB_OK with -1 fields when the engine has no counters op. */
int vb_engine_counters(vb_engine *e, vb_counters *out, vb_error *err);
/* VB_OK with *n = 0 when the engine has no node_stats op (one server). */
int vb_engine_node_stats(vb_engine *e, vb_node_stats *out, size_t cap, size_t *n, vb_error *err);
/* VB_OK with *n = 0 when the engine has no node_lag op; VB_OK at once without catch_up; *chosen = 0 without read_on. */
int vb_engine_node_lag(vb_engine *e, int64_t *lag, size_t cap, size_t *n, vb_error *err);
int vb_engine_catch_up(vb_engine *e, vb_error *err);
int vb_conn_read_on(vb_conn *c, int node, int *chosen, vb_error *err);
/* VB_ERROR when the engine has no wait_sample op. */
int vb_engine_wait_sample(vb_engine *e, vb_wait_profile *acc, vb_error *err);
/* VB_OK with calls = -1, exec_s = -1 when the engine has no server_stats op. */
int vb_engine_server_stats(vb_engine *e, vb_server_stats *out, vb_error *err);
/* What vbench sent through e, to compare with vb_engine_counters: search calls of the connections closed so far
 * (a connection's count joins at vb_conn_close, so the hot path touches nothing shared) and rows given to load and
 * insert (counted at each call). */
void vb_engine_sent(vb_engine *e, uint64_t *searches, uint64_t *writes);
/* VB_RETRY when the engine cannot say (no op, or nothing to report yet). */
int vb_engine_build_progress(vb_engine *e, uint64_t *done, uint64_t *total, char *stage, size_t stage_len,
                             vb_error *err);
/* VB_OK with *uses_index = -1 when the engine has no explain op. */
int vb_engine_explain(vb_engine *e, const vb_table_spec *spec, int ef_search, int k, const vb_filter *filter,
                      int *uses_index, char *plan, size_t plan_len, vb_error *err);

int vb_engine_connect(vb_engine *e, vb_conn **out, vb_error *err);
void vb_conn_close(vb_conn **c);
/* Adds the search calls made on c so far to vb_engine_sent now, instead of at vb_conn_close, and counts again from
 * 0: for a long-lived connection beside the measured ones (the streaming phase's freshness probe), whose searches
 * must be in the counts of each result it spans. Not for the hot path (an atomic add). */
void vb_conn_sent_flush(vb_conn *c);
int vb_conn_load(vb_conn *c, const int64_t *ids, const float *vecs, const int32_t *tags, const int32_t *classes,
                 size_t n, vb_error *err);
int vb_conn_set_search(vb_conn *c, const vb_search_params *p, vb_error *err);
int vb_conn_search(vb_conn *c, const float *query, int k, const vb_filter *filter, int64_t *ids_out, int *n_out,
                   vb_error *err);
int vb_conn_remove(vb_conn *c, const int64_t *ids, size_t n, vb_error *err);
int vb_conn_insert(vb_conn *c, const int64_t *ids, const float *vecs, const int32_t *tags, const int32_t *classes,
                   size_t n, vb_error *err);

/* Built-in engines (engines/<name>.c|cc). */
extern const vb_engine_ops vb_engine_hnswlib;
extern const vb_engine_ops vb_engine_exact;
extern const vb_engine_ops vb_engine_null;    /* engines/testing.c: for measuring the client */
extern const vb_engine_ops vb_engine_sleep;
extern const vb_engine_ops vb_engine_mariadb, vb_engine_alisql, vb_engine_doris;   /* engines/mysql_family.c */
extern const vb_engine_ops vb_engine_pgvector;    /* engines/pgvector.c */
extern const vb_engine_ops vb_engine_valkey;      /* engines/valkey.c */
extern const vb_engine_ops vb_engine_mongodb;     /* engines/mongodb.c: written from the documentation */
extern const vb_engine_ops vb_engine_redis;       /* engines/redis.c: Redis 8 vector sets */

#endif
