/* Opening a dataset from its profile entry: validates the keys, picks the source, and hands over to dataset.c.
 * Every error names the key it is about, prefixed with the dataset's name. */
#include "datasets/dataset_spec.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "datasets/registry.h"

const char *const vb_dataset_spec_keys[] = {"name",  "source", "path", "queries_path", "groundtruth_path",
                                            "metric", "rows",  "queries", "dim",       "clusters",
                                            "seed",  "registry", "ground_truth", "ground_truth_check",
                                            "labels_path", "queries_labels_path", NULL};

const vb_dataset_spec_int vb_dataset_spec_ints[] = {
    {"rows", 1, 1000000000L, 10000},
    {"queries", 1, 10000000L, 1000},
    {"dim", 1, VB_DATASET_MAX_DIM, 128},
    {"clusters", 0, 1000000L, 0},
    {"seed", 0, __LONG_MAX__, 42},
    {NULL, 0, 0, 0},
};

/* The sources, their file extensions and the ground-truth files they take. */
typedef struct spec_src {
    const char *name;
    const char *ext;      /* path and queries_path end in it; NULL: no files (synthetic) */
    const char *gt_ext;   /* groundtruth_path ends in it; NULL: none taken */
    const char *gt_kind;  /* what that ground truth is called */
} spec_src;

static const spec_src spec_sources[] = {
    {"synthetic", NULL, NULL, NULL},
    {"hdf5", ".hdf5", NULL, NULL},
    {"fvecs", ".fvecs", ".ivecs", "TEXMEX ground truth"},
    {"bvecs", ".bvecs", ".ivecs", "TEXMEX ground truth"},
    {"fbin", ".fbin", ".ibin", "big-ann ground truth"},
    {"u8bin", ".u8bin", ".ibin", "big-ann ground truth"},
    /* MNIST's IDX files (datasets/idx.h), told by their magic: any name (Debian's are NAME-idx3-ubyte.gz) */
    {"idx", "", NULL, NULL},
};
#define N_SOURCES (sizeof spec_sources / sizeof spec_sources[0])
#define SOURCE_LIST "synthetic, hdf5, fvecs, bvecs, fbin, u8bin, idx"

static int spec_fail(vb_error *err, const char *name, const char *key, const char *msg, const char *value) {
    if (value) return vb_error_set(err, "dataset", 1, "dataset '%s': %s: %s \"%s\"", name, key, msg, value);
    return vb_error_set(err, "dataset", 1, "dataset '%s': %s: %s", name, key, msg);
}

static int ends_with(const char *s, const char *suffix) {
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && strcasecmp(s + a - b, suffix) == 0;
}

static const spec_src *source_named(const char *name) {
    for (size_t i = 0; i < N_SOURCES; i++)
        if (strcmp(spec_sources[i].name, name) == 0) return &spec_sources[i];
    return NULL;
}

/* The source a path's extension tells (.h5 is HDF5 too), or NULL. */
static const spec_src *source_of_path(const char *path) {
    if (ends_with(path, ".h5")) return source_named("hdf5");
    for (size_t i = 0; i < N_SOURCES; i++)
        if (spec_sources[i].ext && *spec_sources[i].ext && ends_with(path, spec_sources[i].ext)) return &spec_sources[i];
    return NULL;
}

/* An HDF5 file is recognised by its signature, so source hdf5 takes any name; the others by their extension. */
static int src_ext_ok(const spec_src *s, const char *path) {
    return !s->gt_ext || ends_with(path, s->ext);
}

/* Names the offending key for the caller (the profile loader turns it into file:line) and sets the error. */
#define check_fail(err, keyp, k, ...) (*(keyp) = (k), vb_error_set((err), "dataset", 1, __VA_ARGS__))

