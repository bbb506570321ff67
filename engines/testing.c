/* Built-in engines for measuring the client itself: "null" answers at once, "sleep" after a fixed service time.
 *
 * They hold no index. A search answers with the first k ids the engine was given by load/insert (in the order
 * the loaders delivered them), or with ids 0 .. k-1 when nothing was loaded, so an answer is always k valid,
 * distinct row ids (unless duplicate_every asks for repeats, below). What they are for: with "null" every
 * microsecond a run measures is the client's own (loop, clock reads, histogram, dispatch); with "sleep" the
 * server side is a known, fully concurrent service time (clock_nanosleep to an absolute deadline, so an
 * interrupted sleep resumes the same deadline and the thread uses no CPU while "served"), so a correct client
 * keeps `clients` queries in flight and QPS(n) = n x QPS(1). Any shortfall is the client's.
 * bench/bench_client.c and tests/unit/test_concurrency.c use them.
 *
 * Parameters: sleep takes service_us (0 .. 10,000,000; default 1000) and alternate_us (same range; default 0,
 * off): when set, the engine's connections alternate, the 1st, 3rd, ... serving in service_us and the 2nd, 4th,
 * ... in alternate_us; insert_us (same range; default 0, off) makes each insert call (not the bulk load) take that
 * long. A one-client measurement connects once, so its repeats alternate between the two service
 * times: that is how tests/e2e/94-repeats.t checks a median and a range it knows. null and sleep take duplicate_every (0 .. 1,000,000;
 * default 0, off): when N > 0, every N-th answer of each connection (its N-th, 2N-th, ... search) returns its
 * first id again on its last row, in place of the k-th id, as MariaDB 11.8.9 does in some filtered answers. With
 * one client measuring queries 0, 1, 2, ... in order, the answers of queries N-1, 2N-1, ... repeat an id; that is
 * how the tests drive the scoring of repeated ids (metrics/recall.h) through a whole campaign; and, since one
 * query's answers then differ between its repeats, the scoring of the recall sweep's windows (tests/e2e/96).
 *
 * sleep's servers (0 .. 4096; default 0, off: every query served at once, fully concurrent): at most c queries in
 * service at once in this process, the rest waiting first come first served, each served for service_us. It is a
 * queue computed rather than handed over: under a mutex a search takes the server that frees first (a ticket:
 * the lock's order is the arrival order), its start is max(now, that server's free time) and its end start +
 * service; the server's free time becomes that end, and the search sleeps to its end on the absolute clock. So
 * the c servers serve in arrival order exactly as the FCFS recursion of a c-server queue (Kiefer-Wolfowitz), with
 * no wake-up hand-off added to the service time. Under Poisson arrivals that is M/D/c, whose capacity is c /
 * service (the capacity phase's check against queueing theory, docs/metrics.md "Capacity"). */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "engines/engine.h"

/* Ids kept for answers: k is at most 1000 in a profile. */
#define TESTING_KEEP 1000

typedef struct testing_state {
    const char *name;
    uint64_t service_ns;               /* 0: answer at once */
    pthread_mutex_t load_lock;         /* loads only; searches read `first` without it */
    int64_t first[TESTING_KEEP];
    atomic_int n_first;                /* published after the id is written (release / acquire) */
    atomic_llong rows;
    long duplicate_every;              /* null: every N-th answer of a connection repeats an id; 0 never */
    uint64_t alternate_ns;             /* sleep: every other connection's service time; 0 off */
    uint64_t insert_ns;                /* sleep: each insert call (not load) takes this long; 0 off */
    atomic_uint connects;
    /* sleep with servers: c servers' free times on the monotonic clock (ns), under servers_lock */
    int servers;
    uint64_t *free_at;
    pthread_mutex_t servers_lock;
} testing_state;

/* One per connect: the shared state, and the answers this connection gave (for duplicate_every). */
typedef struct testing_conn {
    testing_state *s;
    uint64_t answers;
    uint64_t service_ns;               /* sleep: this connection's service time */
} testing_conn;

static const char *const null_params[] = {"duplicate_every", NULL};
static const char *const sleep_params[] = {"service_us", "alternate_us", "duplicate_every", "insert_us", "servers", NULL};

static int testing_open_as(const char *name, uint64_t service_ns, void **state, vb_error *err) {
    testing_state *s = calloc(1, sizeof *s);
    if (!s) return vb_error_set(err, "engine", 12, "%s: out of memory", name);
    s->name = name;
    s->service_ns = service_ns;
    pthread_mutex_init(&s->load_lock, NULL);
    pthread_mutex_init(&s->servers_lock, NULL);
    *state = s;
    return VB_OK;
}

static void testing_close(void *state) {
    testing_state *s = state;
    if (!s) return;
    pthread_mutex_destroy(&s->load_lock);
    pthread_mutex_destroy(&s->servers_lock);
    free(s->free_at);
    free(s);
}

