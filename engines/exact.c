/* The embedded "exact" engine: brute force over its own copy of the rows, the answer every ANN engine is
 * scored against, served through the same interface so a phase can run on it unchanged (dev runs, tests).
 *
 * Distances use vb_distance's arithmetic (double accumulators in index order, the same zero-norm and clamping
 * rules, only the row norms precomputed), so its answers agree with the ground truth; ties are broken by id,
 * so answers are deterministic. Rows live in growable arrays; remove tombstones a row and an insert of the same id
 * revives it in place. A read/write lock lets any number of searches run together; writes take it exclusively,
 * and a waiting write goes before searches that arrive after it (this engine is a reference, not a contender, so the
 * lock on the search path is acceptable; a reference that starved its writer would distort the streaming phase).
 *
 * Files: persist writes <data_dir>/exact.rows (dim, metric, then the live rows: id, tag, class, vector); attach
 * reloads it when the dim and metric match the table spec (a file of the first format, without the class, loads
 * its rows without a class). */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/mix.h"
#include "engines/engine.h"
#include "engines/filter.h"
#include "datasets/dataset.h"

#define EXACT_NO_TAG INT32_MAX   /* rows loaded without a tag never pass a tag filter */
#define EXACT_NO_CLASS (-1)      /* rows loaded without a class never pass a class filter */
#define EXACT_EMPTY SIZE_MAX     /* empty slot of the id map */

static const char exact_magic[8] = {'V', 'B', 'E', 'X', 'A', 'C', 'T', '2'};
static const char exact_magic_v1[8] = {'V', 'B', 'E', 'X', 'A', 'C', 'T', '1'};   /* rows without a class */

typedef struct exact_state {
    pthread_rwlock_t lock;
    char *data_dir;
    int ready;                   /* create or attach done */
    size_t dim;
    vb_metric metric;
    /* Rows, tombstones included: n used of cap. */
    size_t n, cap, live;
    int64_t *ids;
    int32_t *tags;
    int32_t *classes;
    uint8_t *alive;
    double *norms;               /* sqrt(sum x^2) per row, for angular */
    float *vecs;
    /* id -> row, open addressing; entries are never removed (a removed row keeps its id). */
    int64_t *map_ids;
    size_t *map_rows;
    size_t map_cap;
} exact_state;

typedef struct exact_hit {
    double d;
    int64_t id;
} exact_hit;

/* A connection owns the heap buffer its searches use, so the hot path allocates nothing. */
typedef struct exact_conn {
    exact_state *s;
    exact_hit *heap;
    int heap_cap;
} exact_conn;

static const char *const exact_params[] = {NULL};

/* ---- rows and the id map ----------------------------------------------------------------------------- */

static size_t id_hash(int64_t id) { return (size_t)vb_mix64((uint64_t)id + VB_MIX_GOLDEN); }

/* Row of id, or EXACT_EMPTY. */
static size_t map_find(const exact_state *s, int64_t id) {
    if (!s->map_cap) return EXACT_EMPTY;
    for (size_t i = id_hash(id) & (s->map_cap - 1);; i = (i + 1) & (s->map_cap - 1)) {
        if (s->map_rows[i] == EXACT_EMPTY) return EXACT_EMPTY;
        if (s->map_ids[i] == id) return s->map_rows[i];
    }
}

static void map_put(exact_state *s, int64_t id, size_t row) {
    size_t i = id_hash(id) & (s->map_cap - 1);
    while (s->map_rows[i] != EXACT_EMPTY) i = (i + 1) & (s->map_cap - 1);
    s->map_ids[i] = id;
    s->map_rows[i] = row;
}

static void free_rows(exact_state *s) {
    free(s->ids);
    free(s->tags);
    free(s->classes);
    free(s->alive);
    free(s->norms);
    free(s->vecs);
    free(s->map_ids);
    free(s->map_rows);
    s->ids = NULL;
    s->tags = NULL;
    s->classes = NULL;
    s->alive = NULL;
    s->norms = NULL;
    s->vecs = NULL;
    s->map_ids = NULL;
    s->map_rows = NULL;
    s->n = s->cap = s->live = s->map_cap = 0;
}

