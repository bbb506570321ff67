/* Dataset shapes from headers and the registry (datasets/shape.h). Nothing here maps or converts data. */
#include "datasets/shape.h"

#include <hdf5.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "datasets/dataset.h"
#include "datasets/idx.h"
#include "datasets/package.h"
#include "datasets/registry.h"

static int ends_with(const char *s, const char *suffix) {
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && strcasecmp(s + a - b, suffix) == 0;
}

/* rows x cols of an HDF5 2-D array and whether reading it needs a float32 copy (not contiguous float32). */
static int h5_dims(hid_t f, const char *name, uint64_t *rows, uint64_t *cols, int *convert) {
    hid_t d = H5Dopen2(f, name, H5P_DEFAULT);
    if (d < 0) return -1;
    hid_t s = H5Dget_space(d), t = H5Dget_type(d), p = H5Dget_create_plist(d);
    hsize_t dims[2] = {0, 0};
    int ok = s >= 0 && H5Sget_simple_extent_ndims(s) == 2 && H5Sget_simple_extent_dims(s, dims, NULL) == 2;
    *rows = dims[0];
    *cols = dims[1];
    *convert = !(p >= 0 && H5Pget_layout(p) == H5D_CONTIGUOUS && t >= 0 && H5Tequal(t, H5T_IEEE_F32LE) > 0);
    if (p >= 0) H5Pclose(p);
    if (t >= 0) H5Tclose(t);
    if (s >= 0) H5Sclose(s);
    H5Dclose(d);
    return ok ? 0 : -1;
}

static int shape_hdf5(const char *path, vb_dataset_shape *out, vb_error *err) {
    if (vb_dataset_check_file(path, err)) return VB_ERROR;   /* a FIFO would block the open forever */
    H5E_auto2_t fn;
    void *data;
    H5Eget_auto2(H5E_DEFAULT, &fn, &data);
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);   /* our message, not HDF5's stack dump */
    hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    int rc = VB_OK, ct = 0, cq = 0;
    uint64_t qdim = 0;
    char why[512];
    if (f < 0) {
        vb_dataset_hdf5_why(path, why, sizeof why);
        rc = vb_error_set(err, "dataset", 1, "%s: not an HDF5 file that can be opened: %s", path, why);
    } else if (h5_dims(f, "train", &out->rows, &out->dim, &ct) || h5_dims(f, "test", &out->queries, &qdim, &cq)) {
        rc = vb_error_set(err, "dataset", 1, "%s: no 2-D arrays \"train\" and \"test\"", path);
    }
    if (f >= 0) H5Fclose(f);
    H5Eclear2(H5E_DEFAULT);   /* a failed call's error stack (dataset.h vb_dataset_hdf5_why) */
    H5Eset_auto2(H5E_DEFAULT, fn, data);
    if (rc == VB_OK) out->cache_bytes = (ct ? out->rows * out->dim * 4 : 0) + (cq ? out->queries * out->dim * 4 : 0);
    return rc;
}

/* .fvecs/.bvecs: every record is int32 dim + dim values; .fbin/.u8bin: uint32 rows, uint32 dim, values. */
static int shape_vecs(const char *path, uint64_t *rows, uint64_t *dim, uint64_t *convert_bytes, vb_error *err) {
    int fd = vb_dataset_open_file(path, err);   /* never blocks: a FIFO or a device is refused by name */
    if (fd < 0) return VB_ERROR;
    FILE *f = fdopen(fd, "rb");
    if (!f) {
        close(fd);
        return vb_error_set(err, "dataset", 1, "%s: cannot open it to read its header", path);
    }
    uint32_t h[2] = {0, 0};
    size_t got = fread(h, 4, 2, f);
    fseek(f, 0, SEEK_END);
    uint64_t size = (uint64_t)ftell(f);
    fclose(f);
    if (got < 1 || h[0] == 0) return vb_error_set(err, "dataset", 1, "%s: header unreadable", path);
    if (ends_with(path, ".fvecs") || ends_with(path, ".bvecs")) {
        uint64_t vsize = ends_with(path, ".fvecs") ? 4 : 1;
        *dim = h[0];
        *rows = size / (4 + *dim * vsize);
        *convert_bytes = *rows * *dim * 4;
    } else {
        if (got < 2) return vb_error_set(err, "dataset", 1, "%s: header unreadable", path);
        *rows = h[0];
        *dim = h[1];
        *convert_bytes = ends_with(path, ".u8bin") ? *rows * *dim * 4 : 0;
    }
    return VB_OK;
}

/* The shape of IDX images (datasets/idx.h) from their header; a gzipped file is inflated as far as the header. */
static int shape_idx(const char *path, uint64_t *rows, uint64_t *dim, vb_error *err) {
    vb_idx *x;
    if (vb_idx_open(path, VB_IDX_MAGIC_IMAGES, &x, err) != VB_OK) return VB_ERROR;
    *rows = vb_idx_info_of(x)->items;
    *dim = vb_idx_info_of(x)->item_bytes;
    vb_idx_close(&x);
    return VB_OK;
}

