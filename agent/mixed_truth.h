/* The mixed phase's ground truth (issue 38; docs/metrics.md "Mixed"): which rows exist and which vector each holds,
 * as the acknowledged writes left them, and the scoring of a window's answers against it.
 *
 * Every vector is a row of the dataset (vecs, dim): a row id's vector is vecs[src[id]], or the id is absent
 * (src[id] < 0: deleted, or never inserted). One writer applies the writes in the order they were acknowledged
 * (vb_mixed_apply), so the state before a window is exact. A window's answers are scored against the exact top-k over
 * that state (vb_mixed_truth_make, brute force over the live rows with the BLAS ground truth), with the rows written
 * during the window (vb_mixed_touched) allowed any of the vectors the window saw them hold:
 *   hit    a returned row within the k-th exact distance (the k-th of the rows not written during the window: a
 *          true neighbour deleted or moved during the window makes room for the next one), by its vector before the
 *          window or, for a row written during it, by any vector it held then;
 *   ghost  a returned id that was absent before the window and not written during it (deleted rows never count);
 *   stale  a returned row, not written during the window, that is a miss by its vector but would be a hit by the
 *          vector it held before its last update (the engine answered from the old position).
 * recall of an answer = hits / min(k, live rows). */
#ifndef VB_AGENT_MIXED_TRUTH_H
#define VB_AGENT_MIXED_TRUTH_H

#include <stddef.h>
#include <stdint.h>

#include "datasets/distance.h"
#include "util/error.h"

enum { VB_MIXED_UPDATE = 1, VB_MIXED_DELETE = 2, VB_MIXED_INSERT = 3 };

typedef struct vb_mixed_state {
    size_t n_ids;       /* ids [0, n_ids) */
    int32_t *src;       /* the row of vecs each id holds; -1 absent */
    int32_t *prev;      /* the row it held before its last update; -1 none */
    size_t live;
} vb_mixed_state;

int vb_mixed_state_init(vb_mixed_state *s, size_t n_ids, size_t live_first, vb_error *err); /* ids [0, live_first) hold their own row */
int vb_mixed_state_copy(const vb_mixed_state *from, vb_mixed_state *to, vb_error *err);
void vb_mixed_state_free(vb_mixed_state *s);
/* One acknowledged write: update (id gets row src), delete, insert (id, absent, gets row src). */
void vb_mixed_apply(vb_mixed_state *s, int op, int64_t id, int32_t src);

/* The rows written during a window and each vector they held then: pairs (id, src), src -1 for a delete. */
typedef struct vb_mixed_touched {
    size_t n, cap;
    int64_t *id;
    int32_t *src;
    int sorted;
} vb_mixed_touched;
int vb_mixed_touched_add(vb_mixed_touched *t, int64_t id, int32_t src);
void vb_mixed_touched_sort(vb_mixed_touched *t);
void vb_mixed_touched_clear(vb_mixed_touched *t);
void vb_mixed_touched_free(vb_mixed_touched *t);

/* The exact top-k2 (k2 = 2k, at most the live rows) over a state's live rows for every query. */
typedef struct vb_mixed_truth {
    size_t n_queries, k, k2;
    int64_t *ids;       /* n_queries x k2, row ids, nearest first; -1 beyond the live rows */
    float *dists;
    size_t live;
} vb_mixed_truth;
int vb_mixed_truth_make(const vb_mixed_state *s, const float *vecs, size_t dim, vb_metric metric, const float *queries,
                        size_t n_queries, size_t k, vb_mixed_truth *out, vb_error *err);
void vb_mixed_truth_free(vb_mixed_truth *t);

typedef struct vb_mixed_score {
    double recall;
    int hits, ghosts, stale;
    int64_t first_ghost;    /* -1 none */
} vb_mixed_score;
/* Scores one answer (ids[0, n)) to query q against the truth made of state s before the window. */
void vb_mixed_score_answer(const vb_mixed_truth *t, const vb_mixed_state *s, const vb_mixed_touched *during,
                           const float *vecs, size_t dim, vb_metric metric, const float *query, size_t q,
                           const int64_t *ids, int n, vb_mixed_score *out);

/* The engine's rows held against a state, id by id (the mixed phase's last window: after a kill and a resume the
 * engine must hold exactly the write log's rows, each with the log's vector, nothing applied twice or missed).
 * vb_mixed_check_row is a vb_row_fn (engines/engine.h) for vb_engine_rows; vec NULL: the id alone is compared. A
 * vector is the log's when it equals vecs[src[id]] within 1e-6 of each component's size (angular: its direction,
 * within a cosine distance of 1e-6, as engines that normalize store it). */
typedef struct vb_mixed_check {
    const vb_mixed_state *s;
    const float *vecs;
    size_t dim;
    vb_metric metric;
    uint8_t *seen;          /* per id of the state */
    uint64_t checked;       /* ids compared: every id on the engine, and every live id of the log it lacks */
    uint64_t vectors;       /* rows whose vector was compared */
    uint64_t differ;
    int shown;
    char example[192];      /* the first differing ids: "id 17: deleted in the log, on the engine; ..." */
} vb_mixed_check;
int vb_mixed_check_begin(vb_mixed_check *c, const vb_mixed_state *s, const float *vecs, size_t dim, vb_metric metric,
                         vb_error *err);
int vb_mixed_check_row(void *check, int64_t id, const float *vec);
/* Counts the log's live ids the engine did not list, and frees what begin took (the figures stay). */
void vb_mixed_check_end(vb_mixed_check *c);

/* The row chosen by a draw u in [0, 1) among n rows: uniform (s <= 0), or zipf with exponent s over ranks 1..n
 * (rank r has weight r^-s; rank 1 is row 0: the hot rows are the first ones). cdf: the zipf's cumulative weights,
 * n entries (vb_mixed_zipf_cdf), NULL for uniform. */
double *vb_mixed_zipf_cdf(size_t n, double s);
size_t vb_mixed_pick(const double *cdf, size_t n, double u);

#endif
