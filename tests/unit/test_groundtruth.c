/* Self-test of datasets/groundtruth.c: results equal a naive double-precision brute force for every metric,
 * with and without a mask, in every thread mode and block size; the cache returns identical results and a
 * corrupt or truncated cache file is recomputed; the streaming phase's staged ground truth (each stage the previous
 * one merged with the new rows) equals a full computation at every stage. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <ftw.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "datasets/groundtruth.h"
#include "tests/tap.h"

static char tmpdir[64];

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
    (void)st, (void)flag, (void)ftw;
    return remove(path);
}

typedef struct ref_item {
    double d;
    int64_t id;
} ref_item;

static int ref_cmp(const void *a, const void *b) {
    const ref_item *x = a, *y = b;
    if (x->d != y->d) return x->d < y->d ? -1 : 1;
    return x->id < y->id ? -1 : x->id > y->id;
}

/* The obviously correct version: every distance in double, full sort, ties by id. */
static void naive(const float *x, size_t n, const float *q, size_t nq, size_t dim, vb_metric m, size_t k,
                  const uint8_t *mask, int64_t *ids, double *dists) {
    ref_item *it = malloc(n * sizeof *it);
    for (size_t i = 0; i < nq; i++) {
        size_t c = 0;
        for (size_t j = 0; j < n; j++)
            if (!mask || mask[j]) it[c].id = (int64_t)j, it[c++].d = vb_distance(m, q + i * dim, x + j * dim, dim);
        qsort(it, c, sizeof *it, ref_cmp);
        for (size_t j = 0; j < k; j++) {
            ids[i * k + j] = j < c ? it[j].id : -1;
            dists[i * k + j] = j < c ? it[j].d : INFINITY;
        }
    }
    free(it);
}

static uint64_t rng_state = 88172645463325252ull;
static double urand(void) {
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (double)(rng_state >> 11) * 0x1.0p-53;
}

/* Compares a result with the naive one: ids exactly, distances to float precision. */
static int same_as_naive(const vb_groundtruth *gt, const int64_t *ids, const double *d, size_t nq, size_t k,
                         char *why, size_t len) {
    for (size_t i = 0; i < nq * k; i++) {
        if (gt->ids[i] != ids[i]) {
            snprintf(why, len, "query %zu rank %zu: id %lld, want %lld", i / k, i % k, (long long)gt->ids[i],
                     (long long)ids[i]);
            return 0;
        }
        if (isinf(d[i]) ? !isinf(gt->dists[i]) : fabs(gt->dists[i] - d[i]) > 1e-6 * (1 + fabs(d[i]))) {
            snprintf(why, len, "query %zu rank %zu: distance %.9g, want %.9g", i / k, i % k, gt->dists[i], d[i]);
            return 0;
        }
    }
    return 1;
}

