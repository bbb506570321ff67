/* Self-test of datasets/dataset.c and dataset_spec.c: synthetic determinism and cache reuse, HDF5 files made
 * here with the HDF5 C API (contiguous, chunked + gzip, float64, broken ones), .fvecs/.fbin round trips, uint8
 * .bvecs/.u8bin converted and mapped, given neighbours from .ivecs/.ibin, broken files of each (truncated, a wrong
 * dimension in the middle, bad or overflowing headers, ids beyond the corpus), the filter tag, and profile-entry
 * parsing. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <ftw.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <hdf5.h>

#include "datasets/dataset.h"
#include "datasets/dataset_spec.h"
#include "tests/tap.h"
#include "util/mix.h"

static char tmpdir[64];

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
    (void)st, (void)flag, (void)ftw;
    return remove(path);
}

static void path_in(char *buf, size_t len, const char *name) { snprintf(buf, len, "%s/%s", tmpdir, name); }

/* Number of files in dir whose names start with prefix. */
static int count_files(const char *dir, const char *prefix) {
    DIR *d = opendir(dir);
    int n = 0;
    if (!d) return -1;
    for (struct dirent *e; (e = readdir(d));)
        if (strncmp(e->d_name, prefix, strlen(prefix)) == 0) n++;
    closedir(d);
    return n;
}

/* Inodes of the files in dir whose names start with prefix; returns how many. */
static int inodes(const char *dir, const char *prefix, ino_t *out, int max) {
    DIR *d = opendir(dir);
    int n = 0;
    if (!d) return -1;
    for (struct dirent *e; (e = readdir(d)) && n < max;)
        if (strncmp(e->d_name, prefix, strlen(prefix)) == 0) {
            char f[400];
            struct stat st;
            snprintf(f, sizeof f, "%s/%s", dir, e->d_name);
            if (stat(f, &st) == 0) out[n++] = st.st_ino;
        }
    closedir(d);
    return n;
}

/* ----- synthetic ----- */

static void test_synthetic(void) {
    char c1[128], c2[128];
    path_in(c1, sizeof c1, "cache1");
    path_in(c2, sizeof c2, "cache2");
    vb_synth_params p = {.rows = 3000, .queries = 50, .dim = 40, .clusters = 12, .metric = VB_METRIC_ANGULAR,
                         .seed = 7};
    vb_dataset *a = NULL, *b = NULL, *c = NULL, *d = NULL;
    vb_error err = {0};
    vb_error_clear(&err);
    ok(vb_dataset_open_synthetic("s", &p, c1, &a, &err) == VB_OK, "synthetic opens (%s)", err.message);
    ok(vb_dataset_open_synthetic("s", &p, c2, &b, &err) == VB_OK, "synthetic regenerates in a second cache dir");
    if (!a || !b) return;
    is_int(a->n_train, 3000, "rows");
    is_int(a->n_test, 50, "queries");
    is_int(a->dim, 40, "dim");
    is_str(a->source, "synthetic", "source");
    is_int(strlen(a->content_hash), 32, "content hash has 32 hex chars");
    is_str(a->content_hash, b->content_hash, "same seed, same hash");
    ok(memcmp(a->train, b->train, 3000 * 40 * 4) == 0 && memcmp(a->test, b->test, 50 * 40 * 4) == 0,
       "same seed, same bytes (independently generated)");
    /* A fixed point: if this changes, the generator changed and every cached ground truth is stale. */
    is_str(a->content_hash, "9b252f5172e2cf0b8818081bf67a0789", "hash matches the recorded reference");

    double worst = 0;
    for (size_t i = 0; i < a->n_train; i++) {
        double n2 = 0;
        for (size_t j = 0; j < a->dim; j++) n2 += (double)a->train[i * a->dim + j] * a->train[i * a->dim + j];
        if (fabs(sqrt(n2) - 1) > worst) worst = fabs(sqrt(n2) - 1);
    }
    ok(worst < 1e-5, "angular rows are normalised (worst |norm - 1| = %g)", worst);
    ok(memcmp(a->test, a->train, 40 * 4) != 0, "queries are not corpus rows");
    /* clustered, not uniform noise: the nearest row is much closer than the average row (relative contrast) */
    double contrast = 0;
    for (size_t i = 0; i < a->n_test; i++) {
        double nn = INFINITY, sum = 0;
        for (size_t r = 0; r < a->n_train; r++) {
            double dd = vb_distance(VB_METRIC_EUCLIDEAN, a->test + i * a->dim, a->train + r * a->dim, a->dim);
            sum += dd;
            if (dd < nn) nn = dd;
        }
        contrast += sum / (double)a->n_train / nn / (double)a->n_test;
    }
    ok(contrast > 1.5 && contrast < 20, "mean relative contrast %.2f shows cluster structure", contrast);

    vb_synth_params p2 = p;
    p2.seed = 8;
    ok(vb_dataset_open_synthetic("s", &p2, c1, &c, &err) == VB_OK, "another seed opens");
    if (c) ok(strcmp(a->content_hash, c->content_hash) != 0, "different seed, different hash");

    /* cache reuse: the second open maps the same files (same inodes, nothing new written) */
    ino_t before[8], after[8];
    int nb = inodes(c1, "synth-", before, 8);
    vb_dataset *a2 = NULL;
    ok(vb_dataset_open_synthetic("again", &p, c1, &a2, &err) == VB_OK, "reopen from cache");
    int na = inodes(c1, "synth-", after, 8), same = 0;
    for (int i = 0; i < na; i++)
        for (int j = 0; j < nb; j++) same += after[i] == before[j];
    is_int(na, nb, "no new cache files on reuse");
    is_int(same, nb, "cache files were not rewritten (same inodes)");
    if (a2) {
        is_str(a2->content_hash, a->content_hash, "reused cache has the same hash");
        is_str(a2->name, "again", "name is the caller's");
    }
    vb_dataset_close(&a2);

    /* a truncated cache file is regenerated, not trusted */
    DIR *dir = opendir(c1);
    int truncated = 0;
    for (struct dirent *e; dir && (e = readdir(dir));)
        if (strstr(e->d_name, "-train.f32")) {
            char f[600];
            snprintf(f, sizeof f, "%s/%s", c1, e->d_name);
            truncated += truncate(f, 1000) == 0;
        }
    if (dir) closedir(dir);
    ok(truncated == 2, "truncated both seeds' train cache files");
    ok(vb_dataset_open_synthetic("s", &p, c1, &a2, &err) == VB_OK, "truncated cache: reopens");
    if (a2) is_str(a2->content_hash, a->content_hash, "truncated cache: regenerated identically");

    /* euclidean rows are not normalised */
    vb_synth_params pe = p;
    pe.metric = VB_METRIC_EUCLIDEAN;
    ok(vb_dataset_open_synthetic("e", &pe, c1, &d, &err) == VB_OK, "euclidean synthetic opens");
    if (d) {
        double n2 = 0;
        for (size_t j = 0; j < d->dim; j++) n2 += (double)d->train[j] * d->train[j];
        ok(fabs(sqrt(n2) - 1) > 1e-3, "euclidean rows keep their norm");
        ok(strcmp(d->content_hash, a->content_hash) != 0, "metric is part of the hash");
    }

    vb_synth_params bad = p;
    bad.dim = 0;
    vb_dataset *x = NULL;
    ok(vb_dataset_open_synthetic("bad", &bad, c1, &x, &err) == VB_ERROR && x == NULL, "dim 0 is refused");
    contains(err.message, "dim", "error names dim");

    vb_dataset_close(&a);
    vb_dataset_close(&b);
    vb_dataset_close(&c);
    vb_dataset_close(&d);
    vb_dataset_close(&a2);
    ok(a == NULL, "close sets the pointer to NULL");
    vb_dataset_close(&a);
    vb_dataset_close(NULL);
}

