/* Shared body of the vector file targets (fuzz_fvecs.c, fuzz_fbin.c, fuzz_bvecs.c, fuzz_u8bin.c): the input holds
 * a base file and a query file, both opened through vb_dataset_open_vecs as a profile's fvecs / fbin / bvecs /
 * u8bin dataset would be.
 *
 * Input: byte 0 picks the metric (3 of 4 values are valid ones), bytes 1-2 (little-endian) the length of the
 * base file, then the base file's bytes, then the query file's bytes.
 *
 * Invariants checked beyond the sanitizers: a refused file says why; an accepted one has non-empty train and
 * test matrices of one dimension, at most VB_DATASET_MAX_DIM, whose every float is readable and equal to the
 * element at its place in the file (TEXMEX: after each row's dimension word, which must say the dimension;
 * big-ann: after the 8-byte header, which must say the shape; uint8 elements as the floats 0..255), and a
 * 32-hex-digit content hash. */
#ifndef VB_TESTS_FUZZ_VECS_H
#define VB_TESTS_FUZZ_VECS_H

#include "datasets/dataset.h"
#include "tests/fuzz/fuzz_util.h"

/* Compares a decoded matrix with the file it came from. */
static void vecs_check(const char *ext, const uint8_t *file, size_t file_len, const float *m, size_t rows,
                       size_t dim) {
    size_t bytes;
    int texmex = strstr(ext, "vecs") != NULL;
    size_t elem = strcmp(ext, ".bvecs") == 0 || strcmp(ext, ".u8bin") == 0 ? 1 : 4;
    FZ_CHECK(rows > 0 && dim > 0 && dim <= VB_DATASET_MAX_DIM, "%s: %zu x %zu", ext, rows, dim);
    FZ_CHECK(!__builtin_mul_overflow(rows * dim, sizeof(float), &bytes) && bytes / sizeof(float) / dim == rows,
             "%s: %zu x %zu floats are more than 2^64 bytes", ext, rows, dim);
    fz_touch(m, bytes);
    if (!texmex) {
        uint32_t h[2];
        FZ_CHECK(file_len == 8 + rows * dim * elem, "%s of %zu bytes decoded as %zu x %zu", ext, file_len, rows, dim);
        memcpy(h, file, 8);
        FZ_CHECK(h[0] == rows && h[1] == dim, "%s header says %u x %u, decoded as %zu x %zu", ext, h[0], h[1], rows,
                 dim);
        if (elem == 4) {
            FZ_CHECK(memcmp(file + 8, m, rows * dim * 4) == 0, "%s data differs from the file", ext);
        } else {
            for (size_t i = 0; i < rows * dim; i++)
                FZ_CHECK(m[i] == (float)file[8 + i], "%s element %zu is %g, the file says %u", ext, i, m[i],
                         file[8 + i]);
        }
        return;
    }
    size_t rec = 4 + dim * elem;
    FZ_CHECK(file_len == rows * rec, "%s of %zu bytes decoded as %zu x %zu", ext, file_len, rows, dim);
    for (size_t i = 0; i < rows; i++) {
        const uint8_t *row = file + i * rec;
        int32_t d;
        memcpy(&d, row, 4);
        FZ_CHECK(d == (int32_t)dim, "%s row %zu says dimension %d, decoded as %zu", ext, i, d, dim);
        if (elem == 4) {
            FZ_CHECK(memcmp(row + 4, m + i * dim, dim * 4) == 0, "%s row %zu differs from the file", ext, i);
        } else {
            for (size_t j = 0; j < dim; j++)
                FZ_CHECK(m[i * dim + j] == (float)row[4 + j], "%s row %zu element %zu is %g, the file says %u", ext, i,
                         j, m[i * dim + j], row[4 + j]);
        }
    }
}

static int vecs_one(const char *ext, const uint8_t *data, size_t size) {
    static char base[PATH_MAX], query[PATH_MAX], cache[PATH_MAX];
    if (!cache[0]) {
        char name[32];
        snprintf(name, sizeof name, "base%s", ext);
        fz_path(name, base, sizeof base);
        snprintf(name, sizeof name, "query%s", ext);
        fz_path(name, query, sizeof query);
        fz_mkdir(fz_path("cache", cache, sizeof cache));
    }
    fz_reader r = {data, size};
    static const vb_metric metrics[4] = {VB_METRIC_ANGULAR, VB_METRIC_EUCLIDEAN, VB_METRIC_DOT, (vb_metric)77};
    vb_metric metric = metrics[fz_take(&r, 1) % 4];
    size_t base_len = (size_t)fz_take(&r, 2);
    if (base_len > r.n) base_len = r.n;
    const uint8_t *b = r.p, *q = r.p + base_len;
    size_t q_len = r.n - base_len;
    fz_write(base, b, base_len);
    fz_write(query, q, q_len);

    vb_dataset *ds = NULL;
    vb_error err = {0};
    if (vb_dataset_open_vecs(base, query, metric, cache, &ds, &err) != VB_OK) {
        FZ_CHECK(ds == NULL && err.message[0], "refused without a message");
        FZ_SAY("refused: %s", err.message);
    } else {
        FZ_SAY("accepted: %zu x %zu, %zu queries", ds->n_train, ds->dim, ds->n_test);
        FZ_CHECK(ds->metric == metric, "metric %d, asked for %d", (int)ds->metric, (int)metric);
        vecs_check(ext, b, base_len, ds->train, ds->n_train, ds->dim);
        vecs_check(ext, q, q_len, ds->test, ds->n_test, ds->dim);
        FZ_CHECK(strlen(ds->content_hash) == 32 && strspn(ds->content_hash, "0123456789abcdef") == 32,
                 "content hash '%s'", ds->content_hash);
        vb_dataset_close(&ds);
    }
    fz_empty_dir(cache);
    return 0;
}

#endif
