/* The client's query loop: worker threads that each own a CPU, one engine connection and one latency
 * histogram. The calling (coordinator) thread only starts them, fixes the window and merges after join.
 *
 * Start protocol, as in pgbench ("connected", then "go"):
 *   launch gate  - threads are created while the coordinator holds a mutex; if creating one fails, the
 *                  others see `abort` at the gate and leave before touching a barrier, so a partial start
 *                  can never deadlock;
 *   connected    - each worker pins itself, connects and applies the search parameters, then waits;
 *   coordinator  - reads every worker's setup result; on a failure sets `abort`, otherwise fixes the window
 *                  t0 = now + warm-up once, for everyone;
 *   go           - every worker starts its loop (or leaves, on abort).
 * Per query a worker reads the monotonic clock right before and right after the driver call, so latency and
 * in-call time are the call's alone and whatever the client does between calls (recording, looping, waiting for
 * a CPU or for a lock) is outside the call: in flight measures the client instead of restating the client count.
 * (An earlier loop read the clock once, the end of one call serving as the start of the next; it saved ~30 ns
 * a query but counted the client's own time as in-call time.) The deadline check uses the reading before the
 * call. An open-loop worker sleeps to each intended start with clock_nanosleep on an absolute deadline, with its
 * timer slack at 1 ns so the kernel does not batch its wake-ups. What a worker measures lives in its locals and
 * then in its own cache-line-aligned slot; nothing is shared or locked per query except a relaxed load of the
 * stop flag (and the client_lock of the tests, which exists to be contended; and with keep_answers, in both
 * loops, one compare-and-swap on the query's slot byte before the call and a release store after it, outside the
 * timed interval). While a window runs the calling
 * thread sleeps, waking a few times a second for the progress callback. */
#include "util/mix.h"
#include "agent/workload.h"

#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>

#include "util/clock.h"

#define VB_WORKLOAD_MAX_CLIENTS 4096

typedef struct shared {
    const vb_workload_config *cfg;
    pthread_mutex_t launch;
    pthread_barrier_t connected, go;
    int abort;              /* set by the coordinator under `launch` or before `go`; read after them */
    uint64_t t_go;          /* window mode: when `go` opened; the open loop's schedule starts here */
    uint64_t t0, t1;        /* window mode: [t0, t1), fixed before `go` */
    double t0_wall;         /* window mode: t0 on the wall clock (epoch seconds) */
    atomic_int running;     /* workers that have not finished their loop */
    pthread_mutex_t ended_lock;  /* budget mode with progress: a worker that ends signals `ended`, so that the */
    pthread_cond_t ended;        /* reporting thread returns with the last one, not a progress step later */
    size_t budget;          /* budget mode: queries 0 .. budget-1 */
    int64_t *answers;       /* budget mode: the result's arrays; each worker writes only its own slice */
    int *n_answer;
    uint64_t *answer_ns;
    /* window mode with keep_answers: per query, the state of its answer slot (answers + i*k): SLOT_FREE,
     * SLOT_WRITING (claimed by one client, whose call writes into it), SLOT_KEPT (a counted answer, read-only) */
    _Atomic unsigned char *slot;
} shared;

enum { SLOT_FREE = 0, SLOT_WRITING = 1, SLOT_KEPT = 2 };

typedef struct worker {
    int index;
    pthread_t thread;
    shared *sh;
    vb_conn *conn;
    vb_histogram *hist;
    vb_histogram *lag, *service;/* open loop only */
    vb_histogram *own, *corrected;   /* open loop only: the client's own delay; the latency less it */
    int64_t *scratch;           /* k ids, for answers nobody keeps (window mode) */
    /* keep_answers: per query, this client's counted answers identical to the kept one; its extra answers */
    uint32_t *same;
    size_t n_extra, cap_extra;
    size_t *extra_query;
    int *extra_n;
    int64_t *extra_ids;
    uint64_t unscored;
    int setup_rc;
    vb_error setup_err;
    /* Results, written by the worker once at the end of its loop. */
    uint64_t queries, errors, warmup_queries, warmup_errors, edge_queries;
    uint64_t in_call_ns, cpu_ns;
    uint64_t start_ns, end_ns;  /* first clock reading after `go`; last reading */
    _Atomic uint64_t answered;  /* budget mode: queries of its slice done (answered or failed), for progress; stored
                                 * relaxed by this worker only, read by the calling thread */
    uint64_t late, backlog;     /* open loop */
    uint64_t scheduled;         /* open loop: arrivals with an intended start in the window */
    int lost, stopped;
    int has_error;
    uint64_t first_error_ns;
    char first_error[1024];
} __attribute__((aligned(64))) worker;


/* The filter query qi searches with: its own under a per-query predicate (cfg->filters), else the run's. */
static inline const vb_filter *query_filter(const vb_workload_config *cfg, size_t qi) {
    return cfg->filters ? &cfg->filters[qi] : &cfg->filter;
}
static int stop_requested(atomic_int *stop) {
    return stop && atomic_load_explicit(stop, memory_order_relaxed) != 0;
}

