/* The recall sweep: one client, one ef_search value per plan item, every query once; QPS and recall. With a
 * client count in the point (the profile's `clients` list), the item is instead one closed-loop window of that
 * many clients at that ef_search, as the concurrency phase runs it, and recall is scored on every answer of the
 * window (agent/measure.h vb_measure_window); such a point sends no per-query answers (the annb export is the
 * one-client sweep's).
 *
 * Answers are kept during the run and scored afterwards (recall is never computed inside the timed loop), with
 * distances recomputed from the corpus as metrics/recall.h defines. Every query's answer (ids, distances, time)
 * travels with the result unless the phase's `answers` is false (SweepResult.answers, for report/export_annb).
 *
 * Warm-up (issue 36.5): the first one-client point run on a session runs its queries first, at its ef_search,
 * uncounted, as a concurrency window's warm-up is: once, then, when that took less than WARMUP_MIN_S (a query set of
 * 100 answered in 0.1 s warms little), a closed-loop window over them for the rest of it: a server whose caches were cold gave its first point a third of
 * the second's QPS (MariaDB, fashion-mnist: 1,008 QPS at ef_search 10, 2,643 at 20), the stand's ordering and not
 * the engine. The result says how many queries the warm-up answered and in how long (warmup_queries, warmup_s). A
 * point of several clients is a window with its own warm-up (warmup_s). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/phase.h"
#include "agent/measure.h"
#include "agent/workload.h"

#define WARMUP_MIN_S 1.0

/* The sweep's warm-up: queries [0, nq) once at ef_search, one client, answers not scored; then, until WARMUP_MIN_S,
 * a window walking them again. *queries and *secs say what ran; VB_ERROR only when a run could not start (a failed
 * query is the measured run's to report). */
static int warm_up(vb_phase_ctx *ctx, vb_session *s, long ef, size_t nq, uint64_t *queries, double *secs,
                   vb_error *err) {
    vb_workload_config cfg = {
        .engine = s->engine, .clients = 1, .cpus = ctx->cpus, .n_cpus = ctx->n_cpus,
        .queries = s->ds->test, .n_queries = s->ds->n_test, .dim = s->ds->dim, .k = s->k,
        .search = {.ef_search = (int)ef}, .filter = {VB_FILTER_NONE, 0}, .queries_budget = nq, .stop = ctx->stop,
    };
    uint64_t errors = 0;
    char first_error[256] = "";
    *queries = 0, *secs = 0;
    for (int run = 0; run < 2 && !(ctx->stop && atomic_load(ctx->stop)); run++) {
        if (run == 1) {   /* the rest of WARMUP_MIN_S as a window over the same queries */
            if (*secs >= WARMUP_MIN_S) break;
            cfg.queries_budget = 0;
            cfg.n_queries = nq;
            cfg.window_ns = (uint64_t)((WARMUP_MIN_S - *secs) * 1e9);
        }
        vb_phase_progress(ctx, "warm-up", *queries, 0, *secs > 0 ? (double)*queries / *secs : 0, 1);
        vb_workload_result res;
        if (vb_workload_run(&cfg, &res, err) != VB_OK)
            return vb_error_prefix(err, "%s: the warm-up before the sweep, ef_search %ld", s->engine_name, ef);
        *queries += res.queries + res.edge_queries, *secs += res.elapsed_s, errors += res.errors;
        if (res.errors && !first_error[0]) snprintf(first_error, sizeof first_error, "%.200s", res.first_error);
        vb_workload_result_free(&res);
    }
    vb_phase_log(ctx, "info", "%s: warm-up before the sweep's first point: %llu queries at ef_search %ld in %.2f s "
                 "(%.0f QPS, not counted)%s%s", s->engine_name, (unsigned long long)*queries, ef, *secs,
                 *secs > 0 ? (double)*queries / *secs : 0, errors ? "; a query failed: " : "", first_error);
    return VB_OK;
}

