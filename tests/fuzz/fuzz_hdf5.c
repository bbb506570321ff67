/* Fuzz target: ann-benchmarks HDF5 files, structure-aware.
 *
 * What is fuzzed is vbench's reading of an HDF5 file (datasets/dataset.c: which arrays exist, their rank, shape,
 * type class and layout, the "distance" attribute, in-place mapping versus conversion), not libhdf5's own
 * parser of the format: libhdf5 is a library we trust less than our own code, and its parser has known crashes
 * on corrupt files that no check of ours could prevent. So the input is a description of a file, which this
 * target writes with the HDF5 API (every file is one libhdf5 itself produces) and then opens through
 * vb_dataset_open_hdf5 like a profile's hdf5 dataset.
 *
 * Input (fz_reader: little-endian, zeros once used up):
 *   attribute: 1 byte form (none, fixed or variable-length string, scalar or an array of several, a number,
 *              an empty dataspace), 1 byte value (one of the metric names or raw bytes taken from the input)
 *   4 arrays (train, test, neighbors, distances), each: 1 byte kind (absent, array, group, dangling link, hard
 *              link to an earlier array), 1 byte rank, 1 byte per dimension (small, or one of a few extreme
 *              sizes), 1 byte element type, 1 byte layout (contiguous, chunked, compressed, compact, unwritten)
 *   the rest: element bytes, repeated as needed.
 * Arrays of more than 64 Ki elements are not built (converting a big dataset is what the code is for, not a
 * decoding question), unless their size in float32 overflows 64 bits: such a shape must be refused, not converted.
 *
 * Invariants checked beyond the sanitizers: a refused file says why; an accepted one has non-empty train/test of
 * one dimension, every float readable, file ground truth (neighbors/distances) readable when gt_k > 0, and for
 * a written little-endian float32 train array the floats of the file. */
#include <hdf5.h>

#include "datasets/dataset.h"
#include "tests/fuzz/fuzz_util.h"

#define N_ARRAYS 4
#define MAX_ELEMS 65536        /* 256 KB of float32 */
#define MAX_WRITE 65536        /* elements written from the input; larger arrays keep their fill value */

static const char *const array_names[N_ARRAYS] = {"train", "test", "neighbors", "distances"};
static const char *const metric_names[] = {"angular", "euclidean", "dot", "cosine", "l2", "ip", "hamming", "jaccard"};
static const hsize_t extreme_dims[8] = {0, 1u << 20, 1ull << 31, 1ull << 32, (1ull << 32) + 1, 1ull << 40,
                                        1ull << 62, (1ull << 63) + 1};

typedef struct array_desc {
    int kind;   /* 0 absent, 1 array, 2 group, 3 dangling soft link, 4 hard link to an earlier array */
    int rank;
    hsize_t dims[3];
    int type;   /* index into the types of make_type */
    int layout; /* 0 contiguous, 1 chunked, 2 chunked + deflate, 3 compact, 4 chunked + shuffle + fletcher32,
                   5 contiguous never written */
    int link_to;
} array_desc;

enum { N_TYPES = 12 };

/* The file type of an element; the caller closes it. */
static hid_t make_type(int t) {
    switch (t) {
    case 0: return H5Tcopy(H5T_IEEE_F32LE);
    case 1: return H5Tcopy(H5T_IEEE_F32BE);
    case 2: return H5Tcopy(H5T_IEEE_F64LE);
    case 3: return H5Tcopy(H5T_IEEE_F64BE);
    case 4: return H5Tcopy(H5T_STD_I32LE);
    case 5: return H5Tcopy(H5T_STD_I8LE);
    case 6: return H5Tcopy(H5T_STD_U64BE);
    case 7: return H5Tcopy(H5T_STD_U16LE);
    case 8: {
        hid_t s = H5Tcopy(H5T_C_S1);
        H5Tset_size(s, 4);
        return s;
    }
    case 9: {
        hid_t c = H5Tcreate(H5T_COMPOUND, 8);
        H5Tinsert(c, "x", 0, H5T_IEEE_F32LE);
        H5Tinsert(c, "y", 4, H5T_IEEE_F32LE);
        return c;
    }
    case 10: return H5Tcopy(H5T_NATIVE_B8);
    default: {
        hid_t e = H5Tenum_create(H5T_NATIVE_INT);
        int v = 0;
        H5Tenum_insert(e, "zero", &v);
        return e;
    }
    }
}