int vb_dataset_spec_check(const vb_kv *kv, size_t n, int complete, const char **key, vb_error *err) {
    const char *src = vb_kv_get(kv, n, "source", NULL);
    const char *path = vb_kv_get(kv, n, "path", NULL);
    const char *qpath = vb_kv_get(kv, n, "queries_path", NULL);
    const char *gtpath = vb_kv_get(kv, n, "groundtruth_path", NULL);
    const spec_src *s = NULL;
    /* registry: NAME (datasets/registry.h): `vbench run` fetches it and sets path before the agents see it */
    const char *reg = vb_kv_get(kv, n, "registry", NULL);
    const vb_registry_entry *re = reg ? vb_registry_find(reg) : NULL;
    if (reg && !re) return check_fail(err, key, "registry", "no dataset \"%s\" in the registry (datasets/registry.c)", reg);
    /* a dataset read from files (a registry one too): rows and queries take a seeded subset of what it holds */
    static const char *const subset_keys[] = {"rows", "queries"};
    for (int i = 0; i < 2 && (reg || (src && strcmp(src, "synthetic") != 0) || (!src && path && *path)); i++) {
        const char *v = vb_kv_get(kv, n, subset_keys[i], NULL);
        if (!v) continue;
        char *end;
        long long x = strtoll(v, &end, 10);
        unsigned long long have = re ? (i ? re->queries : re->rows) : 0;
        if (!*v || *end || x < 1)
            return check_fail(err, key, subset_keys[i], "\"%s\": a subset of the dataset's %s takes a whole number "
                              "from 1", v, i ? "queries" : "rows");
        if (have && (unsigned long long)x > have)
            return check_fail(err, key, subset_keys[i], "%lld is more than the %llu %s of %s", x, have,
                              i ? "queries" : "rows", re->name);
    }
    if (reg && (!path || !*path)) {
        /* `vbench run` gives it the paths of its files in the cache (coordinator/fetch_datasets.c) */
        if (complete)
            return check_fail(err, key, "path", "registry dataset %s has no file here: fetch it with `vbench dataset "
                              "fetch %s` and name %s/%s as path:", reg, reg, "CACHE/datasets", re->files[0].file);
        return VB_OK;
    }
    const char *gtuse = vb_kv_get(kv, n, "ground_truth", NULL);
    if (gtuse && strcmp(gtuse, "compute") != 0 && strcmp(gtuse, "shipped") != 0)
        return check_fail(err, key, "ground_truth", "\"%s\" is neither compute (the default: exact, computed here) "
                          "nor shipped (the dataset's own neighbours, checked on a sample)", gtuse);
    const char *gtchk = vb_kv_get(kv, n, "ground_truth_check", NULL);
    if (gtchk) {
        char *end;
        long v = strtol(gtchk, &end, 10);
        if (*gtchk == '\0' || *end || v < 1 || v > 1000000)
            return check_fail(err, key, "ground_truth_check", "\"%s\": queries to check the shipped ground truth "
                              "on, a whole number from 1", gtchk);
    }
    if (src) {
        if (!(s = source_named(src)))
            return check_fail(err, key, "source", "unknown source \"%s\" (%s)", src, SOURCE_LIST);
    } else if (path && *path) {
        if (!(s = source_of_path(path)))
            return check_fail(err, key, "path",
                              "\"%s\" has no known extension (.hdf5, .h5, .fvecs, .bvecs, .fbin, .u8bin) and no "
                              "source is given",
                              path);
    } else if (complete) {
        return check_fail(err, key, "source", "required (%s) when path does not tell", SOURCE_LIST);
    } else {
        /* nothing says which source this is (the agent reports it); the ground truth can still be checked */
        if (gtpath && !ends_with(gtpath, ".ivecs") && !ends_with(gtpath, ".ibin"))
            return check_fail(err, key, "groundtruth_path", "\"%s\" is neither .ivecs nor .ibin", gtpath);
        return VB_OK;
    }
    const char *lpath = vb_kv_get(kv, n, "labels_path", NULL), *qlpath = vb_kv_get(kv, n, "queries_labels_path", NULL);
    if ((lpath || qlpath) && strcmp(s->name, "idx") != 0)
        return check_fail(err, key, lpath ? "labels_path" : "queries_labels_path", "only source idx takes label "
                          "files (source %s)", s->name);
    if (s->ext && gtuse && strcmp(gtuse, "shipped") == 0 && vb_kv_get(kv, n, "rows", NULL))
        return check_fail(err, key, "ground_truth", "shipped neighbours are ids of the whole corpus, not of a "
                          "subset of its rows (rows:): drop rows: or take ground_truth: compute");
    if (!s->ext) { /* synthetic */
        if (gtuse && strcmp(gtuse, "shipped") == 0)
            return check_fail(err, key, "ground_truth", "a synthetic dataset ships no neighbours: it takes "
                              "ground_truth: compute (the default)");
        if (gtpath)
            return check_fail(err, key, "groundtruth_path",
                              "a synthetic dataset takes no ground-truth file (vbench computes it) \"%s\"", gtpath);
        return VB_OK;
    }
    if (path && *path && !src_ext_ok(s, path))
        return check_fail(err, key, "path", "\"%s\" does not end in %s, the extension of source %s", path, s->ext,
                          s->name);
    if (complete && (!path || !*path)) return check_fail(err, key, "path", "required for source %s", s->name);
    if (strcmp(s->name, "idx") == 0) { /* images: path and queries_path; labels (optional, both): the class column */
        if (gtpath)
            return check_fail(err, key, "groundtruth_path", "source idx takes no ground-truth file (vbench computes "
                              "it) \"%s\"", gtpath);
        if (gtuse && strcmp(gtuse, "shipped") == 0)
            return check_fail(err, key, "ground_truth", "source idx ships no neighbours: it takes ground_truth: "
                              "compute (the default)");
        if (complete && (!qpath || !*qpath))
            return check_fail(err, key, "queries_path", "required for source idx (the query images)");
        if (!lpath != !qlpath)
            return check_fail(err, key, lpath ? "queries_labels_path" : "labels_path", "labels_path and "
                              "queries_labels_path go together (the class of every row and of every query)");
        return VB_OK;
    }
    if (!s->gt_ext) { /* hdf5: one file holding everything */
        if (gtpath)
            return check_fail(err, key, "groundtruth_path",
                              "source hdf5 takes no ground-truth file (its neighbours are the file's 'neighbors') "
                              "\"%s\"",
                              gtpath);
        return VB_OK;
    }
    if (qpath && *qpath && !src_ext_ok(s, qpath))
        return check_fail(err, key, "queries_path", "\"%s\" does not end in %s, the extension of source %s", qpath,
                          s->ext, s->name);
    if (complete && (!qpath || !*qpath))
        return check_fail(err, key, "queries_path", "required for source %s", s->name);
    if (gtpath && !ends_with(gtpath, s->gt_ext))
        return check_fail(err, key, "groundtruth_path", "\"%s\": source %s takes %s, a %s file", gtpath, s->name,
                          s->gt_kind, s->gt_ext);
    return VB_OK;
}

