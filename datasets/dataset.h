/* A dataset: a corpus (train), a query set (test), its metric, and optionally ground truth from the file.
 *
 * The corpus is memory-mapped read-only and shared by every thread of the process; nothing is copied per
 * client. Sources:
 *   - ann-benchmarks HDF5 (datasets "train", "test", optional "neighbors"/"distances", attribute "distance");
 *     a contiguous float32 dataset is mapped in place, anything else (chunked, compressed, float64) is
 *     converted once into a cache file which is then mapped;
 *   - the synthetic generator (clustered, seeded), written once into a cache file and mapped;
 *   - TEXMEX .fvecs and big-ann .fbin (float32 only) files.
 * content_hash identifies the bytes of train + test + metric; ground truth is cached under it. */
#ifndef VB_DATASETS_DATASET_H
#define VB_DATASETS_DATASET_H

#include <stddef.h>
#include <stdint.h>

#include "datasets/distance.h"
#include "util/error.h"

typedef struct vb_dataset {
    char name[128];
    char source[256];       /* file path, or "synthetic" */
    vb_metric metric;
    size_t dim;
    size_t n_train;
    const float *train;     /* n_train x dim, row-major, mapped */
    size_t n_test;
    const float *test;      /* n_test x dim, row-major, mapped or owned */
    size_t gt_k;            /* columns of neighbors/distances from the file, 0 when absent */
    const int32_t *neighbors;
    const float *distances;
    char content_hash[33];  /* 32 hex chars (XXH3-128 of metric, dims, train, test) */
    struct vb_dataset_private *priv;
} vb_dataset;

/* Parameters of the synthetic generator: a Gaussian mixture with `clusters` centres whose spreads differ per
 * cluster and per dimension, cluster sizes that follow a power law, and queries drawn from the same mixture
 * (not from the corpus), so the data has the structure that makes ANN search non-trivial. Same params and seed,
 * same bytes, on any machine. */
typedef struct vb_synth_params {
    size_t rows, queries, dim, clusters;
    vb_metric metric;      /* angular rows are normalised */
    uint64_t seed;
} vb_synth_params;

/* Opens an ann-benchmarks HDF5 file. Errors name the file and the array ("train", "test", ...) and shape. */
int vb_dataset_open_hdf5(const char *path, const char *cache_dir, vb_dataset **out, vb_error *err);
/* Generates (or reuses from cache_dir) a synthetic dataset. */
int vb_dataset_open_synthetic(const char *name, const vb_synth_params *p, const char *cache_dir,
                              vb_dataset **out, vb_error *err);
/* Opens a base file (.fvecs or .fbin) and a query file of the same format. metric must be given. */
int vb_dataset_open_vecs(const char *base_path, const char *query_path, vb_metric metric, const char *cache_dir,
                         vb_dataset **out, vb_error *err);
void vb_dataset_close(vb_dataset **ds);   /* unmaps, frees, sets *ds = NULL; NULL-safe */

/* Resolves the cache directory and creates it (mkdir -p): cache_dir when given, else $VBENCH_CACHE, else
 * $XDG_CACHE_HOME/vbench, else $HOME/.cache/vbench, else /tmp/vbench-cache. Writes the path into buf. */
int vb_dataset_cache_dir(const char *cache_dir, char *buf, size_t len, vb_error *err);

/* The filter column: a deterministic tag in [0, 10000) per row id, from a 64-bit mix of the id.
 * A filter "tag < s * 10000" passes a fraction s of the rows (1 % -> tag < 100), independently of the vectors. */
int32_t vb_dataset_tag(int64_t id);

#endif
