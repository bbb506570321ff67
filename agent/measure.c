/* Budget-mode (or closed-loop window) run plus recall scoring, the steps every "how good and how fast is it now"
 * measurement takes. */
#include "agent/measure.h"
#include "engines/filter.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/window.h"
#include "util/clock.h"
#include "agent/workload.h"
#include "datasets/dataset.h"
#include "metrics/recall.h"
#include "proto/wire.h"

/* Every returned row must pass its query's filter (and be a corpus row); the first that does not is an engine error.
 * filters: one per query, or NULL for f for every query. */
static int check_filter(const vb_session *s, const vb_workload_result *res, size_t nq, const vb_filter *f,
                        const vb_filter *filters, vb_error *err) {
    const int32_t *cls = s->ds->train_class;
    for (size_t i = 0; i < nq; i++) {
        if (filters) f = &filters[i];
        const int64_t *ids = res->answers + i * (size_t)s->k;
        for (int j = 0; j < res->n_answer[i]; j++) {
            if (ids[j] < 0 || (uint64_t)ids[j] >= s->ds->n_train)
                return vb_error_set(err, "engine", 1, "%s returned row %lld for query %zu: not a row of the corpus "
                                    "(%zu rows)", s->engine_name, (long long)ids[j], i, s->ds->n_train);
            if (!vb_filter_passes(f, ids[j], cls ? cls[ids[j]] : -1)) {
                char text[96];
                vb_filter_text(f, text, sizeof text);
                return vb_error_set(err, "engine", 1, "%s returned row %lld for query %zu (tag %d, tag2 %d, label %d, "
                                    "class %d), which fails the filter %s: a filtered search must return passing rows "
                                    "only", s->engine_name, (long long)ids[j], i, (int)vb_dataset_tag(ids[j]),
                                    (int)vb_dataset_tag2(ids[j]), (int)vb_dataset_label(ids[j]),
                                    cls ? (int)cls[ids[j]] : -1, text);
            }
        }
    }
    return VB_OK;
}

static void put_u32(uint8_t *p, uint32_t v) {
    p[0] = (uint8_t)v, p[1] = (uint8_t)(v >> 8), p[2] = (uint8_t)(v >> 16), p[3] = (uint8_t)(v >> 24);
}

static void put_f32(uint8_t *p, float f) {
    uint32_t v;
    memcpy(&v, &f, sizeof v);
    put_u32(p, v);
}

/* The per-query recall of a measurement (NaN: not answered) into its distribution and its wire form
 * (Measurement.query_recall: float32 little-endian per query, kept up to VB_WIRE_QUERY_RECALL_MAX). */
static int keep_query_recall(vb_measure *out, const double *per_query, size_t n, vb_error *err) {
    if (vb_recall_dist_of(per_query, n, &out->dist, err)) return VB_ERROR;
    if (n == 0 || 4 * n > VB_WIRE_QUERY_RECALL_MAX) return VB_OK;
    uint8_t *b = malloc(4 * n);
    if (!b) return VB_OK;   /* the distribution stands without the per-query values */
    for (size_t i = 0; i < n; i++) put_f32(b + 4 * i, (float)per_query[i]);
    out->query_recall = b;
    out->query_recall_len = 4 * n;
    return VB_OK;
}

/* The answers blob (layout in proto/vbench.proto, SweepResult.answers). Distances are recomputed here, after the
 * timed loop, with the function recall uses, so the exported distances are the ones recall was scored on. */