/* Makes room for `want` rows (and a map at most half full). VB_ERROR on out of memory, state unchanged. */
static int reserve(exact_state *s, size_t want, vb_error *err) {
    if (want > s->cap) {
        size_t cap = s->cap ? s->cap : 1024;
        while (cap < want) cap *= 2;
        int64_t *ids = realloc(s->ids, cap * sizeof *ids);
        if (ids) s->ids = ids;
        int32_t *tags = ids ? realloc(s->tags, cap * sizeof *tags) : NULL;
        if (tags) s->tags = tags;
        int32_t *classes = tags ? realloc(s->classes, cap * sizeof *classes) : NULL;
        if (classes) s->classes = classes;
        uint8_t *alive = classes ? realloc(s->alive, cap) : NULL;
        if (alive) s->alive = alive;
        double *norms = alive ? realloc(s->norms, cap * sizeof *norms) : NULL;
        if (norms) s->norms = norms;
        float *vecs = norms ? realloc(s->vecs, cap * s->dim * sizeof *vecs) : NULL;
        if (!vecs) return vb_error_set(err, "exact", 1, "exact: out of memory for %zu rows of dim %zu", cap, s->dim);
        s->vecs = vecs;
        s->cap = cap;
    }
    if (want * 2 > s->map_cap) {
        size_t cap = s->map_cap ? s->map_cap : 2048;
        while (cap < want * 2) cap *= 2;
        int64_t *ids = malloc(cap * sizeof *ids);
        size_t *rows = malloc(cap * sizeof *rows);
        if (!ids || !rows) {
            free(ids);
            free(rows);
            return vb_error_set(err, "exact", 1, "exact: out of memory for an id map of %zu", cap);
        }
        for (size_t i = 0; i < cap; i++) rows[i] = EXACT_EMPTY;
        free(s->map_ids);
        free(s->map_rows);
        s->map_ids = ids;
        s->map_rows = rows;
        s->map_cap = cap;
        for (size_t r = 0; r < s->n; r++) map_put(s, s->ids[r], r);
    }
    return VB_OK;
}

/* Inserts or overwrites rows; a removed id comes back in its old row. Caller holds the write lock. */
static int upsert(exact_state *s, const int64_t *ids, const float *vecs, const int32_t *tags, const int32_t *classes,
                  size_t n, vb_error *err) {
    if (reserve(s, s->n + n, err) != VB_OK) return VB_ERROR;
    for (size_t i = 0; i < n; i++) {
        size_t r = map_find(s, ids[i]);
        if (r == EXACT_EMPTY) {
            r = s->n++;
            s->ids[r] = ids[i];
            s->alive[r] = 0;
            map_put(s, ids[i], r);
        }
        const float *v = vecs + i * s->dim;
        double nn = 0.0;
        for (size_t j = 0; j < s->dim; j++) nn += (double)v[j] * (double)v[j];
        memcpy(s->vecs + r * s->dim, v, s->dim * sizeof *v);
        s->norms[r] = sqrt(nn);
        s->tags[r] = tags ? tags[i] : EXACT_NO_TAG;
        s->classes[r] = classes ? classes[i] : EXACT_NO_CLASS;
        if (!s->alive[r]) s->live++;
        s->alive[r] = 1;
    }
    return VB_OK;
}

/* ---- lifecycle --------------------------------------------------------------------------------------- */