/* Element count of an array, or 0 with *overflow set when its size as float32 does not fit 64 bits. */
static uint64_t elems(const array_desc *a, int *overflow) {
    uint64_t n = 1, bytes;
    *overflow = 0;
    for (int i = 0; i < a->rank; i++)
        if (__builtin_mul_overflow(n, a->dims[i], &n)) {
            *overflow = 1;
            return 0;
        }
    if (__builtin_mul_overflow(n, 4, &bytes)) {
        *overflow = 1;
        return 0;
    }
    return n;
}

/* Fills buf with len bytes taken cyclically from the input's tail. */
static void fill(uint8_t *buf, size_t len, const uint8_t *src, size_t n) {
    for (size_t i = 0; i < len; i++) buf[i] = n ? src[i % n] : (uint8_t)i;
}

typedef struct attr_desc {
    int form;   /* 0 none, 1 fixed string, 2 variable string, 3 fixed strings x2-4, 4 variable strings x2-4,
                   5 int, 6 double, 7 fixed string in an empty (null) dataspace */
    int pick;   /* < 0xC0: a metric name, with or without its NUL; else raw bytes */
    char value[64];
    size_t len;
} attr_desc;

static void read_attr(fz_reader *r, attr_desc *d) {
    d->form = (int)(fz_take(r, 1) % 8);
    d->pick = (int)fz_take(r, 1);
    if (d->pick < 0xC0) {
        snprintf(d->value, sizeof d->value, "%s", metric_names[d->pick % 8]);
        d->len = strlen(d->value) + (d->pick & 0x20 ? 0 : 1);
    } else {
        d->len = (size_t)(d->pick % 40);
        for (size_t i = 0; i < d->len; i++) d->value[i] = (char)fz_take(r, 1);
    }
    if (d->len == 0) d->len = 1, d->value[0] = 0;
}

static int write_attr(hid_t f, const attr_desc *d) {
    int form = d->form, pick = d->pick;
    if (form == 0) return 0;
    char value[64];
    size_t len = d->len;
    memcpy(value, d->value, sizeof value);
    hsize_t count = form == 3 || form == 4 ? 2 + (hsize_t)(pick % 3) : 1;
    hid_t sp = form == 3 || form == 4 ? H5Screate_simple(1, &count, NULL)
             : form == 7               ? H5Screate(H5S_NULL)
                                       : H5Screate(H5S_SCALAR);
    hid_t t;
    if (form == 5) t = H5Tcopy(H5T_NATIVE_INT);
    else if (form == 6) t = H5Tcopy(H5T_IEEE_F64LE);
    else {
        t = H5Tcopy(H5T_C_S1);
        H5Tset_size(t, form == 2 || form == 4 ? H5T_VARIABLE : len);
    }
    hid_t a = H5Acreate2(f, "distance", t, sp, H5P_DEFAULT, H5P_DEFAULT);
    int rc = a < 0 ? -1 : 0;
    if (a >= 0 && form != 7) {
        char buf[4 * 64];
        const char *ptrs[4];
        value[len < sizeof value ? len : sizeof value - 1] = '\0';
        for (hsize_t i = 0; i < count; i++) {
            memcpy(buf + i * len, value, len);
            ptrs[i] = value;
        }
        double num = 1.5;
        int inum = 3;
        const void *src = form == 5 ? (const void *)&inum : form == 6 ? (const void *)&num
                        : form == 2 || form == 4 ? (const void *)ptrs : (const void *)buf;
        rc = H5Awrite(a, t, src) < 0 ? -1 : 0;
    }
    if (a >= 0) H5Aclose(a);
    H5Tclose(t);
    H5Sclose(sp);
    return rc;
}

