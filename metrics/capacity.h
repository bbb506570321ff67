/* The capacity search as data: which offered rate to measure next, given the windows measured so far, and what each
 * p99 target's answer is at the end (docs/metrics.md "Capacity"). No clock, no engine, no I/O: the capacity phase
 * (agent/phase_capacity.c) measures the windows it asks for, and tests/unit/test_capacity.c drives it with a model
 * engine whose p99 at each rate is known.
 *
 * A window meets target t when it was not client-limited, no query failed, achieved >= 0.99 x offered and p99 (from
 * the intended start) <= t. Achieved and offered are counted, not rates: the queries that started in the window
 * against the arrivals the open loop's Poisson schedule put in it, so that a window is not failed by the randomness
 * of its own arrivals (a 1 s window at 1,000/s draws 1,000 +- 32 of them). A client-limited window (the client could not offer the rate: agent/phase_capacity.c
 * says when) meets nothing and fails nothing: it bounds the search from above, and a target whose bracket ends there
 * is CLIENT_LIMIT, never a capacity.
 *
 * Each rate of the search is measured until VB_CAPACITY_VOTES (2) of its windows agree (met, failed or client-limited;
 * a third settles a disagreement): one window disturbed by the host does not steer the search.
 *
 * A window that failed target t while the client host paused (agent/hiccup.h: the longest late wake-up of a thread
 * that sleeps a millisecond at a time) for more than VB_CAPACITY_PAUSE_SHARE x t is discounted for t: the pause, not the
 * engine, may have failed it (every query in flight waited that long, and the arrivals queued behind them). It is kept
 * and shown, but it is no vote, no confirmation and no knee; the window is measured again, at most
 * VB_CAPACITY_PAUSE_RETRIES times for one rate and target, after which the failures count as they are (a host that
 * pauses that often is the measurement's condition, not an accident). A window that met its target while the host
 * paused counts: the pause did not matter.
 *
 * The search, for targets t_1 < ... < t_n (ascending):
 *   grow     from start (the 1-client QPS) the rate x growth (2) until the largest target fails (or a window is
 *            client-limited);
 *   per target, the largest first: its bracket is lo = the highest rate that met it below hi, hi = the lowest rate
 *            that failed it (every window so far counts, whichever target it was measured for);
 *            descend  no rate met it: hi / growth, down to min_rate (below that: TARGET_UNREACHABLE);
 *            bisect   sqrt(lo x hi) while hi / lo > 1 + precision;
 *            then the target is found at lo (CLIENT_LIMIT when hi was a client-limited window);
 *   confirm  each found target: `repeats` windows at its rate, then one knee window at knee x rate (1.2) that
 *            must fail it.
 * A search that reaches max_windows stops: the unresolved targets are NOT_CONVERGED. */
#ifndef VB_METRICS_CAPACITY_H
#define VB_METRICS_CAPACITY_H

#include <stddef.h>
#include <stdint.h>

#include "metrics/histogram.h"

#define VB_CAPACITY_MAX_TARGETS 8
#define VB_CAPACITY_MAX_WINDOWS 128
#define VB_CAPACITY_VOTES 2          /* windows that must agree on a rate's verdict */
#define VB_CAPACITY_GROWTH 2.0
#define VB_CAPACITY_KNEE 1.2
#define VB_CAPACITY_ACHIEVED 0.99      /* achieved >= this x offered */
#define VB_CAPACITY_DESCENT 64.0       /* min_rate = start / this */
#define VB_CAPACITY_PAUSE_SHARE 0.25   /* a host pause longer than this x the target discounts a failed window */
#define VB_CAPACITY_PAUSE_RETRIES 2    /* windows discounted at most per rate and target (and per confirmation, knee) */

/* The stage and status values are the wire's (proto/vbench.proto CapacityStage, CapacityStatus). */
typedef enum { VB_CAP_GROW = 0, VB_CAP_BISECT, VB_CAP_DESCEND, VB_CAP_CONFIRM, VB_CAP_KNEE } vb_capacity_stage;
typedef enum {
    VB_CAP_FOUND = 0, VB_CAP_RECALL_UNREACHABLE, VB_CAP_CLIENT_LIMIT, VB_CAP_TARGET_UNREACHABLE, VB_CAP_NOT_CONVERGED,
    VB_CAP_OPEN = 99                   /* still being searched (never reported) */
} vb_capacity_status;

/* One measured window, as the search sees it. */
typedef struct vb_capacity_obs {
    double rate;                       /* offered */
    double achieved;                   /* queries that started in the window / its length (shown) */
    uint64_t scheduled, started;       /* arrivals scheduled in the window; queries started in it */
    double p50_ms, p99_ms, p999_ms;    /* from the intended start */
    uint64_t errors;
    int client_limited;
    int none_answered;                 /* no latency in the window: nothing was answered in it (a stalled server), so
                                        * its p50/p99/p999 (0) say nothing and it cannot meet a target */
    double host_pause_ms;              /* the client host's longest pause in the window (0: not measured) */
    vb_capacity_stage stage;
    int target;                        /* CONFIRM / KNEE: the target's index; -1 otherwise */
    unsigned discounted;               /* set by vb_capacity_record: bit t, the window is discounted for target t */
} vb_capacity_obs;

typedef struct vb_capacity_answer {
    vb_capacity_status status;
    double rate;                       /* FOUND: the rate; otherwise the highest that met it (0 none) */
    double fail_rate;                  /* the lowest that failed it, or the client-limited one (0 none) */
    int repeats, repeats_met;          /* confirmation windows measured and met */
    double p50_ms, p99_ms, p999_ms;    /* the median of each over the confirmation windows */
    double knee_rate, knee_p99_ms;
    int knee_measured, knee_failed;
    int confirm_discounted, knee_discounted;   /* confirmation and knee windows measured again after a host pause */
} vb_capacity_answer;

