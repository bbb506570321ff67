/* The dataset registry: the public files people benchmark with, by name (the ann-benchmarks HDF5 files, the TEXMEX
 * archives and the big-ann-benchmarks 10M files), so that a profile can say `registry: sift-128-euclidean` (its shape is then
 * known before the file is here) and `vbench dataset fetch NAME` (datasets/fetch.h) knows where to get it.
 *
 * Each entry has its shape (rows x dim, queries; for the runtime estimate and the disk preflight before the
 * files are here) and one to three files, each filling one key of the dataset spec (path, queries_path,
 * groundtruth_path) with its URL, and its size and sha256 where they are known. A size is written here only
 * when the file's format fixes it from the shape (the big-ann .fbin/.ibin headers); no checksum is written here
 * that was not published by the dataset's maintainers, and none is known to this tree today. Where they are not
 * known (0 / NULL), the fetch says the file is unverified, checks the size against what the server announces,
 * and records the checksum of the first complete download beside the file (FILE.sha256, sha256sum's format):
 * later fetches and copies are checked against that. An entry may also name a Debian package that ships the
 * dataset (vb_registry_package below), which is its source where it is installed or can be. */
#ifndef VB_DATASETS_REGISTRY_H
#define VB_DATASETS_REGISTRY_H

#include <stddef.h>
#include <stdint.h>

#define VB_REGISTRY_MAX_FILES 3

typedef struct vb_registry_file {
    const char *key;        /* the dataset spec key it fills: "path", "queries_path", "groundtruth_path" */
    const char *url;        /* where its maintainers publish it (with `member`: the archive) */
    const char *file;       /* its name in the cache's datasets/ directory and on a mirror */
    uint64_t size;          /* bytes, 0: unknown */
    const char *sha256;     /* 64 hex, NULL: unknown */
    /* An archive member (the TEXMEX .tar.gz files): url is the archive's, fetched (size and sha256 recorded at
     * its first fetch) into the cache as `archive` (its name on a mirror too), and the file is its member
     * `member`, unpacked (datasets/unpack.h); size is the member's. NULL: the file is fetched as it is. */
    const char *archive, *member;
    /* A cut (big-ann's 10M datasets): the file is the first cut_rows rows of the bigger .fbin/.u8bin at url,
     * fetched with a Range request and its header's row count set to cut_rows; size is the cut's. 0: none. */
    uint64_t cut_rows;
} vb_registry_file;

/* A Debian package that ships the dataset's own files (Debian's dataset-fashion-mnist: the IDX files of
 * Fashion-MNIST under /usr/share/datasets/fashion-mnist). Where the entry has one, it is the dataset's source when
 * it is installed or can be installed (datasets/package.h), and the entry's files (the publisher's download) are the
 * fallback. Each file fills one key of the dataset spec, with the spec source `source`. */
#define VB_REGISTRY_MAX_PKG_FILES 4
typedef struct vb_registry_package {
    const char *name;       /* "dataset-fashion-mnist" */
    const char *dir;        /* where it installs its files */
    const char *source;     /* dataset_spec source of its files: "idx" */
    struct {
        const char *key;    /* "path", "queries_path", "labels_path", "queries_labels_path" */
        const char *file;   /* its name in dir */
    } files[VB_REGISTRY_MAX_PKG_FILES];
} vb_registry_package;

typedef struct vb_registry_entry {
    const char *name;       /* "sift-128-euclidean" */
    const char *source;     /* dataset_spec source of the files: "hdf5", "fbin", "u8bin", "fvecs" */
    const char *metric;
    uint64_t rows, queries, dim;
    const char *origin;     /* who publishes it, for `vbench dataset list` */
    vb_registry_file files[VB_REGISTRY_MAX_FILES];   /* a NULL key ends the list */
    const vb_registry_package *package;               /* NULL: none */
} vb_registry_entry;

/* NULL when NAME is not in the registry. */
const vb_registry_entry *vb_registry_find(const char *name);
/* The entries, NULL-name terminated. */
const vb_registry_entry *vb_registry_all(void);
/* The number of files of an entry (its download; the package's files: vb_registry_package_n_files). */
size_t vb_registry_n_files(const vb_registry_entry *e);
size_t vb_registry_package_n_files(const vb_registry_package *p);
/* The file name of an entry's first file (its corpus) in the dataset cache: "NAME.hdf5". */
void vb_registry_file_name(const vb_registry_entry *e, char *buf, size_t len);
/* The bytes the files need on disk: the sizes where known, else (ann-benchmarks' layout) train + test float32
 * plus ground truth (100 int32 neighbours and float32 distances per query). */
uint64_t vb_registry_expected_bytes(const vb_registry_entry *e);
/* 1 when every file of the entry has a published size and sha256. */
int vb_registry_verified(const vb_registry_entry *e);
/* Bytes per vector element of a big-ann file by its name: 1 (.u8bin, .i8bin), 4 (.fbin, .ibin), 0: not one. */
unsigned vb_registry_bin_elem(const char *name);

#endif