/* Writes the CPUs this thread may run on as "0-3,8" into buf, for error messages. */
static void describe_allowed_cpus(char *buf, size_t len) {
    cpu_set_t set;
    size_t used = 0;
    buf[0] = '\0';
    if (sched_getaffinity(0, sizeof set, &set) != 0) {
        snprintf(buf, len, "(unknown)");
        return;
    }
    for (int c = 0; c < CPU_SETSIZE && used < len; c++) {
        if (!CPU_ISSET(c, &set)) continue;
        int last = c;
        while (last + 1 < CPU_SETSIZE && CPU_ISSET(last + 1, &set)) last++;
        int n = last > c ? snprintf(buf + used, len - used, "%s%d-%d", used ? "," : "", c, last)
                         : snprintf(buf + used, len - used, "%s%d", used ? "," : "", c);
        if (n < 0) break;
        used += (size_t)n;
        c = last;
    }
}

/* Pins the calling thread to one CPU; the message names the CPU and the ones that were allowed. */
static int pin_self(int client, int cpu, vb_error *err) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    int rc = pthread_setaffinity_np(pthread_self(), sizeof set, &set);
    if (rc == 0) return VB_OK;
    char why[128], allowed[256];
    const char *msg = strerror_r(rc, why, sizeof why);
    describe_allowed_cpus(allowed, sizeof allowed);
    return vb_error_set(err, "workload", rc, "client %d: cannot pin to CPU %d: %s (this process may use CPUs %s)",
                        client, cpu, msg, allowed);
}

/* Opens the worker's connection and applies the search parameters. On failure the connection is closed. */
static int open_conn(worker *w, vb_error *err) {
    const vb_workload_config *cfg = w->sh->cfg;
    const vb_engine_ops *ops = vb_engine_ops_of(cfg->engine);
    const char *name = ops && ops->name ? ops->name : "engine";
    int rc = vb_engine_connect(cfg->engine, &w->conn, err);
    if (rc != VB_OK) {
        w->conn = NULL;
        return vb_error_prefix(err, "client %d: connecting to %s", w->index, name);
    }
    if (vb_conn_set_search(w->conn, &cfg->search, err) != VB_OK) {
        vb_conn_close(&w->conn);
        return vb_error_prefix(err, "client %d: setting search parameters on %s", w->index, name);
    }
    return VB_OK;
}

/* Before the `connected` barrier: pin, connect, set search. Nothing here is measured. */
static int setup(worker *w) {
    const vb_workload_config *cfg = w->sh->cfg;
    if (cfg->cpus && cfg->n_cpus > 0 && pin_self(w->index, cfg->cpus[w->index % cfg->n_cpus], &w->setup_err) != VB_OK)
        return VB_ERROR;
    return open_conn(w, &w->setup_err);
}

/* Handles one failed query: keeps the first message, and on VB_RETRY reconnects once. Returns VB_ERROR when
 * the worker has lost its connection for good. */
static int on_failure(worker *w, int rc, size_t qi, const vb_error *qerr, uint64_t when) {
    if (!w->has_error) {
        w->has_error = 1;
        w->first_error_ns = when;
        snprintf(w->first_error, sizeof w->first_error, "client %d, query %zu%s: %.960s", w->index, qi,
                 rc == VB_RETRY ? " (transient)" : "", qerr->message[0] ? qerr->message : "(no message)");
    }
    if (rc != VB_RETRY) return VB_OK;
    vb_error rerr;
    vb_error_clear(&rerr);
    vb_conn_close(&w->conn);
    if (open_conn(w, &rerr) == VB_OK) return VB_OK;
    w->lost = 1;
    size_t used = strlen(w->first_error);
    snprintf(w->first_error + used, sizeof w->first_error - used, "; client lost, %s", rerr.message);
    return VB_ERROR;
}

/* An engine that claims more ids than asked for has already written past the buffer: report, do not trust. */
static int check_count(int rc, int n, int k, vb_error *qerr) {
    if (rc == VB_OK && (n < 0 || n > k))
        return vb_error_set(qerr, "workload", 0, "engine returned %d ids for k = %d", n, k);
    return rc;
}

/* Budget mode: this worker's contiguous slice of the first `budget` queries, each once, answers kept. */
static void run_budget(worker *w) {
    const vb_workload_config *cfg = w->sh->cfg;
    const size_t clients = (size_t)cfg->clients, budget = w->sh->budget, k = (size_t)cfg->k;
    const size_t lo = budget * (size_t)w->index / clients, hi = budget * (size_t)(w->index + 1) / clients;
    uint64_t queries = 0, errors = 0, in_call = 0;
    vb_error qerr;
    vb_error_clear(&qerr);

    uint64_t cpu0 = vb_thread_cpu_ns();
    uint64_t s = vb_now_ns(), e = s;
    w->start_ns = s;
    for (size_t qi = lo; qi < hi; qi++) {
        if (stop_requested(cfg->stop)) {
            w->stopped = 1;
            break;
        }
        int n = 0;
        s = vb_now_ns();
        int rc = vb_conn_search(w->conn, cfg->queries + qi * cfg->dim, cfg->k, query_filter(cfg, qi),
                                w->sh->answers + qi * k, &n, &qerr);
        e = vb_now_ns();
        in_call += e - s;
        w->sh->answer_ns[qi] = e - s;
        rc = check_count(rc, n, cfg->k, &qerr);
        if (rc == VB_OK) {
            queries++;
            w->sh->n_answer[qi] = n;
            vb_histogram_record(w->hist, e - s);
        } else {
            errors++;
            if (on_failure(w, rc, qi, &qerr, e) != VB_OK) break;
        }
        atomic_store_explicit(&w->answered, queries + errors, memory_order_relaxed);
    }
    w->cpu_ns = vb_thread_cpu_ns() - cpu0;
    w->end_ns = e;
    w->queries = queries;
    w->errors = errors;
    w->in_call_ns = in_call;
}

