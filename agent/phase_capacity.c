/* The capacity phase (issue 37; docs/metrics.md "Capacity"): the highest offered query rate an engine configuration
 * serves with p99 from the intended start within each target while recall meets its target.
 *
 * One plan item per configuration and dataset runs the whole search here in the client agent, as the streaming phase
 * runs its stages within one item, and sends a result per window as it finishes (committed before it is
 * acknowledged; the outbox resends what was not), then one summary per p99 target, the last completing the item:
 *   1. the operating point: the coordinator read the committed recall sweep of the same configuration (Point.op_source):
 *      SWEEP gives the smallest ef_search whose recall met the target; UNREACHABLE (the sweep never met it) is
 *      reported as such and nothing is measured; PROBE (no sweep) tries ef_search 10, 20, 40, ... 2560 on up to
 *      PROBE_QUERIES queries, one client, and takes the first that meets the target (none: unreachable); GIVEN (the
 *      profile names ef_search) measures its recall the same way and refuses it below the target. The same one-client
 *      run at the chosen ef_search gives the 1-client QPS, where the search starts.
 *   2. the search (metrics/capacity.h): open-loop windows (agent/workload.c's open loop, `clients` clients with
 *      Poisson arrivals, latency from the intended start), each measured as a concurrency window is (the server's
 *      accounting, the wait profile: agent/window.h vb_window_measured), warm-up before each.
 *   3. the client guard: a window the client could not generate (vb_capacity_client_check) is recorded as
 *      client-limited and bounds the search; a target whose bracket ends there is CLIENT_LIMIT, never a capacity, and
 *      the item then fails with that message after its results are committed.
 * Resume: the item has no checkpoint. A killed attempt is measured again from its start; its results carry the attempt
 * in their keys ("a2/w7", "a2/p99=10"), so the windows an earlier attempt committed stay as that attempt's and
 * v_capacity shows the last attempt's summaries. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "metrics/capacity.h"
#include "agent/measure.h"
#include "agent/phase.h"
#include "agent/window.h"
#include "agent/workload.h"

#define PROBE_QUERIES 200
#define PROBE_EF_MAX 2560

typedef struct cap_item {
    vb_phase_ctx *ctx;
    vb_session *s;
    const vb_point *p;
    int ef;
    double recall;                /* at ef; -1 unknown */
    double start;                 /* the 1-client QPS */
    int cpus, embedded;
    vb_capacity_search search;
    char client_reason[512];      /* the first client-limited window's reason */
} cap_item;

static const char *stage_name(vb_capacity_stage st) {
    static const char *const names[] = {"grow", "bisect", "descend", "confirm", "knee"};
    return (unsigned)st < 5 ? names[st] : "?";
}

/* One result of the item. */
static void send_result(cap_item *c, Vbench__Result *r, const char *what) {
    char suffix[96];
    snprintf(suffix, sizeof suffix, "a%u/%s", c->ctx->assign->attempt, what);
    vb_phase_result(c->ctx, r, suffix);
}

/* A summary for target t (or, t < 0, the item's only one: nothing measured). */
static void send_summary(cap_item *c, int t, vb_capacity_status status, const char *reason, int last) {
    Vbench__CapacitySummary m = VBENCH__CAPACITY_SUMMARY__INIT;
    m.target_ms = t >= 0 ? c->p->p99_ms[t] : 0;
    m.recall_target = c->p->recall_target;
    m.status = (Vbench__CapacityStatus)status;
    m.reason = (char *)reason;
    m.ef_search = c->ef;
    m.recall = c->recall;
    m.op_source = (Vbench__CapacityOpSource)c->p->op_source;
    m.start_rate = c->start;
    m.windows = (uint32_t)c->search.n;
    if (t >= 0) {
        const vb_capacity_answer *a = &c->search.a[t];
        m.rate = a->rate, m.fail_rate = a->fail_rate;
        m.p50_ms = a->p50_ms, m.p99_ms = a->p99_ms, m.p999_ms = a->p999_ms;
        m.repeats = (uint32_t)a->repeats, m.repeats_met = (uint32_t)a->repeats_met;
        m.knee_rate = a->knee_rate, m.knee_p99_ms = a->knee_p99_ms, m.knee_failed = a->knee_failed;
        if (status == VB_CAP_CLIENT_LIMIT) m.client_max_rate = a->fail_rate;
    }
    Vbench__Result r = VBENCH__RESULT__INIT;
    r.completes_item = last;
    r.body_case = VBENCH__RESULT__BODY_CAPACITY;
    r.capacity = &m;
    char what[64];
    if (t >= 0) snprintf(what, sizeof what, "p99=%g", c->p->p99_ms[t]);
    else snprintf(what, sizeof what, "summary");
    send_result(c, &r, what);
}