typedef struct vb_capacity_search {
    int n_targets;
    double targets_ms[VB_CAPACITY_MAX_TARGETS];   /* ascending */
    double start, min_rate, precision;
    int repeats;
    int n;
    vb_capacity_obs w[VB_CAPACITY_MAX_WINDOWS];
    vb_capacity_answer a[VB_CAPACITY_MAX_TARGETS];
} vb_capacity_search;

/* Sets up a search: targets ascending (at most VB_CAPACITY_MAX_TARGETS), start > 0, precision > 0, repeats >= 0. */
void vb_capacity_search_init(vb_capacity_search *s, const double *targets_ms, int n_targets, double start,
                             double precision, int repeats);
/* Whether window o meets target t (the definition above). */
int vb_capacity_meets(const vb_capacity_search *s, const vb_capacity_obs *o, int t);
/* Whether window o failed target t while the host paused longer than VB_CAPACITY_PAUSE_SHARE x t. */
int vb_capacity_paused(const vb_capacity_search *s, const vb_capacity_obs *o, int t);

/* What the client side did in one window, for vb_capacity_client_check. */
typedef struct vb_capacity_client {
    double window_s;
    uint64_t scheduled, started;
    int clients;
    double in_flight;                  /* time-averaged queries inside driver calls */
    double client_cpu_s;               /* the worker threads' CPU time in the window */
    int cpus;                          /* CPUs the client may use */
    int embedded;                      /* the engine computes inside the workers' calls (their CPU is its CPU too) */
    double service_p50_ms, service_p99_ms;   /* around the driver call (the engine's answers as the client saw them) */
    double unloaded_ms;                /* the engine's time per query unloaded: 1 / the 1-client QPS */
    double target_ms;                  /* the largest p99 target */
} vb_capacity_client;
/* Whether the client, not the engine, limited the window: 1 with the reason in why (a sentence that says it is the
 * client's limit and what to do), 0 otherwise. The engine is not the cause while it answered as fast as unloaded:
 * the median around the call at most 2 x its 1-client time (1 / the 1-client QPS) + 0.1 ms (an overloaded engine's
 * answers slow down as its queue grows, whether or not they stay within a loose target). Three limits:
 *   cpu      the workers' CPU >= 0.9 x the CPUs they may use;
 *   schedule fewer than 0.99 of the scheduled arrivals started while clients were free (in flight below 0.9 x
 *            clients), the engine fast and within the largest target (service p99 <= target): the loop itself could
 *            not keep its schedule;
 *   clients  every client busy (in flight >= 0.9 x clients) while the engine was fast: the arrivals waited for a free
 *            client, not for the engine (raise clients).
 * A slow engine is never the client's limit: that window fails the objective. */
int vb_capacity_client_check(const vb_capacity_client *c, char *why, size_t len);
/* The next window to measure: returns 1 with its rate, stage and target (-1 for the search's own windows), or 0 when
 * the search is over (every answer final). */
int vb_capacity_next(vb_capacity_search *s, double *rate, vb_capacity_stage *stage, int *target);
/* Records the window measured for the last vb_capacity_next (o->rate, o->stage and o->target as it said); sets
 * the recorded copy's discounted bits (s->w[s->n - 1].discounted). */
void vb_capacity_record(vb_capacity_search *s, const vb_capacity_obs *o);
/* Several client agents (docs/design.md §8 "A capacity window on several client agents"): each window's offered rate
 * is split evenly, rate / n to each agent, each on its own Poisson schedule (its own seed), and the search sees ONE
 * observation per window, the merge of the agents' shares. */
typedef struct vb_capacity_share {
    const char *agent;                 /* the agent's id (named in the reason when it is the client's limit) */
    double rate;                       /* its offered share */
    double elapsed_s;                  /* its window's length */
    uint64_t scheduled, started, errors;
    const vb_histogram *corrected;     /* its latency from the intended start (the objective's) */
    int client_limited;                /* its own client guard (vb_capacity_client_check) said so */
    const char *why;                   /* that guard's reason */
} vb_capacity_share;
/* Agent i's share of a window at rate split across n agents: rate / n. */
double vb_capacity_share_rate(double rate, int n);
/* Agent i's schedule seed from the window's: agent 0 keeps the window's seed (one agent draws what it always drew),
 * the others a different stream each. */
uint64_t vb_capacity_share_seed(uint64_t window_seed, int i);
/* Merges the n shares of one window into the observation the search records (o->stage and o->target are left as
 * they are): rate, scheduled, started and errors summed; achieved = started / the longest share's window (they
 * start together); p50 / p99 / p99.9 from the merged histograms, written also into merged when it is non-NULL (the
 * caller's, reset first); client-limited when any share is, and why (len > 0) says which agent ("agent bench-2: ...")
 * when n > 1, the share's own reason when n is 1. Returns 0, or -1 when n < 1 or a histogram cannot be made. */
int vb_capacity_merge(const vb_capacity_share *sh, int n, vb_capacity_obs *o, vb_histogram *merged, char *why,
                      size_t len);
/* The bound on the windows of a search (the estimate's): growth steps from start to max_rate, bisection steps to
 * the precision per target, and repeats + 1 per target. */
int vb_capacity_windows_bound(double start, double max_rate, double precision, int n_targets, int repeats);

#endif