/* ----- HDF5 ----- */

enum { H5_CONTIG = 0, H5_CHUNKED_GZIP = 1 };

static int h5_put(hid_t f, const char *name, int rank, const hsize_t *dims, hid_t filetype, hid_t memtype,
                  const void *data, int layout) {
    hid_t sp = H5Screate_simple(rank, dims, NULL);
    hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    if (layout == H5_CHUNKED_GZIP) {
        hsize_t chunk[H5S_MAX_RANK];
        for (int i = 0; i < rank; i++) chunk[i] = dims[i] > 7 ? 7 : dims[i];
        H5Pset_chunk(dcpl, rank, chunk);
        H5Pset_deflate(dcpl, 6);
    }
    hid_t d = H5Dcreate2(f, name, filetype, sp, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    herr_t r = H5Dwrite(d, memtype, H5S_ALL, H5S_ALL, H5P_DEFAULT, data);
    H5Dclose(d);
    H5Pclose(dcpl);
    H5Sclose(sp);
    return r < 0 ? -1 : 0;
}

static void h5_attr(hid_t f, const char *value, int vlen) {
    hid_t t = H5Tcopy(H5T_C_S1);
    if (vlen) {
        H5Tset_size(t, H5T_VARIABLE);
        H5Tset_cset(t, H5T_CSET_UTF8);
    } else {
        H5Tset_size(t, strlen(value) + 1);
    }
    hid_t sp = H5Screate(H5S_SCALAR);
    hid_t a = H5Acreate2(f, "distance", t, sp, H5P_DEFAULT, H5P_DEFAULT);
    if (vlen)
        H5Awrite(a, t, &value);
    else
        H5Awrite(a, t, value);
    H5Aclose(a);
    H5Sclose(sp);
    H5Tclose(t);
}

#define NT 100
#define NQ 9
#define DIM 16
#define GTK 5
static float g_train[NT * DIM], g_test[NQ * DIM], g_dist[NQ * GTK];
static int32_t g_nb[NQ * GTK];

typedef struct h5_opts {
    int layout;           /* for train/test */
    int test_f64;         /* test stored as float64 */
    int skip_test;
    int test_rank3;
    int test_dim;         /* 0: DIM */
    int vlen_attr;
    const char *metric;   /* NULL: no attribute */
} h5_opts;

static void make_h5(const char *path, const h5_opts *o) {
    hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    hsize_t dt[2] = {NT, DIM};
    h5_put(f, "train", 2, dt, H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, g_train, o->layout);
    if (!o->skip_test) {
        if (o->test_rank3) {
            hsize_t d3[3] = {3, 3, 16};
            h5_put(f, "test", 3, d3, H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, g_test, o->layout);
        } else {
            hsize_t dq[2] = {NQ, (hsize_t)(o->test_dim ? o->test_dim : DIM)};
            static double t64[NQ * DIM];
            for (int i = 0; i < NQ * DIM; i++) t64[i] = g_test[i];
            if (o->test_f64)
                h5_put(f, "test", 2, dq, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, t64, o->layout);
            else
                h5_put(f, "test", 2, dq, H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, g_test, o->layout);
        }
    }
    hsize_t dn[2] = {NQ, GTK};
    h5_put(f, "neighbors", 2, dn, H5T_STD_I32LE, H5T_NATIVE_INT32, g_nb, H5_CONTIG);
    h5_put(f, "distances", 2, dn, H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, g_dist, H5_CONTIG);
    if (o->metric) h5_attr(f, o->metric, o->vlen_attr);
    H5Fclose(f);
}

static void test_hdf5(void) {
    for (int i = 0; i < NT * DIM; i++) g_train[i] = (float)((i * 7919) % 1000) / 100.0f - 5.0f;
    for (int i = 0; i < NQ * DIM; i++) g_test[i] = (float)((i * 104729) % 1000) / 250.0f - 2.0f;
    for (int i = 0; i < NQ * GTK; i++) g_nb[i] = i % NT, g_dist[i] = (float)i / 10.0f;

    char good[128], chunk[128], cache[128], nocache[128];
    path_in(good, sizeof good, "good.hdf5");
    path_in(chunk, sizeof chunk, "chunked.hdf5");
    path_in(cache, sizeof cache, "h5cache");
    path_in(nocache, sizeof nocache, "h5cache-contig");
    make_h5(good, &(h5_opts){.layout = H5_CONTIG, .vlen_attr = 1, .metric = "angular"});
    make_h5(chunk, &(h5_opts){.layout = H5_CHUNKED_GZIP, .test_f64 = 1, .metric = "angular"});

    vb_dataset *a = NULL, *b = NULL;
    vb_error err = {0};
    vb_error_clear(&err);
    ok(vb_dataset_open_hdf5(good, nocache, &a, &err) == VB_OK, "contiguous HDF5 opens (%s)", err.message);
    vb_error_clear(&err);
    ok(vb_dataset_open_hdf5(chunk, cache, &b, &err) == VB_OK, "chunked+gzip (float64 test) HDF5 opens (%s)",
       err.message);
    if (!a || !b) return;
    is_int(a->metric, VB_METRIC_ANGULAR, "metric from the variable-length 'distance' attribute");
    is_int(b->metric, VB_METRIC_ANGULAR, "metric from the fixed-length 'distance' attribute");
    is_str(a->name, "good", "name is the file stem");
    is_int(a->n_train, NT, "train rows");
    is_int(a->n_test, NQ, "test rows");
    is_int(a->dim, DIM, "dim");
    ok(memcmp(a->train, g_train, sizeof g_train) == 0, "contiguous: train vectors as written");
    ok(memcmp(a->test, g_test, sizeof g_test) == 0, "contiguous: test vectors as written");
    ok(memcmp(b->train, g_train, sizeof g_train) == 0, "chunked: train vectors as written");
    ok(memcmp(b->test, g_test, sizeof g_test) == 0, "chunked: test vectors as written (converted from float64)");
    is_str(a->content_hash, b->content_hash, "both layouts give the same content hash");
    ok(count_files(nocache, "h5-") <= 0, "contiguous float32 is mapped in place (no cache file)");
    is_int(count_files(cache, "h5-"), 2, "chunked arrays are converted into two cache files");
    is_int(a->gt_k, GTK, "gt_k from neighbors");
    ok(a->neighbors && memcmp(a->neighbors, g_nb, sizeof g_nb) == 0, "neighbors read");
    ok(a->distances && memcmp(a->distances, g_dist, sizeof g_dist) == 0, "distances read");

    vb_dataset *b2 = NULL;
    ok(vb_dataset_open_hdf5(chunk, cache, &b2, &err) == VB_OK, "chunked HDF5 reopens from its cache");
    is_int(count_files(cache, "h5-"), 2, "no new cache files on reopen");
    if (b2) is_str(b2->content_hash, b->content_hash, "reopened: same hash");
    vb_dataset_close(&a);
    vb_dataset_close(&b);
    vb_dataset_close(&b2);

    /* errors */
    char p[128];
    vb_dataset *x = NULL;
    path_in(p, sizeof p, "notest.hdf5");
    make_h5(p, &(h5_opts){.skip_test = 1, .metric = "euclidean"});
    ok(vb_dataset_open_hdf5(p, cache, &x, &err) == VB_ERROR && !x, "file without 'test' is refused");
    contains(err.message, "notest.hdf5", "error names the file");
    contains(err.message, "array 'test' is missing", "error names the array");

    path_in(p, sizeof p, "rank3.hdf5");
    make_h5(p, &(h5_opts){.test_rank3 = 1, .metric = "euclidean"});
    ok(vb_dataset_open_hdf5(p, cache, &x, &err) == VB_ERROR && !x, "3-D 'test' is refused");
    contains(err.message, "rank3.hdf5", "rank error names the file");
    contains(err.message, "array 'test' has 3 dimensions", "rank error names the array");
    contains(err.message, "3x3x16", "rank error gives the shape");

    path_in(p, sizeof p, "dims.hdf5");
    make_h5(p, &(h5_opts){.test_dim = 8, .metric = "euclidean"});
    ok(vb_dataset_open_hdf5(p, cache, &x, &err) == VB_ERROR && !x, "train/test dimension mismatch is refused");
    contains(err.message, "'test' has shape 9x8", "mismatch error gives the test shape");
    contains(err.message, "'train' has 16 columns", "mismatch error gives the train width");

    path_in(p, sizeof p, "nometric.hdf5");
    make_h5(p, &(h5_opts){.metric = NULL});
    ok(vb_dataset_open_hdf5(p, cache, &x, &err) == VB_ERROR, "missing 'distance' attribute is refused");
    contains(err.message, "attribute 'distance'", "error names the attribute");

    path_in(p, sizeof p, "jaccard.hdf5");
    make_h5(p, &(h5_opts){.metric = "jaccard", .vlen_attr = 1});
    ok(vb_dataset_open_hdf5(p, cache, &x, &err) == VB_ERROR, "unsupported metric is refused");
    contains(err.message, "jaccard", "error names the metric");

    path_in(p, sizeof p, "does-not-exist.hdf5");
    ok(vb_dataset_open_hdf5(p, cache, &x, &err) == VB_ERROR, "missing file is refused");
    contains(err.message, p, "error names the path");

    path_in(p, sizeof p, "garbage.hdf5");
    FILE *f = fopen(p, "w");
    fputs("not hdf5 at all\n", f);
    fclose(f);
    ok(vb_dataset_open_hdf5(p, cache, &x, &err) == VB_ERROR, "non-HDF5 file is refused");
    contains(err.message, "not an HDF5 file", "error says what is wrong");

    /* truncated (issue 36.12): the good file's first half, as an interrupted copy leaves it. The message says the
     * file's size against the end its superblock declares, and the failed open leaves nothing on HDF5's error stack
     * (left there, a failed open in a thread made the library print "infinite loop closing library" at exit). */
    struct stat gst;
    stat(good, &gst);
    path_in(p, sizeof p, "truncated.hdf5");
    FILE *in = fopen(good, "rb"), *out = fopen(p, "wb");
    char *buf = malloc((size_t)gst.st_size);
    size_t half = (size_t)gst.st_size / 2;
    if (in && out && buf && fread(buf, 1, half, in) == half) fwrite(buf, 1, half, out);
    if (in) fclose(in);
    if (out) fclose(out);
    free(buf);
    ok(vb_dataset_open_hdf5(p, cache, &x, &err) == VB_ERROR && !x, "a truncated HDF5 file is refused");
    char want[200];
    snprintf(want, sizeof want, "truncated.hdf5: cannot open as HDF5: truncated: the file has %zu bytes, its superblock",
             half);
    contains(err.message, want, "saying it is truncated, with its size");
    snprintf(want, sizeof want, "says it ends at byte %lld", (long long)gst.st_size);
    contains(err.message, want, "against the end its superblock declares");
    is_int(H5Eget_num(H5E_DEFAULT), 0, "the failed open left nothing on HDF5's error stack");
    vb_metric m;
    vb_kv mkv[] = {{"path", p}};
    ok(vb_dataset_metric_of(mkv, 1, &m, &err) == VB_RETRY, "its metric cannot be read (the item says why)");
    is_int(H5Eget_num(H5E_DEFAULT), 0, "and that failed open cleared its error stack too");
}

/* ----- fvecs / fbin ----- */

static void write_fvecs(const char *path, const float *v, size_t n, size_t d, int bad_row) {
    FILE *f = fopen(path, "wb");
    for (size_t i = 0; i < n; i++) {
        int32_t dd = (int32_t)d + ((int)i == bad_row ? 1 : 0);
        fwrite(&dd, 4, 1, f);
        fwrite(v + i * d, 4, d, f);
    }
    fclose(f);
}

static void write_fbin(const char *path, const float *v, uint32_t n, uint32_t d, uint32_t header_n) {
    FILE *f = fopen(path, "wb");
    fwrite(&header_n, 4, 1, f);
    fwrite(&d, 4, 1, f);
    fwrite(v, 4, (size_t)n * d, f);
    fclose(f);
}

static void test_vecs(void) {
    enum { N = 57, Q = 6, D = 12 };
    static float base[N * D], qs[Q * D];
    for (int i = 0; i < N * D; i++) base[i] = sinf((float)i);
    for (int i = 0; i < Q * D; i++) qs[i] = cosf((float)i);
    char bf[128], qf[128], bb[128], qb[128], cache[128];
    path_in(bf, sizeof bf, "base.fvecs");
    path_in(qf, sizeof qf, "query.fvecs");
    path_in(bb, sizeof bb, "base.fbin");
    path_in(qb, sizeof qb, "query.fbin");
    path_in(cache, sizeof cache, "veccache");
    write_fvecs(bf, base, N, D, -1);
    write_fvecs(qf, qs, Q, D, -1);
    write_fbin(bb, base, N, D, N);
    write_fbin(qb, qs, Q, D, Q);
    vb_dataset *a = NULL, *b = NULL, *x = NULL;
    vb_error err = {0};
    vb_error_clear(&err);
    ok(vb_dataset_open_vecs(bf, qf, VB_METRIC_EUCLIDEAN, cache, &a, &err) == VB_OK, "fvecs open (%s)", err.message);
    vb_error_clear(&err);
    ok(vb_dataset_open_vecs(bb, qb, VB_METRIC_EUCLIDEAN, cache, &b, &err) == VB_OK, "fbin open (%s)", err.message);
    if (a && b) {
        is_int(a->n_train, N, "fvecs rows");
        is_int(a->dim, D, "fvecs dim");
        is_int(b->n_test, Q, "fbin query rows");
        ok(memcmp(a->train, base, sizeof base) == 0 && memcmp(a->test, qs, sizeof qs) == 0, "fvecs round trip");
        ok(memcmp(b->train, base, sizeof base) == 0 && memcmp(b->test, qs, sizeof qs) == 0, "fbin round trip");
        is_str(a->content_hash, b->content_hash, "fvecs and fbin give the same hash");
        is_int(count_files(cache, "fvecs-"), 2, "fvecs converted into the cache");
    }
    vb_dataset_close(&a);
    vb_dataset_close(&b);

    char p[128];
    path_in(p, sizeof p, "badrow.fvecs");
    write_fvecs(p, base, 5, D, 3);
    ok(vb_dataset_open_vecs(p, qf, VB_METRIC_EUCLIDEAN, cache, &x, &err) == VB_ERROR, "fvecs with a bad row refused");
    contains(err.message, "badrow.fvecs", "error names the file");

    path_in(p, sizeof p, "short.fbin");
    write_fbin(p, base, 10, D, 11);
    ok(vb_dataset_open_vecs(p, qb, VB_METRIC_EUCLIDEAN, cache, &x, &err) == VB_ERROR,
       "fbin shorter than header refused");
    contains(err.message, "11 x 12", "error gives the header's shape");

    path_in(p, sizeof p, "q8.fbin");
    write_fbin(p, qs, 9, 8, 9);
    ok(vb_dataset_open_vecs(bb, p, VB_METRIC_EUCLIDEAN, cache, &x, &err) == VB_ERROR,
       "query dimension mismatch refused");
    contains(err.message, "dimension 8", "error gives the query dimension");

    ok(vb_dataset_open_vecs("/nonexistent/x.fvecs", qf, VB_METRIC_EUCLIDEAN, cache, &x, &err) == VB_ERROR,
       "missing fvecs file refused");
    contains(err.message, "/nonexistent/x.fvecs", "error names the path");
    ok(vb_dataset_open_vecs(bf, "q.txt", VB_METRIC_EUCLIDEAN, cache, &x, &err) == VB_ERROR,
       "unknown extension refused");
}

/* ----- bvecs / u8bin (uint8 vectors, converted once into a float32 cache file) ----- */

static void write_bytes(const char *path, const void *data, size_t len) {
    FILE *f = fopen(path, "wb");
    fwrite(data, 1, len, f);
    fclose(f);
}

/* A .bvecs file; row bad_row (if >= 0) gets dimension word bad_dim and bad_len bytes of vector. */
static void write_bvecs(const char *path, const uint8_t *v, size_t n, size_t d, int bad_row, int32_t bad_dim,
                        size_t bad_len) {
    FILE *f = fopen(path, "wb");
    static const uint8_t pad[64];
    for (size_t i = 0; i < n; i++) {
        int32_t dd = (int)i == bad_row ? bad_dim : (int32_t)d;
        size_t len = (int)i == bad_row ? bad_len : d;
        fwrite(&dd, 4, 1, f);
        fwrite(v + i * d, 1, len < d ? len : d, f);
        if (len > d) fwrite(pad, 1, len - d, f);
    }
    fclose(f);
}

static void write_u8bin(const char *path, const uint8_t *v, uint32_t n, uint32_t d, uint32_t header_n) {
    FILE *f = fopen(path, "wb");
    fwrite(&header_n, 4, 1, f);
    fwrite(&d, 4, 1, f);
    fwrite(v, 1, (size_t)n * d, f);
    fclose(f);
}

static void write_header(const char *path, uint32_t a, uint32_t b, size_t extra) {
    FILE *f = fopen(path, "wb");
    fwrite(&a, 4, 1, f);
    fwrite(&b, 4, 1, f);
    for (size_t i = 0; i < extra; i++) fputc(0, f);
    fclose(f);
}

/* 1 when p lies in a mapping of a file whose path contains name (/proc/self/maps): the corpus is mapped from
 * that file, not held in a private copy. */
static int mapped_from(const void *p, const char *name) {
    FILE *f = fopen("/proc/self/maps", "r");
    char line[4200];
    int found = 0;
    while (f && !found && fgets(line, sizeof line, f)) {
        unsigned long lo, hi;
        if (sscanf(line, "%lx-%lx", &lo, &hi) == 2 && (uintptr_t)p >= lo && (uintptr_t)p < hi && strstr(line, name))
            found = 1;
    }
    if (f) fclose(f);
    return found;
}

static void test_u8(void) {
    enum { N = 300, Q = 7, D = 10 };
    static uint8_t base[N * D], qs[Q * D];
    static float fbase[N * D], fqs[Q * D];
    for (int i = 0; i < N * D; i++) base[i] = (uint8_t)((i * 37 + i / 7) % 256), fbase[i] = base[i];
    for (int i = 0; i < Q * D; i++) qs[i] = (uint8_t)((i * 101 + 3) % 256), fqs[i] = qs[i];
    base[0] = 0, fbase[0] = 0, base[1] = 255, fbase[1] = 255;
    char bv[128], qbv[128], ub[128], qub[128], fv[128], qfv[128], cache[128];
    path_in(bv, sizeof bv, "sift-base.bvecs");
    path_in(qbv, sizeof qbv, "sift-query.bvecs");
    path_in(ub, sizeof ub, "ssnpp-base.u8bin");
    path_in(qub, sizeof qub, "ssnpp-query.u8bin");
    path_in(fv, sizeof fv, "u8-as-float.fvecs");
    path_in(qfv, sizeof qfv, "u8-as-float-q.fvecs");
    path_in(cache, sizeof cache, "u8cache");
    write_bvecs(bv, base, N, D, -1, 0, 0);
    write_bvecs(qbv, qs, Q, D, -1, 0, 0);
    write_u8bin(ub, base, N, D, N);
    write_u8bin(qub, qs, Q, D, Q);
    write_fvecs(fv, fbase, N, D, -1);
    write_fvecs(qfv, fqs, Q, D, -1);

    vb_dataset *a = NULL, *b = NULL, *c = NULL, *x = NULL;
    vb_error err = {0};
    vb_error_clear(&err);
    ok(vb_dataset_open_vecs(bv, qbv, VB_METRIC_EUCLIDEAN, cache, &a, &err) == VB_OK, "bvecs open (%s)", err.message);
    vb_error_clear(&err);
    ok(vb_dataset_open_vecs(ub, qub, VB_METRIC_EUCLIDEAN, cache, &b, &err) == VB_OK, "u8bin open (%s)", err.message);
    vb_error_clear(&err);
    ok(vb_dataset_open_vecs(fv, qfv, VB_METRIC_EUCLIDEAN, cache, &c, &err) == VB_OK, "fvecs of the same values open");
    if (a && b && c) {
        is_int(a->n_train, N, "bvecs rows");
        is_int(a->dim, D, "bvecs dim");
        is_int(a->n_test, Q, "bvecs queries");
        is_int(b->n_train, N, "u8bin rows");
        is_int(b->dim, D, "u8bin dim");
        is_int(b->n_test, Q, "u8bin queries");
        ok(memcmp(a->train, fbase, sizeof fbase) == 0 && memcmp(a->test, fqs, sizeof fqs) == 0,
           "bvecs: every byte became the same float (0 and 255 included)");
        ok(memcmp(b->train, fbase, sizeof fbase) == 0 && memcmp(b->test, fqs, sizeof fqs) == 0,
           "u8bin: every byte became the same float");
        is_str(a->content_hash, c->content_hash, "bvecs and the float32 fvecs of its values: same content hash");
        is_str(b->content_hash, c->content_hash, "u8bin and the float32 fvecs of its values: same content hash");
        is_int(count_files(cache, "bvecs-"), 2, "bvecs: base and queries converted into two cache files");
        is_int(count_files(cache, "u8bin-"), 2, "u8bin: base and queries converted into two cache files");
        ok(mapped_from(a->train, "/bvecs-sift-base-"), "bvecs corpus is mapped from its cache file");
        ok(mapped_from(b->train, "/u8bin-ssnpp-base-"), "u8bin corpus is mapped from its cache file");
        is_int(a->gt_k, 0, "no given neighbours without a ground-truth file");
    }
    ino_t before[4], after[4];
    int nb = inodes(cache, "u8bin-", before, 4);
    vb_dataset *b2 = NULL;
    ok(vb_dataset_open_vecs(ub, qub, VB_METRIC_EUCLIDEAN, cache, &b2, &err) == VB_OK, "u8bin reopens");
    int na = inodes(cache, "u8bin-", after, 4), same = 0;
    for (int i = 0; i < na; i++)
        for (int j = 0; j < nb; j++) same += after[i] == before[j];
    ok(na == 2 && same == 2, "u8bin reopened from the same cache files (not converted again)");
    if (b2 && b) ok(b2->train != b->train && memcmp(b2->train, fbase, sizeof fbase) == 0, "reopened: same values");
    vb_dataset_close(&a);
    vb_dataset_close(&b);
    vb_dataset_close(&b2);
    vb_dataset_close(&c);

    char p[128];
    /* a wrong dimension word in the middle, the file's length still a whole number of vectors */
    path_in(p, sizeof p, "middle-word.bvecs");
    write_bvecs(p, base, N, D, 150, D + 1, D);
    ok(vb_dataset_open_vecs(p, qbv, VB_METRIC_EUCLIDEAN, cache, &x, &err) == VB_ERROR && !x,
       "bvecs: a wrong dimension word in the middle is refused");
    contains(err.message, "middle-word.bvecs", "error names the file");
    contains(err.message, "vector 150 (byte offset 2100) has dimension 11, expected 10", "error names the vector");
    is_int(count_files(cache, "bvecs-middle"), 0, "no cache file is left for a refused file");

    /* a longer vector in the middle: the length is not a whole number of vectors, the walk finds which */
    path_in(p, sizeof p, "middle-long.bvecs");
    write_bvecs(p, base, N, D, 150, D + 3, D + 3);
    ok(vb_dataset_open_vecs(p, qbv, VB_METRIC_EUCLIDEAN, cache, &x, &err) == VB_ERROR, "bvecs: a longer vector");
    contains(err.message, "vector 150 (byte offset 2100) has dimension 13, expected 10", "error names the vector");

    path_in(p, sizeof p, "cut.bvecs");
    write_bvecs(p, base, N, D, N - 1, D, D - 3);
    ok(vb_dataset_open_vecs(p, qbv, VB_METRIC_EUCLIDEAN, cache, &x, &err) == VB_ERROR, "bvecs: truncated file");
    contains(err.message, "vector 299 (byte offset 4186) is cut short", "error names the last vector");

    path_in(p, sizeof p, "dim0.bvecs");
    write_bvecs(p, base, 1, D, 0, 0, D);
    ok(vb_dataset_open_vecs(p, qbv, VB_METRIC_EUCLIDEAN, cache, &x, &err) == VB_ERROR, "bvecs: dimension 0");
    contains(err.message, "vector 0 (byte offset 0) has dimension 0", "error says dimension 0");

    path_in(p, sizeof p, "huge-dim.bvecs");
    write_header(p, 70000, 0, 70000);
    ok(vb_dataset_open_vecs(p, qbv, VB_METRIC_EUCLIDEAN, cache, &x, &err) == VB_ERROR,
       "bvecs: dimension above the limit");
    contains(err.message, "dimension 70000, expected 1..65536", "error gives the dimension and the limit");

    path_in(p, sizeof p, "short.u8bin");
    write_u8bin(p, base, N - 1, D, N);
    ok(vb_dataset_open_vecs(p, qub, VB_METRIC_EUCLIDEAN, cache, &x, &err) == VB_ERROR, "u8bin: shorter than header");
    contains(err.message, "header says 300 x 10 uint8 (3008 bytes) but the file has 2998 bytes",
             "error gives the header and the file's length");

    path_in(p, sizeof p, "long.u8bin");
    write_u8bin(p, base, N, D, N - 1);
    ok(vb_dataset_open_vecs(p, qub, VB_METRIC_EUCLIDEAN, cache, &x, &err) == VB_ERROR, "u8bin: longer than header");

    path_in(p, sizeof p, "stub.u8bin");
    write_bytes(p, "\x05\0\0", 3);
    ok(vb_dataset_open_vecs(p, qub, VB_METRIC_EUCLIDEAN, cache, &x, &err) == VB_ERROR, "u8bin: 3-byte file");
    contains(err.message, "too short for a .u8bin header", "error says the header is missing");

    path_in(p, sizeof p, "empty.u8bin");
    write_header(p, 0, D, 0);
    ok(vb_dataset_open_vecs(p, qub, VB_METRIC_EUCLIDEAN, cache, &x, &err) == VB_ERROR, "u8bin: 0 rows");
    contains(err.message, "empty", "error says empty");

    /* 2^32 - 1 rows of 65536: 2^48 bytes declared in an 8-byte file (float32: 2^50) */
    path_in(p, sizeof p, "overflow.u8bin");
    write_header(p, UINT32_MAX, 65536, 0);
    ok(vb_dataset_open_vecs(p, qub, VB_METRIC_EUCLIDEAN, cache, &x, &err) == VB_ERROR, "u8bin: a header too large");
    contains(err.message, "more than 64 TiB", "error says the size is too large");
    /* 2^31 x 2^31 (4 bytes each, 2^64 + 8 bytes: wraps to 8) */
    path_in(p, sizeof p, "wrap.fbin");
    write_header(p, 1u << 31, 1u << 31, 0);
    ok(vb_dataset_open_vecs(p, qub, VB_METRIC_EUCLIDEAN, cache, &x, &err) == VB_ERROR, "fbin: a header that wraps");
    contains(err.message, "at most 65536", "error gives the dimension limit");

    path_in(p, sizeof p, "q9.u8bin");
    write_u8bin(p, qs, 7, 9, 7);
    ok(vb_dataset_open_vecs(ub, p, VB_METRIC_EUCLIDEAN, cache, &x, &err) == VB_ERROR, "u8bin: query dimension");
    contains(err.message, "queries have dimension 9", "error gives the query dimension");
    ok(x == NULL, "no dataset on error");
}

/* ----- given neighbours: ivecs / ibin ----- */

enum { GN = 40, GQ = 5, GD = 4, GK = 6 };
static int32_t gt_ids[GQ * GK];
static float gt_d[GQ * GK];

static void write_ivecs(const char *path, const int32_t *ids, size_t rows, size_t k, int bad_row, int32_t bad_k) {
    FILE *f = fopen(path, "wb");
    for (size_t q = 0; q < rows; q++) {
        int32_t kk = (int)q == bad_row ? bad_k : (int32_t)k;
        fwrite(&kk, 4, 1, f);
        fwrite(ids + q * k, 4, (size_t)kk < k ? (size_t)kk : k, f);
    }
    fclose(f);
}

static void write_ibin(const char *path, const int32_t *ids, const float *d, uint32_t rows, uint32_t k) {
    FILE *f = fopen(path, "wb");
    fwrite(&rows, 4, 1, f);
    fwrite(&k, 4, 1, f);
    fwrite(ids, 4, (size_t)rows * k, f);
    if (d) fwrite(d, 4, (size_t)rows * k, f);
    fclose(f);
}

static void test_neighbors(void) {
    static float base[GN * GD], qs[GQ * GD];
    for (int i = 0; i < GN * GD; i++) base[i] = (float)(i % 17);
    for (int i = 0; i < GQ * GD; i++) qs[i] = (float)(i % 5);
    for (int i = 0; i < GQ * GK; i++) gt_ids[i] = (i * 7 + 3) % GN, gt_d[i] = (float)i / 4.0f;
    char fb[128], qb[128], fv[128], qv[128], iv[128], ib[128], ib2[128], cache[128], p[128];
    path_in(fb, sizeof fb, "gt-base.fbin");
    path_in(qb, sizeof qb, "gt-query.fbin");
    path_in(fv, sizeof fv, "gt-base.fvecs");
    path_in(qv, sizeof qv, "gt-query.fvecs");
    path_in(iv, sizeof iv, "gt.ivecs");
    path_in(ib, sizeof ib, "gt.ibin");
    path_in(ib2, sizeof ib2, "gt-ids-only.ibin");
    path_in(cache, sizeof cache, "gtcache");
    write_fbin(fb, base, GN, GD, GN);
    write_fbin(qb, qs, GQ, GD, GQ);
    write_fvecs(fv, base, GN, GD, -1);
    write_fvecs(qv, qs, GQ, GD, -1);
    write_ivecs(iv, gt_ids, GQ, GK, -1, 0);
    write_ibin(ib, gt_ids, gt_d, GQ, GK);
    write_ibin(ib2, gt_ids, NULL, GQ, GK);

    vb_dataset *a = NULL, *b = NULL;
    vb_error err = {0};
    vb_error_clear(&err);
    if (!ok(vb_dataset_open_vecs(fv, qv, VB_METRIC_EUCLIDEAN, cache, &a, &err) == VB_OK, "fvecs for neighbours") ||
        !ok(vb_dataset_open_vecs(fb, qb, VB_METRIC_EUCLIDEAN, cache, &b, &err) == VB_OK, "fbin for neighbours"))
        return;
    ok(vb_dataset_read_neighbors(a, iv, &err) == VB_OK, "ivecs read (%s)", err.message);
    is_int(a->gt_k, GK, "ivecs: k");
    ok(a->neighbors && memcmp(a->neighbors, gt_ids, sizeof gt_ids) == 0, "ivecs: ids as written");
    ok(a->distances == NULL, "ivecs: no distances");
    ok(vb_dataset_read_neighbors(a, iv, &err) == VB_ERROR, "a second ground-truth file is refused");
    contains(err.message, "already has given neighbours", "error says why");
    is_int(a->gt_k, GK, "the first neighbours stay");

    ok(vb_dataset_read_neighbors(b, ib, &err) == VB_OK, "ibin with distances read (%s)", err.message);
    is_int(b->gt_k, GK, "ibin: k");
    ok(b->neighbors && memcmp(b->neighbors, gt_ids, sizeof gt_ids) == 0, "ibin: ids as written");
    ok(b->distances && memcmp(b->distances, gt_d, sizeof gt_d) == 0, "ibin: distances as written");
    vb_dataset_close(&b);
    vb_dataset_open_vecs(fb, qb, VB_METRIC_EUCLIDEAN, cache, &b, &err);
    ok(b && vb_dataset_read_neighbors(b, ib2, &err) == VB_OK, "ids-only ibin read (%s)", err.message);
    if (b) {
        ok(b->neighbors && memcmp(b->neighbors, gt_ids, sizeof gt_ids) == 0, "ids-only ibin: ids as written");
        ok(b->distances == NULL, "ids-only ibin: no distances");
    }
    vb_dataset_close(&a);
    vb_dataset_close(&b);

    /* each refused file leaves the dataset without neighbours */
    struct {
        const char *file, *what, *frag;
    } bad[] = {
        {"id-high.ivecs", "ivecs: an id beyond the corpus",
         "query 3, neighbour 2 (byte offset 96): id 40 is not a row of the corpus (0..39)"},
        {"id-neg.ivecs", "ivecs: a negative id", "query 1, neighbour 0 (byte offset 32): id -1 is not a row"},
        {"k-middle.ivecs", "ivecs: another k in the middle", "vector 2 (byte offset 56) has dimension 5, expected 6"},
        {"k-swap.ivecs", "ivecs: a wrong k word, same length", "query 2 (byte offset 56) has 7 neighbours, expected 6"},
        {"rows.ivecs", "ivecs: fewer rows than queries", "4 rows of neighbours (k = 6) but the queries file has 5"},
        {"k0.ivecs", "ivecs: k = 0", "vector 0 (byte offset 0) has dimension 0"},
        {"id-big.ibin", "ibin: id 2^32 - 1", "query 4, neighbour 5 (byte offset 124): id 4294967295 is not a row"},
        {"size.ibin", "ibin: length fits neither layout", "but the file has 129 bytes"},
        {"rows.ibin", "ibin: more rows than queries", "6 rows of neighbours (k = 6) but the queries file has 5"},
        {"overflow.ibin", "ibin: a header that overflows", "more than 64 TiB"},
        {"zero.ibin", "ibin: k = 0", "empty"},
        {"short.ibin", "ibin: no header", "too short for a .ibin header"},
        {"gt.txt", "an unknown extension", "unknown ground-truth file format (expected .ivecs or .ibin)"},
    };
    int32_t ids[(GQ + 1) * GK] = {0};
    memcpy(ids, gt_ids, sizeof gt_ids);
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        path_in(p, sizeof p, bad[i].file);
        memcpy(ids, gt_ids, sizeof gt_ids);
        if (i == 0) ids[3 * GK + 2] = GN;
        if (i == 1) ids[1 * GK + 0] = -1;
        if (i <= 1) write_ivecs(p, ids, GQ, GK, -1, 0);
        if (i == 2) write_ivecs(p, ids, GQ, GK, 2, 5);
        if (i == 3) { /* row 2 says 7 and row 3 holds one id less: the length is right */
            FILE *f = fopen(p, "wb");
            for (int q = 0; q < GQ; q++) {
                int32_t kk = q == 2 ? 7 : q == 3 ? 5 : GK;
                fwrite(&kk, 4, 1, f);
                fwrite(ids, 4, (size_t)kk, f);
            }
            fclose(f);
        }
        if (i == 4) write_ivecs(p, ids, GQ - 1, GK, -1, 0);
        if (i == 5) write_ivecs(p, ids, GQ, GK, 0, 0);
        if (i == 6) ids[4 * GK + 5] = -1, write_ibin(p, ids, gt_d, GQ, GK);
        if (i == 7) write_header(p, GQ, GK, 121);
        if (i == 8) write_ibin(p, ids, NULL, GQ + 1, GK);
        if (i == 9) write_header(p, UINT32_MAX, UINT32_MAX, 0);
        if (i == 10) write_header(p, GQ, 0, 0);
        if (i == 11) write_bytes(p, "\x05\0\0\0", 4);
        if (i == 12) write_bytes(p, "1 2 3\n", 6);
        vb_dataset_open_vecs(strstr(p, ".ivecs") ? fv : fb, strstr(p, ".ivecs") ? qv : qb, VB_METRIC_EUCLIDEAN,
                             cache, &a, &err);
        if (!a) continue;
        vb_error_clear(&err);
        ok(vb_dataset_read_neighbors(a, p, &err) == VB_ERROR, "%s: refused", bad[i].what);
        char nm[2][160];
        snprintf(nm[0], sizeof nm[0], "%s: error names the file", bad[i].what);
        snprintf(nm[1], sizeof nm[1], "%s: error says where", bad[i].what);
        contains(err.message, bad[i].file, nm[0]);
        contains(err.message, bad[i].frag, nm[1]);
        ok(a->gt_k == 0 && a->neighbors == NULL && a->distances == NULL, "%s: no neighbours kept", bad[i].what);
        vb_dataset_close(&a);
    }
}

