/* Exact ground truth by brute force: sgemm over blocks of queries x corpus rows, a bounded max-heap of the best
 * candidates per query, and a final re-rank of the candidates with vb_distance in double.
 *
 * Threads. In the default mode (VB_GT_SPLIT_ROWS) each worker takes corpus blocks from a shared counter and keeps
 * its own heaps for every query, with OpenBLAS single-threaded inside it: the corpus is read from memory once,
 * the score transform and the selection run in parallel too, nothing is locked per block, and a worker slowed
 * by foreign load simply takes fewer blocks. The workers' heaps are merged in the re-rank. VB_GT_BLAS_THREADS
 * instead runs one worker and lets OpenBLAS thread each sgemm. Both give identical results; on the 2-core
 * development VM (100k x 768, 1000 queries) the split mode took 8-22 % less CPU and less wall time in every
 * interleaved run (OpenBLAS threads spin and wait at the end of each call); bench/bench_gt.sh shows both.
 * The OpenBLAS thread count is process-wide: it is set for the call and restored afterwards, so do not run
 * other BLAS work concurrently in the same process.
 *
 * Float32 scores only choose candidates: each query keeps max(2k, k + 16) of them, so rows that float rounding
 * puts in the wrong order near the k-th place are still re-ranked exactly. Ties in double distance are broken by
 * the smaller row id, so the result does not depend on the thread count or the block sizes. */
#include "datasets/groundtruth.h"

#include <cblas.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <xxhash.h>

/* Heap memory budget over all workers; above it the queries are processed in batches (the corpus is then read
 * once per batch). */
#define GT_HEAP_BUDGET ((size_t)256 << 20)

/* A candidate: its fast score (the selection's order) and its exact distance, computed in double when it
 * enters the heap while its row is at hand, so the re-rank never goes back to the corpus (random reads of a
 * memory-mapped corpus larger than the memory the process may use each cost a read-ahead window: measured
 * 2M x 96 with 1,000 queries in a 256 MiB cgroup, 288 s and 35 GB read in 45 s before, see docs/benchmarks.md). */
typedef struct gt_cand {
    float score;
    double exact;
    int64_t id;
} gt_cand;

typedef struct gt_ctx {
    const float *corpus, *queries;
    size_t n_rows, dim, k, cand;
    vb_metric metric;
    const uint8_t *mask;
    size_t qb, rb; /* query block, row block */
    const int64_t *pass; /* ids of the rows that pass the mask (NULL: all rows) */
    size_t n_eff;        /* rows to search: n_rows, or the number passing the mask */
    size_t n_blocks;     /* ceil(n_eff / rb) */
    size_t next_block;   /* handed out atomically, so a worker slowed by foreign load just takes fewer */
    size_t blocks_done;  /* over all batches, atomically: the progress */
    uint64_t units_before, units_total; /* query x row units of the batches before this one, and of all */
    const vb_gt_opts *opts;
} gt_ctx;

typedef struct gt_worker {
    gt_ctx *c;
    int reports;               /* this worker runs on the calling thread: it reports the progress */
    size_t q_begin, nq;        /* query batch */
    gt_cand *heap;             /* nq x cand, max-heap by score */
    uint32_t *count;           /* nq */
    float *cbuf, *gather, *rterm;
    int64_t *ids;
} gt_worker;

/* "a is worse than b": larger score, then larger id. */
static inline int cand_worse(const gt_cand *a, const gt_cand *b) {
    return a->score > b->score || (a->score == b->score && a->id > b->id);
}

static void heap_push(gt_cand *h, uint32_t *n, size_t cap, float score, double exact, int64_t id) {
    gt_cand x = {score, exact, id};
    if (*n < cap) { /* sift up */
        size_t i = (*n)++;
        while (i > 0) {
            size_t p = (i - 1) / 2;
            if (!cand_worse(&x, &h[p])) break;
            h[i] = h[p];
            i = p;
        }
        h[i] = x;
        return;
    }
    if (!cand_worse(&h[0], &x)) return;
    size_t i = 0; /* replace the top and sift down */
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        const gt_cand *mv = &x;
        if (l < cap && cand_worse(&h[l], mv)) m = l, mv = &h[l];
        if (r < cap && cand_worse(&h[r], mv)) m = r, mv = &h[r];
        if (m == i) break;
        h[i] = h[m];
        i = m;
    }
    h[i] = x;
}

/* Scores one query against a block: smaller is closer, in the same order as the metric's distance.
 * euclidean |x|^2 - 2<q,x>, angular -<q,x>/|x|, dot -<q,x> (the query's own norm does not change the order). */