static void keep_answers(const vb_session *s, const vb_workload_result *res, size_t nq, vb_measure *out) {
    size_t k = (size_t)s->k, per = 4 + 8 * k, len = 16 + nq * per;
    if (len > VB_WIRE_ANSWERS_MAX || s->ds->n_train >= UINT32_MAX) {
        snprintf(out->answers_note, sizeof out->answers_note, "answers not kept: %zu queries x k = %zu take %zu "
                 "bytes, over the %u byte bound (VB_WIRE_ANSWERS_MAX)", nq, k, len, VB_WIRE_ANSWERS_MAX);
        return;
    }
    uint8_t *b = malloc(len);
    if (!b) {
        snprintf(out->answers_note, sizeof out->answers_note, "answers not kept: out of memory for %zu bytes", len);
        return;
    }
    memcpy(b, "VBA1", 4);
    put_u32(b + 4, (uint32_t)nq);
    put_u32(b + 8, (uint32_t)k);
    put_u32(b + 12, (uint32_t)s->ds->metric);
    uint8_t *p = b + 16;
    for (size_t i = 0; i < nq; i++, p += per) {
        put_f32(p, (float)((double)res->answer_ns[i] / 1e9));
        const int64_t *ids = res->answers + i * k;
        const float *q = s->ds->test + i * s->ds->dim;
        for (size_t j = 0; j < k; j++) {
            uint8_t *row = p + 4 + 8 * j;
            if ((int)j < res->n_answer[i]) {   /* ids were checked against the corpus by recall scoring */
                put_u32(row, (uint32_t)ids[j]);
                put_f32(row + 4, (float)vb_distance(s->ds->metric, q, s->ds->train + (size_t)ids[j] * s->ds->dim,
                                                    s->ds->dim));
            } else {
                put_u32(row, UINT32_MAX);
                put_f32(row + 4, INFINITY);
            }
        }
    }
    out->answers = b;
    out->answers_len = len;
}

/* The plan first: a filtered query that leaves the vector index is the commonest way for a number to mean
 * something else than it seems (docs/design.md §6, validity). A failed EXPLAIN is recorded, it does not fail the item. */
static void explain(vb_session *s, int ef_search, const vb_filter *filter, vb_measure *out) {
    vb_error perr;
    if (vb_engine_explain(s->engine, &s->spec, ef_search, s->k, filter, &out->index_used, out->plan,
                          sizeof out->plan, &perr) != VB_OK) {
        out->index_used = -1;
        snprintf(out->plan, sizeof out->plan, "EXPLAIN failed: %s", perr.message);
    }
}

/* A budget run's progress for the coordinator: "queries", done of the budget, with the rate so far (issue 36.4: a
 * filtered item's line stayed at 0 of its queries for minutes on a slow server). */
typedef struct budget_progress {
    vb_phase_ctx *ctx;
    uint64_t t0_ns;
} budget_progress;

static void on_budget_progress(void *arg, int in_window, uint64_t done, uint64_t total) {
    (void)in_window;
    budget_progress *bp = arg;
    double secs = (double)(vb_now_ns() - bp->t0_ns) / 1e9;
    vb_phase_progress(bp->ctx, "queries", done, total, secs > 0 ? (double)done / secs : 0, done >= total);
}