static void test_against_naive(void) {
    enum { N = 3001, NQ = 37, D = 29, K = 10 };
    float *x = malloc(N * D * sizeof *x), *q = malloc(NQ * D * sizeof *q);
    for (size_t i = 0; i < N * D; i++) x[i] = (float)(urand() * 2 - 1);
    for (size_t i = 0; i < NQ * D; i++) q[i] = (float)(urand() * 2 - 1);
    /* duplicate rows (exact ties: the smaller id must win), a zero row, and a query equal to a row */
    memcpy(x + 100 * D, x + 2000 * D, D * sizeof *x);
    memcpy(x + 7 * D, x + 2999 * D, D * sizeof *x);
    memset(x + 500 * D, 0, D * sizeof *x);
    memcpy(q + 3 * D, x + 2000 * D, D * sizeof *q);
    uint8_t *mask = malloc(N), *sparse = calloc(N, 1);
    for (size_t i = 0; i < N; i++) mask[i] = vb_dataset_tag((int64_t)i) < 3000; /* ~30 % */
    sparse[5] = sparse[17] = sparse[2500] = 1;                                  /* fewer than k rows */
    int64_t ids[NQ * K];
    double dists[NQ * K];
    const vb_metric metrics[] = {VB_METRIC_ANGULAR, VB_METRIC_EUCLIDEAN, VB_METRIC_DOT};
    const vb_gt_opts variants[] = {
        {.threads = 0},
        {.threads = 1},
        {.threads = 2, .mode = VB_GT_SPLIT_ROWS, .query_block = 5, .row_block = 64},
        {.threads = 2, .mode = VB_GT_BLAS_THREADS, .query_block = 16, .row_block = 1000},
        {.threads = 3, .mode = VB_GT_SPLIT_ROWS, .query_block = 64, .row_block = 7},
    };
    const uint8_t *masks[] = {NULL, mask, sparse};
    const char *mask_names[] = {"no mask", "30% mask", "3-row mask"};
    for (size_t mi = 0; mi < 3; mi++)
        for (size_t fi = 0; fi < 3; fi++) {
            naive(x, N, q, NQ, D, metrics[mi], K, masks[fi], ids, dists);
            for (size_t v = 0; v < sizeof variants / sizeof variants[0]; v++) {
                vb_groundtruth gt;
                vb_error err = {0};
                char why[256] = "";
                int rc = vb_groundtruth_compute_opts(x, N, q, NQ, D, metrics[mi], K, masks[fi], &variants[v], &gt,
                                                     &err);
                int same = rc == VB_OK && same_as_naive(&gt, ids, dists, NQ, K, why, sizeof why);
                ok(same, "%s, %s, variant %zu equals naive brute force%s%s", vb_metric_name(metrics[mi]),
                   mask_names[fi], v, why[0] ? ": " : "", rc == VB_OK ? why : err.message);
                vb_groundtruth_free(&gt);
            }
        }
    /* the plain entry point */
    vb_groundtruth gt;
    vb_error err = {0};
    naive(x, N, q, NQ, D, VB_METRIC_EUCLIDEAN, K, NULL, ids, dists);
    ok(vb_groundtruth_compute(x, N, q, NQ, D, VB_METRIC_EUCLIDEAN, K, NULL, 2, &gt, &err) == VB_OK,
       "vb_groundtruth_compute runs");
    char why[256] = "";
    ok(same_as_naive(&gt, ids, dists, NQ, K, why, sizeof why), "vb_groundtruth_compute equals naive %s", why);
    is_int(gt.ids[3 * K], 100, "query equal to a duplicated row: the smaller id comes first");
    is_int(gt.ids[3 * K + 1], 2000, "and its duplicate second");
    is_double(gt.dists[3 * K], 0.0, 0.0, "at distance 0");
    vb_groundtruth_free(&gt);
    ok(gt.ids == NULL && gt.dists == NULL, "free clears the struct");
    vb_groundtruth_free(&gt);

    /* k larger than the corpus */
    ok(vb_groundtruth_compute(x, 4, q, 2, D, VB_METRIC_DOT, 6, NULL, 1, &gt, &err) == VB_OK, "k > rows runs");
    ok(gt.ids[3] >= 0 && gt.ids[4] == -1 && gt.ids[5] == -1 && isinf(gt.dists[4]), "k > rows pads with -1");
    vb_groundtruth_free(&gt);
    ok(vb_groundtruth_compute(x, N, q, NQ, D, VB_METRIC_DOT, 0, NULL, 1, &gt, &err) == VB_ERROR, "k = 0 refused");
    ok(vb_groundtruth_compute(x, N, q, 0, D, VB_METRIC_DOT, 3, NULL, 1, &gt, &err) == VB_OK && gt.n_queries == 0,
       "no queries: empty result");
    vb_groundtruth_free(&gt);
    free(x);
    free(q);
    free(mask);
    free(sparse);
}

typedef struct progress_log {
    pthread_t caller;
    uint64_t calls, last_done, total, backwards, foreign;
} progress_log;

