/* The filtered phase: one selectivity per plan item, one client, every query of the budget once; recall against
 * the ground truth over the rows that pass the filter, QPS, latency, and the count of short answers.
 *
 * The filter. Every corpus row carries a tag, vb_dataset_tag(row id), a 64-bit mix of the id into [0, 10000):
 * uniform, deterministic and independent of the vectors (the loader stores it beside each vector). A selectivity
 * s becomes the filter "tag < round(s * 10000)", so "tag < 100" passes 1 % of the rows and "tag < 1000" 10 %;
 * the rows that pass are a random sample of the corpus, not a region of the vector space. The exact count of
 * passing rows is taken from the tags of the corpus rows and reported (passing_rows).
 *
 * Ground truth is exact over the passing rows only (a row mask handed to vb_groundtruth_get), cached by dataset
 * content hash, k and mask under the tag "tag<N". vb_measure_run checks the answers before scoring: a returned
 * row whose tag fails the filter is an engine error and fails the item, naming the row. Recall is then scored as
 * metrics/recall.h defines it (short answers count their missing rows as misses; a row that repeats an id is a
 * miss too, and the answers with one are counted apart as duplicate_answers, a validity finding).
 *
 * Short answers are the point of this phase (docs/design.md §3, filtered): an engine that filters after a fixed-size
 * candidate scan (pgvector 0.8 without iterative scan) answers at full speed and without an error, but with
 * one or two rows at 1 %. short_answers counts the answers with fewer distinct rows than the filtered ground truth
 * holds for that query: k whenever at least k rows pass, which is every query at the profile's selectivities.
 *
 * The class predicates (label_own, label_other, class = L: engines/filter.h) filter on the dataset's real class
 * column (vb_dataset train_class: Fashion-MNIST's labels, a synthetic corpus's clusters) instead of a column that is
 * independent of the vectors, so the filter keeps (own class) or removes (another class) a query's neighbourhood:
 * each query has its own filter, class = vb_filter_class_for(...), sent with its search (vb_measure_run_filters).
 * The ground truth is per query over exactly the rows of its class (vb_groundtruth_by_class: one masked
 * computation per distinct class), every returned row is checked against its query's filter, and the result
 * records the mean share of rows that passed each query's filter (passed_share, also its selectivity: nothing
 * was asked for) and the mean count of them (passing_rows). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "agent/phase.h"
#include "agent/measure.h"
#include "datasets/dataset.h"
#include "engines/filter.h"
#include "util/clock.h"

#define TAG_RANGE 10000   /* vb_dataset_tag's values: [0, TAG_RANGE) */

/* The point of this item: selectivity (not for a class predicate), queries (0 = the whole query set, capped by it),
 * ef_search. */
static int read_point(vb_phase_ctx *ctx, int by_class, double *sel, long *nq, long *ef, vb_error *err) {
    *sel = ctx->point.selectivity;
    *nq = ctx->point.queries;
    *ef = ctx->point.ef_search;
    if ((!by_class && !(*sel >= 1.0 / TAG_RANGE && *sel <= 1)) || *nq < 0 || *ef < 1)
        return vb_error_set(err, "agent", 1, "filtered point: selectivity %g (expected %g to 1), queries %ld, "
                            "ef_search %ld", *sel, 1.0 / TAG_RANGE, *nq, *ef);
    return VB_OK;
}

/* mask[row] = 1 when the row passes the filter; row ids are corpus row numbers (as the loader assigns them).
 * Returns the mask (caller frees) and the passing count, or NULL when out of memory. */
static uint8_t *filter_mask(const vb_dataset *ds, const vb_filter *f, size_t *passing) {
    uint8_t *mask = malloc(ds->n_train ? ds->n_train : 1);
    if (!mask) return NULL;
    size_t n = 0;
    for (size_t i = 0; i < ds->n_train; i++) {
        mask[i] = (uint8_t)vb_filter_passes(f, (int64_t)i, -1);   /* the synthetic columns only */
        n += mask[i];
    }
    *passing = n;
    return mask;
}

/* The filtered ground truth from the cache, or computed and stored; says which in the log. */
static int filtered_groundtruth(vb_phase_ctx *ctx, vb_session *s, const uint8_t *mask, const char *mask_tag,
                                vb_groundtruth *gt, vb_error *err) {
    char path[4352];
    if (vb_groundtruth_path(s->ds, (size_t)s->k, mask, mask_tag, ctx->cache_dir, path, sizeof path, err))
        return VB_ERROR;
    struct stat before, after;
    int existed = stat(path, &before) == 0;
    vb_phase_gt_progress gp;
    vb_gt_opts go = vb_phase_gt_start(ctx, &gp, s->ds->n_test);
    if (vb_groundtruth_get_opts(s->ds, (size_t)s->k, mask, mask_tag, ctx->cache_dir, &go, gt, err) != VB_OK)
        return vb_error_prefix(err, "filtered ground truth (%s) for %s", mask_tag, s->dataset_name);
    double secs = vb_phase_gt_done(&gp);
    /* A cache file that failed its checks is recomputed and replaced (renamed over): a new inode. */
    int cached = existed && stat(path, &after) == 0 && after.st_ino == before.st_ino &&
                 after.st_mtim.tv_sec == before.st_mtim.tv_sec && after.st_mtim.tv_nsec == before.st_mtim.tv_nsec;
    vb_phase_log(ctx, "info", "filtered ground truth %s for %s: %s in %.2f s", mask_tag, s->dataset_name,
                 cached ? "loaded from the cache" : "computed and cached", secs);
    return VB_OK;
}