static int shape_full(const vb_kv *kv, size_t n, const char *cache_dir, vb_dataset_shape *out, vb_error *err);

int vb_dataset_shape_of(const vb_kv *kv, size_t n, const char *cache_dir, vb_dataset_shape *out, vb_error *err) {
    if (shape_full(kv, n, cache_dir, out, err) != VB_OK) return VB_ERROR;
    out->file_rows = out->rows, out->file_queries = out->queries;
    const char *src = vb_kv_get(kv, n, "source", NULL), *path = vb_kv_get(kv, n, "path", NULL);
    if ((!path || (src && strcmp(src, "synthetic") == 0)) && !vb_kv_get(kv, n, "registry", NULL)) return VB_OK;
    /* a dataset read from files: rows and queries take a subset (dataset.h vb_dataset_subset) */
    long rows = atol(vb_kv_get(kv, n, "rows", "0")), q = atol(vb_kv_get(kv, n, "queries", "0"));
    if (rows > 0 && (uint64_t)rows < out->rows) out->rows = (uint64_t)rows;
    if (q > 0 && (uint64_t)q < out->queries) out->queries = (uint64_t)q;
    if (out->rows != out->file_rows || out->queries != out->file_queries) {
        size_t len = strlen(out->from);
        snprintf(out->from + len, sizeof out->from - len, ", a seeded subset of %llu rows and %llu queries",
                 (unsigned long long)out->file_rows, (unsigned long long)out->file_queries);
    }
    return VB_OK;
}

static int shape_full(const vb_kv *kv, size_t n, const char *cache_dir, vb_dataset_shape *out, vb_error *err) {
    memset(out, 0, sizeof *out);
    const char *src = vb_kv_get(kv, n, "source", NULL), *path = vb_kv_get(kv, n, "path", NULL);
    const char *reg = vb_kv_get(kv, n, "registry", NULL);
    if (!path && reg) {
        const vb_registry_entry *e = vb_registry_find(reg);
        if (!e) return vb_error_set(err, "dataset", 1, "registry: no dataset named \"%s\" (datasets/registry.c)", reg);
        if (e->package && vb_package_here(e->package)) {   /* its Debian package's files: nothing to fetch */
            out->rows = e->rows, out->queries = e->queries, out->dim = e->dim;
            out->cache_bytes = (e->rows + e->queries) * e->dim * 4;
            snprintf(out->from, sizeof out->from, "Debian package %s", e->package->name);
            return VB_OK;
        }
        /* every file in the cache: its shape from its headers, as if the profile named the files */
        char files[VB_REGISTRY_MAX_FILES][PATH_MAX + 300];
        vb_kv fkv[VB_REGISTRY_MAX_FILES + 1];
        size_t nf = vb_registry_n_files(e), here = 0;
        fkv[0] = (vb_kv){"source", e->source};
        for (size_t i = 0; i < nf; i++) {
            snprintf(files[i], sizeof files[i], "%s/datasets/%s", cache_dir ? cache_dir : ".", e->files[i].file);
            struct stat st;
            here += stat(files[i], &st) == 0;
            fkv[i + 1] = (vb_kv){e->files[i].key, files[i]};
        }
        if (here < nf) {
            out->rows = e->rows, out->queries = e->queries, out->dim = e->dim;
            out->fetch_bytes = vb_registry_expected_bytes(e);
            snprintf(out->from, sizeof out->from, "registry");
            return VB_OK;
        }
        return shape_full(fkv, nf + 1, cache_dir, out, err);
    }
    if (!path || (src && strcmp(src, "synthetic") == 0)) {
        long rows = atol(vb_kv_get(kv, n, "rows", "10000")), q = atol(vb_kv_get(kv, n, "queries", "1000"));
        long dim = atol(vb_kv_get(kv, n, "dim", "128"));
        out->rows = rows > 0 ? (uint64_t)rows : 0, out->queries = q > 0 ? (uint64_t)q : 0;
        out->dim = dim > 0 ? (uint64_t)dim : 0;
        out->cache_bytes = (out->rows + out->queries) * out->dim * 4;
        snprintf(out->from, sizeof out->from, "profile");
        return VB_OK;
    }
    snprintf(out->from, sizeof out->from, "file header");
    struct stat st;
    if (stat(path, &st) != 0)
        return vb_error_set(err, "dataset", 1, "%s: no such file%s", path,
                            reg ? "" : " (vbench dataset list shows the public ones, vbench dataset fetch gets them)");
    if ((src && strcmp(src, "hdf5") == 0) || ends_with(path, ".hdf5") || ends_with(path, ".h5"))
        return shape_hdf5(path, out, err);
    if (src && strcmp(src, "idx") == 0) {
        const char *qpath = vb_kv_get(kv, n, "queries_path", NULL);
        uint64_t qdim = 0;
        if (shape_idx(path, &out->rows, &out->dim, err) || (qpath && shape_idx(qpath, &out->queries, &qdim, err)))
            return VB_ERROR;
        out->cache_bytes = (out->rows + out->queries) * out->dim * 4;
        return VB_OK;
    }
    uint64_t conv = 0, qconv = 0, qdim = 0;
    if (shape_vecs(path, &out->rows, &out->dim, &conv, err)) return VB_ERROR;
    const char *qpath = vb_kv_get(kv, n, "queries_path", NULL);
    if (qpath && shape_vecs(qpath, &out->queries, &qdim, &qconv, err)) return VB_ERROR;
    out->cache_bytes = conv + qconv;
    return VB_OK;
}

