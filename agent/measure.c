/* Budget-mode run plus recall scoring, the steps every "how good and how fast is it now" measurement takes. */
#include "agent/measure.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/workload.h"
#include "datasets/dataset.h"
#include "metrics/recall.h"

/* Every returned row must pass the filter (and be a corpus row); the first that does not is an engine error. */
static int check_filter(const vb_session *s, const vb_workload_result *res, size_t nq, const vb_filter *f,
                        vb_error *err) {
    for (size_t i = 0; i < nq; i++) {
        const int64_t *ids = res->answers + i * (size_t)s->k;
        for (int j = 0; j < res->n_answer[i]; j++) {
            if (ids[j] < 0 || (uint64_t)ids[j] >= s->ds->n_train)
                return vb_error_set(err, "engine", 1, "%s returned row %lld for query %zu: not a row of the corpus "
                                    "(%zu rows)", s->engine_name, (long long)ids[j], i, s->ds->n_train);
            int32_t tag = vb_dataset_tag(ids[j]);
            if (tag >= f->tag_below)
                return vb_error_set(err, "engine", 1, "%s returned row %lld for query %zu, whose tag %d fails the "
                                    "filter tag < %d: a filtered search must return passing rows only",
                                    s->engine_name, (long long)ids[j], i, (int)tag, (int)f->tag_below);
        }
    }
    return VB_OK;
}

int vb_measure_run(vb_phase_ctx *ctx, vb_session *s, int ef_search, size_t n_queries, const vb_filter *filter,
                   const vb_groundtruth *gt, vb_measure *out, vb_error *err) {
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
    /* The plan first: a filtered query that leaves the vector index is the commonest way for a number to mean
     * something else than it seems (SPEC 6, validity). A failed EXPLAIN is recorded, it does not fail the item. */
    vb_error perr;
    if (vb_engine_explain(s->engine, &s->spec, ef_search, s->k, filter, &out->index_used, out->plan,
                          sizeof out->plan, &perr) != VB_OK) {
        out->index_used = -1;
        snprintf(out->plan, sizeof out->plan, "EXPLAIN failed: %s", perr.message);
    }
    vb_workload_result res;
    if (vb_workload_run(&cfg, &res, err) != VB_OK) return VB_ERROR;
    int rc = VB_OK;
    if (ctx->stop && atomic_load(ctx->stop)) rc = vb_error_set(err, "agent", 1, "aborted");
    else if (res.errors == n_queries)
        rc = vb_error_set(err, "engine", 1, "%s: every query failed: %s", s->engine_name, res.first_error);
    if (rc == VB_OK && filter && filter->kind == VB_FILTER_TAG_BELOW) rc = check_filter(s, &res, n_queries, filter, err);
    vb_recall_sum sum = {0};
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
    }
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
    }
    vb_workload_result_free(&res);
    return rc;
}

void vb_measure_free(vb_measure *m) {
    if (m) vb_histogram_destroy(&m->latency);
}

