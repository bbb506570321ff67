/* Self-test of the concurrency measurement: the workload's window modes against engines whose behaviour is
 * known, and the efficiency rule of SPEC 4 read back through the real results database.
 *
 * Engines: the built-in "sleep" (fixed, fully concurrent service time) and "null"; "test-locked" is the sleep
 * engine behind one global mutex (the server serialises: clients wait inside the driver call). A plain mutex,
 * not a FIFO one: it may favour the thread that just released it, which only decides who is served, while a
 * FIFO hand-off would wake another thread per query and, on a loaded 2-core host, add that wake-up to the
 * service time. The
 * client_lock of the workload models the opposite failure, the Python stand's: clients that wait for an
 * interpreter lock outside the driver call. What each must show:
 *   sleep, n clients        in flight ~ n, efficiency QPS(n) / (n x QPS(1)) ~ 1;
 *   locked engine           in flight ~ n (the waiting is in the call), efficiency ~ 1/n, and shown;
 *   client lock             in flight <= 1, efficiency refused by the view (in flight < n/2);
 *   open loop below capacity: the target rate is achieved, few late starts;
 *   open loop above capacity: late starts, latency from the intended start far above the service time and
 *                           growing with the window (coordinated omission made visible).
 * Windows are short (<= 1 s) and the bounds leave room for a busy 2-core machine; under valgrind (one thread at a
 * time) the timing checks are skipped. */
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "agent/window.h"
#include "agent/workload.h"
#include "config/plan.h"
#include "config/profile.h"
#include "coordinator/store.h"
#include "tests/tap.h"
#include "util/clock.h"

#define DIM 4
#define NQ 100
#define K 10
#define MS 1000000ull

static float g_queries[NQ * DIM];

static int under_valgrind(void) {
    const char *p = getenv("LD_PRELOAD");
    return p && strstr(p, "vgpreload") != NULL;
}