static void select_block(const gt_ctx *c, const float *qv, const float *x, const float *dots, const float *rterm,
                         const int64_t *ids, size_t n, gt_cand *heap, uint32_t *count) {
    size_t cap = c->cand;
    float thr = *count == cap ? heap[0].score : INFINITY;
    switch (c->metric) {
    case VB_METRIC_EUCLIDEAN:
        for (size_t j = 0; j < n; j++) {
            float s = rterm[j] - 2.0f * dots[j];
            if (s <= thr) {
                heap_push(heap, count, cap, s, vb_distance(c->metric, qv, x + j * c->dim, c->dim), ids[j]);
                if (*count == cap) thr = heap[0].score;
            }
        }
        break;
    case VB_METRIC_ANGULAR:
        for (size_t j = 0; j < n; j++) {
            float s = -dots[j] * rterm[j];
            if (s <= thr) {
                heap_push(heap, count, cap, s, vb_distance(c->metric, qv, x + j * c->dim, c->dim), ids[j]);
                if (*count == cap) thr = heap[0].score;
            }
        }
        break;
    default:
        for (size_t j = 0; j < n; j++) {
            float s = -dots[j];
            if (s <= thr) {
                heap_push(heap, count, cap, s, vb_distance(c->metric, qv, x + j * c->dim, c->dim), ids[j]);
                if (*count == cap) thr = heap[0].score;
            }
        }
        break;
    }
}

/* Takes corpus blocks of rb searched rows until none is left: the rows are used in place when they are
 * contiguous and gathered otherwise, their norm term is computed once, then every query block is multiplied
 * with them and the products go through the selection. */
static void *gt_worker_run(void *arg) {
    gt_worker *w = arg;
    gt_ctx *c = w->c;
    size_t dim = c->dim, b;
    while ((b = __atomic_fetch_add(&c->next_block, 1, __ATOMIC_RELAXED)) < c->n_blocks) {
        if (c->opts->stop && atomic_load(c->opts->stop)) break;
        size_t first = b * c->rb, n = c->n_eff - first < c->rb ? c->n_eff - first : c->rb;
        for (size_t j = 0; j < n; j++) w->ids[j] = c->pass ? c->pass[first + j] : (int64_t)(first + j);
        const float *x;
        if ((size_t)(w->ids[n - 1] - w->ids[0]) == n - 1) {
            x = c->corpus + (size_t)w->ids[0] * dim;
        } else {
            for (size_t j = 0; j < n; j++)
                memcpy(w->gather + j * dim, c->corpus + (size_t)w->ids[j] * dim, dim * sizeof(float));
            x = w->gather;
        }
        if (c->metric != VB_METRIC_DOT) {
            for (size_t j = 0; j < n; j++) {
                float n2 = cblas_sdot((int)dim, x + j * dim, 1, x + j * dim, 1);
                w->rterm[j] = c->metric == VB_METRIC_EUCLIDEAN ? n2 : n2 > 0 ? 1.0f / sqrtf(n2) : 0.0f;
            }
        }
        for (size_t q0 = 0; q0 < w->nq; q0 += c->qb) {
            size_t qn = w->nq - q0 < c->qb ? w->nq - q0 : c->qb;
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)qn, (int)n, (int)dim, 1.0f,
                        c->queries + (w->q_begin + q0) * dim, (int)dim, x, (int)dim, 0.0f, w->cbuf, (int)n);
            for (size_t i = 0; i < qn; i++)
                select_block(c, c->queries + (w->q_begin + q0 + i) * dim, x, w->cbuf + i * n, w->rterm, w->ids, n,
                             w->heap + (q0 + i) * c->cand, w->count + q0 + i);
        }
        size_t done = __atomic_add_fetch(&c->blocks_done, 1, __ATOMIC_RELAXED);
        if (w->reports && c->opts->progress) {
            uint64_t rows = done * c->rb < c->n_eff ? done * c->rb : c->n_eff;
            c->opts->progress(c->opts->progress_arg, c->units_before + rows * w->nq, c->units_total);
        }
    }
    return NULL;
}

typedef struct gt_rerank {
    const gt_ctx *c;
    const gt_worker *workers;
    size_t n_workers, q_begin, q_end; /* relative to the batch */
    size_t batch_q0;
    vb_groundtruth *out;
    int failed;
} gt_rerank;

typedef struct gt_exact {
    double d;
    int64_t id;
} gt_exact;

static int exact_cmp(const void *a, const void *b) {
    const gt_exact *x = a, *y = b;
    int xn = isnan(x->d), yn = isnan(y->d); /* NaN sorts last */
    if (xn != yn) return xn - yn;
    if (!xn && x->d != y->d) return x->d < y->d ? -1 : 1;
    return x->id < y->id ? -1 : x->id > y->id;
}