/* One client, the first nq queries once at ef: recall against the ground truth and QPS. */
static int probe(cap_item *c, int ef, size_t nq, double *recall, double *qps, vb_error *err) {
    vb_measure m;
    if (vb_measure_run(c->ctx, c->s, ef, nq, NULL, &c->s->gt, &m, err)) return VB_ERROR;
    *recall = m.recall;
    *qps = m.qps;
    vb_phase_log(c->ctx, "info", "%s capacity: ef_search %d: recall %.4f, %.0f QPS at 1 client (%zu queries)",
                 c->s->engine_name, ef, m.recall, m.qps, nq);
    vb_measure_free(&m);
    return VB_OK;
}

/* The operating point and the 1-client QPS. Returns 1 when the recall target cannot be reached (the summary is
 * sent), 0 when the search can start, VB_ERROR (-1) on failure. */
static int operating_point(cap_item *c, vb_error *err) {
    const vb_point *p = c->p;
    char reason[512];
    size_t nq = c->s->ds->n_test < PROBE_QUERIES ? c->s->ds->n_test : PROBE_QUERIES;
    if (p->op_source == VB_OP_UNREACHABLE) {
        c->ef = (int)p->op_best_ef;
        c->recall = p->op_recall;
        snprintf(reason, sizeof reason, "the recall target %g is not reached: the recall sweep's best recall is %.4f "
                 "(ef_search %ld); not measured at a lower recall", p->recall_target, p->op_recall, p->op_best_ef);
        send_summary(c, -1, VB_CAP_RECALL_UNREACHABLE, reason, 1);
        return 1;
    }
    if (vb_phase_groundtruth(c->ctx, c->s, NULL, err)) return VB_ERROR;
    double recall, qps;
    if (p->op_source == VB_OP_SWEEP || p->op_source == VB_OP_GIVEN) {
        c->ef = (int)p->ef_search;
        if (probe(c, c->ef, nq, &recall, &qps, err)) return VB_ERROR;
        c->recall = p->op_source == VB_OP_SWEEP ? p->op_recall : recall;
        c->start = qps;
        if (p->op_source == VB_OP_GIVEN && recall < p->recall_target) {
            snprintf(reason, sizeof reason, "the recall target %g is not reached: ef_search %d (the profile's) gives "
                     "%.4f on %zu queries; not measured at a lower recall", p->recall_target, c->ef, recall, nq);
            send_summary(c, -1, VB_CAP_RECALL_UNREACHABLE, reason, 1);
            return 1;
        }
        return 0;
    }
    double best = -1;
    int best_ef = 0;
    for (int ef = 10; ef <= PROBE_EF_MAX; ef *= 2) {
        if (probe(c, ef, nq, &recall, &qps, err)) return VB_ERROR;
        if (recall > best) best = recall, best_ef = ef;
        if (recall >= p->recall_target) {
            c->ef = ef, c->recall = recall, c->start = qps;
            return 0;
        }
    }
    c->ef = best_ef, c->recall = best;
    snprintf(reason, sizeof reason, "the recall target %g is not reached: the probe's best recall is %.4f (ef_search "
             "%d of 10 .. %d, %zu queries); not measured at a lower recall", p->recall_target, best, best_ef,
             PROBE_EF_MAX, nq);
    send_summary(c, -1, VB_CAP_RECALL_UNREACHABLE, reason, 1);
    return 1;
}