static void on_progress(void *arg, uint64_t done, uint64_t total) {
    progress_log *pl = arg;
    if (!pthread_equal(pthread_self(), pl->caller)) pl->foreign++;
    if (done < pl->last_done) pl->backwards++;
    pl->calls++;
    pl->last_done = done;
    pl->total = total;
}

/* The progress moves as the corpus is scanned (not only per batch of queries), never backwards, only on the
 * calling thread, and ends at its total; the answer is the same as without it. */
static void test_progress(void) {
    enum { N = 5000, NQ = 20, D = 16, K = 5 };
    float *x = malloc(N * D * sizeof *x), *q = malloc(NQ * D * sizeof *q);
    for (size_t i = 0; i < N * D; i++) x[i] = (float)(urand() * 2 - 1);
    for (size_t i = 0; i < NQ * D; i++) q[i] = (float)(urand() * 2 - 1);
    int64_t ids[NQ * K];
    double dists[NQ * K];
    naive(x, N, q, NQ, D, VB_METRIC_EUCLIDEAN, K, NULL, ids, dists);
    for (int threads = 1; threads <= 3; threads++) {
        progress_log pl = {.caller = pthread_self()};
        vb_gt_opts o = {.threads = threads, .row_block = 100, .progress = on_progress, .progress_arg = &pl};
        vb_groundtruth gt;
        vb_error err = {0};
        char why[256] = "";
        ok(vb_groundtruth_compute_opts(x, N, q, NQ, D, VB_METRIC_EUCLIDEAN, K, NULL, &o, &gt, &err) == VB_OK &&
               same_as_naive(&gt, ids, dists, NQ, K, why, sizeof why),
           "%d threads with progress: equals naive %s", threads, why);
        /* one thread reports after each of its blocks and once at the end; with more, the calling thread reports
         * the blocks it took itself, which depends on the machine's load, so only the end is certain */
        if (threads == 1)
            is_int((long long)pl.calls, N / 100 + 1, "1 thread: a progress call per block of 100 rows, and the end");
        else
            ok(pl.calls >= 1, "%d threads: %llu progress calls", threads, (unsigned long long)pl.calls);
        is_int((long long)pl.backwards, 0, "%d threads: progress never goes back", threads);
        is_int((long long)pl.foreign, 0, "%d threads: progress only on the calling thread", threads);
        is_int((long long)pl.total, (long long)N * NQ, "%d threads: total is queries x rows", threads);
        is_int((long long)pl.last_done, (long long)pl.total, "%d threads: the last call is at the total", threads);
        vb_groundtruth_free(&gt);
    }
    free(x);
    free(q);
}

typedef struct stop_after {
    atomic_int *stop;
    uint64_t calls, at;
} stop_after;

static void stop_on_call(void *arg, uint64_t done, uint64_t total) {
    (void)done, (void)total;
    stop_after *sa = arg;
    if (++sa->calls == sa->at) atomic_store(sa->stop, 1);
}

/* An abort reaches a long ground truth: once the stop flag is set (here from the third progress call, as the agent's
 * message thread would between two), no worker takes another corpus block, the call fails saying how far it got,
 * no further progress is reported, and vb_groundtruth_get_opts caches nothing. A flag set before the call stops
 * every worker before its first block. */