static int write_array(hid_t f, const char *name, const array_desc *a, const array_desc *all,
                       const uint8_t *bytes, size_t n_bytes) {
    if (a->kind == 0) return 0;
    if (a->kind == 2) {
        hid_t g = H5Gcreate2(f, name, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
        return g < 0 ? -1 : H5Gclose(g);
    }
    if (a->kind == 3) return H5Lcreate_soft("/no/such/array", f, name, H5P_DEFAULT, H5P_DEFAULT) < 0 ? -1 : 0;
    if (a->kind == 4) {
        if (a->link_to < 0 || all[a->link_to].kind != 1) return 0;
        return H5Lcreate_hard(f, array_names[a->link_to], f, name, H5P_DEFAULT, H5P_DEFAULT) < 0 ? -1 : 0;
    }
    hsize_t maxdims[3] = {H5S_UNLIMITED, H5S_UNLIMITED, H5S_UNLIMITED}, chunk[3];
    int chunked = a->layout == 1 || a->layout == 2 || a->layout == 4;
    hid_t sp = a->rank == 0 ? H5Screate(H5S_SCALAR) : H5Screate_simple(a->rank, a->dims, chunked ? maxdims : NULL);
    hid_t t = make_type(a->type);
    hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    if (chunked && a->rank > 0) {
        for (int i = 0; i < a->rank; i++) chunk[i] = a->dims[i] == 0 ? 1 : a->dims[i] < 8 ? a->dims[i] : 8;
        H5Pset_chunk(dcpl, a->rank, chunk);
        if (a->layout == 2) H5Pset_deflate(dcpl, 1);
        if (a->layout == 4) {
            H5Pset_shuffle(dcpl);
            H5Pset_fletcher32(dcpl);
        }
    } else if (a->layout == 3) {
        H5Pset_layout(dcpl, H5D_COMPACT);
    } else if (a->layout == 5) {
        H5Pset_alloc_time(dcpl, H5D_ALLOC_TIME_LATE);
    }
    hid_t d = sp >= 0 && t >= 0 && dcpl >= 0 ? H5Dcreate2(f, name, t, sp, H5P_DEFAULT, dcpl, H5P_DEFAULT) : -1;
    int rc = d < 0 ? -1 : 0;
    int overflow;
    uint64_t n = elems(a, &overflow);
    if (d >= 0 && !overflow && n > 0 && n <= MAX_WRITE && a->layout != 5) {
        size_t sz = H5Tget_size(t);
        uint8_t *buf = malloc(n * sz);
        fill(buf, n * sz, bytes, n_bytes);
        rc = H5Dwrite(d, t, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf) < 0 ? -1 : 0;
        free(buf);
    }
    if (d >= 0) H5Dclose(d);
    H5Pclose(dcpl);
    H5Tclose(t);
    if (sp >= 0) H5Sclose(sp);
    return rc;
}

static void check_dataset(const vb_dataset *ds, const array_desc *train, const uint8_t *bytes, size_t n_bytes) {
    FZ_CHECK(ds->n_train > 0 && ds->n_test > 0 && ds->dim > 0, "%zu x %zu train, %zu test", ds->n_train, ds->dim,
             ds->n_test);
    FZ_CHECK(ds->train && ds->test, "no train or test data");
    size_t train_bytes;
    FZ_CHECK(!__builtin_mul_overflow(ds->n_train * ds->dim, sizeof(float), &train_bytes) &&
                 train_bytes / sizeof(float) / ds->dim == ds->n_train,
             "%zu x %zu floats are more than 2^64 bytes", ds->n_train, ds->dim);
    fz_touch(ds->train, ds->n_train * ds->dim * sizeof(float));
    fz_touch(ds->test, ds->n_test * ds->dim * sizeof(float));
    FZ_CHECK((ds->gt_k > 0) == (ds->neighbors != NULL), "gt_k %zu with neighbors %p", ds->gt_k,
             (const void *)ds->neighbors);
    if (ds->neighbors) fz_touch(ds->neighbors, ds->n_test * ds->gt_k * sizeof(int32_t));
    if (ds->distances) fz_touch(ds->distances, ds->n_test * ds->gt_k * sizeof(float));
    FZ_CHECK(strlen(ds->content_hash) == 32, "content hash '%s'", ds->content_hash);
    int overflow;
    uint64_t n = elems(train, &overflow);
    if (train->kind == 1 && train->type == 0 && train->layout != 5 && n <= MAX_WRITE) {
        FZ_CHECK(n == ds->n_train * ds->dim, "train of %llu floats read as %zu x %zu", (unsigned long long)n,
                 ds->n_train, ds->dim);
        uint8_t *want = malloc(n * 4);
        fill(want, n * 4, bytes, n_bytes);
        FZ_CHECK(memcmp(want, ds->train, n * 4) == 0, "train floats differ from the file's");
        free(want);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static char path[PATH_MAX], cache[PATH_MAX];
    if (!cache[0]) {
        fz_path("f.hdf5", path, sizeof path);
        fz_mkdir(fz_path("cache", cache, sizeof cache));
        H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    }
    fz_reader r = {data, size};
    attr_desc attr;
    read_attr(&r, &attr);
    array_desc a[N_ARRAYS];
    for (int i = 0; i < N_ARRAYS; i++) {
        int kind = (int)fz_take(&r, 1), rank = (int)fz_take(&r, 1);
        a[i].kind = kind < 0x10 ? 0 : kind < 0x20 ? 2 : kind < 0x28 ? 3 : kind < 0x38 ? 4 : 1;
        a[i].link_to = i > 0 ? (int)(kind % (unsigned)i) : -1;
        a[i].rank = rank < 0xE0 ? 2 : rank % 4;
        for (int j = 0; j < 3; j++) {
            int b = j < a[i].rank ? (int)fz_take(&r, 1) : 0;
            a[i].dims[j] = b >= 0xF8 ? extreme_dims[b - 0xF8] : (hsize_t)(1 + b % 24);
        }
        a[i].type = (int)(fz_take(&r, 1) % N_TYPES);
        a[i].layout = (int)(fz_take(&r, 1) % 6);
        int overflow;
        uint64_t n = elems(&a[i], &overflow);
        if (a[i].kind == 1 && !overflow && n > MAX_ELEMS) {   /* a big dataset, not a decoding question */
            FZ_SAY("not built: %s has %llu elements", array_names[i], (unsigned long long)n);
            return 0;
        }
    }
    hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    if (f < 0) abort();
    int built = 0;
    for (int i = 0; i < N_ARRAYS; i++) built |= write_array(f, array_names[i], &a[i], a, r.p, r.n);
    built |= write_attr(f, &attr);
    if (H5Fclose(f) < 0 || built != 0) {   /* libhdf5 would not write this description: nothing to read */
        FZ_SAY("not built: libhdf5 refused the description");
        return 0;
    }

    vb_dataset *ds = NULL;
    vb_error err = {0};
    if (vb_dataset_open_hdf5(path, cache, &ds, &err) != VB_OK) {
        FZ_CHECK(ds == NULL && err.message[0], "refused without a message");
        FZ_SAY("refused: %s", err.message);
    } else {
        FZ_SAY("accepted: %zu x %zu, %zu queries, gt_k %zu, %s", ds->n_train, ds->dim, ds->n_test, ds->gt_k,
               vb_metric_name(ds->metric));
        check_dataset(ds, &a[0], r.p, r.n);
        vb_dataset_close(&ds);
    }
    fz_empty_dir(cache);
    return 0;
}
