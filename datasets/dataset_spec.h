/* Opening a dataset from its profile entry (key/value form), the way the agent receives it.
 *
 * Keys: name (required), source = synthetic | hdf5 | fvecs | fbin, path (hdf5/fvecs/fbin), queries_path
 * (fvecs/fbin), metric (required for synthetic/fvecs/fbin; hdf5 reads its "distance" attribute), and for
 * synthetic: rows, queries, dim, clusters, seed. Errors name the key. */
#ifndef VB_DATASETS_DATASET_SPEC_H
#define VB_DATASETS_DATASET_SPEC_H

#include "datasets/dataset.h"
#include "util/kv.h"

/* NULL-terminated list of the accepted keys (for profile validation). */
extern const char *const vb_dataset_spec_keys[];

int vb_dataset_open_spec(const vb_kv *kv, size_t n, const char *cache_dir, vb_dataset **out, vb_error *err);

#endif