/* *state is freed by exact_close. */
static int exact_open(const vb_engine_config *cfg, void **state, vb_error *err) {
    exact_state *s = calloc(1, sizeof *s);
    if (!s) return vb_error_set(err, "exact", 1, "exact: out of memory");
    if (cfg->data_dir && !(s->data_dir = strdup(cfg->data_dir))) {
        free(s);
        return vb_error_set(err, "exact", 1, "exact: out of memory");
    }
    /* writer-preferring (glibc's default prefers readers): searching clients that always hold the lock shared
     * would starve an insert until they all paused at once, and the streaming writer then fell behind its schedule
     * by the length of a window (issue 36.2). No thread takes the read lock twice, so the non-recursive kind holds. */
    pthread_rwlockattr_t ra;
    pthread_rwlockattr_init(&ra);
    pthread_rwlockattr_setkind_np(&ra, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
    pthread_rwlock_init(&s->lock, &ra);
    pthread_rwlockattr_destroy(&ra);
    *state = s;
    return VB_OK;
}

static void exact_close(void *state) {
    exact_state *s = state;
    free_rows(s);
    pthread_rwlock_destroy(&s->lock);
    free(s->data_dir);
    free(s);
}

/* <data_dir>/exact.rows[suffix] into buf; VB_ERROR when it does not fit. */
static int rows_path(const exact_state *s, const char *suffix, char *buf, size_t len, vb_error *err) {
    if ((size_t)snprintf(buf, len, "%s/exact.rows%s", s->data_dir, suffix) >= len)
        return vb_error_set(err, "exact", 1, "exact: data_dir path too long: %s", s->data_dir);
    return VB_OK;
}

static int check_spec(const vb_table_spec *spec, vb_error *err) {
    if (spec->dim == 0 || (spec->metric != VB_METRIC_ANGULAR && spec->metric != VB_METRIC_EUCLIDEAN &&
                           spec->metric != VB_METRIC_DOT))
        return vb_error_set(err, "exact", 1, "exact: bad table spec (dim %zu, metric %d)", spec->dim,
                            (int)spec->metric);
    return VB_OK;
}

/* Empties the table; a persisted copy is removed so a later attach cannot revive old rows. */
static int exact_create(void *state, const vb_table_spec *spec, vb_error *err) {
    exact_state *s = state;
    if (check_spec(spec, err) != VB_OK) return VB_ERROR;
    if (s->data_dir) {
        char path[4096];
        if (rows_path(s, "", path, sizeof path, err) != VB_OK) return VB_ERROR;
        if (unlink(path) != 0 && errno != ENOENT)
            return vb_error_set(err, "exact", 1, "exact: removing %s: %s", path, strerror(errno));
    }
    pthread_rwlock_wrlock(&s->lock);
    free_rows(s);
    s->dim = spec->dim;
    s->metric = spec->metric;
    s->ready = 1;
    /* Room for the declared capacity up front (pages are only touched when rows arrive). */
    int rc = reserve(s, spec->capacity ? spec->capacity : 1, err);
    pthread_rwlock_unlock(&s->lock);
    return rc;
}

static int exact_persist(void *state, vb_error *err) {
    exact_state *s = state;
    if (!s->data_dir) return vb_error_set(err, "exact", 1, "exact: persist needs a data_dir");
    char path[4096], tmp[4096];
    if (rows_path(s, "", path, sizeof path, err) != VB_OK || rows_path(s, ".tmp", tmp, sizeof tmp, err) != VB_OK)
        return VB_ERROR;
    pthread_rwlock_rdlock(&s->lock);
    if (!s->ready) {
        pthread_rwlock_unlock(&s->lock);
        return vb_error_set(err, "exact", 1, "exact: persist before create or attach");
    }
    FILE *f = fopen(tmp, "wb");
    uint32_t head[2] = {(uint32_t)s->metric, 0};
    uint64_t dims[2] = {s->dim, s->live};
    int ok = f && fwrite(exact_magic, sizeof exact_magic, 1, f) == 1 && fwrite(head, sizeof head, 1, f) == 1 &&
             fwrite(dims, sizeof dims, 1, f) == 1;
    for (size_t r = 0; ok && r < s->n; r++) {
        if (!s->alive[r]) continue;
        ok = fwrite(&s->ids[r], sizeof s->ids[r], 1, f) == 1 && fwrite(&s->tags[r], sizeof s->tags[r], 1, f) == 1 &&
             fwrite(&s->classes[r], sizeof s->classes[r], 1, f) == 1 && fwrite(s->vecs + r * s->dim, sizeof(float), s->dim, f) == s->dim;
    }
    pthread_rwlock_unlock(&s->lock);
    ok = ok && fflush(f) == 0 && fsync(fileno(f)) == 0;
    int e = errno;
    if (f && fclose(f) != 0 && ok) {
        ok = 0;
        e = errno;
    }
    if (!ok || rename(tmp, path) != 0) {
        if (ok) e = errno;
        unlink(tmp);
        return vb_error_set(err, "exact", 1, "exact: writing %s: %s", path, strerror(e));
    }
    return VB_OK;
}

/* Reads rows saved by persist. found = 0 when there is no file or it holds another dim or metric. */
static int exact_attach(void *state, const vb_table_spec *spec, int *found, vb_error *err) {
    exact_state *s = state;
    *found = 0;
    if (!s->data_dir) return VB_OK;
    if (check_spec(spec, err) != VB_OK) return VB_ERROR;
    char path[4096];
    if (rows_path(s, "", path, sizeof path, err) != VB_OK) return VB_ERROR;
    FILE *f = fopen(path, "rb");
    if (!f) return errno == ENOENT ? VB_OK : vb_error_set(err, "exact", 1, "exact: opening %s: %s", path,
                                                          strerror(errno));
    char magic[8];
    uint32_t head[2];
    uint64_t dims[2];
    int v1 = 0;
    if (fread(magic, sizeof magic, 1, f) != 1 ||
        (memcmp(magic, exact_magic, sizeof magic) != 0 && !(v1 = memcmp(magic, exact_magic_v1, sizeof magic) == 0)) ||
        fread(head, sizeof head, 1, f) != 1 || fread(dims, sizeof dims, 1, f) != 1) {
        fclose(f);
        return vb_error_set(err, "exact", 1, "exact: %s is not an exact.rows file (or is truncated)", path);
    }
    if (dims[0] != spec->dim || head[0] != (uint32_t)spec->metric) {
        fclose(f);
        return VB_OK;
    }
    float *vec = malloc(spec->dim * sizeof *vec);
    if (!vec) {
        fclose(f);
        return vb_error_set(err, "exact", 1, "exact: out of memory");
    }
    pthread_rwlock_wrlock(&s->lock);
    free_rows(s);
    s->dim = spec->dim;
    s->metric = spec->metric;
    size_t want = dims[1] > spec->capacity ? (size_t)dims[1] : spec->capacity;
    int rc = reserve(s, want ? want : 1, err);
    for (uint64_t i = 0; rc == VB_OK && i < dims[1]; i++) {
        int64_t id;
        int32_t tag, cls = EXACT_NO_CLASS;
        if (fread(&id, sizeof id, 1, f) != 1 || fread(&tag, sizeof tag, 1, f) != 1 ||
            (!v1 && fread(&cls, sizeof cls, 1, f) != 1) || fread(vec, sizeof *vec, spec->dim, f) != spec->dim)
            rc = vb_error_set(err, "exact", 1, "exact: %s is truncated at row %llu of %llu", path,
                              (unsigned long long)i, (unsigned long long)dims[1]);
        else
            rc = upsert(s, &id, vec, &tag, &cls, 1, err);
    }
    if (rc != VB_OK) free_rows(s);
    s->ready = rc == VB_OK;
    *found = rc == VB_OK;
    pthread_rwlock_unlock(&s->lock);
    free(vec);
    fclose(f);
    return rc;
}

static int exact_sizes(void *state, vb_sizes *out, vb_error *err) {
    exact_state *s = state;
    (void)err;
    pthread_rwlock_rdlock(&s->lock);
    out->index_bytes = 0;   /* no index: a scan */
    out->table_bytes = (int64_t)(s->live * s->dim * sizeof(float));
    out->rows = (int64_t)s->live;
    pthread_rwlock_unlock(&s->lock);
    return VB_OK;
}

static int exact_version(void *state, char *buf, size_t len, vb_error *err) {
    (void)state;
    (void)err;
    snprintf(buf, len, "exact 1 (vbench brute force, double accumulation)");
    return VB_OK;
}

/* ---- connections ------------------------------------------------------------------------------------- */

/* Caller frees *conn with exact_disconnect. */
static int exact_connect(void *state, void **conn, vb_error *err) {
    exact_conn *c = calloc(1, sizeof *c);
    if (!c) return vb_error_set(err, "exact", 1, "exact: out of memory");
    c->s = state;
    *conn = c;
    return VB_OK;
}

static void exact_disconnect(void *conn) {
    exact_conn *c = conn;
    free(c->heap);
    free(c);
}

static int exact_write(exact_conn *c, const int64_t *ids, const float *vecs, const int32_t *tags,
                       const int32_t *classes, size_t n, vb_error *err) {
    exact_state *s = c->s;
    pthread_rwlock_wrlock(&s->lock);
    int rc = s->ready ? upsert(s, ids, vecs, tags, classes, n, err)
                      : vb_error_set(err, "exact", 1, "exact: no table: create or attach first");
    pthread_rwlock_unlock(&s->lock);
    return rc;
}

/* Load and insert are the same upsert: a present id is overwritten, a removed one revived. */
static int exact_load(void *conn, const int64_t *ids, const float *vecs, const int32_t *tags, const int32_t *classes,
                      size_t n, vb_error *err) {
    return exact_write(conn, ids, vecs, tags, classes, n, err);
}

/* The live rows, in the order they were first written. */
static int exact_rows(void *state, vb_row_fn fn, void *arg, vb_error *err) {
    exact_state *s = state;
    pthread_rwlock_rdlock(&s->lock);
    int stop = 0;
    for (size_t r = 0; r < s->n && !stop; r++)
        if (s->alive[r]) stop = fn(arg, s->ids[r], s->vecs + r * s->dim);
    pthread_rwlock_unlock(&s->lock);
    return stop ? vb_error_set(err, "exact", 1, "exact: the listing of the rows was stopped") : VB_OK;
}

/* Tombstones rows; absent or already removed ids are skipped (a repeated batch is not an error). */
static int exact_remove(void *conn, const int64_t *ids, size_t n, vb_error *err) {
    exact_state *s = ((exact_conn *)conn)->s;
    pthread_rwlock_wrlock(&s->lock);
    if (!s->ready) {
        pthread_rwlock_unlock(&s->lock);
        return vb_error_set(err, "exact", 1, "exact: no table: create or attach first");
    }
    for (size_t i = 0; i < n; i++) {
        size_t r = map_find(s, ids[i]);
        if (r != EXACT_EMPTY && s->alive[r]) {
            s->alive[r] = 0;
            s->live--;
        }
    }
    pthread_rwlock_unlock(&s->lock);
    return VB_OK;
}

/* Nothing to tune: every search scans everything. */
static int exact_set_search(void *conn, const vb_search_params *p, vb_error *err) {
    (void)conn;
    (void)p;
    (void)err;
    return VB_OK;
}

/* a ranks after b: farther, or as far with a larger id. */
static inline int worse(const exact_hit *a, const exact_hit *b) {
    return a->d > b->d || (a->d == b->d && a->id > b->id);
}

/* Max-heap on worse(): the root is the hit to drop first. */
static void sift_down(exact_hit *h, int n, int i) {
    for (;;) {
        int l = 2 * i + 1, r = l + 1, m = i;
        if (l < n && worse(&h[l], &h[m])) m = l;
        if (r < n && worse(&h[r], &h[m])) m = r;
        if (m == i) return;
        exact_hit t = h[i];
        h[i] = h[m];
        h[m] = t;
        i = m;
    }
}

static void sift_up(exact_hit *h, int i) {
    while (i > 0) {
        int p = (i - 1) / 2;
        if (!worse(&h[i], &h[p])) return;
        exact_hit t = h[i];
        h[i] = h[p];
        h[p] = t;
        i = p;
    }
}

/* vb_distance's arithmetic with the row norm precomputed (same additions in the same order, same result). */
static inline double row_distance(const exact_state *s, size_t r, const float *q, double qnorm) {
    const float *v = s->vecs + r * s->dim;
    double acc = 0.0;
    switch (s->metric) {
    case VB_METRIC_EUCLIDEAN:
        for (size_t j = 0; j < s->dim; j++) {
            double d = (double)q[j] - (double)v[j];
            acc += d * d;
        }
        return sqrt(acc);
    case VB_METRIC_DOT:
        for (size_t j = 0; j < s->dim; j++) acc += (double)q[j] * (double)v[j];
        return -acc;
    case VB_METRIC_ANGULAR:
        for (size_t j = 0; j < s->dim; j++) acc += (double)q[j] * (double)v[j];
        if (qnorm == 0.0 || s->norms[r] == 0.0) return 1.0;
        {
            double c = acc / (qnorm * s->norms[r]);
            if (c > 1.0) c = 1.0;
            if (c < -1.0) c = -1.0;
            return 1.0 - c;
        }
    }
    return NAN;
}

static int exact_search(void *conn, const float *query, int k, const vb_filter *filter, int64_t *ids_out,
                        int *n_out, vb_error *err) {
    exact_conn *c = conn;
    exact_state *s = c->s;
    *n_out = 0;
    if (k <= 0) return VB_OK;
    int use_filter = filter && filter->kind != VB_FILTER_NONE;
    if (use_filter && (unsigned)filter->kind >= VB_FILTER_KINDS)
        return vb_error_set(err, "exact", 1, "exact: unknown filter kind %d", (int)filter->kind);
    int32_t below = use_filter ? filter->tag_below : 0;
    int range = use_filter && filter->kind == VB_FILTER_TAG_BELOW;
    int by_class = use_filter && filter->kind == VB_FILTER_CLASS_EQ;
    int32_t cls = by_class ? filter->cls : 0;
    if (k > c->heap_cap) {
        exact_hit *h = realloc(c->heap, (size_t)k * sizeof *h);
        if (!h) return vb_error_set(err, "exact", 1, "exact: out of memory for k = %d", k);
        c->heap = h;
        c->heap_cap = k;
    }
    pthread_rwlock_rdlock(&s->lock);
    if (!s->ready) {
        pthread_rwlock_unlock(&s->lock);
        return vb_error_set(err, "exact", 1, "exact: no table: create or attach first");
    }
    double qnorm = 0.0;
    if (s->metric == VB_METRIC_ANGULAR) {
        for (size_t j = 0; j < s->dim; j++) qnorm += (double)query[j] * (double)query[j];
        qnorm = sqrt(qnorm);
    }
    exact_hit *h = c->heap;
    int n = 0;
    for (size_t r = 0; r < s->n; r++) {
        if (!s->alive[r]) continue;
        /* the range on the stored tag, the class on the stored class; the other kinds also read tag2 and the label
         * of the row's id */
        if (range && s->tags[r] >= below) continue;
        if (by_class && (s->classes[r] != cls || cls < 0)) continue;
        if (use_filter && !range && !by_class && (s->tags[r] == EXACT_NO_TAG ||
                                     !vb_filter_passes_attrs(filter, s->tags[r], vb_dataset_tag2(s->ids[r]),
                                                             vb_dataset_label(s->ids[r]), EXACT_NO_CLASS)))
            continue;
        exact_hit hit = {row_distance(s, r, query, qnorm), s->ids[r]};
        if (hit.d != hit.d) hit.d = INFINITY;   /* NaN (NaN input) ranks last, never breaks the heap order */
        if (n < k) {
            h[n] = hit;
            sift_up(h, n++);
        } else if (worse(&h[0], &hit)) {
            h[0] = hit;
            sift_down(h, n, 0);
        }
    }
    pthread_rwlock_unlock(&s->lock);
    /* Pop the worst into the last place until the heap is empty: ascending order. */
    for (int m = n; m > 0; m--) {
        ids_out[m - 1] = h[0].id;
        h[0] = h[m - 1];
        sift_down(h, m - 1, 0);
    }
    *n_out = n;
    return VB_OK;
}

/* The private copy: per row its vector, id, tag, class, alive flag and norm, and the id map's entries (id and row,
 * 16 bytes; the map doubles to keep its load under one half: up to four entries a row). */
static double exact_client_bytes(const vb_kv *params, size_t n_params, double rows, double dim) {
    (void)params, (void)n_params;
    return rows * (dim * 4 + 8 + 4 + 4 + 1 + 8 + 4 * 16);
}

const vb_engine_ops vb_engine_exact = {
    .name = "exact",
    .description = "brute force over a private copy of the rows (rows x dim x 4 bytes of anonymous memory in the "
                   "client, beside the mapped corpus): exact answers, ties broken by id",
    .flags = VB_ENGINE_EMBEDDED | VB_ENGINE_FILTER | VB_ENGINE_FILTER_EQ | VB_ENGINE_FILTER_AND | VB_ENGINE_FILTER_CLASS,
    .param_names = exact_params,
    /* brute force: its queries/s is computed from rows x dim */
    .estimate = {.load_rows_s = 1e6, .insert_rows_s = 1e6, .brute_force = 1},
    .open = exact_open,
    .close = exact_close,
    .create = exact_create,
    .connect = exact_connect,
    .disconnect = exact_disconnect,
    .load = exact_load,
    .set_search = exact_set_search,
    .search = exact_search,
    .version = exact_version,
    .attach = exact_attach,
    .persist = exact_persist,
    .remove = exact_remove,
    .insert = exact_load,
    .sizes = exact_sizes,
    .rows = exact_rows,
    .client_bytes = exact_client_bytes,
    .client_keeps = "its private copy of the rows",
};