static int measure(vb_phase_ctx *ctx, vb_session *s, int ef_search, size_t n_queries, const vb_filter *filter,
                   const vb_filter *filters, const vb_groundtruth *gt, int with_answers, vb_measure *out,
                   vb_error *err) {
    memset(out, 0, sizeof *out);
    out->index_used = -1;
    if (n_queries == 0 || n_queries > s->ds->n_test) n_queries = s->ds->n_test;
    vb_workload_config cfg = {
        .engine = s->engine, .clients = 1, .cpus = ctx->cpus, .n_cpus = ctx->n_cpus,
        .queries = s->ds->test, .n_queries = s->ds->n_test, .dim = s->ds->dim, .k = s->k,
        .search = {.ef_search = ef_search}, .filter = {VB_FILTER_NONE, 0},
        .queries_budget = n_queries, .stop = ctx->stop,
    };
    if (filter) cfg.filter = *filter;
    cfg.filters = filters;
    if (filters) filter = &filters[0];   /* the plan of the first query's filter: the others differ in a value */
    explain(s, ef_search, filter, out);
    budget_progress bp = {ctx, vb_now_ns()};
    cfg.progress = on_budget_progress, cfg.progress_arg = &bp;
    vb_workload_result res;
    if (vb_workload_run(&cfg, &res, err) != VB_OK) return VB_ERROR;
    int rc = VB_OK;
    if (ctx->stop && atomic_load(ctx->stop)) rc = vb_error_set(err, "agent", 1, "aborted");
    else if (res.errors == n_queries)
        rc = vb_error_set(err, "engine", 1, "%s: every query failed: %s", s->engine_name, res.first_error);
    if (rc == VB_OK && filter && (filter->kind == VB_FILTER_TAG_BELOW || filter->kind == VB_FILTER_CLASS_EQ))
        rc = check_filter(s, &res, n_queries, filter, filters, err);
    vb_recall_sum sum = {0};
    double *per_query = rc == VB_OK ? malloc(n_queries * sizeof *per_query) : NULL;
    if (rc == VB_OK && !per_query) rc = vb_error_set(err, "agent", 1, "out of memory scoring %zu queries", n_queries);
    for (size_t i = 0; i < n_queries && rc == VB_OK; i++) {
        vb_recall_one one;
        rc = vb_recall_query(s->ds->train, s->ds->n_train, s->ds->dim, s->ds->metric, s->ds->test + i * s->ds->dim,
                             res.answers + i * (size_t)s->k, res.n_answer[i], gt->ids + i * gt->k,
                             gt->dists + i * gt->k, s->k, &one, err);
        if (rc != VB_OK) {
            vb_error_prefix(err, "%s, ef_search %d, query %zu", s->engine_name, ef_search, i);
            break;
        }
        if (one.duplicates > 0 && sum.duplicate_answers == 0)
            snprintf(out->duplicate_example, sizeof out->duplicate_example, "query %zu: id %lld at rows %d and %d", i,
                     (long long)one.duplicate_id, one.duplicate_rows[0], one.duplicate_rows[1]);
        vb_recall_sum_add(&sum, &one);
        per_query[i] = one.recall;
    }
    if (rc == VB_OK) rc = keep_query_recall(out, per_query, n_queries, err);
    free(per_query);
    if (rc == VB_OK) {
        out->queries = n_queries;
        out->short_answers = sum.short_answers;
        out->duplicate_answers = sum.duplicate_answers;
        out->errors = res.errors;
        out->elapsed_s = res.elapsed_s;
        out->qps = res.elapsed_s > 0 ? (double)res.queries / res.elapsed_s : 0;
        out->recall = vb_recall_sum_mean(&sum);
        out->id_overlap = vb_recall_sum_mean_overlap(&sum);
        out->client_cpu_s = res.client_cpu_s;
        out->latency = res.latency;
        res.latency = NULL;
        if (with_answers) keep_answers(s, &res, n_queries, out);
    }
    vb_workload_result_free(&res);
    return rc;
}

int vb_measure_run(vb_phase_ctx *ctx, vb_session *s, int ef_search, size_t n_queries, const vb_filter *filter,
                   const vb_groundtruth *gt, vb_measure *out, vb_error *err) {
    return measure(ctx, s, ef_search, n_queries, filter, NULL, gt, 0, out, err);
}

int vb_measure_run_filters(vb_phase_ctx *ctx, vb_session *s, int ef_search, size_t n_queries, const vb_filter *filters,
                           const vb_groundtruth *gt, vb_measure *out, vb_error *err) {
    return measure(ctx, s, ef_search, n_queries, NULL, filters, gt, 0, out, err);
}

int vb_measure_run_answers(vb_phase_ctx *ctx, vb_session *s, int ef_search, size_t n_queries,
                           const vb_groundtruth *gt, vb_measure *out, vb_error *err) {
    return measure(ctx, s, ef_search, n_queries, NULL, NULL, gt, 1, out, err);
}