/* One open-loop window at rate: measured, checked for the client's limit, sent, recorded in the search. */
static int run_window(cap_item *c, double rate, vb_capacity_stage stage, int target, vb_error *err) {
    vb_phase_ctx *ctx = c->ctx;
    vb_session *s = c->s;
    const vb_point *p = c->p;
    int step = c->search.n + 1;
    vb_workload_config cfg = {
        .engine = s->engine, .clients = (int)p->clients, .cpus = ctx->cpus, .n_cpus = ctx->n_cpus,
        .queries = s->ds->test, .n_queries = s->ds->n_test, .dim = s->ds->dim, .k = s->k,
        .search = {.ef_search = c->ef}, .filter = {VB_FILTER_NONE, 0},
        .window_ns = (uint64_t)llround(p->window_s * 1e9), .warmup_ns = (uint64_t)llround(p->warmup_s * 1e9),
        .stop = ctx->stop, .loop = VB_LOOP_OPEN, .target_rate = rate,
        .seed = ((uint64_t)ctx->assign->attempt << 32) ^ (uint64_t)step * 0x9e3779b97f4a7c15ull,
    };
    vb_window_measured meas;
    vb_workload_result res;
    if (vb_window_measured_run(ctx, s->engine, &cfg, &meas, &res, err) != VB_OK)
        return vb_error_prefix(err, "%s capacity, window %d at %.1f/s", s->engine_name, step, rate);
    if (res.stopped || (ctx->stop && atomic_load(ctx->stop))) {
        vb_workload_result_free(&res);
        return vb_error_set(err, "agent", 1, "aborted");
    }
    if (res.clients_lost) {
        vb_error_set(err, "agent", 1, "%s capacity, window %d at %.1f/s: %d client(s) lost the server and could not "
                     "reconnect (first: %s); the window is not recorded", s->engine_name, step, rate, res.clients_lost,
                     res.first_error);
        vb_workload_result_free(&res);
        return VB_ERROR;
    }
    uint64_t started = res.queries + res.edge_queries + res.errors;
    vb_capacity_client cl = {
        .window_s = res.elapsed_s, .scheduled = res.scheduled, .started = started, .clients = (int)p->clients,
        .in_flight = res.elapsed_s > 0 ? res.in_call_s / res.elapsed_s : 0,
        /* an embedded engine computes inside the workers' calls: their CPU is the engine's too (metrics/capacity.h) */
        .client_cpu_s = res.client_cpu_s, .cpus = c->cpus, .embedded = c->embedded,
        .service_p50_ms = (double)vb_histogram_value_at_percentile(res.service, 50) / 1e6,
        .service_p99_ms = (double)vb_histogram_value_at_percentile(res.service, 99) / 1e6,
        .unloaded_ms = c->start > 0 ? 1e3 / c->start : 0,
        .target_ms = p->p99_ms[p->n_p99 - 1],
    };
    char own_why[512] = "", why[640] = "";
    /* the window as the search sees it: this agent's share merged (metrics/capacity.h vb_capacity_merge; one agent
     * runs the whole rate, so its share is the window). The objective is checked on the latency from the intended
     * start less the client's own delay (its wake-up and loop: a host that stalls the client is not the engine's
     * queue); the uncorrected p99 and that delay are kept */
    vb_capacity_share share = {
        .agent = ctx->agent_id, .rate = rate, .elapsed_s = res.elapsed_s, .scheduled = res.scheduled,
        .started = started, .errors = res.errors, .corrected = res.corrected,
        .client_limited = vb_capacity_client_check(&cl, own_why, sizeof own_why), .why = own_why,
    };
    vb_capacity_obs o = {.stage = stage, .target = target};
    if (vb_capacity_merge(&share, 1, &o, NULL, why, sizeof why)) {
        vb_workload_result_free(&res);
        return vb_error_set(err, "agent", 1, "%s capacity, window %d: out of memory merging the window", s->engine_name,
                            step);
    }
    if (o.client_limited && !c->client_reason[0])
        snprintf(c->client_reason, sizeof c->client_reason, "at %.1f/s offered: %s", rate, why);
    vb_capacity_record(&c->search, &o);

    vb_window_wire w;
    vb_histogram *uncorrected = res.latency;
    res.latency = res.corrected;   /* the window's latency on the wire is the objective's */
    vb_window_measured_fill(ctx, &meas, &res, &w, step, c->ef);
    res.latency = uncorrected;
    Vbench__CapacityWindow cw = VBENCH__CAPACITY_WINDOW__INIT;
    cw.step = (uint32_t)step;
    cw.stage = (Vbench__CapacityStage)stage;
    cw.offered_rate = rate;
    cw.achieved_rate = o.achieved;
    cw.w = &w.msg;
    for (int t = 0; t < c->search.n_targets; t++) cw.met |= (uint32_t)vb_capacity_meets(&c->search, &o, t) << t;
    cw.target_ms = target >= 0 ? p->p99_ms[target] : 0;
    cw.client_limited = o.client_limited;
    cw.client_reason = why;
    cw.ef_search = c->ef;
    cw.recall = c->recall;
    cw.start_rate = c->start;
    cw.scheduled = o.scheduled;
    cw.started = o.started;
    cw.p99_ms = o.p99_ms;
    cw.own_p99_ms = (double)vb_histogram_value_at_percentile(res.own, 99) / 1e6;
    cw.uncorrected_p99_ms = (double)vb_histogram_value_at_percentile(uncorrected, 99) / 1e6;
    cw.n_targets_ms = (size_t)p->n_p99;
    cw.targets_ms = (double *)p->p99_ms;
    cw.client_cores = res.elapsed_s > 0 ? res.client_cpu_s / res.elapsed_s : 0;
    cw.client_cpus = (uint32_t)c->cpus;
    /* the agents that offered it, each with its share: this one, the whole rate */
    Vbench__CapacityShare sw = VBENCH__CAPACITY_SHARE__INIT, *shares[1] = {&sw};
    sw.agent = (char *)(ctx->agent_id ? ctx->agent_id : "");
    sw.offered_rate = share.rate;
    sw.scheduled = share.scheduled, sw.started = share.started, sw.errors = share.errors;
    sw.p99_ms = (double)vb_histogram_value_at_percentile(res.corrected, 99) / 1e6;
    sw.client_limited = share.client_limited;
    sw.client_cores = cw.client_cores;
    cw.agents = 1;
    cw.n_shares = 1;
    cw.shares = shares;
    Vbench__Result r = VBENCH__RESULT__INIT;
    r.body_case = VBENCH__RESULT__BODY_CAPACITY_WINDOW;
    r.capacity_window = &cw;
    char what[32];
    snprintf(what, sizeof what, "w%d", step);
    send_result(c, &r, what);
    char for_target[48] = "";
    if (target >= 0) snprintf(for_target, sizeof for_target, " for p99 <= %g ms", p->p99_ms[target]);
    vb_phase_log(ctx, o.client_limited ? "warn" : "info",
                 "%s capacity window %d (%s%s): offered %.1f/s, achieved %.1f/s (%llu of %llu arrivals started), p99 "
                 "%.3f ms from the intended start%s%s%s", s->engine_name, step, stage_name(stage), for_target, rate,
                 o.achieved,
                 (unsigned long long)o.started, (unsigned long long)o.scheduled, o.p99_ms,
                 res.errors ? ", queries failed: " : "", res.errors ? res.first_error : "",
                 o.client_limited ? "; client-limited" : "");
    vb_window_wire_free(&w);
    vb_workload_result_free(&res);
    return VB_OK;
}

