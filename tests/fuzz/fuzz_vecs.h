/* Shared body of the two flat vector file targets (fuzz_fvecs.c, fuzz_fbin.c): the input holds a base file and
 * a query file, both opened through vb_dataset_open_vecs as a profile's fvecs / fbin dataset would be.
 *
 * Input: byte 0 picks the metric (3 of 4 values are valid ones), bytes 1-2 (little-endian) the length of the
 * base file, then the base file's bytes, then the query file's bytes.
 *
 * Invariants checked beyond the sanitizers: a refused file says why; an accepted one has non-empty train and
 * test matrices of one dimension whose every float is readable and equal to the float at its place in the file
 * (fvecs: after each row's dimension word; fbin: after the 8-byte header), and a 32-hex-digit content hash. */
#ifndef VB_TESTS_FUZZ_VECS_H
#define VB_TESTS_FUZZ_VECS_H

#include "datasets/dataset.h"
#include "tests/fuzz/fuzz_util.h"

/* Compares a decoded matrix with the file it came from. */
static void vecs_check(const char *ext, const uint8_t *file, size_t file_len, const float *m, size_t rows,
                       size_t dim) {
    size_t bytes;
    FZ_CHECK(rows > 0 && dim > 0, "%s: %zu x %zu", ext, rows, dim);
    FZ_CHECK(!__builtin_mul_overflow(rows * dim, sizeof(float), &bytes) && bytes / sizeof(float) / dim == rows,
             "%s: %zu x %zu floats are more than 2^64 bytes", ext, rows, dim);
    fz_touch(m, bytes);
    if (strcmp(ext, ".fbin") == 0) {
        FZ_CHECK(file_len == 8 + rows * dim * 4, ".fbin of %zu bytes decoded as %zu x %zu", file_len, rows, dim);
        FZ_CHECK(memcmp(file + 8, m, rows * dim * 4) == 0, ".fbin data differs from the file");
        return;
    }
    FZ_CHECK(file_len == rows * (4 + dim * 4), ".fvecs of %zu bytes decoded as %zu x %zu", file_len, rows, dim);
    for (size_t i = 0; i < rows; i++) {
        const uint8_t *row = file + i * (4 + dim * 4);
        int32_t d;
        memcpy(&d, row, 4);
        FZ_CHECK(d == (int32_t)dim, ".fvecs row %zu says dimension %d, decoded as %zu", i, d, dim);
        FZ_CHECK(memcmp(row + 4, m + i * dim, dim * 4) == 0, ".fvecs row %zu differs from the file", i);
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
