/* Self-test of datasets/dataset.c and dataset_spec.c: synthetic determinism and cache reuse, HDF5 files made
 * here with the HDF5 C API (contiguous, chunked + gzip, float64, broken ones), .fvecs/.fbin round trips, the
 * filter tag, and profile-entry parsing. */
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

int main(void) {
    snprintf(tmpdir, sizeof tmpdir, "/tmp/vb-test-dataset-XXXXXX");
    if (!mkdtemp(tmpdir)) {
        perror("mkdtemp");
        return 1;
    }
    test_synthetic();
    test_hdf5();
    test_vecs();
    test_tag();
    test_spec();
    test_pinned();
    nftw(tmpdir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    return done_testing();
}
