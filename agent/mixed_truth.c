/* The mixed phase's ground truth and the scoring of its answers (agent/mixed_truth.h). */
#include "agent/mixed_truth.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "datasets/groundtruth.h"
#include "metrics/recall.h"

int vb_mixed_state_init(vb_mixed_state *s, size_t n_ids, size_t live_first, vb_error *err) {
    memset(s, 0, sizeof *s);
    s->src = malloc((n_ids ? n_ids : 1) * sizeof *s->src);
    s->prev = malloc((n_ids ? n_ids : 1) * sizeof *s->prev);
    if (!s->src || !s->prev) {
        vb_mixed_state_free(s);
        return vb_error_set(err, "agent", 1, "out of memory for the state of %zu rows", n_ids);
    }
    s->n_ids = n_ids;
    for (size_t i = 0; i < n_ids; i++) {
        s->src[i] = i < live_first ? (int32_t)i : -1;
        s->prev[i] = -1;
    }
    s->live = live_first < n_ids ? live_first : n_ids;
    return VB_OK;
}

int vb_mixed_state_copy(const vb_mixed_state *from, vb_mixed_state *to, vb_error *err) {
    if (vb_mixed_state_init(to, from->n_ids, 0, err)) return VB_ERROR;
    memcpy(to->src, from->src, from->n_ids * sizeof *to->src);
    memcpy(to->prev, from->prev, from->n_ids * sizeof *to->prev);
    to->live = from->live;
    return VB_OK;
}

void vb_mixed_state_free(vb_mixed_state *s) {
    free(s->src);
    free(s->prev);
    memset(s, 0, sizeof *s);
}

void vb_mixed_apply(vb_mixed_state *s, int op, int64_t id, int32_t src) {
    if (id < 0 || (size_t)id >= s->n_ids) return;
    int32_t *cur = &s->src[id];
    if (op == VB_MIXED_DELETE) {
        if (*cur >= 0) s->live--;
        s->prev[id] = *cur;
        *cur = -1;
    } else {   /* update or insert: an upsert */
        if (*cur < 0) s->live++;
        s->prev[id] = *cur;
        *cur = src;
    }
}

int vb_mixed_touched_add(vb_mixed_touched *t, int64_t id, int32_t src) {
    if (t->n == t->cap) {
        size_t cap = t->cap ? 2 * t->cap : 256;
        int64_t *ids = realloc(t->id, cap * sizeof *ids);
        if (!ids) return VB_ERROR;
        t->id = ids;
        int32_t *srcs = realloc(t->src, cap * sizeof *srcs);
        if (!srcs) return VB_ERROR;
        t->src = srcs;
        t->cap = cap;
    }
    t->id[t->n] = id;
    t->src[t->n] = src;
    t->n++;
    t->sorted = 0;
    return VB_OK;
}

void vb_mixed_touched_sort(vb_mixed_touched *t) {
    /* insertion sort by id (windows write hundreds of rows, not millions) */
    for (size_t i = 1; i < t->n; i++) {
        int64_t id = t->id[i];
        int32_t src = t->src[i];
        size_t j = i;
        while (j > 0 && t->id[j - 1] > id) {
            t->id[j] = t->id[j - 1];
            t->src[j] = t->src[j - 1];
            j--;
        }
        t->id[j] = id;
        t->src[j] = src;
    }
    t->sorted = 1;
}

void vb_mixed_touched_clear(vb_mixed_touched *t) {
    t->n = 0;
    t->sorted = 1;
}

void vb_mixed_touched_free(vb_mixed_touched *t) {
    free(t->id);
    free(t->src);
    memset(t, 0, sizeof *t);
}

/* The first index of id in the sorted touched list, or t->n. */
static size_t touched_find(const vb_mixed_touched *t, int64_t id) {
    size_t lo = 0, hi = t->n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (t->id[mid] < id) lo = mid + 1;
        else hi = mid;
    }
    return lo < t->n && t->id[lo] == id ? lo : t->n;
}