/* Merges the workers' candidates of each query by their exact distances (double), keeps the k best. */
static void *gt_rerank_run(void *arg) {
    gt_rerank *r = arg;
    const gt_ctx *c = r->c;
    gt_exact *e = malloc(r->n_workers * c->cand * sizeof *e);
    if (!e) {
        r->failed = 1;
        return NULL;
    }
    for (size_t qi = r->q_begin; qi < r->q_end; qi++) {
        size_t q = r->batch_q0 + qi, n = 0;
        for (size_t t = 0; t < r->n_workers; t++) {
            const gt_worker *w = &r->workers[t];
            for (uint32_t j = 0; j < w->count[qi]; j++) {
                const gt_cand *cd = &w->heap[qi * c->cand + j];
                e[n].id = cd->id;
                e[n].d = cd->exact;
                n++;
            }
        }
        qsort(e, n, sizeof *e, exact_cmp);
        for (size_t j = 0; j < c->k; j++) {
            r->out->ids[q * c->k + j] = j < n ? e[j].id : -1;
            r->out->dists[q * c->k + j] = j < n ? (float)e[j].d : INFINITY;
        }
    }
    free(e);
    return NULL;
}

static size_t online_cpus(void) {
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0) return (size_t)CPU_COUNT(&set);
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (size_t)n : 1;
}

/* Runs fn over args[0..n) on n threads (the last one on the caller's thread). */
static void run_threads(void *(*fn)(void *), void *args, size_t stride, size_t n) {
    pthread_t th[256];
    size_t started = 0;
    for (size_t t = 0; t + 1 < n; t++) {
        if (pthread_create(&th[t], NULL, fn, (char *)args + t * stride) != 0) break;
        started++;
    }
    for (size_t t = started; t < n; t++) fn((char *)args + t * stride); /* leftovers run here */
    for (size_t t = 0; t < started; t++) pthread_join(th[t], NULL);
}

void vb_groundtruth_free(vb_groundtruth *gt) {
    if (!gt) return;
    free(gt->ids);
    free(gt->dists);
    memset(gt, 0, sizeof *gt);
}