/* Scores one answer of query qi; the first answer with a repeated id becomes the example. */
static int score(const vb_session *s, const vb_groundtruth *gt, int ef_search, size_t qi, const int64_t *ids, int n,
                 vb_measure *out, vb_recall_one *one, vb_error *err) {
    /* streaming: rows acknowledged during the window (ids >= visible) are counted apart; scored by distance like
     * any row, one of them is a hit when it is as close as the visible rows' k-th neighbour (it displaced one) */
    if (out->visible > 0)
        for (int j = 0; j < n; j++)
            if (ids[j] >= (int64_t)out->visible) {
                out->fresh_found++;
                if (ids[j] > out->fresh_max) out->fresh_max = ids[j];
            }
    if (vb_recall_query(s->ds->train, s->ds->n_train, s->ds->dim, s->ds->metric, s->ds->test + qi * s->ds->dim, ids,
                        n, gt->ids + qi * gt->k, gt->dists + qi * gt->k, s->k, one, err) != VB_OK)
        return vb_error_prefix(err, "%s, ef_search %d, query %zu", s->engine_name, ef_search, qi);
    if (one->duplicates > 0 && !out->duplicate_example[0])
        snprintf(out->duplicate_example, sizeof out->duplicate_example, "query %zu: id %lld at rows %d and %d", qi,
                 (long long)one->duplicate_id, one->duplicate_rows[0], one->duplicate_rows[1]);
    return VB_OK;
}

/* The window's answers scored, after the run: per query the mean over its answers (the kept one times its count,
 * plus the differing ones), then the mean over the queries answered. A query with only identical answers takes
 * its one answer's recall as it is, summed in query order, so a deterministic engine's recall is bit for bit the
 * one-client sweep's when the window covers the query set. */
static int score_window(const vb_session *s, const vb_groundtruth *gt, int ef_search, const vb_workload_result *res,
                        vb_measure *out, vb_error *err) {
    const size_t nq = s->ds->n_test, k = (size_t)s->k;
    double *ex_recall = calloc(nq, sizeof *ex_recall), *ex_overlap = calloc(nq, sizeof *ex_overlap);
    double *per_query = malloc(nq * sizeof *per_query);   /* NaN: not answered in the window */
    uint64_t *ex_n = calloc(nq, sizeof *ex_n);
    int rc = ex_recall && ex_overlap && ex_n && per_query ? VB_OK : vb_error_set(err, "agent", 1, "out of memory scoring %zu "
                                                                     "queries", nq);
    vb_recall_one one;
    for (size_t j = 0; j < res->n_extra && rc == VB_OK; j++) {
        size_t qi = res->extra_query[j];
        if ((rc = score(s, gt, ef_search, qi, res->extra_ids + j * k, res->extra_n[j], out, &one, err))) break;
        ex_recall[qi] += one.recall, ex_overlap[qi] += one.id_overlap, ex_n[qi]++;
        out->short_answers += one.short_answer ? 1 : 0;
        out->duplicate_answers += one.duplicates > 0 ? 1 : 0;
    }
    out->differing = res->n_extra;
    double recall_sum = 0, overlap_sum = 0;
    for (size_t qi = 0; qi < nq && rc == VB_OK; qi++) {
        uint64_t c = res->answer_count[qi];
        per_query[qi] = NAN;
        if (c == 0 && ex_n[qi] == 0) continue;
        double r = 0, o = 0;
        if (c > 0) {
            if ((rc = score(s, gt, ef_search, qi, res->answers + qi * k, res->n_answer[qi], out, &one, err))) break;
            r = one.recall, o = one.id_overlap;
            out->short_answers += one.short_answer ? c : 0;
            out->duplicate_answers += one.duplicates > 0 ? c : 0;
        }
        if (ex_n[qi]) {
            r = ((double)c * r + ex_recall[qi]) / (double)(c + ex_n[qi]);
            o = ((double)c * o + ex_overlap[qi]) / (double)(c + ex_n[qi]);
        }
        recall_sum += r, overlap_sum += o;
        per_query[qi] = r;
        out->covered++;
    }
    if (rc == VB_OK && out->covered) {
        out->recall = recall_sum / (double)out->covered;
        out->id_overlap = overlap_sum / (double)out->covered;
        rc = keep_query_recall(out, per_query, nq, err);
    }
    free(ex_recall), free(ex_overlap), free(ex_n), free(per_query);
    return rc;
}