static void test_stop(void) {
    enum { N = 20000, NQ = 30, D = 8, K = 5 };
    float *x = malloc(N * D * sizeof *x), *q = malloc(NQ * D * sizeof *q);
    for (size_t i = 0; i < N * D; i++) x[i] = (float)(urand() * 2 - 1);
    for (size_t i = 0; i < NQ * D; i++) q[i] = (float)(urand() * 2 - 1);
    /* one thread, so that the third progress call is the third block (with more, how many blocks the calling
     * thread takes itself depends on the machine's load; a flag set before the call covers them, below) */
    {
        atomic_int stop = 0;
        stop_after sa = {.stop = &stop, .at = 3};
        vb_gt_opts o = {.threads = 1, .row_block = 100, .progress = stop_on_call, .progress_arg = &sa, .stop = &stop};
        vb_groundtruth gt;
        vb_error err = {0};
        ok(vb_groundtruth_compute_opts(x, N, q, NQ, D, VB_METRIC_EUCLIDEAN, K, NULL, &o, &gt, &err) == VB_ERROR,
           "a stop during the work fails the call");
        contains(err.message, "stopped at 1.5% of 30 queries x 20000 rows", "the error says where it stopped");
        is_int((long long)sa.calls, 3, "no block after the stop (3 of 200 blocks, then no progress)");
        vb_groundtruth_free(&gt);
    }
    atomic_int stop = 1;
    stop_after sa = {.stop = &stop};
    vb_gt_opts o = {.threads = 3, .row_block = 100, .progress = stop_on_call, .progress_arg = &sa, .stop = &stop};
    vb_groundtruth gt;
    vb_error err = {0};
    ok(vb_groundtruth_compute_opts(x, N, q, NQ, D, VB_METRIC_EUCLIDEAN, K, NULL, &o, &gt, &err) == VB_ERROR &&
           sa.calls == 0, "3 threads, a flag set before the call: no worker takes a block (%llu progress calls)",
       (unsigned long long)sa.calls);
    vb_groundtruth_free(&gt);
    free(x);
    free(q);

    /* through the cache: a stopped computation leaves no cache file, and the next get computes it whole */
    char cache[128];
    snprintf(cache, sizeof cache, "%s/stopcache", tmpdir);
    vb_synth_params p = {.rows = 3000, .queries = 20, .dim = 8, .clusters = 4, .metric = VB_METRIC_EUCLIDEAN,
                         .seed = 9};
    vb_dataset *ds = NULL;
    ok(vb_dataset_open_synthetic("gtstop", &p, cache, &ds, &err) == VB_OK, "synthetic dataset for the stop test");
    if (!ds) return;
    char path[512];
    ok(vb_groundtruth_path(ds, 10, NULL, "", cache, path, sizeof path, &err) == VB_OK, "cache path");
    atomic_int st = 1;
    vb_gt_opts so = {.row_block = 100, .stop = &st};
    ok(vb_groundtruth_get_opts(ds, 10, NULL, "", cache, &so, &gt, &err) == VB_ERROR, "a stopped get fails");
    ok(access(path, F_OK) != 0, "and writes no cache file");
    vb_groundtruth_free(&gt);
    atomic_store(&st, 0);
    vb_error_clear(&err);
    ok(vb_groundtruth_get_opts(ds, 10, NULL, "", cache, &so, &gt, &err) == VB_OK && gt.n_queries == 20,
       "the next get computes it (%s)", err.message);
    ok(access(path, F_OK) == 0, "and caches it");
    vb_groundtruth_free(&gt);
    vb_dataset_close(&ds);
}

/* Shipped neighbours: accepted when right (ties at the k-th distance included), refused with the query's id when
 * one neighbour is changed, whichever query it is in, and distances filled for every query. */