int vb_mixed_truth_make(const vb_mixed_state *s, const float *vecs, size_t dim, vb_metric metric, const float *queries,
                        size_t n_queries, size_t k, vb_mixed_truth *out, vb_error *err) {
    memset(out, 0, sizeof *out);
    size_t live = 0;
    for (size_t i = 0; i < s->n_ids; i++) live += s->src[i] >= 0;
    size_t k2 = 2 * k < live ? 2 * k : live;
    out->n_queries = n_queries, out->k = k, out->k2 = k2, out->live = live;
    size_t cells = n_queries * k2 > 0 ? n_queries * k2 : 1;
    out->ids = malloc(cells * sizeof *out->ids);
    out->dists = malloc(cells * sizeof *out->dists);
    float *rows = malloc((live ? live : 1) * dim * sizeof *rows);
    int64_t *row_id = malloc((live ? live : 1) * sizeof *row_id);
    if (!out->ids || !out->dists || !rows || !row_id) {
        free(rows);
        free(row_id);
        vb_mixed_truth_free(out);
        return vb_error_set(err, "agent", 1, "out of memory for the ground truth of %zu rows", live);
    }
    size_t j = 0;
    for (size_t i = 0; i < s->n_ids; i++)
        if (s->src[i] >= 0) {
            memcpy(rows + j * dim, vecs + (size_t)s->src[i] * dim, dim * sizeof *rows);
            row_id[j++] = (int64_t)i;
        }
    int rc = VB_OK;
    if (k2 > 0) {
        vb_groundtruth gt;
        rc = vb_groundtruth_compute(rows, live, queries, n_queries, dim, metric, k2, NULL, 1, &gt, err);
        if (rc == VB_OK) {
            for (size_t x = 0; x < n_queries * k2; x++) {
                out->ids[x] = gt.ids[x] >= 0 ? row_id[gt.ids[x]] : -1;
                out->dists[x] = gt.dists[x];
            }
            vb_groundtruth_free(&gt);
        }
    }
    free(rows);
    free(row_id);
    if (rc != VB_OK) vb_mixed_truth_free(out);
    return rc;
}

void vb_mixed_truth_free(vb_mixed_truth *t) {
    free(t->ids);
    free(t->dists);
    memset(t, 0, sizeof *t);
}

void vb_mixed_score_answer(const vb_mixed_truth *t, const vb_mixed_state *s, const vb_mixed_touched *during,
                           const float *vecs, size_t dim, vb_metric metric, const float *query, size_t q,
                           const int64_t *ids, int n, vb_mixed_score *out) {
    memset(out, 0, sizeof *out);
    out->first_ghost = -1;
    size_t expected = t->k < t->live ? t->k : t->live;
    if (expected == 0) {
        out->recall = 1;
        for (int i = 0; i < n; i++) out->ghosts++, out->first_ghost = out->first_ghost < 0 ? ids[i] : out->first_ghost;
        return;
    }
    const int64_t *tid = t->ids + q * t->k2;
    const float *tdist = t->dists + q * t->k2;
    /* The k-th nearest of the rows not written during the window: whatever the window's writes did, those rows kept
     * their vectors, so an exact answer at any moment of the window lies within it (the true neighbours written
     * during the window make room for the next ones). Past the k2 rows known, the last of them. */
    size_t last = t->k2 - 1, untouched = 0;
    for (size_t j = 0; j < t->k2; j++)
        if (tid[j] >= 0 && touched_find(during, tid[j]) == during->n && ++untouched == expected) {
            last = j;
            break;
        }
    double d_k = (double)tdist[last];
    if (tid[last] >= 0 && s->src[tid[last]] >= 0)
        d_k = fmax(d_k, vb_distance(metric, query, vecs + (size_t)s->src[tid[last]] * dim, dim));
    double threshold = d_k + VB_RECALL_EPSILON;
    for (int i = 0; i < n; i++) {
        int64_t id = ids[i];
        int dup = 0;
        for (int j = 0; j < i && !dup; j++) dup = ids[j] == id;
        if (dup) continue;   /* a repeated row is never a second hit */
        int known = id >= 0 && (size_t)id < s->n_ids;
        size_t at = known ? touched_find(during, id) : during->n;
        if (at < during->n) {   /* written during the window: any vector it held then */
            int hit = 0;
            if (s->src[id] >= 0)
                hit = vb_distance(metric, query, vecs + (size_t)s->src[id] * dim, dim) <= threshold;
            for (size_t j = at; j < during->n && during->id[j] == id && !hit; j++)
                if (during->src[j] >= 0)
                    hit = vb_distance(metric, query, vecs + (size_t)during->src[j] * dim, dim) <= threshold;
            out->hits += hit;
            continue;
        }
        if (!known || s->src[id] < 0) {
            out->ghosts++;
            if (out->first_ghost < 0) out->first_ghost = id;
            continue;
        }
        if (vb_distance(metric, query, vecs + (size_t)s->src[id] * dim, dim) <= threshold) out->hits++;
        else if (s->prev[id] >= 0 &&
                 vb_distance(metric, query, vecs + (size_t)s->prev[id] * dim, dim) <= threshold)
            out->stale++;
    }
    int hits = out->hits > (int)expected ? (int)expected : out->hits;
    out->recall = (double)hits / (double)expected;
}