/* A formatted test name (tap.h's is_int / contains print their name as given). */
static const char *nm(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static const char *nm(const char *fmt, ...) {
    static char buf[4][512];
    static int next;
    char *b = buf[next++ % 4];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(b, sizeof buf[0], fmt, ap);
    va_end(ap);
    return b;
}

/* A timing check: asserted normally, reported as skipped under valgrind. */
#define timing_ok(cond, ...)                                                                                       \
    (under_valgrind() ? ok(1, "# SKIP timing under valgrind") : ok((cond), __VA_ARGS__))

/* ---- the locked engine: the sleep engine behind one global mutex ------------------------------------------ */

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;

static int locked_search(void *conn, const float *q, int k, const vb_filter *f, int64_t *ids, int *n, vb_error *err) {
    pthread_mutex_lock(&g_lock);
    int rc = vb_engine_sleep.search(conn, q, k, f, ids, n, err);
    pthread_mutex_unlock(&g_lock);
    return rc;
}

static vb_engine_ops g_locked_ops;

/* ---- helpers ----------------------------------------------------------------------------------------------- */

static vb_engine *open_engine(const char *name, const char *service_us) {
    vb_kv params[1] = {{"service_us", service_us}};
    vb_engine_config cfg = {params, service_us ? 1 : 0, NULL};
    vb_engine *e = NULL;
    vb_error err = {0};
    if (vb_engine_open(name, &cfg, &e, &err) != VB_OK) printf("#   open %s: %s\n", name, err.message);
    return e;
}

static vb_workload_config window_config(vb_engine *e, int clients, uint64_t window_ns, uint64_t warmup_ns) {
    vb_workload_config c = {
        .engine = e, .clients = clients, .queries = g_queries, .n_queries = NQ, .dim = DIM, .k = K,
        .search = {.ef_search = 100}, .window_ns = window_ns, .warmup_ns = warmup_ns,
    };
    return c;
}

static double in_flight(const vb_workload_result *r) { return r->elapsed_s > 0 ? r->in_call_s / r->elapsed_s : 0; }

static double pct_ms(const vb_histogram *h, double p) {
    return h ? (double)vb_histogram_value_at_percentile(h, p) / 1e6 : 0;
}

/* One closed-loop window; the result is kept by the caller (freed with vb_workload_result_free). */
static int run_window(vb_engine *e, int clients, pthread_mutex_t *client_lock, vb_workload_result *r,
                      const char *what) {
    vb_workload_config cfg = window_config(e, clients, 500 * MS, 100 * MS);
    cfg.client_lock = client_lock;
    vb_error err = {0};
    int rc = vb_workload_run(&cfg, r, &err);
    is_int(rc, VB_OK, nm("%s, %d clients: runs (%s)", what, clients, err.message));
    if (rc == VB_OK)
        printf("# %-12s %2d clients: qps %7.0f  in flight %6.3f  p50 %.3f ms  fraction in call %.3f .. %.3f  "
               "client cpu %.3f s\n", what, clients, r->qps, in_flight(r), pct_ms(r->latency, 50),
               r->fraction_in_call[0], r->fraction_in_call[clients - 1], r->client_cpu_s);
    return rc;
}

/* ---- the results database: windows in, the v_concurrency view out --------------------------------------- */

static const char *const PROFILE =
    "name: conc\n"
    "datasets:\n"
    "  - {name: d1, source: synthetic, rows: 1000}\n"
    "engines:\n"
    "  - name: sleep\n"
    "  - name: locked\n"
    "  - name: client-lock\n"
    "phases:\n"
    "  concurrency: {clients: [1, 4, 8], repeats: 2, window_s: 1, warmup_s: 0.1}\n";

typedef struct results_db {
    char dir[64], path[128];
    vb_profile *profile;
    vb_plan *plan;
    vb_store *store;
} results_db;

static int db_open(results_db *db) {
    vb_error err = {0};
    memset(db, 0, sizeof *db);
    snprintf(db->dir, sizeof db->dir, "/tmp/vbench-conc.XXXXXX");
    if (!mkdtemp(db->dir)) return VB_ERROR;
    snprintf(db->path, sizeof db->path, "%s/c.sqlite", db->dir);
    int rc = vb_profile_parse(PROFILE, strlen(PROFILE), "conc.yml", &db->profile, &err);
    if (rc == VB_OK) rc = vb_plan_build(db->profile, &db->plan, &err);
    if (rc == VB_OK) rc = vb_store_open(db->path, 1, &db->store, &err);
    if (rc == VB_OK) rc = vb_store_init_campaign(db->store, db->profile, NULL, db->plan, &err);
    ok(rc == VB_OK, nm("results database %s with the plan of 3 engines x 3 x 2 windows (%s)", db->path, err.message));
    return rc;
}

/* Commits the window as the phase would send it: through vb_window_wire_fill and vb_store_commit_result. */
static void db_commit(results_db *db, const char *engine, int clients, int repeat, const vb_workload_result *r) {
    char key[256], rkey[300];
    snprintf(key, sizeof key, "conc/%s/d1/concurrency/clients=%d,repeat=%d", engine, clients, repeat);
    snprintf(rkey, sizeof rkey, "%s#window", key);
    vb_window_wire w;
    vb_window_wire_fill(&w, r, repeat, 100);
    Vbench__Result res = VBENCH__RESULT__INIT;
    res.result_key = rkey;
    res.item_key = key;
    res.completes_item = 1;
    res.body_case = VBENCH__RESULT__BODY_WINDOW;
    res.window = &w.msg;
    int dup = 0;
    vb_error err = {0};
    int rc = vb_store_commit_result(db->store, &res, engine, "d1", "test", &dup, &err);
    ok(rc == VB_OK && !dup, nm("%s, %d clients, repeat %d: window committed (%s)", engine, clients, repeat,
                               err.message));
    vb_window_wire_free(&w);
}

typedef struct view_row {
    int found;
    double in_flight, efficiency;
    int efficiency_null;
    char refused[256];
} view_row;

static view_row db_row(results_db *db, const char *engine, int clients) {
    view_row v = {0};
    sqlite3_stmt *st = NULL;
    sqlite3_prepare_v2(vb_store_db(db->store),
                       "SELECT in_flight, efficiency, efficiency_refused FROM v_concurrency WHERE engine = ? AND "
                       "clients = ? AND repeat = 1", -1, &st, NULL);
    sqlite3_bind_text(st, 1, engine, -1, SQLITE_STATIC);
    sqlite3_bind_int(st, 2, clients);
    if (st && sqlite3_step(st) == SQLITE_ROW) {
        v.found = 1;
        v.in_flight = sqlite3_column_double(st, 0);
        v.efficiency_null = sqlite3_column_type(st, 1) == SQLITE_NULL;
        v.efficiency = sqlite3_column_double(st, 1);
        const unsigned char *t = sqlite3_column_text(st, 2);
        snprintf(v.refused, sizeof v.refused, "%s", t ? (const char *)t : "");
    }
    sqlite3_finalize(st);
    return v;
}

static void db_close(results_db *db) {
    char f[160];
    vb_store_close(&db->store);
    vb_plan_destroy(&db->plan);
    vb_profile_destroy(&db->profile);
    static const char *const suffix[] = {"", "-wal", "-shm", "-journal"};
    for (int i = 0; i < 4; i++) {
        snprintf(f, sizeof f, "%s%s", db->path, suffix[i]);
        unlink(f);
    }
    rmdir(db->dir);
}

/* ---- closed loop: sleep, locked engine, client lock ------------------------------------------------------ */

static const int g_counts[3] = {1, 4, 8};

/* Runs 1, 4, 8 and again 1 client against one engine (optionally under a client lock) and commits each window
 * (the second 1-client window as repeat 2). Returns QPS per count in qps[3], QPS(1) being the mean of the two
 * 1-client windows as in the view, so a foreign load that drifts during the series cancels out; in flight per
 * count in flight[3]. */
static void run_series(results_db *db, const char *label, vb_engine *e, pthread_mutex_t *client_lock, double qps[3],
                       double flight[3]) {
    for (int i = 0; i < 4; i++) {
        vb_workload_result r;
        int at = i % 3, repeat = i < 3 ? 1 : 2;
        if (i < 3) qps[at] = flight[at] = 0;
        if (run_window(e, g_counts[at], client_lock, &r, label) != VB_OK) continue;
        qps[at] = i < 3 ? r.qps : (qps[at] + r.qps) / 2;
        if (i < 3) flight[at] = in_flight(&r);
        db_commit(db, label, g_counts[at], repeat, &r);
        vb_workload_result_free(&r);
    }
}

static void test_closed_loop(void) {
    results_db db;
    if (db_open(&db) != VB_OK) return;
    double qps[3], flight[3];

    /* Fixed service time, fully concurrent: the client keeps every query in flight. */
    vb_engine *e = open_engine("sleep", "1000");
    run_series(&db, "sleep", e, NULL, qps, flight);
    for (int i = 1; i < 3; i++) {
        int n = g_counts[i];
        double eff = qps[0] > 0 ? qps[i] / (n * qps[0]) : 0;
        timing_ok(flight[i] > 0.95 * n && flight[i] <= n + 1e-9,
                  "sleep, %d clients: in flight %.3f within 5 %% of %d", n, flight[i], n);
        timing_ok(eff > 0.9 && eff < 1.3, "sleep, %d clients: efficiency QPS(n)/(n x QPS(1)) = %.3f near 1", n, eff);
        view_row v = db_row(&db, "sleep", n);
        timing_ok(v.found && !v.efficiency_null && v.refused[0] == '\0' && fabs(v.efficiency - eff) < 1e-9,
                  "sleep, %d clients: the view shows the same efficiency %.3f (refusal: '%s')", n, v.efficiency,
                  v.refused);
    }
    vb_engine_close(&e);

    /* The server serialises: in flight stays ~n (the clients wait inside the call), efficiency ~1/n, shown. */
    e = open_engine("test-locked", "1000");
    run_series(&db, "locked", e, NULL, qps, flight);
    for (int i = 1; i < 3; i++) {
        int n = g_counts[i];
        double eff = qps[0] > 0 ? qps[i] / (n * qps[0]) : 0;
        timing_ok(flight[i] > 0.95 * n, "locked engine, %d clients: in flight %.3f ~ %d", n, flight[i], n);
        timing_ok(eff * n > 0.5 && eff * n < 1.3, "locked engine, %d clients: efficiency %.3f ~ 1/%d", n, eff, n);
        view_row v = db_row(&db, "locked", n);
        timing_ok(v.found && !v.efficiency_null && fabs(v.efficiency - eff) < 1e-9,
                  "locked engine, %d clients: the view shows the low efficiency %.3f, not a refusal ('%s')", n,
                  v.efficiency, v.refused);
    }
    vb_engine_close(&e);

    /* The client serialises (a GIL-bound client): in flight <= 1, and the view refuses the efficiency. */
    static pthread_mutex_t gil = PTHREAD_MUTEX_INITIALIZER;
    e = open_engine("sleep", "1000");
    run_series(&db, "client-lock", e, &gil, qps, flight);
    for (int i = 1; i < 3; i++) {
        int n = g_counts[i];
        ok(flight[i] < 1.3, "client lock, %d clients: in flight %.3f near 1 (< 1.3)", n, flight[i]);
        timing_ok(flight[i] > 0.8, "client lock, %d clients: in flight %.3f: the lock is always held by someone", n,
                  flight[i]);
        view_row v = db_row(&db, "client-lock", n);
        ok(v.found && v.efficiency_null, "client lock, %d clients: the view shows no efficiency", n);
        contains(v.refused, "refused: in flight", nm("client lock, %d clients: and says why: %s", n, v.refused));
        contains(v.refused, nm("< %d/2", n), nm("client lock, %d clients: names the rule", n));
    }
    view_row one = db_row(&db, "client-lock", 1);
    ok(one.found && !one.efficiency_null && one.efficiency > 0.8 && one.efficiency < 1.2,
       "client lock, 1 client: efficiency ~1 (%.3f: the window over the mean of the two 1-client windows)",
       one.efficiency);
    vb_engine_close(&e);
    db_close(&db);
}

/* ---- open loop ------------------------------------------------------------------------------------------- */

static vb_workload_config open_config(vb_engine *e, int clients, double rate, uint64_t window_ns, uint64_t warmup_ns) {
    vb_workload_config c = window_config(e, clients, window_ns, warmup_ns);
    c.loop = VB_LOOP_OPEN;
    c.target_rate = rate;
    c.seed = 42;
    return c;
}

static void print_open(const char *what, const vb_workload_result *r) {
    printf("# %s: target %.0f/s achieved %.0f/s, %llu queries, %llu late, backlog %llu, latency from intended "
           "p50 %.3f p99 %.3f max %.3f ms, around the call p50 %.3f p99 %.3f ms, lag p50 %.3f p99 %.3f ms, "
           "in flight %.3f\n", what, r->target_rate, r->qps, (unsigned long long)r->queries,
           (unsigned long long)r->late_starts, (unsigned long long)r->backlog, pct_ms(r->latency, 50),
           pct_ms(r->latency, 99), (double)vb_histogram_max(r->latency) / 1e6, pct_ms(r->service, 50),
           pct_ms(r->service, 99), pct_ms(r->lag, 50), pct_ms(r->lag, 99), in_flight(r));
}

static void test_open_below_capacity(void) {
    /* 4 clients at 0.2 ms: capacity ~ 16,000/s; 4,000/s puts each client at ~25 % utilisation. */
    vb_engine *e = open_engine("sleep", "200");
    vb_workload_config cfg = open_config(e, 4, 4000, 1000 * MS, 100 * MS);
    vb_workload_result r;
    vb_error err = {0};
    int rc = vb_workload_run(&cfg, &r, &err);
    is_int(rc, VB_OK, nm("open loop below capacity: runs (%s)", err.message));
    if (rc != VB_OK) return;
    print_open("open loop, 4 clients x 0.2 ms, 4000/s", &r);
    ok(r.lag && r.service && r.target_rate == 4000, "open loop: lag and service histograms, target rate kept");
    timing_ok(r.qps > 0.95 * 4000 && r.qps < 1.05 * 4000, "below capacity: achieved %.0f/s within 5 %% of 4000/s",
              r.qps);
    /* Typically under 1 %; a loaded 2-core host delays some wake-ups past the 1 ms tolerance (6 % seen with four
     * CPU hogs running). Above capacity it is over 80 %. */
    timing_ok(r.late_starts < r.queries / 10, "below capacity: few late starts (%llu of %llu)",
              (unsigned long long)r.late_starts, (unsigned long long)r.queries);
    timing_ok(pct_ms(r.lag, 50) < 0.5, "below capacity: median lag %.3f ms", pct_ms(r.lag, 50));
    timing_ok(r.backlog < 20, "below capacity: no backlog at the window's end (%llu)", (unsigned long long)r.backlog);
    timing_ok(pct_ms(r.latency, 50) < 1.0, "below capacity: median latency from the intended start %.3f ms is near "
              "the service time", pct_ms(r.latency, 50));
    ok(vb_histogram_count(r.lag) == r.queries && vb_histogram_count(r.service) == r.queries,
       "open loop: every counted query has a lag and a service time");
    vb_workload_result_free(&r);
    ok(r.lag == NULL && r.service == NULL, "open loop: result free releases the extra histograms");

    /* The same seed gives the same schedule; the arrivals do not depend on the engine. */
    vb_engine *null = open_engine("null", NULL);
    vb_workload_result a, b;
    cfg = open_config(null, 2, 20000, 200 * MS, 0);
    int rca = vb_workload_run(&cfg, &a, &err), rcb = vb_workload_run(&cfg, &b, &err);
    ok(rca == VB_OK && rcb == VB_OK, "null engine, open loop, twice: runs");
    if (rca == VB_OK && rcb == VB_OK) {
        uint64_t na = a.queries + a.warmup_queries + a.backlog, nb = b.queries + b.warmup_queries + b.backlog;
        /* Queries cut by the window's end go uncounted either way: allow one per client. */
        ok(na + 2 >= nb && nb + 2 >= na, "same seed, same schedule: %llu and %llu arrivals",
           (unsigned long long)na, (unsigned long long)nb);
        timing_ok(a.qps > 0.9 * 20000 && a.qps < 1.1 * 20000, "null engine: 20,000/s achieved (%.0f/s)", a.qps);
        print_open("null engine, 2 clients, 20000/s", &a);
    }
    vb_workload_result_free(&a);
    vb_workload_result_free(&b);
    vb_engine_close(&null);
    vb_engine_close(&e);
}

static void test_open_above_capacity(void) {
    /* 2 clients at 1 ms: capacity ~ 1,900/s; asked for 4,000/s the schedule runs away from the clients. */
    vb_engine *e = open_engine("sleep", "1000");
    double p50[2] = {0, 0};
    const uint64_t windows[2] = {300 * MS, 600 * MS};
    for (int i = 0; i < 2; i++) {
        vb_workload_config cfg = open_config(e, 2, 4000, windows[i], 0);
        vb_workload_result r;
        vb_error err = {0};
        int rc = vb_workload_run(&cfg, &r, &err);
        is_int(rc, VB_OK, nm("open loop above capacity, %.1f s window: runs (%s)", (double)windows[i] / 1e9,
                             err.message));
        if (rc != VB_OK) continue;
        print_open(nm("open loop, 2 clients x 1 ms, 4000/s, %.1f s window", (double)windows[i] / 1e9), &r);
        p50[i] = pct_ms(r.latency, 50);
        timing_ok(r.qps < 0.6 * 4000, "above capacity: achieved %.0f/s, not the 4000/s asked for", r.qps);
        timing_ok(r.late_starts > r.queries * 8 / 10, "above capacity: most starts are late (%llu of %llu)",
                  (unsigned long long)r.late_starts, (unsigned long long)r.queries);
        timing_ok(r.backlog > 0, "above capacity: arrivals left unstarted at the window's end (%llu)",
                  (unsigned long long)r.backlog);
        timing_ok(p50[i] > 10 * pct_ms(r.service, 50),
                  "above capacity: latency from the intended start (p50 %.3f ms) is far above the time in the call "
                  "(p50 %.3f ms): coordinated omission shows", p50[i], pct_ms(r.service, 50));
        timing_ok(in_flight(&r) > 1.9, "above capacity: both clients stay busy (in flight %.3f)", in_flight(&r));
        vb_workload_result_free(&r);
    }
    timing_ok(p50[1] > 1.4 * p50[0], "above capacity: latency grows with time (p50 %.3f ms over 0.3 s, %.3f ms over "
              "0.6 s)", p50[0], p50[1]);
    vb_engine_close(&e);
}

/* ---- configuration and progress --------------------------------------------------------------------------- */

typedef struct progress_log {
    int calls, warmup_calls, window_calls, final;
    uint64_t last_done, last_total;
    int backwards;
} progress_log;

static void on_progress(void *arg, int in_window, uint64_t done, uint64_t total) {
    progress_log *p = arg;
    p->calls++;
    if (in_window) p->window_calls++;
    else p->warmup_calls++;
    if (in_window && p->window_calls > 1 && done < p->last_done) p->backwards = 1;
    if (in_window) p->last_done = done;
    p->last_total = total;
    if (in_window && done == total) p->final++;
}

static void test_progress_and_config(void) {
    vb_engine *e = open_engine("sleep", "1000");
    progress_log log = {0};
    vb_workload_config cfg = window_config(e, 2, 300 * MS, 100 * MS);
    cfg.progress = on_progress;
    cfg.progress_arg = &log;
    cfg.progress_ns = 50 * MS;
    vb_workload_result r;
    vb_error err = {0};
    is_int(vb_workload_run(&cfg, &r, &err), VB_OK, "progress: runs");
    vb_workload_result_free(&r);
    timing_ok(log.warmup_calls >= 1 && log.window_calls >= 4, "progress: reported in warm-up (%d) and window (%d)",
              log.warmup_calls, log.window_calls);
    ok(log.final == 1 && log.last_done == log.last_total && log.last_total == 300 * MS && !log.backwards,
       "progress: ends once with done = total = the window, never goes back");

    cfg = window_config(e, 2, 100 * MS, 0);
    cfg.loop = VB_LOOP_OPEN;
    is_int(vb_workload_run(&cfg, &r, &err), VB_ERROR, "open loop without a target rate: error");
    contains(err.message, "target rate", nm("says what is missing: %s", err.message));
    cfg.loop = VB_LOOP_CLOSED;
    cfg.target_rate = 100;
    is_int(vb_workload_run(&cfg, &r, &err), VB_ERROR, "closed loop with a target rate: error");
    contains(err.message, "open loop", nm("says where it belongs: %s", err.message));
    static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
    cfg = window_config(e, 2, 0, 0);
    cfg.queries_budget = 10;
    cfg.client_lock = &lock;
    is_int(vb_workload_run(&cfg, &r, &err), VB_ERROR, "client lock in budget mode: error");
    cfg = window_config(e, 2, 100 * MS, 0);
    cfg.loop = (vb_workload_loop)7;
    is_int(vb_workload_run(&cfg, &r, &err), VB_ERROR, "unknown loop: error");
    vb_engine_close(&e);

    /* The test engines answer with the first k loaded ids, or 0 .. k-1 before any load. */
    e = open_engine("null", NULL);
    vb_conn *c = NULL;
    int64_t ids[K];
    int n = 0;
    vb_table_spec spec = {.dim = DIM, .capacity = 100};
    ok(vb_engine_create(e, &spec, &err) == VB_OK && vb_engine_connect(e, &c, &err) == VB_OK, "null: create, connect");
    ok(vb_conn_search(c, g_queries, K, NULL, ids, &n, &err) == VB_OK && n == K && ids[0] == 0 && ids[K - 1] == K - 1,
       "null: nothing loaded, answers 0 .. k-1");
    int64_t load_ids[3] = {70, 71, 72};
    ok(vb_conn_load(c, load_ids, g_queries, NULL, 3, &err) == VB_OK, "null: load");
    ok(vb_conn_search(c, g_queries, K, NULL, ids, &n, &err) == VB_OK && n == 3 && ids[0] == 70 && ids[2] == 72,
       "null: answers the loaded ids (3 of k = 10: a short answer)");
    char ver[128];
    ok(vb_engine_version(e, ver, sizeof ver, &err) == VB_OK && strstr(ver, "null"), "null: version '%s'", ver);
    vb_conn_close(&c);
    vb_engine_close(&e);
    vb_kv bad[1] = {{"service_us", "-5"}};
    vb_engine_config bcfg = {bad, 1, NULL};
    is_int(vb_engine_open("sleep", &bcfg, &e, &err), VB_ERROR, "sleep: negative service_us refused");
    contains(err.message, "service_us", nm("names the parameter: %s", err.message));
    const vb_engine_ops *ops = vb_engine_find("sleep");
    ok(ops && (ops->flags & VB_ENGINE_EMBEDDED) && strstr(ops->description, "measuring the client"),
       "sleep: built in, embedded, described as a tool for measuring the client");
}

int main(void) {
    for (int i = 0; i < NQ * DIM; i++) g_queries[i] = (float)i;
    g_locked_ops = vb_engine_sleep;
    g_locked_ops.name = "test-locked";
    g_locked_ops.description = "the sleep engine behind one global FIFO lock";
    g_locked_ops.search = locked_search;
    is_int(vb_engine_register(&g_locked_ops), VB_OK, "register test-locked");

    test_progress_and_config();
    test_closed_loop();
    test_open_below_capacity();
    test_open_above_capacity();
    return done_testing();
}
