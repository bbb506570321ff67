/* The cold_start phase (docs/metrics.md "Cold start"): how much slower a server answers right after a restart
 * with nothing of its data in memory, and for how long.
 *
 * Before the item is assigned, the coordinator has had the orchestrator stop the item's server, evict every file of
 * its data directory from the page cache (posix_fadvise DONTNEED per file: that directory only, never the host's
 * whole cache) and start it again (proto SERVER_COLD_START); the point says so (point.cold) with what was evicted.
 * Here the first `queries` queries of the query set then run one at a time on one connection, in order, each timed
 * around the driver call; then the same queries again on a new connection, warm: the reference the cold ones are
 * compared with. The connection is made before the first query, as in every phase, so its set-up is not in the
 * first query's time; what a new connection costs inside the server on its first query (a prepared statement, the
 * backend's catalog cache) is in both passes' first query. Every number (first query, means, medians, ratios, the
 * queries until the rolling median is within 10 % of the warm median) is computed by the store from these times
 * (metrics/coldstart.h), so the result carries the times alone.
 *
 * Not applicable: an engine without a server of vbench's (an embedded one such as hnswlib or exact runs inside this
 * process; a server engine without a recipe runs a server vbench did not start and cannot restart). The item is
 * then recorded with the reason and no numbers: never absent, never a failure. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/phase.h"
#include "agent/workload.h"

/* One pass: queries [0, nq) once each, in order, one client; times into ns, failed ones into failed. */
static int run_pass(vb_phase_ctx *ctx, vb_session *s, long ef, size_t nq, const char *pass, uint64_t *ns,
                    uint32_t *failed, size_t *n_failed, char *first_error, size_t error_len, vb_error *err) {
    vb_workload_config cfg = {
        .engine = s->engine, .clients = 1, .cpus = ctx->cpus, .n_cpus = ctx->n_cpus,
        .queries = s->ds->test, .n_queries = s->ds->n_test, .dim = s->ds->dim, .k = s->k,
        .search = {.ef_search = (int)ef}, .filter = {VB_FILTER_NONE, 0}, .queries_budget = nq, .stop = ctx->stop,
    };
    vb_phase_progress(ctx, pass, 0, nq, 0, 1);
    vb_workload_result res;
    if (vb_workload_run(&cfg, &res, err) != VB_OK) {
        vb_workload_result_free(&res);
        return vb_error_prefix(err, "%s, the %s queries of the cold start", s->engine_name, pass);
    }
    int rc = VB_OK;
    if (res.stopped || (ctx->stop && atomic_load(ctx->stop))) rc = vb_error_set(err, "agent", 1, "aborted");
    else if (res.errors == nq)
        rc = vb_error_set(err, "engine", 1, "%s: every %s query of the cold start failed: %s", s->engine_name, pass,
                          res.first_error);
    for (size_t i = 0; rc == VB_OK && i < nq; i++) {
        ns[i] = res.answer_ns[i];
        if (res.n_answer[i] == 0) failed[(*n_failed)++] = (uint32_t)i;   /* failed, or never ran */
    }
    if (rc == VB_OK && res.errors && !first_error[0]) snprintf(first_error, error_len, "%s", res.first_error);
    if (rc == VB_OK) vb_phase_progress(ctx, pass, nq, nq, res.qps, 1);
    vb_workload_result_free(&res);
    return rc;
}

/* The item's one result, which completes it. */
static void send_result(vb_phase_ctx *ctx, Vbench__ColdStartResult *w) {
    Vbench__Result r = VBENCH__RESULT__INIT;
    r.completes_item = 1;
    r.body_case = VBENCH__RESULT__BODY_COLD_START;
    r.cold_start = w;
    vb_phase_result(ctx, &r, "cold_start");
}

int vb_phase_cold_start(vb_phase_ctx *ctx, vb_error *err) {
    const Vbench__Assign *a = ctx->assign;
    long nq = ctx->point.queries, ef = ctx->point.ef_search;
    if (nq < 1 || ef < 1)
        return vb_error_set(err, "agent", 1, "cold_start point: queries %ld, ef_search %ld (the coordinator's plan "
                            "gives both >= 1: is it another version?)", nq, ef);
    if (!ctx->point.cold) {
        const vb_engine_ops *ops = vb_engine_find(a->engine);
        char reason[300];
        if (ops && (ops->flags & VB_ENGINE_EMBEDDED))
            snprintf(reason, sizeof reason, "%s is an embedded engine: it runs inside the client process, so there is "
                     "no server to restart and no data directory of a server to evict", a->engine);
        else
            snprintf(reason, sizeof reason, "%s has no recipe in the profile: its server is not one vbench starts, so "
                     "vbench cannot restart it", a->engine);
        vb_phase_log(ctx, "info", "cold start not applicable: %s", reason);
        Vbench__ColdStartResult w = VBENCH__COLD_START_RESULT__INIT;
        w.reason = reason;
        send_result(ctx, &w);
        return VB_OK;
    }
    /* An agent that restarted has no session: opening one attaches to the table and counts its rows, which reads
     * the table after the restart. Said in the result (a validity finding), not hidden. */
    int reopened = !vb_session_is(*ctx->session, a->engine, a->config, a->dataset, (int)a->k) || !(*ctx->session)->ready;
    if (vb_phase_ensure_index(ctx, err)) return VB_ERROR;
    vb_session *s = *ctx->session;
    if ((size_t)nq > s->ds->n_test) {
        vb_phase_log(ctx, "warn", "cold_start: queries %ld is more than the %zu queries of %s: running %zu", nq,
                     s->ds->n_test, s->dataset_name, s->ds->n_test);
        nq = (long)s->ds->n_test;
    }
    size_t n = (size_t)nq;
    uint64_t *cold = calloc(n, sizeof *cold), *warm = calloc(n, sizeof *warm);
    uint32_t *cold_failed = calloc(n, sizeof *cold_failed), *warm_failed = calloc(n, sizeof *warm_failed);
    size_t n_cold_failed = 0, n_warm_failed = 0;
    char first_error[1024] = "";
    int rc = cold && warm && cold_failed && warm_failed
                 ? VB_OK : vb_error_set(err, "agent", 1, "out of memory for %zu query times", 2 * n);
    if (rc == VB_OK)
        rc = run_pass(ctx, s, ef, n, "cold", cold, cold_failed, &n_cold_failed, first_error, sizeof first_error, err);
    if (rc == VB_OK)
        rc = run_pass(ctx, s, ef, n, "warm", warm, warm_failed, &n_warm_failed, first_error, sizeof first_error, err);
    if (rc == VB_OK) {
        Vbench__ColdStartResult w = VBENCH__COLD_START_RESULT__INIT;
        w.applicable = 1;
        w.ef_search = (int32_t)ef;
        w.n_cold_ns = w.n_warm_ns = n;
        w.cold_ns = cold, w.warm_ns = warm;
        w.n_cold_failed = n_cold_failed, w.cold_failed = cold_failed;
        w.n_warm_failed = n_warm_failed, w.warm_failed = warm_failed;
        w.evicted_files = (uint64_t)ctx->point.evicted_files;
        w.evicted_bytes = (uint64_t)ctx->point.evicted_bytes;
        w.restart_s = ctx->point.restart_s;
        w.session_reopened = reopened;
        w.first_error = first_error;
        send_result(ctx, &w);
    }
    free(cold), free(warm), free(cold_failed), free(warm_failed);
    return rc;
}