int vb_groundtruth_compute_opts(const float *corpus, size_t n_rows, const float *queries, size_t n_queries,
                                size_t dim, vb_metric metric, size_t k, const uint8_t *mask,
                                const vb_gt_opts *opts, vb_groundtruth *out, vb_error *err) {
    memset(out, 0, sizeof *out);
    if (k == 0 || dim == 0)
        return vb_error_set(err, "groundtruth", 1, "k (%zu) and dim (%zu) must be positive", k, dim);
    if (dim > INT_MAX || n_rows > (size_t)INT64_MAX)
        return vb_error_set(err, "groundtruth", 1, "dimension %zu is too large", dim);
    vb_gt_opts o = opts ? *opts : (vb_gt_opts){0};
    size_t threads = o.threads > 0 ? (size_t)o.threads : online_cpus();
    if (threads > 256) threads = 256;
    vb_gt_mode mode = o.mode == VB_GT_AUTO ? VB_GT_SPLIT_ROWS : o.mode;

    gt_ctx c = {.corpus = corpus, .queries = queries, .n_rows = n_rows, .dim = dim, .k = k, .metric = metric,
                .mask = mask, .opts = &o};
    c.cand = 2 * k < k + 16 ? k + 16 : 2 * k;
    c.qb = o.query_block ? o.query_block : 1024;
    c.rb = o.row_block ? o.row_block : 1024;

    out->n_queries = n_queries;
    out->k = k;
    out->ids = malloc((n_queries ? n_queries : 1) * k * sizeof *out->ids);
    out->dists = malloc((n_queries ? n_queries : 1) * k * sizeof *out->dists);
    if (!out->ids || !out->dists) {
        vb_groundtruth_free(out);
        return vb_error_set(err, "groundtruth", 1, "out of memory for %zu x %zu results", n_queries, k);
    }
    if (n_queries == 0) return VB_OK;

    int64_t *pass = NULL;
    c.n_eff = n_rows;
    if (mask) {
        size_t n_pass = 0;
        for (size_t i = 0; i < n_rows; i++) n_pass += mask[i] != 0;
        pass = malloc((n_pass ? n_pass : 1) * sizeof *pass);
        if (!pass) {
            vb_groundtruth_free(out);
            return vb_error_set(err, "groundtruth", 1, "out of memory for the ids of %zu rows", n_pass);
        }
        for (size_t i = 0, j = 0; i < n_rows; i++)
            if (mask[i]) pass[j++] = (int64_t)i;
        c.pass = pass;
        c.n_eff = n_pass;
    }
    c.n_blocks = (c.n_eff + c.rb - 1) / c.rb;
    size_t n_workers = mode == VB_GT_SPLIT_ROWS ? threads : 1;
    if (n_workers > c.n_blocks) n_workers = c.n_blocks ? c.n_blocks : 1;
    /* queries per batch so that every worker's heaps fit the budget */
    size_t batch = GT_HEAP_BUDGET / (n_workers * c.cand * sizeof(gt_cand));
    if (batch < c.qb) batch = c.qb;
    if (batch > n_queries) batch = n_queries;
    if (c.qb > batch) c.qb = batch;

    gt_worker *w = calloc(n_workers, sizeof *w);
    gt_rerank *rr = calloc(threads, sizeof *rr);
    int rc = VB_OK;
    if (!w || !rr) rc = VB_ERROR;
    for (size_t t = 0; rc == VB_OK && t < n_workers; t++) {
        w[t].c = &c;
        w[t].heap = malloc(batch * c.cand * sizeof(gt_cand));
        w[t].count = malloc(batch * sizeof(uint32_t));
        w[t].cbuf = malloc(c.qb * c.rb * sizeof(float));
        w[t].gather = mask ? malloc(c.rb * dim * sizeof(float)) : NULL;
        w[t].rterm = malloc(c.rb * sizeof(float));
        w[t].ids = malloc(c.rb * sizeof(int64_t));
        if (!w[t].heap || !w[t].count || !w[t].cbuf || (mask && !w[t].gather) || !w[t].rterm || !w[t].ids)
            rc = VB_ERROR;
    }
    if (rc != VB_OK) {
        vb_error_set(err, "groundtruth", 1, "out of memory for %zu workers", n_workers);
        goto out;
    }

    /* The corpus is usually a memory-mapped file read once front to back per batch: tell the kernel so, and it
     * reads ahead and drops the pages behind. Measured in tests/e2e/98-gt-memory-bound.t (300,000 x 96, 109.9 MiB,
     * in a 40 MiB cgroup): 272.3 MiB read without the advice, 109.7 MiB with it. In a roomier limit (2M x 96 in
     * 256 MiB) it makes no difference; the re-rank's random reads were what thrashed there (gt_cand). */
    size_t pg = (size_t)sysconf(_SC_PAGESIZE);
    uintptr_t m0 = (uintptr_t)corpus & ~(uintptr_t)(pg - 1);
    size_t mlen = (uintptr_t)(corpus + n_rows * dim) - m0;
    int advised = madvise((void *)m0, mlen, MADV_SEQUENTIAL) == 0;
    int blas_before = openblas_get_num_threads();
    openblas_set_num_threads(mode == VB_GT_SPLIT_ROWS ? 1 : (int)threads);
    c.units_total = (uint64_t)n_queries * c.n_eff;
    w[n_workers - 1].reports = 1; /* run_threads runs the last worker on this thread */
    for (size_t q0 = 0; q0 < n_queries && rc == VB_OK; q0 += batch) {
        size_t nq = n_queries - q0 < batch ? n_queries - q0 : batch;
        for (size_t t = 0; t < n_workers; t++) {
            w[t].q_begin = q0;
            w[t].nq = nq;
            memset(w[t].count, 0, nq * sizeof(uint32_t));
        }
        c.next_block = 0;
        c.blocks_done = 0;
        c.units_before = (uint64_t)q0 * c.n_eff;
        run_threads(gt_worker_run, w, sizeof *w, n_workers);
        if (o.stop && atomic_load(o.stop)) {
            uint64_t rows = c.blocks_done * c.rb < c.n_eff ? c.blocks_done * c.rb : c.n_eff;
            double done = c.units_total ? (double)(c.units_before + rows * nq) / (double)c.units_total : 0;
            rc = vb_error_set(err, "groundtruth", EINTR, "stopped at %.1f%% of %zu queries x %zu rows: nothing cached",
                              100.0 * done, n_queries, c.n_eff);
            break;
        }
        size_t nr = threads < nq ? threads : nq;
        for (size_t t = 0; t < nr; t++)
            rr[t] = (gt_rerank){.c = &c, .workers = w, .n_workers = n_workers, .q_begin = nq * t / nr,
                                .q_end = nq * (t + 1) / nr, .batch_q0 = q0, .out = out};
        run_threads(gt_rerank_run, rr, sizeof *rr, nr);
        for (size_t t = 0; t < nr; t++)
            if (rr[t].failed) rc = vb_error_set(err, "groundtruth", 1, "out of memory in re-rank");
    }
    openblas_set_num_threads(blas_before);
    if (rc == VB_OK && o.progress) o.progress(o.progress_arg, c.units_total, c.units_total);
    if (advised) madvise((void *)m0, mlen, MADV_NORMAL);
out:
    for (size_t t = 0; w && t < n_workers; t++) {
        free(w[t].heap);
        free(w[t].count);
        free(w[t].cbuf);
        free(w[t].gather);
        free(w[t].rterm);
        free(w[t].ids);
    }
    free(w);
    free(rr);
    free(pass);
    if (rc != VB_OK) vb_groundtruth_free(out);
    return rc;
}

int vb_groundtruth_compute(const float *corpus, size_t n_rows, const float *queries, size_t n_queries, size_t dim,
                           vb_metric metric, size_t k, const uint8_t *mask, int threads, vb_groundtruth *out,
                           vb_error *err) {
    vb_gt_opts o = {.threads = threads};
    return vb_groundtruth_compute_opts(corpus, n_rows, queries, n_queries, dim, metric, k, mask, &o, out, err);
}