/* The result message of a point, sent to the coordinator. */
static void send_result(vb_phase_ctx *ctx, const vb_measure *m, double sel, double share, uint64_t passing, long ef,
                        const char *filter_text, int pred) {
    vb_phase_progress(ctx, "queries", m->queries, m->queries, m->qps, 1);
    vb_measure_wire mw;
    Vbench__Result r;
    vb_measure_point_begin(m, 1, &mw, &r);
    Vbench__FilteredResult w = VBENCH__FILTERED_RESULT__INIT;
    w.selectivity = sel;
    w.passing_rows = passing;
    w.passed_share = share;
    w.ef_search = (int32_t)ef;
    w.m = &mw.msg;
    w.filter = (char *)filter_text;
    w.predicate = (char *)vb_filter_predicate_name(pred);
    r.body_case = VBENCH__RESULT__BODY_FILTERED;
    r.filtered = &w;
    vb_measure_point_send(ctx, &r, &mw, "filtered");
}

/* A class predicate's point: one class filter per query, the ground truth per query over its class's rows. */
static int filtered_by_class(vb_phase_ctx *ctx, int pred, long nq, long ef, vb_error *err) {
    if (vb_phase_ensure_index(ctx, err)) return VB_ERROR;
    vb_session *s = *ctx->session;
    const vb_dataset *ds = s->ds;
    const char *name = vb_filter_predicate_name(pred);
    if (!ds->train_class || !ds->test_class || ds->n_classes < 1)
        return vb_error_set(err, "agent", 1, "%s has no class per row, so the %s predicate has nothing to select on: "
                            "use a dataset with classes (fashion-mnist-784-euclidean's labels, or a synthetic one, "
                            "whose clusters are its classes) or the range / equality / and predicates",
                            s->dataset_name, name);
    int32_t fixed = ctx->point.filter_class;
    if (pred == VB_PRED_CLASS && (fixed < 0 || fixed >= ds->n_classes))
        return vb_error_set(err, "agent", 1, "predicate class: class %d is not a class of %s (0 .. %d): choose "
                            "another `class:` in the profile", (int)fixed, s->dataset_name, ds->n_classes - 1);
    if (pred == VB_PRED_LABEL_OTHER && ds->n_classes < 2)
        return vb_error_set(err, "agent", 1, "predicate label_other: %s has one class only, so no query has another",
                            s->dataset_name);
    if (nq == 0 || (size_t)nq > ds->n_test) nq = (long)ds->n_test;
    size_t *count = calloc((size_t)ds->n_classes, sizeof *count);
    int32_t *qclass = malloc(ds->n_test * sizeof *qclass);
    vb_filter *filters = malloc(ds->n_test * sizeof *filters);
    if (!count || !qclass || !filters) {
        free(count), free(qclass), free(filters);
        return vb_error_set(err, "agent", 1, "out of memory for %zu per-query filters", ds->n_test);
    }
    for (size_t r = 0; r < ds->n_train; r++)
        if (ds->train_class[r] >= 0 && ds->train_class[r] < ds->n_classes) count[ds->train_class[r]]++;
    double share = 0, rows = 0;
    size_t few = 0;
    for (size_t q = 0; q < ds->n_test; q++) {
        qclass[q] = vb_filter_class_for(pred, ds->test_class[q], fixed, ds->n_classes, q,
                                        (uint64_t)ctx->point.class_seed);
        filters[q] = vb_filter_class(qclass[q]);
        if (q >= (size_t)nq) continue;
        size_t pass = qclass[q] >= 0 && qclass[q] < ds->n_classes ? count[qclass[q]] : 0;
        rows += (double)pass;
        few += pass < (size_t)s->k;
    }
    rows /= (double)nq;
    share = ds->n_train ? rows / (double)ds->n_train : 0;
    free(count);
    if (few)
        vb_phase_log(ctx, "warn", "%s: %zu of %ld queries filter on a class with fewer than k = %d rows", s->dataset_name,
                     few, nq, s->k);
    char filter_text[96], tag[48];
    if (pred == VB_PRED_CLASS) snprintf(filter_text, sizeof filter_text, "class = %d", (int)fixed);
    else if (pred == VB_PRED_LABEL_OWN) snprintf(filter_text, sizeof filter_text, "class = the query's class");
    else snprintf(filter_text, sizeof filter_text, "class = another class per query (seed %ld)", ctx->point.class_seed);
    snprintf(tag, sizeof tag, "%s", name);

    vb_groundtruth gt;
    vb_phase_gt_progress gp;
    vb_gt_opts go = vb_phase_gt_start(ctx, &gp, ds->n_test);
    int rc = vb_groundtruth_by_class(ds, (size_t)s->k, qclass, tag, ctx->cache_dir, &go, &gt, err);
    free(qclass);
    if (rc != VB_OK) {
        free(filters);
        return vb_error_prefix(err, "filtered ground truth (%s) for %s", name, s->dataset_name);
    }
    vb_phase_log(ctx, "info", "filtered ground truth %s for %s (one per class) in %.2f s", name, s->dataset_name,
                 vb_phase_gt_done(&gp));
    vb_measure m;
    if (ctx->stop && atomic_load(ctx->stop)) rc = vb_error_set(err, "agent", 1, "aborted");
    if (rc == VB_OK) {
        vb_phase_progress(ctx, "queries", 0, (uint64_t)nq, 0, 1);
        rc = vb_measure_run_filters(ctx, s, (int)ef, (size_t)nq, filters, &gt, &m, err);
        if (rc != VB_OK) vb_error_prefix(err, "filtered (%s: %s)", name, filter_text);
    }
    if (rc == VB_OK) {
        send_result(ctx, &m, share, share, (uint64_t)llround(rows), ef, filter_text, pred);
        vb_measure_free(&m);
    }
    free(filters);
    vb_groundtruth_free(&gt);
    return rc;
}

