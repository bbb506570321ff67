/* The runtime estimate of a campaign, before it starts (docs/commands.md "Estimate"; the reference stand prints
 * "mariadb ~12.1 h | alisql ~33.1 h ... total ~45.8 h"), and its comparison with the truth at the end.
 *
 * Each plan item gets seconds from its shape and the engine's rates: build = rows / load rate + rows / build
 * rate; a recall-sweep point = queries / QPS at its ef_search (QPS scaled as 100 / ef_search from the rate at
 * 100); a concurrency window = warmup_s + window_s (+1 s of set-up); a filtered point = queries / filtered QPS;
 * churn = the reinsert (fraction x rows / insert rate, at most limit_s) + the queries before and after; the exact
 * ground truth once per dataset (queries x rows x dim multiply-adds at a BLAS rate); a server start per engine
 * with a recipe. Each dataset's preparation is a line of its own: the float32 cache its opening writes (the synthetic
 * corpus, or a conversion) at CACHE_WRITE_BPS, and its exact ground truth (or, with ground_truth: shipped, the
 * check of its sample), both skipped by a run that finds them cached. Rates are the newest ones measured on this host at the nearest dimension
 * (coordinator/history.h), scaled by dimension, else the engine's defaults (its ops' estimate, engines/engine.h;
 * rough, said as such).
 *
 * Recorded in the manifest: estimate.total_s, estimate.engine.NAME_s, estimate.basis.NAME, estimate.items (a
 * JSON object item key -> seconds, read by `vbench status` for its ETA), estimate.run_started (epoch seconds).
 * At the end: estimate.actual_s and estimate.ratio (actual / estimate) and an event. */
#ifndef VB_COORDINATOR_ESTIMATE_H
#define VB_COORDINATOR_ESTIMATE_H

#include <stdio.h>

#include "config/plan.h"
#include "config/profile.h"
#include "store/store.h"
#include "util/error.h"

typedef struct vb_estimate {
    size_t n_items;
    double *item_s;            /* per plan item; 0 for items already done */
    size_t n_engines;
    double *engine_s;          /* per profile engine */
    char **basis;              /* per engine: "measured here 2025-..: dim 128, campaign smoke" or "default" */
    double total_s;
    size_t n_uncounted;        /* items on a dataset whose shape cannot be read yet: not in the seconds above */
    char line[1024];           /* "estimate: hnswlib ~1.2 min | exact ~20 s | total ~1.5 min" */
    /* Per dataset with items to run, its preparation (counted in the first item's seconds): "synth-10m: float32
     * cache 3.7 GiB ~25 s unless cached, ground truth 10000 x 10000000 x 96 ~4.2 min unless cached". */
    size_t n_prep;
    char **prep;
    double *prep_s;
} vb_estimate;

/* done: per plan item, nonzero when it needs no time (NULL: nothing done). cache_dir: the history's. */
int vb_estimate_plan(const vb_profile *p, const vb_plan *plan, const unsigned char *done, const char *cache_dir,
                     vb_estimate *out, vb_error *err);
void vb_estimate_free(vb_estimate *e);

/* A server engine's bytes on disk per row at dimension dim: measured on this host (history, scaled by dimension)
 * or the engine's default (table + index: about 2.3-2.5 copies of the float32 vector plus the graph's
 * neighbour lists). 0 for an embedded engine (no server). basis says which. */
double vb_estimate_bytes_per_row(const char *engine, const char *adapter, double dim, const char *cache_dir,
                                 char *basis, size_t blen);
/* A server's own files besides the rows (catalog, WAL or redo log, binary log): 1 GiB. */
#define VB_ESTIMATE_SERVER_FIXED_BYTES (1024.0 * 1024 * 1024)

/* campaign.c's hooks. start: estimates the items the store's plan does not have as done, prints the line (to
 * `say`, unless quiet), records it in the manifest and as an event. end: records the actual time and the
 * ratio, says it, and appends this campaign's measured rates to the history. */
void vb_estimate_campaign_start(vb_store *s, const vb_profile *p, const vb_plan *plan, const char *cache_dir,
                                FILE *say);
void vb_estimate_campaign_end(vb_store *s, const vb_profile *p, const char *cache_dir, double wall_s, FILE *say);

#endif
