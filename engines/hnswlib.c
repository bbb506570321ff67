/* The embedded reference engine "hnswlib": the HNSW algorithm with no database around it (docs/design.md §5).
 *
 * Runs in the agent process through the C++ shim (hnswlib_shim.h). The graph grows on insert, so load is the
 * build. Parameters:
 *   m                HNSW M (default: the table spec's m, else 16)
 *   ef_construction  (default: the table spec's ef_construction, else 200)
 *   threads          threads one load call splits its batch over (default 1); several connections may also
 *                    load at once, hnswlib's addPoint is thread-safe
 * An engine parameter overrides the table spec. The index has exactly spec->capacity slots and ids must lie in
 * [0, capacity) (they index the tag and class columns); removed slots are reused by later inserts, so churn never grows it.
 *
 * set_search sets ef on the connection (the engine contract: a session setting); each search passes it to the
 * shim, which never changes the ef hnswlib keeps in the index. Until set_search, hnswlib's default ef of 10.
 *
 * Files: persist writes <data_dir>/hnswlib.index (hnswlib's own format) and <data_dir>/hnswlib.meta (dim,
 * metric, m, ef_construction, index size, tags, classes); attach reuses them only when they match the table spec. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engines/engine.h"
#include "engines/hnswlib_shim.h"
#include "engines/filter.h"
#include "datasets/dataset.h"

typedef struct hnsw_state {
    vb_hnsw *index;            /* NULL until create or attach */
    char *data_dir;            /* NULL when the config gave none */
    long m, ef_construction;   /* 0 = take the table spec's */
    long threads;
} hnsw_state;

/* Embedded: a connection is the shared index plus what is per client, its ef. */
typedef struct hnsw_conn {
    hnsw_state *s;
    int ef;
} hnsw_conn;

static const char *const hnsw_params[] = {"m", "ef_construction", "threads", NULL};

/* *state is freed by hnsw_close. */
static int hnsw_open(const vb_engine_config *cfg, void **state, vb_error *err) {
    long m, efc, threads;
    if (vb_kv_get_long(cfg->params, cfg->n_params, "m", 0, 2, 2048, &m, err) != VB_OK ||
        vb_kv_get_long(cfg->params, cfg->n_params, "ef_construction", 0, 1, 1000000, &efc, err) != VB_OK ||
        vb_kv_get_long(cfg->params, cfg->n_params, "threads", 1, 1, 1024, &threads, err) != VB_OK)
        return vb_error_prefix(err, "engine hnswlib");
    hnsw_state *s = calloc(1, sizeof *s);
    if (!s) return vb_error_set(err, "hnswlib", 1, "hnswlib: out of memory");
    if (cfg->data_dir && !(s->data_dir = strdup(cfg->data_dir))) {
        free(s);
        return vb_error_set(err, "hnswlib", 1, "hnswlib: out of memory");
    }
    s->m = m;
    s->ef_construction = efc;
    s->threads = threads;
    *state = s;
    return VB_OK;
}

static void hnsw_close(void *state) {
    hnsw_state *s = state;
    vb_hnsw_destroy(&s->index);
    free(s->data_dir);
    free(s);
}

/* The effective M and ef_construction: engine parameter, else the table spec, else hnswlib's usual values. */
static int effective_m(const hnsw_state *s, const vb_table_spec *spec) {
    return (int)(s->m ? s->m : spec->m > 0 ? spec->m : 16);
}
static int effective_efc(const hnsw_state *s, const vb_table_spec *spec) {
    return (int)(s->ef_construction ? s->ef_construction : spec->ef_construction > 0 ? spec->ef_construction : 200);
}

/* Paths of the index and sidecar inside data_dir; VB_ERROR when they do not fit. */
static int file_paths(const hnsw_state *s, char *index, char *meta, size_t len, vb_error *err) {
    if ((size_t)snprintf(index, len, "%s/hnswlib.index", s->data_dir) >= len ||
        (size_t)snprintf(meta, len, "%s/hnswlib.meta", s->data_dir) >= len)
        return vb_error_set(err, "hnswlib", 1, "hnswlib: data_dir path too long: %s", s->data_dir);
    return VB_OK;
}

