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
#include "agent/hiccup.h"
#include "agent/measure.h"
#include "agent/phase.h"
#include "agent/window.h"
#include "agent/workload.h"
#include "proto/wire.h"
#include "util/clock.h"

#define PROBE_QUERIES 200
#define VB_CAPACITY_MAX_HELPERS 64   /* coordinator/campaign_int.h VB_LEND_MAX */
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

/* The client guard's inputs of one share (this agent's workers, its CPUs). */
static vb_capacity_client client_of(const vb_workload_result *res, int clients, int cpus, int embedded,
                                    double unloaded_ms, double target_ms) {
    uint64_t started = res->queries + res->edge_queries + res->errors;
    return (vb_capacity_client){
        .window_s = res->elapsed_s, .scheduled = res->scheduled, .started = started, .clients = clients,
        .in_flight = res->elapsed_s > 0 ? res->in_call_s / res->elapsed_s : 0,
        /* an embedded engine computes inside the workers' calls: their CPU is the engine's too (metrics/capacity.h) */
        .client_cpu_s = res->client_cpu_s, .cpus = cpus, .embedded = embedded,
        .service_p50_ms = (double)vb_histogram_value_at_percentile(res->service, 50) / 1e6,
        .service_p99_ms = (double)vb_histogram_value_at_percentile(res->service, 99) / 1e6,
        .unloaded_ms = unloaded_ms, .target_ms = target_ms,
    };
}

/* Several client agents (docs/design.md §8): the helpers' reports of window `step`, one per helper in the Assign's
 * order (got[k] for helpers[k]), waited for until deadline_ns. A report of another window or attempt is stale and
 * dropped. A helper that does not report in time, or reports that it could not run its share, fails the item. */
static int collect_shares(cap_item *c, int step, uint64_t deadline_ns, Vbench__Envelope **got, vb_error *err) {
    const Vbench__Assign *as = c->ctx->assign;
    size_t have = 0;
    while (have < as->n_helpers) {
        Vbench__Envelope *env = vb_mailbox_take(c->ctx->mail, deadline_ns, c->ctx->stop);
        if (!env) break;
        const Vbench__ShareReport *r = env->body_case == VBENCH__ENVELOPE__BODY_SHARE_REPORT ? env->share_report : NULL;
        size_t k = as->n_helpers;
        if (r && r->step == (uint32_t)step && r->attempt == as->attempt && strcmp(r->item_key, as->item_key) == 0)
            for (k = 0; k < as->n_helpers && strcmp(as->helpers[k], r->agent) != 0; k++) {}
        if (k == as->n_helpers || got[k]) {
            vb_wire_free(env);
            continue;
        }
        got[k] = env;
        have++;
        if (r->error && r->error[0])
            return vb_error_set(err, "agent", 1, "%s capacity, window %d: helper agent %s could not run its share: %s; "
                                "the item fails", c->s->engine_name, step, r->agent, r->error);
    }
    if (c->ctx->stop && atomic_load(c->ctx->stop)) return vb_error_set(err, "agent", 1, "aborted");
    for (size_t k = 0; k < as->n_helpers; k++)
        if (!got[k])
            return vb_error_set(err, "agent", 1, "%s capacity, window %d: no share from helper agent %s within "
                                "window_s + warmup_s + a margin (%.0f s in all; is it lost?); the window cannot be "
                                "merged and the item fails", c->s->engine_name, step, as->helpers[k],
                                1.5 * (c->p->window_s + c->p->warmup_s) + 5);
    return VB_OK;
}

/* One open-loop window at rate: measured, checked for the client's limit, sent, recorded in the search. With
 * helpers (Assign.helpers) the rate is split: each helper is asked for its share before this agent runs its own, and
 * the window the search records is the merge of all shares. */
