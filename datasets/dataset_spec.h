/* Opening a dataset from its profile entry (key/value form), the way the agent receives it.
 *
 * Keys: name (required), source = synthetic | hdf5 | fvecs | bvecs | fbin | u8bin | idx (inferred from the
 * extension of path when absent; idx must be said), path (every source but synthetic), queries_path
 * (fvecs/bvecs/fbin/u8bin, the same extension as path; idx: the query images), groundtruth_path (optional given
 * neighbours: .ivecs for fvecs/bvecs, .ibin for fbin/u8bin), labels_path and queries_labels_path (idx only,
 * optional, both or neither: the IDX label files, the class column), metric (required for synthetic, the vector
 * files and idx; hdf5 reads its "distance" attribute), and for synthetic: rows, queries, dim, clusters, seed.
 * For a dataset read from files, rows and queries take a seeded subset (seed, default 42) of the corpus and of the
 * queries (vb_dataset_subset). Errors name the key. */
#ifndef VB_DATASETS_DATASET_SPEC_H
#define VB_DATASETS_DATASET_SPEC_H

#include "datasets/dataset.h"
#include "util/kv.h"

/* NULL-terminated list of the accepted keys (for profile validation). */
extern const char *const vb_dataset_spec_keys[];

/* The whole-number keys (the synthetic generator's), each with its range and default: the one place both the
 * profile loader (which refuses a value outside the range at its line, before anything is created) and the
 * generator read them. Ends with a NULL key. */
typedef struct vb_dataset_spec_int {
    const char *key;
    long min, max, def;
} vb_dataset_spec_int;
extern const vb_dataset_spec_int vb_dataset_spec_ints[];

/* The checks that need no file: the source is known (or told by the extension of path), path, queries_path and
 * groundtruth_path have the extensions the source takes. complete = 0 checks only the keys that are present
 * (what the profile loader does: a missing key is reported when the dataset is opened); complete = 1 also
 * requires the keys the source needs. On error, *key is the key at fault and err's message says what is wrong
 * with it (neither the key nor the dataset's name in it). */
int vb_dataset_spec_check(const vb_kv *kv, size_t n, int complete, const char **key, vb_error *err);

int vb_dataset_open_spec(const vb_kv *kv, size_t n, const char *cache_dir, vb_dataset **out, vb_error *err);

#endif