/* ----- profile entries naming vector files and ground truth ----- */

static void test_spec_files(void) {
    char cache[128], bv[128], qbv[128], ub[128], qub[128], iv[128], ib[128], p[128];
    path_in(cache, sizeof cache, "specfiles");
    path_in(bv, sizeof bv, "s-base.bvecs");
    path_in(qbv, sizeof qbv, "s-query.bvecs");
    path_in(ub, sizeof ub, "s-base.u8bin");
    path_in(qub, sizeof qub, "s-query.u8bin");
    path_in(iv, sizeof iv, "s-gt.ivecs");
    path_in(ib, sizeof ib, "s-gt.ibin");
    static uint8_t base[GN * GD], qs[GQ * GD];
    for (int i = 0; i < GN * GD; i++) base[i] = (uint8_t)(i * 13);
    for (int i = 0; i < GQ * GD; i++) qs[i] = (uint8_t)(i * 29);
    write_bvecs(bv, base, GN, GD, -1, 0, 0);
    write_bvecs(qbv, qs, GQ, GD, -1, 0, 0);
    write_u8bin(ub, base, GN, GD, GN);
    write_u8bin(qub, qs, GQ, GD, GQ);
    write_ivecs(iv, gt_ids, GQ, GK, -1, 0);
    write_ibin(ib, gt_ids, gt_d, GQ, GK);

    vb_dataset *d = NULL;
    vb_error err = {0};
    vb_error_clear(&err);
    vb_kv sift[] = {{"name", "sift"}, {"source", "bvecs"}, {"path", bv}, {"queries_path", qbv},
                    {"groundtruth_path", iv}, {"metric", "euclidean"}};
    ok(vb_dataset_open_spec(sift, 6, cache, &d, &err) == VB_OK, "bvecs + ivecs spec opens (%s)", err.message);
    if (d) {
        is_str(d->name, "sift", "bvecs spec: name");
        is_int(d->n_train, GN, "bvecs spec: rows");
        is_int(d->gt_k, GK, "bvecs spec: given neighbours from the ivecs file");
        ok(d->neighbors && memcmp(d->neighbors, gt_ids, sizeof gt_ids) == 0, "bvecs spec: neighbours as written");
    }
    vb_dataset_close(&d);
    vb_kv ssnpp[] = {{"name", "ssnpp"}, {"path", ub}, {"queries_path", qub}, {"groundtruth_path", ib},
                     {"metric", "l2"}};
    vb_error_clear(&err);
    ok(vb_dataset_open_spec(ssnpp, 5, cache, &d, &err) == VB_OK, "u8bin + ibin spec, source from the extension (%s)",
       err.message);
    if (d) {
        is_int(d->n_test, GQ, "u8bin spec: queries");
        ok(d->distances && memcmp(d->distances, gt_d, sizeof gt_d) == 0, "u8bin spec: distances from the ibin file");
    }
    vb_dataset_close(&d);
    vb_kv nogt[] = {{"name", "ssnpp"}, {"source", "u8bin"}, {"path", ub}, {"queries_path", qub}, {"metric", "l2"}};
    ok(vb_dataset_open_spec(nogt, 5, cache, &d, &err) == VB_OK && d && d->gt_k == 0,
       "u8bin spec without groundtruth_path: no given neighbours");
    vb_dataset_close(&d);

    struct {
        vb_kv kv[6];
        size_t n;
        const char *what, *frag1, *frag2;
    } bad[] = {
        {{{"name", "m"}, {"source", "bvecs"}, {"path", bv}, {"queries_path", qbv}, {"groundtruth_path", ib},
          {"metric", "l2"}},
         6, "bvecs with .ibin ground truth", "dataset 'm': groundtruth_path: ",
         "s-gt.ibin\": source bvecs takes TEXMEX ground truth, a .ivecs file"},
        {{{"name", "m"}, {"source", "u8bin"}, {"path", ub}, {"queries_path", qub}, {"groundtruth_path", iv},
          {"metric", "l2"}},
         6, "u8bin with .ivecs ground truth", "groundtruth_path",
         "source u8bin takes big-ann ground truth, a .ibin file"},
        {{{"name", "m"}, {"source", "bvecs"}, {"path", bv}, {"queries_path", qub}, {"metric", "l2"}},
         5, "bvecs with u8bin queries", "dataset 'm': queries_path: ", "s-query.u8bin\" does not end in .bvecs"},
        {{{"name", "m"}, {"source", "u8bin"}, {"path", bv}, {"queries_path", qub}, {"metric", "l2"}},
         5, "source u8bin with a .bvecs path", "dataset 'm': path: ", "s-base.bvecs\" does not end in .u8bin"},
        {{{"name", "m"}, {"path", "/data/base.dat"}, {"queries_path", qub}, {"metric", "l2"}},
         4, "an unknown extension without source", "dataset 'm': path: ", "\"/data/base.dat\" has no known extension"},
        {{{"name", "m"}, {"source", "parquet"}, {"path", "x.parquet"}}, 3, "an unknown source",
         "dataset 'm': source: ", "unknown source \"parquet\""},
        {{{"name", "m"}, {"source", "bvecs"}, {"path", bv}, {"metric", "l2"}}, 4, "bvecs without queries_path",
         "dataset 'm': queries_path: ", "required for source bvecs"},
        {{{"name", "m"}, {"source", "synthetic"}, {"metric", "l2"}, {"groundtruth_path", iv}}, 4,
         "synthetic with a ground-truth file", "dataset 'm': groundtruth_path: ", "synthetic dataset takes no"},
        {{{"name", "m"}, {"path", "a.hdf5"}, {"groundtruth_path", iv}}, 3, "hdf5 with a ground-truth file",
         "dataset 'm': groundtruth_path: ", "source hdf5 takes no ground-truth file"},
        {{{"name", "m"}, {"source", "bvecs"}, {"path", bv}, {"queries_path", qbv}, {"groundtruth_path", p},
          {"metric", "l2"}},
         6, "ground truth with an id beyond the corpus", "dataset 'm': ",
         "query 0, neighbour 1 (byte offset 8): id 40"},
    };
    int32_t ids[GQ * GK];
    memcpy(ids, gt_ids, sizeof ids);
    ids[1] = GN;
    path_in(p, sizeof p, "s-bad.ivecs");
    write_ivecs(p, ids, GQ, GK, -1, 0);
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        vb_error_clear(&err);
        ok(vb_dataset_open_spec(bad[i].kv, bad[i].n, cache, &d, &err) == VB_ERROR && d == NULL, "spec: %s: refused",
           bad[i].what);
        char nm[2][160];
        snprintf(nm[0], sizeof nm[0], "spec: %s: names the key", bad[i].what);
        snprintf(nm[1], sizeof nm[1], "spec: %s: says what is wrong", bad[i].what);
        contains(err.message, bad[i].frag1, nm[0]);
        contains(err.message, bad[i].frag2, nm[1]);
    }

    /* the profile loader's form: only the keys present are checked */
    const char *key = NULL;
    vb_kv only_name[] = {{"name", "x"}};
    ok(vb_dataset_spec_check(only_name, 1, 0, &key, &err) == VB_OK, "check: a bare entry passes the file check");
    ok(vb_dataset_spec_check(only_name, 1, 1, &key, &err) == VB_ERROR && key && strcmp(key, "source") == 0,
       "check, complete: a bare entry lacks source");
    vb_kv gt_only[] = {{"name", "x"}, {"groundtruth_path", "gt.bin"}};
    ok(vb_dataset_spec_check(gt_only, 2, 0, &key, &err) == VB_ERROR && strcmp(key, "groundtruth_path") == 0,
       "check: a ground-truth file that is neither .ivecs nor .ibin");
    contains(err.message, "\"gt.bin\" is neither .ivecs nor .ibin", "check: the message names the file");
}