static int null_open(const vb_engine_config *cfg, void **state, vb_error *err) {
    long every;
    if (vb_kv_get_long(cfg->params, cfg->n_params, "duplicate_every", 0, 0, 1000000, &every, err) != VB_OK)
        return vb_error_prefix(err, "engine null");
    if (testing_open_as("null", 0, state, err) != VB_OK) return VB_ERROR;
    ((testing_state *)*state)->duplicate_every = every;
    return VB_OK;
}

static int sleep_open(const vb_engine_config *cfg, void **state, vb_error *err) {
    long us, alt, every, ins, servers;
    if (vb_kv_get_long(cfg->params, cfg->n_params, "service_us", 1000, 0, 10000000, &us, err) != VB_OK ||
        vb_kv_get_long(cfg->params, cfg->n_params, "servers", 0, 0, 4096, &servers, err) != VB_OK ||
        vb_kv_get_long(cfg->params, cfg->n_params, "insert_us", 0, 0, 10000000, &ins, err) != VB_OK ||
        vb_kv_get_long(cfg->params, cfg->n_params, "alternate_us", 0, 0, 10000000, &alt, err) != VB_OK ||
        vb_kv_get_long(cfg->params, cfg->n_params, "duplicate_every", 0, 0, 1000000, &every, err) != VB_OK)
        return vb_error_prefix(err, "engine sleep");
    if (testing_open_as("sleep", (uint64_t)us * 1000u, state, err) != VB_OK) return VB_ERROR;
    ((testing_state *)*state)->alternate_ns = (uint64_t)alt * 1000u;
    ((testing_state *)*state)->duplicate_every = every;
    testing_state *s = *state;
    s->insert_ns = (uint64_t)ins * 1000u;
    if (servers > 0) {
        if (alt) {
            testing_close(s);
            *state = NULL;
            return vb_error_set(err, "engine", 22, "engine sleep: servers and alternate_us do not go together (one "
                                "service time per queue); set one of them");
        }
        s->free_at = calloc((size_t)servers, sizeof *s->free_at);
        if (!s->free_at) {
            testing_close(s);
            *state = NULL;
            return vb_error_set(err, "engine", 12, "engine sleep: out of memory for %ld servers", servers);
        }
        s->servers = (int)servers;
    }
    return VB_OK;
}


/* Forgets what was loaded: the next answers are 0 .. k-1 until rows arrive. */
static int testing_create(void *state, const vb_table_spec *spec, vb_error *err) {
    (void)spec;
    (void)err;
    testing_state *s = state;
    pthread_mutex_lock(&s->load_lock);
    atomic_store(&s->n_first, 0);
    atomic_store(&s->rows, 0);
    pthread_mutex_unlock(&s->load_lock);
    return VB_OK;
}

/* A connection owns only its answer count; everything else is the shared state. */
static int testing_connect(void *state, void **conn, vb_error *err) {
    testing_conn *c = calloc(1, sizeof *c);
    if (!c) return vb_error_set(err, "engine", 12, "%s: out of memory", ((testing_state *)state)->name);
    c->s = state;
    unsigned n = atomic_fetch_add(&c->s->connects, 1u);
    c->service_ns = c->s->alternate_ns && (n & 1u) ? c->s->alternate_ns : c->s->service_ns;
    *conn = c;
    return VB_OK;
}

static void testing_disconnect(void *conn) { free(conn); }

static int testing_load(void *conn, const int64_t *ids, const float *vecs, const int32_t *tags, const int32_t *classes,
                        size_t n, vb_error *err) {
    (void)vecs;
    (void)tags, (void)classes;
    (void)err;
    testing_state *s = ((testing_conn *)conn)->s;
    pthread_mutex_lock(&s->load_lock);
    int have = atomic_load_explicit(&s->n_first, memory_order_relaxed);
    for (size_t i = 0; i < n && have < TESTING_KEEP; i++) s->first[have++] = ids[i];
    atomic_store_explicit(&s->n_first, have, memory_order_release);
    atomic_fetch_add(&s->rows, (long long)n);
    pthread_mutex_unlock(&s->load_lock);
    return VB_OK;
}

/* sleep's insert: insert_us per call (a slow writer for the streaming phase's lag: tests/e2e/46-streaming.t), then
 * as load. */
static int sleep_insert(void *conn, const int64_t *ids, const float *vecs, const int32_t *tags, const int32_t *classes,
                        size_t n, vb_error *err) {
    uint64_t ns = ((testing_conn *)conn)->s->insert_ns;
    if (ns) {
        struct timespec ts = {(time_t)(ns / 1000000000u), (long)(ns % 1000000000u)};
        while (nanosleep(&ts, &ts) != 0) {}
    }
    return testing_load(conn, ids, vecs, tags, classes, n, err);
}

/* Rows are not tracked one by one: a removed id may still be answered. */
static int testing_remove(void *conn, const int64_t *ids, size_t n, vb_error *err) {
    (void)ids;
    (void)err;
    atomic_fetch_sub(&((testing_conn *)conn)->s->rows, (long long)n);
    return VB_OK;
}

static int testing_set_search(void *conn, const vb_search_params *p, vb_error *err) {
    (void)conn;
    (void)p;
    (void)err;
    return VB_OK;
}

