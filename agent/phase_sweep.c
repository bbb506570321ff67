/* The recall sweep: one client, one ef_search value per plan item, every query once; QPS and recall.
 *
 * Answers are kept during the run and scored afterwards (recall is never computed inside the timed loop), with
 * distances recomputed from the corpus as metrics/recall.h defines. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/phase.h"
#include "agent/measure.h"

int vb_phase_recall_sweep(vb_phase_ctx *ctx, vb_error *err) {
    if (vb_phase_ensure_index(ctx, err)) return VB_ERROR;
    vb_session *s = *ctx->session;
    if (vb_session_groundtruth(s, ctx->cache_dir, err)) return VB_ERROR;

    long ef, nq;
    if (vb_kv_get_long(ctx->point, ctx->n_point, "ef_search", 40, 1, 1000000, &ef, err) ||
        vb_kv_get_long(ctx->point, ctx->n_point, "queries", 0, 0, 1000000000, &nq, err))
        return vb_error_prefix(err, "recall_sweep point");
    if (nq == 0 || (size_t)nq > s->ds->n_test) nq = (long)s->ds->n_test;

    vb_phase_progress(ctx, "queries", 0, (uint64_t)nq, 0, 1);
    vb_measure m;
    int rc = vb_measure_run(ctx, s, (int)ef, (size_t)nq, NULL, &s->gt, &m, err);
    if (rc == VB_OK) {
        Vbench__Histogram h = VBENCH__HISTOGRAM__INIT;
        vb_phase_histogram_to_wire(m.latency, &h);
        Vbench__SweepResult w = VBENCH__SWEEP_RESULT__INIT;
        w.ef_search = (int32_t)ef;
        w.queries = m.queries;
        w.recall = m.recall;
        w.id_overlap = m.id_overlap;
        w.short_answers = m.short_answers;
        w.duplicate_answers = m.duplicate_answers;
        w.duplicate_example = m.duplicate_example;
        w.errors = m.errors;
        w.elapsed_s = m.elapsed_s;
        w.qps = m.qps;
        w.latency = &h;
        w.client_cpu_s = m.client_cpu_s;
        w.index_used = m.index_used == 1 ? 1 : m.index_used == 0 ? 2 : 0;
        w.plan = m.plan;
        w.clients = 1;
        Vbench__Result r = VBENCH__RESULT__INIT;
        r.completes_item = 1;
        r.body_case = VBENCH__RESULT__BODY_SWEEP;
        r.sweep = &w;
        vb_phase_result(ctx, &r, "sweep");
        vb_phase_histogram_wire_free(&h);
        vb_measure_free(&m);
    }
    return rc;
}