/* What a streaming window adds to a window run: the full corpus's ground truth for the contrast score, and the
 * call at the window's end (vb_measure_stream_window). */
typedef struct stream_extra {
    const vb_groundtruth *gt_full;
    void (*at_end)(void *arg);
    void *at_end_arg;
} stream_extra;

static int window_run(vb_phase_ctx *ctx, vb_session *s, int ef_search, int clients, double window_s,
                      double warmup_s, int open, double target_rate, const vb_groundtruth *gt,
                      const stream_extra *sx, vb_measure *out, vb_error *err);

int vb_measure_window(vb_phase_ctx *ctx, vb_session *s, int ef_search, int clients, double window_s,
                      double warmup_s, const vb_groundtruth *gt, vb_measure *out, vb_error *err) {
    memset(out, 0, sizeof *out);
    return window_run(ctx, s, ef_search, clients, window_s, warmup_s, 0, 0, gt, NULL, out, err);
}

int vb_measure_stream_window(vb_phase_ctx *ctx, vb_session *s, int ef_search, int clients, double window_s, int open,
                             double target_rate, size_t visible, const vb_groundtruth *gt,
                             const vb_groundtruth *gt_full, void (*at_end)(void *arg), void *at_end_arg,
                             vb_measure *out, vb_error *err) {
    memset(out, 0, sizeof *out);
    if (visible == 0) return vb_error_set(err, "agent", 1, "a streaming window over no visible rows");
    out->visible = visible;
    out->fresh_max = -1;
    out->recall_full = -1;
    stream_extra sx = {gt_full, at_end, at_end_arg};
    return window_run(ctx, s, ef_search, clients, window_s, 0, open, target_rate, gt, &sx, out, err);
}

/* The window's progress reports, and the streaming window's call at the window's end: the workload's last progress
 * call, made when the window's clock ends (agent/workload.h), before the workers are joined. */
typedef struct window_progress {
    vb_window_progress w;      /* first: vb_window_on_progress takes it */
    const stream_extra *sx;
    int ended;
} window_progress;

static void window_end(window_progress *p) {
    if (p->ended || !p->sx || !p->sx->at_end) return;
    p->ended = 1;
    p->sx->at_end(p->sx->at_end_arg);
}

static void window_on_progress(void *arg, int in_window, uint64_t done_ns, uint64_t total_ns) {
    window_progress *p = arg;
    vb_window_on_progress(&p->w, in_window, done_ns, total_ns);
    if (in_window && done_ns >= total_ns) window_end(p);
}

