/* Recall@k of one answer and its running sums; the definitions and edge cases are in metrics/recall.h.
 *
 * Every id is checked before any vector is read, so a bad answer is an error with the id in it and never an
 * out-of-bounds read. Repeated ids and id overlap use sorted copies, so a large k stays O(k log k): the answer's
 * ids are sorted and made distinct, and both recalls are counted over the distinct ids only. */
#include "metrics/recall.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define STACK_IDS 256   /* ids sorted on the stack (three arrays of k); larger k allocates */

static int cmp_i64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* Names the first row, in answer order, that repeats the id of an earlier row, and that earlier row.
 * ids: the answer's distinct ids, sorted; first_row: scratch for n_ids entries. */
static void first_duplicate(const int64_t *returned, int n, const int64_t *ids, int n_ids, int64_t *first_row,
                            vb_recall_one *out) {
    for (int u = 0; u < n_ids; u++) first_row[u] = -1;
    for (int i = 0; i < n; i++) {
        const int64_t *hit = bsearch(&returned[i], ids, (size_t)n_ids, sizeof *ids, cmp_i64);
        if (!hit) continue;   /* cannot happen: ids holds every returned id */
        int64_t *first = first_row + (hit - ids);
        if (*first < 0) {
            *first = i;
            continue;
        }
        out->duplicate_id = returned[i];
        out->duplicate_rows[0] = (int)*first;
        out->duplicate_rows[1] = i;
        return;
    }
}

/* Counts the ids common to two sorted arrays of distinct ids. */
static int intersect_sorted(const int64_t *a, int na, const int64_t *b, int nb) {
    int i = 0, j = 0, common = 0;
    while (i < na && j < nb) {
        if (a[i] < b[j]) i++;
        else if (a[i] > b[j]) j++;
        else { common++; i++; j++; }
    }
    return common;
}

static int score(const float *corpus, size_t n_rows, size_t dim, vb_metric metric, const float *query,
                 const int64_t *returned, int n_returned, const int64_t *true_ids, const float *true_dists, int k,
                 vb_recall_one *out, int64_t *ret_sorted, int64_t *true_sorted, int64_t *scratch, vb_error *err) {
    /* Ground truth: m valid ids, then only -1 padding. */
    int m = 0;
    while (m < k && true_ids[m] >= 0) m++;
    for (int j = m; j < k; j++)
        if (true_ids[j] >= 0)
            return vb_error_set(err, "recall", 1, "ground truth id %lld at position %d follows -1 padding",
                                (long long)true_ids[j], j);
    for (int j = 0; j < m; j++)
        if ((uint64_t)true_ids[j] >= n_rows)
            return vb_error_set(err, "recall", 1, "ground truth id %lld is outside the corpus [0, %zu)",
                                (long long)true_ids[j], n_rows);

    /* The answer: ids in range. Repeats are not an error: the sorted copy keeps each id once (recall.h). */
    for (int i = 0; i < n_returned; i++)
        if (returned[i] < 0 || (uint64_t)returned[i] >= n_rows)
            return vb_error_set(err, "recall", 1, "returned id %lld (row %d of the answer) is outside the corpus [0, %zu)",
                                (long long)returned[i], i, n_rows);
    int distinct = 0;
    if (n_returned > 0) {   /* memcpy/qsort want non-NULL pointers even for 0 elements */
        memcpy(ret_sorted, returned, (size_t)n_returned * sizeof *ret_sorted);
        qsort(ret_sorted, (size_t)n_returned, sizeof *ret_sorted, cmp_i64);
        distinct = 1;
        for (int i = 1; i < n_returned; i++)
            if (ret_sorted[i] != ret_sorted[distinct - 1]) ret_sorted[distinct++] = ret_sorted[i];
    }
    out->returned = n_returned;
    out->duplicates = n_returned - distinct;
    if (out->duplicates > 0) first_duplicate(returned, n_returned, ret_sorted, distinct, scratch, out);

    int expected = m;   /* min(k, m), as m <= k */
    out->expected = expected;
    out->short_answer = distinct < expected;
    if (expected == 0) {   /* nothing passes the filter: nothing to find, see recall.h */
        out->recall = out->id_overlap = 1.0;
        return VB_OK;
    }

    memcpy(true_sorted, true_ids, (size_t)m * sizeof *true_sorted);
    qsort(true_sorted, (size_t)m, sizeof *true_sorted, cmp_i64);
    for (int j = 1; j < m; j++)
        if (true_sorted[j] == true_sorted[j - 1])
            return vb_error_set(err, "recall", 1, "ground truth lists id %lld twice", (long long)true_sorted[j]);

    double d_k = vb_distance(metric, query, corpus + (size_t)true_ids[expected - 1] * dim, dim);
    if (true_dists) d_k = fmax(d_k, (double)true_dists[expected - 1]);   /* fmax ignores a NaN side */
    double threshold = d_k + VB_RECALL_EPSILON;

    int counted = 0;   /* over the distinct ids: a repeated row is never a second hit */
    for (int i = 0; i < distinct; i++) {
        double d = vb_distance(metric, query, corpus + (size_t)ret_sorted[i] * dim, dim);
        if (d <= threshold) counted++;   /* a NaN distance never counts */
    }
    if (counted > expected) counted = expected;
    out->recall = (double)counted / expected;
    out->id_overlap = (double)intersect_sorted(ret_sorted, distinct, true_sorted, m) / expected;
    return VB_OK;
}