/* Merges two ascending (distance, id) lists of k per query; -1 ids (fewer than k rows) sort last. */
static void merge_topk(const int64_t *ai, const float *ad, const int64_t *bi, const float *bd, size_t k,
                       int64_t *oi, float *od) {
    size_t a = 0, b = 0;
    for (size_t j = 0; j < k; j++) {
        int take_a;
        if (a < k && ai[a] >= 0 && b < k && bi[b] >= 0)
            take_a = ad[a] < bd[b] || (ad[a] == bd[b] && ai[a] < bi[b]);
        else
            take_a = a < k && ai[a] >= 0;
        if (take_a) oi[j] = ai[a], od[j] = ad[a], a++;
        else if (b < k && bi[b] >= 0) oi[j] = bi[b], od[j] = bd[b], b++;
        else oi[j] = -1, od[j] = INFINITY;
    }
}

int vb_groundtruth_extend(const vb_groundtruth *prev, const float *corpus, size_t from, size_t to,
                          const float *queries, size_t n_queries, size_t dim, vb_metric metric, size_t k, int threads,
                          vb_groundtruth *out, vb_error *err) {
    memset(out, 0, sizeof *out);
    if (to < from)
        return vb_error_set(err, "groundtruth", 1, "staged ground truth: rows [%zu, %zu) are not a range", from, to);
    if (from > 0 && (!prev || prev->k != k || prev->n_queries != n_queries))
        return vb_error_set(err, "groundtruth", 1, "staged ground truth: the previous stage has %zu queries x %zu, "
                            "not %zu x %zu", prev ? prev->n_queries : 0, prev ? prev->k : 0, n_queries, k);
    vb_groundtruth add;
    if (to > from) {
        if (vb_groundtruth_compute(corpus + from * dim, to - from, queries, n_queries, dim, metric, k, NULL, threads,
                                   &add, err))
            return VB_ERROR;
        for (size_t i = 0; i < n_queries * k; i++)
            if (add.ids[i] >= 0) add.ids[i] += (int64_t)from;
    } else {
        add.n_queries = n_queries, add.k = k;
        add.ids = malloc(n_queries * k * sizeof *add.ids);
        add.dists = malloc(n_queries * k * sizeof *add.dists);
        if (!add.ids || !add.dists) {
            vb_groundtruth_free(&add);
            return vb_error_set(err, "groundtruth", 1, "out of memory");
        }
        for (size_t i = 0; i < n_queries * k; i++) add.ids[i] = -1, add.dists[i] = INFINITY;
    }
    if (from == 0) {
        *out = add;
        return VB_OK;
    }
    out->n_queries = n_queries, out->k = k;
    out->ids = malloc(n_queries * k * sizeof *out->ids);
    out->dists = malloc(n_queries * k * sizeof *out->dists);
    if (!out->ids || !out->dists) {
        vb_groundtruth_free(&add);
        vb_groundtruth_free(out);
        return vb_error_set(err, "groundtruth", 1, "out of memory");
    }
    for (size_t q = 0; q < n_queries; q++)
        merge_topk(prev->ids + q * k, prev->dists + q * k, add.ids + q * k, add.dists + q * k, k, out->ids + q * k,
                   out->dists + q * k);
    vb_groundtruth_free(&add);
    return VB_OK;
}

/* ---------------------------------------------------------------------------------------------------------
 * Cache: header + ids (int64) + dists (float32), checked by size, header fields and a payload checksum. */

#define GT_MAGIC "VBGT001\n"
typedef struct gt_hdr {
    char magic[8];
    uint64_t n_queries, k;
    char content_hash[32];
    uint64_t mask_hash, payload_hash;
    uint64_t reserved[2];
} gt_hdr;
_Static_assert(sizeof(gt_hdr) == 88, "ground-truth header layout");

static uint64_t payload_hash(const vb_groundtruth *gt) {
    XXH3_state_t *st = XXH3_createState();
    if (!st) return 0;
    XXH3_64bits_reset(st);
    XXH3_64bits_update(st, gt->ids, gt->n_queries * gt->k * sizeof *gt->ids);
    XXH3_64bits_update(st, gt->dists, gt->n_queries * gt->k * sizeof *gt->dists);
    uint64_t h = XXH3_64bits_digest(st);
    XXH3_freeState(st);
    return h;
}

