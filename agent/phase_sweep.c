/* The recall sweep: one client, one ef_search value per plan item, every query once; QPS and recall.
 *
 * Answers are kept during the run and scored afterwards (recall is never computed inside the timed loop), with
 * distances recomputed from the corpus as metrics/recall.h defines. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/phase.h"
#include "agent/workload.h"
#include "metrics/recall.h"

/* Copies a merged histogram into its wire form; the arrays are malloc'd and freed by the caller. */
static void histogram_to_wire(const vb_histogram *h, Vbench__Histogram *w) {
    size_t n = vb_histogram_encode(h, NULL, NULL, 0);
    w->idx = malloc((n ? n : 1) * sizeof *w->idx);
    w->counts = malloc((n ? n : 1) * sizeof *w->counts);
    w->n_idx = w->n_counts = vb_histogram_encode(h, w->idx, w->counts, n);
    w->out_of_range = vb_histogram_out_of_range(h);
    w->min_ns = vb_histogram_min(h);
    w->max_ns = vb_histogram_max(h);
}

int vb_phase_recall_sweep(vb_phase_ctx *ctx, vb_error *err) {
    if (vb_phase_ensure_index(ctx, err)) return VB_ERROR;
    vb_session *s = *ctx->session;
    if (vb_session_groundtruth(s, ctx->cache_dir, err)) return VB_ERROR;

    long ef, nq;
    if (vb_kv_get_long(ctx->point, ctx->n_point, "ef_search", 40, 1, 1000000, &ef, err) ||
        vb_kv_get_long(ctx->point, ctx->n_point, "queries", 0, 0, 1000000000, &nq, err))
        return vb_error_prefix(err, "recall_sweep point");
    if (nq == 0 || (size_t)nq > s->ds->n_test) nq = (long)s->ds->n_test;

    vb_workload_config cfg = {
        .engine = s->engine, .clients = 1, .cpus = ctx->cpus, .n_cpus = ctx->n_cpus,
        .queries = s->ds->test, .n_queries = s->ds->n_test, .dim = s->ds->dim, .k = s->k,
        .search = {.ef_search = (int)ef}, .filter = {VB_FILTER_NONE, 0},
        .queries_budget = (size_t)nq, .stop = ctx->stop,
    };
    vb_phase_progress(ctx, "queries", 0, (uint64_t)nq, 0, 1);
    vb_workload_result res;
    if (vb_workload_run(&cfg, &res, err) != VB_OK) return VB_ERROR;
    if (ctx->stop && atomic_load(ctx->stop)) {
        vb_workload_result_free(&res);
        return vb_error_set(err, "agent", 1, "aborted");
    }
    if (res.errors == (uint64_t)nq) {
        vb_error_set(err, "engine", 1, "every query failed: %s", res.first_error);
        vb_workload_result_free(&res);
        return VB_ERROR;
    }

    vb_recall_sum sum = {0};
    int rc = VB_OK;
    for (long i = 0; i < nq && rc == VB_OK; i++) {
        vb_recall_one one;
        rc = vb_recall_query(s->ds->train, s->ds->n_train, s->ds->dim, s->ds->metric, s->ds->test + (size_t)i * s->ds->dim,
                             res.answers + (size_t)i * (size_t)s->k, res.n_answer[i], s->gt.ids + (size_t)i * s->gt.k,
                             s->gt.dists + (size_t)i * s->gt.k, s->k, &one, err);
        if (rc == VB_OK) vb_recall_sum_add(&sum, &one);
        else vb_error_prefix(err, "%s, ef_search %ld, query %ld", s->engine_name, ef, i);
    }
    if (rc == VB_OK) {
        Vbench__Histogram h = VBENCH__HISTOGRAM__INIT;
        histogram_to_wire(res.latency, &h);
        Vbench__SweepResult w = VBENCH__SWEEP_RESULT__INIT;
        w.ef_search = (int32_t)ef;
        w.queries = (uint64_t)nq;
        w.recall = vb_recall_sum_mean(&sum);
        w.id_overlap = vb_recall_sum_mean_overlap(&sum);
        w.short_answers = sum.short_answers;
        w.errors = res.errors;
        w.elapsed_s = res.elapsed_s;
        w.qps = res.elapsed_s > 0 ? (double)res.queries / res.elapsed_s : 0;
        w.latency = &h;
        w.client_cpu_s = res.client_cpu_s;
        w.clients = 1;
        Vbench__Result r = VBENCH__RESULT__INIT;
        r.completes_item = 1;
        r.body_case = VBENCH__RESULT__BODY_SWEEP;
        r.sweep = &w;
        vb_phase_result(ctx, &r, "sweep");
        free(h.idx);
        free(h.counts);
    }
    vb_workload_result_free(&res);
    return rc;
}