int vb_recall_query(const float *corpus, size_t n_rows, size_t dim, vb_metric metric, const float *query,
                    const int64_t *returned, int n_returned, const int64_t *true_ids, const float *true_dists,
                    int k, vb_recall_one *out, vb_error *err) {
    if (k < 1) return vb_error_set(err, "recall", 1, "k must be at least 1, got %d", k);
    if (n_returned < 0) return vb_error_set(err, "recall", 1, "negative answer length %d", n_returned);
    if (n_returned > k)
        return vb_error_set(err, "recall", 1, "the answer has %d rows, more than k = %d", n_returned, k);
    if (!corpus || !query || !true_ids || !out || (n_returned > 0 && !returned))
        return vb_error_set(err, "recall", 1, "missing corpus, query, ground truth, answer or output");

    int64_t stack[3 * STACK_IDS], *buf = stack;
    if (k > STACK_IDS) {
        buf = malloc(3 * (size_t)k * sizeof *buf);
        if (!buf) return vb_error_set(err, "recall", 2, "out of memory for k = %d", k);
    }
    vb_recall_one one = {0};
    int rc = score(corpus, n_rows, dim, metric, query, returned, n_returned, true_ids, true_dists, k, &one, buf,
                   buf + k, buf + 2 * (size_t)k, err);
    if (buf != stack) free(buf);
    if (rc == VB_OK) *out = one;   /* out untouched on error */
    return rc;
}

void vb_recall_sum_add(vb_recall_sum *s, const vb_recall_one *one) {
    s->recall_sum += one->recall;
    s->id_overlap_sum += one->id_overlap;
    s->queries++;
    s->short_answers += one->short_answer ? 1 : 0;
    s->rows_returned += (uint64_t)one->returned;
    s->duplicate_answers += one->duplicates > 0 ? 1 : 0;
}

double vb_recall_sum_mean(const vb_recall_sum *s) {
    return s->queries ? s->recall_sum / (double)s->queries : 0.0;
}

double vb_recall_sum_mean_overlap(const vb_recall_sum *s) {
    return s->queries ? s->id_overlap_sum / (double)s->queries : 0.0;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double vb_recall_percentile(const double *sorted, size_t n, double p) {
    if (n == 0) return NAN;
    double r = ceil(p / 100.0 * (double)n);   /* nearest rank, 1-based */
    size_t rank = r < 1 ? 1 : r > (double)n ? n : (size_t)r;
    return sorted[rank - 1];
}

int vb_recall_dist_of(const double *per_query, size_t n, vb_recall_dist *out, vb_error *err) {
    memset(out, 0, sizeof *out);
    double *v = n ? malloc(n * sizeof *v) : NULL;
    if (n && !v) return vb_error_set(err, "recall", 2, "out of memory for the recall of %zu queries", n);
    size_t m = 0, zero = 0, below = 0;
    for (size_t i = 0; i < n; i++) {
        if (isnan(per_query[i])) continue;
        v[m++] = per_query[i];
        zero += per_query[i] == 0.0;
        below += per_query[i] < 0.5;
    }
    if (m > 0) {
        qsort(v, m, sizeof *v, cmp_double);
        out->queries = m;
        out->min = v[0];
        out->p1 = vb_recall_percentile(v, m, 1);
        out->p10 = vb_recall_percentile(v, m, 10);
        out->p50 = vb_recall_percentile(v, m, 50);
        out->zero_share = (double)zero / (double)m;
        out->below_half_share = (double)below / (double)m;
    }
    free(v);
    return VB_OK;
}

int vb_recall_dist_merge(double **into, size_t *n_into, const double *from, size_t n_from, vb_error *err) {
    if (n_from == 0) return VB_OK;
    double *grown = realloc(*into, (*n_into + n_from) * sizeof *grown);
    if (!grown) return vb_error_set(err, "recall", 2, "out of memory for the recall of %zu queries", *n_into + n_from);
    memcpy(grown + *n_into, from, n_from * sizeof *grown);
    *into = grown;
    *n_into += n_from;
    return VB_OK;
}