static const char *status_reason(const cap_item *c, int t, char *buf, size_t len) {
    const vb_capacity_answer *a = &c->search.a[t];
    switch (a->status) {
    case VB_CAP_FOUND:
        snprintf(buf, len, "%.1f/s met p99 <= %g ms (%d of %d confirmations met it); %.1f/s did not; the knee window "
                 "at %.1f/s %s", a->rate, c->p->p99_ms[t], a->repeats_met, a->repeats, a->fail_rate, a->knee_rate,
                 !a->knee_measured ? "was not measured" : a->knee_failed ? "failed it" : "met it too (the knee not shown)");
        break;
    case VB_CAP_CLIENT_LIMIT:
        snprintf(buf, len, "refused: the client could not offer more than %.1f/s, where the engine still met p99 <= %g "
                 "ms (%s); this is not the engine's capacity", a->rate, c->p->p99_ms[t], c->client_reason);
        break;
    case VB_CAP_TARGET_UNREACHABLE:
        snprintf(buf, len, "p99 <= %g ms was not met even at %.1f/s, the lowest rate tried", c->p->p99_ms[t], a->fail_rate);
        break;
    case VB_CAP_NOT_CONVERGED:
        snprintf(buf, len, "the search used its %d windows without converging (last met %.1f/s, failed %.1f/s)",
                 VB_CAPACITY_MAX_WINDOWS, a->rate, a->fail_rate);
        break;
    default: snprintf(buf, len, "?");
    }
    return buf;
}