/* keep_answers, before the call: the client claims query qi's slot when it is free, and its call then writes
 * the answer there (no copy); otherwise into scratch. Returns where the answer goes. */
static int64_t *answer_dst(worker *w, size_t qi, int *claimed) {
    shared *sh = w->sh;
    unsigned char expect = SLOT_FREE;
    *claimed = atomic_compare_exchange_strong_explicit(&sh->slot[qi], &expect, SLOT_WRITING, memory_order_acquire,
                                                       memory_order_relaxed);
    return *claimed ? sh->answers + qi * (size_t)sh->cfg->k : w->scratch;
}

/* keep_answers, after the call (outside the timed interval): a counted answer in a claimed slot is kept there;
 * one in scratch is counted with the kept answer when it is identical (the usual case: same query, same index),
 * else kept apart as an extra answer while there is room (n_queries per client), else counted as unscored. An
 * answer that does not count (warm-up, the window's edge, a failure) frees the slot it claimed. */
static void answer_keep(worker *w, size_t qi, int claimed, int counted, int n) {
    shared *sh = w->sh;
    const size_t k = (size_t)sh->cfg->k;
    if (claimed) {
        if (counted) {
            sh->n_answer[qi] = n;
            w->same[qi]++;
        }
        atomic_store_explicit(&sh->slot[qi], counted ? SLOT_KEPT : SLOT_FREE, memory_order_release);
        return;
    }
    if (!counted) return;
    if (atomic_load_explicit(&sh->slot[qi], memory_order_acquire) == SLOT_KEPT && sh->n_answer[qi] == n &&
        memcmp(sh->answers + qi * k, w->scratch, (size_t)n * sizeof *w->scratch) == 0) {
        w->same[qi]++;
        return;
    }
    if (w->n_extra == w->cap_extra) {
        size_t cap = w->cap_extra ? w->cap_extra * 2 : 64;
        if (cap > sh->cfg->n_queries) cap = sh->cfg->n_queries;
        size_t *q = cap > w->cap_extra ? realloc(w->extra_query, cap * sizeof *q) : NULL;
        if (q) w->extra_query = q;
        int *nn = q ? realloc(w->extra_n, cap * sizeof *nn) : NULL;
        if (nn) w->extra_n = nn;
        int64_t *ids = nn ? realloc(w->extra_ids, cap * k * sizeof *ids) : NULL;
        if (ids) w->extra_ids = ids;
        if (!ids) {
            w->unscored++;
            return;
        }
        w->cap_extra = cap;
    }
    w->extra_query[w->n_extra] = qi;
    w->extra_n[w->n_extra] = n;
    memcpy(w->extra_ids + w->n_extra * k, w->scratch, (size_t)n * sizeof *w->scratch);
    w->n_extra++;
}

/* Window mode: walk the whole query set cyclically from this client's offset until the deadline. A query
 * counts only if it started and finished inside [t0, t1); in-call time is clipped to the window. */
static void run_window(worker *w) {
    const vb_workload_config *cfg = w->sh->cfg;
    const uint64_t t0 = w->sh->t0, t1 = w->sh->t1;
    const size_t n_queries = cfg->n_queries;
    size_t qi = (size_t)w->index * n_queries / (size_t)cfg->clients;
    uint64_t queries = 0, errors = 0, warm = 0, warm_errors = 0, edge = 0, in_call = 0, cpu0 = 0;
    pthread_mutex_t *const lock = cfg->client_lock;
    const int keep = cfg->keep_answers;
    int in_window = 0;
    vb_error qerr;
    vb_error_clear(&qerr);

    uint64_t s = vb_now_ns(), last = s;
    w->start_ns = s;
    for (;;) {
        if (stop_requested(cfg->stop)) {
            w->stopped = 1;
            break;
        }
        int claimed = 0;
        int64_t *dst = keep ? answer_dst(w, qi, &claimed) : w->scratch;
        if (lock) pthread_mutex_lock(lock);
        s = last = vb_now_ns();
        if (s >= t1) {
            if (lock) pthread_mutex_unlock(lock);
            if (claimed) answer_keep(w, qi, 1, 0, 0);
            break;
        }
        if (!in_window && s >= t0) { /* once: the measured period starts here */
            in_window = 1;
            cpu0 = vb_thread_cpu_ns();
        }
        int n = 0;
        int rc = vb_conn_search(w->conn, cfg->queries + qi * cfg->dim, cfg->k, query_filter(cfg, qi), dst, &n, &qerr);
        uint64_t e = last = vb_now_ns();
        if (lock) pthread_mutex_unlock(lock);
        uint64_t lo = s > t0 ? s : t0, hi = e < t1 ? e : t1;
        if (hi > lo) in_call += hi - lo;
        rc = check_count(rc, n, cfg->k, &qerr);
        if (keep) answer_keep(w, qi, claimed, rc == VB_OK && s >= t0 && e < t1, n);
        if (rc == VB_OK) {
            if (s >= t0 && e < t1) {
                queries++;
                vb_histogram_record(w->hist, e - s);
            } else if (s < t0) {
                warm++;
            } else {
                edge++;     /* started inside, ended at or after the window's end */
            }
        } else {
            if (s >= t0) errors++;
            else warm_errors++;
            if (on_failure(w, rc, qi, &qerr, e) != VB_OK) break;
        }
        if (++qi == n_queries) qi = 0;
    }
    w->cpu_ns = in_window ? vb_thread_cpu_ns() - cpu0 : 0;
    w->end_ns = last;
    w->queries = queries;
    w->errors = errors;
    w->warmup_queries = warm;
    w->warmup_errors = warm_errors;
    w->edge_queries = edge;
    w->in_call_ns = in_call;
}