/* Returns VB_OK when the file held a valid result for this header, VB_ERROR otherwise (absent, short, corrupt). */
static int gt_load(const char *path, const gt_hdr *want, vb_groundtruth *out) {
    FILE *f = fopen(path, "rb");
    if (!f) return VB_ERROR;
    gt_hdr h;
    struct stat st;
    size_t n = want->n_queries * want->k;
    int good = fstat(fileno(f), &st) == 0 && fread(&h, sizeof h, 1, f) == 1 &&
               (uint64_t)st.st_size == sizeof h + n * (sizeof(int64_t) + sizeof(float)) &&
               memcmp(h.magic, GT_MAGIC, 8) == 0 && h.n_queries == want->n_queries && h.k == want->k &&
               memcmp(h.content_hash, want->content_hash, 32) == 0 && h.mask_hash == want->mask_hash;
    if (good) {
        out->n_queries = h.n_queries;
        out->k = h.k;
        out->ids = malloc((n ? n : 1) * sizeof *out->ids);
        out->dists = malloc((n ? n : 1) * sizeof *out->dists);
        good = out->ids && out->dists && fread(out->ids, sizeof *out->ids, n, f) == n &&
               fread(out->dists, sizeof *out->dists, n, f) == n && payload_hash(out) == h.payload_hash;
        if (!good) vb_groundtruth_free(out);
    }
    fclose(f);
    return good ? VB_OK : VB_ERROR;
}

static int gt_store(const char *path, gt_hdr *h, const vb_groundtruth *gt, vb_error *err) {
    char tmp[PATH_MAX + 512];
    static unsigned long counter;
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld.%lu", path, (long)getpid(),
             __atomic_add_fetch(&counter, 1, __ATOMIC_RELAXED));
    size_t n = gt->n_queries * gt->k;
    h->payload_hash = payload_hash(gt);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    FILE *f = fd >= 0 ? fdopen(fd, "wb") : NULL;
    if (!f) {
        int e = errno;
        if (fd >= 0) close(fd);
        return vb_error_set(err, "groundtruth", 1, "%s: cannot create: %s", tmp, strerror(e));
    }
    int good = fwrite(h, sizeof *h, 1, f) == 1 && fwrite(gt->ids, sizeof *gt->ids, n, f) == n &&
               fwrite(gt->dists, sizeof *gt->dists, n, f) == n && fflush(f) == 0 && fsync(fileno(f)) == 0;
    int e = errno;
    if (fclose(f) != 0 && good) {
        good = 0;
        e = errno;
    }
    if (good && rename(tmp, path) != 0) {
        good = 0;
        e = errno;
    }
    if (!good) {
        unlink(tmp);
        return vb_error_set(err, "groundtruth", 1, "%s: cannot write: %s", path, strerror(e));
    }
    return VB_OK;
}

int vb_groundtruth_path(const vb_dataset *ds, size_t k, const uint8_t *mask, const char *mask_tag,
                        const char *cache_dir, char *buf, size_t len, vb_error *err) {
    char dir[PATH_MAX], tag[64] = "";
    if (vb_dataset_cache_dir(cache_dir, dir, sizeof dir, err) != VB_OK) return VB_ERROR;
    if (mask) {
        size_t j = 0;
        for (const char *p = mask_tag ? mask_tag : ""; *p && j < 40; p++) {
            char ch = *p;
            int okc = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
                      ch == '-' || ch == '_' || ch == '.';
            tag[j++] = okc ? ch : '_';
        }
        tag[j] = '\0';
        /* the mask's own hash is in the name too, so two masks under one tag never share a file */
        snprintf(tag + j, sizeof tag - j, "%s%016llx", j ? "-" : "",
                 (unsigned long long)XXH3_64bits(mask, ds->n_train));
    }
    snprintf(buf, len, "%s/gt-%s-k%zu%s%s.bin", dir, ds->content_hash, k, mask ? "-" : "", tag);
    return VB_OK;
}

/* ---------------------------------------------------------------------------------------------------------
 * Shipped neighbours, checked on a sample. */

typedef struct gt_pair {
    int64_t id;
    size_t slot; /* q * k + j */
} gt_pair;

static int pair_by_id(const void *a, const void *b) {
    const gt_pair *x = a, *y = b;
    return x->id < y->id ? -1 : x->id > y->id;
}

