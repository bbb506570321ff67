/* Self-test of datasets/idx.c and vb_dataset_open_idx: small IDX files written here (gzipped with zlib, and
 * plain), read back as float32 rows and class columns; broken ones refused with the file and the byte offset
 * named: truncated in the header and in the data, a gzip stream cut short, a wrong magic, a label count that is
 * not the image count, corrupted gzip data (an invalid block, a wrong CRC), bytes after the data, a dimension of 0,
 * queries of another image size. Then the seeded subset of rows and queries (vb_dataset_subset) and source idx in a
 * profile entry (dataset_spec.h) with its key checks. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <ftw.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <zlib.h>

#include "datasets/dataset.h"
#include "datasets/dataset_spec.h"
#include "datasets/idx.h"
#include "tests/tap.h"

static char tmpdir[64];
static const char *cache;

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
    (void)st, (void)flag, (void)ftw;
    return remove(path);
}

/* A path in the scratch directory, from a pool that lasts the whole test (every name is used once or twice). */
static const char *in_tmp(const char *name) {
    static char buf[64][256];
    static int next;
    char *b = buf[next++ % 64];
    snprintf(b, sizeof buf[0], "%s/%s", tmpdir, name);
    return b;
}

static void be32(unsigned char *p, uint32_t v) {
    p[0] = (unsigned char)(v >> 24), p[1] = (unsigned char)(v >> 16), p[2] = (unsigned char)(v >> 8);
    p[3] = (unsigned char)v;
}

/* An IDX file's bytes: magic, dims, then the data (pixel / label i = (i * 7 + seed) % 256, or % 10 for labels).
 * *len is its length; the caller frees. */
static unsigned char *idx_bytes(uint32_t magic, const uint32_t *dims, unsigned nd, unsigned seed, size_t *len) {
    size_t data = 1;
    for (unsigned i = 0; i < nd; i++) data *= dims[i];
    *len = 4 + 4 * nd + data;
    unsigned char *b = malloc(*len);
    be32(b, magic);
    for (unsigned i = 0; i < nd; i++) be32(b + 4 + 4 * i, dims[i]);
    for (size_t i = 0; i < data; i++)
        b[4 + 4 * nd + i] = (unsigned char)(nd == 1 ? (i * 3 + seed) % 10 : (i * 7 + seed) % 256);
    return b;
}

static void write_plain(const char *path, const unsigned char *b, size_t len) {
    FILE *f = fopen(path, "wb");
    fwrite(b, 1, len, f);
    fclose(f);
}

static void write_gz(const char *path, const unsigned char *b, size_t len) {
    gzFile g = gzopen(path, "wb");
    gzwrite(g, b, (unsigned)len);
    gzclose(g);
}

/* A gzipped IDX file NAME in the scratch directory, of idx_bytes(MAGIC, DIMS, ND, 0); its path. */
static const char *gz_idx(const char *name, uint32_t magic, const uint32_t *dims, unsigned nd) {
    size_t len;
    unsigned char *b = idx_bytes(magic, dims, nd, 0, &len);
    const char *p = in_tmp(name);
    write_gz(p, b, len);
    free(b);
    return p;
}

static long file_size(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 ? (long)st.st_size : -1;
}

/* Opens images + labels as a dataset and expects a refusal whose message holds `file` and every `want`. */
static void refused(const char *ti, const char *qi, const char *tl, const char *ql, const char *file,
                    const char *const *want, const char *what) {
    vb_dataset *ds = NULL;
    vb_error err;
    vb_error_clear(&err);
    int rc = vb_dataset_open_idx(ti, qi, tl, ql, VB_METRIC_EUCLIDEAN, cache, &ds, &err);
    ok(rc == VB_ERROR && !ds, "%s: refused", what);
    contains(err.message, file, nm("%s: the message names the file", what));
    for (; *want; want++) contains(err.message, *want, nm("%s: the message says \"%s\"", what, *want));
    vb_dataset_close(&ds);
}