int vb_phase_capacity(vb_phase_ctx *ctx, vb_error *err) {
    const vb_point *p = &ctx->point;
    if (p->clients < 1 || p->clients > 4096 || !(p->window_s > 0) || p->warmup_s < 0 || p->n_p99 < 1 ||
        p->n_p99 > VB_CAPACITY_MAX_TARGETS || !(p->precision > 0) || p->recall_target < 0 || p->recall_target > 1)
        return vb_error_set(err, "agent", 1, "capacity point: clients %ld (1 to 4096), window_s %g, warmup_s %g, %d p99 "
                            "targets (1 to %d), precision %g, recall %g", p->clients, p->window_s, p->warmup_s, p->n_p99,
                            VB_CAPACITY_MAX_TARGETS, p->precision, p->recall_target);
    if (vb_phase_ensure_index(ctx, err)) return VB_ERROR;
    cap_item c = {.ctx = ctx, .s = *ctx->session, .p = p, .recall = -1};
    c.cpus = ctx->n_cpus > 0 ? ctx->n_cpus : (int)sysconf(_SC_NPROCESSORS_ONLN);
    c.embedded = (vb_engine_ops_of(c.s->engine)->flags & VB_ENGINE_EMBEDDED) != 0;
    int op = operating_point(&c, err);
    if (op != 0) return op > 0 ? VB_OK : VB_ERROR;
    if (!(c.start > 0)) return vb_error_set(err, "agent", 1, "%s capacity: no 1-client QPS to start from", c.s->engine_name);
    vb_capacity_search_init(&c.search, p->p99_ms, p->n_p99, c.start, p->precision, (int)p->repeats);
    double rate;
    vb_capacity_stage stage;
    int target;
    while (vb_capacity_next(&c.search, &rate, &stage, &target))
        if (run_window(&c, rate, stage, target, err)) return VB_ERROR;
    int refused = 0;
    char reason[1024];
    for (int t = 0; t < p->n_p99; t++) {
        refused |= c.search.a[t].status == VB_CAP_CLIENT_LIMIT;
        send_summary(&c, t, c.search.a[t].status, status_reason(&c, t, reason, sizeof reason), t == p->n_p99 - 1 &&
                     !refused);
    }
    if (refused)
        return vb_error_set(err, "client", 1, "%s capacity refused: the client, not the engine, is the limit (%s); the "
                            "windows and summaries are recorded, no capacity is reported for the refused targets",
                            c.s->engine_name, c.client_reason);
    return VB_OK;
}
