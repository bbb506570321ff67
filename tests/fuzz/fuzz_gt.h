/* Shared body of the given-neighbour targets (fuzz_ivecs.c, fuzz_ibin.c): a small float32 dataset whose shape
 * the input chooses, then vb_dataset_read_neighbors on a ground-truth file made of the rest of the input, as a
 * profile's groundtruth_path is read.
 *
 * Input: byte 0 sets the corpus rows (1 + byte, 1..256), byte 1 the queries (1 + byte % 8), then the
 * ground-truth file's bytes.
 *
 * Invariants checked beyond the sanitizers: a refused file says why, naming it, and leaves the dataset without
 * neighbours; an accepted one has one row of gt_k >= 1 neighbours per query, every id a row of the corpus and
 * equal to the id at its place in the file (.ivecs: after each row's k word, which must say k; .ibin: after the
 * 8-byte header, which must say queries x k), distances present exactly when the .ibin file holds them (then
 * equal to the file's), and every byte claimed readable. */
#ifndef VB_TESTS_FUZZ_GT_H
#define VB_TESTS_FUZZ_GT_H

#include "datasets/dataset.h"
#include "tests/fuzz/fuzz_util.h"

static void gt_write_fbin(const char *path, uint32_t rows, uint32_t dim) {
    size_t len = 8 + (size_t)rows * dim * 4;
    uint8_t *buf = calloc(1, len);
    memcpy(buf, &rows, 4);
    memcpy(buf + 4, &dim, 4);
    for (size_t i = 0; i < (size_t)rows * dim; i++) {
        float v = (float)(i % 13) - 6.0f;
        memcpy(buf + 8 + 4 * i, &v, 4);
    }
    fz_write(path, buf, len);
    free(buf);
}

static void gt_check(const char *ext, const vb_dataset *ds, const uint8_t *file, size_t len) {
    size_t n = ds->n_test, k = ds->gt_k;
    FZ_CHECK(k >= 1 && ds->neighbors, "%s: accepted with gt_k %zu, neighbours %p", ext, k, (const void *)ds->neighbors);
    fz_touch(ds->neighbors, n * k * 4);
    for (size_t i = 0; i < n * k; i++)
        FZ_CHECK(ds->neighbors[i] >= 0 && (size_t)ds->neighbors[i] < ds->n_train,
                 "%s: neighbour %zu is %d, the corpus has %zu rows", ext, i, ds->neighbors[i], ds->n_train);
    if (strcmp(ext, ".ivecs") == 0) {
        FZ_CHECK(ds->distances == NULL, ".ivecs gave distances");
        FZ_CHECK(len == n * (4 + 4 * k), ".ivecs of %zu bytes decoded as %zu x %zu", len, n, k);
        for (size_t q = 0; q < n; q++) {
            int32_t kk;
            memcpy(&kk, file + q * (4 + 4 * k), 4);
            FZ_CHECK(kk == (int32_t)k, ".ivecs row %zu says k = %d, decoded as %zu", q, kk, k);
            FZ_CHECK(memcmp(file + q * (4 + 4 * k) + 4, ds->neighbors + q * k, 4 * k) == 0,
                     ".ivecs row %zu differs from the file", q);
        }
        return;
    }
    uint32_t h[2];
    memcpy(h, file, 8);
    FZ_CHECK(h[0] == n && h[1] == k, ".ibin header says %u x %u, decoded as %zu x %zu", h[0], h[1], n, k);
    FZ_CHECK(len == 8 + n * k * (ds->distances ? 8 : 4), ".ibin of %zu bytes decoded as %zu x %zu, distances %s", len,
             n, k, ds->distances ? "yes" : "no");
    FZ_CHECK(memcmp(file + 8, ds->neighbors, n * k * 4) == 0, ".ibin ids differ from the file");
    if (ds->distances) {
        fz_touch(ds->distances, n * k * 4);
        FZ_CHECK(memcmp(file + 8 + n * k * 4, ds->distances, n * k * 4) == 0, ".ibin distances differ from the file");
    }
}

static int gt_one(const char *ext, const uint8_t *data, size_t size) {
    static char base[PATH_MAX], query[PATH_MAX], gt[PATH_MAX], cache[PATH_MAX];
    if (!cache[0]) {
        char name[32];
        fz_path("base.fbin", base, sizeof base);
        fz_path("query.fbin", query, sizeof query);
        snprintf(name, sizeof name, "gt%s", ext);
        fz_path(name, gt, sizeof gt);
        fz_mkdir(fz_path("cache", cache, sizeof cache));
    }
    fz_reader r = {data, size};
    uint32_t rows = 1 + (uint32_t)fz_take(&r, 1), queries = 1 + (uint32_t)(fz_take(&r, 1) % 8);
    gt_write_fbin(base, rows, 2);
    gt_write_fbin(query, queries, 2);
    fz_write(gt, r.p, r.n);

    vb_dataset *ds = NULL;
    vb_error err = {0};
    if (vb_dataset_open_vecs(base, query, VB_METRIC_EUCLIDEAN, cache, &ds, &err) != VB_OK) {
        FZ_CHECK(0, "the target's own dataset was refused: %s", err.message);
    }
    if (vb_dataset_read_neighbors(ds, gt, &err) != VB_OK) {
        FZ_CHECK(err.message[0] && strstr(err.message, gt), "refused without naming the file: '%s'", err.message);
        FZ_CHECK(ds->gt_k == 0 && !ds->neighbors && !ds->distances, "refused but neighbours kept");
        FZ_SAY("refused: %s", err.message);
    } else {
        FZ_SAY("accepted: %zu queries x %zu neighbours%s, corpus %zu", ds->n_test, ds->gt_k,
               ds->distances ? " with distances" : "", ds->n_train);
        gt_check(ext, ds, r.p, r.n);
    }
    vb_dataset_close(&ds);
    fz_empty_dir(cache);
    return 0;
}

#endif