double *vb_mixed_zipf_cdf(size_t n, double s) {
    double *cdf = malloc((n ? n : 1) * sizeof *cdf);
    if (!cdf) return NULL;
    double sum = 0;
    for (size_t r = 0; r < n; r++) cdf[r] = sum += pow((double)(r + 1), -s);
    for (size_t r = 0; r < n; r++) cdf[r] /= sum;
    return cdf;
}

size_t vb_mixed_pick(const double *cdf, size_t n, double u) {
    if (n == 0) return 0;
    if (!cdf) {
        size_t r = (size_t)(u * (double)n);
        return r < n ? r : n - 1;
    }
    size_t lo = 0, hi = n - 1;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (cdf[mid] < u) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

/* ---- the engine's rows against the log (vb_mixed_check) ------------------------------------------------------- */

int vb_mixed_check_begin(vb_mixed_check *c, const vb_mixed_state *s, const float *vecs, size_t dim, vb_metric metric,
                         vb_error *err) {
    memset(c, 0, sizeof *c);
    c->s = s, c->vecs = vecs, c->dim = dim, c->metric = metric;
    if (!(c->seen = calloc(s->n_ids ? s->n_ids : 1, 1)))
        return vb_error_set(err, "agent", 1, "out of memory for the check of %zu rows", s->n_ids);
    return VB_OK;
}

static void differs(vb_mixed_check *c, int64_t id, const char *why) {
    c->differ++;
    if (c->shown >= 3) return;
    size_t used = strlen(c->example);
    snprintf(c->example + used, sizeof c->example - used, "%sid %lld: %s", c->shown ? "; " : "", (long long)id, why);
    c->shown++;
}

static int same_vector(const vb_mixed_check *c, const float *got, const float *want) {
    if (c->metric == VB_METRIC_ANGULAR) return vb_distance(c->metric, got, want, c->dim) <= 1e-6;
    for (size_t j = 0; j < c->dim; j++)
        if (fabsf(got[j] - want[j]) > 1e-6f * fmaxf(1.0f, fabsf(want[j]))) return 0;
    return 1;
}

int vb_mixed_check_row(void *check, int64_t id, const float *vec) {
    vb_mixed_check *c = check;
    c->checked++;
    if (id < 0 || (size_t)id >= c->s->n_ids) {
        differs(c, id, "on the engine, never written by the log");
        return 0;
    }
    if (c->seen[id]) {
        c->checked--;
        differs(c, id, "listed twice by the engine");
        return 0;
    }
    c->seen[id] = 1;
    int32_t src = c->s->src[id];
    if (src < 0) {
        differs(c, id, "absent in the log (deleted or never inserted), on the engine");
        return 0;
    }
    if (!vec) return 0;
    c->vectors++;
    if (!same_vector(c, vec, c->vecs + (size_t)src * c->dim))
        differs(c, id, c->s->prev[id] >= 0 && same_vector(c, vec, c->vecs + (size_t)c->s->prev[id] * c->dim)
                           ? "the vector before its last update (the update not applied)"
                           : "another vector than the log's");
    return 0;
}

void vb_mixed_check_end(vb_mixed_check *c) {
    for (size_t id = 0; c->seen && id < c->s->n_ids; id++)
        if (c->s->src[id] >= 0 && !c->seen[id]) {
            c->checked++;
            differs(c, (int64_t)id, "live in the log, not on the engine");
        }
    free(c->seen);
    c->seen = NULL;
}
