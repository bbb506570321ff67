/* The query loop of the client role: worker threads that each own one engine connection and one histogram.
 *
 * Shape taken from wrk and pgbench: threads share nothing on the hot path; each is pinned to one CPU of the
 * client set (round-robin), connects before the start barrier (so connect time never pollutes a window), waits
 * on the barrier, then runs a closed loop until its stop condition. Per query it reads the monotonic clock
 * around the driver call only; results are summed after join.
 *
 * Two stop conditions:
 *   - a query budget (queries > 0): the query set is split among the clients, each query runs exactly once,
 *     and answers are kept so the caller can score recall (the recall sweep);
 *   - a window (window_ns > 0): each client walks the whole query set from its own offset, round after round,
 *     until the deadline; only queries that started and finished inside the window count (concurrency).
 * A shared stop flag ends the run early (abort from the coordinator).
 *
 * A window runs in one of two loops:
 *   - closed (the default): a client sends its next query as soon as the last one returned;
 *   - open: queries arrive on a schedule, as in wrk2 and pgbench --rate. Each client gets target_rate / clients
 *     queries per second with exponential gaps (a Poisson process) drawn from its own seeded PRNG, waits for
 *     each intended start, and starts at once when it is behind. Latency runs from the intended start, not the
 *     actual one (coordinated omission corrected: a stalled server shows as latency, not as fewer samples);
 *     the lag (intended -> actual start) is kept apart, and a start more than late_tolerance_ns after its
 *     intended time is a late start. One client is one connection and has one query in flight: at a per-client
 *     utilisation u (rate per client x service time), about a fraction u of arrivals find their client busy
 *     and wait (queueing, as M/D/1), which shows in lag and late starts even below capacity. */
#ifndef VB_AGENT_WORKLOAD_H
#define VB_AGENT_WORKLOAD_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "engines/engine.h"
#include "metrics/histogram.h"
#include "util/error.h"

typedef enum { VB_LOOP_CLOSED = 0, VB_LOOP_OPEN = 1 } vb_workload_loop;

#define VB_WORKLOAD_LATE_NS 1000000ull   /* open loop: default tolerance of a late start, 1 ms */

typedef struct vb_workload_config {
    vb_engine *engine;
    int clients;                 /* worker threads, one connection each */
    const int *cpus;             /* CPUs to pin to (round-robin); NULL or n_cpus == 0 = no pinning */
    int n_cpus;
    const float *queries;        /* n_queries x dim, row-major */
    size_t n_queries, dim;
    int k;
    vb_search_params search;     /* applied on each connection before the barrier */
    vb_filter filter;
    /* NULL, or one filter per query (n_queries of them; query i searches with filters[i] instead of filter): the
     * class predicates, whose class differs per query (engines/filter.h). Borrowed for the run. */
    const vb_filter *filters;
    size_t queries_budget;       /* > 0: run each of the first `queries_budget` queries once, keep answers */
    uint64_t window_ns;          /* > 0: timed window */
    uint64_t warmup_ns;          /* queries before the window starts, not counted */
    atomic_int *stop;            /* may be NULL */

    /* Window mode only. */
    vb_workload_loop loop;       /* VB_LOOP_CLOSED (0, the default) or VB_LOOP_OPEN */
    double target_rate;          /* open loop: intended queries per second over all clients; > 0 */
    uint64_t seed;               /* open loop: arrival schedule; client i draws from (seed, i) */
    uint64_t late_tolerance_ns;  /* open loop: lag above this is a late start; 0 = VB_WORKLOAD_LATE_NS */
    /* Window mode (closed or open loop): keep every answer counted in the window, for recall scored after the run (the
     * recall sweep at several client counts). Memory stays bounded by the query set, not by the window: one
     * answer per query index (the first counted one; a client claims the slot before its call, so the engine
     * writes straight into it) with the count of the window's answers identical to it, and apart the answers
     * that differ from it (a nondeterministic engine), up to n_queries per client. */
    int keep_answers;
    /* Test and bench only, never set by a phase: a lock every worker holds from before its start-clock reading
     * to after its end-clock reading, i.e. across the driver call, modelling a client bound by an interpreter
     * lock. The in-call intervals of the clients then never overlap: in flight <= 1. NULL = no lock. */
    pthread_mutex_t *client_lock;
    /* Called by the thread that called vb_workload_run (never by a worker), about every progress_ns (0 = 250 ms)
     * while a window runs: in_window 0 during warm-up (done/total: warm-up ns), 1 in the window (window ns).
     * Once more with done = total when the window is over (not when the stop flag ended it). In budget mode, as
     * often, in_window 1 and done/total the queries done (answered or failed) of the budget, once more with done =
     * total when every client has ended (issue 36.4: a filtered item's progress stayed at 0 of its queries).
     * May be NULL. */
    void (*progress)(void *arg, int in_window, uint64_t done_ns, uint64_t total_ns);
    void *progress_arg;
    uint64_t progress_ns;
} vb_workload_config;

