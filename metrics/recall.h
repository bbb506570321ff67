/* Recall@k exactly as docs/design.md §4 (the ann-benchmarks definition), computed by vbench, never by an engine.
 *
 * For one query: d_k is the k-th exact distance from the ground truth; every returned id's distance to the query
 * is recomputed with vb_distance from the corpus; a returned id counts when its distance <= d_k + 1e-3.
 * recall = counted / k. Id-overlap recall (|distinct returned ids ∩ true top-k| / k) is kept beside it.
 *
 * Duplicate ids: an answer that returns the same id on two rows (MariaDB 11.8.9 does, in some filtered answers) is
 * scored on its distinct ids. Each distinct id counts at most once for both measures, so a repeated row is a miss:
 * it takes a result slot without being another neighbour. `duplicates` counts the rows that repeat an id of an
 * earlier row; the first such row is named (duplicate_id at duplicate_rows[0], repeated at duplicate_rows[1]) so
 * the finding can be shown. It is not an error: the measurement stands, and the count becomes a validity finding.
 *
 * An answer with fewer than k distinct ids is a "short answer": its missing rows (and its repeats) count as
 * misses, and it is counted separately.
 *
 * Filtered ground truth: when fewer than k rows pass the filter, true_ids holds the m < k valid ids first and
 * -1 after them. A correct engine can then return only m rows, so every "k" above becomes expected = min(k, m):
 * d_k is the distance of the last valid true neighbour, the denominators are `expected` (a perfect engine scores
 * 1.0, not m/k), and an answer is short only when it has fewer than `expected` distinct ids. With m = 0 there
 * is nothing to find and the query scores 1.0 on both measures. vbench does not see the filter, so rows beyond
 * the expected ones are neither credited nor penalised: the count of distinct ids within d_k + 1e-3 is capped at
 * `expected`; a row that violates the filter but lies close to the query shows up as a gap between recall and id
 * overlap.
 *
 * d_k is the larger of the stored ground-truth distance (float32, as in ann-benchmarks files) and the distance
 * of the k-th true id recomputed with vb_distance, so the true k-th neighbour itself always passes the threshold
 * whatever the rounding of the stored value; true_dists may be NULL (then the recomputed distance alone).
 *
 * Errors (VB_ERROR, domain "recall", message naming the offender): a returned or true id outside [0, n_rows),
 * a duplicate id in the ground truth, more than k returned rows (counted with the repeats), a valid true id after
 * -1 padding, k < 1. On error *out is left untouched. */
#ifndef VB_METRICS_RECALL_H
#define VB_METRICS_RECALL_H

#include <stddef.h>
#include <stdint.h>

#include "datasets/distance.h"
#include "util/error.h"

#define VB_RECALL_EPSILON 1e-3

typedef struct vb_recall_one {
    double recall;       /* distance-threshold recall, in [0, 1] */
    double id_overlap;   /* id-overlap recall, in [0, 1] */
    int returned;        /* rows the engine returned, repeats included */
    int short_answer;    /* 1 when the distinct ids < expected (= k unless the filtered ground truth has fewer) */
    int expected;        /* min(k, valid ground-truth rows): the denominator of both recalls */
    int duplicates;      /* rows that repeat the id of an earlier row; distinct ids = returned - duplicates */
    int64_t duplicate_id;       /* duplicates > 0: the id of the first repeating row (in answer order) */
    int duplicate_rows[2];      /* duplicates > 0: its earlier row and the repeating row, 0-based */
} vb_recall_one;

/* Scores one answer. corpus: row-major n_rows x dim; an id outside [0, n_rows) is an error naming it.
 * true_ids/true_dists: the exact top-k of this query (ascending distance), -1 padded (see above). */
int vb_recall_query(const float *corpus, size_t n_rows, size_t dim, vb_metric metric, const float *query,
                    const int64_t *returned, int n_returned, const int64_t *true_ids, const float *true_dists,
                    int k, vb_recall_one *out, vb_error *err);

/* Running sums over many queries. Start from a zeroed struct. rows_returned counts repeats too;
 * duplicate_answers counts the answers with at least one repeated id. */
typedef struct vb_recall_sum {
    double recall_sum, id_overlap_sum;
    uint64_t queries, short_answers, rows_returned, duplicate_answers;
} vb_recall_sum;

void vb_recall_sum_add(vb_recall_sum *s, const vb_recall_one *one);
double vb_recall_sum_mean(const vb_recall_sum *s);          /* mean recall, 0 when empty */
double vb_recall_sum_mean_overlap(const vb_recall_sum *s);

/* The distribution of per-query recall over one measurement (docs/metrics.md "Recall distribution"): beside the
 * mean, the minimum, p1, p10 and p50, and the shares of queries at recall 0 and below 0.5. A mean of 0.95 fits
 * every query at 0.95 as well as 5 % of the queries with nothing right; these tell the two apart.
 *
 * Percentiles are nearest-rank over the exact per-query values: with the n values sorted ascending, pP is the
 * value of rank ceil(P / 100 x n) (1-based), the smallest value that at least P % of the queries are at or below;
 * it is always one of the measured values, never an interpolation. With fewer than 100 queries p1 is the minimum.
 *
 * The input is every query's recall in query order (NaN: a query the measurement did not answer, as a window that
 * did not reach it; left out). The values are kept as they are, not binned: a query's recall is counted / expected,
 * a multiple of 1/k only while the ground truth has k rows (a filtered one may have fewer) and only for one answer
 * (a window scores a query by the mean over its answers), so only the values themselves give exact order
 * statistics. The summary of a concatenation is the summary over all the values, whatever the order or the split
 * (two workers' values, two repeats): vb_recall_dist_merge keeps them so. */
typedef struct vb_recall_dist {
    uint64_t queries;                 /* values summarised (NaN left out); 0: nothing, every other field 0 */
    double min, p1, p10, p50;
    double zero_share, below_half_share;   /* of the queries: recall exactly 0; recall < 0.5 */
} vb_recall_dist;

/* The summary of n per-query values (NaN ones left out). VB_ERROR only when out of memory for the sorted copy. */
int vb_recall_dist_of(const double *per_query, size_t n, vb_recall_dist *out, vb_error *err);
/* pP of n values sorted ascending, nearest rank as above; P in (0, 100]; NaN when n is 0. */
double vb_recall_percentile(const double *sorted, size_t n, double p);
/* Appends from's n_from values to *into (*n_into of them, malloc'd; NULL with 0 to start): the values of two
 * workers or of two repeats as one set. VB_ERROR when out of memory (*into is then unchanged). */
int vb_recall_dist_merge(double **into, size_t *n_into, const double *from, size_t n_from, vb_error *err);

#endif