static int window_run(vb_phase_ctx *ctx, vb_session *s, int ef_search, int clients, double window_s,
                      double warmup_s, int open, double target_rate, const vb_groundtruth *gt,
                      const stream_extra *sx, vb_measure *out, vb_error *err) {
    out->index_used = -1;
    if (!out->visible) explain(s, ef_search, NULL, out);
    window_progress prog = {{ctx, -1, NULL, {-1, -1}}, sx, 0};
    vb_workload_config cfg = {
        .engine = s->engine, .clients = clients, .cpus = ctx->cpus, .n_cpus = ctx->n_cpus,
        .queries = s->ds->test, .n_queries = s->ds->n_test, .dim = s->ds->dim, .k = s->k,
        .search = {.ef_search = ef_search}, .filter = {VB_FILTER_NONE, 0},
        .window_ns = (uint64_t)llround(window_s * 1e9), .warmup_ns = (uint64_t)llround(warmup_s * 1e9),
        .stop = ctx->stop, .keep_answers = 1,
        .loop = open ? VB_LOOP_OPEN : VB_LOOP_CLOSED, .target_rate = target_rate, .seed = 0x5eed,
        .progress = window_on_progress, .progress_arg = &prog,
    };
    vb_workload_result res;
    int wrc = vb_workload_run(&cfg, &res, err);
    window_end(&prog);   /* when the stop flag cut the window, or it never began */
    if (wrc != VB_OK)
        return vb_error_prefix(err, "%s, ef_search %d, %d clients", s->engine_name, ef_search, clients);
    int rc = VB_OK;
    if (res.stopped || (ctx->stop && atomic_load(ctx->stop))) rc = vb_error_set(err, "agent", 1, "aborted");
    else if (res.queries == 0 && (res.errors || res.warmup_errors))
        rc = vb_error_set(err, "engine", 1, "%s, ef_search %d, %d clients: no query succeeded in the window: %s",
                          s->engine_name, ef_search, clients, res.first_error);
    else if (res.queries == 0)
        rc = vb_error_set(err, "agent", 1, "%s, ef_search %d, %d clients: no query started and finished inside the "
                          "%.3f s window (a query takes longer than the window?)", s->engine_name, ef_search, clients,
                          window_s);
    if (rc == VB_OK) rc = score_window(s, gt, ef_search, &res, out, err);
    if (rc == VB_OK && sx && sx->gt_full) {
        vb_measure full;
        memset(&full, 0, sizeof full);
        rc = score_window(s, sx->gt_full, ef_search, &res, &full, err);
        out->recall_full = full.recall;
        free(full.query_recall);
    }
    if (rc == VB_OK) {
        out->queries = res.queries;
        out->errors = res.errors;
        out->unscored = res.unscored;
        out->elapsed_s = res.elapsed_s;
        out->qps = res.qps;
        out->client_cpu_s = res.client_cpu_s;
        out->latency = res.latency;
        res.latency = NULL;
    } else {   /* the window's own scoring may have kept its per-query recall before a later step failed */
        free(out->query_recall);
        out->query_recall = NULL;
        out->query_recall_len = 0;
    }
    vb_workload_result_free(&res);
    return rc;
}

void vb_measure_free(vb_measure *m) {
    if (!m) return;
    vb_histogram_destroy(&m->latency);
    free(m->answers);
    m->answers = NULL;
    free(m->query_recall);
    m->query_recall = NULL;
}

void vb_measure_to_wire(const vb_measure *m, vb_measure_wire *w) {
    vbench__measurement__init(&w->msg);
    vbench__histogram__init(&w->latency);
    vb_phase_histogram_to_wire(m->latency, &w->latency);
    w->msg.queries = m->queries;
    w->msg.recall = m->recall;
    w->msg.id_overlap = m->id_overlap;
    w->msg.short_answers = m->short_answers;
    w->msg.duplicate_answers = m->duplicate_answers;
    w->msg.duplicate_example = (char *)m->duplicate_example;
    w->msg.errors = m->errors;
    w->msg.elapsed_s = m->elapsed_s;
    w->msg.qps = m->qps;
    w->msg.latency = &w->latency;
    w->msg.client_cpu_s = m->client_cpu_s;
    /* the wire's 0 / 1 / 2: not known / scans the vector index / does not */
    w->msg.index_used = m->index_used == 1 ? 1 : m->index_used == 0 ? 2 : 0;
    w->msg.plan = (char *)m->plan;
    w->msg.recall_queries = m->dist.queries;
    w->msg.recall_min = m->dist.min;
    w->msg.recall_p1 = m->dist.p1;
    w->msg.recall_p10 = m->dist.p10;
    w->msg.recall_p50 = m->dist.p50;
    w->msg.recall_zero_share = m->dist.zero_share;
    w->msg.recall_below_half_share = m->dist.below_half_share;
    w->msg.query_recall.data = m->query_recall;
    w->msg.query_recall.len = m->query_recall_len;
}

void vb_measure_wire_free(vb_measure_wire *w) {
    vb_phase_histogram_wire_free(&w->latency);
}

void vb_measure_point_begin(const vb_measure *m, int completes, vb_measure_wire *w, Vbench__Result *r) {
    vb_measure_to_wire(m, w);
    *r = (Vbench__Result)VBENCH__RESULT__INIT;
    r->completes_item = completes;
}

void vb_measure_point_send(vb_phase_ctx *ctx, Vbench__Result *r, vb_measure_wire *w, const char *suffix) {
    vb_phase_result(ctx, r, suffix);
    vb_measure_wire_free(w);
}

