/* One measurement of search quality and speed: every query of a budget once, one client (or a closed-loop
 * window of several, vb_measure_window), then recall scored against a ground truth. Used wherever a phase needs "QPS and recall now" (churn before/after; the sweep and
 * filtered phases run the same steps). */
#ifndef VB_AGENT_MEASURE_H
#define VB_AGENT_MEASURE_H

#include "agent/phase.h"
#include "datasets/groundtruth.h"
#include "engines/engine.h"
#include "metrics/histogram.h"
#include "metrics/recall.h"

typedef struct vb_measure {
    uint64_t queries, short_answers, errors;
    /* Answers that returned an id on two rows (scored with the repeats as misses, metrics/recall.h), and the
     * first of them: "query 164: id 46667 at rows 5 and 7" (rows 0-based); empty when there is none. */
    uint64_t duplicate_answers;
    char duplicate_example[128];
    double elapsed_s, qps, recall, id_overlap, client_cpu_s;
    vb_histogram *latency;    /* owned; vb_measure_free releases it */
    /* The server's plan for this query (vb_engine_explain, asked once before the queries): 1 it scans the
     * vector index, 0 it does not, -1 unknown (no planner, or EXPLAIN failed: plan then says why). */
    int index_used;
    char plan[8192];   /* a sharded router's plan with each shard's remote SQL and plan (engines/pgvector.c) */
    /* vb_measure_run_answers only: every query's answer as SweepResult.answers lays it out (proto/vbench.proto),
     * owned; NULL when not asked for, or when it would exceed VB_WIRE_ANSWERS_MAX (answers_note says so). */
    uint8_t *answers;
    size_t answers_len;
    char answers_note[160];
    /* vb_measure_window only: the queries answered at least once in the window; answers not scored; the answers
     * that differed from their query's first answer in the window (a nondeterministic engine). */
    uint64_t covered, unscored, differing;
    /* vb_measure_stream_window only: rows [0, visible) are the ground truth's; returned ids at or above it (rows
     * acknowledged during the window) are counted in fresh_found (and scored by distance as any row). */
    size_t visible;
    uint64_t fresh_found;
    int64_t fresh_max;        /* the largest of those ids; -1 when none was returned */
    /* and, for contrast, the same answers scored against the full corpus's ground truth (what a stage would score
     * if its ground truth ignored which rows are visible); -1 when not asked for */
    double recall_full;
    /* The distribution of per-query recall (metrics/recall.h) over the queries scored (a window: those it
     * answered, each by the mean of its answers), and every query's recall in query order as the wire's
     * Measurement.query_recall lays it out (float32 little-endian, NaN: not answered), owned; NULL when over
     * VB_WIRE_QUERY_RECALL_MAX (the distribution is then still there). */
    vb_recall_dist dist;
    uint8_t *query_recall;
    size_t query_recall_len;
} vb_measure;

/* Runs queries [0, n_queries) of the session's query set at ef_search with the filter (may be NULL) and scores
 * the answers against gt. VB_ERROR when it could not run, when every query failed, or when an answer is
 * invalid (ids outside the corpus, more than k rows, with a filter: a row that fails it): err then names the
 * engine, ef_search, the query and the row. A repeated id is not invalid: it is counted (duplicate_answers). */
int vb_measure_run(vb_phase_ctx *ctx, vb_session *s, int ef_search, size_t n_queries, const vb_filter *filter,
                   const vb_groundtruth *gt, vb_measure *out, vb_error *err);
/* vb_measure_run with one filter per query (filters[i] for query i, n_queries of them: the class predicates). */
int vb_measure_run_filters(vb_phase_ctx *ctx, vb_session *s, int ef_search, size_t n_queries, const vb_filter *filters,
                           const vb_groundtruth *gt, vb_measure *out, vb_error *err);
/* vb_measure_run that also keeps every query's answer (ids, distances recomputed with vb_distance, time) in
 * out->answers, for the ann-benchmarks export. */
int vb_measure_run_answers(vb_phase_ctx *ctx, vb_session *s, int ef_search, size_t n_queries,
                           const vb_groundtruth *gt, vb_measure *out, vb_error *err);
/* A closed-loop window instead of a budget (the recall sweep at several client counts): `clients` clients, each
 * walking the whole query set from its own offset, warm-up then window, as the concurrency phase; every answer
 * counted in the window is kept (vb_workload_config.keep_answers) and scored after the run. QPS counts the window's
 * answers; recall is the mean over the queries answered in the window of the mean recall of each one's answers, so
 * every query weighs the same however often the window answered it: on a deterministic engine the 1-client sweep's
 * recall whenever the window covers the query set (out->covered, of n_test; when it does not, the recall is over
 * those). short_answers and duplicate_answers count answers. out->unscored: answers that differed from their
 * query's first one beyond the bound on keeping them (not in the recall; the phase says so). */
int vb_measure_window(vb_phase_ctx *ctx, vb_session *s, int ef_search, int clients, double window_s,
                      double warmup_s, const vb_groundtruth *gt, vb_measure *out, vb_error *err);
/* The streaming phase's window (docs/metrics.md "Streaming"): vb_measure_window without warm-up over an index that
 * grows while it runs; gt is the exact top-k over rows [0, visible) only, and the ids at or above visible in the
 * scored answers are counted in out->fresh_found (a fresh row scores as a hit when it is within the visible rows'
 * k-th distance: it displaced one of them, as an exact engine's answer does). open: an open loop at target_rate, whose
 * answers are kept and scored as the closed loop's (vb_workload_config.keep_answers in both loops). */
/* at_end (may be NULL) is called once with at_end_arg when the window's clock ends, before the queries in flight
 * then are joined and before any scoring (the stream reads there how many rows were acknowledged during the window:
 * rows acknowledged while the answers are scored are not the window's); if the stop flag cut the window, right
 * after the run. */
int vb_measure_stream_window(vb_phase_ctx *ctx, vb_session *s, int ef_search, int clients, double window_s, int open,
                             double target_rate, size_t visible, const vb_groundtruth *gt,
                             const vb_groundtruth *gt_full, void (*at_end)(void *arg), void *at_end_arg,
                             vb_measure *out, vb_error *err);
void vb_measure_free(vb_measure *m);

/* A measurement in its wire form, the Measurement message every one-client result embeds (sweep, filtered,
 * churn before / after): the one place its fields are filled. msg points into this struct (the histogram) and
 * into m (duplicate_example, plan): keep both alive and in place while msg is used. */
typedef struct vb_measure_wire {
    Vbench__Measurement msg;
    Vbench__Histogram latency;
} vb_measure_wire;

/* Fills w from m; the histogram's arrays are malloc'd: release them with vb_measure_wire_free. */
void vb_measure_to_wire(const vb_measure *m, vb_measure_wire *w);
void vb_measure_wire_free(vb_measure_wire *w);

/* A measured point's result (sweep, filtered, churn before / after), in two steps around the caller's body:
 * vb_measure_point_begin puts m on the wire (w) and readies the envelope r (completes: whether it completes the
 * item); the caller points its body's m at &w->msg and r's body at its body; vb_measure_point_send sends r under
 * the key suffix and frees w. */
void vb_measure_point_begin(const vb_measure *m, int completes, vb_measure_wire *w, Vbench__Result *r);
void vb_measure_point_send(vb_phase_ctx *ctx, Vbench__Result *r, vb_measure_wire *w, const char *suffix);

#endif
