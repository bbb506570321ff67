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
 * A shared stop flag ends the run early (abort from the coordinator). */
#ifndef VB_AGENT_WORKLOAD_H
#define VB_AGENT_WORKLOAD_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "engines/engine.h"
#include "metrics/histogram.h"
#include "util/error.h"

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
    size_t queries_budget;       /* > 0: run each of the first `queries_budget` queries once, keep answers */
    uint64_t window_ns;          /* > 0: timed window */
    uint64_t warmup_ns;          /* queries before the window starts, not counted */
    atomic_int *stop;            /* may be NULL */
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
    char first_error[1024];      /* the engine's message for the first failed query, "" when none */
    uint64_t warmup_queries;     /* window mode: queries not counted (warm-up, or straddling a window edge) */
    uint64_t warmup_errors;      /* failures during warm-up; not in errors, but first_error may name one */
    int clients_lost;            /* workers that stopped early: VB_RETRY and the one reconnect failed */
    int stopped;                 /* the stop flag ended the run before its budget / window was complete */
} vb_workload_result;

/* Runs the workload. VB_ERROR only when it could not run at all (bad config, connect failed, no CPU to pin to);
 * failed queries are counted in result->errors. A failed query is not retried; on VB_RETRY the worker
 * reconnects once and goes on with the next query. out is always left in a state vb_workload_result_free
 * accepts; free it with vb_workload_result_free (NULL-safe, idempotent). */
int vb_workload_run(const vb_workload_config *cfg, vb_workload_result *out, vb_error *err);
void vb_workload_result_free(vb_workload_result *r);

#endif