/* An exponential gap with the given mean: -ln(1 - u) x mean, u uniform in [0, 1) from 53 random bits. */
static inline uint64_t next_gap(uint64_t *state, double mean_ns) {
    double u = (double)(vb_splitmix64(state) >> 11) * 0x1.0p-53;
    return (uint64_t)(-log1p(-u) * mean_ns);
}

/* Sleeps until the monotonic clock reads `until`; EINTR resumes the same deadline. */
static void sleep_until(uint64_t until) {
    struct timespec ts = {(time_t)(until / 1000000000ull), (long)(until % 1000000000ull)};
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) != 0) {
    }
}

/* Open loop: Poisson arrivals at target_rate / clients from `go` on; every query starts at its intended time
 * or, when the client is behind, as soon as the previous one returns. A query counts when its actual start
 * and its end are inside [t0, t1); its latency runs from the intended start. The worker stops when the next
 * arrival is due after the window or the window is over; the arrivals due before t1 it never started are
 * the backlog. Long waits are cut into 100 ms naps so the stop flag is seen. */
static void run_open(worker *w) {
    const vb_workload_config *cfg = w->sh->cfg;
    const uint64_t t0 = w->sh->t0, t1 = w->sh->t1;
    const uint64_t tolerance = cfg->late_tolerance_ns ? cfg->late_tolerance_ns : VB_WORKLOAD_LATE_NS;
    const double mean_gap = 1e9 * (double)cfg->clients / cfg->target_rate;
    const size_t n_queries = cfg->n_queries;
    size_t qi = (size_t)w->index * n_queries / (size_t)cfg->clients;
    uint64_t queries = 0, errors = 0, warm = 0, warm_errors = 0, edge = 0, in_call = 0, cpu0 = 0, late = 0;
    pthread_mutex_t *const lock = cfg->client_lock;
    const int keep = cfg->keep_answers;
    int in_window = 0, claimed = 0, have_dst = 0;
    int64_t *dst = w->scratch;
    vb_error qerr;
    vb_error_clear(&qerr);
    uint64_t rng = cfg->seed ^ (0xd1b54a32d192ed03ull * (uint64_t)(w->index + 1));
    prctl(PR_SET_TIMERSLACK, 1ul, 0ul, 0ul, 0ul);

    uint64_t intended = w->sh->t_go + next_gap(&rng, mean_gap), scheduled = 0, prev_end = w->sh->t_go;
    scheduled += intended >= t0 && intended < t1;
    uint64_t s = vb_now_ns();
    w->start_ns = s;
    while (intended < t1) {
        if (stop_requested(cfg->stop)) {
            w->stopped = 1;
            break;
        }
        /* keep_answers: the slot is claimed once per arrival, before the clock reading that starts the call (and
         * held while the client sleeps to the arrival), as run_window claims it */
        if (keep && !have_dst) {
            dst = answer_dst(w, qi, &claimed);
            have_dst = 1;
        }
        s = vb_now_ns();
        if (s < intended) {
            sleep_until(intended - s > 100000000ull ? s + 100000000ull : intended);
            continue;
        }
        if (s >= t1) break;
        if (!in_window && s >= t0) {
            in_window = 1;
            cpu0 = vb_thread_cpu_ns();
        }
        if (lock) {
            pthread_mutex_lock(lock);
            s = vb_now_ns();
            if (s >= t1) {
                pthread_mutex_unlock(lock);
                break;
            }
        }
        int n = 0;
        int rc = vb_conn_search(w->conn, cfg->queries + qi * cfg->dim, cfg->k, query_filter(cfg, qi), dst, &n, &qerr);
        uint64_t e = vb_now_ns();
        if (lock) pthread_mutex_unlock(lock);
        uint64_t lo = s > t0 ? s : t0, hi = e < t1 ? e : t1;
        if (hi > lo) in_call += hi - lo;
        rc = check_count(rc, n, cfg->k, &qerr);
        if (keep) {
            answer_keep(w, qi, claimed, rc == VB_OK && s >= t0 && e < t1, n);
            claimed = have_dst = 0;
        }
        if (rc == VB_OK) {
            if (s >= t0 && e < t1) {
                uint64_t lag = s - intended;
                /* the client's own delay: from when it could have sent the query (its intended start, or the end of
                 * its previous query when that was later) to when it did: its wake-up and loop, not the engine's */
                uint64_t ready = intended > prev_end ? intended : prev_end, own = s > ready ? s - ready : 0;
                queries++;
                late += lag > tolerance;
                vb_histogram_record(w->hist, e - intended);
                vb_histogram_record(w->service, e - s);
                vb_histogram_record(w->lag, lag < VB_HIST_MIN_NS ? VB_HIST_MIN_NS : lag);
                vb_histogram_record(w->own, own < VB_HIST_MIN_NS ? VB_HIST_MIN_NS : own);
                vb_histogram_record(w->corrected, e - intended - own);
            } else if (s < t0) {
                warm++;
            } else {
                edge++;     /* started inside, ended at or after the window's end */
            }
        } else {
            if (s >= t0) errors++;
            else warm_errors++;
            if (on_failure(w, rc, qi, &qerr, e) != VB_OK) break;
            if (rc == VB_RETRY) e = vb_now_ns();
        }
        s = prev_end = e;
        intended += next_gap(&rng, mean_gap);
        scheduled += intended >= t0 && intended < t1;
        if (++qi == n_queries) qi = 0;
    }
    if (claimed) answer_keep(w, qi, 1, 0, 0);   /* claimed for an arrival that never started: free again */
    if (!w->stopped && !w->lost) {
        /* The window ran to its end for this client, even if its last arrival came earlier. */
        uint64_t backlog = 0;
        while (intended < t1) {   /* each arrival was counted in scheduled when it was drawn */
            backlog++;
            intended += next_gap(&rng, mean_gap);
            scheduled += intended >= t0 && intended < t1;
        }
        w->backlog = backlog;
        if (s < t1) s = t1;
    }
    w->cpu_ns = in_window ? vb_thread_cpu_ns() - cpu0 : 0;
    w->end_ns = s;
    w->queries = queries;
    w->errors = errors;
    w->warmup_queries = warm;
    w->warmup_errors = warm_errors;
    w->edge_queries = edge;
    w->in_call_ns = in_call;
    w->late = late;
    w->scheduled = scheduled;
}