static void test_shipped(void) {
    enum { N = 2000, NQ = 50, D = 8, K = 10, GK = 12 };
    float *x = malloc(N * D * sizeof *x), *q = malloc(NQ * D * sizeof *q);
    for (size_t i = 0; i < N * D; i++) x[i] = (float)(urand() * 2 - 1);
    for (size_t i = 0; i < NQ * D; i++) q[i] = (float)(urand() * 2 - 1);
    vb_groundtruth ref;
    vb_error err = {0};
    ok(vb_groundtruth_compute(x, N, q, NQ, D, VB_METRIC_EUCLIDEAN, GK, NULL, 1, &ref, &err) == VB_OK, "reference");
    int32_t *nb = malloc(NQ * GK * sizeof *nb);
    for (size_t i = 0; i < NQ * GK; i++) nb[i] = (int32_t)ref.ids[i];
    vb_dataset ds = {.metric = VB_METRIC_EUCLIDEAN, .dim = D, .n_train = N, .train = x, .n_test = NQ, .test = q,
                     .gt_k = GK, .neighbors = nb, .gt_check = 100};
    snprintf(ds.name, sizeof ds.name, "shipped-test");
    memset(ds.content_hash, 'a', 32);
    vb_groundtruth gt;
    size_t checked = 0;
    ok(vb_groundtruth_from_shipped(&ds, K, 0, &gt, &checked, &err) == VB_OK, "right neighbours accepted %s",
       err.message);
    is_int((long long)checked, NQ, "all %d queries checked when the sample (100) is larger", NQ);
    int same = gt.n_queries == NQ && gt.k == K;
    for (size_t i = 0; same && i < NQ; i++)
        for (size_t j = 0; j < K; j++) {
            same = same && gt.ids[i * K + j] == ref.ids[i * GK + j];
            same = same && fabs(gt.dists[i * K + j] - ref.dists[i * GK + j]) <= 1e-6 * (1 + ref.dists[i * GK + j]);
        }
    ok(same, "the first k shipped ids are the ground truth, with their exact distances");
    vb_groundtruth_free(&gt);

    /* a tie: the k-th neighbour swapped for a row at the same distance (a copy of it, appended as row N-1) */
    memcpy(x + (N - 1) * D, x + ref.ids[3 * GK + K - 1] * D, D * sizeof *x);
    int32_t keep = nb[3 * GK + K - 1];
    nb[3 * GK + K - 1] = N - 1;
    ok(vb_groundtruth_from_shipped(&ds, K, 0, &gt, NULL, &err) == VB_OK, "a tie at the k-th distance is accepted %s",
       err.message);
    vb_groundtruth_free(&gt);
    nb[3 * GK + K - 1] = keep;

    /* one id changed: refused, naming the query; a sample of 5 may miss it, all 50 never do */
    for (size_t bad_q = 0; bad_q < NQ; bad_q += 17) {
        int32_t was = nb[bad_q * GK + 2];
        nb[bad_q * GK + 2] = nb[bad_q * GK + GK - 1]; /* the 12th neighbour, not in the top 10 */
        char want[64];
        snprintf(want, sizeof want, "query ids %zu)", bad_q);
        ok(vb_groundtruth_from_shipped(&ds, K, NQ, &gt, NULL, &err) == VB_ERROR && strstr(err.message, want),
           "one changed id in query %zu is refused, naming it: %s", bad_q, err.message);
        ok(gt.ids == NULL, "... and nothing is returned");
        nb[bad_q * GK + 2] = was;
    }
    ok(vb_groundtruth_from_shipped(&ds, GK + 1, 0, &gt, NULL, &err) == VB_ERROR && strstr(err.message, "ships 12"),
       "k above what is shipped is refused: %s", err.message);
    vb_groundtruth_free(&ref);
    free(nb);
    free(x);
    free(q);
}

static int same_gt(const vb_groundtruth *a, const vb_groundtruth *b) {
    return a->n_queries == b->n_queries && a->k == b->k &&
           memcmp(a->ids, b->ids, a->n_queries * a->k * sizeof *a->ids) == 0 &&
           memcmp(a->dists, b->dists, a->n_queries * a->k * sizeof *a->dists) == 0;
}

static long file_size(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 ? (long)st.st_size : -1;
}

