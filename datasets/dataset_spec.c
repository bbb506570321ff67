/* Opening a dataset from its profile entry: validates the keys, picks the source, and hands over to dataset.c.
 * Every error names the key it is about, prefixed with the dataset's name. */
#include "datasets/dataset_spec.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

const char *const vb_dataset_spec_keys[] = {"name", "source", "path", "queries_path", "metric", "rows",
                                            "queries", "dim", "clusters", "seed", NULL};

static int spec_fail(vb_error *err, const char *name, const char *key, const char *msg, const char *value) {
    if (value) return vb_error_set(err, "dataset", 1, "dataset '%s': %s: %s \"%s\"", name, key, msg, value);
    return vb_error_set(err, "dataset", 1, "dataset '%s': %s: %s", name, key, msg);
}

static int ends_with(const char *s, const char *suffix) {
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && strcasecmp(s + a - b, suffix) == 0;
}

/* The source named by "source", or inferred from the extension of "path" when "source" is absent. */
static const char *spec_source(const vb_kv *kv, size_t n) {
    const char *src = vb_kv_get(kv, n, "source", NULL);
    const char *path = vb_kv_get(kv, n, "path", NULL);
    if (src || !path) return src;
    if (ends_with(path, ".hdf5") || ends_with(path, ".h5")) return "hdf5";
    if (ends_with(path, ".fvecs")) return "fvecs";
    if (ends_with(path, ".fbin")) return "fbin";
    return NULL;
}

static int spec_synthetic(const vb_kv *kv, size_t n, const char *name, const char *cache_dir, vb_dataset **out,
                          vb_error *err) {
    const char *metric = vb_kv_get(kv, n, "metric", NULL);
    vb_synth_params p = {0};
    if (!metric) return vb_error_set(err, "dataset", 1, "metric: required for a synthetic dataset");
    if (vb_metric_parse(metric, &p.metric) != 0)
        return vb_error_set(err, "dataset", 1, "metric: unknown metric (angular, euclidean, dot) \"%s\"", metric);
    long rows, queries, dim, clusters, seed;
    /* the caller prefixes the dataset's name to these messages, as to the generator's */
    if (vb_kv_get_long(kv, n, "rows", 10000, 1, 1000000000L, &rows, err) != VB_OK ||
        vb_kv_get_long(kv, n, "queries", 1000, 1, 10000000L, &queries, err) != VB_OK ||
        vb_kv_get_long(kv, n, "dim", 128, 1, 65536, &dim, err) != VB_OK ||
        vb_kv_get_long(kv, n, "clusters", 0, 0, 1000000L, &clusters, err) != VB_OK ||
        vb_kv_get_long(kv, n, "seed", 42, 0, __LONG_MAX__, &seed, err) != VB_OK)
        return VB_ERROR;
    p.rows = (size_t)rows;
    p.queries = (size_t)queries;
    p.dim = (size_t)dim;
    p.clusters = (size_t)clusters;
    p.seed = (uint64_t)seed;
    return vb_dataset_open_synthetic(name, &p, cache_dir, out, err);
}

int vb_dataset_open_spec(const vb_kv *kv, size_t n, const char *cache_dir, vb_dataset **out, vb_error *err) {
    *out = NULL;
    const char *name = vb_kv_get(kv, n, "name", NULL);
    if (vb_kv_check_keys(kv, n, vb_dataset_spec_keys, name ? name : "dataset", err) != VB_OK) return VB_ERROR;
    if (!name || !*name) return vb_error_set(err, "dataset", 1, "dataset: name: required");
    const char *src = spec_source(kv, n);
    if (!src)
        return spec_fail(err, name, "source", "required (synthetic, hdf5, fvecs or fbin) when path does not tell",
                         NULL);

    int rc;
    if (strcmp(src, "synthetic") == 0) {
        rc = spec_synthetic(kv, n, name, cache_dir, out, err);
    } else if (strcmp(src, "hdf5") == 0 || strcmp(src, "fvecs") == 0 || strcmp(src, "fbin") == 0) {
        const char *path = vb_kv_get(kv, n, "path", NULL);
        const char *metric = vb_kv_get(kv, n, "metric", NULL);
        vb_metric m = VB_METRIC_ANGULAR;
        if (!path || !*path) return spec_fail(err, name, "path", "required for this source", NULL);
        if (metric && vb_metric_parse(metric, &m) != 0)
            return spec_fail(err, name, "metric", "unknown metric (angular, euclidean, dot)", metric);
        if (strcmp(src, "hdf5") == 0) {
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
            const char *ext = strcmp(src, "fvecs") == 0 ? ".fvecs" : ".fbin";
            if (!metric) return spec_fail(err, name, "metric", "required for this source", NULL);
            if (!qpath || !*qpath) return spec_fail(err, name, "queries_path", "required for this source", NULL);
            if (!ends_with(path, ext))
                return spec_fail(err, name, "path", "does not end in the source's extension", path);
            if (!ends_with(qpath, ext))
                return spec_fail(err, name, "queries_path", "does not end in the source's extension", qpath);
            rc = vb_dataset_open_vecs(path, qpath, m, cache_dir, out, err);
        }
    } else {
        return spec_fail(err, name, "source", "unknown source (synthetic, hdf5, fvecs, fbin)", src);
    }
    if (rc != VB_OK) return vb_error_prefix(err, "dataset '%s'", name);
    snprintf((*out)->name, sizeof (*out)->name, "%s", name);
    return VB_OK;
}