int vb_phase_recall_sweep(vb_phase_ctx *ctx, vb_error *err) {
    if (vb_phase_ensure_index(ctx, err)) return VB_ERROR;
    vb_session *s = *ctx->session;
    if (vb_phase_groundtruth(ctx, s, NULL, err)) return VB_ERROR;

    long ef = ctx->point.ef_search, nq = ctx->point.queries;
    if (ef < 1 || nq < 0)
        return vb_error_set(err, "agent", 1, "recall_sweep point: ef_search %ld, queries %ld", ef, nq);
    /* answers: keep every query's answer for the ann-benchmarks export (the plan's point, on unless the profile
     * says false). */
    int answers = ctx->point.answers;
    if (nq == 0 || (size_t)nq > s->ds->n_test) nq = (long)s->ds->n_test;

    long clients = ctx->point.clients;
    vb_measure m;
    int rc;
    uint64_t warm_queries = 0;
    double warm_s = 0;
    if (clients > 0) {   /* a window of `clients` clients */
        const vb_point *p = &ctx->point;
        if (clients > 4096 || !(p->window_s > 0) || p->warmup_s < 0)
            return vb_error_set(err, "agent", 1, "recall_sweep point: clients %ld (1 to 4096), window_s %g, warmup_s %g",
                                clients, p->window_s, p->warmup_s);
        rc = vb_measure_window(ctx, s, (int)ef, (int)clients, p->window_s, p->warmup_s, &s->gt, &m, err);
        answers = 0;
        if (rc == VB_OK && m.covered < s->ds->n_test)
            vb_phase_log(ctx, "warn", "ef_search %ld, %ld clients: the window answered %llu of the %zu queries; recall "
                         "is over those (a longer window_s covers them all)", ef, clients,
                         (unsigned long long)m.covered, s->ds->n_test);
        if (rc == VB_OK && m.unscored)
            vb_phase_log(ctx, "warn", "ef_search %ld, %ld clients: %llu answers differed from their query's first "
                         "answer beyond the %zu kept per client and are not in the recall", ef, clients,
                         (unsigned long long)m.unscored, s->ds->n_test);
        if (rc == VB_OK && m.differing)
            vb_phase_log(ctx, "info", "ef_search %ld, %ld clients: %llu answers differed from an earlier answer to "
                         "the same query in the window (each scored on its own)", ef, clients,
                         (unsigned long long)m.differing);
    } else {
        clients = 1;
        if (!s->sweep_warmed) {
            if (warm_up(ctx, s, ef, (size_t)nq, &warm_queries, &warm_s, err)) return VB_ERROR;
            s->sweep_warmed = 1;
        }
        vb_phase_progress(ctx, "queries", 0, (uint64_t)nq, 0, 1);
        rc = answers ? vb_measure_run_answers(ctx, s, (int)ef, (size_t)nq, &s->gt, &m, err)
                     : vb_measure_run(ctx, s, (int)ef, (size_t)nq, NULL, &s->gt, &m, err);
    }
    if (rc == VB_OK) {
        vb_measure_wire mw;
        Vbench__Result r;
        vb_measure_point_begin(&m, 1, &mw, &r);
        Vbench__SweepResult w = VBENCH__SWEEP_RESULT__INIT;
        w.ef_search = (int32_t)ef;
        w.m = &mw.msg;
        w.clients = (uint32_t)clients;
        w.answers.data = m.answers;
        w.answers.len = m.answers_len;
        w.warmup_queries = warm_queries;
        w.warmup_s = warm_s;
        if (answers && !m.answers) vb_phase_log(ctx, "warn", "%s", m.answers_note);
        r.body_case = VBENCH__RESULT__BODY_SWEEP;
        r.sweep = &w;
        vb_measure_point_send(ctx, &r, &mw, "sweep");
        vb_measure_free(&m);
    }
    return rc;
}