/* A new empty index; a saved one in data_dir is removed so a later attach cannot revive old rows. */
static int hnsw_create(void *state, const vb_table_spec *spec, vb_error *err) {
    hnsw_state *s = state;
    vb_hnsw_destroy(&s->index);
    if (s->data_dir) {
        char index[4096], meta[4096];
        if (file_paths(s, index, meta, sizeof index, err) != VB_OK) return VB_ERROR;
        if (unlink(meta) != 0 && errno != ENOENT)
            return vb_error_set(err, "hnswlib", 1, "hnswlib: removing %s: %s", meta, strerror(errno));
        unlink(index);
    }
    if (spec->capacity == 0)
        return vb_error_set(err, "hnswlib", 1, "hnswlib: the table spec has capacity 0 (the index has fixed size)");
    return vb_hnsw_create(spec->dim, spec->metric, spec->capacity, effective_m(s, spec), effective_efc(s, spec),
                          &s->index, err);
}

static int hnsw_attach(void *state, const vb_table_spec *spec, int *found, vb_error *err) {
    hnsw_state *s = state;
    *found = 0;
    if (!s->data_dir) return VB_OK;
    char index[4096], meta[4096];
    if (file_paths(s, index, meta, sizeof index, err) != VB_OK) return VB_ERROR;
    vb_hnsw *h = NULL;
    if (vb_hnsw_open(index, meta, spec->dim, spec->metric, spec->capacity, effective_m(s, spec),
                     effective_efc(s, spec), &h, found, err) != VB_OK)
        return VB_ERROR;
    if (*found) {
        vb_hnsw_destroy(&s->index);
        s->index = h;
    }
    return VB_OK;
}

static int hnsw_persist(void *state, vb_error *err) {
    hnsw_state *s = state;
    if (!s->index) return vb_error_set(err, "hnswlib", 1, "hnswlib: persist before create or attach");
    if (!s->data_dir) return vb_error_set(err, "hnswlib", 1, "hnswlib: persist needs a data_dir");
    char index[4096], meta[4096];
    if (file_paths(s, index, meta, sizeof index, err) != VB_OK) return VB_ERROR;
    return vb_hnsw_save(s->index, index, meta, err);
}

static int hnsw_sizes(void *state, vb_sizes *out, vb_error *err) {
    hnsw_state *s = state;
    (void)err;
    if (!s->index) {
        out->index_bytes = out->table_bytes = out->rows = 0;
        return VB_OK;
    }
    vb_hnsw_stats st;
    vb_hnsw_get_stats(s->index, &st);
    out->index_bytes = (int64_t)st.file_bytes;   /* graph + vectors of the slots in use */
    out->table_bytes = (int64_t)st.vector_bytes;
    out->rows = (int64_t)st.rows;
    return VB_OK;
}

static int hnsw_version(void *state, char *buf, size_t len, vb_error *err) {
    (void)state;
    (void)err;
    snprintf(buf, len, "hnswlib %s", vb_hnsw_version());
    return VB_OK;
}

/* Caller frees *conn with hnsw_disconnect. */
static int hnsw_connect(void *state, void **conn, vb_error *err) {
    hnsw_conn *c = malloc(sizeof *c);
    if (!c) return vb_error_set(err, "hnswlib", 1, "hnswlib: out of memory");
    c->s = state;
    c->ef = 10;   /* hnswlib's own default */
    *conn = c;
    return VB_OK;
}

static void hnsw_disconnect(void *conn) { free(conn); }

static inline int need_index(const hnsw_state *s, vb_error *err) {
    return s->index ? VB_OK : vb_error_set(err, "hnswlib", 1, "hnswlib: no index: create or attach first");
}

static int hnsw_load(void *conn, const int64_t *ids, const float *vecs, const int32_t *tags, const int32_t *classes,
                     size_t n,
                     vb_error *err) {
    hnsw_state *s = ((hnsw_conn *)conn)->s;
    if (need_index(s, err) != VB_OK) return VB_ERROR;
    return vb_hnsw_add(s->index, ids, vecs, tags, classes, n, (int)s->threads, err);
}

/* Churn inserts: one thread per call (the phase measures its own insert rate), deleted slots reused. */
static int hnsw_insert(void *conn, const int64_t *ids, const float *vecs, const int32_t *tags,
                       const int32_t *classes, size_t n,
                       vb_error *err) {
    hnsw_state *s = ((hnsw_conn *)conn)->s;
    if (need_index(s, err) != VB_OK) return VB_ERROR;
    return vb_hnsw_add(s->index, ids, vecs, tags, classes, n, 1, err);
}