static int run_window(cap_item *c, double rate, vb_capacity_stage stage, int target, vb_error *err) {
    vb_phase_ctx *ctx = c->ctx;
    vb_session *s = c->s;
    const vb_point *p = c->p;
    int step = c->search.n + 1;
    const Vbench__Assign *as = ctx->assign;
    int n_agents = 1 + (int)as->n_helpers;
    uint64_t seed = ((uint64_t)as->attempt << 32) ^ (uint64_t)step * 0x9e3779b97f4a7c15ull;
    double share_rate = vb_capacity_share_rate(rate, n_agents);
    double unloaded_ms = c->start > 0 ? 1e3 / c->start : 0, target_ms = p->p99_ms[p->n_p99 - 1];
    uint64_t deadline_ns = 0;
    if (n_agents > 1) {
        Vbench__ShareRequest rq = VBENCH__SHARE_REQUEST__INIT;
        rq.item_key = as->item_key;
        rq.attempt = as->attempt;
        rq.step = (uint32_t)step;
        rq.rate = share_rate;
        rq.seed = seed;
        rq.ef_search = c->ef;
        rq.unloaded_ms = unloaded_ms;
        rq.target_ms = target_ms;
        Vbench__Envelope env = VBENCH__ENVELOPE__INIT;
        env.body_case = VBENCH__ENVELOPE__BODY_SHARE_REQUEST;
        env.share_request = &rq;
        vb_wire_send(ctx->out, NULL, &env, NULL);
        deadline_ns = vb_now_ns() + (uint64_t)llround((1.5 * (p->window_s + p->warmup_s) + 5) * 1e9);
    }
    vb_workload_config cfg = {
        .engine = s->engine, .clients = (int)p->clients, .cpus = ctx->cpus, .n_cpus = ctx->n_cpus,
        .queries = s->ds->test, .n_queries = s->ds->n_test, .dim = s->ds->dim, .k = s->k,
        .search = {.ef_search = c->ef}, .filter = {VB_FILTER_NONE, 0},
        .window_ns = (uint64_t)llround(p->window_s * 1e9), .warmup_ns = (uint64_t)llround(p->warmup_s * 1e9),
        .stop = ctx->stop, .loop = VB_LOOP_OPEN, .target_rate = share_rate, .seed = vb_capacity_share_seed(seed, 0),
    };
    vb_window_measured meas;
    vb_workload_result res;
    vb_hiccup pause;   /* over warm-up and window: a pause in warm-up leaves its queue to the window */
    vb_hiccup_start(&pause, 0);
    int run = vb_window_measured_run(ctx, s->engine, &cfg, &meas, &res, err);
    vb_hiccup_stop(&pause);
    if (run != VB_OK) return vb_error_prefix(err, "%s capacity, window %d at %.1f/s", s->engine_name, step, rate);
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
    vb_capacity_client cl = client_of(&res, (int)p->clients, c->cpus, c->embedded, unloaded_ms, target_ms);
    char own_why[512] = "", why[640] = "";
    /* the window as the search sees it: the agents' shares merged (metrics/capacity.h vb_capacity_merge; one agent
     * runs the whole rate, so its share is the window). The objective is checked on the latency from the intended
     * start less the client's own delay (its wake-up and loop: a host that stalls the client is not the engine's
     * queue); the uncorrected p99 and that delay are kept */
    vb_capacity_share shares[1 + VB_CAPACITY_MAX_HELPERS];
    Vbench__Envelope *got[VB_CAPACITY_MAX_HELPERS] = {0};
    vb_histogram *theirs[VB_CAPACITY_MAX_HELPERS] = {0};
    shares[0] = (vb_capacity_share){
        .agent = ctx->agent_id, .rate = share_rate, .elapsed_s = res.elapsed_s, .scheduled = res.scheduled,
        .started = started, .errors = res.errors, .corrected = res.corrected,
        .client_limited = vb_capacity_client_check(&cl, own_why, sizeof own_why), .why = own_why,
    };
    int rc = n_agents > 1 ? collect_shares(c, step, deadline_ns, got, err) : VB_OK;
    for (int k = 1; k < n_agents && rc == VB_OK; k++) {
        const Vbench__ShareReport *r = got[k - 1]->share_report;
        theirs[k - 1] = vb_histogram_new();
        const Vbench__Histogram *h = r->corrected;
        if (!theirs[k - 1] || (h && vb_histogram_decode_add(theirs[k - 1], h->idx, h->counts, h->n_idx) != 0)) {
            rc = vb_error_set(err, "agent", 1, "%s capacity, window %d: helper agent %s sent a latency histogram that "
                              "cannot be read", s->engine_name, step, r->agent);
            break;
        }
        if (h) vb_histogram_decode_summary(theirs[k - 1], h->out_of_range, h->min_ns, h->max_ns);
        shares[k] = (vb_capacity_share){
            .agent = r->agent, .rate = r->rate, .elapsed_s = r->elapsed_s, .scheduled = r->scheduled,
            .started = r->started, .errors = r->errors, .corrected = theirs[k - 1],
            .client_limited = r->client_limited, .why = r->why,
        };
    }
    vb_capacity_obs o = {.stage = stage, .target = target};
    vb_histogram *merged = rc == VB_OK ? vb_histogram_new() : NULL;
    if (rc == VB_OK && (!merged || vb_capacity_merge(shares, n_agents, &o, merged, why, sizeof why)))
        rc = vb_error_set(err, "agent", 1, "%s capacity, window %d: out of memory merging the window", s->engine_name,
                          step);
    if (rc != VB_OK) {
        for (int k = 0; k < n_agents - 1; k++) vb_wire_free(got[k]), vb_histogram_destroy(&theirs[k]);
        vb_histogram_destroy(&merged);
        vb_workload_result_free(&res);
        return VB_ERROR;
    }
    if (o.client_limited && !c->client_reason[0])
        snprintf(c->client_reason, sizeof c->client_reason, "at %.1f/s offered: %s", rate, why);
    /* the longest pause of any agent's host: every share's queries count in the merged p99 */
    o.host_pause_ms = (double)pause.max_ns / 1e6;
    for (int k = 1; k < n_agents; k++)
        if (got[k - 1]->share_report->host_pause_ms > o.host_pause_ms) o.host_pause_ms = got[k - 1]->share_report->host_pause_ms;
    vb_capacity_record(&c->search, &o);
    unsigned discounted = c->search.w[c->search.n - 1].discounted;

    vb_window_wire w;
    vb_histogram *uncorrected = res.latency;
    res.latency = merged;   /* the window's latency on the wire is the objective's, all agents' */
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
    cw.host_pause_ms = o.host_pause_ms;
    cw.discounted = discounted;
    cw.n_targets_ms = (size_t)p->n_p99;
    cw.targets_ms = (double *)p->p99_ms;
    cw.client_cores = res.elapsed_s > 0 ? res.client_cpu_s / res.elapsed_s : 0;
    cw.client_cpus = (uint32_t)c->cpus;
    /* the agents that offered it, each with its share (this one first) and when its window started */
    Vbench__CapacityShare sw[1 + VB_CAPACITY_MAX_HELPERS], *swp[1 + VB_CAPACITY_MAX_HELPERS];
    for (int k = 0; k < n_agents; k++) {
        const Vbench__ShareReport *r = k ? got[k - 1]->share_report : NULL;
        vbench__capacity_share__init(&sw[k]);
        swp[k] = &sw[k];
        sw[k].agent = (char *)(shares[k].agent ? shares[k].agent : "");
        sw[k].offered_rate = shares[k].rate;
        sw[k].scheduled = shares[k].scheduled, sw[k].started = shares[k].started, sw[k].errors = shares[k].errors;
        sw[k].p99_ms = (double)vb_histogram_value_at_percentile(shares[k].corrected, 99) / 1e6;
        sw[k].client_limited = shares[k].client_limited;
        sw[k].client_cores = r ? r->client_cores : cw.client_cores;
        sw[k].window_start = r ? r->window_start : res.window_start;
    }
    cw.agents = (uint32_t)n_agents;
    cw.n_shares = (size_t)n_agents;
    cw.shares = swp;
    Vbench__Result r = VBENCH__RESULT__INIT;
    r.body_case = VBENCH__RESULT__BODY_CAPACITY_WINDOW;
    r.capacity_window = &cw;
    char what[32];
    snprintf(what, sizeof what, "w%d", step);
    send_result(c, &r, what);
    char for_target[48] = "";
    if (target >= 0) snprintf(for_target, sizeof for_target, " for p99 <= %g ms", p->p99_ms[target]);
    char split[96] = "";
    if (n_agents > 1) {
        double first = res.window_start, last = res.window_start;
        for (int k = 1; k < n_agents; k++) {
            if (sw[k].window_start < first) first = sw[k].window_start;
            if (sw[k].window_start > last) last = sw[k].window_start;
        }
        snprintf(split, sizeof split, " on %d client agents (%.1f/s each, starts %.1f ms apart)", n_agents, share_rate,
                 (last - first) * 1e3);
    }
    vb_phase_log(ctx, o.client_limited ? "warn" : "info",
                 "%s capacity window %d (%s%s): offered %.1f/s%s, achieved %.1f/s (%llu of %llu arrivals started), p99 "
                 "%.3f ms from the intended start%s%s%s%s%s", s->engine_name, step, stage_name(stage), for_target, rate,
                 split, o.achieved,
                 (unsigned long long)o.started, (unsigned long long)o.scheduled, o.p99_ms,
                 o.none_answered ? " (no query was answered in the window: no latency, it meets nothing)" : "",
                 res.errors ? ", queries failed: " : "", res.errors ? res.first_error : "",
                 o.client_limited ? "; client-limited" : "",
                 discounted ? "; failed while the client host paused: measured again" : "");
    vb_window_wire_free(&w);
    vb_workload_result_free(&res);
    for (int k = 0; k < n_agents - 1; k++) vb_wire_free(got[k]), vb_histogram_destroy(&theirs[k]);
    vb_histogram_destroy(&merged);
    return VB_OK;
}

