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
 * holds for that query: k whenever at least k rows pass, which is every query at the profile's selectivities. */
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

/* The point of this item: selectivity, queries (0 = the whole query set, capped by it), ef_search. */
static int read_point(vb_phase_ctx *ctx, double *sel, long *nq, long *ef, vb_error *err) {
    *sel = ctx->point.selectivity;
    *nq = ctx->point.queries;
    *ef = ctx->point.ef_search;
    if (!(*sel >= 1.0 / TAG_RANGE && *sel <= 1) || *nq < 0 || *ef < 1)
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
        mask[i] = (uint8_t)vb_filter_passes(f, (int64_t)i);
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
    vb_phase_progress(ctx, "ground truth", 0, s->ds->n_test, 0, 1);
    uint64_t t0 = vb_now_ns();
    vb_phase_gt_progress gp;
    vb_gt_opts go = vb_phase_gt_opts(ctx, &gp, s->ds->n_test);
    if (vb_groundtruth_get_opts(s->ds, (size_t)s->k, mask, mask_tag, ctx->cache_dir, &go, gt, err) != VB_OK)
        return vb_error_prefix(err, "filtered ground truth (%s) for %s", mask_tag, s->dataset_name);
    double secs = (double)(vb_now_ns() - t0) / 1e9;
    /* A cache file that failed its checks is recomputed and replaced (renamed over): a new inode. */
    int cached = existed && stat(path, &after) == 0 && after.st_ino == before.st_ino &&
                 after.st_mtim.tv_sec == before.st_mtim.tv_sec && after.st_mtim.tv_nsec == before.st_mtim.tv_nsec;
    vb_phase_progress(ctx, "ground truth", s->ds->n_test, s->ds->n_test, 0, 1);
    vb_phase_log(ctx, "info", "filtered ground truth %s for %s: %s in %.2f s", mask_tag, s->dataset_name,
                 cached ? "loaded from the cache" : "computed and cached", secs);
    return VB_OK;
}

int vb_phase_filtered(vb_phase_ctx *ctx, vb_error *err) {
    double sel;
    long nq, ef;
    if (read_point(ctx, &sel, &nq, &ef, err)) return VB_ERROR;
    /* Refuse before anything is built: an engine that cannot filter has no row in this table. */
    vb_filter_kind kind = ctx->point.predicate ? (vb_filter_kind)ctx->point.predicate : VB_FILTER_TAG_BELOW;
    const vb_engine_ops *ops = vb_engine_find(ctx->assign->engine);
    if (ops && !(ops->flags & vb_filter_kind_flag(kind)))
        return vb_error_set(err, "engine", 1, "%s cannot run the %s predicate: its adapter does not support it",
                            ops->name, vb_filter_kind_name(kind));
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
        vb_phase_progress(ctx, "queries", m.queries, (uint64_t)nq, m.qps, 1);
        vb_measure_wire mw;
        vb_measure_to_wire(&m, &mw);
        Vbench__FilteredResult w = VBENCH__FILTERED_RESULT__INIT;
        w.selectivity = sel;
        w.passing_rows = passing;
        w.ef_search = (int32_t)ef;
        w.m = &mw.msg;
        w.filter = filter_text;
        w.predicate = (char *)vb_filter_kind_name(kind);
        Vbench__Result r = VBENCH__RESULT__INIT;
        r.completes_item = 1;
        r.body_case = VBENCH__RESULT__BODY_FILTERED;
        r.filtered = &w;
        vb_phase_result(ctx, &r, "filtered");
        vb_measure_wire_free(&mw);
        vb_measure_free(&m);
    }
    vb_groundtruth_free(&gt);
    return rc;
}
