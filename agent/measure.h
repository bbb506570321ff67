/* One measurement of search quality and speed: every query of a budget once, one client, then recall scored
 * against a ground truth. Used wherever a phase needs "QPS and recall now" (churn before/after; the sweep and
 * filtered phases run the same steps). */
#ifndef VB_AGENT_MEASURE_H
#define VB_AGENT_MEASURE_H

#include "agent/phase.h"
#include "datasets/groundtruth.h"
#include "engines/engine.h"
#include "metrics/histogram.h"

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
    char plan[2048];
} vb_measure;

/* Runs queries [0, n_queries) of the session's query set at ef_search with the filter (may be NULL) and scores
 * the answers against gt. VB_ERROR when it could not run, when every query failed, or when an answer is
 * invalid (ids outside the corpus, more than k rows, with a filter: a row that fails it): err then names the
 * engine, ef_search, the query and the row. A repeated id is not invalid: it is counted (duplicate_answers). */
int vb_measure_run(vb_phase_ctx *ctx, vb_session *s, int ef_search, size_t n_queries, const vb_filter *filter,
                   const vb_groundtruth *gt, vb_measure *out, vb_error *err);
void vb_measure_free(vb_measure *m);

#endif