/* markDelete: the row leaves every later answer; its slot waits for an insert. Absent ids are skipped. */
static int hnsw_remove(void *conn, const int64_t *ids, size_t n, vb_error *err) {
    hnsw_state *s = ((hnsw_conn *)conn)->s;
    if (need_index(s, err) != VB_OK) return VB_ERROR;
    return vb_hnsw_remove(s->index, ids, n, NULL, err);
}

/* Every live row with its vector as the graph holds it (angular: the unit-length copy), for the mixed phase's
 * check of the rows against its write log. */
static int hnsw_rows(void *state, vb_row_fn fn, void *arg, vb_error *err) {
    hnsw_state *s = state;
    if (need_index(s, err) != VB_OK) return VB_ERROR;
    return vb_hnsw_rows(s->index, fn, arg, err);
}

static int hnsw_set_search(void *conn, const vb_search_params *p, vb_error *err) {
    hnsw_conn *c = conn;
    if (need_index(c->s, err) != VB_OK) return VB_ERROR;
    if (p->ef_search < 1) return vb_error_set(err, "hnswlib", 1, "hnswlib: ef_search %d < 1", p->ef_search);
    c->ef = p->ef_search;
    return VB_OK;
}

/* hnswlib's filter callback: the row's stored tag and class, its tag2 and label from its id (engines/engine.h
 * vb_filter); a row without a tag passes none of the tag kinds. */
static int pass_filter(void *arg, int64_t id, int32_t tag, int32_t cls) {
    const vb_filter *f = arg;
    switch (f->kind) {
    case VB_FILTER_TAG_BELOW: return tag < f->tag_below;
    case VB_FILTER_CLASS_EQ: return cls != VB_HNSW_NO_CLASS && cls == f->cls;
    default:
        return tag != VB_HNSW_NO_TAG &&
               vb_filter_passes_attrs(f, tag, vb_dataset_tag2(id), vb_dataset_label(id), VB_HNSW_NO_CLASS);
    }
}

static int hnsw_search(void *conn, const float *query, int k, const vb_filter *filter, int64_t *ids_out,
                       int *n_out, vb_error *err) {
    const hnsw_conn *c = conn;
    hnsw_state *s = c->s;
    if (__builtin_expect(!s->index, 0)) return need_index(s, err);
    int on = filter && filter->kind != VB_FILTER_NONE;
    if (__builtin_expect(on && (unsigned)filter->kind >= VB_FILTER_KINDS, 0))
        return vb_error_set(err, "hnswlib", 1, "hnswlib: unknown filter kind %d", (int)filter->kind);
    return vb_hnsw_search(s->index, query, k, c->ef, on ? pass_filter : NULL, (void *)filter, ids_out, n_out, err);
}

/* hnswlib's level-0 element (the vector, 2 x M neighbour ids and their count, the label), its per-element lock,
 * level and upper-link pointer, and the label map: 100,000 x 768 at M 16 reported 3,220 B/row of index, the
 * element alone, to which the lock (40) and the map entry (about 32) add. */
static double hnsw_client_bytes(const vb_kv *params, size_t n_params, double rows, double dim) {
    double m = atof(vb_kv_get(params, n_params, "m", "16"));
    return rows * (dim * 4 + 2 * m * 4 + 4 + 4 + 8 + 40 + 16 + 32);
}

const vb_engine_ops vb_engine_hnswlib = {
    .name = "hnswlib",
    .description = "HNSW in process through hnswlib: the algorithm with no database around it",
    .flags = VB_ENGINE_EMBEDDED | VB_ENGINE_BUILD_ON_INSERT | VB_ENGINE_FILTER | VB_ENGINE_FILTER_EQ |
             VB_ENGINE_FILTER_AND | VB_ENGINE_FILTER_CLASS,
    .param_names = hnsw_params,
    .estimate = {.load_rows_s = 8000, .insert_rows_s = 8000, .qps100 = 3000, .filtered_qps = 1500},
    .open = hnsw_open,
    .close = hnsw_close,
    .create = hnsw_create,
    .connect = hnsw_connect,
    .disconnect = hnsw_disconnect,
    .load = hnsw_load,
    .set_search = hnsw_set_search,
    .search = hnsw_search,
    .version = hnsw_version,
    .attach = hnsw_attach,
    .persist = hnsw_persist,
    .remove = hnsw_remove,
    .insert = hnsw_insert,
    .sizes = hnsw_sizes,
    .rows = hnsw_rows,
    .client_bytes = hnsw_client_bytes,
    .client_keeps = "its graph, with a copy of each vector",
};