/* The first k loaded ids, or 0 .. k-1 when none were loaded (fewer than k loaded: a short answer); with
 * duplicate_every N, the connection's N-th, 2N-th, ... answer has its first id again on its last row. */
static inline void answer(testing_conn *c, int k, int64_t *ids, int *n) {
    testing_state *s = c->s;
    int have = atomic_load_explicit(&s->n_first, memory_order_acquire);
    int m = have < k ? have : k;
    if (have == 0) {
        m = k;
        for (int i = 0; i < k; i++) ids[i] = i;
    } else {
        for (int i = 0; i < m; i++) ids[i] = s->first[i];
    }
    *n = m;
    if (s->duplicate_every > 0 && ++c->answers % (uint64_t)s->duplicate_every == 0 && m >= 2) ids[m - 1] = ids[0];
}

static int null_search(void *conn, const float *query, int k, const vb_filter *filter, int64_t *ids, int *n,
                       vb_error *err) {
    (void)query;
    (void)filter;
    (void)err;
    answer(conn, k, ids, n);
    return VB_OK;
}

/* With servers: the end of this query's service, first come first served on the server that frees first (the head
 * comment), in ns on the monotonic clock. */
static uint64_t queue_end(testing_state *s, uint64_t now, uint64_t service_ns) {
    pthread_mutex_lock(&s->servers_lock);
    int best = 0;
    for (int i = 1; i < s->servers; i++)
        if (s->free_at[i] < s->free_at[best]) best = i;
    uint64_t start = s->free_at[best] > now ? s->free_at[best] : now;
    s->free_at[best] = start + service_ns;
    pthread_mutex_unlock(&s->servers_lock);
    return start + service_ns;
}

/* Sleeps to an absolute deadline on the monotonic clock, so EINTR resumes the same deadline. */
static int sleep_search(void *conn, const float *query, int k, const vb_filter *filter, int64_t *ids, int *n,
                        vb_error *err) {
    (void)query;
    (void)filter;
    (void)err;
    testing_conn *c = conn;
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    uint64_t now = (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
    uint64_t end = c->s->servers ? queue_end(c->s, now, c->service_ns) : now + c->service_ns;
    t.tv_sec = (time_t)(end / 1000000000u);
    t.tv_nsec = (long)(end % 1000000000u);
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &t, NULL) != 0) {
    }
    answer(conn, k, ids, n);
    return VB_OK;
}

static int testing_version(void *state, char *buf, size_t len, vb_error *err) {
    (void)err;
    const testing_state *s = state;
    if (s->service_ns && s->servers) snprintf(buf, len, "vbench %s engine, service %llu us, %d servers", s->name,
                                              (unsigned long long)(s->service_ns / 1000u), s->servers);
    else if (s->service_ns) snprintf(buf, len, "vbench %s engine, service %llu us", s->name,
                                (unsigned long long)(s->service_ns / 1000u));
    else snprintf(buf, len, "vbench %s engine", s->name);
    return VB_OK;
}

static int testing_sizes(void *state, vb_sizes *out, vb_error *err) {
    (void)err;
    out->index_bytes = 0;
    out->table_bytes = 0;
    out->rows = atomic_load(&((testing_state *)state)->rows);
    return VB_OK;
}

const vb_engine_ops vb_engine_null = {
    .name = "null",
    .description = "for measuring the client: answers at once with the first k loaded ids (no index, no recall); "
                   "duplicate_every: N repeats an id in every N-th answer of a connection (for tests)",
    .flags = VB_ENGINE_EMBEDDED | VB_ENGINE_STUB,
    .param_names = null_params,
    /* accepts the rows and answers at once (measured by bench-scale: loads at 1.8e8 - 7.8e8 rows/s); without these
     * the estimate of a 10M-row null campaign took the unknown engine's rates and said 4.7 h for 7 min */
    .estimate = {.load_rows_s = 1e8, .insert_rows_s = 1e6, .qps100 = 1e6, .filtered_qps = 1e6},
    .open = null_open,
    .close = testing_close,
    .create = testing_create,
    .connect = testing_connect,
    .disconnect = testing_disconnect,
    .load = testing_load,
    .set_search = testing_set_search,
    .search = null_search,
    .version = testing_version,
    .remove = testing_remove,
    .insert = testing_load,
    .sizes = testing_sizes,
};

const vb_engine_ops vb_engine_sleep = {
    .name = "sleep",
    .description = "for measuring the client: a fixed, fully concurrent service time (service_us, default 1000), "
                   "then the first k loaded ids; servers: c queues them first come first served on c servers (M/D/c)",
    .flags = VB_ENGINE_EMBEDDED | VB_ENGINE_STUB,
    .param_names = sleep_params,
    .open = sleep_open,
    .close = testing_close,
    .create = testing_create,
    .connect = testing_connect,
    .disconnect = testing_disconnect,
    .load = testing_load,
    .set_search = testing_set_search,
    .search = sleep_search,
    .version = testing_version,
    .remove = testing_remove,
    .insert = sleep_insert,
    .sizes = testing_sizes,
};