/* A helper lent to another agent's capacity item (Assign.helper_of): its session open for the whole item, it runs
 * each ShareRequest's share of a window with the same open loop and sends its ShareReport, until the release. */
static int helper(vb_phase_ctx *ctx, vb_error *err) {
    const Vbench__Assign *as = ctx->assign;
    const vb_point *p = &ctx->point;
    if (!ctx->mail) return vb_error_set(err, "agent", 1, "capacity helper: no mailbox");
    if (vb_phase_ensure_index(ctx, err)) return VB_ERROR;
    vb_session *s = *ctx->session;
    int cpus = ctx->n_cpus > 0 ? ctx->n_cpus : (int)sysconf(_SC_NPROCESSORS_ONLN);
    int embedded = (vb_engine_ops_of(s->engine)->flags & VB_ENGINE_EMBEDDED) != 0;
    vb_phase_log(ctx, "info", "%s capacity: lent to agent %s as its helper %u: this agent runs its share of each window",
                 s->engine_name, as->helper_of, as->share_index);
    for (;;) {
        Vbench__Envelope *env = vb_mailbox_take(ctx->mail, UINT64_MAX, ctx->stop);
        if (!env) return vb_error_set(err, "agent", 1, "aborted");
        const Vbench__ShareRequest *rq = env->body_case == VBENCH__ENVELOPE__BODY_SHARE_REQUEST ? env->share_request
                                                                                                : NULL;
        if (!rq || rq->attempt != as->attempt || strcmp(rq->item_key, as->item_key) != 0) {
            vb_wire_free(env);
            continue;
        }
        if (rq->release) {
            vb_wire_free(env);
            return VB_OK;
        }
        vb_workload_config cfg = {
            .engine = s->engine, .clients = (int)p->clients, .cpus = ctx->cpus, .n_cpus = ctx->n_cpus,
            .queries = s->ds->test, .n_queries = s->ds->n_test, .dim = s->ds->dim, .k = s->k,
            .search = {.ef_search = rq->ef_search}, .filter = {VB_FILTER_NONE, 0},
            .window_ns = (uint64_t)llround(p->window_s * 1e9), .warmup_ns = (uint64_t)llround(p->warmup_s * 1e9),
            .stop = ctx->stop, .loop = VB_LOOP_OPEN, .target_rate = rq->rate,
            .seed = vb_capacity_share_seed(rq->seed, (int)as->share_index),
        };
        vb_workload_result res;
        vb_error werr;
        vb_error_clear(&werr);
        Vbench__ShareReport r = VBENCH__SHARE_REPORT__INIT;
        Vbench__Histogram h = VBENCH__HISTOGRAM__INIT;
        char why[512] = "";
        r.item_key = as->item_key;
        r.attempt = as->attempt;
        r.step = rq->step;
        r.agent = (char *)(ctx->agent_id ? ctx->agent_id : "");
        r.rate = rq->rate;
        vb_hiccup pause;   /* as the leader's: the window's host pauses */
        vb_hiccup_start(&pause, 0);
        int run = vb_workload_run(&cfg, &res, &werr);
        vb_hiccup_stop(&pause);
        r.host_pause_ms = (double)pause.max_ns / 1e6;
        if (run != VB_OK) {
            r.error = werr.message;
        } else if (res.clients_lost) {
            snprintf(why, sizeof why, "%d client(s) lost the server and could not reconnect (first: %.300s)",
                     res.clients_lost, res.first_error);
            r.error = why;
        } else {
            vb_capacity_client cl = client_of(&res, (int)p->clients, cpus, embedded, rq->unloaded_ms, rq->target_ms);
            r.elapsed_s = res.elapsed_s;
            r.scheduled = res.scheduled;
            r.started = res.queries + res.edge_queries + res.errors;
            r.errors = res.errors;
            r.client_limited = vb_capacity_client_check(&cl, why, sizeof why);
            r.why = why;
            vb_phase_histogram_to_wire(res.corrected, &h);
            r.corrected = &h;
            r.client_cores = res.elapsed_s > 0 ? res.client_cpu_s / res.elapsed_s : 0;
            r.window_start = res.window_start;
            r.own_p99_ms = (double)vb_histogram_value_at_percentile(res.own, 99) / 1e6;
        }
        int stopped = res.stopped || (ctx->stop && atomic_load(ctx->stop));
        if (!stopped) {
            Vbench__Envelope out = VBENCH__ENVELOPE__INIT;
            out.body_case = VBENCH__ENVELOPE__BODY_SHARE_REPORT;
            out.share_report = &r;
            vb_wire_send(ctx->out, NULL, &out, NULL);
        }
        vb_phase_histogram_wire_free(&h);
        vb_workload_result_free(&res);
        vb_wire_free(env);
        if (stopped) return vb_error_set(err, "agent", 1, "aborted");
    }
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
    if (ctx->assign->helper_of && ctx->assign->helper_of[0]) return helper(ctx, err);
    if (ctx->assign->n_helpers > VB_CAPACITY_MAX_HELPERS)
        return vb_error_set(err, "agent", 1, "capacity: %zu helper agents, at most %d", ctx->assign->n_helpers,
                            VB_CAPACITY_MAX_HELPERS);
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
