/* A C interface over the header-only hnswlib (Debian trixie's 0.8.0), used by engines/hnswlib.c.
 *
 * One vb_hnsw is one hnswlib::HierarchicalNSW<float> plus what hnswlib does not keep: the metric (angular is
 * served as inner product over normalised vectors), a tag and a class per label for filtered search, and the file format
 * of the small sidecar that lets attach verify a saved index before trusting it. Every C++ exception is caught
 * in the shim and returned as a vb_error; nothing throws across this interface.
 *
 * Threads: add and remove may run from several threads at once (hnswlib locks per label and per node);
 * search may run from any number of threads at once. Searching while adding is what hnswlib itself allows
 * but it reads neighbour lists without locks, so vbench's phases never mix the two. ef is an argument of each
 * search, so every connection keeps its own (hnswlib itself keeps one ef in the index; the shim never sets it). */
#ifndef VB_ENGINES_HNSWLIB_SHIM_H
#define VB_ENGINES_HNSWLIB_SHIM_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#include "datasets/distance.h"
#include "util/error.h"

typedef struct vb_hnsw vb_hnsw;

typedef struct vb_hnsw_stats {
    size_t rows;            /* live rows (slots in use minus deleted) */
    size_t deleted;         /* slots marked deleted, waiting to be reused */
    size_t capacity;        /* slots allocated (max_elements) */
    size_t file_bytes;      /* graph + vectors + labels of the used slots: what save writes */
    size_t memory_bytes;    /* estimate of the memory held: all slots, upper layers, lookup table, tags */
    size_t vector_bytes;    /* live rows x dim x 4 */
} vb_hnsw_stats;

/* The library version ("0.8.0"): hnswlib's headers carry none, so it is the Debian package version the shim
 * is written against, overridable at build time with -DVB_HNSWLIB_VERSION=... Static string. */
const char *vb_hnsw_version(void);

#define VB_HNSW_NO_TAG INT32_MAX   /* the tag of a row added without one */
#define VB_HNSW_NO_CLASS (-1)      /* the class of a row added without one */

/* Creates an empty index of `capacity` slots. Ids given to add must lie in [0, capacity): tags are kept in an
 * array indexed by id. *out is freed with vb_hnsw_destroy. */
int vb_hnsw_create(size_t dim, vb_metric metric, size_t capacity, int m, int ef_construction, vb_hnsw **out,
                   vb_error *err);

/* Loads an index saved by vb_hnsw_save. *found = 0 (and *out = NULL, VB_OK) when either file is missing or the
 * sidecar says the index was built with another dim, metric, m or ef_construction; VB_ERROR when the files
 * are there but unreadable or inconsistent. capacity may grow the index (never shrinks it). *out is freed
 * with vb_hnsw_destroy. */
int vb_hnsw_open(const char *index_path, const char *meta_path, size_t dim, vb_metric metric, size_t capacity,
                 int m, int ef_construction, vb_hnsw **out, int *found, vb_error *err);

/* Frees the index and sets *h = NULL; NULL-safe. */
void vb_hnsw_destroy(vb_hnsw **h);

/* Adds n rows (vecs is n x dim), split over `threads` threads when n is large enough. An id that is present
 * is updated; an id that was removed gets its own slot back; a new id takes a deleted slot when one is free,
 * else a new slot. tags may be NULL: such rows have VB_HNSW_NO_TAG; classes too (VB_HNSW_NO_CLASS). */
int vb_hnsw_add(vb_hnsw *h, const int64_t *ids, const float *vecs, const int32_t *tags, const int32_t *classes,
                size_t n, int threads, vb_error *err);

/* Marks rows deleted. Ids that are absent or already removed are skipped, so a repeated batch (a resumed
 * churn) is not an error; *removed (may be NULL) counts the rows that were live. */
int vb_hnsw_remove(vb_hnsw *h, const int64_t *ids, size_t n, size_t *removed, vb_error *err);

/* Every live row, fn(arg, id, vec) once each in slot order, with no write in flight: vec the vector as the index
 * holds it (for angular the unit-length copy the shim stored: the same direction). fn returns non-zero to stop,
 * which is VB_ERROR. */
typedef int (*vb_hnsw_row_fn)(void *arg, int64_t id, const float *vec);
int vb_hnsw_rows(vb_hnsw *h, vb_hnsw_row_fn fn, void *arg, vb_error *err);

/* The filter callback: non-zero when the row (its id, stored tag and class) passes. Called from the graph walk,
 * for rows that have a tag or a class (VB_HNSW_NO_TAG / VB_HNSW_NO_CLASS for the one they lack). */
typedef int (*vb_hnsw_pass)(void *arg, int64_t id, int32_t tag, int32_t cls);

/* Writes up to k ids, closest first, into ids_out and their count into *n_out, walking the base layer with
 * max(ef, k) candidates (hnswlib's ef). With pass non-NULL, only tagged rows for which pass(pass_arg, id, tag)
 * holds are returned (hnswlib's filter functor: the graph walk continues past rejected rows). */
int vb_hnsw_search(vb_hnsw *h, const float *query, int k, int ef, vb_hnsw_pass pass, void *pass_arg,
                   int64_t *ids_out, int *n_out, vb_error *err);

/* Saves the index and its sidecar (dim, metric, m, ef_construction, file size, tags, classes), each written to a
 * temporary name and renamed; the sidecar goes last, so a crash in between leaves no sidecar and open
 * reports found = 0 rather than a half-written index. */
int vb_hnsw_save(vb_hnsw *h, const char *index_path, const char *meta_path, vb_error *err);

void vb_hnsw_get_stats(vb_hnsw *h, vb_hnsw_stats *out);

#ifdef __cplusplus
}
#endif

#endif
