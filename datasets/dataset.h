/* A dataset: a corpus (train), a query set (test), its metric, and optionally ground truth from the file.
 *
 * The corpus is memory-mapped read-only and shared by every thread of the process; nothing is copied per
 * client. Sources:
 *   - ann-benchmarks HDF5 (datasets "train", "test", optional "neighbors"/"distances", attribute "distance");
 *     a contiguous float32 dataset is mapped in place, anything else (chunked, compressed, float64) is
 *     converted once into a cache file which is then mapped;
 *   - the synthetic generator (clustered, seeded), written once into a cache file and mapped;
 *   - TEXMEX .fvecs (float32) and .bvecs (uint8), big-ann .fbin (float32) and .u8bin (uint8) files: .fbin is
 *     mapped in place, the others are converted once into a float32 cache file which is then mapped (uint8
 *     values become the floats 0..255), so every engine and every thread sees one float32 corpus;
 *   - given neighbours from TEXMEX .ivecs or big-ann .ibin files (vb_dataset_read_neighbors), kept beside the
 *     corpus as HDF5 "neighbors"/"distances" are.
 * content_hash identifies the bytes of train + test + metric; ground truth is cached under it. */
#ifndef VB_DATASETS_DATASET_H
#define VB_DATASETS_DATASET_H

#include <stddef.h>
#include <stdint.h>

#include "datasets/distance.h"
#include "util/error.h"
#include "util/kv.h"

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
    /* Given neighbours, n_test x gt_k (HDF5 "neighbors", .ivecs, .ibin) and their distances (HDF5 "distances",
     * .ibin that has them; NULL otherwise). Read and shape-checked; used for recall only with the profile's
     * `ground_truth: shipped`, after a sample of queries is checked exactly (groundtruth.h
     * vb_groundtruth_from_shipped); by default vbench scores against the exact ground truth it computes. */
    const int32_t *neighbors;
    const float *distances;
    int use_shipped_gt;     /* the profile's ground_truth: shipped */
    size_t gt_check;        /* queries the shipped ground truth is checked on (ground_truth_check, default 100) */
    char content_hash[33];  /* 32 hex chars (XXH3-128 of metric, dims, train, test) */
    /* A real class per row and per query (Fashion-MNIST's 10 labels from its IDX files; a synthetic corpus's
     * cluster), in [0, n_classes): the filtered phase's class predicates (label_own: the query's own class,
     * label_other, class = L) select on it. NULL and 0 for a dataset without classes. Owned by the dataset. */
    const int32_t *train_class;   /* n_train */
    const int32_t *test_class;    /* n_test */
    int n_classes;
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
/* The largest vector dimension a dataset file may declare (the synthetic generator's "dim" allows as much). */
#define VB_DATASET_MAX_DIM 65536

/* Opens a base file and a query file, each by its extension: .fvecs, .bvecs, .fbin or .u8bin. metric must be
 * given. Errors name the file and the row (vector number) or the header. */
int vb_dataset_open_vecs(const char *base_path, const char *query_path, vb_metric metric, const char *cache_dir,
                         vb_dataset **out, vb_error *err);
/* Opens IDX image files (datasets/idx.h: MNIST's format, gzipped or plain) as the corpus and the queries, each
 * image a float32 row of its pixel values 0..255 (converted once into the cache), and, when given, their IDX label
 * files as the class columns (train_class, test_class; n_classes = the largest label + 1). Both label files or
 * neither. Errors name the file and the byte offset; a label file of another count than its images is refused. */
int vb_dataset_open_idx(const char *train_images, const char *test_images, const char *train_labels,
                        const char *test_labels, vb_metric metric, const char *cache_dir, vb_dataset **out,
                        vb_error *err);
/* A seeded subset, for quick runs on a big dataset (the profile's rows: N and queries: N on a dataset read from
 * files): `rows` of the corpus rows and `queries` of the queries (0 or the whole count: all), chosen by seed (the
 * same on any machine) and kept in their file order, with their classes; copied into memory the dataset owns, and
 * content_hash recomputed (the ground truth is the subset's). The file's given neighbours go with a query subset,
 * and are dropped with a row subset (their ids are rows of the whole corpus). More than the dataset holds: VB_ERROR. */