/* ----- tag ----- */

static void test_tag(void) {
    int in_range = 1, below100 = 0, below1000 = 0;
    for (int64_t id = 0; id < 1000000; id++) {
        int32_t t = vb_dataset_tag(id);
        if (t < 0 || t >= 10000) in_range = 0;
        below100 += t < 100;
        below1000 += t < 1000;
    }
    ok(in_range, "tags are in [0, 10000)");
    ok(below100 > 9500 && below100 < 10500, "tag < 100 passes about 1 %% (%d of 1e6)", below100);
    ok(below1000 > 97000 && below1000 < 103000, "tag < 1000 passes about 10 %% (%d of 1e6)", below1000);
    is_int(vb_dataset_tag(12345), vb_dataset_tag(12345), "tag is deterministic");
}

/* ----- profile entries ----- */

static void test_spec(void) {
    char cache[128];
    path_in(cache, sizeof cache, "speccache");
    vb_kv kv[] = {{"name", "dev"}, {"source", "synthetic"}, {"metric", "cosine"}, {"rows", "500"},
                  {"queries", "10"},  {"dim", "8"},              {"seed", "3"}};
    vb_dataset *d = NULL;
    vb_error err = {0};
    vb_error_clear(&err);
    ok(vb_dataset_open_spec(kv, 7, cache, &d, &err) == VB_OK, "synthetic spec opens (%s)", err.message);
    if (d) {
        is_str(d->name, "dev", "spec name");
        is_int(d->n_train, 500, "spec rows");
        is_int(d->metric, VB_METRIC_ANGULAR, "cosine is angular");
    }
    vb_dataset_close(&d);

    vb_kv unknown[] = {{"name", "dev"}, {"source", "synthetic"}, {"metric", "l2"}, {"colour", "red"}};
    ok(vb_dataset_open_spec(unknown, 4, cache, &d, &err) == VB_ERROR, "unknown key refused");
    contains(err.message, "colour", "error names the key");

    vb_kv badrows[] = {{"name", "dev"}, {"source", "synthetic"}, {"metric", "l2"}, {"rows", "ten"}};
    ok(vb_dataset_open_spec(badrows, 4, cache, &d, &err) == VB_ERROR, "malformed rows refused");
    contains(err.message, "rows", "error names rows");

    vb_kv nometric[] = {{"name", "dev"}, {"source", "synthetic"}};
    ok(vb_dataset_open_spec(nometric, 2, cache, &d, &err) == VB_ERROR, "synthetic without metric refused");
    contains(err.message, "metric", "error names metric");

    vb_kv nopath[] = {{"name", "x"}, {"source", "hdf5"}};
    ok(vb_dataset_open_spec(nopath, 2, cache, &d, &err) == VB_ERROR, "hdf5 without path refused");
    contains(err.message, "path", "error names path");

    char good[128];
    path_in(good, sizeof good, "good.hdf5");
    vb_kv h5[] = {{"name", "g"}, {"path", good}};
    vb_error_clear(&err);
    ok(vb_dataset_open_spec(h5, 2, cache, &d, &err) == VB_OK, "hdf5 source inferred from the extension (%s)",
       err.message);
    vb_dataset_close(&d);
    vb_kv h5m[] = {{"name", "g"}, {"path", good}, {"metric", "euclidean"}};
    ok(vb_dataset_open_spec(h5m, 3, cache, &d, &err) == VB_ERROR, "metric contradicting the file refused");
    contains(err.message, "metric", "error names metric");
    ok(d == NULL, "no dataset on error");

    ok(vb_dataset_spec_keys[0] && strcmp(vb_dataset_spec_keys[0], "name") == 0, "key list starts with name");
}