int vb_phase_filtered(vb_phase_ctx *ctx, vb_error *err) {
    double sel;
    long nq, ef;
    int pred = ctx->point.predicate ? ctx->point.predicate : VB_PRED_RANGE;
    vb_filter_kind kind = vb_filter_predicate_kind(pred);
    if (kind == VB_FILTER_NONE) return vb_error_set(err, "agent", 1, "filtered point: unknown predicate %d", pred);
    if (read_point(ctx, vb_filter_predicate_is_class(pred), &sel, &nq, &ef, err)) return VB_ERROR;
    /* Refuse before anything is built: an engine that cannot filter has no row in this table. */
    const vb_engine_ops *ops = vb_engine_find(ctx->assign->engine);
    if (ops && !(ops->flags & vb_filter_kind_flag(kind)))
        return vb_error_set(err, "engine", 1, "%s cannot run the %s predicate: its adapter does not support it",
                            ops->name, vb_filter_predicate_name(pred));
    if (vb_filter_predicate_is_class(pred)) return filtered_by_class(ctx, pred, nq, ef, err);
    vb_filter filter;
    double share;
    if (vb_filter_make(kind, sel, &filter, &share, err)) return VB_ERROR;
    if (vb_phase_ensure_index(ctx, err)) return VB_ERROR;
    vb_session *s = *ctx->session;
    if (nq == 0 || (size_t)nq > s->ds->n_test) nq = (long)s->ds->n_test;

    char mask_tag[64], filter_text[96];
    vb_filter_key(&filter, mask_tag, sizeof mask_tag);
    vb_filter_text(&filter, filter_text, sizeof filter_text);
    size_t passing;
    uint8_t *mask = filter_mask(s->ds, &filter, &passing);
    if (!mask) return vb_error_set(err, "agent", 1, "out of memory for a row mask of %zu rows", s->ds->n_train);
    if (passing < (size_t)s->k)
        vb_phase_log(ctx, "warn", "%s: only %zu of %zu rows pass %s (fewer than k = %d)", s->dataset_name, passing,
                     s->ds->n_train, filter_text, s->k);
    vb_groundtruth gt;
    int rc = filtered_groundtruth(ctx, s, mask, mask_tag, &gt, err);
    free(mask);
    if (rc != VB_OK) return VB_ERROR;
    if (ctx->stop && atomic_load(ctx->stop)) {
        vb_groundtruth_free(&gt);
        return vb_error_set(err, "agent", 1, "aborted");
    }

    vb_measure m;
    vb_phase_progress(ctx, "queries", 0, (uint64_t)nq, 0, 1);
    rc = vb_measure_run(ctx, s, (int)ef, (size_t)nq, &filter, &gt, &m, err);
    if (rc != VB_OK) vb_error_prefix(err, "filtered (%s)", filter_text);
    if (rc == VB_OK) {
        send_result(ctx, &m, sel, s->ds->n_train ? (double)passing / (double)s->ds->n_train : 0, passing, ef,
                    filter_text, pred);
        vb_measure_free(&m);
    }
    vb_groundtruth_free(&gt);
    return rc;
}