int main(void) {
    snprintf(tmpdir, sizeof tmpdir, "/tmp/vb-test-idx-XXXXXX");
    if (!mkdtemp(tmpdir)) return 1;
    vb_error err;
    vb_error_clear(&err);

    /* a good set: 6 corpus images and 4 queries of 3 x 5 pixels, their labels; the corpus gzipped, the queries plain */
    uint32_t tdims[3] = {6, 3, 5}, qdims[3] = {4, 3, 5}, tl[1] = {6}, ql[1] = {4};
    size_t tlen, qlen, tllen, qllen;
    unsigned char *timg = idx_bytes(VB_IDX_MAGIC_IMAGES, tdims, 3, 1, &tlen);
    unsigned char *qimg = idx_bytes(VB_IDX_MAGIC_IMAGES, qdims, 3, 2, &qlen);
    unsigned char *tlab = idx_bytes(VB_IDX_MAGIC_LABELS, tl, 1, 0, &tllen);
    unsigned char *qlab = idx_bytes(VB_IDX_MAGIC_LABELS, ql, 1, 5, &qllen);
    const char *TI = in_tmp("train-images-idx3-ubyte.gz"), *QI = in_tmp("t10k-images-idx3-ubyte");
    const char *TL = in_tmp("train-labels-idx1-ubyte.gz"), *QL = in_tmp("t10k-labels-idx1-ubyte.gz");
    write_gz(TI, timg, tlen);
    write_plain(QI, qimg, qlen);
    write_gz(TL, tlab, tllen);
    write_gz(QL, qlab, qllen);

    cache = in_tmp("cache");
    mkdir(cache, 0755);
    vb_dataset *ds = NULL;
    ok(vb_dataset_open_idx(TI, QI, TL, QL, VB_METRIC_EUCLIDEAN, cache, &ds, &err) == VB_OK,
       "good IDX files (gzipped and plain) open (%s)", err.message);
    if (ds) {
        is_int(ds->n_train, 6, "6 corpus rows (the training images)");
        is_int(ds->n_test, 4, "4 queries (the test images)");
        is_int(ds->dim, 15, "dim = rows x columns of an image");
        int same = 1;
        for (size_t i = 0; i < 6 * 15; i++) same &= ds->train[i] == (float)timg[16 + i];
        for (size_t i = 0; i < 4 * 15; i++) same &= ds->test[i] == (float)qimg[16 + i];
        ok(same, "every pixel is its byte value 0..255 as a float, row by row");
        ok(ds->train_class && ds->test_class, "the labels are the class columns");
        int lab = ds->train_class && ds->test_class;
        for (size_t i = 0; lab && i < 6; i++) lab &= ds->train_class[i] == tlab[8 + i];
        for (size_t i = 0; lab && i < 4; i++) lab &= ds->test_class[i] == qlab[8 + i];
        ok(lab, "each row's class is its label");
        is_int(ds->n_classes, 10, "n_classes: the largest label + 1");
        is_int(strlen(ds->content_hash), 32, "content hash");
        char h1[33];
        snprintf(h1, sizeof h1, "%s", ds->content_hash);
        vb_dataset_close(&ds);
        ok(vb_dataset_open_idx(TI, QI, NULL, NULL, VB_METRIC_EUCLIDEAN, cache, &ds, &err) == VB_OK,
           "opened again without labels");
        if (ds) {
            is_str(ds->content_hash, h1, "the same content");
            ok(!ds->train_class && ds->n_classes == 0, "no labels: no class column");
        }
        vb_dataset_close(&ds);
    }
    ok(vb_dataset_open_idx(TI, QI, TL, NULL, VB_METRIC_EUCLIDEAN, cache, &ds, &err) == VB_ERROR,
       "one label file without the other is refused");

    /* each broken file is a fresh name, so no cached conversion hides it */
    {   /* truncated in the header: 10 of its 16 bytes */
        const char *p = in_tmp("trunc-header.gz");
        write_gz(p, timg, 10);
        refused(p, QI, NULL, NULL, p, (const char *const[]){"truncated at IDX byte 10", "header needs 16 bytes", NULL},
                "truncated in the header");
    }
    {   /* truncated in the data: the header and 2.4 images */
        const char *p = in_tmp("trunc-data.gz");
        write_gz(p, timg, 16 + 36);
        refused(p, QI, NULL, NULL, p,
                (const char *const[]){"truncated at IDX byte 52", "in item 2 of 6", "declares 106 bytes", NULL},
                "truncated in the data");
    }
    {   /* a plain file truncated in the data */
        const char *p = in_tmp("trunc-plain");
        write_plain(p, qimg, 16 + 20);
        refused(TI, p, NULL, NULL, p, (const char *const[]){"truncated at IDX byte 36", "in item 1 of 4", NULL},
                "a plain file truncated in the data");
    }
    {   /* the gzip file itself cut short (as a download that broke off) */
        const char *full = in_tmp("cut-full.gz"), *p = in_tmp("cut.gz");
        write_gz(full, timg, tlen);
        long sz = file_size(full);
        FILE *f = fopen(full, "rb");
        unsigned char buf[4096];
        size_t n = fread(buf, 1, sizeof buf, f);
        fclose(f);
        write_plain(p, buf, n > 30 ? (size_t)(sz - 12) : n);
        char want[64];
        snprintf(want, sizeof want, "breaks off at file byte %ld", sz - 12);
        refused(p, QI, NULL, NULL, p, (const char *const[]){want, "cut short", NULL}, "a gzip file cut short");
    }
    {   /* wrong magic: a labels file given as images */
        refused(TL, QI, NULL, NULL, TL,
                (const char *const[]){"IDX byte 0: magic 0x00000801, expected 0x00000803", "swapped", NULL},
                "labels given as images (wrong magic)");
        const char *p = in_tmp("not-idx.gz");
        write_gz(p, (const unsigned char *)"PK\3\4 this is not IDX at all", 28);
        refused(p, QI, NULL, NULL, p, (const char *const[]){"IDX byte 0: magic 0x504b0304", "not an IDX file", NULL},
                "not an IDX file (wrong magic)");
    }
    {   /* count mismatch: 5 labels for 6 images */
        const char *p = gz_idx("labels5.gz", VB_IDX_MAGIC_LABELS, (const uint32_t[]){5}, 1);
        refused(TI, QI, p, QL, p, (const char *const[]){"IDX byte 4: 5 labels", "holds 6 images", NULL},
                "a label count that is not the image count");
    }
    {   /* corrupted gzip: the first deflate block's type set to 3 (reserved) */
        const char *good = in_tmp("corrupt-src.gz"), *p = in_tmp("corrupt.gz");
        write_gz(good, timg, tlen);
        FILE *f = fopen(good, "rb");
        unsigned char buf[4096];
        size_t n = fread(buf, 1, sizeof buf, f);
        fclose(f);
        buf[10] |= 0x06;   /* byte 10: the first byte after gzip's 10-byte header: BFINAL, BTYPE in bits 1-2 */
        write_plain(p, buf, n);
        refused(p, QI, NULL, NULL, p,
                (const char *const[]){"corrupt gzip data at file byte 1", "(IDX byte 0)", "invalid block type", NULL},
                "corrupted gzip data (an invalid block)");
        /* the CRC in the trailer (the last 8 bytes: CRC32, length) flipped: the data inflates, the check fails */
        const char *c2 = in_tmp("crc.gz");
        f = fopen(good, "rb");
        n = fread(buf, 1, sizeof buf, f);
        fclose(f);
        buf[n - 8] ^= 0xff;
        write_plain(c2, buf, n);
        refused(c2, QI, NULL, NULL, c2,
                (const char *const[]){"corrupt gzip data at file byte", "incorrect data check", NULL},
                "corrupted gzip data (a wrong CRC)");
    }
    {   /* bytes after the declared data */
        unsigned char *b = malloc(tlen + 3);
        memcpy(b, timg, tlen);
        memset(b + tlen, 9, 3);
        const char *p = in_tmp("trailing.gz");
        write_gz(p, b, tlen + 3);
        free(b);
        refused(p, QI, NULL, NULL, p, (const char *const[]){"IDX byte 106: data goes on after the 6 items", NULL},
                "bytes after the data");
    }
    {   /* a header that declares far more than the file can hold: refused at the header, nothing allocated */
        unsigned char h[8];
        be32(h, VB_IDX_MAGIC_LABELS);
        be32(h + 4, 4000000000u);
        const char *p = in_tmp("huge-count.gz");
        write_gz(p, h, 8);
        int32_t *lab = NULL;
        uint64_t n = 0;
        int mx = 0;
        ok(vb_idx_read_labels(p, &lab, &n, &mx, &err) == VB_ERROR && !lab, "4e9 labels declared in a tiny gzip file: refused");
        contains(err.message, "IDX byte 4: the header declares 4000000000 bytes of data, more than a gzip file of",
                 "at the header, saying the file cannot hold it");
        const char *pp = in_tmp("huge-count");
        write_plain(pp, h, 8);
        ok(vb_idx_read_labels(pp, &lab, &n, &mx, &err) == VB_ERROR && !lab, "the same in a plain file: refused");
        contains(err.message, "truncated at IDX byte 8 (in item 0 of 4000000000): the header declares 4000000008 bytes",
                 "where the file ends and what the header declares");
    }
    {   /* a dimension of 0 */
        const char *p = gz_idx("zero-dim.gz", VB_IDX_MAGIC_IMAGES, (const uint32_t[]){6, 0, 5}, 3);
        refused(p, QI, NULL, NULL, p, (const char *const[]){"IDX byte 8: dimension 1 is 0", NULL}, "a dimension of 0");
    }
    {   /* queries of another image size */
        const char *p = gz_idx("other-size.gz", VB_IDX_MAGIC_IMAGES, (const uint32_t[]){4, 5, 4}, 3);
        refused(TI, p, NULL, NULL, p, (const char *const[]){"images of 20 pixels", "images of 15", NULL},
                "queries of another image size");
    }
    {   /* a seeded subset (dataset.h vb_dataset_subset): rows and queries chosen by the seed, in file order, with
         * their classes; the same seed the same rows, another seed other rows; more than there is refused */
        vb_dataset *a = NULL, *b = NULL, *c = NULL;
        ok(vb_dataset_open_idx(TI, QI, TL, QL, VB_METRIC_EUCLIDEAN, cache, &a, &err) == VB_OK &&
           vb_dataset_open_idx(TI, QI, TL, QL, VB_METRIC_EUCLIDEAN, cache, &b, &err) == VB_OK &&
           vb_dataset_open_idx(TI, QI, TL, QL, VB_METRIC_EUCLIDEAN, cache, &c, &err) == VB_OK, "three copies open");
        if (a && b && c) {
            char full[33];
            snprintf(full, sizeof full, "%s", a->content_hash);
            ok(vb_dataset_subset(a, 3, 2, 42, &err) == VB_OK, "subset: 3 of 6 rows, 2 of 4 queries (%s)", err.message);
            ok(vb_dataset_subset(b, 3, 2, 42, &err) == VB_OK, "the same subset again");
            is_int(a->n_train, 3, "subset: 3 rows");
            is_int(a->n_test, 2, "subset: 2 queries");
            ok(strcmp(a->content_hash, full) != 0, "the subset has its own content hash (its own ground truth)");
            is_str(a->content_hash, b->content_hash, "the same seed takes the same rows and queries");
            /* each chosen row is a row of the file, in file order, with its own class */
            int rows_ok = 1;
            long last = -1;
            for (size_t i = 0; i < 3; i++) {
                long found = -1;
                for (size_t r = 0; r < 6 && found < 0; r++)
                    if (memcmp(a->train + i * 15, c->train + r * 15, 15 * sizeof(float)) == 0) found = (long)r;
                rows_ok &= found > last && a->train_class[i] == c->train_class[found];
                last = found;
            }
            ok(rows_ok, "the subset's rows are rows of the file, in file order, each with its own class");
            int seeds_differ = 0;
            for (uint64_t seed = 1; seed < 20 && !seeds_differ; seed++) {
                vb_dataset *d = NULL;
                vb_dataset_open_idx(TI, QI, TL, QL, VB_METRIC_EUCLIDEAN, cache, &d, &err);
                if (d && vb_dataset_subset(d, 3, 2, seed, &err) == VB_OK)
                    seeds_differ = strcmp(d->content_hash, a->content_hash) != 0;
                vb_dataset_close(&d);
            }
            ok(seeds_differ, "another seed takes other rows");
            ok(vb_dataset_subset(c, 7, 0, 42, &err) == VB_ERROR, "7 rows of 6 are refused");
            contains(err.message, "rows: 7 is more than the 6 rows", "saying how many there are");
            ok(vb_dataset_subset(c, 6, 4, 42, &err) == VB_OK && strcmp(c->content_hash, full) == 0,
               "the whole count is no subset: the dataset as it is");
        }
        vb_dataset_close(&a), vb_dataset_close(&b), vb_dataset_close(&c);
    }
    {   /* the profile entry: source idx, its keys, subsets (dataset_spec.h) */
        vb_kv kv[] = {{"name", "fm"}, {"source", "idx"}, {"metric", "euclidean"}, {"path", TI}, {"queries_path", QI},
                      {"labels_path", TL}, {"queries_labels_path", QL}, {"rows", "4"}, {"queries", "3"}, {"seed", "7"}};
        vb_dataset *d = NULL;
        ok(vb_dataset_open_spec(kv, 10, cache, &d, &err) == VB_OK, "source idx opens from a profile entry (%s)",
           err.message);
        if (d) {
            is_int(d->n_train * 10 + d->n_test, 43, "rows: 4 and queries: 3 take a subset of the files");
            ok(d->train_class && d->n_classes == 10, "with the class column");
        }
        vb_dataset_close(&d);
        const char *key = NULL;
        vb_kv one_label[] = {{"name", "fm"}, {"source", "idx"}, {"path", TI}, {"labels_path", TL}};
        ok(vb_dataset_spec_check(one_label, 4, 0, &key, &err) == VB_ERROR && key && !strcmp(key, "queries_labels_path"),
           "labels_path without queries_labels_path is refused at the profile's check, naming the missing key");
        vb_kv h5_labels[] = {{"name", "x"}, {"path", "/x/a.hdf5"}, {"labels_path", TL}};
        ok(vb_dataset_spec_check(h5_labels, 3, 0, &key, &err) == VB_ERROR && !strcmp(key, "labels_path"),
           "a label file on an HDF5 source is refused");
        vb_kv synth_labels[] = {{"name", "s"}, {"source", "synthetic"}, {"metric", "angular"}, {"labels_path", TL}};
        ok(vb_dataset_spec_check(synth_labels, 4, 0, &key, &err) == VB_ERROR && !strcmp(key, "labels_path"),
           "a label file on a synthetic dataset is refused (found by fuzz_dataset_spec: it was accepted and ignored)");
        vb_kv reg0[] = {{"name", "fm"}, {"registry", "fashion-mnist-784-euclidean"}, {"rows", "0"}};
        ok(vb_dataset_spec_check(reg0, 3, 0, &key, &err) == VB_ERROR && !strcmp(key, "rows"),
           "rows: 0 on a registry dataset is refused at the profile's check");
        vb_kv reg_big[] = {{"name", "fm"}, {"registry", "fashion-mnist-784-euclidean"}, {"queries", "10001"}};
        ok(vb_dataset_spec_check(reg_big, 3, 0, &key, &err) == VB_ERROR && !strcmp(key, "queries"),
           "more queries than the registry dataset has are refused at the profile's check");
        contains(err.message, "10001 is more than the 10000 queries of fashion-mnist-784-euclidean", "with both counts");
        vb_kv shipped[] = {{"name", "x"}, {"path", "/x/a.hdf5"}, {"ground_truth", "shipped"}, {"rows", "100"}};
        ok(vb_dataset_spec_check(shipped, 4, 0, &key, &err) == VB_ERROR && !strcmp(key, "ground_truth"),
           "shipped neighbours with a row subset are refused");
    }
    {   /* the reader alone: labels read whole, then finish */
        int32_t *lab = NULL;
        uint64_t n = 0;
        int mx = -1;
        ok(vb_idx_read_labels(TL, &lab, &n, &mx, &err) == VB_OK && n == 6 && mx == 9,
           "vb_idx_read_labels: 6 labels, the largest 9 (%s)", err.message);
        free(lab);
    }
    free(timg), free(qimg), free(tlab), free(qlab);
    nftw(tmpdir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    printf("1..%d\n", tap_n);
    return tap_failed ? 1 : 0;
}