static void test_cache(void) {
    char cache[128];
    snprintf(cache, sizeof cache, "%s/cache", tmpdir);
    vb_synth_params p = {.rows = 4000, .queries = 40, .dim = 24, .clusters = 10, .metric = VB_METRIC_ANGULAR,
                         .seed = 5};
    vb_dataset *ds = NULL;
    vb_error err = {0};
    ok(vb_dataset_open_synthetic("gt", &p, cache, &ds, &err) == VB_OK, "synthetic dataset for the cache test");
    if (!ds) return;
    vb_groundtruth a, b, c, ref;
    ok(vb_groundtruth_compute(ds->train, ds->n_train, ds->test, ds->n_test, ds->dim, ds->metric, 10, NULL, 0, &ref,
                              &err) == VB_OK, "reference computed directly");
    char path[512];
    ok(vb_groundtruth_path(ds, 10, NULL, "", cache, path, sizeof path, &err) == VB_OK, "cache path");
    contains(path, ds->content_hash, "cache file is named by the content hash");
    contains(path, "-k10", "and by k");
    ok(access(path, F_OK) != 0, "no cache file yet");
    ok(vb_groundtruth_get(ds, 10, NULL, "", cache, &a, &err) == VB_OK, "first get computes (%s)", err.message);
    ok(access(path, F_OK) == 0, "and writes the cache file");
    ok(same_gt(&a, &ref), "computed result equals the direct one");
    struct stat st1, st2;
    stat(path, &st1);
    ok(vb_groundtruth_get(ds, 10, NULL, "", cache, &b, &err) == VB_OK, "second get");
    stat(path, &st2);
    ok(same_gt(&a, &b), "cache hit returns identical results");
    ok(st1.st_ino == st2.st_ino, "cache hit does not rewrite the file");
    vb_groundtruth_free(&b);

    /* corrupt one byte of the payload: the checksum catches it, the result is recomputed and rewritten */
    long size = file_size(path);
    FILE *f = fopen(path, "r+b");
    fseek(f, size - 5, SEEK_SET);
    int ch = fgetc(f);
    fseek(f, size - 5, SEEK_SET);
    fputc(ch ^ 0x40, f);
    fclose(f);
    ok(vb_groundtruth_get(ds, 10, NULL, "", cache, &b, &err) == VB_OK, "get after corruption");
    ok(same_gt(&a, &b), "corrupt cache is recomputed (identical results)");
    stat(path, &st2);
    ok(st1.st_ino != st2.st_ino, "and rewritten");
    vb_groundtruth_free(&b);

    /* truncated file, and a file with a foreign header */
    if (truncate(path, 100) != 0) perror("truncate");
    ok(vb_groundtruth_get(ds, 10, NULL, "", cache, &b, &err) == VB_OK && same_gt(&a, &b),
       "truncated cache is recomputed");
    is_int(file_size(path), size, "and rewritten at full size");
    vb_groundtruth_free(&b);
    f = fopen(path, "r+b");
    fputs("JUNK", f);
    fclose(f);
    ok(vb_groundtruth_get(ds, 10, NULL, "", cache, &b, &err) == VB_OK && same_gt(&a, &b), "bad magic is recomputed");
    vb_groundtruth_free(&b);

    /* masked ground truth has a file of its own and equals the direct masked computation */
    uint8_t *mask = malloc(ds->n_train);
    for (size_t i = 0; i < ds->n_train; i++) mask[i] = vb_dataset_tag((int64_t)i) < 1000;
    char mpath[512];
    vb_groundtruth_path(ds, 10, mask, "tag<1000", cache, mpath, sizeof mpath, &err);
    ok(strcmp(mpath, path) != 0, "masked cache file differs from the unmasked one");
    contains(mpath, "tag_1000", "masked cache file carries the (sanitised) tag");
    ok(vb_groundtruth_get(ds, 10, mask, "tag<1000", cache, &b, &err) == VB_OK, "masked get");
    vb_groundtruth_compute(ds->train, ds->n_train, ds->test, ds->n_test, ds->dim, ds->metric, 10, mask, 1, &c, &err);
    ok(same_gt(&b, &c), "masked get equals direct masked compute");
    int all_pass = 1;
    for (size_t i = 0; i < b.n_queries * b.k; i++) all_pass &= b.ids[i] < 0 || mask[b.ids[i]];
    ok(all_pass, "every masked neighbour passes the filter");
    vb_groundtruth_free(&b);
    mask[0] ^= 1; /* same tag, different mask: must not reuse */
    vb_groundtruth_path(ds, 10, mask, "tag<1000", cache, path, sizeof path, &err);
    ok(strcmp(mpath, path) != 0, "same tag but different mask bytes: different file");
    free(mask);

    /* another k is another file */
    ok(vb_groundtruth_get(ds, 3, NULL, "", cache, &b, &err) == VB_OK && b.k == 3, "k=3 get");
    ok(memcmp(b.ids, a.ids, 3 * sizeof *a.ids) == 0, "k=3 is the prefix of k=10 for query 0");
    vb_groundtruth_free(&b);

    /* unwritable cache dir is reported */
    ok(vb_groundtruth_get(ds, 10, NULL, "", "/proc/vbench-no", &b, &err) == VB_ERROR, "unusable cache dir reported");
    contains(err.message, "/proc/vbench-no", "error names the directory");

    vb_groundtruth_free(&a);
    vb_groundtruth_free(&c);
    vb_groundtruth_free(&ref);
    vb_dataset_close(&ds);
}

