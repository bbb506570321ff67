/* The concurrency phase: one timed window per plan item (clients, repeat), at a fixed ef_search.
 *
 * docs/design.md §3 and §4: warm-up before the window, all clients released together on a barrier, each client walking
 * the whole query set from its own offset; QPS counts the queries that started and finished inside the window;
 * in flight = in-call time of all clients / window; the fraction in call per client. The loop is closed by
 * default; `mode: open` in the profile runs it open at `target_rate` (agent/workload.h says what that measures).
 * Efficiency is not computed here: the coordinator's view derives it from the windows of 1 and n clients and
 * refuses it when in flight < n / 2. While the window runs the coordinator sees progress in milliseconds
 * ("warm-up", then "window": done = elapsed ms, total = window ms), hence percent and ETA. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "agent/phase.h"
#include "agent/waits.h"
#include "agent/window.h"
#include "agent/workload.h"

typedef struct window_point {
    long clients, repeat, ef_search;
    double window_s, warmup_s, target_rate;
    int open;
} window_point;

static int read_point(vb_phase_ctx *ctx, window_point *pt, vb_error *err) {
    const vb_point *p = &ctx->point;
    *pt = (window_point){.clients = p->clients, .repeat = p->repeat, .ef_search = p->ef_search,
                         .window_s = p->window_s, .warmup_s = p->warmup_s, .target_rate = p->target_rate,
                         .open = p->mode == VB_POINT_OPEN};
    if (pt->clients < 1 || pt->clients > 4096 || pt->ef_search < 1 || !(pt->window_s > 0) || pt->warmup_s < 0)
        return vb_error_set(err, "agent", 1, "concurrency point: clients %ld (1 to 4096), ef_search %ld, window_s %g, "
                            "warmup_s %g", pt->clients, pt->ef_search, pt->window_s, pt->warmup_s);
    if (pt->open && !(pt->target_rate > 0))
        return vb_error_set(err, "agent", 1, "concurrency point: mode open needs a target_rate > 0");
    if (!pt->open) pt->target_rate = 0;
    return VB_OK;
}

/* Tells the coordinator's log what the window's numbers do not show by themselves. */
static void log_notes(vb_phase_ctx *ctx, const window_point *pt, const vb_workload_result *r) {
    if (r->errors || r->warmup_errors)
        vb_phase_log(ctx, "warn", "%ld clients, repeat %ld: %llu failed queries in the window (%llu in warm-up); "
                                  "first: %s", pt->clients, pt->repeat, (unsigned long long)r->errors,
                     (unsigned long long)r->warmup_errors, r->first_error);
    if (r->clients_lost)
        vb_phase_log(ctx, "warn", "%ld clients, repeat %ld: %d client(s) lost their connection and stopped early",
                     pt->clients, pt->repeat, r->clients_lost);
    if (pt->open) {
        double service_p50 = (double)vb_histogram_value_at_percentile(r->service, 50) / 1e6;
        double service_p99 = (double)vb_histogram_value_at_percentile(r->service, 99) / 1e6;
        double p99 = (double)vb_histogram_value_at_percentile(r->latency, 99) / 1e6;
        double lag_p99 = (double)vb_histogram_value_at_percentile(r->lag, 99) / 1e6;
        vb_phase_log(ctx, r->backlog || r->late_starts > r->queries / 20 ? "warn" : "info",
                     "open loop, %ld clients: target %.0f/s, achieved %.0f/s; %llu of %llu queries started late "
                     "(lag p99 %.3f ms); %llu arrivals due in the window never started; latency from the intended "
                     "start p99 %.3f ms, around the call p50 %.3f ms, p99 %.3f ms",
                     pt->clients, pt->target_rate, r->qps, (unsigned long long)r->late_starts,
                     (unsigned long long)r->queries, lag_p99, (unsigned long long)r->backlog, p99, service_p50,
                     service_p99);
    }
}

int vb_phase_concurrency(vb_phase_ctx *ctx, vb_error *err) {
    window_point pt;
    if (read_point(ctx, &pt, err)) return VB_ERROR;
    if (vb_phase_ensure_index(ctx, err)) return VB_ERROR;
    vb_session *s = *ctx->session;

    vb_workload_config cfg = {
        .engine = s->engine, .clients = (int)pt.clients, .cpus = ctx->cpus, .n_cpus = ctx->n_cpus,
        .queries = s->ds->test, .n_queries = s->ds->n_test, .dim = s->ds->dim, .k = s->k,
        .search = {.ef_search = (int)pt.ef_search}, .filter = {VB_FILTER_NONE, 0},
        .window_ns = (uint64_t)llround(pt.window_s * 1e9), .warmup_ns = (uint64_t)llround(pt.warmup_s * 1e9),
        .stop = ctx->stop,
        .loop = pt.open ? VB_LOOP_OPEN : VB_LOOP_CLOSED, .target_rate = pt.target_rate,
        .seed = ((uint64_t)pt.repeat << 32) ^ (uint64_t)pt.clients,
    };
    vb_window_measured meas;
    vb_workload_result res;
    int wrc = vb_window_measured_run(ctx, s->engine, &cfg, &meas, &res, err);
    if (wrc != VB_OK)
        return vb_error_prefix(err, "%s, %ld clients", s->engine_name, pt.clients);
    if (res.stopped || (ctx->stop && atomic_load(ctx->stop))) {
        vb_workload_result_free(&res);
        return vb_error_set(err, "agent", 1, "aborted");
    }
    if (res.queries == 0) {
        if (res.errors || res.warmup_errors)
            vb_error_set(err, "engine", 1, "%s, %ld clients: no query succeeded in the window: %s", s->engine_name,
                         pt.clients, res.first_error);
        else
            vb_error_set(err, "agent", 1, "%s, %ld clients: no query started and finished inside the %.3f s "
                         "window (a query takes longer than the window?)", s->engine_name, pt.clients, pt.window_s);
        vb_workload_result_free(&res);
        return VB_ERROR;
    }
    log_notes(ctx, &pt, &res);
    if (res.clients_lost) {
        /* A client that could not reconnect measured a server that was gone: the window's QPS and latencies are
         * not the server's, so it is not recorded (the item fails; the server's death, when it died, is the
         * coordinator's to handle). */
        vb_error_set(err, "agent", 1, "%s, %ld clients: %d client(s) lost the server during the window and could not "
                     "reconnect (first: %s); the window is not recorded", s->engine_name, pt.clients, res.clients_lost,
                     res.first_error);
        vb_workload_result_free(&res);
        return VB_ERROR;
    }

    vb_window_wire w;
    vb_window_measured_fill(ctx, &meas, &res, &w, (int)pt.repeat, (int)pt.ef_search);
    vb_phase_node_result(ctx, s->engine, "window");
    Vbench__Result r = VBENCH__RESULT__INIT;
    r.completes_item = 1;
    r.body_case = VBENCH__RESULT__BODY_WINDOW;
    r.window = &w.msg;
    vb_phase_result(ctx, &r, "window");
    vb_window_wire_free(&w);
    vb_workload_result_free(&res);
    return VB_OK;
}
