/* Exact ground truth: brute force with OpenBLAS sgemm plus top-k selection, cached by content hash.
 *
 * Queries x corpus blocks are multiplied with cblas_sgemm (the inner products), converted to the metric's
 * distance with precomputed norms, and each query keeps its best candidates; the final top-k is then re-ranked
 * with vb_distance (double accumulation), so the distances stored are the ones recall compares against.
 * An optional row mask restricts the search to rows that pass a filter (filtered ground truth). */
#ifndef VB_DATASETS_GROUNDTRUTH_H
#define VB_DATASETS_GROUNDTRUTH_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "datasets/dataset.h"
#include "util/error.h"

typedef struct vb_groundtruth {
    size_t n_queries, k;
    int64_t *ids;     /* n_queries x k, ascending distance; -1 where fewer than k rows pass the mask */
    float *dists;     /* n_queries x k */
} vb_groundtruth;

/* Computes ground truth. mask (may be NULL) has n_rows bytes, non-zero = row passes. threads <= 0: all cores.
 * Caller frees with vb_groundtruth_free. */
int vb_groundtruth_compute(const float *corpus, size_t n_rows, const float *queries, size_t n_queries,
                           size_t dim, vb_metric metric, size_t k, const uint8_t *mask, int threads,
                           vb_groundtruth *out, vb_error *err);

/* How the work is spread over threads (see groundtruth.c); results are identical in every mode. */
typedef enum {
    VB_GT_AUTO = 0,         /* the measured default: VB_GT_SPLIT_ROWS */
    VB_GT_SPLIT_ROWS = 1,   /* one worker per thread over a slice of the corpus, OpenBLAS single-threaded */
    VB_GT_BLAS_THREADS = 2, /* one worker, OpenBLAS threads each sgemm */
} vb_gt_mode;

/* Options for vb_groundtruth_compute_opts; zero fields take the defaults. */
typedef struct vb_gt_opts {
    int threads;         /* <= 0: all cores the process may run on */
    vb_gt_mode mode;
    size_t query_block;  /* queries per sgemm (default 1024) */
    size_t row_block;    /* corpus rows per sgemm (default 1024) */
    /* Called as the work advances (may be NULL): done and total in query x row units (done = total at the end),
     * always from the calling thread, at most once per corpus block it finishes itself. */
    void (*progress)(void *arg, uint64_t done, uint64_t total);
    void *progress_arg;
    /* May be NULL. Read between corpus blocks: once non-zero, the workers take no more blocks and the call
     * returns VB_ERROR ("stopped", nothing cached) within a block's time (an abort from the coordinator). */
    atomic_int *stop;
} vb_gt_opts;

/* vb_groundtruth_compute with tuning options (opts may be NULL). */
int vb_groundtruth_compute_opts(const float *corpus, size_t n_rows, const float *queries, size_t n_queries,
                                size_t dim, vb_metric metric, size_t k, const uint8_t *mask,
                                const vb_gt_opts *opts, vb_groundtruth *out, vb_error *err);

/* The cache file vb_groundtruth_get uses for these arguments (cache_dir resolved as for datasets). */
int vb_groundtruth_path(const vb_dataset *ds, size_t k, const uint8_t *mask, const char *mask_tag,
                        const char *cache_dir, char *buf, size_t len, vb_error *err);

/* Loads from cache_dir (file named by dataset content hash, k, and mask tag), or computes and stores it
 * atomically (write to a temporary name, then rename). mask_tag names the filter ("" for none).
 * A cache file that is short, has a different header or fails its checksum is recomputed and replaced. */
int vb_groundtruth_get(const vb_dataset *ds, size_t k, const uint8_t *mask, const char *mask_tag,
                       const char *cache_dir, vb_groundtruth *out, vb_error *err);

/* Staged ground truth for a corpus that grows by prefixes (the streaming phase, docs/metrics.md): prev holds the
 * exact top-k over rows [0, from) of corpus (ids are row numbers); this computes the top-k over the new rows
 * [from, to) only and merges the two per query by (distance, id), so out is the top-k over [0, to) without a
 * recomputation over the old rows. prev may be NULL or have from = 0 (then it is a plain compute over [0, to)).
 * prev->k and prev->n_queries must match k and n_queries. Caller frees out with vb_groundtruth_free. Ties at
 * the k-th distance may pick another row of the same float distance than a full recomputation: the distances,
 * which recall compares against, are identical. */
int vb_groundtruth_extend(const vb_groundtruth *prev, const float *corpus, size_t from, size_t to,
                          const float *queries, size_t n_queries, size_t dim, vb_metric metric, size_t k, int threads,
                          vb_groundtruth *out, vb_error *err);

/* The dataset's shipped neighbours (ds->neighbors, ds->gt_k >= k) as the ground truth, once they pass a check:
 * `sample` queries (ds->gt_check when 0; all of them when there are fewer), drawn with a fixed seed from the
 * dataset's content hash, get their exact top-k computed here, and each shipped neighbour of theirs must be no
 * farther than the exact k-th (ties at the k-th distance are both right; 1e-5 relative slack for the shipped
 * file's float32 arithmetic). A mismatch is refused (VB_ERROR) with the ids of the queries that disagree. The
 * distances of out are computed here for every query (exact, double), reading the corpus in row order.
 * *checked (may be NULL): how many queries were checked. */
int vb_groundtruth_from_shipped(const vb_dataset *ds, size_t k, size_t sample, vb_groundtruth *out, size_t *checked,
                                vb_error *err);

/* vb_groundtruth_get computing, when it must, with these options (opts may be NULL). With the dataset's
 * use_shipped_gt and no mask, the shipped neighbours after vb_groundtruth_from_shipped's check instead. */
int vb_groundtruth_get_opts(const vb_dataset *ds, size_t k, const uint8_t *mask, const char *mask_tag,
                            const char *cache_dir, const vb_gt_opts *opts, vb_groundtruth *out, vb_error *err);

/* The filtered ground truth of per-query class filters (the filtered phase's label_own / label_other / class):
 * query i over exactly the rows whose class (ds->train_class) is query_class[i] (n_test entries; < 0: no row
 * passes, the query's ids stay -1). Queries are grouped by class, one masked computation per distinct class over
 * its queries, so the work is the sum over classes of queries x rows of that class. Cached like
 * vb_groundtruth_get under the tag and a hash of both class columns. VB_ERROR when ds has no classes. */
int vb_groundtruth_by_class(const vb_dataset *ds, size_t k, const int32_t *query_class, const char *tag,
                            const char *cache_dir, const vb_gt_opts *opts, vb_groundtruth *out, vb_error *err);

void vb_groundtruth_free(vb_groundtruth *gt);

#endif