static int spec_synthetic(const vb_kv *kv, size_t n, const char *name, const char *cache_dir, vb_dataset **out,
                          vb_error *err) {
    const char *metric = vb_kv_get(kv, n, "metric", NULL);
    vb_synth_params p = {0};
    if (!metric) return vb_error_set(err, "dataset", 1, "metric: required for a synthetic dataset");
    if (vb_metric_parse(metric, &p.metric) != 0)
        return vb_error_set(err, "dataset", 1, "metric: unknown metric (angular, euclidean, dot) \"%s\"", metric);
    long v[5];   /* rows, queries, dim, clusters, seed: vb_dataset_spec_ints' order */
    /* the caller prefixes the dataset's name to these messages, as to the generator's */
    for (int i = 0; i < 5; i++) {
        const vb_dataset_spec_int *f = &vb_dataset_spec_ints[i];
        if (vb_kv_get_long(kv, n, f->key, f->def, f->min, f->max, &v[i], err) != VB_OK) return VB_ERROR;
    }
    p.rows = (size_t)v[0];
    p.queries = (size_t)v[1];
    p.dim = (size_t)v[2];
    p.clusters = (size_t)v[3];
    p.seed = (uint64_t)v[4];
    return vb_dataset_open_synthetic(name, &p, cache_dir, out, err);
}