/* Values recorded in results databases depend on these bytes staying the same across versions and hosts: the
 * tag of a row (the filter column) and the synthetic generator's output. Pinned to values computed before the
 * mixer moved into util/mix.h. */
static void test_pinned(void) {
    static const int64_t ids[] = {0, 1, 2, 99, 12345, 999999, 123456789};
    static const int32_t tags[] = {7535, 2465, 8110, 403, 4944, 1997, 5897};
    int same = 1;
    for (size_t i = 0; i < sizeof ids / sizeof ids[0]; i++) same &= vb_dataset_tag(ids[i]) == tags[i];
    ok(same, "pinned: vb_dataset_tag values unchanged");
    uint64_t st = 0;
    ok(vb_mix64(0) == 0 && vb_splitmix64(&st) == 0xe220a8397b1dcdafull, "pinned: splitmix64 reference values");
    vb_synth_params p = {.rows = 3000, .queries = 20, .dim = 24, .clusters = 7, .metric = VB_METRIC_ANGULAR, .seed = 11};
    vb_dataset *ds = NULL;
    vb_error err;
    char dir[1100];
    snprintf(dir, sizeof dir, "%s/pinned", tmpdir);
    if (!ok(vb_dataset_open_synthetic("pin", &p, dir, &ds, &err) == VB_OK, "pinned: synthetic dataset opens")) return;
    is_str(ds->content_hash, "7adff2896e6ff2533b9ec7a64cb5c81f", "pinned: synthetic dataset bytes unchanged");
    vb_dataset_close(&ds);
}