/* The streaming phase's staged ground truth: each stage's top-k is the previous stage's merged with the top-k
 * over the new rows only; at every stage it must equal a full computation over the prefix (ids and distances),
 * including a stage that adds no row and a first stage smaller than k. */
static void test_extend(void) {
    const size_t n = 900, nq = 23, dim = 12, k = 10;
    const size_t stages[] = {6, 300, 300, 451, 630, 899, 900};
    vb_metric metrics[] = {VB_METRIC_EUCLIDEAN, VB_METRIC_ANGULAR, VB_METRIC_DOT};
    float *x = malloc(n * dim * sizeof *x), *q = malloc(nq * dim * sizeof *q);
    for (size_t i = 0; i < n * dim; i++) x[i] = (float)(urand() * 2 - 1);
    for (size_t i = 0; i < nq * dim; i++) q[i] = (float)(urand() * 2 - 1);
    for (size_t m = 0; m < sizeof metrics / sizeof *metrics; m++) {
        vb_groundtruth prev = {0};
        size_t from = 0, bad_ids = 0, bad_d = 0;
        vb_error err = {0};
        int rc = VB_OK;
        for (size_t s = 0; s < sizeof stages / sizeof *stages && rc == VB_OK; s++) {
            vb_groundtruth next, full;
            rc = vb_groundtruth_extend(&prev, x, from, stages[s], q, nq, dim, metrics[m], k, 2, &next, &err);
            if (rc == VB_OK) rc = vb_groundtruth_compute(x, stages[s], q, nq, dim, metrics[m], k, NULL, 2, &full, &err);
            if (rc != VB_OK) break;
            for (size_t i = 0; i < nq * k; i++) {
                bad_ids += next.ids[i] != full.ids[i];
                bad_d += !(next.dists[i] == full.dists[i] || (isinf(next.dists[i]) && isinf(full.dists[i])));
            }
            vb_groundtruth_free(&full);
            vb_groundtruth_free(&prev);
            prev = next;
            from = stages[s];
        }
        ok(rc == VB_OK, "staged ground truth over 7 stages (metric %d): %s", (int)metrics[m], err.message);
        ok(bad_ids == 0, "staged ids equal a full computation at every stage (metric %d): %zu differ", (int)metrics[m],
           bad_ids);
        ok(bad_d == 0, "staged distances equal a full computation at every stage (metric %d): %zu differ",
           (int)metrics[m], bad_d);
        vb_groundtruth_free(&prev);
    }
    vb_groundtruth g, prev = {.n_queries = nq, .k = 5};
    vb_error err = {0};
    ok(vb_groundtruth_extend(&prev, x, 10, 20, q, nq, dim, VB_METRIC_EUCLIDEAN, k, 1, &g, &err) == VB_ERROR &&
           strstr(err.message, "previous stage"),
       "a previous stage of another k is refused: %s", err.message);
    free(x);
    free(q);
}

int main(void) {
    snprintf(tmpdir, sizeof tmpdir, "/tmp/vb-test-gt-XXXXXX");
    if (!mkdtemp(tmpdir)) {
        perror("mkdtemp");
        return 1;
    }
    test_against_naive();
    test_progress();
    test_stop();
    test_shipped();
    test_cache();
    test_extend();
    nftw(tmpdir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    return done_testing();
}