int vb_dataset_subset(vb_dataset *ds, size_t rows, size_t queries, uint64_t seed, vb_error *err);
/* Reads the dataset's given neighbours from a TEXMEX .ivecs file (per query: int32 k, then k int32 ids) or a
 * big-ann .ibin file (uint32 queries, uint32 k, queries x k uint32 ids, then optionally queries x k float32
 * distances: the big-ann-benchmarks ground-truth layout; without them, the ids-only .ibin of cuVS / RAFT).
 * One row per query, every id a row of the corpus, k the same in every row. Fills gt_k, neighbors and
 * (.ibin with distances) distances; refused when the dataset already has neighbours. */
int vb_dataset_read_neighbors(vb_dataset *ds, const char *path, vb_error *err);

/* Dataset files must be regular files: a FIFO, a device or a directory is refused by name (it would block a read
 * or an open forever, or is not data). check: by stat, which never blocks. open: O_RDONLY without blocking, then
 * the same check on the opened file; returns the descriptor (blocking again) or -1 with err set. */
int vb_dataset_check_file(const char *path, vb_error *err);
/* The metric of a profile's dataset entry (dataset_spec.h keys) without opening the corpus: its `metric` value, or
 * an HDF5 file's "distance" attribute. VB_OK with *out set; VB_RETRY when it cannot be known yet (no metric, no
 * file: the item says why when it runs); VB_ERROR with err for an unreadable attribute or an unknown word. */
int vb_dataset_metric_of(const vb_kv *kv, size_t n, vb_metric *out, vb_error *err);
int vb_dataset_open_file(const char *path, vb_error *err);
/* After an HDF5 call on path failed: why, into buf. A file shorter than its superblock's end-of-file address says
 * "truncated" with both sizes; otherwise HDF5's innermost error. Clears HDF5's error stack, which a failed call
 * leaves behind (in a thread, the library could not close at exit: "HDF5: infinite loop closing library"). */
void vb_dataset_hdf5_why(const char *path, char *buf, size_t len);
void vb_dataset_close(vb_dataset **ds);   /* unmaps, frees, sets *ds = NULL; NULL-safe */

/* Resolves the cache directory and creates it (mkdir -p): cache_dir when given, else $VBENCH_CACHE, else
 * $XDG_CACHE_HOME/vbench, else $HOME/.cache/vbench, else /tmp/vbench-cache. Writes the path into buf. */
int vb_dataset_cache_dir(const char *cache_dir, char *buf, size_t len, vb_error *err);
/* The same path, without creating anything (the preflight: `vbench run --check` creates nothing). */
void vb_dataset_cache_dir_name(const char *cache_dir, char *buf, size_t len);

/* The filter column: a deterministic tag in [0, 10000) per row id, from a 64-bit mix of the id.
 * A filter "tag < s * 10000" passes a fraction s of the rows (1 % -> tag < 100), independently of the vectors. */
int32_t vb_dataset_tag(int64_t id);
/* The second range column of the `and` predicate: another tag in [0, 10000), from an independent mix of the id,
 * so "tag < a AND tag2 < b" passes (a / 10000) x (b / 10000) of the rows. */
int32_t vb_dataset_tag2(int64_t id);
/* The label column of the `equality` predicate: VB_LABELS values with a fixed frequency each, label i passing
 * vb_dataset_label_share(i) of the rows (labels 1..9: 0.1 %, 0.2 %, 0.5 %, 1 %, 2 %, 5 %, 10 %, 20 %, 50 %; label 0
 * the remaining 11.2 %), from a third independent mix of the id (resolution 1e-5). */
#define VB_LABELS 10
int32_t vb_dataset_label(int64_t id);
double vb_dataset_label_share(int32_t label);
/* The label whose share is `share` (within 1e-9), or -1 when no label has it. */
int32_t vb_dataset_label_for(double share);

#endif