/* A FIFO, a directory or a device in a dataset's place is refused by name, and nothing blocks on it (a FIFO with
 * no writer would hold a blocking open() forever: this test would hang before the fix). */
static void test_not_regular(void) {
    char fifo[128], dir[128], hdf[128];
    path_in(fifo, sizeof fifo, "pipe.fvecs");
    path_in(dir, sizeof dir, "dir.fvecs");
    path_in(hdf, sizeof hdf, "pipe.hdf5");
    mkfifo(fifo, 0600);
    mkfifo(hdf, 0600);
    mkdir(dir, 0700);
    vb_error err = {0};
    vb_dataset *ds = NULL;
    ok(vb_dataset_open_vecs(fifo, fifo, VB_METRIC_EUCLIDEAN, tmpdir, &ds, &err) != VB_OK && !ds,
       "a FIFO as an .fvecs file is refused");
    contains(err.message, "is a FIFO (named pipe): a dataset file must be a regular file", "named as a FIFO");
    contains(err.message, fifo, "with its path");
    ok(vb_dataset_open_vecs(dir, dir, VB_METRIC_EUCLIDEAN, tmpdir, &ds, &err) != VB_OK && !ds,
       "a directory as an .fvecs file is refused");
    contains(err.message, "is a directory", "named as a directory");
    ok(vb_dataset_open_hdf5(hdf, tmpdir, &ds, &err) != VB_OK && !ds, "a FIFO as an HDF5 file is refused");
    contains(err.message, "is a FIFO", "named as a FIFO (stat before H5Fopen)");
    ok(vb_dataset_open_file("/dev/null", &err) < 0, "a device is refused by vb_dataset_open_file");
    contains(err.message, "/dev/null is a device", "named as a device");
    vb_kv spec[] = {{"name", "piped"}, {"source", "fvecs"}, {"path", fifo}, {"queries_path", fifo},
                    {"metric", "euclidean"}};
    ok(vb_dataset_open_spec(spec, 5, tmpdir, &ds, &err) != VB_OK && !ds, "a profile's FIFO dataset is refused");
    contains(err.message, "dataset 'piped': path:", "naming the dataset and the key");
}

int main(void) {
    snprintf(tmpdir, sizeof tmpdir, "/tmp/vb-test-dataset-XXXXXX");
    if (!mkdtemp(tmpdir)) {
        perror("mkdtemp");
        return 1;
    }
    test_synthetic();
    test_hdf5();
    test_vecs();
    test_u8();
    test_neighbors();
    test_spec_files();
    test_tag();
    test_spec();
    test_pinned();
    test_not_regular();
    nftw(tmpdir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    return done_testing();
}
