/* A dataset's shape without loading it: rows, queries and dimension, read from a profile entry, a file header
 * (HDF5 dataspaces, .fvecs/.bvecs first record, .fbin/.u8bin header) or the registry (datasets/registry.h) when
 * the file is not fetched yet. The preflight (coordinator/preflight.c) sizes disks from it and the runtime
 * estimate (coordinator/estimate.c) times phases from it, before anything is generated, converted or loaded. */
#ifndef VB_DATASETS_SHAPE_H
#define VB_DATASETS_SHAPE_H

#include <stddef.h>
#include <stdint.h>

#include "datasets/registry.h"
#include "util/error.h"
#include "util/kv.h"

typedef struct vb_dataset_shape {
    uint64_t rows, queries, dim;   /* what a campaign uses: a file's rows: / queries: subset applied */
    uint64_t file_rows, file_queries;   /* what the files hold, before the subset */
    uint64_t fetch_bytes;   /* a registry file not downloaded yet: what the download needs in the cache */
    uint64_t cache_bytes;   /* what opening it writes into the cache: the synthetic corpus, or the float32
                             * conversion of a chunked / non-float32 HDF5 array or a .fvecs/.bvecs/.u8bin file */
    char from[160];         /* "profile", "file header", "registry", "Debian package NAME", then ", a seeded subset
                             * of R rows and Q queries" when the profile takes one */
} vb_dataset_shape;

/* The shape of the profile entry kv (dataset_spec.h keys, plus `registry`). cache_dir: the resolved dataset
 * cache, where a registry file is looked for. VB_ERROR naming the file when a header cannot be read. */
int vb_dataset_shape_of(const vb_kv *kv, size_t n, const char *cache_dir, vb_dataset_shape *out, vb_error *err);

/* Checks the files of a registry entry in datasets_dir against its shape, by their headers: the corpus's rows
 * and dim, the queries' rows and dim, the ground truth's rows (one per query). VB_OK when they match; VB_ERROR
 * naming the file, what the registry says and what the file holds. move_aside: a file that does not match is
 * renamed to FILE.bad (its recorded FILE.sha256 to FILE.bad.sha256, as it is the checksum of that wrong file), so
 * the next fetch fetches it again instead of refusing it by that checksum; nothing is deleted. A file that is not
 * here is an error too. */
int vb_registry_check_shape(const vb_registry_entry *e, const char *datasets_dir, int move_aside, vb_error *err);

#endif