static void *worker_main(void *arg) {
    worker *w = arg;
    shared *sh = w->sh;
    pthread_mutex_lock(&sh->launch);
    int abort_early = sh->abort;
    pthread_mutex_unlock(&sh->launch);
    if (abort_early) return NULL;

    w->setup_rc = setup(w);
    pthread_barrier_wait(&sh->connected);
    pthread_barrier_wait(&sh->go);
    if (!sh->abort) {
        if (sh->budget > 0) run_budget(w);
        else if (sh->cfg->loop == VB_LOOP_OPEN) run_open(w);
        else run_window(w);
    }
    pthread_mutex_lock(&sh->ended_lock);
    atomic_fetch_sub(&sh->running, 1);
    pthread_cond_signal(&sh->ended);
    pthread_mutex_unlock(&sh->ended_lock);
    vb_conn_close(&w->conn);
    return NULL;
}

static int check_config(const vb_workload_config *cfg, vb_error *err) {
    if (!cfg || !cfg->engine) return vb_error_set(err, "workload", 0, "no engine to run the workload against");
    if (cfg->clients < 1 || cfg->clients > VB_WORKLOAD_MAX_CLIENTS)
        return vb_error_set(err, "workload", 0, "clients = %d: must be 1 .. %d", cfg->clients,
                            VB_WORKLOAD_MAX_CLIENTS);
    if (!cfg->queries || cfg->n_queries == 0 || cfg->dim == 0)
        return vb_error_set(err, "workload", 0, "no queries (%zu x %zu)", cfg->n_queries, cfg->dim);
    if (cfg->k < 1) return vb_error_set(err, "workload", 0, "k = %d: must be at least 1", cfg->k);
    if ((cfg->queries_budget > 0) == (cfg->window_ns > 0))
        return vb_error_set(err, "workload", 0, "set exactly one of queries_budget (%zu) and window_ns (%llu)",
                            cfg->queries_budget, (unsigned long long)cfg->window_ns);
    if (cfg->queries_budget > cfg->n_queries)
        return vb_error_set(err, "workload", 0, "queries_budget %zu exceeds the %zu queries of the set",
                            cfg->queries_budget, cfg->n_queries);
    if (cfg->loop != VB_LOOP_CLOSED && cfg->loop != VB_LOOP_OPEN)
        return vb_error_set(err, "workload", 0, "unknown loop %d (closed %d, open %d)", (int)cfg->loop,
                            VB_LOOP_CLOSED, VB_LOOP_OPEN);
    if (cfg->loop == VB_LOOP_OPEN && (cfg->window_ns == 0 || !(cfg->target_rate > 0) || !isfinite(cfg->target_rate)))
        return vb_error_set(err, "workload", 0, "the open loop needs a window and a target rate > 0 (window %llu ns, "
                            "target rate %g/s)", (unsigned long long)cfg->window_ns, cfg->target_rate);
    if (cfg->loop == VB_LOOP_CLOSED && cfg->target_rate != 0)
        return vb_error_set(err, "workload", 0, "target rate %g/s set for a closed loop (it is for the open loop)",
                            cfg->target_rate);
    if (cfg->keep_answers && cfg->window_ns == 0)
        return vb_error_set(err, "workload", 0, "keep_answers applies to window mode only (the budget keeps its own)");
    if (cfg->client_lock && cfg->queries_budget > 0)
        return vb_error_set(err, "workload", 0, "client_lock applies to window mode only");
    if (cfg->n_cpus < 0 || (cfg->n_cpus > 0 && !cfg->cpus))
        return vb_error_set(err, "workload", 0, "n_cpus = %d without a CPU list", cfg->n_cpus);
    for (int i = 0; cfg->cpus && i < cfg->n_cpus; i++)
        if (cfg->cpus[i] < 0 || cfg->cpus[i] >= CPU_SETSIZE)
            return vb_error_set(err, "workload", 0, "cannot pin to CPU %d: not a CPU number (0 .. %d)",
                                cfg->cpus[i], CPU_SETSIZE - 1);
    return VB_OK;
}