typedef struct vb_workload_result {
    uint64_t queries;            /* counted queries (inside the window / in the budget) */
    uint64_t errors;
    double elapsed_s;            /* window length (up to the stop, if the flag cut it), or wall time of the
                                  * budget run (barrier to last finish) */
    double qps;                  /* queries / elapsed_s */
    vb_histogram *latency;       /* merged over clients; owned by the result */
    double in_call_s;            /* sum over clients of time inside driver calls during the window */
    double client_cpu_s;         /* sum of worker thread CPU time during the run */
    double *fraction_in_call;    /* per client: in-call time / elapsed; `clients` entries */
    int clients;
    /* Budget mode: answers[i*k .. i*k+k) and n_answer[i] for query i; NULL in window mode. n_answer[i] is 0
     * when query i failed (counted in errors) or never ran (stop flag): scored, it is a miss, never a hit. */
    int64_t *answers;
    int *n_answer;
    /* Budget mode: query i's time in the driver call, ns (failed queries too); 0 when it never ran. */
    uint64_t *answer_ns;
    /* Window mode with keep_answers: answers / n_answer above hold query i's first counted answer of the window,
     * and answer_count[i] the counted answers identical to it (0: no answer in that slot). The counted answers that
     * differ from their query's slot (or arrived while it was being written) are the n_extra extra answers:
     * extra_query[j] its query, extra_n[j] its rows, extra_ids[j*k ..] its ids. unscored: counted answers beyond
     * the bound on extra answers (in queries, not scorable). Every counted answer is in exactly one of
     * answer_count, the extras and unscored. */
    uint64_t *answer_count;
    size_t n_extra;
    size_t *extra_query;
    int *extra_n;
    int64_t *extra_ids;
    uint64_t unscored;
    char first_error[1024];      /* the engine's message for the first failed query, "" when none */
    uint64_t warmup_queries;     /* window mode: queries that started in the warm-up (before the window), not
                                  * counted; one that ends inside the window is here too */
    uint64_t warmup_errors;      /* failures during warm-up; not in errors, but first_error may name one */
    uint64_t edge_queries;       /* window mode: queries that started inside the window and ended after it, not
                                  * counted (at most one per client). Every answered query that started is in
                                  * exactly one of queries, warmup_queries, edge_queries. */
    double window_start;         /* window mode: the window's start on the wall clock, epoch seconds (to match the
                                  * server's samples, taken by the orchestrator on the same clock); 0 otherwise */
    int clients_lost;            /* workers that stopped early: VB_RETRY and the one reconnect failed */
    int stopped;                 /* the stop flag ended the run before its budget / window was complete */
    /* Open loop only (zero / NULL in the closed loop). `latency` above then runs from the intended start. Every
     * histogram here holds the counted queries (started and finished inside the window). */
    double target_rate;          /* as configured */
    uint64_t late_starts;        /* counted queries whose lag exceeded the tolerance */
    vb_histogram *lag;           /* intended start -> actual start; a lag under 1 us is recorded as 1 us */
    vb_histogram *service;       /* around the driver call only, as the closed loop measures */
    /* the client's own delay: from when the client could have sent the query (its intended start, or the end of its
     * previous query when that came later) to when it did, i.e. its wake-up and loop, not the engine's; a lag under
     * 1 us is recorded as 1 us. corrected: the latency from the intended start less that delay, what a client that
     * never stalled would have measured (the capacity phase's objective: docs/metrics.md "Capacity") */
    vb_histogram *own, *corrected;
    uint64_t backlog;            /* arrivals due before the window's end that had not started by then */
    uint64_t scheduled;          /* arrivals the schedule put in the window (intended start in it): the Poisson draw's
                                  * own count, against which what started is compared (the capacity phase) */
} vb_workload_result;

/* Runs the workload. VB_ERROR only when it could not run at all (bad config, connect failed, no CPU to pin to);
 * failed queries are counted in result->errors. A failed query is not retried; on VB_RETRY the worker
 * reconnects once and goes on with the next query. out is always left in a state vb_workload_result_free
 * accepts; free it with vb_workload_result_free (NULL-safe, idempotent). */
int vb_workload_run(const vb_workload_config *cfg, vb_workload_result *out, vb_error *err);
void vb_workload_result_free(vb_workload_result *r);

#endif