int vb_dataset_open_spec(const vb_kv *kv, size_t n, const char *cache_dir, vb_dataset **out, vb_error *err) {
    *out = NULL;
    const char *name = vb_kv_get(kv, n, "name", NULL);
    if (vb_kv_check_keys(kv, n, vb_dataset_spec_keys, name ? name : "dataset", err) != VB_OK) return VB_ERROR;
    if (!name || !*name) return vb_error_set(err, "dataset", 1, "dataset: name: required");
    const char *bad = NULL;
    if (vb_dataset_spec_check(kv, n, 1, &bad, err) != VB_OK) {
        char msg[sizeof err->message];
        snprintf(msg, sizeof msg, "%s", err->message);
        return spec_fail(err, name, bad, msg, NULL);
    }
    const char *src = vb_kv_get(kv, n, "source", NULL);
    const char *path = vb_kv_get(kv, n, "path", NULL);
    const spec_src *s = src ? source_named(src) : source_of_path(path);

    int rc;
    if (!s->ext) {
        rc = spec_synthetic(kv, n, name, cache_dir, out, err);
    } else {
        /* Every file is a regular file before anything opens one (a FIFO would hold its open forever). */
        static const char *const file_keys[] = {"path", "queries_path", "groundtruth_path", "labels_path",
                                                "queries_labels_path"};
        for (size_t i = 0; i < sizeof file_keys / sizeof file_keys[0]; i++) {
            const char *f = vb_kv_get(kv, n, file_keys[i], NULL);
            if (f && *f && vb_dataset_check_file(f, err) != VB_OK) {
                char msg[sizeof err->message];
                snprintf(msg, sizeof msg, "%s", err->message);
                return spec_fail(err, name, file_keys[i], msg, NULL);
            }
        }
        const char *metric = vb_kv_get(kv, n, "metric", NULL);
        vb_metric m = VB_METRIC_ANGULAR;
        if (metric && vb_metric_parse(metric, &m) != 0)
            return spec_fail(err, name, "metric", "unknown metric (angular, euclidean, dot)", metric);
        if (strcmp(s->name, "idx") == 0) {
            if (!metric) return spec_fail(err, name, "metric", "required for this source", NULL);
            rc = vb_dataset_open_idx(path, vb_kv_get(kv, n, "queries_path", NULL), vb_kv_get(kv, n, "labels_path", NULL),
                                     vb_kv_get(kv, n, "queries_labels_path", NULL), m, cache_dir, out, err);
        } else if (!s->gt_ext) { /* hdf5 */
            rc = vb_dataset_open_hdf5(path, cache_dir, out, err);
            if (rc == VB_OK && metric && (*out)->metric != m) {
                char msg[256];
                snprintf(msg, sizeof msg, "the profile says %s but %s says %s", vb_metric_name(m), path,
                         vb_metric_name((*out)->metric));
                vb_dataset_close(out);
                return spec_fail(err, name, "metric", msg, NULL);
            }
        } else {
            const char *qpath = vb_kv_get(kv, n, "queries_path", NULL);
            const char *gtpath = vb_kv_get(kv, n, "groundtruth_path", NULL);
            if (!metric) return spec_fail(err, name, "metric", "required for this source", NULL);
            rc = vb_dataset_open_vecs(path, qpath, m, cache_dir, out, err);
            if (rc == VB_OK && gtpath && (rc = vb_dataset_read_neighbors(*out, gtpath, err)) != VB_OK)
                vb_dataset_close(out);
        }
    }
    if (rc == VB_OK && s->ext) { /* a file's dataset: rows and queries take a seeded subset (dataset.h) */
        long rows, queries, seed;
        if (vb_kv_get_long(kv, n, "rows", 0, 1, 1000000000L, &rows, err) != VB_OK ||
            vb_kv_get_long(kv, n, "queries", 0, 1, 10000000L, &queries, err) != VB_OK ||
            vb_kv_get_long(kv, n, "seed", 42, 0, __LONG_MAX__, &seed, err) != VB_OK ||
            vb_dataset_subset(*out, (size_t)rows, (size_t)queries, (uint64_t)seed, err) != VB_OK) {
            vb_dataset_close(out);
            rc = VB_ERROR;
        }
    }
    if (rc != VB_OK) return vb_error_prefix(err, "dataset '%s'", name);
    snprintf((*out)->name, sizeof (*out)->name, "%s", name);
    const char *gtuse = vb_kv_get(kv, n, "ground_truth", "compute");
    (*out)->use_shipped_gt = strcmp(gtuse, "shipped") == 0;
    (*out)->gt_check = (size_t)strtol(vb_kv_get(kv, n, "ground_truth_check", "100"), NULL, 10);
    if ((*out)->use_shipped_gt && !(*out)->neighbors) {
        vb_dataset_close(out);
        return spec_fail(err, name, "ground_truth", "shipped, but the dataset ships no neighbours (an HDF5 "
                         "'neighbors' array, or groundtruth_path)", NULL);
    }
    return VB_OK;
}