static void free_workers(worker *ws, int n) {
    for (int i = 0; ws && i < n; i++) {
        vb_histogram_destroy(&ws[i].hist);
        vb_histogram_destroy(&ws[i].lag);
        vb_histogram_destroy(&ws[i].own);
        vb_histogram_destroy(&ws[i].corrected);
        vb_histogram_destroy(&ws[i].service);
        free(ws[i].scratch);
        free(ws[i].same);
        free(ws[i].extra_query);
        free(ws[i].extra_n);
        free(ws[i].extra_ids);
    }
    free(ws);
}

/* Allocates the result arrays and one slot per worker; VB_ERROR on allocation failure. */
static int allocate(const vb_workload_config *cfg, shared *sh, vb_workload_result *out, worker **wsp,
                    vb_error *err) {
    const int n = cfg->clients;
    void *mem = NULL;
    out->latency = vb_histogram_new();
    out->fraction_in_call = calloc((size_t)n, sizeof *out->fraction_in_call);
    if (posix_memalign(&mem, 64, (size_t)n * sizeof(worker)) != 0) mem = NULL;
    worker *ws = mem;
    if (ws) memset(ws, 0, (size_t)n * sizeof(worker));
    int ok = out->latency && out->fraction_in_call && ws;
    if (ok && cfg->loop == VB_LOOP_OPEN) {
        out->lag = vb_histogram_new();
        out->service = vb_histogram_new();
        out->own = vb_histogram_new();
        out->corrected = vb_histogram_new();
        ok = out->lag && out->service && out->own && out->corrected;
    }
    if (ok && sh->budget > 0) {
        out->answers = calloc(sh->budget * (size_t)cfg->k, sizeof *out->answers);
        out->n_answer = calloc(sh->budget, sizeof *out->n_answer); /* 0 until a query succeeds */
        out->answer_ns = calloc(sh->budget, sizeof *out->answer_ns);
        ok = out->answers && out->n_answer && out->answer_ns;
        sh->answers = out->answers;
        sh->n_answer = out->n_answer;
        sh->answer_ns = out->answer_ns;
    }
    if (ok && cfg->keep_answers) {
        out->answers = calloc(cfg->n_queries * (size_t)cfg->k, sizeof *out->answers);
        out->n_answer = calloc(cfg->n_queries, sizeof *out->n_answer);
        out->answer_count = calloc(cfg->n_queries, sizeof *out->answer_count);
        sh->slot = calloc(cfg->n_queries, sizeof *sh->slot);   /* all SLOT_FREE */
        ok = out->answers && out->n_answer && out->answer_count && sh->slot;
        sh->answers = out->answers;
        sh->n_answer = out->n_answer;
    }
    for (int i = 0; ok && i < n; i++) {
        ws[i].index = i;
        ws[i].sh = sh;
        ws[i].hist = vb_histogram_new();
        ws[i].scratch = malloc((size_t)cfg->k * sizeof *ws[i].scratch);
        ok = ws[i].hist && ws[i].scratch;
        if (ok && cfg->keep_answers) ok = (ws[i].same = calloc(cfg->n_queries, sizeof *ws[i].same)) != NULL;
        if (ok && cfg->loop == VB_LOOP_OPEN) {
            ws[i].lag = vb_histogram_new();
            ws[i].service = vb_histogram_new();
            ws[i].own = vb_histogram_new();
            ws[i].corrected = vb_histogram_new();
            ok = ws[i].lag && ws[i].service && ws[i].own && ws[i].corrected;
        }
    }
    if (!ok) {
        free_workers(ws, ws ? n : 0);
        return vb_error_set(err, "workload", 0, "out of memory for %d clients", n);
    }
    *wsp = ws;
    return VB_OK;
}

/* After join, keep_answers: the per-client counts summed per query, the extra answers in one list (client order).
 * An extra answer that arrived while its query's slot was being written by another client is compared with the
 * kept answer now (nothing is written any more) and counted with it when identical, so the extras are the answers
 * that really differ. Allocation failure here leaves the extras out and counts them as unscored. */