int vb_groundtruth_from_shipped(const vb_dataset *ds, size_t k, size_t sample, vb_groundtruth *out, size_t *checked,
                                vb_error *err) {
    memset(out, 0, sizeof *out);
    if (checked) *checked = 0;
    if (!ds->neighbors || ds->gt_k < k)
        return vb_error_set(err, "groundtruth", 1, "%s: ships %zu neighbours per query, the campaign's k is %zu",
                            ds->name, ds->gt_k, k);
    size_t nq = ds->n_test, dim = ds->dim;
    if (sample == 0) sample = ds->gt_check ? ds->gt_check : 100;
    if (sample > nq) sample = nq;
    /* the sample: a partial Fisher-Yates shuffle of the query ids, seeded by the content hash */
    size_t *perm = malloc((nq ? nq : 1) * sizeof *perm);
    float *sq = malloc((sample ? sample : 1) * dim * sizeof *sq);
    gt_pair *pairs = malloc((nq ? nq : 1) * k * sizeof *pairs);
    if (!perm || !sq || !pairs) {
        free(perm), free(sq), free(pairs);
        return vb_error_set(err, "groundtruth", 1, "out of memory for the check of %zu queries", nq);
    }
    uint64_t st = XXH3_64bits(ds->content_hash, 32) | 1;
    for (size_t i = 0; i < nq; i++) perm[i] = i;
    for (size_t i = 0; i < sample; i++) {
        st ^= st << 13, st ^= st >> 7, st ^= st << 17; /* xorshift64 */
        size_t j = i + (size_t)(st % (uint64_t)(nq - i)), t = perm[i];
        perm[i] = perm[j], perm[j] = t;
        memcpy(sq + i * dim, ds->test + perm[i] * dim, dim * sizeof *sq);
    }
    vb_groundtruth exact;
    int rc = vb_groundtruth_compute(ds->train, ds->n_train, sq, sample, dim, ds->metric, k, NULL, 0, &exact, err);
    if (rc != VB_OK) {
        free(perm), free(sq), free(pairs);
        return vb_error_prefix(err, "checking the shipped ground truth of %s", ds->name);
    }
    char bad[512] = "";
    size_t n_bad = 0, used = 0;
    for (size_t i = 0; i < sample; i++) {
        size_t q = perm[i];
        double kth = exact.dists[i * k + k - 1], slack = 1e-5 * (fabs(kth) > 1.0 ? fabs(kth) : 1.0);
        int wrong = 0;
        for (size_t j = 0; j < k && !wrong; j++) {
            int32_t id = ds->neighbors[q * ds->gt_k + j];
            if (id < 0 || (size_t)id >= ds->n_train) wrong = 1;
            else if (vb_distance(ds->metric, ds->test + q * dim, ds->train + (size_t)id * dim, dim) > kth + slack)
                wrong = 1;
            for (size_t j2 = 0; j2 < j && !wrong; j2++) wrong = ds->neighbors[q * ds->gt_k + j2] == id;
        }
        if (wrong) {
            n_bad++;
            if (used + 24 < sizeof bad) used += (size_t)snprintf(bad + used, sizeof bad - used, "%s%zu", n_bad > 1 ? ", " : "", q);
        }
    }
    vb_groundtruth_free(&exact);
    free(sq);
    if (n_bad) {
        free(perm), free(pairs);
        return vb_error_set(err, "groundtruth", 1,
                            "%s: the shipped ground truth disagrees with the exact neighbours computed here for %zu "
                            "of %zu sampled queries (query ids %s%s): it is not the top %zu of this corpus under "
                            "%s; leave ground_truth at compute (the default) to have vbench compute it",
                            ds->name, n_bad, sample, bad, used + 24 >= sizeof bad ? ", ..." : "", k,
                            vb_metric_name(ds->metric));
    }
    if (checked) *checked = sample;
    free(perm);
    out->n_queries = nq;
    out->k = k;
    out->ids = malloc((nq ? nq : 1) * k * sizeof *out->ids);
    out->dists = malloc((nq ? nq : 1) * k * sizeof *out->dists);
    if (!out->ids || !out->dists) {
        free(pairs);
        vb_groundtruth_free(out);
        return vb_error_set(err, "groundtruth", 1, "out of memory for %zu x %zu results", nq, k);
    }
    for (size_t q = 0; q < nq; q++)
        for (size_t j = 0; j < k; j++) {
            out->ids[q * k + j] = ds->neighbors[q * ds->gt_k + j];
            pairs[q * k + j] = (gt_pair){ds->neighbors[q * ds->gt_k + j], q * k + j};
        }
    /* distances in row order: the corpus is read front to back, never at random (see gt_cand) */
    qsort(pairs, nq * k, sizeof *pairs, pair_by_id);
    for (size_t i = 0; i < nq * k; i++) {
        size_t q = pairs[i].slot / k;
        out->dists[pairs[i].slot] =
            (float)vb_distance(ds->metric, ds->test + q * dim, ds->train + (size_t)pairs[i].id * dim, dim);
    }
    free(pairs);
    return VB_OK;
}

int vb_groundtruth_get(const vb_dataset *ds, size_t k, const uint8_t *mask, const char *mask_tag,
                       const char *cache_dir, vb_groundtruth *out, vb_error *err) {
    return vb_groundtruth_get_opts(ds, k, mask, mask_tag, cache_dir, NULL, out, err);
}

int vb_groundtruth_get_opts(const vb_dataset *ds, size_t k, const uint8_t *mask, const char *mask_tag,
                            const char *cache_dir, const vb_gt_opts *opts, vb_groundtruth *out, vb_error *err) {
    memset(out, 0, sizeof *out);
    if (ds->use_shipped_gt && !mask) return vb_groundtruth_from_shipped(ds, k, 0, out, NULL, err);
    char path[PATH_MAX + 256];
    if (vb_groundtruth_path(ds, k, mask, mask_tag, cache_dir, path, sizeof path, err) != VB_OK) return VB_ERROR;
    gt_hdr h = {.n_queries = ds->n_test, .k = k, .mask_hash = mask ? XXH3_64bits(mask, ds->n_train) : 0};
    memcpy(h.magic, GT_MAGIC, 8);
    memcpy(h.content_hash, ds->content_hash, 32);
    if (gt_load(path, &h, out) == VB_OK) return VB_OK;
    if (vb_groundtruth_compute_opts(ds->train, ds->n_train, ds->test, ds->n_test, ds->dim, ds->metric, k, mask, opts,
                                    out, err) != VB_OK)
        return vb_error_prefix(err, "ground truth for %s (k=%zu)", ds->name, k);
    if (gt_store(path, &h, out, err) != VB_OK) {
        vb_groundtruth_free(out);
        return vb_error_prefix(err, "ground truth cache for %s", ds->name);
    }
    return VB_OK;
}