/* One file of a registry entry against the entry: rows x dim (dim 0: not checked). */
static int shape_mismatch(const vb_registry_entry *e, const char *file, const char *what, uint64_t want_rows,
                          uint64_t want_dim, uint64_t rows, uint64_t dim, int move_aside, vb_error *err) {
    char bad[PATH_MAX + 320] = "", side[PATH_MAX + 320], badside[PATH_MAX + 330];
    if (move_aside) {
        snprintf(bad, sizeof bad, "%s.bad", file);
        snprintf(side, sizeof side, "%s.sha256", file);
        snprintf(badside, sizeof badside, "%s.sha256", bad);
        if (rename(file, bad) != 0) bad[0] = '\0';
        else rename(side, badside);   /* the checksum recorded was that of this wrong file */
    }
    char dims[48] = "";
    if (want_dim) snprintf(dims, sizeof dims, " x %llu", (unsigned long long)want_dim);
    char got[48] = "";
    if (want_dim) snprintf(got, sizeof got, " x %llu", (unsigned long long)dim);
    return vb_error_set(err, "dataset", 1, "%s: the registry says %s's %s is %llu%s, the file holds %llu%s: refused%s%s%s",
                        file, e->name, what, (unsigned long long)want_rows, dims, (unsigned long long)rows, got,
                        bad[0] ? " and moved to " : "", bad,
                        bad[0] ? " (with its recorded checksum): the source holds another version of the dataset; "
                                 "fetch it from the publisher or another mirror"
                               : ": it is another version of the dataset; delete it and fetch it again");
}

int vb_registry_check_shape(const vb_registry_entry *e, const char *datasets_dir, int move_aside, vb_error *err) {
    size_t n = vb_registry_n_files(e);
    for (size_t i = 0; i < n; i++) {
        const vb_registry_file *f = &e->files[i];
        char file[PATH_MAX + 300];
        snprintf(file, sizeof file, "%s/%s", datasets_dir, f->file);
        struct stat st;
        if (stat(file, &st) != 0)
            return vb_error_set(err, "dataset", 1, "%s: not here (vbench dataset fetch %s)", file, e->name);
        vb_dataset_shape sh = {0};
        uint64_t rows = 0, dim = 0, conv = 0;
        if (strcmp(f->key, "path") == 0 && strcmp(e->source, "hdf5") == 0) {
            if (shape_hdf5(file, &sh, err)) return VB_ERROR;
            if (sh.rows != e->rows || sh.dim != e->dim)
                return shape_mismatch(e, file, "corpus (\"train\")", e->rows, e->dim, sh.rows, sh.dim, move_aside, err);
            if (sh.queries != e->queries)
                return shape_mismatch(e, file, "query set (\"test\" rows)", e->queries, 0, sh.queries, 0, move_aside,
                                      err);
        } else if (strcmp(f->key, "groundtruth_path") == 0) {
            /* .ivecs: per query int32 k + k ids; .ibin: uint32 queries, uint32 k, ... */
            int fd = vb_dataset_open_file(file, err);
            if (fd < 0) return VB_ERROR;
            uint32_t h[2] = {0, 0};
            ssize_t got = pread(fd, h, sizeof h, 0);
            close(fd);
            if (got < 4 || h[0] == 0) return vb_error_set(err, "dataset", 1, "%s: ground-truth header unreadable", file);
            if (ends_with(file, ".ivecs")) rows = (uint64_t)st.st_size / (4 + 4ULL * h[0]);
            else rows = h[0];
            if (rows != e->queries)
                return shape_mismatch(e, file, "ground truth (rows, one per query)", e->queries, 0, rows, 0,
                                      move_aside, err);
        } else {
            if (shape_vecs(file, &rows, &dim, &conv, err)) return VB_ERROR;
            int corpus = strcmp(f->key, "path") == 0;
            uint64_t want = corpus ? e->rows : e->queries;
            if (rows != want || dim != e->dim)
                return shape_mismatch(e, file, corpus ? "corpus" : "query set", want, e->dim, rows, dim, move_aside,
                                      err);
        }
    }
    return VB_OK;
}