static void merge_answers(const vb_workload_config *cfg, worker *ws, vb_workload_result *out) {
    const size_t k = (size_t)cfg->k;
    size_t total = 0;
    for (int i = 0; i < cfg->clients; i++) {
        for (size_t q = 0; q < cfg->n_queries; q++) out->answer_count[q] += ws[i].same[q];
        out->unscored += ws[i].unscored;
        total += ws[i].n_extra;
    }
    if (!total) return;
    out->extra_query = malloc(total * sizeof *out->extra_query);
    out->extra_n = malloc(total * sizeof *out->extra_n);
    out->extra_ids = malloc(total * k * sizeof *out->extra_ids);
    if (!out->extra_query || !out->extra_n || !out->extra_ids) {
        out->unscored += total;
        return;
    }
    for (int i = 0; i < cfg->clients; i++)
        for (size_t j = 0; j < ws[i].n_extra; j++) {
            size_t q = ws[i].extra_query[j];
            int n = ws[i].extra_n[j];
            const int64_t *ids = ws[i].extra_ids + j * k;
            if (out->answer_count[q] > 0 && out->n_answer[q] == n &&
                memcmp(out->answers + q * k, ids, (size_t)n * sizeof *ids) == 0) {
                out->answer_count[q]++;
                continue;
            }
            out->extra_query[out->n_extra] = q;
            out->extra_n[out->n_extra] = n;
            memcpy(out->extra_ids + out->n_extra * k, ids, (size_t)n * sizeof *ids);
            out->n_extra++;
        }
}

/* After join: sums the slots into the result. The first error is the earliest one in time. */
static void merge(const vb_workload_config *cfg, const shared *sh, worker *ws, vb_workload_result *out) {
    uint64_t start = UINT64_MAX, end = 0, first_error_ns = UINT64_MAX;
    uint64_t in_call = 0, cpu = 0;
    for (int i = 0; i < cfg->clients; i++) {
        worker *w = &ws[i];
        out->queries += w->queries;
        out->errors += w->errors;
        out->warmup_queries += w->warmup_queries;
        out->warmup_errors += w->warmup_errors;
        out->edge_queries += w->edge_queries;
        out->clients_lost += w->lost;
        out->stopped |= w->stopped;
        in_call += w->in_call_ns;
        cpu += w->cpu_ns;
        if (w->start_ns < start) start = w->start_ns;
        if (w->end_ns > end) end = w->end_ns;
        if (w->has_error && w->first_error_ns < first_error_ns) {
            first_error_ns = w->first_error_ns;
            snprintf(out->first_error, sizeof out->first_error, "%s", w->first_error);
        }
        vb_histogram_merge(out->latency, w->hist);
        if (out->lag) vb_histogram_merge(out->lag, w->lag);
        if (out->own) vb_histogram_merge(out->own, w->own);
        if (out->corrected) vb_histogram_merge(out->corrected, w->corrected);
        if (out->service) vb_histogram_merge(out->service, w->service);
        out->late_starts += w->late;
        out->backlog += w->backlog;
        out->scheduled += w->scheduled;
    }
    out->target_rate = cfg->loop == VB_LOOP_OPEN ? cfg->target_rate : 0;
    if (cfg->keep_answers) merge_answers(cfg, ws, out);
    uint64_t elapsed;
    if (sh->budget > 0) {
        elapsed = end > start ? end - start : 0;
    } else {
        /* A stop flag cuts the window at the last worker's last reading. */
        uint64_t last = end < sh->t1 ? end : sh->t1;
        elapsed = last > sh->t0 ? last - sh->t0 : 0;
    }
    out->elapsed_s = (double)elapsed / 1e9;
    out->window_start = sh->budget > 0 ? 0 : sh->t0_wall;
    out->qps = elapsed ? (double)out->queries / out->elapsed_s : 0.0;
    out->in_call_s = (double)in_call / 1e9;
    out->client_cpu_s = (double)cpu / 1e9;
    for (int i = 0; i < cfg->clients; i++)
        out->fraction_in_call[i] = elapsed ? (double)ws[i].in_call_ns / (double)elapsed : 0.0;
}

/* The calling thread during a window: sleeps, reporting progress, until the window is over, the stop flag is
 * set, or every worker has finished. */
static void wait_window(const vb_workload_config *cfg, shared *sh) {
    const uint64_t step = cfg->progress_ns ? cfg->progress_ns : 250000000ull;
    for (;;) {
        uint64_t now = vb_now_ns();
        if (now >= sh->t1 || stop_requested(cfg->stop) || atomic_load(&sh->running) == 0) break;
        if (now < sh->t0) cfg->progress(cfg->progress_arg, 0, now - sh->t_go, sh->t0 - sh->t_go);
        else cfg->progress(cfg->progress_arg, 1, now - sh->t0, sh->t1 - sh->t0);
        uint64_t next = now + step;
        if (now < sh->t0 && next > sh->t0) next = sh->t0;
        sleep_until(next < sh->t1 ? next : sh->t1);
    }
    if (!stop_requested(cfg->stop)) cfg->progress(cfg->progress_arg, 1, sh->t1 - sh->t0, sh->t1 - sh->t0);
}

/* The calling thread during a budget run: reports the queries done so far about every progress step, until every
 * worker has ended (woken by the last one) or the stop flag is set; once more with done = budget at the end. */