/* ---------------------------------------------------------------------------------------------------------
 * Per-query class filters: each query over the rows of its own filter class. */

int vb_groundtruth_by_class(const vb_dataset *ds, size_t k, const int32_t *query_class, const char *tag,
                            const char *cache_dir, const vb_gt_opts *opts, vb_groundtruth *out, vb_error *err) {
    memset(out, 0, sizeof *out);
    size_t nq = ds->n_test, nt = ds->n_train;
    if (!ds->train_class)
        return vb_error_set(err, "groundtruth", 1, "%s has no classes: a class filter selects nothing", ds->name);
    /* the file: the content hash, k, the tag, and a hash of both class columns (which rows each query may see) */
    char dir[PATH_MAX], path[PATH_MAX + 256], safe[41];
    if (vb_dataset_cache_dir(cache_dir, dir, sizeof dir, err) != VB_OK) return VB_ERROR;
    size_t j = 0;
    for (const char *p = tag ? tag : ""; *p && j < sizeof safe - 1; p++)
        safe[j++] = (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '_' ? *p : '_';
    safe[j] = '\0';
    uint64_t h = XXH3_64bits(query_class, nq * sizeof *query_class) ^
                 (XXH3_64bits(ds->train_class, nt * sizeof *ds->train_class) * 0x9e3779b97f4a7c15ull);
    snprintf(path, sizeof path, "%s/gt-%s-k%zu-cls-%s-%016llx.bin", dir, ds->content_hash, k, safe,
             (unsigned long long)h);
    gt_hdr hd = {.n_queries = nq, .k = k, .mask_hash = h};
    memcpy(hd.magic, GT_MAGIC, 8);
    memcpy(hd.content_hash, ds->content_hash, 32);
    if (gt_load(path, &hd, out) == VB_OK) return VB_OK;

    out->n_queries = nq;
    out->k = k;
    out->ids = malloc((nq * k > 0 ? nq * k : 1) * sizeof *out->ids);
    out->dists = malloc((nq * k > 0 ? nq * k : 1) * sizeof *out->dists);
    uint8_t *mask = malloc(nt ? nt : 1), *done = calloc(nq ? nq : 1, 1);
    size_t *group = malloc((nq ? nq : 1) * sizeof *group);
    float *qv = malloc((nq ? nq : 1) * ds->dim * sizeof *qv);
    int rc = out->ids && out->dists && mask && done && group && qv
                 ? VB_OK
                 : vb_error_set(err, "groundtruth", 1, "out of memory for the class ground truth of %s", ds->name);
    for (size_t q = 0; q < nq * k && rc == VB_OK; q++) out->ids[q] = -1, out->dists[q] = INFINITY;
    /* one masked computation per distinct class, over the queries that filter on it */
    for (size_t q0 = 0; q0 < nq && rc == VB_OK; q0++) {
        int32_t c = query_class[q0];
        if (done[q0] || c < 0) continue;
        size_t n = 0;
        for (size_t q = q0; q < nq; q++)
            if (!done[q] && query_class[q] == c) {
                done[q] = 1;
                memcpy(qv + n * ds->dim, ds->test + q * ds->dim, ds->dim * sizeof *qv);
                group[n++] = q;
            }
        for (size_t r = 0; r < nt; r++) mask[r] = ds->train_class[r] == c;
        vb_groundtruth part;
        rc = vb_groundtruth_compute_opts(ds->train, nt, qv, n, ds->dim, ds->metric, k, mask, opts, &part, err);
        if (rc != VB_OK) {
            vb_error_prefix(err, "class %d ground truth for %s (k=%zu)", (int)c, ds->name, k);
            break;
        }
        for (size_t i = 0; i < n; i++) {
            memcpy(out->ids + group[i] * k, part.ids + i * k, k * sizeof *out->ids);
            memcpy(out->dists + group[i] * k, part.dists + i * k, k * sizeof *out->dists);
        }
        vb_groundtruth_free(&part);
    }
    free(mask);
    free(done);
    free(group);
    free(qv);
    if (rc == VB_OK && gt_store(path, &hd, out, err) != VB_OK) {
        vb_error_prefix(err, "class ground truth cache for %s", ds->name);
        rc = VB_ERROR;
    }
    if (rc != VB_OK) vb_groundtruth_free(out);
    return rc;
}