static void wait_budget(const vb_workload_config *cfg, shared *sh, worker *ws) {
    const uint64_t step = cfg->progress_ns ? cfg->progress_ns : 250000000ull;
    pthread_mutex_lock(&sh->ended_lock);
    for (;;) {
        uint64_t done = 0;
        for (int i = 0; i < cfg->clients; i++)
            done += atomic_load_explicit(&ws[i].answered, memory_order_relaxed);
        if (atomic_load(&sh->running) == 0 || stop_requested(cfg->stop)) break;
        pthread_mutex_unlock(&sh->ended_lock);
        cfg->progress(cfg->progress_arg, 1, done, sh->budget);
        pthread_mutex_lock(&sh->ended_lock);
        if (atomic_load(&sh->running) == 0) break;
        uint64_t until = vb_now_ns() + step;
        struct timespec ts = {(time_t)(until / 1000000000u), (long)(until % 1000000000u)};
        pthread_cond_timedwait(&sh->ended, &sh->ended_lock, &ts);
    }
    pthread_mutex_unlock(&sh->ended_lock);
    if (!stop_requested(cfg->stop)) cfg->progress(cfg->progress_arg, 1, sh->budget, sh->budget);
}

int vb_workload_run(const vb_workload_config *cfg, vb_workload_result *out, vb_error *err) {
    if (!out) return vb_error_set(err, "workload", 0, "no result to fill");
    memset(out, 0, sizeof *out);
    if (check_config(cfg, err) != VB_OK) return VB_ERROR;
    const int n = cfg->clients;
    out->clients = n;

    shared sh;
    memset(&sh, 0, sizeof sh);
    sh.cfg = cfg;
    sh.budget = cfg->queries_budget;
    atomic_init(&sh.running, n);
    worker *ws = NULL;
    if (allocate(cfg, &sh, out, &ws, err) != VB_OK) {
        free(sh.slot);
        vb_workload_result_free(out);
        return VB_ERROR;
    }
    pthread_mutex_init(&sh.launch, NULL);
    pthread_mutex_init(&sh.ended_lock, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&sh.ended, &ca);
    pthread_condattr_destroy(&ca);
    pthread_barrier_init(&sh.connected, NULL, (unsigned)n + 1);
    pthread_barrier_init(&sh.go, NULL, (unsigned)n + 1);

    int rc = VB_OK, created = 0, prc = 0;
    pthread_mutex_lock(&sh.launch);
    for (; created < n; created++)
        if ((prc = pthread_create(&ws[created].thread, NULL, worker_main, &ws[created])) != 0) break;
    if (created < n) sh.abort = 1;
    pthread_mutex_unlock(&sh.launch);

    if (created < n) {
        char why[128];
        rc = vb_error_set(err, "workload", prc, "starting client thread %d of %d: %s", created + 1, n,
                          strerror_r(prc, why, sizeof why));
    } else {
        pthread_barrier_wait(&sh.connected);
        for (int i = 0; i < n && !sh.abort; i++) {
            if (ws[i].setup_rc == VB_OK) continue;
            sh.abort = 1;
            if (err) *err = ws[i].setup_err;
            rc = VB_ERROR;
        }
        if (!sh.abort && cfg->window_ns > 0) {
            sh.t_go = vb_now_ns();
            sh.t0 = sh.t_go + cfg->warmup_ns;
            sh.t0_wall = vb_wall_time() + (double)cfg->warmup_ns / 1e9;
            sh.t1 = sh.t0 + cfg->window_ns;
        }
        pthread_barrier_wait(&sh.go);
        if (!sh.abort && cfg->window_ns > 0 && cfg->progress) wait_window(cfg, &sh);
        else if (!sh.abort && sh.budget > 0 && cfg->progress) wait_budget(cfg, &sh, ws);
    }
    for (int i = 0; i < created; i++) pthread_join(ws[i].thread, NULL);

    if (rc == VB_OK) merge(cfg, &sh, ws, out);
    free_workers(ws, n);
    free(sh.slot);
    pthread_barrier_destroy(&sh.connected);
    pthread_barrier_destroy(&sh.go);
    pthread_mutex_destroy(&sh.launch);
    pthread_mutex_destroy(&sh.ended_lock);
    pthread_cond_destroy(&sh.ended);
    if (rc != VB_OK) vb_workload_result_free(out);
    return rc;
}

void vb_workload_result_free(vb_workload_result *r) {
    if (!r) return;
    vb_histogram_destroy(&r->latency);
    vb_histogram_destroy(&r->lag);
    vb_histogram_destroy(&r->own);
    vb_histogram_destroy(&r->corrected);
    vb_histogram_destroy(&r->service);
    free(r->fraction_in_call);
    free(r->answers);
    free(r->n_answer);
    free(r->answer_ns);
    free(r->answer_count);
    free(r->extra_query);
    free(r->extra_n);
    free(r->extra_ids);
    r->answer_ns = NULL;
    r->answer_count = NULL;
    r->extra_query = NULL;
    r->extra_n = NULL;
    r->extra_ids = NULL;
    r->n_extra = 0;
    r->fraction_in_call = NULL;
    r->answers = NULL;
    r->n_answer = NULL;
}
